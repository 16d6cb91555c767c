/* recovery.c - `nacre recovery-status`: the MDS's recovery window, in the lines of Lustre's
 * recovery_status (`lctl get_param mdt.*.recovery_status`), read from the mount's
 * nacre.recovery_status. The mount is found from the argument's text and the mount table,
 * never by a stat: while the MDS is in recovery a stat of the mount waits for it, and that
 * is when this command is wanted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"
#include "common/vxattr.h"
#include "nacre/nacre.h"

/* a - b, or 0: the counts come from the mount and are printed whatever they are */
static unsigned minus(uint32_t a, uint32_t b)
{
	return a > b ? a - b : 0;
}

/* Lustre's lines for one MDT. COMPLETE gets evicted_clients too (Lustre prints it only
 * while recovering) so that an eviction stays visible afterwards. */
static void print_status(const char *fsname, const struct nacre_recovery_status *r)
{
	printf("mdt.%s-MDT0000.recovery_status=\n", fsname);
	if (r->state != NACRE_RECOVERY_RECOVERING) {
		printf("status: COMPLETE\n");
		printf("recovery_start: %lld\n", (long long)r->start);
		printf("recovery_duration: %u\n", r->duration_s);
		printf("completed_clients: %u/%u\n", minus(r->clients_expected, r->clients_evicted),
		       r->clients_expected);
		printf("evicted_clients: %u\n", r->clients_evicted);
		printf("replayed_requests: %llu\n", (unsigned long long)r->replayed);
		printf("last_transno: %llu\n", (unsigned long long)r->last_transno);
		return;
	}
	printf("status: RECOVERING\n");
	printf("recovery_start: %lld\n", (long long)r->start);
	printf("time_remaining: %u\n", r->time_left_s);
	printf("connected_clients: %u/%u\n", r->clients_connected, r->clients_expected);
	/* connected, still replaying requests; then replayed, re-opening files and locks */
	printf("req_replay_clients: %u\n", minus(r->clients_connected, r->clients_replayed));
	/* Lustre's spelling, so that scripts reading its output read ours */
	printf("lock_repay_clients: %u\n", minus(r->clients_replayed, r->clients_completed));
	printf("completed_clients: %u\n", r->clients_completed);
	printf("evicted_clients: %u\n", r->clients_evicted);
	printf("replayed_requests: %llu\n", (unsigned long long)r->replayed);
	printf("queued_requests: %llu\n", (unsigned long long)r->queued);
	printf("last_transno: %llu\n", (unsigned long long)r->last_transno);
}

/* Prints the status of the file system mounted at dir. 0, or -1 after printing why not. */
static int show_mount(const char *dir)
{
	struct nacre_recovery_status r;
	char fsname[64], text[256];
	int n = cli_getxattr(dir, NACRE_VXATTR_FSNAME, fsname, sizeof(fsname));

	if (n < 0) {
		cli_err("cannot read the file system name of %s: %s", dir, strerror(-n));
		return -1;
	}
	fsname[strcspn(fsname, "\n")] = '\0';
	n = cli_getxattr(dir, NACRE_VXATTR_RECOVERY_STATUS, text, sizeof(text));
	if (n < 0) {
		cli_err("cannot read the recovery status of %s (%s) from its MDS: %s%s", dir,
			fsname, strerror(-n),
			n == -EIO      ? " (is nacre-mds running?)"
			: n == -ENODATA ? " (this nacre-mount is older than the command)"
					: "");
		return -1;
	}
	if (vxattr_recovery_parse(text, &r) < 0) {
		cli_err("%s answered a recovery status that does not parse: %s", dir, text);
		return -1;
	}
	print_status(fsname, &r);
	return 0;
}

/* ARG is a path on a mount, else the name of a mounted file system. Writes the mount
 * point to dir. 0, or -1 after printing why not. */
static int find_mount(const char *arg, char *dir, size_t len)
{
	struct cli_mount m;
	int rc;

	/* A bare word may be a file system name; a path has a '/' or is "." or "..". */
	if (!strchr(arg, '/') && strcmp(arg, ".") != 0 && strcmp(arg, "..") != 0) {
		rc = cli_mount_by_name("recovery-status", arg, &m);
		if (rc == 0) {
			str_copy(dir, m.dir, len);
			return 0;
		}
		if (rc != -ENOENT)
			return -1; /* ambiguous: said so */
	}
	if (cli_mount_of(arg, &m) == 0) {
		str_copy(dir, m.dir, len);
		return 0;
	}
	cli_err("%s is neither on a nacre mount nor the name of a mounted nacre file system",
		arg);
	return -1;
}

int cli_recovery_status(int argc, char **argv)
{
	char dir[NACRE_PATH_MAX];
	struct cli_mount *m;
	int rc = 0, n;

	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (find_mount(argv[i], dir, sizeof(dir)) < 0 || show_mount(dir) < 0)
				rc = 1;
		return rc;
	}
	m = calloc(CLI_MOUNTS_MAX, sizeof(*m));
	if (!m) {
		cli_err("out of memory");
		return 1;
	}
	n = cli_list_mounts(m, CLI_MOUNTS_MAX);
	if (n < 0)
		cli_err("cannot read /proc/self/mounts: %s", strerror(-n));
	else if (n == 0)
		cli_err("no nacre file system is mounted: give a path on one");
	for (int i = 0; i < n; i++) {
		int dup = 0;

		for (int j = 0; j < i; j++)
			dup |= strcmp(m[i].source, m[j].source) == 0; /* one file system, twice */
		if (!dup && show_mount(m[i].dir) < 0)
			rc = 1;
	}
	free(m);
	return n <= 0 ? 1 : rc;
}
