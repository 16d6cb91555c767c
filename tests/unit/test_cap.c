/* test_cap.c - capability keys and MACs (common/cap.h): derivation, and that every field
 * the MAC covers changes it. */
#include <string.h>

#include "common/cap.h"
#include "unit.h"

static void test_derive(void)
{
	struct nacre_key a = {.present = 1, .len = 32}, b = {.present = 1, .len = 32};
	struct cap_key ka, ka2, kb, none;

	memset(a.bytes, 0x11, a.len);
	memset(b.bytes, 0x12, b.len);
	CHECK_EQ(cap_key_derive(&a, &ka), 0);
	CHECK_EQ(cap_key_derive(&a, &ka2), 0);
	CHECK_EQ(cap_key_derive(&b, &kb), 0);
	CHECK(ka.present && kb.present);
	/* the same cluster key gives the same capability key (an MDS restart keeps it) */
	CHECK(memcmp(ka.bytes, ka2.bytes, CAP_KEY_LEN) == 0);
	CHECK(memcmp(ka.bytes, kb.bytes, CAP_KEY_LEN) != 0);
	/* and it is not the cluster key itself */
	CHECK(memcmp(ka.bytes, a.bytes, CAP_KEY_LEN) != 0);
	CHECK_EQ(cap_key_derive(NULL, &none), 0);
	CHECK(!none.present);
	cap_key_fini(&ka);
	cap_key_fini(&ka2);
	cap_key_fini(&kb);
	cap_key_fini(&none);
}

static void test_mint(void)
{
	struct nacre_key k = {.present = 1, .len = 32};
	struct cap_key ck, none;
	const struct nacre_fid fid = {0x200000400ull, 5, 0};
	uint8_t m0[CAP_MAC_LEN], m1[CAP_MAC_LEN], m2[CAP_MAC_LEN];
	char buf[32];

	memset(k.bytes, 0x33, k.len);
	CHECK_EQ(cap_key_derive(&k, &ck), 0);
	cap_mint(&ck, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m0);
	cap_mint(&ck, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m1);
	CHECK(cap_mac_eq(m0, m1)); /* deterministic: what the OSS recomputes */

	struct nacre_fid f2 = fid;
	f2.oid = 6;
	cap_mint(&ck, &f2, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	f2 = fid;
	f2.ver = 1;
	cap_mint(&ck, &f2, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint(&ck, &fid, 2, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint(&ck, &fid, 1, 0, CAP_READ, 7, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint(&ck, &fid, 1, CAP_STRIPE_ALL, CAP_READ | CAP_WRITE, 7, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint(&ck, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 8, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint(&ck, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1001, m2);
	CHECK(!cap_mac_eq(m0, m2));

	/* the precomputed HMAC states give what plain HMAC-SHA256 gives */
	struct cap_key slow = ck;
	CHECK(ck.inner != NULL && ck.outer != NULL);
	slow.inner = slow.outer = NULL;
	cap_mint(&slow, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m1);
	CHECK(cap_mac_eq(m0, m1));

	/* without a key nothing verifies, not even the same call twice */
	memset(&none, 0, sizeof(none));
	cap_mint(&none, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m1);
	cap_mint(&none, &fid, 1, CAP_STRIPE_ALL, CAP_READ, 7, 1000, m2);
	CHECK(!cap_mac_eq(m0, m1));
	CHECK(!cap_mac_eq(m1, m2));

	/* list capabilities: over the exact bytes and the OST */
	uint8_t objs[48], objs2[48];
	memset(objs, 1, sizeof(objs));
	memcpy(objs2, objs, sizeof(objs));
	objs2[47] ^= 1;
	cap_mint_list(&ck, 3, objs, sizeof(objs), CAP_DESTROY, 0, 1000, m0);
	cap_mint_list(&ck, 3, objs, sizeof(objs), CAP_DESTROY, 0, 1000, m1);
	CHECK(cap_mac_eq(m0, m1));
	cap_mint_list(&slow, 3, objs, sizeof(objs), CAP_DESTROY, 0, 1000, m1);
	CHECK(cap_mac_eq(m0, m1));
	cap_mint_list(&ck, 3, objs2, sizeof(objs2), CAP_DESTROY, 0, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint_list(&ck, 4, objs, sizeof(objs), CAP_DESTROY, 0, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));
	cap_mint_list(&ck, 3, objs, sizeof(objs) - 24, CAP_DESTROY, 0, 1000, m2);
	CHECK(!cap_mac_eq(m0, m2));

	CHECK_STR(cap_rights_str(CAP_READ | CAP_WRITE, buf, sizeof(buf)), "read,write");
	CHECK_STR(cap_rights_str(0, buf, sizeof(buf)), "none");
	CHECK_STR(cap_rights_str(CAP_RIGHTS_ALL, buf, sizeof(buf)), "read,write,punch,destroy");
	cap_key_fini(&ck);
}

int main(void)
{
	test_derive();
	test_mint();
	return unit_done();
}
