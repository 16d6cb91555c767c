/* metrics_http.c - GET /metrics in Prometheus text format, served by libmicrohttpd on its
 * own thread. Anything else is 404. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/metrics.h"
#include "common/net.h"

static struct MHD_Daemon *httpd; /* set at start, cleared at stop; main thread only */

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	struct MHD_Response *rsp;
	enum MHD_Result ret;
	unsigned int code = MHD_HTTP_OK;
	char *text = NULL;
	static const char not_found[] = "not found: try /metrics\n";

	(void)cls;
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	else if (strcmp(url, "/metrics") != 0)
		code = MHD_HTTP_NOT_FOUND;
	else if (!(text = metrics_render_prometheus()))
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
	if (code == MHD_HTTP_OK)
		rsp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	else
		rsp = MHD_create_response_from_buffer(sizeof(not_found) - 1, (void *)not_found,
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
