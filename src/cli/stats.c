/* stats.c - `nacre stats` and `nacre top`: read the daemons' Prometheus endpoints
 * (--metrics-addr) and show per-target counters (obdfilter.*.stats in lprocfs's shape, which
 * `nacre get_param` prints too) or a live per-server view.
 *
 * The CLI has no other way to per-server counters: path-based commands only see the FUSE
 * mount, so a daemon without --metrics-addr shows nothing here (docs/cluster.md). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster_conf.h"
#include "common/lprocfs.h"
#include "common/strbuf.h"
#include "common/util.h"

#define MAX_EPS 64


static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_scrape_free(struct cli_scrape *sc)
{
	free(sc->s);
	memset(sc, 0, sizeof(*sc));
}

/* Parses Prometheus text: `name{labels} value` lines; comments skipped. */
static void parse_text(struct cli_scrape *sc, char *text)
{
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (line[0] != '#' && line[0]) {
			struct cli_metric smp;
			char *sp = strrchr(line, ' ');
			char *brace = strchr(line, '{');
			char *end;

			memset(&smp, 0, sizeof(smp));
			if (sp) {
				smp.value = strtod(sp + 1, &end);
				*sp = '\0';
				if (brace && brace < sp) {
					char *rb = strrchr(brace, '}');

					*brace = '\0';
					if (rb)
						*rb = '\0';
					str_copy(smp.labels, brace + 1, sizeof(smp.labels));
				}
				str_copy(smp.name, line, sizeof(smp.name));
				if (sc->n == sc->cap) {
					int cap = sc->cap ? sc->cap * 2 : 256;
					struct cli_metric *ns = realloc(sc->s, (size_t)cap * sizeof(*ns));

					if (!ns)
						return;
					sc->s = ns;
					sc->cap = cap;
				}
				sc->s[sc->n++] = smp;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
}

void cli_scrape_fetch(const char *addr, struct cli_scrape *sc)
{
	char *body;

	cli_scrape_free(sc);
	body = cli_http(addr, "GET", "/metrics", sc->err, sizeof(sc->err));
	if (!body)
		return;
	parse_text(sc, body);
	free(body);
	sc->ok = 1;
}

/* Sum of every sample named name (any labels), or -1 if none. */
static double sum_of(const struct cli_scrape *sc, const char *name)
{
	double v = 0;
	int found = 0;

	for (int i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].name, name) == 0) {
			v += sc->s[i].value;
			found = 1;
		}
	return found ? v : -1;
}

/* The value of label key in a label string (`a="x",b="y"`), copied into out. */
int cli_label_of(const char *labels, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = labels; p && *p;) {
		if (strncmp(p, key, kl) == 0 && p[kl] == '=' && p[kl + 1] == '"') {
			const char *v = p + kl + 2, *q = strchr(v, '"');

			if (!q)
				return -1;
			size_t n = (size_t)(q - v) < len - 1 ? (size_t)(q - v) : len - 1;

			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return -1;
}

static const char *role_of(const struct cli_scrape *sc)
{
	for (int i = 0; i < sc->n; i++) {
		if (strncmp(sc->s[i].name, "nacre_oss_", 10) == 0)
			return "oss";
		if (strncmp(sc->s[i].name, "nacre_mds_", 10) == 0)
			return "mds";
		if (strncmp(sc->s[i].name, "nacre_client_", 13) == 0)
			return "client";
	}
	return "?";
}

int cli_scrape_targets(const struct cli_scrape *sc, char (*out)[64], int max)
{
	int n = 0;

	for (int i = 0; i < sc->n && n < max; i++)
		if (strcmp(sc->s[i].name, "nacre_oss_read_bytes_total") == 0 &&
		    cli_label_of(sc->s[i].labels, "target", out[n], 64) == 0)
			n++;
	return n;
}

/* The value of name{target="target"} (the only label), or -1 when absent. */
static double target_value(const struct cli_scrape *sc, const char *name, const char *target)
{
	char want[128];

	snprintf(want, sizeof(want), "target=\"%s\"", target);
	for (int i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].name, name) == 0 && strcmp(sc->s[i].labels, want) == 0)
			return sc->s[i].value;
	return -1;
}

/* read_bytes and write_bytes lines from PREFIX_{read,write}_{requests_total,min_bytes,
 * max_bytes,bytes_total} (of target, or unlabelled when target is NULL). */
static void size_lines(const struct cli_scrape *sc, const char *prefix, const char *target,
		       struct strbuf *out)
{
	static const char *const dirs[] = {"read", "write"};
	static const char *const parts[] = {"min_bytes", "max_bytes", "bytes_total",
					    "requests_total"};

	for (int d = 0; d < 2; d++) {
		char n[96];
		double v[4];
		uint64_t mms[3];

		for (int k = 0; k < 4; k++) {
			snprintf(n, sizeof(n), "%s_%s_%s", prefix, dirs[d], parts[k]);
			v[k] = target ? target_value(sc, n, target) : sum_of(sc, n);
		}
		snprintf(n, sizeof(n), "%s_bytes", dirs[d]);
		for (int k = 0; k < 3; k++)
			mms[k] = v[k] > 0 ? (uint64_t)v[k] : 0;
		lprocfs_counter_line(out, n, v[3] > 0 ? (uint64_t)v[3] : 0, "bytes", mms);
	}
}

void cli_target_stats(const struct cli_scrape *sc, const char *target, struct strbuf *out)
{
	lprocfs_snapshot_line(out);
	size_lines(sc, "nacre_oss", target, out);
	/* Requests by operation, named as lprocfs names them (OST_PUNCH is "punch"). */
	for (int i = 0; i < sc->n; i++) {
		char t[64], op[64];

		if (strcmp(sc->s[i].name, "nacre_oss_target_requests_total") != 0 ||
		    cli_label_of(sc->s[i].labels, "target", t, sizeof(t)) < 0 ||
		    strcmp(t, target) != 0 || cli_label_of(sc->s[i].labels, "op", op, sizeof(op)) < 0)
			continue;
		const char *short_op = strncmp(op, "OST_", 4) == 0 ? op + 4 : op;
		char lower[64];
		size_t k = 0;

		for (; short_op[k] && k + 1 < sizeof(lower); k++)
			lower[k] = (char)(short_op[k] >= 'A' && short_op[k] <= 'Z' ? short_op[k] + 32
										  : short_op[k]);
		lower[k] = '\0';
		lprocfs_counter_line(out, lower, sc->s[i].value > 0 ? (uint64_t)sc->s[i].value : 0,
				     "reqs", NULL);
	}
}

int cli_scrape_mdt(const struct cli_scrape *sc, char *out, size_t len)
{
	for (int i = 0; i < sc->n; i++)
		if (strcmp(sc->s[i].name, "nacre_mds_target_info") == 0 &&
		    cli_label_of(sc->s[i].labels, "target", out, len) == 0)
			return 0;
	return -1;
}

void cli_mdt_stats(const struct cli_scrape *sc, struct strbuf *out)
{
	lprocfs_snapshot_line(out);
	for (int i = 0; i < sc->n; i++) {
		char op[64], lower[64];
		size_t k = 0;

		if (strcmp(sc->s[i].name, "nacre_rpc_server_requests_total") != 0 ||
		    cli_label_of(sc->s[i].labels, "op", op, sizeof(op)) < 0 ||
		    strncmp(op, "MDS_", 4) != 0)
			continue;
		for (const char *c = op + 4; *c && k + 1 < sizeof(lower); c++)
			lower[k++] = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
		lower[k] = '\0';
		lprocfs_counter_line(out, lower, sc->s[i].value > 0 ? (uint64_t)sc->s[i].value : 0,
				     "reqs", NULL);
	}
}

/* Endpoints from -c CONFIG and the command line. */
static int endpoints(int argc, char **argv, int first, const char *conf, char eps[][CC_ADDR_MAX])
{
	int n = 0;

	if (conf) {
		static struct cc_conf c;
		char err[1024];

		if (cc_parse(conf, &c, err, sizeof(err)) < 0) {
			cli_err("%s", err);
			return -1;
		}
		if (c.mds_metrics_addr[0])
			str_copy(eps[n++], c.mds_metrics_addr, CC_ADDR_MAX);
		for (int i = 0; i < c.noss && n < MAX_EPS; i++)
			if (c.oss[i].metrics_addr[0])
				str_copy(eps[n++], c.oss[i].metrics_addr, CC_ADDR_MAX);
		for (int i = 0; i < c.nclients && n < MAX_EPS; i++)
			if (c.clients[i].metrics_addr[0])
				str_copy(eps[n++], c.clients[i].metrics_addr, CC_ADDR_MAX);
	}
	for (int i = first; i < argc && n < MAX_EPS; i++)
		str_copy(eps[n++], argv[i], CC_ADDR_MAX);
	if (n == 0)
		cli_err("no metrics endpoints: give HOST:PORT of daemons started with --metrics-addr, "
			"or -c CONFIG with metrics_addr keys");
	return n;
}

static int parse_common(int argc, char **argv, const char **conf, int *count)
{
	int i = 1;

	for (; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			*conf = argv[++i];
		} else if (count && strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			int64_t v;

			if (parse_i64(argv[++i], 1, 1000000, &v) < 0) {
				cli_err("-n %s: give a count", argv[i]);
				return -1;
			}
			*count = (int)v;
		} else if (argv[i][0] == '-') {
			cli_err("%s: unknown option '%s'", argv[0], argv[i]);
			cli_usage(stderr, argv[0]);
			return -1;
		} else {
			break;
		}
	}
	return i;
}

int cli_stats(int argc, char **argv)
{
	static char eps[MAX_EPS][CC_ADDR_MAX];
	const char *conf = NULL;
	int first = parse_common(argc, argv, &conf, NULL), rc = 0;

	if (first < 0)
		return 1;
	int n = endpoints(argc, argv, first, conf, eps);

	if (n <= 0)
		return 1;
	for (int e = 0; e < n; e++) {
		struct cli_scrape sc = {0};

		cli_scrape_fetch(eps[e], &sc);
		if (!sc.ok) {
			printf("%s: unreachable (%s)\n", eps[e], sc.err);
			rc = 1;
			continue;
		}
		const char *role = role_of(&sc);

		printf("%s (%s):\n", eps[e], role);
		/* Per-target counters, exactly as `lctl get_param obdfilter.*.stats`. */
		char tgts[64][64];
		int nt = cli_scrape_targets(&sc, tgts, 64);

		for (int i = 0; i < nt; i++) {
			struct strbuf sb = STRBUF_INIT;

			cli_target_stats(&sc, tgts[i], &sb);
			printf("obdfilter.%s.stats=\n%s", tgts[i], strbuf_cstr(&sb));
			strbuf_fini(&sb);
		}
		if (strcmp(role, "client") == 0) {
			/* As llite.*.stats (without open/close: the endpoint has no counts). */
			struct strbuf sb = STRBUF_INIT;

			lprocfs_snapshot_line(&sb);
			size_lines(&sc, "nacre_client", NULL, &sb);
			printf("llite.stats=\n%s", strbuf_cstr(&sb));
			strbuf_fini(&sb);
		}
		/* Requests by operation: served (daemons) or sent (clients). */
		const char *cnt = strcmp(role, "client") == 0
					  ? "nacre_rpc_client_latency_seconds_count"
					  : "nacre_rpc_server_requests_total";

		printf("%s.ops=\n", role);
		for (int i = 0; i < sc.n; i++) {
			char op[64];

			if (strcmp(sc.s[i].name, cnt) == 0 &&
			    cli_label_of(sc.s[i].labels, "op", op, sizeof(op)) == 0 && sc.s[i].value > 0)
				printf("%-25s %.0f samples [reqs]\n", op, sc.s[i].value);
		}
		cli_scrape_free(&sc);
	}
	return rc;
}

/* ---- top */

static volatile sig_atomic_t g_quit;

static void on_sigint(int sig)
{
	(void)sig;
	g_quit = 1;
}

struct prev {
	double t, in, out, reqs;
	int have;
};

static void human(double kb, char *out, size_t len)
{
	const char *u = "KMGTP";
	int i = 0;

	while (kb >= 1024 && i < 4) {
		kb /= 1024;
		i++;
	}
	snprintf(out, len, "%.1f%c", kb, u[i]);
}

/* Requests served (a daemon) or sent (a client): one counter per role, never the other,
 * so that two refreshes compare the same counter (a daemon that has served nothing yet
 * shows no server counter, only its own calls to other servers). */
static double reqs_of(const struct cli_scrape *sc)
{
	double r = sum_of(sc, strcmp(role_of(sc), "client") == 0
				      ? "nacre_rpc_client_latency_seconds_count"
				      : "nacre_rpc_server_requests_total");
	return r < 0 ? 0 : r;
}

int cli_top(int argc, char **argv)
{
	static char eps[MAX_EPS][CC_ADDR_MAX];
	static struct prev prev[MAX_EPS];
	const char *conf = NULL;
	int count = 0;
	int first = parse_common(argc, argv, &conf, &count);
	struct termios saved;
	int tty = isatty(STDIN_FILENO), raw = 0;

	if (first < 0)
		return 1;
	int n = endpoints(argc, argv, first, conf, eps);

	if (n <= 0)
		return 1;
	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
		struct termios t = saved;

		/* Keys arrive one at a time and unechoed; ISIG stays so Ctrl-C still works. */
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
	}
	for (int round = 0; !g_quit && (count == 0 || round < count); round++) {
		double t = (double)now_ms() / 1000.0;

		if (isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		printf("nacre top - %d server%s, every 1 s (q quits)\n", n, n == 1 ? "" : "s");
		printf("%-22s %-6s %6s %10s %11s %11s %9s\n", "SERVER", "ROLE", "LOAD", "FREE",
		       "IN/s", "OUT/s", "REQ/s");
		for (int e = 0; e < n; e++) {
			struct cli_scrape sc = {0};

			cli_scrape_fetch(eps[e], &sc);
			if (!sc.ok) {
				printf("%-22s %-6s %s\n", eps[e], "-", sc.err);
				prev[e].have = 0;
				continue;
			}
			double in = sum_of(&sc, "nacre_net_received_bytes_total");
			double out = sum_of(&sc, "nacre_net_sent_bytes_total");
			double reqs = reqs_of(&sc);
			double load = sum_of(&sc, "nacre_load1");
			double kb = sum_of(&sc, "nacre_kbytes_free");
			char free_s[16], in_s[16], out_s[16], load_s[16] = "-";

			human(kb < 0 ? 0 : kb, free_s, sizeof(free_s));
			if (load >= 0) /* absent from an endpoint that does not report it */
				snprintf(load_s, sizeof(load_s), "%.2f", load);
			/* a counter that went back: the process restarted; no rate this time */
			if (prev[e].have && (in < prev[e].in || out < prev[e].out || reqs < prev[e].reqs))
				prev[e].have = 0;
			if (prev[e].have && t > prev[e].t) {
				double dt = t - prev[e].t;

				human((in - prev[e].in) / dt / 1024, in_s, sizeof(in_s));
				human((out - prev[e].out) / dt / 1024, out_s, sizeof(out_s));
				printf("%-22s %-6s %6s %10s %10sB %10sB %9.1f\n", eps[e], role_of(&sc),
				       load_s, free_s, in_s, out_s, (reqs - prev[e].reqs) / dt);
			} else {
				printf("%-22s %-6s %6s %10s %11s %11s %9s\n", eps[e], role_of(&sc),
				       load_s, free_s, "-", "-", "-");
			}
			prev[e] = (struct prev){t, in, out, reqs, 1};
			cli_scrape_free(&sc);
		}
		fflush(stdout);
		if (count && round + 1 >= count)
			break;
		/* Wait a second, watching for q. */
		for (int64_t end = now_ms() + 1000; !g_quit && now_ms() < end;) {
			struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
			int left = (int)(end - now_ms());

			if (tty && poll(&p, 1, left > 0 ? left : 0) == 1) {
				char ch;

				if (read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
					g_quit = 1;
			} else if (!tty) {
				usleep((useconds_t)(left > 0 ? left : 0) * 1000);
			}
		}
	}
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	return 0;
}
