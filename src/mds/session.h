/* session.h - the clients the MDS holds state for: one session per client id (a mount's
 * random id, WIRE_FEAT_RECOVERY), across its connections and across MDS restarts
 * (docs/recovery.md).
 *
 * A session binds to the connection a request of it arrives on. It keeps what its
 * requests need for exactly-once execution: the xids being executed (a resend of one waits
 * for it), the handles its OPENs got (a resent OPEN gets the same one), the highest xid it
 * acknowledged (the reply cache below it is forgotten with its next change) and whether
 * its record is in the clients table (so that a restarted MDS expects it back). Open
 * handles and locks belong to the session, not to a connection: a session whose
 * connection broke keeps them until it is evicted, evict_ms later (or sooner by a clean
 * DISCONNECT).
 *
 * One mutex, a leaf except for the rpc calls that resume parked requests (which only take
 * the transport's queue locks). Thread-safe.
 */
#ifndef NACRE_MDS_SESSION_H
#define NACRE_MDS_SESSION_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"

struct mds_sessions;

#define MDS_EVICT_MS_DEFAULT 30000

/* An owner id for open handles and locks: the client id of a session, else the connection
 * (client ids have the top bit set, connection ids never do). */
uint64_t mds_owner_of(const struct rpc_request *req);
/* Whether an owner id is a session's, and that session's client id. */
int mds_owner_is_session(uint64_t owner);
uint64_t mds_owner_client_id(uint64_t owner);

/* Loads the sessions recorded in the clients table (the clients expected back after a
 * restart: see recovery.h). evict_ms 0 = MDS_EVICT_MS_DEFAULT. Starts the thread that
 * evicts sessions disconnected longer than that. *out owned by the caller. */
int mds_sessions_create(struct mds *m, int evict_ms, struct mds_sessions **out);
/* Stops the thread and frees everything. NULL is fine. */
void mds_sessions_destroy(struct mds_sessions *ss);

/* What the MDS holds of a session, for CONNECT: WIRE_SESSION_KNOWN or _NEW (recovery.c
 * turns an expected one into _RECOVER). */
uint32_t mds_session_state(struct mds_sessions *ss, uint64_t client_id);

/* The state a request of a session needs (see serve.c). */
struct mds_session_view {
	int persisted;       /* the session has its record in the clients table */
	uint64_t trim_below; /* a change may forget the replies below this xid (0: nothing) */
};

/* A request of client_id arrived on conn_id with ack_xid: binds the session (creating it
 * if new) to conn_id and returns its view. -ENOMEM. */
int mds_session_touch(struct mds_sessions *ss, uint64_t client_id, uint64_t conn_id,
		      const char *name, uint64_t ack_xid, struct mds_session_view *out);
/* After a committed change: the record is written, replies below trimmed are gone. */
void mds_session_committed(struct mds_sessions *ss, uint64_t client_id, int persisted,
			   uint64_t trimmed);
/* Writes the session's record if it has none yet (before its first open or lock, which
 * are state a restarted MDS must see it come back for). 0 or a negative errno. */
int mds_session_persist(struct mds_sessions *ss, uint64_t client_id);

/* Exactly-once bookkeeping of executing xids. begin returns 0, or 1 after parking d (the
 * same xid is executing: d is resumed once it ends). */
int mds_session_begin(struct mds_sessions *ss, uint64_t client_id, uint64_t xid,
		      struct rpc_deferred *d);
void mds_session_end(struct mds_sessions *ss, uint64_t client_id, uint64_t xid);

/* OPEN dedup: the handle a session's xid got (0 if none), and remembering it. */
uint64_t mds_session_open_handle(struct mds_sessions *ss, uint64_t client_id, uint64_t xid);
void mds_session_open_done(struct mds_sessions *ss, uint64_t client_id, uint64_t xid,
			   uint64_t handle);

/* The connection of a session closed: its eviction clock starts. */
void mds_session_disconnect(struct mds_sessions *ss, uint64_t conn_id);
/* Evicts the session still bound to a connection that closed (an HSM agent's: the
 * coordinator gave its actions to others, so the files it held open for them must not
 * stay busy until the eviction timeout). Nothing if it reconnected meanwhile. */
void mds_session_evict_conn(struct mds_sessions *ss, uint64_t conn_id, const char *why);
/* Evicts a session now (a clean DISCONNECT, or recovery giving up on it): drops its
 * handles and locks and its records. why is logged. 0 or a negative errno. */
int mds_session_evict(struct mds_sessions *ss, uint64_t client_id, const char *why);

/* A create is about to allocate OSTs: if the MDS itself did not run for a while, the OSTs
 * get their grace now (mds_targets_grace), not at the reaper's next tick. Cheap otherwise
 * (a clock read and an atomic load). NULL is fine. */
void mds_sessions_check_stall(struct mds_sessions *ss);
/* The sessions recorded at start (expected back), for recovery: calls fn for each. */
void mds_sessions_expected(struct mds_sessions *ss,
			   void (*fn)(void *arg, uint64_t client_id, const char *name), void *arg);
/* Sessions now (for metrics). */
uint64_t mds_sessions_count(struct mds_sessions *ss);

#endif
