/* cluster_conf_run.c - `nacre cluster up|down|status CONFIG`: a multi-host cluster from one
 * config file (docs/cluster.md), brought up by the bring-up engine (bringup.h) with the
 * remote runner (bringup_remote.h).
 *
 * `nacre cluster targets` is an internal verb run on the MDS host: it asks the MDS for its
 * target list through libnacre, so the admin machine need not reach the cluster network. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/bringup_remote.h"
#include "cli/cli.h"
#include "cli/cluster_conf.h"
#include "common/util.h"
#include "nacre/nacre.h"

static int load(const char *path, struct cc_conf *c, struct bu_remote *ru)
{
	char err[1024];

	if (cc_parse(path, c, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return -1;
	}
	return bu_remote_init(ru, c);
}

static int cluster_up(const char *path)
{
	static struct cc_conf c;
	struct bu_remote ru;
	double t = cli_now_s();

	if (load(path, &c, &ru) < 0)
		return 1;
	if (bu_up(&c, &bu_remote_runner, &ru) < 0) {
		fprintf(stderr, "nacre: stopped at the first failure; what was started keeps "
				"running (stop it with `nacre cluster down %s`)\n", path);
		return 1;
	}
	printf("%s is up in %.1f s\n", c.fsname, cli_now_s() - t);
	return 0;
}

static int cluster_down(const char *path)
{
	static struct cc_conf c;
	struct bu_remote ru;

	if (load(path, &c, &ru) < 0)
		return 1;
	printf("stopping %s from %s\n", c.fsname, path);
	fflush(stdout);
	int rc = bu_down(&c, &bu_remote_runner, &ru) < 0;

	printf(rc ? "%s: some steps failed (see above)\n" : "%s is down\n", c.fsname);
	return rc;
}

static int cluster_status(const char *path)
{
	static struct cc_conf c;
	struct bu_remote ru;

	if (load(path, &c, &ru) < 0)
		return 1;
	printf("%s (%s)\n", c.fsname, path);
	int down = bu_status(&c, &bu_remote_runner, &ru);

	if (down < 0)
		return 1;
	printf(down ? "%d item%s down\n" : "everything is up\n", down, down == 1 ? " is" : "s are");
	return down ? 3 : 0;
}

/* nacre cluster targets MDS_ADDR[,FAILOVER] FSNAME KEY WAIT_S [IDX,IDX...]: prints the MDS's
 * targets; with indexes, waits up to WAIT_S for them to be up and exits 1 if they are not. */
static int cluster_targets(int argc, char **argv)
{
	char spec[2 * CC_ADDR_MAX + 32], err[512];
	struct nacre_mount_opts mo;
	struct nacre_fs *fs = NULL;
	struct nacre_target tg[512];
	int64_t wait_s;
	uint32_t want[65536 / 32] = {0};
	int nwant = 0, n = 0, rc = 1;

	if (argc < 5 || parse_i64(argv[4], 0, 3600, &wait_s) < 0) {
		cli_err("usage: nacre cluster targets MDS_ADDR FSNAME KEY_FILE WAIT_S [IDX,...]");
		return 1;
	}
	if (argc > 5) {
		for (const char *p = argv[5]; *p;) {
			int64_t v;
			char num[16];
			size_t seg = strcspn(p, ",");

			if (seg == 0 || seg >= sizeof(num))
				return 1;
			memcpy(num, p, seg);
			num[seg] = '\0';
			if (parse_i64(num, 0, 0xffff, &v) < 0)
				return 1;
			want[v / 32] |= 1u << (v % 32);
			nwant++;
			p += seg;
			if (*p == ',')
				p++;
		}
	}
	memset(&mo, 0, sizeof(mo));
	mo.key_file = argv[3];
	mo.timeout_ms = 5000;
	mo.connect_timeout_ms = 5000;
	mo.client_name = "nacre-cluster";
	snprintf(spec, sizeof(spec), "%s:/%s", argv[1], argv[2]);
	if (nacre_fs_mount(spec, &mo, &fs, err, sizeof(err)) < 0) {
		printf("MDS %s: down (%s)\n", argv[1], err);
		return 1;
	}
	for (double end = cli_now_s() + (double)wait_s;;) {
		int missing = 0;

		n = nacre_targets(fs, tg, (int)ARRAY_SIZE(tg));
		if (n < 0)
			break;
		for (int i = 0; i < 65536 && nwant; i++) {
			if (!(want[i / 32] & (1u << (i % 32))))
				continue;
			int up = 0;

			for (int k = 0; k < n; k++)
				if (tg[k].type == NACRE_TGT_OST && (int)tg[k].index == i && tg[k].up)
					up = 1;
			if (!up)
				missing++;
		}
		if (!missing) {
			rc = 0;
			break;
		}
		if (cli_now_s() >= end) {
			printf("%d OST%s not registered after %d s:\n", missing,
			       missing == 1 ? " is" : "s are", (int)wait_s);
			break;
		}
		usleep(200000);
	}
	for (int k = 0; k < n; k++)
		printf("%s%04x %-4s %s\n", tg[k].type == NACRE_TGT_MDT ? "MDT" : "OST", tg[k].index,
		       tg[k].up ? "up" : "down", tg[k].addr);
	nacre_fs_umount(fs);
	return rc;
}

int cli_cluster(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "targets") == 0)
		return cluster_targets(argc - 1, argv + 1);
	if (argc != 3 || (strcmp(argv[1], "up") != 0 && strcmp(argv[1], "down") != 0 &&
			  strcmp(argv[1], "status") != 0)) {
		cli_err("cluster: expected up, down or status and a config file");
		cli_usage(stderr, "cluster");
		return 1;
	}
	if (strcmp(argv[1], "up") == 0)
		return cluster_up(argv[2]);
	if (strcmp(argv[1], "down") == 0)
		return cluster_down(argv[2]);
	return cluster_status(argv[2]);
}
