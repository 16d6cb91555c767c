/* backend.c - picks the backend from the URL scheme and forwards calls to it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hsm/backend_impl.h"

struct hsm_backend {
	const struct hsm_backend_ops *ops;
	void *priv;
	char url[NACRE_PATH_MAX + 1];
	char location[NACRE_PATH_MAX + 1]; /* url without trailing '/' */
};

static const struct {
	const char *scheme;
	const struct hsm_backend_ops *ops;
} schemes[] = {
	{ "posix:", &hsm_posix_ops },
	{ "azure://", &hsm_azure_ops },
	{ "s3://", &hsm_s3_ops },
};

int hsm_backend_open(const char *url, const struct hsm_backend_opts *opts,
		     struct hsm_backend **out, char *err, size_t err_len)
{
	static const struct hsm_backend_opts defaults;
	struct hsm_backend *b;
	int rc;

	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++) {
		size_t n = strlen(schemes[i].scheme);
		if (strncmp(url, schemes[i].scheme, n) != 0)
			continue;
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->ops = schemes[i].ops;
		str_copy(b->url, url, sizeof(b->url));
		str_copy(b->location, url, sizeof(b->location));
		for (size_t l = strlen(b->location); l > 1 && b->location[l - 1] == '/';)
			b->location[--l] = 0;
		rc = b->ops->open(url + n, opts ? opts : &defaults, &b->priv, err, err_len);
		if (rc < 0) {
			free(b);
			return rc;
		}
		*out = b;
		return 0;
	}
	snprintf(err, err_len,
		 "unknown archive backend '%s': use posix:/path, azure://account/container[/prefix] "
		 "or s3://bucket[/prefix]",
		 url);
	return -EINVAL;
}

void hsm_backend_close(struct hsm_backend *b)
{
	if (!b)
		return;
	b->ops->close(b->priv);
	free(b);
}

const char *hsm_backend_url(const struct hsm_backend *b)
{
	return b->url;
}

const char *hsm_backend_location(const struct hsm_backend *b)
{
	return b->location;
}

int hsm_backend_put(struct hsm_backend *b, const char *path, uint64_t size, hsm_read_fn rd,
		    void *rd_arg, const struct hsm_meta *meta, hsm_progress_fn progress,
		    void *progress_arg, char *err, size_t err_len)
{
	return b->ops->put(b->priv, path, size, rd, rd_arg, meta, progress, progress_arg, err,
			   err_len);
}

int hsm_backend_get(struct hsm_backend *b, const char *path, hsm_write_fn wr, void *wr_arg,
		    struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		    char *err, size_t err_len)
{
	return b->ops->get(b->priv, path, wr, wr_arg, meta, progress, progress_arg, err, err_len);
}

int hsm_backend_stat(struct hsm_backend *b, const char *path, struct hsm_meta *meta, char *err,
		     size_t err_len)
{
	return b->ops->stat(b->priv, path, meta, err, err_len);
}

int hsm_backend_remove(struct hsm_backend *b, const char *path, char *err, size_t err_len)
{
	return b->ops->remove(b->priv, path, err, err_len);
}

int hsm_backend_list(struct hsm_backend *b, hsm_list_fn fn, void *arg, char *err,
		     size_t err_len)
{
	return b->ops->list(b->priv, fn, arg, err, err_len);
}

int hsm_backend_cleanup(struct hsm_backend *b, unsigned grace_s, char *err, size_t err_len)
{
	return b->ops->cleanup ? b->ops->cleanup(b->priv, grace_s, err, err_len) : 0;
}
