/* replay_main.c - runs a fuzz target over files, for builds without libFuzzer.
 *
 * Usage: fuzz_replay_<name> PATH...; a PATH that is a directory runs every regular file in
 * it. A crash or sanitizer report fails the run; otherwise exits 0 after printing a count. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs are small corpus files; anything bigger is not one of ours. */
#define REPLAY_MAX (1u << 24)

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size > (off_t)REPLAY_MAX) {
		fprintf(stderr, "%s: cannot read (%s)\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Exactly the file's bytes, so ASan catches any read past the end. */
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -1;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap ? cap * 2 : 64) * sizeof(*names));

			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
			cap = cap ? cap * 2 : 64;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(d);
	/* Sorted, so a failing input is the same one on every run. */
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path) < 0)
				rc = -1;
			else
				(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int count = 0, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count) < 0)
				rc = 1;
		} else if (run_file(argv[i]) < 0) {
			rc = 1;
		} else {
			count++;
		}
	}
	printf("replayed %d inputs\n", count);
	return rc;
}
