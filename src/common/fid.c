/* fid.c - FIDs: comparison, hashing, text and key forms (fid.h). */
#include "common/fid.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

int fid_eq(const struct nacre_fid *a, const struct nacre_fid *b)
{
	return a->seq == b->seq && a->oid == b->oid && a->ver == b->ver;
}

int fid_is_zero(const struct nacre_fid *f)
{
	return f->seq == 0 && f->oid == 0 && f->ver == 0;
}

uint64_t fid_hash(const struct nacre_fid *f)
{
	uint64_t h = f->seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)f->oid << 32 | f->ver);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ h >> 32;
}

char *fid_format(const struct nacre_fid *fid, char *buf, size_t len)
{
	if (!buf || len == 0)
		return buf;
	if (!fid) {
		buf[0] = '\0';
		return buf;
	}
	snprintf(buf, len, "[0x%" PRIx64 ":0x%" PRIx32 ":0x%" PRIx32 "]", fid->seq, fid->oid,
		 fid->ver);
	return buf;
}

/* Parses hex digits with an optional 0x into *out, at most maxdigits significant ones.
 * Advances *sp. 0 or -EINVAL. */
static int parse_hex(const char **sp, int maxdigits, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;
	int n = 0, digits = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, digits++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (v == 0 && d == 0)
			continue; /* a leading zero */
		if (++n > maxdigits)
			return -EINVAL;
		v = (v << 4) | (uint64_t)d;
	}
	if (digits == 0)
		return -EINVAL;
	*sp = s;
	*out = v;
	return 0;
}

int fid_parse(const char *s, struct nacre_fid *fid)
{
	uint64_t seq, oid, ver;
	int bracket;

	if (!s || !fid)
		return -EINVAL;
	bracket = *s == '[';
	s += bracket;
	if (parse_hex(&s, 16, &seq) || *s++ != ':' || parse_hex(&s, 8, &oid) || *s++ != ':' ||
	    parse_hex(&s, 8, &ver))
		return -EINVAL;
	if (bracket && *s++ != ']')
		return -EINVAL;
	if (*s)
		return -EINVAL;
	fid->seq = seq;
	fid->oid = (uint32_t)oid;
	fid->ver = (uint32_t)ver;
	return 0;
}

void fid_to_key(const struct nacre_fid *fid, uint8_t out[FID_KEY_LEN])
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(fid->seq >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		out[8 + i] = (uint8_t)(fid->oid >> (24 - 8 * i));
		out[12 + i] = (uint8_t)(fid->ver >> (24 - 8 * i));
	}
}

void fid_from_key(const uint8_t key[FID_KEY_LEN], struct nacre_fid *fid)
{
	fid->seq = 0;
	fid->oid = 0;
	fid->ver = 0;
	for (int i = 0; i < 8; i++)
		fid->seq = fid->seq << 8 | key[i];
	for (int i = 0; i < 4; i++) {
		fid->oid = fid->oid << 8 | key[8 + i];
		fid->ver = fid->ver << 8 | key[12 + i];
	}
}
