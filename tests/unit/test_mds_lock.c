/* test_mds_lock.c - the MDS lock service: POSIX range rules (conflicts, split, merge,
 * upgrade, downgrade), F_GETLK, flock, eviction of disconnected clients, and waiters
 * (arrival order, independent ones passing, EDEADLK, cancel, eviction, the bound). */
#include <errno.h>
#include <stdint.h>
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

/* The waiters answered so far, in order: token (a small number) and status. */
static struct {
	uintptr_t token;
	int status;
} g_answers[64];
static int g_nanswers;

static void answer(void *arg, void *token, int status)
{
	(void)arg;
	if (g_nanswers < 64) {
		g_answers[g_nanswers].token = (uintptr_t)token;
		g_answers[g_nanswers].status = status;
	}
	g_nanswers++;
}

static void answers_reset(void)
{
	g_nanswers = 0;
	memset(g_answers, 0, sizeof(g_answers));
}

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
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
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
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
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
	CHECK_EQ(mds_locks_create(0, answer, NULL, &now), 0);
	CHECK_EQ(set(now, 1, 1, 1, WIRE_LK_WRLCK, 0, 9), 0);
	mds_locks_disconnect(now, 1, 5);
	CHECK_EQ(mds_locks_count(now), 0);
	mds_locks_destroy(now);
	mds_locks_destroy(lk);
	mds_locks_destroy(NULL);
}

/* LOCK_WAIT of (client, owner) for a POSIX lock on connection conn; token doubles as xid. */
static int wait_(struct mds_locks *lk, uint64_t conn, uint64_t client, uint64_t owner, int type,
		 uint64_t start, uint64_t end, uintptr_t token)
{
	struct wire_lock_req r = req(client, owner, WIRE_LOCK_POSIX, type, start, end);
	struct mds_lock_from from = {.conn_id = conn, .sender = conn, .xid = token};
	return mds_locks_wait(lk, &from, &r, g_now, (void *)token);
}

static void cancel(struct mds_locks *lk, uint64_t conn, uint64_t client, uint64_t owner,
		   uint64_t start, uint64_t end, uint64_t xid)
{
	struct wire_lock_req r = req(client, owner, WIRE_LOCK_POSIX, WIRE_LK_WRLCK, start, end);
	struct mds_lock_from from = {.conn_id = conn, .sender = conn, .xid = xid};
	mds_locks_cancel(lk, &from, &r);
}

static void test_fifo(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
	answers_reset();
	/* three writers queue behind a reader, in arrival order */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_RDLCK, 0, 99), 0);
	CHECK_EQ(wait_(lk, 2, 2, 1, WIRE_LK_WRLCK, 0, 9, 1), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 3, 3, 1, WIRE_LK_WRLCK, 0, 9, 2), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 4, 4, 1, WIRE_LK_WRLCK, 5, 5, 3), MDS_LOCK_PARKED);
	CHECK_EQ(mds_locks_waiters(lk), 3);
	/* a reader fits with the held reader but not with the queued writer: no queue jumping */
	CHECK_EQ(set(lk, 5, 5, 1, WIRE_LK_RDLCK, 0, 9), -EAGAIN);
	CHECK_EQ(set(lk, 5, 5, 1, WIRE_LK_RDLCK, 50, 59), 0); /* nobody waits there */
	CHECK_EQ(g_nanswers, 0);
	/* the holder goes: the first waiter only */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 1);
	CHECK_EQ(g_answers[0].token, 1);
	CHECK_EQ(g_answers[0].status, 0);
	CHECK_EQ(set(lk, 6, 6, 1, WIRE_LK_RDLCK, 0, 0), -EAGAIN); /* waiter 1 holds it now */
	CHECK_EQ(set(lk, 2, 2, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 2);
	CHECK_EQ(g_answers[1].token, 2);
	CHECK_EQ(set(lk, 3, 3, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 3);
	CHECK_EQ(g_answers[2].token, 3);
	CHECK_EQ(g_answers[2].status, 0);
	CHECK_EQ(mds_locks_waiters(lk), 0);
	/* readers behind a writer all go at once when it leaves */
	answers_reset();
	CHECK_EQ(wait_(lk, 7, 7, 1, WIRE_LK_RDLCK, 0, 9, 4), MDS_LOCK_PARKED); /* 4 holds 5 */
	CHECK_EQ(wait_(lk, 8, 8, 1, WIRE_LK_RDLCK, 0, 9, 5), MDS_LOCK_PARKED);
	CHECK_EQ(set(lk, 4, 4, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 2);
	CHECK_EQ(mds_locks_waiters(lk), 0);
	mds_locks_destroy(lk);
}

static void test_independent_waiters(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
	answers_reset();
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 29), 0);
	CHECK_EQ(wait_(lk, 2, 2, 1, WIRE_LK_WRLCK, 0, 9, 1), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 3, 3, 1, WIRE_LK_WRLCK, 20, 29, 2), MDS_LOCK_PARKED);
	/* free and conflicting with nobody: granted at once, past the queue */
	CHECK_EQ(wait_(lk, 4, 4, 1, WIRE_LK_WRLCK, 50, 59, 3), 0);
	/* free of held locks but behind waiter 1, whose range it shares */
	CHECK_EQ(wait_(lk, 5, 5, 1, WIRE_LK_WRLCK, 5, 40, 4), MDS_LOCK_PARKED);
	/* freeing [20,29] grants waiter 2 past waiter 1, still blocked by [0,9] */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 20, 29), 0);
	CHECK_EQ(g_nanswers, 1);
	CHECK_EQ(g_answers[0].token, 2);
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 2);
	CHECK_EQ(g_answers[1].token, 1);
	CHECK_EQ(set(lk, 2, 2, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 2); /* waiter 4 still meets waiter 2's [20,29] */
	CHECK_EQ(set(lk, 3, 3, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 3);
	CHECK_EQ(g_answers[2].token, 4);
	/* flock waiters queue the same way, apart from POSIX ones */
	struct wire_lock_req fa = req(1, 10, WIRE_LOCK_FLOCK, WIRE_LK_WRLCK, 0, WIRE_LOCK_EOF);
	struct wire_lock_req fb = req(2, 20, WIRE_LOCK_FLOCK, WIRE_LK_RDLCK, 0, WIRE_LOCK_EOF);
	struct mds_lock_from from = {.conn_id = 2, .sender = 2, .xid = 9};
	CHECK_EQ(mds_locks_set(lk, 1, &fa, g_now), 0);
	CHECK_EQ(mds_locks_wait(lk, &from, &fb, g_now, (void *)9), MDS_LOCK_PARKED);
	fa.type = WIRE_LK_RDLCK; /* a downgrade lets the reader in */
	CHECK_EQ(mds_locks_set(lk, 1, &fa, g_now), 0);
	CHECK_EQ(g_nanswers, 4);
	CHECK_EQ(g_answers[3].token, 9);
	CHECK_EQ(mds_locks_waiters(lk), 0);
	mds_locks_destroy(lk);
}

static void test_deadlock(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
	answers_reset();
	/* A holds [0,9], B holds [10,19]; A waits for B's, then B for A's: B is told */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 9), 0);
	CHECK_EQ(set(lk, 2, 2, 2, WIRE_LK_WRLCK, 10, 19), 0);
	CHECK_EQ(wait_(lk, 1, 1, 1, WIRE_LK_WRLCK, 10, 19, 1), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 2, 2, 2, WIRE_LK_WRLCK, 0, 9, 2), -EDEADLK);
	CHECK_EQ(mds_locks_waiters(lk), 1);
	/* a third owner waiting for A is no cycle */
	CHECK_EQ(wait_(lk, 3, 3, 3, WIRE_LK_RDLCK, 5, 5, 3), MDS_LOCK_PARKED);
	CHECK_EQ(set(lk, 2, 2, 2, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 1);
	CHECK_EQ(g_answers[0].token, 1);
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 2);
	CHECK_EQ(g_answers[1].token, 3);
	CHECK_EQ(set(lk, 3, 3, 3, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	/* two readers upgrading: the second upgrade would wait for the first */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_RDLCK, 0, 9), 0);
	CHECK_EQ(set(lk, 2, 2, 2, WIRE_LK_RDLCK, 0, 9), 0);
	CHECK_EQ(wait_(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 9, 4), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 2, 2, 2, WIRE_LK_WRLCK, 0, 9, 5), -EDEADLK);
	CHECK_EQ(set(lk, 2, 2, 2, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 3);
	CHECK_EQ(g_answers[2].token, 4);
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	/* a waiter that waits for A does not make A wait behind it (that would be a cycle) */
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 9), 0);
	CHECK_EQ(wait_(lk, 2, 2, 2, WIRE_LK_WRLCK, 0, 19, 6), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 1, 1, 1, WIRE_LK_WRLCK, 10, 19, 7), 0);
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_UNLCK, 0, WIRE_LOCK_EOF), 0);
	CHECK_EQ(g_nanswers, 4);
	CHECK_EQ(g_answers[3].token, 6);
	mds_locks_destroy(lk);
}

static void test_cancel(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
	answers_reset();
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_RDLCK, 0, 99), 0);
	CHECK_EQ(wait_(lk, 2, 2, 1, WIRE_LK_WRLCK, 0, 9, 1), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 3, 3, 1, WIRE_LK_RDLCK, 0, 9, 2), MDS_LOCK_PARKED); /* behind 1 */
	/* another owner's range or another range is not the waiter's */
	cancel(lk, 2, 2, 2, 0, 9, 3);
	cancel(lk, 2, 2, 1, 0, 8, 4);
	CHECK_EQ(g_nanswers, 0);
	/* canceling the writer lets the reader behind it in */
	cancel(lk, 2, 2, 1, 0, 9, 5);
	CHECK_EQ(g_nanswers, 2);
	CHECK_EQ(g_answers[0].token, 1);
	CHECK_EQ(g_answers[0].status, -EINTR);
	CHECK_EQ(g_answers[1].token, 2);
	CHECK_EQ(g_answers[1].status, 0);
	CHECK_EQ(mds_locks_waiters(lk), 0);
	/* a cancel that overtook its wait: the wait (an older xid) is refused when it comes;
	 * a newer wait of the same range is not */
	cancel(lk, 4, 4, 1, 0, 9, 20);
	CHECK_EQ(wait_(lk, 4, 4, 1, WIRE_LK_WRLCK, 0, 9, 19), -EINTR);
	CHECK_EQ(wait_(lk, 4, 4, 1, WIRE_LK_WRLCK, 0, 9, 21), MDS_LOCK_PARKED);
	cancel(lk, 4, 4, 1, 0, 9, 22);
	CHECK_EQ(g_nanswers, 3);
	CHECK_EQ(g_answers[2].token, 21);
	CHECK_EQ(g_answers[2].status, -EINTR);
	/* a kept cancel of a wait already granted does not touch later waits */
	cancel(lk, 5, 5, 1, 200, 209, 30);
	CHECK_EQ(wait_(lk, 5, 5, 1, WIRE_LK_WRLCK, 200, 209, 31), 0);
	mds_locks_destroy(lk);
}

static void test_waiters_of_gone_clients(void)
{
	struct mds_locks *lk;
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
	answers_reset();
	g_now = 10000;
	CHECK_EQ(set(lk, 1, 1, 1, WIRE_LK_WRLCK, 0, 9), 0);
	CHECK_EQ(wait_(lk, 2, 2, 1, WIRE_LK_WRLCK, 0, 9, 1), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 3, 3, 1, WIRE_LK_WRLCK, 0, 9, 2), MDS_LOCK_PARKED);
	CHECK_EQ(wait_(lk, 4, 4, 1, WIRE_LK_WRLCK, 0, 9, 3), MDS_LOCK_PARKED);
	/* a connection closing ends its waiters; a wait racing with the close is refused */
	mds_locks_conn_closed(lk, 2);
	CHECK_EQ(g_nanswers, 1);
	CHECK_EQ(g_answers[0].token, 1);
	CHECK_EQ(g_answers[0].status, -ECONNRESET);
	CHECK_EQ(wait_(lk, 2, 2, 1, WIRE_LK_WRLCK, 0, 9, 4), -ECONNRESET);
	mds_locks_disconnect(lk, 2, g_now);
	/* an evicted session's waiters end too */
	mds_locks_drop_client(lk, 3);
	CHECK_EQ(g_nanswers, 2);
	CHECK_EQ(g_answers[1].token, 2);
	CHECK_EQ(g_answers[1].status, -EIO);
	CHECK_EQ(mds_locks_waiters(lk), 1);
	/* the holder's client is evicted after its timeout: the last waiter gets the lock */
	mds_locks_disconnect(lk, 1, g_now);
	g_now += 500;
	CHECK_EQ(set(lk, 9, 9, 1, WIRE_LK_RDLCK, 500, 500), 0);
	CHECK_EQ(g_nanswers, 2);
	g_now += 600; /* a tick evicts, with no lock request */
	mds_locks_tick(lk, g_now);
	CHECK_EQ(g_nanswers, 3);
	CHECK_EQ(g_answers[2].token, 3);
	CHECK_EQ(g_answers[2].status, 0);
	CHECK_EQ(mds_locks_waiters(lk), 0);
	CHECK_EQ(mds_locks_count(lk), 2); /* client 4's [0,9], client 9's [500,500] */
	g_now = 1000;
	mds_locks_destroy(lk);
}

static void test_waiter_bound(void)
{
	struct mds_locks *lk;
	struct wire_lock_req r;
	struct mds_lock_from from = {.conn_id = 2, .sender = 2};
	CHECK_EQ(mds_locks_create(1000, answer, NULL, &lk), 0);
	answers_reset();
	int held = 0, parked = 0;
	for (uint32_t i = 0; i <= MDS_LOCK_WAITERS_MAX; i++) {
		r = req(1, 1, WIRE_LOCK_POSIX, WIRE_LK_WRLCK, 0, WIRE_LOCK_EOF);
		r.fid.oid = i;
		held += mds_locks_set(lk, 1, &r, g_now) == 0;
		r.client = 2;
		r.owner = i;
		from.xid = i;
		parked += mds_locks_wait(lk, &from, &r, g_now, (void *)(uintptr_t)i) ==
			  MDS_LOCK_PARKED;
	}
	CHECK_EQ(held, MDS_LOCK_WAITERS_MAX + 1);
	CHECK_EQ(parked, MDS_LOCK_WAITERS_MAX);
	CHECK_EQ(mds_locks_waiters(lk), MDS_LOCK_WAITERS_MAX);
	r.owner = 1u << 30;
	CHECK_EQ(mds_locks_wait(lk, &from, &r, g_now, NULL), -ENOLCK);
	CHECK_EQ(g_nanswers, 0);
	mds_locks_destroy(lk); /* frees the parked ones unanswered */
	CHECK_EQ(g_nanswers, 0);
}

int main(void)
{
	test_posix();
	test_flock_and_evict();
	test_fifo();
	test_independent_waiters();
	test_deadlock();
	test_cancel();
	test_waiters_of_gone_clients();
	test_waiter_bound();
	return unit_done();
}
