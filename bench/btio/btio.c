/* btio.c - a BTIO-style write benchmark: a 3-D array of 5-double cells, block-decomposed
 * over the ranks, written for several time steps to one shared file with PnetCDF (blocking
 * or non-blocking collective) or plain MPI-IO (collective or independent).
 *
 *   btio -m MODE -o PATH [-g NX,NY,NZ] [-s STEPS] [-H key=val,...] [-L] [-v]
 *     MODE: pnetcdf-b | pnetcdf-nb | mpiio-coll | mpiio-indep
 *     -H  MPI-IO hints for the open (e.g. striping_unit=1048576,cb_config_list=*:2)
 *     -L  set the file's layout from striping_factor/striping_unit before the first write
 *     -v  read the data back and check it
 * Prints one line: mode ranks bytes seconds MiB/s (time from open to close, slowest rank).
 * The clock stops after the close: on a nacre mount close(2) sends every buffered write to
 * the OSSes before it returns (FUSE flush), so the time covers the transfer, not a copy into
 * client memory (it does not wait for the OSTs' disks, as close(2) does not). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef BTIO_PNETCDF
#include <pnetcdf.h>
#endif

#include "nacre_hints.h"

#define NCOMP 5

struct opts {
	const char *mode, *path, *hints;
	int g[3], steps, layout, verify;
};

static double cell(int t, long long z, long long y, long long x, int c)
{
	return t * 1e9 + z * 1e6 + y * 1e3 + x + c * 0.1;
}

static void die(const char *msg)
{
	fprintf(stderr, "btio: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Cuts the comma-separated list at the end of kv; returns the next item or NULL. */
static char *next_kv(char *kv)
{
	char *comma = strchr(kv, ',');
	if (!comma)
		return NULL;
	*comma = '\0';
	return comma + 1;
}

static MPI_Info make_info(const char *hints)
{
	MPI_Info info;
	char *copy, *next;

	MPI_Info_create(&info);
	if (!hints)
		return info;
	copy = strdup(hints);
	for (char *kv = copy; kv && *kv; kv = next) {
		next = next_kv(kv);
		char *eq = strchr(kv, '=');
		if (!eq)
			die("-H wants key=value pairs");
		*eq = '\0';
		MPI_Info_set(info, kv, eq + 1);
	}
	free(copy);
	return info;
}

int main(int argc, char **argv)
{
	struct opts o = {.g = {64, 64, 64}, .steps = 5};
	int rank, nprocs, dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3], opt;
	MPI_Comm cart;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	while ((opt = getopt(argc, argv, "m:o:g:s:H:Lv")) != -1) {
		switch (opt) {
		case 'm': o.mode = optarg; break;
		case 'o': o.path = optarg; break;
		case 'g':
			if (sscanf(optarg, "%d,%d,%d", &o.g[0], &o.g[1], &o.g[2]) != 3)
				die("-g wants NX,NY,NZ");
			break;
		case 's': o.steps = (int)strtol(optarg, NULL, 10); break;
		case 'H': o.hints = optarg; break;
		case 'L': o.layout = 1; break;
		case 'v': o.verify = 1; break;
		default: die("bad option");
		}
	}
	if (!o.mode || !o.path || o.steps < 1)
		die("usage: btio -m MODE -o PATH [-g NX,NY,NZ] [-s STEPS] [-H hints] [-L] [-v]");

	/* block decomposition: z is the slowest dimension in the file */
	MPI_Dims_create(nprocs, 3, dims);
	MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
	MPI_Cart_coords(cart, rank, 3, coords);
	int gsz[4] = {o.g[2], o.g[1], o.g[0], NCOMP}, lsz[4], lst[4];
	for (int d = 0; d < 3; d++) {
		int n = gsz[d], k = dims[d], c = coords[d];
		lst[d] = (int)((long long)n * c / k);
		lsz[d] = (int)((long long)n * (c + 1) / k) - lst[d];
	}
	lsz[3] = NCOMP;
	lst[3] = 0;
	size_t local = (size_t)lsz[0] * lsz[1] * lsz[2] * NCOMP;
	double *buf = malloc(sizeof(double) * local * (size_t)o.steps);
	if (!buf)
		die("out of memory");
	for (int t = 0; t < o.steps; t++) {
		double *p = buf + local * (size_t)t;
		for (int z = 0; z < lsz[0]; z++)
			for (int y = 0; y < lsz[1]; y++)
				for (int x = 0; x < lsz[2]; x++)
					for (int c = 0; c < NCOMP; c++)
						*p++ = cell(t, lst[0] + z, lst[1] + y, lst[2] + x, c);
	}
	MPI_Info info = make_info(o.hints);
	long long step_bytes = (long long)gsz[0] * gsz[1] * gsz[2] * NCOMP * 8;

	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		unlink(o.path);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	if (o.layout && nacre_hints_precreate(MPI_COMM_WORLD, o.path, info) != 0 && rank == 0)
		fprintf(stderr, "btio: could not set the layout of %s\n", o.path);

	if (strncmp(o.mode, "mpiio", 5) == 0) {
		MPI_File fh;
		MPI_Datatype ftype;
		int coll = strcmp(o.mode, "mpiio-coll") == 0;
		if (!coll && strcmp(o.mode, "mpiio-indep") != 0)
			die("unknown mode");
		MPI_Type_create_subarray(4, gsz, lsz, lst, MPI_ORDER_C, MPI_DOUBLE, &ftype);
		MPI_Type_commit(&ftype);
		if (MPI_File_open(MPI_COMM_WORLD, o.path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info,
				  &fh) != MPI_SUCCESS)
			die("cannot open the file");
		for (int t = 0; t < o.steps; t++) {
			MPI_File_set_view(fh, (MPI_Offset)step_bytes * t, MPI_DOUBLE, ftype, "native",
					  info);
			if (coll)
				MPI_File_write_all(fh, buf + local * (size_t)t, (int)local,
						   MPI_DOUBLE, MPI_STATUS_IGNORE);
			else
				MPI_File_write(fh, buf + local * (size_t)t, (int)local, MPI_DOUBLE,
					       MPI_STATUS_IGNORE);
		}
		MPI_File_close(&fh);
		MPI_Type_free(&ftype);
	} else {
#ifdef BTIO_PNETCDF
		int ncid, var, d[5], nb = strcmp(o.mode, "pnetcdf-nb") == 0, e;
		int *reqs = calloc((size_t)o.steps, sizeof(int));
		int *sts = calloc((size_t)o.steps, sizeof(int));
		if (!nb && strcmp(o.mode, "pnetcdf-b") != 0)
			die("unknown mode");
		if ((e = ncmpi_create(MPI_COMM_WORLD, o.path, NC_CLOBBER | NC_64BIT_DATA, info,
				      &ncid)) != NC_NOERR)
			die(ncmpi_strerror(e));
		ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &d[0]);
		ncmpi_def_dim(ncid, "z", gsz[0], &d[1]);
		ncmpi_def_dim(ncid, "y", gsz[1], &d[2]);
		ncmpi_def_dim(ncid, "x", gsz[2], &d[3]);
		ncmpi_def_dim(ncid, "c", NCOMP, &d[4]);
		ncmpi_def_var(ncid, "u", NC_DOUBLE, 5, d, &var);
		ncmpi_enddef(ncid);
		for (int t = 0; t < o.steps; t++) {
			MPI_Offset st[5] = {t, lst[0], lst[1], lst[2], 0};
			MPI_Offset ct[5] = {1, lsz[0], lsz[1], lsz[2], NCOMP};
			if (nb)
				e = ncmpi_iput_vara_double(ncid, var, st, ct, buf + local * (size_t)t,
							   &reqs[t]);
			else
				e = ncmpi_put_vara_double_all(ncid, var, st, ct,
							      buf + local * (size_t)t);
			if (e != NC_NOERR)
				die(ncmpi_strerror(e));
		}
		if (nb && (e = ncmpi_wait_all(ncid, o.steps, reqs, sts)) != NC_NOERR)
			die(ncmpi_strerror(e));
		ncmpi_close(ncid);
		free(reqs);
		free(sts);
#else
		die("built without PnetCDF");
#endif
	}
	double dt = MPI_Wtime() - t0, maxdt;
	MPI_Reduce(&dt, &maxdt, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	double total = (double)step_bytes * o.steps;
	if (rank == 0)
		printf("%s %d %.0f %.3f %.1f\n", o.mode, nprocs, total, maxdt,
		       total / maxdt / 1048576.0);

	if (o.verify && strncmp(o.mode, "mpiio", 5) == 0) {
		/* read back the slab of this rank with a plain view */
		MPI_File fh;
		MPI_Datatype ftype;
		int bad = 0, allbad;
		double *r = malloc(sizeof(double) * local);
		MPI_Type_create_subarray(4, gsz, lsz, lst, MPI_ORDER_C, MPI_DOUBLE, &ftype);
		MPI_Type_commit(&ftype);
		MPI_File_open(MPI_COMM_WORLD, o.path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
		for (int t = 0; t < o.steps; t++) {
			MPI_File_set_view(fh, (MPI_Offset)step_bytes * t, MPI_DOUBLE, ftype, "native",
					  MPI_INFO_NULL);
			MPI_File_read_all(fh, r, (int)local, MPI_DOUBLE, MPI_STATUS_IGNORE);
			bad += memcmp(r, buf + local * (size_t)t, sizeof(double) * local) != 0;
		}
		MPI_File_close(&fh);
		MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		if (rank == 0)
			printf("verify %s\n", allbad ? "MISMATCH" : "ok");
		free(r);
		MPI_Type_free(&ftype);
	}
	free(buf);
	MPI_Info_free(&info);
	MPI_Comm_free(&cart);
	MPI_Finalize();
	return 0;
}
