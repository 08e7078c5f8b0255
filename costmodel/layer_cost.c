/* layer_cost.c: the per-layer costs of a strategy (cost_layers: each
 * layer's time and memory on each node group), the uneven micro-batch
 * split and CP's exposed time (cost.h). COSTMODEL.md has the formulas;
 * compute.c, collective.c and memory.c implement them. */
#include "cost.h"

#include <math.h>
#include <stdatomic.h>
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

/* Of comm seconds that may hide under work seconds, the exposed part. */
static double exposed(double comm, double work)
{
	return pos(comm - work);
}

/* Of comm seconds bucketed so that a share of them cannot start before (or
 * finish after) the work they overlap, the exposed part: what the work
 * cannot cover, and at least that share. */
static double bucketed(double comm, double work, double share)
{
	double x = exposed(comm, work);

	return x > share * comm ? x : share * comm;
}

int cost_micro_batches(const struct strategy *s)
{
	return strategy_micro_batches(s);
}

/* TP communication of a block that --tp-comm-overlap hides under the GEMMs
 * it feeds or drains (Transformer Engine userbuffers; COSTMODEL.md "Overlap
 * as the trainers run it"): the collective is split into t chunks
 * pipelined with the GEMM's chunks, so the first chunk stays exposed, and
 * so does whatever the GEMMs are too short to cover:
 * x = max(comm / t, comm - gemm); what it hides costs COST_TP_OVERLAP_DRAG
 * of itself: x + COST_TP_OVERLAP_DRAG (comm - x). */
static double tp_exposed(const struct strategy *s, bool block, double comm, double gemm)
{
	double x;

	if (!s->tp_overlap || !block || s->tp <= 1)
		return comm;
	x = exposed(comm, gemm);
	x = x > comm / s->tp ? x : comm / s->tp;
	return x + COST_TP_OVERLAP_DRAG * (comm - x);
}

/* SlimPipe (Li et al. 2025, arXiv 2504.14519, Sec. 3): a micro-batch run
 * as n slices of seq/n tokens. u is the layer's time at seq/n, t at seq;
 * t becomes the micro-batch's: every part but the attention core n x u's
 * (the GEMMs on 1/n of the tokens each, so smaller and less efficient,
 * and n x the fixed overhead), the attention core t's: slice i attends
 * to the i slices before it and itself, so the slices together do the
 * whole causal attention, and SlimPipe's workload redistribution gives
 * each slice 1/n of it (without it the last slice would do (2n - 1)/n^2
 * and pace the pipeline). Recomputation as compute_layer: the whole
 * forward (full) or the modules mods of it (selective, compute_selective). */
static void slice_time(struct layer_time *t, const struct layer_time *u, int n,
		       enum recompute rc, unsigned mods)
{
	t->fwd = n * (u->fwd - u->attn_fwd) + t->attn_fwd;
	t->bwd = n * (u->bwd - u->attn_bwd) + t->attn_bwd;
	t->gemm_fwd = n * u->gemm_fwd;
	t->mem_fwd = n * u->mem_fwd;
	t->norm_fwd = n * u->norm_fwd;
	t->mlp_fwd = n * u->mlp_fwd;
	t->act_fwd = n * u->act_fwd;
	t->shared_fwd = n * u->shared_fwd;
	t->moe_fwd = n * u->moe_fwd;
	t->mla_up_fwd = n * u->mla_up_fwd;
	t->recompute = rc == RECOMPUTE_FULL	   ? t->fwd
		       : rc == RECOMPUTE_SELECTIVE ? compute_selective(t, mods)
						   : 0;
}

/* Layer l's compute on one GPU of type gpu (compute_layer), as SlimPipe's
 * slices run it when s->slices > 1 (slice_time). Returns -1 with e set. */
static int type_time(struct layer_time *t, const struct model *m, int l,
		     const struct gpu_type *gpu, const struct strategy *s, struct err *e)
{
	struct strategy sl = *s;
	struct layer_time u;
	int k = strategy_slices(s);

	if (compute_layer(t, m, l, gpu, s, e) < 0)
		return -1;
	if (k == 1)
		return 0;
	sl.seq = s->seq / k;
	sl.slices = 0;
	if (compute_layer(&u, m, l, gpu, &sl, e) < 0)
		return -1;
	slice_time(t, &u, k, m->layer[l].kind == LAYER_BLOCK ? s->recompute : RECOMPUTE_NONE,
		   m->layer[l].kind == LAYER_BLOCK ? strategy_rc_modules(s) : 0);
	return 0;
}

/* Layer l on one GPU of group g (COSTMODEL.md "Compute time",
 * "Communication per micro-batch", "Overlap as the trainers run it"):
 * - compute: compute_layer (GEMMs, attention core, memory-bound kernels,
 *   recomputation);
 * - TP: exposed, unless s->tp_overlap (tp_exposed; the backward's GEMMs
 *   are twice the forward's), which never hides an MoE block's routed
 *   experts' gathers (comm_tp_routed); full recomputation repeats the
 *   block's forward collectives;
 * - CP: the ring's n steps each overlapped with the attention core's work
 *   on the block of K,V it holds (Liu et al. 2023 Sec. 3.1), a 1/(n+1)
 *   share of the core: forward n max(0, step - attn/(n+1)), backward n
 *   max(0, 2 step - the core's backward/(n+1)) (dK and dV go round too);
 *   the all-to-alls of a2a and a2a+p2p exposed, the same volume backward;
 *   any recomputation of a block (full, or selective: the core itself)
 *   reruns the forward's;
 * - EP: dispatch + combine in forward and backward, exposed; full
 *   recomputation and the moe module of selective recomputation (the
 *   whole MoE layer, its dispatcher in it) repeat the forward's, the moe
 *   module with the routed experts' TP collectives. Under DualPipe and DualPipeV
 *   (DeepSeek-V3 technical report Sec. 3.2.1, Fig. 4: a forward chunk and
 *   a backward chunk of two micro-batches run together, each one's
 *   all-to-all under the other's compute) the paired share q of the passes
 *   (schedule_fb_paired) exposes the forward's max(0, a2a - the backward's
 *   compute) and the backward's max(0, a2a - the forward's compute), the
 *   rest (1 - q) whole; the recomputation's stays exposed. At the layer's
 *   granularity: the pair's dispatch and combine hide under the other
 *   pass's attention and experts as a whole. The same with s->ep_overlap
 *   under 1F1B and interleaved 1F1B (Megatron-Core's combined 1F1B, with
 *   the experts' weight gradients deferred so that the backward's compute
 *   covers the combine: --delay-wgrad-compute), q = schedule_ep_paired;
 * - ZeRO-3: the parameter gather prefetched under the layer's compute,
 *   forward max(0, gather - fwd), backward max(0, gather - bwd); the
 *   backward's gather serves the recomputation too;
 * - activation offloading (s->offload_modules): the copy of the layer's
 *   offloaded bytes (memory_offload) to host memory runs beside the next
 *   layer's forward, and its copy back beside the next layer's backward
 *   (the one before it in the backward order), each at the GPU's host link
 *   (compute_layer's offload); at the layer's granularity, a layer like it:
 *   forward max(0, copy - fwd), backward max(0, copy - bwd), as ZeRO-3's
 *   gathers;
 * - SlimPipe (s->slices = n > 1): compute as slice_time; TP and EP as n
 *   slices of seq/n tokens (the same bytes, n x the latency); CP as the
 *   whole micro-batch (each slice's K and V go round once);
 * - vocabulary parallelism: nothing for the embedding and the head (every
 *   rank runs its share: vocab_parts);
 * - deferred LM-head weight gradients (strategy_deferred, D of the m
 *   micro-batches): the head's backward loses D / m of its weight-gradient
 *   GEMM (as long as its forward GEMM) per micro-batch, which defer holds
 *   for the flush, D x that GEMM (cost.c iter_tail).
 * parts_of fills p's fields but vc_f, vc_b for the layer time t of a
 * GPU type; layer_parts zeroes p, picks the type and applies uneven
 * micro-batches (below). */
static void parts_of(struct parts *p, const struct model *m, int l,
		     const struct cluster *c, int g, const struct strategy *s,
		     const struct layer_time *tt)
{
	struct layer_time t = *tt;
	bool block = m->layer[l].kind == LAYER_BLOCK, full = s->recompute == RECOMPUTE_FULL;
	bool moe_rc = block && (strategy_rc_modules(s) & RM_MOE);
	double tf, tb, routed, rerun, step, a2a, ring_f, ring_b, z3;
	struct strategy sl = *s;
	int k = strategy_slices(s);
	bool rec;
	int n;

	if (k > 1) {
		sl.seq = s->seq / k;
		sl.slices = 0;
	}
	p->fwd = t.fwd;
	p->bwd = t.bwd;
	p->recompute = t.recompute;
	if (m->layer[l].kind == LAYER_HEAD && strategy_deferred(s)) {
		/* the head's weight-gradient GEMM (as long as its forward)
		 * of the deferred micro-batches waits for the flush */
		p->defer = t.gemm_fwd * strategy_deferred(s);
		p->bwd -= p->defer / cost_micro_batches(s);
	}
	if (block && s->recompute == RECOMPUTE_SELECTIVE)
		compute_selective_parts(&t, strategy_rc_modules(s), p->rc_mod);
	tf = k * comm_tp_fwd(m, l, c, g, &sl);
	tb = k * comm_tp_bwd(m, l, c, g, &sl);
	routed = k * comm_tp_routed(m, l, c, g, &sl);
	p->tp_f = tp_exposed(s, block, tf - routed, t.gemm_fwd) + routed;
	p->tp_b = tp_exposed(s, block, tb - routed, 2 * t.gemm_fwd) + routed;
	/* full recomputation repeats the forward's collectives, the moe
	 * module the routed experts' (never hidden) */
	rerun = moe_rc ? routed : 0;
	if (block && full)
		rerun = tf;
	p->tp_r = block && full ? p->tp_f : rerun;
	/* what the overlap hides: never below 0 (rounding of a difference) */
	p->tp_h = fmax(0.0, tf + tb + rerun - p->tp_f - p->tp_b - p->tp_r);
	n = comm_cp_ring_steps(s);
	step = comm_cp_step(m, l, c, g, s);
	a2a = comm_cp_a2a(m, l, c, g, s);
	rec = block && s->recompute != RECOMPUTE_NONE;
	ring_f = n * exposed(step, t.attn_fwd / (n + 1));
	ring_b = n * exposed(2 * step, t.attn_bwd / (n + 1));
	p->cp_f = ring_f + a2a;
	p->cp_b = ring_b + a2a;
	p->cp_r = rec ? p->cp_f : 0;
	/* the ring's steps that the attention hides: 3 n step (forward and
	 * the backward's two), n step more with recomputation */
	p->cp_h = fmax(0.0, (rec ? 4 : 3) * n * step - ring_f - ring_b - (rec ? ring_f : 0));
	p->ep_f = k * comm_ep_fwd(m, l, c, g, &sl);
	p->ep_b = p->ep_f;
	p->ep_r = block && (full || moe_rc) ? p->ep_f : 0;
	p->ep_h = 0;
	if ((schedule_fb_overlap(s->schedule) || s->ep_overlap) && p->ep_f > 0) {
		double q = s->ep_overlap && !schedule_fb_overlap(s->schedule)
				   ? schedule_ep_paired(s->schedule, s->pp, strategy_vp(s),
							cost_micro_batches(s))
				   : schedule_fb_paired(s->schedule, s->pp, cost_micro_batches(s));
		double a2a = p->ep_f;

		p->ep_f = (1 - q) * a2a + q * exposed(a2a, t.bwd);
		p->ep_b = (1 - q) * a2a + q * exposed(a2a, t.fwd);
		p->ep_h = 2 * a2a - p->ep_f - p->ep_b;
	}
	z3 = comm_zero3_gather(m, l, c, g, s);
	p->z3_f = exposed(z3, t.fwd);
	p->z3_b = exposed(z3, t.bwd);
	p->z3_h = 2 * z3 - p->z3_f - p->z3_b;
	p->of_f = exposed(t.offload, t.fwd);
	p->of_b = exposed(t.offload, t.bwd);
	p->of_h = 2 * t.offload - p->of_f - p->of_b;
}

/* Every part of p times w. */
static void parts_scale(struct parts *p, double w)
{
	p->fwd *= w, p->bwd *= w, p->recompute *= w, p->defer *= w;
	for (int i = 0; i < RM_COUNT; i++)
		p->rc_mod[i] *= w;
	p->tp_f *= w, p->tp_b *= w, p->tp_r *= w, p->tp_h *= w;
	p->cp_f *= w, p->cp_b *= w, p->cp_r *= w, p->cp_h *= w;
	p->ep_f *= w, p->ep_b *= w, p->ep_r *= w, p->ep_h *= w;
	p->z3_f *= w, p->z3_b *= w, p->z3_h *= w;
	p->of_f *= w, p->of_b *= w, p->of_h *= w;
	p->vc_f *= w, p->vc_b *= w;
}

static double parts_total(const struct parts *p);

/* The DP replicas (TP x CP groups) on part i of mixed group q. */
static int part_replicas(const struct cluster *c, const struct strategy *s, int q, int i)
{
	int n = c->group[q].part_gpus[i] / (s->tp * s->cp);

	return n > 0 ? n : 1;
}

/* The most micro-batches a DP replica of s runs: micro_batches, or under
 * s->uneven the largest of ceil(uneven[i] / replicas) over the parts of
 * its mixed rank. */
int cost_most_batches(const struct cluster *c, const struct strategy *s)
{
	int q = strategy_uneven(s) ? cost_mixed_group(c, s) : -1, most = 0;

	if (q < 0)
		return cost_micro_batches(s);
	for (int i = 0; i < c->group[q].n_part; i++) {
		int r = part_replicas(c, s, q, i), n = (s->uneven[i] + r - 1) / r;

		most = n > most ? n : most;
	}
	return most > 0 ? most : cost_micro_batches(s);
}

/* Layer l on one GPU of group g (parts_of): on a real group its type's;
 * on a mixed group the slowest part type's (per layer); under uneven
 * micro-batches (s->uneven) per micro-batch of the even count m, what
 * the busiest replica runs in m's stead: on the strategy's mixed group the
 * part i with the largest n_i x its seconds, times n_i / m (n_i the most
 * micro-batches a replica of part i runs), on any other group its time x
 * max_i n_i / m (every replica passes through each stage). One stage
 * then takes max_i n_i t_i (up to the per-layer max, as the even split's
 * slowest type); with pp > 1 the fill and drain are charged at the same
 * rate, an upper bound (README "Uneven micro-batches on mixed ranks").
 * Returns -1 with e set. */
int cost_layer_parts(struct parts *p, const struct model *m, int l,
		     const struct cluster *c, int g, const struct strategy *s,
		     struct err *e)
{
	static const struct parts zero_parts;
	struct layer_time t;
	bool block = m->layer[l].kind == LAYER_BLOCK;
	struct strategy bf16;
	int q;

	*p = zero_parts;
	/* per-stage precision: BF16 on a group without FP8 on every GPU
	 * (cluster_bf16_blocks) */
	if (s->fp8 && !cluster_group_fp8(c, g)) {
		bf16 = *s;
		bf16.fp8 = false;
		s = &bf16;
	}
	if (s->vocab_par && !block)
		return 0;
	if (type_time(&t, m, l, &c->gpu[c->group[g].gpu], s, e) < 0)
		return -1;
	q = strategy_uneven(s) ? cost_mixed_group(c, s) : -1;
	if (q >= 0 && g == q) {
		/* uneven micro-batches: part i's replicas run up to n_i of
		 * them on their own type; the stage is paced by the largest
		 * n_i x its seconds per micro-batch, n_i / m x that part's */
		double most = -1, w = 1;

		for (int i = 0; i < c->group[g].n_part; i++) {
			struct layer_time u;
			struct parts x = zero_parts;
			int r = part_replicas(c, s, g, i), n = (s->uneven[i] + r - 1) / r;

			if (type_time(&u, m, l, &c->gpu[c->group[c->group[g].part_group[i]].gpu], s, e) < 0)
				return -1;
			parts_of(&x, m, l, c, g, s, &u);
			if (n * parts_total(&x) > most) {
				most = n * parts_total(&x);
				*p = x;
				w = (double)n / cost_micro_batches(s);
			}
		}
		parts_scale(p, w);
		return 0;
	}
	/* a mixed group: each DP replica runs its share on its own type, and
	 * the stage waits for the slowest (per layer) */
	for (int i = 0; i < c->group[g].n_part; i++) {
		struct layer_time u;

		if (type_time(&u, m, l, &c->gpu[c->group[c->group[g].part_group[i]].gpu], s, e) < 0)
			return -1;
		if (u.fwd + u.bwd + u.recompute > t.fwd + t.bwd + t.recompute)
			t = u;
	}
	parts_of(p, m, l, c, g, s, &t);
	/* uneven micro-batches on another group: its replicas run up to the
	 * most any replica runs */
	if (q >= 0)
		parts_scale(p, (double)cost_most_batches(c, s) / cost_micro_batches(s));
	return 0;
}

/* Whether layer b costs what layer a costs in layer_parts under any
 * strategy on any group: two blocks with the same numbers, no measured
 * profile, and the same sliding window and FFN kind. layer_parts (with
 * compute_layer, the comm_* functions and model_attn_flops) reads a layer
 * only through m->layer[l] and model_block_windowed / model_block_moe of
 * its block; the callers reuse a's parts for b instead of recomputing
 * them (most models are one block repeated). */
bool cost_layers_alike(const struct model *m, int a, int b)
{
	const struct layer *x = &m->layer[a], *y = &m->layer[b];

	return x->kind == LAYER_BLOCK && y->kind == LAYER_BLOCK && !x->n_measure &&
	       !y->n_measure && x->params == y->params &&
	       x->expert_params == y->expert_params &&
	       x->flops_per_token == y->flops_per_token &&
	       x->act_bytes_per_token == y->act_bytes_per_token &&
	       x->out_bytes_per_token == y->out_bytes_per_token &&
	       model_block_windowed(m, a - 1) == model_block_windowed(m, b - 1) &&
	       model_block_moe(m, a - 1) == model_block_moe(m, b - 1);
}

/* Vocabulary parallelism (Yeung et al. 2024 Sec. 3): what every pipeline
 * rank on group g runs per micro-batch of the embedding, the head and the
 * loss: 1/p of their compute and TP communication as they would run whole
 * (layer_parts without s->vocab_par: the head's GEMM and the cross-entropy
 * over V/p columns, the embedding's lookup of its V/p rows), and the
 * collectives (comm_vocab) as vc_f and vc_b, half each. All 0 without it. */
int cost_vocab_parts(struct parts *p, const struct model *m, const struct cluster *c,
		     int g, const struct strategy *s, struct err *e)
{
	static const struct parts zero_parts;
	struct strategy t = *s;
	double w = 1.0 / s->pp, v;

	*p = zero_parts;
	if (!s->vocab_par)
		return 0;
	t.vocab_par = false;
	for (int i = 0; i < 2; i++) {
		struct parts x;

		if (cost_layer_parts(&x, m, i ? m->n_layer - 1 : 0, c, g, &t, e) < 0)
			return -1;
		p->fwd += w * x.fwd;
		p->bwd += w * x.bwd;
		p->tp_f += w * x.tp_f;
		p->tp_b += w * x.tp_b;
		p->tp_h += w * x.tp_h;
	}
	v = comm_vocab(m, c, g, s);
	p->vc_f = v / 2;
	p->vc_b = v / 2;
	return 0;
}

int cost_mixed_group(const struct cluster *c, const struct strategy *s)
{
	int found = -1, tpcp = s->tp * s->cp;

	for (int g = 0; g < c->n_group; g++) {
		const struct node_group *G = &c->group[g];
		bool whole = G->n_part > 0 && G->stage_gpus == tpcp * s->dp;

		for (int i = 0; whole && i < G->n_part; i++)
			whole = G->part_gpus[i] % tpcp == 0;
		if (!whole)
			continue;
		if (found >= 0)
			return -1;
		found = g;
	}
	return found;
}

double cost_split(int n, const int *replicas, const double *t, long total, long cap,
		  long *out)
{
	double most = 0;
	long sum = 0;

	if (n < 1)
		return -1;
	for (int i = 0; i < n; i++) {
		if (replicas[i] < 1 || !(t[i] > 0))
			return -1;
		out[i] = replicas[i];
		sum += replicas[i];
	}
	if (total < sum)
		return -1;
	/* one micro-batch at a time to the part whose replica with the
	 * fewest (out[i] / replicas[i] of them) would end least busy */
	for (; sum < total; sum++) {
		int best = 0;
		double v = INFINITY;

		for (int i = 0; i < n; i++) {
			double x = (double)(out[i] / replicas[i] + 1) * t[i];

			if (cap > 0 && out[i] / replicas[i] + 1 > cap)
				continue;
			if (x < v) {
				v = x;
				best = i;
			}
		}
		if (v == INFINITY)
			return -1;
		out[best]++;
	}
	for (int i = 0; i < n; i++) {
		double x = (double)((out[i] + replicas[i] - 1) / replicas[i]) * t[i];

		most = x > most ? x : most;
	}
	return most;
}

int cost_uneven(unsigned short *out, const struct model *m, const struct cluster *c,
		const struct strategy *s, int k, struct err *e)
{
	int q = cost_mixed_group(c, s), r[CLUSTER_MAX_PARTS], mb = cost_micro_batches(s);
	double t[CLUSTER_MAX_PARTS], even = 0, best;
	long n[CLUSTER_MAX_PARTS], total = (long)mb * s->dp, cap = 0, most = 0;
	struct strategy x = *s;

	for (int i = 0; i < MAX_GROUPS; i++)
		out[i] = 0;
	if (q < 0 || c->group[q].n_part > MAX_GROUPS || total > 65535 || k < 0 ||
	    k >= COST_UNEVEN_TRIES || (k > 0 && s->pp == 1))
		return 0;
	memset(x.uneven, 0, sizeof x.uneven);
	x.fp8 = s->fp8 && cluster_group_fp8(c, q); /* as cost_layer_parts */
	for (int i = 0; i < c->group[q].n_part; i++) {
		const struct gpu_type *gpu = &c->gpu[c->group[c->group[q].part_group[i]].gpu];

		struct parts p;

		r[i] = part_replicas(c, s, q, i);
		t[i] = 0;
		for (int l = 0; l < m->n_layer; l++) {
			struct layer_time u;

			/* a block like the one before: its parts (layers_alike) */
			if (!(l > 0 && cost_layers_alike(m, l - 1, l))) {
				static const struct parts zero_parts;

				if (type_time(&u, m, l, gpu, &x, e) < 0)
					return -1;
				p = zero_parts;
				parts_of(&p, m, l, c, q, &x, &u);
			}
			t[i] += parts_total(&p);
		}
		if (!(t[i] > 0))
			return 0;
		even = t[i] * cost_micro_batches(s) > even ? t[i] * cost_micro_batches(s) : even;
	}
	best = cost_split(c->group[q].n_part, r, t, total, 0, n);
	/* only where it beats the even split, by more than rounding */
	if (!(best >= 0 && best < even * (1 - 1e-9)))
		return 0;
	for (int i = 0; i < c->group[q].n_part; i++)
		most = (n[i] + r[i] - 1) / r[i] > most ? (n[i] + r[i] - 1) / r[i] : most;
	if (k > 0) {
		/* the cap of try k, none that repeats try k - 1's or the
		 * uncapped most */
		long d = most - mb, prev = mb + (d * (k - 1) + COST_UNEVEN_TRIES - 1) / COST_UNEVEN_TRIES;

		cap = mb + (d * k + COST_UNEVEN_TRIES - 1) / COST_UNEVEN_TRIES;
		if (cap >= most || (k > 1 && cap == prev) || cap <= mb)
			return 0;
		if (cost_split(c->group[q].n_part, r, t, total, cap, n) < 0)
			return 0;
	}
	for (int i = 0; i < c->group[q].n_part; i++)
		out[i] = (unsigned short)n[i];
	return 1;
}

double cost_cp_exposed(const struct model *m, const struct cluster *c,
		       const struct strategy *s)
{
	double x = 0;
	int l = 0;

	while (l < m->n_layer && m->layer[l].kind != LAYER_BLOCK)
		l++;
	if (s->cp <= 1 || l == m->n_layer)
		return 0;
	for (int g = 0; g < c->n_group; g++) {
		struct parts p;

		if (cost_layer_parts(&p, m, l, c, g, s, NULL) == 0)
			x += p.cp_f + p.cp_b + p.cp_r;
	}
	return x;
}

/* The forward side (forward compute and its exposed comm). */
static double parts_fwd(const struct parts *p)
{
	return p->fwd + p->tp_f + p->cp_f + p->ep_f + p->z3_f + p->of_f + p->vc_f;
}

/* The recomputation side. */
static double parts_rc(const struct parts *p)
{
	return p->recompute + p->tp_r + p->cp_r + p->ep_r;
}

static double parts_bwd(const struct parts *p)
{
	return p->bwd + p->tp_b + p->cp_b + p->ep_b + p->z3_b + p->of_b + p->vc_b;
}

/* All of a layer's seconds per micro-batch. */
static double parts_total(const struct parts *p)
{
	return parts_fwd(p) + parts_rc(p) + parts_bwd(p);
}

static int check_strategy(const struct strategy *s, struct err *e)
{
	if (s->tp < 1 || s->cp < 1 || s->dp < 1 || s->ep < 1 || s->pp < 1 ||
	    s->mbs < 1 || s->seq < 1)
		return err_set(e, "strategy degrees, mbs and seq must be >= 1 "
				  "(tp %d, cp %d, dp %d, ep %d, pp %d, mbs %d, seq %d)",
			       s->tp, s->cp, s->dp, s->ep, s->pp, s->mbs, s->seq);
	return 0;
}

/* The dense parameters per GPU that a pipeline rank holding both the
 * embedding and the head counts twice when they are tied: V*h/t (one
 * copy; Megatron keeps a second only on a separate last stage). */
double cost_tied_dense(const struct model *m, const struct strategy *s)
{
	double vh = (double)m->vocab * m->hidden;

	/* a profile's head may hold less than the matrix: then no copy */
	return m->tied && m->layer[m->n_layer - 1].params >= vh ? vh / s->tp : 0;
}

double cost_tied_pair(const struct model *m, const struct cluster *c, const struct strategy *s,
		      int gf, int gl)
{
	double S = cost_tied_dense(m, s) * memory_grad_bytes(s);

	return s->pp < 2 || S <= 0 ? 0 : comm_pair_allreduce(c, gf, gl, s->tp * s->cp * s->dp, s->pp, S);
}

bool cost_tied_paid(const struct model *m, const struct strategy *s)
{
	int n_stages = s->n_stages > 0 ? s->n_stages : s->pp * strategy_vp(s);

	return m->tied && s->pp > 1 && !s->vocab_par && strategy_rank(s, n_stages - 1) != 0;
}

void cost_tied_key(int *key, const struct strategy *s)
{
	key[0] = s->tp;
	key[1] = s->cp;
	key[2] = s->dp;
	key[3] = s->pp;
	key[4] = (int)memory_grad_bytes(s);
}

/* The DP tail of a pipeline rank (Narayanan et al. 2021 Sec. 3.2; COSTMODEL.md
 * "Overlap as the trainers run it"), for a rank on group g whose layers
 * hold D dense and E expert parameters per GPU and take fwd and bwd (+
 * recompute) seconds per micro-batch:
 * - the gradient reduction after the last backward: exposed whole, or with
 *   s->grad_overlap only what the last backward cannot cover, and at least
 *   the last bucket's share (COST_BUCKET_PARAMS);
 * - the ZeRO-1/2 parameter all-gather: exposed whole, or with
 *   s->param_overlap under the next iteration's first forward, at least the
 *   first bucket's share;
 * - the optimizer step over the rank's ZeRO shard (compute_optimizer).
 * *dp: exposed seconds, *hidden: overlapped ones, *opt: the step. */
static void stage_tail_with(double *dp, double *hidden, double *opt, const struct cluster *c,
			    const struct strategy *s, int g, const struct comm_dp_plan *plan,
			    double D, double E, double fwd, double bwd)
{
	double reduce, gather, n = (double)s->dp * s->cp, x_r, x_g;
	double n_e = strategy_edp(s);
	double bucket = COST_BUCKET_PARAMS > COST_BUCKET_PARAMS_PER_DP * n
				? COST_BUCKET_PARAMS
				: COST_BUCKET_PARAMS_PER_DP * n;
	double share = D + E > bucket ? bucket / (D + E) : 1;

	comm_dp_with(plan, D, E, &reduce, &gather);
	x_r = s->grad_overlap ? bucketed(reduce, bwd, share) : reduce;
	x_g = s->param_overlap ? bucketed(gather, fwd, share) : gather;
	*dp = x_r + x_g;
	*hidden = reduce + gather - *dp;
	*opt = compute_optimizer(&c->gpu[c->group[g].gpu],
				 s->zero >= 1 ? D / n + E / n_e : D + E, memory_moment_bytes(s));
}

/* stage_tail_with, its comm_dp plan made here. */
static void stage_tail(double *dp, double *hidden, double *opt, const struct cluster *c,
		       const struct strategy *s, int g, double D, double E, double fwd,
		       double bwd)
{
	struct comm_dp_plan plan;

	comm_dp_plan(&plan, c, g, s);
	stage_tail_with(dp, hidden, opt, c, s, g, &plan, D, E, fwd, bwd);
}

/* Slots of the tails cost_rank_tail keeps, a power of 2. */
#define TAIL_SLOTS 1024

/* A kept tail: of a rank that runs one chunk, layers [first, end) on group
 * g, n_stages 1 or more (the tied duplicate), under the layer terms
 * numbered id (cost_rank_tail reads nothing else of the strategy but what
 * their key holds, nor of lc but its times); key: tail_key. */
struct rank_tail {
	unsigned long long id, key;
	double dp, hidden, opt;
};

/* The tails kept on this thread (id 0: empty), and the number of the
 * next layer terms made. */
static _Thread_local struct rank_tail kept_tails[TAIL_SLOTS];
static atomic_ullong terms_made;

/* The key of struct rank_tail for group g, layers [i, j), one stage or
 * more. */
static unsigned long long tail_key(int g, int i, int j, bool one)
{
	return (unsigned long long)g << 48 | (unsigned long long)i << 32 |
	       (unsigned long long)j << 16 | one;
}

/* The slot of (id, key) (Fibonacci hashing). */
static size_t tail_slot(unsigned long long id, unsigned long long key)
{
	return (size_t)(((key ^ id * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull) >> 54) &
	       (TAIL_SLOTS - 1);
}

/* Slots of the layers' parts cost_layer_parts_kept keeps, a power of 2. */
#define PARTS_SLOTS 256

/* A kept part: under the layer terms numbered id, key (parts_key) of the
 * group, layer, schedule and vp. */
struct kept_part {
	unsigned long long id, key;
	struct parts p;
};

static _Thread_local struct kept_part kept_parts[PARTS_SLOTS];

/* The key of struct kept_part for group g, layer l, schedule sc and vp. */
static unsigned long long parts_key(int g, int l, int sc, int vp)
{
	return (unsigned long long)g << 56 | (unsigned long long)l << 24 |
	       (unsigned long long)sc << 12 | (unsigned long long)vp;
}

void cost_layer_parts_kept(struct parts *p, const struct model *m, int l,
			   const struct cluster *c, int g, const struct strategy *s,
			   const struct layer_terms *lt)
{
	unsigned long long key;
	struct kept_part *k;
	bool ep = s->ep > 1;

	if (!lt || s->vp < 0 || s->vp > 4095 || (int)s->schedule < 0 || (int)s->schedule > 4095) {
		cost_layer_parts(p, m, l, c, g, s, NULL);
		return;
	}
	key = parts_key(g, lt->rep[l], ep ? (int)s->schedule : 0, ep ? s->vp : 0);
	k = &kept_parts[tail_slot(lt->id, key) & (PARTS_SLOTS - 1)];
	if (k->id == lt->id && k->key == key) {
		*p = k->p;
		return;
	}
	cost_layer_parts(p, m, lt->rep[l], c, g, s, NULL);
	k->id = lt->id;
	k->key = key;
	k->p = *p;
}

/* The tail of pipeline rank r over all its chunks. */
void cost_rank_tail(double *dp, double *hidden, double *opt, const struct model *m,
		    const struct cluster *c, const struct strategy *s,
		    const struct layer_costs *lc, const struct layer_terms *lt, int n_stages,
		    int r)
{
	int g = s->group[r], L = lc->n_layer;
	double D = memory_vocab_params(m, s), E = 0, fwd = lc->vocab_fwd[g];
	double bwd = lc->vocab_time[g] - lc->vocab_fwd[g];
	struct rank_tail *kept = NULL;

	/* one chunk: the tail kept for its group and layers, or kept now */
	if (lt && strategy_vp(s) == 1 && r < n_stages) {
		unsigned long long key = tail_key(g, s->first[r], s->first[r + 1], n_stages == 1);

		kept = &kept_tails[tail_slot(lt->id, key)];
		if (kept->id == lt->id && kept->key == key) {
			*dp = kept->dp;
			*hidden = kept->hidden;
			*opt = kept->opt;
			return;
		}
		kept->id = lt->id;
		kept->key = key;
	}
	for (int j = 0, k = r; j < strategy_vp(s) && k < n_stages; k = strategy_stage(s, r, ++j))
		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			double d, x;

			if (lt) {
				d = lt->dense[l];
				x = lt->expert[l];
			} else {
				memory_params(&m->layer[l], s, &d, &x);
			}
			D += d;
			E += x;
			fwd += lc->fwd[(size_t)g * L + l];
			bwd += lc->time[(size_t)g * L + l] - lc->fwd[(size_t)g * L + l];
		}
	if (n_stages == 1)
		D -= cost_tied_dense(m, s);
	stage_tail(dp, hidden, opt, c, s, g, D, E, fwd, bwd);
	if (kept) {
		kept->dp = *dp;
		kept->hidden = *hidden;
		kept->opt = *opt;
	}
}

/* lc->tail0 for every end of the first stage on each group with ranks
 * (every group when ranks is NULL); INFINITY on the others. */
static void first_stage_tails(struct layer_costs *lc, const struct model *m,
			      const struct cluster *c, const struct strategy *s, const int *ranks)
{
	int L = lc->n_layer;

	for (int g = 0; g < lc->n_group; g++) {
		double D = memory_vocab_params(m, s), E = 0, fwd = lc->vocab_fwd[g];
		double bwd = lc->vocab_time[g] - lc->vocab_fwd[g], dp, hid, opt;
		double *t = lc->tail0 + (size_t)g * (L + 1);
		struct comm_dp_plan plan;

		if (ranks && !ranks[g]) {
			for (int j = 0; j <= L; j++)
				t[j] = INFINITY;
			continue;
		}
		comm_dp_plan(&plan, c, g, s);
		t[0] = 0;
		for (int l = 0; l < L; l++) {
			double d = lc->terms->dense[l], x = lc->terms->expert[l];

			D += d;
			E += x;
			fwd += lc->fwd[(size_t)g * L + l];
			bwd += lc->time[(size_t)g * L + l] - lc->fwd[(size_t)g * L + l];
			stage_tail_with(&dp, &hid, &opt, c, s, g, &plan,
					l + 1 == L ? D - cost_tied_dense(m, s) : D, E, fwd, bwd);
			t[l + 1] = dp + opt;
		}
	}
}

/* The allowance per GPU (memory.h): the user's (cluster.mem_allowance), or
 * MEM_CONTEXT_BYTES plus MEM_FRAG_SHARE of the activations and logits. */
double cost_context_bytes(const struct cluster *c)
{
	return c->mem_allowance >= 0 ? c->mem_allowance : MEM_CONTEXT_BYTES;
}

double cost_frag_share(const struct cluster *c)
{
	return c->mem_allowance >= 0 ? 0 : MEM_FRAG_SHARE;
}

void cost_allowance_parts(const struct cluster *c, const struct cost_mem *mem, double *context,
			  double *frag, double *share)
{
	*context = cost_context_bytes(c);
	*share = cost_frag_share(c);
	*frag = *share * (mem->activations + mem->logits);
}

/* What comm_pp_send reads of s (layer_costs.link_key). */
void cost_link_key(int *key, const struct strategy *s)
{
	key[0] = s->tp;
	key[1] = s->cp;
	key[2] = s->dp;
	key[3] = s->mbs;
	key[4] = s->seq;
	key[5] = s->sp | s->p2p_split << 1;
}

/* The key of s's layer terms (struct layer_terms) into k: the bytes of
 * s before its stage arrays, with its schedule and virtual stages 0. */
static void terms_key(unsigned char *k, const struct strategy *s)
{
	struct strategy x;

	memcpy(&x, s, LAYER_TERMS_KEY);
	x.schedule = (enum schedule)0;
	x.vp = 0;
	x.n_stages = 0;
	memcpy(k, &x, LAYER_TERMS_KEY);
}

const struct layer_terms *cost_terms_of(const struct layer_costs *lc, const struct strategy *s)
{
	unsigned char k[LAYER_TERMS_KEY];

	if (!lc->terms)
		return NULL;
	terms_key(k, s);
	return memcmp(k, lc->terms->key, sizeof k) ? NULL : lc->terms;
}

/* lc->terms of s for the L layers of m (one block; cost_layers_free
 * frees it). */
static void terms_make(struct layer_costs *lc, const struct model *m, const struct strategy *s)
{
	int L = m->n_layer;
	double flops = 0;
	struct layer_terms *t = xmalloc(sizeof *t + (size_t)L * (sizeof *t->mem + 2 * sizeof *t->dense +
								 sizeof *t->rep + sizeof *t->alike));

	terms_key(t->key, s);
	t->mem = (struct layer_mem *)(void *)(t + 1);
	t->dense = (double *)(void *)(t->mem + L);
	t->expert = t->dense + L;
	t->rep = (int *)(t->expert + L);
	t->alike = (bool *)(t->rep + L);
	t->flops = 0;
	t->id = atomic_fetch_add(&terms_made, 1) + 1;
	for (int l = 0; l < L; l++) {
		t->alike[l] = l > 0 && cost_layers_alike(m, l - 1, l);
		t->rep[l] = t->alike[l] ? t->rep[l - 1] : l;
		/* memory_layer, memory_params and compute_flops_per_token
		 * read what cost_layers_alike compares: a block like the one
		 * before takes its terms */
		if (!t->alike[l]) {
			memory_layer(&t->mem[l], m, l, s);
			memory_params(&m->layer[l], s, &t->dense[l], &t->expert[l]);
			flops = compute_flops_per_token(m, l, s->seq);
		} else {
			t->mem[l] = t->mem[t->rep[l]];
			t->dense[l] = t->dense[t->rep[l]];
			t->expert[l] = t->expert[t->rep[l]];
		}
		t->flops += flops;
	}
	lc->terms = t;
}

/* Fills lc: per (group, layer) the seconds per micro-batch (layer_parts
 * summed) and its forward side; per layer the bytes per GPU (memory_layer;
 * activations and logits with the allowance's share that grows with them,
 * frag_share).
 * One allocation holds all five arrays (lc->time is its base). O(layers x
 * groups). */
int cost_layers(struct layer_costs *lc, const struct model *m, const struct cluster *c,
		const struct strategy *s, const int *ranks, struct err *e)
{
	int L = m->n_layer, G = c->n_group;
	double *buf, fr, all, f0, rc, bw;

	lc->time = lc->fwd = lc->state_bytes = lc->act_bytes = lc->extra_bytes = NULL;
	lc->tail0 = lc->vocab_time = lc->vocab_fwd = lc->link = lc->tied = NULL;
	lc->terms = NULL;
	lc->n_layer = lc->n_group = 0;
	if (check_strategy(s, e) < 0)
		return -1;
	terms_make(lc, m, s);
	/* every element is written below */
	buf = xmalloc(((size_t)L * (2 * (size_t)G + 3) + (size_t)G * (L + 3) + 2 * (size_t)G * G) *
		      sizeof *buf);
	fr = all = f0 = rc = bw = 0;
	for (int g = 0; g < G; g++) {
		struct parts p;

		for (int l = 0; l < L; l++) {
			double f;

			/* a block like the one before: its parts (layers_alike) */
			if (!lc->terms->alike[l] && cost_layer_parts(&p, m, l, c, g, s, e) < 0) {
				free(buf);
				cost_layers_free(lc);
				return -1;
			}
			f = parts_fwd(&p);
			buf[(size_t)g * L + l] = f + parts_rc(&p) + parts_bwd(&p);
			buf[(size_t)(G + g) * L + l] = f;
			if (g == 0) {
				fr += f + parts_rc(&p);
				all += buf[l];
				f0 += f;
				rc += parts_rc(&p);
				bw += parts_bwd(&p);
			}
		}
	}
	lc->zb_rho = all > 0 ? fr / all : 1.0 / 3;
	/* ZB-H2 (schedule_weights): t_F + t_B - 2 t_W = F + R - bw / 2, at
	   least F (the last rank's wait for its first input) */
	lc->zb_h2_rho = all > 0 ? (rc > bw / 2 ? f0 + rc - bw / 2 : f0) / all : 1.0 / 3;
	lc->time = buf;
	lc->fwd = buf + (size_t)G * L;
	lc->state_bytes = buf + (size_t)2 * G * L;
	lc->act_bytes = lc->state_bytes + L;
	lc->extra_bytes = lc->act_bytes + L;
	lc->tail0 = lc->extra_bytes + L;
	lc->vocab_time = lc->tail0 + (size_t)G * (L + 1);
	lc->vocab_fwd = lc->vocab_time + G;
	lc->link = lc->vocab_fwd + G;
	cost_link_key(lc->link_key, s);
	lc->tied = lc->link + (size_t)G * G;
	cost_tied_key(lc->tied_key, s);
	for (int g = 0; g < G; g++)
		for (int h = 0; h < G; h++) {
			lc->link[(size_t)g * G + h] = comm_pp_send(m, c, g, h, s);
			lc->tied[(size_t)g * G + h] = m->tied ? cost_tied_pair(m, c, s, g, h) : 0;
		}
	for (int g = 0; g < G; g++) {
		struct parts p;

		if (cost_vocab_parts(&p, m, c, g, s, e) < 0) {
			free(buf);
			lc->time = NULL;
			cost_layers_free(lc);
			return -1;
		}
		lc->vocab_fwd[g] = parts_fwd(&p);
		lc->vocab_time[g] = lc->vocab_fwd[g] + parts_bwd(&p);
	}
	{
		struct layer_mem lm;

		memory_vocab(&lm, m, s);
		lc->vocab_bytes = lm.weights + lm.grads + lm.optimizer +
				  (lm.act + lm.extra) * (1 + cost_frag_share(c));
	}
	for (int l = 0; l < L; l++) {
		const struct layer_mem lm = lc->terms->mem[l];

		lc->state_bytes[l] = lm.weights + lm.grads + lm.optimizer;
		lc->act_bytes[l] = lm.act * (1 + cost_frag_share(c));
		lc->extra_bytes[l] = lm.extra * (1 + cost_frag_share(c));
	}
	lc->n_layer = L;
	lc->n_group = G;
	first_stage_tails(lc, m, c, s, ranks);
	return 0;
}

void cost_layers_free(struct layer_costs *lc)
{
	if (!lc)
		return;
	free(lc->time);
	free(lc->terms);
	lc->terms = NULL;
	lc->time = lc->fwd = lc->state_bytes = lc->act_bytes = lc->extra_bytes = NULL;
	lc->tail0 = lc->vocab_time = lc->vocab_fwd = lc->link = lc->tied = NULL;
	lc->n_layer = lc->n_group = 0;
}
