/* keytab.h - which client and admin keys a server accepts: per key name the current
 * generation and whether it is revoked. The MDS keeps the authoritative table in its
 * database (mds/keys.c) and pushes every change to the OSSes, which also pull the whole
 * table when they register (oss/keys.c). A name absent from the table is refused: every
 * key is issued through the MDS.
 *
 * Entries only move forward: (gen, revoked) is compared lexicographically and an update
 * older than what a table holds is ignored, so a pushed revocation cannot be undone by a
 * pull that was answered before it. Thread-safe (one mutex). */
#ifndef NACRE_KEYTAB_H
#define NACRE_KEYTAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/key.h"

#define KEYTAB_MAX 512 /* names per table (a KEY_LIST fits one body) */

struct keytab_entry {
	char name[KEY_NAME_MAX + 1];
	int role;      /* KEY_ROLE_CLIENT or KEY_ROLE_ADMIN */
	uint64_t gen;  /* the current generation; older ones are refused */
	int revoked;
};

struct keytab;

/* Returns NULL when out of memory. */
struct keytab *keytab_create(void);
void keytab_destroy(struct keytab *t); /* NULL is fine */
/* Whether a key of (role, name, gen) may authenticate: 0, -EKEYREVOKED (revoked),
 * -EKEYEXPIRED (an older generation than the current one), -EKEYREJECTED (unknown name,
 * a newer generation than issued, or another role). */
int keytab_check(struct keytab *t, int role, const char *name, uint64_t gen);
/* Applies e if it is newer than the entry of its name (or the name is new). Returns 1 if
 * the table changed, 0 if not, -ENOSPC when the table is full. */
int keytab_update(struct keytab *t, const struct keytab_entry *e);
/* The entry of name: 0 or -ENOENT. */
int keytab_get(struct keytab *t, const char *name, struct keytab_entry *out);
/* Copies up to max entries (sorted by name) to out; returns how many there are in all. */
int keytab_list(struct keytab *t, struct keytab_entry *out, int max);
/* A short sentence for a keytab_check error: "was revoked", ... Static string. */
const char *keytab_refusal(int rc);

#endif
