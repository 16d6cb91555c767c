/* io.c - the open-file calls of nacre.h: open, read, write, fsync, flush, close.
 *
 * A write goes down one way: write-behind (wb.c) or, when it is large or write-behind is
 * off, the object engine (obj.c) at once; the object engine sends the RPCs. A read comes
 * from readahead (ra.c) when it holds the range, else from the object engine.
 *
 * Size: the MDS holds it; a handle knows the size from OPEN (or a later getattr) and the
 * highest end offset it wrote itself, and reports the latter on fsync and close. A read that
 * reaches past that size also looks at the other handles of the file on this client.
 *
 * With write-behind on (fs->dirty_max > 0) writes go to wb.c and reach the OSTs in the
 * background; reads first push out buffered writes of their range (read-your-writes) and
 * are served by readahead (ra.c) when it holds them. Writes larger than a quarter of the
 * per-file bound skip the buffer (they are large RPCs already).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/caps.h"
#include "client/cl_export.h"
#include "client/cl_internal.h"
#include "client/files.h"
#include "client/mdc.h"
#include "client/md.h"
#include "client/obj.h"
#include "client/size.h"
#include "common/layout.h"
#include "proto/wire.h"

/* The largest offset we accept, so that offsets and ends never overflow. */
#define FILE_OFF_MAX ((uint64_t)INT64_MAX)

static struct nacre_time now_realtime(void)
{
	struct timespec ts;
	struct nacre_time t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t.sec = ts.tv_sec;
	t.nsec = (uint32_t)ts.tv_nsec;
	return t;
}

static uint64_t known_size_locked(const struct nacre_file *f)
{
	return f->attr.size > f->written_end ? f->attr.size : f->written_end;
}

/* A handle object for an open the MDS granted (not yet registered). */
static int file_new(struct nacre_fs *fs, const struct nacre_cred *cred, int flags,
		    uint64_t handle, const struct nacre_attr *attr,
		    const struct nacre_layout *layout, uint8_t has_cap, const struct wire_cap *cap,
		    struct nacre_file **out)
{
	struct nacre_file *f;

	if (S_ISREG(attr->mode) && layout->nosts > 0 && layout_check_file(layout)) {
		cl_log(fs, CL_LOG_ERR, "MDS %s sent an invalid layout for a file", fs->addr);
		return -EPROTO; /* the handle dies with the connection or at MDS restart */
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fs = fs;
	f->fid = attr->fid;
	f->cred = *cred;
	f->flags = flags;
	f->handle = handle;
	f->layout = *layout;
	f->attr = *attr;
	f->dense = attr->size == 0;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->append_lock, NULL);
	pthread_cond_init(&f->io_cond, NULL);
	cl_cap_init(f, has_cap, cap);
	*out = f;
	return 0;
}

NACRE_API int nacre_open(struct nacre_fs *fs, const struct nacre_cred *cr,
			 const struct nacre_fid *fid, int flags, struct nacre_file **out)
{
	struct wire_open_req req;
	struct wire_open_rep rep;
	struct nacre_cred root;
	struct nacre_file *f;
	int rc;

	if (!fs || !fid || !out)
		return -EINVAL;
	*out = NULL;
	memset(&req, 0, sizeof(req));
	req.cred = *cl_cred(cr, &root);
	req.fid = *fid;
	req.flags = (uint32_t)(flags & ~(O_CREAT | O_EXCL | O_NOCTTY)); /* create is separate */
	/* Writes of other handles come before the truncate, not after it. */
	if (flags & O_TRUNC)
		cl_size_publish_fid(fs, fid);
	uint64_t asked = cl_lease_clock(fs);
	rc = cl_mds_do(fs, WIRE_OP_MDS_OPEN, &req, &rep);
	if (rc)
		return rc;
	cl_lease_attr_seen(fs, &rep.attr, asked); /* (an O_TRUNC cut it) */
	rc = file_new(fs, &req.cred, flags, rep.handle, &rep.attr, &rep.layout, rep.has_cap,
		      &rep.cap, &f);
	if (rc)
		return rc;
	/* Other handles of this client must not report an end beyond the truncation. */
	if (flags & O_TRUNC)
		cl_files_set_size(fs, fid, rep.attr.size);
	cl_files_add(f);
	*out = f;
	return 0;
}

NACRE_API int nacre_create_open(struct nacre_fs *fs, const struct nacre_cred *cr,
				const struct nacre_fid *parent, const char *name, uint32_t mode,
				int flags, const struct nacre_layout *layout,
				struct nacre_attr *attr_out, struct nacre_file **out)
{
	struct nacre_cred root;
	struct nacre_layout l;
	struct nacre_attr a;
	uint64_t handle;
	struct wire_cap cap;
	uint8_t has_cap = 0;
	int rc;

	if (!fs || !parent || !out)
		return -EINVAL;
	*out = NULL;
	rc = cl_create_open(fs, cr, parent, name, mode, flags, layout, &a, &l, &handle, &cap,
			    &has_cap);
	if (rc)
		return rc;
	if (attr_out)
		*attr_out = a;
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY);
	if (handle == 0) /* the name existed: an ordinary open, with its checks */
		return nacre_open(fs, cr, &a.fid, flags, out);
	rc = file_new(fs, cl_cred(cr, &root), flags, handle, &a, &l, has_cap, &cap, out);
	if (rc)
		return rc; /* the handle dies with the connection or at MDS restart */
	cl_files_add(*out);
	return 0;
}

NACRE_API ssize_t nacre_pread(struct nacre_file *f, void *buf, size_t len, uint64_t off)
{
	uint64_t size;
	int rc;

	if (!f || (!buf && len > 0))
		return -EINVAL;
	if (off > FILE_OFF_MAX)
		return -EINVAL;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	size = known_size_locked(f);
	pthread_mutex_unlock(&f->lock);
	/* Past what this handle knows, another handle of this client may have written (another
	 * process on the same mount, its data still buffered and its size not yet at the MDS,
	 * or an O_DIRECT reader of a file a writer here appends to): that data is in the file
	 * for every reader here at once, not from its close on. Only reads reaching this
	 * handle's end pay for the walk of the open files, and only while some handle of this
	 * client wrote (a size the MDS gave any handle reaches them all: nacre_file_size_seen). */
	if (off + len > size && __atomic_load_n(&f->fs->writers, __ATOMIC_ACQUIRE) > 0) {
		uint64_t all = cl_files_known_size(f->fs, &f->fid);
		if (all > size)
			size = all;
	}
	if (len == 0 || off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	cl_wb_flush_range(f, off, len); /* read-your-writes, for every handle of this client */
	if (cl_ra_read(f, buf, len, off, size))
		return (ssize_t)len;
	rc = cl_obj_file_io(f, WIRE_OP_OST_READ, buf, len, off);
	return rc < 0 ? rc : (ssize_t)len;
}

/* O_APPEND: the MDS puts len bytes at the end of the file for us, atomically with every
 * other client's appends (size += len), and says where: the bytes go there. */
static int append_offset(struct nacre_file *f, uint64_t len, uint64_t *off)
{
	struct wire_append_req req = {.cred = f->cred, .fid = f->fid, .len = len};
	struct wire_append_rep rep;
	int rc;

	pthread_mutex_lock(&f->lock);
	req.handle = f->handle;
	pthread_mutex_unlock(&f->lock);
	rc = cl_mds_do(f->fs, WIRE_OP_MDS_APPEND, &req, &rep);
	if (rc == 0)
		*off = rep.offset;
	cl_lease_attr_forget(f->fs, &f->fid); /* the MDS moved its size */
	return rc;
}

/* A file that grew by CL_QUOTA_STEP since the MDS last heard its size reports it now, so a
 * quota the growth passes is refused (EDQUOT) by this write, not only at fsync or close
 * (docs/quota.md): one SIZE_UPDATE per CL_QUOTA_STEP written, at most. */
#define CL_QUOTA_STEP (32ull << 20)
static int publish_growth(struct nacre_file *f)
{
	int due;

	pthread_mutex_lock(&f->lock);
	uint64_t known = f->published_end > f->attr.size ? f->published_end : f->attr.size;
	due = f->written_end >= known + CL_QUOTA_STEP;
	pthread_mutex_unlock(&f->lock);
	if (!due)
		return 0;
	int rc = cl_size_send(f, WIRE_OP_MDS_SIZE_UPDATE, 0);
	return rc == -EDQUOT ? rc : 0; /* anything else: fsync and close report it */
}

NACRE_API ssize_t nacre_pwrite(struct nacre_file *f, const void *buf, size_t len, uint64_t off)
{
	int append, rc = 0;

	if (!f || (!buf && len > 0))
		return -EINVAL;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (len > SSIZE_MAX)
		return -EINVAL;
	if (len == 0)
		return 0;
	append = (f->flags & O_APPEND) != 0;
	if (append) {
		/* this client's appends go out in the order they got their offsets */
		pthread_mutex_lock(&f->append_lock);
		rc = append_offset(f, len, &off);
	}
	if (rc == 0) {
		/* As the kernel at a file system's s_maxbytes: nothing past the layout's limit
		 * (the OSTs could not store it, and write-behind would only find out after this
		 * write returned), a short write up to it. */
		uint64_t max = layout_max_file_size(&f->layout);
		if (off >= max)
			rc = -EFBIG;
		else if (len > max - off)
			len = (size_t)(max - off);
	}
	if (rc == 0 && f->fs->dirty_max > 0)
		rc = cl_wb_take_error(f); /* a background write failed: say so once */
	if (rc == 0) {
		if (f->fs->dirty_max > 0 && len <= f->fs->file_dirty_max / 4) {
			rc = cl_wb_write(f, buf, len, off);
		} else {
			/* Large enough to go as is; older buffered data of the range first. */
			cl_wb_flush_range(f, off, len);
			rc = cl_obj_file_io(f, WIRE_OP_OST_WRITE, (uint8_t *)(uintptr_t)buf, len,
					    off);
			cl_wgen_bump(f->fs, &f->fid);
		}
		pthread_mutex_lock(&f->lock);
		if (rc == 0) {
			if (off != f->written_end)
				f->dense = 0;
			if (off + len > f->written_end)
				f->written_end = off + len;
			if (off + len > f->report_end)
				f->report_end = off + len;
			if (!f->wrote)
				__atomic_add_fetch(&f->fs->writers, 1, __ATOMIC_RELEASE);
			f->wrote = 1;
			f->write_seq++;
			f->space_seq++;
			f->unmeasured += len;
			f->mtime = now_realtime();
		} else if (f->deferred_err == 0) {
			/* Data may be half written: close reports it again, as NFS does. */
			f->deferred_err = rc;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (append)
		pthread_mutex_unlock(&f->append_lock);
	if (rc == 0 && (f->flags & O_DSYNC)) /* O_SYNC includes the O_DSYNC bit */
		rc = nacre_fsync(f, (f->flags & O_SYNC) != O_SYNC);
	else if (rc == 0)
		rc = publish_growth(f);
	return rc < 0 ? rc : (ssize_t)len;
}

NACRE_API int nacre_fsync(struct nacre_file *f, int datasync)
{
	int rc, wrote, deferred;

	(void)datasync; /* the size goes to the MDS either way: fdatasync needs it too */
	if (!f)
		return -EINVAL;
	cl_wb_flush(f);
	rc = cl_obj_sync(f);
	if (rc)
		return rc;
	pthread_mutex_lock(&f->lock);
	wrote = f->wrote;
	deferred = f->deferred_err; /* a failed write is not durable: say so, as Linux does */
	pthread_mutex_unlock(&f->lock);
	rc = wrote ? cl_size_send(f, WIRE_OP_MDS_SIZE_UPDATE, 1) : 0;
	/* The MDS commits asynchronously: fsync also makes the file's name and size durable. */
	if (rc == 0)
		rc = nacre_sync_md(f->fs, &f->cred, &f->fid);
	return deferred ? deferred : rc;
}

NACRE_API int nacre_flush(struct nacre_file *f)
{
	int rc, wrote, deferred;

	if (!f)
		return -EINVAL;
	/* Buffered writes go to the OSSes (acknowledged from their page cache), then the size
	 * and mtime to the MDS: another client's open then sees both. */
	cl_wb_flush(f);
	pthread_mutex_lock(&f->lock);
	wrote = f->wrote;
	deferred = f->deferred_err;
	pthread_mutex_unlock(&f->lock);
	rc = wrote ? cl_size_send(f, WIRE_OP_MDS_SIZE_UPDATE, 1) : 0;
	return deferred ? deferred : rc;
}

NACRE_API int nacre_close(struct nacre_file *f)
{
	int rc, deferred;

	if (!f)
		return 0;
	cl_wb_flush(f);
	cl_files_del(f);
	if (f->wrote) /* no other thread uses f any more */
		__atomic_sub_fetch(&f->fs->writers, 1, __ATOMIC_RELEASE);
	rc = cl_size_send(f, WIRE_OP_MDS_CLOSE, 1);
	if (rc) {
		char fid[NACRE_FID_STR_MAX];
		cl_log(f->fs, CL_LOG_WARN, "close of %s: %s",
		       nacre_fid_format(&f->fid, fid, sizeof(fid)), nacre_strerror(rc));
	}
	pthread_mutex_lock(&f->lock);
	while (f->jobs > 0) /* readahead still landing in our buffers */
		pthread_cond_wait(&f->io_cond, &f->lock);
	deferred = f->deferred_err;
	cl_ra_fini(f);
	cl_wb_fini(f);
	pthread_mutex_unlock(&f->lock);
	pthread_cond_destroy(&f->io_cond);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->append_lock);
	cl_cap_fini(f);
	free(f);
	return deferred ? deferred : rc;
}

NACRE_API int nacre_file_set_atime(struct nacre_file *f, const struct nacre_time *atime)
{
	if (!f)
		return -EINVAL;
	if (atime && !(rpc_conn_features(f->fs->mds) & WIRE_FEAT_ATIME))
		return -EOPNOTSUPP;
	pthread_mutex_lock(&f->lock);
	f->has_atime = atime != NULL;
	if (atime)
		f->atime = *atime;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

NACRE_API int nacre_fallocate(struct nacre_file *f, int mode, uint64_t off, uint64_t len)
{
	uint32_t md = (uint32_t)mode;
	int rc;

	if (!f)
		return -EINVAL;
	/* what Linux's vfs_fallocate refuses, refused alike */
	if ((md & ~WIRE_FALLOC_MODES_) ||
	    ((md & WIRE_FALLOC_PUNCH_HOLE) &&
	     (!(md & WIRE_FALLOC_KEEP_SIZE) || (md & WIRE_FALLOC_ZERO_RANGE))))
		return -EOPNOTSUPP;
	if (len == 0)
		return -EINVAL;
	if (off > FILE_OFF_MAX || len > FILE_OFF_MAX - off)
		return -EFBIG;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (f->layout.nosts == 0)
		return -EOPNOTSUPP; /* no objects (a released file is restored at open) */
	/* buffered writes of the range land first, or they would undo a punch or a zero */
	cl_wb_flush_range(f, off, len);
	rc = cl_obj_fallocate(f, md, off, len);
	cl_wgen_bump(f->fs, &f->fid); /* readahead of a punched or zeroed range is stale */
	if (rc)
		return rc;
	pthread_mutex_lock(&f->lock);
	if (!f->wrote)
		__atomic_add_fetch(&f->fs->writers, 1, __ATOMIC_RELEASE);
	f->wrote = 1;
	f->space_seq++;
	f->dense = 0;
	if (!(md & WIRE_FALLOC_KEEP_SIZE) && off + len > f->written_end)
		f->written_end = off + len;
	if (!(md & WIRE_FALLOC_KEEP_SIZE) && off + len > f->report_end)
		f->report_end = off + len;
	if (md != WIRE_FALLOC_KEEP_SIZE) { /* the size or the bytes changed: mtime too */
		f->write_seq++;
		f->mtime = now_realtime();
	}
	pthread_mutex_unlock(&f->lock);
	/* the new size and blocks at the MDS now: a stat right after sees them */
	return cl_size_send(f, WIRE_OP_MDS_SIZE_UPDATE, 1);
}

NACRE_API int nacre_seek_data(struct nacre_file *f, int whence, uint64_t off, uint64_t *out)
{
	struct nacre_attr a;
	uint64_t size, found;
	int rc;

	if (!f || !out || (whence != SEEK_DATA && whence != SEEK_HOLE))
		return -EINVAL;
	/* the size as the MDS has it now (another client may have grown the file), or as
	 * this client's own writes made it, through any handle (the kernel's size) */
	rc = nacre_getattr(f->fs, &f->cred, &f->fid, &a);
	if (rc)
		return rc;
	pthread_mutex_lock(&f->lock);
	size = known_size_locked(f);
	pthread_mutex_unlock(&f->lock);
	if (a.size > size)
		size = a.size;
	uint64_t mine = cl_files_known_size(f->fs, &f->fid);
	if (mine > size)
		size = mine;
	if (off >= size)
		return -ENXIO; /* as Linux: past the end there is neither */
	if (f->layout.nosts == 0) {
		found = whence == SEEK_DATA ? off : size; /* no objects: all data, as Linux's
							   * generic answer */
		goto out;
	}
	cl_wb_flush_range(f, off, size - off); /* buffered writes are data too */
	rc = cl_obj_seek(f, whence == SEEK_DATA ? WIRE_SEEK_DATA : WIRE_SEEK_HOLE, off, &found);
	if (rc == -EOPNOTSUPP) /* an OSS that predates OST_SEEK: the generic answer */
		found = whence == SEEK_DATA ? off : size;
	else if (rc)
		return rc;
	if (whence == SEEK_DATA && found >= size)
		return -ENXIO; /* only allocated blocks past the end (KEEP_SIZE) */
	if (found > size)
		found = size; /* the end of the file is a hole */
out:
	*out = found;
	return 0;
}

NACRE_API int nacre_file_attr(struct nacre_file *f, struct nacre_attr *out)
{
	if (!f || !out)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	*out = f->attr;
	out->size = known_size_locked(f);
	if (f->write_seq != f->published_seq && (f->mtime.sec > out->mtime.sec ||
			 (f->mtime.sec == out->mtime.sec && f->mtime.nsec > out->mtime.nsec))) {
		out->mtime = f->mtime;
		out->ctime = f->mtime;
	}
	/* writes the MDS has not counted yet: as many blocks again, at most (not fewer, so a
	 * du during a write does not show the file shrinking; not more than its size) */
	uint64_t extra = (f->unmeasured + 511) / 512, most = (out->size + 511) / 512;
	if (out->blocks < most)
		out->blocks = extra < most - out->blocks ? out->blocks + extra : most;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

NACRE_API uint64_t nacre_file_written_size(const struct nacre_file *f)
{
	struct nacre_file *mf = (struct nacre_file *)(uintptr_t)f; /* the lock is not state */
	uint64_t v;

	if (!f)
		return 0;
	pthread_mutex_lock(&mf->lock);
	v = f->written_end;
	pthread_mutex_unlock(&mf->lock);
	return v;
}

NACRE_API void nacre_file_size_seen(struct nacre_file *f, uint64_t size)
{
	int grew;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	grew = size > known_size_locked(f);
	if (size > f->attr.size)
		f->attr.size = size;
	pthread_mutex_unlock(&f->lock);
	if (grew)
		cl_wgen_bump(f->fs, &f->fid); /* readahead may hold the old end of file */
}

NACRE_API const struct nacre_layout *nacre_file_layout(const struct nacre_file *f)
{
	return f ? &f->layout : NULL;
}
