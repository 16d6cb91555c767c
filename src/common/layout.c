/* layout.c - RAID0 striping arithmetic, layout checks and the nacre.layout text form. */
#include "common/layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

/* Stripe size and count as the arithmetic uses them. The checks reject layouts where these
 * fall back; the fallbacks only keep a bad layout from dividing by zero. */
static uint64_t eff_size(const struct nacre_layout *l)
{
	return l->stripe_size ? l->stripe_size : NACRE_STRIPE_SIZE_DEFAULT;
}

static uint64_t eff_count(const struct nacre_layout *l)
{
	return l->stripe_count > 0 ? (uint64_t)l->stripe_count : 1;
}

void layout_map(const struct nacre_layout *l, uint64_t off, uint32_t *stripe, uint64_t *obj_off)
{
	uint64_t s = eff_size(l), c = eff_count(l);

	*stripe = (uint32_t)((off / s) % c);
	*obj_off = (off / (s * c)) * s + off % s;
}

uint64_t layout_max_file_size(const struct nacre_layout *l)
{
	if (!l || l->nosts == 0)
		return LAYOUT_OBJ_MAXBYTES;
	uint64_t s = eff_size(l), c = eff_count(l);
	/* The first byte past the limit is at LAYOUT_OBJ_MAXBYTES in object 0: the rows below
	 * it are whole in every object, the row it is in holds its first part in object 0. */
	return (LAYOUT_OBJ_MAXBYTES / s) * s * c + LAYOUT_OBJ_MAXBYTES % s;
}

int layout_split(const struct nacre_layout *l, uint64_t off, uint64_t len,
		 struct layout_extent *out, int max)
{
	uint64_t s = eff_size(l);
	int n = 0;

	while (len > 0 && n < max) {
		uint64_t piece = s - off % s;

		if (piece > len)
			piece = len;
		out[n].file_off = off;
		out[n].len = piece;
		layout_map(l, off, &out[n].stripe, &out[n].obj_off);
		n++;
		off += piece;
		len -= piece;
	}
	return n;
}

uint64_t layout_object_size(const struct nacre_layout *l, uint64_t file_size, uint32_t stripe)
{
	uint64_t s = eff_size(l), c = eff_count(l);
	uint64_t row = s * c;
	uint64_t size = (file_size / row) * s;
	uint64_t rem = file_size % row; /* bytes in the last, partial row */
	uint64_t start = (uint64_t)stripe * s;

	if (rem > start)
		size += rem - start < s ? rem - start : s;
	return size;
}

uint64_t layout_file_size_from_object(const struct nacre_layout *l, uint32_t stripe,
				      uint64_t obj_size)
{
	uint64_t s = eff_size(l), c = eff_count(l);
	uint64_t last;

	if (obj_size == 0)
		return 0;
	/* The file is at least as long as the object's last byte, mapped back. */
	last = obj_size - 1;
	return (last / s) * s * c + (uint64_t)stripe * s + last % s + 1;
}

static int fail(char *err, size_t err_len, const char *why)
{
	if (err && err_len > 0)
		str_copy(err, why, err_len);
	return -EINVAL;
}

int layout_check_request(const struct nacre_layout *l, char *err, size_t err_len)
{
	if (l->pattern != 0 && l->pattern != NACRE_PATTERN_RAID0)
		return fail(err, err_len, "unknown layout pattern (only raid0 is supported)");
	if (l->stripe_size % NACRE_STRIPE_SIZE_MIN != 0)
		return fail(err, err_len, "stripe size must be a multiple of 64 KiB");
	if (l->stripe_count < -1 || l->stripe_count > NACRE_MAX_STRIPES)
		return fail(err, err_len, "stripe count must be -1 (all OSTs), 0 (default) or 1..128");
	if (l->stripe_offset < -1 || l->stripe_offset > 65535)
		return fail(err, err_len, "stripe offset must be -1 (any) or an OST index 0..65535");
	if (l->nosts > NACRE_MAX_STRIPES)
		return fail(err, err_len, "more than 128 OSTs listed");
	if (l->nosts > 0 && (uint32_t)l->stripe_count != l->nosts)
		return fail(err, err_len, "stripe count must equal the number of OSTs listed");
	return 0;
}

int layout_check_file(const struct nacre_layout *l)
{
	if (l->pattern != NACRE_PATTERN_RAID0)
		return -EINVAL;
	if (l->stripe_size == 0 || l->stripe_size % NACRE_STRIPE_SIZE_MIN != 0)
		return -EINVAL;
	if (l->stripe_count < 1 || l->stripe_count > NACRE_MAX_STRIPES)
		return -EINVAL;
	if (l->nosts != (uint32_t)l->stripe_count)
		return -EINVAL;
	return 0;
}

/* Appends to buf at *pos, counting the full length even when buf is too small. */
__attribute__((format(printf, 4, 5))) static void fmt_add(char *buf, size_t len, size_t *pos,
							   const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*pos < len ? buf + *pos : NULL, *pos < len ? len - *pos : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos += (size_t)n;
}

int layout_format(const struct nacre_layout *l, char *buf, size_t len)
{
	size_t pos = 0;

	fmt_add(buf, len, &pos, "stripe_count=%d stripe_size=%u stripe_offset=%d ",
		l->stripe_count, l->stripe_size, l->stripe_offset);
	if (l->pattern == NACRE_PATTERN_RAID0 || l->pattern == 0)
		fmt_add(buf, len, &pos, "pattern=raid0");
	else
		fmt_add(buf, len, &pos, "pattern=%u", l->pattern);
	fmt_add(buf, len, &pos, " gen=%u", l->gen);
	for (uint32_t i = 0; i < l->nosts && i < NACRE_MAX_STRIPES; i++)
		fmt_add(buf, len, &pos, "%s%u", i == 0 ? " osts=" : ",", l->ost_idx[i]);
	return (int)pos;
}

/* The text form is short: count, size, offset, gen and 128 OST indices fit easily. */
#define LAYOUT_TEXT_MAX 4096

static int parse_u32(const char *s, uint32_t *out)
{
	int64_t v;

	if (parse_i64(s, 0, UINT32_MAX, &v) < 0)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_osts(char *s, struct nacre_layout *l)
{
	uint32_t n = 0;
	char *p = s;

	for (;;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		if (n >= NACRE_MAX_STRIPES || parse_u32(p, &l->ost_idx[n]) < 0)
			return -EINVAL;
		n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	l->nosts = n;
	return 0;
}

static int parse_kv(char *key, char *val, struct nacre_layout *l)
{
	int64_t v;
	uint64_t size;

	if (strcmp(key, "stripe_count") == 0) {
		if (parse_i64(val, -1, NACRE_MAX_STRIPES, &v) < 0)
			return -EINVAL;
		l->stripe_count = (int32_t)v;
	} else if (strcmp(key, "stripe_size") == 0) {
		/* Accept "1M" as well as 1048576, as setstripe -S does. */
		if (parse_size(val, &size) < 0 || size > UINT32_MAX)
			return -EINVAL;
		l->stripe_size = (uint32_t)size;
	} else if (strcmp(key, "stripe_offset") == 0) {
		if (parse_i64(val, -1, 65535, &v) < 0)
			return -EINVAL;
		l->stripe_offset = (int32_t)v;
	} else if (strcmp(key, "pattern") == 0) {
		if (strcmp(val, "raid0") != 0)
			return -EINVAL;
		l->pattern = NACRE_PATTERN_RAID0;
	} else if (strcmp(key, "gen") == 0) {
		return parse_u32(val, &l->gen);
	} else if (strcmp(key, "osts") == 0) {
		return parse_osts(val, l);
	} else {
		return -EINVAL;
	}
	return 0;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int layout_parse(const char *s, size_t len, struct nacre_layout *l)
{
	char text[LAYOUT_TEXT_MAX + 1];
	char *p;

	memset(l, 0, sizeof(*l));
	l->pattern = NACRE_PATTERN_RAID0;
	l->stripe_offset = -1;

	/* setfattr and friends may include a trailing NUL; one inside the text is an error. */
	while (len > 0 && s[len - 1] == '\0')
		len--;
	if (len > LAYOUT_TEXT_MAX || memchr(s, '\0', len))
		return -EINVAL;
	memcpy(text, s, len);
	text[len] = '\0';

	p = text;
	for (;;) {
		char *key, *eq;

		while (is_blank(*p))
			p++;
		if (*p == '\0')
			break;
		key = p;
		while (*p && !is_blank(*p))
			p++;
		if (*p)
			*p++ = '\0';
		eq = strchr(key, '=');
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		if (parse_kv(key, eq + 1, l) < 0)
			return -EINVAL;
	}
	return 0;
}
