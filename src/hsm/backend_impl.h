/* backend_impl.h - what each backend (posix.c, azure.c, s3.c) implements for backend.c.
 * Not for users of the backend interface: they include backend.h only. */
#ifndef NACRE_HSM_BACKEND_IMPL_H
#define NACRE_HSM_BACKEND_IMPL_H

#include "hsm/backend.h"

struct hsm_backend_ops {
	/* rest is the URL after the scheme ("/path" for posix:, "account/container/prefix" for
	 * azure://, "bucket/prefix" for s3://). Returns the backend's private state in *priv. */
	int (*open)(const char *rest, const struct hsm_backend_opts *opts, void **priv, char *err,
		    size_t err_len);
	void (*close)(void *priv);
	int (*put)(void *priv, const char *path, uint64_t size, hsm_read_fn rd, void *rd_arg,
		   const struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg,
		   char *err, size_t err_len);
	int (*get)(void *priv, const char *path, hsm_write_fn wr, void *wr_arg,
		   struct hsm_meta *meta, hsm_progress_fn progress, void *progress_arg, char *err,
		   size_t err_len);
	int (*stat)(void *priv, const char *path, struct hsm_meta *meta, char *err,
		    size_t err_len);
	int (*remove)(void *priv, const char *path, char *err, size_t err_len);
	int (*list)(void *priv, hsm_list_fn fn, void *arg, char *err, size_t err_len);
	/* NULL when the backend leaves nothing behind that needs it */
	int (*cleanup)(void *priv, unsigned grace_s, char *err, size_t err_len);
};

extern const struct hsm_backend_ops hsm_posix_ops;
extern const struct hsm_backend_ops hsm_azure_ops;
extern const struct hsm_backend_ops hsm_s3_ops;

#endif
