/* md.c - the metadata test (--md), in the manner of mdtest: every rank creates N files in a
 * shared directory or its own (-u), stats them, reads them, removes them; rates are all
 * ranks' operations over the time from the first rank's start to the last rank's end. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "nacre/nacre.h"

enum { MD_CREATE, MD_STAT, MD_READ, MD_REMOVE, MD_TREE_CREATE, MD_TREE_REMOVE, MD_NPHASES };

static const char *const phase_names[MD_NPHASES] = {
	"File creation", "File stat", "File read", "File removal", "Tree creation", "Tree removal",
};

struct md {
	const struct bench_opts *o;
	const struct bench_io *io;
	char top[BENCH_PATH_MAX]; /* this repetition's directory */
	char mine[BENCH_PATH_MAX]; /* where this rank's files go */
	void *buf;
	int rank, size;
};

static void fatal(const char *what, const char *path, int rc) __attribute__((noreturn));
static void fatal(const char *what, const char *path, int rc)
{
	bench_err("%s %s: %s", what, path, nacre_strerror(rc));
	bench_abort(1);
}

static void file_path(const struct md *m, uint64_t i, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/f.%d.%llu", m->mine, m->rank, (unsigned long long)i) >=
	    (int)len)
		fatal("path too long under", m->mine, -ENAMETOOLONG);
}

/* One file operation of a phase on this rank's file i. */
static void file_op(struct md *m, int ph, uint64_t i)
{
	const struct bench_opts *o = m->o;
	char path[BENCH_PATH_MAX];
	uint64_t size;
	void *h;
	ssize_t n;
	int rc;

	file_path(m, i, path, sizeof(path));
	switch (ph) {
	case MD_CREATE:
		rc = m->io->open(path, BENCH_O_WRITE | BENCH_O_CREATE, 0, &h);
		if (rc < 0)
			fatal("cannot create", path, rc);
		if (o->md_bytes && (n = m->io->pwrite(h, m->buf, o->md_bytes, 0)) < 0)
			fatal("cannot write", path, (int)n);
		if ((rc = m->io->close(h)) < 0)
			fatal("cannot close", path, rc);
		break;
	case MD_STAT:
		if ((rc = m->io->stat(path, &size)) < 0)
			fatal("cannot stat", path, rc);
		break;
	case MD_READ:
		rc = m->io->open(path, BENCH_O_READ, 0, &h);
		if (rc < 0)
			fatal("cannot open", path, rc);
		n = o->md_bytes ? m->io->pread(h, m->buf, o->md_bytes, 0) : 0;
		if (n < 0)
			fatal("cannot read", path, (int)n);
		if ((uint64_t)n != o->md_bytes) {
			bench_err("short read of %s: %zd of %llu bytes", path, n,
				  (unsigned long long)o->md_bytes);
			bench_abort(1);
		}
		if ((rc = m->io->close(h)) < 0)
			fatal("cannot close", path, rc);
		break;
	case MD_REMOVE:
		if ((rc = m->io->remove(path)) < 0)
			fatal("cannot remove", path, rc);
		break;
	}
}

/* Tree phases: rank 0 makes or removes the top directory, every rank its own with -u;
 * the parent exists before the children and goes after them. Returns directories done. */
static double tree_op(struct md *m, int create)
{
	int rc;

	if (create && m->rank == 0 && (rc = m->io->mkdir(m->top)) < 0)
		fatal("cannot create directory", m->top, rc);
	if (m->o->md_unique) {
		if (create)
			bench_barrier();
		rc = create ? m->io->mkdir(m->mine) : m->io->rmdir(m->mine);
		if (rc < 0)
			fatal(create ? "cannot create directory" : "cannot remove directory",
			      m->mine, rc);
		if (!create)
			bench_barrier();
	}
	if (!create && m->rank == 0 && (rc = m->io->rmdir(m->top)) < 0)
		fatal("cannot remove directory", m->top, rc);
	return (m->rank == 0) + (m->o->md_unique ? 1 : 0);
}

/* Runs one phase on every rank; returns all ranks' operations per second. */
static double run_phase(struct md *m, int ph)
{
	double epoch = bench_epoch(), t[2], ops = 0;

	t[0] = bench_now() - epoch;
	if (ph == MD_TREE_CREATE || ph == MD_TREE_REMOVE) {
		ops = tree_op(m, ph == MD_TREE_CREATE);
	} else {
		for (uint64_t i = 0; i < m->o->md_files; i++)
			file_op(m, ph, i);
		ops = (double)m->o->md_files;
	}
	t[1] = bench_now() - epoch;
	bench_reduce_min(&t[0], 1);
	bench_reduce_max(&t[1], 1);
	bench_reduce_sum(&ops, 1);
	return t[1] > t[0] ? ops / (t[1] - t[0]) : 0;
}

static void md_date(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	if (strftime(buf, len, "%m/%d/%Y %H:%M:%S", &tm) == 0 && len)
		buf[0] = '\0';
}

static void print_header(const struct md *m)
{
	const struct bench_opts *o = m->o;
	double *map = calloc((size_t)m->size, sizeof(*map));
	struct bench_fsinfo fs;
	char date[64], fsl[160];

	/* Every rank takes part in the reduction; only rank 0 prints. */
	if (!map) {
		bench_err("out of memory");
		bench_abort(1);
	}
	map[m->rank] = bench_node_rank() == 0;
	bench_reduce_sum(map, m->size);
	if (m->rank == 0) {
		md_date(date, sizeof(date));
		printf("-- started at %s --\n\n", date);
		printf(BENCH_NAME "-" BENCH_VERSION " was launched with %d total task(s) on %d "
		       "node(s)\n", m->size, bench_nodes());
		printf("Command line used: " BENCH_NAME);
		for (int i = 1; i < o->argc; i++)
			printf(" '%s'", o->argv[i]);
		printf("\nPath: %s\n", o->md_dir);
		if (m->io->statfs(o->md_dir, &fs) == 0) {
			bench_fs_line(&fs, fsl, sizeof(fsl));
			printf("FS: %s\n", fsl);
		}
		printf("\nNodemap: ");
		for (int i = 0; i < m->size; i++)
			putchar(map[i] > 0 ? '1' : '0');
		printf("\n%d tasks, %llu files\n", m->size,
		       (unsigned long long)o->md_files * (unsigned long long)m->size);
		fflush(stdout);
	}
	free(map);
}

/* all[phase * reps + rep]: mdtest's statistics are over repetitions of the aggregate rate. */
static void print_summary(const double *all, int reps)
{
	char date[64];

	printf("\nSUMMARY rate: (of %d iterations)\n", reps);
	printf("   Operation                      Max            Min           Mean        Std "
	       "Dev\n");
	printf("   ---------                      ---            ---           ----        "
	       "-------\n");
	for (int ph = 0; ph < MD_NPHASES; ph++) {
		const double *r = all + ph * reps;
		double max = r[0], min = r[0], mean = 0, sq = 0;

		for (int i = 0; i < reps; i++) {
			max = r[i] > max ? r[i] : max;
			min = r[i] < min ? r[i] : min;
			mean += r[i] / reps;
		}
		for (int i = 0; i < reps; i++)
			sq += (r[i] - mean) * (r[i] - mean);
		printf("   %-26s:%15.3f%15.3f%15.3f%15.3f\n", phase_names[ph], max, min, mean,
		       sqrt(sq / reps));
	}
	md_date(date, sizeof(date));
	printf("-- finished at %s --\n", date);
	fflush(stdout);
}

int bench_md_run(const struct bench_opts *o, const struct bench_io *io)
{
	static const int order[] = {MD_TREE_CREATE, MD_CREATE,	MD_STAT,
				    MD_READ,	    MD_REMOVE, MD_TREE_REMOVE};
	struct md m = {.o = o, .io = io, .rank = bench_rank(), .size = bench_size()};
	double tag = 0;
	double *all = calloc((size_t)MD_NPHASES * (size_t)o->reps, sizeof(double));

	if (!all || (o->md_bytes && !(m.buf = malloc(o->md_bytes)))) {
		bench_err("out of memory");
		bench_abort(1);
	}
	if (o->md_bytes)
		bench_pattern_fill(m.buf, o->md_bytes & ~7ULL, 0, m.rank);
	/* A name no concurrent run in the same directory uses: rank 0's pid. */
	if (m.rank == 0)
		tag = (double)getpid();
	bench_reduce_sum(&tag, 1);
	print_header(&m);
	for (int it = 0; it < o->reps; it++) {
		int n = snprintf(m.top, sizeof(m.top), "%s/md.%.0f.%d", o->md_dir, tag, it);

		if (n >= (int)sizeof(m.top) ||
		    snprintf(m.mine, sizeof(m.mine), o->md_unique ? "%s/rank.%d" : "%s", m.top,
			     m.rank) >= (int)sizeof(m.mine))
			fatal("path too long under", o->md_dir, -ENAMETOOLONG);
		for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
			double rate = run_phase(&m, order[k]);

			all[order[k] * o->reps + it] = rate;
			if (m.rank == 0 && o->verbose)
				fprintf(stderr, "iteration %d: %s %.3f ops/s\n", it,
					phase_names[order[k]], rate);
		}
	}
	if (m.rank == 0)
		print_summary(all, o->reps);
	free(all);
	free(m.buf);
	return 0;
}
