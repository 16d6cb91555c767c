/* find.c - `nacre find`: lfs find's options and find's expression (-o, !, parentheses),
 * evaluated on the MDS (FIND, through the mount's NACRE_IOC_FIND ioctl on the start
 * directory: nacre_find_ioctl) as one request, or as leaves and a program when it is more
 * than an AND of different tests; printed here as lfs find prints them. */
#include "cli/find.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/find_values.h"
#include "common/util.h"
#include "nacre/nacre.h"

/* A test of the expression as typed: its option, the option as typed, value and '!'. */
struct opt;
struct find_test {
	const struct opt *o;
	const char *arg, *v;
	int neg;
};
#define FIND_TESTS_MAX 64u
struct find_expr {
	struct find_test tests[FIND_TESTS_MAX];
	uint32_t ntests, nops;
	uint8_t ops[NACRE_FIND_OPS_MAX];
	struct nacre_find_req leaves[NACRE_FIND_LEAVES_MAX];
};

struct opts {
	struct nacre_find_req q; /* the predicates; each starting point's request copies it */
	struct find_expr expr;
	int out;
	const char *fmt;
	const char *paths[64];
	int npaths;
	/* tested here, on the MDS's matches: -path (on the path as printed) and --mdt-index
	 * (nacre has one MDT, index 0: the test is the same for every entry) */
	const char *path_glob;
	int path_icase, path_neg;
	int none; /* --mdt-index without 0 (or ! with 0): nothing matches */
};

/* An option: its long name, its lfs short letter (0 none), whether it takes a value, and
 * the predicate it sets (0 for an action or an option that is not a test). */
struct opt {
	const char *name;
	char short_name;
	int arg;
	uint32_t pred;
};
enum { O_NONE = 0 };
/* options tested here (no MDS predicate bit) or that change nothing */
enum { OPT_PATH = 1u << 27, OPT_MDT_INDEX = 1u << 28, OPT_LAZY = 1u << 29 };
static const struct opt table[] = {
	{"name", 'n', 1, NACRE_FINDP_NAME},
	{"iname", 0, 1, NACRE_FINDP_NAME},
	{"type", 't', 1, NACRE_FINDP_TYPE},
	{"size", 's', 1, NACRE_FINDP_SIZE},
	{"atime", 'A', 1, NACRE_FINDP_ATIME},
	{"mtime", 'M', 1, NACRE_FINDP_MTIME},
	{"ctime", 'C', 1, NACRE_FINDP_CTIME},
	{"amin", 0, 1, NACRE_FINDP_ATIME},
	{"mmin", 0, 1, NACRE_FINDP_MTIME},
	{"cmin", 0, 1, NACRE_FINDP_CTIME},
	{"newer", 0, 1, NACRE_FINDP_NEWER},
	{"uid", 'u', 1, NACRE_FINDP_UID},
	{"user", 'U', 1, NACRE_FINDP_UID},
	{"gid", 'g', 1, NACRE_FINDP_GID},
	{"group", 'G', 1, NACRE_FINDP_GID},
	{"perm", 0, 1, NACRE_FINDP_PERM},
	{"maxdepth", 'D', 1, NACRE_FINDP_MAXDEPTH},
	{"mindepth", 0, 1, NACRE_FINDP_MINDEPTH},
	{"stripe-count", 'c', 1, NACRE_FINDP_STRIPE_COUNT},
	{"stripe_count", 0, 1, NACRE_FINDP_STRIPE_COUNT},
	{"stripe-size", 'S', 1, NACRE_FINDP_STRIPE_SIZE},
	{"stripe_size", 0, 1, NACRE_FINDP_STRIPE_SIZE},
	{"stripe-index", 'i', 1, NACRE_FINDP_OST},
	{"stripe_index", 0, 1, NACRE_FINDP_OST},
	{"ost", 'O', 1, NACRE_FINDP_OST},
	{"obd", 0, 1, NACRE_FINDP_OST},
	{"pool", 0, 1, NACRE_FINDP_POOL},
	{"layout", 'L', 1, NACRE_FINDP_LAYOUT},
	{"hsm-state", 0, 1, NACRE_FINDP_HSM},
	{"hsm_state", 0, 1, NACRE_FINDP_HSM},
	{"hsm", 0, 1, NACRE_FINDP_HSM},
	{"fid", 0, 1, NACRE_FINDP_FID},
	{"empty", 0, 0, NACRE_FINDP_EMPTY},
	{"links", 0, 1, NACRE_FINDP_LINKS},
	{"blocks", 'b', 1, NACRE_FINDP_BLOCKS},
	{"projid", 0, 1, NACRE_FINDP_PROJID},
	{"newerXY", 0, 1, NACRE_FINDP_NEWER_XY}, /* found by is_newer_xy, not by name */
	{"path", 0, 1, OPT_PATH},
	{"ipath", 0, 1, OPT_PATH},
	{"mdt-index", 'm', 1, OPT_MDT_INDEX},
	{"mdt_index", 0, 1, OPT_MDT_INDEX},
	{"mdt", 0, 1, OPT_MDT_INDEX},
	{"lazy", 'l', 0, OPT_LAZY},
	{"btime", 'B', 1, NACRE_FINDP_BTIME},
	{"Bmin", 0, 1, NACRE_FINDP_BTIME},
	{"print", 'P', 0, O_NONE},
	{"print0", '0', 0, O_NONE},
	{"ls", 0, 0, O_NONE},
	{"printf", 0, 1, O_NONE},
};

/* -newerXY: X and Y each one of a m c B (t for Y: a date) */
static int is_newer_xy(const char *n)
{
	return strncmp(n, "newer", 5) == 0 && n[5] && strchr("amcB", n[5]) && n[6] &&
	       strchr("amcBt", n[6]) && !n[7];
}

static const struct opt *lookup(const char *arg)
{
	if (arg[0] != '-' || !arg[1])
		return NULL;
	const char *n = arg + 1;
	if (n[0] == '-')
		n++;
	if (is_newer_xy(n)) {
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if (table[i].pred == NACRE_FINDP_NEWER_XY)
				return &table[i];
	}
	else if (n[1] == 0) {
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			if (table[i].short_name == n[0])
				return &table[i];
		return NULL;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].name, n) == 0)
			return &table[i];
	return NULL;
}

/* --mdt-index LIST: nacre's one MDT is index 0, so the test holds for every entry or none */
static int parse_mdt_index(char *s, struct opts *op, int neg)
{
	uint32_t idx[NACRE_FIND_OSTS_MAX], n = 0;
	if (find_parse_targets(s, "-MDT", idx, NACRE_FIND_OSTS_MAX, &n))
		return -1;
	int has0 = 0;
	for (uint32_t i = 0; i < n; i++)
		has0 |= idx[i] == 0;
	if (has0 == neg)
		op->none = 1;
	return 0;
}

/* One -newerXY test (name the option as typed, without its dashes); neg from a '!' */
static int add_newer_xy(struct nacre_find_req *q, const char *name, const char *v, int neg)
{
	char x = name[5], y = name[6];
	if (q->nnewer == NACRE_FIND_NEWER_MAX) {
		cli_err("find: at most %u -newerXY tests", NACRE_FIND_NEWER_MAX);
		return -1;
	}
	struct nacre_find_newer *n = &q->newer_xy[q->nnewer];
	n->which = x == 'a' ? NACRE_FIND_TIME_ATIME
		   : x == 'c' ? NACRE_FIND_TIME_CTIME
		   : x == 'B' ? NACRE_FIND_TIME_BTIME
			      : NACRE_FIND_TIME_MTIME;
	n->neg = (uint8_t)neg;
	if (find_parse_reference(y, v, &n->t) < 0)
		return -1;
	q->nnewer++;
	return 0;
}

static int bad_value(const struct opt *o, const char *v, const char *what)
{
	cli_err("find: invalid value '%s' for --%s: %s", v, o->name, what);
	return -1;
}

/* Sets the predicate of option o from its value v. */
static int set_pred(struct nacre_find_req *q, const struct opt *o, const char *v)
{
	char tmp[4096] = "";
	if (v && str_copy(tmp, v, sizeof(tmp)) >= sizeof(tmp))
		return bad_value(o, v, "too long");
	const char *n = o->name;
	switch (o->pred) {
	case NACRE_FINDP_NAME:
		if (strlen(v) > NACRE_FIND_GLOB_MAX)
			return bad_value(o, v, "a pattern is at most 1024 bytes");
		str_copy(q->name, v, sizeof(q->name));
		q->name_icase = strcmp(n, "iname") == 0;
		return 0;
	case NACRE_FINDP_TYPE:
		return find_parse_type(v, &q->types) ? bad_value(o, v, "give letters of f d l p s b c") : 0;
	case NACRE_FINDP_SIZE:
		return find_parse_size(v, &q->size)
			       ? bad_value(o, v, "[+-]N with a unit of c b k M G T P E (bytes without)")
			       : 0;
	case NACRE_FINDP_ATIME:
	case NACRE_FINDP_MTIME:
	case NACRE_FINDP_CTIME:
	case NACRE_FINDP_BTIME: {
		struct nacre_find_cmp *c = o->pred == NACRE_FINDP_ATIME	? &q->atime
					  : o->pred == NACRE_FINDP_MTIME ? &q->mtime
					  : o->pred == NACRE_FINDP_BTIME ? &q->btime
									: &q->ctime;
		int minutes = strstr(n, "min") != NULL;
		return find_parse_time(v, minutes, c)
			       ? bad_value(o, v, minutes ? "[+-]N minutes"
							 : "[+-]N days, or a unit of s m h d w y")
			       : 0;
	}
	case NACRE_FINDP_NEWER: {
		struct stat st;
		if (lstat(v, &st) < 0) {
			cli_err("find: cannot stat '%s' for --newer: %s", v, strerror(errno));
			return -1;
		}
		q->newer.sec = st.st_mtim.tv_sec;
		q->newer.nsec = (uint32_t)st.st_mtim.tv_nsec;
		return 0;
	}
	case NACRE_FINDP_UID:
		return find_parse_user(v, 0, &q->uid) ? bad_value(o, v, "no such user") : 0;
	case NACRE_FINDP_GID:
		return find_parse_user(v, 1, &q->gid) ? bad_value(o, v, "no such group") : 0;
	case NACRE_FINDP_PERM:
		return find_parse_perm(v, q) ? bad_value(o, v, "an octal MODE, -MODE or /MODE") : 0;
	case NACRE_FINDP_MAXDEPTH:
	case NACRE_FINDP_MINDEPTH: {
		uint64_t d;
		if (cli_parse_u64(v, &d) || d > 65535)
			return bad_value(o, v, "a number of levels");
		if (o->pred == NACRE_FINDP_MAXDEPTH)
			q->maxdepth = (uint32_t)d;
		else
			q->mindepth = (uint32_t)d;
		return 0;
	}
	case NACRE_FINDP_STRIPE_COUNT: {
		static const uint64_t one[] = {1};
		return find_parse_cmp(v, NULL, one, 1, &q->stripe_count) ? bad_value(o, v, "[+-]N")
								     : 0;
	}
	case NACRE_FINDP_STRIPE_SIZE: {
		static const uint64_t m[] = {1ull << 10, 1ull << 10, 1ull << 20, 1ull << 30};
		return find_parse_cmp(v, "kKMG", m, 1, &q->stripe_size)
			       ? bad_value(o, v, "[+-]N with a unit of k M G")
			       : 0;
	}
	case NACRE_FINDP_OST:
		return find_parse_targets(tmp, "-OST", q->osts, NACRE_FIND_OSTS_MAX, &q->nosts)
			       ? bad_value(o, v, "OST indices or names, comma-separated")
			       : 0;
	case NACRE_FINDP_LINKS: {
		static const uint64_t one[] = {1};
		return find_parse_cmp(v, NULL, one, 1, &q->links) ? bad_value(o, v, "[+-]N") : 0;
	}
	case NACRE_FINDP_BLOCKS: {
		/* the space used: KiB without a suffix, b 512-byte blocks */
		static const uint64_t m[] = {512,	  1ull << 10, 1ull << 10, 1ull << 20,
					     1ull << 30, 1ull << 40, 1ull << 50, 1ull << 60};
		q->blocks.up = 1;
		return find_parse_cmp(v, "bkKMGTPE", m, 1024, &q->blocks)
			       ? bad_value(o, v, "[+-]N with a unit of b k M G T P E (KiB without)")
			       : 0;
	}
	case NACRE_FINDP_PROJID: {
		uint64_t id;
		if (cli_parse_u64(v, &id) || id > UINT32_MAX)
			return bad_value(o, v, "a project id");
		q->projid = (uint32_t)id;
		return 0;
	}
	case NACRE_FINDP_POOL:
		if (strlen(v) > NACRE_FIND_POOL_MAX)
			return bad_value(o, v, "a pool name is at most 15 bytes");
		str_copy(q->pool, v, sizeof(q->pool));
		return 0;
	case NACRE_FINDP_LAYOUT:
		return find_parse_layout(tmp, &q->layouts) ? bad_value(o, v, "raid0, released or mdt")
						      : 0;
	case NACRE_FINDP_HSM:
		return find_parse_hsm(tmp, &q->hsm)
			       ? bad_value(o, v, "exists, archived, released, dirty, lost, "
						 "noarchive, norelease (comma-separated)")
			       : 0;
	case NACRE_FINDP_FID: {
		const char *f = v;
		return nacre_fid_parse(f, &q->fid) < 0 ? bad_value(o, v, "a FID [0xSEQ:0xOID:0xVER]")
							: 0;
	}
	}
	return 0;
}

/* Test t into q: its predicate, value and negation (a -newerXY's own). */
static int apply_test(struct nacre_find_req *q, const struct find_test *t)
{
	const struct opt *o = t->o;
	if (o->pred == NACRE_FINDP_NEWER_XY) {
		if (add_newer_xy(q, t->arg + (t->arg[1] == '-' ? 2 : 1), t->v, t->neg) < 0)
			return -1;
	} else if (set_pred(q, o, t->v) < 0) {
		return -1;
	}
	q->preds |= o->pred;
	if (t->neg && o->pred != NACRE_FINDP_NEWER_XY)
		q->neg |= o->pred;
	return 0;
}

/* The options with no MDS predicate: a (as typed) is o, with the value v. */
static int here_or_none(struct opts *op, const struct opt *o, const char *a, const char *v,
			int neg)
{
	char tmp[4096];
	switch (o->pred) {
	case OPT_PATH:
		if (op->path_glob) {
			cli_err("find: '%s' given twice (or with -path / -ipath)", a);
			return -1;
		}
		op->path_glob = v;
		op->path_icase = strcmp(o->name, "ipath") == 0;
		op->path_neg = neg;
		return 0;
	default: /* OPT_MDT_INDEX */
		if (str_copy(tmp, v, sizeof(tmp)) >= sizeof(tmp) || parse_mdt_index(tmp, op, neg))
			return bad_value(o, v, "MDT indices or names, comma-separated");
		return 0;
	}
}

/* The expression after the paths, as find parses it: OR of ANDs of unary terms, '!' and
 * parentheses, -a implied. Tests become leaves (a test: its option, value and '!'); the
 * rest (actions, depth, --lazy, -path, --mdt-index) are options of the whole command. */
struct parser {
	struct opts *op;
	int argc, i;
	char **argv;
	int paren;   /* depth of parentheses */
	int top_or;  /* an -o outside parentheses */
	int outputs; /* actions given */
	int here_tests; /* -path, --mdt-index */
};

static const char *peek(const struct parser *p)
{
	return p->i < p->argc ? p->argv[p->i] : NULL;
}

static int is_tok(const char *a, const char *x, const char *y, const char *z)
{
	return a && (!strcmp(a, x) || (y && !strcmp(a, y)) || (z && !strcmp(a, z)));
}

static int is_not(const char *a)
{
	return is_tok(a, "!", "-not", "--not");
}

static int is_or(const char *a)
{
	return is_tok(a, "-o", "-or", "--or");
}

static int is_and(const char *a)
{
	return is_tok(a, "-a", "-and", "--and");
}

/* An action: the output of the whole command. */
static int set_action(struct parser *p, const struct opt *o, const char *v)
{
	struct opts *op = p->op;
	if (p->paren) {
		cli_err("find: put the action '%s' after the tests, not inside parentheses",
			o->name);
		return -1;
	}
	p->outputs++;
	if (strcmp(o->name, "print") == 0)
		op->out = FIND_OUT_PRINT;
	else if (strcmp(o->name, "print0") == 0)
		op->out = FIND_OUT_PRINT0;
	else if (strcmp(o->name, "ls") == 0)
		op->out = FIND_OUT_LS;
	else {
		char err[160];
		if (cli_find_check_format(v, err, sizeof(err)) < 0) {
			cli_err("find: bad --printf format '%s': %s", v, err);
			return -1;
		}
		op->out = FIND_OUT_PRINTF;
		op->fmt = v;
	}
	return 0;
}

/* Appends op to the program (a leaf's index, or FIND_OP_*). */
static int emit_op(struct parser *p, uint8_t code)
{
	struct find_expr *e = &p->op->expr;
	if (e->nops == NACRE_FIND_OPS_MAX) {
		cli_err("find: the expression is too long (at most %u tests and operators)",
			NACRE_FIND_OPS_MAX);
		return -1;
	}
	e->ops[e->nops++] = code;
	return 0;
}

/* A leaf for the test o with the value v, as typed a, negated when neg. */
static int emit_test(struct parser *p, const struct opt *o, const char *a, const char *v,
		     int neg)
{
	struct find_expr *e = &p->op->expr;
	if (e->ntests == FIND_TESTS_MAX) {
		cli_err("find: at most %u tests", FIND_TESTS_MAX);
		return -1;
	}
	e->tests[e->ntests] = (struct find_test){.o = o, .arg = a, .v = v, .neg = neg};
	return emit_op(p, (uint8_t)e->ntests++);
}

static int parse_or(struct parser *p);

/* A term, negated when neg: 1 if it left a value in the program, 0 if it was an option of
 * the whole command or a starting point (always true), -1 on error. */
static int parse_unary(struct parser *p, int neg)
{
	const char *a = peek(p);
	if (!a) {
		cli_err("find: the expression ends where a test was expected");
		return -1;
	}
	p->i++;
	if (is_not(a))
		return parse_unary(p, !neg);
	if (!strcmp(a, "(")) {
		p->paren++;
		int r = parse_or(p);
		if (r < 0)
			return -1;
		if (!is_tok(peek(p), ")", NULL, NULL)) {
			cli_err("find: a '(' without its ')'");
			return -1;
		}
		p->i++;
		p->paren--;
		if (neg && r == 0) {
			cli_err("find: '!' before parentheses without a test");
			return -1;
		}
		return neg ? (emit_op(p, NACRE_FIND_OP_NOT) < 0 ? -1 : 1) : r;
	}
	if (!strcmp(a, ")")) {
		cli_err("find: a ')' without its '(' (or an empty pair)");
		return -1;
	}
	if (a[0] != '-' && !neg) { /* lfs takes starting points after the options too */
		if (p->op->npaths == 64) {
			cli_err("find: at most 64 starting points");
			return -1;
		}
		p->op->paths[p->op->npaths++] = a;
		return 0;
	}
	const struct opt *o = lookup(a);
	if (!o) {
		cli_err("find: unknown option '%s' (see nacre find --help)", a);
		return -1;
	}
	if (o->arg && p->i >= p->argc) {
		cli_err("find: option '%s' needs a value", a);
		return -1;
	}
	const char *v = o->arg ? p->argv[p->i++] : NULL;
	int whole = o->pred == O_NONE || o->pred == NACRE_FINDP_MAXDEPTH ||
		    o->pred == NACRE_FINDP_MINDEPTH || o->pred == OPT_LAZY;
	if (neg && whole) {
		cli_err("find: '!' cannot negate '%s'", a);
		return -1;
	}
	if (o->pred == O_NONE)
		return set_action(p, o, v) < 0 ? -1 : 0;
	if (o->pred == NACRE_FINDP_MAXDEPTH || o->pred == NACRE_FINDP_MINDEPTH) {
		if (set_pred(&p->op->q, o, v) < 0)
			return -1;
		p->op->q.preds |= o->pred;
		return 0;
	}
	if (o->pred == OPT_LAZY)
		return 0; /* sizes come from the MDS whether lazy or not: nothing to skip */
	if (o->pred >= OPT_PATH) { /* tested here, on what the MDS found */
		p->here_tests++;
		if (p->paren) {
			cli_err("find: '%s' is tested here, not on the MDS: give it outside "
				"parentheses and -o", a);
			return -1;
		}
		return here_or_none(p->op, o, a, v, neg) < 0 ? -1 : 0;
	}
	return emit_test(p, o, a, v, neg) < 0 ? -1 : 1;
}

static int parse_and(struct parser *p)
{
	int have = parse_unary(p, 0);
	if (have < 0)
		return -1;
	for (;;) {
		const char *a = peek(p);
		if (!a || is_or(a) || !strcmp(a, ")"))
			return have;
		if (is_and(a))
			p->i++;
		int r = parse_unary(p, 0);
		if (r < 0)
			return -1;
		if (have == 1 && r == 1 && emit_op(p, NACRE_FIND_OP_AND) < 0)
			return -1;
		have = have == 1 || r == 1 ? 1 : have;
	}
}

static int parse_or(struct parser *p)
{
	int have = parse_and(p);
	if (have < 0)
		return -1;
	while (is_or(peek(p))) {
		if (!p->paren)
			p->top_or = 1;
		p->i++;
		int r = parse_and(p);
		if (r < 0)
			return -1;
		if (r != 1 || have != 1) {
			/* an option of the whole command is true: so would be the -o */
			if (p->here_tests)
				cli_err("find: -path and --mdt-index are tested here, not on the "
					"MDS: they cannot be alternatives of -o");
			else
				cli_err("find: '-o' needs a test on each side");
			return -1;
		}
		if (emit_op(p, NACRE_FIND_OP_OR) < 0)
			return -1;
	}
	return have;
}

/* Every test into one request when the program is a plain AND of tests of different kinds
 * (as an MDS before expressions understands); 0, or 1 when it is not that. */
static int fold_conjunction(struct opts *op)
{
	struct find_expr *e = &op->expr;
	uint32_t seen = 0, newer = 0;
	for (uint32_t i = 0; i < e->nops; i++)
		if (e->ops[i] == NACRE_FIND_OP_OR || e->ops[i] == NACRE_FIND_OP_NOT)
			return 1;
	for (uint32_t i = 0; i < e->ntests; i++) {
		uint32_t b = e->tests[i].o->pred;
		if (b == NACRE_FINDP_NEWER_XY)
			newer++;
		else if (seen & b)
			return 1;
		seen |= b;
	}
	if (newer > NACRE_FIND_NEWER_MAX)
		return 1;
	for (uint32_t i = 0; i < e->ntests; i++)
		if (apply_test(&op->q, &e->tests[i]) < 0)
			return -1;
	return 0;
}

/* The program and one leaf per test. */
static int make_leaves(struct opts *op)
{
	struct find_expr *e = &op->expr;
	if (e->ntests > NACRE_FIND_LEAVES_MAX) {
		cli_err("find: at most %u tests with -o, '!' before '(', or a test given twice",
			NACRE_FIND_LEAVES_MAX);
		return -1;
	}
	for (uint32_t i = 0; i < e->ntests; i++) {
		e->leaves[i].version = NACRE_FIND_VERSION;
		if (apply_test(&e->leaves[i], &e->tests[i]) < 0)
			return -1;
	}
	op->q.nleaves = e->ntests;
	op->q.leaves = e->leaves;
	op->q.nops = e->nops;
	memcpy(op->q.ops, e->ops, e->nops);
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *op)
{
	struct parser p = {.op = op, .argc = argc, .argv = argv, .i = 1};
	for (; p.i < argc && argv[p.i][0] != '-' && !is_not(argv[p.i]) &&
	       strcmp(argv[p.i], "(") != 0;
	     p.i++) {
		if (op->npaths == (int)(sizeof(op->paths) / sizeof(op->paths[0]))) {
			cli_err("find: at most 64 starting points");
			return -1;
		}
		op->paths[op->npaths++] = argv[p.i];
	}
	if (p.i < p.argc) {
		int r = parse_or(&p);
		if (r < 0)
			return -1;
		if (p.i < p.argc) {
			cli_err("find: a ')' without its '('");
			return -1;
		}
	}
	if (p.outputs > 1) {
		cli_err("find: give one of --print, --print0, -ls, --printf");
		return -1;
	}
	if (p.here_tests && p.top_or) {
		cli_err("find: -path and --mdt-index are tested here, not on the MDS: they "
			"cannot be alternatives of -o");
		return -1;
	}
	if (p.outputs && p.top_or) {
		/* find would bind the action to the last alternative only */
		cli_err("find: with -o, put the tests in parentheses before the action: "
			"\\( A -o B \\) -print");
		return -1;
	}
	int fold = fold_conjunction(op);
	if (fold < 0 || (fold && make_leaves(op) < 0))
		return -1;
	if (op->npaths == 0) {
		cli_err("find: no directory given");
		cli_usage(stderr, "find");
		return -1;
	}
	return 0;
}

/* The basename of a command-line path, as find names the starting point. */
static void start_name(const char *path, char *out, size_t len)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t b = n;
	while (b > 0 && path[b - 1] != '/')
		b--;
	if (n - b >= len)
		n = b + len - 1;
	memcpy(out, path + b, n - b);
	out[n - b] = 0;
	if (!out[0])
		str_copy(out, "/", len);
}

/* -path: the glob against the entry's path as printed (PATH/REL; '/' is not special) */
static int path_matches(const struct opts *op, const char *path, const char *rel)
{
	char full[2 * PATH_MAX + 2];
	size_t n = strlen(path);
	snprintf(full, sizeof(full), "%s%s%s", path, !*rel || (n && path[n - 1] == '/') ? "" : "/",
		 rel);
	return fnmatch(op->path_glob, full, op->path_icase ? FNM_CASEFOLD : 0) == 0;
}

/* Prints one page's entries; 1 if one of them reported an error. */
static int print_page(const char *path, struct opts *op, const struct nacre_find_page *page,
		      long long now)
{
	int rc = 0;

	for (uint32_t i = 0; i < page->count; i++) {
		const struct nacre_find_entry *e = &page->entries[i];
		if (e->err) {
			fflush(stdout);
			if (e->path[0])
				cli_err("find: '%s%s%s': %s", path,
					path[strlen(path) - 1] == '/' ? "" : "/", e->path,
					strerror(-e->err));
			else
				cli_err("find: '%s': %s", path, strerror(-e->err));
			rc = 1;
			continue;
		}
		if (op->path_glob && path_matches(op, path, e->path) == op->path_neg)
			continue;
		cli_find_print(stdout, op->out, op->fmt, path, e, now);
	}
	return rc;
}

static int find_one(const char *path, struct opts *op)
{
	struct nacre_find_req *r = malloc(sizeof(*r));
	int rc = 0, fd;
	long long now = (long long)time(NULL);

	if (!r)
		return 1;
	*r = op->q;
	start_name(path, r->start_name, sizeof(r->start_name));
	struct stat st;
	if (lstat(path, &st) < 0) {
		cli_err("find: '%s': %s", path, strerror(errno));
		free(r);
		return 1;
	}
	if (op->none) { /* no entry is on an MDT of that list */
		free(r);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		/* a file or a symlink (not followed, as find -P): its directory is asked about
		 * the entry */
		char dir[PATH_MAX];
		size_t n = str_copy(dir, path, sizeof(dir));
		while (n > 0 && dir[n - 1] != '/')
			n--;
		while (n > 1 && dir[n - 1] == '/')
			n--;
		if (n == 0)
			str_copy(dir, ".", sizeof(dir));
		else
			dir[n] = 0;
		r->start_entry = 1;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		cli_err("find: '%s': %s", path, strerror(errno));
		free(r);
		return 1;
	}
	r->max_bytes = 0; /* the most the mount's ioctl carries */
	memset(&r->cursor, 0, sizeof(r->cursor));
	for (;;) {
		struct nacre_find_page *page;
		int err = nacre_find_ioctl(fd, r, &page);
		if (page)
			rc |= print_page(path, op, page, now);
		if (err == -EMSGSIZE) {
			cli_err("find: the query does not fit in one request (shorten the pattern)");
		} else if (err == -EBADMSG) {
			cli_err("find: a malformed reply from the mount of '%s'", path);
		} else if (err == -ENOTTY) {
			cli_err("find: '%s' is not on a nacre file system (or its mount "
				"is too old for find)", path);
		} else if (err < 0) {
			cli_err("find: '%s': %s", path, strerror(-err));
		}
		if (err < 0 || page->eof) {
			nacre_find_page_free(page);
			rc |= err < 0;
			break;
		}
		r->cursor = page->next;
		nacre_find_page_free(page);
	}
	close(fd);
	free(r);
	return rc;
}

int cli_find(int argc, char **argv)
{
	struct opts *op = calloc(1, sizeof(*op));
	int rc = 0;

	if (!op) {
		rc = 1;
		goto out;
	}
	if (argc == 2 && cli_is_help(argv[1])) {
		cli_usage(stdout, "find");
		goto out;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	op->q.version = NACRE_FIND_VERSION;
	op->q.now.sec = ts.tv_sec;
	op->q.now.nsec = (uint32_t)ts.tv_nsec;
	if (parse_args(argc, argv, op) < 0) {
		rc = 1;
		goto out;
	}
	for (int i = 0; i < op->npaths; i++)
		rc |= find_one(op->paths[i], op);
	if (fflush(stdout) != 0)
		rc = 1;
out:
	free(op);
	return rc;
}
