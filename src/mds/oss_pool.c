/* oss_pool.c - MDS -> OSS connections and object punch / destroy. */
#include "mds/oss_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/layout.h"
#include "common/log.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/targets.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc.h"

struct pool_conn {
	char addr[NACRE_ADDR_MAX + 1];
	struct rpc_conn *conn;
	struct pool_conn *next;
};

struct mds_oss_pool {
	pthread_mutex_t lock;
	struct pool_conn *conns; /* protected by lock; entries live until the pool is freed */
	char fsname[NACRE_FSNAME_MAX + 1];
	struct nacre_key key;
};

int mds_oss_pool_create(const char *fsname, const struct nacre_key *key,
			struct mds_oss_pool **out)
{
	struct mds_oss_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	str_copy(p->fsname, fsname, sizeof(p->fsname));
	p->key = *key;
	*out = p;
	return 0;
}

void mds_oss_pool_destroy(struct mds_oss_pool *p)
{
	if (!p)
		return;
	for (struct pool_conn *c = p->conns, *n; c; c = n) {
		n = c->next;
		rpc_conn_destroy(c->conn);
		free(c);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* The connection to addr, made on first use. Valid until the pool is destroyed. */
static struct rpc_conn *get_conn(struct mds_oss_pool *p, const char *addr)
{
	struct rpc_conn *rc = NULL;
	pthread_mutex_lock(&p->lock);
	for (struct pool_conn *c = p->conns; c; c = c->next)
		if (!strcmp(c->addr, addr)) {
			rc = c->conn;
			goto out;
		}
	struct pool_conn *c = calloc(1, sizeof(*c));
	if (!c)
		goto out;
	str_copy(c->addr, addr, sizeof(c->addr));
	struct rpc_conn_conf conf = {.addr = addr,
				     .fsname = p->fsname,
				     .name = "nacre-MDT0000",
				     .key = &p->key,
				     .timeout_ms = MDS_OSS_TIMEOUT_MS};
	if (rpc_conn_create(&conf, &c->conn)) {
		free(c);
		goto out;
	}
	c->next = p->conns;
	p->conns = c;
	rc = c->conn;
out:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* One object operation per stripe, all in flight at once. require_up: skip the calls and
 * return -EAGAIN when an OST is unknown or down (the destroy log retries later). */
static int per_stripe(struct mds *m, uint16_t opcode, const struct nacre_fid *fid,
		      const struct nacre_layout *l, uint64_t new_size, int require_up)
{
	struct mds_oss_pool *p = m->oss;
	uint32_t n = l->nosts <= NACRE_MAX_STRIPES ? l->nosts : NACRE_MAX_STRIPES;
	struct rpc_pending *pend[NACRE_MAX_STRIPES];
	uint8_t bodies[NACRE_MAX_STRIPES][64];
	char fs[NACRE_FID_STR_MAX];
	int first_err = 0;

	for (uint32_t i = 0; i < n; i++) {
		char addr[NACRE_ADDR_MAX + 1];
		int up = 0;
		pend[i] = NULL;
		int rc = mds_targets_addr(m->targets, l->ost_idx[i], addr, &up);
		if (rc || (require_up && !up)) {
			if (!first_err)
				first_err = -EAGAIN;
			continue;
		}
		struct rpc_conn *conn = get_conn(p, addr);
		if (!conn) {
			if (!first_err)
				first_err = -ENOMEM;
			continue;
		}
		struct wire_ost_io_req req = {.ost_idx = l->ost_idx[i],
					      .fid = *fid,
					      .stripe_idx = i,
					      .layout_gen = l->gen};
		if (opcode == WIRE_OP_OST_PUNCH)
			req.offset = layout_object_size(l, new_size, i);
		struct wire_cursor c;
		wire_cursor_init_write(&c, bodies[i], sizeof(bodies[i]));
		wire_ost_io_req_encode(&c, &req);
		if (!wire_cursor_ok(&c)) {
			if (!first_err)
				first_err = -EINVAL;
			continue;
		}
		struct rpc_call_args a = {.opcode = opcode,
					  .flags = RPC_IDEMPOTENT,
					  .body = bodies[i],
					  .body_len = (uint32_t)wire_cursor_pos(&c),
					  .timeout_ms = MDS_OSS_TIMEOUT_MS};
		rc = rpc_start(conn, &a, &pend[i]);
		if (rc) {
			pend[i] = NULL;
			if (!first_err)
				first_err = rc;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!pend[i])
			continue;
		struct rpc_msg *rep = NULL;
		int rc = rpc_wait(pend[i], &rep);
		rpc_msg_free(rep);
		if (rc == -ENOENT && opcode == WIRE_OP_OST_DESTROY)
			rc = 0;
		if (rc) {
			LOG_RATELIMITED(LOG_LVL_WARN, "oss", "%s of %s stripe %u on OST%04x: %s",
					wire_opcode_name(opcode), mds_fid_str(fid, fs, sizeof(fs)),
					i, l->ost_idx[i], nacre_strerror(rc));
			if (!first_err)
				first_err = rc;
		}
	}
	return first_err;
}

int mds_oss_punch(struct mds *m, const struct nacre_fid *fid, const struct nacre_layout *l,
		  uint64_t new_size)
{
	int rc = per_stripe(m, WIRE_OP_OST_PUNCH, fid, l, new_size, 0);
	return rc ? -EIO : 0;
}

int mds_oss_destroy_objects(struct mds *m, const struct nacre_fid *fid,
			    const struct nacre_layout *l)
{
	return per_stripe(m, WIRE_OP_OST_DESTROY, fid, l, 0, 1);
}
