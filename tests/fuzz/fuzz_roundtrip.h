/* fuzz_roundtrip.h - the decode -> encode -> decode check shared by the message fuzzers.
 *
 * A message type is a table row: struct size, encode and decode wrappers, and an optional
 * fix-up for fields that are views into the input (compared by content, then aligned).
 * Properties checked for every input that decodes:
 *   1. the decoded message encodes without error;
 *   2. re-encoding gives exactly the bytes consumed (unless the decoder normalizes);
 *   3. the re-encoded bytes decode to an identical struct, which encodes identically.
 * A violation aborts, which libFuzzer and the replay driver both report. */
#ifndef NACRE_FUZZ_ROUNDTRIP_H
#define NACRE_FUZZ_ROUNDTRIP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/cursor.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_type {
	const char *name;
	size_t size;
	void (*enc)(struct wire_cursor *c, const void *m);
	void (*dec)(struct wire_cursor *c, void *m);
	void (*fix)(void *m1, void *m2); /* may be NULL */
	int exact;                       /* re-encoding reproduces the input bytes */
};

/* Wrappers with one signature for every wire_<name>_encode/_decode pair. */
#define FZ_MSG(name)                                                                        \
	static void enc_##name(struct wire_cursor *c, const void *m)                        \
	{                                                                                   \
		wire_##name##_encode(c, m);                                                 \
	}                                                                                   \
	static void dec_##name(struct wire_cursor *c, void *m)                              \
	{                                                                                   \
		wire_##name##_decode(c, m);                                                 \
	}
#define FZ_GROUP(name, type, put, get)                                                      \
	static void enc_##name(struct wire_cursor *c, const void *m)                        \
	{                                                                                   \
		put(c, (const type *)m);                                                    \
	}                                                                                   \
	static void dec_##name(struct wire_cursor *c, void *m)                              \
	{                                                                                   \
		get(c, (type *)m);                                                          \
	}
#define FZ_ROW(name, type, fix, exact) {#name, sizeof(type), enc_##name, dec_##name, fix, exact}

static inline void fz_fail(const char *type, const char *what)
{
	fprintf(stderr, "fuzz: %s: %s\n", type, what);
	abort();
}

static inline void fz_roundtrip(const struct fz_type *t, const uint8_t *data, size_t size)
{
	void *m1 = calloc(1, t->size), *m2 = calloc(1, t->size);
	struct wire_cursor r, e1, e2;
	size_t used;

	if (!m1 || !m2)
		goto out_free;
	wire_cursor_init_read(&r, data, size);
	t->dec(&r, m1);
	if (!wire_cursor_ok(&r))
		goto out_free;
	used = wire_cursor_pos(&r);

	wire_cursor_init_dyn(&e1, size + 64);
	t->enc(&e1, m1);
	if (!wire_cursor_ok(&e1))
		fz_fail(t->name, "a decoded message does not encode");
	/* (an empty message leaves e1 without a buffer: compare bytes only when there are some) */
	if (t->exact && (wire_cursor_pos(&e1) != used || (used && memcmp(e1.buf, data, used))))
		fz_fail(t->name, "re-encoding differs from the input");

	wire_cursor_init_read(&r, e1.buf, wire_cursor_pos(&e1));
	t->dec(&r, m2);
	if (!wire_cursor_ok(&r) || wire_cursor_left(&r) != 0)
		fz_fail(t->name, "a re-encoded message does not decode");
	if (t->fix)
		t->fix(m1, m2);
	if (memcmp(m1, m2, t->size) != 0)
		fz_fail(t->name, "decode(encode(m)) != m");

	wire_cursor_init_dyn(&e2, size + 64);
	t->enc(&e2, m2);
	if (!wire_cursor_ok(&e2) || wire_cursor_pos(&e2) != wire_cursor_pos(&e1) ||
	    (wire_cursor_pos(&e1) && memcmp(e1.buf, e2.buf, wire_cursor_pos(&e1)) != 0))
		fz_fail(t->name, "encoding is not stable");
	wire_cursor_fini(&e2);
	wire_cursor_fini(&e1);
out_free:
	free(m1);
	free(m2);
}

#endif
