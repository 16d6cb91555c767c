/* lease.c - write-back leases on directories this mount made (lease.h). */
#include "client/lease.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/cl_internal.h"
#include "client/mdc.h"
#include "common/fid.h"
#include "common/net.h"
#include "nacre/nacre_errno.h"
#include "proto/wire.h"

#define CL_LEASE_BUCKETS 1024

struct cl_name {
	struct cl_name *next;
	uint32_t hash;
	char name[];
};

struct cl_lease_dir {
	struct cl_lease_dir *next;         /* hash chain */
	struct cl_lease_dir *older, *newer; /* grant order */
	struct nacre_fid fid;
	struct nacre_fid parent; /* inherited: the lease it came with; it ends with it */
	int inherited;           /* made in a leased directory: the MDS leased it with no GET */
	uint64_t gen;            /* the connection generation it was granted on */
	int64_t granted_sent_ms; /* when its GET was sent */
	uint32_t uid, mode;      /* the directory's, for who may be answered */
	struct cl_name **names;  /* hash set of the names in it; nb buckets */
	uint32_t nb, count;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static struct cl_name **name_slot(struct cl_lease_dir *d, const char *name, uint32_t h)
{
	struct cl_name **pp = &d->names[h % d->nb];

	while (*pp && ((*pp)->hash != h || strcmp((*pp)->name, name) != 0))
		pp = &(*pp)->next;
	return pp;
}

/* Doubles d's buckets at a load of 1. 0 or -ENOMEM (then it stays as it was). */
static int names_grow(struct cl_lease_dir *d)
{
	uint32_t nb = d->nb ? d->nb * 2 : 16;
	struct cl_name **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->nb; i++) {
		while (d->names[i]) {
			struct cl_name *e = d->names[i];
			d->names[i] = e->next;
			e->next = b[e->hash % nb];
			b[e->hash % nb] = e;
		}
	}
	free(d->names);
	d->names = b;
	d->nb = nb;
	return 0;
}

static void dir_free(struct cl_lease_dir *d)
{
	for (uint32_t i = 0; i < d->nb; i++) {
		while (d->names[i]) {
			struct cl_name *e = d->names[i];
			d->names[i] = e->next;
			free(e);
		}
	}
	free(d->names);
	free(d);
}

static struct cl_lease_dir **dir_slot(struct cl_leases *l, const struct nacre_fid *fid)
{
	struct cl_lease_dir **pp = &l->b[fid_hash(fid) % CL_LEASE_BUCKETS];

	while (*pp && !fid_eq(&(*pp)->fid, fid))
		pp = &(*pp)->next;
	return pp;
}

static struct cl_lease_dir *dir_find(struct cl_leases *l, const struct nacre_fid *fid)
{
	return l->b ? *dir_slot(l, fid) : NULL;
}

/* Takes d out of the table (it is the caller's to give back and free). With the lock. */
static void dir_unlink(struct cl_leases *l, struct cl_lease_dir *d)
{
	struct cl_lease_dir **pp = dir_slot(l, &d->fid);

	if (*pp == d)
		*pp = d->next;
	if (d->older)
		d->older->newer = d->newer;
	else
		l->oldest = d->newer;
	if (d->newer)
		d->newer->older = d->older;
	else
		l->newest = d->older;
	__atomic_store_n(&l->n, l->n - 1, __ATOMIC_RELAXED);
	l->names -= d->count;
	d->next = d->older = d->newer = NULL;
}

/* Gives each lease of the list (chained by next) back and frees it. Without the lock. */
static void give_back(struct nacre_fs *fs, struct cl_lease_dir *list)
{
	while (list) {
		struct cl_lease_dir *d = list;
		struct wire_lease_req r = {.fid = d->fid, .op = WIRE_LEASE_PUT};
		list = d->next;
		/* a failure (the MDS away) is no matter: it ends the lease itself */
		if (cl_mds_do(fs, WIRE_OP_MDS_LEASE, &r, NULL) == 0) {
			pthread_mutex_lock(&fs->leases.lock);
			fs->leases.returned++;
			pthread_mutex_unlock(&fs->leases.lock);
		}
		dir_free(d);
	}
}

/* Whether d may answer now. With the lock. */
static int valid(struct nacre_fs *fs, const struct cl_leases *l, const struct cl_lease_dir *d)
{
	int64_t from = d->granted_sent_ms;

	if (d->gen != rpc_conn_gen(fs->mds))
		return 0;
	if (l->renew_gen == d->gen && l->renew_sent_ms > from)
		from = l->renew_sent_ms;
	return net_now_ms() < from + WIRE_LEASE_MS - CL_LEASE_MARGIN_MS;
}

void cl_lease_init(struct nacre_fs *fs)
{
	pthread_mutex_init(&fs->leases.lock, NULL);
}

void cl_lease_fini(struct nacre_fs *fs)
{
	struct cl_leases *l = &fs->leases;

	/* nothing is given back: the unmount's DISCONNECT ended them at the MDS (a client
	 * that vanished loses them WIRE_LEASE_MS after its connection closed) */
	while (l->oldest) {
		struct cl_lease_dir *d = l->oldest;
		dir_unlink(l, d);
		dir_free(d);
	}
	free(l->b);
	l->b = NULL;
	pthread_mutex_destroy(&l->lock);
}

static int usable(struct nacre_fs *fs)
{
	uint64_t need = WIRE_FEAT_WB_LEASE | WIRE_FEAT_RECOVERY;

	return __atomic_load_n(&fs->leases.on, __ATOMIC_RELAXED) && fs->client_id &&
	       (rpc_conn_features(fs->mds) & need) == need && fs->notify_started &&
	       !__atomic_load_n(&fs->notify_stop, __ATOMIC_ACQUIRE);
}

static void drop(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all,
		 int recalled);

/* Whether parent is held and good now: then the MDS leased what this mount makes in it
 * (mds_lease_made_dir), and *from tells the lease's generation and renewal. */
static int inherits(struct nacre_fs *fs, const struct nacre_fid *parent,
		    struct cl_lease_dir *from)
{
	struct cl_leases *l = &fs->leases;
	int yes = 0;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&l->lock);
	struct cl_lease_dir *p = dir_find(l, parent);
	if (p && valid(fs, l, p)) {
		from->gen = p->gen;
		from->granted_sent_ms = p->granted_sent_ms;
		yes = 1;
	}
	pthread_mutex_unlock(&l->lock);
	return yes;
}

void cl_lease_take(struct nacre_fs *fs, const struct nacre_fid *parent,
		   const struct nacre_attr *a)
{
	struct cl_leases *l = &fs->leases;
	struct wire_lease_req r = {.fid = a->fid, .op = WIRE_LEASE_GET};
	struct cl_lease_dir *d, *full = NULL;
	int rc = 0;

	if (!usable(fs) || !S_ISDIR(a->mode))
		return;
	d = calloc(1, sizeof(*d));
	if (!d || names_grow(d)) {
		free(d);
		return;
	}
	d->fid = a->fid;
	d->uid = a->uid;
	d->mode = a->mode;
	/* made in a directory it holds: the MDS leased it along (if the parent was being
	 * recalled meanwhile, it did not: the recall then ends this one with its parent) */
	if (inherits(fs, parent, d)) {
		d->inherited = 1;
		d->parent = *parent;
	} else {
		d->gen = rpc_conn_gen(fs->mds);
		d->granted_sent_ms = net_now_ms();
		rc = cl_mds_do(fs, WIRE_OP_MDS_LEASE, &r, NULL);
	}
	pthread_mutex_lock(&l->lock);
	if (rc == 0 && !l->b && !(l->b = calloc(CL_LEASE_BUCKETS, sizeof(*l->b))))
		rc = -ENOMEM;
	if (rc == 0 && d->gen != rpc_conn_gen(fs->mds))
		rc = -ECONNRESET; /* granted on a connection gone since: not ours to trust */
	if (rc == 0 && !dir_find(l, &d->fid)) {
		if (l->n >= CL_LEASE_MAX) /* the oldest goes back, and what came with it */
			full = l->oldest;
		struct cl_lease_dir **pp = dir_slot(l, &d->fid);
		*pp = d;
		d->older = l->newest;
		if (l->newest)
			l->newest->newer = d;
		else
			l->oldest = d;
		l->newest = d;
		__atomic_store_n(&l->n, l->n + 1, __ATOMIC_RELAXED);
		l->granted++;
		d = NULL;
	} else if (rc) {
		l->refused++;
	}
	struct nacre_fid oldest = full ? full->fid : (struct nacre_fid){0};
	pthread_mutex_unlock(&l->lock);
	if (d)
		dir_free(d);
	if (full)
		drop(fs, &oldest, 1, 0, 0);
	if (rc && rc != -EBUSY && rc != -EAGAIN)
		cl_log(fs, CL_LOG_INFO, "write-back lease from MDS %s: %s; lookups in new "
		       "directories ask the MDS", fs->addr, nacre_strerror(rc));
}

int cl_lease_lookup(struct nacre_fs *fs, const struct nacre_cred *cr,
		    const struct nacre_fid *parent, const char *name)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d, *stale = NULL;
	int rc = 0;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED) || !cr)
		return 0;
	pthread_mutex_lock(&l->lock);
	d = dir_find(l, parent);
	if (d && !valid(fs, l, d)) {
		stale = d;
		dir_unlink(l, d);
	} else if (d && cr->uid == d->uid && (d->mode & S_IXUSR) &&
		   !*name_slot(d, name, name_hash(name))) {
		/* only the owner, who may search it: anyone else the MDS checks */
		l->answered++;
		rc = -ENOENT;
	}
	pthread_mutex_unlock(&l->lock);
	give_back(fs, stale);
	return rc;
}

void cl_lease_named(struct nacre_fs *fs, const struct nacre_fid *parent, const char *name,
		    int exists)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d, *drop = NULL;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	d = dir_find(l, parent);
	if (d) {
		uint32_t h = name_hash(name);
		struct cl_name **pp = name_slot(d, name, h), *e = *pp;
		if (!exists && e) {
			*pp = e->next;
			free(e);
			d->count--;
			l->names--;
		} else if (exists && !e) {
			size_t len = strlen(name) + 1;
			if (l->names >= CL_LEASE_NAMES_MAX ||
			    (d->count >= d->nb && names_grow(d)) ||
			    !(e = malloc(sizeof(*e) + len))) {
				drop = d; /* cannot know it whole: it goes back */
				dir_unlink(l, d);
			} else {
				e->hash = h;
				memcpy(e->name, name, len);
				pp = name_slot(d, name, h); /* the buckets may have grown */
				e->next = *pp;
				*pp = e;
				d->count++;
				l->names++;
			}
		}
	}
	pthread_mutex_unlock(&l->lock);
	give_back(fs, drop);
}

/* Whether fid is one of the n dirs or a lease of list. */
static int ends(const struct nacre_fid *fid, const struct cl_lease_dir *list,
		const struct nacre_fid *dirs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (fid_eq(&dirs[i], fid))
			return 1;
	for (; list; list = list->next)
		if (fid_eq(&list->fid, fid))
			return 1;
	return 0;
}

/* Forgets the leases of dirs (all: every one), then gives them back; recalled counts them
 * as the MDS's recalls. */
static void drop(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all,
		 int recalled)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *list = NULL;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	if (all) {
		while (l->oldest) {
			struct cl_lease_dir *d = l->oldest;
			dir_unlink(l, d);
			d->next = list;
			list = d;
		}
	}
	for (uint32_t i = 0; i < n && !all; i++) {
		struct cl_lease_dir *d = dir_find(l, &dirs[i]);
		if (!d)
			continue;
		dir_unlink(l, d);
		d->next = list;
		list = d;
	}
	/* what was leased along with a lease that ends (or ended before), ends with it */
	for (int more = 1; more;) {
		more = 0;
		for (struct cl_lease_dir *d = l->oldest, *next; d; d = next) {
			next = d->newer;
			if (!d->inherited || !ends(&d->parent, list, dirs, all ? 0 : n))
				continue;
			dir_unlink(l, d);
			d->next = list;
			list = d;
			more = 1;
		}
	}
	for (struct cl_lease_dir *d = list; d && recalled; d = d->next)
		l->recalled++;
	pthread_mutex_unlock(&l->lock);
	give_back(fs, list);
}

void cl_lease_doubt(struct nacre_fs *fs, const struct nacre_fid *parent)
{
	drop(fs, parent, 1, 0, 0);
}

void cl_lease_recall(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all)
{
	drop(fs, dirs, n, all, 1);
}

void cl_lease_renewed(struct nacre_fs *fs, uint64_t gen, int64_t sent_ms)
{
	struct cl_leases *l = &fs->leases;

	pthread_mutex_lock(&l->lock);
	if (gen != l->renew_gen || sent_ms > l->renew_sent_ms) {
		l->renew_gen = gen;
		l->renew_sent_ms = sent_ms;
	}
	pthread_mutex_unlock(&l->lock);
}
