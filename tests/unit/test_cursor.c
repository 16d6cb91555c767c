/* test_cursor.c - the bounded cursor: byte order, sticky errors, growth, views. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/cursor.h"
#include "proto/wire.h"
#include "unit.h"

static void test_roundtrip_le(void)
{
	uint8_t buf[64];
	struct wire_cursor c;
	static const uint8_t expect[] = {
		0xab,                                           /* u8 */
		0x34, 0x12,                                     /* u16 */
		0x78, 0x56, 0x34, 0x12,                         /* u32 */
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* u64 */
		0xfe, 0xff, 0xff, 0xff,                         /* i32 -2 */
		0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* i64 -3 */
		'h',  'i',                                      /* bytes */
		0x03, 0x00, 0x00, 0x00, 'a',  'b',  'c',        /* blob */
	};

	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_u8(&c, 0xab);
	wire_put_u16(&c, 0x1234);
	wire_put_u32(&c, 0x12345678);
	wire_put_u64(&c, 0x0123456789abcdefull);
	wire_put_i32(&c, -2);
	wire_put_i64(&c, -3);
	wire_put_bytes(&c, "hi", 2);
	wire_put_blob(&c, "abc", 3);
	CHECK(wire_cursor_ok(&c));
	CHECK_EQ(wire_cursor_pos(&c), sizeof(expect));
	CHECK_MEM(buf, expect, sizeof(expect));

	wire_cursor_init_read(&c, buf, sizeof(expect));
	CHECK_EQ(wire_get_u8(&c), 0xab);
	CHECK_EQ(wire_get_u16(&c), 0x1234);
	CHECK_EQ(wire_get_u32(&c), 0x12345678);
	CHECK(wire_get_u64(&c) == 0x0123456789abcdefull);
	CHECK_EQ(wire_get_i32(&c), -2);
	CHECK_EQ(wire_get_i64(&c), -3);
	{
		char two[2];
		uint32_t n;
		const uint8_t *p;

		wire_get_bytes(&c, two, 2);
		CHECK(two[0] == 'h' && two[1] == 'i');
		p = wire_get_blob(&c, 16, &n);
		CHECK(p != NULL);
		CHECK_EQ(n, 3);
		CHECK(p && memcmp(p, "abc", 3) == 0);
	}
	CHECK(wire_cursor_ok(&c));
	CHECK_EQ(wire_cursor_left(&c), 0);
}

static void test_short_read_sticky(void)
{
	static const uint8_t in[] = {1, 2, 3};
	struct wire_cursor c;
	uint8_t out[4] = {9, 9, 9, 9};

	wire_cursor_init_read(&c, in, sizeof(in));
	CHECK_EQ(wire_get_u16(&c), 0x0201);
	CHECK_EQ(wire_get_u32(&c), 0); /* only one byte left */
	CHECK(!wire_cursor_ok(&c));
	CHECK_EQ(c.err, -EPROTO);
	/* Sticky: the byte still present is not handed out any more. */
	CHECK_EQ(wire_get_u8(&c), 0);
	CHECK_EQ(wire_get_u64(&c), 0);
	wire_get_bytes(&c, out, 4);
	CHECK(out[0] == 0 && out[3] == 0);
	CHECK(wire_get_view(&c, 0) == NULL);
	CHECK_EQ(wire_cursor_pos(&c), 2);
	/* First error wins. */
	wire_cursor_fail(&c, -EINVAL);
	CHECK_EQ(c.err, -EPROTO);
}

static void test_blob_limits(void)
{
	uint8_t buf[16];
	struct wire_cursor c;
	uint32_t n = 99;

	/* Declared length above max. */
	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_blob(&c, "abcdef", 6);
	wire_cursor_init_read(&c, buf, 10);
	CHECK(wire_get_blob(&c, 5, &n) == NULL);
	CHECK_EQ(n, 0);
	CHECK(!wire_cursor_ok(&c));

	/* Declared length above the bytes present. */
	wire_cursor_init_read(&c, buf, 8);
	n = 99;
	CHECK(wire_get_blob(&c, 100, &n) == NULL);
	CHECK_EQ(n, 0);
	CHECK(!wire_cursor_ok(&c));

	/* Length 0 is a valid, empty view. */
	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_blob(&c, NULL, 0);
	wire_cursor_init_read(&c, buf, 4);
	CHECK(wire_get_blob(&c, 0, &n) != NULL);
	CHECK_EQ(n, 0);
	CHECK(wire_cursor_ok(&c));

	/* Zero-length view of an empty read cursor. */
	wire_cursor_init_read(&c, NULL, 0);
	CHECK(wire_get_view(&c, 0) != NULL);
	CHECK(wire_cursor_ok(&c));
	CHECK(wire_get_view(&c, 1) == NULL);
	CHECK(!wire_cursor_ok(&c));
}

static void test_fixed_overflow(void)
{
	uint8_t buf[5];
	struct wire_cursor c;

	wire_cursor_init_write(&c, buf, sizeof(buf));
	wire_put_u32(&c, 1);
	CHECK(wire_cursor_ok(&c));
	wire_put_u16(&c, 2); /* one byte short */
	CHECK(!wire_cursor_ok(&c));
	CHECK_EQ(c.err, -E2BIG);
	CHECK_EQ(wire_cursor_pos(&c), 4);
	wire_put_u8(&c, 3); /* would fit, but the cursor is failed */
	CHECK_EQ(wire_cursor_pos(&c), 4);
	wire_cursor_fini(&c); /* not owned: must not free */
}

static void test_dyn_growth(void)
{
	struct wire_cursor c;
	uint8_t big[1000];

	memset(big, 0x5a, sizeof(big));
	wire_cursor_init_dyn(&c, 3000);
	for (int i = 0; i < 3; i++)
		wire_put_bytes(&c, big, sizeof(big));
	CHECK(wire_cursor_ok(&c));
	CHECK_EQ(wire_cursor_pos(&c), 3000);
	CHECK(c.buf != NULL && c.buf[2999] == 0x5a);
	wire_put_u8(&c, 1); /* over the limit */
	CHECK_EQ(c.err, -E2BIG);
	CHECK_EQ(wire_cursor_pos(&c), 3000);
	wire_cursor_fini(&c);
	CHECK(c.buf == NULL);
	wire_cursor_fini(&c); /* twice is fine */

	/* Growth in small steps keeps earlier bytes. */
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	for (uint32_t i = 0; i < 5000; i++)
		wire_put_u32(&c, i);
	CHECK(wire_cursor_ok(&c));
	{
		struct wire_cursor r;
		int bad = 0;

		wire_cursor_init_read(&r, c.buf, wire_cursor_pos(&c));
		for (uint32_t i = 0; i < 5000; i++)
			bad += wire_get_u32(&r) != i;
		CHECK_EQ(bad, 0);
		CHECK(wire_cursor_ok(&r));
	}
	wire_cursor_fini(&c);

	/* The limit is the caller's: larger than a body (nacre-mount's upgrade state). */
	wire_cursor_init_dyn(&c, 4 * (size_t)WIRE_BODY_MAX);
	while (wire_cursor_ok(&c) && wire_cursor_pos(&c) < 3 * (size_t)WIRE_BODY_MAX)
		wire_put_bytes(&c, big, sizeof(big));
	CHECK(wire_cursor_ok(&c));
	CHECK(c.buf != NULL && c.buf[wire_cursor_pos(&c) - 1] == 0x5a);
	wire_cursor_fini(&c);
}

static void test_patch(void)
{
	struct wire_cursor c;
	struct wire_cursor r;
	size_t at;

	wire_cursor_init_dyn(&c, 64);
	wire_put_u8(&c, 7);
	at = wire_cursor_pos(&c);
	wire_put_u32(&c, 0);
	wire_put_u8(&c, 8);
	wire_patch_u32(&c, at, 0xdeadbeef);
	CHECK(wire_cursor_ok(&c));
	wire_cursor_init_read(&r, c.buf, wire_cursor_pos(&c));
	CHECK_EQ(wire_get_u8(&r), 7);
	CHECK_EQ(wire_get_u32(&r), 0xdeadbeef);
	CHECK_EQ(wire_get_u8(&r), 8);
	/* Patching past what was written is refused. */
	wire_patch_u32(&c, at + 2, 1);
	CHECK(!wire_cursor_ok(&c));
	wire_cursor_fini(&c);
}

int main(void)
{
	test_roundtrip_le();
	test_short_read_sticky();
	test_blob_limits();
	test_fixed_overflow();
	test_dyn_growth();
	test_patch();
	return unit_done();
}
