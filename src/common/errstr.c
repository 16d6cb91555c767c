/* errstr.c - nacre_strerror(): one description for errno values and NACRE_E* codes. */
#include <errno.h>
#include <string.h>

#include "nacre/nacre_errno.h"

static const char *const nacre_errs[NACRE_ELAST - NACRE_EBASE] = {
	[0] = "nacre error base",
	[NACRE_EPROTO_VERSION - NACRE_EBASE] = "no common nacre protocol version with the peer",
	[NACRE_EAUTH - NACRE_EBASE] = "cluster key rejected",
	[NACRE_EFSNAME - NACRE_EBASE] = "server serves another file system",
	[NACRE_ESTALE_LAYOUT - NACRE_EBASE] = "file layout changed",
	[NACRE_EBADMAGIC - NACRE_EBASE] = "not nacre data (bad magic)",
	[NACRE_EFORMAT - NACRE_EBASE] = "unknown on-disk format version",
	[NACRE_ENOTARGET - NACRE_EBASE] = "no such target",
	[NACRE_ETIMEDOUT_SRV - NACRE_EBASE] = "server did not answer in time",
	[NACRE_ERESTORING - NACRE_EBASE] = "file is being restored from the archive",
	[NACRE_ESEC - NACRE_EBASE] = "wire security flavour refused",
	[NACRE_EGROUPS - NACRE_EBASE] = "the MDS does not know this group list: register it again",
	[NACRE_EFIDGRANT - NACRE_EBASE] = "FID not granted to this client",
};

/* Exported from the shared libnacre, which is built with -fvisibility=hidden. */
__attribute__((visibility("default"))) const char *nacre_strerror(int err)
{
	const char *s;

	/* Negating INT_MIN would overflow; it is no valid code anyway. */
	if (err < 0 && err != (-2147483647 - 1))
		err = -err;
	if (err == 0)
		return "Success";
	if (err >= NACRE_EBASE && err < NACRE_ELAST)
		return nacre_errs[err - NACRE_EBASE];
	/* strerrordesc_np returns a static, untranslated string: thread-safe, unlike
	 * strerror(). */
	s = strerrordesc_np(err);
	return s ? s : "Unknown error";
}

__attribute__((visibility("default"))) int nacre_errno_for_app(int err)
{
	int e = err < 0 && err != (-2147483647 - 1) ? -err : err;

	/* The kernel refuses error values from 512 up in FUSE replies, and no program knows
	 * ours; a server that stayed away past the recovery timeout is a failed I/O. */
	if (e <= 0 || e >= 512 || e == ETIMEDOUT)
		return EIO;
	return e;
}
