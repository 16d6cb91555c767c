/* admin.c - administrative calls, each on a connection of its own that carries no session:
 * FAULT_SET to any server (an OSS, or an MDS no client can use, needs no mount), and
 * RECOVERY_STATUS of a mount's MDS (answered while the mount's own requests wait for the
 * MDS's recovery, which is when it matters), and the key table's KEY_ISSUE, KEY_REVOKE and
 * KEY_LIST.
 */
#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/mdc.h"
#include "common/key.h"
#include "common/util.h"
#include "proto/rpc.h"
#include "proto/wire.h"

#define ADMIN_TIMEOUT_MS 10000
#define ADMIN_CLIENT_NAME "nacre-admin"

/* Connects with conf (role and program name the server in messages), sends one request of
 * opcode with body, and closes. Returns the reply's status (*rep set, the caller frees it,
 * also for a negative status) or a transport error (*rep NULL, a sentence in err). */
static int one_shot_call(const struct rpc_conn_conf *conf, const char *role, const char *program,
			 uint16_t opcode, const struct wire_cursor *body, struct rpc_msg **rep,
			 char *err, size_t err_len)
{
	struct rpc_call_args a = {.opcode = opcode, .body = body->buf,
				  .body_len = (uint32_t)body->pos};
	struct rpc_conn *c = NULL;
	char rpc_err[512] = "";
	int rc;

	*rep = NULL;
	rc = rpc_conn_create(conf, &c);
	if (rc) {
		snprintf(err, err_len, "cannot set up a connection to %s %s: %s", role, conf->addr,
			 nacre_strerror(rc));
		return rc;
	}
	rc = rpc_conn_connect(c, conf->connect_timeout_ms, rpc_err, sizeof(rpc_err));
	if (rc) {
		cl_connect_error(role, conf->addr, program, rc, conf->connect_timeout_ms, rpc_err,
				 err, err_len);
		rpc_conn_destroy(c);
		return rc;
	}
	rc = rpc_call(c, &a, rep);
	if (rc < 0 && !*rep)
		snprintf(err, err_len, "%s %s did not answer: %s", role, conf->addr,
			 nacre_strerror(rc));
	rpc_conn_destroy(c);
	return rc;
}

NACRE_API int nacre_mds_recovering(struct nacre_fs *fs)
{
	return rpc_conn_recovering(fs->mds);
}

NACRE_API int nacre_recovery_status(struct nacre_fs *fs, struct nacre_recovery_status *out)
{
	struct rpc_conn_conf conf = {.addr = fs->addr, .fsname = fs->fsname,
				     .name = fs->client_name, .key = &fs->key,
				     .timeout_ms = fs->timeout_ms, .sec = fs->sec,
				     .sec_exact = fs->sec_exact};
	struct wire_cred_req cr;
	struct wire_recovery_status st;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	char err[512];
	int rc;

	conf.connect_timeout_ms = fs->timeout_ms < ADMIN_TIMEOUT_MS ? fs->timeout_ms
								    : ADMIN_TIMEOUT_MS;
	cl_cred(NULL, &cr.cred);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_req_encode(&c, &cr);
	rc = one_shot_call(&conf, "MDS", "nacre-mds", WIRE_OP_MDS_RECOVERY_STATUS, &c, &m, err,
			   sizeof(err));
	wire_cursor_fini(&c);
	if (rc < 0) {
		if (!m)
			cl_log(fs, CL_LOG_WARN, "recovery status: %s", err);
		rpc_msg_free(m);
		return rc;
	}
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_recovery_status_decode(&c, &st);
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc)
		return rc;
	*out = (struct nacre_recovery_status){
		.state = st.state == WIRE_RECOVERY_STATE_RECOVERING ? NACRE_RECOVERY_RECOVERING
								    : NACRE_RECOVERY_COMPLETE,
		.start = st.start,
		.duration_s = st.duration_s,
		.time_left_s = st.time_left_s,
		.clients_expected = st.clients_expected,
		.clients_connected = st.clients_connected,
		.clients_replayed = st.clients_replayed,
		.clients_completed = st.clients_completed,
		.clients_evicted = st.clients_evicted,
		.replayed = st.replayed,
		.queued = st.queued,
		.last_transno = st.last_transno,
		.last_committed = st.last_committed,
	};
	return 0;
}

NACRE_API int nacre_fault_set(const char *addr, const char *fsname, const char *key_file,
			      const char *spec, char *armed, size_t armed_len, char *err,
			      size_t err_len)
{
	struct rpc_conn_conf conf = {.addr = addr, .fsname = fsname, .name = ADMIN_CLIENT_NAME,
				     .timeout_ms = ADMIN_TIMEOUT_MS,
				     .connect_timeout_ms = ADMIN_TIMEOUT_MS};
	struct wire_fault_set_req *req = NULL;
	struct wire_fault_set_rep *rep = NULL;
	struct nacre_key key;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	char dummy[8];
	int rc;

	if (!err || err_len == 0) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	if (!key_file)
		key_file = getenv("NACRE_KEY_FILE");
	memset(&key, 0, sizeof(key));
	if (key_file && key_file[0]) {
		rc = key_load(key_file, &key, err, err_len);
		if (rc) {
			if (!err[0])
				snprintf(err, err_len, "cannot load cluster key file %s: %s",
					 key_file, nacre_strerror(rc));
			return rc;
		}
	}
	if (strlen(spec) > WIRE_FAULT_SPEC_MAX) {
		snprintf(err, err_len, "the fault spec is longer than %d bytes",
			 WIRE_FAULT_SPEC_MAX);
		return -EINVAL;
	}
	req = calloc(1, sizeof(*req));
	rep = calloc(1, sizeof(*rep));
	if (!req || !rep) {
		rc = -ENOMEM;
		snprintf(err, err_len, "out of memory");
		goto out;
	}
	str_copy(req->spec, spec, sizeof(req->spec));
	conf.key = &key;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_fault_set_req_encode(&c, req);
	rc = one_shot_call(&conf, "server", "nacre-mds or nacre-oss", WIRE_OP_FAULT_SET, &c, &m,
			   err, err_len);
	wire_cursor_fini(&c);
	if (!m)
		goto out;
	if (rc == -EPERM) {
		snprintf(err, err_len,
			 "server %s does not allow fault injection: start it with "
			 "--allow-fault-injection",
			 addr);
		goto out;
	}
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_fault_set_rep_decode(&c, rep);
	if (cl_decode_end(&c) < 0) {
		if (rc == 0)
			rc = -EPROTO;
		snprintf(err, err_len, "server %s: %s", addr, nacre_strerror(rc));
	} else if (rc < 0) {
		snprintf(err, err_len, "server %s: %s", addr,
			 rep->armed[0] ? rep->armed : nacre_strerror(rc));
	} else {
		if (armed && armed_len)
			str_copy(armed, rep->armed, armed_len);
	}
out:
	rpc_msg_free(m);
	free(req);
	free(rep);
	memset(&key, 0, sizeof(key));
	return rc;
}

/* Loads key_file (NULL: $NACRE_KEY_FILE) into key. 0 or an error with a sentence in err. */
static int admin_key(const char *key_file, struct nacre_key *key, char *err, size_t err_len)
{
	int rc;

	if (!key_file)
		key_file = getenv("NACRE_KEY_FILE");
	memset(key, 0, sizeof(*key));
	if (!key_file || !key_file[0]) {
		snprintf(err, err_len, "no key: give --key-file (the cluster key, or an admin "
			 "key) or set NACRE_KEY_FILE");
		return -EINVAL;
	}
	rc = key_load(key_file, key, err, err_len);
	if (rc && !err[0])
		snprintf(err, err_len, "cannot load key file %s: %s", key_file, nacre_strerror(rc));
	return rc;
}

/* One key request (body encoded by the caller) to the MDS; decodes a key_list reply into
 * out (up to max). Returns the entries in the reply, or an error with a sentence. */
static int key_call(const char *addr, const char *fsname, const struct nacre_key *key,
		    uint16_t opcode, const struct wire_cursor *body,
		    struct nacre_key_info *out, int max, char *err, size_t err_len)
{
	struct rpc_conn_conf conf = {.addr = addr, .fsname = fsname, .name = ADMIN_CLIENT_NAME,
				     .key = key, .timeout_ms = ADMIN_TIMEOUT_MS,
				     .connect_timeout_ms = ADMIN_TIMEOUT_MS};
	struct wire_key_list head;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	int rc;

	rc = one_shot_call(&conf, "MDS", "nacre-mds", opcode, body, &m, err, err_len);
	if (rc < 0) {
		if (m && rc == -EACCES)
			snprintf(err, err_len, "MDS %s refused %s: a %s key cannot run admin "
				 "requests; use the cluster key or an admin key", addr,
				 wire_opcode_name(opcode), key_role_name(key->role));
		else if (m && rc == -ENOENT)
			snprintf(err, err_len, "MDS %s: no such key", addr);
		else if (m)
			snprintf(err, err_len, "MDS %s refused %s: %s", addr,
				 wire_opcode_name(opcode), nacre_strerror(rc));
		rpc_msg_free(m);
		return rc;
	}
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_key_list_decode(&c, &head);
	for (uint32_t i = 0; i < head.count && wire_cursor_ok(&c); i++) {
		struct wire_key_entry e;
		wire_key_entry_get(&c, &e);
		if ((int)i < max && out) {
			str_copy(out[i].name, e.name, sizeof(out[i].name));
			out[i].admin = e.role == KEY_ROLE_ADMIN;
			out[i].gen = e.gen;
			out[i].revoked = e.revoked != 0;
		}
	}
	rc = cl_decode_end(&c);
	rpc_msg_free(m);
	if (rc) {
		snprintf(err, err_len, "MDS %s: malformed key table reply", addr);
		return rc;
	}
	return (int)head.count;
}

static int key_name_call(const char *addr, const char *fsname, const struct nacre_key *key,
			 uint16_t opcode, const char *name, int role,
			 struct nacre_key_info *out, char *err, size_t err_len)
{
	struct wire_key_req r;
	struct wire_cursor c;
	int rc;

	memset(&r, 0, sizeof(r));
	cl_cred(NULL, &r.cred);
	r.role = (uint32_t)role;
	str_copy(r.name, name, sizeof(r.name));
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_key_req_encode(&c, &r);
	rc = key_call(addr, fsname, key, opcode, &c, out, 1, err, err_len);
	wire_cursor_fini(&c);
	if (rc == 0) {
		snprintf(err, err_len, "MDS %s: empty answer to %s", addr, wire_opcode_name(opcode));
		return -EPROTO;
	}
	return rc < 0 ? rc : 0;
}

NACRE_API int nacre_key_issue(const char *addr, const char *fsname, const char *key_file,
			      const char *name, int admin, const char *out_file, uint64_t *gen,
			      char *err, size_t err_len)
{
	struct nacre_key cluster, derived;
	struct nacre_key_info info;
	char dummy[8];
	int rc;

	if (!err || err_len == 0) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	if (!key_name_valid(name)) {
		snprintf(err, err_len, "bad key name '%s': 1 to %d letters, digits or ._-@:",
			 name ? name : "", KEY_NAME_MAX);
		return -EINVAL;
	}
	if (!out_file || !out_file[0]) {
		snprintf(err, err_len, "no output file for the key");
		return -EINVAL;
	}
	if (access(out_file, F_OK) == 0) {
		snprintf(err, err_len, "%s exists: remove it or choose another file (a key file "
			 "is never overwritten)", out_file);
		return -EEXIST;
	}
	rc = admin_key(key_file, &cluster, err, err_len);
	if (rc)
		return rc;
	if (cluster.role != KEY_ROLE_SERVER) {
		snprintf(err, err_len, "issuing a key needs the cluster key (keys are derived from "
			 "it); the key file given is the %s key %s", key_role_name(cluster.role),
			 cluster.name);
		key_wipe(&cluster);
		return -EINVAL;
	}
	rc = key_name_call(addr, fsname, &cluster, WIRE_OP_MDS_KEY_ISSUE, name,
			   admin ? KEY_ROLE_ADMIN : KEY_ROLE_CLIENT, &info, err, err_len);
	if (rc == 0)
		rc = key_derive(&cluster, admin ? KEY_ROLE_ADMIN : KEY_ROLE_CLIENT, name, info.gen,
				&derived);
	if (rc == 0) {
		rc = key_write(out_file, &derived);
		if (rc)
			snprintf(err, err_len, "cannot write key file %s: %s", out_file,
				 nacre_strerror(rc));
		else if (gen)
			*gen = info.gen;
	}
	key_wipe(&derived);
	key_wipe(&cluster);
	return rc;
}

NACRE_API int nacre_key_revoke(const char *addr, const char *fsname, const char *key_file,
			       const char *name, char *err, size_t err_len)
{
	struct nacre_key key;
	struct nacre_key_info info;
	char dummy[8];
	int rc;

	if (!err || err_len == 0) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	if (!key_name_valid(name)) {
		snprintf(err, err_len, "bad key name '%s'", name ? name : "");
		return -EINVAL;
	}
	rc = admin_key(key_file, &key, err, err_len);
	if (rc)
		return rc;
	rc = key_name_call(addr, fsname, &key, WIRE_OP_MDS_KEY_REVOKE, name, 0, &info, err,
			   err_len);
	if (rc == -ENOENT)
		snprintf(err, err_len, "MDS %s: no key %s was ever issued", addr, name);
	key_wipe(&key);
	return rc;
}

NACRE_API int nacre_key_list(const char *addr, const char *fsname, const char *key_file,
			     struct nacre_key_info *out, int max, char *err, size_t err_len)
{
	struct nacre_key key;
	struct wire_cred_req cr;
	struct wire_cursor c;
	char dummy[8];
	int rc;

	if (!err || err_len == 0) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	rc = admin_key(key_file, &key, err, err_len);
	if (rc)
		return rc;
	cl_cred(NULL, &cr.cred);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_req_encode(&c, &cr);
	rc = key_call(addr, fsname, &key, WIRE_OP_MDS_KEY_LIST, &c, out, max, err, err_len);
	wire_cursor_fini(&c);
	key_wipe(&key);
	return rc;
}

NACRE_API int nacre_nodemap(const char *addr, const char *fsname, const char *key_file, int cmd,
			    const char *name, const char *arg1, const char *arg2, char **text,
			    char *err, size_t err_len)
{
	struct rpc_conn_conf conf = {.addr = addr, .fsname = fsname, .name = ADMIN_CLIENT_NAME,
				     .timeout_ms = ADMIN_TIMEOUT_MS,
				     .connect_timeout_ms = ADMIN_TIMEOUT_MS};
	struct wire_nodemap_req *req = NULL;
	struct wire_nodemap_rep rep;
	struct nacre_key key;
	struct wire_cursor c;
	struct rpc_msg *m = NULL;
	char dummy[8];
	int rc;

	if (!err || err_len == 0) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	if (text)
		*text = NULL;
	if (cmd < NACRE_NODEMAP_ADD || cmd > NACRE_NODEMAP_TEST) {
		snprintf(err, err_len, "unknown nodemap command %d", cmd);
		return -EINVAL;
	}
	if ((name && strlen(name) > NACRE_NAME_MAX) || (arg1 && strlen(arg1) > NACRE_NAME_MAX) ||
	    (arg2 && strlen(arg2) > WIRE_NODEMAP_VALUE_MAX)) {
		snprintf(err, err_len, "a nodemap argument is too long");
		return -ENAMETOOLONG;
	}
	rc = admin_key(key_file, &key, err, err_len);
	if (rc)
		return rc;
	req = calloc(1, sizeof(*req));
	if (!req) {
		snprintf(err, err_len, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	cl_cred(NULL, &req->cred);
	req->cmd = (uint32_t)cmd; /* NACRE_NODEMAP_* are WIRE_NODEMAP_* */
	str_copy(req->name, name ? name : "", sizeof(req->name));
	str_copy(req->key, arg1 ? arg1 : "", sizeof(req->key));
	str_copy(req->value, arg2 ? arg2 : "", sizeof(req->value));
	conf.key = &key;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_nodemap_req_encode(&c, req);
	rc = one_shot_call(&conf, "MDS", "nacre-mds", WIRE_OP_MDS_NODEMAP, &c, &m, err, err_len);
	wire_cursor_fini(&c);
	if (!m)
		goto out;
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_nodemap_rep_decode(&c, &rep);
	if (cl_decode_end(&c) < 0) {
		if (rc == 0)
			rc = -EPROTO;
		snprintf(err, err_len, "MDS %s: %s", addr,
			 rc == -EOPNOTSUPP ? "this MDS has no nodemaps" : nacre_strerror(rc));
	} else if (rc < 0) {
		if (rep.text_len)
			snprintf(err, err_len, "MDS %s: %.*s", addr, (int)rep.text_len, rep.text);
		else
			snprintf(err, err_len, "MDS %s: %s", addr, nacre_strerror(rc));
	} else if (text) {
		*text = strndup(rep.text ? rep.text : "", rep.text_len);
		if (!*text) {
			snprintf(err, err_len, "out of memory");
			rc = -ENOMEM;
		}
	}
out:
	rpc_msg_free(m);
	free(req);
	memset(&key, 0, sizeof(key));
	return rc;
}
