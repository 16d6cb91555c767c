/* fuzz_ost_msgs.c - OSS message decoders. The first input byte selects the message type;
 * the rest is its body. See fuzz_roundtrip.h for what is checked. */
#include "fuzz_roundtrip.h"

FZ_MSG(ost_io_req)
FZ_MSG(ost_attr_rep)
FZ_GROUP(statfs, struct nacre_statfs, wire_statfs_put, wire_statfs_get)
FZ_GROUP(fid, struct nacre_fid, wire_fid_put, wire_fid_get)

static const struct fz_type types[] = {
	FZ_ROW(ost_io_req, struct wire_ost_io_req, NULL, 1),
	FZ_ROW(ost_attr_rep, struct wire_ost_attr_rep, NULL, 1),
	FZ_ROW(statfs, struct nacre_statfs, NULL, 1),
	FZ_ROW(fid, struct nacre_fid, NULL, 1),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	fz_roundtrip(&types[data[0] % (sizeof(types) / sizeof(types[0]))], data + 1, size - 1);
	return 0;
}
