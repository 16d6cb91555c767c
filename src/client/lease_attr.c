/* lease_attr.c - the attributes of the inodes this mount made under its leases, and the
 * attribute changes it makes to them without waiting for the MDS (lease.h,
 * cl_lease_setattr): tar's utimes, chown and chmod after each file it writes.
 *
 * An inode's attributes are known here from what made it (the MDS's reply, or what a
 * change made under the lease will make) and every reply since (close, setattr); they are
 * forgotten when the inode becomes reachable another way (a hard link), when its name or
 * its directory's lease goes, and they are not used while this mount has it open (its
 * close reports size and times). Bounded: CL_LEASE_MADE_MAX inodes (then the MDS is asked).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/files.h"
#include "client/lease_int.h"
#include "common/fid.h"
#include "common/util.h"
#include "proto/wire.h"

#define MADE_BUCKETS 4096

struct cl_made {
	struct cl_made *next;
	struct nacre_fid parent; /* the held directory it is named in */
	int busy;                /* being opened or closed: attr is not known until a reply */
	struct nacre_attr attr;
};

static struct cl_made **made_slot(struct cl_leases *l, const struct nacre_fid *fid)
{
	struct cl_made **pp = &l->made_b[fid_hash(fid) % MADE_BUCKETS];

	while (*pp && !fid_eq(&(*pp)->attr.fid, fid))
		pp = &(*pp)->next;
	return pp;
}

void cl_lease_made_put(struct cl_leases *l, const struct nacre_fid *parent,
		       const struct nacre_attr *a)
{
	struct cl_made **pp, *e;

	if (!l->made_b && !(l->made_b = calloc(MADE_BUCKETS, sizeof(*l->made_b))))
		return;
	pp = made_slot(l, &a->fid);
	e = *pp;
	if (!e) {
		if (l->nmade >= CL_LEASE_MADE_MAX || !(e = malloc(sizeof(*e))))
			return;
		e->next = NULL;
		*pp = e;
		l->nmade++;
	}
	e->parent = *parent;
	e->busy = 0;
	e->attr = *a;
}

void cl_lease_made_del(struct cl_leases *l, const struct nacre_fid *fid)
{
	struct cl_made **pp, *e;

	if (!l->made_b)
		return;
	pp = made_slot(l, fid);
	e = *pp;
	if (!e)
		return;
	*pp = e->next;
	free(e);
	l->nmade--;
}

void cl_lease_made_drop_dir(struct cl_leases *l, const struct nacre_fid *dir)
{
	for (uint32_t i = 0; l->made_b && l->nmade && i < MADE_BUCKETS; i++) {
		struct cl_made **pp = &l->made_b[i];
		while (*pp) {
			struct cl_made *e = *pp;
			if (fid_eq(&e->parent, dir) || fid_eq(&e->attr.fid, dir)) {
				*pp = e->next;
				free(e);
				l->nmade--;
			} else {
				pp = &e->next;
			}
		}
	}
}

void cl_lease_made_fini(struct cl_leases *l)
{
	for (uint32_t i = 0; l->made_b && i < MADE_BUCKETS; i++) {
		while (l->made_b[i]) {
			struct cl_made *e = l->made_b[i];
			l->made_b[i] = e->next;
			free(e);
		}
	}
	free(l->made_b);
	l->made_b = NULL;
	l->nmade = 0;
}

void cl_lease_dir_touched(struct cl_leases *l, const struct nacre_fid *dir, int nlink_delta)
{
	struct cl_made *e = l->made_b ? *made_slot(l, dir) : NULL;

	if (!e)
		return;
	e->attr.nlink = (uint32_t)((int)e->attr.nlink + nlink_delta);
	e->attr.mtime = e->attr.ctime = time_now();
}

void cl_lease_attr_seen(struct nacre_fs *fs, const struct nacre_attr *a)
{
	struct cl_leases *l = &fs->leases;

	if (!__atomic_load_n(&l->nmade, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = l->made_b ? *made_slot(l, &a->fid) : NULL;
	if (e) {
		e->attr = *a;
		e->busy = 0;
	}
	pthread_mutex_unlock(&l->lock);
}

void cl_lease_attr_busy(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct cl_leases *l = &fs->leases;

	if (!__atomic_load_n(&l->nmade, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = l->made_b ? *made_slot(l, fid) : NULL;
	if (e)
		e->busy = 1;
	pthread_mutex_unlock(&l->lock);
}

void cl_lease_attr_forget(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct cl_leases *l = &fs->leases;

	if (!__atomic_load_n(&l->nmade, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	cl_lease_made_del(l, fid);
	pthread_mutex_unlock(&l->lock);
}

static int in_group(const struct nacre_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return 1;
	for (uint32_t i = 0; i < cr->ngroups && i < NACRE_CRED_GROUPS; i++)
		if (cr->groups[i] == gid)
			return 1;
	return 0;
}

/* What the MDS's setattr (mds_perm_setattr, setattr_op) makes of a with sa by cr, into
 * out: 0, or -EAGAIN when this mount cannot tell (the MDS is asked). Root may change
 * anything; the owner its mode and times. */
static int predict(const struct nacre_cred *cr, const struct nacre_attr *a,
		   const struct nacre_setattr *sa, struct nacre_attr *out)
{
	const uint32_t mine = NACRE_SET_MODE | NACRE_SET_UID | NACRE_SET_GID | NACRE_SET_ATIME |
			      NACRE_SET_MTIME | NACRE_SET_ATIME_NOW | NACRE_SET_MTIME_NOW |
			      NACRE_SET_CTIME;
	int root = cr->uid == 0;
	struct nacre_time now = time_now();

	if (!sa->valid || (sa->valid & ~mine) || (!root && cr->uid != a->uid) ||
	    (!root && (sa->valid & (NACRE_SET_UID | NACRE_SET_GID))) || cr->groups_token)
		return -EAGAIN;
	*out = *a;
	int chown = ((sa->valid & NACRE_SET_UID) && sa->uid != a->uid) ||
		    ((sa->valid & NACRE_SET_GID) && sa->gid != a->gid);
	if (sa->valid & NACRE_SET_MODE) {
		uint32_t mode = sa->mode & 07777;
		uint32_t gid = (sa->valid & NACRE_SET_GID) ? sa->gid : a->gid;
		if (!root && !in_group(cr, gid))
			mode &= ~(uint32_t)S_ISGID;
		out->mode = (a->mode & S_IFMT) | mode;
	} else if (chown && !S_ISDIR(a->mode)) {
		out->mode &= ~(uint32_t)S_ISUID;
		if (out->mode & S_IXGRP)
			out->mode &= ~(uint32_t)S_ISGID;
	}
	if (sa->valid & NACRE_SET_UID)
		out->uid = sa->uid;
	if (sa->valid & NACRE_SET_GID)
		out->gid = sa->gid;
	if (sa->valid & NACRE_SET_ATIME_NOW)
		out->atime = now;
	else if (sa->valid & NACRE_SET_ATIME)
		out->atime = sa->atime;
	if (sa->valid & NACRE_SET_MTIME_NOW)
		out->mtime = now;
	else if (sa->valid & NACRE_SET_MTIME)
		out->mtime = sa->mtime;
	out->ctime = (sa->valid & NACRE_SET_CTIME) ? sa->ctime : now;
	return 0;
}

static int open_here(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct nacre_file **files = NULL;
	int n = 0;

	if (cl_files_pin_fid(fs, fid, &files, &n))
		return 1;
	cl_files_unpin(fs, files, n);
	return n > 0;
}

int cl_lease_getattr(struct nacre_fs *fs, const struct nacre_fid *fid, struct nacre_attr *out)
{
	struct cl_leases *l = &fs->leases;
	int rc = 0;

	if (!__atomic_load_n(&l->nmade, __ATOMIC_RELAXED) || open_here(fs, fid))
		return 0;
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = l->made_b ? *made_slot(l, fid) : NULL;
	struct cl_lease_dir *d = e ? cl_lease_find(l, &e->parent) : NULL;
	if (d && !e->busy && cl_lease_valid(fs, d)) {
		*out = e->attr;
		l->answered++;
		rc = 1;
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int cl_lease_setattr(struct nacre_fs *fs, const struct nacre_cred *cr,
		     const struct nacre_fid *fid, const struct nacre_setattr *sa,
		     const struct wire_cursor *body, struct nacre_attr *out)
{
	struct cl_leases *l = &fs->leases;
	struct nacre_attr a;
	int rc = 0;

	if (!cr || !__atomic_load_n(&l->nmade, __ATOMIC_RELAXED) || open_here(fs, fid))
		return 0;
	cl_wbq_bound(fs);
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = l->made_b ? *made_slot(l, fid) : NULL;
	struct cl_lease_dir *d = e ? cl_lease_find(l, &e->parent) : NULL;
	/* the maker of the directory: its ids are the MDS's (lease_int.h, makes) */
	if (d && !e->busy && d->makes && cr->uid == d->uid && cl_lease_valid(fs, d) &&
	    predict(cr, &e->attr, sa, &a) == 0 &&
	    cl_wbq_add(fs, WIRE_OP_MDS_SETATTR, body, &e->parent, NULL, d->granted_sent_ms) == 0) {
		e->attr = a;
		*out = a;
		l->made_changes++;
		rc = 1;
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}
