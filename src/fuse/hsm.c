/* hsm.c - the HSM virtual xattrs of nacre-mount (docs/CONTRACTS.md), so that `nacre hsm_*`
 * works for any user through the mount with that user's credentials, as lfs does through
 * ioctls. Values are text:
 *   get nacre.hsm_state            "0x0000000d 1"               (state bits, archive id)
 *   set nacre.hsm_state            "SET CLEAR ARCHIVE_ID"        (hex masks, decimal id)
 *   get nacre.hsm_action           "" or "ARCHIVE STARTED DONE TOTAL ERR"
 *   set nacre.hsm_request          on a file: "ACTION ARCHIVE_ID" (ACTION: archive, restore,
 *                                  release, remove, cancel); on the root: the same first line,
 *                                  then one FID per line, for many files at once
 *   get nacre.hsm_list.COOKIE      on the root: actions after COOKIE, one per line
 *                                  "COOKIE ACTION STATUS FID ARCHIVE DONE TOTAL ERR PATH",
 *                                  then "eof" or "more"
 *   set nacre.hsm_import           on a directory: "SIZE MODE UID GID SEC NSEC ARCHIVE_ID"
 *                                  NUL name NUL archive-path: creates a released stub
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fuse/fz.h"

#define LIST_PREFIX "nacre.hsm_list."
#define LIST_BATCH 32
#define MAX_BATCH 4000

static const char *act_name(uint32_t a)
{
	switch (a) {
	case NACRE_HSMA_ARCHIVE: return "ARCHIVE";
	case NACRE_HSMA_RESTORE: return "RESTORE";
	case NACRE_HSMA_REMOVE: return "REMOVE";
	default: return "CANCEL";
	}
}

static const char *status_name(uint32_t s)
{
	static const char *const n[] = {"WAITING", "STARTED", "FAILED", "CANCELED", "SUCCEED"};
	return s < 5 ? n[s] : "UNKNOWN";
}

static void reply_text(fuse_req_t req, const char *text, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, text, len);
}

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
		int w = snprintf(text + pos, cap - pos,
				 "%" PRIu64 " %s %s %s %u %" PRIu64 " %" PRIu64 " %d %s\n",
				 a[i].cookie, act_name(a[i].action), status_name(a[i].status),
				 nacre_fid_format(&a[i].fid, fid, sizeof(fid)), a[i].archive_id,
				 a[i].bytes_done, a[i].bytes_total, a[i].err,
				 a[i].path[0] ? a[i].path : "-");
		if (w < 0 || (size_t)w >= cap - pos)
			break;
		pos += (size_t)w;
	}
	pos += (size_t)snprintf(text + pos, cap - pos, "%s\n", eof ? "eof" : "more");
	reply_text(req, text, pos, size);
	free(a);
	free(text);
}

/* "ACTION" -> NACRE_HUA_*, or 0. */
static uint32_t parse_action(const char *s, size_t n)
{
	static const struct {
		const char *name;
		uint32_t v;
	} t[] = {{"archive", NACRE_HUA_ARCHIVE}, {"restore", NACRE_HUA_RESTORE},
		 {"release", NACRE_HUA_RELEASE}, {"remove", NACRE_HUA_REMOVE},
		 {"cancel", NACRE_HUA_CANCEL}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].name) == n && memcmp(t[i].name, s, n) == 0)
			return t[i].v;
	return 0;
}

/* The request: first line "ACTION ARCHIVE_ID", then FIDs (root) or none (a file). */
static int set_request(fuse_req_t req, struct fz_inode *in, int is_root, char *v)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;
	char *line = v, *nl = strchr(v, '\n');
	if (nl)
		*nl = 0;
	size_t an = strcspn(line, " ");
	uint32_t action = parse_action(line, an);
	unsigned long aid = line[an] ? strtoul(line + an + 1, NULL, 10) : 0;
	if (!action || aid > UINT32_MAX)
		return -EINVAL;
	fz_cred(req, &cr);
	struct nacre_fid *fids = malloc(sizeof(*fids) * MAX_BATCH);
	int *rcs = malloc(sizeof(*rcs) * MAX_BATCH);
	int n = 0, rc = 0;
	if (!fids || !rcs) {
		rc = -ENOMEM;
		goto out;
	}
	if (!is_root || !nl) {
		fids[n++] = in->fid;
	} else {
		for (char *p = nl + 1; *p && n < MAX_BATCH;) {
			char *e = strchr(p, '\n');
			if (e)
				*e = 0;
			if (*p && nacre_fid_parse(p, &fids[n++]) < 0) {
				rc = -EINVAL;
				goto out;
			}
			if (!e)
				break;
			p = e + 1;
		}
	}
	if (n == 0) {
		rc = -EINVAL;
		goto out;
	}
	rc = nacre_hsm_request(m->fs, &cr, action, (uint32_t)aid, fids, n, rcs);
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
	unsigned int set, clear;
	unsigned long aid = 0;
	if (sscanf(v, "%x %x %lu", &set, &clear, &aid) < 2 || aid > UINT32_MAX)
		return -EINVAL;
	fz_cred(req, &cr);
	return nacre_hsm_state_set(m->fs, &cr, &in->fid, set, clear, (uint32_t)aid, NULL, NULL);
}

static int set_import(fuse_req_t req, struct fz_inode *in, const char *v, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	struct nacre_cred cr;
	unsigned long long sz, sec, nsec;
	unsigned int mode, uid, gid, aid;
	const char *name = memchr(v, 0, size);
	if (!name || name + 1 >= v + size)
		return -EINVAL;
	name++;
	const char *path = memchr(name, 0, (size_t)(v + size - name));
	if (!path || path + 1 >= v + size)
		return -EINVAL;
	path++;
	if (sscanf(v, "%llu %o %u %u %llu %llu %u", &sz, &mode, &uid, &gid, &sec, &nsec, &aid) !=
		    7 ||
	    nsec >= 1000000000ull || aid == 0 || !memchr(path, 0, (size_t)(v + size - path)))
		return -EINVAL;
	struct nacre_time mt = {(int64_t)sec, (uint32_t)nsec};
	fz_cred(req, &cr);
	return nacre_hsm_import(m->fs, &cr, &in->fid, name, mode, uid, gid, sz, &mt, aid, path,
				NULL);
}

int fz_hsm_getxattr(fuse_req_t req, struct fz_inode *in, const char *name, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	int is_root = in == &m->itab.root;
	struct nacre_cred cr;
	char text[NACRE_PATH_MAX + 256];
	int rc;

	fz_cred(req, &cr);
	if (strcmp(name, "nacre.hsm_state") == 0) {
		uint32_t st, aid;
		rc = nacre_hsm_state_get(m->fs, &cr, &in->fid, &st, &aid);
		if (rc < 0) {
			fz_reply_rc(req, rc);
			return 1;
		}
		int w = snprintf(text, sizeof(text), "0x%08x %u", st, aid);
		reply_text(req, text, (size_t)w, size);
		return 1;
	}
	if (strcmp(name, "nacre.hsm_action") == 0) {
		struct nacre_hsm_action *a = malloc(sizeof(*a));
		if (!a) {
			fuse_reply_err(req, ENOMEM);
			return 1;
		}
		rc = nacre_hsm_action_get(m->fs, &cr, &in->fid, a);
		int w = 0;
		if (rc > 0)
			w = snprintf(text, sizeof(text), "%s %s %" PRIu64 " %" PRIu64 " %d",
				     act_name(a->action), status_name(a->status), a->bytes_done,
				     a->bytes_total, a->err);
		free(a);
		if (rc < 0)
			fz_reply_rc(req, rc);
		else
			reply_text(req, text, (size_t)w, size);
		return 1;
	}
	if (is_root && strncmp(name, LIST_PREFIX, strlen(LIST_PREFIX)) == 0) {
		get_list(req, name + strlen(LIST_PREFIX), size);
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

	if (strcmp(name, "nacre.hsm_request") != 0 && strcmp(name, "nacre.hsm_state") != 0 &&
	    strcmp(name, "nacre.hsm_import") != 0)
		return 0;
	char *v = malloc(size + 1);
	if (!v) {
		fuse_reply_err(req, ENOMEM);
		return 1;
	}
	memcpy(v, value, size);
	v[size] = 0;
	if (strcmp(name, "nacre.hsm_request") == 0)
		rc = set_request(req, in, is_root, v);
	else if (strcmp(name, "nacre.hsm_state") == 0)
		rc = set_state(req, in, v);
	else
		rc = set_import(req, in, v, size);
	free(v);
	fuse_reply_err(req, fz_errno_or_ok(rc));
	return 1;
}
