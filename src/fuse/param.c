/* param.c - the mount's Lustre-style parameters, served as virtual xattrs of its root
 * (nacre.instance, nacre.params, nacre.param.NAME; include/nacre/nacre_vxattr.h), which
 * `nacre get_param` and `nacre set_param` read and write as lctl reads /sys/fs/lustre.
 *
 * The names carry this mount's device names as a Lustre client's do: the llite device is
 * FSNAME-INSTANCE and an OST's OSC FSNAME-OST0003-osc-INSTANCE, INSTANCE being the mount's
 * client id in 16 hex digits. The table below is the one list of what a mount serves.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "fuse/fz.h"
#include "fuse/fz_metrics.h"
#include "fuse/journal.h"
#include "nacre/nacre_vxattr.h"

#define PARAM_NAME_MAX 200

/* Where a parameter lives: on no device (lctl's top level), the llite device (one per
 * mount), the MDT's MDC, or each OST's OSC. */
enum { ON_TOP, ON_LLITE, ON_MDC, ON_OSC };

struct param {
	int on;
	const char *name; /* the last part of the dotted name */
	int tunable;      /* NACRE_TUNE_*, read-write; or 0 and: */
	/* a read-only one's value; ost: the OSC's OST, or -1 */
	void (*text)(struct nacre_fs *fs, int ost, struct strbuf *out);
};

static void llite_stats(struct nacre_fs *fs, int ost, struct strbuf *out)
{
	(void)ost;
	fz_metrics_llite_stats(fs, out);
}

static void wb_stats(struct nacre_fs *fs, int ost, struct strbuf *out)
{
	(void)ost;
	fz_metrics_wb_stats(fs, out);
}

static void version(struct nacre_fs *fs, int ost, struct strbuf *out)
{
	(void)fs, (void)ost;
	strbuf_str(out, NACRE_VERSION "\n");
}

/* checksums: bulk data is always checked, by CRC-32C or by the flavour's tag */
static void checksums(struct nacre_fs *fs, int ost, struct strbuf *out)
{
	(void)fs, (void)ost;
	strbuf_str(out, "1\n");
}

/* import: the connection, in the shape of Lustre's import file */
static void import(struct nacre_fs *fs, int ost, struct strbuf *out)
{
	struct nacre_import im;
	char target[NACRE_FSNAME_MAX + 16];
	char name[PARAM_NAME_MAX];

	if (nacre_fs_import(fs, ost, &im) < 0)
		return;
	if (ost < 0)
		snprintf(target, sizeof(target), "%s-MDT0000", nacre_fs_name(fs));
	else
		snprintf(target, sizeof(target), "%s-OST%04x", nacre_fs_name(fs), ost);
	snprintf(name, sizeof(name), "%s-%s-%016llx", target, ost < 0 ? "mdc" : "osc",
		 (unsigned long long)nacre_fs_client_id(fs));
	strbuf_printf(out, "import:\n    name: %s\n    target: %s_UUID\n    state: %s\n", name,
		      target, im.state);
	strbuf_printf(out, "    connect_flags: [ %s ]\n", im.connect_flags);
	strbuf_printf(out, "    connect_data:\n       flags: 0x%llx\n",
		      (unsigned long long)im.connect_bits);
	strbuf_printf(out, "    connection:\n       failover_nids: [ ");
	for (const char *a = im.addrs; *a;) {
		size_t n = strcspn(a, ",");
		strbuf_printf(out, "%.*s%s", (int)n, a, a[n] ? ", " : "");
		a += n + (a[n] == ',');
	}
	strbuf_printf(out, " ]\n       current_connection: %s\n       generation: %llu\n",
		      im.current, (unsigned long long)im.generation);
	if (im.heard_ms_ago >= 0)
		strbuf_printf(out, "       last_heard_ms_ago: %lld\n", (long long)im.heard_ms_ago);
	strbuf_printf(out, "       server: %s\n       sec: %s\n", im.server[0] ? im.server : "-",
		      im.sec);
	strbuf_printf(out, "    transactions:\n       last_committed: %llu\n",
		      (unsigned long long)im.last_committed);
}

static const struct param params[] = {
	{ON_TOP, "version", 0, version},
	{ON_LLITE, "max_read_ahead_mb", NACRE_TUNE_READ_AHEAD_MB, NULL},
	{ON_LLITE, "fid_grant", NACRE_TUNE_FID_GRANT, NULL},
	{ON_LLITE, "wb", NACRE_TUNE_WB, NULL},
	{ON_LLITE, "wb_delay_ms", NACRE_TUNE_WB_DELAY_MS, NULL},
	{ON_LLITE, "stats", 0, llite_stats},
	{ON_MDC, "wb_stats", 0, wb_stats},
	{ON_MDC, "import", 0, import},
	{ON_OSC, "max_rpcs_in_flight", NACRE_TUNE_RPCS_IN_FLIGHT, NULL},
	{ON_OSC, "max_dirty_mb", NACRE_TUNE_MAX_DIRTY_MB, NULL},
	{ON_OSC, "max_pages_per_rpc", NACRE_TUNE_MAX_PAGES_PER_RPC, NULL},
	{ON_OSC, "checksums", 0, checksums},
	{ON_OSC, "import", 0, import},
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

/* The OST indices of the cluster registry, ascending, into a new array; the count or a
 * negative error. */
static int ost_indices(struct nacre_fs *fs, uint32_t **out)
{
	struct nacre_target *t = NULL;
	int n = fz_targets_all(fs, &t);

	if (n < 0)
		return n;
	uint32_t *idx = malloc(((size_t)n + 1) * sizeof(*idx));
	int k = 0;

	if (!idx) {
		free(t);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		if (t[i].type == NACRE_TGT_OST)
			idx[k++] = t[i].index;
	free(t);
	*out = idx;
	return k;
}

/* The dotted name of p on this mount (for OST ost when p is on an OSC). */
static void full_name(struct nacre_fs *fs, const struct param *p, uint32_t ost, char *buf,
		      size_t len)
{
	unsigned long long inst = (unsigned long long)nacre_fs_client_id(fs);
	const char *fsname = nacre_fs_name(fs);

	if (p->on == ON_TOP)
		snprintf(buf, len, "%s", p->name);
	else if (p->on == ON_LLITE)
		snprintf(buf, len, "llite.%s-%016llx.%s", fsname, inst, p->name);
	else if (p->on == ON_MDC)
		snprintf(buf, len, "mdc.%s-MDT0000-mdc-%016llx.%s", fsname, inst, p->name);
	else
		snprintf(buf, len, "osc.%s-OST%04x-osc-%016llx.%s", fsname, ost, inst, p->name);
}

/* Finds the parameter called name on this mount: its entry and, for an OSC one, its OST.
 * Returns 0 or -ENODATA. */
static int lookup(struct nacre_fs *fs, const char *name, const struct param **pp, int *ost)
{
	char want[PARAM_NAME_MAX];

	for (size_t i = 0; i < NPARAMS; i++) {
		const struct param *p = &params[i];

		if (p->on != ON_OSC) {
			full_name(fs, p, 0, want, sizeof(want));
			if (strcmp(want, name) == 0) {
				*pp = p;
				*ost = -1;
				return 0;
			}
			continue;
		}
		/* osc.FSNAME-OSTxxxx-osc-INSTANCE.NAME: read the index, then compare. */
		const char *o = strstr(name, "-OST");
		unsigned int idx;
		char *end;

		if (!o)
			continue;
		unsigned long v = strtoul(o + 4, &end, 16);

		if (end != o + 8 || v > 0xffff)
			continue;
		idx = (unsigned int)v;
		full_name(fs, p, idx, want, sizeof(want));
		if (strcmp(want, name) == 0) {
			*pp = p;
			*ost = (int)idx;
			return 0;
		}
	}
	return -ENODATA;
}

static void get_list(fuse_req_t req, struct fz_mount *m, size_t size)
{
	uint32_t *osts = NULL;
	int n = ost_indices(m->fs, &osts);
	struct strbuf sb = STRBUF_INIT;

	if (n < 0) {
		fz_reply_rc(req, n);
		return;
	}
	for (size_t i = 0; i < NPARAMS; i++) {
		char name[PARAM_NAME_MAX];
		int count = params[i].on != ON_OSC ? 1 : n;

		for (int k = 0; k < count; k++) {
			full_name(m->fs, &params[i], params[i].on == ON_OSC ? osts[k] : 0, name,
				  sizeof(name));
			strbuf_printf(&sb, "%s %s\n", name, params[i].text ? "ro" : "rw");
		}
	}
	free(osts);
	if (!strbuf_ok(&sb))
		fuse_reply_err(req, ENOMEM);
	else
		fz_reply_xattr_text(req, strbuf_cstr(&sb), sb.len, size);
	strbuf_fini(&sb);
}

int fz_param_getxattr(fuse_req_t req, struct fz_inode *in, const char *name, size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	size_t plen = strlen(NACRE_VXATTR_PARAM);

	if (in != &m->itab.root)
		return 0;
	if (strcmp(name, NACRE_VXATTR_INSTANCE) == 0) {
		char text[NACRE_FSNAME_MAX + 32];
		int len = snprintf(text, sizeof(text), "%s-%016llx", nacre_fs_name(m->fs),
				   (unsigned long long)nacre_fs_client_id(m->fs));

		fz_reply_xattr_text(req, text, (size_t)len, size);
		return 1;
	}
	if (strcmp(name, NACRE_VXATTR_PARAMS) == 0) {
		get_list(req, m, size);
		return 1;
	}
	if (strncmp(name, NACRE_VXATTR_PARAM, plen) != 0)
		return 0;

	const struct param *p;
	int ost, rc;
	int64_t v;
	char text[32];

	rc = lookup(m->fs, name + plen, &p, &ost);
	if (rc == 0 && p->text) {
		struct strbuf sb = STRBUF_INIT;

		p->text(m->fs, ost, &sb);
		if (!strbuf_ok(&sb))
			fuse_reply_err(req, ENOMEM);
		else
			fz_reply_xattr_text(req, strbuf_cstr(&sb), sb.len, size);
		strbuf_fini(&sb);
		return 1;
	}
	if (rc == 0)
		rc = nacre_fs_tunable_get(m->fs, p->tunable, ost, &v);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return 1;
	}
	int len = snprintf(text, sizeof(text), "%" PRId64 "\n", v);

	fz_reply_xattr_text(req, text, (size_t)len, size);
	return 1;
}

int fz_param_setxattr(fuse_req_t req, struct fz_inode *in, const char *name, const char *value,
		      size_t size)
{
	struct fz_mount *m = fz_mnt(req);
	size_t plen = strlen(NACRE_VXATTR_PARAM);

	if (in != &m->itab.root)
		return 0;
	if (strcmp(name, NACRE_VXATTR_INSTANCE) == 0 || strcmp(name, NACRE_VXATTR_PARAMS) == 0) {
		fuse_reply_err(req, EPERM);
		return 1;
	}
	if (strncmp(name, NACRE_VXATTR_PARAM, plen) != 0)
		return 0;

	const struct param *p;
	struct nacre_cred cr;
	char text[32];
	int64_t v;
	int ost, rc;

	rc = lookup(m->fs, name + plen, &p, &ost);
	if (rc < 0) {
		fz_reply_rc(req, rc);
		return 1;
	}
	if (p->text) {
		fuse_reply_err(req, EPERM);
		return 1;
	}
	fz_cred(req, &cr);
	if (cr.uid != 0) {
		fuse_reply_err(req, EACCES);
		return 1;
	}
	while (size > 0 && (value[size - 1] == '\n' || value[size - 1] == ' '))
		size--;
	if (size == 0 || size >= sizeof(text)) {
		fuse_reply_err(req, EINVAL);
		return 1;
	}
	memcpy(text, value, size);
	text[size] = '\0';
	if (parse_i64(text, INT64_MIN, INT64_MAX, &v) < 0) {
		fuse_reply_err(req, EINVAL);
		return 1;
	}
	if (p->tunable == NACRE_TUNE_WB && v == 1) { /* with its journal, as -o wb=on */
		char why[640];
		rc = fz_journal_wb_on(m, why, sizeof(why));
		if (rc < 0)
			LOG_ERR("param", "llite.*.wb=1: %s", why);
		fuse_reply_err(req, rc < 0 ? EIO : 0);
		return 1;
	}
	rc = nacre_fs_tunable_set(m->fs, p->tunable, ost, v);
	fuse_reply_err(req, rc < 0 ? -rc : 0);
	return 1;
}
