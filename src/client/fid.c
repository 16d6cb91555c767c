/* fid.c - libnacre's FID calls: the text form ("[0x200000400:0x1:0x0]", as Lustre prints
 * it) and comparison, as every program has them (common/fid.h). */
#include "client/cl_export.h"
#include "common/fid.h"
#include "nacre/nacre.h"

NACRE_API char *nacre_fid_format(const struct nacre_fid *fid, char *buf, size_t len)
{
	return fid_format(fid, buf, len);
}

NACRE_API int nacre_fid_parse(const char *s, struct nacre_fid *fid)
{
	return fid_parse(s, fid);
}

NACRE_API int nacre_fid_eq(const struct nacre_fid *a, const struct nacre_fid *b)
{
	return fid_eq(a, b);
}
