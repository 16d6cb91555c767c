/* size.h - the size reports of a handle to the MDS (size.c). */
#ifndef NACRE_CL_SIZE_H
#define NACRE_CL_SIZE_H

#include <stdint.h>

#include "nacre/nacre.h"

/* CLOSE or SIZE_UPDATE (opcode) with f's written end and mtime (and, on CLOSE, a read's
 * atime), and with measure the blocks of its objects when they changed (call after a flush:
 * the data is on the OSTs). Updates f's attributes and what it published. 0 or a negative
 * error (EDQUOT, a lost MDS: cl_io_errno's). Thread-safe; called with no lock held. */
int cl_size_send(struct nacre_file *f, uint16_t opcode, int measure);

/* Before a truncate of fid (setattr of the size, open with O_TRUNC): every handle of fid on
 * this client sends its buffered data, then, if it wrote since, its written end and mtime
 * to the MDS (SIZE_UPDATE). Errors are left to each handle's fsync or close. Thread-safe;
 * called with no lock held. */
void cl_size_publish_fid(struct nacre_fs *fs, const struct nacre_fid *fid);

#endif
