/* upgrade_take.c - the taking-over side of an upgrade: asks the serving process for its
 * session, rebuilds its tables and re-opens its files, replays FUSE_INIT (see upgrade.h
 * for the steps). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/net.h"
#include "common/util.h"
#include "fuse/kproto.h"
#include "fuse/upgrade.h"

/* The reply to our replayed INIT names no request the kernel has: it answers ENOENT, which
 * libfuse ignores. Kernel request ids are small even numbers; this one never is pending. */
#define REPLAY_UNIQUE (1ull << 62)

struct fz_takeover {
	int sock;            /* to the old process */
	int fuse_fd;
	unsigned char *blob;
	struct upg_reader cur; /* over blob; at the inode table once the header is read */
	struct upg_head head;
};

int fz_upgrade_request(const char *sock_path, struct fz_takeover **out, char *err, size_t len)
{
	struct fz_takeover *t = calloc(1, sizeof(*t));
	struct sockaddr_un sa;
	unsigned char req[UPG_REQ_LEN] = {0}, h[UPG_HDR_LEN];
	struct iovec iov = {req, sizeof(req)};
	struct upg_writer rq;
	uint32_t status, blen;
	int rc;

	if (!t) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	t->fuse_fd = -1;
	t->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->sock < 0) {
		rc = -errno;
		snprintf(err, len, "socket: %s", strerror(errno));
		goto out_free;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	str_copy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	if (connect(t->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		snprintf(err, len, "connecting to the control socket %s: %s (is the running "
			 "nacre-mount too old for --upgrade, or was it given another "
			 "control_socket=?)", sock_path, strerror(errno));
		goto out_free;
	}
	upg_writer_init(&rq, req, sizeof(req));
	upg_put_u32(&rq, UPG_REQ_MAGIC);
	upg_put_u8(&rq, UPG_VERSION);
	rc = net_writev_full(t->sock, &iov, 1);
	if (rc < 0) {
		snprintf(err, len, "sending the request: %s", strerror(-rc));
		goto out_free;
	}
	rc = upg_recv_fd_hdr(t->sock, h, &t->fuse_fd);
	if (rc < 0) {
		snprintf(err, len, "waiting for the running process: %s",
			 rc == -EPIPE ? "it closed the connection" : strerror(-rc));
		goto out_free;
	}
	upg_hdr_decode(h, &status, &blen);
	if (status != 0) {
		char msg[UPG_MSG_MAX + 1];
		rc = -(int)status;
		upg_recv_text(t->sock, blen, 5000, msg); /* "" if it fails */
		snprintf(err, len, "the running process refused: %s", msg);
		goto out_free;
	}
	if (t->fuse_fd < 0 || blen > UPG_BLOB_MAX) {
		rc = -EPROTO;
		snprintf(err, len, "the running process sent no /dev/fuse descriptor");
		goto out_free;
	}
	t->blob = malloc(blen ? blen : 1);
	if (!t->blob) {
		rc = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto out_free;
	}
	rc = net_read_full_timeout(t->sock, t->blob, blen, 60000);
	if (rc < 0) {
		snprintf(err, len, "receiving the state: %s", strerror(-rc));
		goto out_free;
	}
	upg_reader_init(&t->cur, t->blob, blen);
	rc = upg_head_decode(&t->cur, &t->head);
	if (rc == -EPROTONOSUPPORT) {
		rc = -EPROTO;
		snprintf(err, len, "the running process sent state of an unknown format");
		goto out_free;
	}
	if (rc < 0) {
		snprintf(err, len, "the running process sent truncated state");
		goto out_free;
	}
	*out = t;
	return 0;

out_free:
	if (t->fuse_fd >= 0)
		close(t->fuse_fd);
	fz_takeover_free(t);
	return rc;
}

const char *fz_takeover_spec(const struct fz_takeover *t)
{
	return t->head.spec;
}

const char *fz_takeover_opts(const struct fz_takeover *t)
{
	return t->head.opts;
}

int fz_takeover_fd(const struct fz_takeover *t)
{
	return t->fuse_fd;
}

/* Re-opens one handle by FID, as the opener and with its flags. */
static int import_handle(struct fz_mount *m, uint64_t fh, int kind, uint64_t ino, int flags,
			 const struct nacre_cred *cr, char *err, size_t len)
{
	struct nacre_file *nf;
	struct fz_inode *in;
	struct fz_file *f;
	char fs[NACRE_FID_STR_MAX];
	int rc;

	if (kind == FZ_H_DIR) {
		void *d = fz_dir_create();
		rc = d ? fz_handle_import(m, fh, FZ_H_DIR, d) : -ENOMEM;
		if (rc < 0) {
			fz_dir_destroy(d);
			snprintf(err, len, "directory handle %llu: %s", (unsigned long long)fh,
				 strerror(-rc));
		}
		return rc;
	}
	if (kind != FZ_H_FILE || !(in = fz_inode_get(m, ino))) {
		snprintf(err, len, "handle %llu names no known inode", (unsigned long long)fh);
		return -EPROTO;
	}
	rc = nacre_open(m->fs, cr, &in->fid, flags, &nf);
	/* the open was allowed once; a later chmod does not take it back (POSIX) */
	if (rc == -EACCES || rc == -EPERM)
		rc = nacre_open(m->fs, NULL, &in->fid, flags, &nf);
	if (rc < 0) {
		snprintf(err, len, "re-opening file %s: %s",
			 nacre_fid_format(&in->fid, fs, sizeof(fs)), nacre_strerror(rc));
		return rc;
	}
	f = fz_file_create(in, nf, flags, cr);
	if (!f) {
		nacre_close(nf);
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	rc = fz_handle_import(m, fh, FZ_H_FILE, f);
	if (rc < 0) {
		fz_file_close(f);
		snprintf(err, len, "file handle %llu: %s", (unsigned long long)fh, strerror(-rc));
	}
	return rc;
}

int fz_takeover_import(struct fz_mount *m, struct fz_takeover *t, char *err, size_t len)
{
	struct upg_reader *rd = &t->cur;
	uint64_t n, i;
	int rc;

	n = upg_inodes_count(rd);
	for (i = 0; i < n && upg_reader_ok(rd); i++) {
		struct upg_inode r;

		upg_inode_get(rd, &r);
		if (!upg_reader_ok(rd))
			break;
		rc = fz_inode_import(m, r.ino, &r.fid, &r.parent, r.nlookup);
		if (rc < 0) {
			snprintf(err, len, "inode %llu: %s", (unsigned long long)r.ino,
				 rc == -EINVAL && r.ino == FUSE_ROOT_ID
					 ? "the root differs: was another SPEC given?"
					 : strerror(-rc));
			return rc;
		}
		struct fz_inode *in = fz_inode_get(m, r.ino);
		in->cache_valid = r.cache_valid != 0;
		in->cache_size = r.cache_size;
		in->cache_mtime = r.cache_mtime;
		in->cache_ctime = r.cache_ctime;
	}
	n = upg_handles_count(rd);
	for (i = 0; i < n && upg_reader_ok(rd); i++) {
		struct upg_handle r;

		upg_handle_get(rd, &r);
		if (!upg_reader_ok(rd))
			break;
		rc = import_handle(m, r.fh, (int)r.kind, r.ino, (int)r.flags, &r.cred, err, len);
		if (rc < 0)
			return rc;
	}
	n = upg_owners_count(rd);
	for (i = 0; i < n && upg_reader_ok(rd); i++) {
		struct upg_owner r;

		upg_owner_get(rd, &r);
		if (upg_reader_ok(rd) && fz_lock_owner_import(&r.fid, r.owner) < 0) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
	}
	if (!upg_reader_ok(rd) || upg_reader_left(rd) != 0) {
		snprintf(err, len, "the running process sent malformed state");
		return -EPROTO;
	}
	if (t->head.lock_client) {
		rc = nacre_fs_set_lock_client(m->fs, t->head.lock_client);
		if (rc < 0) {
			snprintf(err, len, "adopting the lock client id: %s", strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int fz_locks_rebind(struct fz_mount *m, char *err, size_t len)
{
	struct nacre_fid root = nacre_fs_root(m->fs);
	struct nacre_lock none = {.type = NACRE_LK_UNLCK, .start = 0, .end = NACRE_LOCK_EOF};
	/* Unlocking nothing (owner 0 is never a kernel lock owner) still makes the MDS bind
	 * this lock client's locks to our connection, before the old one goes away. */
	int rc = nacre_lock_set(m->fs, NULL, &root, NACRE_LOCK_POSIX, 0, &none);

	if (rc < 0)
		snprintf(err, len, "taking over the cluster locks at the MDS: %s",
			 nacre_strerror(rc));
	return rc;
}

int fz_takeover_replay_init(struct fz_mount *m, struct fz_takeover *t, char *err, size_t len)
{
	struct {
		struct k_in_header h;
		struct k_init_in a;
	} in;
	struct fuse_buf fb;

	memset(&in, 0, sizeof(in));
	in.h.len = sizeof(in);
	in.h.opcode = K_FUSE_INIT;
	in.h.unique = REPLAY_UNIQUE;
	in.a.major = t->head.init.proto_major;
	in.a.minor = t->head.init.proto_minor;
	in.a.max_readahead = t->head.init.max_readahead;
	/* libfuse sizes its request buffer from this one: without it, 1 MiB writes would not
	 * fit. The other flags only set capabilities, which op_init restores. */
	if (in.a.major > 7 || (in.a.major == 7 && in.a.minor >= 28))
		in.a.flags = K_FUSE_MAX_PAGES;
	memset(&fb, 0, sizeof(fb));
	fb.mem = &in;
	fb.size = sizeof(in);
	m->replay_init = &t->head.init;
	memset(&m->init, 0, sizeof(m->init));
	fuse_session_process_buf(m->se, &fb);
	m->replay_init = NULL;
	if (m->init.proto_major != t->head.init.proto_major || fuse_session_exited(m->se)) {
		snprintf(err, len, "replaying FUSE_INIT (protocol %u.%u) to libfuse failed",
			 t->head.init.proto_major, t->head.init.proto_minor);
		return -EPROTO;
	}
	return 0;
}

int fz_takeover_ack(struct fz_takeover *t, int status, const char *msg)
{
	int rc = upg_send_status(t->sock, status < 0 ? -status : status, msg), confirmed = -1;

	if (rc < 0 || status != 0)
		return rc;
	/* the old process confirms at once, or closes the connection if it gave up on us */
	rc = upg_recv_status(t->sock, 30000, &confirmed, NULL, 0);
	return rc < 0 ? rc : confirmed == 0 ? 0 : -EPROTO;
}

int fz_takeover_wait_old(struct fz_takeover *t, int timeout_ms)
{
	char c;
	int rc;

	/* nothing more is sent: EOF (or an error) means the old process exited */
	while ((rc = net_read_full_timeout(t->sock, &c, 1, timeout_ms)) == 0)
		;
	return rc != -ETIMEDOUT;
}

void fz_takeover_free(struct fz_takeover *t)
{
	if (!t)
		return;
	if (t->sock >= 0)
		close(t->sock);
	free(t->blob);
	upg_head_fini(&t->head);
	free(t);
}
