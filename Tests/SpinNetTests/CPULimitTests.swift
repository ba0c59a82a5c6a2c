import Testing
@testable import SpinNet

/// `CPULimit` over the files of hosts as they are: a container runtime's cgroup v2 group
/// seen through a cgroup namespace, v2 without one, v1 (Docker before cgroup v2, this
/// machine's kind), a hybrid host, and limits set above the process's own group.
@Suite struct CPULimitTests {
    /// Control files by path; anything else reads as missing.
    private func reader(_ files: [String: String]) -> (String) -> String? {
        { files[$0] }
    }

    private let unifiedMount = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"

    @Test func aContainersCPULimit_ThroughACgroupNamespace_IsRead() {
        // docker run --cpus=1.5 on a cgroup v2 host: the container sees its group as "/".
        let mountinfo = "1 0 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n" + unifiedMount
        let limit = CPULimit.find(cgroup: "0::/\n", mountinfo: mountinfo,
                                  read: reader(["/sys/fs/cgroup/cpu.max": "150000 100000\n"]))
        #expect(limit == CPULimit(cores: 1.5, file: "/sys/fs/cgroup/cpu.max"))
    }

    @Test func noLimit_IsNil_AndLeavesTheCPUsAlone() {
        let limit = CPULimit.find(cgroup: "0::/user.slice/session-3.scope\n", mountinfo: unifiedMount,
                                  read: reader(["/sys/fs/cgroup/user.slice/session-3.scope/cpu.max": "max 100000\n",
                                                "/sys/fs/cgroup/user.slice/cpu.max": "max 100000\n"]))
        #expect(limit == nil)
        #expect(ServerConfiguration.cores(allowed: 16, limit: limit?.cores) == 16)
    }

    @Test func aLimitAboveTheProcesssGroup_Counts_TheSmallestOnTheWayUp() {
        // systemd's slice limits 2 CPUs, the service's own group 3: 2 count.
        let files = ["/sys/fs/cgroup/app.slice/spin.service/cpu.max": "300000 100000",
                     "/sys/fs/cgroup/app.slice/cpu.max": "200000 100000"]
        let limit = CPULimit.find(cgroup: "0::/app.slice/spin.service\n", mountinfo: unifiedMount, read: reader(files))
        #expect(limit == CPULimit(cores: 2, file: "/sys/fs/cgroup/app.slice/cpu.max"))
    }

    @Test func cgroupVersion1_TheCPUControllersQuotaOverItsPeriod() {
        // Docker on a cgroup v1 host, no namespace: the group is named from the root, and
        // the controller is mounted with cpuacct.
        let mountinfo = """
            1 0 8:1 / / rw,relatime - ext4 /dev/sda1 rw
            30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct
            31 25 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,memory

            """
        let cgroup = "12:memory:/docker/0123abcd\n4:cpu,cpuacct:/docker/0123abcd\n0::/docker/0123abcd\n"
        let group = "/sys/fs/cgroup/cpu,cpuacct/docker/0123abcd"
        let limit = CPULimit.find(cgroup: cgroup, mountinfo: mountinfo,
                                  read: reader(["\(group)/cpu.cfs_quota_us": "50000\n", "\(group)/cpu.cfs_period_us": "100000\n",
                                                "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
                                                "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"]))
        #expect(limit == CPULimit(cores: 0.5, file: "\(group)/cpu.cfs_quota_us"))
        #expect(ServerConfiguration.cores(allowed: 8, limit: limit?.cores) == 1)
    }

    @Test func aMountOfTheGroupItself_IsItsMountPoint() {
        // A v1 runtime that bind-mounts the container's own group: the mount's root is the
        // group, and /proc/self/cgroup names it from the host's root.
        let mountinfo = "40 35 0:30 /kubepods/pod1/c1 /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        let limit = CPULimit.find(cgroup: "3:cpu:/kubepods/pod1/c1\n", mountinfo: mountinfo,
                                  read: reader(["/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "250000",
                                                "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"]))
        #expect(limit == CPULimit(cores: 2.5, file: "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"))
        #expect(ServerConfiguration.cores(allowed: 64, limit: limit?.cores) == 3)
    }

    @Test func aHybridHost_ReadsV1sCPUController_WhenV2HasNoLimit() {
        // This machine's shape: cgroup2 at .../unified without the cpu controller.
        let mountinfo = """
            33 25 0:29 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
            34 25 0:30 / /sys/fs/cgroup/cpu rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu

            """
        let files = ["/sys/fs/cgroup/cpu/spin/cpu.cfs_quota_us": "100000", "/sys/fs/cgroup/cpu/spin/cpu.cfs_period_us": "100000"]
        let limit = CPULimit.find(cgroup: "1:cpu:/spin\n0::/spin\n", mountinfo: mountinfo, read: reader(files))
        #expect(limit == CPULimit(cores: 1, file: "/sys/fs/cgroup/cpu/spin/cpu.cfs_quota_us"))
    }

    @Test func malformedOrMissingFiles_AreNoLimit_NeverATrap() {
        let mountinfo = "34 25 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n" + unifiedMount
        for text in ["", "max", "0 100000", "-5 100000", "abc def", "150000", "150000 0", "1e400 1"] {
            let limit = CPULimit.find(cgroup: "0::/a\n1:cpu:/a\n", mountinfo: mountinfo,
                                      read: reader(["/sys/fs/cgroup/a/cpu.max": text,
                                                    "/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us": text,
                                                    "/sys/fs/cgroup/cpu/a/cpu.cfs_period_us": "100000"]))
            #expect(ServerConfiguration.cores(allowed: 4, limit: limit?.cores) >= 1, "\(text)")
        }
        #expect(CPULimit.find(cgroup: "garbage\n::\n0::\n", mountinfo: "short line\n- - -\n", read: reader([:])) == nil)
        // A huge quota is no limit in practice: never more loops than CPUs, never a trap.
        #expect(ServerConfiguration.cores(allowed: 4, limit: 1e300) == 4)
        #expect(ServerConfiguration.cores(allowed: 4, limit: 0.01) == 1)
    }

    @Test func escapedMountPaths_AreUnescaped() {
        let mountinfo = "29 23 0:26 / /srv/cgroup\\040v2 rw - cgroup2 cgroup2 rw\n"
        let limit = CPULimit.find(cgroup: "0::/\n", mountinfo: mountinfo, read: reader(["/srv/cgroup v2/cpu.max": "200000 100000"]))
        #expect(limit?.cores == 2)
    }

    @Test func thisMachine_ReadsWithoutATrap() {
        // Whatever the host: a limit, if any, is positive, and the cores are at least 1.
        let budget = ServerConfiguration.coreBudget()
        #expect(budget.cores >= 1 && budget.cores <= budget.allowed)
        if let limit = budget.limit { #expect(limit.cores > 0) }
    }
}
