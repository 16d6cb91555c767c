/* test_oss_store.c - OST format/open checks, the object store, and the OSS dispatcher, on
 * real temporary directories. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cap.h"
#include "nacre/nacre_errno.h"
#include "oss/dispatch.h"
#include "oss/store.h"
#include "oss/target.h"
#include "proto/cursor.h"
#include "proto/rpc.h"
#include "proto/wire.h"
#include "unit.h"

static char root[256];

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", root, name);
}

static int exists_at(const char *dir, const char *rel)
{
	char p[1024];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return stat(p, &st) == 0;
}

static void rm_rf(const char *p)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", p);
}

/* Overwrites bytes of the superblock in dir. */
static void poke_sb(const char *dir, off_t off, const void *bytes, size_t n)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, OSS_SB_NAME);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, bytes, n, off) == (ssize_t)n);
	close(fd);
}

static void test_format_and_open(void)
{
	char dir[512], err[1024];
	struct oss_target *t = NULL, *t2 = NULL;

	/* A missing directory without --format is not an OST. */
	path_in(dir, sizeof(dir), "a/ost0");
	CHECK_EQ(oss_target_open(dir, "test1", 0, 0, &t, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "is not a nacre OST (no nacre-ost.sb): run nacre-oss with --format") !=
	      NULL);
	CHECK(t == NULL);

	/* --format creates the directory with parents, the superblock and 256 hash dirs. */
	CHECK(oss_target_open(dir, "test1", 0, 1, &t, err, sizeof(err)) == 0);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(exists_at(dir, OSS_SB_NAME));
	CHECK(exists_at(dir, "O/00") && exists_at(dir, "O/7f") && exists_at(dir, "O/ff"));
	CHECK(!exists_at(dir, OSS_SB_NAME ".tmp"));
	CHECK(strcmp(t->name, "OST0000") == 0);
	CHECK(strcmp(t->fsname, "test1") == 0);
	uint8_t uuid[OSS_UUID_LEN];
	memcpy(uuid, t->uuid, sizeof(uuid));
	char us[37];
	oss_target_uuid_str(t, us);
	CHECK(strlen(us) == 36 && us[14] == '4');

	/* A second process (here: a second open) cannot serve the same directory. */
	CHECK_EQ(oss_target_open(dir, "test1", 0, 0, &t2, err, sizeof(err)), -EBUSY);
	CHECK(strstr(err, "already served by another nacre-oss") != NULL);
	oss_target_close(t);

	/* Reopen, with or without --format: same OST, same uuid. */
	CHECK(oss_target_open(dir, "test1", 0, 0, &t, err, sizeof(err)) == 0);
	CHECK(t && memcmp(t->uuid, uuid, sizeof(uuid)) == 0);
	oss_target_close(t);
	t = NULL;
	CHECK(oss_target_open(dir, "test1", 0, 1, &t, err, sizeof(err)) == 0);
	CHECK(t && memcmp(t->uuid, uuid, sizeof(uuid)) == 0);
	oss_target_close(t);
	t = NULL;

	/* Mismatches name the directory, the found and the expected values. */
	CHECK_EQ(oss_target_open(dir, "other", 0, 0, &t, err, sizeof(err)), -NACRE_EFSNAME);
	CHECK(strstr(err, "belongs to file system test1, not other") != NULL);
	CHECK(strstr(err, dir) != NULL);
	CHECK_EQ(oss_target_open(dir, "test1", 3, 1, &t, err, sizeof(err)), -NACRE_ENOTARGET);
	CHECK(strstr(err, "is OST0000, not OST0003 as --ost says") != NULL);
	CHECK(t == NULL);

	/* A newer format version is refused as such. */
	uint8_t v2[4] = { 2, 0, 0, 0 }, v1[4] = { 1, 0, 0, 0 };
	poke_sb(dir, 8, v2, 4);
	CHECK_EQ(oss_target_open(dir, "test1", 0, 0, &t, err, sizeof(err)), -NACRE_EFORMAT);
	CHECK(strstr(err, "version 2") != NULL);
	poke_sb(dir, 8, v1, 4);
	CHECK(oss_target_open(dir, "test1", 0, 0, &t, err, sizeof(err)) == 0);
	oss_target_close(t);
	t = NULL;

	/* A flipped byte is caught by the checksum; a wrong magic is not a superblock. */
	uint8_t x = 'X';
	poke_sb(dir, 40, &x, 1);
	CHECK_EQ(oss_target_open(dir, "test1", 0, 0, &t, err, sizeof(err)), -NACRE_EBADMAGIC);
	CHECK(strstr(err, "checksum") != NULL);
	poke_sb(dir, 0, "XXXXXXXX", 8);
	CHECK_EQ(oss_target_open(dir, "test1", 0, 1, &t, err, sizeof(err)), -NACRE_EBADMAGIC);
	CHECK(strstr(err, "bad magic") != NULL);
	CHECK(t == NULL);

	/* --format on a non-empty directory without a superblock is refused. */
	char full[512];
	path_in(full, sizeof(full), "full");
	CHECK(mkdir(full, 0755) == 0);
	char f[600];
	snprintf(f, sizeof(f), "%s/precious", full);
	int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(oss_target_open(full, "test1", 1, 1, &t, err, sizeof(err)), -ENOTEMPTY);
	CHECK(strstr(err, "is not empty; refusing to format") != NULL);
	CHECK(!exists_at(full, OSS_SB_NAME));
	CHECK_EQ(oss_target_open(full, "test1", 1, 0, &t, err, sizeof(err)), -ENOENT);

	/* A fresh file system root (only lost+found) is fine to format. */
	char lf[512];
	path_in(lf, sizeof(lf), "mnt");
	CHECK(mkdir(lf, 0755) == 0);
	snprintf(f, sizeof(f), "%s/lost+found", lf);
	CHECK(mkdir(f, 0700) == 0);
	CHECK(oss_target_open(lf, "test1", 10, 1, &t, err, sizeof(err)) == 0);
	CHECK(t && strcmp(t->name, "OST000a") == 0);
	oss_target_close(t);
	t = NULL;

	/* A file is not a directory. */
	snprintf(f, sizeof(f), "%s/precious", full);
	CHECK_EQ(oss_target_open(f, "test1", 0, 1, &t, err, sizeof(err)), -ENOTDIR);
}

static void test_store(void)
{
	char dir[512], err[1024], name[OSS_OBJ_NAME_MAX];
	struct oss_target *t = NULL;
	uint64_t size, blocks;
	size_t got;
	char buf[256];

	path_in(dir, sizeof(dir), "store");
	CHECK(oss_target_open(dir, "test1", 1, 1, &t, err, sizeof(err)) == 0);
	if (!t)
		return;

	struct oss_obj_id id = { .fid = { 0x200000400ull, 1, 0 }, .stripe = 2, .gen = 0 };
	oss_store_obj_name(&id, name);
	CHECK(strcmp(name, "03/200000400-1-0-2-0") == 0);

	/* Missing object: reads empty, getattr 0/0, punch/destroy/sync succeed. */
	CHECK(oss_store_read(t, &id, 0, buf, sizeof(buf), &got) == 0 && got == 0);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0 && size == 0 && blocks == 0);
	CHECK(oss_store_punch(t, &id, 0) == 0);
	CHECK(oss_store_sync(t, &id) == 0);
	CHECK(oss_store_destroy(t, &id) == 0);
	CHECK(!exists_at(dir, "O/03/200000400-1-0-2-0")); /* punch did not create it */

	/* Write creates; read is short at the end. */
	CHECK(oss_store_write(t, &id, 0, "hello", 5) == 0);
	CHECK(exists_at(dir, "O/03/200000400-1-0-2-0"));
	memset(buf, 0, sizeof(buf));
	CHECK(oss_store_read(t, &id, 0, buf, sizeof(buf), &got) == 0 && got == 5);
	CHECK(memcmp(buf, "hello", 5) == 0);
	CHECK(oss_store_read(t, &id, 3, buf, 10, &got) == 0 && got == 2 && !memcmp(buf, "lo", 2));
	CHECK(oss_store_read(t, &id, 5, buf, 10, &got) == 0 && got == 0);
	CHECK(oss_store_read(t, &id, 1000, buf, 10, &got) == 0 && got == 0);

	/* A sparse write past the end; the hole reads as zeroes. */
	CHECK(oss_store_write(t, &id, 1 << 20, "tail", 4) == 0);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0);
	CHECK(size == (1u << 20) + 4);
	CHECK(blocks > 0);
	CHECK(oss_store_read(t, &id, 100, buf, 8, &got) == 0 && got == 8);
	CHECK(buf[0] == 0 && buf[7] == 0);

	/* Punch only shrinks. */
	CHECK(oss_store_punch(t, &id, 3) == 0);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0 && size == 3);
	CHECK(oss_store_punch(t, &id, 1 << 30) == 0);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0 && size == 3);
	CHECK(oss_store_read(t, &id, 0, buf, sizeof(buf), &got) == 0 && got == 3);
	CHECK(oss_store_punch(t, &id, 0) == 0);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0 && size == 0);

	/* Other stripes and generations are other objects. */
	struct oss_obj_id id2 = id;
	id2.gen = 1;
	CHECK(oss_store_write(t, &id2, 0, "gen1", 4) == 0);
	CHECK(oss_store_read(t, &id, 0, buf, sizeof(buf), &got) == 0 && got == 0);

	CHECK(oss_store_sync(t, &id2) == 0);
	CHECK(oss_store_sync(t, NULL) == 0);
	CHECK(oss_store_destroy(t, &id2) == 0);
	CHECK(oss_store_destroy(t, &id2) == 0);
	CHECK(oss_store_getattr(t, &id2, &size, &blocks) == 0 && size == 0);

	/* Zero-length writes do not create; absurd offsets are refused. */
	CHECK(oss_store_write(t, &id2, 0, "", 0) == 0);
	CHECK(oss_store_getattr(t, &id2, &size, &blocks) == 0 && size == 0);
	CHECK(oss_store_write(t, &id2, UINT64_MAX - 1, "ab", 2) == -EFBIG);

	struct nacre_statfs st;
	CHECK(oss_store_statfs(t, &st) == 0);
	CHECK(st.kb_total > 0 && st.kb_free <= st.kb_total && st.bsize > 0 && st.namemax > 0);

	oss_target_close(t);
}

/* ---- dispatcher: requests built with the wire encoders, as a client would ---- */

struct call {
	struct wire_hdr hdr;
	struct rpc_request req;
	struct rpc_reply rep;
	uint8_t body[256];
};

/* The capability key of the tests' OSS, and the client id of their requests. */
static struct cap_key g_capkey;
#define TEST_CLIENT 0x8000000000000123ull

/* A request without a capability gets one with every right, as the MDS would mint it. */
static void auto_cap(struct wire_ost_io_req *m)
{
	if (m->has_cap)
		return;
	m->has_cap = 1;
	m->cap.expiry = (uint64_t)time(NULL) + 60;
	m->cap.rights = CAP_RIGHTS_ALL;
	m->cap.stripe = CAP_STRIPE_ALL;
	cap_mint(&g_capkey, &m->fid, m->layout_gen, m->cap.stripe, m->cap.rights, TEST_CLIENT,
		 m->cap.expiry, m->cap.mac);
}

/* Sends m as it is: with its capability, or none. */
static int dispatch_raw(struct oss_ctx *ctx, struct call *cl, uint16_t op,
			const struct wire_ost_io_req *m, int extra_bytes, int cut_bytes,
			const void *bulk, uint32_t bulk_len)
{
	struct wire_cursor c;
	memset(cl, 0, sizeof(*cl));
	wire_cursor_init_write(&c, cl->body, sizeof(cl->body));
	wire_ost_io_req_encode(&c, m);
	for (int i = 0; i < extra_bytes; i++)
		wire_put_u8(&c, 0);
	cl->hdr.opcode = op;
	cl->req.hdr = &cl->hdr;
	cl->req.body = cl->body;
	cl->req.body_len = (uint32_t)(wire_cursor_pos(&c) - (size_t)cut_bytes);
	cl->req.bulk = bulk;
	cl->req.bulk_len = bulk_len;
	cl->req.peer = "127.0.0.1:1";
	cl->req.peer_name = "test";
	cl->req.client_id = TEST_CLIENT;
	wire_cursor_init_dyn(&cl->rep.body, WIRE_BODY_MAX);
	return oss_dispatch(ctx, &cl->req, &cl->rep);
}

static int dispatch(struct oss_ctx *ctx, struct call *cl, uint16_t op,
		    const struct wire_ost_io_req *m, int extra_bytes, int cut_bytes,
		    const void *bulk, uint32_t bulk_len)
{
	struct wire_ost_io_req mc = *m;
	auto_cap(&mc);
	return dispatch_raw(ctx, cl, op, &mc, extra_bytes, cut_bytes, bulk, bulk_len);
}

static void call_fini(struct call *cl)
{
	wire_cursor_fini(&cl->rep.body);
	free(cl->rep.bulk);
	cl->rep.bulk = NULL;
}

static void test_dispatch(void)
{
	char dir[512], err[1024];
	struct oss_target *t = NULL;
	struct call cl;

	path_in(dir, sizeof(dir), "disp");
	CHECK(oss_target_open(dir, "test1", 5, 1, &t, err, sizeof(err)) == 0);
	if (!t)
		return;
	struct oss_target *tv[1] = { t };
	struct oss_ctx ctx = { .targets = tv, .ntargets = 1, .capkey = g_capkey };
	struct wire_ost_io_req m = { .ost_idx = 5, .fid = { 0x200000400ull, 7, 0 },
				     .stripe_idx = 0, .layout_gen = 0, .offset = 4096,
				     .len = 6 };

	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &m, 0, 0, "abcdef", 6), 0);
	call_fini(&cl);
	CHECK(atomic_load(&t->stats.write_bytes) == 6);

	m.offset = 4094;
	m.len = 100;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_READ, &m, 0, 0, NULL, 0), 0);
	CHECK(cl.rep.bulk_len == 8 && cl.rep.bulk && !memcmp(cl.rep.bulk, "\0\0abcdef", 8));
	call_fini(&cl);

	/* Missing object: no bulk, status 0. */
	struct wire_ost_io_req miss = m;
	miss.fid.oid = 99;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_READ, &miss, 0, 0, NULL, 0), 0);
	CHECK(cl.rep.bulk_len == 0 && cl.rep.bulk == NULL);
	call_fini(&cl);

	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_GETATTR, &m, 0, 0, NULL, 0), 0);
	struct wire_cursor rc;
	struct wire_ost_attr_rep a;
	wire_cursor_init_read(&rc, cl.rep.body.buf, wire_cursor_pos(&cl.rep.body));
	wire_ost_attr_rep_decode(&rc, &a);
	CHECK(wire_cursor_ok(&rc) && wire_cursor_left(&rc) == 0 && a.size == 4102);
	call_fini(&cl);

	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_STATFS, &m, 0, 0, NULL, 0), 0);
	struct nacre_statfs st;
	wire_cursor_init_read(&rc, cl.rep.body.buf, wire_cursor_pos(&cl.rep.body));
	wire_statfs_get(&rc, &st);
	CHECK(wire_cursor_ok(&rc) && wire_cursor_left(&rc) == 0 && st.kb_total > 0);
	call_fini(&cl);

	m.offset = 4097;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_PUNCH, &m, 0, 0, NULL, 0), 0);
	call_fini(&cl);
	m.len = 0;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_SYNC, &m, 0, 0, NULL, 0), 0);
	call_fini(&cl);
	struct wire_ost_io_req all = { .ost_idx = 5 };
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_SYNC, &all, 0, 0, NULL, 0), 0);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_GETATTR, &m, 0, 0, NULL, 0), 0);
	wire_cursor_init_read(&rc, cl.rep.body.buf, wire_cursor_pos(&cl.rep.body));
	wire_ost_attr_rep_decode(&rc, &a);
	CHECK(a.size == 4097);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_DESTROY, &m, 0, 0, NULL, 0), 0);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_DESTROY, &m, 0, 0, NULL, 0), 0);
	call_fini(&cl);

	/* Violations: answered with an error, never a crash. */
	m.offset = 0;
	m.len = 4;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &m, 1, 0, "abcd", 4), -EPROTO);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &m, 0, 1, "abcd", 4), -EPROTO);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &m, 0, 0, "abc", 3), -EPROTO);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_READ, &m, 0, 0, "abcd", 4), -EPROTO);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_MDS_LOOKUP, &m, 0, 0, NULL, 0), -EOPNOTSUPP);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, 127, &m, 0, 0, NULL, 0), -EOPNOTSUPP);
	call_fini(&cl);
	struct wire_ost_io_req bad = m;
	bad.ost_idx = 6;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &bad, 0, 0, "abcd", 4), -NACRE_ENOTARGET);
	call_fini(&cl);
	bad = m;
	bad.len = WIRE_BULK_MAX + 1;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_READ, &bad, 0, 0, NULL, 0), -EINVAL);
	CHECK(cl.rep.bulk == NULL);
	call_fini(&cl);
	bad = m;
	bad.offset = UINT64_MAX - 1; /* the decoder or the dispatcher refuses it */
	int r = dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &bad, 0, 0, "abcd", 4);
	CHECK(r == -EPROTO || r == -EFBIG);
	call_fini(&cl);
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_STATFS, &m, 0, 30, NULL, 0), -EPROTO);
	call_fini(&cl);

	/* A file system error passes through as the status (EFBIG via RLIMIT_FSIZE stands in
	 * for ENOSPC, which needs a full file system). */
	struct rlimit old, lim = { .rlim_cur = 65536, .rlim_max = RLIM_INFINITY };
	signal(SIGXFSZ, SIG_IGN);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	lim.rlim_max = old.rlim_max;
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
	m.offset = 1 << 20;
	CHECK_EQ(dispatch(&ctx, &cl, WIRE_OP_OST_WRITE, &m, 0, 0, "abcd", 4), -EFBIG);
	call_fini(&cl);
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	CHECK(atomic_load(&t->stats.errors[0]) >= 1);
	CHECK(atomic_load(&t->stats.ops[WIRE_OP_OST_READ - WIRE_OP_OST_WRITE]) >= 2);

	oss_target_close(t);
}

/* OST_DESTROY_BATCH: sends objs[0..n) to OST ost; the request body lives in cl->body. */
static int destroy_batch(struct oss_ctx *ctx, struct call *cl, uint32_t ost,
			 const struct wire_ost_obj *objs, uint32_t n)
{
	struct wire_ost_destroy_req m = { .ost_idx = ost, .flags = WIRE_OST_DESTROY_CAP,
					  .count = n };
	struct wire_cursor c, list;
	uint8_t lbuf[256];
	wire_cursor_init_write(&list, lbuf, sizeof(lbuf));
	for (uint32_t i = 0; i < n; i++)
		wire_ost_obj_put(&list, &objs[i]);
	m.cap.expiry = (uint64_t)time(NULL) + 60;
	m.cap.rights = CAP_DESTROY;
	m.cap.stripe = CAP_STRIPE_ALL;
	cap_mint_list(&g_capkey, ost, lbuf, wire_cursor_pos(&list), CAP_DESTROY, TEST_CLIENT,
		      m.cap.expiry, m.cap.mac);
	memset(cl, 0, sizeof(*cl));
	wire_cursor_init_write(&c, cl->body, sizeof(cl->body));
	wire_ost_destroy_req_encode(&c, &m);
	wire_put_bytes(&c, lbuf, wire_cursor_pos(&list));
	CHECK(wire_cursor_ok(&c));
	cl->hdr.opcode = WIRE_OP_OST_DESTROY_BATCH;
	cl->req.hdr = &cl->hdr;
	cl->req.body = cl->body;
	cl->req.body_len = (uint32_t)wire_cursor_pos(&c);
	cl->req.peer = "127.0.0.1:1";
	cl->req.peer_name = "test";
	cl->req.client_id = TEST_CLIENT;
	wire_cursor_init_dyn(&cl->rep.body, WIRE_BODY_MAX);
	return oss_dispatch(ctx, &cl->req, &cl->rep);
}

static int obj_exists(const struct oss_target *t, const struct wire_ost_obj *o)
{
	char name[OSS_OBJ_NAME_MAX];
	struct stat st;
	struct oss_obj_id id = { .fid = o->fid, .stripe = o->stripe_idx, .gen = o->layout_gen };
	oss_store_obj_name(&id, name);
	return fstatat(t->obj_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_destroy_batch(void)
{
	char dir[512], err[1024];
	struct oss_target *t = NULL;
	struct call cl;

	path_in(dir, sizeof(dir), "batch");
	CHECK(oss_target_open(dir, "test1", 2, 1, &t, err, sizeof(err)) == 0);
	if (!t)
		return;
	struct oss_target *tv[1] = { t };
	struct oss_ctx ctx = { .targets = tv, .ntargets = 1, .capkey = g_capkey };
	struct wire_ost_obj objs[5];
	for (uint32_t i = 0; i < 5; i++) {
		objs[i] = (struct wire_ost_obj){ .fid = { 0x200000400ull, 10 + i, 0 },
						 .stripe_idx = i, .layout_gen = 1 };
		struct oss_obj_id id = { .fid = objs[i].fid, .stripe = i, .gen = 1 };
		if (i < 4) /* the last one never existed */
			CHECK_EQ(oss_store_write(t, &id, 0, "x", 1), 0);
	}
	const unsigned slot = WIRE_OP_OST_DESTROY_BATCH - WIRE_OP_OST_WRITE;

	/* a bad stripe index in the second object refuses everything: the first stays */
	objs[1].stripe_idx = NACRE_MAX_STRIPES;
	CHECK_EQ(destroy_batch(&ctx, &cl, 2, objs, 2), -EPROTO);
	call_fini(&cl);
	objs[1].stripe_idx = 1;
	CHECK(obj_exists(t, &objs[0]));
	CHECK_EQ(destroy_batch(&ctx, &cl, 3, objs, 2), -NACRE_ENOTARGET);
	call_fini(&cl);
	ctx.no_destroy_batch = 1; /* as an OSS that predates it */
	CHECK_EQ(destroy_batch(&ctx, &cl, 2, objs, 2), -EOPNOTSUPP);
	CHECK_EQ(wire_cursor_pos(&cl.rep.body), 0);
	call_fini(&cl);
	ctx.no_destroy_batch = 0;
	CHECK(obj_exists(t, &objs[0]));

	/* object 2 cannot be removed (a directory stands at its name): only it is listed */
	char name[OSS_OBJ_NAME_MAX];
	struct oss_obj_id id2 = { .fid = objs[2].fid, .stripe = 2, .gen = 1 };
	oss_store_obj_name(&id2, name);
	CHECK_EQ(oss_store_destroy(t, &id2), 0); /* through the store: it forgets cached fds */
	CHECK(mkdirat(t->obj_fd, name, 0755) == 0);
	CHECK_EQ(destroy_batch(&ctx, &cl, 2, objs, 5), -EISDIR);
	struct wire_cursor rc;
	struct wire_ost_destroy_rep r;
	struct wire_ost_destroy_fail f = { 0 };
	wire_cursor_init_read(&rc, cl.rep.body.buf, wire_cursor_pos(&cl.rep.body));
	wire_ost_destroy_rep_decode(&rc, &r);
	if (r.nfailed == 1)
		wire_ost_destroy_fail_get(&rc, &f);
	CHECK(wire_cursor_ok(&rc) && wire_cursor_left(&rc) == 0);
	CHECK(r.nfailed == 1 && f.index == 2 && f.status == -EISDIR);
	call_fini(&cl);
	for (uint32_t i = 0; i < 5; i++)
		CHECK(obj_exists(t, &objs[i]) == (i == 2));
	CHECK(atomic_load(&t->stats.errors[slot]) == 1);

	/* once it can go, everything is gone (the missing ones are fine) */
	CHECK(unlinkat(t->obj_fd, name, AT_REMOVEDIR) == 0);
	CHECK_EQ(destroy_batch(&ctx, &cl, 2, objs, 5), 0);
	wire_cursor_init_read(&rc, cl.rep.body.buf, wire_cursor_pos(&cl.rep.body));
	wire_ost_destroy_rep_decode(&rc, &r);
	CHECK(wire_cursor_ok(&rc) && wire_cursor_left(&rc) == 0 && r.nfailed == 0);
	call_fini(&cl);
	for (uint32_t i = 0; i < 5; i++)
		CHECK(!obj_exists(t, &objs[i]));
	CHECK(atomic_load(&t->stats.ops[slot]) == 2); /* the refused ones reached no OST */
	CHECK(atomic_load(&t->stats.errors[slot]) == 1);

	oss_target_close(t);
}

/* The OSS serves an object only with a capability minted for it, its client and the
 * opcode's right, before expiry. */
static void test_capabilities(void)
{
	char dir[512], err[1024];
	struct oss_target *t = NULL;
	struct call cl;

	path_in(dir, sizeof(dir), "caps");
	CHECK(oss_target_open(dir, "test1", 4, 1, &t, err, sizeof(err)) == 0);
	if (!t)
		return;
	struct oss_target *tv[1] = { t };
	struct oss_ctx ctx = { .targets = tv, .ntargets = 1, .capkey = g_capkey };
	struct wire_ost_io_req m = { .ost_idx = 4, .fid = { 0x200000400ull, 7, 0 },
				     .stripe_idx = 1, .layout_gen = 2, .offset = 0, .len = 4 };
	struct wire_ost_io_req w = m;

	/* no capability at all */
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_WRITE, &m, 0, 0, "abcd", 4), -EACCES);
	call_fini(&cl);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &m, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	/* a good one writes */
	auto_cap(&w);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_WRITE, &w, 0, 0, "abcd", 4), 0);
	call_fini(&cl);

	/* read only: reads, does not write, punch or destroy */
	struct wire_ost_io_req r = m;
	r.has_cap = 1;
	r.cap.expiry = (uint64_t)time(NULL) + 60;
	r.cap.rights = CAP_READ;
	r.cap.stripe = CAP_STRIPE_ALL;
	cap_mint(&g_capkey, &r.fid, r.layout_gen, r.cap.stripe, r.cap.rights, TEST_CLIENT,
		 r.cap.expiry, r.cap.mac);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &r, 0, 0, NULL, 0), 0);
	CHECK(cl.rep.bulk_len == 4 && cl.rep.bulk && !memcmp(cl.rep.bulk, "abcd", 4));
	call_fini(&cl);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_GETATTR, &r, 0, 0, NULL, 0), 0);
	call_fini(&cl);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_WRITE, &r, 0, 0, "abcd", 4), -EACCES);
	call_fini(&cl);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_PUNCH, &r, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_DESTROY, &r, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	/* rights raised by hand break the MAC */
	struct wire_ost_io_req x = r;
	x.cap.rights = CAP_READ | CAP_WRITE;
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_WRITE, &x, 0, 0, "abcd", 4), -EACCES);
	call_fini(&cl);
	/* another file, another generation, another client, a later expiry: refused */
	x = r;
	x.fid.oid = 8;
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	x = r;
	x.layout_gen = 3;
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	x = r;
	x.cap.expiry += 3600;
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	memset(&cl, 0, sizeof(cl));
	{
		struct wire_cursor c;
		wire_cursor_init_write(&c, cl.body, sizeof(cl.body));
		wire_ost_io_req_encode(&c, &r);
		cl.hdr.opcode = WIRE_OP_OST_READ;
		cl.req.hdr = &cl.hdr;
		cl.req.body = cl.body;
		cl.req.body_len = (uint32_t)wire_cursor_pos(&c);
		cl.req.peer = "127.0.0.1:2";
		cl.req.client_id = TEST_CLIENT + 1; /* someone else's connection */
		wire_cursor_init_dyn(&cl.rep.body, WIRE_BODY_MAX);
		CHECK_EQ(oss_dispatch(&ctx, &cl.req, &cl.rep), -EACCES);
		call_fini(&cl);
	}
	/* a capability for stripe 0 does not open stripe 1 */
	x = m;
	x.has_cap = 1;
	x.cap.expiry = (uint64_t)time(NULL) + 60;
	x.cap.rights = CAP_READ;
	x.cap.stripe = 0;
	cap_mint(&g_capkey, &x.fid, x.layout_gen, 0, CAP_READ, TEST_CLIENT, x.cap.expiry, x.cap.mac);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	x.stripe_idx = 0;
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), 0);
	call_fini(&cl);
	/* expired */
	x = m;
	x.has_cap = 1;
	x.cap.expiry = (uint64_t)time(NULL) - 5;
	x.cap.rights = CAP_READ;
	x.cap.stripe = CAP_STRIPE_ALL;
	cap_mint(&g_capkey, &x.fid, x.layout_gen, x.cap.stripe, CAP_READ, TEST_CLIENT,
		 x.cap.expiry, x.cap.mac);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	/* a key derived from another cluster key */
	struct nacre_key other = { .present = 1, .len = 32 };
	struct cap_key ok2;
	memset(other.bytes, 0x43, other.len);
	CHECK_EQ(cap_key_derive(&other, &ok2), 0);
	x = m;
	x.has_cap = 1;
	x.cap.expiry = (uint64_t)time(NULL) + 60;
	x.cap.rights = CAP_READ;
	x.cap.stripe = CAP_STRIPE_ALL;
	cap_mint(&ok2, &x.fid, x.layout_gen, x.cap.stripe, CAP_READ, TEST_CLIENT, x.cap.expiry,
		 x.cap.mac);
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_READ, &x, 0, 0, NULL, 0), -EACCES);
	call_fini(&cl);
	cap_key_fini(&ok2);
	/* STATFS needs none */
	CHECK_EQ(dispatch_raw(&ctx, &cl, WIRE_OP_OST_STATFS, &m, 0, 0, NULL, 0), 0);
	call_fini(&cl);

	/* a destroy batch: its list capability covers exactly its objects */
	struct wire_ost_obj objs[2] = {
		{ .fid = m.fid, .stripe_idx = 1, .layout_gen = 2 },
		{ .fid = { 0x200000400ull, 9, 0 }, .stripe_idx = 0, .layout_gen = 0 },
	};
	struct wire_ost_destroy_req d = { .ost_idx = 4, .flags = 0, .count = 1 };
	struct wire_cursor c;
	memset(&cl, 0, sizeof(cl));
	wire_cursor_init_write(&c, cl.body, sizeof(cl.body));
	wire_ost_destroy_req_encode(&c, &d);
	wire_ost_obj_put(&c, &objs[0]);
	cl.hdr.opcode = WIRE_OP_OST_DESTROY_BATCH;
	cl.req.hdr = &cl.hdr;
	cl.req.body = cl.body;
	cl.req.body_len = (uint32_t)wire_cursor_pos(&c);
	cl.req.peer = "127.0.0.1:1";
	cl.req.client_id = TEST_CLIENT;
	wire_cursor_init_dyn(&cl.rep.body, WIRE_BODY_MAX);
	CHECK_EQ(oss_dispatch(&ctx, &cl.req, &cl.rep), -EACCES); /* none */
	call_fini(&cl);
	/* minted over object 1, sent with object 0 */
	{
		uint8_t lbuf[64];
		struct wire_cursor l;
		wire_cursor_init_write(&l, lbuf, sizeof(lbuf));
		wire_ost_obj_put(&l, &objs[1]);
		d.flags = WIRE_OST_DESTROY_CAP;
		d.cap.expiry = (uint64_t)time(NULL) + 60;
		d.cap.rights = CAP_DESTROY;
		d.cap.stripe = CAP_STRIPE_ALL;
		cap_mint_list(&g_capkey, 4, lbuf, wire_cursor_pos(&l), CAP_DESTROY, TEST_CLIENT,
			      d.cap.expiry, d.cap.mac);
		memset(&cl, 0, sizeof(cl));
		wire_cursor_init_write(&c, cl.body, sizeof(cl.body));
		wire_ost_destroy_req_encode(&c, &d);
		wire_ost_obj_put(&c, &objs[0]);
		cl.hdr.opcode = WIRE_OP_OST_DESTROY_BATCH;
		cl.req.hdr = &cl.hdr;
		cl.req.body = cl.body;
		cl.req.body_len = (uint32_t)wire_cursor_pos(&c);
		cl.req.peer = "127.0.0.1:1";
		cl.req.client_id = TEST_CLIENT;
		wire_cursor_init_dyn(&cl.rep.body, WIRE_BODY_MAX);
		CHECK_EQ(oss_dispatch(&ctx, &cl.req, &cl.rep), -EACCES);
		call_fini(&cl);
	}
	CHECK(obj_exists(t, &objs[0])); /* refused batches removed nothing */
	CHECK_EQ(destroy_batch(&ctx, &cl, 4, objs, 1), 0); /* with the right one */
	call_fini(&cl);
	CHECK(!obj_exists(t, &objs[0]));
	oss_target_close(t);
}

/* fallocate and SEEK_DATA/SEEK_HOLE of one object (the OSS's half of sparse files). */
static void test_space(void)
{
	char dir[512], err[1024];
	struct oss_target *t = NULL;
	uint64_t size, blocks, at;
	static char data[64 * 1024];

	path_in(dir, sizeof(dir), "space");
	CHECK(oss_target_open(dir, "test-space", 3, 1, &t, err, sizeof(err)) == 0);
	if (!t)
		return;
	struct oss_obj_id id = { .fid = { 0x200000400ull, 9, 0 }, .stripe = 1, .gen = 0 };

	/* A missing object is all hole: SEEK_HOLE answers the offset, SEEK_DATA ENXIO; a
	 * punch of it succeeds without making it. */
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_HOLE, 4096, &at) == 0 && at == 4096);
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_DATA, 0, &at) == -ENXIO);
	CHECK(oss_store_fallocate(t, &id, WIRE_FALLOC_KEEP_SIZE | WIRE_FALLOC_PUNCH_HOLE, 0,
				  4096) == 0);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0 && size == 0 && blocks == 0);

	/* 64 KiB of data at 1 MiB: data there, holes around it and after the end. */
	memset(data, 'd', sizeof(data));
	CHECK(oss_store_write(t, &id, 1u << 20, data, sizeof(data)) == 0);
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_DATA, 0, &at) == 0 && at == 1u << 20);
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_HOLE, 0, &at) == 0 && at == 0);
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_HOLE, 1u << 20, &at) == 0 &&
	      at == (1u << 20) + sizeof(data));
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_DATA, (1u << 20) + sizeof(data), &at) == -ENXIO);
	CHECK(oss_store_seek(t, &id, WIRE_SEEK_HOLE, 5u << 20, &at) == 0 && at == 5u << 20);
	CHECK(oss_store_getattr(t, &id, &size, &blocks) == 0 && blocks * 512 < (1u << 20));

	/* mode 0 allocates and grows the object; KEEP_SIZE allocates only; a punch frees */
	struct oss_obj_id id2 = id;
	id2.stripe = 2;
	if (oss_store_fallocate(t, &id2, 0, 0, 2u << 20) == -EOPNOTSUPP)
		goto out; /* a file system without fallocate under the test's /tmp */
	CHECK(oss_store_getattr(t, &id2, &size, &blocks) == 0);
	CHECK(size == 2u << 20 && blocks * 512 >= 2u << 20);
	CHECK(oss_store_fallocate(t, &id2, WIRE_FALLOC_KEEP_SIZE, 2u << 20, 1u << 20) == 0);
	CHECK(oss_store_getattr(t, &id2, &size, &blocks) == 0);
	CHECK(size == 2u << 20 && blocks * 512 >= 3u << 20);
	CHECK(oss_store_fallocate(t, &id2, WIRE_FALLOC_KEEP_SIZE | WIRE_FALLOC_PUNCH_HOLE, 0,
				  3u << 20) == 0);
	CHECK(oss_store_getattr(t, &id2, &size, &blocks) == 0);
	/* what was allocated past the end may stay (ext4 punches up to the size only) */
	CHECK(size == 2u << 20 && blocks * 512 <= 1u << 20);
	/* zero range without KEEP_SIZE grows it, and reads as zeros */
	CHECK(oss_store_write(t, &id2, 0, data, sizeof(data)) == 0);
	CHECK(oss_store_fallocate(t, &id2, WIRE_FALLOC_ZERO_RANGE, 4096, 4u << 20) == 0);
	CHECK(oss_store_getattr(t, &id2, &size, &blocks) == 0 && size == (4u << 20) + 4096);
	{
		char buf[8192];
		size_t got;
		CHECK(oss_store_read(t, &id2, 0, buf, sizeof(buf), &got) == 0 && got == sizeof(buf));
		CHECK(buf[0] == 'd' && buf[4095] == 'd' && buf[4096] == 0 && buf[8191] == 0);
	}
out:
	oss_target_close(t);
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/nacre-test-oss-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	struct nacre_key k = { .present = 1, .len = 32 };
	memset(k.bytes, 0x42, k.len);
	CHECK_EQ(cap_key_derive(&k, &g_capkey), 0);
	test_format_and_open();
	test_store();
	test_dispatch();
	test_destroy_batch();
	test_capabilities();
	test_space();
	cap_key_fini(&g_capkey);
	rm_rf(root);
	return unit_done();
}
