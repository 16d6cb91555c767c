/* cap_probe.c - hand-built object requests for tests/integration/test_capabilities.py: a
 * client that holds the key and talks to the MDS and the OSSes directly, as an attacker
 * bypassing nacre-mount would, to show what an OSS serves with which capability.
 *
 *   cap-probe MDS_ADDR FSNAME KEY_FILE COMMAND...
 * Commands, run in order; each prints one line "<command words> rc=<status>":
 *   open SLOT FID r|w|rw [UID GID]   MDS_OPEN as UID:GID (default root): keeps the layout
 *                                    and capability in SLOT, prints its rights
 *   layout SLOT FID [UID GID]        MDS_LAYOUT_GET (getstripe, no open)
 *   io OP CAPSLOT OBJSLOT            OP (read|write|punch|destroy|getattr|sync) of stripe 0
 *                                    of OBJSLOT's file, carrying CAPSLOT's capability
 *                                    ("none": no capability)
 *   forge SLOT RIGHTS                sets SLOT's capability rights to RIGHTS (a number)
 *                                    without a new MAC
 *   known SLOT FID OST GEN           SLOT names FID's stripe 0 on OST, layout generation
 *                                    GEN, without asking the MDS (what an attacker learnt
 *                                    elsewhere), and no capability
 *   sleep SECS
 * Exit status 0 unless a command could not be run at all (bad arguments, no connection).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/key.h"
#include "nacre/nacre.h"
#include "proto/rpc.h"
#include "proto/wire.h"

#define SLOTS 16

struct slot {
	char name[32];
	struct nacre_fid fid;
	struct nacre_layout layout;
	int has_cap;
	struct wire_cap cap;
};

static struct slot slots[SLOTS];
static int nslots;
static struct rpc_conn *mds;
static const char *g_fsname;

/* The name the servers know us by: nodemaps match it (the tests run as their admin client). */
static const char *probe_name(void)
{
	const char *n = getenv("NACRE_CLIENT_NAME");

	return n && n[0] ? n : "cap-probe";
}
static struct nacre_key g_key;
static uint64_t g_client;
static struct nacre_target g_targets[64];
static int g_ntargets;
static struct rpc_conn *oss_conns[64];

static struct slot *slot_get(const char *name, int create)
{
	for (int i = 0; i < nslots; i++)
		if (!strcmp(slots[i].name, name))
			return &slots[i];
	if (!create || nslots == SLOTS)
		return NULL;
	struct slot *s = &slots[nslots++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

static int call(struct rpc_conn *c, uint16_t op, struct wire_cursor *body, const void *bulk,
		uint32_t bulk_len, struct rpc_msg **out)
{
	struct iovec iov = {.iov_base = (void *)(uintptr_t)bulk, .iov_len = bulk_len};
	struct rpc_call_args a = {.opcode = op,
				  .flags = RPC_IDEMPOTENT,
				  .body = body->buf,
				  .body_len = (uint32_t)wire_cursor_pos(body),
				  .bulk = bulk_len ? &iov : NULL,
				  .bulk_iovcnt = bulk_len ? 1 : 0};
	return rpc_call(c, &a, out);
}

static void cred_of(char **argv, int argc, int at, struct nacre_cred *cr)
{
	memset(cr, 0, sizeof(*cr));
	if (argc > at + 1) {
		cr->uid = (uint32_t)strtoul(argv[at], NULL, 10);
		cr->gid = (uint32_t)strtoul(argv[at + 1], NULL, 10);
	}
}

static int load_targets(void)
{
	struct wire_cred_req r;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	memset(&r, 0, sizeof(r));
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_req_encode(&c, &r);
	int rc = call(mds, WIRE_OP_MDS_TARGETS, &c, NULL, 0, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	struct wire_targets_rep h;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_targets_rep_decode(&c, &h);
	for (uint32_t i = 0; i < h.count && i < 64 && wire_cursor_ok(&c); i++)
		wire_target_get(&c, &g_targets[g_ntargets++]);
	rpc_msg_free(m);
	return wire_cursor_ok(&c) ? 0 : -EPROTO;
}

static struct rpc_conn *oss_for(uint32_t ost)
{
	for (int i = 0; i < g_ntargets; i++) {
		if (g_targets[i].type != NACRE_TGT_OST || g_targets[i].index != ost)
			continue;
		if (!oss_conns[i]) {
			struct rpc_conn_conf conf = {.addr = g_targets[i].addr,
						     .fsname = g_fsname,
						     .name = probe_name(),
						     .key = &g_key,
						     .timeout_ms = 5000,
						     .client_id = g_client};
			if (rpc_conn_create(&conf, &oss_conns[i]))
				return NULL;
		}
		return oss_conns[i];
	}
	return NULL;
}

static int do_open(char **argv, int argc)
{
	struct slot *s = slot_get(argv[1], 1);
	struct wire_open_req r;
	struct wire_open_rep *o = calloc(1, sizeof(*o));
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	memset(&r, 0, sizeof(r));
	if (!s || !o || nacre_fid_parse(argv[2], &r.fid))
		return -EINVAL;
	r.flags = !strcmp(argv[3], "r") ? O_RDONLY : !strcmp(argv[3], "w") ? O_WRONLY : O_RDWR;
	cred_of(argv, argc, 4, &r.cred);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_open_req_encode(&c, &r);
	int rc = call(mds, WIRE_OP_MDS_OPEN, &c, NULL, 0, &m);
	wire_cursor_fini(&c);
	if (rc == 0) {
		wire_cursor_init_read(&c, m->body, m->body_len);
		wire_open_rep_decode(&c, o);
		rc = wire_cursor_ok(&c) ? 0 : -EPROTO;
	}
	rpc_msg_free(m);
	s->fid = r.fid;
	if (rc == 0) {
		s->layout = o->layout;
		s->has_cap = o->has_cap;
		s->cap = o->cap;
	}
	printf("open %s rc=%d cap=%d rights=%u ost=%u gen=%u\n", s->name, rc, s->has_cap,
	       s->has_cap ? s->cap.rights : 0, s->layout.nosts ? s->layout.ost_idx[0] : 0,
	       s->layout.gen);
	free(o);
	return 0;
}

static int do_layout(char **argv, int argc)
{
	struct slot *s = slot_get(argv[1], 1);
	struct wire_fid_req r;
	struct wire_layout_rep l;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	memset(&r, 0, sizeof(r));
	memset(&l, 0, sizeof(l));
	if (!s || nacre_fid_parse(argv[2], &r.fid))
		return -EINVAL;
	cred_of(argv, argc, 3, &r.cred);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_fid_req_encode(&c, &r);
	int rc = call(mds, WIRE_OP_MDS_LAYOUT_GET, &c, NULL, 0, &m);
	wire_cursor_fini(&c);
	if (rc == 0) {
		wire_cursor_init_read(&c, m->body, m->body_len);
		wire_layout_rep_decode(&c, &l);
		rc = wire_cursor_ok(&c) ? 0 : -EPROTO;
	}
	rpc_msg_free(m);
	s->fid = r.fid;
	if (rc == 0) {
		s->layout = l.layout;
		s->has_cap = l.has_cap;
		s->cap = l.cap;
	}
	printf("layout %s rc=%d cap=%d rights=%u\n", s->name, rc, s->has_cap,
	       s->has_cap ? s->cap.rights : 0);
	return 0;
}

static int do_io(char **argv)
{
	static const struct {
		const char *name;
		uint16_t op;
	} ops[] = {{"read", WIRE_OP_OST_READ},       {"write", WIRE_OP_OST_WRITE},
		   {"punch", WIRE_OP_OST_PUNCH},     {"destroy", WIRE_OP_OST_DESTROY},
		   {"getattr", WIRE_OP_OST_GETATTR}, {"sync", WIRE_OP_OST_SYNC}};
	uint16_t op = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(argv[1], ops[i].name))
			op = ops[i].op;
	struct slot *capslot = strcmp(argv[2], "none") ? slot_get(argv[2], 0) : NULL;
	struct slot *obj = slot_get(argv[3], 0);
	if (!op || !obj || (strcmp(argv[2], "none") && !capslot) || obj->layout.nosts == 0)
		return -EINVAL;
	struct wire_ost_io_req r = {.ost_idx = obj->layout.ost_idx[0],
				    .fid = obj->fid,
				    .stripe_idx = 0,
				    .layout_gen = obj->layout.gen,
				    .offset = 0,
				    .len = op == WIRE_OP_OST_READ ? 4096 : op == WIRE_OP_OST_WRITE ? 5 : 0};
	if (capslot && capslot->has_cap) {
		r.has_cap = 1;
		r.cap = capslot->cap;
	}
	struct rpc_conn *oss = oss_for(r.ost_idx);
	if (!oss)
		return -ENOENT;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_ost_io_req_encode(&c, &r);
	int rc = call(oss, op, &c, op == WIRE_OP_OST_WRITE ? "HACKD" : NULL,
		      op == WIRE_OP_OST_WRITE ? 5 : 0, &m);
	wire_cursor_fini(&c);
	printf("io %s %s %s rc=%d bytes=%u\n", argv[1], argv[2], argv[3], rc,
	       m ? m->bulk_len : 0);
	rpc_msg_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	char err[512];

	if (argc < 4) {
		fprintf(stderr, "usage: cap-probe MDS_ADDR FSNAME KEY_FILE COMMAND...\n");
		return 2;
	}
	g_fsname = argv[2];
	if (key_load(argv[3], &g_key, err, sizeof(err))) {
		fprintf(stderr, "cap-probe: %s\n", err);
		return 2;
	}
	if (key_random(&g_client, sizeof(g_client)) < 0)
		return 2;
	g_client |= 1ull << 63;
	struct rpc_conn_conf conf = {.addr = argv[1],
				     .fsname = g_fsname,
				     .name = probe_name(),
				     .key = &g_key,
				     .timeout_ms = 5000,
				     .client_id = g_client};
	if (rpc_conn_create(&conf, &mds) || rpc_conn_connect(mds, 5000, err, sizeof(err))) {
		fprintf(stderr, "cap-probe: MDS %s: %s\n", argv[1], err);
		return 2;
	}
	if (load_targets()) {
		fprintf(stderr, "cap-probe: cannot list the targets\n");
		return 2;
	}
	for (int i = 4; i < argc; i++) {
		/* split one command into words */
		char *words[8], *save = NULL, *copy = strdup(argv[i]);
		int n = 0;
		for (char *w = strtok_r(copy, " ", &save); w && n < 8; w = strtok_r(NULL, " ", &save))
			words[n++] = w;
		int rc = -EINVAL;
		if (n >= 4 && !strcmp(words[0], "open"))
			rc = do_open(words, n);
		else if (n >= 3 && !strcmp(words[0], "layout"))
			rc = do_layout(words, n);
		else if (n == 4 && !strcmp(words[0], "io"))
			rc = do_io(words);
		else if (n == 3 && !strcmp(words[0], "forge")) {
			struct slot *s = slot_get(words[1], 0);
			if (s) {
				s->cap.rights = (uint32_t)strtoul(words[2], NULL, 0);
				printf("forge %s rc=0\n", words[1]);
				rc = 0;
			}
		} else if (n == 5 && !strcmp(words[0], "known")) {
			struct slot *s = slot_get(words[1], 1);
			if (s && nacre_fid_parse(words[2], &s->fid) == 0) {
				memset(&s->layout, 0, sizeof(s->layout));
				s->layout.nosts = 1;
				s->layout.ost_idx[0] = (uint32_t)strtoul(words[3], NULL, 0);
				s->layout.gen = (uint32_t)strtoul(words[4], NULL, 0);
				s->has_cap = 0;
				printf("known %s rc=0\n", words[1]);
				rc = 0;
			}
		} else if (n == 2 && !strcmp(words[0], "sleep")) {
			usleep((useconds_t)(strtod(words[1], NULL) * 1e6));
			printf("sleep rc=0\n");
			rc = 0;
		}
		free(copy);
		fflush(stdout);
		if (rc) {
			fprintf(stderr, "cap-probe: cannot run \"%s\": %s\n", argv[i], strerror(-rc));
			return 2;
		}
	}
	for (int i = 0; i < 64; i++)
		rpc_conn_destroy(oss_conns[i]);
	rpc_conn_destroy(mds);
	return 0;
}
