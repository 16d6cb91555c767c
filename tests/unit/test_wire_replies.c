/* test_wire_replies.c - the wire protocol's replies (golden bytes, round trips, rejections)
 * and the opcode table: every reply it names has a codec, golden bytes here and a fuzz seed. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nacre/nacre_errno.h"
#include "proto/cursor.h"
#include "proto/wire.h"
#include "unit.h"
#include "wire_test.h"

NOFIX(attr_rep)
NOFIX(create_rep)
NOFIX(path_rep)
NOFIX(layout_rep)
NOFIX(statfs_rep)
NOFIX(xattr_len_rep)
NOFIX(cred_req)
NOFIX(connect_rep)
NOFIX(open_rep)
NOFIX(hsm_state)
NOFIX(hsm_progress_rep)
NOFIX(lock_rep)
NOFIX(ost_attr_rep)
NOFIX(ost_seek_rep)
NOFIX(fault_set_rep)
NOFIX(recovery_status)
NOFIX(append_rep)
NOFIX(cap_rep)
NOFIX(fid_grant_rep)
NOFIX(lease_req)
NOFIX(lease_rep)
NOFIX(req_env)
NOFIX(rep_env)
NOFIX(recovery_done_req)
NOFIX(append_req)
NOFIX(fault_set_req)
NOFIX(connect_req)

/* Checks that m encodes to golden, and that golden decodes (whole) to a struct equal to m. */
#define GOLDEN(type, m, golden)                                                             \
	do {                                                                                \
		struct wire_cursor gc_;                                                     \
		struct wire_##type *gd_ = calloc(1, sizeof(*gd_));                          \
		ENCODE(&gc_, wire_##type##_encode, (m));                                    \
		CHECK_EQ(wire_cursor_pos(&gc_), sizeof(golden));                            \
		if (wire_cursor_pos(&gc_) == sizeof(golden))                                \
			CHECK_MEM(gc_.buf, (golden), sizeof(golden));                       \
		wire_cursor_fini(&gc_);                                                     \
		CHECK(DECODE_OK(wire_##type##_decode, (golden), sizeof(golden), gd_));      \
		fixup_##type(gd_, (m));                                                     \
		CHECK(memcmp(gd_, (m), sizeof(*gd_)) == 0);                                 \
		free(gd_);                                                                  \
	} while (0)

/* Shared fields of the samples below, as bytes. */
#define G_FID(oid) 0x00, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, (oid), 0x00, 0x00, 0x00, \
		   0x00, 0x00, 0x00, 0x00 /* seq 0x200000400, oid, ver 0 */
#define G_ATTR                                                                              \
	G_FID(0x01),                                                                        \
	0xa4, 0x81, 0x00, 0x00,                         /* mode 0100644 */                  \
	0x01, 0x00, 0x00, 0x00,                         /* nlink 1 */                       \
	0xe8, 0x03, 0x00, 0x00,                         /* uid 1000 */                      \
	0x64, 0x00, 0x00, 0x00,                         /* gid 100 */                       \
	0x00, 0x00, 0x00, 0x00,                         /* rdev 0 */                        \
	0x00, 0x00, 0x10, 0x00,                         /* blksize 1 MiB */                 \
	0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* size 5 */                        \
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* blocks 1 */                      \
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* atime 1 */ \
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* mtime 2.3 */ \
	0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ctime 4 */ \
	0x09, 0x00, 0x00, 0x00,                         /* hsm_state exists archived */     \
	0x01, 0x00, 0x00, 0x00                          /* archive_id 1 */
#define G_LAYOUT                                                                            \
	0x01, 0x00,                                     /* 1 component */                   \
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* extent start 0 */                \
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* extent end EOF */                \
	0x00, 0x00,                                     /* mirror 0 */                      \
	0x01, 0x00, 0x00, 0x00,                         /* pattern RAID0 */                 \
	0x00, 0x00, 0x10, 0x00,                         /* stripe size 1 MiB */             \
	0x01, 0x00, 0x00, 0x00,                         /* stripe count 1 */                \
	0xff, 0xff, 0xff, 0xff,                         /* stripe offset -1 */              \
	0x03, 0x00, 0x00, 0x00,                         /* gen 3 */                         \
	0x01, 0x00, 0x00, 0x00,                         /* nosts 1 */                       \
	0x04, 0x00, 0x00, 0x00                          /* ost 4 */
#define G_STATFS                                                                            \
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* kb_total */                      \
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* kb_free */                       \
	0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* kb_avail */                      \
	0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* files */                         \
	0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ffree */                         \
	0x00, 0x10, 0x00, 0x00,                         /* bsize 4096 */                    \
	0xff, 0x00, 0x00, 0x00                          /* namemax 255 */
#define G_ACTION                                                                            \
	0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cookie 5 */                      \
	0x14, 0x00, 0x00, 0x00,                         /* action ARCHIVE (20) */           \
	0x01, 0x00, 0x00, 0x00,                         /* status STARTED */                \
	G_FID(0x07),                                                                        \
	0x01, 0x00, 0x00, 0x00,                         /* archive_id 1 */                  \
	0x00, 0x00, 0x00, 0x00,                         /* flags 0 */                       \
	0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* bytes_done 100 */                \
	0xc8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* bytes_total 200 */               \
	0x00, 0x00, 0x00, 0x00,                         /* err 0 */                         \
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ctime 1 */ \
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* mtime 2 */ \
	0x01, 0x00, 'p'                                 /* path "p" */

static void g_attr(struct nacre_attr *a)
{
	memset(a, 0, sizeof(*a));
	sample_fid(&a->fid, 1);
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->uid = 1000;
	a->gid = 100;
	a->blksize = 1u << 20;
	a->size = 5;
	a->blocks = 1;
	a->atime.sec = 1;
	a->mtime.sec = 2;
	a->mtime.nsec = 3;
	a->ctime.sec = 4;
	a->hsm_state = NACRE_HS_EXISTS | NACRE_HS_ARCHIVED;
	a->archive_id = 1;
}

static void g_layout(struct nacre_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->pattern = NACRE_PATTERN_RAID0;
	l->stripe_size = 1u << 20;
	l->stripe_count = 1;
	l->stripe_offset = -1;
	l->gen = 3;
	l->nosts = 1;
	l->ost_idx[0] = 4;
}

static void g_statfs(struct nacre_statfs *s)
{
	memset(s, 0, sizeof(*s));
	s->kb_total = 1;
	s->kb_free = 2;
	s->kb_avail = 3;
	s->files = 4;
	s->ffree = 5;
	s->bsize = 4096;
	s->namemax = 255;
}

static void g_action(struct nacre_hsm_action *a)
{
	memset(a, 0, sizeof(*a));
	a->cookie = 5;
	a->action = NACRE_HSMA_ARCHIVE;
	a->status = NACRE_HAS_STARTED;
	sample_fid(&a->fid, 7);
	a->archive_id = 1;
	a->bytes_done = 100;
	a->bytes_total = 200;
	a->ctime.sec = 1;
	a->mtime.sec = 2;
	memcpy(a->path, "p", 2);
}

/* 1 if buf decodes with dec and then exactly n items with get, consuming everything. */
#define LIST_OK(dec, head, get, item, buf, len, n)                                          \
	({                                                                                  \
		struct wire_cursor l_;                                                      \
		uint32_t n_ = (n);                                                          \
		wire_cursor_init_read(&l_, (buf), (len));                                   \
		dec(&l_, (head));                                                           \
		for (uint32_t i_ = 0; i_ < n_ && wire_cursor_ok(&l_); i_++)                 \
			get(&l_, &(item)[i_]);                                              \
		wire_cursor_ok(&l_) && wire_cursor_left(&l_) == 0;                          \
	})

/* ---- MDS replies ---- */

static void test_attr_rep(void)
{
	static const uint8_t golden[] = {G_ATTR};
	struct wire_attr_rep m;

	g_attr(&m.attr);
	GOLDEN(attr_rep, &m, golden);
	ROUNDTRIP(attr_rep, &m);
	CHECK_EQ(sizeof(golden), 100);
}

static void test_create_rep(void)
{
	static const uint8_t golden[] = {
		G_ATTR, G_LAYOUT, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* handle 9 */
	};
	static const uint8_t no_handle[] = {G_ATTR, G_LAYOUT}; /* an MDS before CREATE_OPEN */
	struct wire_create_rep m, d;

	memset(&m, 0, sizeof(m));
	g_attr(&m.attr);
	g_layout(&m.layout);
	m.has_handle = 1;
	m.handle = 9;
	GOLDEN(create_rep, &m, golden);
	m.has_handle = 0;
	m.handle = 0;
	GOLDEN(create_rep, &m, no_handle);
	/* a handle cut short */
	CHECK(!DECODE_OK(wire_create_rep_decode, golden, sizeof(golden) - 1, &d));
	CHECK(!DECODE_OK(wire_create_rep_decode, golden, sizeof(no_handle) + 1, &d));
}

static void test_path_rep(void)
{
	static const uint8_t golden[] = {0x03, 0x00, 'a', '/', 'b'};
	struct wire_path_rep *m = calloc(1, sizeof(*m)), *d = malloc(sizeof(*d));

	memcpy(m->path, "a/b", 4);
	GOLDEN(path_rep, m, golden);
	memset(m->path, 'x', NACRE_PATH_MAX); /* the longest */
	ROUNDTRIP(path_rep, m);
	{
		static const uint8_t nul[] = {0x02, 0x00, 'a', 0x00};
		CHECK(!DECODE_OK(wire_path_rep_decode, nul, sizeof(nul), d));
	}
	free(m);
	free(d);
}

static void test_layout_rep(void)
{
	static const uint8_t golden[] = {G_LAYOUT};
	static const uint8_t gcap[] = {G_LAYOUT, G_CAP};
	struct wire_layout_rep m;

	memset(&m, 0, sizeof(m));
	g_layout(&m.layout);
	GOLDEN(layout_rep, &m, golden);
	ROUNDTRIP(layout_rep, &m);
	m.has_cap = 1;
	sample_cap(&m.cap);
	GOLDEN(layout_rep, &m, gcap);
}

/* ---- FID grants (WIRE_FEAT_FID_GRANT) ---- */

static void test_fid_grant_rep(void)
{
	static const uint8_t golden[] = {
		0x01, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq 0x200000401 */
		0x00, 0x00, 0x02, 0x00,                         /* width 131072 */
	};
	struct wire_fid_grant_rep g, d;

	memset(&g, 0, sizeof(g)); /* its padding too: compared whole */
	g.seq = 0x200000401ull;
	g.width = 1u << 17;
	GOLDEN(fid_grant_rep, &g, golden);
	ROUNDTRIP(fid_grant_rep, &g);
	/* no sequence 0, no width 0, none wider than WIRE_FID_GRANT_WIDTH_MAX */
	uint8_t bad[sizeof(golden)];
	memcpy(bad, golden, sizeof(bad));
	memset(bad, 0, 8);
	CHECK(!DECODE_OK(wire_fid_grant_rep_decode, bad, sizeof(bad), &d));
	memcpy(bad, golden, sizeof(bad));
	memset(bad + 8, 0, 4);
	CHECK(!DECODE_OK(wire_fid_grant_rep_decode, bad, sizeof(bad), &d));
	bad[8 + 3] = 0x40;
	bad[8] = 0x01; /* 2^30 + 1 */
	CHECK(!DECODE_OK(wire_fid_grant_rep_decode, bad, sizeof(bad), &d));
	CHECK(!DECODE_OK(wire_fid_grant_rep_decode, golden, sizeof(golden) - 1, &d));
}

/* ---- BATCH (WIRE_FEAT_BATCH) ---- */

static void test_batch_msgs(void)
{
	static const uint8_t greq[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred */
		0x02, 0x00, 0x00, 0x00,             /* count 2 */
		0x17, 0x00,                         /* UNLINK */
		0x03, 0x00, 0x00, 0x00, 'a', 'b', 'c', /* 3 bytes of body */
		0x13, 0x00,                         /* SETATTR */
		0x00, 0x00, 0x00, 0x00,             /* no body */
	};
	static const uint8_t grep_[] = {
		0x02, 0x00, 0x00, 0x00,             /* count 2 */
		0xfe, 0xff, 0xff, 0xff,             /* -ENOENT */
		0x00, 0x00, 0x00, 0x00,             /* no body */
		0x00, 0x00, 0x00, 0x00,             /* 0 */
		0x02, 0x00, 0x00, 0x00, 'x', 'y',   /* 2 bytes of body */
	};
	struct wire_batch_req *q = calloc(1, sizeof(*q)), *qd = calloc(1, sizeof(*qd));
	struct wire_batch_rep *r = calloc(1, sizeof(*r)), *rd = calloc(1, sizeof(*rd));
	struct wire_cursor c;
	uint8_t bad[sizeof(greq)];

	q->count = 2;
	q->ch[0] = (struct wire_batch_change){WIRE_OP_MDS_UNLINK, 3, (const uint8_t *)"abc"};
	q->ch[1] = (struct wire_batch_change){WIRE_OP_MDS_SETATTR, 0, NULL};
	ENCODE(&c, wire_batch_req_encode, q);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(greq));
	CHECK_MEM(c.buf, greq, sizeof(greq));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_batch_req_decode, greq, sizeof(greq), qd));
	CHECK(qd->count == 2 && qd->ch[0].opcode == WIRE_OP_MDS_UNLINK && qd->ch[0].len == 3 &&
	      !memcmp(qd->ch[0].body, "abc", 3) && qd->ch[1].opcode == WIRE_OP_MDS_SETATTR &&
	      qd->ch[1].len == 0);
	/* an opcode a batch may not carry, a count of 0, a length past the end: refused */
	memcpy(bad, greq, sizeof(bad));
	bad[16] = WIRE_OP_MDS_OPEN;
	CHECK(!DECODE_OK(wire_batch_req_decode, bad, sizeof(bad), qd));
	memcpy(bad, greq, sizeof(bad));
	bad[12] = 0;
	CHECK(!DECODE_OK(wire_batch_req_decode, bad, sizeof(bad), qd));
	memcpy(bad, greq, sizeof(bad));
	bad[12] = 0x01;
	bad[13] = 0x01; /* 257 > WIRE_BATCH_MAX */
	CHECK(!DECODE_OK(wire_batch_req_decode, bad, sizeof(bad), qd));
	memcpy(bad, greq, sizeof(bad));
	bad[18] = 0x04;
	CHECK(!DECODE_OK(wire_batch_req_decode, bad, sizeof(bad), qd));

	r->count = 2;
	r->r[0] = (struct wire_batch_result){-ENOENT, 0, NULL};
	r->r[1] = (struct wire_batch_result){0, 2, (const uint8_t *)"xy"};
	ENCODE(&c, wire_batch_rep_encode, r);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(grep_));
	CHECK_MEM(c.buf, grep_, sizeof(grep_));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_batch_rep_decode, grep_, sizeof(grep_), rd));
	CHECK(rd->count == 2 && rd->r[0].status == -ENOENT && rd->r[0].len == 0 &&
	      rd->r[1].status == 0 && rd->r[1].len == 2 && !memcmp(rd->r[1].body, "xy", 2));
	/* a positive status, and a failure that carries a body, are refused */
	uint8_t badr[sizeof(grep_)];
	memcpy(badr, grep_, sizeof(badr));
	badr[4] = 0x05;
	badr[7] = 0x00;
	CHECK(!DECODE_OK(wire_batch_rep_decode, badr, sizeof(badr), rd));
	memcpy(badr, grep_, sizeof(badr));
	badr[12] = 0xfe;
	badr[13] = badr[14] = badr[15] = 0xff;
	CHECK(!DECODE_OK(wire_batch_rep_decode, badr, sizeof(badr), rd));
	/* the results' worst case must fit one reply: every attr reply does, not every
	 * CREATE with a full layout */
	q->count = WIRE_BATCH_MAX;
	for (uint32_t i = 0; i < WIRE_BATCH_MAX; i++)
		q->ch[i] = (struct wire_batch_change){WIRE_OP_MDS_SETATTR, 0, NULL};
	CHECK(wire_batch_fits(q));
	for (uint32_t i = 0; i < WIRE_BATCH_MAX; i++)
		q->ch[i].opcode = WIRE_OP_MDS_CREATE;
	CHECK(!wire_batch_fits(q));
	q->count = (uint32_t)((WIRE_BODY_MAX - 4) / wire_batch_result_max(WIRE_OP_MDS_CREATE));
	CHECK(q->count >= 80 && wire_batch_fits(q));
	q->count++;
	CHECK(!wire_batch_fits(q));
	free(q);
	free(qd);
	free(r);
	free(rd);
}

/* ---- object capabilities (WIRE_FEAT_CAPS) ---- */

static void test_cap_msgs(void)
{
	static const uint8_t grep_[] = {
		0x07, 0x00, 0x00, 0x00, /* layout_gen 7 */
		G_CAP,
	};
	static const uint8_t gopen[] = {
		G_ATTR, G_LAYOUT, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* handle 42 */
		G_CAP,
	};
	static const uint8_t gcreate[] = {
		G_ATTR, G_LAYOUT, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* handle 9 */
		G_CAP,
	};
	struct wire_cap_rep r = {.layout_gen = 7};
	struct wire_open_rep *o = calloc(1, sizeof(*o)), *od = calloc(1, sizeof(*od));
	struct wire_create_rep *cr = calloc(1, sizeof(*cr)), *cd = calloc(1, sizeof(*cd));
	struct wire_cap_rep rd;

	sample_cap(&r.cap);
	GOLDEN(cap_rep, &r, grep_);
	ROUNDTRIP(cap_rep, &r);
	/* rights beyond read, write, punch and destroy are refused */
	{
		uint8_t bad[sizeof(grep_)];
		memcpy(bad, grep_, sizeof(bad));
		bad[4 + 8] = 0x10;
		CHECK(!DECODE_OK(wire_cap_rep_decode, bad, sizeof(bad), &rd));
	}
	g_attr(&o->attr);
	g_layout(&o->layout);
	o->handle = 42;
	o->has_cap = 1;
	sample_cap(&o->cap);
	GOLDEN(open_rep, o, gopen);
	CHECK(!DECODE_OK(wire_open_rep_decode, gopen, sizeof(gopen) - 1, od));
	g_attr(&cr->attr);
	g_layout(&cr->layout);
	cr->has_handle = 1;
	cr->handle = 9;
	cr->has_cap = 1;
	sample_cap(&cr->cap);
	GOLDEN(create_rep, cr, gcreate);
	CHECK(!DECODE_OK(wire_create_rep_decode, gcreate, sizeof(gcreate) - 1, cd));
	free(o);
	free(od);
	free(cr);
	free(cd);
}

static void test_statfs_rep(void)
{
	static const uint8_t golden[] = {G_STATFS};
	struct wire_statfs_rep m;

	g_statfs(&m.st);
	GOLDEN(statfs_rep, &m, golden);
	ROUNDTRIP(statfs_rep, &m);
}

static void fixup_xattr_rep(struct wire_xattr_rep *d, const struct wire_xattr_rep *m)
{
	CHECK_EQ(d->len, m->len);
	if (d->len == m->len && m->len > 0)
		CHECK_MEM(d->value, m->value, m->len);
	d->value = m->value;
}

static void test_xattr_rep(void)
{
	static const uint8_t golden[] = {'v', '1', 0x00}; /* a value is any bytes */
	static const uint8_t glen[] = {0x03, 0x00, 0x00, 0x00};
	struct wire_xattr_rep m, d;
	struct wire_xattr_len_rep l = {.len = 3}, ld;

	memset(&m, 0, sizeof(m)); /* padding too: GOLDEN compares bytes */
	m.value = golden;
	m.len = sizeof(golden);
	GOLDEN(xattr_rep, &m, golden);
	CHECK(DECODE_OK(wire_xattr_rep_decode, golden, 0, &d)); /* an empty value */
	CHECK(d.len == 0 && d.value == NULL);
	GOLDEN(xattr_len_rep, &l, glen);
	ROUNDTRIP(xattr_len_rep, &l);
	l.len = NACRE_XATTR_MAX + 1;
	{
		struct wire_cursor c;
		ENCODE(&c, wire_xattr_len_rep_encode, &l);
		CHECK(!DECODE_OK(wire_xattr_len_rep_decode, c.buf, wire_cursor_pos(&c), &ld));
		wire_cursor_fini(&c);
	}
}

static void test_readdir_rep(void)
{
	static const uint8_t golden[] = {
		0x02, 0x00, 0x00, 0x00,                         /* count 2 */
		0x01,                                           /* eof */
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cookie 7 */
		G_FID(0x02),
		0x00, 0x80, 0x00, 0x00,                         /* type S_IFREG */
		0x01, 0x00, 'a',                                /* name "a" */
		0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cookie 9 */
		G_FID(0x03),
		0x00, 0x40, 0x00, 0x00,                         /* type S_IFDIR */
		0x02, 0x00, 'b',  'c',                          /* name "bc" */
	};
	struct wire_readdir_rep h = {.count = 2, .eof = 1}, hd;
	struct nacre_dirent e[2], ed[3];
	struct wire_cursor c;

	memset(e, 0, sizeof(e));
	e[0].cookie = 7;
	sample_fid(&e[0].fid, 2);
	e[0].type = S_IFREG;
	memcpy(e[0].name, "a", 2);
	e[1].cookie = 9;
	sample_fid(&e[1].fid, 3);
	e[1].type = S_IFDIR;
	memcpy(e[1].name, "bc", 3);
	CHECK_EQ(sizeof(golden), 5 + 2 * WIRE_DIRENT_FIXED + 3);
	/* streamed as a server does: a zero header, the entries, the header patched in */
	{
		struct wire_readdir_rep zero = {0};
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_readdir_rep_encode(&c, &zero);
		wire_dirent_put(&c, &e[0]);
		wire_dirent_put(&c, &e[1]);
		wire_readdir_rep_patch(&c, 0, &h);
		CHECK(wire_cursor_ok(&c));
		CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
		CHECK_MEM(c.buf, golden, sizeof(golden));
		wire_readdir_rep_patch(&c, sizeof(golden) - 4, &h); /* no header there */
		CHECK_EQ(c.err, -EINVAL);
		wire_cursor_fini(&c);
	}
	memset(ed, 0, sizeof(ed));
	CHECK(LIST_OK(wire_readdir_rep_decode, &hd, wire_dirent_get, ed, golden, sizeof(golden),
		      2));
	CHECK(hd.count == 2 && hd.eof == 1);
	CHECK(memcmp(e, ed, sizeof(e)) == 0);
	for (size_t k = 0; k < sizeof(golden); k++)
		CHECK(!LIST_OK(wire_readdir_rep_decode, &hd, wire_dirent_get, ed, golden, k, 2));
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[0] = 3; /* a count the bytes cannot hold */
		CHECK(!LIST_OK(wire_readdir_rep_decode, &hd, wire_dirent_get, ed, bad, sizeof(bad),
			       0));
	}
}

static void test_links_rep(void)
{
	static const uint8_t golden[] = {
		0x02, 0x00, 0x00, 0x00, /* count 2 */
		0x01, 0x00, 0x00, 0x00, /* hidden 1 */
		0x03, 0x00, 0x00, 0x00, /* next 3 */
		0x01,                   /* eof */
		G_FID(0x02),
		0x01, 0x00, 'a',        /* name "a" */
		G_FID(0x03),
		0x02, 0x00, 'b',  'c',  /* name "bc" */
	};
	struct wire_links_rep h = {.count = 2, .hidden = 1, .next = 3, .eof = 1}, hd;
	struct wire_link_entry e[2], ed[3];
	struct wire_cursor c;

	memset(e, 0, sizeof(e));
	sample_fid(&e[0].parent, 2);
	memcpy(e[0].name, "a", 2);
	sample_fid(&e[1].parent, 3);
	memcpy(e[1].name, "bc", 3);
	/* streamed as the MDS does: a zero header, the entries, the header patched in */
	{
		struct wire_links_rep zero = {0};
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_links_rep_encode(&c, &zero);
		wire_link_entry_put(&c, &e[0]);
		wire_link_entry_put(&c, &e[1]);
		wire_links_rep_patch(&c, 0, &h);
		CHECK(wire_cursor_ok(&c));
		CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
		CHECK_MEM(c.buf, golden, sizeof(golden));
		wire_links_rep_patch(&c, sizeof(golden) - 4, &h); /* no header there */
		CHECK_EQ(c.err, -EINVAL);
		wire_cursor_fini(&c);
	}
	memset(ed, 0, sizeof(ed));
	CHECK(LIST_OK(wire_links_rep_decode, &hd, wire_link_entry_get, ed, golden,
		      sizeof(golden), 2));
	CHECK(hd.count == 2 && hd.hidden == 1 && hd.next == 3 && hd.eof == 1);
	CHECK(memcmp(e, ed, sizeof(e)) == 0);
	for (size_t k = 0; k < sizeof(golden); k++)
		CHECK(!LIST_OK(wire_links_rep_decode, &hd, wire_link_entry_get, ed, golden, k, 2));
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[0] = 3; /* a count the bytes cannot hold */
		CHECK(!LIST_OK(wire_links_rep_decode, &hd, wire_link_entry_get, ed, bad,
			       sizeof(bad), 0));
		memcpy(bad, golden, sizeof(bad));
		bad[12] = 2; /* eof is 0 or 1 */
		CHECK(!LIST_OK(wire_links_rep_decode, &hd, wire_link_entry_get, ed, bad,
			       sizeof(bad), 2));
		memcpy(bad, golden, sizeof(bad));
		bad[13 + 16 + 2] = '/'; /* a name holds no '/' */
		CHECK(!LIST_OK(wire_links_rep_decode, &hd, wire_link_entry_get, ed, bad,
			       sizeof(bad), 2));
	}
}

static void test_find_rep(void)
{
	static const uint8_t golden[] = {
		0x02, 0x00, 0x00, 0x00,         /* count 2 */
		0x00,                           /* done 0 */
		0x01, 0x03, 0x00, 'a', '/', 'b', /* cursor: resume at "a/b" */
		0x01, 0x00, 'x',                /* path "x" */
		0x00, 0x00, 0x00, 0x00,         /* err 0 */
		G_ATTR,
		0x01, G_LAYOUT,                 /* has_layout */
		0x00, 0x00,                     /* target "" */
		0x01, 0x00, 'a',                /* path "a" */
		0xf3, 0xff, 0xff, 0xff,         /* err -EACCES */
		G_ATTR,
		0x00,                           /* no layout */
		0x00, 0x00,                     /* target "" */
	};
	struct wire_find_rep h, hd;
	struct wire_find_ent *e = calloc(2, sizeof(*e)), *ed = calloc(3, sizeof(*ed));
	struct wire_cursor c;

	memset(&h, 0, sizeof(h));
	h.count = 2;
	h.cur.state = WIRE_FIND_CUR_RESUME;
	memcpy(h.cur.path, "a/b", 4);
	memcpy(e[0].path, "x", 2);
	g_attr(&e[0].attr);
	e[0].has_layout = 1;
	g_layout(&e[0].layout);
	memcpy(e[1].path, "a", 2);
	e[1].err = -EACCES;
	g_attr(&e[1].attr);
	CHECK_EQ(wire_find_ent_size(&e[0]) + wire_find_ent_size(&e[1]), sizeof(golden) - 11);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_find_rep_encode(&c, &h);
	wire_find_ent_put(&c, &e[0]);
	wire_find_ent_put(&c, &e[1]);
	CHECK(wire_cursor_ok(&c));
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(LIST_OK(wire_find_rep_decode, &hd, wire_find_ent_get, ed, golden, sizeof(golden), 2));
	CHECK(hd.count == 2 && !hd.done && hd.cur.state == WIRE_FIND_CUR_RESUME);
	CHECK_STR(hd.cur.path, "a/b");
	CHECK(memcmp(e, ed, 2 * sizeof(*e)) == 0);
	for (size_t k = 0; k < sizeof(golden); k++)
		CHECK(!LIST_OK(wire_find_rep_decode, &hd, wire_find_ent_get, ed, golden, k, 2));
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[5] = 2; /* an unknown cursor state */
		CHECK(!LIST_OK(wire_find_rep_decode, &hd, wire_find_ent_get, ed, bad, sizeof(bad),
			       2));
		memcpy(bad, golden, sizeof(bad));
		bad[sizeof(golden) - 2 - 1 - 100 - 4] = 0x01; /* a positive err */
		bad[sizeof(golden) - 2 - 1 - 100 - 1] = 0x00;
		CHECK(!LIST_OK(wire_find_rep_decode, &hd, wire_find_ent_get, ed, bad, sizeof(bad),
			       2));
	}
	free(e);
	free(ed);
}

static void test_quota_rep(void)
{
	static const uint8_t golden[] = {
		0x00, 0x10, 0, 0, 0, 0, 0, 0, /* kbytes 4096 */
		0x05, 0, 0, 0, 0, 0, 0, 0,    /* inodes 5 */
		0x00, 0x04, 0, 0, 0, 0, 0, 0, /* bsoft 1024 */
		0x00, 0x08, 0, 0, 0, 0, 0, 0, /* bhard 2048 */
		0x03, 0, 0, 0, 0, 0, 0, 0,    /* isoft 3 */
		0x04, 0, 0, 0, 0, 0, 0, 0,    /* ihard 4 */
		0x10, 0, 0, 0, 0, 0, 0, 0,    /* btime 16 */
		0, 0, 0, 0, 0, 0, 0, 0,       /* itime 0 */
		0x80, 0x3a, 0x09, 0, 0, 0, 0, 0, /* bgrace 604800 */
		0x02, 0, 0, 0, 0, 0, 0, 0,    /* igrace 2 */
		0x01, 0, 0, 0,                /* flags DEFAULT */
		0x01, 0, 0, 0,                /* count 1 */
		0x01, 0, 0, 0,                /* drift: type group */
		0xe8, 0x03, 0, 0,             /* id 1000 */
		0x08, 0, 0, 0, 0, 0, 0, 0,    /* stored kbytes 8 */
		0x02, 0, 0, 0, 0, 0, 0, 0,    /* stored inodes 2 */
		0x04, 0, 0, 0, 0, 0, 0, 0,    /* counted kbytes 4 */
		0x01, 0, 0, 0, 0, 0, 0, 0,    /* counted inodes 1 */
	};
	struct wire_quota_rep h = {4096, 5, 1024, 2048, 3, 4, 16, 0, 604800, 2, 1, 1}, hd;
	struct wire_quota_drift d = {1, 1000, 8, 2, 4, 1}, dd[2];
	struct wire_cursor c;

	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_quota_rep_encode(&c, &h);
	wire_quota_drift_put(&c, &d);
	CHECK(wire_cursor_ok(&c));
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(LIST_OK(wire_quota_rep_decode, &hd, wire_quota_drift_get, dd, golden,
		      sizeof(golden), 1));
	CHECK(memcmp(&h, &hd, sizeof(h)) == 0 && memcmp(&d, &dd[0], sizeof(d)) == 0);
	for (size_t k = 0; k < sizeof(golden); k++)
		CHECK(!LIST_OK(wire_quota_rep_decode, &hd, wire_quota_drift_get, dd, golden, k, 1));
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[84] = 2; /* a count the bytes cannot hold */
		CHECK(!LIST_OK(wire_quota_rep_decode, &hd, wire_quota_drift_get, dd, bad,
			       sizeof(bad), 2));
		memcpy(bad, golden, sizeof(bad));
		bad[88] = 3; /* an unknown type */
		CHECK(!LIST_OK(wire_quota_rep_decode, &hd, wire_quota_drift_get, dd, bad,
			       sizeof(bad), 1));
	}
}

static void test_targets_rep(void)
{
	static const uint8_t golden[] = {
		0x01, 0x00, 0x00, 0x00, /* count 1 */
		0x02, 0x00, 0x00, 0x00, /* type OST */
		0x03, 0x00, 0x00, 0x00, /* index 3 */
		0x01,                   /* up */
		0x03, 0x00, 'h', ':', '1', /* addr "h:1" */
		G_STATFS,
	};
	struct wire_targets_rep h = {.count = 1}, hd;
	struct nacre_target t, td[2];
	struct wire_cursor c;

	memset(&t, 0, sizeof(t));
	t.type = NACRE_TGT_OST;
	t.index = 3;
	t.up = 1;
	memcpy(t.addr, "h:1", 4);
	g_statfs(&t.st);
	ENCODE(&c, wire_targets_rep_encode, &h);
	wire_target_put(&c, &t);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	memset(td, 0, sizeof(td));
	CHECK(LIST_OK(wire_targets_rep_decode, &hd, wire_target_get, td, golden, sizeof(golden),
		      1));
	CHECK_EQ(hd.count, 1);
	CHECK(memcmp(&t, &td[0], sizeof(t)) == 0);
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[0] = 2; /* a count the bytes cannot hold: refused before any allocation */
		CHECK(!LIST_OK(wire_targets_rep_decode, &hd, wire_target_get, td, bad, sizeof(bad),
			       0));
	}
}

static void test_key_list(void)
{
	static const uint8_t golden[] = {
		0x01, 0x00, 0x00, 0x00,             /* count 1 */
		0x05, 0x00, 'n', 'o', 'd', 'e', '1', /* name "node1" */
		0x01,                               /* role client */
		0x03, 0, 0, 0, 0, 0, 0, 0,          /* gen 3 */
		0x01, 0x00, 0x00, 0x00,             /* revoked */
	};
	struct wire_key_list h = {.count = 1}, hd;
	struct wire_key_entry e, ed[2];
	struct wire_cursor c;

	memset(&e, 0, sizeof(e));
	memcpy(e.name, "node1", 6);
	e.role = 1;
	e.gen = 3;
	e.revoked = 1;

	ENCODE(&c, wire_key_list_encode, &h);
	wire_key_entry_put(&c, &e);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	memset(ed, 0, sizeof(ed));
	CHECK(LIST_OK(wire_key_list_decode, &hd, wire_key_entry_get, ed, golden, sizeof(golden),
		      1));
	CHECK_EQ(hd.count, 1);
	CHECK(memcmp(&e, &ed[0], sizeof(e)) == 0);
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[0] = 2; /* more entries than the bytes hold */
		CHECK(!LIST_OK(wire_key_list_decode, &hd, wire_key_entry_get, ed, bad, sizeof(bad),
			       0));
		memcpy(bad, golden, sizeof(bad));
		bad[11] = 0; /* role server: never in a key table */
		CHECK(!LIST_OK(wire_key_list_decode, &hd, wire_key_entry_get, ed, bad, sizeof(bad),
			       1));
		memcpy(bad, golden, sizeof(bad));
		bad[12] = 0; /* generation 0 */
		CHECK(!LIST_OK(wire_key_list_decode, &hd, wire_key_entry_get, ed, bad, sizeof(bad),
			       1));
		memcpy(bad, golden, sizeof(bad));
		bad[8] = '/'; /* not a key name */
		CHECK(!LIST_OK(wire_key_list_decode, &hd, wire_key_entry_get, ed, bad, sizeof(bad),
			       1));
		memcpy(bad, golden, sizeof(bad));
		bad[20] = 2; /* revoked is 0 or 1 */
		CHECK(!LIST_OK(wire_key_list_decode, &hd, wire_key_entry_get, ed, bad, sizeof(bad),
			       1));
	}
}

static void test_cred_req(void)
{
	static const uint8_t golden[] = {
		0xe8, 0x03, 0x00, 0x00, /* uid 1000 */
		0x64, 0x00, 0x00, 0x00, /* gid 100 */
		0x01, 0x00, 0x00, 0x00, /* ngroups 1 */
		0x0a, 0x00, 0x00, 0x00, /* groups[0] 10 */
	};
	struct wire_cred_req m;

	memset(&m, 0, sizeof(m));
	m.cred.uid = 1000;
	m.cred.gid = 100;
	m.cred.ngroups = 1;
	m.cred.groups[0] = 10;
	GOLDEN(cred_req, &m, golden);
}

static void test_connect_open_rep(void)
{
	static const uint8_t gconn[] = {
		0x01, 0x00,                                     /* version 1 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* features */
		0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, /* nonce */
		0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, /* proof */
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
		0x03, 0x00, 'm',  'd',  't',                    /* server_name "mdt" */
	};
	static const uint8_t gopen[] = {
		G_ATTR, G_LAYOUT, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* handle 42 */
	};
	struct wire_connect_rep c;
	struct wire_open_rep o;

	memset(&c, 0, sizeof(c));
	c.version = 1;
	memset(c.nonce, 0xaa, sizeof(c.nonce));
	memset(c.proof, 0x55, sizeof(c.proof));
	memcpy(c.server_name, "mdt", 4);
	GOLDEN(connect_rep, &c, gconn);
	memset(&o, 0, sizeof(o));
	g_attr(&o.attr);
	g_layout(&o.layout);
	o.handle = 42;
	GOLDEN(open_rep, &o, gopen);
}

/* ---- recovery (WIRE_FEAT_RECOVERY): envelopes, CONNECT's session fields, admin ---- */

static void test_recovery_msgs(void)
{
	static const uint8_t greq_env[] = {
		0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* ack_xid 16 */
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* transno 7 */
		0x02, 0x00, 0x00, 0x00,                         /* flags REPLAY */
		0x64, 0x00, 0x00, 0x00,                         /* replay_len 100 */
	};
	static const uint8_t grep_env[] = {
		0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* transno 8 */
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* last_committed 5 */
	};
	static const uint8_t gconn[] = {
		0x01, 0x00,                                     /* version 1 */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* features RECOVERY */
		0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, /* nonce */
		0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, /* proof */
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
		0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
		0x03, 0x00, 'm',  'd',  't',                    /* server_name "mdt" */
		0x21, 0x43, 0x65, 0x87, 0x00, 0x00, 0x00, 0x00, /* instance 0x87654321 */
		0x02, 0x00, 0x00, 0x00,                         /* session RECOVER */
		0x60, 0xea, 0x00, 0x00,                         /* recovery_ms 60000 */
		0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* last_committed 9 */
	};
	static const uint8_t gconn_req[] = {
		0x01, 0x00, 0x01, 0x00,                         /* versions 1..1 */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* features RECOVERY */
		0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, /* nonce */
		0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb,
		0x02, 0x00, 'f', 's',                           /* fsname "fs" */
		0x01, 0x00, 'c',                                /* name "c" */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* client_id (top bit) | 1 */
		0x21, 0x43, 0x65, 0x87, 0x00, 0x00, 0x00, 0x00, /* instance 0x87654321 */
	};
	static const uint8_t gfault_req[] = {0x0f, 0x00, 'r', 'p', 'c', '.', 'd', 'r', 'o', 'p',
					      '_', 'r', 'e', 'p', '=', 'o', 'n'};
	static const uint8_t gfault_rep[] = {0x00, 0x00}; /* nothing armed */
	static const uint8_t gdone[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred: uid 0, gid 0 */
		0x00, 0x00, 0x00, 0x00,                         /* no groups */
		0x02, 0x00, 0x00, 0x00,                         /* stage COMPLETE */
	};
	static const uint8_t gstatus[] = {
		0x01, 0x00, 0x00, 0x00,                         /* RECOVERING */
		0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, /* start 0x60000000 */
		0x03, 0x00, 0x00, 0x00,                         /* duration 3 s */
		0x39, 0x00, 0x00, 0x00,                         /* 57 s left */
		0x04, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* expected 4, connected 3 */
		0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* replayed 2, completed 1 */
		0x00, 0x00, 0x00, 0x00,                         /* evicted 0 */
		0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 10 requests replayed */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 2 queued */
		0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* last_transno 100 */
		0x5a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* last_committed 90 */
	};
	static const uint8_t gappend_req[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred */
		G_FID(0x01),
		0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* handle 42 */
		0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* len 4096 */
	};
	static const uint8_t gappend_rep[] = {0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00};
	struct wire_req_env qe = {.ack_xid = 16, .transno = 7, .flags = WIRE_ENV_REPLAY,
				  .replay_len = 100};
	struct wire_rep_env pe = {.transno = 8, .last_committed = 5};
	struct wire_connect_rep c;
	struct wire_connect_req cq;
	struct wire_fault_set_req *fq = calloc(1, sizeof(*fq));
	struct wire_fault_set_rep *fp = calloc(1, sizeof(*fp));
	struct wire_recovery_done_req d = {.stage = WIRE_RECOVERY_COMPLETE};
	struct wire_recovery_status st = {
		.state = WIRE_RECOVERY_STATE_RECOVERING, .start = 0x60000000, .duration_s = 3,
		.time_left_s = 57, .clients_expected = 4, .clients_connected = 3,
		.clients_replayed = 2, .clients_completed = 1, .replayed = 10, .queued = 2,
		.last_transno = 100, .last_committed = 90};
	struct wire_append_req aq = {.handle = 42, .len = 4096};
	struct wire_append_rep ap = {.offset = 0x100000};

	GOLDEN(req_env, &qe, greq_env);
	GOLDEN(rep_env, &pe, grep_env);
	CHECK_EQ(sizeof(greq_env), WIRE_REQ_ENV_LEN);
	CHECK_EQ(sizeof(grep_env), WIRE_REP_ENV_LEN);
	{ /* unknown flags, and replay bytes without a replay, are refused */
		struct wire_req_env bad;
		uint8_t b[sizeof(greq_env)];
		memcpy(b, greq_env, sizeof(b));
		b[16] = 0x06;
		CHECK(!DECODE_OK(wire_req_env_decode, b, sizeof(b), &bad));
		b[16] = 0x01; /* RESEND with replay_len 100 */
		CHECK(!DECODE_OK(wire_req_env_decode, b, sizeof(b), &bad));
		CHECK(!DECODE_OK(wire_req_env_decode, greq_env, sizeof(greq_env) - 1, &bad));
	}
	memset(&c, 0, sizeof(c));
	c.version = 1;
	c.features = WIRE_FEAT_RECOVERY;
	memset(c.nonce, 0xaa, sizeof(c.nonce));
	memset(c.proof, 0x55, sizeof(c.proof));
	memcpy(c.server_name, "mdt", 4);
	c.instance = 0x87654321;
	c.session = WIRE_SESSION_RECOVER;
	c.recovery_ms = 60000;
	c.last_committed = 9;
	GOLDEN(connect_rep, &c, gconn);
	{
		struct wire_connect_rep bad;
		uint8_t b[sizeof(gconn)];
		memcpy(b, gconn, sizeof(b));
		b[sizeof(b) - 16] = 3; /* no such session state */
		CHECK(!DECODE_OK(wire_connect_rep_decode, b, sizeof(b), &bad));
	}
	memset(&cq, 0, sizeof(cq));
	cq.version_min = cq.version_max = 1;
	cq.features = WIRE_FEAT_RECOVERY;
	memset(cq.nonce, 0xbb, sizeof(cq.nonce));
	memcpy(cq.fsname, "fs", 3);
	memcpy(cq.name, "c", 2);
	cq.client_id = 1ull | (1ull << 63);
	cq.instance = 0x87654321;
	GOLDEN(connect_req, &cq, gconn_req);
	memcpy(fq->spec, "rpc.drop_rep=on", 16);
	GOLDEN(fault_set_req, fq, gfault_req);
	GOLDEN(fault_set_rep, fp, gfault_rep);
	GOLDEN(recovery_done_req, &d, gdone);
	{
		struct wire_recovery_done_req bad;
		uint8_t b[sizeof(gdone)];
		memcpy(b, gdone, sizeof(b));
		b[12] = 3; /* no such stage */
		CHECK(!DECODE_OK(wire_recovery_done_req_decode, b, sizeof(b), &bad));
	}
	GOLDEN(recovery_status, &st, gstatus);
	sample_fid(&aq.fid, 1);
	GOLDEN(append_req, &aq, gappend_req);
	{
		struct wire_append_req bad;
		uint8_t b[sizeof(gappend_req)];
		memcpy(b, gappend_req, sizeof(b));
		memset(b + sizeof(b) - 8, 0, 8); /* an append of nothing */
		CHECK(!DECODE_OK(wire_append_req_decode, b, sizeof(b), &bad));
	}
	GOLDEN(append_rep, &ap, gappend_rep);
	free(fq);
	free(fp);
}

/* ---- HSM replies ---- */

static void test_hsm_state(void)
{
	struct wire_cursor c;

	/* golden: state 0x0d archive 1 */
	static const uint8_t gstate[] = {0x0d, 0, 0, 0, 0x01, 0, 0, 0};
	struct wire_hsm_state s = {0x0d, 1}, sd;
	ENCODE(&c, wire_hsm_state_encode, &s);
	CHECK_MEM(c.buf, gstate, sizeof(gstate));
	wire_cursor_fini(&c);
	CHECK(DECODE_OK(wire_hsm_state_decode, gstate, sizeof(gstate), &sd));
	ROUNDTRIP(hsm_state, &s);
	s.state = 0x80; /* PCC bits are not ours */
	ENCODE(&c, wire_hsm_state_encode, &s);
	CHECK(!DECODE_OK(wire_hsm_state_decode, c.buf, wire_cursor_pos(&c), &sd));
	wire_cursor_fini(&c);
}

static void test_hsm_request_rep(void)
{
	static const uint8_t golden[] = {
		0x02, 0x00, 0x00, 0x00, /* nfids 2 */
		0x00, 0x00, 0x00, 0x00, /* 0 */
		0xfe, 0xff, 0xff, 0xff, /* -ENOENT */
	};
	struct wire_hsm_request_rep h = {.nfids = 2}, hd;
	int32_t rcs[3];
	struct wire_cursor c;

	ENCODE(&c, wire_hsm_request_rep_encode, &h);
	wire_hsm_rc_put(&c, 0);
	wire_hsm_rc_put(&c, -ENOENT);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	CHECK(LIST_OK(wire_hsm_request_rep_decode, &hd, wire_hsm_rc_get, rcs, golden,
		      sizeof(golden), 2));
	CHECK(hd.nfids == 2 && rcs[0] == 0 && rcs[1] == -ENOENT);
	for (size_t k = 0; k < sizeof(golden); k++)
		CHECK(!LIST_OK(wire_hsm_request_rep_decode, &hd, wire_hsm_rc_get, rcs, golden, k,
			       2));
	{
		uint8_t bad[sizeof(golden)];
		memcpy(bad, golden, sizeof(bad));
		bad[0] = 1; /* fewer statuses than bytes */
		CHECK(!LIST_OK(wire_hsm_request_rep_decode, &hd, wire_hsm_rc_get, rcs, bad,
			       sizeof(bad), 1));
		memcpy(bad, golden, sizeof(bad));
		bad[1] = 0x10; /* 4098 fids: above WIRE_HSM_FIDS_MAX */
		CHECK(!LIST_OK(wire_hsm_request_rep_decode, &hd, wire_hsm_rc_get, rcs, bad,
			       sizeof(bad), 0));
	}
}

static void test_hsm_action_lists(void)
{
	static const uint8_t gnone[] = {0x00};
	static const uint8_t gone[] = {0x01, G_ACTION};
	static const uint8_t glist[] = {0x01, 0x00, 0x00, 0x00, 0x01, G_ACTION}; /* 1, eof */
	static const uint8_t gpoll[] = {0x01, 0x00, 0x00, 0x00, G_ACTION};
	struct nacre_hsm_action *a = malloc(sizeof(*a)), *ad = malloc(2 * sizeof(*ad));
	struct wire_hsm_action_rep ah = {.has = 1}, ahd;
	struct wire_hsm_list_rep lh = {.count = 1, .eof = 1}, lhd;
	struct wire_hsm_poll_rep ph = {.count = 1}, phd;
	struct wire_cursor c;

	g_action(a);
	CHECK_EQ(sizeof(gone), 1 + WIRE_HSM_ACTION_MIN + 1);
	/* HSM_ACTION: nothing, then one action */
	CHECK(LIST_OK(wire_hsm_action_rep_decode, &ahd, wire_hsm_action_get, ad, gnone,
		      sizeof(gnone), 0));
	CHECK_EQ(ahd.has, 0);
	ENCODE(&c, wire_hsm_action_rep_encode, &ah);
	wire_hsm_action_put(&c, a);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(gone));
	CHECK_MEM(c.buf, gone, sizeof(gone));
	wire_cursor_fini(&c);
	memset(ad, 0, sizeof(*ad));
	CHECK(LIST_OK(wire_hsm_action_rep_decode, &ahd, wire_hsm_action_get, ad, gone,
		      sizeof(gone), 1));
	CHECK(ahd.has == 1 && memcmp(a, ad, sizeof(*a)) == 0);
	{
		uint8_t bad[sizeof(gone)];
		memcpy(bad, gone, sizeof(bad));
		bad[0] = 2;
		CHECK(!LIST_OK(wire_hsm_action_rep_decode, &ahd, wire_hsm_action_get, ad, bad,
			       sizeof(bad), 1));
	}

	/* HSM_LIST: streamed with its header patched in at the end */
	{
		struct wire_hsm_list_rep zero = {0};
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_hsm_list_rep_encode(&c, &zero);
		wire_hsm_action_put(&c, a);
		wire_hsm_list_rep_patch(&c, 0, &lh);
		CHECK_EQ(wire_cursor_pos(&c), sizeof(glist));
		CHECK_MEM(c.buf, glist, sizeof(glist));
		wire_cursor_fini(&c);
	}
	memset(ad, 0, sizeof(*ad));
	CHECK(LIST_OK(wire_hsm_list_rep_decode, &lhd, wire_hsm_action_get, ad, glist,
		      sizeof(glist), 1));
	CHECK(lhd.count == 1 && lhd.eof == 1 && memcmp(a, ad, sizeof(*a)) == 0);
	for (size_t k = 0; k < sizeof(glist); k++)
		CHECK(!LIST_OK(wire_hsm_list_rep_decode, &lhd, wire_hsm_action_get, ad, glist, k,
			       1));
	{
		uint8_t bad[sizeof(glist)];
		memcpy(bad, glist, sizeof(bad));
		bad[4] = 2; /* eof is 0 or 1 */
		CHECK(!LIST_OK(wire_hsm_list_rep_decode, &lhd, wire_hsm_action_get, ad, bad,
			       sizeof(bad), 1));
		memcpy(bad, glist, sizeof(bad));
		bad[0] = 2; /* a count the bytes cannot hold */
		CHECK(!LIST_OK(wire_hsm_list_rep_decode, &lhd, wire_hsm_action_get, ad, bad,
			       sizeof(bad), 0));
	}

	/* HSM_AGENT_POLL */
	ENCODE(&c, wire_hsm_poll_rep_encode, &ph);
	wire_hsm_action_put(&c, a);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(gpoll));
	CHECK_MEM(c.buf, gpoll, sizeof(gpoll));
	wire_cursor_fini(&c);
	memset(ad, 0, sizeof(*ad));
	CHECK(LIST_OK(wire_hsm_poll_rep_decode, &phd, wire_hsm_action_get, ad, gpoll,
		      sizeof(gpoll), 1));
	CHECK(phd.count == 1 && memcmp(a, ad, sizeof(*a)) == 0);
	{
		uint8_t bad[sizeof(gpoll)];
		memcpy(bad, gpoll, sizeof(bad));
		bad[0] = 2;
		CHECK(!LIST_OK(wire_hsm_poll_rep_decode, &phd, wire_hsm_action_get, ad, bad,
			       sizeof(bad), 0));
	}
	free(a);
	free(ad);
}

static void test_hsm_progress_rep(void)
{
	static const uint8_t golden[] = {0x01, 0x00, 0x00, 0x00}; /* CANCEL */
	struct wire_hsm_progress_rep m = {.flags = WIRE_HSM_REP_CANCEL};

	GOLDEN(hsm_progress_rep, &m, golden);
	ROUNDTRIP(hsm_progress_rep, &m);
}

/* ---- lock and OST replies ---- */

static void test_lock_rep(void)
{
	struct wire_cursor c;

	/* golden reply: a read lock on [0, 99] held by pid 7 */
	static const uint8_t grep_[] = {
		0x01,                                           /* RDLCK */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* start 0 */
		0x63, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* end 99 */
		0x07, 0x00, 0x00, 0x00,                         /* pid 7 */
	};
	struct wire_lock_rep r, rd;
	memset(&r, 0, sizeof(r)); /* padding too: the round trip compares bytes */
	r.type = WIRE_LK_RDLCK;
	r.end = 99;
	r.pid = 7;
	ENCODE(&c, wire_lock_rep_encode, &r);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(grep_));
	CHECK_MEM(c.buf, grep_, sizeof(grep_));
	wire_cursor_fini(&c);
	ROUNDTRIP(lock_rep, &r);
	r.type = 3;
	ENCODE(&c, wire_lock_rep_encode, &r);
	CHECK(!DECODE_OK(wire_lock_rep_decode, c.buf, wire_cursor_pos(&c), &rd));
	wire_cursor_fini(&c);
}

/* ---- callbacks ---- */

static void test_notify_recall(void);

static void test_notify_rep(void)
{
	static const uint8_t golden[] = {
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 5 */
		0x00, 0x00, 0x00, 0x00,                         /* flags */
		0x01, 0x00, 0x00, 0x00,                         /* count 1 */
	};
	struct wire_notify_rep m = {.seq = 5, .count = 1}, d;
	struct wire_cursor c;
	uint8_t one[sizeof(golden) + 16] = {0};

	ENCODE(&c, wire_notify_rep_encode, &m);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	/* the count must be backed by the fids present */
	CHECK(!DECODE_OK(wire_notify_rep_decode, golden, sizeof(golden), &d));
	memcpy(one, golden, sizeof(golden));
	wire_cursor_init_read(&c, one, sizeof(one));
	wire_notify_rep_decode(&c, &d);
	CHECK(wire_cursor_ok(&c) && d.seq == 5 && d.count == 1 && wire_cursor_left(&c) == 16);
	m.flags = 4; /* unknown flag */
	ENCODE(&c, wire_notify_rep_encode, &m);
	CHECK(!DECODE_OK(wire_notify_rep_decode, c.buf, wire_cursor_pos(&c), &d));
	wire_cursor_fini(&c);
	m = (struct wire_notify_rep){.count = WIRE_NOTIFY_MAX + 1};
	ENCODE(&c, wire_notify_rep_encode, &m);
	CHECK(!DECODE_OK(wire_notify_rep_decode, c.buf, wire_cursor_pos(&c), &d));
	wire_cursor_fini(&c);
	test_notify_recall();
}

/* A recall (WIRE_FEAT_WB_LEASE): the perm-change FIDs, then the directories recalled. */
static void test_notify_recall(void)
{
	static const uint8_t golden[] = {
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 7 */
		0x02, 0x00, 0x00, 0x00,                         /* WIRE_NOTIFY_RECALL */
		0x00, 0x00, 0x00, 0x00,                         /* no perm changes */
		0x01, 0x00, 0x00, 0x00,                         /* 1 recalled */
		0x01, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq 0x200000401 */
		0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* oid 9, ver 0 */
	};
	struct wire_notify_rep m = {.seq = 7, .flags = WIRE_NOTIFY_RECALL}, d;
	struct nacre_fid dir = {.seq = 0x200000401ull, .oid = 9}, got[2];
	struct wire_cursor c;
	uint8_t bad[sizeof(golden) + 1];

	wire_cursor_init_dyn(&c, 256);
	wire_notify_rep_encode(&c, &m);
	wire_put_u32(&c, 1);
	wire_fid_put(&c, &dir);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(golden));
	CHECK_MEM(c.buf, golden, sizeof(golden));
	wire_cursor_fini(&c);
	wire_cursor_init_read(&c, golden, sizeof(golden));
	wire_notify_rep_decode(&c, &d);
	CHECK(wire_cursor_ok(&c) && d.flags == WIRE_NOTIFY_RECALL && d.count == 0);
	CHECK_EQ(wire_notify_recall_get(&c, got, 2), 1);
	CHECK(got[0].seq == dir.seq && got[0].oid == dir.oid && got[0].ver == dir.ver);
	/* none, more than the caller takes, or bytes left over: refused */
	memcpy(bad, golden, sizeof(golden));
	bad[16] = 0;
	wire_cursor_init_read(&c, bad, sizeof(golden));
	wire_notify_rep_decode(&c, &d);
	CHECK(wire_notify_recall_get(&c, got, 2) < 0 && !wire_cursor_ok(&c));
	memcpy(bad, golden, sizeof(golden));
	wire_cursor_init_read(&c, bad, sizeof(golden));
	wire_notify_rep_decode(&c, &d);
	CHECK(wire_notify_recall_get(&c, got, 0) < 0);
	wire_cursor_init_read(&c, bad, sizeof(bad));
	wire_notify_rep_decode(&c, &d);
	CHECK(wire_notify_recall_get(&c, got, 2) < 0);
}

static void test_lease_req(void)
{
	static const uint8_t golden[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred */
		0x01, 0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* seq 0x200000401 */
		0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* oid 9, ver 0 */
		0x01, 0x00, 0x00, 0x00,                         /* WIRE_LEASE_GET */
	};
	struct wire_lease_req m, d;
	uint8_t bad[sizeof(golden)];

	memset(&m, 0, sizeof(m));
	m.fid = (struct nacre_fid){.seq = 0x200000401ull, .oid = 9};
	m.op = WIRE_LEASE_GET;
	GOLDEN(lease_req, &m, golden);
	ROUNDTRIP(lease_req, &m);
	m.op = WIRE_LEASE_PUT;
	ROUNDTRIP(lease_req, &m);
	memcpy(bad, golden, sizeof(bad));
	bad[sizeof(bad) - 4] = 3; /* no such op */
	CHECK(!DECODE_OK(wire_lease_req_decode, bad, sizeof(bad), &d));
	bad[sizeof(bad) - 4] = 0;
	CHECK(!DECODE_OK(wire_lease_req_decode, bad, sizeof(bad), &d));
	CHECK(!DECODE_OK(wire_lease_req_decode, golden, sizeof(golden) - 1, &d));
}

static void test_lease_rep(void)
{
	static const uint8_t golden[] = {0x01, 0x00, 0x00, 0x00}; /* WIRE_LEASE_DEFAULT_ACL */
	struct wire_lease_rep m = {.flags = WIRE_LEASE_DEFAULT_ACL}, d;
	uint8_t bad[] = {0x02, 0x00, 0x00, 0x00};

	GOLDEN(lease_rep, &m, golden);
	ROUNDTRIP(lease_rep, &m);
	CHECK(!DECODE_OK(wire_lease_rep_decode, bad, sizeof(bad), &d)); /* unknown flag */
	CHECK(!DECODE_OK(wire_lease_rep_decode, golden, 3, &d));
}

static void test_ost_attr_rep(void)
{
	static const uint8_t golden[] = {
		0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, /* size 1 MiB */
		0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* blocks 2048 */
	};
	struct wire_ost_attr_rep m = {.size = 1u << 20, .blocks = 2048};

	GOLDEN(ost_attr_rep, &m, golden);
}

static void test_ost_seek_rep(void)
{
	static const uint8_t golden[] = {
		0x00, 0x00, 0x19, 0x00, 0x00, 0x00, 0x00, 0x00, /* offset 1.5625 MiB */
	};
	struct wire_ost_seek_rep m = {.offset = 1600u << 10};

	GOLDEN(ost_seek_rep, &m, golden);
}

static int destroy_rep_decode(const uint8_t *buf, size_t len, struct wire_ost_destroy_rep *m,
			      struct wire_ost_destroy_fail *fails)
{
	struct wire_cursor c;
	wire_cursor_init_read(&c, buf, len);
	wire_ost_destroy_rep_decode(&c, m);
	for (uint32_t i = 0; i < m->nfailed && wire_cursor_ok(&c); i++)
		wire_ost_destroy_fail_get(&c, &fails[i]);
	return wire_cursor_ok(&c) && wire_cursor_left(&c) == 0;
}

static void test_ost_destroy_rep(void)
{
	struct wire_cursor c;

	/* golden reply: object 1 failed with EIO */
	static const uint8_t grep_[] = {
		0x01, 0x00, 0x00, 0x00, /* nfailed 1 */
		0x01, 0x00, 0x00, 0x00, /* index 1 */
		0xfb, 0xff, 0xff, 0xff, /* status -5 */
	};
	struct wire_ost_destroy_rep r = {.nfailed = 1}, rd;
	struct wire_ost_destroy_fail f = {.index = 1, .status = -EIO}, fd[2];
	ENCODE(&c, wire_ost_destroy_rep_encode, &r);
	wire_ost_destroy_fail_put(&c, &f);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(grep_));
	CHECK_MEM(c.buf, grep_, sizeof(grep_));
	wire_cursor_fini(&c);
	/* streamed as the OSS does: the count patched in after the failures */
	{
		struct wire_ost_destroy_rep zero = {0};
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_ost_destroy_rep_encode(&c, &zero);
		wire_ost_destroy_fail_put(&c, &f);
		wire_ost_destroy_rep_patch(&c, 0, &r);
		CHECK_EQ(wire_cursor_pos(&c), sizeof(grep_));
		CHECK_MEM(c.buf, grep_, sizeof(grep_));
		wire_cursor_fini(&c);
	}
	CHECK(destroy_rep_decode(grep_, sizeof(grep_), &rd, fd));
	CHECK_EQ(rd.nfailed, 1);
	CHECK(fd[0].index == 1 && fd[0].status == -EIO);
	/* success: an empty list */
	static const uint8_t gok[] = {0, 0, 0, 0};
	CHECK(destroy_rep_decode(gok, sizeof(gok), &rd, fd));
	CHECK_EQ(rd.nfailed, 0);
	for (size_t k = 0; k < sizeof(grep_); k++)
		CHECK(!destroy_rep_decode(grep_, k, &rd, fd));
	{
		uint8_t bad[sizeof(grep_)];
		memcpy(bad, grep_, sizeof(bad));
		bad[0] = 2; /* more failures than present */
		CHECK(!destroy_rep_decode(bad, sizeof(bad), &rd, fd));
		memcpy(bad, grep_, sizeof(bad));
		memset(bad + 8, 0, 4); /* status 0 is not a failure */
		CHECK(!destroy_rep_decode(bad, sizeof(bad), &rd, fd));
		memcpy(bad, grep_, sizeof(bad));
		bad[5] = 0x04; /* index 1025 */
		CHECK(!destroy_rep_decode(bad, sizeof(bad), &rd, fd));
		memcpy(bad, grep_, sizeof(bad));
		bad[0] = 0x01; /* nfailed 1025 */
		bad[1] = 0x04;
		CHECK(!destroy_rep_decode(bad, sizeof(bad), &rd, fd));
	}
}

/* ---- nodemaps ---- */

/* The text is a view into the buffer: compare contents, then align the pointers. */
static void fixup_nodemap_rep(struct wire_nodemap_rep *d, const struct wire_nodemap_rep *m)
{
	CHECK_EQ(d->text_len, m->text_len);
	if (d->text_len == m->text_len && m->text_len)
		CHECK_MEM(d->text, m->text, m->text_len);
	d->text = m->text;
}

static void test_nodemap_msgs(void)
{
	static const uint8_t grep_[] = {
		0x14, 0x00, 0x00, 0x00, /* text: 20 bytes */
		'd', 'e', 'n', 'i', 'e', 'd', ' ', 'b', 'y', ' ', 'r', 'u', 'l', 'e', ' ', '\'',
		'l', 'a', 'b', '\'',
		G_FID(0x01),
	};
	struct wire_nodemap_rep r = {.text = "denied by rule 'lab'", .text_len = 20};
	struct wire_nodemap_req *q = calloc(1, sizeof(*q)), *d = calloc(1, sizeof(*d));
	struct wire_cursor c;

	sample_fid(&r.root, 1);
	GOLDEN(nodemap_rep, &r, grep_);
	{ /* a NUL in the text, or a length past the bytes, is refused */
		struct wire_nodemap_rep bad;
		uint8_t b[sizeof(grep_)];
		memcpy(b, grep_, sizeof(b));
		b[6] = 0;
		CHECK(!DECODE_OK(wire_nodemap_rep_decode, b, sizeof(b), &bad));
		memcpy(b, grep_, sizeof(b));
		b[0] = 0x30;
		CHECK(!DECODE_OK(wire_nodemap_rep_decode, b, sizeof(b), &bad));
	}
	/* a request round-trips; an unknown command is refused */
	sample_cred(&q->cred);
	q->cmd = WIRE_NODEMAP_MODIFY;
	memcpy(q->name, "lab", 4);
	memcpy(q->key, "fileset", 8);
	memcpy(q->value, "/proj/a", 8);
	ENCODE(&c, wire_nodemap_req_encode, q);
	CHECK(DECODE_OK(wire_nodemap_req_decode, c.buf, wire_cursor_pos(&c), d));
	CHECK(memcmp(q, d, sizeof(*q)) == 0);
	wire_cursor_fini(&c);
	q->cmd = 7;
	ENCODE(&c, wire_nodemap_req_encode, q);
	CHECK(!DECODE_OK(wire_nodemap_req_decode, c.buf, wire_cursor_pos(&c), d));
	wire_cursor_fini(&c);
	free(q);
	free(d);
}

/* ---- changelogs ---- */

static void test_changelog_msgs(void)
{
	static const uint8_t grep_[] = {
		0x03, 0x00, 'c', 'l', '1',                      /* user "cl1" */
		0xff, 0xfb, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, /* mask: all but OPEN, ATIME */
		0x01, 0x00, 0x00, 0x00,                         /* xflags uidgid */
		0x02, 0x00, 0x00, 0x00,                         /* 2 users */
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* first 5 */
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* last 7 */
		0x01, 0x00, 0x00, 0x00,                         /* 1 record follows */
		0x01,                                           /* eof */
	};
	static const uint8_t grec[] = {
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* index 5 */
		0x08, 0x00, 0x00, 0x00,                         /* type RENME */
		0x01, 0xa0, 0x00, 0x00,                         /* RENAME | EXTRA | RENAME_LAST */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* 2.3 */
		G_FID(0x01), G_FID(0x02), G_FID(0x03), G_FID(0x04),
		0x01, 0x00, 0x00, 0x00,                         /* xflags uidgid */
		0xe8, 0x03, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00, /* uid 1000 gid 100 */
		0x01, 0x00, 'b',                                /* name "b" */
		0x01, 0x00, 'a',                                /* sname "a" */
		0x00, 0x00,                                     /* no xattr */
	};
	struct wire_changelog_rep r = {.user = "cl1", .xflags = 1, .nusers = 2, .first = 5, .last = 7,
				       .count = 1, .eof = 1};
	struct nacre_changelog_rec rec = {0}, got;
	struct wire_changelog_req *q = calloc(1, sizeof(*q)), *d = calloc(1, sizeof(*d));
	struct wire_cursor c;
	uint8_t both[sizeof(grep_) + sizeof(grec)];

	r.mask = ((1ull << 20) - 1) & ~(1ull << 10) & ~(1ull << 19);
	/* the header alone claims a record the bytes do not hold: refused */
	{
		struct wire_changelog_rep bad;
		CHECK(!DECODE_OK(wire_changelog_rep_decode, grep_, sizeof(grep_), &bad));
	}
	memcpy(both, grep_, sizeof(grep_));
	memcpy(both + sizeof(grep_), grec, sizeof(grec));
	rec.index = 5;
	rec.type = NACRE_CL_RENAME;
	rec.flags = NACRE_CLF_RENAME | NACRE_CLF_EXTRA_FLAGS | NACRE_CLF_RENAME_LAST;
	rec.time.sec = 2;
	rec.time.nsec = 3;
	sample_fid(&rec.tfid, 1);
	sample_fid(&rec.pfid, 2);
	sample_fid(&rec.sfid, 3);
	sample_fid(&rec.spfid, 4);
	rec.xflags = NACRE_CLFE_UIDGID;
	rec.uid = 1000;
	rec.gid = 100;
	rec.name[0] = 'b';
	rec.sname[0] = 'a';
	ENCODE(&c, wire_changelog_rep_encode, &r);
	wire_cl_rec_put(&c, &rec);
	CHECK_EQ(wire_cursor_pos(&c), sizeof(both));
	if (wire_cursor_pos(&c) == sizeof(both))
		CHECK_MEM(c.buf, both, sizeof(both));
	wire_cursor_fini(&c);
	{
		struct wire_changelog_rep h;
		struct wire_cursor rc_;
		wire_cursor_init_read(&rc_, both, sizeof(both));
		wire_changelog_rep_decode(&rc_, &h);
		wire_cl_rec_get(&rc_, &got);
		CHECK(wire_cursor_ok(&rc_) && wire_cursor_left(&rc_) == 0);
		CHECK(memcmp(&h, &r, sizeof(h)) == 0);
		CHECK(memcmp(&got, &rec, sizeof(got)) == 0);
	}
	{ /* an unknown record type is refused */
		uint8_t b[sizeof(grec)];
		memcpy(b, grec, sizeof(b));
		b[8] = 20;
		CHECK(!DECODE_OK(wire_cl_rec_get, b, sizeof(b), &got));
	}
	/* a request round-trips; an unknown flag is refused */
	sample_cred(&q->cred);
	memcpy(q->user, "cl12", 5);
	q->start = 3;
	q->end = 9;
	q->mask = 0x7;
	q->xflags = 1;
	q->flags = WIRE_CL_SET_MASK;
	q->max_bytes = 4096;
	ENCODE(&c, wire_changelog_req_encode, q);
	CHECK(DECODE_OK(wire_changelog_req_decode, c.buf, wire_cursor_pos(&c), d));
	CHECK(memcmp(q, d, sizeof(*q)) == 0);
	wire_cursor_fini(&c);
	q->flags = 4;
	ENCODE(&c, wire_changelog_req_encode, q);
	CHECK(!DECODE_OK(wire_changelog_req_decode, c.buf, wire_cursor_pos(&c), d));
	wire_cursor_fini(&c);
	free(q);
	free(d);
}

/* ---- the opcode table ---- */

/* Every message with a codec, by the name the table uses (the name is the symbol's: a
 * misspelt one does not link), and for replies the test of its golden bytes above. */
typedef void (*any_fn)(void);
struct codec {
	const char *name;
	any_fn decode;
	void (*golden)(void);
};
#define REQ(n) {#n, (any_fn)wire_##n##_decode, NULL}
#define REP(n, test) {#n, (any_fn)wire_##n##_decode, test}
static const struct codec codecs[] = {
	REQ(connect_req), REQ(auth_req), REQ(cred_req), REQ(fid_req), REQ(name_req),
	REQ(setattr_req), REQ(create_req), REQ(rename_req), REQ(link_req), REQ(readdir_req),
	REQ(open_req), REQ(close_req), REQ(xattr_req), REQ(layout_set_req), REQ(target_reg),
	REQ(hsm_request), REQ(hsm_state_set), REQ(hsm_list_req), REQ(hsm_agent_reg),
	REQ(hsm_poll_req), REQ(hsm_progress), REQ(hsm_import_req), REQ(ost_io_req),
	REQ(ost_destroy_req), REQ(lock_req), REQ(fault_set_req), REQ(recovery_done_req),
	REQ(append_req), REQ(cap_req), REQ(key_req), REQ(key_update),
	REQ(notify_req), REQ(groups_set_req), REQ(ost_falloc_req), REQ(ost_seek_req),
	REP(notify_rep, test_notify_rep),
	REQ(nodemap_req), REQ(links_req), REQ(find_req), REQ(changelog_req),
	REP(links_rep, test_links_rep),
	REP(find_rep, test_find_rep),
	REQ(quota_req),
	REQ(batch_req),
	REP(batch_rep, test_batch_msgs),
	REP(quota_rep, test_quota_rep),
	REP(connect_rep, test_connect_open_rep),
	REP(open_rep, test_connect_open_rep),
	REP(attr_rep, test_attr_rep),
	REP(create_rep, test_create_rep),
	REP(path_rep, test_path_rep),
	REP(layout_rep, test_layout_rep),
	REP(statfs_rep, test_statfs_rep),
	REP(xattr_rep, test_xattr_rep),
	REP(xattr_len_rep, test_xattr_rep),
	REP(readdir_rep, test_readdir_rep),
	REP(targets_rep, test_targets_rep),
	REP(hsm_request_rep, test_hsm_request_rep),
	REP(hsm_state, test_hsm_state),
	REP(hsm_action_rep, test_hsm_action_lists),
	REP(hsm_list_rep, test_hsm_action_lists),
	REP(hsm_poll_rep, test_hsm_action_lists),
	REP(hsm_progress_rep, test_hsm_progress_rep),
	REP(lock_rep, test_lock_rep),
	REP(fault_set_rep, test_recovery_msgs),
	REP(recovery_status, test_recovery_msgs),
	REP(append_rep, test_recovery_msgs),
	REP(nodemap_rep, test_nodemap_msgs),
	REP(ost_attr_rep, test_ost_attr_rep),
	REP(ost_seek_rep, test_ost_seek_rep),
	REP(ost_destroy_rep, test_ost_destroy_rep),
	REP(cap_rep, test_cap_msgs),
	REP(fid_grant_rep, test_fid_grant_rep),
	REQ(lease_req),
	REP(lease_rep, test_lease_rep),
	REP(key_list, test_key_list),
	REP(changelog_rep, test_changelog_msgs),
};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

static const struct codec *codec_find(const char *name)
{
	for (size_t i = 0; i < NCODECS; i++)
		if (strcmp(codecs[i].name, name) == 0)
			return &codecs[i];
	return NULL;
}

/* 1 if the fuzz corpus holds a seed for message name (the replay of ctest runs it). */
static int has_seed(const char *name)
{
	static const char *const dirs[] = {"mds_msgs", "ost_msgs"};
	char path[1024];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/seed-%s", NACRE_FUZZ_CORPUS, dirs[i], name);
		if (access(path, R_OK) == 0)
			return 1;
	}
	return 0;
}

static int in(const uint16_t *ops, size_t n, uint16_t op)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i] == op)
			return 1;
	return 0;
}

static void test_op_table(void)
{
	/* Pinned: what a client may resend, and what the MDS answers on its event thread. */
	static const uint16_t idempotent[] = {
		WIRE_OP_PING, WIRE_OP_MDS_STATFS, WIRE_OP_MDS_LOOKUP, WIRE_OP_MDS_GETATTR,
		WIRE_OP_MDS_READLINK, WIRE_OP_MDS_READDIR, WIRE_OP_MDS_GETXATTR,
		WIRE_OP_MDS_LISTXATTR, WIRE_OP_MDS_LAYOUT_GET, WIRE_OP_MDS_TARGETS,
		WIRE_OP_MDS_FID2PATH, WIRE_OP_MDS_TARGET_REGISTER, WIRE_OP_MDS_TARGET_HEARTBEAT,
		WIRE_OP_MDS_SYNC, WIRE_OP_MDS_HSM_REQUEST, WIRE_OP_MDS_HSM_STATE_GET,
		WIRE_OP_MDS_HSM_STATE_SET, WIRE_OP_MDS_HSM_ACTION, WIRE_OP_MDS_HSM_LIST,
		WIRE_OP_OST_WRITE, WIRE_OP_OST_READ, WIRE_OP_OST_PUNCH, WIRE_OP_OST_DESTROY,
		WIRE_OP_OST_GETATTR, WIRE_OP_OST_STATFS, WIRE_OP_OST_SYNC,
		WIRE_OP_OST_DESTROY_BATCH, WIRE_OP_OST_FALLOCATE, WIRE_OP_OST_SEEK,
		WIRE_OP_MDS_LOCK_SET, WIRE_OP_MDS_LOCK_GET,
		WIRE_OP_FAULT_SET, WIRE_OP_MDS_DISCONNECT, WIRE_OP_MDS_RECOVERY_DONE,
		WIRE_OP_MDS_RECOVERY_STATUS, WIRE_OP_MDS_LOCK_WAIT, WIRE_OP_MDS_LOCK_CANCEL,
		WIRE_OP_MDS_CAP_GET,
		WIRE_OP_MDS_KEY_REVOKE, WIRE_OP_MDS_KEY_LIST, WIRE_OP_OST_KEY_UPDATE,
		WIRE_OP_MDS_NOTIFY_WAIT, WIRE_OP_MDS_GROUPS_SET, WIRE_OP_MDS_LINKS, WIRE_OP_MDS_FIND,
		WIRE_OP_MDS_CL_READ, WIRE_OP_MDS_CL_CLEAR, WIRE_OP_MDS_CL_MASK, WIRE_OP_MDS_LEASE,
	};
	static const uint16_t inline_[] = {
		WIRE_OP_MDS_STATFS, WIRE_OP_MDS_LOOKUP, WIRE_OP_MDS_GETATTR, WIRE_OP_MDS_READLINK,
		WIRE_OP_MDS_READDIR, WIRE_OP_MDS_GETXATTR, WIRE_OP_MDS_LISTXATTR,
		WIRE_OP_MDS_LAYOUT_GET, WIRE_OP_MDS_TARGETS, WIRE_OP_MDS_FID2PATH,
		WIRE_OP_MDS_CREATE, WIRE_OP_MDS_MKDIR, WIRE_OP_MDS_MKNOD, WIRE_OP_MDS_SYMLINK,
		WIRE_OP_MDS_UNLINK, WIRE_OP_MDS_RMDIR, WIRE_OP_MDS_RENAME, WIRE_OP_MDS_LINK,
		WIRE_OP_MDS_SETXATTR, WIRE_OP_MDS_REMOVEXATTR, WIRE_OP_MDS_CLOSE,
		WIRE_OP_MDS_SIZE_UPDATE, WIRE_OP_MDS_RECOVERY_STATUS, WIRE_OP_MDS_APPEND,
		WIRE_OP_MDS_CAP_GET,
		WIRE_OP_MDS_NOTIFY_WAIT, WIRE_OP_MDS_GROUPS_SET, WIRE_OP_MDS_LINKS,
		WIRE_OP_MDS_FID_GRANT, WIRE_OP_MDS_BATCH, WIRE_OP_MDS_LEASE,
	};
	/* Pinned: the changes the MDS's reply cache runs exactly once. */
	static const uint16_t cached[] = {
		WIRE_OP_MDS_SETATTR, WIRE_OP_MDS_CREATE, WIRE_OP_MDS_MKDIR, WIRE_OP_MDS_MKNOD,
		WIRE_OP_MDS_UNLINK, WIRE_OP_MDS_RMDIR, WIRE_OP_MDS_RENAME, WIRE_OP_MDS_LINK,
		WIRE_OP_MDS_SYMLINK, WIRE_OP_MDS_CLOSE, WIRE_OP_MDS_SIZE_UPDATE,
		WIRE_OP_MDS_SETXATTR, WIRE_OP_MDS_REMOVEXATTR, WIRE_OP_MDS_LAYOUT_SET,
		WIRE_OP_MDS_HSM_IMPORT, WIRE_OP_MDS_APPEND, WIRE_OP_MDS_FID_GRANT,
		WIRE_OP_MDS_BATCH,
	};
	/* Pinned: the facts the MDS asks of a request (wire.h, WIRE_OPF_*), as the switches in
	 * nodemap_serve.c, space.c, ost_wait.c and recovery.c had them. */
	static const uint16_t change[] = {
		WIRE_OP_MDS_SETATTR, WIRE_OP_MDS_CREATE, WIRE_OP_MDS_MKDIR, WIRE_OP_MDS_MKNOD,
		WIRE_OP_MDS_UNLINK, WIRE_OP_MDS_RMDIR, WIRE_OP_MDS_RENAME, WIRE_OP_MDS_LINK,
		WIRE_OP_MDS_SYMLINK, WIRE_OP_MDS_SETXATTR, WIRE_OP_MDS_REMOVEXATTR,
		WIRE_OP_MDS_LAYOUT_SET, WIRE_OP_MDS_APPEND, WIRE_OP_MDS_SIZE_UPDATE,
		WIRE_OP_MDS_HSM_REQUEST, WIRE_OP_MDS_HSM_STATE_SET, WIRE_OP_MDS_HSM_IMPORT,
		WIRE_OP_MDS_FID_GRANT, WIRE_OP_MDS_BATCH,
	};
	static const uint16_t cred_fid[] = {
		WIRE_OP_MDS_LOOKUP, WIRE_OP_MDS_GETATTR, WIRE_OP_MDS_SETATTR, WIRE_OP_MDS_CREATE,
		WIRE_OP_MDS_MKDIR, WIRE_OP_MDS_MKNOD, WIRE_OP_MDS_UNLINK, WIRE_OP_MDS_RMDIR,
		WIRE_OP_MDS_RENAME, WIRE_OP_MDS_LINK, WIRE_OP_MDS_SYMLINK, WIRE_OP_MDS_READLINK,
		WIRE_OP_MDS_READDIR, WIRE_OP_MDS_FIND, WIRE_OP_MDS_OPEN, WIRE_OP_MDS_GETXATTR,
		WIRE_OP_MDS_SETXATTR, WIRE_OP_MDS_LISTXATTR, WIRE_OP_MDS_REMOVEXATTR,
		WIRE_OP_MDS_LAYOUT_GET, WIRE_OP_MDS_LAYOUT_SET, WIRE_OP_MDS_FID2PATH,
		WIRE_OP_MDS_LINKS, WIRE_OP_MDS_SYNC, WIRE_OP_MDS_HSM_STATE_GET,
		WIRE_OP_MDS_HSM_STATE_SET, WIRE_OP_MDS_HSM_ACTION, WIRE_OP_MDS_HSM_IMPORT,
		WIRE_OP_MDS_LOCK_SET, WIRE_OP_MDS_LOCK_GET, WIRE_OP_MDS_LOCK_WAIT,
		WIRE_OP_MDS_LOCK_CANCEL, WIRE_OP_MDS_LEASE,
	};
	static const uint16_t takes_space[] = {
		WIRE_OP_MDS_CREATE, WIRE_OP_MDS_MKDIR, WIRE_OP_MDS_MKNOD, WIRE_OP_MDS_SYMLINK,
		WIRE_OP_MDS_LINK, WIRE_OP_MDS_SETXATTR, WIRE_OP_MDS_LAYOUT_SET,
		WIRE_OP_MDS_HSM_IMPORT, WIRE_OP_MDS_FID_GRANT,
	};
	static const uint16_t ost_objects[] = {WIRE_OP_MDS_CREATE, WIRE_OP_MDS_LAYOUT_SET,
					       WIRE_OP_MDS_BATCH};
	static const uint16_t recovery_pass[] = {
		WIRE_OP_MDS_TARGET_REGISTER, WIRE_OP_MDS_TARGET_HEARTBEAT, WIRE_OP_MDS_TARGETS,
		WIRE_OP_MDS_STATFS, WIRE_OP_MDS_RECOVERY_STATUS, WIRE_OP_MDS_KEY_ISSUE,
		WIRE_OP_MDS_KEY_REVOKE, WIRE_OP_MDS_KEY_LIST, WIRE_OP_MDS_NOTIFY_WAIT,
		WIRE_OP_MDS_GROUPS_SET, WIRE_OP_MDS_NODEMAP,
	};
	static const uint16_t reopen[] = {WIRE_OP_MDS_OPEN, WIRE_OP_MDS_LOCK_SET,
					  WIRE_OP_MDS_LOCK_WAIT, WIRE_OP_MDS_LEASE};
	static const struct {
		uint32_t flag;
		const uint16_t *ops;
		size_t n;
	} facts[] = {
		{WIRE_OPF_CHANGE, change, sizeof(change) / sizeof(change[0])},
		{WIRE_OPF_CRED_FID, cred_fid, sizeof(cred_fid) / sizeof(cred_fid[0])},
		{WIRE_OPF_TAKES_SPACE, takes_space, sizeof(takes_space) / sizeof(takes_space[0])},
		{WIRE_OPF_OST_OBJECTS, ost_objects, sizeof(ost_objects) / sizeof(ost_objects[0])},
		{WIRE_OPF_RECOVERY_PASS, recovery_pass,
		 sizeof(recovery_pass) / sizeof(recovery_pass[0])},
		{WIRE_OPF_REOPEN, reopen, sizeof(reopen) / sizeof(reopen[0])},
	};
	int rows = 0;

	for (uint32_t op = 0; op < WIRE_OP_MAX_; op++) {
		const struct wire_op_info *o = wire_op_info((uint16_t)op);
		const struct codec *req, *rep;

		if (!o) {
			CHECK_STR(wire_opcode_name((uint16_t)op), "UNKNOWN");
			CHECK(!wire_op_idempotent((uint16_t)op) && !wire_op_inline((uint16_t)op));
			continue;
		}
		rows++;
		CHECK_STR(wire_opcode_name((uint16_t)op), o->name);
		req = codec_find(o->req);
		rep = codec_find(o->rep);
		CHECK(strcmp(o->req, "empty") == 0 || (req && !req->golden));
		/* the table's codecs are the named messages' (NULL for "empty") */
		CHECK((o->req_encode == NULL) == (strcmp(o->req, "empty") == 0));
		CHECK((o->req_decode == NULL) == (o->req_encode == NULL));
		CHECK((o->rep_decode == NULL) == (strcmp(o->rep, "empty") == 0));
		CHECK((o->rep_encode == NULL) == (o->rep_decode == NULL));
		CHECK(strcmp(o->rep, "empty") == 0 || (rep && rep->golden));
		if (strcmp(o->rep, "empty") != 0 && !has_seed(o->rep))
			fprintf(stderr, "no fuzz seed for %s (reply of %s)\n", o->rep, o->name);
		CHECK(strcmp(o->rep, "empty") == 0 || has_seed(o->rep));
		CHECK_EQ(wire_op_idempotent((uint16_t)op),
			 in(idempotent, sizeof(idempotent) / sizeof(idempotent[0]), (uint16_t)op));
		CHECK_EQ(wire_op_inline((uint16_t)op),
			 in(inline_, sizeof(inline_) / sizeof(inline_[0]), (uint16_t)op));
		CHECK_EQ(wire_op_reply_cached((uint16_t)op),
			 in(cached, sizeof(cached) / sizeof(cached[0]), (uint16_t)op));
		/* what runs once through the reply cache is never resent blindly */
		CHECK(!(wire_op_reply_cached((uint16_t)op) && wire_op_idempotent((uint16_t)op)));
		for (size_t f = 0; f < sizeof(facts) / sizeof(facts[0]); f++)
			CHECK_EQ(wire_op_has((uint16_t)op, facts[f].flag),
				 in(facts[f].ops, facts[f].n, (uint16_t)op));
		/* what grows the store changes it; nothing that passes recovery changes */
		CHECK(!wire_op_has((uint16_t)op, WIRE_OPF_TAKES_SPACE) ||
		      wire_op_has((uint16_t)op, WIRE_OPF_CHANGE));
		CHECK(!(wire_op_has((uint16_t)op, WIRE_OPF_RECOVERY_PASS) &&
			wire_op_has((uint16_t)op, WIRE_OPF_CHANGE)));
	}
	CHECK(!wire_op_has(0xffff, 0));
	CHECK_EQ(rows, 78);
	CHECK(wire_op_info(WIRE_OP_MAX_) == NULL && wire_op_info(0xffff) == NULL);
	CHECK(!wire_op_idempotent(0xffff) && !wire_op_inline(0xffff));
	/* xattr_len_rep is GETXATTR's other form (a size of 0), not in the table's column */
	CHECK(has_seed("xattr_len_rep"));
}

int main(void)
{
	test_op_table();
	for (size_t i = 0; i < NCODECS; i++) {
		/* each golden test once, though several messages may share one */
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			seen |= codecs[j].golden == codecs[i].golden;
		if (codecs[i].golden && !seen)
			codecs[i].golden();
	}
	test_cred_req();
	test_lease_req();
	return unit_done();
}
