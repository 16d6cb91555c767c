/* stripe.c - `nacre setstripe`, in lfs's syntax (getstripe is in getstripe.c).
 *
 * It goes through the nacre.layout virtual xattr of the mount (text form of layout.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli/cli.h"
#include "nacre/nacre.h"
#include "common/layout.h"
#include "common/util.h"

#define LAYOUT_TEXT_MAX 4096

/* ---------------------------------------------------------------- setstripe */

static int set_layout_xattr(const char *path, const struct nacre_layout *l)
{
	char text[LAYOUT_TEXT_MAX];
	int n = layout_format(l, text, sizeof(text));

	if (n < 0 || (size_t)n >= sizeof(text))
		return -EINVAL;
	if (setxattr(path, NACRE_VXATTR_LAYOUT, text, (size_t)n, 0) < 0)
		return -errno;
	return 0;
}

static void report_set_error(const char *path, int rc, const struct nacre_layout *l)
{
	switch (-rc) {
	case ENOSPC:
		cli_err("cannot set the layout of %s: no OST can take it (are the OSTs up? "
			"see `nacre df`; try a smaller -c)",
			path);
		break;
	case EINVAL:
		if (l->stripe_offset >= 0)
			cli_err("cannot set the layout of %s: stripe index %d is not an OST of "
				"this file system (`nacre df` lists the OST indices)",
				path, l->stripe_offset);
		else
			cli_err("cannot set the layout of %s: the file system refused it as "
				"invalid (check -c, -S and -i against `nacre df`)",
				path);
		break;
	case EPERM:
	case EACCES:
		cli_err("cannot set the layout of %s: permission denied (you must own it)", path);
		break;
	case ENOTEMPTY:
	case EBUSY:
	case EEXIST:
		cli_err("cannot change the layout of %s: it already has data (use a new file)",
			path);
		break;
	default:
		cli_err("cannot set the layout of %s: %s", path, strerror(-rc));
	}
}

/* Creates path as an empty file and gives it layout l; removes it again if that fails so
 * no file with the wrong layout is left behind. */
static int setstripe_new(const char *path, const struct nacre_layout *l)
{
	char parent[PATH_MAX];

	str_copy(parent, path, sizeof(parent));
	char *slash = strrchr(parent, '/');

	if (!slash)
		str_copy(parent, ".", sizeof(parent));
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	if (cli_check_nacre(parent, NULL, 0) < 0)
		return 1;

	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);

	if (fd < 0) {
		cli_err("cannot create %s: %s", path, strerror(errno));
		return 1;
	}
	close(fd);
	int rc = set_layout_xattr(path, l);

	if (rc < 0) {
		report_set_error(path, rc, l);
		unlink(path);
		return 1;
	}
	return 0;
}

static int setstripe_one(const char *path, const struct nacre_layout *l, int del)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		if (errno == ENOENT && !del)
			return setstripe_new(path, l);
		cli_err("cannot access %s: %s", path, strerror(errno));
		return 1;
	}
	if (cli_check_nacre(path, NULL, 0) < 0)
		return 1;
	if (del) {
		if (!S_ISDIR(st.st_mode)) {
			cli_err("cannot delete the default layout of %s: not a directory "
				"(-d applies to directories only)",
				path);
			return 1;
		}
		if (removexattr(path, NACRE_VXATTR_LAYOUT) < 0 && errno != ENODATA) {
			cli_err("cannot delete the default layout of %s: %s", path,
				strerror(errno));
			return 1;
		}
		return 0;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		cli_err("cannot change the layout of %s: it already has data (use a new file)",
			path);
		return 1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		cli_err("cannot set the layout of %s: only regular files and directories have "
			"layouts",
			path);
		return 1;
	}
	int rc = set_layout_xattr(path, l);

	if (rc < 0) {
		report_set_error(path, rc, l);
		return 1;
	}
	return 0;
}

int cli_setstripe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"stripe-count", required_argument, NULL, 'c'},
		{"stripe-size", required_argument, NULL, 'S'},
		{"stripe-index", required_argument, NULL, 'i'},
		{"delete", no_argument, NULL, 'd'},
		{"pool", required_argument, NULL, 'p'},
		{NULL, 0, NULL, 0},
	};
	struct nacre_layout l = {.pattern = NACRE_PATTERN_RAID0, .stripe_offset = -1};
	char err[256];
	int del = 0, have_layout = 0, opt;
	int64_t v;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "c:S:i:dp:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (parse_i64(optarg, -1, NACRE_MAX_STRIPES, &v) < 0) {
				cli_err("invalid stripe count '%s': use -1 (every OST), 0 (the "
					"default) or 1..%d",
					optarg, NACRE_MAX_STRIPES);
				return 1;
			}
			l.stripe_count = (int32_t)v;
			have_layout = 1;
			break;
		case 'S':
			if (cli_parse_stripe_size(optarg, &l.stripe_size, err, sizeof(err)) < 0) {
				cli_err("%s", err);
				return 1;
			}
			have_layout = 1;
			break;
		case 'i':
			if (parse_i64(optarg, -1, 65535, &v) < 0) {
				cli_err("invalid stripe index '%s': use an OST index (see `nacre "
					"df`) or -1 to let the MDS choose",
					optarg);
				return 1;
			}
			l.stripe_offset = (int32_t)v;
			have_layout = 1;
			break;
		case 'd':
			del = 1;
			break;
		case 'p':
			/* Every OST is in the one implicit pool: a named pool cannot exist. */
			cli_err("setstripe: pool '%s' does not exist on this file system (nacre has "
				"no OST pools yet: leave out -p, or choose OSTs with -i and -c)",
				optarg);
			return 1;
		default:
			cli_err("setstripe: unknown option or missing value '%s'",
				argv[optind - 1]);
			cli_usage(stderr, "setstripe");
			return 1;
		}
	}
	if (optind >= argc) {
		cli_err("setstripe: no FILE or DIRECTORY given");
		cli_usage(stderr, "setstripe");
		return 1;
	}
	if (del && have_layout) {
		cli_err("setstripe: -d removes a default layout; it cannot be combined with -c, "
			"-S or -i");
		return 1;
	}
	if (layout_check_request(&l, err, sizeof(err)) < 0) {
		cli_err("setstripe: %s", err);
		return 1;
	}
	int rc = 0;

	for (int i = optind; i < argc; i++)
		rc |= setstripe_one(argv[i], &l, del);
	return rc;
}
