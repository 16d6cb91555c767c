/* fault_args.c - the words of `nacre fault` (see fault_args.h). */
#include "cli/fault_args.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "nacre/nacre.h"

/* A SERVER word: an address has ':', a fault spec item has '=' (and a point name has
 * neither). */
static int is_server(const char *w)
{
	return strchr(w, ':') && !strchr(w, '=');
}

/* A whole POINT=MODE item: its first '=' comes before any ','. A MODE word ("once",
 * "every:3,err=5") has its ',' first or no '=' at all. */
static int is_item(const char *w)
{
	return w[strcspn(w, "=,")] == '=';
}

static int parse_server(const char *w, struct cli_fault_args *out, char *err, size_t err_len)
{
	char subdir[NACRE_PATH_MAX + 1], why[256];

	if (!strstr(w, ":/")) {
		if (str_copy(out->addr, w, sizeof(out->addr)) >= sizeof(out->addr)) {
			snprintf(err, err_len, "server address '%s' is too long", w);
			return -EINVAL;
		}
		return 0;
	}
	if (nacre_parse_spec(w, out->addr, sizeof(out->addr), out->fsname, sizeof(out->fsname),
			     subdir, sizeof(subdir), why, sizeof(why)) < 0) {
		snprintf(err, err_len, "bad SERVER '%s': %s", w, why);
		return -EINVAL;
	}
	if (subdir[0]) {
		snprintf(err, err_len, "bad SERVER '%s': give host:port or host:port:/FSNAME", w);
		return -EINVAL;
	}
	return 0;
}

/* Appends ";" (unless first), a, and "=b" when b is set, to out->spec. */
static int append_item(struct cli_fault_args *out, const char *a, const char *b, char *err,
		       size_t err_len)
{
	size_t used = strlen(out->spec);
	int n = snprintf(out->spec + used, sizeof(out->spec) - used, "%s%s%s%s",
			 used ? ";" : "", a, b ? "=" : "", b ? b : "");

	if (n < 0 || (size_t)n >= sizeof(out->spec) - used) {
		snprintf(err, err_len, "the fault spec is longer than %d bytes",
			 CLI_FAULT_SPEC_MAX);
		return -EINVAL;
	}
	return 0;
}

static int parse_spec_words(int n, char *const *w, struct cli_fault_args *out, char *err,
			    size_t err_len)
{
	if (n == 0) {
		snprintf(err, err_len, "no fault spec: give POINT=MODE or POINT MODE (e.g. "
				       "mds.commit_after once)");
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		int rc;

		if (!w[i][0]) {
			snprintf(err, err_len, "an empty word is not a fault spec");
			return -EINVAL;
		}
		if (is_item(w[i])) {
			rc = append_item(out, w[i], NULL, err, err_len);
		} else if (i + 1 < n && !is_item(w[i + 1])) {
			rc = append_item(out, w[i], w[i + 1], err, err_len);
			i++;
		} else {
			snprintf(err, err_len,
				 "'%s' needs a MODE after it (once, every:N, skip:N, prob:P or "
				 "off), as in '%s once' or '%s=once'",
				 w[i], w[i], w[i]);
			return -EINVAL;
		}
		if (rc)
			return rc;
	}
	return 0;
}

int cli_fault_args_parse(const char *verb, int n, char *const *words,
			 struct cli_fault_args *out, char *err, size_t err_len)
{
	int set = strcmp(verb, "set") == 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!set && strcmp(verb, "list") != 0 && strcmp(verb, "clear") != 0) {
		snprintf(err, err_len, "unknown subcommand '%s': use set, list or clear", verb);
		return -EINVAL;
	}
	if (n > 0 && is_server(words[0])) {
		rc = parse_server(words[0], out, err, err_len);
		if (rc)
			return rc;
		words++;
		n--;
	}
	if (set)
		return parse_spec_words(n, words, out, err, err_len);
	if (n > 0) {
		snprintf(err, err_len, "%s takes only a SERVER (host:port), not '%s'", verb,
			 words[0]);
		return -EINVAL;
	}
	if (strcmp(verb, "clear") == 0)
		str_copy(out->spec, "all=off", sizeof(out->spec));
	return 0;
}
