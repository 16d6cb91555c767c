/* upgrade_codec.c - the bounded writer and reader of an upgrade's messages and state blob
 * (upgrade_codec.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/upgrade_codec.h"

#define DYN_START 256 /* a growing writer's first buffer */

void upg_writer_init(struct upg_writer *w, void *buf, size_t len)
{
	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->len = buf ? len : 0;
}

void upg_writer_init_dyn(struct upg_writer *w, size_t limit)
{
	memset(w, 0, sizeof(*w));
	w->limit = limit;
	w->owned = 1;
}

void upg_writer_fini(struct upg_writer *w)
{
	if (w->owned)
		free(w->buf);
	w->buf = NULL;
	w->len = 0;
	w->pos = 0;
	w->owned = 0;
}

void upg_writer_fail(struct upg_writer *w, int err)
{
	if (w->err == 0)
		w->err = err < 0 ? err : -EINVAL;
}

/* Makes room for n more bytes: 0, or -1 with the writer failed. */
static int reserve(struct upg_writer *w, size_t n)
{
	size_t cap;
	uint8_t *nb;

	if (w->err)
		return -1;
	if (n <= w->len - w->pos)
		return 0;
	if (!w->owned || n > w->limit || w->pos > w->limit - n) {
		upg_writer_fail(w, -E2BIG);
		return -1;
	}
	cap = w->len ? w->len : DYN_START;
	while (cap < w->pos + n)
		cap = cap > w->limit / 2 ? w->limit : cap * 2;
	if (cap > w->limit)
		cap = w->limit;
	nb = realloc(w->buf, cap);
	if (!nb) {
		upg_writer_fail(w, -ENOMEM);
		return -1;
	}
	w->buf = nb;
	w->len = cap;
	return 0;
}

static void put_le(struct upg_writer *w, uint64_t v, int width)
{
	if (reserve(w, (size_t)width) < 0)
		return;
	for (int i = 0; i < width; i++)
		w->buf[w->pos++] = (uint8_t)(v >> (8 * i));
}

void upg_put_u8(struct upg_writer *w, uint8_t v)
{
	put_le(w, v, 1);
}

void upg_put_u32(struct upg_writer *w, uint32_t v)
{
	put_le(w, v, 4);
}

void upg_put_u64(struct upg_writer *w, uint64_t v)
{
	put_le(w, v, 8);
}

void upg_put_i64(struct upg_writer *w, int64_t v)
{
	put_le(w, (uint64_t)v, 8);
}

void upg_put_bytes(struct upg_writer *w, const void *p, size_t n)
{
	if (n == 0 || reserve(w, n) < 0)
		return;
	memcpy(w->buf + w->pos, p, n);
	w->pos += n;
}

void upg_put_str(struct upg_writer *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > UINT32_MAX) {
		upg_writer_fail(w, -E2BIG);
		return;
	}
	upg_put_u32(w, (uint32_t)n);
	upg_put_bytes(w, s, n);
}

void upg_reader_init(struct upg_reader *r, const void *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->len = buf ? len : 0;
}

void upg_reader_fail(struct upg_reader *r, int err)
{
	if (r->err == 0)
		r->err = err < 0 ? err : -EPROTO;
}

/* The next n bytes, or NULL with the reader failed if fewer are left. */
static const uint8_t *take(struct upg_reader *r, size_t n)
{
	static const uint8_t empty[1];
	const uint8_t *p;

	if (r->err)
		return NULL;
	if (n > r->len - r->pos) {
		upg_reader_fail(r, -EPROTO);
		return NULL;
	}
	if (!r->buf)
		return empty; /* nothing of no buffer: not NULL + 0 */
	p = r->buf + r->pos;
	r->pos += n;
	return p;
}

static uint64_t get_le(struct upg_reader *r, int width)
{
	const uint8_t *p = take(r, (size_t)width);
	uint64_t v = 0;

	if (p) {
		for (int i = width - 1; i >= 0; i--)
			v = v << 8 | p[i];
	}
	return v;
}

uint8_t upg_get_u8(struct upg_reader *r)
{
	return (uint8_t)get_le(r, 1);
}

uint32_t upg_get_u32(struct upg_reader *r)
{
	return (uint32_t)get_le(r, 4);
}

uint64_t upg_get_u64(struct upg_reader *r)
{
	return get_le(r, 8);
}

int64_t upg_get_i64(struct upg_reader *r)
{
	return (int64_t)get_le(r, 8);
}

void upg_get_bytes(struct upg_reader *r, void *p, size_t n)
{
	const uint8_t *src;

	if (n == 0)
		return;
	src = take(r, n);
	if (src)
		memcpy(p, src, n);
	else
		memset(p, 0, n);
}

char *upg_get_str_dup(struct upg_reader *r)
{
	uint32_t n = upg_get_u32(r);
	const uint8_t *p = take(r, n);
	char *s;

	if (!p)
		return NULL;
	if (memchr(p, '\0', n)) {
		upg_reader_fail(r, -EPROTO);
		return NULL;
	}
	s = malloc((size_t)n + 1);
	if (!s) {
		upg_reader_fail(r, -ENOMEM);
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}
