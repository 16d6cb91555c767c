/* df.c - `nacre df`: per-target space and inodes, in the column format of `lfs df`; and
 * `nacre osts`, `nacre mdts`: the target lists, as lfs prints them.
 *
 * The mount serves the cluster registry as the nacre.targets xattr of its root, one line
 * per target (nacre/nacre_vxattr.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"
#include "common/vxattr.h"

#define DF_MAX_TARGETS 1024
#define TARGETS_TEXT_MAX (DF_MAX_TARGETS * 160)

struct df_opts {
	int human;
	int inodes;
};

/* Formats one number column: raw (11 wide) or, with -h, base-2 units as lfs cooks them. */
static void fmt_num(char *buf, size_t len, unsigned long long v, int human)
{
	if (human) {
		double d = (double)v;
		int radix = 0;

		while (d > 1024.0 && radix < 8) {
			d /= 1024.0;
			radix++;
		}
		if (radix > 0) {
			snprintf(buf, len, "%8.1f%c", d, "KMGTPEZY"[radix - 1]);
			return;
		}
	}
	snprintf(buf, len, "%11llu", v);
}

/* Use% rounded up, as df(1) and lfs do. */
static int ratio(unsigned long long used, unsigned long long avail)
{
	double r = 0;

	if (used + avail > 0)
		r = (double)used / (double)(used + avail) * 100.0;
	return (r - (int)r) > 0 ? (int)r + 1 : (int)r;
}

static void print_row(const char *uuid, const struct df_opts *o, unsigned long long total,
		      unsigned long long used, unsigned long long avail, const char *mnt,
		      const char *type, unsigned index)
{
	char t[32], u[32], a[32], r[16];
	int scale = o->human && !o->inodes ? 1024 : 1; /* KiB -> bytes for -h */

	fmt_num(t, sizeof(t), total * scale, o->human);
	fmt_num(u, sizeof(u), used * scale, o->human);
	fmt_num(a, sizeof(a), avail * scale, o->human);
	snprintf(r, sizeof(r), "%3d%%", ratio(used, avail));
	printf("%-20s %11s %11s %11s %4s %s", uuid, t, u, a, r, mnt);
	if (type)
		printf("[%s:%u]", type, index);
	printf("\n");
}

static int parse_targets(char *text, struct nacre_target *t, int max)
{
	int n = 0;
	char *line = text;

	while (line && *line && n < max) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (vxattr_target_parse(line, &t[n]) == 0)
			n++;
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

/* The targets of the file system mounted at root: its name in fsname (64 bytes) and up to
 * DF_MAX_TARGETS targets in t. Returns their count, or -1 after a message. */
static int read_targets(const char *root, char *fsname, struct nacre_target *t)
{
	char *text = malloc(TARGETS_TEXT_MAX);
	int n, nt = -1;

	if (!text) {
		cli_err("out of memory");
		return -1;
	}
	n = cli_getxattr(root, NACRE_VXATTR_FSNAME, fsname, 64);
	if (n < 0) {
		if (n == -ENOTSUP || n == -ENODATA)
			cli_err("%s is not the root of a nacre mount", root);
		else
			cli_err("cannot read the file system name of %s: %s", root, strerror(-n));
		goto out;
	}
	fsname[strcspn(fsname, "\n")] = '\0';
	n = cli_getxattr(root, NACRE_VXATTR_TARGETS, text, TARGETS_TEXT_MAX);
	if (n < 0) {
		cli_err("cannot read the targets of %s: %s (is the MDS reachable?)", root,
			strerror(-n));
		goto out;
	}
	nt = parse_targets(text, t, DF_MAX_TARGETS);
out:
	free(text);
	return nt;
}

/* Prints the table of the file system mounted at root (a mount point). */
static int df_mount(const char *root, void *arg)
{
	const struct df_opts *o = arg;
	char fsname[64];
	struct nacre_target *t = calloc(DF_MAX_TARGETS, sizeof(*t));
	int rc = 1, nt;

	if (!t) {
		cli_err("out of memory");
		return 1;
	}
	nt = read_targets(root, fsname, t);
	if (nt < 0)
		goto out_free;

	if (o->inodes)
		printf("%-20s %11s %11s %11s %4s %s\n", "UUID", "Inodes", "IUsed", "IFree",
		       "IUse%", "Mounted on");
	else
		printf("%-20s %11s %11s %11s %4s %s\n", "UUID", o->human ? "bytes" : "1K-blocks",
		       "Used", "Available", "Use%", "Mounted on"); /* lfs.c: also with -h */

	unsigned long long s_total = 0, s_used = 0, s_avail = 0, ost_ffree = 0;
	int nost = 0;

	/* MDTs first, then OSTs: the registry order, whatever order the lines came in. */
	for (int pass = 0; pass < 2; pass++) {
		const char *want = pass == 0 ? "MDT" : "OST";

		for (int i = 0; i < nt; i++) {
			char uuid[96];

			if (t[i].type != (pass == 0 ? NACRE_TGT_MDT : NACRE_TGT_OST))
				continue;
			if (!t[i].up) {
				char shortname[16];

				snprintf(shortname, sizeof(shortname), "%s%04x", want, t[i].index);
				printf("%-20s: inactive device\n", shortname);
				continue;
			}
			snprintf(uuid, sizeof(uuid), "%s-%s%04x_UUID", fsname, want, t[i].index);
			unsigned long long total, used, avail;

			const struct nacre_statfs *st = &t[i].st;
			if (o->inodes) {
				total = st->files;
				used = st->files - (st->ffree < st->files ? st->ffree : st->files);
				avail = st->ffree;
			} else {
				total = st->kb_total;
				used = st->kb_total - (st->kb_free < st->kb_total ? st->kb_free
										 : st->kb_total);
				avail = st->kb_avail;
			}
			print_row(uuid, o, total, used, avail, root, want, t[i].index);
			if (pass == 1) {
				ost_ffree += st->ffree;
				nost++;
			}
			/* The summary counts space on OSTs and inodes on MDTs, as lfs. */
			if ((pass == 1) != (o->inodes != 0)) {
				s_total += total;
				s_used += used;
				s_avail += avail;
			}
		}
	}
	/* as lfs: a file needs an object too, so fewer free objects on the OSTs than free
	 * inodes on the MDT cap the free inodes (the used count stays right) */
	if (o->inodes && nost && ost_ffree < s_avail) {
		s_total = s_total - s_avail + ost_ffree;
		s_avail = ost_ffree;
	}
	printf("\n");
	print_row("filesystem_summary:", o, s_total, s_used, s_avail, root, NULL, 0);
	printf("\n");
	rc = 0;
out_free:
	free(t);
	return rc;
}

int cli_df(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"human-readable", no_argument, NULL, 'h'},
		{"inodes", no_argument, NULL, 'i'},
		{NULL, 0, NULL, 0},
	};
	struct df_opts o = {0, 0};
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "hi", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h': o.human = 1; break;
		case 'i': o.inodes = 1; break;
		default:
			cli_err("df: unknown option '%s'", argv[optind - 1]);
			cli_usage(stderr, "df");
			return 1;
		}
	}
	return cli_each_root(argc, argv, optind, df_mount, &o);
}

/* `lfs osts` / `lfs mdts`: "OBDS:" or "MDTS:", then "INDEX: UUID ACTIVE|INACTIVE". */
static int list_targets(const char *root, void *arg)
{
	uint32_t type = *(const uint32_t *)arg;
	char fsname[64];
	struct nacre_target *t = calloc(DF_MAX_TARGETS, sizeof(*t));
	int nt;

	if (!t) {
		cli_err("out of memory");
		return 1;
	}
	nt = read_targets(root, fsname, t);
	if (nt >= 0)
		printf("%s:\n", type == NACRE_TGT_OST ? "OBDS" : "MDTS");
	for (int i = 0; i < nt; i++)
		if (t[i].type == type)
			printf("%u: %s-%s%04x_UUID %s\n", t[i].index, fsname,
			       type == NACRE_TGT_OST ? "OST" : "MDT", t[i].index,
			       t[i].up ? "ACTIVE" : "INACTIVE");
	free(t);
	return nt < 0;
}

static int targets_verb(int argc, char **argv, const char *verb, uint32_t type)
{
	if (argc > 1 && argv[1][0] == '-') {
		cli_err("%s: unknown option '%s'", verb, argv[1]);
		cli_usage(stderr, verb);
		return 1;
	}
	return cli_each_root(argc, argv, 1, list_targets, &type);
}

int cli_osts(int argc, char **argv)
{
	return targets_verb(argc, argv, "osts", NACRE_TGT_OST);
}

int cli_mdts(int argc, char **argv)
{
	return targets_verb(argc, argv, "mdts", NACRE_TGT_MDT);
}
