/* fidseq.c - FIDs from the sequences the MDS granted this client (fidseq.h). */
#include "client/fidseq.h"

#include <errno.h>

#include "client/cl_internal.h"
#include "client/mdc.h"
#include "common/fid.h"
#include "nacre/nacre_errno.h"
#include "proto/wire.h"

void cl_fidseq_init(struct cl_fidseq *s)
{
	pthread_mutex_init(&s->lock, NULL);
}

void cl_fidseq_fini(struct cl_fidseq *s)
{
	pthread_mutex_destroy(&s->lock);
}

static int usable(struct nacre_fs *fs)
{
	uint64_t need = WIRE_FEAT_FID_GRANT | WIRE_FEAT_RECOVERY;
	return fs->client_id && (rpc_conn_features(fs->mds) & need) == need &&
	       !__atomic_load_n(&fs->fidseq.off, __ATOMIC_RELAXED);
}

/* Asks the MDS for a sequence, without the lock; stores it as the spare. */
static void ask_grant(struct nacre_fs *fs)
{
	struct cl_fidseq *s = &fs->fidseq;
	struct wire_cred_req req = {0};
	struct wire_fid_grant_rep g = {0};
	int rc = cl_mds_do(fs, WIRE_OP_MDS_FID_GRANT, &req, &g);

	pthread_mutex_lock(&s->lock);
	s->asking = 0;
	if (rc == 0 && !s->spare_seq) {
		s->spare_seq = g.seq;
		s->spare_width = g.width;
	} else if (rc == -EOPNOTSUPP || rc == -EPROTO || rc == -EPERM) {
		s->refused = 1; /* an MDS that will not grant: it chooses, as before */
	}
	pthread_mutex_unlock(&s->lock);
	if (rc)
		cl_log(fs, rc == -EOPNOTSUPP ? CL_LOG_INFO : CL_LOG_WARN,
		       "FID grant from MDS %s: %s; the MDS chooses new FIDs", fs->addr,
		       nacre_strerror(rc));
}

/* Under the lock: the current sequence is used up; the spare becomes it. */
static void take_spare(struct cl_fidseq *s)
{
	s->seq = s->spare_seq;
	s->width = s->spare_width;
	s->next = 1;
	s->spare_seq = 0;
}

int cl_fidseq_take(struct nacre_fs *fs, struct nacre_fid *fid)
{
	struct cl_fidseq *s = &fs->fidseq;
	int ask;

	if (!usable(fs))
		return -EOPNOTSUPP;
	for (int tries = 0; tries < 2; tries++) {
		pthread_mutex_lock(&s->lock);
		if (s->refused) {
			pthread_mutex_unlock(&s->lock);
			return -EOPNOTSUPP;
		}
		if ((!s->seq || s->next > s->width) && s->spare_seq)
			take_spare(s);
		if (s->seq && s->next <= s->width) {
			*fid = (struct nacre_fid){.seq = s->seq, .oid = s->next++, .ver = 0};
			/* three quarters used: the next grant is asked for now, not when needed */
			ask = !s->spare_seq && !s->asking && s->width - s->next < s->width / 4;
			s->asking |= ask;
			pthread_mutex_unlock(&s->lock);
			if (ask)
				ask_grant(fs);
			return 0;
		}
		/* none left: one thread asks, the others let the MDS choose meanwhile */
		ask = !s->asking;
		s->asking = 1;
		pthread_mutex_unlock(&s->lock);
		if (!ask)
			return -EOPNOTSUPP;
		ask_grant(fs);
	}
	return -EOPNOTSUPP;
}

void cl_fidseq_refused(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct cl_fidseq *s = &fs->fidseq;
	char buf[NACRE_FID_STR_MAX];

	pthread_mutex_lock(&s->lock);
	s->refused = 1;
	s->seq = s->spare_seq = 0;
	pthread_mutex_unlock(&s->lock);
	cl_log(fs, CL_LOG_WARN, "MDS %s refused FID %s of this client's grant; the MDS chooses "
	       "new FIDs from now on", fs->addr, fid_format(fid, buf, sizeof(buf)));
}
