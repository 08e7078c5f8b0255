/* json.h: reading JSON input files with cJSON, with errors that name the
 * file, the line:column of a syntax error, or the path of a bad field. */
#ifndef AMPPLAN_JSON_H
#define AMPPLAN_JSON_H

#include <stdbool.h>

struct err;
struct cJSON;

/* Reads and parses the file at path. Returns the document (caller frees with
 * cJSON_Delete) or NULL with e set to "cannot open 'path': <strerror>" or
 * "path:line:col: malformed JSON". Duplicate keys in an object are an error
 * ("duplicate key 'x'"), since cJSON would silently keep the first. */
struct cJSON *json_load(const char *path, struct err *e);

/* Typed field readers. obj is an object, key its member, where the dotted
 * path of obj used in messages (e.g. "groups[1]"; "" for the root).
 * A missing member is an error when required, else *out keeps its value.
 * Return 0, or -1 with e set to e.g. "field 'groups[1].nodes' must be an
 * integer in [1, 100000]". Numbers must be finite. */
int json_int(const struct cJSON *obj, const char *where, const char *key,
	     bool required, long min, long max, int *out, struct err *e);
int json_num(const struct cJSON *obj, const char *where, const char *key,
	     bool required, double min, double max, double *out, struct err *e);
int json_bool(const struct cJSON *obj, const char *where, const char *key,
	      bool required, bool *out, struct err *e);
/* *out points into the document (not copied); valid while obj lives. */
int json_str(const struct cJSON *obj, const char *where, const char *key,
	     bool required, const char **out, struct err *e);

/* Fails with "unknown field 'where.key'" if obj has a member whose name is
 * not in allowed[] (NULL-terminated): it catches typos and wrong units. */
int json_keys(const struct cJSON *obj, const char *where,
	      const char *const allowed[], struct err *e);

#endif
