/* test_mds_nodemap.c - nodemap rules (mds/nodemap_rule.c): CIDR parsing, matching order,
 * id mapping, properties and their errors, the database record. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mds/nodemap_rule.h"
#include "unit.h"

static struct nodemap_rule *rule(const char *name, const char *ranges, const char *clients)
{
	struct nodemap_rule *r = calloc(1, sizeof(*r));
	char err[256];

	nodemap_rule_init(r, name);
	CHECK_EQ(nodemap_rule_set_ranges(r, ranges, err, sizeof(err)), 0);
	CHECK_EQ(nodemap_rule_set_clients(r, clients, err, sizeof(err)), 0);
	return r;
}

static int score(const struct nodemap_rule *r, const char *addr, const char *client)
{
	uint8_t a[16];
	int has = addr && nodemap_parse_addr(addr, a) == 0;
	return nodemap_rule_score(r, a, has, client);
}

static void test_ranges_and_order(void)
{
	struct nodemap_rule *wide = rule("wide", "10.0.0.0/8", "");
	struct nodemap_rule *narrow = rule("narrow", "10.1.2.0/24,fd00::/8", "");
	struct nodemap_rule *named = rule("named", "", "node7");
	struct nodemap_rule *both = rule("both", "10.0.0.0/8", "node7");
	char err[256];

	CHECK(score(wide, "10.1.2.3:988", NULL) > 0);
	CHECK(score(narrow, "10.1.2.3:988", NULL) > score(wide, "10.1.2.3:988", NULL));
	CHECK_EQ(score(narrow, "10.1.3.3:988", NULL), 0);
	CHECK(score(narrow, "fd12::1:988", NULL) > 0); /* a peer string without brackets */
	CHECK(score(narrow, "[fd12::1]:988", NULL) > 0);
	CHECK_EQ(score(narrow, "::1:988", NULL), 0);
	CHECK_EQ(score(named, "10.1.2.3:1", "node8"), 0);
	CHECK(score(named, "10.1.2.3:1", "node7") > score(narrow, "10.1.2.3:1", "node7"));
	CHECK(score(both, "10.1.2.3:1", "node7") > score(named, "10.1.2.3:1", "node7"));
	CHECK_EQ(score(both, "192.168.1.1:1", "node7"), 0);
	CHECK_EQ(nodemap_rule_set_ranges(wide, "10.0.0.0/33", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "bad CIDR range '10.0.0.0/33'") != NULL);
	CHECK_EQ(nodemap_rule_set_ranges(wide, "10.0.0.1/", err, sizeof(err)), -EINVAL);
	CHECK_EQ(nodemap_rule_set_ranges(wide, "banana", err, sizeof(err)), -EINVAL);
	CHECK_EQ(wide->nranges, 1u); /* a failed set leaves the rule as it was */
	free(wide);
	free(narrow);
	free(named);
	free(both);
}

static void test_mapping(void)
{
	struct nodemap_rule *r = rule("m", "127.0.0.0/8", "");
	char err[256];

	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 0), 65534u); /* root squash by default */
	CHECK_EQ(nodemap_ids_map_gid(&r->ids, 0), 65534u);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 1000), 1000u);
	CHECK_EQ(nodemap_rule_set(r, "map_uid", "1000:5000:10", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_rule_set(r, "map_uid", "1005:9000", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "overlaps") != NULL);
	CHECK_EQ(nodemap_rule_set(r, "map_uid", "0:100", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 1009), 5009u);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 1010), 1010u);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 0), 100u); /* a mapped root is not squashed */
	CHECK_EQ(nodemap_rule_set(r, "unmap_uid", "0:100:1", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 0), 65534u);
	CHECK_EQ(nodemap_rule_set(r, "trusted", "1", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 0), 0u);
	CHECK_EQ(nodemap_rule_set(r, "squash_all", "1", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_rule_set(r, "squash_uid", "99", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 1003), 99u);
	CHECK_EQ(nodemap_rule_set(r, "admin", "yes", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_ids_map_uid(&r->ids, 1003), 1003u); /* admin maps nothing */
	CHECK_EQ(nodemap_rule_set(r, "squash_uid", "-1", err, sizeof(err)), -EINVAL);
	CHECK_EQ(nodemap_rule_set(r, "admin", "maybe", err, sizeof(err)), -EINVAL);
	CHECK_EQ(nodemap_rule_set(r, "colour", "red", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unknown property 'colour'") != NULL);
	CHECK_EQ(nodemap_rule_set(r, "fileset", "proj", err, sizeof(err)), -EINVAL);
	CHECK_EQ(nodemap_rule_set(r, "fileset", "/a/../b", err, sizeof(err)), -EINVAL);
	CHECK_EQ(nodemap_rule_set(r, "fileset", "//proj//a/", err, sizeof(err)), 0);
	CHECK_STR(r->fileset, "/proj/a");
	CHECK_EQ(nodemap_rule_set(r, "sec_min", "privacy", err, sizeof(err)), 0);
	CHECK_EQ(r->sec_min, (uint32_t)NODEMAP_SEC_PRIVACY);
	free(r);
}

static void test_record(void)
{
	struct nodemap_rule *r = rule("rec", "10.0.0.0/8,::1", "a,b");
	struct nodemap_rule *d = calloc(1, sizeof(*d));
	uint8_t buf[16384];
	char err[256], text[4096];

	CHECK_EQ(nodemap_rule_set(r, "map_gid", "10:20:3", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_rule_set(r, "fileset", "/x", err, sizeof(err)), 0);
	CHECK_EQ(nodemap_rule_set(r, "readonly", "1", err, sizeof(err)), 0);
	int n = nodemap_rule_encode(r, buf, sizeof(buf));
	CHECK(n > 0);
	CHECK_EQ(nodemap_rule_decode(d, "rec", buf, (size_t)n), 0);
	CHECK(memcmp(r, d, sizeof(*r)) == 0);
	CHECK_EQ(nodemap_rule_decode(d, "rec", buf, (size_t)n - 1), -EIO);
	buf[0] = 9; /* a record version we do not know */
	CHECK_EQ(nodemap_rule_decode(d, "rec", buf, (size_t)n), -EIO);
	nodemap_rule_format(r, text, sizeof(text));
	CHECK(strstr(text, "nodemap.rec.ranges=10.0.0.0/8,::1/128\n") != NULL);
	CHECK(strstr(text, "nodemap.rec.idmap_gid=[{ client: 10, fs: 20, count: 3 }]\n") != NULL);
	CHECK(strstr(text, "nodemap.rec.readonly_mount=1\n") != NULL);
	CHECK(strstr(text, "nodemap.rec.fileset=/x\n") != NULL);
	free(r);
	free(d);
}

int main(void)
{
	test_ranges_and_order();
	test_mapping();
	test_record();
	return unit_done();
}
