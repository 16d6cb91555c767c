/* rpc_client_int.h - what the files of the client side share, inside src/proto only:
 * struct rpc_conn and its parts, and the calls between the three floors:
 *   rpc_client.c        connections, the pending table, the reader, the calls (rpc.h)
 *   rpc_recovery.c      the open xids, the requests kept for replay, and their replay
 *   rpc_client_frame.c  request frames out, reply frames in, on a socket
 * Each calls only the floors below it. The locking rules are in rpc_client.c.
 */
#ifndef NACRE_RPC_CLIENT_INT_H
#define NACRE_RPC_CLIENT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/log.h"
#include "common/net.h"
#include "proto/rpc.h"
#include "proto/sec.h"

#define PENDING_BUCKETS 256
#define PING_XID 3               /* 1 and 2 are the handshake's; calls start at 16 */

enum pend_state { P_UNSENT, P_SENT, P_DONE };

/* A link in c->open: every xid still open (no reply, or kept for replay), in xid order. The
 * head is the ack_xid every request carries. */
struct xid_link {
	struct xid_link *prev, *next;
	uint64_t xid;
};

struct rpc_pending {
	struct rpc_pending *hnext; /* hash chain, protected by c->lock */
	struct rpc_conn *conn;
	uint64_t xid;
	enum pend_state state; /* protected by c->lock */
	uint64_t sent_gen;     /* connection generation it was sent on */
	int status;            /* result when DONE */
	struct rpc_msg *reply; /* when DONE and status came from a reply */
	pthread_cond_t cond;
	int64_t start_ms;      /* rpc_start time */
	int64_t sent_ms;       /* last send; lock */
	int resend;            /* sent before: the next send says WIRE_ENV_RESEND; lock */
	struct rpc_call_args args;
	uint8_t *body_copy;  /* the request body, kept for resends (and replay) */
	int in_table;
	int receiving; /* the reader is reading bulk into args.reply_bulk; protected by lock */
	struct rpc_pending *wnext, *wprev; /* c->waiters, while waiting as a follower */
	int64_t start_us; /* rpc_start time, for the client latency histogram */
	struct xid_link open; /* in c->open until the call ends (or its retained record
			       * takes the place) */
};

/* An answered request whose change is not yet on disk at the server. */
struct rpc_retained {
	struct xid_link open;      /* in c->open, where its pending was */
	struct rpc_retained *next; /* c->retained, in transno order */
	uint16_t opcode;
	uint64_t transno;
	uint8_t *body;             /* the request body, then the first reply's body: a replay
				    * sends both, so the server makes the same FID and layout */
	uint32_t body_len;         /* request bytes */
	uint32_t reply_len;        /* reply bytes after them */
};

/* The reader's side of a socket: small replies come through buf, several per read();
 * what does not fit is read straight into place. */
struct rx_reader {
	int fd;
	size_t off, len; /* buffered bytes: buf[off, len) */
	uint8_t buf[16384];
};

struct rpc_conn {
	char addr_list[RPC_ADDRS_MAX * (NACRE_ADDR_MAX + 1)]; /* as configured, for messages */
	char addrs[RPC_ADDRS_MAX][NACRE_ADDR_MAX + 1];
	int naddrs;
	int cur_addr; /* the address in use or tried next; protected by lock */
	char fsname[NACRE_FSNAME_MAX + 1];
	char name[NACRE_NAME_MAX + 1];
	struct nacre_key key;
	int timeout_ms;
	int recovery_ms;
	int connect_ms;
	uint64_t client_id;
	rpc_recover_fn recover;
	void *recover_arg;
	int (*still_here)(void *arg); /* conf's */
	void *still_here_arg;
	int sec;                   /* flavour to ask for (conf) */
	int sec_exact;             /* the server may not raise it (conf) */

	pthread_mutex_t lock;
	pthread_mutex_t send_lock;
	pthread_cond_t state_cond; /* connection state changes */
	int fd;                    /* -1 when disconnected; protected by lock */
	struct sec_session *sess;  /* fd's sealing state (NULL: null flavour); lives and dies
				    * with fd: tx used under send_lock, rx by the reader */
	int cur_sec;               /* flavour of the current or last socket; lock */
	uint64_t cur_features;     /* WIRE_FEAT_* the server agreed to on it; written under
				    * lock, read without (atomic: asked per request) */
	char refusal[192];         /* why the server refused our flavour; written by the
				    * connecting thread, for describe() */
	int env;                   /* the socket carries envelopes; protected by lock */
	uint64_t gen;              /* bumped per established socket; protected by lock */
	int connecting;            /* a thread is connecting; protected by lock */
	int recovering;            /* that thread replays to a restarted server (atomic) */
	int reader_busy;           /* a waiter is reading replies; protected by lock */
	struct rpc_pending *waiters; /* followers; one becomes the next reader */
	struct rx_reader rx;       /* used by the reader only; reset per socket */
	int shutting_down;         /* protected by lock */
	uint64_t next_xid;         /* protected by lock */
	char server_name[NACRE_NAME_MAX + 1]; /* protected by lock */
	int last_err;              /* last connect error, for messages; protected by lock */
	int key_dead;              /* -EKEYREVOKED/-EKEYEXPIRED: our key was revoked or
				    * replaced, for good (key table entries only move forward):
				    * calls fail at once without dialing; protected by lock */
	int backoff_ms;            /* pause before the next attempt; protected by lock */
	int64_t heard_ms;          /* last time the server was heard from; protected by lock */
	int64_t lost_ms;           /* when the last socket was found broken (0: none); lock */
	int gave_up;               /* a call waited its whole recovery_ms since heard_ms and
				    * failed: until the server is heard again, calls fail after
				    * one connection attempt instead of waiting again; lock */
	int64_t ping_ms;           /* last ping sent; protected by lock */
	int unresponsive;          /* reported as not responding; protected by lock */
	uint64_t instance;         /* the server instance we hold state with; lock */
	uint64_t last_committed;   /* from reply envelopes; protected by lock */
	struct xid_link open;      /* sentinel of the open-xid list; protected by lock */
	struct rpc_retained *retained, *retained_tail; /* protected by lock */
	int nretained;             /* protected by lock */
	struct rpc_pending *table[PENDING_BUCKETS];
};

/* The server was heard from. Called with c->lock held. */
static inline void rpc_heard(struct rpc_conn *c)
{
	c->heard_ms = net_now_ms();
	c->gave_up = 0;
	if (c->unresponsive) {
		c->unresponsive = 0;
		LOG_WARN("rpc", "%s (%s) answers again", c->addrs[c->cur_addr], c->server_name);
	}
}

/* ---- rpc_recovery.c: all with c->lock held, except where said ---- */

/* Puts l (an open call, at xid) at the tail of c->open. */
void rpc_open_link_tail(struct rpc_conn *c, struct xid_link *l, uint64_t xid);
/* Takes l out of c->open; a link not in it is left alone. */
void rpc_open_unlink(struct xid_link *l);
/* The lowest xid still open, the ack_xid every request carries (wire.h, req_env). */
uint64_t rpc_ack_xid(const struct rpc_conn *c);
/* Forgets the oldest retained request. c->retained must not be empty. */
void rpc_retained_pop(struct rpc_conn *c);
/* The server says every transno up to lc is on disk: forgets those requests. */
void rpc_committed_upto(struct rpc_conn *c, uint64_t lc);
/* Keeps p's request and its reply body m for replay (the change is not on disk yet); p's
 * place in c->open passes to the kept copy. Copies what it keeps; without memory the
 * request is not kept (it will not be replayed). */
void rpc_retain(struct rpc_conn *c, struct rpc_pending *p, const struct rpc_msg *m);
/* A reconnected session whose server instance changed (rep): brings the server back on fd
 * (c->recover, else a replay of c->retained) before any other request may use it, with
 * rpc_conn_recovering() true meanwhile. Called without c->lock, by the connecting thread.
 * Returns 0, or a negative error (drop the socket, try again). */
int rpc_run_recovery(struct rpc_conn *c, const char *addr, int fd, struct sec_session *sess,
		     int env, const struct wire_connect_rep *rep);

/* ---- rpc_client_frame.c: no locks; the caller serializes the socket ---- */

/* Writes one request frame: env (NULL: none) before the body, then the bulk (at most 64
 * pieces); sess (NULL: none, or the null flavour) seals it. Returns 0, -E2BIG over the
 * opcode's limits, -EINVAL for too many pieces, or a negative errno of the write. */
int rpc_send_frame(int fd, struct sec_session *sess, uint16_t opcode, uint64_t xid,
		   const struct wire_req_env *env, const void *body, uint32_t body_len,
		   const struct iovec *bulk, int bulk_iovcnt);
/* Reads one whole reply frame synchronously (the handshake, and calls on a recovering socket
 * that nobody else reads): header into *h, body into a heap buffer *body (the caller's to
 * free), bulk discarded, until deadline; sess (may be NULL) opens a sealed frame. Returns 0
 * or a negative error (-EPROTO for a frame that fails its tag), *body NULL then. */
int rpc_read_frame_sync(int fd, struct sec_session *sess, int64_t deadline,
			struct wire_hdr *h, uint8_t **body);
/* Splits a reply body read into m->body into its envelope (m->env) and the message, in
 * place. Returns 0 or -EPROTO. */
int rpc_strip_rep_env(struct rpc_msg *m);

#endif
