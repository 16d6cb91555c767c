/* acl.c - POSIX ACLs: the xattr format and the rules of Linux's fs/posix_acl.c.
 */
#include "mds/acl.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define UNDEFINED_ID 0xffffffffu

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

int mds_acl_decode(const void *buf, size_t len, struct mds_acl *out) {
  const uint8_t *p = buf;
  out->count = 0;
  if (len < 4 || (len - 4) % 8)
    return -EINVAL;
  if (get_le32(p) != MDS_ACL_XATTR_VERSION)
    return -EOPNOTSUPP;
  size_t n = (len - 4) / 8;
  if (n > MDS_ACL_MAX_ENTRIES)
    return -ENOSPC;
  for (size_t i = 0; i < n; i++) {
    const uint8_t *q = p + 4 + 8 * i;
    struct mds_acl_entry *e = &out->e[i];
    e->tag = (uint16_t)(q[0] | q[1] << 8);
    e->perm = (uint16_t)(q[2] | q[3] << 8);
    e->id = get_le32(q + 4);
    switch (e->tag) {
    case MDS_ACL_USER_OBJ:
    case MDS_ACL_GROUP_OBJ:
    case MDS_ACL_MASK:
    case MDS_ACL_OTHER:
      e->id = UNDEFINED_ID;
      break;
    case MDS_ACL_USER:
    case MDS_ACL_GROUP:
      if (e->id == UNDEFINED_ID)
        return -EINVAL; /* no such uid or gid */
      break;
    default:
      return -EINVAL;
    }
  }
  out->count = (uint32_t)n;
  return 0;
}

size_t mds_acl_encode(const struct mds_acl *acl, void *buf, size_t size) {
  size_t len = MDS_ACL_XATTR_SIZE(acl->count);
  if (size == 0 || size < len)
    return len;
  uint8_t *p = buf;
  put_le32(p, MDS_ACL_XATTR_VERSION);
  for (uint32_t i = 0; i < acl->count; i++) {
    const struct mds_acl_entry *e = &acl->e[i];
    uint8_t *q = p + 4 + 8 * i;
    q[0] = (uint8_t)e->tag;
    q[1] = (uint8_t)(e->tag >> 8);
    q[2] = (uint8_t)e->perm;
    q[3] = (uint8_t)(e->perm >> 8);
    put_le32(q + 4, (e->tag == MDS_ACL_USER || e->tag == MDS_ACL_GROUP)
                        ? e->id
                        : UNDEFINED_ID);
  }
  return len;
}

int mds_acl_valid(const struct mds_acl *acl) {
  enum { S_DONE, S_USER_OBJ, S_USER, S_GROUP, S_OTHER } state = S_USER_OBJ;
  int needs_mask = 0;
  for (uint32_t i = 0; i < acl->count; i++) {
    const struct mds_acl_entry *e = &acl->e[i];
    if (e->perm & ~(MDS_ACL_READ | MDS_ACL_WRITE | MDS_ACL_EXECUTE))
      return -EINVAL;
    switch (e->tag) {
    case MDS_ACL_USER_OBJ:
      if (state != S_USER_OBJ)
        return -EINVAL;
      state = S_USER;
      break;
    case MDS_ACL_USER:
      if (state != S_USER)
        return -EINVAL;
      needs_mask = 1;
      break;
    case MDS_ACL_GROUP_OBJ:
      if (state != S_USER)
        return -EINVAL;
      state = S_GROUP;
      break;
    case MDS_ACL_GROUP:
      if (state != S_GROUP)
        return -EINVAL;
      needs_mask = 1;
      break;
    case MDS_ACL_MASK:
      if (state != S_GROUP)
        return -EINVAL;
      state = S_OTHER;
      break;
    case MDS_ACL_OTHER:
      if (state == S_OTHER || (state == S_GROUP && !needs_mask)) {
        state = S_DONE;
        break;
      }
      return -EINVAL;
    default:
      return -EINVAL;
    }
  }
  return state == S_DONE ? 0 : -EINVAL;
}

int mds_acl_equiv_mode(const struct mds_acl *acl, uint32_t *mode) {
  uint32_t bits = 0;
  int equiv = 1;
  for (uint32_t i = 0; i < acl->count; i++) {
    const struct mds_acl_entry *e = &acl->e[i];
    uint32_t perm = e->perm & 7u;
    switch (e->tag) {
    case MDS_ACL_USER_OBJ:
      bits |= perm << 6;
      break;
    case MDS_ACL_GROUP_OBJ:
      bits |= perm << 3;
      break;
    case MDS_ACL_OTHER:
      bits |= perm;
      break;
    case MDS_ACL_MASK:
      bits = (bits & ~(uint32_t)S_IRWXG) | perm << 3;
      equiv = 0;
      break;
    default:
      equiv = 0;
      break;
    }
  }
  if (mode)
    *mode = bits;
  return equiv;
}

void mds_acl_chmod(struct mds_acl *acl, uint32_t mode) {
  struct mds_acl_entry *group_obj = NULL, *mask = NULL;
  for (uint32_t i = 0; i < acl->count; i++) {
    struct mds_acl_entry *e = &acl->e[i];
    if (e->tag == MDS_ACL_USER_OBJ)
      e->perm = (uint16_t)((mode >> 6) & 7u);
    else if (e->tag == MDS_ACL_GROUP_OBJ)
      group_obj = e;
    else if (e->tag == MDS_ACL_MASK)
      mask = e;
    else if (e->tag == MDS_ACL_OTHER)
      e->perm = (uint16_t)(mode & 7u);
  }
  if (mask)
    mask->perm = (uint16_t)((mode >> 3) & 7u);
  else if (group_obj)
    group_obj->perm = (uint16_t)((mode >> 3) & 7u);
}

int mds_acl_create_masq(struct mds_acl *acl, uint32_t *mode_p) {
  struct mds_acl_entry *group_obj = NULL, *mask = NULL;
  uint32_t mode = *mode_p;
  int not_equiv = 0;
  for (uint32_t i = 0; i < acl->count; i++) {
    struct mds_acl_entry *e = &acl->e[i];
    switch (e->tag) {
    case MDS_ACL_USER_OBJ:
      e->perm &= (uint16_t)(((mode >> 6) & 7u));
      mode &= ((uint32_t)e->perm << 6) | ~(uint32_t)S_IRWXU;
      break;
    case MDS_ACL_USER:
    case MDS_ACL_GROUP:
      not_equiv = 1;
      break;
    case MDS_ACL_GROUP_OBJ:
      group_obj = e;
      break;
    case MDS_ACL_OTHER:
      e->perm &= (uint16_t)(mode & 7u);
      mode &= (uint32_t)e->perm | ~(uint32_t)S_IRWXO;
      break;
    case MDS_ACL_MASK:
      mask = e;
      not_equiv = 1;
      break;
    default:
      return -EINVAL;
    }
  }
  struct mds_acl_entry *g = mask ? mask : group_obj;
  if (!g)
    return -EINVAL;
  g->perm &= (uint16_t)((mode >> 3) & 7u);
  mode &= ((uint32_t)g->perm << 3) | ~(uint32_t)S_IRWXG;
  *mode_p = (*mode_p & ~(uint32_t)(S_IRWXU | S_IRWXG | S_IRWXO)) |
            (mode & (S_IRWXU | S_IRWXG | S_IRWXO));
  return not_equiv;
}

/* The mask that limits entry i, or rwx when there is none. */
static uint32_t mask_of(const struct mds_acl *acl, uint32_t i) {
  for (uint32_t j = i + 1; j < acl->count; j++)
    if (acl->e[j].tag == MDS_ACL_MASK)
      return acl->e[j].perm;
  return 7u;
}

int mds_acl_permission(const struct mds_acl *acl, const struct nacre_cred *cr,
                       uint32_t owner_gid, int want,
                       int (*in_group)(const struct nacre_cred *cr,
                                       uint32_t gid)) {
  uint32_t w = (uint32_t)want & 7u;
  int found = 0;
  for (uint32_t i = 0; i < acl->count; i++) {
    const struct mds_acl_entry *e = &acl->e[i];
    switch (e->tag) {
    case MDS_ACL_USER_OBJ:
      break; /* the owner was checked against the mode */
    case MDS_ACL_USER:
      if (e->id == cr->uid)
        return (e->perm & mask_of(acl, i) & w) == w ? 0 : -EACCES;
      break;
    case MDS_ACL_GROUP_OBJ:
    case MDS_ACL_GROUP: {
      uint32_t gid = e->tag == MDS_ACL_GROUP ? e->id : owner_gid;
      if (in_group(cr, gid)) {
        found = 1;
        if ((e->perm & w) == w)
          return (e->perm & mask_of(acl, i) & w) == w ? 0 : -EACCES;
      }
      break;
    }
    case MDS_ACL_MASK:
      break;
    case MDS_ACL_OTHER:
      if (found)
        return -EACCES;
      return (e->perm & w) == w ? 0 : -EACCES;
    default:
      return -EACCES;
    }
  }
  return -EACCES; /* no OTHER entry: not a valid ACL */
}
