/* io_mpiio.c - the MPIIO back end: independent MPI_File_{write,read}_at (ROMIO/OMPIO over
 * whatever file system holds the path). A shared file is opened collectively. */
#ifdef NACRE_BENCH_MPI
#include <errno.h>
#include <stdlib.h>
#include <mpi.h>

#include "bench/bench.h"

/* MPI error classes carry no errno; EIO is the honest summary, the message says more. */
static int mpi_rc(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return 0;
	MPI_Error_string(rc, msg, &len);
	bench_err("%s: %s", what, msg);
	return -EIO;
}

static int mp_init(const struct bench_opts *o)
{
	(void)o;
	/* Errors come back as codes, as the other back ends do, instead of aborting the job. */
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
	return 0;
}

static void mp_fini(void) {}

static int mp_open(const char *path, int flags, int shared, void **h)
{
	MPI_File *fh = malloc(sizeof(*fh));
	int amode, rc;

	if (!fh)
		return -ENOMEM;
	if ((flags & BENCH_O_READ) && (flags & BENCH_O_WRITE))
		amode = MPI_MODE_RDWR;
	else
		amode = (flags & BENCH_O_WRITE) ? MPI_MODE_WRONLY : MPI_MODE_RDONLY;
	if (flags & BENCH_O_CREATE)
		amode |= MPI_MODE_CREATE;
	rc = mpi_rc(MPI_File_open(shared ? MPI_COMM_WORLD : MPI_COMM_SELF, path, amode,
				  MPI_INFO_NULL, fh),
		    "MPI_File_open");
	if (rc < 0) {
		free(fh);
		return rc;
	}
	*h = fh;
	return 0;
}

static ssize_t mp_xfer(void *h, void *buf, size_t len, uint64_t off, int write)
{
	MPI_Status st;
	int n = 0, rc;

	if (len > (size_t)INT32_MAX)
		return -EINVAL;
	if (write)
		rc = MPI_File_write_at(*(MPI_File *)h, (MPI_Offset)off, buf, (int)len, MPI_BYTE,
				       &st);
	else
		rc = MPI_File_read_at(*(MPI_File *)h, (MPI_Offset)off, buf, (int)len, MPI_BYTE,
				      &st);
	rc = mpi_rc(rc, write ? "MPI_File_write_at" : "MPI_File_read_at");
	if (rc < 0)
		return rc;
	MPI_Get_count(&st, MPI_BYTE, &n);
	return n;
}

static ssize_t mp_pwrite(void *h, const void *buf, size_t len, uint64_t off)
{
	return mp_xfer(h, (void *)(uintptr_t)buf, len, off, 1);
}

static ssize_t mp_pread(void *h, void *buf, size_t len, uint64_t off)
{
	return mp_xfer(h, buf, len, off, 0);
}

static int mp_fsync(void *h)
{
	return mpi_rc(MPI_File_sync(*(MPI_File *)h), "MPI_File_sync");
}

static int mp_close(void *h)
{
	int rc = mpi_rc(MPI_File_close(h), "MPI_File_close");

	free(h);
	return rc;
}

static int mp_remove(const char *path)
{
	int rc = MPI_File_delete(path, MPI_INFO_NULL), cls = 0;

	if (rc == MPI_SUCCESS)
		return 0;
	MPI_Error_class(rc, &cls);
	/* A missing file is expected before a write phase; anything else is reported. */
	return cls == MPI_ERR_NO_SUCH_FILE ? -ENOENT : mpi_rc(rc, "MPI_File_delete");
}

/* Namespace calls and sizes are plain POSIX: MPI-IO has no mkdir or stat. */
static int mp_mkdir(const char *path)
{
	return bench_io_posix.mkdir(path);
}

static int mp_rmdir(const char *path)
{
	return bench_io_posix.rmdir(path);
}

static int mp_stat(const char *path, uint64_t *size)
{
	return bench_io_posix.stat(path, size);
}

static int mp_statfs(const char *path, struct bench_fsinfo *out)
{
	return bench_io_posix.statfs(path, out);
}

const struct bench_io bench_io_mpiio = {
	.name = "MPIIO",
	.init = mp_init,
	.fini = mp_fini,
	.open = mp_open,
	.pwrite = mp_pwrite,
	.pread = mp_pread,
	.fsync = mp_fsync,
	.close = mp_close,
	.remove = mp_remove,
	.mkdir = mp_mkdir,
	.rmdir = mp_rmdir,
	.stat = mp_stat,
	.statfs = mp_statfs,
};
#endif
