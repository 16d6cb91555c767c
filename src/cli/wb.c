/* wb.c - `nacre wb-recover DIR`: sends what a write-back journal holds (changes a
 * nacre-mount acknowledged and did not get to the MDS before it died) to the MDS its
 * header names, as the next nacre-mount on that mount point would (docs/writeback.md, "The
 * journal").
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "nacre/nacre.h"

static void print_log(int level, const char *line, void *arg)
{
	(void)arg;
	fprintf(stderr, "nacre wb-recover: %s%s\n", level <= 3 ? "error: " : "", line);
}

int cli_wb_recover(int argc, char **argv)
{
	struct nacre_mount_opts mo;
	struct nacre_wb_report rep;
	char err[1024];
	const char *dir = NULL;

	memset(&mo, 0, sizeof(mo));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--key-file") == 0 && i + 1 < argc) {
			mo.key_file = argv[++i];
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, "nacre wb-recover: unexpected argument '%s'\n", argv[i]);
			cli_usage(stderr, "wb-recover");
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		cli_usage(stderr, "wb-recover");
		return 2;
	}
	/* the client name is the journal's: the nodemaps authorised its changes by it */
	mo.log_fn = print_log;
	if (nacre_wb_recover(dir, &mo, &rep, err, sizeof(err)) < 0) {
		fprintf(stderr, "nacre wb-recover: %s\n", err);
		return 1;
	}
	printf("%s: %llu changes sent, %llu made, %llu refused, %llu bytes unreadable\n", dir,
	       (unsigned long long)rep.changes, (unsigned long long)rep.applied,
	       (unsigned long long)rep.conflicts, (unsigned long long)rep.unreadable);
	if (rep.conflicts_file[0])
		printf("refused changes and unreadable bytes are kept: %s\n", rep.conflicts_file);
	return rep.conflicts || rep.unreadable ? 3 : 0;
}
