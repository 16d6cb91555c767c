/* hsm_rpc.c - the HSM request handlers (WIRE_OP_MDS_HSM_*): decode, call the coordinator,
 * encode the reply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/destroy.h"
#include "mds/hsm_int.h"
#include "mds/changelog.h"
#include "mds/ns.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

#define USER_MASK (NACRE_HS_NORELEASE | NACRE_HS_NOARCHIVE | NACRE_HS_DIRTY)

static int finish_decode(const struct rpc_request *req, const struct wire_cursor *c)
{
	if (wire_cursor_ok(c) && wire_cursor_left(c) == 0)
		return 0;
	LOG_RATELIMITED(LOG_LVL_WARN, "hsm", "malformed %s request from %s: %s",
			wire_opcode_name(req->hdr->opcode), req->peer,
			wire_cursor_ok(c) ? "trailing bytes" : "bad field");
	return -EPROTO;
}

static int do_request(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_request r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_request_decode(&c, &r);
	if (!wire_cursor_ok(&c))
		return finish_decode(req, &c);
	struct nacre_fid *fids = malloc(sizeof(*fids) * r.nfids);
	int32_t *rcs = calloc(r.nfids, sizeof(*rcs));
	if (!fids || !rcs) {
		free(fids);
		free(rcs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r.nfids; i++)
		wire_fid_get(&c, &fids[i]);
	int rc = finish_decode(req, &c);
	if (!rc) {
		struct hsm_req_arg a = {h, &r, fids, rcs, 0, 0};
		rc = mds_writer_submit(h->m->writer, mds_hsm_request_op, &a);
		if (a.released)
			mds_destroyer_kick(h->m->destroyer);
		if (a.queued)
			wake(h);
	}
	if (!rc) {
		struct wire_hsm_request_rep head = {.nfids = r.nfids};
		wire_hsm_request_rep_encode(&rep->body, &head);
		for (uint32_t i = 0; i < r.nfids; i++)
			wire_hsm_rc_put(&rep->body, rcs[i]);
		rc = wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
	}
	free(fids);
	free(rcs);
	return rc;
}

static int do_state_get(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_fid_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_fid_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	struct nacre_attr a;
	rc = mds_ns_getattr(h->m, &r.cred, &r.fid, &a);
	if (rc)
		return rc;
	struct wire_hsm_state s = {a.hsm_state, a.archive_id};
	wire_hsm_state_encode(&rep->body, &s);
	return 0;
}

struct state_arg {
	struct mds *m;
	const struct wire_hsm_state_set *r;
	struct wire_hsm_state out;
};

static int state_op(struct mds_txn *txn, void *arg)
{
	struct state_arg *a = arg;
	const struct wire_hsm_state_set *r = a->r;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, &r->fid, &ino);
	if (rc)
		return rc;
	if (!S_ISREG(ino.mode))
		return -EINVAL;
	if (!is_owner(&r->cred, &ino))
		return -EPERM;
	/* as Lustre: users may change only the user flags; released follows the objects */
	if (!mds_perm_is_root(&r->cred) && ((r->set | r->clear) & ~(uint32_t)USER_MASK))
		return -EPERM;
	if ((r->set | r->clear) & NACRE_HS_RELEASED)
		return -EINVAL;
	ino.hsm_state = (ino.hsm_state | r->set) & ~r->clear;
	if (r->archive_id)
		ino.archive_id = r->archive_id;
	rc = mds_db_inode_put(txn, &ino);
	if (!rc)
		rc = mds_changelog_hsm(a->m->changelog, txn, NACRE_CL_HE_STATE, 0,
				       (ino.hsm_state & NACRE_HS_DIRTY) != 0, &r->fid);
	a->out.state = ino.hsm_state;
	a->out.archive_id = ino.archive_id;
	return rc;
}

static int do_state_set(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_state_set r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_state_set_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	struct state_arg a = {h->m, &r, {0, 0}};
	rc = mds_writer_submit(h->m->writer, state_op, &a);
	if (!rc)
		wire_hsm_state_encode(&rep->body, &a.out);
	return rc;
}

/* Overlays the in-memory progress of a STARTED action. */
static void overlay(struct mds_hsm *h, struct nacre_hsm_action *a)
{
	if (a->status != NACRE_HAS_STARTED)
		return;
	pthread_mutex_lock(&h->lock);
	struct active *ac = mds_hsm_active_find(h, a->cookie);
	if (ac) {
		a->bytes_done = ac->done;
		if (ac->total)
			a->bytes_total = ac->total;
	}
	pthread_mutex_unlock(&h->lock);
}

static int do_action(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_fid_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_fid_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	struct mds_txn *txn;
	if (!rec)
		return -ENOMEM;
	rc = mds_txn_begin_read(h->m->db, &txn);
	if (rc) {
		free(rec);
		return rc;
	}
	struct mds_inode ino;
	rc = mds_db_inode_get(txn, &r.fid, &ino);
	int have = !rc && mds_hsm_active_rec(txn, &r.fid, rec) == 0;
	mds_txn_abort(txn);
	if (!rc) {
		struct wire_hsm_action_rep head = {.has = have ? 1 : 0};
		wire_hsm_action_rep_encode(&rep->body, &head);
		if (have) {
			overlay(h, &rec->a);
			wire_hsm_action_put(&rep->body, &rec->a);
		}
	}
	free(rec);
	return rc;
}

static int do_list(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_list_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_list_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	uint32_t max = r.max ? r.max : WIRE_HSM_POLL_MAX;
	struct mds_hsm_rec *rec = malloc(sizeof(*rec));
	struct mds_txn *txn;
	if (!rec)
		return -ENOMEM;
	rc = mds_txn_begin_read(h->m->db, &txn);
	if (rc) {
		free(rec);
		return rc;
	}
	size_t head_pos = wire_cursor_pos(&rep->body);
	struct wire_hsm_list_rep head = {0};
	wire_hsm_list_rep_encode(&rep->body, &head);
	uint32_t n = 0;
	int eof = 1;
	for (uint64_t from = r.cookie + 1; r.cookie != UINT64_MAX; from = rec->a.cookie + 1) {
		if (mds_db_hsm_next(txn, from, rec))
			break;
		/* stop before an action could overflow the body */
		if (n >= max || wire_cursor_pos(&rep->body) + WIRE_HSM_ACTION_MAX + 64 >
					WIRE_BODY_MAX) {
			eof = 0;
			break;
		}
		overlay(h, &rec->a);
		wire_hsm_action_put(&rep->body, &rec->a);
		n++;
		if (rec->a.cookie == UINT64_MAX)
			break;
	}
	mds_txn_abort(txn);
	free(rec);
	head.count = n;
	head.eof = eof;
	wire_hsm_list_rep_patch(&rep->body, head_pos, &head);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}

static int do_register(struct mds_hsm *h, const struct rpc_request *req)
{
	struct wire_hsm_agent_reg r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_agent_reg_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	if (!mds_perm_is_root(&r.cred))
		return -EPERM;
	pthread_mutex_lock(&h->lock);
	struct agent *ag = mds_hsm_agent_find(h, req->conn_id);
	if (!ag) {
		if (h->nagents >= MAX_AGENTS) {
			pthread_mutex_unlock(&h->lock);
			return -EUSERS;
		}
		ag = &h->agents[h->nagents++];
		memset(ag, 0, sizeof(*ag));
		ag->conn = req->conn_id;
	}
	memcpy(ag->ids, r.ids, sizeof(ag->ids));
	ag->nids = r.nids;
	ag->max_active = r.max_active;
	pthread_cond_broadcast(&h->work);
	pthread_mutex_unlock(&h->lock);
	LOG_INFO("hsm", "agent %s (%s) registered for %u archive ids, %u actions at once",
		 req->peer_name ? req->peer_name : "?", req->peer, r.nids, r.max_active);
	return 0;
}

static int do_poll(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_poll_req r;
	struct wire_cursor c;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_poll_req_decode(&c, &r);
	int rc = finish_decode(req, &c);
	if (rc)
		return rc;
	uint32_t max = r.max < WIRE_HSM_POLL_REP_MAX ? r.max : WIRE_HSM_POLL_REP_MAX;
	struct nacre_hsm_action *out = malloc(sizeof(*out) * max);
	if (!out)
		return -ENOMEM;
	int64_t deadline = now_ms() + r.wait_ms;
	int n;
	for (;;) {
		n = mds_hsm_poll_once(h, req->conn_id, max, out);
		if (n != 0 || now_ms() >= deadline)
			break;
		/* a bounded wait: workers are shared, so never longer than WIRE_HSM_WAIT_MAX_MS */
		struct timespec ts;
		int64_t wait = deadline - now_ms();
		if (wait > 500)
			wait = 500;
		time_after_ms(&ts, CLOCK_REALTIME, wait);
		pthread_mutex_lock(&h->lock);
		if (!h->stop)
			pthread_cond_timedwait(&h->work, &h->lock, &ts);
		int stop = h->stop;
		pthread_mutex_unlock(&h->lock);
		if (stop)
			break;
	}
	if (n < 0) {
		free(out);
		return n;
	}
	struct wire_hsm_poll_rep head = {.count = (uint32_t)n};
	wire_hsm_poll_rep_encode(&rep->body, &head);
	for (int i = 0; i < n; i++)
		wire_hsm_action_put(&rep->body, &out[i]);
	free(out);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}

static int do_progress(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_progress *p = malloc(sizeof(*p));
	struct wire_cursor c;
	if (!p)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_progress_decode(&c, p);
	int rc = finish_decode(req, &c);
	if (rc) {
		free(p);
		return rc;
	}
	uint32_t flags = 0, action = 0;
	pthread_mutex_lock(&h->lock);
	struct active *ac = mds_hsm_active_find(h, p->cookie);
	if (!ac || ac->ending || ac->conn != req->conn_id || !fid_eq(&ac->fid, &p->fid)) {
		pthread_mutex_unlock(&h->lock);
		free(p);
		return -ESTALE; /* taken back (timeout) or never ours: the agent must drop it */
	}
	ac->done = p->bytes_done;
	if (p->bytes_total)
		ac->total = p->bytes_total;
	ac->last_ms = now_ms();
	if (ac->cancel)
		flags |= WIRE_HSM_REP_CANCEL;
	action = ac->action;
	if (p->flags & WIRE_HSM_PROGRESS_FINAL)
		ac->ending = 1;
	pthread_mutex_unlock(&h->lock);
	if (p->flags & WIRE_HSM_PROGRESS_FINAL) {
		struct hsm_finish_arg a = {h, p->cookie, p, 0};
		char fs[NACRE_FID_STR_MAX];
		rc = mds_writer_submit(h->m->writer, mds_hsm_finish_op, &a);
		mds_hsm_drop_ended(h, &p->cookie, 1);
		if (a.destroyed)
			mds_destroyer_kick(h->m->destroyer);
		if (p->status && p->status != -ECANCELED) {
			LOG_WARN("hsm", "%s of %s failed on %s: %s",
				 action == NACRE_HSMA_ARCHIVE	  ? "ARCHIVE"
				 : action == NACRE_HSMA_RESTORE ? "RESTORE"
								: "REMOVE",
				 fid_format(&p->fid, fs, sizeof(fs)), req->peer,
				 nacre_strerror(p->status));
			if (action == NACRE_HSMA_RESTORE)
				mds_hsm_note_failure(h, &p->fid, p->status);
		}
		wake(h);
	}
	free(p);
	if (!rc) {
		struct wire_hsm_progress_rep out = {.flags = flags};
		wire_hsm_progress_rep_encode(&rep->body, &out);
	}
	return rc;
}

static int do_import(struct mds_hsm *h, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_hsm_import_req *r = malloc(sizeof(*r));
	struct wire_cursor c;
	if (!r)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_hsm_import_req_decode(&c, r);
	int rc = finish_decode(req, &c);
	if (!rc) {
		struct wire_attr_rep a;
		rc = mds_ns_import(h->m, r, &a.attr);
		if (!rc)
			wire_attr_rep_encode(&rep->body, &a);
	}
	free(r);
	return rc;
}

int mds_hsm_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct mds_hsm *h = m->hsm;
	if (!h)
		return -EOPNOTSUPP;
	switch (req->hdr->opcode) {
	case WIRE_OP_MDS_HSM_REQUEST:
		return do_request(h, req, rep);
	case WIRE_OP_MDS_HSM_STATE_GET:
		return do_state_get(h, req, rep);
	case WIRE_OP_MDS_HSM_STATE_SET:
		return do_state_set(h, req, rep);
	case WIRE_OP_MDS_HSM_ACTION:
		return do_action(h, req, rep);
	case WIRE_OP_MDS_HSM_LIST:
		return do_list(h, req, rep);
	case WIRE_OP_MDS_HSM_AGENT_REGISTER:
		return do_register(h, req);
	case WIRE_OP_MDS_HSM_AGENT_POLL:
		return do_poll(h, req, rep);
	case WIRE_OP_MDS_HSM_AGENT_PROGRESS:
		return do_progress(h, req, rep);
	case WIRE_OP_MDS_HSM_IMPORT:
		return do_import(h, req, rep);
	default:
		return -EOPNOTSUPP;
	}
}
