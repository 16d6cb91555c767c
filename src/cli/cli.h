/* cli.h - the `nacre` command: a table of subcommands, one file per group, and the helpers
 * they share (virtual xattrs on a mounted path, mount discovery, option parsing).
 *
 * Path-based commands never talk to a server: they ask the FUSE mount through the virtual
 * xattrs of nacre/nacre_vxattr.h (`find` through the ioctl of nacre/nacre_ioctl.h), as
 * lfs asks the kernel through ioctls, so they need no key.
 * Only `up`/`down` start processes and use libnacre directly, and `fault` talks to a server
 * itself (with the cluster key: a fault may be set on an OSS). Single-threaded.
 */
#ifndef NACRE_CLI_H
#define NACRE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nacre/nacre_types.h"
#include "nacre/nacre_vxattr.h"

/* A subcommand: run() gets argv with argv[0] = the verb; returns the exit code. */
struct cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line for `nacre help` */
	const char *usage;   /* printed by `nacre VERB --help` and on usage errors */
};

/* The name messages start with: "nacre", or "lfs" when run through the lfs alias. */
extern const char *cli_prog;
/* Sets cli_prog from argv[0]. */
void cli_set_prog(const char *argv0);
/* Prints cli_prog + ": " + message + newline to stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "Did you mean": the indexes of the names closest to a mistyped word (an edit or two, or
 * an abbreviation), at most max_out of them, in table order. Returns how many (0: none is
 * close). */
size_t cli_suggest(const char *word, const char *const *names, size_t n, size_t *out,
		   size_t max_out);
/* Prints the usage of the named verb to f. */
void cli_usage(FILE *f, const char *verb);
/* 1 if argv[i] is -h/--help for a verb that has no -h option of its own. */
int cli_is_help(const char *arg);

/* Seconds on the monotonic clock, for step durations. */
double cli_now_s(void);

/* Reads a virtual xattr of path into buf as a NUL-terminated string (trailing newline
 * kept). Returns the length or -errno. */
int cli_getxattr(const char *path, const char *name, char *buf, size_t len);
/* The key file the nacre mount at root uses (the key_file line of its nacre.connect), into
 * out: 0, or -1 (none, not a nacre mount). */
int cli_mount_key_file(const char *root, char *out, size_t len);
/* The key an admin verb uses: --key-file (given), else $NACRE_KEY_FILE, else the key of the
 * mount it names or runs in (mount_key; "" or NULL: none). NULL when there is none. */
const char *cli_key_file_or(const char *given, const char *mount_key);
/* Checks that path exists and is on a nacre mount (reads nacre.fid). On failure prints a
 * message naming path ("... is not on a nacre file system") and returns -errno. The FID
 * text is written to fid (NACRE_FID_STR_MAX bytes) when fid is not NULL. */
int cli_check_nacre(const char *path, char *fid, size_t fid_len);
/* Finds the root of the mount holding path: the highest ancestor on the same device.
 * Writes its absolute path to root (len bytes). Returns 0 or -errno. */
int cli_mount_root(const char *path, char *root, size_t len);

/* Mount table entries of type fuse.nacre, from /proc/self/mounts. */
struct cli_mount {
	char source[NACRE_PATH_MAX];
	char dir[NACRE_PATH_MAX];
};
/* Fills at most max entries; returns the count or -errno. */
int cli_list_mounts(struct cli_mount *out, int max);
/* The nacre mount holding path (the deepest one), found from path's text and the mount
 * table alone: neither path nor the mount is touched, so this never waits for a server
 * (a stat of a mount whose MDS is in recovery would). Symbolic links in path are not
 * followed. Returns 0, -ENOENT when path is on no nacre mount, or -errno. */
int cli_mount_of(const char *path, struct cli_mount *out);
/* The mount of file system fsname (from the mount table's sources, touching no mount). With
 * several of that name from different MDSes (every `nacre up` cluster is "nacre"), the one
 * the working directory is in; else none is guessed: the candidates are listed. Returns 0, or -1 after saying
 * what is wrong (verb first). */
int cli_mount_by_name(const char *verb, const char *fsname, struct cli_mount *out);
/* The mount a verb given no path acts on: the one the working directory is in, else the
 * only nacre mount of the host. -1 after saying what is wrong when there is none or
 * several to choose from. */
int cli_mount_default(const char *verb, struct cli_mount *out);
#define CLI_MOUNTS_MAX 256
/* Calls fn with the mount root of each PATH in argv[first..], or of every nacre mount
 * when none is given; a PATH that is not on nacre, or no mount at all, is reported on
 * stderr. Returns 1 if anything failed (fn's nonzero results included), else 0. */
int cli_each_root(int argc, char **argv, int first, int (*fn)(const char *root, void *arg),
		  void *arg);
/* path made absolute (from the working directory) with ".", ".." and repeated '/' removed
 * from its text, touching no file. Returns 0 or -errno (-ENAMETOOLONG). */
int cli_abspath(const char *path, char *out, size_t len);
/* 1 if dir (an absolute path) is a mount point of any type in /proc/self/mounts. */
int cli_is_mounted(const char *dir);

/* Stripe size as lfs reads it: K/M/G suffixes base 2, a bare value below 4096 is KiB;
 * must be a multiple of 64 KiB and below 4 GiB. Returns 0 or -EINVAL with a reason in err. */
int cli_parse_stripe_size(const char *s, uint32_t *out, char *err, size_t err_len);
/* A decimal number with nothing around it (no sign, no space, no suffix). 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out);

/* ---- stats.c: the daemons' Prometheus endpoints (--metrics-addr) ---- */
struct strbuf;
struct cli_metric {
	char name[128];
	char labels[256]; /* `a="x",b="y"`, without braces */
	double value;
};
struct cli_scrape {
	struct cli_metric *s; /* owned */
	int n, cap;
	int ok;        /* 1 once fetched; else err says why not */
	char err[256];
};
/* http_fetch.c: METHOD http://addr/path (2 s timeout, 8 MiB at most, libcurl): the body
 * of a 200 answer (malloc'd, NUL-terminated), or NULL with the reason in err. */
char *cli_http(const char *addr, const char *method, const char *path, char *err,
	       size_t err_len);
/* GETs http://addr/metrics (2 s timeout) into sc (emptied first). */
void cli_scrape_fetch(const char *addr, struct cli_scrape *sc);
void cli_scrape_free(struct cli_scrape *sc);
/* The value of label key in labels, copied into out. 0 or -1 (no such label). */
int cli_label_of(const char *labels, const char *key, char *out, size_t len);
/* The OST names ("fs-OST0000") an OSS's scrape has counters for; returns their count. */
int cli_scrape_targets(const struct cli_scrape *sc, char (*out)[64], int max);
/* Appends the value of obdfilter.TARGET.stats in lprocfs's shape: "snapshot_time" line,
 * then "NAME COUNT samples [UNIT] [MIN MAX SUM]" per counter with samples. */
void cli_target_stats(const struct cli_scrape *sc, const char *target, struct strbuf *out);
/* The MDT name ("fs-MDT0000") an MDS's scrape is of: 0, or -1 when sc is no MDS's. */
int cli_scrape_mdt(const struct cli_scrape *sc, char *out, size_t len);
/* Appends mdt.*.md_stats's value: "snapshot_time", then "NAME COUNT samples [reqs]" per
 * metadata operation served (MDS_OPEN is "open"). */
void cli_mdt_stats(const struct cli_scrape *sc, struct strbuf *out);

/* Subcommands, one group per file. */
int cli_setstripe(int argc, char **argv);   /* stripe.c */
int cli_getstripe(int argc, char **argv);   /* stripe.c */
int cli_df(int argc, char **argv);          /* df.c */
int cli_osts(int argc, char **argv);        /* df.c */
int cli_mdts(int argc, char **argv);        /* df.c */
int cli_path2fid(int argc, char **argv);    /* fid.c */
int cli_fid2path(int argc, char **argv);    /* fid.c */
int cli_up(int argc, char **argv);          /* cluster.c */
int cli_down(int argc, char **argv);        /* cluster.c */
int cli_hsm_archive(int argc, char **argv); /* hsm.c */
int cli_hsm_release(int argc, char **argv); /* hsm.c */
int cli_nodemap(int argc, char **argv);     /* nodemap.c */
int cli_hsm_restore(int argc, char **argv); /* hsm.c */
int cli_hsm_remove(int argc, char **argv);  /* hsm.c */
int cli_hsm_cancel(int argc, char **argv);  /* hsm.c */
int cli_hsm_state(int argc, char **argv);   /* hsm.c */
int cli_hsm_action(int argc, char **argv);  /* hsm.c */
int cli_hsm_set(int argc, char **argv);     /* hsm.c */
int cli_hsm_clear(int argc, char **argv);   /* hsm.c */
int cli_hsm(int argc, char **argv);         /* hsm.c: list, import, and the verbs */
int cli_romio_hints(int argc, char **argv); /* romio.c */
int cli_cluster(int argc, char **argv);     /* cluster_conf_run.c */
int cli_stats(int argc, char **argv);       /* stats.c */
int cli_top(int argc, char **argv);         /* stats.c */
int cli_fault(int argc, char **argv);       /* fault.c */
int cli_quota(int argc, char **argv);       /* quota.c */
int cli_setquota(int argc, char **argv);    /* quota.c */
int cli_project(int argc, char **argv);     /* project.c */
int cli_recovery_status(int argc, char **argv); /* recovery.c */
int cli_wb_recover(int argc, char **argv); /* wb.c */
int cli_key(int argc, char **argv);         /* key.c */
int cli_get_param(int argc, char **argv);   /* param.c */
int cli_set_param(int argc, char **argv);   /* param.c */
int cli_list_param(int argc, char **argv);  /* param.c */
int cli_check(int argc, char **argv);       /* param.c */
int cli_getname(int argc, char **argv);     /* param.c */
int cli_find(int argc, char **argv);        /* find.c */
int cli_changelog_register(int argc, char **argv);   /* changelog.c */
int cli_changelog_deregister(int argc, char **argv); /* changelog.c */
int cli_changelog(int argc, char **argv);            /* changelog.c */
int cli_changelog_clear(int argc, char **argv);      /* changelog.c */
int cli_changelog_mask(int argc, char **argv);       /* changelog.c */

#endif
