/* conn_limits.h - what a server allows a peer before and after authentication (rpc.h
 * "Limits", docs/security.md "Before authentication").
 *
 * The policy half of the server transport's defences, kept apart from the socket code:
 *  - which frames an un-authenticated connection may send (conn_limits_check_hdr), decided
 *    from the header alone, before any payload buffer exists;
 *  - the un-authenticated connections: caps per peer address and in total, and the
 *    handshake deadline, with a list in accept order so that the sweep and the eviction of
 *    the oldest cost O(1) per connection they touch, never O(connections);
 *  - the reasons a connection is refused or closed: a counter per reason
 *    (nacre_rpc_server_refused_total{reason=...}) and a rate-limited log line naming the
 *    peer.
 *
 * Threading: a struct conn_limits belongs to one server's event thread; nothing here locks.
 * The metrics are process-wide (atomic).
 */
#ifndef NACRE_CONN_LIMITS_H
#define NACRE_CONN_LIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/wire.h"

/* Defaults (rpc_server_conf fields of 0 take these). Why these numbers: docs/security.md. */
#define CL_HANDSHAKE_MS 5000      /* CONNECT + AUTH must be done within it */
#define CL_UNAUTH_PER_PEER 32     /* un-authenticated connections from one address */
#define CL_UNAUTH_MAX 256         /* un-authenticated connections in total, and at most a
				   * quarter of the descriptor limit */
#define CL_TX_UNAUTH_MAX 4096     /* reply bytes queued for an un-authenticated peer */
#define CL_TX_HIGH (16u << 20)    /* reply bytes queued: above it, requests are not read */
#define CL_TX_STALL_MS 30000      /* replies queued and not a byte taken for so long: closed */
#define CL_INFLIGHT_MAX 1024      /* requests at workers, all connections together */
#define CL_INFLIGHT_BYTES_MAX (1024ull << 20) /* their payload bytes */
#define CL_ACCEPT_BACKOFF_MS 100  /* accept() out of descriptors with nothing to evict */

/* Why a connection was refused or closed. Values index the reason table (conn_limits.c). */
enum cl_reason {
	CL_OK = 0,
	CL_PEER_CAP,         /* too many un-authenticated connections from this address */
	CL_TOTAL_CAP,        /* too many in total: the oldest was closed for a new one */
	CL_FD_LIMIT,         /* out of descriptors: the oldest was closed for a new one */
	CL_HANDSHAKE_TIMEOUT,/* CONNECT + AUTH not done within the deadline */
	CL_PREAUTH_OPCODE,   /* an opcode other than CONNECT/AUTH before AUTH */
	CL_PREAUTH_SIZE,     /* a handshake frame with bulk or a body over its limit */
	CL_HANDSHAKE_ORDER,  /* a second CONNECT, AUTH before CONNECT, a second AUTH */
	CL_TX_OVERFLOW,      /* replies queued over the connection's bound */
	CL_TX_STALL,         /* replies queued and not read for CL_TX_STALL_MS */
	CL_REASON_COUNT_
};

/* The metric label of a reason ("peer_cap"), static. */
const char *cl_reason_name(enum cl_reason r);

/* Decides a frame header of a connection that has not authenticated (connected: CONNECT
 * was answered). Returns CL_OK when the frame may be read, else the reason to close.
 * A pure function. */
enum cl_reason conn_limits_check_hdr(const struct wire_hdr *h, int connected, int authed);

/* An un-authenticated connection as the limits track it; embedded in the server's
 * connection struct. */
struct cl_entry {
	struct cl_entry *prev, *next; /* the un-authenticated list, oldest first */
	struct cl_peer *peer;         /* its address's count */
	int64_t deadline_ms;          /* handshake deadline */
	int listed;
};

struct cl_peer; /* one address's count, in a small hash table */

struct conn_limits {
	int handshake_ms, per_peer, max_total;
	struct cl_entry *head, *tail; /* un-authenticated, oldest first */
	int count;
	struct cl_peer **table;       /* by address hash; chains */
	size_t table_size;
};

/* Sets the limits (0 = the default). Returns 0 or -ENOMEM. */
int conn_limits_init(struct conn_limits *l, int handshake_ms, int per_peer, int max_total);
void conn_limits_fini(struct conn_limits *l);

/* Admits a new connection from addr into the un-authenticated list (e, the caller's).
 * Returns CL_OK, or CL_PEER_CAP when e is not admitted (close the connection; also when
 * out of memory). After an admission the caller closes every conn_limits_excess entry. */
enum cl_reason conn_limits_admit(struct conn_limits *l, struct cl_entry *e,
				 const struct sockaddr_storage *addr, int64_t now_ms);
/* The oldest entry while there are more than the total cap (which follows the descriptor
 * limit, re-read at every call: prlimit may lower it under a running server), else NULL.
 * The caller closes it (and conn_limits_leave's it) before asking again. */
struct cl_entry *conn_limits_excess(struct conn_limits *l);
/* Takes e off the list (authenticated or closed). Fine on an entry not listed. */
void conn_limits_leave(struct conn_limits *l, struct cl_entry *e);
/* The oldest un-authenticated entry if its deadline passed at now_ms, else NULL. */
struct cl_entry *conn_limits_expired(struct conn_limits *l, int64_t now_ms);
/* The oldest un-authenticated entry, or NULL. */
struct cl_entry *conn_limits_oldest(struct conn_limits *l);
/* Milliseconds until the oldest entry's deadline (0 if passed), or -1 with none. */
int conn_limits_next_ms(const struct conn_limits *l, int64_t now_ms);

/* Counts a refusal (metric) and logs it, rate-limited, naming peer and the reason with
 * detail (may be NULL). */
void conn_limits_refused(enum cl_reason r, const char *peer, const char *detail);
/* Number of connections refused or closed for r since start (all servers in the process). */
uint64_t conn_limits_refused_count(enum cl_reason r);

/* Back-off of accept() at the descriptor limit: logs once per episode. */
struct cl_backoff {
	int active;            /* the listening socket is out of epoll */
	int64_t until_ms;
	int episode;           /* logged; ends at the next successful accept */
};
/* accept() failed with err (EMFILE, ENFILE, ENOBUFS, ENOMEM): start a pause, log once. */
void cl_backoff_start(struct cl_backoff *b, int err, const char *server, int64_t now_ms);
/* A connection was accepted: the episode (if any) is over; logs its end. */
void cl_backoff_accepted(struct cl_backoff *b, const char *server);

#endif
