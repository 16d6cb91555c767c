/* kproto.h - the parts of the kernel's FUSE protocol (include/uapi/linux/fuse.h) that
 * nacre-mount reads or writes below libfuse: FUSE_INIT as it arrives on /dev/fuse (an
 * upgrade replays it, ring.c reads it) and FUSE over io_uring (protocol 7.42, Linux 6.14),
 * which Debian 12's headers predate. Spelled out because <linux/fuse.h> clashes with
 * libfuse's headers. */
#ifndef NACRE_FUSE_KPROTO_H
#define NACRE_FUSE_KPROTO_H

#include <stdint.h>

struct k_in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen, padding;
};
struct k_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};
struct k_init_in {
	uint32_t major, minor, max_readahead, flags, flags2;
	uint32_t unused[11];
};
/* fuse_init_out up to flags2 (7.36); the rest of the reply is left as libfuse wrote it */
struct k_init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2;
};
#define K_FUSE_FORGET 2
#define K_FUSE_INIT 26
#define K_FUSE_INTERRUPT 36
#define K_FUSE_BATCH_FORGET 42
#define K_FUSE_NOTIFY_REPLY 41
#define K_FUSE_MAX_PAGES (1u << 22)     /* since 7.28: max_write above 128 KiB */
#define K_FUSE_INIT_EXT (1u << 30)      /* flags2 is meaningful */
#define K_FUSE_OVER_IO_URING (1u << 9)  /* in flags2: FUSE_OVER_IO_URING, 1 << 41 */
#define K_FUSE_MIN_READ_BUFFER 8192

/* One ring entry's header buffer (struct fuse_uring_req_header): the kernel writes the
 * request's fuse_in_header into in_out and its operation header (fuse_write_in, ...) into
 * op_in, the rest of the request into the payload buffer; the reply's fuse_out_header goes
 * into in_out, the rest of the reply into the payload. */
struct k_uring_ent_in_out {
	uint64_t flags, commit_id;
	uint32_t payload_sz, padding;
	uint64_t reserved;
};
struct k_uring_req_header {
	char in_out[128];
	char op_in[128];
	struct k_uring_ent_in_out ent;
};
/* In the 128-byte SQE's command area (struct fuse_uring_cmd_req). */
struct k_uring_cmd_req {
	uint64_t flags, commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
enum { K_URING_CMD_REGISTER = 1, K_URING_CMD_COMMIT_AND_FETCH = 2 };

#endif
