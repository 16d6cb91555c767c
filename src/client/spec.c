/* spec.c - parsing of mount specs: "host[:port]:/fsname[/subdir]", Lustre's
 * "host@tcp[N][:port]:/fsname[/subdir]" and "[v6addr][:port]:/fsname[/subdir]", with the
 * failover addresses of the MDS joined by ',' ("mds1:9400,mds2:9400:/fs") or, in Lustre's
 * form, by ':' after a network ("mds1@tcp:mds2@tcp:/fs").
 *
 * Every rejection says what is wrong in one sentence, because the text ends up in front of
 * a person typing a mount command. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/cl_export.h"
#include "nacre/nacre.h"

#define SPEC_FORM "host[:port]:/fsname[/subdir]"
/* Longest spec worth looking at: the addresses, ":/", an fsname and a full path. */
#define SPEC_MAX (NACRE_ADDR_LIST_MAX + 2 + NACRE_FSNAME_MAX + NACRE_PATH_MAX)

static int fail(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len > 0) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static int is_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* Host name or IPv4 address characters. */
static int host_char_ok(char ch)
{
	return is_alnum(ch) || ch == '.' || ch == '-' || ch == '_';
}

/* IPv6 literal characters, with an optional zone after '%' ("fe80::1%eth0"). */
static int v6_char_ok(char ch)
{
	return is_hex(ch) || ch == ':' || ch == '.' || ch == '%' || is_alnum(ch);
}

/* Parses the network part after '@' and the optional ":port" that follows the host.
 * tail points just after the host, end at the ":/" separator. */
static int parse_tail(const char *spec, const char *tail, const char *end, unsigned *port,
		      char *err, size_t err_len)
{
	const char *p = tail;

	if (p < end && *p == '@') {
		const char *net = ++p;

		while (p < end && *p != ':')
			p++;
		if (p == net)
			return fail(err, err_len, "empty network type after '@' in '%s' (use @tcp)",
				    spec);
		if (p - net < 3 || strncmp(net, "tcp", 3) != 0)
			return fail(err, err_len,
				    "network type '%.*s' in '%s' is not supported (only tcp)",
				    (int)(p - net), net, spec);
		for (const char *d = net + 3; d < p; d++)
			if (*d < '0' || *d > '9')
				return fail(err, err_len,
					    "network type '%.*s' in '%s' is not supported (only "
					    "tcp)",
					    (int)(p - net), net, spec);
	}
	if (p == end)
		return 0;
	if (*p != ':')
		return fail(err, err_len, "unexpected '%.*s' after the host in '%s'",
			    (int)(end - p), p, spec);
	p++;
	unsigned v = 0;
	const char *digits = p;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || p - digits >= 5) {
			v = 0;
			break;
		}
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return fail(err, err_len, "bad port '%.*s' in '%s' (expected 1..65535)",
			    (int)(end - digits), digits, spec);
	*port = v;
	return 0;
}

/* Splits one server address [start, end) of the mount spec spec into the "host:port" text
 * written to out. */
static int parse_server(const char *spec, const char *start, const char *end, char *out,
			size_t out_len, char *err, size_t err_len)
{
	const char *host, *hend, *tail;
	unsigned port = NACRE_DEFAULT_PORT_MDS;
	int v6 = start[0] == '[';
	int rc;

	if (v6) {
		host = start + 1;
		hend = memchr(host, ']', (size_t)(end - host));
		if (!hend)
			return fail(err, err_len, "unterminated '[' in the server address of '%s'",
				    spec);
		for (const char *p = host; p < hend; p++)
			if (!v6_char_ok(*p))
				return fail(err, err_len,
					    "bad character '%c' in IPv6 address '%.*s' of '%s'", *p,
					    (int)(hend - host), host, spec);
		tail = hend + 1;
	} else {
		host = start;
		hend = host;
		while (hend < end && *hend != '@' && *hend != ':')
			hend++;
		int colons = 0;
		for (const char *p = host; p < end; p++)
			colons += *p == ':';
		if (colons >= 2 && !memchr(host, '@', (size_t)(end - host)))
			return fail(err, err_len,
				    "IPv6 address in '%s' must be in brackets, as in "
				    "[::1]:9400:/fsname",
				    spec);
		for (const char *p = host; p < hend; p++) {
			if (!host_char_ok(*p))
				return fail(err, err_len, "bad character '%c' in host '%.*s' of '%s'",
					    *p, (int)(hend - host), host, spec);
		}
		tail = hend;
	}
	if (hend == host)
		return fail(err, err_len, "empty host in '%s' (expected " SPEC_FORM ")", spec);
	rc = parse_tail(spec, tail, end, &port, err, err_len);
	if (rc)
		return rc;

	char buf[NACRE_ADDR_MAX + 1];
	int n = snprintf(buf, sizeof(buf), v6 ? "[%.*s]:%u" : "%.*s:%u", (int)(hend - host), host,
			 port);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return fail(err, err_len, "server address '%.*s' is too long (at most %d bytes)",
			    (int)(end - start), start, NACRE_ADDR_MAX);
	if ((size_t)n >= out_len)
		return fail(err, err_len, "no room for the server address (%d bytes)", n);
	memcpy(out, buf, (size_t)n + 1);
	return 0;
}

/* The end of the first address of a list [p, end): at a ',' or, in Lustre's form, at the
 * ':' that follows a network ("@tcp") and starts another address rather than a port. */
static const char *address_end(const char *p, const char *end)
{
	const char *at = NULL;

	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (close)
			p = close;
	}
	for (const char *q = p; q < end; q++) {
		if (*q == ',')
			return q;
		if (*q == '@')
			at = q;
		if (*q == ':' && at) {
			const char *n = q + 1;
			while (n < end && *n >= '0' && *n <= '9')
				n++;
			if (n == q + 1 || (n < end && *n != ',' && *n != ':'))
				return q; /* not a port: the next address */
		}
	}
	return end;
}

/* Every address of the server part [spec, end), "host:port" each, joined by ','. */
static int parse_servers(const char *spec, const char *end, char *out, size_t out_len,
			 char *err, size_t err_len)
{
	size_t used = 0;
	int n = 0;

	if (spec == end)
		return fail(err, err_len, "empty host in '%s' (expected " SPEC_FORM ")", spec);
	for (const char *p = spec; p < end;) {
		const char *e = address_end(p, end);
		char one[NACRE_ADDR_MAX + 1];
		size_t len;
		int rc;

		if (e == p)
			return fail(err, err_len, "empty MDS address in '%s'", spec);
		if (++n > NACRE_FAILOVER_MAX)
			return fail(err, err_len, "'%s' lists more than %d MDS addresses", spec,
				    NACRE_FAILOVER_MAX);
		rc = parse_server(spec, p, e, one, sizeof(one), err, err_len);
		if (rc)
			return rc;
		len = strlen(one);
		if (used + len + 2 > out_len)
			return fail(err, err_len, "no room for the server addresses");
		if (used)
			out[used++] = ',';
		memcpy(out + used, one, len + 1);
		used += len;
		p = e < end ? e + 1 : e;
		if (e < end && p == end)
			return fail(err, err_len, "empty MDS address at the end of the server part "
						  "of '%s'",
				    spec);
	}
	return 0;
}

static int parse_fsname(const char *spec, const char *p, const char *end, char *out,
			size_t out_len, char *err, size_t err_len)
{
	size_t n = (size_t)(end - p);

	if (n == 0)
		return fail(err, err_len, "empty file system name in '%s' (expected " SPEC_FORM ")",
			    spec);
	if (n > NACRE_FSNAME_MAX)
		return fail(err, err_len,
			    "file system name '%.*s' is too long (at most %d characters)", (int)n,
			    p, NACRE_FSNAME_MAX);
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(p[i]) && p[i] != '_' && p[i] != '-')
			return fail(err, err_len,
				    "file system name '%.*s' has a bad character '%c' (allowed: "
				    "A-Z a-z 0-9 _ -)",
				    (int)n, p, p[i]);
	if (n >= out_len)
		return fail(err, err_len, "no room for the file system name");
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/* Normalizes "/a//b/./c/" to "/a/b/c" ("" for the root); ".." is refused so that a
 * subdirectory mount can never name something outside itself. */
static int parse_subdir(const char *p, char *out, size_t out_len, char *err, size_t err_len)
{
	char buf[NACRE_PATH_MAX + 1];
	size_t n = 0;
	const char *whole = p;

	while (*p) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t clen = (size_t)(p - c);
		if (clen == 0 || (clen == 1 && c[0] == '.'))
			continue;
		if (clen == 2 && c[0] == '.' && c[1] == '.')
			return fail(err, err_len, "subdirectory '%s' must not contain '..'", whole);
		if (clen > NACRE_NAME_MAX)
			return fail(err, err_len,
				    "a name in subdirectory '%.40s...' is longer than %d bytes", whole,
				    NACRE_NAME_MAX);
		if (n + 1 + clen > NACRE_PATH_MAX)
			return fail(err, err_len,
				    "subdirectory '%.40s...' is too long (at most %d bytes)", whole,
				    NACRE_PATH_MAX);
		buf[n++] = '/';
		memcpy(buf + n, c, clen);
		n += clen;
	}
	buf[n] = '\0';
	if (n >= out_len)
		return fail(err, err_len, "no room for the subdirectory (%zu bytes)", n);
	memcpy(out, buf, n + 1);
	return 0;
}

NACRE_API int nacre_parse_spec(const char *spec, char *addr, size_t addr_len, char *fsname,
			       size_t fsname_len, char *subdir, size_t subdir_len, char *err,
			       size_t err_len)
{
	const char *sep, *fs, *fs_end;
	size_t len;
	int rc;

	if (err && err_len > 0)
		err[0] = '\0';
	if (!addr || !fsname || !subdir)
		return fail(err, err_len, "no output buffers for the mount spec");
	if (!spec || !spec[0])
		return fail(err, err_len, "empty mount spec (expected " SPEC_FORM ")");
	len = strnlen(spec, SPEC_MAX + 1);
	if (len > SPEC_MAX)
		return fail(err, err_len, "mount spec is too long (more than %d bytes)", SPEC_MAX);

	if (spec[0] == '[') {
		const char *close = memchr(spec, ']', len);
		if (!close)
			return fail(err, err_len, "unterminated '[' in the server address of '%s'",
				    spec);
		sep = strstr(close, ":/");
	} else {
		sep = strstr(spec, ":/");
	}
	if (!sep)
		return fail(err, err_len,
			    "missing ':/' before the file system name in '%s' (expected " SPEC_FORM
			    ")",
			    spec);

	rc = parse_servers(spec, sep, addr, addr_len, err, err_len);
	if (rc)
		return rc;
	fs = sep + 2;
	fs_end = strchr(fs, '/');
	if (!fs_end)
		fs_end = spec + len;
	rc = parse_fsname(spec, fs, fs_end, fsname, fsname_len, err, err_len);
	if (rc)
		return rc;
	return parse_subdir(fs_end, subdir, subdir_len, err, err_len);
}
