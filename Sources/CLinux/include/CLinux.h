#ifndef CLINUX_H
#define CLINUX_H
// Linux calls Swift's Glibc module does not export (or exports only as macros): epoll,
// eventfd and thread names for SpinNet's event loops, the CPU affinity for their count.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// Names the calling thread (at most 15 bytes show; `top -H`, `perf`, gdb).
static inline void CLinux_setThreadName(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// The CPUs this process may run on (`taskset`, a container's cpuset); 0 when unknown.
/// In shim.c: `sched_getaffinity` and `CPU_COUNT` need _GNU_SOURCE.
int CLinux_allowedCPUCount(void);
#endif
