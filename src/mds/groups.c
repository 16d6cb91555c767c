/* groups.c - registered group lists (see groups.h). */
#include "mds/groups.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct glist {
	uint64_t token;
	uint32_t total;    /* groups in the list */
	uint32_t received; /* of them so far */
	int complete;
	uint64_t used;     /* table clock at the last use */
	uint32_t *g;       /* total entries, sorted once complete */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct glist lists[MDS_GROUPS_LISTS]; /* lock; token 0 = free */
static uint64_t clock_now;                   /* lock */
static uint64_t groups_held;                 /* lock: sum of total over the lists */
static __thread int missing;

static void drop(struct glist *l)
{
	groups_held -= l->total;
	free(l->g);
	*l = (struct glist){0};
}

static struct glist *find(uint64_t token)
{
	for (int i = 0; i < MDS_GROUPS_LISTS; i++)
		if (lists[i].token == token)
			return &lists[i];
	return NULL;
}

/* A free slot, after dropping least recently used lists until need more groups fit. */
static struct glist *make_room(uint32_t need)
{
	for (;;) {
		struct glist *lru = NULL, *free_slot = NULL;
		for (int i = 0; i < MDS_GROUPS_LISTS; i++) {
			if (!lists[i].token) {
				free_slot = free_slot ? free_slot : &lists[i];
				continue;
			}
			if (!lru || lists[i].used < lru->used)
				lru = &lists[i];
		}
		if (free_slot && groups_held + need <= MDS_GROUPS_TOTAL)
			return free_slot;
		if (!lru)
			return NULL;
		drop(lru);
	}
}

static int valid(const struct glist *l)
{
	for (uint32_t i = 1; i < l->total; i++)
		if (l->g[i - 1] >= l->g[i])
			return 0;
	return wire_groups_token(l->g, l->total) == l->token;
}

int mds_groups_set(const struct wire_groups_set_req *r)
{
	struct glist *l;
	int rc = 0;

	pthread_mutex_lock(&lock);
	l = find(r->token);
	if (l && l->complete && r->first == 0) {
		l->used = ++clock_now; /* registered again: already known */
		pthread_mutex_unlock(&lock);
		return 0;
	}
	if (r->first == 0) {
		if (l)
			drop(l);
		l = make_room(r->total);
		uint32_t *g = l ? malloc((size_t)r->total * sizeof(*g)) : NULL;
		if (!g) {
			pthread_mutex_unlock(&lock);
			return -ENOMEM;
		}
		*l = (struct glist){.token = r->token, .total = r->total, .g = g};
		groups_held += r->total;
	} else if (!l || l->complete || l->total != r->total || l->received != r->first) {
		pthread_mutex_unlock(&lock);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < r->count; i++)
		l->g[r->first + i] = wire_groups_set_at(r, i);
	l->received += r->count;
	l->used = ++clock_now;
	if (l->received == l->total) {
		if (valid(l))
			l->complete = 1;
		else {
			drop(l);
			rc = -EINVAL;
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int mds_groups_has(uint64_t token, uint32_t gid)
{
	struct glist *l;
	int found = 0;

	pthread_mutex_lock(&lock);
	l = find(token);
	if (!l || !l->complete) {
		pthread_mutex_unlock(&lock);
		missing = 1;
		return 0;
	}
	l->used = ++clock_now;
	uint32_t lo = 0, hi = l->total;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (l->g[mid] == gid) {
			found = 1;
			break;
		}
		if (l->g[mid] < gid)
			lo = mid + 1;
		else
			hi = mid;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

void mds_groups_missing_reset(void)
{
	missing = 0;
}

int mds_groups_missing(void)
{
	return missing;
}

void mds_groups_clear(void)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MDS_GROUPS_LISTS; i++)
		if (lists[i].token)
			drop(&lists[i]);
	pthread_mutex_unlock(&lock);
}
