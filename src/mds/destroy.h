/* destroy.h - the background thread that drains the destroy log: OST_DESTROY for every
 * object of each record, then the record is deleted; records whose OSS is down are retried
 * every few seconds. */
#ifndef NACRE_MDS_DESTROY_H
#define NACRE_MDS_DESTROY_H

#include "mds/mds.h"

#define MDS_DESTROY_RETRY_MS 3000
/* delay between a kick and the pass it starts */
#define MDS_DESTROY_COALESCE_MS 20

int mds_destroyer_start(struct mds *m, struct mds_destroyer **out);
/* Stops and joins the thread, frees d. NULL is fine. */
void mds_destroyer_stop(struct mds_destroyer *d);
/* Asks for a pass now (after a commit that queued objects). Thread-safe; NULL is fine. */
void mds_destroyer_kick(struct mds_destroyer *d);

#endif
