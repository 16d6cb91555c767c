/* report.c - pieces both reports share: dates, the file system line, path parts. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "common/util.h"

void bench_date(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	if (strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm) == 0 && len)
		buf[0] = '\0';
}

static double pct(uint64_t used, uint64_t total)
{
	return total ? 100.0 * (double)used / (double)total : 0.0;
}

void bench_fs_line(const struct bench_fsinfo *fs, char *buf, size_t len)
{
	double gib = (double)fs->bytes_total / (1024.0 * 1024.0 * 1024.0);
	int tib = gib >= 1024.0;

	snprintf(buf, len, "%.1f %s   Used FS: %.1f%%   Inodes: %.1f Mi   Used Inodes: %.1f%%",
		 tib ? gib / 1024.0 : gib, tib ? "TiB" : "GiB",
		 pct(fs->bytes_total - fs->bytes_free, fs->bytes_total),
		 (double)fs->files_total / (1024.0 * 1024.0),
		 pct(fs->files_total - fs->files_free, fs->files_total));
}

void bench_dirname(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		str_copy(buf, ".", len);
	} else if (slash == path) {
		str_copy(buf, "/", len);
	} else {
		size_t n = (size_t)(slash - path);

		if (n >= len)
			n = len - 1;
		memcpy(buf, path, n);
		buf[n] = '\0';
	}
}
