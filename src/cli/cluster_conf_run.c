/* cluster_conf_run.c - `nacre cluster up|down|status CONFIG`: a multi-host cluster driven
 * through a remote shell (docs/cluster.md).
 *
 * Every action on a host is one small sh script fed on the remote shell's stdin
 * (`REMOTE_SHELL sh -s`), so ssh, `ip netns exec` and nsenter behave the same and nothing is
 * quoted twice. A script first prints a marker line: output without it means the remote
 * shell itself failed (host unreachable), not the step. On the hosts, RUN_DIR holds
 * FSNAME-ROLE.pid and FSNAME-ROLE.log for each daemon.
 *
 * `nacre cluster targets` is an internal verb run on the MDS host: it asks the MDS for its
 * target list through libnacre, so the admin machine need not reach the cluster network. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster_conf.h"
#include "common/key.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define MARKER "nacre-remote-ok"
#define REMOTE_TIMEOUT_MS 60000
#define OUT_MAX 16384
#define START_WAIT_TENTHS 150 /* a daemon has 15 s to say it serves */
#define OST_WAIT_S 30

/* ---- a growing string for scripts */

struct sb {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;

		while (cap < b->len + n + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);

		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	char tmp[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		b->oom = 1;
		return;
	}
	sb_add(b, tmp, (size_t)n);
}

/* Appends s as one single-quoted shell word. */
static void sb_q(struct sb *b, const char *s)
{
	sb_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			sb_add(b, "'\\''", 4);
		else
			sb_add(b, s, 1);
	}
	sb_add(b, "'", 1);
}

/* ---- running a script on a host */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Builds argv for the remote shell: the template split on spaces, {host} replaced, then
 * "sh -s". Returns the argument count or -1. words holds the strings. */
static int shell_argv(const struct cc_conf *c, const char *host, char words[][CC_SHELL_MAX],
		      char **argv, int max)
{
	const char *p = c->remote_shell;
	int n = 0;

	while (*p) {
		p += strspn(p, " \t");
		if (!*p)
			break;
		size_t seg = strcspn(p, " \t");
		struct sb w = {0};

		if (n >= max - 3)
			return -1;
		for (size_t i = 0; i < seg;) {
			if (strncmp(p + i, "{host}", 6) == 0 && i + 6 <= seg) {
				sb_add(&w, host, strlen(host));
				i += 6;
			} else {
				sb_add(&w, p + i, 1);
				i++;
			}
		}
		if (w.oom || !w.p || w.len >= CC_SHELL_MAX) {
			free(w.p);
			return -1;
		}
		memcpy(words[n], w.p, w.len + 1);
		free(w.p);
		argv[n] = words[n];
		n++;
		p += seg;
	}
	argv[n++] = "sh";
	argv[n++] = "-s";
	argv[n] = NULL;
	return n;
}

struct remote {
	int status;         /* exit status of the script, or -1 if the shell failed */
	int reached;        /* the marker was seen */
	char out[OUT_MAX];  /* what the script printed after the marker (stdout + stderr) */
	char raw[1024];     /* the start of everything printed, for unreachable hosts */
};

/* Runs script on host; fills r. Returns 0 if the script ran and exited 0. */
static int remote_run(const struct cc_conf *c, const char *host, const char *script,
		      struct remote *r)
{
	char words[16][CC_SHELL_MAX];
	char *argv[20];
	int in[2], out[2];
	struct sb all = {0};

	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (shell_argv(c, host, words, argv, 20) < 0) {
		snprintf(r->raw, sizeof(r->raw), "remote_shell is too long or has too many words");
		return -1;
	}
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	pid_t pid = fork();

	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		/* Its own process group, so a timeout can stop the shell and what it started. */
		setpgid(0, 0);
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(255);
	}
	close(in[0]);
	close(out[1]);
	/* The script is small (a few KiB): one write fits in the pipe buffer. A remote shell
	 * that exits without reading it gives EPIPE, which we ignore. */
	signal(SIGPIPE, SIG_IGN);
	sb_printf(&all, "%s", "");
	{
		size_t len = strlen(script), off = 0;

		while (off < len) {
			ssize_t n = write(in[1], script + off, len - off);

			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	close(in[1]);
	double end = now_s() + REMOTE_TIMEOUT_MS / 1000.0;
	int timed_out = 0;

	for (;;) {
		struct pollfd pfd = {.fd = out[0], .events = POLLIN};
		int left = (int)((end - now_s()) * 1000);

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		int pr = poll(&pfd, 1, left);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			timed_out = 1;
			break;
		}
		char buf[4096];
		ssize_t n = read(out[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (all.len < 4 * OUT_MAX)
			sb_add(&all, buf, (size_t)n);
	}
	close(out[0]);
	if (timed_out)
		kill(-pid, SIGKILL);
	int st = 0;

	waitpid(pid, &st, 0);
	const char *text = all.p ? all.p : "";
	const char *m = strstr(text, MARKER "\n");

	str_copy(r->raw, text, sizeof(r->raw));
	if (m) {
		r->reached = 1;
		str_copy(r->out, m + strlen(MARKER) + 1, sizeof(r->out));
	}
	free(all.p);
	if (timed_out) {
		snprintf(r->raw, sizeof(r->raw), "no answer within %d s", REMOTE_TIMEOUT_MS / 1000);
		r->reached = 0;
		return -1;
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return r->reached && r->status == 0 ? 0 : -1;
}

/* ---- steps */

struct run {
	const struct cc_conf *c;
	char bin[PATH_MAX]; /* binary dir on the hosts */
	double t0;          /* start of the current step */
	int failed;
};

static void step_begin(struct run *ru)
{
	ru->t0 = now_s();
}

static void step_ok(struct run *ru, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void step_ok(struct run *ru, const char *fmt, ...)
{
	va_list ap;

	printf("[%5.1fs] ", now_s() - ru->t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void trim_nl(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

/* Reports a failed step naming the host and the step. */
static void step_fail(struct run *ru, const char *host, const char *what, const struct remote *r)
{
	char text[OUT_MAX];

	ru->failed = 1;
	fflush(stdout);
	if (!r->reached) {
		str_copy(text, r->raw, sizeof(text));
		trim_nl(text);
		cli_err("%s: cannot reach host %s through `%s` (step: %s): %s",
			ru->c->path, host, ru->c->remote_shell, what,
			text[0] ? text : "the remote shell failed");
		return;
	}
	str_copy(text, r->out, sizeof(text));
	trim_nl(text);
	cli_err("step '%s' failed on host %s (exit %d)%s%s", what, host, r->status,
		text[0] ? ":\n" : "", text);
}

/* Common prologue of every script: the marker, strict mode, the run dir. */
static void script_begin(struct sb *s, const struct cc_conf *c)
{
	sb_printf(s, "echo %s\nset -u\nexec 2>&1\nRUN=", MARKER);
	sb_q(s, c->run_dir);
	sb_printf(s, "\nmkdir -p \"$RUN\" || exit 1\n");
	/* alive PIDFILE NAME: the pid file names a live process running program NAME */
	sb_printf(s, "alive() { [ -f \"$1\" ] || return 1; p=$(cat \"$1\"); "
		     "[ -n \"$p\" ] && [ -r /proc/$p/cmdline ] && "
		     "tr '\\0' ' ' </proc/$p/cmdline | grep -q \"$2\"; }\n");
	sb_printf(s, "mounted() { awk -v d=\"$1\" '$2==d && $3==\"fuse.nacre\" {f=1} END "
		     "{exit !f}' /proc/self/mounts; }\n");
}

static void pid_log_names(const struct cc_conf *c, const char *role, char *pid, size_t plen,
			  char *log, size_t llen)
{
	snprintf(pid, plen, "%s/%s-%s.pid", c->run_dir, c->fsname, role);
	snprintf(log, llen, "%s/%s-%s.log", c->run_dir, c->fsname, role);
}

/* Distinct hosts of the config, in order of first appearance. */
static int hosts_of(const struct cc_conf *c, const char *hosts[], int max)
{
	int n = 0;
	const char *cand[1 + CC_MAX_OSS + CC_MAX_CLIENTS + CC_MAX_COPYTOOLS];
	int nc = 0;

	cand[nc++] = c->mds_host;
	for (int i = 0; i < c->noss; i++)
		cand[nc++] = c->oss[i].host;
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
static int check_hosts(struct run *ru, const char *key_text)
{
	const struct cc_conf *c = ru->c;
	const char *hosts[1 + CC_MAX_OSS + CC_MAX_CLIENTS + CC_MAX_COPYTOOLS];
	int n = hosts_of(c, hosts, (int)ARRAY_SIZE(hosts));

	for (int i = 0; i < n; i++) {
		struct sb s = {0};
		struct remote r;
		char what[300];

		snprintf(what, sizeof(what), "check host %s", hosts[i]);
		step_begin(ru);
		script_begin(&s, c);
		sb_printf(&s, "BIN=");
		sb_q(&s, ru->bin);
		sb_printf(&s, "\nfor b in nacre nacre-mds nacre-oss nacre-mount; do [ -x \"$BIN/$b\" ] "
			      "|| { echo \"$BIN/$b is missing: install nacre there or set bin_dir\"; "
			      "exit 1; }; done\nKEY=");
		sb_q(&s, c->key_file);
		sb_printf(&s, "\nWANT=%s\n", key_text);
		sb_printf(&s, "if [ -f \"$KEY\" ]; then\n"
			      "  [ \"$(tr -d '\\n' <\"$KEY\")\" = \"$WANT\" ] || { echo \"$KEY holds a "
			      "different key: copy the cluster's key there or remove it\"; exit 1; }\n"
			      "else\n  mkdir -p \"$(dirname \"$KEY\")\" && (umask 077; echo \"$WANT\" "
			      ">\"$KEY.tmp\") && mv \"$KEY.tmp\" \"$KEY\" && echo \"copied the key to $KEY\" "
			      "|| exit 1\nfi\n");
		if (s.oom) {
			free(s.p);
			return -1;
		}
		int rc = remote_run(c, hosts[i], s.p, &r);

		free(s.p);
		if (rc < 0) {
			step_fail(ru, hosts[i], what, &r);
			return -1;
		}
		trim_nl(r.out);
		step_ok(ru, "host %s reachable%s%s", hosts[i], r.out[0] ? ", " : "", r.out);
	}
	return 0;
}

/* Starts one daemon detached on host unless it already runs; waits for `ready` in its log.
 * fmt_test is a shell condition that is true when the target needs --format. */
static int start_daemon(struct run *ru, const char *host, const char *role, const char *prog,
			const char *args, const char *fmt_test, const char *ready)
{
	const struct cc_conf *c = ru->c;
	char pidf[PATH_MAX + 64], logf[PATH_MAX + 64], what[128];
	struct sb s = {0};
	struct remote r;

	pid_log_names(c, role, pidf, sizeof(pidf), logf, sizeof(logf));
	snprintf(what, sizeof(what), "start %s", role);
	step_begin(ru);
	script_begin(&s, c);
	sb_printf(&s, "PIDF=");
	sb_q(&s, pidf);
	sb_printf(&s, "\nLOG=");
	sb_q(&s, logf);
	sb_printf(&s, "\nPROG=");
	sb_q(&s, ru->bin);
	sb_printf(&s, "/%s\n", prog);
	sb_printf(&s, "if alive \"$PIDF\" %s; then echo \"already running (pid $(cat \"$PIDF\"))\"; "
		      "exit 0; fi\n", prog);
	sb_printf(&s, "FMT=\nif %s; then FMT=--format; fi\n", fmt_test);
	sb_printf(&s, "touch \"$LOG\" && START=$(($(wc -c <\"$LOG\") + 1)) || exit 1\n");
	/* setsid: the daemon outlives the remote shell; the pid file is its own pid. */
	sb_printf(&s, "setsid sh -c 'echo $$ >\"$0\"; exec \"$@\"' \"$PIDF\" \"$PROG\" %s $FMT "
		      ">>\"$LOG\" 2>&1 </dev/null &\n", args);
	sb_printf(&s, "i=0\nwhile [ $i -lt %d ]; do\n"
		      "  if tail -c +$START \"$LOG\" | grep -q %s; then echo \"pid $(cat \"$PIDF\")${FMT:+, "
		      "formatted}, log $LOG\"; exit 0; fi\n"
		      "  if [ $i -gt 2 ] && ! alive \"$PIDF\" %s; then echo \"%s exited; its log "
		      "$LOG ends with:\"; tail -c +$START \"$LOG\" | tail -n 15; exit 1; fi\n"
		      "  sleep 0.1; i=$((i+1))\ndone\n"
		      "echo \"%s did not report ready within %d s; its log $LOG ends with:\"; "
		      "tail -n 15 \"$LOG\"; exit 1\n",
		  START_WAIT_TENTHS, ready, prog, prog, prog, START_WAIT_TENTHS / 10);
	if (s.oom) {
		free(s.p);
		return -1;
	}
	int rc = remote_run(c, host, s.p, &r);

	free(s.p);
	if (rc < 0) {
		step_fail(ru, host, what, &r);
		return -1;
	}
	trim_nl(r.out);
	step_ok(ru, "%s on %s: %s", role, host, r.out);
	return 0;
}

static void metrics_args(struct sb *a, const struct cc_conf *c, const char *addr,
			 const char *role)
{
	if (addr[0]) {
		sb_printf(a, " --metrics-addr ");
		sb_q(a, addr);
	}
	if (c->metrics_log_dir[0]) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/%s-%s.jsonl", c->metrics_log_dir, c->fsname, role);
		sb_printf(a, " --metrics-log ");
		sb_q(a, path);
		if (c->metrics_interval)
			sb_printf(a, " --metrics-interval %d", c->metrics_interval);
	}
}

static int start_mds(struct run *ru)
{
	const struct cc_conf *c = ru->c;
	struct sb a = {0}, t = {0};
	int rc;

	sb_printf(&a, "--fsname %s --data ", c->fsname);
	sb_q(&a, c->mds_data);
	sb_printf(&a, " --listen ");
	sb_q(&a, c->mds_listen);
	sb_printf(&a, " --key-file ");
	sb_q(&a, c->key_file);
	metrics_args(&a, c, c->mds_metrics_addr, "mds");
	/* Only a directory without an MDT is formatted; the MDS checks the fsname of one. */
	sb_printf(&t, "[ ! -f ");
	sb_q(&t, c->mds_data);
	sb_printf(&t, "/data.mdb ]");
	rc = a.oom || t.oom ? -1
			    : start_daemon(ru, c->mds_host, "mds", "nacre-mds", a.p, t.p,
					   "'nacre-mds: serving'");
	free(a.p);
	free(t.p);
	return rc;
}

static int start_oss(struct run *ru, const struct cc_oss *o)
{
	const struct cc_conf *c = ru->c;
	struct sb a = {0}, t = {0};
	char role[64];
	int rc;

	snprintf(role, sizeof(role), "oss-%s", o->name);
	sb_printf(&a, "--fsname %s --mds ", c->fsname);
	sb_q(&a, c->mds_listen);
	sb_printf(&a, " --listen ");
	sb_q(&a, o->listen);
	sb_printf(&a, " --key-file ");
	sb_q(&a, c->key_file);
	sb_printf(&t, "false");
	for (int i = 0; i < o->nosts; i++) {
		char ost[PATH_MAX + 16];

		snprintf(ost, sizeof(ost), "%d:%s", o->osts[i].index, o->osts[i].dir);
		sb_printf(&a, " --ost ");
		sb_q(&a, ost);
		/* --format creates only missing superblocks; existing ones are checked. */
		sb_printf(&t, " || [ ! -f ");
		sb_q(&t, o->osts[i].dir);
		sb_printf(&t, "/nacre-ost.sb ]");
	}
	metrics_args(&a, c, o->metrics_addr, role);
	rc = a.oom || t.oom ? -1
			    : start_daemon(ru, o->host, role, "nacre-oss", a.p, t.p,
					   "'nacre-oss: serving'");
	free(a.p);
	free(t.p);
	return rc;
}

/* The script line that runs `nacre cluster targets` on the MDS host. */
static void targets_cmd(struct sb *s, const struct run *ru, int wait_s)
{
	const struct cc_conf *c = ru->c;

	sb_q(s, ru->bin);
	sb_printf(s, "/nacre cluster targets ");
	sb_q(s, c->mds_listen);
	sb_printf(s, " %s ", c->fsname);
	sb_q(s, c->key_file);
	sb_printf(s, " %d ", wait_s);
	for (int i = 0, first = 1; i < c->noss; i++)
		for (int k = 0; k < c->oss[i].nosts; k++, first = 0)
			sb_printf(s, "%s%d", first ? "" : ",", c->oss[i].osts[k].index);
	sb_printf(s, "\n");
}

static int wait_osts(struct run *ru)
{
	const struct cc_conf *c = ru->c;
	struct sb s = {0};
	struct remote r;

	step_begin(ru);
	script_begin(&s, c);
	targets_cmd(&s, ru, OST_WAIT_S);
	if (s.oom) {
		free(s.p);
		return -1;
	}
	int rc = remote_run(c, c->mds_host, s.p, &r);

	free(s.p);
	if (rc < 0) {
		step_fail(ru, c->mds_host, "wait for OST registration", &r);
		return -1;
	}
	step_ok(ru, "%d OST%s registered with the MDS", cc_nosts(c), cc_nosts(c) == 1 ? "" : "s");
	return 0;
}

static int mount_client(struct run *ru, const struct cc_client *cl, int set_striping)
{
	const struct cc_conf *c = ru->c;
	struct sb s = {0};
	struct remote r;
	char what[128], spec[CC_ADDR_MAX + 32], opts[PATH_MAX + 1024];

	snprintf(what, sizeof(what), "mount client %s", cl->name);
	snprintf(spec, sizeof(spec), "%s:/%s", c->mds_listen, c->fsname);
	snprintf(opts, sizeof(opts), "key_file=%s%s%s", c->key_file, cl->options[0] ? "," : "",
		 cl->options);
	if (cl->metrics_addr[0])
		snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts), ",metrics_addr=%s",
			 cl->metrics_addr);
	step_begin(ru);
	script_begin(&s, c);
	sb_printf(&s, "MNT=");
	sb_q(&s, cl->mountpoint);
	sb_printf(&s, "\nif mounted \"$MNT\"; then echo \"$MNT already mounted\"; exit 0; fi\n"
		      "mkdir -p \"$MNT\" || exit 1\n");
	/* nacre-mount returns once the mount works (it daemonizes after mounting). */
	sb_q(&s, ru->bin);
	sb_printf(&s, "/nacre-mount ");
	sb_q(&s, spec);
	sb_printf(&s, " \"$MNT\" -o ");
	sb_q(&s, opts);
	/* Its start-up lines go to a log; only a failure shows them. */
	sb_printf(&s, " >>\"$RUN/%s-client-%s.log\" 2>&1 || { tail -n 15 \"$RUN/%s-client-%s.log\"; "
		      "exit 1; }\necho \"mounted %s on $MNT\"\n",
		  c->fsname, cl->name, c->fsname, cl->name, spec);
	if (set_striping && (c->stripe_count || c->stripe_size)) {
		sb_q(&s, ru->bin);
		sb_printf(&s, "/nacre setstripe");
		if (c->stripe_count)
			sb_printf(&s, " -c %d", c->stripe_count);
		if (c->stripe_size)
			sb_printf(&s, " -S %u", c->stripe_size);
		sb_printf(&s, " \"$MNT\" || exit 1\necho \"default striping set\"\n");
	}
	if (s.oom) {
		free(s.p);
		return -1;
	}
	int rc = remote_run(c, cl->host, s.p, &r);

	free(s.p);
	if (rc < 0) {
		step_fail(ru, cl->host, what, &r);
		return -1;
	}
	trim_nl(r.out);
	for (char *nl = strchr(r.out, '\n'); nl; nl = strchr(nl, '\n'))
		*nl = ';';
	step_ok(ru, "client %s on %s: %s", cl->name, cl->host, r.out);
	return 0;
}

/* The copytool's --backend for a config archive URL: posix:// and file:// are posix:PATH,
 * az:// is azure://. Returns -1 for a scheme the copytool has no backend for. */
static int copytool_url(const char *url, char *out, size_t len)
{
	if (strncmp(url, "posix://", 8) == 0)
		return snprintf(out, len, "posix:%s", url + 8) < (int)len ? 0 : -1;
	if (strncmp(url, "file://", 7) == 0)
		return snprintf(out, len, "posix:%s", url + 7) < (int)len ? 0 : -1;
	if (strncmp(url, "az://", 5) == 0)
		return snprintf(out, len, "azure://%s", url + 5) < (int)len ? 0 : -1;
	if (strncmp(url, "azure://", 8) == 0 || strncmp(url, "s3://", 5) == 0)
		return str_copy(out, url, len) < len ? 0 : -1;
	return -1;
}

/* One nacre-copytool per archive on each copytool host, started like the daemons (pid
 * file, log, waits for its "serving archive" line). */
static int copytools(struct run *ru)
{
	const struct cc_conf *c = ru->c;

	for (int i = 0; i < c->ncopytools; i++) {
		for (int k = 0; k < c->narchives; k++) {
			char role[64], url[1100], spec[CC_ADDR_MAX + 32];
			struct sb a = {0};
			int rc;

			if (copytool_url(c->archives[k].url, url, sizeof(url)) < 0) {
				step_begin(ru);
				step_ok(ru, "copytool for archive %d on %s: skipped: no copytool "
					    "backend for %s (use posix://, azure:// or s3://)",
					c->archives[k].id, c->copytools[i], c->archives[k].url);
				continue;
			}
			snprintf(role, sizeof(role), "copytool-%d", c->archives[k].id);
			snprintf(spec, sizeof(spec), "%s:/%s", c->mds_listen, c->fsname);
			sb_printf(&a, "--mds ");
			sb_q(&a, spec);
			sb_printf(&a, " --key-file ");
			sb_q(&a, c->key_file);
			sb_printf(&a, " --archive-id %d --backend ", c->archives[k].id);
			sb_q(&a, url);
			if (c->hsm_endpoint[0]) {
				sb_printf(&a, " --endpoint ");
				sb_q(&a, c->hsm_endpoint);
			}
			if (c->hsm_credentials[0]) {
				sb_printf(&a, " --credentials ");
				sb_q(&a, c->hsm_credentials);
			}
			rc = a.oom ? -1
				   : start_daemon(ru, c->copytools[i], role, "nacre-copytool", a.p,
						  "false", "'serving archive'");
			free(a.p);
			if (rc < 0)
				return -1;
		}
	}
	return 0;
}

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
	trim_nl(out);
	if (strspn(out, "0123456789abcdefABCDEF") != strlen(out)) {
		cli_err("%s: the key must be one line of hex digits", c->key_file);
		return -1;
	}
	return 0;
}

static int set_bin(struct run *ru)
{
	if (ru->c->bin_dir[0]) {
		str_copy(ru->bin, ru->c->bin_dir, sizeof(ru->bin));
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", ru->bin, sizeof(ru->bin) - 1);

	if (n <= 0)
		return -1;
	ru->bin[n] = '\0';
	char *slash = strrchr(ru->bin, '/');

	if (slash)
		*slash = '\0';
	return 0;
}

static int load(const char *path, struct cc_conf *c, struct run *ru)
{
	char err[1024];

	if (cc_parse(path, c, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return -1;
	}
	memset(ru, 0, sizeof(*ru));
	ru->c = c;
	if (set_bin(ru) < 0) {
		cli_err("cannot find the binary dir: set bin_dir in [cluster]");
		return -1;
	}
	return 0;
}

static int cluster_up(const char *path)
{
	static struct cc_conf c;
	struct run ru;
	char key[600];
	double t = now_s();

	if (load(path, &c, &ru) < 0 || local_key(&c, key, sizeof(key)) < 0)
		return 1;
	printf("bringing up %s from %s: MDS on %s, %d OSS, %d OST%s, %d client%s\n", c.fsname,
	       path, c.mds_host, c.noss, cc_nosts(&c), cc_nosts(&c) == 1 ? "" : "s", c.nclients,
	       c.nclients == 1 ? "" : "s");
	fflush(stdout);
	if (check_hosts(&ru, key) < 0 || start_mds(&ru) < 0)
		goto fail;
	for (int i = 0; i < c.noss; i++)
		if (start_oss(&ru, &c.oss[i]) < 0)
			goto fail;
	if (wait_osts(&ru) < 0)
		goto fail;
	for (int i = 0; i < c.nclients; i++)
		if (mount_client(&ru, &c.clients[i], i == 0) < 0)
			goto fail;
	if (copytools(&ru) < 0)
		goto fail;
	printf("%s is up in %.1f s\n", c.fsname, now_s() - t);
	return 0;
fail:
	fprintf(stderr, "nacre: stopped at the first failure; what was started keeps running "
			"(stop it with `nacre cluster down %s`)\n", path);
	return 1;
}

/* Stops the daemon of role on host by its pid file: TERM, up to 10 s, then KILL. */
static int stop_daemon(struct run *ru, const char *host, const char *role, const char *prog)
{
	const struct cc_conf *c = ru->c;
	char pidf[PATH_MAX + 64], logf[PATH_MAX + 64], what[128];
	struct sb s = {0};
	struct remote r;

	pid_log_names(c, role, pidf, sizeof(pidf), logf, sizeof(logf));
	snprintf(what, sizeof(what), "stop %s", role);
	step_begin(ru);
	script_begin(&s, c);
	sb_printf(&s, "PIDF=");
	sb_q(&s, pidf);
	sb_printf(&s, "\nif ! alive \"$PIDF\" %s; then rm -f \"$PIDF\"; echo \"not running\"; "
		      "exit 0; fi\np=$(cat \"$PIDF\")\nkill -TERM $p\ni=0\n"
		      "while [ $i -lt 100 ] && alive \"$PIDF\" %s; do sleep 0.1; i=$((i+1)); done\n"
		      "if alive \"$PIDF\" %s; then kill -KILL $p; echo \"killed pid $p (it did not "
		      "stop within 10 s)\"; else echo \"stopped pid $p\"; fi\nrm -f \"$PIDF\"\n",
		  prog, prog, prog);
	int rc = s.oom ? -1 : remote_run(c, host, s.p, &r);

	free(s.p);
	if (rc < 0) {
		step_fail(ru, host, what, &r);
		return -1;
	}
	trim_nl(r.out);
	step_ok(ru, "%s on %s: %s", role, host, r.out);
	return 0;
}

static int unmount_client(struct run *ru, const struct cc_client *cl)
{
	const struct cc_conf *c = ru->c;
	struct sb s = {0};
	struct remote r;
	char what[128];

	snprintf(what, sizeof(what), "unmount client %s", cl->name);
	step_begin(ru);
	script_begin(&s, c);
	sb_printf(&s, "MNT=");
	sb_q(&s, cl->mountpoint);
	sb_printf(&s, "\nif ! mounted \"$MNT\"; then echo \"$MNT not mounted\"; exit 0; fi\n"
		      "fusermount3 -u \"$MNT\" 2>/dev/null || umount \"$MNT\" || exit 1\n"
		      "i=0; while [ $i -lt 50 ] && mounted \"$MNT\"; do sleep 0.1; i=$((i+1)); done\n"
		      "mounted \"$MNT\" && { echo \"$MNT is still mounted (files open there?)\"; "
		      "exit 1; }\necho \"unmounted $MNT\"\n");
	int rc = s.oom ? -1 : remote_run(c, cl->host, s.p, &r);

	free(s.p);
	if (rc < 0) {
		step_fail(ru, cl->host, what, &r);
		return -1;
	}
	trim_nl(r.out);
	step_ok(ru, "client %s on %s: %s", cl->name, cl->host, r.out);
	return 0;
}

static int cluster_down(const char *path)
{
	static struct cc_conf c;
	struct run ru;
	int rc = 0;

	if (load(path, &c, &ru) < 0)
		return 1;
	printf("stopping %s from %s\n", c.fsname, path);
	fflush(stdout);
	/* Clients first, then OSSes, the MDS last; go on past a failure so as much as
	 * possible stops, and report it in the exit code. */
	for (int i = 0; i < c.nclients; i++)
		if (unmount_client(&ru, &c.clients[i]) < 0)
			rc = 1;
	for (int i = 0; i < c.ncopytools; i++)
		for (int k = 0; k < c.narchives; k++) {
			char role[64];

			snprintf(role, sizeof(role), "copytool-%d", c.archives[k].id);
			if (stop_daemon(&ru, c.copytools[i], role, "nacre-copytool") < 0)
				rc = 1;
		}
	for (int i = 0; i < c.noss; i++) {
		char role[64];

		snprintf(role, sizeof(role), "oss-%s", c.oss[i].name);
		if (stop_daemon(&ru, c.oss[i].host, role, "nacre-oss") < 0)
			rc = 1;
	}
	if (stop_daemon(&ru, c.mds_host, "mds", "nacre-mds") < 0)
		rc = 1;
	printf(rc ? "%s: some steps failed (see above)\n" : "%s is down\n", c.fsname);
	return rc;
}

/* One status line: "  KIND NAME on HOST: up|down ..." */
static int status_daemon(struct run *ru, const char *host, const char *role, const char *prog)
{
	const struct cc_conf *c = ru->c;
	char pidf[PATH_MAX + 64], logf[PATH_MAX + 64];
	struct sb s = {0};
	struct remote r;

	pid_log_names(c, role, pidf, sizeof(pidf), logf, sizeof(logf));
	script_begin(&s, c);
	sb_printf(&s, "PIDF=");
	sb_q(&s, pidf);
	sb_printf(&s, "\nif alive \"$PIDF\" %s; then echo \"up (pid $(cat \"$PIDF\"))\"; "
		      "else echo down; exit 3; fi\n", prog);
	int rc = s.oom ? -1 : remote_run(c, host, s.p, &r);

	free(s.p);
	trim_nl(r.out);
	printf("  %-18s %-14s %s\n", role, host,
	       r.reached ? r.out : "unreachable (remote shell failed)");
	return rc;
}

static int cluster_status(const char *path)
{
	static struct cc_conf c;
	struct run ru;
	int down = 0;

	if (load(path, &c, &ru) < 0)
		return 1;
	printf("%s (%s)\ndaemons:\n", c.fsname, path);
	if (status_daemon(&ru, c.mds_host, "mds", "nacre-mds") < 0)
		down++;
	for (int i = 0; i < c.noss; i++) {
		char role[64];

		snprintf(role, sizeof(role), "oss-%s", c.oss[i].name);
		if (status_daemon(&ru, c.oss[i].host, role, "nacre-oss") < 0)
			down++;
	}
	for (int i = 0; i < c.ncopytools; i++)
		for (int k = 0; k < c.narchives; k++) {
			char role[64];

			snprintf(role, sizeof(role), "copytool-%d", c.archives[k].id);
			if (status_daemon(&ru, c.copytools[i], role, "nacre-copytool") < 0)
				down++;
		}
	printf("targets (as the MDS sees them):\n");
	{
		struct sb s = {0};
		struct remote r;

		script_begin(&s, &c);
		targets_cmd(&s, &ru, 0);
		int rc = s.oom ? -1 : remote_run(&c, c.mds_host, s.p, &r);

		free(s.p);
		trim_nl(r.out);
		if (rc < 0)
			down++;
		if (r.reached && r.out[0]) {
			for (char *line = r.out; line && *line;) {
				char *nl = strchr(line, '\n');

				if (nl)
					*nl = '\0';
				printf("  %s\n", line);
				line = nl ? nl + 1 : NULL;
			}
		} else {
			printf("  unknown: the MDS on %s cannot be asked\n", c.mds_host);
		}
	}
	printf("mounts:\n");
	for (int i = 0; i < c.nclients; i++) {
		const struct cc_client *cl = &c.clients[i];
		struct sb s = {0};
		struct remote r;

		script_begin(&s, &c);
		sb_printf(&s, "MNT=");
		sb_q(&s, cl->mountpoint);
		/* A dead FUSE mount is still listed; stat tells it apart. */
		sb_printf(&s, "\nif ! mounted \"$MNT\"; then echo down; exit 3; fi\n"
			      "if timeout 5 stat -t \"$MNT\" >/dev/null 2>&1; then echo up; else "
			      "echo \"dead (listed but not answering: umount it)\"; exit 3; fi\n");
		int rc = s.oom ? -1 : remote_run(&c, cl->host, s.p, &r);

		free(s.p);
		trim_nl(r.out);
		if (rc < 0)
			down++;
		printf("  %-18s %-14s %s %s\n", cl->name, cl->host, cl->mountpoint,
		       r.reached ? r.out : "unreachable (remote shell failed)");
	}
	printf(down ? "%d item%s down\n" : "everything is up\n", down, down == 1 ? " is" : "s are");
	return down ? 3 : 0;
}

/* nacre cluster targets MDS_ADDR FSNAME KEY WAIT_S [IDX,IDX...]: prints the MDS's targets;
 * with indexes, waits up to WAIT_S for them to be up and exits 1 if they are not. */
static int cluster_targets(int argc, char **argv)
{
	char spec[CC_ADDR_MAX + 32], err[512];
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
	for (double end = now_s() + (double)wait_s;;) {
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
		if (now_s() >= end) {
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
