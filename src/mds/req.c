/* req.c - the current request (see req.h). */
#include "mds/req.h"

#include "proto/wire.h"

__thread struct mds_req *mds_req_current;

const struct mds_req *mds_req_of(const struct mds_txn *txn)
{
	return txn ? mds_txn_owner(txn) : NULL;
}

/* Ops that make an inode: a replay makes the same one. */
static int makes_inode(uint16_t opcode)
{
	return opcode == WIRE_OP_MDS_CREATE || opcode == WIRE_OP_MDS_MKDIR ||
	       opcode == WIRE_OP_MDS_MKNOD || opcode == WIRE_OP_MDS_SYMLINK ||
	       opcode == WIRE_OP_MDS_HSM_IMPORT;
}

void mds_req_replay_facts(struct mds_req *r, uint16_t opcode, const uint8_t *reply, size_t len)
{
	struct wire_cursor c;

	if (!reply || !makes_inode(opcode))
		return;
	wire_cursor_init_read(&c, reply, len);
	if (opcode == WIRE_OP_MDS_CREATE) {
		struct wire_create_rep cr;
		wire_create_rep_decode(&c, &cr);
		if (!wire_cursor_ok(&c))
			return;
		r->replay_fid = cr.attr.fid;
		r->replay_layout = cr.layout;
		r->has_replay_layout = cr.layout.nosts > 0;
	} else {
		struct wire_attr_rep ar;
		wire_attr_rep_decode(&c, &ar);
		if (!wire_cursor_ok(&c))
			return;
		r->replay_fid = ar.attr.fid;
	}
	r->has_replay_fid = 1;
}
