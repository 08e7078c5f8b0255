/* report.c: table, CSV and breakdown of a ranking (see report.h). */
#define _POSIX_C_SOURCE 200809L
#include "report.h"

#include <cjson/cJSON.h>
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "moe.h"
#include "outfile.h"
#include "plan.h"
#include "trainer.h"
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

/* Virtual stage k in layout notation ("E+10", "9", "9+L") at *at. */
static void stage_layout(char *buf, size_t n, size_t *at, const struct strategy *s,
			 const struct model *m, int k)
{
	int a = s->first[k], b = s->first[k + 1];
	int blocks = b - a - (a == 0) - (b == m->n_layer);
	const char *sep = "";

	if (a == 0) {
		append(buf, n, at, "E");
		sep = "+";
	}
	if (blocks > 0) {
		append(buf, n, at, "%s%d", sep, blocks);
		sep = "+";
	}
	if (b == m->n_layer)
		append(buf, n, at, "%sL", sep);
}

void report_layers(char *buf, size_t n, const struct plan_row *row, const struct model *m)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < s->n_stages; k++) {
		if (k)
			append(buf, n, &at, "|");
		stage_layout(buf, n, &at, s, m, k);
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

/* The money row costs at its groups' prices: USD per iteration = USD per
 * hour of the GPUs it uses x iter_s / 3600, and per million tokens = that /
 * (gbs x seq / 1e6). Returns false (outputs untouched) when a group it uses
 * has no price. */
static bool row_cost(const struct plan_row *row, double *per_iter, double *per_mtok)
{
	double tokens = (double)row->s.gbs * row->s.seq;

	if (row->usd_per_hour <= 0)
		return false;
	*per_iter = row->usd_per_hour * row->r.iter_s / 3600;
	*per_mtok = *per_iter / (tokens / 1e6);
	return true;
}

/* Whether every node group of c has a price (the table's cost columns). */
static bool priced(const struct cluster *c)
{
	for (int g = 0; g < c->n_group; g++)
		if (c->group[g].price_gpu_hour <= 0)
			return false;
	return true;
}

/* "1f1b", "interleaved/v2", "slimpipe/8" (SlimPipe's 1F1B over 8 slices),
 * "1f1b+vocab" (vocabulary parallelism), "1f1b+uneven" (uneven
 * per-replica micro-batches). */
static void schedule_label(char *buf, size_t n, const struct strategy *s)
{
	const char *v = s->vocab_par ? "+vocab" : strategy_uneven(s) ? "+uneven" : "";

	if (strategy_slices(s) > 1)
		snprintf(buf, n, "slimpipe/%d%s", strategy_slices(s), v);
	else if (s->vp > 1)
		snprintf(buf, n, "%s/v%d%s", schedule_name(s->schedule), s->vp, v);
	else
		snprintf(buf, n, "%s%s", schedule_name(s->schedule), v);
}

/* Uneven per-replica micro-batches (strategy.uneven) as
 * "p3:4x10+g4dn:3x5+g4dn:9x4": for each part of the mixed rank, in order,
 * GROUP:RxN for R replicas that run N micro-batches each (two terms for a
 * part whose replicas differ by one, the larger count first); "" when
 * even. */
static void uneven_label(char *buf, size_t n, const struct strategy *s, const struct cluster *c)
{
	int q = strategy_uneven(s) ? cost_mixed_group(c, s) : -1;
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; q >= 0 && i < c->group[q].n_part; i++) {
		const char *name = c->group[c->group[q].part_group[i]].name;
		int r = c->group[q].part_gpus[i] / (s->tp * s->cp), lo = r > 0 ? s->uneven[i] / r : 0;
		int hi = r > 0 ? s->uneven[i] % r : 0;

		if (hi)
			append(buf, n, &at, "%s%s:%dx%d", at ? "+" : "", name, hi, lo + 1);
		if (r - hi)
			append(buf, n, &at, "%s%s:%dx%d", at ? "+" : "", name, r - hi, lo);
	}
}

/* Under the table: for the planning options no trainer here runs (SlimPipe,
 * vocabulary parallelism, uneven micro-batches), the best row of each and
 * what it would gain over the best row a trainer runs (the first). */
static void planning_notes(FILE *out, const struct plan *p)
{
	const struct plan_row *best = p->n_feasible > 0 ? &p->row[0] : NULL;

	if (!best || !best->trainers)
		return;
	for (int kind = 0; kind < 3; kind++)
		for (int i = 0; i < p->n_feasible; i++) {
			const struct plan_row *row = &p->row[i];
			const struct strategy *s = &row->s;
			const char *what[] = { "SlimPipe", "vocabulary parallelism",
					       "uneven per-replica micro-batches" };
			char sched[24];

			if (kind == 2 ? !strategy_uneven(s)
			    : kind   ? !s->vocab_par
				     : strategy_slices(s) < 2)
				continue;
			schedule_label(sched, sizeof sched, s);
			fprintf(out, "planning only, no trainer here runs %s: best rank %d (%s, TP %d PP %d DP %d CP %d), %.3f s, %+.1f%% tokens/s and %.1f against %.1f GiB per GPU of rank 1\n",
				what[kind], i + 1, sched, s->tp, s->pp,
				s->dp, s->cp, row->r.iter_s,
				100.0 * (row->r.tokens_per_s / best->r.tokens_per_s - 1),
				row->r.fullest_bytes / GiB, best->r.fullest_bytes / GiB);
			break;
		}
}

/* "CP 16 p2p", "CP 8 a2a", "CP 16 a2a+p2p (4 x 4)". */
static const char *cp_label(const struct strategy *s)
{
	static char buf[64];

	if (s->cp_comm == CP_A2A_P2P && s->cp_a2a > 1)
		snprintf(buf, sizeof buf, "CP %d a2a+p2p (%d x %d)", s->cp, s->cp_a2a,
			 s->cp / s->cp_a2a);
	else
		snprintf(buf, sizeof buf, "CP %d %s", s->cp, cp_comm_name(s->cp_comm));
	return buf;
}

/* "micro-batch balancing, dropless", "global-batch balancing, capacity
 * factor 1.25": an MoE strategy's routing assumptions. */
static void moe_label(char *buf, size_t n, const struct strategy *s)
{
	int w = snprintf(buf, n, "%s balancing, ", moe_balance_name(s->moe_balance));

	if (w < 0 || (size_t)w >= n)
		return;
	if (s->moe_capacity > 0)
		snprintf(buf + w, n - (size_t)w, "capacity factor %g", s->moe_capacity);
	else
		snprintf(buf + w, n - (size_t)w, "dropless");
}

/* Bytes as GiB with one decimal, or none when it is a whole number of
 * GiB to that precision ("80", "79.6"). */
static void gib_label(char *buf, size_t n, double bytes)
{
	double x = bytes / GiB;

	snprintf(buf, n, fabs(x - nearbyint(x)) < 0.05 ? "%.0f" : "%.1f", x);
}

void report_fullest(char *buf, size_t n, const struct cost_result *r)
{
	char cap[32];

	gib_label(cap, sizeof cap, r->fullest_cap);
	snprintf(buf, n, "%.1f/%s", r->fullest_bytes / GiB, cap);
}

void report_table(FILE *out, const struct plan *p, const struct model *m,
		  const struct cluster *c, int top)
{
	char layers[64], groups[48], sched[24], mem[48], who[40];
	double usd_iter, usd_mtok;

	fprintf(out, "%4s %3s %3s %4s %3s %3s %3s %4s %-17s %-9s %4s %-3s %-26s %-20s %8s %9s %5s %11s",
		"rank", "TP", "PP", "DP", "CP", "EP", "mbs", "m", "schedule", "recompute", "ZeRO",
		"FP8", "layers/stage", "GPUs/stage", "iter s", "tokens/s", "MFU%", "mem GiB");
	if (priced(c))
		fprintf(out, " %9s %9s", "USD/iter", "USD/Mtok");
	fprintf(out, " %s\n", "trainers");
	for (int i = 0; i < p->n_feasible && i < top; i++) {
		const struct plan_row *row = &p->row[i];
		const struct strategy *s = &row->s;

		report_layers(layers, sizeof layers - 38, row, m);
		report_groups(groups, sizeof groups - 28, row, c);
		schedule_label(sched, sizeof sched, s);
		report_fullest(mem, sizeof mem, &row->r);
		fprintf(out, "%4d %3d %3d %4d %3d %3d %3d %4d %-17s %-9s %4d %-3s %-26s %-20s %8.3f %9.0f %5.1f %11s",
			i + 1, s->tp, s->pp, s->dp, s->cp, s->ep, s->mbs, s->micro_batches, sched,
			recompute_name(s->recompute), s->zero, s->fp8 ? "yes" : "-", layers, groups,
			row->r.iter_s,
			row->r.tokens_per_s, 100.0 * row->r.mfu, mem);
		if (priced(c) && row_cost(row, &usd_iter, &usd_mtok))
			fprintf(out, " %9.3f %9.3f", usd_iter, usd_mtok);
		else if (priced(c))
			fprintf(out, " %9s %9s", "-", "-");
		fprintf(out, " %s\n", row->trainers ? trainer_mask_names(row->trainers, who, sizeof who)
						    : "planning only");
	}
	planning_notes(out, p);
}

void report_explain(FILE *out, const struct plan_row *row, const struct model *m,
		    const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	const struct cost_time *t = &r->time;
	const struct cost_mem *mm = &r->mem;
	const struct gpu_type *gpu = &c->gpu[c->group[s->group[r->heaviest_rank]].gpu];
	char layers[512], groups[512], why[256];
	double usd_iter, usd_mtok;
	const char *tn[] = { "compute", "recompute", "bubble", "TP comm", "CP comm",
			     "PP comm", "DP comm", "EP comm", "vocab comm", "optimizer" };
	const double tv[] = { t->compute, t->recompute, t->bubble, t->tp, t->cp,
			      t->pp, t->dp, t->ep, t->vocab, t->optimizer };
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
	if (row_cost(row, &usd_iter, &usd_mtok))
		fprintf(out, "  cost: %.3f USD per iteration, %.3f USD per million tokens (%d GPUs, %.2f USD per hour)\n",
			usd_iter, usd_mtok, s->tp * s->cp * s->dp * s->pp, row->usd_per_hour);
	for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++)
		fprintf(out, "    %-12s %9.3f s %5.1f%%\n", tn[i], tv[i],
			r->iter_s > 0 ? 100.0 * tv[i] / r->iter_s : 0.0);
	fprintf(out, "  communication hidden under compute (not in the iteration):\n");
	for (size_t i = 0; i < sizeof hv / sizeof hv[0]; i++)
		fprintf(out, "    %-12s %9.3f s  %s\n", hn[i], hv[i], hw[i]);
	if (m->experts > 0)
		fprintf(out, "    %-12s %9.3f s  %s\n", "EP comm", t->ep_hidden,
			schedule_fb_overlap(s->schedule)
				? "under the paired micro-batch's compute (forward and backward overlapped)"
				: "(none: only DualPipe and DualPipeV pair micro-batches)");
	fprintf(out, "  kernels and precision: attention %s, norms %s, FP8 GEMMs %s, gradients %s (accumulated %s)\n",
		attention_name(s->attn), s->unfused_norm ? "unfused" : "fused", on_off(s->fp8),
		grad_dtype_name(s, m->fp16), s->grad_acc_unfused ? "in a pass of their own" : "in the GEMMs");
	fprintf(out, "  overlaps: TP comm %s, gradient reduction %s, parameter gather %s\n",
		on_off(s->tp_overlap), on_off(s->grad_overlap), on_off(s->param_overlap));
	if (s->cp > 1)
		fprintf(out, "  context parallelism: %s%s\n", cp_label(s),
			s->cp_comm == CP_P2P ? " (ring, overlapped with attention)"
			: s->cp_comm == CP_A2A ? " (all-to-all of Q, K, V and output; exposed)"
					       : " (all-to-all inside groups, ring across them)");
	if (m->n_doc > 0)
		fprintf(out, "  packed documents (doc_lengths): the attention core does %.3f of a single %d-token document's causal work (document masking; flash kernels)\n",
			model_doc_share(m, s->seq), s->seq);
	if (s->vocab_par)
		fprintf(out, "  vocabulary parallelism (Yeung et al. 2024): embedding, head and loss split over the %d pipeline ranks, the layers balance the blocks alone (planning only)\n",
			s->pp);
	if (strategy_slices(s) > 1)
		fprintf(out, "  SlimPipe (Li et al. 2025): each micro-batch of %d tokens run as %d slices of %d under 1F1B, causal attention evened out between them (planning only)\n",
			s->seq, strategy_slices(s), s->seq / strategy_slices(s));
	if (strategy_uneven(s)) {
		uneven_label(why, sizeof why, s, c);
		fprintf(out, "  uneven micro-batches per DP replica (planning only): %s of the even %d each, the global batch of %d kept; the per-micro-batch times below are the busiest replica's over %d; gradients must be averaged by tokens (each replica's sum over the global batch), not over DP\n",
			why, s->micro_batches, s->gbs, s->micro_batches);
	}
	if (m->experts > 0) {
		moe_label(why, sizeof why, s);
		fprintf(out, "  MoE: EP %d x ETP %d x EDP %d, %s; the busiest of %d EP ranks at %.3f x the mean load (expert GEMMs, all-to-all, activations)\n",
			s->ep, strategy_etp(s), strategy_edp(s), why, s->ep, moe_load_factor(m, s));
	}
	fprintf(out, "  trainers that run it: %s\n",
		row->trainers ? trainer_mask_names(row->trainers, why, sizeof why)
			      : "none (planning only)");
	for (int k = 0; k < TRAINER_COUNT; k++)
		if (trainer_refusal((enum trainer)k, m, c, s, why, sizeof why))
			fprintf(out, "    not %s\n", why);
	fprintf(out, "  memory per GPU on pipeline rank %d (%s, %.1f GiB): %.2f GiB%s\n",
		r->heaviest_rank, gpu->name, gpu->mem_bytes / GiB, r->peak_bytes / GiB,
		r->fits ? "" : ", does not fit");
	for (size_t i = 0; i < sizeof mv / sizeof mv[0]; i++)
		fprintf(out, "    %-12s %9.2f GiB\n", mn[i], mv[i] / GiB);
	report_ranks(out, row, m, c);
}

/* Pipeline rank q's layers in layout notation, its chunks joined by ','. */
static void rank_layout(char *buf, size_t n, const struct strategy *s, const struct model *m,
			int q)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int j = 0, k = q; j < strategy_vp(s) && k < s->n_stages; k = strategy_stage(s, q, ++j)) {
		if (k > q)
			append(buf, n, &at, ",");
		stage_layout(buf, n, &at, s, m, k);
	}
}

/* cost_ranks for a row, into a malloc'd array of pp entries (caller
 * frees), or NULL if its layer costs cannot be computed again (they were
 * when it was ranked). */
static struct cost_rank *row_ranks(const struct plan_row *row, const struct model *m,
				   const struct cluster *c)
{
	struct layer_costs lc;
	struct cost_rank *x;

	if (cost_layers(&lc, m, c, &row->s, NULL, NULL) < 0)
		return NULL;
	x = xcalloc((size_t)row->s.pp, sizeof *x);
	cost_ranks(x, m, c, &row->s, &lc);
	cost_layers_free(&lc);
	return x;
}

void report_ranks(FILE *out, const struct plan_row *row, const struct model *m,
		  const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	struct cost_rank *x = row_ranks(row, m, c);
	char layers[96], used[48], cap[32];

	if (!x)
		return;
	fprintf(out, "  per pipeline rank: ms per micro-batch (fwd and bwd with their exposed TP/CP/EP/ZeRO-3\n"
		"  comm, bwd with recomputation; p2p sends apart), bubble = idle share of the %.3f s pipeline,\n"
		"  GiB per GPU (used/capacity and its parts):\n", x[0].pipeline_s);
	fprintf(out, "    %4s %-18s %-10s %-12s %9s %9s %8s %7s %6s %11s %7s %7s %7s %7s %6s %6s\n",
		"rank", "GPU", "group", "layers", "fwd ms", "bwd ms", "comm ms", "p2p ms", "bubble",
		"used/cap", "weights", "grads", "optim", "activ", "logits", "allow");
	for (int q = 0; q < s->pp; q++) {
		const struct cost_rank *y = &x[q];
		const struct cost_mem *mm = &y->mem;

		rank_layout(layers, sizeof layers, s, m, q);
		gib_label(cap, sizeof cap, y->cap_bytes);
		snprintf(used, sizeof used, "%.1f/%s", y->peak_bytes / GiB, cap);
		fprintf(out, "    %4d %-18s %-10s %-12s %9.1f %9.1f %8.1f %7.2f %5.1f%% %11s %7.2f %7.2f %7.2f %7.2f %6.2f %6.2f",
			q, c->gpu[y->gpu].name, c->group[y->group].name, layers, 1e3 * y->fwd,
			1e3 * y->bwd, 1e3 * (y->comm_fwd + y->comm_bwd), 1e3 * y->send,
			y->pipeline_s > 0 ? 100.0 * y->idle / y->pipeline_s : 0.0, used,
			mm->weights / GiB, mm->grads / GiB, mm->optimizer / GiB,
			mm->activations / GiB, mm->logits / GiB, mm->allowance / GiB);
		if (q == r->bottleneck_rank)
			fputs("  slowest", out);
		if (q == r->fullest_rank)
			fputs("  fullest", out);
		if (y->peak_bytes > y->cap_bytes)
			fprintf(out, "  over by %.2f GiB", (y->peak_bytes - y->cap_bytes) / GiB);
		fputc('\n', out);
	}
	free(x);
}

#define CELL 96

/* report_compare's cells: a label and one text per strategy. */
struct compare_line {
	char label[32];
	char cell[REPORT_COMPARE_MAX][CELL];
};

/* Appends a line labelled label to L[*n] with cell i printed by fmt
 * from the value v[i] (a number). */
static void compare_num(struct compare_line *L, int *n, const char *label, const char *fmt,
			const double *v, int k)
{
	snprintf(L[*n].label, sizeof L[*n].label, "%s", label);
	for (int i = 0; i < k; i++)
		snprintf(L[*n].cell[i], CELL, fmt, v[i]);
	(*n)++;
}

void report_compare(FILE *out, const struct plan_row *const *rows, int n,
		    const struct model *m, const struct cluster *c)
{
	static struct compare_line L[64];
	int nl = 0, width[REPORT_COMPARE_MAX];
	double v[REPORT_COMPARE_MAX] = { 0 };

	if (n > REPORT_COMPARE_MAX)
		n = REPORT_COMPARE_MAX;
#define NUM(lab, fmt, expr)                                    \
	do {                                                   \
		for (int i = 0; i < n; i++) {                  \
			const struct plan_row *row = rows[i];  \
			(void)row;                             \
			v[i] = (expr);                         \
		}                                              \
		compare_num(L, &nl, lab, fmt, v, n);           \
	} while (0)
#define TEXT(lab, ...)                                                       \
	do {                                                                 \
		snprintf(L[nl].label, sizeof L[nl].label, "%s", lab);        \
		for (int i = 0; i < n; i++) {                                \
			const struct plan_row *row = rows[i];                \
			(void)row;                                           \
			__VA_ARGS__;                                         \
		}                                                            \
		nl++;                                                        \
	} while (0)
	NUM("TP", "%.0f", row->s.tp);
	NUM("PP", "%.0f", row->s.pp);
	NUM("DP", "%.0f", row->s.dp);
	NUM("CP", "%.0f", row->s.cp);
	NUM("EP", "%.0f", row->s.ep);
	if (m->experts > 0) {
		NUM("ETP", "%.0f", strategy_etp(&row->s));
		TEXT("MoE balancing", snprintf(L[nl].cell[i], CELL, "%s",
					       moe_balance_name(row->s.moe_balance)));
		TEXT("MoE capacity factor",
		     snprintf(L[nl].cell[i], CELL, row->s.moe_capacity > 0 ? "%g" : "dropless",
			      row->s.moe_capacity));
		NUM("MoE busiest EP rank", "%.3f", moe_load_factor(m, &row->s));
	}
	NUM("micro-batch (seqs)", "%.0f", row->s.mbs);
	NUM("micro-batches", "%.0f", row->s.micro_batches);
	TEXT("schedule", schedule_label(L[nl].cell[i], CELL, &row->s));
	TEXT("CP flavour", snprintf(L[nl].cell[i], CELL, "%s",
				    row->s.cp > 1 ? cp_label(&row->s) + 3 : "-"));
	TEXT("recompute", snprintf(L[nl].cell[i], CELL, "%s", recompute_name(row->s.recompute)));
	NUM("ZeRO", "%.0f", row->s.zero);
	TEXT("FP8", snprintf(L[nl].cell[i], CELL, "%s", on_off(row->s.fp8)));
	TEXT("overlaps TP/grad/param",
	     snprintf(L[nl].cell[i], CELL, "%s/%s/%s", on_off(row->s.tp_overlap),
		      on_off(row->s.grad_overlap), on_off(row->s.param_overlap)));
	TEXT("layers/stage", report_layers(L[nl].cell[i], CELL, row, m));
	TEXT("GPUs/stage", report_groups(L[nl].cell[i], CELL, row, c));
	NUM("iteration s", "%.3f", row->r.iter_s);
	NUM("  compute s", "%.3f", row->r.time.compute);
	NUM("  recompute s", "%.3f", row->r.time.recompute);
	NUM("  bubble s", "%.3f", row->r.time.bubble);
	NUM("  TP comm s", "%.3f", row->r.time.tp);
	NUM("  CP comm s", "%.3f", row->r.time.cp);
	NUM("  PP comm s", "%.3f", row->r.time.pp);
	NUM("  DP comm s", "%.3f", row->r.time.dp);
	NUM("  EP comm s", "%.3f", row->r.time.ep);
	NUM("  vocab comm s", "%.3f", row->r.time.vocab);
	NUM("  optimizer s", "%.3f", row->r.time.optimizer);
	NUM("tokens/s", "%.0f", row->r.tokens_per_s);
	NUM("MFU %", "%.1f", 100.0 * row->r.mfu);
	TEXT("fullest GPU used/cap", report_fullest(L[nl].cell[i], CELL, &row->r));
	TEXT("fullest rank",
	     snprintf(L[nl].cell[i], CELL, "%d (%s)", row->r.fullest_rank,
		      c->gpu[c->group[row->s.group[row->r.fullest_rank]].gpu].name));
	NUM("heaviest rank GiB", "%.1f", row->r.peak_bytes / GiB);
	TEXT("slowest rank",
	     snprintf(L[nl].cell[i], CELL, "%d (%s)", row->r.bottleneck_rank,
		      c->gpu[c->group[row->s.group[row->r.bottleneck_rank]].gpu].name));
	NUM("  fwd ms/micro-batch", "%.1f", 1e3 * row->r.bottleneck_fwd);
	NUM("  bwd ms/micro-batch", "%.1f", 1e3 * row->r.bottleneck_bwd);
	NUM("  p2p ms/micro-batch", "%.2f", 1e3 * row->r.bottleneck_send);
	TEXT("trainers", {
		unsigned k = trainer_mask(m, c, &row->s);

		if (k)
			trainer_mask_names(k, L[nl].cell[i], CELL);
		else
			snprintf(L[nl].cell[i], CELL, "planning only");
	});
	TEXT("fits", {
		struct cost_rank *x = row->r.fits ? NULL : row_ranks(row, m, c);
		int q = row->r.overflow_rank;

		if (row->r.fits)
			snprintf(L[nl].cell[i], CELL, row->why[0] ? "yes (the trainer cannot run it)" : "yes");
		else if (x && q >= 0)
			snprintf(L[nl].cell[i], CELL, "no: rank %d over by %.1f GiB", q,
				 (x[q].peak_bytes - x[q].cap_bytes) / GiB);
		else
			snprintf(L[nl].cell[i], CELL, "no");
		free(x);
	});
#undef NUM
#undef TEXT
	for (int i = 0; i < n; i++) {
		width[i] = 4;
		for (int l = 0; l < nl; l++)
			if ((int)strlen(L[l].cell[i]) > width[i])
				width[i] = (int)strlen(L[l].cell[i]);
	}
	fprintf(out, "  %-22s", "");
	for (int i = 0; i < n; i++)
		fprintf(out, "  %*s#%d", width[i] - 2, "", i + 1);
	fputc('\n', out);
	for (int l = 0; l < nl; l++) {
		bool differ = false;

		for (int i = 1; i < n; i++)
			differ |= strcmp(L[l].cell[i], L[l].cell[0]) != 0;
		fprintf(out, "%c %-22s", differ ? '*' : ' ', L[l].label);
		for (int i = 0; i < n; i++)
			fprintf(out, "  %*s", width[i], L[l].cell[i]);
		fputc('\n', out);
	}
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
	/* per pipeline rank, summed up: the fullest GPU (highest share of its
	 * memory used), the slowest rank (per micro-batch), the bubble's
	 * share of the iteration */
	{ "fullest_rank", COL_NUM }, { "fullest_gpu", COL_STR }, { "fullest_mem_GiB", COL_NUM },
	{ "fullest_capacity_GiB", COL_NUM }, { "slowest_rank", COL_NUM },
	{ "slowest_fwd_ms", COL_NUM }, { "slowest_bwd_ms", COL_NUM }, { "slowest_p2p_ms", COL_NUM },
	{ "bubble_pct", COL_NUM },
	/* price: the GPUs the strategy uses (fewer than the cluster's when
	 * --objective cost leaves node groups idle) and what it costs at the
	 * groups' price_per_gpu_hour (empty in the CSV, null in the JSON,
	 * when a group it uses has none) */
	{ "gpus_used", COL_NUM }, { "cost_per_iteration_usd", COL_NUM },
	{ "cost_per_million_tokens_usd", COL_NUM },
	/* the trainers whose launch files run the strategy as planned,
	 * comma-separated, or "none" when it is planning only */
	{ "trainers", COL_STR },
	/* context parallelism's flavour: p2p, a2a or a2a+p2p (empty without
	 * CP), and the all-to-all's size for a2a+p2p (empty otherwise) */
	{ "cp_comm_type", COL_STR }, { "cp_a2a_size", COL_NUM },
	/* MoE models (empty for dense ones): the balancing loss's scope
	 * (micro-batch or global-batch), the capacity factor (empty:
	 * dropless) and the busiest EP rank's load over the mean (moe.h) */
	{ "moe_balance", COL_STR }, { "moe_capacity_factor", COL_NUM },
	{ "moe_load_factor", COL_NUM },
	/* MoE models: the expert tensor-parallel degree (empty for dense) */
	{ "etp", COL_NUM },
	/* planning options: vocabulary parallelism (on/off) and its exposed
	 * collectives, SlimPipe's slices per micro-batch (1: none) */
	{ "vocab_parallel", COL_BOOL }, { "vocab_comm_s", COL_NUM }, { "slimpipe_slices", COL_NUM },
	/* the EP all-to-all hidden under the paired micro-batch's compute
	   (DualPipe, DualPipeV; 0 otherwise), not in iteration_s */
	{ "ep_comm_hidden_s", COL_NUM },
	/* planning option: uneven micro-batches per DP replica of the mixed
	 * rank, GROUP:RxN terms (uneven_label; empty: even) */
	{ "uneven_batches", COL_STR },
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
	double usd_iter, usd_mtok;
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
	snprintf(f[i++], FIELD_MAX, "%d", r->fullest_rank);
	snprintf(f[i++], FIELD_MAX, "%s", c->gpu[c->group[s->group[r->fullest_rank]].gpu].name);
	snprintf(f[i++], FIELD_MAX, "%.6g", r->fullest_bytes / GiB);
	snprintf(f[i++], FIELD_MAX, "%.6g", r->fullest_cap / GiB);
	snprintf(f[i++], FIELD_MAX, "%d", r->bottleneck_rank);
	snprintf(f[i++], FIELD_MAX, "%.6g", 1e3 * r->bottleneck_fwd);
	snprintf(f[i++], FIELD_MAX, "%.6g", 1e3 * r->bottleneck_bwd);
	snprintf(f[i++], FIELD_MAX, "%.6g", 1e3 * r->bottleneck_send);
	snprintf(f[i++], FIELD_MAX, "%.6g", r->iter_s > 0 ? 100.0 * r->time.bubble / r->iter_s : 0.0);
	snprintf(f[i++], FIELD_MAX, "%d", s->tp * s->cp * s->dp * s->pp);
	if (row_cost(row, &usd_iter, &usd_mtok)) {
		snprintf(f[i++], FIELD_MAX, "%.6g", usd_iter);
		snprintf(f[i++], FIELD_MAX, "%.6g", usd_mtok);
	} else {
		f[i++][0] = '\0';
		f[i++][0] = '\0';
	}
	trainer_mask_names(row->trainers, f[i++], FIELD_MAX);
	snprintf(f[i++], FIELD_MAX, "%s", s->cp > 1 ? cp_comm_name(s->cp_comm) : "");
	if (s->cp > 1 && s->cp_comm == CP_A2A_P2P)
		snprintf(f[i++], FIELD_MAX, "%d", s->cp_a2a);
	else
		f[i++][0] = '\0';
	snprintf(f[i++], FIELD_MAX, "%s", m->experts ? moe_balance_name(s->moe_balance) : "");
	if (m->experts && s->moe_capacity > 0)
		snprintf(f[i++], FIELD_MAX, "%.6g", s->moe_capacity);
	else
		f[i++][0] = '\0';
	if (m->experts)
		snprintf(f[i++], FIELD_MAX, "%.6g", moe_load_factor(m, s));
	else
		f[i++][0] = '\0';
	if (m->experts)
		snprintf(f[i++], FIELD_MAX, "%d", strategy_etp(s));
	else
		f[i++][0] = '\0';
	snprintf(f[i++], FIELD_MAX, "%d", s->vocab_par);
	snprintf(f[i++], FIELD_MAX, "%.6g", r->time.vocab);
	snprintf(f[i++], FIELD_MAX, "%d", strategy_slices(s));
	snprintf(f[i++], FIELD_MAX, "%.6g", r->time.ep_hidden);
	uneven_label(f[i++], FIELD_MAX, s, c);
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

/* A number of the JSON as the CSV writes it (6 digits, row_fields), null
 * when empty or not finite; added raw, which spares cJSON's printing. */
static void json_number(cJSON *o, const char *name, const char *text)
{
	double v = strtod(text, NULL);

	if (!text[0] || !isfinite(v))
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddRawToObject(o, name, text);
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
		if (x) {
			const struct cost_rank *y = &x[strategy_rank(s, k)];
			const struct cost_mem *mm = &y->mem;
			const char *kn[] = {
				"fwd_ms", "bwd_ms", "p2p_ms", "rank_fwd_ms", "rank_bwd_ms",
				"rank_comm_ms", "rank_p2p_ms", "rank_idle_s", "rank_bubble_pct",
				"rank_dp_comm_s", "rank_optimizer_s", "rank_mem_GiB",
				"rank_capacity_GiB", "rank_weights_GiB", "rank_grads_GiB",
				"rank_optimizer_GiB", "rank_activations_GiB", "rank_logits_GiB",
				"rank_allowance_GiB",
			};
			const double kv[] = {
				1e3 * st[k].fwd, 1e3 * st[k].bwd, 1e3 * st[k].send,
				1e3 * y->fwd, 1e3 * y->bwd, 1e3 * (y->comm_fwd + y->comm_bwd),
				1e3 * y->send, y->idle,
				y->pipeline_s > 0 ? 100.0 * y->idle / y->pipeline_s : 0.0,
				y->dp, y->optimizer, y->peak_bytes / GiB, y->cap_bytes / GiB,
				mm->weights / GiB, mm->grads / GiB, mm->optimizer / GiB,
				mm->activations / GiB, mm->logits / GiB, mm->allowance / GiB,
			};

			/* the rank's keys once, on its first virtual stage */
			for (size_t i = 0; i < (k < s->pp ? sizeof kv / sizeof *kv : 3); i++) {
				char x[32];

				/* 6 digits, as the columns (row_fields) */
				snprintf(x, sizeof x, "%.6g", kv[i]);
				json_number(o, kn[i], x);
			}
		}
		cJSON_AddItemToArray(a, o);
	}
	free(x);
	free(st);
	return a;
}

/* Writes the ranking to f: the summary keys, then "strategies", one
 * object per line, each built, printed and freed in turn, so that memory
 * holds one row's tree at a time (a ranking can have 100,000 rows). */
static void write_json(FILE *f, const struct plan *p, const struct model *m,
		       const struct cluster *c)
{
	static char fields[N_COLUMNS][FIELD_MAX];
	cJSON *doc = cJSON_CreateObject();
	char *text;
	size_t n;

	cJSON_AddStringToObject(doc, "model", m->name);
	cJSON_AddStringToObject(doc, "cluster", c->name);
	cJSON_AddNumberToObject(doc, "gpus", c->total_gpus);
	cJSON_AddNumberToObject(doc, "strategies_costed", (double)p->evaluated);
	cJSON_AddBoolToObject(doc, "truncated", p->truncated);
	cJSON_AddNumberToObject(doc, "degrees", p->degrees);
	cJSON_AddNumberToObject(doc, "degrees_searched", p->degrees_searched);
	cJSON_AddNumberToObject(doc, "search_s", p->search_s);
	text = cJSON_PrintUnformatted(doc);
	n = strlen(text);	/* an object's text ends with its '}' */
	fprintf(f, "%.*s,\"strategies\":[", (int)(n - 1), text);
	cJSON_free(text);
	cJSON_Delete(doc);
	for (int r = 0; r < p->n_row; r++) {
		cJSON *o = cJSON_CreateObject();

		row_fields(fields, r < p->n_feasible ? r + 1 : 0, &p->row[r], m, c);
		for (size_t i = 0; i < N_COLUMNS; i++) {
			if (columns[i].kind == COL_NUM)
				json_number(o, columns[i].name, fields[i]);
			else if (columns[i].kind == COL_BOOL)
				cJSON_AddBoolToObject(o, columns[i].name, strcmp(fields[i], "1") == 0);
			else
				cJSON_AddStringToObject(o, columns[i].name, fields[i]);
		}
		cJSON_AddItemToObject(o, "stages", json_stages(&p->row[r], m, c));
		if (r < p->n_feasible)	/* plan_row.gap_pct */
			cJSON_AddNumberToObject(o, "gap_pct", p->row[r].gap_pct);
		else
			cJSON_AddNullToObject(o, "gap_pct");
		text = cJSON_PrintUnformatted(o);
		fprintf(f, "%s\n%s", r ? "," : "", text);
		cJSON_free(text);
		cJSON_Delete(o);
	}
	fputs("]}\n", f);
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

	write_json(f, o->p, o->m, o->c);
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
