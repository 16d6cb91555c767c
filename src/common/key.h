/* key.h - keys, the HMAC proofs of the connection handshake, and HKDF for the
 * session keys derived from them (proto/sec.h).
 *
 * Three roles (docs/security.md, "Keys and roles"):
 *   server  the cluster key, held by the MDS, the OSSes and copytool nodes. Its file holds
 *           at least 32 bytes of secret as hex (64+ hex digits, optional newline).
 *   client  a key of one named client, derived from the cluster key, revocable;
 *   admin   the same for an administrator: it may also run admin requests.
 * A client or admin key is HMAC-SHA256(cluster key, "nacre-key|ROLE|NAME|GEN"), so every
 * server checks its proof without a key database; the MDS's key table says which
 * generation of each name is current and which names are revoked. Its file is one line:
 *   ROLE NAME GEN HEX      e.g. "client node17 3 9f2c...". (64 hex digits)
 * Nodes prove they hold the same key with HMAC-SHA256 over both sides' nonces (wire.h). */
#ifndef NACRE_KEY_H
#define NACRE_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define KEY_MAX_BYTES 128
#define KEY_NAME_MAX 64 /* bytes of a client or admin key's name */

enum key_role {
	KEY_ROLE_SERVER = 0,
	KEY_ROLE_CLIENT = 1,
	KEY_ROLE_ADMIN = 2,
	KEY_ROLE_MAX_ = 3,
};

struct nacre_key {
	int present; /* 0: no key configured (every handshake with a keyed peer fails) */
	size_t len;
	uint8_t bytes[KEY_MAX_BYTES];
	int role;                     /* KEY_ROLE_*; a bare-hex file is a server key */
	char name[KEY_NAME_MAX + 1];  /* client and admin keys: whose ("" for a server key) */
	uint64_t gen;                 /* client and admin keys: the generation issued */
};

/* Loads path: a cluster key (bare hex) or a client/admin key line. Returns 0,
 * -ENOENT/-EACCES (file), or -EINVAL (not a key file); on error writes a sentence naming
 * the file to err. */
int key_load(const char *path, struct nacre_key *key, char *err, size_t err_len);
/* Writes a new random 32-byte key to path with mode 0600. Returns 0 or -errno. */
int key_generate(const char *path);
/* out = the key of (role, name, gen) derived from cluster (a server key):
 * HMAC-SHA256(cluster, "nacre-key|ROLE|NAME|GEN"). Returns 0, or -EINVAL when cluster is no
 * server key, role is not client or admin, or name is not a valid key name. */
int key_derive(const struct nacre_key *cluster, int role, const char *name, uint64_t gen,
	       struct nacre_key *out);
/* Writes key (a client or admin key) to path as its one-line file, mode 0600, never over
 * an existing file. Returns 0, -EEXIST, -EINVAL or -errno. */
int key_write(const char *path, const struct nacre_key *key);
/* 1 if name may name a key: 1..KEY_NAME_MAX bytes of letters, digits and "._-@:". */
static inline int key_name_valid(const char *name)
{
	return str_is_key_name(name, KEY_NAME_MAX);
}
/* "server", "client", "admin" ("?" for others). Static string. */
const char *key_role_name(int role);
/* The role named s, or -1. */
int key_role_parse(const char *s);
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
/* Wipes key (OPENSSL_cleanse). NULL is fine. */
void key_wipe(struct nacre_key *key);

#endif
