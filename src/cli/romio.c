/* romio.c - `nacre romio-hints`: a ROMIO hints file matching a path's layout.
 *
 * Debian's ROMIO has no nacre (or Lustre) driver, so on a FUSE mount it uses its generic UFS
 * driver, which keeps striping_unit (it aligns collective-buffering file domains to it) but
 * ignores striping_factor. The hints below make ROMIO's aggregators line up with the
 * stripes: one aggregator per stripe (cb_nodes), spread over the nodes (cb_config_list). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/layout.h"
#include "common/util.h"
#include "common/vxattr.h"

#define LAYOUT_TEXT_MAX 4096 /* as the mount formats nacre.layout */

/* Layout of path if it is a file, the default of path (a directory) or of its parent when
 * path does not exist yet; count and size left 0 mean "the file system default". */
static int find_layout(const char *path, struct nacre_layout *l)
{
	char text[LAYOUT_TEXT_MAX];
	char dir[PATH_MAX];
	struct stat st;
	int n;

	memset(l, 0, sizeof(*l));
	l->stripe_offset = -1;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		str_copy(dir, path, sizeof(dir));
		path = dirname(dir);
	}
	if (cli_check_nacre(path, NULL, 0) < 0)
		return -ENOTSUP;
	n = cli_getxattr(path, NACRE_VXATTR_LAYOUT, text, sizeof(text));
	if (n == -ENODATA) {
		char root[PATH_MAX];
		if (cli_mount_root(path, root, sizeof(root)) == 0)
			n = cli_getxattr(root, NACRE_VXATTR_LAYOUT, text, sizeof(text));
	}
	if (n == -ENODATA)
		return 0;
	if (n < 0)
		return n;
	return layout_parse(text, (size_t)n, l) < 0 ? -EPROTO : 0;
}

/* OSTs of the file system holding path (count -1 means "all of them"). */
static int count_osts(const char *path)
{
	char root[PATH_MAX], buf[16384];
	struct nacre_target t;
	int n = 0;

	if (cli_mount_root(path, root, sizeof(root)) < 0 ||
	    cli_getxattr(root, NACRE_VXATTR_TARGETS, buf, sizeof(buf)) < 0)
		return 1;
	for (char *line = buf; *line;) {
		size_t len = strcspn(line, "\n");
		char *next = line + len + (line[len] != '\0');

		line[len] = '\0';
		if (vxattr_target_parse(line, &t) == 0 && t.type == NACRE_TGT_OST)
			n++;
		line = next;
	}
	return n > 0 ? n : 1;
}

int cli_romio_hints(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"nodes", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	struct nacre_layout l;
	int64_t nodes = 1;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "N:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'N':
			if (parse_i64(optarg, 1, 1 << 20, &nodes)) {
				cli_err("romio-hints: -N %s: expected a node count >= 1", optarg);
				return 1;
			}
			break;
		case 'h':
			cli_usage(stdout, "romio-hints");
			return 0;
		default:
			cli_usage(stderr, "romio-hints");
			return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err("romio-hints: give exactly one PATH");
		cli_usage(stderr, "romio-hints");
		return 1;
	}
	const char *path = argv[optind];
	rc = find_layout(path, &l);
	if (rc == -ENOTSUP)
		return 1; /* cli_check_nacre said why */
	if (rc < 0) {
		cli_err("romio-hints: cannot read the layout of %s: %s", path, strerror(-rc));
		return 1;
	}
	int32_t count = l.stripe_count == 0 ? 1 : l.stripe_count;
	if (count < 0)
		count = count_osts(path);
	uint32_t size = l.stripe_size ? l.stripe_size : NACRE_STRIPE_SIZE_DEFAULT;
	int64_t per_node = (count + nodes - 1) / nodes;

	printf("# ROMIO hints for %s: %d stripe%s of %u bytes (nacre romio-hints)\n", path,
	       (int)count, count == 1 ? "" : "s", size);
	printf("# use: export ROMIO_HINTS=FILE (OpenMPI: also OMPI_MCA_io=romio321)\n");
	printf("striping_unit %u\n", size);
	printf("striping_factor %d\n", (int)count);
	printf("romio_cb_write enable\n");
	printf("cb_nodes %d\n", (int)count);
	printf("cb_config_list *:%lld\n", (long long)per_node);
	return 0;
}
