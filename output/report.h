/* report.h: the ranking as a table on a terminal (report_table.c), as CSV
 * and JSON files (report_files.c), one strategy's time and memory breakdown
 * (report_table.c), and strategies side by side (report_compare.c). */
#ifndef AMPPLAN_REPORT_H
#define AMPPLAN_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct plan;
struct plan_row;
struct cost_result;
struct model;
struct cluster;
struct err;
struct outfile_set;

/* Prints the top rows (at most top) of p as an aligned table; its memory
 * column is the fullest GPU's (cost_result.fullest_rank) as used/capacity
 * GiB (report_fullest). */
void report_table(FILE *out, const struct plan *p, const struct model *m,
		  const struct cluster *c, int top);

/* Bytes that hold a line of report_row_line. */
#define REPORT_ROW_LINE 512

/* Writes into buf (n bytes, REPORT_ROW_LINE hold it; truncated,
 * NUL-terminated) row as report_table prints it at the given rank (no
 * newline): the one text of a row, which the launch files' header repeats
 * (emit_stage). Returns buf. */
const char *report_row_line(char *buf, size_t n, int rank, const struct plan_row *row,
			    const struct model *m, const struct cluster *c);

/* Prints the iteration time and the memory of the heaviest rank of row,
 * split into their parts, then the communication hidden under compute (not
 * in the iteration time) and the strategy's attention and norm kernels,
 * FP8, gradient dtype and overlaps, then each pipeline rank (report_ranks). */
void report_explain(FILE *out, const struct plan_row *row, const struct model *m,
		    const struct cluster *c);

/* Writes every row of p (feasible first) as CSV with libcsv to path, or to
 * stdout for "-": a header of column names (units in the names), then one
 * line per row. Columns are only added, after the last existing one; flags
 * (fp8, the overlaps) are 0 or 1. A text cell starting with = + - @ gets a
 * leading apostrophe (no spreadsheet formula). Written through outfile.h: a
 * regular file by a temporary and a rename, so a failure leaves nothing
 * half-written; a device, FIFO or pipe in place. Returns 0, or -1 with e
 * set. */
int report_csv(const char *path, const struct plan *p, const struct model *m,
	       const struct cluster *c, struct err *e);

/* Writes the whole ranking as JSON (every CSV column per strategy, the
 * flags and yes/no columns as true or false, plus a "stages" array with each
 * stage's first layer, layer count, pipeline rank, node group and GPU type)
 * to path, or stdout for "-"; atomically like report_csv. Both write row by
 * row into the file: memory does not grow with the number of rows. Returns
 * 0, or -1 with e set. */
int report_json(const char *path, const struct plan *p, const struct model *m,
		const struct cluster *c, struct err *e);

/* How the staged CSV and JSON are written. */
struct report_stream {
	/* the JSON's first json_detail rows carry "stages", the others
	 * "stages": null */
	int json_detail;
	/* NULL, or called from the calling thread every few thousand rows
	 * with the share written (0 to 1) */
	void (*progress)(double done, void *arg);
	void *progress_arg;
	/* threads formatting the rows (0: one per online CPU, at most 16);
	 * the file is the same for any number */
	int threads;
};

/* Like report_csv and report_json, but add the file to the transaction t
 * (outfile.h) instead of writing it: it is written row by row when
 * outfile_commit(t) runs, so p, m and c must live until then. Returns 0, or
 * -1 with e set (outfile_conflict(t) is true when path names a file already
 * in t). */
int report_csv_stage(struct outfile_set *t, const char *path, const struct plan *p,
		     const struct model *m, const struct cluster *c,
		     const struct report_stream *o, struct err *e);
int report_json_stage(struct outfile_set *t, const char *path, const struct plan *p,
		      const struct model *m, const struct cluster *c,
		      const struct report_stream *o, struct err *e);

/* The fullest GPU of r as "used/capacity" in GiB, e.g. "38.1/40" (the
 * capacity without decimals when whole), into buf of n bytes. */
void report_fullest(char *buf, size_t n, const struct cost_result *r);

/* Prints one line per pipeline rank of row (cost_ranks): GPU type, node
 * group, layers, forward and backward ms per micro-batch, exposed
 * communication, p2p, bubble share, used/capacity GiB and its parts, and
 * which rank is the slowest, the fullest, or over its memory. report_explain
 * ends with it. */
void report_ranks(FILE *out, const struct plan_row *row, const struct model *m,
		  const struct cluster *c);

/* Most strategies report_compare sets side by side (--compare). */
#define REPORT_COMPARE_MAX 8

/* Prints n evaluated strategies (rows[i], n <= REPORT_COMPARE_MAX) side by
 * side, one column
 * each: the strategy, the iteration time and its parts, tokens/s, MFU, the
 * fullest GPU (used/capacity GiB), the heaviest rank's GiB, the slowest
 * rank and its ms per micro-batch, and whether it fits (else the first
 * rank over its memory and by how many GiB). A row whose values differ
 * between the strategies starts with '*'. */
void report_compare(FILE *out, const struct plan_row *const *rows, int n,
		    const struct model *m, const struct cluster *c);

/* Layers per stage as in Megatron's layout string, e.g. "E+19|20|20|21+L",
 * and node group names per pipeline rank, e.g. "h100*2,a100*2". Write at most
 * n bytes (NUL included) to buf, ending in "..." if cut. */
void report_layers(char *buf, size_t n, const struct plan_row *row, const struct model *m);
void report_groups(char *buf, size_t n, const struct plan_row *row, const struct cluster *c);

/* Writes s to f with its control characters escaped (\n, \t, \r, \xHH for
 * the other C0 controls and DEL, \u00HH for the C1 controls U+0080 to
 * U+009F), so that a path or an option value echoed in a message cannot
 * move the cursor, clear the terminal or forge a line. */
void report_escaped(FILE *f, const char *s);

#endif
