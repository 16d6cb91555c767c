/* metrics_http.c - GET /metrics in Prometheus text format, and the pages a daemon adds
 * (job_stats), served by libmicrohttpd on its own thread. Anything else is 404. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include "common/metrics.h"
#include "common/net.h"

static struct MHD_Daemon *httpd; /* set at start, cleared at stop; main thread only */

#define PAGES_MAX 4
static struct page {
	char path[64];
	char *(*get)(void *arg, const char *rest);
	int (*clear)(void *arg, const char *rest);
	void *arg;
} pages[PAGES_MAX]; /* set before the start, read by the server thread */
static unsigned npages;

void metrics_http_page(const char *path, char *(*get)(void *arg, const char *rest),
		       int (*clear)(void *arg, const char *rest), void *arg)
{
	if (npages == PAGES_MAX || strlen(path) >= sizeof(pages[0].path))
		return;
	struct page *p = &pages[npages++];
	snprintf(p->path, sizeof(p->path), "%s", path);
	p->get = get;
	p->clear = clear;
	p->arg = arg;
}

static int from_loopback(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa && sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

/* The page's text for GET url, or the clear of POST url/clear: an HTTP code, *text set
 * (malloc'd) for 200 on GET. */
static unsigned int serve_page(struct MHD_Connection *conn, const char *url, int post,
			       char **text)
{
	for (unsigned i = 0; i < npages; i++) {
		const struct page *p = &pages[i];
		size_t n = strlen(p->path), len = strlen(url);
		char rest[128];
		if (strncmp(url, p->path, n) != 0 || (url[n] && url[n] != '/'))
			continue;
		if (!post) {
			if (len - n >= sizeof(rest))
				return MHD_HTTP_NOT_FOUND;
			memcpy(rest, url + n, len - n + 1);
			return (*text = p->get(p->arg, rest)) ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND;
		}
		if (len - n < 6 || strcmp(url + len - 6, "/clear") != 0 ||
		    len - n - 6 >= sizeof(rest))
			return MHD_HTTP_NOT_FOUND;
		if (!from_loopback(conn))
			return MHD_HTTP_FORBIDDEN;
		memcpy(rest, url + n, len - n - 6);
		rest[len - n - 6] = '\0';
		return p->clear(p->arg, rest) == 0 ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND;
	}
	return MHD_HTTP_NOT_FOUND;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct MHD_Response *rsp;
	enum MHD_Result ret;
	unsigned int code = MHD_HTTP_OK;
	char *text = NULL;
	static const char failed[] = "not found, not allowed or failed: try /metrics\n";
	static const char cleared[] = "cleared\n";
	int post = strcmp(method, "POST") == 0;

	(void)cls;
	(void)version;
	(void)upload;
	if (post && !*state) {
		*state = (void *)1; /* the headers: answered once the (ignored) body is read */
		return MHD_YES;
	}
	if (post && *upload_len) {
		*upload_len = 0;
		return MHD_YES;
	}
	if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	else if (!post && strcmp(url, "/metrics") == 0)
		code = (text = metrics_render_prometheus()) ? MHD_HTTP_OK
							     : MHD_HTTP_INTERNAL_SERVER_ERROR;
	else
		code = serve_page(conn, url, post, &text);
	if (text)
		rsp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	else if (code == MHD_HTTP_OK)
		rsp = MHD_create_response_from_buffer(sizeof(cleared) - 1, (void *)cleared,
						      MHD_RESPMEM_PERSISTENT);
	else
		rsp = MHD_create_response_from_buffer(sizeof(failed) - 1, (void *)failed,
						      MHD_RESPMEM_PERSISTENT);
	if (!rsp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(rsp, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(conn, code, rsp);
	MHD_destroy_response(rsp);
	return ret;
}

int metrics_http_start(const char *addr, uint16_t *port, char *err, size_t err_len)
{
	int fd = net_listen(addr, port);

	if (fd < 0) {
		snprintf(err, err_len, "cannot listen for metrics on %s: %s", addr, strerror(-fd));
		return fd;
	}
	httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				 NULL, answer, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
				 MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT,
				 10u, MHD_OPTION_END);
	if (!httpd) {
		close(fd);
		snprintf(err, err_len, "cannot start the metrics HTTP server on %s", addr);
		return -EIO;
	}
	return 0;
}

void metrics_http_stop(void)
{
	if (httpd) {
		MHD_stop_daemon(httpd);
		httpd = NULL;
	}
}
