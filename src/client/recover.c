/* recover.c - the MDS connection's recovery hook (see recover.h).
 *
 * It runs on the thread that reconnected, before any other request may use the new socket,
 * so every call here goes through rpc_recovery_call on that socket. Open files cannot be
 * freed meanwhile: nacre_close waits for its CLOSE, which needs the socket, and
 * cl_files_pin keeps those the hook is working on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "client/caps.h"
#include "client/cl_internal.h"
#include "client/files.h"
#include "client/groups.h"
#include "client/lease.h"
#include "client/lock.h"
#include "client/mdc.h"
#include "client/recover.h"
#include "proto/wire.h"

/* Tells the MDS this client reached stage (WIRE_RECOVERY_*). */
static int stage_done(struct nacre_fs *fs, struct rpc_recovery *r, uint32_t stage)
{
	struct wire_recovery_done_req d = {.stage = stage};
	struct wire_cursor c;
	struct rpc_msg *m;
	uint8_t buf[512];
	int rc;

	(void)fs;
	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_recovery_done_req_encode(&c, &d);
	rc = rpc_recovery_call(r, WIRE_OP_MDS_RECOVERY_DONE, 0, buf, (uint32_t)c.pos, NULL, 0, &m);
	rpc_msg_free(m);
	return rc;
}

/* Re-opens f by FID with its opener's credentials and flags (no truncate, no create),
 * asking for its handle of before (requests in flight name it; the MDS gives another if it
 * is taken, which then replaces it). Returns 0, a transport error, or 1 when the MDS
 * refused (the file is gone or no longer allowed: logged). */
static int reopen(struct nacre_fs *fs, struct rpc_recovery *r, struct nacre_file *f)
{
	struct wire_open_req req = {.cred = f->cred, .fid = f->fid};
	struct wire_open_rep rep, *before = calloc(1, sizeof(*before));
	struct wire_cursor c, b;
	struct rpc_msg *m = NULL;
	char fid[NACRE_FID_STR_MAX];
	int rc;

	if (!before)
		return -ENOMEM;
	pthread_mutex_lock(&f->lock);
	before->attr = f->attr;
	before->handle = f->handle;
	pthread_mutex_unlock(&f->lock);
	before->layout = f->layout;
	req.flags = (uint32_t)(f->flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY));
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_open_req_encode(&c, &req);
	wire_cursor_init_dyn(&b, WIRE_BODY_MAX);
	wire_open_rep_encode(&b, before);
	free(before);
	rc = wire_cursor_ok(&c) && wire_cursor_ok(&b)
		     ? rpc_recovery_call(r, WIRE_OP_MDS_OPEN, WIRE_ENV_REPLAY, c.buf, (uint32_t)c.pos,
					 b.buf, (uint32_t)b.pos, &m)
		     : -EINVAL;
	wire_cursor_fini(&c);
	wire_cursor_fini(&b);
	if (rc < 0 && !m)
		return rc; /* the socket broke: recovery starts over */
	if (rc == 0) {
		wire_cursor_init_read(&c, m->body, m->body_len);
		wire_open_rep_decode(&c, &rep);
		rc = cl_decode_end(&c);
	}
	rpc_msg_free(m);
	if (rc < 0) {
		cl_log(fs, CL_LOG_ERR, "MDS %s: re-opening %s after its restart failed: %s; the "
		       "open file is no longer usable", fs->addr,
		       nacre_fid_format(&f->fid, fid, sizeof(fid)), nacre_strerror(rc));
		return 1;
	}
	pthread_mutex_lock(&f->lock);
	f->handle = rep.handle;
	pthread_mutex_unlock(&f->lock);
	if (rep.has_cap)
		cl_cap_set(f, 1, &rep.cap);
	return 0;
}

int cl_recover(void *arg, struct rpc_recovery *r, const struct wire_connect_rep *rep)
{
	struct nacre_fs *fs = arg;
	int expected = rep->session == WIRE_SESSION_RECOVER;
	struct nacre_file **files = NULL;
	int n = 0, lost = 0, rc;

	/* the replays' creds may name lists the restarted MDS no longer holds */
	rc = cl_groups_recover(fs, r);
	if (rc == 0)
		rc = rpc_recovery_replay(r);
	if (rc == 0 && expected)
		rc = stage_done(fs, r, WIRE_RECOVERY_REPLAYED);
	if (rc == 0)
		rc = cl_files_pin(fs, &files, &n);
	for (int i = 0; rc == 0 && i < n; i++) {
		int one = reopen(fs, r, files[i]);
		if (one < 0)
			rc = one;
		else
			lost += one;
	}
	cl_files_unpin(fs, files, n);
	if (rc == 0)
		rc = cl_locks_replay(fs, r);
	if (rc == 0 && expected)
		rc = cl_lease_reclaim(fs, r);
	if (rc == 0 && expected)
		rc = stage_done(fs, r, WIRE_RECOVERY_COMPLETE);
	if (rc == 0)
		cl_log(fs, CL_LOG_INFO, "MDS %s recovered: %d open files re-opened%s", fs->addr,
		       n - lost, lost ? " (some could not be: see above)" : "");
	return rc < 0 ? rc : 0;
}
