/* fid_grant.c - FID sequences for clients: granted in a change of the MDT, checked at
 * create. */
#include "mds/fid_grant.h"

#include <errno.h>
#include <inttypes.h>

#include "common/fid.h"
#include "common/log.h"
#include "nacre/nacre_errno.h"
#include "mds/writer.h"

struct grant_arg {
	uint64_t client;
	uint32_t width;
	uint64_t seq;
};

static int grant_op(struct mds_txn *txn, void *arg)
{
	struct grant_arg *a = arg;
	int rc = mds_db_fid_grant(txn, a->client, a->width, &a->seq);
	if (!rc) /* for the reply cache: the sequence, and its width */
		mds_txn_note_result(txn, &(struct nacre_fid){.seq = a->seq}, a->width);
	return rc;
}

int mds_fid_grant(struct mds *m, uint64_t client, uint64_t *seq, uint32_t *width)
{
	struct grant_arg a = {client, m->fid_grant_width ? m->fid_grant_width
							 : MDS_FID_GRANT_WIDTH_DEFAULT, *seq};
	if (!client)
		return -EPROTO; /* grants are per client id: WIRE_FEAT_RECOVERY */
	if (*seq)
		a.width = *width; /* a replay keeps what it was told */
	int rc = mds_writer_submit(m->writer, grant_op, &a);
	if (rc)
		return rc;
	LOG_DEBUG("fid", "granted sequence %#" PRIx64 " (%u FIDs) to client %#" PRIx64, a.seq,
		  a.width, client);
	*seq = a.seq;
	*width = a.width;
	return 0;
}

int mds_fid_grant_check(struct mds_txn *txn, uint64_t client, const struct nacre_fid *fid)
{
	uint64_t owner = 0;
	uint32_t width = 0;
	int rc = mds_db_fid_grant_get(txn, fid->seq, &owner, &width);
	if (rc && rc != -ENOENT)
		return rc;
	if (!rc && client && owner == client && fid->oid >= 1 && fid->oid <= width &&
	    fid->ver == 0)
		return 0;
	char buf[NACRE_FID_STR_MAX];
	LOG_RATELIMITED(LOG_LVL_WARN, "fid",
			"client %#" PRIx64 " created with FID %s, %s: refused", client,
			fid_format(fid, buf, sizeof(buf)),
			rc == -ENOENT  ? "whose sequence was never granted"
			: owner != client ? "whose sequence was granted to another client"
					  : "outside its granted sequence");
	return -NACRE_EFIDGRANT;
}
