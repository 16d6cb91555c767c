/* nodemap_rpc.c - the NODEMAP request: rule administration for admin clients, and SELF,
 * a mount asking for its own rule (see nodemap_rpc.h). */
#include "mds/nodemap_rpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mds/inode.h"
#include "mds/nodemap.h"

/* TEST: which rule matches the client and what it makes of a few ids. */
static char *test_text(struct mds *m, const char *addr, const char *client)
{
	struct nodemap_view v;
	char *text = malloc(8192);
	size_t used = 0;

	if (!text)
		return NULL;
	nodemap_lookup_client(m->nodemap, addr, client, &v);
#define OUT(...)                                                                            \
	do {                                                                                \
		int n_ = snprintf(text + used, 8192 - used, __VA_ARGS__);                   \
		if (n_ > 0 && used + (size_t)n_ < 8192)                                     \
			used += (size_t)n_;                                                 \
	} while (0)
	OUT("client: address=%s name=%s\n", addr[0] ? addr : "-", client[0] ? client : "-");
	if (!v.has_rule)
		OUT("nodemap: none (%s)\n", nodemap_has_rules(m->nodemap)
						    ? "no rule matches and there is no default"
						    : "no rules: nothing is mapped");
	else
		OUT("nodemap: %s\n", v.rule);
	OUT("admin=%d trusted=%d squash_all=%d readonly=%d deny=%d sec_min=%s\n", v.admin,
	    v.ids.trusted, v.ids.squash_all, v.readonly, v.deny, nodemap_sec_name(v.sec_min));
	if (v.has_fileset) {
		char set[NACRE_PATH_MAX + 1];
		nodemap_fileset_path(m->nodemap, v.rule, set);
		OUT("fileset=%s\n", set);
	} else {
		OUT("fileset=/\n");
	}
	static const uint32_t ids[] = {0, 1000};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		OUT("uid %u -> %u, gid %u -> %u\n", ids[i], nodemap_map_uid(&v, ids[i]), ids[i],
		    nodemap_map_gid(&v, ids[i]));
	for (uint32_t i = 0; i < v.ids.nuidmaps; i++)
		OUT("uid %u..%u -> %u..%u\n", v.ids.uidmaps[i].client,
		    v.ids.uidmaps[i].client + v.ids.uidmaps[i].count - 1, v.ids.uidmaps[i].fs,
		    v.ids.uidmaps[i].fs + v.ids.uidmaps[i].count - 1);
	for (uint32_t i = 0; i < v.ids.ngidmaps; i++)
		OUT("gid %u..%u -> %u..%u\n", v.ids.gidmaps[i].client,
		    v.ids.gidmaps[i].client + v.ids.gidmaps[i].count - 1, v.ids.gidmaps[i].fs,
		    v.ids.gidmaps[i].fs + v.ids.gidmaps[i].count - 1);
#undef OUT
	return text;
}

static void answer(struct rpc_reply *rep, const char *text, const struct nacre_fid *root)
{
	struct wire_nodemap_rep r = {.text = text, .root = *root};

	size_t n = text ? strlen(text) : 0;

	r.text_len = (uint32_t)(n < WIRE_NODEMAP_TEXT_MAX ? n : WIRE_NODEMAP_TEXT_MAX);

	wire_nodemap_rep_encode(&rep->body, &r);
}

int mds_nodemap_dispatch(struct mds *m, const struct rpc_request *req, struct rpc_reply *rep)
{
	struct wire_nodemap_req *r = malloc(sizeof(*r));
	struct nacre_fid root = mds_root_fid();
	struct nodemap_view v;
	char err[512] = "";
	char *text = NULL;
	struct wire_cursor c;
	int rc = 0;

	if (!r)
		return -ENOMEM;
	wire_cursor_init_read(&c, req->body, req->body_len);
	wire_nodemap_req_decode(&c, r);
	if (!wire_cursor_ok(&c) || wire_cursor_left(&c)) {
		free(r);
		return -EPROTO;
	}
	nodemap_lookup(m->nodemap, req, &v);
	if (r->cmd == WIRE_NODEMAP_SELF) {
		if (v.deny) {
			snprintf(err, sizeof(err), "denied by nodemap rule '%s'", v.rule);
			LOG_RATELIMITED(LOG_LVL_WARN, "nodemap", "%s (%s) refused: nodemap %s denies it",
					req->peer, nodemap_peer_identity(req), v.rule);
			rc = -EACCES;
		} else {
			if (v.has_fileset)
				root = v.fileset;
			snprintf(err, sizeof(err), "%s", v.has_rule ? v.rule : "");
		}
		answer(rep, err, &root);
		free(r);
		return rc;
	}
	if (!m->nodemap) {
		free(r);
		return -EOPNOTSUPP;
	}
	if (!v.admin) {
		snprintf(err, sizeof(err), "nodemap %s of this client (%s, %s) is not admin: only "
			 "an admin client may change or read the rules", v.has_rule ? v.rule : "-",
			 req->peer, nodemap_peer_identity(req));
		answer(rep, err, &root);
		free(r);
		return -EPERM;
	}
	switch (r->cmd) {
	case WIRE_NODEMAP_ADD:
		rc = nodemap_add(m->nodemap, r->name, r->key, r->value, err, sizeof(err));
		break;
	case WIRE_NODEMAP_DEL:
		rc = nodemap_del(m->nodemap, r->name, err, sizeof(err));
		break;
	case WIRE_NODEMAP_MODIFY:
		rc = nodemap_modify(m->nodemap, r->name, r->key, r->value, err, sizeof(err));
		break;
	case WIRE_NODEMAP_LIST:
		text = nodemap_list(m->nodemap);
		rc = text ? 0 : -ENOMEM;
		break;
	case WIRE_NODEMAP_TEST:
		text = test_text(m, r->key, r->value);
		rc = text ? 0 : -ENOMEM;
		break;
	default:
		rc = -EPROTO;
		break;
	}
	if (rc == 0 && (r->cmd == WIRE_NODEMAP_ADD || r->cmd == WIRE_NODEMAP_DEL ||
			r->cmd == WIRE_NODEMAP_MODIFY))
		LOG_INFO("nodemap", "%s (%s) changed nodemap %s", req->peer,
			 nodemap_peer_identity(req), r->name);
	answer(rep, text ? text : err, &root);
	free(text);
	free(r);
	return rc;
}
