/* vxattr.c - formatters and parsers of the virtual xattr values (see vxattr.h). */
#include "common/vxattr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nacre/nacre_vxattr.h"

/* ---- HSM names ---- */

struct name {
	uint32_t v;
	const char *s;
};

static const struct name actions[] = {
	{ NACRE_HSMA_ARCHIVE, NACRE_HSMA_ARCHIVE_NAME },
	{ NACRE_HSMA_RESTORE, NACRE_HSMA_RESTORE_NAME },
	{ NACRE_HSMA_REMOVE, NACRE_HSMA_REMOVE_NAME },
	{ NACRE_HSMA_CANCEL, NACRE_HSMA_CANCEL_NAME },
};

static const struct name statuses[] = {
	{ NACRE_HAS_WAITING, NACRE_HAS_WAITING_NAME },
	{ NACRE_HAS_STARTED, NACRE_HAS_STARTED_NAME },
	{ NACRE_HAS_FAILED, NACRE_HAS_FAILED_NAME },
	{ NACRE_HAS_CANCELED, NACRE_HAS_CANCELED_NAME },
	{ NACRE_HAS_SUCCEED, NACRE_HAS_SUCCEED_NAME },
};

static const struct name requests[] = {
	{ NACRE_HUA_ARCHIVE, NACRE_HUA_ARCHIVE_NAME },
	{ NACRE_HUA_RESTORE, NACRE_HUA_RESTORE_NAME },
	{ NACRE_HUA_RELEASE, NACRE_HUA_RELEASE_NAME },
	{ NACRE_HUA_REMOVE, NACRE_HUA_REMOVE_NAME },
	{ NACRE_HUA_CANCEL, NACRE_HUA_CANCEL_NAME },
};

static const char *name_of(const struct name *t, size_t n, uint32_t v, const char *other)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].v == v)
			return t[i].s;
	return other;
}

/* The value named by the len bytes at s. 0 or -EINVAL. */
static int value_of(const struct name *t, size_t n, const char *s, size_t len, uint32_t *v)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(t[i].s) == len && memcmp(t[i].s, s, len) == 0) {
			*v = t[i].v;
			return 0;
		}
	return -EINVAL;
}

const char *vxattr_hsm_action_name(uint32_t action)
{
	return name_of(actions, ARRAY_SIZE(actions), action, NACRE_HSMA_CANCEL_NAME);
}

const char *vxattr_hsm_status_name(uint32_t status)
{
	return name_of(statuses, ARRAY_SIZE(statuses), status, "UNKNOWN");
}

const char *vxattr_hsm_request_name(uint32_t action)
{
	return name_of(requests, ARRAY_SIZE(requests), action, NACRE_HUA_CANCEL_NAME);
}

/* ---- nacre.hsm_state ---- */

int vxattr_hsm_state_format(char *buf, size_t len, uint32_t state, uint32_t archive_id)
{
	return snprintf(buf, len, "0x%08x %u", state, archive_id);
}

int vxattr_hsm_state_parse(const char *s, uint32_t *state, uint32_t *archive_id)
{
	unsigned int st, aid;

	if (sscanf(s, "%x %u", &st, &aid) != 2)
		return -EINVAL;
	*state = st;
	*archive_id = aid;
	return 0;
}

int vxattr_hsm_flags_format(char *buf, size_t len, uint32_t set, uint32_t clear,
			    uint32_t archive_id)
{
	return snprintf(buf, len, "%x %x %u", set, clear, archive_id);
}

int vxattr_hsm_flags_parse(const char *s, uint32_t *set, uint32_t *clear, uint32_t *archive_id)
{
	unsigned int st, cl;
	unsigned long aid = 0;

	if (sscanf(s, "%x %x %lu", &st, &cl, &aid) < 2 || aid > UINT32_MAX)
		return -EINVAL;
	*set = st;
	*clear = cl;
	*archive_id = (uint32_t)aid;
	return 0;
}

/* ---- nacre.hsm_action ---- */

int vxattr_hsm_action_format(char *buf, size_t len, const struct nacre_hsm_action *a)
{
	return snprintf(buf, len, "%s %s %" PRIu64 " %" PRIu64 " %d",
			vxattr_hsm_action_name(a->action), vxattr_hsm_status_name(a->status),
			a->bytes_done, a->bytes_total, a->err);
}

/* The fields an action's text and a list line share. 0, or -EINVAL for an unknown name. */
static int set_progress(struct nacre_hsm_action *a, const char *act, const char *st,
			unsigned long long done, unsigned long long total, int err)
{
	if (value_of(actions, ARRAY_SIZE(actions), act, strlen(act), &a->action) < 0 ||
	    value_of(statuses, ARRAY_SIZE(statuses), st, strlen(st), &a->status) < 0)
		return -EINVAL;
	a->bytes_done = done;
	a->bytes_total = total;
	a->err = err;
	return 0;
}

int vxattr_hsm_action_parse(const char *s, struct nacre_hsm_action *a)
{
	char act[32], st[32];
	unsigned long long done = 0, total = 0;
	int err = 0;

	memset(a, 0, sizeof(*a));
	if (sscanf(s, "%31s %31s %llu %llu %d", act, st, &done, &total, &err) < 2)
		return -EINVAL;
	return set_progress(a, act, st, done, total, err);
}

/* ---- nacre.hsm_request ---- */

int vxattr_hsm_request_format(char *buf, size_t len, uint32_t action, uint32_t archive_id,
			      int batch)
{
	return snprintf(buf, len, "%s %u%s", vxattr_hsm_request_name(action), archive_id,
			batch ? "\n" : "");
}

int vxattr_hsm_request_parse(char *v, uint32_t *action, uint32_t *archive_id, char **fids)
{
	char *nl = strchr(v, '\n');
	size_t an;
	unsigned long aid;

	if (nl)
		*nl = '\0';
	an = strcspn(v, " ");
	aid = v[an] ? strtoul(v + an + 1, NULL, 10) : 0;
	if (value_of(requests, ARRAY_SIZE(requests), v, an, action) < 0 || aid > UINT32_MAX)
		return -EINVAL;
	*archive_id = (uint32_t)aid;
	*fids = nl ? nl + 1 : NULL;
	return 0;
}

char *vxattr_hsm_request_next_fid(char **p)
{
	while (*p && **p) {
		char *line = *p, *e = strchr(line, '\n');

		if (e) {
			*e = '\0';
			*p = e + 1;
		} else {
			*p = line + strlen(line);
		}
		if (*line)
			return line;
	}
	return NULL;
}

/* ---- nacre.hsm_list.COOKIE ---- */

int vxattr_hsm_list_format(char *buf, size_t len, const struct nacre_hsm_action *a,
			   const char *fid)
{
	return snprintf(buf, len, "%" PRIu64 " %s %s %s %u %" PRIu64 " %" PRIu64 " %d %s\n",
			a->cookie, vxattr_hsm_action_name(a->action),
			vxattr_hsm_status_name(a->status), fid, a->archive_id, a->bytes_done,
			a->bytes_total, a->err, a->path[0] ? a->path : "-");
}

int vxattr_hsm_list_end(char *buf, size_t len, int eof)
{
	return snprintf(buf, len, "%s\n", eof ? "eof" : "more");
}

/* The widths below are the buffers': NACRE_FID_STR_MAX - 1 and NACRE_PATH_MAX - 1. */
_Static_assert(NACRE_FID_STR_MAX == 48 && NACRE_PATH_MAX == 4096, "update the widths");

int vxattr_hsm_list_parse(const char *line, struct nacre_hsm_action *a,
			  char fid[NACRE_FID_STR_MAX], int *more)
{
	unsigned long long cookie, done, total;
	char act[16], st[16];
	unsigned int aid;
	int err;

	if (strcmp(line, "more") == 0 || strcmp(line, "eof") == 0) {
		*more = line[0] == 'm';
		return 0;
	}
	memset(a, 0, sizeof(*a));
	if (sscanf(line, "%llu %15s %15s %47s %u %llu %llu %d %4095[^\n]", &cookie, act, st, fid,
		   &aid, &done, &total, &err, a->path) != 9 ||
	    set_progress(a, act, st, done, total, err) < 0)
		return -EINVAL;
	a->cookie = cookie;
	a->archive_id = aid;
	return 1;
}

/* ---- nacre.hsm_import ---- */

int vxattr_hsm_import_format(char *buf, size_t len, const struct vxattr_hsm_import *im)
{
	int n = snprintf(buf, len, "%llu %o %u %u %lld %u %u", (unsigned long long)im->size,
			 im->mode, im->uid, im->gid, (long long)im->mtime.sec, im->mtime.nsec,
			 im->archive_id);
	size_t nl = strlen(im->name), pl = strlen(im->path);

	if (n < 0 || (size_t)n + 2 + nl + pl >= len)
		return -ENAMETOOLONG;
	memcpy(buf + n + 1, im->name, nl + 1);
	memcpy(buf + n + 2 + nl, im->path, pl + 1);
	return (int)((size_t)n + 2 + nl + pl + 1);
}

int vxattr_hsm_import_parse(const char *v, size_t size, struct vxattr_hsm_import *im)
{
	unsigned long long sz, sec, nsec;
	unsigned int mode, uid, gid, aid;
	const char *name = memchr(v, 0, size), *path;

	if (!name || name + 1 >= v + size)
		return -EINVAL;
	name++;
	path = memchr(name, 0, (size_t)(v + size - name));
	if (!path || path + 1 >= v + size)
		return -EINVAL;
	path++;
	/* The numbers end at the first NUL, found above inside the value. */
	if (sscanf(v, "%llu %o %u %u %llu %llu %u", &sz, &mode, &uid, &gid, &sec, &nsec, &aid) !=
		    7 ||
	    nsec >= 1000000000ull || aid == 0 || !memchr(path, 0, (size_t)(v + size - path)))
		return -EINVAL;
	im->size = sz;
	im->mode = mode;
	im->uid = uid;
	im->gid = gid;
	im->mtime = (struct nacre_time){ (int64_t)sec, (uint32_t)nsec };
	im->archive_id = aid;
	im->name = name;
	im->path = path;
	return 0;
}

/* ---- nacre.targets ---- */

int vxattr_target_format(char *buf, size_t len, const struct nacre_target *t)
{
	return snprintf(buf, len, "%s %u %u %s %llu %llu %llu %llu %llu\n",
			t->type == NACRE_TGT_MDT ? "MDT" : "OST", t->index, t->up ? 1u : 0u,
			t->addr[0] ? t->addr : "-", (unsigned long long)t->st.kb_total,
			(unsigned long long)t->st.kb_free, (unsigned long long)t->st.kb_avail,
			(unsigned long long)t->st.files, (unsigned long long)t->st.ffree);
}

_Static_assert(NACRE_ADDR_MAX == 63, "update the address width below");

int vxattr_target_parse(const char *line, struct nacre_target *t)
{
	char type[8], addr[NACRE_ADDR_MAX + 1];
	unsigned long long total, kfree, avail, files, ffree;
	unsigned int index, up;

	if (sscanf(line, "%7s %u %u %63s %llu %llu %llu %llu %llu", type, &index, &up, addr,
		   &total, &kfree, &avail, &files, &ffree) != 9)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	if (strcmp(type, "MDT") == 0)
		t->type = NACRE_TGT_MDT;
	else if (strcmp(type, "OST") == 0)
		t->type = NACRE_TGT_OST;
	else
		return -EINVAL;
	t->index = index;
	t->up = up != 0;
	str_copy(t->addr, strcmp(addr, "-") == 0 ? "" : addr, sizeof(t->addr));
	t->st.kb_total = total;
	t->st.kb_free = kfree;
	t->st.kb_avail = avail;
	t->st.files = files;
	t->st.ffree = ffree;
	return 0;
}

/* ---- nacre.recovery_status ---- */

int vxattr_recovery_format(char *buf, size_t len, const struct nacre_recovery_status *r)
{
	return snprintf(buf, len,
			"%s %" PRId64 " %u %u %u %u %u %u %u %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 "\n",
			r->state == NACRE_RECOVERY_RECOVERING ? NACRE_RECOVERY_RECOVERING_NAME
							      : NACRE_RECOVERY_COMPLETE_NAME,
			r->start, r->duration_s, r->time_left_s, r->clients_expected,
			r->clients_connected, r->clients_replayed, r->clients_completed,
			r->clients_evicted, r->replayed, r->queued, r->last_transno,
			r->last_committed);
}

/* One space, then a decimal number of at most max at *p; *p is moved past it. 0 or
 * -EINVAL (no digits, too large, anything else). */
static int next_number(const char **p, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s++ != ' ' || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return 0;
}

int vxattr_recovery_parse(const char *s, struct nacre_recovery_status *r)
{
	uint64_t v[12];
	/* the limits of START, the u32 fields and the u64 ones, in the value's order */
	static const uint64_t max[12] = {INT64_MAX,  UINT32_MAX, UINT32_MAX, UINT32_MAX,
					 UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX,
					 UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
	size_t n = strcspn(s, " ");
	uint32_t state;

	if (n == strlen(NACRE_RECOVERY_COMPLETE_NAME) &&
	    memcmp(s, NACRE_RECOVERY_COMPLETE_NAME, n) == 0)
		state = NACRE_RECOVERY_COMPLETE;
	else if (n == strlen(NACRE_RECOVERY_RECOVERING_NAME) &&
		 memcmp(s, NACRE_RECOVERY_RECOVERING_NAME, n) == 0)
		state = NACRE_RECOVERY_RECOVERING;
	else
		return -EINVAL;
	s += n;
	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		if (next_number(&s, max[i], &v[i]) < 0)
			return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*r = (struct nacre_recovery_status){
		.state = state,
		.start = (int64_t)v[0],
		.duration_s = (uint32_t)v[1],
		.time_left_s = (uint32_t)v[2],
		.clients_expected = (uint32_t)v[3],
		.clients_connected = (uint32_t)v[4],
		.clients_replayed = (uint32_t)v[5],
		.clients_completed = (uint32_t)v[6],
		.clients_evicted = (uint32_t)v[7],
		.replayed = v[8],
		.queued = v[9],
		.last_transno = v[10],
		.last_committed = v[11],
	};
	return 0;
}
