/* comm.c - ranks, barriers and reductions: MPI when built with it, else one rank. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench.h"

#ifdef NACRE_BENCH_MPI
#include <mpi.h>
#endif

static int g_rank, g_size = 1, g_node_tasks = 1, g_node_rank, g_nodes = 1;

void bench_comm_init(int *argc, char ***argv)
{
#ifdef NACRE_BENCH_MPI
	MPI_Comm node;
	int first;

	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	/* Ranks that share memory are on one node: that is what -C and the page cache care about. */
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
	MPI_Comm_size(node, &g_node_tasks);
	MPI_Comm_rank(node, &g_node_rank);
	MPI_Comm_free(&node);
	first = g_node_rank == 0;
	MPI_Allreduce(&first, &g_nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#else
	(void)argc;
	(void)argv;
#endif
}

void bench_comm_fini(void)
{
#ifdef NACRE_BENCH_MPI
	MPI_Finalize();
#endif
}

int bench_rank(void) { return g_rank; }
int bench_size(void) { return g_size; }
int bench_node_tasks(void) { return g_node_tasks; }
int bench_node_rank(void) { return g_node_rank; }
int bench_nodes(void) { return g_nodes; }

void bench_barrier(void)
{
#ifdef NACRE_BENCH_MPI
	MPI_Barrier(MPI_COMM_WORLD);
#endif
}

#ifdef NACRE_BENCH_MPI
static void reduce(double *v, int n, MPI_Op op)
{
	MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op, MPI_COMM_WORLD);
}
#endif

void bench_reduce_min(double *v, int n)
{
#ifdef NACRE_BENCH_MPI
	reduce(v, n, MPI_MIN);
#else
	(void)v;
	(void)n;
#endif
}

void bench_reduce_max(double *v, int n)
{
#ifdef NACRE_BENCH_MPI
	reduce(v, n, MPI_MAX);
#else
	(void)v;
	(void)n;
#endif
}

void bench_reduce_sum(double *v, int n)
{
#ifdef NACRE_BENCH_MPI
	reduce(v, n, MPI_SUM);
#else
	(void)v;
	(void)n;
#endif
}

void bench_abort(int code)
{
	fflush(stdout);
#ifdef NACRE_BENCH_MPI
	if (g_size > 1)
		MPI_Abort(MPI_COMM_WORLD, code);
	MPI_Finalize();
#endif
	exit(code);
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_epoch(void)
{
	bench_barrier();
	return bench_now();
}

void bench_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_size > 1)
		fprintf(stderr, BENCH_NAME " [rank %d]: %s\n", g_rank, msg);
	else
		fprintf(stderr, BENCH_NAME ": %s\n", msg);
}
