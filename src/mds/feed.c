/* feed.c - the changed-FID feed and the FID table (feed.h). */
#include "mds/feed.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/fid.h"

static struct mds_fidset_ent *slot(struct mds_fidset *s, const struct nacre_fid *fid)
{
	size_t i = (size_t)fid_hash(fid) & (s->cap - 1);
	while (s->e[i].used && !fid_eq(&s->e[i].fid, fid))
		i = (i + 1) & (s->cap - 1);
	return &s->e[i];
}

/* Rebuilds s with room for twice its live entries; dead ones go. */
static int regrow(struct mds_fidset *s)
{
	size_t cap = 64;
	while (cap < (s->live + 1) * 2 + 16)
		cap *= 2;
	struct mds_fidset n = {calloc(cap, sizeof(*n.e)), cap, 0, 0};
	if (!n.e)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->e[i].used || s->e[i].kind == MDS_FS_DEAD)
			continue;
		*slot(&n, &s->e[i].fid) = s->e[i];
		n.used++;
		n.live++;
	}
	free(s->e);
	*s = n;
	return 0;
}

struct mds_fidset_ent *mds_fidset_get(struct mds_fidset *s, const struct nacre_fid *fid)
{
	if (s->cap) {
		struct mds_fidset_ent *e = slot(s, fid);
		if (e->used)
			return e;
	}
	if ((s->used + 1) * 10 > s->cap * 7 && regrow(s))
		return NULL;
	struct mds_fidset_ent *e = slot(s, fid);
	memset(e, 0, sizeof(*e));
	e->fid = *fid;
	e->used = 1;
	s->used++;
	return e;
}

void mds_fidset_set_kind(struct mds_fidset *s, struct mds_fidset_ent *e, uint8_t kind)
{
	if (e->kind == MDS_FS_DEAD && kind != MDS_FS_DEAD)
		s->live++;
	else if (e->kind != MDS_FS_DEAD && kind == MDS_FS_DEAD)
		s->live--;
	e->kind = kind;
}

void mds_fidset_free(struct mds_fidset *s)
{
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* ---------------- the feed ---------------- */

struct mds_feed {
	int enabled; /* atomic */
	pthread_mutex_t lock; /* the rest */
	size_t max;
	int dropped;
	struct mds_fidset set;
};

int mds_feed_create(struct mds_feed **out)
{
	struct mds_feed *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

void mds_feed_destroy(struct mds_feed *f)
{
	if (!f)
		return;
	mds_fidset_free(&f->set);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void mds_feed_enable(struct mds_feed *f, size_t max)
{
	pthread_mutex_lock(&f->lock);
	f->max = max;
	pthread_mutex_unlock(&f->lock);
	__atomic_store_n(&f->enabled, 1, __ATOMIC_RELEASE);
}

void mds_feed_note(struct mds_feed *f, const struct nacre_fid *fid)
{
	if (!f || !fid || !__atomic_load_n(&f->enabled, __ATOMIC_ACQUIRE) ||
	    (fid->seq == 0 && fid->oid == 0 && fid->ver == 0))
		return;
	pthread_mutex_lock(&f->lock);
	if (!f->dropped) {
		struct mds_fidset_ent *e = f->set.live < f->max ? mds_fidset_get(&f->set, fid)
								 : NULL;
		if (e && e->kind == MDS_FS_DEAD)
			mds_fidset_set_kind(&f->set, e, MDS_FS_PENDING);
		if (!e && !(f->set.live >= f->max && f->set.cap && slot(&f->set, fid)->used)) {
			f->dropped = 1; /* past the bound: the taker looks at everything */
			mds_fidset_free(&f->set);
		}
	}
	pthread_mutex_unlock(&f->lock);
}

int mds_feed_take(struct mds_feed *f, struct mds_fidset *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->set;
	memset(&f->set, 0, sizeof(f->set));
	int dropped = f->dropped;
	f->dropped = 0;
	pthread_mutex_unlock(&f->lock);
	return dropped;
}
