/* cost.c: the cost model's public face for the search: the pipeline frame
 * for the partition search, and the full evaluation of a placed and
 * partitioned strategy (time breakdown, memory, MFU, per stage and per
 * rank), from layer_cost.c's per-layer costs. COSTMODEL.md has the
 * formulas; schedule.c and memory.c implement them. */
#include "cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "collective.h"
#include "cost_int.h"
#include "compute.h"
#include "memory.h"
#include "model.h"
#include "schedule.h"
#include "util.h"

/* Model-state bytes per GPU of the tied duplicate (tied_dense): the head's
 * states per parameter times V*h/t. */
static double tied_bytes(const struct model *m, const struct strategy *s)
{
	const struct layer *head = &m->layer[m->n_layer - 1];
	struct layer_mem lm;

	if (!m->tied || head->params <= 0)
		return 0;
	memory_layer(&lm, m, m->n_layer - 1, s);
	return (lm.weights + lm.grads + lm.optimizer) * cost_tied_dense(m, s) * s->tp / head->params;
}

/* The pipeline frame (cost.h): schedule weights (schedule_weights), the
 * activations in flight per virtual stage (schedule_inflight), the p2p
 * seconds per micro-batch from virtual stage k to k+1 (comm_pp_send; with
 * interleaving the boundaries between chunks, wrap-arounds from rank pp-1
 * to rank 0 included, so a rank sends v times per micro-batch), and the
 * memory cap per virtual stage: (GPU memory - context_bytes - ZeRO-3's
 * gathered layers, memory_gathered) / vp x
 * share[k], the rank's memory split over its chunks as an even split of
 * the blocks would use it: vp (S + i_k A) / (vp S + sum_j i_j A) over the
 * rank's chunks j, S and A the blocks' states and activations, i the
 * micro-batches each holds (ZB-V's and DualPipeV's legs, interleaving's
 * chunks in Megatron's order; conservative when the chunks differ;
 * cost_evaluate tests the rank as a whole); a single stage that holds tied
 * embedding and head gets the duplicate's bytes back. */
void cost_frame(struct pipeline_frame *f, const struct model *m,
		const struct cluster *c, const struct strategy *s,
		const struct layer_costs *lc)
{
	int pp = s->pp > 0 ? s->pp : 1, vp = s->vp > 0 ? s->vp : 1;
	int n = s->n_stages > 0 ? s->n_stages : pp * vp, mb = cost_micro_batches(s);
	/* uneven micro-batches: the busiest replica holds and sends as many
	 * as it runs */
	int most = cost_most_batches(c, s);
	double rho = 1.0 / 3, st = 0, act = 0, held[MAX_STAGES], gw, gg;
	const double *links = NULL, *tieds = NULL;
	bool tied;

	if (n > MAX_STAGES)
		n = MAX_STAGES;
	f->n_stages = n;
	for (int k = 0; k < n; k++)
		f->group[k] = s->group[strategy_rank(s, k)];
	if (schedule_rows[s->schedule].bubble == SCHED_BUBBLE_FR)
		rho = lc->zb_rho;
	else if (schedule_rows[s->schedule].bubble == SCHED_BUBBLE_F)
		rho = lc->zb_h2_rho;
	schedule_weights(s->schedule, mb, vp, rho, &f->a, &f->b);
	schedule_rank_weights(s->schedule, mb, vp, rho, &f->ra, &f->rb);
	if (strategy_slices(s) > 1) {
		/* SlimPipe (Li et al. 2025 Sec. 3): 1F1B over the m n slices,
		 * each 1/n of a micro-batch's c_k: T = (m n - 1) max c_k / n +
		 * sum c_k / n, a bubble of (p - 1) slice times */
		int n = strategy_slices(s);

		f->a = f->ra = mb - 1.0 / n;
		f->b = f->rb = 1.0 / n;
	}
	f->n_group = c->n_group;
	f->vp = vp;
	/* the links cost_layers computed, where they are s's */
	if (lc->link && lc->n_group == c->n_group) {
		int key[6];

		cost_link_key(key, s);
		if (!memcmp(key, lc->link_key, sizeof key))
			links = lc->link;
	}
	tied = cost_tied_paid(m, s);
	if (tied && lc->tied && lc->n_group == c->n_group) {
		int key[5];

		cost_tied_key(key, s);
		if (!memcmp(key, lc->tied_key, sizeof key))
			tieds = lc->tied;
	}
	memory_gathered(m, s, &gw, &gg);
	for (int g = 0; g < c->n_group && g < MAX_GROUPS; g++) {
		f->cap_of[g] = (cluster_group_mem(c, g) - cost_context_bytes(c) - gw - gg) / vp -
			       lc->vocab_bytes;
		f->vocab_of[g] = lc->vocab_time[g];
		for (int h = 0; h < c->n_group && h < MAX_GROUPS; h++) {
			f->link[g][h] = (links ? links[(size_t)g * c->n_group + h]
					       : comm_pp_send(m, c, g, h, s)) *
					most / mb;
			f->tied[g][h] = !tied	? 0
					: tieds ? tieds[(size_t)g * c->n_group + h]
						: cost_tied_pair(m, c, s, g, h);
		}
	}
	if (schedule_virtual(s->schedule))
		for (int l = 1; l < lc->n_layer - 1; l++) {
			st += lc->state_bytes[l] + lc->extra_bytes[l];
			act += lc->act_bytes[l];
		}
	f->hops = 0;
	for (int k = 0; k < n; k++) {
		bool hop = k && strategy_rank(s, k - 1) != strategy_rank(s, k);

		f->inflight[k] = schedule_inflight(s->schedule, pp, vp, most, k);
		if (strategy_slices(s) > 1) {
			/* SlimPipe: stage k holds p - k slices in flight, each
			 * 1/n of a micro-batch (Li et al. 2025 Sec. 3) */
			int n = strategy_slices(s);

			f->inflight[k] = fmin(pp - k, (double)mb * n) / n;
		} else if (s->vocab_par) {
			/* vocabulary parallelism's schedule holds two more
			 * micro-batches than 1F1B's p on the first stage
			 * (Yeung et al. 2024 Sec. 4, Alg. 1: p + 2); taken on
			 * every stage, at most m */
			f->inflight[k] = fmin(f->inflight[k] + 2, mb);
		}
		f->vocab[k] = lc->vocab_time[f->group[k]];
		/* none between the two stages of one rank (ZB-V's turn) */
		f->send[k] = hop ? f->link[f->group[k - 1]][f->group[k]] : 0;
		f->hops += hop;
	}
	for (int q = 0; q < pp && q < MAX_STAGES; q++)
		held[q] = 0;
	for (int k = 0; k < n; k++)
		held[strategy_rank(s, k)] += f->inflight[k];
	for (int k = 0; k < n; k++) {
		double all = held[strategy_rank(s, k)];

		f->share[k] = schedule_virtual(s->schedule) && vp * st + all * act > 0
				      ? vp * (st + f->inflight[k] * act) / (vp * st + all * act)
				      : 1;
		/* DualPipe: the stage's mirror in the other copy takes the
		   rest of its rank's memory (pipe_terms, rank_memory) */
		if (schedule_bidirectional(s->schedule))
			f->share[k] = 0.5;
		f->cap[k] = f->cap_of[f->group[k]] * f->share[k];
	}
	if (n == 1)
		f->cap[0] += tied_bytes(m, s);
}

/* The per-stage and per-rank terms of a placed and partitioned strategy
 * that cost_evaluate, cost_ranks and cost_stages share: the frame, c_k
 * (send + the layers' times on the stage's group), the ranks' totals C_r,
 * sends and memory (states + inflight x activations + extra, the
 * allowance's frag_share included, context_bytes not), and T_pipe with the
 * weights a, b it used. */
struct pipe_terms {
	struct pipeline_frame f;
	double ck[MAX_STAGES], rank_c[MAX_STAGES], rank_mem[MAX_STAGES], rank_send[MAX_STAGES];
	double send_all, t_pipe, a, b;
	int mb;
};

static void pipe_terms(struct pipe_terms *t, const struct model *m, const struct cluster *c,
		       const struct strategy *s, const struct layer_costs *lc)
{
	struct pipeline_frame *f = &t->f;
	int L = lc->n_layer, pp = s->pp;

	t->mb = cost_micro_batches(s);
	t->send_all = 0;
	cost_frame(f, m, c, s, lc);
	for (int q = 0; q < pp; q++)
		t->rank_c[q] = t->rank_mem[q] = t->rank_send[q] = 0;
	for (int k = 0; k < f->n_stages; k++) {
		int g = f->group[k];
		double st = 0, act = 0, ex = 0;

		t->ck[k] = f->send[k] + f->vocab[k];
		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			t->ck[k] += lc->time[(size_t)g * L + l];
			st += lc->state_bytes[l];
			act += lc->act_bytes[l];
			ex += lc->extra_bytes[l];
		}
		t->send_all += f->send[k];
		t->rank_mem[strategy_rank(s, k)] += st + f->inflight[k] * act + ex +
						    (k < pp ? lc->vocab_bytes : 0);
		if (!schedule_bidirectional(s->schedule)) {
			t->rank_c[strategy_rank(s, k)] += t->ck[k];
			t->rank_send[strategy_rank(s, k)] += f->send[k];
			continue;
		}
		/* DualPipe: the other copy's stage k is on rank pp - 1 - k;
		   each copy runs half the micro-batches (schedule_weights) */
		t->rank_mem[pp - 1 - k] += st + f->inflight[k] * act + ex;
		for (int q = 0; q < 2; q++) {
			t->rank_c[q ? pp - 1 - k : k] += t->ck[k] / 2;
			t->rank_send[q ? pp - 1 - k : k] += f->send[k] / 2;
		}
	}
	/* Virtual stages: the slowest rank's chunks together set the steady
	 * state, T = ra max_r C_r + rb sum_r C_r (interleaved: (m - 1/v) and
	 * 1/v, balanced (m + (p-1)/v) C, Narayanan 2021 Sec. 2.2; v = 1 gives
	 * 1F1B; schedule_rank_weights). The frame's per-chunk weights, which
	 * the partition DP uses, bound it from above. */
	if (s->vp > 1) {
		t->a = f->ra;
		t->b = f->rb;
		t->t_pipe = schedule_time(t->a, t->b, t->rank_c, pp);
	} else {
		t->a = f->a;
		t->b = f->b;
		t->t_pipe = schedule_time(t->a, t->b, t->ck, f->n_stages);
	}
}

/* The virtual stages pipeline rank q runs into stage[], returns their
 * count: its chunks (strategy_stage), or under DualPipe its stage q and
 * the other copy's stage pp - 1 - q (DeepSeek-V3 Table 2: parameters 2x),
 * each run on half the micro-batches. */
static int rank_stages(int *stage, const struct strategy *s, const struct pipeline_frame *f,
		       int q)
{
	int n = 0;

	if (schedule_bidirectional(s->schedule) && s->pp > 1) {
		stage[n++] = q;
		stage[n++] = s->pp - 1 - q;
		return n;
	}
	for (int j = 0, k = q; j < strategy_vp(s) && k < f->n_stages; k = strategy_stage(s, q, ++j))
		stage[n++] = k;
	return n;
}

/* Adds w x the parts of pipeline rank q's layers (all its chunks; per
 * micro-batch, layer_parts) to tm: compute (fwd + bwd), recompute, the
 * exposed tp, cp, ep, dp (ZeRO-3 gathers), offload copies and the hidden
 * ones. pp, bubble and optimizer are left alone. DualPipe: w / 2 of its
 * stage q and w / 2 of the other copy's stage pp - 1 - q that it also
 * runs. lt: the layers' terms of s (cost_terms_of), or NULL. */
static void rank_time(struct cost_time *tm, double w, const struct model *m,
		      const struct cluster *c, const struct strategy *s,
		      const struct pipeline_frame *f, const struct layer_terms *lt, int q)
{
	struct parts v;
	int stage[2 * MAX_STAGES], n = rank_stages(stage, s, f, q);

	cost_vocab_parts(&v, m, c, f->group[q], s, NULL);
	tm->compute += w * (v.fwd + v.bwd);
	tm->tp += w * (v.tp_f + v.tp_b);
	tm->tp_hidden += w * v.tp_h;
	tm->vocab += w * (v.vc_f + v.vc_b);
	if (schedule_bidirectional(s->schedule))
		w /= 2;
	for (int i = 0; i < n; i++) {
		int k = stage[i], g = f->group[k];
		struct parts p = { 0 };

		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			/* cannot fail: cost_layers checked the measured profiles;
			 * a block like the one before: its parts (layers_alike) */
			if (!(l > s->first[k] && (lt ? lt->alike[l] : cost_layers_alike(m, l - 1, l))))
				cost_layer_parts_kept(&p, m, l, c, g, s, lt);
			tm->compute += w * (p.fwd + p.bwd);
			tm->recompute += w * p.recompute;
			for (int j = 0; j < RM_COUNT && s->recompute == RECOMPUTE_SELECTIVE; j++)
				tm->recompute_mod[j] += w * p.rc_mod[j];
			tm->tp += w * (p.tp_f + p.tp_b + p.tp_r);
			tm->cp += w * (p.cp_f + p.cp_b + p.cp_r);
			tm->ep += w * (p.ep_f + p.ep_b + p.ep_r);
			tm->dp += w * (p.z3_f + p.z3_b);
			tm->tp_hidden += w * p.tp_h;
			tm->cp_hidden += w * p.cp_h;
			tm->ep_hidden += w * p.ep_h;
			tm->dp_hidden += w * p.z3_h;
			tm->offload += w * (p.of_f + p.of_b);
			tm->offload_hidden += w * p.of_h;
		}
	}
}

/* Pipeline rank q's memory per GPU by kind (its chunks' states,
 * inflight x activations, extra; a single stage holding tied embedding and
 * head counts the matrix once; ZeRO-3's gathered layers, memory_gathered,
 * with the weights and gradients; the allowance context_bytes +
 * frag_share of activations and logits) into *mem; returns their sum,
 * bytes. */
static double rank_memory(struct cost_mem *mem, const struct model *m, const struct cluster *c,
			  const struct strategy *s, const struct pipeline_frame *f,
			  const struct layer_terms *lt, int q)
{
	static const struct cost_mem zero_mem;
	int L = m->n_layer, stage[2 * MAX_STAGES];

	*mem = zero_mem;
	for (int i = 0, n = rank_stages(stage, s, f, q); i < n; i++)
		for (int l = s->first[stage[i]]; l < s->first[stage[i] + 1]; l++) {
			struct layer_mem lm;

			if (lt)
				lm = lt->mem[l];
			else
				memory_layer(&lm, m, l, s);
			mem->weights += lm.weights;
			mem->grads += lm.grads;
			mem->optimizer += lm.optimizer;
			mem->activations += f->inflight[stage[i]] * lm.act;
			mem->offloaded += f->inflight[stage[i]] * lm.offload;
			mem->logits += lm.extra;
		}
	if (f->n_stages == 1 && cost_tied_dense(m, s) > 0) {
		/* the duplicate, by kind, in the proportions of the head's states */
		struct layer_mem lm;
		double x = cost_tied_dense(m, s) * s->tp / m->layer[L - 1].params;

		memory_layer(&lm, m, L - 1, s);
		mem->weights -= x * lm.weights;
		mem->grads -= x * lm.grads;
		mem->optimizer -= x * lm.optimizer;
	}
	if (s->vocab_par) {
		struct layer_mem lm;

		memory_vocab(&lm, m, s);
		mem->weights += lm.weights;
		mem->grads += lm.grads;
		mem->optimizer += lm.optimizer;
		mem->activations += lm.act;
		mem->logits += lm.extra;
	}
	{
		double gw, gg;

		memory_gathered(m, s, &gw, &gg);
		mem->weights += gw;
		mem->grads += gg;
	}
	mem->allowance = cost_context_bytes(c) + cost_frag_share(c) * (mem->activations + mem->logits);
	return mem->weights + mem->grads + mem->optimizer + mem->activations + mem->logits +
	       mem->allowance;
}

/* The seconds of the LM head's weight-gradient GEMMs that s defers to the
 * flush (strategy_deferred; layer_parts' defer), which the rank of the
 * last stage runs after its last backward; 0 without deferral. */
static double deferred_wgrad(const struct model *m, const struct cluster *c,
			     const struct strategy *s, const struct pipeline_frame *f)
{
	struct parts p;

	if (!strategy_deferred(s))
		return 0;
	cost_layer_parts(&p, m, m->n_layer - 1, c, f->group[f->n_stages - 1], s, NULL);
	return p.defer;
}

/* The tied embedding's all-reduce that pipeline rank q waits for at the
 * end of its tail (pipeline_frame.tied): the first and the last rank's,
 * 0 on the others. */
static double tied_wait(const struct strategy *s, const struct pipeline_frame *f, int q)
{
	int last = strategy_rank(s, f->n_stages - 1);

	return q == 0 || q == last ? f->tied[f->group[0]][f->group[f->n_stages - 1]] : 0;
}

/* The tail the iteration adds after the pipeline: the latest end of a
 * rank's DP tail (rank_tail, dp + optimizer) counted from rank 0's last
 * backward. The last micro-batch's backward runs from the last stage down
 * to stage 0, so pipeline rank r's last backward (its stage r) ends
 * lead_r = sum over stages k < r of (backward_k + send_{k+1} / 2) before
 * rank 0's: tail = max_r (dp_r + opt_r - lead_r) >= rank 0's. Under 1F1B
 * rank 0's usually is the latest, but a later rank's reduction over a
 * slower network, or its larger step, can end after it (the event
 * simulation of timeline.c ends each rank the same way). The zero-bubble
 * schedules' deferred weight-gradient passes are counted in backward_k
 * (they shorten the lead a little). The rank that holds the LM head runs
 * the weight-gradient GEMMs it deferred (strategy_deferred) before its
 * reduction: its tail starts with them. Splits it into *dp (exposed DP),
 * *opt (the step, at most the tail) and *defer (the deferred GEMMs'
 * exposed seconds: the lead covers the tail from its start), *hidden that
 * rank's overlapped DP and the part of its DP its lead covers, *rank that
 * rank. The first and the last rank's DP tails end with the tied
 * embedding's all-reduce (tied_wait), counted as DP, and of that *dp in
 * *tied. */
static void iter_tail(double *dp, double *hidden, double *opt, double *defer, double *tied,
		      int *rank, const struct model *m, const struct cluster *c,
		      const struct strategy *s, const struct layer_costs *lc,
		      const struct pipeline_frame *f)
{
	double lead = 0, tail = -INFINITY, deferred = deferred_wgrad(m, c, s, f);
	int L = lc->n_layer, last = strategy_rank(s, f->n_stages - 1);
	const struct layer_terms *lt = cost_terms_of(lc, s);

	*dp = *hidden = *opt = *defer = *tied = 0;
	*rank = 0;
	for (int q = 0; q < s->pp; q++) {
		double d, h, o, w = q == last ? deferred : 0, x = tied_wait(s, f, q);
		int g = f->group[q];

		cost_rank_tail(&d, &h, &o, m, c, s, lc, lt, f->n_stages, q);
		d += x;
		if (w + d + o - lead > tail) {
			tail = w + d + o - lead;
			*opt = o < tail ? o : tail;
			*dp = d < tail - *opt ? d : tail - *opt;
			/* it ends the DP part: exposed first */
			*tied = x < *dp ? x : *dp;
			*defer = tail - *opt - *dp;
			/* what its lead covers of its reduction is hidden too */
			*hidden = h + (d > *dp ? d - *dp : 0);
			*rank = q;
		}
		lead += lc->vocab_time[g] - lc->vocab_fwd[g];
		for (int l = s->first[q]; l < s->first[q + 1]; l++)
			lead += lc->time[(size_t)g * L + l] - lc->fwd[(size_t)g * L + l];
		if (q + 1 < f->n_stages)
			lead += f->send[q + 1] / 2;
	}
}

/* The tail's parts of an evaluation (iter_tail): exposed DP, its hidden
 * part, the optimizer step, the deferred GEMMs' exposed seconds, and of
 * dp the tied embedding's all-reduce. */
struct tail_parts {
	double dp, hidden, opt, defer, tied;
};

/* The part of cost_evaluate that the time and the memory test need:
 * clears r, fills P, r->fits and r->overflow_rank (each rank's memory
 * against its cap), the tail (iter_tail: *t and r->tail_rank) and
 * r->iter_s. */
static void evaluate_time(struct cost_result *r, struct pipe_terms *P, struct tail_parts *t,
			  const struct model *m, const struct cluster *c,
			  const struct strategy *s, const struct layer_costs *lc)
{
	static const struct cost_result zero_result;
	const struct pipeline_frame *f = &P->f;

	*r = zero_result;
	r->overflow_rank = -1;
	r->fits = true;
	pipe_terms(P, m, c, s, lc);
	for (int q = 0; q < s->pp; q++) {
		/* the frame's caps leave out the vocabulary share, which
		 * rank_mem holds */
		double cap = (f->n_stages == 1 ? f->cap[0] : f->cap_of[f->group[q]] * f->vp) +
			     lc->vocab_bytes;

		if (P->rank_mem[q] > cap && r->fits) {
			r->fits = false;
			r->overflow_rank = q;
		}
	}
	iter_tail(&t->dp, &t->hidden, &t->opt, &t->defer, &t->tied, &r->tail_rank, m, c, s, lc, f);
	r->iter_s = P->t_pipe + t->dp + t->opt + t->defer;
}

/* The rest of cost_evaluate, after evaluate_time filled r, P and t: the
 * ranks' peaks and memory shares, the bottleneck rank's breakdown, the
 * memory by kind and the throughput. */
static void evaluate_rest(struct cost_result *r, const struct pipe_terms *P,
			  const struct tail_parts *t, const struct model *m,
			  const struct cluster *c, const struct strategy *s,
			  const struct layer_costs *lc)
{
	const struct pipeline_frame *f = &P->f;
	const struct layer_terms *lt = cost_terms_of(lc, s);
	double peaks = 0, flops = 0, best_mem = -1, best_share = -1, gw, gg;
	int pp = s->pp, mb = P->mb, bn = 0;

	memory_gathered(m, s, &gw, &gg);
	for (int q = 0; q < pp; q++) {
		double gpu_mem = cluster_group_mem(c, s->group[q]);
		double share = (P->rank_mem[q] + gw + gg + cost_context_bytes(c)) / gpu_mem;

		if (P->rank_c[q] > P->rank_c[bn])
			bn = q;
		const struct node_group *G = &c->group[s->group[q]];

		if (!G->n_part)
			peaks += (double)s->tp * s->cp * s->dp * c->gpu[G->gpu].peak_flops;
		for (int i = 0; i < G->n_part; i++)
			peaks += (double)G->part_gpus[i] * c->gpu[c->group[G->part_group[i]].gpu].peak_flops;
		if (P->rank_mem[q] > best_mem) {
			best_mem = P->rank_mem[q];
			r->heaviest_rank = q;
		}
		if (share > best_share) {
			best_share = share;
			r->fullest_rank = q;
			r->fullest_cap = gpu_mem;
		}
	}

	/* The bottleneck rank's parts, per micro-batch, times m. */
	rank_time(&r->time, mb, m, c, s, f, lt, bn);
	r->bottleneck_rank = bn;
	r->bottleneck_fwd = lc->vocab_fwd[f->group[bn]];
	for (int j = 0, k = bn; j < strategy_vp(s) && k < f->n_stages; k = strategy_stage(s, bn, ++j))
		for (int l = s->first[k]; l < s->first[k + 1]; l++)
			r->bottleneck_fwd += lc->fwd[(size_t)f->group[k] * lc->n_layer + l];
	r->bottleneck_send = P->rank_send[bn];
	r->bottleneck_bwd = pos(P->rank_c[bn] - P->rank_send[bn] - r->bottleneck_fwd);
	r->time.pp = P->a * P->rank_send[bn] + P->b * P->send_all;
	r->time.bubble = pos(P->t_pipe - mb * (P->rank_c[bn] - P->rank_send[bn]) - r->time.pp);
	r->time.dp += t->dp;
	r->time.tied = t->tied;
	r->time.dp_hidden += t->hidden;
	r->time.optimizer = t->opt;
	r->time.compute += t->defer;

	/* The heaviest rank's memory by kind; the fullest rank's total. */
	r->peak_bytes = rank_memory(&r->mem, m, c, s, f, lt, r->heaviest_rank);
	if (r->fullest_rank == r->heaviest_rank) {
		r->fullest_bytes = r->peak_bytes;
	} else {
		struct cost_mem fm;

		r->fullest_bytes = rank_memory(&fm, m, c, s, f, lt, r->fullest_rank);
	}

	if (lt)
		flops = lt->flops;
	else
		for (int l = 0; l < m->n_layer; l++)
			flops += compute_flops_per_token(m, l, s->seq);
	if (r->iter_s > 0) {
		double tokens = (double)s->gbs * s->seq;

		r->tokens_per_s = tokens / r->iter_s;
		r->mfu = peaks > 0 ? 3 * tokens * flops / (r->iter_s * peaks) : 0;
	}
}

/* Evaluation of a placed and partitioned strategy (cost.h):
 * - T_pipe = a max c_k + b sum c_k (cost_frame), c_k the stage's layer
 *   times on its group plus its send; with interleaving over the ranks'
 *   totals (pipe_terms);
 * - iter_s = T_pipe + the latest tail (deferred LM-head weight gradients,
 *   exposed DP + optimizer) counted from rank 0's last backward
 *   (iter_tail): under 1F1B rank 0 runs the iteration's last backward, the
 *   other ranks finish theirs earlier; compute holds the deferred
 *   gradients' exposed part;
 * - breakdown: compute, recompute, tp, cp, ep = m x the parts of the
 *   bottleneck rank (largest per-micro-batch time, all its chunks); pp =
 *   the p2p's share of T_pipe (its weights a, b applied to the sends: the
 *   bottleneck rank's and all of them); bubble = the rest of T_pipe (>= 0
 *   for every schedule); dp = m x its exposed ZeRO-3 gathers + the tail's
 *   DP part, optimizer its step; the _hidden parts likewise from the
 *   bottleneck rank and the rank that sets the tail;
 * - mfu (model FLOPs, Narayanan 2021 Sec. 5.1; COSTMODEL.md):
 *   3 * gbs * seq * sum_l F_l / (iter_s * sum of the peaks of the
 *   tp*cp*dp GPUs of every rank), F_l the forward FLOPs per token (no
 *   recomputation, attention counted whole);
 * - memory: per rank, its chunks' states + inflight x activations + extra
 *   (a single stage holding tied embedding and head counts the matrix
 *   once), ZeRO-3's gathered layers (memory_gathered; in the frame's
 *   caps), plus the allowance (context_bytes + frag_share of activations
 *   and logits); the heaviest rank (most bytes) and the fullest (highest
 *   share of its GPU's memory) are reported; fits if every rank is within
 *   its GPU's memory. */
_Thread_local long cost_evaluations;

void cost_evaluate(struct cost_result *r, const struct model *m,
		   const struct cluster *c, const struct strategy *s,
		   const struct layer_costs *lc)
{
	cost_evaluations++;
	cost_evaluate_again(r, m, c, s, lc);
}

void cost_evaluate_again(struct cost_result *r, const struct model *m,
			 const struct cluster *c, const struct strategy *s,
			 const struct layer_costs *lc)
{
	struct pipe_terms P;
	struct tail_parts t;

	evaluate_time(r, &P, &t, m, c, s, lc);
	evaluate_rest(r, &P, &t, m, c, s, lc);
}

void cost_evaluate_time(struct cost_result *r, const struct model *m,
			const struct cluster *c, const struct strategy *s,
			const struct layer_costs *lc)
{
	struct pipe_terms P;
	struct tail_parts t;

	cost_evaluations++;
	evaluate_time(r, &P, &t, m, c, s, lc);
}

/* Per virtual stage (cost.h): fwd = sum of layer_costs.fwd over its
 * layers on its group, bwd = sum of (time - fwd), send = the frame's. */
int cost_stages(struct cost_stage *out, const struct model *m, const struct cluster *c,
		const struct strategy *s, const struct layer_costs *lc)
{
	struct pipeline_frame f;
	int L = lc->n_layer;

	cost_frame(&f, m, c, s, lc);
	for (int k = 0; k < f.n_stages; k++) {
		struct cost_stage *x = &out[k];
		int g = f.group[k];

		x->rank = strategy_rank(s, k);
		x->first = s->first[k];
		x->n_layers = stage_layers(s, k);
		x->fwd = lc->vocab_fwd[g];
		x->bwd = lc->vocab_time[g] - lc->vocab_fwd[g];
		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			x->fwd += lc->fwd[(size_t)g * L + l];
			x->bwd += lc->time[(size_t)g * L + l] - lc->fwd[(size_t)g * L + l];
		}
		x->send = f.send[k];
	}
	return f.n_stages;
}

/* Per pipeline rank (cost.h): pipe_terms, rank_time with weight 1 (per
 * micro-batch), the sides split as layer_parts' fwd/bwd/recompute, the
 * tail of each rank (rank_tail) and its memory (rank_memory). */
int cost_ranks(struct cost_rank *out, const struct model *m, const struct cluster *c,
	       const struct strategy *s, const struct layer_costs *lc)
{
	static const struct cost_rank zero_rank;
	struct pipe_terms P;
	const struct pipeline_frame *f = &P.f;
	int pp = s->pp;

	pipe_terms(&P, m, c, s, lc);
	for (int q = 0; q < pp; q++) {
		struct cost_rank *x = &out[q];
		struct cost_time tm = { 0 };
		double hid;

		*x = zero_rank;
		x->rank = q;
		x->group = s->group[q];
		x->gpu = c->group[x->group].gpu;
		x->n_chunks = 0;
		{
			struct parts p;

			cost_vocab_parts(&p, m, c, x->group, s, NULL);
			x->compute_fwd += p.fwd;
			x->compute_bwd += p.bwd;
			x->comm_fwd += p.tp_f + p.vc_f;
			x->comm_bwd += p.tp_b + p.vc_b;
		}
		for (int j = 0, k = q; j < strategy_vp(s) && k < f->n_stages; k = strategy_stage(s, q, ++j)) {
			x->n_layers += stage_layers(s, k);
			x->n_chunks++;
			for (int l = s->first[k]; l < s->first[k + 1]; l++) {
				struct parts p = { 0 };

				cost_layer_parts(&p, m, l, c, f->group[k], s, NULL);
				x->compute_fwd += p.fwd;
				x->compute_bwd += p.bwd;
				x->comm_fwd += p.tp_f + p.cp_f + p.ep_f + p.z3_f + p.of_f;
				x->comm_bwd += p.tp_b + p.cp_b + p.ep_b + p.z3_b + p.of_b +
					       p.tp_r + p.cp_r + p.ep_r;
			}
		}
		rank_time(&tm, 1, m, c, s, f, cost_terms_of(lc, s), q);
		x->recompute = tm.recompute;
		memcpy(x->recompute_mod, tm.recompute_mod, sizeof x->recompute_mod);
		x->tp = tm.tp;
		x->cp = tm.cp;
		x->ep = tm.ep;
		x->zero3 = tm.dp;
		x->offload = tm.offload;
		x->vocab = tm.vocab;
		x->fwd = x->compute_fwd + x->comm_fwd;
		x->bwd = x->compute_bwd + x->recompute + x->comm_bwd;
		x->send = P.rank_send[q];
		x->pipeline_s = P.t_pipe;
		x->busy = P.mb * P.rank_c[q];
		x->idle = pos(P.t_pipe - x->busy);
		cost_rank_tail(&x->dp, &hid, &x->optimizer, m, c, s, lc, cost_terms_of(lc, s), f->n_stages, q);
		x->dp += tied_wait(s, f, q);
		if (q == strategy_rank(s, f->n_stages - 1))
			x->deferred = deferred_wgrad(m, c, s, f);
		x->peak_bytes = rank_memory(&x->mem, m, c, s, f, cost_terms_of(lc, s), q);
		x->cap_bytes = cluster_group_mem(c, x->group);
	}
	return pp;
}
