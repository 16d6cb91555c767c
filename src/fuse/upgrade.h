/* upgrade.h - nacre-mount --upgrade inside: a new process takes over a live FUSE session
 * (docs/upgrade.md). The calls nacre-mount makes are in fz.h; this header joins the files
 * that implement them:
 *
 *   upgrade_msg.c   the control socket's messages and its path
 *   upgrade_codec.c the bounded writer and reader of both, and the blob's layout
 *   upgrade_blob.c  the state blob: what is handed over, encoded and decoded
 *   upgrade_give.c  the serving (old) process
 *   upgrade_take.c  the taking-over (new) process
 *
 * The serving process listens on a root-only unix socket named after its mount
 * (/run/nacre/mount-MAJOR:MINOR.sock, or -o control_socket=PATH). The new process connects
 * and asks; then, in this order:
 *
 *   old: refuses if a request waits for a cluster lock (it could not be handed over);
 *        stops the FUSE loop (requests in flight finish, unread ones stay queued in the
 *        kernel) and flushes write-behind data of every open file;
 *        sends the /dev/fuse fd (SCM_RIGHTS) and a versioned state blob: the FUSE INIT
 *        parameters, spec and options, the inode table, the handle table, the lock owners
 *        and its lock client id.
 *   new: connects to the MDS, fills its tables with the same numbers, re-opens every open
 *        file by FID, adopts the lock client id (its first lock request binds the locks to
 *        its connection), replays FUSE_INIT to its own libfuse session; then acknowledges.
 *   old: on the acknowledgement confirms and exits without unmounting (its MDS connection
 *        and handles go with it); on any failure before it (or a broken socket) it serves
 *        again, having never closed the fd.
 *   new: serves once the confirmation arrived.
 */
#ifndef NACRE_FUSE_UPGRADE_H
#define NACRE_FUSE_UPGRADE_H

#include <stddef.h>
#include <stdint.h>

#include "fuse/fz.h"
#include "fuse/upgrade_codec.h"

#define UPG_REQ_MAGIC 0x4e555251u /* "NURQ": the request */
#define UPG_BLOB_MAX (1u << 30)
#define UPG_MSG_MAX 1024u
#define UPG_SOCK_DIR "/run/nacre" /* of the default control sockets */
/* The request: u32 UPG_REQ_MAGIC, u8 UPG_VERSION, 3 bytes zero. */
#define UPG_REQ_LEN 8
/* The 8 bytes that start a status message and the handover: u32 status, u32 length. */
#define UPG_HDR_LEN 8

/* ---- upgrade_msg.c: messages on the control socket. Each returns 0 or -errno. */

void upg_hdr_encode(unsigned char h[UPG_HDR_LEN], uint32_t status, uint32_t len);
void upg_hdr_decode(const unsigned char h[UPG_HDR_LEN], uint32_t *status, uint32_t *len);
/* Reads a status text of n bytes into text (UPG_MSG_MAX + 1 bytes), NUL-terminated; on
 * failure text is "". -EPROTO if n is too long. */
int upg_recv_text(int fd, uint32_t n, int timeout_ms, char *text);
/* A status message: u32 status (0 or a positive errno), u32 length, text (msg may be
 * NULL; cut at UPG_MSG_MAX). */
int upg_send_status(int fd, int status, const char *msg);
/* Receives one; its text goes to msg (len bytes; len 0: dropped). */
int upg_recv_status(int fd, int timeout_ms, int *status, char *msg, size_t len);
/* The handover: a status 0 header carrying fuse_fd, then the blob (len bytes). */
int upg_send_fd_blob(int fd, int fuse_fd, const void *blob, size_t len);
/* Receives a header and the fd it may carry (*fuse_fd = -1 if none; the caller closes
 * it). -EPIPE if the peer closed. */
int upg_recv_fd_hdr(int fd, unsigned char h[UPG_HDR_LEN], int *fuse_fd);

/* ---- upgrade_blob.c: the state blob (its layout: upgrade_codec.h):
 *
 *   u32 UPG_MAGIC, u32 UPG_VERSION, the head (struct upg_head), then three tables, each a
 *   u64 count followed by its records: inodes, handles, lock owners.
 *
 * Decoders check every count against the bytes present and fail the reader on anything
 * malformed (a time with nsec >= 1e9 included). */

struct upg_head {
	struct fz_init_params init; /* u32 each: proto_major, proto_minor, max_readahead,
				     * capable, want */
	char *spec, *opts, *mnt;    /* str each; heap, freed by upg_head_fini */
	uint64_t lock_client;
};

struct upg_inode {
	uint64_t ino;
	struct nacre_fid fid, parent;
	uint64_t nlookup;
	uint32_t cache_valid;
	uint64_t cache_size;
	struct nacre_time cache_mtime, cache_ctime;
};

struct upg_handle {
	uint64_t fh;
	uint32_t kind;  /* FZ_H_FILE or FZ_H_DIR */
	uint64_t ino;   /* 0 for a directory */
	uint32_t flags; /* open flags of a file */
	struct nacre_cred cred;
};

struct upg_owner {
	struct nacre_fid fid;
	uint64_t owner;
};

/* The state of m's stopped session (nothing may change it meanwhile). Returns the
 * writer's error. */
int upg_blob_build(struct fz_mount *m, const struct fz_upgrade_conf *cf, struct upg_writer *w);
/* Magic, version and head (a NULL string is written as ""). */
void upg_head_put(struct upg_writer *w, const struct fz_init_params *init, const char *spec,
		  const char *opts, const char *mnt, uint64_t lock_client);
/* Decodes magic, version and head. 0, -EPROTONOSUPPORT (another magic or version) or the
 * reader's error; h needs upg_head_fini() either way. */
int upg_head_decode(struct upg_reader *r, struct upg_head *h);
void upg_head_fini(struct upg_head *h);
/* One record each; a writer's failure (-EINVAL: a cred beyond what the blob carries)
 * sticks. A table is its count (upg_put_u64) and its records. */
void upg_inode_put(struct upg_writer *w, const struct upg_inode *rec);
void upg_handle_put(struct upg_writer *w, const struct upg_handle *rec);
void upg_owner_put(struct upg_writer *w, const struct upg_owner *rec);
/* A table's count; 0 with the reader failed if more records than bytes left. */
uint64_t upg_inodes_count(struct upg_reader *r);
uint64_t upg_handles_count(struct upg_reader *r);
uint64_t upg_owners_count(struct upg_reader *r);
/* One record each; check upg_reader_ok() after. */
void upg_inode_get(struct upg_reader *r, struct upg_inode *rec);
void upg_handle_get(struct upg_reader *r, struct upg_handle *rec);
void upg_owner_get(struct upg_reader *r, struct upg_owner *rec);

#endif
