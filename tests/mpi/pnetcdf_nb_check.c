/* pnetcdf_nb_check.c - a PnetCDF non-blocking write of a 3-D variable, then a read-back.
 *
 *   pnetcdf_nb_check PATH NX NY NZ
 *
 * The z dimension is split among the ranks; each posts one ncmpi_iput_vara_double per
 * time step (2 steps of a record variable) and waits for all at once, then every rank
 * reads the whole variable back with ncmpi_get_vara_double_all and compares. */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 2

#define CHECK_NC(call)                                                                      \
	do {                                                                                \
		int e_ = (call);                                                            \
		if (e_ != NC_NOERR) {                                                       \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, ncmpi_strerror(e_));   \
			MPI_Abort(MPI_COMM_WORLD, 1);                                       \
		}                                                                           \
	} while (0)

static double val(int t, long long z, long long y, long long x)
{
	return t * 1e6 + z * 1e4 + y * 1e2 + x;
}

int main(int argc, char **argv)
{
	int rank, nprocs, ncid, dims[4], var, bad = 0, allbad = 0;
	int reqs[STEPS], sts[STEPS];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (argc != 5) {
		if (rank == 0)
			fprintf(stderr, "usage: pnetcdf_nb_check PATH NX NY NZ\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Offset nx = strtol(argv[2], NULL, 10), ny = strtol(argv[3], NULL, 10);
	MPI_Offset nz = strtol(argv[4], NULL, 10);
	MPI_Offset z0 = nz * rank / nprocs, z1 = nz * (rank + 1) / nprocs;
	size_t slab = (size_t)((z1 - z0) * ny * nx);
	double *w = malloc(sizeof(double) * slab * STEPS);
	double *r = malloc(sizeof(double) * (size_t)(nz * ny * nx));

	CHECK_NC(ncmpi_create(MPI_COMM_WORLD, argv[1], NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL,
			      &ncid));
	CHECK_NC(ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &dims[0]));
	CHECK_NC(ncmpi_def_dim(ncid, "z", nz, &dims[1]));
	CHECK_NC(ncmpi_def_dim(ncid, "y", ny, &dims[2]));
	CHECK_NC(ncmpi_def_dim(ncid, "x", nx, &dims[3]));
	CHECK_NC(ncmpi_def_var(ncid, "u", NC_DOUBLE, 4, dims, &var));
	CHECK_NC(ncmpi_enddef(ncid));
	for (int t = 0; t < STEPS; t++) {
		double *p = w + slab * (size_t)t;
		for (MPI_Offset z = z0; z < z1; z++)
			for (MPI_Offset y = 0; y < ny; y++)
				for (MPI_Offset x = 0; x < nx; x++)
					*p++ = val(t, z, y, x);
		MPI_Offset start[4] = {t, z0, 0, 0}, count[4] = {1, z1 - z0, ny, nx};
		CHECK_NC(ncmpi_iput_vara_double(ncid, var, start, count, w + slab * (size_t)t,
						&reqs[t]));
	}
	CHECK_NC(ncmpi_wait_all(ncid, STEPS, reqs, sts));
	for (int t = 0; t < STEPS; t++)
		CHECK_NC(sts[t]);
	CHECK_NC(ncmpi_close(ncid));

	CHECK_NC(ncmpi_open(MPI_COMM_WORLD, argv[1], NC_NOWRITE, MPI_INFO_NULL, &ncid));
	CHECK_NC(ncmpi_inq_varid(ncid, "u", &var));
	for (int t = 0; t < STEPS; t++) {
		MPI_Offset start[4] = {t, 0, 0, 0}, count[4] = {1, nz, ny, nx};
		CHECK_NC(ncmpi_get_vara_double_all(ncid, var, start, count, r));
		for (MPI_Offset i = 0; i < nz * ny * nx; i++) {
			MPI_Offset z = i / (ny * nx), y = (i / nx) % ny, x = i % nx;
			if (r[i] != val(t, z, y, x) && bad++ < 5)
				fprintf(stderr, "rank %d: t %d (%lld,%lld,%lld) is %g\n", rank, t,
					(long long)z, (long long)y, (long long)x, r[i]);
		}
	}
	CHECK_NC(ncmpi_close(ncid));
	MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %lldx%lldx%lld x %d steps, %d ranks: %s\n", argv[1], (long long)nx,
		       (long long)ny, (long long)nz, STEPS, nprocs, allbad ? "MISMATCH" : "ok");
	free(w);
	free(r);
	MPI_Finalize();
	return allbad ? 1 : 0;
}
