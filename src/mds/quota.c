/* quota.c - QUOTA requests: reads in a read transaction, changes through the writer. */
#include "mds/quota.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/layout.h"
#include "mds/db.h"
#include "mds/mds.h"
#include "mds/targets.h"
#include "mds/writer.h"
#include "proto/wire.h"

struct quota_op {
	const struct wire_quota_req *r;
	struct wire_quota_rep *rep;
	struct wire_quota_drift *drift; /* CHECK: up to WIRE_QUOTA_DRIFT_MAX */
};

static void merge(struct mds_quota *q, const struct wire_quota_req *r)
{
	if (r->valid & WIRE_QUOTA_V_BSOFT)
		q->bsoft = r->bsoft;
	if (r->valid & WIRE_QUOTA_V_BHARD)
		q->bhard = r->bhard;
	if (r->valid & WIRE_QUOTA_V_ISOFT)
		q->isoft = r->isoft;
	if (r->valid & WIRE_QUOTA_V_IHARD)
		q->ihard = r->ihard;
}

static void on_drift(void *arg, uint32_t kind, uint32_t id, const struct mds_quota *stored,
		     uint64_t kbytes, uint64_t inodes)
{
	struct quota_op *o = arg;

	if (o->rep->count >= WIRE_QUOTA_DRIFT_MAX)
		return;
	o->drift[o->rep->count++] = (struct wire_quota_drift){
		kind, id, stored->kbytes, stored->inodes, kbytes, inodes};
}

static int change_op(struct mds_txn *txn, void *arg)
{
	struct quota_op *o = arg;
	const struct wire_quota_req *r = o->r;
	struct mds_quota q;
	uint32_t n;
	int rc;

	switch (r->op) {
	case WIRE_QUOTA_SET:
	case WIRE_QUOTA_DEFAULT: {
		uint32_t kind = r->op == WIRE_QUOTA_SET ? r->type : MDS_QUOTA_KIND_DEFAULT + r->type;
		uint32_t id = r->op == WIRE_QUOTA_SET ? r->id : 0;
		rc = mds_db_quota_get(txn, kind, id, &q);
		if (rc && rc != -ENOENT)
			return rc;
		merge(&q, r);
		if ((q.bsoft && q.bhard && q.bsoft > q.bhard) ||
		    (q.isoft && q.ihard && q.isoft > q.ihard))
			return -EINVAL;
		/* a new soft limit starts its grace when next crossed */
		q.btime = q.itime = 0;
		return mds_db_quota_put(txn, kind, id, &q);
	}
	case WIRE_QUOTA_GRACE:
		rc = mds_db_quota_get(txn, MDS_QUOTA_KIND_GRACE + r->type, 0, &q);
		if (rc == -ENOENT)
			q.bsoft = q.isoft = MDS_QUOTA_GRACE_DEFAULT;
		else if (rc)
			return rc;
		if (r->valid & WIRE_QUOTA_V_BGRACE)
			q.bsoft = r->bgrace;
		if (r->valid & WIRE_QUOTA_V_IGRACE)
			q.isoft = r->igrace;
		return mds_db_quota_put(txn, MDS_QUOTA_KIND_GRACE + r->type, 0, &q);
	case WIRE_QUOTA_CHECK:
		return mds_db_quota_recount(txn, (r->valid & WIRE_QUOTA_V_FIX) != 0, on_drift, o,
					    &n);
	default:
		return -EINVAL;
	}
}

static int fill(struct mds *m, const struct wire_quota_req *r, struct wire_quota_rep *out)
{
	struct mds_txn *txn;
	struct mds_quota q, lim;
	int def = 0, rc = mds_txn_begin_read(m->db, &txn);

	if (rc)
		return rc;
	memset(&q, 0, sizeof(q));
	if (r->op == WIRE_QUOTA_GETDEF) {
		rc = mds_db_quota_limits(txn, r->type, UINT32_MAX, &lim, &out->bgrace,
					 &out->igrace, &def);
		/* the defaults themselves, even for an id with limits of its own */
		if (!rc) {
			rc = mds_db_quota_get(txn, MDS_QUOTA_KIND_DEFAULT + r->type, 0, &lim);
			rc = rc == -ENOENT ? 0 : rc;
		}
	} else {
		rc = mds_db_quota_get(txn, r->type, r->id, &q);
		if (rc == -ENOENT)
			rc = 0;
		if (!rc)
			rc = mds_db_quota_limits(txn, r->type, r->id, &lim, &out->bgrace,
						 &out->igrace, &def);
	}
	mds_txn_abort(txn);
	if (rc)
		return rc;
	out->kbytes = q.kbytes;
	out->inodes = q.inodes;
	out->bsoft = lim.bsoft;
	out->bhard = lim.bhard;
	out->isoft = lim.isoft;
	out->ihard = lim.ihard;
	out->btime = q.btime;
	out->itime = q.itime;
	out->flags = def ? WIRE_QUOTA_F_DEFAULT : 0;
	return 0;
}

/* TARGETS: the share of an id's files on each OST, counted as the objects' sizes (each
 * rounded up to 4 KiB) from each file's size and layout. */
struct target_scan {
	uint32_t type, id;
	struct wire_quota_target *t;
	uint32_t n;
};

static int add_object(struct target_scan *s, uint32_t ost_idx, uint64_t kbytes)
{
	for (uint32_t i = 0; i < s->n; i++) {
		if (s->t[i].ost_idx == ost_idx) {
			s->t[i].kbytes += kbytes;
			return 0;
		}
	}
	if (s->n == WIRE_QUOTA_TARGET_MAX)
		return 0; /* an index the MDS does not know, past the reply's room: not shown */
	s->t[s->n++] = (struct wire_quota_target){ost_idx, kbytes};
	return 0;
}

static int scan_inode(void *arg, const struct mds_inode *ino)
{
	struct target_scan *s = arg;
	uint32_t owner = s->type == 0 ? ino->uid : s->type == 1 ? ino->gid : ino->projid;

	if (owner != s->id || !S_ISREG(ino->mode) || !ino->has_layout ||
	    (ino->hsm_state & NACRE_HS_RELEASED))
		return 0; /* a released file's data is in the archive, not on OSTs */
	for (uint32_t i = 0; i < ino->layout.nosts; i++) {
		uint64_t obj = layout_object_size(&ino->layout, ino->size, i);
		add_object(s, ino->layout.ost_idx[i], (obj + 4095) / 4096 * 4);
	}
	return 0;
}

static int cmp_target(const void *a, const void *b)
{
	uint32_t x = ((const struct wire_quota_target *)a)->ost_idx;
	uint32_t y = ((const struct wire_quota_target *)b)->ost_idx;

	return x < y ? -1 : x > y;
}

static int targets_op(struct mds *m, const struct wire_quota_req *r, struct wire_quota_rep *out,
		      struct rpc_reply *rep)
{
	struct target_scan s = {r->type, r->id, NULL, 0};
	struct wire_quota_req get = *r;
	struct nacre_target *known = NULL;
	struct mds_txn *txn;
	int n, rc;

	if (r->cred.uid != 0 && !(r->type == 0 && r->id == r->cred.uid) &&
	    !(r->type == 1 && r->id == r->cred.gid))
		return -EPERM; /* a scan of every inode: root's, or for one's own ids */
	get.op = WIRE_QUOTA_GET;
	rc = fill(m, &get, out);
	if (rc)
		return rc;
	s.t = calloc(WIRE_QUOTA_TARGET_MAX, sizeof(*s.t));
	n = s.t ? mds_targets_list(m->targets, &known) : -ENOMEM;
	if (n < 0) {
		free(s.t);
		return n;
	}
	for (int i = 0; i < n; i++) /* every OST, 0 KiB where it holds nothing of the id */
		add_object(&s, known[i].index, 0);
	free(known);
	rc = mds_txn_begin_read(m->db, &txn);
	if (!rc) {
		rc = mds_db_inode_iter(txn, scan_inode, &s);
		mds_txn_abort(txn);
	}
	if (!rc) {
		qsort(s.t, s.n, sizeof(*s.t), cmp_target);
		out->count = s.n;
		wire_quota_rep_encode(&rep->body, out);
		for (uint32_t i = 0; i < s.n; i++)
			wire_quota_target_put(&rep->body, &s.t[i]);
		rc = wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
	}
	free(s.t);
	return rc;
}

int mds_quota_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_quota_req r;
	struct wire_quota_rep out;
	struct wire_cursor c;
	struct quota_op o = {&r, &out, NULL};
	int rc;

	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_quota_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		return -EPROTO;
	if (mds_db_quota_off(m->db))
		return -EOPNOTSUPP; /* nacre-mds --quota off: no usage to show, no limit kept */
	memset(&out, 0, sizeof(out));
	if (r.op == WIRE_QUOTA_TARGETS)
		return targets_op(m, &r, &out, rep);
	if (r.op != WIRE_QUOTA_GET && r.op != WIRE_QUOTA_GETDEF) {
		if (r.cred.uid != 0)
			return -EPERM; /* as lfs setquota: root only */
		if (r.op == WIRE_QUOTA_CHECK) {
			o.drift = calloc(WIRE_QUOTA_DRIFT_MAX, sizeof(*o.drift));
			if (!o.drift)
				return -ENOMEM;
		}
		rc = mds_writer_submit(m->writer, change_op, &o);
		if (rc) {
			free(o.drift);
			return rc;
		}
	}
	if (r.op != WIRE_QUOTA_CHECK) {
		uint32_t op = r.op;
		if (op == WIRE_QUOTA_GRACE || op == WIRE_QUOTA_DEFAULT)
			r.op = WIRE_QUOTA_GETDEF;
		rc = fill(m, &r, &out);
		r.op = op;
		if (rc)
			return rc;
	}
	wire_quota_rep_encode(&rep->body, &out);
	for (uint32_t i = 0; i < out.count; i++)
		wire_quota_drift_put(&rep->body, &o.drift[i]);
	free(o.drift);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}
