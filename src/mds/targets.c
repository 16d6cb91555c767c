/* targets.c - OST registry: registration, heartbeats, liveness. */
#include "mds/targets.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

struct tgt {
	uint32_t index;
	char addr[NACRE_ADDR_MAX + 1];
	int64_t last_hb_ms; /* 0 = no heartbeat since start */
	struct nacre_statfs st;
	uint64_t conn_id;   /* the connection its heartbeats come on (0: none yet) */
	int unreachable;    /* the MDS's probe of addr failed (probe.h): no new stripes */
};

struct mds_targets {
	pthread_mutex_t lock;
	struct tgt *v; /* sorted by index; protected by lock */
	size_t n, cap; /* protected by lock */
	int64_t grace_ms; /* targets not heard from since count as up for MDS_TARGET_UP_MS
			   * from then: the MDS's own stall; lock */
};

int mds_targets_create(struct mds_targets **out)
{
	struct mds_targets *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void mds_targets_destroy(struct mds_targets *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->v);
	free(t);
}

static int is_up(const struct tgt *g, int64_t now)
{
	return g->last_hb_ms && now - g->last_hb_ms <= MDS_TARGET_UP_MS;
}

/* Up, or known and not heard from since the grace began (the MDS was stopped itself and so
 * heard nobody): for MDS_TARGET_UP_MS after that, creates use it instead of failing while
 * its OSS heartbeats again (clients' I/O waits for an OSS that is away). */
static int is_usable(const struct mds_targets *t, const struct tgt *g, int64_t now)
{
	if (g->unreachable)
		return 0;
	return is_up(g, now) || (g->addr[0] && t->grace_ms && g->last_hb_ms < t->grace_ms &&
				 now - t->grace_ms <= MDS_TARGET_UP_MS);
}

/* Up as clients see it: heartbeating, and answering the MDS's probe. */
static int is_active(const struct tgt *g, int64_t now)
{
	return is_up(g, now) && !g->unreachable;
}

void mds_targets_grace(struct mds_targets *t)
{
	pthread_mutex_lock(&t->lock);
	t->grace_ms = net_now_ms();
	pthread_mutex_unlock(&t->lock);
}

/* Finds or inserts index. Caller holds t->lock. */
static struct tgt *find(struct mds_targets *t, uint32_t index, int insert)
{
	size_t i = 0;
	while (i < t->n && t->v[i].index < index)
		i++;
	if (i < t->n && t->v[i].index == index)
		return &t->v[i];
	if (!insert)
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct tgt *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->n++;
	memset(&t->v[i], 0, sizeof(t->v[i]));
	t->v[i].index = index;
	return &t->v[i];
}

static int load_one(void *arg, uint32_t type, uint32_t index, const char *addr)
{
	struct mds_targets *t = arg;
	if (type != NACRE_TGT_OST || index > MDS_OST_INDEX_MAX)
		return 0;
	pthread_mutex_lock(&t->lock);
	struct tgt *g = find(t, index, 1);
	if (g)
		str_copy(g->addr, addr, sizeof(g->addr));
	pthread_mutex_unlock(&t->lock);
	return g ? 0 : -ENOMEM;
}

int mds_targets_load(struct mds *m)
{
	struct mds_txn *txn;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_target_iter(txn, load_one, m->targets);
	mds_txn_abort(txn);
	return rc; /* creates wait for them to register again (ost_wait.h) */
}

/* Whether two registered addresses ("h:p" or "h:p,h:p": an OSS, then its failover
 * partner) share one: the same server again, or its partner taking over. */
static int related(const char *a, const char *b)
{
	for (const char *p = a; *p; p += strcspn(p, ","), p += *p == ',') {
		size_t n = strcspn(p, ",");
		for (const char *q = b; *q; q += strcspn(q, ","), q += *q == ',')
			if (strcspn(q, ",") == n && strncmp(p, q, n) == 0)
				return 1;
	}
	return 0;
}

struct persist_arg {
	uint32_t index;
	const char *addr;
};

static int persist_op(struct mds_txn *txn, void *arg)
{
	struct persist_arg *p = arg;
	return mds_db_target_put(txn, NACRE_TGT_OST, p->index, p->addr);
}

int mds_targets_register(struct mds *m, const struct wire_target_reg *r, int heartbeat,
			 uint64_t conn_id)
{
	struct mds_targets *t = m->targets;
	if (strcmp(r->fsname, m->fsname)) {
		LOG_RATELIMITED(LOG_LVL_WARN, "targets",
				"refusing OST%04x at %s: it belongs to file system '%s', not '%s'",
				r->index, r->addr, r->fsname, m->fsname);
		return -NACRE_EFSNAME;
	}
	if (r->type != NACRE_TGT_OST || r->index > MDS_OST_INDEX_MAX || !r->addr[0])
		return -EINVAL;
	int64_t now = net_now_ms();
	int changed = 0, was_up;
	pthread_mutex_lock(&t->lock);
	struct tgt *g = find(t, r->index, 1);
	if (!g) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	/* a failover partner takes over at once: it runs only once the other one is gone */
	if (g->addr[0] && strcmp(g->addr, r->addr) && is_up(g, now) &&
	    !related(g->addr, r->addr)) {
		char held[NACRE_ADDR_MAX + 1];
		str_copy(held, g->addr, sizeof(held));
		pthread_mutex_unlock(&t->lock);
		LOG_RATELIMITED(LOG_LVL_WARN, "targets",
				"refusing %s-OST%04x from %s: it is served by %s, which is up",
				m->fsname, r->index, r->addr, held);
		return -EADDRINUSE;
	}
	was_up = is_up(g, now);
	if (strcmp(g->addr, r->addr)) {
		str_copy(g->addr, r->addr, sizeof(g->addr));
		changed = 1;
	}
	g->last_hb_ms = now;
	g->st = r->st;
	g->conn_id = conn_id;
	if (changed)
		g->unreachable = 0; /* a new address: the probe judges it afresh */
	pthread_mutex_unlock(&t->lock);

	if (!was_up || !heartbeat)
		LOG_INFO("targets", "%s-OST%04x is up at %s", m->fsname, r->index, r->addr);
	if (changed) {
		struct persist_arg p = {r->index, r->addr};
		int rc = mds_writer_submit(m->writer, persist_op, &p);
		if (rc)
			return rc;
	}
	return 0;
}

int mds_targets_down(struct mds_targets *t)
{
	int64_t now = net_now_ms();
	int n = 0;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		n += !is_up(&t->v[i], now);
	pthread_mutex_unlock(&t->lock);
	return n;
}

int mds_targets_up(struct mds_targets *t, struct mds_ost_info *out, int max)
{
	int64_t now = net_now_ms();
	int n = 0;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n && n < max; i++) {
		if (!is_usable(t, &t->v[i], now))
			continue;
		out[n].index = t->v[i].index;
		out[n].kb_total = t->v[i].st.kb_total;
		out[n].kb_avail = t->v[i].st.kb_avail;
		n++;
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

int mds_targets_addr(struct mds_targets *t, uint32_t index, char *addr, int *up)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&t->lock);
	struct tgt *g = find(t, index, 0);
	if (g && g->addr[0]) {
		str_copy(addr, g->addr, NACRE_ADDR_MAX + 1);
		*up = is_up(g, net_now_ms());
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int mds_targets_list(struct mds_targets *t, struct nacre_target **out)
{
	int64_t now = net_now_ms();
	pthread_mutex_lock(&t->lock);
	struct nacre_target *v = calloc(t->n ? t->n : 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		v[i].type = NACRE_TGT_OST;
		v[i].index = t->v[i].index;
		v[i].up = (uint32_t)is_active(&t->v[i], now);
		str_copy(v[i].addr, t->v[i].addr, sizeof(v[i].addr));
		v[i].st = t->v[i].st;
	}
	int n = (int)t->n;
	pthread_mutex_unlock(&t->lock);
	*out = v;
	return n;
}

void mds_targets_disconnect(struct mds *m, uint64_t conn_id)
{
	struct mds_targets *t = m->targets;
	uint32_t gone[64];
	int n = 0;

	if (!t || !conn_id)
		return;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		struct tgt *g = &t->v[i];
		if (g->conn_id != conn_id)
			continue;
		g->conn_id = 0;
		if (g->last_hb_ms && n < 64)
			gone[n++] = g->index;
		g->last_hb_ms = 0; /* down now, not when its heartbeats are missed */
	}
	pthread_mutex_unlock(&t->lock);
	for (int i = 0; i < n; i++)
		LOG_WARN("targets", "%s-OST%04x is down: its server's connection closed", m->fsname,
			 gone[i]);
}

void mds_targets_reachable(struct mds *m, const char *addr, int ok)
{
	struct mds_targets *t = m->targets;
	uint32_t changed[64];
	int n = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		struct tgt *g = &t->v[i];
		if (strcmp(g->addr, addr) != 0 || g->unreachable == !ok)
			continue;
		g->unreachable = !ok;
		if (n < 64)
			changed[n++] = g->index;
	}
	pthread_mutex_unlock(&t->lock);
	for (int i = 0; i < n; i++) {
		if (ok)
			LOG_INFO("targets", "%s-OST%04x at %s answers the MDS again: new files may "
				 "use it", m->fsname, changed[i], addr);
		else
			LOG_WARN("targets", "%s-OST%04x at %s does not answer the MDS: inactive, no "
				 "new file is striped on it until it does", m->fsname, changed[i],
				 addr);
	}
}

int mds_targets_addrs(struct mds_targets *t, char (*out)[NACRE_ADDR_MAX + 1], int max)
{
	int64_t now = net_now_ms(), n = 0;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n && n < max; i++) {
		const struct tgt *g = &t->v[i];
		int dup = 0;
		if (!is_up(g, now))
			continue;
		for (int64_t k = 0; k < n && !dup; k++)
			dup = strcmp(out[k], g->addr) == 0;
		if (!dup)
			str_copy(out[n++], g->addr, NACRE_ADDR_MAX + 1);
	}
	pthread_mutex_unlock(&t->lock);
	return (int)n;
}

void mds_targets_space(struct mds_targets *t, struct nacre_statfs *sum)
{
	int64_t now = net_now_ms();
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		if (!is_up(&t->v[i], now))
			continue;
		sum->kb_total += t->v[i].st.kb_total;
		sum->kb_free += t->v[i].st.kb_free;
		sum->kb_avail += t->v[i].st.kb_avail;
	}
	pthread_mutex_unlock(&t->lock);
}
