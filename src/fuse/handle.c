/* handle.c - the handle table: fi->fh numbers <-> open files and directories.
 *
 * The kernel keeps the number we gave it at open and sends it back with every request on
 * that open file. The numbers are small counters, not addresses, so that a process taking
 * over the session (upgrade.c) can serve the numbers the kernel already holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fuse/fz.h"

#define HTABLE_BUCKETS 4096 /* a power of two; chains stay short for thousands of opens */

struct fz_hent {
	uint64_t fh;
	int kind;
	void *obj;
	struct fz_hent *next;
};

static size_t bucket(uint64_t fh)
{
	return (size_t)((fh * 0x9e3779b97f4a7c15ULL) >> 32) & (HTABLE_BUCKETS - 1);
}

int fz_htable_init(struct fz_htable *t)
{
	memset(t, 0, sizeof(*t));
	t->buckets = calloc(HTABLE_BUCKETS, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->next = 1; /* 0 stays "no handle" (setattr without a file) */
	return 0;
}

void fz_htable_fini(struct fz_htable *t)
{
	if (!t->buckets)
		return;
	for (size_t i = 0; i < HTABLE_BUCKETS; i++) {
		for (struct fz_hent *e = t->buckets[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	pthread_mutex_destroy(&t->lock);
}

/* The link that points at fh's entry, or at the NULL ending its chain if fh is unknown
 * (a number is in the table at most once: fresh from the counter, or imported after this
 * check). Called with t->lock held; valid until it is released. */
static struct fz_hent **find_slot(struct fz_htable *t, uint64_t fh)
{
	struct fz_hent **p = &t->buckets[bucket(fh)];

	while (*p && (*p)->fh != fh)
		p = &(*p)->next;
	return p;
}

/* Adds obj under fh (taken from the counter if fh is 0). Called with t->lock held. */
static int add_locked(struct fz_htable *t, uint64_t fh, int kind, void *obj, uint64_t *out)
{
	struct fz_hent *e = malloc(sizeof(*e));

	if (!e)
		return -ENOMEM;
	if (!fh)
		fh = t->next++;
	else if (fh >= t->next)
		t->next = fh + 1;
	e->fh = fh;
	e->kind = kind;
	e->obj = obj;
	e->next = t->buckets[bucket(fh)];
	t->buckets[bucket(fh)] = e;
	t->count++;
	*out = fh;
	return 0;
}

int fz_handle_add(struct fz_mount *m, int kind, void *obj, uint64_t *fh)
{
	int rc;

	pthread_mutex_lock(&m->htab.lock);
	rc = add_locked(&m->htab, 0, kind, obj, fh);
	pthread_mutex_unlock(&m->htab.lock);
	return rc;
}

int fz_handle_import(struct fz_mount *m, uint64_t fh, int kind, void *obj)
{
	struct fz_htable *t = &m->htab;
	uint64_t out;
	int rc = -EEXIST;

	if (fh == 0)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	if (!*find_slot(t, fh))
		rc = add_locked(t, fh, kind, obj, &out);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void *fz_handle_get(struct fz_mount *m, uint64_t fh, int kind)
{
	struct fz_htable *t = &m->htab;
	void *obj = NULL;

	pthread_mutex_lock(&t->lock);
	struct fz_hent *e = *find_slot(t, fh);
	if (e && e->kind == kind)
		obj = e->obj;
	pthread_mutex_unlock(&t->lock);
	return obj;
}

void *fz_handle_del(struct fz_mount *m, uint64_t fh, int kind)
{
	struct fz_htable *t = &m->htab;
	void *obj = NULL;

	pthread_mutex_lock(&t->lock);
	struct fz_hent **p = find_slot(t, fh), *e = *p;
	if (e && e->kind == kind) {
		*p = e->next;
		obj = e->obj;
		t->count--;
		free(e);
	}
	pthread_mutex_unlock(&t->lock);
	return obj;
}

int fz_htable_walk(struct fz_mount *m, int (*fn)(uint64_t fh, int kind, void *obj, void *arg),
		   void *arg)
{
	struct fz_htable *t = &m->htab;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < HTABLE_BUCKETS && !rc; i++)
		for (struct fz_hent *e = t->buckets[i]; e && !rc; e = e->next)
			rc = fn(e->fh, e->kind, e->obj, arg);
	pthread_mutex_unlock(&t->lock);
	return rc;
}
