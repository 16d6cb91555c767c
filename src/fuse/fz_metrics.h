/* fz_metrics.h - nacre-mount's client-side metrics: bytes read and written through the
 * mount and files open, in the process's metrics registry (common/metrics.h). The RPC
 * latency per operation comes from the rpc layer. Thread-safe. */
#ifndef NACRE_FZ_METRICS_H
#define NACRE_FZ_METRICS_H

#include <stdint.h>

/* Creates the series so they exist (at 0) before the first scrape. */
void fz_metrics_register(void);
void fz_metrics_read(uint64_t bytes);
void fz_metrics_write(uint64_t bytes);
/* +1 on open, -1 on close. */
void fz_metrics_open(int delta);
struct strbuf;
/* Appends llite.*.stats's value in lprocfs's shape (common/lprocfs.h): read_bytes and
 * write_bytes (samples, min, max, sum), open and close counts. Counts every mount of this
 * process (one, in nacre-mount). */
void fz_metrics_llite_stats(struct strbuf *out);

#endif
