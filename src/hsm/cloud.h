/* cloud.h - the transfer engine of the cloud backends (azure.c, s3.c): what moving an object
 * to and from an object store takes whatever the service. A put is one request for a small
 * object and a multipart upload for a big one, each part checked against its MD5; a get is
 * one HEAD, then ranged GETs in parallel pinned to the ETag, a small object checked whole
 * against its stored MD5; sizes are checked after upload and per range; every error message
 * names the object the way the service does.
 *
 * A listing goes page by page. A service (struct cloud_service) brings only what differs:
 * how a request is signed and its URL built, which MD5 its replies carry, its verbs to start,
 * add a part to, finish and abort an upload, and its listing's query and page format. Its
 * own state (account and key, credentials and region) hangs off struct cloud. Every function
 * here is thread-safe on one struct cloud once it is open.
 */
#ifndef NACRE_HSM_CLOUD_H
#define NACRE_HSM_CLOUD_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "hsm/backend_impl.h"
#include "hsm/http.h"
#include "nacre/nacre_types.h"

struct cloud;

struct cloud_qparam {
	const char *name;
	const char *value; /* raw; the service encodes it when it builds the URL */
};

/* One request to the service, before signing. */
struct cloud_call {
	const char *method;
	const char *key; /* object key, or NULL for the container (bucket) itself */
	const struct cloud_qparam *q;
	int nq;
	struct hsm_hdrs *hdrs; /* the service adds its date, version and credentials */
	const void *body;
	size_t body_len;
	int data; /* body is file data, covered by Content-MD5 (S3 signs UNSIGNED-PAYLOAD) */
	hsm_http_sink_fn sink;
	void *sink_arg;
	size_t max_body;
	struct hsm_xfer *xfer;
};

/* A header a verb adds (name NULL: none). */
struct cloud_hdr {
	const char *name;
	const char *value;
};

struct cloud_service {
	const char *noun;         /* what the service calls an object, in messages: "blob" */
	const char *meta_prefix;  /* "x-ms-meta-", "x-amz-meta-" */
	const char *range_header; /* "x-ms-range", "Range" */
	const char *no_container; /* error code of a missing container: a remove then fails */
	struct cloud_hdr put_hdr;    /* added to a single-request upload */
	struct cloud_hdr remove_hdr; /* added to a delete */
	const char *put_name;     /* the single-request upload, for "too big for one ..." */
	uint64_t max_put;         /* bytes we send in one request at most; 0: no limit */
	uint64_t min_part;        /* the service refuses smaller parts (but the last) */
	uint64_t max_block;       /* block (and part) size cap; 0: none */
	size_t max_parts;         /* parts of one upload */

	/* Builds c's URL into url (url_len bytes) from path, the encoded
	 * "/base_path/container[/key]", and adds the service's date, version and signature to
	 * c->hdrs. 0 or -errno (err names a URL too long). */
	int (*sign)(struct cloud *cl, const struct cloud_call *c, const char *path, char *url,
		    size_t url_len, char *err, size_t err_len);
	/* Appends to a refusal's message which credentials to check. */
	void (*access_hint)(struct cloud *cl, char *buf, size_t len);
	/* The MD5 of stored content a reply carries, as hex: 1 found, 0 none, -1 present but
	 * unreadable. */
	int (*stored_md5)(const struct hsm_http_resp *resp, char hex[33]);

	/* Multipart upload. start (NULL: nothing to start) returns the upload's state in *up;
	 * part_query gives the query of part i (0-based) in q, strings in scratch, and returns
	 * how many; part_done (may be NULL) keeps what the part's reply says; finish commits
	 * the nparts parts; end (may be NULL) frees up, aborting the upload first when abort
	 * is set. Every one but end returns 0 or -errno with err. */
	int (*upload_start)(struct cloud *cl, const char *key, const struct hsm_meta *meta,
			    size_t nparts, void **up, char *err, size_t err_len);
	int (*part_query)(void *up, size_t i, struct cloud_qparam q[2], char *scratch,
			  size_t scratch_len);
	int (*part_done)(void *up, const char *key, size_t i, const struct hsm_http_resp *resp,
			 char *err, size_t err_len);
	int (*upload_finish)(struct cloud *cl, void *up, const char *key, size_t nparts,
			     const struct hsm_meta *meta, struct hsm_xfer *xfer, char *err,
			     size_t err_len);
	void (*upload_end)(struct cloud *cl, void *up, const char *key, int abort);

	/* Listing, page by page. A page's query is list_query (fixed parameters, up to a NULL
	 * name), list_size=the page size, prefix=the prefix if there is one, and after the
	 * first page list_marker=what the previous page said. list_page gives the objects of a
	 * parsed page whose key starts with prefix (plen bytes) to fn, with their path under
	 * it, sets *stop when fn asks to, and returns the next page's marker in *next
	 * (malloc'd; NULL after the last page). 0 or -errno with err. */
	struct cloud_qparam list_query[4];
	const char *list_size;   /* "max-keys" */
	const char *list_marker; /* "continuation-token" */
	int list_page_max;       /* page size the service allows */
	int (*list_page)(struct cloud *cl, const struct hsm_xml *x, const char *prefix,
			 size_t plen, hsm_list_fn fn, void *arg, int *stop, char **next,
			 char *err, size_t err_len);

	void (*state_fini)(void *state); /* frees what the state points to; may be NULL */
};

/* Filled by cloud_create and the service's open; read-only once open. */
struct cloud {
	const struct cloud_service *svc;
	void *state;         /* the service's own, zeroed at creation */
	char name[160];      /* the container in words, for messages: "bucket b" */
	char container[64];  /* container or bucket */
	char prefix[NACRE_PATH_MAX + 1];
	char base[512];      /* scheme://host[:port][/path], no trailing slash */
	char base_path[256]; /* the path part of base: "" or "/devstoreaccount1" */
	struct hsm_http *http;
	int threads;
	uint64_t block_size; /* ranged downloads; objects up to it are read in one range */
	uint64_t part_size;  /* upload parts; objects up to it are put in one request */
};

/* Creates the engine state for svc with a zeroed service state of state_size bytes, the
 * threads and block sizes of opts, and the HTTP client. 0 or -ENOMEM. */
int cloud_create(const struct cloud_service *svc, size_t state_size,
		 const struct hsm_backend_opts *opts, struct cloud **out);
/* Frees cl (a void * so it serves as the backend's close). NULL is fine. */
void cloud_close(void *cl);
/* Takes the container (3 to 63 characters) and the prefix (leading and trailing '/'
 * dropped) from rest, the "container[/prefix]" of a backend URL that starts with head
 * ("s3://", "azure://account/"). Messages call the container what ("bucket") and end a
 * bad name's with hint. 0 or -EINVAL / -ENAMETOOLONG with err. */
int cloud_set_container(struct cloud *cl, const char *head, const char *rest, const char *what,
			const char *hint, char *err, size_t err_len);
/* Says in err that the container, named by who_fmt ("bucket '%s'"), has no credentials and
 * which to set (names). Returns -EACCES. */
int cloud_no_credentials(const char *names, char *err, size_t err_len, const char *who_fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Sets base and base_path from an endpoint URL. 0, or -EINVAL when it has no "scheme://"
 * with something after it, or does not fit. */
int cloud_set_base(struct cloud *cl, const char *url);

/* Signs and sends c. resp is filled (release it with hsm_http_resp_fini) whatever the
 * result; returns what hsm_http_do returns, a refusal's message naming the credentials. */
int cloud_call(struct cloud *cl, const struct cloud_call *c, struct hsm_http_resp *resp,
	       char *err, size_t err_len);
/* HEAD of key into meta (size, metadata, stored MD5 as checksum). resp as cloud_call's. */
int cloud_head(struct cloud *cl, const char *key, struct hsm_meta *meta,
	       struct hsm_http_resp *resp, char *err, size_t err_len);
/* Sends the XML document body (Content-Type application/xml) with method to key, with the
 * metadata headers of meta when meta is not NULL. resp as cloud_call's; -ENOMEM when body
 * failed. */
int cloud_send_xml(struct cloud *cl, const char *method, const char *key,
		   const struct cloud_qparam *q, int nq, const struct hsm_meta *meta,
		   const struct strbuf *body, struct hsm_xfer *xfer, struct hsm_http_resp *resp,
		   char *err, size_t err_len);
/* The backend operations the engine implements (see backend_impl.h); priv is the
 * struct cloud. */
int cloud_put(void *priv, const char *path, uint64_t size, hsm_read_fn rd, void *rd_arg,
	      const struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
	      char *err, size_t err_len);
int cloud_get(void *priv, const char *path, hsm_write_fn wr, void *wr_arg,
	      struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg, char *err,
	      size_t err_len);
int cloud_stat(void *priv, const char *path, struct hsm_meta *meta, char *err,
	       size_t err_len);
int cloud_remove(void *priv, const char *path, char *err, size_t err_len);
int cloud_list(void *priv, hsm_list_fn fn, void *arg, char *err, size_t err_len);

/* The backend table of a cloud service: its own open, the engine for the rest. */
#define CLOUD_BACKEND_OPS(open_fn)                                                            \
	{                                                                                     \
		.open = (open_fn), .close = cloud_close, .put = cloud_put, .get = cloud_get,  \
		.stat = cloud_stat, .remove = cloud_remove, .list = cloud_list,               \
	}

#endif
