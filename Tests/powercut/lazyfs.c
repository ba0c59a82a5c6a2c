/*
 * A disk cache for power-cut tests, as an LD_PRELOAD layer (Tests/powercut/README.md).
 *
 * Every call that changes files or directories below LAZYFS_ROOT is passed on to libc
 * and appended to the binary log LAZYFS_LOG, in the order the calls happened; so are
 * the points where something became durable:
 *   - a file's bytes (writes, truncations) at its fsync/fdatasync ('S', which carries the
 *     log position when the sync began: only what came before it is covered);
 *   - a create, rename, unlink or mkdir at an fsync of its directory ('D').
 * The driver (powercut.py) kills the process at a random moment and rebuilds the
 * directory from the log as the disk would hold it after a power cut.
 *
 * Log record: op (1 byte), ino (u64), offset (u64), length (u64), upto (u64),
 * path length (u32), second path length (u32), path, second path, data (length bytes
 * for 'W'). Ops: 'C' create (path, ino), 'O' open of an existing file (path, ino),
 * 'W' write (ino, offset, data), 'T' truncate (ino, length), 'S' file sync (ino, upto),
 * 'D' directory sync (path, upto), 'R' rename (path -> second), 'U' unlink (path),
 * 'M' mkdir (path), 'X' rmdir (path).
 *
 * Built by powercut.py: cc -shared -fPIC -O2 -o liblazyfs.so lazyfs.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char root[PATH_MAX];
static size_t root_length;
static int log_fd = -1;
static uint64_t position; /* records logged so far */
static int initialized;

/* What is known of each watched descriptor: its inode, or for a directory its path. */
static uint64_t fd_ino[MAX_FDS];
static char *fd_dir[MAX_FDS];
static unsigned char fd_watched[MAX_FDS];

#define REAL(name) static __typeof__(name) *real_##name
REAL(open); REAL(openat); REAL(write); REAL(pwrite); REAL(writev); REAL(ftruncate);
REAL(truncate); REAL(fsync); REAL(fdatasync); REAL(rename); REAL(renameat); REAL(renameat2);
REAL(unlink); REAL(unlinkat); REAL(mkdir); REAL(mkdirat); REAL(rmdir); REAL(close);

static void setup(void) {
    if (initialized) return;
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_truncate = dlsym(RTLD_NEXT, "truncate");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    real_mkdir = dlsym(RTLD_NEXT, "mkdir");
    real_mkdirat = dlsym(RTLD_NEXT, "mkdirat");
    real_rmdir = dlsym(RTLD_NEXT, "rmdir");
    real_close = dlsym(RTLD_NEXT, "close");
    const char *watched = getenv("LAZYFS_ROOT");
    const char *log_path = getenv("LAZYFS_LOG");
    if (watched && log_path && strlen(watched) < sizeof(root) - 1) {
        strcpy(root, watched);
        root_length = strlen(root);
        while (root_length > 1 && root[root_length - 1] == '/') root[--root_length] = 0;
        log_fd = (int)syscall(SYS_openat, AT_FDCWD, log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            fprintf(stderr, "lazyfs: cannot open %s: %s\n", log_path, strerror(errno));
            abort();
        }
    }
    initialized = 1;
}

__attribute__((constructor)) static void start(void) { setup(); }

/* `path` (relative to `dirfd`) made absolute, in `out`; 0 when it is not below root. */
static int resolve(int dirfd, const char *path, char *out) {
    if (log_fd < 0 || !path) return 0;
    char base[PATH_MAX];
    if (path[0] == '/') {
        base[0] = 0;
    } else if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof(base))) return 0;
    } else {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
        ssize_t count = readlink(link, base, sizeof(base) - 1);
        if (count < 0) return 0;
        base[count] = 0;
    }
    int written = path[0] == '/' ? snprintf(out, PATH_MAX, "%s", path) : snprintf(out, PATH_MAX, "%s/%s", base, path);
    if (written < 0 || written >= PATH_MAX) return 0;
    /* "./" segments and a trailing slash, which the server's own paths may carry. */
    char *dot;
    while ((dot = strstr(out, "/./"))) memmove(dot, dot + 2, strlen(dot + 2) + 1);
    size_t length = strlen(out);
    while (length > 1 && out[length - 1] == '/') out[--length] = 0;
    return strncmp(out, root, root_length) == 0 && (out[root_length] == '/' || out[root_length] == 0);
}

/* Appends one record; the caller holds `lock`. */
static void emit(char op, uint64_t ino, uint64_t offset, uint64_t length, uint64_t upto,
                 const char *path, const char *second, const void *data) {
    uint32_t path_length = path ? (uint32_t)strlen(path) : 0, second_length = second ? (uint32_t)strlen(second) : 0;
    unsigned char header[1 + 8 * 4 + 4 * 2];
    header[0] = (unsigned char)op;
    memcpy(header + 1, &ino, 8);
    memcpy(header + 9, &offset, 8);
    memcpy(header + 17, &length, 8);
    memcpy(header + 25, &upto, 8);
    memcpy(header + 33, &path_length, 4);
    memcpy(header + 37, &second_length, 4);
    struct iovec parts[4] = {
        {header, sizeof(header)}, {(void *)path, path_length}, {(void *)second, second_length},
        {(void *)data, op == 'W' ? (size_t)length : 0},
    };
    size_t total = 0;
    for (int index = 0; index < 4; index++) total += parts[index].iov_len;
    /* One writev: a record is never interleaved; the log is on a real disk, not cut. */
    ssize_t done = syscall(SYS_writev, log_fd, parts, 4);
    if (done != (ssize_t)total) abort();
    position++;
}

/* Notes what `fd` is after an open of `path` (absolute, watched); logs a create or an
 * open of an existing file for writing. Holds `lock`. */
static void opened(int fd, const char *path, int flags, int existed) {
    struct stat info;
    if (fd < 0 || fd >= MAX_FDS || fstat(fd, &info) != 0) return;
    fd_watched[fd] = 1;
    fd_ino[fd] = (uint64_t)info.st_ino;
    free(fd_dir[fd]);
    fd_dir[fd] = S_ISDIR(info.st_mode) ? strdup(path) : NULL;
    if (S_ISDIR(info.st_mode)) return;
    if (!existed) {
        emit('C', info.st_ino, 0, 0, 0, path, NULL, NULL);
    } else if (flags & (O_WRONLY | O_RDWR)) {
        emit('O', info.st_ino, 0, 0, 0, path, NULL, NULL);
        if (flags & O_TRUNC) emit('T', info.st_ino, 0, 0, 0, NULL, NULL, NULL);
    }
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode) {
    setup();
    char absolute[PATH_MAX];
    if (!resolve(dirfd, path, absolute)) return real_openat(dirfd, path, flags, mode);
    pthread_mutex_lock(&lock);
    struct stat before;
    int existed = fstatat(AT_FDCWD, absolute, &before, 0) == 0;
    int fd = real_openat(dirfd, path, flags, mode);
    int saved = errno;
    opened(fd, absolute, flags, existed);
    pthread_mutex_unlock(&lock);
    errno = saved;
    return fd;
}

#define MODE_ARGUMENT(flags) \
    mode_t mode = 0; \
    if ((flags) & (O_CREAT | O_TMPFILE)) { va_list list; va_start(list, flags); mode = va_arg(list, mode_t); va_end(list); }

int open(const char *path, int flags, ...) { MODE_ARGUMENT(flags); return do_openat(AT_FDCWD, path, flags, mode); }
int open64(const char *path, int flags, ...) { MODE_ARGUMENT(flags); return do_openat(AT_FDCWD, path, flags, mode); }
int openat(int dirfd, const char *path, int flags, ...) { MODE_ARGUMENT(flags); return do_openat(dirfd, path, flags, mode); }
int openat64(int dirfd, const char *path, int flags, ...) { MODE_ARGUMENT(flags); return do_openat(dirfd, path, flags, mode); }
int __open_2(const char *path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
int __open64_2(const char *path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
int __openat_2(int dirfd, const char *path, int flags) { return do_openat(dirfd, path, flags, 0); }
int creat(const char *path, mode_t mode) { return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) { return do_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode); }

/* Whether `fd` is a descriptor opened below root and still the same file (a descriptor
 * closed some way this layer does not see may have been reused since). */
static int watched(int fd) {
    if (log_fd < 0 || fd < 0 || fd >= MAX_FDS || !fd_watched[fd]) return 0;
    struct stat info;
    return fstat(fd, &info) == 0 && (uint64_t)info.st_ino == fd_ino[fd];
}

/* Logs `count` bytes written at `offset` (-1: where the descriptor stood, which for
 * O_APPEND is the end the kernel appended at). Holds `lock`. */
static void wrote(int fd, const void *data, ssize_t count, off_t offset) {
    if (count <= 0) return;
    if (offset < 0 || (fcntl(fd, F_GETFL) & O_APPEND)) {
        struct stat info;
        offset = (fcntl(fd, F_GETFL) & O_APPEND) && fstat(fd, &info) == 0 ? info.st_size - count
                                                                          : lseek(fd, 0, SEEK_CUR) - count;
    }
    emit('W', fd_ino[fd], (uint64_t)offset, (uint64_t)count, 0, NULL, NULL, data);
}

/* A write (`offset` -1) or pwrite, passed on and logged. */
static ssize_t logged_write(int fd, const void *data, size_t count, off_t offset) {
    pthread_mutex_lock(&lock);
    ssize_t done = offset < 0 ? real_write(fd, data, count) : real_pwrite(fd, data, count, offset);
    int saved = errno;
    wrote(fd, data, done, offset);
    pthread_mutex_unlock(&lock);
    errno = saved;
    return done;
}

ssize_t write(int fd, const void *data, size_t count) {
    setup();
    return watched(fd) ? logged_write(fd, data, count, -1) : real_write(fd, data, count);
}

ssize_t pwrite(int fd, const void *data, size_t count, off_t offset) {
    setup();
    return watched(fd) ? logged_write(fd, data, count, offset) : real_pwrite(fd, data, count, offset);
}
ssize_t pwrite64(int fd, const void *data, size_t count, off_t offset) { return pwrite(fd, data, count, offset); }

ssize_t writev(int fd, const struct iovec *parts, int count) {
    setup();
    if (!watched(fd)) return real_writev(fd, parts, count);
    /* Gathered into one buffer and written with write(): one record, one offset. */
    size_t total = 0;
    for (int index = 0; index < count; index++) total += parts[index].iov_len;
    char *buffer = malloc(total ? total : 1);
    size_t at = 0;
    for (int index = 0; index < count; index++) {
        memcpy(buffer + at, parts[index].iov_base, parts[index].iov_len);
        at += parts[index].iov_len;
    }
    ssize_t done = write(fd, buffer, total);
    free(buffer);
    return done;
}

int ftruncate(int fd, off_t length) {
    setup();
    if (!watched(fd)) return real_ftruncate(fd, length);
    pthread_mutex_lock(&lock);
    int result = real_ftruncate(fd, length);
    int saved = errno;
    if (result == 0) emit('T', fd_ino[fd], 0, (uint64_t)length, 0, NULL, NULL, NULL);
    pthread_mutex_unlock(&lock);
    errno = saved;
    return result;
}
int ftruncate64(int fd, off_t length) { return ftruncate(fd, length); }

int truncate(const char *path, off_t length) {
    setup();
    char absolute[PATH_MAX];
    if (!resolve(AT_FDCWD, path, absolute)) return real_truncate(path, length);
    /* Not used by the server: say so rather than model it wrong. */
    fprintf(stderr, "lazyfs: truncate(%s) is not modelled\n", absolute);
    abort();
}

/* A sync covers what was logged before it began: `upto`. */
static int synced(int fd, int (*real)(int)) {
    setup();
    if (!watched(fd)) return real(fd);
    pthread_mutex_lock(&lock);
    uint64_t upto = position;
    pthread_mutex_unlock(&lock);
    int result = real(fd);
    int saved = errno;
    if (result == 0) {
        pthread_mutex_lock(&lock);
        if (fd_dir[fd]) emit('D', 0, 0, 0, upto, fd_dir[fd], NULL, NULL);
        else emit('S', fd_ino[fd], 0, 0, upto, NULL, NULL, NULL);
        pthread_mutex_unlock(&lock);
    }
    errno = saved;
    return result;
}
int fsync(int fd) { setup(); return synced(fd, real_fsync); }
int fdatasync(int fd) { setup(); return synced(fd, real_fdatasync); }

/* A change of names: logged after it succeeded. */
#define NAMED(call, op, first, second) \
    pthread_mutex_lock(&lock); \
    int result = (call); \
    int saved = errno; \
    if (result == 0) emit(op, 0, 0, 0, 0, first, second, NULL); \
    pthread_mutex_unlock(&lock); \
    errno = saved; \
    return result;

static int do_renameat2(int olddir, const char *old, int newdir, const char *new, unsigned flags) {
    char from[PATH_MAX], to[PATH_MAX];
    int watched_from = resolve(olddir, old, from), watched_to = resolve(newdir, new, to);
    if (!watched_from && !watched_to) return real_renameat2(olddir, old, newdir, new, flags);
    if (!watched_from || !watched_to || flags) {
        fprintf(stderr, "lazyfs: rename %s -> %s is not modelled\n", old, new);
        abort();
    }
    NAMED(real_renameat2(olddir, old, newdir, new, flags), 'R', from, to)
}
int rename(const char *old, const char *new) { setup(); return do_renameat2(AT_FDCWD, old, AT_FDCWD, new, 0); }
int renameat(int olddir, const char *old, int newdir, const char *new) { setup(); return do_renameat2(olddir, old, newdir, new, 0); }
int renameat2(int olddir, const char *old, int newdir, const char *new, unsigned flags) { setup(); return do_renameat2(olddir, old, newdir, new, flags); }

int unlinkat(int dirfd, const char *path, int flags) {
    setup();
    char absolute[PATH_MAX];
    if (!resolve(dirfd, path, absolute)) return real_unlinkat(dirfd, path, flags);
    NAMED(real_unlinkat(dirfd, path, flags), (flags & AT_REMOVEDIR) ? 'X' : 'U', absolute, NULL)
}
int unlink(const char *path) { return unlinkat(AT_FDCWD, path, 0); }
int rmdir(const char *path) { return unlinkat(AT_FDCWD, path, AT_REMOVEDIR); }

int mkdirat(int dirfd, const char *path, mode_t mode) {
    setup();
    char absolute[PATH_MAX];
    if (!resolve(dirfd, path, absolute)) return real_mkdirat(dirfd, path, mode);
    NAMED(real_mkdirat(dirfd, path, mode), 'M', absolute, NULL)
}
int mkdir(const char *path, mode_t mode) { return mkdirat(AT_FDCWD, path, mode); }

int close(int fd) {
    setup();
    if (watched(fd)) {
        pthread_mutex_lock(&lock);
        fd_watched[fd] = 0;
        free(fd_dir[fd]);
        fd_dir[fd] = NULL;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}
