/* fz.h - nacre-mount internals: the mount context, the inode table, open files, and the
 * FUSE low-level operations, one family per file (inode.c, dir.c, file.c, attr.c, xattr.c).
 *
 * Everything here is used from the FUSE worker threads at once; each shared field says
 * which lock protects it. Lock order: fz_itable.lock, then fz_htable.lock, then
 * fz_inode.lock.
 *
 * Inode numbers given to the kernel are FIDs folded into 64 bits (inode.c), and file handles
 * counters looked up in a table, not addresses, so that nacre-mount --upgrade (upgrade.h)
 * can hand them to a new process, and a file handle (name_to_handle_at, NFS) of an inode
 * the kernel forgot still names its file.
 */
#ifndef NACRE_FZ_H
#define NACRE_FZ_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "nacre/nacre.h"

struct fz_file;

/* One kernel-visible inode. Lives while the kernel holds lookups on it (nlookup > 0). The
 * root inode is embedded in fz_itable and never freed. */
struct fz_inode {
	struct nacre_fid fid;    /* immutable */
	fuse_ino_t ino;          /* immutable: FUSE_ROOT_ID, fz_fid_nodeid(fid), or (a FID that
				  * does not fold) a number from fz_itable.next_ino */
	uint64_t nlookup;        /* fz_itable.lock */
	struct fz_inode *hnext;  /* fz_itable.lock: FID hash chain */
	struct fz_inode *inext;  /* fz_itable.lock: inode number hash chain */
	struct nacre_fid parent; /* fz_itable.lock: last parent seen, for ".." in readdir */
	pthread_mutex_t lock;    /* protects files and the cache stamp */
	struct fz_file *files;   /* lock: files open on this inode */
	/* lock: size and times of the file when the kernel's page cache of it was last known
	 * to match the servers (at open, and after this client's flush); an open that finds
	 * them unchanged keeps the cache (close-to-open still holds: any change drops it) */
	int cache_valid;
	uint64_t cache_size;
	struct nacre_time cache_mtime, cache_ctime;
	/* lock: the size last given to the kernel in an attribute or entry reply (kernel_size
	 * valid: one was given by this process), so an open can tell whether the kernel may
	 * still hold an older size than the servers' */
	int kernel_size_valid;
	uint64_t kernel_size;
	/* lock: a directory's attributes as the MDS last gave them (dircache.c), allocated
	 * for directories only (an untarred tree's files do not pay for it) */
	struct fz_dattr *dattr;
	uint64_t dattr_gen;     /* lock: +1 at each drop: a fetch that began before it is stale */
};

struct fz_dattr {
	int known;              /* attr holds some (maybe old ones) */
	int valid;              /* they may answer getattr until until_ms */
	int64_t until_ms;       /* CLOCK_MONOTONIC */
	struct nacre_attr attr;
};

/* An open regular file (fi->fh). nf is used only by requests that carry this handle, which
 * the kernel never sends after release; the list fields let getattr see local writes. */
struct fz_file {
	struct nacre_file *nf;       /* immutable while open */
	struct fz_inode *inode;      /* immutable */
	int append;                  /* immutable: opened O_APPEND */
	int flags;                   /* immutable: open flags, for a re-open by an upgrade */
	struct nacre_cred cred;      /* immutable: the opener's, for a re-open by an upgrade */
	struct fz_file *next, *prev; /* inode->lock */
	uint64_t written_end;        /* inode->lock: highest end written through this handle */
	int dirty;                   /* inode->lock: written since the last flush */
	int closing;                 /* inode->lock: its release began: nf is nacre_close's,
				      * the inode's other users leave it alone */
	int atime_checked;           /* inode->lock: a READ came (atime.c) */
	int atime_due;               /* inode->lock: its close sets the file's atime to atime */
	struct nacre_time atime;     /* inode->lock */
};

/* FID -> inode and inode number -> inode hash tables (chained), resized as they grow.
 * Both hold the same inodes; the number table leaves out the root (FUSE_ROOT_ID). */
struct fz_itable {
	pthread_mutex_t lock;
	struct fz_inode **buckets;  /* lock: by FID */
	struct fz_inode **ibuckets; /* lock: by inode number */
	size_t nbuckets;            /* lock: a power of two, the size of both arrays */
	size_t count;               /* lock: inodes in the table, root included */
	uint64_t next_ino;          /* lock: the next counter for a FID that does not fold (from
				     * 2^63 up); never reused */
	struct fz_inode root;       /* fid and ino immutable after fz_itable_init */
};

/* Kinds of handle-table entries. */
enum { FZ_H_FILE = 1, FZ_H_DIR = 2 };

/* fi->fh -> struct fz_file / directory handle. */
struct fz_hent;
struct fz_htable {
	pthread_mutex_t lock;
	struct fz_hent **buckets; /* lock */
	size_t count;             /* lock */
	uint64_t next;            /* lock: the next handle number; never reused */
};

/* State of a handover (upgrade_give.c) as the serving process sees it. */
struct fz_upgrade;

/* Kernel readahead set on the mount's bdi (read_ahead_kb), so that buffered reads arrive as
 * 1 MiB requests with several in flight. */
#define FZ_KERNEL_RA_KB 4096

/* The thread that raises the bdi readahead once the kernel finished FUSE_INIT (bdi.c). */
struct fz_bdi {
	pthread_mutex_t lock; /* protects the fields below */
	pthread_cond_t cond;
	int inited;           /* op_init ran */
	int stop;             /* unmounting */
	int started;          /* thread is running (joined by fz_bdi_stop) */
	pthread_t thread;
	char mnt[4096];       /* immutable once started */
};

/* Lock modes (mount options flock, localflock, noflock). */
enum {
	FZ_LOCK_CLUSTER = 0, /* flock: locks held by the MDS, coherent across clients */
	FZ_LOCK_LOCAL = 1,   /* localflock: the kernel's locks, this client only */
	FZ_LOCK_NONE = 2,    /* noflock: fcntl locks and flock fail with ENOSYS */
};

/* atime modes (mount options relatime, strictatime, noatime; atime.c). */
enum {
	FZ_ATIME_REL = 0,    /* relatime, the default */
	FZ_ATIME_STRICT = 1, /* strictatime (also norelatime) */
	FZ_ATIME_NONE = 2,   /* noatime */
};

/* What the kernel and libfuse agreed at FUSE_INIT; the new process of an upgrade replays it. */
struct fz_init_params {
	uint32_t proto_major, proto_minor;
	uint32_t max_readahead; /* the kernel's, as it asked */
	uint32_t capable, want; /* libfuse's view, after op_init */
};

/* The mount: set up before the session starts, read-only afterwards (no lock needed), but
 * for bdi, which has its own lock. */
struct fz_mount {
	struct nacre_fs *fs;
	int kernel_ra_kb;     /* read_ahead_kb to set; 0 = leave the kernel default */
	struct fz_bdi bdi;
	double attr_timeout;  /* seconds the kernel may cache attributes */
	double entry_timeout; /* seconds the kernel may cache names */
	/* atomic: refuse modifications with EROFS (-o ro); fz_mount_ro clears it once the
	 * superblock became read-write (mount -o remount,rw) */
	int ro;
	char kdev[32];        /* "major:minor" of the FUSE mount, for its superblock flags; ""
			       * if unknown */
	int lock_mode;        /* FZ_LOCK_* */
	int atime_mode;       /* FZ_ATIME_* */
	int jobid;            /* requests carry the caller's job id (jobid=procname_uid) */
	const char *jobid_var; /* ... the value of this variable of its environment (jobid=VAR;
				* NULL: procname_uid) */
	char *connect;        /* nacre.connect's text (heap), built at start */
	struct fuse_session *se; /* set once the session exists, for cache invalidations */
	struct fz_itable itab;
	struct fz_htable htab;
	/* Set by an upgrade while FUSE_INIT is replayed: op_init restores the connection
	 * parameters the kernel negotiated with the previous process. */
	const struct fz_init_params *replay_init;
	struct fz_init_params init; /* written by op_init, read once the session stopped */
	struct fz_upgrade *upg;     /* the control socket; set and cleared by the thread that
				     * runs the FUSE loop while it is stopped */
	struct fz_ring *ring;       /* ring.c: FUSE over io_uring; NULL without it */
	/* write-back's journal (journal.h), opened when write-back is turned on */
	const char *spec;           /* the mount spec it records */
	const char *journal;        /* its directory */
	int wb_journal;             /* NACRE_WB_JOURNAL_* */
};

static inline struct fz_mount *fz_mnt(fuse_req_t req)
{
	return (struct fz_mount *)fuse_req_userdata(req);
}

/* Largest read/write request on /dev/fuse: libfuse 3.14's read buffer (the ring may take
 * larger ones, ring.c). */
#define FZ_MAX_IO (1024 * 1024)

/* ---- ring.c: FUSE over io_uring ---- */
/* Puts ring.c under libfuse's reads and writes of /dev/fuse (after fuse_session_mount):
 * with want, it accepts the kernel's offer of io_uring in FUSE_INIT and serves through it.
 * 0 or -errno. */
int fz_ring_setup(struct fz_mount *m, const char *mnt, int want);
/* Where a reply of size bytes to the request this thread serves can be built so that the
 * ring need not copy it (its payload buffer; the request's own payload is then gone), or
 * NULL (a /dev/fuse request, or too big). */
void *fz_ring_reply_buffer(size_t size);
/* 1 once the session took the ring (even if the kernel refused it later): it cannot be
 * handed over, and its requests may be larger than libfuse's /dev/fuse buffer. */
int fz_ring_in_use(struct fz_mount *m);
/* Ends the ring's threads once the FUSE loop ended; fz_ring_free after the session. */
void fz_ring_stop(struct fz_mount *m);
void fz_ring_free(struct fz_mount *m);
void fz_ring_metrics_register(void);

/* ---- inode.c ---- */
/* Prepares the table with the root inode (FUSE_ROOT_ID). 0 or -ENOMEM. Not thread-safe. */
int fz_itable_init(struct fz_itable *t, const struct nacre_fid *root);
/* Frees every inode; their files must be closed first (fz_file_close_all). */
void fz_itable_fini(struct fz_itable *t);
/* The inode behind a kernel inode number; valid while the kernel holds a lookup on it. NULL
 * (logged) for a number this table never gave out. Thread-safe: one mutex and a lookup. */
struct fz_inode *fz_inode_get(struct fz_mount *m, fuse_ino_t ino);
/* Adds an inode the kernel already knows by ino (an upgrade): ino, FID and lookups as the
 * previous process had them. For FUSE_ROOT_ID only nlookup is taken (fid must match the
 * root). 0, -EEXIST, -EINVAL or -ENOMEM. Not thread-safe: before the session runs. */
int fz_inode_import(struct fz_mount *m, fuse_ino_t ino, const struct nacre_fid *fid,
		    const struct nacre_fid *parent, uint64_t nlookup);
/* Calls fn for every inode, root first, under fz_itable.lock (fn must not take it); stops at
 * the first non-zero return, which it returns. */
int fz_itable_walk(struct fz_mount *m, int (*fn)(struct fz_inode *in, void *arg), void *arg);
/* The node id that stands for fid whether or not the kernel holds it: the FID folded into
 * 64 bits, or 0 if it does not fold (then the table gives it a counter). Pure. */
uint64_t fz_fid_nodeid(const struct nacre_fid *fid);
/* The inverse: 0 and *fid, or -ESTALE if ino is not a folded FID. Pure. */
int fz_nodeid_fid(uint64_t ino, struct nacre_fid *fid);
/* The FID behind ino even if the kernel forgot it (a file handle's node id): the table's,
 * else the unfolded number. 0 or -ESTALE (a counter no longer in the table). Thread-safe. */
int fz_inode_fid(struct fz_mount *m, fuse_ino_t ino, struct nacre_fid *fid);
/* Sets the parent remembered for in (not the root's). Thread-safe. */
void fz_inode_set_parent(struct fz_mount *m, struct fz_inode *in, const struct nacre_fid *parent);
/* The kernel's inode number for fid, or 0 if the kernel holds no inode of it. Thread-safe. */
fuse_ino_t fz_inode_find(struct fz_mount *m, const struct nacre_fid *fid);
/* The same, and the attributes nacre-mount keeps of it are dropped (dircache.c). */
fuse_ino_t fz_inode_find_stale(struct fz_mount *m, const struct nacre_fid *fid);
/* Finds or creates the inode of fid and adds one lookup; parent (may be NULL) is remembered
 * for "..". Returns NULL on ENOMEM. Thread-safe. */
struct fz_inode *fz_inode_ref(struct fz_mount *m, const struct nacre_fid *fid,
			      const struct nacre_fid *parent);
/* Drops n lookups; frees the inode when none remain (never the root). Thread-safe. */
void fz_inode_forget(struct fz_mount *m, struct fz_inode *in, uint64_t n);
/* Parent remembered for in (its own FID if none). Thread-safe. */
struct nacre_fid fz_inode_parent(struct fz_mount *m, struct fz_inode *in);
/* Links f into in's open file list / unlinks it. Thread-safe. */
void fz_inode_add_file(struct fz_inode *in, struct fz_file *f);
void fz_inode_del_file(struct fz_inode *in, struct fz_file *f);
/* *size is what the MDS says in's size is (about to be told to the kernel, in an attribute
 * or entry reply): tells the handles of the files open on in (nacre_file_size_seen), raises
 * *size to the highest end written through them, and records the result as the size the
 * kernel was last given. Thread-safe. */
void fz_inode_size_for_kernel(struct fz_inode *in, uint64_t *size);
/* 1 if the kernel may hold another size of in than the one the last open found (cache_size):
 * none given yet by this process, or a different one. Thread-safe. */
int fz_inode_kernel_size_differs(struct fz_inode *in);
/* After a size change: no open file may claim data past size any more. Thread-safe. */
void fz_inode_clamp_size(struct fz_inode *in, uint64_t size);
void fz_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fz_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);

/* ---- handle.c: the handle table (fi->fh) ---- */
/* Prepares an empty table. 0 or -ENOMEM. Not thread-safe. */
int fz_htable_init(struct fz_htable *t);
/* Frees the table's entries (not the objects they point to). */
void fz_htable_fini(struct fz_htable *t);
/* Gives obj a new handle number *fh. 0 or -ENOMEM. Thread-safe. */
int fz_handle_add(struct fz_mount *m, int kind, void *obj, uint64_t *fh);
/* Adds obj under a number the kernel already holds (an upgrade). 0, -EEXIST, -EINVAL or
 * -ENOMEM. Thread-safe. */
int fz_handle_import(struct fz_mount *m, uint64_t fh, int kind, void *obj);
/* The object of fh if it is of kind, else NULL. Valid until release of fh. Thread-safe. */
void *fz_handle_get(struct fz_mount *m, uint64_t fh, int kind);
/* Removes fh and returns its object (NULL if fh is not of kind). Thread-safe. */
void *fz_handle_del(struct fz_mount *m, uint64_t fh, int kind);
/* Calls fn for every handle under fz_htable.lock; stops at (and returns) a non-zero result. */
int fz_htable_walk(struct fz_mount *m, int (*fn)(uint64_t fh, int kind, void *obj, void *arg),
		   void *arg);

/* ---- notify.c: the MDS's permission-change callbacks ---- */
/* Starts listening (once m->se is mounted): each FID another client changed the mode,
 * owner, group or ACL of has its kernel attributes dropped, so that the kernel's next
 * permission check (default_permissions) asks again. Logs and goes on without on failure. */
void fz_notify_start(struct fz_mount *m);
/* Drops the kernel's attributes of fid, and those nacre-mount keeps, if it holds any (a
 * change made here that the kernel cannot see, such as an HSM release). */
void fz_inval_attrs(struct fz_mount *m, const struct nacre_fid *fid);
/* Stops it: no invalidation is sent after it returned (before the session is destroyed or
 * handed over). Fine if never started. */
void fz_notify_stop(struct fz_mount *m);

/* ---- req.c: per-request helpers ---- */
/* The caller's uid, gid and all its supplementary groups (a long list as a token). */
void fz_cred(fuse_req_t req, struct nacre_cred *cr);
/* For the mode of a create, mkdir or mknod: NACRE_MODE_UMASK of the caller's umask when the
 * kernel left the umask to us (FUSE_CAP_DONT_MASK, with POSIX ACLs), else 0. */
uint32_t fz_umask_bits(fuse_req_t req);
/* 1 if this host's fs.protected_hardlinks is on (read at each call: links are rare). */
int fz_protected_hardlinks(void);
/* Positive errno for the kernel from a libnacre result: NACRE_E* and timeouts become EIO. */
int fz_errno(int rc);
/* 0 for rc >= 0, else fz_errno(rc): for fuse_reply_err of calls without a result. */
int fz_errno_or_ok(int rc);
/* Replies the error of a libnacre result (rc < 0). */
void fz_reply_rc(fuse_req_t req, int rc);
/* Replies a getxattr/listxattr with text (len bytes): its length when the caller asked for
 * the size (size 0), ERANGE when it does not fit in size, else the bytes. */
void fz_reply_xattr_text(fuse_req_t req, const char *text, size_t len, size_t size);
/* Every target of the cluster registry into a new array (*out, freed by the caller),
 * however many there are. Returns the count or a negative error. */
int fz_targets_all(struct nacre_fs *fs, struct nacre_target **out);
/* Stable inode number derived from a FID (as Lustre flattens FIDs). */
uint64_t fz_fid_ino(const struct nacre_fid *fid);
void fz_attr_to_stat(const struct nacre_attr *a, struct stat *st);
/* Adds a lookup for a->fid and replies the entry; undoes the lookup if the kernel did not
 * take it. */
void fz_reply_entry(fuse_req_t req, const struct nacre_attr *a, const struct nacre_fid *parent);
/* Fills e for a->fid with one lookup taken; 0 or -ENOMEM. For create. */
int fz_entry_prepare(fuse_req_t req, const struct nacre_attr *a, const struct nacre_fid *parent,
		     struct fuse_entry_param *e, struct fz_inode **out);
/* 1 if modifications are refused (-o ro). The kernel passes one on only while the
 * superblock is writable, so when -o ro is set this reads the superblock's flag and follows
 * a mount -o remount,rw (remount,ro needs nothing: the kernel then refuses by itself).
 * Thread-safe. */
int fz_mount_ro(struct fz_mount *m);
/* 1 (and replies EROFS) if fz_mount_ro. */
int fz_check_ro(fuse_req_t req);
/* 1 (and replies ENAMETOOLONG) if name is longer than NACRE_NAME_MAX. */
int fz_check_name(fuse_req_t req, const char *name);

/* ---- dir.c ---- */
void fz_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fz_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fz_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void fz_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void fz_op_readlink(fuse_req_t req, fuse_ino_t ino);
void fz_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fz_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fz_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		  const char *newname, unsigned int flags);
void fz_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void fz_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void fz_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void fz_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
/* An open directory's state (empty: the next readdir fetches); NULL on ENOMEM. */
void *fz_dir_create(void);
void fz_dir_destroy(void *dir);

/* ---- file.c ---- */
void fz_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi);
void fz_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fz_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi);
void fz_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fz_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* ---- space.c ---- */
void fz_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		     struct fuse_file_info *fi);
void fz_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		 struct fuse_file_info *fi);
/* Closes f (flushing to the MDS) and frees it; returns nacre_close's result. */
int fz_file_close(struct fz_file *f);
/* Closes every file still open, after the session ended (errors are logged). Not
 * thread-safe: nothing else may serve the mount. */
void fz_file_close_all(struct fz_mount *m);
/* Wraps nf in an fz_file linked to in (flags: the open flags; cr: the opener's). NULL on
 * ENOMEM (nf is then still the caller's). Thread-safe. */
struct fz_file *fz_file_create(struct fz_inode *in, struct nacre_file *nf, int flags,
			       const struct nacre_cred *cr);
/* Publishes f's buffered writes and size to the MDS (as flush). Thread-safe. */
int fz_file_push(struct fz_file *f);

/* ---- atime.c: atime on read (see there) ---- */
/* The first READ through f: decides whether the file's atime is due and if so notes it
 * (for f's close and this mount's replies). Thread-safe. */
void fz_atime_read(struct fz_mount *m, struct fz_file *f);
/* Raises *atime to the latest atime noted on in's open files. Thread-safe. */
void fz_atime_merge(struct fz_inode *in, struct nacre_time *atime);
/* A utimes through this mount: the noted atimes are void. Thread-safe. */
void fz_atime_drop(struct fz_inode *in);

/* ---- attr.c ---- */
void fz_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
void fz_op_access(fuse_req_t req, fuse_ino_t ino, int mask);
void fz_op_statfs(fuse_req_t req, fuse_ino_t ino);

/* ---- xattr.c ---- */
void fz_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
/* ioctl.c: NACRE_IOC_FIND (nacre_ioctl.h) on a directory; anything else is ENOTTY. */
void fz_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
		 size_t out_bufsz);
void fz_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags);
void fz_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fz_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ---- dircache.c: directory attributes answered by nacre-mount itself ----
 * With default_permissions the kernel drops a directory's attributes after each create or
 * unlink in it and asks for them again at the next permission check: one GETATTR per
 * create would double its round trips. So a directory's attributes from the MDS are kept
 * for attr_timeout (the time the kernel itself may keep them) and answered from here;
 * this mount's own changes in the directory update its mtime, ctime and nlink, and another
 * client's change of mode, owner or ACL drops them (notify.c), as any local setattr or
 * xattr change does. Thread-safe (the inode's lock). */
/* The generation to give fz_dattr_store for attributes about to be fetched. */
uint64_t fz_dattr_gen(struct fz_inode *in);
/* Keeps a (if it is a directory's) as in's attributes for attr_timeout from now, unless they
 * were dropped since generation gen was taken (a callback overtook the fetch). */
void fz_dattr_store(struct fz_mount *m, struct fz_inode *in, const struct nacre_attr *a,
		    uint64_t gen);
/* 1 with *a and the seconds it stays valid in *valid_s if in's are kept, else 0. */
int fz_dattr_lookup(struct fz_inode *in, struct nacre_attr *a, double *valid_s);
/* 1 with *a the last attributes known of directory in, valid or not, else 0. */
int fz_dattr_last(struct fz_inode *in, struct nacre_attr *a);
/* This mount changed a name in dir at time when (NULL: now, by this node's clock), which
 * added dnlink links to it (a subdirectory made or removed: +1 or -1). */
void fz_dattr_changed(struct fz_inode *dir, const struct nacre_time *when, int dnlink);
void fz_dattr_drop(struct fz_inode *in);
/* Records a (if it is a directory's, from a lookup or create) as the last attributes known
 * of in, without letting them answer getattr. */
void fz_dattr_note(struct fz_inode *in, const struct nacre_attr *a);
/* For a directory the MDS no longer has (removed, or replaced by a rename) while the kernel
 * still holds it (an open descriptor, a working directory): 1 with its last known
 * attributes in *a, nlink 0, as a local file system answers fstat of it; 0 if unknown. */
int fz_dattr_gone(struct fz_inode *in, struct nacre_attr *a);

/* ---- bdi.c ---- */
/* Starts a thread that, once FUSE_INIT is done, writes m->kernel_ra_kb to the bdi
 * read_ahead_kb of the mount at mnt (the kernel caps it to 128 KiB at INIT). Failures are
 * logged only. */
void fz_bdi_start(struct fz_mount *m, const char *mnt);
/* Called from op_init. Thread-safe. */
void fz_bdi_init_done(struct fz_mount *m);
/* The "major:minor" (dev) and file system type (fstype, may be NULL) of the last mount on
 * mnt, from /proc/self/mountinfo, without touching the mount. 0, -ENOENT or -errno. */
int fz_mount_find(const char *mnt, char *dev, size_t len, char *fstype, size_t fslen);
/* 1 if the superblock of device dev ("major:minor") is read-only (its super options in
 * /proc/self/mountinfo), 0 if read-write; -ENOENT if no mount shows it, or -errno. */
int fz_mount_sb_ro(const char *dev);
/* Stops and joins the thread. */
void fz_bdi_stop(struct fz_mount *m);

/* ---- hsm.c: the nacre.hsm* virtual xattrs ----
 * Each returns 1 if name was an HSM name (the request is answered), 0 otherwise. */
int fz_hsm_getxattr(fuse_req_t req, struct fz_inode *in, const char *name, size_t size);
int fz_hsm_setxattr(fuse_req_t req, struct fz_inode *in, const char *name, const char *value,
		    size_t size);

/* ---- param.c: nacre.instance, nacre.params and nacre.param.NAME (lctl-style tunables) ----
 * Each returns 1 if name was one of these (the request is answered), 0 otherwise. */
int fz_param_getxattr(fuse_req_t req, struct fz_inode *in, const char *name, size_t size);
int fz_param_setxattr(fuse_req_t req, struct fz_inode *in, const char *name, const char *value,
		      size_t size);

/* ---- lock.c: fcntl and flock locks (see lock.c for the modes) ---- */
void fz_op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock);
void fz_op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		 int sleep);
void fz_op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
/* flush and release that first drop the closing owner's locks (POSIX at flush; OFD and
 * flock at release), then run file.c's. */
void fz_op_lock_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_lock_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* Requests now waiting for a cluster lock (F_SETLKW, blocking flock). Thread-safe. */
int fz_lock_waiters(void);
/* Calls fn for each (fid, lock owner) that may hold POSIX locks (lock.c's table), under
 * its mutex; stops at (and returns) a non-zero result. */
int fz_lock_owners_walk(int (*fn)(const struct nacre_fid *fid, uint64_t owner, void *arg),
			void *arg);
/* Adds a pair to that table (an upgrade); without the handle it locked through, an OFD
 * owner's locks then go at the last close of the file here. 0 or -ENOMEM. */
int fz_lock_owner_import(const struct nacre_fid *fid, uint64_t owner);

/* ---- upgrade_*.c: nacre-mount --upgrade (see upgrade.h for the steps) ---- */
/* What the serving process tells a successor; strings live as long as the mount. */
struct fz_upgrade_conf {
	const char *spec;
	const char *opts; /* the -o options as given, comma-separated */
	const char *mnt;  /* the mount point (real path) */
	const char *sock; /* control_socket= or NULL for the default path */
};
enum { FZ_UPG_NONE = 0, FZ_UPG_RESUME = 1, FZ_UPG_HANDED = 2 };
/* The control socket of mnt: opt_path, else /run/nacre/mount-MAJOR:MINOR.sock. 0 or -errno. */
int fz_upgrade_socket_path(const char *mnt, const char *opt_path, char *out, size_t len);
/* Listens on the control socket in a thread of its own; main_thread runs the FUSE loop and
 * gets SIGUSR2 when an upgrade stops it. Sets m->upg. 0 or -errno. */
int fz_upgrade_listen(struct fz_mount *m, const struct fz_upgrade_conf *conf,
		      pthread_t main_thread);
/* Called by main_thread each time the FUSE loop returned: FZ_UPG_NONE (a normal stop),
 * FZ_UPG_RESUME (an upgrade stopped it and failed: reset the session and loop again) or
 * FZ_UPG_HANDED (the session belongs to a successor now: exit without unmounting). */
int fz_upgrade_after_loop(struct fz_mount *m);
/* Closes the control socket and joins its thread. m->upg may be NULL. */
void fz_upgrade_stop(struct fz_mount *m);
/* Binds this mount's cluster locks to its own MDS connection (an empty unlock). */
int fz_locks_rebind(struct fz_mount *m, char *err, size_t len);

/* The successor's side. A takeover holds the connection to the old process, the received
 * /dev/fuse fd and the state; every call writes a sentence naming the failed step to err. */
struct fz_takeover;
/* Asks the process behind sock_path for its session. 0 or a negative error. */
int fz_upgrade_request(const char *sock_path, struct fz_takeover **out, char *err, size_t len);
const char *fz_takeover_spec(const struct fz_takeover *t);
const char *fz_takeover_opts(const struct fz_takeover *t);
/* The /dev/fuse fd; the session owns it once fuse_session_mount took it. */
int fz_takeover_fd(const struct fz_takeover *t);
/* Fills m's (fresh) tables with the old process's numbers and re-opens its files. */
int fz_takeover_import(struct fz_mount *m, struct fz_takeover *t, char *err, size_t len);
/* Feeds libfuse the FUSE_INIT the kernel sent the first process (m->se must exist). */
int fz_takeover_replay_init(struct fz_mount *m, struct fz_takeover *t, char *err, size_t len);
/* Tells the old process to go (status 0: returns 0 once it confirmed, else the session
 * is not ours) or to serve on (a negative errno, msg why). */
int fz_takeover_ack(struct fz_takeover *t, int status, const char *msg);
/* Waits until the old process has exited (its end of the socket closed: 1), or for
 * timeout_ms without news (-1: no limit; 0). */
int fz_takeover_wait_old(struct fz_takeover *t, int timeout_ms);
void fz_takeover_free(struct fz_takeover *t);

/* ---- ops.c ---- */
/* The operation table handed to fuse_session_new. */
extern const struct fuse_lowlevel_ops fz_ops;

#endif
