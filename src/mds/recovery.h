/* recovery.h - the MDS's recovery window after a start (docs/recovery.md).
 *
 * A started MDS that finds sessions in its clients table expects those clients back. Until
 * every one of them has come back and finished, or the window (--recovery-window) has
 * passed, it runs only recovery:
 *   1. replays: the changes clients were told of but that may not be on disk, executed one
 *      at a time in the order of their transnos, across clients (a replay waits until
 *      every expected client has either sent its next replay or said it has none left);
 *   2. re-opens and re-asserted locks, once every replay is done;
 *   3. then everything else that arrived meanwhile, in order (new requests, resends).
 * Clients that did not come back in the window are evicted (logged with their name) and
 * unlinked files nobody re-opened are destroyed.
 *
 * Requests wait parked (rpc_defer) and are resumed in turn. One mutex (a leaf but for the
 * rpc calls that resume parked requests). Thread-safe.
 */
#ifndef NACRE_MDS_RECOVERY_H
#define NACRE_MDS_RECOVERY_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"
#include "proto/wire.h"

struct mds_recovery;

#define MDS_RECOVERY_WINDOW_MS_DEFAULT 60000

/* Opens the window if the sessions table holds clients (m->sessions set); window_ms 0 =
 * the default. Starts the thread that closes it. *out owned by the caller. */
int mds_recovery_create(struct mds *m, int window_ms, struct mds_recovery **out);
void mds_recovery_destroy(struct mds_recovery *r); /* NULL is fine */

/* Whether the window is open (cheap: one atomic load). */
int mds_recovery_active(const struct mds_recovery *r);

enum { MDS_RECOVERY_PASS = 1 };
/* During the window: decides what happens to req. Returns MDS_RECOVERY_PASS (run it now),
 * RPC_DEFER (parked; it will be resumed), or a status to answer with at once. */
int mds_recovery_admit(struct mds_recovery *r, const struct rpc_request *req);
/* Whether the window is open and client_id is one of the clients it waits for, back or
 * not, that has not finished (its state may be brought back now). */
int mds_recovery_expects(struct mds_recovery *r, uint64_t client_id);
/* A replay that was admitted has been executed (whatever its result). */
void mds_recovery_replay_done(struct mds_recovery *r, uint64_t client_id, uint64_t xid);
/* A connection closed: its parked requests are dropped. */
void mds_recovery_disconnect(struct mds_recovery *r, uint64_t conn_id);

/* CONNECT of a client: RECOVER if the window expects it, with the time left. */
void mds_recovery_connect(struct mds_recovery *r, uint64_t client_id, uint32_t *session,
			  uint32_t *left_ms);
/* RECOVERY_STATUS. */
void mds_recovery_status(struct mds_recovery *r, struct wire_recovery_status *out);

#endif
