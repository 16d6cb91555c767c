/* test_jobstats.c - job_stats' table: counts per job and operation, Lustre's YAML, the cap on
 * jobs (the one seen longest ago makes room), clear. */
#include <stdlib.h>
#include <string.h>

#include "common/jobstats.h"
#include "common/strbuf.h"
#include "unit.h"

static const struct jobstats_op ops[] = {{"open", "usecs"}, {"read_bytes", "bytes"}};

static char *yaml(struct jobstats *js)
{
	struct strbuf sb = STRBUF_INIT;
	jobstats_yaml(js, &sb);
	return strbuf_take(&sb);
}

static void test_counts_and_yaml(void)
{
	struct jobstats *js = jobstats_new(ops, 2, 8, 600);
	CHECK(js != NULL);
	char *y = yaml(js);
	CHECK(y && strcmp(y, "job_stats:\n") == 0);
	free(y);
	jobstats_note(js, "cp.1000", 0, 10);
	jobstats_note(js, "cp.1000", 0, 30);
	jobstats_note(js, "4242", 1, 4194304);
	jobstats_note(js, "", 0, 5);   /* no job: not counted */
	jobstats_note(js, NULL, 0, 5);
	jobstats_note(js, "cp.1000", 7, 5); /* no such operation */
	CHECK_EQ(jobstats_count(js), 2);
	y = yaml(js);
	CHECK(y != NULL);
	if (y) {
		CHECK(strncmp(y, "job_stats:\n- job_id:          cp.1000\n  snapshot_time:   ",
			      56) == 0);
		CHECK(strstr(y, "  open:            { samples:           2, unit: usecs, "
				"min:      10, max:      30, sum:              40, sumsq:"
				"                1000 }\n") != NULL);
		CHECK(strstr(y, "  read_bytes:      { samples:           0, unit: bytes }\n"
				"- job_id:          4242\n") != NULL);
		CHECK(strstr(y, "  read_bytes:      { samples:           1, unit: bytes, min: "
				"4194304, max: 4194304, sum:         4194304,") != NULL);
	}
	free(y);
	jobstats_clear(js);
	CHECK_EQ(jobstats_count(js), 0);
	jobstats_free(js);
}

static void test_cap(void)
{
	struct jobstats *js = jobstats_new(ops, 2, 4, 600);
	char id[16];
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof(id), "job%d", i);
		jobstats_note(js, id, 0, 1);
		jobstats_note(js, "keep", 0, 1); /* the most recent: never the victim */
	}
	CHECK_EQ(jobstats_count(js), 4);
	char *y = yaml(js);
	CHECK(y && strstr(y, "job_id:          keep\n") && strstr(y, "job_id:          job49\n"));
	CHECK(y && !strstr(y, "job_id:          job0\n"));
	free(y);
	jobstats_free(js);
}

int main(void)
{
	test_counts_and_yaml();
	test_cap();
	return unit_done();
}
