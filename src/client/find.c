/* find.c - nacre_find_page: one page of the MDS's namespace scan (FIND). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "nacre/nacre.h"
#include "proto/rpc.h"
#include "proto/wire.h"

NACRE_API int nacre_find_page(struct nacre_fs *fs, const struct nacre_cred *cr,
			      const struct nacre_fid *dir, const void *req, size_t req_len,
			      void *out, size_t out_len)
{
	struct wire_find_req *r;
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m;
	int rc;

	if (!fs || !dir || !req || !out)
		return -EINVAL;
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	wire_cursor_init_read(&c, req, req_len);
	wire_find_req_decode(&c, r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c)) {
		free(r);
		return -EINVAL;
	}
	/* the page must fit in out with the reply header (a cursor path at most) */
	size_t room = out_len > 4200 ? out_len - 4200 : 0;
	if (r->max_bytes > room)
		r->max_bytes = (uint32_t)room;
	r->cred = *cl_cred(cr, &root);
	r->fid = *dir;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_find_req_encode(&c, r);
	free(r);
	rc = cl_mds_call(fs, WIRE_OP_MDS_FIND, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	if (m->body_len > out_len) {
		rpc_msg_free(m);
		return -EPROTO;
	}
	memcpy(out, m->body, m->body_len);
	rc = (int)m->body_len;
	rpc_msg_free(m);
	return rc;
}
