/* net.c - TCP helpers over getaddrinfo, for IPv4, IPv6 and host names. */
#include "common/net.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#define NET_BACKLOG 1024
#define NET_HOST_MAX 256

static int parse_port(const char *s, size_t n, uint16_t *port)
{
	uint32_t v = 0;

	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

static int set_host(char *host, size_t host_len, const char *s, size_t n)
{
	if (n >= host_len)
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	return 0;
}

int net_parse_addr(const char *addr, uint16_t default_port, char *host, size_t host_len,
		   uint16_t *port)
{
	const char *colon;

	if (!addr || !host || host_len == 0)
		return -EINVAL;
	if (addr[0] == '[') {
		/* "[v6]" or "[v6]:port" */
		const char *end = strchr(addr, ']');

		if (!end || end == addr + 1)
			return -EINVAL;
		if (end[1] == '\0') {
			*port = default_port;
		} else if (end[1] == ':') {
			if (parse_port(end + 2, strlen(end + 2), port) < 0)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		return set_host(host, host_len, addr + 1, (size_t)(end - addr - 1));
	}
	colon = strrchr(addr, ':');
	if (colon && strchr(addr, ':') != colon) {
		/* Several colons and no brackets: a bare IPv6 address without a port. */
		*port = default_port;
		return set_host(host, host_len, addr, strlen(addr));
	}
	if (!colon) {
		*port = default_port;
		return set_host(host, host_len, addr, strlen(addr));
	}
	if (parse_port(colon + 1, strlen(colon + 1), port) < 0)
		return -EINVAL;
	return set_host(host, host_len, addr, (size_t)(colon - addr));
}

static int resolve(const char *addr, int passive, struct addrinfo **res)
{
	char host[NET_HOST_MAX];
	char portstr[8];
	uint16_t port;
	struct addrinfo hints;
	const char *node;
	int rc;

	if (net_parse_addr(addr, 0, host, sizeof(host), &port) < 0)
		return -EINVAL;
	if (!passive && (host[0] == '\0' || port == 0))
		return -EINVAL;
	/* "" and "*" mean every local address when listening. */
	node = (host[0] == '\0' || strcmp(host, "*") == 0) ? NULL : host;
	if (!node && !passive)
		return -EINVAL;
	snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : AI_ADDRCONFIG);
	rc = getaddrinfo(node, portstr, &hints, res);
	if (rc == EAI_ADDRFAMILY || rc == EAI_NODATA) {
		/* AI_ADDRCONFIG hides ::1 on hosts without a global IPv6 address. */
		hints.ai_flags &= ~AI_ADDRCONFIG;
		rc = getaddrinfo(node, portstr, &hints, res);
	}
	switch (rc) {
	case 0:
		return 0;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EINVAL;
	default:
		return -EINVAL; /* unknown host name or a malformed address */
	}
}

int net_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	if (fcntl(fd, F_SETFL, fl) < 0)
		return -errno;
	return 0;
}

int64_t net_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t net_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int net_listen(const char *addr, uint16_t *port_out)
{
	struct addrinfo *res, *ai;
	int rc, fd = -1;
	int one = 1;

	rc = resolve(addr, 1, &res);
	if (rc < 0)
		return rc;
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		/* Restarting a daemon must not wait for TIME_WAIT sockets of the old one. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, NET_BACKLOG) == 0)
			break;
		rc = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return rc;

	if (port_out) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		if (ss.ss_family == AF_INET6)
			*port_out = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		else
			*port_out = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	return fd;
}

/* Waits for a non-blocking connect until deadline. Returns 0 or -errno. */
static int connect_wait(int fd, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int64_t left = deadline - net_now_ms();
		int err = 0;
		socklen_t el = sizeof(err);
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ETIMEDOUT;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			return -errno;
		return err ? -err : 0;
	}
}

int net_connect(const char *addr, int timeout_ms)
{
	struct addrinfo *res, *ai;
	/* timeout_ms <= 0: no deadline of our own (the kernel's SYN retries still end it). */
	int64_t deadline = timeout_ms > 0 ? net_now_ms() + timeout_ms : INT64_MAX;
	int rc, fd = -1;
	int one = 1;

	rc = resolve(addr, 0, &res);
	if (rc < 0)
		return rc;
	rc = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			rc = 0;
		else if (errno == EINPROGRESS || errno == EINTR)
			rc = connect_wait(fd, deadline); /* EINTR: it goes on asynchronously */
		else
			rc = -errno;
		if (rc == 0)
			break;
		close(fd);
		fd = -1;
		if (rc == -ETIMEDOUT)
			break; /* the deadline covers every address */
	}
	freeaddrinfo(res);
	if (fd < 0)
		return rc;

	rc = net_set_nonblock(fd, 0);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	/* Requests are small and pipelined; Nagle would delay them. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* One read towards a full one: advances *p and *n. 0 (also on EINTR), -ECONNRESET on EOF,
 * or -errno. */
static int read_some(int fd, uint8_t **p, size_t *n)
{
	ssize_t r = read(fd, *p, *n);

	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return -ECONNRESET;
	*p += r;
	*n -= (size_t)r;
	return 0;
}

int net_read_full(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		int rc = read_some(fd, &p, &n);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The loop under both timed reads: each wait for data lasts at most idle_ms (< 0: no limit)
 * and ends by deadline (net_now_ms() time; INT64_MAX: none). -ETIMEDOUT when either runs out,
 * else as net_read_full(). */
static int read_full_poll(int fd, void *buf, size_t n, int64_t deadline, int idle_ms)
{
	uint8_t *p = buf;

	while (n > 0) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int wait = idle_ms;
		int rc;

		if (deadline != INT64_MAX) {
			int64_t left = deadline - net_now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			if (wait < 0 || left < wait)
				wait = left > INT_MAX ? INT_MAX : (int)left;
		}
		rc = poll(&pfd, 1, wait);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (rc == 0)
			return -ETIMEDOUT;
		rc = read_some(fd, &p, &n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int net_read_full_deadline(int fd, void *buf, size_t n, int64_t deadline)
{
	return read_full_poll(fd, buf, n, deadline, -1);
}

int net_read_full_timeout(int fd, void *buf, size_t n, int timeout_ms)
{
	return read_full_poll(fd, buf, n, INT64_MAX, timeout_ms);
}

int net_writev_full(int fd, struct iovec *iov, int iovcnt)
{
	int use_send = 1;

	while (iovcnt > 0) {
		ssize_t w;

		/* Skip empty entries so the loop ends when everything is written. */
		if (iov->iov_len == 0) {
			iov++;
			iovcnt--;
			continue;
		}
		if (use_send) {
			struct msghdr msg = {
				.msg_iov = iov,
				.msg_iovlen = (size_t)(iovcnt > IOV_MAX ? IOV_MAX : iovcnt),
			};

			/* MSG_NOSIGNAL: a peer that went away is an error, not a SIGPIPE. */
			w = sendmsg(fd, &msg, MSG_NOSIGNAL);
			if (w < 0 && errno == ENOTSOCK) {
				use_send = 0; /* a pipe or file (tests) */
				continue;
			}
		} else {
			w = writev(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt);
		}
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (w > 0 && iovcnt > 0) {
			if ((size_t)w >= iov->iov_len) {
				w -= (ssize_t)iov->iov_len;
				iov->iov_len = 0;
				iov++;
				iovcnt--;
			} else {
				iov->iov_base = (uint8_t *)iov->iov_base + w;
				iov->iov_len -= (size_t)w;
				w = 0;
			}
		}
	}
	return 0;
}
