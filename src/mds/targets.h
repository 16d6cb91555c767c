/* targets.h - the cluster registry: OSTs, their addresses (persisted) and liveness (memory).
 * An OST is up while its heartbeats arrive: the last one at most MDS_TARGET_UP_MS ago, and
 * until the connection they come on closes. It is active (df, new stripes) while it is up
 * and its address answers the MDS's probe (probe.h).
 * Thread-safe (one mutex inside, a leaf lock). */
#ifndef NACRE_MDS_TARGETS_H
#define NACRE_MDS_TARGETS_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/wire.h"

#define MDS_TARGET_UP_MS 6000
#define MDS_OST_INDEX_MAX 65535u

/* One up OST as the allocator sees it. */
struct mds_ost_info {
	uint32_t index;
	uint64_t kb_total;
	uint64_t kb_avail;
};

int mds_targets_create(struct mds_targets **out);
void mds_targets_destroy(struct mds_targets *t); /* NULL is fine */
/* Loads the persisted index -> addr records (all down until they heartbeat). */
int mds_targets_load(struct mds *m);
/* Every known target not heard from since now counts as up for MDS_TARGET_UP_MS: the MDS
 * itself did not run for a while (stopped) and so missed their heartbeats. Thread-safe. */
void mds_targets_grace(struct mds_targets *t);
/* TARGET_REGISTER (heartbeat 0) or TARGET_HEARTBEAT (1): checks fsname, type, index, then
 * marks the OST up at addr; a new or changed address is persisted through the writer.
 * Returns 0, -NACRE_EFSNAME, -EINVAL, or -EADDRINUSE (index held by another up address). */
int mds_targets_register(struct mds *m, const struct wire_target_reg *r, int heartbeat,
			 uint64_t conn_id);
/* The connection conn_id closed: the OSTs whose heartbeats came on it are down now (a
 * killed OSS shows inactive at once, not when its heartbeats are missed). */
void mds_targets_disconnect(struct mds *m, uint64_t conn_id);
/* The MDS's probe of addr (probe.h) got an answer (ok) or none: an OST there that does not
 * answer is inactive (df, check servers) and no new file is striped on it. */
void mds_targets_reachable(struct mds *m, const char *addr, int ok);
/* The distinct addresses of the up OSTs (at most max). */
int mds_targets_addrs(struct mds_targets *t, char (*out)[NACRE_ADDR_MAX + 1], int max);
/* How many known OSTs are not up (after a start: every one until it registers again;
 * ost_wait.h parks creates meanwhile). */
int mds_targets_down(struct mds_targets *t);
/* Fills out with up to max OSTs that can take new files, by index: the active ones, and
 * during a grace (mds_targets_grace) the known ones not heard from since. Returns how
 * many. */
int mds_targets_up(struct mds_targets *t, struct mds_ost_info *out, int max);
/* Copies the address of OST index into addr (NACRE_ADDR_MAX + 1 bytes); *up tells whether it
 * is up. Returns 0 or -ENOENT (never registered). */
int mds_targets_addr(struct mds_targets *t, uint32_t index, char *addr, int *up);
/* Every known OST by index, malloc'd (caller frees). Returns the count or -ENOMEM. */
int mds_targets_list(struct mds_targets *t, struct nacre_target **out);
/* Sum of the space of up OSTs. */
void mds_targets_space(struct mds_targets *t, struct nacre_statfs *sum);

#endif
