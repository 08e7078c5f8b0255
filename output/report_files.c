/* report_files.c: the ranking as CSV (libcsv) and as JSON (cJSON), from the
 * one column list (report_columns.h), written or staged through outfile.h
 * (report.h). */
#include "report.h"
#include "report_columns.h"
#include "report_int.h"

#include <cjson/cJSON.h>
#include <csv.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "outfile.h"
#include "plan.h"
#include "util.h"

/* Writes one field: plain, or through csv_fwrite when it needs quoting
 * (STYLE.md library notes). */
static void csv_field(FILE *f, const char *s)
{
	size_t n = strlen(s);

	if (strpbrk(s, ",\"\r\n") || (n && (s[0] == ' ' || s[n - 1] == ' ')))
		csv_fwrite(f, s, n);
	else
		fputs(s, f);
}

/* Writes a text column's field so that a spreadsheet shows it as text: a
 * cell starting with '=', '+', '-' or '@' (or a tab or CR) would be read as
 * a formula (CSV injection through a name from an input file), so it gets a
 * leading apostrophe, which Excel, LibreOffice and Google Sheets take as
 * "text follows" and do not display (OWASP's advice). Numeric and 0/1
 * columns are never changed. */
static void csv_text_field(FILE *f, const char *s)
{
	char buf[REPORT_FIELD_MAX + 1];

	if (s[0] && strchr("=+-@\t\r", s[0])) {
		snprintf(buf, sizeof buf, "'%s", s);
		csv_field(f, buf);
	} else {
		csv_field(f, s);
	}
}

/* What a CSV or JSON writer needs while the set is committed (owned by the
 * set: free_output). */
struct output {
	const struct plan *p;
	const struct model *m;
	const struct cluster *c;
	struct report_stream o;
	char **keys; /* the JSON's ,"name": of each column (malloc'd) */
};

/* Formats row r of x into f as a line of the CSV (rank 0 for the
 * infeasible ones), fields being the row's scratch space. */
static void csv_row(FILE *f, const struct output *x, char (*fields)[REPORT_FIELD_MAX], int r)
{
	const struct plan *p = x->p;
	struct plan_row row;

	report_fields(fields, r < p->n_feasible ? r + 1 : 0, plan_row_get(p, r, &row), x->m, x->c);
	for (size_t i = 0; i < report_n_columns; i++) {
		fputs(i ? "," : "", f);
		if (report_columns[i].kind == REPORT_STR)
			csv_text_field(f, fields[i]);
		else
			csv_field(f, fields[i]);
	}
	fputc('\n', f);
}

/* Formats one row of x into f (csv_row, json_row). */
typedef void (*row_format)(FILE *f, const struct output *x, char (*fields)[REPORT_FIELD_MAX],
			   int r);

/* Rows a writer thread formats at a time, and the most threads. */
#define ROWS_PER_TASK 256
#define MAX_WRITERS   16

/* Rows [first, end) formatted into buf (len bytes, malloc'd). */
struct task {
	const struct output *x;
	row_format format;
	char (*fields)[REPORT_FIELD_MAX];
	int first, end;
	char *buf;
	size_t len;
};

static void *run_task(void *arg)
{
	struct task *k = arg;
	FILE *f = must_alloc(open_memstream(&k->buf, &k->len));

	for (int r = k->first; r < k->end; r++)
		k->format(f, k->x, k->fields, r);
	if (fclose(f) != 0)
		fatal_oom();
	return NULL;
}

/* Writes every row of x to f by format, in order: in rounds of up to
 * MAX_WRITERS tasks of ROWS_PER_TASK rows, formatted on as many threads
 * (report_stream.threads) and written when the round is done, so that
 * memory holds one round's text whatever the number of rows, and the file
 * is the same for any thread count. Calls the progress callback once a
 * round. */
static void write_rows(FILE *f, const struct output *x, row_format format)
{
	const struct plan *p = x->p;
	long n = x->o.threads > 0 ? x->o.threads : sysconf(_SC_NPROCESSORS_ONLN);
	struct task k[MAX_WRITERS];
	pthread_t th[MAX_WRITERS];
	bool started[MAX_WRITERS];

	n = n < 1 ? 1 : n > MAX_WRITERS ? MAX_WRITERS
					: n;
	for (int i = 0; i < n; i++)
		k[i] = (struct task){ .x = x, .format = format, .fields = xcalloc(report_n_columns, REPORT_FIELD_MAX) };
	for (int base = 0; base < p->n_row && !ferror(f); base += (int)n * ROWS_PER_TASK) {
		int used = 0;

		if (x->o.progress)
			x->o.progress((double)base / p->n_row, x->o.progress_arg);
		for (; used < n && base + used * ROWS_PER_TASK < p->n_row; used++) {
			struct task *t = &k[used];

			t->first = base + used * ROWS_PER_TASK;
			t->end = t->first + ROWS_PER_TASK < p->n_row ? t->first + ROWS_PER_TASK : p->n_row;
			/* task 0 runs here; one a thread cannot start, too */
			started[used] = used && pthread_create(&th[used], NULL, run_task, t) == 0;
		}
		for (int i = 0; i < used; i++)
			if (!started[i])
				run_task(&k[i]);
		for (int i = 0; i < used; i++) {
			if (started[i])
				pthread_join(th[i], NULL);
			fwrite(k[i].buf, 1, k[i].len, f);
			free(k[i].buf);
		}
	}
	for (int i = 0; i < n; i++)
		free(k[i].fields);
}

/* Writes the ranking to f: a header of the column names, then one line per
 * row (write_rows). */
static int write_csv(FILE *f, void *arg, struct err *e)
{
	struct output *x = arg;

	(void)e;
	for (size_t i = 0; i < report_n_columns; i++) {
		fputs(i ? "," : "", f);
		csv_field(f, report_columns[i].name);
	}
	fputc('\n', f);
	write_rows(f, x, csv_row);
	return 0;
}

/* A number of the JSON as the CSV writes it (6 digits, report_fields), null
 * when empty or not finite; added raw, which spares cJSON's printing. */
static void json_number(cJSON *o, const char *name, const char *text)
{
	double v = strtod(text, NULL);

	if (!text[0] || !isfinite(v))
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddRawToObject(o, name, text);
}

/* Adds to o the ms per micro-batch of virtual stage st and, if with_rank,
 * the time and memory of its pipeline rank y (the rank_ keys; with
 * selective recomputation of the modules mods, each one's ms per
 * micro-batch as rank_recompute_MODULE_ms; with offload, its exposed
 * offload copies' ms per micro-batch and its bytes in host memory,
 * rank_offload_ms and rank_offloaded_GiB), each with 6 digits as the
 * columns (report_fields). */
static void stage_numbers(cJSON *o, const struct cost_stage *st, const struct cost_rank *y,
			  bool with_rank, unsigned mods, bool offload)
{
	const struct cost_mem *mm = &y->mem;
	const struct {
		const char *name;
		double v;
	} key[] = {
		{ "fwd_ms", 1e3 * st->fwd },
		{ "bwd_ms", 1e3 * st->bwd },
		{ "p2p_ms", 1e3 * st->send },
		/* the rank's, from here on */
		{ "rank_fwd_ms", 1e3 * y->fwd },
		{ "rank_bwd_ms", 1e3 * y->bwd },
		{ "rank_recompute_ms", 1e3 * y->recompute },
		{ "rank_comm_ms", 1e3 * (y->comm_fwd + y->comm_bwd) },
		{ "rank_p2p_ms", 1e3 * y->send },
		{ "rank_idle_s", y->idle },
		{ "rank_bubble_pct", y->pipeline_s > 0 ? 100.0 * y->idle / y->pipeline_s : 0.0 },
		{ "rank_dp_comm_s", y->dp },
		{ "rank_optimizer_s", y->optimizer },
		{ "rank_mem_GiB", y->peak_bytes / GiB },
		{ "rank_capacity_GiB", y->cap_bytes / GiB },
		{ "rank_weights_GiB", mm->weights / GiB },
		{ "rank_grads_GiB", mm->grads / GiB },
		{ "rank_optimizer_GiB", mm->optimizer / GiB },
		{ "rank_activations_GiB", mm->activations / GiB },
		{ "rank_logits_GiB", mm->logits / GiB },
		{ "rank_allowance_GiB", mm->allowance / GiB },
	};

	for (size_t i = 0; i < (with_rank ? sizeof key / sizeof *key : 3); i++) {
		char text[32];

		snprintf(text, sizeof text, "%.6g", key[i].v);
		json_number(o, key[i].name, text);
	}
	for (int i = 0; i < RM_COUNT && with_rank; i++) {
		char name[64], text[32];

		if (!(mods & (1u << i)))
			continue;
		memcpy(name, "rank_recompute_", 15);
		recompute_modules_name(1u << i, '+', name + 15, sizeof name - 18);
		strcat(name, "_ms");
		snprintf(text, sizeof text, "%.6g", 1e3 * y->recompute_mod[i]);
		json_number(o, name, text);
	}
	if (with_rank && offload) {
		char text[32];

		snprintf(text, sizeof text, "%.6g", 1e3 * y->offload);
		json_number(o, "rank_offload_ms", text);
		snprintf(text, sizeof text, "%.6g", mm->offloaded / GiB);
		json_number(o, "rank_offloaded_GiB", text);
	}
}

/* The per-stage details of a row: layers, pipeline rank, node group, GPU;
 * the virtual stage's ms per micro-batch (cost_stages) and, on the first
 * virtual stage of each pipeline rank (stage k < pp), the rank's time and
 * memory (cost_ranks, the rank_ keys), unless the layer costs cannot be
 * computed again. */
static cJSON *json_stages(const struct plan_row *row, const struct model *m,
			  const struct cluster *c)
{
	const struct strategy *s = &row->s;
	cJSON *a = cJSON_CreateArray();
	struct layer_costs lc;
	struct cost_rank *x = NULL;
	struct cost_stage *st = NULL;

	if (cost_layers(&lc, m, c, s, NULL, NULL) == 0) {
		x = xcalloc((size_t)s->pp, sizeof *x);
		st = xcalloc((size_t)s->n_stages, sizeof *st);
		cost_ranks(x, m, c, s, &lc);
		cost_stages(st, m, c, s, &lc);
		cost_layers_free(&lc);
	}
	for (int k = 0; k < s->n_stages; k++) {
		const struct node_group *g = &c->group[s->group[strategy_rank(s, k)]];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "stage", k);
		cJSON_AddNumberToObject(o, "pipeline_rank", strategy_rank(s, k));
		cJSON_AddNumberToObject(o, "first_layer", s->first[k]);
		cJSON_AddNumberToObject(o, "layers", stage_layers(s, k));
		cJSON_AddStringToObject(o, "group", g->name);
		cJSON_AddStringToObject(o, "gpu", c->gpu[g->gpu].name);
		if (x) /* the rank's keys once, on its first virtual stage */
			stage_numbers(o, &st[k], &x[strategy_rank(s, k)], k < s->pp, strategy_rc_modules(s),
				      s->offload_modules != 0);
		cJSON_AddItemToArray(a, o);
	}
	free(x);
	free(st);
	return a;
}

/* s as a JSON string: quoted, with '"', '\\' and the control characters
 * escaped (RFC 8259 Sec. 7); the rest (UTF-8) as it is. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* v as cJSON prints a number: an integer as one, else the shortest of 15
 * or 17 significant digits that reads back as v; null when not finite. */
static void json_double(FILE *f, double v)
{
	char buf[32];

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	if (v == (double)(long long)v && fabs(v) < 1e15) {
		fprintf(f, "%lld", (long long)v);
		return;
	}
	snprintf(buf, sizeof buf, "%1.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof buf, "%1.17g", v);
	fputs(buf, f);
}

/* Formats row r of x into f as the JSON's object of the row, preceded by
 * ",\n" (or "\n" for row 0): every column, "stages" for the first
 * o.json_detail rows (null for the others), "gap_pct". */
static void json_row(FILE *f, const struct output *x, char (*fields)[REPORT_FIELD_MAX], int r)
{
	const struct plan *p = x->p;
	struct plan_row row;

	report_fields(fields, r < p->n_feasible ? r + 1 : 0, plan_row_get(p, r, &row), x->m, x->c);
	fputs(r ? ",\n{" : "\n{", f);
	for (size_t i = 0; i < report_n_columns; i++) {
		const char *v = fields[i];

		fputs(x->keys[i] + !i, f); /* ,"name": (the first without ',') */
		if (report_columns[i].kind == REPORT_NUM)
			/* as json_number: null when empty, inf or nan */
			fputs(v[0] && !strchr(v, 'n') ? v : "null", f);
		else if (report_columns[i].kind == REPORT_BOOL)
			fputs(strcmp(v, "1") == 0 ? "true" : "false", f);
		else if (report_columns[i].kind == REPORT_YESNO)
			fputs(strcmp(v, "yes") == 0 ? "true" : "false", f);
		else
			json_string(f, v);
	}
	fputs(",\"stages\":", f);
	if (r < x->o.json_detail) {
		cJSON *a = json_stages(&row, x->m, x->c);
		char *text = must_alloc(cJSON_PrintUnformatted(a));

		fputs(text, f);
		cJSON_free(text);
		cJSON_Delete(a);
	} else {
		fputs("null", f);
	}
	fputs(",\"gap_pct\":", f);
	if (r < p->n_feasible) /* plan_row.gap_pct */
		json_double(f, row.gap_pct);
	else
		fputs("null", f);
	fputc('}', f);
}

/* Writes the ranking to f: the summary keys, then "strategies", one object
 * per line (write_rows: a ranking can have 500,000 rows, and memory holds
 * one round's text, each detailed row's stages a cJSON tree while it is
 * formatted). */
static int write_json(FILE *f, void *arg, struct err *e)
{
	struct output *x = arg;
	const struct plan *p = x->p;
	const struct model *m = x->m;
	const struct cluster *c = x->c;
	cJSON *doc = cJSON_CreateObject();
	char *text;
	size_t n;

	(void)e;
	cJSON_AddStringToObject(doc, "model", m->name);
	cJSON_AddStringToObject(doc, "cluster", c->name);
	cJSON_AddNumberToObject(doc, "params_total", model_params(m));
	cJSON_AddNumberToObject(doc, "params_active", model_active_params(m));
	cJSON_AddNumberToObject(doc, "gpus", c->total_gpus);
	cJSON_AddNumberToObject(doc, "strategies_costed", (double)p->evaluated);
	cJSON_AddBoolToObject(doc, "truncated", p->truncated);
	cJSON_AddNumberToObject(doc, "degrees", p->degrees);
	cJSON_AddNumberToObject(doc, "degrees_searched", p->degrees_searched);
	cJSON_AddNumberToObject(doc, "search_s", p->search_s);
	cJSON_AddNumberToObject(doc, "json_detail_rows",
				p->n_row < x->o.json_detail ? p->n_row : x->o.json_detail);
	text = must_alloc(cJSON_PrintUnformatted(doc));
	n = strlen(text); /* an object's text ends with its '}' */
	fprintf(f, "%.*s,\"strategies\":[", (int)(n - 1), text);
	cJSON_free(text);
	cJSON_Delete(doc);
	write_rows(f, x, json_row);
	fputs("]}\n", f);
	return 0;
}

static void free_output(void *arg)
{
	struct output *x = arg;

	for (size_t i = 0; i < report_n_columns; i++)
		free(x->keys[i]);
	free(x->keys);
	free(x);
}

/* Adds path to t, its content written by write from a new struct output. */
static int stage(struct outfile_set *t, const char *path, outfile_writer write,
		 const struct plan *p, const struct model *m, const struct cluster *c,
		 const struct report_stream *o, struct err *e)
{
	struct output *x = xcalloc(1, sizeof *x);

	*x = (struct output){ p, m, c, *o, xcalloc(report_n_columns, sizeof *x->keys) };
	for (size_t i = 0; i < report_n_columns; i++) { /* names are identifiers */
		size_t n = strlen(report_columns[i].name) + 5;

		x->keys[i] = xmalloc(n);
		snprintf(x->keys[i], n, ",\"%s\":", report_columns[i].name);
	}
	return outfile_add_writer(t, path, write, x, free_output, 0666, e);
}

/* A transaction of one file. */
static int write_whole(const char *path, outfile_writer write, const struct plan *p,
		       const struct model *m, const struct cluster *c, struct err *e)
{
	struct outfile_set *t = outfile_create();
	struct report_stream o = { .json_detail = INT_MAX };
	int rc = stage(t, path, write, p, m, c, &o, e);

	if (rc == 0)
		rc = outfile_commit(t, e);
	outfile_free(t);
	return rc;
}

int report_csv(const char *path, const struct plan *p, const struct model *m,
	       const struct cluster *c, struct err *e)
{
	return write_whole(path, write_csv, p, m, c, e);
}

int report_json(const char *path, const struct plan *p, const struct model *m,
		const struct cluster *c, struct err *e)
{
	return write_whole(path, write_json, p, m, c, e);
}

int report_csv_stage(struct outfile_set *t, const char *path, const struct plan *p,
		     const struct model *m, const struct cluster *c,
		     const struct report_stream *o, struct err *e)
{
	return stage(t, path, write_csv, p, m, c, o, e);
}

int report_json_stage(struct outfile_set *t, const char *path, const struct plan *p,
		      const struct model *m, const struct cluster *c,
		      const struct report_stream *o, struct err *e)
{
	return stage(t, path, write_json, p, m, c, o, e);
}
