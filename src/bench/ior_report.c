/* ior_report.c - the data test's output, laid out as IOR 3.3 lays it out so that scripts
 * reading IOR logs (Max Write/Read lines, the Results and Summary tables) read ours. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "bench/bench.h"

#define MIB (1024.0 * 1024.0)

/* "1 MiB", "1.50 GiB", "512 bytes": the Options block's sizes. */
static void human(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double d = (double)v;
	int u = 0;

	while (d >= 1024.0 && u < 4) {
		d /= 1024.0;
		u++;
	}
	if (d == floor(d))
		snprintf(buf, len, "%.0f %s", d, units[u]);
	else
		snprintf(buf, len, "%.2f %s", d, units[u]);
}

/* A number for the Results table: fractions of a second keep their digits, big rates
 * drop theirs. */
static void num(double v, char *buf, size_t len)
{
	if (v < 1.0)
		snprintf(buf, len, "%.6f", v);
	else if (v < 1000.0)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.0f", v);
}

static void print_cmdline(const struct bench_opts *o)
{
	fputs(BENCH_NAME, stdout);
	for (int i = 1; i < o->argc; i++)
		printf(" %s", o->argv[i]);
	putchar('\n');
}

/* The test being reported (rank 0 only): the rows print its block and transfer sizes. */
static const struct bench_opts *g_o;

static void kv(const char *key, const char *val)
{
	printf("%-20s: %s\n", key, val);
}

void bench_ior_print_header(const struct bench_opts *o, const struct bench_io *io)
{
	char date[64], dir[BENCH_PATH_MAX], fsl[160], b[64];
	struct bench_fsinfo fs;
	struct utsname un;
	int n = bench_size();

	g_o = o;
	bench_date(date, sizeof(date));
	bench_dirname(o->path, dir, sizeof(dir));
	printf(BENCH_NAME "-" BENCH_VERSION ": MPI Coordinated Test of Parallel I/O\n");
	kv("Began", date);
	printf("%-20s: ", "Command line");
	print_cmdline(o);
	if (uname(&un) == 0) {
		snprintf(fsl, sizeof(fsl), "%s %s", un.sysname, un.nodename);
		kv("Machine", fsl);
	}
	kv("TestID", "0");
	kv("StartTime", date);
	kv("Path", dir);
	if (io->statfs(dir, &fs) == 0) {
		bench_fs_line(&fs, fsl, sizeof(fsl));
		kv("FS", fsl);
	}
	printf("\nOptions: \n");
	kv("api", io->name);
	kv("apiVersion", "");
	kv("test filename", o->path);
	kv("access", o->fpp ? "file-per-process" : "single-shared-file");
	kv("type", "independent");
	snprintf(b, sizeof(b), "%llu", (unsigned long long)o->segments);
	kv("segments", b);
	kv("ordering in a file", o->random ? "random" : "sequential");
	kv("ordering inter file", o->reorder ? "constant task offset" : "no tasks offsets");
	if (o->reorder)
		kv("task offset", "1");
	printf("%-20s: %d\n", "nodes", bench_nodes());
	printf("%-20s: %d\n", "tasks", n);
	printf("%-20s: %d\n", "clients per node", bench_node_tasks());
	printf("%-20s: %d\n", "repetitions", o->reps);
	human(o->xfer, b, sizeof(b));
	kv("xfersize", b);
	human(o->block, b, sizeof(b));
	kv("blocksize", b);
	human(o->block * o->segments * (uint64_t)n, b, sizeof(b));
	kv("aggregate filesize", b);
	if (o->check_write || o->check_read)
		kv("data check", o->check_write && o->check_read ? "write, read"
				 : o->check_write		  ? "write"
								  : "read");
	printf("\nResults: \n\n");
	printf("access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    "
	       "wr/rd(s)   close(s)   total(s)   iter\n");
	printf("------    ---------  ----       ----------  ---------- ---------  --------   "
	       "--------   --------   --------   ----\n");
	fflush(stdout);
}

void bench_ior_print_row(const char *access, const struct bench_result *r)
{
	char bw[32], iops[32], lat[32], op[32], io[32], cl[32], tot[32];

	num(r->bw_mib, bw, sizeof(bw));
	num(r->iops, iops, sizeof(iops));
	num(r->latency, lat, sizeof(lat));
	num(r->open_s, op, sizeof(op));
	num(r->xfer_s, io, sizeof(io));
	num(r->close_s, cl, sizeof(cl));
	num(r->total_s, tot, sizeof(tot));
	/* Each cell is one narrower than its column plus a space, so a wide number still
	 * leaves a separator. */
	printf("%-9s %-10s %-10s %-11s %-10.2f %-10.2f %-10s %-10s %-10s %-10s %d\n", access, bw,
	       iops, lat, g_o ? (double)g_o->block / 1024.0 : 0.0,
	       g_o ? (double)g_o->xfer / 1024.0 : 0.0, op, io, cl, tot, r->iter);
	fflush(stdout);
}

void bench_ior_print_remove(double secs, int iter)
{
	char tot[32];

	num(secs, tot, sizeof(tot));
	printf("%-9s %-10s %-10s %-11s %-10s %-10s %-10s %-10s %-10s %-10s %d\n", "remove", "-",
	       "-", "-", "-", "-", "-", "-", "-", tot, iter);
	fflush(stdout);
}

struct stats {
	double max, min, mean, sd;
};

static struct stats stats_of(const struct bench_result *r, int n, int iops)
{
	struct stats s = {0, 0, 0, 0};
	double sq = 0;

	for (int i = 0; i < n; i++) {
		double v = iops ? r[i].iops : r[i].bw_mib;

		if (i == 0 || v > s.max)
			s.max = v;
		if (i == 0 || v < s.min)
			s.min = v;
		s.mean += v;
	}
	if (n == 0)
		return s;
	s.mean /= n;
	for (int i = 0; i < n; i++) {
		double d = (iops ? r[i].iops : r[i].bw_mib) - s.mean;

		sq += d * d;
	}
	s.sd = sqrt(sq / n);
	return s;
}

static void summary_row(const struct bench_opts *o, const char *op, const struct bench_result *r,
			int n)
{
	struct stats bw = stats_of(r, n, 0), ops = stats_of(r, n, 1);
	double mean_s = 0;

	for (int i = 0; i < n; i++)
		mean_s += r[i].total_s / n;
	printf("%-9s %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.5f %10s %13s "
	       "%5d %6d %3d %4d %3d %5d %8d %9d %4d %6llu %8llu %8llu %9.1f %5s %6d\n",
	       op, bw.max, bw.min, bw.mean, bw.sd, ops.max, ops.min, ops.mean, ops.sd, mean_s,
	       "NA", "NA", 0, bench_size(), bench_node_tasks(), o->reps, o->fpp, o->reorder, 1, 0,
	       0, (unsigned long long)o->segments, (unsigned long long)o->block,
	       (unsigned long long)o->xfer,
	       (double)(o->block * o->segments * (uint64_t)bench_size()) / MIB,
	       bench_api_name(o->api), 0);
}

static double max_bw(const struct bench_result *r, int n)
{
	double m = 0;

	for (int i = 0; i < n; i++)
		if (r[i].bw_mib > m)
			m = r[i].bw_mib;
	return m;
}

void bench_ior_print_tail(const struct bench_opts *o, const struct bench_result *wr, int nwr,
			  const struct bench_result *rd, int nrd)
{
	char date[64];

	if (nwr)
		printf("Max Write: %.2f MiB/sec (%.2f MB/sec)\n", max_bw(wr, nwr),
		       max_bw(wr, nwr) * MIB / 1e6);
	if (nrd)
		printf("Max Read:  %.2f MiB/sec (%.2f MB/sec)\n", max_bw(rd, nrd),
		       max_bw(rd, nrd) * MIB / 1e6);
	printf("\nSummary of all tests:\n");
	printf("Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  "
	       "Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN "
	       "reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API "
	       "RefNum\n");
	if (nwr)
		summary_row(o, "write", wr, nwr);
	if (nrd)
		summary_row(o, "read", rd, nrd);
	bench_date(date, sizeof(date));
	kv("Finished", date);
	fflush(stdout);
}
