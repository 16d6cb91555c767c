/* fuzz_vxattr.c - the parsers of the mount's virtual xattr values (src/common/vxattr.c):
 * a setxattr value comes from any user of the mount, a getxattr answer from whatever serves
 * the path. The first byte picks the value ('0' + one of the kinds below), the rest is the
 * text. Whatever parses is formatted and parsed again: the second parse must succeed and
 * give the same values. The text is copied to a buffer of its exact size (plus the NUL the
 * string parsers take), so a read past it is caught. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vxattr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { K_STATE, K_FLAGS, K_ACTION, K_REQUEST, K_LIST, K_IMPORT, K_TARGET, K_RECOVERY, K_COUNT };

#define OUT_MAX (2 * NACRE_PATH_MAX + 256)

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_vxattr: %s\n", what);
	abort();
}

/* A line as the callers hand it over: the formatted text without its '\n'. */
static void chop(char *s)
{
	size_t n = strlen(s);

	if (n && s[n - 1] == '\n')
		s[n - 1] = '\0';
}

static void check_state(const char *s)
{
	uint32_t st, aid, st2, aid2;
	char out[64];

	if (vxattr_hsm_state_parse(s, &st, &aid) < 0)
		return;
	vxattr_hsm_state_format(out, sizeof(out), st, aid);
	if (vxattr_hsm_state_parse(out, &st2, &aid2) < 0 || st2 != st || aid2 != aid)
		fail("hsm_state differs after the round trip");
}

static void check_flags(const char *s)
{
	uint32_t set, clear, aid, set2, clear2, aid2;
	char out[64];

	if (vxattr_hsm_flags_parse(s, &set, &clear, &aid) < 0)
		return;
	vxattr_hsm_flags_format(out, sizeof(out), set, clear, aid);
	if (vxattr_hsm_flags_parse(out, &set2, &clear2, &aid2) < 0 || set2 != set ||
	    clear2 != clear || aid2 != aid)
		fail("hsm_state flags differ after the round trip");
}

static int same_action(const struct nacre_hsm_action *a, const struct nacre_hsm_action *b)
{
	return a->cookie == b->cookie && a->action == b->action && a->status == b->status &&
	       a->archive_id == b->archive_id && a->bytes_done == b->bytes_done &&
	       a->bytes_total == b->bytes_total && a->err == b->err &&
	       strcmp(a->path, b->path) == 0;
}

static void check_action(const char *s)
{
	struct nacre_hsm_action *a = malloc(2 * sizeof(*a));
	char out[256];

	if (!a)
		fail("out of memory");
	if (vxattr_hsm_action_parse(s, &a[0]) == 0) {
		vxattr_hsm_action_format(out, sizeof(out), &a[0]);
		if (vxattr_hsm_action_parse(out, &a[1]) < 0 || !same_action(&a[0], &a[1]))
			fail("hsm_action differs after the round trip");
	}
	free(a);
}

/* The request's first line and FID lines, then the same formatted and parsed again. */
static void check_request(char *v)
{
	size_t cap = strlen(v) + 64, n = 0, i = 0, pos;
	char *out = malloc(cap), **lines = malloc((strlen(v) + 1) * sizeof(*lines));
	char *fids, *fids2, *rest, *f;
	uint32_t action, aid, action2, aid2;

	if (!out || !lines)
		fail("out of memory");
	if (vxattr_hsm_request_parse(v, &action, &aid, &fids) < 0)
		goto out;
	pos = (size_t)vxattr_hsm_request_format(out, cap, action, aid, fids != NULL);
	for (rest = fids; (f = vxattr_hsm_request_next_fid(&rest)) != NULL; n++) {
		lines[n] = f;
		pos += (size_t)snprintf(out + pos, cap - pos, "%s\n", f);
	}
	if (pos >= cap)
		fail("a request grew when formatted again");
	if (vxattr_hsm_request_parse(out, &action2, &aid2, &fids2) < 0 || action2 != action ||
	    aid2 != aid || (fids2 == NULL) != (fids == NULL))
		fail("hsm_request differs after the round trip");
	for (rest = fids2; (f = vxattr_hsm_request_next_fid(&rest)) != NULL; i++)
		if (i >= n || strcmp(f, lines[i]) != 0)
			fail("the FID lines differ after the round trip");
	if (i != n)
		fail("FID lines were lost in the round trip");
out:
	free(lines);
	free(out);
}

static void check_list(const char *s)
{
	struct nacre_hsm_action *a = malloc(2 * sizeof(*a));
	char *out = malloc(OUT_MAX), fid[NACRE_FID_STR_MAX], fid2[NACRE_FID_STR_MAX];
	int more, more2;

	if (!a || !out)
		fail("out of memory");
	int r = vxattr_hsm_list_parse(s, &a[0], fid, &more);
	if (r == 0) {
		vxattr_hsm_list_end(out, OUT_MAX, !more);
		chop(out);
		if (vxattr_hsm_list_parse(out, &a[1], fid2, &more2) != 0 || more2 != more)
			fail("the last hsm_list line differs after the round trip");
	} else if (r > 0) {
		if (vxattr_hsm_list_format(out, OUT_MAX, &a[0], fid) >= OUT_MAX)
			fail("an hsm_list line does not fit");
		chop(out);
		if (vxattr_hsm_list_parse(out, &a[1], fid2, &more2) != 1 ||
		    !same_action(&a[0], &a[1]) || strcmp(fid, fid2) != 0)
			fail("an hsm_list line differs after the round trip");
	}
	free(a);
	free(out);
}

static void check_import(const char *v, size_t size)
{
	struct vxattr_hsm_import im, im2;
	char *out;
	int n;

	if (vxattr_hsm_import_parse(v, size, &im) < 0)
		return;
	out = malloc(size + 128);
	if (!out)
		fail("out of memory");
	n = vxattr_hsm_import_format(out, size + 128, &im);
	if (n < 0 || vxattr_hsm_import_parse(out, (size_t)n, &im2) < 0)
		fail("hsm_import does not parse after the round trip");
	if (im2.size != im.size || im2.mode != im.mode || im2.uid != im.uid ||
	    im2.gid != im.gid || im2.mtime.sec != im.mtime.sec ||
	    im2.mtime.nsec != im.mtime.nsec || im2.archive_id != im.archive_id ||
	    strcmp(im2.name, im.name) != 0 || strcmp(im2.path, im.path) != 0)
		fail("hsm_import differs after the round trip");
	free(out);
}

static void check_target(const char *s)
{
	struct nacre_target t, t2;
	char out[256];

	if (vxattr_target_parse(s, &t) < 0)
		return;
	if (vxattr_target_format(out, sizeof(out), &t) >= (int)sizeof(out))
		fail("a target line does not fit");
	chop(out);
	if (vxattr_target_parse(out, &t2) < 0 || memcmp(&t, &t2, sizeof(t)) != 0)
		fail("a target line differs after the round trip");
}

static void check_recovery(const char *s)
{
	struct nacre_recovery_status r, r2;
	char out[256], out2[256];

	if (vxattr_recovery_parse(s, &r) < 0)
		return;
	if (vxattr_recovery_format(out, sizeof(out), &r) >= (int)sizeof(out))
		fail("a recovery status does not fit");
	/* every field is in the text: the same text means the same values */
	if (vxattr_recovery_parse(out, &r2) < 0 ||
	    vxattr_recovery_format(out2, sizeof(out2), &r2) < 0 || strcmp(out, out2) != 0)
		fail("a recovery status differs after the round trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v;

	if (size < 1)
		return 0;
	unsigned kind = (uint8_t)(data[0] - '0') % K_COUNT;
	data++;
	size--;
	v = malloc(size + 1);
	if (!v)
		fail("out of memory");
	memcpy(v, data, size);
	if (kind == K_IMPORT) {
		check_import(v, size); /* not a C string: no NUL added */
		free(v);
		return 0;
	}
	v[size] = '\0';
	switch (kind) {
	case K_STATE: check_state(v); break;
	case K_FLAGS: check_flags(v); break;
	case K_ACTION: check_action(v); break;
	case K_REQUEST: check_request(v); break;
	case K_LIST: check_list(v); break;
	case K_TARGET: check_target(v); break;
	default: check_recovery(v); break;
	}
	free(v);
	return 0;
}
