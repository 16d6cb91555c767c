/* register.c - registers this OSS's OSTs with the MDS and keeps them alive by heartbeat. */
#include "oss/register.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "oss/store.h"
#include "proto/cursor.h"
#include "proto/rpc.h"
#include "proto/wire.h"

/* Short enough that a stop is quick and a dead MDS does not stall the heartbeat of the
 * other OSTs for long; the MDS counts a target down after 6 s without a heartbeat. */
#define CALL_TIMEOUT_MS 3000
#define CONNECT_TIMEOUT_MS 3000

struct oss_register {
	char mds_addr[NACRE_ADDR_LIST_MAX]; /* as configured: one address or failover ones */
	char fsname[NACRE_FSNAME_MAX + 1];
	char addr[NACRE_ADDR_MAX + 1];
	struct oss_target **targets;
	int ntargets;
	struct rpc_conn *conn;
	struct oss_keys *keys;
	int key_role;      /* KEY_ROLE_* of our key */
	char key_name[KEY_NAME_MAX + 1];

	pthread_t thread;
	int started;
	pthread_mutex_t lock; /* protects stop */
	pthread_cond_t cond;
	int stop;

	/* Touched only by the registering thread (or by oss_register_first before it starts). */
	int first;      /* in oss_register_first: fatal refusals are the caller's to report */
	int connected;  /* a connect succeeded and no transport error since */
	uint64_t gen;   /* rpc_conn_gen when every OST last registered */
	int conn_state; /* last logged: 1 up, 0 unknown, or the -errno of the failure */
	int *registered; /* per target: 1 registered; 0 not (yet) */
	int *tgt_state;  /* per target, last logged: 1 registered, 0 unknown, or the -errno */
	int keys_rc;     /* last KEY_LIST outcome, logged on change */
};

static int is_fatal(int rc)
{
	return rc == -NACRE_EAUTH || rc == -NACRE_EFSNAME || rc == -NACRE_EPROTO_VERSION ||
	       rc == -EACCES || rc == -EKEYREVOKED || rc == -EKEYEXPIRED || rc == -EKEYREJECTED;
}

/* why: the rpc layer's sentence, which names the MDS and the fix. */
static void note_conn(struct oss_register *r, int rc, const char *why)
{
	int state = rc ? rc : 1;
	if (state == r->conn_state)
		return;
	r->conn_state = state;
	if (rc == 0)
		LOG_INFO("register", "connected to MDS %s (%s)", rpc_conn_addr(r->conn),
			 rpc_conn_server_name(r->conn));
	else if (is_fatal(rc) && !r->first) /* the first attempt's caller reports these */
		LOG_ERR("register", "MDS %s refuses this OSS: %s; retrying",
			rpc_conn_addr(r->conn), why);
	else if (!is_fatal(rc))
		LOG_WARN("register", "MDS %s is unreachable (%s); OSTs stay unregistered, "
			 "retrying every %d s", r->mds_addr, why, OSS_HEARTBEAT_MS / 1000);
}

/* A sentence for a refused registration, naming the MDS, the OST and the fix. */
static void refusal_str(const struct oss_register *r, int i, int rc, char *out, size_t len)
{
	const char *name = r->targets[i]->name;
	if (rc == -EADDRINUSE)
		snprintf(out, len, "MDS %s refused %s-%s: that OST is registered from another "
			 "address which is still up (is another nacre-oss serving it?)",
			 rpc_conn_addr(r->conn), r->fsname, name);
	else if (rc == -NACRE_EFSNAME)
		snprintf(out, len, "MDS %s refused %s-%s: it does not serve file system %s; "
			 "check --fsname and --mds", rpc_conn_addr(r->conn), r->fsname, name,
			 r->fsname);
	else if (rc == -NACRE_EAUTH)
		snprintf(out, len, "MDS %s refused %s-%s: cluster key rejected; check "
			 "--key-file", rpc_conn_addr(r->conn), r->fsname, name);
	else if (rc == -EACCES && r->key_role != KEY_ROLE_SERVER)
		snprintf(out, len, "MDS %s refused %s-%s: a %s key cannot register a target (key "
			 "%s); start nacre-oss with the cluster key (--key-file)",
			 rpc_conn_addr(r->conn), r->fsname, name, key_role_name(r->key_role),
			 r->key_name);
	else
		snprintf(out, len, "MDS %s refused %s-%s: %s", rpc_conn_addr(r->conn), r->fsname,
			 name, nacre_strerror(rc));
}

static void note_target(struct oss_register *r, int i, int rc)
{
	int state = rc ? rc : 1;
	if (state == r->tgt_state[i])
		return;
	r->tgt_state[i] = state;
	if (rc == 0) {
		LOG_INFO("register", "registered %s-%s at %s with MDS %s", r->fsname,
			 r->targets[i]->name, r->addr, rpc_conn_addr(r->conn));
	} else if (!(r->first && is_fatal(rc))) {
		char msg[512];
		refusal_str(r, i, rc, msg, sizeof(msg));
		LOG_ERR("register", "%s; retrying", msg);
	}
}

/* lost: the connection went away, so the next registration is news worth a log line. */
static void mark_all_unregistered(struct oss_register *r, int lost)
{
	for (int i = 0; i < r->ntargets; i++) {
		r->registered[i] = 0;
		if (lost && r->tgt_state[i] == 1)
			r->tgt_state[i] = 0;
	}
}

/* Sends one REGISTER or HEARTBEAT. Returns the reply status; *transport is set when the
 * call failed below the protocol (no reply), so the connection must be redone. */
static int send_reg(struct oss_register *r, int i, uint16_t op, int *transport)
{
	struct oss_target *t = r->targets[i];
	struct wire_target_reg m;
	struct wire_cursor c;
	struct rpc_msg *reply = NULL;

	memset(&m, 0, sizeof(m));
	str_copy(m.fsname, r->fsname, sizeof(m.fsname));
	m.type = NACRE_TGT_OST;
	m.index = t->index;
	str_copy(m.addr, r->addr, sizeof(m.addr));
	int rc = oss_store_statfs(t, &m.st);
	if (rc)
		LOG_RATELIMITED(LOG_LVL_WARN, "register", "%s: statfs of %s failed: %s", t->name,
				t->dir, strerror(-rc)); /* still heartbeat, with zero space */

	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_target_reg_encode(&c, &m);
	if (!wire_cursor_ok(&c)) {
		wire_cursor_fini(&c);
		*transport = 0;
		return -EPROTO;
	}
	struct rpc_call_args a = {
		.opcode = op,
		.flags = RPC_IDEMPOTENT,
		.body = c.buf,
		.body_len = (uint32_t)wire_cursor_pos(&c),
		.timeout_ms = CALL_TIMEOUT_MS,
	};
	rc = rpc_call(r->conn, &a, &reply);
	wire_cursor_fini(&c);
	*transport = reply == NULL && rc < 0;
	rpc_msg_free(reply);
	return rc;
}

/* Fetches the MDS's key table (KEY_LIST) into r->keys. Failures are logged on change. */
static void pull_keys(struct oss_register *r)
{
	struct wire_cred_req cr;
	struct wire_cursor c;
	struct rpc_msg *reply = NULL;

	memset(&cr, 0, sizeof(cr));
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_req_encode(&c, &cr);
	struct rpc_call_args a = {
		.opcode = WIRE_OP_MDS_KEY_LIST,
		.flags = RPC_IDEMPOTENT,
		.body = c.buf,
		.body_len = (uint32_t)wire_cursor_pos(&c),
		.timeout_ms = CALL_TIMEOUT_MS,
	};
	int rc = rpc_call(r->conn, &a, &reply);
	wire_cursor_fini(&c);
	if (rc == 0 && reply)
		rc = oss_keys_apply(r->keys, reply->body, reply->body_len);
	rpc_msg_free(reply);
	if (rc && rc != r->keys_rc)
		LOG_WARN("register", "cannot fetch the key table from MDS %s: %s; client keys "
			 "issued since are refused until it answers", rpc_conn_addr(r->conn),
			 nacre_strerror(rc));
	r->keys_rc = rc;
}

/* One pass: connect if needed, register what is not registered, heartbeat the rest.
 * Returns 0, or the first error that concerns this whole OSS (connection or refusal). */
static int round_once(struct oss_register *r, char *err, size_t err_len)
{
	char why[256] = "";

	if (!r->connected) {
		int rc = rpc_conn_connect(r->conn, CONNECT_TIMEOUT_MS, why, sizeof(why));
		if (rc) {
			if (!why[0])
				snprintf(why, sizeof(why), "%s", nacre_strerror(rc));
			note_conn(r, rc, why);
			snprintf(err, err_len, "%s", why);
			return rc;
		}
		r->connected = 1;
		r->gen = rpc_conn_gen(r->conn);
		mark_all_unregistered(r, 0); /* the MDS may have restarted: register again */
		note_conn(r, 0, NULL);
	}

	int first_err = 0, passes = 0;
again:
	for (int i = 0; i < r->ntargets; i++) {
		int transport = 0;
		uint16_t op = r->registered[i] ? WIRE_OP_MDS_TARGET_HEARTBEAT
					       : WIRE_OP_MDS_TARGET_REGISTER;
		int rc = send_reg(r, i, op, &transport);
		if (transport) {
			r->connected = 0;
			mark_all_unregistered(r, 1);
			snprintf(why, sizeof(why), "%s failed: %s", wire_opcode_name(op),
				 nacre_strerror(rc));
			note_conn(r, rc, why);
			snprintf(err, err_len, "MDS %s: %s", rpc_conn_addr(r->conn), why);
			return rc;
		}
		if (op == WIRE_OP_MDS_TARGET_REGISTER) {
			note_target(r, i, rc);
			r->registered[i] = rc == 0;
		} else if (rc) {
			/* The MDS forgot us (restart, or a refusal now): register anew. */
			LOG_RATELIMITED(LOG_LVL_WARN, "register",
					"MDS %s refused the heartbeat of %s: %s; registering again",
					rpc_conn_addr(r->conn), r->targets[i]->name,
					nacre_strerror(rc));
			r->registered[i] = 0;
		}
		if (rc && !first_err) {
			first_err = rc;
			refusal_str(r, i, rc, err, err_len);
		}
	}
	if (!first_err && r->keys)
		pull_keys(r);
	/* The rpc layer reconnected under a call (a restarted MDS, or its failover partner):
	 * register everything again with whichever answers now. */
	if (rpc_conn_gen(r->conn) != r->gen && passes++ == 0) {
		r->gen = rpc_conn_gen(r->conn);
		mark_all_unregistered(r, 1);
		r->conn_state = 0;
		note_conn(r, 0, NULL);
		first_err = 0;
		goto again;
	}
	return first_err;
}

int oss_register_first(struct oss_register *r, char *err, size_t err_len)
{
	r->first = 1;
	int rc = round_once(r, err, err_len);
	r->first = 0;
	/* Unreachable, or a refusal that may pass (EADDRINUSE): the thread keeps trying. */
	return is_fatal(rc) ? rc : 0;
}

static void *register_main(void *arg)
{
	struct oss_register *r = arg;
	char err[512];

	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		struct timespec until;
		time_after_ms(&until, CLOCK_MONOTONIC, OSS_HEARTBEAT_MS);
		while (!r->stop && pthread_cond_timedwait(&r->cond, &r->lock, &until) != ETIMEDOUT)
			;
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->lock);
		round_once(r, err, sizeof(err)); /* outcomes are logged on state changes */
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int oss_register_create(const struct oss_register_conf *conf, struct oss_register **out)
{
	*out = NULL;
	if (conf->ntargets <= 0)
		return -EINVAL;
	struct oss_register *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (str_copy(r->mds_addr, conf->mds_addr, sizeof(r->mds_addr)) >= sizeof(r->mds_addr) ||
	    str_copy(r->fsname, conf->fsname, sizeof(r->fsname)) >= sizeof(r->fsname) ||
	    str_copy(r->addr, conf->addr, sizeof(r->addr)) >= sizeof(r->addr)) {
		free(r);
		return -EINVAL;
	}
	r->targets = conf->targets;
	r->ntargets = conf->ntargets;
	r->keys = conf->keys;
	r->key_role = conf->key ? conf->key->role : KEY_ROLE_SERVER;
	if (conf->key)
		str_copy(r->key_name, conf->key->name, sizeof(r->key_name));
	r->registered = calloc((size_t)conf->ntargets, sizeof(int));
	r->tgt_state = calloc((size_t)conf->ntargets, sizeof(int));
	int rc = -ENOMEM;
	if (!r->registered || !r->tgt_state)
		goto out_free;

	char name[NACRE_NAME_MAX + 1];
	snprintf(name, sizeof(name), "oss@%s", r->addr);
	struct rpc_conn_conf cc = {
		.addr = r->mds_addr,
		.fsname = r->fsname,
		.name = name,
		.key = conf->key,
		.timeout_ms = CALL_TIMEOUT_MS,
		.sec = WIRE_SEC_INTEGRITY, /* between servers: at least integrity */
	};
	rc = rpc_conn_create(&cc, &r->conn);
	if (rc)
		goto out_free;

	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return 0;

out_free:
	free(r->registered);
	free(r->tgt_state);
	free(r);
	return rc;
}

int oss_register_start(struct oss_register *r)
{
	int rc = pthread_create(&r->thread, NULL, register_main, r);
	if (rc)
		return -rc;
	r->started = 1;
	return 0;
}

void oss_register_destroy(struct oss_register *r)
{
	if (!r)
		return;
	if (r->started) {
		pthread_mutex_lock(&r->lock);
		r->stop = 1;
		pthread_cond_signal(&r->cond);
		pthread_mutex_unlock(&r->lock);
		pthread_join(r->thread, NULL);
	}
	rpc_conn_destroy(r->conn);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r->registered);
	free(r->tgt_state);
	free(r);
}
