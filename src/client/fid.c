/* fid.c - FIDs as text ("[0x200000400:0x1:0x0]", as Lustre prints them) and their comparison.
 */
#include <errno.h>
#include <stdio.h>

#include "client/cl_export.h"
#include "nacre/nacre.h"

NACRE_API char *nacre_fid_format(const struct nacre_fid *fid, char *buf, size_t len)
{
	if (!buf || len == 0)
		return buf;
	if (!fid) {
		buf[0] = '\0';
		return buf;
	}
	snprintf(buf, len, "[0x%llx:0x%x:0x%x]", (unsigned long long)fid->seq, fid->oid, fid->ver);
	return buf;
}

/* Parses 1..maxdigits hex digits with an optional 0x. Advances *sp. */
static int parse_hex(const char **sp, int maxdigits, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;
	int n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, n++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (n >= maxdigits)
			return -EINVAL;
		v = (v << 4) | (uint64_t)d;
	}
	if (n == 0)
		return -EINVAL;
	*sp = s;
	*out = v;
	return 0;
}

NACRE_API int nacre_fid_parse(const char *s, struct nacre_fid *fid)
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

NACRE_API int nacre_fid_eq(const struct nacre_fid *a, const struct nacre_fid *b)
{
	return a->seq == b->seq && a->oid == b->oid && a->ver == b->ver;
}
