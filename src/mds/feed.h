/* feed.h - the FIDs of the files changed since the HSM policy last looked (docs/changelog.md,
 * "The built-in HSM policy"), and the FID table both use.
 *
 * struct mds_fidset: an open-addressing table of FIDs, each with the policy's figures.
 * Not thread-safe; the owner locks.
 *
 * struct mds_feed: the changelog's hook (mds_changelog_add and _note, changelog.c) adds the
 * target FID of every change, recorded or not, while the feed is enabled; the policy takes
 * the whole set. The set is bounded: past its bound (or out of memory) it is dropped and
 * the feed says so once (the taker must then look at everything).
 * Threading: notes come from writer operations, takes from the HSM coordinator thread; the
 * feed's mutex is a leaf, held only to insert or swap. A disabled feed costs one atomic
 * load per change. */
#ifndef NACRE_MDS_FEED_H
#define NACRE_MDS_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

enum { MDS_FS_DEAD = 0, MDS_FS_PENDING, MDS_FS_ARCHIVE, MDS_FS_RELEASE };

struct mds_fidset_ent {
	struct nacre_fid fid;
	uint8_t used; /* the slot holds fid (maybe dead: kind MDS_FS_DEAD) */
	uint8_t kind; /* MDS_FS_* */
	int64_t due;   /* ARCHIVE: when the file comes of age */
	int64_t atime; /* RELEASE: its atime and size */
	uint64_t size;
};

struct mds_fidset {
	struct mds_fidset_ent *e;
	size_t cap;  /* slots, a power of 2 (0: none yet) */
	size_t used; /* slots used, dead ones included */
	size_t live; /* entries of a kind other than DEAD */
};

/* The entry of fid, made (kind DEAD, figures zero) if absent. NULL: out of memory. Pointers
 * into the set are good until the next get. */
struct mds_fidset_ent *mds_fidset_get(struct mds_fidset *s, const struct nacre_fid *fid);
/* Sets e's kind, keeping s->live right (use this, not e->kind = ...). */
void mds_fidset_set_kind(struct mds_fidset *s, struct mds_fidset_ent *e, uint8_t kind);
void mds_fidset_free(struct mds_fidset *s); /* empties s; s itself is the caller's */

struct mds_feed;

int mds_feed_create(struct mds_feed **out); /* 0 or -ENOMEM; disabled */
void mds_feed_destroy(struct mds_feed *f);  /* NULL is fine */
/* Starts collecting, at most max FIDs between two takes. Thread-safe. */
void mds_feed_enable(struct mds_feed *f, size_t max);
/* Adds fid (a zero FID is ignored) if enabled. Thread-safe, never blocks long. */
void mds_feed_note(struct mds_feed *f, const struct nacre_fid *fid);
/* Moves the collected set into *out (which must be empty) and returns 1 if FIDs were
 * dropped since the last take (the bound was passed or memory ran out), else 0. */
int mds_feed_take(struct mds_feed *f, struct mds_fidset *out);

#endif
