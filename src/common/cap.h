/* cap.h - object capabilities: the MACs the MDS mints and the OSSes verify, so an OSS
 * serves an object only to a client the MDS allowed (docs/security.md, "Object
 * capabilities").
 *
 * The capability key is derived from the cluster key with HKDF-SHA256 and the label
 * "nacre-capability": every server holding the cluster key derives the same one, so a
 * capability survives an MDS or OSS restart. A capability names an object scope (a FID, its
 * layout generation, one stripe or all of them), rights, the client it was issued to (the
 * session id the client gives in CONNECT) and an expiry (seconds since the epoch), and is
 * HMAC-SHA256(capkey, those fields) truncated to CAP_MAC_LEN bytes. A list capability (the
 * MDS's destroy batches) covers exactly the objects of one request instead of one FID.
 *
 * Everything here is pure computation: thread-safe, no allocation.
 */
#ifndef NACRE_CAP_H
#define NACRE_CAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/key.h"
#include "nacre/nacre_types.h"

#define CAP_MAC_LEN 16
#define CAP_KEY_LEN 32
#define CAP_STRIPE_ALL UINT32_MAX /* a capability for every stripe of a file */

/* Rights; the values are on the wire (wire_cap.rights). */
enum {
	CAP_READ = 1u << 0,    /* OST_READ, OST_GETATTR, OST_SYNC, OST_SEEK */
	CAP_WRITE = 1u << 1,   /* OST_WRITE, OST_GETATTR, OST_SYNC, OST_FALLOCATE, OST_SEEK */
	CAP_PUNCH = 1u << 2,   /* OST_PUNCH (the MDS's truncate) */
	CAP_DESTROY = 1u << 3, /* OST_DESTROY, OST_DESTROY_BATCH (the MDS's destroy log) */
	CAP_RIGHTS_ALL = 0xfu,
};

struct cap_key {
	int present; /* 0: derived from no key; mints MACs that never verify */
	uint8_t bytes[CAP_KEY_LEN];
	/* HMAC's inner and outer SHA-256 states with the key absorbed (EVP_MD_CTX), so a MAC
	 * costs two short digests; NULL: computed the slow way. Made by cap_key_derive and
	 * kept for the process's life: copies of the struct share them, read-only. */
	void *inner, *outer;
};

/* Derives the capability key from the cluster key. Returns 0, or -EIO if OpenSSL failed
 * (out is then not present). */
int cap_key_derive(const struct nacre_key *cluster, struct cap_key *out);
/* Frees what cap_key_derive made and wipes k; copies of k must no longer be used. */
void cap_key_fini(struct cap_key *k);

/* The MAC of a capability for stripe (or CAP_STRIPE_ALL) of fid at layout generation gen.
 * Thread-safe. */
void cap_mint(const struct cap_key *k, const struct nacre_fid *fid, uint32_t gen,
	      uint32_t stripe, uint32_t rights, uint64_t client, uint64_t expiry,
	      uint8_t mac[CAP_MAC_LEN]);
/* The MAC of a capability for the objects of one request to OST ost_idx: objs is the
 * encoded list (len bytes) exactly as it goes on the wire. Thread-safe. */
void cap_mint_list(const struct cap_key *k, uint32_t ost_idx, const void *objs, size_t len,
		   uint32_t rights, uint64_t client, uint64_t expiry, uint8_t mac[CAP_MAC_LEN]);
/* Constant-time compare of two MACs; 1 if equal. */
int cap_mac_eq(const uint8_t a[CAP_MAC_LEN], const uint8_t b[CAP_MAC_LEN]);

/* "read,write" for logs, into buf (at least 32 bytes); "none" for 0. Returns buf. */
const char *cap_rights_str(uint32_t rights, char *buf, size_t len);

#endif
