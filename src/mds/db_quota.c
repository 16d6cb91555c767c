/* db_quota.c - quota usage and limits in the MDT (docs/quota.md): the records, the charge
 * of every inode update in its own transaction, the limits with defaults and grace, and the
 * recount. */
#include "mds/db_quota.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "proto/cursor.h"
#include "proto/wire.h"

/* ---------------- quotas ---------------- */

#define QUOTA_REC_VERSION 1
#define QUOTA_REC_LEN 66

static void quota_key(uint8_t k[5], uint32_t kind, uint32_t id)
{
	k[0] = (uint8_t)kind;
	be32(k + 1, id);
}

static void quota_encode(const struct mds_quota *q, uint8_t out[QUOTA_REC_LEN])
{
	struct wire_cursor c;

	wire_cursor_init_write(&c, out, QUOTA_REC_LEN);
	wire_put_u16(&c, QUOTA_REC_VERSION);
	wire_put_u64(&c, q->kbytes);
	wire_put_u64(&c, q->inodes);
	wire_put_u64(&c, q->bsoft);
	wire_put_u64(&c, q->bhard);
	wire_put_u64(&c, q->isoft);
	wire_put_u64(&c, q->ihard);
	wire_put_i64(&c, q->btime);
	wire_put_i64(&c, q->itime);
}

static int quota_decode(const void *buf, size_t len, struct mds_quota *q)
{
	struct wire_cursor c;

	wire_cursor_init_read(&c, buf, len);
	if (wire_get_u16(&c) != QUOTA_REC_VERSION)
		return -NACRE_EFORMAT;
	q->kbytes = wire_get_u64(&c);
	q->inodes = wire_get_u64(&c);
	q->bsoft = wire_get_u64(&c);
	q->bhard = wire_get_u64(&c);
	q->isoft = wire_get_u64(&c);
	q->ihard = wire_get_u64(&c);
	q->btime = wire_get_i64(&c);
	q->itime = wire_get_i64(&c);
	return wire_cursor_ok(&c) && wire_cursor_left(&c) == 0 ? 0 : -EIO;
}

static int quota_get_raw(MDB_txn *t, MDB_dbi dbi, uint32_t kind, uint32_t id,
			 struct mds_quota *out)
{
	uint8_t kb[5];
	MDB_val k = {5, kb}, v;

	memset(out, 0, sizeof(*out));
	quota_key(kb, kind, id);
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc)
		return db_map_err(rc, "quota get");
	if (quota_decode(v.mv_data, v.mv_size, out)) {
		LOG_ERR("db", "corrupt quota record (kind %u, id %u): counted as empty", kind, id);
		memset(out, 0, sizeof(*out));
	}
	return 0;
}

static int quota_put_raw(MDB_txn *t, MDB_dbi dbi, uint32_t kind, uint32_t id,
			 const struct mds_quota *q)
{
	uint8_t kb[5], vb[QUOTA_REC_LEN];

	quota_key(kb, kind, id);
	quota_encode(q, vb);
	return db_map_err(db_put_raw(t, dbi, kb, 5, vb, sizeof(vb)), "quota put");
}

int mds_db_quota_get(struct mds_txn *txn, uint32_t kind, uint32_t id, struct mds_quota *out)
{
	return quota_get_raw(txn->t, txn->db->quota, kind, id, out);
}

int mds_db_quota_put(struct mds_txn *txn, uint32_t kind, uint32_t id, const struct mds_quota *q)
{
	return quota_put_raw(txn->t, txn->db->quota, kind, id, q);
}

int mds_db_quota_iter(struct mds_txn *txn,
		      int (*fn)(void *arg, uint32_t kind, uint32_t id, const struct mds_quota *q),
		      void *arg)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn->t, txn->db->quota, &cur), ret = 0;

	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct mds_quota q;
		const uint8_t *kp = k.mv_data;
		if (k.mv_size != 5 || kp[0] >= MDS_QUOTA_TYPES ||
		    quota_decode(v.mv_data, v.mv_size, &q))
			continue;
		ret = fn(arg, kp[0], rd_be32(kp + 1), &q);
		if (ret)
			break;
	}
	if (!ret && rc && rc != MDB_NOTFOUND)
		ret = db_map_err(rc, "quota iter");
	mdb_cursor_close(cur);
	return ret;
}

void mds_db_quota_usage(const struct mds_inode *ino, uint64_t *kbytes)
{
	*kbytes = S_ISREG(ino->mode) ? (ino->size + 4095) / 4096 * 4 : 0;
	/* blocks fallocated past the size (KEEP_SIZE) are taken space too: the objects'
	 * blocks as a client measured them, when more than the size */
	if (S_ISREG(ino->mode) && ino->has_blocks && (ino->blocks + 1) / 2 > *kbytes)
		*kbytes = (ino->blocks + 1) / 2;
}

static int quota_has_limits(const struct mds_quota *q)
{
	return q->bsoft || q->bhard || q->isoft || q->ihard;
}

static int quota_limits_raw(MDB_txn *t, struct mds_db *db, uint32_t type,
			    const struct mds_quota *own, struct mds_quota *lim, uint64_t *bgrace,
			    uint64_t *igrace, int *is_default)
{
	struct mds_quota g;
	int rc;

	*lim = *own;
	*is_default = 0;
	if (!quota_has_limits(own)) {
		rc = quota_get_raw(t, db->quota, MDS_QUOTA_KIND_DEFAULT + type, 0, lim);
		if (rc && rc != -ENOENT)
			return rc;
		*is_default = quota_has_limits(lim);
	}
	rc = quota_get_raw(t, db->quota, MDS_QUOTA_KIND_GRACE + type, 0, &g);
	if (rc && rc != -ENOENT)
		return rc;
	*bgrace = rc ? MDS_QUOTA_GRACE_DEFAULT : g.bsoft;
	*igrace = rc ? MDS_QUOTA_GRACE_DEFAULT : g.isoft;
	return 0;
}

int mds_db_quota_limits(struct mds_txn *txn, uint32_t type, uint32_t id, struct mds_quota *lim,
			uint64_t *bgrace, uint64_t *igrace, int *is_default)
{
	struct mds_quota own;
	int rc = quota_get_raw(txn->t, txn->db->quota, type, id, &own);

	if (rc && rc != -ENOENT)
		return rc;
	return quota_limits_raw(txn->t, txn->db, type, &own, lim, bgrace, igrace, is_default);
}


void db_qown_of(const struct mds_inode *ino, struct qown *o)
{
	memset(o, 0, sizeof(*o));
	o->present = 1;
	o->id[MDS_QUOTA_USR] = ino->uid;
	o->id[MDS_QUOTA_GRP] = ino->gid;
	o->id[MDS_QUOTA_PRJ] = ino->projid;
	mds_db_quota_usage(ino, &o->kb);
}

/* The owner of a stored inode record: its fixed head only (version .. size). */
int db_qown_stored(MDB_txn *t, MDB_dbi dbi, const struct nacre_fid *fid, struct qown *o)
{
	uint8_t kb[16];
	MDB_val k = {16, kb}, v;
	struct wire_cursor c;
	struct mds_inode head;

	memset(o, 0, sizeof(*o));
	fid_to_key(fid, kb);
	int rc = mdb_get(t, dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return db_map_err(rc, "inode get");
	wire_cursor_init_read(&c, v.mv_data, v.mv_size);
	if (wire_get_u16(&c) >= INODE_REC_VERSION_PRJ) {
		/* the project id is at the end, past the variable fields */
		struct mds_inode *full = malloc(sizeof(*full));
		if (!full)
			return -ENOMEM;
		if (!db_decode_inode(v.mv_data, v.mv_size, full))
			db_qown_of(full, o);
		free(full);
		return 0;
	}
	head.projid = 0;
	head.has_blocks = 0; /* versions before 4 have none */
	head.blocks = 0;
	head.mode = wire_get_u32(&c);
	(void)wire_get_u32(&c);
	head.uid = wire_get_u32(&c);
	head.gid = wire_get_u32(&c);
	(void)wire_get_u32(&c);
	head.size = wire_get_u64(&c);
	if (!wire_cursor_ok(&c))
		return 0; /* a corrupt record charged nothing */
	db_qown_of(&head, o);
	return 0;
}

static int64_t now_sec(void)
{
	return time_now().sec;
}

/* Over a soft limit past its grace, or over a hard limit: -EDQUOT. Keeps *when (the end of
 * the grace) set while usage is over the soft limit. */
static int quota_rule(uint64_t use, uint64_t soft, uint64_t hard, uint64_t grace, int64_t *when,
		      int enforce, int64_t now)
{
	if (enforce && hard && use > hard)
		return -EDQUOT;
	if (soft && use > soft) {
		if (enforce && *when && now >= *when)
			return -EDQUOT;
		if (!*when)
			*when = now + (int64_t)grace;
	} else {
		*when = 0;
	}
	return 0;
}

static uint64_t sat_add(uint64_t v, uint64_t plus, uint64_t minus)
{
	v += plus;
	return v > minus ? v - minus : 0;
}

/* Moves old's charge to new's (either may be absent) for user and group; a new inode, or
 * a file growing in place, of a non-root owner is held to the limits. Checks every record
 * before writing any. */
int db_quota_charge(MDB_txn *t, struct mds_db *db, const struct qown *old,
			const struct qown *new, int exempt)
{
	struct mds_quota q[MDS_QUOTA_TYPES][2];
	uint32_t ids[MDS_QUOTA_TYPES][2];
	int n[MDS_QUOTA_TYPES] = {0, 0, 0}, rc;
	int64_t now = now_sec();
	if (old->present && new->present && old->kb == new->kb &&
	    !memcmp(old->id, new->id, sizeof(old->id)))
		return 0; /* same owners, same size: nothing moves (most updates) */
	int enf_i = !exempt && !old->present && new->present && new->id[MDS_QUOTA_USR] != 0;
	int enf_b = !exempt && old->present && new->present && new->id[MDS_QUOTA_USR] != 0 &&
		    new->id[MDS_QUOTA_USR] == old->id[MDS_QUOTA_USR] && new->kb > old->kb;

	for (uint32_t type = 0; type < MDS_QUOTA_TYPES; type++) {
		const struct qown *side[2] = {old, new};
		for (int s = 0; s < 2; s++) {
			if (!side[s]->present || (type == MDS_QUOTA_PRJ && !side[s]->id[type]))
				continue; /* project 0 is no project */
			uint32_t id = side[s]->id[type];
			int j = 0;
			while (j < n[type] && ids[type][j] != id)
				j++;
			if (j == n[type]) {
				n[type]++;
				ids[type][j] = id;
				rc = quota_get_raw(t, db->quota, type, id, &q[type][j]);
				if (rc && rc != -ENOENT)
					return rc;
			}
			struct mds_quota *r = &q[type][j];
			if (s == 0) {
				r->kbytes = sat_add(r->kbytes, 0, side[s]->kb);
				r->inodes = sat_add(r->inodes, 0, 1);
			} else {
				r->kbytes += side[s]->kb;
				r->inodes += 1;
			}
		}
		for (int j = 0; j < n[type]; j++) {
			struct mds_quota lim, *r = &q[type][j];
			uint64_t bg, ig;
			int def, here = new->present && ids[type][j] == new->id[type];
			rc = quota_limits_raw(t, db, type, r, &lim, &bg, &ig, &def);
			if (rc)
				return rc;
			rc = quota_rule(r->kbytes, lim.bsoft, lim.bhard, bg, &r->btime,
					here && enf_b, now);
			if (!rc)
				rc = quota_rule(r->inodes, lim.isoft, lim.ihard, ig, &r->itime,
						here && enf_i, now);
			if (rc)
				return rc;
		}
	}
	for (uint32_t type = 0; type < MDS_QUOTA_TYPES; type++)
		for (int j = 0; j < n[type]; j++) {
			rc = quota_put_raw(t, db->quota, type, ids[type][j], &q[type][j]);
			if (rc)
				return rc;
		}
	return 0;
}

/* ---------------- quota recount ---------------- */

struct qcount {
	uint32_t kind, id;
	uint64_t kb, inodes;
	int used;
	int seen; /* a stored record matched it */
};

struct qtab {
	struct qcount *v;
	size_t cap, n;
};

static struct qcount *qtab_find(struct qtab *h, uint32_t kind, uint32_t id, int add)
{
	if (add && (h->n + 1) * 2 > h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct qcount *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < h->cap; i++) {
			if (!h->v[i].used)
				continue;
			size_t j = (h->v[i].id * 2654435761u + h->v[i].kind) & (cap - 1);
			while (v[j].used)
				j = (j + 1) & (cap - 1);
			v[j] = h->v[i];
		}
		free(h->v);
		h->v = v;
		h->cap = cap;
	}
	if (!h->cap)
		return NULL;
	size_t j = (id * 2654435761u + kind) & (h->cap - 1);
	while (h->v[j].used) {
		if (h->v[j].kind == kind && h->v[j].id == id)
			return &h->v[j];
		j = (j + 1) & (h->cap - 1);
	}
	if (!add)
		return NULL;
	h->v[j].used = 1;
	h->v[j].kind = kind;
	h->v[j].id = id;
	h->n++;
	return &h->v[j];
}

/* Counts every inode's charge into h. */
static int qtab_count(MDB_txn *t, struct mds_db *db, struct qtab *h)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(t, db->inodes, &cur);

	if (rc)
		return db_map_err(rc, "cursor open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct qown o;
		struct nacre_fid fid;
		if (k.mv_size != 16)
			continue;
		fid_from_key(k.mv_data, &fid);
		int r = db_qown_stored(t, db->inodes, &fid, &o);
		if (r) {
			mdb_cursor_close(cur);
			return r;
		}
		if (!o.present)
			continue;
		for (uint32_t type = 0; type < MDS_QUOTA_TYPES; type++) {
			if (type == MDS_QUOTA_PRJ && o.id[type] == 0)
				continue; /* project 0: no project */
			struct qcount *c = qtab_find(h, type, o.id[type], 1);
			if (!c) {
				mdb_cursor_close(cur);
				return -ENOMEM;
			}
			c->kb += o.kb;
			c->inodes++;
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : db_map_err(rc, "inode iter");
}

struct qfix {
	uint32_t kind, id;
	struct mds_quota q;
	uint64_t kb, inodes;
};

/* Appends f to the growing list *fx of *n (room for *cap). 0 or -ENOMEM. */
static int qfix_push(struct qfix **fx, size_t *n, size_t *cap, struct qfix f)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct qfix *g = realloc(*fx, c * sizeof(**fx));
		if (!g)
			return -ENOMEM;
		*fx = g;
		*cap = c;
	}
	(*fx)[(*n)++] = f;
	return 0;
}

static int quota_recount_raw(MDB_txn *t, struct mds_db *db, int fix,
			     void (*drift)(void *arg, uint32_t kind, uint32_t id,
					   const struct mds_quota *stored, uint64_t kbytes,
					   uint64_t inodes),
			     void *arg, uint32_t *ndrift)
{
	struct qtab h = {0};
	struct qfix *fx = NULL;
	size_t nfx = 0, capfx = 0;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = qtab_count(t, db, &h);

	*ndrift = 0;
	if (!rc)
		rc = db_map_err(mdb_cursor_open(t, db->quota, &cur), "cursor open");
	if (rc) {
		free(h.v);
		return rc;
	}
	/* stored records against the count; fixes are written after the walk */
	for (int r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !r && !rc;
	     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kp = k.mv_data;
		struct mds_quota q;
		if (k.mv_size != 5 || kp[0] >= MDS_QUOTA_TYPES ||
		    quota_decode(v.mv_data, v.mv_size, &q))
			continue;
		uint32_t id = rd_be32(kp + 1);
		struct qcount *c = qtab_find(&h, kp[0], id, 0);
		uint64_t kb = c ? c->kb : 0, ino = c ? c->inodes : 0;
		if (c)
			c->seen = 1;
		if (kb == q.kbytes && ino == q.inodes)
			continue;
		rc = qfix_push(&fx, &nfx, &capfx, (struct qfix){kp[0], id, q, kb, ino});
		if (rc)
			break;
	}
	mdb_cursor_close(cur);
	for (size_t i = 0; i < h.cap && !rc; i++) {
		struct qcount *c = &h.v[i];
		if (!c->used || c->seen)
			continue;
		rc = qfix_push(&fx, &nfx, &capfx,
			       (struct qfix){c->kind, c->id, {0}, c->kb, c->inodes});
	}
	for (size_t i = 0; i < nfx && !rc; i++) {
		(*ndrift)++;
		if (drift)
			drift(arg, fx[i].kind, fx[i].id, &fx[i].q, fx[i].kb, fx[i].inodes);
		if (fix) {
			fx[i].q.kbytes = fx[i].kb;
			fx[i].q.inodes = fx[i].inodes;
			rc = quota_put_raw(t, db->quota, fx[i].kind, fx[i].id, &fx[i].q);
		}
	}
	free(fx);
	free(h.v);
	return rc;
}

int mds_db_quota_recount(struct mds_txn *txn, int fix,
			 void (*drift)(void *arg, uint32_t kind, uint32_t id,
				       const struct mds_quota *stored, uint64_t kbytes,
				       uint64_t inodes),
			 void *arg, uint32_t *ndrift)
{
	return quota_recount_raw(txn->t, txn->db, fix, drift, arg, ndrift);
}

/* At open: an MDT that never counted its usage (older than quotas, or just formatted)
 * counts it now, once. */
/* At an open with quotas off: usage is not kept from now on, so the next open with quotas
 * on must count it again. */
int db_quota_forget_count(struct mds_db *db, MDB_txn *t)
{
	MDB_val k = {13, "quota_counted"};
	int rc = mdb_del(t, db->meta, &k, NULL);

	LOG_WARN("db", "quotas are off: usage is not counted and no limit is enforced until the "
		 "MDS starts with them on (and recounts)");
	return rc == MDB_NOTFOUND ? 0 : db_map_err(rc, "meta del");
}

int db_quota_count_once(struct mds_db *db, MDB_txn *t)
{
	MDB_val k = {13, "quota_counted"}, v;
	uint32_t n;
	uint8_t one = 1;
	int rc = mdb_get(t, db->meta, &k, &v);

	if (rc != MDB_NOTFOUND)
		return rc ? db_map_err(rc, "meta get") : 0;
	rc = quota_recount_raw(t, db, 1, NULL, NULL, &n);
	if (!rc)
		rc = db_map_err(db_put_raw(t, db->meta, "quota_counted", 13, &one, 1), "meta put");
	if (!rc && n)
		LOG_INFO("db", "quota usage counted for %u ids from the inodes", n);
	return rc;
}
