/* xattr.c - extended attributes. Ordinary names go to the MDS. The "nacre." names are
 * virtual (include/nacre/nacre_vxattr.h): served here through libnacre, never stored on the
 * MDS and never listed. The CLI (setstripe, getstripe, df, fid2path, recovery-status) talks
 * to the mount this way; the HSM ones are in hsm.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/layout.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/vxattr.h"
#include "fuse/fz.h"
#include "nacre/nacre_vxattr.h"

#define LAYOUT_TEXT_MAX 4096

static int is_virtual(const char *name)
{
	return strncmp(name, NACRE_VXATTR_PREFIX, strlen(NACRE_VXATTR_PREFIX)) == 0;
}

/* Replies value (len bytes) with getxattr's size rules: size 0 asks for the length. */
static void reply_value(fuse_req_t req, const void *value, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

/* One line per target (vxattr_target_format) into a new buffer (*out, *len). 0 or a
 * negative error. */
static int format_targets(struct nacre_fs *fs, char **out, size_t *len)
{
	struct nacre_target *t = NULL;
	int n = fz_targets_all(fs, &t), i;
	size_t cap, pos = 0;
	char *buf;

	if (n < 0)
		return n;
	cap = (size_t)n * (NACRE_ADDR_MAX + 128) + 1;
	buf = malloc(cap);
	if (!buf) {
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		int w = vxattr_target_format(buf + pos, cap - pos, &t[i]);

		if (w < 0 || (size_t)w >= cap - pos)
			break;
		pos += (size_t)w;
	}
	free(t);
	*out = buf;
	*len = pos;
	return 0;
}

/* nacre.parents (paths 0) and nacre.linkpaths (paths 1): one NUL-ended record per link. */
struct links_text {
	struct nacre_fs *fs;
	const struct nacre_cred *cr;
	int paths;
	char *dir;    /* NACRE_PATH_MAX + 1: a parent's path */
	struct strbuf b;
	int err;
};

static int links_text_one(void *arg, const struct nacre_fid *parent, const char *name)
{
	struct links_text *t = arg;
	size_t before = t->b.len;

	if (t->paths) {
		int rc = nacre_fid2path(t->fs, t->cr, parent, t->dir, NACRE_PATH_MAX + 1);

		if (rc == -EACCES || rc == -ENOENT)
			return 0; /* a directory above the link the caller may not search */
		if (rc) {
			t->err = rc;
			return 1;
		}
		strbuf_str(&t->b, t->dir);
		if (strcmp(t->dir, "/") != 0)
			strbuf_char(&t->b, '/');
	} else {
		char f[NACRE_FID_STR_MAX];

		nacre_fid_format(parent, f, sizeof(f));
		strbuf_str(&t->b, f);
		strbuf_char(&t->b, '/');
	}
	strbuf_str(&t->b, name);
	strbuf_char(&t->b, '\0');
	if (t->b.len > NACRE_VXATTR_LIST_MAX) { /* full: keep the records that fit */
		t->b.len = before;
		return 1;
	}
	return 0;
}

static void get_links(fuse_req_t req, struct fz_mount *m, const struct nacre_cred *cr,
		      const struct nacre_fid *fid, int paths, size_t size)
{
	struct links_text t = {.fs = m->fs, .cr = cr, .paths = paths};
	int rc;

	t.dir = malloc(NACRE_PATH_MAX + 1);
	if (!t.dir) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = nacre_links(m->fs, cr, fid, links_text_one, &t);
	if (!rc)
		rc = t.err;
	if (!rc && !strbuf_ok(&t.b))
		rc = -ENOMEM;
	if (!rc && t.b.len == 0)
		rc = -EACCES;
	/* One path instead of the list: from an MDS without LINKS, or for the root (of the file
	 * system, or of a fileset), which has no link the caller sees. */
	if (paths && (rc == -EOPNOTSUPP || rc == -ENOENT || rc == -EACCES) &&
	    nacre_fid2path(m->fs, cr, fid, t.dir, NACRE_PATH_MAX + 1) == 0 &&
	    (rc == -EOPNOTSUPP || strcmp(t.dir, "/") == 0)) {
		strbuf_reset(&t.b);
		strbuf_add(&t.b, t.dir, strlen(t.dir) + 1);
		rc = strbuf_ok(&t.b) ? 0 : -ENOMEM;
	}
	if (rc < 0)
		fz_reply_rc(req, rc);
	else
		reply_value(req, t.b.p, t.b.len, size);
	strbuf_fini(&t.b);
	free(t.dir);
}

static void get_virtual(fuse_req_t req, struct fz_inode *in, const char *name, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	int is_root = in == &m->itab.root;
	struct nacre_cred cr;
	int rc;

	if (fz_hsm_getxattr(req, in, name, size) || fz_param_getxattr(req, in, name, size))
		return;
	fz_cred(req, &cr);
	if (strcmp(name, NACRE_VXATTR_LAYOUT) == 0) {
		struct nacre_layout l;
		char text[LAYOUT_TEXT_MAX];
		int len;

		rc = nacre_layout_get(m->fs, &cr, &in->fid, &l);
		if (rc < 0) {
			fz_reply_rc(req, rc);
			return;
		}
		len = layout_format(&l, text, sizeof(text));
		if (len < 0 || (size_t)len >= sizeof(text)) {
			fuse_reply_err(req, EIO);
			return;
		}
		reply_value(req, text, (size_t)len, size);
	} else if (strcmp(name, NACRE_VXATTR_FID) == 0) {
		char text[NACRE_FID_STR_MAX];

		nacre_fid_format(&in->fid, text, sizeof(text));
		reply_value(req, text, strlen(text), size);
	} else if (is_root && strcmp(name, NACRE_VXATTR_FSNAME) == 0) {
		const char *fsname = nacre_fs_name(m->fs);

		reply_value(req, fsname, strlen(fsname), size);
	} else if (is_root && strcmp(name, NACRE_VXATTR_CONNECT) == 0 && m->connect) {
		reply_value(req, m->connect, strlen(m->connect), size);
	} else if (is_root && strcmp(name, NACRE_VXATTR_TARGETS) == 0) {
		char *text;
		size_t len;

		rc = format_targets(m->fs, &text, &len);
		if (rc < 0) {
			fz_reply_rc(req, rc);
			return;
		}
		reply_value(req, text, len, size);
		free(text);
	} else if (is_root && strcmp(name, NACRE_VXATTR_RECOVERY_STATUS) == 0) {
		struct nacre_recovery_status st;
		char text[256];
		int len;

		rc = nacre_recovery_status(m->fs, &st);
		if (rc < 0) {
			fz_reply_rc(req, rc);
			return;
		}
		len = vxattr_recovery_format(text, sizeof(text), &st);
		if (len < 0 || (size_t)len >= sizeof(text)) {
			fuse_reply_err(req, EIO);
			return;
		}
		reply_value(req, text, (size_t)len, size);
	} else if (strcmp(name, NACRE_VXATTR_PARENTS) == 0) {
		get_links(req, m, &cr, &in->fid, 0, size);
	} else if (is_root &&
		   strncmp(name, NACRE_VXATTR_LINKPATHS, strlen(NACRE_VXATTR_LINKPATHS)) == 0) {
		struct nacre_fid fid;

		if (nacre_fid_parse(name + strlen(NACRE_VXATTR_LINKPATHS), &fid) < 0) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		get_links(req, m, &cr, &fid, 1, size);
	} else if (is_root &&
		   strncmp(name, NACRE_VXATTR_FID2PATH, strlen(NACRE_VXATTR_FID2PATH)) == 0) {
		struct nacre_fid fid;
		char *path;

		if (nacre_fid_parse(name + strlen(NACRE_VXATTR_FID2PATH), &fid) < 0) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		path = malloc(NACRE_PATH_MAX + 1);
		if (!path) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		rc = nacre_fid2path(m->fs, &cr, &fid, path, NACRE_PATH_MAX + 1);
		if (rc < 0)
			fz_reply_rc(req, rc);
		else
			reply_value(req, path, strlen(path), size);
		free(path);
	} else {
		fuse_reply_err(req, ENODATA);
	}
}

void fz_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	char *buf = NULL;
	int rc;

	if (is_virtual(name)) {
		get_virtual(req, in, name, size);
		return;
	}
	fz_cred(req, &cr);
	if (size > NACRE_XATTR_MAX)
		size = NACRE_XATTR_MAX;
	if (size > 0) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = nacre_getxattr(m->fs, &cr, &in->fid, name, buf, size);
	if (rc < 0)
		fz_reply_rc(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)rc);
	else if ((size_t)rc > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)rc);
	free(buf);
}

static void set_layout(fuse_req_t req, struct fz_inode *in, const char *value, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_layout l, out;
	struct nacre_cred cr;
	char err[128];
	int rc;

	if (layout_parse(value, size, &l) < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (layout_check_request(&l, err, sizeof(err)) < 0) {
		LOG_DEBUG("xattr", "layout refused: %s", err);
		fuse_reply_err(req, EINVAL);
		return;
	}
	fz_cred(req, &cr);
	rc = nacre_layout_set(m->fs, &cr, &in->fid, &l, &out);
	fuse_reply_err(req, fz_errno_or_ok(rc));
}

void fz_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;

	/* A tunable of the mount itself changes nothing stored: allowed on a read-only mount. */
	if (is_virtual(name) && fz_param_setxattr(req, in, name, value, size))
		return;
	if (strcmp(name, NACRE_VXATTR_INVALIDATE) == 0) {
		/* the open handles of this mount read on to the new size; the kernel's pages and
		 * attributes go (that needs no inode lock, which the kernel holds now) */
		nacre_fs_revalidate(m->fs, &in->fid);
		fz_dattr_drop(in);
		if (m->se)
			fuse_lowlevel_notify_inval_inode(m->se, ino, 0, 0);
		fuse_reply_err(req, 0);
		return;
	}
	if (fz_check_ro(req))
		return;
	if (is_virtual(name)) {
		if (fz_hsm_setxattr(req, in, name, value, size))
			return;
		if (strcmp(name, NACRE_VXATTR_LAYOUT) == 0)
			set_layout(req, in, value, size);
		else
			fuse_reply_err(req, EPERM); /* read-only facts, nothing to store */
		return;
	}
	fz_cred(req, &cr);
	fz_dattr_drop(in); /* an ACL may change the mode */
	fuse_reply_err(req,
		       fz_errno_or_ok(nacre_setxattr(m->fs, &cr, &in->fid, name, value, size, flags)));
}

void fz_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	char *buf = NULL;
	int rc;

	fz_cred(req, &cr);
	if (size > NACRE_XATTR_MAX)
		size = NACRE_XATTR_MAX;
	if (size > 0) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = nacre_listxattr(m->fs, &cr, &in->fid, buf, size);
	if (rc < 0)
		fz_reply_rc(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)rc);
	else if ((size_t)rc > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)rc);
	free(buf);
}

void fz_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fz_mount *m = fz_mnt(req);
	struct fz_inode *in = fz_inode_get(m, ino);
	struct nacre_cred cr;
	struct nacre_attr a;
	int rc;

	if (fz_check_ro(req))
		return;
	fz_cred(req, &cr);
	fz_dattr_drop(in);
	if (!is_virtual(name)) {
		fuse_reply_err(req, fz_errno_or_ok(nacre_removexattr(m->fs, &cr, &in->fid, name)));
		return;
	}
	if (strcmp(name, NACRE_VXATTR_LAYOUT) != 0) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* Only a directory's default can go away (setstripe -d); a file keeps its layout. */
	rc = nacre_getattr(m->fs, &cr, &in->fid, &a);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return;
	}
	if (!S_ISDIR(a.mode)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	{
		struct nacre_layout l, out;

		memset(&l, 0, sizeof(l));
		l.pattern = NACRE_PATTERN_RAID0;
		l.stripe_count = 0;
		l.stripe_size = 0;
		l.stripe_offset = -1; /* with count 0 and size 0: "clear the default" */
		rc = nacre_layout_set(m->fs, &cr, &in->fid, &l, &out);
	}
	fuse_reply_err(req, fz_errno_or_ok(rc));
}
