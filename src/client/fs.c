/* fs.c - mounting and unmounting a file system, FID text, logging and the MDS call helper.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/cl_export.h"
#include "client/cl_hsm.h"
#include "client/cl_internal.h"
#include "common/key.h"
#include "proto/rpc.h"
#include "proto/wire.h"

#define CONNECT_TIMEOUT_DEFAULT_MS 10000
#define TIMEOUT_DEFAULT_MS 30000

void cl_log(const struct nacre_fs *fs, int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!fs || !fs->log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fs->log_fn(level, line, fs->log_arg);
}

const struct nacre_cred *cl_cred(const struct nacre_cred *cr, struct nacre_cred *out)
{
	if (cr)
		return cr;
	memset(out, 0, sizeof(*out));
	return out;
}

int cl_decode_end(const struct wire_cursor *c)
{
	return wire_cursor_ok(c) && wire_cursor_left(c) == 0 ? 0 : -EPROTO;
}

int cl_is_transport_err(int rc)
{
	switch (-rc) {
	case ETIMEDOUT:
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EPIPE:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case ENOTCONN:
	case NACRE_ETIMEDOUT_SRV:
		return 1;
	default:
		return 0;
	}
}

int cl_io_errno(int rc)
{
	return cl_is_transport_err(rc) ? -EIO : rc;
}

int cl_mds_call(struct nacre_fs *fs, uint16_t opcode, const struct wire_cursor *req,
		struct rpc_msg **rep)
{
	struct rpc_call_args a;
	struct rpc_msg *m = NULL;
	int rc;

	*rep = NULL;
	if (!wire_cursor_ok(req))
		return req->err < 0 ? req->err : -EINVAL; /* e.g. a name too long to encode */
	memset(&a, 0, sizeof(a));
	a.opcode = opcode;
	a.flags = wire_op_idempotent(opcode) ? RPC_IDEMPOTENT : 0;
	a.body = req->buf;
	a.body_len = (uint32_t)wire_cursor_pos(req);
	rc = rpc_call(fs->mds, &a, &m);
	/* a released file: the MDS queued its restore; wait and ask again */
	for (int64_t waited = 0; rc == -NACRE_ERESTORING;) {
		rpc_msg_free(m);
		m = NULL;
		rc = cl_restore_wait(fs, req, &waited);
		if (rc == 0)
			rc = rpc_call(fs->mds, &a, &m);
	}
	if (rc < 0) {
		if (cl_is_transport_err(rc))
			cl_log(fs, CL_LOG_WARN, "MDS %s: %s failed: %s", fs->addr, wire_opcode_name(opcode),
			       nacre_strerror(rc));
		rpc_msg_free(m);
		return rc;
	}
	if (!m)
		return -EPROTO;
	if (m->hdr.status < 0) {
		rc = m->hdr.status;
		rpc_msg_free(m);
		return rc;
	}
	*rep = m;
	return 0;
}

/* ---- FIDs ---- */

NACRE_API char *nacre_fid_format(const struct nacre_fid *fid, char *buf, size_t len)
{
	if (!buf || len == 0)
		return buf;
	if (!fid) {
		buf[0] = '\0';
		return buf;
	}
	snprintf(buf, len, "[0x%llx:0x%x:0x%x]", (unsigned long long)fid->seq, fid->oid, fid->ver);
	return buf;
}

/* Parses 1..maxdigits hex digits with an optional 0x. Advances *sp. */
static int parse_hex(const char **sp, int maxdigits, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;
	int n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, n++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (n >= maxdigits)
			return -EINVAL;
		v = (v << 4) | (uint64_t)d;
	}
	if (n == 0)
		return -EINVAL;
	*sp = s;
	*out = v;
	return 0;
}

NACRE_API int nacre_fid_parse(const char *s, struct nacre_fid *fid)
{
	uint64_t seq, oid, ver;
	int bracket;

	if (!s || !fid)
		return -EINVAL;
	bracket = *s == '[';
	s += bracket;
	if (parse_hex(&s, 16, &seq) || *s++ != ':' || parse_hex(&s, 8, &oid) || *s++ != ':' ||
	    parse_hex(&s, 8, &ver))
		return -EINVAL;
	if (bracket && *s++ != ']')
		return -EINVAL;
	if (*s)
		return -EINVAL;
	fid->seq = seq;
	fid->oid = (uint32_t)oid;
	fid->ver = (uint32_t)ver;
	return 0;
}

NACRE_API int nacre_fid_eq(const struct nacre_fid *a, const struct nacre_fid *b)
{
	return a->seq == b->seq && a->oid == b->oid && a->ver == b->ver;
}

/* ---- mount ---- */

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

static void connect_error(struct nacre_fs *fs, int rc, int timeout_ms, const char *rpc_err,
			  char *err, size_t err_len)
{
	switch (-rc) {
	case ECONNREFUSED:
		set_err(err, err_len,
			"cannot reach MDS %s: connection refused (is nacre-mds running?)", fs->addr);
		break;
	case ETIMEDOUT:
		set_err(err, err_len,
			"cannot reach MDS %s: no answer within %d ms (is the host up and the port "
			"open?)",
			fs->addr, timeout_ms);
		break;
	case EHOSTUNREACH:
	case ENETUNREACH:
		set_err(err, err_len, "cannot reach MDS %s: no route to host (check the address)",
			fs->addr);
		break;
	default:
		if (rpc_err[0])
			set_err(err, err_len, "%s", rpc_err);
		else
			set_err(err, err_len, "cannot connect to MDS %s: %s", fs->addr,
				nacre_strerror(rc));
	}
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
	if (opts->readahead_max_mb < 0)
		fs->ra_max = 0;
	else
		fs->ra_max = (uint64_t)(opts->readahead_max_mb ? opts->readahead_max_mb
							       : CL_RA_MB_DEFAULT) * mib;
	if (fs->ra_max > 0 && fs->ra_max < rpc)
		fs->ra_max = rpc;
}

static void fs_free(struct nacre_fs *fs)
{
	cl_pool_fini(&fs->pool);
	rpc_conn_destroy(fs->mds);
	cl_oss_fini(&fs->oss);
	pthread_mutex_destroy(&fs->files_lock);
	explicit_bzero(&fs->key, sizeof(fs->key));
	free(fs);
}

NACRE_API int nacre_fs_mount(const char *spec, const struct nacre_mount_opts *opts,
			     struct nacre_fs **out, char *err, size_t err_len)
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
	ct = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : CONNECT_TIMEOUT_DEFAULT_MS;
	fs->root.seq = NACRE_ROOT_SEQ;
	fs->root.oid = NACRE_ROOT_OID;
	pick_client_name(opts->client_name, fs->client_name, sizeof(fs->client_name));

	rc = nacre_parse_spec(spec, fs->addr, sizeof(fs->addr), fs->fsname, sizeof(fs->fsname),
			      fs->subdir, sizeof(fs->subdir), err, err_len);
	if (rc)
		goto out_free;

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
	rc = rpc_conn_create(&conf, &fs->mds);
	if (rc) {
		set_err(err, err_len, "cannot set up a connection to MDS %s: %s", fs->addr,
			nacre_strerror(rc));
		goto out_free;
	}
	rc = rpc_conn_connect(fs->mds, ct, rpc_err, sizeof(rpc_err));
	if (rc) {
		connect_error(fs, rc, ct, rpc_err, err, err_len);
		goto out_free;
	}
	rc = resolve_subdir(fs, err, err_len);
	if (rc)
		goto out_free;
	rc = cl_oss_refresh(fs);
	if (rc) {
		set_err(err, err_len, "cannot read the target list from MDS %s: %s", fs->addr,
			nacre_strerror(rc));
		goto out_free;
	}
	cl_log(fs, CL_LOG_INFO, "mounted %s:/%s%s (%s)", fs->addr, fs->fsname, fs->subdir,
	       rpc_conn_server_name(fs->mds));
	*out = fs;
	return 0;

out_free:
	fs_free(fs);
	return rc;
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
