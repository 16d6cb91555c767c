/* fuzz_frame.c - the frame header, and the list replies that follow a header (READDIR:
 * u32 count, u8 eof, entries; TARGETS: u32 count, targets), which are where a count from a
 * peer meets an allocation. */
#include "fuzz_roundtrip.h"

/* Smallest encodings, to check a count against the bytes present before allocating. */
#define DIRENT_MIN (8 + 16 + 4 + 2 + 1)
#define TARGET_MIN (4 + 4 + 1 + 2 + 48)

static void check_hdr(const uint8_t *data)
{
	struct wire_hdr h;
	uint8_t out[WIRE_HDR_LEN];
	int rc = wire_hdr_decode(data, &h);

	/* Every header field is kept, valid or not: encoding gives the input back. */
	wire_hdr_encode(&h, out);
	if (memcmp(out, data, WIRE_HDR_LEN) != 0)
		fz_fail("hdr", "re-encoding differs from the input");
	if (rc == 0 && (h.magic != WIRE_MAGIC || h.body_len > WIRE_BODY_MAX ||
			h.bulk_len > WIRE_BULK_MAX || h.version != WIRE_VERSION))
		fz_fail("hdr", "accepted an invalid header");
}

static void check_readdir(const uint8_t *data, size_t size)
{
	struct wire_cursor r, e;
	struct nacre_dirent *ents;
	uint32_t count;
	size_t start;

	wire_cursor_init_read(&r, data, size);
	count = wire_get_u32(&r);
	(void)wire_get_u8(&r);
	if (!wire_cursor_ok(&r) || count > wire_cursor_left(&r) / DIRENT_MIN)
		return;
	ents = calloc(count ? count : 1, sizeof(*ents));
	if (!ents)
		return;
	start = wire_cursor_pos(&r);
	for (uint32_t i = 0; i < count && wire_cursor_ok(&r); i++)
		wire_dirent_get(&r, &ents[i]);
	if (wire_cursor_ok(&r)) {
		wire_cursor_init_dyn(&e, size + 64);
		for (uint32_t i = 0; i < count; i++)
			wire_dirent_put(&e, &ents[i]);
		if (!wire_cursor_ok(&e) || wire_cursor_pos(&e) != wire_cursor_pos(&r) - start ||
		    memcmp(e.buf ? e.buf : data, data + start, wire_cursor_pos(&e)) != 0)
			fz_fail("readdir_rep", "re-encoding differs from the input");
		wire_cursor_fini(&e);
	}
	free(ents);
}

static void check_targets(const uint8_t *data, size_t size)
{
	struct wire_cursor r, e;
	struct nacre_target *tg;
	uint32_t count;
	size_t start;

	wire_cursor_init_read(&r, data, size);
	count = wire_get_u32(&r);
	if (!wire_cursor_ok(&r) || count > wire_cursor_left(&r) / TARGET_MIN)
		return;
	tg = calloc(count ? count : 1, sizeof(*tg));
	if (!tg)
		return;
	start = wire_cursor_pos(&r);
	for (uint32_t i = 0; i < count && wire_cursor_ok(&r); i++)
		wire_target_get(&r, &tg[i]);
	if (wire_cursor_ok(&r)) {
		wire_cursor_init_dyn(&e, size + 64);
		for (uint32_t i = 0; i < count; i++)
			wire_target_put(&e, &tg[i]);
		if (!wire_cursor_ok(&e) || wire_cursor_pos(&e) != wire_cursor_pos(&r) - start ||
		    memcmp(e.buf ? e.buf : data, data + start, wire_cursor_pos(&e)) != 0)
			fz_fail("targets_rep", "re-encoding differs from the input");
		wire_cursor_fini(&e);
	}
	free(tg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < WIRE_HDR_LEN)
		return 0;
	check_hdr(data);
	/* The body after the header is read both ways; each list ignores what it rejects. */
	check_readdir(data + WIRE_HDR_LEN, size - WIRE_HDR_LEN);
	check_targets(data + WIRE_HDR_LEN, size - WIRE_HDR_LEN);
	return 0;
}
