/* cap.c - object capability MACs (see cap.h).
 *
 * MAC input, little-endian, fixed size so that no two scopes encode alike:
 *   object: "nacre-cap-obj1" fid(u64 seq, u32 oid, u32 ver) u32 gen u32 stripe
 *           u32 rights u64 client u64 expiry
 *   list:   "nacre-cap-lst1" u32 ost_idx SHA-256(objs) u32 rights u64 client u64 expiry
 */
#include "common/cap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/sha.h>

#define CAP_LABEL "nacre-capability"
#define TAG_OBJ "nacre-cap-obj1"
#define TAG_LIST "nacre-cap-lst1"
#define TAG_LEN 14

static size_t put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return 4;
}

static size_t put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return 8;
}

/* The HMAC-SHA256 pads absorbed once (RFC 2104): a MAC is then a copy of each state and
 * two short digests instead of a key setup per call. On failure leaves them NULL. */
static void precompute(struct cap_key *k)
{
	uint8_t ipad[64], opad[64];
	const EVP_MD *md = EVP_sha256();
	EVP_MD_CTX *in = EVP_MD_CTX_new(), *out = EVP_MD_CTX_new();

	memset(ipad, 0x36, sizeof(ipad));
	memset(opad, 0x5c, sizeof(opad));
	for (int i = 0; i < CAP_KEY_LEN; i++) {
		ipad[i] ^= k->bytes[i];
		opad[i] ^= k->bytes[i];
	}
	if (in && out && EVP_DigestInit_ex(in, md, NULL) == 1 &&
	    EVP_DigestUpdate(in, ipad, sizeof(ipad)) == 1 &&
	    EVP_DigestInit_ex(out, md, NULL) == 1 &&
	    EVP_DigestUpdate(out, opad, sizeof(opad)) == 1) {
		k->inner = in;
		k->outer = out;
	} else {
		EVP_MD_CTX_free(in);
		EVP_MD_CTX_free(out);
	}
	OPENSSL_cleanse(ipad, sizeof(ipad));
	OPENSSL_cleanse(opad, sizeof(opad));
}

/* HMAC-SHA256(k, msg) from the precomputed states; 0, or -1 if OpenSSL failed. */
static int fast_hmac(const struct cap_key *k, const uint8_t *msg, size_t len, uint8_t out[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	uint8_t ih[32];
	unsigned int n = 0;
	int ok = c && EVP_MD_CTX_copy_ex(c, k->inner) == 1 && EVP_DigestUpdate(c, msg, len) == 1 &&
		 EVP_DigestFinal_ex(c, ih, &n) == 1 && EVP_MD_CTX_copy_ex(c, k->outer) == 1 &&
		 EVP_DigestUpdate(c, ih, sizeof(ih)) == 1 && EVP_DigestFinal_ex(c, out, &n) == 1;
	EVP_MD_CTX_free(c);
	OPENSSL_cleanse(ih, sizeof(ih));
	return ok ? 0 : -1;
}

int cap_key_derive(const struct nacre_key *cluster, struct cap_key *out)
{
	static const uint8_t nokey[1];
	EVP_KDF *kdf;
	EVP_KDF_CTX *kctx = NULL;
	OSSL_PARAM params[4];
	int rc = -EIO;

	memset(out, 0, sizeof(*out));
	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (!kdf)
		return -EIO;
	kctx = EVP_KDF_CTX_new(kdf);
	EVP_KDF_free(kdf);
	if (!kctx)
		return -EIO;
	int have = cluster && cluster->present;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_octet_string(
		OSSL_KDF_PARAM_KEY, (void *)(have ? cluster->bytes : nokey), have ? cluster->len : 1);
	params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)CAP_LABEL,
						      strlen(CAP_LABEL));
	params[3] = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, out->bytes, CAP_KEY_LEN, params) == 1) {
		out->present = have;
		precompute(out);
		rc = 0;
	} else {
		OPENSSL_cleanse(out, sizeof(*out));
	}
	EVP_KDF_CTX_free(kctx);
	return rc;
}

void cap_key_fini(struct cap_key *k)
{
	if (!k)
		return;
	EVP_MD_CTX_free(k->inner);
	EVP_MD_CTX_free(k->outer);
	OPENSSL_cleanse(k, sizeof(*k));
}

/* mac = HMAC-SHA256(k, msg) truncated; an absent key gives a MAC nobody verifies. */
static void mac_of(const struct cap_key *k, const uint8_t *msg, size_t len,
		   uint8_t mac[CAP_MAC_LEN])
{
	uint8_t full[32];
	unsigned int outlen = sizeof(full);

	if (!k || !k->present ||
	    (k->inner ? fast_hmac(k, msg, len, full) != 0
		      : !HMAC(EVP_sha256(), k->bytes, CAP_KEY_LEN, msg, len, full, &outlen))) {
		if (key_random(mac, CAP_MAC_LEN) < 0)
			memset(mac, 0x5a, CAP_MAC_LEN);
		return;
	}
	memcpy(mac, full, CAP_MAC_LEN);
	OPENSSL_cleanse(full, sizeof(full));
}

void cap_mint(const struct cap_key *k, const struct nacre_fid *fid, uint32_t gen,
	      uint32_t stripe, uint32_t rights, uint64_t client, uint64_t expiry,
	      uint8_t mac[CAP_MAC_LEN])
{
	uint8_t msg[TAG_LEN + 16 + 4 + 4 + 4 + 8 + 8];
	size_t n = 0;

	memcpy(msg, TAG_OBJ, TAG_LEN);
	n += TAG_LEN;
	n += put64(msg + n, fid->seq);
	n += put32(msg + n, fid->oid);
	n += put32(msg + n, fid->ver);
	n += put32(msg + n, gen);
	n += put32(msg + n, stripe);
	n += put32(msg + n, rights);
	n += put64(msg + n, client);
	n += put64(msg + n, expiry);
	mac_of(k, msg, n, mac);
}

void cap_mint_list(const struct cap_key *k, uint32_t ost_idx, const void *objs, size_t len,
		   uint32_t rights, uint64_t client, uint64_t expiry, uint8_t mac[CAP_MAC_LEN])
{
	uint8_t msg[TAG_LEN + 4 + SHA256_DIGEST_LENGTH + 4 + 8 + 8];
	size_t n = 0;

	memcpy(msg, TAG_LIST, TAG_LEN);
	n += TAG_LEN;
	n += put32(msg + n, ost_idx);
	SHA256(objs, len, msg + n);
	n += SHA256_DIGEST_LENGTH;
	n += put32(msg + n, rights);
	n += put64(msg + n, client);
	n += put64(msg + n, expiry);
	mac_of(k, msg, n, mac);
}

int cap_mac_eq(const uint8_t a[CAP_MAC_LEN], const uint8_t b[CAP_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, CAP_MAC_LEN) == 0;
}

const char *cap_rights_str(uint32_t rights, char *buf, size_t len)
{
	static const char *names[] = {"read", "write", "punch", "destroy"};
	size_t off = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (unsigned i = 0; i < 4; i++) {
		if (!(rights & (1u << i)))
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i]);
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
	if (off == 0)
		snprintf(buf, len, "none");
	return buf;
}
