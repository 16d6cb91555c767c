/* test_key.c - HMAC known answer, key files, random bytes, proof comparison. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/key.h"
#include "common/keytab.h"
#include "unit.h"

#define HEX64 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

static char tmpdir[] = "/tmp/nacre-test-key-XXXXXX";

static void path_in_tmp(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ(write(fd, text, n), (ssize_t)n);
		close(fd);
	}
}

/* RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?". key_proof hashes
 * label || a || b, so split the data into a label and two equal nonces. */
static void test_hmac_kat(void)
{
	static const uint8_t expect[32] = {
		0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
		0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
		0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43,
	};
	struct nacre_key k;
	uint8_t out[32], out2[32];

	memset(&k, 0, sizeof(k));
	k.present = 1;
	k.len = 4;
	memcpy(k.bytes, "Jefe", 4);
	key_proof(&k, "what do ya want ", (const uint8_t *)"for no", (const uint8_t *)"thing?",
		  6, out);
	CHECK_MEM(out, expect, 32);
	CHECK(key_proof_eq(out, expect, 32));

	/* Order of the nonces matters (server and client proofs differ). */
	key_proof(&k, "what do ya want ", (const uint8_t *)"thing?", (const uint8_t *)"for no",
		  6, out2);
	CHECK(!key_proof_eq(out, out2, 32));

	/* An absent key gives a deterministic proof that differs from any keyed one. */
	{
		struct nacre_key none;
		uint8_t a[32], b[32];

		memset(&none, 0, sizeof(none));
		key_proof(&none, "what do ya want ", (const uint8_t *)"for no",
			  (const uint8_t *)"thing?", 6, a);
		key_proof(NULL, "what do ya want ", (const uint8_t *)"for no",
			  (const uint8_t *)"thing?", 6, b);
		CHECK(key_proof_eq(a, b, 32));
		CHECK(!key_proof_eq(a, expect, 32));
	}
	/* A long label takes the heap path and still matches a split of the same bytes. */
	{
		char label[400];
		uint8_t n1[16], n2[16];

		memset(label, 'L', sizeof(label) - 1);
		label[sizeof(label) - 1] = '\0';
		memset(n1, 1, sizeof(n1));
		memset(n2, 2, sizeof(n2));
		key_proof(&k, label, n1, n2, 16, out);
		key_proof(&k, label, n1, n2, 16, out2);
		CHECK(key_proof_eq(out, out2, 32));
	}
	CHECK(key_proof_eq((const uint8_t *)"abc", (const uint8_t *)"abc", 3));
	CHECK(!key_proof_eq((const uint8_t *)"abc", (const uint8_t *)"abd", 3));
}

static void test_random(void)
{
	uint8_t a[64], b[64];

	CHECK_EQ(key_random(a, sizeof(a)), 0);
	CHECK_EQ(key_random(b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK_EQ(key_random(a, 0), 0);
}

static void test_load(void)
{
	char path[256], err[256];
	struct nacre_key k;
	static const char hex64[] =
		"00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
	char text[600];

	path_in_tmp(path, sizeof(path), "missing.key");
	err[0] = '\0';
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, path) != NULL);
	CHECK(!k.present);

	path_in_tmp(path, sizeof(path), "good.key");
	snprintf(text, sizeof(text), "%s\n", hex64);
	write_file(path, text, strlen(text));
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), 0);
	CHECK(k.present);
	CHECK_EQ(k.len, 32);
	CHECK_EQ(k.bytes[0], 0x00);
	CHECK_EQ(k.bytes[1], 0x11);
	CHECK_EQ(k.bytes[31], 0xff);

	/* No newline, CRLF: fine. */
	write_file(path, hex64, 64);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), 0);
	snprintf(text, sizeof(text), "%s\r\n", hex64);
	write_file(path, text, strlen(text));
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), 0);

	/* 256 hex digits: the longest key. */
	memset(text, 'a', 256);
	write_file(path, text, 256);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), 0);
	CHECK_EQ(k.len, 128);
	/* 258: too long. */
	memset(text, 'a', 258);
	write_file(path, text, 258);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EINVAL);
	/* 62: too short. */
	write_file(path, hex64, 62);
	err[0] = '\0';
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, path) != NULL);
	CHECK(!k.present);
	/* Odd count. */
	write_file(path, hex64, 63);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EINVAL);
	write_file(path, "", 0);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EINVAL);
	/* A non-hex character. */
	memcpy(text, hex64, 64);
	text[10] = 'g';
	write_file(path, text, 64);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EINVAL);
	CHECK(!k.present);
	/* Blanks inside. */
	memcpy(text, hex64, 32);
	text[32] = ' ';
	memcpy(text + 33, hex64 + 32, 32);
	write_file(path, text, 65);
	CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EINVAL);

	/* Unreadable file (only meaningful when not root). */
	if (geteuid() != 0) {
		write_file(path, hex64, 64);
		chmod(path, 0);
		CHECK_EQ(key_load(path, &k, err, sizeof(err)), -EACCES);
	}
	unlink(path);

	/* A directory is not a key file. */
	CHECK(key_load(tmpdir, &k, err, sizeof(err)) < 0);
}

static void test_generate(void)
{
	char path[256], err[256];
	struct nacre_key k1, k2;
	struct stat st;

	path_in_tmp(path, sizeof(path), "cluster.key");
	CHECK_EQ(key_generate(path), 0);
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
	CHECK_EQ(st.st_size, 65);
	CHECK_EQ(key_load(path, &k1, err, sizeof(err)), 0);
	CHECK_EQ(k1.len, 32);
	/* Never overwrites. */
	CHECK_EQ(key_generate(path), -EEXIST);
	CHECK_EQ(key_load(path, &k2, err, sizeof(err)), 0);
	CHECK(memcmp(k1.bytes, k2.bytes, 32) == 0);
	unlink(path);
	CHECK_EQ(key_generate(path), 0);
	CHECK_EQ(key_load(path, &k2, err, sizeof(err)), 0);
	CHECK(memcmp(k1.bytes, k2.bytes, 32) != 0);
	unlink(path);

	path_in_tmp(path, sizeof(path), "no/such/dir.key");
	CHECK_EQ(key_generate(path), -ENOENT);
}

/* The client key of (node17, 3) from the cluster key 00 01 .. 1f, as any HMAC-SHA256 of
 * "nacre-key|client|node17|3" computes it. */
static void test_derive(void)
{
	static const uint8_t expect[32] = {
		0x32, 0x5b, 0x9a, 0x3f, 0x1a, 0x8f, 0x97, 0x3e, 0x56, 0x59, 0xc6,
		0x67, 0x15, 0x5b, 0xd1, 0xd1, 0x79, 0xd5, 0x5b, 0x60, 0xfe, 0xd4,
		0xa6, 0xc6, 0x8f, 0xad, 0xae, 0xfc, 0x3c, 0x78, 0xa9, 0x95,
	};
	struct nacre_key cluster, k, k2, back;
	char path[256], err[256];

	memset(&cluster, 0, sizeof(cluster));
	cluster.present = 1;
	cluster.len = 32;
	for (int i = 0; i < 32; i++)
		cluster.bytes[i] = (uint8_t)i;
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "node17", 3, &k), 0);
	CHECK_EQ(k.len, 32);
	CHECK_MEM(k.bytes, expect, 32);
	CHECK_EQ(k.role, KEY_ROLE_CLIENT);
	CHECK_STR(k.name, "node17");
	CHECK_EQ(k.gen, 3);
	/* another generation, role or name is another key */
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "node17", 4, &k2), 0);
	CHECK(memcmp(k.bytes, k2.bytes, 32) != 0);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_ADMIN, "node17", 3, &k2), 0);
	CHECK(memcmp(k.bytes, k2.bytes, 32) != 0);
	/* refused: no cluster key, a derived key as the base, a bad name, gen 0, role server */
	CHECK_EQ(key_derive(&k, KEY_ROLE_CLIENT, "x", 1, &k2), -EINVAL);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "a/b", 1, &k2), -EINVAL);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "", 1, &k2), -EINVAL);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "x", 0, &k2), -EINVAL);
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_SERVER, "x", 1, &k2), -EINVAL);
	cluster.present = 0;
	CHECK_EQ(key_derive(&cluster, KEY_ROLE_CLIENT, "x", 1, &k2), -EINVAL);

	/* the file round-trips, mode 0600, never over an existing file */
	path_in_tmp(path, sizeof(path), "client.key");
	CHECK_EQ(key_write(path, &k), 0);
	struct stat st;
	CHECK_EQ(stat(path, &st), 0);
	CHECK_EQ(st.st_mode & 0777, 0600);
	CHECK_EQ(key_write(path, &k), -EEXIST);
	CHECK_EQ(key_load(path, &back, err, sizeof(err)), 0);
	CHECK_EQ(back.role, KEY_ROLE_CLIENT);
	CHECK_STR(back.name, "node17");
	CHECK_EQ(back.gen, 3);
	CHECK_EQ(back.len, 32);
	CHECK_MEM(back.bytes, expect, 32);
	unlink(path);
	CHECK_EQ(key_write(path, &cluster), -EINVAL); /* a cluster key file is bare hex */

	/* what a key line must look like */
	static const char *const bad[] = {
		"client node17 3", "server node17 3 " HEX64, "client a/b 3 " HEX64,
		"client node17 0 " HEX64, "client node17 -1 " HEX64, "client node17 3x " HEX64,
		"client node17 3 " HEX64 " extra", "client node17 3 abc",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i], strlen(bad[i]));
		err[0] = 0;
		CHECK_EQ(key_load(path, &back, err, sizeof(err)), -EINVAL);
		CHECK(err[0] != 0);
		CHECK(!back.present);
	}
	const char *good = "admin ops@site-2 12\t" HEX64 "\n";
	write_file(path, good, strlen(good));
	CHECK_EQ(key_load(path, &back, err, sizeof(err)), 0);
	CHECK_EQ(back.role, KEY_ROLE_ADMIN);
	CHECK_STR(back.name, "ops@site-2");
	CHECK_EQ(back.gen, 12);
	unlink(path);
	CHECK_STR(key_role_name(KEY_ROLE_ADMIN), "admin");
	CHECK_EQ(key_role_parse("client"), KEY_ROLE_CLIENT);
	CHECK_EQ(key_role_parse("root"), -1);
}

static void test_keytab(void)
{
	struct keytab *t = keytab_create();
	struct keytab_entry e = {.name = "n1", .role = KEY_ROLE_CLIENT, .gen = 2}, got;

	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 2), -EKEYREJECTED); /* unknown */
	CHECK_EQ(keytab_update(t, &e), 1);
	CHECK_EQ(keytab_update(t, &e), 0); /* nothing new */
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 2), 0);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 1), -EKEYEXPIRED);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 3), -EKEYREJECTED);
	CHECK_EQ(keytab_check(t, KEY_ROLE_ADMIN, "n1", 2), -EKEYREJECTED);
	e.revoked = 1;
	CHECK_EQ(keytab_update(t, &e), 1);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 2), -EKEYREVOKED);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 1), -EKEYREVOKED);
	/* an older answer (a pull from before the revocation) does not undo it */
	e.revoked = 0;
	CHECK_EQ(keytab_update(t, &e), 0);
	e.gen = 1;
	CHECK_EQ(keytab_update(t, &e), 0);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 2), -EKEYREVOKED);
	/* a re-issue does */
	e.gen = 3;
	CHECK_EQ(keytab_update(t, &e), 1);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 3), 0);
	CHECK_EQ(keytab_check(t, KEY_ROLE_CLIENT, "n1", 2), -EKEYEXPIRED);
	/* sorted, bounded */
	struct keytab_entry a = {.name = "a", .role = KEY_ROLE_ADMIN, .gen = 1};
	CHECK_EQ(keytab_update(t, &a), 1);
	struct keytab_entry list[4];
	CHECK_EQ(keytab_list(t, list, 4), 2);
	CHECK_STR(list[0].name, "a");
	CHECK_STR(list[1].name, "n1");
	CHECK_EQ(keytab_get(t, "n1", &got), 0);
	CHECK_EQ(got.gen, 3);
	CHECK_EQ(keytab_get(t, "zz", &got), -ENOENT);
	for (int i = 0; i < KEYTAB_MAX; i++) {
		struct keytab_entry x = {.role = KEY_ROLE_CLIENT, .gen = 1};
		snprintf(x.name, sizeof(x.name), "k%04d", i);
		int rc = keytab_update(t, &x);
		CHECK(rc == 1 || (rc == -ENOSPC && i >= KEYTAB_MAX - 2));
	}
	CHECK_EQ(keytab_list(t, list, 4), KEYTAB_MAX);
	keytab_destroy(t);
	keytab_destroy(NULL);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_hmac_kat();
	test_random();
	test_load();
	test_generate();
	test_derive();
	test_keytab();
	rmdir(tmpdir);
	return unit_done();
}
