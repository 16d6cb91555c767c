/* main.c - nacre-bench: parse the command line, pick the back end, run the test.
 * Exit status: 0 on success, 1 on an error or a failed data check, 2 on a usage error. */
#include <stdio.h>

#include "bench/bench.h"

static const struct bench_io *io_of(enum bench_api api)
{
	switch (api) {
	case BENCH_POSIX: return &bench_io_posix;
	case BENCH_NACRE: return &bench_io_nacre;
	case BENCH_MPIIO:
#ifdef NACRE_BENCH_MPI
		return &bench_io_mpiio;
#else
		break;
#endif
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const struct bench_io *io;
	struct bench_opts o;
	int rc;

	bench_comm_init(&argc, &argv);
	rc = bench_opts_parse(argc, argv, &o, bench_rank() != 0);
	if (rc != 0) {
		bench_comm_fini();
		return rc < 0 ? 2 : 0;
	}
	io = io_of(o.api);
	if (!io || io->init(&o) < 0)
		bench_abort(1);
	rc = o.md ? bench_md_run(&o, io) : bench_ior_run(&o, io);
	io->fini();
	bench_comm_fini();
	return rc < 0 ? 1 : 0;
}
