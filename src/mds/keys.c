/* keys.c - the MDS's key table: issue, revoke, list, and the check of every handshake. */
#include "mds/keys.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/keytab.h"
#include "common/log.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/oss_pool.h"
#include "mds/writer.h"

struct mds_keys {
	struct keytab *tab;
	pthread_mutex_t change_lock; /* one issue or revoke at a time (read, bump, write) */
};

static int load_one(void *arg, const struct keytab_entry *e)
{
	int rc = keytab_update(arg, e);
	return rc < 0 ? rc : 0;
}

int mds_keys_create(struct mds *m, struct mds_keys **out)
{
	struct mds_keys *k = calloc(1, sizeof(*k));
	struct mds_txn *txn;
	int rc;

	if (!k)
		return -ENOMEM;
	k->tab = keytab_create();
	if (!k->tab) {
		free(k);
		return -ENOMEM;
	}
	pthread_mutex_init(&k->change_lock, NULL);
	rc = mds_txn_begin_read(m->db, &txn);
	if (!rc) {
		rc = mds_db_key_iter(txn, load_one, k->tab);
		mds_txn_abort(txn);
	}
	if (rc) {
		mds_keys_destroy(k);
		return rc;
	}
	*out = k;
	return 0;
}

void mds_keys_destroy(struct mds_keys *k)
{
	if (!k)
		return;
	keytab_destroy(k->tab);
	pthread_mutex_destroy(&k->change_lock);
	free(k);
}

int mds_keys_check(void *arg, int role, const char *name, uint64_t gen)
{
	struct mds *m = arg;

	if (!m->keys)
		return -EKEYREJECTED;
	return keytab_check(m->keys->tab, role, name, gen);
}

static int put_op(struct mds_txn *txn, void *arg)
{
	return mds_db_key_put(txn, arg);
}

static void entry_to_wire(const struct keytab_entry *e, struct wire_key_entry *w)
{
	memset(w, 0, sizeof(*w));
	str_copy(w->name, e->name, sizeof(w->name));
	w->role = (uint32_t)e->role;
	w->gen = e->gen;
	w->revoked = e->revoked ? 1 : 0;
}

/* Commits e, applies it here, closes what it invalidates, tells the OSSes. */
static int apply(struct mds *m, const struct keytab_entry *e)
{
	struct keytab_entry copy = *e;
	int rc = mds_writer_submit(m->writer, put_op, &copy);

	if (rc)
		return rc;
	rc = keytab_update(m->keys->tab, e);
	if (rc < 0)
		return rc;
	if (m->server)
		rpc_server_recheck_keys(m->server);
	if (m->oss)
		mds_oss_key_update(m, e, 1);
	return 0;
}

static int do_issue(struct mds *m, const struct rpc_request *req, const struct wire_key_req *r,
		    struct keytab_entry *out)
{
	struct keytab_entry cur;
	int rc;

	if (r->role != KEY_ROLE_CLIENT && r->role != KEY_ROLE_ADMIN)
		return -EINVAL;
	pthread_mutex_lock(&m->keys->change_lock);
	memset(out, 0, sizeof(*out));
	str_copy(out->name, r->name, sizeof(out->name));
	out->role = (int)r->role;
	out->gen = keytab_get(m->keys->tab, r->name, &cur) == 0 ? cur.gen + 1 : 1;
	rc = apply(m, out);
	pthread_mutex_unlock(&m->keys->change_lock);
	if (!rc)
		LOG_INFO("keys", "%s (%s key %s) issued %s key %s generation %llu", req->peer,
			 key_role_name(req->peer_role), req->key_name[0] ? req->key_name : "-",
			 key_role_name(out->role), out->name, (unsigned long long)out->gen);
	return rc;
}

static int do_revoke(struct mds *m, const struct rpc_request *req, const struct wire_key_req *r,
		     struct keytab_entry *out)
{
	int rc;

	pthread_mutex_lock(&m->keys->change_lock);
	rc = keytab_get(m->keys->tab, r->name, out);
	if (!rc) {
		out->revoked = 1;
		rc = apply(m, out);
	}
	pthread_mutex_unlock(&m->keys->change_lock);
	if (!rc)
		LOG_INFO("keys", "%s (%s key %s) revoked %s key %s", req->peer,
			 key_role_name(req->peer_role), req->key_name[0] ? req->key_name : "-",
			 key_role_name(out->role), out->name);
	return rc;
}

static int do_list(struct mds *m, struct rpc_reply *rep)
{
	struct keytab_entry *all = calloc(KEYTAB_MAX, sizeof(*all));
	int n;

	if (!all)
		return -ENOMEM;
	n = keytab_list(m->keys->tab, all, KEYTAB_MAX);
	if (n > KEYTAB_MAX)
		n = KEYTAB_MAX;
	struct wire_key_list head = {.count = (uint32_t)n};
	wire_key_list_encode(&rep->body, &head);
	for (int i = 0; i < n; i++) {
		struct wire_key_entry w;
		entry_to_wire(&all[i], &w);
		wire_key_entry_put(&rep->body, &w);
	}
	free(all);
	return wire_cursor_ok(&rep->body) ? 0 : -E2BIG;
}

int mds_keys_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	uint16_t op = req->hdr->opcode;
	struct keytab_entry e;
	struct wire_key_req r;
	struct wire_cursor c;
	int rc;

	rc = rpc_require_role(req, RPC_ROLES_ADMIN, "run admin requests");
	if (rc)
		return rc;
	if (!m->keys)
		return -EOPNOTSUPP;
	wire_cursor_init_read(&c, req->body, req->body_len);
	if (op == WIRE_OP_MDS_KEY_LIST) {
		struct wire_cred_req cr;
		wire_cred_req_decode(&c, &cr);
		if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
			return -EPROTO;
		return do_list(m, rep);
	}
	wire_key_req_decode(&c, &r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		return -EPROTO;
	rc = op == WIRE_OP_MDS_KEY_ISSUE ? do_issue(m, req, &r, &e) : do_revoke(m, req, &r, &e);
	if (rc)
		return rc;
	struct wire_key_list head = {.count = 1};
	struct wire_key_entry w;
	entry_to_wire(&e, &w);
	wire_key_list_encode(&rep->body, &head);
	wire_key_entry_put(&rep->body, &w);
	return 0;
}
