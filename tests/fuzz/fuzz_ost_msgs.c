/* fuzz_ost_msgs.c - OSS message decoders. The first input byte selects the message type;
 * the rest is its body. See fuzz_roundtrip.h for what is checked. */
#include "fuzz_roundtrip.h"

FZ_MSG(ost_io_req)
FZ_MSG(ost_attr_rep)
FZ_MSG(statfs_rep)
FZ_MSG(ost_falloc_req)
FZ_MSG(ost_seek_req)
FZ_MSG(ost_seek_rep)
FZ_GROUP(fid, struct nacre_fid, wire_fid_put, wire_fid_get)

/* OST_DESTROY_BATCH: the header, then exactly count objects. */
struct fz_ost_destroy_req {
	struct wire_ost_destroy_req h;
	struct wire_ost_obj objs[WIRE_OST_DESTROY_MAX];
};
static void enc_ost_destroy_req(struct wire_cursor *c, const void *m)
{
	const struct fz_ost_destroy_req *r = m;
	wire_ost_destroy_req_encode(c, &r->h);
	for (uint32_t i = 0; i < r->h.count && i < WIRE_OST_DESTROY_MAX; i++)
		wire_ost_obj_put(c, &r->objs[i]);
}
static void dec_ost_destroy_req(struct wire_cursor *c, void *m)
{
	struct fz_ost_destroy_req *r = m;
	wire_ost_destroy_req_decode(c, &r->h);
	for (uint32_t i = 0; wire_cursor_ok(c) && i < r->h.count; i++)
		wire_ost_obj_get(c, &r->objs[i]);
}

/* Its reply: the header, then exactly nfailed failures. */
struct fz_ost_destroy_rep {
	struct wire_ost_destroy_rep h;
	struct wire_ost_destroy_fail fails[WIRE_OST_DESTROY_MAX];
};
static void enc_ost_destroy_rep(struct wire_cursor *c, const void *m)
{
	const struct fz_ost_destroy_rep *r = m;
	wire_ost_destroy_rep_encode(c, &r->h);
	for (uint32_t i = 0; i < r->h.nfailed && i < WIRE_OST_DESTROY_MAX; i++)
		wire_ost_destroy_fail_put(c, &r->fails[i]);
}
static void dec_ost_destroy_rep(struct wire_cursor *c, void *m)
{
	struct fz_ost_destroy_rep *r = m;
	wire_ost_destroy_rep_decode(c, &r->h);
	for (uint32_t i = 0; wire_cursor_ok(c) && i < r->h.nfailed; i++)
		wire_ost_destroy_fail_get(c, &r->fails[i]);
}

static const struct fz_type types[] = {
	FZ_ROW(ost_io_req, struct wire_ost_io_req, NULL, 1),
	FZ_ROW(ost_attr_rep, struct wire_ost_attr_rep, NULL, 1),
	FZ_ROW(statfs_rep, struct wire_statfs_rep, NULL, 1),
	FZ_ROW(fid, struct nacre_fid, NULL, 1),
	FZ_ROW(ost_destroy_req, struct fz_ost_destroy_req, NULL, 1),
	FZ_ROW(ost_destroy_rep, struct fz_ost_destroy_rep, NULL, 1),
	FZ_ROW(ost_falloc_req, struct wire_ost_falloc_req, NULL, 1),
	FZ_ROW(ost_seek_req, struct wire_ost_seek_req, NULL, 1),
	FZ_ROW(ost_seek_rep, struct wire_ost_seek_rep, NULL, 1),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	fz_roundtrip(&types[data[0] % (sizeof(types) / sizeof(types[0]))], data + 1, size - 1);
	return 0;
}
