/* mdc.h - the MDS client (mdc.c): the call every metadata request goes through, and the
 * helpers every libnacre file uses. The lowest layer of libnacre above the rpc layer: it
 * calls no other client file but fid.c; before each request it calls the fs's before_mds
 * hook, which wbq.c sets (a request goes after the changes this mount queued: it may
 * depend on them).
 */
#ifndef NACRE_CL_MDC_H
#define NACRE_CL_MDC_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre.h"
#include "proto/cursor.h"
#include "proto/rpc.h"

/* Log levels of nacre_log_fn (syslog values). */
enum { CL_LOG_ERR = 3, CL_LOG_WARN = 4, CL_LOG_INFO = 6, CL_LOG_DEBUG = 7 };

/* Sends a line to the fs's log sink if one is set; never prints. Thread-safe. */
void cl_log(const struct nacre_fs *fs, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* cr, or root (uid 0, gid 0, no groups) when cr is NULL. Returns a pointer to out or cr. */
const struct nacre_cred *cl_cred(const struct nacre_cred *cr, struct nacre_cred *out);

/* Sends the request encoded in req (body bytes [0, pos)) to the MDS and waits; the rpc layer
 * resends it after a reconnect (the MDS's reply cache answers a resent change). Returns 0
 * with *rep set (the caller frees it with rpc_msg_free), or a negative error (transport
 * error or the reply's status) with *rep NULL. While the MDS answers -NACRE_ERESTORING (a
 * released file is being restored) it waits and resends, up to the fs's timeout
 * (-ETIMEDOUT). Thread-safe. */
int cl_mds_call(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *req,
		struct rpc_msg **rep);
/* cl_mds_call that gives up after within_ms (0: as cl_mds_call), for a caller that must
 * not wait out the MDS's recovery: an MDS away gives its transport error (-ETIMEDOUT...),
 * unlogged. Thread-safe. */
int cl_mds_call_within(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *req,
		       int within_ms, struct rpc_msg **rep);
/* The end of cl_mds_call, for a caller that made the call itself (rpc_start, rpc_wait):
 * takes rc and m as rpc_wait gave them (m is freed or handed over) and returns as
 * cl_mds_call does, a transport failure logged and mapped to -EIO. Thread-safe. */
int cl_mds_result(struct nacre_fs *fs, uint16_t opcode, int rc, struct rpc_msg *m,
		  struct rpc_msg **rep);
/* One MDS call as the opcode table describes op: encodes req (the struct wire_<name> of
 * op's request) with its codec, calls as cl_mds_call does, and decodes the reply into rep
 * (its reply's struct; NULL: not wanted), which must fill the body exactly; an "empty"
 * reply must have no body. For replies whose decoded form points into nothing (attr_rep,
 * open_rep, cap_rep...): the reply is freed before this returns. 0 or a negative errno,
 * -EPROTO for a reply that does not decode. Thread-safe. */
int cl_mds_do(struct nacre_fs *fs, uint16_t op, const void *req, void *rep);
/* 0 if a decode consumed the whole body without error, else -EPROTO. */
int cl_decode_end(const struct wire_cursor *c);
/* Maps a transport failure (timeout, lost server) to -EIO for applications; other errors
 * (ENOSPC, EACCES...) pass through. */
int cl_io_errno(int rc);
/* A sentence for a first connect to role ("MDS") at addr that failed with rc, into err:
 * what went wrong and what to check (program: "nacre-mds", the process that should be
 * listening). rpc_err is the rpc layer's sentence, used for the other errors. */
void cl_connect_error(const char *role, const char *addr, const char *program, int rc,
		      int timeout_ms, const char *rpc_err, char *err, size_t err_len);
/* 1 if rc means the server could not be reached (worth a target table refresh). */
int cl_is_transport_err(int rc);

#endif
