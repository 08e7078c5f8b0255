/* json.h: reading JSON input files with cJSON, with errors that name the
 * file, the line:column of a syntax error, or the path of a bad field. */
#ifndef AMPPLAN_JSON_H
#define AMPPLAN_JSON_H

#include <stdbool.h>
#include <stddef.h>

struct err;
struct cJSON;

/* Limits on every JSON input file (model profiles, Hugging Face configs,
 * cluster files), checked by json_load; each failure names the file:
 *   JSON_MAX_BYTES    64 MiB: a larger file (or a device such as /dev/zero,
 *                     a pipe or a FIFO that delivers more) stops with
 *                     "FILE: larger than 64 MiB", checked while reading;
 *   JSON_FIFO_WAIT_S  5 s: a named FIFO that delivers no byte (and is not
 *                     closed by a writer) within this time fails with
 *                     "FILE: no data after 5 s (a FIFO with no writer?)"
 *                     instead of blocking forever; a pipe reached through
 *                     a link (/dev/stdin, /dev/fd/N, bash's <(...)) has its
 *                     writer and is waited for;
 *   JSON_MAX_DEPTH    64 nested arrays or objects ("FILE: nesting deeper
 *                     than 64 at LINE:COL", the bracket that goes deeper);
 *   JSON_MAX_KEYS     10,000 keys in one object ("FILE: object 'PATH' has
 *                     more than 10000 keys");
 *   JSON_MAX_VALUES   1,000,000 values (numbers, strings, arrays, objects;
 *                     counted as 1 + commas + brackets before parsing), so
 *                     that the parsed tree stays within about 100 MB
 *                     ("FILE: more than 1000000 values ... at LINE:COL");
 *   no NUL byte in the file, no key twice in one object ("duplicate key 'K'
 *   in 'PATH'", found in n log n time); every key and string valid UTF-8
 *   without control characters (U+0000-U+001F, U+007F-U+009F): "field 'PATH'
 *   is not valid UTF-8", "field 'PATH' contains control character U+000A",
 *   "key N of 'PATH' ..." for a key. The loaders check each number's range
 *   (json_num also refuses subnormal numbers). */
#define JSON_MAX_BYTES	 (64L << 20)
#define JSON_MAX_DEPTH	 64
#define JSON_MAX_KEYS	 10000
#define JSON_MAX_VALUES	 1000000
#define JSON_FIFO_WAIT_S 5

/* Reads and parses the file at path within the limits above. Returns the
 * document (caller frees with cJSON_Delete) or NULL with e set to "cannot
 * open 'path': <strerror>", "path:line:col: malformed JSON" or "path: " and
 * the broken limit. Duplicate keys in an object are an error ("duplicate key
 * 'x'"), since cJSON would silently keep the first. */
struct cJSON *json_load(const char *path, struct err *e);

/* Whether s (n bytes) is valid UTF-8 (no overlong form, surrogate or code
 * point above U+10FFFF). Returns 0 if valid and free of control characters,
 * 1 if invalid UTF-8, or 2 + the code point of the first control character
 * (U+0000-U+001F, U+007F-U+009F). */
long json_utf8_check(const char *s, size_t n);

/* Typed field readers. obj is an object, key its member, where the dotted
 * path of obj used in messages (e.g. "groups[1]"; "" for the root).
 * A missing member is an error when required, else *out keeps its value.
 * Return 0, or -1 with e set to e.g. "field 'groups[1].nodes' must be an
 * integer in [1, 100000]". Numbers must be finite and not subnormal (below 2.2e-308
 * in magnitude but not 0: "must be 0 or at least 2.22507e-308 ..."). */
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
