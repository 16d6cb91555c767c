/* jobstats.c - see jobstats.h. Jobs live in an array (the order first seen) with an open
 * addressing index over it; a removal compacts both. */
#include "common/jobstats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"
#include "common/util.h"

#define JOBID_MAX 31 /* NACRE_JOBID_MAX */
#define SWEEP_EVERY_S 10

struct counter {
	uint64_t samples, min, max, sum, sumsq;
};

struct job {
	char id[JOBID_MAX + 1];
	int64_t first_s, last_s; /* CLOCK_REALTIME seconds */
	struct counter *c;       /* nops of them */
};

struct jobstats {
	pthread_mutex_t lock;
	const struct jobstats_op *ops;
	unsigned nops, max_jobs, cleanup_s;
	struct job *jobs; /* njobs used of max_jobs */
	unsigned njobs;
	int32_t *index; /* nindex slots: a job's position or -1 */
	unsigned nindex;
	int64_t swept_s;
};

static int64_t now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec;
}

static uint64_t hash_of(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

struct jobstats *jobstats_new(const struct jobstats_op *ops, unsigned nops, unsigned max_jobs,
			      unsigned cleanup_s)
{
	struct jobstats *js = calloc(1, sizeof(*js));
	if (!js)
		return NULL;
	js->ops = ops;
	js->nops = nops;
	js->max_jobs = max_jobs ? max_jobs : 1;
	js->cleanup_s = cleanup_s;
	js->nindex = 2;
	while (js->nindex < 2 * js->max_jobs)
		js->nindex *= 2;
	js->jobs = calloc(js->max_jobs, sizeof(*js->jobs));
	js->index = malloc(js->nindex * sizeof(*js->index));
	if (!js->jobs || !js->index) {
		jobstats_free(js);
		return NULL;
	}
	memset(js->index, 0xff, js->nindex * sizeof(*js->index));
	pthread_mutex_init(&js->lock, NULL);
	js->swept_s = now_s();
	return js;
}

static void drop_all(struct jobstats *js)
{
	for (unsigned i = 0; i < js->njobs; i++)
		free(js->jobs[i].c);
	js->njobs = 0;
	memset(js->index, 0xff, js->nindex * sizeof(*js->index));
}

void jobstats_free(struct jobstats *js)
{
	if (!js)
		return;
	if (js->jobs && js->index) {
		drop_all(js);
		pthread_mutex_destroy(&js->lock);
	}
	free(js->jobs);
	free(js->index);
	free(js);
}

/* The index slot of id: its job's, or the empty one where it would go. */
static unsigned slot_of(const struct jobstats *js, const char *id)
{
	unsigned mask = js->nindex - 1, s = (unsigned)hash_of(id) & mask;
	while (js->index[s] >= 0 && strcmp(js->jobs[js->index[s]].id, id) != 0)
		s = (s + 1) & mask;
	return s;
}

static void reindex(struct jobstats *js)
{
	memset(js->index, 0xff, js->nindex * sizeof(*js->index));
	for (unsigned i = 0; i < js->njobs; i++)
		js->index[slot_of(js, js->jobs[i].id)] = (int32_t)i;
}

/* Removes the jobs not seen since idle_before, or (oldest) the one seen longest ago;
 * the others keep their order. */
static void remove_jobs(struct jobstats *js, int64_t idle_before, int oldest)
{
	unsigned victim = 0, w = 0;
	if (oldest)
		for (unsigned i = 1; i < js->njobs; i++)
			if (js->jobs[i].last_s < js->jobs[victim].last_s)
				victim = i;
	for (unsigned i = 0; i < js->njobs; i++) {
		int gone = oldest ? i == victim : js->jobs[i].last_s < idle_before;
		if (gone)
			free(js->jobs[i].c);
		else
			js->jobs[w++] = js->jobs[i];
	}
	if (w != js->njobs) {
		js->njobs = w;
		reindex(js);
	}
}

static void sweep(struct jobstats *js, int64_t now)
{
	if (!js->cleanup_s || now - js->swept_s < SWEEP_EVERY_S)
		return;
	js->swept_s = now;
	remove_jobs(js, now - (int64_t)js->cleanup_s, 0);
}

void jobstats_note(struct jobstats *js, const char *jobid, unsigned op, uint64_t value)
{
	if (!js || !jobid || !jobid[0] || op >= js->nops)
		return;
	char id[JOBID_MAX + 1];
	str_copy(id, jobid, sizeof(id));
	int64_t now = now_s();
	pthread_mutex_lock(&js->lock);
	sweep(js, now);
	unsigned s = slot_of(js, id);
	if (js->index[s] < 0) {
		struct counter *c = calloc(js->nops, sizeof(*c));
		if (!c)
			goto out;
		if (js->njobs == js->max_jobs) {
			remove_jobs(js, 0, 1); /* the job seen longest ago makes room */
			s = slot_of(js, id);
		}
		struct job *j = &js->jobs[js->njobs];
		memcpy(j->id, id, sizeof(id));
		j->first_s = now;
		j->c = c;
		js->index[s] = (int32_t)js->njobs++;
	}
	struct job *j = &js->jobs[js->index[s]];
	struct counter *c = &j->c[op];
	j->last_s = now;
	if (!c->samples || value < c->min)
		c->min = value;
	if (value > c->max)
		c->max = value;
	c->samples++;
	c->sum += value;
	c->sumsq += value * value;
out:
	pthread_mutex_unlock(&js->lock);
}

void jobstats_yaml(struct jobstats *js, struct strbuf *out)
{
	int64_t now = now_s();
	strbuf_str(out, "job_stats:\n");
	pthread_mutex_lock(&js->lock);
	sweep(js, now);
	for (unsigned i = 0; i < js->njobs; i++) {
		const struct job *j = &js->jobs[i];
		strbuf_printf(out, "- %-16s %s\n", "job_id:", j->id);
		strbuf_printf(out, "  %-16s %lld\n", "snapshot_time:", (long long)j->last_s);
		for (unsigned k = 0; k < js->nops; k++) {
			const struct counter *c = &j->c[k];
			char key[40];
			snprintf(key, sizeof(key), "%s:", js->ops[k].name);
			strbuf_printf(out, "  %-16s { samples: %11llu, unit: %5s", key,
				      (unsigned long long)c->samples, js->ops[k].unit);
			if (c->samples)
				strbuf_printf(out, ", min: %7llu, max: %7llu, sum: %15llu, sumsq: %19llu",
					      (unsigned long long)c->min, (unsigned long long)c->max,
					      (unsigned long long)c->sum, (unsigned long long)c->sumsq);
			strbuf_str(out, " }\n");
		}
	}
	pthread_mutex_unlock(&js->lock);
}

void jobstats_clear(struct jobstats *js)
{
	pthread_mutex_lock(&js->lock);
	drop_all(js);
	pthread_mutex_unlock(&js->lock);
}

unsigned jobstats_count(struct jobstats *js)
{
	pthread_mutex_lock(&js->lock);
	unsigned n = js->njobs;
	pthread_mutex_unlock(&js->lock);
	return n;
}
