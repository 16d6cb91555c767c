/* secret_file.c - opening files that hold secrets, refusing loose modes. */
#include "common/secret_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int secret_file_open(const char *path, const char *what, char *err, size_t err_len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int rc;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot read %s %s: %s", what, path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, err_len, "cannot stat %s %s: %s", what, path, strerror(-rc));
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, err_len, "%s %s is not a regular file", what, path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, err_len,
			 "%s %s may be read by group or others (mode %04o); it holds a secret: "
			 "run `chmod 600 %s`",
			 what, path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -EACCES;
	}
	return fd;
}
