/* wire_test.h - what the wire protocol's unit tests share: encode/decode/round-trip
 * macros and sample values. Include after unit.h. */
#ifndef NACRE_WIRE_TEST_H
#define NACRE_WIRE_TEST_H

#include <stdlib.h>
#include <sys/stat.h>

#include "proto/cursor.h"
#include "proto/wire.h"

/* Encodes with enc into a fresh dynamic cursor; the caller frees *c. */
#define ENCODE(c, enc, m)                                                                   \
	do {                                                                                \
		wire_cursor_init_dyn((c), WIRE_BODY_BIG_MAX); /* the largest body */       \
		enc((c), (m));                                                              \
		CHECK(wire_cursor_ok(c));                                                   \
	} while (0)

/* Decodes buf/len with dec into out; 1 if ok and everything was consumed. */
#define DECODE_OK(dec, buf, len, out)                                                       \
	({                                                                                  \
		struct wire_cursor r_;                                                      \
		wire_cursor_init_read(&r_, (buf), (len));                                   \
		dec(&r_, (out));                                                            \
		wire_cursor_ok(&r_) && wire_cursor_left(&r_) == 0;                          \
	})

/* Round trip: encode, decode equal, and every shorter prefix fails to decode. */
#define ROUNDTRIP(type, m)                                                                  \
	do {                                                                                \
		struct wire_cursor c_;                                                      \
		struct wire_##type *d_ = malloc(sizeof(*d_));                               \
		size_t n_, bad_ = 0;                                                        \
		ENCODE(&c_, wire_##type##_encode, (m));                                     \
		n_ = wire_cursor_pos(&c_);                                                  \
		CHECK(DECODE_OK(wire_##type##_decode, c_.buf, n_, d_));                     \
		fixup_##type(d_, (m));                                                      \
		CHECK_MEM(d_, (m), sizeof(*d_));                                            \
		for (size_t k_ = 0; k_ < n_; k_++)                                          \
			bad_ += DECODE_OK(wire_##type##_decode, c_.buf, k_, d_);            \
		CHECK_EQ(bad_, 0);                                                          \
		free(d_);                                                                   \
		wire_cursor_fini(&c_);                                                      \
	} while (0)

/* Pointers into the receive buffer differ by nature: compare contents, then align them. */
#define NOFIX(type)                                                                         \
	static void fixup_##type(struct wire_##type *d, const struct wire_##type *m)        \
	{                                                                                   \
		(void)d;                                                                    \
		(void)m;                                                                    \
	}
#define G_CAP                                                                               \
	0x00, 0x5e, 0x53, 0x69, 0x00, 0x00, 0x00, 0x00, /* expiry 1767071232 */             \
	0x03, 0x00, 0x00, 0x00,                         /* rights read,write */             \
	0xff, 0xff, 0xff, 0xff,                         /* stripe: all */                   \
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, /* mac */                           \
	0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf
static inline void sample_cap(struct wire_cap *cap)
{
	cap->expiry = 0x69535e00u;
	cap->rights = 3;
	cap->stripe = 0xffffffffu;
	for (int i = 0; i < WIRE_CAP_MAC_LEN; i++)
		cap->mac[i] = (uint8_t)(0xa0 + i);
}

static inline void sample_cred(struct nacre_cred *cr)
{
	cr->uid = 1000;
	cr->gid = 100;
	cr->ngroups = 3;
	cr->groups[0] = 10;
	cr->groups[1] = 20;
	cr->groups[2] = 0xfffffffe;
}

static inline void sample_fid(struct nacre_fid *f, uint32_t oid)
{
	f->seq = NACRE_FIRST_SEQ;
	f->oid = oid;
	f->ver = 0;
}

static inline void sample_layout(struct nacre_layout *l, uint32_t n)
{
	l->pattern = NACRE_PATTERN_RAID0;
	l->stripe_size = 1u << 20;
	l->stripe_count = (int32_t)n;
	l->stripe_offset = -1;
	l->gen = 5;
	l->nosts = n;
	for (uint32_t i = 0; i < n; i++)
		l->ost_idx[i] = i * 3;
}

static inline void sample_attr(struct nacre_attr *a)
{
	sample_fid(&a->fid, 77);
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->uid = 1000;
	a->gid = 100;
	a->rdev = 0;
	a->blksize = 1u << 20;
	a->size = 123456789012ull;
	a->blocks = 241127;
	a->atime.sec = 1700000000;
	a->atime.nsec = 1;
	a->mtime.sec = -5;
	a->mtime.nsec = 999999999;
	a->ctime.sec = 1800000000;
	a->ctime.nsec = 500;
	a->hsm_state = NACRE_HS_EXISTS | NACRE_HS_ARCHIVED;
	a->archive_id = 2;
}

static inline void sample_statfs(struct nacre_statfs *s)
{
	s->kb_total = 1000000;
	s->kb_free = 500000;
	s->kb_avail = 400000;
	s->files = 1 << 20;
	s->ffree = 1 << 19;
	s->bsize = 4096;
	s->namemax = 255;
}

#endif
