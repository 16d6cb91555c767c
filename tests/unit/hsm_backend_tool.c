/* hsm_backend_tool.c - drives one HSM backend from the command line for the integration test
 * (tests/integration/test_hsm_backends.py): put/get/stat/list/remove of local files through
 * hsm_backend_*, plus offline self-tests of the signers and the XML reader.
 *
 *   hsm-backend-tool [options] URL put OBJPATH LOCALFILE [--uid N] [--gid N] [--mode OCT]
 *                                   [--mtime SEC] [--fid FID] [--dir] [--cancel-after BYTES]
 *   hsm-backend-tool [options] URL get OBJPATH LOCALFILE
 *   hsm-backend-tool [options] URL stat OBJPATH
 *   hsm-backend-tool [options] URL list
 *   hsm-backend-tool [options] URL remove OBJPATH
 *   hsm-backend-tool selftest
 * options: --endpoint URL --credentials FILE --threads N --block-size BYTES --retries N
 *
 * Exit status: 0 ok, 2 not found, 3 canceled, 1 any other failure (the backend's message on
 * stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "hsm/backend.h"
#include "hsm/http.h"

static ssize_t file_read(void *arg, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(*(int *)arg, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static ssize_t file_write(void *arg, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite(*(int *)arg, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

struct cancel {
	uint64_t after;
	uint64_t last;
};

static int on_progress(void *arg, uint64_t done)
{
	struct cancel *c = arg;
	if (done < c->last)
		return 1; /* not monotonic: fail loudly by canceling */
	c->last = done;
	return c->after && done >= c->after;
}

static void print_meta(const char *path, const struct hsm_meta *m)
{
	char fid[64] = "";
	if (m->has_fid)
		snprintf(fid, sizeof(fid), "[0x%" PRIx64 ":0x%x:0x%x]", m->fid.seq, m->fid.oid,
			 m->fid.ver);
	printf("%s\tsize=%" PRIu64 " uid=%u gid=%u mode=%o mtime=%" PRId64 ".%09u fid=%s "
	       "owner=%d checksum=%s\n",
	       path, m->size, m->uid, m->gid, m->mode, m->mtime.sec, m->mtime.nsec,
	       fid[0] ? fid : "-", m->has_owner, m->checksum[0] ? m->checksum : "-");
}

static int on_list(void *arg, const char *path, const struct hsm_meta *meta)
{
	(void)arg;
	print_meta(path, meta);
	return 0;
}

static int parse_fid_arg(const char *s, struct nacre_fid *fid)
{
	unsigned long long a, b, c;
	if (sscanf(s, "[0x%llx:0x%llx:0x%llx]", &a, &b, &c) != 3)
		return -EINVAL;
	fid->seq = a;
	fid->oid = (uint32_t)b;
	fid->ver = (uint32_t)c;
	return 0;
}

/* ---- offline self-tests ---- */

static int passed, failed;

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (cond) {                                                                \
			passed++;                                                          \
		} else {                                                                   \
			failed++;                                                          \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
		}                                                                          \
	} while (0)

static void test_sigv4(void)
{
	struct hsm_hdrs h;
	char auth[512];

	/* AWS's S3 example "GET Object" (sig-v4-header-based-auth). */
	hsm_hdrs_init(&h);
	hsm_hdrs_set(&h, "Host", "examplebucket.s3.amazonaws.com");
	hsm_hdrs_set(&h, "Range", "bytes=0-9");
	hsm_hdrs_set(&h, "x-amz-content-sha256",
		     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hsm_hdrs_set(&h, "x-amz-date", "20130524T000000Z");
	CHECK(hsm_s3_sign("GET", "/test.txt", "", &h,
			  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			  "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			  "us-east-1", "s3", "20130524T000000Z", auth, sizeof(auth)) == 0);
	CHECK(strcmp(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/"
			   "s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;"
			   "x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48"
			   "dd91039c6036bdb41") == 0);
	hsm_hdrs_fini(&h);

	/* The generic SigV4 test suite's "get-vanilla". */
	hsm_hdrs_init(&h);
	hsm_hdrs_set(&h, "Host", "example.amazonaws.com");
	hsm_hdrs_set(&h, "X-Amz-Date", "20150830T123600Z");
	CHECK(hsm_s3_sign("GET", "/", "", &h,
			  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			  "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1",
			  "service", "20150830T123600Z", auth, sizeof(auth)) == 0);
	CHECK(strstr(auth, "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d76"
			   "3fbf31") != NULL);
	CHECK(strstr(auth, "SignedHeaders=host;x-amz-date,") != NULL);
	hsm_hdrs_fini(&h);
}

static void test_xml(void)
{
	static const char list[] =
		"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>"
		"<EnumerationResults ServiceEndpoint=\"http://x/\" ContainerName='c'>"
		"<Blobs><Blob><Name>a &amp; b&#x2F;c&#233;</Name><Metadata><owner>10</owner>"
		"<hdi_isfolder>true</hdi_isfolder></Metadata></Blob>"
		"<!-- comment --><Blob><Name><![CDATA[x<y]]></Name></Blob></Blobs>"
		"<NextMarker/></EnumerationResults>";
	static const char *const bad[] = {
		"", "<a>", "<a></b>", "<a><b></a></b>", "<a>&bogus;</a>", "<a>&#0;</a>",
		"<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "<a/><b/>", "text", "<a x=1/>",
		"<a>&#x110000;</a>", "<a", "<a><!-- x</a>",
	};
	struct hsm_xml *x;

	CHECK(hsm_xml_parse(list, sizeof(list) - 1, &x) == 0);
	int root = hsm_xml_root(x);
	CHECK(strcmp(hsm_xml_name(x, root), "EnumerationResults") == 0);
	int blob = hsm_xml_child(x, hsm_xml_child(x, root, "Blobs"), "Blob");
	CHECK(blob >= 0 && strcmp(hsm_xml_child_text(x, blob, "Name"), "a & b/c\xC3\xA9") == 0);
	int md = hsm_xml_child(x, blob, "Metadata");
	CHECK(strcmp(hsm_xml_child_text(x, md, "owner"), "10") == 0);
	int b2 = hsm_xml_next(x, blob, "Blob");
	CHECK(b2 >= 0 && strcmp(hsm_xml_child_text(x, b2, "Name"), "x<y") == 0);
	CHECK(hsm_xml_next(x, b2, "Blob") == -1);
	CHECK(strcmp(hsm_xml_child_text(x, root, "NextMarker"), "") == 0);
	CHECK(hsm_xml_child_text(x, root, "Missing") == NULL);
	hsm_xml_free(x);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		x = NULL;
		int rc = hsm_xml_parse(bad[i], strlen(bad[i]), &x);
		if (rc == 0)
			fprintf(stderr, "accepted bad XML #%zu: %s\n", i, bad[i]);
		CHECK(rc == -EPROTO && x == NULL);
	}
	/* Every prefix of a valid document is either valid or refused, never overread. */
	for (size_t n = 0; n < sizeof(list) - 1; n++) {
		char *copy = malloc(n ? n : 1);
		memcpy(copy, list, n);
		if (hsm_xml_parse(copy, n, &x) == 0)
			hsm_xml_free(x);
		free(copy);
	}
}

static void test_encodings(void)
{
	char out[64];
	unsigned char raw[16];

	CHECK(hsm_base64_encode("nacre", 5, out, sizeof(out)) == 8 && strcmp(out, "bmFjcmU=") == 0);
	CHECK(hsm_base64_decode("bmFjcmU=", raw, sizeof(raw)) == 5 && memcmp(raw, "nacre", 5) == 0);
	CHECK(hsm_base64_decode("bm!j", raw, sizeof(raw)) == -EINVAL);
	hsm_url_encode("a b/c+d~", 1, out, sizeof(out));
	CHECK(strcmp(out, "a%20b/c%2Bd~") == 0);
	hsm_url_encode("a/b", 0, out, sizeof(out));
	CHECK(strcmp(out, "a%2Fb") == 0);
	CHECK(hsm_object_key("p", "/d/f", out, sizeof(out)) == 0 && strcmp(out, "p/d/f") == 0);
	CHECK(hsm_object_key("", "d/f", out, sizeof(out)) == 0 && strcmp(out, "d/f") == 0);
	CHECK(hsm_object_key("p", "d/../f", out, sizeof(out)) == -EINVAL);
	CHECK(hsm_object_key("p", "d//f", out, sizeof(out)) == -EINVAL);
	CHECK(hsm_object_key("p", "", out, sizeof(out)) == -EINVAL);
}

static int selftest(void)
{
	test_sigv4();
	test_xml();
	test_encodings();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* ---- main ---- */

static int usage(void)
{
	fprintf(stderr, "usage: hsm-backend-tool [--endpoint URL] [--credentials FILE] "
			"[--threads N] [--block-size BYTES] [--retries N] URL "
			"put|get|stat|list|remove ...\n       hsm-backend-tool selftest\n");
	return 1;
}

static int exit_code(int rc)
{
	return rc == 0 ? 0 : rc == -ENOENT ? 2 : rc == -ECANCELED ? 3 : 1;
}

int main(int argc, char **argv)
{
	struct hsm_backend_opts opts = { 0 };
	struct hsm_backend *b;
	char err[2048] = "";
	int i = 1, rc;
	int64_t v;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (i + 1 >= argc)
			return usage();
		if (strcmp(argv[i], "--endpoint") == 0)
			opts.endpoint = argv[i + 1];
		else if (strcmp(argv[i], "--credentials") == 0)
			opts.credentials = argv[i + 1];
		else if (strcmp(argv[i], "--threads") == 0 && parse_i64(argv[i + 1], 1, 64, &v) == 0)
			opts.threads = (int)v;
		else if (strcmp(argv[i], "--block-size") == 0 && parse_size(argv[i + 1],
									     &opts.block_size) == 0)
			;
		else if (strcmp(argv[i], "--retries") == 0 && parse_i64(argv[i + 1], 0, 20, &v) == 0)
			opts.retries = (int)v;
		else
			return usage();
	}
	if (i < argc && strcmp(argv[i], "selftest") == 0)
		return selftest();
	if (argc - i < 2)
		return usage();
	const char *url = argv[i], *cmd = argv[i + 1];
	i += 2;
	rc = hsm_backend_open(url, &opts, &b, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "hsm-backend-tool: %s\n", err);
		return exit_code(rc);
	}
	if (strcmp(cmd, "put") == 0 && argc - i >= 2) {
		struct hsm_meta m = { .uid = getuid(), .gid = getgid(), .mode = 0644 };
		struct cancel c = { 0 };
		struct stat st;
		const char *path = argv[i], *file = argv[i + 1];
		int fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			fprintf(stderr, "hsm-backend-tool: %s: %s\n", file, strerror(errno));
			rc = -errno;
			goto out;
		}
		m.size = (uint64_t)st.st_size;
		m.mtime.sec = st.st_mtim.tv_sec;
		m.mtime.nsec = (uint32_t)st.st_mtim.tv_nsec;
		for (i += 2; i + 1 < argc || (i < argc && strcmp(argv[i], "--dir") == 0); i += 2) {
			if (strcmp(argv[i], "--dir") == 0) {
				m.mode |= S_IFDIR;
				i--;
			} else if (strcmp(argv[i], "--uid") == 0 &&
				   parse_i64(argv[i + 1], 0, UINT32_MAX, &v) == 0) {
				m.uid = (uint32_t)v;
			} else if (strcmp(argv[i], "--gid") == 0 &&
				   parse_i64(argv[i + 1], 0, UINT32_MAX, &v) == 0) {
				m.gid = (uint32_t)v;
			} else if (strcmp(argv[i], "--mode") == 0) {
				uint32_t mode;
				if (hsm_meta_parse_mode(argv[i + 1], &mode) < 0)
					goto bad_arg;
				m.mode = (m.mode & ~07777u) | mode;
			} else if (strcmp(argv[i], "--mtime") == 0 &&
				   parse_i64(argv[i + 1], 0, INT64_MAX, &v) == 0) {
				m.mtime.sec = v;
				m.mtime.nsec = 0;
			} else if (strcmp(argv[i], "--fid") == 0 &&
				   parse_fid_arg(argv[i + 1], &m.fid) == 0) {
				m.has_fid = 1;
			} else if (strcmp(argv[i], "--cancel-after") == 0 &&
				   parse_i64(argv[i + 1], 1, INT64_MAX, &v) == 0) {
				c.after = (uint64_t)v;
			} else {
			bad_arg:
				fprintf(stderr, "hsm-backend-tool: bad put option %s\n", argv[i]);
				close(fd);
				rc = -EINVAL;
				goto out;
			}
		}
		m.has_owner = 1;
		rc = hsm_backend_put(b, path, S_ISDIR(m.mode) ? 0 : m.size, file_read, &fd, &m,
				     on_progress, &c, err, sizeof(err));
		close(fd);
		if (rc == 0 && !c.after && !S_ISDIR(m.mode) && c.last != m.size) {
			fprintf(stderr, "hsm-backend-tool: progress ended at %" PRIu64 " of %" PRIu64
					"\n", c.last, m.size);
			rc = -EIO;
		}
	} else if (strcmp(cmd, "get") == 0 && argc - i == 2) {
		struct hsm_meta m;
		struct cancel c = { 0 };
		int fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "hsm-backend-tool: %s: %s\n", argv[i + 1], strerror(errno));
			rc = -errno;
			goto out;
		}
		rc = hsm_backend_get(b, argv[i], file_write, &fd, &m, on_progress, &c, err,
				     sizeof(err));
		if (rc == 0 && ftruncate(fd, (off_t)m.size) < 0)
			rc = -errno;
		close(fd);
		if (rc == 0)
			print_meta(argv[i], &m);
	} else if (strcmp(cmd, "stat") == 0 && argc - i == 1) {
		struct hsm_meta m;
		rc = hsm_backend_stat(b, argv[i], &m, err, sizeof(err));
		if (rc == 0)
			print_meta(argv[i], &m);
	} else if (strcmp(cmd, "list") == 0 && argc - i == 0) {
		rc = hsm_backend_list(b, on_list, NULL, err, sizeof(err));
	} else if (strcmp(cmd, "remove") == 0 && argc - i == 1) {
		rc = hsm_backend_remove(b, argv[i], err, sizeof(err));
	} else {
		hsm_backend_close(b);
		return usage();
	}
	if (rc < 0 && err[0])
		fprintf(stderr, "hsm-backend-tool: %s\n", err);
	else if (rc < 0)
		fprintf(stderr, "hsm-backend-tool: %s\n", strerror(-rc));
out:
	hsm_backend_close(b);
	return exit_code(rc);
}
