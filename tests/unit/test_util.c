/* test_util.c - util, nacre_strerror and nacre_errno_for_app, crc32c, log and net. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/log.h"
#include "common/net.h"
#include "common/util.h"
#include "nacre/nacre_errno.h"
#include "unit.h"

static void test_str_copy(void)
{
	char buf[4];

	CHECK_EQ(str_copy(buf, "ab", sizeof(buf)), 2);
	CHECK_STR(buf, "ab");
	CHECK_EQ(str_copy(buf, "abcdef", sizeof(buf)), 6);
	CHECK_STR(buf, "abc");
	CHECK_EQ(str_copy(buf, "", sizeof(buf)), 0);
	CHECK_STR(buf, "");
	buf[0] = 'z';
	CHECK_EQ(str_copy(buf, "abc", 0), 3);
	CHECK_EQ(buf[0], 'z');
}

static void test_parse(void)
{
	int64_t v;
	uint64_t u;

	CHECK_EQ(parse_i64("42", 0, 100, &v), 0);
	CHECK_EQ(v, 42);
	CHECK_EQ(parse_i64("-1", -1, 100, &v), 0);
	CHECK_EQ(v, -1);
	CHECK_EQ(parse_i64("-2", -1, 100, &v), -ERANGE);
	CHECK_EQ(parse_i64("101", 0, 100, &v), -ERANGE);
	CHECK_EQ(parse_i64("99999999999999999999", INT64_MIN, INT64_MAX, &v), -ERANGE);
	CHECK_EQ(parse_i64("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
	CHECK(v == INT64_MAX);
	CHECK_EQ(parse_i64("", 0, 100, &v), -EINVAL);
	CHECK_EQ(parse_i64(" 1", 0, 100, &v), -EINVAL);
	CHECK_EQ(parse_i64("1 ", 0, 100, &v), -EINVAL);
	CHECK_EQ(parse_i64("+1", 0, 100, &v), -EINVAL);
	CHECK_EQ(parse_i64("1x", 0, 100, &v), -EINVAL);
	CHECK_EQ(parse_i64("-", 0, 100, &v), -EINVAL);
	CHECK_EQ(parse_i64(NULL, 0, 100, &v), -EINVAL);

	CHECK_EQ(parse_size("0", &u), 0);
	CHECK_EQ(u, 0);
	CHECK_EQ(parse_size("4096", &u), 0);
	CHECK_EQ(u, 4096);
	CHECK_EQ(parse_size("64k", &u), 0);
	CHECK_EQ(u, 65536);
	CHECK_EQ(parse_size("1M", &u), 0);
	CHECK_EQ(u, 1048576);
	CHECK_EQ(parse_size("2g", &u), 0);
	CHECK_EQ(u, 2ull << 30);
	CHECK_EQ(parse_size("3T", &u), 0);
	CHECK_EQ(u, 3ull << 40);
	CHECK_EQ(parse_size("18446744073709551615", &u), 0);
	CHECK(u == UINT64_MAX);
	CHECK_EQ(parse_size("18446744073709551616", &u), -EINVAL);
	CHECK_EQ(parse_size("16777216T", &u), -EINVAL); /* 2^64 */
	CHECK_EQ(parse_size("-1", &u), -EINVAL);
	CHECK_EQ(parse_size("", &u), -EINVAL);
	CHECK_EQ(parse_size("M", &u), -EINVAL);
	CHECK_EQ(parse_size("1MB", &u), -EINVAL);
	CHECK_EQ(parse_size("1X", &u), -EINVAL);
	CHECK_EQ(parse_size(" 1", &u), -EINVAL);
}

static void test_misc(void)
{
	struct nacre_time t = time_now();

	CHECK(t.sec > 1600000000);
	CHECK(t.nsec < 1000000000u);

	CHECK(fsname_valid("lustre"));
	CHECK(fsname_valid("a"));
	CHECK(fsname_valid("Ab_-0129"));
	CHECK(!fsname_valid(""));
	CHECK(!fsname_valid("toolong99"));
	CHECK(!fsname_valid("a.b"));
	CHECK(!fsname_valid("a/b"));
	CHECK(!fsname_valid("a b"));
	CHECK(!fsname_valid(NULL));
}

static void test_strerror(void)
{
	CHECK_STR(nacre_strerror(-ENOENT), "No such file or directory");
	CHECK_STR(nacre_strerror(ENOENT), "No such file or directory");
	CHECK_STR(nacre_strerror(-NACRE_EAUTH), "cluster key rejected");
	CHECK_STR(nacre_strerror(NACRE_EPROTO_VERSION),
		  "no common nacre protocol version with the peer");
	CHECK_STR(nacre_strerror(0), "Success");
	for (int e = NACRE_EBASE; e < NACRE_ELAST; e++)
		CHECK(nacre_strerror(-e) != NULL && nacre_strerror(-e)[0] != '\0');
	CHECK(nacre_strerror(-3999) != NULL);
	CHECK(nacre_strerror(NACRE_ELAST) != NULL);
	CHECK(nacre_strerror(-2147483647 - 1) != NULL);
	CHECK(nacre_strerror(2147483647) != NULL);
}

static void test_errno_for_app(void)
{
	CHECK_EQ(nacre_errno_for_app(-ENOENT), ENOENT);
	CHECK_EQ(nacre_errno_for_app(EACCES), EACCES);
	CHECK_EQ(nacre_errno_for_app(-ETIMEDOUT), EIO);
	CHECK_EQ(nacre_errno_for_app(-NACRE_EAUTH), EIO);
	CHECK_EQ(nacre_errno_for_app(512), EIO);
	CHECK_EQ(nacre_errno_for_app(511), 511);
	CHECK_EQ(nacre_errno_for_app(0), EIO);
	CHECK_EQ(nacre_errno_for_app(-2147483647 - 1), EIO);
}

static void test_crc32c(void)
{
	static uint8_t zeros[32];
	uint8_t big[100000];
	uint32_t whole, part;

	CHECK_EQ(crc32c(0, "123456789", 9), 0xe3069283u);
	CHECK_EQ(crc32c(0, "", 0), 0);
	CHECK_EQ(crc32c(0, zeros, 32), 0x8a9136aau); /* RFC 3720 B.4: 32 bytes of zeros */
	/* Continuation: crc of a||b == crc32c(crc32c(0, a), b). */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 31 + 7);
	whole = crc32c(0, big, sizeof(big));
	part = crc32c(0, big, 12345);
	part = crc32c(part, big + 12345, sizeof(big) - 12345);
	CHECK_EQ(whole, part);
	CHECK_EQ(crc32c(crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
}

/* ---- log ---- */

static char sink_line[4096];
static int sink_level;
static int sink_calls;

static void sink(int level, const char *line, void *arg)
{
	CHECK(arg == &sink_calls);
	sink_level = level;
	sink_calls++;
	str_copy(sink_line, line, sizeof(sink_line));
}

static void test_log(void)
{
	regex_t re;
	enum log_level lvl;
	char path[] = "/tmp/nacre-test-log-XXXXXX";
	int fd;

	CHECK_EQ(log_level_parse("err", &lvl), 0);
	CHECK_EQ(lvl, LOG_LVL_ERR);
	CHECK_EQ(log_level_parse("warn", &lvl), 0);
	CHECK_EQ(lvl, LOG_LVL_WARN);
	CHECK_EQ(log_level_parse("INFO", &lvl), 0);
	CHECK_EQ(lvl, LOG_LVL_INFO);
	CHECK_EQ(log_level_parse("debug", &lvl), 0);
	CHECK_EQ(lvl, LOG_LVL_DEBUG);
	CHECK_EQ(log_level_parse("loud", &lvl), -EINVAL);
	CHECK_EQ(log_level_parse("", &lvl), -EINVAL);

	log_init("mds", LOG_LVL_INFO);
	log_set_sink(sink, &sink_calls);
	LOG_INFO("ns", "created %s mode %o", "f", 0644);
	CHECK_EQ(sink_calls, 1);
	CHECK_EQ(sink_level, LOG_LVL_INFO);
	CHECK_EQ(regcomp(&re,
			 "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
			 "mds\\[[0-9]+\\] INFO ns: created f mode 644$",
			 REG_EXTENDED | REG_NOSUB),
		 0);
	if (regexec(&re, sink_line, 0, NULL, 0) != 0)
		fprintf(stderr, "unexpected line: %s\n", sink_line);
	CHECK_EQ(regexec(&re, sink_line, 0, NULL, 0), 0);
	regfree(&re);

	/* Below the level: not formatted, not delivered. */
	LOG_DEBUG("ns", "hidden");
	CHECK_EQ(sink_calls, 1);
	log_set_level(LOG_LVL_DEBUG);
	LOG_DEBUG("ns", "shown\n");
	CHECK_EQ(sink_calls, 2);
	CHECK(strstr(sink_line, "DEBUG ns: shown") != NULL);
	CHECK(strchr(sink_line, '\n') == NULL);
	log_set_level(LOG_LVL_WARN);
	LOG_INFO("ns", "hidden");
	LOG_ERR("ns", "error");
	CHECK_EQ(sink_calls, 3);
	CHECK(strstr(sink_line, " ERR ns: error") != NULL);

	/* A very long message is cut, not overflowed. */
	{
		char *big = malloc(10000);

		memset(big, 'x', 9999);
		big[9999] = '\0';
		LOG_ERR("ns", "%s", big);
		CHECK(strlen(sink_line) < 4096 && strlen(sink_line) > 1000);
		free(big);
	}

	/* Ratelimit: at most 10 per second per call site. */
	sink_calls = 0;
	for (int i = 0; i < 100; i++)
		LOG_RATELIMITED(LOG_LVL_WARN, "peer", "bad frame %d", i);
	CHECK(sink_calls >= 10 && sink_calls <= 21); /* a second boundary may fall inside */

	/* To a file. */
	log_set_sink(NULL, NULL);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(log_open_file(path), 0);
	LOG_ERR("file", "to the file");
	LOG_WARN("file", "second");
	{
		char buf[512];
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		CHECK(n > 0);
		buf[n > 0 ? n : 0] = '\0';
		CHECK(strstr(buf, "mds[") != NULL);
		CHECK(strstr(buf, " ERR file: to the file\n") != NULL);
		CHECK(strstr(buf, " WARN file: second\n") != NULL);
	}
	close(fd);
	unlink(path);
	CHECK(log_open_file("/nonexistent-dir/x.log") < 0);
	log_set_level(LOG_LVL_INFO);
}

/* ---- net ---- */

static void test_parse_addr(void)
{
	char host[64];
	uint16_t port = 1;

	CHECK_EQ(net_parse_addr("mds1:9400", 1, host, sizeof(host), &port), 0);
	CHECK_STR(host, "mds1");
	CHECK_EQ(port, 9400);
	CHECK_EQ(net_parse_addr("mds1", 9410, host, sizeof(host), &port), 0);
	CHECK_STR(host, "mds1");
	CHECK_EQ(port, 9410);
	CHECK_EQ(net_parse_addr("10.0.0.1:0", 5, host, sizeof(host), &port), 0);
	CHECK_STR(host, "10.0.0.1");
	CHECK_EQ(port, 0);
	CHECK_EQ(net_parse_addr("[::1]:65535", 1, host, sizeof(host), &port), 0);
	CHECK_STR(host, "::1");
	CHECK_EQ(port, 65535);
	CHECK_EQ(net_parse_addr("[fe80::1]", 7, host, sizeof(host), &port), 0);
	CHECK_STR(host, "fe80::1");
	CHECK_EQ(port, 7);
	CHECK_EQ(net_parse_addr("::1", 7, host, sizeof(host), &port), 0);
	CHECK_STR(host, "::1");
	CHECK_EQ(port, 7);
	CHECK_EQ(net_parse_addr(":80", 7, host, sizeof(host), &port), 0);
	CHECK_STR(host, "");
	CHECK_EQ(port, 80);
	CHECK_EQ(net_parse_addr("h:65536", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("h:", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("h:12a", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("h:-1", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("[::1", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("[]:1", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("[::1]x", 1, host, sizeof(host), &port), -EINVAL);
	CHECK_EQ(net_parse_addr("abcdef:1", 1, host, 4, &port), -EINVAL); /* host too long */
}

struct echo_arg {
	int lfd;
};

/* Accepts one connection and echoes 8 bytes back. */
static void *echo_thread(void *p)
{
	struct echo_arg *a = p;
	char buf[8];
	int fd;

	for (;;) {
		fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
		usleep(1000);
	}
	if (fd < 0)
		return NULL;
	net_set_nonblock(fd, 0);
	if (net_read_full(fd, buf, sizeof(buf)) == 0) {
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};

		net_writev_full(fd, &iov, 1);
	}
	close(fd);
	return NULL;
}

static void echo_once(const char *listen_addr, const char *connect_host)
{
	uint16_t port = 0;
	int lfd = net_listen(listen_addr, &port);
	struct echo_arg a = {.lfd = lfd};
	pthread_t th;
	char addr[64];
	int fd;

	CHECK(lfd >= 0);
	if (lfd < 0) {
		fprintf(stderr, "listen %s: %s\n", listen_addr, nacre_strerror(lfd));
		return;
	}
	CHECK(port != 0);
	CHECK(fcntl(lfd, F_GETFL) & O_NONBLOCK);
	CHECK(fcntl(lfd, F_GETFD) & FD_CLOEXEC);
	pthread_create(&th, NULL, echo_thread, &a);
	snprintf(addr, sizeof(addr), "%s:%u", connect_host, (unsigned)port);
	fd = net_connect(addr, 2000);
	CHECK(fd >= 0);
	if (fd >= 0) {
		char out[8] = {0};
		struct iovec iov[3] = {
			{.iov_base = (void *)"abc", .iov_len = 3},
			{.iov_base = NULL, .iov_len = 0},
			{.iov_base = (void *)"defgh", .iov_len = 5},
		};

		CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
		CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		CHECK_EQ(net_writev_full(fd, iov, 3), 0);
		CHECK_EQ(net_read_full(fd, out, 8), 0);
		CHECK(memcmp(out, "abcdefgh", 8) == 0);
		/* The peer closed: EOF is -ECONNRESET. */
		CHECK_EQ(net_read_full(fd, out, 1), -ECONNRESET);
		close(fd);
	}
	pthread_join(th, NULL);
	close(lfd);
}

static void test_net(void)
{
	uint16_t port = 0;
	int lfd, fd;
	char addr[64];
	int64_t t0;

	echo_once("127.0.0.1:0", "127.0.0.1");
	echo_once("127.0.0.1:0", "localhost");
	/* IPv6 loopback when the host has it. */
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		close(fd);
		lfd = net_listen("[::1]:0", &port);
		if (lfd >= 0) {
			close(lfd);
			echo_once("[::1]:0", "[::1]");
		} else {
			fprintf(stderr, "note: no IPv6 loopback (%s), skipped\n",
				nacre_strerror(lfd));
		}
	}

	/* Refused: a port that was just free. */
	lfd = net_listen("127.0.0.1:0", &port);
	CHECK(lfd >= 0);
	close(lfd);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)port);
	CHECK_EQ(net_connect(addr, 1000), -ECONNREFUSED);

	/* Bad addresses. */
	CHECK_EQ(net_connect("127.0.0.1", 1000), -EINVAL); /* no port */
	CHECK_EQ(net_connect(":9400", 1000), -EINVAL);
	CHECK_EQ(net_connect("no-such-host.invalid:9400", 1000), -EINVAL);
	CHECK_EQ(net_listen("1.2.3.4.5:0", NULL), -EINVAL);

	/* Address in use: a second listener on the same port. */
	lfd = net_listen("127.0.0.1:0", &port);
	CHECK(lfd >= 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)port);
	CHECK_EQ(net_listen(addr, NULL), -EADDRINUSE);
	close(lfd);

	/* Writes to a peer that went away fail with an error, not SIGPIPE. */
	{
		int sv[2];
		struct iovec iov = {.iov_base = (void *)"x", .iov_len = 1};

		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		close(sv[1]);
		CHECK_EQ(net_writev_full(sv[0], &iov, 1), -EPIPE);
		close(sv[0]);
	}
	/* net_writev_full on a pipe (not a socket) still works. */
	{
		int p[2];
		char buf[4];
		struct iovec iov[2] = {{.iov_base = (void *)"ab", .iov_len = 2},
				       {.iov_base = (void *)"cd", .iov_len = 2}};

		CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
		CHECK_EQ(net_writev_full(p[1], iov, 2), 0);
		CHECK_EQ(net_read_full(p[0], buf, 4), 0);
		CHECK(memcmp(buf, "abcd", 4) == 0);
		close(p[0]);
		close(p[1]);
	}
	/* The timed read: what is there, then a timeout while nothing comes, then EOF. */
	{
		int sv[2];
		char buf[4] = {0};

		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		CHECK_EQ(write(sv[1], "abc", 3), 3);
		CHECK_EQ(net_read_full_timeout(sv[0], buf, 2, 1000), 0);
		CHECK(memcmp(buf, "ab", 2) == 0);
		CHECK_EQ(net_read_full_timeout(sv[0], buf, 0, 0), 0);
		t0 = net_now_ms();
		CHECK_EQ(net_read_full_timeout(sv[0], buf, 2, 50), -ETIMEDOUT); /* 1 of 2 */
		CHECK(net_now_ms() - t0 >= 49);
		close(sv[1]);
		CHECK_EQ(net_read_full_timeout(sv[0], buf, 1, 1000), -ECONNRESET);
		close(sv[0]);
	}
	t0 = net_now_ms();
	usleep(20000);
	CHECK(net_now_ms() - t0 >= 19);
}

int main(void)
{
	test_str_copy();
	test_parse();
	test_misc();
	test_strerror();
	test_errno_for_app();
	test_crc32c();
	test_log();
	test_parse_addr();
	test_net();
	return unit_done();
}
