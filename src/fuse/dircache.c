/* dircache.c - directory attributes answered by nacre-mount itself (see fz.h). */
#include <pthread.h>
#include <stdlib.h>
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
	if (!in->dattr)
		in->dattr = calloc(1, sizeof(*in->dattr)); /* none: not cached, asked again */
	if (in->dattr && in->dattr_gen == gen) {
		in->dattr->attr = *a;
		in->dattr->known = 1;
		if (m->attr_timeout > 0) {
			in->dattr->until_ms = mono_ms() + (int64_t)(m->attr_timeout * 1000.0);
			in->dattr->valid = 1;
		}
	}
	pthread_mutex_unlock(&in->lock);
}

void fz_dattr_note(struct fz_inode *in, const struct nacre_attr *a)
{
	if (!S_ISDIR(a->mode))
		return;
	pthread_mutex_lock(&in->lock);
	if (!in->dattr)
		in->dattr = calloc(1, sizeof(*in->dattr));
	if (in->dattr && !in->dattr->valid) {
		in->dattr->attr = *a;
		in->dattr->known = 1;
	}
	pthread_mutex_unlock(&in->lock);
}

int fz_dattr_gone(struct fz_inode *in, struct nacre_attr *a)
{
	pthread_mutex_lock(&in->lock);
	int known = in->dattr && in->dattr->known;
	if (known) {
		*a = in->dattr->attr;
		a->nlink = 0;
		in->dattr->valid = 0;
	}
	pthread_mutex_unlock(&in->lock);
	return known;
}

int fz_dattr_lookup(struct fz_inode *in, struct nacre_attr *a, double *valid_s)
{
	int64_t left;
	int hit = 0;

	pthread_mutex_lock(&in->lock);
	struct fz_dattr *d = in->dattr;
	left = d ? d->until_ms - mono_ms() : 0;
	if (d && d->valid && left > 0) {
		*a = d->attr;
		*valid_s = (double)left / 1000.0;
		hit = 1;
	} else if (d) {
		d->valid = 0;
	}
	pthread_mutex_unlock(&in->lock);
	return hit;
}

int fz_dattr_last(struct fz_inode *in, struct nacre_attr *a)
{
	pthread_mutex_lock(&in->lock);
	int known = in->dattr && in->dattr->known;
	if (known)
		*a = in->dattr->attr;
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
	struct fz_dattr *d = dir->dattr;
	if (d && d->valid) {
		d->attr.mtime = d->attr.ctime = t;
		d->attr.nlink = (uint32_t)((int64_t)d->attr.nlink + dnlink);
	}
	pthread_mutex_unlock(&dir->lock);
}

void fz_dattr_drop(struct fz_inode *in)
{
	pthread_mutex_lock(&in->lock);
	if (in->dattr)
		in->dattr->valid = 0;
	in->dattr_gen++;
	pthread_mutex_unlock(&in->lock);
}
