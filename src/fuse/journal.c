/* journal.c - nacre-mount's write-back journal (journal.h). */
#include "fuse/journal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "fuse/fz.h"

void fz_journal_dir(const struct fz_args *a, const char *mnt, char *out, size_t len)
{
	size_t n;

	if (a->wb_journal_dir) {
		snprintf(out, len, "%s", a->wb_journal_dir);
		return;
	}
	n = (size_t)snprintf(out, len, "%s/", FZ_JOURNAL_ROOT);
	while (*mnt == '/')
		mnt++;
	if (!*mnt && n + 1 < len)
		out[n++] = '-'; /* the root */
	for (const char *p = mnt; *p && n + 5 < len; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '/' && p[1])
			out[n++] = '-';
		else if (isalnum(ch) || ch == '_' || (ch == '.' && p != mnt))
			out[n++] = (char)ch;
		else if (ch != '/')
			n += (size_t)snprintf(out + n, len - n, "\\x%02x", ch);
	}
	out[n < len ? n : len - 1] = '\0';
}

int fz_journal_recover(const char *dir, const struct nacre_mount_opts *mo, char *why,
		       size_t why_len)
{
	struct nacre_wb_report rep;
	struct stat st;
	char err[512];

	if (stat(dir, &st) < 0)
		return 0; /* no journal: nothing was left */
	int rc = nacre_wb_recover(dir, mo, &rep, err, sizeof(err));
	if (rc < 0) {
		snprintf(why, why_len, "recovering the write-back journal %s: %s", dir, err);
		return rc;
	}
	if (rep.conflicts || rep.unreadable)
		LOG_WARN("main", "write-back journal %s: %llu changes an earlier process left "
			 "sent again, %llu made, %llu refused (kept in %s), %llu bytes unreadable",
			 dir, (unsigned long long)rep.changes, (unsigned long long)rep.applied,
			 (unsigned long long)rep.conflicts,
			 rep.conflicts_file[0] ? rep.conflicts_file : "-",
			 (unsigned long long)rep.unreadable);
	else if (rep.changes)
		LOG_INFO("main", "write-back journal %s: %llu changes an earlier process left "
			 "sent again, all made", dir, (unsigned long long)rep.changes);
	return 0;
}

int fz_journal_wb_on(struct fz_mount *m, char *why, size_t why_len)
{
	struct nacre_fs *fs = m->fs;
	char err[512];
	int rc;

	if (m->wb_journal != NACRE_WB_JOURNAL_OFF) {
		rc = nacre_fs_wb_journal(fs, m->journal, m->wb_journal, m->spec, err, sizeof(err));
		if (rc < 0) {
			snprintf(why, why_len, "%s", err);
			return -1;
		}
	}
	rc = nacre_fs_tunable_set(fs, NACRE_TUNE_WB, -1, 1);
	if (rc < 0) {
		snprintf(why, why_len, "cannot turn write-back on: %s", nacre_strerror(rc));
		return -1;
	}
	return 0;
}
