/* test_mds_changelog.c - changelog records as stored (mds/changelog.c), the changelog
 * tables (mds/db.c), that nothing is written while no user is registered, and the feed of
 * changed FIDs the hook fills for the HSM policy (mds/feed.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "mds/changelog.h"
#include "mds/db.h"
#include "mds/feed.h"
#include "mds/mds.h"
#include "mds/writer.h"
#include "unit.h"

static void sample(struct nacre_changelog_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->index = 42;
	r->type = NACRE_CL_RENAME;
	r->flags = NACRE_CLF_RENAME | NACRE_CLF_RENAME_LAST;
	r->time.sec = 1733320392;
	r->time.nsec = 345678901;
	r->tfid = (struct nacre_fid){0x200000400ull, 7, 0};
	r->pfid = (struct nacre_fid){0x200000007ull, 1, 0};
	r->sfid = (struct nacre_fid){0x200000400ull, 3, 0};
	r->spfid = (struct nacre_fid){0x200000400ull, 2, 0};
	str_copy(r->name, "new name", sizeof(r->name));
	str_copy(r->sname, "old", sizeof(r->sname));
}

static void test_encode_decode(void)
{
	uint8_t buf[WIRE_CL_REC_MAX + 2];
	struct nacre_changelog_rec r, d;

	sample(&r);
	int n = mds_changelog_rec_encode(&r, buf, sizeof(buf));
	CHECK_EQ(n, 2 + WIRE_CL_REC_MIN + 8 + 3);
	CHECK(buf[0] == 1 && buf[1] == 0); /* u16 version 1 first */
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n, &d), 0);
	CHECK(memcmp(&r, &d, sizeof(r)) == 0);
	/* the longest record fits the buffer the MDS uses */
	memset(r.name, 'n', NACRE_NAME_MAX);
	memset(r.sname, 's', NACRE_NAME_MAX);
	memset(r.xattr, 'x', NACRE_NAME_MAX);
	memset(r.jobid, 'j', NACRE_JOBID_MAX);
	r.flags |= NACRE_CLF_JOBID;
	r.xflags = NACRE_CLFE_XATTR;
	n = mds_changelog_rec_encode(&r, buf, sizeof(buf));
	CHECK_EQ(n, 2 + WIRE_CL_REC_MAX);
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n, &d), 0);
	CHECK(memcmp(&r, &d, sizeof(r)) == 0);
	/* a job id is printable ASCII without spaces */
	r.jobid[3] = ' ';
	CHECK_EQ(mds_changelog_rec_encode(&r, buf, sizeof(buf)), (int)(2 + WIRE_CL_REC_MAX));
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n, &d), -EIO);
	r.jobid[3] = 'j';
	r.flags &= ~NACRE_CLF_JOBID;
	r.jobid[0] = '\0';
	/* a name too long does not encode */
	r.name[NACRE_NAME_MAX] = 'n';
	CHECK_EQ(mds_changelog_rec_encode(&r, buf, sizeof(buf)), -EINVAL);
	/* another version, a short or long record, an unknown type: corrupt */
	sample(&r);
	n = mds_changelog_rec_encode(&r, buf, sizeof(buf));
	buf[0] = 2;
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n, &d), -EIO);
	buf[0] = 1;
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n - 1, &d), -EIO);
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n + 1, &d), -EIO);
	buf[2 + 8] = NACRE_CL_LAST;
	CHECK_EQ(mds_changelog_rec_decode(buf, (size_t)n, &d), -EIO);
}

struct collect {
	uint64_t idx[16];
	int n;
};

static int collect(void *arg, uint64_t index, const void *rec, size_t len)
{
	struct collect *c = arg;
	(void)rec;
	(void)len;
	if (c->n < 16)
		c->idx[c->n++] = index;
	return 0;
}

struct add_arg {
	struct mds *m;
	uint64_t put_from, put_to;
	int rc;
};

static int add_op(struct mds_txn *txn, void *arg)
{
	struct add_arg *a = arg;
	struct nacre_changelog_rec r;
	uint8_t buf[WIRE_CL_REC_MAX + 2];

	sample(&r);
	/* no user: the namespace's call writes nothing */
	a->rc = mds_changelog_add(a->m->changelog, txn, &r);
	for (uint64_t i = a->put_from; !a->rc && i <= a->put_to; i++) {
		r.index = i;
		int n = mds_changelog_rec_encode(&r, buf, sizeof(buf));
		a->rc = n < 0 ? n : mds_db_cl_put(txn, i, buf, (size_t)n);
	}
	return a->rc;
}

static int purge_op(struct mds_txn *txn, void *arg)
{
	uint64_t *upto = arg, deleted = 0;
	int rc = mds_db_cl_purge(txn, upto[0], &deleted);
	upto[1] = deleted;
	return rc ? rc : mds_db_cl_next_put(txn, 99);
}

static void test_fidset(void)
{
	struct mds_fidset s = {0};
	struct mds_fidset_ent *e;

	for (uint32_t i = 1; i <= 5000; i++) {
		e = mds_fidset_get(&s, &(struct nacre_fid){0x200000400ull, i, 0});
		CHECK(e != NULL);
		if (!e)
			break;
		CHECK(e->kind == MDS_FS_DEAD);
		mds_fidset_set_kind(&s, e, i % 2 ? MDS_FS_ARCHIVE : MDS_FS_RELEASE);
		e->due = i;
	}
	CHECK_EQ(s.live, 5000);
	CHECK(s.used * 10 <= s.cap * 7);
	/* found again, with its figures, through the growths */
	e = mds_fidset_get(&s, &(struct nacre_fid){0x200000400ull, 77, 0});
	CHECK(e && e->kind == MDS_FS_ARCHIVE && e->due == 77);
	mds_fidset_set_kind(&s, e, MDS_FS_DEAD);
	mds_fidset_set_kind(&s, e, MDS_FS_DEAD);
	CHECK_EQ(s.live, 4999);
	CHECK_EQ(s.used, 5000);
	mds_fidset_free(&s);
	CHECK(s.e == NULL && s.cap == 0 && s.live == 0);
}

static size_t count_live(const struct mds_fidset *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->cap; i++)
		n += s->e[i].used && s->e[i].kind != MDS_FS_DEAD;
	return n;
}

static void test_feed(void)
{
	struct mds_feed *f;
	struct mds_fidset got = {0};
	struct nacre_fid a = {0x200000400ull, 1, 0}, b = {0x200000400ull, 2, 0}, z = {0, 0, 0};

	CHECK_EQ(mds_feed_create(&f), 0);
	mds_feed_note(f, &a); /* disabled: nothing kept */
	CHECK_EQ(mds_feed_take(f, &got), 0);
	CHECK_EQ(got.live, 0);
	mds_feed_enable(f, 3);
	mds_feed_note(f, &a);
	mds_feed_note(f, &a); /* once per file */
	mds_feed_note(f, &b);
	mds_feed_note(f, &z); /* a zero FID is no file */
	mds_feed_note(f, NULL);
	CHECK_EQ(mds_feed_take(f, &got), 0);
	CHECK_EQ(got.live, 2);
	CHECK_EQ(count_live(&got), 2);
	mds_fidset_free(&got);
	CHECK_EQ(mds_feed_take(f, &got), 0); /* taken: empty */
	CHECK_EQ(got.live, 0);
	/* at the bound, a file already in is no more; a new one drops the set, said once */
	for (uint32_t i = 1; i <= 3; i++)
		mds_feed_note(f, &(struct nacre_fid){0x200000400ull, i, 0});
	mds_feed_note(f, &a);
	mds_feed_note(f, &(struct nacre_fid){0x200000400ull, 4, 0});
	mds_feed_note(f, &b);
	CHECK_EQ(mds_feed_take(f, &got), 1);
	CHECK_EQ(got.live, 0);
	CHECK_EQ(mds_feed_take(f, &got), 0);
	mds_feed_note(f, &b); /* collecting again */
	CHECK_EQ(mds_feed_take(f, &got), 0);
	CHECK_EQ(got.live, 1);
	mds_fidset_free(&got);
	mds_feed_destroy(f);
}

struct note_arg {
	struct mds *m;
	struct nacre_fid fid;
};

static int note_op(struct mds_txn *txn, void *arg)
{
	struct note_arg *a = arg;
	return mds_changelog_note(a->m->changelog, txn, NACRE_CL_CLOSE, 0, &a->fid, NULL, NULL,
				  NULL);
}

static void test_tables(const char *dir)
{
	struct mds m;
	char err[512];
	struct mds_txn *txn;
	uint64_t first, last, next;

	memset(&m, 0, sizeof(m));
	str_copy(m.fsname, "testfs", sizeof(m.fsname));
	CHECK_EQ(mds_db_open(dir, "testfs", 1, &m.db, err, sizeof(err)), 0);
	CHECK_EQ(mds_writer_create(m.db, &m.writer), 0);
	CHECK_EQ(mds_changelog_create(&m, 0, &m.changelog), 0);
	CHECK(!mds_changelog_wants(m.changelog, NACRE_CL_CREATE)); /* no user yet */

	struct add_arg a = {&m, 1, 0, 0}; /* no records of its own */
	CHECK_EQ(mds_writer_submit(m.writer, add_op, &a), 0);
	CHECK_EQ(mds_txn_begin_read(m.db, &txn), 0);
	CHECK_EQ(mds_db_cl_bounds(txn, &first, &last), 0);
	CHECK(first == 0 && last == 0); /* nothing was written */
	mds_txn_abort(txn);

	a.put_from = 3;
	a.put_to = 9;
	CHECK_EQ(mds_writer_submit(m.writer, add_op, &a), 0);
	uint64_t upto[2] = {5, 0};
	CHECK_EQ(mds_writer_submit(m.writer, purge_op, upto), 0);
	CHECK_EQ(upto[1], 3u);
	CHECK_EQ(mds_txn_begin_read(m.db, &txn), 0);
	CHECK_EQ(mds_db_cl_bounds(txn, &first, &last), 0);
	CHECK(first == 6 && last == 9);
	struct collect c = {0};
	CHECK_EQ(mds_db_cl_iter(txn, 7, collect, &c), 0);
	CHECK(c.n == 3 && c.idx[0] == 7 && c.idx[2] == 9);
	CHECK_EQ(mds_db_cl_next_get(txn, &next), 0);
	CHECK_EQ(next, 99u);
	mds_txn_abort(txn);

	/* the hook feeds the policy every change, no user registered */
	struct mds_fidset got = {0};
	struct note_arg na = {&m, {0x200000400ull, 9, 0}};
	CHECK_EQ(mds_writer_submit(m.writer, note_op, &na), 0); /* not enabled yet */
	CHECK_EQ(mds_feed_take(mds_changelog_feed(m.changelog), &got), 0);
	CHECK_EQ(got.live, 0);
	mds_feed_enable(mds_changelog_feed(m.changelog), 100);
	uint64_t before = mds_changelog_changes(m.changelog);
	CHECK_EQ(mds_writer_submit(m.writer, note_op, &na), 0);
	CHECK_EQ(mds_changelog_changes(m.changelog), before + 1);
	CHECK_EQ(mds_feed_take(mds_changelog_feed(m.changelog), &got), 0);
	CHECK_EQ(got.live, 1);
	struct mds_fidset_ent *e = mds_fidset_get(&got, &na.fid);
	CHECK(e && e->kind == MDS_FS_PENDING);
	mds_fidset_free(&got);

	/* a restart takes the next index from what is stored: never one handed out */
	mds_changelog_destroy(m.changelog);
	CHECK_EQ(mds_changelog_create(&m, 0, &m.changelog), 0);
	mds_changelog_destroy(m.changelog);
	mds_writer_destroy(m.writer);
	mds_db_close(m.db);
}

int main(void)
{
	char tmpl[] = "/tmp/nacre-test-cl-XXXXXX";
	char *base = mkdtemp(tmpl);
	char dir[300], cmd[400];

	log_init("test", LOG_LVL_ERR);
	if (!base) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/mdt", base);
	test_encode_decode();
	test_fidset();
	test_feed();
	test_tables(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
	return unit_done();
}
