/* lease_names.c - the table of held directories and the names each knows (lease_int.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/lease_int.h"
#include "common/fid.h"
#include "common/net.h"
#include "proto/wire.h"

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

/* Doubles d's buckets. 0 or -ENOMEM (then it stays as it was). */
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

struct cl_lease_dir *cl_lease_dir_new(const struct nacre_attr *a)
{
	struct cl_lease_dir *d = calloc(1, sizeof(*d));

	if (!d || names_grow(d)) {
		free(d);
		return NULL;
	}
	d->fid = a->fid;
	d->uid = a->uid;
	d->gid = a->gid;
	d->mode = a->mode;
	return d;
}

void cl_lease_dir_free(struct cl_lease_dir *d)
{
	if (!d)
		return;
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

struct cl_lease_dir *cl_lease_find(struct cl_leases *l, const struct nacre_fid *fid)
{
	return l->b ? *dir_slot(l, fid) : NULL;
}

int cl_lease_valid(struct nacre_fs *fs, const struct cl_lease_dir *d)
{
	const struct cl_leases *l = &fs->leases;
	int64_t from = d->granted_sent_ms;

	if (d->gen != rpc_conn_gen(fs->mds))
		return 0;
	if (l->renew_gen == d->gen && l->renew_sent_ms > from)
		from = l->renew_sent_ms;
	return net_now_ms() < from + WIRE_LEASE_MS - CL_LEASE_MARGIN_MS;
}

int cl_lease_insert(struct cl_leases *l, struct cl_lease_dir *d)
{
	if (l->n >= CL_LEASE_MAX)
		return -ENOSPC;
	if (!l->b && !(l->b = calloc(CL_LEASE_BUCKETS, sizeof(*l->b))))
		return -ENOSPC;
	struct cl_lease_dir **pp = dir_slot(l, &d->fid);
	if (*pp)
		return -ENOSPC; /* held already (cannot be: the directory is new) */
	*pp = d;
	d->next = NULL;
	d->older = l->newest;
	d->newer = NULL;
	if (l->newest)
		l->newest->newer = d;
	else
		l->oldest = d;
	l->newest = d;
	__atomic_store_n(&l->n, l->n + 1, __ATOMIC_RELAXED);
	l->names += d->count;
	l->granted++;
	return 0;
}

void cl_lease_unlink(struct cl_leases *l, struct cl_lease_dir *d)
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

struct cl_name *cl_lease_name_find(struct cl_lease_dir *d, const char *name)
{
	return *name_slot(d, name, name_hash(name));
}

int cl_lease_name_add(struct cl_leases *l, struct cl_lease_dir *d, const char *name,
		      const struct nacre_fid *fid, uint32_t type)
{
	uint32_t h = name_hash(name);
	struct cl_name **pp = name_slot(d, name, h), *e = *pp;
	size_t len = strlen(name) + 1;

	if (!e) {
		if (l->names >= CL_LEASE_NAMES_MAX || (d->count >= d->nb && names_grow(d)) ||
		    !(e = malloc(sizeof(*e) + len)))
			return -ENOSPC;
		e->hash = h;
		memcpy(e->name, name, len);
		pp = name_slot(d, name, h); /* the buckets may have grown */
		e->next = *pp;
		*pp = e;
		d->count++;
		l->names++;
	}
	e->fid = fid ? *fid : (struct nacre_fid){0};
	e->type = fid ? type : 0;
	return 0;
}

void cl_lease_name_del(struct cl_leases *l, struct cl_lease_dir *d, const char *name)
{
	struct cl_name **pp = name_slot(d, name, name_hash(name)), *e = *pp;

	if (!e)
		return;
	*pp = e->next;
	free(e);
	d->count--;
	l->names--;
}
