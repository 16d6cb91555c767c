/* quota.c - nacre_quota_call: one QUOTA request with the caller's credentials;
 * nacre_statfs_project: statfs as seen from a project directory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "nacre/nacre.h"
#include "proto/rpc.h"
#include "proto/wire.h"

NACRE_API int nacre_quota_call(struct nacre_fs *fs, const struct nacre_cred *cr,
			       const void *req, size_t req_len, void *out, size_t out_len)
{
	struct wire_quota_req r;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int rc;

	if (!fs || !req || !out)
		return -EINVAL;
	wire_cursor_init_read(&c, req, req_len);
	wire_quota_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		return -EINVAL;
	r.cred = *cl_cred(cr, &root);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_quota_req_encode(&c, &r);
	rc = cl_mds_call(fs, WIRE_OP_MDS_QUOTA, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	if (m->body_len > out_len) {
		rpc_msg_free(m);
		return -E2BIG;
	}
	memcpy(out, m->body, m->body_len);
	rc = (int)m->body_len;
	rpc_msg_free(m);
	return rc;
}

NACRE_API int nacre_statfs_project(struct nacre_fs *fs, const struct nacre_cred *cr,
				   const struct nacre_fid *fid, struct nacre_statfs *s)
{
	char t[32], *end;
	struct wire_quota_req r;
	struct wire_quota_rep q;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int n = nacre_getxattr(fs, cr, fid, "trusted.nacre.project", t, sizeof(t) - 1);

	if (n <= 0)
		return 0; /* an MDS without projects, or none: the file system's figures */
	t[n] = '\0';
	unsigned long id = strtoul(t, &end, 10);
	if (id == 0 || strcmp(end, " P"))
		return 0; /* as Lustre: only a directory that passes its project on */
	memset(&r, 0, sizeof(r));
	r.cred = *cl_cred(cr, &root);
	r.op = WIRE_QUOTA_GET;
	r.type = 2;
	r.id = (uint32_t)id;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_quota_req_encode(&c, &r);
	int rc = cl_mds_call(fs, WIRE_OP_MDS_QUOTA, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc == -EOPNOTSUPP ? 0 : rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_quota_rep_decode(&c, &q);
	rc = wire_cursor_ok(&c) ? 0 : -EPROTO;
	rpc_msg_free(m);
	if (rc)
		return rc;
	uint64_t bl = q.bhard ? q.bhard : q.bsoft, il = q.ihard ? q.ihard : q.isoft;
	if (bl) {
		s->kb_total = bl;
		s->kb_free = s->kb_avail = bl > q.kbytes ? bl - q.kbytes : 0;
	}
	if (il) {
		s->files = il;
		s->ffree = il > q.inodes ? il - q.inodes : 0;
	}
	return 0;
}
