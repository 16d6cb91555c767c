/* obj.h - the object I/O engine (obj.c): the OST RPCs of an open file, striped over its
 * objects, and the write generations that tell readahead its data went stale. Below
 * write-behind, readahead and the file calls; calls only the OST connection table and the
 * MDS client's helpers.
 */
#ifndef NACRE_CL_OBJ_H
#define NACRE_CL_OBJ_H

#include <stdint.h>
#include <sys/uio.h>

struct nacre_fs;
struct nacre_file;
struct nacre_fid;

/* Reads or writes [off, off+len) of the file through buf (opcode WIRE_OP_OST_READ or
 * WIRE_OP_OST_WRITE): per-object RPCs of up to rpc_max bytes, every RPC of a batch in
 * flight at once; a read of an object never written or short fills zeros. Blocks. Returns
 * 0 or the first error, mapped for applications (-EIO for a lost server). */
int cl_obj_file_io(struct nacre_file *f, uint16_t opcode, uint8_t *buf, uint64_t len,
		   uint64_t off);
/* OST_SYNC of every object of the file, in parallel. Blocks. Returns as cl_obj_file_io. */
int cl_obj_sync(struct nacre_file *f);
/* One object RPC (OST_WRITE of iov, or OST_READ into iov[0], zero-filling a short read),
 * with the retry of an OSS that moved. Blocks. Returns 0 or a negative error (logged). */
int cl_obj_io(struct nacre_file *f, uint16_t opcode, uint32_t stripe, uint64_t obj_off,
	      struct iovec *iov, int niov, uint64_t len);

/* The sum of the allocated 512-byte blocks of the file's objects (OST_GETATTR of each, in
 * parallel). Blocks. Returns 0 or an error as cl_obj_file_io. */
int cl_obj_blocks(struct nacre_file *f, uint64_t *blocks);
/* OST_FALLOCATE with mode (WIRE_FALLOC_*) of the objects' ranges that make up [off,
 * off + len) of the file, in parallel. Blocks. Returns 0, -EOPNOTSUPP (an OSS or its disk
 * file system cannot), or an error as cl_obj_file_io. */
int cl_obj_fallocate(struct nacre_file *f, uint32_t mode, uint64_t off, uint64_t len);
/* SEEK_DATA or SEEK_HOLE (whence: WIRE_SEEK_*) over the objects from file offset off:
 * *out is the smallest file offset >= off of data (or of a hole) in any object, which may
 * lie past the file's size. -ENXIO: no data in any object after off; -EOPNOTSUPP: an OSS
 * that predates OST_SEEK. Blocks. */
int cl_obj_seek(struct nacre_file *f, uint32_t whence, uint64_t off, uint64_t *out);

/* The fid's write generation bucket; bump with cl_wgen_bump. Atomic, lock-free. */
uint64_t cl_wgen(struct nacre_fs *fs, const struct nacre_fid *fid);
void cl_wgen_bump(struct nacre_fs *fs, const struct nacre_fid *fid);
/* File offset of object offset obj_off of stripe. */
uint64_t cl_obj_to_file(const struct nacre_file *f, uint32_t stripe, uint64_t obj_off);

#endif
