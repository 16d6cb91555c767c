/* strbuf.c - the growable string buffer (see strbuf.h). */
#include "common/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRBUF_FIRST_CAP 256

int strbuf_reserve(struct strbuf *b, size_t n)
{
	size_t need, cap;
	char *np;

	if (b->failed)
		return -ENOMEM;
	if (n > (size_t)-1 / 2 - b->len) {
		b->failed = 1;
		return -ENOMEM;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : STRBUF_FIRST_CAP;
	while (cap < need)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np) {
		b->failed = 1;
		return -ENOMEM;
	}
	b->p = np;
	b->cap = cap;
	return 0;
}

void strbuf_add(struct strbuf *b, const void *s, size_t n)
{
	if (strbuf_reserve(b, n) < 0)
		return;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void strbuf_str(struct strbuf *b, const char *s)
{
	strbuf_add(b, s, strlen(s));
}

void strbuf_char(struct strbuf *b, char ch)
{
	strbuf_add(b, &ch, 1);
}

void strbuf_vprintf(struct strbuf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	if (b->failed)
		return;
	va_copy(again, ap);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
	if (n < 0) {
		b->failed = 1;
	} else if (!b->p || (size_t)n >= b->cap - b->len) {
		/* did not fit (or nothing allocated yet): grow and format again */
		if (strbuf_reserve(b, (size_t)n) == 0) {
			vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
			b->len += (size_t)n;
		}
	} else {
		b->len += (size_t)n;
	}
	va_end(again);
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vprintf(b, fmt, ap);
	va_end(ap);
}

void strbuf_reset(struct strbuf *b)
{
	b->len = 0;
	b->failed = 0;
	if (b->p)
		b->p[0] = '\0';
}

int strbuf_ok(const struct strbuf *b)
{
	return !b->failed;
}

const char *strbuf_cstr(const struct strbuf *b)
{
	return b->p && !b->failed ? b->p : "";
}

char *strbuf_take(struct strbuf *b)
{
	char *p;

	if (b->failed) {
		strbuf_fini(b);
		return NULL;
	}
	p = b->p ? b->p : strdup("");
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void strbuf_fini(struct strbuf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}
