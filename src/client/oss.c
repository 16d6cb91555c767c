/* oss.c - the OST connection table: which OSS serves each OST index, and one rpc_conn per
 * OSS address shared by every file (several OSTs of one OSS share its connection).
 *
 * The index -> address map comes from the MDS target list (cl_targets_fetch, also behind
 * nacre_targets) at mount, and is reloaded when an index is unknown or a server stops
 * answering (an OSS may come back elsewhere).
 * Connections are created lazily and kept until umount, because other threads may be
 * using a pointer they got earlier.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/cl_internal.h"
#include "client/mdc.h"
#include "client/oss.h"
#include "proto/wire.h"

/* After a transport error, reload the map at most this often. */
#define REFRESH_MIN_INTERVAL_MS 1000
#define STILL_HERE_ASK_MS 2000 /* how long an OSS connection asks the MDS where its OSS is */
/* Smallest encoded target, to check the peer's count against the bytes present. */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cl_oss_init(struct cl_oss_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

void cl_oss_fini(struct cl_oss_table *t)
{
	for (size_t i = 0; i < t->nconns; i++) {
		rpc_conn_destroy(t->conns[i]->conn);
		free(t->conns[i]);
	}
	free(t->conns);
	free(t->osts);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

static int refresh(struct nacre_fs *fs, int quiet);

/* The connection's still_here (rpc.h): does the MDS's target list, asked again at most once
 * a second, still place an OST at oc's address? An MDS that cannot be asked says nothing:
 * the connection keeps waiting for the OSS there. */
static int oss_still_here(void *arg)
{
	struct cl_oss_conn *oc = arg;
	struct cl_oss_table *t = &oc->fs->oss;
	int stale, here = 0;

	pthread_mutex_lock(&t->lock);
	stale = now_ms() - t->refreshed_ms >= REFRESH_MIN_INTERVAL_MS;
	pthread_mutex_unlock(&t->lock);
	if (stale && refresh(oc->fs, 1) != 0)
		return 1;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->nosts && !here; i++)
		here = strcmp(t->osts[i].addr, oc->addr) == 0;
	pthread_mutex_unlock(&t->lock);
	return here;
}

/* The connection to addr, created (not yet connected) if new. Caller holds t->lock. */
static struct cl_oss_conn *conn_for_addr_locked(struct nacre_fs *fs, const char *addr)
{
	struct cl_oss_table *t = &fs->oss;
	struct rpc_conn_conf conf;
	struct cl_oss_conn *oc;

	for (size_t i = 0; i < t->nconns; i++)
		if (strcmp(t->conns[i]->addr, addr) == 0)
			return t->conns[i];
	if (t->nconns == t->cap_conns) {
		size_t cap = t->cap_conns ? t->cap_conns * 2 : 8;
		struct cl_oss_conn **n = realloc(t->conns, cap * sizeof(*n));
		if (!n)
			return NULL;
		t->conns = n;
		t->cap_conns = cap;
	}
	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return NULL;
	memcpy(oc->addr, addr, strlen(addr) + 1);
	oc->fs = fs;
	memset(&conf, 0, sizeof(conf));
	conf.addr = oc->addr;
	conf.fsname = fs->fsname;
	conf.name = fs->client_name;
	conf.key = &fs->key;
	conf.timeout_ms = fs->timeout_ms;
	/* a session too (no recovery hook: OSTs keep no client state), so object I/O waits
	 * for a restarting OSS as long as metadata calls wait for the MDS */
	conf.recovery_timeout_ms = fs->recovery_timeout_ms;
	conf.client_id = fs->client_id;
	conf.sec = fs->sec;
	conf.sec_exact = fs->sec_exact;
	/* an OSS that moved (restarted elsewhere) is found again through the MDS at once */
	conf.still_here = oss_still_here;
	conf.still_here_arg = oc;
	if (rpc_conn_create(&conf, &oc->conn) != 0) {
		free(oc);
		return NULL;
	}
	t->conns[t->nconns++] = oc;
	cl_log(fs, CL_LOG_DEBUG, "new connection to OSS %s", oc->addr);
	return oc;
}

static struct cl_ost *find_ost_locked(struct cl_oss_table *t, uint32_t idx)
{
	for (size_t i = 0; i < t->nosts; i++)
		if (t->osts[i].idx == idx)
			return &t->osts[i];
	return NULL;
}

int cl_targets_fetch(struct nacre_fs *fs, int within_ms, struct nacre_target **out,
		     int *count)
{
	struct wire_cursor c;
	struct wire_cred_req r;
	struct nacre_cred root;
	struct wire_targets_rep head;
	struct nacre_target *t = NULL;
	struct rpc_msg *m;
	uint32_t n, i;
	int rc;

	*out = NULL;
	*count = 0;
	r.cred = *cl_cred(NULL, &root);
	wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
	wire_cred_req_encode(&c, &r);
	rc = cl_mds_call_within(fs, WIRE_OP_MDS_TARGETS, &c, within_ms, &m);
	wire_cursor_fini(&c);
	if (rc)
		return rc;
	wire_cursor_init_read(&c, m->body, m->body_len);
	/* the decoder believes a count only as far as the bytes present can hold it */
	wire_targets_rep_decode(&c, &head);
	n = head.count;
	if (!wire_cursor_ok(&c)) {
		rc = -EPROTO;
		goto out_free_msg;
	}
	if (n > 0) {
		t = calloc(n, sizeof(*t));
		if (!t) {
			rc = -ENOMEM;
			goto out_free_msg;
		}
	}
	for (i = 0; i < n; i++)
		wire_target_get(&c, &t[i]);
	rc = cl_decode_end(&c);
	if (rc) {
		free(t);
		goto out_free_msg;
	}
	*out = t;
	*count = (int)n;
out_free_msg:
	rpc_msg_free(m);
	return rc;
}

int cl_oss_refresh(struct nacre_fs *fs)
{
	return refresh(fs, 0);
}

/* Takes the MDS's target list as the OST table; quiet: a failure is not logged (asked
 * again every second while an OSS is away). 0 or a negative error. */
static int refresh(struct nacre_fs *fs, int quiet)
{
	struct cl_oss_table *t = &fs->oss;
	struct nacre_target *tg;
	struct cl_ost *osts, *old;
	size_t n = 0;
	int count, rc;

	/* the question of a waiting OSS connection must not wait for the MDS's recovery */
	rc = cl_targets_fetch(fs, quiet ? STILL_HERE_ASK_MS : 0, &tg, &count);
	if (rc) {
		if (!quiet)
			cl_log(fs, CL_LOG_WARN, "cannot refresh the target list from MDS %s: %s",
			       fs->addr, nacre_strerror(rc));
		return rc;
	}
	osts = calloc(count > 0 ? (size_t)count : 1, sizeof(*osts));
	if (!osts) {
		free(tg);
		return -ENOMEM;
	}
	for (int i = 0; i < count; i++) {
		if (tg[i].type != NACRE_TGT_OST || !tg[i].addr[0])
			continue;
		osts[n].idx = tg[i].index;
		memcpy(osts[n].addr, tg[i].addr, sizeof(osts[n].addr));
		osts[n].addr[sizeof(osts[n].addr) - 1] = '\0';
		n++;
	}
	free(tg);

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < n; i++) {
		struct cl_ost *prev = find_ost_locked(t, osts[i].idx);
		if (prev && prev->oc && strcmp(prev->addr, osts[i].addr) == 0)
			osts[i].oc = prev->oc;
		else if (prev && strcmp(prev->addr, osts[i].addr) != 0)
			cl_log(fs, CL_LOG_INFO, "OST%04x moved from %s to %s", osts[i].idx,
			       prev->addr, osts[i].addr);
	}
	old = t->osts;
	t->osts = osts;
	t->nosts = n;
	t->refreshed_ms = now_ms();
	pthread_mutex_unlock(&t->lock);
	free(old);
	return 0;
}

/* The connection for idx if the table knows it, else NULL. Caller holds t->lock. */
static struct rpc_conn *lookup_locked(struct nacre_fs *fs, uint32_t idx)
{
	struct cl_ost *o = find_ost_locked(&fs->oss, idx);

	if (!o)
		return NULL;
	if (!o->oc)
		o->oc = conn_for_addr_locked(fs, o->addr);
	return o->oc ? o->oc->conn : NULL;
}

int cl_oss_get(struct nacre_fs *fs, uint32_t idx, struct rpc_conn **out)
{
	struct rpc_conn *c;

	for (int attempt = 0; attempt < 2; attempt++) {
		pthread_mutex_lock(&fs->oss.lock);
		c = lookup_locked(fs, idx);
		pthread_mutex_unlock(&fs->oss.lock);
		if (c) {
			*out = c;
			return 0;
		}
		if (attempt == 0 && cl_oss_refresh(fs) != 0)
			break;
	}
	cl_log(fs, CL_LOG_ERR, "OST%04x is not registered with MDS %s", idx, fs->addr);
	return -NACRE_ENOTARGET;
}

int cl_oss_moved(struct nacre_fs *fs, uint32_t idx, const struct rpc_conn *used)
{
	struct rpc_conn *c;
	int stale;

	pthread_mutex_lock(&fs->oss.lock);
	stale = now_ms() - fs->oss.refreshed_ms >= REFRESH_MIN_INTERVAL_MS;
	pthread_mutex_unlock(&fs->oss.lock);
	if (stale && cl_oss_refresh(fs) != 0)
		return 0;
	pthread_mutex_lock(&fs->oss.lock);
	c = lookup_locked(fs, idx);
	pthread_mutex_unlock(&fs->oss.lock);
	return c && c != used;
}
