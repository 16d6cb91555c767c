/* jobs.c - the OSTs' job_stats (jobs.h): nacre's object opcodes counted as Lustre's
 * obdfilter operations. */
#include "oss/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jobstats.h"
#include "common/metrics.h"
#include "common/strbuf.h"
#include "proto/wire.h"

enum {
	JOB_READ_BYTES,
	JOB_WRITE_BYTES,
	JOB_READ,
	JOB_WRITE,
	JOB_GETATTR,
	JOB_PUNCH,
	JOB_SYNC,
	JOB_PREALLOC,
	JOB_GET_INFO,
	JOB_OPS_
};
static const struct jobstats_op job_ops[JOB_OPS_] = {
	[JOB_READ_BYTES] = {"read_bytes", "bytes"}, [JOB_WRITE_BYTES] = {"write_bytes", "bytes"},
	[JOB_READ] = {"read", "usecs"},	       [JOB_WRITE] = {"write", "usecs"},
	[JOB_GETATTR] = {"getattr", "usecs"},	       [JOB_PUNCH] = {"punch", "usecs"},
	[JOB_SYNC] = {"sync", "usecs"},	       [JOB_PREALLOC] = {"prealloc", "usecs"},
	[JOB_GET_INFO] = {"get_info", "usecs"},
};

static struct oss_target **all;
static int nall;

/* The target of "/FS-OSTxxxx", or NULL. */
static struct oss_target *target_named(const char *rest)
{
	char name[NACRE_FSNAME_MAX + 24];
	for (int i = 0; i < nall; i++) {
		snprintf(name, sizeof(name), "/%s-%s", all[i]->fsname, all[i]->name);
		if (strcmp(rest, name) == 0)
			return all[i];
	}
	return NULL;
}

static char *page_get(void *arg, const char *rest)
{
	struct oss_target *t = target_named(rest);
	struct strbuf sb = STRBUF_INIT;
	(void)arg;
	if (!t || !t->jobs)
		return NULL;
	jobstats_yaml(t->jobs, &sb);
	if (!strbuf_ok(&sb)) {
		strbuf_fini(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

static int page_clear(void *arg, const char *rest)
{
	struct oss_target *t = target_named(rest);
	(void)arg;
	if (!t || !t->jobs)
		return -1;
	jobstats_clear(t->jobs);
	return 0;
}

int oss_jobs_create(struct oss_target **targets, int n)
{
	for (int i = 0; i < n; i++) {
		targets[i]->jobs = jobstats_new(job_ops, JOB_OPS_, OSS_JOBS_MAX, OSS_JOB_CLEANUP_S);
		if (!targets[i]->jobs)
			return -ENOMEM;
	}
	all = targets;
	nall = n;
	metrics_http_page("/job_stats", page_get, page_clear, NULL);
	return 0;
}

void oss_jobs_destroy(struct oss_target **targets, int n)
{
	for (int i = 0; i < n; i++) {
		jobstats_free(targets[i]->jobs);
		targets[i]->jobs = NULL;
	}
}

void oss_jobs_note(struct oss_target *t, uint16_t opcode, const char *jobid, uint64_t bytes,
		   uint64_t usecs)
{
	if (!t->jobs || !jobid[0])
		return;
	switch (opcode) {
	case WIRE_OP_OST_READ:
		jobstats_note(t->jobs, jobid, JOB_READ_BYTES, bytes);
		jobstats_note(t->jobs, jobid, JOB_READ, usecs);
		break;
	case WIRE_OP_OST_WRITE:
		jobstats_note(t->jobs, jobid, JOB_WRITE_BYTES, bytes);
		jobstats_note(t->jobs, jobid, JOB_WRITE, usecs);
		break;
	case WIRE_OP_OST_GETATTR:
		jobstats_note(t->jobs, jobid, JOB_GETATTR, usecs);
		break;
	case WIRE_OP_OST_PUNCH:
		jobstats_note(t->jobs, jobid, JOB_PUNCH, usecs);
		break;
	case WIRE_OP_OST_SYNC:
		jobstats_note(t->jobs, jobid, JOB_SYNC, usecs);
		break;
	case WIRE_OP_OST_FALLOCATE:
		jobstats_note(t->jobs, jobid, JOB_PREALLOC, usecs);
		break;
	case WIRE_OP_OST_SEEK:
		jobstats_note(t->jobs, jobid, JOB_GET_INFO, usecs);
		break;
	default:
		break;
	}
}

uint64_t oss_jobs_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
