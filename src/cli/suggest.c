/* suggest.c - "did you mean": the commands closest to a mistyped one. */
#include <string.h>

#include "cli/cli.h"

#define SUGGEST_MAX_LEN 64

/* Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * adjacent characters each cost 1. Both strings are at most SUGGEST_MAX_LEN bytes. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];

	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

size_t cli_suggest(const char *word, const char *const *names, size_t n, size_t *out,
		   size_t max_out)
{
	size_t wl = strlen(word), best = (size_t)-1, found = 0;

	if (wl == 0 || wl > SUGGEST_MAX_LEN)
		return 0;
	/* A typo: at most one edit in a short word, two from 6 characters on. */
	size_t limit = wl >= 6 ? 2 : 1;

	for (size_t i = 0; i < n; i++) {
		size_t d;

		if (strlen(names[i]) > SUGGEST_MAX_LEN)
			continue;
		d = edit_distance(word, names[i]);
		/* An abbreviation of 3 or more characters counts as a close match. */
		if (wl >= 3 && strncmp(word, names[i], wl) == 0 && d > limit)
			d = limit;
		if (d > limit || d > best)
			continue;
		if (d < best) {
			best = d;
			found = 0;
		}
		if (found < max_out)
			out[found++] = i;
	}
	return found;
}
