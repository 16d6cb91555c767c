/* test_wire.c - the wire protocol: pinned opcodes, the frame header, requests (golden bytes,
 * round trips, rejections). Replies and the opcode table: test_wire_replies.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "nacre/nacre_errno.h"
#include "proto/cursor.h"
#include "proto/wire.h"
#include "unit.h"
#include "wire_test.h"

/* ---- opcodes: values are protocol and must never change ---- */
static void test_opcodes(void)
{
	CHECK_EQ(WIRE_OP_CONNECT, 1);
	CHECK_EQ(WIRE_OP_AUTH, 2);
	CHECK_EQ(WIRE_OP_PING, 3);
	CHECK_EQ(WIRE_OP_MDS_STATFS, 16);
	CHECK_EQ(WIRE_OP_MDS_LOOKUP, 17);
	CHECK_EQ(WIRE_OP_MDS_GETATTR, 18);
	CHECK_EQ(WIRE_OP_MDS_SETATTR, 19);
	CHECK_EQ(WIRE_OP_MDS_CREATE, 20);
	CHECK_EQ(WIRE_OP_MDS_MKDIR, 21);
	CHECK_EQ(WIRE_OP_MDS_MKNOD, 22);
	CHECK_EQ(WIRE_OP_MDS_UNLINK, 23);
	CHECK_EQ(WIRE_OP_MDS_RMDIR, 24);
	CHECK_EQ(WIRE_OP_MDS_RENAME, 25);
	CHECK_EQ(WIRE_OP_MDS_LINK, 26);
	CHECK_EQ(WIRE_OP_MDS_SYMLINK, 27);
	CHECK_EQ(WIRE_OP_MDS_READLINK, 28);
	CHECK_EQ(WIRE_OP_MDS_READDIR, 29);
	CHECK_EQ(WIRE_OP_MDS_OPEN, 30);
	CHECK_EQ(WIRE_OP_MDS_CLOSE, 31);
	CHECK_EQ(WIRE_OP_MDS_SIZE_UPDATE, 32);
	CHECK_EQ(WIRE_OP_MDS_GETXATTR, 33);
	CHECK_EQ(WIRE_OP_MDS_SETXATTR, 34);
	CHECK_EQ(WIRE_OP_MDS_LISTXATTR, 35);
	CHECK_EQ(WIRE_OP_MDS_REMOVEXATTR, 36);
	CHECK_EQ(WIRE_OP_MDS_LAYOUT_GET, 37);
	CHECK_EQ(WIRE_OP_MDS_LAYOUT_SET, 38);
	CHECK_EQ(WIRE_OP_MDS_TARGETS, 39);
	CHECK_EQ(WIRE_OP_MDS_FID2PATH, 40);
	CHECK_EQ(WIRE_OP_MDS_TARGET_REGISTER, 41);
	CHECK_EQ(WIRE_OP_MDS_TARGET_HEARTBEAT, 42);
	CHECK_EQ(WIRE_OP_MDS_SYNC, 43);
	CHECK_EQ(WIRE_OP_OST_WRITE, 64);
	CHECK_EQ(WIRE_OP_OST_READ, 65);
	CHECK_EQ(WIRE_OP_OST_PUNCH, 66);
	CHECK_EQ(WIRE_OP_OST_DESTROY, 67);
	CHECK_EQ(WIRE_OP_OST_GETATTR, 68);
	CHECK_EQ(WIRE_OP_OST_STATFS, 69);
	CHECK_EQ(WIRE_OP_OST_SYNC, 70);
	CHECK_EQ(WIRE_OP_OST_DESTROY_BATCH, 71);
	CHECK_STR(wire_opcode_name(WIRE_OP_OST_DESTROY_BATCH), "OST_DESTROY_BATCH");
	CHECK_EQ(WIRE_OP_OST_FALLOCATE, 72);
	CHECK_EQ(WIRE_OP_OST_SEEK, 73);
	CHECK_STR(wire_opcode_name(WIRE_OP_OST_SEEK), "OST_SEEK");
	CHECK_EQ(WIRE_FEAT_BLOCKS, 1u << 7);
	CHECK_EQ(WIRE_FALLOC_KEEP_SIZE, 0x01);
	CHECK_EQ(WIRE_FALLOC_PUNCH_HOLE, 0x02);
	CHECK_EQ(WIRE_FALLOC_ZERO_RANGE, 0x10);
	CHECK_EQ(WIRE_SEEK_DATA, 3);
	CHECK_EQ(WIRE_SEEK_HOLE, 4);
	CHECK_EQ(WIRE_FLAG_REPLY, 1);
	CHECK_EQ(WIRE_MAGIC, 0x5243414e);
	CHECK_EQ(WIRE_HDR_LEN, 36);

	CHECK_STR(wire_opcode_name(WIRE_OP_MDS_LOOKUP), "MDS_LOOKUP");
	CHECK_STR(wire_opcode_name(WIRE_OP_OST_SYNC), "OST_SYNC");
	CHECK_STR(wire_opcode_name(WIRE_OP_CONNECT), "CONNECT");
	CHECK_STR(wire_opcode_name(0), "UNKNOWN");
	CHECK_STR(wire_opcode_name(74), "UNKNOWN");
	CHECK_EQ(WIRE_OP_MDS_CL_REGISTER, 57);
	CHECK_EQ(WIRE_OP_MDS_CL_DEREGISTER, 58);
	CHECK_EQ(WIRE_OP_MDS_CL_READ, 59);
	CHECK_EQ(WIRE_OP_MDS_CL_CLEAR, 60);
	CHECK_EQ(WIRE_OP_MDS_CL_MASK, 61);
	CHECK_STR(wire_opcode_name(60), "MDS_CL_CLEAR");
	CHECK_EQ(WIRE_OP_MDS_HSM_REQUEST, 48);
	CHECK_EQ(WIRE_OP_MDS_HSM_STATE_GET, 49);
	CHECK_EQ(WIRE_OP_MDS_HSM_STATE_SET, 50);
	CHECK_EQ(WIRE_OP_MDS_HSM_ACTION, 51);
	CHECK_EQ(WIRE_OP_MDS_HSM_LIST, 52);
	CHECK_EQ(WIRE_OP_MDS_HSM_AGENT_REGISTER, 53);
	CHECK_EQ(WIRE_OP_MDS_HSM_AGENT_POLL, 54);
	CHECK_EQ(WIRE_OP_MDS_HSM_AGENT_PROGRESS, 55);
	CHECK_EQ(WIRE_OP_MDS_HSM_IMPORT, 56);
	CHECK_EQ(WIRE_OP_MDS_FIND, 62);
	CHECK_EQ(WIRE_OP_MDS_LINKS, 63);
	CHECK_STR(wire_opcode_name(WIRE_OP_MDS_HSM_AGENT_POLL), "MDS_HSM_AGENT_POLL");
	CHECK_EQ(WIRE_OP_MDS_LOCK_SET, 80);
	CHECK_EQ(WIRE_OP_MDS_LOCK_GET, 81);
	CHECK_STR(wire_opcode_name(WIRE_OP_MDS_LOCK_GET), "MDS_LOCK_GET");
	CHECK_EQ(WIRE_OP_MDS_LOCK_WAIT, 82);
	CHECK_EQ(WIRE_OP_MDS_LOCK_CANCEL, 83);
	CHECK_EQ(WIRE_OP_MDS_QUOTA, 84);
	CHECK_STR(wire_opcode_name(85), "UNKNOWN");
	CHECK_EQ(WIRE_OP_FAULT_SET, 4);
	CHECK_EQ(WIRE_OP_MDS_DISCONNECT, 44);
	CHECK_EQ(WIRE_OP_MDS_RECOVERY_DONE, 45);
	CHECK_EQ(WIRE_OP_MDS_RECOVERY_STATUS, 46);
	CHECK_EQ(WIRE_OP_MDS_APPEND, 47);
	CHECK_EQ(wire_opcode_by_name("MDS_APPEND"), WIRE_OP_MDS_APPEND);
	CHECK_EQ(wire_opcode_by_name("NOPE"), -1);
	CHECK_STR(wire_opcode_name(WIRE_OP_MAX_), "UNKNOWN");
	CHECK_STR(wire_opcode_name(0xffff), "UNKNOWN");
}

/* ---- frame header ---- */
static const uint8_t golden_hdr[WIRE_HDR_LEN] = {
	0x4e, 0x41, 0x43, 0x52,                         /* magic "NACR" */
	0x01, 0x00,                                     /* version 1 */
	0x14, 0x00,                                     /* opcode 20 MDS_CREATE */
	0x01, 0x00, 0x00, 0x00,                         /* flags REPLY */
	0x02, 0x01, 0x00, 0x00,                         /* body_len 0x102 */
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* xid */
	0xfe, 0xff, 0xff, 0xff,                         /* status -2 */
	0x10, 0x00, 0x00, 0x00,                         /* bulk_len 16 */
	0x83, 0x92, 0x06, 0xe3,                         /* bulk_crc */
};

static struct wire_hdr sample_hdr(void)
{
	struct wire_hdr h = {
		.magic = WIRE_MAGIC,
		.version = 1,
		.opcode = WIRE_OP_MDS_CREATE,
		.flags = WIRE_FLAG_REPLY,
		.body_len = 0x102,
		.xid = 0x1122334455667788ull,
		.status = -2,
		.bulk_len = 16,
		.bulk_crc = 0xe3069283u,
	};
	return h;
}

static void test_hdr(void)
{
	struct wire_hdr h = sample_hdr(), d;
	uint8_t out[WIRE_HDR_LEN];

	wire_hdr_encode(&h, out);
	CHECK_MEM(out, golden_hdr, WIRE_HDR_LEN);
	CHECK_EQ(wire_hdr_decode(golden_hdr, &d), 0);
	/* field by field: the struct has tail padding that memcmp would compare */
	CHECK(h.magic == d.magic && h.version == d.version && h.opcode == d.opcode &&
	      h.flags == d.flags && h.body_len == d.body_len && h.xid == d.xid &&
	      h.status == d.status && h.bulk_len == d.bulk_len && h.bulk_crc == d.bulk_crc);

	memcpy(out, golden_hdr, sizeof(out));
	out[0] ^= 1;
	CHECK_EQ(wire_hdr_decode(out, &d), -NACRE_EBADMAGIC);

	h = sample_hdr();
	h.version = 2;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -NACRE_EPROTO_VERSION);
	h.version = 0;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -NACRE_EPROTO_VERSION);

	h = sample_hdr();
	h.body_len = WIRE_BODY_MAX;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), 0);
	h.body_len = WIRE_BODY_MAX + 1;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -EPROTO);
	CHECK_EQ(d.xid, 0x1122334455667788ull); /* filled even when rejected */
	/* the xattr calls carry a 64 KiB value: their bodies may be larger */
	CHECK_EQ(WIRE_BODY_BIG_MAX, 69632u);
	CHECK_EQ(NACRE_XATTR_MAX, 65536);
	CHECK_EQ(WIRE_FEAT_XATTR_64K, 1ull << 5);
	for (uint16_t op = 0; op < WIRE_OP_MAX_; op++)
		CHECK_EQ(wire_op_body_max(op), op == WIRE_OP_MDS_GETXATTR ||
							op == WIRE_OP_MDS_SETXATTR ||
							op == WIRE_OP_MDS_LISTXATTR
						       ? WIRE_BODY_BIG_MAX
						       : WIRE_BODY_MAX);
	h.opcode = WIRE_OP_MDS_SETXATTR;
	h.body_len = WIRE_BODY_BIG_MAX;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), 0);
	h.body_len = WIRE_BODY_BIG_MAX + 1;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -EPROTO);

	h = sample_hdr();
	h.bulk_len = WIRE_BULK_MAX;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), 0);
	h.bulk_len = WIRE_BULK_MAX + 1;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -EPROTO);

	h = sample_hdr();
	h.flags = 2;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -EPROTO);

	h = sample_hdr();
	h.bulk_len = 0;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -EPROTO); /* crc without bulk */
	h.bulk_crc = 0;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), 0);

	h.flags = 0; /* a request carries no status */
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), -EPROTO);
	h.status = 0;
	wire_hdr_encode(&h, out);
	CHECK_EQ(wire_hdr_decode(out, &d), 0);
}

/* ---- fix-ups of the round trips ---- */

NOFIX(connect_req)
NOFIX(connect_rep)
NOFIX(auth_req)
NOFIX(sec_refusal)
NOFIX(fid_req)
NOFIX(name_req)
NOFIX(setattr_req)
NOFIX(create_req)
NOFIX(rename_req)
NOFIX(link_req)
NOFIX(readdir_req)
NOFIX(open_req)
NOFIX(open_rep)
NOFIX(close_req)
NOFIX(layout_set_req)
NOFIX(target_reg)
NOFIX(ost_io_req)
NOFIX(ost_attr_rep)
NOFIX(hsm_state_set)
NOFIX(hsm_list_req)
NOFIX(hsm_agent_reg)
NOFIX(hsm_poll_req)
NOFIX(hsm_progress)
NOFIX(hsm_import_req)
NOFIX(lock_req)

static void fixup_xattr_req(struct wire_xattr_req *d, const struct wire_xattr_req *m)
{
	CHECK_EQ(d->value_len, m->value_len);
	if (d->value_len == m->value_len && m->value_len > 0)
		CHECK_MEM(d->value, m->value, m->value_len);
	d->value = m->value;
}

/* ---- golden bytes ---- */

static void test_golden_fid_req(void)
{
	static const uint8_t golden[] = {
		0xe8, 0x03, 0x00, 0x00,                         /* uid 1000 */
		0x64, 0x00, 0x00, 0x00,                         /* gid 100 */
		0x02, 0x00, 0x00, 0x00,                         /* ngroups 2 */
		0x0a, 0x00, 0x00, 0x00,                         /* groups[0] 10 */
		0x14, 0x00, 0x00, 0x00,                         /* groups[1] 20 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq 0x200000400 */
		0x01, 0x00, 0x00, 0x00,                         /* oid 1 */
		0x00, 0x00, 0x00, 0x00,                         /* ver 0 */
	};
	struct wire_fid_req m, d;
	struct wire_cursor c;

	memset(&m, 0, sizeof(m));
	m.cred.uid = 1000;
	m.cred.gid = 100;
	m.cred.ngroups = 2;
	m.cred.groups[0] = 10;
	m.cred.groups[1] = 20;
	sample_fid(&m.fid, 1);
	ENCODE(&c, wire_fid_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_fid_req_decode, golden, sizeof(golden), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
}

static void test_golden_create_req(void)
{
	static const uint8_t golden[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred */
		0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* parent seq 0x200000007 */
		0x01, 0x00, 0x00, 0x00,                         /* oid 1 */
		0x00, 0x00, 0x00, 0x00,                         /* ver 0 */
		0x01, 0x00, 'f',                                /* name "f" */
		0xa4, 0x81, 0x00, 0x00,                         /* mode 0100644 */
		0x00, 0x00, 0x00, 0x00,                         /* rdev */
		0x80, 0x00, 0x00, 0x00,                         /* flags O_EXCL */
		0x01,                                           /* has_layout */
		0x01, 0x00,                                     /* layout: 1 component */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* extent start 0 */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* extent end EOF */
		0x00, 0x00,                                     /* mirror 0 */
		0x01, 0x00, 0x00, 0x00,                         /* pattern RAID0 */
		0x00, 0x00, 0x10, 0x00,                         /* stripe size 1 MiB */
		0x02, 0x00, 0x00, 0x00,                         /* stripe count 2 */
		0xff, 0xff, 0xff, 0xff,                         /* stripe offset -1 */
		0x03, 0x00, 0x00, 0x00,                         /* gen 3 */
		0x02, 0x00, 0x00, 0x00,                         /* nosts 2 */
		0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, /* osts 4, 5 */
		0x00, 0x00,                                     /* target "" */
	};
	struct wire_create_req *m = calloc(1, sizeof(*m)), *d = calloc(1, sizeof(*d));
	struct wire_cursor c;

	m->parent.seq = NACRE_ROOT_SEQ;
	m->parent.oid = NACRE_ROOT_OID;
	memcpy(m->name, "f", 2);
	m->mode = S_IFREG | 0644;
	m->flags = O_EXCL;
	m->has_layout = 1;
	m->layout.pattern = NACRE_PATTERN_RAID0;
	m->layout.stripe_size = 1u << 20;
	m->layout.stripe_count = 2;
	m->layout.stripe_offset = -1;
	m->layout.gen = 3;
	m->layout.nosts = 2;
	m->layout.ost_idx[0] = 4;
	m->layout.ost_idx[1] = 5;
	ENCODE(&c, wire_create_req_encode, m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_create_req_decode, golden, sizeof(golden), d));
	CHECK(memcmp(m, d, sizeof(*m)) == 0);
	free(m);
	free(d);
}

/* A create with the FID the client chose (WIRE_CREATE_FID): the FID comes last. */
static void test_golden_create_req_fid(void)
{
	static const uint8_t golden[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred */
		0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* parent seq 0x200000007 */
		0x01, 0x00, 0x00, 0x00,                         /* oid 1 */
		0x00, 0x00, 0x00, 0x00,                         /* ver 0 */
		0x01, 0x00, 'd',                                /* name "d" */
		0xed, 0x41, 0x00, 0x00,                         /* mode 040755 */
		0x00, 0x00, 0x00, 0x00,                         /* rdev */
		0x00, 0x00, 0x00, 0x20,                         /* flags WIRE_CREATE_FID */
		0x00,                                           /* has_layout */
		0x00, 0x00,                                     /* target "" */
		0x01, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* fid seq 0x200000401 */
		0x05, 0x00, 0x00, 0x00,                         /* oid 5 */
		0x00, 0x00, 0x00, 0x00,                         /* ver 0 */
	};
	struct wire_create_req *m = calloc(1, sizeof(*m)), *d = calloc(1, sizeof(*d));
	struct wire_cursor c;
	uint8_t bad[sizeof(golden)];

	m->parent.seq = NACRE_ROOT_SEQ;
	m->parent.oid = NACRE_ROOT_OID;
	memcpy(m->name, "d", 2);
	m->mode = S_IFDIR | 0755;
	m->flags = WIRE_CREATE_FID;
	m->fid.seq = 0x200000401ull;
	m->fid.oid = 5;
	ENCODE(&c, wire_create_req_encode, m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_create_req_decode, golden, sizeof(golden), d));
	CHECK(memcmp(m, d, sizeof(*m)) == 0);
	/* the flag without its FID, and a FID with oid 0, are refused */
	CHECK(!DECODE_OK(wire_create_req_decode, golden, sizeof(golden) - 16, d));
	memcpy(bad, golden, sizeof(bad));
	memset(bad + sizeof(bad) - 8, 0, 4);
	CHECK(!DECODE_OK(wire_create_req_decode, bad, sizeof(bad), d));
	free(m);
	free(d);
}

static void test_golden_ost_io_req(void)
{
	static const uint8_t golden[] = {
		0x03, 0x00, 0x00, 0x00,                         /* ost_idx 3 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq */
		0x2a, 0x00, 0x00, 0x00,                         /* oid 42 */
		0x00, 0x00, 0x00, 0x00,                         /* ver */
		0x01, 0x00, 0x00, 0x00,                         /* stripe_idx 1 */
		0x07, 0x00, 0x00, 0x00,                         /* layout_gen 7 */
		0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, /* offset 1 MiB */
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, /* len 64 KiB */
	};
	struct wire_ost_io_req m, d;
	struct wire_cursor c;

	memset(&m, 0, sizeof(m));
	m.ost_idx = 3;
	sample_fid(&m.fid, 42);
	m.stripe_idx = 1;
	m.layout_gen = 7;
	m.offset = 1u << 20;
	m.len = 1u << 16;
	ENCODE(&c, wire_ost_io_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_ost_io_req_decode, golden, sizeof(golden), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);

	/* with its capability (WIRE_FEAT_CAPS) */
	static const uint8_t gcap[] = {
		0x03, 0x00, 0x00, 0x00,                         /* ost_idx 3 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq */
		0x2a, 0x00, 0x00, 0x00,                         /* oid 42 */
		0x00, 0x00, 0x00, 0x00,                         /* ver */
		0x01, 0x00, 0x00, 0x00,                         /* stripe_idx 1 */
		0x07, 0x00, 0x00, 0x00,                         /* layout_gen 7 */
		0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, /* offset 1 MiB */
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, /* len 64 KiB */
		G_CAP,
	};
	m.has_cap = 1;
	sample_cap(&m.cap);
	ENCODE(&c, wire_ost_io_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(gcap));
	CHECK_MEM(c.buf, gcap, sizeof(gcap));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_ost_io_req_decode, gcap, sizeof(gcap), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
	/* a capability cut short, and unknown rights */
	CHECK(!DECODE_OK(wire_ost_io_req_decode, gcap, sizeof(gcap) - 1, &d));
	CHECK(!DECODE_OK(wire_ost_io_req_decode, gcap, sizeof(golden) + 1, &d));
	{
		uint8_t bad[sizeof(gcap)];
		memcpy(bad, gcap, sizeof(bad));
		bad[sizeof(golden) + 8] = 0x13;
		CHECK(!DECODE_OK(wire_ost_io_req_decode, bad, sizeof(bad), &d));
	}

	/* with the opener's job id after the cap (WIRE_FEAT_OST_JOBID) */
	uint8_t gjob[sizeof(gcap) + 5];
	memcpy(gjob, gcap, sizeof(gcap));
	memcpy(gjob + sizeof(gcap), "\x04" "4242", 5);
	strcpy(m.jobid, "4242");
	ENCODE(&c, wire_ost_io_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(gjob));
	CHECK_MEM(c.buf, gjob, sizeof(gjob));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_ost_io_req_decode, gjob, sizeof(gjob), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
	/* cut short, empty, a space in it */
	CHECK(!DECODE_OK(wire_ost_io_req_decode, gjob, sizeof(gjob) - 1, &d));
	gjob[sizeof(gcap)] = 0;
	CHECK(!DECODE_OK(wire_ost_io_req_decode, gjob, sizeof(gcap) + 1, &d));
	gjob[sizeof(gcap)] = 4;
	gjob[sizeof(gcap) + 2] = ' ';
	CHECK(!DECODE_OK(wire_ost_io_req_decode, gjob, sizeof(gjob), &d));
	/* no job id without a cap: the bytes after len are the cap's */
	m.has_cap = 0;
	ENCODE(&c, wire_ost_io_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	wire_cursor_fini(&c);
}

/* OST_FALLOCATE, OST_SEEK: a field of their own, then an ost_io_req; the seek's answer. */
static void test_golden_ost_space(void)
{
#define G_IO_HEAD                                                                           \
	0x03, 0x00, 0x00, 0x00,                         /* ost_idx 3 */                     \
	0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq */                           \
	0x2a, 0x00, 0x00, 0x00,                         /* oid 42 */                        \
	0x00, 0x00, 0x00, 0x00,                         /* ver */                           \
	0x01, 0x00, 0x00, 0x00,                         /* stripe_idx 1 */                  \
	0x07, 0x00, 0x00, 0x00,                         /* layout_gen 7 */                  \
	0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00  /* offset 1 MiB */
	static const uint8_t gfa[] = {
		0x03, 0x00, 0x00, 0x00,                         /* mode KEEP_SIZE|PUNCH_HOLE */
		G_IO_HEAD,
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, /* len 64 KiB */
		G_CAP,
	};
	static const uint8_t gsk[] = {
		0x04, 0x00, 0x00, 0x00,                         /* whence SEEK_HOLE */
		G_IO_HEAD,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* len 0 */
		G_CAP,
	};
	static const uint8_t grep[] = {
		0x00, 0x00, 0x50, 0x00, 0x00, 0x00, 0x00, 0x00, /* offset 5 MiB */
	};
#undef G_IO_HEAD
	struct wire_ost_falloc_req fa, fd;
	struct wire_ost_seek_req sk, sd;
	struct wire_ost_seek_rep r, rd;
	struct wire_cursor c;

	memset(&fa, 0, sizeof(fa));
	fa.mode = WIRE_FALLOC_KEEP_SIZE | WIRE_FALLOC_PUNCH_HOLE;
	fa.io.ost_idx = 3;
	sample_fid(&fa.io.fid, 42);
	fa.io.stripe_idx = 1;
	fa.io.layout_gen = 7;
	fa.io.offset = 1u << 20;
	fa.io.len = 1u << 16;
	fa.io.has_cap = 1;
	sample_cap(&fa.io.cap);
	ENCODE(&c, wire_ost_falloc_req_encode, &fa);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(gfa));
	CHECK_MEM(c.buf, gfa, sizeof(gfa));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_ost_falloc_req_decode, gfa, sizeof(gfa), &fd));
	CHECK(memcmp(&fa, &fd, sizeof(fa)) == 0);
	{
		uint8_t bad[sizeof(gfa)];
		const uint8_t modes[] = {0x02, 0x12, 0x04, 0x20, 0x08}; /* punch alone, with
									 * zero; other bits */
		for (size_t i = 0; i < sizeof(modes); i++) {
			memcpy(bad, gfa, sizeof(bad));
			bad[0] = modes[i];
			CHECK(!DECODE_OK(wire_ost_falloc_req_decode, bad, sizeof(bad), &fd));
		}
		memcpy(bad, gfa, sizeof(bad));
		memset(bad + 4 + 36, 0, 8); /* len 0 */
		CHECK(!DECODE_OK(wire_ost_falloc_req_decode, bad, sizeof(bad), &fd));
	}

	memset(&sk, 0, sizeof(sk));
	sk.whence = WIRE_SEEK_HOLE;
	sk.io = fa.io;
	sk.io.len = 0;
	ENCODE(&c, wire_ost_seek_req_encode, &sk);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(gsk));
	CHECK_MEM(c.buf, gsk, sizeof(gsk));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_ost_seek_req_decode, gsk, sizeof(gsk), &sd));
	CHECK(memcmp(&sk, &sd, sizeof(sk)) == 0);
	{
		uint8_t bad[sizeof(gsk)];
		memcpy(bad, gsk, sizeof(bad));
		bad[0] = 2; /* SEEK_END is the kernel's */
		CHECK(!DECODE_OK(wire_ost_seek_req_decode, bad, sizeof(bad), &sd));
		memcpy(bad, gsk, sizeof(bad));
		bad[4 + 36] = 1; /* a length */
		CHECK(!DECODE_OK(wire_ost_seek_req_decode, bad, sizeof(bad), &sd));
	}

	r.offset = 5u << 20;
	ENCODE(&c, wire_ost_seek_rep_encode, &r);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(grep));
	CHECK_MEM(c.buf, grep, sizeof(grep));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_ost_seek_rep_decode, grep, sizeof(grep), &rd));
	CHECK_EQ(rd.offset, r.offset);
	{
		const uint8_t neg[] = {0, 0, 0, 0, 0, 0, 0, 0x80}; /* past off_t */
		CHECK(!DECODE_OK(wire_ost_seek_rep_decode, neg, sizeof(neg), &rd));
	}
}

/* close_req with the objects' blocks (WIRE_FEAT_BLOCKS): a trailing u64. */
static void test_golden_close_blocks(void)
{
	struct wire_close_req m, d;
	struct wire_cursor c;
	size_t plain;

	memset(&m, 0, sizeof(m));
	sample_cred(&m.cred);
	sample_fid(&m.fid, 11);
	m.handle = 43;
	m.size = 1650u << 10;
	ENCODE(&c, wire_close_req_encode, &m);
	plain = wire_cursor_pos(&c);
	wire_cursor_fini(&c);
	m.has_blocks = 1;
	m.blocks = 0x68; /* 52 KiB */
	ENCODE(&c, wire_close_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), plain + 9);
	static const uint8_t tail[] = {0x02 /* extras: blocks */, 0x68, 0, 0, 0, 0, 0, 0, 0};
	CHECK_MEM(c.buf + plain, tail, sizeof(tail));
	CHECK(DECODE_OK(wire_close_req_decode, c.buf, wire_cursor_pos(&c), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
	/* a cut blocks field fails; none at all is a close without blocks */
	CHECK(!DECODE_OK(wire_close_req_decode, c.buf, plain + 4, &d));
	CHECK(DECODE_OK(wire_close_req_decode, c.buf, plain, &d));
	CHECK_EQ(d.has_blocks, 0);
	wire_cursor_fini(&c);
}

static void test_golden_target_reg(void)
{
	static const uint8_t golden[] = {
		0x03, 0x00, 'l',  'u',  's',                    /* fsname "lus" */
		0x02, 0x00, 0x00, 0x00,                         /* type OST */
		0x03, 0x00, 0x00, 0x00,                         /* index 3 */
		0x03, 0x00, 'h',  ':',  '1',                    /* addr "h:1" */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* kb_total */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* kb_free */
		0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* kb_avail */
		0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* files */
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ffree */
		0x00, 0x10, 0x00, 0x00,                         /* bsize 4096 */
		0xff, 0x00, 0x00, 0x00,                         /* namemax 255 */
	};
	struct wire_target_reg m, d;
	struct wire_cursor c;

	memset(&m, 0, sizeof(m));
	memcpy(m.fsname, "lus", 4);
	m.type = NACRE_TGT_OST;
	m.index = 3;
	memcpy(m.addr, "h:1", 4);
	m.st.kb_total = 1;
	m.st.kb_free = 2;
	m.st.kb_avail = 3;
	m.st.files = 4;
	m.st.ffree = 5;
	m.st.bsize = 4096;
	m.st.namemax = 255;
	ENCODE(&c, wire_target_reg_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_target_reg_decode, golden, sizeof(golden), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
}

/* ---- round trips of every message ---- */

static void test_roundtrips(void)
{
	{
		struct wire_connect_req m;

		memset(&m, 0, sizeof(m));
		m.version_min = 1;
		m.version_max = 3;
		m.features = 0x8000000000000001ull;
		for (int i = 0; i < WIRE_NONCE_LEN; i++)
			m.nonce[i] = (uint8_t)(i * 17);
		memcpy(m.fsname, "scratch", 8);
		memcpy(m.name, "client@node-7", 14);
		ROUNDTRIP(connect_req, &m);
		memset(m.fsname, 0, sizeof(m.fsname)); /* no fsname: allowed */
		ROUNDTRIP(connect_req, &m);
		m.features = WIRE_FEAT_RECOVERY | WIRE_FEAT_SEC;
		m.client_id = 77;
		m.sec = WIRE_SEC_PRIVACY;
		m.sec_flags = WIRE_SEC_RAISE;
		ROUNDTRIP(connect_req, &m);
	}
	{
		/* with WIRE_FEAT_SEC: u8 sec, u8 sec_flags at the very end; bad values fail */
		struct wire_connect_req m, d;
		struct wire_cursor c;
		uint8_t buf[256];

		memset(&m, 0, sizeof(m));
		m.version_min = m.version_max = 1;
		m.features = WIRE_FEAT_SEC;
		memcpy(m.name, "n", 2);
		m.sec = WIRE_SEC_INTEGRITY;
		wire_cursor_init_write(&c, buf, sizeof(buf));
		wire_connect_req_encode(&c, &m);
		CHECK(wire_cursor_ok(&c));
		CHECK_EQ(wire_cursor_pos(&c), 2 + 2 + 8 + 16 + 2 + 0 + 2 + 1 + 2);
		CHECK_EQ(buf[wire_cursor_pos(&c) - 2], WIRE_SEC_INTEGRITY);
		CHECK_EQ(buf[wire_cursor_pos(&c) - 1], 0);
		buf[wire_cursor_pos(&c) - 2] = 3; /* no such flavour */
		CHECK(!DECODE_OK(wire_connect_req_decode, buf, wire_cursor_pos(&c), &d));
		buf[wire_cursor_pos(&c) - 2] = 1;
		buf[wire_cursor_pos(&c) - 1] = 2; /* unknown flag */
		CHECK(!DECODE_OK(wire_connect_req_decode, buf, wire_cursor_pos(&c), &d));
	}
	{
		struct wire_sec_refusal m;

		memset(&m, 0, sizeof(m));
		m.min = WIRE_SEC_PRIVACY;
		memcpy(m.rule, "--sec-min", 10);
		ROUNDTRIP(sec_refusal, &m);
	}
	{
		struct wire_connect_req m;

		memset(&m, 0, sizeof(m));
		m.version_min = 1;
		m.version_max = 3;
		memcpy(m.name, "c", 2);
		/* the key a client proves, behind WIRE_FEAT_KEY_ID */
		m.features = WIRE_FEAT_RECOVERY | WIRE_FEAT_KEY_ID;
		m.client_id = 7;
		m.key.role = KEY_ROLE_CLIENT;
		memcpy(m.key.name, "node17", 7);
		m.key.gen = 3;
		ROUNDTRIP(connect_req, &m);
	}
	{
		/* a key id must name a client or admin key properly */
		struct wire_connect_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		m.version_min = m.version_max = 1;
		memcpy(m.name, "x", 2);
		m.features = WIRE_FEAT_KEY_ID;
		m.key.role = KEY_ROLE_CLIENT;
		m.key.gen = 1;
		memcpy(m.key.name, "a", 2);
		ENCODE(&c, wire_connect_req_encode, &m);
		CHECK(DECODE_OK(wire_connect_req_decode, c.buf, wire_cursor_pos(&c), &d));
		CHECK_STR(d.key.name, "a");
		wire_cursor_fini(&c);
		m.key.gen = 0; /* generations start at 1 */
		ENCODE(&c, wire_connect_req_encode, &m);
		CHECK(!DECODE_OK(wire_connect_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		m.key.gen = 1;
		memcpy(m.key.name, "a b", 4); /* not a key name */
		ENCODE(&c, wire_connect_req_encode, &m);
		CHECK(!DECODE_OK(wire_connect_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		memcpy(m.key.name, "a", 2);
		m.key.role = KEY_ROLE_MAX_; /* no such role */
		ENCODE(&c, wire_connect_req_encode, &m);
		CHECK(!DECODE_OK(wire_connect_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	{
		struct wire_connect_rep m;

		memset(&m, 0, sizeof(m));
		m.version = 1;
		m.features = 0;
		memset(m.nonce, 0xaa, sizeof(m.nonce));
		memset(m.proof, 0x55, sizeof(m.proof));
		memcpy(m.server_name, "nacre-MDT0000", 14);
		ROUNDTRIP(connect_rep, &m);
		m.features = WIRE_FEAT_SEC;
		m.sec = WIRE_SEC_INTEGRITY;
		ROUNDTRIP(connect_rep, &m);
	}
	{
		struct wire_auth_req m;

		for (int i = 0; i < WIRE_PROOF_LEN; i++)
			m.proof[i] = (uint8_t)(255 - i);
		ROUNDTRIP(auth_req, &m);
	}
	{
		struct wire_fid_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 9);
		ROUNDTRIP(fid_req, &m);
		m.cred.ngroups = NACRE_CRED_GROUPS;
		for (int i = 0; i < NACRE_CRED_GROUPS; i++)
			m.cred.groups[i] = (uint32_t)i + 1000;
		ROUNDTRIP(fid_req, &m);
		/* a job id travels after the groups; the longest one, then one with a space */
		memset(m.cred.jobid, 'j', NACRE_JOBID_MAX);
		ROUNDTRIP(fid_req, &m);
		m.cred.jobid[5] = ' ';
		struct wire_cursor c;
		uint8_t buf[512];
		wire_cursor_init_write(&c, buf, sizeof(buf));
		wire_fid_req_encode(&c, &m);
		CHECK(!wire_cursor_ok(&c)); /* refused on the way out */
		memset(m.cred.jobid, 0, sizeof(m.cred.jobid));
	}
	{
		struct wire_name_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.parent, 2);
		memset(m.name, 'x', NACRE_NAME_MAX); /* the longest name */
		ROUNDTRIP(name_req, &m);
		memset(m.name, 0, sizeof(m.name));
		memcpy(m.name, "...", 3); /* not "." or "..": fine */
		ROUNDTRIP(name_req, &m);
	}
	{
		struct wire_setattr_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 3);
		m.sa.valid = NACRE_SET_ALL_;
		m.sa.mode = 04755;
		m.sa.uid = 1;
		m.sa.gid = 2;
		m.sa.size = 1ull << 40;
		m.sa.atime.sec = 10;
		m.sa.mtime.nsec = 999999999;
		m.sa.ctime.sec = -1;
		ROUNDTRIP(setattr_req, &m);
	}
	{
		struct wire_create_req *m = calloc(1, sizeof(*m));

		sample_cred(&m->cred);
		sample_fid(&m->parent, 4);
		memcpy(m->name, "link", 5);
		m->mode = S_IFLNK | 0777;
		memset(m->target, 't', NACRE_PATH_MAX); /* the longest target */
		ROUNDTRIP(create_req, m);
		memset(m->target, 0, sizeof(m->target));
		m->mode = S_IFREG | 0600;
		m->has_layout = 1;
		sample_layout(&m->layout, NACRE_MAX_STRIPES);
		ROUNDTRIP(create_req, m);
		m->mode = S_IFCHR | 0600;
		m->rdev = 0x0801;
		m->has_layout = 0;
		memset(&m->layout, 0, sizeof(m->layout));
		ROUNDTRIP(create_req, m);
		/* the umask travels only with its flag, at the end */
		m->mode = S_IFDIR | 0777;
		m->flags = WIRE_CREATE_UMASK;
		m->umask = 022;
		ROUNDTRIP(create_req, m);
		{
			struct wire_cursor c;
			struct wire_create_req *d = malloc(sizeof(*d));
			m->umask = 01000; /* beyond rwx */
			ENCODE(&c, wire_create_req_encode, m);
			CHECK(!DECODE_OK(wire_create_req_decode, c.buf, wire_cursor_pos(&c), d));
			wire_cursor_fini(&c);
			free(d);
		}
		free(m);
	}
	{
		struct wire_rename_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.sparent, 5);
		memcpy(m.sname, "a", 2);
		sample_fid(&m.dparent, 6);
		memcpy(m.dname, "b.txt", 6);
		m.flags = 1;
		ROUNDTRIP(rename_req, &m);
	}
	{
		struct wire_link_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 7);
		sample_fid(&m.parent, 8);
		memcpy(m.name, "hard", 5);
		ROUNDTRIP(link_req, &m);
	}
	{
		struct wire_readdir_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 9);
		m.cookie = 0xfedcba9876543210ull;
		m.max_bytes = 4096;
		ROUNDTRIP(readdir_req, &m);
	}
	{
		struct wire_open_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 10);
		m.flags = O_RDWR | O_TRUNC;
		ROUNDTRIP(open_req, &m);
	}
	{
		struct wire_open_rep m;

		memset(&m, 0, sizeof(m));
		sample_attr(&m.attr);
		sample_layout(&m.layout, 4);
		m.handle = 42;
		ROUNDTRIP(open_rep, &m);
		memset(&m.layout, 0, sizeof(m.layout)); /* non-regular file: no layout */
		ROUNDTRIP(open_rep, &m);
	}
	{
		struct wire_close_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 11);
		m.handle = 43;
		m.size = 1ull << 33;
		m.has_mtime = 1;
		m.mtime.sec = 1750000000;
		m.mtime.nsec = 12345;
		ROUNDTRIP(close_req, &m);

		/* with WIRE_FEAT_ATIME a read's atime may follow (extras 0x1; blocks:
		 * test_golden_close_blocks): optional, so the version 1
		 * body is a valid prefix and every other prefix is not */
		struct wire_close_req d;
		struct wire_cursor c;
		size_t v1, n;
		ENCODE(&c, wire_close_req_encode, &m);
		v1 = wire_cursor_pos(&c);
		wire_cursor_fini(&c);
		m.has_atime = 1;
		m.atime.sec = 1760000000;
		m.atime.nsec = 999999999;
		ENCODE(&c, wire_close_req_encode, &m);
		n = wire_cursor_pos(&c);
		CHECK_EQ(n, v1 + 13);
		CHECK(DECODE_OK(wire_close_req_decode, c.buf, n, &d));
		CHECK_MEM(&d, &m, sizeof(d));
		CHECK(DECODE_OK(wire_close_req_decode, c.buf, v1, &d));
		CHECK_EQ(d.has_atime, 0);
		for (size_t k = v1 + 1; k < n; k++)
			CHECK(!DECODE_OK(wire_close_req_decode, c.buf, k, &d));
		c.buf[v1] = 4; /* an unknown extra */
		CHECK(!DECODE_OK(wire_close_req_decode, c.buf, n, &d));
		wire_cursor_fini(&c);
	}
	{
		struct wire_xattr_req m;
		static uint8_t val[NACRE_XATTR_MAX - 200];

		for (size_t i = 0; i < sizeof(val); i++)
			val[i] = (uint8_t)(i * 7);
		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 12);
		memcpy(m.name, "user.a/b.c", 11); /* '/' and '.' are fine in xattr names */
		m.flags = 1;
		m.value = val;
		m.value_len = 5;
		ROUNDTRIP(xattr_req, &m);
		m.value_len = sizeof(val); /* big, but within the body limit */
		ROUNDTRIP(xattr_req, &m);
		static uint8_t full[NACRE_XATTR_MAX]; /* Linux's largest value */
		m.value = full;
		m.value_len = sizeof(full);
		ROUNDTRIP(xattr_req, &m);
		memset(m.name, 0, sizeof(m.name)); /* LISTXATTR */
		m.flags = 0;
		m.size = 65536;
		m.value = NULL;
		m.value_len = 0;
		ROUNDTRIP(xattr_req, &m);
	}
	{
		struct wire_layout_set_req m;

		memset(&m, 0, sizeof(m));
		sample_cred(&m.cred);
		sample_fid(&m.fid, 13);
		m.layout.pattern = NACRE_PATTERN_RAID0;
		m.layout.stripe_count = -1; /* directory default: all OSTs */
		m.layout.stripe_offset = 2;
		ROUNDTRIP(layout_set_req, &m);
	}
	{
		struct wire_target_reg m;

		memset(&m, 0, sizeof(m));
		memcpy(m.fsname, "a_b-C9", 7);
		m.type = NACRE_TGT_OST;
		m.index = 65535;
		memcpy(m.addr, "[::1]:9410", 11);
		sample_statfs(&m.st);
		ROUNDTRIP(target_reg, &m);
	}
	{
		struct wire_ost_io_req m;

		memset(&m, 0, sizeof(m));
		m.ost_idx = 1;
		sample_fid(&m.fid, 14);
		m.stripe_idx = NACRE_MAX_STRIPES - 1;
		m.layout_gen = 9;
		m.offset = (uint64_t)INT64_MAX - 10;
		m.len = 10;
		ROUNDTRIP(ost_io_req, &m);
	}
	{
		struct wire_ost_attr_rep m = {.size = 1ull << 50, .blocks = 12};

		ROUNDTRIP(ost_attr_rep, &m);
	}
}

static void test_groups(void)
{
	struct wire_cursor c;
	struct nacre_attr a, ad;
	struct nacre_statfs s, sd;
	struct nacre_dirent de, dd;
	struct nacre_target t, td;
	struct nacre_layout l, ld;
	struct wire_cursor r;

	memset(&a, 0, sizeof(a));
	memset(&s, 0, sizeof(s));
	memset(&de, 0, sizeof(de));
	memset(&t, 0, sizeof(t));
	memset(&l, 0, sizeof(l));
	sample_attr(&a);
	sample_statfs(&s);
	de.cookie = 99;
	sample_fid(&de.fid, 15);
	de.type = S_IFDIR;
	memcpy(de.name, "subdir", 7);
	t.type = NACRE_TGT_MDT;
	t.index = 0;
	t.up = 1;
	memcpy(t.addr, "mds1:9400", 10);
	sample_statfs(&t.st);
	sample_layout(&l, 3);

	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_attr_put(&c, &a);
	wire_statfs_put(&c, &s);
	wire_dirent_put(&c, &de);
	wire_target_put(&c, &t);
	wire_layout_put(&c, &l);
	CHECK(wire_cursor_ok(&c));
	CHECK_EQ(wire_cursor_pos(&c), 100 + 48 + (8 + 16 + 4 + 2 + 6) + (9 + 2 + 9 + 48) +
					      (2 + 8 + 8 + 2 + 24 + 12));
	wire_cursor_init_read(&r, c.buf, wire_cursor_pos(&c));
	wire_attr_get(&r, &ad);
	wire_statfs_get(&r, &sd);
	wire_dirent_get(&r, &dd);
	wire_target_get(&r, &td);
	wire_layout_get(&r, &ld);
	CHECK(wire_cursor_ok(&r));
	CHECK_EQ(wire_cursor_left(&r), 0);
	CHECK(memcmp(&a, &ad, sizeof(a)) == 0);
	CHECK(memcmp(&s, &sd, sizeof(s)) == 0);
	CHECK(memcmp(&de, &dd, sizeof(de)) == 0);
	CHECK(memcmp(&t, &td, sizeof(t)) == 0);
	CHECK(memcmp(&l, &ld, sizeof(l)) == 0);
	wire_cursor_fini(&c);
}

/* ---- rejections ---- */

/* Builds a name_req body whose name is n raw bytes; 1 if it decodes. */
static int name_req_raw(const char *name, size_t n)
{
	uint8_t buf[600];
	struct wire_cursor c;
	struct wire_name_req m;
	struct nacre_cred cr;
	struct nacre_fid f;

	memset(&cr, 0, sizeof(cr));
	sample_fid(&f, 1);
	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_cred_put(&c, &cr);
	wire_fid_put(&c, &f);
	wire_put_u16(&c, (uint16_t)n);
	wire_put_bytes(&c, name, n);
	return DECODE_OK(wire_name_req_decode, buf, wire_cursor_pos(&c), &m) &&
	       strlen(m.name) == n && memcmp(m.name, name, n) == 0;
}

static void test_reject_names(void)
{
	char longname[NACRE_NAME_MAX + 2];

	memset(longname, 'n', sizeof(longname));
	CHECK(name_req_raw("ok", 2));
	CHECK(name_req_raw(".hidden", 7));
	CHECK(!name_req_raw("", 0));
	CHECK(!name_req_raw(".", 1));
	CHECK(!name_req_raw("..", 2));
	CHECK(!name_req_raw("a/b", 3));
	CHECK(!name_req_raw("a\0b", 3));
	CHECK(name_req_raw(longname, NACRE_NAME_MAX));
	CHECK(!name_req_raw(longname, NACRE_NAME_MAX + 1));

	/* Encoders refuse what they cannot represent. */
	{
		struct wire_cursor c;
		struct wire_name_req m;
		struct wire_create_req *cm = calloc(1, sizeof(*cm));
		char *toolong = malloc(NACRE_PATH_MAX + 2);

		memset(&m, 0, sizeof(m));
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_name_req_encode(&c, &m); /* empty name */
		CHECK(!wire_cursor_ok(&c));
		wire_cursor_fini(&c);

		memcpy(cm->name, "s", 2);
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		memset(toolong, 'p', NACRE_PATH_MAX + 1);
		toolong[NACRE_PATH_MAX + 1] = '\0';
		wire_path_put(&c, toolong);
		CHECK_EQ(c.err, -ENAMETOOLONG);
		wire_cursor_fini(&c);
		free(toolong);
		free(cm);
	}
}

/* A fid_req whose cred claims ngroups and carries extra_groups; 1 if it decodes. */
static int fid_req_with_ngroups(uint32_t ngroups, size_t extra_groups)
{
	uint8_t buf[1024];
	struct wire_cursor c;
	struct wire_fid_req m;
	struct nacre_fid f;

	sample_fid(&f, 1);
	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_u32(&c, 0);
	wire_put_u32(&c, 0);
	wire_put_u32(&c, ngroups);
	for (size_t i = 0; i < extra_groups; i++)
		wire_put_u32(&c, 7);
	wire_fid_put(&c, &f);
	return DECODE_OK(wire_fid_req_decode, buf, wire_cursor_pos(&c), &m);
}

static int layout_raw(uint16_t ncomp, uint64_t start, uint64_t end, uint16_t mirror,
		      uint32_t pattern, int32_t count, int32_t offset, uint32_t nosts)
{
	uint8_t buf[1024];
	struct wire_cursor c, r;
	struct nacre_layout l;

	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_u16(&c, ncomp);
	wire_put_u64(&c, start);
	wire_put_u64(&c, end);
	wire_put_u16(&c, mirror);
	wire_put_u32(&c, pattern);
	wire_put_u32(&c, 1u << 20);
	wire_put_i32(&c, count);
	wire_put_i32(&c, offset);
	wire_put_u32(&c, 0);
	wire_put_u32(&c, nosts);
	for (uint32_t i = 0; i < nosts && i < 200; i++)
		wire_put_u32(&c, i);
	if (!wire_cursor_ok(&c))
		return -1;
	wire_cursor_init_read(&r, buf, wire_cursor_pos(&c));
	wire_layout_get(&r, &l);
	return wire_cursor_ok(&r) && wire_cursor_left(&r) == 0;
}

static void test_reject_fields(void)
{
	CHECK(fid_req_with_ngroups(NACRE_CRED_GROUPS, NACRE_CRED_GROUPS));
	CHECK(!fid_req_with_ngroups(NACRE_CRED_GROUPS + 1, NACRE_CRED_GROUPS + 1));
	CHECK(!fid_req_with_ngroups(0xffffffffu, 0));

	/* a cred with a group-list token and the protected_hardlinks flag: golden bytes */
	{
		static const uint8_t golden[] = {
			0x01, 0x00, 0x00, 0x00,                         /* uid 1 */
			0x02, 0x00, 0x00, 0x00,                         /* gid 2 */
			0x01, 0x00, 0x00, 0xc0,                         /* 1 group | token | phl */
			0x03, 0x00, 0x00, 0x00,                         /* group 3 */
			0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* token */
		};
		struct nacre_cred cr = {.uid = 1, .gid = 2, .ngroups = 1, .groups = {3},
					.groups_token = 0x1122334455667788ull,
					.flags = NACRE_CRED_PROTECTED_HARDLINKS}, d;
		uint8_t buf[64];
		struct wire_cursor c;
		wire_cursor_init_write(&c, buf, sizeof(buf));
		wire_cred_put(&c, &cr);
		CHECK(wire_cursor_ok(&c) && wire_cursor_pos(&c) == sizeof(golden) &&
		      memcmp(buf, golden, sizeof(golden)) == 0);
		wire_cursor_init_read(&c, golden, sizeof(golden));
		wire_cred_get(&c, &d);
		CHECK(wire_cursor_ok(&c) && wire_cursor_left(&c) == 0 && d.uid == 1 && d.gid == 2 &&
		      d.ngroups == 1 && d.groups[0] == 3 && d.groups_token == cr.groups_token &&
		      d.flags == NACRE_CRED_PROTECTED_HARDLINKS);
		uint8_t zero[sizeof(golden)];
		memcpy(zero, golden, sizeof(golden));
		memset(zero + 16, 0, 8); /* token 0 with the token bit: refused */
		wire_cursor_init_read(&c, zero, sizeof(zero));
		wire_cred_get(&c, &d);
		CHECK(!wire_cursor_ok(&c));
		CHECK(wire_groups_token((const uint32_t[]){1, 2}, 2) !=
		      wire_groups_token((const uint32_t[]){1, 3}, 2));
	}

	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 1, 4, -1, 4) == 1);
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 1, 128, -1, 128) == 1);
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 0, 0, -1, 0) == 1); /* pattern unset */
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 1, 4, -1, 129) == 0);
	CHECK(layout_raw(2, 0, UINT64_MAX, 0, 1, 4, -1, 4) == 0);
	CHECK(layout_raw(0, 0, UINT64_MAX, 0, 1, 4, -1, 4) == 0);
	CHECK(layout_raw(1, 1, UINT64_MAX, 0, 1, 4, -1, 4) == 0);
	CHECK(layout_raw(1, 0, 1000, 0, 1, 4, -1, 4) == 0);
	CHECK(layout_raw(1, 0, UINT64_MAX, 1, 1, 4, -1, 4) == 0);
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 2, 4, -1, 4) == 0);
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 1, -2, -1, 0) == 0);
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 1, 129, -1, 0) == 0);
	CHECK(layout_raw(1, 0, UINT64_MAX, 0, 1, 1, -2, 1) == 0);

	/* setattr: valid bits beyond NACRE_SET_ALL_, mode beyond 07777, nsec >= 1e9. */
	{
		struct wire_setattr_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		m.sa.valid = NACRE_SET_ALL_ + 1;
		ENCODE(&c, wire_setattr_req_encode, &m);
		CHECK(!DECODE_OK(wire_setattr_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		m.sa.valid = NACRE_SET_MODE;
		m.sa.mode = S_IFREG | 0644;
		ENCODE(&c, wire_setattr_req_encode, &m);
		CHECK(!DECODE_OK(wire_setattr_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		m.sa.mode = 0644;
		m.sa.mtime.nsec = 1000000000;
		ENCODE(&c, wire_setattr_req_encode, &m);
		CHECK(!DECODE_OK(wire_setattr_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	/* xattr: value over NACRE_XATTR_MAX, name with NUL, bad flags. */
	{
		uint8_t *buf = malloc(NACRE_XATTR_MAX + 256);
		struct wire_cursor c;
		struct wire_xattr_req d;
		struct nacre_cred cr;
		struct nacre_fid f;

		memset(&cr, 0, sizeof(cr));
		sample_fid(&f, 1);
		wire_cursor_init_write(&c, buf, NACRE_XATTR_MAX + 256);
		wire_cred_put(&c, &cr);
		wire_fid_put(&c, &f);
		wire_put_u16(&c, 6);
		wire_put_bytes(&c, "user.x", 6);
		wire_put_u32(&c, 0);
		wire_put_u32(&c, 0);
		wire_put_u32(&c, NACRE_XATTR_MAX + 1);
		{
			uint8_t *val = calloc(1, NACRE_XATTR_MAX + 1);

			wire_put_bytes(&c, val, NACRE_XATTR_MAX + 1);
			free(val);
		}
		CHECK(wire_cursor_ok(&c));
		CHECK(!DECODE_OK(wire_xattr_req_decode, buf, wire_cursor_pos(&c), &d));
		CHECK(d.value == NULL && d.value_len == 0);

		wire_cursor_init_write(&c, buf, 256);
		wire_cred_put(&c, &cr);
		wire_fid_put(&c, &f);
		wire_put_u16(&c, 3);
		wire_put_bytes(&c, "a\0b", 3);
		wire_put_u32(&c, 0);
		wire_put_u32(&c, 0);
		wire_put_u32(&c, 0);
		CHECK(!DECODE_OK(wire_xattr_req_decode, buf, wire_cursor_pos(&c), &d));

		wire_cursor_init_write(&c, buf, 256);
		wire_cred_put(&c, &cr);
		wire_fid_put(&c, &f);
		wire_put_u16(&c, 1);
		wire_put_bytes(&c, "a", 1);
		wire_put_u32(&c, 4); /* flags: only 1 and 2 exist */
		wire_put_u32(&c, 0);
		wire_put_u32(&c, 0);
		CHECK(!DECODE_OK(wire_xattr_req_decode, buf, wire_cursor_pos(&c), &d));
		free(buf);
	}
	/* create: has_layout 2, mode with bits beyond the type. */
	{
		struct wire_create_req *m = calloc(1, sizeof(*m)), *d = malloc(sizeof(*d));
		struct wire_cursor c;
		size_t hl = 12 + 16 + 2 + 1 + 12; /* cred, parent, name "f", mode rdev flags */

		memcpy(m->name, "f", 2);
		ENCODE(&c, wire_create_req_encode, m);
		CHECK(DECODE_OK(wire_create_req_decode, c.buf, wire_cursor_pos(&c), d));
		c.buf[hl] = 2;
		CHECK(!DECODE_OK(wire_create_req_decode, c.buf, wire_cursor_pos(&c), d));
		wire_cursor_fini(&c);
		m->mode = 0x10000000;
		ENCODE(&c, wire_create_req_encode, m);
		CHECK(!DECODE_OK(wire_create_req_decode, c.buf, wire_cursor_pos(&c), d));
		wire_cursor_fini(&c);
		free(m);
		free(d);
	}
	/* target_reg: bad fsname, empty addr, unknown type. */
	{
		struct wire_target_reg m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		memcpy(m.fsname, "a.b", 4);
		m.type = NACRE_TGT_OST;
		memcpy(m.addr, "h:1", 4);
		ENCODE(&c, wire_target_reg_encode, &m);
		CHECK(!DECODE_OK(wire_target_reg_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		memcpy(m.fsname, "ab", 3);
		m.type = 3;
		ENCODE(&c, wire_target_reg_encode, &m);
		CHECK(!DECODE_OK(wire_target_reg_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		m.type = NACRE_TGT_OST;
		m.addr[0] = '\0';
		ENCODE(&c, wire_target_reg_encode, &m);
		CHECK(!DECODE_OK(wire_target_reg_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	/* ost_io_req: stripe index, offset + len beyond off_t. */
	{
		struct wire_ost_io_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		m.stripe_idx = NACRE_MAX_STRIPES;
		ENCODE(&c, wire_ost_io_req_encode, &m);
		CHECK(!DECODE_OK(wire_ost_io_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
		m.stripe_idx = 0;
		m.offset = (uint64_t)INT64_MAX;
		m.len = 1;
		ENCODE(&c, wire_ost_io_req_encode, &m);
		CHECK(!DECODE_OK(wire_ost_io_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	/* rename flags, close has_mtime, connect versions, dirent type. */
	{
		struct wire_rename_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		memcpy(m.sname, "a", 2);
		memcpy(m.dname, "b", 2);
		m.flags = 4;
		ENCODE(&c, wire_rename_req_encode, &m);
		CHECK(!DECODE_OK(wire_rename_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	{
		struct wire_close_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		ENCODE(&c, wire_close_req_encode, &m);
		c.buf[12 + 16 + 16] = 2; /* has_mtime */
		CHECK(!DECODE_OK(wire_close_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	{
		struct wire_connect_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		m.version_min = 2;
		m.version_max = 1;
		memcpy(m.name, "x", 2);
		ENCODE(&c, wire_connect_req_encode, &m);
		CHECK(!DECODE_OK(wire_connect_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
	{
		struct nacre_dirent de, dd;
		struct wire_cursor c, r;

		memset(&de, 0, sizeof(de));
		de.type = S_IFREG | 0644; /* only type bits belong here */
		memcpy(de.name, "x", 2);
		wire_cursor_init_dyn(&c, 1024);
		wire_dirent_put(&c, &de);
		wire_cursor_init_read(&r, c.buf, wire_cursor_pos(&c));
		wire_dirent_get(&r, &dd);
		CHECK(!wire_cursor_ok(&r));
		wire_cursor_fini(&c);
	}
	/* READDIR with attributes: the flags come last, only when set; a 0 or an unknown bit
	 * is refused; each entry carries u8 has_attr and the attr of its own FID and type */
	{
		static const uint8_t gtail[] = {0x00, 0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00};
		struct wire_readdir_req m, d;
		struct wire_cursor c, r;
		struct nacre_dirent de, dd;
		struct nacre_attr a, ad;
		int has;

		memset(&m, 0, sizeof(m));
		m.max_bytes = 4096;
		m.flags = WIRE_READDIR_PLUS;
		ENCODE(&c, wire_readdir_req_encode, &m);
		CHECK_EQ(wire_cursor_pos(&c), 12 + 16 + 8 + sizeof(gtail));
		CHECK_MEM(c.buf + 36, gtail, sizeof(gtail));
		CHECK(DECODE_OK(wire_readdir_req_decode, c.buf, wire_cursor_pos(&c), &d));
		CHECK(d.flags == WIRE_READDIR_PLUS && d.max_bytes == 4096);
		/* without the flags it is the version 1 request (an older client's) */
		CHECK(DECODE_OK(wire_readdir_req_decode, c.buf, wire_cursor_pos(&c) - 4, &d));
		CHECK(d.flags == 0);
		c.buf[40] = 0x02;
		CHECK(!DECODE_OK(wire_readdir_req_decode, c.buf, wire_cursor_pos(&c), &d));
		c.buf[40] = 0x00;
		CHECK(!DECODE_OK(wire_readdir_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);

		memset(&de, 0, sizeof(de));
		memset(&a, 0, sizeof(a));
		de.cookie = 77;
		sample_fid(&de.fid, 3);
		de.type = S_IFREG;
		memcpy(de.name, "e", 2);
		a.fid = de.fid;
		a.mode = S_IFREG | 0640;
		a.size = 12345;
		wire_cursor_init_dyn(&c, 4096);
		wire_direntplus_put(&c, &de, &a);
		CHECK_EQ(wire_cursor_pos(&c), WIRE_DIRENT_FIXED + 1 + 1 + WIRE_ATTR_SIZE);
		wire_direntplus_put(&c, &de, NULL);
		wire_cursor_init_read(&r, c.buf, wire_cursor_pos(&c));
		wire_direntplus_get(&r, &dd, &ad, &has);
		CHECK(wire_cursor_ok(&r) && has && ad.size == 12345 && dd.cookie == 77);
		wire_direntplus_get(&r, &dd, &ad, &has);
		CHECK(wire_cursor_ok(&r) && !has && ad.mode == 0 && !wire_cursor_left(&r));
		wire_cursor_fini(&c);
		a.mode = S_IFDIR | 0755; /* attributes of another type than the entry's */
		wire_cursor_init_dyn(&c, 4096);
		wire_direntplus_put(&c, &de, &a);
		wire_cursor_init_read(&r, c.buf, wire_cursor_pos(&c));
		wire_direntplus_get(&r, &dd, &ad, &has);
		CHECK(!wire_cursor_ok(&r));
		wire_cursor_fini(&c);
	}
	/* readdir max_bytes is capped, not refused. */
	{
		struct wire_readdir_req m, d;
		struct wire_cursor c;

		memset(&m, 0, sizeof(m));
		m.max_bytes = 0xffffffffu;
		ENCODE(&c, wire_readdir_req_encode, &m);
		CHECK(DECODE_OK(wire_readdir_req_decode, c.buf, wire_cursor_pos(&c), &d));
		CHECK_EQ(d.max_bytes, WIRE_READDIR_MAX_BYTES);
		wire_cursor_fini(&c);
	}
}

/* ---- HSM ---- */

static void test_hsm(void)
{
	/* golden: a RELEASE request for one file, archive 1, root */
	static const uint8_t golden[] = {
		0x00, 0x00, 0x00, 0x00,                         /* uid 0 */
		0x00, 0x00, 0x00, 0x00,                         /* gid 0 */
		0x00, 0x00, 0x00, 0x00,                         /* ngroups 0 */
		0x0c, 0x00, 0x00, 0x00,                         /* action RELEASE (12) */
		0x01, 0x00, 0x00, 0x00,                         /* archive_id 1 */
		0x00, 0x00, 0x00, 0x00,                         /* flags 0 */
		0x01, 0x00, 0x00, 0x00,                         /* nfids 1 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq 0x200000400 */
		0x07, 0x00, 0x00, 0x00,                         /* oid 7 */
		0x00, 0x00, 0x00, 0x00,                         /* ver 0 */
	};
	struct wire_hsm_request r, rd;
	struct nacre_fid f, fd;
	struct wire_cursor c;

	memset(&r, 0, sizeof(r));
	r.action = NACRE_HUA_RELEASE;
	r.archive_id = 1;
	r.nfids = 1;
	sample_fid(&f, 7);
	ENCODE(&c, wire_hsm_request_encode, &r);
	wire_fid_put(&c, &f);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	{
		struct wire_cursor rc_;
		wire_cursor_init_read(&rc_, golden, sizeof(golden));
		wire_hsm_request_decode(&rc_, &rd);
		wire_fid_get(&rc_, &fd);
		CHECK(wire_cursor_ok(&rc_) && wire_cursor_left(&rc_) == 0);
		CHECK(memcmp(&r, &rd, sizeof(r)) == 0);
		CHECK(memcmp(&f, &fd, sizeof(f)) == 0);
		/* a count the bytes do not hold, a bad action, zero fids: refused */
		wire_cursor_init_read(&rc_, golden, sizeof(golden) - 1);
		wire_hsm_request_decode(&rc_, &rd);
		CHECK(!wire_cursor_ok(&rc_));
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[12] = 9;
		wire_cursor_init_read(&rc_, bad, sizeof(bad));
		wire_hsm_request_decode(&rc_, &rd);
		CHECK(!wire_cursor_ok(&rc_));
		memcpy(bad, golden, sizeof(bad));
		bad[24] = 0;
		wire_cursor_init_read(&rc_, bad, sizeof(bad));
		wire_hsm_request_decode(&rc_, &rd);
		CHECK(!wire_cursor_ok(&rc_));
	}

	struct wire_hsm_state_set ss;
	memset(&ss, 0, sizeof(ss));
	sample_cred(&ss.cred);
	sample_fid(&ss.fid, 3);
	ss.set = NACRE_HS_NORELEASE;
	ss.clear = NACRE_HS_DIRTY;
	ss.archive_id = 4;
	ROUNDTRIP(hsm_state_set, &ss);
	ss.clear = NACRE_HS_NORELEASE; /* set and clear overlap */
	{
		struct wire_hsm_state_set d;
		ENCODE(&c, wire_hsm_state_set_encode, &ss);
		CHECK(!DECODE_OK(wire_hsm_state_set_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}

	struct wire_hsm_list_req lr;
	memset(&lr, 0, sizeof(lr));
	sample_cred(&lr.cred);
	lr.cookie = 77;
	lr.max = 10;
	ROUNDTRIP(hsm_list_req, &lr);

	struct wire_hsm_agent_reg ar;
	memset(&ar, 0, sizeof(ar));
	ar.max_active = 4;
	ar.nids = 2;
	ar.ids[0] = 1;
	ar.ids[1] = 9;
	ROUNDTRIP(hsm_agent_reg, &ar);
	ar.ids[1] = 0; /* archive id 0 is "none" */
	{
		struct wire_hsm_agent_reg d;
		ENCODE(&c, wire_hsm_agent_reg_encode, &ar);
		CHECK(!DECODE_OK(wire_hsm_agent_reg_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}

	struct wire_hsm_poll_req pr;
	memset(&pr, 0, sizeof(pr));
	pr.max = 8;
	pr.wait_ms = 1000;
	ROUNDTRIP(hsm_poll_req, &pr);

	struct wire_hsm_progress *pg = calloc(1, sizeof(*pg));
	pg->cookie = 5;
	sample_fid(&pg->fid, 9);
	pg->bytes_done = 1 << 20;
	pg->bytes_total = 4 << 20;
	pg->flags = WIRE_HSM_PROGRESS_FINAL;
	pg->status = -ECANCELED;
	memcpy(pg->path, "dir/file", 9);
	ROUNDTRIP(hsm_progress, pg);
	pg->flags = 0; /* a status without FINAL */
	{
		struct wire_hsm_progress *d = malloc(sizeof(*d));
		ENCODE(&c, wire_hsm_progress_encode, pg);
		CHECK(!DECODE_OK(wire_hsm_progress_decode, c.buf, wire_cursor_pos(&c), d));
		wire_cursor_fini(&c);
		free(d);
	}
	free(pg);

	struct wire_hsm_import_req *im = calloc(1, sizeof(*im));
	sample_cred(&im->cred);
	sample_fid(&im->parent, 2);
	memcpy(im->name, "weights.bin", 12);
	im->mode = 0640;
	im->uid = 1234;
	im->gid = 4321;
	im->size = 300000;
	im->mtime.sec = 1612325106;
	im->archive_id = 2;
	memcpy(im->path, "models/v1/weights.bin", 22);
	ROUNDTRIP(hsm_import_req, im);
	im->archive_id = 0;
	{
		struct wire_hsm_import_req *d = malloc(sizeof(*d));
		ENCODE(&c, wire_hsm_import_req_encode, im);
		CHECK(!DECODE_OK(wire_hsm_import_req_decode, c.buf, wire_cursor_pos(&c), d));
		wire_cursor_fini(&c);
		free(d);
	}
	free(im);

	struct nacre_hsm_action *a = calloc(1, sizeof(*a)), *ad = malloc(sizeof(*a));
	a->cookie = 42;
	a->action = NACRE_HSMA_RESTORE;
	a->status = NACRE_HAS_STARTED;
	sample_fid(&a->fid, 11);
	a->archive_id = 1;
	a->bytes_done = 100;
	a->bytes_total = 200;
	a->ctime.sec = 1;
	a->mtime.sec = 2;
	memcpy(a->path, "x/y", 4);
	ENCODE(&c, wire_hsm_action_put, a);
	CHECK(wire_cursor_pos(&c) >= WIRE_HSM_ACTION_MIN);
	CHECK(DECODE_OK(wire_hsm_action_get, c.buf, wire_cursor_pos(&c), ad));
	CHECK(memcmp(a, ad, sizeof(*a)) == 0);
	wire_cursor_fini(&c);
	a->status = 9;
	ENCODE(&c, wire_hsm_action_put, a);
	CHECK(!DECODE_OK(wire_hsm_action_get, c.buf, wire_cursor_pos(&c), ad));
	wire_cursor_fini(&c);
	free(a);
	free(ad);
}

static void test_lock(void)
{
	/* golden: root's write lock on bytes [4096, EOF) of oid 1, owner 0x42, pid 1234 */
	static const uint8_t golden[] = {
		0x00, 0x00, 0x00, 0x00,                         /* uid 0 */
		0x00, 0x00, 0x00, 0x00,                         /* gid 0 */
		0x00, 0x00, 0x00, 0x00,                         /* ngroups 0 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq 0x200000400 */
		0x01, 0x00, 0x00, 0x00,                         /* oid 1 */
		0x00, 0x00, 0x00, 0x00,                         /* ver 0 */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* client */
		0x42, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* owner */
		0xd2, 0x04, 0x00, 0x00,                         /* pid 1234 */
		0x00,                                           /* kind POSIX */
		0x02,                                           /* type WRLCK */
		0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* start 4096 */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* end EOF */
	};
	struct wire_lock_req m, d;
	struct wire_cursor c;

	memset(&m, 0, sizeof(m));
	sample_fid(&m.fid, 1);
	m.client = 0x1122334455667788ull;
	m.owner = 0x42;
	m.pid = 1234;
	m.kind = WIRE_LOCK_POSIX;
	m.type = WIRE_LK_WRLCK;
	m.start = 4096;
	m.end = WIRE_LOCK_EOF;
	ENCODE(&c, wire_lock_req_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_lock_req_decode, golden, sizeof(golden), &d));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
	sample_cred(&m.cred);
	m.kind = WIRE_LOCK_FLOCK;
	m.type = WIRE_LK_UNLCK;
	ROUNDTRIP(lock_req, &m);
	/* rejected: an unknown kind or type, start past end */
	for (int k = 0; k < 3; k++) {
		struct wire_lock_req b = m;
		if (k == 0)
			b.kind = 2;
		else if (k == 1)
			b.type = 3;
		else
			b.start = 10, b.end = 9;
		ENCODE(&c, wire_lock_req_encode, &b);
		CHECK(!DECODE_OK(wire_lock_req_decode, c.buf, wire_cursor_pos(&c), &d));
		wire_cursor_fini(&c);
	}
}

/* ---- OST_DESTROY_BATCH ---- */

/* Decodes a request and its objects from buf; 1 if everything decoded and was consumed. */
static int destroy_req_decode(const uint8_t *buf, size_t len, struct wire_ost_destroy_req *m,
			      struct wire_ost_obj *objs)
{
	struct wire_cursor c;
	wire_cursor_init_read(&c, buf, len);
	wire_ost_destroy_req_decode(&c, m);
	for (uint32_t i = 0; i < m->count && wire_cursor_ok(&c); i++)
		wire_ost_obj_get(&c, &objs[i]);
	return wire_cursor_ok(&c) && wire_cursor_left(&c) == 0;
}

static void test_destroy_batch(void)
{
	/* golden: two objects on OST 3: oid 42 stripe 1 gen 7, oid 43 stripe 0 gen 0 */
	static const uint8_t golden[] = {
		0x03, 0x00, 0x00, 0x00,                         /* ost_idx 3 */
		0x00, 0x00, 0x00, 0x00,                         /* flags 0 */
		0x02, 0x00, 0x00, 0x00,                         /* count 2 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq */
		0x2a, 0x00, 0x00, 0x00,                         /* oid 42 */
		0x00, 0x00, 0x00, 0x00,                         /* ver */
		0x01, 0x00, 0x00, 0x00,                         /* stripe_idx 1 */
		0x07, 0x00, 0x00, 0x00,                         /* layout_gen 7 */
		0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq */
		0x2b, 0x00, 0x00, 0x00,                         /* oid 43 */
		0x00, 0x00, 0x00, 0x00,                         /* ver */
		0x00, 0x00, 0x00, 0x00,                         /* stripe_idx 0 */
		0x00, 0x00, 0x00, 0x00,                         /* layout_gen 0 */
	};
	struct wire_ost_destroy_req m = {.ost_idx = 3, .flags = 0, .count = 2}, d;
	struct wire_ost_obj *objs = calloc(WIRE_OST_DESTROY_MAX + 1, sizeof(*objs));
	struct wire_ost_obj *dobjs = calloc(WIRE_OST_DESTROY_MAX + 1, sizeof(*dobjs));
	struct wire_cursor c;

	CHECK(objs && dobjs);
	if (!objs || !dobjs)
		goto out_free;
	sample_fid(&objs[0].fid, 42);
	objs[0].stripe_idx = 1;
	objs[0].layout_gen = 7;
	sample_fid(&objs[1].fid, 43);
	ENCODE(&c, wire_ost_destroy_req_encode, &m);
	wire_ost_obj_put(&c, &objs[0]);
	wire_ost_obj_put(&c, &objs[1]);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(destroy_req_decode(golden, sizeof(golden), &d, dobjs));
	CHECK(memcmp(&m, &d, sizeof(m)) == 0);
	CHECK(memcmp(objs, dobjs, 2 * sizeof(*objs)) == 0);
	/* every shorter prefix, and a trailing byte, are refused */
	for (size_t k = 0; k < sizeof(golden); k++)
		CHECK(!destroy_req_decode(golden, k, &d, dobjs));
	{
		uint8_t longer[sizeof(golden) + 1];
		memcpy(longer, golden, sizeof(golden));
		longer[sizeof(golden)] = 0;
		CHECK(!destroy_req_decode(longer, sizeof(longer), &d, dobjs));
	}
	/* bad header fields and a bad stripe index */
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[4] = 2; /* flags: an unknown bit */
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
		memcpy(bad, golden, sizeof(bad));
		bad[2] = 1; /* ost_idx 65539 */
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
		memcpy(bad, golden, sizeof(bad));
		bad[8] = 0; /* count 0 */
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
		memcpy(bad, golden, sizeof(bad));
		bad[8] = 3; /* count above the objects present */
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
		memcpy(bad, golden, sizeof(bad));
		bad[8] = 1; /* count below them */
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
		memcpy(bad, golden, sizeof(bad));
		bad[8] = 0xff; /* a huge count */
		bad[9] = 0xff;
		bad[10] = 0xff;
		bad[11] = 0xff;
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
		memcpy(bad, golden, sizeof(bad));
		bad[12 + 16] = NACRE_MAX_STRIPES; /* stripe_idx of the first object */
		CHECK(!destroy_req_decode(bad, sizeof(bad), &d, dobjs));
	}

	/* with a list capability after the header */
	{
		static const uint8_t gcap[] = {
			0x03, 0x00, 0x00, 0x00, /* ost_idx 3 */
			0x01, 0x00, 0x00, 0x00, /* flags CAP */
			0x01, 0x00, 0x00, 0x00, /* count 1 */
			G_CAP,
			0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq */
			0x2a, 0x00, 0x00, 0x00,                         /* oid 42 */
			0x00, 0x00, 0x00, 0x00,                         /* ver */
			0x01, 0x00, 0x00, 0x00,                         /* stripe_idx 1 */
			0x07, 0x00, 0x00, 0x00,                         /* layout_gen 7 */
		};
		struct wire_ost_destroy_req mc = {.ost_idx = 3, .flags = WIRE_OST_DESTROY_CAP,
						  .count = 1};
		sample_cap(&mc.cap);
		ENCODE(&c, wire_ost_destroy_req_encode, &mc);
		wire_ost_obj_put(&c, &objs[0]);
		CHECK_EQ(wire_cursor_pos(&c), sizeof(gcap));
		CHECK_MEM(c.buf, gcap, sizeof(gcap));
		wire_cursor_fini(&c);
		CHECK(destroy_req_decode(gcap, sizeof(gcap), &d, dobjs));
		CHECK(memcmp(&mc, &d, sizeof(mc)) == 0);
		CHECK(memcmp(objs, dobjs, sizeof(*objs)) == 0);
		for (size_t k = 0; k < sizeof(gcap); k++)
			CHECK(!destroy_req_decode(gcap, k, &d, dobjs));
	}

	/* round trip at the limit; one more object than the limit is refused even though the
	 * bytes are all there */
	for (uint32_t i = 0; i <= WIRE_OST_DESTROY_MAX; i++) {
		sample_fid(&objs[i].fid, 1000 + i);
		objs[i].stripe_idx = i % NACRE_MAX_STRIPES;
		objs[i].layout_gen = i / 3;
	}
	for (uint32_t count = WIRE_OST_DESTROY_MAX; count <= WIRE_OST_DESTROY_MAX + 1; count++) {
		m.ost_idx = 65535;
		m.count = count;
		ENCODE(&c, wire_ost_destroy_req_encode, &m);
		for (uint32_t i = 0; i < count; i++)
			wire_ost_obj_put(&c, &objs[i]);
		CHECK(wire_cursor_ok(&c));
		CHECK_EQ(wire_cursor_pos(&c), 12 + (size_t)count * WIRE_OST_OBJ_LEN);
		int ok = destroy_req_decode(c.buf, wire_cursor_pos(&c), &d, dobjs);
		if (count <= WIRE_OST_DESTROY_MAX) {
			CHECK(ok);
			CHECK(memcmp(&m, &d, sizeof(m)) == 0);
			CHECK(memcmp(objs, dobjs, count * sizeof(*objs)) == 0);
		} else {
			CHECK(!ok);
		}
		wire_cursor_fini(&c);
	}
out_free:
	free(objs);
	free(dobjs);
}

int main(void)
{
	test_opcodes();
	test_hdr();
	test_golden_fid_req();
	test_golden_create_req();
	test_golden_create_req_fid();
	test_golden_ost_io_req();
	test_golden_ost_space();
	test_golden_close_blocks();
	test_golden_target_reg();
	test_roundtrips();
	test_groups();
	test_reject_names();
	test_reject_fields();
	test_hsm();
	test_lock();
	test_destroy_batch();
	return unit_done();
}
