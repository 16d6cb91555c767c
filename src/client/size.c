/* size.c - what a handle tells the MDS of its file: the written end, mtime, a read's atime
 * and the blocks its objects hold (CLOSE and SIZE_UPDATE). Used by the file calls (io.c)
 * and, before a truncate, by the namespace calls (md.c).
 */
#include <errno.h>
#include <string.h>

#include "client/cl_internal.h"
#include "client/files.h"
#include "client/mdc.h"
#include "client/obj.h"
#include "client/size.h"
#include "proto/wire.h"

/* The blocks the file's objects hold, for a close_req: measured when this handle changed
 * them since it last told the MDS and the MDS keeps them (WIRE_FEAT_BLOCKS). Call after
 * the handle's write-behind reached the OSTs. Sets *space to the space_seq measured.
 * A dense handle (a new file written front to back: cp, most writers of small files)
 * sends none and costs no round trip: its size grew, and the MDS then estimates the blocks
 * from the size, which is what a file without holes holds. */
static void measure_blocks(struct nacre_file *f, struct wire_close_req *req, uint64_t *space)
{
	uint64_t blocks;

	pthread_mutex_lock(&f->lock);
	*space = f->space_seq;
	int due = f->space_seq != f->measured_seq && !f->dense;
	pthread_mutex_unlock(&f->lock);
	if (!due || !(rpc_conn_features(f->fs->mds) & WIRE_FEAT_BLOCKS))
		return;
	/* a failure only leaves the MDS's older figure (or its estimate from the size) */
	if (cl_obj_blocks(f, &blocks) == 0) {
		req->has_blocks = 1;
		req->blocks = blocks;
	}
}

int cl_size_send(struct nacre_file *f, uint16_t opcode, int measure)
{
	struct wire_close_req req;
	struct wire_attr_rep a;
	uint64_t seq, space = 0;
	int rc;

	memset(&req, 0, sizeof(req));
	req.cred = f->cred;
	req.fid = f->fid;
	pthread_mutex_lock(&f->lock);
	req.handle = f->handle;
	req.size = f->report_end;
	seq = f->write_seq;
	req.has_mtime = seq != f->published_seq;
	req.mtime = f->mtime;
	req.has_atime = opcode == WIRE_OP_MDS_CLOSE && f->has_atime;
	req.atime = f->atime;
	pthread_mutex_unlock(&f->lock);
	if (measure)
		measure_blocks(f, &req, &space);
	uint64_t asked = cl_lease_clock(f->fs);
	rc = cl_mds_do(f->fs, opcode, &req, &a);
	if (rc)
		return cl_io_errno(rc);
	cl_lease_attr_seen(f->fs, &a.attr, asked); /* size and times as the MDS has them */
	pthread_mutex_lock(&f->lock);
	f->attr = a.attr;
	if (req.size > f->published_end)
		f->published_end = req.size;
	if (f->report_end <= req.size) /* (a write since goes in the next report) */
		f->report_end = 0;
	if (seq > f->published_seq)
		f->published_seq = seq;
	if (req.has_blocks && space > f->measured_seq) {
		f->measured_seq = space;
		if (space == f->space_seq)
			f->unmeasured = 0;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

void cl_size_publish_fid(struct nacre_fs *fs, const struct nacre_fid *fid)
{
	struct nacre_file **files;
	int n;

	cl_wb_flush_fid(fs, fid);
	if (cl_files_pin_fid(fs, fid, &files, &n) < 0)
		return; /* the data went out; the sizes follow at flush or close */
	for (int i = 0; i < n; i++) {
		struct nacre_file *g = files[i];
		int due;

		pthread_mutex_lock(&g->lock);
		due = g->wrote && (g->write_seq != g->published_seq || g->report_end > 0);
		pthread_mutex_unlock(&g->lock);
		/* an error (EDQUOT, a lost MDS) comes back at that handle's fsync or close */
		if (due)
			cl_size_send(g, WIRE_OP_MDS_SIZE_UPDATE, 0); /* the truncate sets blocks */
	}
	cl_files_unpin(fs, files, n);
}
