/* find.h - `nacre find`: the options (find.c) and the output (find_print.c). */
#ifndef NACRE_CLI_FIND_H
#define NACRE_CLI_FIND_H

#include <stdio.h>

#include "nacre/nacre.h"

enum { FIND_OUT_PRINT = 0, FIND_OUT_PRINT0 = 1, FIND_OUT_LS = 2, FIND_OUT_PRINTF = 3 };

/* How to print one entry: start is the path given on the command line, e the entry (its
 * path relative to start). out is FIND_OUT_*, fmt the --printf format. now: seconds since
 * the epoch (for -ls's dates). Writes to f. */
void cli_find_print(FILE *f, int out, const char *fmt, const char *start,
		    const struct nacre_find_entry *e, long long now);
/* Checks a --printf format: 0, or -EINVAL with the reason in err. */
int cli_find_check_format(const char *fmt, char *err, size_t len);

#endif
