/* http_xml.c - a bounded reader for the XML that Azure Blob and S3 answer with (listings,
 * upload ids, errors). Not a general XML parser: no DTDs (a DOCTYPE is refused, so there is
 * no entity expansion), attributes are skipped, and an element's text is the text before its
 * first child element. Everything is checked against the bytes present; nothing is sized
 * from the input but the input's own length. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hsm/http.h"

#define XML_INPUT_MAX (64u * 1024 * 1024)
#define XML_DEPTH_MAX 64
#define NO_TEXT UINT32_MAX

struct xnode {
	uint32_t name; /* arena offset of the local name */
	uint32_t text; /* arena offset, or NO_TEXT */
	int32_t first, last, next;
	int8_t has_child;
};

struct hsm_xml {
	struct xnode *n;
	size_t nn, cap;
	char *arena;
	size_t used, arena_cap;
};

struct parser {
	const char *s;
	size_t len, pos;
	struct hsm_xml *x;
	int32_t stack[XML_DEPTH_MAX];
	int depth;
	int root_done;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_name_end(char c)
{
	return is_space(c) || c == '/' || c == '>' || c == '=' || c == '<' || c == '\0';
}

/* Element names as services write them: ASCII letters, digits, "-_.:" and any UTF-8. */
static int is_name_char(char c)
{
	unsigned char u = (unsigned char)c;
	return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
	       u == '-' || u == '_' || u == '.' || u == ':' || u >= 0x80;
}

/* Skips past the next occurrence of the literal end; -EPROTO when it is missing. */
static int skip_past(struct parser *p, const char *end)
{
	size_t el = strlen(end);
	while (p->pos + el <= p->len) {
		if (memcmp(p->s + p->pos, end, el) == 0) {
			p->pos += el;
			return 0;
		}
		p->pos++;
	}
	return -EPROTO;
}

static int arena_put(struct hsm_xml *x, char c)
{
	/* The arena is sized for the worst case up front; this guards the arithmetic. */
	if (x->used >= x->arena_cap)
		return -EPROTO;
	x->arena[x->used++] = c;
	return 0;
}

static int new_node(struct parser *p, int32_t *out)
{
	struct hsm_xml *x = p->x;
	int32_t parent = p->depth ? p->stack[p->depth - 1] : -1;
	struct xnode *nd;

	if (x->nn == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		struct xnode *n = realloc(x->n, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->n = n;
		x->cap = cap;
	}
	nd = &x->n[x->nn];
	memset(nd, 0, sizeof(*nd));
	nd->text = NO_TEXT;
	nd->first = nd->last = nd->next = -1;
	if (parent >= 0) {
		struct xnode *pa = &x->n[parent];
		if (pa->last >= 0)
			x->n[pa->last].next = (int32_t)x->nn;
		else
			pa->first = (int32_t)x->nn;
		pa->last = (int32_t)x->nn;
		pa->has_child = 1;
	}
	*out = (int32_t)x->nn++;
	return 0;
}

/* Appends decoded text to the open element (only before its first child). */
static int add_text(struct parser *p, const char *t, size_t n, int raw)
{
	struct hsm_xml *x = p->x;
	struct xnode *nd;
	size_t i = 0;
	int rc;

	if (p->depth == 0) {
		for (size_t k = 0; k < n; k++)
			if (!is_space(t[k]))
				return -EPROTO;
		return 0;
	}
	nd = &x->n[p->stack[p->depth - 1]];
	if (nd->has_child)
		return 0;
	if (nd->text == NO_TEXT) {
		nd->text = (uint32_t)x->used;
	} else if (x->used == 0 || x->used - 1 < nd->text) {
		return -EPROTO;
	} else {
		x->used--; /* drop the NUL to continue the same string */
	}
	while (i < n) {
		unsigned long cp;
		char c = t[i];
		if (raw || c != '&') {
			if ((rc = arena_put(x, c)) < 0)
				return rc;
			i++;
			continue;
		}
		const char *semi = memchr(t + i, ';', n - i > 12 ? 12 : n - i);
		if (!semi)
			return -EPROTO;
		size_t el = (size_t)(semi - (t + i)) + 1; /* "&...;" */
		const char *e = t + i + 1;
		size_t en = el - 2;
		if (en == 2 && memcmp(e, "lt", 2) == 0)
			cp = '<';
		else if (en == 2 && memcmp(e, "gt", 2) == 0)
			cp = '>';
		else if (en == 3 && memcmp(e, "amp", 3) == 0)
			cp = '&';
		else if (en == 4 && memcmp(e, "quot", 4) == 0)
			cp = '"';
		else if (en == 4 && memcmp(e, "apos", 4) == 0)
			cp = '\'';
		else if (en >= 2 && e[0] == '#') {
			int hex = e[1] == 'x' || e[1] == 'X';
			size_t k = hex ? 2 : 1;
			if (k >= en)
				return -EPROTO;
			cp = 0;
			for (; k < en; k++) {
				char d = e[k];
				unsigned v;
				if (d >= '0' && d <= '9')
					v = (unsigned)(d - '0');
				else if (hex && d >= 'a' && d <= 'f')
					v = (unsigned)(d - 'a' + 10);
				else if (hex && d >= 'A' && d <= 'F')
					v = (unsigned)(d - 'A' + 10);
				else
					return -EPROTO;
				cp = cp * (hex ? 16 : 10) + v;
				if (cp > 0x10FFFF)
					return -EPROTO;
			}
			if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
				return -EPROTO;
		} else {
			return -EPROTO;
		}
		/* UTF-8 of cp is at most 4 bytes and the reference is at least 4 ("&#9;"),
		 * except "&lt;"-style ones that decode to one byte: never longer than the input. */
		if (cp < 0x80) {
			rc = arena_put(x, (char)cp);
		} else if (cp < 0x800) {
			rc = arena_put(x, (char)(0xC0 | (cp >> 6)));
			if (!rc)
				rc = arena_put(x, (char)(0x80 | (cp & 0x3F)));
		} else if (cp < 0x10000) {
			rc = arena_put(x, (char)(0xE0 | (cp >> 12)));
			if (!rc)
				rc = arena_put(x, (char)(0x80 | ((cp >> 6) & 0x3F)));
			if (!rc)
				rc = arena_put(x, (char)(0x80 | (cp & 0x3F)));
		} else {
			rc = arena_put(x, (char)(0xF0 | (cp >> 18)));
			if (!rc)
				rc = arena_put(x, (char)(0x80 | ((cp >> 12) & 0x3F)));
			if (!rc)
				rc = arena_put(x, (char)(0x80 | ((cp >> 6) & 0x3F)));
			if (!rc)
				rc = arena_put(x, (char)(0x80 | (cp & 0x3F)));
		}
		if (rc < 0)
			return rc;
		i += el;
	}
	return arena_put(x, '\0');
}

/* Reads a name at pos into the arena (local part only). Returns its offset or -EPROTO. */
static int64_t read_name(struct parser *p)
{
	size_t start = p->pos, local;
	int64_t off = (int64_t)p->x->used;

	while (p->pos < p->len && !is_name_end(p->s[p->pos])) {
		if (!is_name_char(p->s[p->pos]))
			return -EPROTO;
		p->pos++;
	}
	if (p->pos == start)
		return -EPROTO;
	local = start;
	for (size_t i = start; i < p->pos; i++)
		if (p->s[i] == ':')
			local = i + 1;
	if (local == p->pos)
		return -EPROTO;
	for (size_t i = local; i < p->pos; i++)
		if (arena_put(p->x, p->s[i]) < 0)
			return -EPROTO;
	if (arena_put(p->x, '\0') < 0)
		return -EPROTO;
	return off;
}

static void skip_space(struct parser *p)
{
	while (p->pos < p->len && is_space(p->s[p->pos]))
		p->pos++;
}

static int open_tag(struct parser *p)
{
	int64_t name;
	int32_t id;
	int rc;

	if (p->root_done && p->depth == 0)
		return -EPROTO; /* a second root element */
	if (p->depth == XML_DEPTH_MAX)
		return -EPROTO;
	p->pos++; /* '<' */
	if ((rc = new_node(p, &id)) < 0)
		return rc;
	name = read_name(p);
	if (name < 0)
		return (int)name;
	p->x->n[id].name = (uint32_t)name;
	/* Attributes: name="value" or name='value', skipped. */
	for (;;) {
		skip_space(p);
		if (p->pos >= p->len)
			return -EPROTO;
		char c = p->s[p->pos];
		if (c == '>') {
			p->pos++;
			p->stack[p->depth++] = id;
			return 0;
		}
		if (c == '/') {
			if (p->pos + 1 >= p->len || p->s[p->pos + 1] != '>')
				return -EPROTO;
			p->pos += 2;
			if (p->depth == 0)
				p->root_done = 1;
			return 0;
		}
		size_t a = p->pos;
		while (p->pos < p->len && !is_name_end(p->s[p->pos]))
			p->pos++;
		if (p->pos == a)
			return -EPROTO;
		skip_space(p);
		if (p->pos >= p->len || p->s[p->pos] != '=')
			return -EPROTO;
		p->pos++;
		skip_space(p);
		if (p->pos >= p->len || (p->s[p->pos] != '"' && p->s[p->pos] != '\''))
			return -EPROTO;
		char q = p->s[p->pos++];
		const char *end = memchr(p->s + p->pos, q, p->len - p->pos);
		if (!end)
			return -EPROTO;
		p->pos = (size_t)(end - p->s) + 1;
	}
}

static int close_tag(struct parser *p)
{
	size_t start, local;
	const char *open;

	p->pos += 2; /* "</" */
	if (p->depth == 0)
		return -EPROTO;
	start = p->pos;
	while (p->pos < p->len && !is_name_end(p->s[p->pos]))
		p->pos++;
	local = start;
	for (size_t i = start; i < p->pos; i++)
		if (p->s[i] == ':')
			local = i + 1;
	open = p->x->arena + p->x->n[p->stack[p->depth - 1]].name;
	if (strlen(open) != p->pos - local || memcmp(open, p->s + local, p->pos - local) != 0)
		return -EPROTO;
	skip_space(p);
	if (p->pos >= p->len || p->s[p->pos] != '>')
		return -EPROTO;
	p->pos++;
	if (--p->depth == 0)
		p->root_done = 1;
	return 0;
}

static int parse(struct parser *p)
{
	int rc;

	while (p->pos < p->len) {
		const char *s = p->s + p->pos;
		size_t left = p->len - p->pos;

		if (s[0] != '<') {
			const char *lt = memchr(s, '<', left);
			size_t n = lt ? (size_t)(lt - s) : left;
			if ((rc = add_text(p, s, n, 0)) < 0)
				return rc;
			p->pos += n;
			continue;
		}
		if (left >= 2 && s[1] == '?') {
			rc = skip_past(p, "?>");
		} else if (left >= 4 && memcmp(s, "<!--", 4) == 0) {
			p->pos += 4;
			rc = skip_past(p, "-->");
		} else if (left >= 9 && memcmp(s, "<![CDATA[", 9) == 0) {
			size_t start = p->pos + 9;
			p->pos = start;
			if ((rc = skip_past(p, "]]>")) == 0)
				rc = add_text(p, p->s + start, p->pos - 3 - start, 1);
		} else if (left >= 2 && s[1] == '!') {
			rc = -EPROTO; /* DOCTYPE and friends: never in a service reply */
		} else if (left >= 2 && s[1] == '/') {
			rc = close_tag(p);
		} else {
			rc = open_tag(p);
		}
		if (rc < 0)
			return rc;
	}
	return p->depth == 0 && p->root_done ? 0 : -EPROTO;
}

int hsm_xml_parse(const char *buf, size_t len, struct hsm_xml **out)
{
	struct parser p = { .s = buf, .len = len };
	struct hsm_xml *x;
	int rc;

	*out = NULL;
	if (len > XML_INPUT_MAX)
		return -EPROTO;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	/* Names and texts never decode longer than their source, and each takes one NUL,
	 * added only where at least one source byte was consumed: 2 * len bounds it. */
	x->arena_cap = 2 * len + 2;
	x->arena = malloc(x->arena_cap);
	if (!x->arena) {
		free(x);
		return -ENOMEM;
	}
	p.x = x;
	/* A UTF-8 byte order mark may precede the document (Azure sends one). */
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		p.pos = 3;
	rc = parse(&p);
	if (rc < 0) {
		hsm_xml_free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void hsm_xml_free(struct hsm_xml *x)
{
	if (!x)
		return;
	free(x->n);
	free(x->arena);
	free(x);
}

int hsm_xml_root(const struct hsm_xml *x)
{
	return x && x->nn ? 0 : -1;
}

static int valid(const struct hsm_xml *x, int node)
{
	return x && node >= 0 && (size_t)node < x->nn;
}

int hsm_xml_child(const struct hsm_xml *x, int node, const char *name)
{
	if (!valid(x, node))
		return -1;
	for (int c = x->n[node].first; c >= 0; c = x->n[c].next)
		if (!name || strcmp(x->arena + x->n[c].name, name) == 0)
			return c;
	return -1;
}

int hsm_xml_next(const struct hsm_xml *x, int node, const char *name)
{
	if (!valid(x, node))
		return -1;
	for (int c = x->n[node].next; c >= 0; c = x->n[c].next)
		if (!name || strcmp(x->arena + x->n[c].name, name) == 0)
			return c;
	return -1;
}

const char *hsm_xml_name(const struct hsm_xml *x, int node)
{
	return valid(x, node) ? x->arena + x->n[node].name : "";
}

const char *hsm_xml_text(const struct hsm_xml *x, int node)
{
	if (!valid(x, node) || x->n[node].text == NO_TEXT)
		return "";
	return x->arena + x->n[node].text;
}

const char *hsm_xml_child_text(const struct hsm_xml *x, int node, const char *name)
{
	int c = hsm_xml_child(x, node, name);
	return c >= 0 ? hsm_xml_text(x, c) : NULL;
}
