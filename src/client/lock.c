/* lock.c - libnacre's lock calls that do not wait: POSIX byte-range locks and flock, held by
 * the MDS, and the record of the requests that built what this mount holds, replayed to a
 * restarted MDS (which forgets every lock). Blocking requests are lock_wait.c's. The record is the requests themselves, in order: replaying
 * them rebuilds the same splits and merges the MDS made. A request that covers an owner's
 * earlier ones of the same file (the same range or more) replaces them, so the record
 * stays about as long as the list of locks held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_data.h"
#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/lock.h"
#include "client/mdc.h"
#include "client/obj.h"
#include "common/key.h"
#include "proto/wire.h"

/* The mount's id in lock owners, chosen at random on first use so that two mounts (even of
 * one process) never share an owner and a reconnect keeps the same id. */
static uint64_t lock_client(struct nacre_fs *fs)
{
	uint64_t id = __atomic_load_n(&fs->lock_client, __ATOMIC_ACQUIRE);
	if (id)
		return id;
	if (key_random(&id, sizeof(id)) < 0 || id == 0)
		id = ((uint64_t)(uintptr_t)fs << 16) ^ 0x9e3779b97f4a7c15ull; /* still unique here */
	uint64_t zero = 0;
	if (!__atomic_compare_exchange_n(&fs->lock_client, &zero, id, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		id = zero; /* another thread chose first */
	return id;
}

NACRE_API uint64_t nacre_fs_lock_client(struct nacre_fs *fs)
{
	return lock_client(fs);
}

NACRE_API int nacre_fs_set_lock_client(struct nacre_fs *fs, uint64_t id)
{
	uint64_t zero = 0;

	if (!fs || id == 0)
		return -EINVAL;
	if (__atomic_compare_exchange_n(&fs->lock_client, &zero, id, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return 0;
	return zero == id ? 0 : -EBUSY;
}

int cl_lock_req(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		int kind, uint64_t owner, const struct nacre_lock *l, struct wire_lock_req *r)
{
	struct nacre_cred root;
	if (!fs || !fid || !l || (kind != NACRE_LOCK_POSIX && kind != NACRE_LOCK_FLOCK) ||
	    l->type < NACRE_LK_UNLCK || l->type > NACRE_LK_WRLCK)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->cred = *cl_cred(cr, &root);
	r->fid = *fid;
	r->client = lock_client(fs);
	r->owner = owner;
	r->pid = l->pid;
	r->kind = (uint8_t)kind;
	r->type = (uint8_t)l->type;
	r->start = kind == NACRE_LOCK_FLOCK ? 0 : l->start;
	r->end = kind == NACRE_LOCK_FLOCK ? WIRE_LOCK_EOF : l->end;
	return r->start <= r->end ? 0 : -EINVAL;
}

struct cl_lock_rec {
	struct cl_lock_rec *next;
	struct wire_lock_req r;
};

static int same_holder(const struct wire_lock_req *a, const struct wire_lock_req *b)
{
	return a->kind == b->kind && a->owner == b->owner && nacre_fid_eq(&a->fid, &b->fid);
}

/* Records a granted LOCK_SET or LOCK_WAIT. An unlock that leaves nothing of the owner's in its range is
 * not kept: replaying it would change nothing. */
static void record(struct nacre_fs *fs, const struct wire_lock_req *r)
{
	struct cl_lock_rec **pp, *n;
	int overlaps = 0;

	pthread_mutex_lock(&fs->locks_lock);
	for (pp = &fs->locks; *pp;) {
		struct cl_lock_rec *e = *pp;
		if (same_holder(&e->r, r) && r->start <= e->r.start && e->r.end <= r->end) {
			*pp = e->next; /* superseded */
			free(e);
			continue;
		}
		if (same_holder(&e->r, r) && e->r.start <= r->end && r->start <= e->r.end)
			overlaps = 1;
		pp = &e->next;
	}
	if (r->type != WIRE_LK_UNLCK || overlaps) {
		n = malloc(sizeof(*n));
		if (n) { /* without it a restarted MDS would not know this lock */
			n->r = *r;
			n->next = NULL;
			*pp = n;
		}
	}
	pthread_mutex_unlock(&fs->locks_lock);
}

int cl_locks_replay(struct nacre_fs *fs, struct rpc_recovery *r)
{
	int n = 0, lost = 0, rc = 0;

	/* Nothing changes the record meanwhile: lock calls need the socket being recovered. */
	pthread_mutex_lock(&fs->locks_lock);
	struct cl_lock_rec *e = fs->locks;
	pthread_mutex_unlock(&fs->locks_lock);
	for (; e && rc == 0; e = e->next) {
		struct wire_cursor c;
		struct rpc_msg *m = NULL;
		uint8_t buf[512];
		wire_cursor_init_write(&c, buf, sizeof(buf));
		wire_lock_req_encode(&c, &e->r);
		rc = rpc_recovery_call(r, WIRE_OP_MDS_LOCK_SET, WIRE_ENV_REPLAY, buf,
				       (uint32_t)c.pos, NULL, 0, &m);
		if (rc < 0 && m) {
			char fid[NACRE_FID_STR_MAX];
			cl_log(fs, CL_LOG_ERR, "MDS %s: the lock on %s [%llu, %llu] of owner %llx "
			       "could not be taken back after the MDS restarted: %s",
			       fs->addr, nacre_fid_format(&e->r.fid, fid, sizeof(fid)),
			       (unsigned long long)e->r.start, (unsigned long long)e->r.end,
			       (unsigned long long)e->r.owner, nacre_strerror(rc));
			lost++;
			rc = 0;
		}
		rpc_msg_free(m);
		n++;
	}
	if (n)
		cl_log(fs, CL_LOG_INFO, "MDS %s: %d lock requests replayed, %d lost", fs->addr, n,
		       lost);
	return rc;
}

void cl_locks_init(struct nacre_fs *fs)
{
	pthread_mutex_init(&fs->locks_lock, NULL);
	pthread_mutex_init(&fs->waits_lock, NULL);
	pthread_cond_init(&fs->waits_cond, NULL);
}

void cl_locks_fini(struct nacre_fs *fs)
{
	while (fs->locks) {
		struct cl_lock_rec *e = fs->locks;
		fs->locks = e->next;
		free(e);
	}
	pthread_mutex_destroy(&fs->locks_lock);
	pthread_mutex_destroy(&fs->waits_lock);
	pthread_cond_destroy(&fs->waits_cond);
}

/* After a grant the previous holder's writes are on the servers (its client flushed before
 * unlocking): without this a read under the lock would stop at the size the handle saw at
 * open. */
NACRE_API int nacre_fs_revalidate(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct nacre_attr a;
	int rc;

	if (!fs || !fid)
		return -EINVAL;
	rc = nacre_getattr(fs, NULL, fid, &a);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (!nacre_fid_eq(&f->fid, fid))
			continue;
		pthread_mutex_lock(&f->lock);
		if (a.size > f->attr.size)
			f->attr.size = a.size;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
	cl_wgen_bump(fs, fid);
	return 0;
}

void cl_lock_granted(struct nacre_fs *fs, const struct wire_lock_req *r)
{
	record(fs, r);
	if (r->type != WIRE_LK_UNLCK)
		nacre_fs_revalidate(fs, &r->fid); /* best effort: on failure as it was */
}

int cl_lock_set_req(struct nacre_fs *fs, const struct wire_lock_req *r)
{
	int rc = cl_mds_do(fs, WIRE_OP_MDS_LOCK_SET, r, NULL);

	if (rc)
		return rc == -EAGAIN ? rc : cl_io_errno(rc);
	cl_lock_granted(fs, r);
	return 0;
}

NACRE_API int nacre_lock_set(struct nacre_fs *fs, const struct nacre_cred *cr,
			     const struct nacre_fid *fid, int kind, uint64_t owner,
			     const struct nacre_lock *l)
{
	struct wire_lock_req r;
	int rc = cl_lock_req(fs, cr, fid, kind, owner, l, &r);

	return rc ? rc : cl_lock_set_req(fs, &r);
}

NACRE_API int nacre_lock_get(struct nacre_fs *fs, const struct nacre_cred *cr,
			     const struct nacre_fid *fid, uint64_t owner,
			     const struct nacre_lock *want, struct nacre_lock *conflict)
{
	struct wire_lock_req r;
	struct wire_lock_rep o;
	int rc;

	if (!conflict || !want || want->type == NACRE_LK_UNLCK)
		return -EINVAL;
	rc = cl_lock_req(fs, cr, fid, NACRE_LOCK_POSIX, owner, want, &r);
	if (rc)
		return rc;
	rc = cl_mds_do(fs, WIRE_OP_MDS_LOCK_GET, &r, &o);
	if (rc)
		return cl_io_errno(rc);
	memset(conflict, 0, sizeof(*conflict));
	conflict->type = o.type;
	conflict->start = o.start;
	conflict->end = o.end;
	conflict->pid = o.pid;
	return 0;
}
