/* nodemap.h - nodemaps, as Lustre's lctl nodemap_*: rules that match clients by network
 * range and by client identity and say what the MDS makes of their requests (root squash,
 * squash all, uid/gid maps, read-only, fileset, deny, admin). docs/security.md "Nodemaps".
 *
 * Matching. A rule matches a client when every criterion it has holds: its address is in
 * one of the rule's ranges (if it has ranges) and its identity is one of the rule's client
 * names (if it has names); a rule with neither matches nobody. The rule named "default"
 * has no criteria: it is what a client no rule matches gets. Among several matching rules
 * the most specific wins, as in Lustre: a rule naming the client beats one that matches
 * only by range; then the longest matching prefix (an IPv4 range counts as its IPv4-mapped
 * IPv6 prefix, /24 = /120); then the first name in byte order. An MDT with no rule at all
 * (formatted before nodemaps) maps nothing and lets every client run admin requests.
 *
 * Rules live in the MDS database (table nodemap) and in memory; a change bumps a
 * generation, and the match of each connection is cached until the generation moves, so a
 * change applies to connected clients at their next request.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef NACRE_MDS_NODEMAP_H
#define NACRE_MDS_NODEMAP_H

#include <stddef.h>
#include <stdint.h>

#include "mds/mds.h"
#include "mds/nodemap_rule.h"
#include "nacre/nacre_types.h"
#include "proto/rpc.h"

struct mds_nodemap;

/* What the MDS applies to one request: a copy, the caller's. rule is "" when the MDT has
 * no rules (nothing is mapped). */
struct nodemap_view {
	char rule[NODEMAP_NAME_MAX + 1];
	int has_rule;
	int deny, readonly, admin;
	int has_fileset;
	struct nacre_fid fileset; /* the fileset's directory (valid with has_fileset) */
	uint32_t sec_min;
	struct nodemap_ids ids;
};

/* ---- the rule set (nodemap.c) ---- */
/* Loads the rules of m->db. Returns 0 or a negative errno; *out is the caller's
 * (nodemap_destroy). */
int nodemap_create(struct mds *m, struct mds_nodemap **out);
void nodemap_destroy(struct mds_nodemap *nm); /* NULL is fine */
/* A new file system's rules (called once, after a format): "default" squashes root;
 * "local-admin" (admin) matches the client names NODEMAP_LOCAL_ADMIN_CLIENTS, those of
 * `nacre up`'s mount and of the nacre CLI's admin requests. */
#define NODEMAP_LOCAL_ADMIN "local-admin"
#define NODEMAP_LOCAL_ADMIN_CLIENTS "nacre-up,nacre-admin"
int nodemap_format_defaults(struct mds_nodemap *nm);

/* The identity a peer proved (today: the CONNECT name). The one place to change when the
 * handshake proves a key name. */
const char *nodemap_peer_identity(const struct rpc_request *req);
/* Whether the peer acts as a server (an OSS, an HSM agent): servers are never mapped. */
int nodemap_peer_is_server(const struct rpc_request *req);

/* The rule for the request's connection (cached per connection). nm NULL: no rules. */
void nodemap_lookup(struct mds_nodemap *nm, const struct rpc_request *req,
		    struct nodemap_view *v);
/* The rule that would match a client at addr (may be NULL) named client (may be NULL). */
void nodemap_lookup_client(struct mds_nodemap *nm, const char *addr, const char *client,
			   struct nodemap_view *v);
/* Maps a request's credentials (in place) as v's rule says. */
void nodemap_map_cred(const struct nodemap_view *v, struct nacre_cred *cr);
uint32_t nodemap_map_uid(const struct nodemap_view *v, uint32_t uid);
uint32_t nodemap_map_gid(const struct nodemap_view *v, uint32_t gid);
/* 1 if fid is the fileset's directory or below it (always 1 without a fileset), 0 if not,
 * or a negative errno. Cached per directory until a rename. */
int nodemap_in_fileset(struct mds_nodemap *nm, const struct nodemap_view *v,
		       const struct nacre_fid *fid);
/* The fileset path of rule ("" if none or no such rule) into out (NACRE_PATH_MAX + 1). */
void nodemap_fileset_path(struct mds_nodemap *nm, const char *rule, char *out);
/* The namespace moved (a rename committed): forget the fileset verdicts. */
void nodemap_ns_moved(struct mds_nodemap *nm);
/* The minimum security flavour of v's rule (enum nodemap_sec), for the flavour check. */
uint32_t nodemap_sec_min(const struct nodemap_view *v);

/* For object capabilities: the rights (NODEMAP_RIGHT_* bits) a capability for a file may
 * carry once v's rule is applied: none when denied, or when in_fileset is 0; no write when
 * read-only. The MDS calls it where it mints one. */
enum { NODEMAP_RIGHT_READ = 1, NODEMAP_RIGHT_WRITE = 2 };
int nodemap_data_rights(const struct nodemap_view *v, int in_fileset, int rights);

/* Rule administration (the NODEMAP request). Each writes through the group commit, then
 * updates memory and the generation. Return 0 or a negative errno with a sentence in err. */
int nodemap_add(struct mds_nodemap *nm, const char *name, const char *ranges,
		const char *clients, char *err, size_t len);
int nodemap_del(struct mds_nodemap *nm, const char *name, char *err, size_t len);
int nodemap_modify(struct mds_nodemap *nm, const char *name, const char *property,
		   const char *value, char *err, size_t len);
/* Every rule, as nodemap_rule_format, into a heap string (the caller frees); NULL if out
 * of memory. */
char *nodemap_list(struct mds_nodemap *nm);
/* Whether the MDT has any rule (without rules every client is admin). */
int nodemap_has_rules(struct mds_nodemap *nm);
/* The rule generation (bumped by each change). */
uint64_t nodemap_gen(struct mds_nodemap *nm);

#endif
