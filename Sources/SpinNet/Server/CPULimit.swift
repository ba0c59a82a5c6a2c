import Foundation

/// The CPU time the process may use, as a number of cores, when a control group limits it:
/// what a container runtime sets for `docker run --cpus=1.5` or a Kubernetes CPU limit
/// (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`). Such a limit
/// leaves the process's affinity alone: a container limited to one CPU on a 16-core host
/// still sees 16 CPUs, and one event loop per CPU would then be 16 threads taking turns
/// on one CPU's worth of time, each turn carrying fewer events and the group throttled
/// (stopped until the next period) once the threads together spent the period's quota.
/// `ServerConfiguration.usableCores` takes the smaller of the two.
///
/// The parsing is a value's work, on the text of `/proc/self/cgroup`,
/// `/proc/self/mountinfo` and the control files (`read`), so that it is tested without a
/// container; `current` reads the real ones.
package struct CPULimit: Equatable, Sendable {
    /// The limit in cores (1.5 for a quota of 150 ms per 100 ms period).
    package var cores: Double
    /// The control file that set it (the lowest limit on the way from the process's group
    /// up to the hierarchy's root counts).
    package var file: String

    package init(cores: Double, file: String) {
        self.cores = cores
        self.file = file
    }

    /// The limit of the calling process; nil when no control group limits its CPU time
    /// (or the files cannot be read: not Linux, no cgroup file system mounted).
    package static var current: CPULimit? {
        guard let groups = readText("/proc/self/cgroup"), let mounts = readText("/proc/self/mountinfo") else { return nil }
        return find(cgroup: groups, mountinfo: mounts, read: readText)
    }

    private static func readText(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The limit that the groups named in `cgroup` (the text of `/proc/self/cgroup`) set,
    /// found under the mounts of `mountinfo` (the text of `/proc/self/mountinfo`), with
    /// `read` giving a control file's text (nil when it is missing). The v2 hierarchy is
    /// looked at first, then v1's `cpu` controller; the smallest limit found counts.
    package static func find(cgroup: String, mountinfo: String, read: (String) -> String?) -> CPULimit? {
        let mounts = mountinfo.split(separator: "\n").compactMap(Mount.init)
        var found: CPULimit?
        for line in cgroup.split(separator: "\n") {
            // hierarchy-ID:controller-list:path
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let controllers = fields[1].split(separator: ",")
            let path = String(fields[2])
            let limit: CPULimit?
            if fields[0] == "0" && controllers.isEmpty {
                guard let mount = mounts.first(where: { $0.type == "cgroup2" }) else { continue }
                limit = smallest(from: mount.directory(for: path), to: mount.point) { directory in
                    read(directory + "/cpu.max").flatMap(version2).map { CPULimit(cores: $0, file: directory + "/cpu.max") }
                }
            } else if controllers.contains("cpu") {
                guard let mount = mounts.first(where: { $0.type == "cgroup" && $0.options.contains("cpu") }) else { continue }
                limit = smallest(from: mount.directory(for: path), to: mount.point) { directory in
                    let quota = directory + "/cpu.cfs_quota_us"
                    guard let quotaText = read(quota), let periodText = read(directory + "/cpu.cfs_period_us") else { return nil }
                    return version1(quota: quotaText, period: periodText).map { CPULimit(cores: $0, file: quota) }
                }
            } else {
                continue
            }
            if let limit, limit.cores < found?.cores ?? .infinity { found = limit }
        }
        return found
    }

    /// The smallest limit of `directory` and the directories above it, up to `root`.
    private static func smallest(from directory: String, to root: String, limit: (String) -> CPULimit?) -> CPULimit? {
        var found: CPULimit?
        var current = directory
        while true {
            if let here = limit(current), here.cores < found?.cores ?? .infinity { found = here }
            guard current.count > root.count, let slash = current.lastIndex(of: "/") else { break }
            current = slash == current.startIndex ? "/" : String(current[..<slash])
            guard current.hasPrefix(root) else { break }
        }
        return found
    }

    /// `cpu.max`: "max 100000" (no limit) or "150000 100000" (quota and period, µs), read
    /// as v1's two files are.
    package static func version2(_ text: String) -> Double? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2 else { return nil }
        return version1(quota: String(fields[0]), period: String(fields[1]))
    }

    /// `cpu.cfs_quota_us` (-1: no limit) over `cpu.cfs_period_us`.
    package static func version1(quota: String, period: String) -> Double? {
        guard let quota = Double(quota.trimmingCharacters(in: .whitespacesAndNewlines)),
              let period = Double(period.trimmingCharacters(in: .whitespacesAndNewlines)),
              quota > 0, period > 0 else { return nil }
        return quota / period
    }

    /// A line of `/proc/self/mountinfo`: "36 35 98:0 /root /mount/point rw,noatime
    /// shared:1 - cgroup2 cgroup2 rw,nsdelegate" (optional fields up to the "-").
    struct Mount {
        /// The directory of the hierarchy that is mounted (`/` unless a container's
        /// runtime mounted its group only).
        var root: String
        var point: String
        var type: String
        /// The super block's options: a v1 hierarchy's controllers are among them.
        var options: [Substring]

        init?(_ line: Substring) {
            let fields = line.split(separator: " ")
            guard fields.count >= 10, let dash = fields.firstIndex(of: "-"), dash >= 6, dash + 3 < fields.count else { return nil }
            root = Self.unescaped(fields[3])
            point = Self.unescaped(fields[4])
            type = String(fields[dash + 1])
            options = fields[dash + 3].split(separator: ",")
        }

        /// Where the group `path` (as `/proc/self/cgroup` names it, from the hierarchy's
        /// root) is under this mount; the mount point itself when the group is not under
        /// the mounted root (a container that sees its own group as the root).
        func directory(for path: String) -> String {
            guard path.hasPrefix(root) else { return point }
            var relative = String(path.dropFirst(root.count))
            if !relative.isEmpty && !relative.hasPrefix("/") {
                guard root == "/" else { return point }
                relative = "/" + relative
            }
            if relative == "/" { relative = "" }
            return point == "/" && !relative.isEmpty ? relative : point + relative
        }

        /// mountinfo writes a space, tab, newline and backslash in a path as octal
        /// escapes (`\040`).
        static func unescaped(_ field: Substring) -> String {
            guard field.contains("\\") else { return String(field) }
            var bytes: [UInt8] = []
            var utf8 = Array(field.utf8)[...]
            while let byte = utf8.popFirst() {
                if byte == UInt8(ascii: "\\"), utf8.count >= 3,
                   let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                    bytes.append(value)
                    utf8 = utf8.dropFirst(3)
                } else {
                    bytes.append(byte)
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
