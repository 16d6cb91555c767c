/* cursor.h - bounded little-endian encode/decode cursor.
 *
 * A cursor walks a caller-owned buffer. Every get/put checks the remaining length; a short
 * read or write sets a sticky failure, after which every further call is a no-op that yields
 * zeroes. Check wire_cursor_ok() once at the end instead of after every field.
 *
 * Writing cursors may grow: wire_cursor_init_dyn() owns a heap buffer that doubles up to a
 * limit (WIRE_BODY_MAX for bodies); free it with wire_cursor_fini().
 * Not thread-safe; one cursor per thread.
 */
#ifndef NACRE_CURSOR_H
#define NACRE_CURSOR_H

#include <stddef.h>
#include <stdint.h>

struct wire_cursor {
	uint8_t *buf;
	size_t len; /* capacity (write) or bytes available (read) */
	size_t pos;
	size_t limit; /* growable: the most it may grow to; 0 = fixed */
	int err;      /* 0, or the first error (-EPROTO on decode, -E2BIG on encode overflow) */
	int owned;    /* buf is the cursor's heap buffer */
};

/* Read cursor over len bytes at buf (borrowed; must outlive the cursor). */
void wire_cursor_init_read(struct wire_cursor *c, const void *buf, size_t len);
/* Write cursor over a fixed caller buffer. */
void wire_cursor_init_write(struct wire_cursor *c, void *buf, size_t len);
/* Write cursor over a heap buffer that grows up to limit bytes. */
void wire_cursor_init_dyn(struct wire_cursor *c, size_t limit);
/* Frees an owned buffer. Safe on any cursor. */
void wire_cursor_fini(struct wire_cursor *c);

static inline int wire_cursor_ok(const struct wire_cursor *c) { return c->err == 0; }
static inline size_t wire_cursor_left(const struct wire_cursor *c) { return c->len - c->pos; }
static inline size_t wire_cursor_pos(const struct wire_cursor *c) { return c->pos; }
/* Marks the cursor failed with err (first error wins). Decoders use it for semantic checks. */
void wire_cursor_fail(struct wire_cursor *c, int err);

void wire_put_u8(struct wire_cursor *c, uint8_t v);
void wire_put_u16(struct wire_cursor *c, uint16_t v);
void wire_put_u32(struct wire_cursor *c, uint32_t v);
void wire_put_u64(struct wire_cursor *c, uint64_t v);
void wire_put_i32(struct wire_cursor *c, int32_t v);
void wire_put_i64(struct wire_cursor *c, int64_t v);
void wire_put_bytes(struct wire_cursor *c, const void *p, size_t n);
/* u32 length then bytes. */
void wire_put_blob(struct wire_cursor *c, const void *p, uint32_t n);
/* Overwrites a u32 at an earlier position (for counts known only at the end). */
void wire_patch_u32(struct wire_cursor *c, size_t pos, uint32_t v);

uint8_t wire_get_u8(struct wire_cursor *c);
uint16_t wire_get_u16(struct wire_cursor *c);
uint32_t wire_get_u32(struct wire_cursor *c);
uint64_t wire_get_u64(struct wire_cursor *c);
int32_t wire_get_i32(struct wire_cursor *c);
int64_t wire_get_i64(struct wire_cursor *c);
void wire_get_bytes(struct wire_cursor *c, void *p, size_t n);
/* A view of the next n bytes (NULL and failed if fewer remain). Valid as long as the buffer. */
const uint8_t *wire_get_view(struct wire_cursor *c, size_t n);
/* u32 length (checked against max and the bytes present) then a view of the bytes. */
const uint8_t *wire_get_blob(struct wire_cursor *c, uint32_t max, uint32_t *n);

#endif
