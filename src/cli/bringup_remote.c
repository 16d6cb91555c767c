/* bringup_remote.c - the remote runner: every step of the engine as a script on its host
 * (see bringup_remote.h).
 *
 * Waiting for the OSTs runs `nacre cluster targets` on the MDS host: it asks the MDS for
 * its target list through libnacre, so the admin machine need not reach the cluster
 * network. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/bringup_remote.h"
#include "cli/cli.h"
#include "cli/remote_shell.h"
#include "common/key.h"
#include "common/util.h"

#define START_WAIT_TENTHS 150 /* a daemon has 15 s to say it serves */
#define OST_WAIT_S 30
#define KEY_TEXT_MAX 600
#define HOSTS_MAX (2 + 2 * CC_OSS_CAP + CC_MAX_CLIENTS + CC_MAX_COPYTOOLS)

/* ---- step lines */

static void step_begin(struct bu_remote *ru)
{
	ru->t0 = cli_now_s();
}

static void step_ok(struct bu_remote *ru, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void step_ok(struct bu_remote *ru, const char *fmt, ...)
{
	va_list ap;

	printf("[%5.1fs] ", cli_now_s() - ru->t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Reports a failed step naming the host and the step. */
static void step_fail(struct bu_remote *ru, const char *host, const char *what,
		      const struct rs_result *r)
{
	char text[RS_OUT_MAX];

	fflush(stdout);
	if (!r->reached) {
		str_copy(text, r->raw, sizeof(text));
		rs_trim(text);
		cli_err("%s: cannot reach host %s through `%s` (step: %s): %s", ru->c->path, host,
			ru->c->remote_shell, what, text[0] ? text : "the remote shell failed");
		return;
	}
	str_copy(text, r->out, sizeof(text));
	rs_trim(text);
	cli_err("step '%s' failed on host %s (exit %d)%s%s", what, host, r->status,
		text[0] ? ":\n" : "", text);
}

/* Runs the step's script s (freed here) on host; on success the output is in r->out,
 * trimmed. */
static int run_step(struct bu_remote *ru, const char *host, const char *what, struct strbuf *s,
		    struct rs_result *r)
{
	int rc = rs_run(ru->c, host, s, r);

	strbuf_fini(s);
	if (rc < 0) {
		step_fail(ru, host, what, r);
		return -1;
	}
	rs_trim(r->out);
	return 0;
}

static void pid_log_names(const struct cc_conf *c, const char *role, char *pid, size_t plen,
			  char *log, size_t llen)
{
	snprintf(pid, plen, "%s/%s-%s.pid", c->run_dir, c->fsname, role);
	snprintf(log, llen, "%s/%s-%s.log", c->run_dir, c->fsname, role);
}

/* ---- prepare: the key, every host */

/* Reads the local key file as one line of hex, generating it first if missing. */
static int local_key(const struct cc_conf *c, char *out, size_t len)
{
	char err[256];
	struct nacre_key k;
	int r;

	if (access(c->key_file, F_OK) < 0) {
		char dir[PATH_MAX];
		char *slash;

		str_copy(dir, c->key_file, sizeof(dir));
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			mkdir(dir, 0700);
		}
		r = key_generate(c->key_file);
		if (r < 0) {
			cli_err("cannot create the cluster key %s: %s", c->key_file, strerror(-r));
			return -1;
		}
		printf("generated the cluster key %s\n", c->key_file);
	}
	r = key_load(c->key_file, &k, err, sizeof(err));
	if (r < 0) {
		cli_err("%s", err);
		return -1;
	}
	FILE *f = fopen(c->key_file, "re");

	if (!f || !fgets(out, (int)len, f)) {
		if (f)
			fclose(f);
		cli_err("cannot read %s", c->key_file);
		return -1;
	}
	fclose(f);
	rs_trim(out);
	if (strspn(out, "0123456789abcdefABCDEF") != strlen(out)) {
		cli_err("%s: the key must be one line of hex digits", c->key_file);
		return -1;
	}
	return 0;
}

/* Distinct hosts of the config, in order of first appearance. */
static int hosts_of(const struct cc_conf *c, const char *hosts[], int max)
{
	int n = 0;
	const char *cand[HOSTS_MAX];
	int nc = 0;

	cand[nc++] = c->mds_host;
	if (c->mds_failover.host[0])
		cand[nc++] = c->mds_failover.host;
	for (int i = 0; i < c->noss; i++) {
		cand[nc++] = c->oss[i].host;
		if (c->oss[i].failover.host[0])
			cand[nc++] = c->oss[i].failover.host;
	}
	for (int i = 0; i < c->nclients; i++)
		cand[nc++] = c->clients[i].host;
	for (int i = 0; i < c->ncopytools; i++)
		cand[nc++] = c->copytools[i];
	for (int i = 0; i < nc && n < max; i++) {
		int dup = 0;

		for (int j = 0; j < n; j++)
			if (strcmp(hosts[j], cand[i]) == 0)
				dup = 1;
		if (!dup)
			hosts[n++] = cand[i];
	}
	return n;
}

/* Every host: reachable, binaries present, the same key (copied where missing). */
static int check_hosts(struct bu_remote *ru, const char *key_text)
{
	const struct cc_conf *c = ru->c;
	const char *hosts[HOSTS_MAX];
	int n = hosts_of(c, hosts, (int)ARRAY_SIZE(hosts));

	for (int i = 0; i < n; i++) {
		struct strbuf s = STRBUF_INIT;
		struct rs_result r;
		char what[300];

		snprintf(what, sizeof(what), "check host %s", hosts[i]);
		step_begin(ru);
		rs_script_begin(&s, c);
		strbuf_printf(&s, "BIN=");
		rs_quote(&s, ru->bin);
		strbuf_printf(&s, "\nfor b in nacre nacre-mds nacre-oss nacre-mount; do [ -x "
				  "\"$BIN/$b\" ] || { echo \"$BIN/$b is missing: install nacre there "
				  "or set bin_dir\"; exit 1; }; done\nKEY=");
		rs_quote(&s, c->key_file);
		strbuf_printf(&s, "\nWANT=%s\n", key_text);
		strbuf_printf(&s, "if [ -f \"$KEY\" ]; then\n"
				  "  [ \"$(tr -d '\\n' <\"$KEY\")\" = \"$WANT\" ] || { echo \"$KEY holds "
				  "a different key: copy the cluster's key there or remove it\"; exit 1; "
				  "}\nelse\n  mkdir -p \"$(dirname \"$KEY\")\" && (umask 077; echo "
				  "\"$WANT\" >\"$KEY.tmp\") && mv \"$KEY.tmp\" \"$KEY\" && echo \"copied "
				  "the key to $KEY\" || exit 1\nfi\n");
		if (c->metrics_log_dir[0]) {
			/* every daemon, mount and copytool of the host writes its JSON lines there */
			strbuf_printf(&s, "MLOG=");
			rs_quote(&s, c->metrics_log_dir);
			strbuf_printf(&s, "\nmkdir -p \"$MLOG\" || { echo \"cannot create the metrics "
					  "log_dir $MLOG\"; exit 1; }\n");
		}
		if (run_step(ru, hosts[i], what, &s, &r) < 0)
			return -1;
		step_ok(ru, "host %s reachable%s%s", hosts[i], r.out[0] ? ", " : "", r.out);
	}
	return 0;
}

static int prepare(void *ctx)
{
	struct bu_remote *ru = ctx;
	const struct cc_conf *c = ru->c;
	char key[KEY_TEXT_MAX];

	if (local_key(c, key, sizeof(key)) < 0)
		return -1;
	printf("bringing up %s from %s: MDS on %s, %d OSS, %d OST%s, %d client%s\n", c->fsname,
	       c->path, c->mds_host, c->noss, c->nosts, c->nosts == 1 ? "" : "s", c->nclients,
	       c->nclients == 1 ? "" : "s");
	fflush(stdout);
	return check_hosts(ru, key);
}

/* ---- daemons */

/* Starts d detached on its host unless it already runs; waits for its ready line in its
 * log. */
static int start(void *ctx, const struct bu_daemon *d)
{
	struct bu_remote *ru = ctx;
	const struct cc_conf *c = ru->c;
	char pidf[PATH_MAX + 96], logf[PATH_MAX + 96], what[128];
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;

	pid_log_names(c, d->role, pidf, sizeof(pidf), logf, sizeof(logf));
	snprintf(what, sizeof(what), "start %s", d->role);
	step_begin(ru);
	rs_script_begin(&s, c);
	strbuf_printf(&s, "PIDF=");
	rs_quote(&s, pidf);
	strbuf_printf(&s, "\nLOG=");
	rs_quote(&s, logf);
	strbuf_printf(&s, "\nPROG=");
	rs_quote(&s, ru->bin);
	strbuf_printf(&s, "/%s\n", d->prog);
	strbuf_printf(&s, "if alive \"$PIDF\" %s; then echo \"already running (pid $(cat "
			  "\"$PIDF\"))\"; exit 0; fi\n", d->prog);
	strbuf_printf(&s, "FMT=\nif false");
	for (int i = 0; i < d->nformat; i++) {
		strbuf_printf(&s, " || [ ! -f ");
		rs_quote(&s, d->format_unless[i]);
		strbuf_printf(&s, " ]");
	}
	strbuf_printf(&s, "; then FMT=--format; fi\n");
	strbuf_printf(&s, "touch \"$LOG\" && START=$(($(wc -c <\"$LOG\") + 1)) || exit 1\n");
	/* setsid: the daemon outlives the remote shell; the pid file is its own pid. */
	strbuf_printf(&s, "setsid sh -c 'echo $$ >\"$0\"; exec \"$@\"' \"$PIDF\" \"$PROG\"");
	for (int i = 0; i < d->argc; i++) {
		strbuf_char(&s, ' ');
		rs_quote(&s, d->argv[i]);
	}
	strbuf_printf(&s, " $FMT >>\"$LOG\" 2>&1 </dev/null &\n");
	strbuf_printf(&s, "i=0\nwhile [ $i -lt %d ]; do\n  if tail -c +$START \"$LOG\" | grep -q ",
		      START_WAIT_TENTHS);
	rs_quote(&s, d->ready);
	strbuf_printf(&s, "; then echo \"pid $(cat \"$PIDF\")${FMT:+, formatted}, log $LOG\"; "
			  "exit 0; fi\n"
			  "  if [ $i -gt 2 ] && ! alive \"$PIDF\" %s; then echo \"%s exited; its "
			  "log $LOG ends with:\"; tail -c +$START \"$LOG\" | tail -n 15; exit 1; fi\n"
			  "  sleep 0.1; i=$((i+1))\ndone\n"
			  "echo \"%s did not report ready within %d s; its log $LOG ends with:\"; "
			  "tail -n 15 \"$LOG\"; exit 1\n",
		      d->prog, d->prog, d->prog, START_WAIT_TENTHS / 10);
	if (run_step(ru, d->host, what, &s, &r) < 0)
		return -1;
	step_ok(ru, "%s on %s: %s", d->role, d->host, r.out);
	return 0;
}

static void skip(void *ctx, const struct bu_daemon *d)
{
	struct bu_remote *ru = ctx;
	const struct cc_archive *a = &ru->c->archives[d->index];

	step_begin(ru);
	step_ok(ru, "copytool for archive %d on %s: skipped: no copytool backend for %s (use "
		    "posix://, azure:// or s3://)", a->id, d->host, a->url);
}

/* Stops d by its pid file: TERM, up to 10 s, then KILL. */
static int stop(void *ctx, const struct bu_daemon *d)
{
	struct bu_remote *ru = ctx;
	char pidf[PATH_MAX + 96], logf[PATH_MAX + 96], what[128];
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;

	pid_log_names(ru->c, d->role, pidf, sizeof(pidf), logf, sizeof(logf));
	snprintf(what, sizeof(what), "stop %s", d->role);
	step_begin(ru);
	rs_script_begin(&s, ru->c);
	strbuf_printf(&s, "PIDF=");
	rs_quote(&s, pidf);
	strbuf_printf(&s, "\nif ! alive \"$PIDF\" %s; then rm -f \"$PIDF\"; echo \"not running\"; "
			  "exit 0; fi\np=$(cat \"$PIDF\")\nkill -TERM $p\ni=0\n"
			  "while [ $i -lt 100 ] && alive \"$PIDF\" %s; do sleep 0.1; i=$((i+1)); "
			  "done\nif alive \"$PIDF\" %s; then kill -KILL $p; echo \"killed pid $p (it "
			  "did not stop within 10 s)\"; else echo \"stopped pid $p\"; fi\n"
			  "rm -f \"$PIDF\"\n",
		      d->prog, d->prog, d->prog);
	if (run_step(ru, d->host, what, &s, &r) < 0)
		return -1;
	step_ok(ru, "%s on %s: %s", d->role, d->host, r.out);
	return 0;
}

/* ---- targets */

/* The script line that runs `nacre cluster targets` on the MDS host. */
static void targets_cmd(struct strbuf *s, const struct bu_remote *ru, int wait_s)
{
	const struct cc_conf *c = ru->c;
	char mds[2 * CC_ADDR_MAX];

	cc_mds_addrs(c, mds, sizeof(mds));
	rs_quote(s, ru->bin);
	strbuf_printf(s, "/nacre cluster targets ");
	rs_quote(s, mds);
	strbuf_printf(s, " %s ", c->fsname);
	rs_quote(s, c->key_file);
	strbuf_printf(s, " %d ", wait_s);
	for (int i = 0; i < c->nosts; i++)
		strbuf_printf(s, "%s%d", i ? "," : "", c->osts[i].index);
	strbuf_printf(s, "\n");
}

static int wait_osts(void *ctx)
{
	struct bu_remote *ru = ctx;
	const struct cc_conf *c = ru->c;
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;

	step_begin(ru);
	rs_script_begin(&s, c);
	targets_cmd(&s, ru, OST_WAIT_S);
	if (run_step(ru, c->mds_host, "wait for OST registration", &s, &r) < 0)
		return -1;
	step_ok(ru, "%d OST%s registered with the MDS", c->nosts, c->nosts == 1 ? "" : "s");
	return 0;
}

/* ---- clients */

static int mount_client(void *ctx, const struct cc_client *cl, const char *spec,
			const char *opts, int first)
{
	struct bu_remote *ru = ctx;
	const struct cc_conf *c = ru->c;
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;
	char what[128];

	snprintf(what, sizeof(what), "mount client %s", cl->name);
	step_begin(ru);
	rs_script_begin(&s, c);
	strbuf_printf(&s, "MNT=");
	rs_quote(&s, cl->mountpoint);
	strbuf_printf(&s, "\nif mounted \"$MNT\"; then echo \"$MNT already mounted\"; exit 0; fi\n"
			  "mkdir -p \"$MNT\" || exit 1\n");
	/* nacre-mount returns once the mount works (it daemonizes after mounting). */
	rs_quote(&s, ru->bin);
	strbuf_printf(&s, "/nacre-mount ");
	rs_quote(&s, spec);
	strbuf_printf(&s, " \"$MNT\" -o ");
	rs_quote(&s, opts);
	/* Its start-up lines go to a log; only a failure shows them. */
	strbuf_printf(&s, " >>\"$RUN/%s-client-%s.log\" 2>&1 || { tail -n 15 "
			  "\"$RUN/%s-client-%s.log\"; exit 1; }\necho \"mounted %s on $MNT\"\n",
		      c->fsname, cl->name, c->fsname, cl->name, spec);
	if (first && (c->stripe_count || c->stripe_size)) {
		rs_quote(&s, ru->bin);
		strbuf_printf(&s, "/nacre setstripe");
		if (c->stripe_count)
			strbuf_printf(&s, " -c %d", c->stripe_count);
		if (c->stripe_size)
			strbuf_printf(&s, " -S %u", c->stripe_size);
		strbuf_printf(&s, " \"$MNT\" || exit 1\necho \"default striping set\"\n");
	}
	if (run_step(ru, cl->host, what, &s, &r) < 0)
		return -1;
	for (char *nl = strchr(r.out, '\n'); nl; nl = strchr(nl, '\n'))
		*nl = ';';
	step_ok(ru, "client %s on %s: %s", cl->name, cl->host, r.out);
	return 0;
}

static int unmount_client(void *ctx, const struct cc_client *cl)
{
	struct bu_remote *ru = ctx;
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;
	char what[128];

	snprintf(what, sizeof(what), "unmount client %s", cl->name);
	step_begin(ru);
	rs_script_begin(&s, ru->c);
	strbuf_printf(&s, "MNT=");
	rs_quote(&s, cl->mountpoint);
	strbuf_printf(&s, "\nif ! mounted \"$MNT\"; then echo \"$MNT not mounted\"; exit 0; fi\n"
			  "fusermount3 -u \"$MNT\" 2>/dev/null || umount \"$MNT\" || exit 1\n"
			  "i=0; while [ $i -lt 50 ] && mounted \"$MNT\"; do sleep 0.1; i=$((i+1)); "
			  "done\nmounted \"$MNT\" && { echo \"$MNT is still mounted (files open "
			  "there?)\"; exit 1; }\necho \"unmounted $MNT\"\n");
	if (run_step(ru, cl->host, what, &s, &r) < 0)
		return -1;
	step_ok(ru, "client %s on %s: %s", cl->name, cl->host, r.out);
	return 0;
}

/* ---- status: one line per item */

static int daemon_status(void *ctx, const struct bu_daemon *d)
{
	struct bu_remote *ru = ctx;
	char pidf[PATH_MAX + 96], logf[PATH_MAX + 96];
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;

	pid_log_names(ru->c, d->role, pidf, sizeof(pidf), logf, sizeof(logf));
	rs_script_begin(&s, ru->c);
	strbuf_printf(&s, "PIDF=");
	rs_quote(&s, pidf);
	strbuf_printf(&s, "\nif alive \"$PIDF\" %s; then echo \"up (pid $(cat \"$PIDF\"))\"; "
			  "else echo down; exit 3; fi\n", d->prog);
	int rc = rs_run(ru->c, d->host, &s, &r);

	strbuf_fini(&s);
	rs_trim(r.out);
	printf("  %-18s %-14s %s\n", d->role, d->host,
	       r.reached ? r.out : "unreachable (remote shell failed)");
	return rc;
}

static int targets_status(void *ctx)
{
	struct bu_remote *ru = ctx;
	const struct cc_conf *c = ru->c;
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;

	rs_script_begin(&s, c);
	targets_cmd(&s, ru, 0);
	int rc = rs_run(c, c->mds_host, &s, &r);

	strbuf_fini(&s);
	rs_trim(r.out);
	if (r.reached && r.out[0]) {
		for (char *line = r.out; line && *line;) {
			char *nl = strchr(line, '\n');

			if (nl)
				*nl = '\0';
			printf("  %s\n", line);
			line = nl ? nl + 1 : NULL;
		}
	} else {
		printf("  unknown: the MDS on %s cannot be asked\n", c->mds_host);
	}
	return rc;
}

static int mount_status(void *ctx, const struct cc_client *cl)
{
	struct bu_remote *ru = ctx;
	struct strbuf s = STRBUF_INIT;
	struct rs_result r;

	rs_script_begin(&s, ru->c);
	strbuf_printf(&s, "MNT=");
	rs_quote(&s, cl->mountpoint);
	/* A dead FUSE mount is still listed; stat tells it apart. */
	strbuf_printf(&s, "\nif ! mounted \"$MNT\"; then echo down; exit 3; fi\n"
			  "if timeout 5 stat -t \"$MNT\" >/dev/null 2>&1; then echo up; else "
			  "echo \"dead (listed but not answering: umount it)\"; exit 3; fi\n");
	int rc = rs_run(ru->c, cl->host, &s, &r);

	strbuf_fini(&s);
	rs_trim(r.out);
	printf("  %-18s %-14s %s %s\n", cl->name, cl->host, cl->mountpoint,
	       r.reached ? r.out : "unreachable (remote shell failed)");
	return rc;
}

const struct bu_runner bu_remote_runner = {
	.prepare = prepare,
	.start = start,
	.skip = skip,
	.wait_osts = wait_osts,
	.mount = mount_client,
	.unmount = unmount_client,
	.stop = stop,
	.daemon_status = daemon_status,
	.targets_status = targets_status,
	.mount_status = mount_status,
};

int bu_remote_init(struct bu_remote *ru, const struct cc_conf *c)
{
	memset(ru, 0, sizeof(*ru));
	ru->c = c;
	if (c->bin_dir[0]) {
		str_copy(ru->bin, c->bin_dir, sizeof(ru->bin));
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", ru->bin, sizeof(ru->bin) - 1);

	if (n <= 0) {
		cli_err("cannot find the binary dir: set bin_dir in [cluster]");
		return -1;
	}
	ru->bin[n] = '\0';
	char *slash = strrchr(ru->bin, '/');

	if (slash)
		*slash = '\0';
	return 0;
}
