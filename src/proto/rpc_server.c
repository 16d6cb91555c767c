/* rpc_server.c - the server side of the transport: the server's life (create, stop,
 * destroy), the jobs and the bounded pool of worker threads that run handlers, reply frames
 * and metrics (see rpc.h). The event thread, one epoll loop for all sockets, is in
 * rpc_server_loop.c; what both share is in rpc_server_int.h.
 *
 * Threading: the event thread owns every struct sconn and its socket; workers never touch
 * a connection's socket or tx queue. A worker gets a job (a request copied out of the rx
 * buffer), runs the handler, and hands the encoded reply back through done_q + eventfd.
 * Requests the server declares cheap (conf.runs_inline) skip the workers: the event thread
 * runs the handler and queues the reply at once.
 * A connection's memory stays alive while jobs for it are in flight (inflight counter,
 * event thread only), so workers can read its immutable peer strings.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/bufcache.h"
#include "common/crc32c.h"
#include "common/fault.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/conn_limits.h"
#include "proto/rpc_server_int.h"

#define SUBSYS "rpc"
/* Free payload buffers kept per server (bufcache.h: why). */
#define PAYLOAD_CACHE_BYTES (64u * 1024u * 1024u)

void rpc_queue_push(struct job_queue *q, struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static struct job *queue_pop(struct job_queue *q)
{
	struct job *j;

	pthread_mutex_lock(&q->lock);
	while (!q->head && !q->stop)
		pthread_cond_wait(&q->cond, &q->lock);
	j = q->head;
	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
	}
	pthread_mutex_unlock(&q->lock);
	return j;
}

void rpc_wake_loop(struct rpc_server *s)
{
	uint64_t one = 1;
	ssize_t r = write(s->evfd, &one, sizeof(one));
	(void)r; /* a full eventfd counter still wakes the loop */
}

/* Gives a reply's bulk back: to the cache it came from (rpc_reply_bulk_alloc), else free(). */
static void bulk_release(struct bufcache *cache, void *bulk, size_t cap)
{
	if (cap)
		bufcache_put(cache, bulk, cap);
	else
		free(bulk);
}

/* A reply frame, with the envelope env in front of the body when env is set; takes the bulk
 * of rep (NULL for none) whatever happens. */
struct tx_frame *rpc_frame_build(const struct wire_hdr *req, int status, const void *body,
				 uint32_t body_len, const struct rpc_reply *rep,
				 const struct wire_rep_env *env, int sealed)
{
	void *bulk = rep ? rep->bulk : NULL;
	uint32_t bulk_len = bulk ? rep->bulk_len : 0;
	uint32_t env_len = env ? WIRE_REP_ENV_LEN : 0;
	struct tx_frame *f = calloc(1, sizeof(*f));
	struct wire_hdr h = {
		.magic = WIRE_MAGIC,
		.version = WIRE_VERSION,
		.opcode = req->opcode,
		.flags = WIRE_FLAG_REPLY,
		.body_len = env_len + body_len,
		.xid = req->xid,
		.status = status,
		.bulk_len = bulk_len,
		/* on a sealed connection the tag covers the bulk */
		.bulk_crc = bulk_len && !sealed ? crc32c(0, bulk, bulk_len) : 0,
	};

	if (!f)
		goto out_free_bulk;
	if (env_len + body_len > wire_op_body_max(req->opcode)) {
		h.status = -EPROTO; /* the handler checked its body against the limit */
		h.body_len = env_len;
		body_len = 0;
	}
	f->head = malloc(WIRE_HDR_LEN + env_len + body_len);
	if (!f->head)
		goto out_free_frame;
	wire_hdr_encode(&h, f->head);
	if (env) {
		struct wire_cursor ec;
		wire_cursor_init_write(&ec, f->head + WIRE_HDR_LEN, env_len);
		wire_rep_env_encode(&ec, env);
	}
	if (body_len)
		memcpy(f->head + WIRE_HDR_LEN + env_len, body, body_len);
	f->iov[0].iov_base = f->head;
	f->iov[0].iov_len = WIRE_HDR_LEN + env_len + body_len;
	f->iovcnt = 1;
	if (bulk_len) {
		f->bulk = bulk;
		f->bulk_cache = rep->bulk_cache;
		f->bulk_cap = rep->bulk_cap;
		f->iov[1].iov_base = bulk;
		f->iov[1].iov_len = bulk_len;
		f->iovcnt = 2;
	} else if (bulk) {
		bulk_release(rep->bulk_cache, bulk, rep->bulk_cap);
	}
	for (int i = 0; i < f->iovcnt; i++)
		f->bytes += f->iov[i].iov_len;
	return f;

out_free_frame:
	free(f);
out_free_bulk:
	if (bulk)
		bulk_release(rep->bulk_cache, bulk, rep->bulk_cap);
	return NULL;
}

void rpc_frame_free(struct tx_frame *f)
{
	if (!f)
		return;
	free(f->head);
	bulk_release(f->bulk_cache, f->bulk, f->bulk_cap);
	free(f);
}

/* ---------------- metrics ---------------- */

struct op_metrics {
	struct metric *count, *errors, *latency;
};

uint64_t rpc_server_connections;
uint64_t rpc_server_unauth;

static double connections_now(void *arg)
{
	(void)arg;
	return (double)__atomic_load_n(&rpc_server_connections, __ATOMIC_RELAXED);
}

static double unauth_now(void *arg)
{
	(void)arg;
	return (double)__atomic_load_n(&rpc_server_unauth, __ATOMIC_RELAXED);
}

/* Per-opcode server metrics, created on first use; pointers published atomically. */
static struct op_metrics *op_metrics_get(uint16_t opcode)
{
	static struct op_metrics *table[WIRE_OP_MAX_];
	struct op_metrics *om;
	char labels[64];

	if (opcode >= WIRE_OP_MAX_)
		return NULL;
	om = __atomic_load_n(&table[opcode], __ATOMIC_ACQUIRE);
	if (om)
		return om;
	om = calloc(1, sizeof(*om));
	if (!om)
		return NULL;
	snprintf(labels, sizeof(labels), "op=\"%s\"", wire_opcode_name(opcode));
	om->count = metrics_counter("nacre_rpc_server_requests_total", labels,
				    "Requests handled, by operation");
	om->errors = metrics_counter("nacre_rpc_server_errors_total", labels,
				     "Requests answered with an error status, by operation");
	om->latency = metrics_histogram("nacre_rpc_server_latency_seconds", labels,
					"Time from a request's arrival at a worker to its reply");
	struct op_metrics *expected = NULL;
	if (!__atomic_compare_exchange_n(&table[opcode], &expected, om, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(om); /* another thread won; the metrics themselves are shared by name */
		om = expected;
	}
	return om;
}

/* ---------------- worker side ---------------- */

void *rpc_reply_bulk_alloc(struct rpc_reply *rep, size_t len)
{
	void *buf = bufcache_get(rep->bulk_cache, len, &rep->bulk_cap);

	if (!buf)
		rep->bulk_cap = 0;
	return buf;
}

void rpc_reply_bulk_free(struct rpc_reply *rep, void *buf)
{
	bulk_release(rep->bulk_cache, buf, rep->bulk_cap);
	rep->bulk_cap = 0;
}

/* The envelope of a reply on j's connection (NULL without envelopes), last_committed
 * filled in. */
static const struct wire_rep_env *reply_env(struct rpc_server *s, const struct job *j,
					    struct wire_rep_env *e)
{
	if (!j->conn->env)
		return NULL;
	e->last_committed = s->conf.last_committed ? s->conf.last_committed(s->conf.arg) : 0;
	return e;
}

/* Fault points between a handler and its reply. */
static void reply_faults(struct job *j, int may_delay)
{
	struct fault_hit hit = {0};

	if (may_delay && NACRE_FAULT_OP(FAULT_RPC_DELAY_REPLY, j->hdr.opcode, &hit) && hit.ms)
		usleep(hit.ms * 1000u);
	if (NACRE_FAULT_OP(FAULT_RPC_DROP_REPLY, j->hdr.opcode, &hit))
		j->drop_reply = 1;
	if (NACRE_FAULT_OP(FAULT_RPC_CLOSE_CONN, j->hdr.opcode, &hit))
		j->close_conn = 1;
}

/* Runs j's handler. Returns 1 when it deferred the request: the job then belongs to whoever
 * answers or resumes it (maybe already, on another thread), else 0 with j->reply set. */
int rpc_run_request(struct rpc_server *s, struct job *j)
{
	struct wire_req_env env;
	struct rpc_request req = {
		.hdr = &j->hdr,
		.body = j->payload,
		.body_len = j->hdr.body_len,
		.bulk = j->payload + j->hdr.body_len,
		.bulk_len = j->hdr.bulk_len,
		.conn_id = j->conn_id,
		.peer = j->conn->peer,
		.peer_name = j->conn->peer_name,
		.peer_role = j->conn->key.role,
		.key_name = j->conn->key.name,
		.client_id = j->conn->client_id,
		.features = j->conn->features,
		.resumed = j->resumed,
		.job_ = j,
	};
	struct rpc_reply rep = { .bulk_cache = &s->payloads };
	struct wire_rep_env e;
	int status;

	struct op_metrics *om = op_metrics_get(j->hdr.opcode);
	int64_t t0 = net_now_us();

	wire_cursor_init_dyn(&rep.body, wire_op_body_max(j->hdr.opcode) -
						(j->conn->env ? WIRE_REP_ENV_LEN : 0));
	if (j->conn->env) {
		struct wire_cursor ec;
		wire_cursor_init_read(&ec, j->payload, j->hdr.body_len);
		wire_req_env_decode(&ec, &env);
		req.env = &env;
		req.body += WIRE_REQ_ENV_LEN;
		req.body_len -= WIRE_REQ_ENV_LEN;
		status = wire_cursor_ok(&ec) && env.replay_len <= req.body_len ? 0 : -EPROTO;
		if (status == 0 && env.replay_len) {
			req.body_len -= env.replay_len;
			req.replay_reply = req.body + req.body_len;
		}
		if (status)
			LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS, "bad request envelope from %s",
					req.peer);
	} else {
		status = 0;
	}
	if (status == 0)
		status = s->conf.handler(s->conf.arg, &req, &rep);
	if (status == RPC_DEFER) {
		/* rpc_answer or rpc_resume follow (they may have run already); the payload
		 * stays with the job */
		wire_cursor_fini(&rep.body);
		return 1;
	}
	if (om) {
		metrics_add(om->count, 1);
		if (status < 0)
			metrics_add(om->errors, 1);
		metrics_observe(om->latency, (double)(net_now_us() - t0) / 1e6);
	}
	if (!wire_cursor_ok(&rep.body)) {
		LOG_ERR(SUBSYS, "reply to %s from %s overflowed its body limit",
			wire_opcode_name(j->hdr.opcode), req.peer);
		status = -EPROTO;
		rep.body.pos = 0;
	}
	if (status < 0 && rep.bulk) {
		bulk_release(rep.bulk_cache, rep.bulk, rep.bulk_cap);
		rep.bulk = NULL;
	}
	e = rep.env;
	j->reply = rpc_frame_build(&j->hdr, status, rep.body.buf, (uint32_t)rep.body.pos, &rep,
				   reply_env(s, j, &e), j->conn->sealed);
	wire_cursor_fini(&rep.body);
	bufcache_put(&s->payloads, j->payload, j->payload_cap);
	j->payload = NULL;
	if (fault_any_armed)
		reply_faults(j, 1);
	return 0;
}

/* Hands a finished job to the event thread. */
static void post_done(struct rpc_server *s, struct job *j)
{
	pthread_mutex_lock(&s->done_lock);
	j->next = NULL;
	if (s->done_tail)
		s->done_tail->next = j;
	else
		s->done_head = j;
	s->done_tail = j;
	pthread_mutex_unlock(&s->done_lock);
	rpc_wake_loop(s);
}

struct rpc_deferred *rpc_defer(const struct rpc_request *req)
{
	struct job *j = req->job_;

	/* A parked request no longer occupies a worker: it leaves the global bound (else
	 * requests waiting for a lock could stop the read of the one that releases it). */
	__atomic_fetch_add(&j->srv->deferred, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&j->srv->throttled, __ATOMIC_RELAXED))
		rpc_wake_loop(j->srv);
	return (struct rpc_deferred *)j;
}

uint64_t rpc_deferred_conn(const struct rpc_deferred *d)
{
	return ((const struct job *)d)->conn_id;
}

uint16_t rpc_deferred_opcode(const struct rpc_deferred *d)
{
	return ((const struct job *)d)->hdr.opcode;
}

uint64_t rpc_deferred_xid(const struct rpc_deferred *d)
{
	return ((const struct job *)d)->hdr.xid;
}

void rpc_answer(struct rpc_deferred *d, int status, const void *body, uint32_t len,
		const struct wire_rep_env *env)
{
	struct job *j = (struct job *)d;
	struct rpc_server *s = j->srv;
	struct wire_rep_env e = {0};

	if (env)
		e = *env;
	__atomic_fetch_sub(&s->deferred, 1, __ATOMIC_RELAXED);
	j->reply = rpc_frame_build(&j->hdr, status, body, len, NULL, reply_env(s, j, &e),
				   j->conn->sealed);
	bufcache_put(&s->payloads, j->payload, j->payload_cap);
	j->payload = NULL;
	/* no delay here: a deferred answer may come from under its owner's lock */
	if (fault_any_armed)
		reply_faults(j, 0);
	post_done(s, j);
}

void rpc_resume(struct rpc_deferred *d)
{
	struct job *j = (struct job *)d;

	j->resumed = 1;
	__atomic_fetch_sub(&j->srv->deferred, 1, __ATOMIC_RELAXED);
	rpc_queue_push(&j->srv->work_q, j);
}

void *rpc_worker_main(void *arg)
{
	struct rpc_server *s = arg;
	struct job *j;

	while ((j = queue_pop(&s->work_q)) != NULL) {
		if (j->kind == JOB_DISCONNECT) {
			if (s->conf.on_disconnect)
				s->conf.on_disconnect(s->conf.arg, j->conn_id);
			free(j);
			continue;
		}
		if (!rpc_run_request(s, j))
			post_done(s, j);
	}
	return NULL;
}

int rpc_server_create(const struct rpc_server_conf *conf, struct rpc_server **out, char *err,
		      size_t err_len)
{
	struct rpc_server *s;
	struct epoll_event ev = { .events = EPOLLIN };
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->conf = *conf;
	str_copy(s->fsname, conf->fsname ? conf->fsname : "", sizeof(s->fsname));
	str_copy(s->server_name, conf->server_name ? conf->server_name : "nacre",
		 sizeof(s->server_name));
	if (conf->key)
		s->key = *conf->key;
	s->conf.key = &s->key;
	s->conf.listen_addr = NULL; /* not kept: the caller's string */
	s->conf.fsname = s->fsname;
	s->conf.server_name = s->server_name;
	s->nworkers = conf->nworkers > 0 ? conf->nworkers : 8;
	metrics_gauge_fn("nacre_rpc_server_connections", "",
			 "Connections open to this server (clients, servers, tools)", connections_now,
			 NULL);
	metrics_gauge_fn("nacre_rpc_server_unauth_connections", "",
			 "Connections that have not finished the handshake", unauth_now, NULL);
	s->tx_stall_ms = conf->tx_stall_ms > 0 ? conf->tx_stall_ms : CL_TX_STALL_MS;
	s->inflight_max = conf->max_inflight > 0 ? conf->max_inflight : CL_INFLIGHT_MAX;
	s->inflight_bytes_max = conf->max_inflight_bytes ? conf->max_inflight_bytes
							 : CL_INFLIGHT_BYTES_MAX;
	if (conn_limits_init(&s->lim, conf->handshake_ms, conf->unauth_per_peer,
			     conf->unauth_max) < 0) {
		conn_limits_fini(&s->lim);
		free(s);
		return -ENOMEM;
	}
	s->listen_fd = s->epfd = s->evfd = -1;
	pthread_mutex_init(&s->work_q.lock, NULL);
	pthread_cond_init(&s->work_q.cond, NULL);
	pthread_mutex_init(&s->done_lock, NULL);
	bufcache_init(&s->payloads, PAYLOAD_CACHE_BYTES);
	if (key_random(&s->instance, sizeof(s->instance)) < 0 || s->instance == 0)
		s->instance = (uint64_t)net_now_us() | 1;

	rc = net_listen(conf->listen_addr, &s->port);
	if (rc < 0) {
		snprintf(err, err_len, "cannot listen on %s: %s%s", conf->listen_addr,
			 strerror(-rc),
			 rc == -EADDRINUSE ? " (another server uses that port: choose another)"
					   : "");
		goto out_free;
	}
	s->listen_fd = rc;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epfd < 0 || s->evfd < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot create event loop: %s", strerror(-rc));
		goto out_free;
	}
	ev.data.ptr = &s->listen_fd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &ev);
	ev.data.ptr = &s->evfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev);
	*out = s;
	return 0;

out_free:
	rpc_server_destroy(s);
	return rc;
}

uint16_t rpc_server_port(const struct rpc_server *s)
{
	return s->port;
}

uint64_t rpc_server_instance(const struct rpc_server *s)
{
	return s->instance;
}

void rpc_server_stop(struct rpc_server *s)
{
	__atomic_store_n(&s->stop_flag, 1, __ATOMIC_RELEASE);
	rpc_wake_loop(s);
}

void rpc_server_destroy(struct rpc_server *s)
{
	struct job *j, *nj;

	if (!s)
		return;
	/* Workers have stopped: jobs left in the queues are ours to free. */
	for (j = s->work_q.head; j; j = nj) {
		nj = j->next;
		bufcache_put(&s->payloads, j->payload, j->payload_cap);
		free(j);
	}
	for (j = s->done_head; j; j = nj) {
		nj = j->next;
		rpc_frame_free(j->reply);
		free(j);
	}
	s->dead = NULL; /* every dead connection is still on the conns list */
	while (s->conns) {
		struct sconn *c = s->conns;
		if (!c->closing)
			close(c->fd);
		if (c->ue.listed)
			__atomic_fetch_sub(&rpc_server_unauth, 1, __ATOMIC_RELAXED);
		s->conns = c->next;
		for (struct tx_frame *f = c->tx_head, *nf; f; f = nf) {
			nf = f->next;
			rpc_frame_free(f);
		}
		bufcache_put(&s->payloads, c->payload, c->payload_cap);
		sec_session_destroy(c->sess);
		free(c);
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->evfd >= 0)
		close(s->evfd);
	pthread_mutex_destroy(&s->work_q.lock);
	pthread_cond_destroy(&s->work_q.cond);
	pthread_mutex_destroy(&s->done_lock);
	bufcache_fini(&s->payloads);
	conn_limits_fini(&s->lim);
	free(s->workers);
	free(s);
}
