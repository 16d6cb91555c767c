/* test_mds_acl.c - POSIX ACLs (src/mds/acl.c): the xattr format, the kernel's
 * validity rules, the access algorithm with the mask, equivalence to a mode,
 * chmod and create masking. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "mds/acl.h"
#include "unit.h"

#define U 0xffffffffu

static struct mds_acl g_acl;

/* Builds g_acl from n (tag, perm, id) triples. */
static struct mds_acl *mk(int n, const uint32_t (*t)[3]) {
  g_acl.count = (uint32_t)n;
  for (int i = 0; i < n; i++) {
    g_acl.e[i].tag = (uint16_t)t[i][0];
    g_acl.e[i].perm = (uint16_t)t[i][1];
    g_acl.e[i].id = t[i][2];
  }
  return &g_acl;
}
#define ACL(...)                                                               \
  mk((int)(sizeof((const uint32_t[][3]){__VA_ARGS__}) / sizeof(uint32_t[3])),  \
     (const uint32_t[][3]){__VA_ARGS__})

static int in_group(const struct nacre_cred *cr, uint32_t gid) {
  if (cr->gid == gid)
    return 1;
  for (uint32_t i = 0; i < cr->ngroups; i++)
    if (cr->groups[i] == gid)
      return 1;
  return 0;
}

static void test_format(void) {
  /* version 2, USER_OBJ rw, USER 1000 r, GROUP_OBJ r, MASK r, OTHER none */
  static const uint8_t bytes[] = {
      2,    0,    0,    0,    1,    0,    6,    0,    0xff, 0xff, 0xff,
      0xff, 2,    0,    4,    0,    0xe8, 3,    0,    0,    4,    0,
      4,    0,    0xff, 0xff, 0xff, 0xff, 0x10, 0,    4,    0,    0xff,
      0xff, 0xff, 0xff, 0x20, 0,    0,    0,    0xff, 0xff, 0xff, 0xff};
  struct mds_acl a;
  uint8_t out[sizeof(bytes)];
  CHECK_EQ(mds_acl_decode(bytes, sizeof(bytes), &a), 0);
  CHECK_EQ(a.count, 5);
  CHECK_EQ(a.e[1].tag, MDS_ACL_USER);
  CHECK_EQ(a.e[1].id, 1000);
  CHECK_EQ(a.e[0].perm, 6);
  CHECK_EQ(mds_acl_valid(&a), 0);
  CHECK_EQ(mds_acl_encode(&a, NULL, 0), sizeof(bytes));
  CHECK_EQ(mds_acl_encode(&a, out, sizeof(out)), sizeof(bytes));
  CHECK_MEM(out, bytes, sizeof(bytes));
  /* a header alone is "no ACL" */
  CHECK_EQ(mds_acl_decode(bytes, 4, &a), 0);
  CHECK_EQ(a.count, 0);
  /* malformed */
  CHECK_EQ(mds_acl_decode(bytes, 3, &a), -EINVAL);
  CHECK_EQ(mds_acl_decode(bytes, 13, &a), -EINVAL);
  uint8_t v1[sizeof(bytes)];
  memcpy(v1, bytes, sizeof(v1));
  v1[0] = 1;
  CHECK_EQ(mds_acl_decode(v1, sizeof(v1), &a), -EOPNOTSUPP);
  memcpy(v1, bytes, sizeof(v1));
  v1[12] = 0x40; /* unknown tag */
  CHECK_EQ(mds_acl_decode(v1, sizeof(v1), &a), -EINVAL);
  memcpy(v1, bytes, sizeof(v1));
  memset(v1 + 16, 0xff, 4); /* USER entry for uid -1 */
  CHECK_EQ(mds_acl_decode(v1, sizeof(v1), &a), -EINVAL);
  static uint8_t big[MDS_ACL_XATTR_SIZE(MDS_ACL_MAX_ENTRIES + 1)];
  big[0] = 2;
  CHECK_EQ(mds_acl_decode(big, sizeof(big), &a), -ENOSPC);
}

static void test_valid(void) {
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {4, 5, U}, {0x20, 0, U})), 0);
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {2, 5, 10}, {4, 5, U}, {8, 1, 20},
                             {0x10, 7, U}, {0x20, 0, U})),
           0);
  /* named entries need a mask */
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {2, 5, 10}, {4, 5, U}, {0x20, 0, U})),
           -EINVAL);
  /* a mask without named entries is fine */
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {4, 5, U}, {0x10, 5, U}, {0x20, 0, U})),
           0);
  /* order */
  CHECK_EQ(mds_acl_valid(ACL({4, 5, U}, {1, 7, U}, {0x20, 0, U})), -EINVAL);
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {4, 5, U}, {2, 5, 10}, {0x10, 7, U},
                             {0x20, 0, U})),
           -EINVAL);
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {4, 5, U}, {0x20, 0, U}, {0x10, 7, U})),
           -EINVAL);
  /* missing or doubled required entries */
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {4, 5, U})), -EINVAL);
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {0x20, 5, U})), -EINVAL);
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {1, 7, U}, {4, 5, U}, {0x20, 0, U})),
           -EINVAL);
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {4, 5, U}, {0x20, 0, U}, {0x20, 0, U})),
           -EINVAL);
  /* perms beyond rwx */
  CHECK_EQ(mds_acl_valid(ACL({1, 8, U}, {4, 5, U}, {0x20, 0, U})), -EINVAL);
  /* as the kernel: duplicate or unsorted named entries are not refused */
  CHECK_EQ(mds_acl_valid(ACL({1, 7, U}, {2, 5, 11}, {2, 5, 10}, {2, 5, 10},
                             {4, 5, U}, {0x10, 7, U}, {0x20, 0, U})),
           0);
}

static void test_permission(void) {
  /* owner 100:200; user 1000 rwx, group 300 rw, owning group r-x, mask r-x,
   * other --- */
  struct mds_acl *a = ACL({1, 7, U}, {2, 7, 1000}, {4, 5, U}, {8, 6, 300},
                          {0x10, 5, U}, {0x20, 0, U});
  struct nacre_cred named = {.uid = 1000, .gid = 1000};
  struct nacre_cred member = {
      .uid = 1001, .gid = 1001, .ngroups = 1, .groups = {300}};
  struct nacre_cred owning = {.uid = 1002, .gid = 200};
  struct nacre_cred other = {.uid = 1003, .gid = 1003};
  struct nacre_cred both = {
      .uid = 1004, .gid = 200, .ngroups = 1, .groups = {300}};
  CHECK_EQ(mds_acl_permission(a, &named, 200, 4, in_group), 0);
  CHECK_EQ(mds_acl_permission(a, &named, 200, 1, in_group), 0);
  CHECK_EQ(mds_acl_permission(a, &named, 200, 2, in_group),
           -EACCES); /* masked */
  CHECK_EQ(mds_acl_permission(a, &member, 200, 4, in_group), 0);
  CHECK_EQ(mds_acl_permission(a, &member, 200, 2, in_group),
           -EACCES); /* masked */
  CHECK_EQ(mds_acl_permission(a, &member, 200, 1, in_group), -EACCES);
  CHECK_EQ(mds_acl_permission(a, &owning, 200, 5, in_group), 0);
  CHECK_EQ(mds_acl_permission(a, &owning, 200, 2, in_group), -EACCES);
  CHECK_EQ(mds_acl_permission(a, &other, 200, 4, in_group), -EACCES);
  /* a group member never falls back to other, and any matching group may grant
   */
  CHECK_EQ(mds_acl_permission(a, &both, 200, 1, in_group), 0);
  struct mds_acl *b = ACL({1, 7, U}, {4, 0, U}, {0x10, 7, U}, {0x20, 7, U});
  CHECK_EQ(mds_acl_permission(b, &owning, 200, 4, in_group), -EACCES);
  CHECK_EQ(mds_acl_permission(b, &other, 200, 4, in_group), 0);
}

static void test_mode(void) {
  uint32_t mode = 0;
  CHECK_EQ(mds_acl_equiv_mode(ACL({1, 7, U}, {4, 5, U}, {0x20, 1, U}), &mode),
           1);
  CHECK_EQ(mode, 0751);
  CHECK_EQ(mds_acl_equiv_mode(
               ACL({1, 6, U}, {4, 7, U}, {0x10, 4, U}, {0x20, 0, U}), &mode),
           0);
  CHECK_EQ(mode, 0640); /* group bits from the mask */
  struct mds_acl *a =
      ACL({1, 7, U}, {2, 7, 1000}, {4, 5, U}, {0x10, 7, U}, {0x20, 5, U});
  mds_acl_chmod(a, 0640);
  CHECK_EQ(a->e[0].perm, 6);
  CHECK_EQ(a->e[1].perm, 7); /* named entries stay */
  CHECK_EQ(a->e[2].perm, 5); /* the group entry stays: the mask moved */
  CHECK_EQ(a->e[3].perm, 4);
  CHECK_EQ(a->e[4].perm, 0);
  a = ACL({1, 7, U}, {4, 5, U}, {0x20, 5, U});
  mds_acl_chmod(a, 0710);
  CHECK_EQ(a->e[1].perm, 1); /* no mask: the group entry */
}

static void test_create(void) {
  /* default user::rwx user:1000:rwx group::r-x mask::rwx other::r-x, open(0666)
   */
  struct mds_acl *a =
      ACL({1, 7, U}, {2, 7, 1000}, {4, 5, U}, {0x10, 7, U}, {0x20, 5, U});
  uint32_t mode = S_IFREG | 0666;
  CHECK_EQ(mds_acl_create_masq(a, &mode), 1);
  CHECK_EQ(mode, S_IFREG | 0664);
  CHECK_EQ(a->e[0].perm, 6);
  CHECK_EQ(a->e[1].perm, 7);
  CHECK_EQ(a->e[3].perm, 6); /* the mask takes the group bits */
  CHECK_EQ(a->e[4].perm, 4);
  /* a minimal default gives a mode alone */
  a = ACL({1, 7, U}, {4, 0, U}, {0x20, 0, U});
  mode = S_IFDIR | S_ISGID | 0775;
  CHECK_EQ(mds_acl_create_masq(a, &mode), 0);
  CHECK_EQ(mode, S_IFDIR | S_ISGID | 0700);
  CHECK_EQ(mds_acl_create_masq(ACL({1, 7, U}, {0x20, 0, U}), &mode), -EINVAL);
}

int main(void) {
  test_format();
  test_valid();
  test_permission();
  test_mode();
  test_create();
  return unit_done();
}
