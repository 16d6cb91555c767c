/* bringup_remote.h - the remote runner of the bring-up engine (bringup.h): each step is one
 * script run on its host through the config's remote_shell (remote_shell.h). On the hosts,
 * RUN_DIR holds FSNAME-ROLE.pid and FSNAME-ROLE.log for each daemon; daemons start
 * detached (setsid). Each step prints one line with its duration; a failed one names the
 * host and the step. Single-threaded.
 */
#ifndef NACRE_BRINGUP_REMOTE_H
#define NACRE_BRINGUP_REMOTE_H

#include <limits.h>

#include "cli/bringup.h"

struct bu_remote {
	const struct cc_conf *c;
	char bin[PATH_MAX]; /* binary dir on the hosts */
	double t0;          /* start of the current step */
};

extern const struct bu_runner bu_remote_runner;

/* Sets ru up for c (borrowed: it must outlive ru). 0, or -1 with a message printed. */
int bu_remote_init(struct bu_remote *ru, const struct cc_conf *c);

#endif
