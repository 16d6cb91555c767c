/* backend.h - an HSM archive backend: where archived file data lives (posix directory,
 * Azure Blob container, S3 bucket), behind one interface used by nacre-copytool and by
 * `nacre hsm import`.
 *
 * Objects are named by the file's path relative to the file system root, under the
 * backend's prefix ("dir/file" -> "<prefix>/dir/file"), so the archive stays readable by
 * other tools and can be imported back. That name is fixed at a file's import or first
 * archive and kept through renames (copytool.c has the whole rule). Each object carries the
 * metadata keys Azure Managed Lustre uses: owner, group (decimal), permissions (octal, e.g.
 * "0644"), modtime (in the style of HSM_META_* below), plus "nacre_fid"
 * ("[0x..:0x..:0x..]").
 *
 * Data moves through positional callbacks so a backend may move several ranges in parallel
 * (block uploads, ranged downloads). Every call is thread-safe on one backend object.
 */
#ifndef NACRE_HSM_BACKEND_H
#define NACRE_HSM_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nacre/nacre_types.h"

struct hsm_backend;

struct hsm_meta {
	uint64_t size;
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;           /* permission bits (07777); type bits ignored */
	struct nacre_time mtime;
	int has_fid;
	struct nacre_fid fid;
	int has_owner;           /* 0 when the object carried no owner/group/permissions */
	char checksum[80];       /* backend's content checksum if it has one ("md5:<hex>"), or "" */
	int style;               /* put: how owner/group/permissions/modtime are written
				  * (HSM_META_*); 0 is AMLFS's. Reads accept every style. */
};

/* Metadata styles a put writes (every style is read back by stat, get and list):
 * HSM_META_AMLFS   owner, group (decimal), permissions "0644", modtime
 *                  "2006-01-02 15:04:05 +0000" (UTC; ".NNNNNNNNN" after the seconds when
 *                  the nanoseconds are not 0, which Go's time.Parse of that layout accepts):
 *                  what Azure Managed Lustre's import reads. The default.
 * HSM_META_RFC3339 the same keys, modtime "2006-01-02T15:04:05.NNNNNNNNNZ" (nacre before).
 * HSM_META_AZCOPY  AzCopy's --preserve-posix-properties: posix_owner, posix_group,
 *                  permissions as the decimal st_mode (33188), modtime in nanoseconds. */
enum { HSM_META_AMLFS = 0, HSM_META_RFC3339 = 1, HSM_META_AZCOPY = 2 };
/* "amlfs", "rfc3339" or "azcopy" -> *style. 0 or -EINVAL. */
int hsm_meta_style_parse(const char *s, int *style);
/* Calls fn for each of owner, group, permissions and modtime in meta->style (key names
 * without any header prefix). Stops at and returns fn's first non-zero return. */
typedef int (*hsm_meta_key_fn)(void *arg, const char *key, const char *value);
int hsm_meta_each_key(const struct hsm_meta *meta, hsm_meta_key_fn fn, void *arg);

/* Reads len bytes at off of the source file into buf. Returns bytes read or -errno. Called
 * from several threads at once with disjoint ranges. */
typedef ssize_t (*hsm_read_fn)(void *arg, void *buf, size_t len, uint64_t off);
/* Writes len bytes at off of the destination file. Returns len or -errno. Called from
 * several threads at once with disjoint ranges. */
typedef ssize_t (*hsm_write_fn)(void *arg, const void *buf, size_t len, uint64_t off);
/* Reports bytes moved so far (monotonic). Returns non-zero to cancel the transfer, which
 * then fails with -ECANCELED. Called from any thread, at least every few MiB. */
typedef int (*hsm_progress_fn)(void *arg, uint64_t bytes_done);
/* One object of a listing; return non-zero to stop. path is relative to the prefix. */
typedef int (*hsm_list_fn)(void *arg, const char *path, const struct hsm_meta *meta);

struct hsm_backend_opts {
	const char *endpoint;    /* azure/s3: base URL, e.g. http://127.0.0.1:10000/devstoreaccount1
				  * for Azurite or http://127.0.0.1:4568 for s3rver; NULL = public */
	const char *credentials; /* file with KEY=VALUE lines; NULL = environment only */
	int threads;             /* parallel ranges per transfer; 0 = 4 */
	uint64_t block_size;     /* block/part size for uploads and ranged downloads; 0 = 8 MiB */
	int retries;             /* per request on 5xx/timeouts, with backoff; 0 = 5 */
};

/* Opens a backend from a URL: "posix:/path", "azure://account/container[/prefix]",
 * "s3://bucket[/prefix]". Credentials: azure from AZURE_STORAGE_KEY (SharedKey),
 * AZURE_STORAGE_SAS_TOKEN or AZURE_STORAGE_CONNECTION_STRING (its AccountKey or
 * SharedAccessSignature, and its BlobEndpoint, or EndpointSuffix, as the endpoint when
 * opts->endpoint is not given), s3 from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
 * (default us-east-1) — in the environment or the credentials file, never on a command line.
 * On error writes a sentence naming the URL and what is wrong to err. */
int hsm_backend_open(const char *url, const struct hsm_backend_opts *opts,
		     struct hsm_backend **out, char *err, size_t err_len);
void hsm_backend_close(struct hsm_backend *b); /* NULL is fine */
const char *hsm_backend_url(const struct hsm_backend *b);
/* The URL without trailing '/': what files record as the location their copies are in
 * (NACRE_HSM_ORIGIN_XATTR). Valid as long as b. */
const char *hsm_backend_location(const struct hsm_backend *b);

/* Stores size bytes read through rd as object path with meta, replacing any old object.
 * The copy is verified (size, and the backend's checksum where it offers one) before 0 is
 * returned. */
int hsm_backend_put(struct hsm_backend *b, const char *path, uint64_t size, hsm_read_fn rd,
		    void *rd_arg, const struct hsm_meta *meta, hsm_progress_fn progress,
		    void *progress_arg, char *err, size_t err_len);
/* Reads object path into wr (all of it). Fills meta if not NULL. -ENOENT if missing. */
int hsm_backend_get(struct hsm_backend *b, const char *path, hsm_write_fn wr, void *wr_arg,
		    struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		    char *err, size_t err_len);
/* Metadata of object path. -ENOENT if missing. */
int hsm_backend_stat(struct hsm_backend *b, const char *path, struct hsm_meta *meta,
		     char *err, size_t err_len);
/* Deletes object path; a missing object is success. */
int hsm_backend_remove(struct hsm_backend *b, const char *path, char *err, size_t err_len);
/* Lists every object under the prefix (recursively), with metadata. Directory marker
 * objects (hdi_isfolder=true) are listed with mode S_IFDIR bits set in meta->mode. */
int hsm_backend_list(struct hsm_backend *b, hsm_list_fn fn, void *arg, char *err,
		     size_t err_len);

/* Removes what interrupted puts left behind (a copytool killed mid-copy): posix temporary
 * files, S3 multipart uploads. Only leftovers that no live writer can still be using are
 * removed: see each backend. grace_s: age past which an unclaimed leftover is stale even
 * when its writer cannot be checked. Returns the number removed, or -errno with a message.
 * May take long on a big archive (posix walks the tree): run it off the hot path. */
int hsm_backend_cleanup(struct hsm_backend *b, unsigned grace_s, char *err, size_t err_len);

/* Metadata helpers shared by the backends: format and parse the AMLFS keys. */
void hsm_meta_format_mode(uint32_t mode, char *buf, size_t len); /* "0644" */
int hsm_meta_parse_mode(const char *s, uint32_t *mode); /* octal or "rwxr-xr-x"; 0/-EINVAL */
/* modtime: written as RFC 3339 UTC with nanoseconds; read as that or Unix seconds. */
void hsm_meta_format_time(const struct nacre_time *t, char *buf, size_t len);
int hsm_meta_parse_time(const char *s, struct nacre_time *t);
/* Applies one metadata key/value (key without the header prefix) to meta. Unknown keys and
 * unparsable values are ignored. Returns 1 when the key was hdi_isfolder=true. */
int hsm_meta_apply(struct hsm_meta *meta, const char *key, const char *value);

#endif
