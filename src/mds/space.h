/* space.h - room kept on the MDT for the changes that give space back.
 *
 * LMDB copies every page a transaction changes, a delete's too, so even an unlink needs free
 * pages; and a full file system refuses to grow data.mdb. An MDT that filled up could then
 * not be emptied. As ext4 reserves blocks, the MDS keeps room back:
 *
 *  - the reserve: a change that takes space (create, mkdir, mknod, symlink, link, setxattr,
 *    layout set, HSM import) is refused with -ENOSPC once the room left is under it. The
 *    room is the file system's free space (within what LMDB's map has left) plus the pages
 *    LMDB freed and will reuse. Every other change (unlink, rmdir, rename, truncate and the
 *    other setattrs, close, removexattr...) still runs, and so do replays.
 *  - the ballast: a file DIR/reserve of the same size, made at start, holds room that
 *    nothing else on the file system can take. When the room falls under half the reserve
 *    (another program filled the file system) it is removed before a commit can fail, and
 *    made again once the room is back (two reserves and an eighth: creates that ran
 *    without it go on with it); while it is missing, changes that take space need the
 *    reserve and the ballast's size.
 *
 * The reserve is 1/128 of the file system, at least 1 MiB, at most 64 MiB: 2,000 unlinks on
 * a full MDT take about 100 KiB. The file system is looked at every second, and at most
 * every 10 ms once the room is within four reserves. Thread-safe (one mutex, a leaf).
 */
#ifndef NACRE_MDS_SPACE_H
#define NACRE_MDS_SPACE_H

#include <stdint.h>

#include "mds/db.h"

#define MDS_SPACE_BALLAST "reserve"

struct mds_space;

/* A guard over db, whose files are in dir (borrowed, must outlive it). Makes the ballast
 * (a file system without room for it is logged, not an error). Returns 0 or -ENOMEM. */
int mds_space_create(struct mds_db *db, const char *dir, struct mds_space **out);
void mds_space_destroy(struct mds_space *s); /* NULL is fine; the ballast stays */
/* Whether a change of opcode may run now: 0, or -ENOSPC for one that takes space while the
 * room is under the reserve. replay: the change was acknowledged before a restart (always
 * runs). NULL s: 0. */
int mds_space_admit(struct mds_space *s, uint16_t opcode, int replay);
/* The group commit, before committing a batch: removes the ballast if the room is nearly
 * gone. NULL s is fine. */
void mds_space_before_commit(struct mds_space *s);
/* The group commit: a commit failed with -ENOSPC all the same. NULL s is fine. */
void mds_space_commit_failed(struct mds_space *s);
/* Changes refused so far (metrics). */
uint64_t mds_space_refused(const struct mds_space *s);

#endif
