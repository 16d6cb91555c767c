/* layout.h - RAID0 striping arithmetic and layout validation. Pure functions; thread-safe.
 *
 * Byte off of a file lives in stripe (off / S) % C at object offset
 * (off / (S*C)) * S + off % S, where S is the stripe size and C the stripe count. */
#ifndef NACRE_LAYOUT_H
#define NACRE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

/* One contiguous piece of a file range that lies in one object. */
struct layout_extent {
	uint32_t stripe;   /* stripe index (0..C-1) */
	uint64_t obj_off;  /* offset in that stripe's object */
	uint64_t file_off; /* offset in the file */
	uint64_t len;
};

/* The largest object an OST stores: 16 TiB - 4 KiB, what ext4 with 4 KiB blocks holds (the
 * smallest of the file systems an OST may sit on; xfs, btrfs and tmpfs hold more). An OSS
 * refuses a target whose file system cannot hold it (docs/ondisk.md). As Lustre's
 * maxbytes of an ldiskfs OST. */
#define LAYOUT_OBJ_MAXBYTES ((1ull << 44) - 4096)

void layout_map(const struct nacre_layout *l, uint64_t off, uint32_t *stripe,
		uint64_t *obj_off);
/* The largest size a file of layout l may have: every byte below it lies below
 * LAYOUT_OBJ_MAXBYTES in its object (LAYOUT_OBJ_MAXBYTES times the stripe count when that is
 * a multiple of the stripe size). Writes and truncates past it fail with EFBIG. NULL, or a
 * layout with no objects yet: LAYOUT_OBJ_MAXBYTES, which no layout is below. */
uint64_t layout_max_file_size(const struct nacre_layout *l);
/* Splits [off, off+len) into per-object pieces, in file order, at most max of them; returns
 * how many were written. A range longer than max pieces is cut: the caller loops on the
 * rest (sum the lens written). */
int layout_split(const struct nacre_layout *l, uint64_t off, uint64_t len,
		 struct layout_extent *out, int max);
/* Size the object of stripe must have for a file of file_size bytes (for truncate/punch). */
uint64_t layout_object_size(const struct nacre_layout *l, uint64_t file_size, uint32_t stripe);
/* File size implied by an object of stripe being obj_size bytes long. */
uint64_t layout_file_size_from_object(const struct nacre_layout *l, uint32_t stripe,
				      uint64_t obj_size);
/* Checks a layout a user asked for: stripe size a multiple of 64 KiB (or 0 = default),
 * stripe count -1..NACRE_MAX_STRIPES, offset -1..65535. Returns 0 or -EINVAL and writes the
 * reason to err. */
int layout_check_request(const struct nacre_layout *l, char *err, size_t err_len);
/* Checks an instantiated file layout: pattern RAID0, stripe size valid, nosts ==
 * stripe_count in 1..NACRE_MAX_STRIPES. 0 or -EINVAL. */
int layout_check_file(const struct nacre_layout *l);
/* Text form used by the nacre.layout xattr:
 * "stripe_count=4 stripe_size=1048576 stripe_offset=-1 pattern=raid0 gen=0 osts=0,1,2,3"
 * (osts only when nosts > 0). Returns the length written (snprintf rules). */
int layout_format(const struct nacre_layout *l, char *buf, size_t len);
/* Parses the text form; missing keys keep 0 (count), 0 (size = default), -1 (offset).
 * Returns 0 or -EINVAL. */
int layout_parse(const char *s, size_t len, struct nacre_layout *l);

#endif
