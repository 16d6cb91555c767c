/* cl_internal.h - libnacre's two private structures: the mounted fs and the open file.
 * The functions of each client file are in its own header (mdc.h, oss.h, obj.h, files.h,
 * md.h; cl_data.h for the pool, write-behind and readahead).
 *
 * Lock order (see docs/threading.md): nacre_fs.files_lock, then nacre_file.append_lock,
 * then nacre_file.lock, then cl_pool.lock, then cl_oss_table.lock. RPC calls are never
 * made while holding files_lock, nacre_file.lock, cl_pool.lock or cl_oss_table.lock
 * (append_lock is held across the getattr + write of an O_APPEND write on purpose, to
 * serialize appends; a writer blocked on the client dirty bound may take files_lock under
 * it, and nothing takes append_lock under files_lock).
 */
#ifndef NACRE_CL_INTERNAL_H
#define NACRE_CL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "client/cl_data.h"
#include "client/fidseq.h"
#include "client/lease.h"
#include "client/wbq.h"
#include "common/key.h"
#include "nacre/nacre.h"
#include "proto/rpc.h"

/* One connection per OSS address, shared by every file and every OST that OSS serves.
 * Created lazily; never destroyed before umount (other threads may hold the pointer). */
struct cl_oss_conn {
	char addr[NACRE_ADDR_MAX + 1];
	struct rpc_conn *conn;
	struct nacre_fs *fs; /* for the connection's still_here */
};

/* Where one OST index is served. */
struct cl_ost {
	uint32_t idx;
	char addr[NACRE_ADDR_MAX + 1];
	struct cl_oss_conn *oc; /* NULL until first used */
};

struct cl_oss_table {
	pthread_mutex_t lock; /* protects every field below */
	struct cl_ost *osts;
	size_t nosts;
	struct cl_oss_conn **conns; /* owned; the pointers are stable */
	size_t nconns;
	size_t cap_conns;
	int64_t refreshed_ms; /* CLOCK_MONOTONIC time of the last refresh, 0 = never */
};

struct nacre_fs {
	/* immutable after mount */
	char addr[NACRE_ADDR_LIST_MAX]; /* the MDS ("host:port", failover partners after ',') */
	char fsname[NACRE_FSNAME_MAX + 1];
	char subdir[NACRE_PATH_MAX + 1];
	char client_name[NACRE_NAME_MAX + 1];
	int sec, sec_exact; /* wire flavour asked of every server (rpc_conn_conf) */
	struct nacre_key key;
	int timeout_ms;
	int recovery_timeout_ms;
	int unmounting;             /* atomic: calls wait for a missing server only timeout_ms */
	struct rpc_conn *mds;
	struct nacre_fid root;
	nacre_log_fn log_fn;
	void *log_arg;

	struct cl_oss_table oss;

	/* data path tunables, immutable after mount (see cl_data.h) but ra_max and ra_mb,
	 * which nacre_fs_tunable_set changes: atomics, read with cl_ra_max */
	uint32_t rpc_max;         /* bytes per OST RPC at most (set at mount: buffers and
				   * write-behind windows are sized for it) */
	uint32_t rpc_cap;         /* bytes per OST RPC now (osc.*.max_pages_per_rpc), <=
				   * rpc_max; atomic: read once per I/O */
	uint64_t dirty_max;       /* write-behind bytes per client; 0 = write-through */
	uint64_t file_dirty_max;  /* write-behind bytes per file */
	uint64_t ra_max;          /* atomic: readahead window limit; 0 = no readahead */
	uint64_t ra_mb;           /* atomic: the limit as given in MiB (ra_max is at least
				   * one RPC when not 0) */
	struct cl_pool pool;      /* background RPCs; its own lock */
	uint64_t wgen[CL_WGEN_BUCKETS]; /* write generations by fid hash (obj.c): atomics */

	uint64_t lock_client;       /* atomic: this mount's id in lock owners, 0 = not chosen yet */
	uint64_t client_id;         /* this mount's session with the servers (random, top bit
				     * set); immutable after mount */

	pthread_mutex_t files_lock; /* protects files, files_cond and every nacre_file's
				     * next/prev/pins */
	pthread_cond_t files_cond;  /* a pin was dropped */
	struct nacre_file *files;   /* open files (files.c), so a truncate can correct their sizes */
	uint64_t writers;           /* atomic: open files that wrote (nacre_file.wrote); with none,
				     * a read at the end of a file need not look at the others */

	/* The pinger: an idle mount asks the MDS every CL_PING_MS whether it is still there, so
	 * that after a restart it reconnects (and recovers) without waiting for work. */
	pthread_t pinger;
	int pinger_started;         /* immutable after mount */
	pthread_mutex_t ping_lock;  /* protects ping_stop */
	pthread_cond_t ping_cond;
	int ping_stop;

	pthread_mutex_t locks_lock; /* protects locks (a leaf) */
	struct cl_lock_rec *locks;  /* the lock requests that built what this mount holds, in
				     * order (lock.c), replayed to a restarted MDS */
	pthread_mutex_t waits_lock; /* protects lock_waits and the state of every
				     * nacre_lock_wait (lock_wait.c); a leaf */
	pthread_cond_t waits_cond;  /* with waits_lock: a LOCK_WAIT ended or a wait was
				     * canceled */
	int lock_waits;             /* waits_lock: LOCK_WAITs out at the MDS */

	/* Group lists registered with the MDS (groups.c). */
	pthread_mutex_t groups_lock;       /* protects groups and groups_clock; a leaf */
	struct cl_glist *groups;           /* CL_GROUPS_LISTS slots, NULL until the first */
	uint64_t groups_clock;

	/* Permission-change callbacks (notify.c): one thread keeps a NOTIFY_WAIT out. */
	pthread_t notify_thread;
	int notify_started;         /* set and cleared by the application's thread */
	pthread_mutex_t notify_lock;/* held while the callback runs; protects notify_stop */
	int notify_stop;            /* also read without the lock (atomic) */
	nacre_notify_fn notify_fn;  /* immutable while started */
	void *notify_arg;

	struct cl_fidseq fidseq;    /* FIDs for new inodes (fidseq.h); its own lock */
	struct cl_leases leases;    /* write-back leases on directories (lease.h); its own
				     * lock */
	struct cl_wbq wbq;          /* changes made under them, for the MDS (wbq.h) */
	struct cl_wbj *wbj;         /* their journal (wbj.h); NULL: none */
	/* called by cl_mds_call before each request (wbq.c sends what is queued); set at
	 * mount, immutable after */
	void (*before_mds)(struct nacre_fs *fs, uint16_t opcode);
};

struct cl_glist;

struct nacre_file {
	/* immutable after open */
	struct nacre_fs *fs;
	struct nacre_fid fid;
	struct nacre_cred cred;
	int flags;
	struct nacre_layout layout;

	pthread_mutex_t append_lock; /* serializes O_APPEND writes (size lookup + write) */
	pthread_mutex_t lock;        /* protects the fields below */
	uint64_t handle;             /* the MDS's; a new one after the MDS restarted */
	struct nacre_attr attr;      /* as the MDS last reported it */
	uint64_t written_end;        /* highest end offset written through this handle */
	uint64_t report_end;         /* highest end written since the MDS last accepted this
				      * handle's size (0: none): what CLOSE and SIZE_UPDATE
				      * report, so an end it gave already cannot undo another
				      * client's truncate since */
	int wrote;                   /* wrote at all: the size must be reported */
	uint64_t write_seq;          /* bumped by every write */
	uint64_t published_end;      /* the end offset the MDS last accepted from this handle */
	uint64_t published_seq;      /* write_seq whose mtime the MDS has: a later CLOSE must not
				      * carry an mtime again (it would undo a utimes in between) */
	struct nacre_time mtime;     /* time of the last write */
	int has_atime;               /* nacre_file_set_atime: CLOSE carries atime */
	struct nacre_time atime;
	uint64_t space_seq;          /* bumped by every write and fallocate: the objects' blocks
				      * may have changed */
	uint64_t measured_seq;       /* space_seq whose blocks the MDS has */
	uint64_t unmeasured;         /* bytes written since the MDS last got blocks from us */
	int dense;                   /* opened empty and written only from 0 onwards, each write
				      * where the last ended: no hole, so its blocks are its size
				      * and close need not measure them */
	int deferred_err;            /* first write error, reported again at close */
	pthread_cond_t io_cond;      /* with lock: a background RPC of this file completed */
	int jobs;                    /* lock: pool jobs (write-behind, readahead) outstanding */
	struct cl_wb wb;             /* lock: write-behind state (wb.c) */
	struct cl_ra ra;             /* lock: readahead state (ra.c) */

	struct nacre_file *next, *prev; /* fs->files (files.c), under fs->files_lock */
	int pins;                       /* files_lock: the MDS recovery uses it (files.c) */

	/* The object capability the MDS gave this handle (cap.c); OST requests carry it. */
	pthread_mutex_t cap_lock;       /* protects the fields below; a leaf */
	struct wire_cap cap;
	int has_cap;                    /* 0: none yet (fetched by the first I/O) */
	int cap_unsupported;            /* the MDS predates CAP_GET: send none */
	int64_t cap_renew_at;           /* CLOCK_REALTIME seconds: renew from then on */
};

/* nacre_fs_mount with a given session: client_id (0 = a new one) and the first xid (0 =
 * the usual). The write-back recovery (wbj_replay.c) takes up a dead process's session. */
int cl_fs_mount(const char *spec, const struct nacre_mount_opts *opts, uint64_t client_id,
		uint64_t first_xid, struct nacre_fs **out, char *err, size_t err_len);

/* The readahead window limit in bytes (0: off); it may change while mounted. */
static inline uint64_t cl_ra_max(struct nacre_fs *fs)
{
	return __atomic_load_n(&fs->ra_max, __ATOMIC_RELAXED);
}

#endif
