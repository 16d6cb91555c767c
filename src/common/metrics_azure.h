/* metrics_azure.h - the Azure Log Analytics sink of the metrics log: each record the metrics
 * log makes for it (one per target: metrics_render_rows) is queued here and POSTed, as a
 * JSON array, to one of two APIs:
 *
 * - the Logs Ingestion API (dce set): to DCE/dataCollectionRules/DCR/streams/STREAM?
 *   api-version=2023-01-01 with "Authorization: Bearer TOKEN", the token obtained from
 *   Entra ID by client credentials (POST AUTHORITY/TENANT/oauth2/v2.0/token,
 *   grant_type=client_credentials, scope https://monitor.azure.com/.default) and kept until
 *   five minutes before it expires; a 401 drops it and the records are posted again with a
 *   new one;
 * - the HTTP Data Collector API, which Azure retired on 2026-09-14 (workspace set): signed
 *   with the workspace's shared key,
 *     Authorization: SharedKey WORKSPACE:base64(HMAC-SHA256(base64decode(KEY),
 *       "POST\n" CONTENT_LENGTH "\napplication/json\nx-ms-date:" RFC1123_DATE "\n/api/logs"))
 *     Log-Type: NAME   x-ms-date: RFC1123_DATE   time-generated-field: timestamp
 *
 * One sender thread does every POST (libcurl), so the daemon never waits on the network:
 * metrics_azure_push() only takes a mutex. Records are posted when `batch` of them are
 * queued (default 1: each as it comes, every metrics interval). A 5xx, 429, 408 or a
 * connection error keeps the records and retries with exponential backoff (1 s doubling to
 * 60 s, or the service's Retry-After); another 4xx drops them (retrying cannot help). The
 * queue is bounded: when full the oldest record is dropped, counted, and said at most once a
 * minute in the log. Counters: nacre_azure_log_records_sent_total, _dropped_total,
 * nacre_azure_log_post_failures_total, gauge nacre_azure_log_queue_records.
 *
 * Part of nacre_metrics_export (links libcurl). start/stop from one thread (main); push is
 * thread-safe.
 */
#ifndef NACRE_METRICS_AZURE_H
#define NACRE_METRICS_AZURE_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_AZURE_LOG_TYPE "NacreMetrics"
#define METRICS_AZURE_TIME_FIELD "timestamp" /* ISO 8601 UTC, in every record */
#define METRICS_AZURE_BATCH_MAX 1000
#define METRICS_AZURE_QUEUE_MAX 100000

#define METRICS_AZURE_STREAM "Custom-NacreMetrics_CL"
#define METRICS_AZURE_AUTHORITY "https://login.microsoftonline.com"

struct metrics_azure_conf {
	/* the Logs Ingestion API: all of dce, dcr, tenant, client_id, secret_file */
	const char *dce;         /* the data collection endpoint, http(s)://... */
	const char *dcr;         /* the data collection rule's immutable ID (dcr-...) */
	const char *stream;      /* NULL = METRICS_AZURE_STREAM */
	const char *tenant;      /* Entra ID tenant (directory) ID */
	const char *client_id;   /* the application's (client) ID */
	const char *secret_file; /* its client secret, in a file only its owner may read */
	const char *authority;   /* NULL = METRICS_AZURE_AUTHORITY */
	/* or the retired HTTP Data Collector API: workspace and key_file */
	const char *workspace; /* workspace (customer) ID: [A-Za-z0-9-], 1..64 */
	const char *key_file;  /* the shared key, base64, in a file only its owner may read */
	const char *log_type;  /* NULL = METRICS_AZURE_LOG_TYPE; [A-Za-z0-9_], 1..100 */
	const char *url;       /* NULL = https://WORKSPACE.ods.opinsights.azure.com/api/logs?
				* api-version=2016-04-01 */
	int batch;             /* records per POST, 0 = 1 */
	int queue_max;         /* records kept while the service does not take them, 0 = 1000 */
};

/* 1 if s may be a workspace ID, a Log-Type name; a DCR immutable ID, a stream name, a
 * tenant or client ID (letters, digits, '-', '_', '.'). */
int metrics_azure_workspace_valid(const char *s);
int metrics_azure_log_type_valid(const char *s);
int metrics_azure_name_valid(const char *s);
/* Checks c as a whole (one API, everything it needs, the key or secret file readable):
 * 0, or -errno with a sentence in err. */
int metrics_azure_check(const struct metrics_azure_conf *c, char *err, size_t err_len);

/* Reads the key file: base64 of the shared key (whitespace around it ignored), refusing a
 * file group or others may read. Returns the key's length in bytes (<= len), or -errno with
 * a sentence naming the file in err (-EACCES mode, -EINVAL not base64, -ENOENT ...). */
int metrics_azure_key_load(const char *path, uint8_t *key, size_t len, char *err,
			   size_t err_len);

/* out = "SharedKey WORKSPACE:SIGNATURE" for a POST of content_len bytes of application/json
 * at date (the x-ms-date value). Returns 0, or -EINVAL (out too small), -EIO (OpenSSL).
 * Thread-safe. */
int metrics_azure_sign(const uint8_t *key, size_t key_len, const char *workspace,
		       size_t content_len, const char *date, char *out, size_t out_len);

/* Loads the key (or the client secret) and starts the sender thread. Returns 0 or -errno with a sentence in err.
 * c's strings are copied. */
int metrics_azure_start(const struct metrics_azure_conf *c, char *err, size_t err_len);
/* 1 between a successful start and stop. */
int metrics_azure_active(void);
/* Queues a copy of one record (a JSON object's text); drops the oldest when the queue is
 * full. A no-op when not active. Never blocks on the network. Thread-safe. */
void metrics_azure_push(const char *record);
/* Posts what is queued if the service answered the last POST (waiting at most ~2 s), then
 * stops the thread and drops the rest. */
void metrics_azure_stop(void);

#endif
