/* main.c - `nacre`: the command table and dispatch (lfs's command table is the model). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"

#ifndef NACRE_VERSION
#define NACRE_VERSION "0.1.0"
#endif

static int cmd_help(int argc, char **argv);

static const struct cli_cmd commands[] = {
	{"setstripe", cli_setstripe, "set the layout of a new or empty file, or a directory's default",
	 "usage: nacre setstripe [-c COUNT] [-S SIZE] [-i INDEX] FILE|DIRECTORY\n"
	 "       nacre setstripe -d DIRECTORY\n"
	 "  -c, --stripe-count N  stripes per file (0 = file system default, -1 = every OST)\n"
	 "  -S, --stripe-size S   bytes per stripe: a multiple of 64K, suffix K/M/G (base 2);\n"
	 "                        a bare number below 4096 means KiB\n"
	 "  -i, --stripe-index I  first OST (-1 = let the MDS choose)\n"
	 "  -d, --delete          remove a directory's default layout\n"
	 "A path that does not exist is created as an empty file with that layout.\n"},
	{"getstripe", cli_getstripe, "show layouts of files and directory defaults",
	 "usage: nacre getstripe [-c|-S|-i] [-v] [-y] [-d] [-r] PATH...\n"
	 "  -c, --stripe-count   print only the stripe count\n"
	 "  -S, --stripe-size    print only the stripe size\n"
	 "  -i, --stripe-index   print only the first OST index\n"
	 "  -v, --verbose        add lmm_magic, lmm_seq, lmm_object_id and lmm_fid\n"
	 "  -y, --yaml           YAML output\n"
	 "  -d, --directory      show a directory itself, not its entries\n"
	 "  -r, --recursive      descend into subdirectories\n"
	 "objid is the file's FID oid: nacre names objects by (FID, stripe, generation) and has\n"
	 "no per-object ids.\n"},
	{"df", cli_df, "space and inodes of each target",
	 "usage: nacre df [-h] [-i] [PATH]\n"
	 "  -h, --human-readable  sizes in K/M/G/T (base 2)\n"
	 "  -i, --inodes          inodes instead of blocks\n"
	 "Without PATH every mounted nacre file system is shown.\n"},
	{"path2fid", cli_path2fid, "print the FID of paths",
	 "usage: nacre path2fid PATH...\n"},
	{"fid2path", cli_fid2path, "print the paths of FIDs",
	 "usage: nacre fid2path MOUNT|FSNAME FID...\n"
	 "FID is [0xSEQ:0xOID:0xVER]; the brackets are optional.\n"},
	{"up", cli_up, "start a whole cluster on this machine and mount it",
	 "usage: nacre up --dir DIR [--osts N] [--oss N] [--mount MNT] [--fsname NAME] [--port P]\n"
	 "  --dir DIR      data, logs, key and pid file of the cluster (created if missing)\n"
	 "  --osts N       number of OSTs (default 4)\n"
	 "  --oss N        number of nacre-oss processes sharing them (default: one per OST)\n"
	 "  --mount MNT    mount point (default DIR/mnt)\n"
	 "  --fsname NAME  file system name (default nacre)\n"
	 "  --port P       MDS port on 127.0.0.1 (default 9400); OSS ports follow it\n"},
	{"down", cli_down, "stop a cluster started by `nacre up`",
	 "usage: nacre down --dir DIR\n"},
	{"help", cmd_help, "list commands, or show the usage of one", "usage: nacre help [COMMAND]\n"},
};

static const struct cli_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

void cli_usage(FILE *f, const char *verb)
{
	const struct cli_cmd *c = find_cmd(verb);

	if (c)
		fputs(c->usage, f);
}

static void list_commands(FILE *f)
{
	fputs("usage: nacre COMMAND [OPTIONS] [ARGS]\n\ncommands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\nRun `nacre COMMAND --help` for the options of one command.\n", f);
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		list_commands(stdout);
		return 0;
	}
	const struct cli_cmd *c = find_cmd(argv[1]);

	if (!c) {
		cli_err("no command '%s': run `nacre help` for the list", argv[1]);
		return 1;
	}
	fputs(c->usage, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		list_commands(stderr);
		return 1;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("nacre %s\n", NACRE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		list_commands(stdout);
		return 0;
	}
	const struct cli_cmd *c = find_cmd(argv[1]);

	if (!c) {
		cli_err("unknown command '%s': run `nacre help` for the list", argv[1]);
		return 1;
	}
	/* "--help" is handled here for every verb; verbs with their own -h (df) see it too. */
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			fputs(c->usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--") == 0)
			break;
	}
	return c->run(argc - 1, argv + 1);
}
