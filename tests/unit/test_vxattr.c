/* test_vxattr.c - the virtual xattr values: golden texts of each formatter (the grammar of
 * nacre/nacre_vxattr.h, which the CLI and the mount must agree on) and their parsers,
 * including what a parser refuses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/vxattr.h"
#include "nacre/nacre_vxattr.h"
#include "unit.h"

static void test_names(void)
{
	CHECK_STR(vxattr_hsm_action_name(NACRE_HSMA_ARCHIVE), "ARCHIVE");
	CHECK_STR(vxattr_hsm_action_name(NACRE_HSMA_REMOVE), "REMOVE");
	CHECK_STR(vxattr_hsm_action_name(999), "CANCEL");
	CHECK_STR(vxattr_hsm_status_name(NACRE_HAS_WAITING), "WAITING");
	CHECK_STR(vxattr_hsm_status_name(NACRE_HAS_SUCCEED), "SUCCEED");
	CHECK_STR(vxattr_hsm_status_name(5), "UNKNOWN");
	CHECK_STR(vxattr_hsm_request_name(NACRE_HUA_RELEASE), "release");
	CHECK_STR(vxattr_hsm_request_name(0), "cancel");
}

static void test_state(void)
{
	char buf[64];
	uint32_t st, set, clear, aid;

	CHECK_EQ(vxattr_hsm_state_format(buf, sizeof(buf), 0xd, 1), 12);
	CHECK_STR(buf, "0x0000000d 1");
	CHECK_EQ(vxattr_hsm_state_parse(buf, &st, &aid), 0);
	CHECK_EQ(st, 0xd);
	CHECK_EQ(aid, 1);
	CHECK_EQ(vxattr_hsm_state_parse("0x1", &st, &aid), -EINVAL);

	vxattr_hsm_flags_format(buf, sizeof(buf), 0x10, 0x2, 3);
	CHECK_STR(buf, "10 2 3");
	CHECK_EQ(vxattr_hsm_flags_parse(buf, &set, &clear, &aid), 0);
	CHECK(set == 0x10 && clear == 0x2 && aid == 3);
	CHECK_EQ(vxattr_hsm_flags_parse("20 0", &set, &clear, &aid), 0);
	CHECK(set == 0x20 && clear == 0 && aid == 0);
	CHECK_EQ(vxattr_hsm_flags_parse("20", &set, &clear, &aid), -EINVAL);
	CHECK_EQ(vxattr_hsm_flags_parse("1 1 4294967296", &set, &clear, &aid), -EINVAL);
}

static void test_action(void)
{
	struct nacre_hsm_action a = { .action = NACRE_HSMA_RESTORE, .status = NACRE_HAS_STARTED,
				      .bytes_done = 4096, .bytes_total = 8192, .err = 0 };
	struct nacre_hsm_action b;
	char buf[128];

	vxattr_hsm_action_format(buf, sizeof(buf), &a);
	CHECK_STR(buf, "RESTORE STARTED 4096 8192 0");
	CHECK_EQ(vxattr_hsm_action_parse(buf, &b), 0);
	CHECK(b.action == a.action && b.status == a.status && b.bytes_done == 4096 &&
	      b.bytes_total == 8192 && b.err == 0);
	CHECK_EQ(vxattr_hsm_action_parse("ARCHIVE WAITING", &b), 0);
	CHECK(b.action == NACRE_HSMA_ARCHIVE && b.status == NACRE_HAS_WAITING &&
	      b.bytes_done == 0);
	CHECK_EQ(vxattr_hsm_action_parse("", &b), -EINVAL);
	CHECK_EQ(vxattr_hsm_action_parse("ARCHIVE DONE 1 2 0", &b), -EINVAL);
	CHECK_EQ(vxattr_hsm_action_parse("archive STARTED", &b), -EINVAL);
}

static void test_request(void)
{
	char buf[128], *fids, *f;
	uint32_t action, aid;

	CHECK_EQ(vxattr_hsm_request_format(buf, sizeof(buf), NACRE_HUA_ARCHIVE, 2, 0), 9);
	CHECK_STR(buf, "archive 2");
	CHECK_EQ(vxattr_hsm_request_parse(buf, &action, &aid, &fids), 0);
	CHECK(action == NACRE_HUA_ARCHIVE && aid == 2 && fids == NULL);

	vxattr_hsm_request_format(buf, sizeof(buf), NACRE_HUA_RESTORE, 0, 1);
	CHECK_STR(buf, "restore 0\n");
	strcat(buf, "[0x200000400:0x1:0x0]\n\n[0x200000400:0x2:0x0]");
	CHECK_EQ(vxattr_hsm_request_parse(buf, &action, &aid, &fids), 0);
	CHECK(action == NACRE_HUA_RESTORE && aid == 0 && fids != NULL);
	f = vxattr_hsm_request_next_fid(&fids);
	CHECK_STR(f, "[0x200000400:0x1:0x0]");
	f = vxattr_hsm_request_next_fid(&fids);
	CHECK_STR(f, "[0x200000400:0x2:0x0]");
	CHECK(vxattr_hsm_request_next_fid(&fids) == NULL);

	strcpy(buf, "release");
	CHECK_EQ(vxattr_hsm_request_parse(buf, &action, &aid, &fids), 0);
	CHECK(action == NACRE_HUA_RELEASE && aid == 0);
	strcpy(buf, "frobnicate 1");
	CHECK_EQ(vxattr_hsm_request_parse(buf, &action, &aid, &fids), -EINVAL);
	strcpy(buf, "remove -1");
	CHECK_EQ(vxattr_hsm_request_parse(buf, &action, &aid, &fids), -EINVAL);
}

static void test_list(void)
{
	struct nacre_hsm_action *a = calloc(2, sizeof(*a));
	char buf[256], fid[NACRE_FID_STR_MAX];
	int more = -1;

	a[0] = (struct nacre_hsm_action){ .cookie = 7, .action = NACRE_HSMA_ARCHIVE,
					  .status = NACRE_HAS_FAILED, .archive_id = 1,
					  .bytes_done = 10, .bytes_total = 20, .err = -5 };
	vxattr_hsm_list_format(buf, sizeof(buf), &a[0], "[0x200000400:0x3:0x0]");
	CHECK_STR(buf, "7 ARCHIVE FAILED [0x200000400:0x3:0x0] 1 10 20 -5 -\n");
	strcpy(a[0].path, "dir/a file");
	vxattr_hsm_list_format(buf, sizeof(buf), &a[0], "[0x200000400:0x3:0x0]");
	CHECK_STR(buf, "7 ARCHIVE FAILED [0x200000400:0x3:0x0] 1 10 20 -5 dir/a file\n");
	buf[strlen(buf) - 1] = '\0';
	CHECK_EQ(vxattr_hsm_list_parse(buf, &a[1], fid, &more), 1);
	CHECK(a[1].cookie == 7 && a[1].action == NACRE_HSMA_ARCHIVE &&
	      a[1].status == NACRE_HAS_FAILED && a[1].archive_id == 1 && a[1].bytes_done == 10 &&
	      a[1].bytes_total == 20 && a[1].err == -5);
	CHECK_STR(fid, "[0x200000400:0x3:0x0]");
	CHECK_STR(a[1].path, "dir/a file");
	CHECK_EQ(vxattr_hsm_list_end(buf, sizeof(buf), 1), 4);
	CHECK_STR(buf, "eof\n");
	vxattr_hsm_list_end(buf, sizeof(buf), 0);
	CHECK_STR(buf, "more\n");
	CHECK_EQ(vxattr_hsm_list_parse("more", &a[1], fid, &more), 0);
	CHECK_EQ(more, 1);
	CHECK_EQ(vxattr_hsm_list_parse("eof", &a[1], fid, &more), 0);
	CHECK_EQ(more, 0);
	CHECK_EQ(vxattr_hsm_list_parse("7 ARCHIVE FAILED [0x1:0x2:0x0] 1 10 20", &a[1], fid, &more),
		 -EINVAL);
	free(a);
}

static void test_import(void)
{
	static const char golden[] = "1234 644 7 8 1700000000 5 2\0f\0dir/f";
	struct vxattr_hsm_import im = { .size = 1234, .mode = 0644, .uid = 7, .gid = 8,
					.mtime = { 1700000000, 5 }, .archive_id = 2, .name = "f",
					.path = "dir/f" };
	struct vxattr_hsm_import got;
	char buf[128];
	int n = vxattr_hsm_import_format(buf, sizeof(buf), &im);

	CHECK_EQ(n, sizeof(golden));
	CHECK_MEM(buf, golden, sizeof(golden));
	CHECK_EQ(vxattr_hsm_import_parse(buf, (size_t)n, &got), 0);
	CHECK(got.size == 1234 && got.mode == 0644 && got.uid == 7 && got.gid == 8 &&
	      got.mtime.sec == 1700000000 && got.mtime.nsec == 5 && got.archive_id == 2);
	CHECK_STR(got.name, "f");
	CHECK_STR(got.path, "dir/f");
	CHECK_EQ(vxattr_hsm_import_format(buf, 20, &im), -ENAMETOOLONG);
	/* the path must end with its NUL inside the value; archive id 0 and nsec 1e9 refused */
	CHECK_EQ(vxattr_hsm_import_parse(golden, sizeof(golden) - 1, &got), -EINVAL);
	static const char aid0[] = "1 644 0 0 0 0 0\0f\0p", ns[] = "1 644 0 0 0 1000000000 1\0f\0p";
	CHECK_EQ(vxattr_hsm_import_parse(aid0, sizeof(aid0), &got), -EINVAL);
	CHECK_EQ(vxattr_hsm_import_parse(ns, sizeof(ns), &got), -EINVAL);
	CHECK_EQ(vxattr_hsm_import_parse("1 644 0 0 0 0 1", 15, &got), -EINVAL);
}

static void test_targets(void)
{
	struct nacre_target t = { .type = NACRE_TGT_OST, .index = 3, .up = 1,
				  .addr = "10.0.0.2:9410",
				  .st = { .kb_total = 100, .kb_free = 60, .kb_avail = 50,
					  .files = 1000, .ffree = 900 } };
	struct nacre_target got;
	char buf[256];

	vxattr_target_format(buf, sizeof(buf), &t);
	CHECK_STR(buf, "OST 3 1 10.0.0.2:9410 100 60 50 1000 900\n");
	buf[strlen(buf) - 1] = '\0';
	CHECK_EQ(vxattr_target_parse(buf, &got), 0);
	CHECK(got.type == NACRE_TGT_OST && got.index == 3 && got.up == 1 &&
	      got.st.kb_total == 100 && got.st.kb_free == 60 && got.st.kb_avail == 50 &&
	      got.st.files == 1000 && got.st.ffree == 900);
	CHECK_STR(got.addr, "10.0.0.2:9410");
	t = (struct nacre_target){ .type = NACRE_TGT_MDT };
	vxattr_target_format(buf, sizeof(buf), &t);
	CHECK_STR(buf, "MDT 0 0 - 0 0 0 0 0\n");
	CHECK_EQ(vxattr_target_parse("MDT 0 0 - 0 0 0 0 0", &got), 0);
	CHECK(got.type == NACRE_TGT_MDT && got.addr[0] == '\0');
	CHECK_EQ(vxattr_target_parse("XYZ 0 0 - 0 0 0 0 0", &got), -EINVAL);
	CHECK_EQ(vxattr_target_parse("OST 0 0 - 0 0 0 0", &got), -EINVAL);
}

static void test_recovery(void)
{
	struct nacre_recovery_status r = { .state = NACRE_RECOVERY_RECOVERING,
					   .start = 1700000000, .duration_s = 12,
					   .time_left_s = 18, .clients_expected = 3,
					   .clients_connected = 2, .clients_replayed = 2,
					   .clients_completed = 1, .clients_evicted = 0,
					   .replayed = 7, .queued = 4, .last_transno = 1ull << 40,
					   .last_committed = 99 };
	struct nacre_recovery_status got;
	char buf[256], again[256];

	vxattr_recovery_format(buf, sizeof(buf), &r);
	CHECK_STR(buf, "RECOVERING 1700000000 12 18 3 2 2 1 0 7 4 1099511627776 99\n");
	CHECK_EQ(vxattr_recovery_parse(buf, &got), 0);
	vxattr_recovery_format(again, sizeof(again), &got); /* every field is in the text */
	CHECK_STR(again, buf);
	buf[strlen(buf) - 1] = '\0'; /* the newline is optional */
	CHECK_EQ(vxattr_recovery_parse(buf, &got), 0);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 0 0 0 0 0 0 0 0 0 0 0", &got), 0);
	CHECK(got.state == NACRE_RECOVERY_COMPLETE && got.start == 0);
	/* every malformed shape is refused */
	CHECK_EQ(vxattr_recovery_parse("DONE 0 0 0 0 0 0 0 0 0 0 0 0", &got), -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 0 0 0 0 0 0 0 0 0 0", &got), -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 0 0 0 0 0 0 0 0 0 0 0 0", &got), -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 -1 0 0 0 0 0 0 0 0 0 0", &got), -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 4294967296 0 0 0 0 0 0 0 0 0 0", &got),
		 -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 0 0 0 0 0 0 0 0 0 0 18446744073709551616",
				       &got),
		 -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE 0 0 0 0 0 0 0 0 0 0 0 0\n\n", &got), -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("COMPLETE  0 0 0 0 0 0 0 0 0 0 0 0", &got), -EINVAL);
	CHECK_EQ(vxattr_recovery_parse("", &got), -EINVAL);
}

int main(void)
{
	test_names();
	test_state();
	test_action();
	test_request();
	test_list();
	test_import();
	test_targets();
	test_recovery();
	return unit_done();
}
