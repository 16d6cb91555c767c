/* hsm.c - the HSM virtual xattrs of nacre-mount (include/nacre/nacre_vxattr.h gives their
 * names and grammars), so that `nacre hsm_*` works for any user through the mount with that
 * user's credentials, as lfs does through ioctls: nacre.hsm_state (get, set),
 * nacre.hsm_action (get), nacre.hsm_request (set; on the root for many files),
 * nacre.hsm_list.COOKIE (get, on the root) and nacre.hsm_import (set, on a directory).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/vxattr.h"
#include "fuse/fz.h"
#include "nacre/nacre_vxattr.h"

#define LIST_BATCH 32

static void get_list(fuse_req_t req, const char *arg, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_hsm_action *a = malloc(sizeof(*a) * LIST_BATCH);
	size_t cap = LIST_BATCH * (NACRE_PATH_MAX + 200) + 16, pos = 0;
	char *text = malloc(cap), *end;
	struct nacre_cred cr;
	int eof = 0;

	if (!a || !text) {
		free(a);
		free(text);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	errno = 0;
	unsigned long long after = strtoull(arg, &end, 10);
	if (errno || *end) {
		free(a);
		free(text);
		fuse_reply_err(req, EINVAL);
		return;
	}
	fz_cred(req, &cr);
	int n = nacre_hsm_list(m->fs, &cr, after, a, LIST_BATCH, &eof);
	if (n < 0) {
		free(a);
		free(text);
		fz_reply_rc(req, n);
		return;
	}
	for (int i = 0; i < n; i++) {
		char fid[NACRE_FID_STR_MAX];
		int w = vxattr_hsm_list_format(text + pos, cap - pos, &a[i],
					       nacre_fid_format(&a[i].fid, fid, sizeof(fid)));
		if (w < 0 || (size_t)w >= cap - pos)
			break;
		pos += (size_t)w;
	}
	pos += (size_t)vxattr_hsm_list_end(text + pos, cap - pos, eof);
	fz_reply_xattr_text(req, text, pos, size);
	free(a);
	free(text);
}

/* The request: first line "ACTION ARCHIVE_ID", then FIDs (root) or none (a file). */
static int set_request(fuse_req_t req, struct fz_inode *in, int is_root, char *v)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;
	uint32_t action, aid;
	char *list;
	if (vxattr_hsm_request_parse(v, &action, &aid, &list) < 0)
		return -EINVAL;
	fz_cred(req, &cr);
	struct nacre_fid *fids = malloc(sizeof(*fids) * NACRE_VXATTR_HSM_REQUEST_MAX);
	int *rcs = malloc(sizeof(*rcs) * NACRE_VXATTR_HSM_REQUEST_MAX);
	int n = 0, rc = 0;
	if (!fids || !rcs) {
		rc = -ENOMEM;
		goto out;
	}
	if (!is_root || !list) {
		fids[n++] = in->fid;
	} else {
		const int max = NACRE_VXATTR_HSM_REQUEST_MAX;
		char *f;
		while (n < max && (f = vxattr_hsm_request_next_fid(&list))) {
			if (nacre_fid_parse(f, &fids[n++]) < 0) {
				rc = -EINVAL;
				goto out;
			}
		}
	}
	if (n == 0) {
		rc = -EINVAL;
		goto out;
	}
	rc = nacre_hsm_request(m->fs, &cr, action, aid, fids, n, rcs);
	/* a release changes st_blocks (1, as Lustre): the kernel's copy is stale here */
	for (int i = 0; !rc && i < n; i++)
		if (!rcs[i])
			fz_inval_attrs(m, &fids[i]);
	/* the first failure speaks for the batch; the CLI asks again per file to report */
	for (int i = 0; !rc && i < n; i++)
		if (rcs[i])
			rc = rcs[i];
out:
	free(fids);
	free(rcs);
	return rc;
}

static int set_state(fuse_req_t req, struct fz_inode *in, const char *v)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;
	uint32_t set, clear, aid;
	if (vxattr_hsm_flags_parse(v, &set, &clear, &aid) < 0)
		return -EINVAL;
	fz_cred(req, &cr);
	return nacre_hsm_state_set(m->fs, &cr, &in->fid, set, clear, aid, NULL, NULL);
}

static int set_import(fuse_req_t req, struct fz_inode *in, const char *v, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	struct vxattr_hsm_import im;
	struct nacre_cred cr;
	if (vxattr_hsm_import_parse(v, size, &im) < 0)
		return -EINVAL;
	fz_cred(req, &cr);
	return nacre_hsm_import(m->fs, &cr, &in->fid, im.name, im.mode, im.uid, im.gid, im.size,
				&im.mtime, im.archive_id, im.path, NULL);
}

int fz_hsm_getxattr(fuse_req_t req, struct fz_inode *in, const char *name, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	int is_root = in == &m->itab.root;
	struct nacre_cred cr;
	char text[NACRE_PATH_MAX + 256];
	int rc;

	fz_cred(req, &cr);
	if (strcmp(name, NACRE_VXATTR_HSM_STATE) == 0) {
		uint32_t st, aid;
		rc = nacre_hsm_state_get(m->fs, &cr, &in->fid, &st, &aid);
		if (rc < 0) {
			fz_reply_rc(req, rc);
			return 1;
		}
		int w = vxattr_hsm_state_format(text, sizeof(text), st, aid);
		fz_reply_xattr_text(req, text, (size_t)w, size);
		return 1;
	}
	if (strcmp(name, NACRE_VXATTR_HSM_ACTION) == 0) {
		struct nacre_hsm_action *a = malloc(sizeof(*a));
		if (!a) {
			fuse_reply_err(req, ENOMEM);
			return 1;
		}
		rc = nacre_hsm_action_get(m->fs, &cr, &in->fid, a);
		int w = 0;
		if (rc > 0)
			w = vxattr_hsm_action_format(text, sizeof(text), a);
		free(a);
		if (rc < 0)
			fz_reply_rc(req, rc);
		else
			fz_reply_xattr_text(req, text, (size_t)w, size);
		return 1;
	}
	if (is_root && strncmp(name, NACRE_VXATTR_HSM_LIST, strlen(NACRE_VXATTR_HSM_LIST)) == 0) {
		get_list(req, name + strlen(NACRE_VXATTR_HSM_LIST), size);
		return 1;
	}
	return 0;
}

int fz_hsm_setxattr(fuse_req_t req, struct fz_inode *in, const char *name, const char *value,
		    size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	int is_root = in == &m->itab.root;
	int rc;

	if (strcmp(name, NACRE_VXATTR_HSM_REQUEST) != 0 &&
	    strcmp(name, NACRE_VXATTR_HSM_STATE) != 0 && strcmp(name, NACRE_VXATTR_HSM_IMPORT) != 0)
		return 0;
	char *v = malloc(size + 1);
	if (!v) {
		fuse_reply_err(req, ENOMEM);
		return 1;
	}
	memcpy(v, value, size);
	v[size] = 0;
	if (strcmp(name, NACRE_VXATTR_HSM_REQUEST) == 0)
		rc = set_request(req, in, is_root, v);
	else if (strcmp(name, NACRE_VXATTR_HSM_STATE) == 0)
		rc = set_state(req, in, v);
	else
		rc = set_import(req, in, v, size);
	free(v);
	fuse_reply_err(req, fz_errno_or_ok(rc));
	return 1;
}
