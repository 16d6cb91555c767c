/* notify.c - libnacre's end of the MDS's permission-change callbacks (nacre.h,
 * nacre_fs_notify_start; the protocol is NOTIFY_WAIT in wire.h).
 *
 * One thread keeps a NOTIFY_WAIT outstanding on the MDS connection, hands each batch it
 * gets to the application and acknowledges it with the next NOTIFY_WAIT. The call is
 * idempotent and no change: after a reconnect (an MDS restart, a failover) the transport
 * resends it, and it is never replayed. It has a limit of its own (POLL_LIMIT_MS, 2 s
 * more than the MDS parks it), so a thread waiting on a vanished MDS ends within that;
 * stop sends NOTIFY_WAIT with WIRE_NOTIFY_STOP, which the MDS answers along with the
 * parked one. After any new socket (a reconnect, a restart, a failover) the application
 * is told to drop everything once: what was sent on the old socket, or changed while the
 * client was away, is not lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/notify.h"
#include "common/net.h"

#define POLL_LIMIT_MS (WIRE_NOTIFY_HOLD_MS + 2000)
#define STOP_TIMEOUT_MS 500
#define RETRY_MS 200 /* after a failed poll (the MDS away): ask again after this */

static int stopping(struct nacre_fs *fs)
{
	return __atomic_load_n(&fs->notify_stop, __ATOMIC_ACQUIRE);
}

/* One NOTIFY_WAIT with ack and flags, within timeout_ms. 0 and *out, or a negative error. */
static int poll_once(struct nacre_fs *fs, uint64_t ack, uint32_t flags, int timeout_ms,
		     struct rpc_msg **out)
{
	struct wire_notify_req r = {.ack = ack, .flags = flags};
	struct rpc_call_args a = {.opcode = WIRE_OP_MDS_NOTIFY_WAIT,
				  .flags = RPC_IDEMPOTENT | RPC_NO_TIMEOUT,
				  .timeout_ms = timeout_ms};
	struct wire_cursor c;
	int rc;

	*out = NULL;
	cl_cred(NULL, &r.cred);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_notify_req_encode(&c, &r);
	a.body = c.buf;
	a.body_len = (uint32_t)wire_cursor_pos(&c);
	rc = wire_cursor_ok(&c) ? rpc_call(fs->mds, &a, out) : -EINVAL;
	wire_cursor_fini(&c);
	if (rc < 0) {
		rpc_msg_free(*out);
		*out = NULL;
	}
	return rc;
}

/* Calls the application's function unless stopped. */
static void call_fn(struct nacre_fs *fs, const struct nacre_fid *fids, uint32_t n, int all)
{
	pthread_mutex_lock(&fs->notify_lock);
	if (!fs->notify_stop)
		fs->notify_fn(fs->notify_arg, fids, n, all);
	pthread_mutex_unlock(&fs->notify_lock);
}

/* Reads a reply's batch: the perm-change FIDs into *fids (NULL when none, or with no memory:
 * then *all), the recalled directories into *recall. 0, or -EPROTO (malformed). */
static int parse(const struct rpc_msg *m, struct wire_notify_rep *h, struct nacre_fid **fids,
		 struct nacre_fid **recall, int *nrecall)
{
	struct wire_cursor c;

	*fids = *recall = NULL;
	*nrecall = 0;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_notify_rep_decode(&c, h);
	if (!wire_cursor_ok(&c))
		return -EPROTO;
	if (h->count)
		*fids = calloc(h->count, sizeof(**fids));
	for (uint32_t i = 0; i < h->count; i++) {
		struct nacre_fid f;
		wire_fid_get(&c, &f);
		if (*fids)
			(*fids)[i] = f;
	}
	if (h->flags & WIRE_NOTIFY_RECALL) {
		*recall = calloc(WIRE_NOTIFY_MAX, sizeof(**recall));
		if (!*recall)
			return -ENOMEM;
		*nrecall = wire_notify_recall_get(&c, *recall, WIRE_NOTIFY_MAX);
	}
	return wire_cursor_ok(&c) && wire_cursor_left(&c) == 0 ? 0 : -EPROTO;
}

/* Hands a reply's batch to the application and gives the recalled leases back. Returns
 * its seq (to ack), or 0. */
static uint64_t deliver(struct nacre_fs *fs, const struct rpc_msg *m)
{
	struct wire_notify_rep h;
	struct nacre_fid *fids, *recall;
	int nrecall;
	int rc = parse(m, &h, &fids, &recall, &nrecall);

	if (rc) {
		cl_log(fs, CL_LOG_WARN, "MDS %s: %s NOTIFY_WAIT reply: dropping every cached "
		       "attribute and write-back lease", fs->addr,
		       rc == -EPROTO ? "malformed" : "unreadable (no memory)");
		cl_lease_recall(fs, NULL, 0, 1);
		call_fn(fs, NULL, 0, 1);
		free(fids);
		free(recall);
		return 0;
	}
	if (h.seq) {
		int all = (h.count && !fids) || (h.flags & WIRE_NOTIFY_ALL);
		/* a lost batch (ALL) may have recalled anything */
		cl_lease_recall(fs, recall, nrecall > 0 ? (uint32_t)nrecall : 0,
				(h.flags & WIRE_NOTIFY_ALL) != 0);
		/* under notify_lock: once nacre_fs_notify_stop set the flag, no call starts */
		if (h.count || all)
			call_fn(fs, fids, fids ? h.count : 0, all);
	}
	free(fids);
	free(recall);
	return h.seq;
}

static void *notify_main(void *arg)
{
	struct nacre_fs *fs = arg;
	uint64_t ack = 0;

	uint64_t gen = rpc_conn_gen(fs->mds);

	while (!stopping(fs)) {
		struct rpc_msg *m = NULL;
		int64_t sent_ms = net_now_ms();
		int rc = poll_once(fs, ack, 0, POLL_LIMIT_MS, &m);
		uint64_t now_gen = rpc_conn_gen(fs->mds);

		if (stopping(fs)) {
			rpc_msg_free(m);
			break;
		}
		/* A new socket: a batch may have been lost with the old one, or (a restart) the
		 * MDS forgot what it had for us, and others changed things meanwhile: drop
		 * every cached attribute once. */
		if (now_gen != gen) {
			gen = now_gen;
			cl_lease_recall(fs, NULL, 0, 1); /* the MDS may have ended them */
			call_fn(fs, NULL, 0, 1);
		}
		if (rc == -EOPNOTSUPP) {
			rpc_msg_free(m);
			cl_log(fs, CL_LOG_INFO, "MDS %s does not send permission-change callbacks: "
			       "other clients' chmod is seen within attr_timeout", fs->addr);
			break;
		}
		if (rc < 0) {
			/* the MDS away, restarting, or our limit: the next poll starts afresh */
			struct timespec ts = {0, RETRY_MS * 1000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		uint64_t seq = deliver(fs, m);
		if (seq)
			ack = seq;
		rpc_msg_free(m);
		/* answered without recalling what is still held: good for WIRE_LEASE_MS more */
		if (rpc_conn_gen(fs->mds) == gen)
			cl_lease_renewed(fs, gen, sent_ms);
	}
	return NULL;
}

NACRE_API int nacre_fs_notify_start(struct nacre_fs *fs, nacre_notify_fn fn, void *arg)
{
	if (!fs || !fn)
		return -EINVAL;
	if (fs->notify_started)
		return -EBUSY; /* also after a stop: one start per mount */
	fs->notify_fn = fn;
	fs->notify_arg = arg;
	__atomic_store_n(&fs->notify_stop, 0, __ATOMIC_RELEASE);
	if (pthread_create(&fs->notify_thread, NULL, notify_main, fs) != 0)
		return -EAGAIN;
	fs->notify_started = 1;
	return 0;
}

void cl_notify_init(struct nacre_fs *fs)
{
	pthread_mutex_init(&fs->notify_lock, NULL);
}

void cl_notify_fini(struct nacre_fs *fs)
{
	nacre_fs_notify_stop(fs);
	if (fs->notify_started)
		pthread_join(fs->notify_thread, NULL);
	fs->notify_started = 0;
	pthread_mutex_destroy(&fs->notify_lock);
}

NACRE_API void nacre_fs_notify_stop(struct nacre_fs *fs)
{
	struct rpc_msg *m = NULL;

	if (!fs || !fs->notify_started || stopping(fs))
		return;
	pthread_mutex_lock(&fs->notify_lock); /* waits for a callback that runs */
	__atomic_store_n(&fs->notify_stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->notify_lock);
	/* the MDS answers our parked wait with this one; the thread ends on its own (joined
	 * at unmount), without the wait for an MDS that is gone */
	poll_once(fs, 0, WIRE_NOTIFY_STOP, STOP_TIMEOUT_MS, &m);
	rpc_msg_free(m);
}
