/* jobid.c - Lustre's "%e.%u" job id from /proc. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/jobid.h"

void jobid_procname_uid(pid_t pid, uint32_t uid, char out[NACRE_JOBID_MAX + 1])
{
	char path[40], comm[32] = "";
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	if (n <= 0)
		return;
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	for (char *p = comm; *p; p++)
		if (*p <= ' ' || *p > '~')
			*p = '_';
	if (comm[0])
		snprintf(out, NACRE_JOBID_MAX + 1, "%.19s.%u", comm, uid);
}
