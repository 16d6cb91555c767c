/* serve.c - the request path around dispatch (see serve.h). */
#include "mds/serve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mds/caps.h"
#include "mds/db.h"
#include "mds/dispatch.h"
#include "mds/groups.h"
#include "mds/inode.h"
#include "mds/jobs.h"
#include "mds/lease.h"
#include "mds/lock_rpc.h"
#include "mds/notify.h"
#include "mds/nodemap_serve.h"
#include "mds/ns.h"
#include "mds/open.h"
#include "mds/ost_wait.h"
#include "mds/batch.h"
#include "mds/recovery.h"
#include "mds/req.h"
#include "mds/session.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

int mds_op_records(uint16_t opcode)
{
	return wire_op_reply_cached(opcode);
}

/* A replay's first reply names the FID (and, for CREATE, the layout) it made. */
static void replay_takes_first_reply(const struct rpc_request *req, struct mds_req *r)
{
	if (req->replay_reply && req->hdr->opcode != WIRE_OP_MDS_BATCH)
		mds_req_replay_facts(r, req->hdr->opcode, req->replay_reply, req->env->replay_len);
}

/* The FID a request names (the one its reply describes), for a record that noted none:
 * every reply-cached request with an attr or layout reply starts as a fid_req does. */
static int request_fid(const struct rpc_request *req, struct nacre_fid *fid)
{
	struct wire_cursor c;
	struct wire_fid_req r;

	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_fid_req_decode(&c, &r);
	*fid = r.fid;
	return wire_cursor_ok(&c) ? 0 : -EPROTO;
}

/* The current attributes (and layout) of fid, as root would see them. */
static int current_inode(struct mds *m, const struct nacre_fid *fid, struct mds_inode *ino)
{
	struct mds_txn *txn;
	int rc = mds_txn_begin_read(m->db, &txn);

	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, fid, ino);
	mds_txn_abort(txn);
	return rc;
}

/* Rebuilds the reply of a change the reply cache says was made (Lustre's reconstruct):
 * from what it noted and the inode as it is now. */
static int reconstruct(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
		       const struct mds_reply_rec *rec)
{
	uint16_t op = req->hdr->opcode;
	struct nacre_fid fid = rec->fid;
	struct mds_inode *ino;
	int rc = 0;

	rep->env.transno = rec->transno;
	switch (op) {
	case WIRE_OP_MDS_UNLINK:
	case WIRE_OP_MDS_RMDIR:
	case WIRE_OP_MDS_RENAME:
	case WIRE_OP_MDS_SETXATTR:
	case WIRE_OP_MDS_REMOVEXATTR: /* empty replies */
		return 0;
	case WIRE_OP_MDS_APPEND: {
		struct wire_append_rep a = {.offset = rec->value};
		wire_append_rep_encode(&rep->body, &a);
		return 0;
	}
	case WIRE_OP_MDS_BATCH:
		return mds_batch_reconstruct(req, &rep->body);
	case WIRE_OP_MDS_FID_GRANT: {
		struct wire_fid_grant_rep g = {.seq = rec->fid.seq, .width = (uint32_t)rec->value};
		wire_fid_grant_rep_encode(&rep->body, &g);
		return 0;
	}
	default:
		break;
	}
	if (!rec->fid.seq && !rec->fid.oid && request_fid(req, &fid) < 0)
		return -EPROTO;
	ino = calloc(1, sizeof(*ino));
	if (!ino)
		return -ENOMEM;
	rc = current_inode(m, &fid, ino);
	if (rc == -ENOENT) {
		/* changed since and gone (a closed orphan): the change was made all the same */
		memset(ino, 0, sizeof(*ino));
		ino->fid = fid;
		rc = 0;
	}
	if (rc)
		goto out;
	if (op == WIRE_OP_MDS_LAYOUT_SET) {
		struct wire_layout_rep l = {.layout = ino->layout};
		wire_layout_rep_encode(&rep->body, &l);
	} else if (op == WIRE_OP_MDS_CREATE) {
		struct wire_create_rep cr = {0};
		struct wire_create_req *q = malloc(sizeof(*q));
		struct wire_cursor c;
		if (!q) {
			rc = -ENOMEM;
			goto out;
		}
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_create_req_decode(&c, q);
		mds_inode_to_attr(ino, &cr.attr);
		if (ino->has_layout)
			cr.layout = ino->layout;
		/* a replay opens nothing (the client re-opens what it has open afterwards) */
		cr.has_handle = wire_cursor_ok(&c) && (q->flags & WIRE_CREATE_OPEN) &&
				!(req->env->flags & WIRE_ENV_REPLAY);
		if (cr.has_handle) {
			/* the handle the first execution made, if this MDS still has it */
			uint64_t owner = mds_owner_of(req);
			cr.handle = rec->value;
			if (!cr.handle || !mds_open_handle_known(m->open, owner, cr.handle, &fid))
				rc = mds_open_handle_add(m->open, owner, &fid, &cr.handle);
			/* the creator's rights, and its capability (caps.h) */
			if (!rc) {
				mds_open_handle_set_rights(m->open, owner, cr.handle, &fid,
							   CAP_READ | CAP_WRITE);
				mds_cap_for_reply(m, req, &fid, &cr.layout, CAP_READ | CAP_WRITE,
						  &cr.has_cap, &cr.cap);
			}
		}
		free(q);
		if (!rc)
			wire_create_rep_encode(&rep->body, &cr);
	} else {
		struct wire_attr_rep a;
		mds_inode_to_attr(ino, &a.attr);
		wire_attr_rep_encode(&rep->body, &a);
	}
out:
	free(ino);
	return rc;
}

/* A change of a session: at most once, with its reply-cache record. */
static int serve_change(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
			const struct mds_session_view *v)
{
	uint64_t id = req->client_id, xid = req->hdr->xid;
	struct mds_reply_rec rec;
	struct mds_txn *txn;
	int rc;

	if (req->env->flags & (WIRE_ENV_RESEND | WIRE_ENV_REPLAY)) {
		if (mds_session_begin(m->sessions, id, xid, rpc_defer(req)) == 1)
			return RPC_DEFER; /* still executing: answered from the record after */
		rc = mds_txn_begin_read(m->db, &txn);
		if (!rc) {
			rc = mds_db_reply_get(txn, id, xid, &rec);
			mds_txn_abort(txn);
		}
		if (rc == 0) {
			LOG_DEBUG("serve", "%s xid %llu of %s answered from the reply cache",
				  wire_opcode_name(req->hdr->opcode), (unsigned long long)xid,
				  req->peer_name);
			rc = reconstruct(m, req, rep, &rec);
			mds_session_end(m->sessions, id, xid);
			return rc;
		}
	} else if (mds_session_begin(m->sessions, id, xid, NULL) == 1) {
		return -EPROTO; /* a new request with a running xid: not from a real client */
	}
	struct mds_req r = {
		.client_id = id,
		.xid = xid,
		.opcode = req->hdr->opcode,
		.record = 1,
		.trim_below = v->trim_below,
		.persist_client = !v->persisted,
		.client_name = req->peer_name,
		.replay = (req->env->flags & WIRE_ENV_REPLAY) != 0,
	};
	if (r.replay)
		replay_takes_first_reply(req, &r);
	mds_req_current = &r;
	rc = mds_dispatch(m, req, rep);
	mds_req_current = NULL;
	if (r.transno) {
		rep->env.transno = r.transno;
		mds_session_committed(m->sessions, id, r.persist_client, r.trim_below);
	}
	mds_session_end(m->sessions, id, xid);
	return rc;
}

/* OPEN of a session: a resent one gives the handle of its first execution back. */
static int serve_open(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep,
		      const struct mds_session_view *v)
{
	uint64_t id = req->client_id, xid = req->hdr->xid, old = 0;
	struct mds_req r = {.client_id = id, .xid = xid, .opcode = req->hdr->opcode};
	int rc;

	if (!v->persisted) {
		rc = mds_session_persist(m->sessions, id); /* a restart must expect it back */
		if (rc)
			return rc;
	}
	if (req->env->flags & WIRE_ENV_RESEND)
		old = mds_session_open_handle(m->sessions, id, xid);
	if ((req->env->flags & WIRE_ENV_REPLAY) && req->replay_reply) {
		/* a re-open after a restart: the client's reply of before names its handle */
		struct wire_open_rep *o = malloc(sizeof(*o));
		struct wire_cursor c;
		if (!o)
			return -ENOMEM;
		wire_cursor_init_read(&c, req->replay_reply, req->env->replay_len);
		wire_open_rep_decode(&c, o);
		if (wire_cursor_ok(&c))
			r.replay_handle = o->handle;
		free(o);
	}
	mds_req_current = &r;
	rc = mds_dispatch(m, req, rep);
	mds_req_current = NULL;
	if (rc == 0 && r.note.value) {
		if (old)
			mds_open_handle_forget(m->open, mds_owner_of(req), old);
		mds_session_open_done(m->sessions, id, xid, r.note.value);
	}
	return rc;
}

/* Requests of the recovery and session protocol, not namespace operations. */
static int serve_session_op(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_recovery_status st;
	struct wire_cursor c;
	struct wire_cred_req cr;

	switch (req->hdr->opcode) {
	case WIRE_OP_MDS_RECOVERY_DONE:
		return 0; /* no window open (recovery.c answers it during one) */
	case WIRE_OP_MDS_RECOVERY_STATUS:
		mds_recovery_status(m->recovery, &st);
		wire_recovery_status_encode(&rep->body, &st);
		return 0;
	case WIRE_OP_MDS_DISCONNECT:
		wire_cursor_init_read(&c, req->body, req->body_len);
		wire_cred_req_decode(&c, &cr);
		if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
			return -EPROTO;
		if (req->client_id && m->sessions)
			mds_session_evict(m->sessions, req->client_id, "unmounted");
		mds_lease_drop_owner(m->leases, mds_owner_of(req)); /* what waits for them runs */
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int serve_mapped(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

int mds_serve(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct mds *m = arg;
	uint64_t start = m->jobs ? mds_jobs_now_us() : 0;

	/* a change of permissions is answered once the other clients dropped their caches */
	mds_notify_request_begin();
	mds_groups_missing_reset();
	int rc = serve_mapped(m, req, rep);
	/* refused for want of a group list we do not hold: the client registers it, retries */
	if (rc < 0 && rc != RPC_DEFER && mds_groups_missing())
		rc = -NACRE_EGROUPS;
	rc = mds_notify_request_end(m, req, rep, rc);
	if (rc == 0 && m->jobs) /* answered now: the request is still ours */
		mds_jobs_note(m, req->hdr->opcode, req->body, req->body_len,
			      mds_jobs_now_us() - start);
	return rc;
}

static int serve_one(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	uint16_t op = req->hdr->opcode;
	struct mds_session_view v = {0};
	int session = req->client_id && req->env && m->sessions;
	int rc;

	if (session) {
		rc = mds_session_touch(m->sessions, req->client_id, req->conn_id, req->peer_name,
				       req->env->ack_xid, &v);
		if (rc)
			return rc;
	}
	if (mds_recovery_active(m->recovery)) {
		rc = mds_recovery_admit(m->recovery, req);
		if (rc != MDS_RECOVERY_PASS)
			return rc;
	}
	switch (op) {
	case WIRE_OP_MDS_RECOVERY_DONE:
	case WIRE_OP_MDS_RECOVERY_STATUS:
	case WIRE_OP_MDS_DISCONNECT:
		return serve_session_op(m, req, rep);
	default:
		break;
	}
	/* right after a start, a create waits for the OSTs (outside any transaction); a
	 * replay has its layout already */
	if (mds_ost_wait_needed(op) && !(req->env && (req->env->flags & WIRE_ENV_REPLAY))) {
		mds_sessions_check_stall(m->sessions); /* a create right after a SIGCONT */
		rc = mds_ost_wait_admit(m->ost_wait, req);
		if (rc != MDS_OST_WAIT_PASS)
			return rc;
	}
	/* a directory another client holds waits until that client gave it back */
	rc = mds_lease_admit(m->leases, req);
	if (rc != MDS_LEASE_PASS)
		return rc;
	if (session && mds_op_records(op)) {
		rc = serve_change(m, req, rep, &v);
		if (rc != RPC_DEFER && (req->env->flags & WIRE_ENV_REPLAY))
			mds_recovery_replay_done(m->recovery, req->client_id, req->hdr->xid);
		return rc;
	}
	if (session && op == WIRE_OP_MDS_OPEN)
		return serve_open(m, req, rep, &v);
	if (session && !v.persisted && (op == WIRE_OP_MDS_LOCK_SET || op == WIRE_OP_MDS_LOCK_WAIT)) {
		rc = mds_session_persist(m->sessions, req->client_id);
		if (rc)
			return rc;
	}
	return mds_dispatch(m, req, rep);
}

/* The caller's nodemap first: its rule may refuse the request or map its credentials. */
static int serve_mapped(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct nodemap_req nr;
	int rc = mds_nodemap_admit(m, req, &nr);

	if (!rc) {
		rc = serve_one(m, &nr.req, rep);
		/* a deferred request may already be answered and freed by another thread */
		if (rc != RPC_DEFER)
			mds_nodemap_done(m, &nr, rc, rep);
	}
	mds_nodemap_req_fini(&nr);
	return rc;
}

void mds_serve_connect(void *arg, uint64_t conn_id, const struct wire_connect_req *req,
		       struct wire_connect_rep *rep)
{
	struct mds *m = arg;

	(void)conn_id;
	rep->last_committed = mds_writer_last_committed(m->writer);
	if (!req->client_id || !m->sessions)
		return;
	rep->session = mds_session_state(m->sessions, req->client_id);
	mds_recovery_connect(m->recovery, req->client_id, &rep->session, &rep->recovery_ms);
}

void mds_serve_close(void *arg, uint64_t conn_id)
{
	struct mds *m = arg;

	if (m->recovery)
		mds_recovery_disconnect(m->recovery, conn_id);
	mds_ost_wait_disconnect(m->ost_wait, conn_id);
	if (m->sessions)
		mds_session_disconnect(m->sessions, conn_id);
	mds_lock_close(m, conn_id);
	mds_notify_close(m, conn_id);
	mds_lease_close(m->leases, conn_id);
}

uint64_t mds_serve_last_committed(void *arg)
{
	return mds_writer_last_committed(((struct mds *)arg)->writer);
}
