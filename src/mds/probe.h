/* probe.h - the MDS asks each OSS it stripes files on whether it answers, as Lustre's OSP
 * keeps a connection to each OST: every MDS_PROBE_EVERY_MS a PING to every up OST's
 * address, and an address that does not answer within MDS_PROBE_TIMEOUT_MS makes its OSTs
 * inactive (targets.h: df and check servers say so, the allocator leaves them out, so a
 * create never waits on such an OST) until one answers again. One thread; addresses are
 * asked one after another. */
#ifndef NACRE_MDS_PROBE_H
#define NACRE_MDS_PROBE_H

#include "mds/mds.h"

#define MDS_PROBE_EVERY_MS 1000
#define MDS_PROBE_TIMEOUT_MS 1500

struct mds_probe;

/* Starts the thread. 0 or -errno. */
int mds_probe_start(struct mds *m, struct mds_probe **out);
/* Stops and frees it (NULL is fine). */
void mds_probe_stop(struct mds_probe *p);

#endif
