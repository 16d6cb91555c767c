/* ops.c - the FUSE operation table and the connection setup (init). */
#include "common/log.h"
#include "fuse/fz.h"

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fz_mount *m = userdata;
	uint32_t kernel_ra = conn->max_readahead;

	/* libfuse derives max_pages from max_write (256 pages = 1 MiB). */
	conn->max_write = FZ_MAX_IO;
	conn->max_readahead = FZ_MAX_IO;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* Writes must reach us one by one (sizes and close-to-open depend on it); the kernel
	 * clears suid/sgid on write and chown (the MDS does not); splice gains nothing for
	 * buffers we copy anyway. */
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_DONT_MASK |
				  FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_SPLICE_READ |
				  FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	/* POSIX ACLs: the kernel enforces them from system.posix_acl_* (cached, read through
	 * getxattr) and leaves the umask to the MDS, which applies it only where no default
	 * ACL takes its place (fz_umask_bits). Without ACLs the kernel applies the umask. */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	/* localflock: the kernel keeps locks itself (libfuse asked for both since we have the
	 * ops); flock and noflock: every lock call comes to lock.c */
	if (m->lock_mode == FZ_LOCK_LOCAL)
		conn->want &= ~(unsigned)(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
	/* nacre_ioctl.h: `nacre find` asks through an ioctl on a directory */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* File handles (name_to_handle_at, an NFS re-export) of inodes the kernel no longer
	 * caches: it asks us for "." of their node id and ".." of directories (dir.c). */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	if (m->replay_init) {
		/* An upgrade: the kernel negotiated with the previous process; its flags were
		 * not all in the replayed INIT, so take libfuse's view of them as it was. */
		conn->capable = m->replay_init->capable;
		conn->want = m->replay_init->want;
	}
	m->init.proto_major = conn->proto_major;
	m->init.proto_minor = conn->proto_minor;
	m->init.max_readahead = kernel_ra;
	m->init.capable = conn->capable;
	m->init.want = conn->want;
	LOG_INFO("fuse", "kernel protocol %u.%u, max_write %u, capable 0x%x, want 0x%x",
		 conn->proto_major, conn->proto_minor, conn->max_write, conn->capable, conn->want);
	/* The kernel caps the bdi readahead to 128 KiB when it applies this reply; bdi.c
	 * raises it afterwards. */
	fz_bdi_init_done(m);
}

const struct fuse_lowlevel_ops fz_ops = {
	.init = op_init,
	.lookup = fz_op_lookup,
	.forget = fz_op_forget,
	.forget_multi = fz_op_forget_multi,
	.getattr = fz_op_getattr,
	.setattr = fz_op_setattr,
	.readlink = fz_op_readlink,
	.mknod = fz_op_mknod,
	.mkdir = fz_op_mkdir,
	.unlink = fz_op_unlink,
	.rmdir = fz_op_rmdir,
	.symlink = fz_op_symlink,
	.rename = fz_op_rename,
	.link = fz_op_link,
	.open = fz_op_open,
	.read = fz_op_read,
	.write = fz_op_write,
	.flush = fz_op_lock_flush,
	.release = fz_op_lock_release,
	.fsync = fz_op_fsync,
	.opendir = fz_op_opendir,
	.readdir = fz_op_readdir,
	.readdirplus = fz_op_readdirplus,
	.releasedir = fz_op_releasedir,
	.fsyncdir = fz_op_fsyncdir,
	.statfs = fz_op_statfs,
	.setxattr = fz_op_setxattr,
	.getxattr = fz_op_getxattr,
	.ioctl = fz_op_ioctl,
	.listxattr = fz_op_listxattr,
	.removexattr = fz_op_removexattr,
	.access = fz_op_access,
	.create = fz_op_create,
	.getlk = fz_op_getlk,
	.setlk = fz_op_setlk,
	.flock = fz_op_flock,
	.fallocate = fz_op_fallocate,
	.lseek = fz_op_lseek,
};
