/* cursor.c - bounded little-endian cursor with a sticky error. */
#include "proto/cursor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CURSOR_DYN_START 256

void wire_cursor_init_read(struct wire_cursor *c, const void *buf, size_t len)
{
	memset(c, 0, sizeof(*c));
	/* The field is not const because write cursors share it; reads never write. */
	c->buf = (uint8_t *)(uintptr_t)buf;
	c->len = buf ? len : 0;
}

void wire_cursor_init_write(struct wire_cursor *c, void *buf, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->buf = buf;
	c->len = buf ? len : 0;
}

void wire_cursor_init_dyn(struct wire_cursor *c, size_t limit)
{
	memset(c, 0, sizeof(*c));
	c->limit = limit;
	c->owned = 1;
}

void wire_cursor_fini(struct wire_cursor *c)
{
	if (c->owned)
		free(c->buf);
	c->buf = NULL;
	c->len = 0;
	c->pos = 0;
	c->owned = 0;
}

void wire_cursor_fail(struct wire_cursor *c, int err)
{
	if (c->err == 0)
		c->err = err < 0 ? err : -EPROTO;
}

/* Makes room for n more bytes to write; 0 or fails the cursor. */
static int reserve(struct wire_cursor *c, size_t n)
{
	size_t need, cap;
	uint8_t *nb;

	if (c->err)
		return -1;
	if (n <= c->len - c->pos)
		return 0;
	if (!c->owned || n > c->limit || c->pos > c->limit - n) {
		wire_cursor_fail(c, -E2BIG);
		return -1;
	}
	need = c->pos + n;
	cap = c->len ? c->len : CURSOR_DYN_START;
	while (cap < need)
		cap = cap > c->limit / 2 ? c->limit : cap * 2;
	if (cap > c->limit)
		cap = c->limit;
	nb = realloc(c->buf, cap);
	if (!nb) {
		wire_cursor_fail(c, -ENOMEM);
		return -1;
	}
	c->buf = nb;
	c->len = cap;
	return 0;
}

/* Takes n bytes to read; NULL (and the cursor failed) if fewer remain. */
static const uint8_t *take(struct wire_cursor *c, size_t n)
{
	static const uint8_t empty[1];
	const uint8_t *p;

	if (c->err)
		return NULL;
	if (n > c->len - c->pos) {
		wire_cursor_fail(c, -EPROTO);
		return NULL;
	}
	if (!c->buf)
		return empty; /* a zero-length view of no buffer: valid, but not NULL + 0 */
	p = c->buf + c->pos;
	c->pos += n;
	return p;
}

void wire_put_u8(struct wire_cursor *c, uint8_t v)
{
	if (reserve(c, 1) == 0)
		c->buf[c->pos++] = v;
}

void wire_put_u16(struct wire_cursor *c, uint16_t v)
{
	if (reserve(c, 2) == 0) {
		c->buf[c->pos++] = (uint8_t)v;
		c->buf[c->pos++] = (uint8_t)(v >> 8);
	}
}

void wire_put_u32(struct wire_cursor *c, uint32_t v)
{
	if (reserve(c, 4) == 0) {
		for (int i = 0; i < 4; i++)
			c->buf[c->pos++] = (uint8_t)(v >> (8 * i));
	}
}

void wire_put_u64(struct wire_cursor *c, uint64_t v)
{
	if (reserve(c, 8) == 0) {
		for (int i = 0; i < 8; i++)
			c->buf[c->pos++] = (uint8_t)(v >> (8 * i));
	}
}

void wire_put_i32(struct wire_cursor *c, int32_t v)
{
	wire_put_u32(c, (uint32_t)v);
}

void wire_put_i64(struct wire_cursor *c, int64_t v)
{
	wire_put_u64(c, (uint64_t)v);
}

void wire_put_bytes(struct wire_cursor *c, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (reserve(c, n) == 0) {
		memcpy(c->buf + c->pos, p, n);
		c->pos += n;
	}
}

void wire_put_blob(struct wire_cursor *c, const void *p, uint32_t n)
{
	wire_put_u32(c, n);
	wire_put_bytes(c, p, n);
}

void wire_patch_u32(struct wire_cursor *c, size_t pos, uint32_t v)
{
	if (c->err)
		return;
	/* Only bytes already written may be patched. */
	if (pos > c->pos || c->pos - pos < 4) {
		wire_cursor_fail(c, -EINVAL);
		return;
	}
	for (int i = 0; i < 4; i++)
		c->buf[pos + (size_t)i] = (uint8_t)(v >> (8 * i));
}

uint8_t wire_get_u8(struct wire_cursor *c)
{
	const uint8_t *p = take(c, 1);

	return p ? p[0] : 0;
}

uint16_t wire_get_u16(struct wire_cursor *c)
{
	const uint8_t *p = take(c, 2);

	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}

uint32_t wire_get_u32(struct wire_cursor *c)
{
	const uint8_t *p = take(c, 4);
	uint32_t v = 0;

	if (p) {
		for (int i = 3; i >= 0; i--)
			v = v << 8 | p[i];
	}
	return v;
}

uint64_t wire_get_u64(struct wire_cursor *c)
{
	const uint8_t *p = take(c, 8);
	uint64_t v = 0;

	if (p) {
		for (int i = 7; i >= 0; i--)
			v = v << 8 | p[i];
	}
	return v;
}

int32_t wire_get_i32(struct wire_cursor *c)
{
	return (int32_t)wire_get_u32(c);
}

int64_t wire_get_i64(struct wire_cursor *c)
{
	return (int64_t)wire_get_u64(c);
}

void wire_get_bytes(struct wire_cursor *c, void *p, size_t n)
{
	const uint8_t *src;

	if (n == 0)
		return;
	src = take(c, n);
	if (src)
		memcpy(p, src, n);
	else
		memset(p, 0, n);
}

const uint8_t *wire_get_view(struct wire_cursor *c, size_t n)
{
	return take(c, n);
}

const uint8_t *wire_get_blob(struct wire_cursor *c, uint32_t max, uint32_t *n)
{
	uint32_t len = wire_get_u32(c);
	const uint8_t *p;

	*n = 0;
	if (c->err)
		return NULL;
	if (len > max) {
		wire_cursor_fail(c, -EPROTO);
		return NULL;
	}
	p = take(c, len);
	if (p)
		*n = len;
	return p;
}
