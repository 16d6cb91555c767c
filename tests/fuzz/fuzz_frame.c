/* fuzz_frame.c - the frame header. (The bodies behind it, the list replies among them, are
 * the message fuzzers' inputs.) */
#include "fuzz_roundtrip.h"

static void check_hdr(const uint8_t *data)
{
	struct wire_hdr h;
	uint8_t out[WIRE_HDR_LEN];
	int rc = wire_hdr_decode(data, &h);

	/* Every header field is kept, valid or not: encoding gives the input back. */
	wire_hdr_encode(&h, out);
	if (memcmp(out, data, WIRE_HDR_LEN) != 0)
		fz_fail("hdr", "re-encoding differs from the input");
	/* the xattr calls' bodies may reach WIRE_BODY_BIG_MAX (the opcode table says which) */
	if (rc == 0 && (h.magic != WIRE_MAGIC || h.body_len > wire_op_body_max(h.opcode) ||
			h.bulk_len > WIRE_BULK_MAX || h.version != WIRE_VERSION))
		fz_fail("hdr", "accepted an invalid header");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < WIRE_HDR_LEN)
		return 0;
	check_hdr(data);
	return 0;
}
