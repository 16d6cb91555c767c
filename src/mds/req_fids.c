/* req_fids.c - the FIDs a request names (see req_fids.h). */
#include "mds/req_fids.h"

#include "proto/wire.h"

int mds_req_fids(uint16_t opcode, const uint8_t *body, uint32_t len,
		 struct nacre_fid out[MDS_REQ_FIDS_MAX])
{
	struct wire_cursor c;
	struct nacre_cred cr;
	int n = 0;

	if (!wire_op_has(opcode, WIRE_OPF_CRED_FID))
		return 0;
	wire_cursor_init_read(&c, body, len);
	wire_cred_get(&c, &cr);
	wire_fid_get(&c, &out[0]);
	if (!wire_cursor_ok(&c))
		return 0;
	n = 1;
	if (opcode == WIRE_OP_MDS_RENAME) {
		struct wire_rename_req r;
		wire_cursor_init_read(&c, body, len);
		wire_rename_req_decode(&c, &r);
		if (wire_cursor_ok(&c))
			out[n++] = r.dparent;
	} else if (opcode == WIRE_OP_MDS_LINK) {
		struct wire_link_req l;
		wire_cursor_init_read(&c, body, len);
		wire_link_req_decode(&c, &l);
		if (wire_cursor_ok(&c))
			out[n++] = l.parent;
	}
	return n;
}
