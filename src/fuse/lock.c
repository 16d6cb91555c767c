/* lock.c - fcntl (POSIX and OFD) and flock locks through the MDS lock service, and their
 * release on close: the kernel sends FLUSH with the closing process's lock owner (POSIX
 * locks go) and RELEASE with flock_release when the open file had flock locks.
 *
 * Open file description locks (F_OFD_SETLK) reach us as POSIX locks whose owner is the
 * kernel's open file, and the kernel sends no unlock for them at all: not at FLUSH (whose
 * owner is the closing process's) nor at RELEASE (whose lock_owner it fills for flock
 * only). So each owner remembers the handle it last locked through, and the RELEASE of
 * that handle (the last close of the open file) unlocks it. A process's own POSIX owner
 * cannot be hit by that: it flushed, and so left the table, when it closed its last
 * descriptor of the handle. The last release of an inode here drops every owner left on
 * it (those an upgrade handed over come without their handle).
 *
 * Locks also order data between clients, as NFS does: before a lock is released or
 * downgraded this client's buffered writes to the file reach the OSTs and the MDS, and
 * after a lock is granted the kernel's cached pages and attributes of the file are dropped,
 * so reads under the lock see what the previous holder wrote (ROMIO's data sieving relies
 * on it: read-modify-write under F_SETLKW).
 *
 * F_SETLKW and blocking flock wait on the MDS (nacre_lock_wait), queued there in arrival
 * order: the FUSE thread serving one sleeps until the MDS answers. When the kernel
 * interrupts the request (a signal), libfuse's interrupt callback cancels the wait, which
 * then ends with EINTR. Mount options: flock (default) as described; localflock: the kernel keeps locks locally
 * (this client only); noflock: every lock call fails with ENOSYS, as on Lustre. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>

#include "common/log.h"
#include "fuse/fz.h"

#define OWNER_BUCKETS 256

/* (fid, owner) pairs that took a POSIX lock through this mount and have not closed since:
 * only their FLUSH (or, for an OFD owner, their RELEASE) costs an unlock RPC. One table per
 * process (nacre-mount serves one mount); the mutex is a leaf. */
struct owner_ent {
	struct nacre_fid fid;
	uint64_t owner;
	uint64_t fh; /* the handle of its last lock request; 0 if unknown (an upgrade) */
	struct owner_ent *next;
};
static pthread_mutex_t owners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct owner_ent *owners[OWNER_BUCKETS]; /* owners_lock */
static size_t owners_count;                     /* owners_lock */
/* Requests waiting in set_wait: an upgrade cannot hand those over (upgrade.c). */
static int lock_waiters; /* atomic */

static int owner_add(const struct nacre_fid *fid, uint64_t owner, uint64_t fh);

int fz_lock_waiters(void)
{
	return __atomic_load_n(&lock_waiters, __ATOMIC_ACQUIRE);
}

int fz_lock_owners_walk(int (*fn)(const struct nacre_fid *fid, uint64_t owner, void *arg),
			void *arg)
{
	int rc = 0;

	pthread_mutex_lock(&owners_lock);
	for (size_t i = 0; i < OWNER_BUCKETS && !rc; i++)
		for (struct owner_ent *e = owners[i]; e && !rc; e = e->next)
			rc = fn(&e->fid, e->owner, arg);
	pthread_mutex_unlock(&owners_lock);
	return rc;
}

int fz_lock_owner_import(const struct nacre_fid *fid, uint64_t owner)
{
	return owner_add(fid, owner, 0);
}

static size_t owner_bucket(const struct nacre_fid *fid, uint64_t owner)
{
	uint64_t h = (fid->seq ^ ((uint64_t)fid->oid << 20) ^ owner) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 40) % OWNER_BUCKETS;
}

static struct owner_ent **owner_slot(const struct nacre_fid *fid, uint64_t owner)
{
	struct owner_ent **p = &owners[owner_bucket(fid, owner)];
	while (*p && !((*p)->owner == owner && nacre_fid_eq(&(*p)->fid, fid)))
		p = &(*p)->next;
	return p;
}

/* Adds the pair (fid, owner) unless known; either way it was last used through handle fh
 * (0: unknown, which keeps what is known). 0 or -ENOMEM. */
static int owner_add(const struct nacre_fid *fid, uint64_t owner, uint64_t fh)
{
	int rc = 0;

	pthread_mutex_lock(&owners_lock);
	struct owner_ent **p = owner_slot(fid, owner);
	if (!*p) {
		struct owner_ent *e = calloc(1, sizeof(*e));
		if (e) {
			e->fid = *fid;
			e->owner = owner;
			*p = e;
			owners_count++;
		} else {
			rc = -ENOMEM;
		}
	}
	if (*p && fh)
		(*p)->fh = fh;
	pthread_mutex_unlock(&owners_lock);
	return rc;
}

/* Remembers that owner may hold POSIX locks on fid, taken through handle fh. */
static void owner_note(const struct nacre_fid *fid, uint64_t owner, uint64_t fh)
{
	if (owner_add(fid, owner, fh) < 0)
		LOG_WARN("lock", "out of memory: a POSIX lock may outlive its close");
}

/* 1 (and forgets the pair) if owner may hold POSIX locks on fid. */
static int owner_take(const struct nacre_fid *fid, uint64_t owner)
{
	pthread_mutex_lock(&owners_lock);
	struct owner_ent **p = owner_slot(fid, owner), *e = *p;
	if (e) {
		*p = e->next;
		owners_count--;
	}
	pthread_mutex_unlock(&owners_lock);
	free(e);
	return e != NULL;
}

/* Takes out of the table the owners of fid last used through handle fh, or all of fid's if
 * all; returns them as a list (the caller frees it). */
static struct owner_ent *owners_take_file(const struct nacre_fid *fid, uint64_t fh, int all)
{
	struct owner_ent *out = NULL;

	pthread_mutex_lock(&owners_lock);
	for (size_t i = 0; i < OWNER_BUCKETS && owners_count; i++) {
		struct owner_ent **p = &owners[i];
		while (*p) {
			struct owner_ent *e = *p;
			if (nacre_fid_eq(&e->fid, fid) && (all || e->fh == fh)) {
				*p = e->next;
				owners_count--;
				e->next = out;
				out = e;
			} else {
				p = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&owners_lock);
	return out;
}

static int lk_type(short t)
{
	return t == F_RDLCK ? NACRE_LK_RDLCK : t == F_WRLCK ? NACRE_LK_WRLCK : NACRE_LK_UNLCK;
}

/* struct flock (as libfuse converts it: l_len 0 = to the end) to a range; -EINVAL if bad. */
static int to_lock(const struct flock *fl, struct nacre_lock *l)
{
	if (fl->l_start < 0 || fl->l_len < 0)
		return -EINVAL;
	l->type = lk_type(fl->l_type);
	l->start = (uint64_t)fl->l_start;
	l->end = fl->l_len == 0 ? NACRE_LOCK_EOF : l->start + (uint64_t)fl->l_len - 1;
	l->pid = fl->l_pid > 0 ? (uint32_t)fl->l_pid : 0;
	return l->end >= l->start ? 0 : -EINVAL;
}

/* Sends every open handle's buffered writes to in's file out (see the top comment). */
static void flush_inode(struct fz_inode *in)
{
	pthread_mutex_lock(&in->lock);
	for (struct fz_file *f = in->files; f; f = f->next) {
		int rc = f->dirty && !f->closing ? nacre_flush(f->nf) : 0;
		if (rc < 0)
			LOG_WARN("lock", "flush before an unlock failed: %s", nacre_strerror(rc));
	}
	pthread_mutex_unlock(&in->lock);
}

/* After a grant: cached pages and attributes may predate another client's writes. */
static void drop_cache(struct fz_mount *m, fuse_ino_t ino)
{
	if (m->se)
		fuse_lowlevel_notify_inval_inode(m->se, ino, 0, 0);
}

/* libfuse's interrupt callback (the kernel sent INTERRUPT for a waiting lock request). */
static void lock_interrupted(fuse_req_t req, void *wait)
{
	(void)req;
	nacre_lock_wait_cancel(wait);
}

/* Sets a lock; if sleep, waits on the MDS until it is granted, -EINTR once the kernel
 * interrupts the request. */
static int set_wait(fuse_req_t req, const struct nacre_fid *fid, int kind, uint64_t owner,
		    const struct nacre_lock *l, int sleep)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_lock_wait *w;
	struct nacre_cred cr;
	int rc;

	fz_cred(req, &cr);
	if (!sleep || l->type == NACRE_LK_UNLCK)
		return nacre_lock_set(m->fs, &cr, fid, kind, owner, l);
	rc = nacre_lock_wait_create(m->fs, &cr, fid, kind, owner, l, &w);
	if (rc)
		return rc;
	__atomic_add_fetch(&lock_waiters, 1, __ATOMIC_ACQ_REL);
	/* runs the callback at once if the kernel interrupted the request already */
	fuse_req_interrupt_func(req, lock_interrupted, w);
	rc = nacre_lock_wait(w);
	/* after this no callback runs, nor is one still running (it holds the request's lock) */
	fuse_req_interrupt_func(req, NULL, NULL);
	__atomic_sub_fetch(&lock_waiters, 1, __ATOMIC_ACQ_REL);
	nacre_lock_wait_destroy(w);
	return rc;
}

/* Replies 0 to a lock request; if the kernel gave up on it meanwhile (the process was
 * killed while waiting), the lock just granted is dropped again. */
static void reply_granted(fuse_req_t req, const struct nacre_fid *fid, int kind, uint64_t owner,
			  const struct nacre_lock *l)
{
	if (fuse_reply_err(req, 0) == 0 || l->type == NACRE_LK_UNLCK)
		return;
	struct nacre_lock un = *l;
	un.type = NACRE_LK_UNLCK;
	nacre_lock_set(fz_mnt(req)->fs, NULL, fid, kind, owner, &un);
}

void fz_op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_lock want, got;
	struct nacre_cred cr;
	int rc;

	if (m->lock_mode == FZ_LOCK_NONE) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (!in || to_lock(lock, &want) < 0 || want.type == NACRE_LK_UNLCK) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fz_cred(req, &cr);
	rc = nacre_lock_get(m->fs, &cr, &in->fid, fi->lock_owner, &want, &got);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	struct flock out = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
	if (got.type != NACRE_LK_UNLCK) {
		out.l_type = got.type == NACRE_LK_RDLCK ? F_RDLCK : F_WRLCK;
		out.l_start = (off_t)got.start;
		/* the kernel turns this back into an end offset; 0 means "to the end" */
		out.l_len = got.end == NACRE_LOCK_EOF ? 0 : (off_t)(got.end - got.start + 1);
		out.l_pid = (pid_t)got.pid;
	}
	fuse_reply_lock(req, &out);
}

void fz_op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		 int sleep)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_lock l;
	int rc;

	if (m->lock_mode == FZ_LOCK_NONE) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (!in || to_lock(lock, &l) < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* noted before asking, so a flush racing with the grant still unlocks */
	if (l.type != NACRE_LK_UNLCK)
		owner_note(&in->fid, fi->lock_owner, fi->fh);
	if (l.type != NACRE_LK_WRLCK) /* an unlock or maybe a downgrade: others may read */
		flush_inode(in);
	rc = set_wait(req, &in->fid, NACRE_LOCK_POSIX, fi->lock_owner, &l, sleep);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	if (l.type != NACRE_LK_UNLCK)
		drop_cache(m, ino);
	reply_granted(req, &in->fid, NACRE_LOCK_POSIX, fi->lock_owner, &l);
}

void fz_op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_lock l = {.start = 0, .end = NACRE_LOCK_EOF};
	int rc;

	if (m->lock_mode == FZ_LOCK_NONE) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (!in) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	switch (op & ~LOCK_NB) {
	case LOCK_SH: l.type = NACRE_LK_RDLCK; break;
	case LOCK_EX: l.type = NACRE_LK_WRLCK; break;
	case LOCK_UN: l.type = NACRE_LK_UNLCK; break;
	default: fuse_reply_err(req, EINVAL); return;
	}
	l.pid = (uint32_t)fuse_req_ctx(req)->pid;
	if (l.type != NACRE_LK_WRLCK)
		flush_inode(in);
	rc = set_wait(req, &in->fid, NACRE_LOCK_FLOCK, fi->lock_owner, &l, !(op & LOCK_NB));
	/* flock(2) reports a held lock as EWOULDBLOCK, which is EAGAIN on Linux */
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	if (l.type != NACRE_LK_UNLCK)
		drop_cache(m, ino);
	reply_granted(req, &in->fid, NACRE_LOCK_FLOCK, fi->lock_owner, &l);
}

void fz_op_lock_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);

	/* POSIX: closing any descriptor of a file drops all the process's locks on it */
	if (m->lock_mode == FZ_LOCK_CLUSTER && in && owner_take(&in->fid, fi->lock_owner)) {
		flush_inode(in); /* the data goes out before the lock does */
		struct nacre_lock all = {.type = NACRE_LK_UNLCK, .end = NACRE_LOCK_EOF};
		int rc = nacre_lock_set(m->fs, NULL, &in->fid, NACRE_LOCK_POSIX, fi->lock_owner,
					&all);
		if (rc < 0)
			LOG_WARN("lock", "cannot release POSIX locks on close: %s "
					 "(the MDS drops them when this client is evicted)",
				 nacre_strerror(rc));
	}
	fz_op_flush(req, ino, fi);
}

/* 1 if f is the only file open on its inode here. */
static int last_file(struct fz_file *f)
{
	struct fz_inode *in = f->inode;

	pthread_mutex_lock(&in->lock);
	int last = in->files == f && !f->next;
	pthread_mutex_unlock(&in->lock);
	return last;
}

/* The last close of the open file behind fi: its OFD locks go (see the top comment). */
static void release_ofd(struct fz_mount *m, struct fz_inode *in, struct fuse_file_info *fi)
{
	struct fz_file *f = fz_handle_get(m, fi->fh, FZ_H_FILE);
	struct owner_ent *list;

	if (!f)
		return;
	list = owners_take_file(&in->fid, fi->fh, last_file(f));
	if (list)
		flush_inode(in);
	while (list) {
		struct owner_ent *e = list;
		struct nacre_lock all = {.type = NACRE_LK_UNLCK, .end = NACRE_LOCK_EOF};
		int rc = nacre_lock_set(m->fs, NULL, &in->fid, NACRE_LOCK_POSIX, e->owner, &all);
		if (rc < 0)
			LOG_WARN("lock", "cannot release OFD locks on close: %s "
					 "(the MDS drops them when this client is evicted)",
				 nacre_strerror(rc));
		list = e->next;
		free(e);
	}
}

void fz_op_lock_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);

	if (m->lock_mode == FZ_LOCK_CLUSTER && in)
		release_ofd(m, in, fi);
	if (fi->flock_release && m->lock_mode == FZ_LOCK_CLUSTER && in) {
		flush_inode(in);
		struct nacre_lock un = {.type = NACRE_LK_UNLCK, .end = NACRE_LOCK_EOF};
		int rc = nacre_lock_set(m->fs, NULL, &in->fid, NACRE_LOCK_FLOCK, fi->lock_owner,
					&un);
		if (rc < 0)
			LOG_WARN("lock", "cannot release a flock lock on close: %s",
				 nacre_strerror(rc));
	}
	fz_op_release(req, ino, fi);
}
