/* nacre.h - libnacre, the nacre client library.
 *
 * A program (nacre-mount, the CLI, an MPI-IO layer, a benchmark) mounts a file system with
 * nacre_fs_mount() and then uses FID-based namespace calls and file handles. Every call
 * returns 0 (or a byte count) on success and a negative errno or NACRE_E* code on failure.
 * All calls are thread-safe unless noted: many threads may share one nacre_fs and issue
 * requests at once; they are pipelined on one connection per server.
 *
 * Credentials: every namespace call takes the caller's nacre_cred; the MDS checks POSIX
 * permissions with it. NULL means root (uid 0, gid 0).
 */
#ifndef NACRE_H
#define NACRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nacre_errno.h"
#include "nacre_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct nacre_fs;
struct nacre_file;

/* Log sink: libnacre never prints; it calls this (if set) with a level (LOG_ERR=3 ..
 * LOG_DEBUG=7, syslog values) and a formatted line without a trailing newline. */
typedef void (*nacre_log_fn)(int level, const char *line, void *arg);

struct nacre_mount_opts {
	const char *key_file;   /* cluster key file; NULL = $NACRE_KEY_FILE, else none */
	int timeout_ms;         /* per request while its server answers: a request without its
				 * reply after it is resent on a new connection; it also bounds
				 * each connection attempt; 0 = 30000 */
	int recovery_timeout_ms;/* how long calls wait for a server that does not answer (down,
				 * hung, restarting, failing over) before they fail with EIO;
				 * 0 = 300000 */
	int connect_timeout_ms; /* first contact with the MDS at mount; 0 = 10000 */
	const char *client_name;/* shown in server logs, matched by nodemaps; NULL =
				 * $NACRE_CLIENT_NAME, else the hostname */
	nacre_log_fn log_fn;
	void *log_arg;
	/* Data path tunables (0 = the default), as Lustre's osc/llite tunables. */
	unsigned max_rpc_size;  /* bytes per OST RPC: a multiple of 64 KiB up to 16 MiB;
				 * default 4 MiB (max_pages_per_rpc) */
	int max_rpcs_in_flight; /* background RPCs per OST; default 8 */
	int max_dirty_mb;       /* write-behind data per client in MiB (a file gets at most a
				 * quarter, capped at 64 MiB); default 256; -1 = off: every write
				 * reaches the OSTs before it returns */
	int readahead_max_mb;   /* readahead window limit per file in MiB; default 64; -1 = off */
	const char *sec;        /* wire security flavour, as Lustre's SSK: "null", "integrity"
				 * (every frame authenticated) or "privacy" (also encrypted);
				 * a server whose minimum for this client is higher refuses the
				 * mount, naming its rule. NULL = the server's minimum. */
};

/* Parses a mount spec: "host[:port]:/fsname[/subdir]" or Lustre's "host[@tcp][:port]:/fsname
 * [/subdir]", where the MDS may be given with its failover partners, joined by ','
 * ("mds1:9400,mds2:9400:/fs") or Lustre's way ("mds1@tcp:mds2@tcp:/fs"). Writes
 * "host:port" to addr (port defaults to NACRE_DEFAULT_PORT_MDS), several joined by ','
 * (NACRE_ADDR_LIST_MAX bytes hold them all), the fsname and the subdirectory ("" for none,
 * else starting with '/'). On error returns -EINVAL and writes a sentence saying what is
 * wrong to err (if err_len > 0). Thread-safe. */
int nacre_parse_spec(const char *spec, char *addr, size_t addr_len, char *fsname,
		     size_t fsname_len, char *subdir, size_t subdir_len, char *err, size_t err_len);

/* Connects to the MDS named by spec (see nacre_parse_spec), authenticates with the cluster
 * key and resolves the subdirectory. On success *out owns the connection; release it with
 * nacre_fs_umount(). On failure writes a message naming the server and the cause to err. */
int nacre_fs_mount(const char *spec, const struct nacre_mount_opts *opts, struct nacre_fs **out,
		   char *err, size_t err_len);
/* Closes every connection and frees fs. Open files must be closed first. NULL is fine. */
void nacre_fs_umount(struct nacre_fs *fs);
/* The mount is going away: from now on a call waits for a missing server only its
 * per-request timeout (not recovery_timeout), so that closing the files left open at
 * unmount does not hang on a dead MDS. Thread-safe. */
void nacre_fs_unmounting(struct nacre_fs *fs);

/* Permission-change callbacks. An application that caches attributes (nacre-mount: the
 * kernel's caches) is told by the MDS which FIDs another client changed the mode, owner,
 * group or ACL of, before that change is answered: fn(arg, fids, count, all) runs on a
 * thread of libnacre's for each batch (all: too many to list, drop everything), and the MDS
 * learns that the batch was handled when fn returned. fn must not block for long (the
 * other client waits) nor call nacre_fs_notify_stop. Returns 0, -EBUSY (started already)
 * or -EAGAIN. */
typedef void (*nacre_notify_fn)(void *arg, const struct nacre_fid *fids, uint32_t count,
				int all);
int nacre_fs_notify_start(struct nacre_fs *fs, nacre_notify_fn fn, void *arg);
/* Stops the callbacks: once it returns fn runs no more (it waits for a call that runs).
 * Tells the MDS, waiting at most half a second for it; the thread ends by itself and
 * nacre_fs_umount waits for it (up to 4 s when the MDS is gone). Also done by
 * nacre_fs_umount. NULL or not started is fine. */
void nacre_fs_notify_stop(struct nacre_fs *fs);

/* 1 if the MDS takes a caller's job id (nacre_cred.jobid) on the current connection, as
 * this release's does; an older one would refuse the whole request, so a cred sent to it
 * must carry none. Thread-safe. */
int nacre_fs_jobids(struct nacre_fs *fs);

/* Fills *out with a caller's credentials: uid, gid and n supplementary groups (any order,
 * up to NACRE_MAX_GROUPS). More than NACRE_CRED_GROUPS are registered with the MDS once
 * (a few calls the first time; remembered by the mount) and carried as a token. Returns 0,
 * -EINVAL (n too large), -ENOMEM or the MDS's error. Thread-safe. */
int nacre_groups_cred(struct nacre_fs *fs, uint32_t uid, uint32_t gid, const uint32_t *groups,
		      uint32_t n, struct nacre_cred *out);

/* Another client wrote fid (its writes are on the servers and its size at the MDS): this
 * fs's open handles of fid take the size the MDS has now, if larger, and drop the data they
 * read ahead. Done by nacre_lock_set after a grant. 0 or the getattr's error. Thread-safe. */
int nacre_fs_revalidate(struct nacre_fs *fs, const struct nacre_fid *fid);

/* FID of the mounted root (the subdirectory for a subdirectory mount). */
struct nacre_fid nacre_fs_root(const struct nacre_fs *fs);
const char *nacre_fs_name(const struct nacre_fs *fs);
/* This fs's session id with the servers (random, fixed while this process has it mounted;
 * a process that takes over with nacre-mount --upgrade has its own): the instance part of
 * its Lustre-style device names. */
uint64_t nacre_fs_client_id(const struct nacre_fs *fs);

/* Tunables that may change while mounted (lctl set_param on a Lustre client). */
enum {
	/* background RPCs per OST (osc.*.max_rpcs_in_flight): 1..NACRE_RPCS_IN_FLIGHT_MAX;
	 * per OST index, or ost -1 for the mount's default and every OST */
	NACRE_TUNE_RPCS_IN_FLIGHT = 1,
	/* readahead window limit per file in MiB (llite.*.max_read_ahead_mb), 0 = off,
	 * up to NACRE_READ_AHEAD_MB_MAX; ost is ignored. A limit below one RPC reads ahead one
	 * RPC (max_rpc_size); the value reads back as set. */
	NACRE_TUNE_READ_AHEAD_MB = 2,
	/* 1: new inodes take FIDs from sequences the MDS granted this mount (the default when
	 * the MDS grants them); 0: the MDS chooses every FID. ost is ignored. */
	NACRE_TUNE_FID_GRANT = 3,
	/* 1: metadata write-back (docs/writeback.md): this mount takes the lease of every
	 * directory it makes and answers lookups in it itself (needs nacre_fs_notify_start);
	 * 0 (the default): every lookup asks the MDS. ost is ignored. */
	NACRE_TUNE_WB = 4,
	/* milliseconds a change made under a write-back lease may wait before it is sent to
	 * the MDS with others (1..NACRE_WB_DELAY_MS_MAX; default 50). ost is ignored. */
	NACRE_TUNE_WB_DELAY_MS = 5,
	/* the mount's write-behind limit in MiB (osc.*.max_dirty_mb; nacre has one for the
	 * whole mount, whichever OST is named): 1..NACRE_DIRTY_MB_MAX while write-behind is on;
	 * a mount without it (-o max_dirty_mb=0) refuses (-EPERM). */
	NACRE_TUNE_MAX_DIRTY_MB = 6,
	/* 4 KiB pages per OST RPC (osc.*.max_pages_per_rpc; one for the whole mount): 1 up to
	 * the mount's largest RPC (-o max_rpc_size, default 4 MiB = 1024 pages), which is the
	 * most: the mount's buffers are sized for it. */
	NACRE_TUNE_MAX_PAGES_PER_RPC = 7,
};
#define NACRE_DIRTY_MB_MAX 65536
#define NACRE_WB_DELAY_MS_MAX 60000
#define NACRE_RPCS_IN_FLIGHT_MAX 256
#define NACRE_READ_AHEAD_MB_MAX 65536
/* A connection of this mount as lctl's import file shows it (a snapshot). */
struct nacre_import {
	char state[16];                    /* NEW, CONNECTING, REPLAY, FULL, DISCONN, CLOSED */
	char current[NACRE_ADDR_MAX + 1];  /* the address in use, or tried next */
	char addrs[NACRE_ADDR_LIST_MAX];   /* every address it may use, comma-separated */
	char server[NACRE_NAME_MAX + 1];   /* the server's name ("" before the first) */
	char connect_flags[512];           /* the features agreed, comma-separated */
	uint64_t connect_bits;             /* ... as the protocol's bits */
	uint64_t generation;               /* sockets so far */
	uint64_t last_committed;           /* the server's last commit it told us of */
	char sec[16];                      /* the wire security flavour: null, integrity... */
	int64_t heard_ms_ago;              /* since the server was last heard; -1 never */
};
/* The connection to the MDT (ost -1) or to OST index ost. 0, or -ENOENT (no such OST in
 * the registry). Thread-safe. */
int nacre_fs_import(struct nacre_fs *fs, int ost, struct nacre_import *out);

/* Reads a tunable into *val. Returns 0 or -EINVAL (unknown tunable). Thread-safe. */
int nacre_fs_tunable_get(struct nacre_fs *fs, int tunable, int ost, int64_t *val);
/* Changes a tunable; it applies to RPCs and reads from then on. Returns 0, -EINVAL (unknown
 * tunable, ost out of range) or -ERANGE (val out of the range above). Thread-safe. */
int nacre_fs_tunable_set(struct nacre_fs *fs, int tunable, int ost, int64_t val);

/* ---- the write-back journal (docs/writeback.md, "The journal") ---- */

/* How a change made under a write-back lease is kept until the MDS has it: not at all;
 * written to the journal before it is answered (a crash of the process loses nothing);
 * also fdatasynced (a power loss loses nothing). */
enum { NACRE_WB_JOURNAL_OFF = 0, NACRE_WB_JOURNAL_ASYNC = 1, NACRE_WB_JOURNAL_SYNC = 2 };

/* Journals fs's write-back changes in the directory dir (created, mode 0700; one mount
 * per directory: it is locked), recording spec and this session for a recovery. A journal
 * that still holds changes of an earlier mount is refused (-EEXIST): nacre_wb_recover it
 * first. Call before write-back is turned on; again is a no-op. 0 or -errno with a sentence
 * in err. */
int nacre_fs_wb_journal(struct nacre_fs *fs, const char *dir, int mode, const char *spec,
			char *err, size_t err_len);

/* This mount's write-back counters (docs/writeback.md, "Observing it"): totals since the
 * mount but the *_now ones. */
struct nacre_wb_stats {
	uint64_t leases_now;       /* directories held */
	uint64_t leases_granted;   /* taken: a GET granted, or leased along with a mkdir */
	uint64_t leases_refused;   /* a GET the MDS refused */
	uint64_t leases_recalled;  /* recalls received */
	uint64_t leases_returned;  /* given back (a recall, write-back off, full) */
	uint64_t lookups_answered; /* lookups answered from a lease */
	uint64_t changes_made;     /* namespace and attribute changes answered here */
	uint64_t queued_now;       /* changes queued or in a batch not yet answered */
	uint64_t changes_sent;     /* in batches the MDS answered */
	uint64_t changes_refused;  /* refused by the MDS, or lost with their lease */
	uint64_t batches;          /* BATCH requests */
	uint64_t flush_usec;       /* time in them */
	int journal_mode;          /* NACRE_WB_JOURNAL_* */
	uint64_t journal_bytes;    /* written to the journal */
	uint64_t journal_now;      /* changes in the journal not marked answered */
	uint64_t journal_errors;   /* appends that failed (those changes went to the MDS) */
};

/* Fills *out. 0, or -EINVAL for a NULL argument. Thread-safe. */
int nacre_fs_wb_stats(struct nacre_fs *fs, struct nacre_wb_stats *out);

/* What a recovery did. */
struct nacre_wb_report {
	uint64_t changes;    /* found in the journal, not yet answered by the MDS */
	uint64_t applied;    /* made now (or found made: the MDS had them) */
	uint64_t conflicts;  /* refused: logged with their path, kept in conflicts_file */
	uint64_t unreadable; /* bytes of a torn or corrupt tail: reported, never applied */
	char conflicts_file[NACRE_PATH_MAX]; /* "" when there was no conflict */
};

/* Sends the changes a journal directory (nacre_fs_wb_journal) holds to the MDS its spec
 * names, in order, as the process that wrote them would have, then empties it. A change
 * that no longer fits the namespace (its name was taken, its directory removed) is logged
 * (opts->log_fn) and kept, readable, under dir/conflicts/. A journal with nothing to send
 * is fine (an empty report). 0, or -errno with a sentence in err: -EBUSY (a live mount
 * uses it), -ENOENT (no journal there), the MDS's or the disk's error. */
int nacre_wb_recover(const char *dir, const struct nacre_mount_opts *opts,
		     struct nacre_wb_report *out, char *err, size_t err_len);

/* Formats fid as "[0x200000400:0x1:0x0]" into buf (NACRE_FID_STR_MAX bytes); returns buf. */
char *nacre_fid_format(const struct nacre_fid *fid, char *buf, size_t len);
/* Parses "[0x..:0x..:0x..]" (brackets optional). Returns 0 or -EINVAL. */
int nacre_fid_parse(const char *s, struct nacre_fid *fid);
int nacre_fid_eq(const struct nacre_fid *a, const struct nacre_fid *b);

/* ---- namespace (FID based) ---- */
int nacre_lookup(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		 const char *name, struct nacre_attr *out);
int nacre_getattr(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		  struct nacre_attr *out);
/* A size change truncates or extends the file (the MDS punches the objects). */
int nacre_setattr(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		  const struct nacre_setattr *sa, struct nacre_attr *out);
/* Creates a regular file (layout NULL = inherit). flags: O_EXCL honoured. */
int nacre_create(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		 const char *name, uint32_t mode, uint32_t flags, const struct nacre_layout *layout,
		 struct nacre_attr *out);
int nacre_mkdir(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		const char *name, uint32_t mode, struct nacre_attr *out);
int nacre_mknod(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		const char *name, uint32_t mode, uint32_t rdev, struct nacre_attr *out);
int nacre_symlink(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		  const char *name, const char *target, struct nacre_attr *out);
/* Writes the NUL-terminated target into buf (len >= NACRE_PATH_MAX + 1 is always enough). */
int nacre_readlink(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   char *buf, size_t len);
int nacre_unlink(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		 const char *name);
int nacre_rmdir(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *parent,
		const char *name);
/* flags: 0, or RENAME_NOREPLACE / RENAME_EXCHANGE values from <linux/fs.h> (1, 2). */
int nacre_rename(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *sparent,
		 const char *sname, const struct nacre_fid *dparent, const char *dname,
		 uint32_t flags);
int nacre_link(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
	       const struct nacre_fid *newparent, const char *newname, struct nacre_attr *out);

/* Reads up to max entries after cookie (0 = from the start). Returns the number of entries
 * written to ents (0 with *eof = 1 at the end). "." and ".." are not returned. */
int nacre_readdir(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *dir,
		  uint64_t cookie, struct nacre_dirent *ents, int max, int *eof);
/* nacre_readdir with each entry's attributes in attrs[i] (as nacre_getattr gives them), in
 * the same request: a listing with attributes (ls -l, os.scandir + stat) costs one MDS
 * request per page, not one per entry. attrs[i].mode is 0 for an entry that came without
 * (the caller may read the directory but not search it, or an MDS that predates it). */
int nacre_readdir_plus(struct nacre_fs *fs, const struct nacre_cred *cr,
		       const struct nacre_fid *dir, uint64_t cookie, struct nacre_dirent *ents,
		       struct nacre_attr *attrs, int max, int *eof);

/* xattrs. get/list return the value length; with size 0 they only return the length. */
int nacre_getxattr(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   const char *name, void *value, size_t size);
/* flags: 0, XATTR_CREATE (1) or XATTR_REPLACE (2). */
int nacre_setxattr(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   const char *name, const void *value, size_t size, int flags);
/* Names NUL-separated, as listxattr(2). */
int nacre_listxattr(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		    char *list, size_t size);
int nacre_removexattr(struct nacre_fs *fs, const struct nacre_cred *cr,
		      const struct nacre_fid *fid, const char *name);

/* Layout of a file, or the default layout of a directory (-ENODATA if it has none). */
int nacre_layout_get(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		     struct nacre_layout *out);
/* On a directory: sets its default. On a regular file: allowed only while it holds no data
 * (size 0); the MDS allocates OSTs and bumps the generation. Writes the result to out. */
int nacre_layout_set(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		     const struct nacre_layout *layout, struct nacre_layout *out);

/* Makes every namespace change committed so far durable on the MDS's disk (fsyncdir; the
 * MDS otherwise flushes within a second). fid names the directory or file asking. */
int nacre_sync_md(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid);

/* Sum over all OSTs (space) and the MDT (inodes). */
int nacre_statfs(struct nacre_fs *fs, struct nacre_statfs *out);
/* Every registered target, MDT first, then OSTs by index. Returns the count written (at most
 * max), or a negative error. */
int nacre_targets(struct nacre_fs *fs, struct nacre_target *out, int max);
/* Path of fid relative to the file system root, "/" separated, starting with '/'. */
int nacre_fid2path(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   char *buf, size_t len);
/* The hard links of fid in link order (the order they were made; a renamed link comes last,
 * as Lustre's link EA lists them): fn(arg, parent, name) for each link in a directory the
 * caller may search (and, on a fileset mount, inside the fileset). fn returns nonzero to
 * stop. Returns 0; -ENOENT when fid has no link (unlinked, or the root), -EACCES when it has
 * links but the caller may see none; other errors as nacre_fid2path. */
int nacre_links(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		int (*fn)(void *arg, const struct nacre_fid *parent, const char *name),
		void *arg);
/* Resolves a path relative to the mount root ("/a/b" or "a/b"), following no symlinks. */
int nacre_resolve(struct nacre_fs *fs, const struct nacre_cred *cr, const char *path,
		  struct nacre_attr *out);

/* ---- administration ---- */

/* The MDS's recovery state. Asked on a connection of its own (without this mount's
 * session), so that it answers at once even while this mount's own requests wait for the
 * MDS's recovery to end. Returns 0, or a negative error (the MDS cannot be reached within
 * the mount's timeout: -ECONNREFUSED, -ETIMEDOUT...). Thread-safe. */
int nacre_recovery_status(struct nacre_fs *fs, struct nacre_recovery_status *out);

/* 1 while this mount replays its requests to a restarted MDS: until the MDS's recovery
 * window ends, every call to it waits. Thread-safe. */
int nacre_mds_recovering(struct nacre_fs *fs);

/* Arms or disarms fault points (docs/recovery.md) in the server at addr ("host:port", or
 * failover addresses joined by ','), any nacre server (MDS or OSS) of file system fsname,
 * on a connection of its own: no mount is needed. spec is the fault point syntax
 * ("POINT=MODE[,op=OPCODE][,ms=N][,err=ERRNO][,action=crash|error]", several joined by
 * ';', "all=off"); "" only reads. key_file is the cluster key (NULL = $NACRE_KEY_FILE).
 * On success writes the points armed afterwards, in the same syntax ("" when none), to
 * armed and returns 0. On failure returns a negative error with a sentence in err:
 * -EINVAL (the server's words naming the bad part of spec), -EPERM (the server was not
 * started with --allow-fault-injection), or why the server could not be reached.
 * Thread-safe. */
int nacre_fault_set(const char *addr, const char *fsname, const char *key_file,
		    const char *spec, char *armed, size_t armed_len, char *err, size_t err_len);

/* ---- client keys (docs/security.md, "Keys and roles") ----
 * Admin calls to the MDS at addr serving fsname, on a connection of their own, proving the
 * key in key_file (NULL: $NACRE_KEY_FILE): the cluster key, or an admin key for revoke and
 * list. On failure they return a negative error with a sentence in err. Thread-safe. */
struct nacre_key_info {
	char name[65];
	int admin;        /* 1: an admin key, 0: a client key */
	uint64_t gen;     /* the current generation */
	int revoked;
};
/* Issues a new generation of the client (admin = 0) or admin key name and writes its key
 * file to out_file (mode 0600; never over an existing file: -EEXIST). Needs the cluster key
 * (the key is derived from it here; no key crosses the network). *gen (may be NULL) gets
 * the generation. */
int nacre_key_issue(const char *addr, const char *fsname, const char *key_file,
		    const char *name, int admin, const char *out_file, uint64_t *gen, char *err,
		    size_t err_len);
/* Revokes name: every server closes its connections and refuses it from now on. -ENOENT
 * if name was never issued. */
int nacre_key_revoke(const char *addr, const char *fsname, const char *key_file,
		     const char *name, char *err, size_t err_len);
/* Copies up to max entries of the MDS's key table to out; returns how many there are. */
int nacre_key_list(const char *addr, const char *fsname, const char *key_file,
		   struct nacre_key_info *out, int max, char *err, size_t err_len);
/* Nodemap administration (docs/security.md "Nodemaps") on a connection of its own to the
 * MDS at addr of fsname, as client "nacre-admin". cmd: NACRE_NODEMAP_ADD (name, arg1 =
 * ranges "CIDR[,CIDR]", arg2 = client names "NAME[,NAME]"), _DEL (name), _MODIFY (name,
 * arg1 = property, arg2 = value), _LIST, _TEST (arg1 = address, arg2 = client name; either
 * may be ""). Unused arguments may be NULL. key_file as nacre_fault_set. On success returns
 * 0 and, for LIST and TEST, the output in *text (heap, the caller frees; may be NULL). On
 * failure returns a negative error with the MDS's sentence (bad CIDR, unknown property,
 * rule not found, not an admin client) or why it could not be reached in err.
 * Thread-safe. */
enum {
	NACRE_NODEMAP_ADD = 1,
	NACRE_NODEMAP_DEL = 2,
	NACRE_NODEMAP_MODIFY = 3,
	NACRE_NODEMAP_LIST = 4,
	NACRE_NODEMAP_TEST = 5,
};
int nacre_nodemap(const char *addr, const char *fsname, const char *key_file, int cmd,
		  const char *name, const char *arg1, const char *arg2, char **text, char *err,
		  size_t err_len);

/* ---- changelogs (docs/changelog.md) ----
 * Admin calls to the MDS at addr serving fsname, each on a connection of its own, proving
 * the key in key_file (NULL: $NACRE_KEY_FILE): the cluster key or an admin key. On failure
 * they return a negative error with a sentence in err. Thread-safe. */
struct nacre_changelog_info {
	uint64_t mask;   /* bit per NACRE_CL_* type written */
	uint32_t xflags; /* NACRE_CLFE_UIDGID | NACRE_CLFE_XATTR: extras written */
	uint32_t nusers; /* registered users */
	uint64_t first;  /* lowest index held (0: none) */
	uint64_t last;   /* last index handed out (0: none yet) */
};
/* Registers a user: its id ("cl1", ...) into user (NACRE_CL_USER_MAX + 1 bytes). Records
 * are written from now on, and kept until every user cleared them. */
int nacre_changelog_register(const char *addr, const char *fsname, const char *key_file,
			     char *user, size_t user_len, char *err, size_t err_len);
/* Deregisters user; -ENOENT if there is none. What only it still held is freed. */
int nacre_changelog_deregister(const char *addr, const char *fsname, const char *key_file,
			       const char *user, char *err, size_t err_len);
/* user is done with every record up to endrec (0: all current ones); records every user
 * cleared are freed. -ENOENT: no such user; -EINVAL: endrec is past the last record. */
int nacre_changelog_clear(const char *addr, const char *fsname, const char *key_file,
			  const char *user, uint64_t endrec, char *err, size_t err_len);
/* Reads, and with set_mask / set_xflags first sets, the mask and extras in *info. */
int nacre_changelog_mask(const char *addr, const char *fsname, const char *key_file,
			 struct nacre_changelog_info *info, int set_mask, int set_xflags,
			 char *err, size_t err_len);
/* One page of records with start <= index <= end (end 0: no end) in index order into out
 * (at most max, at least one if there is any); returns how many. *eof (may be NULL) is 1
 * when no record past them was there; *info (may be NULL) gets the state. A caller that
 * follows asks again from the last index + 1. */
int nacre_changelog_read(const char *addr, const char *fsname, const char *key_file,
			 uint64_t start, uint64_t end, struct nacre_changelog_rec *out, int max,
			 struct nacre_changelog_info *info, int *eof, char *err, size_t err_len);

/* ---- file I/O ---- */
/* Opens fid with open(2) flags (O_ACCMODE, O_TRUNC, O_APPEND honoured; O_CREAT is not:
 * create first). *out is owned by the caller until nacre_close(). */
int nacre_open(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
	       int flags, struct nacre_file **out);
/* open(O_CREAT) in one round trip to the MDS: creates name in parent as nacre_create does
 * (O_EXCL of flags refuses an existing name) and opens the new file with flags, which the
 * creator may do whatever mode it gave. An existing name (no O_EXCL) is opened with the
 * usual checks. attr_out (may be NULL) gets the file's attributes. */
int nacre_create_open(struct nacre_fs *fs, const struct nacre_cred *cr,
		      const struct nacre_fid *parent, const char *name, uint32_t mode, int flags,
		      const struct nacre_layout *layout, struct nacre_attr *attr_out,
		      struct nacre_file **out);
/* Reads up to len bytes at off. Returns bytes read (short only at end of file). Stripes are
 * read from their OSTs in parallel; a sequential stream is read ahead in the background and
 * served from memory. Sees every write made through this fs, buffered or not. Safe from
 * many threads on one file. */
ssize_t nacre_pread(struct nacre_file *f, void *buf, size_t len, uint64_t off);
/* Writes len bytes at off (with O_APPEND, at the end: off is ignored). Returns len or an
 * error. With write-behind (the default) the data is copied and sent in the background in
 * large RPCs; an error of a background write is returned by the next write on f and by
 * nacre_flush, nacre_fsync and nacre_close. Stripes are written in parallel. */
ssize_t nacre_pwrite(struct nacre_file *f, const void *buf, size_t len, uint64_t off);
/* Makes written data durable on the OSTs and the size known to the MDS. */
int nacre_fsync(struct nacre_file *f, int datasync);
/* Sends this handle's buffered writes to the OSTs and waits for them, then publishes the
 * size and mtime it wrote to the MDS, so that another client's open sees both
 * (close-to-open), without forcing data to disk. Returns a deferred write
 * error if there is one. */
int nacre_flush(struct nacre_file *f);
/* Flushes size/mtime to the MDS and frees f. Returns the first deferred error, if any. */
int nacre_close(struct nacre_file *f);
/* fallocate(2) of [off, off + len) with Linux's mode bits, as Lustre 2.16 takes them: 0
 * allocates (the size grows to off + len if smaller), FALLOC_FL_KEEP_SIZE allocates without
 * changing the size, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE frees the range (it reads
 * as zeros), FALLOC_FL_ZERO_RANGE zeroes it (with or without KEEP_SIZE). Each object gets
 * its share in parallel; then the size and the objects' blocks go to the MDS. Returns 0,
 * -EOPNOTSUPP (another mode, an OSS or disk file system without fallocate), -EINVAL (len
 * 0), -EFBIG, -EBADF (read-only handle), -ENOSPC, -EIO. Safe from many threads. */
int nacre_fallocate(struct nacre_file *f, int mode, uint64_t off, uint64_t len);
/* lseek(2)'s SEEK_DATA and SEEK_HOLE (whence): *out is the first offset >= off that holds
 * data, or that is in a hole (the end of the file is one), over every stripe. Buffered
 * writes of any handle of this fs count as data, and the size they made. Returns 0, -ENXIO
 * (off at or past the end; SEEK_DATA: no data after off), -EINVAL, or an error of the MDS
 * or an OSS. An OSS that predates it makes the whole file data (Linux's generic answer).
 * Safe from many threads. */
int nacre_seek_data(struct nacre_file *f, int whence, uint64_t off, uint64_t *out);
/* The file's attributes as this client knows them (size includes its own unflushed writes;
 * blocks counts them too, up to the size). */
int nacre_file_attr(struct nacre_file *f, struct nacre_attr *out);
/* The application read f at *atime: its close sets the file's atime to that (never back,
 * and without touching ctime); NULL: forget it (a utimes since). 0, or -EOPNOTSUPP when the
 * MDS predates it (then reads leave atime alone). Thread-safe. */
int nacre_file_set_atime(struct nacre_file *f, const struct nacre_time *atime);
/* The highest end offset written through f (0 if none). */
uint64_t nacre_file_written_size(const struct nacre_file *f);
/* The caller learnt from the MDS (a getattr, a lookup) that f's file is size bytes long:
 * reads through f reach that far from now on, and if it is more than f knew, f drops what it
 * read ahead (another client wrote). Without it, a handle knows the size of its OPEN and its
 * own writes (and those of the file's other handles on this fs). Never shrinks. Thread-safe. */
void nacre_file_size_seen(struct nacre_file *f, uint64_t size);
const struct nacre_layout *nacre_file_layout(const struct nacre_file *f);

/* ---- HSM (hierarchical storage: archive, release, restore) ----
 * Opening (or truncating) a released file restores it transparently: nacre_open and
 * nacre_setattr wait while the MDS reports the restore in progress, up to the mount's
 * timeout_ms, then fail with -ETIMEDOUT. */

/* A user request (NACRE_HUA_ARCHIVE, _RESTORE, _RELEASE, _REMOVE, _CANCEL) for n files at
 * once (any n: sent in batches). archive_id 0 = the file's, else the MDS default. rcs[i]
 * gets file i's result (0, -EPERM: not allowed in its state or by its owner, -EBUSY: open or
 * another action runs, -EINVAL: not a regular file...). Returns 0 when every file was
 * handled (see rcs), or the error that stopped the request. */
int nacre_hsm_request(struct nacre_fs *fs, const struct nacre_cred *cr, uint32_t action,
		      uint32_t archive_id, const struct nacre_fid *fids, int n, int *rcs);
/* HSM state bits (NACRE_HS_*) and archive id of a file. */
int nacre_hsm_state_get(struct nacre_fs *fs, const struct nacre_cred *cr,
			const struct nacre_fid *fid, uint32_t *state, uint32_t *archive_id);
/* Sets and clears state bits (users: only NORELEASE, NOARCHIVE, DIRTY on their files; root:
 * any but RELEASED); archive_id 0 keeps it. The new state is written to state/archive_id
 * (either may be NULL). */
int nacre_hsm_state_set(struct nacre_fs *fs, const struct nacre_cred *cr,
			const struct nacre_fid *fid, uint32_t set, uint32_t clear,
			uint32_t archive_id, uint32_t *state, uint32_t *archive_id_out);
/* The action queued or running on a file: 1 with *out filled, 0 if none. */
int nacre_hsm_action_get(struct nacre_fs *fs, const struct nacre_cred *cr,
			 const struct nacre_fid *fid, struct nacre_hsm_action *out);
/* The coordinator queue: up to max actions with a cookie above after (0 = from the start).
 * Returns the count; *eof is 1 when nothing follows. */
int nacre_hsm_list(struct nacre_fs *fs, const struct nacre_cred *cr, uint64_t after,
		   struct nacre_hsm_action *out, int max, int *eof);
/* ---- find: a scan of the namespace under a directory, evaluated by the MDS, in pages ----
 * (`nacre find`; docs/protocol.md, "Find"). A scan is a loop: zero a nacre_find_req, set its
 * version and predicates, ask for a page, use its entries, copy page->next into req->cursor
 * and ask again until page->eof. The MDS keeps nothing between pages: stop at any time.
 *
 * Growth: the request carries the NACRE_FIND_VERSION the caller was built with. A later
 * version may append fields to nacre_find_req and nacre_find_entry (never reorder them);
 * the library reads and fills only those of the version given, so an older program keeps
 * working, and a version the library does not know is refused (-EINVAL). The page itself
 * is allocated by the library, which can grow its fields freely. */
#define NACRE_FIND_VERSION 2 /* 2: -empty, -links, --blocks, --projid, --btime, -newerXY,
			      * -o */
#define NACRE_FIND_GLOB_MAX 1024u /* bytes of a name pattern */
#define NACRE_FIND_OSTS_MAX 256u  /* OST indices in one request */
#define NACRE_FIND_POOL_MAX 15u   /* bytes of a pool name */
/* The predicates: nacre_find_req.preds has a bit per predicate present, .neg a bit per
 * predicate negated; an entry is listed when every predicate present holds. */
enum {
	NACRE_FINDP_NAME = 1u << 0,           /* the name matches the glob name */
	NACRE_FINDP_TYPE = 1u << 1,           /* types has bit 1 << (mode's S_IFMT bits >> 12) */
	NACRE_FINDP_SIZE = 1u << 2,           /* size compares (bytes) */
	NACRE_FINDP_ATIME = 1u << 3,          /* now - atime compares (seconds) */
	NACRE_FINDP_MTIME = 1u << 4,          /* now - mtime compares */
	NACRE_FINDP_CTIME = 1u << 5,          /* now - ctime compares */
	NACRE_FINDP_NEWER = 1u << 6,          /* mtime is after newer */
	NACRE_FINDP_UID = 1u << 7,            /* the owner is uid */
	NACRE_FINDP_GID = 1u << 8,            /* the group is gid */
	NACRE_FINDP_PERM = 1u << 9,           /* the mode bits match perm as perm_kind says */
	NACRE_FINDP_STRIPE_COUNT = 1u << 10,  /* stripe_count compares */
	NACRE_FINDP_STRIPE_SIZE = 1u << 11,   /* stripe_size compares (bytes) */
	NACRE_FINDP_OST = 1u << 12,           /* a stripe is on one of osts */
	NACRE_FINDP_POOL = 1u << 13,          /* the pool is pool (nacre has none: "" only) */
	NACRE_FINDP_LAYOUT = 1u << 14,        /* the layout is one of layouts */
	NACRE_FINDP_HSM = 1u << 15,           /* every NACRE_HS_* bit of hsm is set */
	NACRE_FINDP_FID = 1u << 16,           /* the FID is fid */
	NACRE_FINDP_MINDEPTH = 1u << 17,      /* depth >= mindepth; not negatable */
	NACRE_FINDP_MAXDEPTH = 1u << 18,      /* depth <= maxdepth; not negatable */
	/* since version 2 */
	NACRE_FINDP_EMPTY = 1u << 19,         /* a regular file of size 0 or a directory
					       * without entries */
	NACRE_FINDP_LINKS = 1u << 20,         /* links (units of 1) compares with nlink */
	NACRE_FINDP_BLOCKS = 1u << 21,        /* blocks compares (bytes: 512 x st_blocks) */
	NACRE_FINDP_PROJID = 1u << 22,        /* the project id is projid */
	NACRE_FINDP_NEWER_XY = 1u << 23,      /* every newer_xy[i] holds; not negatable as a
					       * whole (each item has its own neg) */
	NACRE_FINDP_BTIME = 1u << 24,         /* now - birth time compares (an inode made by
					       * an MDS that kept none: its ctime) */
};
/* -newerXY's X: which time of the entry is compared with the reference */
enum {
	NACRE_FIND_TIME_ATIME = 0,
	NACRE_FIND_TIME_MTIME = 1,
	NACRE_FIND_TIME_CTIME = 2,
	NACRE_FIND_TIME_BTIME = 3,
};
#define NACRE_FIND_NEWER_MAX 4u /* -newerXY tests in one request */
/* An expression (find's -o, ! and parentheses; since version 2): leaves, each a request of
 * which only the predicates are read (preds, neg and their values; no depth), and a
 * postfix program over them: a byte below NACRE_FIND_OP_AND pushes whether that leaf holds,
 * AND and OR pop two and push one, NOT negates the top; it must end with one value. */
#define NACRE_FIND_LEAVES_MAX 16u
#define NACRE_FIND_OPS_MAX 64u
enum { NACRE_FIND_OP_AND = 0x80, NACRE_FIND_OP_OR = 0x81, NACRE_FIND_OP_NOT = 0x82 };
/* perm_kind: the mode is perm, has all of its bits, or any of them (find -perm M, -M, /M) */
enum { NACRE_FIND_PERM_EXACT = 0, NACRE_FIND_PERM_ALL = 1, NACRE_FIND_PERM_ANY = 2 };
/* layouts: bits of the layout kinds to match */
enum {
	NACRE_FIND_LAYOUT_RAID0 = 1u << 0,
	NACRE_FIND_LAYOUT_RELEASED = 1u << 1,
	NACRE_FIND_LAYOUT_MDT = 1u << 2, /* data on MDT: nacre has none, so nothing matches */
};
/* A number compared: the entry's value counted in units of unit (>= 1 when used), rounded
 * up when up (sizes; ages in minutes, as GNU find) else down (ages in days), against value:
 * sign -1 less than, 0 equal, 1 more than. */
struct nacre_find_cmp {
	int8_t sign;
	uint8_t up;
	uint64_t value;
	uint64_t unit;
};
/* Where a page starts: all zero for the first page, then the previous page's next. Copy it
 * whole; its content is the MDS's (the path of the entry to resume at). */
struct nacre_find_cursor {
	uint8_t state;
	char path[NACRE_PATH_MAX + 1];
};
/* Zero it, then set version and what is used; preds says which predicate fields count. */
struct nacre_find_req {
	uint32_t version;   /* NACRE_FIND_VERSION */
	uint32_t max_bytes; /* of entries in a page, as the MDS encodes them; 0 = the most */
	struct nacre_find_cursor cursor;
	uint32_t preds, neg; /* NACRE_FINDP_* */
	struct nacre_time now; /* the reference of the ages: the caller's clock */
	/* the starting point's name as the caller typed it (name is tested on it at depth 0);
	 * start_entry 1: the starting point is the entry start_name of the directory (a file
	 * or a symlink), not the directory */
	char start_name[NACRE_NAME_MAX + 1];
	uint8_t start_entry;
	uint32_t mindepth, maxdepth;
	char name[NACRE_FIND_GLOB_MAX + 1];
	uint8_t name_icase;
	uint32_t types;
	struct nacre_find_cmp size, atime, mtime, ctime;
	struct nacre_time newer;
	uint32_t uid, gid;
	uint8_t perm_kind; /* NACRE_FIND_PERM_* */
	uint32_t perm;     /* 0..07777 */
	struct nacre_find_cmp stripe_count, stripe_size;
	uint32_t nosts; /* <= NACRE_FIND_OSTS_MAX */
	uint32_t osts[NACRE_FIND_OSTS_MAX];
	char pool[NACRE_FIND_POOL_MAX + 1];
	uint32_t layouts; /* NACRE_FIND_LAYOUT_* */
	uint32_t hsm;     /* NACRE_HS_* */
	struct nacre_fid fid;
	/* since version 2 */
	struct nacre_find_cmp links, blocks, btime;
	uint32_t projid;
	uint32_t nnewer; /* <= NACRE_FIND_NEWER_MAX */
	struct nacre_find_newer {
		uint8_t which; /* NACRE_FIND_TIME_* */
		uint8_t neg;   /* 1: the entry's time is not after t */
		struct nacre_time t;
	} newer_xy[NACRE_FIND_NEWER_MAX];
	/* an expression: with nleaves > 0 an entry is listed when the predicates above and
	 * the program both hold */
	uint32_t nleaves; /* <= NACRE_FIND_LEAVES_MAX */
	const struct nacre_find_req *leaves;
	uint32_t nops; /* 1..NACRE_FIND_OPS_MAX with leaves */
	uint8_t ops[NACRE_FIND_OPS_MAX];
};
/* One entry of a page: a match, or (err < 0) the report of a directory that could not be
 * scanned (-EACCES: not entered; a match is also listed, as its own entry). */
struct nacre_find_entry {
	const char *path;   /* relative to the starting point; "" for the starting point */
	const char *target; /* a symlink's target, else "" */
	int32_t err;
	int has_layout;
	struct nacre_attr attr;
	struct nacre_layout layout; /* when has_layout */
};
struct nacre_find_page {
	uint32_t count;
	int eof; /* 1: the scan is over; else it goes on from next */
	struct nacre_find_cursor next;
	struct nacre_find_entry *entries; /* count of them, in the scan's order */
};
/* One page of the scan under the directory dir with req's predicates and cursor, with cr's
 * credentials. Returns 0 with *page set (the library's memory, strings included, until
 * nacre_find_page_free), or a negative errno: -EINVAL for a request that is not valid (an
 * unknown version, bit or kind, a comparison without a unit...). Thread-safe. */
int nacre_find_page(struct nacre_fs *fs, const struct nacre_cred *cr,
		    const struct nacre_fid *dir, const struct nacre_find_req *req,
		    struct nacre_find_page **page);
/* The same through a nacre mount, for a program without a nacre_fs: fd is an open
 * directory of the mount (its NACRE_IOC_FIND ioctl, with the caller's credentials), and
 * max_bytes is capped to fit the ioctl. Thread-safe. Returns 0 with *page set, or a negative errno:
 * -ENOTTY when fd is not on a nacre mount, the mount's error, -EMSGSIZE when req does not
 * fit in the ioctl, -EBADMSG when the reply is malformed (then *page may hold the entries
 * before the bad one: free it too). */
int nacre_find_ioctl(int fd, const struct nacre_find_req *req, struct nacre_find_page **page);
/* NULL is fine. */
void nacre_find_page_free(struct nacre_find_page *page);
/* The mount's half of NACRE_IOC_FIND (nacre_ioctl.h): in is the ioctl's request body (a
 * find_req of the wire protocol) whose credentials and FID this call replaces with cr and
 * dir; the reply body (find_rep and its entries) is copied to out, its max_bytes lowered to
 * fit out_len. Returns the reply's length or a negative errno. */
int nacre_find_ioctl_serve(struct nacre_fs *fs, const struct nacre_cred *cr,
			   const struct nacre_fid *dir, const void *in, size_t in_len,
			   void *out, size_t out_len);
/* ---- Quotas (`nacre quota`, `nacre setquota`; docs/quota.md) ----
 * One QUOTA request: an op on a (type, id) and the limits it changes. The reply gives the
 * usage and the effective limits, and for CHECK and TARGETS a list the call allocates. */
enum {
	NACRE_QUOTA_GET = 0,     /* usage and limits of (type, id) */
	NACRE_QUOTA_SET = 1,     /* its limits (root) */
	NACRE_QUOTA_GRACE = 2,   /* the type's grace periods (root; id ignored) */
	NACRE_QUOTA_DEFAULT = 3, /* the type's default limits (root; id ignored) */
	NACRE_QUOTA_GETDEF = 4,  /* the type's default limits and grace periods */
	NACRE_QUOTA_CHECK = 5,   /* recount every id's usage from the inodes (root): drift */
	NACRE_QUOTA_TARGETS = 6, /* GET, and the id's usage on each OST (lfs quota -v): root's,
				  * or the caller's own uid or gid */
};
enum { NACRE_QUOTA_USR = 0, NACRE_QUOTA_GRP = 1, NACRE_QUOTA_PRJ = 2 };
/* nacre_quota_req.valid: the fields SET, DEFAULT (limits) and GRACE (periods) change;
 * for CHECK, FIX also writes the count. */
#define NACRE_QUOTA_V_BSOFT 0x1u
#define NACRE_QUOTA_V_BHARD 0x2u
#define NACRE_QUOTA_V_ISOFT 0x4u
#define NACRE_QUOTA_V_IHARD 0x8u
#define NACRE_QUOTA_V_BGRACE 0x10u
#define NACRE_QUOTA_V_IGRACE 0x20u
#define NACRE_QUOTA_V_FIX 0x40u
#define NACRE_QUOTA_F_DEFAULT 0x1u /* nacre_quota_rep.flags: the limits are the defaults */

struct nacre_quota_req {
	uint32_t op;             /* NACRE_QUOTA_GET .. NACRE_QUOTA_TARGETS */
	uint32_t type;           /* NACRE_QUOTA_USR, _GRP or _PRJ */
	uint32_t id;             /* uid, gid or project id */
	uint32_t valid;          /* NACRE_QUOTA_V_* */
	uint64_t bsoft, bhard;   /* block limits in KiB; 0 = none */
	uint64_t isoft, ihard;   /* inode limits; 0 = none */
	uint64_t bgrace, igrace; /* grace periods in seconds */
};
struct nacre_quota_drift { /* an id whose stored usage differs from its count (CHECK) */
	uint32_t type, id;
	uint64_t kbytes, inodes;             /* stored */
	uint64_t count_kbytes, count_inodes; /* counted */
};
struct nacre_quota_target { /* the id's usage on one OST (TARGETS) */
	uint32_t ost_idx;
	uint64_t kbytes;
};
struct nacre_quota_rep {
	uint64_t kbytes, inodes;             /* usage */
	uint64_t bsoft, bhard, isoft, ihard; /* the effective limits */
	int64_t btime, itime;                /* when the grace ends (unix seconds); 0 = not over
					      * the soft limit */
	uint64_t bgrace, igrace;             /* the type's grace periods */
	uint32_t flags;                      /* NACRE_QUOTA_F_* */
	uint32_t count;                      /* entries in drift or targets */
	/* Owned by this reply, allocated by the call that filled it: count entries for CHECK
	 * (drift, at most 256) and TARGETS (targets, at most 1024), else NULL. Free them with
	 * nacre_quota_rep_fini. */
	struct nacre_quota_drift *drift;
	struct nacre_quota_target *targets;
};

/* One QUOTA request to the MDS with cr's credentials. Fills *rep (cleared first; on
 * failure it holds no list). Returns 0, -EINVAL (req's op, type or valid out of range),
 * -EPERM (a root-only op, or TARGETS of another's id), -EOPNOTSUPP (quotas are off on the
 * MDS), -EPROTO (a malformed reply), -ENOMEM or another negative errno; never -EDQUOT.
 * Thread-safe. */
int nacre_quota_call(struct nacre_fs *fs, const struct nacre_cred *cr,
		     const struct nacre_quota_req *req, struct nacre_quota_rep *rep);
/* The same request through a nacre mount (needs no nacre_fs): the NACRE_IOC_QUOTA ioctl on
 * fd, any open file or directory of the mount, with the calling process's credentials.
 * Returns as nacre_quota_call, with the ioctl's errno negated (-ENOTTY: fd is not on a
 * nacre mount, or its mount predates quotas), and -EBADMSG if the mount's reply does not
 * decode. Thread-safe. */
int nacre_quota_ioctl(int fd, const struct nacre_quota_req *req, struct nacre_quota_rep *rep);
/* The mount's side of NACRE_IOC_QUOTA (nacre-mount): in is the ioctl's request payload
 * (after its length word), made by nacre_quota_ioctl; it is sent with cr's credentials and
 * the reply payload written to out. The payload's format is libnacre's own. Returns the
 * reply's length, -EINVAL (a malformed request), -E2BIG (out too small) or as
 * nacre_quota_call. Thread-safe. */
int nacre_quota_ioctl_serve(struct nacre_fs *fs, const struct nacre_cred *cr, const void *in,
			    size_t in_len, void *out, size_t out_len);
/* Frees rep's drift or targets list and clears count. NULL is fine. */
void nacre_quota_rep_fini(struct nacre_quota_rep *rep);
/* statfs as seen from fid: a directory with a project id and the inherit flag whose
 * project has a block (inode) limit shows the limit as the size and limit - usage as free
 * (the hard limit, else the soft one), as Lustre's statfs_project. s holds the file
 * system's figures on entry; the fields without a limit stay. Returns 0 or -errno. */
int nacre_statfs_project(struct nacre_fs *fs, const struct nacre_cred *cr,
			 const struct nacre_fid *fid, struct nacre_statfs *s);
/* Creates a released stub (root only): a regular file name in parent with the given
 * attributes whose data is the archive object path of archive archive_id. */
int nacre_hsm_import(struct nacre_fs *fs, const struct nacre_cred *cr,
		     const struct nacre_fid *parent, const char *name, uint32_t mode, uint32_t uid,
		     uint32_t gid, uint64_t size, const struct nacre_time *mtime,
		     uint32_t archive_id, const char *path, struct nacre_attr *out);

/* Copytool (agent) calls, as root. The registration lives as long as this fs's MDS
 * connection: if it breaks, the actions in flight go back to the queue. */
int nacre_hsm_agent_register(struct nacre_fs *fs, const uint32_t *archive_ids, int nids,
			     int max_active);
/* Waits up to wait_ms (at most 5000) for actions and returns how many were written to out
 * (at most max), 0 if none. A RESTORE is written by opening its file O_WRONLY with
 * nacre_open: for this agent the MDS hands out the restore's new objects. */
int nacre_hsm_agent_poll(struct nacre_fs *fs, struct nacre_hsm_action *out, int max,
			 int wait_ms);
/* Reports progress of a (bytes done, total; 0 = unknown); with final, the end of it: status
 * 0 or a negative errno (-ECANCELED after a cancel), and for an ARCHIVE the object name it
 * used (path, may be NULL); for a failed action path may name the object and the reason
 * (shown by `nacre hsm list`). Returns 0, 1 if the user canceled the action (stop and report
 * final -ECANCELED), or an error: -ESTALE means the action was taken back (drop it). */
int nacre_hsm_agent_progress(struct nacre_fs *fs, const struct nacre_hsm_action *a,
			     uint64_t done, uint64_t total, int final, int status,
			     const char *path);

/* ---- locks: POSIX (fcntl) byte-range locks and flock, coherent across clients ----
 * The MDS holds them (in memory; this mount takes its locks back from an MDS that
 * restarted). An owner is this mount plus owner, an id the caller picks (nacre-mount passes
 * the kernel's lock owner). Locks live until unlocked, or until this mount stays
 * disconnected from the MDS longer than the MDS's --lock-evict-timeout. nacre_lock_set
 * never waits; F_SETLKW is a nacre_lock_wait, queued on the MDS in arrival order. */
enum { NACRE_LOCK_POSIX = 0, NACRE_LOCK_FLOCK = 1 };
enum { NACRE_LK_UNLCK = 0, NACRE_LK_RDLCK = 1, NACRE_LK_WRLCK = 2 };
#define NACRE_LOCK_EOF UINT64_MAX /* end of a lock that runs to the end of the file */
struct nacre_lock {
	int type;       /* NACRE_LK_* */
	uint64_t start; /* first byte */
	uint64_t end;   /* last byte, inclusive, >= start; NACRE_LOCK_EOF: to the end */
	uint32_t pid;   /* of the process that holds (or asks for) it */
};
/* Takes, converts or releases (type UNLCK) owner's lock on fid: for kind POSIX the range
 * [start, end], split and merged as fcntl(F_SETLK) does; for FLOCK the whole file (range
 * ignored). Returns 0, -EAGAIN if another owner's lock conflicts (nothing changed), -ENOLCK
 * (the MDS's table is full), -EIO (MDS unreachable) or another negative error. After a
 * grant, this fs's open handles of fid see the size the MDS has (what the previous holder
 * flushed) and drop readahead: lock, read, write, flush, unlock is coherent across clients.
 * Thread-safe. */
int nacre_lock_set(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   int kind, uint64_t owner, const struct nacre_lock *l);
/* F_SETLKW and blocking flock, in steps so that another thread can cancel the wait (a
 * signal): nacre_lock_wait_create notes the request (no RPC) in *out, owned by the caller;
 * nacre_lock_wait sends it and waits (no per-request timeout: only the mount's
 * recovery_timeout ends a wait on an MDS that is away) until the MDS grants it; then it is
 * recorded and the handles are revalidated as after nacre_lock_set.
 * Waiters of one file are served in arrival order, and one that conflicts with nothing
 * held or queued before it is granted at once. A mount keeps at most a few waits at the
 * MDS at once (its connection must stay free for other calls); more wait in the mount,
 * asking now and then, until one of those ends.
 * nacre_lock_wait_create returns 0, -EINVAL or -ENOMEM. nacre_lock_wait, once per handle:
 * 0 (granted), -EINTR (canceled; nothing changed), -EDEADLK (POSIX: an owner that holds
 * the range, or queued for it first, itself waits for a lock of owner's), -ENOLCK (the
 * MDS's tables are full), -EIO (MDS unreachable) or another negative error.
 * nacre_lock_wait_cancel may be called from any thread, any number of times, between
 * create and destroy: a wait not yet granted ends with -EINTR (one the MDS granted just
 * before keeps its lock and returns 0). It does not wait for the MDS.
 * nacre_lock_wait_destroy frees the handle (NULL is fine); no cancel may run then.
 * Thread-safe. */
struct nacre_lock_wait;
int nacre_lock_wait_create(struct nacre_fs *fs, const struct nacre_cred *cr,
			   const struct nacre_fid *fid, int kind, uint64_t owner,
			   const struct nacre_lock *l, struct nacre_lock_wait **out);
int nacre_lock_wait(struct nacre_lock_wait *w);
void nacre_lock_wait_cancel(struct nacre_lock_wait *w);
void nacre_lock_wait_destroy(struct nacre_lock_wait *w);
/* This mount's id in lock owners (chosen at random on first use). A process that takes
 * over another's mount (nacre-mount --upgrade) adopts its id with nacre_fs_set_lock_client
 * before any lock call; its first lock request then binds the held locks to its own MDS
 * connection, so they outlive the old connection. Thread-safe. */
uint64_t nacre_fs_lock_client(struct nacre_fs *fs);
/* Sets the id; -EINVAL for 0, -EBUSY if this fs already uses another one. Thread-safe. */
int nacre_fs_set_lock_client(struct nacre_fs *fs, uint64_t id);
/* F_GETLK: the first POSIX lock of another owner that conflicts with want (RDLCK or
 * WRLCK); conflict->type is NACRE_LK_UNLCK if none. Returns 0 or a negative error. */
int nacre_lock_get(struct nacre_fs *fs, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   uint64_t owner, const struct nacre_lock *want, struct nacre_lock *conflict);

#ifdef __cplusplus
}
#endif
#endif
