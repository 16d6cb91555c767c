/* cl_hsm.h - libnacre's side of HSM that other client files call. */
#ifndef NACRE_CL_HSM_H
#define NACRE_CL_HSM_H

#include <stdint.h>

#include "client/cl_internal.h"

/* After an MDS call answered -NACRE_ERESTORING (the file is being restored): sleeps a
 * little (growing backoff) and returns 0 to resend, or -ETIMEDOUT once *waited_ms passed the
 * fs's timeout, with a log line naming the file (the FID of req, a cred + fid request). */
int cl_restore_wait(struct nacre_fs *fs, const struct wire_cursor *req, int64_t *waited_ms);

#endif
