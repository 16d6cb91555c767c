/* ns_acl.c - what a new inode takes from its parent directory's default ACL
 * (Linux's posix_acl_create), inside the create's writer operation. */
#include "mds/ns_acl.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "mds/acl.h"

/* The default ACL of dir into acl (count 0: none). 0 or a negative errno. */
static int default_of(struct mds_txn *txn, const struct nacre_fid *dir,
                      struct mds_acl *acl) {
  size_t cap = MDS_ACL_XATTR_SIZE(MDS_ACL_MAX_ENTRIES);
  void *buf = malloc(cap);
  if (!buf)
    return -ENOMEM;
  acl->count = 0;
  int rc = mds_db_xattr_get(txn, dir, MDS_ACL_XATTR_DEFAULT, buf, cap);
  if (rc == -ENODATA)
    rc = 0;
  else if (rc >= 0)
    /* checked when it was set: anything else is damage */
    rc = (size_t)rc > cap || mds_acl_decode(buf, (size_t)rc, acl) ? -EIO : 0;
  free(buf);
  return rc;
}

int mds_ns_acl_inherit(struct mds_txn *txn, const struct mds_inode *dir,
                       const struct wire_create_req *req,
                       struct mds_inode *ino) {
  if (S_ISLNK(ino->mode))
    return 0;
  struct mds_acl *acl = malloc(sizeof(*acl));
  if (!acl)
    return -ENOMEM;
  int rc = default_of(txn, &dir->fid, acl);
  if (rc)
    goto out;
  if (!acl->count) {
    if (req->flags & WIRE_CREATE_UMASK)
      ino->mode &= ~(req->umask & 0777u);
    goto out;
  }
  rc = mds_acl_create_masq(acl, &ino->mode);
  if (rc < 0) {
    rc = -EIO;
    goto out;
  }
  ino->acl.count = rc ? acl->count : 0;
  for (uint32_t i = 0; i < ino->acl.count; i++)
    ino->acl.e[i] = acl->e[i];
  rc = S_ISDIR(ino->mode) ? 1 : 0;
out:
  free(acl);
  return rc;
}

int mds_ns_acl_copy_default(struct mds_txn *txn, const struct nacre_fid *dir,
                            const struct nacre_fid *child) {
  size_t cap = MDS_ACL_XATTR_SIZE(MDS_ACL_MAX_ENTRIES);
  void *buf = malloc(cap);
  if (!buf)
    return -ENOMEM;
  int rc = mds_db_xattr_get(txn, dir, MDS_ACL_XATTR_DEFAULT, buf, cap);
  if (rc >= 0 && (size_t)rc <= cap)
    rc = mds_db_xattr_put(txn, child, MDS_ACL_XATTR_DEFAULT, buf, (size_t)rc);
  else if (rc >= 0)
    rc = -EIO;
  free(buf);
  return rc;
}
