/* mpi_write_check.c - writes a shared file from every rank through MPI-IO and checks it.
 *
 *   mpi_write_check PATH BLOCK NBLOCKS
 *
 * Phase 1: a collective write (MPI_File_write_all) of an interleaved pattern: block b of
 * rank r lands at ((b * nprocs) + r) * BLOCK. Phase 2, after it: independent writes of a
 * strided view (every rank again interleaved) in the second half of the file; with
 * romio_ds_write enabled ROMIO does read-modify-write under fcntl locks, so without
 * cluster-wide locks ranks would overwrite each other. Every rank then reads the whole
 * file back and compares. Byte i of the file is (i * 7 + i / 4093) & 0xff. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nacre_hints.h"

static unsigned char pat(long long i)
{
	return (unsigned char)((i * 7 + i / 4093) & 0xff);
}

int main(int argc, char **argv)
{
	int rank, nprocs, bad = 0, allbad = 0;
	MPI_File fh;
	MPI_Datatype ftype;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc != 4) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_write_check PATH BLOCK NBLOCKS\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const char *path = argv[1];
	int block = (int)strtol(argv[2], NULL, 10), nblocks = (int)strtol(argv[3], NULL, 10);
	long long half = (long long)block * nblocks * nprocs;
	unsigned char *buf = malloc((size_t)block * nblocks);
	unsigned char *all = malloc((size_t)half * 2);

	if (nacre_hints_precreate(MPI_COMM_WORLD, path, MPI_INFO_NULL) != 0 && rank == 0)
		fprintf(stderr, "mpi_write_check: could not set the layout of %s\n", path);
	MPI_Type_vector(nblocks, block, block * nprocs, MPI_BYTE, &ftype);
	MPI_Type_commit(&ftype);
	MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
	for (int phase = 0; phase < 2; phase++) {
		long long disp = phase * half + (long long)rank * block;
		for (int b = 0; b < nblocks; b++)
			for (int k = 0; k < block; k++)
				buf[(size_t)b * block + k] =
					pat(disp + (long long)b * block * nprocs + k);
		MPI_File_set_view(fh, disp, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
		if (phase == 0)
			MPI_File_write_all(fh, buf, block * nblocks, MPI_BYTE, MPI_STATUS_IGNORE);
		else
			MPI_File_write(fh, buf, block * nblocks, MPI_BYTE, MPI_STATUS_IGNORE);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
	MPI_File_read_at_all(fh, 0, all, (int)(half * 2), MPI_BYTE, MPI_STATUS_IGNORE);
	for (long long i = 0; i < half * 2; i++) {
		if (all[i] != pat(i)) {
			if (bad++ < 5)
				fprintf(stderr, "rank %d: byte %lld is %u, expected %u\n", rank, i,
					all[i], pat(i));
		}
	}
	MPI_File_close(&fh);
	MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %lld bytes, %d ranks: %s\n", path, half * 2, nprocs,
		       allbad ? "MISMATCH" : "ok");
	free(buf);
	free(all);
	MPI_Type_free(&ftype);
	MPI_Finalize();
	return allbad ? 1 : 0;
}
