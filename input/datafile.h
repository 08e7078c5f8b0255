/* datafile.h: finding a data file (a model profile, a cluster file, the GPU
 * catalogue) by name: beside the binary, in the data directory that `make
 * install` fills (PREFIX/share/ampplan, compiled in), then in the current
 * directory. */
#ifndef AMPPLAN_DATAFILE_H
#define AMPPLAN_DATAFILE_H

struct err;

/* Finds the data file name of the directory dir ("profiles", "clusters",
 * "gpus": a directory that `make install` copies into the data directory):
 * the first of these that exists and is not a directory (NAME.json: name,
 * with ".json" added unless it ends so):
 *   1. BIN/dir/NAME.json and BIN/../dir/NAME.json, BIN the directory of the
 *      running binary (/proc/self/exe): a binary built in the repository
 *      (./ampplan or build/ampplan) reads the data it was built with;
 *   2. DATADIR/dir/NAME.json, DATADIR the data directory compiled in
 *      (AMPPLAN_DATADIR, the Makefile's DATADIR): an installed binary reads
 *      the data installed with it;
 *   3. dir/NAME.json, relative to the current directory.
 * Where /proc/self/exe cannot be read, 2 and 3 only. Returns a malloc'd
 * path (caller frees), or NULL with e set to "cannot find 'NAME': no file
 * 'BIN/DIR/NAME.json', 'BIN/../DIR/NAME.json', 'DATADIR/DIR/NAME.json' or
 * 'DIR/NAME.json'" (BIN/.. written as the parent's path). */
char *datafile_find(const char *dir, const char *name, struct err *e);

/* Resolves a file named by the user (--model, --cluster): a value that is
 * empty, holds a '/', or names an existing file (not a directory) is a
 * path and is returned as given (the loader then reports a missing file);
 * otherwise as datafile_find(dir, arg). Returns a malloc'd path (caller
 * frees), or NULL with e set to "cannot find 'ARG': no file 'ARG', " and
 * the places datafile_find looked in. */
char *datafile_resolve(const char *dir, const char *arg, struct err *e);

#endif
