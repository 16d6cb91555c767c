/* test_client_io.c - libnacre against a fake MDS and two fake OSSes built on the real rpc
 * layer: mount errors, subdirectory resolution, striped writes coalesced into 4 MiB RPCs
 * sent in parallel, reads with holes and short objects, fsync and close size reports
 * (write-through mount); then write-behind (small writes coalesced, read-your-writes,
 * background errors at the next write, fsync and close, truncate over dirty data) and
 * readahead (parallel RPCs ahead of a stream on every OST, reordered reads still a stream,
 * none for random reads, local writes seen); and a FIND page (nacre_find_page), its request
 * byte for byte and its typed entries. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/key.h"
#include "nacre/nacre.h"
#include "proto/rpc.h"
#include "proto/wire.h"

static int passed, failed;

#define CHECK(cond, ...)                                                                    \
	do {                                                                                \
		if (cond) {                                                                 \
			passed++;                                                           \
		} else {                                                                    \
			failed++;                                                           \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
			fprintf(stderr, __VA_ARGS__);                                       \
			fprintf(stderr, "\n");                                              \
		}                                                                           \
	} while (0)

#define MIB (1024u * 1024u)
#define NSTRIPES 4
#define OBJ_MAX (64u * MIB)

static const struct nacre_fid sub_fid = {NACRE_FIRST_SEQ, 1, 0};
static const struct nacre_fid file_fid = {NACRE_FIRST_SEQ, 2, 0};
static const struct nacre_fid plain_fid = {NACRE_FIRST_SEQ, 3, 0};

/* ---- the fake cluster ---- */

struct fake {
	pthread_mutex_t lock;
	/* MDS */
	uint64_t size;
	int opens, closes, size_updates, md_syncs;
	uint64_t last_reported;
	/* OSS: object per stripe */
	uint8_t *obj[NSTRIPES];
	uint64_t obj_len[NSTRIPES];
	int writes, reads, syncs, bad_requests;
	uint64_t write_max, read_max;
	int writes_at_setattr; /* F.writes when the last SETATTR arrived */
	int inflight, inflight_max;
	int inflight_stripe[NSTRIPES]; /* RPCs in flight per stripe (= OST index) */
	int stripes_busy_max;          /* most stripes with an RPC in flight at once */
	int fail_write; /* status OST writes answer, 0 = succeed */
	int delay_us;   /* how long an OST RPC takes */
	char oss_addr[2][NACRE_ADDR_MAX + 1];
	/* FIND: the last request's body as sent, and how to answer */
	uint8_t *find_req;
	size_t find_req_len;
	int finds, find_done, find_bad;
};

static struct fake F;

static struct nacre_layout file_layout(void)
{
	struct nacre_layout l;

	memset(&l, 0, sizeof(l));
	l.pattern = NACRE_PATTERN_RAID0;
	l.stripe_size = MIB;
	l.stripe_count = NSTRIPES;
	l.stripe_offset = 0;
	l.nosts = NSTRIPES;
	for (uint32_t i = 0; i < NSTRIPES; i++)
		l.ost_idx[i] = i;
	return l;
}

static void fake_attr(const struct nacre_fid *fid, struct nacre_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->fid = *fid;
	a->nlink = 1;
	if (nacre_fid_eq(fid, &file_fid) || nacre_fid_eq(fid, &plain_fid)) {
		a->mode = S_IFREG | 0644;
		a->size = nacre_fid_eq(fid, &file_fid) ? F.size : 0;
		a->blksize = MIB;
	} else {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	}
}

/* A FIND page of three entries: a striped file, a symlink, a directory not scanned; with
 * find_bad, a count the body cannot hold. */
static void fake_find_page(struct wire_cursor *out)
{
	static struct wire_find_ent e[3];
	struct wire_find_rep h;

	memset(&h, 0, sizeof(h));
	h.count = F.find_bad ? 9 : 3;
	h.done = (uint8_t)F.find_done;
	h.cur.state = F.find_done ? WIRE_FIND_CUR_BEGIN : WIRE_FIND_CUR_RESUME;
	if (!F.find_done)
		strcpy(h.cur.path, "a/b");
	wire_find_rep_encode(out, &h);
	if (F.find_bad)
		return;
	memset(e, 0, sizeof(e));
	strcpy(e[0].path, "x");
	fake_attr(&file_fid, &e[0].attr);
	e[0].has_layout = 1;
	e[0].layout = file_layout();
	strcpy(e[1].path, "a/l");
	fake_attr(&plain_fid, &e[1].attr);
	e[1].attr.mode = S_IFLNK | 0777;
	strcpy(e[1].target, "../x");
	strcpy(e[2].path, "a");
	e[2].err = -EACCES;
	fake_attr(&sub_fid, &e[2].attr);
	for (int i = 0; i < 3; i++)
		wire_find_ent_put(out, &e[i]);
}

static int mds_handler(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_cursor c;
	struct nacre_attr a;
	int rc = 0;

	(void)arg;
	wire_cursor_init_read(&c, req->body, req->body_len);
	pthread_mutex_lock(&F.lock);
	switch (req->hdr->opcode) {
	case WIRE_OP_MDS_GETATTR: {
		struct wire_fid_req m;
		wire_fid_req_decode(&c, &m);
		fake_attr(&m.fid, &a);
		wire_attr_put(&rep->body, &a);
		break;
	}
	case WIRE_OP_MDS_LOOKUP: {
		struct wire_name_req m;
		struct nacre_fid root = {NACRE_ROOT_SEQ, NACRE_ROOT_OID, 0};
		wire_name_req_decode(&c, &m);
		if (nacre_fid_eq(&m.parent, &root) && strcmp(m.name, "sub") == 0)
			fake_attr(&sub_fid, &a);
		else if (nacre_fid_eq(&m.parent, &root) && strcmp(m.name, "plain") == 0)
			fake_attr(&plain_fid, &a);
		else if (nacre_fid_eq(&m.parent, &sub_fid) && strcmp(m.name, "file") == 0)
			fake_attr(&file_fid, &a);
		else {
			rc = -ENOENT;
			break;
		}
		wire_attr_put(&rep->body, &a);
		break;
	}
	case WIRE_OP_MDS_TARGETS: {
		struct nacre_target t;
		wire_put_u32(&rep->body, 1 + NSTRIPES);
		memset(&t, 0, sizeof(t));
		t.type = NACRE_TGT_MDT;
		t.up = 1;
		snprintf(t.addr, sizeof(t.addr), "127.0.0.1:1");
		wire_target_put(&rep->body, &t);
		for (uint32_t i = 0; i < NSTRIPES; i++) {
			t.type = NACRE_TGT_OST;
			t.index = i;
			/* OSTs 0 and 2 on the first OSS, 1 and 3 on the second. */
			snprintf(t.addr, sizeof(t.addr), "%s", F.oss_addr[i % 2]);
			wire_target_put(&rep->body, &t);
		}
		break;
	}
	case WIRE_OP_MDS_OPEN: {
		struct wire_open_req m;
		struct wire_open_rep r;
		memset(&r, 0, sizeof(r)); /* no capability: an MDS without them */
		wire_open_req_decode(&c, &m);
		if (m.flags & O_TRUNC)
			F.size = 0;
		fake_attr(&m.fid, &r.attr);
		r.layout = file_layout();
		r.handle = 42;
		F.opens++;
		wire_open_rep_encode(&rep->body, &r);
		break;
	}
	case WIRE_OP_MDS_CLOSE:
	case WIRE_OP_MDS_SIZE_UPDATE: {
		struct wire_close_req m;
		wire_close_req_decode(&c, &m);
		if (m.handle != 42)
			F.bad_requests++;
		if (m.size > F.size)
			F.size = m.size;
		F.last_reported = m.size;
		if (req->hdr->opcode == WIRE_OP_MDS_CLOSE)
			F.closes++;
		else
			F.size_updates++;
		fake_attr(&m.fid, &a);
		wire_attr_put(&rep->body, &a);
		break;
	}
	case WIRE_OP_MDS_SYNC: {
		struct wire_fid_req m;
		wire_fid_req_decode(&c, &m);
		F.md_syncs++;
		break;
	}
	case WIRE_OP_MDS_READDIR: {
		struct wire_readdir_req m;
		struct nacre_dirent d;
		wire_readdir_req_decode(&c, &m);
		/* Three entries "e0".."e2" with cookies 1..3; always all that follow cookie. */
		uint32_t first = (uint32_t)m.cookie;
		wire_put_u32(&rep->body, first < 3 ? 3 - first : 0);
		wire_put_u8(&rep->body, 1);
		for (uint32_t i = first; i < 3; i++) {
			memset(&d, 0, sizeof(d));
			d.cookie = i + 1;
			d.fid = file_fid;
			d.fid.ver = i;
			d.type = S_IFREG;
			snprintf(d.name, sizeof(d.name), "e%u", i);
			wire_dirent_put(&rep->body, &d);
		}
		break;
	}
	case WIRE_OP_MDS_GETXATTR: {
		struct wire_xattr_req m;
		static const char val[] = "hello";
		wire_xattr_req_decode(&c, &m);
		if (strcmp(m.name, "user.greeting") != 0)
			rc = -ENODATA;
		else if (m.size == 0)
			wire_put_u32(&rep->body, 5);
		else if (m.size < 5)
			rc = -ERANGE;
		else
			wire_put_bytes(&rep->body, val, 5);
		break;
	}
	case WIRE_OP_MDS_APPEND: {
		/* as the MDS does: the end of the file, then the size grows by len */
		struct wire_append_req m;
		struct wire_append_rep r;
		wire_append_req_decode(&c, &m);
		if (m.handle != 42)
			F.bad_requests++;
		r.offset = F.size;
		F.size += m.len;
		wire_append_rep_encode(&rep->body, &r);
		break;
	}
	case WIRE_OP_MDS_DISCONNECT: /* an unmount: nothing to forget here */
		break;
	case WIRE_OP_MDS_FIND:
		F.finds++;
		free(F.find_req);
		F.find_req = malloc(req->body_len);
		memcpy(F.find_req, req->body, req->body_len);
		F.find_req_len = req->body_len;
		c.pos = c.len; /* kept, not decoded */
		fake_find_page(&rep->body);
		break;
	case WIRE_OP_MDS_SETATTR: {
		struct wire_setattr_req m;
		wire_setattr_req_decode(&c, &m);
		if (m.sa.valid & NACRE_SET_SIZE)
			F.size = m.sa.size;
		F.writes_at_setattr = F.writes;
		fake_attr(&m.fid, &a);
		wire_attr_put(&rep->body, &a);
		break;
	}
	default:
		rc = -EOPNOTSUPP;
	}
	if (!wire_cursor_ok(&c))
		rc = -EPROTO;
	pthread_mutex_unlock(&F.lock);
	return rc;
}

static int oss_handler(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	int server = (int)(intptr_t)arg;
	struct wire_ost_io_req m;
	struct wire_cursor c;
	int rc = 0;

	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_ost_io_req_decode(&c, &m);
	pthread_mutex_lock(&F.lock);
	if (!wire_cursor_ok(&c) || m.stripe_idx >= NSTRIPES || m.ost_idx != m.stripe_idx ||
	    (int)(m.ost_idx % 2) != server || !nacre_fid_eq(&m.fid, &file_fid) ||
	    m.offset + m.len > OBJ_MAX) {
		F.bad_requests++;
		pthread_mutex_unlock(&F.lock);
		return -EPROTO;
	}
	uint32_t s = m.stripe_idx;
	int busy = 0;
	F.inflight++;
	if (F.inflight > F.inflight_max)
		F.inflight_max = F.inflight;
	F.inflight_stripe[s]++;
	for (int i = 0; i < NSTRIPES; i++)
		busy += F.inflight_stripe[i] > 0;
	if (busy > F.stripes_busy_max)
		F.stripes_busy_max = busy;
	int delay = F.delay_us;
	pthread_mutex_unlock(&F.lock);
	usleep((useconds_t)delay); /* long enough for the client's other RPCs to arrive */
	pthread_mutex_lock(&F.lock);
	F.inflight--;
	F.inflight_stripe[s]--;
	switch (req->hdr->opcode) {
	case WIRE_OP_OST_WRITE:
		if (F.fail_write) {
			rc = F.fail_write;
			break;
		}
		if (req->bulk_len != m.len) {
			F.bad_requests++;
			rc = -EPROTO;
			break;
		}
		memcpy(F.obj[s] + m.offset, req->bulk, m.len);
		if (m.offset + m.len > F.obj_len[s])
			F.obj_len[s] = m.offset + m.len;
		F.writes++;
		if (m.len > F.write_max)
			F.write_max = m.len;
		break;
	case WIRE_OP_OST_READ: {
		uint64_t n = 0;
		if (m.offset < F.obj_len[s])
			n = F.obj_len[s] - m.offset < m.len ? F.obj_len[s] - m.offset : m.len;
		F.reads++;
		if (m.len > F.read_max)
			F.read_max = m.len;
		if (n > 0) {
			rep->bulk = malloc(n);
			memcpy(rep->bulk, F.obj[s] + m.offset, n);
			rep->bulk_len = (uint32_t)n;
		}
		break;
	}
	case WIRE_OP_OST_SYNC:
		F.syncs++;
		break;
	default:
		rc = -EOPNOTSUPP;
	}
	pthread_mutex_unlock(&F.lock);
	return rc;
}

struct server {
	struct rpc_server *s;
	pthread_t thread;
	char addr[NACRE_ADDR_MAX + 1];
};

static void *server_main(void *arg)
{
	rpc_server_run(arg);
	return NULL;
}

static int server_start(struct server *sv, const char *name, const struct nacre_key *key,
			rpc_handler_fn fn, void *arg)
{
	struct rpc_server_conf conf;
	char err[256];

	memset(&conf, 0, sizeof(conf));
	conf.listen_addr = "127.0.0.1:0";
	conf.fsname = "fs";
	conf.server_name = name;
	conf.key = key;
	conf.nworkers = 8;
	conf.handler = fn;
	conf.arg = arg;
	if (rpc_server_create(&conf, &sv->s, err, sizeof(err)) != 0) {
		fprintf(stderr, "server %s: %s\n", name, err);
		return -1;
	}
	snprintf(sv->addr, sizeof(sv->addr), "127.0.0.1:%u", rpc_server_port(sv->s));
	return pthread_create(&sv->thread, NULL, server_main, sv->s);
}

static void server_stop(struct server *sv)
{
	rpc_server_stop(sv->s);
	pthread_join(sv->thread, NULL);
	rpc_server_destroy(sv->s);
}

/* ---- tests ---- */

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)((off * 2654435761u) >> 13 ^ (off >> 20));
}

static void fill(uint8_t *p, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(off + i);
}

static int same(const uint8_t *p, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pattern(off + i))
			return 0;
	return 1;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void test_mount_errors(const char *keyfile, const char *mds_addr)
{
	struct nacre_mount_opts o;
	struct nacre_fs *fs;
	char spec[128], err[512];
	int rc;

	memset(&o, 0, sizeof(o));
	o.key_file = keyfile;
	o.connect_timeout_ms = 2000;

	snprintf(spec, sizeof(spec), "%s:/fs/nope", mds_addr);
	rc = nacre_fs_mount(spec, &o, &fs, err, sizeof(err));
	CHECK(rc == -ENOENT && strcmp(err, "no such directory /nope on fs") == 0,
	      "missing subdir: %d '%s'", rc, err);

	snprintf(spec, sizeof(spec), "%s:/fs/plain", mds_addr);
	rc = nacre_fs_mount(spec, &o, &fs, err, sizeof(err));
	CHECK(rc == -ENOTDIR && strstr(err, "not a directory"), "file as subdir: %d '%s'", rc, err);

	/* A port nobody listens on (we just closed a listener there? use port 1). */
	rc = nacre_fs_mount("127.0.0.1:1:/fs", &o, &fs, err, sizeof(err));
	CHECK(rc == -ECONNREFUSED &&
		      strcmp(err, "cannot reach MDS 127.0.0.1:1: connection refused (is nacre-mds "
				  "running?)") == 0,
	      "refused: %d '%s'", rc, err);

	o.key_file = "/nonexistent/nacre.key";
	snprintf(spec, sizeof(spec), "%s:/fs", mds_addr);
	rc = nacre_fs_mount(spec, &o, &fs, err, sizeof(err));
	CHECK(rc < 0 && strstr(err, "/nonexistent/nacre.key"), "missing key: %d '%s'", rc, err);

	o.key_file = keyfile;
	rc = nacre_fs_mount("mds:/bad.name", &o, &fs, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "bad character"), "bad spec: %d '%s'", rc, err);
}

static void test_io(struct nacre_fs *fs)
{
	struct nacre_fid root = nacre_fs_root(fs);
	struct nacre_attr a;
	struct nacre_file *f;
	size_t big = 16 * MIB;
	uint8_t *wbuf = malloc(big), *rbuf = malloc(big + MIB);
	ssize_t n;
	int rc;

	CHECK(nacre_fid_eq(&root, &sub_fid), "root is the subdirectory");
	rc = nacre_lookup(fs, NULL, &root, "file", &a);
	CHECK(rc == 0 && nacre_fid_eq(&a.fid, &file_fid), "lookup file: %d", rc);
	rc = nacre_resolve(fs, NULL, "/file", &a);
	CHECK(rc == 0 && nacre_fid_eq(&a.fid, &file_fid), "resolve /file: %d", rc);
	rc = nacre_resolve(fs, NULL, "x/../file", &a);
	CHECK(rc == -ENOENT, "resolve through a missing name: %d", rc);
	rc = nacre_resolve(fs, NULL, "./file/..", &a);
	CHECK(rc == -ENOTDIR, "resolve through a file: %d", rc);

	rc = nacre_open(fs, NULL, &file_fid, O_RDWR, &f);
	CHECK(rc == 0, "open: %d", rc);
	if (rc)
		goto out;
	CHECK(nacre_file_layout(f)->nosts == NSTRIPES, "layout");

	/* 16 MiB over 4 stripes of 1 MiB: 4 RPCs of 4 MiB, sent together. */
	fill(wbuf, 0, big);
	F.writes = 0;
	F.inflight_max = 0;
	n = nacre_pwrite(f, wbuf, big, 0);
	CHECK(n == (ssize_t)big, "pwrite 16 MiB: %zd", n);
	CHECK(F.writes == 4 && F.write_max == 4 * MIB, "4 RPCs of 4 MiB: %d rpcs, max %llu",
	      F.writes, (unsigned long long)F.write_max);
	CHECK(F.inflight_max >= 2, "parallel writes: at most %d in flight", F.inflight_max);
	for (int s = 0; s < NSTRIPES; s++)
		CHECK(F.obj_len[s] == 4 * MIB, "object %d has %llu bytes", s,
		      (unsigned long long)F.obj_len[s]);
	/* Byte 5 MiB + 3 is in stripe 1, row 1: object offset 1 MiB + 3. */
	CHECK(F.obj[1][MIB + 3] == pattern(5 * MIB + 3), "RAID0 placement");
	CHECK(nacre_file_written_size(f) == big, "written size");

	memset(rbuf, 0xee, big);
	n = nacre_pread(f, rbuf, big, 0);
	CHECK(n == (ssize_t)big && same(rbuf, 0, big), "read back 16 MiB: %zd", n);

	/* Unaligned range across stripes. */
	memset(rbuf, 0xee, big);
	n = nacre_pread(f, rbuf, 3 * MIB + 12345, MIB - 77);
	CHECK(n == 3 * MIB + 12345 && same(rbuf, MIB - 77, (size_t)n), "unaligned read: %zd", n);

	/* Reads at and across the end. */
	n = nacre_pread(f, rbuf, 100, big);
	CHECK(n == 0, "read at EOF: %zd", n);
	n = nacre_pread(f, rbuf, MIB, big - 10);
	CHECK(n == 10 && same(rbuf, big - 10, 10), "read across EOF: %zd", n);

	/* A small write far out leaves a hole that reads as zeros; objects are short. */
	fill(wbuf, 20 * MIB, 100);
	n = nacre_pwrite(f, wbuf, 100, 20 * MIB);
	CHECK(n == 100, "write at 20 MiB: %zd", n);
	memset(rbuf, 0xee, 5 * MIB);
	n = nacre_pread(f, rbuf, 5 * MIB, 16 * MIB);
	CHECK(n == 4 * MIB + 100, "read over the hole: %zd", n);
	CHECK(all_zero(rbuf, 4 * MIB) && same(rbuf + 4 * MIB, 20 * MIB, 100), "hole is zeros");
	rc = nacre_file_attr(f, &a);
	CHECK(rc == 0 && a.size == 20 * MIB + 100, "file attr size %llu",
	      (unsigned long long)a.size);

	F.syncs = 0;
	rc = nacre_fsync(f, 0);
	CHECK(rc == 0 && F.syncs == NSTRIPES && F.size_updates == 1 && F.md_syncs == 1 &&
		      F.last_reported == 20 * MIB + 100,
	      "fsync: %d, %d syncs, %d updates, %d MDS syncs, size %llu", rc, F.syncs,
	      F.size_updates, F.md_syncs, (unsigned long long)F.last_reported);

	rc = nacre_close(f);
	CHECK(rc == 0 && F.closes == 1 && F.size == 20 * MIB + 100, "close: %d size %llu", rc,
	      (unsigned long long)F.size);

	/* A second open learns the size from the MDS, and O_APPEND writes at the end. */
	rc = nacre_open(fs, NULL, &file_fid, O_WRONLY | O_APPEND, &f);
	CHECK(rc == 0, "reopen: %d", rc);
	if (rc)
		goto out;
	fill(wbuf, 20 * MIB + 100, 1000);
	n = nacre_pwrite(f, wbuf, 1000, 0);
	CHECK(n == 1000 && nacre_file_written_size(f) == 20 * MIB + 1100, "append: %zd, end %llu",
	      n, (unsigned long long)nacre_file_written_size(f));
	rc = nacre_close(f);
	CHECK(rc == 0 && F.size == 20 * MIB + 1100, "close after append: %d", rc);

	/* A truncate while a handle that wrote is open: its close must not undo it. */
	rc = nacre_open(fs, NULL, &file_fid, O_RDWR, &f);
	CHECK(rc == 0, "open rw: %d", rc);
	if (rc)
		goto out;
	n = nacre_pwrite(f, wbuf, 1000, 20 * MIB + 100);
	CHECK(n == 1000, "rewrite tail: %zd", n);
	struct nacre_setattr sa = {.valid = NACRE_SET_SIZE, .size = 20 * MIB + 50};
	rc = nacre_setattr(fs, NULL, &file_fid, &sa, &a);
	CHECK(rc == 0 && a.size == 20 * MIB + 50, "truncate: %d", rc);
	CHECK(nacre_file_written_size(f) == 20 * MIB + 50, "written end follows the truncate");
	F.fail_write = -ENOSPC;
	n = nacre_pwrite(f, wbuf, 3 * MIB, 0);
	CHECK(n == -ENOSPC, "ENOSPC from an OST passes through: %zd", n);
	F.fail_write = 0;
	rc = nacre_close(f);
	CHECK(rc == -ENOSPC && F.size == 20 * MIB + 50, "close reports the write error: %d", rc);
	sa.size = 20 * MIB + 1100;
	rc = nacre_setattr(fs, NULL, &file_fid, &sa, &a);
	CHECK(rc == 0, "extend: %d", rc);

	rc = nacre_open(fs, NULL, &file_fid, O_RDONLY, &f);
	CHECK(rc == 0, "open read-only: %d", rc);
	if (rc)
		goto out;
	n = nacre_pwrite(f, wbuf, 10, 0);
	CHECK(n == -EBADF, "write on a read-only handle: %zd", n);
	n = nacre_pread(f, rbuf, 2000, 20 * MIB);
	CHECK(n == 1100 && same(rbuf, 20 * MIB, 1100), "read the appended tail: %zd", n);
	rc = nacre_close(f);
	CHECK(rc == 0, "close read-only: %d", rc);

	/* Namespace calls. */
	struct nacre_dirent ents[2];
	int eof = -1;
	rc = nacre_readdir(fs, NULL, &root, 0, ents, 2, &eof);
	CHECK(rc == 2 && eof == 0 && strcmp(ents[1].name, "e1") == 0 && ents[1].cookie == 2,
	      "readdir page 1: %d eof %d", rc, eof);
	rc = nacre_readdir(fs, NULL, &root, ents[1].cookie, ents, 2, &eof);
	CHECK(rc == 1 && eof == 1 && strcmp(ents[0].name, "e2") == 0, "readdir page 2: %d eof %d",
	      rc, eof);
	char val[16];
	rc = nacre_getxattr(fs, NULL, &file_fid, "user.greeting", NULL, 0);
	CHECK(rc == 5, "getxattr length: %d", rc);
	rc = nacre_getxattr(fs, NULL, &file_fid, "user.greeting", val, sizeof(val));
	CHECK(rc == 5 && memcmp(val, "hello", 5) == 0, "getxattr value: %d", rc);
	rc = nacre_getxattr(fs, NULL, &file_fid, "user.greeting", val, 2);
	CHECK(rc == -ERANGE, "getxattr small buffer: %d", rc);
	rc = nacre_getxattr(fs, NULL, &file_fid, "user.none", val, sizeof(val));
	CHECK(rc == -ENODATA, "getxattr missing: %d", rc);
	rc = nacre_unlink(fs, NULL, &root, "file");
	CHECK(rc == -EOPNOTSUPP, "an error status passes through: %d", rc);
out:
	free(wbuf);
	free(rbuf);
}

/* Empties the fake objects and the MDS size. */
/* nacre_find_page: the typed request goes out as the find_req it stands for, field by
 * field, and the page comes back typed; bad requests stay here, bad replies are -EPROTO. */
static void test_find(struct nacre_fs *fs)
{
	struct nacre_find_req *req = calloc(1, sizeof(*req));
	struct wire_find_req *want = calloc(1, sizeof(*want)), *got = calloc(1, sizeof(*got));
	struct wire_find_query *q = &want->q;
	struct nacre_find_page *page;
	struct wire_cursor c;
	int rc;

	req->version = NACRE_FIND_VERSION;
	strcpy(req->cursor.path, "a/b");
	req->cursor.state = 1;
	req->preds = NACRE_FINDP_NAME | NACRE_FINDP_TYPE | NACRE_FINDP_SIZE | NACRE_FINDP_MTIME |
		     NACRE_FINDP_NEWER | NACRE_FINDP_UID | NACRE_FINDP_GID | NACRE_FINDP_PERM |
		     NACRE_FINDP_STRIPE_SIZE | NACRE_FINDP_OST | NACRE_FINDP_POOL |
		     NACRE_FINDP_LAYOUT | NACRE_FINDP_HSM | NACRE_FINDP_FID |
		     NACRE_FINDP_MINDEPTH | NACRE_FINDP_MAXDEPTH | NACRE_FINDP_EMPTY |
		     NACRE_FINDP_LINKS | NACRE_FINDP_PROJID | NACRE_FINDP_NEWER_XY;
	req->neg = NACRE_FINDP_UID | NACRE_FINDP_OST | NACRE_FINDP_EMPTY;
	req->links = (struct nacre_find_cmp){.sign = 1, .up = 1, .value = 1, .unit = 1};
	req->projid = 42;
	req->nnewer = 2;
	req->newer_xy[0] = (struct nacre_find_newer){NACRE_FIND_TIME_CTIME, 0, {1500000000, 3}};
	req->newer_xy[1] = (struct nacre_find_newer){NACRE_FIND_TIME_ATIME, 1, {1500000001, 0}};
	req->now = (struct nacre_time){1700000000, 7};
	strcpy(req->start_name, "file");
	req->start_entry = 1;
	req->mindepth = 1;
	req->maxdepth = 3;
	strcpy(req->name, "*.C");
	req->name_icase = 1;
	req->types = 1u << (S_IFREG >> 12);
	req->size = (struct nacre_find_cmp){.sign = 1, .up = 1, .value = 2, .unit = 1024};
	req->mtime = (struct nacre_find_cmp){.sign = -1, .value = 7, .unit = 86400};
	req->newer = (struct nacre_time){1600000000, 9};
	req->uid = 1000;
	req->gid = 100;
	req->perm_kind = NACRE_FIND_PERM_ALL;
	req->perm = 0644;
	req->stripe_size = (struct nacre_find_cmp){.value = 1, .unit = MIB};
	req->nosts = 2;
	req->osts[0] = 3;
	req->osts[1] = 5;
	strcpy(req->pool, "fast");
	req->layouts = NACRE_FIND_LAYOUT_RAID0 | NACRE_FIND_LAYOUT_RELEASED;
	req->hsm = NACRE_HS_ARCHIVED;
	req->fid = file_fid;
	rc = nacre_find_page(fs, NULL, &sub_fid, req, &page);
	CHECK(rc == 0 && page, "find page: %d", rc);
	if (rc == 0) {
		CHECK(page->count == 3 && !page->eof, "find page: %u entries, eof %d", page->count,
		      page->eof);
		CHECK(page->next.state == 1 && strcmp(page->next.path, "a/b") == 0,
		      "find cursor: %u %s", page->next.state, page->next.path);
		struct nacre_find_entry *e = page->entries;
		CHECK(page->count == 3 && strcmp(e[0].path, "x") == 0 && !e[0].err &&
			      e[0].has_layout && e[0].layout.stripe_count == NSTRIPES &&
			      e[0].layout.ost_idx[3] == 3 && nacre_fid_eq(&e[0].attr.fid, &file_fid) &&
			      strcmp(e[0].target, "") == 0,
		      "find entry 0");
		CHECK(page->count == 3 && strcmp(e[1].path, "a/l") == 0 && !e[1].has_layout &&
			      S_ISLNK(e[1].attr.mode) && strcmp(e[1].target, "../x") == 0,
		      "find entry 1");
		CHECK(page->count == 3 && strcmp(e[2].path, "a") == 0 && e[2].err == -EACCES &&
			      nacre_fid_eq(&e[2].attr.fid, &sub_fid),
		      "find entry 2");
	}
	nacre_find_page_free(page);

	/* the bytes sent are those of the equivalent find_req */
	pthread_mutex_lock(&F.lock);
	wire_cursor_init_read(&c, F.find_req, F.find_req_len);
	wire_find_req_decode(&c, got);
	CHECK(wire_cursor_ok(&c) && !wire_cursor_left(&c), "find request decodes");
	want->cred = got->cred; /* libnacre's root */
	want->fid = sub_fid;
	want->max_bytes = WIRE_FIND_MAX_BYTES;
	want->cur.state = WIRE_FIND_CUR_RESUME;
	strcpy(want->cur.path, "a/b");
	q->preds = WIRE_FINDP_NAME | WIRE_FINDP_TYPE | WIRE_FINDP_SIZE | WIRE_FINDP_MTIME |
		   WIRE_FINDP_NEWER | WIRE_FINDP_UID | WIRE_FINDP_GID | WIRE_FINDP_PERM |
		   WIRE_FINDP_STRIPE_SIZE | WIRE_FINDP_OST | WIRE_FINDP_POOL | WIRE_FINDP_LAYOUT |
		   WIRE_FINDP_HSM | WIRE_FINDP_FID | WIRE_FINDP_MINDEPTH | WIRE_FINDP_MAXDEPTH |
		   WIRE_FINDP_EMPTY | WIRE_FINDP_LINKS | WIRE_FINDP_PROJID | WIRE_FINDP_NEWER_XY;
	q->neg = WIRE_FINDP_UID | WIRE_FINDP_OST | WIRE_FINDP_EMPTY;
	q->links = (struct wire_find_cmp){.sign = 1, .value = 1, .unit = 1, .up = 1};
	q->projid = 42;
	q->nnewer = 2;
	q->newer_xy[0] = (struct wire_find_newer){WIRE_FIND_TIME_CTIME, 0, {1500000000, 3}};
	q->newer_xy[1] = (struct wire_find_newer){WIRE_FIND_TIME_ATIME, 1, {1500000001, 0}};
	q->now = req->now;
	strcpy(q->start_name, "file");
	q->start_entry = 1;
	q->mindepth = 1;
	q->maxdepth = 3;
	strcpy(q->name, "*.C");
	q->name_icase = 1;
	q->types = req->types;
	q->size = (struct wire_find_cmp){.sign = 1, .value = 2, .unit = 1024, .up = 1};
	q->mtime = (struct wire_find_cmp){.sign = -1, .value = 7, .unit = 86400};
	q->newer = req->newer;
	q->uid = 1000;
	q->gid = 100;
	q->perm_kind = WIRE_FIND_PERM_ALL;
	q->perm = 0644;
	q->stripe_size = (struct wire_find_cmp){.value = 1, .unit = MIB};
	q->nosts = 2;
	q->osts[0] = 3;
	q->osts[1] = 5;
	strcpy(q->pool, "fast");
	q->layouts = WIRE_FIND_LAYOUT_RAID0 | WIRE_FIND_LAYOUT_RELEASED;
	q->hsm = NACRE_HS_ARCHIVED;
	q->fid = file_fid;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_find_req_encode(&c, want);
	CHECK(wire_cursor_pos(&c) == F.find_req_len &&
		      memcmp(c.buf, F.find_req, F.find_req_len) == 0,
	      "find request bytes (%zu sent, %zu expected)", F.find_req_len, wire_cursor_pos(&c));
	wire_cursor_fini(&c);
	F.find_done = 1;
	pthread_mutex_unlock(&F.lock);

	/* the last page; a smaller max_bytes goes as it is */
	req->max_bytes = 5000;
	rc = nacre_find_page(fs, NULL, &sub_fid, req, &page);
	CHECK(rc == 0 && page && page->eof && page->next.state == 0, "find last page: %d", rc);
	nacre_find_page_free(page);
	pthread_mutex_lock(&F.lock);
	wire_cursor_init_read(&c, F.find_req, F.find_req_len);
	wire_find_req_decode(&c, got);
	CHECK(wire_cursor_ok(&c) && got->max_bytes == 5000, "find max_bytes %u", got->max_bytes);
	pthread_mutex_unlock(&F.lock);

	/* refused before the MDS: an unknown version, a comparison without a unit, an unknown
	 * predicate, too many OSTs */
	int finds = F.finds;
	req->version = NACRE_FIND_VERSION + 1;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL && !page,
	      "find: unknown version");
	req->version = NACRE_FIND_VERSION;
	req->size.unit = 0;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: no unit");
	req->size.unit = 1;
	req->preds |= 1u << 30;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: unknown bit");
	req->preds &= ~(1u << 30);
	req->nosts = NACRE_FIND_OSTS_MAX + 1;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: OSTs");
	req->nosts = 2;
	req->version = 1; /* a version-1 caller has no -newerXY */
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: v1 bits");
	req->version = NACRE_FIND_VERSION;
	req->nnewer = 0; /* -newerXY without a test */
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: no newer");
	req->nnewer = NACRE_FIND_NEWER_MAX + 1;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: newers");
	req->nnewer = 2;
	req->neg |= NACRE_FINDP_NEWER_XY;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: !newerXY");
	req->neg &= ~(uint32_t)NACRE_FINDP_NEWER_XY;
	/* an expression: a program that does not leave one value, a leaf out of range, a
	 * leaf with a depth */
	struct nacre_find_req *leaves = calloc(2, sizeof(*leaves));
	leaves[0].preds = NACRE_FINDP_UID;
	leaves[1].preds = NACRE_FINDP_MAXDEPTH;
	req->nleaves = 2;
	req->leaves = leaves;
	const uint8_t bad_progs[][3] = {{0, 0, 0}, {0, 2, NACRE_FIND_OP_OR}, {0, 1, 0x90}};
	for (size_t k = 0; k < sizeof(bad_progs) / sizeof(bad_progs[0]); k++) {
		leaves[1].preds = NACRE_FINDP_GID;
		memcpy(req->ops, bad_progs[k], 3);
		req->nops = 3;
		CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL,
		      "find: bad program %zu", k);
	}
	req->ops[2] = NACRE_FIND_OP_AND;
	leaves[1].preds = NACRE_FINDP_MAXDEPTH;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: leaf depth");
	req->nleaves = NACRE_FIND_LEAVES_MAX + 1;
	CHECK(nacre_find_page(fs, NULL, &sub_fid, req, &page) == -EINVAL, "find: leaves");
	CHECK(F.finds == finds, "find: %d bad requests reached the MDS", F.finds - finds);
	/* a good one goes out as the find_expr it stands for, the leaves' ages from now */
	leaves[1].preds = NACRE_FINDP_NEWER_XY;
	leaves[1].nnewer = 1;
	leaves[1].newer_xy[0] = (struct nacre_find_newer){NACRE_FIND_TIME_MTIME, 1, {77, 0}};
	leaves[0].uid = 4;
	req->nleaves = 2;
	const uint8_t prog[] = {0, NACRE_FIND_OP_NOT, 1, NACRE_FIND_OP_OR};
	memcpy(req->ops, prog, sizeof(prog));
	req->nops = sizeof(prog);
	rc = nacre_find_page(fs, NULL, &sub_fid, req, &page);
	CHECK(rc == 0, "find with an expression: %d", rc);
	nacre_find_page_free(page);
	pthread_mutex_lock(&F.lock);
	wire_cursor_init_read(&c, F.find_req, F.find_req_len);
	wire_find_req_decode(&c, got);
	CHECK(wire_cursor_ok(&c) && !wire_cursor_left(&c) && got->nleaves == 2 &&
		      got->nops == 4 && !memcmp(got->ops, prog, 4) &&
		      got->leaves[0].preds == WIRE_FINDP_UID && got->leaves[0].uid == 4 &&
		      got->leaves[0].now.sec == req->now.sec && got->leaves[1].nnewer == 1 &&
		      got->leaves[1].newer_xy[0].neg == 1 && got->leaves[1].newer_xy[0].t.sec == 77,
	      "find expression sent");
	pthread_mutex_unlock(&F.lock);
	req->nleaves = 0;
	req->leaves = NULL;
	req->nops = 0;
	free(leaves);

	/* a reply that does not hold its count */
	F.find_bad = 1;
	rc = nacre_find_page(fs, NULL, &sub_fid, req, &page);
	CHECK(rc == -EPROTO && !page, "find: malformed reply: %d", rc);
	F.find_bad = 0;
	free(F.find_req);
	F.find_req = NULL;
	free(req);
	free(want);
	free(got);
}

static void fake_reset(void)
{
	pthread_mutex_lock(&F.lock);
	for (int s = 0; s < NSTRIPES; s++) {
		memset(F.obj[s], 0, OBJ_MAX);
		F.obj_len[s] = 0;
	}
	F.size = 0;
	F.writes = F.reads = 0;
	F.write_max = F.read_max = 0;
	F.inflight_max = 0;
	pthread_mutex_unlock(&F.lock);
}

static int fake_writes(void)
{
	pthread_mutex_lock(&F.lock);
	int n = F.writes;
	pthread_mutex_unlock(&F.lock);
	return n;
}

/* The fake objects hold pattern(off) for file range [0, len) (RAID0, 1 MiB x 4). */
static int objects_hold(uint64_t len)
{
	for (uint64_t off = 0; off < len; off += 4093) {
		uint64_t row = off / (NSTRIPES * MIB), s = off / MIB % NSTRIPES;
		if (F.obj[s][row * MIB + off % MIB] != pattern(off))
			return 0;
	}
	return 1;
}

/* Write-behind on (the default): what an application sees. */
static void test_writeback(struct nacre_fs *fs)
{
	size_t big = 16 * MIB;
	uint8_t *wbuf = malloc(big), *rbuf = malloc(big);
	struct nacre_file *f, *g;
	struct nacre_attr a;
	ssize_t n;
	int rc, ok;

	fake_reset();
	fill(wbuf, 0, big);
	rc = nacre_open(fs, NULL, &file_fid, O_RDWR, &f);
	CHECK(rc == 0, "open: %d", rc);
	if (rc)
		goto out;

	/* 4096 writes of 4 KiB: buffered, sent as 4 RPCs of 4 MiB (one per stripe). Slow
	 * RPCs, so that the ones sent when their window filled are still running at flush. */
	pthread_mutex_lock(&F.lock);
	F.delay_us = 300000;
	pthread_mutex_unlock(&F.lock);
	ok = 1;
	for (size_t off = 0; off < big && ok; off += 4096)
		ok = nacre_pwrite(f, wbuf + off, 4096, off) == 4096;
	CHECK(ok, "4 KiB writes");
	rc = nacre_flush(f);
	CHECK(rc == 0 && F.writes == 4 && F.write_max == 4 * MIB && F.size == big,
	      "small writes coalesced: flush %d, %d RPCs, max %llu, size %llu", rc, F.writes,
	      (unsigned long long)F.write_max, (unsigned long long)F.size);
	CHECK(F.inflight_max >= 2, "write-behind RPCs in parallel: %d", F.inflight_max);
	pthread_mutex_lock(&F.lock);
	F.delay_us = 20000;
	pthread_mutex_unlock(&F.lock);
	CHECK(objects_hold(big), "objects hold the data");

	/* Read-your-writes: a buffered write is seen by a read on this handle and another. */
	fill(wbuf, 5 * MIB + 7, 100);
	int before = fake_writes();
	n = nacre_pwrite(f, wbuf, 100, 5 * MIB + 7);
	CHECK(n == 100 && fake_writes() == before, "small write buffered: %zd", n);
	memset(rbuf, 0, 200);
	n = nacre_pread(f, rbuf, 200, 5 * MIB);
	fill(wbuf, 5 * MIB, 200);
	CHECK(n == 200 && memcmp(rbuf, wbuf, 200) == 0, "read your own buffered write: %zd", n);
	fill(wbuf, 9 * MIB + 1, 50);
	n = nacre_pwrite(f, wbuf, 50, 9 * MIB + 1);
	rc = nacre_open(fs, NULL, &file_fid, O_RDONLY, &g);
	CHECK(rc == 0, "second handle: %d", rc);
	if (rc == 0) {
		memset(rbuf, 0, 50);
		n = nacre_pread(g, rbuf, 50, 9 * MIB + 1);
		CHECK(n == 50 && memcmp(rbuf, wbuf, 50) == 0, "other handle sees it: %zd", n);
		CHECK(nacre_close(g) == 0, "close second handle");
	}

	/* A background write fails: the next write, fsync and close say so. */
	pthread_mutex_lock(&F.lock);
	F.fail_write = -EIO;
	pthread_mutex_unlock(&F.lock);
	n = nacre_pwrite(f, wbuf, 8192, MIB);
	CHECK(n == 8192, "write buffered before the failure shows: %zd", n);
	rc = nacre_fsync(f, 0);
	CHECK(rc == -EIO, "fsync reports the failed background write: %d", rc);
	n = nacre_pwrite(f, wbuf, 8192, 2 * MIB);
	CHECK(n == -EIO, "next write reports it: %zd", n);
	pthread_mutex_lock(&F.lock);
	F.fail_write = 0;
	pthread_mutex_unlock(&F.lock);
	n = nacre_pwrite(f, wbuf, 8192, 2 * MIB);
	CHECK(n == 8192, "later writes work again: %zd", n);
	rc = nacre_close(f);
	CHECK(rc == -EIO, "close reports the lost write: %d", rc);

	/* Truncate over dirty data: the data goes first, the truncate wins. */
	rc = nacre_open(fs, NULL, &file_fid, O_RDWR, &f);
	CHECK(rc == 0, "open: %d", rc);
	if (rc)
		goto out;
	fill(wbuf, 0, 2 * MIB);
	before = fake_writes();
	n = nacre_pwrite(f, wbuf, 2 * MIB, 16 * MIB);
	CHECK(n == 2 * MIB && fake_writes() == before, "2 MiB buffered: %zd", n);
	struct nacre_setattr sa = {.valid = NACRE_SET_SIZE, .size = 16 * MIB + MIB};
	rc = nacre_setattr(fs, NULL, &file_fid, &sa, &a);
	CHECK(rc == 0 && F.writes_at_setattr > before, "truncate after the dirty data: %d (%d)",
	      rc, F.writes_at_setattr - before);
	CHECK(nacre_file_written_size(f) == 17 * MIB, "written end follows the truncate");
	n = nacre_pread(f, rbuf, 4 * MIB, 15 * MIB);
	CHECK(n == 2 * MIB, "read stops at the new size: %zd", n);
	rc = nacre_close(f);
	CHECK(rc == 0 && F.size == 17 * MIB, "close keeps the truncated size: %d %llu", rc,
	      (unsigned long long)F.size);

	/* O_APPEND with buffered data: each append lands after the previous one. */
	rc = nacre_open(fs, NULL, &file_fid, O_WRONLY | O_APPEND, &f);
	CHECK(rc == 0, "open append: %d", rc);
	if (rc == 0) {
		fill(wbuf, 17 * MIB, 3000);
		n = nacre_pwrite(f, wbuf, 1000, 0);
		n += nacre_pwrite(f, wbuf + 1000, 2000, 0);
		CHECK(n == 3000 && nacre_file_written_size(f) == 17 * MIB + 3000, "appends: %zd", n);
		CHECK(nacre_close(f) == 0 && F.size == 17 * MIB + 3000, "append size");
		rc = nacre_open(fs, NULL, &file_fid, O_RDONLY, &g);
		if (rc == 0) {
			n = nacre_pread(g, rbuf, 4000, 17 * MIB);
			CHECK(n == 3000 && same(rbuf, 17 * MIB, 3000), "appended bytes: %zd", n);
			nacre_close(g);
		}
	}
out:
	free(wbuf);
	free(rbuf);
}

/* Opens file_fid for one readahead case and zeroes the read counters, so the case sees only
 * its own RPCs. 0, or the open's error (already reported). */
static int open_read_case(struct nacre_fs *fs, int flags, struct nacre_file **f)
{
	int rc = nacre_open(fs, NULL, &file_fid, flags, f);
	CHECK(rc == 0, "open: %d", rc);
	if (rc)
		return rc;
	pthread_mutex_lock(&F.lock);
	F.reads = 0;
	F.read_max = 0;
	F.inflight_max = 0;
	F.stripes_busy_max = 0;
	pthread_mutex_unlock(&F.lock);
	return 0;
}

/* Readahead: a sequential reader gets 4 MiB RPCs in parallel ahead of it, on every OST;
 * reads a little out of order stay a stream; random reads get exactly what they ask; a
 * local write is never hidden by the cache. */
static void test_readahead(struct nacre_fs *fs)
{
	size_t big = 48 * MIB;
	uint8_t *wbuf = malloc(big), *rbuf = malloc(MIB);
	struct nacre_file *f;
	ssize_t n;
	int rc, ok;

	fake_reset();
	fill(wbuf, 0, big);
	rc = nacre_open(fs, NULL, &file_fid, O_RDWR, &f);
	CHECK(rc == 0, "open: %d", rc);
	if (rc)
		goto out;
	n = nacre_pwrite(f, wbuf, big, 0); /* large: written through */
	CHECK(n == (ssize_t)big && nacre_close(f) == 0, "write 48 MiB: %zd", n);

	if (open_read_case(fs, O_RDONLY, &f))
		goto out;
	ok = 1;
	for (size_t off = 0; off < big && ok; off += MIB) {
		n = nacre_pread(f, rbuf, MIB, off);
		ok = n == MIB && same(rbuf, off, MIB);
	}
	CHECK(ok, "sequential 1 MiB reads return the data");
	CHECK(F.reads <= 16 && F.read_max == 4 * MIB,
	      "readahead: %d read RPCs for 48 reads, largest %llu", F.reads,
	      (unsigned long long)F.read_max);
	CHECK(F.inflight_max >= 2, "readahead RPCs in parallel: %d", F.inflight_max);
	CHECK(F.stripes_busy_max == NSTRIPES, "readahead RPCs to all %d OSTs at once: %d",
	      NSTRIPES, F.stripes_busy_max);
	CHECK(nacre_close(f) == 0, "close");

	/* The kernel's parallel readahead requests overtake each other while they wait: after
	 * a sequential start, 1 MiB reads in reverse order within each 8 MiB, up to 7 MiB
	 * behind the stream's end, are still the stream; nothing is fetched twice. */
	if (open_read_case(fs, O_RDONLY, &f))
		goto out;
	ok = 1;
	for (size_t off = 0; off < 4 * MIB && ok; off += MIB) {
		n = nacre_pread(f, rbuf, MIB, off);
		ok = n == MIB && same(rbuf, off, MIB);
	}
	for (size_t base = 4 * MIB; base + 8 * MIB <= big && ok; base += 8 * MIB) {
		for (size_t i = 8; i-- > 0 && ok;) {
			n = nacre_pread(f, rbuf, MIB, base + i * MIB);
			ok = n == MIB && same(rbuf, base + i * MIB, MIB);
		}
	}
	CHECK(ok, "reordered 1 MiB reads return the data");
	CHECK(F.reads <= 16, "reordered reads: %d read RPCs for 44 reads", F.reads);
	CHECK(nacre_close(f) == 0, "close");

	/* Random 64 KiB reads: no readahead. */
	if (open_read_case(fs, O_RDONLY, &f))
		goto out;
	ok = 1;
	uint64_t x = 12345;
	for (int i = 0; i < 20 && ok; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t off = (x >> 20) % (big - 65536) / 65536 * 65536;
		n = nacre_pread(f, rbuf, 65536, off);
		ok = n == 65536 && same(rbuf, off, 65536);
	}
	CHECK(ok, "random reads return the data");
	CHECK(F.reads == 20 && F.read_max == 65536, "random reads: %d RPCs, largest %llu",
	      F.reads, (unsigned long long)F.read_max);
	CHECK(nacre_close(f) == 0, "close");

	/* A stream with readahead in its cache, then a local write ahead of the reader. */
	if (open_read_case(fs, O_RDWR, &f))
		goto out;
	for (size_t off = 0; off < 4 * MIB; off += MIB)
		nacre_pread(f, rbuf, MIB, off);
	memset(wbuf, 0x5a, 1000);
	n = nacre_pwrite(f, wbuf, 1000, 6 * MIB + 10);
	CHECK(n == 1000, "write into the readahead range: %zd", n);
	n = nacre_pread(f, rbuf, MIB, 6 * MIB);
	CHECK(n == MIB && same(rbuf, 6 * MIB, 10) && rbuf[10] == 0x5a && rbuf[1009] == 0x5a &&
		      same(rbuf + 1010, 6 * MIB + 1010, MIB - 1010),
	      "read after a local write sees it: %zd", n);
	CHECK(nacre_close(f) == 0, "close");
out:
	free(wbuf);
	free(rbuf);
}

int main(void)
{
	char dir[] = "/tmp/nacre-test-client-XXXXXX", keyfile[128], err[512], spec[128];
	struct server mds, oss[2];
	struct nacre_mount_opts o;
	struct nacre_key key;
	struct nacre_fs *fs;
	int rc;

	pthread_mutex_init(&F.lock, NULL);
	F.delay_us = 20000;
	for (int s = 0; s < NSTRIPES; s++)
		F.obj[s] = calloc(1, OBJ_MAX);
	if (!mkdtemp(dir))
		return 2;
	snprintf(keyfile, sizeof(keyfile), "%s/cluster.key", dir);
	if (key_generate(keyfile) || key_load(keyfile, &key, err, sizeof(err))) {
		fprintf(stderr, "key: %s\n", err);
		return 2;
	}
	if (server_start(&mds, "nacre-MDT0000", &key, mds_handler, NULL) ||
	    server_start(&oss[0], "oss0", &key, oss_handler, (void *)(intptr_t)0) ||
	    server_start(&oss[1], "oss1", &key, oss_handler, (void *)(intptr_t)1))
		return 2;
	snprintf(F.oss_addr[0], sizeof(F.oss_addr[0]), "%s", oss[0].addr);
	snprintf(F.oss_addr[1], sizeof(F.oss_addr[1]), "%s", oss[1].addr);

	test_mount_errors(keyfile, mds.addr);

	memset(&o, 0, sizeof(o));
	o.key_file = keyfile;
	o.timeout_ms = 5000;
	o.max_dirty_mb = -1; /* write-through: errors at the write itself */
	o.readahead_max_mb = -1;
	snprintf(spec, sizeof(spec), "%s:/fs/sub", mds.addr);
	rc = nacre_fs_mount(spec, &o, &fs, err, sizeof(err));
	CHECK(rc == 0, "mount %s: %d %s", spec, rc, err);
	if (rc == 0) {
		test_io(fs);
		test_find(fs);
		nacre_fs_umount(fs);
	}
	o.max_dirty_mb = 0; /* the defaults: write-behind and readahead on */
	o.readahead_max_mb = 0;
	rc = nacre_fs_mount(spec, &o, &fs, err, sizeof(err));
	CHECK(rc == 0, "mount %s: %d %s", spec, rc, err);
	if (rc == 0) {
		test_writeback(fs);
		test_readahead(fs);
		nacre_fs_umount(fs);
	}
	CHECK(F.bad_requests == 0, "%d malformed requests reached the servers", F.bad_requests);

	/* An OSS that is gone: the write fails with EIO once the recovery timeout passed. */
	server_stop(&oss[1]);
	o.timeout_ms = 1000;
	o.recovery_timeout_ms = 1000;
	rc = nacre_fs_mount(spec, &o, &fs, err, sizeof(err));
	CHECK(rc == 0, "second mount: %d %s", rc, err);
	if (rc == 0) {
		struct nacre_file *f;
		char buf[4096];
		memset(buf, 1, sizeof(buf));
		rc = nacre_open(fs, NULL, &file_fid, O_RDWR, &f);
		CHECK(rc == 0, "open: %d", rc);
		if (rc == 0) {
			/* Buffered: the failure shows at the next write, fsync and close. */
			ssize_t n = nacre_pwrite(f, buf, sizeof(buf), MIB); /* stripe 1: OSS 1 */
			CHECK(n == (ssize_t)sizeof(buf), "write buffered: %zd", n);
			CHECK(nacre_fsync(f, 0) == -EIO, "fsync to a missing OSS: EIO");
			n = nacre_pwrite(f, buf, sizeof(buf), MIB);
			CHECK(n == -EIO, "write after a lost write: %zd", n);
			n = nacre_pread(f, buf, sizeof(buf), 0); /* stripe 0: OSS 0 still up */
			CHECK(n == (ssize_t)sizeof(buf), "read from the live OSS: %zd", n);
			CHECK(nacre_close(f) == -EIO, "close reports the lost write");
		}
		nacre_fs_umount(fs);
	}

	server_stop(&oss[0]);
	server_stop(&mds);
	unlink(keyfile);
	rmdir(dir);
	for (int s = 0; s < NSTRIPES; s++)
		free(F.obj[s]);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
