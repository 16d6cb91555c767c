/* nodemap.c - the rule set: loading, matching with a per-connection cache, id mapping,
 * the fileset ancestry check, and rule changes (see nodemap.h). */
#include "mds/nodemap.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/key.h"
#include "common/log.h"
#include "common/util.h"
#include "mds/db.h"
#include "mds/inode.h"
#include "mds/writer.h"
#include "nacre/nacre_errno.h"

#define SUBSYS "nodemap"
#define CONN_SLOTS 1024
#define FS_SLOTS 4096
#define WALK_MAX 4096 /* directory depth bound of the ancestry walk */
#define REC_MAX 16384

struct conn_slot {
	uint64_t conn_id;
	uint64_t gen; /* of the rules the match was made with; 0 = empty */
	int idx;      /* the matched rule, -1 none */
};

struct fs_slot {
	struct nacre_fid fileset, fid;
	uint64_t gen; /* ns_gen of the verdict + 1; 0 = empty */
	int verdict;
};

struct mds_nodemap {
	struct mds *m;
	pthread_rwlock_t lock; /* rules, nrules, fileset, fileset_ok, gen */
	struct nodemap_rule *rules;
	int nrules;
	struct nacre_fid *fileset; /* per rule: its fileset's directory */
	int *fileset_ok;           /* per rule: 1 resolved, 0 missing (the rule refuses all) */
	uint64_t gen;              /* bumped by every change, starts at 1 */
	pthread_mutex_t admin_lock; /* one change at a time: database then memory */
	pthread_mutex_t cache_lock; /* conns, fs */
	struct conn_slot conns[CONN_SLOTS];
	struct fs_slot fs[FS_SLOTS];
	uint64_t ns_gen; /* atomic: bumped after each rename */
};

/* ---------------- peers ---------------- */

const char *nodemap_peer_identity(const struct rpc_request *req)
{
	/* A client or admin key proves its name in the handshake; a peer holding the cluster
	 * key is trusted with the name it gives (it could issue itself any key anyway). */
	if (req->peer_role != KEY_ROLE_SERVER && req->key_name && req->key_name[0])
		return req->key_name;
	return req->peer_name;
}

int nodemap_peer_is_server(const struct rpc_request *req)
{
	uint16_t op = req->hdr->opcode;
	const char *id = nodemap_peer_identity(req);

	if (req->peer_role != KEY_ROLE_SERVER)
		return 0; /* a client or admin key never passes for a server */
	if (op == WIRE_OP_MDS_TARGET_REGISTER || op == WIRE_OP_MDS_TARGET_HEARTBEAT)
		return 1; /* an OSS */
	/* the HSM copytool, which holds the cluster key */
	return id && !strcmp(id, "nacre-copytool");
}

/* ---------------- loading ---------------- */

/* The directory at path ("" = root) in the namespace; -ENOENT or -ENOTDIR. */
static int resolve_path(struct mds *m, const char *path, struct nacre_fid *out)
{
	struct nacre_fid cur = mds_root_fid();
	char name[NACRE_NAME_MAX + 1];
	struct mds_txn *txn;
	const char *p = path;
	uint32_t type;
	int rc = mds_txn_begin_read(m->db, &txn);

	if (rc)
		return rc;
	while (*p && !rc) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - c);
		if (n == 0)
			break;
		memcpy(name, c, n);
		name[n] = '\0';
		rc = mds_db_dentry_get(txn, &cur, name, &cur, &type);
		if (!rc && !S_ISDIR(type) && type != 0) {
			struct mds_inode *ino = malloc(sizeof(*ino));
			rc = ino ? mds_db_inode_get(txn, &cur, ino) : -ENOMEM;
			if (!rc && !S_ISDIR(ino->mode))
				rc = -ENOTDIR;
			free(ino);
		}
	}
	mds_txn_abort(txn);
	if (!rc)
		*out = cur;
	return rc;
}

struct load_ctx {
	struct nodemap_rule *rules;
	int n, cap;
};

static int load_one(void *arg, const char *name, const void *rec, size_t len)
{
	struct load_ctx *x = arg;

	if (x->n == x->cap) {
		int cap = x->cap ? x->cap * 2 : 8;
		void *p = realloc(x->rules, (size_t)cap * sizeof(*x->rules));
		if (!p)
			return -ENOMEM;
		x->rules = p;
		x->cap = cap;
	}
	if (nodemap_rule_decode(&x->rules[x->n], name, rec, len)) {
		LOG_ERR(SUBSYS, "nodemap rule %s: corrupt record; it is ignored", name);
		return 0;
	}
	x->n++;
	return 0;
}

/* Installs rules (taken) as the set, resolving filesets. Caller holds the write lock. */
static int install(struct mds_nodemap *nm, struct nodemap_rule *rules, int n)
{
	struct nacre_fid *fs = calloc((size_t)n + 1, sizeof(*fs));
	int *ok = calloc((size_t)n + 1, sizeof(*ok));

	if (!fs || !ok) {
		free(fs);
		free(ok);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		fs[i] = mds_root_fid();
		ok[i] = 1;
		if (rules[i].fileset[0]) {
			int rc = resolve_path(nm->m, rules[i].fileset, &fs[i]);
			ok[i] = rc == 0;
			if (rc)
				LOG_WARN(SUBSYS, "nodemap %s: fileset %s: %s; its clients are refused",
					 rules[i].name, rules[i].fileset, nacre_strerror(rc));
		}
	}
	free(nm->rules);
	free(nm->fileset);
	free(nm->fileset_ok);
	nm->rules = rules;
	nm->nrules = n;
	nm->fileset = fs;
	nm->fileset_ok = ok;
	nm->gen++;
	return 0;
}

/* Reads every rule from the database. Caller holds admin_lock (or is creating nm). */
static int reload(struct mds_nodemap *nm)
{
	struct load_ctx x = {0};
	struct mds_txn *txn;
	int rc = mds_txn_begin_read(nm->m->db, &txn);

	if (rc)
		return rc;
	rc = mds_db_nodemap_iter(txn, load_one, &x);
	mds_txn_abort(txn);
	if (rc) {
		free(x.rules);
		return rc;
	}
	pthread_rwlock_wrlock(&nm->lock);
	rc = install(nm, x.rules, x.n);
	pthread_rwlock_unlock(&nm->lock);
	if (rc)
		free(x.rules);
	return rc;
}

int nodemap_create(struct mds *m, struct mds_nodemap **out)
{
	struct mds_nodemap *nm = calloc(1, sizeof(*nm));

	if (!nm)
		return -ENOMEM;
	nm->m = m;
	pthread_rwlock_init(&nm->lock, NULL);
	pthread_mutex_init(&nm->admin_lock, NULL);
	pthread_mutex_init(&nm->cache_lock, NULL);
	int rc = reload(nm);
	if (rc) {
		nodemap_destroy(nm);
		return rc;
	}
	LOG_INFO(SUBSYS, "%d nodemap rule%s%s", nm->nrules, nm->nrules == 1 ? "" : "s",
		 nm->nrules ? "" : " (nothing is mapped)");
	*out = nm;
	return 0;
}

void nodemap_destroy(struct mds_nodemap *nm)
{
	if (!nm)
		return;
	free(nm->rules);
	free(nm->fileset);
	free(nm->fileset_ok);
	pthread_rwlock_destroy(&nm->lock);
	pthread_mutex_destroy(&nm->admin_lock);
	pthread_mutex_destroy(&nm->cache_lock);
	free(nm);
}

/* ---------------- matching ---------------- */

static int find(const struct mds_nodemap *nm, const char *name)
{
	for (int i = 0; i < nm->nrules; i++)
		if (!strcmp(nm->rules[i].name, name))
			return i;
	return -1;
}

/* The best rule for a client; -1 if none (not even "default"). Caller holds the lock. */
static int match(const struct mds_nodemap *nm, const char *addr, const char *client)
{
	uint8_t a[16];
	int has_addr = addr && nodemap_parse_addr(addr, a) == 0, best = -1, score = 0;

	for (int i = 0; i < nm->nrules; i++) {
		int s = nodemap_rule_score(&nm->rules[i], a, has_addr, client);
		/* rules are in name order: the first of equal scores wins */
		if (s > score) {
			score = s;
			best = i;
		}
	}
	return best >= 0 ? best : find(nm, NODEMAP_DEFAULT);
}

/* Fills v from rule idx (-1: none). Caller holds the lock. */
static void fill_view(const struct mds_nodemap *nm, int idx, struct nodemap_view *v)
{
	memset(v, 0, sizeof(*v));
	v->ids.trusted = 1; /* no rule: nothing is squashed */
	v->admin = nm->nrules == 0;
	if (idx < 0)
		return;
	const struct nodemap_rule *r = &nm->rules[idx];
	str_copy(v->rule, r->name, sizeof(v->rule));
	v->has_rule = 1;
	v->ids = r->ids;
	v->admin = r->ids.admin;
	v->readonly = r->readonly;
	v->deny = r->deny || !nm->fileset_ok[idx];
	v->sec_min = r->sec_min;
	if (r->fileset[0]) {
		v->has_fileset = 1;
		v->fileset = nm->fileset[idx];
	}
}

static void server_view(struct nodemap_view *v)
{
	memset(v, 0, sizeof(*v));
	v->ids.admin = 1;
	v->ids.trusted = 1;
}

void nodemap_lookup(struct mds_nodemap *nm, const struct rpc_request *req,
		    struct nodemap_view *v)
{
	if (!nm || nodemap_peer_is_server(req)) {
		server_view(v);
		v->admin = 1;
		return;
	}
	struct conn_slot *s = &nm->conns[req->conn_id % CONN_SLOTS];
	int idx = -2;

	pthread_rwlock_rdlock(&nm->lock);
	pthread_mutex_lock(&nm->cache_lock);
	if (s->conn_id == req->conn_id && s->gen == nm->gen)
		idx = s->idx;
	pthread_mutex_unlock(&nm->cache_lock);
	if (idx == -2) {
		idx = match(nm, req->peer, nodemap_peer_identity(req));
		pthread_mutex_lock(&nm->cache_lock);
		*s = (struct conn_slot){.conn_id = req->conn_id, .gen = nm->gen, .idx = idx};
		pthread_mutex_unlock(&nm->cache_lock);
	}
	fill_view(nm, idx, v);
	pthread_rwlock_unlock(&nm->lock);
}

void nodemap_lookup_client(struct mds_nodemap *nm, const char *addr, const char *client,
			   struct nodemap_view *v)
{
	if (!nm) {
		server_view(v);
		v->admin = 1;
		return;
	}
	pthread_rwlock_rdlock(&nm->lock);
	fill_view(nm, match(nm, addr && addr[0] ? addr : NULL,
			    client && client[0] ? client : NULL),
		  v);
	pthread_rwlock_unlock(&nm->lock);
}

uint32_t nodemap_map_uid(const struct nodemap_view *v, uint32_t uid)
{
	return nodemap_ids_map_uid(&v->ids, uid);
}

uint32_t nodemap_map_gid(const struct nodemap_view *v, uint32_t gid)
{
	return nodemap_ids_map_gid(&v->ids, gid);
}

void nodemap_map_cred(const struct nodemap_view *v, struct nacre_cred *cr)
{
	if (v->ids.admin)
		return;
	cr->uid = nodemap_map_uid(v, cr->uid);
	cr->gid = nodemap_map_gid(v, cr->gid);
	uint32_t n = cr->ngroups < NACRE_MAX_GROUPS ? cr->ngroups : NACRE_MAX_GROUPS;
	for (uint32_t i = 0; i < n; i++)
		cr->groups[i] = nodemap_map_gid(v, cr->groups[i]);
}

uint32_t nodemap_sec_min(const struct nodemap_view *v)
{
	return v->sec_min;
}

int nodemap_data_rights(const struct nodemap_view *v, int in_fileset, int rights)
{
	if (v->deny || !in_fileset)
		return 0;
	if (v->readonly)
		rights &= ~NODEMAP_RIGHT_WRITE;
	return rights;
}

/* ---------------- fileset ---------------- */

static size_t fs_hash(const struct nacre_fid *a, const struct nacre_fid *b)
{
	uint64_t h = a->seq * 0x9e3779b97f4a7c15ull ^ a->oid;
	h = (h ^ b->seq) * 0xff51afd7ed558ccdull ^ (b->oid + ((uint64_t)b->ver << 32));
	h ^= h >> 29;
	return (size_t)(h % FS_SLOTS);
}

static int fs_cached(struct mds_nodemap *nm, const struct nacre_fid *set,
		     const struct nacre_fid *fid, uint64_t gen)
{
	struct fs_slot *s = &nm->fs[fs_hash(set, fid)];
	int v = -1;

	pthread_mutex_lock(&nm->cache_lock);
	if (s->gen == gen + 1 && fid_eq(&s->fid, fid) && fid_eq(&s->fileset, set))
		v = s->verdict;
	pthread_mutex_unlock(&nm->cache_lock);
	return v;
}

static void fs_store(struct mds_nodemap *nm, const struct nacre_fid *set,
		     const struct nacre_fid *fid, uint64_t gen, int verdict)
{
	struct fs_slot *s = &nm->fs[fs_hash(set, fid)];

	pthread_mutex_lock(&nm->cache_lock);
	*s = (struct fs_slot){.fileset = *set, .fid = *fid, .gen = gen + 1, .verdict = verdict};
	pthread_mutex_unlock(&nm->cache_lock);
}

int nodemap_in_fileset(struct mds_nodemap *nm, const struct nodemap_view *v,
		       const struct nacre_fid *fid)
{
	struct nacre_fid root = mds_root_fid(), cur = *fid, parent;
	struct nacre_fid walked[64];
	char name[NACRE_NAME_MAX + 1];
	struct mds_txn *txn;
	int nwalked = 0, verdict = -1, rc;

	if (!nm || !v->has_fileset || fid_eq(fid, &v->fileset))
		return 1;
	/* read before the walk: a rename that commits meanwhile bumps it after */
	uint64_t gen = __atomic_load_n(&nm->ns_gen, __ATOMIC_ACQUIRE);
	rc = mds_txn_begin_read(nm->m->db, &txn);
	if (rc)
		return rc;
	for (int depth = 0; depth < WALK_MAX && verdict < 0; depth++) {
		if (fid_eq(&cur, &v->fileset)) {
			verdict = 1;
			break;
		}
		if (fid_eq(&cur, &root)) {
			verdict = 0;
			break;
		}
		verdict = fs_cached(nm, &v->fileset, &cur, gen);
		if (verdict >= 0)
			break;
		if (nwalked < (int)ARRAY_SIZE(walked))
			walked[nwalked++] = cur;
		/* the first name only: a file linked both inside and outside is judged by it */
		rc = mds_db_link_first(txn, &cur, &parent, name);
		if (rc == -ENOENT) {
			verdict = 0; /* unlinked (or no such FID): nowhere in the subtree */
			break;
		}
		if (rc)
			break;
		cur = parent;
	}
	mds_txn_abort(txn);
	if (verdict < 0)
		return rc ? rc : -ELOOP;
	for (int i = 0; i < nwalked; i++)
		fs_store(nm, &v->fileset, &walked[i], gen, verdict);
	return verdict;
}

void nodemap_fileset_path(struct mds_nodemap *nm, const char *rule, char *out)
{
	out[0] = '\0';
	if (!nm)
		return;
	pthread_rwlock_rdlock(&nm->lock);
	int i = find(nm, rule);
	if (i >= 0)
		str_copy(out, nm->rules[i].fileset, NACRE_PATH_MAX + 1);
	pthread_rwlock_unlock(&nm->lock);
}

void nodemap_ns_moved(struct mds_nodemap *nm)
{
	if (nm)
		__atomic_add_fetch(&nm->ns_gen, 1, __ATOMIC_RELEASE);
}

/* ---------------- changes ---------------- */

struct put_op {
	const char *name;
	uint8_t *rec;
	int len; /* < 0: delete */
};

static int put_fn(struct mds_txn *txn, void *arg)
{
	struct put_op *p = arg;

	if (p->len < 0)
		return mds_db_nodemap_del(txn, p->name);
	return mds_db_nodemap_put(txn, p->name, p->rec, (size_t)p->len);
}

/* Writes r (or deletes name when r is NULL), then reloads. Caller holds admin_lock. */
static int store(struct mds_nodemap *nm, const char *name, const struct nodemap_rule *r,
		 char *err, size_t len)
{
	struct put_op op = {.name = name, .len = -1};
	int rc;

	if (r) {
		op.rec = malloc(REC_MAX);
		if (!op.rec)
			return -ENOMEM;
		op.len = nodemap_rule_encode(r, op.rec, REC_MAX);
		if (op.len < 0) {
			free(op.rec);
			snprintf(err, len, "nodemap %s: the rule is too large", name);
			return -E2BIG;
		}
	}
	rc = mds_writer_submit(nm->m->writer, put_fn, &op);
	free(op.rec);
	if (!rc)
		rc = reload(nm);
	if (rc)
		snprintf(err, len, "cannot store nodemap %s: %s", name, nacre_strerror(rc));
	else
		LOG_INFO(SUBSYS, "nodemap %s %s", name, r ? "stored" : "removed");
	return rc;
}

static int valid_name(const char *name, char *err, size_t len)
{
	size_t n = strlen(name);

	if (n == 0 || n > NODEMAP_NAME_MAX) {
		snprintf(err, len, "bad nodemap name '%s': 1 to %d characters", name,
			 NODEMAP_NAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.')) {
			snprintf(err, len, "bad nodemap name '%s': letters, digits, '-', '_', '.'",
				 name);
			return -EINVAL;
		}
	}
	return 0;
}

/* A copy of rule name (-ENOENT with a sentence if none). Caller holds admin_lock. */
static int copy_rule(struct mds_nodemap *nm, const char *name, struct nodemap_rule *out,
		     char *err, size_t len)
{
	int rc = 0;

	pthread_rwlock_rdlock(&nm->lock);
	int i = find(nm, name);
	if (i < 0) {
		snprintf(err, len, "nodemap %s not found (nacre nodemap list shows the rules)",
			 name);
		rc = -ENOENT;
	} else {
		*out = nm->rules[i];
	}
	pthread_rwlock_unlock(&nm->lock);
	return rc;
}

int nodemap_add(struct mds_nodemap *nm, const char *name, const char *ranges,
		const char *clients, char *err, size_t len)
{
	struct nodemap_rule *r = malloc(sizeof(*r));
	int rc = valid_name(name, err, len);

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&nm->admin_lock);
	if (rc)
		goto out;
	if (!copy_rule(nm, name, r, err, len)) {
		snprintf(err, len, "nodemap %s exists already (modify it, or del it first)", name);
		rc = -EEXIST;
		goto out;
	}
	nodemap_rule_init(r, name);
	rc = nodemap_rule_set_ranges(r, ranges, err, len);
	if (!rc)
		rc = nodemap_rule_set_clients(r, clients, err, len);
	if (rc)
		goto out;
	if (!r->nranges && !r->nclients && strcmp(name, NODEMAP_DEFAULT)) {
		snprintf(err, len, "nodemap %s matches nobody: give --range CIDR and/or --client "
			 "NAME", name);
		rc = -EINVAL;
		goto out;
	}
	if (!strcmp(name, NODEMAP_DEFAULT) && (r->nranges || r->nclients)) {
		snprintf(err, len, "nodemap default takes no ranges or clients: it matches the "
			 "clients no other rule does");
		rc = -EINVAL;
		goto out;
	}
	rc = store(nm, name, r, err, len);
out:
	pthread_mutex_unlock(&nm->admin_lock);
	free(r);
	return rc;
}

int nodemap_del(struct mds_nodemap *nm, const char *name, char *err, size_t len)
{
	struct nodemap_rule *r = malloc(sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&nm->admin_lock);
	rc = copy_rule(nm, name, r, err, len);
	if (!rc)
		rc = store(nm, name, NULL, err, len);
	pthread_mutex_unlock(&nm->admin_lock);
	free(r);
	return rc;
}

int nodemap_modify(struct mds_nodemap *nm, const char *name, const char *property,
		   const char *value, char *err, size_t len)
{
	struct nodemap_rule *r = malloc(sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&nm->admin_lock);
	rc = copy_rule(nm, name, r, err, len);
	if (!rc)
		rc = nodemap_rule_set(r, property, value, err, len);
	if (!rc && !strcmp(name, NODEMAP_DEFAULT) && (r->nranges || r->nclients)) {
		snprintf(err, len, "nodemap default takes no ranges or clients");
		rc = -EINVAL;
	}
	if (!rc && !strcmp(property, "fileset") && r->fileset[0]) {
		struct nacre_fid f;
		rc = resolve_path(nm->m, r->fileset, &f);
		if (rc)
			snprintf(err, len, "bad fileset %s for nodemap %s: %s", r->fileset, name,
				 rc == -ENOTDIR ? "not a directory" : nacre_strerror(rc));
	}
	if (!rc)
		rc = store(nm, name, r, err, len);
	pthread_mutex_unlock(&nm->admin_lock);
	free(r);
	return rc;
}

int nodemap_format_defaults(struct mds_nodemap *nm)
{
	char err[256];
	/* The admin rule complete first, the squashing default last: whichever step fails (a
	 * full disk at format), the admin clients keep their rights. */
	int rc = nodemap_add(nm, NODEMAP_LOCAL_ADMIN, "", NODEMAP_LOCAL_ADMIN_CLIENTS, err,
			     sizeof(err));

	if (!rc)
		rc = nodemap_modify(nm, NODEMAP_LOCAL_ADMIN, "admin", "1", err, sizeof(err));
	if (!rc)
		rc = nodemap_modify(nm, NODEMAP_LOCAL_ADMIN, "trusted", "1", err, sizeof(err));
	if (!rc)
		rc = nodemap_add(nm, NODEMAP_DEFAULT, "", "", err, sizeof(err));
	if (rc)
		LOG_ERR(SUBSYS, "cannot write the default nodemap rules: %s; until they are "
				"added (nacre nodemap add default ...), root is not squashed", err);
	return rc;
}

char *nodemap_list(struct mds_nodemap *nm)
{
	size_t cap = 4096, used = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	pthread_rwlock_rdlock(&nm->lock);
	for (int i = 0; i < nm->nrules && out; i++) {
		size_t need = nodemap_rule_format(&nm->rules[i], NULL, 0) + 1;
		if (used + need > cap) {
			while (used + need > cap)
				cap *= 2;
			char *p = realloc(out, cap);
			if (!p) {
				free(out);
				out = NULL;
				break;
			}
			out = p;
		}
		used += nodemap_rule_format(&nm->rules[i], out + used, cap - used);
	}
	pthread_rwlock_unlock(&nm->lock);
	return out;
}

int nodemap_has_rules(struct mds_nodemap *nm)
{
	int n;

	if (!nm)
		return 0;
	pthread_rwlock_rdlock(&nm->lock);
	n = nm->nrules;
	pthread_rwlock_unlock(&nm->lock);
	return n > 0;
}

uint64_t nodemap_gen(struct mds_nodemap *nm)
{
	uint64_t g;

	pthread_rwlock_rdlock(&nm->lock);
	g = nm->gen;
	pthread_rwlock_unlock(&nm->lock);
	return g;
}
