/* test_sec.c - HKDF-SHA256 (RFC 5869 test case 1), the session keys and the AES-256-GCM
 * sealing of frames against golden vectors computed independently (Python's hmac and the
 * cryptography package's AESGCM), and the failures a relay causes: an altered byte, a
 * replayed, reordered or injected frame. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/key.h"
#include "proto/sec.h"
#include "unit.h"

static void test_hkdf_rfc5869_case1(void)
{
	uint8_t ikm[22], salt[13], info[10], okm[42];
	static const uint8_t expect[42] = {
		0x3c, 0xb2, 0x5f, 0x25, 0xfa, 0xac, 0xd5, 0x7a, 0x90, 0x43, 0x4f, 0x64, 0xd0, 0x36,
		0x2f, 0x2a, 0x2d, 0x2d, 0x0a, 0x90, 0xcf, 0x1a, 0x5a, 0x4c, 0x5d, 0xb0, 0x2d, 0x56,
		0xec, 0xc4, 0xc5, 0xbf, 0x34, 0x00, 0x72, 0x08, 0xd5, 0xb8, 0x87, 0x18, 0x58, 0x65,
	};

	memset(ikm, 0x0b, sizeof(ikm));
	for (int i = 0; i < 13; i++)
		salt[i] = (uint8_t)i;
	for (int i = 0; i < 10; i++)
		info[i] = (uint8_t)(0xf0 + i);
	CHECK_EQ(key_hkdf_sha256(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm,
				 sizeof(okm)),
		 0);
	CHECK_MEM(okm, expect, sizeof(expect));
	CHECK_EQ(key_hkdf_sha256(ikm, sizeof(ikm), salt, sizeof(salt), info, sizeof(info), okm,
				 255 * 32 + 1),
		 -EINVAL);
}

/* The fixed inputs of the golden vectors. */
static struct nacre_key gkey;
static uint8_t gcn[WIRE_NONCE_LEN], gsn[WIRE_NONCE_LEN], ghdr[WIRE_HDR_LEN];
static const char gbody[] = "hello, body";             /* 11 bytes */
static const char gbulk[] = "bulk bytes of the frame"; /* 23 bytes */

static void golden_inputs(void)
{
	memset(&gkey, 0, sizeof(gkey));
	gkey.present = 1;
	gkey.len = 32;
	for (int i = 0; i < 32; i++)
		gkey.bytes[i] = (uint8_t)i;
	for (int i = 0; i < WIRE_NONCE_LEN; i++) {
		gcn[i] = (uint8_t)(0x40 + i);
		gsn[i] = (uint8_t)(0x80 + i);
	}
	for (int i = 0; i < WIRE_HDR_LEN; i++)
		ghdr[i] = (uint8_t)(0xa0 + i);
}

static void test_derive_golden(void)
{
	static const uint8_t c2s_priv[SEC_DIR_KEY_LEN] = {
		0x6a, 0x65, 0xb1, 0xc3, 0x70, 0xa3, 0x75, 0xd4, 0x05, 0xcf, 0x74, 0x98,
		0xa7, 0xf7, 0xa5, 0x90, 0x7d, 0x2b, 0x62, 0x56, 0xb9, 0xd0, 0xb8, 0xf5,
		0x8a, 0x3b, 0x34, 0x95, 0xa4, 0xef, 0xf3, 0x4e, 0x96, 0x90, 0x78, 0x7d,
	};
	static const uint8_t s2c_priv_head[8] = {0x2e, 0x3f, 0x3f, 0xb8, 0x2a, 0xcc, 0xf5, 0x02};
	uint8_t c2s[SEC_DIR_KEY_LEN], s2c[SEC_DIR_KEY_LEN], c2s_int[SEC_DIR_KEY_LEN];
	struct nacre_key none = {0};

	CHECK_EQ(sec_derive(&gkey, gcn, gsn, WIRE_SEC_PRIVACY, c2s, s2c), 0);
	CHECK_MEM(c2s, c2s_priv, sizeof(c2s_priv));
	CHECK_MEM(s2c, s2c_priv_head, sizeof(s2c_priv_head));
	/* the flavour is in the derivation: integrity's keys are others */
	CHECK_EQ(sec_derive(&gkey, gcn, gsn, WIRE_SEC_INTEGRITY, c2s_int, s2c), 0);
	CHECK(memcmp(c2s, c2s_int, sizeof(c2s)) != 0);
	CHECK_EQ(sec_derive(&none, gcn, gsn, WIRE_SEC_PRIVACY, c2s, s2c), -EINVAL);
}

/* Seals one golden frame on the client side into out (body, bulk, tag). */
static void seal_frame(struct sec_session *s, uint8_t *out)
{
	CHECK_EQ(sec_seal_begin(s, ghdr), 0);
	CHECK_EQ(sec_seal_update(s, (const uint8_t *)gbody, out, 11), 0);
	CHECK_EQ(sec_seal_update(s, (const uint8_t *)gbulk, out + 11, 23), 0);
	CHECK_EQ(sec_seal_final(s, out + 34), 0);
}

/* Opens a frame as seal_frame lays it out; returns sec_open_final's result. */
static int open_frame(struct sec_session *s, const uint8_t *hdr, uint8_t *frame)
{
	CHECK_EQ(sec_open_begin(s, hdr), 0);
	CHECK_EQ(sec_open_update(s, frame, 11), 0);
	CHECK_EQ(sec_open_update(s, frame + 11, 23), 0);
	return sec_open_final(s, frame + 34);
}

static void test_privacy_golden(void)
{
	static const uint8_t frame0[50] = {
		0xa4, 0x95, 0xfa, 0xc8, 0x73, 0x20, 0x6c, 0x98, 0x6d, 0x29, 0x5e, 0xc4, 0xf9,
		0xe2, 0x53, 0x0b, 0x6b, 0x77, 0x88, 0xf1, 0xae, 0xff, 0xf5, 0x0f, 0x2c, 0xf1,
		0x60, 0xab, 0x3e, 0x93, 0x32, 0xd1, 0x64, 0x94, 0x96, 0xc9, 0x47, 0xc0, 0x80,
		0x24, 0x99, 0xd7, 0x21, 0xbb, 0xea, 0x4c, 0xf4, 0xe1, 0xf0, 0x30,
	};
	static const uint8_t frame1[50] = {
		0xb7, 0xad, 0x53, 0xee, 0x38, 0xf4, 0x52, 0x18, 0x77, 0x33, 0x3f, 0x53, 0xb5,
		0x54, 0x4f, 0x7a, 0x2d, 0x45, 0x4a, 0xf8, 0x1e, 0xc5, 0x4b, 0x2b, 0x92, 0x6f,
		0x95, 0xee, 0x14, 0x4b, 0x6b, 0x37, 0x88, 0xcc, 0xf3, 0x8e, 0x42, 0x62, 0x40,
		0x8f, 0x59, 0xcb, 0xaf, 0x3d, 0xaf, 0x17, 0xd8, 0x66, 0x78, 0x8b,
	};
	struct sec_session *cl = NULL, *srv = NULL;
	uint8_t f0[50], f1[50], copy[50];

	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_PRIVACY, 0, &cl), 0);
	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_PRIVACY, 1, &srv), 0);
	if (!cl || !srv)
		goto out;
	CHECK(sec_session_encrypts(cl));
	seal_frame(cl, f0);
	seal_frame(cl, f1); /* the same plaintext as frame 1: another nonce, other bytes */
	CHECK_MEM(f0, frame0, sizeof(frame0));
	CHECK_MEM(f1, frame1, sizeof(frame1));

	/* frame 1 before frame 0 (reordered, or 0 dropped): refused */
	memcpy(copy, f1, sizeof(copy));
	CHECK_EQ(open_frame(srv, ghdr, copy), -EBADMSG);
	sec_session_destroy(srv);
	srv = NULL;
	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_PRIVACY, 1, &srv), 0);
	if (!srv)
		goto out;
	/* in order: decrypted in place */
	memcpy(copy, f0, sizeof(copy));
	CHECK_EQ(open_frame(srv, ghdr, copy), 0);
	CHECK_MEM(copy, gbody, 11);
	CHECK_MEM(copy + 11, gbulk, 23);
	/* frame 0 again (a replay) in frame 1's place: refused */
	memcpy(copy, f0, sizeof(copy));
	CHECK_EQ(open_frame(srv, ghdr, copy), -EBADMSG);
out:
	sec_session_destroy(cl);
	sec_session_destroy(srv);
}

static void test_integrity_golden(void)
{
	static const uint8_t tag0[16] = {0x98, 0xbd, 0xc8, 0xaa, 0x13, 0xf9, 0xb4, 0x4a,
					 0x15, 0xc1, 0x3e, 0x2e, 0x62, 0xca, 0x09, 0xfc};
	static const uint8_t tag1[16] = {0xc3, 0x31, 0x2d, 0xa3, 0xce, 0xb5, 0x4b, 0x87,
					 0x6e, 0xc7, 0x45, 0x95, 0xb7, 0xda, 0xaa, 0x86};
	struct sec_session *cl = NULL, *srv = NULL;
	uint8_t f[50], hdr[WIRE_HDR_LEN];

	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_INTEGRITY, 0, &cl), 0);
	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_INTEGRITY, 1, &srv), 0);
	if (!cl || !srv)
		goto out;
	CHECK(!sec_session_encrypts(cl));
	/* integrity copies nothing: the frame is sent as it is, only the tag is added */
	memcpy(f, gbody, 11);
	memcpy(f + 11, gbulk, 23);
	CHECK_EQ(sec_seal_begin(cl, ghdr), 0);
	CHECK_EQ(sec_seal_update(cl, f, NULL, 34), 0);
	CHECK_EQ(sec_seal_final(cl, f + 34), 0);
	CHECK_MEM(f + 34, tag0, 16);
	CHECK_MEM(f, gbody, 11);
	CHECK_EQ(open_frame(srv, ghdr, f), 0);
	CHECK_MEM(f, gbody, 11);

	/* frame 1: one flipped bit in the bulk, then in the header, is refused */
	seal_frame(cl, f);
	CHECK_MEM(f + 34, tag1, 16);
	f[20] ^= 1;
	CHECK_EQ(open_frame(srv, ghdr, f), -EBADMSG);
	sec_session_destroy(srv);
	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_INTEGRITY, 1, &srv), 0);
	if (!srv)
		goto out;
	memcpy(f, gbody, 11);
	memcpy(f + 11, gbulk, 23);
	memcpy(f + 34, tag0, 16);
	memcpy(hdr, ghdr, sizeof(hdr));
	hdr[7] ^= 0x80;
	CHECK_EQ(open_frame(srv, hdr, f), -EBADMSG);
	/* the server's own direction has other keys: its frames do not open as the client's */
out:
	sec_session_destroy(cl);
	sec_session_destroy(srv);
}

static void test_directions_and_names(void)
{
	struct sec_session *cl = NULL, *cl2 = NULL;
	uint8_t f[50];
	char label[96];
	int sec = -1;

	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_PRIVACY, 0, &cl), 0);
	CHECK_EQ(sec_session_open(&gkey, gcn, gsn, WIRE_SEC_PRIVACY, 0, &cl2), 0);
	if (cl && cl2) {
		/* a client's frame reflected back to a client (s2c keys) does not open */
		seal_frame(cl, f);
		CHECK_EQ(open_frame(cl2, ghdr, f), -EBADMSG);
	}
	sec_session_destroy(cl);
	sec_session_destroy(cl2);
	CHECK_EQ(sec_session_create(WIRE_SEC_NULL, 0, f, f, &cl), -EINVAL);
	CHECK(cl == NULL);
	sec_session_destroy(NULL);

	CHECK_EQ(sec_flavour_parse("integrity", &sec), 0);
	CHECK_EQ(sec, WIRE_SEC_INTEGRITY);
	CHECK_EQ(sec_flavour_parse("Privacy", &sec), -EINVAL);
	CHECK_STR(sec_flavour_name(WIRE_SEC_PRIVACY), "privacy");
	CHECK_STR(sec_flavour_name(7), "?");
	sec_proof_label(label, sizeof(label), "nacre-server", 3, 3, 2 + 16, 2);
	CHECK_STR(label, "nacre-server f=3/3 sec=18/2");
}

int main(void)
{
	golden_inputs();
	test_hkdf_rfc5869_case1();
	test_derive_golden();
	test_privacy_golden();
	test_integrity_golden();
	test_directions_and_names();
	return unit_done();
}
