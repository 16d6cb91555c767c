/* fid.c - `nacre path2fid` and `nacre fid2path`, as lfs prints them. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/util.h"
#include "nacre/nacre.h"

int cli_path2fid(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2) {
		cli_err("path2fid: no PATH given");
		cli_usage(stderr, "path2fid");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		char fid[NACRE_FID_STR_MAX];

		if (cli_check_nacre(argv[i], fid, sizeof(fid)) < 0) {
			rc = 1;
			continue;
		}
		if (argc > 2)
			printf("%s: %s\n", argv[i], fid);
		else
			printf("%s\n", fid);
	}
	return rc;
}

/* MOUNT may be a mount point (or any directory on one) or a file system name. */
static int find_root(const char *arg, char *root, size_t len)
{
	struct stat st;

	if (stat(arg, &st) == 0) {
		if (cli_check_nacre(arg, NULL, 0) < 0)
			return -1;
		int rc = cli_mount_root(arg, root, len);

		if (rc < 0) {
			cli_err("cannot find the mount point of %s: %s", arg, strerror(-rc));
			return -1;
		}
		return 0;
	}
	struct cli_mount m[64];
	int n = cli_list_mounts(m, 64);

	for (int i = 0; i < n; i++) {
		char fsname[64];

		if (cli_getxattr(m[i].dir, NACRE_VXATTR_FSNAME, fsname, sizeof(fsname)) < 0)
			continue;
		fsname[strcspn(fsname, "\n")] = '\0';
		if (strcmp(fsname, arg) == 0) {
			str_copy(root, m[i].dir, len);
			return 0;
		}
	}
	cli_err("%s is neither a mounted nacre directory nor the name of a mounted nacre file "
		"system",
		arg);
	return -1;
}

int cli_fid2path(int argc, char **argv)
{
	char root[PATH_MAX];
	int rc = 0;

	if (argc < 3) {
		cli_err("fid2path: need a MOUNT (or FSNAME) and at least one FID");
		cli_usage(stderr, "fid2path");
		return 1;
	}
	if (find_root(argv[1], root, sizeof(root)) < 0)
		return 1;
	for (int i = 2; i < argc; i++) {
		struct nacre_fid fid;
		char fidtxt[NACRE_FID_STR_MAX], name[128], path[NACRE_PATH_MAX + 1];

		if (nacre_fid_parse(argv[i], &fid) < 0) {
			cli_err("invalid FID '%s': expected [0xSEQ:0xOID:0xVER] as path2fid prints",
				argv[i]);
			rc = 1;
			continue;
		}
		nacre_fid_format(&fid, fidtxt, sizeof(fidtxt));
		snprintf(name, sizeof(name), "%s%s", NACRE_VXATTR_FID2PATH, fidtxt);
		int n = cli_getxattr(root, name, path, sizeof(path));

		if (n < 0) {
			if (n == -ENOENT || n == -ENODATA)
				cli_err("%s: no such file in %s (it may have been deleted)", fidtxt,
					root);
			else
				cli_err("%s: cannot resolve in %s: %s", fidtxt, root,
					strerror(-n));
			rc = 1;
			continue;
		}
		path[strcspn(path, "\n")] = '\0';
		/* The mount answers relative to its root, starting with '/'. */
		if (strcmp(root, "/") == 0)
			printf("%s\n", path);
		else if (strcmp(path, "/") == 0 || path[0] == '\0')
			printf("%s\n", root);
		else
			printf("%s%s%s\n", root, path[0] == '/' ? "" : "/", path);
	}
	return rc;
}
