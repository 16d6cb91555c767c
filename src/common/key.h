/* key.h - the cluster key, the HMAC proofs of the connection handshake, and HKDF for the
 * session keys derived from it (proto/sec.h).
 *
 * A key file holds at least 32 bytes of secret as hex (64+ hex digits, optional newline).
 * Nodes prove they hold the same key with HMAC-SHA256 over both sides' nonces (wire.h). */
#ifndef NACRE_KEY_H
#define NACRE_KEY_H

#include <stddef.h>
#include <stdint.h>

#define KEY_MAX_BYTES 128

struct nacre_key {
	int present; /* 0: no key configured (every handshake with a keyed peer fails) */
	size_t len;
	uint8_t bytes[KEY_MAX_BYTES];
};

/* Loads path. Returns 0, -ENOENT/-EACCES (file), or -EINVAL (not 64..256 hex digits); on
 * error writes a sentence naming the file to err. */
int key_load(const char *path, struct nacre_key *key, char *err, size_t err_len);
/* Writes a new random 32-byte key to path with mode 0600. Returns 0 or -errno. */
int key_generate(const char *path);
/* out = HMAC-SHA256(key, label || a || b) with a and b nonce_len bytes each. An absent key
 * yields a proof no keyed peer accepts. */
void key_proof(const struct nacre_key *key, const char *label, const uint8_t *a,
	       const uint8_t *b, size_t nonce_len, uint8_t out[32]);
/* Fills buf with n random bytes (getrandom). Returns 0 or -errno. */
int key_random(void *buf, size_t n);
/* Constant-time compare; 1 if equal. */
int key_proof_eq(const uint8_t *a, const uint8_t *b, size_t n);
/* HKDF-SHA256 (RFC 5869), extract and expand: out_len bytes (at most 255 * 32) of key
 * material from ikm, salt and info (salt and info may be NULL with length 0). Returns 0,
 * -EINVAL (out_len too long) or -ENOMEM/-EIO (OpenSSL failed; out is then zeroed).
 * Thread-safe. */
int key_hkdf_sha256(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
		    const uint8_t *info, size_t info_len, uint8_t *out, size_t out_len);

#endif
