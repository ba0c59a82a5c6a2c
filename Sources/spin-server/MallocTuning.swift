#if canImport(Glibc)
import Glibc
#endif

/// Gives glibc's allocator a larger per-thread cache before the server starts.
///
/// An event loop's turn makes and frees its requests' objects in bursts: tens of
/// requests, each with a few dozen small allocations, live together until the turn's
/// answers are written. glibc keeps 7 freed chunks of each size per thread (its
/// `tcache`); the rest of a burst goes through the arena's bins, and `_int_malloc` and
/// `malloc_consolidate` were 4 to 6 % of the server's CPU under load. With 256 per size
/// the same POSTs cost 4 to 8 % less CPU (BENCHMARKS.md, "Every core and every
/// percentile, third step"), about what jemalloc or mimalloc give, without a dependency.
///
/// glibc reads its tunables from `GLIBC_TUNABLES` only when a process starts, so the
/// server sets the variable and executes itself again (`/proc/self/exe`, the same
/// arguments, the same process ID), before it has opened anything. It is left alone:
/// - when `GLIBC_TUNABLES` already names `glibc.malloc.tcache_count` (an operator's own
///   choice; `glibc.malloc.tcache_count=7` is glibc's default and turns this off);
/// - when the process was already executed again (`SPIN_MALLOC_TUNED` is set, and then
///   removed), even if the C library dropped the variable;
/// - when the executable cannot be executed again: it then runs with the default cache.
///
/// The cache holds at most 256 freed chunks of each of glibc's 64 cached sizes (up to
/// 1,032 bytes) per thread: memory the server had in use a moment before, kept for the
/// next burst instead of returned to the arena.
enum MallocTuning {
    static let tunable = "glibc.malloc.tcache_count"
    static let count = 256
    static let marker = "SPIN_MALLOC_TUNED"

    /// The `GLIBC_TUNABLES` value to start with, or nil to start as the process is.
    static func tunables(current: String?, alreadyTuned: Bool) -> String? {
        if alreadyTuned { return nil }
        guard let current, !current.isEmpty else { return "\(tunable)=\(count)" }
        if current.split(separator: ":").contains(where: { $0.hasPrefix("\(tunable)=") }) { return nil }
        return "\(current):\(tunable)=\(count)"
    }

    /// Executes the server again with the larger cache, unless it should be left alone;
    /// returns only when it is not executed again.
    static func restartTuned() {
        #if canImport(Glibc)
        let current = getenv("GLIBC_TUNABLES").map { String(cString: $0) }
        let alreadyTuned = getenv(marker) != nil
        // The marker is the restart's own: the configuration warns of SPIN_* variables it
        // does not read, and a process the server starts should not inherit it.
        if alreadyTuned { unsetenv(marker) }
        guard let value = tunables(current: current, alreadyTuned: alreadyTuned) else { return }
        setenv("GLIBC_TUNABLES", value, 1)
        setenv(marker, "1", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        // Not executed again (no /proc, say): run as started.
        if let current { setenv("GLIBC_TUNABLES", current, 1) } else { unsetenv("GLIBC_TUNABLES") }
        unsetenv(marker)
        #endif
    }
}
