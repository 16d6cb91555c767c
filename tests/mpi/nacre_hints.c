/* nacre_hints.c - see nacre_hints.h. */
#include "nacre_hints.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static long info_long(MPI_Info info, const char *key)
{
	char v[64];
	int flag = 0;

	if (info == MPI_INFO_NULL)
		return 0;
	MPI_Info_get(info, key, sizeof(v) - 1, v, &flag);
	return flag ? strtol(v, NULL, 10) : 0;
}

/* "key value" lines of the ROMIO_HINTS file. */
static long file_long(const char *key)
{
	const char *path = getenv("ROMIO_HINTS");
	char line[256], k[128];
	long v, found = 0;
	FILE *f;

	if (!path || !(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %ld", k, &v) == 2 && strcmp(k, key) == 0)
			found = v;
	fclose(f);
	return found;
}

static int precreate(const char *path, long count, long unit)
{
	char text[128];
	struct stat st;
	int fd, rc = 0;

	if (stat(path, &st) == 0 && st.st_size > 0)
		return 0; /* has data: its layout is fixed */
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	snprintf(text, sizeof(text), "stripe_count=%ld stripe_size=%ld", count, unit);
	if (fsetxattr(fd, "nacre.layout", text, strlen(text), 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int nacre_hints_precreate(MPI_Comm comm, const char *path, MPI_Info info)
{
	int rank, rc = 0;

	MPI_Comm_rank(comm, &rank);
	if (rank == 0) {
		long count = info_long(info, "striping_factor");
		long unit = info_long(info, "striping_unit");
		if (count <= 0)
			count = file_long("striping_factor");
		if (unit <= 0)
			unit = file_long("striping_unit");
		if (count > 0 || unit > 0)
			rc = precreate(path, count > 0 ? count : 0, unit > 0 ? unit : 0);
	}
	MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
	return rc;
}
