/* getstripe.c - `nacre getstripe`, with lfs 2.15's options and output.
 *
 * The model is lfs's: every option sets bits of a "verbose" mask (what to print) and a
 * depth (0: the paths given, 1: and the entries of a directory given, -1: everything
 * below); the printers below follow liblustreapi's order, labels and separators for a plain
 * RAID0 layout, a released file and a directory's default layout. nacre has no composite
 * layouts, mirrors, pools, extension components or directory striping, so the options
 * about those print what lfs prints for a plain layout and an unstriped directory.
 * Layouts come from the nacre.layout virtual xattr of the mount (text form of layout.h).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/layout.h"
#include "common/util.h"
#include "nacre/nacre.h"

#define LAYOUT_TEXT_MAX 4096
#define LOV_MAGIC_V1 0x0BD10BD0u

/* lfs's llapi_layout_verbose bits (the values do not matter outside this file). */
enum {
	V_COUNT = 1u << 0,
	V_SIZE = 1u << 1,
	V_OFFSET = 1u << 2,
	V_POOL = 1u << 3,
	V_DETAIL = 1u << 4,
	V_OBJID = 1u << 5,
	V_GEN = 1u << 6,
	V_MDTINDEX = 1u << 7,
	V_PATTERN = 1u << 8,
	V_COMP_COUNT = 1u << 9,
	V_COMP_FLAGS = 1u << 10,
	V_COMP_START = 1u << 11,
	V_COMP_END = 1u << 12,
	V_COMP_ID = 1u << 13,
	V_DFID = 1u << 14,
	V_HASH = 1u << 15,
	V_MIRROR_COUNT = 1u << 16,
	V_MIRROR_ID = 1u << 17,
	V_EXT_SIZE = 1u << 18,
	V_INHERIT = 1u << 19,
	V_INHERIT_RR = 1u << 20,
	V_DEFAULT = V_COUNT | V_SIZE | V_OFFSET | V_POOL | V_OBJID | V_GEN | V_PATTERN | V_HASH |
		    V_COMP_COUNT | V_COMP_FLAGS | V_COMP_START | V_COMP_END | V_COMP_ID |
		    V_MIRROR_COUNT | V_MIRROR_ID | V_EXT_SIZE | V_INHERIT | V_INHERIT_RR,
	V_COMP_OPTS = V_COMP_COUNT | V_COMP_ID | V_COMP_START | V_COMP_END | V_COMP_FLAGS,
};

struct gs_opts {
	uint32_t verbose;
	int max_depth; /* 0, 1 or -1 (-r) */
	int quiet, raw, yaml, hex;
	int default_lmv;   /* -D: the directories' default directory striping */
	int check_comp_id; /* -I ID: only component ID */
	uint32_t comp_id;
};

/* What is printed of one path: a file's layout, or a directory's default. */
struct gs_layout {
	int is_dir;
	int fake;     /* a directory without a default of its own (lfs: "(Default)") */
	int released; /* an HSM-released file: no objects */
	int32_t count, offset;
	uint32_t size, gen;
	const char *pattern;
	const uint32_t *osts;
	uint32_t nosts;
	struct nacre_fid fid;
	int32_t def_count; /* the file system default, for a directory's unset fields */
	uint32_t def_size;
};

/* Reads and parses nacre.layout of path. Returns 0, -ENODATA (no default) or -errno. */
static int read_layout(const char *path, struct nacre_layout *l)
{
	char text[LAYOUT_TEXT_MAX];
	int n = cli_getxattr(path, NACRE_VXATTR_LAYOUT, text, sizeof(text));

	if (n < 0)
		return n;
	memset(l, 0, sizeof(*l));
	if (layout_parse(text, (size_t)n, l) < 0)
		return -EPROTO;
	return 0;
}

/* The file system default: the mount root's default layout (returns 1), else 1 stripe of
 * 1 MiB (returns 0). */
static int fs_default(const char *path, struct nacre_layout *l)
{
	char root[PATH_MAX];

	if (cli_mount_root(path, root, sizeof(root)) == 0 && read_layout(root, l) == 0)
		return 1;
	memset(l, 0, sizeof(*l));
	l->pattern = NACRE_PATTERN_RAID0;
	l->stripe_count = 1;
	l->stripe_size = NACRE_STRIPE_SIZE_DEFAULT;
	l->stripe_offset = -1;
	return 0;
}

/* Whether path is a released HSM file (its objects are gone, its data in the archive). */
static int is_released(const char *path)
{
	char text[64];
	unsigned long state;
	int n = cli_getxattr(path, NACRE_VXATTR_HSM_STATE, text, sizeof(text));

	return n > 0 && sscanf(text, "%lx", &state) == 1 && (state & NACRE_HS_RELEASED);
}

/* ------------------------------------------------------------------ printing */

/* As lfs's lov_dump_user_lmm_header: one field per verbose bit, labelled only when other
 * bits are set; a directory's fields share one line. indent is set inside a component. */
static void print_header(const struct gs_opts *o, const struct gs_layout *g, const char *path,
			 int indent)
{
	uint32_t v = o->verbose;
	const char *prefix = g->is_dir ? "" : "lmm_";
	const char *space = indent ? "      " : "";
	const char *field_sep = (!o->yaml && g->is_dir) ? " " : "\n";
	const char *sep = "";

	if (g->is_dir && g->fake && !o->raw && !indent && (v & V_DETAIL))
		printf("%s(Default) ", space);
	if (!o->yaml && !indent && o->max_depth && path && (v != V_OBJID || !g->is_dir))
		printf("%s\n", path);
	if ((v & V_DETAIL) && !g->is_dir) {
		printf("%s%smagic:         0x%08X\n", space, prefix, LOV_MAGIC_V1);
		printf("%s%sseq:           %#" PRIx64 "\n", space, prefix, g->fid.seq);
		printf("%s%sobject_id:     %#x\n", space, prefix, g->fid.oid);
	}
	if (v & (V_DETAIL | V_DFID)) {
		if (v & ~V_DFID)
			printf("%slmm_fid:           ", space);
		printf(o->yaml ? "%#" PRIx64 ":0x%x:0x%x\n" : "[%#" PRIx64 ":0x%x:0x%x]\n",
		       g->fid.seq, g->fid.oid, g->fid.ver);
	}
	if (v & V_COUNT) {
		if (v & ~V_COUNT)
			printf("%s%sstripe_count:  ", space, prefix);
		printf("%d", g->is_dir && !o->raw && g->count == 0 ? g->def_count : g->count);
		sep = field_sep;
	}
	if (v & V_SIZE) {
		printf("%s", sep);
		if (v & ~V_SIZE)
			printf("%s%sstripe_size:   ", space, prefix);
		printf("%u", g->is_dir && !o->raw && g->size == 0 ? g->def_size : g->size);
		sep = field_sep;
	}
	if (v & V_PATTERN) {
		printf("%s", sep);
		if (v & ~V_PATTERN)
			printf("%s%spattern:       ", space, prefix);
		printf("%s", g->pattern);
		sep = field_sep;
	}
	if ((v & V_GEN) && !g->is_dir) {
		printf("%s", sep);
		if (v & ~V_GEN)
			printf("%s%slayout_gen:    ", space, prefix);
		printf("%u", g->gen);
		sep = "\n";
	}
	if (v & V_OFFSET) {
		int32_t idx = g->is_dir || g->nosts == 0 ? g->offset : (int32_t)g->osts[0];

		printf("%s", sep);
		if (v & ~V_OFFSET)
			printf("%s%sstripe_offset: ", space, prefix);
		printf(o->hex && idx != -1 ? "%#x" : "%d", idx);
		sep = field_sep;
	}
	/* V_POOL: nacre has no pools; lfs prints nothing for a layout without one. V_EXT_SIZE:
	 * only extension components have one. */
	if (sep[0])
		printf("\n");
}

/* As lfs's lov_dump_user_lmm_v1v3: the header, the objects, a blank line. */
static void print_plain(const struct gs_opts *o, const struct gs_layout *g, const char *path,
			int indent)
{
	print_header(o, g, path, indent);
	if (!g->is_dir && (o->verbose & V_OBJID) && !g->released) {
		if (indent)
			printf("%6slmm_objects:\n", " ");
		else if (o->yaml)
			printf("lmm_objects:\n");
		else
			printf("\tobdidx\t\t objid\t\t objid\t\t group\n");
		for (uint32_t i = 0; i < g->nosts; i++) {
			uint32_t idx = g->osts[i];
			const struct nacre_fid *f = &g->fid;

			/* nacre has no per-object ids: the objid is the file's oid, an object
			 * being named by (FID, stripe, generation) */
			if (o->yaml) {
				printf(o->hex ? "      - l_ost_idx: %#x\n" : "      - l_ost_idx: %u\n",
				       idx);
				printf("        l_fid:     %#" PRIx64 ":0x%x:0x%x\n", f->seq, f->oid,
				       f->ver);
			} else if (indent)
				printf(o->hex ? "      - %u: { l_ost_idx: %#x, l_fid: [%#" PRIx64
						":0x%x:0x%x] }\n"
					      : "      - %u: { l_ost_idx: %u, l_fid: [%#" PRIx64
						":0x%x:0x%x] }\n",
				       i, idx, f->seq, f->oid, f->ver);
			else
				printf(o->hex ? "\t%#6x\t%14llu\t%#13llx\t%14llu\n"
					      : "\t%6u\t%14llu\t%#13llx\t%14llu\n",
				       idx, (unsigned long long)f->oid, (unsigned long long)f->oid,
				       0ULL);
		}
	}
	printf("\n");
}

/* Whether lfs shows a plain layout as a composite one of a single component. */
static int comp_view(const struct gs_opts *o)
{
	if (o->check_comp_id)
		return 1;
	if ((o->verbose & ~V_DETAIL) == V_DEFAULT)
		return 0;
	return (o->verbose & V_COMP_OPTS) != 0;
}

/* As lfs's lov_dump_comp_v1 of the composite layout it forges from a plain one: a header
 * (a plain layout counts 0 entries and 1 mirror), then its one component (id 0, extent
 * 0..EOF) unless -I asked for another id. */
static void print_comp(const struct gs_opts *o, const struct gs_layout *g, const char *path)
{
	uint32_t v = o->verbose;

	if (o->max_depth && path && (v != V_OBJID || !g->is_dir) && !o->yaml)
		printf("%s\n", path);
	if (v & V_DETAIL) {
		/* lfs's forged header: 32 bytes, one 48-byte entry, then the plain layout's
		 * 32 bytes and 24 per object (none for a directory) */
		uint32_t objs = g->is_dir || g->count < 0 ? 0 : (uint32_t)g->count;

		printf("composite_header:\n");
		printf("%2slcm_magic:         0x%08X\n", " ", LOV_MAGIC_V1);
		printf("%2slcm_size:          %u\n", " ", 32 + 48 + 32 + 24 * objs);
		printf("%2slcm_flags:         %s\n", " ", g->is_dir ? "" : "0");
	}
	if (v & V_GEN) {
		if (v & ~V_GEN)
			printf("%2slcm_layout_gen:    ", " ");
		printf("%u\n", g->is_dir ? 0 : g->gen);
	}
	if (v & V_MIRROR_COUNT) {
		if (v & ~V_MIRROR_COUNT)
			printf("%2slcm_mirror_count:  ", " ");
		printf("1\n");
	}
	if (v & V_COMP_COUNT) {
		if (v & ~V_COMP_COUNT)
			printf("%2slcm_entry_count:   ", " ");
		printf("0\n");
	}
	if ((v & V_DETAIL) && !o->yaml)
		printf("components:\n");
	if (o->check_comp_id && o->comp_id != 0)
		return; /* the one component has id 0 */

	const char *sep = "";

	if (o->yaml)
		printf("%2scomponent%d:\n", " ", 0);
	if (v & V_COMP_ID) {
		if ((v & V_DETAIL) && !o->yaml)
			printf("  - lcme_id:             ");
		else if (v & ~V_COMP_ID)
			printf("%4slcme_id:             ", " ");
		printf("0");
		sep = "\n";
	}
	if (v & V_MIRROR_ID) {
		printf("%s", sep);
		if (v & ~V_MIRROR_ID)
			printf("%4slcme_mirror_id:      ", " ");
		printf("0");
		sep = "\n";
	}
	if (v & V_COMP_FLAGS) {
		printf("%s", sep);
		if (v & ~V_COMP_FLAGS)
			printf("%4slcme_flags:          ", " ");
		printf("%s", g->is_dir ? "0" : "init");
		sep = "\n";
	}
	if (v & V_COMP_START) {
		printf("%s", sep);
		if (v & ~V_COMP_START)
			printf("%4slcme_extent.e_start: ", " ");
		printf("0");
		sep = "\n";
	}
	if (v & V_COMP_END) {
		printf("%s", sep);
		if (v & ~V_COMP_END)
			printf("%4slcme_extent.e_end:   ", " ");
		printf("EOF");
		sep = "\n";
	}
	printf("%s", sep);
	if (o->yaml)
		printf("%4ssub_layout:\n", " ");
	print_plain(o, g, path, 1);
}

/* -D of a directory: lfs's default directory striping (lmv_dump_user_lmm); nacre stripes no
 * directory over MDTs, so every directory shows lfs's "none set" values. */
static void print_default_lmv(const struct gs_opts *o, const char *path)
{
	uint32_t v = o->verbose;
	const char *sep = "";

	if (o->max_depth && path && v != V_OBJID)
		printf("(Default)%s\n", path);
	if (v & V_COUNT) {
		if (v & ~V_COUNT)
			printf("lmv_stripe_count: ");
		printf("0");
		sep = (v & V_OFFSET) && !o->yaml ? " " : "\n";
	}
	if (v & V_OFFSET) {
		printf("%s", sep);
		if (v & ~V_OFFSET)
			printf("lmv_stripe_offset: ");
		printf("-1");
		sep = (v & V_HASH) && !o->yaml ? " " : "\n";
	}
	if (v & V_HASH) {
		printf("%s", sep);
		if (v & ~V_HASH)
			printf("lmv_hash_type: ");
		printf("none");
		sep = !o->yaml ? " " : "\n";
	}
	if (v & V_INHERIT) {
		printf("%s", sep);
		if (v & ~V_INHERIT)
			printf("lmv_max_inherit: ");
		printf("-1");
		sep = !o->yaml ? " " : "\n";
	}
	if (v & V_INHERIT_RR) {
		printf("%s", sep);
		if (v & ~V_INHERIT_RR)
			printf("lmv_max_inherit_rr: ");
		printf("0");
	}
	printf("\n");
}

/* ------------------------------------------------------------------ walking */

/* Fills g for path (st its stat, fidtxt its FID) from l, read here. 0, or 1 (reported). */
static int load(const struct gs_opts *o, const char *path, const struct stat *st,
		const char *fidtxt, struct gs_layout *g, struct nacre_layout *l)
{
	struct nacre_layout def;
	int rc = read_layout(path, l);

	memset(g, 0, sizeof(*g));
	if (nacre_fid_parse(fidtxt, &g->fid) < 0) {
		cli_err("%s: the mount returned a malformed FID '%s'", path, fidtxt);
		return 1;
	}
	if (S_ISREG(st->st_mode)) {
		if (rc < 0) {
			cli_err("cannot read the layout of %s: %s", path, strerror(-rc));
			return 1;
		}
		/* as lfs: a released file shows pattern "released", generation 0, no objects */
		g->released = l->nosts == 0 || is_released(path);
		g->count = l->stripe_count;
		g->size = l->stripe_size;
		g->offset = l->stripe_offset;
		g->gen = g->released ? 0 : l->gen;
		g->pattern = g->released ? "released" : "raid0";
		g->osts = l->ost_idx;
		g->nosts = g->released ? 0 : l->nosts;
		return 0;
	}
	g->is_dir = 1;
	if (rc < 0 && rc != -ENODATA) {
		cli_err("cannot read the default layout of %s: %s", path, strerror(-rc));
		return 1;
	}
	g->pattern = "raid0";
	if (rc == 0) { /* a default of its own */
		g->count = l->stripe_count;
		g->size = l->stripe_size;
		g->offset = l->stripe_offset;
		if (g->count != 0 && g->size != 0)
			return 0; /* nothing left to the file system default */
	}
	int root_set = fs_default(path, &def);

	g->def_count = def.stripe_count ? def.stripe_count : 1;
	g->def_size = def.stripe_size ? def.stripe_size : NACRE_STRIPE_SIZE_DEFAULT;
	if (rc == 0)
		return 0;
	/* None: lfs shows the file system's (the root's) marked "(Default)", or, with -R or
	 * when the root has none either, zeroes and its unset pattern 0. */
	g->fake = 1;
	if (root_set && !o->raw) {
		g->count = def.stripe_count;
		g->size = def.stripe_size;
		g->offset = def.stripe_offset;
	} else {
		g->offset = -1;
		g->pattern = "0";
	}
	return 0;
}

static int show(const char *path, const struct gs_opts *o, int depth);

static int show_entries(const char *dir, const struct gs_opts *o, int depth)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	int rc = 0;

	if (n < 0) {
		cli_err("cannot list %s: %s", dir, strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;

		if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
			char child[PATH_MAX];
			size_t dl = strlen(dir);
			int w = snprintf(child, sizeof(child), "%s%s%s", dir,
					 (dl && dir[dl - 1] == '/') ? "" : "/", name);

			if (w < 0 || (size_t)w >= sizeof(child)) {
				cli_err("path too long: %s/%s", dir, name);
				rc = 1;
			} else {
				rc |= show(child, o, depth);
			}
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

/* One path at depth (0 for a path named on the command line), then, for a directory, its
 * entries while lfs's max_depth allows. */
static int show(const char *path, const struct gs_opts *o, int depth)
{
	struct stat st;
	char fidtxt[NACRE_FID_STR_MAX];
	struct nacre_layout *l;
	struct gs_layout g;
	int rc = 0;

	if ((depth == 0 ? stat(path, &st) : lstat(path, &st)) < 0) {
		cli_err("cannot access %s: %s", path, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		if (depth == 0) {
			cli_err("%s has no layout: not a regular file or directory", path);
			return 1;
		}
		return 0;
	}
	if (cli_check_nacre(path, fidtxt, sizeof(fidtxt)) < 0)
		return 1;
	if (o->verbose & V_MDTINDEX) {
		/* every inode is on MDT0000 */
		if (o->verbose & V_DETAIL)
			printf(o->hex ? "%s\nmdt_index:\t%#x\n" : "%s\nmdt_index:\t%d\n", path, 0);
		else
			printf(o->hex ? "%#x\n" : "%d\n", 0);
	} else if (o->default_lmv) {
		if (S_ISDIR(st.st_mode)) /* a file has no directory striping: nothing */
			print_default_lmv(o, path);
	} else {
		l = malloc(sizeof(*l));
		if (!l)
			return 1;
		rc = load(o, path, &st, fidtxt, &g, l);
		if (!rc && comp_view(o))
			print_comp(o, &g, path);
		else if (!rc)
			print_plain(o, &g, path, 0);
		free(l);
		if (rc)
			return rc;
	}
	if (!S_ISDIR(st.st_mode) || depth == o->max_depth)
		return 0;
	return show_entries(path, o, depth + 1);
}

/* Options that pick fields: lfs ignores them after -v, and they show the paths alone. */
static void pick(struct gs_opts *o, uint32_t bit)
{
	if (!(o->verbose & V_DETAIL)) {
		o->verbose |= bit;
		o->max_depth = 0;
	}
}

enum {
	OPT_COMP_COUNT = 256,
	OPT_HEX_IDX,
};

int cli_getstripe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"component-count", no_argument, NULL, OPT_COMP_COUNT},
		{"comp-count", no_argument, NULL, OPT_COMP_COUNT},
		{"stripe-count", no_argument, NULL, 'c'},
		{"stripe_count", no_argument, NULL, 'c'},
		{"directory", no_argument, NULL, 'd'},
		{"default", no_argument, NULL, 'D'},
		{"fid", no_argument, NULL, 'F'},
		{"generation", no_argument, NULL, 'g'},
		{"help", no_argument, NULL, 'h'},
		{"hex-idx", no_argument, NULL, OPT_HEX_IDX},
		{"stripe-index", no_argument, NULL, 'i'},
		{"stripe_index", no_argument, NULL, 'i'},
		{"component-id", optional_argument, NULL, 'I'},
		{"comp-id", optional_argument, NULL, 'I'},
		{"layout", no_argument, NULL, 'L'},
		{"mdt", no_argument, NULL, 'm'},
		{"mdt-index", no_argument, NULL, 'm'},
		{"mdt_index", no_argument, NULL, 'm'},
		{"mirror-count", no_argument, NULL, 'N'},
		{"pool", no_argument, NULL, 'p'},
		{"quiet", no_argument, NULL, 'q'},
		{"recursive", no_argument, NULL, 'r'},
		{"raw", no_argument, NULL, 'R'},
		{"stripe-size", no_argument, NULL, 'S'},
		{"stripe_size", no_argument, NULL, 'S'},
		{"verbose", no_argument, NULL, 'v'},
		{"yaml", no_argument, NULL, 'y'},
		{"extension-size", no_argument, NULL, 'z'},
		{"ext-size", no_argument, NULL, 'z'},
		{NULL, 0, NULL, 0},
	};
	struct gs_opts o = {.max_depth = 1};
	int opt, rc = 0, recursive = 0;
	int64_t v;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "cdDFghiI::LmNpqrRSvyz", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			cli_usage(stdout, "getstripe");
			return 0;
		case 'c': pick(&o, V_COUNT); break;
		case 'S': pick(&o, V_SIZE); break;
		case 'i': pick(&o, V_OFFSET); break;
		case 'F': pick(&o, V_DFID); break;
		case 'g': pick(&o, V_GEN); break;
		case 'L': pick(&o, V_PATTERN); break;
		case 'N': pick(&o, V_MIRROR_COUNT); break;
		case 'p': pick(&o, V_POOL); break;
		case 'z': pick(&o, V_EXT_SIZE); break;
		case OPT_COMP_COUNT:
			o.verbose |= V_COMP_COUNT;
			o.max_depth = 0;
			break;
		case 'I':
			if (optarg) {
				if (parse_i64(optarg, 1, 0xffff, &v) < 0) {
					cli_err("getstripe: bad component id '%s' (1..65535)", optarg);
					cli_usage(stderr, "getstripe");
					return 1;
				}
				o.check_comp_id = 1;
				o.comp_id = (uint32_t)v;
			} else {
				o.verbose |= V_COMP_ID;
				o.max_depth = 0;
			}
			break;
		case 'm':
			if (!(o.verbose & V_DETAIL))
				o.max_depth = 0;
			o.verbose |= V_MDTINDEX;
			break;
		case 'd': o.max_depth = 0; break;
		case 'D': o.default_lmv = 1; break;
		case 'q': o.quiet = 1; break;
		case 'r': recursive = 1; break;
		case 'R': o.raw = 1; break;
		case 'v': o.verbose = V_DEFAULT | V_DETAIL; break;
		case 'y': o.yaml = 1; break;
		case OPT_HEX_IDX: o.hex = 1; break;
		default:
			cli_err("getstripe: unknown option '%s'", argv[optind - 1]);
			cli_usage(stderr, "getstripe");
			return 1;
		}
	}
	if (optind >= argc) {
		cli_err("getstripe: no PATH given");
		cli_usage(stderr, "getstripe");
		return 1;
	}
	if (recursive)
		o.max_depth = -1;
	else if (o.verbose & V_DETAIL)
		o.max_depth = 1;
	if (!o.verbose)
		o.verbose = V_DEFAULT;
	if (o.quiet)
		o.verbose = V_OBJID;
	for (int i = optind; i < argc; i++)
		rc |= show(argv[i], &o, 0);
	return rc;
}
