/* open.c - the table of open handles, by id and by FID. See open.h. */
#include "mds/open.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/key.h"
#include "mds/db.h"

#define NBUCKETS 4096u
#define HANDLE_ID_MASK ((1ull << 62) - 1)

struct handle {
	uint64_t id;
	uint64_t conn_id;
	struct nacre_fid fid;
	int restore;         /* a copytool's handle on a restore's new objects */
	int wrote;           /* a size or an mtime was reported through it (its CLOSE is noted) */
	uint32_t rights;     /* the object rights its open granted (CAP_*), for renewals */
	struct handle *next; /* bucket chain by id */
};

struct fid_count {
	struct nacre_fid fid;
	int count;
	struct fid_count *next; /* bucket chain by fid */
};

struct mds_open_table {
	pthread_mutex_t lock;
	struct handle *handles[NBUCKETS]; /* protected by lock */
	struct fid_count *fids[NBUCKETS]; /* protected by lock */
	uint64_t next_id;                 /* protected by lock; handle ids are never 0 */
};

static unsigned fid_bucket(const struct nacre_fid *f)
{
	uint64_t h = f->seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)f->oid << 16) ^ f->ver;
	return (unsigned)(h ^ (h >> 29)) % NBUCKETS;
}

int mds_open_table_create(struct mds_open_table **out)
{
	struct mds_open_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	/* a random start per MDS instance: handles a client takes back after a restart never
	 * meet the new instance's own */
	if (key_random(&t->next_id, sizeof(t->next_id)) < 0)
		t->next_id = (uint64_t)time(NULL) << 20;
	t->next_id &= HANDLE_ID_MASK;
	*out = t;
	return 0;
}

void mds_open_table_destroy(struct mds_open_table *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < NBUCKETS; i++) {
		for (struct handle *h = t->handles[i], *n; h; h = n) {
			n = h->next;
			free(h);
		}
		for (struct fid_count *f = t->fids[i], *n; f; f = n) {
			n = f->next;
			free(f);
		}
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Caller holds t->lock. */
static struct fid_count **fid_slot(struct mds_open_table *t, const struct nacre_fid *fid)
{
	struct fid_count **pp = &t->fids[fid_bucket(fid)];
	while (*pp && !fid_eq(&(*pp)->fid, fid))
		pp = &(*pp)->next;
	return pp;
}

int mds_open_count(struct mds_open_table *t, const struct nacre_fid *fid)
{
	pthread_mutex_lock(&t->lock);
	struct fid_count *f = *fid_slot(t, fid);
	int n = f ? f->count : 0;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* Whether handle id is in use. Caller holds t->lock. */
static int id_taken(struct mds_open_table *t, uint64_t id)
{
	for (struct handle *h = t->handles[id % NBUCKETS]; h; h = h->next)
		if (h->id == id)
			return 1;
	return 0;
}

/* *id: the id wanted (0 = any) in, the id given out. */
static int handle_add(struct mds_open_table *t, uint64_t conn_id, const struct nacre_fid *fid,
		      uint64_t *id)
{
	struct handle *h = malloc(sizeof(*h));
	struct fid_count *nf = malloc(sizeof(*nf));
	if (!h || !nf) {
		free(h);
		free(nf);
		return -ENOMEM;
	}
	pthread_mutex_lock(&t->lock);
	if (*id && !id_taken(t, *id)) {
		h->id = *id; /* a handle of before a restart, taken back */
	} else {
		do
			h->id = t->next_id++ & HANDLE_ID_MASK;
		while (!h->id || id_taken(t, h->id));
	}
	h->conn_id = conn_id;
	h->fid = *fid;
	h->restore = 0;
	h->wrote = 0;
	h->rights = 0;
	h->next = t->handles[h->id % NBUCKETS];
	t->handles[h->id % NBUCKETS] = h;
	struct fid_count **pp = fid_slot(t, fid);
	if (*pp) {
		(*pp)->count++;
		free(nf);
	} else {
		nf->fid = *fid;
		nf->count = 1;
		nf->next = NULL;
		*pp = nf;
	}
	*id = h->id;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* Caller holds t->lock. Unlinks h from its bucket (pp points at it) and frees it. */
static void handle_drop_locked(struct mds_open_table *t, struct handle **pp)
{
	struct handle *h = *pp;
	*pp = h->next;
	struct fid_count **fp = fid_slot(t, &h->fid);
	if (*fp && --(*fp)->count <= 0) {
		struct fid_count *f = *fp;
		*fp = f->next;
		free(f);
	}
	free(h);
}

/* Finds handle id of conn_id and fid; drops it if drop. Returns 1 for a restore handle, 0
 * for another, -EBADF if unknown. With set_restore, marks it a restore handle. */
static int handle_find(struct mds_open_table *t, uint64_t conn_id, uint64_t id,
		       const struct nacre_fid *fid, int drop, int set_restore, int wrote)
{
	int rc = -EBADF;
	pthread_mutex_lock(&t->lock);
	for (struct handle **pp = &t->handles[id % NBUCKETS]; *pp; pp = &(*pp)->next) {
		struct handle *h = *pp;
		if (h->id == id && h->conn_id == conn_id && fid_eq(&h->fid, fid)) {
			if (set_restore)
				h->restore = 1;
			if (wrote)
				h->wrote = 1;
			rc = (h->restore ? MDS_OPEN_RESTORE : 0) | (h->wrote ? MDS_OPEN_WROTE : 0);
			if (drop)
				handle_drop_locked(t, pp);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int mds_open_handle_add(struct mds_open_table *t, uint64_t conn_id, const struct nacre_fid *fid,
			uint64_t *handle)
{
	return handle_add(t, conn_id, fid, handle);
}

void mds_open_handle_drop(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
			  const struct nacre_fid *fid)
{
	handle_find(t, conn_id, handle, fid, 1, 0, 0);
}

/* The handle of owner on fid, or NULL. Caller holds t->lock. */
static struct handle *handle_lookup_locked(struct mds_open_table *t, uint64_t owner,
					   uint64_t id, const struct nacre_fid *fid)
{
	for (struct handle *h = t->handles[id % NBUCKETS]; h; h = h->next)
		if (h->id == id && h->conn_id == owner && fid_eq(&h->fid, fid))
			return h;
	return NULL;
}

void mds_open_handle_set_rights(struct mds_open_table *t, uint64_t owner, uint64_t handle,
				const struct nacre_fid *fid, uint32_t rights)
{
	pthread_mutex_lock(&t->lock);
	struct handle *h = handle_lookup_locked(t, owner, handle, fid);
	if (h)
		h->rights = rights;
	pthread_mutex_unlock(&t->lock);
}

int mds_open_handle_rights(struct mds_open_table *t, uint64_t owner, uint64_t handle,
			   const struct nacre_fid *fid, uint32_t *rights)
{
	int rc = -EBADF;
	pthread_mutex_lock(&t->lock);
	struct handle *h = handle_lookup_locked(t, owner, handle, fid);
	if (h) {
		*rights = h->rights;
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int mds_open_handle_known(struct mds_open_table *t, uint64_t owner, uint64_t handle,
			  const struct nacre_fid *fid)
{
	return handle_find(t, owner, handle, fid, 0, 0, 0) >= 0;
}

void mds_open_handle_forget(struct mds_open_table *t, uint64_t owner, uint64_t handle)
{
	pthread_mutex_lock(&t->lock);
	for (struct handle **pp = &t->handles[handle % NBUCKETS]; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == handle && (*pp)->conn_id == owner) {
			handle_drop_locked(t, pp);
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int mds_open_handle_find(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
			 const struct nacre_fid *fid, int drop, int wrote)
{
	return handle_find(t, conn_id, handle, fid, drop, 0, wrote);
}

void mds_open_handle_set_restore(struct mds_open_table *t, uint64_t conn_id, uint64_t handle,
				 const struct nacre_fid *fid)
{
	handle_find(t, conn_id, handle, fid, 0, 1, 0);
}

size_t mds_open_drop_conn(struct mds_open_table *t, uint64_t conn_id, struct nacre_fid **fids)
{
	struct nacre_fid *closed = NULL;
	size_t n = 0, cap = 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < NBUCKETS; i++) {
		struct handle **pp = &t->handles[i];
		while (*pp) {
			if ((*pp)->conn_id != conn_id) {
				pp = &(*pp)->next;
				continue;
			}
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct nacre_fid *v = realloc(closed, ncap * sizeof(*v));
				if (v) {
					closed = v;
					cap = ncap;
				}
			}
			if (n < cap)
				closed[n++] = (*pp)->fid;
			handle_drop_locked(t, pp);
		}
	}
	pthread_mutex_unlock(&t->lock);
	*fids = closed;
	return n;
}

uint64_t mds_open_handles(struct mds_open_table *t)
{
	uint64_t n = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct handle *h = t->handles[i]; h; h = h->next)
			n++;
	pthread_mutex_unlock(&t->lock);
	return n;
}
