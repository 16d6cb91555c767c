/* files.c - the open-file table of an fs (fs->files): every nacre_file open on this
 * client, so that a truncate or an explicit mtime reaches the other handles of the file, and
 * a read through one handle sees what another handle here wrote.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "client/cl_internal.h"
#include "client/files.h"
#include "client/obj.h"

void cl_files_add(struct nacre_file *f)
{
	struct nacre_fs *fs = f->fs;

	pthread_mutex_lock(&fs->files_lock);
	f->prev = NULL;
	f->next = fs->files;
	if (fs->files)
		fs->files->prev = f;
	fs->files = f;
	pthread_mutex_unlock(&fs->files_lock);
}

void cl_files_del(struct nacre_file *f)
{
	struct nacre_fs *fs = f->fs;

	pthread_mutex_lock(&fs->files_lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		fs->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	f->next = f->prev = NULL;
	while (f->pins > 0)
		pthread_cond_wait(&fs->files_cond, &fs->files_lock);
	pthread_mutex_unlock(&fs->files_lock);
}

/* cl_files_pin of every file (fid NULL) or of fid's handles only. */
static int pin(struct nacre_fs *fs, const struct nacre_fid *fid, struct nacre_file ***out,
	       int *n)
{
	struct nacre_file **v = NULL;
	int count = 0, cap = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (fid && !nacre_fid_eq(&f->fid, fid))
			continue;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 16;
			struct nacre_file **nv = realloc(v, (size_t)ncap * sizeof(*nv));
			if (!nv) {
				for (int i = 0; i < count; i++)
					v[i]->pins--;
				pthread_mutex_unlock(&fs->files_lock);
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		f->pins++;
		v[count++] = f;
	}
	pthread_mutex_unlock(&fs->files_lock);
	*out = v;
	*n = count;
	return 0;
}

int cl_files_pin(struct nacre_fs *fs, struct nacre_file ***out, int *n)
{
	return pin(fs, NULL, out, n);
}

int cl_files_pin_fid(struct nacre_fs *fs, const struct nacre_fid *fid, struct nacre_file ***out,
		     int *n)
{
	return pin(fs, fid, out, n);
}

void cl_files_unpin(struct nacre_fs *fs, struct nacre_file **files, int n)
{
	if (!files)
		return;
	pthread_mutex_lock(&fs->files_lock);
	for (int i = 0; i < n; i++)
		files[i]->pins--;
	pthread_cond_broadcast(&fs->files_cond);
	pthread_mutex_unlock(&fs->files_lock);
	free(files);
}

void cl_files_set_size(struct nacre_fs *fs, const struct nacre_fid *fid, uint64_t size)
{
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (!nacre_fid_eq(&f->fid, fid))
			continue;
		pthread_mutex_lock(&f->lock);
		if (f->written_end > size)
			f->written_end = size;
		if (f->report_end > size)
			f->report_end = size;
		if (f->published_end > size)
			f->published_end = size;
		f->attr.size = size;
		f->dense = 0; /* a truncate may leave a hole: measure the blocks at close */
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
	cl_wgen_bump(fs, fid); /* readahead of the old contents is stale */
}

uint64_t cl_files_known_size(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	uint64_t size = 0;

	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (!nacre_fid_eq(&f->fid, fid))
			continue;
		pthread_mutex_lock(&f->lock);
		if (f->attr.size > size)
			size = f->attr.size;
		if (f->written_end > size)
			size = f->written_end;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
	return size;
}

void cl_files_mtime_set(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	pthread_mutex_lock(&fs->files_lock);
	for (struct nacre_file *f = fs->files; f; f = f->next) {
		if (!nacre_fid_eq(&f->fid, fid))
			continue;
		pthread_mutex_lock(&f->lock);
		f->published_seq = f->write_seq;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&fs->files_lock);
}
