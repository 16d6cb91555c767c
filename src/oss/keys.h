/* keys.h - the OSS's copy of the MDS's key table, and the roles of OST requests
 * (docs/security.md, "Keys and roles").
 *
 * The table is filled by the registering thread from the MDS's KEY_LIST (before the server
 * serves anyone, then at every heartbeat round) and by the MDS's OST_KEY_UPDATE pushes;
 * every change closes the connections of keys it invalidates. Requests that only the MDS
 * makes (destroy, punch, key updates) need the cluster key. Thread-safe. */
#ifndef NACRE_OSS_KEYS_H
#define NACRE_OSS_KEYS_H

#include <stdint.h>

#include "common/keytab.h"
#include "oss/dispatch.h"
#include "proto/rpc.h"

struct oss_keys {
	struct keytab *tab;        /* owned */
	struct rpc_server *server; /* set before the server runs */
	struct oss_ctx *ctx;       /* for oss_dispatch */
};

/* Returns 0 or -ENOMEM. */
int oss_keys_init(struct oss_keys *k, struct oss_ctx *ctx);
void oss_keys_fini(struct oss_keys *k);
/* The OSS's rpc handler (arg = struct oss_keys *): role checks and OST_KEY_UPDATE, the
 * rest to oss_dispatch. */
int oss_keys_serve(void *arg, const struct rpc_request *req, struct rpc_reply *rep);
/* An rpc_key_check_fn (arg = struct oss_keys *). */
int oss_keys_check(void *arg, int role, const char *name, uint64_t gen);
/* Applies a key_list body (KEY_LIST's reply or OST_KEY_UPDATE's request) and, if the table
 * changed, closes the connections it invalidates. Returns 0 or -EPROTO. */
int oss_keys_apply(struct oss_keys *k, const uint8_t *body, uint32_t len);

#endif
