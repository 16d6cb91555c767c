/* lock.h - the MDS lock service: cluster-wide POSIX (fcntl) byte-range locks and flock
 * locks, kept in memory (a restarted MDS gets them back from the clients' replay).
 *
 * An owner is (client id, lock owner) as the client sends them (wire.h, lock_req). A
 * conflicting LOCK_SET answers -EAGAIN at once; a conflicting LOCK_WAIT (F_SETLKW) is
 * parked as a waiter of its file, in arrival order, and answered when it is granted:
 * whichever thread's unlock, downgrade, cancel or eviction makes it grantable answers it
 * (through the answer callback given at create). A waiter is grantable when no lock of
 * another owner conflicts with it and no earlier waiter still queued does (unless that one
 * waits for a lock the later one's owner holds): conflicting waiters are served first come
 * first served and none starves, independent ones proceed. A LOCK_SET that conflicts with
 * a queued waiter answers -EAGAIN too: it does not jump the queue.
 *
 * A client whose connection breaks keeps its locks for evict_ms; a lock request from it on
 * a new connection within that time binds them to the new one, otherwise the next lock
 * request anyone makes, or the next tick (mds_locks_tick), drops them (eviction). Its waiters end as soon as their connection
 * closes (the client sends them again on its new connection).
 *
 * One mutex guards everything; it is a leaf: nothing else is taken under it, and the
 * answer callback runs after it is dropped.
 */
#ifndef NACRE_MDS_LOCK_H
#define NACRE_MDS_LOCK_H

#include <stdint.h>

#include "proto/wire.h"

struct mds_locks;

/* Most locks held at once in the whole service; past it LOCK_SET answers -ENOLCK. */
#define MDS_LOCKS_MAX (1u << 20)
/* Most waiters queued at once in the whole service; past it LOCK_WAIT answers -ENOLCK. */
#define MDS_LOCK_WAITERS_MAX (1u << 16)
/* Cancels kept for LOCK_WAITs that arrive after them (see mds_locks_cancel). */
#define MDS_LOCK_CANCELS_KEPT 64
/* Default time a disconnected client keeps its locks. */
#define MDS_LOCK_EVICT_MS_DEFAULT 30000

/* mds_locks_wait parked the request: the answer callback gets its token later. */
#define MDS_LOCK_PARKED 1

/* Answers a parked waiter: status 0 (granted), -EINTR (canceled), -EDEADLK, -ENOLCK,
 * -ENOMEM, -ECONNRESET (its connection closed) or -EIO (its client was evicted). Called
 * exactly once per parked token, without the service's mutex, from whichever thread ended
 * the wait. */
typedef void (*mds_lock_answer_fn)(void *arg, void *token, int status);

/* Where a request came from. */
struct mds_lock_from {
	uint64_t conn_id; /* its connection: a waiter ends when that closes */
	uint64_t sender;  /* whose xids order its requests (the session, else the connection) */
	uint64_t xid;
};

/* Creates an empty service; evict_ms 0 drops a client's locks as soon as it disconnects.
 * answer (required) ends parked waiters. Returns 0 or -ENOMEM. */
int mds_locks_create(int evict_ms, mds_lock_answer_fn answer, void *answer_arg,
		     struct mds_locks **out);
/* Frees everything. Waiters still parked are dropped without an answer (the server is
 * gone). Accepts NULL. */
void mds_locks_destroy(struct mds_locks *lk);

/* Takes, changes or drops (type UNLCK) r's lock for r's owner, on behalf of connection
 * conn_id, at monotonic time now_ms. POSIX locks split, merge, upgrade and downgrade as
 * fcntl does; an upgrade that conflicts leaves the old lock in place. Waiters the change
 * makes grantable are granted. Returns 0, -EAGAIN (a lock of another owner, or a waiter
 * queued before, conflicts), -ENOLCK (MDS_LOCKS_MAX) or -ENOMEM. Thread-safe. */
int mds_locks_set(struct mds_locks *lk, uint64_t conn_id, const struct wire_lock_req *r,
		  int64_t now_ms);
/* F_SETLKW: as mds_locks_set, but a conflict parks r as a waiter with token (answered
 * later through the answer callback) and returns MDS_LOCK_PARKED. Returns 0 (granted now),
 * MDS_LOCK_PARKED, -EDEADLK (POSIX: r's owner would wait for an owner that waits for it),
 * -EINTR (a cancel sent after it arrived first), -ECONNRESET (its connection is closing),
 * -ENOLCK (MDS_LOCK_WAITERS_MAX or MDS_LOCKS_MAX) or -ENOMEM. Thread-safe. */
int mds_locks_wait(struct mds_locks *lk, const struct mds_lock_from *from,
		   const struct wire_lock_req *r, int64_t now_ms, void *token);
/* Ends the waiters of r's owner on r's fid, kind and range with -EINTR. If none waits, the
 * cancel is kept (MDS_LOCK_CANCELS_KEPT, oldest forgotten first) for a LOCK_WAIT of the
 * same sender with a lower xid that arrives later: the two may run in either order on the
 * MDS's workers. Always succeeds. Thread-safe. */
void mds_locks_cancel(struct mds_locks *lk, const struct mds_lock_from *from,
		      const struct wire_lock_req *r);
/* F_GETLK: the first POSIX lock of another owner that conflicts with r (type RD or WR);
 * out->type UNLCK if none (waiters are not reported). Returns 0 or -EINVAL (flock or UNLCK
 * asked). Thread-safe. */
int mds_locks_get(struct mds_locks *lk, uint64_t conn_id, const struct wire_lock_req *r,
		  int64_t now_ms, struct wire_lock_rep *out);
/* The connection is closing (requests of it may still run): its waiters end now with
 * -ECONNRESET, and one it parks until mds_locks_disconnect is refused. Thread-safe. */
void mds_locks_conn_closed(struct mds_locks *lk, uint64_t conn_id);
/* The connection is gone, with no request of it left: its clients' eviction clocks start
 * (or, with evict_ms 0, their locks go now). Thread-safe. */
void mds_locks_disconnect(struct mds_locks *lk, uint64_t conn_id, int64_t now_ms);
/* Drops every lock and waiter (answered -EIO) of a client now (its session was evicted).
 * Thread-safe. */
void mds_locks_drop_client(struct mds_locks *lk, uint64_t client);
/* Evicts the clients disconnected longer than evict_ms by now_ms, as every lock request
 * does first: for the waiters behind their locks when no request comes. Thread-safe. */
void mds_locks_tick(struct mds_locks *lk, int64_t now_ms);
/* Locks held and waiters queued, for tests and metrics. Thread-safe. */
uint64_t mds_locks_count(struct mds_locks *lk);
uint64_t mds_locks_waiters(struct mds_locks *lk);

#endif
