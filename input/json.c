/* json.c: JSON input files through cJSON with positioned errors. */
#define _POSIX_C_SOURCE 200809L
#include "json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Opens path without blocking (a FIFO with no writer would block open),
 * then waits at most JSON_FIFO_WAIT_S for the first byte of a named FIFO
 * (path itself a FIFO, not a link such as /dev/fd/63 or /dev/stdin to a
 * pipe, which has its writer already and may be slow). Returns the
 * descriptor, or -1 with e set. */
static int open_input(const char *path, struct err *e)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st, lst;

	if (fd < 0) {
		err_set(e, "cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > JSON_MAX_BYTES) {
		close(fd);
		return err_set(e, "%s: larger than %ld MiB", path,
			       JSON_MAX_BYTES >> 20);
	}
	if (lstat(path, &lst) == 0 && S_ISFIFO(lst.st_mode)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int rc;

		do
			rc = poll(&p, 1, JSON_FIFO_WAIT_S * 1000);
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			close(fd);
			return err_set(e, "%s: no data after %d s (a FIFO with "
					  "no writer?)",
				       path, JSON_FIFO_WAIT_S);
		}
	}
	/* Blocking reads from here on: a pipe's writer may be slow. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* Reads the whole file, at most JSON_MAX_BYTES, NUL-terminated. */
static char *slurp(const char *path, size_t *len, struct err *e)
{
	int fd = open_input(path, e);
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t got;

		if (n + 4096 + 1 > cap) {
			cap = (cap ? 2 * cap : 65536);
			if (cap > (size_t)JSON_MAX_BYTES + 2)
				cap = (size_t)JSON_MAX_BYTES + 2;
			buf = xreallocarray(buf, cap, 1);
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err_set(e, "cannot read '%s': %s", path, strerror(errno));
			goto fail;
		}
		n += (size_t)got;
		if (n > (size_t)JSON_MAX_BYTES) {
			err_set(e, "%s: larger than %ld MiB", path,
				JSON_MAX_BYTES >> 20);
			goto fail;
		}
		if (got == 0)
			break;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

static void position(const char *buf, const char *at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *p = buf; p < at; p++) {
		if (*p == '\n') {
			++*line;
			*col = 1;
		} else {
			++*col;
		}
	}
}

/* Scans the text for the first '[' or '{' nested deeper than
 * JSON_MAX_DEPTH outside strings (*why 'd'), a \u0000 escape inside a
 * string (*why '0'; cJSON would cut the string there), or the ',', '[' or
 * '{' past which the document could hold more than JSON_MAX_VALUES values
 * (*why 'v': a valid document holds at most 1 + commas + containers
 * values). Returns it, or NULL. Linear time. */
static const char *scan(const char *buf, size_t len, char *why)
{
	int depth = 0;
	long values = 1;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_str) {
			if (c == '\\' && strncmp(buf + i + 1, "u0000", 5) == 0) {
				*why = '0';
				return buf + i;
			}
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
			continue;
		}
		if (c == '[' || c == '{') {
			if (++depth > JSON_MAX_DEPTH) {
				*why = 'd';
				return buf + i;
			}
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
		if ((c == '[' || c == '{' || c == ',') && ++values > JSON_MAX_VALUES) {
			*why = 'v';
			return buf + i;
		}
	}
	return NULL;
}

long json_utf8_check(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		unsigned long cp;
		int more;

		if (c < 0x80) {
			cp = c;
			more = 0;
		} else if (c >= 0xc2 && c <= 0xdf) {
			cp = c & 0x1f;
			more = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			cp = c & 0x0f;
			more = 2;
		} else if (c >= 0xf0 && c <= 0xf4) {
			cp = c & 0x07;
			more = 3;
		} else {
			return 1;
		}
		if (n - i - 1 < (size_t)more)
			return 1;
		for (int k = 1; k <= more; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 1;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((more == 2 && cp < 0x800) || (more == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 1;
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			return 2 + (long)cp;
		i += (size_t)more + 1;
	}
	return 0;
}

/* Fails naming what (e.g. "field 'a.b'") if s is not clean UTF-8. */
static int check_text(const char *s, const char *what, struct err *e)
{
	long bad = json_utf8_check(s, strlen(s));

	if (bad == 1)
		return err_set(e, "%s is not valid UTF-8", what);
	if (bad > 1)
		return err_set(e, "%s contains control character U+%04lX", what,
			       (unsigned long)(bad - 2));
	return 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp((*(const cJSON *const *)a)->string,
		      (*(const cJSON *const *)b)->string);
}

/* Checks node and everything below it (path: node's dotted path, "" for the
 * root): keys and strings clean UTF-8, at most JSON_MAX_KEYS keys per
 * object, none twice (sorted: n log n for n keys, and n <= JSON_MAX_KEYS,
 * so at most log2(10000) < 14 comparisons per key: linear in the file). */
static int check_tree(const cJSON *node, const char *path, struct err *e)
{
	const cJSON **keys = NULL;
	const char *shown = *path ? path : "(root)";
	char what[600], sub[512];
	int n = 0, i = 0, rc = -1;

	if (cJSON_IsString(node)) {
		snprintf(what, sizeof what, "field '%s'", shown);
		return check_text(node->valuestring, what, e);
	}
	if (cJSON_IsObject(node)) {
		for (const cJSON *a = node->child; a; a = a->next)
			if (++n > JSON_MAX_KEYS)
				return err_set(e, "object '%s' has more than %d keys",
					       shown, JSON_MAX_KEYS);
		keys = xcalloc((size_t)n, sizeof *keys);
	}
	for (const cJSON *a = node->child; a; a = a->next, i++) {
		if (keys) {
			snprintf(what, sizeof what, "key %d of '%s'", i + 1, shown);
			if (check_text(a->string, what, e))
				goto fail;
			keys[i] = a;
			snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "",
				 a->string);
		} else {
			snprintf(sub, sizeof sub, "%s[%d]", path, i);
		}
		if (check_tree(a, sub, e))
			goto fail;
	}
	if (keys && n > 1) {
		qsort(keys, (size_t)n, sizeof *keys, by_key);
		for (i = 1; i < n; i++)
			if (strcmp(keys[i - 1]->string, keys[i]->string) == 0) {
				err_set(e, "duplicate key '%s' in '%s'",
					keys[i]->string, shown);
				goto fail;
			}
	}
	rc = 0;
fail:
	free(keys);
	return rc;
}

cJSON *json_load(const char *path, struct err *e)
{
	const char *end = NULL, *bad;
	size_t len = 0;
	char *buf = slurp(path, &len, e);
	cJSON *doc;
	int line, col;
	char why;

	if (!buf)
		return NULL;
	if (strlen(buf) != len) {
		err_set(e, "%s: contains a NUL byte", path);
		free(buf);
		return NULL;
	}
	bad = scan(buf, len, &why);
	if (bad) {
		position(buf, bad, &line, &col);
		if (why == '0')
			err_set(e, "%s:%d:%d: a string holds \\u0000", path, line, col);
		else if (why == 'd')
			err_set(e, "%s: nesting deeper than %d at %d:%d", path,
				JSON_MAX_DEPTH, line, col);
		else
			err_set(e, "%s: more than %d values (numbers, strings, arrays "
				   "and objects) at %d:%d",
				path, JSON_MAX_VALUES, line, col);
		free(buf);
		return NULL;
	}
	doc = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (!doc) {
		position(buf, end ? end : buf + len, &line, &col);
		err_set(e, "%s:%d:%d: malformed JSON", path, line, col);
		free(buf);
		return NULL;
	}
	free(buf);
	if (check_tree(doc, "", e)) {
		err_prefix(e, "%s", path);
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

static const cJSON *member(const cJSON *obj, const char *where, const char *key,
			   bool required, struct err *e, int *rc)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*rc = 0;
	if (!v && required)
		*rc = err_set(e, "missing field '%s%s%s'", where, *where ? "." : "", key);
	return v;
}

int json_num(const cJSON *obj, const char *where, const char *key, bool required,
	     double min, double max, double *out, struct err *e)
{
	int rc;
	const cJSON *v = member(obj, where, key, required, e, &rc);

	if (!v)
		return rc;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < min || v->valuedouble > max)
		return err_set(e, "field '%s%s%s' must be a number in [%g, %g]",
			       where, *where ? "." : "", key, min, max);
	if (fpclassify(v->valuedouble) == FP_SUBNORMAL)
		return err_set(e, "field '%s%s%s' must be 0 or at least %g in "
				  "magnitude (%g is subnormal: the costs would "
				  "overflow)",
			       where, *where ? "." : "", key, DBL_MIN, v->valuedouble);
	*out = v->valuedouble;
	return 0;
}

int json_int(const cJSON *obj, const char *where, const char *key, bool required,
	     long min, long max, int *out, struct err *e)
{
	int rc;
	const cJSON *v = member(obj, where, key, required, e, &rc);

	if (!v)
		return rc;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < (double)min || v->valuedouble > (double)max)
		return err_set(e, "field '%s%s%s' must be an integer in [%ld, %ld]",
			       where, *where ? "." : "", key, min, max);
	*out = (int)v->valuedouble;
	return 0;
}

int json_bool(const cJSON *obj, const char *where, const char *key, bool required,
	      bool *out, struct err *e)
{
	int rc;
	const cJSON *v = member(obj, where, key, required, e, &rc);

	if (!v)
		return rc;
	if (!cJSON_IsBool(v))
		return err_set(e, "field '%s%s%s' must be true or false",
			       where, *where ? "." : "", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

int json_str(const cJSON *obj, const char *where, const char *key, bool required,
	     const char **out, struct err *e)
{
	int rc;
	const cJSON *v = member(obj, where, key, required, e, &rc);

	if (!v)
		return rc;
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return err_set(e, "field '%s%s%s' must be a non-empty string",
			       where, *where ? "." : "", key);
	*out = v->valuestring;
	return 0;
}

int json_keys(const cJSON *obj, const char *where, const char *const allowed[],
	      struct err *e)
{
	for (const cJSON *it = obj->child; it; it = it->next) {
		int i = 0;

		while (allowed[i] && strcmp(allowed[i], it->string) != 0)
			i++;
		if (!allowed[i])
			return err_set(e, "unknown field '%s%s%s'", where,
				       *where ? "." : "", it->string);
	}
	return 0;
}
