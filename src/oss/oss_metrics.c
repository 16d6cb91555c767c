/* oss_metrics.c - the OSS's metrics, read at scrape time from each target's counters and
 * from statvfs of its directory. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/metrics.h"
#include "oss/oss_metrics.h"
#include "proto/wire.h"

static struct oss_target **g_targets; /* set once at start */
static int g_ntargets;

static double read_bytes(void *arg)
{
	struct oss_target *t = arg;
	return (double)atomic_load_explicit(&t->stats.read_bytes, memory_order_relaxed);
}

static double write_bytes(void *arg)
{
	struct oss_target *t = arg;
	return (double)atomic_load_explicit(&t->stats.write_bytes, memory_order_relaxed);
}

static double direct_write_bytes(void *arg)
{
	struct oss_target *t = arg;
	return (double)atomic_load_explicit(&t->stats.direct_write_bytes, memory_order_relaxed);
}

static double direct_read_bytes(void *arg)
{
	struct oss_target *t = arg;
	return (double)atomic_load_explicit(&t->stats.direct_read_bytes, memory_order_relaxed);
}

#define SIZE_FN(what, field)                                                                \
	static double what(void *arg)                                                       \
	{                                                                                   \
		struct oss_target *t = arg;                                                 \
		return (double)atomic_load_explicit(&t->stats.field, memory_order_relaxed); \
	}
SIZE_FN(read_reqs, read_sizes.count)
SIZE_FN(read_min, read_sizes.min)
SIZE_FN(read_max, read_sizes.max)
SIZE_FN(write_reqs, write_sizes.count)
SIZE_FN(write_min, write_sizes.min)
SIZE_FN(write_max, write_sizes.max)

static double op_count(void *arg)
{
	return (double)atomic_load_explicit((atomic_uint_fast64_t *)arg, memory_order_relaxed);
}

static void target_space(const struct oss_target *t, uint64_t *kb_free, uint64_t *kb_total)
{
	struct statvfs sv;

	*kb_free = *kb_total = 0;
	if (fstatvfs(t->dir_fd, &sv) == 0) {
		*kb_free = (uint64_t)sv.f_bavail * sv.f_frsize / 1024;
		*kb_total = (uint64_t)sv.f_blocks * sv.f_frsize / 1024;
	}
}

static double kb_free_of(void *arg)
{
	uint64_t f, t;
	target_space(arg, &f, &t);
	return (double)f;
}

static double kb_total_of(void *arg)
{
	uint64_t f, t;
	target_space(arg, &f, &t);
	return (double)t;
}

/* The OSS's storage as a whole: the sum over its OSTs. */
static void oss_space(void *arg, uint64_t *kb_free, uint64_t *kb_total)
{
	(void)arg;
	for (int i = 0; i < g_ntargets; i++) {
		uint64_t f, t;
		target_space(g_targets[i], &f, &t);
		*kb_free += f;
		*kb_total += t;
	}
}

void oss_metrics_register(struct oss_target **targets, int n)
{
	char labels[64];

	g_targets = targets;
	g_ntargets = n;
	metrics_set_space_fn(oss_space, NULL);
	for (int i = 0; i < n; i++) {
		struct oss_target *t = targets[i];
		snprintf(labels, sizeof(labels), "target=\"%s-%s\"", t->fsname, t->name);
		metrics_counter_fn("nacre_oss_read_bytes_total", labels, "Bytes read from an OST",
				   read_bytes, t);
		metrics_counter_fn("nacre_oss_write_bytes_total", labels,
				   "Bytes written to an OST", write_bytes, t);
		metrics_counter_fn("nacre_oss_direct_write_bytes_total", labels,
				   "Of those, bytes written with O_DIRECT (--direct-io)",
				   direct_write_bytes, t);
		metrics_counter_fn("nacre_oss_direct_read_bytes_total", labels,
				   "Of those read, bytes read with O_DIRECT (--direct-io)",
				   direct_read_bytes, t);
		metrics_counter_fn("nacre_oss_read_requests_total", labels,
				   "Reads of an OST that returned bytes", read_reqs, t);
		metrics_gauge_fn("nacre_oss_read_min_bytes", labels,
				 "Smallest read of an OST (0 before the first)", read_min, t);
		metrics_gauge_fn("nacre_oss_read_max_bytes", labels, "Largest read of an OST",
				 read_max, t);
		metrics_counter_fn("nacre_oss_write_requests_total", labels,
				   "Writes to an OST that carried bytes", write_reqs, t);
		metrics_gauge_fn("nacre_oss_write_min_bytes", labels,
				 "Smallest write to an OST (0 before the first)", write_min, t);
		metrics_gauge_fn("nacre_oss_write_max_bytes", labels, "Largest write to an OST",
				 write_max, t);
		for (int k = 0; k < OSS_NOPS; k++) {
			const char *op = wire_opcode_name((uint16_t)(WIRE_OP_OST_WRITE + k));
			char ol[160];

			if (strcmp(op, "UNKNOWN") == 0)
				continue;
			snprintf(ol, sizeof(ol), "%s,op=\"%s\"", labels, op);
			metrics_counter_fn("nacre_oss_target_requests_total", ol,
					   "Requests an OST served, by operation", op_count,
					   &t->stats.ops[k]);
		}
		metrics_gauge_fn("nacre_oss_kbytes_free", labels, "Free KiB of an OST", kb_free_of,
				 t);
		metrics_gauge_fn("nacre_oss_capacity_kbytes", labels, "Total KiB of an OST",
				 kb_total_of, t);
	}
}
