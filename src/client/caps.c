/* caps.c - an open file's object capability and its renewal (see caps.h).
 *
 * The capability comes with OPEN (or CREATE); CAP_GET renews it for the handle, with the
 * rights of that open. Renewal is proactive, at half the capability's lifetime by this
 * node's clock, by the mount's pinger thread (which holds no lock: an I/O pool thread that
 * called the MDS could end up running its recovery, which takes files_lock, while a flush
 * holding files_lock waits for that very thread); an I/O thread calls the MDS itself only
 * for a file that has no capability or one expired by its clock, and reactively: an OSS that refuses a request with EACCES (the capability
 * expired, or clocks disagree) makes the caller renew once and resend, so an application
 * never sees an expiry. Renewals are serialized by renew_lock (they are rare), and a
 * thread that waited for it and finds the capability already replaced uses the new one, so
 * a batch of refused RPCs makes one CAP_GET.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "client/caps.h"
#include "client/cl_internal.h"
#include "client/mdc.h"

/* Never renew more often than this, whatever the clocks say. */
#define RENEW_MIN_S 1
/* After a failed renewal the pinger tries again this much later (an I/O that the OSS
 * refuses meanwhile renews at once). */
#define RENEW_RETRY_S 10

static pthread_mutex_t renew_lock = PTHREAD_MUTEX_INITIALIZER;

/* Caller holds f->cap_lock. */
static void set_locked(struct nacre_file *f, uint8_t has, const struct wire_cap *cap)
{
	int64_t now = (int64_t)time(NULL);
	f->has_cap = has != 0;
	if (!has) {
		memset(&f->cap, 0, sizeof(f->cap));
		f->cap_renew_at = 0;
		return;
	}
	f->cap = *cap;
	int64_t left = (int64_t)cap->expiry - now;
	f->cap_renew_at = now + (left / 2 > RENEW_MIN_S ? left / 2 : RENEW_MIN_S);
}

void cl_cap_init(struct nacre_file *f, uint8_t has, const struct wire_cap *cap)
{
	pthread_mutex_init(&f->cap_lock, NULL);
	f->cap_unsupported = 0;
	set_locked(f, has, cap);
}

void cl_cap_fini(struct nacre_file *f)
{
	pthread_mutex_destroy(&f->cap_lock);
}

void cl_cap_set(struct nacre_file *f, uint8_t has, const struct wire_cap *cap)
{
	pthread_mutex_lock(&f->cap_lock);
	set_locked(f, has, cap);
	pthread_mutex_unlock(&f->cap_lock);
}

/* One CAP_GET for f's handle. 0 with *out, or a negative error. */
static int cap_fetch(struct nacre_file *f, struct wire_cap *out)
{
	struct wire_cap_req req;
	struct wire_cap_rep rep;
	int rc;

	memset(&req, 0, sizeof(req));
	req.cred = f->cred;
	req.fid = f->fid;
	pthread_mutex_lock(&f->lock);
	req.handle = f->handle;
	pthread_mutex_unlock(&f->lock);
	req.layout_gen = f->layout.gen;
	rc = cl_mds_do(f->fs, WIRE_OP_MDS_CAP_GET, &req, &rep);
	if (rc == 0)
		*out = rep.cap;
	return rc;
}

/* Renews f's capability unless it changed from *seen (has_seen: whether there was one)
 * while we waited for renew_lock. Returns 0 if f holds a capability other than seen. */
static int renew(struct nacre_file *f, int has_seen, const struct wire_cap *seen)
{
	struct wire_cap cap;
	int rc;

	pthread_mutex_lock(&renew_lock);
	pthread_mutex_lock(&f->cap_lock);
	int changed = f->has_cap != has_seen ||
		      (has_seen && memcmp(&f->cap, seen, sizeof(*seen)) != 0);
	int unsupported = f->cap_unsupported;
	pthread_mutex_unlock(&f->cap_lock);
	if (changed) {
		pthread_mutex_unlock(&renew_lock);
		return 0;
	}
	if (unsupported) {
		pthread_mutex_unlock(&renew_lock);
		return -EACCES;
	}
	rc = cap_fetch(f, &cap);
	pthread_mutex_lock(&f->cap_lock);
	if (rc == 0) {
		set_locked(f, 1, &cap);
	} else if (rc == -EOPNOTSUPP) {
		f->cap_unsupported = 1; /* an MDS without capabilities: its OSSes want none */
	} else {
		/* keep the one we have; try again in a while */
		f->cap_renew_at = (int64_t)time(NULL) + RENEW_RETRY_S;
	}
	pthread_mutex_unlock(&f->cap_lock);
	pthread_mutex_unlock(&renew_lock);
	if (rc) {
		char fid[NACRE_FID_STR_MAX];
		cl_log(f->fs, CL_LOG_WARN, "renewing the object capability of %s from MDS %s: %s",
		       nacre_fid_format(&f->fid, fid, sizeof(fid)), f->fs->addr,
		       nacre_strerror(rc));
	}
	return rc;
}

int cl_cap_get(struct nacre_file *f, struct wire_cap *out)
{
	struct wire_cap seen;

	pthread_mutex_lock(&f->cap_lock);
	int has = f->has_cap;
	int64_t now = (int64_t)time(NULL);
	int due = !f->cap_unsupported && now >= f->cap_renew_at &&
		  (!has || now >= (int64_t)f->cap.expiry);
	seen = f->cap;
	pthread_mutex_unlock(&f->cap_lock);
	if (due)
		renew(f, has, &seen);
	pthread_mutex_lock(&f->cap_lock);
	has = f->has_cap;
	*out = f->cap;
	pthread_mutex_unlock(&f->cap_lock);
	return has;
}

int cl_cap_refresh(struct nacre_file *f, const struct wire_cap *used)
{
	return renew(f, used != NULL, used);
}

void cl_cap_renew_due(struct nacre_file *f)
{
	struct wire_cap seen;
	pthread_mutex_lock(&f->cap_lock);
	int has = f->has_cap;
	int due = !f->cap_unsupported && f->layout.nosts > 0 &&
		  (int64_t)time(NULL) >= f->cap_renew_at;
	seen = f->cap;
	pthread_mutex_unlock(&f->cap_lock);
	if (due)
		renew(f, has, &seen);
}
