/* rpc_server_int.h - what the two files of the server side share, inside src/proto only:
 * the server, its connections and jobs, and the calls between them.
 *   rpc_server_loop.c  the event thread: accepts, reads frames, answers the handshake,
 *                      dispatches requests, writes replies (rpc_server_run)
 *   rpc_server.c       the server's life, the jobs and the worker threads that run handlers,
 *                      reply frames, metrics
 * The loop calls into rpc_server.c, never the other way. The threading rules are in
 * rpc_server.c.
 */
#ifndef NACRE_RPC_SERVER_INT_H
#define NACRE_RPC_SERVER_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/bufcache.h"
#include "proto/conn_limits.h"
#include "proto/rpc.h"
#include "proto/sec.h"

#define RX_BUF 16384 /* per connection: many small requests per read() */

struct tx_frame {
	struct tx_frame *next;
	struct iovec iov[3]; /* header + body, bulk, tag: as many as are there */
	int iovcnt;
	int iov_idx;      /* first iov not fully written */
	uint8_t *head;    /* header + body, freed after send */
	void *bulk;       /* released after send: to bulk_cache if bulk_cap, else free() */
	struct bufcache *bulk_cache;
	size_t bulk_cap;
	int close_after;  /* close the connection once this frame is out */
	size_t bytes;     /* left to write, counted in the connection's tx_bytes */
	uint8_t tag[WIRE_TAG_LEN]; /* on a sealed connection */
};

enum rx_state { RX_HDR, RX_PAYLOAD };

struct sconn {
	struct sconn *next, *prev; /* all connections, event thread only */
	int fd;
	uint64_t id;
	char peer[64];
	char peer_name[NACRE_NAME_MAX + 1];
	int authed;
	int connected; /* CONNECT answered: nonces valid */
	int env;            /* requests and replies carry envelopes (set at CONNECT, then read
			     * by workers too) */
	uint64_t client_id; /* the peer's session id from CONNECT, 0 = none */
	uint64_t features;  /* negotiated at CONNECT, then read by workers */
	uint8_t cnonce[WIRE_NONCE_LEN];
	uint8_t snonce[WIRE_NONCE_LEN];
	/* wire security, set at CONNECT (event thread) */
	int sec;               /* WIRE_SEC_*: the connection's flavour */
	int sec_feat;          /* WIRE_FEAT_SEC negotiated: the proofs bind what follows */
	uint64_t req_features, rep_features;
	int sec_asked;         /* connect_req sec + 16 * sec_flags */
	struct sec_session *sess; /* from AUTH on, if sec > null: event thread only */
	int sealed;            /* sess is set (read by workers too: set before any job) */
	size_t sec_upto;       /* payload bytes of the current frame fed to sess */
	int sec_bad;           /* the session failed on the current frame */
	struct nacre_key key; /* the key the peer proves (rpc_peer_key): role, name, gen; set
			       * at CONNECT, then read by workers too */

	enum rx_state rx;
	uint8_t rxbuf[RX_BUF];  /* bytes read but not yet consumed: [rx_off, rx_len) */
	size_t rx_off, rx_len;
	uint8_t hdr_buf[WIRE_HDR_LEN];
	size_t hdr_got;
	struct wire_hdr hdr;
	uint8_t *payload; /* body then bulk */
	size_t payload_len, payload_got, payload_cap;
	uint32_t bulk_crc; /* CRC-32C of the bulk bytes in [body_len, crc_upto) */
	size_t crc_upto;

	struct tx_frame *tx_head, *tx_tail;
	size_t tx_bytes;        /* queued, not yet written, plus TX_FRAME_COST per frame */
	int64_t tx_progress_ms; /* last time a byte was written, or the queue began waiting */
	struct sconn *blk_next, *blk_prev; /* s->blocked: the socket is full, replies wait */
	int blocked;
	int want_out;   /* EPOLLOUT registered */
	int paused;     /* PAUSE_*: EPOLLIN removed for backpressure */
	struct sconn *kick_next; /* s->kick: read again at the end of the event batch */
	int kicked;
	struct sconn *thr_next, *thr_prev; /* s->throttled_conns, while PAUSE_GLOBAL */
	struct cl_entry ue;      /* while not authenticated: conn_limits' list */
	int inflight;   /* jobs at workers */
	int closing;    /* socket closed; free when inflight reaches 0 */
	int reaped;     /* on the dead list */
	struct sconn *dead_next;
};

enum { PAUSE_INFLIGHT = 1, PAUSE_TX = 2, PAUSE_GLOBAL = 4 };

enum job_kind { JOB_REQUEST, JOB_DISCONNECT };

struct job {
	struct job *next;
	enum job_kind kind;
	struct rpc_server *srv;
	struct sconn *conn;
	uint64_t conn_id;
	struct wire_hdr hdr;
	uint8_t *payload; /* owned; from s->payloads */
	size_t payload_cap;
	int resumed;      /* the handler runs again (rpc_resume) */
	/* result, for done_q */
	struct tx_frame *reply;
	int drop_reply;   /* fault point: no reply goes out */
	int close_conn;   /* fault point: the connection closes instead of the reply */
};

struct job_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, *tail; /* protected by lock */
	int stop;                /* protected by lock */
};

struct rpc_server {
	struct rpc_server_conf conf;
	char fsname[NACRE_FSNAME_MAX + 1];
	char server_name[NACRE_NAME_MAX + 1];
	struct nacre_key key;
	int listen_fd;
	uint16_t port;
	int epfd;
	int evfd;               /* wakes the loop: done jobs or stop */
	int stop_flag;          /* set by rpc_server_stop (signal-safe); atomic access */

	struct sconn *conns;    /* event thread only */
	struct sconn *dead;     /* closed, no jobs left: freed after the current batch */
	uint64_t next_conn_id;  /* event thread only */

	struct job_queue work_q;
	pthread_mutex_t done_lock;
	struct job *done_head, *done_tail; /* protected by done_lock */

	pthread_t *workers;
	int nworkers;
	struct bufcache payloads; /* request payloads and reply bulks */
	uint64_t instance;        /* random per start, told in CONNECT */

	/* limits; event thread only unless said otherwise */
	struct conn_limits lim;   /* un-authenticated connections */
	struct cl_backoff backoff;/* accept() out of descriptors */
	int tx_stall_ms;
	int inflight_max;
	uint64_t inflight_bytes_max;
	int inflight;             /* jobs at workers or deferred, all connections */
	uint64_t inflight_bytes;  /* their payload bytes */
	int deferred;             /* of those, deferred by handlers; atomic (workers) */
	int throttled;            /* over the global bound: authenticated reads paused;
				   * atomic (rpc_defer reads it) */
	struct sconn *throttled_conns; /* paused by it, via thr_next */
	struct sconn *blocked;    /* replies waiting for the peer to read, via blk_next */
	struct sconn *kick;       /* to read again, via kick_next */
	int64_t stall_swept_ms;
	int recheck_keys;         /* rpc_server_recheck_keys asked; atomic access */
};

/* Connections open to every server in the process, and of those the ones that have not
 * finished the handshake (gauges); atomic access. */
extern uint64_t rpc_server_connections;
extern uint64_t rpc_server_unauth;

/* Appends j to q and wakes a worker. Thread-safe. */
void rpc_queue_push(struct job_queue *q, struct job *j);
/* Wakes the event thread (done jobs, a stop, a deferral). Thread-safe, signal-safe. */
void rpc_wake_loop(struct rpc_server *s);
/* A reply frame to req, with the envelope env (NULL: none) before the body; sealed: the
 * connection seals its frames (the bulk crc is left out). Takes the bulk of rep (NULL for
 * none) whatever happens. Returns the frame (the caller's, rpc_frame_free), NULL without
 * memory. */
struct tx_frame *rpc_frame_build(const struct wire_hdr *req, int status, const void *body,
				 uint32_t body_len, const struct rpc_reply *rep,
				 const struct wire_rep_env *env, int sealed);
/* Frees f and gives back its bulk. Accepts NULL. */
void rpc_frame_free(struct tx_frame *f);
/* Runs j's handler (on a worker, or inline on the event thread). Returns 1 when it deferred
 * the request: the job then belongs to whoever answers or resumes it (maybe already, on
 * another thread), else 0 with j->reply set. */
int rpc_run_request(struct rpc_server *s, struct job *j);
/* A worker thread: runs jobs from s->work_q until the queue stops; arg is the server. */
void *rpc_worker_main(void *arg);

#endif
