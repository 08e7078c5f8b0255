/* outfile.h: the output files of one run (CSV, JSON, launch files) written as
 * one transaction: all or none of them change. */
#ifndef AMPPLAN_OUTFILE_H
#define AMPPLAN_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct err;
struct outfile_set;

/* Writes one output file's content to f (a temporary, stdout, or a device
 * opened in place) from arg. Returns 0, or -1 with e set where it cannot
 * produce the content; a failed write on f is found by the commit (ferror),
 * so the writer need not check each call. */
typedef int (*outfile_writer)(FILE *f, void *arg, struct err *e);

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

/* Like outfile_add, but the content is written by write(f, arg, e) while
 * the set is committed, straight into the temporary (or stdout, or the
 * device), so that it is never held in memory whole. arg is owned by the
 * set from here on, also when -1 is returned: outfile_free calls
 * free_arg(arg) (free_arg may be NULL). */
int outfile_add_writer(struct outfile_set *t, const char *path, outfile_writer write, void *arg,
		       void (*free_arg)(void *), unsigned mode, struct err *e);

/* The directory dir holds launch files that t writes (those added so far
 * whose path is dir/NAME). The commit then records them, each with an
 * FNV-1a 64 hash of its content, in dir/ampplan.manifest (OUTFILE_MANIFEST),
 * and before writing anything refuses (-1, e set, nothing changed) where a
 * file it would replace exists but is not in the manifest or was changed
 * since, unless force. Files the old manifest lists that t does not write
 * any more are removed after the commit (when unchanged, or with force);
 * files the manifest does not list and t does not write are left alone. */
void outfile_manifest(struct outfile_set *t, const char *dir, bool force);

#define OUTFILE_MANIFEST "ampplan.manifest"

/* Bytes the last outfile_commit of t wrote to path (as added), a regular
 * file, or -1 if none is known (not committed; stdout, a device, a FIFO). */
long long outfile_written(const struct outfile_set *t, const char *path);

/* Returns 0 when outputs a and b (paths, "-" for stdout) may both be
 * written in one run, else -1 with e set: both on stdout (they would
 * interleave), or the same regular or missing file (through any spelling,
 * as outfile_add). Two outputs to one device or FIFO are allowed. */
int outfile_check_pair(const char *a, const char *b, struct err *e);

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
 *    ".NAME.XXXXXX" in the same directory, with the mode of the file it
 *    replaces (else the entry's mode less the umask); a symbolic link to a
 *    regular file is written through: the file it points to is replaced,
 *    the link stays;
 * 3. writes the targets that are not regular files in place, never replacing
 *    or removing them: stdout ("-", or a path that is the file stdout is
 *    open on, such as /dev/stdout), devices, FIFOs, pipes (/proc/self/fd/N);
 * 4. only when all of that succeeded, renames the temporaries into place.
 * On a failure in steps 1-3 the temporaries and created directories are
 * removed, so no regular file the user had is changed. SIGINT, SIGTERM and
 * SIGHUP during the commit remove the temporaries and the directories it
 * created (from a list kept ready for the handler), then end the process by
 * the same signal (the shell reports 130, 143, 129). Returns 0, or -1 with
 * e set ("cannot write 'x': No space left on device"). */
int outfile_commit(struct outfile_set *t, struct err *e);

#endif
