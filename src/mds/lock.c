/* lock.c - the MDS lock service (see lock.h): per-file lists of POSIX and flock locks, the
 * clients that own them, and eviction of clients gone longer than evict_ms. */
#include "mds/lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

#define FILE_BUCKETS 1024

struct lk_lock {
	uint64_t client, owner;
	uint64_t start, end; /* inclusive; end WIRE_LOCK_EOF = to the end */
	uint32_t pid;
	uint8_t type;        /* WIRE_LK_RDLCK or WIRE_LK_WRLCK */
	struct lk_lock *next;
};

struct lk_file {
	struct nacre_fid fid;
	struct lk_lock *posix; /* unordered; one owner's locks never overlap */
	struct lk_lock *flock; /* at most one per owner */
	struct lk_file *next;
};

struct lk_client {
	uint64_t id;
	uint64_t conn_id;  /* the connection it last used */
	int64_t gone_ms;   /* when that connection broke; 0 while connected */
	uint64_t nlocks;
	struct lk_client *next;
};

struct mds_locks {
	pthread_mutex_t lock; /* protects everything below */
	int evict_ms;         /* immutable */
	struct lk_file *files[FILE_BUCKETS];
	struct lk_client *clients;
	uint64_t nlocks;
};

int mds_locks_create(int evict_ms, struct mds_locks **out)
{
	struct mds_locks *lk = calloc(1, sizeof(*lk));
	if (!lk)
		return -ENOMEM;
	pthread_mutex_init(&lk->lock, NULL);
	lk->evict_ms = evict_ms < 0 ? 0 : evict_ms;
	*out = lk;
	return 0;
}

static void free_list(struct lk_lock *l)
{
	while (l) {
		struct lk_lock *n = l->next;
		free(l);
		l = n;
	}
}

void mds_locks_destroy(struct mds_locks *lk)
{
	if (!lk)
		return;
	for (size_t i = 0; i < FILE_BUCKETS; i++) {
		for (struct lk_file *f = lk->files[i], *n; f; f = n) {
			n = f->next;
			free_list(f->posix);
			free_list(f->flock);
			free(f);
		}
	}
	for (struct lk_client *c = lk->clients, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	pthread_mutex_destroy(&lk->lock);
	free(lk);
}

static size_t fid_bucket(const struct nacre_fid *fid)
{
	uint64_t h = fid->seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)fid->oid << 17) ^ fid->ver;
	return (size_t)(h ^ (h >> 29)) % FILE_BUCKETS;
}

static int fid_same(const struct nacre_fid *a, const struct nacre_fid *b)
{
	return a->seq == b->seq && a->oid == b->oid && a->ver == b->ver;
}

static struct lk_file **file_slot(struct mds_locks *lk, const struct nacre_fid *fid)
{
	struct lk_file **p = &lk->files[fid_bucket(fid)];
	while (*p && !fid_same(&(*p)->fid, fid))
		p = &(*p)->next;
	return p;
}

/* Frees the file record once it holds no lock. */
static void file_gc(struct lk_file **slot)
{
	struct lk_file *f = *slot;
	if (f && !f->posix && !f->flock) {
		*slot = f->next;
		free(f);
	}
}

static struct lk_client *client_find(struct mds_locks *lk, uint64_t id)
{
	for (struct lk_client *c = lk->clients; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void count_locks(struct mds_locks *lk, uint64_t client, int64_t delta)
{
	struct lk_client *c = client_find(lk, client);
	lk->nlocks = (uint64_t)((int64_t)lk->nlocks + delta);
	if (c)
		c->nlocks = (uint64_t)((int64_t)c->nlocks + delta);
}

/* Drops every lock of client; returns how many. */
static uint64_t drop_client_locks(struct mds_locks *lk, uint64_t client)
{
	uint64_t n = 0;
	for (size_t i = 0; i < FILE_BUCKETS; i++) {
		for (struct lk_file **fp = &lk->files[i]; *fp;) {
			struct lk_lock **lists[2] = {&(*fp)->posix, &(*fp)->flock};
			for (int k = 0; k < 2; k++) {
				for (struct lk_lock **p = lists[k]; *p;) {
					if ((*p)->client == client) {
						struct lk_lock *d = *p;
						*p = d->next;
						free(d);
						n++;
					} else {
						p = &(*p)->next;
					}
				}
			}
			struct lk_file *before = *fp;
			file_gc(fp);
			if (*fp == before)
				fp = &(*fp)->next;
		}
	}
	lk->nlocks -= n;
	return n;
}

/* Evicts the clients disconnected longer than evict_ms. */
static void reap(struct mds_locks *lk, int64_t now_ms)
{
	for (struct lk_client **p = &lk->clients; *p;) {
		struct lk_client *c = *p;
		if (c->gone_ms && now_ms - c->gone_ms >= lk->evict_ms) {
			uint64_t n = drop_client_locks(lk, c->id);
			LOG_INFO("lock", "evicted client %016llx (disconnected %lld ms): %llu locks "
					 "released",
				 (unsigned long long)c->id, (long long)(now_ms - c->gone_ms),
				 (unsigned long long)n);
			*p = c->next;
			free(c);
		} else {
			p = &c->next;
		}
	}
}

void mds_locks_drop_client(struct mds_locks *lk, uint64_t client)
{
	pthread_mutex_lock(&lk->lock);
	for (struct lk_client **p = &lk->clients; *p; p = &(*p)->next) {
		if ((*p)->id == client) {
			struct lk_client *c = *p;
			*p = c->next;
			free(c);
			break;
		}
	}
	uint64_t n = drop_client_locks(lk, client);
	pthread_mutex_unlock(&lk->lock);
	if (n)
		LOG_INFO("lock", "client %016llx evicted: %llu locks released",
			 (unsigned long long)client, (unsigned long long)n);
}

/* The client record of a request, bound to conn_id; NULL on ENOMEM. */
static struct lk_client *client_touch(struct mds_locks *lk, uint64_t id, uint64_t conn_id)
{
	struct lk_client *c = client_find(lk, id);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->id = id;
		c->next = lk->clients;
		lk->clients = c;
	}
	c->conn_id = conn_id;
	c->gone_ms = 0;
	return c;
}

static int same_owner(const struct lk_lock *l, const struct wire_lock_req *r)
{
	return l->client == r->client && l->owner == r->owner;
}

static int overlaps(const struct lk_lock *l, uint64_t start, uint64_t end)
{
	return l->start <= end && start <= l->end;
}

static int conflicts(const struct lk_lock *l, const struct wire_lock_req *r)
{
	return !same_owner(l, r) && (l->type == WIRE_LK_WRLCK || r->type == WIRE_LK_WRLCK);
}

static struct lk_lock *lock_new(const struct wire_lock_req *r)
{
	struct lk_lock *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->client = r->client;
	l->owner = r->owner;
	l->pid = r->pid;
	l->type = r->type;
	l->start = r->start;
	l->end = r->end;
	return l;
}

/* POSIX set on file f (which exists). */
static int posix_set(struct mds_locks *lk, struct lk_file *f, const struct wire_lock_req *r)
{
	struct lk_lock *nl = NULL, *split = NULL;
	if (r->type != WIRE_LK_UNLCK) {
		for (struct lk_lock *l = f->posix; l; l = l->next)
			if (overlaps(l, r->start, r->end) && conflicts(l, r))
				return -EAGAIN;
		if (lk->nlocks + 2 > MDS_LOCKS_MAX)
			return -ENOLCK;
		nl = lock_new(r);
		if (!nl)
			return -ENOMEM;
	}
	/* A lock of ours that sticks out on both sides keeps two pieces: allocate the second
	 * before changing anything, so a failure leaves the list as it was. */
	for (struct lk_lock *l = f->posix; l; l = l->next) {
		if (same_owner(l, r) && l->start < r->start && l->end > r->end) {
			split = malloc(sizeof(*split));
			if (!split) {
				free(nl);
				return -ENOMEM;
			}
			*split = *l;
			break;
		}
	}
	/* Cut [start, end] out of our own locks. */
	int64_t delta = 0;
	for (struct lk_lock **p = &f->posix; *p;) {
		struct lk_lock *l = *p;
		if (!same_owner(l, r) || !overlaps(l, r->start, r->end)) {
			p = &l->next;
			continue;
		}
		if (l->start < r->start && l->end > r->end) {
			split->start = r->end + 1;
			split->next = l->next;
			l->next = split;
			l->end = r->start - 1;
			delta++;
			p = &split->next;
		} else if (l->start < r->start) {
			l->end = r->start - 1;
			p = &l->next;
		} else if (l->end > r->end) {
			l->start = r->end + 1;
			p = &l->next;
		} else {
			*p = l->next;
			free(l);
			delta--;
		}
	}
	if (nl) {
		/* Merge with our touching locks of the same type. */
		for (struct lk_lock **p = &f->posix; *p;) {
			struct lk_lock *l = *p;
			int touches = same_owner(l, r) && l->type == nl->type &&
				      ((l->end != WIRE_LOCK_EOF && l->end + 1 == nl->start) ||
				       (nl->end != WIRE_LOCK_EOF && nl->end + 1 == l->start));
			if (!touches) {
				p = &l->next;
				continue;
			}
			if (l->start < nl->start)
				nl->start = l->start;
			if (l->end > nl->end)
				nl->end = l->end;
			*p = l->next;
			free(l);
			delta--;
		}
		nl->next = f->posix;
		f->posix = nl;
		delta++;
	}
	count_locks(lk, r->client, delta);
	return 0;
}

/* flock set on file f: one lock per owner, whole file. */
static int flock_set(struct mds_locks *lk, struct lk_file *f, const struct wire_lock_req *r)
{
	struct lk_lock **mine = &f->flock;
	while (*mine && !same_owner(*mine, r))
		mine = &(*mine)->next;
	if (r->type == WIRE_LK_UNLCK) {
		if (*mine) {
			struct lk_lock *d = *mine;
			*mine = d->next;
			free(d);
			count_locks(lk, r->client, -1);
		}
		return 0;
	}
	for (struct lk_lock *l = f->flock; l; l = l->next)
		if (conflicts(l, r))
			return -EAGAIN;
	if (*mine) {
		(*mine)->type = r->type;
		(*mine)->pid = r->pid;
		return 0;
	}
	if (lk->nlocks + 1 > MDS_LOCKS_MAX)
		return -ENOLCK;
	struct lk_lock *nl = lock_new(r);
	if (!nl)
		return -ENOMEM;
	nl->start = 0;
	nl->end = WIRE_LOCK_EOF;
	nl->next = f->flock;
	f->flock = nl;
	count_locks(lk, r->client, 1);
	return 0;
}

int mds_locks_set(struct mds_locks *lk, uint64_t conn_id, const struct wire_lock_req *r,
		  int64_t now_ms)
{
	int rc;
	pthread_mutex_lock(&lk->lock);
	reap(lk, now_ms);
	struct lk_client *c = client_touch(lk, r->client, conn_id);
	struct lk_file **slot = file_slot(lk, &r->fid);
	if (!c) {
		rc = -ENOMEM;
		goto out;
	}
	if (!*slot) {
		if (r->type == WIRE_LK_UNLCK) {
			rc = 0; /* nothing held here */
			goto out;
		}
		*slot = calloc(1, sizeof(**slot));
		if (!*slot) {
			rc = -ENOMEM;
			goto out;
		}
		(*slot)->fid = r->fid;
	}
	rc = r->kind == WIRE_LOCK_FLOCK ? flock_set(lk, *slot, r) : posix_set(lk, *slot, r);
	file_gc(slot);
out:
	pthread_mutex_unlock(&lk->lock);
	return rc;
}

int mds_locks_get(struct mds_locks *lk, uint64_t conn_id, const struct wire_lock_req *r,
		  int64_t now_ms, struct wire_lock_rep *out)
{
	memset(out, 0, sizeof(*out));
	if (r->kind != WIRE_LOCK_POSIX || r->type == WIRE_LK_UNLCK)
		return -EINVAL;
	pthread_mutex_lock(&lk->lock);
	reap(lk, now_ms);
	struct lk_client *c = client_find(lk, r->client);
	if (c) {
		c->conn_id = conn_id;
		c->gone_ms = 0;
	}
	struct lk_file *f = *file_slot(lk, &r->fid);
	for (struct lk_lock *l = f ? f->posix : NULL; l; l = l->next) {
		if (overlaps(l, r->start, r->end) && conflicts(l, r)) {
			out->type = l->type;
			out->start = l->start;
			out->end = l->end;
			out->pid = l->pid;
			break;
		}
	}
	pthread_mutex_unlock(&lk->lock);
	return 0;
}

void mds_locks_disconnect(struct mds_locks *lk, uint64_t conn_id, int64_t now_ms)
{
	if (!lk)
		return;
	pthread_mutex_lock(&lk->lock);
	for (struct lk_client **p = &lk->clients; *p;) {
		struct lk_client *c = *p;
		if (c->conn_id != conn_id || c->gone_ms) {
			p = &c->next;
			continue;
		}
		if (c->nlocks == 0 || lk->evict_ms == 0) {
			uint64_t n = drop_client_locks(lk, c->id);
			if (n)
				LOG_INFO("lock", "client %016llx disconnected: %llu locks released",
					 (unsigned long long)c->id, (unsigned long long)n);
			*p = c->next;
			free(c);
			continue;
		}
		/* 0 means connected: a monotonic clock this young is not worth a special case */
		c->gone_ms = now_ms ? now_ms : 1;
		p = &c->next;
	}
	pthread_mutex_unlock(&lk->lock);
}

uint64_t mds_locks_count(struct mds_locks *lk)
{
	pthread_mutex_lock(&lk->lock);
	uint64_t n = lk->nlocks;
	pthread_mutex_unlock(&lk->lock);
	return n;
}

/* ---------------- rpc handlers ---------------- */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mds_lock_disconnect(struct mds *m, uint64_t conn_id)
{
	mds_locks_disconnect(m->locks, conn_id, mono_ms());
}

int mds_lock_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_lock_req r;
	struct wire_cursor c;

	if (!m->locks)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_lock_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) != 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, "lock", "malformed %s request from %s",
				wire_opcode_name(req->hdr->opcode), req->peer);
		return -EPROTO;
	}
	if (req->hdr->opcode == WIRE_OP_MDS_LOCK_SET)
		return mds_locks_set(m->locks, req->conn_id, &r, mono_ms());
	struct wire_lock_rep out;
	int rc = mds_locks_get(m->locks, req->conn_id, &r, mono_ms(), &out);
	if (!rc)
		wire_lock_rep_encode(&rep->body, &out);
	return rc;
}
