#if canImport(Glibc)
import CLinux
import Glibc
#endif

/// How a `SocketServer` listens. Every default is in `init` and says why.
package struct ServerConfiguration: Sendable, Hashable {
    /// The numeric host to bind: `127.0.0.1`, `0.0.0.0`, `::1`, `::`. Default
    /// `127.0.0.1`: exposing a server beyond the machine is a decision, not a default.
    /// IPv6 sockets are IPV6_V6ONLY: `::` does not take IPv4 connections (run a second
    /// server on `0.0.0.0` for both), so the two families never fight over a port.
    package var host: String
    /// The port; 0 lets the kernel pick one, reported by `start()`. Default 8080.
    package var port: Int
    /// The listen(2) backlog: also where connections wait while `maxConnections` are
    /// open. 511, as nginx and Redis (the kernel caps it at somaxconn).
    package var backlog: Int32
    /// Open connections at most. At the limit the server stops accepting until one
    /// closes: newcomers wait in the backlog (and past it the kernel drops their SYNs, so
    /// clients retry), the existing ones keep their descriptors and buffers. 10 000.
    package var maxConnections: Int
    /// Event loops (threads, `EventLoop`) that drive connections. Default:
    /// `usableCores`, the CPUs the process may run on (its affinity: `taskset`, a
    /// container's cpuset) and the CPU time a control group allows it (a container's CPU
    /// limit, `CPULimit`), at least 1: one loop per core keeps every core busy without lock
    /// contention between connections of the same loop, and no two loops take turns on
    /// one core.
    package var eventLoopCount: Int
    /// Per-connection buffering and timeouts.
    package var limits: ConnectionLimits

    package init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        backlog: Int32 = 511,
        maxConnections: Int = 10_000,
        eventLoopCount: Int? = nil,
        limits: ConnectionLimits = ConnectionLimits()
    ) {
        self.host = host
        self.port = port
        self.backlog = backlog
        self.maxConnections = maxConnections
        self.eventLoopCount = max(1, eventLoopCount ?? Self.usableCores)
        self.limits = limits
    }

    /// The cores the process may use: the CPUs it may run on (its affinity; else the
    /// online count), or fewer when a control group limits its CPU time (`CPULimit`,
    /// rounded up: a limit of 1.5 CPUs gives 2).
    package static var usableCores: Int { coreBudget().cores }

    /// `usableCores`, with what it was taken from (what the server logs at start).
    package static func coreBudget() -> (cores: Int, allowed: Int, limit: CPULimit?) {
        let affinity = Int(CLinux_allowedCPUCount())
        let allowed = max(1, affinity > 0 ? affinity : Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let limit = CPULimit.current
        return (cores(allowed: allowed, limit: limit?.cores), allowed, limit)
    }

    /// The cores of `allowed` CPUs under a limit of `limit` cores (nil: none).
    package static func cores(allowed: Int, limit: Double?) -> Int {
        guard let limit, limit.isFinite, limit > 0 else { return max(1, allowed) }
        return max(1, Int(min(Double(allowed), limit.rounded(.up))))
    }
}
