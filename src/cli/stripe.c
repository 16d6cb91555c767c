/* stripe.c - `nacre setstripe` and `nacre getstripe`, in lfs's syntax and output format.
 *
 * Both go through the nacre.layout virtual xattr of the mount (text form of layout.h). */
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
#include <unistd.h>

#include "cli/cli.h"
#include "nacre/nacre.h"
#include "common/layout.h"
#include "common/util.h"

#define LAYOUT_TEXT_MAX 4096
#define LOV_MAGIC_V1 0x0BD10BD0u

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
		{NULL, 0, NULL, 0},
	};
	struct nacre_layout l = {.pattern = NACRE_PATTERN_RAID0, .stripe_offset = -1};
	char err[256];
	int del = 0, have_layout = 0, opt;
	int64_t v;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "c:S:i:d", longopts, NULL)) != -1) {
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

/* ---------------------------------------------------------------- getstripe */

struct gs_opts {
	int want_count, want_size, want_index; /* bare-value selections */
	int verbose, yaml;
	/* as lfs's max_depth: 1 (a named directory and its entries), 0 (-d, or a bare
	 * selection without -v: the path itself, unnamed), -1 (-r: everything below) */
	int depth;
};

/* lfs names each path it prints unless it shows only the paths given (depth 0). */
static int names_shown(const struct gs_opts *o)
{
	return o->depth != 0 && !o->yaml;
}

static int nbare(const struct gs_opts *o)
{
	return o->want_count + o->want_size + o->want_index;
}

/* Reads and parses nacre.layout of path. Returns 0, -ENODATA (no default) or -errno. */
static int read_layout(const char *path, struct nacre_layout *l)
{
	char text[LAYOUT_TEXT_MAX];
	int n = cli_getxattr(path, NACRE_VXATTR_LAYOUT, text, sizeof(text));

	if (n < 0)
		return n;
	memset(l, 0, sizeof(*l));
	if (layout_parse(text, (size_t)n, l) < 0)
		return -EPROTO;
	return 0;
}

/* The file system default: the mount root's default layout (returns 1), else 1 stripe of
 * 1 MiB (returns 0). */
static int fs_default(const char *path, struct nacre_layout *l)
{
	char root[PATH_MAX];

	if (cli_mount_root(path, root, sizeof(root)) == 0 && read_layout(root, l) == 0)
		return 1;
	memset(l, 0, sizeof(*l));
	l->pattern = NACRE_PATTERN_RAID0;
	l->stripe_count = 1;
	l->stripe_size = NACRE_STRIPE_SIZE_DEFAULT;
	l->stripe_offset = -1;
	return 0;
}

/* A directory default may leave count and size at 0 ("inherit"): show what applies. */
static void resolve_default(const char *path, struct nacre_layout *l)
{
	if (l->stripe_count != 0 && l->stripe_size != 0)
		return;
	struct nacre_layout def;

	fs_default(path, &def);
	if (l->stripe_count == 0)
		l->stripe_count = def.stripe_count ? def.stripe_count : 1;
	if (l->stripe_size == 0)
		l->stripe_size = def.stripe_size ? def.stripe_size : NACRE_STRIPE_SIZE_DEFAULT;
}

static void print_bare(const struct gs_opts *o, const char *prefix, int32_t count,
		       uint32_t size, int32_t index)
{
	int labels = nbare(o) > 1;

	if (o->want_count) {
		if (labels)
			printf("%-19s", prefix[0] ? "lmm_stripe_count:" : "stripe_count:");
		printf("%d\n", count);
	}
	if (o->want_size) {
		if (labels)
			printf("%-19s", prefix[0] ? "lmm_stripe_size:" : "stripe_size:");
		printf("%u\n", size);
	}
	if (o->want_index) {
		if (labels)
			printf("%-19s", prefix[0] ? "lmm_stripe_offset:" : "stripe_offset:");
		printf("%d\n", index);
	}
}

/* Whether path is a released HSM file (its objects are gone, its data in the archive). */
static int is_released(const char *path)
{
	char text[64];
	unsigned long state;
	int n = cli_getxattr(path, NACRE_VXATTR_HSM_STATE, text, sizeof(text));

	return n > 0 && sscanf(text, "%lx", &state) == 1 && (state & NACRE_HS_RELEASED);
}

/* As lfs: a released file shows pattern "released", layout generation 0 and no objects. */
static void print_file(const char *path, const struct gs_opts *o, const struct nacre_layout *l,
		       const struct nacre_fid *fid, const char *fidtxt)
{
	int released = l->nosts == 0 || is_released(path);
	int32_t first = l->nosts > 0 ? (int32_t)l->ost_idx[0] : l->stripe_offset;
	const char *pattern = released ? "released" : "raid0";

	if (names_shown(o))
		printf("%s\n", path);
	if (nbare(o)) {
		print_bare(o, "lmm_", l->stripe_count, l->stripe_size, first);
		return;
	}
	if (o->verbose) {
		printf("lmm_magic:         0x%08X\n", LOV_MAGIC_V1);
		printf("lmm_seq:           %#" PRIx64 "\n", fid->seq);
		printf("lmm_object_id:     0x%x\n", fid->oid);
		printf("lmm_fid:           %s\n", fidtxt);
	}
	printf("lmm_stripe_count:  %d\n", l->stripe_count);
	printf("lmm_stripe_size:   %u\n", l->stripe_size);
	printf("lmm_pattern:       %s\n", pattern);
	printf("lmm_layout_gen:    %u\n", released ? 0 : l->gen);
	printf("lmm_stripe_offset: %d\n", first);
	if (o->yaml) {
		if (released)
			return;
		printf("lmm_objects:\n");
		for (uint32_t i = 0; i < l->nosts; i++)
			printf("      - l_ost_idx: %u\n        l_fid:     %#" PRIx64 ":0x%x:0x%x\n",
			       l->ost_idx[i], fid->seq, fid->oid, fid->ver);
		return;
	}
	if (!released) {
		/* nacre has no per-object ids: objid is the file's oid, the object name
		 * being (FID, stripe, generation). */
		printf("\tobdidx\t\t objid\t\t objid\t\t group\n");
		for (uint32_t i = 0; i < l->nosts; i++)
			printf("\t%6u\t%14llu\t%#13llx\t%14llu\n", l->ost_idx[i],
			       (unsigned long long)fid->oid, (unsigned long long)fid->oid, 0ULL);
	}
	printf("\n");
}

/* A directory's default layout, then a blank line, as lfs prints it. pattern is "raid0" for a
 * default someone set, "0" (lfs's unset pattern) for the built-in one. */
static void print_dir(const char *path, const struct gs_opts *o, const struct nacre_layout *l,
		      const char *pattern)
{
	if (names_shown(o))
		printf("%s\n", path);
	if (nbare(o)) {
		print_bare(o, "", l->stripe_count, l->stripe_size, l->stripe_offset);
		return;
	}
	if (o->yaml) {
		printf("stripe_count:  %d\n", l->stripe_count);
		printf("stripe_size:   %u\n", l->stripe_size);
		printf("pattern:       %s\n", pattern);
		printf("stripe_offset: %d\n\n", l->stripe_offset);
		return;
	}
	printf("stripe_count:  %d stripe_size:   %u pattern:       %s stripe_offset: %d\n\n",
	       l->stripe_count, l->stripe_size, pattern, l->stripe_offset);
}

static int show(const char *path, struct gs_opts *o, int top);

static int show_entries(const char *dir, struct gs_opts *o)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	int rc = 0;

	if (n < 0) {
		cli_err("cannot list %s: %s", dir, strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;

		if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
			char child[PATH_MAX];
			size_t dl = strlen(dir);
			int w = snprintf(child, sizeof(child), "%s%s%s", dir,
					 (dl && dir[dl - 1] == '/') ? "" : "/", name);

			if (w < 0 || (size_t)w >= sizeof(child)) {
				cli_err("path too long: %s/%s", dir, name);
				rc = 1;
			} else {
				rc |= show(child, o, 0);
			}
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

/* Shows one path; top is 1 for a path named on the command line. */
static int show(const char *path, struct gs_opts *o, int top)
{
	struct stat st;
	char fidtxt[NACRE_FID_STR_MAX];
	struct nacre_fid fid = {0, 0, 0};
	struct nacre_layout l;

	if ((top ? stat(path, &st) : lstat(path, &st)) < 0) {
		cli_err("cannot access %s: %s", path, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return top ? (cli_err("%s has no layout: not a regular file or directory", path), 1)
			   : 0;
	if (cli_check_nacre(path, fidtxt, sizeof(fidtxt)) < 0)
		return 1;
	if (nacre_fid_parse(fidtxt, &fid) < 0) {
		cli_err("%s: the mount returned a malformed FID '%s'", path, fidtxt);
		return 1;
	}

	int rc = read_layout(path, &l);

	if (S_ISREG(st.st_mode)) {
		if (rc < 0) {
			cli_err("cannot read the layout of %s: %s", path, strerror(-rc));
			return 1;
		}
		print_file(path, o, &l, &fid, fidtxt);
		return 0;
	}

	/* A directory: its default layout, or the file system's for a named directory. */
	if (rc == 0) {
		resolve_default(path, &l);
		print_dir(path, o, &l, "raid0");
	} else if (rc == -ENODATA) {
		if (top) {
			int set = fs_default(path, &l);
			resolve_default(path, &l);
			print_dir(path, o, &l, set ? "raid0" : "0");
		} else if (names_shown(o)) {
			printf("%s\n", path);
		}
	} else {
		cli_err("cannot read the default layout of %s: %s", path, strerror(-rc));
		return 1;
	}
	if (o->depth == 0 || (!top && o->depth == 1))
		return 0;
	return show_entries(path, o);
}

int cli_getstripe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"stripe-count", no_argument, NULL, 'c'},
		{"stripe-size", no_argument, NULL, 'S'},
		{"stripe-index", no_argument, NULL, 'i'},
		{"verbose", no_argument, NULL, 'v'},
		{"yaml", no_argument, NULL, 'y'},
		{"directory", no_argument, NULL, 'd'},
		{"recursive", no_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	struct gs_opts o;
	int opt, rc = 0, dir_only = 0, recursive = 0;

	memset(&o, 0, sizeof(o));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "cSivydr", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o.want_count = 1; break;
		case 'S': o.want_size = 1; break;
		case 'i': o.want_index = 1; break;
		case 'v': o.verbose = 1; break;
		case 'y': o.yaml = 1; break;
		case 'd': dir_only = 1; break;
		case 'r': recursive = 1; break;
		default:
			cli_err("getstripe: unknown option '%s'", argv[optind - 1]);
			cli_usage(stderr, "getstripe");
			return 1;
		}
	}
	if (optind >= argc) {
		cli_err("getstripe: no PATH given");
		cli_usage(stderr, "getstripe");
		return 1;
	}
	o.depth = recursive ? -1 : dir_only || (nbare(&o) && !o.verbose) ? 0 : 1;
	for (int i = optind; i < argc; i++)
		rc |= show(argv[i], &o, 1);
	return rc;
}
