/* metrics_opts.h - the metrics options every daemon takes, parsed and acted on in one place:
 *   --metrics-addr HOST:PORT   Prometheus text at http://HOST:PORT/metrics
 *   --metrics-log FILE         one JSON line per interval appended to FILE
 *   --metrics-interval SECS    interval of those lines (default 60)
 *   --metrics-azure-dce URL    post those records to Azure Log Analytics too (the Logs
 *     Ingestion API: -dcr, -stream, -tenant, -client-id, -secret-file, -authority), or
 *   --metrics-azure WORKSPACE  to its retired HTTP Data Collector API (-key-file,
 *     -log-type, -url); -batch and -queue for both: metrics_azure.h
 * Part of nacre_metrics_export. */
#ifndef NACRE_METRICS_OPTS_H
#define NACRE_METRICS_OPTS_H

#include <getopt.h>
#include <stddef.h>

#include "common/metrics_azure.h"

#define METRICS_OPT_ADDR 0x4d01
#define METRICS_OPT_LOG 0x4d02
#define METRICS_OPT_INTERVAL 0x4d03
#define METRICS_OPT_AZURE 0x4d04
#define METRICS_OPT_AZURE_KEY_FILE 0x4d05
#define METRICS_OPT_AZURE_LOG_TYPE 0x4d06
#define METRICS_OPT_AZURE_URL 0x4d07
#define METRICS_OPT_AZURE_BATCH 0x4d08
#define METRICS_OPT_AZURE_QUEUE 0x4d09
#define METRICS_OPT_AZURE_DCE 0x4d0a
#define METRICS_OPT_AZURE_DCR 0x4d0b
#define METRICS_OPT_AZURE_STREAM 0x4d0c
#define METRICS_OPT_AZURE_TENANT 0x4d0d
#define METRICS_OPT_AZURE_CLIENT_ID 0x4d0e
#define METRICS_OPT_AZURE_SECRET_FILE 0x4d0f
#define METRICS_OPT_AZURE_AUTHORITY 0x4d10

/* Entries for a getopt_long table. */
#define METRICS_LONGOPTS                                                                    \
	{ "metrics-addr", required_argument, NULL, METRICS_OPT_ADDR },                      \
	{ "metrics-log", required_argument, NULL, METRICS_OPT_LOG },                        \
	{ "metrics-interval", required_argument, NULL, METRICS_OPT_INTERVAL },              \
	{ "metrics-azure", required_argument, NULL, METRICS_OPT_AZURE },                    \
	{ "metrics-azure-key-file", required_argument, NULL, METRICS_OPT_AZURE_KEY_FILE },  \
	{ "metrics-azure-log-type", required_argument, NULL, METRICS_OPT_AZURE_LOG_TYPE },  \
	{ "metrics-azure-url", required_argument, NULL, METRICS_OPT_AZURE_URL },            \
	{ "metrics-azure-batch", required_argument, NULL, METRICS_OPT_AZURE_BATCH },        \
	{ "metrics-azure-queue", required_argument, NULL, METRICS_OPT_AZURE_QUEUE },        \
	{ "metrics-azure-dce", required_argument, NULL, METRICS_OPT_AZURE_DCE },            \
	{ "metrics-azure-dcr", required_argument, NULL, METRICS_OPT_AZURE_DCR },            \
	{ "metrics-azure-stream", required_argument, NULL, METRICS_OPT_AZURE_STREAM },      \
	{ "metrics-azure-tenant", required_argument, NULL, METRICS_OPT_AZURE_TENANT },      \
	{ "metrics-azure-client-id", required_argument, NULL, METRICS_OPT_AZURE_CLIENT_ID }, \
	{ "metrics-azure-secret-file", required_argument, NULL,                             \
	  METRICS_OPT_AZURE_SECRET_FILE },                                                  \
	{ "metrics-azure-authority", required_argument, NULL, METRICS_OPT_AZURE_AUTHORITY }

#define METRICS_USAGE                                                                       \
	"  --metrics-addr HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics\n"  \
	"  --metrics-log FILE        append one JSON line of metrics per interval to FILE\n"  \
	"  --metrics-interval SECS   interval of --metrics-log lines (default 60)\n"          \
	"  --metrics-azure-dce URL   post each interval's records (one per target) to Azure\n" \
	"                            Log Analytics' Logs Ingestion API at this data\n"       \
	"                            collection endpoint, with:\n"                            \
	"  --metrics-azure-dcr ID    the data collection rule's immutable ID (dcr-...)\n"    \
	"  --metrics-azure-stream S  its stream (default Custom-NacreMetrics_CL)\n"          \
	"  --metrics-azure-tenant ID, --metrics-azure-client-id ID   the Entra ID tenant and\n" \
	"                            the application the token is asked for\n"              \
	"  --metrics-azure-secret-file FILE  its client secret (mode 0600)\n"               \
	"  --metrics-azure-authority URL  default https://login.microsoftonline.com\n"      \
	"  --metrics-azure WORKSPACE or, to the retired HTTP Data Collector API, with:\n"    \
	"  --metrics-azure-key-file FILE  the workspace's shared key (base64, mode 0600)\n"   \
	"  --metrics-azure-log-type NAME  custom log table (default NacreMetrics)\n"         \
	"  --metrics-azure-url URL   endpoint (default https://WORKSPACE.ods.opinsights...)\n" \
	"  --metrics-azure-batch N   records per POST (default 1)\n"                          \
	"  --metrics-azure-queue N   records kept while the endpoint fails (default 1000)\n"

struct metrics_opts {
	const char *addr;
	const char *log;
	int interval_s;
	struct metrics_azure_conf azure; /* azure.dce and .workspace NULL: no Log Analytics */
};

/* Handles getopt's result c if it is a metrics option: returns 1 (handled), 0 (not ours),
 * or -1 with a sentence in err (bad value). */
int metrics_opts_handle(struct metrics_opts *o, int c, const char *arg, char *err,
			size_t err_len);
/* The same for mount-style options (nacre-mount's -o): key is the option's name with '_'
 * for '-' and no leading dashes ("metrics_addr", "metrics_azure_key_file"). */
int metrics_opts_handle_kv(struct metrics_opts *o, const char *key, const char *val,
			   char *err, size_t err_len);
/* Checks what can be checked before the process does anything: options that go together,
 * the Log Analytics key file (its mode, base64). Returns 0 or -errno with a sentence in err.
 * metrics_opts_start checks the same again. */
int metrics_opts_check(const struct metrics_opts *o, char *err, size_t err_len);
/* Starts what the options ask for. Returns 0 or -errno with a sentence in err. */
int metrics_opts_start(const struct metrics_opts *o, const char *daemon, char *err,
		       size_t err_len);
void metrics_opts_stop(void);

#endif
