/* notify.c - libnacre's end of the MDS's permission-change callbacks (nacre.h,
 * nacre_fs_notify_start; the protocol is NOTIFY_WAIT in wire.h).
 *
 * One thread keeps a NOTIFY_WAIT outstanding on the MDS connection, hands each batch it
 * gets to the application and acknowledges it with the next NOTIFY_WAIT. The call is
 * idempotent and no change: after a reconnect (an MDS restart, a failover) the transport
 * resends it, and it is never replayed. It has a limit of its own (POLL_LIMIT_MS, 2 s
 * more than the MDS parks it), so a thread waiting on a vanished MDS ends within that;
 * stop sends NOTIFY_WAIT with WIRE_NOTIFY_STOP, which the MDS answers along with the
 * parked one.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"

#define POLL_LIMIT_MS (WIRE_NOTIFY_HOLD_MS + 2000)
#define STOP_TIMEOUT_MS 1000
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

/* Hands a reply's batch to the application. Returns its seq (to ack), or 0. */
static uint64_t deliver(struct nacre_fs *fs, const struct rpc_msg *m)
{
	struct wire_notify_rep h;
	struct wire_cursor c;
	struct nacre_fid *fids;

	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_notify_rep_decode(&c, &h);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) != (size_t)h.count * 16) {
		cl_log(fs, CL_LOG_WARN, "MDS %s: malformed NOTIFY_WAIT reply: dropping every "
		       "cached attribute", fs->addr);
		fs->notify_fn(fs->notify_arg, NULL, 0, 1);
		return 0;
	}
	if (!h.seq)
		return 0;
	fids = h.count ? calloc(h.count, sizeof(*fids)) : NULL;
	if (h.count && !fids) {
		fs->notify_fn(fs->notify_arg, NULL, 0, 1);
		return h.seq;
	}
	for (uint32_t i = 0; i < h.count; i++)
		wire_fid_get(&c, &fids[i]);
	fs->notify_fn(fs->notify_arg, fids, h.count, (h.flags & WIRE_NOTIFY_ALL) != 0);
	free(fids);
	return h.seq;
}

static void *notify_main(void *arg)
{
	struct nacre_fs *fs = arg;
	uint64_t ack = 0;

	while (!stopping(fs)) {
		struct rpc_msg *m = NULL;
		int rc = poll_once(fs, ack, 0, POLL_LIMIT_MS, &m);

		if (stopping(fs)) {
			rpc_msg_free(m);
			break;
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
	}
	return NULL;
}

NACRE_API int nacre_fs_notify_start(struct nacre_fs *fs, nacre_notify_fn fn, void *arg)
{
	if (!fs || !fn)
		return -EINVAL;
	if (fs->notify_started)
		return -EBUSY;
	fs->notify_fn = fn;
	fs->notify_arg = arg;
	__atomic_store_n(&fs->notify_stop, 0, __ATOMIC_RELEASE);
	if (pthread_create(&fs->notify_thread, NULL, notify_main, fs) != 0)
		return -EAGAIN;
	fs->notify_started = 1;
	return 0;
}

NACRE_API void nacre_fs_notify_stop(struct nacre_fs *fs)
{
	struct rpc_msg *m = NULL;

	if (!fs || !fs->notify_started)
		return;
	__atomic_store_n(&fs->notify_stop, 1, __ATOMIC_RELEASE);
	/* the MDS answers our parked wait with this one */
	poll_once(fs, 0, WIRE_NOTIFY_STOP, STOP_TIMEOUT_MS, &m);
	rpc_msg_free(m);
	pthread_join(fs->notify_thread, NULL);
	fs->notify_started = 0;
}
