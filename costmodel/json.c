/* json.c: JSON input files through cJSON with positioned errors. */
#define _POSIX_C_SOURCE 200809L
#include "json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static char *slurp(const char *path, size_t *len, struct err *e)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		err_set(e, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = (cap ? 2 * cap : 65536);
			buf = xreallocarray(buf, cap, 1);
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		err_set(e, "cannot read '%s': %s", path, strerror(errno));
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
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

/* Rejects objects that repeat a key, anywhere in the document. */
static int check_duplicates(const cJSON *node, struct err *e)
{
	for (const cJSON *a = node ? node->child : NULL; a; a = a->next) {
		if (cJSON_IsObject(node))
			for (const cJSON *b = a->next; b; b = b->next)
				if (strcmp(a->string, b->string) == 0)
					return err_set(e, "duplicate key '%s'", a->string);
		if (check_duplicates(a, e))
			return -1;
	}
	return 0;
}

cJSON *json_load(const char *path, struct err *e)
{
	const char *end = NULL;
	size_t len = 0;
	char *buf = slurp(path, &len, e);
	cJSON *doc;

	if (!buf)
		return NULL;
	if (strlen(buf) != len) {
		err_set(e, "%s: contains a NUL byte", path);
		free(buf);
		return NULL;
	}
	doc = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (!doc) {
		int line, col;

		position(buf, end ? end : buf + len, &line, &col);
		err_set(e, "%s:%d:%d: malformed JSON", path, line, col);
		free(buf);
		return NULL;
	}
	free(buf);
	if (check_duplicates(doc, e)) {
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
