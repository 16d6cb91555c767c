/* test_strbuf.c - the growable string buffer. */
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "unit.h"

static void test_empty(void)
{
	struct strbuf b = STRBUF_INIT;
	char *s;

	CHECK_STR(strbuf_cstr(&b), "");
	CHECK(strbuf_ok(&b));
	s = strbuf_take(&b);
	CHECK(s != NULL);
	CHECK_STR(s, "");
	free(s);
	strbuf_fini(NULL);
}

static void test_append_and_grow(void)
{
	struct strbuf b = STRBUF_INIT;
	char expect[5001];

	for (int i = 0; i < 5000; i++) {
		strbuf_char(&b, (char)('a' + i % 26));
		expect[i] = (char)('a' + i % 26);
	}
	expect[5000] = '\0';
	CHECK_EQ(b.len, 5000);
	CHECK_STR(strbuf_cstr(&b), expect);
	strbuf_reset(&b);
	CHECK_EQ(b.len, 0);
	CHECK_STR(strbuf_cstr(&b), "");
	strbuf_str(&b, "x=");
	strbuf_add(&b, "abc", 2);
	CHECK_STR(strbuf_cstr(&b), "x=ab");
	strbuf_fini(&b);
}

static void test_printf(void)
{
	struct strbuf b = STRBUF_INIT;
	char big[1000];

	strbuf_printf(&b, "%d-%s", 42, "z");
	CHECK_STR(strbuf_cstr(&b), "42-z");
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	strbuf_printf(&b, "[%s]", big); /* longer than the first allocation */
	CHECK_EQ(b.len, 4 + 2 + 999);
	CHECK_EQ(b.p[4], '[');
	CHECK_EQ(b.p[b.len - 1], ']');
	CHECK_EQ(b.p[b.len], '\0');
	char *s = strbuf_take(&b);
	CHECK_EQ(strlen(s), 1005);
	CHECK(b.p == NULL && b.len == 0);
	free(s);
}

static void test_failure_is_sticky(void)
{
	struct strbuf b = STRBUF_INIT;

	strbuf_str(&b, "ok");
	CHECK_EQ(strbuf_reserve(&b, (size_t)-1), -12);
	CHECK(!strbuf_ok(&b));
	strbuf_str(&b, "more");
	CHECK_STR(strbuf_cstr(&b), "");
	CHECK(strbuf_take(&b) == NULL);
	CHECK(b.p == NULL);
}

int main(void)
{
	test_empty();
	test_append_and_grow();
	test_printf();
	test_failure_is_sticky();
	return unit_done();
}
