#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stddef.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CLinux.h"

int CLinux_setThreadNice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)gettid(), nice) == 0 ? 0 : errno;
}

int CLinux_allowedCPUCount(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}

void CLinux_lock(uint32_t *word) {
    uint32_t seen = 0;
    if (__atomic_compare_exchange_n(word, &seen, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    if (seen != 2) seen = __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE);
    while (seen != 0) {
        // Sleeps only while the word is still 2 (an unlock in between makes it return).
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        seen = __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE);
    }
}

void CLinux_unlock(uint32_t *word) {
    if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) != 1) {
        syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}
