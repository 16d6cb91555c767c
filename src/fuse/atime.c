/* atime.c - access times on read, as relatime (the default), strictatime or noatime say.
 *
 * The kernel keeps no atime for a FUSE file (S_NOATIME): nacre-mount sets it. Not one MDS
 * request per read: the first READ that reaches a handle decides whether its file's atime
 * is due (relatime: atime not after mtime or ctime, or a day old; strictatime: always),
 * takes this node's clock as the new atime and hands it to libnacre, whose CLOSE of the
 * handle carries it (the MDS keeps the later of the two and leaves ctime alone). Until then
 * this mount's getattr and lookup replies show it (fz_atime_merge) and the kernel's cached
 * attributes of the file are dropped at once, so a stat right after the read sees it; other
 * mounts see it after the close. Pages the kernel kept from an earlier open are read
 * without a READ: under strictatime an open therefore drops them. */
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "fuse/fz.h"

#define RELATIME_MAX_AGE_S (24 * 3600)

static int time_le(const struct nacre_time *a, const struct nacre_time *b)
{
	return a->sec < b->sec || (a->sec == b->sec && a->nsec <= b->nsec);
}

/* Linux's relatime rule (relatime_need_update). */
static int relatime_due(const struct nacre_attr *a, const struct nacre_time *now)
{
	return time_le(&a->atime, &a->mtime) || time_le(&a->atime, &a->ctime) ||
	       now->sec - a->atime.sec >= RELATIME_MAX_AGE_S;
}

/* The latest due atime of in's open files into *atime, if later. in->lock held. */
static void merge_locked(struct fz_inode *in, struct nacre_time *atime)
{
	for (struct fz_file *f = in->files; f; f = f->next)
		if (f->atime_due && !time_le(&f->atime, atime))
			*atime = f->atime;
}

void fz_atime_merge(struct fz_inode *in, struct nacre_time *atime)
{
	pthread_mutex_lock(&in->lock);
	merge_locked(in, atime);
	pthread_mutex_unlock(&in->lock);
}

void fz_atime_read(struct fz_mount *m, struct fz_file *f)
{
	struct fz_inode *in = f->inode;
	struct nacre_attr a;
	struct timespec ts;
	struct nacre_time now;
	int due;

	if (m->atime_mode == FZ_ATIME_NONE)
		return;
	pthread_mutex_lock(&in->lock);
	due = !f->atime_checked;
	f->atime_checked = 1;
	pthread_mutex_unlock(&in->lock);
	if (!due || nacre_file_attr(f->nf, &a) < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	now.sec = ts.tv_sec;
	now.nsec = (uint32_t)ts.tv_nsec;
	pthread_mutex_lock(&in->lock);
	merge_locked(in, &a.atime); /* another handle here may have set it already */
	due = m->atime_mode == FZ_ATIME_STRICT || relatime_due(&a, &now);
	pthread_mutex_unlock(&in->lock);
	if (!due)
		return;
	int rc = nacre_file_set_atime(f->nf, &now);
	if (rc < 0) {
		LOG_RATELIMITED(LOG_LVL_INFO, "file", "reads do not set atime: %s",
				nacre_strerror(rc));
		return;
	}
	pthread_mutex_lock(&in->lock);
	f->atime_due = 1;
	f->atime = now;
	pthread_mutex_unlock(&in->lock);
	/* attributes only (offset < 0): the kernel asks again at the next stat */
	if (m->se)
		fuse_lowlevel_notify_inval_inode(m->se, in->ino, -1, 0);
}

void fz_atime_drop(struct fz_inode *in)
{
	pthread_mutex_lock(&in->lock);
	for (struct fz_file *f = in->files; f; f = f->next) {
		if (f->atime_due && !f->closing)
			nacre_file_set_atime(f->nf, NULL);
		f->atime_due = 0;
	}
	pthread_mutex_unlock(&in->lock);
}
