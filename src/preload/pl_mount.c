/* pl_mount.c - the nacre mounts this process sees, and a libnacre connection to each, made
 * as the mount made its own (nacre.connect: spec, key file, client name, flavour). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <syslog.h>
#include <unistd.h>

#include "common/jobid.h"
#include "nacre/nacre_vxattr.h"
#include "preload/pl.h"

#define PL_MOUNTS_MAX 64
#define CONNECT_MAX 8192

struct pl_mount {
	char *dir;
	dev_t dev;
	pthread_mutex_t lock;
	int tried;            /* a connection was attempted (fs is it, or NULL: failed) */
	struct nacre_fs *fs;
};

static struct pl_mount mounts[PL_MOUNTS_MAX];
static int nmounts;

/* mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS" */
static void load_line(char *line)
{
	char *f[6], *save = NULL, *dash, *fstype;
	unsigned maj, min;

	dash = strstr(line, " - ");
	if (!dash)
		return;
	fstype = strtok_r(dash + 3, " ", &save);
	if (!fstype || strcmp(fstype, "fuse.nacre") != 0 || nmounts == PL_MOUNTS_MAX)
		return;
	*dash = '\0';
	save = NULL;
	for (int i = 0; i < 6; i++) {
		f[i] = strtok_r(i ? NULL : line, " ", &save);
		if (!f[i])
			return;
	}
	if (sscanf(f[2], "%u:%u", &maj, &min) != 2)
		return;
	unescape(f[4]);
	struct pl_mount *m = &mounts[nmounts];
	m->dir = strdup(f[4]);
	if (!m->dir)
		return;
	m->dev = makedev(maj, min);
	pthread_mutex_init(&m->lock, NULL);
	nmounts++;
}

void pl_mounts_load(void)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (!fp)
		return;
	while (getline(&line, &cap, fp) > 0) {
		line[strcspn(line, "\n")] = '\0';
		load_line(line);
	}
	free(line);
	fclose(fp);
}

int pl_mounts_any(void)
{
	return nmounts > 0;
}

struct pl_mount *pl_mount_of(dev_t dev)
{
	for (int i = 0; i < nmounts; i++)
		if (mounts[i].dev == dev)
			return &mounts[i];
	return NULL;
}

/* The value of "key=" among the NUL-ended lines in text[0..len), or NULL. */
static const char *field(const char *text, size_t len, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; p < text + len; p += strlen(p) + 1)
		if (strncmp(p, key, n) == 0 && p[n] == '=')
			return p + n + 1;
	return NULL;
}

static void log_line(int level, const char *line, void *arg)
{
	(void)arg;
	if (level <= LOG_WARNING)
		pl_debug("%s", line);
}

static struct nacre_fs *connect_mount(const struct pl_mount *m)
{
	char text[CONNECT_MAX], err[512];
	const char *spec, *key, *name, *sec, *t, *rt;
	struct nacre_mount_opts mo;
	struct nacre_fs *fs = NULL;
	ssize_t n;
	int rc;

	n = getxattr(m->dir, NACRE_VXATTR_CONNECT, text, sizeof(text) - 1);
	if (n < 0) {
		pl_debug("%s: no %s (%s): an older nacre-mount; its files go through the kernel",
			 m->dir, NACRE_VXATTR_CONNECT, strerror(errno));
		return NULL;
	}
	text[n] = '\0';
	for (char *p = text; p < text + n; p++)
		if (*p == '\n')
			*p = '\0';
	spec = field(text, (size_t)n, "spec");
	key = field(text, (size_t)n, "key_file");
	name = field(text, (size_t)n, "client_name");
	sec = field(text, (size_t)n, "sec");
	t = field(text, (size_t)n, "timeout_ms");
	rt = field(text, (size_t)n, "recovery_timeout_ms");
	if (!spec) {
		pl_debug("%s: %s names no spec", m->dir, NACRE_VXATTR_CONNECT);
		return NULL;
	}
	memset(&mo, 0, sizeof(mo));
	mo.key_file = key && key[0] ? key : NULL;
	mo.client_name = name && name[0] ? name : NULL;
	mo.sec = sec && sec[0] ? sec : NULL;
	mo.timeout_ms = t ? atoi(t) : 0;
	mo.recovery_timeout_ms = rt ? atoi(rt) : 0;
	mo.log_fn = log_line;
	if (getenv("NACRE_PRELOAD_MAX_DIRTY_MB"))
		mo.max_dirty_mb = atoi(getenv("NACRE_PRELOAD_MAX_DIRTY_MB"));
	rc = nacre_fs_mount(spec, &mo, &fs, err, sizeof(err));
	if (rc < 0) {
		pl_debug("%s: cannot connect to %s (%s): its files go through the kernel", m->dir,
			 spec, err[0] ? err : nacre_strerror(rc));
		return NULL;
	}
	pl_debug("%s: connected to %s", m->dir, spec);
	return fs;
}

struct nacre_fs *pl_mount_fs(struct pl_mount *m)
{
	struct nacre_fs *fs;

	pthread_mutex_lock(&m->lock);
	if (!m->tried) {
		m->tried = 1;
		m->fs = connect_mount(m);
	}
	fs = m->fs;
	pthread_mutex_unlock(&m->lock);
	return fs;
}

/* The job id of this process as euid: read from /proc once per (process, euid), not at
 * every file (a fork or a setuid makes it again). */
static void job_id(char out[NACRE_JOBID_MAX + 1])
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char id[NACRE_JOBID_MAX + 1];
	static pid_t id_pid;
	static uid_t id_uid;
	pid_t pid = getpid();
	uid_t uid = geteuid();

	pthread_mutex_lock(&lock);
	if (id_pid != pid || id_uid != uid || !id[0]) {
		jobid_procname_uid(pid, uid, id);
		id_pid = pid;
		id_uid = uid;
	}
	memcpy(out, id, sizeof(id));
	pthread_mutex_unlock(&lock);
}

int pl_cred(struct nacre_fs *fs, struct nacre_cred *cr)
{
	gid_t groups[NACRE_CRED_GROUPS * 2];
	uint32_t g32[NACRE_CRED_GROUPS * 2];
	int n = getgroups(NACRE_CRED_GROUPS * 2, groups);
	int rc;

	if (n < 0)
		n = 0; /* more than that: the first ones; the MDS may refuse what the rest allow */
	for (int i = 0; i < n; i++)
		g32[i] = groups[i];
	rc = nacre_groups_cred(fs, geteuid(), getegid(), g32, (uint32_t)n, cr);
	if (rc < 0)
		return rc;
	if (nacre_fs_jobids(fs))
		job_id(cr->jobid);
	return 0;
}

void pl_mounts_forked(void)
{
	/* The parent's connections stay allocated: their threads did not come along. No new
	 * one is made either: a lock libnacre's threads held at the fork stays held in this
	 * copy of its memory. The child (until it execs) reads and writes through the kernel. */
	for (int i = 0; i < nmounts; i++) {
		pthread_mutex_init(&mounts[i].lock, NULL);
		mounts[i].tried = 1;
		mounts[i].fs = NULL;
	}
}
