/* rpc.h - request/reply transport over TCP, for servers and for clients.
 *
 * Server: one epoll thread accepts connections and reads frames; complete requests go to a
 * bounded pool of worker threads that call the handler; replies are queued back to the
 * event thread through an eventfd and written without blocking. CONNECT and AUTH (the
 * cluster-key handshake) are answered by the transport itself: a handler only ever sees
 * requests from authenticated peers. A malformed frame (bad magic, version, length over its
 * limit, bad bulk crc) is logged (rate-limited) and the connection is closed; an unknown
 * opcode is the handler's to refuse with -EOPNOTSUPP.
 *
 * Limits (docs/security.md "Before authentication" says why these numbers): a peer without
 * the key costs the server a few kilobytes and a few seconds, whatever it sends.
 *  - Before AUTH a connection may send CONNECT, then AUTH, nothing else: bodies of at most
 *    WIRE_HANDSHAKE_BODY_MAX (1 KiB), no bulk, checked from the header before any payload
 *    buffer is allocated. Anything else is logged (rate-limited, with the peer's address
 *    and the reason), counted in nacre_rpc_server_refused_total{reason} and closed.
 *  - The handshake must be done within handshake_ms (5 s) of accept.
 *  - At most unauth_per_peer (32) un-authenticated connections per address: one more is
 *    closed at once. At most unauth_max (256, and never above a quarter of the descriptor
 *    limit) in total: beyond, the oldest un-authenticated one is closed to make room (a
 *    real client's handshake takes one round trip, so the oldest is the likeliest idle).
 *  - Replies queued for an un-authenticated peer: 4 KiB, else closed. For an
 *    authenticated one: above 16 MiB queued its requests are no longer read
 *    (backpressure), so the queue stays under 16 MiB + the replies of its requests in
 *    flight; a peer that takes no byte of its queued replies for tx_stall_ms (30 s) is
 *    closed.
 *  - Requests at workers: CONN_MAX_INFLIGHT (32) per connection and max_inflight (1024) /
 *    max_inflight_bytes (1 GiB) over all connections; beyond, authenticated connections are
 *    not read until the workers catch up (deferred requests do not count).
 *  - accept() out of descriptors closes the oldest un-authenticated connection to make
 *    room; with none, the listening socket rests 100 ms (no spinning), logged once.
 *
 * Wire security (wire.h, proto/sec.h): each connection has a flavour, null, integrity or
 * privacy, asked for by the client and at least the server's minimum for that peer. On an
 * integrity or privacy connection every frame after AUTH is sealed (AES-256-GCM, numbered
 * per direction) by the transport on both sides; a frame that fails its tag is logged
 * (rate-limited, with the peer and the reason) and its connection closed. Handlers and
 * callers see plaintext and never know. Null costs nothing.
 *
 * Client: struct rpc_conn is one connection to one server (or to one of its failover
 * addresses), shared by many threads. Each call gets a fresh xid; requests are pipelined and
 * replies matched by xid, read by whichever waiting caller holds the reader role (no
 * receiver thread). A lost connection is re-established (with the handshake) by the next
 * caller. A call waits for a server that does not answer for the connection's recovery
 * timeout, counted from the later of its start and the last time the server was heard
 * from; then it fails with -ETIMEDOUT (the caller maps it to EIO for applications).
 *
 * Recovery (WIRE_FEAT_RECOVERY, docs/recovery.md): a connection with a client id is a
 * session. Every request of a session may be resent after a reconnect (the server answers a
 * resent one from its reply cache), so nothing is failed because a socket broke; a request
 * whose change the server has not yet put on disk is kept after its reply and replayed if
 * the server restarts, before any other request goes out.
 */
#ifndef NACRE_RPC_H
#define NACRE_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/key.h"
#include "proto/cursor.h"
#include "proto/wire.h"

/* ---------------- server ---------------- */

struct rpc_server;
struct bufcache;

/* What a handler sees of one request. Pointers are valid until the handler returns. */
struct rpc_request {
	const struct wire_hdr *hdr;
	const uint8_t *body;
	uint32_t body_len;
	const uint8_t *bulk; /* crc already verified */
	uint32_t bulk_len;
	uint64_t conn_id;     /* stable id of the connection, for per-client state */
	const char *peer;     /* "host:port" of the peer, for log messages */
	const char *peer_name;/* the name the peer gave in CONNECT */
	int peer_role;        /* KEY_ROLE_* of the key the peer proved */
	const char *key_name; /* the proven name of a client or admin key; "" for a server */
	uint64_t client_id;   /* the peer's session id from CONNECT, 0 = none */
	uint64_t features;    /* WIRE_FEAT_* negotiated in CONNECT */
	const struct wire_req_env *env; /* NULL on a connection without envelopes */
	const uint8_t *replay_reply; /* a REPLAY's first reply (env->replay_len bytes), which
				      * is not part of body */
	int resumed;          /* the handler runs again after rpc_resume */
	void *job_;           /* the transport's, for rpc_defer */
};

/* What a handler answers. body is a growable cursor (limit WIRE_BODY_MAX) set up by the
 * transport; bulk may be set to a buffer of bulk_len bytes, from rpc_reply_bulk_alloc or
 * malloc, which the transport releases after sending. The handler's return value is the
 * reply status. */
struct rpc_reply {
	struct wire_cursor body;
	void *bulk;
	uint32_t bulk_len;
	struct bufcache *bulk_cache; /* the transport's; rpc_reply_bulk_alloc takes from it */
	size_t bulk_cap;             /* nonzero: bulk came from bulk_cache */
	struct wire_rep_env env;     /* transno set by the handler; last_committed by the
				      * transport (rpc_server_conf.last_committed) */
};

/* A handler that cannot answer yet (the MDS in recovery, a lock that must wait) calls
 * rpc_defer and returns RPC_DEFER: the request stays open, counted against its
 * connection's in-flight limit, until rpc_answer or rpc_resume, which must follow exactly
 * once, from any thread. */
#define RPC_DEFER (-(1 << 30))
struct rpc_deferred;
/* The open request of a handler that is about to return RPC_DEFER. Never NULL. */
struct rpc_deferred *rpc_defer(const struct rpc_request *req);
/* Answers a deferred request (body of len bytes, copied; env may be NULL). If its
 * connection closed meanwhile the answer is dropped. */
void rpc_answer(struct rpc_deferred *d, int status, const void *body, uint32_t len,
		const struct wire_rep_env *env);
/* Runs the handler of a deferred request again, on a worker, with req->resumed set. */
void rpc_resume(struct rpc_deferred *d);
/* The deferred request's connection, opcode and xid, for the code that parks it. */
uint64_t rpc_deferred_conn(const struct rpc_deferred *d);
uint16_t rpc_deferred_opcode(const struct rpc_deferred *d);
uint64_t rpc_deferred_xid(const struct rpc_deferred *d);

/* A bulk buffer of len bytes for rep from the server's cache of large buffers, which reuses
 * them instead of faulting in fresh memory for every reply (common/bufcache.h). Set it as
 * rep->bulk, or give it back with rpc_reply_bulk_free. One per reply. NULL if out of memory. */
void *rpc_reply_bulk_alloc(struct rpc_reply *rep, size_t len);
void rpc_reply_bulk_free(struct rpc_reply *rep, void *buf);

/* Called on a worker thread, possibly on many at once. */
typedef int (*rpc_handler_fn)(void *arg, const struct rpc_request *req, struct rpc_reply *rep);
/* Called on a worker thread after a connection closed, with no handler running for it. */
typedef void (*rpc_disconnect_fn)(void *arg, uint64_t conn_id);
/* Whether requests of opcode are short and never block (a few memory lookups): those run
 * on the event thread itself, which saves two thread hand-offs per request. */
typedef int (*rpc_inline_fn)(uint16_t opcode);
/* Called on the event thread when a peer that negotiated WIRE_FEAT_RECOVERY connects: fills
 * rep->session, recovery_ms and last_committed for it. Must not block. */
typedef void (*rpc_connect_fn)(void *arg, uint64_t conn_id, const struct wire_connect_req *req,
			       struct wire_connect_rep *rep);
/* Called on the event thread as soon as an authenticated connection closes, before its
 * requests at the workers have returned: time to answer the ones it deferred. Must not
 * block. */
typedef void (*rpc_close_fn)(void *arg, uint64_t conn_id);
/* Whether a client or admin key that proved itself may connect (its generation is current,
 * it is not revoked): 0 or a negative error (-EKEYREVOKED...) the peer is answered with.
 * Called on the event thread at AUTH and by rpc_server_recheck_keys; must not block. */
typedef int (*rpc_key_check_fn)(void *arg, int role, const char *name, uint64_t gen);

struct rpc_server_conf {
	const char *listen_addr; /* "host:port"; port 0 = ephemeral */
	const char *fsname;      /* CONNECT must name it */
	const char *server_name; /* returned in CONNECT, e.g. "nacre-MDT0000" */
	const struct nacre_key *key;
	int nworkers; /* worker threads; 0 = 8 */
	rpc_handler_fn handler;
	rpc_disconnect_fn on_disconnect; /* may be NULL */
	rpc_inline_fn runs_inline;       /* may be NULL: every request goes to a worker */
	rpc_connect_fn on_connect;       /* may be NULL: every session is NEW */
	rpc_close_fn on_close;           /* may be NULL */
	uint64_t (*last_committed)(void *arg); /* for reply envelopes; may be NULL (0) */
	int allow_fault_set;             /* answer FAULT_SET (tests, fault injection) */
	int sec_min;                     /* WIRE_SEC_*: the least flavour a peer gets
					  * (--sec-min); 0 = null */
	/* May be NULL (sec_min for every peer). The least flavour for a peer, by its address
	 * and CONNECT name (the hook for nodemap rules); *rule is set to a static string naming
	 * what set it, for the refusal ("--sec-min", "nodemap rule X"). Called on the event
	 * thread at CONNECT (to choose) and again at AUTH, once the peer proved its key (a
	 * connection below the answer is then refused); must not block. */
	int (*sec_min_for)(void *arg, const char *peer, const char *peer_name,
			   const char **rule);
	rpc_key_check_fn key_check;      /* may be NULL: client and admin keys are refused */
	void *arg;
	/* Limits (see "Limits" above); 0 takes the default in brackets. */
	int handshake_ms;        /* CONNECT + AUTH within it, or closed [5000] */
	int unauth_per_peer;     /* un-authenticated connections per address [32] */
	int unauth_max;          /* ... in total, and at most nofile/4 [256] */
	int max_inflight;        /* requests at workers, all connections [1024] */
	uint64_t max_inflight_bytes; /* their payload bytes [1 GiB] */
	int tx_stall_ms;         /* replies queued, none taken for so long: closed [30000] */
};

/* Binds the listening socket. Returns 0 or -errno; on error writes a sentence naming the
 * address to err. *out is owned by the caller (rpc_server_destroy). */
int rpc_server_create(const struct rpc_server_conf *conf, struct rpc_server **out, char *err,
		      size_t err_len);
uint16_t rpc_server_port(const struct rpc_server *s);
/* Random per server start (CONNECT tells it to clients: a new one means a restart). */
uint64_t rpc_server_instance(const struct rpc_server *s);
/* Runs the event loop and workers until rpc_server_stop(). Returns 0 or -errno. */
int rpc_server_run(struct rpc_server *s);
/* Asks the loop to stop; async-signal-safe (writes to an eventfd). */
void rpc_server_stop(struct rpc_server *s);
/* Asks the event thread to run conf.key_check again for every connection of a client or
 * admin key and to close those it refuses now (a revoked key). Thread-safe; returns at once
 * (the connections close within one pass of the loop). */
void rpc_server_recheck_keys(struct rpc_server *s);
/* Frees s after rpc_server_run returned. NULL is fine. */
void rpc_server_destroy(struct rpc_server *s);

/* ---------------- client ---------------- */

struct rpc_conn;

struct rpc_recovery;

/* Called by the thread that reconnected a session to a server instance other than the one
 * it held state with (rep->session says whether the server expects a replay, or has
 * forgotten the client), before any other request uses the new socket. It brings the
 * server back to what this client holds: rpc_recovery_replay, then the caller's opens and
 * locks through rpc_recovery_call. Returns 0, or a negative error to drop the socket and
 * reconnect. */
typedef int (*rpc_recover_fn)(void *arg, struct rpc_recovery *r,
			      const struct wire_connect_rep *rep);

#define RPC_ADDRS_MAX 4 /* failover addresses of one server */

struct rpc_conn_conf {
	const char *addr;       /* "host:port", or failover addresses "host:port,host:port" */
	const char *fsname;
	const char *name;       /* our name for the server's logs */
	const struct nacre_key *key;
	int timeout_ms;         /* per-request limit while the server answers: a request without
				 * its reply after it is resent on a new socket; 0 = 30000 */
	int recovery_timeout_ms;/* how long a call waits for a server that does not answer;
				 * 0 = timeout_ms */
	int connect_timeout_ms; /* one connection attempt; 0 = min(timeout_ms, 10000) */
	uint64_t client_id;     /* nonzero: a session (resend, replay); 0: none */
	uint64_t first_xid;     /* the first request's xid; 0 = the usual (16). A process that
				 * takes up a session another one used starts past any xid of
				 * that one, so no reply the server kept for it answers ours */
	rpc_recover_fn recover; /* sessions: brings a restarted server back; may be NULL */
	void *recover_arg;
	/* Servers that may move (OSSes, found through the MDS's target list): after a round of
	 * failed connection attempts, 0 from still_here says the server is no longer at this
	 * connection's addresses; the call then fails at once with -EHOSTUNREACH, for the
	 * caller to send it where the server went, instead of waiting out recovery_timeout
	 * here. Called without the connection's locks; may be NULL. */
	int (*still_here)(void *arg);
	void *still_here_arg;
	int sec;                /* WIRE_SEC_*: the flavour to ask for (0 = null) */
	int sec_exact;          /* 1: exactly sec (a mount's sec=): a server that requires more
				 * refuses (-NACRE_ESEC); 0: the server may raise it to its
				 * minimum for this client */
};

/* Creates a connection object. Does not connect: the first call (or rpc_conn_connect)
 * does. The conf strings are copied. Thread-safe to use from many threads afterwards. */
int rpc_conn_create(const struct rpc_conn_conf *conf, struct rpc_conn **out);
/* Connects and authenticates now, within timeout_ms. Returns 0, -ECONNREFUSED, -ETIMEDOUT,
 * -NACRE_EAUTH, -NACRE_EFSNAME, -NACRE_EPROTO_VERSION, -NACRE_ESEC (the flavour asked for is
 * below the server's minimum, or the server has no wire security)...; writes a sentence
 * naming the server and the cause to err (for -NACRE_ESEC: the flavour and the rule). */
int rpc_conn_connect(struct rpc_conn *c, int timeout_ms, char *err, size_t err_len);
/* Closes the socket (fails calls in flight) and frees c. NULL is fine. */
void rpc_conn_destroy(struct rpc_conn *c);
/* The address in use (the first failover address before any connect). */
const char *rpc_conn_addr(const struct rpc_conn *c);
/* Bumped for every new socket (a reconnect, maybe to a restarted server or another failover
 * address): a caller that keeps state on the server notices it must send it again. */
uint64_t rpc_conn_gen(struct rpc_conn *c);
/* While a new socket recovers a restarted server (its recovery hook runs): when
 * (net_now_ms) the socket before it was found broken, that is, when the server went away
 * at the latest; 0 otherwise. Thread-safe. */
int64_t rpc_conn_lost_before_recovery(struct rpc_conn *c);
/* The server's name from CONNECT ("" before the first connect). */
const char *rpc_conn_server_name(const struct rpc_conn *c);
/* The flavour of the current (or last) socket, WIRE_SEC_*. Thread-safe. */
int rpc_conn_sec(struct rpc_conn *c);
/* The WIRE_FEAT_* the server agreed to on the current (or last) socket. Thread-safe. */
uint64_t rpc_conn_features(struct rpc_conn *c);
/* 1 while the connection replays its requests to a restarted server: its other calls
 * wait until that server's recovery ends. Thread-safe. */
int rpc_conn_recovering(struct rpc_conn *c);

/* A connection's state, as Lustre names an import's. */
enum {
	RPC_STATE_NEW,        /* never connected */
	RPC_STATE_CONNECTING, /* a thread is connecting */
	RPC_STATE_REPLAY,     /* replaying to a restarted server */
	RPC_STATE_FULL,       /* connected */
	RPC_STATE_DISCONN,    /* was connected; the next call connects again */
	RPC_STATE_CLOSED,     /* our key was revoked or replaced: calls fail at once */
};
/* A snapshot of a connection for lctl's import file. */
struct rpc_conn_info {
	int state;                       /* RPC_STATE_* */
	char current[NACRE_ADDR_MAX + 1]; /* the address in use, or tried next */
	char addrs[NACRE_ADDR_LIST_MAX]; /* every address, comma-separated */
	char server[NACRE_NAME_MAX + 1]; /* the server's name from CONNECT */
	uint64_t features;               /* WIRE_FEAT_* agreed on the current or last socket */
	uint64_t gen;                    /* sockets so far */
	uint64_t last_committed;         /* from the server's replies */
	int sec;                         /* WIRE_SEC_* of the current or last socket */
	int64_t heard_ms;                /* net_now_ms when the server was last heard; 0 never */
};
/* Thread-safe. */
void rpc_conn_info(struct rpc_conn *c, struct rpc_conn_info *out);

/* A reply. body is a heap copy owned by the reply; bulk is either the caller's buffer (see
 * rpc_call_args.reply_bulk) or a heap copy owned by the reply. */
struct rpc_msg {
	struct wire_hdr hdr;
	struct wire_rep_env env; /* zero on a connection without envelopes */
	uint8_t *body;
	uint32_t body_len;
	uint8_t *bulk;
	uint32_t bulk_len;
	int bulk_owned;
};
void rpc_msg_free(struct rpc_msg *m); /* NULL is fine */

enum {
	RPC_IDEMPOTENT = 1 << 0, /* may be resent after a reconnect even without a session */
	RPC_NO_TIMEOUT = 1 << 1, /* waits on the server by design (a blocking lock): no
				  * per-request limit; the recovery timeout still applies */
};

struct rpc_call_args {
	uint16_t opcode;
	uint32_t flags;        /* RPC_* */
	const void *body;
	uint32_t body_len;
	const struct iovec *bulk; /* request bulk, may be NULL; borrowed until the call ends */
	int bulk_iovcnt;
	void *reply_bulk;         /* if set, reply bulk is received straight into this buffer */
	uint32_t reply_bulk_cap;  /* its size; a larger reply bulk fails with -EPROTO */
	int timeout_ms;           /* 0 = the connection's default */
};

struct rpc_pending;

/* Starts a call and returns at once; many may be in flight. *out must be passed to
 * rpc_wait exactly once. Returns 0 or a negative error (nothing to wait for then). */
int rpc_start(struct rpc_conn *c, const struct rpc_call_args *a, struct rpc_pending **out);
/* Waits for the reply. On success *reply is the reply (the status is in reply->hdr.status,
 * also returned if negative: the reply is then still set so error bodies can be read).
 * Transport errors return negative with *reply NULL. Frees p. */
int rpc_wait(struct rpc_pending *p, struct rpc_msg **reply);
/* rpc_start + rpc_wait. */
int rpc_call(struct rpc_conn *c, const struct rpc_call_args *a, struct rpc_msg **reply);

/* Requests kept for replay now (answered, not yet on disk). Thread-safe. */
int rpc_conn_retained(struct rpc_conn *c);

/* ---- inside an rpc_recover_fn ---- */
/* Replays every request kept for replay, in the server's commit order, with WIRE_ENV_REPLAY.
 * A replay the server refuses is logged and dropped (the application was told it
 * succeeded: the log line names it). Returns 0 or a transport error. */
int rpc_recovery_replay(struct rpc_recovery *r);
/* One call on the recovering socket, with env_flags (WIRE_ENV_*) in its envelope and, for a
 * WIRE_ENV_REPLAY, the body of the request's first reply (first_len bytes; NULL/0: none)
 * after its own. Returns as rpc_call. */
int rpc_recovery_call(struct rpc_recovery *r, uint16_t opcode, uint32_t env_flags,
		      const void *body, uint32_t body_len, const void *first_reply,
		      uint32_t first_len, struct rpc_msg **reply);

/* ---------------- peers' keys (peer_auth.c) ---------------- */

/* The key the peer of a CONNECT proves: cluster itself for a server key, or the client or
 * admin key derived from it for req->key. Returns 0, or -NACRE_EAUTH when no such key can
 * be derived (this server holds no cluster key). */
int rpc_peer_key(const struct nacre_key *cluster, const struct wire_connect_req *req,
		 struct nacre_key *out);
/* Bit masks of roles for rpc_require_role. */
#define RPC_ROLE_BIT(r) (1u << (r))
#define RPC_ROLES_SERVER RPC_ROLE_BIT(KEY_ROLE_SERVER)
#define RPC_ROLES_ADMIN (RPC_ROLE_BIT(KEY_ROLE_SERVER) | RPC_ROLE_BIT(KEY_ROLE_ADMIN))
/* 0 if req's peer proved a key of one of roles; else logs the refusal (rate-limited, with
 * the peer's address, its key's name and what it tried: what, e.g. "register a target")
 * and returns -EACCES. Thread-safe. */
int rpc_require_role(const struct rpc_request *req, unsigned roles, const char *what);

#endif
