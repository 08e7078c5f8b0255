/* datafile.c: finding a data file by name (datafile.h). */
#include "datafile.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The directory of the running binary (/proc/self/exe, links resolved)
 * into buf (n bytes), and its parent into up; false where it cannot be
 * read (then both are empty). */
static bool binary_dirs(char *buf, char *up, size_t n)
{
	ssize_t len;
	char *slash;

	buf[0] = up[0] = '\0';
	len = readlink("/proc/self/exe", buf, n - 1);
	if (len <= 0 || (size_t)len >= n - 1)
		return false;
	buf[len] = '\0';
	if (!(slash = strrchr(buf, '/')))
		return buf[0] = '\0', false;
	*slash = '\0';
	snprintf(up, n, "%s", buf);
	if ((slash = strrchr(up, '/')))
		*slash = '\0';
	if (!buf[0])
		snprintf(buf, n, "/");
	if (!up[0])
		snprintf(up, n, "/");
	return true;
}

/* datafile_find, and on failure the error with "'first', " before the
 * places looked in when first is not NULL. */
static char *find(const char *dir, const char *name, const char *first, struct err *e)
{
	char bin[PATH_MAX], up[PATH_MAX];
	const char *base[4];
	char *path[4] = { NULL };
	int n = 0;

	if (binary_dirs(bin, up, sizeof bin)) {
		base[n++] = bin;
		base[n++] = up;
	}
	base[n++] = AMPPLAN_DATADIR;
	base[n++] = NULL; /* the current directory */
	for (int i = 0; i < n; i++) {
		path[i] = join(base[i], dir, name);
		if (is_file(path[i])) {
			char *found = path[i];

			path[i] = NULL;
			for (int j = 0; j < i; j++)
				free(path[j]);
			return found;
		}
	}
	if (n == 4)
		err_set(e, "cannot find '%s': no file %s%s%s'%s', '%s', '%s' or '%s'", name,
			first ? "'" : "", first ? first : "", first ? "', " : "", path[0], path[1],
			path[2], path[3]);
	else
		err_set(e, "cannot find '%s': no file %s%s%s'%s' or '%s'", name, first ? "'" : "",
			first ? first : "", first ? "', " : "", path[0], path[1]);
	for (int i = 0; i < n; i++)
		free(path[i]);
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
