/* acl.h - POSIX.1e access control lists as Linux keeps them: the xattr format
 * of system.posix_acl_access and system.posix_acl_default (a u32 version 2
 * header, then one 8-byte entry per line: u16 tag, u16 perm, u32 id,
 * little-endian), the kernel's validity rules, the access algorithm, and the
 * mode <-> ACL rules of chmod and create. Pure functions over caller storage;
 * thread-safe. Errors: -EINVAL for a malformed or invalid ACL, -ENOSPC for more
 * than MDS_ACL_MAX_ENTRIES entries. */
#ifndef NACRE_MDS_ACL_H
#define NACRE_MDS_ACL_H

#include <stddef.h>
#include <stdint.h>

#include "nacre/nacre_types.h"

#define MDS_ACL_XATTR_ACCESS "system.posix_acl_access"
#define MDS_ACL_XATTR_DEFAULT "system.posix_acl_default"
#define MDS_ACL_XATTR_VERSION 2u
/* The FUSE kernel sends at most a page: (4096 - 4) / 8 = 511 entries; ours fit
 * an inode record comfortably. */
#define MDS_ACL_MAX_ENTRIES 256u
#define MDS_ACL_XATTR_SIZE(n) (4u + 8u * (n))

/* Tags as in <linux/posix_acl.h> (never renumbered: they are on disk and on the
 * wire). */
enum {
  MDS_ACL_USER_OBJ = 0x01,
  MDS_ACL_USER = 0x02,
  MDS_ACL_GROUP_OBJ = 0x04,
  MDS_ACL_GROUP = 0x08,
  MDS_ACL_MASK = 0x10,
  MDS_ACL_OTHER = 0x20,
};
enum { MDS_ACL_EXECUTE = 1, MDS_ACL_WRITE = 2, MDS_ACL_READ = 4 };

struct mds_acl_entry {
  uint16_t tag;
  uint16_t perm;
  uint32_t
      id; /* USER and GROUP entries only; the xattr holds -1 for the others */
};

/* count 0: no ACL. */
struct mds_acl {
  uint32_t count;
  struct mds_acl_entry e[MDS_ACL_MAX_ENTRIES];
};

/* Parses the xattr bytes buf (len bytes) into out. A header alone (count 0) is
 * a valid "no ACL". -EINVAL for a short buffer, a length that is not a whole
 * number of entries or an unknown tag; -ENOSPC past MDS_ACL_MAX_ENTRIES. Does
 * not check validity (mds_acl_valid). -EOPNOTSUPP for another version, as the
 * kernel answers. */
int mds_acl_decode(const void *buf, size_t len, struct mds_acl *out);
/* Writes acl in the xattr format into buf when size >= the length (size 0:
 * length only). Returns the length in bytes. */
size_t mds_acl_encode(const struct mds_acl *acl, void *buf, size_t size);
/* The kernel's posix_acl_valid: perms within rwx; USER_OBJ, then USER entries,
 * GROUP_OBJ, GROUP entries, MASK, OTHER in that order, one each of the four
 * fixed tags; a MASK when there is a named entry. As the kernel (and so ext4),
 * named entries are not checked for order or duplicates (setfacl refuses
 * duplicates itself). 0 or -EINVAL. */
int mds_acl_valid(const struct mds_acl *acl);
/* 1 if acl says no more than the mode (only USER_OBJ, GROUP_OBJ, OTHER), 0 if
 * not; *mode (may be NULL) gets the permission bits acl stands for (group bits
 * from MASK if any). */
int mds_acl_equiv_mode(const struct mds_acl *acl, uint32_t *mode);
/* chmod's rule: USER_OBJ, MASK (or GROUP_OBJ without a mask) and OTHER take
 * their perms from mode's bits. */
void mds_acl_chmod(struct mds_acl *acl, uint32_t mode);
/* posix_acl_create_masq: acl (a clone of the parent's default) is limited by
 * the requested mode and *mode by acl (type and special bits kept). Returns 1
 * if acl must be kept as the new file's access ACL, 0 if the mode says it all,
 * -EINVAL for an ACL without GROUP_OBJ. */
int mds_acl_create_masq(struct mds_acl *acl, uint32_t *mode);
/* The POSIX.1e access check of want (MDS_ACL_* bits) for a caller who is not
 * the owner (the owner is checked against the mode first, as the kernel does):
 * named users and all matching groups are limited by the mask. 0 or -EACCES. */
int mds_acl_permission(const struct mds_acl *acl, const struct nacre_cred *cr,
                       uint32_t owner_gid, int want,
                       int (*in_group)(const struct nacre_cred *cr,
                                       uint32_t gid));

#endif
