#ifndef CEPOLL_H
#define CEPOLL_H
// epoll, eventfd and thread names, which Swift's Glibc module does not export:
// SpinNet's event loops wait on them (`EventLoop`).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// Names the calling thread (at most 15 bytes show; `top -H`, `perf`, gdb).
static inline void CEpoll_setThreadName(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
#endif
