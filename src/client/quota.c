/* quota.c - nacre_quota_call: one QUOTA request with the caller's credentials. */
#include <errno.h>
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
