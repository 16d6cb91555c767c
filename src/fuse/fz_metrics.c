/* fz_metrics.c - see fz_metrics.h. */
#include <stdatomic.h>

#include "common/metrics.h"
#include "fuse/fz_metrics.h"

static struct metric *g_read, *g_write; /* set once by fz_metrics_register */
static atomic_long g_open;

static double open_now(void *arg)
{
	(void)arg;
	return (double)atomic_load_explicit(&g_open, memory_order_relaxed);
}

void fz_metrics_register(void)
{
	g_read = metrics_counter("nacre_client_read_bytes_total", "",
				 "Bytes read by applications through this mount");
	g_write = metrics_counter("nacre_client_write_bytes_total", "",
				  "Bytes written by applications through this mount");
	metrics_gauge_fn("nacre_client_open_files", "", "Files open through this mount",
			 open_now, NULL);
}

void fz_metrics_read(uint64_t bytes)
{
	metrics_add(g_read, bytes);
}

void fz_metrics_write(uint64_t bytes)
{
	metrics_add(g_write, bytes);
}

void fz_metrics_open(int delta)
{
	atomic_fetch_add_explicit(&g_open, delta, memory_order_relaxed);
}
