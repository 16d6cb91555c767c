/* remote_shell.c - a script on a host through the remote shell (see remote_shell.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/remote_shell.h"
#include "common/util.h"

#define MARKER "nacre-remote-ok"
#define REMOTE_TIMEOUT_MS 60000
#define SHELL_WORDS_MAX 16

void rs_quote(struct strbuf *b, const char *s)
{
	strbuf_char(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			strbuf_str(b, "'\\''");
		else
			strbuf_char(b, *s);
	}
	strbuf_char(b, '\'');
}

void rs_trim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

void rs_script_begin(struct strbuf *s, const struct cc_conf *c)
{
	strbuf_printf(s, "echo %s\nset -u\nexec 2>&1\nRUN=", MARKER);
	rs_quote(s, c->run_dir);
	strbuf_printf(s, "\nmkdir -p \"$RUN\" || exit 1\n");
	/* alive PIDFILE NAME: the pid file names a live process running program NAME */
	strbuf_printf(s, "alive() { [ -f \"$1\" ] || return 1; p=$(cat \"$1\"); "
			 "[ -n \"$p\" ] && [ -r /proc/$p/cmdline ] && "
			 "tr '\\0' ' ' </proc/$p/cmdline | grep -q \"$2\"; }\n");
	strbuf_printf(s, "mounted() { awk -v d=\"$1\" '$2==d && $3==\"fuse.nacre\" {f=1} END "
			 "{exit !f}' /proc/self/mounts; }\n");
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
		struct strbuf w = STRBUF_INIT;

		if (n >= max - 3)
			return -1;
		for (size_t i = 0; i < seg;) {
			if (strncmp(p + i, "{host}", 6) == 0 && i + 6 <= seg) {
				strbuf_str(&w, host);
				i += 6;
			} else {
				strbuf_char(&w, p[i]);
				i++;
			}
		}
		if (!strbuf_ok(&w) || w.len == 0 || w.len >= CC_SHELL_MAX) {
			strbuf_fini(&w);
			return -1;
		}
		memcpy(words[n], w.p, w.len + 1);
		strbuf_fini(&w);
		argv[n] = words[n];
		n++;
		p += seg;
	}
	argv[n++] = "sh";
	argv[n++] = "-s";
	argv[n] = NULL;
	return n;
}

int rs_run(const struct cc_conf *c, const char *host, const struct strbuf *script,
	   struct rs_result *r)
{
	char words[SHELL_WORDS_MAX][CC_SHELL_MAX];
	char *argv[SHELL_WORDS_MAX + 4];
	int in[2], out[2];
	struct strbuf all = STRBUF_INIT;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (!strbuf_ok(script)) {
		snprintf(r->raw, sizeof(r->raw), "out of memory building the script");
		return -1;
	}
	if (shell_argv(c, host, words, argv, SHELL_WORDS_MAX + 4) < 0) {
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
	{
		const char *text = strbuf_cstr(script);
		size_t len = script->len, off = 0;

		while (off < len) {
			ssize_t n = write(in[1], text + off, len - off);

			if (n <= 0)
				break;
			off += (size_t)n;
		}
	}
	close(in[1]);
	double end = cli_now_s() + REMOTE_TIMEOUT_MS / 1000.0;
	int timed_out = 0;

	for (;;) {
		struct pollfd pfd = {.fd = out[0], .events = POLLIN};
		int left = (int)((end - cli_now_s()) * 1000);

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
		if (all.len < 4 * RS_OUT_MAX)
			strbuf_add(&all, buf, (size_t)n);
	}
	close(out[0]);
	if (timed_out)
		kill(-pid, SIGKILL);
	int st = 0;

	waitpid(pid, &st, 0);
	const char *text = strbuf_cstr(&all);
	const char *m = strstr(text, MARKER "\n");

	str_copy(r->raw, text, sizeof(r->raw));
	if (m) {
		r->reached = 1;
		str_copy(r->out, m + strlen(MARKER) + 1, sizeof(r->out));
	}
	strbuf_fini(&all);
	if (timed_out) {
		snprintf(r->raw, sizeof(r->raw), "no answer within %d s", REMOTE_TIMEOUT_MS / 1000);
		r->reached = 0;
		return -1;
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return r->reached && r->status == 0 ? 0 : -1;
}
