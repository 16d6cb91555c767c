/* jobs.c - the MDT's job_stats (jobs.h): nacre's opcodes counted as Lustre's operations. */
#include "mds/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jobstats.h"
#include "common/metrics.h"
#include "common/strbuf.h"
#include "proto/cursor.h"
#include "proto/wire.h"

/* Lustre's mdt job_stats operations that nacre's MDS serves. */
enum {
	JOB_OPEN,
	JOB_CLOSE,
	JOB_MKNOD,
	JOB_LINK,
	JOB_UNLINK,
	JOB_MKDIR,
	JOB_RMDIR,
	JOB_RENAME,
	JOB_GETATTR,
	JOB_SETATTR,
	JOB_GETXATTR,
	JOB_SETXATTR,
	JOB_STATFS,
	JOB_SYNC,
	JOB_OPS_
};
static const struct jobstats_op job_ops[JOB_OPS_] = {
	[JOB_OPEN] = {"open", "usecs"},	    [JOB_CLOSE] = {"close", "usecs"},
	[JOB_MKNOD] = {"mknod", "usecs"},	    [JOB_LINK] = {"link", "usecs"},
	[JOB_UNLINK] = {"unlink", "usecs"},   [JOB_MKDIR] = {"mkdir", "usecs"},
	[JOB_RMDIR] = {"rmdir", "usecs"},	    [JOB_RENAME] = {"rename", "usecs"},
	[JOB_GETATTR] = {"getattr", "usecs"}, [JOB_SETATTR] = {"setattr", "usecs"},
	[JOB_GETXATTR] = {"getxattr", "usecs"}, [JOB_SETXATTR] = {"setxattr", "usecs"},
	[JOB_STATFS] = {"statfs", "usecs"},   [JOB_SYNC] = {"sync", "usecs"},
};

/* The operation an opcode counts as, or -1. A create of anything but a directory is a
 * mknod, as on Lustre (and one that opens an open too); a lookup is a getattr by name. */
static int job_op(uint16_t opcode)
{
	switch (opcode) {
	case WIRE_OP_MDS_OPEN: return JOB_OPEN;
	case WIRE_OP_MDS_CLOSE: return JOB_CLOSE;
	case WIRE_OP_MDS_CREATE:
	case WIRE_OP_MDS_MKNOD:
	case WIRE_OP_MDS_SYMLINK: return JOB_MKNOD;
	case WIRE_OP_MDS_LINK: return JOB_LINK;
	case WIRE_OP_MDS_UNLINK: return JOB_UNLINK;
	case WIRE_OP_MDS_MKDIR: return JOB_MKDIR;
	case WIRE_OP_MDS_RMDIR: return JOB_RMDIR;
	case WIRE_OP_MDS_RENAME: return JOB_RENAME;
	case WIRE_OP_MDS_GETATTR:
	case WIRE_OP_MDS_LOOKUP: return JOB_GETATTR;
	case WIRE_OP_MDS_SETATTR: return JOB_SETATTR;
	case WIRE_OP_MDS_GETXATTR:
	case WIRE_OP_MDS_LISTXATTR: return JOB_GETXATTR;
	case WIRE_OP_MDS_SETXATTR:
	case WIRE_OP_MDS_REMOVEXATTR: return JOB_SETXATTR;
	case WIRE_OP_MDS_STATFS: return JOB_STATFS;
	case WIRE_OP_MDS_SYNC: return JOB_SYNC;
	default: return -1;
	}
}

/* /job_stats, or /job_stats/FS-MDT0000: the only MDT's */
static int is_ours(const struct mds *m, const char *rest)
{
	char name[NACRE_FSNAME_MAX + 16];
	snprintf(name, sizeof(name), "/%s-MDT0000", m->fsname);
	return !rest[0] || strcmp(rest, name) == 0;
}

static char *page_get(void *arg, const char *rest)
{
	struct mds *m = arg;
	struct strbuf sb = STRBUF_INIT;
	if (!is_ours(m, rest))
		return NULL;
	jobstats_yaml(m->jobs, &sb);
	if (!strbuf_ok(&sb)) {
		strbuf_fini(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

static int page_clear(void *arg, const char *rest)
{
	struct mds *m = arg;
	if (!is_ours(m, rest))
		return -1;
	jobstats_clear(m->jobs);
	return 0;
}

int mds_jobs_create(struct mds *m, unsigned max_jobs, unsigned cleanup_s)
{
	m->jobs = jobstats_new(job_ops, JOB_OPS_, max_jobs, cleanup_s);
	if (!m->jobs)
		return -ENOMEM;
	metrics_http_page("/job_stats", page_get, page_clear, m);
	return 0;
}

void mds_jobs_destroy(struct mds *m)
{
	jobstats_free(m->jobs);
	m->jobs = NULL;
}

void mds_jobs_note(struct mds *m, uint16_t opcode, const void *body, size_t len,
		   uint64_t usecs)
{
	int op = job_op(opcode);
	if (!m->jobs || op < 0)
		return;
	struct nacre_cred cr;
	struct wire_cursor c;
	wire_cursor_init_read(&c, body, len);
	if (opcode == WIRE_OP_MDS_CREATE) {
		/* a create that opens counts as an open too, as Lustre's open(O_CREAT) */
		struct wire_create_req *r = malloc(sizeof(*r));
		if (!r)
			return;
		wire_create_req_decode(&c, r);
		if (wire_cursor_ok(&c) && (r->flags & WIRE_CREATE_OPEN))
			jobstats_note(m->jobs, r->cred.jobid, JOB_OPEN, usecs);
		if (wire_cursor_ok(&c))
			jobstats_note(m->jobs, r->cred.jobid, (unsigned)op, usecs);
		free(r);
		return;
	}
	wire_cred_get(&c, &cr);
	if (wire_cursor_ok(&c))
		jobstats_note(m->jobs, cr.jobid, (unsigned)op, usecs);
}

uint64_t mds_jobs_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
