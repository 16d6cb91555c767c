/* net.h - TCP helpers: address parsing, listen, connect with a timeout, full reads/writes.
 * Every fd is opened O_CLOEXEC. Thread-safe (no shared state). */
#ifndef NACRE_NET_H
#define NACRE_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Splits "host:port" (or "[v6]:port", or "host" with default_port) into host (NUL-terminated,
 * host_len bytes) and port. Returns 0 or -EINVAL. */
int net_parse_addr(const char *addr, uint16_t default_port, char *host, size_t host_len,
		   uint16_t *port);
/* Listens on addr ("host:port"; port 0 = ephemeral). Returns the fd or -errno; writes the
 * bound port to *port_out if not NULL. The socket is non-blocking. */
int net_listen(const char *addr, uint16_t *port_out);
/* Connects within timeout_ms. Returns a blocking fd with TCP_NODELAY, or -errno
 * (-ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH, -EINVAL for a bad address). */
int net_connect(const char *addr, int timeout_ms);
/* Reads exactly n bytes (0 on success, -ECONNRESET on EOF, -errno on error). Blocking fd. */
int net_read_full(int fd, void *buf, size_t n);
/* net_read_full() that gives up with -ETIMEDOUT once deadline (net_now_ms() time; INT64_MAX:
 * none) has passed without all n bytes: the limit is on the whole read. */
int net_read_full_deadline(int fd, void *buf, size_t n, int64_t deadline);
/* net_read_full() that gives up with -ETIMEDOUT when no data arrives for timeout_ms: the
 * limit applies to each wait for more bytes, not to the whole read (-1: no limit). */
int net_read_full_timeout(int fd, void *buf, size_t n, int timeout_ms);
/* Writes all of iov (modifies it). 0 or -errno. Blocking fd; uses MSG_NOSIGNAL. */
int net_writev_full(int fd, struct iovec *iov, int iovcnt);
int net_set_nonblock(int fd, int on);
/* Milliseconds on CLOCK_MONOTONIC. */
int64_t net_now_ms(void);
/* Microseconds on CLOCK_MONOTONIC. */
int64_t net_now_us(void);

#endif
