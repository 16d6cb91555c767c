/* strbuf.h - a growable, always NUL-terminated string buffer (curl's dynbuf is the model).
 *
 * A failed allocation makes the buffer sticky-failed: later appends do nothing and
 * strbuf_ok() is 0, so a caller checks once at the end instead of after every append.
 * A zeroed struct strbuf (STRBUF_INIT) is a valid empty buffer. Not thread-safe: one owner.
 */
#ifndef NACRE_STRBUF_H
#define NACRE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *p;    /* NUL-terminated contents once anything was appended; NULL before */
	size_t len; /* bytes before the NUL */
	size_t cap; /* bytes allocated */
	int failed; /* an allocation or format failed: contents are incomplete */
};

#define STRBUF_INIT {0}

/* Appends n bytes of s (which may hold NULs). */
void strbuf_add(struct strbuf *b, const void *s, size_t n);
/* Appends the NUL-terminated string s. */
void strbuf_str(struct strbuf *b, const char *s);
/* Appends one character. */
void strbuf_char(struct strbuf *b, char ch);
/* Appends printf-formatted text. */
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vprintf(struct strbuf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Makes room for n more bytes without appending. 0 or -ENOMEM (and the buffer fails). */
int strbuf_reserve(struct strbuf *b, size_t n);
/* Empties the buffer and clears a failure; keeps the allocation. */
void strbuf_reset(struct strbuf *b);
/* 1 if every append so far succeeded. */
int strbuf_ok(const struct strbuf *b);
/* The contents: never NULL (an empty buffer gives ""); valid until the next append. */
const char *strbuf_cstr(const struct strbuf *b);
/* Hands the heap string to the caller (free() it) and leaves b empty; NULL if b failed
 * (then b's memory is freed). An empty, never-grown buffer gives a fresh "". */
char *strbuf_take(struct strbuf *b);
/* Frees the contents; b is empty and usable again. NULL is fine. */
void strbuf_fini(struct strbuf *b);

#endif
