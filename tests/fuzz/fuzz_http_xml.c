/* fuzz_http_xml.c - the XML reader of the cloud backends (src/hsm/http_xml.c), which parses
 * what an object store, or anything claiming to be one, answers. A parsed document is walked
 * (every handle in range, no cycles, every string terminated), written back as XML and parsed
 * again: the second tree must equal the first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsm/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
	char *p;
	size_t len, cap;
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_http_xml: %s\n", what);
	abort();
}

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap < o->len + n + 1)
			cap *= 2;
		o->p = realloc(o->p, cap);
		if (!o->p)
			fail("out of memory");
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void put_text(struct out *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			put(o, "&lt;", 4);
		else if (*s == '&')
			put(o, "&amp;", 5);
		else
			put(o, s, 1);
	}
}

/* Writes node and its subtree; counts nodes so a cycle cannot loop forever. */
static void write_node(const struct hsm_xml *x, int node, struct out *o, size_t *budget,
		       int depth)
{
	const char *name = hsm_xml_name(x, node);

	if ((*budget)-- == 0)
		fail("more nodes than input bytes: a cycle?");
	if (depth > 64)
		fail("deeper than the parser allows");
	if (!*name)
		fail("empty element name");
	put(o, "<", 1);
	put(o, name, strlen(name));
	put(o, ">", 1);
	put_text(o, hsm_xml_text(x, node));
	for (int c = hsm_xml_child(x, node, NULL); c >= 0; c = hsm_xml_next(x, c, NULL))
		write_node(x, c, o, budget, depth + 1);
	put(o, "</", 2);
	put(o, name, strlen(name));
	put(o, ">", 1);
}

static void compare(const struct hsm_xml *a, int na, const struct hsm_xml *b, int nb)
{
	if (strcmp(hsm_xml_name(a, na), hsm_xml_name(b, nb)) != 0)
		fail("names differ after the round trip");
	if (strcmp(hsm_xml_text(a, na), hsm_xml_text(b, nb)) != 0)
		fail("texts differ after the round trip");
	int ca = hsm_xml_child(a, na, NULL), cb = hsm_xml_child(b, nb, NULL);
	for (; ca >= 0 && cb >= 0; ca = hsm_xml_next(a, ca, NULL), cb = hsm_xml_next(b, cb, NULL))
		compare(a, ca, b, cb);
	if (ca >= 0 || cb >= 0)
		fail("child counts differ after the round trip");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hsm_xml *x = NULL, *y = NULL;
	struct out o = { 0 };
	size_t budget = size;

	if (hsm_xml_parse((const char *)data, size, &x) < 0) {
		if (x)
			fail("failed parse returned a document");
		return 0;
	}
	write_node(x, hsm_xml_root(x), &o, &budget, 0);
	if (hsm_xml_parse(o.p, o.len, &y) < 0)
		fail("our own rendering does not parse");
	compare(x, hsm_xml_root(x), y, hsm_xml_root(y));
	/* Lookups by name on a missing node are harmless. */
	if (hsm_xml_child_text(x, -1, "a") || hsm_xml_next(x, 1 << 30, NULL) != -1)
		fail("an invalid handle answered");
	hsm_xml_free(x);
	hsm_xml_free(y);
	free(o.p);
	return 0;
}
