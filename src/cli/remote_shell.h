/* remote_shell.h - runs a small sh script on a host through the config's remote_shell
 * (`REMOTE_SHELL sh -s`, the script on stdin), so ssh, `ip netns exec` and nsenter behave
 * the same and nothing is quoted twice. Every script starts with rs_script_begin(): its
 * marker line tells a step that failed from a remote shell that did (host unreachable).
 * Single-threaded (it sets SIGPIPE to ignored).
 */
#ifndef NACRE_REMOTE_SHELL_H
#define NACRE_REMOTE_SHELL_H

#include "cli/cluster_conf.h"
#include "common/strbuf.h"

#define RS_OUT_MAX 16384

struct rs_result {
	int status;            /* exit status of the script, or -1 if the shell failed */
	int reached;           /* the marker was seen */
	char out[RS_OUT_MAX];  /* what the script printed after the marker (stdout + stderr) */
	char raw[1024];        /* the start of everything printed, for unreachable hosts */
};

/* Appends s to b as one single-quoted shell word. */
void rs_quote(struct strbuf *b, const char *s);
/* The prologue of every script: the marker, strict mode, RUN=run_dir (created), and the
 * shell functions alive PIDFILE NAME and mounted DIR. */
void rs_script_begin(struct strbuf *s, const struct cc_conf *c);
/* Runs script (all of b; a failed b fails the run) on host; fills r. Returns 0 if the
 * script ran and exited 0, else -1 (r says why). Gives up after 60 s. */
int rs_run(const struct cc_conf *c, const char *host, const struct strbuf *script,
	   struct rs_result *r);
/* Strips trailing newlines and spaces. */
void rs_trim(char *s);

#endif
