/* datafile.h: finding a data file (a model profile, a cluster file, the GPU
 * catalogue) by name, in the current directory and then in the data
 * directory that `make install` fills (PREFIX/share/ampplan, compiled in). */
#ifndef AMPPLAN_DATAFILE_H
#define AMPPLAN_DATAFILE_H

struct err;

/* Finds the data file name of the directory dir ("profiles", "clusters",
 * "gpus": a directory that `make install` copies into the data directory):
 * the first of these that exists and is not a directory:
 *   1. dir/name.json, relative to the current directory (dir/name when
 *      name already ends in ".json");
 *   2. DATADIR/dir/name.json (likewise), DATADIR the data directory
 *      compiled in (AMPPLAN_DATADIR, the Makefile's DATADIR).
 * Returns a malloc'd path (caller frees), or NULL with e set to
 * "cannot find 'NAME': no file 'DIR/NAME.json' or 'DATADIR/DIR/NAME.json'". */
char *datafile_find(const char *dir, const char *name, struct err *e);

/* Resolves a file named by the user (--model, --cluster): a value that is
 * empty, holds a '/', or names an existing file (not a directory) is a
 * path and is returned as given (the loader then reports a missing file);
 * otherwise as datafile_find(dir, arg). Returns a malloc'd path (caller
 * frees), or NULL with e set to "cannot find 'ARG': no file 'ARG',
 * 'DIR/ARG.json' or 'DATADIR/DIR/ARG.json'". */
char *datafile_resolve(const char *dir, const char *arg, struct err *e);

#endif
