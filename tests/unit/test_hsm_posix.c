/* test_hsm_posix.c - the posix archive backend and the metadata helpers: put/get/stat/list/
 * remove round trips, sidecar metadata, a file placed by hand, verification, cancel, and the
 * rules by which the cleanup tells stale temporaries from live ones. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "hsm/backend.h"
#include "unit.h"

struct buf {
	uint8_t *p;
	size_t len;
};

static ssize_t rd(void *arg, void *b, size_t len, uint64_t off)
{
	struct buf *s = arg;
	if (off >= s->len)
		return 0;
	if (len > s->len - off)
		len = s->len - off;
	memcpy(b, s->p + off, len);
	return (ssize_t)len;
}

static ssize_t wr(void *arg, const void *b, size_t len, uint64_t off)
{
	struct buf *d = arg;
	if (off + len > d->len)
		return -EFBIG;
	memcpy(d->p + off, b, len);
	return (ssize_t)len;
}

static int cancel_at_once(void *arg, uint64_t done)
{
	(void)arg;
	return done > 0;
}

struct seen {
	int files, dirs;
	int found_hand;
};

static int list_cb(void *arg, const char *path, const struct hsm_meta *m)
{
	struct seen *s = arg;
	if (S_ISDIR(m->mode))
		s->dirs++;
	else
		s->files++;
	if (!strcmp(path, "hand/made.txt") && m->size == 5)
		s->found_hand = 1;
	return 0;
}

struct keys {
	char text[512];
	size_t n;
};

static int add_key(void *arg, const char *key, const char *value)
{
	struct keys *k = arg;
	int n = snprintf(k->text + k->n, sizeof(k->text) - k->n, "%s=%s;", key, value);
	k->n += (size_t)n;
	return 0;
}

/* What each --meta-style writes, and that the reader takes each back. */
static void test_meta_styles(void)
{
	static const char *const want[] = {
		"owner=1234;group=567;permissions=0640;modtime=2023-11-14 22:13:20.000000005 +0000;",
		"owner=1234;group=567;permissions=0640;modtime=2023-11-14T22:13:20.000000005Z;",
		"posix_owner=1234;posix_group=567;permissions=33184;modtime=1700000000000000005;",
	};
	for (int style = 0; style < 3; style++) {
		struct hsm_meta m = {.uid = 1234, .gid = 567, .mode = 0640, .style = style}, got;
		struct keys k = {"", 0};
		m.mtime.sec = 1700000000;
		m.mtime.nsec = 5;
		CHECK_EQ(hsm_meta_each_key(&m, add_key, &k), 0);
		CHECK_STR(k.text, want[style]);
		memset(&got, 0, sizeof(got));
		for (char *p = k.text, *semi; (semi = strchr(p, ';')); p = semi + 1) {
			*semi = 0;
			char *eq = strchr(p, '=');
			*eq = 0;
			hsm_meta_apply(&got, p, eq + 1);
		}
		CHECK(got.uid == 1234 && got.gid == 567 && got.mode == 0640 && got.has_owner);
		CHECK(got.mtime.sec == 1700000000 && got.mtime.nsec == 5);
	}
	int style = -1;
	CHECK(hsm_meta_style_parse("azcopy", &style) == 0 && style == HSM_META_AZCOPY);
	CHECK(hsm_meta_style_parse("lustre", &style) < 0);
	struct hsm_meta whole = {.mtime = {1700000000, 0}};
	struct keys k = {"", 0};
	hsm_meta_each_key(&whole, add_key, &k);
	CHECK(strstr(k.text, "modtime=2023-11-14 22:13:20 +0000;") != NULL);
}

static void test_meta(void)
{
	char b[64];
	uint32_t mode;
	struct nacre_time t = {1612325106, 5}, t2;
	hsm_meta_format_mode(0644, b, sizeof(b));
	CHECK_STR(b, "0644");
	CHECK_EQ(hsm_meta_parse_mode("0755", &mode), 0);
	CHECK_EQ(mode, 0755);
	CHECK_EQ(hsm_meta_parse_mode("rwxr-s--T", &mode), 0);
	CHECK_EQ(mode, 03750);
	CHECK(hsm_meta_parse_mode("rwz------", &mode) < 0);
	CHECK(hsm_meta_parse_mode("9", &mode) < 0);
	hsm_meta_format_time(&t, b, sizeof(b));
	CHECK_STR(b, "2021-02-03T04:05:06.000000005Z");
	CHECK_EQ(hsm_meta_parse_time(b, &t2), 0);
	CHECK(t2.sec == t.sec && t2.nsec == t.nsec);
	CHECK_EQ(hsm_meta_parse_time("1612325106", &t2), 0);
	CHECK_EQ(t2.sec, 1612325106);
	CHECK_EQ(hsm_meta_parse_time("2021-02-03 05:05:06 +0100", &t2), 0);
	CHECK_EQ(t2.sec, 1612325106);
	CHECK(hsm_meta_parse_time("yesterday", &t2) < 0);
	/* AzCopy's posix style: st_mode in decimal, modtime in nanoseconds */
	CHECK_EQ(hsm_meta_parse_mode("33188", &mode), 0);
	CHECK_EQ(mode, 0644);
	CHECK_EQ(hsm_meta_parse_mode("16877", &mode), 0);
	CHECK_EQ(mode, 0755);
	CHECK(hsm_meta_parse_mode("4095", &mode) < 0); /* four digits: octal, and 9 is not */
	CHECK(hsm_meta_parse_mode("999999", &mode) < 0);
	CHECK_EQ(hsm_meta_parse_time("1612325106123456789", &t2), 0);
	CHECK(t2.sec == 1612325106 && t2.nsec == 123456789);
	CHECK_EQ(hsm_meta_parse_time("1612325106250", &t2), 0); /* milliseconds */
	CHECK(t2.sec == 1612325106 && t2.nsec == 250000000);
	/* AMLFS's layout, "2006-01-02 15:04:05 -0700" */
	CHECK_EQ(hsm_meta_parse_time("2021-02-02 20:05:06 -0800", &t2), 0);
	CHECK_EQ(t2.sec, 1612325106);
	test_meta_styles();
}

static void test_posix(void)
{
	char dir[] = "/tmp/nacre-hsm-posix-XXXXXX", url[128], err[256], p[256];
	struct hsm_backend *b;
	struct hsm_meta m, got;
	size_t n = 5 * 1024 * 1024 + 17;
	struct buf src = {malloc(n), n}, dst = {calloc(1, n), n};

	CHECK(mkdtemp(dir) != NULL);
	for (size_t i = 0; i < n; i++)
		src.p[i] = (uint8_t)(i * 7 + (i >> 13));
	snprintf(url, sizeof(url), "posix:%s", dir);
	CHECK(hsm_backend_open("posix:relative", NULL, &b, err, sizeof(err)) < 0);
	CHECK_EQ(hsm_backend_open(url, NULL, &b, err, sizeof(err)), 0);

	memset(&m, 0, sizeof(m));
	m.size = n;
	m.uid = 1000;
	m.gid = 100;
	m.mode = 0640;
	m.mtime.sec = 1600000000;
	m.has_fid = 1;
	m.fid.seq = NACRE_FIRST_SEQ;
	m.fid.oid = 3;
	CHECK_EQ(hsm_backend_put(b, "a/b/file", n, rd, &src, &m, NULL, NULL, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/a/b/.file.nacre-meta", dir);
	CHECK(access(p, R_OK) == 0);
	CHECK_EQ(hsm_backend_stat(b, "a/b/file", &got, err, sizeof(err)), 0);
	CHECK(got.size == n && got.uid == 1000 && got.gid == 100 && (got.mode & 07777) == 0640);
	CHECK(got.mtime.sec == 1600000000 && got.has_fid && got.fid.oid == 3);
	CHECK(strncmp(got.checksum, "crc32c:", 7) == 0);
	CHECK_EQ(hsm_backend_get(b, "a/b/file", wr, &dst, &got, NULL, NULL, err, sizeof(err)), 0);
	CHECK(memcmp(src.p, dst.p, n) == 0);

	/* ".." never escapes the root; missing objects are ENOENT; remove is idempotent */
	CHECK(hsm_backend_put(b, "../x", 1, rd, &src, &m, NULL, NULL, err, sizeof(err)) < 0);
	CHECK_EQ(hsm_backend_stat(b, "nope", &got, err, sizeof(err)), -ENOENT);

	/* a canceled put leaves nothing behind */
	CHECK_EQ(hsm_backend_put(b, "c/d", n, rd, &src, &m, cancel_at_once, NULL, err,
				 sizeof(err)),
		 -ECANCELED);
	CHECK_EQ(hsm_backend_stat(b, "c/d", &got, err, sizeof(err)), -ENOENT);

	/* corruption is detected against the recorded CRC */
	snprintf(p, sizeof(p), "%s/a/b/file", dir);
	FILE *f = fopen(p, "r+");
	CHECK(f != NULL);
	if (f) {
		fseek(f, 100, SEEK_SET);
		fputc(src.p[100] ^ 0xff, f);
		fclose(f);
	}
	CHECK_EQ(hsm_backend_get(b, "a/b/file", wr, &dst, NULL, NULL, NULL, err, sizeof(err)),
		 -EIO);

	/* a file put there by hand: described by its own stat */
	snprintf(p, sizeof(p), "%s/hand", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/hand/made.txt", dir);
	f = fopen(p, "w");
	if (f) {
		fputs("hello", f);
		fclose(f);
	}
	struct seen s = {0, 0, 0};
	CHECK_EQ(hsm_backend_list(b, list_cb, &s, err, sizeof(err)), 0);
	CHECK_EQ(s.files, 2);
	CHECK_EQ(s.dirs, 4); /* a, a/b, c, hand */
	CHECK(s.found_hand);

	CHECK_EQ(hsm_backend_remove(b, "a/b/file", err, sizeof(err)), 0);
	CHECK_EQ(hsm_backend_remove(b, "a/b/file", err, sizeof(err)), 0);
	CHECK_EQ(hsm_backend_stat(b, "a/b/file", &got, err, sizeof(err)), -ENOENT);
	hsm_backend_close(b);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	free(src.p);
	free(dst.p);
}

/* Creates DIR/sub/NAME; mtime age_s seconds ago. Returns an fd open on it (caller closes). */
static int make_tmp(const char *dir, const char *name, int age_s)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/sub/%s", dir, name);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	struct timespec ts[2] = {{time(NULL) - age_s, 0}, {time(NULL) - age_s, 0}};
	if (fd >= 0)
		futimens(fd, ts);
	return fd;
}

static int exists(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/sub/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void test_cleanup(void)
{
	char dir[] = "/tmp/nacre-hsm-clean-XXXXXX", url[128], err[256], p[256], host[256] = "";
	char mine[16], dead[64], live[64], self[64], other[64], old[64], locked[64];
	struct hsm_backend *b;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdir(p, 0755);
	gethostname(host, sizeof(host) - 1);
	snprintf(mine, sizeof(mine), "%08x", crc32c(0, host, strlen(host)));
	/* a pid that is surely dead: a child that exited and was reaped */
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(dead, sizeof(dead), "f.nacre-tmp-%s-%d-1", mine, (int)gone);
	snprintf(live, sizeof(live), "f.nacre-tmp-%s-%d-2", mine, (int)getppid());
	snprintf(self, sizeof(self), ".f.nacre-meta.nacre-tmp-%s-%d-3", mine, (int)getpid());
	snprintf(other, sizeof(other), "g.nacre-tmp-0badcafe-%d-4", (int)gone);
	snprintf(old, sizeof(old), "h.nacre-tmp-0badcafe-%d-5", (int)getppid());
	snprintf(locked, sizeof(locked), "i.nacre-tmp-%s-%d-6", mine, (int)gone);
	int fds[6] = {make_tmp(dir, dead, 0), make_tmp(dir, live, 0), make_tmp(dir, self, 0),
		      make_tmp(dir, other, 0), make_tmp(dir, old, 7200), make_tmp(dir, locked, 7200)};
	/* a writer's lock (held here, as a copytool on another host would hold it) wins over
	 * both the dead pid and the age */
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	CHECK_EQ(fcntl(fds[5], F_OFD_SETLK, &fl), 0);
	snprintf(url, sizeof(url), "posix:%s", dir);
	CHECK_EQ(hsm_backend_open(url, NULL, &b, err, sizeof(err)), 0);
	CHECK_EQ(hsm_backend_cleanup(b, 3600, err, sizeof(err)), 2);
	CHECK(!exists(dir, dead));   /* this host, dead pid */
	CHECK(exists(dir, live));    /* this host, live pid */
	CHECK(exists(dir, self));    /* this very process */
	CHECK(exists(dir, other));   /* another host, fresh: cannot tell */
	CHECK(!exists(dir, old));    /* another host, untouched past the grace */
	CHECK(exists(dir, locked));  /* held by its writer */
	close(fds[5]);
	CHECK_EQ(hsm_backend_cleanup(b, 3600, err, sizeof(err)), 1); /* the lock is gone */
	CHECK(!exists(dir, locked));
	for (int i = 0; i < 5; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	hsm_backend_close(b);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	test_meta();
	test_posix();
	test_cleanup();
	return unit_done();
}
