/* test_client_spec.c - mount spec parsing and FID text of libnacre. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/fid.h"
#include "nacre/nacre.h"

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

static void good(const char *spec, const char *addr, const char *fsname, const char *subdir)
{
	char a[NACRE_ADDR_LIST_MAX], f[NACRE_FSNAME_MAX + 1], s[NACRE_PATH_MAX + 1], err[256];
	int rc = nacre_parse_spec(spec, a, sizeof(a), f, sizeof(f), s, sizeof(s), err, sizeof(err));

	CHECK(rc == 0, "'%s' rejected: %s", spec, err);
	if (rc)
		return;
	CHECK(strcmp(a, addr) == 0, "'%s': addr '%s', want '%s'", spec, a, addr);
	CHECK(strcmp(f, fsname) == 0, "'%s': fsname '%s', want '%s'", spec, f, fsname);
	CHECK(strcmp(s, subdir) == 0, "'%s': subdir '%s', want '%s'", spec, s, subdir);
}

/* want: a piece of text the error sentence must contain. */
static void bad(const char *spec, const char *want)
{
	char a[NACRE_ADDR_LIST_MAX], f[NACRE_FSNAME_MAX + 1], s[NACRE_PATH_MAX + 1], err[512];
	int rc;

	err[0] = '\0';
	rc = nacre_parse_spec(spec, a, sizeof(a), f, sizeof(f), s, sizeof(s), err, sizeof(err));
	CHECK(rc == -EINVAL, "'%.60s' accepted (rc %d)", spec ? spec : "(null)", rc);
	CHECK(strstr(err, want) != NULL, "'%.60s': error '%s' lacks '%s'", spec ? spec : "(null)",
	      err, want);
}

static void test_good(void)
{
	good("mds:/fs", "mds:9400", "fs", "");
	good("mds:9401:/fs", "mds:9401", "fs", "");
	good("10.0.0.1:/scratch", "10.0.0.1:9400", "scratch", "");
	good("10.0.0.1@tcp:/scratch", "10.0.0.1:9400", "scratch", "");
	good("10.0.0.1@tcp0:/scratch", "10.0.0.1:9400", "scratch", "");
	good("mds@tcp1:9500:/fs", "mds:9500", "fs", "");
	good("host.example.com:/fs/a/b", "host.example.com:9400", "fs", "/a/b");
	good("mds:/fs/", "mds:9400", "fs", "");
	good("mds:/fs//a//b/", "mds:9400", "fs", "/a/b");
	good("mds:/fs/./a/./b", "mds:9400", "fs", "/a/b");
	good("mds:/fs/a..b/..c", "mds:9400", "fs", "/a..b/..c");
	good("[::1]:9400:/fs", "[::1]:9400", "fs", "");
	good("[::1]:/fs/sub", "[::1]:9400", "fs", "/sub");
	good("[fe80::1%eth0]:9402:/fs", "[fe80::1%eth0]:9402", "fs", "");
	good("mds:65535:/fs", "mds:65535", "fs", "");
	good("mds:1:/A_b-9", "mds:1", "A_b-9", "");
	good("mds:/fsname12", "mds:9400", "fsname12", "");
	good("my_host-1:/fs", "my_host-1:9400", "fs", "");
}

static void test_bad(void)
{
	char big[NACRE_PATH_MAX + 200];

	bad(NULL, "empty mount spec");
	bad("", "empty mount spec");
	bad(":/fs", "empty host");
	bad(":9400:/fs", "empty host");
	bad("@tcp:/fs", "empty host");
	bad("[]:/fs", "empty host");
	bad("mds", "missing ':/'");
	bad("mds:fs", "missing ':/'");
	bad("mds:9400", "missing ':/'");
	bad("mds/fs", "missing ':/'");
	bad("mds:0:/fs", "bad port '0'");
	bad("mds:65536:/fs", "bad port '65536'");
	bad("mds:123456:/fs", "bad port");
	bad("mds:abc:/fs", "bad port 'abc'");
	bad("mds::/fs", "bad port ''");
	bad("mds:-1:/fs", "bad port");
	bad("mds@o2ib:/fs", "network type 'o2ib' in 'mds@o2ib:/fs' is not supported");
	bad("mds@:/fs", "empty network type");
	bad("mds@tcpx:/fs", "not supported");
	/* failover partners: joined by ',' or, Lustre's way, ':' after a network */
	good("mds1@tcp:mds2@tcp:/fs", "mds1:9400,mds2:9400", "fs", "");
	good("mds1,mds2:/fs", "mds1:9400,mds2:9400", "fs", "");
	good("mds1:9401,mds2:9402:/fs/sub", "mds1:9401,mds2:9402", "fs", "/sub");
	good("mds1@tcp:9401:mds2@tcp1:/fs", "mds1:9401,mds2:9400", "fs", "");
	good("[::1]:9401,10.0.0.2:/fs", "[::1]:9401,10.0.0.2:9400", "fs", "");
	bad("a,b,c,d,e:/fs", "more than 4 MDS addresses");
	bad("mds1,,mds2:/fs", "empty MDS address");
	bad("mds1,:/fs", "empty MDS address");
	bad("mds1,mds 2:/fs", "bad character ' '");
	bad("::1:/fs", "must be in brackets");
	bad("[::1:/fs", "unterminated '['");
	bad("[::1]x:/fs", "unexpected");
	bad("bad host:/fs", "bad character ' '");
	bad("mds:/", "empty file system name");
	bad("mds://sub", "empty file system name");
	bad("mds:/toolongname", "too long");
	bad("mds:/fs.x", "bad character '.'");
	bad("mds:/f s", "bad character ' '");
	bad("mds:/fs/..", "'..'");
	bad("mds:/fs/a/../b", "'..'");
	bad("mds:/fs/a/..", "'..'");

	/* A host name too long for an address. */
	memset(big, 'h', 80);
	memcpy(big + 80, ":/fs", 5);
	bad(big, "too long");

	/* A component over 255 bytes. */
	memcpy(big, "mds:/fs/", 8);
	memset(big + 8, 'n', 300);
	big[308] = '\0';
	bad(big, "longer than 255");

	/* A subdirectory over NACRE_PATH_MAX. */
	size_t n = 8;
	while (n + 100 < sizeof(big) - 1) {
		big[n] = '/';
		memset(big + n + 1, 'd', 99);
		n += 100;
	}
	big[n] = '\0';
	bad(big, "too long");
}

static void test_small_buffers(void)
{
	char a[6], f[3], s[2], err[128];
	int rc;

	rc = nacre_parse_spec("mds:/fs", a, sizeof(a), f, sizeof(f), s, sizeof(s), err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "no room"), "short addr buffer: %d '%s'", rc, err);
	/* No error buffer at all must not crash. */
	rc = nacre_parse_spec("", a, sizeof(a), f, sizeof(f), s, sizeof(s), NULL, 0);
	CHECK(rc == -EINVAL, "no err buffer: %d", rc);
}

static void test_fid(void)
{
	struct nacre_fid fid = {0x200000400ULL, 0x1, 0x0}, out;
	char buf[NACRE_FID_STR_MAX];

	CHECK(strcmp(nacre_fid_format(&fid, buf, sizeof(buf)), "[0x200000400:0x1:0x0]") == 0,
	      "format: %s", buf);
	CHECK(nacre_fid_parse(buf, &out) == 0 && nacre_fid_eq(&fid, &out), "round trip");
	CHECK(nacre_fid_parse("0x200000007:0x1:0x0", &out) == 0 && out.seq == NACRE_ROOT_SEQ &&
		      out.oid == 1,
	      "no brackets");
	CHECK(nacre_fid_parse("[200000400:a:B]", &out) == 0 && out.oid == 0xa && out.ver == 0xb,
	      "no 0x");
	struct nacre_fid max = {UINT64_MAX, UINT32_MAX, UINT32_MAX};
	nacre_fid_format(&max, buf, sizeof(buf));
	CHECK(strlen(buf) < NACRE_FID_STR_MAX && nacre_fid_parse(buf, &out) == 0 &&
		      nacre_fid_eq(&max, &out),
	      "max fid: %s", buf);

	const char *bad_fids[] = {"",
				  "[]",
				  "[0x1:0x2]",
				  "[0x1:0x2:0x3",
				  "0x1:0x2:0x3]",
				  "[0x1:0x2:0x3]x",
				  "[0x:0x1:0x2]",
				  "[0x1:0x100000000:0x0]",
				  "[0x10000000000000000:0x1:0x0]",
				  "[ 0x1:0x2:0x3]",
				  "[-1:0x2:0x3]",
				  "[0x1;0x2;0x3]",
				  "[0xg:0x1:0x1]"};
	for (size_t i = 0; i < sizeof(bad_fids) / sizeof(bad_fids[0]); i++)
		CHECK(nacre_fid_parse(bad_fids[i], &out) == -EINVAL, "accepted fid '%s'",
		      bad_fids[i]);
	/* leading zeros are no digits too many (the copytool's archives may carry them) */
	CHECK(nacre_fid_parse("[0x000000000000000000001:0x0000000002:0x0]", &out) == 0 &&
		      out.seq == 1 && out.oid == 2,
	      "leading zeros");

	/* the store's key sorts as (seq, oid, ver) and decodes back */
	struct nacre_fid lo = {0x1ff, 0xffffffff, 7}, hi = {0x200, 0, 0};
	uint8_t klo[FID_KEY_LEN], khi[FID_KEY_LEN];
	fid_to_key(&lo, klo);
	fid_to_key(&hi, khi);
	CHECK(memcmp(klo, khi, FID_KEY_LEN) < 0, "key order");
	fid_from_key(klo, &out);
	CHECK(fid_eq(&out, &lo) && !fid_is_zero(&out), "key round trip");
	CHECK(fid_hash(&lo) != fid_hash(&hi), "hash");
}

int main(void)
{
	test_good();
	test_bad();
	test_small_buffers();
	test_fid();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
