/* perm.c - POSIX permission checks, following Linux's generic_permission (with POSIX ACLs,
 * acl.h) and setattr_prepare. */
#include "mds/perm.h"

#include <errno.h>
#include <sys/stat.h>

#include "mds/acl.h"
#include "mds/groups.h"

int mds_perm_is_root(const struct nacre_cred *cr)
{
	return cr->uid == 0;
}

int mds_perm_in_group(const struct nacre_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return 1;
	uint32_t n = cr->ngroups < NACRE_CRED_GROUPS ? cr->ngroups : NACRE_CRED_GROUPS;
	for (uint32_t i = 0; i < n; i++)
		if (cr->groups[i] == gid)
			return 1;
	/* the rest of a long list, registered with GROUPS_SET */
	return cr->groups_token ? mds_groups_has(cr->groups_token, gid) : 0;
}

int mds_perm_check(const struct nacre_cred *cr, const struct mds_inode *ino, int mask)
{
	if (mds_perm_is_root(cr)) {
		/* root may execute a file only if someone may */
		if ((mask & MDS_MAY_EXEC) && !S_ISDIR(ino->mode) && !(ino->mode & 0111))
			return -EACCES;
		return 0;
	}
	uint32_t bits;
	if (cr->uid == ino->uid)
		bits = (ino->mode >> 6) & 7;
	else if (ino->acl.count && (ino->mode & S_IRWXG))
		/* as acl_permission_check: the ACL only when the group bits (the mask) give
		 * something; with a mask of --- the mode's group and other bits decide */
		return mds_acl_permission(&ino->acl, cr, ino->gid, mask, mds_perm_in_group);
	else if (mds_perm_in_group(cr, ino->gid))
		bits = (ino->mode >> 3) & 7;
	else
		bits = ino->mode & 7;
	return ((uint32_t)mask & ~bits) ? -EACCES : 0;
}

int mds_perm_sticky(const struct nacre_cred *cr, const struct mds_inode *dir,
		    const struct mds_inode *victim)
{
	if (!(dir->mode & S_ISVTX))
		return 0;
	if (mds_perm_is_root(cr) || cr->uid == victim->uid || cr->uid == dir->uid)
		return 0;
	return -EPERM;
}

int mds_perm_may_link(const struct nacre_cred *cr, const struct mds_inode *ino)
{
	if (mds_perm_is_root(cr) || cr->uid == ino->uid)
		return 0;
	if (S_ISREG(ino->mode) && !(ino->mode & S_ISUID) &&
	    (ino->mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
	    mds_perm_check(cr, ino, MDS_MAY_READ | MDS_MAY_WRITE) == 0)
		return 0;
	return -EPERM;
}

int mds_perm_setattr(const struct nacre_cred *cr, struct mds_inode *ino,
		     const struct nacre_setattr *sa)
{
	int root = mds_perm_is_root(cr);
	int owner = cr->uid == ino->uid;

	if ((sa->valid & NACRE_SET_UID) && !root && !(owner && sa->uid == ino->uid))
		return -EPERM;
	/* the owner may chgrp to a group he belongs to */
	if ((sa->valid & NACRE_SET_GID) && !root &&
	    !(owner && (sa->gid == ino->gid || mds_perm_in_group(cr, sa->gid))))
		return -EPERM;
	if ((sa->valid & NACRE_SET_MODE) && !root && !owner) {
		/* A write or truncate by a non-owner drops setuid/setgid: the kernel asks for
		 * it as a chmod with the writer's credentials. Allow exactly that. */
		uint32_t kill = S_ISUID | S_ISGID, old = ino->mode & 07777, mode = sa->mode & 07777;
		if ((mode & ~kill) != (old & ~kill) || (mode & ~old) || mode == old ||
		    mds_perm_check(cr, ino, MDS_MAY_WRITE))
			return -EPERM;
	}
	/* explicit times: owner or root; "now": also anyone who may write. Each time is
	 * judged on its own: utimensat({t, UTIME_NOW}) by a non-owner is EPERM. */
	int explicit_time = ((sa->valid & NACRE_SET_ATIME) && !(sa->valid & NACRE_SET_ATIME_NOW)) ||
			    ((sa->valid & NACRE_SET_MTIME) && !(sa->valid & NACRE_SET_MTIME_NOW)) ||
			    (sa->valid & NACRE_SET_CTIME);
	if (explicit_time && !root && !owner)
		return -EPERM;
	if ((sa->valid & (NACRE_SET_ATIME_NOW | NACRE_SET_MTIME_NOW)) && !root && !owner) {
		int rc = mds_perm_check(cr, ino, MDS_MAY_WRITE);
		if (rc)
			return rc;
	}
	if (sa->valid & NACRE_SET_SIZE) {
		int rc = mds_perm_check(cr, ino, MDS_MAY_WRITE);
		if (rc)
			return rc;
	}

	uint32_t new_gid = (sa->valid & NACRE_SET_GID) ? sa->gid : ino->gid;
	int chown = ((sa->valid & NACRE_SET_UID) && sa->uid != ino->uid) ||
		    ((sa->valid & NACRE_SET_GID) && sa->gid != ino->gid);
	if (sa->valid & NACRE_SET_MODE) {
		uint32_t mode = sa->mode & 07777;
		/* a non-member cannot leave a file setgid to a group he is not in */
		if (!root && !mds_perm_in_group(cr, new_gid))
			mode &= ~(uint32_t)S_ISGID;
		ino->mode = (ino->mode & S_IFMT) | mode;
		if (ino->acl.count)
			mds_acl_chmod(&ino->acl, mode); /* the mask follows the group bits */
	} else if (chown && !S_ISDIR(ino->mode)) {
		/* chown drops privileges bound to the old owner */
		ino->mode &= ~(uint32_t)S_ISUID;
		if (ino->mode & S_IXGRP)
			ino->mode &= ~(uint32_t)S_ISGID;
	}
	if (sa->valid & NACRE_SET_UID)
		ino->uid = sa->uid;
	if (sa->valid & NACRE_SET_GID)
		ino->gid = sa->gid;
	return 0;
}
