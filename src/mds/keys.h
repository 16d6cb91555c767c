/* keys.h - the MDS's key table: which client and admin keys are issued, at which
 * generation, and which are revoked (docs/security.md, "Keys and roles").
 *
 * The table lives in the database (db.h "keys") and in memory (common/keytab.h), where the
 * transport checks every handshake of a client or admin key (mds_keys_check). KEY_ISSUE
 * bumps a name's generation, KEY_REVOKE marks it revoked; both commit, then push the
 * entry to every OSS that is up (OST_KEY_UPDATE, all at once, waiting at most
 * MDS_OSS_KEYS_PUSH_MS, oss_pool.h) and close the connections the change invalidates, before they answer.
 * OSSes pull the whole table with KEY_LIST when they register. Thread-safe. */
#ifndef NACRE_MDS_KEYS_H
#define NACRE_MDS_KEYS_H

#include <stdint.h>

#include "mds/mds.h"
#include "proto/rpc.h"

struct mds_keys;

/* Loads the table from m->db. Returns 0 or -ENOMEM/-EIO; *out is the caller's. */
int mds_keys_create(struct mds *m, struct mds_keys **out);
void mds_keys_destroy(struct mds_keys *k); /* NULL is fine */
/* An rpc_key_check_fn; arg is the struct mds. Never blocks. */
int mds_keys_check(void *arg, int role, const char *name, uint64_t gen);
/* KEY_ISSUE, KEY_REVOKE and KEY_LIST (admin and server keys only). */
int mds_keys_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep);

#endif
