/* store.h - the objects of one OST: files under DIR/O, read and written with pread/pwrite.
 *
 * An object is named by (fid, stripe index, layout gen):
 *   DIR/O/<hh>/<seq hex>-<oid hex>-<ver hex>-<stripe>-<gen>
 * with hh = two hex digits of (oid ^ seq ^ (seq >> 32)) & 0xff. Objects are created on first
 * write; a missing object reads as empty. Every function is thread-safe (no shared state
 * beyond the target's fds) and blocks on disk: call it from a worker thread. Errors are
 * negative errnos from the file system, passed through (ENOSPC, EIO...).
 */
#ifndef NACRE_OSS_STORE_H
#define NACRE_OSS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"
#include "oss/target.h"

#define OSS_OBJ_DIR "O"
#define OSS_OBJ_NAME_MAX 64 /* "hh/" + 16 + 8 + 8 + 10 + 10 + 4 dashes + NUL fits */

struct oss_obj_id {
	struct nacre_fid fid;
	uint32_t stripe;
	uint32_t gen;
};

/* Creates DIR/O and its 256 hash subdirectories where missing (fsyncing what it created)
 * and returns an O_DIRECTORY fd of DIR/O, or -errno. */
int oss_store_prepare(int dir_fd);
/* Writes the object's path relative to DIR/O ("hh/name") to out. */
void oss_store_obj_name(const struct oss_obj_id *id, char out[OSS_OBJ_NAME_MAX]);

/* Writes len bytes of buf at off, creating the object. Returns 0 or -errno; after an error
 * the range may be partly written (as with pwrite), nothing outside it is changed. */
int oss_store_write(struct oss_target *t, const struct oss_obj_id *id, uint64_t off,
		    const void *buf, size_t len);
/* Reads up to len bytes at off into buf; *got is the count, short at the object's end and 0
 * for a missing object. Returns 0 or -errno. */
int oss_store_read(struct oss_target *t, const struct oss_obj_id *id, uint64_t off, void *buf,
		   size_t len, size_t *got);
/* Shrinks the object to size if it is larger; never extends it, never creates it. */
int oss_store_punch(struct oss_target *t, const struct oss_obj_id *id, uint64_t size);
/* Removes the object; a missing object is success. */
int oss_store_destroy(struct oss_target *t, const struct oss_obj_id *id);
/* Size in bytes and allocated 512-byte blocks; a missing object is 0/0. */
int oss_store_getattr(struct oss_target *t, const struct oss_obj_id *id, uint64_t *size,
		      uint64_t *blocks);
/* fallocate(2) of [off, off + len) of the object with mode (WIRE_FALLOC_* bits, Linux's
 * values). Allocating modes create a missing object; a punch of a missing object is
 * success. Returns 0 or -errno (-EOPNOTSUPP: the file system under DIR cannot). */
int oss_store_fallocate(struct oss_target *t, const struct oss_obj_id *id, uint32_t mode,
			uint64_t off, uint64_t len);
/* SEEK_DATA or SEEK_HOLE (whence: WIRE_SEEK_*) from off in the object: *out is the object
 * offset found. The object is a hole from its end on (a missing object is all hole), so
 * SEEK_HOLE always answers; SEEK_DATA with no data at or after off returns -ENXIO. */
int oss_store_seek(struct oss_target *t, const struct oss_obj_id *id, uint32_t whence,
		   uint64_t off, uint64_t *out);
/* Space of the file system holding DIR. */
int oss_store_statfs(struct oss_target *t, struct nacre_statfs *st);
/* Makes the object's data and its directory entry durable; id NULL = the whole OST
 * (syncfs). A missing object is success. */
int oss_store_sync(struct oss_target *t, const struct oss_obj_id *id);

#endif
