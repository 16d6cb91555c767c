/* notify.h - the mount's side of the permission-change callbacks (notify.c; the API is
 * nacre_fs_notify_start/stop in nacre.h). */
#ifndef NACRE_CL_NOTIFY_H
#define NACRE_CL_NOTIFY_H

#include "client/cl_internal.h"

/* Sets up the callback state at mount. Not thread-safe. */
void cl_notify_init(struct nacre_fs *fs);
/* At unmount: stops the callbacks if running, waits for the thread to end (at most the
 * poll's limit, 4 s, when the MDS is gone) and frees the state. */
void cl_notify_fini(struct nacre_fs *fs);

#endif
