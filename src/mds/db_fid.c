/* db_fid.c - FIDs in the MDT's store: the next one the MDS hands out itself (meta
 * "next_fid") and the sequences it granted to clients (table fid_grants). Both draw on one
 * counter that only grows, so no FID is ever handed out twice, whoever chose it. */
#include "mds/db.h"

#include <errno.h>
#include <lmdb.h>

#include "mds/db_raw.h"
#include "nacre/nacre_errno.h"

#define GRANT_REC_VERSION 1
#define GRANT_REC_LEN (2 + 8 + 4)

static int next_get(struct mds_txn *txn, uint64_t *seq, uint32_t *oid)
{
	MDB_val k = {8, "next_fid"}, v;
	int rc = mdb_get(txn->t, txn->db->meta, &k, &v);
	if (rc || v.mv_size != 12)
		return rc ? db_map_err(rc, "next_fid get") : -EIO;
	*seq = rd_be64(v.mv_data);
	*oid = rd_be32((const uint8_t *)v.mv_data + 8);
	return 0;
}

/* Sets the next FID to the one after (seq, oid): oid 0 is never used, and a full sequence
 * moves on to the next one. */
static int next_put_after(struct mds_txn *txn, uint64_t seq, uint32_t oid)
{
	uint8_t next[12];
	if (oid == UINT32_MAX) {
		seq++;
		oid = 1;
	} else {
		oid++;
	}
	be64(next, seq);
	be32(next + 8, oid);
	return db_map_err(db_put_raw(txn->t, txn->db->meta, "next_fid", 8, next, 12),
			  "next_fid put");
}

int mds_db_fid_alloc(struct mds_txn *txn, struct nacre_fid *out)
{
	uint64_t seq;
	uint32_t oid;
	int rc = next_get(txn, &seq, &oid);
	if (rc)
		return rc;
	out->seq = seq;
	out->oid = oid;
	out->ver = 0;
	return next_put_after(txn, seq, oid);
}

int mds_db_fid_reserve(struct mds_txn *txn, const struct nacre_fid *fid)
{
	uint64_t seq;
	uint32_t oid;
	int rc = next_get(txn, &seq, &oid);
	if (rc)
		return rc;
	if (fid->seq < seq || (fid->seq == seq && fid->oid < oid))
		return 0; /* already handed out before */
	return next_put_after(txn, fid->seq, fid->oid);
}

int mds_db_fid_grant(struct mds_txn *txn, uint64_t client, uint32_t width, uint64_t *seq)
{
	uint64_t next_seq, owner, granted;
	uint32_t next_oid, w;
	int rc = next_get(txn, &next_seq, &next_oid);
	if (rc)
		return rc;
	if (*seq) {
		/* a replay: the sequence its first execution granted, if nobody has it since */
		rc = mds_db_fid_grant_get(txn, *seq, &owner, &w);
		if (rc == 0)
			return owner == client ? 0 : -EEXIST;
		if (rc != -ENOENT)
			return rc;
		if (*seq < next_seq || (*seq == next_seq && next_oid != 1))
			return -EEXIST; /* handed out otherwise meanwhile */
		granted = *seq;
	} else {
		/* a whole sequence: the MDS's own, unless it gave none of it yet, is left behind */
		granted = next_oid == 1 ? next_seq : next_seq + 1;
	}
	if (granted < next_seq || granted == UINT64_MAX)
		return -ENOSPC; /* 2^64 sequences: never in practice, but never wrap */
	uint8_t key[8], rec[GRANT_REC_LEN];
	be64(key, granted);
	rec[0] = 0;
	rec[1] = GRANT_REC_VERSION;
	be64(rec + 2, client);
	be32(rec + 10, width);
	rc = db_map_err(db_put_raw(txn->t, txn->db->fid_grants, key, sizeof(key), rec,
				   sizeof(rec)), "fid grant put");
	if (!rc)
		rc = next_put_after(txn, granted, UINT32_MAX); /* the next one is granted + 1 */
	if (!rc)
		*seq = granted;
	return rc;
}

int mds_db_fid_grant_get(struct mds_txn *txn, uint64_t seq, uint64_t *client,
			 uint32_t *width)
{
	uint8_t key[8];
	be64(key, seq);
	MDB_val k = {sizeof(key), key}, v;
	int rc = mdb_get(txn->t, txn->db->fid_grants, &k, &v);
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc)
		return db_map_err(rc, "fid grant get");
	const uint8_t *p = v.mv_data;
	if (v.mv_size < GRANT_REC_LEN)
		return -EIO;
	if (p[0] != 0 || p[1] != GRANT_REC_VERSION)
		return -NACRE_EFORMAT; /* written by a newer MDS */
	*client = rd_be64(p + 2);
	*width = rd_be32(p + 10);
	return 0;
}
