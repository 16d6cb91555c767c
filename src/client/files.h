/* files.h - the open-file table (files.c): fs->files, under fs->files_lock. Below the
 * metadata and file calls; calls only the object engine (write generations).
 */
#ifndef NACRE_CL_FILES_H
#define NACRE_CL_FILES_H

#include <stdint.h>

struct nacre_fs;
struct nacre_file;
struct nacre_fid;

/* Adds an opened f to its fs's table / removes it (before f is freed; waits while it is
 * pinned). Thread-safe. */
void cl_files_add(struct nacre_file *f);
void cl_files_del(struct nacre_file *f);
/* Every open file, pinned (not freed until unpinned): *out is malloc'd, *n its length.
 * 0 or -ENOMEM. Thread-safe. */
int cl_files_pin(struct nacre_fs *fs, struct nacre_file ***out, int *n);
/* Drops the pins of cl_files_pin and frees the array (NULL is fine). Thread-safe. */
void cl_files_unpin(struct nacre_fs *fs, struct nacre_file **files, int n);
/* Tells the open files of fid on this fs that the MDS size is now size (after a truncate),
 * so that their written end no longer reports the old size. Thread-safe. */
void cl_files_set_size(struct nacre_fs *fs, const struct nacre_fid *fid, uint64_t size);
/* The highest end offset any open handle of fid on this fs wrote (0 if none): writes the
 * MDS may not know yet. Thread-safe. */
uint64_t cl_files_written_end(struct nacre_fs *fs, const struct nacre_fid *fid);
/* Marks the writes of every open handle of fid as having their mtime at the MDS already,
 * after an explicit mtime was set. Thread-safe. */
void cl_files_mtime_set(struct nacre_fs *fs, const struct nacre_fid *fid);

#endif
