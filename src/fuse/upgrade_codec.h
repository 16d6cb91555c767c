/* upgrade_codec.h - the bounded little-endian writer and reader of nacre-mount --upgrade's
 * control messages and state blob (upgrade.h, docs/upgrade.md). The hand-over is between two
 * nacre-mount processes, not a client and a server, so it has its own codec rather than the
 * wire protocol's: the blob's bytes change only with UPG_VERSION, never with the protocol.
 *
 * Every put or get checks the room left. The first failure sticks: later calls do nothing,
 * gets yield zeroes, and the error is read once at the end (upg_writer_err, upg_reader_err).
 * Not thread-safe; one writer or reader per thread.
 *
 * The state blob, version 1 (all integers little-endian; the decoder refuses anything else):
 *
 *   u32 UPG_MAGIC, u32 UPG_VERSION
 *   head:    u32 proto_major, u32 proto_minor, u32 max_readahead, u32 capable, u32 want,
 *            str spec, str opts, str mnt, u64 lock client id
 *   inodes:  u64 count, then each: u64 ino, fid, fid parent, u64 nlookup,
 *            u32 cache_valid, u64 cache_size, time cache_mtime, time cache_ctime
 *   handles: u64 count, then each: u64 fh, u32 kind, u64 ino, u32 open flags, cred
 *   owners:  u64 count, then each: fid, u64 lock owner
 *
 * with
 *   str   u32 length, the bytes (no NUL in them, none after)
 *   fid   u64 seq, u32 oid, u32 ver
 *   time  i64 sec, u32 nsec (< 10^9)
 *   cred  u32 uid, u32 gid, u32 ngroups (<= NACRE_CRED_GROUPS) | UPG_CRED_* flags,
 *         u32 groups[ngroups], u64 groups_token (nonzero; if UPG_CRED_TOKEN),
 *         u8 jobid length 1..NACRE_JOBID_MAX and its printable bytes (if UPG_CRED_JOBID)
 *
 * These are the bytes version 1 always had (they matched the wire protocol's field groups
 * when the blob was written with its cursor): processes of either build hand over to each
 * other. A change of layout takes a new UPG_VERSION.
 */
#ifndef NACRE_FUSE_UPGRADE_CODEC_H
#define NACRE_FUSE_UPGRADE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define UPG_MAGIC 0x4e555047u /* "NUPG": the blob */
#define UPG_VERSION 1u        /* of the blob and of the control socket's request */

/* cred: the bits above ngroups */
#define UPG_CRED_TOKEN 0x80000000u /* a groups_token follows the groups */
#define UPG_CRED_PHL 0x40000000u   /* NACRE_CRED_PROTECTED_HARDLINKS */
#define UPG_CRED_JOBID 0x20000000u /* a job id follows */

struct upg_writer {
	uint8_t *buf;
	size_t len;   /* capacity */
	size_t pos;   /* bytes written */
	size_t limit; /* a growing writer's largest size; 0: fixed */
	int err;      /* 0, or the first error: -E2BIG (full), -ENOMEM, or the caller's */
	int owned;    /* buf is the writer's heap buffer */
};

struct upg_reader {
	const uint8_t *buf;
	size_t len; /* bytes available */
	size_t pos; /* bytes read */
	int err;    /* 0, or the first error: -EPROTO (short, malformed), -ENOMEM, the caller's */
};

/* A writer over len bytes at buf (borrowed; must outlive the writer). */
void upg_writer_init(struct upg_writer *w, void *buf, size_t len);
/* A writer over a heap buffer that grows up to limit bytes; free it with upg_writer_fini. */
void upg_writer_init_dyn(struct upg_writer *w, size_t limit);
/* Frees a growing writer's buffer. Safe on any writer, and twice. */
void upg_writer_fini(struct upg_writer *w);
/* Fails the writer with err (< 0; the first error wins). */
void upg_writer_fail(struct upg_writer *w, int err);
static inline int upg_writer_err(const struct upg_writer *w) { return w->err; }
/* The bytes written: valid until the next put or upg_writer_fini. */
static inline const uint8_t *upg_writer_data(const struct upg_writer *w) { return w->buf; }
static inline size_t upg_writer_len(const struct upg_writer *w) { return w->pos; }

void upg_put_u8(struct upg_writer *w, uint8_t v);
void upg_put_u32(struct upg_writer *w, uint32_t v);
void upg_put_u64(struct upg_writer *w, uint64_t v);
void upg_put_i64(struct upg_writer *w, int64_t v);
void upg_put_bytes(struct upg_writer *w, const void *p, size_t n);
/* A str: u32 length and the bytes of s; NULL is written as "". */
void upg_put_str(struct upg_writer *w, const char *s);

/* A reader over len bytes at buf (borrowed; must outlive the reader). */
void upg_reader_init(struct upg_reader *r, const void *buf, size_t len);
/* Fails the reader with err (< 0; the first error wins): for checks of the values read. */
void upg_reader_fail(struct upg_reader *r, int err);
static inline int upg_reader_err(const struct upg_reader *r) { return r->err; }
static inline int upg_reader_ok(const struct upg_reader *r) { return r->err == 0; }
static inline size_t upg_reader_left(const struct upg_reader *r) { return r->len - r->pos; }

uint8_t upg_get_u8(struct upg_reader *r);
uint32_t upg_get_u32(struct upg_reader *r);
uint64_t upg_get_u64(struct upg_reader *r);
int64_t upg_get_i64(struct upg_reader *r);
/* n bytes to p (zeroes if fewer are left, and the reader failed). */
void upg_get_bytes(struct upg_reader *r, void *p, size_t n);
/* A str as a heap copy, NUL-terminated (the caller frees it), or NULL with the reader
 * failed: -EPROTO (short, or a NUL in it) or -ENOMEM. */
char *upg_get_str_dup(struct upg_reader *r);

#endif
