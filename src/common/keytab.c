/* keytab.c - the table of client and admin keys a server accepts (keytab.h). */
#include "common/keytab.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct keytab {
	pthread_mutex_t lock;
	struct keytab_entry *e; /* sorted by name; protected by lock */
	int n;                  /* protected by lock */
};

struct keytab *keytab_create(void)
{
	struct keytab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->e = calloc(KEYTAB_MAX, sizeof(*t->e));
	if (!t->e) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void keytab_destroy(struct keytab *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->e);
	free(t);
}

/* Index of name, or -(insertion point) - 1. Called with lock held. */
static int find(const struct keytab *t, const char *name)
{
	int lo = 0, hi = t->n;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		int c = strcmp(t->e[mid].name, name);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -lo - 1;
}

int keytab_check(struct keytab *t, int role, const char *name, uint64_t gen)
{
	int rc, i;

	pthread_mutex_lock(&t->lock);
	i = find(t, name);
	if (i < 0)
		rc = -EKEYREJECTED;
	else if (t->e[i].revoked && gen <= t->e[i].gen)
		rc = -EKEYREVOKED;
	else if (gen < t->e[i].gen)
		rc = -EKEYEXPIRED;
	else if (gen > t->e[i].gen || role != t->e[i].role)
		rc = -EKEYREJECTED;
	else
		rc = 0;
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int keytab_update(struct keytab *t, const struct keytab_entry *e)
{
	int rc = 1, i;

	pthread_mutex_lock(&t->lock);
	i = find(t, e->name);
	if (i >= 0) {
		struct keytab_entry *o = &t->e[i];
		if (e->gen < o->gen || (e->gen == o->gen && o->revoked >= (e->revoked != 0)))
			rc = 0;
		else
			*o = *e;
	} else if (t->n == KEYTAB_MAX) {
		rc = -ENOSPC;
	} else {
		i = -i - 1;
		memmove(&t->e[i + 1], &t->e[i], (size_t)(t->n - i) * sizeof(*t->e));
		t->e[i] = *e;
		t->n++;
	}
	if (rc == 1)
		t->e[i].revoked = e->revoked != 0;
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int keytab_get(struct keytab *t, const char *name, struct keytab_entry *out)
{
	int i;

	pthread_mutex_lock(&t->lock);
	i = find(t, name);
	if (i >= 0)
		*out = t->e[i];
	pthread_mutex_unlock(&t->lock);
	return i >= 0 ? 0 : -ENOENT;
}

int keytab_list(struct keytab *t, struct keytab_entry *out, int max)
{
	int n;

	pthread_mutex_lock(&t->lock);
	n = t->n;
	memcpy(out, t->e, (size_t)(n < max ? n : max) * sizeof(*out));
	pthread_mutex_unlock(&t->lock);
	return n;
}

const char *keytab_refusal(int rc)
{
	switch (rc) {
	case -EKEYREVOKED:
		return "was revoked";
	case -EKEYEXPIRED:
		return "was replaced by a newer generation";
	case -EKEYREJECTED:
		return "is not known to this server (not issued, or of another role)";
	default:
		return "is refused";
	}
}
