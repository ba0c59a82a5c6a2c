#define _GNU_SOURCE
#include <sched.h>
#include "CLinux.h"

int CLinux_allowedCPUCount(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}
