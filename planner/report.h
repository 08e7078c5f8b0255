/* report.h: the ranking as a table on a terminal, as CSV for a spreadsheet,
 * and one strategy's time and memory breakdown. */
#ifndef AMPPLAN_REPORT_H
#define AMPPLAN_REPORT_H

#include <stdio.h>

struct plan;
struct plan_row;
struct model;
struct cluster;
struct err;

/* Prints the top rows (at most top) of p as an aligned table. */
void report_table(FILE *out, const struct plan *p, const struct model *m,
		  const struct cluster *c, int top);

/* Prints the iteration time and the memory of the heaviest rank of row,
 * split into their parts, then the communication hidden under compute (not
 * in the iteration time) and the strategy's attention and norm kernels,
 * FP8, gradient dtype and overlaps. */
void report_explain(FILE *out, const struct plan_row *row, const struct model *m,
		    const struct cluster *c);

/* Writes every row of p (feasible first) as CSV with libcsv to path, or to
 * stdout for "-": a header of column names (units in the names), then one
 * line per row. Columns are only added, after the last existing one; flags
 * (fp8, the overlaps) are 0 or 1. The file is written to a temporary name
 * and renamed, so a failure leaves nothing half-written. Returns 0, or -1
 * with e set. */
int report_csv(const char *path, const struct plan *p, const struct model *m,
	       const struct cluster *c, struct err *e);

/* Writes the whole ranking as JSON (every CSV column per strategy, the
 * flags as true or false, plus a "stages" array with each stage's first
 * layer, layer count, pipeline rank, node group and GPU type) to path, or
 * stdout for "-"; atomically like report_csv. Returns 0, or -1 with e set. */
int report_json(const char *path, const struct plan *p, const struct model *m,
		const struct cluster *c, struct err *e);

/* Layers per stage as in Megatron's layout string, e.g. "E+19|20|20|21+L",
 * and node group names per pipeline rank, e.g. "h100*2,a100*2". Write at most
 * n bytes (NUL included) to buf, ending in "..." if cut. */
void report_layers(char *buf, size_t n, const struct plan_row *row, const struct model *m);
void report_groups(char *buf, size_t n, const struct plan_row *row, const struct cluster *c);

#endif
