/* notify.c - the MDS's permission-change callbacks turned into kernel cache invalidations
 * (see fz.h; the protocol is libnacre's nacre_fs_notify_start).
 *
 * With default_permissions the kernel decides from the attributes it caches: for each FID
 * another client changed, the inode's attributes are dropped (fuse_lowlevel_notify_inval_
 * inode with a negative offset: attributes only, the page cache stays), so the next path
 * walk through a directory, or open of a file, fetches the new mode, owner and group first.
 * Cached names need nothing: the walk checks search permission on the directory's inode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fuse/fz.h"

struct all_inos {
	fuse_ino_t *v;
	size_t n, cap;
};

static int collect(struct fz_inode *in, void *arg)
{
	struct all_inos *a = arg;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		fuse_ino_t *v = realloc(a->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	fz_dattr_drop(in);
	a->v[a->n++] = in->ino;
	return 0;
}

static void inval(struct fz_mount *m, fuse_ino_t ino)
{
	int rc = fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);

	/* -ENOENT: the kernel forgot it meanwhile, nothing cached */
	if (rc < 0 && rc != -ENOENT)
		LOG_RATELIMITED(LOG_LVL_WARN, "notify", "cannot drop the kernel's attributes of "
				"inode %llu: %s", (unsigned long long)ino, strerror(-rc));
}

void fz_inval_attrs(struct fz_mount *m, const struct nacre_fid *fid)
{
	fuse_ino_t ino = fz_inode_find_stale(m, fid);

	if (ino)
		inval(m, ino);
}

static void on_change(void *arg, const struct nacre_fid *fids, uint32_t count, int all)
{
	struct fz_mount *m = arg;

	if (all) {
		/* outside the table's lock: the kernel may answer with forgets */
		struct all_inos a = {0};
		fz_itable_walk(m, collect, &a);
		for (size_t i = 0; i < a.n; i++)
			inval(m, a.v[i]);
		free(a.v);
		return;
	}
	for (uint32_t i = 0; i < count; i++)
		fz_inval_attrs(m, &fids[i]);
}

void fz_notify_start(struct fz_mount *m)
{
	int rc = nacre_fs_notify_start(m->fs, on_change, m);

	if (rc < 0)
		LOG_WARN("notify", "no permission-change callbacks (%s): other clients' chmod "
			 "and chown are seen here within attr_timeout", strerror(-rc));
}

void fz_notify_stop(struct fz_mount *m)
{
	nacre_fs_notify_stop(m->fs);
}
