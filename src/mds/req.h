/* req.h - the client request a namespace change is made for, as the reply cache and
 * recovery see it (docs/recovery.md).
 *
 * The request path (serve.c) fills one for every non-idempotent request of a session and
 * makes it current on its thread while the handler runs; the group commit (writer.c) takes
 * it with each operation submitted meanwhile, so that the operation's transaction also
 * writes the reply-cache record (transno, and what the operation noted with
 * mds_txn_note_result) and, for the client's first change, its session record.
 */
#ifndef NACRE_MDS_REQ_H
#define NACRE_MDS_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "mds/db.h"
#include "nacre/nacre_types.h"

struct mds_req {
	uint64_t client_id;
	uint64_t xid;
	uint16_t opcode;
	int record;            /* write a reply-cache record with the change */
	uint64_t trim_below;   /* and forget the client's records below this xid (0: none) */
	int persist_client;    /* and the client's session record (its first change) */
	const char *client_name;
	/* a replay: what the first execution made (from the reply the client kept) */
	int replay;
	int has_replay_fid;
	struct nacre_fid replay_fid;
	int has_replay_layout;
	struct nacre_layout replay_layout;
	uint64_t replay_handle; /* a re-open: the handle it had (0: any) */
	/* results, filled by the writer once committed */
	uint64_t transno;
	struct mds_txn_note note;
};

/* The request the calling thread's handler serves, or NULL. */
extern __thread struct mds_req *mds_req_current;

/* The request the operation running in txn serves, or NULL. */
const struct mds_req *mds_req_of(const struct mds_txn *txn);

/* What a replay of opcode makes, from its first execution's reply (len bytes; NULL: none):
 * the FID of an inode it made, and CREATE's layout, into r's replay fields. A reply that
 * does not decode leaves them unset. */
void mds_req_replay_facts(struct mds_req *r, uint16_t opcode, const uint8_t *reply, size_t len);

#endif
