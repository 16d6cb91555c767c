/* target.h - one OST: a directory with a superblock, opened (or formatted) at start.
 *
 * DIR/nacre-ost.sb identifies the OST. It is a 64-byte little-endian record:
 *
 *   off len
 *     0   8  magic "NACREOST"
 *     8   4  u32 format version (OSS_SB_VERSION)
 *    12   4  u32 OST index
 *    16  16  fsname, NUL-padded
 *    32  16  uuid (random, version 4), fixed at format
 *    48   8  i64 creation time, Unix seconds
 *    56   4  u32 reserved, 0
 *    60   4  u32 crc32c of bytes 0..59
 *
 * It is written once, at format, through a temp file + fsync + rename + fsync of DIR. While
 * a process serves the OST it holds flock(LOCK_EX) on the superblock, so a second nacre-oss
 * on the same directory is refused. Objects live under DIR/O (store.h).
 */
#ifndef NACRE_OSS_TARGET_H
#define NACRE_OSS_TARGET_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"
#include "proto/wire.h"

#define OSS_SB_NAME "nacre-ost.sb"
#define OSS_SB_MAGIC "NACREOST"
#define OSS_SB_VERSION 1
#define OSS_SB_LEN 64
#define OSS_UUID_LEN 16
#define OSS_FDCACHE_MAX 256 /* object fds kept open per OST */

struct oss_fdcache;

/* Counters per OST opcode, indexed by opcode - WIRE_OP_OST_WRITE (one per request: an
 * OST_DESTROY_BATCH counts once, and once as an error if any of its objects failed). */
#define OSS_NOPS (WIRE_OP_OST_SEEK - WIRE_OP_OST_WRITE + 1)

/* Per-OST I/O counters for metrics. Updated with relaxed atomics by any worker; read
 * without a lock (each counter is individually consistent). */
struct oss_io_sizes {
	atomic_uint_fast64_t count; /* requests that moved bytes */
	atomic_uint_fast64_t min;   /* smallest of them in bytes; 0 before the first */
	atomic_uint_fast64_t max;   /* largest */
};

struct oss_stats {
	atomic_uint_fast64_t read_bytes;
	atomic_uint_fast64_t write_bytes;
	atomic_uint_fast64_t direct_write_bytes; /* of write_bytes, with O_DIRECT */
	atomic_uint_fast64_t direct_read_bytes;  /* of read_bytes, with O_DIRECT */
	struct oss_io_sizes read_sizes, write_sizes; /* as Lustre's read_bytes/write_bytes
						      * counters: samples, min, max */
	atomic_uint_fast64_t ops[OSS_NOPS];
	atomic_uint_fast64_t errors[OSS_NOPS]; /* requests answered with a negative status */
};

struct jobstats;

struct oss_target {
	uint32_t index;
	char fsname[NACRE_FSNAME_MAX + 1];
	char name[16];   /* "OST0003", for log lines */
	char dir[PATH_MAX];
	uint8_t uuid[OSS_UUID_LEN];
	int64_t created;
	int dir_fd;      /* DIR */
	int obj_fd;      /* DIR/O */
	int sb_fd;       /* the superblock, holding the flock */
	struct oss_fdcache *fds; /* open objects (fdcache.h); NULL = open per request */
	atomic_int direct_io;  /* whole-block reads and writes bypass the page cache
				* (O_DIRECT, store.c); off by default, cleared when the
				* file system refuses O_DIRECT */
	struct oss_stats stats;
	struct jobstats *jobs; /* job_stats (jobs.h); NULL: none kept */
};

/* Opens the OST in dir for fsname/index; with format, first creates dir (and its parents)
 * if missing and formats it if it is empty (a lost+found is allowed). An already formatted
 * dir is opened as is, format or not. Returns 0 and a heap *out (oss_target_close), or:
 * -ENOENT (not a nacre OST), -ENOTDIR, -ENOTEMPTY (format refused), -NACRE_EFSNAME,
 * -NACRE_ENOTARGET (index mismatch), -NACRE_EFORMAT (unknown version), -NACRE_EBADMAGIC
 * (not or corrupt superblock), -EBUSY (served by another process), -errno. On error err
 * gets a sentence naming dir and what to do. Not thread-safe against the same dir. */
int oss_target_open(const char *dir, const char *fsname, uint32_t index, int format,
		    struct oss_target **out, char *err, size_t err_len);
/* Closes fds (releasing the lock) and frees t. NULL is fine. */
void oss_target_close(struct oss_target *t);
/* Writes the uuid as 36 characters + NUL to out. */
void oss_target_uuid_str(const struct oss_target *t, char out[37]);

#endif
