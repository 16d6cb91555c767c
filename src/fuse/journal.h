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
 * nothing when there is no journal. 0, or -errno (-EBUSY: a live process has it) with the
 * reason in why. */
int fz_journal_recover(const char *dir, const struct nacre_mount_opts *mo, char *why,
		       size_t why_len);
struct fz_mount;
/* Turns write-back on for the mount m: its journal first (m->journal, unless m->wb_journal
 * is off; kept when already open). For -o wb=on and llite.*.wb=1 alike. 0, or -1 with the
 * reason in why. */
int fz_journal_wb_on(struct fz_mount *m, char *why, size_t why_len);

#endif
