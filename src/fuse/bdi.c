/* bdi.c - raises the kernel readahead of the mount.
 *
 * The kernel sets a FUSE mount's bdi readahead to min(128 KiB, max_readahead) when it
 * processes the FUSE_INIT reply, so buffered reads reach us as 128 KiB requests. Writing
 * /sys/class/bdi/<major>:<minor>/read_ahead_kb afterwards lets it read ahead in 1 MiB
 * requests (max_pages) with several in flight. The device number comes from
 * /proc/self/mountinfo, not from stat(2) of the mount point, which would need this very
 * process to answer a FUSE request.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "fuse/fz.h"

#define INIT_WAIT_S 30  /* give up if the kernel never sends FUSE_INIT */
#define SETTLE_MS 100   /* let the INIT reply reach the kernel before writing */

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Splits a mountinfo line in place: f[0..4] = id, parent, major:minor, root, mount point
 * (unescaped); *rest = what follows. 0, or -1 for a short line. */
static int split_line(char *line, char *f[5], char **rest)
{
	char *p = line;
	int n = 0;

	while (n < 5 && *p) {
		f[n++] = p;
		p += strcspn(p, " \n");
		if (*p)
			*p++ = '\0';
	}
	if (n < 5)
		return -1;
	unescape(f[4]);
	*rest = p;
	return 0;
}

/* Of a line's rest: the word after " - " (the file system type) and, with sopts, the super
 * options two words further, NUL-terminated in place; NULL if absent. */
static char *after_sep(char *rest, char **sopts)
{
	char *fstype = strstr(rest, " - "), *p;

	if (sopts)
		*sopts = NULL;
	if (!fstype)
		return NULL;
	fstype += 3;
	p = fstype + strcspn(fstype, " \n");
	if (sopts && *p == ' ') {
		char *src = p + 1;
		char *opts = src + strcspn(src, " \n");

		if (*opts == ' ') {
			opts++;
			opts[strcspn(opts, " \n")] = '\0';
			*sopts = opts;
		}
	}
	*p = '\0';
	return fstype;
}

int fz_mount_find(const char *mnt, char *dev, size_t len, char *fstype, size_t fslen)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	int found = -ENOENT;

	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		char *f[5], *rest, *type;

		/* id parent major:minor root mountpoint ... - fstype source options */
		if (split_line(line, f, &rest) < 0 || strcmp(f[4], mnt) != 0)
			continue;
		str_copy(dev, f[2], len);
		if (fstype && fslen) {
			type = after_sep(rest, NULL);
			str_copy(fstype, type ? type : "", fslen);
		}
		found = 0;
	}
	fclose(fp);
	return found;
}

int fz_mount_sb_ro(const char *dev)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	int rc = -ENOENT;

	if (!fp)
		return -errno;
	while (rc == -ENOENT && fgets(line, sizeof(line), fp)) {
		char *f[5], *rest, *sopts;

		if (split_line(line, f, &rest) < 0 || strcmp(f[2], dev) != 0)
			continue;
		/* every mount of a superblock shows its flags, the first of the super options */
		if (after_sep(rest, &sopts) && sopts)
			rc = strncmp(sopts, "ro", 2) == 0 && (sopts[2] == ',' || !sopts[2]);
	}
	fclose(fp);
	return rc;
}

static int write_ra(const char *path, int kb)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int n, rc = 0;

	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", kb);
	if (write(fd, buf, (size_t)n) != n)
		rc = -errno;
	close(fd);
	return rc;
}

static int read_ra(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return (int)strtol(buf, NULL, 10);
}

/* Sleeps ms unless stopped; returns 1 if stopped. Caller holds b->lock. */
static int nap_locked(struct fz_bdi *b, int ms)
{
	struct timespec ts;

	time_after_ms(&ts, CLOCK_REALTIME, ms);
	while (!b->stop) {
		if (pthread_cond_timedwait(&b->cond, &b->lock, &ts) == ETIMEDOUT)
			break;
	}
	return b->stop;
}

static void *bdi_main(void *arg)
{
	struct fz_mount *m = arg;
	struct fz_bdi *b = &m->bdi;
	char dev[64], path[128];
	int rc, waited = 0;

	pthread_mutex_lock(&b->lock);
	while (!b->inited && !b->stop && waited < INIT_WAIT_S * 10) {
		nap_locked(b, 100);
		waited++;
	}
	if (b->stop || !b->inited || nap_locked(b, SETTLE_MS)) {
		pthread_mutex_unlock(&b->lock);
		return NULL;
	}
	pthread_mutex_unlock(&b->lock);

	rc = fz_mount_find(b->mnt, dev, sizeof(dev), NULL, 0);
	if (rc < 0) {
		LOG_WARN("fuse", "cannot find %s in /proc/self/mountinfo: %s; kernel readahead "
				 "stays at its default", b->mnt, strerror(-rc));
		return NULL;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	if (access(path, F_OK) < 0)
		snprintf(path, sizeof(path), "/sys/class/bdi/%s-fuse/read_ahead_kb", dev);
	/* Write, then check once more a little later in case INIT was applied after us. */
	for (int i = 0; i < 3; i++) {
		rc = write_ra(path, m->kernel_ra_kb);
		if (rc < 0) {
			LOG_WARN("fuse", "cannot set %s to %d: %s (buffered reads stay at 128 KiB "
					 "requests)", path, m->kernel_ra_kb, strerror(-rc));
			return NULL;
		}
		pthread_mutex_lock(&b->lock);
		int stopped = nap_locked(b, 300);
		pthread_mutex_unlock(&b->lock);
		if (stopped)
			return NULL;
		if (read_ra(path) == m->kernel_ra_kb)
			break;
	}
	LOG_INFO("fuse", "kernel readahead of %s (bdi %s): %d KiB", b->mnt, dev, read_ra(path));
	return NULL;
}

void fz_bdi_start(struct fz_mount *m, const char *mnt)
{
	struct fz_bdi *b = &m->bdi;

	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	if (m->kernel_ra_kb <= 0)
		return;
	str_copy(b->mnt, mnt, sizeof(b->mnt));
	if (pthread_create(&b->thread, NULL, bdi_main, m) == 0)
		b->started = 1;
	else
		LOG_WARN("fuse", "cannot start the readahead setup thread");
}

void fz_bdi_init_done(struct fz_mount *m)
{
	struct fz_bdi *b = &m->bdi;

	pthread_mutex_lock(&b->lock);
	b->inited = 1;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void fz_bdi_stop(struct fz_mount *m)
{
	struct fz_bdi *b = &m->bdi;

	pthread_mutex_lock(&b->lock);
	b->stop = 1;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	if (b->started)
		pthread_join(b->thread, NULL);
	b->started = 0;
}
