/* find.c - FIND: a page of a namespace scan with predicates (see find.h). */
#include "mds/find.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "mds/db.h"
#include "mds/inode.h"
#include "mds/ns.h"
#include "mds/perm.h"

/* Entries examined per page at most: a page that matches little still returns soon, and
 * its read transaction stays short. */
#define FIND_BUDGET 20000u
#define FIND_DEPTH_MAX (NACRE_PATH_MAX / 2 + 1)

/* As lfs's and GNU find's comparisons: the value is rounded up to units for sizes (margin
 * = unit), and ages down to units; sign -1 less, 0 equal, 1 more. */
static int cmp_ceil(const struct wire_find_cmp *c, uint64_t v)
{
	uint64_t n = v / c->unit + (v % c->unit ? 1 : 0);

	if (c->sign < 0)
		return n < c->value;
	if (c->sign > 0)
		return n > c->value;
	return n == c->value;
}

static int cmp_age(const struct wire_find_cmp *c, const struct nacre_time *now,
		   const struct nacre_time *t)
{
	/* the age in nanoseconds, counted in units rounded down (or up); a file from the
	 * future has a negative age */
	int64_t age = (now->sec - t->sec) * 1000000000 + ((int64_t)now->nsec - t->nsec);
	int64_t u = (int64_t)c->unit * 1000000000, n;

	if (c->up)
		age = -age; /* ceil(a / u) = -floor(-a / u) */
	if (age >= 0)
		n = age / u;
	else
		n = -((-age + u - 1) / u);
	if (c->up)
		n = -n;
	if (c->sign < 0)
		return n < (int64_t)c->value;
	if (c->sign > 0)
		return n > (int64_t)c->value;
	return n == (int64_t)c->value;
}

static int has_ost(const struct wire_find_query *q, int has_layout,
		   const struct nacre_layout *l, const struct nacre_attr *a)
{
	if (!has_layout || !S_ISREG(a->mode) || (a->hsm_state & NACRE_HS_RELEASED))
		return 0;
	for (uint32_t i = 0; i < l->nosts; i++)
		for (uint32_t j = 0; j < q->nosts; j++)
			if (l->ost_idx[i] == q->osts[j])
				return 1;
	return 0;
}

static int layout_of(const struct wire_find_query *q, int has_layout,
		     const struct nacre_layout *l, const struct nacre_attr *a)
{
	uint32_t have = 0;

	if (S_ISREG(a->mode) && (a->hsm_state & NACRE_HS_RELEASED))
		have |= WIRE_FIND_LAYOUT_RELEASED;
	if (has_layout && l->pattern == NACRE_PATTERN_RAID0)
		have |= WIRE_FIND_LAYOUT_RAID0;
	return (have & q->layouts) != 0;
}

/* Every -newerXY test: the entry's time X is after the reference (not after, with neg). */
static int newer_all(const struct wire_find_query *q, const struct nacre_attr *a,
		     const struct mds_find_more *more)
{
	for (uint32_t i = 0; i < q->nnewer; i++) {
		const struct wire_find_newer *n = &q->newer_xy[i];
		const struct nacre_time *t = n->which == WIRE_FIND_TIME_ATIME	? &a->atime
					     : n->which == WIRE_FIND_TIME_CTIME ? &a->ctime
					     : n->which == WIRE_FIND_TIME_BTIME ? &more->btime
										: &a->mtime;
		int after = t->sec > n->t.sec || (t->sec == n->t.sec && t->nsec > n->t.nsec);
		if (after == n->neg)
			return 0;
	}
	return 1;
}

static int one(const struct wire_find_query *q, uint32_t p, const struct nacre_attr *a,
	       const struct mds_find_more *more, int has_layout, const struct nacre_layout *l,
	       const char *name)
{
	switch (p) {
	case WIRE_FINDP_NAME:
		return fnmatch(q->name, name, q->name_icase ? FNM_CASEFOLD : 0) == 0;
	case WIRE_FINDP_TYPE:
		return (q->types >> ((a->mode & S_IFMT) >> 12)) & 1;
	case WIRE_FINDP_SIZE:
		return cmp_ceil(&q->size, a->size);
	case WIRE_FINDP_ATIME:
		return cmp_age(&q->atime, &q->now, &a->atime);
	case WIRE_FINDP_MTIME:
		return cmp_age(&q->mtime, &q->now, &a->mtime);
	case WIRE_FINDP_CTIME:
		return cmp_age(&q->ctime, &q->now, &a->ctime);
	case WIRE_FINDP_NEWER:
		return a->mtime.sec > q->newer.sec ||
		       (a->mtime.sec == q->newer.sec && a->mtime.nsec > q->newer.nsec);
	case WIRE_FINDP_UID:
		return a->uid == q->uid;
	case WIRE_FINDP_GID:
		return a->gid == q->gid;
	case WIRE_FINDP_PERM: {
		uint32_t m = a->mode & 07777;
		if (q->perm_kind == WIRE_FIND_PERM_ALL)
			return (m & q->perm) == q->perm;
		if (q->perm_kind == WIRE_FIND_PERM_ANY)
			return q->perm == 0 || (m & q->perm) != 0;
		return m == q->perm;
	}
	case WIRE_FINDP_STRIPE_COUNT:
		return has_layout && !(S_ISREG(a->mode) && (a->hsm_state & NACRE_HS_RELEASED)) &&
		       l->stripe_count > 0 && cmp_ceil(&q->stripe_count, (uint64_t)l->stripe_count);
	case WIRE_FINDP_STRIPE_SIZE:
		return has_layout && l->stripe_size > 0 && cmp_ceil(&q->stripe_size, l->stripe_size);
	case WIRE_FINDP_OST:
		return has_ost(q, has_layout, l, a);
	case WIRE_FINDP_POOL:
		return q->pool[0] == 0; /* nacre has no OST pools: every file is in pool "" */
	case WIRE_FINDP_LAYOUT:
		return layout_of(q, has_layout, l, a);
	case WIRE_FINDP_HSM:
		return S_ISREG(a->mode) && q->hsm && (a->hsm_state & q->hsm) == q->hsm;
	case WIRE_FINDP_FID:
		return fid_eq(&a->fid, &q->fid);
	case WIRE_FINDP_EMPTY:
		return S_ISREG(a->mode) ? a->size == 0 : S_ISDIR(a->mode) && more->nentries == 0;
	case WIRE_FINDP_LINKS:
		return cmp_ceil(&q->links, a->nlink);
	case WIRE_FINDP_BLOCKS:
		return cmp_ceil(&q->blocks, a->blocks * 512);
	case WIRE_FINDP_PROJID:
		return more->projid == q->projid;
	case WIRE_FINDP_NEWER_XY:
		return newer_all(q, a, more);
	case WIRE_FINDP_BTIME:
		return cmp_age(&q->btime, &q->now, &more->btime);
	default:
		return 1;
	}
}

int mds_find_match(const struct wire_find_query *q, const struct nacre_attr *a,
		   const struct mds_find_more *more, int has_layout,
		   const struct nacre_layout *l, const char *name, uint32_t depth)
{
	if ((q->preds & WIRE_FINDP_MINDEPTH) && depth < q->mindepth)
		return 0;
	if ((q->preds & WIRE_FINDP_MAXDEPTH) && depth > q->maxdepth)
		return 0;
	for (uint32_t p = 1; p & WIRE_FINDP_ALL_; p <<= 1) {
		if (!(q->preds & p) || p == WIRE_FINDP_MINDEPTH || p == WIRE_FINDP_MAXDEPTH)
			continue;
		int r = one(q, p, a, more, has_layout, l, name);
		if (q->neg & p)
			r = !r;
		if (!r)
			return 0;
	}
	return 1;
}

/* The program of find_expr over the leaves (the decoder checked it is well formed). */
static int expr_match(const struct wire_find_req *r, const struct nacre_attr *a,
		      const struct mds_find_more *more, int has_layout,
		      const struct nacre_layout *l, const char *name)
{
	uint8_t stack[WIRE_FIND_OPS_MAX];
	uint32_t sp = 0;

	for (uint32_t i = 0; i < r->nops && i < WIRE_FIND_OPS_MAX; i++) {
		uint8_t op = r->ops[i];
		if (op < WIRE_FIND_OP_AND && op < r->nleaves)
			stack[sp++] =
				(uint8_t)mds_find_match(&r->leaves[op], a, more, has_layout, l, name, 0);
		else if (op == WIRE_FIND_OP_NOT && sp >= 1)
			stack[sp - 1] = !stack[sp - 1];
		else if (op == WIRE_FIND_OP_AND && sp >= 2)
			sp--, stack[sp - 1] = stack[sp - 1] && stack[sp];
		else if (op == WIRE_FIND_OP_OR && sp >= 2)
			sp--, stack[sp - 1] = stack[sp - 1] || stack[sp];
		else
			return 0;
	}
	return sp == 1 && stack[0];
}

int mds_find_match_req(const struct wire_find_req *r, const struct nacre_attr *a,
		       const struct mds_find_more *more, int has_layout,
		       const struct nacre_layout *l, const char *name, uint32_t depth)
{
	if (!mds_find_match(&r->q, a, more, has_layout, l, name, depth))
		return 0;
	return !r->nleaves || expr_match(r, a, more, has_layout, l, name);
}

struct scan {
	struct mds_txn *txn;
	const struct nacre_cred *cr;
	const struct wire_find_req *r;
	const struct wire_find_query *q;
	struct wire_cursor *ents; /* the page's entries */
	size_t max, used;
	uint32_t count, examined;
	char path[NACRE_PATH_MAX + 1]; /* relative path of the directory being listed */
	size_t plen;
	struct mds_inode ino;  /* scratch: the entry being looked at */
	struct wire_find_ent ent;
	struct mds_find_more more; /* of ino */
	/* the resume path, split: component i is res + res_off[i] */
	char *res;
	uint32_t *res_off;
	uint32_t nres;
	/* where the page stopped (the entry the next page starts at) */
	int stopped;
	char stop_path[NACRE_PATH_MAX + 1];
};

struct level {
	struct scan *s;
	uint32_t depth;     /* of the directory's entries */
	uint32_t res_level; /* the resume component for this directory, or UINT32_MAX */
	uint64_t res_hash;
	int err;
};

static int scan_dir(struct scan *s, const struct nacre_fid *dir, uint32_t depth,
		    uint32_t res_level);

static int may_scan(struct scan *s, const struct mds_inode *dir)
{
	return mds_perm_check(s->cr, dir, MDS_MAY_READ | MDS_MAY_EXEC);
}

/* Sets the stop point at name in the current directory. */
static int stop_at(struct scan *s, const char *name)
{
	size_t nl = strlen(name);

	if (s->plen + 1 + nl > NACRE_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(s->stop_path, s->path, s->plen);
	size_t pos = s->plen;
	if (pos)
		s->stop_path[pos++] = '/';
	memcpy(s->stop_path + pos, name, nl + 1);
	s->stopped = 1;
	return 1;
}

/* Appends the entry in s->ent if it fits with extra more bytes; 1 if full. */
static int emit(struct scan *s, size_t extra)
{
	size_t sz = wire_find_ent_size(&s->ent);

	if (s->used + sz + extra > s->max)
		return 1;
	wire_find_ent_put(s->ents, &s->ent);
	s->used += sz;
	s->count++;
	return wire_cursor_ok(s->ents) ? 0 : -ENOMEM;
}

/* Fills s->ent from s->ino, with the relative path path. */
static void fill_ent(struct scan *s, const char *path, int32_t err)
{
	struct wire_find_ent *e = &s->ent;

	str_copy(e->path, path, sizeof(e->path));
	e->err = err;
	mds_inode_to_attr(&s->ino, &e->attr);
	s->more.projid = s->ino.projid;
	s->more.nentries = s->ino.nentries;
	s->more.btime = s->ino.has_btime ? s->ino.btime : s->ino.ctime;
	e->has_layout = s->ino.has_layout && (S_ISREG(s->ino.mode) || S_ISDIR(s->ino.mode));
	if (e->has_layout)
		e->layout = s->ino.layout;
	else
		memset(&e->layout, 0, sizeof(e->layout));
	if (S_ISLNK(s->ino.mode))
		str_copy(e->target, s->ino.target, sizeof(e->target));
	else
		e->target[0] = 0;
}

/* Looks at one entry (s->ino loaded) at depth, named name in the current directory, whose
 * relative path is rel; enters it if it is a directory. resume: the entry is a directory
 * the scan was inside (do not report it again); res_next: the resume component below. */
static int visit(struct scan *s, const char *name, uint32_t depth, int resume,
		 uint32_t res_next)
{
	const struct wire_find_query *q = s->q;
	int is_dir = S_ISDIR(s->ino.mode);
	int enter = is_dir && (!(q->preds & WIRE_FINDP_MAXDEPTH) || depth < q->maxdepth);
	int denied = 0, rc;
	size_t nl = strlen(name);
	size_t old = s->plen;

	/* the relative path of the entry */
	if (s->plen + (s->plen ? 1 : 0) + nl > NACRE_PATH_MAX)
		return 0; /* deeper than a path can say: not reachable by path either */
	if (enter)
		denied = may_scan(s, &s->ino);
	if (s->plen)
		s->path[s->plen++] = '/';
	memcpy(s->path + s->plen, name, nl + 1);
	s->plen += nl;
	if (!resume) {
		fill_ent(s, s->path, 0);
		int match = mds_find_match_req(s->r, &s->ent.attr, &s->more, s->ent.has_layout,
					       &s->ent.layout, name, depth);
		size_t err_sz = enter && denied ? WIRE_FIND_ENT_MIN + s->plen : 0;
		rc = 0;
		if (match)
			rc = emit(s, err_sz);
		else if (s->used + err_sz > s->max)
			rc = 1;
		if (rc == 0 && enter && denied) {
			fill_ent(s, s->path, denied);
			s->ent.has_layout = 0;
			s->ent.target[0] = 0;
			rc = emit(s, 0);
		}
		if (rc) {
			s->plen = old;
			s->path[old] = 0;
			return rc < 0 ? rc : stop_at(s, name);
		}
	}
	rc = 0;
	if (enter && !denied) {
		struct nacre_fid fid = s->ino.fid;
		rc = scan_dir(s, &fid, depth + 1, res_next);
	}
	s->plen = old;
	s->path[old] = 0;
	return rc;
}

static int entry_cb(void *arg, const struct nacre_dirent *d)
{
	struct level *lv = arg;
	struct scan *s = lv->s;
	int resume = 0;
	uint32_t res_next = UINT32_MAX;

	if (lv->res_level != UINT32_MAX) {
		const char *rn = s->res + s->res_off[lv->res_level];
		int last = lv->res_level + 1 == s->nres;
		if (d->cookie == lv->res_hash) {
			int c = strcmp(d->name, rn);
			if (c < 0)
				return 0; /* reported by an earlier page */
			if (c == 0 && !last) {
				resume = 1;
				res_next = lv->res_level + 1;
			}
		}
		lv->res_level = UINT32_MAX; /* past the resume point from here on */
	}
	if (s->plen + 1 + strlen(d->name) > NACRE_PATH_MAX)
		return 0; /* deeper than a path can say: not reachable by a path either */
	if (!resume && s->examined >= FIND_BUDGET)
		return stop_at(s, d->name); /* even an empty page ends: the client asks again */
	s->examined++;
	int rc = mds_db_inode_get(s->txn, &d->fid, &s->ino);
	if (rc == -ENOENT)
		return 0; /* removed under us */
	if (rc)
		return rc;
	if (resume && !S_ISDIR(s->ino.mode))
		return 0; /* the directory we were in was replaced: its subtree is gone */
	rc = visit(s, d->name, lv->depth, resume, res_next);
	if (rc < 0) {
		lv->err = rc;
		return 1;
	}
	return rc;
}

static int scan_dir(struct scan *s, const struct nacre_fid *dir, uint32_t depth,
		    uint32_t res_level)
{
	struct level lv = {.s = s, .depth = depth, .res_level = UINT32_MAX};
	uint64_t start = 0;

	if (depth > FIND_DEPTH_MAX)
		return 0;
	if (res_level != UINT32_MAX && res_level < s->nres) {
		const char *rn = s->res + s->res_off[res_level];
		lv.res_level = res_level;
		lv.res_hash = mds_db_name_hash(rn, strlen(rn));
		start = lv.res_hash;
	}
	int rc = mds_db_dentry_iter(s->txn, dir, start, entry_cb, &lv);
	if (lv.err)
		return lv.err;
	return rc;
}

/* Splits the cursor path into components (in place in a copy). */
static int split_resume(struct scan *s, const char *path)
{
	size_t len = strlen(path);
	s->res = malloc(len + 1);
	s->res_off = malloc(sizeof(*s->res_off) * (len / 2 + 2));
	if (!s->res || !s->res_off)
		return -ENOMEM;
	memcpy(s->res, path, len + 1);
	s->nres = 0;
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s->res[j] != '/')
			j++;
		if (j == i || j - i > NACRE_NAME_MAX)
			return -EINVAL;
		s->res[j] = 0;
		s->res_off[s->nres++] = (uint32_t)i;
		i = j + 1;
	}
	return s->nres ? 0 : -EINVAL;
}

int mds_find(struct mds *m, const struct wire_find_req *r, struct wire_cursor *out)
{
	if (r->max_bytes < WIRE_FIND_ENT_MAX)
		return -EINVAL; /* too small for one entry: the caller could never progress */
	struct scan *s = calloc(1, sizeof(*s));
	struct wire_cursor ents;
	int rc;

	if (!s)
		return -ENOMEM;
	wire_cursor_init_dyn(&ents, WIRE_BODY_MAX);
	s->ents = &ents;
	s->cr = &r->cred;
	s->r = r;
	s->q = &r->q;
	s->max = r->max_bytes;
	if (r->cur.state == WIRE_FIND_CUR_RESUME) {
		rc = split_resume(s, r->cur.path);
		if (rc)
			goto out;
	}
	rc = mds_txn_begin_read(m->db, &s->txn);
	if (rc)
		goto out;
	struct nacre_fid start = r->fid;
	if (s->q->start_entry) {
		/* a file (or a symlink) given as the starting point: the entry of its directory,
		 * looked up as the kernel would */
		rc = mds_ns_get_dir(s->txn, &r->fid, &s->ino);
		if (!rc)
			rc = mds_perm_check(s->cr, &s->ino, MDS_MAY_EXEC);
		if (!rc)
			rc = mds_db_dentry_get(s->txn, &r->fid, s->q->start_name, &start, NULL);
		if (!rc)
			rc = mds_db_inode_get(s->txn, &start, &s->ino);
	} else {
		rc = mds_ns_get_dir(s->txn, &r->fid, &s->ino);
	}
	if (rc)
		goto out_abort;
	int is_dir = S_ISDIR(s->ino.mode);
	int denied = is_dir ? may_scan(s, &s->ino) : 0;
	int enter = is_dir && (!(s->q->preds & WIRE_FINDP_MAXDEPTH) || s->q->maxdepth > 0);
	if (r->cur.state == WIRE_FIND_CUR_BEGIN) {
		/* the starting point itself, at depth 0, under the name the caller gave */
		fill_ent(s, "", 0);
		if (mds_find_match_req(r, &s->ent.attr, &s->more, s->ent.has_layout,
				       &s->ent.layout, s->q->start_name, 0))
			rc = emit(s, 0);
		if (!rc && enter && denied) {
			fill_ent(s, "", denied);
			s->ent.has_layout = 0;
			rc = emit(s, 0);
		}
		if (!rc && enter && !denied)
			rc = scan_dir(s, &start, 1, UINT32_MAX);
	} else if (enter && !denied) {
		rc = scan_dir(s, &start, 1, 0);
	}
	if (rc > 0)
		rc = 0;
out_abort:
	mds_txn_abort(s->txn);
	if (!rc) {
		struct wire_find_rep h = {.count = s->count, .done = !s->stopped};
		if (s->stopped) {
			h.cur.state = WIRE_FIND_CUR_RESUME;
			str_copy(h.cur.path, s->stop_path, sizeof(h.cur.path));
		}
		wire_find_rep_encode(out, &h);
		wire_put_bytes(out, ents.buf, wire_cursor_pos(&ents));
		rc = wire_cursor_ok(out) ? 0 : -EOVERFLOW;
	}
out:
	wire_cursor_fini(&ents);
	free(s->res);
	free(s->res_off);
	free(s);
	return rc;
}
