/* outfile.h: the output files of one run (CSV, JSON, launch files) written as
 * one transaction: all or none of them change. */
#ifndef AMPPLAN_OUTFILE_H
#define AMPPLAN_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

struct err;
struct outfile_set;

/* An empty set; free it with outfile_free (which removes whatever an
 * unfinished outfile_commit left behind). */
struct outfile_set *outfile_create(void);
void outfile_free(struct outfile_set *t); /* t may be NULL */

/* Asks for dir and its missing parents to exist when the set is committed.
 * Directories that commit creates are removed again if it fails. */
void outfile_mkdir(struct outfile_set *t, const char *dir);

/* Adds the file path ("-" for stdout) with text (len bytes, copied) and
 * permission bits mode (before the umask; used for newly written regular
 * files). Returns 0, or -1 with e set when path names the same file as one
 * added before (also through another spelling: same device and inode, or the
 * same resolved directory and name); outfile_conflict(t) is then true. */
int outfile_add(struct outfile_set *t, const char *path, const char *text, size_t len,
		unsigned mode, struct err *e);

/* True after outfile_add refused a path named twice (a usage error). */
bool outfile_conflict(const struct outfile_set *t);

/* True if path is written to stdout: "-", or the file stdout is open on
 * (/dev/stdout, /proc/self/fd/1, the file stdout is redirected to). */
bool outfile_is_stdout(const char *path);

/* True if a and b name the same file (see outfile_add); "-" is stdout. */
bool outfile_same(const char *a, const char *b);

/* Writes every file of t:
 * 1. creates the directories of outfile_mkdir;
 * 2. writes each regular (or missing) target to a temporary beside it,
 *    ".NAME.XXXXXX" in the same directory; a symbolic link to a regular file
 *    is written through: the file it points to is replaced, the link stays;
 * 3. writes the targets that are not regular files in place, never replacing
 *    or removing them: stdout ("-", or a path that is the file stdout is
 *    open on, such as /dev/stdout), devices, FIFOs, pipes (/proc/self/fd/N);
 * 4. only when all of that succeeded, renames the temporaries into place.
 * On a failure in steps 1-3 the temporaries and created directories are
 * removed, so no regular file the user had is changed. Returns 0, or -1 with
 * e set ("cannot write 'x': No space left on device"). */
int outfile_commit(struct outfile_set *t, struct err *e);

#endif
