/* quota.h - the codec between libnacre's quota types (nacre.h) and the QUOTA messages of the
 * wire (wire.h), shared by nacre_quota_call and nacre_quota_ioctl (quota.c). */
#ifndef NACRE_CL_QUOTA_H
#define NACRE_CL_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre.h"
#include "proto/cursor.h"

/* Appends req as a quota_req body with cred (NULL: zero, for the mount to fill) to c.
 * Returns 0 (c's own error, if any, is sticky in c), or -EINVAL when req's op, type or valid
 * is out of range (nothing appended). */
int cl_quota_req_encode(struct wire_cursor *c, const struct nacre_cred *cred,
			const struct nacre_quota_req *req);
/* Decodes a quota_rep body of len bytes answering op into *rep (cleared first); for CHECK and
 * TARGETS it allocates rep's list (the caller frees it with nacre_quota_rep_fini); items of
 * other ops and trailing bytes are ignored. Returns 0, -EPROTO (malformed, or more than
 * WIRE_QUOTA_DRIFT_MAX drift entries; rep then holds no list) or -ENOMEM. */
int cl_quota_rep_decode(const void *body, size_t len, uint32_t op, struct nacre_quota_rep *rep);

#endif
