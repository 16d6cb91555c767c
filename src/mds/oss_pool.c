/* oss_pool.c - MDS -> OSS connections and object punch / destroy. */
#include "mds/oss_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/layout.h"
#include "common/log.h"
#include "common/util.h"
#include "mds/caps.h"
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
				     .timeout_ms = MDS_OSS_TIMEOUT_MS,
				     /* between servers: at least integrity */
				     .sec = WIRE_SEC_INTEGRITY};
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

int mds_oss_ping(struct mds *m, const char *addr, int timeout_ms)
{
	struct rpc_conn *conn = m->oss ? get_conn(m->oss, addr) : NULL;
	struct rpc_msg *rep = NULL;
	char err[256];

	if (!conn)
		return -ENOMEM;
	int rc = rpc_conn_connect(conn, timeout_ms, err, sizeof(err));
	if (rc == 0) {
		struct rpc_call_args a = {.opcode = WIRE_OP_PING, .flags = RPC_IDEMPOTENT,
					  .timeout_ms = timeout_ms};
		rc = rpc_call(conn, &a, &rep);
		rpc_msg_free(rep);
	}
	return rc < 0 ? rc : 0;
}

/* An object operation's request body (an ost_io_req), kept until its reply. */
#define OBJ_BODY_MAX 96

/* Encodes req into body and starts opcode with it on conn. Returns 0 with *pend set, or an
 * error (-EINVAL if req does not encode) with *pend NULL. body must outlive the reply. */
static int obj_op_start(struct rpc_conn *conn, uint16_t opcode,
			const struct wire_ost_io_req *req, uint8_t body[OBJ_BODY_MAX],
			struct rpc_pending **pend)
{
	struct wire_cursor c;
	*pend = NULL;
	wire_cursor_init_write(&c, body, OBJ_BODY_MAX);
	wire_ost_io_req_encode(&c, req);
	if (!wire_cursor_ok(&c))
		return -EINVAL;
	struct rpc_call_args a = {.opcode = opcode,
				  .flags = RPC_IDEMPOTENT,
				  .body = body,
				  .body_len = (uint32_t)wire_cursor_pos(&c),
				  .timeout_ms = MDS_OSS_TIMEOUT_MS};
	int rc = rpc_start(conn, &a, pend);
	if (rc)
		*pend = NULL;
	return rc;
}

/* Waits for an operation obj_op_start started; returns its status (the reply is dropped). */
static int obj_op_wait(struct rpc_pending *pend)
{
	struct rpc_msg *rep = NULL;
	int rc = rpc_wait(pend, &rep);
	rpc_msg_free(rep);
	return rc;
}

/* One object operation per stripe, all in flight at once. */
static int per_stripe(struct mds *m, uint16_t opcode, const struct nacre_fid *fid,
		      const struct nacre_layout *l, uint64_t new_size)
{
	struct mds_oss_pool *p = m->oss;
	uint32_t n = l->nosts <= NACRE_MAX_STRIPES ? l->nosts : NACRE_MAX_STRIPES;
	struct rpc_pending *pend[NACRE_MAX_STRIPES];
	uint8_t bodies[NACRE_MAX_STRIPES][OBJ_BODY_MAX];
	char fs[NACRE_FID_STR_MAX];
	int first_err = 0;

	for (uint32_t i = 0; i < n; i++) {
		char addr[NACRE_ADDR_MAX + 1];
		int up = 0;
		pend[i] = NULL;
		int rc = mds_targets_addr(m->targets, l->ost_idx[i], addr, &up);
		if (rc) {
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
					      .layout_gen = l->gen,
					      .has_cap = 1};
		req.offset = layout_object_size(l, new_size, i);
		/* the MDS's own capability (client 0: its connections carry no session) */
		mds_cap_mint(m, 0, fid, l->gen, opcode == WIRE_OP_OST_PUNCH ? CAP_PUNCH : CAP_DESTROY,
			     &req.cap);
		rc = obj_op_start(conn, opcode, &req, bodies[i], &pend[i]);
		if (rc && !first_err)
			first_err = rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!pend[i])
			continue;
		int rc = obj_op_wait(pend[i]);
		if (rc) {
			LOG_RATELIMITED(LOG_LVL_WARN, "oss", "%s of %s stripe %u on OST%04x: %s",
					wire_opcode_name(opcode), fid_format(fid, fs, sizeof(fs)),
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
	int rc = per_stripe(m, WIRE_OP_OST_PUNCH, fid, l, new_size);
	return rc ? -EIO : 0;
}

/* ---------------- batched destroy ---------------- */

/* One OST_DESTROY_BATCH: objs[first .. first + n) all on OST ost_idx. */
struct batch {
	size_t first;
	uint32_t n;
	uint32_t ost_idx;
	struct rpc_conn *conn;
	struct wire_cursor body;  /* owned, kept until the reply: a resend sends it again */
	struct rpc_pending *pend; /* NULL when not started */
	int fallback;             /* the OSS predates OST_DESTROY_BATCH */
};

/* By OST, then the caller's order, so a request lists one record's objects together. */
static int cmp_obj(const void *a, const void *b)
{
	const struct mds_oss_obj *x = a, *y = b;
	if (x->ost_idx != y->ost_idx)
		return x->ost_idx < y->ost_idx ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->stripe < y->stripe ? -1 : x->stripe > y->stripe;
}

static void set_rc(struct mds_oss_obj *objs, size_t first, size_t n, int rc)
{
	for (size_t i = 0; i < n; i++)
		objs[first + i].rc = rc;
}

/* Encodes and starts b's request, with a list capability over exactly its objects; on
 * failure sets its objects' rc and leaves pend NULL. */
static void batch_start(struct mds *m, struct mds_oss_obj *objs, struct batch *b)
{
	struct wire_ost_destroy_req req = {.ost_idx = b->ost_idx,
					   .flags = WIRE_OST_DESTROY_CAP,
					   .count = b->n};
	struct wire_cursor list;

	wire_cursor_init_dyn(&list, WIRE_BODY_MAX);
	for (uint32_t i = 0; i < b->n; i++) {
		const struct mds_oss_obj *o = &objs[b->first + i];
		struct wire_ost_obj w = {.fid = o->fid, .stripe_idx = o->stripe, .layout_gen = o->gen};
		wire_ost_obj_put(&list, &w);
	}
	uint32_t life = m->cap_lifetime_s ? m->cap_lifetime_s : MDS_CAP_LIFETIME_DEFAULT_S;
	req.cap.expiry = (uint64_t)time(NULL) + life;
	req.cap.rights = CAP_DESTROY;
	req.cap.stripe = CAP_STRIPE_ALL;
	cap_mint_list(&m->capkey, b->ost_idx, list.buf, wire_cursor_pos(&list), req.cap.rights, 0,
		      req.cap.expiry, req.cap.mac);
	wire_cursor_init_dyn(&b->body, WIRE_BODY_MAX);
	wire_ost_destroy_req_encode(&b->body, &req);
	if (wire_cursor_ok(&list))
		wire_put_bytes(&b->body, list.buf, wire_cursor_pos(&list));
	else
		wire_cursor_fail(&b->body, -EINVAL);
	wire_cursor_fini(&list);
	if (!wire_cursor_ok(&b->body)) {
		set_rc(objs, b->first, b->n, -EINVAL);
		return;
	}
	struct rpc_call_args a = {.opcode = WIRE_OP_OST_DESTROY_BATCH,
				  .flags = RPC_IDEMPOTENT,
				  .body = b->body.buf,
				  .body_len = (uint32_t)wire_cursor_pos(&b->body),
				  .timeout_ms = MDS_OSS_TIMEOUT_MS};
	int rc = rpc_start(b->conn, &a, &b->pend);
	if (rc) {
		b->pend = NULL;
		set_rc(objs, b->first, b->n, rc);
	}
}

/* Waits for b's reply and sets its objects' rc from it; marks b for the per-object path if
 * the OSS does not know the opcode. */
static void batch_finish(struct mds_oss_obj *objs, struct batch *b)
{
	struct rpc_msg *rep = NULL;
	int rc = rpc_wait(b->pend, &rep);
	b->pend = NULL;
	if (rc == -EOPNOTSUPP && rep && rep->body_len == 0) {
		b->fallback = 1;
		rpc_msg_free(rep);
		return;
	}
	set_rc(objs, b->first, b->n, rc);
	if (rc && rep) {
		/* the OSS ran the request: only the objects it lists failed */
		struct wire_ost_destroy_rep r;
		struct wire_ost_destroy_fail f;
		struct wire_cursor c;
		wire_cursor_init_read(&c, rep->body, rep->body_len);
		wire_ost_destroy_rep_decode(&c, &r);
		for (uint32_t i = 0; i < r.nfailed && wire_cursor_ok(&c); i++) {
			wire_ost_destroy_fail_get(&c, &f);
			if (f.index >= b->n)
				wire_cursor_fail(&c, -EPROTO);
		}
		if (wire_cursor_ok(&c) && r.nfailed > 0) {
			set_rc(objs, b->first, b->n, 0);
			wire_cursor_init_read(&c, rep->body, rep->body_len);
			wire_ost_destroy_rep_decode(&c, &r);
			for (uint32_t i = 0; i < r.nfailed; i++) {
				wire_ost_destroy_fail_get(&c, &f);
				objs[b->first + f.index].rc = f.status == -ENOENT ? 0 : f.status;
			}
		}
		/* else (an error before the OSS ran it, or an unreadable list): all failed */
	}
	rpc_msg_free(rep);
	uint32_t failed = 0;
	const struct mds_oss_obj *first = NULL;
	for (uint32_t i = 0; i < b->n; i++)
		if (objs[b->first + i].rc) {
			failed++;
			if (!first)
				first = &objs[b->first + i];
		}
	if (first) {
		char fs[NACRE_FID_STR_MAX];
		LOG_RATELIMITED(LOG_LVL_WARN, "oss",
				"%s to OST%04x at %s: %u of %u objects not destroyed (retried later); "
				"first %s stripe %u: %s",
				wire_opcode_name(WIRE_OP_OST_DESTROY_BATCH), b->ost_idx,
				rpc_conn_addr(b->conn), failed, b->n,
				fid_format(&first->fid, fs, sizeof(fs)), first->stripe,
				nacre_strerror(first->rc));
	}
}

/* OST_DESTROY per object of b, FALLBACK_WINDOW in flight at once: for an OSS that predates
 * OST_DESTROY_BATCH. */
#define FALLBACK_WINDOW 64
static void batch_fallback(struct mds *m, struct mds_oss_obj *objs, struct batch *b)
{
	struct rpc_pending *pend[FALLBACK_WINDOW];
	uint8_t bodies[FALLBACK_WINDOW][OBJ_BODY_MAX];
	char fs[NACRE_FID_STR_MAX];

	LOG_RATELIMITED(LOG_LVL_INFO, "oss",
			"the OSS at %s predates %s: destroying objects of OST%04x one request "
			"each",
			rpc_conn_addr(b->conn), wire_opcode_name(WIRE_OP_OST_DESTROY_BATCH),
			b->ost_idx);
	for (uint32_t w = 0; w < b->n; w += FALLBACK_WINDOW) {
		uint32_t k = b->n - w < FALLBACK_WINDOW ? b->n - w : FALLBACK_WINDOW;
		for (uint32_t i = 0; i < k; i++) {
			struct mds_oss_obj *o = &objs[b->first + w + i];
			struct wire_ost_io_req req = {.ost_idx = o->ost_idx,
						      .fid = o->fid,
						      .stripe_idx = o->stripe,
						      .layout_gen = o->gen,
						      .has_cap = 1};
			mds_cap_mint(m, 0, &o->fid, o->gen, CAP_DESTROY, &req.cap);
			o->rc = obj_op_start(b->conn, WIRE_OP_OST_DESTROY, &req, bodies[i],
					     &pend[i]);
		}
		for (uint32_t i = 0; i < k; i++) {
			struct mds_oss_obj *o = &objs[b->first + w + i];
			if (!pend[i])
				continue;
			int rc = obj_op_wait(pend[i]);
			o->rc = rc == -ENOENT ? 0 : rc;
			if (o->rc)
				LOG_RATELIMITED(LOG_LVL_WARN, "oss", "%s of %s stripe %u on OST%04x: %s",
						wire_opcode_name(WIRE_OP_OST_DESTROY),
						fid_format(&o->fid, fs, sizeof(fs)), o->stripe,
						o->ost_idx, nacre_strerror(o->rc));
		}
	}
}

/* The end of the run of objects on objs[i]'s OST (objs sorted by OST). */
static size_t run_end(const struct mds_oss_obj *objs, size_t n, size_t i)
{
	size_t j = i + 1;
	while (j < n && objs[j].ost_idx == objs[i].ost_idx)
		j++;
	return j;
}

/* Appends the batches of one OST's run objs[first .. first + n) to *bs: -EAGAIN for all
 * of them if the OST is unknown or down. */
static void plan_run(struct mds *m, struct mds_oss_obj *objs, size_t first, size_t n,
		     struct batch *bs, size_t *nb)
{
	char addr[NACRE_ADDR_MAX + 1];
	int up = 0;
	uint32_t ost = objs[first].ost_idx;

	if (mds_targets_addr(m->targets, ost, addr, &up) || !up) {
		set_rc(objs, first, n, -EAGAIN);
		return;
	}
	struct rpc_conn *conn = get_conn(m->oss, addr);
	if (!conn) {
		set_rc(objs, first, n, -ENOMEM);
		return;
	}
	for (size_t off = 0; off < n; off += WIRE_OST_DESTROY_MAX) {
		struct batch *b = &bs[(*nb)++];
		b->first = first + off;
		b->n = (uint32_t)(n - off < WIRE_OST_DESTROY_MAX ? n - off : WIRE_OST_DESTROY_MAX);
		b->ost_idx = ost;
		b->conn = conn;
	}
}

void mds_oss_destroy_batch(struct mds *m, struct mds_oss_obj *objs, size_t n)
{
	if (n == 0)
		return;
	qsort(objs, n, sizeof(*objs), cmp_obj);
	/* requests needed: per run of one OST, one per WIRE_OST_DESTROY_MAX objects */
	size_t max_batches = 0;
	for (size_t i = 0, j; i < n; i = j) {
		j = run_end(objs, n, i);
		max_batches += (j - i + WIRE_OST_DESTROY_MAX - 1) / WIRE_OST_DESTROY_MAX;
	}
	struct batch *bs = calloc(max_batches, sizeof(*bs));
	if (!bs) {
		set_rc(objs, 0, n, -ENOMEM);
		return;
	}
	size_t nb = 0;
	for (size_t i = 0, j; i < n; i = j) {
		j = run_end(objs, n, i);
		plan_run(m, objs, i, j - i, bs, &nb);
	}
	/* every OST's requests in flight at once, then the replies */
	for (size_t k = 0; k < nb; k++)
		batch_start(m, objs, &bs[k]);
	for (size_t k = 0; k < nb; k++)
		if (bs[k].pend)
			batch_finish(objs, &bs[k]);
	for (size_t k = 0; k < nb; k++) {
		if (bs[k].fallback)
			batch_fallback(m, objs, &bs[k]);
		wire_cursor_fini(&bs[k].body);
	}
	free(bs);
}

/* ---------------- key table pushes ---------------- */

void mds_oss_key_update(struct mds *m, const struct keytab_entry *e, int n)
{
	struct nacre_target *osts = NULL;
	int nt = mds_targets_list(m->targets, &osts);
	struct wire_cursor body;

	if (nt <= 0) {
		free(osts);
		return;
	}
	wire_cursor_init_dyn(&body, WIRE_BODY_MAX);
	struct wire_key_update head = {.count = (uint32_t)n};
	wire_key_update_encode(&body, &head);
	for (int i = 0; i < n; i++) {
		struct wire_key_entry w = {.role = (uint32_t)e[i].role, .gen = e[i].gen,
					   .revoked = e[i].revoked ? 1u : 0u};
		str_copy(w.name, e[i].name, sizeof(w.name));
		wire_key_entry_put(&body, &w);
	}
	struct rpc_pending **pend = calloc((size_t)nt, sizeof(*pend));
	if (!pend || !wire_cursor_ok(&body))
		goto out;
	for (int i = 0; i < nt; i++) {
		int dup = 0;
		if (!osts[i].up || !osts[i].addr[0])
			continue;
		for (int j = 0; j < i && !dup; j++)
			dup = osts[j].up && strcmp(osts[j].addr, osts[i].addr) == 0;
		struct rpc_conn *conn = dup ? NULL : get_conn(m->oss, osts[i].addr);
		if (!conn)
			continue;
		struct rpc_call_args a = {.opcode = WIRE_OP_OST_KEY_UPDATE,
					  .flags = RPC_IDEMPOTENT,
					  .body = body.buf,
					  .body_len = (uint32_t)wire_cursor_pos(&body),
					  .timeout_ms = MDS_OSS_KEYS_PUSH_MS};
		if (rpc_start(conn, &a, &pend[i]))
			pend[i] = NULL;
	}
	for (int i = 0; i < nt; i++) {
		struct rpc_msg *rep = NULL;
		if (!pend[i])
			continue;
		int rc = rpc_wait(pend[i], &rep);
		rpc_msg_free(rep);
		if (rc)
			LOG_WARN("keys", "OSS %s did not take the key table update: %s (it pulls "
				 "the table at its next heartbeat)", osts[i].addr, nacre_strerror(rc));
	}
out:
	free(pend);
	free(osts);
	wire_cursor_fini(&body);
}
