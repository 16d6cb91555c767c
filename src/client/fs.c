/* fs.c - mounting and unmounting a file system: the mount spec, the MDS connection, the
 * mount root, the OST table and the data path's tunables.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/caps.h"
#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/files.h"
#include "client/groups.h"
#include "client/lock.h"
#include "client/mdc.h"
#include "client/notify.h"
#include "client/oss.h"
#include "client/recover.h"
#include "client/wbj.h"
#include "common/key.h"
#include "common/net.h"
#include "common/util.h"
#include "proto/rpc.h"
#include "proto/sec.h"
#include "proto/wire.h"

#define CONNECT_TIMEOUT_DEFAULT_MS 10000
#define TIMEOUT_DEFAULT_MS 30000
#define RECOVERY_TIMEOUT_DEFAULT_MS 300000
#define UMOUNT_TIMEOUT_MS 2000 /* a clean unmount tells the MDS, if it answers soon */
#define CL_PING_MS 2000        /* an idle mount checks its MDS this often */

static void set_err(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (!err || err_len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
}

/* The name the servers show for us: the caller's, else the host name; a name on the wire
 * may not hold '/'. */
static void pick_client_name(const char *want, char *out, size_t len)
{
	char host[256];

	if (!want || !want[0])
		want = getenv("NACRE_CLIENT_NAME");
	if (!want || !want[0]) {
		if (gethostname(host, sizeof(host)) != 0 || !host[0])
			snprintf(host, sizeof(host), "client");
		host[sizeof(host) - 1] = '\0';
		want = host;
	}
	snprintf(out, len, "%s", want);
	for (char *p = out; *p; p++)
		if (*p == '/')
			*p = '_';
}

/* Asks the MDS for this client's nodemap rule: a fileset makes its directory the mount
 * root; a rule that denies the client fails the mount, naming it. An MDS without
 * nodemaps answers -EOPNOTSUPP: the root stays the file system's. */
static int ask_nodemap(struct nacre_fs *fs, char *err, size_t err_len)
{
	struct wire_nodemap_req *req = calloc(1, sizeof(*req));
	struct wire_nodemap_rep rep;
	struct rpc_call_args a = {.opcode = WIRE_OP_MDS_NODEMAP, .flags = RPC_IDEMPOTENT};
	struct rpc_msg *m = NULL;
	struct wire_cursor c;
	int rc;

	if (!req) {
		set_err(err, err_len, "out of memory");
		return -ENOMEM;
	}
	cl_cred(NULL, &req->cred);
	req->cmd = WIRE_NODEMAP_SELF;
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_nodemap_req_encode(&c, req);
	free(req);
	a.body = c.buf;
	a.body_len = (uint32_t)c.pos;
	rc = rpc_call(fs->mds, &a, &m);
	wire_cursor_fini(&c);
	if (!m) {
		set_err(err, err_len, "MDS %s did not answer: %s", fs->addr, nacre_strerror(rc));
		return rc;
	}
	if (rc == -EOPNOTSUPP) {
		rpc_msg_free(m);
		return 0;
	}
	wire_cursor_init_read(&c, m->body, m->body_len);
	wire_nodemap_rep_decode(&c, &rep);
	if (cl_decode_end(&c) < 0 && rc == 0)
		rc = -EPROTO;
	if (rc == 0) {
		fs->root = rep.root;
	} else {
		char why[512];
		snprintf(why, sizeof(why), "%.*s", (int)rep.text_len, rep.text ? rep.text : "");
		set_err(err, err_len, "MDS %s refused the mount of %s: %s", fs->addr, fs->fsname,
			why[0] ? why : nacre_strerror(rc));
	}
	rpc_msg_free(m);
	return rc;
}

/* Walks fs->subdir from the file system root and makes its directory the mount root. */
static int resolve_subdir(struct nacre_fs *fs, char *err, size_t err_len)
{
	struct nacre_attr attr;
	const char *p = fs->subdir;
	char name[NACRE_NAME_MAX + 1];
	int rc;

	while (*p) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - c);
		if (n == 0)
			continue;
		memcpy(name, c, n); /* spec.c limits a component to NACRE_NAME_MAX */
		name[n] = '\0';
		rc = nacre_lookup(fs, NULL, &fs->root, name, &attr);
		if (rc == -ENOENT) {
			set_err(err, err_len, "no such directory %.*s on %s", (int)(p - fs->subdir),
				fs->subdir, fs->fsname);
			return rc;
		}
		if (rc) {
			set_err(err, err_len, "cannot look up %.*s on %s (MDS %s): %s",
				(int)(p - fs->subdir), fs->subdir, fs->fsname, fs->addr,
				nacre_strerror(rc));
			return rc;
		}
		if (!S_ISDIR(attr.mode)) {
			set_err(err, err_len, "%.*s on %s is not a directory", (int)(p - fs->subdir),
				fs->subdir, fs->fsname);
			return -ENOTDIR;
		}
		fs->root = attr.fid;
	}
	return 0;
}

/* The data path tunables of opts, defaulted and clamped (see nacre.h). */
static void set_tunables(struct nacre_fs *fs, const struct nacre_mount_opts *opts)
{
	uint64_t rpc = opts->max_rpc_size ? opts->max_rpc_size : CL_RPC_SIZE_DEFAULT;
	uint64_t mib = 1024 * 1024;

	rpc -= rpc % CL_RPC_SIZE_MIN;
	if (rpc < CL_RPC_SIZE_MIN)
		rpc = CL_RPC_SIZE_MIN;
	if (rpc > WIRE_BULK_MAX)
		rpc = WIRE_BULK_MAX;
	fs->rpc_max = (uint32_t)rpc;
	fs->rpc_cap = (uint32_t)rpc;
	if (opts->max_dirty_mb < 0)
		fs->dirty_max = 0;
	else
		fs->dirty_max = (uint64_t)(opts->max_dirty_mb ? opts->max_dirty_mb
							  : CL_DIRTY_MB_DEFAULT) * mib;
	fs->file_dirty_max = fs->dirty_max / 4;
	if (fs->file_dirty_max > CL_FILE_DIRTY_MB_MAX * mib)
		fs->file_dirty_max = CL_FILE_DIRTY_MB_MAX * mib;
	if (fs->dirty_max > 0 && fs->file_dirty_max < rpc)
		fs->file_dirty_max = rpc;
	fs->ra_mb = opts->readahead_max_mb < 0 ? 0
		    : (uint64_t)(opts->readahead_max_mb ? opts->readahead_max_mb : CL_RA_MB_DEFAULT);
	fs->ra_max = fs->ra_mb * mib;
	if (fs->ra_max > 0 && fs->ra_max < rpc)
		fs->ra_max = rpc;
}

/* A session id: random, with the top bit set (the MDS tells sessions from connections by
 * it). */
static uint64_t new_client_id(const struct nacre_fs *fs)
{
	uint64_t id;

	if (key_random(&id, sizeof(id)) < 0)
		id = (uint64_t)(uintptr_t)fs * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	return id | (1ull << 63);
}

/* Pings the MDS while the mount is idle (a busy mount's calls do that job): a restarted
 * MDS waits for its clients to come back, and an idle one would not notice otherwise. */
/* Renews the object capabilities of open files that reached half their lifetime (caps.h). */
static void renew_caps(struct nacre_fs *fs)
{
	struct nacre_file **files = NULL;
	int n = 0;

	if (cl_files_pin(fs, &files, &n))
		return;
	for (int i = 0; i < n; i++)
		cl_cap_renew_due(files[i]);
	cl_files_unpin(fs, files, n);
}

static void *pinger_main(void *arg)
{
	struct nacre_fs *fs = arg;

	pthread_mutex_lock(&fs->ping_lock);
	while (!fs->ping_stop) {
		struct timespec ts;
		time_after_ms(&ts, CLOCK_REALTIME, CL_PING_MS);
		pthread_cond_timedwait(&fs->ping_cond, &fs->ping_lock, &ts);
		if (fs->ping_stop)
			break;
		pthread_mutex_unlock(&fs->ping_lock);
		struct rpc_call_args a = {.opcode = WIRE_OP_PING, .flags = RPC_IDEMPOTENT,
					  .timeout_ms = CL_PING_MS};
		struct rpc_msg *m = NULL;
		rpc_call(fs->mds, &a, &m); /* the answer does not matter: reaching it does */
		rpc_msg_free(m);
		renew_caps(fs); /* open files' capabilities, before they expire */
		pthread_mutex_lock(&fs->ping_lock);
	}
	pthread_mutex_unlock(&fs->ping_lock);
	return NULL;
}

static void pinger_stop(struct nacre_fs *fs)
{
	if (!fs->pinger_started)
		return;
	pthread_mutex_lock(&fs->ping_lock);
	fs->ping_stop = 1;
	pthread_cond_signal(&fs->ping_cond);
	pthread_mutex_unlock(&fs->ping_lock);
	pthread_join(fs->pinger, NULL);
	fs->pinger_started = 0;
}

static void fs_free(struct nacre_fs *fs)
{
	cl_notify_fini(fs);
	cl_wbq_fini(fs);
	cl_wbj_close(fs); /* after the last flush: what it answered goes */
	pinger_stop(fs);
	cl_pool_fini(&fs->pool);
	rpc_conn_destroy(fs->mds);
	cl_oss_fini(&fs->oss);
	cl_locks_fini(fs);
	cl_groups_fini(fs);
	cl_fidseq_fini(&fs->fidseq);
	cl_lease_fini(fs);
	pthread_mutex_destroy(&fs->files_lock);
	pthread_cond_destroy(&fs->files_cond);
	pthread_mutex_destroy(&fs->ping_lock);
	pthread_cond_destroy(&fs->ping_cond);
	explicit_bzero(&fs->key, sizeof(fs->key));
	free(fs);
}

/* The first connection to the MDS. A reset during the handshake is a server shedding
 * un-authenticated connections (a flood, its descriptor limit): try again, for up to
 * timeout_ms in all, as a reconnect would. */
static int connect_mds(struct nacre_fs *fs, int timeout_ms, char *err, size_t err_len)
{
	int64_t deadline = net_now_ms() + timeout_ms, pause_ms = 20;
	int rc;

	for (;;) {
		rc = rpc_conn_connect(fs->mds, timeout_ms, err, err_len);
		if (rc != -ECONNRESET && rc != -ECONNABORTED && rc != -EPIPE)
			return rc;
		if (net_now_ms() + pause_ms >= deadline)
			return rc;
		struct timespec ts = {0, pause_ms * 1000000};
		nanosleep(&ts, NULL);
		pause_ms = pause_ms < 320 ? pause_ms * 2 : pause_ms;
	}
}

NACRE_API int nacre_fs_mount(const char *spec, const struct nacre_mount_opts *opts,
			     struct nacre_fs **out, char *err, size_t err_len)
{
	return cl_fs_mount(spec, opts, 0, 0, out, err, err_len);
}

int cl_fs_mount(const char *spec, const struct nacre_mount_opts *opts, uint64_t client_id,
		uint64_t first_xid, struct nacre_fs **out, char *err, size_t err_len)
{
	static const struct nacre_mount_opts no_opts;
	struct rpc_conn_conf conf;
	struct nacre_fs *fs;
	const char *key_file;
	char rpc_err[512] = "";
	int ct, rc;

	if (err && err_len > 0)
		err[0] = '\0';
	if (!out) {
		set_err(err, err_len, "nacre_fs_mount: no place for the result");
		return -EINVAL;
	}
	*out = NULL;
	if (!opts)
		opts = &no_opts;
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		set_err(err, err_len, "out of memory");
		return -ENOMEM;
	}
	cl_oss_init(&fs->oss);
	pthread_mutex_init(&fs->files_lock, NULL);
	pthread_cond_init(&fs->files_cond, NULL);
	cl_locks_init(fs);
	cl_groups_init(fs);
	cl_notify_init(fs);
	cl_fidseq_init(&fs->fidseq);
	cl_lease_init(fs);
	cl_wbq_init(fs);
	pthread_mutex_init(&fs->ping_lock, NULL);
	pthread_cond_init(&fs->ping_cond, NULL);
	set_tunables(fs, opts);
	rc = cl_pool_init(&fs->pool, opts->max_rpcs_in_flight > 0 ? opts->max_rpcs_in_flight
								  : CL_RPCS_IN_FLIGHT_DEFAULT,
			  fs->rpc_max);
	if (rc) {
		set_err(err, err_len, "out of memory");
		goto out_free;
	}
	fs->log_fn = opts->log_fn;
	fs->log_arg = opts->log_arg;
	fs->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : TIMEOUT_DEFAULT_MS;
	fs->recovery_timeout_ms = opts->recovery_timeout_ms > 0 ? opts->recovery_timeout_ms
								: RECOVERY_TIMEOUT_DEFAULT_MS;
	ct = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : CONNECT_TIMEOUT_DEFAULT_MS;
	if (ct > fs->timeout_ms)
		ct = fs->timeout_ms; /* a short per-request limit shortens the connect too */
	fs->client_id = client_id ? client_id : new_client_id(fs);
	fs->root.seq = NACRE_ROOT_SEQ;
	fs->root.oid = NACRE_ROOT_OID;
	pick_client_name(opts->client_name, fs->client_name, sizeof(fs->client_name));

	rc = nacre_parse_spec(spec, fs->addr, sizeof(fs->addr), fs->fsname, sizeof(fs->fsname),
			      fs->subdir, sizeof(fs->subdir), err, err_len);
	if (rc)
		goto out_free;
	if (opts->sec) {
		rc = sec_flavour_parse(opts->sec, &fs->sec);
		if (rc) {
			set_err(err, err_len,
				"unknown wire security flavour sec=%s (use null, integrity or "
				"privacy)", opts->sec);
			goto out_free;
		}
		fs->sec_exact = 1;
	}

	key_file = opts->key_file ? opts->key_file : getenv("NACRE_KEY_FILE");
	if (key_file && key_file[0]) {
		rc = key_load(key_file, &fs->key, err, err_len);
		if (rc) {
			if (!err || err_len == 0 || !err[0])
				set_err(err, err_len, "cannot load cluster key file %s: %s",
					key_file, nacre_strerror(rc));
			goto out_free;
		}
	}

	memset(&conf, 0, sizeof(conf));
	conf.addr = fs->addr;
	conf.fsname = fs->fsname;
	conf.name = fs->client_name;
	conf.key = &fs->key;
	conf.timeout_ms = fs->timeout_ms;
	conf.recovery_timeout_ms = fs->recovery_timeout_ms;
	conf.connect_timeout_ms = ct;
	conf.client_id = fs->client_id;
	conf.first_xid = first_xid;
	conf.recover = cl_recover;
	conf.recover_arg = fs;
	conf.sec = fs->sec;
	conf.sec_exact = fs->sec_exact;
	rc = rpc_conn_create(&conf, &fs->mds);
	if (rc) {
		set_err(err, err_len, "cannot set up a connection to MDS %s: %s", fs->addr,
			nacre_strerror(rc));
		goto out_free;
	}
	rc = connect_mds(fs, ct, rpc_err, sizeof(rpc_err));
	if (rc) {
		cl_connect_error("MDS", fs->addr, "nacre-mds", rc, ct, rpc_err, err, err_len);
		goto out_free;
	}
	/* A flavour the MDS raised us to (its minimum for this client: a nodemap rule) is what
	 * the file data needs too: the OSSes know no nodemaps, so ask them for it. */
	if (!fs->sec_exact && rpc_conn_sec(fs->mds) > fs->sec)
		fs->sec = rpc_conn_sec(fs->mds);
	rc = ask_nodemap(fs, err, err_len);
	if (rc)
		goto out_free;
	rc = resolve_subdir(fs, err, err_len);
	if (rc)
		goto out_free;
	rc = cl_oss_refresh(fs);
	if (rc) {
		set_err(err, err_len, "cannot read the target list from MDS %s: %s", fs->addr,
			nacre_strerror(rc));
		goto out_free;
	}
	fs->pinger_started = pthread_create(&fs->pinger, NULL, pinger_main, fs) == 0;
	cl_log(fs, CL_LOG_INFO, "mounted %s:/%s%s (%s)", fs->addr, fs->fsname, fs->subdir,
	       rpc_conn_server_name(fs->mds));
	*out = fs;
	return 0;

out_free:
	fs_free(fs);
	return rc;
}

/* A clean unmount: what the MDS answered goes to disk if it is not there yet (nobody will
 * be left to replay it), then the MDS forgets this client, so that a restart of it does not
 * wait for us. Best effort, within UMOUNT_TIMEOUT_MS each. */
static void say_goodbye(struct nacre_fs *fs)
{
	struct wire_cursor c;
	struct nacre_cred root;
	struct rpc_msg *m = NULL;
	struct rpc_call_args a = {.timeout_ms = UMOUNT_TIMEOUT_MS};

	if (rpc_conn_retained(fs->mds) > 0) {
		struct wire_fid_req f = {.fid = fs->root};
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_fid_req_encode(&c, &f);
		a.opcode = WIRE_OP_MDS_SYNC;
		a.body = c.buf;
		a.body_len = (uint32_t)c.pos;
		if (rpc_call(fs->mds, &a, &m) < 0)
			cl_log(fs, CL_LOG_WARN, "MDS %s: the last changes could not be made durable "
			       "before unmounting", fs->addr);
		rpc_msg_free(m);
		wire_cursor_fini(&c);
	}
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_put(&c, cl_cred(NULL, &root));
	a.opcode = WIRE_OP_MDS_DISCONNECT;
	a.body = c.buf;
	a.body_len = (uint32_t)c.pos;
	m = NULL;
	rpc_call(fs->mds, &a, &m);
	rpc_msg_free(m);
	wire_cursor_fini(&c);
}

NACRE_API int nacre_fs_jobids(struct nacre_fs *fs)
{
	return fs && (rpc_conn_features(fs->mds) & WIRE_FEAT_JOBID) != 0;
}

NACRE_API void nacre_fs_unmounting(struct nacre_fs *fs)
{
	if (fs)
		__atomic_store_n(&fs->unmounting, 1, __ATOMIC_RELEASE);
}

NACRE_API void nacre_fs_umount(struct nacre_fs *fs)
{
	if (!fs)
		return;
	pthread_mutex_lock(&fs->files_lock);
	int open_files = fs->files != NULL;
	pthread_mutex_unlock(&fs->files_lock);
	if (open_files)
		cl_log(fs, CL_LOG_WARN, "unmounting %s with files still open", fs->fsname);
	/* every change queued reaches the MDS before the session ends */
	if (cl_wbq_flush(fs))
		cl_log(fs, CL_LOG_WARN, "unmounting %s: write-back changes were refused (logged "
		       "above)", fs->fsname);
	pinger_stop(fs);
	if (!open_files)
		say_goodbye(fs); /* files still open keep the session for the MDS to evict */
	fs_free(fs);
}

NACRE_API struct nacre_fid nacre_fs_root(const struct nacre_fs *fs)
{
	return fs->root;
}

NACRE_API const char *nacre_fs_name(const struct nacre_fs *fs)
{
	return fs->fsname;
}
