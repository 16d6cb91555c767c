/* secret_file.h - opening files that hold secrets (keys, cloud credentials).
 *
 * A secret file must be a regular file that neither group nor others may read or write, as
 * ssh insists for its private keys: a key readable by every user on a node would let any of
 * them act as the cluster. */
#ifndef NACRE_SECRET_FILE_H
#define NACRE_SECRET_FILE_H

#include <stddef.h>

/* Opens path read-only. what names the file in messages ("key file", "credentials file").
 * Returns the descriptor, or -errno with a sentence naming the file and how to fix it in err:
 * -EACCES also when the mode lets group or others in, -EINVAL when it is not a regular
 * file. */
int secret_file_open(const char *path, const char *what, char *err, size_t err_len);

#endif
