/* register.h - the OSS's side of the cluster registry: TARGET_REGISTER for each OST, then a
 * TARGET_HEARTBEAT with its statfs every OSS_HEARTBEAT_MS, on one rpc_conn to the MDS.
 * While the MDS is unreachable the thread keeps retrying; it re-registers every OST after a
 * reconnect. Log lines are written once per state change, not per attempt. */
#ifndef NACRE_OSS_REGISTER_H
#define NACRE_OSS_REGISTER_H

#include <stddef.h>

#include "common/key.h"
#include "oss/keys.h"
#include "oss/target.h"

#define OSS_HEARTBEAT_MS 2000

struct oss_register_conf {
	const char *mds_addr; /* "host:port", or failover addresses "host:port,host:port" tried
			       * in turn: every OST registers again with whichever answers */
	const char *fsname;
	const char *addr;     /* "host:port" clients must use to reach this OSS */
	const struct nacre_key *key;
	struct oss_keys *keys;       /* filled from the MDS's KEY_LIST; borrowed; may be NULL */
	struct oss_target **targets; /* borrowed until oss_register_destroy */
	int ntargets;
};

struct oss_register;

/* Creates the registrar (no network yet). Strings in conf are copied; key and targets are
 * borrowed. Returns 0 or -ENOMEM/-EINVAL. */
int oss_register_create(const struct oss_register_conf *conf, struct oss_register **out);
/* Makes the first registration attempt now, on the caller's thread. Returns 0 when every OST
 * registered or when the MDS could not be reached or refused in a way that may pass (the
 * thread keeps trying); returns -NACRE_EAUTH, -NACRE_EFSNAME, -NACRE_EPROTO_VERSION, -EACCES
 * (our key is no server key) or a key error (-EKEYREVOKED...) when the MDS refuses this
 * OSS outright, with a sentence naming the MDS and the fix in err. On success the key
 * table (conf.keys) holds the MDS's. */
int oss_register_first(struct oss_register *r, char *err, size_t err_len);
/* Starts the heartbeat thread. Returns 0 or -errno. */
int oss_register_start(struct oss_register *r);
/* Stops the thread (waiting for a call in flight, at most its timeout) and frees r. NULL is
 * fine. */
void oss_register_destroy(struct oss_register *r);

#endif
