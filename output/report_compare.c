/* report_compare.c: strategies side by side, one column each, a '*' on the
 * lines where they differ (--compare; report.h). */
#include "report.h"
#include "report_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "moe.h"
#include "plan.h"
#include "trainer.h"

#define CELL	  96
#define MAX_LINES 64

/* A line of the comparison: a label and one text per strategy. */
struct compare_line {
	char label[32];
	char cell[REPORT_COMPARE_MAX][CELL];
};

/* The comparison being built: the strategies and their lines so far. */
struct compare {
	const struct plan_row *const *rows;
	int n;
	const struct model *m;
	const struct cluster *c;
	struct compare_line line[MAX_LINES];
	int n_line;
};

/* Whether any strategy of t offloads activations (its lines appear then). */
static bool any_offload(const struct compare *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->rows[i]->s.offload_modules)
			return true;
	return false;
}

/* Whether any strategy of t has the tied embedding's all-reduce exposed
 * (its line appears then). */
static bool any_tied(const struct compare *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->rows[i]->r.time.tied > 0)
			return true;
	return false;
}

/* Starts a line labelled label and returns it. */
static struct compare_line *new_line(struct compare *t, const char *label)
{
	struct compare_line *l = &t->line[t->n_line++];

	snprintf(l->label, sizeof l->label, "%s", label);
	return l;
}

/* NUM adds a line whose cells print the number expr by fmt; TEXT one
 * whose cells the statements write (cell, CELL bytes). Both evaluate their
 * argument once per strategy, with row the strategy's plan_row, in a
 * function whose comparison is t. */
#define NUM(lab, fmt, expr)                                               \
	do {                                                              \
		struct compare_line *l_ = new_line(t, lab);               \
		for (int i = 0; i < t->n; i++) {                          \
			const struct plan_row *row = t->rows[i];          \
			snprintf(l_->cell[i], CELL, fmt, (double)(expr)); \
		}                                                         \
	} while (0)
#define TEXT(lab, ...)                                           \
	do {                                                     \
		struct compare_line *l_ = new_line(t, lab);      \
		for (int i = 0; i < t->n; i++) {                 \
			const struct plan_row *row = t->rows[i]; \
			char *cell = l_->cell[i];                \
			(void)row;                               \
			__VA_ARGS__;                             \
		}                                                \
	} while (0)

/* The lines of the strategies themselves: degrees, MoE routing (its
 * dispatcher, grouped GEMM and EP overlap too), batches,
 * schedule, recomputation, ZeRO, precision, overlaps, layers and groups;
 * where any strategy sets them, the recomputation's modules beyond
 * core_attn, the offloaded modules, bf16 Adam moments and the deferred
 * LM-head weight gradients. */
static void plan_lines(struct compare *t)
{
	const struct model *m = t->m;
	bool mods = false, moments = false, defer = false;

	for (int i = 0; i < t->n; i++) {
		const struct strategy *s = &t->rows[i]->s;

		mods |= (strategy_rc_modules(s) & ~RM_CORE_ATTN) != 0;
		moments |= s->moment_bytes == 2;
		defer |= strategy_deferred(s) > 0;
	}

	NUM("TP", "%.0f", row->s.tp);
	NUM("PP", "%.0f", row->s.pp);
	NUM("DP", "%.0f", row->s.dp);
	NUM("CP", "%.0f", row->s.cp);
	NUM("EP", "%.0f", row->s.ep);
	if (m->experts > 0) {
		NUM("ETP", "%.0f", strategy_etp(&row->s));
		TEXT("MoE balancing",
		     snprintf(cell, CELL, "%s", moe_balance_name(row->s.moe_balance)));
		TEXT("MoE capacity factor",
		     snprintf(cell, CELL, row->s.moe_capacity > 0 ? "%g" : "dropless",
			      row->s.moe_capacity));
		NUM("MoE busiest EP rank", "%.3f", moe_load_factor(m, &row->s));
		TEXT("MoE dispatcher",
		     snprintf(cell, CELL, "%s", moe_dispatcher_name(row->s.moe_dispatcher)));
		TEXT("MoE grouped GEMM", snprintf(cell, CELL, "%s", report_on_off(row->s.grouped_gemm)));
		TEXT("EP overlap", snprintf(cell, CELL, "%s", report_on_off(row->s.ep_overlap)));
	}
	NUM("micro-batch (seqs)", "%.0f", row->s.mbs);
	NUM("micro-batches", "%.0f", row->s.micro_batches);
	TEXT("schedule", report_schedule_label(cell, CELL, &row->s));
	TEXT("CP flavour",
	     snprintf(cell, CELL, "%s", row->s.cp > 1 ? report_cp_label(&row->s) + 3 : "-"));
	TEXT("recompute", snprintf(cell, CELL, "%s", recompute_name(row->s.recompute)));
	if (mods)
		TEXT("recompute modules",
		     recompute_modules_name(strategy_rc_modules(&row->s), '+', cell, CELL));
	if (any_offload(t))
		TEXT("offload modules", {
			if (row->s.offload_modules)
				offload_modules_name(row->s.offload_modules, '+', cell, CELL);
			else
				snprintf(cell, CELL, "-");
		});
	NUM("ZeRO", "%.0f", row->s.zero);
	if (moments)
		TEXT("Adam moments", snprintf(cell, CELL, "%s", optim_dtype_name(&row->s)));
	if (defer)
		NUM("deferred head wgrads", "%.0f", strategy_deferred(&row->s));
	TEXT("FP8", snprintf(cell, CELL, "%s", report_on_off(row->s.fp8)));
	TEXT("overlaps TP/grad/param",
	     snprintf(cell, CELL, "%s/%s/%s", report_on_off(row->s.tp_overlap),
		      report_on_off(row->s.grad_overlap), report_on_off(row->s.param_overlap)));
	TEXT("layers/stage", report_layers(cell, CELL, row, m));
	TEXT("GPUs/stage", report_groups(cell, CELL, row, t->c));
}

/* The lines of the iteration time and its parts (the offload copies where
 * any strategy offloads, the tied embedding's all-reduce where any has
 * it), tokens/s and MFU. */
static void time_lines(struct compare *t)
{
	NUM("iteration s", "%.3f", row->r.iter_s);
	NUM("  compute s", "%.3f", row->r.time.compute);
	NUM("  recompute s", "%.3f", row->r.time.recompute);
	NUM("  bubble s", "%.3f", row->r.time.bubble);
	NUM("  TP comm s", "%.3f", row->r.time.tp);
	NUM("  CP comm s", "%.3f", row->r.time.cp);
	NUM("  PP comm s", "%.3f", row->r.time.pp);
	NUM("  DP comm s", "%.3f", row->r.time.dp);
	if (any_tied(t))
		NUM("    tied all-reduce s", "%.3f", row->r.time.tied);
	NUM("  EP comm s", "%.3f", row->r.time.ep);
	NUM("  vocab comm s", "%.3f", row->r.time.vocab);
	NUM("  optimizer s", "%.3f", row->r.time.optimizer);
	if (any_offload(t))
		NUM("  offload copy s", "%.3f", row->r.time.offload);
	NUM("tokens/s", "%.0f", row->r.tokens_per_s);
	NUM("MFU % of BF16 peak", "%.1f", 100.0 * row->r.mfu); /* FP8 rows too */
}

/* The lines of the pipeline ranks: the fullest GPU, the heaviest rank (and
 * its bytes in host memory where any strategy offloads), and the slowest
 * rank with its ms per micro-batch. */
static void rank_lines(struct compare *t)
{
	const struct cluster *c = t->c;

	TEXT("fullest GPU used/cap", report_fullest(cell, CELL, &row->r));
	TEXT("fullest rank",
	     snprintf(cell, CELL, "%d (%s)", row->r.fullest_rank,
		      c->gpu[c->group[row->s.group[row->r.fullest_rank]].gpu].name));
	NUM("heaviest rank GiB", "%.1f", row->r.peak_bytes / GiB);
	if (any_offload(t))
		NUM("  offloaded GiB (host)", "%.2f", row->r.mem.offloaded / GiB);
	TEXT("slowest rank",
	     snprintf(cell, CELL, "%d (%s)", row->r.bottleneck_rank,
		      c->gpu[c->group[row->s.group[row->r.bottleneck_rank]].gpu].name));
	NUM("  fwd ms/micro-batch", "%.1f", 1e3 * row->r.bottleneck_fwd);
	NUM("  bwd ms/micro-batch", "%.1f", 1e3 * row->r.bottleneck_bwd);
	NUM("  p2p ms/micro-batch", "%.2f", 1e3 * row->r.bottleneck_send);
}

/* The closing lines: the trainers that run each strategy, and whether it
 * fits (else the first rank over its memory and by how many GiB). */
static void verdict_lines(struct compare *t)
{
	const struct model *m = t->m;
	const struct cluster *c = t->c;

	TEXT("trainers", {
		unsigned k = row->trainers; /* those at its time (trainer_times) */

		if (k)
			trainer_mask_names(k, cell, CELL);
		else
			snprintf(cell, CELL, "planning only");
	});
	TEXT("fits", {
		struct cost_rank *x = row->r.fits ? NULL : report_row_ranks(row, m, c);
		int q = row->r.overflow_rank;

		if (row->r.fits)
			snprintf(cell, CELL, row->why[0] ? "yes (the trainer cannot run it)" : "yes");
		else if (x && q >= 0)
			snprintf(cell, CELL, "no: rank %d over by %.1f GiB", q,
				 (x[q].peak_bytes - x[q].cap_bytes) / GiB);
		else
			snprintf(cell, CELL, "no");
		free(x);
	});
}

#undef NUM
#undef TEXT

/* Prints the lines of t: a header of strategy numbers, then each line with
 * its cells right-aligned in columns as wide as their widest cell (at
 * least 4), '*' first where the cells differ. */
static void print_lines(FILE *out, const struct compare *t)
{
	int width[REPORT_COMPARE_MAX];

	for (int i = 0; i < t->n; i++) {
		width[i] = 4;
		for (int l = 0; l < t->n_line; l++)
			if ((int)strlen(t->line[l].cell[i]) > width[i])
				width[i] = (int)strlen(t->line[l].cell[i]);
	}
	fprintf(out, "  %-22s", "");
	for (int i = 0; i < t->n; i++)
		fprintf(out, "  %*s#%d", width[i] - 2, "", i + 1);
	fputc('\n', out);
	for (int l = 0; l < t->n_line; l++) {
		const struct compare_line *L = &t->line[l];
		bool differ = false;

		for (int i = 1; i < t->n; i++)
			differ |= strcmp(L->cell[i], L->cell[0]) != 0;
		fprintf(out, "%c %-22s", differ ? '*' : ' ', L->label);
		for (int i = 0; i < t->n; i++)
			fprintf(out, "  %*s", width[i], L->cell[i]);
		fputc('\n', out);
	}
}

void report_compare(FILE *out, const struct plan_row *const *rows, int n,
		    const struct model *m, const struct cluster *c)
{
	static struct compare t; /* some 50 KB of cells: not on the stack */

	t.rows = rows;
	t.n = n < REPORT_COMPARE_MAX ? n : REPORT_COMPARE_MAX;
	t.m = m;
	t.c = c;
	t.n_line = 0;
	plan_lines(&t);
	time_lines(&t);
	rank_lines(&t);
	verdict_lines(&t);
	print_lines(out, &t);
}
