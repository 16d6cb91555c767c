/* metrics.c - the metric registry and its two renderings (Prometheus text, JSON line). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "common/metrics.h"
#include "common/strbuf.h"
#include "common/util.h"

/* Histogram bucket upper bounds in seconds: 50 us .. 10 s, then +Inf. */
static const double bucket_le[] = { 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
				     0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
				     0.5,     1,      2.5,     5,      10 };
#define NBUCKETS (sizeof(bucket_le) / sizeof(bucket_le[0]))

struct metric {
	struct metric *next; /* registry list; written under reg_lock, read after publish */
	enum metric_kind kind;
	char *name;
	char *labels;
	char *help;
	uint64_t value;                  /* counter; gauge as double bits; atomic */
	uint64_t buckets[NBUCKETS + 1];  /* histogram; last is +Inf; atomic */
	uint64_t sum_ns;                 /* histogram sum in nanoseconds; atomic */
	double (*fn)(void *arg);
	void *fn_arg;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metric *reg_head, *reg_tail; /* protected by reg_lock for writers */

static void (*space_fn)(void *arg, uint64_t *kb_free, uint64_t *kb_total); /* reg_lock */
static void *space_arg;                                                   /* reg_lock */

static struct metric *find_or_create(enum metric_kind kind, const char *name,
				     const char *labels, const char *help)
{
	struct metric *m;

	if (!labels)
		labels = "";
	pthread_mutex_lock(&reg_lock);
	for (m = reg_head; m; m = m->next)
		if (strcmp(m->name, name) == 0 && strcmp(m->labels, labels) == 0)
			goto out;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	m->kind = kind;
	m->name = strdup(name);
	m->labels = strdup(labels);
	m->help = strdup(help ? help : "");
	if (!m->name || !m->labels || !m->help) {
		free(m->name);
		free(m->labels);
		free(m->help);
		free(m);
		m = NULL;
		goto out;
	}
	if (reg_tail)
		reg_tail->next = m;
	else
		reg_head = m;
	reg_tail = m;
out:
	pthread_mutex_unlock(&reg_lock);
	return m;
}

struct metric *metrics_counter(const char *name, const char *labels, const char *help)
{
	return find_or_create(METRIC_COUNTER, name, labels, help);
}

struct metric *metrics_gauge(const char *name, const char *labels, const char *help)
{
	return find_or_create(METRIC_GAUGE, name, labels, help);
}

struct metric *metrics_histogram(const char *name, const char *labels, const char *help)
{
	return find_or_create(METRIC_HISTOGRAM, name, labels, help);
}

static struct metric *with_fn(enum metric_kind kind, const char *name, const char *labels,
			      const char *help, double (*fn)(void *arg), void *arg)
{
	struct metric *m = find_or_create(kind, name, labels, help);

	if (m) {
		pthread_mutex_lock(&reg_lock);
		m->fn = fn;
		m->fn_arg = arg;
		pthread_mutex_unlock(&reg_lock);
	}
	return m;
}

struct metric *metrics_gauge_fn(const char *name, const char *labels, const char *help,
				double (*fn)(void *arg), void *arg)
{
	return with_fn(METRIC_GAUGE, name, labels, help, fn, arg);
}

struct metric *metrics_counter_fn(const char *name, const char *labels, const char *help,
				  double (*fn)(void *arg), void *arg)
{
	return with_fn(METRIC_COUNTER, name, labels, help, fn, arg);
}

void metrics_add(struct metric *m, uint64_t v)
{
	if (m)
		__atomic_fetch_add(&m->value, v, __ATOMIC_RELAXED);
}

void metrics_set(struct metric *m, double v)
{
	uint64_t bits;

	if (!m)
		return;
	memcpy(&bits, &v, sizeof(bits));
	__atomic_store_n(&m->value, bits, __ATOMIC_RELAXED);
}

void metrics_observe(struct metric *m, double secs)
{
	size_t i = 0;

	if (!m)
		return;
	while (i < NBUCKETS && secs > bucket_le[i])
		i++;
	__atomic_fetch_add(&m->buckets[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->sum_ns, (uint64_t)(secs > 0 ? secs * 1e9 : 0), __ATOMIC_RELAXED);
}

double metrics_value(const struct metric *m)
{
	uint64_t bits;
	double d;

	if (!m)
		return 0;
	if (m->fn)
		return m->fn(m->fn_arg);
	bits = __atomic_load_n(&m->value, __ATOMIC_RELAXED);
	if (m->kind == METRIC_COUNTER)
		return (double)bits;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

struct metric *metrics_counter_once(struct metric **slot, const char *name, const char *help)
{
	struct metric *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!cur) {
		/* two first users get the same registration: metrics_counter finds it by name */
		cur = metrics_counter(name, "", help);
		__atomic_store_n(slot, cur, __ATOMIC_RELEASE);
	}
	return cur;
}

struct metric *metrics_net_sent(void)
{
	static struct metric *m;

	return metrics_counter_once(&m, "nacre_net_sent_bytes_total",
				    "Bytes this process sent on nacre connections");
}

struct metric *metrics_net_recv(void)
{
	static struct metric *m;

	return metrics_counter_once(&m, "nacre_net_received_bytes_total",
				    "Bytes this process received on nacre connections");
}

void metrics_set_space_fn(void (*fn)(void *arg, uint64_t *kb_free, uint64_t *kb_total),
			  void *arg)
{
	pthread_mutex_lock(&reg_lock);
	space_fn = fn;
	space_arg = arg;
	pthread_mutex_unlock(&reg_lock);
}

void metrics_space(uint64_t *kb_free, uint64_t *kb_total)
{
	void (*fn)(void *, uint64_t *, uint64_t *);
	void *arg;

	*kb_free = *kb_total = 0;
	pthread_mutex_lock(&reg_lock);
	fn = space_fn;
	arg = space_arg;
	pthread_mutex_unlock(&reg_lock);
	if (fn)
		fn(arg, kb_free, kb_total);
}

struct metric *metrics_first(void)
{
	struct metric *head;

	pthread_mutex_lock(&reg_lock);
	head = reg_head;
	pthread_mutex_unlock(&reg_lock);
	return head;
}

struct metric *metrics_next(const struct metric *m)
{
	return m->next;
}

const char *metrics_name(const struct metric *m)
{
	return m->name;
}

const char *metrics_labels(const struct metric *m)
{
	return m->labels;
}

enum metric_kind metrics_kind(const struct metric *m)
{
	return m->kind;
}

/* ---- rendering ---- */

static const char *kind_name(enum metric_kind k)
{
	return k == METRIC_COUNTER ? "counter" : k == METRIC_GAUGE ? "gauge" : "histogram";
}

/* "name{labels}" or "name" when there are no labels; extra is appended as one more label. */
static void series(struct strbuf *b, const char *name, const char *suffix, const char *labels,
		   const char *extra)
{
	int has = labels[0] != '\0', ext = extra && extra[0];

	strbuf_printf(b, "%s%s", name, suffix);
	if (has || ext)
		strbuf_printf(b, "{%s%s%s}", labels, has && ext ? "," : "", ext ? extra : "");
}

static void render_one(struct strbuf *b, const struct metric *m)
{
	if (m->kind != METRIC_HISTOGRAM) {
		series(b, m->name, "", m->labels, NULL);
		strbuf_printf(b, " %.17g\n", metrics_value(m));
		return;
	}
	uint64_t cum = 0;
	char le[48];
	for (size_t i = 0; i <= NBUCKETS; i++) {
		cum += __atomic_load_n(&m->buckets[i], __ATOMIC_RELAXED);
		if (i < NBUCKETS)
			snprintf(le, sizeof(le), "le=\"%g\"", bucket_le[i]);
		else
			str_copy(le, "le=\"+Inf\"", sizeof(le));
		series(b, m->name, "_bucket", m->labels, le);
		strbuf_printf(b, " %llu\n", (unsigned long long)cum);
	}
	series(b, m->name, "_sum", m->labels, NULL);
	strbuf_printf(b, " %.9f\n", (double)__atomic_load_n(&m->sum_ns, __ATOMIC_RELAXED) / 1e9);
	series(b, m->name, "_count", m->labels, NULL);
	strbuf_printf(b, " %llu\n", (unsigned long long)cum);
}

char *metrics_render_prometheus(void)
{
	struct strbuf b = STRBUF_INIT;
	struct metric *head, *m, *n;
	uint64_t kb_free, kb_total;

	metrics_space(&kb_free, &kb_total);
	strbuf_printf(&b, "# HELP nacre_kbytes_free Free KiB of this daemon's storage\n"
		      "# TYPE nacre_kbytes_free gauge\nnacre_kbytes_free %llu\n"
		      "# HELP nacre_capacity_kbytes Total KiB of this daemon's storage\n"
		      "# TYPE nacre_capacity_kbytes gauge\nnacre_capacity_kbytes %llu\n",
		  (unsigned long long)kb_free, (unsigned long long)kb_total);
	double load[3] = { 0, 0, 0 };
	if (getloadavg(load, 3) == 3)
		strbuf_printf(&b, "# HELP nacre_load1 Load average over one minute\n"
			      "# TYPE nacre_load1 gauge\nnacre_load1 %.2f\n",
			  load[0]);

	pthread_mutex_lock(&reg_lock);
	head = reg_head;
	pthread_mutex_unlock(&reg_lock);
	/* The list only grows at the tail, so walking it without the lock is safe. Group
	 * series by name: HELP and TYPE once per name. */
	for (m = head; m; m = m->next) {
		int seen = 0;
		for (n = head; n != m; n = n->next)
			if (strcmp(n->name, m->name) == 0) {
				seen = 1;
				break;
			}
		if (seen)
			continue;
		strbuf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
			  kind_name(m->kind));
		for (n = m; n; n = n->next)
			if (strcmp(n->name, m->name) == 0)
				render_one(&b, n);
	}
	return strbuf_take(&b);
}
