/* fid.c - `nacre path2fid` and `nacre fid2path`, with lfs's options, output and exit codes
 * (the errno of the first failure).
 *
 * Both read the mount's virtual xattrs: nacre.fid of a path, nacre.parents (a path's links)
 * and nacre.linkpaths.FID (the paths of a FID's links) in link order, the order Lustre's
 * link EA keeps: as the links were made, a renamed link last. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "cli/cli.h"
#include "common/util.h"
#include "nacre/nacre.h"

/* "nacre VERB: " + message, as lfs prefixes its messages with "lfs VERB: ". */
static void verb_err(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verb_err(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "nacre %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A list value of NUL-ended records (nacre.parents, nacre.linkpaths.*) of path into a new
 * buffer; *len its bytes. 0 or -errno. */
static int read_list(const char *path, const char *name, char **out, size_t *len)
{
	char *buf = malloc(NACRE_VXATTR_LIST_MAX + 1);
	int n;

	if (!buf)
		return -ENOMEM;
	n = cli_getxattr(path, name, buf, NACRE_VXATTR_LIST_MAX + 1);
	if (n < 0) {
		free(buf);
		return n;
	}
	*out = buf;
	*len = (size_t)n;
	return 0;
}

/* The records of a list: the next one at *pos, or NULL at the end. */
static const char *next_record(const char *buf, size_t len, size_t *pos)
{
	const char *r;

	if (*pos >= len)
		return NULL;
	r = buf + *pos;
	*pos += strnlen(r, len - *pos) + 1;
	return r;
}

/* path2fid: the FID of path itself, a symbolic link's own (lfs opens with O_NOFOLLOW). */
static int print_fid(const char *path, int named)
{
	char fid[NACRE_FID_STR_MAX + 1];
	ssize_t n = lgetxattr(path, NACRE_VXATTR_FID, fid, sizeof(fid) - 1);

	if (n < 0) {
		int err = errno;

		if (err == ENOTSUP || err == ENODATA)
			verb_err("path2fid", "cannot get fid for '%s': %s (not on a nacre file "
				 "system)", path, strerror(ENOTTY));
		else
			verb_err("path2fid", "cannot get fid for '%s': %s", path, strerror(err));
		return err == ENOTSUP || err == ENODATA ? -ENOTTY : -err;
	}
	fid[n] = '\0';
	fid[strcspn(fid, "\n")] = '\0';
	printf("%s%s%s\n", named ? path : "", named ? ": " : "", fid);
	return 0;
}

/* path2fid --parents: "[PARENT]/NAME" per link, tab-separated, on one line. A symbolic
 * link is refused with ELOOP, as lfs's open with O_NOFOLLOW refuses it. */
static int print_parents(const char *path, int named)
{
	char *buf = NULL;
	size_t len = 0, pos = 0;
	const char *r;
	struct stat st;
	int rc = lstat(path, &st) < 0 ? -errno : S_ISLNK(st.st_mode) ? -ELOOP : 0;

	if (!rc)
		rc = read_list(path, NACRE_VXATTR_PARENTS, &buf, &len);
	if (rc < 0) {
		if (rc == -ENOTSUP)
			rc = -ENODATA; /* not nacre: no link data */
		verb_err("path2fid", "cannot get parent fid for '%s': %s", path, strerror(-rc));
		return rc;
	}
	if (named)
		printf("%s: ", path);
	for (int i = 0; (r = next_record(buf, len, &pos)) != NULL; i++)
		printf("%s%s", i ? "\t" : "", r);
	printf("\n");
	free(buf);
	return 0;
}

int cli_path2fid(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"parents", no_argument, NULL, 'p'},
		{NULL, 0, NULL, 0},
	};
	int rc = 0, parents = 0, opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "p", longopts, NULL)) != -1) {
		if (opt != 'p') {
			cli_err("path2fid: unknown option '%s'", argv[optind - 1]);
			cli_usage(stderr, "path2fid");
			return 1;
		}
		parents = 1;
	}
	if (optind >= argc) {
		cli_err("path2fid: no PATH given");
		cli_usage(stderr, "path2fid");
		return 1;
	}
	int named = argc - optind > 1;

	for (int i = optind; i < argc; i++) {
		int err = parents ? print_parents(argv[i], named) : print_fid(argv[i], named);

		if (err < 0 && rc == 0)
			rc = -err;
	}
	return rc;
}

/* MOUNT may be a mount point (or any directory on one) or a file system name; *by_path
 * says which (lfs: an argument starting with '/' is a path). */
static int find_root(const char *arg, char *root, size_t len, int *by_path)
{
	struct stat st;
	struct cli_mount m;

	*by_path = 1;
	if (arg[0] != '/') {
		int rc = cli_mount_by_name("fid2path", arg, &m);
		if (rc == 0) {
			str_copy(root, m.dir, len);
			*by_path = 0;
			return 0;
		}
		if (rc != -ENOENT)
			return -EINVAL; /* ambiguous: said so */
	}
	if (stat(arg, &st) == 0 && cli_getxattr(arg, NACRE_VXATTR_FID, root, len) >= 0) {
		int rc = cli_mount_root(arg, root, len);

		if (rc == 0)
			return 0;
		verb_err("fid2path", "cannot resolve mount point for '%s': %s", arg,
			 strerror(-rc));
		return rc;
	}
	verb_err("fid2path",
		 "cannot resolve mount point for '%s': %s (neither a directory of a nacre mount "
		 "nor the name of a mounted nacre file system)",
		 arg, strerror(ENODEV));
	return -ENODEV;
}

/* The path of link *linkno of fid, as lfs's FID2PATH call gives it: an index past the last
 * link gives link 0; *linkno becomes the next link's number, or stays when there is none
 * after it (lfs's -c prints that number). Returns the record or NULL. */
static const char *pick_link(const char *buf, size_t len, int *linkno)
{
	const char *r, *first = NULL, *hit = NULL;
	size_t pos = 0;
	int n = 0;

	while ((r = next_record(buf, len, &pos)) != NULL) {
		if (!first)
			first = r;
		if (n == *linkno)
			hit = r;
		n++;
	}
	if (!hit)
		return first;
	if (*linkno < n - 1)
		(*linkno)++;
	return hit;
}

struct f2p_opts {
	int print_fid, print_link;
	int linkno; /* -1: every link */
	int by_path;
	const char *root;
};

/* Prints fid's paths; 0 or -errno (already reported). */
static int fid2path_one(const struct f2p_opts *o, const char *arg, const char *fsarg)
{
	struct nacre_fid fid;
	char fidtxt[NACRE_FID_STR_MAX], name[128];
	char *buf;
	size_t len;
	int rc;

	if (nacre_fid_parse(arg, &fid) < 0) {
		verb_err("fid2path", "invalid FID '%s' (expected [0xSEQ:0xOID:0xVER] as path2fid "
			 "prints it; the brackets are optional)", arg);
		return -EINVAL;
	}
	nacre_fid_format(&fid, fidtxt, sizeof(fidtxt));
	snprintf(name, sizeof(name), "%s%s", NACRE_VXATTR_LINKPATHS, fidtxt);
	rc = read_list(o->root, name, &buf, &len);
	if (rc < 0) {
		verb_err("fid2path", "cannot find %s %s: %s", fsarg, arg, strerror(-rc));
		return rc;
	}
	int linkno = o->linkno >= 0 ? o->linkno : 0;

	for (;;) {
		int old = linkno;
		const char *p = pick_link(buf, len, &linkno);

		if (!p)
			break;
		/* lfs's path has no leading '/', and is "/" for the root */
		const char *rel = strcmp(p, "/") == 0 ? "/" : p + (p[0] == '/');

		if (o->print_fid)
			printf("%s ", arg);
		if (o->print_link)
			printf("%d ", linkno);
		if (o->by_path)
			printf("%s/%s\n", strcmp(o->root, "/") == 0 ? "" : o->root, rel);
		else
			printf("%s\n", rel);
		if (o->linkno >= 0 || old == linkno)
			break;
	}
	free(buf);
	return 0;
}

int cli_fid2path(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"cur", no_argument, NULL, 'c'},
		{"current", no_argument, NULL, 'c'},
		{"print-link", no_argument, NULL, 'c'},
		{"print-fid", no_argument, NULL, 'f'},
		{"link", required_argument, NULL, 'l'},
		{NULL, 0, NULL, 0},
	};
	struct f2p_opts o = {.linkno = -1};
	char root[PATH_MAX];
	int64_t v;
	int opt, rc = 0;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "cfl:r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o.print_link = 1;
			break;
		case 'f':
			o.print_fid = 1;
			break;
		case 'l':
			if (parse_i64(optarg, 0, INT_MAX, &v) < 0) {
				verb_err("fid2path", "invalid linkno '%s' (a link number: 0 is the "
					 "first)", optarg);
				cli_usage(stderr, "fid2path");
				return 1;
			}
			o.linkno = (int)v;
			break;
		case 'r': /* lfs's changelog record number: accepted and ignored, as lfs does */
			if (parse_i64(optarg, 0, INT64_MAX, &v) < 0) {
				verb_err("fid2path", "invalid recno '%s'", optarg);
				cli_usage(stderr, "fid2path");
				return 1;
			}
			break;
		default:
			verb_err("fid2path", "unrecognized option '%s'", argv[optind - 1]);
			cli_usage(stderr, "fid2path");
			return 1;
		}
	}
	if (argc - optind < 2) {
		cli_err("fid2path: need a MOUNT (or FSNAME) and at least one FID");
		cli_usage(stderr, "fid2path");
		return 1;
	}
	rc = find_root(argv[optind], root, sizeof(root), &o.by_path);
	if (rc < 0)
		return -rc;
	o.root = root;
	for (int i = optind + 1; i < argc; i++) {
		int err = fid2path_one(&o, argv[i], argv[optind]);

		if (err < 0 && rc == 0)
			rc = -err;
	}
	return rc;
}
