/* test_mds_lock.c - the MDS lock service: POSIX range rules (conflicts, split, merge,
 * upgrade, downgrade), F_GETLK, flock, and eviction of disconnected clients. */
#include <errno.h>
#include <string.h>

#include "mds/lock.h"
#include "unit.h"

static struct wire_lock_req req(uint64_t client, uint64_t owner, int kind, int type,
				uint64_t start, uint64_t end)
{
	struct wire_lock_req r;
	memset(&r, 0, sizeof(r));
	r.fid.seq = 0x200000400;
	r.fid.oid = 7;
	r.client = client;
	r.owner = owner;
	r.pid = (uint32_t)(100 + owner);
	r.kind = (uint8_t)kind;
	r.type = (uint8_t)type;
	r.start = start;
	r.end = end;
	return r;
}

static int64_t g_now = 1000; /* the monotonic time set() runs at */

static int set(struct mds_locks *lk, uint64_t conn, uint64_t client, uint64_t owner, int type,
	       uint64_t start, uint64_t end)
{
	struct wire_lock_req r = req(client, owner, WIRE_LOCK_POSIX, type, start, end);
	return mds_locks_set(lk, conn, &r, g_now);
}

/* The conflicting lock F_GETLK reports for a write lock on [start, end] by client 9. */
static struct wire_lock_rep get(struct mds_locks *lk, uint64_t start, uint64_t end)
{
	struct wire_lock_rep o;
	struct wire_lock_req r = req(9, 9, WIRE_LOCK_POSIX, WIRE_LK_WRLCK, start, end);
	CHECK_EQ(mds_locks_get(lk, 9, &r, 1000, &o), 0);
	return o;
}

static void test_posix(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, &lk), 0);
	/* readers share, a writer conflicts, the same owner never conflicts with itself */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_RDLCK, 0, 99), 0);
	CHECK_EQ(set(lk, 2, 2, 1, WIRE_LK_RDLCK, 50, 149), 0);
	CHECK_EQ(set(lk, 2, 2, 2, WIRE_LK_WRLCK, 90, 95), -EAGAIN);
	CHECK_EQ(set(lk, 2, 2, 2, WIRE_LK_WRLCK, 150, 199), 0);
	/* upgrade over another reader fails and keeps the read lock */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 99), -EAGAIN);
	struct wire_lock_rep o = get(lk, 0, 10);
	CHECK_EQ(o.type, WIRE_LK_RDLCK);
	CHECK_EQ(o.start, 0);
	CHECK_EQ(o.end, 99);
	CHECK_EQ(o.pid, 101);
	/* upgrade where nobody else reads */
	CHECK_EQ(set(lk, 2, 2, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 99), 0);
	CHECK_EQ(get(lk, 0, 0).type, WIRE_LK_WRLCK);
	/* unlocking the middle splits: [0,39] and [60,99] stay */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 40, 59), 0);
	CHECK_EQ(get(lk, 40, 59).type, WIRE_LK_UNLCK);
	o = get(lk, 45, 70);
	CHECK_EQ(o.start, 60);
	CHECK_EQ(o.end, 99);
	CHECK_EQ(mds_locks_count(lk), 3); /* two pieces and client 2's [150,199] */
	/* relocking the hole merges the three pieces into one */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 40, 59), 0);
	CHECK_EQ(mds_locks_count(lk), 2);
	o = get(lk, 10, 10);
	CHECK_EQ(o.start, 0);
	CHECK_EQ(o.end, 99);
	/* downgrade the middle: readers may then share it */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_RDLCK, 40, 59), 0);
	CHECK_EQ(mds_locks_count(lk), 4);
	CHECK_EQ(set(lk, 3, 3, 1, WIRE_LK_RDLCK, 45, 50), 0);
	CHECK_EQ(set(lk, 3, 3, 1, WIRE_LK_RDLCK, 45, 60), -EAGAIN);
	/* a lock to EOF and an adjacent one merge without overflowing */
	CHECK_EQ(set(lk, 4, 4, 1, WIRE_LK_WRLCK, 1000, WIRE_LOCK_EOF), 0);
	CHECK_EQ(set(lk, 4, 4, 1, WIRE_LK_WRLCK, 500, 999), 0);
	o = get(lk, 2000, 2000);
	CHECK_EQ(o.start, 500);
	CHECK_EQ(o.end, WIRE_LOCK_EOF);
	/* flock GET and an unlock of nothing */
	struct wire_lock_req fr = req(1, 1, WIRE_LOCK_FLOCK, WIRE_LK_WRLCK, 0, WIRE_LOCK_EOF);
	CHECK_EQ(mds_locks_get(lk, 1, &fr, 1000, &o), -EINVAL);
	CHECK_EQ(set(lk, 5, 5, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	mds_locks_destroy(lk);
}

static void test_flock_and_evict(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, &lk), 0);
	struct wire_lock_req a = req(1, 10, WIRE_LOCK_FLOCK, WIRE_LK_WRLCK, 0, WIRE_LOCK_EOF);
	struct wire_lock_req b = req(2, 20, WIRE_LOCK_FLOCK, WIRE_LK_RDLCK, 0, WIRE_LOCK_EOF);
	CHECK_EQ(mds_locks_set(lk, 1, &a, 1000), 0);
	CHECK_EQ(mds_locks_set(lk, 2, &b, 1000), -EAGAIN);
	/* flock and POSIX locks are separate */
	CHECK_EQ(set(lk, 2, 2, 20, WIRE_LK_WRLCK, 100, 199), 0);
	/* downgrade to shared: now b gets in */
	a.type = WIRE_LK_RDLCK;
	CHECK_EQ(mds_locks_set(lk, 1, &a, 1000), 0);
	CHECK_EQ(mds_locks_set(lk, 2, &b, 1000), 0);
	a.type = WIRE_LK_WRLCK;
	CHECK_EQ(mds_locks_set(lk, 1, &a, 1000), -EAGAIN);
	CHECK_EQ(mds_locks_count(lk), 3);
	/* client 1 reconnects (conn 3) within the timeout: its lock stays */
	mds_locks_disconnect(lk, 1, 2000);
	g_now = 2500;
	CHECK_EQ(set(lk, 3, 1, 11, WIRE_LK_RDLCK, 0, 9), 0);
	CHECK_EQ(mds_locks_count(lk), 4);
	/* client 2 goes away: its locks stay until the timeout, then the next call evicts */
	mds_locks_disconnect(lk, 2, 2000);
	b.client = 3;
	b.owner = 30;
	b.type = WIRE_LK_WRLCK;
	CHECK_EQ(mds_locks_set(lk, 4, &b, 2500), -EAGAIN);
	CHECK_EQ(mds_locks_count(lk), 4);
	CHECK_EQ(set(lk, 4, 3, 30, WIRE_LK_WRLCK, 0, 0), -EAGAIN);     /* client 1's [0,9] */
	CHECK_EQ(set(lk, 4, 3, 30, WIRE_LK_WRLCK, 150, 150), -EAGAIN); /* client 2's */
	g_now = 3000; /* client 2 is evicted */
	CHECK_EQ(set(lk, 4, 3, 30, WIRE_LK_WRLCK, 150, 150), 0);
	CHECK_EQ(mds_locks_count(lk), 3); /* a, client 1's [0,9], client 3's [150,150] */
	/* with timeout 0 a disconnect drops at once */
	struct mds_locks *now;
	CHECK_EQ(mds_locks_create(0, &now), 0);
	CHECK_EQ(set(now, 1, 1, 1, WIRE_LK_WRLCK, 0, 9), 0);
	mds_locks_disconnect(now, 1, 5);
	CHECK_EQ(mds_locks_count(now), 0);
	mds_locks_destroy(now);
	mds_locks_destroy(lk);
	mds_locks_destroy(NULL);
}

int main(void)
{
	test_posix();
	test_flock_and_evict();
	return unit_done();
}
