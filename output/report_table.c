/* report_table.c: the ranking as an aligned table, and one strategy's time
 * and memory breakdown with its pipeline ranks (--explain; report.h). */
#include "report.h"
#include "report_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "moe.h"
#include "plan.h"
#include "trainer.h"
#include "trainer_time.h"

/* Whether every node group of c has a price (the table's cost columns). */
static bool priced(const struct cluster *c)
{
	for (int g = 0; g < c->n_group; g++)
		if (c->group[g].price_gpu_hour <= 0)
			return false;
	return true;
}

/* Under the table: for the planning options no trainer here runs (SlimPipe,
 * vocabulary parallelism, uneven micro-batches), the best row of each and
 * what it would gain over the best row a trainer runs (the first). */
static void planning_notes(FILE *out, const struct plan *p)
{
	static const char *const what[] = { "SlimPipe", "vocabulary parallelism",
					    "uneven per-replica micro-batches" };
	struct plan_row top, buf, first[3];
	const struct plan_row *best = p->n_feasible > 0 ? plan_row_get(p, 0, &top) : NULL;
	int rank[3] = { 0 }, found = 0;

	if (!best || !best->trainers)
		return;
	/* the first row of each kind, in one pass over the ranking */
	for (int i = 0; i < p->n_feasible && found < 3; i++) {
		const struct strategy *s = &plan_row_get(p, i, &buf)->s;
		const bool is[3] = { strategy_slices(s) >= 2, s->vocab_par, strategy_uneven(s) };

		for (int kind = 0; kind < 3; kind++)
			if (is[kind] && !rank[kind]) {
				rank[kind] = i + 1;
				first[kind] = buf;
				found++;
			}
	}
	for (int kind = 0; kind < 3; kind++) {
		const struct plan_row *row = &first[kind];
		const struct strategy *s = &row->s;
		char sched[24];

		if (!rank[kind])
			continue;
		report_schedule_label(sched, sizeof sched, s);
		fprintf(out, "planning only, no trainer here runs %s: best rank %d (%s, TP %d PP %d DP %d CP %d), %.3f s, %+.1f%% tokens/s and %.1f against %.1f GiB per GPU of rank 1\n",
			what[kind], rank[kind], sched, s->tp, s->pp, s->dp, s->cp, row->r.iter_s,
			100.0 * (row->r.tokens_per_s / best->r.tokens_per_s - 1),
			row->r.fullest_bytes / GiB, best->r.fullest_bytes / GiB);
	}
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

void report_table(FILE *out, const struct plan *p, const struct model *m,
		  const struct cluster *c, int top)
{
	char line[REPORT_ROW_LINE];
	bool fp8_shown = false;

	fprintf(out, "%4s %3s %3s %4s %3s %3s %3s %4s %-17s %-9s %4s %-3s %-26s %-20s %8s %9s %5s %11s",
		"rank", "TP", "PP", "DP", "CP", "EP", "mbs", "m", "schedule", "recompute", "ZeRO",
		"FP8", "layers/stage", "GPUs/stage", "iter s", "tokens/s", "MFU%", "mem GiB");
	if (priced(c))
		fprintf(out, " %9s %9s", "USD/iter", "USD/Mtok");
	fprintf(out, " %s\n", "trainers");
	for (int i = 0; i < p->n_feasible && i < top; i++) {
		struct plan_row row;

		fprintf(out, "%s\n", report_row_line(line, sizeof line, i + 1, plan_row_get(p, i, &row), m, c));
		fp8_shown |= row.s.fp8;
	}
	if (fp8_shown)
		fputs("* MFU against the BF16 peak, as on every row (the FP8 GEMMs' peak is higher)\n", out);
	planning_notes(out, p);
}

const char *report_row_line(char *buf, size_t n, int rank, const struct plan_row *row,
			    const struct model *m, const struct cluster *c)
{
	char layers[64], groups[48], sched[24], mem[48], who[40], mfu[16];
	const struct strategy *s = &row->s;
	double usd_iter, usd_mtok;
	int len;

	report_layers(layers, sizeof layers - 38, row, m);
	report_groups(groups, sizeof groups - 28, row, c);
	report_schedule_label(sched, sizeof sched, s);
	report_fullest(mem, sizeof mem, &row->r);
	/* MFU is against the BF16 peak on every row (cost_result.mfu): an FP8
	 * row's gets a '*' and report_table's note under the table */
	snprintf(mfu, sizeof mfu, "%.1f%s", 100.0 * row->r.mfu, s->fp8 ? "*" : "");
	len = snprintf(buf, n, "%4d %3d %3d %4d %3d %3d %3d %4d %-17s %-9s %4d %-3s %-26s %-20s %8.3f %9.0f %5s %11s",
		       rank, s->tp, s->pp, s->dp, s->cp, s->ep, s->mbs, s->micro_batches, sched,
		       recompute_name(s->recompute), s->zero, s->fp8 ? "yes" : "-", layers, groups,
		       row->r.iter_s, row->r.tokens_per_s, mfu, mem);
	if (len >= 0 && (size_t)len < n && priced(c)) {
		if (report_row_cost(row, &usd_iter, &usd_mtok))
			len += snprintf(buf + len, n - (size_t)len, " %9.3f %9.3f", usd_iter, usd_mtok);
		else
			len += snprintf(buf + len, n - (size_t)len, " %9s %9s", "-", "-");
	}
	if (len >= 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, " %s",
			 row->trainers ? trainer_mask_names(row->trainers, who, sizeof who) : "planning only");
	return buf;
}

/* A line of report_explain's breakdowns: a part of the iteration time (s)
 * or of the heaviest rank's memory (bytes). */
struct part {
	const char *name;
	double v;
};

/* report_explain's time: the layers and node groups, the iteration, its
 * price, its parts, and the communication hidden under compute. */
static void explain_time(FILE *out, const struct plan_row *row, const struct model *m,
			 const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	const struct cost_time *t = &r->time;
	char layers[512], groups[512];
	double usd_iter, usd_mtok;
	const struct part spent[] = {
		{ "compute", t->compute },
		{ "recompute", t->recompute },
		{ "bubble", t->bubble },
		{ "TP comm", t->tp },
		{ "CP comm", t->cp },
		{ "PP comm", t->pp },
		{ "DP comm", t->dp },
		{ "EP comm", t->ep },
		{ "vocab comm", t->vocab },
		{ "optimizer", t->optimizer },
	};
	const struct {
		const char *name;
		double v;	  /* s */
		const char *with; /* what hides it */
	} hidden[] = {
		{ "TP comm", t->tp_hidden, "with the GEMMs" },
		{ "CP comm", t->cp_hidden, "with attention (ring)" },
		{ "DP comm", t->dp_hidden, "with the backward and forward passes" },
	};

	report_layers(layers, sizeof layers, row, m);
	report_groups(groups, sizeof groups, row, c);
	fprintf(out, "  layers per stage: %s\n  node group per pipeline rank: %s\n", layers, groups);
	fprintf(out, "  iteration %.3f s, %.0f tokens/s, MFU %.1f%%%s\n", r->iter_s,
		r->tokens_per_s, 100.0 * r->mfu, s->fp8 ? " (against the BF16 peak: FP8 GEMMs' is higher)" : "");
	if (report_row_cost(row, &usd_iter, &usd_mtok))
		fprintf(out, "  cost: %.3f USD per iteration, %.3f USD per million tokens (%d GPUs, %.2f USD per hour)\n",
			usd_iter, usd_mtok, s->tp * s->cp * s->dp * s->pp, row->usd_per_hour);
	for (size_t i = 0; i < sizeof spent / sizeof spent[0]; i++) {
		fprintf(out, "    %-12s %9.3f s %5.1f%%\n", spent[i].name, spent[i].v,
			r->iter_s > 0 ? 100.0 * spent[i].v / r->iter_s : 0.0);
		if (t->tied > 0 && strcmp(spent[i].name, "DP comm") == 0)
			fprintf(out, "      of which %.3f s the tied embedding's gradient all-reduce "
				     "between the first and the last pipeline rank\n",
				t->tied);
	}
	if (s->offload_modules)
		fprintf(out, "    %-12s %9.3f s %5.1f%%\n", "offload copy", t->offload,
			r->iter_s > 0 ? 100.0 * t->offload / r->iter_s : 0.0);
	fprintf(out, "  communication hidden under compute (not in the iteration):\n");
	for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
		fprintf(out, "    %-12s %9.3f s  %s\n", hidden[i].name, hidden[i].v, hidden[i].with);
	if (s->offload_modules)
		fprintf(out, "    %-12s %9.3f s  %s\n", "offload copy", t->offload_hidden,
			"to and from host memory, beside the next layer's forward and backward");
	if (m->experts > 0)
		fprintf(out, "    %-12s %9.3f s  %s\n", "EP comm", t->ep_hidden,
			schedule_fb_overlap(s->schedule) || s->ep_overlap
				? "under the paired micro-batch's compute (forward and backward overlapped)"
				: "(none: only DualPipe, DualPipeV and --ep-overlap pair micro-batches)");
}

/* report_explain's strategy: kernels, precision and overlaps, then the
 * options it uses (CP, packed documents, the planning options, MoE), and
 * the trainers that run it or why each does not. */
static void explain_strategy(FILE *out, const struct plan_row *row, const struct model *m,
			     const struct cluster *c)
{
	const struct strategy *s = &row->s;
	char why[256];

	fprintf(out, "  kernels and precision: attention %s, norms %s, FP8 GEMMs %s, gradients %s (accumulated %s)\n",
		attention_name(s->attn), s->unfused_norm ? "unfused" : "fused", report_on_off(s->fp8),
		grad_dtype_name(s, m->fp16), s->grad_acc_unfused ? "in a pass of their own" : "in the GEMMs");
	fprintf(out, "  overlaps: TP comm %s, gradient reduction %s, parameter gather %s\n",
		report_on_off(s->tp_overlap), report_on_off(s->grad_overlap), report_on_off(s->param_overlap));
	if (s->cp > 1)
		fprintf(out, "  context parallelism: %s%s\n", report_cp_label(s),
			s->cp_comm == CP_P2P   ? " (ring, overlapped with attention)"
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
		report_uneven_label(why, sizeof why, s, c);
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
	/* each trainer's own time (trainer_times), and why it is slower */
	for (int k = 0; k < TRAINER_COUNT; k++)
		if (row->trainer_s[k] > 0)
			fprintf(out, "    %-10s %9.3f s %+6.1f%%%s%s\n", trainer_name((enum trainer)k),
				row->trainer_s[k], 100.0 * (row->trainer_s[k] / row->r.iter_s - 1),
				row->trainers >> k & 1 ? "" : ": ",
				row->trainers >> k & 1
					? ""
					: trainer_feature_diff(why, sizeof why, s, row->trainer_feat[k]));
	for (int k = 0; k < TRAINER_COUNT; k++)
		if (trainer_refusal((enum trainer)k, m, c, s, why, sizeof why))
			fprintf(out, "    not %s\n", why);
		else if (!row->why[0] && row->trainer_s[k] <= 0)
			fprintf(out, "    not %s: with its own features (%s) it does not fit in memory\n",
				trainer_name((enum trainer)k),
				trainer_feature_diff(why, sizeof why, s, row->trainer_feat[k]));
}

/* report_explain's memory: the heaviest rank's GPU, its use, and its
 * parts. */
static void explain_memory(FILE *out, const struct plan_row *row, const struct cluster *c)
{
	const struct cost_result *r = &row->r;
	const struct cost_mem *mm = &r->mem;
	const struct gpu_type *gpu = &c->gpu[c->group[row->s.group[r->heaviest_rank]].gpu];
	const struct part held[] = {
		{ "weights", mm->weights },
		{ "gradients", mm->grads },
		{ "optimizer", mm->optimizer },
		{ "activations", mm->activations },
		{ "logits", mm->logits },
		{ "allowance", mm->allowance },
	};

	fprintf(out, "  memory per GPU on pipeline rank %d (%s, %.1f GiB): %.2f GiB%s\n",
		r->heaviest_rank, gpu->name, gpu->mem_bytes / GiB, r->peak_bytes / GiB,
		r->fits ? "" : ", does not fit");
	for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
		fprintf(out, "    %-12s %9.2f GiB\n", held[i].name, held[i].v / GiB);
	if (row->s.offload_modules)
		fprintf(out, "    %-12s %9.2f GiB  in host memory, not on the GPU (%s)\n", "offloaded",
			mm->offloaded / GiB, offload_modules_name(row->s.offload_modules, '+', (char[128]){ 0 }, 128));
}

void report_explain(FILE *out, const struct plan_row *row, const struct model *m,
		    const struct cluster *c)
{
	explain_time(out, row, m, c);
	explain_strategy(out, row, m, c);
	explain_memory(out, row, c);
	report_ranks(out, row, m, c);
}

/* What each rank's allowance is made of (cost_allowance_parts). */
static void explain_allowance(FILE *out, const struct strategy *s, const struct cost_rank *x,
			      const struct cluster *c)
{
	double ctx, frag, share;

	cost_allowance_parts(c, &x[0].mem, &ctx, &frag, &share);
	if (share <= 0) {
		fprintf(out, "  allowance per GPU: the given --mem-allowance, %.2f GiB on every rank\n",
			ctx / GiB);
		return;
	}
	fprintf(out, "  allowance per GPU = %.2f GiB (CUDA context, workspaces, NCCL buffers) + %.0f%% of the\n"
		     "  activations and logits (allocator fragmentation, temporaries), GiB:",
		ctx / GiB, 100 * share);
	for (int q = 0; q < s->pp; q++) {
		cost_allowance_parts(c, &x[q].mem, &ctx, &frag, &share);
		fprintf(out, "%s rank %d %.2f + %.2f", q % 4 ? "," : "\n   ", q, ctx / GiB, frag / GiB);
	}
	fputc('\n', out);
}

/* report_ranks' selective recomputation by module: per pipeline rank, ms
 * per micro-batch of each module it reruns (cost_rank.recompute_mod);
 * nothing without selective recomputation. */
static void explain_recompute(FILE *out, const struct strategy *s, const struct cost_rank *x)
{
	if (s->recompute != RECOMPUTE_SELECTIVE)
		return;
	fprintf(out, "  selective recomputation by module, ms per micro-batch:");
	for (int q = 0; q < s->pp; q++) {
		const char *sep = "";

		fprintf(out, "%s rank %d", q % 2 ? "," : "\n   ", q);
		for (int i = 0; i < RM_COUNT; i++) {
			char name[32];

			if (!(strategy_rc_modules(s) & (1u << i)))
				continue;
			recompute_modules_name(1u << i, '+', name, sizeof name);
			fprintf(out, "%s %s %.2f", sep, name, 1e3 * x[q].recompute_mod[i]);
			sep = " +";
		}
	}
	fputc('\n', out);
}

void report_ranks(FILE *out, const struct plan_row *row, const struct model *m,
		  const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	struct cost_rank *x = report_row_ranks(row, m, c);
	char layers[96], used[48], cap[32];

	if (!x)
		return;
	fprintf(out, "  per pipeline rank: ms per micro-batch (fwd and bwd with their exposed TP/CP/EP/ZeRO-3\n"
		     "  comm%s, bwd with recomputation; p2p sends apart), bubble = idle share of the %.3f s pipeline,\n"
		     "  GiB per GPU (used/capacity and its parts):\n",
		s->offload_modules ? " and offload copies" : "", x[0].pipeline_s);
	fprintf(out, "    %4s %-18s %-10s %-12s %9s %9s %8s %7s %6s %11s %7s %7s %7s %7s %6s %6s\n",
		"rank", "GPU", "group", "layers", "fwd ms", "bwd ms", "comm ms", "p2p ms", "bubble",
		"used/cap", "weights", "grads", "optim", "activ", "logits", "allow");
	for (int q = 0; q < s->pp; q++) {
		const struct cost_rank *y = &x[q];
		const struct cost_mem *mm = &y->mem;

		report_rank_layout(layers, sizeof layers, s, m, q);
		report_gib_label(cap, sizeof cap, y->cap_bytes);
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
	explain_allowance(out, s, x, c);
	explain_recompute(out, s, x);
	free(x);
}
