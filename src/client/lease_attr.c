/* lease_attr.c - the attributes of the inodes this mount made under its leases (the
 * table lease_change.c answers getattr and setattr from).
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

#include "client/lease_int.h"
#include "common/fid.h"
#include "common/util.h"
#include "proto/wire.h"

#define MADE_BUCKETS 4096

static struct cl_made **made_slot(struct cl_leases *l, const struct nacre_fid *fid)
{
	struct cl_made **pp = &l->made_b[fid_hash(fid) % MADE_BUCKETS];

	while (*pp && !fid_eq(&(*pp)->attr.fid, fid))
		pp = &(*pp)->next;
	return pp;
}

struct cl_made *cl_lease_made_find(struct cl_leases *l, const struct nacre_fid *fid)
{
	return l->made_b ? *made_slot(l, fid) : NULL;
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
	e->changed = 0;
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

uint64_t cl_lease_clock(struct nacre_fs *fs)
{
	return __atomic_load_n(&fs->leases.clock, __ATOMIC_ACQUIRE);
}

void cl_lease_attr_seen(struct nacre_fs *fs, const struct nacre_attr *a, uint64_t asked)
{
	struct cl_leases *l = &fs->leases;

	if (!__atomic_load_n(&l->nmade, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = l->made_b ? *made_slot(l, &a->fid) : NULL;
	if (e && e->changed <= asked) {
		e->attr = *a;
	} else if (e) {
		/* asked before a change made here since (queued after its request went): the
		 * reply's size is news, the rest is older than what this mount foretold */
		e->attr.size = a->size;
		e->attr.blocks = a->blocks;
	}
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

