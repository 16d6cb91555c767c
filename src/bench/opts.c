/* opts.c - the command line. Letters keep IOR's meanings in the data test and mdtest's in
 * --md mode (where -w takes a byte count), so both tools' habits carry over. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/bench.h"
#include "common/util.h"

static const char usage_text[] =
	"usage: nacre-bench [-a POSIX|NACRE|MPIIO] [-w] [-r] [-b SIZE] [-t SIZE] [-s N] [-F]\n"
	"                   [-C] [-e] [-i N] [-z] [-k] [-W] [-R] [-v] [-o FILE] [--drop-caches]\n"
	"       nacre-bench --md [-a POSIX|NACRE] -n N [-u] [-d DIR] [-w BYTES] [-i N] [-v]\n"
	"data test (IOR's options):\n"
	"  -a API      POSIX (default), NACRE (libnacre, no FUSE), MPIIO (MPI builds)\n"
	"  -b SIZE     contiguous bytes per rank per segment (k/m/g suffixes; default 1m)\n"
	"  -t SIZE     bytes per I/O call (default 256k)\n"
	"  -s N        segments (default 1)\n"
	"  -F          a file per rank (FILE.00000000, ...) instead of one shared file\n"
	"  -C          read a neighbour rank's data (beats a node's page cache with MPI)\n"
	"  -e          fsync before closing after writing\n"
	"  -w, -r      write, read (default: both)\n"
	"  -i N        repetitions (default 1)\n"
	"  -z          transfers of each segment in random order\n"
	"  -k          keep the files\n"
	"  -W, -R      verify the written data (read back) / the data read\n"
	"  -o FILE     test file (default testFile); for NACRE, a path in the file system\n"
	"  -v          more output (repeatable)\n"
	"  --drop-caches  sync and write 3 to /proc/sys/vm/drop_caches before reads (root)\n"
	"metadata test (mdtest's options, with --md):\n"
	"  -n N        files per rank; -u a directory per rank; -d DIR where (default .)\n"
	"  -w BYTES    bytes written to each file and read back (default 0)\n"
	"libnacre (-a NACRE): --mds SPEC (or $NACRE_SPEC, e.g. 127.0.0.1:9400:/nacre)\n"
	"                     --key-file K (or $NACRE_KEY_FILE)\n";

enum { OPT_MD = 256, OPT_MDS, OPT_KEY, OPT_DROP };

static void complain(int quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void complain(int quiet, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, BENCH_NAME ": %s\n(nacre-bench -h lists the options)\n", msg);
}

static int size_arg(const char *opt, const char *s, uint64_t *out, int quiet)
{
	if (parse_size(s, out) == 0)
		return 0;
	complain(quiet, "invalid size '%s' for %s: use a number with an optional k, m or g", s,
		 opt);
	return -1;
}

static int count_arg(const char *opt, const char *s, int64_t min, int64_t max, int64_t *out,
		     int quiet)
{
	if (parse_i64(s, min, max, out) == 0)
		return 0;
	complain(quiet, "invalid value '%s' for %s: use a whole number from %lld to %lld", s, opt,
		 (long long)min, (long long)max);
	return -1;
}

const char *bench_api_name(enum bench_api api)
{
	switch (api) {
	case BENCH_POSIX: return "POSIX";
	case BENCH_NACRE: return "NACRE";
	case BENCH_MPIIO: return "MPIIO";
	}
	return "?";
}

static int api_arg(const char *s, enum bench_api *api, int quiet)
{
	if (strcasecmp(s, "POSIX") == 0) {
		*api = BENCH_POSIX;
	} else if (strcasecmp(s, "NACRE") == 0) {
		*api = BENCH_NACRE;
	} else if (strcasecmp(s, "MPIIO") == 0) {
#ifdef NACRE_BENCH_MPI
		*api = BENCH_MPIIO;
#else
		complain(quiet, "-a MPIIO needs a build with MPI (install libopenmpi-dev, rebuild)");
		return -1;
#endif
	} else {
		complain(quiet, "unknown API '%s' for -a: use POSIX, NACRE or MPIIO", s);
		return -1;
	}
	return 0;
}

/* Checks the combination once everything is parsed. */
static int validate(struct bench_opts *o, int quiet)
{
	if (o->md) {
		if (o->md_files == 0) {
			complain(quiet, "--md needs -n N (files per rank)");
			return -1;
		}
		if (o->api == BENCH_MPIIO) {
			complain(quiet, "--md runs over POSIX or NACRE, not MPIIO");
			return -1;
		}
		return 0;
	}
	if (!o->write && !o->read)
		o->write = o->read = 1;
	if (o->check_write && !o->write) {
		complain(quiet, "-W checks what -w writes: add -w");
		return -1;
	}
	if (o->xfer == 0 || o->block == 0 || o->segments == 0) {
		complain(quiet, "-b, -t and -s must be above zero");
		return -1;
	}
	if (o->block % o->xfer) {
		complain(quiet, "-b %llu is not a multiple of -t %llu",
			 (unsigned long long)o->block, (unsigned long long)o->xfer);
		return -1;
	}
	if (o->xfer > (1ULL << 30)) {
		complain(quiet, "-t above 1g is not supported (one buffer of that size per rank)");
		return -1;
	}
	if ((o->check_write || o->check_read) && o->xfer % 8) {
		complain(quiet, "-W/-R check 8-byte words: -t must be a multiple of 8");
		return -1;
	}
	return 0;
}

static int has_md(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--md") == 0)
			return 1;
	}
	return 0;
}

int bench_opts_parse(int argc, char **argv, struct bench_opts *o, int quiet)
{
	static const struct option longopts[] = {
		{"md", no_argument, NULL, OPT_MD},
		{"mds", required_argument, NULL, OPT_MDS},
		{"key-file", required_argument, NULL, OPT_KEY},
		{"drop-caches", no_argument, NULL, OPT_DROP},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int md = has_md(argc, argv), opt;
	int64_t n;

	memset(o, 0, sizeof(*o));
	o->argc = argc;
	o->argv = argv;
	o->api = BENCH_POSIX;
	o->block = 1 << 20;
	o->xfer = 256 << 10;
	o->segments = 1;
	o->reps = 1;
	o->path = "testFile";
	o->md_dir = ".";
	o->mds_spec = getenv("NACRE_SPEC");
	o->key_file = getenv("NACRE_KEY_FILE");
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, md ? ":a:n:ud:w:i:vh" : ":a:b:t:s:FCewri:zo:kvWRh",
				  longopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			if (api_arg(optarg, &o->api, quiet) < 0)
				return -1;
			break;
		case 'b':
			if (size_arg("-b", optarg, &o->block, quiet) < 0)
				return -1;
			break;
		case 't':
			if (size_arg("-t", optarg, &o->xfer, quiet) < 0)
				return -1;
			break;
		case 's':
			if (count_arg("-s", optarg, 1, INT32_MAX, &n, quiet) < 0)
				return -1;
			o->segments = (uint64_t)n;
			break;
		case 'i':
			if (count_arg("-i", optarg, 1, 100000, &n, quiet) < 0)
				return -1;
			o->reps = (int)n;
			break;
		case 'n':
			if (count_arg("-n", optarg, 1, INT32_MAX, &n, quiet) < 0)
				return -1;
			o->md_files = (uint64_t)n;
			break;
		case 'w':
			if (!md)
				o->write = 1;
			else if (size_arg("-w", optarg, &o->md_bytes, quiet) < 0)
				return -1;
			break;
		case 'F': o->fpp = 1; break;
		case 'C': o->reorder = 1; break;
		case 'e': o->fsync = 1; break;
		case 'r': o->read = 1; break;
		case 'z': o->random = 1; break;
		case 'k': o->keep = 1; break;
		case 'v': o->verbose++; break;
		case 'W': o->check_write = 1; break;
		case 'R': o->check_read = 1; break;
		case 'o': o->path = optarg; break;
		case 'd': o->md_dir = optarg; break;
		case 'u': o->md_unique = 1; break;
		case OPT_MD: o->md = 1; break;
		case OPT_MDS: o->mds_spec = optarg; break;
		case OPT_KEY: o->key_file = optarg; break;
		case OPT_DROP: o->drop_caches = 1; break;
		case 'h':
			if (!quiet)
				fputs(usage_text, stdout);
			return 1;
		case ':':
			complain(quiet, "option %s needs a value", argv[optind - 1]);
			return -1;
		default: {
			char letter[3] = {'-', (char)optopt, '\0'};

			complain(quiet, "unknown option '%s'%s", optopt ? letter : argv[optind - 1],
				 md ? " in --md mode" : "");
			return -1;
		}
		}
	}
	if (optind < argc) {
		complain(quiet, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return validate(o, quiet);
}
