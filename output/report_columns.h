/* report_columns.h: (internal) the columns of the ranking's CSV and JSON
 * (report_csv, report_json): one list, each column's name, JSON type and
 * value, which both writers read. */
#ifndef AMPPLAN_REPORT_COLUMNS_H
#define AMPPLAN_REPORT_COLUMNS_H

#include <stddef.h>

struct plan_row;
struct model;
struct cluster;

/* How a column is written in the JSON: a string, a number (null when its
 * text is empty or not finite), or a boolean (0 or 1 in the CSV; YESNO:
 * "yes" or "no" in the CSV, as its first columns always were). */
enum report_kind { REPORT_STR,
		   REPORT_NUM,
		   REPORT_BOOL,
		   REPORT_YESNO };

/* A column: its name, which carries its unit, and its JSON type. */
struct report_column {
	const char *name;
	enum report_kind kind;
};

/* The columns in order, report_n_columns of them. Columns are only ever
 * added, at the end, so that every column keeps its place for readers by
 * position too. */
extern const struct report_column report_columns[];
extern const size_t report_n_columns;

/* Bytes of one field's text, NUL included (a longer one is cut). */
#define REPORT_FIELD_MAX 1024

/* Writes the values of row, ranked rank (0: infeasible), into f[i] for
 * column i, as text: integers in decimal, other numbers with 6 significant
 * digits ("%.6g"), flags 0 or 1, "" for a value the row does not have. f
 * has report_n_columns entries. */
void report_fields(char (*f)[REPORT_FIELD_MAX], int rank, const struct plan_row *row,
		   const struct model *m, const struct cluster *c);

/* v as printf's "%.6g" writes it, into buf (REPORT_FIELD_MAX bytes), in a
 * fraction of its time: the 6 digits are rounded here unless the value is
 * within 1e-6 of a tie (or out of 1e-17 to 1e27), which printf rounds. The
 * CSV's and the JSON's numbers (500,000 rows of 45 numbers) go through it. */
void report_g6(char *buf, double v);

#endif
