/* runs.h: reading a file of measured runs (RUNS.csv) for `ampplan
 * calibrate` (runs.c). */
#ifndef AMPPLAN_RUNS_H
#define AMPPLAN_RUNS_H

struct err;

/* One measured run, a row of the file. */
struct run_row {
	char *model;	    /* the "model" column (a profile or config path or
				NAME); NULL when the file has no such column or
				the field is empty: the --model of the command */
	char *spec;	    /* the "spec" column, in --compare's syntax */
	double measured_s;  /* seconds per iteration; INFINITY: the run
				failed out of memory ("inf") */
	double peak_gib;    /* "measured_peak_GiB" (GiB per GPU of the
				fullest); < 0: not given */
	int line, spec_col; /* line of the row and column of its spec field,
				from 1, for messages */
};

/* The runs of a file. Owns all its memory. */
struct runs {
	char *path;
	struct run_row *row;
	int n;
};

/* Most runs one file holds, and a bound on a field's bytes. */
#define RUNS_MAX       10000
#define RUNS_MAX_FIELD 4096

/* Loads path, a CSV file (libcsv, RFC 4180) whose first line names its
 * columns: "spec" and "measured_s" required, "model" and
 * "measured_peak_GiB" optional, in any order; no other column. measured_s
 * is a decimal in [MIN_SECONDS, MAX_SECONDS] (fields.h) or "inf";
 * measured_peak_GiB empty or a decimal in (0, 1e6]. Blank lines are
 * skipped. Returns 0 and *out (caller frees with runs_free), or -1 with
 * *out NULL and e naming "path:line:column" and the field, e.g.
 * "runs.csv:3:17: measured_s 'x' is not a number of seconds or inf". */
int runs_load(struct runs **out, const char *path, struct err *e);

/* free(NULL)-safe. */
void runs_free(struct runs *r);

#endif
