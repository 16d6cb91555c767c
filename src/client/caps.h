/* caps.h - the object capabilities of open files (caps.c): the one each handle holds, which
 * the object engine (obj.c) attaches to every OST request, and its renewal from the MDS
 * (CAP_GET) before it expires or after an OSS refused it. Calls only the MDS client.
 */
#ifndef NACRE_CL_CAPS_H
#define NACRE_CL_CAPS_H

#include <stdint.h>

#include "proto/wire.h"

struct nacre_file;

/* Sets up f's capability fields with the one an OPEN or CREATE reply carried (has 0:
 * none, the first I/O fetches one). Before f is shared. */
void cl_cap_init(struct nacre_file *f, uint8_t has, const struct wire_cap *cap);
/* Frees what cl_cap_init set up. */
void cl_cap_fini(struct nacre_file *f);
/* Replaces f's capability (a re-open after an MDS restart gave a new one). Thread-safe. */
void cl_cap_set(struct nacre_file *f, uint8_t has, const struct wire_cap *cap);
/* The capability to attach to an OST request of f: fetches one from the MDS first only if
 * f has none or its own has expired by this node's clock (the pinger renews them before).
 * Returns 1 with *out set, or 0 if f has none to send (an MDS without capabilities). May
 * block on the MDS. Thread-safe. */
int cl_cap_get(struct nacre_file *f, struct wire_cap *out);
/* After an OSS answered -EACCES to a request that carried used (NULL: none): renews f's
 * capability unless another thread did since. Returns 0 when a capability other than used
 * is there to retry with, else a negative error. Blocks on the MDS. Thread-safe. */
int cl_cap_refresh(struct nacre_file *f, const struct wire_cap *used);

/* Renews f's capability if its renewal time (half its lifetime) came. For the pinger
 * thread, which holds no lock (fs.c). Blocks on the MDS. Thread-safe. */
void cl_cap_renew_due(struct nacre_file *f);

#endif
