/* fidseq.h - the FIDs this client gives its new inodes, from sequences the MDS granted it
 * (WIRE_FEAT_FID_GRANT; docs/writeback.md). A create names its inode itself, so the FID is
 * known before the MDS has the create, and a resent or replayed create carries the same one.
 *
 * The client keeps the sequence it takes FIDs from and the next one: the next is asked for
 * once three quarters of the current are used, so a create rarely waits for a grant. With
 * no grant to be had (an MDS that predates them, one that refused, the tunable off) a create
 * leaves the choice to the MDS, as before.
 */
#ifndef NACRE_CL_FIDSEQ_H
#define NACRE_CL_FIDSEQ_H

#include <pthread.h>
#include <stdint.h>

#include "nacre/nacre.h"

struct cl_fidseq {
	pthread_mutex_t lock; /* protects the fields below; held across no call */
	uint64_t seq;         /* taking FIDs from seq, oids next..width; seq 0: none */
	uint32_t next, width;
	uint64_t spare_seq;   /* the next grant, 0 if none yet */
	uint32_t spare_width;
	int asking;           /* a thread is asking the MDS for a grant */
	int off;              /* atomic: NACRE_TUNE_FID_GRANT is 0 */
	int refused;          /* the MDS said no: ask no more on this mount */
};

void cl_fidseq_init(struct cl_fidseq *s);
void cl_fidseq_fini(struct cl_fidseq *s);
/* A FID for a new inode: 0 with *fid set, or -EOPNOTSUPP (let the MDS choose). May ask the
 * MDS for a grant. Thread-safe. */
int cl_fidseq_take(struct nacre_fs *fs, struct nacre_fid *fid);
/* The MDS refused a FID this client chose (-NACRE_EFIDGRANT): forget the grants and choose
 * no more on this mount (logged). Thread-safe. */
void cl_fidseq_refused(struct nacre_fs *fs, const struct nacre_fid *fid);

#endif
