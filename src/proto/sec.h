/* sec.h - wire security flavours: session keys and sealed frames (wire.h, "wire security").
 *
 * A struct sec_session belongs to one connection on which a flavour above null was
 * negotiated. It holds one AES-256-GCM context per direction, keyed once from the session
 * keys and reused for every frame (only the nonce changes), and each direction's frame
 * number. Sealing and opening are streamed: begin with the frame's header, update with the
 * body and then the bulk in any number of pieces, final with the tag; a frame may be
 * processed in place (privacy encrypts and decrypts in the caller's buffers). Each
 * direction is used by one thread at a time (the caller's lock): a session is not
 * thread-safe, but its tx and rx sides are independent.
 */
#ifndef NACRE_SEC_H
#define NACRE_SEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/key.h"
#include "proto/wire.h"

#define SEC_KEY_LEN 32
#define SEC_SALT_LEN 4
#define SEC_DIR_KEY_LEN (SEC_KEY_LEN + SEC_SALT_LEN) /* HKDF output per direction */

struct sec_session;

/* "null", "integrity", "privacy" ("?" for anything else). */
const char *sec_flavour_name(int sec);
/* Parses a flavour name into *sec (WIRE_SEC_NULL..PRIVACY). Returns 0 or -EINVAL. */
int sec_flavour_parse(const char *name, int *sec);

/* The handshake proof label with the negotiation bound in (wire.h): who is "nacre-server" or
 * "nacre-client", asked is connect_req's sec + 16 * sec_flags. Writes a NUL-terminated
 * string to out (80 bytes are enough). */
void sec_proof_label(char *out, size_t len, const char *who, uint64_t req_features,
		     uint64_t rep_features, int asked, int chosen);

/* The two directions' key material of a connection with flavour sec, from the key the peer
 * proved and both nonces: c2s and s2c are SEC_DIR_KEY_LEN bytes each. Returns 0 or a
 * negative error (key_hkdf_sha256). */
int sec_derive(const struct nacre_key *key, const uint8_t cnonce[WIRE_NONCE_LEN],
	       const uint8_t snonce[WIRE_NONCE_LEN], int sec, uint8_t c2s[SEC_DIR_KEY_LEN],
	       uint8_t s2c[SEC_DIR_KEY_LEN]);

/* A session of flavour sec (INTEGRITY or PRIVACY) for one side of a connection: the server
 * side sends with s2c and receives with c2s, the client the other way round. *out is owned
 * by the caller (sec_session_destroy). Returns 0, -EINVAL (sec) or -ENOMEM/-EIO. */
int sec_session_create(int sec, int server_side, const uint8_t c2s[SEC_DIR_KEY_LEN],
		       const uint8_t s2c[SEC_DIR_KEY_LEN], struct sec_session **out);
/* sec_derive + sec_session_create, wiping the key material. */
int sec_session_open(const struct nacre_key *key, const uint8_t cnonce[WIRE_NONCE_LEN],
		     const uint8_t snonce[WIRE_NONCE_LEN], int sec, int server_side,
		     struct sec_session **out);
/* Wipes and frees s. NULL is fine. */
void sec_session_destroy(struct sec_session *s);
/* The session's flavour: WIRE_SEC_INTEGRITY or WIRE_SEC_PRIVACY. */
int sec_session_flavour(const struct sec_session *s);
/* Whether body and bulk are encrypted (privacy). */
int sec_session_encrypts(const struct sec_session *s);

/* ---- sending: one frame at a time ---- */
/* Starts the next frame (takes the next frame number) with its encoded header. 0 or -EIO. */
int sec_seal_begin(struct sec_session *s, const uint8_t hdr[WIRE_HDR_LEN]);
/* Body or bulk bytes in order: integrity authenticates in and copies nothing (out may be
 * NULL); privacy writes n bytes of ciphertext to out (out == in is fine). 0 or -EIO. */
int sec_seal_update(struct sec_session *s, const uint8_t *in, uint8_t *out, size_t n);
/* Ends the frame: the tag to send after it. 0 or -EIO. */
int sec_seal_final(struct sec_session *s, uint8_t tag[WIRE_TAG_LEN]);
/* A buffer of SEC_SEAL_BUF bytes owned by the session's sending side, for a sender that
 * cannot encrypt in place (its bytes are borrowed): allocated on first use, freed with the
 * session. NULL if out of memory. */
#define SEC_SEAL_BUF (WIRE_BODY_BIG_MAX + 256u * 1024u)
uint8_t *sec_seal_buf(struct sec_session *s);

/* ---- receiving ---- */
/* As the sealing functions; update decrypts in place under privacy. final returns 0 when the
 * tag matches, else -EBADMSG: the frame was altered, injected, replayed or reordered (the
 * connection must close; bytes already handed to update are garbage). */
int sec_open_begin(struct sec_session *s, const uint8_t hdr[WIRE_HDR_LEN]);
int sec_open_update(struct sec_session *s, uint8_t *buf, size_t n);
int sec_open_final(struct sec_session *s, const uint8_t tag[WIRE_TAG_LEN]);

#endif
