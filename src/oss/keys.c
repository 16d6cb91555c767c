/* keys.c - the OSS's key table and the roles of OST requests (keys.h). */
#include "oss/keys.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

int oss_keys_init(struct oss_keys *k, struct oss_ctx *ctx)
{
	memset(k, 0, sizeof(*k));
	k->ctx = ctx;
	k->tab = keytab_create();
	return k->tab ? 0 : -ENOMEM;
}

void oss_keys_fini(struct oss_keys *k)
{
	keytab_destroy(k->tab);
	k->tab = NULL;
}

int oss_keys_check(void *arg, int role, const char *name, uint64_t gen)
{
	struct oss_keys *k = arg;

	return keytab_check(k->tab, role, name, gen);
}

int oss_keys_apply(struct oss_keys *k, const uint8_t *body, uint32_t len)
{
	struct wire_key_list head;
	struct wire_cursor c;
	int changed = 0;

	wire_cursor_init_read(&c, body, len);
	wire_key_list_decode(&c, &head);
	for (uint32_t i = 0; i < head.count && wire_cursor_ok(&c); i++) {
		struct wire_key_entry w;
		struct keytab_entry e = {0};
		wire_key_entry_get(&c, &w);
		if (!wire_cursor_ok(&c))
			break;
		str_copy(e.name, w.name, sizeof(e.name));
		e.role = (int)w.role;
		e.gen = w.gen;
		e.revoked = (int)w.revoked;
		int rc = keytab_update(k->tab, &e);
		if (rc < 0)
			LOG_RATELIMITED(LOG_LVL_WARN, "keys", "key table full: %s not kept", e.name);
		if (rc == 1) {
			changed = 1;
			LOG_INFO("keys", "key %s: %s key generation %llu%s", e.name,
				 key_role_name(e.role), (unsigned long long)e.gen,
				 e.revoked ? ", revoked" : "");
		}
	}
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c))
		return -EPROTO;
	if (changed && k->server)
		rpc_server_recheck_keys(k->server);
	return 0;
}

int oss_keys_serve(void *arg, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct oss_keys *k = arg;
	int rc;

	switch (req->hdr->opcode) {
	case WIRE_OP_OST_KEY_UPDATE:
		rc = rpc_require_role(req, RPC_ROLES_SERVER, "update the key table");
		return rc ? rc : oss_keys_apply(k, req->body, req->body_len);
	case WIRE_OP_OST_DESTROY:
	case WIRE_OP_OST_DESTROY_BATCH:
	case WIRE_OP_OST_PUNCH:
		/* only the MDS destroys and truncates objects */
		rc = rpc_require_role(req, RPC_ROLES_SERVER, "destroy or truncate objects");
		if (rc)
			return rc;
		break;
	default:
		break;
	}
	return oss_dispatch(k->ctx, req, rep);
}
