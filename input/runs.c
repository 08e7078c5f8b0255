/* runs.c: the measured runs of `ampplan calibrate` from a CSV file
 * (libcsv), with errors at line:column. */
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "runs.h"
#include "util.h"

enum column { COL_MODEL,
	      COL_SPEC,
	      COL_MEASURED,
	      COL_PEAK,
	      COL_COUNT };

static const char *const column_names[COL_COUNT] = { "model", "spec", "measured_s",
						     "measured_peak_GiB" };

#define MAX_PEAK_GIB 1e6

/* The parser's state: the fields of the row being read and where each
 * began, the header's column of each field, and the first error. */
struct reader {
	const char *path;
	struct runs *r;
	struct err *e;
	bool failed;
	int line, col;	  /* of the byte being fed, from 1 */
	bool field_start; /* the next byte begins a field */
	int fline, fcol;  /* where the field being read began */
	int n_field;	  /* fields of the row so far */
	char *field[COL_COUNT];
	int at_line[COL_COUNT], at_col[COL_COUNT];
	int header[COL_COUNT]; /* field index -> enum column */
	int n_header;	       /* 0 until the header is read */
	bool has[COL_COUNT];
};

static void fail(struct reader *rd, int line, int col, const char *fmt, const char *a,
		 const char *b)
{
	char msg[400];

	if (rd->failed)
		return;
	rd->failed = true;
	snprintf(msg, sizeof msg, fmt, a, b);
	err_set(rd->e, "%s:%d:%d: %s", rd->path, line, col, msg);
}

static void on_field(void *s, size_t len, void *data)
{
	struct reader *rd = data;
	int k = rd->n_field++;

	if (rd->field_start) { /* an empty field before the row's end */
		rd->fline = rd->line;
		rd->fcol = rd->col;
	}
	rd->field_start = true;
	if (rd->failed)
		return;
	if (k >= COL_COUNT || (rd->n_header && k >= rd->n_header)) {
		fail(rd, rd->fline, rd->fcol, "%s%s", "more fields than the header's columns", "");
		return;
	}
	if (len > RUNS_MAX_FIELD) {
		fail(rd, rd->fline, rd->fcol, "a field longer than %s%s bytes", "4096", "");
		return;
	}
	rd->field[k] = xstrdup(s ? (const char *)s : "");
	rd->at_line[k] = rd->fline;
	rd->at_col[k] = rd->fcol;
}

/* Strict finite decimal (STYLE.md 13). */
static int parse_real(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*out) ? -1 : 0;
}

static void read_header(struct reader *rd)
{
	for (int k = 0; k < rd->n_field && !rd->failed; k++) {
		int c = 0;

		while (c < COL_COUNT && strcmp(rd->field[k], column_names[c]) != 0)
			c++;
		if (c == COL_COUNT)
			fail(rd, rd->at_line[k], rd->at_col[k],
			     "unknown column '%s' (the columns are model, spec, measured_s, measured_peak_GiB)%s",
			     rd->field[k], "");
		else if (rd->has[c])
			fail(rd, rd->at_line[k], rd->at_col[k], "column '%s' twice%s", rd->field[k], "");
		else
			rd->has[c] = true;
		rd->header[k] = c;
	}
	for (int c = COL_SPEC; c <= COL_MEASURED && !rd->failed; c++)
		if (!rd->has[c])
			fail(rd, rd->at_line[0], 1, "the header has no column '%s'%s", column_names[c], "");
	rd->n_header = rd->n_field;
}

static void read_run(struct reader *rd)
{
	struct run_row w = { .peak_gib = -1 };
	int line = rd->at_line[0];

	if (rd->n_field != rd->n_header) {
		char n[16];

		snprintf(n, sizeof n, "%d", rd->n_header);
		fail(rd, line, 1, "a row of fewer fields than the header's %s%s", n, "");
		return;
	}
	if (rd->r->n == RUNS_MAX) {
		fail(rd, line, 1, "more than %s%s runs", "10000", "");
		return;
	}
	w.line = line;
	for (int k = 0; k < rd->n_field && !rd->failed; k++) {
		const char *f = rd->field[k];
		int l = rd->at_line[k], c = rd->at_col[k];

		switch (rd->header[k]) {
		case COL_MODEL:
			if (*f)
				w.model = xstrdup(f);
			break;
		case COL_SPEC:
			if (!*f)
				fail(rd, l, c, "spec is empty%s%s", "", "");
			w.spec = xstrdup(f);
			w.spec_col = c;
			break;
		case COL_MEASURED:
			if (strcmp(f, "inf") == 0)
				w.measured_s = INFINITY;
			else if (parse_real(f, &w.measured_s) || w.measured_s < MIN_SECONDS ||
				 w.measured_s > MAX_SECONDS)
				fail(rd, l, c, "measured_s '%s' is not seconds in [1e-9, 1e6] or inf (a run out of memory)%s",
				     f, "");
			break;
		case COL_PEAK:
			if (*f && (parse_real(f, &w.peak_gib) || w.peak_gib <= 0 ||
				   w.peak_gib > MAX_PEAK_GIB))
				fail(rd, l, c, "measured_peak_GiB '%s' is not GiB in (0, 1e6]%s", f, "");
			break;
		}
	}
	if (rd->failed) {
		free(w.model);
		free(w.spec);
		return;
	}
	rd->r->row = xreallocarray(rd->r->row, (size_t)rd->r->n + 1, sizeof *rd->r->row);
	rd->r->row[rd->r->n++] = w;
}

static void on_row(int c, void *data)
{
	struct reader *rd = data;

	(void)c;
	if (!rd->failed && rd->n_field) {
		if (!rd->n_header)
			read_header(rd);
		else
			read_run(rd);
	}
	for (int k = 0; k < COL_COUNT; k++) {
		free(rd->field[k]);
		rd->field[k] = NULL;
	}
	rd->n_field = 0;
}

void runs_free(struct runs *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n; i++) {
		free(r->row[i].model);
		free(r->row[i].spec);
	}
	free(r->row);
	free(r->path);
	free(r);
}

int runs_load(struct runs **out, const char *path, struct err *e)
{
	struct csv_parser p;
	struct reader rd = { .path = path, .e = e, .line = 1, .col = 1, .field_start = true };
	FILE *f;
	int ch;

	*out = NULL;
	if (!(f = fopen(path, "r")))
		return err_set(e, "cannot open '%s': %s", path, strerror(errno));
	rd.r = xcalloc(1, sizeof *rd.r);
	rd.r->path = xstrdup(path);
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL))
		abort();
	/* byte by byte, so that each field's callback knows where it began */
	while (!rd.failed && (ch = getc(f)) != EOF) {
		char b = (char)ch;

		if (!ch)
			fail(&rd, rd.line, rd.col, "a NUL byte%s%s", "", "");
		if (rd.field_start && b != '\n' && b != '\r') {
			rd.fline = rd.line;
			rd.fcol = rd.col;
			rd.field_start = false;
		}
		if (!rd.failed && csv_parse(&p, &b, 1, on_field, on_row, &rd) != 1)
			fail(&rd, rd.line, rd.col, "%s%s",
			     csv_error(&p) == CSV_EPARSE ? "a quote out of place (quote a whole field, and double a quote inside it)"
							 : csv_strerror(csv_error(&p)),
			     "");
		if (b == '\n') {
			rd.line++;
			rd.col = 1;
		} else {
			rd.col++;
		}
	}
	if (!rd.failed && ferror(f))
		fail(&rd, rd.line, rd.col, "read error: %s%s", strerror(errno), "");
	if (!rd.failed && csv_fini(&p, on_field, on_row, &rd))
		fail(&rd, rd.fline, rd.fcol, "%s%s",
		     csv_error(&p) == CSV_EPARSE ? "a quoted field is not closed by the end of the file"
						 : csv_strerror(csv_error(&p)),
		     "");
	on_row(0, &rd); /* frees a row the error left */
	csv_free(&p);
	fclose(f);
	if (!rd.failed && !rd.n_header)
		fail(&rd, 1, 1, "no header line (model, spec, measured_s, measured_peak_GiB)%s%s", "",
		     "");
	if (!rd.failed && !rd.r->n)
		fail(&rd, rd.line, 1, "no runs after the header%s%s", "", "");
	if (rd.failed) {
		runs_free(rd.r);
		return -1;
	}
	*out = rd.r;
	return 0;
}
