/* lease_change.c - namespace changes this mount makes under its leases without waiting for
 * the MDS (lease.h, cl_lease_change): checked against what the lease knows, queued (wbq.h),
 * answered here. */
#include <errno.h>
#include <sys/stat.h>

#include "client/files.h"
#include "client/lease_int.h"
#include "common/fid.h"
#include "common/util.h"
#include "proto/wire.h"

/* d, if it is held, good, may be changed here and cr may change it as its owner. */
static struct cl_lease_dir *usable_dir(struct nacre_fs *fs, const struct nacre_cred *cr,
				       const struct nacre_fid *fid)
{
	struct cl_lease_dir *d = cl_lease_find(&fs->leases, fid);

	if (!d || !d->makes || !cl_lease_valid(fs, d) || cr->uid != d->uid ||
	    (d->mode & (S_IWUSR | S_IXUSR)) != (S_IWUSR | S_IXUSR))
		return NULL;
	return d;
}

/* The attributes the MDS gives what cr makes in d (mds_ns_create_txn): cr's ids, the
 * group and setgid bit of a setgid directory, times now. 0, or 0 with nothing done when
 * the MDS would decide something this mount cannot (a setgid file). */
static int make_attr(const struct cl_lease_dir *d, const struct nacre_cred *cr,
		     struct nacre_attr *a)
{
	uint32_t type = a->mode & S_IFMT;

	if (type != S_IFDIR && (a->mode & S_ISGID))
		return -EAGAIN; /* kept or dropped by group membership: the MDS says */
	a->uid = cr->uid;
	a->gid = cr->gid;
	if (d->mode & S_ISGID) {
		a->gid = d->gid;
		if (type == S_IFDIR)
			a->mode |= S_ISGID;
	}
	a->nlink = type == S_IFDIR ? 2 : 1;
	a->blksize = type == S_IFREG ? NACRE_STRIPE_SIZE_DEFAULT : 4096;
	if (type != S_IFLNK)
		a->size = 0;
	a->blocks = (a->size + 511) / 512;
	if (type != S_IFCHR && type != S_IFBLK)
		a->rdev = 0;
	a->atime = a->mtime = a->ctime = time_now();
	a->hsm_state = a->archive_id = 0;
	return 0;
}

static int make(struct nacre_fs *fs, const struct nacre_cred *cr, struct cl_lease_change *ch)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d = usable_dir(fs, cr, ch->parent), *sub = NULL;

	if (!d || make_attr(d, cr, ch->attr))
		return 0;
	if (cl_lease_name_find(d, ch->name))
		return -EEXIST; /* it knows every name there */
	if (S_ISDIR(ch->attr->mode)) {
		/* leased along with its parent by the MKDIR that makes it (mds_lease_made_dir) */
		sub = cl_lease_dir_new(ch->attr);
		if (!sub)
			return 0;
		sub->inherited = 1;
		sub->makes = 1;
		sub->parent = d->fid;
		sub->gen = d->gen;
		sub->granted_sent_ms = d->granted_sent_ms;
	}
	if (cl_lease_name_add(l, d, ch->name, &ch->attr->fid, ch->attr->mode & S_IFMT)) {
		cl_lease_dir_free(sub);
		return 0; /* full: the MDS makes it (the caller then gives the lease back) */
	}
	if (cl_wbq_add(fs, ch->opcode, ch->body, ch->parent, ch->name, d->granted_sent_ms)) {
		cl_lease_name_del(l, d, ch->name);
		cl_lease_dir_free(sub);
		return 0; /* not queued: the MDS makes it */
	}
	if (sub && cl_lease_insert(l, sub))
		cl_lease_dir_free(sub); /* held at the MDS, not here: its recall finds nothing */
	cl_lease_made_put(l, ch->parent, ch->attr);
	cl_lease_dir_touched(l, ch->parent, S_ISDIR(ch->attr->mode) ? 1 : 0);
	return 1;
}

static int remove_name(struct nacre_fs *fs, const struct nacre_cred *cr,
		       struct cl_lease_change *ch)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *d = usable_dir(fs, cr, ch->parent), *sub = NULL;
	int rmdir = ch->opcode == WIRE_OP_MDS_RMDIR;

	if (!d)
		return 0;
	struct cl_name *e = cl_lease_name_find(d, ch->name);
	if (!e)
		return -ENOENT;
	if (!e->type || ((d->mode & S_ISVTX) && cr->uid != d->uid))
		return 0; /* what it names is not known here: the MDS says */
	if (rmdir && e->type != S_IFDIR)
		return -ENOTDIR;
	if (!rmdir && e->type == S_IFDIR)
		return -EISDIR;
	if (rmdir) {
		/* empty if this mount holds it and knows no name in it */
		sub = cl_lease_find(l, &e->fid);
		if (!sub || !cl_lease_valid(fs, sub))
			return 0;
		if (sub->count)
			return -ENOTEMPTY;
	}
	if (cl_wbq_add(fs, ch->opcode, ch->body, ch->parent, ch->name, d->granted_sent_ms))
		return 0; /* not queued: the MDS removes it */
	cl_lease_made_del(l, &e->fid);
	cl_lease_name_del(l, d, ch->name);
	cl_lease_dir_touched(l, ch->parent, rmdir ? -1 : 0);
	if (sub) { /* gone: its lease is given back once the RMDIR reached the MDS */
		cl_lease_unlink(l, sub);
		sub->next = l->gone;
		__atomic_store_n(&l->gone, sub, __ATOMIC_RELAXED);
	}
	return 1;
}

static int rename_name(struct nacre_fs *fs, const struct nacre_cred *cr,
		       struct cl_lease_change *ch)
{
	struct cl_leases *l = &fs->leases;
	struct cl_lease_dir *s = usable_dir(fs, cr, ch->parent);
	struct cl_lease_dir *d = usable_dir(fs, cr, ch->dparent);

	if (!s || !d)
		return 0;
	struct cl_name *e = cl_lease_name_find(s, ch->name);
	if (!e)
		return -ENOENT;
	/* a directory's move may not go into itself, which only the MDS sees whole; a name
	 * that is there would be replaced, which it decides too */
	if (!e->type || e->type == S_IFDIR || cl_lease_name_find(d, ch->dname))
		return 0;
	struct nacre_fid fid = e->fid;
	uint32_t type = e->type;
	if (cl_lease_name_add(l, d, ch->dname, &fid, type))
		return 0;
	if (cl_wbq_add(fs, ch->opcode, ch->body, ch->parent, ch->name, s->granted_sent_ms)) {
		cl_lease_name_del(l, d, ch->dname);
		return 0; /* not queued: the MDS renames it */
	}
	cl_lease_name_del(l, s, ch->name);
	struct cl_made *m = cl_lease_made_find(l, &fid);
	if (m) { /* its ctime moves, as the MDS's rename moves it (the kernel asks next) */
		m->parent = *ch->dparent;
		m->attr.ctime = time_now();
		m->changed = __atomic_add_fetch(&l->clock, 1, __ATOMIC_ACQ_REL);
	}
	cl_lease_dir_touched(l, ch->parent, 0);
	cl_lease_dir_touched(l, ch->dparent, 0);
	return 1;
}

int cl_lease_change(struct nacre_fs *fs, const struct nacre_cred *cr, struct cl_lease_change *ch)
{
	struct cl_leases *l = &fs->leases;
	int rc;

	if (!cr || !__atomic_load_n(&l->n, __ATOMIC_RELAXED))
		return 0;
	cl_wbq_bound(fs);
	cl_lease_settle(fs);
	pthread_mutex_lock(&l->lock);
	switch (ch->opcode) {
	case WIRE_OP_MDS_MKDIR:
	case WIRE_OP_MDS_MKNOD:
	case WIRE_OP_MDS_SYMLINK:
	case WIRE_OP_MDS_CREATE:
		rc = make(fs, cr, ch);
		break;
	case WIRE_OP_MDS_UNLINK:
	case WIRE_OP_MDS_RMDIR:
		rc = remove_name(fs, cr, ch);
		break;
	case WIRE_OP_MDS_RENAME:
		rc = rename_name(fs, cr, ch);
		break;
	default:
		rc = 0;
	}
	if (rc == 1)
		l->made++;
	pthread_mutex_unlock(&l->lock);
	if (rc == 1)
		cl_wbq_durable(fs);
	return rc;
}

/* ---- attribute changes and getattr of what was made under a lease ---- */

static int in_group(const struct nacre_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return 1;
	for (uint32_t i = 0; i < cr->ngroups && i < NACRE_CRED_GROUPS; i++)
		if (cr->groups[i] == gid)
			return 1;
	return 0;
}

/* What the MDS's setattr (mds_perm_setattr, setattr_op) makes of a with sa by cr, into
 * out: 0, or -EAGAIN when this mount cannot tell (the MDS is asked). Root may change
 * anything; the owner its mode and times. */
static int predict(const struct nacre_cred *cr, const struct nacre_attr *a,
		   const struct nacre_setattr *sa, struct nacre_attr *out)
{
	const uint32_t mine = NACRE_SET_MODE | NACRE_SET_UID | NACRE_SET_GID | NACRE_SET_ATIME |
			      NACRE_SET_MTIME | NACRE_SET_ATIME_NOW | NACRE_SET_MTIME_NOW |
			      NACRE_SET_CTIME;
	int root = cr->uid == 0;
	struct nacre_time now = time_now();

	if (!sa->valid || (sa->valid & ~mine) || (!root && cr->uid != a->uid) ||
	    (!root && (sa->valid & (NACRE_SET_UID | NACRE_SET_GID))) || cr->groups_token)
		return -EAGAIN;
	*out = *a;
	int chown = ((sa->valid & NACRE_SET_UID) && sa->uid != a->uid) ||
		    ((sa->valid & NACRE_SET_GID) && sa->gid != a->gid);
	if (sa->valid & NACRE_SET_MODE) {
		uint32_t mode = sa->mode & 07777;
		uint32_t gid = (sa->valid & NACRE_SET_GID) ? sa->gid : a->gid;
		if (!root && !in_group(cr, gid))
			mode &= ~(uint32_t)S_ISGID;
		out->mode = (a->mode & S_IFMT) | mode;
	} else if (chown && !S_ISDIR(a->mode)) {
		out->mode &= ~(uint32_t)S_ISUID;
		if (out->mode & S_IXGRP)
			out->mode &= ~(uint32_t)S_ISGID;
	}
	if (sa->valid & NACRE_SET_UID)
		out->uid = sa->uid;
	if (sa->valid & NACRE_SET_GID)
		out->gid = sa->gid;
	if (sa->valid & NACRE_SET_ATIME_NOW)
		out->atime = now;
	else if (sa->valid & NACRE_SET_ATIME)
		out->atime = sa->atime;
	if (sa->valid & NACRE_SET_MTIME_NOW)
		out->mtime = now;
	else if (sa->valid & NACRE_SET_MTIME)
		out->mtime = sa->mtime;
	out->ctime = (sa->valid & NACRE_SET_CTIME) ? sa->ctime : now;
	return 0;
}

/* What is kept of fid, if the lease of its directory is good (and, with makes, lets this
 * mount make things there: no default ACL): 1 with *out (NULL: not wanted), or 0. */
static int kept(struct nacre_fs *fs, const struct nacre_fid *fid, int makes,
		struct nacre_attr *out)
{
	struct cl_leases *l = &fs->leases;
	int rc = 0;

	if (!__atomic_load_n(&l->nmade, __ATOMIC_RELAXED))
		return 0;
	cl_lease_settle(fs);
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = cl_lease_made_find(l, fid);
	struct cl_lease_dir *d = e ? cl_lease_find(l, &e->parent) : NULL;
	if (d && (d->makes || !makes) && cl_lease_valid(fs, d)) {
		if (out)
			*out = e->attr;
		l->answered++;
		rc = 1;
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int cl_lease_getattr(struct nacre_fs *fs, const struct nacre_fid *fid, struct nacre_attr *out)
{
	return kept(fs, fid, 0, out);
}

int cl_lease_xattr_none(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	/* made where no default ACL gives it one; an xattr set since forgot it (md.c) */
	return kept(fs, fid, 1, NULL);
}

int cl_lease_setattr(struct nacre_fs *fs, const struct nacre_cred *cr,
		     const struct nacre_fid *fid, const struct nacre_setattr *sa,
		     const struct wire_cursor *body, struct nacre_attr *out)
{
	struct cl_leases *l = &fs->leases;
	struct nacre_attr a;
	int rc = 0;

	if (!cr || !__atomic_load_n(&l->nmade, __ATOMIC_RELAXED))
		return 0;
	cl_wbq_bound(fs);
	cl_lease_settle(fs);
	pthread_mutex_lock(&l->lock);
	struct cl_made *e = cl_lease_made_find(l, fid);
	/* not a leased directory's own attributes (lease.c, own_attrs): its name is in a
	 * directory nobody holds, where another client finds it without a recall */
	struct cl_lease_dir *d = e && !fid_eq(&e->parent, fid) ? cl_lease_find(l, &e->parent)
							       : NULL;
	/* the maker of the directory: its ids are the MDS's (lease_int.h, makes) */
	if (d && d->makes && cr->uid == d->uid && cl_lease_valid(fs, d) &&
	    predict(cr, &e->attr, sa, &a) == 0 &&
	    cl_wbq_add(fs, WIRE_OP_MDS_SETATTR, body, &e->parent, NULL, d->granted_sent_ms) == 0) {
		e->attr = a;
		e->changed = __atomic_add_fetch(&l->clock, 1, __ATOMIC_ACQ_REL);
		*out = a;
		l->made_changes++;
		rc = 1;
	}
	pthread_mutex_unlock(&l->lock);
	if (rc)
		cl_wbq_durable(fs);
	/* an explicit mtime is newer than this mount's writes: their close must not undo it
	 * (as nacre_setattr does at the MDS) */
	if (rc && (sa->valid & (NACRE_SET_MTIME | NACRE_SET_MTIME_NOW)))
		cl_files_mtime_set(fs, fid);
	return rc;
}
