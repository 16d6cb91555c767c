/* lock.c - the MDS lock service (see lock.h): per-file lists of POSIX and flock locks and
 * of the waiters queued for them, the clients that own both, eviction of clients gone
 * longer than evict_ms, and the cancels kept for waits that have not arrived yet. */
#include "mds/lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/fid.h"
#include "common/log.h"

#define FILE_BUCKETS 1024

struct lk_lock {
	uint64_t client, owner;
	uint64_t start, end; /* inclusive; end WIRE_LOCK_EOF = to the end */
	uint32_t pid;
	uint8_t type;        /* WIRE_LK_RDLCK or WIRE_LK_WRLCK */
	struct lk_lock *next;
};

struct lk_file;
struct lk_client;

/* A parked LOCK_WAIT. Once ended it moves to the end of mds_locks.done (by fnext) with its
 * status, and is answered and freed after the mutex is dropped. */
struct lk_waiter {
	struct wire_lock_req r;
	uint64_t conn_id;
	void *token;                      /* the answer callback's */
	int status;                       /* once ended */
	struct lk_file *file;             /* while queued */
	struct lk_client *client;         /* while queued */
	struct lk_waiter *fnext, **fprev; /* the file's queue, in arrival order */
	struct lk_waiter *cnext, **cprev; /* the client's waiters */
};

struct lk_file {
	struct nacre_fid fid;
	struct lk_lock *posix; /* unordered; one owner's locks never overlap */
	struct lk_lock *flock; /* at most one per owner */
	struct lk_waiter *waiters, **wtail;
	struct lk_file *next;
};

struct lk_client {
	uint64_t id;
	uint64_t conn_id;  /* the connection it last used */
	int64_t gone_ms;   /* when that connection broke; 0 while connected */
	uint64_t nlocks;
	uint64_t nwaiters;
	struct lk_waiter *waiters;
	struct lk_client *next;
};

/* A connection between mds_locks_conn_closed and mds_locks_disconnect. */
struct lk_closed {
	uint64_t conn_id;
	struct lk_closed *next;
};

/* A cancel that found no waiter, for a LOCK_WAIT sent before it that has not arrived. */
struct lk_cancel {
	int used;
	uint64_t sender, xid;
	struct wire_lock_req r;
};

struct mds_locks {
	pthread_mutex_t lock; /* protects everything below but the immutable fields */
	int evict_ms;         /* immutable */
	mds_lock_answer_fn answer; /* immutable */
	void *answer_arg;          /* immutable */
	struct lk_file *files[FILE_BUCKETS];
	struct lk_client *clients;
	uint64_t nlocks;
	uint64_t nwaiters;
	struct lk_waiter *done, *done_tail; /* ended waiters, in the order they ended, answered
					     * by unlock_and_answer */
	struct lk_closed *closed;
	struct lk_cancel cancels[MDS_LOCK_CANCELS_KEPT];
	unsigned cancel_next; /* the slot the next kept cancel takes */
};

int mds_locks_create(int evict_ms, mds_lock_answer_fn answer, void *answer_arg,
		     struct mds_locks **out)
{
	struct mds_locks *lk = calloc(1, sizeof(*lk));
	if (!lk)
		return -ENOMEM;
	pthread_mutex_init(&lk->lock, NULL);
	lk->evict_ms = evict_ms < 0 ? 0 : evict_ms;
	lk->answer = answer;
	lk->answer_arg = answer_arg;
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
			for (struct lk_waiter *w = f->waiters, *wn; w; w = wn) {
				wn = w->fnext;
				free(w);
			}
			free(f);
		}
	}
	for (struct lk_client *c = lk->clients, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	for (struct lk_closed *c = lk->closed, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	pthread_mutex_destroy(&lk->lock);
	free(lk);
}

/* Drops the mutex, then answers the waiters ended under it. Every public function that
 * may end a waiter leaves through here. */
static void unlock_and_answer(struct mds_locks *lk)
{
	struct lk_waiter *w = lk->done;

	lk->done = lk->done_tail = NULL;
	pthread_mutex_unlock(&lk->lock);
	while (w) {
		struct lk_waiter *n = w->fnext;
		lk->answer(lk->answer_arg, w->token, w->status);
		free(w);
		w = n;
	}
}

static size_t fid_bucket(const struct nacre_fid *fid)
{
	return (size_t)(fid_hash(fid) % FILE_BUCKETS);
}

static struct lk_file **file_slot(struct mds_locks *lk, const struct nacre_fid *fid)
{
	struct lk_file **p = &lk->files[fid_bucket(fid)];
	while (*p && !fid_eq(&(*p)->fid, fid))
		p = &(*p)->next;
	return p;
}

/* The file record of fid in *slot, made if needed; NULL on ENOMEM. */
static struct lk_file *file_make(struct lk_file **slot, const struct nacre_fid *fid)
{
	if (!*slot) {
		*slot = calloc(1, sizeof(**slot));
		if (!*slot)
			return NULL;
		(*slot)->fid = *fid;
		(*slot)->wtail = &(*slot)->waiters;
	}
	return *slot;
}

/* Frees the file record once it holds no lock and no waiter. */
static void file_gc(struct lk_file **slot)
{
	struct lk_file *f = *slot;
	if (f && !f->posix && !f->flock && !f->waiters) {
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

/* ---------------- conflicts ---------------- */

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

/* Two requests (of waiters, or a waiter and a new one) that cannot both be granted. */
static int reqs_conflict(const struct wire_lock_req *a, const struct wire_lock_req *b)
{
	return a->kind == b->kind && !(a->client == b->client && a->owner == b->owner) &&
	       (a->type == WIRE_LK_WRLCK || b->type == WIRE_LK_WRLCK) &&
	       a->start <= b->end && b->start <= a->end;
}

/* The same owner, file, kind and range: what LOCK_CANCEL names. */
static int same_request(const struct wire_lock_req *a, const struct wire_lock_req *b)
{
	return a->client == b->client && a->owner == b->owner && a->kind == b->kind &&
	       fid_eq(&a->fid, &b->fid) && a->start == b->start && a->end == b->end;
}

/* A lock on f that keeps r from being granted: of the owner of holder, or of anyone if
 * holder is NULL. */
static const struct lk_lock *held_conflict(const struct lk_file *f, const struct wire_lock_req *r,
					   const struct wire_lock_req *holder)
{
	const struct lk_lock *l = r->kind == WIRE_LOCK_FLOCK ? f->flock : f->posix;

	for (; l; l = l->next)
		if (overlaps(l, r->start, r->end) && conflicts(l, r) &&
		    (!holder || same_owner(l, holder)))
			return l;
	return NULL;
}

/* The earliest waiter queued on f before upto (NULL: all) that r must wait behind: one
 * it conflicts with, unless that one itself waits for a lock r's owner holds (then r
 * going first delays nobody, and waiting would be a deadlock). */
static const struct lk_waiter *queue_conflict(const struct lk_file *f,
					      const struct wire_lock_req *r,
					      const struct lk_waiter *upto)
{
	for (const struct lk_waiter *w = f->waiters; w && w != upto; w = w->fnext)
		if (reqs_conflict(&w->r, r) && !held_conflict(f, &w->r, r))
			return w;
	return NULL;
}

static int must_wait(const struct lk_file *f, const struct wire_lock_req *r,
		     const struct lk_waiter *upto)
{
	return r->type != WIRE_LK_UNLCK &&
	       (held_conflict(f, r, NULL) || queue_conflict(f, r, upto));
}

/* 1 if owner (client, owner) has a POSIX waiter that waits for a lock r's owner holds. */
static int waits_for(struct mds_locks *lk, uint64_t client, uint64_t owner,
		     const struct wire_lock_req *r)
{
	const struct lk_client *c = client_find(lk, client);

	for (const struct lk_waiter *w = c ? c->waiters : NULL; w; w = w->cnext)
		if (w->r.owner == owner && w->r.kind == WIRE_LOCK_POSIX &&
		    held_conflict(w->file, &w->r, r))
			return 1;
	return 0;
}

/* A cycle of two: r (POSIX) would wait for an owner B that waits for r's owner. */
static int would_deadlock(struct mds_locks *lk, const struct lk_file *f,
			  const struct wire_lock_req *r)
{
	if (r->kind != WIRE_LOCK_POSIX)
		return 0; /* flock(2) does not detect deadlocks */
	for (const struct lk_lock *l = f->posix; l; l = l->next)
		if (overlaps(l, r->start, r->end) && conflicts(l, r) &&
		    waits_for(lk, l->client, l->owner, r))
			return 1;
	for (const struct lk_waiter *w = f->waiters; w; w = w->fnext)
		if (reqs_conflict(&w->r, r) && !held_conflict(f, &w->r, r) &&
		    waits_for(lk, w->r.client, w->r.owner, r))
			return 1;
	return 0;
}

/* ---------------- taking and dropping locks ---------------- */

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

static int apply(struct mds_locks *lk, struct lk_file *f, const struct wire_lock_req *r)
{
	return r->kind == WIRE_LOCK_FLOCK ? flock_set(lk, f, r) : posix_set(lk, f, r);
}

/* ---------------- waiters ---------------- */

/* Unqueues w and moves it to lk->done with its answer. */
static void waiter_end(struct mds_locks *lk, struct lk_waiter *w, int status)
{
	*w->fprev = w->fnext;
	if (w->fnext)
		w->fnext->fprev = w->fprev;
	else
		w->file->wtail = w->fprev;
	*w->cprev = w->cnext;
	if (w->cnext)
		w->cnext->cprev = w->cprev;
	w->client->nwaiters--;
	lk->nwaiters--;
	w->status = status;
	w->fnext = NULL;
	if (lk->done_tail)
		lk->done_tail->fnext = w;
	else
		lk->done = w;
	lk->done_tail = w;
}

/* Grants, in arrival order, every waiter of f that nothing keeps waiting any more. A grant
 * that turned a lock of its owner into a reader may free an earlier one: the pass repeats
 * until it grants nothing. */
static void regrant(struct mds_locks *lk, struct lk_file *f)
{
	for (int again = 1; again;) {
		again = 0;
		for (struct lk_waiter *w = f->waiters, *n; w; w = n) {
			n = w->fnext;
			if (must_wait(f, &w->r, w))
				continue;
			waiter_end(lk, w, apply(lk, f, &w->r));
			again = 1;
		}
	}
}

/* After waiters were ended (those in lk->done after mark, the tail before): the waiters
 * behind them on their files may go now, and their files may be empty. */
static void after_ends(struct mds_locks *lk, struct lk_waiter *mark)
{
	struct lk_waiter *first = mark ? mark->fnext : lk->done;
	struct lk_waiter *last = lk->done_tail; /* regrant appends after it */

	if (last == mark)
		return;
	for (struct lk_waiter *w = first;; w = w->fnext) {
		regrant(lk, w->file);
		if (w == last)
			break;
	}
	for (struct lk_waiter *w = first;; w = w->fnext) {
		file_gc(file_slot(lk, &w->r.fid)); /* by FID: an earlier one may have freed it */
		if (w == last)
			break;
	}
}

/* Queues r on f behind the waiters there. MDS_LOCK_PARKED, -ENOLCK or -ENOMEM. */
static int park(struct mds_locks *lk, struct lk_file *f, struct lk_client *c,
		const struct mds_lock_from *from, const struct wire_lock_req *r, void *token)
{
	struct lk_waiter *w;

	if (lk->nwaiters >= MDS_LOCK_WAITERS_MAX)
		return -ENOLCK;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->r = *r;
	w->conn_id = from->conn_id;
	w->token = token;
	w->file = f;
	w->client = c;
	w->fprev = f->wtail;
	*f->wtail = w;
	f->wtail = &w->fnext;
	w->cnext = c->waiters;
	w->cprev = &c->waiters;
	if (c->waiters)
		c->waiters->cprev = &w->cnext;
	c->waiters = w;
	c->nwaiters++;
	lk->nwaiters++;
	return MDS_LOCK_PARKED;
}

static int conn_closing(const struct mds_locks *lk, uint64_t conn_id)
{
	for (const struct lk_closed *c = lk->closed; c; c = c->next)
		if (c->conn_id == conn_id)
			return 1;
	return 0;
}

/* 1 (and forgets it) if a cancel of r sent after it by the same sender came first. */
static int cancel_came_first(struct mds_locks *lk, const struct mds_lock_from *from,
			     const struct wire_lock_req *r)
{
	for (unsigned i = 0; i < MDS_LOCK_CANCELS_KEPT; i++) {
		struct lk_cancel *k = &lk->cancels[i];
		if (!k->used || k->sender != from->sender || !same_request(&k->r, r))
			continue;
		k->used = 0; /* a later wait makes an older cancel moot as well */
		if (k->xid > from->xid)
			return 1;
	}
	return 0;
}

static void cancel_keep(struct mds_locks *lk, const struct mds_lock_from *from,
			const struct wire_lock_req *r)
{
	struct lk_cancel *k = &lk->cancels[lk->cancel_next++ % MDS_LOCK_CANCELS_KEPT];

	k->used = 1;
	k->sender = from->sender;
	k->xid = from->xid;
	k->r = *r;
}

/* ---------------- clients and eviction ---------------- */

/* Drops every lock of client (and grants what that frees); returns how many. */
static uint64_t drop_client_locks(struct mds_locks *lk, uint64_t client)
{
	uint64_t n = 0;
	for (size_t i = 0; i < FILE_BUCKETS; i++) {
		for (struct lk_file **fp = &lk->files[i]; *fp;) {
			struct lk_lock **lists[2] = {&(*fp)->posix, &(*fp)->flock};
			uint64_t before_n = n;
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
			if (n != before_n && (*fp)->waiters)
				regrant(lk, *fp);
			struct lk_file *before = *fp;
			file_gc(fp);
			if (*fp == before)
				fp = &(*fp)->next;
		}
	}
	lk->nlocks -= n;
	return n;
}

/* Ends the waiters of *pp (with -EIO), drops its locks and its record. Returns the number
 * of locks dropped. */
static uint64_t client_drop(struct mds_locks *lk, struct lk_client **pp)
{
	struct lk_client *c = *pp;
	struct lk_waiter *mark = lk->done_tail;

	while (c->waiters)
		waiter_end(lk, c->waiters, -EIO);
	after_ends(lk, mark);
	uint64_t n = drop_client_locks(lk, c->id);
	*pp = c->next;
	free(c);
	return n;
}

/* Evicts the clients disconnected longer than evict_ms. */
static void reap(struct mds_locks *lk, int64_t now_ms)
{
	for (struct lk_client **p = &lk->clients; *p;) {
		struct lk_client *c = *p;
		if (c->gone_ms && now_ms - c->gone_ms >= lk->evict_ms) {
			uint64_t id = c->id;
			int64_t gone = now_ms - c->gone_ms;
			uint64_t n = client_drop(lk, p);
			LOG_INFO("lock", "evicted client %016llx (disconnected %lld ms): %llu locks "
					 "released",
				 (unsigned long long)id, (long long)gone, (unsigned long long)n);
		} else {
			p = &c->next;
		}
	}
}

void mds_locks_drop_client(struct mds_locks *lk, uint64_t client)
{
	uint64_t n;

	pthread_mutex_lock(&lk->lock);
	struct lk_client **p = &lk->clients;
	while (*p && (*p)->id != client)
		p = &(*p)->next;
	n = *p ? client_drop(lk, p) : drop_client_locks(lk, client);
	unlock_and_answer(lk);
	if (n)
		LOG_INFO("lock", "client %016llx evicted: %llu locks released",
			 (unsigned long long)client, (unsigned long long)n);
}

/* ---------------- requests ---------------- */

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
	if (!*slot && r->type == WIRE_LK_UNLCK) {
		rc = 0; /* nothing held here */
		goto out;
	}
	struct lk_file *f = file_make(slot, &r->fid);
	if (!f) {
		rc = -ENOMEM;
		goto out;
	}
	if (r->type != WIRE_LK_UNLCK && queue_conflict(f, r, NULL)) {
		rc = -EAGAIN; /* free now, but promised to an earlier waiter */
	} else {
		rc = apply(lk, f, r);
		if (rc == 0 && r->type != WIRE_LK_WRLCK && f->waiters)
			regrant(lk, f); /* an unlock or a downgrade */
	}
	file_gc(slot);
out:
	unlock_and_answer(lk);
	return rc;
}

int mds_locks_wait(struct mds_locks *lk, const struct mds_lock_from *from,
		   const struct wire_lock_req *r, int64_t now_ms, void *token)
{
	struct lk_client *c;
	struct lk_file **slot, *f;
	int rc;

	if (r->type == WIRE_LK_UNLCK)
		return mds_locks_set(lk, from->conn_id, r, now_ms); /* never waits */
	pthread_mutex_lock(&lk->lock);
	reap(lk, now_ms);
	if (conn_closing(lk, from->conn_id)) {
		rc = -ECONNRESET; /* nobody would hear the grant */
		goto out;
	}
	if (cancel_came_first(lk, from, r)) {
		rc = -EINTR;
		goto out;
	}
	c = client_touch(lk, r->client, from->conn_id);
	slot = file_slot(lk, &r->fid);
	f = c ? file_make(slot, &r->fid) : NULL;
	if (!f) {
		rc = -ENOMEM;
		goto out;
	}
	if (!must_wait(f, r, NULL)) {
		rc = apply(lk, f, r);
		if (rc == 0 && r->type != WIRE_LK_WRLCK && f->waiters)
			regrant(lk, f);
	} else if (would_deadlock(lk, f, r)) {
		rc = -EDEADLK;
	} else {
		rc = park(lk, f, c, from, r, token);
	}
	file_gc(slot);
out:
	unlock_and_answer(lk);
	return rc;
}

void mds_locks_cancel(struct mds_locks *lk, const struct mds_lock_from *from,
		      const struct wire_lock_req *r)
{
	pthread_mutex_lock(&lk->lock);
	struct lk_waiter *mark = lk->done_tail;
	struct lk_client *c = client_find(lk, r->client);
	int n = 0;

	for (struct lk_waiter *w = c ? c->waiters : NULL, *next; w; w = next) {
		next = w->cnext;
		if (same_request(&w->r, r)) {
			waiter_end(lk, w, -EINTR);
			n++;
		}
	}
	if (n)
		after_ends(lk, mark);
	else
		cancel_keep(lk, from, r);
	unlock_and_answer(lk);
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
	const struct lk_lock *l = f ? held_conflict(f, r, NULL) : NULL;
	if (l) {
		out->type = l->type;
		out->start = l->start;
		out->end = l->end;
		out->pid = l->pid;
	}
	unlock_and_answer(lk);
	return 0;
}

/* ---------------- connections ---------------- */

void mds_locks_conn_closed(struct mds_locks *lk, uint64_t conn_id)
{
	if (!lk)
		return;
	pthread_mutex_lock(&lk->lock);
	struct lk_waiter *mark = lk->done_tail;
	if (!conn_closing(lk, conn_id)) {
		struct lk_closed *m = malloc(sizeof(*m));
		if (m) { /* without it a wait racing with the close could park for nobody */
			m->conn_id = conn_id;
			m->next = lk->closed;
			lk->closed = m;
		}
	}
	for (struct lk_client *c = lk->clients; c; c = c->next) {
		for (struct lk_waiter *w = c->waiters, *next; w; w = next) {
			next = w->cnext;
			if (w->conn_id == conn_id)
				waiter_end(lk, w, -ECONNRESET);
		}
	}
	after_ends(lk, mark);
	unlock_and_answer(lk);
}

void mds_locks_disconnect(struct mds_locks *lk, uint64_t conn_id, int64_t now_ms)
{
	if (!lk)
		return;
	pthread_mutex_lock(&lk->lock);
	for (struct lk_closed **p = &lk->closed; *p; p = &(*p)->next) {
		if ((*p)->conn_id == conn_id) {
			struct lk_closed *d = *p;
			*p = d->next;
			free(d);
			break;
		}
	}
	for (struct lk_client **p = &lk->clients; *p;) {
		struct lk_client *c = *p;
		if (c->conn_id != conn_id || c->gone_ms) {
			p = &c->next;
			continue;
		}
		if ((c->nlocks == 0 && c->nwaiters == 0) || lk->evict_ms == 0) {
			uint64_t id = c->id;
			uint64_t n = client_drop(lk, p);
			if (n)
				LOG_INFO("lock", "client %016llx disconnected: %llu locks released",
					 (unsigned long long)id, (unsigned long long)n);
			continue;
		}
		/* 0 means connected: a monotonic clock this young is not worth a special case */
		c->gone_ms = now_ms ? now_ms : 1;
		p = &c->next;
	}
	unlock_and_answer(lk);
}

void mds_locks_tick(struct mds_locks *lk, int64_t now_ms)
{
	pthread_mutex_lock(&lk->lock);
	reap(lk, now_ms);
	unlock_and_answer(lk);
}

uint64_t mds_locks_count(struct mds_locks *lk)
{
	pthread_mutex_lock(&lk->lock);
	uint64_t n = lk->nlocks;
	pthread_mutex_unlock(&lk->lock);
	return n;
}

uint64_t mds_locks_waiters(struct mds_locks *lk)
{
	pthread_mutex_lock(&lk->lock);
	uint64_t n = lk->nwaiters;
	pthread_mutex_unlock(&lk->lock);
	return n;
}
