/* md.h - what the file calls (io.c) and the namespace calls (md.c) take from each other
 * besides nacre.h.
 */
#ifndef NACRE_CL_MD_H
#define NACRE_CL_MD_H

#include <stdint.h>

#include "nacre/nacre.h"
#include "proto/wire.h"

/* CREATE with WIRE_CREATE_OPEN: makes a regular file (O_EXCL of flags refuses an existing
 * name) and opens it in the same request. *handle_out is the new file's handle, or 0 when
 * the name existed and was not opened (then open it with OPEN); *has_cap_out (may be NULL)
 * says whether *cap_out received the handle's object capability. */
int cl_create_open(struct nacre_fs *fs, const struct nacre_cred *cr,
		   const struct nacre_fid *parent, const char *name, uint32_t mode, int flags,
		   const struct nacre_layout *layout, struct nacre_attr *out,
		   struct nacre_layout *layout_out, uint64_t *handle_out,
		   struct wire_cap *cap_out, uint8_t *has_cap_out);

#endif
