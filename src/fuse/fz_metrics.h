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
struct nacre_fs;
/* Appends llite.*.stats's value in lprocfs's shape (common/lprocfs.h): read_bytes and
 * write_bytes (samples, min, max, sum), open and close counts. Counts every mount of this
 * process (one, in nacre-mount); fs is not used. */
void fz_metrics_llite_stats(struct nacre_fs *fs, struct strbuf *out);

/* Write-back (wb_metrics.c): mdc.*.wb_stats's value, nacre_fs_wb_stats in lprocfs's
 * shape; and the nacre_client_wb_* series of fs, the one mount of this process. */
void fz_metrics_wb_stats(struct nacre_fs *fs, struct strbuf *out);
void fz_metrics_wb_register(struct nacre_fs *fs);
/* Before fs is unmounted: the series read 0 from then on. */
void fz_metrics_wb_forget(void);

#endif
