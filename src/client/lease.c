/* lease.c - write-back leases on directories this mount made (lease.h): taking them,
 * answering lookups, keeping the names, giving them back. */
#include "client/lease.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/lease_int.h"
#include "client/mdc.h"
#include "common/fid.h"
#include "common/net.h"
#include "nacre/nacre_errno.h"
#include "proto/wire.h"

/* Gives each lease of the list (chained by next) back and frees it, after the changes
 * queued under them reached the MDS. Without the lock. */
static void give_back(struct nacre_fs *fs, struct cl_lease_dir *list)
{
	if (list && cl_wbq_flush(fs))
		cl_lease_settle(fs); /* refused: the directories' leases go too */
	while (list) {
		struct cl_lease_dir *d = list;
		struct wire_lease_req r = {.fid = d->fid, .op = WIRE_LEASE_PUT};
		struct wire_lease_rep rep;
		list = d->next;
		/* a failure (the MDS away) is no matter: it ends the lease itself */
		if (cl_mds_do(fs, WIRE_OP_MDS_LEASE, &r, &rep) == 0) {
			pthread_mutex_lock(&fs->leases.lock);
			fs->leases.returned++;
			pthread_mutex_unlock(&fs->leases.lock);
		}
		cl_lease_dir_free(d);
	}
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

/* Forgets the leases of dirs (all: every one) and those that came with them, then gives
 * them back; recalled counts them as the MDS's recalls. */
static void drop(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all,
		 int recalled)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *list = NULL;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	for (uint32_t i = 0; i < n || (all && l->oldest); i++) {
		struct cl_lease_dir *d = all ? l->oldest : cl_lease_find(l, &dirs[i]);
		if (!d)
			continue;
		cl_lease_unlink(l, d);
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
			cl_lease_unlink(l, d);
			d->next = list;
			list = d;
			more = 1;
		}
	}
	for (struct cl_lease_dir *d = list; d; d = d->next) {
		cl_lease_made_drop_dir(l, &d->fid);
		l->recalled += recalled;
	}
	pthread_mutex_unlock(&l->lock);
	give_back(fs, list);
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
		cl_lease_unlink(l, d);
		cl_lease_dir_free(d);
	}
	while (l->gone) {
		struct cl_lease_dir *d = l->gone;
		l->gone = d->next;
		cl_lease_dir_free(d);
	}
	cl_lease_made_fini(l);
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

/* Whether the MDS gave a directory cr made the ids cr asked for (no nodemap mapped them):
 * then this mount can tell what it would give what it makes there. */
static int ids_as_made(const struct nacre_cred *cr, const struct nacre_attr *a)
{
	return cr && a->uid == cr->uid && (a->gid == cr->gid || (a->mode & S_ISGID));
}

/* A directory just leased keeps its own attributes too (the MKDIR's answer), unless it
 * was made under its parent's lease (kept there already): the kernel asks for them after
 * each change in it, and while the lease holds they change only with what this mount
 * makes in it (dir_touched). They answer getattr only: a setattr of it goes to the MDS
 * (lease_change.c), since its name is where another client finds it unrecalled. With the
 * lock. */
static void own_attrs(struct cl_leases *l, const struct nacre_attr *a)
{
	if (!cl_lease_made_find(l, &a->fid))
		cl_lease_made_put(l, &a->fid, a);
}

void cl_lease_take(struct nacre_fs *fs, const struct nacre_cred *cr,
		   const struct nacre_fid *parent, const struct nacre_attr *a)
{
	struct cl_leases *l = &fs->leases;
	struct wire_lease_req r = {.fid = a->fid, .op = WIRE_LEASE_GET};
	struct wire_lease_rep rep = {0};
	struct cl_lease_dir *d, *p;
	int rc = 0, full = 0;
	struct nacre_fid oldest = {0};

	if (!usable(fs) || !S_ISDIR(a->mode))
		return;
	cl_lease_settle(fs);
	if (!(d = cl_lease_dir_new(a)))
		return;
	/* made in a directory it holds: the MDS leased it along (if the parent was being
	 * recalled meanwhile, it did not: the recall then ends this one with its parent) */
	pthread_mutex_lock(&l->lock);
	p = cl_lease_find(l, parent);
	if (p && cl_lease_valid(fs, p)) {
		d->inherited = 1;
		d->parent = *parent;
		d->gen = p->gen;
		d->granted_sent_ms = p->granted_sent_ms;
		d->makes = p->makes && ids_as_made(cr, a);
	}
	pthread_mutex_unlock(&l->lock);
	if (!d->inherited) {
		d->gen = rpc_conn_gen(fs->mds);
		d->granted_sent_ms = net_now_ms();
		rc = cl_mds_do(fs, WIRE_OP_MDS_LEASE, &r, &rep);
		d->makes = !(rep.flags & WIRE_LEASE_DEFAULT_ACL) && ids_as_made(cr, a);
	}
	pthread_mutex_lock(&l->lock);
	if (rc == 0 && d->gen != rpc_conn_gen(fs->mds))
		rc = -ECONNRESET; /* granted on a connection gone since: not ours to trust */
	if (rc == 0 && l->n >= CL_LEASE_MAX && l->oldest) {
		full = 1; /* the oldest goes back, and what came with it */
		oldest = l->oldest->fid;
	}
	if (rc == 0 && !full && cl_lease_insert(l, d) == 0) {
		d = NULL;
		own_attrs(l, a);
	} else if (rc) {
		l->refused++;
	}
	pthread_mutex_unlock(&l->lock);
	if (full) {
		drop(fs, &oldest, 1, 0, 0);
		pthread_mutex_lock(&l->lock);
		if (cl_lease_insert(l, d) == 0) {
			d = NULL;
			own_attrs(l, a);
		}
		pthread_mutex_unlock(&l->lock);
	}
	cl_lease_dir_free(d); /* not held after all: the MDS's lease ends at its recall */
	if (rc && rc != -EBUSY && rc != -EAGAIN && rc != -EROFS && rc != -ENOTEMPTY)
		cl_log(fs, CL_LOG_INFO, "write-back lease from MDS %s: %s; lookups in new "
		       "directories ask the MDS", fs->addr, nacre_strerror(rc));
}

int cl_lease_lookup(struct nacre_fs *fs, const struct nacre_cred *cr,
		    const struct nacre_fid *parent, const char *name, struct nacre_attr *out)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d;
	int rc = 0, stale = 0;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED) || !cr)
		return 0;
	cl_lease_settle(fs);
	pthread_mutex_lock(&l->lock);
	d = cl_lease_find(l, parent);
	if (d && !cl_lease_valid(fs, d)) {
		stale = 1;
	} else if (d && cr->uid == d->uid && (d->mode & S_IXUSR)) {
		/* only the owner, who may search it: anyone else the MDS checks */
		struct cl_name *e = cl_lease_name_find(d, name);
		struct cl_made *m = e && e->type ? cl_lease_made_find(l, &e->fid) : NULL;
		if (!e)
			rc = -ENOENT;
		else if (m && fid_eq(&m->parent, parent) && (m->attr.mode & S_IFMT) == e->type)
			rc = 1; /* made here: what it is, is kept here too */
		if (rc == 1)
			*out = m->attr;
		if (rc)
			l->answered++;
	}
	pthread_mutex_unlock(&l->lock);
	if (stale)
		drop(fs, parent, 1, 0, 0);
	return rc;
}

void cl_lease_named(struct nacre_fs *fs, const struct nacre_fid *parent, const char *name,
		    const struct nacre_attr *a)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d;
	int lost = 0;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	d = cl_lease_find(l, parent);
	if (d && a) {
		lost = cl_lease_name_add(l, d, name, &a->fid, a->mode & S_IFMT) != 0;
		cl_lease_made_put(l, parent, a);
		cl_lease_dir_touched(l, parent, S_ISDIR(a->mode) ? 1 : 0);
	} else if (d) {
		lost = cl_lease_name_add(l, d, name, NULL, 0) != 0;
	}
	pthread_mutex_unlock(&l->lock);
	if (lost)
		drop(fs, parent, 1, 0, 0); /* cannot know it whole: it goes back */
}

/* The inode fid lost a name (or was replaced): what is kept of it goes, and if it was a
 * directory this mount held, its lease is given back after the next flush. With the lock. */
static void gone(struct cl_leases *l, const struct nacre_fid *fid)
{
	struct cl_lease_dir *g;

	if (!fid->seq)
		return;
	cl_lease_made_del(l, fid);
	g = cl_lease_find(l, fid);
	if (g) {
		cl_lease_made_drop_dir(l, fid);
		cl_lease_unlink(l, g);
		g->next = l->gone;
		__atomic_store_n(&l->gone, g, __ATOMIC_RELAXED);
	}
}

void cl_lease_unnamed(struct nacre_fs *fs, const struct nacre_fid *parent, const char *name)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	d = cl_lease_find(l, parent);
	struct cl_name *e = d ? cl_lease_name_find(d, name) : NULL;
	if (e) {
		cl_lease_dir_touched(l, parent, e->type == S_IFDIR ? -1 : 0);
		gone(l, &e->fid);
		cl_lease_name_del(l, d, name);
	}
	pthread_mutex_unlock(&l->lock);
}

void cl_lease_renamed(struct nacre_fs *fs, const struct nacre_fid *sparent, const char *sname,
		      const struct nacre_fid *dparent, const char *dname, int exchange)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *s, *d;
	struct nacre_fid fid = {0};
	uint32_t type = 0;
	int lost = 0;

	if (!__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	s = cl_lease_find(l, sparent);
	d = cl_lease_find(l, dparent);
	struct cl_name *e = s ? cl_lease_name_find(s, sname) : NULL;
	struct cl_name *victim = d ? cl_lease_name_find(d, dname) : NULL;
	if (e) {
		fid = e->fid;
		type = e->type;
		cl_lease_made_del(l, &fid); /* its ctime moved: the MDS says */
	}
	if (victim && exchange)
		cl_lease_made_del(l, &victim->fid);
	else if (victim && !fid_eq(&victim->fid, &fid))
		gone(l, &victim->fid); /* replaced: its last name went (or one of them) */
	cl_lease_dir_touched(l, sparent, 0);
	cl_lease_dir_touched(l, dparent, 0);
	if (exchange) {
		/* both names stay; what they name is not worth following */
		if (s)
			lost |= cl_lease_name_add(l, s, sname, NULL, 0) != 0;
		if (d)
			lost |= cl_lease_name_add(l, d, dname, NULL, 0) != 0;
	} else {
		if (s)
			cl_lease_name_del(l, s, sname);
		if (d)
			lost |= cl_lease_name_add(l, d, dname, type ? &fid : NULL, type) != 0;
	}
	pthread_mutex_unlock(&l->lock);
	if (lost) {
		struct nacre_fid both[2] = {*sparent, *dparent};
		drop(fs, both, 2, 0, 0);
	}
}

void cl_lease_put_gone(struct nacre_fs *fs)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *list;

	if (!__atomic_load_n(&l->gone, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	list = l->gone;
	__atomic_store_n(&l->gone, NULL, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->lock);
	give_back(fs, list);
}

void cl_lease_settle(struct nacre_fs *fs)
{
	struct nacre_fid f[CL_WBQ_DOUBTS];
	int all, n;

	while ((n = cl_wbq_take_doubts(fs, f, CL_WBQ_DOUBTS, &all)) > 0 || all)
		drop(fs, f, (uint32_t)n, all, 0);
	if (__atomic_load_n(&fs->leases.gone, __ATOMIC_RELAXED) && !cl_wbq_pending(fs))
		cl_lease_put_gone(fs);
}

void cl_lease_doubt(struct nacre_fs *fs, const struct nacre_fid *parent)
{
	drop(fs, parent, 1, 0, 0);
}

void cl_lease_recall(struct nacre_fs *fs, const struct nacre_fid *dirs, uint32_t n, int all)
{
	drop(fs, dirs, n, all, 1);
}

/* The directories to ask back after an MDS restart: every lease held and every directory
 * with changes queued, once each, into a malloc'ed *out; *from gets the latest renewal or
 * grant among them. The count, or -ENOMEM. */
static int reclaim_set(struct nacre_fs *fs, struct nacre_fid **out, int64_t *from)
{
	struct cl_leases *l = &fs->leases;
	int max = CL_LEASE_MAX + CL_WBQ_MAX, n = 0;
	struct nacre_fid *f = malloc((size_t)max * sizeof(*f));

	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&l->lock);
	*from = l->renew_sent_ms;
	for (struct cl_lease_dir *d = l->oldest; d && n < CL_LEASE_MAX; d = d->newer) {
		f[n++] = d->fid;
		if (d->granted_sent_ms > *from)
			*from = d->granted_sent_ms;
	}
	pthread_mutex_unlock(&l->lock);
	*out = f;
	return cl_wbq_parents(fs, f, n, max);
}

int cl_lease_reclaim(struct nacre_fs *fs, struct rpc_recovery *r)
{
	struct cl_leases *l = &fs->leases;
	int64_t down = rpc_conn_lost_before_recovery(fs->mds), from = 0;
	struct nacre_fid *dirs = NULL;
	int n = reclaim_set(fs, &dirs, &from), refused = 0, rc = 0;

	if (n <= 0) {
		free(dirs);
		return n < 0 ? n : 0;
	}
	if (!down || down >= from + WIRE_LEASE_MS - CL_LEASE_MARGIN_MS) {
		cl_log(fs, CL_LOG_WARN, "MDS %s: this mount's write-back leases had run out before "
		       "it went away: %d directories are not asked back (what is queued in them "
		       "is reported lost)", fs->addr, n);
		cl_wbq_lose_queued(fs);
		free(dirs);
		return 0;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		struct wire_lease_req q = {.fid = dirs[i], .op = WIRE_LEASE_GET};
		struct rpc_msg *m = NULL;
		struct wire_cursor c;
		uint8_t buf[256];

		wire_cursor_init_write(&c, buf, sizeof(buf));
		wire_lease_req_encode(&c, &q);
		rc = rpc_recovery_call(r, WIRE_OP_MDS_LEASE, WIRE_ENV_REPLAY, buf, (uint32_t)c.pos,
				       NULL, 0, &m);
		if (rc < 0 && m && rc != -ENOENT) { /* ENOENT: its mkdir is queued still */
			char f[NACRE_FID_STR_MAX];
			cl_log(fs, CL_LOG_ERR, "MDS %s: the write-back lease on %s could not be "
			       "asked back after the MDS restarted: %s", fs->addr,
			       fid_format(&dirs[i], f, sizeof(f)), nacre_strerror(rc));
			refused++;
		}
		if (m)
			rc = 0;
		rpc_msg_free(m);
	}
	free(dirs);
	if (rc)
		return rc; /* the socket: the hook runs again on the next one */
	if (!refused) {
		/* good from the answers on: no other client's request runs before this
		 * client's recovery is complete, after them */
		pthread_mutex_lock(&l->lock);
		l->renew_sent_ms = net_now_ms();
		pthread_mutex_unlock(&l->lock);
	} else {
		cl_wbq_lose_queued(fs); /* another client may see those directories first */
	}
	cl_log(fs, refused ? CL_LOG_ERR : CL_LOG_INFO, "MDS %s: %d write-back leases asked back "
	       "after its restart, %d refused%s", fs->addr, n, refused,
	       refused ? " (what is queued under them is reported lost)" : "");
	return 0;
}

void cl_lease_renewed(struct nacre_fs *fs, uint64_t gen, int64_t sent_ms)
{
	struct cl_leases *l = &fs->leases;

	pthread_mutex_lock(&l->lock);
	if (gen != l->renew_gen || sent_ms > l->renew_sent_ms) {
		l->renew_gen = gen;
		__atomic_store_n(&l->renew_sent_ms, sent_ms, __ATOMIC_RELAXED); /* wbq.c reads */
	}
	pthread_mutex_unlock(&l->lock);
}
