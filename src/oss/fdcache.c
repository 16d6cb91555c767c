/* fdcache.c - bounded LRU cache of open object fds (see fdcache.h). */
#include "oss/fdcache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oss/store.h"

#define BUCKETS 1024u
#define OBJ_MODE 0600

struct oss_fd {
	char name[OSS_OBJ_NAME_MAX];
	int fd;
	int refs;                   /* requests holding it; cache lock */
	int cached;                 /* in the table and LRU list; cache lock */
	struct oss_fd *hnext;       /* hash chain; cache lock */
	struct oss_fd *prev, *next; /* LRU list, most recent first; cache lock */
};

struct oss_fdcache {
	pthread_mutex_t lock; /* protects everything below */
	int dir_fd;           /* immutable */
	int max;              /* immutable */
	int count;
	uint64_t gen;         /* bumped by every forget */
	struct oss_fd *head, *tail;
	struct oss_fd *table[BUCKETS];
};

static unsigned hash(const char *s)
{
	unsigned h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % BUCKETS;
}

int oss_fdcache_create(int dir_fd, int max, struct oss_fdcache **out)
{
	struct oss_fdcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->dir_fd = dir_fd;
	c->max = max > 0 ? max : 1;
	*out = c;
	return 0;
}

static void lru_unlink(struct oss_fdcache *c, struct oss_fd *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct oss_fdcache *c, struct oss_fd *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* Takes e out of the table and the list. Caller holds the lock. */
static void uncache(struct oss_fdcache *c, struct oss_fd *e)
{
	struct oss_fd **pp = &c->table[hash(e->name)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	lru_unlink(c, e);
	e->cached = 0;
	c->count--;
}

void oss_fdcache_destroy(struct oss_fdcache *c)
{
	if (!c)
		return;
	while (c->head) {
		struct oss_fd *e = c->head;
		uncache(c, e);
		close(e->fd);
		free(e);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct oss_fd *find(struct oss_fdcache *c, const char *name)
{
	struct oss_fd *e = c->table[hash(name)];

	while (e && strcmp(e->name, name) != 0)
		e = e->hnext;
	return e;
}

/* Closes idle entries from the cold end until there is room. Caller holds the lock; the
 * closes happen after it is dropped (returned list, linked through hnext). */
static struct oss_fd *evict(struct oss_fdcache *c)
{
	struct oss_fd *dead = NULL, *e = c->tail;

	while (c->count >= c->max && e) {
		struct oss_fd *prev = e->prev;
		if (e->refs == 0) {
			uncache(c, e);
			e->hnext = dead;
			dead = e;
		}
		e = prev;
	}
	return dead;
}

static void close_list(struct oss_fd *e)
{
	while (e) {
		struct oss_fd *n = e->hnext;
		close(e->fd);
		free(e);
		e = n;
	}
}

int oss_fdcache_get(struct oss_fdcache *c, const char *name, int create, struct oss_fd **ref)
{
	struct oss_fd *e, *dead;
	uint64_t gen;
	int fd;

	pthread_mutex_lock(&c->lock);
	e = find(c, name);
	if (e) {
		e->refs++;
		lru_unlink(c, e);
		lru_push(c, e);
		pthread_mutex_unlock(&c->lock);
		*ref = e;
		return e->fd;
	}
	gen = c->gen;
	pthread_mutex_unlock(&c->lock);

	fd = openat(c->dir_fd, name, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), OBJ_MODE);
	if (fd < 0)
		return -errno;
	e = calloc(1, sizeof(*e));
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(e->name, name, strnlen(name, OSS_OBJ_NAME_MAX - 1));
	e->fd = fd;
	e->refs = 1;

	pthread_mutex_lock(&c->lock);
	struct oss_fd *other = find(c, name);
	if (other) {
		/* Another request opened it meanwhile: use theirs. */
		other->refs++;
		pthread_mutex_unlock(&c->lock);
		close(fd);
		free(e);
		*ref = other;
		return other->fd;
	}
	dead = NULL;
	if (c->gen == gen) {
		/* No destroy ran while we opened: safe to keep. */
		dead = evict(c);
		unsigned h = hash(name);
		e->hnext = c->table[h];
		c->table[h] = e;
		lru_push(c, e);
		e->cached = 1;
		c->count++;
	}
	pthread_mutex_unlock(&c->lock);
	close_list(dead);
	*ref = e;
	return fd;
}

void oss_fdcache_put(struct oss_fdcache *c, struct oss_fd *e)
{
	int drop;

	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	drop = --e->refs == 0 && !e->cached;
	pthread_mutex_unlock(&c->lock);
	if (drop) {
		close(e->fd);
		free(e);
	}
}

void oss_fdcache_forget(struct oss_fdcache *c, const char *name)
{
	struct oss_fd *e;
	int drop = 0;

	pthread_mutex_lock(&c->lock);
	c->gen++;
	e = find(c, name);
	if (e) {
		uncache(c, e);
		drop = e->refs == 0;
	}
	pthread_mutex_unlock(&c->lock);
	if (drop) {
		close(e->fd);
		free(e);
	}
}
