/* bench.h - nacre-bench: an IOR-style parallel I/O benchmark and an mdtest-style metadata
 * benchmark, over POSIX, libnacre (NACRE) or MPI-IO. With MPI (NACRE_BENCH_MPI) every rank
 * runs the same test between barriers; without it the program is one rank of one.
 *
 * Single-threaded: each rank is one process. Fatal errors print a message naming the file
 * and the call, then end every rank (bench_abort).
 */
#ifndef NACRE_BENCH_H
#define NACRE_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_NAME "nacre-bench"
#define BENCH_VERSION "0.1.0"
#define BENCH_PATH_MAX 4096

enum bench_api { BENCH_POSIX, BENCH_NACRE, BENCH_MPIIO };

/* Everything the command line sets. Filled once by bench_opts_parse, then read-only. */
struct bench_opts {
	enum bench_api api;
	int md;              /* --md: the metadata test instead of the data test */
	uint64_t block;      /* -b: contiguous bytes per rank per segment */
	uint64_t xfer;       /* -t: bytes per I/O call */
	uint64_t segments;   /* -s */
	int fpp;             /* -F: a file per rank */
	int reorder;         /* -C: read (and check) a neighbour rank's data */
	int fsync;           /* -e: fsync before close in write phases */
	int write;           /* -w */
	int read;            /* -r */
	int reps;            /* -i */
	int random;          /* -z: transfers of a segment in shuffled order */
	int keep;            /* -k: do not remove the files */
	int verbose;         /* -v, repeatable */
	int check_write;     /* -W: read back and verify after each write phase */
	int check_read;      /* -R: verify what the read phase returns */
	int drop_caches;     /* --drop-caches: sync and drop the page cache before reads */
	const char *path;    /* -o (data test) */
	const char *md_dir;  /* -d (metadata test) */
	uint64_t md_files;   /* -n: files per rank */
	uint64_t md_bytes;   /* -w in --md mode: bytes written at create, read back */
	int md_unique;       /* -u: a directory per rank */
	const char *mds_spec; /* --mds or $NACRE_SPEC */
	const char *key_file; /* --key-file or $NACRE_KEY_FILE */
	int argc;            /* the command line, for the headers */
	char **argv;
};

/* Parses argv into o. Prints the reason and returns -1 on a usage error; returns 1 after
 * printing help; 0 to run. Only rank 0 should print: quiet != 0 suppresses messages. */
int bench_opts_parse(int argc, char **argv, struct bench_opts *o, int quiet);
const char *bench_api_name(enum bench_api api);

/* ---- ranks (comm.c): MPI when built with it, else a world of one ---- */
void bench_comm_init(int *argc, char ***argv);
void bench_comm_fini(void);
int bench_rank(void);
int bench_size(void);
/* Ranks sharing this node, this rank's index among them, and the number of nodes. */
int bench_node_tasks(void);
int bench_node_rank(void);
int bench_nodes(void);
void bench_barrier(void);
/* In-place element-wise reductions over all ranks of n doubles. */
void bench_reduce_min(double *v, int n);
void bench_reduce_max(double *v, int n);
void bench_reduce_sum(double *v, int n);
/* Ends every rank with status code (after a message was printed). */
void bench_abort(int code) __attribute__((noreturn));
/* Seconds on CLOCK_MONOTONIC. Compare only within one rank, or after bench_epoch(). */
double bench_now(void);
/* A barrier, then this rank's bench_now(): phase times are taken relative to it, so ranks on
 * different nodes (whose monotonic clocks differ) compare durations, not clock readings. */
double bench_epoch(void);
/* Prints "nacre-bench: " + message on stderr, prefixed with the rank when there are several. */
void bench_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- storage back ends: POSIX, NACRE, MPIIO ---- */
enum { BENCH_O_READ = 1, BENCH_O_WRITE = 2, BENCH_O_CREATE = 4 };

struct bench_fsinfo {
	uint64_t bytes_total, bytes_free, files_total, files_free;
};

/* A back end works on paths: for NACRE they are relative to the file system root. Every
 * call returns 0 (or a byte count) or a negative errno. Handles are owned by the back end
 * until close. shared != 0 means all ranks open the same file (MPI-IO opens it collectively). */
struct bench_io {
	const char *name;
	int (*init)(const struct bench_opts *o);
	void (*fini)(void);
	int (*open)(const char *path, int flags, int shared, void **h);
	ssize_t (*pwrite)(void *h, const void *buf, size_t len, uint64_t off);
	ssize_t (*pread)(void *h, void *buf, size_t len, uint64_t off);
	int (*fsync)(void *h);
	int (*close)(void *h);
	int (*remove)(const char *path);
	int (*mkdir)(const char *path);
	int (*rmdir)(const char *path);
	int (*stat)(const char *path, uint64_t *size);
	int (*statfs)(const char *path, struct bench_fsinfo *out);
};

extern const struct bench_io bench_io_posix;
extern const struct bench_io bench_io_nacre;
#ifdef NACRE_BENCH_MPI
extern const struct bench_io bench_io_mpiio;
#endif

/* ---- data pattern (pattern.c) ---- */
/* Fills buf (len a multiple of 8) with the words rank writes at file offset off (8-aligned). */
void bench_pattern_fill(void *buf, size_t len, uint64_t off, int rank);
/* Counts the words of buf that differ from rank's pattern at off; the first bad one's file
 * offset, expected and found values go to *bad_off, *want, *got. */
uint64_t bench_pattern_check(const void *buf, size_t len, uint64_t off, int rank,
			     uint64_t *bad_off, uint64_t *want, uint64_t *got);

/* ---- the tests ---- */
int bench_ior_run(const struct bench_opts *o, const struct bench_io *io);
int bench_md_run(const struct bench_opts *o, const struct bench_io *io);

/* ---- report helpers (report.c) ---- */
/* One row of the Results table: a phase of one repetition, aggregated over ranks. */
struct bench_result {
	double bw_mib;  /* MiB/s: all ranks' bytes over (last end - first start) */
	double iops;    /* transfers per second, same interval */
	double latency; /* mean seconds per I/O call */
	double open_s, xfer_s, close_s, total_s;
	int iter;
};

/* IOR's output, printed by rank 0 only. */
void bench_ior_print_header(const struct bench_opts *o, const struct bench_io *io);
void bench_ior_print_row(const char *access, const struct bench_result *r);
void bench_ior_print_remove(double secs, int iter);
void bench_ior_print_tail(const struct bench_opts *o, const struct bench_result *wr, int nwr,
			  const struct bench_result *rd, int nrd);
/* "Wed Jan 19 10:45:49 2022" (ctime without the newline) into buf. */
void bench_date(char *buf, size_t len);
/* "36.5 GiB   Used FS: 18.8%   Inodes: 2.3 Mi   Used Inodes: 5.9%" into buf. */
void bench_fs_line(const struct bench_fsinfo *fs, char *buf, size_t len);
/* The directory part of path ("." when there is none) into buf. */
void bench_dirname(const char *path, char *buf, size_t len);

#endif
