/* nodemap_rule.h - one nodemap rule: its properties, parsing, matching a client, mapping
 * ids, its database record and listing. Pure functions; thread-safe. The rule set that
 * uses them, and the matching order, are in nodemap.h. */
#ifndef NACRE_MDS_NODEMAP_RULE_H
#define NACRE_MDS_NODEMAP_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

#define NODEMAP_DEFAULT "default"
#define NODEMAP_NAME_MAX 63
#define NODEMAP_RANGES_MAX 16
#define NODEMAP_CLIENTS_MAX 8
#define NODEMAP_IDMAPS_MAX 16
#define NODEMAP_SQUASH_ID 65534u

enum nodemap_sec { NODEMAP_SEC_NULL = 0, NODEMAP_SEC_INTEGRITY = 1, NODEMAP_SEC_PRIVACY = 2 };

struct nodemap_range {
	uint8_t addr[16]; /* IPv6, IPv4 as ::ffff:a.b.c.d; bits past prefix are zero */
	uint8_t prefix;   /* 0..128 */
};

struct nodemap_idmap {
	uint32_t client; /* first id of the client's range */
	uint32_t fs;     /* first id of the file system's range */
	uint32_t count;  /* ids in the range, >= 1 */
};

/* How a rule maps ids. Order: admin maps nothing; squash_all squashes every id; else an id
 * in a map range is mapped; else uid 0 (gid 0) becomes squash_uid (squash_gid) unless
 * trusted; other ids pass unchanged. */
struct nodemap_ids {
	uint8_t admin;      /* no squash, no maps, may run admin requests */
	uint8_t trusted;    /* root is not squashed */
	uint8_t squash_all; /* every uid/gid becomes squash_uid/squash_gid */
	uint32_t squash_uid, squash_gid;
	uint32_t nuidmaps, ngidmaps;
	struct nodemap_idmap uidmaps[NODEMAP_IDMAPS_MAX];
	struct nodemap_idmap gidmaps[NODEMAP_IDMAPS_MAX];
};

struct nodemap_rule {
	char name[NODEMAP_NAME_MAX + 1];
	uint32_t nranges;
	struct nodemap_range ranges[NODEMAP_RANGES_MAX];
	uint32_t nclients;
	char clients[NODEMAP_CLIENTS_MAX][NACRE_NAME_MAX + 1];
	struct nodemap_ids ids;
	uint8_t readonly; /* changes answer -EROFS */
	uint8_t deny;     /* every request answers -EACCES */
	char fileset[NACRE_PATH_MAX + 1]; /* "" = the whole file system; else "/a/b" */
	uint32_t sec_min;                 /* enum nodemap_sec */
};

/* A new rule named name with the defaults (squash 65534, nothing else). */
void nodemap_rule_init(struct nodemap_rule *r, const char *name);
/* Parses "CIDR[,CIDR]" (IPv4 or IPv6, a bare address is /32 or /128) into r's ranges and
 * "NAME[,NAME]" into its client names (either may be ""). Returns 0 or -EINVAL with a
 * sentence naming the bad item in err. */
int nodemap_rule_set_ranges(struct nodemap_rule *r, const char *ranges, char *err, size_t len);
int nodemap_rule_set_clients(struct nodemap_rule *r, const char *clients, char *err,
			     size_t len);
/* Sets property (admin, trusted, squash_uid, squash_gid, squash_all, readonly, fileset,
 * deny, map_uid, map_gid, unmap_uid, unmap_gid, sec_min, ranges, clients) from value.
 * Returns 0 or -EINVAL with a sentence naming what is wrong in err. */
int nodemap_rule_set(struct nodemap_rule *r, const char *property, const char *value,
		     char *err, size_t len);
/* Parses an address ("a.b.c.d", "::1", "host:port", "[v6]:port") into addr. 0 or -EINVAL. */
int nodemap_parse_addr(const char *s, uint8_t addr[16]);
/* The score with which r matches the client (0 = no match; see the header comment). */
int nodemap_rule_score(const struct nodemap_rule *r, const uint8_t addr[16], int has_addr,
		       const char *client);
/* Maps a client uid/gid to the file system's (see struct nodemap_ids). */
uint32_t nodemap_ids_map_uid(const struct nodemap_ids *m, uint32_t uid);
uint32_t nodemap_ids_map_gid(const struct nodemap_ids *m, uint32_t gid);
/* The other way, for attributes in replies: a file system id inside a map range becomes
 * the client's; others are unchanged (a squashed id stays what it is). */
uint32_t nodemap_ids_unmap_uid(const struct nodemap_ids *m, uint32_t uid);
uint32_t nodemap_ids_unmap_gid(const struct nodemap_ids *m, uint32_t gid);
/* Record encoding for the database. encode returns the length (<= len) or -E2BIG; decode
 * returns 0 or -EIO for a record it does not understand. */
int nodemap_rule_encode(const struct nodemap_rule *r, uint8_t *buf, size_t len);
int nodemap_rule_decode(struct nodemap_rule *r, const char *name, const void *buf,
			size_t len);
/* Appends r as `lctl get_param nodemap.NAME.*` shows it (one "NAME.property=value" line
 * each) to out (NUL-terminated, len bytes). Returns the bytes it wanted to write. */
size_t nodemap_rule_format(const struct nodemap_rule *r, char *out, size_t len);
const char *nodemap_sec_name(uint32_t sec);

#endif
