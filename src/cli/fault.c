/* fault.c - `nacre fault set|list|clear`: fault points of a server (Lustre's fail_loc,
 * docs/recovery.md), armed through libnacre's FAULT_SET on a connection of its own, with
 * the cluster key. The server is named, or it is the MDS of --mds or of the nacre mount
 * the working directory is in (or the only one below it).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fault_args.h"
#include "common/util.h"
#include "nacre/nacre.h"

struct fault_opts {
	const char *key_file;
	const char *fsname;
	const char *mds; /* a mount spec */
};

/* The MDS of a mount spec into a (address and fsname). 0 or -EINVAL (printed). */
static int from_spec(const char *spec, const char *what, struct cli_fault_args *a)
{
	char subdir[NACRE_PATH_MAX + 1], why[256];

	if (nacre_parse_spec(spec, a->addr, sizeof(a->addr), a->fsname, sizeof(a->fsname),
			     subdir, sizeof(subdir), why, sizeof(why)) < 0) {
		cli_err("fault: %s '%s': %s", what, spec, why);
		return -EINVAL;
	}
	return 0;
}

/* The nacre mount the working directory is in, else the only one below it (not from "/":
 * that would be any mount of the machine). 0, or -ENOENT (none, or several below: nothing
 * printed). */
static int mount_here(struct cli_mount *out)
{
	char cwd[PATH_MAX];
	struct cli_mount *m;
	int n, found = 0;

	if (cli_mount_of(".", out) == 0)
		return 0;
	if (cli_abspath(".", cwd, sizeof(cwd)) < 0 || strcmp(cwd, "/") == 0)
		return -ENOENT;
	m = calloc(CLI_MOUNTS_MAX, sizeof(*m));
	if (!m)
		return -ENOMEM;
	n = cli_list_mounts(m, CLI_MOUNTS_MAX);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(cwd);

		if (strncmp(m[i].dir, cwd, len) == 0 && m[i].dir[len] == '/') {
			*out = m[i];
			found++;
		}
	}
	free(m);
	return found == 1 ? 0 : -ENOENT;
}

/* Fills what the words left out: the server (--mds, or the mount here) and its fsname.
 * 0, or -1 after printing what is missing. */
static int complete_target(const struct fault_opts *o, struct cli_fault_args *a)
{
	struct cli_fault_args dflt;
	struct cli_mount here;
	int have_dflt = 0;

	memset(&dflt, 0, sizeof(dflt));
	if (o->mds) {
		if (from_spec(o->mds, "--mds", &dflt) < 0)
			return -1;
		have_dflt = 1;
	} else if ((!a->addr[0] || (!a->fsname[0] && !o->fsname)) && mount_here(&here) == 0) {
		if (from_spec(here.source, "the mount source of", &dflt) < 0)
			return -1;
		have_dflt = 1;
	}
	if (!a->addr[0]) {
		if (!have_dflt) {
			cli_err("fault: which server? give SERVER (host:port of a nacre-mds or "
				"nacre-oss), --mds SPEC, or run inside a nacre mount");
			return -1;
		}
		str_copy(a->addr, dflt.addr, sizeof(a->addr));
	}
	if (o->fsname)
		str_copy(a->fsname, o->fsname, sizeof(a->fsname));
	else if (!a->fsname[0] && have_dflt)
		str_copy(a->fsname, dflt.fsname, sizeof(a->fsname));
	if (!a->fsname[0]) {
		cli_err("fault: which file system does %s serve? give --fsname NAME or SERVER as "
			"host:port:/NAME",
			a->addr);
		return -1;
	}
	return 0;
}

/* The armed points, one per line. */
static void print_armed(const char *armed)
{
	for (const char *p = armed; *p;) {
		size_t n = strcspn(p, ";");

		if (n)
			printf("%.*s\n", (int)n, p);
		p += n;
		if (*p == ';')
			p++;
	}
}

int cli_fault(int argc, char **argv)
{
	static const struct option lo[] = {{"key-file", required_argument, NULL, 'k'},
					   {"fsname", required_argument, NULL, 'f'},
					   {"mds", required_argument, NULL, 'm'},
					   {NULL, 0, NULL, 0}};
	struct fault_opts o = {0};
	struct cli_fault_args a;
	char err[1100], armed[CLI_FAULT_SPEC_MAX + 1];
	const char *verb;
	int c;

	if (argc < 2 || argv[1][0] == '-') {
		cli_err("fault: expected set, list or clear");
		cli_usage(stderr, "fault");
		return 1;
	}
	verb = argv[1];
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "", lo, NULL)) != -1) {
		switch (c) {
		case 'k': o.key_file = optarg; break;
		case 'f': o.fsname = optarg; break;
		case 'm': o.mds = optarg; break;
		default: cli_usage(stderr, "fault"); return 1;
		}
	}
	if (cli_fault_args_parse(verb, argc - 1 - optind, argv + 1 + optind, &a, err,
				 sizeof(err)) < 0) {
		cli_err("fault %s: %s", verb, err);
		cli_usage(stderr, "fault");
		return 1;
	}
	if (complete_target(&o, &a) < 0)
		return 1;
	char mount_key[PATH_MAX] = "";
	struct cli_mount here;
	if (!cli_key_file_or(o.key_file, NULL) && mount_here(&here) == 0)
		cli_mount_key_file(here.dir, mount_key, sizeof(mount_key));
	o.key_file = cli_key_file_or(o.key_file, mount_key);
	if (!o.key_file) {
		cli_err("fault: no cluster key: give --key-file FILE (the servers' --key-file), "
			"set NACRE_KEY_FILE, or run it in a mount made with the cluster key");
		return 1;
	}
	if (nacre_fault_set(a.addr, a.fsname, o.key_file, a.spec, armed, sizeof(armed), err,
			    sizeof(err)) < 0) {
		cli_err("fault %s: %s", verb, err);
		return 1;
	}
	print_armed(armed);
	return 0;
}
