/* oss.h - the OST connection table (oss.c): which OSS serves each OST index, and one
 * connection per OSS address. Below the object engine (obj.c); calls only the MDS client.
 */
#ifndef NACRE_CL_OSS_H
#define NACRE_CL_OSS_H

#include <stdint.h>

#include "nacre/nacre.h"
#include "proto/rpc.h"

struct cl_oss_table; /* in cl_internal.h, inside struct nacre_fs */

void cl_oss_init(struct cl_oss_table *t);
/* Destroys every connection. Only at umount, when no call is in flight. */
void cl_oss_fini(struct cl_oss_table *t);
/* Reloads the OST index -> address map from the MDS. 0 or a negative error. Thread-safe. */
int cl_oss_refresh(struct nacre_fs *fs);
/* The connection serving OST idx, created on first use; refreshes the table once if idx is
 * unknown. Returns 0 with *out borrowed until umount, or -NACRE_ENOTARGET. Thread-safe. */
int cl_oss_get(struct nacre_fs *fs, uint32_t idx, struct rpc_conn **out);
/* After a transport error on used for OST idx: refreshes the table (at most once a second)
 * and returns 1 if idx is now served elsewhere (worth a retry), else 0. Thread-safe. */
int cl_oss_moved(struct nacre_fs *fs, uint32_t idx, const struct rpc_conn *used);

/* Every registered target as the MDS lists it. *out is malloc'd (free() it), *count its
 * length. Returns 0 or a negative error. Thread-safe. */
int cl_targets_fetch(struct nacre_fs *fs, int within_ms, struct nacre_target **out,
		     int *count);

#endif
