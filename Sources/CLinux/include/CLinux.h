#ifndef CLINUX_H
#define CLINUX_H
// Linux calls Swift's Glibc module does not export (or exports only as macros): epoll,
// eventfd and thread names for SpinNet's event loops, the CPU affinity for their count,
// a thread's own nice value for its background threads, and the futex under SpinCore's
// lock (`Protected`).
#include <stdint.h>
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

/// Lowers the calling thread's own scheduling priority to `nice` (Linux keeps one per
/// thread): 0 on success, else the errno. In shim.c: `gettid` needs _GNU_SOURCE.
int CLinux_setThreadNice(int nice);

/// A lock in one 32-bit word (0 free, 1 held, 2 held with waiters): Drepper's futex
/// mutex ("Futexes Are Tricky", mutex 3). A `pthread_mutex_t` takes 40 bytes, and every
/// awake Spin holds about ten locks. In shim.c, not inline: compiled by clang as C (with
/// `-fsanitize=thread` under the sanitizer), its C11 acquire/release atomics are what the
/// thread sanitizer sees; the futex only parks and wakes.
void CLinux_lock(uint32_t *word);
/// Releases `CLinux_lock`'s word, waking one waiter when there may be one.
void CLinux_unlock(uint32_t *word);
#endif
