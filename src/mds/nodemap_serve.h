/* nodemap_serve.h - the caller's nodemap applied to one request before it runs (serve.c):
 * deny (-EACCES), read-only (-EROFS for changes), fileset (-EACCES for a FID outside the
 * client's subtree) and the credentials mapped (root squash, squash all, id maps) in a
 * rewritten body. Servers (OSSes, the HSM agent) pass unchanged. */
#ifndef NACRE_MDS_NODEMAP_SERVE_H
#define NACRE_MDS_NODEMAP_SERVE_H

#include "mds/mds.h"
#include "mds/nodemap.h"
#include "proto/cursor.h"
#include "proto/rpc.h"

struct nodemap_req {
	struct rpc_request req;   /* the request as it runs (body mapped) */
	struct wire_cursor body;  /* owns the rewritten body, if any */
	int has_body;
	struct nodemap_view view; /* the rule applied */
};

/* Fills nr for req. Returns 0 (run nr->req) or the status to answer: -EACCES, -EROFS.
 * A body it cannot read passes unchanged (the handler answers -EPROTO). nr must be
 * released with mds_nodemap_req_fini whatever the result. */
int mds_nodemap_admit(struct mds *m, const struct rpc_request *req, struct nodemap_req *nr);
/* After the handler returned rc: a rename makes the fileset checks forget what they knew;
 * a fileset client's FID2PATH answer becomes relative to its root. */
void mds_nodemap_done(struct mds *m, struct nodemap_req *nr, int rc, struct rpc_reply *rep);
void mds_nodemap_req_fini(struct nodemap_req *nr);

/* rpc_server_conf.sec_min_for of the MDS (arg: struct mds): the stronger of --sec-min
 * (m->sec_min) and the sec_min of the nodemap rule a peer at addr proving name matches; *rule
 * names what set it. Event thread only (rule points to a buffer of that thread). */
int mds_nodemap_sec_min_for(void *arg, const char *addr, const char *name, const char **rule);

#endif
