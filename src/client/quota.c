/* quota.c - QUOTA requests: nacre_quota_call (to the MDS), nacre_quota_ioctl and its mount's
 * side (through the NACRE_IOC_QUOTA ioctl), the codec between nacre_quota_* and the wire;
 * nacre_statfs_project: statfs as seen from a project directory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/quota.h"
#include "nacre/nacre.h"
#include "nacre/nacre_ioctl.h"
#include "proto/rpc.h"
#include "proto/wire.h"

/* The public constants are the wire's, so that requests and replies copy field by field. */
#define SAME(name) ((int)NACRE_QUOTA_##name == (int)WIRE_QUOTA_##name)
_Static_assert(SAME(GET) && SAME(SET) && SAME(GRACE) && SAME(DEFAULT) && SAME(GETDEF) &&
		       SAME(CHECK) && SAME(TARGETS) && WIRE_QUOTA_OPS_ == 7,
	       "quota ops");
_Static_assert(SAME(V_BSOFT) && SAME(V_BHARD) && SAME(V_ISOFT) && SAME(V_IHARD) &&
		       SAME(V_BGRACE) && SAME(V_IGRACE) && SAME(V_FIX) &&
		       WIRE_QUOTA_V_ALL_ == 0x7fu && SAME(F_DEFAULT),
	       "quota valid bits and flags");
#undef SAME

/* req as the wire's request with cred; -EINVAL where the MDS's decode would refuse it. */
static int quota_req_to_wire(const struct nacre_quota_req *req, const struct nacre_cred *cred,
			     struct wire_quota_req *r)
{
	if (req->op >= WIRE_QUOTA_OPS_ || req->type > NACRE_QUOTA_PRJ ||
	    (req->valid & ~WIRE_QUOTA_V_ALL_))
		return -EINVAL;
	*r = (struct wire_quota_req){
		.op = req->op,
		.type = req->type,
		.id = req->id,
		.valid = req->valid,
		.bsoft = req->bsoft,
		.bhard = req->bhard,
		.isoft = req->isoft,
		.ihard = req->ihard,
		.bgrace = req->bgrace,
		.igrace = req->igrace,
	};
	if (cred)
		r->cred = *cred;
	return 0;
}

int cl_quota_req_encode(struct wire_cursor *c, const struct nacre_cred *cred,
			const struct nacre_quota_req *req)
{
	struct wire_quota_req r;
	int rc = quota_req_to_wire(req, cred, &r);

	if (rc)
		return rc;
	wire_quota_req_encode(c, &r);
	return 0;
}

int cl_quota_rep_decode(const void *body, size_t len, uint32_t op, struct nacre_quota_rep *rep)
{
	struct wire_quota_rep q;
	struct wire_cursor c;

	memset(rep, 0, sizeof(*rep));
	wire_cursor_init_read(&c, body, len);
	wire_quota_rep_decode(&c, &q);
	if (!wire_cursor_ok(&c))
		return -EPROTO;
	*rep = (struct nacre_quota_rep){
		.kbytes = q.kbytes,
		.inodes = q.inodes,
		.bsoft = q.bsoft,
		.bhard = q.bhard,
		.isoft = q.isoft,
		.ihard = q.ihard,
		.btime = q.btime,
		.itime = q.itime,
		.bgrace = q.bgrace,
		.igrace = q.igrace,
		.flags = q.flags,
		.count = q.count,
	};
	/* The items' kind follows the request; other ops carry none (any sent are ignored).
	 * The reply's decode bounded count by the bytes present, so allocating it is safe. */
	if (op == NACRE_QUOTA_CHECK && q.count) {
		if (q.count > WIRE_QUOTA_DRIFT_MAX)
			goto out_proto;
		rep->drift = calloc(q.count, sizeof(*rep->drift));
		if (!rep->drift)
			goto out_nomem;
		for (uint32_t i = 0; i < q.count && wire_cursor_ok(&c); i++) {
			struct wire_quota_drift d;
			wire_quota_drift_get(&c, &d);
			rep->drift[i] = (struct nacre_quota_drift){
				.type = d.type,
				.id = d.id,
				.kbytes = d.kbytes,
				.inodes = d.inodes,
				.count_kbytes = d.count_kbytes,
				.count_inodes = d.count_inodes,
			};
		}
	} else if (op == NACRE_QUOTA_TARGETS && q.count) {
		rep->targets = calloc(q.count, sizeof(*rep->targets));
		if (!rep->targets)
			goto out_nomem;
		for (uint32_t i = 0; i < q.count && wire_cursor_ok(&c); i++) {
			struct wire_quota_target t;
			wire_quota_target_get(&c, &t);
			rep->targets[i].ost_idx = t.ost_idx;
			rep->targets[i].kbytes = t.kbytes;
		}
	}
	if (!wire_cursor_ok(&c))
		goto out_proto;
	return 0;

out_proto:
	nacre_quota_rep_fini(rep);
	return -EPROTO;
out_nomem:
	nacre_quota_rep_fini(rep);
	return -ENOMEM;
}

NACRE_API void nacre_quota_rep_fini(struct nacre_quota_rep *rep)
{
	if (!rep)
		return;
	free(rep->drift);
	free(rep->targets);
	rep->drift = NULL;
	rep->targets = NULL;
	rep->count = 0;
}

/* Sends r with cr's credentials (they replace r's); *m gets the reply. */
static int quota_rpc(struct nacre_fs *fs, const struct nacre_cred *cr, struct wire_quota_req *r,
		     struct rpc_msg **m)
{
	struct wire_cursor c;
	struct nacre_cred root;
	int rc;

	r->cred = *cl_cred(cr, &root);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_quota_req_encode(&c, r);
	rc = cl_mds_call(fs, WIRE_OP_MDS_QUOTA, &c, m);
	wire_cursor_fini(&c);
	return rc;
}

NACRE_API int nacre_quota_call(struct nacre_fs *fs, const struct nacre_cred *cr,
			       const struct nacre_quota_req *req, struct nacre_quota_rep *rep)
{
	struct wire_quota_req r;
	struct rpc_msg *m;
	int rc;

	if (!rep)
		return -EINVAL;
	memset(rep, 0, sizeof(*rep));
	if (!fs || !req)
		return -EINVAL;
	rc = quota_req_to_wire(req, NULL, &r);
	if (rc)
		return rc;
	rc = quota_rpc(fs, cr, &r, &m);
	if (rc)
		return rc;
	rc = cl_quota_rep_decode(m->body, m->body_len, req->op, rep);
	rpc_msg_free(m);
	return rc;
}

/* The ioctl's payload, both ways (nacre_ioctl.h): a u32 little-endian length and a quota_req
 * body (credentials zero: the mount puts the caller's) in NACRE_IOC_FIND_SIZE bytes; back,
 * the MDS's quota_rep body as it came. */
NACRE_API int nacre_quota_ioctl(int fd, const struct nacre_quota_req *req,
				struct nacre_quota_rep *rep)
{
	struct wire_cursor c;
	unsigned char *buf;
	int rc, n;

	if (!rep)
		return -EINVAL;
	memset(rep, 0, sizeof(*rep));
	if (!req)
		return -EINVAL;
	buf = calloc(1, NACRE_IOC_FIND_SIZE);
	if (!buf)
		return -ENOMEM;
	wire_cursor_init_write(&c, buf + 4, NACRE_IOC_FIND_SIZE - 4);
	rc = cl_quota_req_encode(&c, NULL, req);
	if (rc)
		goto out_free;
	size_t len = wire_cursor_pos(&c);
	for (int i = 0; i < 4; i++)
		buf[i] = (unsigned char)(len >> (8 * i));
	n = ioctl(fd, NACRE_IOC_QUOTA, buf);
	if (n < 0) {
		rc = -errno;
		goto out_free;
	}
	rc = cl_quota_rep_decode(buf, (size_t)n, req->op, rep);
	if (rc == -EPROTO)
		rc = -EBADMSG; /* apart from an EPROTO the mount passed on */
out_free:
	free(buf);
	return rc;
}

NACRE_API int nacre_quota_ioctl_serve(struct nacre_fs *fs, const struct nacre_cred *cr,
				      const void *in, size_t in_len, void *out, size_t out_len)
{
	struct wire_quota_req r;
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!fs || !in || !out)
		return -EINVAL;
	wire_cursor_init_read(&c, in, in_len);
	wire_quota_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		return -EINVAL;
	rc = quota_rpc(fs, cr, &r, &m);
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
	struct nacre_quota_req r;
	struct nacre_quota_rep q;
	int n = nacre_getxattr(fs, cr, fid, "trusted.nacre.project", t, sizeof(t) - 1);

	if (n <= 0)
		return 0; /* an MDS without projects, or none: the file system's figures */
	t[n] = '\0';
	unsigned long id = strtoul(t, &end, 10);
	if (id == 0 || strcmp(end, " P"))
		return 0; /* as Lustre: only a directory that passes its project on */
	memset(&r, 0, sizeof(r));
	r.op = NACRE_QUOTA_GET;
	r.type = NACRE_QUOTA_PRJ;
	r.id = (uint32_t)id;
	int rc = nacre_quota_call(fs, cr, &r, &q);
	if (rc)
		return rc == -EOPNOTSUPP ? 0 : rc;
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
