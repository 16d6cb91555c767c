/* lock.h - the MDS lock service: cluster-wide POSIX (fcntl) byte-range locks and flock
 * locks, kept in memory (lost when the MDS restarts; nothing is replayed).
 *
 * An owner is (client id, lock owner) as the client sends them (wire.h, lock_req). The
 * service never waits: a conflicting LOCK_SET answers -EAGAIN at once and a blocking
 * F_SETLKW is the client asking again (see docs/protocol.md). A client whose connection
 * breaks keeps its locks for evict_ms; a lock request from it on a new connection within
 * that time binds them to the new one, otherwise the next lock request anyone makes drops
 * them (eviction). One mutex guards everything; it is a leaf: nothing else is taken under it.
 */
#ifndef NACRE_MDS_LOCK_H
#define NACRE_MDS_LOCK_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"
#include "proto/wire.h"

struct mds_locks;

/* Most locks held at once in the whole service; past it LOCK_SET answers -ENOLCK. */
#define MDS_LOCKS_MAX (1u << 20)
/* Default time a disconnected client keeps its locks. */
#define MDS_LOCK_EVICT_MS_DEFAULT 30000

/* Creates an empty service; evict_ms 0 drops a client's locks as soon as it disconnects.
 * Returns 0 or -ENOMEM. */
int mds_locks_create(int evict_ms, struct mds_locks **out);
/* Frees everything. Accepts NULL. */
void mds_locks_destroy(struct mds_locks *lk);

/* Takes, changes or drops (type UNLCK) r's lock for r's owner, on behalf of connection
 * conn_id, at monotonic time now_ms. POSIX locks split, merge, upgrade and downgrade as
 * fcntl does; an upgrade that conflicts leaves the old lock in place. Returns 0, -EAGAIN
 * (a lock of another owner conflicts), -ENOLCK (MDS_LOCKS_MAX) or -ENOMEM. Thread-safe. */
int mds_locks_set(struct mds_locks *lk, uint64_t conn_id, const struct wire_lock_req *r,
		  int64_t now_ms);
/* F_GETLK: the first POSIX lock of another owner that conflicts with r (type RD or WR);
 * out->type UNLCK if none. Returns 0 or -EINVAL (flock or UNLCK asked). Thread-safe. */
int mds_locks_get(struct mds_locks *lk, uint64_t conn_id, const struct wire_lock_req *r,
		  int64_t now_ms, struct wire_lock_rep *out);
/* The connection broke: its clients' eviction clocks start (or, with evict_ms 0, their
 * locks go now). Thread-safe. */
void mds_locks_disconnect(struct mds_locks *lk, uint64_t conn_id, int64_t now_ms);
/* Drops every lock of a client now (its session was evicted). Thread-safe. */
void mds_locks_drop_client(struct mds_locks *lk, uint64_t client);
/* Locks held, for tests and metrics. Thread-safe. */
uint64_t mds_locks_count(struct mds_locks *lk);

/* rpc disconnect part: mds_locks_disconnect at the current time (m->locks may be NULL). */
void mds_lock_disconnect(struct mds *m, uint64_t conn_id);
/* Decodes and runs LOCK_SET / LOCK_GET (rpc handler part). Runs on worker threads. */
int mds_lock_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

#endif
