/* conn_limits.c - limits on un-authenticated connections and the reasons for refusals (see
 * conn_limits.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/log.h"
#include "common/metrics.h"
#include "proto/conn_limits.h"

#define SUBSYS "rpc"
#define PEER_BUCKETS 1024u

struct cl_peer {
	struct cl_peer *next; /* hash chain */
	uint8_t addr[16];     /* IPv4 as ::ffff:a.b.c.d */
	int count;            /* un-authenticated connections from it */
};

static const struct {
	const char *name; /* metric label */
	const char *text; /* log line */
} reasons[CL_REASON_COUNT_] = {
	[CL_OK] = { "ok", "ok" },
	[CL_PEER_CAP] = { "peer_cap", "too many un-authenticated connections from this address" },
	[CL_TOTAL_CAP] = { "total_cap",
			   "oldest un-authenticated connection closed: too many in total" },
	[CL_FD_LIMIT] = { "fd_limit",
			  "oldest un-authenticated connection closed: out of descriptors" },
	[CL_HANDSHAKE_TIMEOUT] = { "handshake_timeout", "handshake not done in time" },
	[CL_PREAUTH_OPCODE] = { "preauth_opcode", "request before authenticating" },
	[CL_PREAUTH_SIZE] = { "preauth_size", "handshake frame over its size limit" },
	[CL_HANDSHAKE_ORDER] = { "handshake_order", "handshake frames out of order" },
	[CL_TX_OVERFLOW] = { "tx_overflow", "replies queued over the bound" },
	[CL_TX_STALL] = { "tx_stall", "peer does not read its replies" },
};

static struct metric *reason_metric[CL_REASON_COUNT_]; /* published atomically */

const char *cl_reason_name(enum cl_reason r)
{
	return (unsigned)r < CL_REASON_COUNT_ ? reasons[r].name : "unknown";
}

static struct metric *metric_of(enum cl_reason r)
{
	struct metric *m = __atomic_load_n(&reason_metric[r], __ATOMIC_ACQUIRE);
	char labels[48];

	if (m)
		return m;
	snprintf(labels, sizeof(labels), "reason=\"%s\"", reasons[r].name);
	/* the registry returns the same metric for the same name and labels */
	m = metrics_counter("nacre_rpc_server_refused_total", labels,
			    "Connections refused or closed by the transport's limits, by reason");
	__atomic_store_n(&reason_metric[r], m, __ATOMIC_RELEASE);
	return m;
}

void conn_limits_refused(enum cl_reason r, const char *peer, const char *detail)
{
	/* a budget per reason, so that a flood of one kind does not hide the others; the
	 * event thread is the only caller per server (a race between servers in one
	 * process costs at most a line more or less) */
	static struct log_ratelimit rl[CL_REASON_COUNT_];

	if ((unsigned)r >= CL_REASON_COUNT_ || r == CL_OK)
		return;
	metrics_add(metric_of(r), 1);
	if (LOG_LVL_WARN <= log_cur_level && log_ratelimit_allow(&rl[r]))
		log_write(LOG_LVL_WARN, SUBSYS, "closed connection from %s: %s%s%s", peer,
			  reasons[r].text, detail ? ": " : "", detail ? detail : "");
}

uint64_t conn_limits_refused_count(enum cl_reason r)
{
	if ((unsigned)r >= CL_REASON_COUNT_)
		return 0;
	return (uint64_t)metrics_value(metric_of(r));
}

enum cl_reason conn_limits_check_hdr(const struct wire_hdr *h, int connected, int authed)
{
	if (authed)
		return h->opcode == WIRE_OP_CONNECT || h->opcode == WIRE_OP_AUTH
			       ? CL_HANDSHAKE_ORDER
			       : CL_OK;
	if ((h->opcode != WIRE_OP_CONNECT && h->opcode != WIRE_OP_AUTH) ||
	    (h->flags & WIRE_FLAG_REPLY))
		return CL_PREAUTH_OPCODE;
	if (h->bulk_len || h->body_len > WIRE_HANDSHAKE_BODY_MAX)
		return CL_PREAUTH_SIZE;
	if ((h->opcode == WIRE_OP_CONNECT) == (connected != 0))
		return CL_HANDSHAKE_ORDER; /* a second CONNECT, or AUTH first */
	return CL_OK;
}

/* ---- the un-authenticated list and per-address counts ---- */

int conn_limits_init(struct conn_limits *l, int handshake_ms, int per_peer, int max_total)
{
	memset(l, 0, sizeof(*l));
	l->handshake_ms = handshake_ms > 0 ? handshake_ms : CL_HANDSHAKE_MS;
	l->per_peer = per_peer > 0 ? per_peer : CL_UNAUTH_PER_PEER;
	l->max_total = max_total > 0 ? max_total : CL_UNAUTH_MAX;
	l->table_size = PEER_BUCKETS;
	l->table = calloc(l->table_size, sizeof(*l->table));
	return l->table ? 0 : -ENOMEM;
}

void conn_limits_fini(struct conn_limits *l)
{
	if (!l->table)
		return;
	for (size_t i = 0; i < l->table_size; i++) {
		struct cl_peer *p, *n;
		for (p = l->table[i]; p; p = n) {
			n = p->next;
			free(p);
		}
	}
	free(l->table);
	l->table = NULL;
}

static void addr_key(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	} else if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
}

static size_t addr_hash(const uint8_t a[16], size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ a[i]) * 1099511628211ull;
	return (size_t)(h % n);
}

static struct cl_peer *peer_get(struct conn_limits *l, const uint8_t a[16])
{
	struct cl_peer **b = &l->table[addr_hash(a, l->table_size)];
	struct cl_peer *p;

	for (p = *b; p; p = p->next)
		if (memcmp(p->addr, a, 16) == 0)
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->addr, a, 16);
	p->next = *b;
	*b = p;
	return p;
}

static void peer_put(struct conn_limits *l, struct cl_peer *p)
{
	struct cl_peer **b;

	if (--p->count > 0)
		return;
	for (b = &l->table[addr_hash(p->addr, l->table_size)]; *b; b = &(*b)->next) {
		if (*b == p) {
			*b = p->next;
			break;
		}
	}
	free(p);
}

/* The total cap: the configured one, and at most a quarter of the descriptor limit, so
 * that peers without the key never hold the descriptors the server needs for its clients
 * and files. Re-read every time (a cheap system call, next to an accept): prlimit may
 * change it under a running server. */
static int total_cap(const struct conn_limits *l)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < (rlim_t)l->max_total)
		return rl.rlim_cur / 4 > 0 ? (int)(rl.rlim_cur / 4) : 1;
	return l->max_total;
}

enum cl_reason conn_limits_admit(struct conn_limits *l, struct cl_entry *e,
				 const struct sockaddr_storage *addr, int64_t now_ms)
{
	uint8_t key[16];
	struct cl_peer *p;

	addr_key(addr, key);
	p = peer_get(l, key);
	if (!p)
		return CL_PEER_CAP;
	if (p->count >= l->per_peer)
		return CL_PEER_CAP; /* p has count > 0: it stays in the table */
	p->count++;
	e->peer = p;
	e->deadline_ms = now_ms + l->handshake_ms;
	e->next = NULL;
	e->prev = l->tail;
	if (l->tail)
		l->tail->next = e;
	else
		l->head = e;
	l->tail = e;
	e->listed = 1;
	l->count++;
	return CL_OK;
}

struct cl_entry *conn_limits_excess(struct conn_limits *l)
{
	return l->count > total_cap(l) ? l->head : NULL; /* never the newest: cap >= 1 */
}

void conn_limits_leave(struct conn_limits *l, struct cl_entry *e)
{
	if (!e->listed)
		return;
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	e->prev = e->next = NULL;
	e->listed = 0;
	l->count--;
	peer_put(l, e->peer);
	e->peer = NULL;
}

struct cl_entry *conn_limits_expired(struct conn_limits *l, int64_t now_ms)
{
	return l->head && l->head->deadline_ms <= now_ms ? l->head : NULL;
}

struct cl_entry *conn_limits_oldest(struct conn_limits *l)
{
	return l->head;
}

int conn_limits_next_ms(const struct conn_limits *l, int64_t now_ms)
{
	if (!l->head)
		return -1;
	if (l->head->deadline_ms <= now_ms)
		return 0;
	return (int)(l->head->deadline_ms - now_ms);
}

/* ---- accept back-off ---- */

void cl_backoff_start(struct cl_backoff *b, int err, const char *server, int64_t now_ms)
{
	b->active = 1;
	b->until_ms = now_ms + CL_ACCEPT_BACKOFF_MS;
	if (!b->episode) {
		b->episode = 1;
		LOG_WARN(SUBSYS,
			 "%s: accept: %s; new connections wait in the backlog, retried every "
			 "%d ms (raise the descriptor limit: ulimit -n, LimitNOFILE=)",
			 server, strerror(err), CL_ACCEPT_BACKOFF_MS);
	}
}

void cl_backoff_accepted(struct cl_backoff *b, const char *server)
{
	if (b->episode) {
		b->episode = 0;
		LOG_INFO(SUBSYS, "%s: accepting connections again", server);
	}
}
