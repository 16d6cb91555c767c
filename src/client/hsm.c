/* hsm.c - libnacre's HSM calls: user requests, state, the action queue, import, and the
 * agent (copytool) calls. The wait for an implicit restore is in mdc.c, under every MDS call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "proto/wire.h"

/* fids per HSM_REQUEST: the header (cred up to 140 bytes + 16) and 16 bytes per fid must
 * fit the 64 KiB body */
#define REQ_BATCH 3000

static int call(struct nacre_fs *fs, uint16_t op, struct wire_cursor *c, struct rpc_msg **rep)
{
	int rc = cl_mds_call(fs, op, c, rep);
	wire_cursor_fini(c);
	return rc;
}

NACRE_API int nacre_hsm_request(struct nacre_fs *fs, const struct nacre_cred *cr,
				uint32_t action, uint32_t archive_id,
				const struct nacre_fid *fids, int n, int *rcs)
{
	struct nacre_cred root;

	if (!fs || n < 0 || (n > 0 && (!fids || !rcs)))
		return -EINVAL;
	for (int done = 0; done < n;) {
		int k = n - done > REQ_BATCH ? REQ_BATCH : n - done;
		struct wire_hsm_request r = {.cred = *cl_cred(cr, &root), .action = action,
					     .archive_id = archive_id, .nfids = (uint32_t)k};
		struct wire_hsm_request_rep head;
		struct wire_cursor c;
		struct rpc_msg *m;
		int rc;

		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_hsm_request_encode(&c, &r);
		for (int i = 0; i < k; i++) {
			wire_fid_put(&c, &fids[done + i]);
			cl_lease_attr_forget(fs, &fids[done + i]); /* its HSM state changes */
		}
		rc = call(fs, WIRE_OP_MDS_HSM_REQUEST, &c, &m);
		if (rc)
			return rc;
		wire_cursor_init_read(&c, m->body, m->body_len);
		wire_hsm_request_rep_decode(&c, &head);
		if (head.nfids != (uint32_t)k)
			wire_cursor_fail(&c, -EPROTO);
		for (int i = 0; i < k && wire_cursor_ok(&c); i++) {
			int32_t v;
			wire_hsm_rc_get(&c, &v);
			rcs[done + i] = v > 0 ? -EPROTO : v;
		}
		rc = cl_decode_end(&c);
		rpc_msg_free(m);
		if (rc)
			return rc;
		done += k;
	}
	return 0;
}

static int fid_call(struct nacre_fs *fs, const struct nacre_cred *cr, uint16_t op,
		    const struct nacre_fid *fid, struct rpc_msg **rep)
{
	struct nacre_cred root;
	struct wire_fid_req r;
	struct wire_cursor c;

	if (!fs || !fid)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.cred = *cl_cred(cr, &root);
	r.fid = *fid;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_fid_req_encode(&c, &r);
	return call(fs, op, &c, rep);
}

static int state_reply(struct rpc_msg *m, uint32_t *state, uint32_t *archive_id)
{
	struct wire_hsm_state s;
	struct wire_cursor c;
	int rc;

	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_hsm_state_decode(&c, &s);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc)
		return rc;
	if (state)
		*state = s.state;
	if (archive_id)
		*archive_id = s.archive_id;
	return 0;
}

NACRE_API int nacre_hsm_state_get(struct nacre_fs *fs, const struct nacre_cred *cr,
				  const struct nacre_fid *fid, uint32_t *state,
				  uint32_t *archive_id)
{
	struct rpc_msg *m;
	int rc = fid_call(fs, cr, WIRE_OP_MDS_HSM_STATE_GET, fid, &m);

	return rc ? rc : state_reply(m, state, archive_id);
}

NACRE_API int nacre_hsm_state_set(struct nacre_fs *fs, const struct nacre_cred *cr,
				  const struct nacre_fid *fid, uint32_t set, uint32_t clear,
				  uint32_t archive_id, uint32_t *state, uint32_t *archive_id_out)
{
	struct nacre_cred root;
	struct wire_hsm_state_set r;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || !fid || (set & clear))
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.cred = *cl_cred(cr, &root);
	r.fid = *fid;
	r.set = set;
	r.clear = clear;
	r.archive_id = archive_id;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_hsm_state_set_encode(&c, &r);
	rc = call(fs, WIRE_OP_MDS_HSM_STATE_SET, &c, &m);
	cl_lease_attr_forget(fs, fid); /* its HSM state changed */
	return rc ? rc : state_reply(m, state, archive_id_out);
}

NACRE_API int nacre_hsm_action_get(struct nacre_fs *fs, const struct nacre_cred *cr,
				   const struct nacre_fid *fid, struct nacre_hsm_action *out)
{
	struct wire_hsm_action_rep head;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc = fid_call(fs, cr, WIRE_OP_MDS_HSM_ACTION, fid, &m);

	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_hsm_action_rep_decode(&c, &head);
	if (head.has)
		wire_hsm_action_get(&c, out);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	return rc ? rc : head.has;
}

/* Decodes the n actions after a list header (whose decoder checked n against the bytes
 * present) into out, which holds max. */
static int actions_decode(struct wire_cursor *c, uint32_t n, struct nacre_hsm_action *out,
			  int max)
{
	if (n > (uint32_t)max)
		return -EPROTO;
	for (uint32_t i = 0; i < n; i++)
		wire_hsm_action_get(c, &out[i]);
	return cl_decode_end(c) ? -EPROTO : (int)n;
}

NACRE_API int nacre_hsm_list(struct nacre_fs *fs, const struct nacre_cred *cr, uint64_t after,
			     struct nacre_hsm_action *out, int max, int *eof)
{
	struct nacre_cred root;
	struct wire_hsm_list_req r;
	struct wire_hsm_list_rep head;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || !out || max <= 0 || !eof)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.cred = *cl_cred(cr, &root);
	r.cookie = after;
	r.max = max > WIRE_HSM_POLL_MAX ? WIRE_HSM_POLL_MAX : (uint32_t)max;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_hsm_list_req_encode(&c, &r);
	rc = call(fs, WIRE_OP_MDS_HSM_LIST, &c, &m);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_hsm_list_rep_decode(&c, &head);
	rc = wire_cursor_ok(&c) ? actions_decode(&c, head.count, out, max) : -EPROTO;
	rpc_msg_free(m);
	*eof = head.eof;
	return rc;
}

NACRE_API int nacre_hsm_import(struct nacre_fs *fs, const struct nacre_cred *cr,
			       const struct nacre_fid *parent, const char *name, uint32_t mode,
			       uint32_t uid, uint32_t gid, uint64_t size,
			       const struct nacre_time *mtime, uint32_t archive_id,
			       const char *path, struct nacre_attr *out)
{
	struct nacre_cred root;
	struct wire_hsm_import_req *r;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || !parent || !name || !mtime || !path || !path[0] || archive_id == 0)
		return -EINVAL;
	if (strlen(name) > NACRE_NAME_MAX || strlen(path) > NACRE_PATH_MAX)
		return -ENAMETOOLONG;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cred = *cl_cred(cr, &root);
	r->parent = *parent;
	memcpy(r->name, name, strlen(name) + 1);
	r->mode = mode & 07777;
	r->uid = uid;
	r->gid = gid;
	r->size = size;
	r->mtime = *mtime;
	r->archive_id = archive_id;
	memcpy(r->path, path, strlen(path) + 1);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_hsm_import_req_encode(&c, r);
	free(r);
	rc = call(fs, WIRE_OP_MDS_HSM_IMPORT, &c, &m);
	if (rc == 0 || rc == -EEXIST)
		cl_lease_named(fs, parent, name, NULL);
	else
		cl_lease_doubt(fs, parent); /* the import may have made it */
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	struct wire_attr_rep a;
	wire_attr_rep_decode(&c, &a);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (!rc && out)
		*out = a.attr;
	return rc;
}

NACRE_API int nacre_hsm_agent_register(struct nacre_fs *fs, const uint32_t *archive_ids,
				       int nids, int max_active)
{
	struct wire_hsm_agent_reg r;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || nids < 0 || nids > WIRE_HSM_ARCHIVES_MAX || (nids && !archive_ids) ||
	    max_active < 1)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.max_active = (uint32_t)(max_active > 1024 ? 1024 : max_active);
	r.nids = (uint32_t)nids;
	for (int i = 0; i < nids; i++)
		r.ids[i] = archive_ids[i];
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_hsm_agent_reg_encode(&c, &r);
	rc = call(fs, WIRE_OP_MDS_HSM_AGENT_REGISTER, &c, &m);
	if (rc)
		return rc;
	rc = m->body_len == 0 ? 0 : -EPROTO;
	rpc_msg_free(m);
	return rc;
}

NACRE_API int nacre_hsm_agent_poll(struct nacre_fs *fs, struct nacre_hsm_action *out, int max,
				   int wait_ms)
{
	struct wire_hsm_poll_req r;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || !out || max < 1)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.max = max > WIRE_HSM_POLL_MAX ? WIRE_HSM_POLL_MAX : (uint32_t)max;
	r.wait_ms = wait_ms < 0 ? 0 : (uint32_t)wait_ms;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_hsm_poll_req_encode(&c, &r);
	rc = call(fs, WIRE_OP_MDS_HSM_AGENT_POLL, &c, &m);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	struct wire_hsm_poll_rep head;
	wire_hsm_poll_rep_decode(&c, &head);
	rc = wire_cursor_ok(&c) ? actions_decode(&c, head.count, out, max) : -EPROTO;
	rpc_msg_free(m);
	return rc;
}

NACRE_API int nacre_hsm_agent_progress(struct nacre_fs *fs, const struct nacre_hsm_action *a,
				       uint64_t done, uint64_t total, int final, int status,
				       const char *path)
{
	struct wire_hsm_progress *p;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || !a || status > 0 || (status && !final) ||
	    (path && strlen(path) > NACRE_PATH_MAX))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cookie = a->cookie;
	p->fid = a->fid;
	p->bytes_done = done;
	p->bytes_total = total;
	p->flags = final ? WIRE_HSM_PROGRESS_FINAL : 0;
	p->status = status;
	if (path)
		memcpy(p->path, path, strlen(path) + 1);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_hsm_progress_encode(&c, p);
	free(p);
	rc = call(fs, WIRE_OP_MDS_HSM_AGENT_PROGRESS, &c, &m);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	struct wire_hsm_progress_rep r;
	wire_hsm_progress_rep_decode(&c, &r);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc)
		return rc;
	return (r.flags & WIRE_HSM_REP_CANCEL) ? 1 : 0;
}
