/* nodemap.c - `nacre nodemap add|del|modify|list|test`: the MDS's nodemap rules (Lustre's
 * lctl nodemap_*), through libnacre's admin request on a connection of its own, with the
 * cluster key. The MDS is --mds SPEC, or that of the nacre mount the working directory is
 * in. docs/security.md "Nodemaps".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define PROPS                                                                               \
	"admin, trusted, squash_uid, squash_gid, squash_all, readonly, fileset, deny, "    \
	"map_uid, map_gid, unmap_uid, unmap_gid, sec_min, ranges, clients"

static const char *const props[] = {"admin",     "trusted",   "squash_uid", "squash_gid",
				    "squash_all", "readonly",  "fileset",    "deny",
				    "map_uid",   "map_gid",   "unmap_uid",  "unmap_gid",
				    "sec_min",   "ranges",    "clients"};

static int usage_err(void)
{
	cli_usage(stderr, "nodemap");
	return 2;
}

static int is_prop(const char *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(props); i++)
		if (!strcmp(p, props[i]))
			return 1;
	return 0;
}

static int is_addr(const char *s)
{
	unsigned char b[16];
	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* The MDS: --mds SPEC, or the mount the working directory is in. */
static int find_mds(const char *spec, char *addr, size_t alen, char *fsname, size_t flen)
{
	char subdir[NACRE_PATH_MAX + 1], why[256];
	struct cli_mount here;

	if (!spec) {
		if (cli_mount_of(".", &here) < 0) {
			cli_err("nodemap: no MDS: give --mds HOST:PORT:/FSNAME, or run inside a nacre "
				"mount");
			return -1;
		}
		spec = here.source;
	}
	if (nacre_parse_spec(spec, addr, alen, fsname, flen, subdir, sizeof(subdir), why,
			     sizeof(why)) < 0) {
		cli_err("nodemap: --mds '%s': %s", spec, why);
		return -1;
	}
	return 0;
}

int cli_nodemap(int argc, char **argv)
{
	const char *mds = NULL, *key_file = NULL, *words[4] = {0};
	const char *range = NULL, *client = NULL, *prop = NULL, *value = NULL;
	char addr[NACRE_ADDR_MAX * 4 + 4], fsname[NACRE_FSNAME_MAX + 1], err[1024];
	int nwords = 0, cmd, rc;
	char *text = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (cli_is_help(a)) {
			cli_usage(stdout, "nodemap");
			return 0;
		}
		if (strncmp(a, "--", 2) != 0) {
			if (nwords == (int)ARRAY_SIZE(words))
				return usage_err();
			words[nwords++] = a;
			continue;
		}
		if (!v) {
			cli_err("nodemap: %s needs a value", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--mds"))
			mds = v;
		else if (!strcmp(a, "--key-file"))
			key_file = v;
		else if (!strcmp(a, "--range"))
			range = v;
		else if (!strcmp(a, "--client"))
			client = v;
		else if (!strcmp(a, "--property"))
			prop = v;
		else if (!strcmp(a, "--value"))
			value = v;
		else if (is_prop(a + 2) && !prop) {
			prop = a + 2;
			value = v;
		} else {
			cli_err("nodemap: unknown option %s (properties: " PROPS ")", a);
			return 2;
		}
	}
	if (nwords == 0)
		return usage_err();
	const char *verb = words[0], *name = nwords > 1 ? words[1] : NULL;
	const char *arg1 = NULL, *arg2 = NULL;
	if (!strcmp(verb, "add")) {
		cmd = NACRE_NODEMAP_ADD;
		if (!name || nwords > 2 || (!range && !client && strcmp(name, "default"))) {
			cli_err("nodemap add: give NAME and --range CIDR[,CIDR] and/or --client NAME");
			return 2;
		}
		arg1 = range ? range : "";
		arg2 = client ? client : "";
	} else if (!strcmp(verb, "del")) {
		cmd = NACRE_NODEMAP_DEL;
		if (!name || nwords > 2)
			return usage_err();
	} else if (!strcmp(verb, "modify")) {
		cmd = NACRE_NODEMAP_MODIFY;
		if (!name || nwords > 2 || !prop || !value) {
			cli_err("nodemap modify: give NAME and --PROPERTY VALUE (or --property P "
				"--value V); properties: " PROPS);
			return 2;
		}
		arg1 = prop;
		arg2 = value;
	} else if (!strcmp(verb, "list")) {
		cmd = NACRE_NODEMAP_LIST;
		if (nwords > 1)
			return usage_err();
	} else if (!strcmp(verb, "test")) {
		cmd = NACRE_NODEMAP_TEST;
		arg1 = "";
		arg2 = "";
		if (nwords < 2)
			return usage_err();
		for (int i = 1; i < nwords; i++) {
			if (is_addr(words[i]))
				arg1 = words[i];
			else
				arg2 = words[i];
		}
		name = NULL;
	} else {
		cli_err("nodemap: unknown command '%s' (add, del, modify, list, test)", verb);
		return 2;
	}
	if (find_mds(mds, addr, sizeof(addr), fsname, sizeof(fsname)) < 0)
		return 1;
	rc = nacre_nodemap(addr, fsname, key_file, cmd, name, arg1, arg2, &text, err,
			   sizeof(err));
	if (rc < 0) {
		cli_err("nodemap %s: %s", verb, err[0] ? err : nacre_strerror(rc));
		free(text);
		return 1;
	}
	if (text)
		fputs(text, stdout);
	free(text);
	return 0;
}
