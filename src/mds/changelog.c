/* changelog.c - the changelog: records written with each change, users, clear, the size cap,
 * and the CL_* requests (see changelog.h). */
#include "mds/changelog.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/feed.h"
#include "mds/writer.h"
#include "proto/cursor.h"
#include "proto/wire.h"

#define CL_REC_VERSION 1
#define CL_USER_VERSION 1
#define CL_SETTINGS_VERSION 1
#define CL_SETTINGS_KEY "mask" /* the changelog_users row that is not a user */

struct mds_changelog {
	struct mds *m;
	uint64_t max_records;
	/* written by writer operations only, read anywhere: atomic */
	uint64_t mask;
	uint32_t xflags;
	uint32_t nusers;
	uint64_t next;     /* the index the next record takes */
	uint64_t changes;  /* changes seen, recorded or not */
	uint64_t first;    /* the lowest index stored, 0 = none; written by writer operations */
	struct mds_feed *feed; /* changed FIDs for the HSM policy (feed.h) */
	/* writer operations only */
	uint32_t lastuser; /* the highest N of "clN" ever handed out */
};

static uint64_t load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* ---------------- records ---------------- */

int mds_changelog_rec_encode(const struct nacre_changelog_rec *r, uint8_t *buf, size_t len)
{
	struct wire_cursor c;

	wire_cursor_init_write(&c, buf, len);
	wire_put_u16(&c, CL_REC_VERSION);
	wire_cl_rec_put(&c, r);
	return wire_cursor_ok(&c) ? (int)wire_cursor_pos(&c) : -EINVAL;
}

int mds_changelog_rec_decode(const void *buf, size_t len, struct nacre_changelog_rec *r)
{
	struct wire_cursor c;

	wire_cursor_init_read(&c, buf, len);
	uint16_t ver = wire_get_u16(&c);
	wire_cl_rec_get(&c, r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c) || ver != CL_REC_VERSION)
		return -EIO;
	return 0;
}

/* ---------------- users and settings ---------------- */

static int is_user_name(const char *name, uint32_t *id)
{
	char *end;

	if (strncmp(name, "cl", 2) != 0 || name[2] < '1' || name[2] > '9')
		return 0;
	unsigned long long v = strtoull(name + 2, &end, 10);
	if (*end || v > UINT32_MAX)
		return 0;
	if (id)
		*id = (uint32_t)v;
	return 1;
}

static int user_put(struct mds_txn *txn, const char *name, uint64_t cleared)
{
	uint8_t b[2 + 8 + 8];
	struct wire_cursor c;

	wire_cursor_init_write(&c, b, sizeof(b));
	wire_put_u16(&c, CL_USER_VERSION);
	wire_put_u64(&c, cleared);
	wire_put_i64(&c, (int64_t)time_now().sec);
	return mds_db_cl_user_put(txn, name, b, wire_cursor_pos(&c));
}

static int user_decode(const void *rec, size_t len, uint64_t *cleared)
{
	struct wire_cursor c;

	wire_cursor_init_read(&c, rec, len);
	uint16_t ver = wire_get_u16(&c);
	*cleared = wire_get_u64(&c);
	(void)wire_get_i64(&c);
	return wire_cursor_ok(&c) && ver == CL_USER_VERSION ? 0 : -EIO;
}

static int settings_put(struct mds_changelog *cl, struct mds_txn *txn)
{
	uint8_t b[2 + 8 + 4 + 4];
	struct wire_cursor c;

	wire_cursor_init_write(&c, b, sizeof(b));
	wire_put_u16(&c, CL_SETTINGS_VERSION);
	wire_put_u64(&c, load64(&cl->mask));
	wire_put_u32(&c, __atomic_load_n(&cl->xflags, __ATOMIC_ACQUIRE));
	wire_put_u32(&c, cl->lastuser);
	return mds_db_cl_user_put(txn, CL_SETTINGS_KEY, b, wire_cursor_pos(&c));
}

/* What the users table says: the count, the lowest cleared index and its user. */
struct user_scan {
	struct mds_changelog *cl;
	uint32_t n;
	uint64_t min_cleared;
	char min_name[NACRE_CL_USER_MAX + 1];
	uint32_t max_id;
	int settings;
	uint64_t mask;
	uint32_t xflags, lastuser;
};

static int scan_one(void *arg, const char *name, const void *rec, size_t len)
{
	struct user_scan *s = arg;
	uint64_t cleared;
	uint32_t id;

	if (!strcmp(name, CL_SETTINGS_KEY)) {
		struct wire_cursor c;
		wire_cursor_init_read(&c, rec, len);
		uint16_t ver = wire_get_u16(&c);
		s->mask = wire_get_u64(&c);
		s->xflags = wire_get_u32(&c);
		s->lastuser = wire_get_u32(&c);
		if (wire_cursor_ok(&c) && ver == CL_SETTINGS_VERSION)
			s->settings = 1;
		else
			LOG_ERR("changelog", "ignoring a corrupt changelog settings record");
		return 0;
	}
	if (!is_user_name(name, &id) || strlen(name) > NACRE_CL_USER_MAX ||
	    user_decode(rec, len, &cleared)) {
		LOG_ERR("changelog", "ignoring a corrupt changelog user record '%s'", name);
		return 0;
	}
	if (id > s->max_id)
		s->max_id = id;
	if (s->n == 0 || cleared < s->min_cleared) {
		s->min_cleared = cleared;
		str_copy(s->min_name, name, sizeof(s->min_name));
	}
	s->n++;
	return 0;
}

static int scan_users(struct mds_txn *txn, struct user_scan *s)
{
	memset(s, 0, sizeof(*s));
	return mds_db_cl_user_iter(txn, scan_one, s);
}

/* Frees what every user cleared (everything when no user is left), remembering the next
 * index so that it is never handed out again. */
static int purge(struct mds_changelog *cl, struct mds_txn *txn)
{
	struct user_scan s;
	uint64_t first, last, next = load64(&cl->next);
	int rc = scan_users(txn, &s);

	if (rc)
		return rc;
	uint64_t upto = s.n ? s.min_cleared : UINT64_MAX;
	if (cl->first == 0 || cl->first > upto) {
		__atomic_store_n(&cl->nusers, s.n, __ATOMIC_RELEASE);
		return 0; /* nothing to free */
	}
	rc = mds_db_cl_purge(txn, upto, NULL);
	if (!rc)
		rc = mds_db_cl_next_put(txn, next);
	if (!rc)
		rc = mds_db_cl_bounds(txn, &first, &last);
	if (rc)
		return rc;
	store64(&cl->first, first);
	__atomic_store_n(&cl->nusers, s.n, __ATOMIC_RELEASE);
	return 0;
}

/* The size cap: the user holding the oldest records goes, as Lustre's changelog GC does. */
static int enforce_cap(struct mds_changelog *cl, struct mds_txn *txn)
{
	uint64_t next = load64(&cl->next);

	while (cl->max_records && cl->first && next - cl->first > cl->max_records) {
		struct user_scan s;
		int rc = scan_users(txn, &s);
		if (rc)
			return rc;
		if (s.n == 0)
			return purge(cl, txn);
		rc = mds_db_cl_user_del(txn, s.min_name);
		if (rc)
			return rc;
		LOG_WARN("changelog", "%s-MDT0000: changelog user %s deregistered: the changelog "
			 "holds %" PRIu64 " records, over the cap of %" PRIu64 " "
			 "(--changelog-max-records), and %s had cleared only up to %" PRIu64,
			 cl->m->fsname, s.min_name, next - cl->first, cl->max_records, s.min_name,
			 s.min_cleared);
		uint64_t before = cl->first;
		rc = purge(cl, txn);
		if (rc)
			return rc;
		if (cl->first == before && __atomic_load_n(&cl->nusers, __ATOMIC_ACQUIRE))
			continue; /* another user holds the same records: it goes too */
	}
	return 0;
}

/* ---------------- life ---------------- */

/* (Re)reads users, mask and the index range from txn: at start, and after a change of
 * them failed to commit (what a writer operation set in memory did not happen), then in a
 * writer operation of its own. */
static int load(struct mds_changelog *cl, struct mds_txn *txn, int at_start)
{
	struct user_scan s;
	uint64_t first, last, next;
	int rc = scan_users(txn, &s);

	if (!rc)
		rc = mds_db_cl_bounds(txn, &first, &last);
	if (!rc)
		rc = mds_db_cl_next_get(txn, &next);
	if (rc)
		return rc;
	store64(&cl->mask, s.settings ? s.mask & MDS_CL_ALLMASK : MDS_CL_DEFMASK);
	__atomic_store_n(&cl->xflags, s.settings ? s.xflags : 0, __ATOMIC_RELEASE);
	cl->lastuser = s.lastuser > s.max_id ? s.lastuser : s.max_id;
	__atomic_store_n(&cl->nusers, s.n, __ATOMIC_RELEASE);
	store64(&cl->first, first);
	next = last + 1 > next ? last + 1 : next;
	if (next == 0)
		next = 1;
	if (at_start || next > load64(&cl->next))
		store64(&cl->next, next); /* never back: a failed commit leaves a gap */
	if (at_start && (s.n || first))
		LOG_INFO("changelog", "changelog: %u users, records %" PRIu64 "..%" PRIu64, s.n,
			 first, last);
	return 0;
}

int mds_changelog_create(struct mds *m, uint64_t max_records, struct mds_changelog **out)
{
	struct mds_changelog *cl = calloc(1, sizeof(*cl));

	if (!cl)
		return -ENOMEM;
	cl->m = m;
	cl->max_records = max_records;
	struct mds_txn *txn;
	int rc = mds_feed_create(&cl->feed);
	if (rc) {
		free(cl);
		return rc;
	}
	rc = mds_txn_begin_read(m->db, &txn);
	if (!rc) {
		rc = load(cl, txn, 1);
		mds_txn_abort(txn);
	}
	if (rc) {
		mds_feed_destroy(cl->feed);
		free(cl);
		return rc;
	}
	*out = cl;
	return 0;
}

void mds_changelog_destroy(struct mds_changelog *cl)
{
	if (cl)
		mds_feed_destroy(cl->feed);
	free(cl);
}

/* ---------------- writing ---------------- */

int mds_changelog_wants(const struct mds_changelog *cl, uint32_t type)
{
	if (!cl || !__atomic_load_n(&cl->nusers, __ATOMIC_ACQUIRE) || type >= NACRE_CL_LAST)
		return 0;
	return (load64(&cl->mask) >> type) & 1;
}

uint64_t mds_changelog_changes(const struct mds_changelog *cl)
{
	return cl ? __atomic_load_n(&cl->changes, __ATOMIC_ACQUIRE) : 0;
}

struct mds_feed *mds_changelog_feed(const struct mds_changelog *cl)
{
	return cl ? cl->feed : NULL;
}

/* The hook every change passes, recorded or not: counts it and feeds the policy the
 * inodes it touched (tfid, and for a rename sfid; either may be NULL). */
static void count_change(struct mds_changelog *cl, const struct nacre_fid *tfid,
			 const struct nacre_fid *sfid)
{
	if (!cl)
		return;
	__atomic_add_fetch(&cl->changes, 1, __ATOMIC_RELEASE);
	mds_feed_note(cl->feed, tfid);
	mds_feed_note(cl->feed, sfid);
}

int mds_changelog_add(struct mds_changelog *cl, struct mds_txn *txn,
		      struct nacre_changelog_rec *r)
{
	uint8_t buf[WIRE_CL_REC_MAX + 2];

	count_change(cl, &r->tfid, &r->sfid);
	if (!mds_changelog_wants(cl, r->type))
		return 0;
	uint32_t xf = __atomic_load_n(&cl->xflags, __ATOMIC_ACQUIRE);
	r->xflags &= xf;
	if (!(r->xflags & NACRE_CLFE_UIDGID))
		r->uid = r->gid = 0;
	if (!(r->xflags & NACRE_CLFE_XATTR))
		r->xattr[0] = '\0';
	if (!r->jobid[0])
		r->flags &= ~NACRE_CLF_JOBID;
	if (r->xflags)
		r->flags |= NACRE_CLF_EXTRA_FLAGS;
	else
		r->flags &= ~NACRE_CLF_EXTRA_FLAGS;
	if (r->time.sec == 0 && r->time.nsec == 0)
		r->time = time_now();
	uint64_t index = load64(&cl->next);
	r->index = index;
	int len = mds_changelog_rec_encode(r, buf, sizeof(buf));
	if (len < 0)
		return len;
	int rc = mds_db_cl_put(txn, index, buf, (size_t)len);
	if (rc)
		return rc;
	store64(&cl->next, index + 1);
	if (!cl->first)
		store64(&cl->first, index);
	return enforce_cap(cl, txn);
}

void mds_changelog_caller(struct nacre_changelog_rec *r, const struct nacre_cred *cr)
{
	r->xflags |= NACRE_CLFE_UIDGID;
	r->uid = cr->uid;
	r->gid = cr->gid;
	if (cr->jobid[0]) {
		r->flags |= NACRE_CLF_JOBID;
		str_copy(r->jobid, cr->jobid, sizeof(r->jobid));
	}
}

int mds_changelog_note(struct mds_changelog *cl, struct mds_txn *txn, uint32_t type,
		       uint32_t flags, const struct nacre_fid *tfid, const struct nacre_fid *pfid,
		       const char *name, const struct nacre_cred *cr)
{
	if (!mds_changelog_wants(cl, type)) {
		count_change(cl, tfid, NULL);
		return 0;
	}
	struct nacre_changelog_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->type = type;
	r->flags = flags;
	if (tfid)
		r->tfid = *tfid;
	if (pfid)
		r->pfid = *pfid;
	if (name)
		str_copy(r->name, name, sizeof(r->name));
	if (cr)
		mds_changelog_caller(r, cr);
	int rc = mds_changelog_add(cl, txn, r);
	free(r);
	return rc;
}

int mds_changelog_hsm(struct mds_changelog *cl, struct mds_txn *txn, uint32_t event, int err,
		      int dirty, const struct nacre_fid *fid)
{
	uint32_t e = (uint32_t)(err < 0 ? -err : err);

	if (e > 0x7e)
		e = 0x7f; /* Lustre's CLF_HSM_ERROVERFLOW */
	uint32_t flags = e | (event & 7u) << 7 | (dirty ? 1u : 0u) << 10;
	return mds_changelog_note(cl, txn, NACRE_CL_HSM, flags, fid, NULL, NULL, NULL);
}

/* ---------------- requests ---------------- */

struct cl_op {
	struct mds_changelog *cl;
	const struct wire_changelog_req *r;
	uint16_t opcode;
	char user[NACRE_CL_USER_MAX + 1]; /* the user concerned, for the reply */
};

static int register_op(struct mds_txn *txn, void *arg)
{
	struct cl_op *o = arg;
	struct mds_changelog *cl = o->cl;
	uint32_t id = cl->lastuser + 1;

	if (id == 0)
		return -ENOSPC;
	snprintf(o->user, sizeof(o->user), "cl%u", id);
	/* a new user has seen nothing yet and needs nothing before now */
	int rc = user_put(txn, o->user, load64(&cl->next) - 1);
	if (rc)
		return rc;
	cl->lastuser = id;
	rc = settings_put(cl, txn);
	if (!rc)
		__atomic_add_fetch(&cl->nusers, 1, __ATOMIC_ACQ_REL);
	return rc;
}

static int deregister_op(struct mds_txn *txn, void *arg)
{
	struct cl_op *o = arg;
	int rc = mds_db_cl_user_del(txn, o->r->user);

	if (rc)
		return rc;
	str_copy(o->user, o->r->user, sizeof(o->user));
	return purge(o->cl, txn);
}

struct find_user {
	const char *name;
	uint64_t cleared;
	int found;
};

static int find_one(void *arg, const char *name, const void *rec, size_t len)
{
	struct find_user *f = arg;

	if (strcmp(name, f->name) != 0)
		return 0;
	if (user_decode(rec, len, &f->cleared))
		return -EIO;
	f->found = 1;
	return 1;
}

static int clear_op(struct mds_txn *txn, void *arg)
{
	struct cl_op *o = arg;
	struct mds_changelog *cl = o->cl;
	struct find_user f = {.name = o->r->user};
	uint64_t last = load64(&cl->next) - 1, end = o->r->end;

	int rc = mds_db_cl_user_iter(txn, find_one, &f);
	if (rc < 0)
		return rc;
	if (!f.found)
		return -ENOENT;
	if (end == 0)
		end = last;
	if (end > last)
		return -EINVAL; /* lfs: "record out of range" */
	str_copy(o->user, o->r->user, sizeof(o->user));
	if (end <= f.cleared)
		return 0;
	rc = user_put(txn, o->r->user, end);
	return rc ? rc : purge(cl, txn);
}

static int mask_op(struct mds_txn *txn, void *arg)
{
	struct cl_op *o = arg;
	struct mds_changelog *cl = o->cl;

	if (o->r->flags & WIRE_CL_SET_MASK)
		store64(&cl->mask, (o->r->mask & MDS_CL_ALLMASK) | (1ull << NACRE_CL_MARK));
	if (o->r->flags & WIRE_CL_SET_XFLAGS)
		__atomic_store_n(&cl->xflags, o->r->xflags & (NACRE_CLFE_UIDGID | NACRE_CLFE_XATTR),
				 __ATOMIC_RELEASE);
	return settings_put(cl, txn);
}

struct read_enc {
	struct wire_cursor *c;
	uint64_t end;
	int jobids; /* the reader decodes job ids (WIRE_FEAT_JOBID) */
	uint32_t max, used, count;
	int full, corrupt;
	struct nacre_changelog_rec r;
};

static int read_one(void *arg, uint64_t index, const void *rec, size_t len)
{
	struct read_enc *e = arg;

	if (e->end && index > e->end)
		return 1;
	if (mds_changelog_rec_decode(rec, len, &e->r) || e->r.index != index) {
		e->corrupt++;
		return 0;
	}
	if (!e->jobids)
		e->r.flags &= ~NACRE_CLF_JOBID; /* an older reader would misread the record */
	uint32_t sz = WIRE_CL_REC_MIN + (uint32_t)(strlen(e->r.name) + strlen(e->r.sname) +
						   strlen(e->r.xattr));
	if (e->r.flags & NACRE_CLF_JOBID)
		sz += 2 + (uint32_t)strlen(e->r.jobid);
	if (e->count > 0 && e->used + sz > e->max) {
		e->full = 1;
		return 1;
	}
	wire_cl_rec_put(e->c, &e->r);
	e->used += sz;
	e->count++;
	return 0;
}

static int do_read(struct mds *m, const struct rpc_request *req,
		   const struct wire_changelog_req *r, struct rpc_reply *rep)
{
	struct mds_changelog *cl = m->changelog;
	struct wire_changelog_rep head = {0};
	struct read_enc *e = calloc(1, sizeof(*e));
	struct mds_txn *txn;

	if (!e)
		return -ENOMEM;
	e->c = &rep->body;
	e->end = r->end;
	e->jobids = (req->features & WIRE_FEAT_JOBID) != 0;
	e->max = r->max_bytes && r->max_bytes < WIRE_CL_READ_MAX_BYTES ? r->max_bytes
								       : WIRE_CL_READ_MAX_BYTES;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		goto out;
	head.mask = load64(&cl->mask);
	head.xflags = __atomic_load_n(&cl->xflags, __ATOMIC_ACQUIRE);
	head.nusers = __atomic_load_n(&cl->nusers, __ATOMIC_ACQUIRE);
	head.last = load64(&cl->next) - 1;
	uint64_t last;
	rc = mds_db_cl_bounds(txn, &head.first, &last);
	size_t pos = wire_cursor_pos(&rep->body);
	wire_changelog_rep_encode(&rep->body, &head);
	if (!rc)
		rc = mds_db_cl_iter(txn, r->start, read_one, e);
	mds_txn_abort(txn);
	if (rc < 0)
		goto out;
	rc = 0;
	if (e->corrupt)
		LOG_RATELIMITED(LOG_LVL_ERR, "changelog", "skipped %d corrupt changelog records",
				e->corrupt);
	head.count = e->count;
	head.eof = !e->full;
	wire_changelog_rep_patch(&rep->body, pos, &head);
	if (!wire_cursor_ok(&rep->body))
		rc = -EOVERFLOW;
out:
	free(e);
	return rc;
}

static int reload_op(struct mds_txn *txn, void *arg)
{
	return load(arg, txn, 0);
}

int mds_changelog_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	static const char *const what[] = {"register a changelog user",
					   "deregister a changelog user", "read the changelog",
					   "clear changelog records", "set the changelog mask"};
	uint16_t op = req->hdr->opcode;
	struct wire_changelog_req r;
	struct wire_cursor c;
	int rc;

	if (op < WIRE_OP_MDS_CL_REGISTER || op > WIRE_OP_MDS_CL_MASK)
		return -EOPNOTSUPP;
	rc = rpc_require_role(req, RPC_ROLES_ADMIN, what[op - WIRE_OP_MDS_CL_REGISTER]);
	if (rc)
		return rc;
	if (!m->changelog)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_changelog_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		return -EPROTO;
	if (op == WIRE_OP_MDS_CL_READ)
		return do_read(m, req, &r, rep);
	if ((op == WIRE_OP_MDS_CL_DEREGISTER || op == WIRE_OP_MDS_CL_CLEAR) &&
	    !is_user_name(r.user, NULL))
		return -ENOENT;
	struct cl_op o = {.cl = m->changelog, .r = &r, .opcode = op};
	mds_op_fn fn = op == WIRE_OP_MDS_CL_REGISTER     ? register_op
		       : op == WIRE_OP_MDS_CL_DEREGISTER ? deregister_op
		       : op == WIRE_OP_MDS_CL_CLEAR      ? clear_op
							 : mask_op;
	rc = mds_writer_submit(m->writer, fn, &o);
	if (rc && rc != -ENOENT && rc != -EINVAL) /* not committed: forget what it set */
		mds_writer_submit(m->writer, reload_op, m->changelog);
	if (rc)
		return rc;
	if (op == WIRE_OP_MDS_CL_REGISTER)
		LOG_INFO("changelog", "%s (%s) registered changelog user %s", req->peer,
			 req->key_name[0] ? req->key_name : "cluster key", o.user);
	else if (op == WIRE_OP_MDS_CL_DEREGISTER)
		LOG_INFO("changelog", "%s (%s) deregistered changelog user %s", req->peer,
			 req->key_name[0] ? req->key_name : "cluster key", o.user);
	struct wire_changelog_rep h = {0};
	str_copy(h.user, o.user, sizeof(h.user));
	h.mask = load64(&m->changelog->mask);
	h.xflags = __atomic_load_n(&m->changelog->xflags, __ATOMIC_ACQUIRE);
	h.nusers = __atomic_load_n(&m->changelog->nusers, __ATOMIC_ACQUIRE);
	h.first = load64(&m->changelog->first);
	h.last = load64(&m->changelog->next) - 1;
	h.eof = 1;
	wire_changelog_rep_encode(&rep->body, &h);
	return wire_cursor_ok(&rep->body) ? 0 : -EOVERFLOW;
}
