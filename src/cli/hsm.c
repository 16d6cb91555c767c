/* hsm.c - `nacre hsm_*` and `nacre hsm list|import`, with lfs's syntax and output.
 *
 * Everything goes through the mount (the nacre.hsm* virtual xattrs of nacre/nacre_vxattr.h), so
 * each request carries the caller's credentials and the MDS decides, as with lfs. Requests
 * for many files are sent in batches on the mount root; when a batch fails, each file is
 * asked again alone so that the message names the file and the reason. Only import reads an
 * archive backend directly (it needs the backend's credentials, not the cluster key). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "common/vxattr.h"
#include "hsm/backend.h"
#include "nacre/nacre.h"

#define BATCH 1200 /* FIDs per setxattr: 48 bytes each must fit a 64 KiB value */

struct files {
	char **v;
	size_t n, cap;
};

static int files_add(struct files *f, const char *p)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		char **v = realloc(f->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n] = strdup(p);
	return f->v[f->n++] ? 0 : -ENOMEM;
}

static void files_free(struct files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
}

static int read_filelist(struct files *f, const char *list)
{
	FILE *fp = strcmp(list, "-") ? fopen(list, "re") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	if (!fp) {
		cli_err("cannot open file list %s: %s", list, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) > 0) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] && files_add(f, line))
			break;
	}
	free(line);
	if (fp != stdin)
		fclose(fp);
	return 0;
}

/* Regular files under dir, recursively, into f. */
static void walk(struct files *f, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	if (!d) {
		cli_err("cannot read %s: %s", dir, strerror(errno));
		return;
	}
	while ((e = readdir(d)) != NULL) {
		char p[PATH_MAX];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p) ||
		    lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			walk(f, p);
		else if (S_ISREG(st.st_mode))
			files_add(f, p);
	}
	closedir(d);
}

static int get_state(const char *path, uint32_t *st, uint32_t *aid)
{
	char buf[64];
	int n = cli_getxattr(path, NACRE_VXATTR_HSM_STATE, buf, sizeof(buf));
	if (n < 0)
		return n;
	return vxattr_hsm_state_parse(buf, st, aid) < 0 ? -EPROTO : 0;
}

/* Why a request for one file failed, in words. */
static void explain(const char *path, uint32_t action, int err)
{
	uint32_t st = 0, aid = 0;
	const char *why = strerror(err);
	if (err == EPERM && get_state(path, &st, &aid) == 0) {
		if (action == NACRE_HUA_RELEASE && !(st & NACRE_HS_ARCHIVED))
			why = "the file is not archived: run `nacre hsm_archive` first";
		else if (action == NACRE_HUA_RELEASE && (st & NACRE_HS_DIRTY))
			why = "the file is dirty (written since it was archived): archive it again "
			      "before releasing it";
		else if (action == NACRE_HUA_RELEASE && (st & NACRE_HS_NORELEASE))
			why = "the file has the norelease flag";
		else if (action == NACRE_HUA_RELEASE && (st & NACRE_HS_LOST))
			why = "the archive copy is lost";
		else if (action == NACRE_HUA_ARCHIVE && (st & NACRE_HS_NOARCHIVE))
			why = "the file has the noarchive flag";
		else
			why = "not permitted (only the owner or root may do this)";
	} else if (err == EBUSY) {
		why = action == NACRE_HUA_REMOVE ? "the file is released or another HSM action runs "
						   "on it"
						 : "the file is open or another HSM action runs on it";
	} else if (err == EINVAL) {
		why = "not a regular file";
	}
	cli_err("cannot %s %s: %s", vxattr_hsm_request_name(action), path, why);
}

/* Sends action for every file; prints one message per failing file. Returns the number of
 * files that failed. */
static int send_requests(struct files *f, uint32_t action, uint32_t aid)
{
	int failed = 0;
	size_t cap = 64 + BATCH * (NACRE_FID_STR_MAX + 1);
	char *val = malloc(cap);
	size_t *idx = malloc(sizeof(*idx) * BATCH);
	if (!val || !idx) {
		free(val);
		free(idx);
		cli_err("out of memory");
		return (int)f->n;
	}
	char root[PATH_MAX] = "";
	for (size_t i = 0; i < f->n;) {
		size_t pos = (size_t)vxattr_hsm_request_format(val, cap, action, aid, 1), k = 0;
		char broot[PATH_MAX] = "";
		for (; i < f->n && k < BATCH; i++) {
			char fid[NACRE_FID_STR_MAX];
			struct stat st;
			if (lstat(f->v[i], &st) == 0 && !S_ISREG(st.st_mode)) {
				cli_err("error: \"%s\" is not a regular file", f->v[i]);
				failed++;
				continue;
			}
			if (cli_check_nacre(f->v[i], fid, sizeof(fid)) < 0) {
				failed++;
				continue;
			}
			if (cli_mount_root(f->v[i], root, sizeof(root)) < 0) {
				failed++;
				continue;
			}
			if (k > 0 && strcmp(root, broot) != 0)
				break; /* another file system: next batch */
			str_copy(broot, root, sizeof(broot));
			pos += (size_t)snprintf(val + pos, cap - pos, "%s\n", fid); /* one per line */
			idx[k++] = i;
		}
		if (k == 0)
			continue;
		if (setxattr(broot, NACRE_VXATTR_HSM_REQUEST, val, pos, 0) == 0)
			continue;
		/* find out which files failed, and why */
		for (size_t j = 0; j < k; j++) {
			const char *p = f->v[idx[j]];
			char one[32];
			int n = vxattr_hsm_request_format(one, sizeof(one), action, aid, 0);
			if (setxattr(p, NACRE_VXATTR_HSM_REQUEST, one, (size_t)n, 0) < 0) {
				explain(p, action, errno);
				failed++;
			}
		}
	}
	free(val);
	free(idx);
	return failed;
}

static void print_state(const char *path, uint32_t st, uint32_t aid)
{
	printf("%s: (0x%08x)", path, st);
	if (st & NACRE_HS_RELEASED)
		printf(" released");
	if (st & NACRE_HS_EXISTS)
		printf(" exists");
	if (st & NACRE_HS_DIRTY)
		printf(" dirty");
	if (st & NACRE_HS_ARCHIVED)
		printf(" archived");
	if (st & NACRE_HS_NORELEASE)
		printf(" never_release");
	if (st & NACRE_HS_NOARCHIVE)
		printf(" never_archive");
	if (st & NACRE_HS_LOST)
		printf(" lost_from_hsm");
	if (aid)
		printf(", archive_id:%u", aid);
	printf("\n");
}

/* What is happening to a file still released, in words, for the final report. */
static const char *restore_status(const char *path, char *buf, size_t len)
{
	char v[256];
	struct nacre_hsm_action a;
	int n = cli_getxattr(path, NACRE_VXATTR_HSM_ACTION, v, sizeof(v));
	if (n < 0) {
		snprintf(buf, len, "cannot get its HSM action: %s", strerror(-n));
		return buf;
	}
	if (vxattr_hsm_action_parse(v, &a) < 0)
		return "no restore queued: it failed or was canceled (see `nacre hsm list` and the "
		       "copytool's log), then run hsm_restore again";
	if (a.status == NACRE_HAS_STARTED)
		snprintf(buf, len, "%s running, %llu of %llu bytes moved",
			 vxattr_hsm_action_name(a.action), (unsigned long long)a.bytes_done,
			 (unsigned long long)a.bytes_total);
	else
		snprintf(buf, len, "%s waiting: is a copytool running for its archive id?",
			 vxattr_hsm_action_name(a.action));
	return buf;
}

/* 1 if path is released and has no HSM action queued or running: its restore ended
 * without bringing the data back (failed or canceled) and nothing will retry it. The action
 * is read before the state: a restore that succeeds clears both in one transaction. */
static int restore_gave_up(const char *path)
{
	char v[256];
	uint32_t st, aid;
	int n = cli_getxattr(path, NACRE_VXATTR_HSM_ACTION, v, sizeof(v));
	return n == 0 && get_state(path, &st, &aid) == 0 && (st & NACRE_HS_RELEASED);
}

#define GAVE_UP_CHECK_S 5 /* how often files still released are checked for a failed restore */

/* Waits until none of the files is released, printing progress; -r's bulk rehydration.
 * Gives up on a file whose restore failed (seen twice, GAVE_UP_CHECK_S apart) and on all
 * after timeout_s seconds (0: no limit). Returns the number of files not restored, after
 * naming each with what holds it. */
static size_t wait_restored(struct files *f, int64_t timeout_s)
{
	size_t left = f->n, total = f->n, failed = 0;
	/* per file: 0 waiting, 1 done, 2 seen without an action once, 3 given up */
	char *st = calloc(f->n, 1);
	time_t t0 = time(NULL), last = 0, last_check = t0;
	int timed_out = 0;
	if (!st)
		return f->n;
	while (left > 0) {
		for (size_t i = 0; i < f->n; i++) {
			uint32_t hs, aid;
			if (st[i] == 1 || st[i] == 3)
				continue;
			if (get_state(f->v[i], &hs, &aid) < 0 || !(hs & NACRE_HS_RELEASED)) {
				st[i] = 1;
				left--;
			}
		}
		time_t now = time(NULL);
		if (left && now - last_check >= GAVE_UP_CHECK_S) {
			last_check = now;
			for (size_t i = 0; i < f->n; i++) {
				if (st[i] == 1 || st[i] == 3)
					continue;
				if (!restore_gave_up(f->v[i])) {
					st[i] = 0;
				} else if (st[i] == 0) {
					st[i] = 2;
				} else {
					st[i] = 3;
					left--;
					failed++;
				}
			}
		}
		if (now != last || left == 0) {
			fprintf(stderr, "restore: %zu/%zu files restored (%lds)", total - left - failed,
				total, (long)(now - t0));
			if (failed)
				fprintf(stderr, ", %zu failed", failed);
			fprintf(stderr, "\n");
			last = now;
		}
		if (left && timeout_s > 0 && now - t0 >= timeout_s) {
			timed_out = 1;
			break;
		}
		if (left)
			usleep(200000);
	}
	size_t bad = left + failed;
	if (bad) {
		if (timed_out)
			cli_err("hsm_restore: %zu of %zu files still released after %llds "
				"(--timeout %lld):",
				bad, total, (long long)(time(NULL) - t0), (long long)timeout_s);
		else
			cli_err("hsm_restore: %zu of %zu files could not be restored:", bad, total);
		for (size_t i = 0; i < f->n; i++) {
			char why[160];
			if (st[i] != 1)
				fprintf(stderr, "  %s: %s\n", f->v[i],
					restore_status(f->v[i], why, sizeof(why)));
		}
	}
	free(st);
	return bad;
}

#define RESTORE_TIMEOUT_S 3600 /* -r's default bound on the wait */

struct opts {
	uint32_t archive_id;
	int recursive;
	int64_t timeout_s; /* -r: --timeout, or -1 if not given */
	struct files files;
	uint32_t set;
	int has_aid;
};

/* Common options: --archive N, --filelist F, -r (restore), the flag options of hsm_set. */
static int parse(int argc, char **argv, struct opts *o, const char *verb)
{
	static const struct option lo[] = {
		{"archive", required_argument, NULL, 'a'}, {"archive-id", required_argument, NULL, 'i'},
		{"filelist", required_argument, NULL, 'l'}, {"data", required_argument, NULL, 'D'},
		{"recursive", no_argument, NULL, 'r'},    {"norelease", no_argument, NULL, 1},
		{"noarchive", no_argument, NULL, 2},      {"dirty", no_argument, NULL, 3},
		{"exists", no_argument, NULL, 4},         {"archived", no_argument, NULL, 5},
		{"lost", no_argument, NULL, 6},           {"timeout", required_argument, NULL, 'T'},
		{NULL, 0, NULL, 0}};
	int c;
	int64_t v;
	memset(o, 0, sizeof(*o));
	o->timeout_s = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "a:i:l:D:r", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
		case 'i':
			if (parse_i64(optarg, 0, UINT32_MAX, &v)) {
				cli_err("%s: bad archive id '%s'", verb, optarg);
				return -1;
			}
			o->archive_id = (uint32_t)v;
			o->has_aid = 1;
			break;
		case 'l':
			if (read_filelist(&o->files, optarg))
				return -1;
			break;
		case 'D':
			break; /* lfs's opaque copytool data: not used by nacre's copytool */
		case 'r': o->recursive = 1; break;
		case 'T':
			if (parse_i64(optarg, 0, INT32_MAX, &v)) {
				cli_err("%s: --timeout %s: seconds, 0 for no limit", verb, optarg);
				return -1;
			}
			o->timeout_s = v;
			break;
		case 1: o->set |= NACRE_HS_NORELEASE; break;
		case 2: o->set |= NACRE_HS_NOARCHIVE; break;
		case 3: o->set |= NACRE_HS_DIRTY; break;
		case 4: o->set |= NACRE_HS_EXISTS; break;
		case 5: o->set |= NACRE_HS_ARCHIVED; break;
		case 6: o->set |= NACRE_HS_LOST; break;
		default: cli_usage(stderr, verb); return -1;
		}
	}
	for (int i = optind; i < argc; i++) {
		struct stat st;
		if (o->recursive && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			walk(&o->files, argv[i]);
		else
			files_add(&o->files, argv[i]);
	}
	if (o->files.n == 0) {
		cli_err("%s: no file given", verb);
		cli_usage(stderr, verb);
		return -1;
	}
	return 0;
}

static int request_verb(int argc, char **argv, uint32_t action)
{
	struct opts o;
	if (parse(argc, argv, &o, argv[0])) {
		files_free(&o.files);
		return 1;
	}
	if (o.recursive && action != NACRE_HUA_RESTORE) {
		cli_err("%s: -r is for hsm_restore", argv[0]);
		files_free(&o.files);
		return 1;
	}
	if (o.timeout_s >= 0 && !(o.recursive && action == NACRE_HUA_RESTORE)) {
		cli_err("%s: --timeout is for hsm_restore -r", argv[0]);
		files_free(&o.files);
		return 1;
	}
	int failed = send_requests(&o.files, action, o.archive_id);
	size_t left = 0;
	if (action == NACRE_HUA_RESTORE && o.recursive)
		left = wait_restored(&o.files, o.timeout_s >= 0 ? o.timeout_s : RESTORE_TIMEOUT_S);
	files_free(&o.files);
	return failed || left ? 1 : 0;
}

int cli_hsm_archive(int argc, char **argv)
{
	return request_verb(argc, argv, NACRE_HUA_ARCHIVE);
}

int cli_hsm_release(int argc, char **argv)
{
	return request_verb(argc, argv, NACRE_HUA_RELEASE);
}

int cli_hsm_restore(int argc, char **argv)
{
	return request_verb(argc, argv, NACRE_HUA_RESTORE);
}

int cli_hsm_remove(int argc, char **argv)
{
	return request_verb(argc, argv, NACRE_HUA_REMOVE);
}

int cli_hsm_cancel(int argc, char **argv)
{
	return request_verb(argc, argv, NACRE_HUA_CANCEL);
}

int cli_hsm_state(int argc, char **argv)
{
	struct opts o;
	int rc = 0;
	if (parse(argc, argv, &o, "hsm_state")) {
		files_free(&o.files);
		return 1;
	}
	for (size_t i = 0; i < o.files.n; i++) {
		uint32_t st, aid;
		if (cli_check_nacre(o.files.v[i], NULL, 0) < 0) {
			rc = 1;
			continue;
		}
		int e = get_state(o.files.v[i], &st, &aid);
		if (e < 0) {
			cli_err("cannot get the HSM state of %s: %s", o.files.v[i], strerror(-e));
			rc = 1;
			continue;
		}
		print_state(o.files.v[i], st, aid);
	}
	files_free(&o.files);
	return rc;
}

static int set_clear(int argc, char **argv, int clear)
{
	struct opts o;
	int rc = 0;
	if (parse(argc, argv, &o, argv[0])) {
		files_free(&o.files);
		return 1;
	}
	if (clear && o.has_aid) {
		cli_err("hsm_clear: --archive-id is for hsm_set");
		files_free(&o.files);
		return 1;
	}
	for (size_t i = 0; i < o.files.n; i++) {
		char val[64];
		int n = vxattr_hsm_flags_format(val, sizeof(val), clear ? 0 : o.set, clear ? o.set : 0,
						o.archive_id);
		if (cli_check_nacre(o.files.v[i], NULL, 0) < 0) {
			rc = 1;
			continue;
		}
		if (setxattr(o.files.v[i], NACRE_VXATTR_HSM_STATE, val, (size_t)n, 0) < 0) {
			int e = errno;
			cli_err("cannot %s HSM flags of %s: %s", clear ? "clear" : "set", o.files.v[i],
				e == EPERM ? "not permitted (users may change only norelease, "
					     "noarchive and dirty, on their own files)"
					   : strerror(e));
			rc = 1;
		}
	}
	files_free(&o.files);
	return rc;
}

int cli_hsm_set(int argc, char **argv)
{
	return set_clear(argc, argv, 0);
}

int cli_hsm_clear(int argc, char **argv)
{
	return set_clear(argc, argv, 1);
}

int cli_hsm_action(int argc, char **argv)
{
	struct opts o;
	int rc = 0;
	if (parse(argc, argv, &o, "hsm_action")) {
		files_free(&o.files);
		return 1;
	}
	for (size_t i = 0; i < o.files.n; i++) {
		char buf[256];
		struct nacre_hsm_action a;
		if (cli_check_nacre(o.files.v[i], NULL, 0) < 0) {
			rc = 1;
			continue;
		}
		int n = cli_getxattr(o.files.v[i], NACRE_VXATTR_HSM_ACTION, buf, sizeof(buf));
		if (n < 0) {
			cli_err("cannot get the HSM action of %s: %s", o.files.v[i], strerror(-n));
			rc = 1;
			continue;
		}
		const char *act = vxattr_hsm_action_parse(buf, &a) == 0
					  ? vxattr_hsm_action_name(a.action)
					  : NULL;
		if (!act) {
			printf("%s: NOOP\n", o.files.v[i]);
		} else if (a.status == NACRE_HAS_STARTED && (a.action == NACRE_HSMA_ARCHIVE ||
							     a.action == NACRE_HSMA_RESTORE)) {
			printf("%s: %s running (%llu bytes moved)\n", o.files.v[i], act,
			       (unsigned long long)a.bytes_done);
		} else if (a.status == NACRE_HAS_STARTED) {
			printf("%s: %s running\n", o.files.v[i], act);
		} else {
			printf("%s: %s waiting (from 0 to EOF)\n", o.files.v[i], act);
		}
	}
	files_free(&o.files);
	return rc;
}

/* ---- nacre hsm list | import | <verb> ---- */

/* ARG is a path on a mount; without one, the mount the working directory is in (or the
 * host's only one). */
static int find_mount(const char *arg, char *root, size_t len)
{
	struct cli_mount m;
	if (arg)
		return cli_check_nacre(arg, NULL, 0) < 0 ? -1 : cli_mount_root(arg, root, len);
	if (cli_mount_default("hsm", &m) < 0)
		return -1;
	str_copy(root, m.dir, len);
	return 0;
}

static int hsm_list(int argc, char **argv)
{
	char root[PATH_MAX], name[64];
	struct nacre_hsm_action a;
	size_t cap = 512 * 1024;
	char *buf = malloc(cap);
	unsigned long long after = 0;
	int more = 1;
	if (!buf || find_mount(argc > 1 ? argv[1] : NULL, root, sizeof(root)) < 0) {
		free(buf);
		return 1;
	}
	while (more) {
		snprintf(name, sizeof(name), NACRE_VXATTR_HSM_LIST "%llu", after);
		int n = cli_getxattr(root, name, buf, cap);
		if (n < 0) {
			cli_err("cannot read the HSM queue of %s: %s", root, strerror(-n));
			free(buf);
			return 1;
		}
		more = 0;
		for (char *line = buf, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl)
				break;
			*nl = 0;
			char fid[NACRE_FID_STR_MAX];
			int r = vxattr_hsm_list_parse(line, &a, fid, &more);
			if (r == 0)
				break;
			if (r < 0)
				continue;
			unsigned long long done = a.bytes_done, total = a.bytes_total;
			printf("fid=%s dfid=%s compound/cookie=0x0/0x%llx action=%s archive#=%u "
			       "flags=0x0 extent=0x0-0xffffffffffffffff gid=0x0 status=%s "
			       "done=%llu total=%llu",
			       fid, fid, (unsigned long long)a.cookie,
			       vxattr_hsm_action_name(a.action), a.archive_id,
			       vxattr_hsm_status_name(a.status), done, total);
			if (total)
				printf(" (%llu%%)", done * 100 / total);
			if (a.err)
				printf(" error=%s", strerror(-a.err));
			printf(" path=%s\n", a.path);
			after = a.cookie;
		}
	}
	free(buf);
	return 0;
}

struct imp {
	const char *dest;
	const char *location; /* the backend URL without trailing '/' (NACRE_HSM_ORIGIN_XATTR) */
	uint32_t archive_id;
	int update;           /* --update */
	unsigned long files, dirs, failed, skipped, updated, kept;
	time_t last;
	struct files dirs_seen; /* directories, to set their attributes at the end */
	struct hsm_meta *dmeta;
	size_t ndmeta, capdmeta;
};

static int mkdirs(char *p)
{
	char *s = strrchr(p, '/');
	struct stat st;
	if (stat(p, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	if (s && s != p) {
		*s = 0;
		int rc = mkdirs(p);
		*s = '/';
		if (rc)
			return rc;
	}
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static void meta_defaults(struct hsm_meta *m)
{
	if (!m->has_owner) {
		m->uid = getuid();
		m->gid = getgid();
		if (!(m->mode & 07777))
			m->mode |= S_ISDIR(m->mode) ? 0755 : 0644;
	}
	if (m->mtime.sec == 0 && m->mtime.nsec == 0)
		m->mtime = time_now();
}

/* Creates the released stub full (dir/name, name at slash + 1) for object path, and
 * records where it came from. */
static int make_stub(struct imp *im, char *full, char *slash, const char *path,
		     const struct hsm_meta *m)
{
	char val[256 + NACRE_NAME_MAX + NACRE_PATH_MAX];
	*slash = 0;
	int rc = mkdirs(full);
	struct vxattr_hsm_import vi = { .size = m->size, .mode = m->mode & 07777,
					.uid = m->uid, .gid = m->gid, .mtime = m->mtime,
					.archive_id = im->archive_id, .name = slash + 1,
					.path = path };
	int n = rc ? rc : vxattr_hsm_import_format(val, sizeof(val), &vi);
	if (n < 0)
		rc = n;
	else if (setxattr(full, NACRE_VXATTR_HSM_IMPORT, val, (size_t)n, 0) < 0)
		rc = -errno;
	*slash = '/';
	if (!rc && setxattr(full, NACRE_HSM_ORIGIN_XATTR, im->location, strlen(im->location), 0))
		rc = -errno;
	return rc;
}

/* Whether the entry full is the stub imported from object path of this location. */
static int is_our_stub(const struct imp *im, const char *full, const char *path)
{
	char buf[NACRE_PATH_MAX + 2];
	ssize_t n = lgetxattr(full, NACRE_HSM_PATH_XATTR, buf, sizeof(buf) - 1);
	if (n < 0 || (size_t)n != strlen(path) || memcmp(buf, path, (size_t)n))
		return 0;
	n = lgetxattr(full, NACRE_HSM_ORIGIN_XATTR, buf, sizeof(buf) - 1);
	if (n < 0)
		return errno == ENODATA; /* recorded before locations were */
	buf[n] = 0;
	return strcmp(buf, im->location) == 0;
}

/* --update of an existing entry: 1 updated, 0 nothing to do, -errno. */
static int update_stub(struct imp *im, char *full, char *slash, const char *path,
		       const struct hsm_meta *m, const struct stat *st)
{
	char hs[64];
	unsigned state = 0;
	if (!S_ISREG(st->st_mode) || !is_our_stub(im, full, path))
		return 0; /* not what this object imported: skipped */
	int same = st->st_size == (off_t)m->size;
	if (m->mtime.sec || m->mtime.nsec)
		same = same && st->st_mtim.tv_sec == m->mtime.sec &&
		       st->st_mtim.tv_nsec == (long)m->mtime.nsec;
	if (m->has_owner)
		same = same && st->st_uid == m->uid && st->st_gid == m->gid &&
		       (st->st_mode & 07777) == (m->mode & 07777);
	if (same)
		return 0;
	if (cli_getxattr(full, NACRE_VXATTR_HSM_STATE, hs, sizeof(hs)) < 0 ||
	    sscanf(hs, "%x", &state) != 1)
		return -EIO;
	if (!(state & NACRE_HS_RELEASED) || (state & NACRE_HS_DIRTY)) {
		/* its data is in nacre, maybe changed there: never overwritten by an import */
		cli_err("kept %s: its object changed but the file %s in nacre", full,
			state & NACRE_HS_DIRTY ? "was modified" : "was restored");
		im->kept++;
		return 0;
	}
	if (st->st_size == (off_t)m->size) {
		/* attributes only: a released stub takes them without a restore */
		struct timespec ts[2] = {{m->mtime.sec, m->mtime.nsec},
					 {m->mtime.sec, m->mtime.nsec}};
		if (lchown(full, m->uid, m->gid) < 0 || chmod(full, m->mode & 07777) < 0 ||
		    utimensat(AT_FDCWD, full, ts, 0) < 0)
			return -errno;
		return 1;
	}
	/* a new size: a new stub renamed over the old one, whose name is dropped first so
	 * that destroying it never removes the object (--hsm-remove-on-unlink) */
	char tmp[PATH_MAX];
	*slash = 0;
	int n = snprintf(tmp, sizeof(tmp), "%s/.%s.nacre-import", full, slash + 1);
	*slash = '/';
	if (n < 0 || (size_t)n >= sizeof(tmp) || strlen(slash + 1) + 14 > NACRE_NAME_MAX)
		return -ENAMETOOLONG;
	char *tslash = strrchr(tmp, '/');
	unlink(tmp);
	int rc = make_stub(im, tmp, tslash, path, m);
	if (!rc && lremovexattr(full, NACRE_HSM_PATH_XATTR) < 0)
		rc = -errno;
	if (!rc && rename(tmp, full) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc ? rc : 1;
}

static int import_one(void *arg, const char *path, const struct hsm_meta *meta)
{
	struct imp *im = arg;
	char full[PATH_MAX];
	struct hsm_meta m = *meta;
	struct stat st;
	meta_defaults(&m);
	if ((size_t)snprintf(full, sizeof(full), "%s/%s", im->dest, path) >= sizeof(full)) {
		im->failed++;
		return 0;
	}
	if (S_ISDIR(m.mode)) {
		if (mkdirs(full) < 0) {
			cli_err("cannot create directory %s: %s", full, strerror(errno));
			im->failed++;
			return 0;
		}
		if (im->ndmeta == im->capdmeta) {
			size_t cap = im->capdmeta ? im->capdmeta * 2 : 64;
			struct hsm_meta *v = realloc(im->dmeta, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			im->dmeta = v;
			im->capdmeta = cap;
		}
		im->dmeta[im->ndmeta++] = m;
		files_add(&im->dirs_seen, full);
		im->dirs++;
	} else if (lstat(full, &st) == 0) {
		/* a populated tree: an existing entry is never replaced, only --update refreshes
		 * the stubs this object made */
		int rc = im->update ? update_stub(im, full, strrchr(full, '/'), path, &m, &st) : 0;
		if (rc < 0) {
			cli_err("cannot update %s: %s", full, strerror(-rc));
			im->failed++;
		} else if (rc > 0) {
			im->updated++;
		} else {
			im->skipped++;
		}
	} else {
		int rc = make_stub(im, full, strrchr(full, '/'), path, &m);
		if (rc) {
			cli_err("cannot import %s: %s", full,
				rc == -EEXIST ? "a file of that name exists" : strerror(-rc));
			im->failed++;
		} else {
			im->files++;
		}
	}
	time_t now = time(NULL);
	if (now != im->last) {
		fprintf(stderr, "import: %lu files, %lu directories\n", im->files, im->dirs);
		im->last = now;
	}
	return 0;
}

static int hsm_import(int argc, char **argv)
{
	static const struct option lo[] = {{"archive-id", required_argument, NULL, 'a'},
					   {"backend", required_argument, NULL, 'b'},
					   {"endpoint", required_argument, NULL, 'e'},
					   {"credentials", required_argument, NULL, 'c'},
					   {"update", no_argument, NULL, 'u'},
					   {NULL, 0, NULL, 0}};
	struct hsm_backend_opts bo;
	struct imp im;
	const char *url = NULL;
	int c;
	int64_t v;
	memset(&bo, 0, sizeof(bo));
	memset(&im, 0, sizeof(im));
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (parse_i64(optarg, 1, UINT32_MAX, &v)) {
				cli_err("hsm import: bad archive id '%s'", optarg);
				return 1;
			}
			im.archive_id = (uint32_t)v;
			break;
		case 'b': url = optarg; break;
		case 'e': bo.endpoint = optarg; break;
		case 'c': bo.credentials = optarg; break;
		case 'u': im.update = 1; break;
		default: cli_usage(stderr, "hsm"); return 1;
		}
	}
	if (!url || !im.archive_id || optind != argc - 1) {
		cli_err("hsm import: need --archive-id N --backend URL DESTDIR");
		cli_usage(stderr, "hsm");
		return 1;
	}
	im.dest = argv[optind];
	if (cli_check_nacre(im.dest, NULL, 0) < 0)
		return 1;
	char err[512] = "";
	struct hsm_backend *b;
	if (hsm_backend_open(url, &bo, &b, err, sizeof(err))) {
		cli_err("hsm import: %s", err);
		return 1;
	}
	im.location = hsm_backend_location(b);
	int rc = hsm_backend_list(b, import_one, &im, err, sizeof(err));
	/* directory attributes last: creating their entries changed their mtimes */
	for (size_t i = im.ndmeta; i-- > 0;) {
		const struct hsm_meta *m = &im.dmeta[i];
		struct timespec ts[2] = {{m->mtime.sec, m->mtime.nsec}, {m->mtime.sec, m->mtime.nsec}};
		if (lchown(im.dirs_seen.v[i], m->uid, m->gid) < 0 && errno != EPERM)
			im.failed++;
		chmod(im.dirs_seen.v[i], m->mode & 07777);
		utimensat(AT_FDCWD, im.dirs_seen.v[i], ts, 0);
	}
	files_free(&im.dirs_seen);
	free(im.dmeta);
	hsm_backend_close(b);
	fprintf(stderr, "import: %lu files, %lu directories%s\n", im.files, im.dirs,
		im.failed ? " (with errors)" : "");
	fprintf(stderr, "import: imported %lu, skipped %lu existing, updated %lu, failed %lu",
		im.files, im.skipped, im.updated, im.failed);
	if (im.kept)
		fprintf(stderr, ", kept %lu changed in nacre", im.kept);
	fputc('\n', stderr);
	if (rc) {
		cli_err("hsm import: %s", err[0] ? err : strerror(-rc));
		return 1;
	}
	return im.failed ? 1 : 0;
}

int cli_hsm(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} sub[] = {{"list", hsm_list},	       {"import", hsm_import},
		   {"archive", cli_hsm_archive}, {"release", cli_hsm_release},
		   {"restore", cli_hsm_restore}, {"remove", cli_hsm_remove},
		   {"cancel", cli_hsm_cancel},   {"state", cli_hsm_state},
		   {"action", cli_hsm_action},   {"set", cli_hsm_set},
		   {"clear", cli_hsm_clear}};
	if (argc < 2) {
		cli_usage(stderr, "hsm");
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(sub); i++)
		if (!strcmp(argv[1], sub[i].name))
			return sub[i].fn(argc - 1, argv + 1);
	cli_err("hsm: unknown subcommand '%s'", argv[1]);
	cli_usage(stderr, "hsm");
	return 1;
}
