/* ns.h - namespace operations: the POSIX semantics of the MDS over the db, with permission
 * checks by the caller's credentials. Reads run in short read-only transactions on the
 * calling thread; mutations go to the writer (group commit) and block until committed.
 * Every function is thread-safe and returns 0 (or a length) or a negative errno.
 * ns.c: lookup to fid2path; rename.c; xattr.c; ns_open.c: open, close, orphans;
 * ns_layout.c: layouts; ns_import.c: HSM import; ns_acl.c: default ACL inheritance. */
#ifndef NACRE_MDS_NS_H
#define NACRE_MDS_NS_H

#include <stddef.h>
#include <stdint.h>

#include "mds/db.h"
#include "mds/mds.h"
#include "proto/wire.h"

#define MDS_RENAME_NOREPLACE 1u
#define MDS_RENAME_EXCHANGE 2u

int mds_ns_lookup(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *parent,
		  const char *name, struct nacre_attr *out);
int mds_ns_getattr(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   struct nacre_attr *out);
/* A size change on a regular file punches its objects first (-EIO if an OSS cannot be
 * reached), then commits. */
int mds_ns_setattr(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   const struct nacre_setattr *sa, struct nacre_attr *out);
/* CREATE, MKDIR, MKNOD or SYMLINK (opcode). The new inode inherits the parent's default ACL
 * (ns_acl.h), or has the request's umask applied without one (WIRE_CREATE_UMASK).
 * layout_out (may be NULL) gets the new file's layout (nosts 0 for other types). CREATE
 * without O_EXCL of an existing regular file answers with that file, as open(O_CREAT)
 * does. CREATE with WIRE_CREATE_OPEN also opens a file it made for conn_id: *handle_out
 * (may be NULL) gets the handle, else 0. */
int mds_ns_create(struct mds *m, uint64_t conn_id, uint16_t opcode,
		  const struct wire_create_req *req, struct nacre_attr *out,
		  struct nacre_layout *layout_out, uint64_t *handle_out);
/* APPEND: reserves r->len bytes at the end of the file for an O_APPEND write through
 * owner's open handle (-EBADF without one), atomically with every other append: the size
 * grows by len now and *offset says where the bytes go. */
int mds_ns_append(struct mds *m, uint64_t owner, const struct wire_append_req *r,
		  uint64_t *offset);
/* target gets NACRE_PATH_MAX + 1 bytes. */
int mds_ns_readlink(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		    char *target);
/* UNLINK (is_rmdir 0) or RMDIR (1). */
int mds_ns_unlink(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *parent,
		  const char *name, int is_rmdir);
int mds_ns_rename(struct mds *m, const struct wire_rename_req *r);
int mds_ns_link(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		const struct nacre_fid *parent, const char *name, struct nacre_attr *out);

/* The same changes inside a transaction the caller owns (a BATCH, batch.c): nothing runs
 * outside it, so a CREATE opens nothing (-EINVAL with WIRE_CREATE_OPEN) and a SETATTR may
 * not shrink a file or change a released one's size (-EOPNOTSUPP: objects are cut first,
 * outside any transaction; send it alone). The caller kicks the destroyer after a commit
 * that unlinked or renamed over a file. */
int mds_ns_create_txn(struct mds *m, struct mds_txn *txn, uint16_t opcode,
		      const struct wire_create_req *req, struct nacre_attr *out,
		      struct nacre_layout *layout_out);
int mds_ns_setattr_txn(struct mds *m, struct mds_txn *txn, const struct nacre_cred *cr,
		       const struct nacre_fid *fid, const struct nacre_setattr *sa,
		       struct nacre_attr *out);
int mds_ns_unlink_txn(struct mds *m, struct mds_txn *txn, const struct nacre_cred *cr,
		      const struct nacre_fid *parent, const char *name, int is_rmdir);
int mds_ns_rename_txn(struct mds *m, struct mds_txn *txn, const struct wire_rename_req *r);
int mds_ns_link_txn(struct mds *m, struct mds_txn *txn, const struct nacre_cred *cr,
		    const struct nacre_fid *fid, const struct nacre_fid *parent, const char *name,
		    struct nacre_attr *out);
/* Calls fn for the entries of dir after cookie (0 = from the start) in cookie order, inside
 * one read txn; fn returns nonzero to stop. Needs read permission on dir. With plus, a is
 * each entry's attributes if cr may also search dir (as a lookup of it would need), else
 * NULL. */
int mds_ns_readdir_plus(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *dir,
			uint64_t cookie, int plus,
			int (*fn)(void *arg, const struct nacre_dirent *d,
				  const struct nacre_attr *a),
			void *arg);
/* Path of fid from the root, starting with '/', into buf. -ENOENT for an unlinked FID,
 * -EACCES if cr may not search one of the path's directories, -ERANGE if it does not fit. */
int mds_ns_fid2path(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		    char *buf, size_t len);
/* The hard links of fid from the link numbered start, in link order (mds_db_link_iter),
 * inside one read txn: fn(arg, parent, name) for each link in a directory cr may search,
 * the others counted in *hidden. fn returns nonzero to stop before that link: *next is its
 * number and *eof 0; after the last link *next is the count and *eof 1. -ENOENT if fid
 * does not exist. */
int mds_ns_links(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		 uint32_t start,
		 int (*fn)(void *arg, const struct nacre_fid *parent, const char *name), void *arg,
		 uint32_t *hidden, uint32_t *next, int *eof);

/* OPEN (ns_open.c): checks access for the O_ACCMODE of flags (directories: read only;
 * O_RDONLY with WIRE_OPEN_EXEC: execute, regular files only),
 * truncates on O_TRUNC (as SETATTR size 0), registers a handle for owner (session.h:
 * mds_owner_of) on connection conn_id (an HSM agent's restore is known by it). A released file
 * queues a restore (-NACRE_ERESTORING), except for the copytool restoring it, which gets
 * the new objects' layout. */
int mds_ns_open(struct mds *m, uint64_t conn_id, uint64_t owner, const struct wire_open_req *r,
		struct wire_open_rep *rep);
/* CLOSE (is_close 1) or SIZE_UPDATE: size = max(stored, reported) for regular files,
 * has_mtime sets mtime and ctime. CLOSE drops the handle; the last close of an orphan
 * destroys it. An unknown handle is not an error (the size update still applies). A CLOSE
 * of an inode that no longer exists (destroyed orphan) succeeds with an attr holding only
 * the FID; a SIZE_UPDATE of one fails with -ESTALE. */
int mds_ns_close(struct mds *m, uint64_t conn_id, const struct wire_close_req *r, int is_close,
		 struct nacre_attr *out);
/* Closes every handle of an owner that went away: a connection without a session, or an
 * evicted session (orphans it held open go). */
void mds_ns_disconnect(struct mds *m, uint64_t conn_id);
/* Destroys every inode with nlink 0 that nobody has open (left over from open unlinked
 * files): at startup, or once recovery gave their clients the chance to re-open them. */
int mds_ns_reap_orphans(struct mds *m);

/* Layouts (ns_layout.c). GET: the file's layout or the directory's default; -ENODATA if
 * there is none. SET of a directory: sets its default; a request with stripe_count 0,
 * stripe_size 0 and stripe_offset -1 clears it (out then has nosts 0 and stripe_count 0).
 * Needs owner or root. Of a regular file: only while its size is 0 (else -EBUSY);
 * allocates new OSTs, bumps gen and queues the old objects for destruction. Needs write
 * permission. Others: -EINVAL. */
int mds_ns_layout_get(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		      struct nacre_layout *out);
int mds_ns_layout_set(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		      const struct nacre_layout *l, struct nacre_layout *out);

/* HSM_IMPORT (ns_import.c): a released stub named r->name in r->parent, whose data is the
 * archive object r->path. Root only (it sets any owner, as chown does); -EEXIST if the name
 * is taken. */
int mds_ns_import(struct mds *m, const struct wire_hsm_import_req *r, struct nacre_attr *out);

/* xattrs (xattr.c). get/list copy into buf when size > 0 and return the length (-ERANGE if
 * size is too small); size 0 returns the length only. flags: XATTR_CREATE 1, REPLACE 2. */
int mds_xattr_get(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		  const char *name, void *buf, size_t size);
int mds_xattr_set(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		  const char *name, const void *value, size_t len, uint32_t flags);
int mds_xattr_list(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		   char *buf, size_t size);
int mds_xattr_remove(struct mds *m, const struct nacre_cred *cr, const struct nacre_fid *fid,
		     const char *name);

/* ---- helpers shared by the ns files (inside a writer operation) ---- */
/* Reads a directory inode: -ENOENT if missing or being removed, -ENOTDIR if not a dir. */
int mds_ns_get_dir(struct mds_txn *txn, const struct nacre_fid *fid, struct mds_inode *dir);
/* Drops one name of ino (already removed from its directory): directories go at once;
 * other inodes at nlink 0 become orphans while open, else are deleted with their objects
 * queued for destruction. Writes ino back if it stays. */
int mds_ns_drop_name(struct mds *m, struct mds_txn *txn, struct mds_inode *ino,
		     struct nacre_time now);
/* Deletes an inode, its xattrs, and queues its objects in the destroy log (the caller
 * kicks the destroy thread after the commit: mds_destroyer_kick). */
int mds_ns_destroy_inode(struct mds *m, struct mds_txn *txn, const struct mds_inode *ino);

#endif
