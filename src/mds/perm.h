/* perm.h - POSIX permission checks with the caller's credentials. Pure; thread-safe. */
#ifndef NACRE_MDS_PERM_H
#define NACRE_MDS_PERM_H

#include "mds/db.h"

enum { MDS_MAY_EXEC = 1, MDS_MAY_WRITE = 2, MDS_MAY_READ = 4 };

/* 1 if cr is uid 0. */
int mds_perm_is_root(const struct nacre_cred *cr);
/* 1 if gid is cr's primary or one of its supplementary groups (all of them: those past
 * NACRE_CRED_GROUPS from the list registered under cr->groups_token, groups.h). */
int mds_perm_in_group(const struct nacre_cred *cr, uint32_t gid);
/* Checks mask (MDS_MAY_*) against ino's mode bits and its access ACL (ino->acl; POSIX.1e:
 * named users and groups limited by the mask). Root passes, except exec of a non-directory
 * with no x bit at all. Returns 0 or -EACCES. */
int mds_perm_check(const struct nacre_cred *cr, const struct mds_inode *ino, int mask);
/* Sticky directory rule for removing or renaming victim out of dir: allowed to the owner of
 * victim, the owner of dir, or root. Returns 0 or -EPERM. */
int mds_perm_sticky(const struct nacre_cred *cr, const struct mds_inode *dir,
		    const struct mds_inode *victim);
/* fs.protected_hardlinks, as Linux's may_linkat: a link to ino is allowed to its owner,
 * root, or anyone who may read and write it if it is a regular file that is neither setuid
 * nor setgid-executable. Returns 0 or -EPERM. */
int mds_perm_may_link(const struct nacre_cred *cr, const struct mds_inode *ino);
/* Checks a setattr (nacre_setattr.valid) against ino and applies mode/uid/gid changes to ino,
 * including the setuid/setgid clearing rules (chmod by a non-member clears setgid; chown of a
 * non-directory clears setuid and group-exec setgid); a mode change also updates the access
 * ACL's mask (or group entry without one), as chmod does. Does not touch size or times.
 * Returns 0, -EPERM or -EACCES. */
int mds_perm_setattr(const struct nacre_cred *cr, struct mds_inode *ino,
		     const struct nacre_setattr *sa);

#endif
