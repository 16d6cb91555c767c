/* ns_acl.h - what a new inode takes from its parent directory's default ACL (Linux's
 * posix_acl_create), inside a create's writer operation (ns.c). Thread-safe as the txn is. */
#ifndef NACRE_MDS_NS_ACL_H
#define NACRE_MDS_NS_ACL_H

#include "mds/db.h"
#include "proto/wire.h"

/* ino (mode, uid, gid set; acl empty) takes the access ACL and permission bits that dir's
 * default ACL gives it; without a default ACL the request's umask (WIRE_CREATE_UMASK)
 * applies instead. Symlinks take nothing. Returns 1 if ino is a directory that must also
 * get dir's default (mds_ns_acl_copy_default, once ino exists), 0, or a negative errno
 * (-EIO for a damaged stored ACL). */
int mds_ns_acl_inherit(struct mds_txn *txn, const struct mds_inode *dir,
		       const struct wire_create_req *req, struct mds_inode *ino);
/* Copies dir's default ACL to child. 0 or a negative errno. */
int mds_ns_acl_copy_default(struct mds_txn *txn, const struct nacre_fid *dir,
			    const struct nacre_fid *child);

#endif
