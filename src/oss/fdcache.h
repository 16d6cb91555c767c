/* fdcache.h - open object files of one OST, kept between requests (bounded, LRU).
 *
 * Each request used to open and close its object; with 4 MiB RPCs that is cheap, with many
 * small ones it is not, and a reader of a big file opens it thousands of times. Entries
 * are reference counted: a request holds its fd while it does I/O; the least recently used
 * idle entry is closed when the cache is full. oss_fdcache_forget() must be called when an
 * object is removed (destroy), so that a later object of the same name never gets the fd of
 * the removed file; a lookup racing with a forget does not cache what it opened.
 * Thread-safe (one mutex).
 */
#ifndef NACRE_OSS_FDCACHE_H
#define NACRE_OSS_FDCACHE_H

struct oss_fdcache;
struct oss_fd;

/* A cache of at most max idle-or-busy fds opened relative to dir_fd (borrowed: it must
 * outlive the cache). 0 or -ENOMEM. */
int oss_fdcache_create(int dir_fd, int max, struct oss_fdcache **out);
/* Closes every fd; no entry may be held. NULL is fine. */
void oss_fdcache_destroy(struct oss_fdcache *c);
/* Opens (O_RDWR, with O_CREAT if create) or finds the object name. Returns its fd (>= 0)
 * with *ref set to pass to oss_fdcache_put, or -errno (-ENOENT for a missing object
 * without create). */
int oss_fdcache_get(struct oss_fdcache *c, const char *name, int create, struct oss_fd **ref);
/* Releases a reference from oss_fdcache_get. */
void oss_fdcache_put(struct oss_fdcache *c, struct oss_fd *ref);
/* Drops name from the cache (its fd is closed once no request holds it). */
void oss_fdcache_forget(struct oss_fdcache *c, const char *name);

#endif
