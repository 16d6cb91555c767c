/* peer_auth.c - which key a peer proves, and which roles may do what (rpc.h). */
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "nacre/nacre_errno.h"
#include "proto/rpc.h"

#define SUBSYS "rpc"

int rpc_peer_key(const struct nacre_key *cluster, const struct wire_connect_req *req,
		 struct nacre_key *out)
{
	if (!(req->features & WIRE_FEAT_KEY_ID) || req->key.role == KEY_ROLE_SERVER) {
		*out = *cluster;
		out->role = KEY_ROLE_SERVER;
		out->name[0] = '\0';
		out->gen = 0;
		return 0;
	}
	/* A server whose own key is a client key (a misconfigured node) derives nothing: the
	 * peer's proof then fails as with a wrong cluster key. */
	if (key_derive(cluster, req->key.role, req->key.name, req->key.gen, out) < 0) {
		memset(out, 0, sizeof(*out));
		return -NACRE_EAUTH;
	}
	return 0;
}

int rpc_require_role(const struct rpc_request *req, unsigned roles, const char *what)
{
	if (roles & RPC_ROLE_BIT(req->peer_role))
		return 0;
	LOG_RATELIMITED(LOG_LVL_WARN, SUBSYS,
			"refused %s from %s (%s, %s key %s): a %s key cannot %s",
			wire_opcode_name(req->hdr->opcode), req->peer,
			req->peer_name ? req->peer_name : "?", key_role_name(req->peer_role),
			req->key_name && req->key_name[0] ? req->key_name : "-",
			key_role_name(req->peer_role), what);
	return -EACCES;
}
