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
 * Client: struct rpc_conn is one connection to one server, shared by many threads. Each call
 * gets a fresh xid; requests are pipelined and replies matched by xid, read by whichever
 * waiting caller holds the reader role (no receiver thread).
 * A lost connection is re-established (with the handshake) on the next call; a call waits
 * for a missing server until its deadline, then fails with -ETIMEDOUT (the caller maps it to
 * EIO for applications).
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
};

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

struct rpc_server_conf {
	const char *listen_addr; /* "host:port"; port 0 = ephemeral */
	const char *fsname;      /* CONNECT must name it */
	const char *server_name; /* returned in CONNECT, e.g. "nacre-MDT0000" */
	const struct nacre_key *key;
	int nworkers; /* worker threads; 0 = 8 */
	rpc_handler_fn handler;
	rpc_disconnect_fn on_disconnect; /* may be NULL */
	rpc_inline_fn runs_inline;       /* may be NULL: every request goes to a worker */
	void *arg;
};

/* Binds the listening socket. Returns 0 or -errno; on error writes a sentence naming the
 * address to err. *out is owned by the caller (rpc_server_destroy). */
int rpc_server_create(const struct rpc_server_conf *conf, struct rpc_server **out, char *err,
		      size_t err_len);
uint16_t rpc_server_port(const struct rpc_server *s);
/* Runs the event loop and workers until rpc_server_stop(). Returns 0 or -errno. */
int rpc_server_run(struct rpc_server *s);
/* Asks the loop to stop; async-signal-safe (writes to an eventfd). */
void rpc_server_stop(struct rpc_server *s);
/* Frees s after rpc_server_run returned. NULL is fine. */
void rpc_server_destroy(struct rpc_server *s);

/* ---------------- client ---------------- */

struct rpc_conn;

struct rpc_conn_conf {
	const char *addr;       /* "host:port" */
	const char *fsname;
	const char *name;       /* our name for the server's logs */
	const struct nacre_key *key;
	int timeout_ms;         /* default deadline of a call; 0 = 30000 */
};

/* Creates a connection object. Does not connect: the first call (or rpc_conn_connect)
 * does. The conf strings are copied. Thread-safe to use from many threads afterwards. */
int rpc_conn_create(const struct rpc_conn_conf *conf, struct rpc_conn **out);
/* Connects and authenticates now, within timeout_ms. Returns 0, -ECONNREFUSED, -ETIMEDOUT,
 * -NACRE_EAUTH, -NACRE_EFSNAME, -NACRE_EPROTO_VERSION...; writes a sentence naming the
 * server and the cause to err. */
int rpc_conn_connect(struct rpc_conn *c, int timeout_ms, char *err, size_t err_len);
/* Closes the socket (fails calls in flight) and frees c. NULL is fine. */
void rpc_conn_destroy(struct rpc_conn *c);
const char *rpc_conn_addr(const struct rpc_conn *c);
/* The server's name from CONNECT ("" before the first connect). */
const char *rpc_conn_server_name(const struct rpc_conn *c);

/* A reply. body is a heap copy owned by the reply; bulk is either the caller's buffer (see
 * rpc_call_args.reply_bulk) or a heap copy owned by the reply. */
struct rpc_msg {
	struct wire_hdr hdr;
	uint8_t *body;
	uint32_t body_len;
	uint8_t *bulk;
	uint32_t bulk_len;
	int bulk_owned;
};
void rpc_msg_free(struct rpc_msg *m); /* NULL is fine */

enum {
	RPC_IDEMPOTENT = 1 << 0, /* may be resent after a reconnect (OSS I/O, reads) */
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

#endif
