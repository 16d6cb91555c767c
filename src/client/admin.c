/* admin.c - administrative calls, each on a connection of its own that carries no session:
 * FAULT_SET to any server (an OSS, or an MDS no client can use, needs no mount), and
 * RECOVERY_STATUS of a mount's MDS (answered while the mount's own requests wait for the
 * MDS's recovery, which is when it matters).
 */
#include <errno.h>
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

NACRE_API int nacre_recovery_status(struct nacre_fs *fs, struct nacre_recovery_status *out)
{
	struct rpc_conn_conf conf = {.addr = fs->addr, .fsname = fs->fsname,
				     .name = fs->client_name, .key = &fs->key,
				     .timeout_ms = fs->timeout_ms};
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

/* Loads key_file (NULL = $NACRE_KEY_FILE) into key; "" or unset leaves it zero. */
static int load_admin_key(const char *key_file, struct nacre_key *key, char *err, size_t err_len)
{
	int rc;

	if (!key_file)
		key_file = getenv("NACRE_KEY_FILE");
	memset(key, 0, sizeof(*key));
	if (!key_file || !key_file[0])
		return 0;
	rc = key_load(key_file, key, err, err_len);
	if (rc && !err[0])
		snprintf(err, err_len, "cannot load cluster key file %s: %s", key_file,
			 nacre_strerror(rc));
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
	rc = load_admin_key(key_file, &key, err, err_len);
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
