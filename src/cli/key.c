/* key.c - `nacre key issue|revoke|list`: the MDS's table of client and admin keys
 * (docs/security.md, "Keys and roles"), through libnacre on a connection of its own. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "nacre/nacre.h"

#define LIST_MAX 512

struct key_opts {
	const char *key_file;
	const char *mds;
	const char *out;
	int admin;
	char addr[NACRE_ADDR_LIST_MAX];
	char fsname[NACRE_FSNAME_MAX + 1];
};

static int parse(int argc, char **argv, struct key_opts *o)
{
	static const struct option longopts[] = {
		{"key-file", required_argument, NULL, 'k'},
		{"mds", required_argument, NULL, 'm'},
		{"output", required_argument, NULL, 'o'},
		{"admin", no_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	char subdir[NACRE_PATH_MAX + 1], why[256];
	int ch;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((ch = getopt_long(argc, argv, "k:m:o:a", longopts, NULL)) != -1) {
		switch (ch) {
		case 'k': o->key_file = optarg; break;
		case 'm': o->mds = optarg; break;
		case 'o': o->out = optarg; break;
		case 'a': o->admin = 1; break;
		default:
			cli_usage(stderr, "key");
			return -1;
		}
	}
	if (!o->mds)
		o->mds = getenv("NACRE_MDS");
	if (!o->mds) {
		cli_err("key: give --mds HOST:PORT:/FSNAME (or set NACRE_MDS)");
		return -1;
	}
	if (nacre_parse_spec(o->mds, o->addr, sizeof(o->addr), o->fsname, sizeof(o->fsname),
			     subdir, sizeof(subdir), why, sizeof(why)) < 0) {
		cli_err("key: --mds '%s': %s", o->mds, why);
		return -1;
	}
	return 0;
}

int cli_key(int argc, char **argv)
{
	struct key_opts o;
	char err[1024];
	const char *verb = argc > 1 ? argv[1] : "";
	int rc;

	if (argc < 2 || cli_is_help(argv[1])) {
		cli_usage(argc < 2 ? stderr : stdout, "key");
		return argc < 2 ? 1 : 0;
	}
	if (parse(argc - 1, argv + 1, &o))
		return 1;
	int nargs = argc - 1 - optind;
	char **args = argv + 1 + optind;
	if (strcmp(verb, "issue") == 0) {
		uint64_t gen = 0;
		if (nargs != 1 || !o.out) {
			cli_err("key issue: give one NAME and -o FILE");
			return 1;
		}
		rc = nacre_key_issue(o.addr, o.fsname, o.key_file, args[0], o.admin, o.out, &gen,
				     err, sizeof(err));
		if (rc) {
			cli_err("key issue %s: %s", args[0], err);
			return 1;
		}
		printf("issued %s key %s generation %" PRIu64 " to %s\n",
		       o.admin ? "admin" : "client", args[0], gen, o.out);
		return 0;
	}
	if (strcmp(verb, "revoke") == 0) {
		if (nargs != 1) {
			cli_err("key revoke: give one NAME");
			return 1;
		}
		rc = nacre_key_revoke(o.addr, o.fsname, o.key_file, args[0], err, sizeof(err));
		if (rc) {
			cli_err("key revoke %s: %s", args[0], err);
			return 1;
		}
		printf("revoked key %s\n", args[0]);
		return 0;
	}
	if (strcmp(verb, "list") == 0) {
		struct nacre_key_info *all = calloc(LIST_MAX, sizeof(*all));
		if (!all) {
			cli_err("key list: out of memory");
			return 1;
		}
		rc = nacre_key_list(o.addr, o.fsname, o.key_file, all, LIST_MAX, err, sizeof(err));
		if (rc < 0) {
			cli_err("key list: %s", err);
			free(all);
			return 1;
		}
		printf("%-24s %-6s %10s %s\n", "NAME", "ROLE", "GENERATION", "STATE");
		for (int i = 0; i < rc && i < LIST_MAX; i++)
			printf("%-24s %-6s %10" PRIu64 " %s\n", all[i].name,
			       all[i].admin ? "admin" : "client", all[i].gen,
			       all[i].revoked ? "revoked" : "active");
		free(all);
		return 0;
	}
	cli_err("key: unknown verb '%s' (issue, revoke or list)", verb);
	return 1;
}
