/* groups.c - long group lists registered with the MDS (see groups.h; nacre.h,
 * nacre_groups_cred). Registration calls go straight to the connection (rpc_call): this
 * file is below mdc.c, which asks it to register a list again. */
#include "client/groups.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_export.h"

void cl_groups_init(struct nacre_fs *fs)
{
	pthread_mutex_init(&fs->groups_lock, NULL);
}

void cl_groups_fini(struct nacre_fs *fs)
{
	if (fs->groups)
		for (int i = 0; i < CL_GROUPS_LISTS; i++)
			free(fs->groups[i].g);
	free(fs->groups);
	fs->groups = NULL;
	pthread_mutex_destroy(&fs->groups_lock);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Encodes chunk [first, first + count) of list g of n as a GROUPS_SET body into c. */
static void encode_chunk(struct wire_cursor *c, uint64_t token, const uint32_t *g, uint32_t n,
			 uint32_t first, uint32_t count)
{
	struct wire_groups_set_req r = {.token = token, .total = n, .first = first,
					.count = count, .list = g + first};

	wire_groups_set_req_encode(c, &r);
}

/* Sends the list (all chunks), with call(arg, body, len) per chunk. */
static int send_list(uint64_t token, const uint32_t *g, uint32_t n,
		     int (*call)(void *arg, const void *body, uint32_t len), void *arg)
{
	int rc = 0;

	for (uint32_t first = 0; first < n && rc == 0; first += WIRE_GROUPS_CHUNK) {
		uint32_t count = n - first < WIRE_GROUPS_CHUNK ? n - first : WIRE_GROUPS_CHUNK;
		struct wire_cursor c;

		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		encode_chunk(&c, token, g, n, first, count);
		rc = wire_cursor_ok(&c) ? call(arg, c.buf, (uint32_t)wire_cursor_pos(&c)) : -EINVAL;
		wire_cursor_fini(&c);
	}
	return rc;
}

static int call_conn(void *arg, const void *body, uint32_t len)
{
	struct nacre_fs *fs = arg;
	struct rpc_call_args a = {.opcode = WIRE_OP_MDS_GROUPS_SET, .flags = RPC_IDEMPOTENT,
				  .body = body, .body_len = len};
	struct rpc_msg *m = NULL;
	int rc = rpc_call(fs->mds, &a, &m);

	if (rc == 0 && m && m->hdr.status < 0)
		rc = m->hdr.status;
	rpc_msg_free(m);
	return rc;
}

static int call_recovery(void *arg, const void *body, uint32_t len)
{
	struct rpc_msg *m = NULL;
	int rc = rpc_recovery_call(arg, WIRE_OP_MDS_GROUPS_SET, 0, body, len, NULL, 0, &m);

	/* a refusal (a reply) costs that list only: its requests get -NACRE_EGROUPS */
	if (m)
		rc = 0;
	rpc_msg_free(m);
	return rc;
}

/* A copy of the slot's list for token, or NULL. */
static uint32_t *copy_of(struct nacre_fs *fs, uint64_t token, uint32_t *n)
{
	uint32_t *g = NULL;

	pthread_mutex_lock(&fs->groups_lock);
	for (int i = 0; fs->groups && i < CL_GROUPS_LISTS; i++) {
		struct cl_glist *l = &fs->groups[i];
		if (l->token != token)
			continue;
		g = malloc((size_t)l->n * sizeof(*g));
		if (g) {
			memcpy(g, l->g, (size_t)l->n * sizeof(*g));
			*n = l->n;
		}
		break;
	}
	pthread_mutex_unlock(&fs->groups_lock);
	return g;
}

int cl_groups_reregister(struct nacre_fs *fs, uint64_t token)
{
	uint32_t n = 0;
	uint32_t *g = copy_of(fs, token, &n);
	int rc;

	if (!g)
		return -ENOENT;
	rc = send_list(token, g, n, call_conn, fs);
	free(g);
	return rc;
}

int cl_groups_recover(struct nacre_fs *fs, struct rpc_recovery *r)
{
	uint64_t tokens[CL_GROUPS_LISTS];
	int nt = 0, rc = 0;

	pthread_mutex_lock(&fs->groups_lock);
	for (int i = 0; fs->groups && i < CL_GROUPS_LISTS; i++)
		if (fs->groups[i].token)
			tokens[nt++] = fs->groups[i].token;
	pthread_mutex_unlock(&fs->groups_lock);
	for (int i = 0; i < nt && rc == 0; i++) {
		uint32_t n = 0;
		uint32_t *g = copy_of(fs, tokens[i], &n);
		if (g)
			rc = send_list(tokens[i], g, n, call_recovery, r);
		free(g);
	}
	return rc;
}

/* 1 if token is registered (and marks it used). With groups_lock held. */
static int known(struct nacre_fs *fs, uint64_t token)
{
	for (int i = 0; fs->groups && i < CL_GROUPS_LISTS; i++) {
		if (fs->groups[i].token == token) {
			fs->groups[i].used = ++fs->groups_clock;
			return 1;
		}
	}
	return 0;
}

/* Keeps list g (taken over) of token in a slot, dropping the least recently used. */
static void remember(struct nacre_fs *fs, uint64_t token, uint32_t *g, uint32_t n)
{
	struct cl_glist *slot = NULL;

	pthread_mutex_lock(&fs->groups_lock);
	if (!fs->groups)
		fs->groups = calloc(CL_GROUPS_LISTS, sizeof(*fs->groups));
	if (!fs->groups || known(fs, token)) {
		pthread_mutex_unlock(&fs->groups_lock);
		free(g);
		return;
	}
	for (int i = 0; i < CL_GROUPS_LISTS; i++) {
		struct cl_glist *l = &fs->groups[i];
		if (!l->token) {
			slot = l;
			break;
		}
		if (!slot || l->used < slot->used)
			slot = l;
	}
	free(slot->g);
	*slot = (struct cl_glist){.token = token, .n = n, .g = g, .used = ++fs->groups_clock};
	pthread_mutex_unlock(&fs->groups_lock);
}

NACRE_API int nacre_groups_cred(struct nacre_fs *fs, uint32_t uid, uint32_t gid,
				const uint32_t *groups, uint32_t n, struct nacre_cred *out)
{
	uint32_t *g, k = 0;
	uint64_t token;
	int rc, have;

	if (!out || n > NACRE_MAX_GROUPS || (n && !groups))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->uid = uid;
	out->gid = gid;
	if (n <= NACRE_CRED_GROUPS) {
		memcpy(out->groups, groups, (size_t)n * sizeof(*groups));
		out->ngroups = n;
		return 0;
	}
	g = malloc((size_t)n * sizeof(*g));
	if (!g)
		return -ENOMEM;
	memcpy(g, groups, (size_t)n * sizeof(*g));
	qsort(g, n, sizeof(*g), cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		if (i == 0 || g[i] != g[k - 1])
			g[k++] = g[i];
	memcpy(out->groups, g, (k < NACRE_CRED_GROUPS ? k : NACRE_CRED_GROUPS) * sizeof(*g));
	out->ngroups = k < NACRE_CRED_GROUPS ? k : NACRE_CRED_GROUPS;
	if (k <= NACRE_CRED_GROUPS || !fs) {
		free(g);
		return 0;
	}
	token = wire_groups_token(g, k);
	pthread_mutex_lock(&fs->groups_lock);
	have = known(fs, token);
	pthread_mutex_unlock(&fs->groups_lock);
	if (!have) {
		rc = send_list(token, g, k, call_conn, fs);
		if (rc < 0) {
			free(g);
			return rc;
		}
		remember(fs, token, g, k);
	} else {
		free(g);
	}
	out->groups_token = token;
	return 0;
}
