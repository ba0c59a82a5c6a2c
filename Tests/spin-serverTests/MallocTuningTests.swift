import Testing
@testable import spin_server

/// What `MallocTuning` starts the server with: its cache size added to the operator's
/// tunables, never over an operator's own cache size, and never twice.
struct MallocTuningTests {
    @Test func withoutTunables_TheCacheSizeIsSet() {
        #expect(MallocTuning.tunables(current: nil, alreadyTuned: false) == "glibc.malloc.tcache_count=256")
        #expect(MallocTuning.tunables(current: "", alreadyTuned: false) == "glibc.malloc.tcache_count=256")
    }

    @Test func otherTunables_AreKeptWithTheCacheSizeAdded() {
        #expect(MallocTuning.tunables(current: "glibc.malloc.mxfast=64", alreadyTuned: false)
                == "glibc.malloc.mxfast=64:glibc.malloc.tcache_count=256")
    }

    @Test func anOperatorsCacheSize_IsLeftAlone() {
        #expect(MallocTuning.tunables(current: "glibc.malloc.tcache_count=7", alreadyTuned: false) == nil)
        #expect(MallocTuning.tunables(current: "glibc.malloc.mxfast=64:glibc.malloc.tcache_count=1024",
                                      alreadyTuned: false) == nil)
        // A tunable whose name only begins the same way is another one.
        #expect(MallocTuning.tunables(current: "glibc.malloc.tcache_count_x=1", alreadyTuned: false)
                == "glibc.malloc.tcache_count_x=1:glibc.malloc.tcache_count=256")
    }

    @Test func afterTheRestart_NothingIsExecutedAgain() {
        // Even when the C library dropped the variable on the way.
        #expect(MallocTuning.tunables(current: nil, alreadyTuned: true) == nil)
    }
}
