/* nacre_types.h - public value types of libnacre: FIDs, attributes, layouts, credentials.
 *
 * These are in-memory types. They never go on the wire as structs: src/proto encodes them
 * field by field.
 */
#ifndef NACRE_TYPES_H
#define NACRE_TYPES_H

#include <stdint.h>

#define NACRE_NAME_MAX 255   /* bytes in one path component */
#define NACRE_PATH_MAX 4096  /* bytes in a path or symlink target */
#define NACRE_XATTR_MAX 65536 /* bytes in one xattr value, as Linux's XATTR_SIZE_MAX */
#define NACRE_MAX_GROUPS 65536 /* supplementary groups of a caller, as Linux's NGROUPS_MAX */
#define NACRE_CRED_GROUPS 32   /* of them carried in each request; more: a registered list */
#define NACRE_MAX_STRIPES 128
#define NACRE_JOBID_MAX 31 /* a job id's bytes: Lustre's LUSTRE_JOBID_SIZE less its NUL */
#define NACRE_FSNAME_MAX 8   /* as Lustre: fsname is 1..8 chars [A-Za-z0-9_-] */
#define NACRE_ADDR_MAX 63    /* "host:port" of a server */
#define NACRE_FAILOVER_MAX 4 /* addresses of one server (failover partners) */
/* "host:port,host:port": a server's failover addresses, as a mount spec lists them */
#define NACRE_ADDR_LIST_MAX (NACRE_FAILOVER_MAX * (NACRE_ADDR_MAX + 1))

#define NACRE_DEFAULT_PORT_MDS 9400
#define NACRE_DEFAULT_PORT_OSS 9410
#define NACRE_STRIPE_SIZE_MIN 65536u
#define NACRE_STRIPE_SIZE_DEFAULT 1048576u

/* File identifier, printed as Lustre prints it: [0x200000400:0x1:0x0]. */
struct nacre_fid {
	uint64_t seq;
	uint32_t oid;
	uint32_t ver;
};

/* The root directory's fixed FID (Lustre's FID_SEQ_ROOT). */
#define NACRE_ROOT_SEQ 0x200000007ULL
#define NACRE_ROOT_OID 1u
/* Sequence of the first normal FID allocated by an MDT. */
#define NACRE_FIRST_SEQ 0x200000400ULL

/* Print buffer size for a FID: "[0x" 16 ":0x" 8 ":0x" 8 "]" NUL. */
#define NACRE_FID_STR_MAX 48

struct nacre_time {
	int64_t sec;
	uint32_t nsec;
};

/* HSM state bits: Lustre's values so `hsm_state` output matches `lfs hsm_state`. */
enum {
	NACRE_HS_EXISTS = 0x1,
	NACRE_HS_DIRTY = 0x2,
	NACRE_HS_RELEASED = 0x4,
	NACRE_HS_ARCHIVED = 0x8,
	NACRE_HS_NORELEASE = 0x10,
	NACRE_HS_NOARCHIVE = 0x20,
	NACRE_HS_LOST = 0x40,
};

/* HSM user requests (Lustre's enum hsm_user_action). */
enum {
	NACRE_HUA_ARCHIVE = 10,
	NACRE_HUA_RESTORE = 11,
	NACRE_HUA_RELEASE = 12,
	NACRE_HUA_REMOVE = 13,
	NACRE_HUA_CANCEL = 14,
};

/* HSM actions run by a copytool (Lustre's enum hsm_copytool_action). */
enum {
	NACRE_HSMA_ARCHIVE = 20,
	NACRE_HSMA_RESTORE = 21,
	NACRE_HSMA_REMOVE = 22,
	NACRE_HSMA_CANCEL = 23,
};

/* Status of a queued HSM action (Lustre's enum agent_req_status). */
enum {
	NACRE_HAS_WAITING = 0,
	NACRE_HAS_STARTED = 1,
	NACRE_HAS_FAILED = 2,
	NACRE_HAS_CANCELED = 3,
	NACRE_HAS_SUCCEED = 4,
};

/* One action of the HSM coordinator queue, as `nacre hsm list` and copytools see it. */
/* Where an archived file's copy is, kept on the file as trusted xattrs (root reads and
 * writes them; the MDS and the copytool keep them, see docs and hsm/backend.h):
 * NACRE_HSM_PATH_XATTR the object name relative to the archive location, fixed at import
 * or first archive and kept through renames; NACRE_HSM_ORIGIN_XATTR that location (the
 * backend URL without trailing '/', e.g. "s3://bucket/prefix"). Both go when the copy is
 * removed. */
#define NACRE_HSM_PATH_XATTR "trusted.nacre.hsm_path"
#define NACRE_HSM_ORIGIN_XATTR "trusted.nacre.hsm_origin"

struct nacre_hsm_action {
	uint64_t cookie;      /* unique id of the action, never reused */
	uint32_t action;      /* NACRE_HSMA_* */
	uint32_t status;      /* NACRE_HAS_* */
	struct nacre_fid fid;
	uint32_t archive_id;
	uint32_t flags;
	uint64_t bytes_done;
	uint64_t bytes_total; /* 0 while unknown */
	int32_t err;          /* final error of a FAILED action (negative errno), else 0 */
	struct nacre_time ctime; /* queued */
	struct nacre_time mtime; /* last change */
	char path[NACRE_PATH_MAX + 1]; /* archive object name ("" until known, for ARCHIVE) */
};

/* Changelogs (docs/changelog.md): record types with Lustre's numbers and names, as
 * `lfs changelog` prints them ("01CREAT"). */
enum {
	NACRE_CL_MARK = 0,
	NACRE_CL_CREATE = 1,
	NACRE_CL_MKDIR = 2,
	NACRE_CL_HARDLINK = 3,
	NACRE_CL_SOFTLINK = 4,
	NACRE_CL_MKNOD = 5,
	NACRE_CL_UNLINK = 6,
	NACRE_CL_RMDIR = 7,
	NACRE_CL_RENAME = 8,
	NACRE_CL_EXT = 9, /* RNMTO: never written (a rename is one RENME record) */
	NACRE_CL_OPEN = 10,
	NACRE_CL_CLOSE = 11,
	NACRE_CL_LAYOUT = 12,
	NACRE_CL_TRUNC = 13,
	NACRE_CL_SETATTR = 14,
	NACRE_CL_XATTR = 15,
	NACRE_CL_HSM = 16,
	NACRE_CL_MTIME = 17,
	NACRE_CL_CTIME = 18,
	NACRE_CL_ATIME = 19,
	NACRE_CL_LAST = 20, /* types 20.. (MIGRT, FLRW, ...) are not written */
};
/* Record flags (Lustre's): the low 12 bits are per type; the high bits say which parts
 * are present. */
#define NACRE_CLF_FLAGMASK 0x0fffu
#define NACRE_CLF_JOBID 0x4000u       /* jobid is set */
#define NACRE_CLF_RENAME 0x2000u      /* sfid, spfid, sname are set */
#define NACRE_CLF_EXTRA_FLAGS 0x8000u /* xflags says which extras are set */
#define NACRE_CLF_UNLINK_LAST 0x0001u       /* UNLNK: the last name went */
#define NACRE_CLF_UNLINK_HSM_EXISTS 0x0002u /* UNLNK: it has an archive copy */
#define NACRE_CLF_RENAME_LAST 0x0001u        /* RENME: the target's last name went */
#define NACRE_CLF_RENAME_LAST_EXISTS 0x0002u /* RENME: and it had an archive copy */
/* HSM: bits 0..6 error, 7..9 event (NACRE_CL_HE_*), 10 dirty */
enum {
	NACRE_CL_HE_ARCHIVE = 0,
	NACRE_CL_HE_RESTORE = 1,
	NACRE_CL_HE_CANCEL = 2,
	NACRE_CL_HE_RELEASE = 3,
	NACRE_CL_HE_REMOVE = 4,
	NACRE_CL_HE_STATE = 5,
};
#define NACRE_CLFE_UIDGID 0x0001u /* extras: uid and gid of the caller */
#define NACRE_CLFE_XATTR 0x0008u  /* extras: the xattr name of an XATTR record */
#define NACRE_CL_USER_MAX 16      /* "cl4294967295" */
struct nacre_changelog_rec {
	uint64_t index;
	uint32_t type;  /* NACRE_CL_* */
	uint32_t flags; /* NACRE_CLF_* */
	struct nacre_time time;
	struct nacre_fid tfid; /* target: the inode changed (zero for a plain rename) */
	struct nacre_fid pfid; /* the parent of name (zero without a name) */
	struct nacre_fid sfid; /* NACRE_CLF_RENAME: the inode renamed */
	struct nacre_fid spfid; /* NACRE_CLF_RENAME: its old parent */
	uint32_t xflags; /* NACRE_CLF_EXTRA_FLAGS: NACRE_CLFE_* */
	uint32_t uid, gid;
	char name[NACRE_NAME_MAX + 1];  /* "" if none */
	char sname[NACRE_NAME_MAX + 1]; /* NACRE_CLF_RENAME: the old name */
	char xattr[NACRE_NAME_MAX + 1]; /* NACRE_CLFE_XATTR */
	char jobid[NACRE_JOBID_MAX + 1]; /* NACRE_CLF_JOBID: the caller's job */
};

/* Attributes of one inode as the MDS holds them. mode includes the S_IFMT type bits. */
struct nacre_attr {
	struct nacre_fid fid;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t rdev;
	uint32_t blksize; /* the stripe size for regular files */
	uint64_t size;
	uint64_t blocks; /* 512-byte units */
	struct nacre_time atime;
	struct nacre_time mtime;
	struct nacre_time ctime;
	uint32_t hsm_state;
	uint32_t archive_id;
};

/* Which fields of a setattr are meant (bit mask in nacre_setattr.valid). */
enum {
	NACRE_SET_MODE = 1 << 0,
	NACRE_SET_UID = 1 << 1,
	NACRE_SET_GID = 1 << 2,
	NACRE_SET_SIZE = 1 << 3,
	NACRE_SET_ATIME = 1 << 4,
	NACRE_SET_MTIME = 1 << 5,
	NACRE_SET_ATIME_NOW = 1 << 6,
	NACRE_SET_MTIME_NOW = 1 << 7,
	NACRE_SET_CTIME = 1 << 8,
	NACRE_SET_ALL_ = (1 << 9) - 1,
};

struct nacre_setattr {
	uint32_t valid;
	uint32_t mode; /* permission bits only (07777) */
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	struct nacre_time atime;
	struct nacre_time mtime;
	struct nacre_time ctime;
};

enum { NACRE_PATTERN_RAID0 = 1 };

/* A RAID0 layout. For a directory default, stripe_count may be 0 (file system default) or
 * -1 (every OST), stripe_offset -1 (MDS chooses) and nosts is 0. For a file, nosts ==
 * stripe_count and ost_idx[] lists the OST of each stripe. A file's objects are named by
 * (fid, stripe index, gen): a new gen means new objects. */
struct nacre_layout {
	uint32_t pattern;
	uint32_t stripe_size;
	int32_t stripe_count;
	int32_t stripe_offset;
	uint32_t gen;
	uint32_t nosts;
	uint32_t ost_idx[NACRE_MAX_STRIPES];
};

/* Who is asking: the MDS checks permissions with these. A caller with more than
 * NACRE_CRED_GROUPS supplementary groups registers the whole list with the MDS once
 * (nacre_groups_cred) and carries its token: requests do not grow, and a cred stays a small
 * value to copy. */
/* ORed into the mode given to nacre_create, nacre_create_open, nacre_mkdir and nacre_mknod
 * with the caller's umask u: the permission bits are then as the application asked and the
 * MDS applies u, unless the parent directory has a default ACL, which takes the umask's
 * place (POSIX.1e). Without it the MDS applies no umask (the caller did). */
#define NACRE_MODE_UMASK(u) (0x80000000u | (((uint32_t)(u) & 0777u) << 16))
#define NACRE_MODE_UMASK_BITS 0x81ff0000u

struct nacre_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngroups;                  /* in groups[] */
	uint32_t groups[NACRE_CRED_GROUPS];
	uint64_t groups_token;             /* nonzero: all the groups are the list registered
					    * under it (groups[] holds the first of them) */
	uint32_t flags;                    /* NACRE_CRED_* */
	char jobid[NACRE_JOBID_MAX + 1];   /* the caller's job ("" = none), as Lustre's jobid:
					    * printable ASCII, no space */
};
/* cred flags: the caller's kernel rules the MDS applies too */
#define NACRE_CRED_PROTECTED_HARDLINKS 1u /* fs.protected_hardlinks is 1 on the client: a
					   * LINK needs the kernel's may_linkat rule */

/* One directory entry from readdir. cookie resumes the listing after this entry. */
struct nacre_dirent {
	uint64_t cookie;
	struct nacre_fid fid;
	uint32_t type; /* S_IFMT bits */
	char name[NACRE_NAME_MAX + 1];
};

/* Space of one target (or the sum over all OSTs), in KiB and inodes, as `lfs df` shows it. */
struct nacre_statfs {
	uint64_t kb_total;
	uint64_t kb_free;
	uint64_t kb_avail;
	uint64_t files;
	uint64_t ffree;
	uint32_t bsize;
	uint32_t namemax;
};

/* One target in the cluster registry. */
struct nacre_target {
	uint32_t type; /* NACRE_TGT_MDT or NACRE_TGT_OST */
	uint32_t index;
	uint32_t up;   /* 1 while its server is connected to the MDS */
	char addr[NACRE_ADDR_MAX + 1];
	struct nacre_statfs st;
};

enum { NACRE_TGT_MDT = 1, NACRE_TGT_OST = 2 };

/* The MDS's recovery window (docs/recovery.md), as Lustre's recovery_status shows it. */
enum { NACRE_RECOVERY_COMPLETE = 0, NACRE_RECOVERY_RECOVERING = 1 };
struct nacre_recovery_status {
	uint32_t state;             /* NACRE_RECOVERY_* */
	int64_t start;              /* when the window opened, seconds since the epoch; 0 when
				     * the MDS had no client to wait for at start */
	uint32_t duration_s;        /* how long recovery took (so far, while recovering) */
	uint32_t time_left_s;       /* while recovering: until the window closes */
	uint32_t clients_expected;  /* clients the MDS knew at start, and waits for */
	uint32_t clients_connected; /* of those, back */
	uint32_t clients_replayed;  /* have sent all their replays */
	uint32_t clients_completed; /* have their open files and locks back too */
	uint32_t clients_evicted;   /* did not come back within the window */
	uint64_t replayed;          /* requests replayed */
	uint64_t queued;            /* requests waiting for recovery now */
	uint64_t last_transno;      /* the last change committed */
	uint64_t last_committed;    /* the last change known to be on disk */
};

#endif
