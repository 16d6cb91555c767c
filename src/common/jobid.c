/* jobid.c - Lustre's "%e.%u" job id, or a jobid_var's value, from /proc. */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
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

#define ENVIRON_MAX (256u << 10) /* read at most this much of a process's environment */

int jobid_var_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 63 || isdigit((unsigned char)name[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return 0;
	return 1;
}

/* The value of var in /proc/PID/environ, copied to out as a job id; 0, or -1 if none. */
static int env_value(pid_t pid, const char *var, char out[NACRE_JOBID_MAX + 1])
{
	char path[40];
	size_t vl = strlen(var), len = 0;
	int rc = -1;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char *buf = malloc(ENVIRON_MAX + 1);
	while (buf && len < ENVIRON_MAX) {
		ssize_t n = read(fd, buf + len, ENVIRON_MAX - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -1;
	buf[len] = '\0';
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
		const char *e = buf + i;
		if (strncmp(e, var, vl) != 0 || e[vl] != '=' || !e[vl + 1])
			continue;
		size_t k = 0;
		for (const char *v = e + vl + 1; *v && k < NACRE_JOBID_MAX; v++)
			out[k++] = *v <= ' ' || *v > '~' ? '_' : *v;
		out[k] = '\0';
		rc = 0;
		break;
	}
	free(buf);
	return rc;
}

void jobid_from_env(pid_t pid, uint32_t uid, const char *var, char out[NACRE_JOBID_MAX + 1])
{
	if (env_value(pid, var, out) < 0)
		jobid_procname_uid(pid, uid, out);
}
