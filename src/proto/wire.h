/* wire.h - the nacre wire protocol: the single source of truth.
 *
 * Every connection carries frames. A frame is a fixed 36-byte little-endian header, then
 * body_len bytes of body, then bulk_len bytes of bulk data (file contents), whose CRC-32C is
 * in the header. Replies echo the request's opcode and xid, set WIRE_FLAG_REPLY and carry a
 * status (0 or a negative Linux errno / NACRE_E* code). Many requests may be in flight on one
 * connection; replies may come out of order and are matched by xid.
 *
 * Bodies are sequences of fields encoded by the functions below over a bounded cursor
 * (cursor.h); a struct never goes on the wire. Opcode values are never renumbered. New
 * fields go at the end of a body, behind a feature bit negotiated in CONNECT.
 *
 *   header (36 bytes)                      version 1
 *     u32 magic       WIRE_MAGIC
 *     u16 version     WIRE_VERSION
 *     u16 opcode
 *     u32 flags       WIRE_FLAG_*
 *     u32 body_len    <= WIRE_BODY_MAX (WIRE_BODY_BIG_MAX for WIRE_OPF_BIG_BODY opcodes)
 *     u64 xid         request id, chosen by the sender of the request
 *     i32 status      replies only; 0 in requests
 *     u32 bulk_len    <= WIRE_BULK_MAX
 *     u32 bulk_crc    crc32c of the bulk bytes (0 when bulk_len is 0)
 */
#ifndef NACRE_WIRE_H
#define NACRE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/key.h"
#include "nacre/nacre_types.h"
#include "proto/cursor.h"

#define WIRE_MAGIC 0x5243414eu /* "NACR" in little-endian bytes */
#define WIRE_VERSION 1
#define WIRE_HDR_LEN 36
#define WIRE_BODY_MAX (64u * 1024u)
/* The bodies of the xattr opcodes (WIRE_OPF_BIG_BODY): a 64 KiB value (Linux's
 * XATTR_SIZE_MAX) and the rest of the request. Larger than WIRE_BODY_MAX only with
 * WIRE_FEAT_XATTR_64K, so a peer that predates it never sees one. */
#define WIRE_BODY_BIG_MAX (WIRE_BODY_MAX + 4096u)
/* An xattr value's largest size without WIRE_FEAT_XATTR_64K (it fits WIRE_BODY_MAX). */
#define WIRE_XATTR_MAX_V1 64000u
#define WIRE_BULK_MAX (16u * 1024u * 1024u)
#define WIRE_NONCE_LEN 16
#define WIRE_PROOF_LEN 32 /* HMAC-SHA256 */
#define WIRE_READDIR_MAX_BYTES (60u * 1024u)

enum {
	WIRE_FLAG_REPLY = 1u << 0,
};

/* Feature bits negotiated in CONNECT: the server answers with the bits both sides know. */
#define WIRE_FEAT_RECOVERY (1ull << 0) /* client ids, request and reply envelopes, reply
					* cache, resend and replay (docs/recovery.md) */
#define WIRE_FEAT_SEC (1ull << 1) /* wire security flavours: connect_req.sec and
				   * connect_rep.sec, proofs that bind the negotiation, and
				   * sealed frames after AUTH (see "wire security" below) */
#define WIRE_FEAT_CAPS (1ull << 2) /* object capabilities: the MDS puts a wire_cap in open,
				    * create and layout replies (docs/security.md) */
#define WIRE_FEAT_KEY_ID (1ull << 3) /* CONNECT names the key the peer proves: role, name,
				      * generation (docs/security.md, "Keys and roles") */
#define WIRE_FEAT_JOBID (1ull << 4) /* a cred may carry the caller's job id, and changelog
				     * records carry it (NACRE_CLF_JOBID) */
#define WIRE_FEAT_XATTR_64K (1ull << 5) /* xattr values and lists up to NACRE_XATTR_MAX
					 * (65536) bytes, in bodies up to WIRE_BODY_BIG_MAX;
					 * without it WIRE_XATTR_MAX_V1 */
#define WIRE_FEAT_ATIME (1ull << 6) /* close_req may carry a read's atime */
#define WIRE_FEAT_BLOCKS (1ull << 7) /* close_req may carry the blocks the file's objects
				      * hold (docs/protocol.md, "Allocated blocks") */
#define WIRE_FEAT_FID_GRANT (1ull << 8) /* the MDS grants a client sequences of FIDs
					 * (MDS_FID_GRANT) and a create may carry the FID
					 * the client chose from them (WIRE_CREATE_FID);
					 * needs WIRE_FEAT_RECOVERY (grants are per client id) */
#define WIRE_FEAT_BATCH (1ull << 9) /* the MDS applies BATCH requests (docs/writeback.md) */
#define WIRE_FEAT_READDIR_PLUS (1ull << 10) /* READDIR may ask each entry's attributes
					     * (WIRE_READDIR_PLUS) */
#define WIRE_FEAT_WB_LEASE (1ull << 11) /* the MDS grants write-back leases on directories
					 * (MDS_LEASE) and recalls them in NOTIFY_WAIT
					 * replies (WIRE_NOTIFY_RECALL) */
#define WIRE_FEAT_OST_JOBID (1ull << 12) /* an ost_io_req may carry the job id of the
					  * handle's opener after its cap (job_stats) */
/* The name of feature bit (0..63), for lctl's connect_flags ("recovery", "wb_lease"), or
 * NULL for a bit without one. */
const char *wire_feature_name(unsigned bit);
#define WIRE_FEATURES_SUPPORTED (WIRE_FEAT_RECOVERY | WIRE_FEAT_SEC | WIRE_FEAT_CAPS | \
				 WIRE_FEAT_KEY_ID | WIRE_FEAT_JOBID | WIRE_FEAT_XATTR_64K | \
				 WIRE_FEAT_ATIME | WIRE_FEAT_BLOCKS | WIRE_FEAT_FID_GRANT | \
				 WIRE_FEAT_BATCH | WIRE_FEAT_READDIR_PLUS | WIRE_FEAT_WB_LEASE | \
				 WIRE_FEAT_OST_JOBID)

/* Opcodes. Never renumber; add at the end of a family. Each has a row in the opcode table
 * (wire.c, read through wire_op_info): its request and reply messages, named here too. */
enum wire_opcode {
	/* any server */
	WIRE_OP_CONNECT = 1, /* req: connect_req; rep: connect_rep */
	WIRE_OP_AUTH = 2,    /* req: auth_req; rep: empty */
	WIRE_OP_PING = 3,    /* req/rep: empty */
	WIRE_OP_FAULT_SET = 4, /* req: fault_set_req; rep: fault_set_rep (the armed points) */

	/* MDS; every request body starts with a wire_cred */
	WIRE_OP_MDS_STATFS = 16,      /* req: cred_req; rep: statfs_rep */
	WIRE_OP_MDS_LOOKUP = 17,      /* req: name_req; rep: attr_rep */
	WIRE_OP_MDS_GETATTR = 18,     /* req: fid_req; rep: attr_rep */
	WIRE_OP_MDS_SETATTR = 19,     /* req: setattr_req; rep: attr_rep */
	WIRE_OP_MDS_CREATE = 20,      /* req: create_req; rep: create_rep */
	WIRE_OP_MDS_MKDIR = 21,       /* req: create_req; rep: attr_rep */
	WIRE_OP_MDS_MKNOD = 22,       /* req: create_req; rep: attr_rep */
	WIRE_OP_MDS_UNLINK = 23,      /* req: name_req; rep: empty */
	WIRE_OP_MDS_RMDIR = 24,       /* req: name_req; rep: empty */
	WIRE_OP_MDS_RENAME = 25,      /* req: rename_req; rep: empty */
	WIRE_OP_MDS_LINK = 26,        /* req: link_req; rep: attr_rep */
	WIRE_OP_MDS_SYMLINK = 27,     /* req: create_req (target set); rep: attr_rep */
	WIRE_OP_MDS_READLINK = 28,    /* req: fid_req; rep: path_rep (the target) */
	WIRE_OP_MDS_READDIR = 29,     /* req: readdir_req; rep: readdir_rep */
	WIRE_OP_MDS_OPEN = 30,        /* req: open_req; rep: open_rep */
	WIRE_OP_MDS_CLOSE = 31,       /* req: close_req; rep: attr_rep */
	WIRE_OP_MDS_SIZE_UPDATE = 32, /* req: close_req (handle stays open); rep: attr_rep */
	WIRE_OP_MDS_GETXATTR = 33,    /* req: xattr_req; rep: xattr_rep (xattr_len_rep if size 0) */
	WIRE_OP_MDS_SETXATTR = 34,    /* req: xattr_req; rep: empty */
	WIRE_OP_MDS_LISTXATTR = 35,   /* req: xattr_req (name empty); rep: as GETXATTR */
	WIRE_OP_MDS_REMOVEXATTR = 36, /* req: xattr_req; rep: empty */
	WIRE_OP_MDS_LAYOUT_GET = 37,  /* req: fid_req; rep: layout_rep */
	WIRE_OP_MDS_LAYOUT_SET = 38,  /* req: layout_set_req; rep: layout_rep */
	WIRE_OP_MDS_TARGETS = 39,     /* req: cred_req; rep: targets_rep */
	WIRE_OP_MDS_FID2PATH = 40,    /* req: fid_req; rep: path_rep */
	WIRE_OP_MDS_TARGET_REGISTER = 41, /* req: target_reg (from an OSS, no cred); rep: empty */
	WIRE_OP_MDS_TARGET_HEARTBEAT = 42, /* req: target_reg; rep: empty */
	WIRE_OP_MDS_SYNC = 43,        /* req: fid_req; rep: empty: namespace durable on disk */
	WIRE_OP_MDS_DISCONNECT = 44,  /* req: cred; rep: empty: a clean unmount, forget me */
	WIRE_OP_MDS_RECOVERY_DONE = 45, /* req: recovery_done_req; rep: empty, once the MDS's
					 * recovery reached that stage */
	WIRE_OP_MDS_RECOVERY_STATUS = 46, /* req: cred; rep: recovery_status */
	WIRE_OP_MDS_APPEND = 47,      /* req: append_req; rep: append_rep (the offset to write) */
	/* HSM (48..63); every request starts with a wire_cred */
	WIRE_OP_MDS_HSM_REQUEST = 48,   /* req: hsm_request; rep: hsm_request_rep */
	WIRE_OP_MDS_HSM_STATE_GET = 49, /* req: fid_req; rep: hsm_state */
	WIRE_OP_MDS_HSM_STATE_SET = 50, /* req: hsm_state_set; rep: hsm_state */
	WIRE_OP_MDS_HSM_ACTION = 51,    /* req: fid_req; rep: hsm_action_rep */
	WIRE_OP_MDS_HSM_LIST = 52,      /* req: hsm_list_req; rep: hsm_list_rep */
	WIRE_OP_MDS_HSM_AGENT_REGISTER = 53, /* req: hsm_agent_reg; rep: empty */
	WIRE_OP_MDS_HSM_AGENT_POLL = 54,     /* req: hsm_poll_req; rep: hsm_poll_rep */
	WIRE_OP_MDS_HSM_AGENT_PROGRESS = 55, /* req: hsm_progress; rep: hsm_progress_rep */
	WIRE_OP_MDS_HSM_IMPORT = 56,    /* req: hsm_import_req; rep: attr_rep */
	/* changelogs (docs/changelog.md): admin requests (server or admin key) */
	WIRE_OP_MDS_CL_REGISTER = 57,   /* req: changelog_req; rep: changelog_rep (user: the
					 * new "clN") */
	WIRE_OP_MDS_CL_DEREGISTER = 58, /* req: changelog_req (user); rep: changelog_rep */
	WIRE_OP_MDS_CL_READ = 59,       /* req: changelog_req (start, end, max_bytes); rep:
					 * changelog_rep + count cl_rec, by index */
	WIRE_OP_MDS_CL_CLEAR = 60,      /* req: changelog_req (user, end: 0 = all current);
					 * rep: changelog_rep */
	WIRE_OP_MDS_CL_MASK = 61,       /* req: changelog_req (flags say what to set); rep:
					 * changelog_rep (the mask after it) */
	WIRE_OP_MDS_FIND = 62, /* req: find_req; rep: find_rep + count find_ent: one page of a
				* namespace scan with predicates (docs/protocol.md, "find") */
	WIRE_OP_MDS_QUOTA = 84, /* req: quota_req; rep: quota_rep (+ count quota_drift for
				 * CHECK): get, set, grace, defaults, recount (docs/quota.md) */
	WIRE_OP_MDS_LINKS = 63,         /* req: links_req; rep: links_rep: the names (parent,
					 * name) of a FID, a page at a time */

	/* OSS; no cred: OSS requests come from authenticated nodes */
	WIRE_OP_OST_WRITE = 64,   /* req: ost_io_req + bulk; rep: empty */
	WIRE_OP_OST_READ = 65,    /* req: ost_io_req; rep: empty + bulk (short at object end) */
	WIRE_OP_OST_PUNCH = 66,   /* req: ost_io_req (offset = new object size); rep: empty */
	WIRE_OP_OST_DESTROY = 67, /* req: ost_io_req; rep: empty (missing object is fine) */
	WIRE_OP_OST_GETATTR = 68, /* req: ost_io_req; rep: ost_attr_rep */
	WIRE_OP_OST_STATFS = 69,  /* req: ost_io_req (only ost_idx); rep: statfs_rep */
	WIRE_OP_OST_SYNC = 70,    /* req: ost_io_req (offset/len: range, len 0 = all); rep: empty */
	WIRE_OP_OST_DESTROY_BATCH = 71, /* req: ost_destroy_req + count ost_obj;
					 * rep: ost_destroy_rep + nfailed ost_destroy_fail */
	WIRE_OP_OST_FALLOCATE = 72, /* req: ost_falloc_req; rep: empty: fallocate(2) of an
				     * object range (an older OSS: -EOPNOTSUPP) */
	WIRE_OP_OST_SEEK = 73,      /* req: ost_seek_req; rep: ost_seek_rep: SEEK_DATA or
				     * SEEK_HOLE in one object (an older OSS: -EOPNOTSUPP) */

	/* MDS locks (80..95); every request starts with a wire_cred */
	WIRE_OP_MDS_LOCK_SET = 80, /* req: lock_req; rep: empty; -EAGAIN on a conflict */
	WIRE_OP_MDS_LOCK_GET = 81, /* req: lock_req; rep: lock_rep (first conflicting lock) */
	WIRE_OP_MDS_LOCK_WAIT = 82, /* req: lock_req; rep: empty once granted (F_SETLKW) */
	WIRE_OP_MDS_LOCK_CANCEL = 83, /* req: lock_req; rep: empty: a waiting LOCK_WAIT of that
				       * owner and range ends with -EINTR */
	/* 84..95 reserved for locks */

	/* keys (docs/security.md): admin requests of the MDS, and its pushes to the OSSes */
	WIRE_OP_MDS_KEY_ISSUE = 100,  /* req: key_req; rep: key_list (the new entry): a new
				       * generation of a client or admin key (admin, server) */
	WIRE_OP_MDS_KEY_REVOKE = 101, /* req: key_req; rep: key_list (the entry) (admin, server) */
	WIRE_OP_MDS_KEY_LIST = 102,   /* req: cred_req; rep: key_list (admin, server) */
	WIRE_OP_OST_KEY_UPDATE = 103, /* req: key_update; rep: empty: the MDS's key table
				       * changed (server only) */
	/* MDS object capabilities (112..119); every request starts with a wire_cred */
	WIRE_OP_MDS_CAP_GET = 112, /* req: cap_req; rep: cap_rep: a fresh capability for an
				    * open handle, with the rights of its open */
	/* MDS callbacks (96..103); every request starts with a wire_cred */
	WIRE_OP_MDS_NOTIFY_WAIT = 96, /* req: notify_req; rep: notify_rep: a long poll the MDS
				       * answers with the FIDs whose mode, owner, group or ACL
				       * another client changed (docs/security.md) */
	WIRE_OP_MDS_GROUPS_SET = 97,  /* req: groups_set_req; rep: empty: registers a caller's
				       * group list (more than NACRE_CRED_GROUPS) under the token
				       * its creds then carry */
	/* 98, 99 reserved for callbacks */
	/* nodemaps (104..111): administration, and a client asking for its own rule */
	WIRE_OP_MDS_NODEMAP = 104, /* req: nodemap_req; rep: nodemap_rep (also with an error
				   * status: its text says what is wrong) */
	/* metadata write-back (120..127, docs/writeback.md) */
	WIRE_OP_MDS_FID_GRANT = 120, /* req: cred_req; rep: fid_grant_rep: a new sequence of
				      * FIDs for the calling client id alone (a change, kept
				      * on the MDT; never granted again) */
	WIRE_OP_MDS_BATCH = 121, /* req: batch_req; rep: batch_rep: namespace changes applied
				  * in order in one transaction, a result each */
	WIRE_OP_MDS_LEASE = 122, /* req: lease_req; rep: lease_rep: takes or gives back a
				  * write-back lease on a directory (not a change) */

	WIRE_OP_MAX_ = 128,
};

/* A row of the opcode table. The message names are those of the wire_<name>_encode/_decode
 * pairs below, or "empty" for a body of zero bytes. */
enum {
	/* Running it twice leaves the same state and gives the same answer: a client may
	 * resend it after a reconnect. */
	WIRE_OPF_IDEMPOTENT = 1u << 0,
	/* The MDS answers it on its event thread rather than on a worker: it never waits for
	 * anything but its own group commit. */
	WIRE_OPF_INLINE = 1u << 1,
	/* A change the MDS runs at most once per (client, xid): its transaction writes a
	 * reply-cache record, a resend or replay is answered from it (docs/recovery.md). */
	WIRE_OPF_REPLY_CACHE = 1u << 2,
	/* Its request and reply bodies may reach WIRE_BODY_BIG_MAX (the xattr calls). */
	WIRE_OPF_BIG_BODY = 1u << 3,
	/* Changes names, attributes, xattrs, layouts or HSM state: refused to a read-only
	 * nodemap. (OPEN and QUOTA change only with some bodies: the MDS looks at those.) */
	WIRE_OPF_CHANGE = 1u << 4,
	/* Its body is the caller's credentials, then the FID it acts on: checked against the
	 * caller's fileset. (CLOSE, SIZE_UPDATE and APPEND act through an open handle, checked
	 * at open.) */
	WIRE_OPF_CRED_FID = 1u << 5,
	/* Grows the MDT's store (an inode, a name, a layout, an xattr): refused once the MDT is
	 * full, but for the room kept for removals. */
	WIRE_OPF_TAKES_SPACE = 1u << 6,
	/* Allocates OST objects: right after an MDS start it waits for the OSTs to register. */
	WIRE_OPF_OST_OBJECTS = 1u << 7,
	/* Never waits for the recovery window: the servers' own calls, status, callbacks. */
	WIRE_OPF_RECOVERY_PASS = 1u << 8,
	/* Brings back a client's state after its replays (opens, locks): during recovery it
	 * waits for the re-open phase. */
	WIRE_OPF_REOPEN = 1u << 9,
};
struct wire_cursor;
/* A message's codec with the message's type erased, for the table: msg points to the
 * struct wire_<name> of the row's message. */
typedef void (*wire_encode_fn)(struct wire_cursor *c, const void *msg);
typedef void (*wire_decode_fn)(struct wire_cursor *c, void *msg);
struct wire_op_info {
	const char *name; /* "MDS_LOOKUP" */
	const char *req;  /* request message: "name_req" */
	const char *rep;  /* reply message: "attr_rep" */
	uint32_t flags;   /* WIRE_OPF_* */
	/* wire_<req>_encode/_decode and wire_<rep>_encode/_decode; NULL for "empty" */
	wire_encode_fn req_encode;
	wire_decode_fn req_decode;
	wire_encode_fn rep_encode;
	wire_decode_fn rep_decode;
};

/* The table's row for opcode (static storage), or NULL for an unknown opcode. Thread-safe. */
const struct wire_op_info *wire_op_info(uint16_t opcode);
/* Returns a static name for an opcode ("MDS_LOOKUP"), or "UNKNOWN". Thread-safe. */
const char *wire_opcode_name(uint16_t opcode);
/* 1 if opcode is known and its row has every WIRE_OPF_* bit of flags, else 0. Thread-safe. */
int wire_op_has(uint16_t opcode, uint32_t flags);
/* 1 if opcode is known and idempotent, else 0. Thread-safe. */
int wire_op_idempotent(uint16_t opcode);
/* 1 if opcode is known and answered on the MDS event thread, else 0. Thread-safe. */
int wire_op_inline(uint16_t opcode);
/* 1 if opcode is a change the MDS's reply cache keeps exactly-once, else 0. Thread-safe. */
int wire_op_reply_cached(uint16_t opcode);
/* The largest body (envelope included) of opcode's requests and replies: WIRE_BODY_MAX, or
 * WIRE_BODY_BIG_MAX for WIRE_OPF_BIG_BODY. Thread-safe. */
uint32_t wire_op_body_max(uint16_t opcode);

/* ---- frame header ---- */
struct wire_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t opcode;
	uint32_t flags;
	uint32_t body_len;
	uint64_t xid;
	int32_t status;
	uint32_t bulk_len;
	uint32_t bulk_crc;
};

/* Writes the 36-byte header to out. */
void wire_hdr_encode(const struct wire_hdr *h, uint8_t out[WIRE_HDR_LEN]);
/* Decodes and validates a header: magic, version, body and bulk limits.
 * Returns 0, -NACRE_EBADMAGIC, -NACRE_EPROTO_VERSION or -EPROTO (a length over its limit). */
int wire_hdr_decode(const uint8_t in[WIRE_HDR_LEN], struct wire_hdr *h);

/* ---- shared field groups ---- */
/* time: i64 sec, u32 nsec; get fails the cursor (-EPROTO) on nsec >= 1e9 */
void wire_time_put(struct wire_cursor *c, const struct nacre_time *t);
void wire_time_get(struct wire_cursor *c, struct nacre_time *t);
/* lstr: u32 length, the bytes, no NUL; NULL is written as "". dup returns a heap copy,
 * NUL-terminated (the caller frees it), or NULL with the cursor failed: -EPROTO (more
 * than max bytes, a NUL, short) or -ENOMEM. */
void wire_lstr_put(struct wire_cursor *c, const char *s);
char *wire_lstr_dup(struct wire_cursor *c, uint32_t max);
void wire_fid_put(struct wire_cursor *c, const struct nacre_fid *fid);
void wire_fid_get(struct wire_cursor *c, struct nacre_fid *fid);
/* 1 if s (len bytes) can be a job id: 1..NACRE_JOBID_MAX printable ASCII, no space. */
int wire_jobid_valid(const char *s, size_t len);
void wire_cred_put(struct wire_cursor *c, const struct nacre_cred *cr);
void wire_cred_get(struct wire_cursor *c, struct nacre_cred *cr); /* ngroups <= CRED checked */
/* The token of a sorted, duplicate-free group list of n (the name GROUPS_SET registers it
 * under). Never 0. Pure. */
uint64_t wire_groups_token(const uint32_t *groups, uint32_t n);

void wire_attr_put(struct wire_cursor *c, const struct nacre_attr *a);
void wire_attr_get(struct wire_cursor *c, struct nacre_attr *a);
void wire_statfs_put(struct wire_cursor *c, const struct nacre_statfs *s);
void wire_statfs_get(struct wire_cursor *c, struct nacre_statfs *s);
/* Layout encoding leaves room for composite layouts and mirrors: u16 component count, then
 * per component u64 extent start, u64 extent end, u16 mirror id, u32 pattern, u32 stripe
 * size, i32 stripe count, i32 stripe offset, u32 gen, u32 nosts, u32 ost[nosts]. Version 1
 * has exactly one component [0, EOF) in mirror 0; get() fails the cursor on anything else,
 * on nosts > NACRE_MAX_STRIPES and on an unknown pattern. */
void wire_layout_put(struct wire_cursor *c, const struct nacre_layout *l);
void wire_layout_get(struct wire_cursor *c, struct nacre_layout *l);
/* A name: u16 length then bytes. get() checks 1..NACRE_NAME_MAX bytes, no NUL, no '/', not
 * "." or "..", and writes a NUL-terminated copy to out (NACRE_NAME_MAX + 1 bytes). */
void wire_name_put(struct wire_cursor *c, const char *name);
void wire_name_get(struct wire_cursor *c, char out[NACRE_NAME_MAX + 1]);
/* A path or symlink target: u16 length then bytes, 0..max bytes (max <= NACRE_PATH_MAX), no
 * NUL; copied NUL-terminated to out (max + 1 bytes). */
void wire_path_put(struct wire_cursor *c, const char *path);
void wire_path_get(struct wire_cursor *c, char *out, size_t max);

/* ---- object capabilities (since version 1, with WIRE_FEAT_CAPS) ----
 * A capability the MDS minted (common/cap.h): u64 expiry (seconds since the epoch), u32
 * rights (CAP_* bits), u32 stripe (one stripe, or CAP_STRIPE_ALL = 0xffffffff), u8 mac[16]
 * = HMAC-SHA256(capability key, FID, layout generation, stripe, rights, client, expiry)
 * truncated. The FID and generation are those of the request that carries it; the client
 * is the session id of the connection it arrives on. */
#define WIRE_CAP_LEN 32
#define WIRE_CAP_MAC_LEN 16
struct wire_cap {
	uint64_t expiry;
	uint32_t rights; /* unknown bits fail the decode */
	uint32_t stripe;
	uint8_t mac[WIRE_CAP_MAC_LEN];
};
void wire_cap_put(struct wire_cursor *c, const struct wire_cap *cap);
void wire_cap_get(struct wire_cursor *c, struct wire_cap *cap);

/* ---- connection setup ----
 * CONNECT: the client proposes versions and a nonce; the server answers with its nonce and a
 * proof that it holds the cluster key: HMAC-SHA256(key, "nacre-server" || cnonce || snonce).
 * AUTH: the client proves the key: HMAC-SHA256(key, "nacre-client" || snonce || cnonce).
 * Until AUTH succeeds a server answers every other opcode with -NACRE_EAUTH and closes.
 * Before AUTH only CONNECT then AUTH may come, each with a body of at most
 * WIRE_HANDSHAKE_BODY_MAX bytes and no bulk (checked from the header, before the body is
 * read); anything else closes the connection.
 *
 * Wire security (WIRE_FEAT_SEC, as Lustre SSK's flavours). The client asks for a flavour in
 * connect_req.sec; with WIRE_SEC_RAISE in sec_flags it accepts the server's minimum for it
 * if that is higher. The server answers with the flavour of the connection in
 * connect_rep.sec, or refuses a flavour below its minimum with -NACRE_ESEC and a sec_refusal
 * body naming the rule. With WIRE_FEAT_SEC
 * negotiated both proofs use the label "nacre-server"/"nacre-client" followed by
 * " f=<req features>/<rep features> sec=<asked>/<chosen>" (hex, hex, decimal, decimal; asked
 * is sec + 16 * sec_flags), so a
 * relay that changes the features or the flavours fails the handshake (no downgrade).
 * A client without WIRE_FEAT_SEC gets -NACRE_EPROTO_VERSION from a server whose minimum is
 * above null. Session keys (proto/sec.h): HKDF-SHA256 over the key the peer proved, salt
 * cnonce || snonce, info "nacre-sec c2s <sec>" / "nacre-sec s2c <sec>", 36 bytes each: an
 * AES-256 key and a 4-byte nonce prefix. On an integrity or privacy connection every frame
 * after the AUTH reply, both ways, is sealed with AES-256-GCM under its direction's key,
 * nonce = prefix || u64 big-endian frame number (0, 1, ... per direction, never sent):
 *   integrity: header, body and bulk are additional data; privacy: the header is, body and
 *   bulk are encrypted in place (same length).
 * The 16-byte tag follows the bulk (counted in neither body_len nor bulk_len) and bulk_crc
 * is 0: the tag covers the bulk. A frame that fails its tag (altered, injected, replayed,
 * reordered or after a dropped one) closes the connection. */
#define WIRE_HANDSHAKE_BODY_MAX 1024u /* today a CONNECT is ~330 bytes, an AUTH 32 */
enum {
	WIRE_SEC_NULL = 0,      /* nothing after the handshake is protected */
	WIRE_SEC_INTEGRITY = 1, /* every frame authenticated and numbered */
	WIRE_SEC_PRIVACY = 2,   /* integrity, and body and bulk encrypted */
	WIRE_SEC_MAX_ = WIRE_SEC_PRIVACY,
};
enum {
	WIRE_SEC_RAISE = 1u << 0, /* connect_req.sec_flags: the server may raise the flavour */
};
#define WIRE_TAG_LEN 16
#define WIRE_SEC_RULE_MAX 96
struct wire_sec_refusal { /* body of CONNECT's -NACRE_ESEC reply */
	uint8_t min;                        /* WIRE_SEC_*: the least the server accepts */
	char rule[WIRE_SEC_RULE_MAX + 1];   /* str: what set it, e.g. "--sec-min" */
};
/* With WIRE_FEAT_KEY_ID, after everything else in connect_req: the key the client proves
 * (a server key when absent). The server derives a client or admin key from its cluster key
 * (key.h) and proves and checks with that; then it checks the name's generation in its key
 * table at AUTH. */
struct wire_key_id {
	uint8_t role;                /* KEY_ROLE_* */
	char name[KEY_NAME_MAX + 1]; /* "" for a server key */
	uint64_t gen;
};
struct wire_connect_req {
	uint16_t version_min;
	uint16_t version_max;
	uint64_t features;
	uint8_t nonce[WIRE_NONCE_LEN];
	char fsname[NACRE_FSNAME_MAX + 1]; /* str; must match the server's */
	char name[NACRE_NAME_MAX + 1];     /* name: the peer's name for logs */
	/* with WIRE_FEAT_RECOVERY in features: */
	uint64_t client_id; /* random, for the mount's life; 0 = no session (a server) */
	uint64_t instance;  /* the server instance this client last held state with, 0 = none */
	/* with WIRE_FEAT_SEC in features: */
	uint8_t sec;        /* WIRE_SEC_*: the flavour asked for */
	uint8_t sec_flags;  /* WIRE_SEC_RAISE; unknown bits fail the decode */
	/* with WIRE_FEAT_KEY_ID in features (since the key table): */
	struct wire_key_id key;
};
/* connect_rep.session: what the server holds of the connecting client. */
enum {
	WIRE_SESSION_NEW = 0,     /* nothing: a new client, or one evicted */
	WIRE_SESSION_KNOWN = 1,   /* the same server instance: opens and locks are still held */
	WIRE_SESSION_RECOVER = 2, /* the server restarted and expects this client to replay */
};
struct wire_connect_rep {
	uint16_t version;
	uint64_t features;
	uint8_t nonce[WIRE_NONCE_LEN];
	uint8_t proof[WIRE_PROOF_LEN];
	char server_name[NACRE_NAME_MAX + 1]; /* e.g. "nacre-MDT0000" or "oss@host:port" */
	/* with WIRE_FEAT_RECOVERY in features: */
	uint64_t instance;       /* random per server start: a new one means a restart */
	uint32_t session;        /* WIRE_SESSION_* */
	uint32_t recovery_ms;    /* time left in the server's recovery window, 0 = none */
	uint64_t last_committed; /* highest transno on disk */
	/* with WIRE_FEAT_SEC in features: */
	uint8_t sec;             /* WIRE_SEC_*: the connection's flavour */
};
struct wire_auth_req {
	uint8_t proof[WIRE_PROOF_LEN];
};

/* ---- envelopes (with WIRE_FEAT_RECOVERY) ----
 * On a connection that negotiated WIRE_FEAT_RECOVERY every request body after the handshake
 * starts with a req_env and every reply body with a rep_env; the transport adds and strips
 * them, so message codecs never see them.
 *   req_env: u64 ack_xid, u64 transno, u32 flags, u32 replay_len   (24 bytes)
 *   rep_env: u64 transno, u64 last_committed                        (16 bytes)
 * ack_xid: the client's lowest xid still open (no reply, or a reply whose change is not yet
 * on disk): the server may forget what it keeps for every lower xid of that client.
 * transno: the server's commit sequence number of the change a request made (0 when it
 * changed nothing); last_committed: every transno up to it is on disk. A REPLAY carries the
 * transno of its first reply, and that reply's body after its own body (replay_len bytes),
 * so the server can make exactly what it made the first time (the same FID and layout). */
#define WIRE_REQ_ENV_LEN 24
#define WIRE_REP_ENV_LEN 16
enum {
	WIRE_ENV_RESEND = 1u << 0, /* this xid was sent before: answer from the reply cache */
	WIRE_ENV_REPLAY = 1u << 1, /* replay after a server restart (see docs/recovery.md) */
};
struct wire_req_env {
	uint64_t ack_xid;
	uint64_t transno;
	uint32_t flags;      /* WIRE_ENV_*; unknown bits fail the decode */
	uint32_t replay_len; /* REPLAY: bytes of the first reply at the end of the body, else 0 */
};
struct wire_rep_env {
	uint64_t transno;
	uint64_t last_committed;
};

/* ---- admin and recovery ---- */
#define WIRE_FAULT_SPEC_MAX 1024
struct wire_fault_set_req {
	char spec[WIRE_FAULT_SPEC_MAX + 1]; /* common/fault.h syntax; "" only reads */
};
struct wire_fault_set_rep {
	char armed[WIRE_FAULT_SPEC_MAX + 1]; /* the points armed afterwards */
};
enum {
	WIRE_RECOVERY_REPLAYED = 1, /* recovery_done_req.stage: my replays are all sent */
	WIRE_RECOVERY_COMPLETE = 2, /* my opens and locks are back too */
};
struct wire_recovery_done_req {
	struct nacre_cred cred;
	uint32_t stage; /* WIRE_RECOVERY_* */
};
enum {
	WIRE_RECOVERY_STATE_COMPLETE = 0,
	WIRE_RECOVERY_STATE_RECOVERING = 1,
};
struct wire_recovery_status { /* RECOVERY_STATUS reply, as Lustre's recovery_status */
	uint32_t state;            /* WIRE_RECOVERY_STATE_* */
	int64_t start;             /* when the window opened (seconds since the epoch), 0 none */
	uint32_t duration_s;       /* how long the last recovery took */
	uint32_t time_left_s;      /* while recovering */
	uint32_t clients_expected; /* sessions found on disk at start */
	uint32_t clients_connected;
	uint32_t clients_replayed; /* sent all their replays */
	uint32_t clients_completed;
	uint32_t clients_evicted;  /* did not come back in the window */
	uint64_t replayed;         /* requests replayed */
	uint64_t queued;           /* requests waiting for their turn now */
	uint64_t last_transno;
	uint64_t last_committed;
};
struct wire_append_req { /* APPEND: reserve len bytes at the end of a file (O_APPEND) */
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint64_t handle; /* the open handle writing */
	uint64_t len;    /* 1..INT64_MAX */
};
struct wire_append_rep {
	uint64_t offset; /* where the bytes go; the file's size is now offset + len */
};
/* NODEMAP (arrived with nodemaps, docs/security.md "Nodemaps"). cmd ADD: name, key = the
 * ranges (CIDR[,CIDR]), value = the client names (NAME[,NAME]); DEL: name; MODIFY: name, key
 * = property, value; LIST: nothing; TEST: key = an address, value = a client name (either
 * may be empty); SELF: nothing (a mount asks for its own rule: the reply's root is its
 * fileset's directory). Every command but SELF needs an admin rule. */
enum {
	WIRE_NODEMAP_ADD = 1,
	WIRE_NODEMAP_DEL = 2,
	WIRE_NODEMAP_MODIFY = 3,
	WIRE_NODEMAP_LIST = 4,
	WIRE_NODEMAP_TEST = 5,
	WIRE_NODEMAP_SELF = 6,
};
#define WIRE_NODEMAP_VALUE_MAX NACRE_PATH_MAX
#define WIRE_NODEMAP_TEXT_MAX 60000u
struct wire_nodemap_req {
	struct nacre_cred cred;
	uint32_t cmd;                            /* WIRE_NODEMAP_* */
	char name[NACRE_NAME_MAX + 1];           /* str 0..255 */
	char key[NACRE_NAME_MAX + 1];            /* str 0..255 */
	char value[WIRE_NODEMAP_VALUE_MAX + 1];  /* str 0..4096 */
};
struct wire_nodemap_rep {
	const char *text;      /* blob of text_len bytes, no NUL; decode: a view into the buffer */
	uint32_t text_len;     /* 0..WIRE_NODEMAP_TEXT_MAX */
	struct nacre_fid root; /* SELF: the directory that is the client's root */
};

/* Changelog requests (since version 1). One request message for the five opcodes: each
 * reads the fields it needs. The reply: the user concerned, the mask and extras, the index
 * range the MDS holds (first 0 when empty; last is the last index handed out), and for
 * READ count records with start <= index <= end (end 0: no end) in index order, at most
 * max_bytes of them (at least one if any), eof set when the reply holds the last. */
#define WIRE_CL_SET_MASK 1u   /* CL_MASK: set mask */
#define WIRE_CL_SET_XFLAGS 2u /* CL_MASK: set xflags (NACRE_CLFE_UIDGID | _XATTR) */
#define WIRE_CL_READ_MAX_BYTES (60u * 1024u)
struct wire_changelog_req {
	struct nacre_cred cred;
	char user[NACRE_CL_USER_MAX + 1]; /* str 0..16 */
	uint64_t start;
	uint64_t end;
	uint64_t mask;     /* bit per NACRE_CL_* type */
	uint32_t xflags;
	uint32_t flags;    /* WIRE_CL_SET_*; unknown bits fail the decode */
	uint32_t max_bytes;
};
struct wire_changelog_rep { /* followed by count cl_rec (READ) */
	char user[NACRE_CL_USER_MAX + 1]; /* str 0..16 */
	uint64_t mask;
	uint32_t xflags;
	uint32_t nusers;
	uint64_t first;
	uint64_t last;
	uint32_t count;
	uint8_t eof;
};

/* ---- MDS requests ---- */
struct wire_fid_req { /* GETATTR, READLINK, LAYOUT_GET, FID2PATH */
	struct nacre_cred cred;
	struct nacre_fid fid;
};
struct wire_name_req { /* LOOKUP, UNLINK, RMDIR */
	struct nacre_cred cred;
	struct nacre_fid parent;
	char name[NACRE_NAME_MAX + 1];
};
struct wire_setattr_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	struct nacre_setattr sa; /* valid masked to NACRE_SET_ALL_ */
};
/* CREATE flag: also open the file it makes, as OPEN would (the creator may open a new file
 * whatever its mode). The reply then ends with a u64 handle, 0 when the name existed (no
 * O_EXCL): the client opens that one with OPEN. Servers that predate the flag ignore it
 * and send no handle, which the client treats as 0. */
#define WIRE_CREATE_OPEN 0x80000000u
/* CREATE/MKDIR/MKNOD flag: mode is as the application asked and umask follows; the MDS
 * applies it unless the parent directory has a default ACL (POSIX.1e). */
#define WIRE_CREATE_UMASK 0x40000000u
/* CREATE/MKDIR/MKNOD/SYMLINK flag (WIRE_FEAT_FID_GRANT): the new inode takes fid, which
 * the client chose from a sequence the MDS granted it. A create whose FID exists under
 * that name already is the same create, answered as made (a resend or a replay). */
#define WIRE_CREATE_FID 0x20000000u
struct wire_create_req { /* CREATE, MKDIR, MKNOD, SYMLINK */
	struct nacre_cred cred;
	struct nacre_fid parent;
	char name[NACRE_NAME_MAX + 1];
	uint32_t mode;  /* type bits + permissions; umask applied by the client unless
			 * WIRE_CREATE_UMASK */
	uint32_t rdev;
	uint32_t flags; /* O_EXCL, WIRE_CREATE_OPEN */
	uint8_t has_layout;
	struct nacre_layout layout;             /* CREATE with has_layout */
	char target[NACRE_PATH_MAX + 1];        /* SYMLINK; encoded as a path, "" otherwise */
	uint32_t umask;                         /* with WIRE_CREATE_UMASK: 0..0777 */
	struct nacre_fid fid;                   /* with WIRE_CREATE_FID */
};
struct wire_rename_req {
	struct nacre_cred cred;
	struct nacre_fid sparent;
	char sname[NACRE_NAME_MAX + 1];
	struct nacre_fid dparent;
	char dname[NACRE_NAME_MAX + 1];
	uint32_t flags; /* RENAME_NOREPLACE 1, RENAME_EXCHANGE 2 */
};
struct wire_link_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	struct nacre_fid parent;
	char name[NACRE_NAME_MAX + 1];
};
/* READDIR flag (WIRE_FEAT_READDIR_PLUS): each entry comes with the inode's attributes, as
 * GETATTR gives them, when the caller may search the directory (as a lookup would need). */
#define WIRE_READDIR_PLUS 0x1u
struct wire_readdir_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint64_t cookie;
	uint32_t max_bytes; /* of encoded entries; capped at WIRE_READDIR_MAX_BYTES */
	uint32_t flags;     /* WIRE_READDIR_PLUS; encoded only when not 0 */
};
struct wire_open_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint32_t flags; /* open(2) flags, and WIRE_OPEN_EXEC */
};
/* In open_req.flags with O_RDONLY: an open for execve, the bit Linux calls __FMODE_EXEC
 * and FUSE passes in its open flags. It needs execute permission instead of read (a
 * program of mode 0711 runs for anyone); the handle may read all the same. */
#define WIRE_OPEN_EXEC 040u
struct wire_open_rep {
	struct nacre_attr attr;
	struct nacre_layout layout; /* nosts 0 for non-regular files */
	uint64_t handle;
	/* with WIRE_FEAT_CAPS, for a file with objects: */
	uint8_t has_cap;
	struct wire_cap cap;
};
/* close_req's trailing extras byte (wire.c) */
enum { WIRE_CLOSE_X_ATIME = 0x1, WIRE_CLOSE_X_BLOCKS = 0x2 };
struct wire_close_req { /* CLOSE, SIZE_UPDATE */
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint64_t handle;
	uint64_t size;      /* highest end written since the MDS last accepted this handle's
			     * size (0: none); the MDS keeps max(size, stored) */
	uint8_t has_mtime;  /* 1 if the client wrote: set mtime and ctime */
	struct nacre_time mtime;
	/* Optional trailing extras, each only to an MDS with its feature bit: */
	/* WIRE_FEAT_ATIME, CLOSE only: the handle was read at atime; the MDS keeps
	 * max(atime, stored) and leaves ctime alone (atime updates on read, docs/CONTRACTS.md) */
	uint8_t has_atime;
	struct nacre_time atime;
	/* WIRE_FEAT_BLOCKS: the client measured the objects after its writes */
	uint8_t has_blocks;
	uint64_t blocks;    /* sum of the objects' allocated 512-byte blocks: the MDS stores it */
};
struct wire_xattr_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	char name[NACRE_NAME_MAX + 1]; /* any bytes but NUL, 1..255; "" for LISTXATTR */
	uint32_t flags;                /* SETXATTR: XATTR_CREATE 1 / XATTR_REPLACE 2 */
	uint32_t size;                 /* GET/LIST: caller's buffer size, 0 = length only */
	const uint8_t *value;          /* SETXATTR: view into the receive buffer */
	uint32_t value_len;            /* <= NACRE_XATTR_MAX (WIRE_XATTR_MAX_V1 without
					* WIRE_FEAT_XATTR_64K) */
};
struct wire_layout_set_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	struct nacre_layout layout;
};
struct wire_target_reg { /* TARGET_REGISTER, TARGET_HEARTBEAT: one OST each */
	char fsname[NACRE_FSNAME_MAX + 1];
	uint32_t type; /* NACRE_TGT_OST */
	uint32_t index;
	char addr[NACRE_ADDR_MAX + 1]; /* where the OSS serves it: "host:port", then its
					* failover partner's after ',' */
	struct nacre_statfs st;
};

struct wire_cap_req { /* CAP_GET: renew the capability of an open handle */
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint64_t handle; /* the caller's open handle on fid */
	uint32_t layout_gen; /* of the layout the caller holds */
};

/* ---- MDS replies ---- */
struct wire_cred_req { /* STATFS, TARGETS: the caller's credentials, nothing else */
	struct nacre_cred cred;
};
struct wire_attr_rep { /* LOOKUP, GETATTR, SETATTR, MKDIR, MKNOD, LINK, SYMLINK, CLOSE,
			* SIZE_UPDATE, HSM_IMPORT */
	struct nacre_attr attr;
};
struct wire_create_rep { /* CREATE */
	struct nacre_attr attr;
	struct nacre_layout layout;
	uint8_t has_handle; /* the trailing handle is there: the request had WIRE_CREATE_OPEN */
	uint64_t handle;
	/* with WIRE_FEAT_CAPS, after a nonzero handle: */
	uint8_t has_cap;
	struct wire_cap cap;
};
/* LINKS: the hard links of a FID in link order (the order they were made in; a renamed
 * link moves last, as in Lustre's link EA), from index start. The MDS leaves out (and
 * counts in hidden) the links in a directory the caller may not search, as FID2PATH
 * refuses such a path; a fileset client sees only the links inside its fileset. */
struct wire_links_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint32_t start; /* index of the first link of the page */
};
#define WIRE_LINK_ENTRY_MIN (16 + 2 + 1)
#define WIRE_LINK_ENTRY_MAX (16 + 2 + NACRE_NAME_MAX)
#define WIRE_LINKS_MAX_BYTES (60u * 1024u) /* of entries in one reply */
struct wire_links_rep { /* followed by count link_entry */
	uint32_t count;  /* checked against the bytes present (WIRE_LINK_ENTRY_MIN each) */
	uint32_t hidden; /* links of this page left out (no search permission, fileset) */
	uint32_t next;   /* start of the next page */
	uint8_t eof;     /* nonzero: no link after this page */
};
struct wire_link_entry {
	struct nacre_fid parent;
	char name[NACRE_NAME_MAX + 1];
};
struct wire_path_rep { /* READLINK (the target), FID2PATH */
	char path[NACRE_PATH_MAX + 1];
};
struct wire_layout_rep { /* LAYOUT_GET, LAYOUT_SET */
	struct nacre_layout layout;
	/* with WIRE_FEAT_CAPS: LAYOUT_GET's capability (read, or no rights) */
	uint8_t has_cap;
	struct wire_cap cap;
};
/* FID_GRANT: oids 1..width of seq are the caller's (its client id's) to give new inodes */
struct wire_fid_grant_rep {
	uint64_t seq;
	uint32_t width;
};
#define WIRE_FID_GRANT_WIDTH_MAX (1u << 30)

/* BATCH (docs/writeback.md, "Batches"): a client's queued namespace changes, applied in
 * order in one MDT transaction, each as if it had come alone (its own cred, permission
 * checks, quota, changelog; nodemaps map each), a result each: a change that fails leaves
 * nothing behind and the next ones still run. A change is the body its opcode's request
 * would have alone; the opcodes a batch may carry are wire_batch_op_allowed's. A CREATE
 * opens nothing (WIRE_CREATE_OPEN is refused) and a SETATTR does not shrink a file (that
 * cuts objects first: send it alone). The results must fit one reply body whatever the
 * changes make: a batch whose worst case (each CREATE's reply with a layout of
 * NACRE_MAX_STRIPES stripes, wire_batch_result_max) exceeds WIRE_BODY_MAX is refused with
 * -E2BIG before anything runs. */
#define WIRE_BATCH_MAX 256u
struct wire_batch_change {
	uint16_t opcode;
	uint32_t len;
	const uint8_t *body; /* points into the decoded buffer */
};
struct wire_batch_req {
	struct nacre_cred cred; /* the sender's */
	uint32_t count;         /* 1..WIRE_BATCH_MAX */
	struct wire_batch_change ch[WIRE_BATCH_MAX];
};
struct wire_batch_result {
	int32_t status;      /* 0 or -errno; -EALREADY: made by an earlier execution of this
			      * request, whose result was not kept (a resend answered from the
			      * reply cache) */
	uint32_t len;        /* the reply body as alone (CREATE: create_rep without a
			      * handle; MKDIR, MKNOD, SYMLINK, LINK, SETATTR: attr_rep), 0
			      * for the others and for a failure */
	const uint8_t *body; /* points into the decoded buffer */
};
struct wire_batch_rep {
	uint32_t count; /* the request's count */
	struct wire_batch_result r[WIRE_BATCH_MAX];
};
/* 1 if a batch may carry opcode. */
int wire_batch_op_allowed(uint16_t opcode);
/* The most bytes a change of opcode's result may take in a batch_rep. Thread-safe. */
size_t wire_batch_result_max(uint16_t opcode);
/* 1 if every result of m fits one reply body, whatever the changes make. Thread-safe. */
int wire_batch_fits(const struct wire_batch_req *m);
struct wire_cap_rep { /* CAP_GET */
	uint32_t layout_gen; /* the generation the capability names */
	struct wire_cap cap;
};
struct wire_statfs_rep { /* MDS_STATFS (the file system), OST_STATFS (one OST) */
	struct nacre_statfs st;
};
struct wire_xattr_rep { /* GETXATTR, LISTXATTR with a size: the value or list, all the body */
	const uint8_t *value; /* view into the receive buffer */
	uint32_t len;
};
struct wire_xattr_len_rep { /* GETXATTR, LISTXATTR with size 0: the length it would have */
	uint32_t len; /* <= NACRE_XATTR_MAX */
};

/* READDIR reply: a readdir_rep, then count entries (wire_dirent_put/_get). An entry is
 * WIRE_DIRENT_FIXED bytes and its name; a page holds at most the request's max_bytes of
 * entries, and a server refuses a max_bytes that cannot hold the longest entry. */
#define WIRE_DIRENT_FIXED (8 + 16 + 4 + 2)
#define WIRE_DIRENT_MIN (WIRE_DIRENT_FIXED + 1)
#define WIRE_DIRENT_MAX (WIRE_DIRENT_FIXED + NACRE_NAME_MAX)
/* With WIRE_READDIR_PLUS every entry is followed by u8 has_attr (0 or 1) and, if 1, the
 * attr (WIRE_ATTR_SIZE bytes): wire_direntplus_put/_get. */
#define WIRE_ATTR_SIZE 100u
#define WIRE_DIRENT_PLUS_MAX (WIRE_DIRENT_MAX + 1 + WIRE_ATTR_SIZE)
struct wire_readdir_rep {
	uint32_t count; /* checked against the bytes present (WIRE_DIRENT_MIN each) */
	uint8_t eof;    /* nonzero: the directory has no entry after these */
};

/* TARGETS reply: a targets_rep, then count targets (wire_target_put/_get), the MDT first. */
#define WIRE_TARGET_MIN (4 + 4 + 1 + 2 + 48) /* a target with an empty addr */
struct wire_targets_rep {
	uint32_t count; /* checked against the bytes present (WIRE_TARGET_MIN each) */
};

/* ---- keys ----
 * KEY_ISSUE and KEY_REVOKE name a key; their reply, KEY_LIST's and OST_KEY_UPDATE's
 * request are a key_list: a header, then count entries (wire_key_entry_put/_get). */
struct wire_key_req {
	struct nacre_cred cred;
	uint32_t role;               /* ISSUE: KEY_ROLE_CLIENT or KEY_ROLE_ADMIN; REVOKE: 0 */
	char name[KEY_NAME_MAX + 1]; /* key_name_valid */
};
#define WIRE_KEY_ENTRY_MIN (2 + 1 + 1 + 8 + 4)
#define WIRE_KEY_LIST_MAX 512
struct wire_key_list {
	uint32_t count; /* <= WIRE_KEY_LIST_MAX, checked against the bytes present */
};
struct wire_key_update { /* OST_KEY_UPDATE: a key_list, as the MDS pushes it */
	uint32_t count;
};
struct wire_key_entry {
	char name[KEY_NAME_MAX + 1];
	uint32_t role;   /* KEY_ROLE_CLIENT or KEY_ROLE_ADMIN */
	uint64_t gen;
	uint32_t revoked; /* 0 or 1 */
};

/* ---- HSM ---- */
#define WIRE_HSM_FIDS_MAX 4000      /* fids in one HSM_REQUEST (16 bytes each) */
#define WIRE_HSM_ARCHIVES_MAX 32    /* archive ids one agent serves */
#define WIRE_HSM_POLL_MAX 64        /* actions in one poll or list reply */
#define WIRE_HSM_WAIT_MAX_MS 5000   /* longest a poll may wait on the MDS */
#define WIRE_HSM_STATE_BITS 0x7fu
enum {
	WIRE_HSM_PROGRESS_FINAL = 1u << 0, /* hsm_progress.flags: the action ended (status) */
	WIRE_HSM_REP_CANCEL = 1u << 0,     /* progress reply: the user canceled: stop */
};
struct wire_hsm_request { /* followed by nfids fids */
	struct nacre_cred cred;
	uint32_t action;     /* NACRE_HUA_* */
	uint32_t archive_id; /* 0 = the file's, else the MDS default */
	uint32_t flags;      /* reserved, 0 */
	uint32_t nfids;      /* 1..WIRE_HSM_FIDS_MAX; exactly nfids * 16 bytes follow */
};
struct wire_hsm_state { /* HSM_STATE_GET / _SET reply */
	uint32_t state;      /* NACRE_HS_* bits */
	uint32_t archive_id;
};
struct wire_hsm_state_set {
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint32_t set;        /* bits to set */
	uint32_t clear;      /* bits to clear (set and clear are disjoint) */
	uint32_t archive_id; /* 0 = keep */
};
struct wire_hsm_list_req {
	struct nacre_cred cred;
	uint64_t cookie;     /* list actions with a cookie above this one */
	uint32_t max;        /* capped at WIRE_HSM_POLL_MAX */
};
struct wire_hsm_agent_reg {
	struct nacre_cred cred;
	uint32_t max_active; /* actions this agent runs at once (its threads), >= 1 */
	uint32_t nids;       /* 0 = any archive id */
	uint32_t ids[WIRE_HSM_ARCHIVES_MAX];
};
struct wire_hsm_poll_req {
	struct nacre_cred cred;
	uint32_t max;        /* actions wanted, 1..WIRE_HSM_POLL_MAX */
	uint32_t wait_ms;    /* wait this long for work if none; capped at WIRE_HSM_WAIT_MAX_MS */
};
struct wire_hsm_progress {
	struct nacre_cred cred;
	uint64_t cookie;
	struct nacre_fid fid;
	uint64_t bytes_done;
	uint64_t bytes_total;
	uint32_t flags;  /* WIRE_HSM_PROGRESS_* */
	int32_t status;  /* with FINAL: 0 or a negative errno (-ECANCELED when canceled) */
	char path[NACRE_PATH_MAX + 1]; /* with FINAL of an ARCHIVE: the object name used; of
					* a failure: the name and the reason (shown by hsm list) */
};
struct wire_hsm_import_req {
	struct nacre_cred cred;
	struct nacre_fid parent;
	char name[NACRE_NAME_MAX + 1];
	uint32_t mode;       /* permission bits (07777); the type is always a regular file */
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	struct nacre_time mtime;
	uint32_t archive_id; /* >= 1 */
	char path[NACRE_PATH_MAX + 1]; /* archive object name */
};

/* HSM replies. The list replies are a header, then the items, each read with its _get. */
#define WIRE_HSM_POLL_REP_MAX 12 /* actions in one poll reply: each may carry a 4 KiB path */
struct wire_hsm_request_rep { /* followed by nfids i32 statuses (wire_hsm_rc_put/_get) */
	uint32_t nfids; /* <= WIRE_HSM_FIDS_MAX; exactly nfids * 4 bytes follow */
};
struct wire_hsm_action_rep { /* followed by one hsm_action when has is 1 */
	uint8_t has; /* 0: nothing queued or running for the file */
};
struct wire_hsm_list_rep { /* followed by count hsm_action, by cookie */
	uint32_t count; /* checked against the bytes present (WIRE_HSM_ACTION_MIN each) */
	uint8_t eof;    /* 0 or 1: no action after these */
};
struct wire_hsm_poll_rep { /* followed by count hsm_action handed to the agent */
	uint32_t count; /* checked against the bytes present (WIRE_HSM_ACTION_MIN each) */
};
struct wire_hsm_progress_rep {
	uint32_t flags; /* WIRE_HSM_REP_* */
};

/* ---- locks (since version 1) ----
 * POSIX (fcntl) byte-range locks and flock locks, held by the MDS. An owner is the pair
 * (client, owner): client is a random id a mount picks once (so locks survive a
 * reconnect), owner the kernel's lock owner (POSIX: the process's files; flock: the open
 * file). LOCK_SET never waits; LOCK_WAIT (F_SETLKW) is parked by the MDS until granted,
 * queued in arrival order (docs/protocol.md, Locks). */
#define WIRE_LOCK_EOF UINT64_MAX /* lock_req.end: to the end of the file, however it grows */
enum {
	WIRE_LOCK_POSIX = 0, /* lock_req.kind */
	WIRE_LOCK_FLOCK = 1, /* whole file; start and end are ignored and sent as 0, EOF */
};
enum {
	WIRE_LK_UNLCK = 0, /* lock_req.type, lock_rep.type */
	WIRE_LK_RDLCK = 1,
	WIRE_LK_WRLCK = 2,
};
struct wire_lock_req { /* LOCK_SET, LOCK_GET, LOCK_WAIT, LOCK_CANCEL */
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint64_t client; /* the mount's random id */
	uint64_t owner;  /* lock owner within the client */
	uint32_t pid;    /* of the locking process, for F_GETLK elsewhere */
	uint8_t kind;    /* WIRE_LOCK_* */
	uint8_t type;    /* WIRE_LK_*; GET: the lock that would be taken (RD or WR) */
	uint64_t start;  /* first byte */
	uint64_t end;    /* last byte, inclusive (>= start), or WIRE_LOCK_EOF */
};
struct wire_lock_rep { /* LOCK_GET: type WIRE_LK_UNLCK and the rest 0 if nothing conflicts */
	uint8_t type;
	uint64_t start;
	uint64_t end;
	uint32_t pid;
};

/* NOTIFY_WAIT: each client that caches attributes keeps one outstanding. The MDS parks it
 * until it has FIDs for the client (or for up to WIRE_NOTIFY_HOLD_MS, then answers it with
 * none); the next NOTIFY_WAIT acknowledges the batch before it (ack = its seq): only then
 * has the client dropped what it cached, and only then is the change that caused it
 * answered. A wait acknowledging less than was sent shows a batch lost to the client (its
 * wait ended first): it is answered at once with WIRE_NOTIFY_ALL. Not a change: never
 * replayed, resent freely (a new MDS instance starts seq at 0 and ignores acks above what
 * it sent). */
#define WIRE_NOTIFY_MAX 1024      /* FIDs in one reply; more become WIRE_NOTIFY_ALL */
#define WIRE_NOTIFY_HOLD_MS 2000  /* longest the MDS parks one (as often as a mount pings) */
enum {
	WIRE_NOTIFY_STOP = 1u << 0, /* req: answer my parked wait now and do not park this one
				     * (the client stops listening: unmount) */
	WIRE_NOTIFY_ALL = 1u << 0,  /* rep: too many changes: drop every cached attribute */
	WIRE_NOTIFY_RECALL = 1u << 1, /* rep (WIRE_FEAT_WB_LEASE): after the count FIDs come a
				       * u32 n (1..WIRE_NOTIFY_MAX) and n directory FIDs whose
				       * write-back leases the client must give back */
};
struct wire_notify_req {
	struct nacre_cred cred;
	uint64_t ack;   /* seq of the last batch processed, 0 = none */
	uint32_t flags; /* WIRE_NOTIFY_STOP */
};
struct wire_notify_rep { /* followed by count fids (and, with WIRE_NOTIFY_RECALL, the
			  * recalled directories) */
	uint64_t seq;   /* this batch's number; 0: nothing new (nothing to ack) */
	uint32_t flags; /* WIRE_NOTIFY_ALL */
	uint32_t count; /* 0..WIRE_NOTIFY_MAX; exactly count * 16 bytes follow */
};

/* LEASE (docs/writeback.md, "Leases"): GET asks an exclusive write-back lease on a directory
 * for the caller's client id; while it holds one, any other client's request that names the
 * directory waits until the holder gave it back (the MDS recalls it with WIRE_NOTIFY_RECALL)
 * or was evicted. A holder may answer from what it knows of the directory only until
 * WIRE_LEASE_MS after it sent the last request the MDS answered without recalling the lease:
 * the GET itself or a NOTIFY_WAIT; the MDS waits WIRE_LEASE_RECALL_MS for it before evicting
 * it, which is longer. GET is granted on an empty directory the caller may search (the
 * holder then knows every name in it: none), not to a read-only nodemap's client (-EROFS);
 * it fails -ENOTEMPTY, -EACCES, -ENOTDIR,
 * -EBUSY (another client holds it), -EAGAIN (the
 * caller keeps no NOTIFY_WAIT outstanding, or holds too many); PUT of a lease the caller does
 * not hold is a success (a recall and the holder's PUT may cross). Leases live in the MDS's
 * memory only: a restart ends them all (the client's socket changes, and it drops them).
 * A GET with WIRE_ENV_REPLAY is a reclaim: a client the restarted MDS's recovery window
 * waits for asks back, with its re-opens, a lease it held when the MDS went away, so that
 * what it queued under it reaches the MDS before anyone else's request; granted on a
 * directory that is not empty, without the callback poll (which comes after the recovery);
 * -ESTALE outside that client's recovery. */
#define WIRE_LEASE_MS 5000
#define WIRE_LEASE_RECALL_MS (WIRE_LEASE_MS + 2000)
enum { WIRE_LEASE_GET = 1, WIRE_LEASE_PUT = 2 };
struct wire_lease_req {
	struct nacre_cred cred;
	struct nacre_fid fid; /* the directory */
	uint32_t op;          /* WIRE_LEASE_GET or _PUT */
};
enum {
	/* the directory has a default ACL: what is made in it takes its mode and ACL from
	 * it, which only the MDS works out (the holder makes nothing there itself) */
	WIRE_LEASE_DEFAULT_ACL = 1u << 0,
};
struct wire_lease_rep {
	uint32_t flags; /* GET: WIRE_LEASE_*; PUT: 0 */
};

/* GROUPS_SET: a list of more than NACRE_CRED_GROUPS groups, sorted and without duplicates,
 * named by wire_groups_token(list); sent in chunks of at most WIRE_GROUPS_CHUNK, in order.
 * The MDS keeps lists in memory (bounded, least recently used dropped): a request whose
 * token it does not know fails -NACRE_EGROUPS, and the client registers it again; a client
 * registers its lists again after the MDS restarted, before its replays. */
#define WIRE_GROUPS_CHUNK 8192
struct wire_groups_set_req {
	struct nacre_cred cred;
	uint64_t token;
	uint32_t total;
	uint32_t first;
	uint32_t count;
	const uint32_t *list;  /* encode: the caller's count groups */
	const uint8_t *wire;   /* decode: view into the receive buffer (wire_groups_set_at) */
};
/* Group i (< m->count) of a decoded groups_set_req. */
uint32_t wire_groups_set_at(const struct wire_groups_set_req *m, uint32_t i);

/* ---- OSS requests ---- */
struct wire_ost_io_req {
	uint32_t ost_idx;
	struct nacre_fid fid;
	uint32_t stripe_idx;
	uint32_t layout_gen;
	uint64_t offset;
	uint64_t len; /* WRITE: must equal the bulk length; READ: <= WIRE_BULK_MAX */
	/* the capability for the object (trailing; an OSS refuses object requests without) */
	uint8_t has_cap;
	struct wire_cap cap;
	/* with has_cap and WIRE_FEAT_OST_JOBID: the job of the handle's opener ("" = none) */
	char jobid[NACRE_JOBID_MAX + 1];
};
struct wire_ost_attr_rep {
	uint64_t size;
	uint64_t blocks;
};

/* OST_FALLOCATE and OST_SEEK (since version 1; an OSS that predates them answers
 * -EOPNOTSUPP with an empty body). Both name the object and carry its capability as an
 * ost_io_req does, after their own first field.
 * OST_FALLOCATE: fallocate(2) of [offset, offset + len) of the object with the mode's bits
 * (Linux's values, as Lustre 2.16 takes them): 0 allocates (creating the object, growing
 * it to offset + len), KEEP_SIZE allocates without growing it, PUNCH_HOLE (with KEEP_SIZE)
 * frees the range (nothing to do for a missing object), ZERO_RANGE zeroes it (growing the
 * object unless KEEP_SIZE). len >= 1. Rights: CAP_WRITE.
 * OST_SEEK: lseek(2) SEEK_DATA or SEEK_HOLE from object offset `offset` (len 0). The
 * answer is an object offset; an object is a hole from its end on, for ever (so SEEK_HOLE
 * always has an answer: offset itself past the end, or for a missing object), and SEEK_DATA
 * with no data at or after offset answers -ENXIO. Rights: CAP_READ or CAP_WRITE. */
#define WIRE_FALLOC_KEEP_SIZE 0x01u  /* FALLOC_FL_KEEP_SIZE */
#define WIRE_FALLOC_PUNCH_HOLE 0x02u /* FALLOC_FL_PUNCH_HOLE: needs KEEP_SIZE */
#define WIRE_FALLOC_ZERO_RANGE 0x10u /* FALLOC_FL_ZERO_RANGE */
#define WIRE_FALLOC_MODES_ \
	(WIRE_FALLOC_KEEP_SIZE | WIRE_FALLOC_PUNCH_HOLE | WIRE_FALLOC_ZERO_RANGE)
#define WIRE_SEEK_DATA 3u /* SEEK_DATA */
#define WIRE_SEEK_HOLE 4u /* SEEK_HOLE */
struct wire_ost_falloc_req {
	uint32_t mode; /* WIRE_FALLOC_*: other bits, PUNCH_HOLE without KEEP_SIZE or with
			* ZERO_RANGE, or len 0 fail the decode */
	struct wire_ost_io_req io;
};
struct wire_ost_seek_req {
	uint32_t whence; /* WIRE_SEEK_DATA or WIRE_SEEK_HOLE; else the decode fails */
	struct wire_ost_io_req io;
};
struct wire_ost_seek_rep {
	uint64_t offset; /* <= INT64_MAX */
};

/* OST_DESTROY_BATCH (since version 1): the MDS's destroy log removes the objects of many
 * unlinked files on one OST with one request. The OSS removes every object in order (a
 * missing object is success, as for OST_DESTROY) and answers status 0 when all are gone,
 * else the first error, with the list of the objects it could not remove. An OSS that
 * predates the opcode answers -EOPNOTSUPP with an empty body: the MDS then sends one
 * OST_DESTROY per object. */
#define WIRE_OST_DESTROY_MAX 1024 /* objects in one request (24 bytes each) */
#define WIRE_OST_OBJ_LEN 24       /* encoded ost_obj */
#define WIRE_OST_DESTROY_FAIL_LEN 8 /* encoded ost_destroy_fail */
struct wire_ost_obj { /* an object, named as ost_io_req names it */
	struct nacre_fid fid;
	uint32_t stripe_idx; /* < NACRE_MAX_STRIPES */
	uint32_t layout_gen;
};
enum {
	WIRE_OST_DESTROY_CAP = 1u << 0, /* ost_destroy_req.flags: a wire_cap follows the header,
					 * a list capability over the objects' bytes */
};
struct wire_ost_destroy_req { /* followed by [a cap and] count ost_obj */
	uint32_t ost_idx; /* 0..65535 */
	uint32_t flags;   /* WIRE_OST_DESTROY_*; other bits fail the decode */
	uint32_t count;   /* 1..WIRE_OST_DESTROY_MAX; exactly count * 24 bytes follow */
	struct wire_cap cap; /* with WIRE_OST_DESTROY_CAP */
};
struct wire_ost_destroy_rep { /* followed by nfailed ost_destroy_fail, in request order */
	uint32_t nfailed; /* 0..WIRE_OST_DESTROY_MAX; exactly nfailed * 8 bytes follow */
};
struct wire_ost_destroy_fail { /* an object the OSS could not remove */
	uint32_t index; /* into the request's list; the receiver checks it against count */
	int32_t status; /* negative errno */
};

/* Encoders append to c; decoders read from c and leave it failed (wire_cursor_ok() false) on
 * any violation. After a decode, callers check wire_cursor_ok() and wire_cursor_left() == 0
 * (trailing bytes are allowed only behind a feature bit). */
/* QUOTA (wire_quota.c).
 * quota_req: cred, u32 op (WIRE_QUOTA_*), u32 type (0 user, 1 group, 2 project), u32 id,
 * u32 valid (WIRE_QUOTA_V_*: which limits SET/DEFAULT change; CHECK: WIRE_QUOTA_V_FIX),
 * u64 bsoft, bhard (KiB), isoft, ihard (inodes), bgrace, igrace (seconds).
 * quota_rep: u64 kbytes, inodes (usage), bsoft, bhard, isoft, ihard (the effective limits),
 * i64 btime, itime (when the grace ends, unix seconds; 0 = not over the soft limit), u64
 * bgrace, igrace, u32 flags (WIRE_QUOTA_F_*), u32 count, then count items: for CHECK
 * (<= WIRE_QUOTA_DRIFT_MAX) quota_drift: u32 type, u32 id, u64 kbytes, inodes (stored),
 * kbytes, inodes (counted); for TARGETS (<= WIRE_QUOTA_TARGET_MAX) quota_target: u32 OST
 * index, u64 kbytes (its objects' share of the id's files). */
enum {
	WIRE_QUOTA_GET = 0,     /* usage and limits of (type, id) */
	WIRE_QUOTA_SET = 1,     /* its limits (admin) */
	WIRE_QUOTA_GRACE = 2,   /* the type's grace periods (admin; id ignored) */
	WIRE_QUOTA_DEFAULT = 3, /* the type's default limits (admin; id ignored) */
	WIRE_QUOTA_GETDEF = 4,  /* the type's default limits and grace */
	WIRE_QUOTA_CHECK = 5,   /* recount usage from the inodes (admin) */
	WIRE_QUOTA_TARGETS = 6, /* GET, and the usage on each OST (lfs quota -v): a scan of the
				 * inodes, so root's, or the caller's own uid or gid */
	WIRE_QUOTA_OPS_
};
#define WIRE_QUOTA_V_BSOFT 0x1u
#define WIRE_QUOTA_V_BHARD 0x2u
#define WIRE_QUOTA_V_ISOFT 0x4u
#define WIRE_QUOTA_V_IHARD 0x8u
#define WIRE_QUOTA_V_BGRACE 0x10u
#define WIRE_QUOTA_V_IGRACE 0x20u
#define WIRE_QUOTA_V_FIX 0x40u
#define WIRE_QUOTA_V_ALL_ 0x7fu
#define WIRE_QUOTA_F_DEFAULT 0x1u /* the limits are the type's defaults */
#define WIRE_QUOTA_DRIFT_MAX 256u
#define WIRE_QUOTA_DRIFT_SIZE 40u
#define WIRE_QUOTA_TARGET_MAX 1024u
#define WIRE_QUOTA_TARGET_SIZE 12u
struct wire_quota_req {
	struct nacre_cred cred;
	uint32_t op, type, id, valid;
	uint64_t bsoft, bhard, isoft, ihard, bgrace, igrace;
};
struct wire_quota_rep {
	uint64_t kbytes, inodes, bsoft, bhard, isoft, ihard;
	int64_t btime, itime;
	uint64_t bgrace, igrace;
	uint32_t flags, count;
};
struct wire_quota_drift {
	uint32_t type, id;
	uint64_t kbytes, inodes, count_kbytes, count_inodes;
};
struct wire_quota_target {
	uint32_t ost_idx;
	uint64_t kbytes;
};

#define WIRE_MSG(name)                                                                      \
	void wire_##name##_encode(struct wire_cursor *c, const struct wire_##name *m);      \
	void wire_##name##_decode(struct wire_cursor *c, struct wire_##name *m)
WIRE_MSG(connect_req);
WIRE_MSG(connect_rep);
WIRE_MSG(auth_req);
WIRE_MSG(sec_refusal);
WIRE_MSG(fid_req);
WIRE_MSG(name_req);
WIRE_MSG(setattr_req);
WIRE_MSG(create_req);
WIRE_MSG(rename_req);
WIRE_MSG(link_req);
WIRE_MSG(readdir_req);
WIRE_MSG(open_req);
WIRE_MSG(open_rep);
WIRE_MSG(close_req);
WIRE_MSG(xattr_req);
WIRE_MSG(layout_set_req);
WIRE_MSG(target_reg);
WIRE_MSG(cred_req);
WIRE_MSG(attr_rep);
WIRE_MSG(create_rep);
WIRE_MSG(path_rep);
WIRE_MSG(layout_rep);
WIRE_MSG(statfs_rep);
WIRE_MSG(xattr_rep);
WIRE_MSG(xattr_len_rep);
WIRE_MSG(readdir_rep);
WIRE_MSG(targets_rep);
WIRE_MSG(hsm_request);
WIRE_MSG(hsm_state);
WIRE_MSG(hsm_state_set);
WIRE_MSG(hsm_list_req);
WIRE_MSG(hsm_agent_reg);
WIRE_MSG(hsm_poll_req);
WIRE_MSG(hsm_progress);
WIRE_MSG(hsm_import_req);
WIRE_MSG(hsm_request_rep);
WIRE_MSG(hsm_action_rep);
WIRE_MSG(hsm_list_rep);
WIRE_MSG(hsm_poll_rep);
WIRE_MSG(hsm_progress_rep);
WIRE_MSG(ost_io_req);
WIRE_MSG(ost_attr_rep);
WIRE_MSG(ost_falloc_req);
WIRE_MSG(ost_seek_req);
WIRE_MSG(ost_seek_rep);
WIRE_MSG(ost_destroy_req);
WIRE_MSG(ost_destroy_rep);
WIRE_MSG(lock_req);
WIRE_MSG(lock_rep);
WIRE_MSG(req_env);
WIRE_MSG(rep_env);
WIRE_MSG(fault_set_req);
WIRE_MSG(fault_set_rep);
WIRE_MSG(recovery_done_req);
WIRE_MSG(recovery_status);
WIRE_MSG(append_req);
WIRE_MSG(append_rep);
WIRE_MSG(cap_req);
WIRE_MSG(cap_rep);
WIRE_MSG(fid_grant_rep);
WIRE_MSG(lease_req);
WIRE_MSG(lease_rep);
WIRE_MSG(batch_req);
WIRE_MSG(batch_rep);
WIRE_MSG(key_req);
WIRE_MSG(key_list);
WIRE_MSG(key_update);
WIRE_MSG(notify_req);
WIRE_MSG(notify_rep);
/* Reads the recalled directories after a WIRE_NOTIFY_RECALL reply's count fids into out
 * (max entries): their number, or -EPROTO (the cursor failed: none, too many, or bytes
 * left over). */
int wire_notify_recall_get(struct wire_cursor *c, struct nacre_fid *out, uint32_t max);
WIRE_MSG(groups_set_req);
WIRE_MSG(nodemap_req);
WIRE_MSG(nodemap_rep);
WIRE_MSG(links_req);
WIRE_MSG(links_rep);
WIRE_MSG(changelog_req);
WIRE_MSG(changelog_rep);
WIRE_MSG(quota_req);
WIRE_MSG(quota_rep);
#undef WIRE_MSG
/* The items of a quota_rep answering CHECK. */
void wire_quota_drift_put(struct wire_cursor *c, const struct wire_quota_drift *d);
void wire_quota_drift_get(struct wire_cursor *c, struct wire_quota_drift *d);
/* The items of a quota_rep answering TARGETS. */
void wire_quota_target_put(struct wire_cursor *c, const struct wire_quota_target *t);
void wire_quota_target_get(struct wire_cursor *c, struct wire_quota_target *t);
/* The items of a key_list. */
void wire_key_entry_put(struct wire_cursor *c, const struct wire_key_entry *e);
void wire_key_entry_get(struct wire_cursor *c, struct wire_key_entry *e);

/* ---- FIND (since version 1): a scan of the namespace under a directory, in pages ----
 * find_req: cred, fid (the start directory), u32 max_bytes (of entries in the reply, capped
 * at WIRE_FIND_MAX_BYTES, at least WIRE_FIND_ENT_MAX), find_query, find_cursor [, find_more]
 * [, find_expr].
 * find_query: u32 preds (WIRE_FINDP_* present), u32 neg (WIRE_FINDP_* negated), time now
 * (the client's clock: the time predicates' reference), str start_name (the starting
 * point's name as the caller typed it, for -name at depth 0), u8 start_entry (1: the
 * starting point is the entry start_name of the directory fid, a file or a symlink, not
 * the directory), u32 mindepth, u32
 * maxdepth, str name (a glob, 0..WIRE_FIND_GLOB_MAX), u8 name_icase, u32 types (bits
 * 1 << (S_IFMT >> 12)), size cmp, 3 x time cmp (atime, mtime, ctime), time newer (an
 * mtime), u32 uid, u32 gid, u8 perm_kind (WIRE_FIND_PERM_*), u32 perm, stripe count cmp,
 * stripe size cmp, u32 nosts + nosts u32 (<= WIRE_FIND_OSTS_MAX), str pool (0..15), u32
 * layouts (WIRE_FIND_LAYOUT_*), u32 hsm (NACRE_HS_* all of which must be set), fid.
 * A cmp is i8 sign (-1: less than, 0: equal, 1: more than), u64 value, u64 unit (>= 1 if
 * used), u8 up: the entry's value is counted in units rounded up (sizes, always; ages in
 * minutes, as GNU find) or down (ages in days, as lfs and GNU find).
 * find_more (the tail of a find_req, present exactly when preds has a WIRE_FINDP_MORE_
 * bit; an MDS before it refuses those bits): links cmp (nlink), blocks cmp (bytes of
 * 512 x blocks), btime cmp (an age, as atime's; the birth time, or the ctime of an inode
 * made before the MDS kept it), u32 projid, u8 nnewer (<= WIRE_FIND_NEWER_MAX; >= 1 exactly with
 * WIRE_FINDP_NEWER_XY) + nnewer x {u8 which (WIRE_FIND_TIME_*), u8 neg, time t}: the entry's
 * time which is after t (not after, with neg). -empty has no value: a regular file of size
 * 0, or a directory without entries.
 * find_expr (the rest of a find_req, when bytes are left after the cursor and find_more;
 * an MDS before it refuses the bytes): find's -o, ! and parentheses. u8 nleaves
 * (1..WIRE_FIND_LEAVES_MAX), each a find_query [+ its find_more] without depth bits (its
 * start fields unused), then u8 nops (1..WIRE_FIND_OPS_MAX) and the ops, a postfix program:
 * a leaf's index pushes whether it holds, AND and OR pop two and push one, NOT negates the
 * top; it must end with one value. An entry matches when the find_query and the program
 * both hold.
 * find_cursor: u8 state (WIRE_FIND_CUR_*), str path (relative to the start directory, the
 * entry to resume at: every component but the last is a directory the scan was inside).
 * find_rep: u32 count, u8 done, find_cursor (where the next page starts), then count
 * find_ent: str path (relative, "" for the start directory), i32 err (0, or the negative
 * errno of a directory that could not be scanned: the entry is then only a report), attr,
 * u8 has_layout [+ layout], str target (symlinks; else ""). */
#define WIRE_FIND_MAX_BYTES (56u * 1024u) /* + the reply header: under WIRE_BODY_MAX */
#define WIRE_FIND_GLOB_MAX 1024u
#define WIRE_FIND_OSTS_MAX 256u
#define WIRE_FIND_POOL_MAX 15u
/* bytes of the fixed fields of a find_ent, and of the biggest one */
#define WIRE_FIND_ENT_MIN (2 + 4 + 100 + 1 + 2)
#define WIRE_FIND_ENT_MAX (WIRE_FIND_ENT_MIN + 2 * NACRE_PATH_MAX + 44 + 4 * NACRE_MAX_STRIPES)
enum {
	WIRE_FINDP_NAME = 1u << 0,
	WIRE_FINDP_TYPE = 1u << 1,
	WIRE_FINDP_SIZE = 1u << 2,
	WIRE_FINDP_ATIME = 1u << 3,
	WIRE_FINDP_MTIME = 1u << 4,
	WIRE_FINDP_CTIME = 1u << 5,
	WIRE_FINDP_NEWER = 1u << 6,
	WIRE_FINDP_UID = 1u << 7,
	WIRE_FINDP_GID = 1u << 8,
	WIRE_FINDP_PERM = 1u << 9,
	WIRE_FINDP_STRIPE_COUNT = 1u << 10,
	WIRE_FINDP_STRIPE_SIZE = 1u << 11,
	WIRE_FINDP_OST = 1u << 12,
	WIRE_FINDP_POOL = 1u << 13,
	WIRE_FINDP_LAYOUT = 1u << 14,
	WIRE_FINDP_HSM = 1u << 15,
	WIRE_FINDP_FID = 1u << 16,
	WIRE_FINDP_MINDEPTH = 1u << 17, /* not negatable */
	WIRE_FINDP_MAXDEPTH = 1u << 18, /* not negatable */
	/* the find_more predicates (values in the request's tail) */
	WIRE_FINDP_EMPTY = 1u << 19,
	WIRE_FINDP_LINKS = 1u << 20,
	WIRE_FINDP_BLOCKS = 1u << 21,
	WIRE_FINDP_PROJID = 1u << 22,
	WIRE_FINDP_NEWER_XY = 1u << 23, /* not negatable: each item has its own neg */
	WIRE_FINDP_BTIME = 1u << 24,
	WIRE_FINDP_ALL_ = (1u << 25) - 1,
	WIRE_FINDP_MORE_ = WIRE_FINDP_EMPTY | WIRE_FINDP_LINKS | WIRE_FINDP_BLOCKS |
			   WIRE_FINDP_PROJID | WIRE_FINDP_NEWER_XY | WIRE_FINDP_BTIME,
};
enum {
	WIRE_FIND_TIME_ATIME = 0,
	WIRE_FIND_TIME_MTIME = 1,
	WIRE_FIND_TIME_CTIME = 2,
	WIRE_FIND_TIME_BTIME = 3,
};
#define WIRE_FIND_NEWER_MAX 4u
/* find_expr: leaves and a postfix program over them (a byte below WIRE_FIND_OP_AND is a
 * leaf's index) */
#define WIRE_FIND_LEAVES_MAX 16u
#define WIRE_FIND_OPS_MAX 64u
enum { WIRE_FIND_OP_AND = 0x80, WIRE_FIND_OP_OR = 0x81, WIRE_FIND_OP_NOT = 0x82 };
enum { WIRE_FIND_PERM_EXACT = 0, WIRE_FIND_PERM_ALL = 1, WIRE_FIND_PERM_ANY = 2 };
enum {
	WIRE_FIND_LAYOUT_RAID0 = 1u << 0,
	WIRE_FIND_LAYOUT_RELEASED = 1u << 1,
	WIRE_FIND_LAYOUT_MDT = 1u << 2, /* data on MDT: nacre has none, so nothing matches */
	WIRE_FIND_LAYOUT_ALL_ = (1u << 3) - 1,
};
enum { WIRE_FIND_CUR_BEGIN = 0, WIRE_FIND_CUR_RESUME = 1 };
struct wire_find_cmp {
	int8_t sign;
	uint64_t value;
	uint64_t unit;
	uint8_t up;
};
struct wire_find_query {
	uint32_t preds, neg;
	struct nacre_time now;
	char start_name[NACRE_NAME_MAX + 1];
	uint8_t start_entry;
	uint32_t mindepth, maxdepth;
	char name[WIRE_FIND_GLOB_MAX + 1];
	uint8_t name_icase;
	uint32_t types;
	struct wire_find_cmp size, atime, mtime, ctime;
	struct nacre_time newer;
	uint32_t uid, gid;
	uint8_t perm_kind;
	uint32_t perm;
	struct wire_find_cmp stripe_count, stripe_size;
	uint32_t nosts;
	uint32_t osts[WIRE_FIND_OSTS_MAX];
	char pool[WIRE_FIND_POOL_MAX + 1];
	uint32_t layouts;
	uint32_t hsm;
	struct nacre_fid fid;
	/* find_more: in the request's tail, present when a WIRE_FINDP_MORE_ bit is */
	struct wire_find_cmp links, blocks, btime;
	uint32_t projid;
	uint32_t nnewer;
	struct wire_find_newer {
		uint8_t which, neg; /* WIRE_FIND_TIME_*; 1: the time is not after t */
		struct nacre_time t;
	} newer_xy[WIRE_FIND_NEWER_MAX];
};
struct wire_find_cursor {
	uint8_t state;
	char path[NACRE_PATH_MAX + 1];
};
struct wire_find_req {
	struct nacre_cred cred;
	struct nacre_fid fid;
	uint32_t max_bytes;
	struct wire_find_query q;
	struct wire_find_cursor cur;
	/* find_expr (0 leaves: none) */
	uint32_t nleaves, nops;
	uint8_t ops[WIRE_FIND_OPS_MAX];
	struct wire_find_query leaves[WIRE_FIND_LEAVES_MAX];
};
struct wire_find_rep {
	uint32_t count;
	uint8_t done;
	struct wire_find_cursor cur;
};
struct wire_find_ent {
	char path[NACRE_PATH_MAX + 1];
	int32_t err;
	struct nacre_attr attr;
	uint8_t has_layout;
	struct nacre_layout layout;
	char target[NACRE_PATH_MAX + 1];
};
void wire_find_req_encode(struct wire_cursor *c, const struct wire_find_req *m);
void wire_find_req_decode(struct wire_cursor *c, struct wire_find_req *m);
void wire_find_rep_encode(struct wire_cursor *c, const struct wire_find_rep *m);
void wire_find_rep_decode(struct wire_cursor *c, struct wire_find_rep *m);
/* The items of a find_rep. get fails the cursor (-EPROTO) on a positive err. */
void wire_find_ent_put(struct wire_cursor *c, const struct wire_find_ent *e);
void wire_find_ent_get(struct wire_cursor *c, struct wire_find_ent *e);
/* The bytes wire_find_ent_put writes for e. Pure. */
size_t wire_find_ent_size(const struct wire_find_ent *e);

/* The opcode named name ("MDS_CREATE"), or -1. Thread-safe. */
int wire_opcode_by_name(const char *name);

/* Lists a server streams (READDIR, HSM_LIST, OST_DESTROY_BATCH replies) know their count
 * only at the end: encode the header first at pos = wire_cursor_pos(c) (count 0), append
 * the items, then rewrite the header in place with its final values. A no-op on a failed
 * cursor; fails it with -EINVAL if no header was written at pos. */
void wire_readdir_rep_patch(struct wire_cursor *c, size_t pos, const struct wire_readdir_rep *m);
void wire_hsm_list_rep_patch(struct wire_cursor *c, size_t pos, const struct wire_hsm_list_rep *m);
void wire_ost_destroy_rep_patch(struct wire_cursor *c, size_t pos,
				const struct wire_ost_destroy_rep *m);
void wire_links_rep_patch(struct wire_cursor *c, size_t pos, const struct wire_links_rep *m);

/* A LINKS entry: fid parent, name name. */
void wire_link_entry_put(struct wire_cursor *c, const struct wire_link_entry *e);
void wire_link_entry_get(struct wire_cursor *c, struct wire_link_entry *e);

/* The items of HSM_REQUEST's reply: one status per fid, 0 or a negative errno (the decoder
 * takes any value; a caller maps a positive one to -EPROTO). */
void wire_hsm_rc_put(struct wire_cursor *c, int32_t rc);
void wire_hsm_rc_get(struct wire_cursor *c, int32_t *rc);

/* The items of OST_DESTROY_BATCH: the request's objects and the reply's failures. Read
 * them after the header's decode, which checked that exactly that many are present. */
void wire_ost_obj_put(struct wire_cursor *c, const struct wire_ost_obj *o);
void wire_ost_obj_get(struct wire_cursor *c, struct wire_ost_obj *o);
void wire_ost_destroy_fail_put(struct wire_cursor *c, const struct wire_ost_destroy_fail *f);
void wire_ost_destroy_fail_get(struct wire_cursor *c, struct wire_ost_destroy_fail *f);

/* A READDIR entry: u64 cookie, fid, u32 type, name. */
void wire_dirent_put(struct wire_cursor *c, const struct nacre_dirent *d);
void wire_dirent_get(struct wire_cursor *c, struct nacre_dirent *d);
/* A READDIR entry with WIRE_READDIR_PLUS: the dirent, then its inode's attributes if a is
 * not NULL. get: *has_attr 0 and a zeroed when none came; attributes of another FID or type
 * than the entry's fail the cursor. */
void wire_direntplus_put(struct wire_cursor *c, const struct nacre_dirent *d,
			 const struct nacre_attr *a);
void wire_direntplus_get(struct wire_cursor *c, struct nacre_dirent *d, struct nacre_attr *a,
			 int *has_attr);

/* One HSM action (after the header of the HSM_ACTION, HSM_LIST and HSM_AGENT_POLL replies):
 * u64 cookie, u32 action (NACRE_HSMA_*), u32 status (NACRE_HAS_*), fid, u32 archive_id,
 * u32 flags, u64 bytes_done, u64 bytes_total, i32 err, time ctime, time mtime, str path
 * (0..4096): WIRE_HSM_ACTION_MIN bytes and the path. */
#define WIRE_HSM_ACTION_MIN (8 + 4 + 4 + 16 + 4 + 4 + 8 + 8 + 4 + 12 + 12 + 2)
#define WIRE_HSM_ACTION_MAX (WIRE_HSM_ACTION_MIN + NACRE_PATH_MAX)
void wire_hsm_action_put(struct wire_cursor *c, const struct nacre_hsm_action *a);
void wire_hsm_action_get(struct wire_cursor *c, struct nacre_hsm_action *a);

/* One changelog record (CL_READ's items, and the MDS's stored records after a u16
 * version): u64 index, u32 type (< NACRE_CL_LAST), u32 flags, time, fid tfid, fid pfid,
 * fid sfid, fid spfid, u32 xflags, u32 uid, u32 gid, str name, str sname, str xattr (each
 * 0..255 bytes, no NUL), and with NACRE_CLF_JOBID in flags str jobid (1..31 bytes,
 * wire_jobid_valid): WIRE_CL_REC_MIN bytes and the names. */
#define WIRE_CL_REC_MIN (8 + 4 + 4 + 12 + 4 * 16 + 4 + 4 + 4 + 3 * 2)
#define WIRE_CL_REC_MAX (WIRE_CL_REC_MIN + 3 * NACRE_NAME_MAX + 2 + NACRE_JOBID_MAX)
void wire_cl_rec_put(struct wire_cursor *c, const struct nacre_changelog_rec *r);
void wire_cl_rec_get(struct wire_cursor *c, struct nacre_changelog_rec *r);
/* changelog_rep's header rewritten in place (as wire_readdir_rep_patch). */
void wire_changelog_rep_patch(struct wire_cursor *c, size_t pos,
			      const struct wire_changelog_rep *m);

/* A TARGETS entry: u32 type, u32 index, u8 up, str addr, statfs. */
void wire_target_put(struct wire_cursor *c, const struct nacre_target *t);
void wire_target_get(struct wire_cursor *c, struct nacre_target *t);

#endif
