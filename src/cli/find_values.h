/* find_values.h - the values of `nacre find`'s options (find_values.c). Each parser returns
 * 0, or -1 for a value that is not valid (the caller names the option); they keep no state.
 */
#ifndef NACRE_CLI_FIND_VALUES_H
#define NACRE_CLI_FIND_VALUES_H

#include <stdint.h>

#include "nacre/nacre.h"

/* [+-]N with an optional unit suffix from units (its chars; NULL: none) whose multipliers
 * are mult; without a suffix the unit is def. */
int find_parse_cmp(const char *s, const char *units, const uint64_t *mult, uint64_t def,
		   struct nacre_find_cmp *c);
/* -size: [+-]N[cbkKMGTPE], bytes without a suffix, rounded up. */
int find_parse_size(const char *s, struct nacre_find_cmp *c);
/* -Xtime [+-]N[smhdwy] (days without a suffix) or, with minutes, -Xmin [+-]N. */
int find_parse_time(const char *s, int minutes, struct nacre_find_cmp *c);
/* -type: letters of f d l p s b c, alone or comma-separated, into a mask of S_IFMT >> 12. */
int find_parse_type(const char *s, uint32_t *mask);
/* A uid (group 0) or gid: a number or a name. */
int find_parse_user(const char *s, int group, uint32_t *out);
/* -perm MODE, -MODE or /MODE (octal) into q's perm and perm_kind. */
int find_parse_perm(const char *s, struct nacre_find_req *q);
/* A comma list of indices, ranges A-B and FSNAME<tag>XXXX names (tag "-OST" or "-MDT";
 * hexadecimal, an _UUID suffix allowed) into idx (at most max; *n counts them). s is cut in
 * place. */
int find_parse_targets(char *s, const char *tag, uint32_t *idx, uint32_t max, uint32_t *n);
/* -newerXY's reference: the time y (a m c B) of the file v (statx, not followed), or for y
 * 't' the date v
 * in local time (YYYY-MM-DD[ HH:MM[:SS]], T for the space too) or @SECONDS. Prints why it
 * failed. */
int find_parse_reference(char y, const char *v, struct nacre_time *t);
/* --layout raid0,released,mdt into NACRE_FIND_LAYOUT_* bits (s cut in place). */
int find_parse_layout(char *s, uint32_t *mask);
/* --hsm-state exists,archived,... into NACRE_HS_* bits (s cut in place). */
int find_parse_hsm(char *s, uint32_t *mask);

#endif
