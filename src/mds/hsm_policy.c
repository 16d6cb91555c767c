/* hsm_policy.c - the built-in HSM policy, run by the coordinator thread: archive files not
 * modified for a while, release the least recently used archived files while an OST is too
 * full. Its requests go through the same path as users' (hsm_queue.c).
 *
 * One full scan of the inodes (the first run after a start) finds the files the policy
 * follows (hsm_int.h: policy_cands); from then on a run reads only the inodes that the
 * changelog's hook fed it since the last run (feed.h), so a quiet file system costs it no
 * read at all. Past --hsm-policy-max-files followed or fed files it scans as it did before
 * (after changes, when a file comes of age, when an OST is above the mark) until a scan
 * finds few enough again. docs/changelog.md has the why. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"
#include "mds/changelog.h"
#include "mds/destroy.h"
#include "mds/hsm_int.h"
#include "mds/targets.h"
#include "mds/writer.h"

#define POLICY_RELEASE_SETTLE_MS 10000
#define POLICY_MAX_FILES_DEFAULT 1000000
#define POLICY_ARCHIVE_BATCH 100000 /* archive requests per run; the rest wait a run */

struct cand {
	struct nacre_fid fid;
	int64_t atime;
	uint64_t size;
};

/* One run: what it found to do now. */
struct policy_run {
	struct mds_hsm *h;
	int64_t now;
	int64_t due; /* the soonest a file not old enough yet comes of age */
	struct nacre_fid *archive;
	size_t narchive, caparchive;
	struct cand *release; /* a full scan's release candidates (not followed) */
	size_t nrelease, caprelease;
	int scan;       /* a full scan: collect release candidates into release */
	int follow;     /* keep h->policy_cands up to date */
	int overflow;   /* policy_cands passed its bound (it was emptied) */
	uint64_t examined;
};

static size_t max_files(const struct mds_hsm *h)
{
	return h->conf.policy_max_files ? (size_t)h->conf.policy_max_files
					: POLICY_MAX_FILES_DEFAULT;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 256;
	void *p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* What the policy makes of an inode: MDS_FS_ARCHIVE (due when *due), MDS_FS_RELEASE or
 * MDS_FS_DEAD (nothing to do with it until it changes). */
static int classify(const struct mds_hsm *h, const struct mds_inode *ino, int64_t *due)
{
	const struct mds_hsm_conf *cf = &h->conf;
	uint32_t st = ino->hsm_state;
	if (!S_ISREG(ino->mode) || ino->nlink == 0)
		return MDS_FS_DEAD;
	if (cf->archive_age_s > 0 && !(st & (NACRE_HS_NOARCHIVE | NACRE_HS_RELEASED)) &&
	    (!(st & NACRE_HS_ARCHIVED) || (st & NACRE_HS_DIRTY))) {
		*due = ino->mtime.sec + cf->archive_age_s;
		return MDS_FS_ARCHIVE;
	}
	if (cf->release_high > 0 && (st & NACRE_HS_ARCHIVED) && (st & NACRE_HS_EXISTS) &&
	    !(st & (NACRE_HS_RELEASED | NACRE_HS_DIRTY | NACRE_HS_NORELEASE | NACRE_HS_LOST)) &&
	    ino->size > 0)
		return MDS_FS_RELEASE;
	return MDS_FS_DEAD;
}

static void overflow(struct policy_run *s)
{
	s->overflow = 1;
	s->follow = 0;
	mds_fidset_free(&s->h->policy_cands);
}

/* Records what fid now is in the followed set. */
static void follow(struct policy_run *s, const struct nacre_fid *fid, int kind, int64_t due,
		   const struct mds_inode *ino)
{
	struct mds_fidset *c = &s->h->policy_cands;
	if (!s->follow || (kind == MDS_FS_DEAD && c->live == 0))
		return;
	struct mds_fidset_ent *e = mds_fidset_get(c, fid);
	if (!e || (e->kind == MDS_FS_DEAD && kind != MDS_FS_DEAD && c->live >= max_files(s->h))) {
		overflow(s);
		return;
	}
	mds_fidset_set_kind(c, e, (uint8_t)kind);
	e->due = due;
	e->atime = ino ? ino->atime.sec : 0;
	e->size = ino ? ino->size : 0;
}

/* One inode, from the full scan or from the feed. */
static int policy_inode(void *arg, const struct mds_inode *ino)
{
	struct policy_run *s = arg;
	int64_t due = 0;
	int kind = classify(s->h, ino, &due);

	s->examined++;
	if (kind == MDS_FS_ARCHIVE && due <= s->now && s->narchive < POLICY_ARCHIVE_BATCH) {
		if (grow((void **)&s->archive, &s->caparchive, s->narchive, sizeof(*s->archive)))
			return -ENOMEM;
		s->archive[s->narchive++] = ino->fid;
		kind = MDS_FS_DEAD; /* requested: its end (an HSM change) brings it back */
	}
	if (kind == MDS_FS_ARCHIVE && due < s->due)
		s->due = due;
	if (kind == MDS_FS_RELEASE && s->scan && s->nrelease < 1000000) {
		if (grow((void **)&s->release, &s->caprelease, s->nrelease, sizeof(*s->release)))
			return -ENOMEM;
		s->release[s->nrelease++] = (struct cand){ino->fid, ino->atime.sec, ino->size};
	}
	follow(s, &ino->fid, kind, due, ino);
	return 0;
}

static int by_atime(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return x->atime < y->atime ? -1 : x->atime > y->atime;
}

/* Sends one user request (as root) for fids through the normal request path. */
static void policy_request(struct mds_hsm *h, uint32_t action, const struct nacre_fid *fids,
			   uint32_t n)
{
	while (n > 0) {
		uint32_t k = n > 1000 ? 1000 : n;
		struct wire_hsm_request r = {.action = action, .nfids = k};
		int32_t *rcs = calloc(k, sizeof(*rcs));
		if (!rcs)
			return;
		struct hsm_req_arg a = {h, &r, fids, rcs, 0, 0};
		mds_writer_submit(h->m->writer, mds_hsm_request_op, &a);
		if (a.released)
			mds_destroyer_kick(h->m->destroyer);
		if (a.queued)
			wake(h);
		free(rcs);
		fids += k;
		n -= k;
	}
}

/* 1 if an OST is above the release mark (from the heartbeats' figures, in memory). */
static int ost_above_high(struct mds_hsm *h)
{
	struct nacre_target *t = NULL;
	int n = mds_targets_list(h->m->targets, &t), above = 0;
	for (int i = 0; i < n; i++) {
		uint64_t u = t[i].st.kb_total - t[i].st.kb_free;
		if (t[i].up && t[i].st.kb_total &&
		    u * 100 > (uint64_t)h->conf.release_high * t[i].st.kb_total)
			above = 1;
	}
	free(t);
	return above;
}

/* Without the followed set (scans mode): a scan runs only when the namespace changed since
 * the last one (the changelog's change count moved), a file comes of age, or an OST is
 * above the release mark. */
static int scan_needed(struct mds_hsm *h, int64_t now, uint64_t changes)
{
	if (!h->policy_scanned || changes != h->policy_changes)
		return 1;
	if (h->conf.archive_age_s > 0 && now >= h->policy_due)
		return 1;
	return h->conf.release_high > 0 && ost_above_high(h) &&
	       now_ms() - h->last_release_ms >= POLICY_RELEASE_SETTLE_MS;
}

static int barrier_op(struct mds_txn *txn, void *arg)
{
	(void)txn;
	(void)arg;
	return 0;
}

/* The feed is filled inside writer operations, before their commit: once an operation
 * submitted after taking it committed, every change fed before is visible to a read. */
static void barrier(struct mds_hsm *h)
{
	mds_writer_submit(h->m->writer, barrier_op, NULL);
}

static void log_overflow(struct mds_hsm *h, const char *what)
{
	if (h->policy_warned)
		return;
	h->policy_warned = 1;
	LOG_WARN("hsm", "policy: %s more than %zu files (--hsm-policy-max-files): scanning every "
		 "inode after changes until a scan finds fewer to follow", what, max_files(h));
}

/* Every inode: rebuilds the followed set (unless it passes the bound). */
static int full_scan(struct mds_hsm *h, struct policy_run *s, uint64_t changes)
{
	struct mds_txn *txn;

	barrier(h);
	mds_fidset_free(&h->policy_cands);
	s->scan = 1;
	s->follow = 1;
	if (mds_txn_begin_read(h->m->db, &txn))
		return -EIO;
	int rc = mds_db_inode_iter(txn, policy_inode, s);
	mds_txn_abort(txn);
	h->policy_scans++;
	metrics_add(h->m_scans, 1);
	if (rc)
		return rc;
	h->policy_scanned = 1;
	h->policy_changes = changes;
	h->policy_due = s->due;
	h->policy_whole = !s->overflow;
	if (s->overflow)
		log_overflow(h, "a scan found");
	else
		h->policy_warned = 0;
	LOG_DEBUG("hsm", "policy: scan %llu (%llu runs without one): %llu inodes, %zu to "
		  "archive, %zu archived, %zu followed", (unsigned long long)h->policy_scans,
		  (unsigned long long)h->policy_skips, (unsigned long long)s->examined,
		  s->narchive, s->nrelease, h->policy_cands.live);
	return 0;
}

/* Reads the inodes of the changed FIDs, then takes the followed files that came of age. */
static int incremental(struct mds_hsm *h, struct policy_run *s, struct mds_fidset *changed)
{
	s->follow = 1;
	s->due = h->policy_due;
	if (changed->live) {
		struct mds_txn *txn;
		barrier(h);
		if (mds_txn_begin_read(h->m->db, &txn))
			return -EIO;
		int rc = 0;
		for (size_t i = 0; !rc && i < changed->cap; i++) {
			const struct mds_fidset_ent *c = &changed->e[i];
			struct mds_inode ino;
			if (!c->used || c->kind == MDS_FS_DEAD)
				continue;
			rc = mds_db_inode_get(txn, &c->fid, &ino);
			if (rc == -ENOENT) { /* gone */
				s->examined++;
				follow(s, &c->fid, MDS_FS_DEAD, 0, NULL);
				rc = 0;
			} else if (!rc) {
				rc = policy_inode(s, &ino);
			}
		}
		mds_txn_abort(txn);
		if (rc)
			return rc;
		if (s->overflow) {
			log_overflow(h, "following");
			h->policy_whole = 0;
			h->policy_scanned = 0; /* the next run scans */
			return 0;
		}
	}
	if (s->now >= s->due) { /* in memory: the followed files that came of age */
		struct mds_fidset *c = &h->policy_cands;
		s->due = INT64_MAX;
		for (size_t i = 0; i < c->cap; i++) {
			struct mds_fidset_ent *e = &c->e[i];
			if (!e->used || e->kind != MDS_FS_ARCHIVE)
				continue;
			if (e->due <= s->now && s->narchive < POLICY_ARCHIVE_BATCH &&
			    !grow((void **)&s->archive, &s->caparchive, s->narchive,
				  sizeof(*s->archive))) {
				s->archive[s->narchive++] = e->fid;
				mds_fidset_set_kind(c, e, MDS_FS_DEAD);
			} else if (e->due < s->due) {
				s->due = e->due;
			}
		}
	}
	h->policy_due = s->due;
	if (s->examined)
		LOG_DEBUG("hsm", "policy: %llu changed inodes read, %zu to archive, %zu followed",
			  (unsigned long long)s->examined, s->narchive, h->policy_cands.live);
	return 0;
}

/* How many bytes to release: the fullest OST decides, down to the low mark (an estimate:
 * files are spread over the n OSTs, so freeing X frees ~X/n on it). 0: none above. */
static uint64_t release_need(struct mds_hsm *h)
{
	struct nacre_target *t = NULL;
	int n = mds_targets_list(h->m->targets, &t);
	uint64_t need = 0;
	for (int i = 0; i < n; i++) {
		if (!t[i].up || t[i].st.kb_total == 0)
			continue;
		uint64_t u = t[i].st.kb_total - t[i].st.kb_free;
		if (u * 100 > (uint64_t)h->conf.release_high * t[i].st.kb_total) {
			uint64_t low = (uint64_t)h->conf.release_low * t[i].st.kb_total / 100;
			uint64_t over = (u - low) * 1024 * (uint64_t)n;
			if (over > need)
				need = over;
		}
	}
	free(t);
	return need;
}

/* The followed release candidates, into s->release (in memory, no inode read). */
static void followed_releases(struct mds_hsm *h, struct policy_run *s)
{
	const struct mds_fidset *c = &h->policy_cands;
	for (size_t i = 0; i < c->cap; i++) {
		const struct mds_fidset_ent *e = &c->e[i];
		if (!e->used || e->kind != MDS_FS_RELEASE)
			continue;
		if (grow((void **)&s->release, &s->caprelease, s->nrelease, sizeof(*s->release)))
			return;
		s->release[s->nrelease++] = (struct cand){e->fid, e->atime, e->size};
	}
}

/* Releases LRU files until the bytes freed bring the fullest OST below the low mark. The
 * space a release frees shows in the OSTs' statfs only after the destroy log ran and a few
 * heartbeats: deciding again before would release far too much. */
static void release(struct mds_hsm *h, struct policy_run *s)
{
	if (h->conf.release_high <= 0 || now_ms() - h->last_release_ms < POLICY_RELEASE_SETTLE_MS)
		return;
	uint64_t need = release_need(h);
	if (need == 0)
		return;
	if (!s->scan)
		followed_releases(h, s);
	if (!s->nrelease)
		return;
	qsort(s->release, s->nrelease, sizeof(*s->release), by_atime);
	struct nacre_fid *fids = malloc(sizeof(*fids) * s->nrelease);
	uint32_t k = 0;
	uint64_t freed = 0;
	for (size_t i = 0; fids && i < s->nrelease && freed < need; i++) {
		fids[k++] = s->release[i].fid;
		freed += s->release[i].size;
		/* released, it is no candidate; refused, it waits for its next change */
		struct mds_fidset_ent *e = h->policy_whole
			? mds_fidset_get(&h->policy_cands, &s->release[i].fid) : NULL;
		if (e)
			mds_fidset_set_kind(&h->policy_cands, e, MDS_FS_DEAD);
	}
	LOG_INFO("hsm", "policy: an OST is above %d%%: releasing %u files", h->conf.release_high,
		 k);
	if (fids)
		policy_request(h, NACRE_HUA_RELEASE, fids, k);
	h->last_release_ms = now_ms();
	free(fids);
}

void mds_hsm_run_policy(struct mds_hsm *h)
{
	struct policy_run s = {.h = h, .now = time_now().sec, .due = INT64_MAX};
	struct mds_fidset changed = {0};
	/* read before anything: a change after it makes the next run look again */
	uint64_t changes = mds_changelog_changes(h->m->changelog);
	int rc;

	if (mds_feed_take(mds_changelog_feed(h->m->changelog), &changed) && h->policy_whole) {
		log_overflow(h, "changes to");
		h->policy_whole = 0;
		h->policy_scanned = 0;
	}
	if (h->policy_whole) {
		rc = incremental(h, &s, &changed);
	} else if (scan_needed(h, s.now, changes)) {
		rc = full_scan(h, &s, changes);
	} else {
		h->policy_skips++;
		rc = 1;
	}
	mds_fidset_free(&changed);
	metrics_add(h->m_examined, s.examined);
	metrics_set(h->m_cands, (double)h->policy_cands.live);
	if (!rc && s.narchive) {
		LOG_INFO("hsm", "policy: archiving %zu files not modified for %llds", s.narchive,
			 (long long)h->conf.archive_age_s);
		policy_request(h, NACRE_HUA_ARCHIVE, s.archive, (uint32_t)s.narchive);
	}
	if (!rc)
		release(h, &s);
	else if (!h->policy_whole && rc != 1)
		h->policy_scanned = 0; /* failed: scan again */
	free(s.archive);
	free(s.release);
}

void mds_hsm_policy_init(struct mds_hsm *h)
{
	h->policy_due = INT64_MAX;
	h->m_examined = metrics_counter("nacre_mds_hsm_policy_inodes_examined_total", "",
					"inodes the HSM policy read (all of them in a full scan, "
					"the changed ones otherwise)");
	h->m_scans = metrics_counter("nacre_mds_hsm_policy_scans_total", "",
				     "full inode scans of the HSM policy");
	h->m_cands = metrics_gauge("nacre_mds_hsm_policy_followed_files", "",
				   "files the HSM policy follows (to archive when they come of "
				   "age, or to release)");
	if (h->conf.archive_age_s > 0 || h->conf.release_high > 0)
		mds_feed_enable(mds_changelog_feed(h->m->changelog), max_files(h));
}

void mds_hsm_policy_fini(struct mds_hsm *h)
{
	mds_fidset_free(&h->policy_cands);
}
