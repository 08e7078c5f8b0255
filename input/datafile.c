/* datafile.c: finding a data file by name (datafile.h). */
#include "datafile.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

#ifndef AMPPLAN_DATADIR
#error "AMPPLAN_DATADIR (the installed data directory) must be defined: build with the Makefile"
#endif

/* Whether path names something that exists and is not a directory. */
static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* "base/dir/name[.json]" (base NULL: "dir/name[.json]"); malloc'd. */
static char *join(const char *base, const char *dir, const char *name)
{
	size_t n = strlen(name);
	const char *ext = n >= 5 && strcmp(name + n - 5, ".json") == 0 ? "" : ".json";
	size_t len = (base ? strlen(base) + 1 : 0) + strlen(dir) + 1 + n + strlen(ext) + 1;
	char *p = xmalloc(len);

	snprintf(p, len, "%s%s%s/%s%s", base ? base : "", base ? "/" : "", dir, name, ext);
	return p;
}

/* datafile_find, and on failure the error with "'first', " before the
 * places looked in when first is not NULL. */
static char *find(const char *dir, const char *name, const char *first, struct err *e)
{
	char *local = join(NULL, dir, name), *installed;

	if (is_file(local))
		return local;
	installed = join(AMPPLAN_DATADIR, dir, name);
	if (is_file(installed)) {
		free(local);
		return installed;
	}
	err_set(e, "cannot find '%s': no file %s%s%s'%s' or '%s'", name, first ? "'" : "",
		first ? first : "", first ? "', " : "", local, installed);
	free(local);
	free(installed);
	return NULL;
}

char *datafile_find(const char *dir, const char *name, struct err *e)
{
	return find(dir, name, NULL, e);
}

char *datafile_resolve(const char *dir, const char *arg, struct err *e)
{
	if (!*arg || strchr(arg, '/') || is_file(arg))
		return xstrdup(arg);
	return find(dir, arg, arg, e);
}
