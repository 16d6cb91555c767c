/* test_fuse_upgrade.c - the state blob nacre-mount --upgrade hands over (src/fuse/
 * upgrade_codec.h): its bytes are version 1's, byte for byte (a fixed blob, and the wire
 * protocol's field groups it was first written with), a blob decodes to what was encoded,
 * and a truncated or garbled one is refused with an error, never read past its end. */
#include <errno.h>
#include <stdlib.h>

#include "fuse/upgrade.h"
#include "proto/cursor.h"
#include "proto/wire.h"
#include "unit.h"

#define U32(x) (uint8_t)(x), (uint8_t)((x) >> 8), (uint8_t)((x) >> 16), (uint8_t)((x) >> 24)
#define U64(x) U32((uint64_t)(x) & 0xffffffffu), U32((uint64_t)(x) >> 32)

/* ---- the codec */

static void test_codec(void)
{
	uint8_t buf[6];
	struct upg_writer w;
	struct upg_reader r;
	static const uint8_t le[] = {0x78, 0x56, 0x34, 0x12, 0xab, 0};

	upg_writer_init(&w, buf, sizeof(buf));
	upg_put_u32(&w, 0x12345678);
	upg_put_u8(&w, 0xab);
	CHECK_EQ(upg_writer_err(&w), 0);
	CHECK_EQ(upg_writer_len(&w), 5);
	CHECK_MEM(buf, le, 5);
	upg_put_u32(&w, 1); /* 1 byte left */
	CHECK_EQ(upg_writer_err(&w), -E2BIG);
	upg_put_u8(&w, 1); /* sticky: fits, but is dropped */
	CHECK_EQ(upg_writer_len(&w), 5);

	upg_reader_init(&r, le, 5);
	CHECK_EQ(upg_get_u32(&r), 0x12345678);
	CHECK_EQ(upg_reader_left(&r), 1);
	CHECK_EQ(upg_get_u64(&r), 0); /* short: zeroes and failed */
	CHECK_EQ(upg_reader_err(&r), -EPROTO);
	CHECK_EQ(upg_get_u8(&r), 0); /* sticky: a byte is left, but not read */

	/* strings: NULL as "", a NUL inside refused, a length beyond the bytes refused */
	upg_writer_init_dyn(&w, 64);
	upg_put_str(&w, NULL);
	upg_put_str(&w, "ab");
	CHECK_EQ(upg_writer_err(&w), 0);
	upg_reader_init(&r, upg_writer_data(&w), upg_writer_len(&w));
	char *s1 = upg_get_str_dup(&r), *s2 = upg_get_str_dup(&r);
	CHECK_STR(s1, "");
	CHECK_STR(s2, "ab");
	CHECK_EQ(upg_reader_left(&r), 0);
	free(s1);
	free(s2);
	upg_writer_fini(&w);
	static const uint8_t nul[] = {U32(3), 'a', 0, 'b'}, longer[] = {U32(4), 'a', 'b', 'c'};
	upg_reader_init(&r, nul, sizeof(nul));
	CHECK(upg_get_str_dup(&r) == NULL);
	CHECK_EQ(upg_reader_err(&r), -EPROTO);
	upg_reader_init(&r, longer, sizeof(longer));
	CHECK(upg_get_str_dup(&r) == NULL);
	CHECK_EQ(upg_reader_err(&r), -EPROTO);

	/* a growing writer grows up to its limit, not past it */
	upg_writer_init_dyn(&w, 1000);
	for (int i = 0; i < 125; i++)
		upg_put_u64(&w, (uint64_t)i);
	CHECK_EQ(upg_writer_err(&w), 0);
	CHECK_EQ(upg_writer_len(&w), 1000);
	upg_put_u8(&w, 0);
	CHECK_EQ(upg_writer_err(&w), -E2BIG);
	upg_writer_fini(&w);
	upg_writer_fini(&w); /* twice is fine */
}

/* ---- a blob */

static const struct fz_init_params init = {7, 31, 131072, 0x1234, 0x0234};

static struct upg_inode inode_rec(uint32_t oid)
{
	struct upg_inode in = {
		.ino = (0x400ULL << 32) | oid,
		.fid = {0x200000400ULL, oid, 0},
		.parent = {0x200000007ULL, 1, 0},
		.nlookup = 3,
		.cache_valid = 1,
		.cache_size = 1ULL << 33,
		.cache_mtime = {1700000000, 999999999},
		.cache_ctime = {-5, 1},
	};
	return in;
}

/* A file opened by a caller with every part of a cred: groups, a token, a flag, a job. */
static struct upg_handle file_rec(void)
{
	struct upg_handle h = {.fh = 7, .kind = FZ_H_FILE, .ino = (0x400ULL << 32) | 2,
			       .flags = 02 | 02000};

	h.cred.uid = 1000;
	h.cred.gid = 100;
	h.cred.ngroups = NACRE_CRED_GROUPS;
	for (uint32_t i = 0; i < h.cred.ngroups; i++)
		h.cred.groups[i] = 2000 + i;
	h.cred.groups_token = 0x0123456789abcdefULL;
	h.cred.flags = NACRE_CRED_PROTECTED_HARDLINKS;
	strcpy(h.cred.jobid, "dd.1000");
	return h;
}

static void build(struct upg_writer *w)
{
	struct upg_inode in1 = inode_rec(1), in2 = inode_rec(2);
	struct upg_handle dir = {.fh = 3, .kind = FZ_H_DIR}, file = file_rec();
	struct upg_owner own = {{0x200000400ULL, 2, 0}, 0xfeedULL};

	upg_writer_init_dyn(w, UPG_BLOB_MAX);
	upg_head_put(w, &init, "mds1:/fs", "flock,debug", "/mnt/nacre", 0x1122334455667788ULL);
	upg_put_u64(w, 2);
	upg_inode_put(w, &in1);
	upg_inode_put(w, &in2);
	upg_put_u64(w, 2);
	upg_handle_put(w, &dir);
	upg_handle_put(w, &file);
	upg_put_u64(w, 1);
	upg_owner_put(w, &own);
}

/* The same blob through the wire protocol's cursor and field groups, as nacre-mount wrote
 * it before it had a codec of its own. */
static void build_with_wire(struct wire_cursor *c)
{
	struct upg_inode ins[2] = {inode_rec(1), inode_rec(2)};
	struct upg_handle file = file_rec();
	struct nacre_cred none;
	struct nacre_fid owner_fid = {0x200000400ULL, 2, 0};

	memset(&none, 0, sizeof(none));
	wire_cursor_init_dyn(c, UPG_BLOB_MAX);
	wire_put_u32(c, UPG_MAGIC);
	wire_put_u32(c, UPG_VERSION);
	wire_put_u32(c, init.proto_major);
	wire_put_u32(c, init.proto_minor);
	wire_put_u32(c, init.max_readahead);
	wire_put_u32(c, init.capable);
	wire_put_u32(c, init.want);
	wire_lstr_put(c, "mds1:/fs");
	wire_lstr_put(c, "flock,debug");
	wire_lstr_put(c, "/mnt/nacre");
	wire_put_u64(c, 0x1122334455667788ULL);
	wire_put_u64(c, 2);
	for (int i = 0; i < 2; i++) {
		wire_put_u64(c, ins[i].ino);
		wire_fid_put(c, &ins[i].fid);
		wire_fid_put(c, &ins[i].parent);
		wire_put_u64(c, ins[i].nlookup);
		wire_put_u32(c, ins[i].cache_valid);
		wire_put_u64(c, ins[i].cache_size);
		wire_time_put(c, &ins[i].cache_mtime);
		wire_time_put(c, &ins[i].cache_ctime);
	}
	wire_put_u64(c, 2);
	wire_put_u64(c, 3);
	wire_put_u32(c, FZ_H_DIR);
	wire_put_u64(c, 0);
	wire_put_u32(c, 0);
	wire_cred_put(c, &none);
	wire_put_u64(c, file.fh);
	wire_put_u32(c, file.kind);
	wire_put_u64(c, file.ino);
	wire_put_u32(c, file.flags);
	wire_cred_put(c, &file.cred);
	wire_put_u64(c, 1);
	wire_fid_put(c, &owner_fid);
	wire_put_u64(c, 0xfeedULL);
}

/* Decodes a whole blob as the taking-over process does (upgrade_take.c), checking that it
 * is build()'s. 0, or the error that refused it. */
static int decode_all(const uint8_t *buf, size_t len, int check)
{
	struct upg_reader r;
	struct upg_head h;
	uint64_t n, i;
	int rc;

	upg_reader_init(&r, buf, len);
	rc = upg_head_decode(&r, &h);
	if (rc == 0 && check) {
		CHECK_EQ(h.init.proto_major, 7);
		CHECK_EQ(h.init.proto_minor, 31);
		CHECK_EQ(h.init.max_readahead, 131072);
		CHECK_EQ(h.init.capable, 0x1234);
		CHECK_EQ(h.init.want, 0x0234);
		CHECK_STR(h.spec, "mds1:/fs");
		CHECK_STR(h.opts, "flock,debug");
		CHECK_STR(h.mnt, "/mnt/nacre");
		CHECK(h.lock_client == 0x1122334455667788ULL);
	}
	upg_head_fini(&h);
	if (rc < 0)
		return rc;
	n = upg_inodes_count(&r);
	if (check)
		CHECK_EQ(n, 2);
	for (i = 0; i < n && upg_reader_ok(&r); i++) {
		struct upg_inode got, want = inode_rec((uint32_t)i + 1);

		upg_inode_get(&r, &got);
		if (check && upg_reader_ok(&r)) {
			CHECK(got.ino == want.ino && got.nlookup == want.nlookup);
			CHECK(nacre_fid_eq(&got.fid, &want.fid));
			CHECK(nacre_fid_eq(&got.parent, &want.parent));
			CHECK(got.cache_valid == 1 && got.cache_size == want.cache_size);
			CHECK(got.cache_mtime.sec == want.cache_mtime.sec &&
			      got.cache_mtime.nsec == want.cache_mtime.nsec);
			CHECK(got.cache_ctime.sec == -5 && got.cache_ctime.nsec == 1);
		}
	}
	n = upg_handles_count(&r);
	if (check)
		CHECK_EQ(n, 2);
	for (i = 0; i < n && upg_reader_ok(&r); i++) {
		struct upg_handle got, want = file_rec();

		upg_handle_get(&r, &got);
		if (!check || !upg_reader_ok(&r))
			continue;
		if (i == 0) {
			CHECK(got.fh == 3 && got.kind == FZ_H_DIR && got.ino == 0 && got.flags == 0);
			CHECK(got.cred.uid == 0 && got.cred.ngroups == 0 && !got.cred.jobid[0]);
			continue;
		}
		CHECK(got.fh == want.fh && got.kind == want.kind && got.ino == want.ino);
		CHECK_EQ(got.flags, want.flags);
		CHECK(got.cred.uid == 1000 && got.cred.gid == 100);
		CHECK_EQ(got.cred.ngroups, NACRE_CRED_GROUPS);
		CHECK_MEM(got.cred.groups, want.cred.groups, sizeof(want.cred.groups));
		CHECK(got.cred.groups_token == want.cred.groups_token);
		CHECK_EQ(got.cred.flags, NACRE_CRED_PROTECTED_HARDLINKS);
		CHECK_STR(got.cred.jobid, "dd.1000");
	}
	n = upg_owners_count(&r);
	if (check)
		CHECK_EQ(n, 1);
	for (i = 0; i < n && upg_reader_ok(&r); i++) {
		struct upg_owner got;

		upg_owner_get(&r, &got);
		if (check && upg_reader_ok(&r))
			CHECK(got.fid.oid == 2 && got.owner == 0xfeed);
	}
	if (!upg_reader_ok(&r))
		return upg_reader_err(&r);
	return upg_reader_left(&r) ? -EPROTO : 0;
}

static void test_same_bytes_as_wire(void)
{
	struct upg_writer w;
	struct wire_cursor c;

	build(&w);
	build_with_wire(&c);
	CHECK_EQ(upg_writer_err(&w), 0);
	CHECK_EQ(c.err, 0);
	CHECK_EQ(upg_writer_len(&w), wire_cursor_pos(&c));
	if (upg_writer_len(&w) == wire_cursor_pos(&c))
		CHECK_MEM(upg_writer_data(&w), c.buf, upg_writer_len(&w));
	upg_writer_fini(&w);
	wire_cursor_fini(&c);
}

/* Version 1's bytes, written out: a blob of any build of nacre-mount must read the same. */
static void test_fixed_bytes(void)
{
	static const uint8_t v1[] = {
		U32(0x4e555047), U32(1),                       /* magic, version */
		U32(7), U32(28), U32(65536), U32(3), U32(2),   /* INIT parameters */
		U32(3), 'h', ':', 'f', U32(0), U32(2), '/', 'm', /* spec, opts, mount point */
		U64(0x42),                                     /* lock client */
		U64(1),                                        /* inodes */
		U64(1),                                        /* ino */
		U64(0x200000007ULL), U32(1), U32(0),           /* fid */
		U64(1), U32(0), U32(0),                        /* parent */
		U64(9), U32(0), U64(4096),                     /* nlookup, cache valid, size */
		U64(-1), U32(5), U64(12), U32(0),              /* cache mtime, ctime */
		U64(1),                                        /* handles */
		U64(9), U32(1), U64(1), U32(0),                /* fh, FZ_H_FILE, ino, flags */
		U32(1000), U32(100), U32(1 | 0x20000000), U32(10), /* uid, gid, groups, job */
		2, 'j', '1',
		U64(1),                                        /* owners */
		U64(0x200000007ULL), U32(1), U32(0), U64(77),
	};

	struct fz_init_params ip = {7, 28, 65536, 3, 2};
	struct upg_inode in = {.ino = 1, .fid = {0x200000007ULL, 1, 0},
			       .parent = {1, 0, 0}, .nlookup = 9, .cache_valid = 0,
			       .cache_size = 4096, .cache_mtime = {-1, 5},
			       .cache_ctime = {12, 0}};
	struct upg_handle h = {.fh = 9, .kind = FZ_H_FILE, .ino = 1, .flags = 0};
	struct upg_owner own = {{0x200000007ULL, 1, 0}, 77};
	struct upg_writer w;

	h.cred.uid = 1000;
	h.cred.gid = 100;
	h.cred.ngroups = 1;
	h.cred.groups[0] = 10;
	strcpy(h.cred.jobid, "j1");
	upg_writer_init_dyn(&w, UPG_BLOB_MAX);
	upg_head_put(&w, &ip, "h:f", NULL, "/m", 0x42);
	upg_put_u64(&w, 1);
	upg_inode_put(&w, &in);
	upg_put_u64(&w, 1);
	upg_handle_put(&w, &h);
	upg_put_u64(&w, 1);
	upg_owner_put(&w, &own);
	CHECK_EQ(upg_writer_err(&w), 0);
	CHECK_EQ(upg_writer_len(&w), sizeof(v1));
	if (upg_writer_len(&w) == sizeof(v1))
		CHECK_MEM(upg_writer_data(&w), v1, sizeof(v1));
	upg_writer_fini(&w);
}

static void test_round_trip_and_truncation(void)
{
	struct upg_writer w;

	build(&w);
	CHECK_EQ(decode_all(upg_writer_data(&w), upg_writer_len(&w), 1), 0);
	/* every shorter blob is refused: the first 8 bytes as another format, the rest as
	 * short (or a count that cannot fit) */
	int refused = 0;
	for (size_t len = 0; len < upg_writer_len(&w); len++) {
		int rc = decode_all(upg_writer_data(&w), len, 0);
		refused += rc == (len < 8 ? -EPROTONOSUPPORT : -EPROTO);
	}
	CHECK_EQ(refused, upg_writer_len(&w));
	upg_writer_fini(&w);
}

/* Overwrites 4 bytes at off of a copy of blob and decodes it. */
static int decode_patched(const struct upg_writer *blob, size_t off, uint32_t v)
{
	uint8_t *b = malloc(upg_writer_len(blob));
	int rc;

	memcpy(b, upg_writer_data(blob), upg_writer_len(blob));
	for (int i = 0; i < 4; i++)
		b[off + (size_t)i] = (uint8_t)(v >> (8 * i));
	rc = decode_all(b, upg_writer_len(blob), 0);
	free(b);
	return rc;
}

static void test_garbled(void)
{
	struct upg_writer w;
	/* offsets in build()'s blob */
	size_t head = 8 + 5 * 4 + (4 + 8) + (4 + 11) + (4 + 10) + 8;
	size_t inode1 = head + 8, inode_len = 8 + 16 + 16 + 8 + 4 + 8 + 12 + 12;
	size_t handles = inode1 + 2 * inode_len, file = handles + 8 + (8 + 4 + 8 + 4 + 12);
	size_t file_cred = file + 8 + 4 + 8 + 4;
	size_t token = file_cred + 12 + 4 * NACRE_CRED_GROUPS;

	build(&w);
	CHECK_EQ(decode_patched(&w, 0, 0x4e555048), -EPROTONOSUPPORT); /* magic */
	CHECK_EQ(decode_patched(&w, 4, 2), -EPROTONOSUPPORT);          /* version */
	CHECK_EQ(decode_patched(&w, 8 + 5 * 4, 1000), -EPROTO);          /* spec's length */
	CHECK_EQ(decode_patched(&w, 8 + 5 * 4 + 4, 0x41410041), -EPROTO); /* a NUL in spec */
	CHECK_EQ(decode_patched(&w, head, 1000), -EPROTO);               /* inode count */
	CHECK_EQ(decode_patched(&w, head + 4, 1), -EPROTO);              /* count's high half */
	CHECK_EQ(decode_patched(&w, inode1 + 68, 1000000000), -EPROTO);  /* mtime's nsec */
	CHECK_EQ(decode_patched(&w, handles, 3), -EPROTO);               /* handle count */
	CHECK_EQ(decode_patched(&w, file_cred + 8, NACRE_CRED_GROUPS + 1), -EPROTO); /* ngroups */
	{
		/* a zero token, the job id's length and bytes */
		uint8_t *b = malloc(upg_writer_len(&w));

		memcpy(b, upg_writer_data(&w), upg_writer_len(&w));
		memset(b + token, 0, 8);
		CHECK_EQ(decode_all(b, upg_writer_len(&w), 0), -EPROTO);
		memcpy(b, upg_writer_data(&w), upg_writer_len(&w));
		b[token + 8] = NACRE_JOBID_MAX + 1;
		CHECK_EQ(decode_all(b, upg_writer_len(&w), 0), -EPROTO);
		memcpy(b, upg_writer_data(&w), upg_writer_len(&w));
		b[token + 8 + 3] = ' ';
		CHECK_EQ(decode_all(b, upg_writer_len(&w), 0), -EPROTO);
		free(b);
	}
	{
		/* a byte after the last table */
		uint8_t *b = malloc(upg_writer_len(&w) + 1);

		memcpy(b, upg_writer_data(&w), upg_writer_len(&w));
		b[upg_writer_len(&w)] = 0;
		CHECK_EQ(decode_all(b, upg_writer_len(&w) + 1, 0), -EPROTO);
		free(b);
	}
	upg_writer_fini(&w);
}

/* A cred the blob cannot carry fails the writer, as it failed the wire cursor. */
static void test_bad_cred(void)
{
	struct upg_writer w;
	struct upg_handle h = file_rec();

	upg_writer_init_dyn(&w, UPG_BLOB_MAX);
	h.cred.ngroups = NACRE_CRED_GROUPS + 1;
	upg_handle_put(&w, &h);
	CHECK_EQ(upg_writer_err(&w), -EINVAL);
	upg_writer_fini(&w);
	upg_writer_init_dyn(&w, UPG_BLOB_MAX);
	h = file_rec();
	strcpy(h.cred.jobid, "a b");
	upg_handle_put(&w, &h);
	CHECK_EQ(upg_writer_err(&w), -EINVAL);
	upg_writer_fini(&w);
	upg_writer_init_dyn(&w, UPG_BLOB_MAX);
	h = file_rec();
	h.cred.flags |= 2;
	upg_handle_put(&w, &h);
	CHECK_EQ(upg_writer_err(&w), -EINVAL);
	upg_writer_fini(&w);
}

int main(void)
{
	test_codec();
	test_same_bytes_as_wire();
	test_fixed_bytes();
	test_round_trip_and_truncation();
	test_garbled();
	test_bad_cred();
	return unit_done();
}
