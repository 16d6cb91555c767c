/* journal.h - nacre-mount's write-back journal (libnacre's nacre_fs_wb_journal): where it
 * lives, the recovery of what an earlier process on this mount point left in it, and
 * turning write-back on with it (docs/writeback.md, "The journal").
 */
#ifndef NACRE_FZ_JOURNAL_H
#define NACRE_FZ_JOURNAL_H

#include <stddef.h>

#include "fuse/options.h"
#include "nacre/nacre.h"

#define FZ_JOURNAL_ROOT "/var/lib/nacre/wb"

/* The journal directory of the mount on mnt: -o wb_journal_dir, else one per mount point
 * under FZ_JOURNAL_ROOT ("/mnt/nacre" -> FZ_JOURNAL_ROOT/mnt-nacre, escaped as systemd
 * escapes unit names). */
void fz_journal_dir(const struct fz_args *a, const char *mnt, char *out, size_t len);
/* Sends what the journal in dir holds (an earlier process died with changes in it);
 * nothing when there is no journal. 0, or -1 with the reason in why. */
int fz_journal_recover(const char *dir, const struct nacre_mount_opts *mo, char *why,
		       size_t why_len);
/* Turns write-back on for fs as a asks: the journal first (unless wb_journal=off). 0, or
 * -1 with the reason in why. */
int fz_journal_wb_on(struct nacre_fs *fs, const struct fz_args *a, const char *dir, char *why,
		     size_t why_len);

#endif
