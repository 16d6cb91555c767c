/* mdc.c - the MDS client: the call every metadata request goes through (it also waits for
 * a file that is being restored from the archive), and the helpers every libnacre file
 * uses: logging, credentials, reply checks, errno mapping, connect errors.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client/cl_internal.h"
#include "client/groups.h"
#include "client/mdc.h"
#include "proto/wire.h"

void cl_log(const struct nacre_fs *fs, int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!fs || !fs->log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fs->log_fn(level, line, fs->log_arg);
}

const struct nacre_cred *cl_cred(const struct nacre_cred *cr, struct nacre_cred *out)
{
	if (cr)
		return cr;
	memset(out, 0, sizeof(*out));
	return out;
}

int cl_mds_do(struct nacre_fs *fs, uint16_t op, const void *req, void *rep)
{
	const struct wire_op_info *info = wire_op_info(op);
	struct wire_cursor c;
	struct rpc_msg *m;
	int rc;

	if (!info || !info->req_encode)
		return -EINVAL;
	wire_cursor_init_dyn(&c, info->flags & WIRE_OPF_BIG_BODY ? WIRE_BODY_BIG_MAX
								  : WIRE_BODY_MAX);
	info->req_encode(&c, req);
	rc = cl_mds_call(fs, op, &c, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	if (!info->rep_decode) {
		rc = m->body_len == 0 ? 0 : -EPROTO;
	} else if (rep) {
		wire_cursor_init_read(&c, m->body, m->body_len);
		info->rep_decode(&c, rep);
		rc = cl_decode_end(&c);
	}
	rpc_msg_free(m);
	return rc;
}

int cl_decode_end(const struct wire_cursor *c)
{
	return wire_cursor_ok(c) && wire_cursor_left(c) == 0 ? 0 : -EPROTO;
}

void cl_connect_error(const char *role, const char *addr, const char *program, int rc,
		      int timeout_ms, const char *rpc_err, char *err, size_t err_len)
{
	if (!err || err_len == 0)
		return;
	switch (-rc) {
	case ECONNREFUSED:
		snprintf(err, err_len, "cannot reach %s %s: connection refused (is %s running?)",
			 role, addr, program);
		break;
	case ETIMEDOUT:
		snprintf(err, err_len,
			 "cannot reach %s %s: no answer within %d ms (is the host up and the port "
			 "open?)",
			 role, addr, timeout_ms);
		break;
	case EHOSTUNREACH:
	case ENETUNREACH:
		snprintf(err, err_len, "cannot reach %s %s: no route to host (check the address)",
			 role, addr);
		break;
	default:
		if (rpc_err && rpc_err[0])
			snprintf(err, err_len, "%s", rpc_err);
		else
			snprintf(err, err_len, "cannot connect to %s %s: %s", role, addr,
				 nacre_strerror(rc));
	}
}

int cl_is_transport_err(int rc)
{
	switch (-rc) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EPIPE:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ENOTCONN:
	case NACRE_ETIMEDOUT_SRV:
		return 1;
	default:
		return 0;
	}
}

int cl_io_errno(int rc)
{
	return cl_is_transport_err(rc) ? -EIO : rc;
}

/* After an MDS call answered -NACRE_ERESTORING (the file is being restored): sleeps a
 * little (growing backoff) and returns 0 to resend, or -ETIMEDOUT once *waited_ms passed the
 * fs's timeout, with a log line naming the file (the FID of req, a cred + fid request). */
static int restore_wait(struct nacre_fs *fs, const struct wire_cursor *req, int64_t *waited_ms)
{
	int64_t step = *waited_ms < 200 ? 20 : *waited_ms < 2000 ? 100 : 500;
	int limit = fs->timeout_ms > 0 ? fs->timeout_ms : 30000;
	struct timespec ts = {step / 1000, (step % 1000) * 1000000};

	if (*waited_ms >= limit) {
		struct wire_cursor c;
		struct wire_fid_req r;
		char fs_[NACRE_FID_STR_MAX];

		/* every request that may meet a released file starts as a fid_req does */
		wire_cursor_init_read(&c, req->buf, wire_cursor_pos(req));
		wire_fid_req_decode(&c, &r);
		cl_log(fs, CL_LOG_ERR, "restore of %s from the archive did not finish within %d s: "
		       "is a copytool running for its archive id?",
		       nacre_fid_format(&r.fid, fs_, sizeof(fs_)), limit / 1000);
		return -ETIMEDOUT;
	}
	nanosleep(&ts, NULL);
	*waited_ms += step;
	return 0;
}

int cl_mds_call(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *req,
		struct rpc_msg **rep)
{
	return cl_mds_call_within(fs, opcode, req, 0, rep);
}

int cl_mds_call_within(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *req,
		       int within_ms, struct rpc_msg **rep)
{
	struct rpc_call_args a;
	struct rpc_msg *m = NULL;
	int rc;

	*rep = NULL;
	if (!wire_cursor_ok(req))
		return req->err < 0 ? req->err : -EINVAL; /* e.g. a name too long to encode */
	if (fs->before_mds)
		fs->before_mds(fs, opcode); /* the MDS sees this mount's queued changes first */
	memset(&a, 0, sizeof(a));
	a.opcode = opcode;
	a.flags = wire_op_idempotent(opcode) ? RPC_IDEMPOTENT : 0;
	a.timeout_ms = within_ms;
	if (__atomic_load_n(&fs->unmounting, __ATOMIC_ACQUIRE) &&
	    (!within_ms || within_ms > fs->timeout_ms))
		a.timeout_ms = fs->timeout_ms; /* nobody will wait for the answer much longer */
	a.body = req->buf;
	a.body_len = (uint32_t)wire_cursor_pos(req);
	rc = rpc_call(fs->mds, &a, &m);
	/* the MDS does not hold the caller's group list (it restarted or dropped it) */
	if (rc == -NACRE_EGROUPS) {
		struct wire_cursor cc;
		struct nacre_cred cr;
		wire_cursor_init_read(&cc, req->buf, wire_cursor_pos(req));
		wire_cred_get(&cc, &cr);
		if (wire_cursor_ok(&cc) && cr.groups_token &&
		    cl_groups_reregister(fs, cr.groups_token) == 0) {
			rpc_msg_free(m);
			m = NULL;
			rc = rpc_call(fs->mds, &a, &m);
		}
	}
	/* a released file: the MDS queued its restore; wait and ask again */
	for (int64_t waited = 0; rc == -NACRE_ERESTORING;) {
		rpc_msg_free(m);
		m = NULL;
		rc = restore_wait(fs, req, &waited);
		if (rc == 0)
			rc = rpc_call(fs->mds, &a, &m);
	}
	if (within_ms && rc < 0 && cl_is_transport_err(rc)) {
		rpc_msg_free(m);
		return rc; /* the caller's own limit ran out: it says what it makes of that */
	}
	return cl_mds_result(fs, opcode, rc, m, rep);
}

int cl_mds_result(struct nacre_fs *fs, uint16_t opcode, int rc, struct rpc_msg *m,
		  struct rpc_msg **rep)
{
	*rep = NULL;
	if (rc < 0) {
		rpc_msg_free(m);
		if (!cl_is_transport_err(rc))
			return rc;
		/* no transport errno reaches an application: the server stayed away for the
		 * whole recovery timeout */
		cl_log(fs, CL_LOG_ERR, "MDS %s: %s failed: %s (it did not answer within "
		       "recovery_timeout=%d s)", fs->addr, wire_opcode_name(opcode),
		       nacre_strerror(rc), fs->recovery_timeout_ms / 1000);
		return -EIO;
	}
	if (!m)
		return -EPROTO;
	if (m->hdr.status < 0) {
		rc = m->hdr.status;
		rpc_msg_free(m);
		return rc;
	}
	*rep = m;
	return 0;
}
