/* ost_wait.h - right after a start, creates wait for the OSTs to re-register.
 *
 * A started MDS knows its OSTs from the registry (targets.h) but counts them down until
 * their servers register again, which takes a heartbeat or two (OSS_HEARTBEAT_MS). A create
 * allocated meanwhile would find no OST up and fail with ENOSPC, or get its stripes on the
 * first OSS back only. So requests that allocate OSTs (CREATE, LAYOUT_SET) wait, parked
 * (rpc_defer) before they reach the group commit, until every OST the registry remembers is
 * up again or MDS_OST_GRACE_MS have passed since the start; then they run and allocate
 * among the OSTs that are up. An MDS that remembers no OST does not wait.
 *
 * One mutex (a leaf but for the rpc calls that resume parked requests); a thread that ends
 * with the grace. Thread-safe.
 */
#ifndef NACRE_MDS_OST_WAIT_H
#define NACRE_MDS_OST_WAIT_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"

#define MDS_OST_GRACE_MS 10000

struct mds_ost_wait;

/* Starts the wait after m's registry was loaded (mds_targets_load). grace_ms 0 = the
 * default. *out owned by the caller. Returns 0, -ENOMEM or -EAGAIN. */
int mds_ost_wait_create(struct mds *m, int grace_ms, struct mds_ost_wait **out);
/* Resumes nothing: the server has stopped; parked requests are only freed. NULL is fine. */
void mds_ost_wait_destroy(struct mds_ost_wait *w);

/* Whether requests of opcode allocate OSTs. */
int mds_ost_wait_needed(uint16_t opcode);
/* MDS_OST_WAIT_PASS (run req now) or RPC_DEFER (parked; it will be resumed), or -ENOMEM.
 * Cheap once the wait is over (one atomic load). NULL w: PASS. */
enum { MDS_OST_WAIT_PASS = 1 };
int mds_ost_wait_admit(struct mds_ost_wait *w, const struct rpc_request *req);
/* An OST registered: the wait may be over. NULL w is fine. */
void mds_ost_wait_kick(struct mds_ost_wait *w);
/* A connection closed: its parked requests are dropped. NULL w is fine. */
void mds_ost_wait_disconnect(struct mds_ost_wait *w, uint64_t conn_id);

#endif
