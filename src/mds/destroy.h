/* destroy.h - the background thread that drains the destroy log. A pass reads the log in
 * rounds of up to 256 records (4096 objects), sends each OST one OST_DESTROY_BATCH with its
 * objects of the round (all OSTs at once; one OST_DESTROY per object to an OSS that
 * predates the batch), then deletes in one commit the records all of whose objects are
 * gone. A record with an object on a down OST, or one the OSS failed to remove, stays and
 * is retried every few seconds (its other objects are sent again: a missing object is
 * fine). */
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
