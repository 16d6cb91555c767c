/* changelog.c - `nacre changelog_register`, `changelog_deregister`, `changelog`,
 * `changelog_clear` and `changelog_mask`: Lustre's changelogs (lctl changelog_register,
 * lfs changelog, lfs changelog_clear, lctl set_param mdd.*.changelog_mask) through
 * libnacre's admin calls with the cluster key or an admin key (docs/changelog.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define PAGE_RECS 256
#define FOLLOW_POLL_MS 200

static const char *const type_names[NACRE_CL_LAST] = {
	"MARK",  "CREAT", "MKDIR", "HLINK", "SLINK", "MKNOD", "UNLNK",
	"RMDIR", "RENME", "RNMTO", "OPEN",  "CLOSE", "LYOUT", "TRUNC",
	"SATTR", "XATTR", "HSM",   "MTIME", "CTIME", "ATIME",
};

struct target {
	char addr[NACRE_ADDR_LIST_MAX];
	char fsname[NACRE_FSNAME_MAX + 1];
	char device[NACRE_FSNAME_MAX + 16]; /* "fsname-MDT0000" */
	char mount_key[PATH_MAX];           /* the key of the mount it was found by, or "" */
};

/* ARG is a mount (or a directory in one), a file system name of a mounted nacre, or an
 * MDS spec HOST:PORT:/FSNAME. */
static int find_target(const char *verb, const char *arg, struct target *t)
{
	char subdir[NACRE_PATH_MAX + 1], why[256];
	const char *spec = NULL;
	struct cli_mount here;
	struct stat st;

	t->mount_key[0] = '\0';
	if (strstr(arg, ":/")) {
		spec = arg;
	} else if (stat(arg, &st) == 0 || arg[0] == '/' || arg[0] == '.') {
		if (cli_mount_of(arg, &here) < 0) {
			cli_err("%s: %s is not in a nacre mount", verb, arg);
			return -1;
		}
		spec = here.source;
		cli_mount_key_file(here.dir, t->mount_key, sizeof(t->mount_key));
	} else {
		int rc = cli_mount_by_name(verb, arg, &here);
		if (rc == 0) {
			spec = here.source;
			cli_mount_key_file(here.dir, t->mount_key, sizeof(t->mount_key));
		}
		else if (rc != -ENOENT)
			return -1; /* ambiguous: said so */
		if (!spec) {
			cli_err("%s: %s is neither a nacre mount, nor the name of a mounted nacre "
				"file system, nor an MDS HOST:PORT:/FSNAME",
				verb, arg);
			return -1;
		}
	}
	if (nacre_parse_spec(spec, t->addr, sizeof(t->addr), t->fsname, sizeof(t->fsname),
			     subdir, sizeof(subdir), why, sizeof(why)) < 0) {
		cli_err("%s: '%s': %s", verb, spec, why);
		return -1;
	}
	snprintf(t->device, sizeof(t->device), "%s-MDT0000", t->fsname);
	return 0;
}

/* Common options: --key-file FILE; the rest are the verb's words. */
static int parse(const char *verb, int argc, char **argv, const char **key_file, int *follow,
		 const char **extra)
{
	static const struct option longopts[] = {
		{"key-file", required_argument, NULL, 'k'},
		{"follow", no_argument, NULL, 'f'},
		{"extra", required_argument, NULL, 'x'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	optind = 1;
	/* "+": a mask word such as -OPEN is not an option */
	while ((ch = getopt_long(argc, argv, "+k:fh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'k': *key_file = optarg; break;
		case 'f':
			if (!follow)
				goto bad;
			*follow = 1;
			break;
		case 'x':
			if (!extra)
				goto bad;
			*extra = optarg;
			break;
		case 'h': cli_usage(stdout, verb); exit(0);
		default:
			goto bad;
		}
	}
	return 0;
bad:
	cli_usage(stderr, verb);
	return -1;
}

int cli_changelog_register(int argc, char **argv)
{
	const char *key_file = NULL;
	char user[NACRE_CL_USER_MAX + 1], err[1024];
	struct target t;

	if (parse("changelog_register", argc, argv, &key_file, NULL, NULL))
		return 2;
	if (argc - optind != 1) {
		cli_usage(stderr, "changelog_register");
		return 2;
	}
	if (find_target("changelog_register", argv[optind], &t))
		return 1;
	key_file = cli_key_file_or(key_file, t.mount_key);
	if (nacre_changelog_register(t.addr, t.fsname, key_file, user, sizeof(user), err,
				     sizeof(err)) < 0) {
		cli_err("changelog_register: %s", err);
		return 1;
	}
	printf("%s: Registered changelog userid '%s'\n", t.device, user);
	return 0;
}

int cli_changelog_deregister(int argc, char **argv)
{
	const char *key_file = NULL;
	char err[1024];
	struct target t;

	if (parse("changelog_deregister", argc, argv, &key_file, NULL, NULL))
		return 2;
	if (argc - optind != 2) {
		cli_usage(stderr, "changelog_deregister");
		return 2;
	}
	if (find_target("changelog_deregister", argv[optind], &t))
		return 1;
	key_file = cli_key_file_or(key_file, t.mount_key);
	const char *user = argv[optind + 1];
	char name[NACRE_CL_USER_MAX + 8];
	/* lctl takes ID or clID */
	if (user[0] >= '1' && user[0] <= '9') {
		snprintf(name, sizeof(name), "cl%s", user);
		user = name;
	}
	if (nacre_changelog_deregister(t.addr, t.fsname, key_file, user, err, sizeof(err)) < 0) {
		cli_err("changelog_deregister: %s", err);
		return 1;
	}
	printf("%s: Deregistered changelog user #%s\n", t.device, user + 2);
	return 0;
}

int cli_changelog_clear(int argc, char **argv)
{
	const char *key_file = NULL;
	char err[1024];
	struct target t;
	uint64_t end;

	if (parse("changelog_clear", argc, argv, &key_file, NULL, NULL))
		return 2;
	if (argc - optind != 3) {
		cli_usage(stderr, "changelog_clear");
		return 2;
	}
	if (cli_parse_u64(argv[optind + 2], &end)) {
		cli_err("changelog_clear: bad endrec '%s'", argv[optind + 2]);
		return 2;
	}
	if (find_target("changelog_clear", argv[optind], &t))
		return 1;
	key_file = cli_key_file_or(key_file, t.mount_key);
	if (nacre_changelog_clear(t.addr, t.fsname, key_file, argv[optind + 1], end, err,
				  sizeof(err)) < 0) {
		cli_err("changelog_clear: %s", err);
		return 1;
	}
	return 0;
}

/* One line as `lfs changelog` prints it. */
static void print_rec(const struct nacre_changelog_rec *r)
{
	static const struct nacre_fid zero;
	char t[NACRE_FID_STR_MAX], p[NACRE_FID_STR_MAX], s[NACRE_FID_STR_MAX],
		sp[NACRE_FID_STR_MAX];
	time_t secs = (time_t)r->time.sec;
	struct tm tm;

	gmtime_r(&secs, &tm);
	printf("%" PRIu64 " %02u%-5s %02d:%02d:%02d.%09u %04d.%02d.%02d 0x%x t=%s", r->index,
	       r->type, r->type < NACRE_CL_LAST ? type_names[r->type] : "?", tm.tm_hour,
	       tm.tm_min, tm.tm_sec, r->time.nsec, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	       r->flags & NACRE_CLF_FLAGMASK, nacre_fid_format(&r->tfid, t, sizeof(t)));
	if ((r->flags & NACRE_CLF_JOBID) && r->jobid[0])
		printf(" j=%s", r->jobid);
	if (r->flags & NACRE_CLF_EXTRA_FLAGS) {
		printf(" ef=0x%x", r->xflags);
		if (r->xflags & NACRE_CLFE_UIDGID)
			printf(" u=%u:%u", r->uid, r->gid);
		if ((r->xflags & NACRE_CLFE_XATTR) && r->xattr[0])
			printf(" x=%s", r->xattr);
	}
	if (memcmp(&r->pfid, &zero, sizeof(zero)) != 0)
		printf(" p=%s", nacre_fid_format(&r->pfid, p, sizeof(p)));
	if (r->name[0])
		printf(" %s", r->name);
	if ((r->flags & NACRE_CLF_RENAME) && memcmp(&r->sfid, &zero, sizeof(zero)) != 0)
		printf(" s=%s sp=%s %s", nacre_fid_format(&r->sfid, s, sizeof(s)),
		       nacre_fid_format(&r->spfid, sp, sizeof(sp)), r->sname);
	printf("\n");
}

static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
	(void)sig;
	g_stop = 1;
}

int cli_changelog(int argc, char **argv)
{
	const char *key_file = NULL;
	int follow = 0;
	uint64_t start = 0, end = 0;
	char err[1024];
	struct target t;

	if (parse("changelog", argc, argv, &key_file, &follow, NULL))
		return 2;
	int nargs = argc - optind;
	if (nargs < 1 || nargs > 3) {
		cli_usage(stderr, "changelog");
		return 2;
	}
	if (nargs > 1 && cli_parse_u64(argv[optind + 1], &start)) {
		cli_err("changelog: bad startrec '%s'", argv[optind + 1]);
		return 2;
	}
	if (nargs > 2 && cli_parse_u64(argv[optind + 2], &end)) {
		cli_err("changelog: bad endrec '%s'", argv[optind + 2]);
		return 2;
	}
	if (find_target("changelog", argv[optind], &t))
		return 1;
	key_file = cli_key_file_or(key_file, t.mount_key);
	struct nacre_changelog_rec *recs = calloc(PAGE_RECS, sizeof(*recs));
	if (!recs) {
		cli_err("changelog: out of memory");
		return 1;
	}
	if (follow) {
		signal(SIGINT, on_stop);
		signal(SIGTERM, on_stop);
		setvbuf(stdout, NULL, _IOLBF, 0);
	}
	int rc = 0;
	uint64_t next = start;
	while (!g_stop) {
		int eof = 0;
		int n = nacre_changelog_read(t.addr, t.fsname, key_file, next, end, recs, PAGE_RECS,
					     NULL, &eof, err, sizeof(err));
		if (n < 0) {
			cli_err("changelog: cannot access changelog of %s: %s", t.device, err);
			rc = 1;
			break;
		}
		for (int i = 0; i < n; i++)
			print_rec(&recs[i]);
		if (n > 0)
			next = recs[n - 1].index + 1;
		if (end && next > end)
			break;
		if (n > 0 && !eof)
			continue;
		if (!follow)
			break;
		fflush(stdout);
		usleep(FOLLOW_POLL_MS * 1000);
	}
	free(recs);
	return rc;
}

/* Lustre's mask words: "CREAT MKDIR" sets exactly those, "+OPEN -CLOSE" changes the
 * current mask; MARK is always in. */
static int parse_mask(char **words, int n, uint64_t *mask)
{
	int first = 1;

	for (int i = 0; i < n; i++) {
		char *w = words[i];
		for (char *tok = w; *tok;) {
			size_t len = strcspn(tok, " ,");
			char name[16];
			int op = 0;
			if (len == 0) {
				tok++;
				continue;
			}
			if (*tok == '+' || *tok == '-') {
				op = *tok;
				tok++;
				len--;
			}
			if (len == 0 || len >= sizeof(name))
				return -1;
			memcpy(name, tok, len);
			name[len] = '\0';
			tok += len;
			int type = -1;
			for (int j = 0; j < NACRE_CL_LAST; j++)
				if (!strcasecmp(name, type_names[j]))
					type = j;
			if (!strcasecmp(name, "ALL"))
				type = 64;
			if (type < 0) {
				cli_err("changelog_mask: unknown record type %s (types: MARK CREAT "
					"MKDIR HLINK SLINK MKNOD UNLNK RMDIR RENME RNMTO OPEN CLOSE "
					"LYOUT TRUNC SATTR XATTR HSM MTIME CTIME ATIME, or ALL)",
					name);
				return -1;
			}
			uint64_t bit = type == 64 ? (1ull << NACRE_CL_LAST) - 1 : 1ull << type;
			if (op == 0 && first)
				*mask = 0; /* an absolute list starts from nothing */
			first = 0;
			if (op == '-')
				*mask &= ~bit;
			else
				*mask |= bit;
		}
	}
	*mask |= 1ull << NACRE_CL_MARK;
	return 0;
}

int cli_changelog_mask(int argc, char **argv)
{
	const char *key_file = NULL, *extra = NULL;
	struct nacre_changelog_info info = {0};
	char err[1024];
	struct target t;

	if (parse("changelog_mask", argc, argv, &key_file, NULL, &extra))
		return 2;
	if (argc - optind < 1) {
		cli_usage(stderr, "changelog_mask");
		return 2;
	}
	if (find_target("changelog_mask", argv[optind], &t))
		return 1;
	key_file = cli_key_file_or(key_file, t.mount_key);
	int nwords = argc - optind - 1;
	if (nacre_changelog_mask(t.addr, t.fsname, key_file, &info, 0, 0, err, sizeof(err)) < 0) {
		cli_err("changelog_mask: %s", err);
		return 1;
	}
	if (nwords > 0 && parse_mask(argv + optind + 1, nwords, &info.mask))
		return 2;
	if (extra) {
		info.xflags = 0;
		for (const char *w = extra; strcmp(extra, "none") != 0 && *w;) {
			size_t len = strcspn(w, ",");
			if (len == 6 && !strncmp(w, "uidgid", 6)) {
				info.xflags |= NACRE_CLFE_UIDGID;
			} else if (len == 5 && !strncmp(w, "xattr", 5)) {
				info.xflags |= NACRE_CLFE_XATTR;
			} else {
				cli_err("changelog_mask: --extra %s: expected uidgid, xattr, both "
					"(uidgid,xattr) or none", extra);
				return 2;
			}
			w += len + (w[len] == ',');
		}
	}
	if ((nwords > 0 || extra) &&
	    nacre_changelog_mask(t.addr, t.fsname, key_file, &info, nwords > 0, extra != NULL, err,
				 sizeof(err)) < 0) {
		cli_err("changelog_mask: %s", err);
		return 1;
	}
	printf("mdd.%s.changelog_mask=", t.device);
	const char *sep = "";
	for (int i = 0; i < NACRE_CL_LAST; i++)
		if (info.mask & (1ull << i)) {
			printf("%s%s", sep, type_names[i]);
			sep = " ";
		}
	printf("\nmdd.%s.changelog_extra=%s%s%s\n", t.device,
	       info.xflags & NACRE_CLFE_UIDGID ? "uidgid" : "",
	       (info.xflags & NACRE_CLFE_UIDGID) && (info.xflags & NACRE_CLFE_XATTR) ? "," : "",
	       info.xflags & NACRE_CLFE_XATTR ? "xattr" : (info.xflags ? "" : "none"));
	printf("mdd.%s.changelog_users=%u\n", t.device, info.nusers);
	return 0;
}
