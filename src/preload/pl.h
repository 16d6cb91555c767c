/* pl.h - libnacre-preload: the parts of an LD_PRELOAD library that serves the data of files
 * under nacre mounts through libnacre, without a FUSE round trip per call.
 *
 * The kernel keeps every descriptor: open goes through the mount (permissions, O_CREAT,
 * O_TRUNC, the descriptor number, close-on-exec, inheritance are the kernel's), and so does
 * the file offset, which read and write move with lseek. What this library takes is the
 * bytes: read/write and their variants on a regular file of a nacre mount go to a libnacre
 * handle of the same file, opened on the first read or write (pl_fd.c). Everything it does
 * not serve, and every file it cannot (O_APPEND, a mapping, a lock, a mount it cannot reach
 * with the mount's key), goes to the kernel. Coherency with other processes that use the
 * mount is that of two mounts: close-to-open.
 */
#ifndef NACRE_PRELOAD_PL_H
#define NACRE_PRELOAD_PL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "nacre/nacre.h"

/* ---- pl_real.c: the libc functions underneath, and the call counts ---- */
struct pl_real {
	int (*openat)(int, const char *, int, ...);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*pread)(int, void *, size_t, off_t);
	ssize_t (*pwrite)(int, const void *, size_t, off_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*preadv2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*pwritev2)(int, const struct iovec *, int, off_t, int);
	off_t (*lseek)(int, off_t, int);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*fstat)(int, struct stat *);
	int (*fstatat)(int, const char *, struct stat *, int);
	int (*statx)(int, const char *, int, unsigned, struct statx *);
	int (*fsync)(int);
	int (*fdatasync)(int);
	int (*ftruncate)(int, off_t);
	int (*fallocate)(int, int, off_t, off_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	ssize_t (*copy_file_range)(int, off_t *, int, off_t *, size_t, unsigned);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*splice)(int, off_t *, int, off_t *, size_t, unsigned);
	FILE *(*fdopen)(int, const char *);
	int (*close_range)(unsigned, unsigned, int);
	int (*flock)(int, int);
	int (*posix_fallocate)(int, off_t, off_t);
	void (*_exit)(int);
};
extern struct pl_real pl_real;

/* Resolves the real functions and reads the mounts, once; every entry point calls it. */
void pl_init(void);
/* Nonzero on this thread while the library itself runs (libnacre inside a call, the
 * set-up): every entry point then goes straight to libc. */
extern __thread int pl_inside;
/* This process's pid as of set-up or its fork: a vfork child (no fork handlers run) shares
 * its parent's memory and differs from it. */
extern pid_t pl_pid;

enum pl_count {
	PL_C_OPEN,   /* descriptors of nacre files taken (served from their first I/O) */
	PL_C_READ,   /* read, pread, readv... served through libnacre */
	PL_C_WRITE,
	PL_C_SEEK,   /* lseek SEEK_END answered from libnacre's size */
	PL_C_STAT,   /* fstat given libnacre's size */
	PL_C_SYNC,
	PL_C_CLOSE,
	PL_C_DUP,
	PL_C_KERNEL, /* files handed back to the kernel (mmap, lock, fallback) */
	PL_C_COUNT
};
void pl_count(enum pl_count c, uint64_t bytes);
/* At exit: every handle closed, then the NACRE_PRELOAD_REPORT=1 line. */
void pl_finish(void);
/* NACRE_PRELOAD_DEBUG=1: why files go to the kernel, on stderr. */
void pl_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* errno from a libnacre error, and -1. */
int pl_fail(int rc);

/* ---- pl_mount.c: the nacre mounts of this process, a libnacre connection each ---- */
struct pl_mount;
/* Reads /proc/self/mountinfo. */
void pl_mounts_load(void);
/* Nonzero if any nacre mount was found. */
int pl_mounts_any(void);
/* The nacre mount a file of device dev is on, or NULL. */
struct pl_mount *pl_mount_of(dev_t dev);
/* The mount's libnacre connection, made at the first call (NULL if it cannot be made: the
 * key is not readable, the MDS is away). Thread-safe. */
struct nacre_fs *pl_mount_fs(struct pl_mount *m);
/* The caller's credentials for fs. 0 or a negative error. */
int pl_cred(struct nacre_fs *fs, struct nacre_cred *cr);
/* In a child after fork: the parent's connections are unusable (their threads are gone)
 * and none is made; the child's files go through the kernel until it execs. */
void pl_mounts_forked(void);

/* ---- pl_fd.c: descriptors whose data libnacre serves ---- */
struct pl_file;
/* A descriptor was opened with flags: taken if it is a regular file of a nacre mount. */
void pl_fd_opened(int fd, int flags);
/* The libnacre handle behind fd, held until pl_fd_put, or NULL: the kernel serves fd. The
 * first call opens the handle. */
struct pl_file *pl_fd_get(int fd);
struct nacre_file *pl_fd_nf(struct pl_file *f);
void pl_fd_put(struct pl_file *f, int wrote);
/* Nonzero if the table holds fd (served now or later). */
int pl_fd_known(int fd);
/* Before the kernel closes fd: the handle is closed with its last descriptor, the size
 * published and the kernel's cached pages and attributes dropped. */
int pl_fd_closing(int fd);
/* After the kernel made newfd a duplicate of oldfd (dup, dup2, F_DUPFD). */
void pl_fd_duped(int oldfd, int newfd);
/* The kernel will touch fd's data itself (ftruncate, copy_file_range, SEEK_DATA): the
 * handle's writes are flushed, it is closed and the kernel's caches dropped; forever
 * (a mapping, a lock, O_APPEND) or until the next read or write. */
void pl_fd_to_kernel(int fd, int forever);
/* fork(2): pl_fd_prefork flushes every handle (the child reads what the parent wrote). */
void pl_fd_prefork(void);
void pl_fd_postfork(int child);
/* At exit: every handle is closed (its writes reach the OSTs, its size the MDS). */
void pl_fd_close_all(void);

#endif
