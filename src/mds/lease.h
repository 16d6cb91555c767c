/* lease.h - write-back leases on directories (docs/writeback.md, "Leases"; the protocol is
 * MDS_LEASE in wire.h).
 *
 * A client (its client id) that holds the lease on a directory knows the directory
 * completely and answers from that knowledge without asking: a name it has not made there
 * does not exist. So every other client's request that names the directory (mds_req_fids)
 * waits, parked (rpc_defer), while the MDS recalls the lease: the holder is told through its
 * NOTIFY_WAIT (notify.h), gives the lease back with a PUT, and the parked requests run. A
 * holder that does not give it back within WIRE_LEASE_RECALL_MS is evicted (its lease is
 * void on its side by then: WIRE_LEASE_MS after its last renewal); one whose connection
 * closed loses its leases WIRE_LEASE_MS after the close, for the same reason.
 *
 * Leases are kept in memory only, at most MDS_LEASE_MAX; a restart ends them. One mutex, a
 * leaf but for the rpc calls that resume or answer parked requests, made after it is
 * dropped; a timer thread ends recalls at their deadline. Thread-safe.
 */
#ifndef NACRE_MDS_LEASE_H
#define NACRE_MDS_LEASE_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"

#define MDS_LEASE_MAX 65536

struct mds_leases;

/* Creates the (empty) table and its timer thread. 0, -ENOMEM or -EAGAIN. */
int mds_leases_create(struct mds *m, struct mds_leases **out);
/* Stops the timer thread (no eviction starts after it returns). NULL is fine. */
void mds_leases_stop(struct mds_leases *l);
/* Stops the thread and frees everything; parked requests are freed with the transport, not
 * answered. NULL is fine. */
void mds_leases_destroy(struct mds_leases *l);

/* MDS_LEASE (rpc handler part): GET or PUT for the caller's client id. */
int mds_lease_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

/* Before a request runs: MDS_LEASE_PASS, or RPC_DEFER when it names a directory another
 * client holds (the lease is recalled; the request is resumed once it was given back or its
 * holder evicted), or -ENOMEM. One atomic load while no lease is held. NULL l: PASS. */
enum { MDS_LEASE_PASS = 1 };
int mds_lease_admit(struct mds_leases *l, const struct rpc_request *req);

/* req made directory dir in parent: if its client holds parent's lease (not recalled), it
 * holds dir's too (it knows every name in it: none), with no GET. NULL l is fine. */
void mds_lease_made_dir(struct mds_leases *l, const struct rpc_request *req,
			const struct nacre_fid *parent, const struct nacre_fid *dir);

/* A connection closed: its parked requests are dropped, and the leases it took end
 * WIRE_LEASE_MS later if another client wants them. NULL l is fine. */
void mds_lease_close(struct mds_leases *l, uint64_t conn_id);
/* The owner unmounted cleanly (DISCONNECT) or was evicted for a lease it kept: its leases
 * end now and what waited for them runs. (A session evicted after its connection closed
 * loses them WIRE_LEASE_MS after the close.) NULL l is fine. */
void mds_lease_drop_owner(struct mds_leases *l, uint64_t owner);

struct mds_lease_stats {
	uint64_t granted, refused, recalled, returned, expired, evicted;
	uint64_t waited; /* requests that waited for a recall */
	uint64_t held;   /* leases now */
};
void mds_lease_stats(struct mds_leases *l, struct mds_lease_stats *out);

#endif
