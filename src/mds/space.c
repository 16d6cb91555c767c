/* space.c - the MDT's reserve and ballast (see space.h). */
#include "mds/space.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"
#include "proto/wire.h"

#define RESERVE_MIN (1ull << 20)
#define RESERVE_MAX (64ull << 20)
#define CHANGE_BYTES 1024 /* what one admitted change is counted to take until the next look
			   * (a create takes about 300 bytes of pages) */
#define NEAR 4            /* within this many reserves: look often */
#define LOOK_MS 1000
#define LOOK_NEAR_MS 10

struct mds_space {
	struct mds_db *db;
	const char *dir;
	char ballast_path[PATH_MAX];
	pthread_mutex_t lock; /* protects everything below but refused */
	uint64_t reserve;     /* bytes; the ballast's size too */
	int ballast;          /* the ballast file is in place */
	int64_t looked_ms;    /* the last look at the file system; 0 = look now */
	uint64_t fs_free;     /* free bytes of the file system, at the last look */
	uint64_t room;        /* what LMDB can still write, at the last look */
	uint64_t admitted;    /* changes that take space admitted since the last look */
	int full;             /* refusing them (one log line per change of state) */
	uint64_t refused;     /* atomic */
};

/* The room a change that takes space needs. */
static uint64_t need(const struct mds_space *s)
{
	return s->ballast ? s->reserve : 2 * s->reserve;
}

/* The room left, counting the changes admitted since the last look. */
static uint64_t room_now(const struct mds_space *s)
{
	uint64_t used = s->admitted * CHANGE_BYTES;
	return s->room > used ? s->room - used : 0;
}

static int make_ballast(struct mds_space *s)
{
	struct stat st;
	int fd = open(s->ballast_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > s->reserve &&
	    ftruncate(fd, (off_t)s->reserve) < 0)
		rc = -errno;
	/* allocated blocks, not a sparse file: the point is that nobody else can take them */
	if (!rc)
		rc = -posix_fallocate(fd, 0, (off_t)s->reserve);
	close(fd);
	if (rc)
		unlink(s->ballast_path);
	return rc;
}

static void drop_ballast(struct mds_space *s, const char *why)
{
	if (unlink(s->ballast_path) < 0 && errno != ENOENT) {
		LOG_RATELIMITED(LOG_LVL_ERR, "space", "cannot remove the ballast %s: %s",
				s->ballast_path, strerror(errno));
		return;
	}
	s->ballast = 0;
	s->looked_ms = 0;
	LOG_WARN("space", "%s: removed the %llu KiB ballast %s so that unlinks, truncates and "
			  "other changes that free space go on; creates need %llu KiB free again",
		 why, (unsigned long long)(s->reserve >> 10), s->ballast_path,
		 (unsigned long long)(2 * s->reserve >> 10));
}

/* Looks at the file system and the store; removes or remakes the ballast. Caller holds
 * s->lock. */
static void look(struct mds_space *s, int64_t now)
{
	struct statvfs sv;
	struct mds_db_room r;
	uint64_t fs_free = UINT64_MAX;

	if (statvfs(s->dir, &sv) == 0)
		fs_free = (uint64_t)sv.f_bavail * sv.f_frsize;
	/* LMDB's free pages matter only near the end: counting them walks its free list */
	int near = fs_free < NEAR * need(s);
	if (mds_db_room(s->db, near, &r) == 0 && !near && r.map_left < NEAR * need(s))
		mds_db_room(s->db, 1, &r); /* the map itself is nearly full */
	s->fs_free = fs_free;
	s->room = (fs_free < r.map_left ? fs_free : r.map_left) + r.free_bytes;
	s->looked_ms = now;
	s->admitted = 0;
	if (s->ballast && s->room < s->reserve / 2) {
		char why[128];
		snprintf(why, sizeof(why), "the file system of %s is nearly full (%llu KiB left)",
			 s->dir, (unsigned long long)(fs_free >> 10));
		drop_ballast(s, why);
	} else if (!s->ballast && fs_free != UINT64_MAX && fs_free >= s->reserve + s->reserve / 2 &&
		   s->room >= 2 * s->reserve + s->reserve / 8 && make_ballast(s) == 0) {
		/* What is left after it stays above where it would be dropped again, and above
		 * the reserve by a margin: a create admitted just before (room >= 2 reserves)
		 * must not find creates refused again a moment later. */
		s->ballast = 1;
		s->fs_free -= s->reserve;
		s->room -= s->reserve;
		LOG_INFO("space", "made the %llu KiB ballast %s again",
			 (unsigned long long)(s->reserve >> 10), s->ballast_path);
	}
}

static int due(const struct mds_space *s, int64_t now)
{
	if (!s->looked_ms)
		return 1;
	int64_t every = room_now(s) < NEAR * need(s) ? LOOK_NEAR_MS : LOOK_MS;
	return now - s->looked_ms >= every;
}

int mds_space_admit(struct mds_space *s, uint16_t opcode, int replay)
{
	int takes = wire_op_has(opcode, WIRE_OPF_TAKES_SPACE) && !replay;
	int64_t now;
	int rc = 0;

	if (!s)
		return 0;
	now = net_now_ms();
	pthread_mutex_lock(&s->lock);
	if (due(s, now))
		look(s, now);
	if (takes) {
		if (room_now(s) < need(s))
			rc = -ENOSPC;
		else
			s->admitted++;
		if (rc && !s->full)
			LOG_WARN("space", "the MDT in %s is full (%llu KiB left, %llu KiB kept for "
					  "unlinks and truncates): refusing new files, links and "
					  "xattrs until space is freed",
				 s->dir, (unsigned long long)(room_now(s) >> 10),
				 (unsigned long long)(need(s) >> 10));
		else if (!rc && s->full)
			LOG_INFO("space", "the MDT in %s has room again (%llu KiB): creates go on",
				 s->dir, (unsigned long long)(room_now(s) >> 10));
		s->full = rc != 0;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc)
		__atomic_add_fetch(&s->refused, 1, __ATOMIC_RELAXED);
	return rc;
}

void mds_space_before_commit(struct mds_space *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	/* near the end every batch looks: the file system may fill from outside */
	if (s->ballast && room_now(s) < NEAR * need(s))
		look(s, net_now_ms());
	pthread_mutex_unlock(&s->lock);
}

void mds_space_commit_failed(struct mds_space *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->ballast)
		drop_ballast(s, "a commit found the file system full");
	s->looked_ms = 0;
	pthread_mutex_unlock(&s->lock);
}

uint64_t mds_space_refused(const struct mds_space *s)
{
	return s ? __atomic_load_n(&s->refused, __ATOMIC_RELAXED) : 0;
}

int mds_space_create(struct mds_db *db, const char *dir, struct mds_space **out)
{
	struct mds_space *s = calloc(1, sizeof(*s));
	struct statvfs sv;
	int rc;

	if (!s)
		return -ENOMEM;
	s->db = db;
	s->dir = dir;
	snprintf(s->ballast_path, sizeof(s->ballast_path), "%s/%s", dir, MDS_SPACE_BALLAST);
	pthread_mutex_init(&s->lock, NULL);
	s->reserve = RESERVE_MIN;
	if (statvfs(dir, &sv) == 0) {
		uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize;
		s->reserve = total / 128;
		if (s->reserve < RESERVE_MIN)
			s->reserve = RESERVE_MIN;
		if (s->reserve > RESERVE_MAX)
			s->reserve = RESERVE_MAX;
	}
	rc = make_ballast(s);
	s->ballast = rc == 0;
	if (rc)
		LOG_WARN("space", "cannot make the %llu KiB ballast %s (%s): the MDT keeps "
				  "%llu KiB free for unlinks instead",
			 (unsigned long long)(s->reserve >> 10), s->ballast_path, strerror(-rc),
			 (unsigned long long)(2 * s->reserve >> 10));
	else
		LOG_INFO("space", "%llu KiB kept for unlinks and truncates, and a ballast of "
				  "%llu KiB in %s",
			 (unsigned long long)(s->reserve >> 10),
			 (unsigned long long)(s->reserve >> 10), s->ballast_path);
	*out = s;
	return 0;
}

void mds_space_destroy(struct mds_space *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s);
}
