/* report.c: table, CSV and breakdown of a ranking (see report.h). */
#define _POSIX_C_SOURCE 200809L
#include "report.h"

#include <cjson/cJSON.h>
#include <csv.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "model.h"
#include "outfile.h"
#include "plan.h"
#include "util.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

/* Appends to buf like snprintf at offset *at; marks a cut with "...". */
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*at >= n)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *at, n - *at, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= n - *at) {
		if (n >= 4)
			memcpy(buf + n - 4, "...", 4);
		*at = n;
		return;
	}
	*at += (size_t)w;
}

void report_layers(char *buf, size_t n, const struct plan_row *row, const struct model *m)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < s->n_stages; k++) {
		int a = s->first[k], b = s->first[k + 1];
		int blocks = b - a - (a == 0) - (b == m->n_layer);
		const char *sep = "";

		if (k)
			append(buf, n, &at, "|");
		if (a == 0) {
			append(buf, n, &at, "E");
			sep = "+";
		}
		if (blocks > 0) {
			append(buf, n, &at, "%s%d", sep, blocks);
			sep = "+";
		}
		if (b == m->n_layer)
			append(buf, n, &at, "%sL", sep);
	}
}

void report_groups(char *buf, size_t n, const struct plan_row *row, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int r = 0; r < s->pp;) {
		int run = 1;

		while (r + run < s->pp && s->group[r + run] == s->group[r])
			run++;
		append(buf, n, &at, "%s%s", r ? "," : "", c->group[s->group[r]].name);
		if (run > 1)
			append(buf, n, &at, "*%d", run);
		r += run;
	}
}

static const char *on_off(bool b) { return b ? "on" : "off"; }

static void schedule_label(char *buf, size_t n, const struct strategy *s)
{
	if (s->vp > 1)
		snprintf(buf, n, "%s/v%d", schedule_name(s->schedule), s->vp);
	else
		snprintf(buf, n, "%s", schedule_name(s->schedule));
}

void report_table(FILE *out, const struct plan *p, const struct model *m,
		  const struct cluster *c, int top)
{
	char layers[64], groups[48], sched[24];

	fprintf(out, "%4s %3s %3s %4s %3s %3s %3s %4s %-14s %-9s %4s %-3s %-26s %-20s %8s %9s %5s %8s\n",
		"rank", "TP", "PP", "DP", "CP", "EP", "mbs", "m", "schedule", "recompute", "ZeRO",
		"FP8", "layers/stage", "GPUs/stage", "iter s", "tokens/s", "MFU%", "mem GiB");
	for (int i = 0; i < p->n_feasible && i < top; i++) {
		const struct plan_row *row = &p->row[i];
		const struct strategy *s = &row->s;

		report_layers(layers, sizeof layers - 38, row, m);
		report_groups(groups, sizeof groups - 28, row, c);
		schedule_label(sched, sizeof sched, s);
		fprintf(out, "%4d %3d %3d %4d %3d %3d %3d %4d %-14s %-9s %4d %-3s %-26s %-20s %8.3f %9.0f %5.1f %8.1f\n",
			i + 1, s->tp, s->pp, s->dp, s->cp, s->ep, s->mbs, s->micro_batches, sched,
			recompute_name(s->recompute), s->zero, s->fp8 ? "yes" : "-", layers, groups,
			row->r.iter_s,
			row->r.tokens_per_s, 100.0 * row->r.mfu, row->r.peak_bytes / GiB);
	}
}

void report_explain(FILE *out, const struct plan_row *row, const struct model *m,
		    const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	const struct cost_time *t = &r->time;
	const struct cost_mem *mm = &r->mem;
	const struct gpu_type *gpu = &c->gpu[c->group[s->group[r->heaviest_rank]].gpu];
	char layers[512], groups[512];
	const char *tn[] = { "compute", "recompute", "bubble", "TP comm", "CP comm",
			     "PP comm", "DP comm", "EP comm", "optimizer" };
	const double tv[] = { t->compute, t->recompute, t->bubble, t->tp, t->cp,
			      t->pp, t->dp, t->ep, t->optimizer };
	const char *hn[] = { "TP comm", "CP comm", "DP comm" };
	const double hv[] = { t->tp_hidden, t->cp_hidden, t->dp_hidden };
	const char *hw[] = { "with the GEMMs", "with attention (ring)",
			     "with the backward and forward passes" };
	const char *mn[] = { "weights", "gradients", "optimizer", "activations",
			     "logits", "allowance" };
	const double mv[] = { mm->weights, mm->grads, mm->optimizer, mm->activations,
			      mm->logits, mm->allowance };

	report_layers(layers, sizeof layers, row, m);
	report_groups(groups, sizeof groups, row, c);
	fprintf(out, "  layers per stage: %s\n  node group per pipeline rank: %s\n", layers, groups);
	fprintf(out, "  iteration %.3f s, %.0f tokens/s, MFU %.1f%%\n", r->iter_s,
		r->tokens_per_s, 100.0 * r->mfu);
	for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++)
		fprintf(out, "    %-12s %9.3f s %5.1f%%\n", tn[i], tv[i],
			r->iter_s > 0 ? 100.0 * tv[i] / r->iter_s : 0.0);
	fprintf(out, "  communication hidden under compute (not in the iteration):\n");
	for (size_t i = 0; i < sizeof hv / sizeof hv[0]; i++)
		fprintf(out, "    %-12s %9.3f s  %s\n", hn[i], hv[i], hw[i]);
	fprintf(out, "  kernels and precision: attention %s, norms %s, FP8 GEMMs %s, gradients %s (accumulated %s)\n",
		attention_name(s->attn), s->unfused_norm ? "unfused" : "fused", on_off(s->fp8),
		grad_dtype_name(s, m->fp16), s->grad_acc_unfused ? "in a pass of their own" : "in the GEMMs");
	fprintf(out, "  overlaps: TP comm %s, gradient reduction %s, parameter gather %s\n",
		on_off(s->tp_overlap), on_off(s->grad_overlap), on_off(s->param_overlap));
	fprintf(out, "  memory per GPU on pipeline rank %d (%s, %.1f GiB): %.2f GiB%s\n",
		r->heaviest_rank, gpu->name, gpu->mem_bytes / GiB, r->peak_bytes / GiB,
		r->fits ? "" : ", does not fit");
	for (size_t i = 0; i < sizeof mv / sizeof mv[0]; i++)
		fprintf(out, "    %-12s %9.2f GiB\n", mn[i], mv[i] / GiB);
}

/* How a column is written in the JSON: a string, a number, or a boolean
 * (0 or 1 in the CSV). */
enum column_kind { COL_STR, COL_NUM, COL_BOOL };

/* The columns of the CSV and of the JSON ranking; each name carries its
 * unit. Columns are only ever added, at the end (after "reason"), so that
 * every column keeps its place for readers by position too. */
static const struct column {
	const char *name;
	enum column_kind kind;
} columns[] = {
	{ "rank", COL_NUM }, { "fits", COL_STR }, { "tp", COL_NUM }, { "pp", COL_NUM },
	{ "dp", COL_NUM }, { "cp", COL_NUM }, { "ep", COL_NUM }, { "sp", COL_STR },
	{ "micro_batch_seqs", COL_NUM }, { "micro_batches", COL_NUM },
	{ "global_batch_seqs", COL_NUM }, { "seq_tokens", COL_NUM },
	{ "schedule", COL_STR }, { "virtual_stages", COL_NUM }, { "recompute", COL_STR },
	{ "zero_stage", COL_NUM }, { "layers_per_stage", COL_STR },
	{ "groups_per_rank", COL_STR }, { "gpu_types_per_rank", COL_STR },
	{ "iteration_s", COL_NUM }, { "tokens_per_s", COL_NUM }, { "mfu_pct", COL_NUM },
	{ "peak_mem_GiB", COL_NUM }, { "compute_s", COL_NUM }, { "recompute_s", COL_NUM },
	{ "bubble_s", COL_NUM }, { "tp_comm_s", COL_NUM }, { "cp_comm_s", COL_NUM },
	{ "pp_comm_s", COL_NUM }, { "dp_comm_s", COL_NUM }, { "ep_comm_s", COL_NUM },
	{ "optimizer_s", COL_NUM }, { "weights_GiB", COL_NUM }, { "grads_GiB", COL_NUM },
	{ "optimizer_GiB", COL_NUM }, { "activations_GiB", COL_NUM },
	{ "logits_GiB", COL_NUM }, { "allowance_GiB", COL_NUM }, { "reason", COL_STR },
	/* cost model v2: the strategy's kernels, precision and overlaps, and
	 * the communication hidden under compute (not in iteration_s) */
	{ "attention", COL_STR }, { "norm", COL_STR }, { "fp8", COL_BOOL },
	{ "tp_comm_overlap", COL_BOOL }, { "overlap_grad_reduce", COL_BOOL },
	{ "overlap_param_gather", COL_BOOL }, { "grad_dtype", COL_STR },
	{ "tp_comm_hidden_s", COL_NUM }, { "cp_comm_hidden_s", COL_NUM },
	{ "dp_comm_hidden_s", COL_NUM }, { "grad_acc_fusion", COL_BOOL },
};
#define N_COLUMNS (sizeof columns / sizeof columns[0])
#define FIELD_MAX 1024

/* GPU type of each pipeline rank, run-length coded like report_groups. */
static void gpu_types(char *buf, size_t n, const struct plan_row *row, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int r = 0; r < s->pp;) {
		int g = c->group[s->group[r]].gpu, run = 1;

		while (r + run < s->pp && c->group[s->group[r + run]].gpu == g)
			run++;
		append(buf, n, &at, "%s%s", r ? "," : "", c->gpu[g].name);
		if (run > 1)
			append(buf, n, &at, "*%d", run);
		r += run;
	}
}

/* The values of one row in column order, as text. */
static void row_fields(char f[][FIELD_MAX], int rank, const struct plan_row *row,
		       const struct model *m, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	const double num[] = {
		r->iter_s, r->tokens_per_s, 100.0 * r->mfu, r->peak_bytes / GiB,
		r->time.compute, r->time.recompute, r->time.bubble, r->time.tp,
		r->time.cp, r->time.pp, r->time.dp, r->time.ep, r->time.optimizer,
		r->mem.weights / GiB, r->mem.grads / GiB, r->mem.optimizer / GiB,
		r->mem.activations / GiB, r->mem.logits / GiB, r->mem.allowance / GiB,
	};
	const int flags[] = { s->fp8, s->tp_overlap, s->grad_overlap, s->param_overlap };
	const int fused_acc = !s->grad_acc_unfused;
	const double hidden[] = { r->time.tp_hidden, r->time.cp_hidden, r->time.dp_hidden };
	const int ints[] = { rank, -1, s->tp, s->pp, s->dp, s->cp, s->ep, -1, s->mbs,
			     s->micro_batches, s->gbs, s->seq, -1, s->vp, -1, s->zero };
	size_t i = 0;

	for (; i < sizeof ints / sizeof *ints; i++)
		snprintf(f[i], FIELD_MAX, "%d", ints[i]);
	snprintf(f[1], FIELD_MAX, "%s", r->fits ? "yes" : "no");
	snprintf(f[7], FIELD_MAX, "%s", s->sp ? "yes" : "no");
	snprintf(f[12], FIELD_MAX, "%s", schedule_name(s->schedule));
	snprintf(f[14], FIELD_MAX, "%s", recompute_name(s->recompute));
	report_layers(f[i++], FIELD_MAX, row, m);
	report_groups(f[i++], FIELD_MAX, row, c);
	gpu_types(f[i++], FIELD_MAX, row, c);
	for (size_t j = 0; j < sizeof num / sizeof *num; j++)
		snprintf(f[i++], FIELD_MAX, "%.6g", num[j]);
	snprintf(f[i++], FIELD_MAX, "%s", row->why);
	snprintf(f[i++], FIELD_MAX, "%s", attention_name(s->attn));
	snprintf(f[i++], FIELD_MAX, "%s", s->unfused_norm ? "unfused" : "fused");
	for (size_t j = 0; j < sizeof flags / sizeof *flags; j++)
		snprintf(f[i++], FIELD_MAX, "%d", flags[j]);
	snprintf(f[i++], FIELD_MAX, "%s", grad_dtype_name(s, m->fp16));
	for (size_t j = 0; j < sizeof hidden / sizeof *hidden; j++)
		snprintf(f[i++], FIELD_MAX, "%.6g", hidden[j]);
	snprintf(f[i++], FIELD_MAX, "%d", fused_acc);
}

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
	char buf[FIELD_MAX + 1];

	if (s[0] && strchr("=+-@\t\r", s[0])) {
		snprintf(buf, sizeof buf, "'%s", s);
		csv_field(f, buf);
	} else {
		csv_field(f, s);
	}
}

static void write_csv(FILE *f, const struct plan *p, const struct model *m,
		      const struct cluster *c)
{
	static char fields[N_COLUMNS][FIELD_MAX];

	for (size_t i = 0; i < N_COLUMNS; i++) {
		fputs(i ? "," : "", f);
		csv_field(f, columns[i].name);
	}
	fputc('\n', f);
	for (int r = 0; r < p->n_row; r++) {
		row_fields(fields, r < p->n_feasible ? r + 1 : 0, &p->row[r], m, c);
		for (size_t i = 0; i < N_COLUMNS; i++) {
			fputs(i ? "," : "", f);
			if (columns[i].kind == COL_STR)
				csv_text_field(f, fields[i]);
			else
				csv_field(f, fields[i]);
		}
		fputc('\n', f);
	}
}

/* The per-stage details of a row: layers, pipeline rank, node group, GPU. */
static cJSON *json_stages(const struct plan_row *row, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	cJSON *a = cJSON_CreateArray();

	for (int k = 0; k < s->n_stages; k++) {
		const struct node_group *g = &c->group[s->group[k % s->pp]];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "stage", k);
		cJSON_AddNumberToObject(o, "pipeline_rank", k % s->pp);
		cJSON_AddNumberToObject(o, "first_layer", s->first[k]);
		cJSON_AddNumberToObject(o, "layers", stage_layers(s, k));
		cJSON_AddStringToObject(o, "group", g->name);
		cJSON_AddStringToObject(o, "gpu", c->gpu[g->gpu].name);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static char *json_ranking(const struct plan *p, const struct model *m,
			  const struct cluster *c)
{
	static char fields[N_COLUMNS][FIELD_MAX];
	cJSON *doc = cJSON_CreateObject(), *rows = cJSON_CreateArray();
	char *text;

	cJSON_AddStringToObject(doc, "model", m->name);
	cJSON_AddStringToObject(doc, "cluster", c->name);
	cJSON_AddNumberToObject(doc, "gpus", c->total_gpus);
	cJSON_AddNumberToObject(doc, "strategies_costed", (double)p->evaluated);
	cJSON_AddBoolToObject(doc, "truncated", p->truncated);
	cJSON_AddNumberToObject(doc, "degrees", p->degrees);
	cJSON_AddNumberToObject(doc, "degrees_searched", p->degrees_searched);
	cJSON_AddNumberToObject(doc, "search_s", p->search_s);
	for (int r = 0; r < p->n_row; r++) {
		cJSON *o = cJSON_CreateObject();

		row_fields(fields, r < p->n_feasible ? r + 1 : 0, &p->row[r], m, c);
		for (size_t i = 0; i < N_COLUMNS; i++) {
			if (columns[i].kind == COL_NUM)
				cJSON_AddNumberToObject(o, columns[i].name, strtod(fields[i], NULL));
			else if (columns[i].kind == COL_BOOL)
				cJSON_AddBoolToObject(o, columns[i].name, strcmp(fields[i], "1") == 0);
			else
				cJSON_AddStringToObject(o, columns[i].name, fields[i]);
		}
		cJSON_AddItemToObject(o, "stages", json_stages(&p->row[r], c));
		cJSON_AddItemToArray(rows, o);
	}
	cJSON_AddItemToObject(doc, "strategies", rows);
	text = cJSON_Print(doc);
	cJSON_Delete(doc);
	return text;
}

/* Renders body into memory and adds it to t as path ("-" for stdout). */
static int stage_whole(struct outfile_set *t, const char *path,
		       void (*body)(FILE *, const void *), const void *arg, struct err *e)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return err_set(e, "cannot write '%s': %s", path, strerror(errno));
	body(f, arg);
	if (fclose(f) != 0) {
		free(text);
		return err_set(e, "cannot write '%s': %s", path, strerror(errno));
	}
	rc = outfile_add(t, path, text, len, 0666, e);
	free(text);
	return rc;
}

/* A transaction of one file. */
static int write_whole(const char *path, void (*body)(FILE *, const void *),
		       const void *arg, struct err *e)
{
	struct outfile_set *t = outfile_create();
	int rc = stage_whole(t, path, body, arg, e);

	if (rc == 0)
		rc = outfile_commit(t, e);
	outfile_free(t);
	return rc;
}

struct output {
	const struct plan *p;
	const struct model *m;
	const struct cluster *c;
};

static void csv_body(FILE *f, const void *arg)
{
	const struct output *o = arg;

	write_csv(f, o->p, o->m, o->c);
}

static void json_body(FILE *f, const void *arg)
{
	const struct output *o = arg;
	char *text = json_ranking(o->p, o->m, o->c);

	fputs(text, f);
	fputc('\n', f);
	cJSON_free(text);
}

int report_csv(const char *path, const struct plan *p, const struct model *m,
	       const struct cluster *c, struct err *e)
{
	struct output o = { p, m, c };

	return write_whole(path, csv_body, &o, e);
}

int report_json(const char *path, const struct plan *p, const struct model *m,
		const struct cluster *c, struct err *e)
{
	struct output o = { p, m, c };

	return write_whole(path, json_body, &o, e);
}

int report_csv_stage(struct outfile_set *t, const char *path, const struct plan *p,
		     const struct model *m, const struct cluster *c, struct err *e)
{
	struct output o = { p, m, c };

	return stage_whole(t, path, csv_body, &o, e);
}

int report_json_stage(struct outfile_set *t, const char *path, const struct plan *p,
		      const struct model *m, const struct cluster *c, struct err *e)
{
	struct output o = { p, m, c };

	return stage_whole(t, path, json_body, &o, e);
}
