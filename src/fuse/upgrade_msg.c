/* upgrade_msg.c - the messages of an upgrade's control socket, and its path (upgrade.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/net.h"
#include "common/util.h"
#include "fuse/upgrade.h"

void upg_hdr_encode(unsigned char h[UPG_HDR_LEN], uint32_t status, uint32_t len)
{
	struct upg_writer w;

	upg_writer_init(&w, h, UPG_HDR_LEN);
	upg_put_u32(&w, status);
	upg_put_u32(&w, len);
}

void upg_hdr_decode(const unsigned char h[UPG_HDR_LEN], uint32_t *status, uint32_t *len)
{
	struct upg_reader r;

	upg_reader_init(&r, h, UPG_HDR_LEN);
	*status = upg_get_u32(&r);
	*len = upg_get_u32(&r);
}

/* Reads a status text of n bytes into text (UPG_MSG_MAX + 1 bytes), NUL-terminated; on
 * failure text is "". 0, -EPROTO (too long) or net_read_full_timeout()'s error. */
int upg_recv_text(int fd, uint32_t n, int timeout_ms, char *text)
{
	int rc = n > UPG_MSG_MAX ? -EPROTO : net_read_full_timeout(fd, text, n, timeout_ms);

	text[rc < 0 ? 0 : n] = '\0';
	return rc;
}

/* A status message: u32 status (0 or a positive errno), u32 length, text. */
int upg_send_status(int fd, int status, const char *msg)
{
	unsigned char h[UPG_HDR_LEN];
	size_t n = msg ? strlen(msg) : 0;
	struct iovec iov[2] = {{h, sizeof(h)}, {(void *)msg, 0}};

	if (n > UPG_MSG_MAX)
		n = UPG_MSG_MAX;
	upg_hdr_encode(h, (uint32_t)status, (uint32_t)n);
	iov[1].iov_len = n;
	return net_writev_full(fd, iov, 2);
}

int upg_recv_status(int fd, int timeout_ms, int *status, char *msg, size_t len)
{
	unsigned char h[UPG_HDR_LEN];
	char text[UPG_MSG_MAX + 1];
	uint32_t st, n;
	int rc = net_read_full_timeout(fd, h, sizeof(h), timeout_ms);

	if (rc < 0)
		return rc;
	upg_hdr_decode(h, &st, &n);
	rc = upg_recv_text(fd, n, timeout_ms, text);
	if (rc < 0)
		return rc;
	*status = (int)st;
	if (len)
		str_copy(msg, text, len);
	return 0;
}

int fz_upgrade_socket_path(const char *mnt, const char *opt_path, char *out, size_t len)
{
	char dev[64];
	int rc;

	if (opt_path) {
		if (strlen(opt_path) >= len)
			return -ENAMETOOLONG;
		str_copy(out, opt_path, len);
		return 0;
	}
	rc = fz_mount_find(mnt, dev, sizeof(dev), NULL, 0);
	if (rc < 0)
		return rc;
	if ((size_t)snprintf(out, len, UPG_SOCK_DIR "/mount-%s.sock", dev) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* The handover: a status 0 header carrying the fd, then the blob. */
int upg_send_fd_blob(int fd, int fuse_fd, const void *blob, size_t len)
{
	unsigned char h[UPG_HDR_LEN];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {h, sizeof(h)};
	struct iovec body = {(void *)blob, len};
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	upg_hdr_encode(h, 0, (uint32_t)len);
	memset(&msg, 0, sizeof(msg));
	memset(cbuf, 0, sizeof(cbuf));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fuse_fd, sizeof(int));
	do {
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(h))
		return n < 0 ? -errno : -EPIPE;
	return net_writev_full(fd, &body, 1);
}

int upg_recv_fd_hdr(int fd, unsigned char h[UPG_HDR_LEN], int *fuse_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {h, UPG_HDR_LEN};
	struct msghdr msg;
	struct cmsghdr *cm;
	ssize_t n;

	*fuse_fd = -1;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	do {
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	} while (n < 0 && errno == EINTR);
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fuse_fd, CMSG_DATA(cm), sizeof(int));
	if (n < 0)
		return -errno;
	return n == UPG_HDR_LEN ? 0 : -EPIPE;
}
