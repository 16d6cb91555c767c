/* test_layout.c - striping arithmetic against a byte-by-byte model, checks, text form. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/layout.h"
#include "common/util.h"
#include "unit.h"

static void mk(struct nacre_layout *l, uint32_t size, int32_t count)
{
	memset(l, 0, sizeof(*l));
	l->pattern = NACRE_PATTERN_RAID0;
	l->stripe_size = size;
	l->stripe_count = count;
	l->stripe_offset = -1;
	l->nosts = (uint32_t)count;
	for (int32_t i = 0; i < count; i++)
		l->ost_idx[i] = (uint32_t)i;
}

/* Walks the file byte by byte the way RAID0 deals it out: S bytes to object 0, the next S
 * to object 1, ..., then the next row. Checks layout_map at every byte and, at each file
 * size in sizes[] (ascending), layout_object_size and layout_file_size_from_object. */
static void model_check(uint32_t s, int32_t c, const uint64_t *sizes, int nsizes)
{
	struct nacre_layout l;
	uint64_t objsz[8] = {0};
	uint64_t row = 0, in_chunk = 0;
	uint32_t stripe = 0;
	uint64_t end = sizes[nsizes - 1];
	int next = 0;
	long map_bad = 0, size_bad = 0, back_bad = 0;

	mk(&l, s, c);
	for (uint64_t off = 0; off <= end; off++) {
		while (next < nsizes && sizes[next] == off) {
			/* A file of off bytes: every object holds what the walk gave it. */
			for (int32_t k = 0; k < c; k++) {
				if (layout_object_size(&l, off, (uint32_t)k) != objsz[k])
					size_bad++;
			}
			next++;
		}
		if (off == end)
			break;
		{
			uint32_t st;
			uint64_t oo;

			layout_map(&l, off, &st, &oo);
			if (st != stripe || oo != row * s + in_chunk)
				map_bad++;
		}
		objsz[stripe] = row * s + in_chunk + 1;
		/* The object's last byte is this one: the implied file size is off + 1. */
		if (layout_file_size_from_object(&l, stripe, objsz[stripe]) != off + 1)
			back_bad++;
		if (++in_chunk == s) {
			in_chunk = 0;
			if (++stripe == (uint32_t)c) {
				stripe = 0;
				row++;
			}
		}
	}
	CHECK_EQ(map_bad, 0);
	CHECK_EQ(size_bad, 0);
	CHECK_EQ(back_bad, 0);
	CHECK_EQ(next, nsizes);
	for (int32_t k = 0; k < c; k++)
		CHECK_EQ(layout_file_size_from_object(&l, (uint32_t)k, 0), 0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_model(void)
{
	static const uint32_t sizes[] = {65536, 1048576};
	static const int32_t counts[] = {1, 2, 4};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (size_t j = 0; j < ARRAY_SIZE(counts); j++) {
			uint64_t s = sizes[i], row = s * (uint64_t)counts[j];
			uint64_t pts[64];
			int n = 0, m = 1;

			/* Sizes around every chunk and row boundary of the first rows. */
			pts[n++] = 0;
			for (uint64_t b = s; b <= 2 * row + s && n < 58; b += s) {
				pts[n++] = b - 1;
				pts[n++] = b;
				pts[n++] = b + 1;
			}
			pts[n++] = s / 2;
			pts[n++] = row + s / 3;
			pts[n++] = 2 * row + s + 12345;
			qsort(pts, (size_t)n, sizeof(pts[0]), cmp_u64);
			for (int k = 1; k < n; k++) {
				if (pts[k] != pts[m - 1])
					pts[m++] = pts[k];
			}
			model_check(sizes[i], counts[j], pts, m);
		}
	}
}

static void test_split(void)
{
	struct nacre_layout l;
	struct layout_extent ex[16];
	uint64_t sum = 0;
	int n;

	mk(&l, 65536, 4);
	/* From the middle of stripe 3 of row 0 into row 1, across 3 boundaries. */
	n = layout_split(&l, 3 * 65536 + 100, 2 * 65536 + 200, ex, 16);
	CHECK_EQ(n, 3);
	CHECK_EQ(ex[0].stripe, 3);
	CHECK_EQ(ex[0].obj_off, 100);
	CHECK_EQ(ex[0].file_off, 3 * 65536 + 100);
	CHECK_EQ(ex[0].len, 65536 - 100);
	CHECK_EQ(ex[1].stripe, 0);
	CHECK_EQ(ex[1].obj_off, 65536);
	CHECK_EQ(ex[1].len, 65536);
	CHECK_EQ(ex[2].stripe, 1);
	CHECK_EQ(ex[2].obj_off, 65536);
	CHECK_EQ(ex[2].len, 300);

	/* Inside one chunk: one piece. */
	n = layout_split(&l, 10, 20, ex, 16);
	CHECK_EQ(n, 1);
	CHECK_EQ(ex[0].len, 20);

	/* Zero length: nothing. */
	CHECK_EQ(layout_split(&l, 10, 0, ex, 16), 0);

	/* Cut at max, then the caller continues from the sum. */
	n = layout_split(&l, 0, 10 * 65536, ex, 4);
	CHECK_EQ(n, 4);
	for (int i = 0; i < n; i++)
		sum += ex[i].len;
	CHECK_EQ(sum, 4 * 65536);
	n = layout_split(&l, sum, 10 * 65536 - sum, ex, 16);
	CHECK_EQ(n, 6);
	CHECK_EQ(ex[0].stripe, 0);
	CHECK_EQ(ex[0].obj_off, 65536);

	/* Every piece agrees with layout_map and never crosses a chunk. */
	{
		long bad = 0;

		mk(&l, 1048576, 2);
		n = layout_split(&l, 777, 5 * 1048576, ex, 16);
		sum = 0;
		for (int i = 0; i < n; i++) {
			uint32_t st;
			uint64_t oo;

			layout_map(&l, ex[i].file_off, &st, &oo);
			bad += st != ex[i].stripe || oo != ex[i].obj_off;
			bad += ex[i].obj_off / 1048576 != (ex[i].obj_off + ex[i].len - 1) / 1048576;
			bad += ex[i].file_off != 777 + sum;
			sum += ex[i].len;
		}
		CHECK_EQ(bad, 0);
		CHECK_EQ(sum, 5 * 1048576);
		CHECK_EQ(n, 6);
	}
}

static void test_checks(void)
{
	struct nacre_layout l;
	char err[128];

	memset(&l, 0, sizeof(l));
	l.stripe_offset = -1;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), 0); /* all defaults */
	l.stripe_size = 65536 * 3;
	l.stripe_count = -1;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), 0);
	l.stripe_size = 65536 + 4096;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "64 KiB") != NULL);
	l.stripe_size = 65536;
	l.stripe_count = -2;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), -EINVAL);
	l.stripe_count = NACRE_MAX_STRIPES + 1;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), -EINVAL);
	l.stripe_count = NACRE_MAX_STRIPES;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), 0);
	l.stripe_offset = 65536;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), -EINVAL);
	l.stripe_offset = -2;
	CHECK_EQ(layout_check_request(&l, err, sizeof(err)), -EINVAL);
	l.stripe_offset = 65535;
	CHECK_EQ(layout_check_request(&l, NULL, 0), 0);
	l.pattern = 7;
	CHECK_EQ(layout_check_request(&l, NULL, 0), -EINVAL);

	mk(&l, 1048576, 4);
	CHECK_EQ(layout_check_file(&l), 0);
	l.nosts = 3;
	CHECK_EQ(layout_check_file(&l), -EINVAL);
	mk(&l, 0, 1);
	CHECK_EQ(layout_check_file(&l), -EINVAL);
	mk(&l, 1000, 1);
	CHECK_EQ(layout_check_file(&l), -EINVAL);
	mk(&l, 65536, 0);
	CHECK_EQ(layout_check_file(&l), -EINVAL);
	mk(&l, 65536, 1);
	l.pattern = 0;
	CHECK_EQ(layout_check_file(&l), -EINVAL);
	mk(&l, 65536, NACRE_MAX_STRIPES);
	CHECK_EQ(layout_check_file(&l), 0);
}

static void test_text(void)
{
	struct nacre_layout l, p;
	char buf[2048];
	char small[10];
	int n;
	static const char *bad[] = {
		"stripe_count=x",
		"stripe_count=129",
		"stripe_count=-2",
		"stripe_size=-1",
		"stripe_size=8G",
		"stripe_offset=65536",
		"pattern=raid1",
		"gen=-1",
		"osts=1,,2",
		"osts=",
		"osts=1,2,",
		"colour=blue",
		"stripe_count",
		"=4",
	};

	mk(&l, 1048576, 4);
	l.ost_idx[2] = 17;
	l.gen = 2;
	n = layout_format(&l, buf, sizeof(buf));
	CHECK_STR(buf, "stripe_count=4 stripe_size=1048576 stripe_offset=-1 pattern=raid0 gen=2 "
		       "osts=0,1,17,3");
	CHECK_EQ(n, (int)strlen(buf));
	CHECK_EQ(layout_parse(buf, (size_t)n, &p), 0);
	CHECK(memcmp(&l, &p, sizeof(l)) == 0);

	/* snprintf rules: the full length is returned, the output is truncated. */
	CHECK_EQ(layout_format(&l, small, sizeof(small)), n);
	CHECK_STR(small, "stripe_co");
	CHECK_EQ(layout_format(&l, NULL, 0), n);

	/* A directory default: no osts. */
	memset(&l, 0, sizeof(l));
	l.pattern = NACRE_PATTERN_RAID0;
	l.stripe_count = -1;
	l.stripe_offset = 3;
	n = layout_format(&l, buf, sizeof(buf));
	CHECK_STR(buf, "stripe_count=-1 stripe_size=0 stripe_offset=3 pattern=raid0 gen=0");
	CHECK_EQ(layout_parse(buf, (size_t)n, &p), 0);
	CHECK(memcmp(&l, &p, sizeof(l)) == 0);

	/* 128 OSTs round-trip. */
	mk(&l, 65536, NACRE_MAX_STRIPES);
	for (int i = 0; i < NACRE_MAX_STRIPES; i++)
		l.ost_idx[i] = 65535 - (uint32_t)i;
	n = layout_format(&l, buf, sizeof(buf));
	CHECK(n < (int)sizeof(buf));
	CHECK_EQ(layout_parse(buf, (size_t)n, &p), 0);
	CHECK(memcmp(&l, &p, sizeof(l)) == 0);

	/* Missing keys keep their defaults; order, blanks, a trailing NUL, suffixes. */
	CHECK_EQ(layout_parse("", 0, &p), 0);
	CHECK_EQ(p.stripe_count, 0);
	CHECK_EQ(p.stripe_size, 0);
	CHECK_EQ(p.stripe_offset, -1);
	CHECK_EQ(p.nosts, 0);
	CHECK_EQ(layout_parse("  stripe_size=4M\n\tstripe_count=2\n", 33, &p), 0);
	CHECK_EQ(p.stripe_size, 4u << 20);
	CHECK_EQ(p.stripe_count, 2);
	CHECK_EQ(layout_parse("stripe_count=1\0", 15, &p), 0);
	CHECK_EQ(p.stripe_count, 1);
	CHECK_EQ(layout_parse("stripe_count=1\0x", 16, &p), -EINVAL);
	/* Not NUL-terminated: only len bytes count. */
	CHECK_EQ(layout_parse("stripe_count=12", 14, &p), 0);
	CHECK_EQ(p.stripe_count, 1);

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int rc = layout_parse(bad[i], strlen(bad[i]), &p);

		if (rc != -EINVAL)
			fprintf(stderr, "accepted bad layout text \"%s\"\n", bad[i]);
		CHECK_EQ(rc, -EINVAL);
	}
	{
		/* 129 OSTs */
		char many[2048];
		size_t pos = 0;

		pos += (size_t)snprintf(many, sizeof(many), "osts=0");
		for (int i = 1; i < 129; i++)
			pos += (size_t)snprintf(many + pos, sizeof(many) - pos, ",%d", i);
		CHECK_EQ(layout_parse(many, pos, &p), -EINVAL);
	}
}

/* The largest file size: its last byte lies below LAYOUT_OBJ_MAXBYTES in its object, the
 * byte after it at LAYOUT_OBJ_MAXBYTES, and no object of a file that long is longer. */
static void test_max_file_size(void)
{
	static const uint32_t sizes[] = {65536, 3 * 65536, 1048576};
	static const int32_t counts[] = {1, 2, 4, NACRE_MAX_STRIPES};
	struct nacre_layout l;
	uint64_t obj_off;
	uint32_t stripe;

	CHECK_EQ(layout_max_file_size(NULL), LAYOUT_OBJ_MAXBYTES);
	mk(&l, 1048576, 4);
	l.nosts = 0;
	CHECK_EQ(layout_max_file_size(&l), LAYOUT_OBJ_MAXBYTES);
	mk(&l, 1048576, 4);
	CHECK_EQ(layout_max_file_size(&l), 4 * LAYOUT_OBJ_MAXBYTES - 3 * (1048576 - 4096));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); j++) {
			mk(&l, sizes[i], counts[j]);
			uint64_t max = layout_max_file_size(&l);
			CHECK(max >= LAYOUT_OBJ_MAXBYTES && max <= (uint64_t)INT64_MAX);
			layout_map(&l, max - 1, &stripe, &obj_off);
			CHECK(obj_off < LAYOUT_OBJ_MAXBYTES);
			layout_map(&l, max, &stripe, &obj_off);
			CHECK_EQ(obj_off, LAYOUT_OBJ_MAXBYTES);
			for (int32_t k = 0; k < counts[j]; k++)
				CHECK(layout_object_size(&l, max, (uint32_t)k) <= LAYOUT_OBJ_MAXBYTES);
		}
	}
}

int main(void)
{
	test_max_file_size();
	test_model();
	test_split();
	test_checks();
	test_text();
	return unit_done();
}
