/* nodemap_rule.c - one nodemap rule: parsing its properties, matching a client, mapping
 * ids, its database record and its listing. Pure functions (see nodemap.h). */
#include "mds/nodemap_rule.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/cursor.h"

#define RULE_REC_VERSION 1

#define ERR(...) (snprintf(err, len, __VA_ARGS__), -EINVAL)

void nodemap_rule_init(struct nodemap_rule *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	str_copy(r->name, name, sizeof(r->name));
	r->ids.squash_uid = NODEMAP_SQUASH_ID;
	r->ids.squash_gid = NODEMAP_SQUASH_ID;
}

int nodemap_parse_addr(const char *s, uint8_t addr[16])
{
	char host[64];
	const char *end;
	size_t n;

	if (s[0] == '[') {
		end = strchr(s, ']');
		if (!end)
			return -EINVAL;
		s++;
	} else if (strchr(s, '.') && strchr(s, ':')) {
		end = strrchr(s, ':'); /* a.b.c.d:port */
	} else if (strchr(s, ':') && strchr(s, ':') == strrchr(s, ':')) {
		end = strchr(s, ':'); /* host:port with one colon: an IPv4 name */
	} else {
		end = s + strlen(s);
	}
	n = (size_t)(end - s);
	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	memset(addr, 0, 16);
	struct in_addr a4;
	if (inet_pton(AF_INET, host, &a4) == 1) {
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, &a4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, addr) == 1)
		return 0;
	/* a peer string "::1:port" (IPv6 without brackets, as the server prints it) */
	end = strrchr(host, ':');
	if (end && end != host) {
		host[end - host] = '\0';
		if (inet_pton(AF_INET6, host, addr) == 1)
			return 0;
	}
	return -EINVAL;
}

static void mask_prefix(uint8_t a[16], unsigned prefix)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned bits = prefix > i * 8 ? prefix - i * 8 : 0;
		if (bits >= 8)
			continue;
		a[i] &= (uint8_t)(0xff00u >> bits);
	}
}

static int in_range(const struct nodemap_range *r, const uint8_t addr[16])
{
	uint8_t a[16];

	memcpy(a, addr, 16);
	mask_prefix(a, r->prefix);
	return memcmp(a, r->addr, 16) == 0;
}

static int parse_range(const char *s, struct nodemap_range *out)
{
	char buf[80];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	struct in_addr a4;
	long prefix;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(out, 0, sizeof(*out));
	int v4 = inet_pton(AF_INET, buf, &a4) == 1;
	if (v4) {
		out->addr[10] = out->addr[11] = 0xff;
		memcpy(out->addr + 12, &a4, 4);
	} else if (inet_pton(AF_INET6, buf, out->addr) != 1) {
		return -EINVAL;
	}
	int max = v4 ? 32 : 128;
	prefix = max;
	if (slash) {
		char *e;
		if (!slash[1])
			return -EINVAL;
		prefix = strtol(slash + 1, &e, 10);
		if (*e || prefix < 0 || prefix > max)
			return -EINVAL;
	}
	out->prefix = (uint8_t)(v4 ? prefix + 96 : prefix);
	mask_prefix(out->addr, out->prefix);
	return 0;
}

/* Splits s at commas into items of at most cap bytes; calls fn on each. */
static int each_item(const char *s, size_t cap, int (*fn)(void *arg, const char *item),
		     void *arg)
{
	char item[NACRE_NAME_MAX + 1];

	while (*s) {
		const char *c = strchr(s, ',');
		size_t n = c ? (size_t)(c - s) : strlen(s);
		if (n >= sizeof(item) || n >= cap)
			return -E2BIG;
		memcpy(item, s, n);
		item[n] = '\0';
		if (n) {
			int rc = fn(arg, item);
			if (rc)
				return rc;
		}
		s += n + (c ? 1 : 0);
	}
	return 0;
}

struct items_ctx {
	struct nodemap_rule *r;
	char *err;
	size_t len;
};

static int add_range(void *arg, const char *item)
{
	struct items_ctx *x = arg;
	char *err = x->err;
	size_t len = x->len;

	if (x->r->nranges >= NODEMAP_RANGES_MAX)
		return ERR("too many ranges (at most %d)", NODEMAP_RANGES_MAX);
	if (parse_range(item, &x->r->ranges[x->r->nranges]))
		return ERR("bad CIDR range '%s' (want ADDRESS[/PREFIX], IPv4 or IPv6)", item);
	x->r->nranges++;
	return 0;
}

static int add_client(void *arg, const char *item)
{
	struct items_ctx *x = arg;
	char *err = x->err;
	size_t len = x->len;

	if (x->r->nclients >= NODEMAP_CLIENTS_MAX)
		return ERR("too many client names (at most %d)", NODEMAP_CLIENTS_MAX);
	str_copy(x->r->clients[x->r->nclients++], item, NACRE_NAME_MAX + 1);
	return 0;
}

int nodemap_rule_set_ranges(struct nodemap_rule *r, const char *ranges, char *err, size_t len)
{
	struct nodemap_rule t = *r;
	struct items_ctx x = {&t, err, len};

	t.nranges = 0;
	int rc = each_item(ranges, 80, add_range, &x);
	if (rc == -E2BIG)
		return ERR("bad CIDR range in '%s': an item is too long", ranges);
	if (rc)
		return rc;
	r->nranges = t.nranges;
	memcpy(r->ranges, t.ranges, sizeof(r->ranges));
	return 0;
}

int nodemap_rule_set_clients(struct nodemap_rule *r, const char *clients, char *err,
			     size_t len)
{
	struct nodemap_rule *t = malloc(sizeof(*t));
	if (!t)
		return ERR("out of memory");
	*t = *r;
	struct items_ctx x = {t, err, len};
	t->nclients = 0;
	int rc = each_item(clients, NACRE_NAME_MAX + 1, add_client, &x);
	if (rc == -E2BIG)
		rc = ERR("a client name in '%s' is longer than %d bytes", clients, NACRE_NAME_MAX);
	if (!rc) {
		r->nclients = t->nclients;
		memcpy(r->clients, t->clients, sizeof(r->clients));
	}
	free(t);
	return rc;
}

static int parse_bool(const char *v, uint8_t *out)
{
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "false")) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

static int parse_id(const char *v, uint32_t *out)
{
	char *e;
	unsigned long long x;

	if (!v[0] || v[0] == '-')
		return -EINVAL;
	x = strtoull(v, &e, 10);
	if (*e || x > UINT32_MAX - 1)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

/* "CLIENT:FS[:COUNT]" */
static int parse_idmap(const char *v, struct nodemap_idmap *m)
{
	char buf[64], *p, *q;

	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	str_copy(buf, v, sizeof(buf));
	p = strchr(buf, ':');
	if (!p)
		return -EINVAL;
	*p++ = '\0';
	q = strchr(p, ':');
	if (q)
		*q++ = '\0';
	m->count = 1;
	if (parse_id(buf, &m->client) || parse_id(p, &m->fs) || (q && parse_id(q, &m->count)) ||
	    m->count == 0 || (uint64_t)m->client + m->count > UINT32_MAX ||
	    (uint64_t)m->fs + m->count > UINT32_MAX)
		return -EINVAL;
	return 0;
}

static int ranges_overlap(const struct nodemap_idmap *a, const struct nodemap_idmap *b)
{
	return a->client < b->client + b->count && b->client < a->client + a->count;
}

static int set_idmap(struct nodemap_idmap *maps, uint32_t *n, const char *what,
		     const char *value, int unmap, char *err, size_t len)
{
	struct nodemap_idmap m;

	if (parse_idmap(value, &m))
		return ERR("bad %s '%s' (want CLIENT:FS[:COUNT], ids 0..4294967294)", what,
			   value);
	for (uint32_t i = 0; i < *n; i++) {
		if (unmap && maps[i].client == m.client && maps[i].fs == m.fs &&
		    maps[i].count == m.count) {
			maps[i] = maps[--*n];
			return 0;
		}
		if (!unmap && ranges_overlap(&maps[i], &m))
			return ERR("%s '%s' overlaps the map %u:%u:%u", what, value, maps[i].client,
				   maps[i].fs, maps[i].count);
	}
	if (unmap)
		return ERR("the rule has no %s '%s'", what, value);
	if (*n >= NODEMAP_IDMAPS_MAX)
		return ERR("too many %s ranges (at most %d)", what, NODEMAP_IDMAPS_MAX);
	maps[(*n)++] = m;
	return 0;
}

static int set_fileset(struct nodemap_rule *r, const char *v, char *err, size_t len)
{
	char out[NACRE_PATH_MAX + 1];
	size_t o = 0;
	const char *p = v;

	if (v[0] && v[0] != '/')
		return ERR("bad fileset '%s': an absolute path from the file system root", v);
	while (*p) {
		while (*p == '/')
			p++;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - c);
		if (n == 0)
			break;
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return ERR("bad fileset '%s': no '.' or '..' components", v);
		if (n > NACRE_NAME_MAX || o + n + 1 >= sizeof(out))
			return ERR("bad fileset '%s': too long", v);
		out[o++] = '/';
		memcpy(out + o, c, n);
		o += n;
	}
	out[o] = '\0';
	str_copy(r->fileset, out, sizeof(r->fileset));
	return 0;
}

const char *nodemap_sec_name(uint32_t sec)
{
	switch (sec) {
	case NODEMAP_SEC_INTEGRITY:
		return "integrity";
	case NODEMAP_SEC_PRIVACY:
		return "privacy";
	default:
		return "null";
	}
}

int nodemap_rule_set(struct nodemap_rule *r, const char *property, const char *value,
		     char *err, size_t len)
{
	uint8_t *flag = NULL;
	uint32_t *id = NULL;

	if (!strcmp(property, "admin"))
		flag = &r->ids.admin;
	else if (!strcmp(property, "trusted"))
		flag = &r->ids.trusted;
	else if (!strcmp(property, "squash_all"))
		flag = &r->ids.squash_all;
	else if (!strcmp(property, "readonly"))
		flag = &r->readonly;
	else if (!strcmp(property, "deny"))
		flag = &r->deny;
	else if (!strcmp(property, "squash_uid"))
		id = &r->ids.squash_uid;
	else if (!strcmp(property, "squash_gid"))
		id = &r->ids.squash_gid;
	if (flag) {
		if (parse_bool(value, flag))
			return ERR("bad value '%s' for %s (want 0 or 1)", value, property);
		return 0;
	}
	if (id) {
		if (parse_id(value, id))
			return ERR("bad value '%s' for %s (want an id 0..4294967294)", value,
				   property);
		return 0;
	}
	if (!strcmp(property, "map_uid") || !strcmp(property, "unmap_uid"))
		return set_idmap(r->ids.uidmaps, &r->ids.nuidmaps, "uid map", value,
				 property[0] == 'u', err, len);
	if (!strcmp(property, "map_gid") || !strcmp(property, "unmap_gid"))
		return set_idmap(r->ids.gidmaps, &r->ids.ngidmaps, "gid map", value,
				 property[0] == 'u', err, len);
	if (!strcmp(property, "fileset"))
		return set_fileset(r, value, err, len);
	if (!strcmp(property, "ranges"))
		return nodemap_rule_set_ranges(r, value, err, len);
	if (!strcmp(property, "clients"))
		return nodemap_rule_set_clients(r, value, err, len);
	if (!strcmp(property, "sec_min")) {
		for (uint32_t s = NODEMAP_SEC_NULL; s <= NODEMAP_SEC_PRIVACY; s++)
			if (!strcmp(value, nodemap_sec_name(s))) {
				r->sec_min = s;
				return 0;
			}
		return ERR("bad value '%s' for sec_min (want null, integrity or privacy)", value);
	}
	return ERR("unknown property '%s' (known: admin, trusted, squash_uid, squash_gid, "
		   "squash_all, readonly, fileset, deny, map_uid, map_gid, unmap_uid, unmap_gid, "
		   "sec_min, ranges, clients)",
		   property);
}

int nodemap_rule_score(const struct nodemap_rule *r, const uint8_t addr[16], int has_addr,
		       const char *client)
{
	int best = -1, named = 0;

	if (r->nranges == 0 && r->nclients == 0)
		return 0;
	if (r->nclients) {
		for (uint32_t i = 0; i < r->nclients && !named; i++)
			named = client && !strcmp(client, r->clients[i]);
		if (!named)
			return 0;
	}
	if (r->nranges) {
		if (!has_addr)
			return 0;
		for (uint32_t i = 0; i < r->nranges; i++)
			if (in_range(&r->ranges[i], addr) && (int)r->ranges[i].prefix > best)
				best = r->ranges[i].prefix;
		if (best < 0)
			return 0;
	}
	/* named beats any range; then the longest prefix (0..128) */
	return 1 + (named ? 200 : 0) + (best < 0 ? 0 : best);
}

static uint32_t map_id(const struct nodemap_idmap *maps, uint32_t n, uint32_t id, int *hit)
{
	for (uint32_t i = 0; i < n; i++)
		if (id >= maps[i].client && id - maps[i].client < maps[i].count) {
			*hit = 1;
			return maps[i].fs + (id - maps[i].client);
		}
	*hit = 0;
	return id;
}

uint32_t nodemap_ids_map_uid(const struct nodemap_ids *m, uint32_t uid)
{
	int hit;

	if (m->admin)
		return uid;
	if (m->squash_all)
		return m->squash_uid;
	uid = map_id(m->uidmaps, m->nuidmaps, uid, &hit);
	if (!hit && uid == 0 && !m->trusted)
		return m->squash_uid;
	return uid;
}

uint32_t nodemap_ids_map_gid(const struct nodemap_ids *m, uint32_t gid)
{
	int hit;

	if (m->admin)
		return gid;
	if (m->squash_all)
		return m->squash_gid;
	gid = map_id(m->gidmaps, m->ngidmaps, gid, &hit);
	if (!hit && gid == 0 && !m->trusted)
		return m->squash_gid;
	return gid;
}

static uint32_t unmap_id(const struct nodemap_idmap *maps, uint32_t n, uint32_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (id >= maps[i].fs && id - maps[i].fs < maps[i].count)
			return maps[i].client + (id - maps[i].fs);
	return id;
}

uint32_t nodemap_ids_unmap_uid(const struct nodemap_ids *m, uint32_t uid)
{
	return m->admin || m->squash_all ? uid : unmap_id(m->uidmaps, m->nuidmaps, uid);
}

uint32_t nodemap_ids_unmap_gid(const struct nodemap_ids *m, uint32_t gid)
{
	return m->admin || m->squash_all ? gid : unmap_id(m->gidmaps, m->ngidmaps, gid);
}

/* ---------------- record ---------------- */

static void put_str(struct wire_cursor *c, const char *s)
{
	size_t n = strlen(s);
	wire_put_u16(c, (uint16_t)n);
	wire_put_bytes(c, s, n);
}

static void get_str(struct wire_cursor *c, char *out, size_t cap)
{
	uint16_t n = wire_get_u16(c);
	if (!wire_cursor_ok(c) || n >= cap) {
		wire_cursor_fail(c, -EIO);
		out[0] = '\0';
		return;
	}
	wire_get_bytes(c, out, n);
	out[n] = '\0';
}

static void put_maps(struct wire_cursor *c, const struct nodemap_idmap *m, uint32_t n)
{
	wire_put_u32(c, n);
	for (uint32_t i = 0; i < n; i++) {
		wire_put_u32(c, m[i].client);
		wire_put_u32(c, m[i].fs);
		wire_put_u32(c, m[i].count);
	}
}

static void get_maps(struct wire_cursor *c, struct nodemap_idmap *m, uint32_t *n)
{
	*n = wire_get_u32(c);
	if (*n > NODEMAP_IDMAPS_MAX) {
		wire_cursor_fail(c, -EIO);
		*n = 0;
		return;
	}
	for (uint32_t i = 0; i < *n; i++) {
		m[i].client = wire_get_u32(c);
		m[i].fs = wire_get_u32(c);
		m[i].count = wire_get_u32(c);
	}
}

int nodemap_rule_encode(const struct nodemap_rule *r, uint8_t *buf, size_t len)
{
	struct wire_cursor c;

	wire_cursor_init_write(&c, buf, len);
	wire_put_u16(&c, RULE_REC_VERSION);
	wire_put_u32(&c, r->nranges);
	for (uint32_t i = 0; i < r->nranges; i++) {
		wire_put_bytes(&c, r->ranges[i].addr, 16);
		wire_put_u8(&c, r->ranges[i].prefix);
	}
	wire_put_u32(&c, r->nclients);
	for (uint32_t i = 0; i < r->nclients; i++)
		put_str(&c, r->clients[i]);
	wire_put_u8(&c, r->ids.admin);
	wire_put_u8(&c, r->ids.trusted);
	wire_put_u8(&c, r->ids.squash_all);
	wire_put_u8(&c, r->readonly);
	wire_put_u8(&c, r->deny);
	wire_put_u32(&c, r->ids.squash_uid);
	wire_put_u32(&c, r->ids.squash_gid);
	put_maps(&c, r->ids.uidmaps, r->ids.nuidmaps);
	put_maps(&c, r->ids.gidmaps, r->ids.ngidmaps);
	put_str(&c, r->fileset);
	wire_put_u32(&c, r->sec_min);
	return wire_cursor_ok(&c) ? (int)c.pos : -E2BIG;
}

int nodemap_rule_decode(struct nodemap_rule *r, const char *name, const void *buf,
			size_t len)
{
	struct wire_cursor c;

	nodemap_rule_init(r, name);
	wire_cursor_init_read(&c, buf, len);
	if (wire_get_u16(&c) != RULE_REC_VERSION)
		return -EIO;
	r->nranges = wire_get_u32(&c);
	if (r->nranges > NODEMAP_RANGES_MAX)
		return -EIO;
	for (uint32_t i = 0; i < r->nranges; i++) {
		wire_get_bytes(&c, r->ranges[i].addr, 16);
		r->ranges[i].prefix = wire_get_u8(&c);
		if (r->ranges[i].prefix > 128)
			return -EIO;
	}
	r->nclients = wire_get_u32(&c);
	if (r->nclients > NODEMAP_CLIENTS_MAX)
		return -EIO;
	for (uint32_t i = 0; i < r->nclients; i++)
		get_str(&c, r->clients[i], sizeof(r->clients[i]));
	r->ids.admin = wire_get_u8(&c);
	r->ids.trusted = wire_get_u8(&c);
	r->ids.squash_all = wire_get_u8(&c);
	r->readonly = wire_get_u8(&c);
	r->deny = wire_get_u8(&c);
	r->ids.squash_uid = wire_get_u32(&c);
	r->ids.squash_gid = wire_get_u32(&c);
	get_maps(&c, r->ids.uidmaps, &r->ids.nuidmaps);
	get_maps(&c, r->ids.gidmaps, &r->ids.ngidmaps);
	get_str(&c, r->fileset, sizeof(r->fileset));
	r->sec_min = wire_get_u32(&c);
	if (r->sec_min > NODEMAP_SEC_PRIVACY)
		return -EIO;
	return wire_cursor_ok(&c) && wire_cursor_left(&c) == 0 ? 0 : -EIO;
}

/* ---------------- listing ---------------- */

struct out {
	char *p;
	size_t len, used;
};

__attribute__((format(printf, 2, 3))) static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->used < o->len ? o->p + o->used : NULL,
			  o->used < o->len ? o->len - o->used : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used += (size_t)n;
}

static void range_str(const struct nodemap_range *r, char *buf, size_t len)
{
	static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char a[INET6_ADDRSTRLEN];

	if (r->prefix >= 96 && !memcmp(r->addr, v4, 12)) {
		inet_ntop(AF_INET, r->addr + 12, a, sizeof(a));
		snprintf(buf, len, "%s/%u", a, r->prefix - 96u);
	} else {
		inet_ntop(AF_INET6, r->addr, a, sizeof(a));
		snprintf(buf, len, "%s/%u", a, r->prefix);
	}
}

static void list_maps(struct out *o, const char *rule, const char *what,
		      const struct nodemap_idmap *m, uint32_t n)
{
	outf(o, "%s.%s=[", rule, what);
	for (uint32_t i = 0; i < n; i++)
		outf(o, "%s{ client: %u, fs: %u, count: %u }", i ? ", " : "", m[i].client, m[i].fs,
		     m[i].count);
	outf(o, "]\n");
}

size_t nodemap_rule_format(const struct nodemap_rule *r, char *buf, size_t len)
{
	struct out o = {buf, len, 0};
	char rb[80], n[NODEMAP_NAME_MAX + 16];

	snprintf(n, sizeof(n), "nodemap.%s", r->name);
	if (len)
		buf[0] = '\0';
	outf(&o, "%s.ranges=", n);
	for (uint32_t i = 0; i < r->nranges; i++) {
		range_str(&r->ranges[i], rb, sizeof(rb));
		outf(&o, "%s%s", i ? "," : "", rb);
	}
	outf(&o, "\n%s.clients=", n);
	for (uint32_t i = 0; i < r->nclients; i++)
		outf(&o, "%s%s", i ? "," : "", r->clients[i]);
	outf(&o, "\n%s.admin_nodemap=%u\n%s.trusted_nodemap=%u\n%s.squash_all=%u\n", n,
	     r->ids.admin, n, r->ids.trusted, n, r->ids.squash_all);
	outf(&o, "%s.squash_uid=%u\n%s.squash_gid=%u\n", n, r->ids.squash_uid, n,
	     r->ids.squash_gid);
	list_maps(&o, n, "idmap_uid", r->ids.uidmaps, r->ids.nuidmaps);
	list_maps(&o, n, "idmap_gid", r->ids.gidmaps, r->ids.ngidmaps);
	outf(&o, "%s.readonly_mount=%u\n%s.deny_mount=%u\n%s.fileset=%s\n%s.sec_min=%s\n", n,
	     r->readonly, n, r->deny, n, r->fileset[0] ? r->fileset : "/", n,
	     nodemap_sec_name(r->sec_min));
	return o.used;
}
