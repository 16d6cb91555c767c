/* wire.c - encoders and decoders of every nacre message, field by field.
 *
 * Conventions, all little-endian:
 *   fid     = u64 seq, u32 oid, u32 ver                                  (16 bytes)
 *   time    = i64 sec, u32 nsec (< 1e9)                                   (12 bytes)
 *   name    = u16 len (1..255), bytes: no NUL, no '/', not "." or ".."
 *   str     = u16 len, bytes: no NUL; the maximum depends on the field (path: 4096)
 *   blob    = u32 len, bytes
 *   lstr    = a blob that holds a string: no NUL (strings without a protocol limit)
 * Decoders start by zeroing the output struct, so a decoded struct has no stale bytes. Any
 * violation fails the cursor with -EPROTO; encoders fail it with -ENAMETOOLONG / -EINVAL on
 * a string they cannot represent, or -E2BIG when the buffer is full.
 */
#include "proto/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "nacre/nacre_errno.h"

#define NSEC_PER_SEC 1000000000u
#define MODE_BITS 0177777u /* S_IFMT | 07777 */
#define HSM_BITS 0x7fu
#define LAYOUT_EXT_EOF UINT64_MAX

/* ---- the opcode table ----
 * Idempotent: reads, object I/O at a fixed offset, registrations, and the changes a second run
 * leaves as the first did (HSM_REQUEST joins the actions it queued, LOCK_SET takes or drops
 * the same lock). The other MDS changes are not: a resent unlink or create would answer
 * ENOENT or EEXIST, a resent poll would hand out other actions.
 * Inline on the MDS event thread: reads, and namespace changes, which wait only for their
 * group commit (microseconds with no fsync per commit; whatever they start on the OSSes, as
 * object destruction, runs later on other threads). On a worker: SETATTR may punch objects
 * on an OSS, OPEN may wait for a restore, SYNC waits for the disk, locks and HSM agents may
 * wait for others.
 * Passing the recovery window: the servers' registrations and heartbeats, statfs, target
 * and recovery status; the key calls (OSSes pull the key table, a revocation cannot wait);
 * NOTIFY_WAIT (a callback channel, parked by notify.c, no change); GROUPS_SET (registers a
 * list for the replays that follow); NODEMAP (a mount asks for its rule; rules are not
 * namespace changes). */
#define IDEM WIRE_OPF_IDEMPOTENT
#define INL WIRE_OPF_INLINE
#define RC WIRE_OPF_REPLY_CACHE
#define BIG WIRE_OPF_BIG_BODY
#define CHG WIRE_OPF_CHANGE
#define CF WIRE_OPF_CRED_FID
#define SPC WIRE_OPF_TAKES_SPACE
#define OBJ WIRE_OPF_OST_OBJECTS
#define PASS WIRE_OPF_RECOVERY_PASS
#define REO WIRE_OPF_REOPEN
/* The codecs with their message types erased, one pair per message of the table. */
#define ANY(name)                                                                          \
	static void any_##name##_encode(struct wire_cursor *c, const void *m)               \
	{                                                                                   \
		wire_##name##_encode(c, m);                                                 \
	}                                                                                   \
	static void any_##name##_decode(struct wire_cursor *c, void *m)                     \
	{                                                                                   \
		wire_##name##_decode(c, m);                                                 \
	}
ANY(append_rep)
ANY(append_req)
ANY(attr_rep)
ANY(batch_rep)
ANY(batch_req)
ANY(auth_req)
ANY(cap_rep)
ANY(cap_req)
ANY(changelog_rep)
ANY(changelog_req)
ANY(close_req)
ANY(connect_rep)
ANY(connect_req)
ANY(create_rep)
ANY(create_req)
ANY(cred_req)
ANY(fault_set_rep)
ANY(fault_set_req)
ANY(fid_grant_rep)
ANY(fid_req)
ANY(find_rep)
ANY(find_req)
ANY(groups_set_req)
ANY(hsm_action_rep)
ANY(hsm_agent_reg)
ANY(hsm_import_req)
ANY(hsm_list_rep)
ANY(hsm_list_req)
ANY(hsm_poll_rep)
ANY(hsm_poll_req)
ANY(hsm_progress)
ANY(hsm_progress_rep)
ANY(hsm_request)
ANY(hsm_request_rep)
ANY(hsm_state)
ANY(hsm_state_set)
ANY(key_list)
ANY(lease_rep)
ANY(lease_req)
ANY(key_req)
ANY(key_update)
ANY(layout_rep)
ANY(layout_set_req)
ANY(link_req)
ANY(links_rep)
ANY(links_req)
ANY(lock_rep)
ANY(lock_req)
ANY(name_req)
ANY(nodemap_rep)
ANY(nodemap_req)
ANY(notify_rep)
ANY(notify_req)
ANY(open_rep)
ANY(open_req)
ANY(ost_attr_rep)
ANY(ost_destroy_rep)
ANY(ost_destroy_req)
ANY(ost_falloc_req)
ANY(ost_io_req)
ANY(ost_seek_rep)
ANY(ost_seek_req)
ANY(path_rep)
ANY(quota_rep)
ANY(quota_req)
ANY(readdir_rep)
ANY(readdir_req)
ANY(recovery_done_req)
ANY(recovery_status)
ANY(rename_req)
ANY(setattr_req)
ANY(statfs_rep)
ANY(target_reg)
ANY(targets_rep)
ANY(xattr_rep)
ANY(xattr_req)
#undef ANY
#define any_empty_encode NULL
#define any_empty_decode NULL
#define OP(op, req, rep, flags)                                                            \
	[WIRE_OP_##op] = {#op, #req, #rep, flags, any_##req##_encode, any_##req##_decode,   \
			  any_##rep##_encode, any_##rep##_decode}
static const struct wire_op_info op_table[WIRE_OP_MAX_] = {
	OP(CONNECT, connect_req, connect_rep, 0),
	OP(AUTH, auth_req, empty, 0),
	OP(PING, empty, empty, IDEM),
	OP(FAULT_SET, fault_set_req, fault_set_rep, IDEM),
	OP(MDS_STATFS, cred_req, statfs_rep, IDEM | INL | PASS),
	OP(MDS_LOOKUP, name_req, attr_rep, IDEM | INL | CF),
	OP(MDS_GETATTR, fid_req, attr_rep, IDEM | INL | CF),
	OP(MDS_SETATTR, setattr_req, attr_rep, RC | CHG | CF),
	OP(MDS_CREATE, create_req, create_rep, INL | RC | CHG | CF | SPC | OBJ),
	OP(MDS_MKDIR, create_req, attr_rep, INL | RC | CHG | CF | SPC),
	OP(MDS_MKNOD, create_req, attr_rep, INL | RC | CHG | CF | SPC),
	OP(MDS_UNLINK, name_req, empty, INL | RC | CHG | CF),
	OP(MDS_RMDIR, name_req, empty, INL | RC | CHG | CF),
	OP(MDS_RENAME, rename_req, empty, INL | RC | CHG | CF),
	OP(MDS_LINK, link_req, attr_rep, INL | RC | CHG | CF | SPC),
	OP(MDS_SYMLINK, create_req, attr_rep, INL | RC | CHG | CF | SPC),
	OP(MDS_READLINK, fid_req, path_rep, IDEM | INL | CF),
	OP(MDS_READDIR, readdir_req, readdir_rep, IDEM | INL | CF),
	OP(MDS_OPEN, open_req, open_rep, CF | REO),
	OP(MDS_CLOSE, close_req, attr_rep, INL | RC),
	OP(MDS_SIZE_UPDATE, close_req, attr_rep, INL | RC | CHG),
	OP(MDS_GETXATTR, xattr_req, xattr_rep, IDEM | INL | BIG | CF),
	OP(MDS_SETXATTR, xattr_req, empty, INL | RC | BIG | CHG | CF | SPC),
	OP(MDS_LISTXATTR, xattr_req, xattr_rep, IDEM | INL | BIG | CF),
	OP(MDS_REMOVEXATTR, xattr_req, empty, INL | RC | CHG | CF),
	OP(MDS_LAYOUT_GET, fid_req, layout_rep, IDEM | INL | CF),
	OP(MDS_LAYOUT_SET, layout_set_req, layout_rep, RC | CHG | CF | SPC | OBJ),
	OP(MDS_TARGETS, cred_req, targets_rep, IDEM | INL | PASS),
	OP(MDS_FID2PATH, fid_req, path_rep, IDEM | INL | CF),
	OP(MDS_TARGET_REGISTER, target_reg, empty, IDEM | PASS),
	OP(MDS_TARGET_HEARTBEAT, target_reg, empty, IDEM | PASS),
	OP(MDS_SYNC, fid_req, empty, IDEM | CF),
	OP(MDS_DISCONNECT, cred_req, empty, IDEM),
	OP(MDS_RECOVERY_DONE, recovery_done_req, empty, IDEM),
	OP(MDS_RECOVERY_STATUS, cred_req, recovery_status, IDEM | INL | PASS),
	OP(MDS_APPEND, append_req, append_rep, INL | RC | CHG),
	OP(MDS_HSM_REQUEST, hsm_request, hsm_request_rep, IDEM | CHG),
	OP(MDS_HSM_STATE_GET, fid_req, hsm_state, IDEM | CF),
	OP(MDS_HSM_STATE_SET, hsm_state_set, hsm_state, IDEM | CHG | CF),
	OP(MDS_HSM_ACTION, fid_req, hsm_action_rep, IDEM | CF),
	OP(MDS_HSM_LIST, hsm_list_req, hsm_list_rep, IDEM),
	OP(MDS_HSM_AGENT_REGISTER, hsm_agent_reg, empty, 0),
	OP(MDS_HSM_AGENT_POLL, hsm_poll_req, hsm_poll_rep, 0),
	OP(MDS_HSM_AGENT_PROGRESS, hsm_progress, hsm_progress_rep, 0),
	OP(MDS_HSM_IMPORT, hsm_import_req, attr_rep, RC | CHG | CF | SPC),
	OP(MDS_LINKS, links_req, links_rep, IDEM | INL | CF),
	OP(MDS_FIND, find_req, find_rep, IDEM | CF),
	OP(MDS_CL_REGISTER, changelog_req, changelog_rep, 0),
	OP(MDS_CL_DEREGISTER, changelog_req, changelog_rep, 0),
	OP(MDS_CL_READ, changelog_req, changelog_rep, IDEM),
	OP(MDS_CL_CLEAR, changelog_req, changelog_rep, IDEM),
	OP(MDS_CL_MASK, changelog_req, changelog_rep, IDEM),
	OP(MDS_QUOTA, quota_req, quota_rep, 0),
	OP(OST_WRITE, ost_io_req, empty, IDEM),
	OP(OST_READ, ost_io_req, empty, IDEM),
	OP(OST_PUNCH, ost_io_req, empty, IDEM),
	OP(OST_DESTROY, ost_io_req, empty, IDEM),
	OP(OST_GETATTR, ost_io_req, ost_attr_rep, IDEM),
	OP(OST_STATFS, ost_io_req, statfs_rep, IDEM),
	OP(OST_SYNC, ost_io_req, empty, IDEM),
	OP(OST_DESTROY_BATCH, ost_destroy_req, ost_destroy_rep, IDEM),
	OP(OST_FALLOCATE, ost_falloc_req, empty, IDEM),
	OP(OST_SEEK, ost_seek_req, ost_seek_rep, IDEM),
	OP(MDS_LOCK_SET, lock_req, empty, IDEM | CF | REO),
	OP(MDS_LOCK_GET, lock_req, lock_rep, IDEM | CF),
	OP(MDS_LOCK_WAIT, lock_req, empty, IDEM | CF | REO),
	OP(MDS_LOCK_CANCEL, lock_req, empty, IDEM | CF),
	OP(MDS_KEY_ISSUE, key_req, key_list, PASS),
	OP(MDS_KEY_REVOKE, key_req, key_list, IDEM | PASS),
	OP(MDS_KEY_LIST, cred_req, key_list, IDEM | PASS),
	OP(OST_KEY_UPDATE, key_update, empty, IDEM),
	OP(MDS_CAP_GET, cap_req, cap_rep, IDEM | INL),
	OP(MDS_NOTIFY_WAIT, notify_req, notify_rep, IDEM | INL | PASS),
	OP(MDS_GROUPS_SET, groups_set_req, empty, IDEM | INL | PASS),
	OP(MDS_NODEMAP, nodemap_req, nodemap_rep, PASS),
	OP(MDS_FID_GRANT, cred_req, fid_grant_rep, INL | RC | CHG | SPC),
	OP(MDS_BATCH, batch_req, batch_rep, INL | RC | CHG | OBJ),
	OP(MDS_LEASE, lease_req, lease_rep, IDEM | INL | CF | REO),
};
#undef OP
#undef any_empty_encode
#undef any_empty_decode
#undef REO
#undef PASS
#undef OBJ
#undef SPC
#undef CF
#undef CHG
#undef BIG
#undef RC
#undef INL
#undef IDEM

const struct wire_op_info *wire_op_info(uint16_t opcode)
{
	if (opcode < WIRE_OP_MAX_ && op_table[opcode].name)
		return &op_table[opcode];
	return NULL;
}

const char *wire_opcode_name(uint16_t opcode)
{
	const struct wire_op_info *op = wire_op_info(opcode);

	return op ? op->name : "UNKNOWN";
}

int wire_op_has(uint16_t opcode, uint32_t flags)
{
	const struct wire_op_info *op = wire_op_info(opcode);

	return op && (op->flags & flags) == flags;
}

int wire_op_idempotent(uint16_t opcode)
{
	const struct wire_op_info *op = wire_op_info(opcode);

	return op && (op->flags & WIRE_OPF_IDEMPOTENT);
}

int wire_op_inline(uint16_t opcode)
{
	const struct wire_op_info *op = wire_op_info(opcode);

	return op && (op->flags & WIRE_OPF_INLINE);
}

int wire_op_reply_cached(uint16_t opcode)
{
	const struct wire_op_info *op = wire_op_info(opcode);

	return op && (op->flags & WIRE_OPF_REPLY_CACHE);
}

uint32_t wire_op_body_max(uint16_t opcode)
{
	const struct wire_op_info *op = wire_op_info(opcode);

	return op && (op->flags & WIRE_OPF_BIG_BODY) ? WIRE_BODY_BIG_MAX : WIRE_BODY_MAX;
}

int wire_opcode_by_name(const char *name)
{
	for (int i = 0; name && i < WIRE_OP_MAX_; i++)
		if (op_table[i].name && strcmp(op_table[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- frame header: see the layout in wire.h (since version 1) ---- */

static void le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

void wire_hdr_encode(const struct wire_hdr *h, uint8_t out[WIRE_HDR_LEN])
{
	le32(out + 0, h->magic);
	le16(out + 4, h->version);
	le16(out + 6, h->opcode);
	le32(out + 8, h->flags);
	le32(out + 12, h->body_len);
	le64(out + 16, h->xid);
	le32(out + 24, (uint32_t)h->status);
	le32(out + 28, h->bulk_len);
	le32(out + 32, h->bulk_crc);
}

int wire_hdr_decode(const uint8_t in[WIRE_HDR_LEN], struct wire_hdr *h)
{
	/* Every field is filled before validation, so a caller can still log the opcode and
	 * answer the xid of a rejected frame. */
	h->magic = rd32(in + 0);
	h->version = rd16(in + 4);
	h->opcode = rd16(in + 6);
	h->flags = rd32(in + 8);
	h->body_len = rd32(in + 12);
	h->xid = rd64(in + 16);
	h->status = (int32_t)rd32(in + 24);
	h->bulk_len = rd32(in + 28);
	h->bulk_crc = rd32(in + 32);

	if (h->magic != WIRE_MAGIC)
		return -NACRE_EBADMAGIC;
	if (h->version < 1 || h->version > WIRE_VERSION)
		return -NACRE_EPROTO_VERSION;
	if (h->body_len > wire_op_body_max(h->opcode) || h->bulk_len > WIRE_BULK_MAX)
		return -EPROTO;
	/* Unknown flag bits would only be sent after a feature negotiated them. */
	if (h->flags & ~(uint32_t)WIRE_FLAG_REPLY)
		return -EPROTO;
	if (h->bulk_len == 0 && h->bulk_crc != 0)
		return -EPROTO;
	if (!(h->flags & WIRE_FLAG_REPLY) && h->status != 0)
		return -EPROTO;
	return 0;
}

/* ---- shared field groups (since version 1) ---- */

static void time_put(struct wire_cursor *c, const struct nacre_time *t)
{
	wire_put_i64(c, t->sec);
	wire_put_u32(c, t->nsec);
}

static void time_get(struct wire_cursor *c, struct nacre_time *t)
{
	t->sec = wire_get_i64(c);
	t->nsec = wire_get_u32(c);
	if (t->nsec >= NSEC_PER_SEC)
		wire_cursor_fail(c, -EPROTO);
}

void wire_time_put(struct wire_cursor *c, const struct nacre_time *t)
{
	time_put(c, t);
}

void wire_time_get(struct wire_cursor *c, struct nacre_time *t)
{
	time_get(c, t);
}

/* A str: u16 length, then the bytes (no NUL). */
static void str_put(struct wire_cursor *c, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		wire_cursor_fail(c, -ENAMETOOLONG);
		return;
	}
	wire_put_u16(c, (uint16_t)n);
	wire_put_bytes(c, s, n);
}

/* Reads a str of min..max bytes into out (max + 1 bytes), NUL-terminated. Returns its
 * length, or -1 with the cursor failed. */
static int str_get(struct wire_cursor *c, char *out, size_t min, size_t max)
{
	uint16_t n = wire_get_u16(c);
	const uint8_t *p;

	out[0] = '\0';
	if (!wire_cursor_ok(c))
		return -1;
	if (n < min || n > max) {
		wire_cursor_fail(c, -EPROTO);
		return -1;
	}
	p = wire_get_view(c, n);
	if (!p)
		return -1;
	if (memchr(p, '\0', n)) {
		wire_cursor_fail(c, -EPROTO);
		return -1;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

void wire_lstr_put(struct wire_cursor *c, const char *s)
{
	wire_put_blob(c, s ? s : "", s ? (uint32_t)strlen(s) : 0);
}

char *wire_lstr_dup(struct wire_cursor *c, uint32_t max)
{
	uint32_t n;
	const uint8_t *p = wire_get_blob(c, max, &n);
	char *s;

	if (!p)
		return NULL;
	if (memchr(p, '\0', n)) {
		wire_cursor_fail(c, -EPROTO);
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		wire_cursor_fail(c, -ENOMEM);
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

void wire_fid_put(struct wire_cursor *c, const struct nacre_fid *fid)
{
	wire_put_u64(c, fid->seq);
	wire_put_u32(c, fid->oid);
	wire_put_u32(c, fid->ver);
}

void wire_fid_get(struct wire_cursor *c, struct nacre_fid *fid)
{
	fid->seq = wire_get_u64(c);
	fid->oid = wire_get_u32(c);
	fid->ver = wire_get_u32(c);
}

/* cred: u32 uid, u32 gid, u32 ngroups (<= NACRE_CRED_GROUPS, | WIRE_CRED_TOKEN when a
 * token follows, | WIRE_CRED_PHL for NACRE_CRED_PROTECTED_HARDLINKS), u32 groups[ngroups],
 * then u64 groups_token (nonzero) if WIRE_CRED_TOKEN, then (WIRE_CRED_JOBID, only to a peer
 * with WIRE_FEAT_JOBID) the job id: u8 length 1..NACRE_JOBID_MAX, printable ASCII bytes */
#define WIRE_CRED_TOKEN 0x80000000u
#define WIRE_CRED_PHL 0x40000000u
#define WIRE_CRED_JOBID 0x20000000u

int wire_jobid_valid(const char *s, size_t len)
{
	if (len == 0 || len > NACRE_JOBID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return 0;
	return 1;
}
void wire_cred_put(struct wire_cursor *c, const struct nacre_cred *cr)
{
	if (cr->ngroups > NACRE_CRED_GROUPS || (cr->flags & ~NACRE_CRED_PROTECTED_HARDLINKS)) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_put_u32(c, cr->uid);
	wire_put_u32(c, cr->gid);
	size_t jl = strnlen(cr->jobid, sizeof(cr->jobid));
	if (jl && !wire_jobid_valid(cr->jobid, jl)) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_put_u32(c, cr->ngroups | (cr->groups_token ? WIRE_CRED_TOKEN : 0) |
			       (cr->flags & NACRE_CRED_PROTECTED_HARDLINKS ? WIRE_CRED_PHL : 0) |
			       (jl ? WIRE_CRED_JOBID : 0));
	for (uint32_t i = 0; i < cr->ngroups; i++)
		wire_put_u32(c, cr->groups[i]);
	if (cr->groups_token)
		wire_put_u64(c, cr->groups_token);
	if (jl) {
		wire_put_u8(c, (uint8_t)jl);
		wire_put_bytes(c, cr->jobid, jl);
	}
}

void wire_cred_get(struct wire_cursor *c, struct nacre_cred *cr)
{
	memset(cr, 0, sizeof(*cr));
	cr->uid = wire_get_u32(c);
	cr->gid = wire_get_u32(c);
	uint32_t n = wire_get_u32(c);
	cr->ngroups = n & ~(WIRE_CRED_TOKEN | WIRE_CRED_PHL | WIRE_CRED_JOBID);
	if (n & WIRE_CRED_PHL)
		cr->flags |= NACRE_CRED_PROTECTED_HARDLINKS;
	if (cr->ngroups > NACRE_CRED_GROUPS) {
		cr->ngroups = 0;
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < cr->ngroups; i++)
		cr->groups[i] = wire_get_u32(c);
	if (n & WIRE_CRED_TOKEN) {
		cr->groups_token = wire_get_u64(c);
		if (!cr->groups_token)
			wire_cursor_fail(c, -EPROTO);
	}
	if (n & WIRE_CRED_JOBID) {
		uint8_t jl = wire_get_u8(c);
		if (jl > NACRE_JOBID_MAX) {
			wire_cursor_fail(c, -EPROTO);
			return;
		}
		wire_get_bytes(c, cr->jobid, jl);
		if (wire_cursor_ok(c) && !wire_jobid_valid(cr->jobid, jl))
			wire_cursor_fail(c, -EPROTO);
		if (!wire_cursor_ok(c))
			memset(cr->jobid, 0, sizeof(cr->jobid));
	}
}

uint64_t wire_groups_token(const uint32_t *groups, uint32_t n)
{
	/* FNV-1a over the count and the sorted list: a name for the list, not a secret (a
	 * client asserts its groups anyway, as it asserts its uid) */
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < 4; i++) {
		h ^= (n >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	for (uint32_t k = 0; k < n; k++) {
		for (int i = 0; i < 4; i++) {
			h ^= (groups[k] >> (8 * i)) & 0xff;
			h *= 0x100000001b3ull;
		}
	}
	return h | 1; /* never 0 */
}

/* attr: fid, u32 mode, u32 nlink, u32 uid, u32 gid, u32 rdev, u32 blksize, u64 size,
 * u64 blocks, time atime, time mtime, time ctime, u32 hsm_state, u32 archive_id
 * (100 bytes) */
void wire_attr_put(struct wire_cursor *c, const struct nacre_attr *a)
{
	wire_fid_put(c, &a->fid);
	wire_put_u32(c, a->mode);
	wire_put_u32(c, a->nlink);
	wire_put_u32(c, a->uid);
	wire_put_u32(c, a->gid);
	wire_put_u32(c, a->rdev);
	wire_put_u32(c, a->blksize);
	wire_put_u64(c, a->size);
	wire_put_u64(c, a->blocks);
	time_put(c, &a->atime);
	time_put(c, &a->mtime);
	time_put(c, &a->ctime);
	wire_put_u32(c, a->hsm_state);
	wire_put_u32(c, a->archive_id);
}

void wire_attr_get(struct wire_cursor *c, struct nacre_attr *a)
{
	memset(a, 0, sizeof(*a));
	wire_fid_get(c, &a->fid);
	a->mode = wire_get_u32(c);
	a->nlink = wire_get_u32(c);
	a->uid = wire_get_u32(c);
	a->gid = wire_get_u32(c);
	a->rdev = wire_get_u32(c);
	a->blksize = wire_get_u32(c);
	a->size = wire_get_u64(c);
	a->blocks = wire_get_u64(c);
	time_get(c, &a->atime);
	time_get(c, &a->mtime);
	time_get(c, &a->ctime);
	a->hsm_state = wire_get_u32(c);
	a->archive_id = wire_get_u32(c);
	if ((a->mode & ~MODE_BITS) || (a->hsm_state & ~HSM_BITS))
		wire_cursor_fail(c, -EPROTO);
}

/* statfs: u64 kb_total, u64 kb_free, u64 kb_avail, u64 files, u64 ffree, u32 bsize,
 * u32 namemax (48 bytes) */
void wire_statfs_put(struct wire_cursor *c, const struct nacre_statfs *s)
{
	wire_put_u64(c, s->kb_total);
	wire_put_u64(c, s->kb_free);
	wire_put_u64(c, s->kb_avail);
	wire_put_u64(c, s->files);
	wire_put_u64(c, s->ffree);
	wire_put_u32(c, s->bsize);
	wire_put_u32(c, s->namemax);
}

void wire_statfs_get(struct wire_cursor *c, struct nacre_statfs *s)
{
	memset(s, 0, sizeof(*s));
	s->kb_total = wire_get_u64(c);
	s->kb_free = wire_get_u64(c);
	s->kb_avail = wire_get_u64(c);
	s->files = wire_get_u64(c);
	s->ffree = wire_get_u64(c);
	s->bsize = wire_get_u32(c);
	s->namemax = wire_get_u32(c);
}

/* layout: u16 ncomp (1), then one component: u64 ext_start (0), u64 ext_end (UINT64_MAX),
 * u16 mirror_id (0), u32 pattern, u32 stripe_size, i32 stripe_count, i32 stripe_offset,
 * u32 gen, u32 nosts, u32 ost[nosts]. pattern is RAID0, or 0 for "not set" (a directory
 * without a default, a non-regular file); stripe_count is -1..NACRE_MAX_STRIPES and
 * stripe_offset >= -1; whether the values make a usable layout is layout_check_*()'s job. */
void wire_layout_put(struct wire_cursor *c, const struct nacre_layout *l)
{
	if (l->nosts > NACRE_MAX_STRIPES) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_put_u16(c, 1);
	wire_put_u64(c, 0);
	wire_put_u64(c, LAYOUT_EXT_EOF);
	wire_put_u16(c, 0);
	wire_put_u32(c, l->pattern);
	wire_put_u32(c, l->stripe_size);
	wire_put_i32(c, l->stripe_count);
	wire_put_i32(c, l->stripe_offset);
	wire_put_u32(c, l->gen);
	wire_put_u32(c, l->nosts);
	for (uint32_t i = 0; i < l->nosts; i++)
		wire_put_u32(c, l->ost_idx[i]);
}

void wire_layout_get(struct wire_cursor *c, struct nacre_layout *l)
{
	uint16_t ncomp, mirror;
	uint64_t start, end;

	memset(l, 0, sizeof(*l));
	ncomp = wire_get_u16(c);
	start = wire_get_u64(c);
	end = wire_get_u64(c);
	mirror = wire_get_u16(c);
	l->pattern = wire_get_u32(c);
	l->stripe_size = wire_get_u32(c);
	l->stripe_count = wire_get_i32(c);
	l->stripe_offset = wire_get_i32(c);
	l->gen = wire_get_u32(c);
	l->nosts = wire_get_u32(c);
	if (!wire_cursor_ok(c) || ncomp != 1 || start != 0 || end != LAYOUT_EXT_EOF ||
	    mirror != 0 || (l->pattern != 0 && l->pattern != NACRE_PATTERN_RAID0) ||
	    l->stripe_count < -1 || l->stripe_count > NACRE_MAX_STRIPES ||
	    l->stripe_offset < -1 || l->nosts > NACRE_MAX_STRIPES) {
		l->nosts = 0;
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < l->nosts; i++)
		l->ost_idx[i] = wire_get_u32(c);
}

void wire_name_put(struct wire_cursor *c, const char *name)
{
	size_t n = strlen(name);

	if (n == 0) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	str_put(c, name, NACRE_NAME_MAX);
}

void wire_name_get(struct wire_cursor *c, char out[NACRE_NAME_MAX + 1])
{
	int n = str_get(c, out, 1, NACRE_NAME_MAX);

	if (n < 0)
		return;
	if (memchr(out, '/', (size_t)n) || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
		out[0] = '\0';
		wire_cursor_fail(c, -EPROTO);
	}
}

void wire_path_put(struct wire_cursor *c, const char *path)
{
	str_put(c, path, NACRE_PATH_MAX);
}

void wire_path_get(struct wire_cursor *c, char *out, size_t max)
{
	str_get(c, out, 0, max < NACRE_PATH_MAX ? max : NACRE_PATH_MAX);
}

/* ---- object capabilities ---- */

/* cap (since version 1, with WIRE_FEAT_CAPS): u64 expiry, u32 rights (CAP_* bits, 0..0xf),
 * u32 stripe, u8 mac[16] */
void wire_cap_put(struct wire_cursor *c, const struct wire_cap *cap)
{
	wire_put_u64(c, cap->expiry);
	wire_put_u32(c, cap->rights);
	wire_put_u32(c, cap->stripe);
	wire_put_bytes(c, cap->mac, WIRE_CAP_MAC_LEN);
}

void wire_cap_get(struct wire_cursor *c, struct wire_cap *cap)
{
	cap->expiry = wire_get_u64(c);
	cap->rights = wire_get_u32(c);
	cap->stripe = wire_get_u32(c);
	wire_get_bytes(c, cap->mac, WIRE_CAP_MAC_LEN);
	if (cap->rights & ~0xfu)
		wire_cursor_fail(c, -EPROTO);
}

/* An optional trailing capability: present when exactly WIRE_CAP_LEN bytes are left. */
static void cap_opt_put(struct wire_cursor *c, uint8_t has, const struct wire_cap *cap)
{
	if (has)
		wire_cap_put(c, cap);
}

static void cap_opt_get(struct wire_cursor *c, uint8_t *has, struct wire_cap *cap)
{
	if (!wire_cursor_ok(c) || wire_cursor_left(c) == 0)
		return;
	*has = 1;
	wire_cap_get(c, cap);
}

/* cap_req (since version 1): cred, fid, u64 handle, u32 layout_gen */
void wire_cap_req_encode(struct wire_cursor *c, const struct wire_cap_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u64(c, m->handle);
	wire_put_u32(c, m->layout_gen);
}

void wire_cap_req_decode(struct wire_cursor *c, struct wire_cap_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->handle = wire_get_u64(c);
	m->layout_gen = wire_get_u32(c);
}

/* fid_grant_rep (since WIRE_FEAT_FID_GRANT): u64 seq (nonzero), u32 width
 *   (1..WIRE_FID_GRANT_WIDTH_MAX) */
void wire_fid_grant_rep_encode(struct wire_cursor *c, const struct wire_fid_grant_rep *m)
{
	wire_put_u64(c, m->seq);
	wire_put_u32(c, m->width);
}

void wire_fid_grant_rep_decode(struct wire_cursor *c, struct wire_fid_grant_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->seq = wire_get_u64(c);
	m->width = wire_get_u32(c);
	if (!m->seq || !m->width || m->width > WIRE_FID_GRANT_WIDTH_MAX)
		wire_cursor_fail(c, -EPROTO);
}

/* cap_rep (since version 1): u32 layout_gen, cap */
void wire_cap_rep_encode(struct wire_cursor *c, const struct wire_cap_rep *m)
{
	wire_put_u32(c, m->layout_gen);
	wire_cap_put(c, &m->cap);
}

void wire_cap_rep_decode(struct wire_cursor *c, struct wire_cap_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->layout_gen = wire_get_u32(c);
	wire_cap_get(c, &m->cap);
}

/* ---- connection setup ---- */

/* connect_req (since version 1):
 *   u16 version_min, u16 version_max (1 <= min <= max), u64 features (unknown bits are
 *   ignored: the server answers with the intersection), u8 nonce[16],
 *   str fsname (0..8 bytes; "" or a valid fsname), name name;
 *   with WIRE_FEAT_RECOVERY: u64 client_id, u64 instance;
 *   with WIRE_FEAT_SEC: u8 sec (0..2), u8 sec_flags (WIRE_SEC_RAISE) */
void wire_connect_req_encode(struct wire_cursor *c, const struct wire_connect_req *m)
{
	wire_put_u16(c, m->version_min);
	wire_put_u16(c, m->version_max);
	wire_put_u64(c, m->features);
	wire_put_bytes(c, m->nonce, WIRE_NONCE_LEN);
	str_put(c, m->fsname, NACRE_FSNAME_MAX);
	wire_name_put(c, m->name);
	if (m->features & WIRE_FEAT_RECOVERY) {
		wire_put_u64(c, m->client_id);
		wire_put_u64(c, m->instance);
	}
	if (m->features & WIRE_FEAT_SEC) {
		wire_put_u8(c, m->sec);
		wire_put_u8(c, m->sec_flags);
	}
	if (m->features & WIRE_FEAT_KEY_ID) {
		wire_put_u8(c, m->key.role);
		str_put(c, m->key.name, KEY_NAME_MAX);
		wire_put_u64(c, m->key.gen);
	}
}

void wire_connect_req_decode(struct wire_cursor *c, struct wire_connect_req *m)
{
	memset(m, 0, sizeof(*m));
	m->version_min = wire_get_u16(c);
	m->version_max = wire_get_u16(c);
	m->features = wire_get_u64(c);
	wire_get_bytes(c, m->nonce, WIRE_NONCE_LEN);
	if (str_get(c, m->fsname, 0, NACRE_FSNAME_MAX) > 0 && !fsname_valid(m->fsname))
		wire_cursor_fail(c, -EPROTO);
	wire_name_get(c, m->name);
	if (m->version_min < 1 || m->version_min > m->version_max)
		wire_cursor_fail(c, -EPROTO);
	if (m->features & WIRE_FEAT_RECOVERY) {
		m->client_id = wire_get_u64(c);
		m->instance = wire_get_u64(c);
	}
	if (m->features & WIRE_FEAT_SEC) {
		m->sec = wire_get_u8(c);
		m->sec_flags = wire_get_u8(c);
		if (m->sec > WIRE_SEC_MAX_ || (m->sec_flags & ~(uint32_t)WIRE_SEC_RAISE))
			wire_cursor_fail(c, -EPROTO);
	}
	if (m->features & WIRE_FEAT_KEY_ID) {
		m->key.role = wire_get_u8(c);
		str_get(c, m->key.name, 0, KEY_NAME_MAX);
		m->key.gen = wire_get_u64(c);
		if (!wire_cursor_ok(c) || m->key.role >= KEY_ROLE_MAX_ ||
		    (m->key.role != KEY_ROLE_SERVER &&
		     (!key_name_valid(m->key.name) || m->key.gen == 0)))
			wire_cursor_fail(c, -EPROTO);
	}
}

/* connect_rep (since version 1):
 *   u16 version, u64 features, u8 nonce[16], u8 proof[32], name server_name;
 *   with WIRE_FEAT_RECOVERY: u64 instance, u32 session, u32 recovery_ms, u64 last_committed;
 *   with WIRE_FEAT_SEC: u8 sec (0..2) */
void wire_connect_rep_encode(struct wire_cursor *c, const struct wire_connect_rep *m)
{
	wire_put_u16(c, m->version);
	wire_put_u64(c, m->features);
	wire_put_bytes(c, m->nonce, WIRE_NONCE_LEN);
	wire_put_bytes(c, m->proof, WIRE_PROOF_LEN);
	wire_name_put(c, m->server_name);
	if (m->features & WIRE_FEAT_RECOVERY) {
		wire_put_u64(c, m->instance);
		wire_put_u32(c, m->session);
		wire_put_u32(c, m->recovery_ms);
		wire_put_u64(c, m->last_committed);
	}
	if (m->features & WIRE_FEAT_SEC)
		wire_put_u8(c, m->sec);
}

void wire_connect_rep_decode(struct wire_cursor *c, struct wire_connect_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->version = wire_get_u16(c);
	m->features = wire_get_u64(c);
	wire_get_bytes(c, m->nonce, WIRE_NONCE_LEN);
	wire_get_bytes(c, m->proof, WIRE_PROOF_LEN);
	wire_name_get(c, m->server_name);
	if (m->version < 1)
		wire_cursor_fail(c, -EPROTO);
	if (m->features & WIRE_FEAT_RECOVERY) {
		m->instance = wire_get_u64(c);
		m->session = wire_get_u32(c);
		m->recovery_ms = wire_get_u32(c);
		m->last_committed = wire_get_u64(c);
		if (m->session > WIRE_SESSION_RECOVER)
			wire_cursor_fail(c, -EPROTO);
	}
	if (m->features & WIRE_FEAT_SEC) {
		m->sec = wire_get_u8(c);
		if (m->sec > WIRE_SEC_MAX_)
			wire_cursor_fail(c, -EPROTO);
	}
}

/* auth_req (since version 1): u8 proof[32] */
void wire_auth_req_encode(struct wire_cursor *c, const struct wire_auth_req *m)
{
	wire_put_bytes(c, m->proof, WIRE_PROOF_LEN);
}

void wire_auth_req_decode(struct wire_cursor *c, struct wire_auth_req *m)
{
	wire_get_bytes(c, m->proof, WIRE_PROOF_LEN);
}

/* sec_refusal (with WIRE_FEAT_SEC): u8 min (0..2), str rule (0..96 bytes) */
void wire_sec_refusal_encode(struct wire_cursor *c, const struct wire_sec_refusal *m)
{
	wire_put_u8(c, m->min);
	str_put(c, m->rule, WIRE_SEC_RULE_MAX);
}

void wire_sec_refusal_decode(struct wire_cursor *c, struct wire_sec_refusal *m)
{
	memset(m, 0, sizeof(*m));
	m->min = wire_get_u8(c);
	str_get(c, m->rule, 0, WIRE_SEC_RULE_MAX);
	if (m->min > WIRE_SEC_MAX_)
		wire_cursor_fail(c, -EPROTO);
}

/* ---- MDS requests ---- */

/* fid_req (since version 1): cred, fid */
void wire_fid_req_encode(struct wire_cursor *c, const struct wire_fid_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
}

void wire_fid_req_decode(struct wire_cursor *c, struct wire_fid_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
}

/* name_req (since version 1): cred, fid parent, name name */
void wire_name_req_encode(struct wire_cursor *c, const struct wire_name_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->parent);
	wire_name_put(c, m->name);
}

void wire_name_req_decode(struct wire_cursor *c, struct wire_name_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->parent);
	wire_name_get(c, m->name);
}

/* setattr_req (since version 1):
 *   cred, fid, u32 valid (no bit outside NACRE_SET_ALL_), u32 mode (07777 only), u32 uid,
 *   u32 gid, u64 size, time atime, time mtime, time ctime */
void wire_setattr_req_encode(struct wire_cursor *c, const struct wire_setattr_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->sa.valid);
	wire_put_u32(c, m->sa.mode);
	wire_put_u32(c, m->sa.uid);
	wire_put_u32(c, m->sa.gid);
	wire_put_u64(c, m->sa.size);
	time_put(c, &m->sa.atime);
	time_put(c, &m->sa.mtime);
	time_put(c, &m->sa.ctime);
}

void wire_setattr_req_decode(struct wire_cursor *c, struct wire_setattr_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->sa.valid = wire_get_u32(c);
	m->sa.mode = wire_get_u32(c);
	m->sa.uid = wire_get_u32(c);
	m->sa.gid = wire_get_u32(c);
	m->sa.size = wire_get_u64(c);
	time_get(c, &m->sa.atime);
	time_get(c, &m->sa.mtime);
	time_get(c, &m->sa.ctime);
	if ((m->sa.valid & ~(uint32_t)NACRE_SET_ALL_) || (m->sa.mode & ~07777u))
		wire_cursor_fail(c, -EPROTO);
}

/* create_req (since version 1):
 *   cred, fid parent, name name, u32 mode (type + permission bits), u32 rdev, u32 flags
 *   (open(2) flags; the MDS honours O_EXCL), u8 has_layout (0 or 1),
 *   layout (present only when has_layout is 1), str target (0..4096 bytes; "" unless
 *   SYMLINK), u32 umask (0..0777; present only when flags has WIRE_CREATE_UMASK, which
 *   came with POSIX ACLs), fid (present only when flags has WIRE_CREATE_FID, which came
 *   with FID grants; seq and oid nonzero) */
void wire_create_req_encode(struct wire_cursor *c, const struct wire_create_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->parent);
	wire_name_put(c, m->name);
	wire_put_u32(c, m->mode);
	wire_put_u32(c, m->rdev);
	wire_put_u32(c, m->flags);
	wire_put_u8(c, m->has_layout ? 1 : 0);
	if (m->has_layout)
		wire_layout_put(c, &m->layout);
	wire_path_put(c, m->target);
	if (m->flags & WIRE_CREATE_UMASK)
		wire_put_u32(c, m->umask);
	if (m->flags & WIRE_CREATE_FID)
		wire_fid_put(c, &m->fid);
}

void wire_create_req_decode(struct wire_cursor *c, struct wire_create_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->parent);
	wire_name_get(c, m->name);
	m->mode = wire_get_u32(c);
	m->rdev = wire_get_u32(c);
	m->flags = wire_get_u32(c);
	m->has_layout = wire_get_u8(c);
	if (m->has_layout > 1 || (m->mode & ~MODE_BITS)) {
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	if (m->has_layout)
		wire_layout_get(c, &m->layout);
	wire_path_get(c, m->target, NACRE_PATH_MAX);
	if (m->flags & WIRE_CREATE_UMASK) {
		m->umask = wire_get_u32(c);
		if (m->umask & ~0777u)
			wire_cursor_fail(c, -EPROTO);
	}
	if (m->flags & WIRE_CREATE_FID) {
		wire_fid_get(c, &m->fid);
		if (!m->fid.seq || !m->fid.oid)
			wire_cursor_fail(c, -EPROTO);
	}
}

/* rename_req (since version 1):
 *   cred, fid sparent, name sname, fid dparent, name dname, u32 flags (RENAME_NOREPLACE 1 |
 *   RENAME_EXCHANGE 2; other bits fail) */
void wire_rename_req_encode(struct wire_cursor *c, const struct wire_rename_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->sparent);
	wire_name_put(c, m->sname);
	wire_fid_put(c, &m->dparent);
	wire_name_put(c, m->dname);
	wire_put_u32(c, m->flags);
}

void wire_rename_req_decode(struct wire_cursor *c, struct wire_rename_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->sparent);
	wire_name_get(c, m->sname);
	wire_fid_get(c, &m->dparent);
	wire_name_get(c, m->dname);
	m->flags = wire_get_u32(c);
	if (m->flags & ~3u)
		wire_cursor_fail(c, -EPROTO);
}

/* link_req (since version 1): cred, fid fid, fid parent, name name */
void wire_link_req_encode(struct wire_cursor *c, const struct wire_link_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_fid_put(c, &m->parent);
	wire_name_put(c, m->name);
}

void wire_link_req_decode(struct wire_cursor *c, struct wire_link_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	wire_fid_get(c, &m->parent);
	wire_name_get(c, m->name);
}

/* readdir_req (since version 1): cred, fid, u64 cookie, u32 max_bytes, then (with
 * WIRE_FEAT_READDIR_PLUS, only when not 0) u32 flags (WIRE_READDIR_PLUS; other bits fail).
 * The decoder caps max_bytes at WIRE_READDIR_MAX_BYTES so a server cannot be asked for
 * more. */
void wire_readdir_req_encode(struct wire_cursor *c, const struct wire_readdir_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u64(c, m->cookie);
	wire_put_u32(c, m->max_bytes);
	if (m->flags)
		wire_put_u32(c, m->flags);
}

void wire_readdir_req_decode(struct wire_cursor *c, struct wire_readdir_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->cookie = wire_get_u64(c);
	m->max_bytes = wire_get_u32(c);
	if (m->max_bytes > WIRE_READDIR_MAX_BYTES)
		m->max_bytes = WIRE_READDIR_MAX_BYTES;
	if (wire_cursor_ok(c) && wire_cursor_left(c) > 0) {
		m->flags = wire_get_u32(c);
		if (!m->flags || (m->flags & ~WIRE_READDIR_PLUS))
			wire_cursor_fail(c, -EPROTO); /* 0 is never sent: one encoding each */
	}
}

/* open_req (since version 1): cred, fid, u32 flags (open(2) flags, passed through) */
void wire_open_req_encode(struct wire_cursor *c, const struct wire_open_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->flags);
}

void wire_open_req_decode(struct wire_cursor *c, struct wire_open_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->flags = wire_get_u32(c);
}

/* open_rep (since version 1): attr, layout, u64 handle; with WIRE_FEAT_CAPS, a cap when
 * has_cap (any byte after the handle starts it) */
void wire_open_rep_encode(struct wire_cursor *c, const struct wire_open_rep *m)
{
	wire_attr_put(c, &m->attr);
	wire_layout_put(c, &m->layout);
	wire_put_u64(c, m->handle);
	cap_opt_put(c, m->has_cap, &m->cap);
}

void wire_open_rep_decode(struct wire_cursor *c, struct wire_open_rep *m)
{
	memset(m, 0, sizeof(*m));
	wire_attr_get(c, &m->attr);
	wire_layout_get(c, &m->layout);
	m->handle = wire_get_u64(c);
	cap_opt_get(c, &m->has_cap, &m->cap);
}

/* close_req (since version 1): cred, fid, u64 handle, u64 size, u8 has_mtime (0 or 1),
 * time mtime (always present; meaningful when has_mtime is 1); then, only when some extra
 * is sent (each only to a peer with its feature bit): u8 extras (WIRE_CLOSE_X_*, at least
 * one bit, no unknown one), time atime if WIRE_CLOSE_X_ATIME, u64 blocks if
 * WIRE_CLOSE_X_BLOCKS. An older MDS sees the version 1 body. */
void wire_close_req_encode(struct wire_cursor *c, const struct wire_close_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u64(c, m->handle);
	wire_put_u64(c, m->size);
	wire_put_u8(c, m->has_mtime ? 1 : 0);
	time_put(c, &m->mtime);
	uint8_t extras = (m->has_atime ? WIRE_CLOSE_X_ATIME : 0) |
			 (m->has_blocks ? WIRE_CLOSE_X_BLOCKS : 0);
	if (extras) {
		wire_put_u8(c, extras);
		if (m->has_atime)
			time_put(c, &m->atime);
		if (m->has_blocks)
			wire_put_u64(c, m->blocks);
	}
}

void wire_close_req_decode(struct wire_cursor *c, struct wire_close_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->handle = wire_get_u64(c);
	m->size = wire_get_u64(c);
	m->has_mtime = wire_get_u8(c);
	time_get(c, &m->mtime);
	if (m->has_mtime > 1)
		wire_cursor_fail(c, -EPROTO);
	if (wire_cursor_ok(c) && wire_cursor_left(c) > 0) {
		uint8_t extras = wire_get_u8(c);

		if (extras == 0 || (extras & ~(WIRE_CLOSE_X_ATIME | WIRE_CLOSE_X_BLOCKS)))
			wire_cursor_fail(c, -EPROTO);
		m->has_atime = (extras & WIRE_CLOSE_X_ATIME) != 0;
		if (m->has_atime)
			time_get(c, &m->atime);
		m->has_blocks = (extras & WIRE_CLOSE_X_BLOCKS) != 0;
		if (m->has_blocks)
			m->blocks = wire_get_u64(c);
	}
}

/* xattr_req (since version 1):
 *   cred, fid, str name (0..255 bytes, no NUL; '/' and '.' allowed: an xattr name is not a
 *   path component; "" for LISTXATTR), u32 flags (XATTR_CREATE 1 | XATTR_REPLACE 2),
 *   u32 size, blob value (0..NACRE_XATTR_MAX bytes; decoded as a view) */
void wire_xattr_req_encode(struct wire_cursor *c, const struct wire_xattr_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	str_put(c, m->name, NACRE_NAME_MAX);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->size);
	if (m->value_len > NACRE_XATTR_MAX) {
		wire_cursor_fail(c, -E2BIG);
		return;
	}
	wire_put_blob(c, m->value, m->value_len);
}

void wire_xattr_req_decode(struct wire_cursor *c, struct wire_xattr_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	str_get(c, m->name, 0, NACRE_NAME_MAX);
	m->flags = wire_get_u32(c);
	m->size = wire_get_u32(c);
	m->value = wire_get_blob(c, NACRE_XATTR_MAX, &m->value_len);
	if (m->flags & ~3u)
		wire_cursor_fail(c, -EPROTO);
	if (!wire_cursor_ok(c)) {
		m->value = NULL;
		m->value_len = 0;
	}
}

/* layout_set_req (since version 1): cred, fid, layout */
void wire_layout_set_req_encode(struct wire_cursor *c, const struct wire_layout_set_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_layout_put(c, &m->layout);
}

void wire_layout_set_req_decode(struct wire_cursor *c, struct wire_layout_set_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	wire_layout_get(c, &m->layout);
}

/* target_reg (since version 1):
 *   str fsname (a valid fsname, 1..8 bytes), u32 type (NACRE_TGT_MDT or NACRE_TGT_OST),
 *   u32 index (0..65535), str addr (1..63 bytes), statfs */
void wire_target_reg_encode(struct wire_cursor *c, const struct wire_target_reg *m)
{
	str_put(c, m->fsname, NACRE_FSNAME_MAX);
	wire_put_u32(c, m->type);
	wire_put_u32(c, m->index);
	str_put(c, m->addr, NACRE_ADDR_MAX);
	wire_statfs_put(c, &m->st);
}

void wire_target_reg_decode(struct wire_cursor *c, struct wire_target_reg *m)
{
	memset(m, 0, sizeof(*m));
	if (str_get(c, m->fsname, 1, NACRE_FSNAME_MAX) > 0 && !fsname_valid(m->fsname))
		wire_cursor_fail(c, -EPROTO);
	m->type = wire_get_u32(c);
	m->index = wire_get_u32(c);
	str_get(c, m->addr, 1, NACRE_ADDR_MAX);
	wire_statfs_get(c, &m->st);
	if ((m->type != NACRE_TGT_MDT && m->type != NACRE_TGT_OST) || m->index > 65535)
		wire_cursor_fail(c, -EPROTO);
}

/* ---- MDS replies ---- */

/* Writes a header again over the one encoded at pos (see wire.h: streamed lists). Returns 1
 * with w a write cursor over those len bytes, or 0 (c failed, or nothing written there). */
static int header_at(struct wire_cursor *c, size_t pos, size_t len, struct wire_cursor *w)
{
	if (!wire_cursor_ok(c))
		return 0;
	if (pos > wire_cursor_pos(c) || wire_cursor_pos(c) - pos < len) {
		wire_cursor_fail(c, -EINVAL);
		return 0;
	}
	wire_cursor_init_write(w, c->buf + pos, len);
	return 1;
}

/* cred_req (since version 1): cred */
void wire_cred_req_encode(struct wire_cursor *c, const struct wire_cred_req *m)
{
	wire_cred_put(c, &m->cred);
}

void wire_cred_req_decode(struct wire_cursor *c, struct wire_cred_req *m)
{
	wire_cred_get(c, &m->cred);
}

/* attr_rep (since version 1): attr */
void wire_attr_rep_encode(struct wire_cursor *c, const struct wire_attr_rep *m)
{
	wire_attr_put(c, &m->attr);
}

void wire_attr_rep_decode(struct wire_cursor *c, struct wire_attr_rep *m)
{
	wire_attr_get(c, &m->attr);
}

/* create_rep (since version 1): attr, layout, then u64 handle when the request had
 * WIRE_CREATE_OPEN (an MDS that predates the flag sends none): any byte after the layout
 * starts the handle. */
void wire_create_rep_encode(struct wire_cursor *c, const struct wire_create_rep *m)
{
	wire_attr_put(c, &m->attr);
	wire_layout_put(c, &m->layout);
	if (m->has_handle) {
		wire_put_u64(c, m->handle);
		cap_opt_put(c, m->has_cap, &m->cap);
	}
}

void wire_create_rep_decode(struct wire_cursor *c, struct wire_create_rep *m)
{
	memset(m, 0, sizeof(*m));
	wire_attr_get(c, &m->attr);
	wire_layout_get(c, &m->layout);
	if (wire_cursor_ok(c) && wire_cursor_left(c) > 0) {
		m->has_handle = 1;
		m->handle = wire_get_u64(c);
		cap_opt_get(c, &m->has_cap, &m->cap);
	}
}

/* path_rep (since version 1): str path (0..4096) */
void wire_path_rep_encode(struct wire_cursor *c, const struct wire_path_rep *m)
{
	wire_path_put(c, m->path);
}

void wire_path_rep_decode(struct wire_cursor *c, struct wire_path_rep *m)
{
	memset(m, 0, sizeof(*m));
	wire_path_get(c, m->path, NACRE_PATH_MAX);
}

/* layout_rep (since version 1): layout; with WIRE_FEAT_CAPS, a cap when has_cap */
void wire_layout_rep_encode(struct wire_cursor *c, const struct wire_layout_rep *m)
{
	wire_layout_put(c, &m->layout);
	cap_opt_put(c, m->has_cap, &m->cap);
}

void wire_layout_rep_decode(struct wire_cursor *c, struct wire_layout_rep *m)
{
	memset(m, 0, sizeof(*m));
	wire_layout_get(c, &m->layout);
	cap_opt_get(c, &m->has_cap, &m->cap);
}

/* statfs_rep (since version 1): statfs */
void wire_statfs_rep_encode(struct wire_cursor *c, const struct wire_statfs_rep *m)
{
	wire_statfs_put(c, &m->st);
}

void wire_statfs_rep_decode(struct wire_cursor *c, struct wire_statfs_rep *m)
{
	wire_statfs_get(c, &m->st);
}

/* xattr_rep (since version 1): the value bytes, no length: the body's length is the value's
 * (decoded as a view of the rest of the body). */
void wire_xattr_rep_encode(struct wire_cursor *c, const struct wire_xattr_rep *m)
{
	wire_put_bytes(c, m->value, m->len);
}

void wire_xattr_rep_decode(struct wire_cursor *c, struct wire_xattr_rep *m)
{
	size_t n = wire_cursor_left(c);

	memset(m, 0, sizeof(*m));
	if (!wire_cursor_ok(c) || n == 0)
		return;
	m->value = wire_get_view(c, n);
	m->len = (uint32_t)n;
}

/* xattr_len_rep (since version 1): u32 len (<= NACRE_XATTR_MAX) */
void wire_xattr_len_rep_encode(struct wire_cursor *c, const struct wire_xattr_len_rep *m)
{
	wire_put_u32(c, m->len);
}

void wire_xattr_len_rep_decode(struct wire_cursor *c, struct wire_xattr_len_rep *m)
{
	m->len = wire_get_u32(c);
	if (m->len > NACRE_XATTR_MAX)
		wire_cursor_fail(c, -EPROTO);
}

/* readdir_rep (since version 1): u32 count, u8 eof (any nonzero value is "end"), then count
 * dirents: the decoder checks that count of the smallest entry fit in the bytes left. */
#define READDIR_REP_LEN 5

void wire_readdir_rep_encode(struct wire_cursor *c, const struct wire_readdir_rep *m)
{
	wire_put_u32(c, m->count);
	wire_put_u8(c, m->eof);
}

void wire_readdir_rep_decode(struct wire_cursor *c, struct wire_readdir_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->count = wire_get_u32(c);
	m->eof = wire_get_u8(c);
	if (wire_cursor_ok(c) && m->count > wire_cursor_left(c) / WIRE_DIRENT_MIN)
		wire_cursor_fail(c, -EPROTO);
}

void wire_readdir_rep_patch(struct wire_cursor *c, size_t pos, const struct wire_readdir_rep *m)
{
	struct wire_cursor w;

	if (header_at(c, pos, READDIR_REP_LEN, &w))
		wire_readdir_rep_encode(&w, m);
}

/* links_req (since LINKS): cred, fid, u32 start */
void wire_links_req_encode(struct wire_cursor *c, const struct wire_links_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->start);
}

void wire_links_req_decode(struct wire_cursor *c, struct wire_links_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->start = wire_get_u32(c);
}

/* links_rep (since LINKS): u32 count, u32 hidden, u32 next, u8 eof (0 or 1), then count
 * link entries: the decoder checks that count of the smallest entry fit in the bytes left. */
#define LINKS_REP_LEN 13

void wire_links_rep_encode(struct wire_cursor *c, const struct wire_links_rep *m)
{
	wire_put_u32(c, m->count);
	wire_put_u32(c, m->hidden);
	wire_put_u32(c, m->next);
	wire_put_u8(c, m->eof ? 1 : 0);
}

void wire_links_rep_decode(struct wire_cursor *c, struct wire_links_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->count = wire_get_u32(c);
	m->hidden = wire_get_u32(c);
	m->next = wire_get_u32(c);
	m->eof = wire_get_u8(c);
	if (wire_cursor_ok(c) &&
	    (m->eof > 1 || m->count > wire_cursor_left(c) / WIRE_LINK_ENTRY_MIN))
		wire_cursor_fail(c, -EPROTO);
}

void wire_links_rep_patch(struct wire_cursor *c, size_t pos, const struct wire_links_rep *m)
{
	struct wire_cursor w;

	if (header_at(c, pos, LINKS_REP_LEN, &w))
		wire_links_rep_encode(&w, m);
}

/* link entry (since LINKS): fid parent, name name */
void wire_link_entry_put(struct wire_cursor *c, const struct wire_link_entry *e)
{
	wire_fid_put(c, &e->parent);
	wire_name_put(c, e->name);
}

void wire_link_entry_get(struct wire_cursor *c, struct wire_link_entry *e)
{
	memset(e, 0, sizeof(*e));
	wire_fid_get(c, &e->parent);
	wire_name_get(c, e->name);
}

/* targets_rep (since version 1): u32 count, then count targets: the decoder checks that
 * count of the smallest target fit in the bytes left. */
void wire_targets_rep_encode(struct wire_cursor *c, const struct wire_targets_rep *m)
{
	wire_put_u32(c, m->count);
}

void wire_targets_rep_decode(struct wire_cursor *c, struct wire_targets_rep *m)
{
	m->count = wire_get_u32(c);
	if (wire_cursor_ok(c) && m->count > wire_cursor_left(c) / WIRE_TARGET_MIN)
		wire_cursor_fail(c, -EPROTO);
}

/* ---- keys ---- */

/* key_req (since the key table): cred, u32 role (0..2), str name (a valid key name) */
void wire_key_req_encode(struct wire_cursor *c, const struct wire_key_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->role);
	str_put(c, m->name, KEY_NAME_MAX);
}

void wire_key_req_decode(struct wire_cursor *c, struct wire_key_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->role = wire_get_u32(c);
	str_get(c, m->name, 0, KEY_NAME_MAX);
	if (wire_cursor_ok(c) && (m->role >= KEY_ROLE_MAX_ || !key_name_valid(m->name)))
		wire_cursor_fail(c, -EPROTO);
}

/* key_list (since the key table): u32 count (<= 512), then count key entries: the decoder
 * checks that count of the smallest entry fit in the bytes left. */
void wire_key_list_encode(struct wire_cursor *c, const struct wire_key_list *m)
{
	wire_put_u32(c, m->count);
}

void wire_key_list_decode(struct wire_cursor *c, struct wire_key_list *m)
{
	m->count = wire_get_u32(c);
	if (wire_cursor_ok(c) && (m->count > WIRE_KEY_LIST_MAX ||
				  m->count > wire_cursor_left(c) / WIRE_KEY_ENTRY_MIN))
		wire_cursor_fail(c, -EPROTO);
}

/* key_update (since the key table): a key_list */
void wire_key_update_encode(struct wire_cursor *c, const struct wire_key_update *m)
{
	struct wire_key_list l = {.count = m->count};
	wire_key_list_encode(c, &l);
}

void wire_key_update_decode(struct wire_cursor *c, struct wire_key_update *m)
{
	struct wire_key_list l;
	wire_key_list_decode(c, &l);
	m->count = l.count;
}

/* key entry: str name (a valid key name), u8 role (1..2), u64 gen (>= 1), u32 revoked
 * (0..1) */
void wire_key_entry_put(struct wire_cursor *c, const struct wire_key_entry *e)
{
	str_put(c, e->name, KEY_NAME_MAX);
	wire_put_u8(c, (uint8_t)e->role);
	wire_put_u64(c, e->gen);
	wire_put_u32(c, e->revoked);
}

void wire_key_entry_get(struct wire_cursor *c, struct wire_key_entry *e)
{
	memset(e, 0, sizeof(*e));
	str_get(c, e->name, 0, KEY_NAME_MAX);
	e->role = wire_get_u8(c);
	e->gen = wire_get_u64(c);
	e->revoked = wire_get_u32(c);
	if (wire_cursor_ok(c) && (!key_name_valid(e->name) || e->role == KEY_ROLE_SERVER ||
				  e->role >= KEY_ROLE_MAX_ || e->gen == 0 || e->revoked > 1))
		wire_cursor_fail(c, -EPROTO);
}

/* ---- HSM ---- */

/* hsm_request (since version 1):
 *   cred, u32 action (NACRE_HUA_ARCHIVE..CANCEL), u32 archive_id, u32 flags (0),
 *   u32 nfids (1..WIRE_HSM_FIDS_MAX), then exactly nfids fids: the decoder reads the header
 *   and checks that nfids * 16 bytes remain; the caller reads them with wire_fid_get. */
void wire_hsm_request_encode(struct wire_cursor *c, const struct wire_hsm_request *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->action);
	wire_put_u32(c, m->archive_id);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->nfids);
}

void wire_hsm_request_decode(struct wire_cursor *c, struct wire_hsm_request *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->action = wire_get_u32(c);
	m->archive_id = wire_get_u32(c);
	m->flags = wire_get_u32(c);
	m->nfids = wire_get_u32(c);
	if (!wire_cursor_ok(c))
		return;
	if (m->action < NACRE_HUA_ARCHIVE || m->action > NACRE_HUA_CANCEL || m->flags != 0 ||
	    m->nfids == 0 || m->nfids > WIRE_HSM_FIDS_MAX ||
	    wire_cursor_left(c) != (size_t)m->nfids * 16)
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_state (since version 1): u32 state (NACRE_HS_* bits only), u32 archive_id */
void wire_hsm_state_encode(struct wire_cursor *c, const struct wire_hsm_state *m)
{
	wire_put_u32(c, m->state);
	wire_put_u32(c, m->archive_id);
}

void wire_hsm_state_decode(struct wire_cursor *c, struct wire_hsm_state *m)
{
	m->state = wire_get_u32(c);
	m->archive_id = wire_get_u32(c);
	if (m->state & ~WIRE_HSM_STATE_BITS)
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_state_set (since version 1): cred, fid, u32 set, u32 clear (NACRE_HS_* bits, disjoint),
 * u32 archive_id (0 = keep) */
void wire_hsm_state_set_encode(struct wire_cursor *c, const struct wire_hsm_state_set *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->set);
	wire_put_u32(c, m->clear);
	wire_put_u32(c, m->archive_id);
}

void wire_hsm_state_set_decode(struct wire_cursor *c, struct wire_hsm_state_set *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->set = wire_get_u32(c);
	m->clear = wire_get_u32(c);
	m->archive_id = wire_get_u32(c);
	if ((m->set | m->clear) & ~WIRE_HSM_STATE_BITS || (m->set & m->clear))
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_list_req (since version 1): cred, u64 cookie, u32 max (capped at WIRE_HSM_POLL_MAX by
 * the decoder) */
void wire_hsm_list_req_encode(struct wire_cursor *c, const struct wire_hsm_list_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u64(c, m->cookie);
	wire_put_u32(c, m->max);
}

void wire_hsm_list_req_decode(struct wire_cursor *c, struct wire_hsm_list_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->cookie = wire_get_u64(c);
	m->max = wire_get_u32(c);
	if (m->max > WIRE_HSM_POLL_MAX)
		m->max = WIRE_HSM_POLL_MAX;
}

/* hsm_agent_reg (since version 1): cred, u32 max_active (1..1024), u32 nids
 * (0..WIRE_HSM_ARCHIVES_MAX), u32 ids[nids] (each >= 1) */
void wire_hsm_agent_reg_encode(struct wire_cursor *c, const struct wire_hsm_agent_reg *m)
{
	if (m->nids > WIRE_HSM_ARCHIVES_MAX) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->max_active);
	wire_put_u32(c, m->nids);
	for (uint32_t i = 0; i < m->nids; i++)
		wire_put_u32(c, m->ids[i]);
}

void wire_hsm_agent_reg_decode(struct wire_cursor *c, struct wire_hsm_agent_reg *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->max_active = wire_get_u32(c);
	m->nids = wire_get_u32(c);
	if (!wire_cursor_ok(c) || m->nids > WIRE_HSM_ARCHIVES_MAX || m->max_active < 1 ||
	    m->max_active > 1024) {
		m->nids = 0;
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < m->nids; i++) {
		m->ids[i] = wire_get_u32(c);
		if (m->ids[i] == 0)
			wire_cursor_fail(c, -EPROTO);
	}
}

/* hsm_poll_req (since version 1): cred, u32 max (1..WIRE_HSM_POLL_MAX), u32 wait_ms (capped
 * at WIRE_HSM_WAIT_MAX_MS by the decoder) */
void wire_hsm_poll_req_encode(struct wire_cursor *c, const struct wire_hsm_poll_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->max);
	wire_put_u32(c, m->wait_ms);
}

void wire_hsm_poll_req_decode(struct wire_cursor *c, struct wire_hsm_poll_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->max = wire_get_u32(c);
	m->wait_ms = wire_get_u32(c);
	if (m->max < 1 || m->max > WIRE_HSM_POLL_MAX)
		wire_cursor_fail(c, -EPROTO);
	if (m->wait_ms > WIRE_HSM_WAIT_MAX_MS)
		m->wait_ms = WIRE_HSM_WAIT_MAX_MS;
}

/* hsm_progress (since version 1): cred, u64 cookie, fid, u64 bytes_done, u64 bytes_total,
 * u32 flags (WIRE_HSM_PROGRESS_FINAL only), i32 status (<= 0; 0 unless FINAL), str path
 * (0..4096) */
void wire_hsm_progress_encode(struct wire_cursor *c, const struct wire_hsm_progress *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u64(c, m->cookie);
	wire_fid_put(c, &m->fid);
	wire_put_u64(c, m->bytes_done);
	wire_put_u64(c, m->bytes_total);
	wire_put_u32(c, m->flags);
	wire_put_i32(c, m->status);
	wire_path_put(c, m->path);
}

void wire_hsm_progress_decode(struct wire_cursor *c, struct wire_hsm_progress *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->cookie = wire_get_u64(c);
	wire_fid_get(c, &m->fid);
	m->bytes_done = wire_get_u64(c);
	m->bytes_total = wire_get_u64(c);
	m->flags = wire_get_u32(c);
	m->status = wire_get_i32(c);
	wire_path_get(c, m->path, NACRE_PATH_MAX);
	if ((m->flags & ~(uint32_t)WIRE_HSM_PROGRESS_FINAL) || m->status > 0 ||
	    (m->status != 0 && !(m->flags & WIRE_HSM_PROGRESS_FINAL)))
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_import_req (since version 1): cred, fid parent, name name, u32 mode (07777 only),
 * u32 uid, u32 gid, u64 size (<= INT64_MAX), time mtime, u32 archive_id (>= 1),
 * str path (1..4096) */
void wire_hsm_import_req_encode(struct wire_cursor *c, const struct wire_hsm_import_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->parent);
	wire_name_put(c, m->name);
	wire_put_u32(c, m->mode);
	wire_put_u32(c, m->uid);
	wire_put_u32(c, m->gid);
	wire_put_u64(c, m->size);
	time_put(c, &m->mtime);
	wire_put_u32(c, m->archive_id);
	wire_path_put(c, m->path);
}

void wire_hsm_import_req_decode(struct wire_cursor *c, struct wire_hsm_import_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->parent);
	wire_name_get(c, m->name);
	m->mode = wire_get_u32(c);
	m->uid = wire_get_u32(c);
	m->gid = wire_get_u32(c);
	m->size = wire_get_u64(c);
	time_get(c, &m->mtime);
	m->archive_id = wire_get_u32(c);
	str_get(c, m->path, 1, NACRE_PATH_MAX);
	if ((m->mode & ~07777u) || m->size > (uint64_t)INT64_MAX || m->archive_id == 0)
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_action (since version 1): see wire.h */
void wire_hsm_action_put(struct wire_cursor *c, const struct nacre_hsm_action *a)
{
	wire_put_u64(c, a->cookie);
	wire_put_u32(c, a->action);
	wire_put_u32(c, a->status);
	wire_fid_put(c, &a->fid);
	wire_put_u32(c, a->archive_id);
	wire_put_u32(c, a->flags);
	wire_put_u64(c, a->bytes_done);
	wire_put_u64(c, a->bytes_total);
	wire_put_i32(c, a->err);
	time_put(c, &a->ctime);
	time_put(c, &a->mtime);
	wire_path_put(c, a->path);
}

void wire_hsm_action_get(struct wire_cursor *c, struct nacre_hsm_action *a)
{
	memset(a, 0, sizeof(*a));
	a->cookie = wire_get_u64(c);
	a->action = wire_get_u32(c);
	a->status = wire_get_u32(c);
	wire_fid_get(c, &a->fid);
	a->archive_id = wire_get_u32(c);
	a->flags = wire_get_u32(c);
	a->bytes_done = wire_get_u64(c);
	a->bytes_total = wire_get_u64(c);
	a->err = wire_get_i32(c);
	time_get(c, &a->ctime);
	time_get(c, &a->mtime);
	wire_path_get(c, a->path, NACRE_PATH_MAX);
	if (a->action < NACRE_HSMA_ARCHIVE || a->action > NACRE_HSMA_CANCEL ||
	    a->status > NACRE_HAS_SUCCEED || a->err > 0)
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_request_rep (since version 1): u32 nfids (<= WIRE_HSM_FIDS_MAX), then exactly nfids
 * i32 statuses, read with wire_hsm_rc_get. */
void wire_hsm_request_rep_encode(struct wire_cursor *c, const struct wire_hsm_request_rep *m)
{
	wire_put_u32(c, m->nfids);
}

void wire_hsm_request_rep_decode(struct wire_cursor *c, struct wire_hsm_request_rep *m)
{
	m->nfids = wire_get_u32(c);
	if (wire_cursor_ok(c) && (m->nfids > WIRE_HSM_FIDS_MAX ||
				  wire_cursor_left(c) != (size_t)m->nfids * 4))
		wire_cursor_fail(c, -EPROTO);
}

void wire_hsm_rc_put(struct wire_cursor *c, int32_t rc)
{
	wire_put_i32(c, rc);
}

void wire_hsm_rc_get(struct wire_cursor *c, int32_t *rc)
{
	*rc = wire_get_i32(c);
}

/* hsm_action_rep (since version 1): u8 has (0 or 1), then one hsm_action if has is 1 */
void wire_hsm_action_rep_encode(struct wire_cursor *c, const struct wire_hsm_action_rep *m)
{
	wire_put_u8(c, m->has ? 1 : 0);
}

void wire_hsm_action_rep_decode(struct wire_cursor *c, struct wire_hsm_action_rep *m)
{
	m->has = wire_get_u8(c);
	if (m->has > 1)
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_list_rep (since version 1): u32 count, u8 eof (0 or 1), then count hsm_action: the
 * decoder checks that count of the smallest action fit in the bytes left. */
#define HSM_LIST_REP_LEN 5

void wire_hsm_list_rep_encode(struct wire_cursor *c, const struct wire_hsm_list_rep *m)
{
	wire_put_u32(c, m->count);
	wire_put_u8(c, m->eof ? 1 : 0);
}

void wire_hsm_list_rep_decode(struct wire_cursor *c, struct wire_hsm_list_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->count = wire_get_u32(c);
	m->eof = wire_get_u8(c);
	if (wire_cursor_ok(c) &&
	    (m->eof > 1 || m->count > wire_cursor_left(c) / WIRE_HSM_ACTION_MIN))
		wire_cursor_fail(c, -EPROTO);
}

void wire_hsm_list_rep_patch(struct wire_cursor *c, size_t pos, const struct wire_hsm_list_rep *m)
{
	struct wire_cursor w;

	if (header_at(c, pos, HSM_LIST_REP_LEN, &w))
		wire_hsm_list_rep_encode(&w, m);
}

/* hsm_poll_rep (since version 1): u32 count, then count hsm_action (checked as for a list) */
void wire_hsm_poll_rep_encode(struct wire_cursor *c, const struct wire_hsm_poll_rep *m)
{
	wire_put_u32(c, m->count);
}

void wire_hsm_poll_rep_decode(struct wire_cursor *c, struct wire_hsm_poll_rep *m)
{
	m->count = wire_get_u32(c);
	if (wire_cursor_ok(c) && m->count > wire_cursor_left(c) / WIRE_HSM_ACTION_MIN)
		wire_cursor_fail(c, -EPROTO);
}

/* hsm_progress_rep (since version 1): u32 flags (WIRE_HSM_REP_*; unknown bits ignored) */
void wire_hsm_progress_rep_encode(struct wire_cursor *c, const struct wire_hsm_progress_rep *m)
{
	wire_put_u32(c, m->flags);
}

void wire_hsm_progress_rep_decode(struct wire_cursor *c, struct wire_hsm_progress_rep *m)
{
	m->flags = wire_get_u32(c);
}

/* ---- OSS requests ---- */

/* ost_io_req (since version 1):
 *   u32 ost_idx (0..65535), fid, u32 stripe_idx (< NACRE_MAX_STRIPES), u32 layout_gen,
 *   u64 offset, u64 len; offset + len must fit in an off_t. Per-opcode limits on len (READ
 *   <= WIRE_BULK_MAX, WRITE == bulk length) are the server's to check. Then, with
 *   has_cap, the object's cap (any byte after len starts it), and after it, with
 *   WIRE_FEAT_OST_JOBID, u8 length (1..NACRE_JOBID_MAX) and the job id (wire_jobid_valid;
 *   any byte after the cap starts it). */
void wire_ost_io_req_encode(struct wire_cursor *c, const struct wire_ost_io_req *m)
{
	wire_put_u32(c, m->ost_idx);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->stripe_idx);
	wire_put_u32(c, m->layout_gen);
	wire_put_u64(c, m->offset);
	wire_put_u64(c, m->len);
	cap_opt_put(c, m->has_cap, &m->cap);
	size_t jl = strnlen(m->jobid, sizeof(m->jobid));
	if (m->has_cap && jl) {
		if (!wire_jobid_valid(m->jobid, jl) || jl > NACRE_JOBID_MAX) {
			wire_cursor_fail(c, -EINVAL);
			return;
		}
		wire_put_u8(c, (uint8_t)jl);
		wire_put_bytes(c, m->jobid, jl);
	}
}

void wire_ost_io_req_decode(struct wire_cursor *c, struct wire_ost_io_req *m)
{
	memset(m, 0, sizeof(*m));
	m->ost_idx = wire_get_u32(c);
	wire_fid_get(c, &m->fid);
	m->stripe_idx = wire_get_u32(c);
	m->layout_gen = wire_get_u32(c);
	m->offset = wire_get_u64(c);
	m->len = wire_get_u64(c);
	cap_opt_get(c, &m->has_cap, &m->cap);
	if (m->has_cap && wire_cursor_ok(c) && wire_cursor_left(c) > 0) {
		uint8_t jl = wire_get_u8(c);
		if (jl == 0 || jl > NACRE_JOBID_MAX) {
			wire_cursor_fail(c, -EPROTO);
			return;
		}
		wire_get_bytes(c, m->jobid, jl);
		if (wire_cursor_ok(c) && !wire_jobid_valid(m->jobid, jl))
			wire_cursor_fail(c, -EPROTO);
	}
	if (m->ost_idx > 65535 || m->stripe_idx >= NACRE_MAX_STRIPES ||
	    m->offset > (uint64_t)INT64_MAX || m->len > (uint64_t)INT64_MAX - m->offset)
		wire_cursor_fail(c, -EPROTO);
}

/* ost_attr_rep (since version 1): u64 size, u64 blocks */
void wire_ost_attr_rep_encode(struct wire_cursor *c, const struct wire_ost_attr_rep *m)
{
	wire_put_u64(c, m->size);
	wire_put_u64(c, m->blocks);
}

void wire_ost_attr_rep_decode(struct wire_cursor *c, struct wire_ost_attr_rep *m)
{
	m->size = wire_get_u64(c);
	m->blocks = wire_get_u64(c);
}

/* ost_falloc_req (since version 1): u32 mode (WIRE_FALLOC_*), then an ost_io_req (the
 * object range, len >= 1, and the cap). */
void wire_ost_falloc_req_encode(struct wire_cursor *c, const struct wire_ost_falloc_req *m)
{
	wire_put_u32(c, m->mode);
	wire_ost_io_req_encode(c, &m->io);
}

void wire_ost_falloc_req_decode(struct wire_cursor *c, struct wire_ost_falloc_req *m)
{
	memset(m, 0, sizeof(*m));
	m->mode = wire_get_u32(c);
	wire_ost_io_req_decode(c, &m->io);
	uint32_t md = m->mode;
	if ((md & ~WIRE_FALLOC_MODES_) || m->io.len == 0 ||
	    ((md & WIRE_FALLOC_PUNCH_HOLE) &&
	     (!(md & WIRE_FALLOC_KEEP_SIZE) || (md & WIRE_FALLOC_ZERO_RANGE))))
		wire_cursor_fail(c, -EPROTO);
}

/* ost_seek_req (since version 1): u32 whence (WIRE_SEEK_DATA or WIRE_SEEK_HOLE), then an
 * ost_io_req (offset: where to start; len 0). */
void wire_ost_seek_req_encode(struct wire_cursor *c, const struct wire_ost_seek_req *m)
{
	wire_put_u32(c, m->whence);
	wire_ost_io_req_encode(c, &m->io);
}

void wire_ost_seek_req_decode(struct wire_cursor *c, struct wire_ost_seek_req *m)
{
	memset(m, 0, sizeof(*m));
	m->whence = wire_get_u32(c);
	wire_ost_io_req_decode(c, &m->io);
	if ((m->whence != WIRE_SEEK_DATA && m->whence != WIRE_SEEK_HOLE) || m->io.len != 0)
		wire_cursor_fail(c, -EPROTO);
}

/* ost_seek_rep (since version 1): u64 offset (<= INT64_MAX) */
void wire_ost_seek_rep_encode(struct wire_cursor *c, const struct wire_ost_seek_rep *m)
{
	wire_put_u64(c, m->offset);
}

void wire_ost_seek_rep_decode(struct wire_cursor *c, struct wire_ost_seek_rep *m)
{
	m->offset = wire_get_u64(c);
	if (m->offset > (uint64_t)INT64_MAX)
		wire_cursor_fail(c, -EPROTO);
}

/* ost_destroy_req (since version 1):
 *   u32 ost_idx (0..65535), u32 flags (WIRE_OST_DESTROY_CAP or 0), u32 count
 *   (1..WIRE_OST_DESTROY_MAX), with WIRE_OST_DESTROY_CAP a cap, then exactly count ost_obj:
 *   the decoder reads the header and checks that count * 24 bytes remain; the caller reads
 *   them with wire_ost_obj_get. */
_Static_assert(12 + WIRE_CAP_LEN + WIRE_OST_DESTROY_MAX * WIRE_OST_OBJ_LEN <= WIRE_BODY_MAX,
	       "an OST_DESTROY_BATCH request fits a body");
_Static_assert(4 + WIRE_OST_DESTROY_MAX * WIRE_OST_DESTROY_FAIL_LEN <= WIRE_BODY_MAX,
	       "an OST_DESTROY_BATCH reply fits a body");

void wire_ost_destroy_req_encode(struct wire_cursor *c, const struct wire_ost_destroy_req *m)
{
	wire_put_u32(c, m->ost_idx);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->count);
	if (m->flags & WIRE_OST_DESTROY_CAP)
		wire_cap_put(c, &m->cap);
}

void wire_ost_destroy_req_decode(struct wire_cursor *c, struct wire_ost_destroy_req *m)
{
	memset(m, 0, sizeof(*m));
	m->ost_idx = wire_get_u32(c);
	m->flags = wire_get_u32(c);
	m->count = wire_get_u32(c);
	if (m->flags & WIRE_OST_DESTROY_CAP)
		wire_cap_get(c, &m->cap);
	if (!wire_cursor_ok(c))
		return;
	if (m->ost_idx > 65535 || (m->flags & ~(uint32_t)WIRE_OST_DESTROY_CAP) || m->count == 0 ||
	    m->count > WIRE_OST_DESTROY_MAX ||
	    wire_cursor_left(c) != (size_t)m->count * WIRE_OST_OBJ_LEN)
		wire_cursor_fail(c, -EPROTO);
}

/* ost_obj (since version 1): fid, u32 stripe_idx (< NACRE_MAX_STRIPES), u32 layout_gen */
void wire_ost_obj_put(struct wire_cursor *c, const struct wire_ost_obj *o)
{
	wire_fid_put(c, &o->fid);
	wire_put_u32(c, o->stripe_idx);
	wire_put_u32(c, o->layout_gen);
}

void wire_ost_obj_get(struct wire_cursor *c, struct wire_ost_obj *o)
{
	memset(o, 0, sizeof(*o));
	wire_fid_get(c, &o->fid);
	o->stripe_idx = wire_get_u32(c);
	o->layout_gen = wire_get_u32(c);
	if (o->stripe_idx >= NACRE_MAX_STRIPES)
		wire_cursor_fail(c, -EPROTO);
}

/* ost_destroy_rep (since version 1): u32 nfailed (0..WIRE_OST_DESTROY_MAX), then exactly
 * nfailed ost_destroy_fail, read with wire_ost_destroy_fail_get. */
void wire_ost_destroy_rep_encode(struct wire_cursor *c, const struct wire_ost_destroy_rep *m)
{
	wire_put_u32(c, m->nfailed);
}

void wire_ost_destroy_rep_decode(struct wire_cursor *c, struct wire_ost_destroy_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->nfailed = wire_get_u32(c);
	if (!wire_cursor_ok(c))
		return;
	if (m->nfailed > WIRE_OST_DESTROY_MAX ||
	    wire_cursor_left(c) != (size_t)m->nfailed * WIRE_OST_DESTROY_FAIL_LEN)
		wire_cursor_fail(c, -EPROTO);
}

void wire_ost_destroy_rep_patch(struct wire_cursor *c, size_t pos,
				const struct wire_ost_destroy_rep *m)
{
	struct wire_cursor w;

	if (header_at(c, pos, 4, &w))
		wire_ost_destroy_rep_encode(&w, m);
}

/* ost_destroy_fail (since version 1): u32 index (< WIRE_OST_DESTROY_MAX), i32 status (< 0) */
void wire_ost_destroy_fail_put(struct wire_cursor *c, const struct wire_ost_destroy_fail *f)
{
	wire_put_u32(c, f->index);
	wire_put_i32(c, f->status);
}

void wire_ost_destroy_fail_get(struct wire_cursor *c, struct wire_ost_destroy_fail *f)
{
	memset(f, 0, sizeof(*f));
	f->index = wire_get_u32(c);
	f->status = wire_get_i32(c);
	if (f->index >= WIRE_OST_DESTROY_MAX || f->status >= 0)
		wire_cursor_fail(c, -EPROTO);
}

/* dirent (since version 1): u64 cookie, fid, u32 type (S_IFMT bits only), name name.
 * "." and ".." are not names, so a server does not send them (the client adds them). */
void wire_dirent_put(struct wire_cursor *c, const struct nacre_dirent *d)
{
	wire_put_u64(c, d->cookie);
	wire_fid_put(c, &d->fid);
	wire_put_u32(c, d->type);
	wire_name_put(c, d->name);
}

void wire_dirent_get(struct wire_cursor *c, struct nacre_dirent *d)
{
	memset(d, 0, sizeof(*d));
	d->cookie = wire_get_u64(c);
	wire_fid_get(c, &d->fid);
	d->type = wire_get_u32(c);
	wire_name_get(c, d->name);
	if (d->type & ~(uint32_t)S_IFMT)
		wire_cursor_fail(c, -EPROTO);
}

/* direntplus (WIRE_READDIR_PLUS): dirent, u8 has_attr (0 or 1), attr if has_attr */
void wire_direntplus_put(struct wire_cursor *c, const struct nacre_dirent *d,
			 const struct nacre_attr *a)
{
	wire_dirent_put(c, d);
	wire_put_u8(c, a ? 1 : 0);
	if (a)
		wire_attr_put(c, a);
}

void wire_direntplus_get(struct wire_cursor *c, struct nacre_dirent *d, struct nacre_attr *a,
			 int *has_attr)
{
	wire_dirent_get(c, d);
	uint8_t has = wire_get_u8(c);
	memset(a, 0, sizeof(*a));
	*has_attr = has == 1;
	if (has > 1)
		wire_cursor_fail(c, -EPROTO);
	else if (has)
		wire_attr_get(c, a);
	/* the attributes are the entry's own inode's, of its type */
	if (has == 1 && wire_cursor_ok(c) &&
	    (a->fid.seq != d->fid.seq || a->fid.oid != d->fid.oid || a->fid.ver != d->fid.ver ||
	     (a->mode & S_IFMT) != d->type))
		wire_cursor_fail(c, -EPROTO);
}

/* target (since version 1): u32 type (MDT or OST), u32 index, u8 up (0 or 1),
 * str addr (0..63 bytes), statfs */
void wire_target_put(struct wire_cursor *c, const struct nacre_target *t)
{
	wire_put_u32(c, t->type);
	wire_put_u32(c, t->index);
	wire_put_u8(c, t->up ? 1 : 0);
	str_put(c, t->addr, NACRE_ADDR_MAX);
	wire_statfs_put(c, &t->st);
}

void wire_target_get(struct wire_cursor *c, struct nacre_target *t)
{
	memset(t, 0, sizeof(*t));
	t->type = wire_get_u32(c);
	t->index = wire_get_u32(c);
	t->up = wire_get_u8(c);
	str_get(c, t->addr, 0, NACRE_ADDR_MAX);
	wire_statfs_get(c, &t->st);
	if ((t->type != NACRE_TGT_MDT && t->type != NACRE_TGT_OST) || t->up > 1)
		wire_cursor_fail(c, -EPROTO);
}

/* lock_req (since version 1): cred, fid, u64 client, u64 owner, u32 pid, u8 kind (0..1),
 * u8 type (0..2), u64 start, u64 end (>= start) */
void wire_lock_req_encode(struct wire_cursor *c, const struct wire_lock_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u64(c, m->client);
	wire_put_u64(c, m->owner);
	wire_put_u32(c, m->pid);
	wire_put_u8(c, m->kind);
	wire_put_u8(c, m->type);
	wire_put_u64(c, m->start);
	wire_put_u64(c, m->end);
}

void wire_lock_req_decode(struct wire_cursor *c, struct wire_lock_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->client = wire_get_u64(c);
	m->owner = wire_get_u64(c);
	m->pid = wire_get_u32(c);
	m->kind = wire_get_u8(c);
	m->type = wire_get_u8(c);
	m->start = wire_get_u64(c);
	m->end = wire_get_u64(c);
	if (m->kind > WIRE_LOCK_FLOCK || m->type > WIRE_LK_WRLCK || m->start > m->end)
		wire_cursor_fail(c, -EPROTO);
}

/* lock_rep (since version 1): u8 type (0..2), u64 start, u64 end (>= start), u32 pid */
void wire_lock_rep_encode(struct wire_cursor *c, const struct wire_lock_rep *m)
{
	wire_put_u8(c, m->type);
	wire_put_u64(c, m->start);
	wire_put_u64(c, m->end);
	wire_put_u32(c, m->pid);
}

void wire_lock_rep_decode(struct wire_cursor *c, struct wire_lock_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->type = wire_get_u8(c);
	m->start = wire_get_u64(c);
	m->end = wire_get_u64(c);
	m->pid = wire_get_u32(c);
	if (m->type > WIRE_LK_WRLCK || m->start > m->end)
		wire_cursor_fail(c, -EPROTO);
}

/* ---- envelopes, admin and recovery (since version 1, with WIRE_FEAT_RECOVERY) ---- */

/* req_env: u64 ack_xid, u64 transno, u32 flags (WIRE_ENV_*), u32 replay_len (only with
 * WIRE_ENV_REPLAY) */
void wire_req_env_encode(struct wire_cursor *c, const struct wire_req_env *m)
{
	wire_put_u64(c, m->ack_xid);
	wire_put_u64(c, m->transno);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->replay_len);
}

void wire_req_env_decode(struct wire_cursor *c, struct wire_req_env *m)
{
	memset(m, 0, sizeof(*m));
	m->ack_xid = wire_get_u64(c);
	m->transno = wire_get_u64(c);
	m->flags = wire_get_u32(c);
	m->replay_len = wire_get_u32(c);
	if (m->flags & ~(uint32_t)(WIRE_ENV_RESEND | WIRE_ENV_REPLAY) ||
	    (m->replay_len && !(m->flags & WIRE_ENV_REPLAY)))
		wire_cursor_fail(c, -EPROTO);
}

/* rep_env: u64 transno, u64 last_committed */
void wire_rep_env_encode(struct wire_cursor *c, const struct wire_rep_env *m)
{
	wire_put_u64(c, m->transno);
	wire_put_u64(c, m->last_committed);
}

void wire_rep_env_decode(struct wire_cursor *c, struct wire_rep_env *m)
{
	memset(m, 0, sizeof(*m));
	m->transno = wire_get_u64(c);
	m->last_committed = wire_get_u64(c);
}

/* fault_set_req: str spec (0..1024) */
void wire_fault_set_req_encode(struct wire_cursor *c, const struct wire_fault_set_req *m)
{
	str_put(c, m->spec, WIRE_FAULT_SPEC_MAX);
}

void wire_fault_set_req_decode(struct wire_cursor *c, struct wire_fault_set_req *m)
{
	memset(m, 0, sizeof(*m));
	str_get(c, m->spec, 0, WIRE_FAULT_SPEC_MAX);
}

/* fault_set_rep: str armed (0..1024) */
void wire_fault_set_rep_encode(struct wire_cursor *c, const struct wire_fault_set_rep *m)
{
	str_put(c, m->armed, WIRE_FAULT_SPEC_MAX);
}

void wire_fault_set_rep_decode(struct wire_cursor *c, struct wire_fault_set_rep *m)
{
	memset(m, 0, sizeof(*m));
	str_get(c, m->armed, 0, WIRE_FAULT_SPEC_MAX);
}

/* recovery_done_req: cred, u32 stage (1..2) */
void wire_recovery_done_req_encode(struct wire_cursor *c, const struct wire_recovery_done_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->stage);
}

void wire_recovery_done_req_decode(struct wire_cursor *c, struct wire_recovery_done_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->stage = wire_get_u32(c);
	if (m->stage < WIRE_RECOVERY_REPLAYED || m->stage > WIRE_RECOVERY_COMPLETE)
		wire_cursor_fail(c, -EPROTO);
}

/* recovery_status: u32 state, i64 start, u32 duration_s, u32 time_left_s, u32 expected,
 * u32 connected, u32 replayed clients, u32 completed, u32 evicted, u64 replayed requests,
 * u64 queued, u64 last_transno, u64 last_committed */
void wire_recovery_status_encode(struct wire_cursor *c, const struct wire_recovery_status *m)
{
	wire_put_u32(c, m->state);
	wire_put_i64(c, m->start);
	wire_put_u32(c, m->duration_s);
	wire_put_u32(c, m->time_left_s);
	wire_put_u32(c, m->clients_expected);
	wire_put_u32(c, m->clients_connected);
	wire_put_u32(c, m->clients_replayed);
	wire_put_u32(c, m->clients_completed);
	wire_put_u32(c, m->clients_evicted);
	wire_put_u64(c, m->replayed);
	wire_put_u64(c, m->queued);
	wire_put_u64(c, m->last_transno);
	wire_put_u64(c, m->last_committed);
}

void wire_recovery_status_decode(struct wire_cursor *c, struct wire_recovery_status *m)
{
	memset(m, 0, sizeof(*m));
	m->state = wire_get_u32(c);
	m->start = wire_get_i64(c);
	m->duration_s = wire_get_u32(c);
	m->time_left_s = wire_get_u32(c);
	m->clients_expected = wire_get_u32(c);
	m->clients_connected = wire_get_u32(c);
	m->clients_replayed = wire_get_u32(c);
	m->clients_completed = wire_get_u32(c);
	m->clients_evicted = wire_get_u32(c);
	m->replayed = wire_get_u64(c);
	m->queued = wire_get_u64(c);
	m->last_transno = wire_get_u64(c);
	m->last_committed = wire_get_u64(c);
	if (m->state > WIRE_RECOVERY_STATE_RECOVERING)
		wire_cursor_fail(c, -EPROTO);
}

/* append_req: cred, fid, u64 handle, u64 len (1..WIRE_BULK_MAX) */
void wire_append_req_encode(struct wire_cursor *c, const struct wire_append_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u64(c, m->handle);
	wire_put_u64(c, m->len);
}

void wire_append_req_decode(struct wire_cursor *c, struct wire_append_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->handle = wire_get_u64(c);
	m->len = wire_get_u64(c);
	if (m->len == 0 || m->len > (uint64_t)INT64_MAX)
		wire_cursor_fail(c, -EPROTO);
}

/* append_rep: u64 offset */
void wire_append_rep_encode(struct wire_cursor *c, const struct wire_append_rep *m)
{
	wire_put_u64(c, m->offset);
}

void wire_append_rep_decode(struct wire_cursor *c, struct wire_append_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->offset = wire_get_u64(c);
}

/* notify_req (since version 1, opcode 96): cred, u64 ack, u32 flags (WIRE_NOTIFY_STOP only) */
void wire_notify_req_encode(struct wire_cursor *c, const struct wire_notify_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u64(c, m->ack);
	wire_put_u32(c, m->flags);
}

void wire_notify_req_decode(struct wire_cursor *c, struct wire_notify_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->ack = wire_get_u64(c);
	m->flags = wire_get_u32(c);
	if (m->flags & ~(uint32_t)WIRE_NOTIFY_STOP)
		wire_cursor_fail(c, -EPROTO);
}

/* notify_rep (since version 1, opcode 96): u64 seq, u32 flags (WIRE_NOTIFY_ALL, and
 * WIRE_NOTIFY_RECALL since WIRE_FEAT_WB_LEASE), u32 count (<= WIRE_NOTIFY_MAX, checked
 * against the bytes present), then count fids; with WIRE_NOTIFY_RECALL, u32 n and n fids
 * follow (wire_notify_recall_get) */
void wire_notify_rep_encode(struct wire_cursor *c, const struct wire_notify_rep *m)
{
	wire_put_u64(c, m->seq);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->count);
}

void wire_notify_rep_decode(struct wire_cursor *c, struct wire_notify_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->seq = wire_get_u64(c);
	m->flags = wire_get_u32(c);
	m->count = wire_get_u32(c);
	if ((m->flags & ~(uint32_t)(WIRE_NOTIFY_ALL | WIRE_NOTIFY_RECALL)) ||
	    m->count > WIRE_NOTIFY_MAX ||
	    (wire_cursor_ok(c) && wire_cursor_left(c) < (size_t)m->count * 16))
		wire_cursor_fail(c, -EPROTO);
}

int wire_notify_recall_get(struct wire_cursor *c, struct nacre_fid *out, uint32_t max)
{
	uint32_t n = wire_get_u32(c);

	if (!wire_cursor_ok(c) || n == 0 || n > WIRE_NOTIFY_MAX || n > max ||
	    wire_cursor_left(c) != (size_t)n * 16) {
		wire_cursor_fail(c, -EPROTO);
		return -EPROTO;
	}
	for (uint32_t i = 0; i < n; i++)
		wire_fid_get(c, &out[i]);
	return (int)n;
}

/* lease_req (since WIRE_FEAT_WB_LEASE, opcode 122): cred, fid, u32 op (WIRE_LEASE_GET or
 * WIRE_LEASE_PUT) */
void wire_lease_req_encode(struct wire_cursor *c, const struct wire_lease_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_fid_put(c, &m->fid);
	wire_put_u32(c, m->op);
}

void wire_lease_req_decode(struct wire_cursor *c, struct wire_lease_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	wire_fid_get(c, &m->fid);
	m->op = wire_get_u32(c);
	if (m->op != WIRE_LEASE_GET && m->op != WIRE_LEASE_PUT)
		wire_cursor_fail(c, -EPROTO);
}

/* lease_rep (since WIRE_FEAT_WB_LEASE, opcode 122): u32 flags (WIRE_LEASE_DEFAULT_ACL) */
void wire_lease_rep_encode(struct wire_cursor *c, const struct wire_lease_rep *m)
{
	wire_put_u32(c, m->flags);
}

void wire_lease_rep_decode(struct wire_cursor *c, struct wire_lease_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->flags = wire_get_u32(c);
	if (m->flags & ~(uint32_t)WIRE_LEASE_DEFAULT_ACL)
		wire_cursor_fail(c, -EPROTO);
}

/* groups_set_req (since version 1, opcode 97): cred, u64 token (nonzero), u32 total
 * (NACRE_CRED_GROUPS < total <= NACRE_MAX_GROUPS), u32 first (< total), u32 count
 * (1..WIRE_GROUPS_CHUNK, first + count <= total), u32 groups[count]; groups points into the
 * receive buffer (little-endian u32s: read them with wire_groups_set_at) */
void wire_groups_set_req_encode(struct wire_cursor *c, const struct wire_groups_set_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u64(c, m->token);
	wire_put_u32(c, m->total);
	wire_put_u32(c, m->first);
	wire_put_u32(c, m->count);
	for (uint32_t i = 0; i < m->count; i++)
		wire_put_u32(c, m->list[i]);
}

void wire_groups_set_req_decode(struct wire_cursor *c, struct wire_groups_set_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->token = wire_get_u64(c);
	m->total = wire_get_u32(c);
	m->first = wire_get_u32(c);
	m->count = wire_get_u32(c);
	if (!wire_cursor_ok(c))
		return;
	if (!m->token || m->total <= NACRE_CRED_GROUPS || m->total > NACRE_MAX_GROUPS ||
	    m->first >= m->total || !m->count || m->count > WIRE_GROUPS_CHUNK ||
	    m->count > m->total - m->first || wire_cursor_left(c) < (size_t)m->count * 4) {
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	m->wire = c->buf + c->pos;
	c->pos += (size_t)m->count * 4;
}

uint32_t wire_groups_set_at(const struct wire_groups_set_req *m, uint32_t i)
{
	const uint8_t *p = m->wire + (size_t)i * 4;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* nodemap_req: cred, u32 cmd (1..6), str name (0..255), str key (0..255), str value (0..4096) */
void wire_nodemap_req_encode(struct wire_cursor *c, const struct wire_nodemap_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->cmd);
	str_put(c, m->name, NACRE_NAME_MAX);
	str_put(c, m->key, NACRE_NAME_MAX);
	str_put(c, m->value, WIRE_NODEMAP_VALUE_MAX);
}

void wire_nodemap_req_decode(struct wire_cursor *c, struct wire_nodemap_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	m->cmd = wire_get_u32(c);
	if (m->cmd < WIRE_NODEMAP_ADD || m->cmd > WIRE_NODEMAP_SELF)
		wire_cursor_fail(c, -EPROTO);
	str_get(c, m->name, 0, NACRE_NAME_MAX);
	str_get(c, m->key, 0, NACRE_NAME_MAX);
	str_get(c, m->value, 0, WIRE_NODEMAP_VALUE_MAX);
}

/* nodemap_rep: blob text (0..60000 bytes, no NUL), fid root */
void wire_nodemap_rep_encode(struct wire_cursor *c, const struct wire_nodemap_rep *m)
{
	if (m->text_len > WIRE_NODEMAP_TEXT_MAX || (m->text_len && !m->text)) {
		wire_cursor_fail(c, -E2BIG);
		return;
	}
	wire_put_blob(c, m->text, m->text_len);
	wire_fid_put(c, &m->root);
}

void wire_nodemap_rep_decode(struct wire_cursor *c, struct wire_nodemap_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->text = (const char *)wire_get_blob(c, WIRE_NODEMAP_TEXT_MAX, &m->text_len);
	if (m->text && memchr(m->text, '\0', m->text_len))
		wire_cursor_fail(c, -EPROTO);
	wire_fid_get(c, &m->root);
}

/* changelog_req: cred, str user (0..16), u64 start, u64 end, u64 mask, u32 xflags,
 * u32 flags (WIRE_CL_SET_*), u32 max_bytes */
void wire_changelog_req_encode(struct wire_cursor *c, const struct wire_changelog_req *m)
{
	wire_cred_put(c, &m->cred);
	str_put(c, m->user, NACRE_CL_USER_MAX);
	wire_put_u64(c, m->start);
	wire_put_u64(c, m->end);
	wire_put_u64(c, m->mask);
	wire_put_u32(c, m->xflags);
	wire_put_u32(c, m->flags);
	wire_put_u32(c, m->max_bytes);
}

void wire_changelog_req_decode(struct wire_cursor *c, struct wire_changelog_req *m)
{
	memset(m, 0, sizeof(*m));
	wire_cred_get(c, &m->cred);
	str_get(c, m->user, 0, NACRE_CL_USER_MAX);
	m->start = wire_get_u64(c);
	m->end = wire_get_u64(c);
	m->mask = wire_get_u64(c);
	m->xflags = wire_get_u32(c);
	m->flags = wire_get_u32(c);
	m->max_bytes = wire_get_u32(c);
	if (m->flags & ~(WIRE_CL_SET_MASK | WIRE_CL_SET_XFLAGS))
		wire_cursor_fail(c, -EPROTO);
}

/* changelog_rep: str user (0..16), u64 mask, u32 xflags, u32 nusers, u64 first, u64 last,
 * u32 count, u8 eof (0/1); then count cl_rec (checked against the bytes left) */
#define CHANGELOG_REP_LEN(user) (2 + (user) + 8 + 4 + 4 + 8 + 8 + 4 + 1)
void wire_changelog_rep_encode(struct wire_cursor *c, const struct wire_changelog_rep *m)
{
	str_put(c, m->user, NACRE_CL_USER_MAX);
	wire_put_u64(c, m->mask);
	wire_put_u32(c, m->xflags);
	wire_put_u32(c, m->nusers);
	wire_put_u64(c, m->first);
	wire_put_u64(c, m->last);
	wire_put_u32(c, m->count);
	wire_put_u8(c, m->eof ? 1 : 0);
}

void wire_changelog_rep_decode(struct wire_cursor *c, struct wire_changelog_rep *m)
{
	memset(m, 0, sizeof(*m));
	str_get(c, m->user, 0, NACRE_CL_USER_MAX);
	m->mask = wire_get_u64(c);
	m->xflags = wire_get_u32(c);
	m->nusers = wire_get_u32(c);
	m->first = wire_get_u64(c);
	m->last = wire_get_u64(c);
	m->count = wire_get_u32(c);
	m->eof = wire_get_u8(c);
	if (wire_cursor_ok(c) &&
	    (m->eof > 1 || m->count > wire_cursor_left(c) / WIRE_CL_REC_MIN))
		wire_cursor_fail(c, -EPROTO);
}

void wire_changelog_rep_patch(struct wire_cursor *c, size_t pos,
			      const struct wire_changelog_rep *m)
{
	struct wire_cursor w;

	if (header_at(c, pos, CHANGELOG_REP_LEN(strlen(m->user)), &w))
		wire_changelog_rep_encode(&w, m);
}

void wire_cl_rec_put(struct wire_cursor *c, const struct nacre_changelog_rec *r)
{
	wire_put_u64(c, r->index);
	wire_put_u32(c, r->type);
	wire_put_u32(c, r->flags);
	wire_time_put(c, &r->time);
	wire_fid_put(c, &r->tfid);
	wire_fid_put(c, &r->pfid);
	wire_fid_put(c, &r->sfid);
	wire_fid_put(c, &r->spfid);
	wire_put_u32(c, r->xflags);
	wire_put_u32(c, r->uid);
	wire_put_u32(c, r->gid);
	str_put(c, r->name, NACRE_NAME_MAX);
	str_put(c, r->sname, NACRE_NAME_MAX);
	str_put(c, r->xattr, NACRE_NAME_MAX);
	if (r->flags & NACRE_CLF_JOBID)
		str_put(c, r->jobid, NACRE_JOBID_MAX);
}

void wire_cl_rec_get(struct wire_cursor *c, struct nacre_changelog_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->index = wire_get_u64(c);
	r->type = wire_get_u32(c);
	r->flags = wire_get_u32(c);
	wire_time_get(c, &r->time);
	wire_fid_get(c, &r->tfid);
	wire_fid_get(c, &r->pfid);
	wire_fid_get(c, &r->sfid);
	wire_fid_get(c, &r->spfid);
	r->xflags = wire_get_u32(c);
	r->uid = wire_get_u32(c);
	r->gid = wire_get_u32(c);
	str_get(c, r->name, 0, NACRE_NAME_MAX);
	str_get(c, r->sname, 0, NACRE_NAME_MAX);
	str_get(c, r->xattr, 0, NACRE_NAME_MAX);
	if (r->flags & NACRE_CLF_JOBID) {
		str_get(c, r->jobid, 1, NACRE_JOBID_MAX);
		if (wire_cursor_ok(c) && !wire_jobid_valid(r->jobid, strlen(r->jobid)))
			wire_cursor_fail(c, -EPROTO);
	}
	if (wire_cursor_ok(c) && r->type >= NACRE_CL_LAST)
		wire_cursor_fail(c, -EPROTO);
}

const char *wire_feature_name(unsigned bit)
{
	static const char *const names[] = {
		"recovery", "sec",	    "caps",	      "key_id",	  "jobid",
		"xattr_64k", "atime",	    "blocks",	      "fid_grant", "batch",
		"readdir_plus", "wb_lease", "ost_jobid",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == 13, "a name per WIRE_FEAT_ bit");
	_Static_assert(WIRE_FEATURES_SUPPORTED == (1ull << 13) - 1, "the bits named");
	return bit < sizeof(names) / sizeof(names[0]) ? names[bit] : NULL;
}
