/* project.c - `nacre project`: project ids and the inherit flag of files and directories,
 * as lfs project (docs/quota.md). They are the inode's, read and set through the xattr
 * trusted.nacre.project ("ID P" or "ID -") of the mount. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "cli/cli.h"

#define PROJECT_XATTR "trusted.nacre.project"

enum { P_LIST, P_SET, P_CHECK, P_CLEAR };

struct popts {
	int mode, recursive, dir_only, inherit, keep;
	int have_id;
	unsigned long id;
	int bad; /* a path failed */
	int drift; /* -c found something */
};

static int get_proj(const char *path, unsigned long *id, int *inherit)
{
	char t[32], *end;
	ssize_t n = lgetxattr(path, PROJECT_XATTR, t, sizeof(t) - 1);

	if (n < 0)
		return -errno;
	t[n] = '\0';
	*id = strtoul(t, &end, 10);
	*inherit = !strcmp(end, " P");
	return 0;
}

static int set_proj(const char *path, unsigned long id, int inherit)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "%lu %c", id, inherit ? 'P' : '-');

	return lsetxattr(path, PROJECT_XATTR, t, (size_t)n, 0) ? -errno : 0;
}

static void one(struct popts *o, const char *path, unsigned long tree)
{
	unsigned long id;
	int inherit, rc;
	struct stat st;

	if (lstat(path, &st)) {
		cli_err("project: '%s': %s", path, strerror(errno));
		o->bad = 1;
		return;
	}
	if (S_ISLNK(st.st_mode))
		return; /* as lfs: links have no project of their own */
	switch (o->mode) {
	case P_LIST:
		rc = get_proj(path, &id, &inherit);
		if (rc) {
			cli_err("project: '%s': %s", path, strerror(-rc));
			o->bad = 1;
			return;
		}
		printf("%5lu %c %s\n", id, inherit ? 'P' : '-', path);
		return;
	case P_SET:
	case P_CLEAR: {
		int keep_id = o->mode == P_CLEAR && o->keep;
		if (keep_id && get_proj(path, &id, &inherit) == 0)
			rc = set_proj(path, id, 0);
		else
			rc = set_proj(path, o->mode == P_SET ? o->id : 0,
				      o->mode == P_SET && o->inherit && S_ISDIR(st.st_mode));
		if (rc) {
			if (rc == -EPERM)
				cli_err("project: '%s': only root may set project ids", path);
			else
				cli_err("project: '%s': %s", path, strerror(-rc));
			o->bad = 1;
		}
		return;
	}
	default: /* P_CHECK */
		rc = get_proj(path, &id, &inherit);
		if (rc) {
			cli_err("project: '%s': %s", path, strerror(-rc));
			o->bad = 1;
			return;
		}
		if (id != tree) {
			printf("%s - project identifier is not set (inode=%lu, tree=%lu)\n", path, id,
			       tree);
			o->drift = 1;
		}
		if (S_ISDIR(st.st_mode) && !inherit) {
			printf("%s - project inheritance flag is not set\n", path);
			o->drift = 1;
		}
	}
}

/* The entries of dir (and below with -r). */
static void walk(struct popts *o, const char *dir, unsigned long tree)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		cli_err("project: cannot read '%s': %s", dir, strerror(errno));
		o->bad = 1;
		return;
	}
	while ((e = readdir(d)) != NULL) {
		char p[PATH_MAX];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
			continue;
		one(o, p, tree);
		if (o->recursive && !lstat(p, &st) && S_ISDIR(st.st_mode))
			walk(o, p, tree);
	}
	closedir(d);
}

int cli_project(int argc, char **argv)
{
	struct popts o;
	int first = 0;

	memset(&o, 0, sizeof(o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_usage(stdout, "project");
			return 0;
		} else if (!strcmp(a, "-p")) {
			char *end;
			if (i + 1 >= argc) {
				cli_err("project: -p needs a project id");
				return 1;
			}
			errno = 0;
			o.id = strtoul(argv[++i], &end, 10);
			if (!argv[i][0] || *end || errno || argv[i][0] == '-' || o.id > UINT32_MAX) {
				cli_err("project: bad project id '%s': give a number", argv[i]);
				return 1;
			}
			o.have_id = 1;
		} else if (!strcmp(a, "-s")) {
			o.inherit = 1;
		} else if (!strcmp(a, "-r")) {
			o.recursive = 1;
		} else if (!strcmp(a, "-d")) {
			o.dir_only = 1;
		} else if (!strcmp(a, "-c")) {
			o.mode = P_CHECK;
		} else if (!strcmp(a, "-C")) {
			o.mode = P_CLEAR;
		} else if (!strcmp(a, "-k")) {
			o.keep = 1;
		} else if (a[0] == '-') {
			cli_err("project: unknown option '%s'", a);
			cli_usage(stderr, "project");
			return 1;
		} else {
			first = i;
			break;
		}
	}
	if (o.mode == P_LIST && (o.have_id || o.inherit))
		o.mode = P_SET;
	if (!first) {
		cli_err("project: give a file or directory");
		cli_usage(stderr, "project");
		return 1;
	}
	if (o.mode == P_SET && !o.have_id) {
		cli_err("project: -s needs -p ID");
		return 1;
	}
	for (int i = first; i < argc; i++) {
		const char *path = argv[i];
		struct stat st;
		unsigned long tree = o.id;
		int inh;
		if (stat(path, &st)) {
			cli_err("project: '%s': %s", path, strerror(errno));
			o.bad = 1;
			continue;
		}
		if (o.mode == P_CHECK && !o.have_id && get_proj(path, &tree, &inh)) {
			cli_err("project: '%s' is not on a nacre file system", path);
			o.bad = 1;
			continue;
		}
		int is_dir = S_ISDIR(st.st_mode);
		/* list and check look at a directory's entries unless -d; set and clear
		 * change the directory itself, and its tree with -r */
		if (!is_dir || o.dir_only || o.mode == P_SET || o.mode == P_CLEAR)
			one(&o, path, tree);
		if (is_dir && !o.dir_only && (o.mode == P_LIST || o.mode == P_CHECK || o.recursive))
			walk(&o, path, tree);
	}
	return o.bad || o.drift ? 1 : 0;
}
