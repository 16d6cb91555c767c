/* dircache.c - directory attributes answered by nacre-mount itself (see fz.h). */
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "fuse/fz.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t fz_dattr_gen(struct fz_inode *in)
{
	pthread_mutex_lock(&in->lock);
	uint64_t gen = in->dattr_gen;
	pthread_mutex_unlock(&in->lock);
	return gen;
}

void fz_dattr_store(struct fz_mount *m, struct fz_inode *in, const struct nacre_attr *a,
		    uint64_t gen)
{
	if (!S_ISDIR(a->mode))
		return;
	pthread_mutex_lock(&in->lock);
	if (in->dattr_gen == gen) {
		in->dattr = *a;
		in->dattr_known = 1;
		if (m->attr_timeout > 0) {
			in->dattr_until_ms = mono_ms() + (int64_t)(m->attr_timeout * 1000.0);
			in->dattr_valid = 1;
		}
	}
	pthread_mutex_unlock(&in->lock);
}

void fz_dattr_note(struct fz_inode *in, const struct nacre_attr *a)
{
	if (!S_ISDIR(a->mode))
		return;
	pthread_mutex_lock(&in->lock);
	if (!in->dattr_valid) {
		in->dattr = *a;
		in->dattr_known = 1;
	}
	pthread_mutex_unlock(&in->lock);
}

int fz_dattr_gone(struct fz_inode *in, struct nacre_attr *a)
{
	pthread_mutex_lock(&in->lock);
	int known = in->dattr_known;
	if (known) {
		*a = in->dattr;
		a->nlink = 0;
	}
	in->dattr_valid = 0;
	pthread_mutex_unlock(&in->lock);
	return known;
}

int fz_dattr_lookup(struct fz_inode *in, struct nacre_attr *a, double *valid_s)
{
	int64_t left;
	int hit = 0;

	pthread_mutex_lock(&in->lock);
	left = in->dattr_until_ms - mono_ms();
	if (in->dattr_valid && left > 0) {
		*a = in->dattr;
		*valid_s = (double)left / 1000.0;
		hit = 1;
	} else {
		in->dattr_valid = 0;
	}
	pthread_mutex_unlock(&in->lock);
	return hit;
}

int fz_dattr_last(struct fz_inode *in, struct nacre_attr *a)
{
	pthread_mutex_lock(&in->lock);
	int known = in->dattr_known;
	if (known)
		*a = in->dattr;
	pthread_mutex_unlock(&in->lock);
	return known;
}

void fz_dattr_changed(struct fz_inode *dir, const struct nacre_time *when, int dnlink)
{
	struct nacre_time t;

	if (when) {
		t = *when;
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		t.sec = ts.tv_sec;
		t.nsec = (uint32_t)ts.tv_nsec;
	}
	pthread_mutex_lock(&dir->lock);
	if (dir->dattr_valid) {
		dir->dattr.mtime = dir->dattr.ctime = t;
		dir->dattr.nlink = (uint32_t)((int64_t)dir->dattr.nlink + dnlink);
	}
	pthread_mutex_unlock(&dir->lock);
}

void fz_dattr_drop(struct fz_inode *in)
{
	pthread_mutex_lock(&in->lock);
	in->dattr_valid = 0;
	in->dattr_gen++;
	pthread_mutex_unlock(&in->lock);
}
