/* unit.h - the few macros every unit test uses. Include once per test executable.
 *
 * CHECK* count passes and failures and print the failing expression with its location;
 * unit_done() prints the one final line "N passed, M failed" and returns the exit code. */
#ifndef NACRE_UNIT_H
#define NACRE_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int unit_passed;
static int unit_failed;

#define CHECK(cond)                                                                         \
	do {                                                                                \
		if (cond) {                                                                 \
			unit_passed++;                                                      \
		} else {                                                                    \
			unit_failed++;                                                      \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,    \
				#cond);                                                     \
		}                                                                           \
	} while (0)

#define CHECK_EQ(a, b)                                                                      \
	do {                                                                                \
		int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                               \
		if (a_ == b_) {                                                             \
			unit_passed++;                                                      \
		} else {                                                                    \
			unit_failed++;                                                      \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%" PRId64        \
					" != %" PRId64 ")\n",                               \
				__FILE__, __LINE__, #a, #b, a_, b_);                        \
		}                                                                           \
	} while (0)

#define CHECK_STR(a, b)                                                                     \
	do {                                                                                \
		const char *a_ = (a), *b_ = (b);                                            \
		if (a_ && b_ && strcmp(a_, b_) == 0) {                                      \
			unit_passed++;                                                      \
		} else {                                                                    \
			unit_failed++;                                                      \
			fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" != \"%s\"\n",       \
				__FILE__, __LINE__, a_ ? a_ : "(null)", b_ ? b_ : "(null)");  \
		}                                                                           \
	} while (0)

#define CHECK_MEM(a, b, n)                                                                  \
	do {                                                                                \
		if (memcmp((a), (b), (n)) == 0) {                                           \
			unit_passed++;                                                      \
		} else {                                                                    \
			unit_failed++;                                                      \
			fprintf(stderr, "%s:%d: CHECK_MEM failed: %s vs %s\n", __FILE__,    \
				__LINE__, #a, #b);                                          \
			unit_hexdiff((const uint8_t *)(a), (const uint8_t *)(b), (n));      \
		}                                                                           \
	} while (0)

static inline void unit_hexdiff(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i]) {
			fprintf(stderr, "  first difference at byte %zu: 0x%02x vs 0x%02x\n", i,
				a[i], b[i]);
			return;
		}
	}
}

static inline int unit_done(void)
{
	printf("%d passed, %d failed\n", unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#endif
