/* cost.c: the cost model's public face: per-layer costs of a strategy, the
 * pipeline frame for the partition search, and the full evaluation of a
 * strategy (time breakdown, memory, MFU). COSTMODEL.md has the formulas;
 * compute.c, collective.c, memory.c and schedule.c implement them. */
#include "cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "collective.h"
#include "compute.h"
#include "memory.h"
#include "model.h"
#include "schedule.h"
#include "util.h"

/* One layer's time per micro-batch on one GPU of a group, by part. _f: the
 * forward pass, _b: the backward pass, _r: recomputation. Communication
 * parts are the exposed (not overlapped) seconds; _h the hidden ones of
 * the whole layer (forward, backward and recomputation). */
struct parts {
	double fwd, bwd, recompute;	/* compute */
	double tp_f, tp_b, tp_r, tp_h;
	double cp_f, cp_b, cp_r, cp_h;
	double ep_f, ep_b, ep_r, ep_h;
	double z3_f, z3_b, z3_h;	/* ZeRO-3 parameter gathers */
	double vc_f, vc_b;		/* vocabulary parallelism's collectives */
};

static double pos(double x)
{
	return x > 0 ? x : 0;
}

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

static int micro_batches(const struct strategy *s)
{
	if (s->micro_batches > 0)
		return s->micro_batches;
	return s->dp > 0 && s->mbs > 0 && s->gbs / (s->dp * s->mbs) > 0
		       ? s->gbs / (s->dp * s->mbs)
		       : 1;
}

/* TP communication of a block that --tp-comm-overlap hides under the GEMMs
 * it feeds or drains (Transformer Engine userbuffers; COSTMODEL.md "Overlap
 * as the trainers run it"): the collective is split into t chunks
 * pipelined with the GEMM's chunks, so the first chunk stays exposed, and
 * so does whatever the GEMMs are too short to cover:
 * max(comm / t, comm - gemm). */
static double tp_exposed(const struct strategy *s, bool block, double comm, double gemm)
{
	double x;

	if (!s->tp_overlap || !block || s->tp <= 1)
		return comm;
	x = exposed(comm, gemm);
	return x > comm / s->tp ? x : comm / s->tp;
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
 * forward (full) or the attention core (selective). */
static void slice_time(struct layer_time *t, const struct layer_time *u, int n,
		       enum recompute rc)
{
	t->fwd = n * (u->fwd - u->attn_fwd) + t->attn_fwd;
	t->bwd = n * (u->bwd - u->attn_bwd) + t->attn_bwd;
	t->gemm_fwd = n * u->gemm_fwd;
	t->mem_fwd = n * u->mem_fwd;
	t->recompute = rc == RECOMPUTE_FULL ? t->fwd : rc == RECOMPUTE_SELECTIVE ? t->attn_fwd : 0;
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
	slice_time(t, &u, k, m->layer[l].kind == LAYER_BLOCK ? s->recompute : RECOMPUTE_NONE);
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
 *   recomputation repeats the forward's. Under DualPipe and DualPipeV
 *   (DeepSeek-V3 technical report Sec. 3.2.1, Fig. 4: a forward chunk and
 *   a backward chunk of two micro-batches run together, each one's
 *   all-to-all under the other's compute) the paired share q of the passes
 *   (schedule_fb_paired) exposes the forward's max(0, a2a - the backward's
 *   compute) and the backward's max(0, a2a - the forward's compute), the
 *   rest (1 - q) whole; the recomputation's stays exposed. At the layer's
 *   granularity: the pair's dispatch and combine hide under the other
 *   pass's attention and experts as a whole;
 * - ZeRO-3: the parameter gather prefetched under the layer's compute,
 *   forward max(0, gather - fwd), backward max(0, gather - bwd); the
 *   backward's gather serves the recomputation too;
 * - SlimPipe (s->slices = n > 1): compute as slice_time; TP and EP as n
 *   slices of seq/n tokens (the same bytes, n x the latency); CP as the
 *   whole micro-batch (each slice's K and V go round once);
 * - vocabulary parallelism: nothing for the embedding and the head (every
 *   rank runs its share: vocab_parts).
 * parts_of fills p's fields but vc_f, vc_b for the layer time t of a
 * GPU type; layer_parts zeroes p, picks the type and applies uneven
 * micro-batches (below). */
static void parts_of(struct parts *p, const struct model *m, int l,
		     const struct cluster *c, int g, const struct strategy *s,
		     const struct layer_time *tt)
{
	struct layer_time t = *tt;
	bool block = m->layer[l].kind == LAYER_BLOCK, full = s->recompute == RECOMPUTE_FULL;
	double tf, tb, routed, step, a2a, ring_f, ring_b, z3;
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
	tf = k * comm_tp_fwd(m, l, c, g, &sl);
	tb = k * comm_tp_bwd(m, l, c, g, &sl);
	routed = k * comm_tp_routed(m, l, c, g, &sl);
	p->tp_f = tp_exposed(s, block, tf - routed, t.gemm_fwd) + routed;
	p->tp_b = tp_exposed(s, block, tb - routed, 2 * t.gemm_fwd) + routed;
	p->tp_r = block && full ? p->tp_f : 0;
	/* what the overlap hides: never below 0 (rounding of a difference) */
	p->tp_h = fmax(0.0, tf + tb + (p->tp_r > 0 ? tf : 0) - p->tp_f - p->tp_b - p->tp_r);
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
	p->ep_r = block && full ? p->ep_f : 0;
	p->ep_h = 0;
	if (schedule_fb_overlap(s->schedule) && p->ep_f > 0) {
		double q = schedule_fb_paired(s->schedule, s->pp, micro_batches(s));
		double a2a = p->ep_f;

		p->ep_f = (1 - q) * a2a + q * exposed(a2a, t.bwd);
		p->ep_b = (1 - q) * a2a + q * exposed(a2a, t.fwd);
		p->ep_h = 2 * a2a - p->ep_f - p->ep_b;
	}
	z3 = comm_zero3_gather(m, l, c, g, s);
	p->z3_f = exposed(z3, t.fwd);
	p->z3_b = exposed(z3, t.bwd);
	p->z3_h = 2 * z3 - p->z3_f - p->z3_b;
}

/* Every part of p times w. */
static void parts_scale(struct parts *p, double w)
{
	p->fwd *= w, p->bwd *= w, p->recompute *= w;
	p->tp_f *= w, p->tp_b *= w, p->tp_r *= w, p->tp_h *= w;
	p->cp_f *= w, p->cp_b *= w, p->cp_r *= w, p->cp_h *= w;
	p->ep_f *= w, p->ep_b *= w, p->ep_r *= w, p->ep_h *= w;
	p->z3_f *= w, p->z3_b *= w, p->z3_h *= w;
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
static int most_batches(const struct cluster *c, const struct strategy *s)
{
	int q = strategy_uneven(s) ? cost_mixed_group(c, s) : -1, most = 0;

	if (q < 0)
		return micro_batches(s);
	for (int i = 0; i < c->group[q].n_part; i++) {
		int r = part_replicas(c, s, q, i), n = (s->uneven[i] + r - 1) / r;

		most = n > most ? n : most;
	}
	return most > 0 ? most : micro_batches(s);
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
static int layer_parts(struct parts *p, const struct model *m, int l,
		       const struct cluster *c, int g, const struct strategy *s,
		       struct err *e)
{
	static const struct parts zero_parts;
	struct layer_time t;
	bool block = m->layer[l].kind == LAYER_BLOCK;
	int q;

	*p = zero_parts;
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
				w = (double)n / micro_batches(s);
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
		parts_scale(p, (double)most_batches(c, s) / micro_batches(s));
	return 0;
}

/* Whether layer b costs what layer a costs in layer_parts under any
 * strategy on any group: two blocks with the same numbers, no measured
 * profile, and the same sliding window and FFN kind. layer_parts (with
 * compute_layer, the comm_* functions and model_attn_flops) reads a layer
 * only through m->layer[l] and model_block_windowed / model_block_moe of
 * its block; the callers reuse a's parts for b instead of recomputing
 * them (most models are one block repeated). */
static bool layers_alike(const struct model *m, int a, int b)
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
static int vocab_parts(struct parts *p, const struct model *m, const struct cluster *c,
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

		if (layer_parts(&x, m, i ? m->n_layer - 1 : 0, c, g, &t, e) < 0)
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
	if (total < sum || (cap > 0 && cap < 1))
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
	int q = cost_mixed_group(c, s), r[CLUSTER_MAX_PARTS], mb = micro_batches(s);
	double t[CLUSTER_MAX_PARTS], even = 0, best;
	long n[CLUSTER_MAX_PARTS], total = (long)mb * s->dp, cap = 0, most = 0;
	struct strategy x = *s;

	for (int i = 0; i < MAX_GROUPS; i++)
		out[i] = 0;
	if (q < 0 || c->group[q].n_part > MAX_GROUPS || total > 65535 || k < 0 ||
	    k >= COST_UNEVEN_TRIES || (k > 0 && s->pp == 1))
		return 0;
	memset(x.uneven, 0, sizeof x.uneven);
	for (int i = 0; i < c->group[q].n_part; i++) {
		const struct gpu_type *gpu = &c->gpu[c->group[c->group[q].part_group[i]].gpu];

		struct parts p;

		r[i] = part_replicas(c, s, q, i);
		t[i] = 0;
		for (int l = 0; l < m->n_layer; l++) {
			struct layer_time u;

			/* a block like the one before: its parts (layers_alike) */
			if (!(l > 0 && layers_alike(m, l - 1, l))) {
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
		even = t[i] * micro_batches(s) > even ? t[i] * micro_batches(s) : even;
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

		if (layer_parts(&p, m, l, c, g, s, NULL) == 0)
			x += p.cp_f + p.cp_b + p.cp_r;
	}
	return x;
}

/* The forward side (forward compute and its exposed comm). */
static double parts_fwd(const struct parts *p)
{
	return p->fwd + p->tp_f + p->cp_f + p->ep_f + p->z3_f + p->vc_f;
}

/* The recomputation side. */
static double parts_rc(const struct parts *p)
{
	return p->recompute + p->tp_r + p->cp_r + p->ep_r;
}

static double parts_bwd(const struct parts *p)
{
	return p->bwd + p->tp_b + p->cp_b + p->ep_b + p->z3_b + p->vc_b;
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
static double tied_dense(const struct model *m, const struct strategy *s)
{
	double vh = (double)m->vocab * m->hidden;

	/* a profile's head may hold less than the matrix: then no copy */
	return m->tied && m->layer[m->n_layer - 1].params >= vh ? vh / s->tp : 0;
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
static void stage_tail(double *dp, double *hidden, double *opt, const struct cluster *c,
		       const struct strategy *s, int g, double D, double E, double fwd,
		       double bwd)
{
	double reduce, gather, n = (double)s->dp * s->cp, x_r, x_g;
	double n_e = strategy_edp(s);
	double bucket = COST_BUCKET_PARAMS > COST_BUCKET_PARAMS_PER_DP * n
				? COST_BUCKET_PARAMS
				: COST_BUCKET_PARAMS_PER_DP * n;
	double share = D + E > bucket ? bucket / (D + E) : 1;

	comm_dp(c, g, s, D, E, &reduce, &gather);
	x_r = s->grad_overlap ? bucketed(reduce, bwd, share) : reduce;
	x_g = s->param_overlap ? bucketed(gather, fwd, share) : gather;
	*dp = x_r + x_g;
	*hidden = reduce + gather - *dp;
	*opt = compute_optimizer(&c->gpu[c->group[g].gpu],
				 s->zero >= 1 ? D / n + E / n_e : D + E);
}

/* The tail of pipeline rank r over all its chunks. */
static void rank_tail(double *dp, double *hidden, double *opt, const struct model *m,
		      const struct cluster *c, const struct strategy *s,
		      const struct layer_costs *lc, int n_stages, int r)
{
	int g = s->group[r], L = lc->n_layer;
	double D = memory_vocab_params(m, s), E = 0, fwd = lc->vocab_fwd[g];
	double bwd = lc->vocab_time[g] - lc->vocab_fwd[g];

	for (int j = 0, k = r; j < strategy_vp(s) && k < n_stages; k = strategy_stage(s, r, ++j))
		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			double d, x;

			memory_params(&m->layer[l], s, &d, &x);
			D += d;
			E += x;
			fwd += lc->fwd[(size_t)g * L + l];
			bwd += lc->time[(size_t)g * L + l] - lc->fwd[(size_t)g * L + l];
		}
	if (n_stages == 1)
		D -= tied_dense(m, s);
	stage_tail(dp, hidden, opt, c, s, g, D, E, fwd, bwd);
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

		if (ranks && !ranks[g]) {
			for (int j = 0; j <= L; j++)
				t[j] = INFINITY;
			continue;
		}
		t[0] = 0;
		for (int l = 0; l < L; l++) {
			double d, x;

			memory_params(&m->layer[l], s, &d, &x);
			D += d;
			E += x;
			fwd += lc->fwd[(size_t)g * L + l];
			bwd += lc->time[(size_t)g * L + l] - lc->fwd[(size_t)g * L + l];
			stage_tail(&dp, &hid, &opt, c, s, g, l + 1 == L ? D - tied_dense(m, s) : D,
				   E, fwd, bwd);
			t[l + 1] = dp + opt;
		}
	}
}

/* The allowance per GPU (memory.h): the user's (cluster.mem_allowance), or
 * MEM_CONTEXT_BYTES plus MEM_FRAG_SHARE of the activations and logits. */
static double context_bytes(const struct cluster *c)
{
	return c->mem_allowance >= 0 ? c->mem_allowance : MEM_CONTEXT_BYTES;
}

static double frag_share(const struct cluster *c)
{
	return c->mem_allowance >= 0 ? 0 : MEM_FRAG_SHARE;
}

/* What comm_pp_send reads of s (layer_costs.link_key). */
static void link_key(int *key, const struct strategy *s)
{
	key[0] = s->tp;
	key[1] = s->cp;
	key[2] = s->dp;
	key[3] = s->mbs;
	key[4] = s->seq;
	key[5] = s->sp;
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
	lc->tail0 = lc->vocab_time = lc->vocab_fwd = lc->link = NULL;
	lc->n_layer = lc->n_group = 0;
	if (check_strategy(s, e) < 0)
		return -1;
	buf = xcalloc((size_t)L * (2 * (size_t)G + 3) + (size_t)G * (L + 3) + (size_t)G * G,
		      sizeof *buf);
	fr = all = f0 = rc = bw = 0;
	for (int g = 0; g < G; g++) {
		struct parts p;

		for (int l = 0; l < L; l++) {
			double f;

			/* a block like the one before: its parts (layers_alike) */
			if (!(l > 0 && layers_alike(m, l - 1, l)) &&
			    layer_parts(&p, m, l, c, g, s, e) < 0) {
				free(buf);
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
	link_key(lc->link_key, s);
	for (int g = 0; g < G; g++)
		for (int h = 0; h < G; h++)
			lc->link[(size_t)g * G + h] = comm_pp_send(m, c, g, h, s);
	for (int g = 0; g < G; g++) {
		struct parts p;

		if (vocab_parts(&p, m, c, g, s, e) < 0) {
			free(buf);
			return -1;
		}
		lc->vocab_fwd[g] = parts_fwd(&p);
		lc->vocab_time[g] = lc->vocab_fwd[g] + parts_bwd(&p);
	}
	{
		struct layer_mem lm;

		memory_vocab(&lm, m, s);
		lc->vocab_bytes = lm.weights + lm.grads + lm.optimizer +
				  (lm.act + lm.extra) * (1 + frag_share(c));
	}
	for (int l = 0; l < L; l++) {
		struct layer_mem lm;

		memory_layer(&lm, m, l, s);
		lc->state_bytes[l] = lm.weights + lm.grads + lm.optimizer;
		lc->act_bytes[l] = lm.act * (1 + frag_share(c));
		lc->extra_bytes[l] = lm.extra * (1 + frag_share(c));
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
	lc->time = lc->fwd = lc->state_bytes = lc->act_bytes = lc->extra_bytes = NULL;
	lc->tail0 = lc->vocab_time = lc->vocab_fwd = lc->link = NULL;
	lc->n_layer = lc->n_group = 0;
}

/* Model-state bytes per GPU of the tied duplicate (tied_dense): the head's
 * states per parameter times V*h/t. */
static double tied_bytes(const struct model *m, const struct strategy *s)
{
	const struct layer *head = &m->layer[m->n_layer - 1];
	struct layer_mem lm;

	if (!m->tied || head->params <= 0)
		return 0;
	memory_layer(&lm, m, m->n_layer - 1, s);
	return (lm.weights + lm.grads + lm.optimizer) * tied_dense(m, s) * s->tp / head->params;
}

/* The pipeline frame (cost.h): schedule weights (schedule_weights), the
 * activations in flight per virtual stage (schedule_inflight), the p2p
 * seconds per micro-batch from virtual stage k to k+1 (comm_pp_send; with
 * interleaving the boundaries between chunks, wrap-arounds from rank pp-1
 * to rank 0 included, so a rank sends v times per micro-batch), and the
 * memory cap per virtual stage: (GPU memory - context_bytes) / vp x
 * share[k], the rank's memory split over its chunks as an even split of
 * the blocks would use it (conservative when the chunks differ;
 * cost_evaluate tests the rank as a whole); a single stage that holds tied
 * embedding and head gets the duplicate's bytes back. */
void cost_frame(struct pipeline_frame *f, const struct model *m,
		const struct cluster *c, const struct strategy *s,
		const struct layer_costs *lc)
{
	int pp = s->pp > 0 ? s->pp : 1, vp = s->vp > 0 ? s->vp : 1;
	int n = s->n_stages > 0 ? s->n_stages : pp * vp, mb = micro_batches(s);
	/* uneven micro-batches: the busiest replica holds and sends as many
	 * as it runs */
	int most = most_batches(c, s);
	double rho = 1.0 / 3, st = 0, act = 0;
	const double *links = NULL;

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

		link_key(key, s);
		if (!memcmp(key, lc->link_key, sizeof key))
			links = lc->link;
	}
	for (int g = 0; g < c->n_group && g < MAX_GROUPS; g++) {
		f->cap_of[g] = (cluster_group_mem(c, g) - context_bytes(c)) / vp - lc->vocab_bytes;
		f->vocab_of[g] = lc->vocab_time[g];
		for (int h = 0; h < c->n_group && h < MAX_GROUPS; h++)
			f->link[g][h] = (links ? links[(size_t)g * c->n_group + h]
						: comm_pp_send(m, c, g, h, s)) * most / mb;
	}
	if (schedule_v(s->schedule))
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
	for (int k = 0; k < n; k++) {
		double pair = f->inflight[k] + f->inflight[n - 1 - k];

		f->share[k] = schedule_v(s->schedule) && st + pair * act > 0
				      ? 2 * (st + f->inflight[k] * act) / (2 * st + pair * act)
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

	t->mb = micro_batches(s);
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
 * exposed tp, cp, ep, dp (ZeRO-3 gathers) and the hidden ones. pp, bubble
 * and optimizer are left alone. DualPipe: w / 2 of its stage q and w / 2
 * of the other copy's stage pp - 1 - q that it also runs. */
static void rank_time(struct cost_time *tm, double w, const struct model *m,
		      const struct cluster *c, const struct strategy *s,
		      const struct pipeline_frame *f, int q)
{
	struct parts v;
	int stage[2 * MAX_STAGES], n = rank_stages(stage, s, f, q);

	vocab_parts(&v, m, c, f->group[q], s, NULL);
	tm->compute += w * (v.fwd + v.bwd);
	tm->tp += w * (v.tp_f + v.tp_b);
	tm->tp_hidden += w * v.tp_h;
	tm->vocab += w * (v.vc_f + v.vc_b);
	if (schedule_bidirectional(s->schedule))
		w /= 2;
	for (int i = 0; i < n; i++) {
		int k = stage[i], g = f->group[k];
		struct parts p = {0};

		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			/* cannot fail: cost_layers checked the measured profiles;
			 * a block like the one before: its parts (layers_alike) */
			if (!(l > s->first[k] && layers_alike(m, l - 1, l)))
				layer_parts(&p, m, l, c, g, s, NULL);
			tm->compute += w * (p.fwd + p.bwd);
			tm->recompute += w * p.recompute;
			tm->tp += w * (p.tp_f + p.tp_b + p.tp_r);
			tm->cp += w * (p.cp_f + p.cp_b + p.cp_r);
			tm->ep += w * (p.ep_f + p.ep_b + p.ep_r);
			tm->dp += w * (p.z3_f + p.z3_b);
			tm->tp_hidden += w * p.tp_h;
			tm->cp_hidden += w * p.cp_h;
			tm->ep_hidden += w * p.ep_h;
			tm->dp_hidden += w * p.z3_h;
		}
	}
}

/* Pipeline rank q's memory per GPU by kind (its chunks' states,
 * inflight x activations, extra; a single stage holding tied embedding and
 * head counts the matrix once; the allowance context_bytes + frag_share of
 * activations and logits) into *mem; returns their sum, bytes. */
static double rank_memory(struct cost_mem *mem, const struct model *m, const struct cluster *c,
			  const struct strategy *s, const struct pipeline_frame *f, int q)
{
	static const struct cost_mem zero_mem;
	int L = m->n_layer, stage[2 * MAX_STAGES];

	*mem = zero_mem;
	for (int i = 0, n = rank_stages(stage, s, f, q); i < n; i++)
		for (int l = s->first[stage[i]]; l < s->first[stage[i] + 1]; l++) {
			struct layer_mem lm;

			memory_layer(&lm, m, l, s);
			mem->weights += lm.weights;
			mem->grads += lm.grads;
			mem->optimizer += lm.optimizer;
			mem->activations += f->inflight[stage[i]] * lm.act;
			mem->logits += lm.extra;
		}
	if (f->n_stages == 1 && tied_dense(m, s) > 0) {
		/* the duplicate, by kind, in the proportions of the head's states */
		struct layer_mem lm;
		double x = tied_dense(m, s) * s->tp / m->layer[L - 1].params;

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
	mem->allowance = context_bytes(c) + frag_share(c) * (mem->activations + mem->logits);
	return mem->weights + mem->grads + mem->optimizer + mem->activations + mem->logits +
	       mem->allowance;
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
 * (they shorten the lead a little). Splits it into *dp (exposed DP) and
 * *opt (the step, at most the tail), *hidden that rank's overlapped DP and
 * the part of its DP its lead covers, *rank that rank. */
static void iter_tail(double *dp, double *hidden, double *opt, int *rank, const struct model *m,
		      const struct cluster *c, const struct strategy *s,
		      const struct layer_costs *lc, const struct pipeline_frame *f)
{
	double lead = 0, tail = -INFINITY;
	int L = lc->n_layer;

	*dp = *hidden = *opt = 0;
	*rank = 0;
	for (int q = 0; q < s->pp; q++) {
		double d, h, o;
		int g = f->group[q];

		rank_tail(&d, &h, &o, m, c, s, lc, f->n_stages, q);
		if (d + o - lead > tail) {
			tail = d + o - lead;
			*opt = o < tail ? o : tail;
			*dp = tail - *opt;
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

/* Evaluation of a placed and partitioned strategy (cost.h):
 * - T_pipe = a max c_k + b sum c_k (cost_frame), c_k the stage's layer
 *   times on its group plus its send; with interleaving over the ranks'
 *   totals (pipe_terms);
 * - iter_s = T_pipe + the latest tail (exposed DP + optimizer) counted
 *   from rank 0's last backward (iter_tail): under 1F1B rank 0 runs the
 *   iteration's last backward, the other ranks finish theirs earlier;
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
 *   once), plus the allowance (context_bytes + frag_share of activations
 *   and logits); the heaviest rank (most bytes) and the fullest (highest
 *   share of its GPU's memory) are reported; fits if every rank is within
 *   its GPU's memory. */
void cost_evaluate(struct cost_result *r, const struct model *m,
		   const struct cluster *c, const struct strategy *s,
		   const struct layer_costs *lc)
{
	static const struct cost_result zero_result;
	struct pipe_terms P;
	const struct pipeline_frame *f = &P.f;
	double tail_dp, tail_hid, tail_opt, peaks = 0, flops = 0, best_mem = -1, best_share = -1;
	int pp = s->pp, mb, bn = 0;

	*r = zero_result;
	r->overflow_rank = -1;
	r->fits = true;
	pipe_terms(&P, m, c, s, lc);
	mb = P.mb;
	for (int q = 0; q < pp; q++) {
		/* the frame's caps leave out the vocabulary share, which
		 * rank_mem holds */
		double cap = (f->n_stages == 1 ? f->cap[0] : f->cap_of[f->group[q]] * f->vp) +
			     lc->vocab_bytes;

		if (P.rank_mem[q] > cap && r->fits) {
			r->fits = false;
			r->overflow_rank = q;
		}
	}

	iter_tail(&tail_dp, &tail_hid, &tail_opt, &r->tail_rank, m, c, s, lc, f);
	for (int q = 0; q < pp; q++) {
		double gpu_mem = cluster_group_mem(c, s->group[q]);
		double share = (P.rank_mem[q] + context_bytes(c)) / gpu_mem;

		if (P.rank_c[q] > P.rank_c[bn])
			bn = q;
		const struct node_group *G = &c->group[s->group[q]];

		if (!G->n_part)
			peaks += (double)s->tp * s->cp * s->dp * c->gpu[G->gpu].peak_flops;
		for (int i = 0; i < G->n_part; i++)
			peaks += (double)G->part_gpus[i] * c->gpu[c->group[G->part_group[i]].gpu].peak_flops;
		if (P.rank_mem[q] > best_mem) {
			best_mem = P.rank_mem[q];
			r->heaviest_rank = q;
		}
		if (share > best_share) {
			best_share = share;
			r->fullest_rank = q;
			r->fullest_cap = gpu_mem;
		}
	}

	/* The bottleneck rank's parts, per micro-batch, times m. */
	rank_time(&r->time, mb, m, c, s, f, bn);
	r->bottleneck_rank = bn;
	r->bottleneck_fwd = lc->vocab_fwd[f->group[bn]];
	for (int j = 0, k = bn; j < strategy_vp(s) && k < f->n_stages; k = strategy_stage(s, bn, ++j))
		for (int l = s->first[k]; l < s->first[k + 1]; l++)
			r->bottleneck_fwd += lc->fwd[(size_t)f->group[k] * lc->n_layer + l];
	r->bottleneck_send = P.rank_send[bn];
	r->bottleneck_bwd = pos(P.rank_c[bn] - P.rank_send[bn] - r->bottleneck_fwd);
	r->time.pp = P.a * P.rank_send[bn] + P.b * P.send_all;
	r->time.bubble = pos(P.t_pipe - mb * (P.rank_c[bn] - P.rank_send[bn]) - r->time.pp);
	r->time.dp += tail_dp;
	r->time.dp_hidden += tail_hid;
	r->time.optimizer = tail_opt;
	r->iter_s = P.t_pipe + tail_dp + tail_opt;

	/* The heaviest rank's memory by kind; the fullest rank's total. */
	r->peak_bytes = rank_memory(&r->mem, m, c, s, f, r->heaviest_rank);
	if (r->fullest_rank == r->heaviest_rank) {
		r->fullest_bytes = r->peak_bytes;
	} else {
		struct cost_mem fm;

		r->fullest_bytes = rank_memory(&fm, m, c, s, f, r->fullest_rank);
	}

	for (int l = 0; l < m->n_layer; l++)
		flops += compute_flops_per_token(m, l, s->seq);
	if (r->iter_s > 0) {
		double tokens = (double)s->gbs * s->seq;

		r->tokens_per_s = tokens / r->iter_s;
		r->mfu = peaks > 0 ? 3 * tokens * flops / (r->iter_s * peaks) : 0;
	}
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
		struct cost_time tm = {0};
		double hid;

		*x = zero_rank;
		x->rank = q;
		x->group = s->group[q];
		x->gpu = c->group[x->group].gpu;
		x->n_chunks = 0;
		{
			struct parts p;

			vocab_parts(&p, m, c, x->group, s, NULL);
			x->compute_fwd += p.fwd;
			x->compute_bwd += p.bwd;
			x->comm_fwd += p.tp_f + p.vc_f;
			x->comm_bwd += p.tp_b + p.vc_b;
		}
		for (int j = 0, k = q; j < strategy_vp(s) && k < f->n_stages; k = strategy_stage(s, q, ++j)) {
			x->n_layers += stage_layers(s, k);
			x->n_chunks++;
			for (int l = s->first[k]; l < s->first[k + 1]; l++) {
				struct parts p = {0};

				layer_parts(&p, m, l, c, f->group[k], s, NULL);
				x->compute_fwd += p.fwd;
				x->compute_bwd += p.bwd;
				x->comm_fwd += p.tp_f + p.cp_f + p.ep_f + p.z3_f;
				x->comm_bwd += p.tp_b + p.cp_b + p.ep_b + p.z3_b +
					       p.tp_r + p.cp_r + p.ep_r;
			}
		}
		rank_time(&tm, 1, m, c, s, f, q);
		x->recompute = tm.recompute;
		x->tp = tm.tp;
		x->cp = tm.cp;
		x->ep = tm.ep;
		x->zero3 = tm.dp;
		x->vocab = tm.vocab;
		x->fwd = x->compute_fwd + x->comm_fwd;
		x->bwd = x->compute_bwd + x->recompute + x->comm_bwd;
		x->send = P.rank_send[q];
		x->pipeline_s = P.t_pipe;
		x->busy = P.mb * P.rank_c[q];
		x->idle = pos(P.t_pipe - x->busy);
		rank_tail(&x->dp, &hid, &x->optimizer, m, c, s, lc, f->n_stages, q);
		x->peak_bytes = rank_memory(&x->mem, m, c, s, f, q);
		x->cap_bytes = cluster_group_mem(c, x->group);
	}
	return pp;
}
