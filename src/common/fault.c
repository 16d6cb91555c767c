/* fault.c - named fault points (see fault.h). */
#include "common/fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

enum fault_mode { MODE_OFF, MODE_ONCE, MODE_EVERY, MODE_SKIP, MODE_PROB };

struct fault_state {
	enum fault_mode mode;
	uint32_t n;      /* every:N, skip:N, prob:P */
	uint64_t passes; /* passes seen while armed (that matched the opcode filter) */
	int opcode;      /* -1 = any request */
	struct fault_hit hit;
};

static const char *const point_names[FAULT_POINT_COUNT_] = {
	[FAULT_MDS_COMMIT_BEFORE] = "mds.commit_before",
	[FAULT_MDS_COMMIT_AFTER] = "mds.commit_after",
	[FAULT_OSS_WRITE_BEFORE] = "oss.write_before",
	[FAULT_OSS_WRITE_AFTER] = "oss.write_after",
	[FAULT_RPC_DROP_REQUEST] = "rpc.drop_request",
	[FAULT_RPC_DROP_REPLY] = "rpc.drop_reply",
	[FAULT_RPC_DELAY_REPLY] = "rpc.delay_reply",
	[FAULT_RPC_CLOSE_CONN] = "rpc.close_conn",
	[FAULT_MDS_DB_FULL] = "mds.db_full",
};

int fault_any_armed;
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fault_state points[FAULT_POINT_COUNT_]; /* protected by fault_lock */
static uint64_t rand_state = 0x9e3779b97f4a7c15ull;    /* protected by fault_lock */

/* Called with fault_lock held. */
static void update_any(void)
{
	int any = 0;

	for (int i = 0; i < FAULT_POINT_COUNT_; i++)
		any |= points[i].mode != MODE_OFF;
	__atomic_store_n(&fault_any_armed, any, __ATOMIC_RELAXED);
}

const char *fault_point_name(enum fault_point point)
{
	return (unsigned)point < FAULT_POINT_COUNT_ ? point_names[point] : "?";
}

int fault_check(enum fault_point point, uint16_t opcode, struct fault_hit *hit)
{
	struct fault_state *p;
	int fire = 0;

	if ((unsigned)point >= FAULT_POINT_COUNT_)
		return 0;
	pthread_mutex_lock(&fault_lock);
	p = &points[point];
	if (p->mode == MODE_OFF || (p->opcode >= 0 && p->opcode != opcode)) {
		pthread_mutex_unlock(&fault_lock);
		return 0;
	}
	p->passes++;
	switch (p->mode) {
	case MODE_ONCE:
		fire = 1;
		p->mode = MODE_OFF;
		update_any();
		break;
	case MODE_EVERY:
		fire = p->passes % p->n == 0;
		break;
	case MODE_SKIP:
		fire = p->passes > p->n;
		break;
	case MODE_PROB:
		rand_state ^= rand_state << 13; /* xorshift64: no shared libc state */
		rand_state ^= rand_state >> 7;
		rand_state ^= rand_state << 17;
		fire = rand_state % 100 < p->n;
		break;
	case MODE_OFF:
		break;
	}
	if (fire && hit)
		*hit = p->hit;
	pthread_mutex_unlock(&fault_lock);
	if (fire)
		LOG_WARN("fault", "fault point %s fired", point_names[point]);
	return fire;
}

void fault_crash(enum fault_point point)
{
	LOG_ERR("fault", "fault point %s: crashing on purpose", fault_point_name(point));
	_exit(FAULT_CRASH_STATUS);
}

static int point_by_name(const char *name, size_t len)
{
	for (int i = 0; i < FAULT_POINT_COUNT_; i++)
		if (strlen(point_names[i]) == len && memcmp(point_names[i], name, len) == 0)
			return i;
	return -1;
}

/* Cuts the next sep-separated token off *s in place; NULL when none is left. */
static char *next_token(char **s, char sep)
{
	char *tok = *s, *end;

	if (!tok)
		return NULL;
	end = strchr(tok, sep);
	if (end) {
		*end = '\0';
		*s = end + 1;
	} else {
		*s = NULL;
	}
	return tok;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	int64_t v;

	if (parse_i64(s, min, max, &v))
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* Parses "MODE[,key=val...]" for one point into st. */
static int parse_setting(char *s, struct fault_state *st, fault_op_resolver resolve,
			 char *err, size_t err_len)
{
	char *rest = s, *tok = next_token(&rest, ',');

	memset(st, 0, sizeof(*st));
	st->opcode = -1;
	if (!tok || !*tok) {
		snprintf(err, err_len, "missing mode (once, every:N, skip:N, prob:P or off)");
		return -EINVAL;
	}
	if (strcmp(tok, "off") == 0) {
		st->mode = MODE_OFF;
	} else if (strcmp(tok, "once") == 0) {
		st->mode = MODE_ONCE;
	} else if (strncmp(tok, "every:", 6) == 0 && !parse_u32(tok + 6, 1, UINT32_MAX, &st->n)) {
		st->mode = MODE_EVERY;
	} else if (strncmp(tok, "skip:", 5) == 0 && !parse_u32(tok + 5, 0, UINT32_MAX, &st->n)) {
		st->mode = MODE_SKIP;
	} else if (strncmp(tok, "prob:", 5) == 0 && !parse_u32(tok + 5, 1, 100, &st->n)) {
		st->mode = MODE_PROB;
	} else {
		snprintf(err, err_len, "bad mode '%s' (once, every:N, skip:N, prob:P or off)", tok);
		return -EINVAL;
	}
	while ((tok = next_token(&rest, ',')) != NULL) {
		char *val = strchr(tok, '=');
		int64_t v;

		if (!val) {
			snprintf(err, err_len, "'%s' is not key=value", tok);
			return -EINVAL;
		}
		*val++ = '\0';
		if (strcmp(tok, "op") == 0) {
			int op = resolve ? resolve(val) : -1;
			if (op < 0 && parse_i64(val, 0, 65535, &v) == 0)
				op = (int)v;
			if (op < 0) {
				snprintf(err, err_len, "unknown opcode '%s'", val);
				return -EINVAL;
			}
			st->opcode = op;
		} else if (strcmp(tok, "ms") == 0 && !parse_u32(val, 0, 600000, &st->hit.ms)) {
			continue;
		} else if (strcmp(tok, "err") == 0 && parse_i64(val, 1, 4095, &v) == 0) {
			st->hit.err = (int)-v;
			if (st->hit.action == FAULT_ACT_DEFAULT)
				st->hit.action = FAULT_ACT_ERROR;
		} else if (strcmp(tok, "action") == 0 && strcmp(val, "crash") == 0) {
			st->hit.action = FAULT_ACT_CRASH;
		} else if (strcmp(tok, "action") == 0 && strcmp(val, "error") == 0) {
			st->hit.action = FAULT_ACT_ERROR;
		} else {
			snprintf(err, err_len, "bad setting '%s=%s' (op=, ms=, err=, action=)", tok,
				 val);
			return -EINVAL;
		}
	}
	if (st->hit.action == FAULT_ACT_ERROR && st->hit.err == 0)
		st->hit.err = -EIO;
	return 0;
}

int fault_set(const char *spec, fault_op_resolver resolve, char *err, size_t err_len)
{
	struct fault_state parsed[FAULT_POINT_COUNT_];
	int named[FAULT_POINT_COUNT_] = {0};
	char *copy, *rest, *item;
	char dummy[8];
	int rc = 0, all_off = 0;

	if (!err || !err_len) {
		err = dummy;
		err_len = sizeof(dummy);
	}
	err[0] = '\0';
	copy = strdup(spec ? spec : "");
	if (!copy)
		return -ENOMEM;
	/* Parse everything first: a bad spec changes nothing. */
	rest = copy;
	while ((item = next_token(&rest, ';')) != NULL) {
		char *eq = strchr(item, '=');
		int idx;

		while (*item == ' ')
			item++;
		if (!*item)
			continue;
		if (!eq) {
			snprintf(err, err_len, "'%s' is not POINT=MODE", item);
			rc = -EINVAL;
			break;
		}
		if ((size_t)(eq - item) == 3 && strncmp(item, "all", 3) == 0 &&
		    strcmp(eq + 1, "off") == 0) {
			all_off = 1;
			continue;
		}
		idx = point_by_name(item, (size_t)(eq - item));
		if (idx < 0) {
			snprintf(err, err_len, "unknown fault point '%.*s'", (int)(eq - item), item);
			rc = -EINVAL;
			break;
		}
		char sub[256];
		str_copy(sub, eq + 1, sizeof(sub));
		rc = parse_setting(sub, &parsed[idx], resolve, err, err_len);
		if (rc) {
			char what[300];
			snprintf(what, sizeof(what), "%s: %s", point_names[idx], err);
			str_copy(err, what, err_len);
			break;
		}
		named[idx] = 1;
	}
	free(copy);
	if (rc)
		return rc;
	pthread_mutex_lock(&fault_lock);
	for (int i = 0; i < FAULT_POINT_COUNT_; i++) {
		if (all_off)
			points[i].mode = MODE_OFF;
		if (named[i])
			points[i] = parsed[i];
	}
	update_any();
	pthread_mutex_unlock(&fault_lock);
	for (int i = 0; i < FAULT_POINT_COUNT_; i++)
		if (named[i])
			LOG_INFO("fault", "fault point %s %s", point_names[i],
				 parsed[i].mode == MODE_OFF ? "disarmed" : "armed");
	return 0;
}

int fault_init_env(fault_op_resolver resolve, char *err, size_t err_len)
{
	const char *spec = getenv("NACRE_FAULT");

	if (!spec || !spec[0])
		return 0;
	return fault_set(spec, resolve, err, err_len);
}

/* Appends to buf (len bytes, used so far *used) what fmt makes; 0, or -1 when it does not
 * fit (then buf keeps what fitted before). */
static int append(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *used) {
		buf[*used] = '\0';
		return -1;
	}
	*used += (size_t)n;
	return 0;
}

char *fault_describe(char *buf, size_t len)
{
	size_t used = 0;

	if (!buf || !len)
		return buf;
	buf[0] = '\0';
	pthread_mutex_lock(&fault_lock);
	for (int i = 0; i < FAULT_POINT_COUNT_; i++) {
		const struct fault_state *p = &points[i];
		size_t start = used;
		char mode[32];

		switch (p->mode) {
		case MODE_OFF:
			continue;
		case MODE_ONCE:
			snprintf(mode, sizeof(mode), "once");
			break;
		case MODE_EVERY:
			snprintf(mode, sizeof(mode), "every:%u", p->n);
			break;
		case MODE_SKIP:
			snprintf(mode, sizeof(mode), "skip:%u", p->n);
			break;
		case MODE_PROB:
			snprintf(mode, sizeof(mode), "prob:%u", p->n);
			break;
		}
		/* Every setting is written, so that the spec read back arms the same point. */
		if (append(buf, len, &used, "%s%s=%s", used ? ";" : "", point_names[i], mode) ||
		    (p->opcode >= 0 && append(buf, len, &used, ",op=%d", p->opcode)) ||
		    (p->hit.ms && append(buf, len, &used, ",ms=%u", p->hit.ms)) ||
		    (p->hit.action == FAULT_ACT_ERROR &&
		     append(buf, len, &used, ",err=%d", -p->hit.err)) ||
		    (p->hit.action == FAULT_ACT_CRASH &&
		     append(buf, len, &used, ",action=crash"))) {
			buf[start] = '\0'; /* no half-written point */
			break;
		}
	}
	pthread_mutex_unlock(&fault_lock);
	return buf;
}
