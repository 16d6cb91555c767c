/* mds.h - the metadata server's shared context: one struct mds per process, handed to every
 * module. Its pointers are set at startup and not changed until shutdown, so reading them
 * needs no lock; each module protects its own state. */
#ifndef NACRE_MDS_MDS_H
#define NACRE_MDS_MDS_H

#include "common/cap.h"
#include "common/key.h"
#include "nacre/nacre_types.h"

struct mds_db;
struct mds_writer;
struct mds_targets;
struct mds_open_table;
struct mds_oss_pool;
struct mds_destroyer;
struct mds_hsm;
struct mds_locks;
struct mds_sessions;
struct mds_recovery;
struct mds_space;
struct mds_ost_wait;
struct mds_keys;
struct rpc_server;
struct mds_notify;
struct mds_nodemap;
struct mds_changelog;
struct mds_leases;

struct jobstats;

struct mds {
	struct mds_db *db;
	struct mds_writer *writer;
	struct mds_targets *targets;
	struct mds_open_table *open;
	struct mds_oss_pool *oss;          /* NULL in unit tests: no OSS is contacted */
	struct mds_destroyer *destroyer;   /* NULL in unit tests */
	struct mds_hsm *hsm;               /* HSM coordinator; NULL in unit tests */
	struct mds_locks *locks;           /* POSIX and flock locks (lock.h) */
	struct mds_sessions *sessions;     /* clients with state (session.h); NULL in unit tests */
	struct mds_recovery *recovery;     /* the window after a start (recovery.h); may be NULL */
	struct mds_space *space;           /* the MDT's reserve (space.h); NULL in unit tests */
	struct mds_ost_wait *ost_wait;     /* creates wait for the OSTs after a start
					    * (ost_wait.h); may be NULL */
	struct mds_keys *keys;             /* the key table (keys.h); NULL in unit tests */
	struct rpc_server *server;         /* ours, to close connections of revoked keys; may
					    * be NULL */
	struct mds_notify *notify;         /* permission-change callbacks (notify.h); NULL in
					    * unit tests */
	int sec_min;                       /* WIRE_SEC_*: --sec-min, for every peer */
	struct mds_nodemap *nodemap;       /* client rules (nodemap.h); NULL: nothing mapped */
	struct mds_changelog *changelog;   /* changelog.h; NULL in unit tests: none written */
	struct mds_leases *leases;         /* write-back leases (lease.h); NULL: none granted */
	struct jobstats *jobs;             /* job_stats (jobs.h); NULL: none kept */
	const char *data_dir;
	char addr[NACRE_ADDR_MAX + 1];     /* "host:port" we serve on, for the TARGETS reply */
	char fsname[NACRE_FSNAME_MAX + 1];
	struct cap_key capkey;             /* object capabilities (caps.h); derived from the
					    * cluster key at start */
	uint32_t cap_lifetime_s;           /* how long a capability is valid; 0 = default */
	uint32_t fid_grant_width;          /* FIDs per client sequence (fid_grant.h); 0 =
					    * default */
};

#endif
