/* fz.h - nacre-mount internals: the mount context, the inode table, open files, and the
 * FUSE low-level operations, one family per file (inode.c, dir.c, file.c, attr.c, xattr.c).
 *
 * Everything here is used from the FUSE worker threads at once; each shared field says
 * which lock protects it. Lock order: fz_itable.lock before fz_inode.lock.
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
	fuse_ino_t ino;          /* immutable: FUSE_ROOT_ID or the object's address */
	uint64_t nlookup;        /* fz_itable.lock */
	struct fz_inode *hnext;  /* fz_itable.lock: hash chain */
	struct nacre_fid parent; /* fz_itable.lock: last parent seen, for ".." in readdir */
	pthread_mutex_t lock;    /* protects files and the cache stamp */
	struct fz_file *files;   /* lock: files open on this inode */
	/* lock: size and times of the file when the kernel's page cache of it was last known
	 * to match the servers (at open, and after this client's flush); an open that finds
	 * them unchanged keeps the cache (close-to-open still holds: any change drops it) */
	int cache_valid;
	uint64_t cache_size;
	struct nacre_time cache_mtime, cache_ctime;
};

/* An open regular file (fi->fh). nf is used only by requests that carry this handle, which
 * the kernel never sends after release; the list fields let getattr see local writes. */
struct fz_file {
	struct nacre_file *nf;       /* immutable while open */
	struct fz_inode *inode;      /* immutable */
	int append;                  /* immutable: opened O_APPEND */
	struct fz_file *next, *prev; /* inode->lock */
	uint64_t written_end;        /* inode->lock: highest end written through this handle */
	int dirty;                   /* inode->lock: written since the last flush */
};

/* FID -> inode hash table (chained), resized as it grows. */
struct fz_itable {
	pthread_mutex_t lock;
	struct fz_inode **buckets; /* lock */
	size_t nbuckets;           /* lock: a power of two */
	size_t count;              /* lock: inodes in the table, root included */
	struct fz_inode root;      /* fid and ino immutable after fz_itable_init */
};

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

/* The mount: set up before the session starts, read-only afterwards (no lock needed), but
 * for bdi, which has its own lock. */
struct fz_mount {
	struct nacre_fs *fs;
	int kernel_ra_kb;     /* read_ahead_kb to set; 0 = leave the kernel default */
	struct fz_bdi bdi;
	double attr_timeout;  /* seconds the kernel may cache attributes */
	double entry_timeout; /* seconds the kernel may cache names */
	int ro;               /* refuse every modification with EROFS */
	int lock_mode;        /* FZ_LOCK_* */
	struct fuse_session *se; /* set once the session exists, for cache invalidations */
	struct fz_itable itab;
};

static inline struct fz_mount *fz_mnt(fuse_req_t req)
{
	return (struct fz_mount *)fuse_req_userdata(req);
}

/* ---- inode.c ---- */
/* Prepares the table with the root inode (FUSE_ROOT_ID). 0 or -ENOMEM. Not thread-safe. */
int fz_itable_init(struct fz_itable *t, const struct nacre_fid *root);
/* Closes every file still open (after the session ended) and frees every inode. */
void fz_itable_fini(struct fz_itable *t);
/* The inode behind a kernel inode number; valid while the kernel holds a lookup on it. */
struct fz_inode *fz_inode_get(struct fz_mount *m, fuse_ino_t ino);
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
/* Raises *size to the highest end written through files open on in. Thread-safe. */
void fz_inode_merge_size(struct fz_inode *in, uint64_t *size);
/* After a size change: no open file may claim data past size any more. Thread-safe. */
void fz_inode_clamp_size(struct fz_inode *in, uint64_t size);
void fz_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fz_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);

/* ---- req.c: per-request helpers ---- */
/* The caller's uid, gid and supplementary groups (at most NACRE_MAX_GROUPS). */
void fz_cred(fuse_req_t req, struct nacre_cred *cr);
/* Positive errno for the kernel from a libnacre result: NACRE_E* and timeouts become EIO. */
int fz_errno(int rc);
/* 0 for rc >= 0, else fz_errno(rc): for fuse_reply_err of calls without a result. */
int fz_errno_or_ok(int rc);
/* Replies the error of a libnacre result (rc < 0). */
void fz_reply_rc(fuse_req_t req, int rc);
/* Stable inode number derived from a FID (as Lustre flattens FIDs). */
uint64_t fz_fid_ino(const struct nacre_fid *fid);
void fz_attr_to_stat(const struct nacre_attr *a, struct stat *st);
/* Adds a lookup for a->fid and replies the entry; undoes the lookup if the kernel did not
 * take it. */
void fz_reply_entry(fuse_req_t req, const struct nacre_attr *a, const struct nacre_fid *parent);
/* Fills e for a->fid with one lookup taken; 0 or -ENOMEM. For create. */
int fz_entry_prepare(fuse_req_t req, const struct nacre_attr *a, const struct nacre_fid *parent,
		     struct fuse_entry_param *e, struct fz_inode **out);
/* 1 (and replies EROFS) on a read-only mount. */
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
void fz_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

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
/* Closes f (flushing to the MDS) and frees it; returns nacre_close's result. */
int fz_file_close(struct fz_file *f);

/* ---- attr.c ---- */
void fz_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
void fz_op_access(fuse_req_t req, fuse_ino_t ino, int mask);
void fz_op_statfs(fuse_req_t req, fuse_ino_t ino);

/* ---- xattr.c ---- */
void fz_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fz_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags);
void fz_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fz_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* ---- bdi.c ---- */
/* Starts a thread that, once FUSE_INIT is done, writes m->kernel_ra_kb to the bdi
 * read_ahead_kb of the mount at mnt (the kernel caps it to 128 KiB at INIT). Failures are
 * logged only. */
void fz_bdi_start(struct fz_mount *m, const char *mnt);
/* Called from op_init. Thread-safe. */
void fz_bdi_init_done(struct fz_mount *m);
/* Stops and joins the thread. */
void fz_bdi_stop(struct fz_mount *m);

/* ---- hsm.c: the nacre.hsm* virtual xattrs ----
 * Each returns 1 if name was an HSM name (the request is answered), 0 otherwise. */
int fz_hsm_getxattr(fuse_req_t req, struct fz_inode *in, const char *name, size_t size);
int fz_hsm_setxattr(fuse_req_t req, struct fz_inode *in, const char *name, const char *value,
		    size_t size);

/* ---- lock.c: fcntl and flock locks (see lock.c for the modes) ---- */
void fz_op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock);
void fz_op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		 int sleep);
void fz_op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
/* flush and release that first drop the closing owner's locks, then run file.c's. */
void fz_op_lock_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fz_op_lock_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ---- ops.c ---- */
/* The operation table handed to fuse_session_new. */
extern const struct fuse_lowlevel_ops fz_ops;

#endif
