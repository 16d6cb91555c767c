/* xattr.c - extended attributes: get/set/list/remove with Linux's namespace rules.
 * user.* needs read/write permission and exists only on regular files and directories;
 * trusted.* is root's; security.* is readable by all and writable by the owner or root;
 * system.posix_acl_access and system.posix_acl_default (POSIX ACLs, acl.h) are readable by
 * all and writable by the owner or root, as on ext4: the access ACL lives in the inode
 * (checked with the mode by perm.c), the default ACL of a directory in the xattr table.
 * trusted.nacre.project is the inode's project id and inherit flag (quotas), not stored
 * in the xattr table.
 * Other system.* names and unknown namespaces are not supported. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "mds/acl.h"
#include "mds/changelog.h"
#include "mds/ns.h"
#include "mds/perm.h"
#include "mds/notify.h"
#include "mds/writer.h"

#define XATTR_CREATE_ 1u
#define MDS_PROJECT_XATTR "trusted.nacre.project"
#define XATTR_REPLACE_ 2u

enum ns_kind { NS_USER, NS_TRUSTED, NS_SECURITY, NS_ACL_ACCESS, NS_ACL_DEFAULT, NS_OTHER };

static enum ns_kind ns_of(const char *name)
{
	if (!strcmp(name, MDS_ACL_XATTR_ACCESS))
		return NS_ACL_ACCESS;
	if (!strcmp(name, MDS_ACL_XATTR_DEFAULT))
		return NS_ACL_DEFAULT;
	if (!strncmp(name, "user.", 5) && name[5])
		return NS_USER;
	if (!strncmp(name, "trusted.", 8) && name[8])
		return NS_TRUSTED;
	if (!strncmp(name, "security.", 9) && name[9])
		return NS_SECURITY;
	return NS_OTHER;
}

static int is_acl(const char *name)
{
	enum ns_kind k = ns_of(name);
	return k == NS_ACL_ACCESS || k == NS_ACL_DEFAULT;
}

/* Linux's xattr_permission: 0, or the error the call must fail with. */
static int may_access(const struct nacre_cred *cr, const struct mds_inode *ino,
		      const char *name, int write)
{
	switch (ns_of(name)) {
	case NS_USER:
		if (!S_ISREG(ino->mode) && !S_ISDIR(ino->mode))
			return write ? -EPERM : -ENODATA;
		return mds_perm_check(cr, ino, write ? MDS_MAY_WRITE : MDS_MAY_READ);
	case NS_TRUSTED:
		return mds_perm_is_root(cr) ? 0 : (write ? -EPERM : -ENODATA);
	case NS_SECURITY:
		if (!write || mds_perm_is_root(cr) || cr->uid == ino->uid)
			return 0;
		return -EPERM;
	case NS_ACL_ACCESS:
	case NS_ACL_DEFAULT:
		if (S_ISLNK(ino->mode))
			return -EOPNOTSUPP;
		if (!write || mds_perm_is_root(cr) || cr->uid == ino->uid)
			return 0;
		return -EPERM;
	default:
		return -EOPNOTSUPP;
	}
}

/* The project id and inherit flag, an inode field shown as an xattr (docs/quota.md):
 * "ID P" (inherit) or "ID -". */
static int project_text(const struct mds_inode *ino, void *buf, size_t size)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "%u %c", ino->projid, ino->proj_inherit ? 'P' : '-');

	if (size && (size_t)n > size)
		return -ERANGE;
	if (size)
		memcpy(buf, t, (size_t)n);
	return n;
}

/* "ID", "ID P" or "ID -" into the inode (the flag on directories only). */
static int project_set(struct mds_inode *ino, const char *v, size_t len)
{
	char t[32], *end;

	if (len == 0 || len >= sizeof(t))
		return -EINVAL;
	memcpy(t, v, len);
	t[len] = '\0';
	errno = 0;
	unsigned long id = strtoul(t, &end, 10);
	if (end == t || errno || id > UINT32_MAX || t[0] == '-')
		return -EINVAL;
	int inherit = -1;
	if (!strcmp(end, " P"))
		inherit = 1;
	else if (!strcmp(end, " -"))
		inherit = 0;
	else if (*end)
		return -EINVAL;
	ino->projid = (uint32_t)id;
	if (inherit >= 0)
		ino->proj_inherit = S_ISDIR(ino->mode) ? (uint8_t)inherit : 0;
	return 0;
}

int mds_xattr_get(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		  const char *name, void *buf, size_t size)
{
	struct mds_txn *txn;
	struct mds_inode ino;
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, fid, &ino);
	int project = !strcmp(name, MDS_PROJECT_XATTR); /* anyone may read it, as lsattr -p */
	if (!rc && !project)
		rc = may_access(cr, &ino, name, 0);
	if (!rc && project) {
		rc = project_text(&ino, buf, size);
	} else if (!rc && ns_of(name) == NS_ACL_ACCESS) {
		/* stored in the inode; none when the mode says it all */
		rc = ino.acl.count ? (int)mds_acl_encode(&ino.acl, buf, size) : -ENODATA;
		if (rc >= 0 && size && (size_t)rc > size)
			rc = -ERANGE;
	} else if (!rc) {
		rc = mds_db_xattr_get(txn, fid, name, buf, size);
		if (rc >= 0 && size && (size_t)rc > size)
			rc = -ERANGE;
	}
	mds_txn_abort(txn);
	return rc;
}

struct list_arg {
	const struct nacre_cred *cr;
	char *buf;
	size_t size;
	size_t len; /* total bytes of the list, even past size */
};

static int list_one(void *arg, const char *name)
{
	struct list_arg *a = arg;
	if (ns_of(name) == NS_TRUSTED && !mds_perm_is_root(a->cr))
		return 0;
	size_t n = strlen(name) + 1;
	if (a->size && a->len + n <= a->size)
		memcpy(a->buf + a->len, name, n);
	a->len += n;
	return 0;
}

int mds_xattr_list(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   char *buf, size_t size)
{
	struct mds_txn *txn;
	struct mds_inode ino;
	struct list_arg a = {cr, buf, size, 0};
	int rc = mds_txn_begin_read(m->db, &txn);
	if (rc)
		return rc;
	rc = mds_db_inode_get(txn, fid, &ino);
	if (!rc && ino.acl.count)
		rc = list_one(&a, MDS_ACL_XATTR_ACCESS);
	if (!rc)
		rc = mds_db_xattr_iter(txn, fid, list_one, &a);
	mds_txn_abort(txn);
	if (rc)
		return rc;
	if (a.len > (size_t)NACRE_XATTR_MAX)
		return -E2BIG;
	if (size && a.len > size)
		return -ERANGE;
	return (int)a.len;
}

struct set_arg {
	struct mds *m;
	const struct nacre_cred *cr;
	const struct nacre_fid *fid;
	const char *name;
	const void *value;
	size_t len;
	uint32_t flags;
	int remove;
};

/* posix_acl_update_mode: an access ACL the mode can say is stored as the mode alone; any
 * other sets the mode's bits from its entries (group bits from the mask). A caller outside
 * the file's group loses its setgid bit. A default ACL is for directories only. An empty
 * value or a header alone removes the ACL, as does removexattr (never -ENODATA). */
static int set_acl(struct mds_txn *txn, const struct set_arg *a, struct mds_inode *ino,
		   int is_default)
{
	struct mds_acl *acl = malloc(sizeof(*acl));
	if (!acl)
		return -ENOMEM;
	int rc = 0;
	acl->count = 0;
	if (!a->remove && a->len > 0) {
		rc = mds_acl_decode(a->value, a->len, acl);
		if (!rc && acl->count)
			rc = mds_acl_valid(acl);
		if (rc)
			goto out;
	}
	if (is_default) {
		if (!S_ISDIR(ino->mode)) {
			rc = acl->count ? -EACCES : 0;
			goto out;
		}
		if (acl->count) {
			/* stored canonical: ids of the fixed entries as the kernel writes them */
			uint8_t buf[MDS_ACL_XATTR_SIZE(MDS_ACL_MAX_ENTRIES)];
			size_t n = mds_acl_encode(acl, buf, sizeof(buf));
			rc = mds_db_xattr_put(txn, a->fid, a->name, buf, n);
		} else {
			rc = mds_db_xattr_del(txn, a->fid, a->name);
			if (rc == -ENODATA)
				rc = 0;
		}
		goto out;
	}
	if (acl->count) {
		uint32_t bits;
		if (mds_acl_equiv_mode(acl, &bits))
			acl->count = 0;
		ino->mode = (ino->mode & ~(uint32_t)(S_IRWXU | S_IRWXG | S_IRWXO)) | bits;
		if (!mds_perm_is_root(a->cr) && !mds_perm_in_group(a->cr, ino->gid))
			ino->mode &= ~(uint32_t)S_ISGID;
	}
	ino->acl.count = acl->count;
	memcpy(ino->acl.e, acl->e, acl->count * sizeof(acl->e[0]));
out:
	free(acl);
	return rc;
}

static int set_op(struct mds_txn *txn, void *arg)
{
	struct set_arg *a = arg;
	struct mds_inode ino;
	int rc = mds_db_inode_get(txn, a->fid, &ino);
	if (rc)
		return rc;
	rc = may_access(a->cr, &ino, a->name, 1);
	if (rc)
		return rc;
	enum ns_kind kind = ns_of(a->name);
	if (!strcmp(a->name, MDS_PROJECT_XATTR)) {
		if (a->remove) {
			ino.projid = 0;
			ino.proj_inherit = 0;
		} else {
			rc = project_set(&ino, a->value, a->len);
		}
	} else if (kind == NS_ACL_ACCESS || kind == NS_ACL_DEFAULT) {
		rc = set_acl(txn, a, &ino, kind == NS_ACL_DEFAULT);
	} else if (a->remove) {
		rc = mds_db_xattr_del(txn, a->fid, a->name);
	} else {
		int have = mds_db_xattr_get(txn, a->fid, a->name, NULL, 0);
		if (have < 0 && have != -ENODATA)
			return have;
		if ((a->flags & XATTR_CREATE_) && have >= 0)
			return -EEXIST;
		if ((a->flags & XATTR_REPLACE_) && have < 0)
			return -ENODATA;
		rc = mds_db_xattr_put(txn, a->fid, a->name, a->value, a->len);
	}
	if (rc)
		return rc;
	ino.ctime = time_now();
	rc = mds_db_inode_put(txn, &ino);
	if (!rc && mds_changelog_wants(a->m->changelog, NACRE_CL_XATTR)) {
		struct nacre_changelog_rec *r = calloc(1, sizeof(*r));
		if (!r)
			return -ENOMEM;
		r->type = NACRE_CL_XATTR;
		r->tfid = *a->fid;
		r->xflags = NACRE_CLFE_XATTR;
		mds_changelog_caller(r, a->cr);
		str_copy(r->xattr, a->name, sizeof(r->xattr));
		rc = mds_changelog_add(a->m->changelog, txn, r);
		free(r);
	}
	return rc;
}

int mds_xattr_set(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		  const char *name, const void *value, size_t len, uint32_t flags)
{
	if (flags & ~(XATTR_CREATE_ | XATTR_REPLACE_))
		return -EINVAL;
	if (len > NACRE_XATTR_MAX)
		return -E2BIG;
	struct set_arg a = {m, cr, fid, name, value, len, flags, 0};
	int rc = mds_writer_submit(m->writer, set_op, &a);
	if (!rc && is_acl(name))
		mds_notify_perm_change(m, fid);
	return rc;
}

int mds_xattr_remove(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		     const char *name)
{
	struct set_arg a = {m, cr, fid, name, NULL, 0, 0, 1};
	int rc = mds_writer_submit(m->writer, set_op, &a);
	if (!rc && is_acl(name))
		mds_notify_perm_change(m, fid);
	return rc;
}
