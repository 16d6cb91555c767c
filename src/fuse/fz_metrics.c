/* fz_metrics.c - see fz_metrics.h. */
#include <stdatomic.h>

#include "common/lprocfs.h"
#include "common/metrics.h"
#include "fuse/fz.h"
#include "fuse/fz_metrics.h"

/* Requests of one direction that moved bytes: count, smallest, largest, sum (relaxed
 * atomics; each is consistent on its own). */
struct io_sizes {
	atomic_uint_fast64_t count, min, max, sum;
};

static struct io_sizes g_rd, g_wr;
static atomic_long g_open;
static atomic_uint_fast64_t g_opens, g_closes;

static double open_now(void *arg)
{
	(void)arg;
	return (double)atomic_load_explicit(&g_open, memory_order_relaxed);
}

static double load(void *arg)
{
	return (double)atomic_load_explicit((atomic_uint_fast64_t *)arg, memory_order_relaxed);
}

void fz_metrics_register(void)
{
	metrics_counter_fn("nacre_client_read_bytes_total", "",
			   "Bytes read by applications through this mount", load, &g_rd.sum);
	metrics_counter_fn("nacre_client_write_bytes_total", "",
			   "Bytes written by applications through this mount", load, &g_wr.sum);
	metrics_counter_fn("nacre_client_read_requests_total", "",
			   "Reads through this mount that returned bytes", load, &g_rd.count);
	metrics_gauge_fn("nacre_client_read_min_bytes", "",
			 "Smallest read through this mount (0 before the first)", load, &g_rd.min);
	metrics_gauge_fn("nacre_client_read_max_bytes", "", "Largest read through this mount",
			 load, &g_rd.max);
	metrics_counter_fn("nacre_client_write_requests_total", "",
			   "Writes through this mount that carried bytes", load, &g_wr.count);
	metrics_gauge_fn("nacre_client_write_min_bytes", "",
			 "Smallest write through this mount (0 before the first)", load,
			 &g_wr.min);
	metrics_gauge_fn("nacre_client_write_max_bytes", "", "Largest write through this mount",
			 load, &g_wr.max);
	metrics_gauge_fn("nacre_client_open_files", "", "Files open through this mount",
			 open_now, NULL);
	fz_ring_metrics_register();
}

static void count(struct io_sizes *z, uint64_t n)
{
	if (n == 0)
		return;
	atomic_fetch_add_explicit(&z->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&z->sum, n, memory_order_relaxed);
	lprocfs_minmax(&z->min, &z->max, n);
}

void fz_metrics_read(uint64_t bytes)
{
	count(&g_rd, bytes);
}

void fz_metrics_write(uint64_t bytes)
{
	count(&g_wr, bytes);
}

void fz_metrics_open(int delta)
{
	atomic_fetch_add_explicit(&g_open, delta, memory_order_relaxed);
	atomic_fetch_add_explicit(delta > 0 ? &g_opens : &g_closes, 1, memory_order_relaxed);
}

static void sizes_line(struct strbuf *out, const char *name, struct io_sizes *z)
{
	uint64_t mms[3] = {
		atomic_load_explicit(&z->min, memory_order_relaxed),
		atomic_load_explicit(&z->max, memory_order_relaxed),
		atomic_load_explicit(&z->sum, memory_order_relaxed),
	};

	lprocfs_counter_line(out, name, atomic_load_explicit(&z->count, memory_order_relaxed),
			     "bytes", mms);
}

void fz_metrics_llite_stats(struct nacre_fs *fs, struct strbuf *out)
{
	(void)fs;
	lprocfs_snapshot_line(out);
	sizes_line(out, "read_bytes", &g_rd);
	sizes_line(out, "write_bytes", &g_wr);
	lprocfs_counter_line(out, "open", atomic_load_explicit(&g_opens, memory_order_relaxed),
			     "reqs", NULL);
	lprocfs_counter_line(out, "close", atomic_load_explicit(&g_closes, memory_order_relaxed),
			     "reqs", NULL);
}
