/* test_mds_find.c - FIND's predicates as the MDS evaluates them (mds_find_match): find's
 * rounding of sizes and ages at their edges, perm forms, negation, depth, layouts, HSM,
 * emptiness, links, blocks, project ids, -newerXY and expressions. */
#include <string.h>
#include <sys/stat.h>

#include "mds/find.h"
#include "unit.h"

static struct wire_find_query q;
static struct nacre_attr a;
static struct nacre_layout l;
static struct mds_find_more more;

static void reset(void)
{
	memset(&q, 0, sizeof(q));
	memset(&a, 0, sizeof(a));
	memset(&l, 0, sizeof(l));
	memset(&more, 0, sizeof(more));
	a.mode = S_IFREG | 0644;
	q.now.sec = 1000000;
	l.pattern = NACRE_PATTERN_RAID0;
	l.stripe_size = 1u << 20;
	l.stripe_count = 2;
	l.nosts = 2;
	l.ost_idx[0] = 1;
	l.ost_idx[1] = 3;
}

static int m(void)
{
	return mds_find_match(&q, &a, &more, 1, &l, "name.txt", 1);
}

static void test_size(void)
{
	reset();
	q.preds = WIRE_FINDP_SIZE;
	q.size = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 1024, .up = 1};
	a.size = 1024;
	CHECK(!m()); /* +1k: more than one KiB once rounded up */
	a.size = 1025;
	CHECK(m());
	q.size.sign = -1; /* -1k: rounded up below 1, only the empty file */
	CHECK(!m());
	a.size = 0;
	CHECK(m());
	a.size = 1;
	CHECK(!m());
	q.size.sign = 0; /* 1k: 1..1024 */
	CHECK(m());
	a.size = 1024;
	CHECK(m());
	a.size = 1025;
	CHECK(!m());
	q.neg = WIRE_FINDP_SIZE;
	CHECK(m());
}

static void test_ages(void)
{
	reset();
	q.preds = WIRE_FINDP_MTIME;
	/* days: rounded down: +1 is at least two days, 1 is [1, 2) days */
	q.mtime = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 86400};
	a.mtime.sec = q.now.sec - 2 * 86400 + 1;
	CHECK(!m());
	a.mtime.sec = q.now.sec - 2 * 86400;
	CHECK(m());
	q.mtime.sign = 0;
	CHECK(!m());
	a.mtime.sec = q.now.sec - 86400;
	CHECK(m());
	a.mtime.sec = q.now.sec - 86399;
	CHECK(!m());
	q.mtime.sign = -1;
	CHECK(m());
	a.mtime.sec = q.now.sec + 100; /* from the future: a negative age, less than any */
	CHECK(m());
	/* minutes: rounded up, as GNU find: +1 is more than 60 s, 1 is (0, 60] s */
	q.preds = WIRE_FINDP_ATIME;
	q.atime = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 60, .up = 1};
	a.atime.sec = q.now.sec - 60;
	CHECK(!m());
	a.atime.sec = q.now.sec - 61;
	CHECK(m());
	a.atime.sec = q.now.sec - 60;
	a.atime.nsec = 1; /* the nanoseconds count: 59.999999999 s */
	CHECK(!m());
	a.atime.nsec = 0;
	a.atime.sec = q.now.sec - 60;
	q.now.nsec = 1; /* 60.000000001 s */
	CHECK(m());
	q.now.nsec = 0;
	q.atime.sign = 0;
	CHECK(m());
	a.atime.sec = q.now.sec;
	CHECK(!m()); /* age 0 is not in (0, 60] */
	q.atime.sign = -1;
	CHECK(m());
}

static void test_perm_owner_type_depth(void)
{
	reset();
	a.mode = S_IFREG | 04755;
	q.preds = WIRE_FINDP_PERM;
	q.perm = 04755;
	CHECK(m());
	q.perm = 0755;
	CHECK(!m()); /* exact: the setuid bit too */
	q.perm_kind = WIRE_FIND_PERM_ALL;
	CHECK(m());
	q.perm = 02000;
	CHECK(!m());
	q.perm_kind = WIRE_FIND_PERM_ANY;
	q.perm = 02002;
	CHECK(!m());
	q.perm = 02004;
	CHECK(m());
	q.perm = 0; /* /0 matches everything, as GNU find */
	CHECK(m());
	reset();
	a.uid = 7;
	a.gid = 8;
	q.preds = WIRE_FINDP_UID | WIRE_FINDP_GID;
	q.uid = 7;
	q.gid = 8;
	CHECK(m());
	q.neg = WIRE_FINDP_GID;
	CHECK(!m());
	reset();
	q.preds = WIRE_FINDP_TYPE;
	q.types = 1u << (S_IFDIR >> 12) | 1u << (S_IFLNK >> 12);
	CHECK(!m());
	a.mode = S_IFLNK | 0777;
	CHECK(m());
	reset();
	q.preds = WIRE_FINDP_MINDEPTH | WIRE_FINDP_MAXDEPTH;
	q.mindepth = 1;
	q.maxdepth = 1;
	CHECK(mds_find_match(&q, &a, &more, 1, &l, "x", 1));
	CHECK(!mds_find_match(&q, &a, &more, 1, &l, "x", 0));
	CHECK(!mds_find_match(&q, &a, &more, 1, &l, "x", 2));
	reset();
	q.preds = WIRE_FINDP_NAME;
	memcpy(q.name, "*.TXT", 6);
	CHECK(!m());
	q.name_icase = 1;
	CHECK(m());
	memcpy(q.name, "n[a]me.\\*", sizeof("n[a]me.\\*")); /* an escaped star matches only a star */
	CHECK(!m());
}

static void test_layout_hsm(void)
{
	reset();
	q.preds = WIRE_FINDP_OST;
	q.nosts = 2;
	q.osts[0] = 0;
	q.osts[1] = 3;
	CHECK(m());
	q.osts[1] = 2;
	CHECK(!m());
	q.neg = WIRE_FINDP_OST;
	CHECK(m());
	reset();
	q.preds = WIRE_FINDP_STRIPE_COUNT;
	q.stripe_count = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 1};
	CHECK(m());
	CHECK(!mds_find_match(&q, &a, &more, 0, &l, "x", 1)); /* no layout: no stripes */
	q.preds = WIRE_FINDP_STRIPE_SIZE;
	q.stripe_size = (struct wire_find_cmp){.sign = 0, .value = 1, .unit = 1u << 20};
	CHECK(m());
	reset();
	a.hsm_state = NACRE_HS_EXISTS | NACRE_HS_ARCHIVED | NACRE_HS_RELEASED;
	q.preds = WIRE_FINDP_HSM;
	q.hsm = NACRE_HS_EXISTS | NACRE_HS_ARCHIVED;
	CHECK(m());
	q.hsm |= NACRE_HS_DIRTY;
	CHECK(!m());
	q.preds = WIRE_FINDP_LAYOUT;
	q.layouts = WIRE_FIND_LAYOUT_RELEASED;
	CHECK(m());
	q.preds = WIRE_FINDP_OST; /* a released file has no objects */
	q.nosts = 1;
	q.osts[0] = 1;
	CHECK(!m());
	q.preds = WIRE_FINDP_POOL; /* no pools: only the empty name */
	memcpy(q.pool, "fast", 5);
	CHECK(!m());
	q.pool[0] = 0;
	CHECK(m());
}

static void test_empty_links_blocks_projid(void)
{
	reset();
	q.preds = WIRE_FINDP_EMPTY;
	CHECK(m()); /* a regular file of size 0 */
	a.size = 1;
	CHECK(!m());
	a.mode = S_IFDIR | 0755;
	CHECK(m()); /* a directory without entries, whatever its size */
	more.nentries = 1;
	CHECK(!m());
	a.mode = S_IFLNK | 0777;
	a.size = 0;
	CHECK(!m()); /* neither a file nor a directory */
	q.neg = WIRE_FINDP_EMPTY;
	CHECK(m());

	reset();
	q.preds = WIRE_FINDP_LINKS;
	q.links = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 1, .up = 1};
	a.nlink = 1;
	CHECK(!m());
	a.nlink = 2;
	CHECK(m());
	q.links.sign = 0;
	CHECK(!m());

	reset();
	q.preds = WIRE_FINDP_BLOCKS; /* +1k of space used: more than 2 blocks */
	q.blocks = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 1024, .up = 1};
	a.blocks = 2;
	a.size = 1u << 20; /* a sparse file: its size is not what counts */
	CHECK(!m());
	a.blocks = 3;
	CHECK(m());

	reset();
	q.preds = WIRE_FINDP_PROJID;
	q.projid = 7;
	CHECK(!m());
	more.projid = 7;
	CHECK(m());
}

static void test_btime(void)
{
	reset();
	q.preds = WIRE_FINDP_BTIME; /* --btime -2: born less than two days ago */
	q.btime = (struct wire_find_cmp){.sign = -1, .value = 2, .unit = 86400};
	more.btime = (struct nacre_time){q.now.sec - 86400 - 5, 0};
	a.ctime = a.mtime = (struct nacre_time){q.now.sec, 0}; /* changed since: not born */
	CHECK(m());
	more.btime.sec = q.now.sec - 2 * 86400 - 5;
	CHECK(!m());
	q.preds = WIRE_FINDP_NEWER_XY; /* -newerBt T */
	q.nnewer = 1;
	q.newer_xy[0] = (struct wire_find_newer){WIRE_FIND_TIME_BTIME, 0, {q.now.sec - 100, 0}};
	CHECK(!m());
	more.btime.sec = q.now.sec - 99;
	CHECK(m());
}

static void test_newer_xy(void)
{
	reset();
	q.preds = WIRE_FINDP_NEWER_XY; /* -newermt T1 ! -newermt T2: T1 < mtime <= T2 */
	q.nnewer = 2;
	q.newer_xy[0] = (struct wire_find_newer){WIRE_FIND_TIME_MTIME, 0, {100, 0}};
	q.newer_xy[1] = (struct wire_find_newer){WIRE_FIND_TIME_MTIME, 1, {200, 0}};
	a.mtime = (struct nacre_time){100, 0};
	CHECK(!m()); /* not after T1 */
	a.mtime.nsec = 1;
	CHECK(m());
	a.mtime = (struct nacre_time){200, 0};
	CHECK(m()); /* not after T2 */
	a.mtime.nsec = 1;
	CHECK(!m());
	a.mtime = (struct nacre_time){150, 0};
	q.newer_xy[0].which = WIRE_FIND_TIME_CTIME; /* -newerct T1: the ctime counts there */
	a.ctime = (struct nacre_time){50, 0};
	CHECK(!m());
	a.ctime = (struct nacre_time){101, 0};
	CHECK(m());
	q.newer_xy[1].which = WIRE_FIND_TIME_ATIME;
	a.atime = (struct nacre_time){300, 0};
	CHECK(!m());
}

/* find_expr: leaves and a postfix program, on top of the request's own query */
static void test_expression(void)
{
	static struct wire_find_req r;
	reset();
	memset(&r, 0, sizeof(r));
	r.nleaves = 3;
	r.leaves[0].preds = WIRE_FINDP_NAME;
	strcpy(r.leaves[0].name, "*.c");
	r.leaves[1].preds = WIRE_FINDP_NAME;
	strcpy(r.leaves[1].name, "*.h");
	r.leaves[2].preds = WIRE_FINDP_SIZE; /* -size +1k */
	r.leaves[2].size = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 1024, .up = 1};
	/* \( -name *.c -o -name *.h \) ! -size +1k */
	const uint8_t prog[] = {0, 1, WIRE_FIND_OP_OR, 2, WIRE_FIND_OP_NOT, WIRE_FIND_OP_AND};
	memcpy(r.ops, prog, sizeof(prog));
	r.nops = sizeof(prog);
	a.size = 10;
	CHECK(mds_find_match_req(&r, &a, &more, 1, &l, "x.c", 1));
	CHECK(mds_find_match_req(&r, &a, &more, 1, &l, "x.h", 1));
	CHECK(!mds_find_match_req(&r, &a, &more, 1, &l, "x.o", 1));
	a.size = 5000;
	CHECK(!mds_find_match_req(&r, &a, &more, 1, &l, "x.c", 1));
	/* the request's own query still holds too: depth, and its tests */
	a.size = 10;
	r.q.preds = WIRE_FINDP_MAXDEPTH;
	r.q.maxdepth = 1;
	CHECK(!mds_find_match_req(&r, &a, &more, 1, &l, "x.c", 2));
	r.q.preds |= WIRE_FINDP_TYPE;
	r.q.types = 1u << (S_IFDIR >> 12);
	CHECK(!mds_find_match_req(&r, &a, &more, 1, &l, "x.c", 1));
	r.q.preds = 0;
	/* a malformed program (the decoder refuses it) matches nothing */
	r.ops[r.nops++] = WIRE_FIND_OP_OR;
	CHECK(!mds_find_match_req(&r, &a, &more, 1, &l, "x.c", 1));
}

int main(void)
{
	test_size();
	test_ages();
	test_perm_owner_type_depth();
	test_layout_hsm();
	test_empty_links_blocks_projid();
	test_newer_xy();
	test_btime();
	test_expression();
	return unit_done();
}
