/* syncer.h - flushes the MDS's asynchronous LMDB commits to disk every interval, as a
 * journal's commit interval does. fsync/fsyncdir from clients flush at once (MDS_SYNC). */
#ifndef NACRE_MDS_SYNCER_H
#define NACRE_MDS_SYNCER_H

#include "mds/writer.h"

struct mds_syncer;

/* Starts the thread, which flushes through w (so that last_committed advances). interval_ms
 * 0 means 1000. Returns 0 or -errno. */
int mds_syncer_start(struct mds_writer *w, int interval_ms, struct mds_syncer **out);
/* Stops the thread after a last flush. NULL is fine. */
void mds_syncer_stop(struct mds_syncer *s);

#endif
