/* cap_check.h - the OSS's check of object capabilities (common/cap.h): every object
 * request must carry a capability the MDS minted for that object, for the client of the
 * connection it arrives on, with the right the opcode needs, not expired. */
#ifndef NACRE_OSS_CAP_CHECK_H
#define NACRE_OSS_CAP_CHECK_H

#include <stdint.h>

#include "common/cap.h"
#include "proto/rpc.h"
#include "proto/wire.h"

/* The rights an opcode needs: any one of them suffices (GETATTR and SYNC take read or
 * write); 0 for requests that need no capability (STATFS). */
uint32_t oss_cap_needed(uint16_t opcode);

/* Checks m's capability for opcode. Returns 0, or -EACCES after a rate-limited log line
 * naming the peer, the FID and the reason (none, wrong object, wrong rights, expired, bad
 * MAC). Thread-safe (k is read-only). */
int oss_cap_check(const struct cap_key *k, const struct rpc_request *req, uint16_t opcode,
		  const struct wire_ost_io_req *m);
/* The same for an OST_DESTROY_BATCH whose objects are objs (len bytes, as received). */
int oss_cap_check_list(const struct cap_key *k, const struct rpc_request *req,
		       const struct wire_ost_destroy_req *m, const void *objs, size_t len);

#endif
