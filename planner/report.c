/* report.c: table, CSV and breakdown of a ranking (see report.h). */
#define _POSIX_C_SOURCE 200809L
#include "report.h"

#include <csv.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "model.h"
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

	fprintf(out, "%4s %3s %3s %4s %3s %3s %4s %-14s %-9s %4s %-26s %-20s %8s %9s %5s %8s\n",
		"rank", "TP", "PP", "DP", "CP", "mbs", "m", "schedule", "recompute", "ZeRO",
		"layers/stage", "GPUs/stage", "iter s", "tokens/s", "MFU%", "mem GiB");
	for (int i = 0; i < p->n_feasible && i < top; i++) {
		const struct plan_row *row = &p->row[i];
		const struct strategy *s = &row->s;

		report_layers(layers, sizeof layers - 38, row, m);
		report_groups(groups, sizeof groups - 28, row, c);
		schedule_label(sched, sizeof sched, s);
		fprintf(out, "%4d %3d %3d %4d %3d %3d %4d %-14s %-9s %4d %-26s %-20s %8.3f %9.0f %5.1f %8.1f\n",
			i + 1, s->tp, s->pp, s->dp, s->cp, s->mbs, s->micro_batches, sched,
			recompute_name(s->recompute), s->zero, layers, groups, row->r.iter_s,
			row->r.tokens_per_s, 100.0 * row->r.mfu, row->r.peak_bytes / GiB);
	}
}

void report_explain(FILE *out, const struct plan_row *row, const struct model *m,
		    const struct cluster *c)
{
	const struct cost_result *r = &row->r;
	const struct cost_time *t = &r->time;
	const struct cost_mem *mm = &r->mem;
	const struct gpu_type *gpu = &c->gpu[c->group[row->s.group[r->heaviest_rank]].gpu];
	char layers[512], groups[512];
	const char *tn[] = { "compute", "recompute", "bubble", "TP comm", "CP comm",
			     "PP comm", "DP comm", "EP comm", "optimizer" };
	const double tv[] = { t->compute, t->recompute, t->bubble, t->tp, t->cp,
			      t->pp, t->dp, t->ep, t->optimizer };
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
	fprintf(out, "  memory per GPU on pipeline rank %d (%s, %.1f GiB): %.2f GiB%s\n",
		r->heaviest_rank, gpu->name, gpu->mem_bytes / GiB, r->peak_bytes / GiB,
		r->fits ? "" : ", does not fit");
	for (size_t i = 0; i < sizeof mv / sizeof mv[0]; i++)
		fprintf(out, "    %-12s %9.2f GiB\n", mn[i], mv[i] / GiB);
}

/* The CSV columns; each name carries its unit. */
static const char *const csv_header[] = {
	"rank", "fits", "tp", "pp", "dp", "cp", "ep", "sp", "micro_batch_seqs",
	"micro_batches", "global_batch_seqs", "seq_tokens", "schedule",
	"virtual_stages", "recompute", "zero_stage", "layers_per_stage",
	"groups_per_rank", "iteration_s", "tokens_per_s", "mfu_pct",
	"peak_mem_GiB", "compute_s", "recompute_s", "bubble_s", "tp_comm_s",
	"cp_comm_s", "pp_comm_s", "dp_comm_s", "ep_comm_s", "optimizer_s",
	"weights_GiB", "grads_GiB", "optimizer_GiB", "activations_GiB",
	"logits_GiB", "allowance_GiB", "reason",
};

/* Writes one field: plain, or through csv_fwrite when it needs quoting
 * (STYLE.md library notes). */
static void field(FILE *f, const char *s, bool first)
{
	size_t n = strlen(s);

	if (!first)
		fputc(',', f);
	if (strpbrk(s, ",\"\r\n") || (n && (s[0] == ' ' || s[n - 1] == ' ')))
		csv_fwrite(f, s, n);
	else
		fputs(s, f);
}

static void fieldf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fieldf(FILE *f, const char *fmt, ...)
{
	char buf[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	field(f, buf, false);
}

static void csv_row(FILE *f, int rank, const struct plan_row *row,
		    const struct model *m, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	char layers[1024], groups[1024];

	report_layers(layers, sizeof layers, row, m);
	report_groups(groups, sizeof groups, row, c);
	fprintf(f, "%d,%s,%d,%d,%d,%d,%d,%s,%d,%d,%d,%d", rank, r->fits ? "yes" : "no",
		s->tp, s->pp, s->dp, s->cp, s->ep, s->sp ? "yes" : "no", s->mbs,
		s->micro_batches, s->gbs, s->seq);
	field(f, schedule_name(s->schedule), false);
	fieldf(f, "%d", s->vp);
	field(f, recompute_name(s->recompute), false);
	fieldf(f, "%d", s->zero);
	field(f, layers, false);
	field(f, groups, false);
	fieldf(f, "%.6g", r->iter_s);
	fieldf(f, "%.6g", r->tokens_per_s);
	fieldf(f, "%.4g", 100.0 * r->mfu);
	fieldf(f, "%.4g", r->peak_bytes / GiB);
	const double tv[] = { r->time.compute, r->time.recompute, r->time.bubble,
			      r->time.tp, r->time.cp, r->time.pp, r->time.dp,
			      r->time.ep, r->time.optimizer };
	for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++)
		fieldf(f, "%.6g", tv[i]);
	const double mv[] = { r->mem.weights, r->mem.grads, r->mem.optimizer,
			      r->mem.activations, r->mem.logits, r->mem.allowance };
	for (size_t i = 0; i < sizeof mv / sizeof mv[0]; i++)
		fieldf(f, "%.4g", mv[i] / GiB);
	field(f, row->why, false);
	fputc('\n', f);
}

static void write_csv(FILE *f, const struct plan *p, const struct model *m,
		      const struct cluster *c)
{
	for (size_t i = 0; i < sizeof csv_header / sizeof csv_header[0]; i++)
		field(f, csv_header[i], i == 0);
	fputc('\n', f);
	for (int i = 0; i < p->n_row; i++)
		csv_row(f, i < p->n_feasible ? i + 1 : 0, &p->row[i], m, c);
}

int report_csv(const char *path, const struct plan *p, const struct model *m,
	       const struct cluster *c, struct err *e)
{
	char tmp[4096];
	FILE *f;
	int fd;

	if (strcmp(path, "-") == 0) {
		write_csv(stdout, p, m, c);
		return fflush(stdout) ? err_set(e, "cannot write the CSV to stdout: %s",
						strerror(errno)) : 0;
	}
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
		return err_set(e, "CSV path '%s' is too long", path);
	fd = mkstemp(tmp);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		int en = errno;

		if (fd >= 0)
			close(fd);
		return err_set(e, "cannot create '%s': %s", path, strerror(en));
	}
	write_csv(f, p, m, c);
	if (ferror(f) | fclose(f) || rename(tmp, path)) {
		int en = errno;

		remove(tmp);
		return err_set(e, "cannot write '%s': %s", path, strerror(en));
	}
	return 0;
}
