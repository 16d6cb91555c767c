/* req_fids.h - the FIDs a request names, for the checks made before it runs (a nodemap's
 * fileset, write-back leases). */
#ifndef NACRE_MDS_REQ_FIDS_H
#define NACRE_MDS_REQ_FIDS_H

#include <stdint.h>

#include "nacre/nacre_types.h"

#define MDS_REQ_FIDS_MAX 2

/* The FIDs a request of opcode with body names: a WIRE_OPF_CRED_FID request's FID (a
 * parent directory or the inode acted on), and RENAME's target directory or LINK's new
 * parent after it. Returns how many (0..MDS_REQ_FIDS_MAX): 0 for other opcodes, and for a
 * body too short to name one (its handler refuses it). */
int mds_req_fids(uint16_t opcode, const uint8_t *body, uint32_t len,
		 struct nacre_fid out[MDS_REQ_FIDS_MAX]);

#endif
