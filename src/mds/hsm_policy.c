/* hsm_policy.c - the built-in HSM policy, run by the coordinator thread: archive files not
 * modified for a while, release the least recently used archived files while an OST is too
 * full. Its requests go through the same path as users' (hsm_queue.c). */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/changelog.h"
#include "mds/destroy.h"
#include "mds/hsm_int.h"
#include "mds/targets.h"
#include "mds/writer.h"

#define POLICY_RELEASE_SETTLE_MS 10000

/* Policy candidates, collected in one read pass over the inodes. */
struct cand {
	struct nacre_fid fid;
	int64_t atime;
	uint64_t size;
};

struct policy_scan {
	struct mds_hsm *h;
	int64_t now;
	int64_t due; /* the soonest a file not old enough yet comes of age */
	struct nacre_fid *archive;
	size_t narchive, caparchive;
	struct cand *release;
	size_t nrelease, caprelease;
};

static int policy_inode(void *arg, const struct mds_inode *ino)
{
	struct policy_scan *s = arg;
	const struct mds_hsm_conf *cf = &s->h->conf;
	uint32_t st = ino->hsm_state;
	if (!S_ISREG(ino->mode) || ino->nlink == 0)
		return 0;
	if (cf->archive_age_s > 0 && !(st & (NACRE_HS_NOARCHIVE | NACRE_HS_RELEASED)) &&
	    (!(st & NACRE_HS_ARCHIVED) || (st & NACRE_HS_DIRTY)) &&
	    s->now - ino->mtime.sec < cf->archive_age_s &&
	    ino->mtime.sec + cf->archive_age_s < s->due)
		s->due = ino->mtime.sec + cf->archive_age_s;
	if (cf->archive_age_s > 0 && !(st & (NACRE_HS_NOARCHIVE | NACRE_HS_RELEASED)) &&
	    (!(st & NACRE_HS_ARCHIVED) || (st & NACRE_HS_DIRTY)) &&
	    s->now - ino->mtime.sec >= cf->archive_age_s && s->narchive < 100000) {
		if (s->narchive == s->caparchive) {
			size_t cap = s->caparchive ? s->caparchive * 2 : 256;
			void *v = realloc(s->archive, cap * sizeof(*s->archive));
			if (!v)
				return -ENOMEM;
			s->archive = v;
			s->caparchive = cap;
		}
		s->archive[s->narchive++] = ino->fid;
	}
	if (cf->release_high > 0 && (st & NACRE_HS_ARCHIVED) && (st & NACRE_HS_EXISTS) &&
	    !(st & (NACRE_HS_RELEASED | NACRE_HS_DIRTY | NACRE_HS_NORELEASE | NACRE_HS_LOST)) &&
	    ino->size > 0 && s->nrelease < 1000000) {
		if (s->nrelease == s->caprelease) {
			size_t cap = s->caprelease ? s->caprelease * 2 : 256;
			void *v = realloc(s->release, cap * sizeof(*s->release));
			if (!v)
				return -ENOMEM;
			s->release = v;
			s->caprelease = cap;
		}
		s->release[s->nrelease++] = (struct cand){ino->fid, ino->atime.sec, ino->size};
	}
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

/* A scan reads every inode: it runs only when the namespace changed since the last one
 * (the changelog's change count moved), a file comes of age, or an OST is above the
 * release mark. A quiet file system costs one look at a counter and the OST figures. */
static int scan_needed(struct mds_hsm *h, int64_t now, uint64_t changes)
{
	if (!h->policy_scanned || changes != h->policy_changes)
		return 1;
	if (h->conf.archive_age_s > 0 && now >= h->policy_due)
		return 1;
	return h->conf.release_high > 0 && ost_above_high(h) &&
	       now_ms() - h->last_release_ms >= POLICY_RELEASE_SETTLE_MS;
}

void mds_hsm_run_policy(struct mds_hsm *h)
{
	struct policy_scan s = {.h = h, .now = time_now().sec, .due = INT64_MAX};
	struct mds_txn *txn;
	/* read before the scan: a change during it makes the next run scan again */
	uint64_t changes = mds_changelog_changes(h->m->changelog);
	if (!scan_needed(h, s.now, changes)) {
		h->policy_skips++;
		return;
	}
	if (mds_txn_begin_read(h->m->db, &txn))
		return;
	int rc = mds_db_inode_iter(txn, policy_inode, &s);
	mds_txn_abort(txn);
	if (!rc) {
		h->policy_scanned = 1;
		h->policy_changes = changes;
		h->policy_due = s.due;
	}
	h->policy_scans++;
	LOG_DEBUG("hsm", "policy: scan %llu (%llu skipped since start): %zu to archive, %zu "
		  "archived", (unsigned long long)h->policy_scans,
		  (unsigned long long)h->policy_skips, s.narchive, s.nrelease);
	if (!rc && s.narchive) {
		LOG_INFO("hsm", "policy: archiving %zu files not modified for %llds", s.narchive,
			 (long long)h->conf.archive_age_s);
		policy_request(h, NACRE_HUA_ARCHIVE, s.archive, (uint32_t)s.narchive);
	}
	/* The space a release frees shows in the OSTs' statfs only after the destroy log ran
	 * and a few heartbeats: deciding again before would release far too much. */
	if (!rc && s.nrelease && h->conf.release_high > 0 &&
	    now_ms() - h->last_release_ms >= POLICY_RELEASE_SETTLE_MS) {
		/* the fullest OST decides; release LRU files until the bytes freed bring it
		 * below the low mark (an estimate: files spread over the OSTs) */
		struct nacre_target *t = NULL;
		int n = mds_targets_list(h->m->targets, &t);
		uint64_t need = 0;
		for (int i = 0; i < n; i++) {
			if (!t[i].up || t[i].st.kb_total == 0)
				continue;
			uint64_t u = t[i].st.kb_total - t[i].st.kb_free;
			if (u * 100 > (uint64_t)h->conf.release_high * t[i].st.kb_total) {
				uint64_t low = (uint64_t)h->conf.release_low * t[i].st.kb_total / 100;
				/* files are spread over the n OSTs: freeing X frees ~X/n here */
				uint64_t over = (u - low) * 1024 * (uint64_t)n;
				if (over > need)
					need = over;
			}
		}
		free(t);
		if (need > 0) {
			qsort(s.release, s.nrelease, sizeof(*s.release), by_atime);
			struct nacre_fid *fids = malloc(sizeof(*fids) * s.nrelease);
			uint32_t k = 0;
			uint64_t freed = 0;
			for (size_t i = 0; fids && i < s.nrelease && freed < need; i++) {
				fids[k++] = s.release[i].fid;
				freed += s.release[i].size;
			}
			LOG_INFO("hsm", "policy: an OST is above %d%%: releasing %u files",
				 h->conf.release_high, k);
			if (fids)
				policy_request(h, NACRE_HUA_RELEASE, fids, k);
			h->last_release_ms = now_ms();
			free(fids);
		}
	}
	free(s.archive);
	free(s.release);
}
