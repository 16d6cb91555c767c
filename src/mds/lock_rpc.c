/* lock_rpc.c - the lock service's requests and connection hooks (see lock_rpc.h). */
#include "mds/lock_rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/net.h"

void mds_lock_answer(void *arg, void *token, int status)
{
	(void)arg;
	rpc_answer(token, status, NULL, 0, NULL);
}

void mds_lock_close(struct mds *m, uint64_t conn_id)
{
	mds_locks_conn_closed(m->locks, conn_id);
}

void mds_lock_disconnect(struct mds *m, uint64_t conn_id)
{
	mds_locks_disconnect(m->locks, conn_id, net_now_ms());
}

int mds_lock_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct mds_lock_from from = {
		.conn_id = req->conn_id,
		/* a session's xids keep growing across reconnects; a connection's are its own */
		.sender = req->client_id ? req->client_id : req->conn_id,
		.xid = req->hdr->xid,
	};
	struct wire_lock_rep out;
	struct wire_lock_req r;
	struct wire_cursor c;
	int rc;

	if (!m->locks)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_lock_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) != 0) {
		LOG_RATELIMITED(LOG_LVL_WARN, "lock", "malformed %s request from %s",
				wire_opcode_name(req->hdr->opcode), req->peer);
		return -EPROTO;
	}
	switch (req->hdr->opcode) {
	case WIRE_OP_MDS_LOCK_SET:
		return mds_locks_set(m->locks, req->conn_id, &r, net_now_ms());
	case WIRE_OP_MDS_LOCK_WAIT:
		rc = mds_locks_wait(m->locks, &from, &r, net_now_ms(), rpc_defer(req));
		return rc == MDS_LOCK_PARKED ? RPC_DEFER : rc;
	case WIRE_OP_MDS_LOCK_CANCEL:
		mds_locks_cancel(m->locks, &from, &r);
		return 0;
	default: /* LOCK_GET */
		rc = mds_locks_get(m->locks, req->conn_id, &r, net_now_ms(), &out);
		if (!rc)
			wire_lock_rep_encode(&rep->body, &out);
		return rc;
	}
}

struct mds_lock_reaper {
	struct mds_locks *lk;
	pthread_t thread;
	pthread_mutex_t lock; /* protects stop */
	pthread_cond_t cond;
	int stop;
};

static void *reaper_main(void *arg)
{
	struct mds_lock_reaper *r = arg;

	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += MDS_LOCK_TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
		pthread_mutex_unlock(&r->lock);
		mds_locks_tick(r->lk, net_now_ms());
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int mds_lock_reaper_start(struct mds_locks *lk, struct mds_lock_reaper **out)
{
	struct mds_lock_reaper *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->lk = lk;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	if (pthread_create(&r->thread, NULL, reaper_main, r) != 0) {
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->cond);
		free(r);
		return -EAGAIN;
	}
	*out = r;
	return 0;
}

void mds_lock_reaper_stop(struct mds_lock_reaper *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = 1;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}
