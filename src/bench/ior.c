/* ior.c - the data test: each repetition writes (and checks) then reads (and checks) every
 * rank's blocks, between barriers, timing open, transfers and close on every rank. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "nacre/nacre.h"

#define MIB (1024.0 * 1024.0)

/* One phase on one rank, seconds since the phase's epoch. */
struct phase {
	double open0, open1, io1, close1;
	double lat_sum;
	double ops;
	double bad; /* pattern words that did not match */
};

struct run {
	const struct bench_opts *o;
	const struct bench_io *io;
	void *buf;
	uint64_t *order; /* -z: transfer indices of a segment, shuffled */
	uint64_t nxfer;  /* transfers per block */
	int rank, size;
};

static void fatal(const char *what, const char *path, int rc) __attribute__((noreturn));
static void fatal(const char *what, const char *path, int rc)
{
	bench_err("%s %s: %s", what, path, nacre_strerror(rc));
	bench_abort(1);
}

static void file_of(const struct run *r, int rank, char *buf, size_t len)
{
	if (snprintf(buf, len, r->o->fpp ? "%s.%08d" : "%s", r->o->path, rank) >= (int)len)
		fatal("path too long:", r->o->path, -ENAMETOOLONG);
}

/* Where transfer k of segment seg of rank lives in its file (IOR's layout: a shared file
 * holds segment after segment, each with every rank's block in rank order). */
static uint64_t offset_of(const struct run *r, int rank, uint64_t seg, uint64_t k)
{
	const struct bench_opts *o = r->o;

	if (o->fpp)
		return seg * o->block + k * o->xfer;
	return (seg * (uint64_t)r->size + (uint64_t)rank) * o->block + k * o->xfer;
}

/* The rank whose data this rank reads: with -C the next node's (or, on one node, the next
 * rank's), so the data did not pass through this rank's own cache. */
static int source_rank(const struct run *r)
{
	int shift = 0;

	if (r->o->reorder && r->size > 1)
		shift = bench_nodes() > 1 ? bench_node_tasks() : 1;
	return (r->rank + shift) % r->size;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A fresh shuffle per segment, seeded by rank, repetition and segment: reproducible. */
static void shuffle(struct run *r, int iter, uint64_t seg)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)r->rank << 32) ^ ((uint64_t)iter << 16) ^
		     seg;

	for (uint64_t i = 0; i < r->nxfer; i++)
		r->order[i] = i;
	for (uint64_t i = r->nxfer; i > 1; i--) {
		uint64_t j = xorshift(&s) % i, t = r->order[i - 1];

		r->order[i - 1] = r->order[j];
		r->order[j] = t;
	}
}

/* Moves every block of rank `data_rank` through path; write or read, timed into *p. */
static void transfer(struct run *r, const char *path, void *h, int write, int data_rank,
		     int check, int iter, struct phase *p)
{
	const struct bench_opts *o = r->o;

	for (uint64_t seg = 0; seg < o->segments; seg++) {
		if (r->order)
			shuffle(r, iter, seg);
		for (uint64_t i = 0; i < r->nxfer; i++) {
			uint64_t k = r->order ? r->order[i] : i;
			uint64_t off = offset_of(r, data_rank, seg, k), bad_off = 0, want = 0,
				 got = 0;
			double t0;
			ssize_t n;

			if (write && check)
				bench_pattern_fill(r->buf, o->xfer, off, data_rank);
			t0 = bench_now();
			n = write ? r->io->pwrite(h, r->buf, o->xfer, off)
				  : r->io->pread(h, r->buf, o->xfer, off);
			p->lat_sum += bench_now() - t0;
			p->ops++;
			if (n < 0)
				fatal(write ? "cannot write" : "cannot read", path, (int)n);
			if ((uint64_t)n != o->xfer) {
				bench_err("short %s of %s at offset %llu: %zd of %llu bytes",
					  write ? "write" : "read", path, (unsigned long long)off,
					  n, (unsigned long long)o->xfer);
				bench_abort(1);
			}
			if (write || !check)
				continue;
			uint64_t bad = bench_pattern_check(r->buf, o->xfer, off, data_rank,
							   &bad_off, &want, &got);
			if (bad && p->bad == 0)
				bench_err("data check failed in %s at offset %llu: expected 0x%016llx, "
					  "found 0x%016llx (rank %d's data)",
					  path, (unsigned long long)bad_off,
					  (unsigned long long)want, (unsigned long long)got,
					  data_rank);
			p->bad += (double)bad;
		}
	}
}

/* Writes 3 to drop_caches once per node, after everything is on disk: the read phase then
 * starts cold on the local disk, on the OSS and in the FUSE client's page cache. */
static void drop_caches(void)
{
	static int warned;

	bench_barrier();
	sync();
	if (bench_node_rank() == 0) {
		int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

		if (fd < 0 || write(fd, "3\n", 2) != 2) {
			if (!warned++)
				bench_err("cannot drop the page cache (%s): run as root, or expect "
					  "reads from memory",
					  strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
	bench_barrier();
}

/* Aggregates one phase over ranks: durations from the first start to the last end. */
static void aggregate(const struct run *r, const struct phase *p, int iter,
		      struct bench_result *res, double *bad)
{
	double lo[3] = {p->open0, p->open1, p->io1};
	double hi[3] = {p->open1, p->io1, p->close1};
	double sum[3] = {p->lat_sum, p->ops, p->bad};
	double bytes;

	bench_reduce_min(lo, 3);
	bench_reduce_max(hi, 3);
	bench_reduce_sum(sum, 3);
	memset(res, 0, sizeof(*res));
	res->iter = iter;
	res->open_s = hi[0] - lo[0];
	res->xfer_s = hi[1] - lo[1];
	res->close_s = hi[2] - lo[2];
	res->total_s = hi[2] - lo[0];
	bytes = sum[1] * (double)r->o->xfer;
	if (res->total_s > 0) {
		res->bw_mib = bytes / MIB / res->total_s;
		res->iops = sum[1] / res->total_s;
	}
	res->latency = sum[1] > 0 ? sum[0] / sum[1] : 0;
	*bad += sum[2];
}

/* One write or read phase of repetition iter. check: verify what is read. */
static void phase(struct run *r, int write, int check, int iter, struct bench_result *res,
		  double *bad, int timed)
{
	int data_rank = write ? r->rank : source_rank(r);
	int flags = write ? BENCH_O_WRITE | BENCH_O_CREATE : BENCH_O_READ;
	char path[BENCH_PATH_MAX];
	struct phase p;
	double epoch;
	void *h = NULL;
	int rc;

	memset(&p, 0, sizeof(p));
	file_of(r, data_rank, path, sizeof(path));
	if (r->o->verbose && r->rank == 0)
		fprintf(stderr, "iteration %d: %s%s %s\n", iter, timed ? "" : "checking ",
			write ? "write" : "read", path);
	epoch = bench_epoch();
	p.open0 = bench_now() - epoch;
	rc = r->io->open(path, flags, !r->o->fpp, &h);
	if (rc < 0)
		fatal(write ? "cannot create" : "cannot open", path, rc);
	p.open1 = bench_now() - epoch;
	transfer(r, path, h, write, data_rank, check, iter, &p);
	/* -e: the sync belongs to the write time, as the data is not written before it. */
	if (write && r->o->fsync && (rc = r->io->fsync(h)) < 0)
		fatal("cannot fsync", path, rc);
	p.io1 = bench_now() - epoch;
	rc = r->io->close(h);
	if (rc < 0)
		fatal("cannot close", path, rc);
	p.close1 = bench_now() - epoch;
	if (r->o->verbose > 1) /* per rank: finds the straggler behind a slow aggregate */
		bench_err("%s %s: open %.6f s, %s %.6f s, close %.6f s, %.0f bad words",
			  write ? "write" : "read", path, p.open1 - p.open0,
			  write ? "write" : "read", p.io1 - p.open1, p.close1 - p.io1, p.bad);
	if (!timed)
		p.ops = 0; /* a -W read-back counts errors only */
	aggregate(r, &p, iter, res, bad);
	if (r->rank == 0 && timed)
		bench_ior_print_row(write ? "write" : "read", res);
}

/* Removes the files of this repetition; timed when report is set. */
static void remove_files(struct run *r, int iter, int report)
{
	char path[BENCH_PATH_MAX];
	double epoch = bench_epoch(), t[2];
	int rc = 0;

	t[0] = bench_now() - epoch;
	if (r->o->fpp || r->rank == 0) {
		file_of(r, r->rank, path, sizeof(path));
		rc = r->io->remove(path);
		if (rc < 0 && rc != -ENOENT)
			fatal("cannot remove", path, rc);
	}
	t[1] = bench_now() - epoch;
	bench_reduce_min(&t[0], 1);
	bench_reduce_max(&t[1], 1);
	if (report && r->rank == 0)
		bench_ior_print_remove(t[1] - t[0], iter);
	bench_barrier();
}

int bench_ior_run(const struct bench_opts *o, const struct bench_io *io)
{
	struct bench_result *wr = calloc((size_t)o->reps, sizeof(*wr));
	struct bench_result *rd = calloc((size_t)o->reps, sizeof(*rd));
	struct run r = {.o = o, .io = io, .rank = bench_rank(), .size = bench_size()};
	double bad_w = 0, bad_r = 0;
	struct bench_result scratch;
	int nwr = 0, nrd = 0, rc = 0;

	r.nxfer = o->block / o->xfer;
	if (!wr || !rd || posix_memalign(&r.buf, 4096, o->xfer) != 0 ||
	    (o->random && !(r.order = calloc(r.nxfer, sizeof(*r.order))))) {
		bench_err("out of memory for a %llu-byte transfer buffer",
			  (unsigned long long)o->xfer);
		bench_abort(1);
	}
	bench_pattern_fill(r.buf, o->xfer, 0, r.rank);
	if (r.rank == 0)
		bench_ior_print_header(o, io);
	for (int it = 0; it < o->reps; it++) {
		if (o->write) {
			remove_files(&r, it, 0); /* start from nothing, untimed */
			phase(&r, 1, o->check_write || o->check_read, it, &wr[nwr++], &bad_w, 1);
		}
		if (o->check_write)
			phase(&r, 0, 1, it, &scratch, &bad_w, 0);
		if (o->read) {
			if (o->drop_caches)
				drop_caches();
			phase(&r, 0, o->check_read, it, &rd[nrd++], &bad_r, 1);
		}
		if (!o->keep && o->write)
			remove_files(&r, it, 1);
	}
	if (r.rank == 0) {
		bench_ior_print_tail(o, wr, nwr, rd, nrd);
		if (bad_w > 0 || bad_r > 0) {
			printf("Verification: FAILED: %.0f bad words after write, %.0f in reads\n",
			       bad_w, bad_r);
		} else if (o->check_write || o->check_read) {
			printf("Verification: passed (%s%s%s)\n", o->check_write ? "write" : "",
			       o->check_write && o->check_read ? ", " : "",
			       o->check_read ? "read" : "");
		}
	}
	if (bad_w > 0 || bad_r > 0)
		rc = -EIO;
	free(r.order);
	free(r.buf);
	free(wr);
	free(rd);
	return rc;
}
