/* sec.c - session keys (HKDF-SHA256) and AES-256-GCM sealing of frames (see sec.h). */
#include "proto/sec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define GCM_IV_LEN 12

struct sec_dir {
	EVP_CIPHER_CTX *ctx; /* keyed once; each frame sets a new nonce */
	uint8_t iv[GCM_IV_LEN]; /* salt || frame number (big-endian) */
	uint64_t seq;        /* number of the next frame */
	int enc;             /* 1: sealing side */
};

struct sec_session {
	int sec;
	struct sec_dir tx, rx;
	uint8_t *seal_buf; /* SEC_SEAL_BUF bytes, sending side */
};

const char *sec_flavour_name(int sec)
{
	switch (sec) {
	case WIRE_SEC_NULL:
		return "null";
	case WIRE_SEC_INTEGRITY:
		return "integrity";
	case WIRE_SEC_PRIVACY:
		return "privacy";
	default:
		return "?";
	}
}

int sec_flavour_parse(const char *name, int *sec)
{
	for (int f = WIRE_SEC_NULL; f <= WIRE_SEC_MAX_; f++) {
		if (strcmp(name, sec_flavour_name(f)) == 0) {
			*sec = f;
			return 0;
		}
	}
	return -EINVAL;
}

void sec_proof_label(char *out, size_t len, const char *who, uint64_t req_features,
		     uint64_t rep_features, int asked, int chosen)
{
	snprintf(out, len, "%s f=%llx/%llx sec=%d/%d", who, (unsigned long long)req_features,
		 (unsigned long long)rep_features, asked, chosen);
}

int sec_derive(const struct nacre_key *key, const uint8_t cnonce[WIRE_NONCE_LEN],
	       const uint8_t snonce[WIRE_NONCE_LEN], int sec, uint8_t c2s[SEC_DIR_KEY_LEN],
	       uint8_t s2c[SEC_DIR_KEY_LEN])
{
	uint8_t salt[2 * WIRE_NONCE_LEN];
	char info[32];
	int n, rc;

	if (!key || !key->present)
		return -EINVAL;
	memcpy(salt, cnonce, WIRE_NONCE_LEN);
	memcpy(salt + WIRE_NONCE_LEN, snonce, WIRE_NONCE_LEN);
	n = snprintf(info, sizeof(info), "nacre-sec c2s %d", sec);
	rc = key_hkdf_sha256(key->bytes, key->len, salt, sizeof(salt), (const uint8_t *)info,
			     (size_t)n, c2s, SEC_DIR_KEY_LEN);
	if (rc == 0) {
		n = snprintf(info, sizeof(info), "nacre-sec s2c %d", sec);
		rc = key_hkdf_sha256(key->bytes, key->len, salt, sizeof(salt),
				     (const uint8_t *)info, (size_t)n, s2c, SEC_DIR_KEY_LEN);
	}
	if (rc < 0) {
		OPENSSL_cleanse(c2s, SEC_DIR_KEY_LEN);
		OPENSSL_cleanse(s2c, SEC_DIR_KEY_LEN);
	}
	return rc;
}

static int dir_init(struct sec_dir *d, int enc, const uint8_t km[SEC_DIR_KEY_LEN])
{
	d->enc = enc;
	d->seq = 0;
	memset(d->iv, 0, sizeof(d->iv));
	memcpy(d->iv, km + SEC_KEY_LEN, SEC_SALT_LEN);
	d->ctx = EVP_CIPHER_CTX_new();
	if (!d->ctx)
		return -ENOMEM;
	/* The key schedule is computed here once; every frame only sets its nonce. */
	if (EVP_CipherInit_ex(d->ctx, EVP_aes_256_gcm(), NULL, km, d->iv, enc) <= 0)
		return -EIO;
	return 0;
}

int sec_session_create(int sec, int server_side, const uint8_t c2s[SEC_DIR_KEY_LEN],
		       const uint8_t s2c[SEC_DIR_KEY_LEN], struct sec_session **out)
{
	struct sec_session *s;
	int rc;

	*out = NULL;
	if (sec != WIRE_SEC_INTEGRITY && sec != WIRE_SEC_PRIVACY)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->sec = sec;
	rc = dir_init(&s->tx, 1, server_side ? s2c : c2s);
	if (rc == 0)
		rc = dir_init(&s->rx, 0, server_side ? c2s : s2c);
	if (rc < 0) {
		sec_session_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

int sec_session_open(const struct nacre_key *key, const uint8_t cnonce[WIRE_NONCE_LEN],
		     const uint8_t snonce[WIRE_NONCE_LEN], int sec, int server_side,
		     struct sec_session **out)
{
	uint8_t c2s[SEC_DIR_KEY_LEN], s2c[SEC_DIR_KEY_LEN];
	int rc = sec_derive(key, cnonce, snonce, sec, c2s, s2c);

	*out = NULL;
	if (rc == 0)
		rc = sec_session_create(sec, server_side, c2s, s2c, out);
	OPENSSL_cleanse(c2s, sizeof(c2s));
	OPENSSL_cleanse(s2c, sizeof(s2c));
	return rc;
}

void sec_session_destroy(struct sec_session *s)
{
	if (!s)
		return;
	EVP_CIPHER_CTX_free(s->tx.ctx); /* wipes the key schedule */
	EVP_CIPHER_CTX_free(s->rx.ctx);
	free(s->seal_buf); /* ciphertext only */
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

int sec_session_flavour(const struct sec_session *s)
{
	return s->sec;
}

int sec_session_encrypts(const struct sec_session *s)
{
	return s->sec == WIRE_SEC_PRIVACY;
}

/* Sets the next frame's nonce and feeds the header as additional data. */
static int dir_begin(struct sec_dir *d, const uint8_t hdr[WIRE_HDR_LEN])
{
	uint64_t seq = d->seq++;
	int outl;

	for (int i = 0; i < 8; i++)
		d->iv[SEC_SALT_LEN + i] = (uint8_t)(seq >> (56 - 8 * i));
	if (EVP_CipherInit_ex(d->ctx, NULL, NULL, NULL, d->iv, d->enc) <= 0 ||
	    EVP_CipherUpdate(d->ctx, NULL, &outl, hdr, WIRE_HDR_LEN) <= 0)
		return -EIO;
	return 0;
}

/* Integrity: n more bytes of additional data; privacy: n bytes through the cipher. */
static int dir_update(const struct sec_session *s, struct sec_dir *d, const uint8_t *in,
		      uint8_t *out, size_t n)
{
	while (n > 0) {
		int chunk = n > (size_t)INT_MAX / 2 ? INT_MAX / 2 : (int)n;
		int outl;

		if (s->sec == WIRE_SEC_PRIVACY) {
			if (EVP_CipherUpdate(d->ctx, out, &outl, in, chunk) <= 0 || outl != chunk)
				return -EIO;
			out += chunk;
		} else if (EVP_CipherUpdate(d->ctx, NULL, &outl, in, chunk) <= 0) {
			return -EIO;
		}
		in += chunk;
		n -= (size_t)chunk;
	}
	return 0;
}

int sec_seal_begin(struct sec_session *s, const uint8_t hdr[WIRE_HDR_LEN])
{
	return dir_begin(&s->tx, hdr);
}

int sec_seal_update(struct sec_session *s, const uint8_t *in, uint8_t *out, size_t n)
{
	return dir_update(s, &s->tx, in, out, n);
}

int sec_seal_final(struct sec_session *s, uint8_t tag[WIRE_TAG_LEN])
{
	uint8_t none[16];
	int outl;

	if (EVP_CipherFinal_ex(s->tx.ctx, none, &outl) <= 0 ||
	    EVP_CIPHER_CTX_ctrl(s->tx.ctx, EVP_CTRL_GCM_GET_TAG, WIRE_TAG_LEN, tag) <= 0)
		return -EIO;
	return 0;
}

uint8_t *sec_seal_buf(struct sec_session *s)
{
	if (!s->seal_buf)
		s->seal_buf = malloc(SEC_SEAL_BUF);
	return s->seal_buf;
}

int sec_open_begin(struct sec_session *s, const uint8_t hdr[WIRE_HDR_LEN])
{
	return dir_begin(&s->rx, hdr);
}

int sec_open_update(struct sec_session *s, uint8_t *buf, size_t n)
{
	return dir_update(s, &s->rx, buf, buf, n);
}

int sec_open_final(struct sec_session *s, const uint8_t tag[WIRE_TAG_LEN])
{
	uint8_t none[16];
	int outl;

	if (EVP_CIPHER_CTX_ctrl(s->rx.ctx, EVP_CTRL_GCM_SET_TAG, WIRE_TAG_LEN, (void *)tag) <= 0)
		return -EIO;
	return EVP_CipherFinal_ex(s->rx.ctx, none, &outl) > 0 ? 0 : -EBADMSG;
}
