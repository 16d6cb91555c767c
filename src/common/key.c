/* key.c - keys: loading, generating, deriving client keys, HMAC-SHA256 proofs, HKDF-SHA256. */
#include "common/key.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

#include "common/secret_file.h"

#define KEY_HEX_MIN 64
#define KEY_HEX_MAX (2 * KEY_MAX_BYTES)
#define KEY_GEN_BYTES 32

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void set_err(char *err, size_t err_len, const char *path, const char *what)
{
	if (err && err_len > 0)
		snprintf(err, err_len, "key file %s: %s", path, what);
}

/* Parses n hex digits of text into key->bytes. Returns 0 or -EINVAL with a sentence. */
static int parse_hex(const char *text, size_t n, struct nacre_key *key, const char *path,
		     char *err, size_t err_len)
{
	if (n < KEY_HEX_MIN || n > KEY_HEX_MAX || n % 2 != 0) {
		set_err(err, err_len, path,
			"expected an even number of 64 to 256 hex digits (make one with "
			"`nacre up`, or `openssl rand -hex 32 > FILE`; a client key file is "
			"one line `client NAME GEN HEX` written by `nacre key issue`)");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(text[i]), lo = hexval(text[i + 1]);

		if (hi < 0 || lo < 0) {
			set_err(err, err_len, path, "contains a character that is not a hex digit");
			return -EINVAL;
		}
		key->bytes[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	key->len = n / 2;
	return 0;
}

/* "ROLE NAME GEN HEX": a client or admin key. Returns 0 or -EINVAL with a sentence. */
static int parse_line(char *text, size_t n, struct nacre_key *key, const char *path,
		      char *err, size_t err_len)
{
	char *f[4], *end = NULL, *t = text;
	int nf = 0;

	text[n] = '\0';
	/* Fields separated by blanks; a fifth field is an error. */
	while (*t) {
		while (*t == ' ' || *t == '\t')
			*t++ = '\0';
		if (!*t)
			break;
		if (nf == 4) {
			nf++;
			break;
		}
		f[nf++] = t;
		while (*t && *t != ' ' && *t != '\t')
			t++;
	}
	if (nf != 4) {
		set_err(err, err_len, path,
			"expected one line `ROLE NAME GEN HEX` (as `nacre key issue` writes) or "
			"the bare hex of the cluster key");
		return -EINVAL;
	}
	key->role = key_role_parse(f[0]);
	if (key->role != KEY_ROLE_CLIENT && key->role != KEY_ROLE_ADMIN) {
		set_err(err, err_len, path, "the role must be client or admin");
		return -EINVAL;
	}
	if (!key_name_valid(f[1])) {
		set_err(err, err_len, path,
			"the key name must be 1 to 64 letters, digits or ._-@:");
		return -EINVAL;
	}
	errno = 0;
	unsigned long long g = strtoull(f[2], &end, 10);
	if (errno || !end || *end || f[2][0] == '-' || g == 0) {
		set_err(err, err_len, path, "the generation must be a positive number");
		return -EINVAL;
	}
	snprintf(key->name, sizeof(key->name), "%s", f[1]);
	key->gen = g;
	return parse_hex(f[3], strlen(f[3]), key, path, err, err_len);
}

int key_load(const char *path, struct nacre_key *key, char *err, size_t err_len)
{
	/* Room for the longest key line, a line ending and a little slack to detect longer. */
	char buf[KEY_HEX_MAX + KEY_NAME_MAX + 48];
	size_t n = 0;
	int fd, rc = 0;

	memset(key, 0, sizeof(*key));
	fd = secret_file_open(path, "key file", err, err_len);
	if (fd < 0)
		return fd;
	while (n < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			set_err(err, err_len, path, "read failed");
			goto out_close;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	/* An optional line ending (or trailing blanks) after the hex digits. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
			 buf[n - 1] == '\t'))
		n--;
	if (memchr(buf, ' ', n) || memchr(buf, '\t', n))
		rc = parse_line(buf, n, key, path, err, err_len);
	else
		rc = parse_hex(buf, n, key, path, err, err_len);
	if (rc == 0)
		key->present = 1;
	else
		key_wipe(key);
out_close:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return rc;
}

static const char *const role_names[KEY_ROLE_MAX_] = {"server", "client", "admin"};

const char *key_role_name(int role)
{
	return role >= 0 && role < KEY_ROLE_MAX_ ? role_names[role] : "?";
}

int key_role_parse(const char *s)
{
	for (int i = 0; i < KEY_ROLE_MAX_; i++)
		if (s && strcmp(s, role_names[i]) == 0)
			return i;
	return -1;
}

int key_derive(const struct nacre_key *cluster, int role, const char *name, uint64_t gen,
	       struct nacre_key *out)
{
	char label[KEY_NAME_MAX + 64];
	unsigned int outlen = 32;
	int n;

	memset(out, 0, sizeof(*out));
	if (!cluster || !cluster->present || cluster->role != KEY_ROLE_SERVER ||
	    (role != KEY_ROLE_CLIENT && role != KEY_ROLE_ADMIN) || !key_name_valid(name) ||
	    gen == 0)
		return -EINVAL;
	n = snprintf(label, sizeof(label), "nacre-key|%s|%s|%" PRIu64, key_role_name(role), name,
		     gen);
	if (!HMAC(EVP_sha256(), cluster->bytes, (int)cluster->len, (const uint8_t *)label,
		  (size_t)n, out->bytes, &outlen))
		return -EIO;
	out->len = outlen;
	out->present = 1;
	out->role = role;
	out->gen = gen;
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}

int key_write(const char *path, const struct nacre_key *key)
{
	static const char hex[] = "0123456789abcdef";
	char text[KEY_HEX_MAX + KEY_NAME_MAX + 48];
	size_t off = 0, len;
	int fd, rc = 0;

	if (!key->present || key->role == KEY_ROLE_SERVER || key->len > KEY_MAX_BYTES)
		return -EINVAL;
	len = (size_t)snprintf(text, sizeof(text), "%s %s %" PRIu64 " ", key_role_name(key->role),
			       key->name, key->gen);
	for (size_t i = 0; i < key->len && len + 3 < sizeof(text); i++) {
		text[len++] = hex[key->bytes[i] >> 4];
		text[len++] = hex[key->bytes[i] & 0xf];
	}
	text[len++] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out_wipe;
	}
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc)
		unlink(path);
out_wipe:
	OPENSSL_cleanse(text, sizeof(text));
	return rc;
}

void key_wipe(struct nacre_key *key)
{
	if (key)
		OPENSSL_cleanse(key, sizeof(*key));
}

int key_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int key_generate(const char *path)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[KEY_GEN_BYTES];
	char text[2 * KEY_GEN_BYTES + 1];
	size_t off = 0;
	int fd, rc;

	rc = key_random(raw, sizeof(raw));
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < sizeof(raw); i++) {
		text[2 * i] = hex[raw[i] >> 4];
		text[2 * i + 1] = hex[raw[i] & 0xf];
	}
	text[sizeof(text) - 1] = '\n';
	OPENSSL_cleanse(raw, sizeof(raw));

	/* O_EXCL: never overwrite a key (other nodes may be using it). */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out_wipe;
	}
	while (off < sizeof(text)) {
		ssize_t w = write(fd, text + off, sizeof(text) - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out_unlink;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		rc = -errno;
		goto out_unlink;
	}
	if (close(fd) < 0) {
		rc = -errno;
		fd = -1;
		goto out_unlink;
	}
	rc = 0;
	goto out_wipe;

out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(path);
out_wipe:
	OPENSSL_cleanse(text, sizeof(text));
	return rc;
}

void key_proof(const struct nacre_key *key, const char *label, const uint8_t *a,
	       const uint8_t *b, size_t nonce_len, uint8_t out[32])
{
	/* Labels are short constants and nonces 16 bytes: a stack buffer almost always fits. */
	uint8_t small[256];
	uint8_t *msg = small;
	size_t llen = strlen(label);
	size_t mlen = llen + 2 * nonce_len;
	static const uint8_t nokey[1];
	unsigned int outlen = 32;

	if (mlen > sizeof(small)) {
		msg = malloc(mlen);
		if (!msg) {
			/* Cannot compute it: a random proof is one no peer accepts. */
			if (key_random(out, 32) < 0)
				memset(out, 0xa5, 32);
			return;
		}
	}
	memcpy(msg, label, llen);
	memcpy(msg + llen, a, nonce_len);
	memcpy(msg + llen + nonce_len, b, nonce_len);

	/* An absent key is HMAC with an empty key: no keyed peer (>= 32 key bytes) matches. */
	if (!HMAC(EVP_sha256(), key && key->present ? key->bytes : nokey,
		  key && key->present ? (int)key->len : 0, msg, mlen, out, &outlen)) {
		if (key_random(out, 32) < 0)
			memset(out, 0xa5, 32);
	}
	if (msg != small)
		free(msg);
}

int key_proof_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

int key_hkdf_sha256(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
		    const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len)
{
	static const uint8_t empty[1];
	EVP_PKEY_CTX *pc;
	size_t len = out_len;
	int rc = -EIO;

	if (out_len == 0 || out_len > 255 * 32)
		return -EINVAL;
	pc = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	if (!pc)
		return -ENOMEM;
	/* OpenSSL refuses a NULL buffer even for an empty salt or info. */
	if (EVP_PKEY_derive_init(pc) > 0 &&
	    EVP_PKEY_CTX_set_hkdf_md(pc, EVP_sha256()) > 0 &&
	    EVP_PKEY_CTX_set1_hkdf_salt(pc, salt_len ? salt : empty, (int)salt_len) > 0 &&
	    EVP_PKEY_CTX_set1_hkdf_key(pc, ikm_len ? ikm : empty, (int)ikm_len) > 0 &&
	    (info_len == 0 || EVP_PKEY_CTX_add1_hkdf_info(pc, info, (int)info_len) > 0) &&
	    EVP_PKEY_derive(pc, out, &len) > 0 && len == out_len)
		rc = 0;
	EVP_PKEY_CTX_free(pc);
	if (rc < 0)
		OPENSSL_cleanse(out, out_len);
	return rc;
}
