/* wire_batch.c - BATCH's messages (wire.h, "BATCH"): a client's queued namespace changes
 * and a result for each. The changes' bodies are those of their own opcodes, checked when
 * each is applied; here only the frame around them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int wire_batch_op_allowed(uint16_t opcode)
{
	switch (opcode) {
	case WIRE_OP_MDS_CREATE:
	case WIRE_OP_MDS_MKDIR:
	case WIRE_OP_MDS_MKNOD:
	case WIRE_OP_MDS_SYMLINK:
	case WIRE_OP_MDS_UNLINK:
	case WIRE_OP_MDS_RMDIR:
	case WIRE_OP_MDS_RENAME:
	case WIRE_OP_MDS_LINK:
	case WIRE_OP_MDS_SETATTR:
		return 1;
	default:
		return 0;
	}
}

size_t wire_batch_result_max(uint16_t opcode)
{
	static size_t attr_max, create_max; /* the same every time: a race writes the same */

	if (!create_max) {
		struct wire_create_rep *cr = calloc(1, sizeof(*cr));
		struct wire_attr_rep ar;
		struct wire_cursor c;

		if (!cr)
			return WIRE_BODY_MAX;
		memset(&ar, 0, sizeof(ar));
		cr->layout.nosts = NACRE_MAX_STRIPES;
		wire_cursor_init_dyn(&c, WIRE_BODY_MAX);
		wire_attr_rep_encode(&c, &ar);
		attr_max = wire_cursor_pos(&c);
		c.pos = 0;
		wire_create_rep_encode(&c, cr);
		__atomic_store_n(&create_max, wire_cursor_pos(&c), __ATOMIC_RELEASE);
		wire_cursor_fini(&c);
		free(cr);
	}
	return 8 + (opcode == WIRE_OP_MDS_CREATE ? __atomic_load_n(&create_max, __ATOMIC_ACQUIRE)
						 : attr_max);
}

int wire_batch_fits(const struct wire_batch_req *m)
{
	size_t need = 4;

	for (uint32_t i = 0; i < m->count && i < WIRE_BATCH_MAX; i++)
		need += wire_batch_result_max(m->ch[i].opcode);
	return need <= WIRE_BODY_MAX;
}

/* batch_req (since WIRE_FEAT_BATCH): cred, u32 count (1..WIRE_BATCH_MAX), then count
 * changes: u16 opcode (wire_batch_op_allowed), u32 len, len bytes (that opcode's request
 * body) */
void wire_batch_req_encode(struct wire_cursor *c, const struct wire_batch_req *m)
{
	wire_cred_put(c, &m->cred);
	wire_put_u32(c, m->count);
	for (uint32_t i = 0; i < m->count && i < WIRE_BATCH_MAX; i++) {
		wire_put_u16(c, m->ch[i].opcode);
		wire_put_blob(c, m->ch[i].body, m->ch[i].len);
	}
}

void wire_batch_req_decode(struct wire_cursor *c, struct wire_batch_req *m)
{
	wire_cred_get(c, &m->cred);
	m->count = wire_get_u32(c);
	if (m->count == 0 || m->count > WIRE_BATCH_MAX) {
		m->count = 0;
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < m->count; i++) {
		struct wire_batch_change *ch = &m->ch[i];
		ch->opcode = wire_get_u16(c);
		ch->body = wire_get_blob(c, WIRE_BODY_MAX, &ch->len);
		if (!wire_cursor_ok(c) || !wire_batch_op_allowed(ch->opcode)) {
			m->count = i;
			wire_cursor_fail(c, -EPROTO);
			return;
		}
	}
}

/* batch_rep (since WIRE_FEAT_BATCH): u32 count (1..WIRE_BATCH_MAX), then count results:
 * i32 status (0 or a negative errno), u32 len (0 unless status is 0), len bytes */
void wire_batch_rep_encode(struct wire_cursor *c, const struct wire_batch_rep *m)
{
	wire_put_u32(c, m->count);
	for (uint32_t i = 0; i < m->count && i < WIRE_BATCH_MAX; i++) {
		wire_put_u32(c, (uint32_t)m->r[i].status);
		wire_put_blob(c, m->r[i].body, m->r[i].len);
	}
}

void wire_batch_rep_decode(struct wire_cursor *c, struct wire_batch_rep *m)
{
	m->count = wire_get_u32(c);
	if (m->count == 0 || m->count > WIRE_BATCH_MAX) {
		m->count = 0;
		wire_cursor_fail(c, -EPROTO);
		return;
	}
	for (uint32_t i = 0; i < m->count; i++) {
		struct wire_batch_result *r = &m->r[i];
		r->status = (int32_t)wire_get_u32(c);
		r->body = wire_get_blob(c, WIRE_BODY_MAX, &r->len);
		if (!wire_cursor_ok(c) || r->status > 0 || (r->status && r->len)) {
			m->count = i;
			wire_cursor_fail(c, -EPROTO);
			return;
		}
	}
}
