/* pl_fd.c - the descriptors whose data libnacre serves: a table indexed by descriptor, each
 * slot naming a pl_file shared by the descriptors dup made of one open.
 *
 * A pl_file is LAZY until its first read or write opens the libnacre handle (OPEN), or
 * KERNEL when it cannot be opened or the kernel must see the data itself. The kernel's file
 * offset stays the truth (read and write move it), so fork, exec and descriptor passing
 * see what they would see without this library. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "nacre/nacre_vxattr.h"
#include "preload/pl.h"

#define PL_FD_MAX 65536 /* descriptors above are left to the kernel */

enum { PL_LAZY, PL_OPEN, PL_KERNEL };

struct pl_file {
	int fds;                /* table slots naming it; under tab_lock */
	int refs;               /* fds plus calls in progress; atomic */
	int flags;              /* the open(2) flags */
	int wrote;              /* atomic: written through libnacre since it was opened */
	int state;              /* PL_*; under rw (written with it held for writing) */
	struct pl_mount *mnt;
	struct nacre_file *nf;
	pthread_rwlock_t rw;    /* read: a call uses nf; write: nf opens or closes */
};

static struct pl_file *tab[PL_FD_MAX]; /* read without tab_lock with __atomic */
static int tab_top;                    /* one above the highest slot ever used */
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

static void file_free(struct pl_file *f)
{
	if (f->nf) {
		pl_inside++;
		nacre_close(f->nf);
		pl_inside--;
	}
	pthread_rwlock_destroy(&f->rw);
	free(f);
}

static void file_unref(struct pl_file *f)
{
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
		file_free(f);
}

/* Puts f (may be NULL) in slot fd; the slot's previous file loses a descriptor. Returns
 * that file with its reference, for the caller to drop outside the lock. */
static struct pl_file *slot_set(int fd, struct pl_file *f)
{
	struct pl_file *old;

	pthread_mutex_lock(&tab_lock);
	old = tab[fd];
	if (old)
		old->fds--;
	if (f)
		f->fds++;
	__atomic_store_n(&tab[fd], f, __ATOMIC_RELEASE);
	if (fd >= tab_top)
		tab_top = fd + 1;
	pthread_mutex_unlock(&tab_lock);
	return old;
}

static struct pl_file *slot_ref(int fd)
{
	struct pl_file *f;

	if (fd < 0 || fd >= PL_FD_MAX || !__atomic_load_n(&tab[fd], __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&tab_lock);
	f = tab[fd];
	if (f)
		__atomic_add_fetch(&f->refs, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&tab_lock);
	return f;
}

void pl_fd_opened(int fd, int flags)
{
	struct pl_mount *m;
	struct pl_file *f, *old;
	struct statx stx;

	if (!pl_mounts_any() || fd < 0 || fd >= PL_FD_MAX || (flags & (O_APPEND | O_PATH)))
		return;
	/* the kernel's cached type and device: no round trip to the mount */
	if (pl_real.statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0 ||
	    !S_ISREG(stx.stx_mode))
		return;
	m = pl_mount_of(makedev(stx.stx_dev_major, stx.stx_dev_minor));
	if (!m)
		return;
	f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->refs = 1;
	f->flags = flags;
	f->state = PL_LAZY;
	f->mnt = m;
	pthread_rwlock_init(&f->rw, NULL);
	old = slot_set(fd, f); /* a slot whose descriptor was closed behind our back */
	if (old)
		file_unref(old);
	pl_count(PL_C_OPEN, 0);
}

/* Opens f's libnacre handle. Called with f->rw held for writing. */
static void file_open(struct pl_file *f, int fd)
{
	struct nacre_fs *fs = pl_mount_fs(f->mnt);
	char text[NACRE_FID_STR_MAX];
	struct nacre_cred cr;
	struct nacre_fid fid;
	ssize_t n;
	int rc;

	f->state = PL_KERNEL;
	if (!fs)
		return;
	n = fgetxattr(fd, NACRE_VXATTR_FID, text, sizeof(text) - 1);
	if (n <= 0) {
		pl_debug("fd %d: no FID (%s): left to the kernel", fd, strerror(errno));
		return;
	}
	text[n] = '\0';
	if (nacre_fid_parse(text, &fid) < 0)
		return;
	rc = pl_cred(fs, &cr);
	if (rc == 0)
		rc = nacre_open(fs, &cr, &fid, f->flags & O_ACCMODE, &f->nf);
	if (rc < 0) {
		/* e.g. a creator writing a file it made read-only: the kernel allowed that */
		pl_debug("fd %d (%s): %s: left to the kernel", fd, text, nacre_strerror(rc));
		pl_count(PL_C_KERNEL, 0);
		return;
	}
	f->state = PL_OPEN;
}

struct pl_file *pl_fd_get(int fd)
{
	struct pl_file *f = slot_ref(fd);

	if (!f)
		return NULL;
	pthread_rwlock_rdlock(&f->rw);
	if (f->state == PL_LAZY) {
		pthread_rwlock_unlock(&f->rw);
		pthread_rwlock_wrlock(&f->rw);
		if (f->state == PL_LAZY) {
			pl_inside++;
			file_open(f, fd);
			pl_inside--;
		}
		pthread_rwlock_unlock(&f->rw);
		pthread_rwlock_rdlock(&f->rw);
	}
	if (f->state == PL_OPEN)
		return f;
	pthread_rwlock_unlock(&f->rw);
	file_unref(f);
	return NULL;
}

struct nacre_file *pl_fd_nf(struct pl_file *f)
{
	return f->nf;
}

void pl_fd_put(struct pl_file *f, int wrote)
{
	if (wrote)
		__atomic_store_n(&f->wrote, 1, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&f->rw);
	file_unref(f);
}

int pl_fd_known(int fd)
{
	return fd >= 0 && fd < PL_FD_MAX && __atomic_load_n(&tab[fd], __ATOMIC_ACQUIRE);
}

/* Closes f's handle while fd still names the file: the size and mtime reach the MDS, then
 * the kernel forgets what it cached of the file (another process reads it through the
 * mount). The first deferred write error, or 0. Called with f->rw held for writing. */
static int file_close(struct pl_file *f, int fd, int next_state)
{
	int rc = 0;

	if (f->state == PL_OPEN) {
		pl_inside++;
		rc = nacre_close(f->nf);
		f->nf = NULL;
		if (__atomic_exchange_n(&f->wrote, 0, __ATOMIC_RELAXED))
			fsetxattr(fd, NACRE_VXATTR_INVALIDATE, "", 0, 0);
		pl_inside--;
	}
	if (f->state != PL_KERNEL)
		f->state = next_state;
	return rc;
}

int pl_fd_closing(int fd)
{
	struct pl_file *f = slot_ref(fd);
	int rc = 0, last;

	if (!f)
		return 0;
	pthread_mutex_lock(&tab_lock);
	last = tab[fd] == f && f->fds == 1;
	pthread_mutex_unlock(&tab_lock);
	if (last) {
		pthread_rwlock_wrlock(&f->rw);
		rc = file_close(f, fd, PL_KERNEL);
		pthread_rwlock_unlock(&f->rw);
		pl_count(PL_C_CLOSE, 0);
	}
	struct pl_file *old = slot_set(fd, NULL);
	if (old)
		file_unref(old);
	file_unref(f);
	return rc;
}

void pl_fd_duped(int oldfd, int newfd)
{
	struct pl_file *f = slot_ref(oldfd), *prev;

	if (!f || newfd < 0 || newfd >= PL_FD_MAX) {
		if (f)
			file_unref(f);
		return;
	}
	prev = slot_set(newfd, f); /* the slot keeps the reference slot_ref took */
	if (prev)
		file_unref(prev);
	pl_count(PL_C_DUP, 0);
}

void pl_fd_to_kernel(int fd, int forever)
{
	struct pl_file *f = slot_ref(fd);

	if (!f)
		return;
	pthread_rwlock_wrlock(&f->rw);
	if (f->state == PL_OPEN || forever)
		pl_count(PL_C_KERNEL, 0);
	file_close(f, fd, forever ? PL_KERNEL : PL_LAZY);
	if (forever)
		f->state = PL_KERNEL;
	pthread_rwlock_unlock(&f->rw);
	file_unref(f);
}

void pl_fd_prefork(void)
{
	/* held until the fork is done: the child gets a table nobody was changing */
	pthread_mutex_lock(&tab_lock);
	for (int fd = 0; fd < tab_top; fd++) {
		struct pl_file *f = tab[fd];

		if (!f || pthread_rwlock_tryrdlock(&f->rw) != 0)
			continue; /* being opened or closed by another thread: not ours to wait */
		if (f->state == PL_OPEN && __atomic_load_n(&f->wrote, __ATOMIC_RELAXED)) {
			nacre_flush(f->nf);
			fsetxattr(fd, NACRE_VXATTR_INVALIDATE, "", 0, 0);
		}
		pthread_rwlock_unlock(&f->rw);
	}
}

void pl_fd_postfork(int child)
{
	if (!child) {
		pthread_mutex_unlock(&tab_lock);
		return;
	}
	/* The handles belong to the parent's libnacre, whose threads stayed there: the child
	 * leaves them be (allocated) and its inherited descriptors to the kernel. */
	for (int fd = 0; fd < tab_top; fd++)
		tab[fd] = NULL;
	tab_top = 0;
	pthread_mutex_init(&tab_lock, NULL);
}

void pl_fd_close_all(void)
{
	for (int fd = 0; fd < tab_top; fd++)
		if (tab[fd])
			pl_fd_closing(fd);
}
