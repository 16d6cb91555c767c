/* notify.c - callbacks to clients on a change of permissions (see notify.h). */
#include "mds/notify.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/req.h"

#define TICK_MS 100   /* the timer thread's period */
#define NOTES_MAX 8   /* FIDs one request may note; more: every client drops everything */
#define PEND_MAX WIRE_NOTIFY_MAX

/* A listening client: one per connection that sent a NOTIFY_WAIT. */
struct ncli {
	struct ncli *next;
	uint64_t conn_id;
	char name[64];              /* the peer's name, for log lines */
	uint64_t sent;              /* seq of the last batch answered */
	uint64_t acked;             /* highest seq it acknowledged */
	struct nacre_fid *pend;     /* FIDs for the next batch (grown up to PEND_MAX) */
	uint32_t npend, cap;
	int all;                    /* the next batch is WIRE_NOTIFY_ALL */
	struct nacre_fid *recall;   /* directories whose leases the next batch recalls */
	uint32_t nrecall, recall_cap;
	struct rpc_deferred *parked;/* its outstanding NOTIFY_WAIT, or NULL */
	int64_t parked_ms;
	int lagging;                /* missed a deadline: not waited for until it acks all */
};

/* A reply held until the clients told of its change acknowledged. */
struct target {
	uint64_t conn_id;
	uint64_t seq; /* the batch that carries the change to it */
	int done;     /* acknowledged, fell behind or left */
};
struct hold {
	struct hold *next;
	struct rpc_deferred *d;
	int status;
	uint8_t *body;
	uint32_t len;
	struct wire_rep_env env;
	int64_t start_ms, deadline_ms;
	uint32_t ntargets;
	uint32_t remaining; /* targets not done */
	struct target t[];  /* sorted by conn_id */
};

struct mds_notify {
	pthread_mutex_t lock;   /* protects everything below */
	pthread_cond_t cond;    /* the timer thread's sleep */
	struct ncli *clients;
	struct hold *holds;
	int stop;
	pthread_t thread;
};

/* This thread's request's notes (mds_notify_perm_change). */
static __thread struct nacre_fid notes[NOTES_MAX];
static __thread int nnotes;
static __thread int notes_all;

static struct ncli *client_find(struct mds_notify *n, uint64_t conn_id)
{
	struct ncli *c;

	for (c = n->clients; c; c = c->next)
		if (c->conn_id == conn_id)
			return c;
	return NULL;
}

/* Encodes c's next batch into cur (seq 0 and no FIDs if nothing is pending) and empties
 * it. With n->lock held. */
static void encode_batch(struct ncli *c, struct wire_cursor *cur)
{
	struct wire_notify_rep h = {0};

	if (c->npend || c->all || c->nrecall) {
		h.seq = ++c->sent;
		h.flags = (c->all ? WIRE_NOTIFY_ALL : 0) | (c->nrecall ? WIRE_NOTIFY_RECALL : 0);
		h.count = c->all ? 0 : c->npend;
	}
	wire_notify_rep_encode(cur, &h);
	for (uint32_t i = 0; i < h.count; i++)
		wire_fid_put(cur, &c->pend[i]);
	if (c->nrecall) {
		wire_put_u32(cur, c->nrecall);
		for (uint32_t i = 0; i < c->nrecall; i++)
			wire_fid_put(cur, &c->recall[i]);
	}
	c->npend = 0;
	c->nrecall = 0;
	c->all = 0;
}

/* Answers c's parked wait with its next batch. With n->lock held. */
static void answer_parked(struct ncli *c)
{
	struct wire_cursor cur;

	if (!c->parked)
		return;
	wire_cursor_init_dyn(&cur, WIRE_BODY_MAX);
	encode_batch(c, &cur);
	if (wire_cursor_ok(&cur))
		rpc_answer(c->parked, 0, cur.buf, (uint32_t)wire_cursor_pos(&cur), NULL);
	else
		rpc_answer(c->parked, -ENOMEM, NULL, 0, NULL);
	wire_cursor_fini(&cur);
	c->parked = NULL;
}

static void client_free(struct ncli *c)
{
	if (!c)
		return;
	answer_parked(c); /* dropped by the transport if the connection is gone */
	free(c->pend);
	free(c->recall);
	free(c);
}

static void client_unlink(struct mds_notify *n, struct ncli *c)
{
	struct ncli **pp;

	for (pp = &n->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			return;
		}
	}
}

static void hold_answer(struct hold *h)
{
	rpc_answer(h->d, h->status, h->body, h->len, &h->env);
	free(h->body);
	free(h);
}

/* The target of conn_id in h (targets are sorted by connection), or NULL. */
static struct target *target_of(struct hold *h, uint64_t conn_id)
{
	uint32_t lo = 0, hi = h->ntargets;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (h->t[mid].conn_id == conn_id)
			return &h->t[mid];
		if (h->t[mid].conn_id < conn_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Client c acknowledged, fell behind or left (gone): the held replies it no longer holds
 * back are told, and those that wait for nobody now are answered. O(holds * log clients).
 * With n->lock held. */
static void client_event(struct mds_notify *n, const struct ncli *c, int gone)
{
	struct hold **pp = &n->holds;

	while (*pp) {
		struct hold *h = *pp;
		struct target *t = target_of(h, c->conn_id);

		if (t && !t->done && (gone || c->lagging || c->acked >= t->seq)) {
			t->done = 1;
			h->remaining--;
		}
		if (h->remaining == 0) {
			*pp = h->next;
			hold_answer(h);
		} else {
			pp = &h->next;
		}
	}
}

/* Answers the held replies past their deadline; the clients they still wait for are marked
 * lagging (and logged). With n->lock held. */
static void holds_timeout(struct mds_notify *n, int64_t now_ms)
{
again:
	for (struct hold *h = n->holds; h; h = h->next) {
		if (now_ms < h->deadline_ms)
			continue;
		for (uint32_t i = 0; i < h->ntargets; i++) {
			struct ncli *c;
			if (h->t[i].done || !(c = client_find(n, h->t[i].conn_id)) || c->lagging)
				continue;
			c->lagging = 1;
			LOG_WARN("notify", "client %s did not acknowledge a permission change within "
				 "%d ms: answering without it, and not waiting for it again until "
				 "it catches up", c->name, MDS_NOTIFY_ACK_MS);
			client_event(n, c, 0);
			goto again; /* h may be answered and freed by now: start over */
		}
		h->remaining = 0; /* only gone clients left: no one to wait for */
	}
	struct hold **pp = &n->holds;
	while (*pp) {
		struct hold *h = *pp;
		if (h->remaining == 0) {
			*pp = h->next;
			hold_answer(h);
		} else {
			pp = &h->next;
		}
	}
}

static void *timer_main(void *arg)
{
	struct mds_notify *n = arg;

	pthread_mutex_lock(&n->lock);
	while (!n->stop) {
		struct timespec ts;
		time_after_ms(&ts, CLOCK_REALTIME, TICK_MS);
		pthread_cond_timedwait(&n->cond, &n->lock, &ts);
		int64_t now = net_now_ms();
		holds_timeout(n, now);
		for (struct ncli *c = n->clients; c; c = c->next)
			if (c->parked && now - c->parked_ms >= WIRE_NOTIFY_HOLD_MS)
				answer_parked(c); /* renewed: the client asks again at once */
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

int mds_notify_create(struct mds_notify **out)
{
	struct mds_notify *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->cond, NULL);
	if (pthread_create(&n->thread, NULL, timer_main, n) != 0) {
		pthread_mutex_destroy(&n->lock);
		pthread_cond_destroy(&n->cond);
		free(n);
		return -EAGAIN;
	}
	*out = n;
	return 0;
}

void mds_notify_destroy(struct mds_notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = 1;
	pthread_cond_signal(&n->cond);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	/* the transport is gone, and with it the deferred requests: nothing to answer */
	while (n->holds) {
		struct hold *h = n->holds;
		n->holds = h->next;
		free(h->body);
		free(h);
	}
	while (n->clients) {
		struct ncli *c = n->clients;
		n->clients = c->next;
		c->parked = NULL;
		client_free(c);
	}
	pthread_mutex_destroy(&n->lock);
	pthread_cond_destroy(&n->cond);
	free(n);
}

int mds_notify_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct mds_notify *n = m->notify;
	struct wire_notify_req r;
	struct wire_cursor cur;
	struct ncli *c;

	if (!n)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&cur, req->body, req->body_len);
	wire_notify_req_decode(&cur, &r);
	if (!wire_cursor_ok(&cur) || wire_cursor_left(&cur) != 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, "notify", "malformed NOTIFY_WAIT from %s", req->peer);
		return -EPROTO;
	}
	pthread_mutex_lock(&n->lock);
	c = client_find(n, req->conn_id);
	if (!c && !(r.flags & WIRE_NOTIFY_STOP)) {
		c = calloc(1, sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&n->lock);
			return -ENOMEM;
		}
		c->conn_id = req->conn_id;
		str_copy(c->name, req->peer_name && req->peer_name[0] ? req->peer_name : req->peer,
			 sizeof(c->name));
		c->next = n->clients;
		n->clients = c;
	}
	if (c) {
		/* an ack above what this instance sent comes from before a restart */
		if (r.ack <= c->sent && r.ack > c->acked)
			c->acked = r.ack;
		if (c->acked == c->sent)
			c->lagging = 0;
		answer_parked(c); /* a second wait replaces the first */
		/* One wait at a time carries the client's latest ack: a batch sent after it was
		 * lost (its wait had timed out before the answer came: a long stop, a late
		 * reply). It cannot know what that batch held, so it drops everything; without
		 * this it would miss those changes and, lagging, never be waited for again. */
		if (!(r.flags & WIRE_NOTIFY_STOP) && c->acked < c->sent && !c->all) {
			LOG_RATELIMITED(LOG_LVL_INFO, "notify", "client %s missed a permission-"
					"change batch (%llu acknowledged, %llu sent): it drops every "
					"cached attribute", c->name, (unsigned long long)c->acked,
					(unsigned long long)c->sent);
			c->all = 1;
		}
		client_event(n, c, (r.flags & WIRE_NOTIFY_STOP) != 0);
	}
	if (r.flags & WIRE_NOTIFY_STOP) {
		if (c) {
			client_unlink(n, c);
			client_free(c);
		}
		pthread_mutex_unlock(&n->lock);
		struct wire_notify_rep h = {0};
		wire_notify_rep_encode(&rep->body, &h);
		return 0;
	}
	if (c->npend || c->all || c->nrecall) {
		encode_batch(c, &rep->body); /* changes came while it was away: at once */
		pthread_mutex_unlock(&n->lock);
		return 0;
	}
	c->parked = rpc_defer(req);
	c->parked_ms = net_now_ms();
	pthread_mutex_unlock(&n->lock);
	return RPC_DEFER;
}

void mds_notify_close(struct mds *m, uint64_t conn_id)
{
	struct mds_notify *n = m->notify;
	struct ncli *c;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	c = client_find(n, conn_id);
	if (c) {
		client_event(n, c, 1);
		client_unlink(n, c);
		client_free(c);
	}
	pthread_mutex_unlock(&n->lock);
}

int mds_notify_listening(struct mds *m, uint64_t conn_id)
{
	struct mds_notify *n = m->notify;
	int yes;

	if (!n)
		return 0;
	pthread_mutex_lock(&n->lock);
	yes = client_find(n, conn_id) != NULL;
	pthread_mutex_unlock(&n->lock);
	return yes;
}

int mds_notify_recall(struct mds *m, uint64_t conn_id, const struct nacre_fid *dir)
{
	struct mds_notify *n = m->notify;
	struct ncli *c;

	if (!n)
		return -ENOENT;
	pthread_mutex_lock(&n->lock);
	c = client_find(n, conn_id);
	if (!c) {
		pthread_mutex_unlock(&n->lock);
		return -ENOENT;
	}
	if (c->nrecall == c->recall_cap) {
		uint32_t cap = c->recall_cap ? c->recall_cap * 2 : 8;
		struct nacre_fid *p = cap <= PEND_MAX ? realloc(c->recall, cap * sizeof(*p)) : NULL;
		if (p) {
			c->recall = p;
			c->recall_cap = cap;
		}
	}
	if (c->nrecall < c->recall_cap)
		c->recall[c->nrecall++] = *dir;
	else
		c->all = 1; /* it gives every lease back */
	answer_parked(c);
	pthread_mutex_unlock(&n->lock);
	return 0;
}

void mds_notify_perm_change(struct mds *m, const struct nacre_fid *fid)
{
	(void)m;
	if (mds_req_current && mds_req_current->replay)
		return;
	for (int i = 0; i < nnotes; i++)
		if (fid_eq(&notes[i], fid))
			return;
	if (nnotes < NOTES_MAX)
		notes[nnotes++] = *fid;
	else
		notes_all = 1;
}

void mds_notify_request_begin(void)
{
	nnotes = 0;
	notes_all = 0;
}

static int cmp_target(const void *a, const void *b)
{
	uint64_t x = ((const struct target *)a)->conn_id, y = ((const struct target *)b)->conn_id;

	return x < y ? -1 : x > y;
}

/* Adds the thread's notes to c's next batch. With n->lock held. */
static void queue_notes(struct ncli *c)
{
	if (notes_all)
		c->all = 1;
	for (int i = 0; i < nnotes && !c->all; i++) {
		uint32_t j;
		for (j = 0; j < c->npend; j++)
			if (fid_eq(&c->pend[j], &notes[i]))
				break;
		if (j < c->npend)
			continue;
		if (c->npend == c->cap) {
			uint32_t cap = c->cap ? c->cap * 2 : 8;
			struct nacre_fid *p = cap <= PEND_MAX ? realloc(c->pend, cap * sizeof(*p))
							      : NULL;
			if (!p) {
				c->all = 1; /* too many (or no memory): drop everything */
				break;
			}
			c->pend = p;
			c->cap = cap;
		}
		c->pend[c->npend++] = notes[i];
	}
}

int mds_notify_request_end(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
			   int status)
{
	struct mds_notify *n = m->notify;
	struct hold *h = NULL;
	uint32_t count = 0, k = 0;
	struct ncli *c;

	if (!nnotes && !notes_all)
		return status;
	if (!n || status == RPC_DEFER || status < 0) {
		mds_notify_request_begin();
		return status;
	}
	pthread_mutex_lock(&n->lock);
	for (c = n->clients; c; c = c->next)
		if (c->conn_id != req->conn_id)
			count++;
	if (count && !rep->bulk)
		h = calloc(1, sizeof(*h) + count * sizeof(h->t[0]));
	for (c = n->clients; c; c = c->next) {
		if (c->conn_id == req->conn_id)
			continue;
		queue_notes(c);
		if (h && !c->lagging) {
			h->t[k].conn_id = c->conn_id;
			h->t[k].seq = c->sent + 1; /* the batch answer_parked sends next */
			k++;
		}
		answer_parked(c);
	}
	mds_notify_request_begin();
	if (h && k)
		h->body = malloc(wire_cursor_pos(&rep->body) + 1);
	if (!h || !k || !h->body) {
		/* nobody to wait for (or no memory to wait with): answer now */
		pthread_mutex_unlock(&n->lock);
		if (h)
			free(h->body);
		free(h);
		return status;
	}
	h->ntargets = k;
	h->remaining = k;
	qsort(h->t, k, sizeof(h->t[0]), cmp_target);
	h->len = (uint32_t)wire_cursor_pos(&rep->body);
	memcpy(h->body, rep->body.buf, h->len);
	h->status = status;
	h->env = rep->env;
	h->start_ms = net_now_ms();
	h->deadline_ms = h->start_ms + MDS_NOTIFY_ACK_MS;
	h->d = rpc_defer(req);
	h->next = n->holds;
	n->holds = h;
	pthread_mutex_unlock(&n->lock);
	return RPC_DEFER;
}
