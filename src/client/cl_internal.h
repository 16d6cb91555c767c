/* cl_internal.h - libnacre's private structures and the helpers its files share.
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
#include "common/key.h"
#include "nacre/nacre.h"
#include "proto/cursor.h"
#include "proto/rpc.h"

/* Largest OST read or write RPC by default (Lustre's 4 MiB bulk); fs->rpc_max is the
 * tunable (nacre_mount_opts.max_rpc_size). */
#define CL_RPC_MAX CL_RPC_SIZE_DEFAULT

/* One connection per OSS address, shared by every file and every OST that OSS serves.
 * Created lazily; never destroyed before umount (other threads may hold the pointer). */
struct cl_oss_conn {
	char addr[NACRE_ADDR_MAX + 1];
	struct rpc_conn *conn;
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
	char addr[NACRE_ADDR_MAX + 1];
	char fsname[NACRE_FSNAME_MAX + 1];
	char subdir[NACRE_PATH_MAX + 1];
	char client_name[NACRE_NAME_MAX + 1];
	struct nacre_key key;
	int timeout_ms;
	struct rpc_conn *mds;
	struct nacre_fid root;
	nacre_log_fn log_fn;
	void *log_arg;

	struct cl_oss_table oss;

	/* data path tunables, immutable after mount (see cl_data.h) */
	uint32_t rpc_max;         /* bytes per OST RPC */
	uint64_t dirty_max;       /* write-behind bytes per client; 0 = write-through */
	uint64_t file_dirty_max;  /* write-behind bytes per file */
	uint64_t ra_max;          /* readahead window limit; 0 = no readahead */
	struct cl_pool pool;      /* background RPCs; its own lock */
	uint64_t wgen[CL_WGEN_BUCKETS]; /* write generations by fid hash: atomics, no lock */

	uint64_t lock_client;       /* atomic: this mount's id in lock owners, 0 = not chosen yet */

	pthread_mutex_t files_lock; /* protects files and every nacre_file's next/prev */
	struct nacre_file *files;   /* open files, so a truncate can correct their sizes */
};

struct nacre_file {
	/* immutable after open */
	struct nacre_fs *fs;
	struct nacre_fid fid;
	struct nacre_cred cred;
	int flags;
	uint64_t handle;
	struct nacre_layout layout;

	pthread_mutex_t append_lock; /* serializes O_APPEND writes (size lookup + write) */
	pthread_mutex_t lock;        /* protects the fields below */
	struct nacre_attr attr;      /* as the MDS last reported it */
	uint64_t written_end;        /* highest end offset written through this handle */
	int wrote;                   /* wrote at all: the size must be reported */
	uint64_t write_seq;          /* bumped by every write */
	uint64_t published_seq;      /* write_seq whose mtime the MDS has: a later CLOSE must not
				      * carry an mtime again (it would undo a utimes in between) */
	struct nacre_time mtime;     /* time of the last write */
	int deferred_err;            /* first write error, reported again at close */
	pthread_cond_t io_cond;      /* with lock: a background RPC of this file completed */
	int jobs;                    /* lock: pool jobs (write-behind, readahead) outstanding */
	struct cl_wb wb;             /* lock: write-behind state (wb.c) */
	struct cl_ra ra;             /* lock: readahead state (ra.c) */

	struct nacre_file *next, *prev; /* fs->files, under fs->files_lock */
};

/* Log levels of nacre_log_fn (syslog values). */
enum { CL_LOG_ERR = 3, CL_LOG_WARN = 4, CL_LOG_INFO = 6, CL_LOG_DEBUG = 7 };

/* Sends a line to the fs's log sink if one is set; never prints. Thread-safe. */
void cl_log(const struct nacre_fs *fs, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* cr, or root (uid 0, gid 0, no groups) when cr is NULL. Returns a pointer to out or cr. */
const struct nacre_cred *cl_cred(const struct nacre_cred *cr, struct nacre_cred *out);

/* Sends the request encoded in req (body bytes [0, pos)) to the MDS and waits; the rpc layer
 * may resend it after a reconnect if the opcode table says it is idempotent. Returns 0
 * with *rep set (the caller frees it with rpc_msg_free), or a negative error (transport
 * error or the reply's status) with *rep NULL. Thread-safe. */
int cl_mds_call(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *req,
		struct rpc_msg **rep);
/* CREATE with WIRE_CREATE_OPEN: makes a regular file (O_EXCL of flags refuses an existing
 * name) and opens it in the same request. *handle_out is the new file's handle, or 0 when
 * the name existed and was not opened (then open it with OPEN). */
int cl_create_open(struct nacre_fs *fs, const struct nacre_cred *cr,
		   const struct nacre_fid *parent, const char *name, uint32_t mode, int flags,
		   const struct nacre_layout *layout, struct nacre_attr *out,
		   struct nacre_layout *layout_out, uint64_t *handle_out);
/* 0 if a decode consumed the whole body without error, else -EPROTO. */
int cl_decode_end(const struct wire_cursor *c);
/* Maps a transport failure (timeout, lost server) to -EIO for applications; other errors
 * (ENOSPC, EACCES...) pass through. */
int cl_io_errno(int rc);
/* 1 if rc means the server could not be reached (worth a target table refresh). */
int cl_is_transport_err(int rc);

/* Every registered target as the MDS lists it. *out is malloc'd (free() it), *count its
 * length. Returns 0 or a negative error. Thread-safe. */
int cl_targets_fetch(struct nacre_fs *fs, struct nacre_target **out, int *count);

/* ---- oss.c: the OST connection table ---- */
void cl_oss_init(struct cl_oss_table *t);
/* Destroys every connection. Only at umount, when no call is in flight. */
void cl_oss_fini(struct cl_oss_table *t);
/* Reloads the OST index -> address map from the MDS. 0 or a negative error. Thread-safe. */
int cl_oss_refresh(struct nacre_fs *fs);
/* The connection serving OST idx, created on first use; refreshes the table once if idx is
 * unknown. Returns 0 with *out borrowed until umount, or -NACRE_ENOTARGET. Thread-safe. */
int cl_oss_get(struct nacre_fs *fs, uint32_t idx, struct rpc_conn **out);
/* After a transport error on used for OST idx: refreshes the table (at most once a second)
 * and returns 1 if idx is now served elsewhere (worth a retry), else 0. Thread-safe. */
int cl_oss_moved(struct nacre_fs *fs, uint32_t idx, const struct rpc_conn *used);

/* ---- io.c ---- */
/* Tells the open files of fid on this fs that the MDS size is now size (after a truncate),
 * so that their written end no longer reports the old size. Thread-safe. */
void cl_files_set_size(struct nacre_fs *fs, const struct nacre_fid *fid, uint64_t size);
/* Marks the writes of every open handle of fid as having their mtime at the MDS already,
 * after an explicit mtime was set. Thread-safe. */
void cl_files_mtime_set(struct nacre_fs *fs, const struct nacre_fid *fid);

#endif
