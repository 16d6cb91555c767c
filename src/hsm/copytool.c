/* copytool.c - nacre-copytool: the HSM agent. Registers with the MDS for one archive id,
 * polls for actions and runs them on a pool of threads: ARCHIVE reads the file through
 * libnacre and puts it in the backend under its archive name; RESTORE gets the object into
 * the file's new objects (the MDS hands them to this agent's open); REMOVE deletes the
 * object. Progress goes to the coordinator every few MiB; a cancel stops the transfer there.
 *
 * Archive names (the rule, also in docs/CONTRACTS.md): a file's object name is fixed once and
 * kept on the file (NACRE_HSM_PATH_XATTR), and the MDS hands it to every later action:
 * - an imported file: the object it was imported from, relative to the import's location;
 * - a native file: its path relative to the file system root at its first archive; when a
 *   live file of this file system already owns that object (it was archived under that path
 *   and renamed away since), ".FID" is added to the new file's name instead of replacing the
 *   other file's copy;
 * - after a rename, or a rename of a directory above it: unchanged, so the copy is found
 *   again and a re-archive replaces it; nothing in the archive moves;
 * - after hsm_remove: none; the next archive names the file by its path then.
 * The location the copy lives in (NACRE_HSM_ORIGIN_XATTR, this copytool's backend URL) is
 * recorded with the name; an action on a file whose copy is at another location than this
 * copytool serves fails with EIO and a message naming both, instead of touching a wrong or
 * missing object.
 *
 * Threads: the main thread polls and queues actions; T workers run them. The queue has its
 * own mutex; libnacre and the backend are thread-safe. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/daemon.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_opts.h"
#include "common/util.h"
#include "common/vxattr.h"
#include "hsm/backend.h"
#include "nacre/nacre.h"

#define PROGRESS_BYTES (8ull << 20) /* report at least every 8 MiB ... */
#define PROGRESS_MS 1000            /* ... or every second */
#define POLL_WAIT_MS 2000
/* a leftover of an interrupted put whose writer cannot be checked (another host, no locks)
 * is stale when not modified for this long: far beyond the coordinator's no-progress
 * timeout, after which its action was given to another agent anyway */
#define CLEANUP_GRACE_S 3600

struct ct {
	struct nacre_fs *fs;
	struct hsm_backend *b;
	uint32_t archive_id;
	int threads;
	uint64_t bandwidth; /* bytes/s per transfer, 0 = unlimited (lhsmtool_posix's -b) */
	int meta_style;     /* HSM_META_*: how archive puts write the metadata keys */
	char location[NACRE_PATH_MAX + 1]; /* the backend URL without trailing '/' */
	pthread_mutex_t lock; /* protects the queue and busy */
	pthread_cond_t cond;
	struct nacre_hsm_action *queue;
	int nqueue;
	int busy; /* actions queued or running */
	int stop;
};

static volatile sig_atomic_t g_stop;
static struct nacre_fs *g_fs; /* set once mounted, before the handler is installed */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
	/* an atomic store: a call waiting for an MDS that is gone gives up after its
	 * per-request timeout instead of the recovery timeout */
	nacre_fs_unmounting(g_fs);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Per-transfer state for the backend callbacks. */
struct xfer {
	struct ct *ct;
	const struct nacre_hsm_action *a;
	struct nacre_file *f;
	uint64_t total;
	int64_t start_ms;
	pthread_mutex_t lock; /* the fields below: callbacks may come from several threads */
	uint64_t reported;
	int64_t reported_ms;
	int stop; /* canceled or taken back */
};

/* Sleeps so that off bytes took at least off / bandwidth seconds since the start. */
static void throttle(struct xfer *x, uint64_t off)
{
	if (!x->ct->bandwidth)
		return;
	int64_t due = x->start_ms + (int64_t)(off * 1000 / x->ct->bandwidth);
	int64_t now = now_ms();
	if (due > now) {
		struct timespec ts = {(due - now) / 1000, ((due - now) % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
}

static ssize_t rd(void *arg, void *buf, size_t len, uint64_t off)
{
	struct xfer *x = arg;
	throttle(x, off);
	return nacre_pread(x->f, buf, len, off);
}

static ssize_t wr(void *arg, const void *buf, size_t len, uint64_t off)
{
	struct xfer *x = arg;
	throttle(x, off);
	return nacre_pwrite(x->f, buf, len, off);
}

static int progress(void *arg, uint64_t done)
{
	struct xfer *x = arg;
	int64_t now = now_ms();
	pthread_mutex_lock(&x->lock);
	int due = !x->stop && (done - x->reported >= PROGRESS_BYTES ||
			       now - x->reported_ms >= PROGRESS_MS);
	if (due) {
		x->reported = done;
		x->reported_ms = now;
	}
	int stop = x->stop;
	pthread_mutex_unlock(&x->lock);
	if (!due)
		return stop;
	int rc = nacre_hsm_agent_progress(x->ct->fs, x->a, done, x->total, 0, 0, NULL);
	if (rc != 0 && rc != -ETIMEDOUT && rc != -EIO) {
		/* 1: canceled by the user; -ESTALE: the coordinator gave it to someone else */
		pthread_mutex_lock(&x->lock);
		x->stop = rc == 1 ? 1 : 2;
		pthread_mutex_unlock(&x->lock);
		return 1;
	}
	return 0;
}

/* The file's current path relative to the root, without the leading '/'. */
static int current_path(struct ct *ct, const struct nacre_fid *fid, char *out, size_t len)
{
	char *p = malloc(NACRE_PATH_MAX + 1);
	if (!p)
		return -ENOMEM;
	int rc = nacre_fid2path(ct->fs, NULL, fid, p, NACRE_PATH_MAX + 1);
	if (!rc)
		str_copy(out, p[0] == '/' ? p + 1 : p, len);
	free(p);
	return rc;
}

/* The object name: the one the MDS recorded, else the file's current path. */
static int object_path(struct ct *ct, const struct nacre_hsm_action *a, char *out, size_t len)
{
	if (a->path[0]) {
		str_copy(out, a->path, len);
		return 0;
	}
	return current_path(ct, &a->fid, out, len);
}

/* The name of a file archived for the first time (no recorded name): its path, unless a live
 * file of this file system owns that object already (archived there, renamed away since):
 * then its path with ".FID" added, so that the other file's only copy stays. */
static int first_archive_name(struct ct *ct, const struct nacre_hsm_action *a, char *path,
			      size_t len)
{
	struct hsm_meta m;
	char e[256], fid[NACRE_FID_STR_MAX];
	int rc = current_path(ct, &a->fid, path, len);
	if (rc)
		return rc;
	if (hsm_backend_stat(ct->b, path, &m, e, sizeof(e)) != 0 || !m.has_fid ||
	    nacre_fid_eq(&m.fid, &a->fid))
		return 0;
	char *owner = malloc(NACRE_PATH_MAX + 1);
	if (!owner)
		return -ENOMEM;
	int n = nacre_getxattr(ct->fs, NULL, &m.fid, NACRE_HSM_PATH_XATTR, owner, NACRE_PATH_MAX);
	int taken = n >= 0 && (size_t)n == strlen(path) && memcmp(owner, path, (size_t)n) == 0;
	free(owner);
	if (!taken)
		return 0; /* a leftover of a deleted file, or of another file system: replaced */
	nacre_fid_format(&a->fid, fid, sizeof(fid));
	fid[strlen(fid) - 1] = 0; /* "[0x..:0x..:0x..]" -> ".0x..:0x..:0x.." */
	size_t l = strlen(path);
	if (l + strlen(fid) >= len)
		return -ENAMETOOLONG;
	nacre_fid_format(&m.fid, e, sizeof(e));
	LOG_INFO("ct", "archive name %s belongs to %s (renamed since): using %s.%s", path, e, path,
		 fid + 1);
	snprintf(path + l, len - l, ".%s", fid + 1);
	return 0;
}

/* 0 when the file's copy is (or will be) at this copytool's location, else -EIO with the
 * message. A file with no recorded location (archived before locations were recorded) is
 * taken as ours. */
static int check_origin(struct ct *ct, const struct nacre_hsm_action *a, const char *path,
			char *err, size_t err_len)
{
	char origin[NACRE_PATH_MAX + 1];
	int n = nacre_getxattr(ct->fs, NULL, &a->fid, NACRE_HSM_ORIGIN_XATTR, origin,
			       sizeof(origin) - 1);
	if (n == -ENODATA || n == -ENOENT)
		return 0;
	if (n < 0) {
		snprintf(err, err_len, "reading the archive location of %s: %s", path,
			 nacre_strerror(n));
		return n;
	}
	origin[n] = 0;
	while (n > 1 && origin[n - 1] == '/')
		origin[--n] = 0;
	if (!strcmp(origin, ct->location))
		return 0;
	snprintf(err, err_len,
		 "%.120s is in %.120s (imported from or archived to there), this copytool serves "
		 "%.120s: run a copytool for archive %u on %.120s",
		 path, origin, ct->location, a->archive_id, origin);
	return -EIO;
}

static int do_archive(struct ct *ct, struct xfer *x, char *path, char *err, size_t err_len)
{
	struct nacre_attr at;
	struct hsm_meta m;
	int rc = x->a->path[0] ? object_path(ct, x->a, path, NACRE_PATH_MAX + 1)
			       : first_archive_name(ct, x->a, path, NACRE_PATH_MAX + 1);
	if (rc) {
		snprintf(err, err_len, "no path for the file: %s", nacre_strerror(rc));
		return rc;
	}
	rc = check_origin(ct, x->a, path, err, err_len);
	if (rc)
		return rc;
	rc = nacre_open(ct->fs, NULL, &x->a->fid, O_RDONLY, &x->f);
	if (!rc)
		rc = nacre_file_attr(x->f, &at);
	if (rc) {
		snprintf(err, err_len, "open: %s", nacre_strerror(rc));
		goto out;
	}
	memset(&m, 0, sizeof(m));
	m.size = at.size;
	m.uid = at.uid;
	m.gid = at.gid;
	m.mode = at.mode & 07777;
	m.mtime = at.mtime;
	m.has_fid = 1;
	m.fid = at.fid;
	m.has_owner = 1;
	m.style = ct->meta_style;
	x->total = at.size;
	rc = hsm_backend_put(ct->b, path, at.size, rd, x, &m, progress, x, err, err_len);
	if (!rc) {
		/* the location goes with the name (the MDS records the name at the final report) */
		rc = nacre_setxattr(ct->fs, NULL, &x->a->fid, NACRE_HSM_ORIGIN_XATTR, ct->location,
				    strlen(ct->location), 0);
		if (rc)
			snprintf(err, err_len, "recording the archive location: %s",
				 nacre_strerror(rc));
	}
out:
	if (x->f)
		nacre_close(x->f);
	x->f = NULL;
	return rc;
}

static int do_restore(struct ct *ct, struct xfer *x, char *path, char *err, size_t err_len)
{
	struct hsm_meta m;
	struct nacre_attr at;
	int rc = object_path(ct, x->a, path, NACRE_PATH_MAX + 1);
	if (!rc)
		rc = check_origin(ct, x->a, path, err, err_len);
	if (!rc)
		rc = hsm_backend_stat(ct->b, path, &m, err, err_len);
	if (rc) {
		if (!err[0])
			snprintf(err, err_len, "object %s: %s", path, nacre_strerror(rc));
		return rc;
	}
	/* for the agent running its restore, the MDS opens the new (empty) objects */
	rc = nacre_open(ct->fs, NULL, &x->a->fid, O_WRONLY, &x->f);
	if (!rc)
		rc = nacre_file_attr(x->f, &at);
	if (rc) {
		snprintf(err, err_len, "open for restore: %s", nacre_strerror(rc));
		goto out;
	}
	if (m.size != at.size) {
		rc = -EIO;
		snprintf(err, err_len, "archive object %s holds %llu bytes, the file %llu", path,
			 (unsigned long long)m.size, (unsigned long long)at.size);
		goto out;
	}
	x->total = at.size;
	rc = hsm_backend_get(ct->b, path, wr, x, NULL, progress, x, err, err_len);
	if (!rc) {
		rc = nacre_fsync(x->f, 0);
		if (rc)
			snprintf(err, err_len, "sync of the restored data: %s", nacre_strerror(rc));
	}
out:
	if (x->f) {
		int crc = nacre_close(x->f);
		if (!rc && crc) {
			rc = crc;
			snprintf(err, err_len, "close: %s", nacre_strerror(crc));
		}
	}
	x->f = NULL;
	return rc;
}

static void run_action(struct ct *ct, const struct nacre_hsm_action *a)
{
	char fid[NACRE_FID_STR_MAX], err[1024] = "";
	char *path = calloc(1, NACRE_PATH_MAX + 1);
	struct xfer x;
	int rc;
	int64_t t0 = now_ms();

	memset(&x, 0, sizeof(x));
	x.ct = ct;
	x.a = a;
	x.reported_ms = t0;
	x.start_ms = t0;
	pthread_mutex_init(&x.lock, NULL);
	nacre_fid_format(&a->fid, fid, sizeof(fid));
	LOG_INFO("ct", "%s %s started (cookie %llu)", vxattr_hsm_action_name(a->action), fid,
		 (unsigned long long)a->cookie);
	if (!path)
		rc = -ENOMEM;
	else if (a->action == NACRE_HSMA_ARCHIVE)
		rc = do_archive(ct, &x, path, err, sizeof(err));
	else if (a->action == NACRE_HSMA_RESTORE)
		rc = do_restore(ct, &x, path, err, sizeof(err));
	else if (a->action == NACRE_HSMA_REMOVE) {
		rc = object_path(ct, a, path, NACRE_PATH_MAX + 1);
		if (!rc)
			rc = check_origin(ct, a, path, err, sizeof(err));
		if (!rc)
			rc = hsm_backend_remove(ct->b, path, err, sizeof(err));
	} else
		rc = -EOPNOTSUPP;
	if (x.stop == 1)
		rc = -ECANCELED;
	if (x.stop == 2) {
		LOG_WARN("ct", "%s %s was taken back by the coordinator: dropped",
			 vxattr_hsm_action_name(a->action), fid);
	} else {
		/* a failure's reason goes with the name: `nacre hsm list` shows it */
		if (rc && rc != -ECANCELED && path && err[0]) {
			size_t l = strlen(path);
			int n = snprintf(path + l, NACRE_PATH_MAX + 1 - l, "%s(%s)", l ? " " : "", err);
			(void)n; /* cut to the field's size */
			for (char *p = path + l; *p; p++)
				if (*p == '\n' || *p == '\r')
					*p = ' '; /* hsm list gives each action one line */
		}
		int prc = nacre_hsm_agent_progress(ct->fs, a, rc ? x.reported : x.total, x.total, 1,
						   rc > 0 ? -EIO : rc, path ? path : NULL);
		char labels[64];
		snprintf(labels, sizeof(labels), "action=\"%s\",result=\"%s\"",
			 vxattr_hsm_action_name(a->action),
			 rc == 0 ? "done" : rc == -ECANCELED ? "canceled" : "failed");
		metrics_add(metrics_counter("nacre_copytool_actions_total", labels,
					    "HSM actions this copytool ended"), 1);
		if (rc == 0)
			metrics_add(metrics_counter("nacre_copytool_bytes_total", "",
						    "Bytes archived or restored"), x.total);
		if (rc == 0)
			LOG_INFO("ct", "%s %s done: %llu bytes in %lld ms (%s)",
				 vxattr_hsm_action_name(a->action), fid, (unsigned long long)x.total,
				 (long long)(now_ms() - t0), path);
		else if (rc == -ECANCELED)
			LOG_INFO("ct", "%s %s canceled", vxattr_hsm_action_name(a->action), fid);
		else
			LOG_ERR("ct", "%s %s failed: %s%s%s", vxattr_hsm_action_name(a->action), fid,
				nacre_strerror(rc), err[0] ? ": " : "", err);
		if (prc < 0)
			LOG_WARN("ct", "reporting the end of %s %s: %s", vxattr_hsm_action_name(a->action), fid,
				 nacre_strerror(prc));
	}
	pthread_mutex_destroy(&x.lock);
	free(path);
}

static void *worker(void *arg)
{
	struct ct *ct = arg;
	pthread_mutex_lock(&ct->lock);
	for (;;) {
		while (!ct->stop && ct->nqueue == 0)
			pthread_cond_wait(&ct->cond, &ct->lock);
		if (ct->nqueue == 0)
			break;
		struct nacre_hsm_action *a = malloc(sizeof(*a));
		if (!a) {
			pthread_mutex_unlock(&ct->lock);
			sleep(1);
			pthread_mutex_lock(&ct->lock);
			continue;
		}
		*a = ct->queue[--ct->nqueue];
		pthread_mutex_unlock(&ct->lock);
		run_action(ct, a);
		free(a);
		pthread_mutex_lock(&ct->lock);
		ct->busy--;
		pthread_cond_broadcast(&ct->cond);
	}
	pthread_mutex_unlock(&ct->lock);
	return NULL;
}

/* At start, in the background (posix walks the whole archive): removes what copytools
 * killed mid-copy left in the backend. */
static void *cleanup_thread(void *arg)
{
	struct ct *ct = arg;
	char err[512] = "";
	int n = hsm_backend_cleanup(ct->b, CLEANUP_GRACE_S, err, sizeof(err));
	if (n < 0)
		LOG_WARN("ct", "cleaning up after interrupted copies: %s", err);
	else if (n > 0)
		LOG_INFO("ct", "removed %d leftovers of interrupted copies from %s", n,
			 hsm_backend_url(ct->b));
	return NULL;
}

static void libnacre_log(int level, const char *line, void *arg)
{
	(void)arg;
	log_write(level, "libnacre", "%s", line);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nacre-copytool --mds SPEC --key-file K --archive-id N --backend URL\n"
		   "                      [--threads T] [--log FILE] [--log-level LEVEL]\n"
		   "  --mds SPEC        the file system: host[:port]:/fsname\n"
		   "  --archive-id N    the archive this copytool serves (1..)\n"
		   "  --backend URL     posix:/dir, azure://account/container[/prefix] or\n"
		   "                    s3://bucket[/prefix] (credentials from the environment or\n"
		   "                    --credentials FILE, never on the command line)\n"
		   "  --threads T       actions run at once (default 4)\n"
		   "  --bandwidth MB    limit each transfer to MB megabytes per second\n"
		   "  --endpoint URL    azure/s3 service endpoint (default: the public one)\n"
		   "  --meta-style S    how archived objects' owner, group, permissions and modtime\n"
		   "                    are written: amlfs (default: what Azure Managed Lustre's\n"
		   "                    import reads), rfc3339, or azcopy (posix_owner, ...)\n"
		   METRICS_USAGE);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"mds", required_argument, NULL, 'm'},	      {"key-file", required_argument, NULL, 'k'},
		{"archive-id", required_argument, NULL, 'a'}, {"backend", required_argument, NULL, 'b'},
		{"threads", required_argument, NULL, 't'},    DAEMON_LONGOPTS,
		{"endpoint", required_argument, NULL, 'e'},
		{"credentials", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
		{"bandwidth", required_argument, NULL, 'B'},
		{"meta-style", required_argument, NULL, 'M'},
		METRICS_LONGOPTS,
		{NULL, 0, NULL, 0}};
	struct metrics_opts metrics;
	const char *spec = NULL, *key = NULL, *url = NULL;
	struct daemon_log_opts lo;
	struct hsm_backend_opts bo;
	char err[512] = "";
	int64_t v;
	int c;
	struct ct ct;

	memset(&ct, 0, sizeof(ct));
	memset(&bo, 0, sizeof(bo));
	memset(&metrics, 0, sizeof(metrics));
	daemon_log_opts_init(&lo);
	ct.threads = 4;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': spec = optarg; break;
		case 'k': key = optarg; break;
		case 'b': url = optarg; break;
		case 'e': bo.endpoint = optarg; break;
		case 'c': bo.credentials = optarg; break;
		case 'M':
			if (hsm_meta_style_parse(optarg, &ct.meta_style)) {
				fprintf(stderr, "nacre-copytool: --meta-style %s: use amlfs, rfc3339 "
						"or azcopy\n", optarg);
				return 1;
			}
			break;
		case 'B':
			if (parse_i64(optarg, 1, 1000000, &v)) {
				fprintf(stderr, "nacre-copytool: --bandwidth %s: MB/s, 1..1000000\n",
					optarg);
				return 1;
			}
			ct.bandwidth = (uint64_t)v * 1000000;
			break;
		case 'a':
		case 't':
			if (parse_i64(optarg, 1, c == 'a' ? UINT32_MAX : 256, &v)) {
				fprintf(stderr, "nacre-copytool: bad number '%s'\n", optarg);
				return 1;
			}
			if (c == 'a')
				ct.archive_id = (uint32_t)v;
			else
				ct.threads = (int)v;
			break;
		case 'h': usage(stdout); return 0;
		default: {
			int r = metrics_opts_handle(&metrics, c, optarg, err, sizeof(err));

			if (r == 0)
				r = daemon_log_opts_handle(&lo, c, optarg, err, sizeof(err));

			if (r > 0)
				break;
			if (r < 0)
				fprintf(stderr, "nacre-copytool: %s\n", err);
			else
				usage(stderr);
			return 1;
		}
		}
	}
	if (!spec || !url || !ct.archive_id || optind < argc) {
		fprintf(stderr, "nacre-copytool: --mds, --archive-id and --backend are required\n");
		usage(stderr);
		return 1;
	}
	if (metrics_opts_check(&metrics, err, sizeof(err)) < 0) {
		fprintf(stderr, "nacre-copytool: %s\n", err);
		return 1;
	}
	if (daemon_log_start(&lo, "copytool", err, sizeof(err))) {
		fprintf(stderr, "nacre-copytool: %s\n", err);
		return 1;
	}
	bo.threads = ct.threads;
	if (hsm_backend_open(url, &bo, &ct.b, err, sizeof(err))) {
		fprintf(stderr, "nacre-copytool: --backend: %s\n", err);
		return 1;
	}
	str_copy(ct.location, hsm_backend_location(ct.b), sizeof(ct.location));
	struct nacre_mount_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.key_file = key;
	mo.client_name = "nacre-copytool";
	mo.log_fn = libnacre_log;
	mo.timeout_ms = 60000;
	/* No write-behind: a restore writes 4 MiB ranges from --threads threads and fsyncs at
	 * the end, so buffering only adds a copy and, capped per file, made restores into nacre
	 * 3-4x slower than direct writes (bench/hsm). */
	mo.max_dirty_mb = -1;
	if (nacre_fs_mount(spec, &mo, &ct.fs, err, sizeof(err))) {
		fprintf(stderr, "nacre-copytool: %s\n", err);
		hsm_backend_close(ct.b);
		return 1;
	}
	int rc = nacre_hsm_agent_register(ct.fs, &ct.archive_id, 1, ct.threads);
	if (rc) {
		fprintf(stderr, "nacre-copytool: registering with the MDS: %s\n", nacre_strerror(rc));
		nacre_fs_umount(ct.fs);
		hsm_backend_close(ct.b);
		return 1;
	}

	if (metrics_opts_start(&metrics, "copytool", err, sizeof(err)) < 0) {
		fprintf(stderr, "nacre-copytool: %s\n", err);
		nacre_fs_umount(ct.fs);
		hsm_backend_close(ct.b);
		return 1;
	}
	g_fs = ct.fs;
	daemon_stop_signals(on_signal);

	pthread_mutex_init(&ct.lock, NULL);
	pthread_cond_init(&ct.cond, NULL);
	ct.queue = calloc((size_t)ct.threads, sizeof(*ct.queue));
	pthread_t *tids = calloc((size_t)ct.threads, sizeof(*tids));
	if (!ct.queue || !tids) {
		fprintf(stderr, "nacre-copytool: out of memory\n");
		return 1;
	}
	for (int i = 0; i < ct.threads; i++)
		pthread_create(&tids[i], NULL, worker, &ct);
	pthread_t cleaner;
	int have_cleaner = pthread_create(&cleaner, NULL, cleanup_thread, &ct) == 0;
	fprintf(stderr, "nacre-copytool: serving archive %u from %s with %d threads\n",
		ct.archive_id, hsm_backend_url(ct.b), ct.threads);
	LOG_INFO("ct", "serving archive %u of %s from %s, %d threads", ct.archive_id, spec,
		 hsm_backend_url(ct.b), ct.threads);

	struct nacre_hsm_action *got = calloc((size_t)ct.threads, sizeof(*got));
	while (!g_stop && got) {
		pthread_mutex_lock(&ct.lock);
		int free_slots = ct.threads - ct.busy;
		pthread_mutex_unlock(&ct.lock);
		if (free_slots <= 0) {
			pthread_mutex_lock(&ct.lock);
			struct timespec ts;
			time_after_ms(&ts, CLOCK_REALTIME, 200);
			if (ct.busy >= ct.threads)
				pthread_cond_timedwait(&ct.cond, &ct.lock, &ts);
			pthread_mutex_unlock(&ct.lock);
			continue;
		}
		int n = nacre_hsm_agent_poll(ct.fs, got, free_slots, POLL_WAIT_MS);
		if (n == -EPERM) {
			/* the MDS restarted or dropped us: register again */
			rc = nacre_hsm_agent_register(ct.fs, &ct.archive_id, 1, ct.threads);
			if (rc)
				LOG_WARN("ct", "registering again: %s", nacre_strerror(rc));
			sleep(1);
			continue;
		}
		if (n < 0) {
			LOG_WARN("ct", "poll: %s", nacre_strerror(n));
			sleep(1);
			continue;
		}
		if (n > 0) {
			pthread_mutex_lock(&ct.lock);
			for (int i = 0; i < n; i++)
				ct.queue[ct.nqueue++] = got[i];
			ct.busy += n;
			pthread_cond_broadcast(&ct.cond);
			pthread_mutex_unlock(&ct.lock);
		}
	}
	pthread_mutex_lock(&ct.lock);
	/* what it took from the coordinator it finishes (or the coordinator's timeout
	 * hands it to another agent if it cannot) */
	LOG_INFO("ct", "stopping after the %d action%s it holds", ct.busy,
		 ct.busy == 1 ? "" : "s");
	ct.stop = 1;
	pthread_cond_broadcast(&ct.cond);
	pthread_mutex_unlock(&ct.lock);
	for (int i = 0; i < ct.threads; i++)
		pthread_join(tids[i], NULL);
	if (have_cleaner)
		pthread_join(cleaner, NULL);
	free(got);
	free(tids);
	free(ct.queue);
	metrics_opts_stop();
	nacre_fs_umount(ct.fs);
	hsm_backend_close(ct.b);
	return 0;
}
