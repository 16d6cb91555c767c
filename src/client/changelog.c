/* changelog.c - the changelog admin calls (CL_REGISTER, CL_DEREGISTER, CL_READ, CL_CLEAR,
 * CL_MASK), each on a connection of its own to the MDS, proving the cluster key or an admin
 * key, as the other admin calls (admin.c). docs/changelog.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "common/key.h"
#include "common/util.h"
#include "proto/rpc.h"
#include "proto/wire.h"

#define CL_TIMEOUT_MS 10000

static int load_key(const char *key_file, struct nacre_key *key, char *err, size_t err_len)
{
	if (!key_file)
		key_file = getenv("NACRE_KEY_FILE");
	memset(key, 0, sizeof(*key));
	if (!key_file || !key_file[0]) {
		snprintf(err, err_len, "no key: give --key-file (the cluster key, or an admin key) "
			 "or set NACRE_KEY_FILE");
		return -EINVAL;
	}
	int rc = key_load(key_file, key, err, err_len);
	if (rc && !err[0])
		snprintf(err, err_len, "cannot load key file %s: %s", key_file, nacre_strerror(rc));
	return rc;
}

/* One request; decodes the reply's header into head and up to max records into out.
 * Returns the records decoded or a negative error with a sentence in err. */
static int cl_call(const char *addr, const char *fsname, const char *key_file, uint16_t opcode,
		   const struct wire_changelog_req *req, struct wire_changelog_rep *head,
		   struct nacre_changelog_rec *out, int max, char *err, size_t err_len)
{
	struct rpc_conn_conf conf = {.addr = addr, .fsname = fsname, .name = "nacre-admin",
				     .timeout_ms = CL_TIMEOUT_MS,
				     .connect_timeout_ms = CL_TIMEOUT_MS};
	struct rpc_call_args a = {.opcode = opcode};
	struct rpc_conn *conn = NULL;
	struct rpc_msg *m = NULL;
	struct nacre_key key;
	struct wire_cursor c;
	char rpc_err[512] = "";
	int rc, n = 0;

	err[0] = '\0';
	rc = load_key(key_file, &key, err, err_len);
	if (rc)
		return rc;
	conf.key = &key;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_changelog_req_encode(&c, req);
	a.body = c.buf;
	a.body_len = (uint32_t)c.pos;
	rc = rpc_conn_create(&conf, &conn);
	if (rc) {
		snprintf(err, err_len, "cannot set up a connection to MDS %s: %s", addr,
			 nacre_strerror(rc));
		goto out;
	}
	rc = rpc_conn_connect(conn, CL_TIMEOUT_MS, rpc_err, sizeof(rpc_err));
	if (rc) {
		cl_connect_error("MDS", addr, "nacre-mds", rc, CL_TIMEOUT_MS, rpc_err, err,
				 err_len);
		goto out;
	}
	rc = rpc_call(conn, &a, &m);
	if (rc < 0) {
		if (!m)
			snprintf(err, err_len, "MDS %s did not answer: %s", addr, nacre_strerror(rc));
		else if (rc == -EACCES)
			snprintf(err, err_len, "MDS %s refused %s: a %s key cannot read or manage "
				 "changelogs; use the cluster key or an admin key", addr,
				 wire_opcode_name(opcode), key_role_name(key.role));
		else if (rc == -EOPNOTSUPP)
			snprintf(err, err_len, "MDS %s does not keep changelogs (an older server)",
				 addr);
		else
			snprintf(err, err_len, "MDS %s: %s", addr, nacre_strerror(rc));
		goto out;
	}
	struct wire_cursor r;
	wire_cursor_init_read(&r, m->body, m->body_len);
	wire_changelog_rep_decode(&r, head);
	for (uint32_t i = 0; i < head->count && wire_cursor_ok(&r); i++) {
		struct nacre_changelog_rec tmp, *dst = n < max && out ? &out[n] : &tmp;
		wire_cl_rec_get(&r, dst);
		if (dst != &tmp)
			n++;
	}
	rc = cl_decode_end(&r);
	if (rc)
		snprintf(err, err_len, "MDS %s: malformed changelog reply", addr);
	else
		rc = n;
out:
	rpc_msg_free(m);
	rpc_conn_destroy(conn);
	wire_cursor_fini(&c);
	memset(&key, 0, sizeof(key));
	return rc;
}

static char *errbuf(char *err, size_t *len, char *dummy, size_t dlen)
{
	if (!err || *len == 0) {
		*len = dlen;
		return dummy;
	}
	return err;
}

static int user_req(struct wire_changelog_req *r, const char *user, char *err, size_t err_len)
{
	memset(r, 0, sizeof(*r));
	cl_cred(NULL, &r->cred);
	if (user) {
		if (strlen(user) > NACRE_CL_USER_MAX) {
			snprintf(err, err_len, "no changelog user %s (ids are cl1, cl2, ...)", user);
			return -ENOENT;
		}
		str_copy(r->user, user, sizeof(r->user));
	}
	return 0;
}

NACRE_API int nacre_changelog_register(const char *addr, const char *fsname,
				       const char *key_file, char *user, size_t user_len,
				       char *err, size_t err_len)
{
	struct wire_changelog_req r;
	struct wire_changelog_rep h;
	char dummy[8];

	err = errbuf(err, &err_len, dummy, sizeof(dummy));
	user_req(&r, NULL, err, err_len);
	int rc = cl_call(addr, fsname, key_file, WIRE_OP_MDS_CL_REGISTER, &r, &h, NULL, 0, err,
			 err_len);
	if (rc < 0)
		return rc;
	if (str_copy(user, h.user, user_len) >= user_len || !h.user[0]) {
		snprintf(err, err_len, "MDS %s: bad changelog user id '%s'", addr, h.user);
		return -EPROTO;
	}
	return 0;
}

NACRE_API int nacre_changelog_deregister(const char *addr, const char *fsname,
					 const char *key_file, const char *user, char *err,
					 size_t err_len)
{
	struct wire_changelog_req r;
	struct wire_changelog_rep h;
	char dummy[8];

	err = errbuf(err, &err_len, dummy, sizeof(dummy));
	int rc = user_req(&r, user, err, err_len);
	if (!rc)
		rc = cl_call(addr, fsname, key_file, WIRE_OP_MDS_CL_DEREGISTER, &r, &h, NULL, 0,
			     err, err_len);
	if (rc == -ENOENT)
		snprintf(err, err_len, "no changelog user %s", user);
	return rc < 0 ? rc : 0;
}

NACRE_API int nacre_changelog_clear(const char *addr, const char *fsname, const char *key_file,
				    const char *user, uint64_t endrec, char *err, size_t err_len)
{
	struct wire_changelog_req r;
	struct wire_changelog_rep h;
	char dummy[8];

	err = errbuf(err, &err_len, dummy, sizeof(dummy));
	int rc = user_req(&r, user, err, err_len);
	r.end = endrec;
	if (!rc)
		rc = cl_call(addr, fsname, key_file, WIRE_OP_MDS_CL_CLEAR, &r, &h, NULL, 0, err,
			     err_len);
	if (rc == -ENOENT)
		snprintf(err, err_len, "no changelog user: %s", user);
	else if (rc == -EINVAL)
		snprintf(err, err_len, "record out of range: %llu", (unsigned long long)endrec);
	return rc < 0 ? rc : 0;
}

NACRE_API int nacre_changelog_mask(const char *addr, const char *fsname, const char *key_file,
				   struct nacre_changelog_info *info, int set_mask,
				   int set_xflags, char *err, size_t err_len)
{
	struct wire_changelog_req r;
	struct wire_changelog_rep h;
	char dummy[8];

	err = errbuf(err, &err_len, dummy, sizeof(dummy));
	user_req(&r, NULL, err, err_len);
	r.mask = info->mask;
	r.xflags = info->xflags;
	r.flags = (set_mask ? WIRE_CL_SET_MASK : 0) | (set_xflags ? WIRE_CL_SET_XFLAGS : 0);
	int rc = cl_call(addr, fsname, key_file, WIRE_OP_MDS_CL_MASK, &r, &h, NULL, 0, err,
			 err_len);
	if (rc < 0)
		return rc;
	info->mask = h.mask;
	info->xflags = h.xflags;
	info->nusers = h.nusers;
	info->first = h.first;
	info->last = h.last;
	return 0;
}

NACRE_API int nacre_changelog_read(const char *addr, const char *fsname, const char *key_file,
				   uint64_t start, uint64_t end, struct nacre_changelog_rec *out,
				   int max, struct nacre_changelog_info *info, int *eof,
				   char *err, size_t err_len)
{
	struct wire_changelog_req r;
	struct wire_changelog_rep h;
	char dummy[8];

	err = errbuf(err, &err_len, dummy, sizeof(dummy));
	if (max <= 0 || !out) {
		snprintf(err, err_len, "no room for changelog records");
		return -EINVAL;
	}
	user_req(&r, NULL, err, err_len);
	r.start = start;
	r.end = end;
	/* no more than fits in out: a record is at most WIRE_CL_REC_MAX bytes */
	uint64_t room = (uint64_t)max * WIRE_CL_REC_MIN;
	r.max_bytes = room < WIRE_CL_READ_MAX_BYTES ? (uint32_t)room : WIRE_CL_READ_MAX_BYTES;
	int rc = cl_call(addr, fsname, key_file, WIRE_OP_MDS_CL_READ, &r, &h, out, max, err,
			 err_len);
	if (rc < 0)
		return rc;
	if (eof)
		*eof = h.eof && (uint32_t)rc == h.count;
	if (info) {
		info->mask = h.mask;
		info->xflags = h.xflags;
		info->nusers = h.nusers;
		info->first = h.first;
		info->last = h.last;
	}
	return rc;
}
