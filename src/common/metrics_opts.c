/* metrics_opts.c - the daemons' shared metrics options (see metrics_opts.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_opts.h"
#include "common/util.h"

static int number(const char *opt, const char *arg, int64_t min, int64_t max, int *out,
		  char *err, size_t err_len)
{
	int64_t v;

	if (parse_i64(arg, min, max, &v) < 0) {
		snprintf(err, err_len, "%s '%s' is not a number from %lld to %lld", opt, arg,
			 (long long)min, (long long)max);
		return -1;
	}
	*out = (int)v;
	return 1;
}

int metrics_opts_handle(struct metrics_opts *o, int c, const char *arg, char *err,
			size_t err_len)
{
	switch (c) {
	case METRICS_OPT_ADDR:
		o->addr = arg;
		return 1;
	case METRICS_OPT_LOG:
		o->log = arg;
		return 1;
	case METRICS_OPT_INTERVAL:
		return number("--metrics-interval (seconds)", arg, 1, 86400, &o->interval_s, err,
			      err_len);
	case METRICS_OPT_AZURE:
		if (!metrics_azure_workspace_valid(arg)) {
			snprintf(err, err_len, "--metrics-azure '%s' is no workspace ID: give the "
				 "Log Analytics workspace's ID (letters, digits and '-')", arg);
			return -1;
		}
		o->azure.workspace = arg;
		return 1;
	case METRICS_OPT_AZURE_KEY_FILE:
		o->azure.key_file = arg;
		return 1;
	case METRICS_OPT_AZURE_LOG_TYPE:
		if (!metrics_azure_log_type_valid(arg)) {
			snprintf(err, err_len, "--metrics-azure-log-type '%s': use 1 to 100 letters, "
				 "digits or '_'", arg);
			return -1;
		}
		o->azure.log_type = arg;
		return 1;
	case METRICS_OPT_AZURE_URL:
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0) {
			snprintf(err, err_len, "--metrics-azure-url '%s': give an http:// or "
				 "https:// URL", arg);
			return -1;
		}
		o->azure.url = arg;
		return 1;
	case METRICS_OPT_AZURE_BATCH:
		return number("--metrics-azure-batch", arg, 1, METRICS_AZURE_BATCH_MAX,
			      &o->azure.batch, err, err_len);
	case METRICS_OPT_AZURE_QUEUE:
		return number("--metrics-azure-queue", arg, 1, METRICS_AZURE_QUEUE_MAX,
			      &o->azure.queue_max, err, err_len);
	case METRICS_OPT_AZURE_DCE:
		o->azure.dce = arg;
		return 1;
	case METRICS_OPT_AZURE_DCR:
		o->azure.dcr = arg;
		return 1;
	case METRICS_OPT_AZURE_STREAM:
		o->azure.stream = arg;
		return 1;
	case METRICS_OPT_AZURE_TENANT:
		o->azure.tenant = arg;
		return 1;
	case METRICS_OPT_AZURE_CLIENT_ID:
		o->azure.client_id = arg;
		return 1;
	case METRICS_OPT_AZURE_SECRET_FILE:
		o->azure.secret_file = arg;
		return 1;
	case METRICS_OPT_AZURE_AUTHORITY:
		o->azure.authority = arg;
		return 1;
	default:
		return 0;
	}
}

int metrics_opts_handle_kv(struct metrics_opts *o, const char *key, const char *val,
			   char *err, size_t err_len)
{
	static const struct {
		const char *name;
		int c;
	} map[] = {
		{ "metrics_addr", METRICS_OPT_ADDR },
		{ "metrics_log", METRICS_OPT_LOG },
		{ "metrics_interval", METRICS_OPT_INTERVAL },
		{ "metrics_azure", METRICS_OPT_AZURE },
		{ "metrics_azure_key_file", METRICS_OPT_AZURE_KEY_FILE },
		{ "metrics_azure_log_type", METRICS_OPT_AZURE_LOG_TYPE },
		{ "metrics_azure_url", METRICS_OPT_AZURE_URL },
		{ "metrics_azure_batch", METRICS_OPT_AZURE_BATCH },
		{ "metrics_azure_queue", METRICS_OPT_AZURE_QUEUE },
		{ "metrics_azure_dce", METRICS_OPT_AZURE_DCE },
		{ "metrics_azure_dcr", METRICS_OPT_AZURE_DCR },
		{ "metrics_azure_stream", METRICS_OPT_AZURE_STREAM },
		{ "metrics_azure_tenant", METRICS_OPT_AZURE_TENANT },
		{ "metrics_azure_client_id", METRICS_OPT_AZURE_CLIENT_ID },
		{ "metrics_azure_secret_file", METRICS_OPT_AZURE_SECRET_FILE },
		{ "metrics_azure_authority", METRICS_OPT_AZURE_AUTHORITY },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (strcmp(key, map[i].name) == 0)
			return metrics_opts_handle(o, map[i].c, val, err, err_len);
	return 0;
}

int metrics_opts_check(const struct metrics_opts *o, char *err, size_t err_len)
{
	uint8_t key[512];
	int rc;

	if (o->azure.dce)
		return metrics_azure_check(&o->azure, err, err_len);
	if ((rc = metrics_azure_check(&o->azure, err, err_len)) < 0)
		return rc;
	if (!o->azure.workspace && (o->azure.key_file || o->azure.log_type || o->azure.url ||
				    o->azure.batch || o->azure.queue_max)) {
		snprintf(err, err_len, "the --metrics-azure-* options need --metrics-azure-dce URL "
			 "(the Logs Ingestion API) or --metrics-azure WORKSPACE (the retired HTTP "
			 "Data Collector API)");
		return -EINVAL;
	}
	if (!o->azure.workspace)
		return 0;
	if (!o->azure.key_file) {
		snprintf(err, err_len, "--metrics-azure needs --metrics-azure-key-file FILE (the "
			 "workspace's shared key, base64, in a file of mode 0600)");
		return -EINVAL;
	}
	rc = metrics_azure_key_load(o->azure.key_file, key, sizeof(key), err, err_len);
	memset(key, 0, sizeof(key));
	return rc < 0 ? rc : 0;
}

int metrics_opts_start(const struct metrics_opts *o, const char *daemon, char *err,
		       size_t err_len)
{
	uint16_t port = 0;
	int rc;

	if ((rc = metrics_opts_check(o, err, err_len)) < 0)
		return rc;
	if (o->addr) {
		rc = metrics_http_start(o->addr, &port, err, err_len);
		if (rc < 0)
			return rc;
		LOG_INFO("metrics", "serving Prometheus metrics on %s (port %u)", o->addr, port);
	}
	int azure = o->azure.workspace || o->azure.dce;
	if (azure) {
		rc = metrics_azure_start(&o->azure, err, err_len);
		if (rc < 0)
			goto out_http;
	}
	if (o->log || azure) {
		rc = metrics_log_start(o->log, daemon, o->interval_s, err, err_len);
		if (rc < 0)
			goto out_azure;
	}
	return 0;
out_azure:
	metrics_azure_stop();
out_http:
	metrics_http_stop();
	return rc;
}

void metrics_opts_stop(void)
{
	metrics_log_stop(); /* its last record goes to Log Analytics too */
	metrics_azure_stop();
	metrics_http_stop();
}
