/* place.c: the placement of one strategy's pipeline ranks on the node
 * groups: a table of placers walked in order (exact searches, the block
 * orders, the ILP, a feasibility DP), each placement partitioned by the
 * partition DP (or given the fixed layout) and costed (search_int.h). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "exact.h"
#include "exhaustive.h"
#include "ilp.h"
#include "model.h"
#include "partition.h"
#include "search_int.h"
#include "trainer.h"
#include "trainer_time.h"
#include "util.h"

/* Megatron's default split (no layout flags): the B blocks spread as
 * evenly as possible over the S virtual stages, stage k taking blocks
 * [k B / S, (k + 1) B / S), the embedding on the first stage and the head
 * on the last; virtual stage k runs on pipeline rank k % pp. With fewer
 * blocks than stages (some would hold nothing) the layers, embedding and
 * head included, are split evenly instead (S <= n_layer). */
void place_default_split(struct strategy *s, int n_layer)
{
	int S = s->n_stages, B = n_layer - 2;

	for (int k = 0; k <= S; k++)
		s->first[k] = B >= S ? (unsigned short)(k ? 1 + (long)k * B / S : 0)
				     : (unsigned short)((long)k * n_layer / S);
	s->first[S] = (unsigned short)n_layer;
}

/* Next permutation of a[0..n) in lexicographic order; false after the last. */
static bool next_perm(int *a, int n)
{
	int i = n - 2, j = n - 1;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	while (a[j] <= a[i])
		j--;
	int t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--) {
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	return true;
}

/* A move of the climbs below: the start of stage k of s moved by d
 * layers (1 <= k < n_stages, each stage keeping a layer), costed by its
 * time and memory alone (cost_evaluate_time); where it fits and is faster
 * than *br, *b and *br take it. */
static void try_boundary(struct search *S, const struct strategy *s, int k, int d,
			 struct strategy *b, struct cost_result *br)
{
	struct strategy x = *s;
	struct cost_result xr;
	int at = x.first[k] + d;

	if (k < 1 || k >= x.n_stages || at <= x.first[k - 1] || at >= x.first[k + 1])
		return;
	x.first[k] = (unsigned short)at;
	cost_evaluate_time(&xr, S->m, S->c, &x, &S->lc);
	if (xr.fits && xr.iter_s < br->iter_s * (1 - 1e-12)) {
		*b = x;
		*br = xr;
	}
}

/* The climbs below: while it helps, at most max_moves times, s takes the
 * move that lowers the iteration time most: with tail, of the two that
 * move a layer off the rank whose DP tail ends last (r->tail_rank, while
 * that is not rank 0), to the stage before it or after it; else every
 * chunk boundary moved by a layer either way. The moves are compared by
 * their time and memory alone (cost_evaluate_time, each counted as an
 * evaluation); the one taken last is costed in full once, uncounted, into
 * r. */
static void climb(struct search *S, struct strategy *s, struct cost_result *r, int max_moves,
		  bool tail)
{
	struct cost_result cur = *r;
	bool moved = false;

	for (int n = 0; n < max_moves && (!tail || cur.tail_rank > 0) && !search_over(S); n++) {
		struct strategy b = *s;
		struct cost_result br = cur;

		if (tail) {
			try_boundary(S, s, cur.tail_rank, 1, &b, &br);
			try_boundary(S, s, cur.tail_rank + 1, -1, &b, &br);
		} else {
			for (int k = 1; k < s->n_stages; k++)
				for (int d = -1; d <= 1; d += 2)
					try_boundary(S, s, k, d, &b, &br);
		}
		if (!(br.iter_s < cur.iter_s))
			break;
		*s = b;
		cur = br;
		moved = true;
	}
	if (moved)
		cost_evaluate_again(r, S->m, S->c, s, &S->lc);
}

/* Where the partition DP's optimum t (pipeline time + rank 0's tail) is
 * below the evaluated r (vp 1): a later rank's tail ends after rank 0's
 * (cost.c iter_tail), which the DP does not see. While it helps, moves a
 * layer from the rank that sets the tail (r->tail_rank) to the stage
 * before it, which lengthens its lead, or to the stage after it, which
 * shrinks its reduction (climb); s and r take the result. */
void place_climb_tail(struct search *S, struct strategy *s, struct cost_result *r, double t)
{
	if (s->vp == 1 && r->fits && t < r->iter_s * (1 - 1e-9))
		climb(S, s, r, INT_MAX, true);
}

/* With virtual stages (or DualPipe's mirrored stages) the partition DP
 * costs each chunk against a bound of its own, while a pipeline rank runs
 * its chunks together (cost.c: the slowest rank's chunks set the steady
 * state): its optimum can load one rank with two heavy chunks. While it
 * helps, at most max_moves times, moves the one layer across a chunk
 * boundary that lowers the iteration time most (climb: every boundary,
 * both ways, each chunk keeping a layer); s and r take the result. */
void place_climb_chunks(struct search *S, struct strategy *s, struct cost_result *r,
			int max_moves)
{
	if ((s->vp > 1 || schedule_bidirectional(s->schedule)) && r->fits)
		climb(S, s, r, max_moves, false);
}

/* With virtual stages in Megatron's order (chunk k on rank k % pp, the
 * last on rank pp - 1), on the placement of the strategy's row without
 * them (S->v1_group; 1F1B's where it fits): a second partition, that
 * row's layers per rank (S->v1_first) split over each rank's chunks as
 * evenly as it goes, the later chunks (fewer micro-batches in flight)
 * taking the remainder. cost_evaluate's steady state weighs the ranks'
 * totals (ra max_r C_r + rb sum_r C_r, cost.c), which that row's
 * partition balances, while the chunk DP bounds each chunk on its own and
 * can load one rank with two heavy chunks. s and r take it where it fits
 * and is faster (compared by cost_evaluate_time, counted as an
 * evaluation; costed in full once, uncounted). */
static void try_v1_split(struct search *S, struct strategy *s, struct cost_result *r)
{
	struct strategy x = *s;
	struct cost_result xr;
	int size[MAX_STAGES], pp = s->pp, vp = s->vp;

	if (vp == 1 || schedule_v(s->schedule) || schedule_bidirectional(s->schedule) ||
	    !S->have_v1 || memcmp(s->group, S->v1_group, (size_t)pp) ||
	    S->v1_first[pp] != S->lc.n_layer)
		return;
	for (int q = 0; q < pp; q++) {
		int n = S->v1_first[q + 1] - S->v1_first[q];

		if (n < vp)
			return;
		for (int j = 0; j < vp; j++)
			size[j * pp + q] = n / vp + (j >= vp - n % vp);
	}
	for (int k = 0; k < s->n_stages; k++)
		x.first[k + 1] = (unsigned short)(x.first[k] + size[k]);
	cost_evaluate_time(&xr, S->m, S->c, &x, &S->lc);
	if (xr.fits && (!r->fits || xr.iter_s < r->iter_s)) {
		*s = x;
		cost_evaluate_again(r, S->m, S->c, s, &S->lc);
	}
}

/* Partitions the layers for placement s->group (or takes the fixed
 * layout) and keeps the result in *best if it fits and beats it. With
 * virtual stages the partition DP holds each chunk to its rank's memory /
 * vp, stricter than cost_evaluate's test of the rank's chunks together:
 * when the DP finds nothing, Megatron's default split may still fit.
 * Without them the DP's optimum bounds the evaluated time from below
 * (cost.c iter_tail), so the DP seeks only what beats *best_r.
 * Returns the iteration time costed (seconds), INFINITY if nothing fits
 * or nothing beats *best_r (vp = 1). */
static double try_placement(struct search *S, struct strategy *s,
			    struct strategy *best, struct cost_result *best_r)
{
	struct pipeline_frame f;
	struct cost_result r;
	double t = INFINITY;

	if (search_over(S))
		return INFINITY;
	if (S->fixed) {
		memcpy(s->first, S->layout, sizeof s->first);
	} else {
		cost_frame(&f, S->m, S->c, s, &S->lc);
		if (partition_solve_memo(&S->lc, &f,
					 s->vp == 1 && best_r->fits ? best_r->iter_s : INFINITY,
					 S->memo, s->first, &t)) {
			if (s->vp == 1)
				return INFINITY;
			place_default_split(s, S->m->n_layer);
		}
		S->dp_value = t;
	}
	cost_evaluate(&r, S->m, S->c, s, &S->lc);
	if (!S->fixed)
		try_v1_split(S, s, &r);
	if (!S->fixed)
		place_climb_tail(S, s, &r, t);
	if (!r.fits)
		return INFINITY;
	if (!best_r->fits || r.iter_s < best_r->iter_s) {
		*best = *s;
		*best_r = r;
	}
	return r.iter_s;
}

/* Ranks in contiguous blocks, groups in the order given. */
static void block_placement(const struct search *S, struct strategy *s, const int *order, int n)
{
	int r = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < S->ranks[order[i]]; k++)
			s->group[r++] = (unsigned char)order[i];
}

bool place_memo_begin(struct search *S, const struct strategy *s)
{
	if (S->memo || S->fixed)
		return false;
	S->memo = partition_memo_create(&S->lc, s->n_stages);
	return true;
}

void place_memo_end(struct search *S, bool made)
{
	if (!made)
		return;
	partition_memo_free(S->memo);
	S->memo = NULL;
}

/* try_placement() on the block placements of the n groups of order[] in
 * every order up to 4 groups, else in the order given (permutes order). */
static void try_blocks(struct search *S, struct strategy *s, int *order, int n,
		       struct strategy *best, struct cost_result *best_r)
{
	bool made = n <= 4 && place_memo_begin(S, s);

	do {
		block_placement(S, s, order, n);
		try_placement(S, s, best, best_r);
	} while (n <= 4 && next_perm(order, n));
	place_memo_end(S, made);
}

/* Hill climbing over the block placements of the n groups of order[] (n
 * > 4, where try_blocks takes one order): swaps neighbouring blocks while a
 * swap lowers the iteration time that try_placement costs, at most n sweeps
 * of n - 1 swaps. Writes the best order found to order[]; returns its time
 * (INFINITY if no order tried fits). Deterministic: a fixed sweep order and
 * strict improvements only. */
static double climb_blocks(struct search *S, struct strategy *s, int *order, int n,
			   struct strategy *best, struct cost_result *best_r)
{
	double t = INFINITY;
	bool moved = true, made = place_memo_begin(S, s);
	int start[MAX_GROUPS], cand[MAX_GROUPS];

	/* start: the best rotation of order[], forwards or reversed (which
	 * group holds the embedding and which the head) */
	memcpy(start, order, sizeof start);
	for (int dir = 0; dir < 2; dir++)
		for (int k = 0; k < n; k++) {
			for (int i = 0; i < n; i++)
				cand[i] = start[dir ? (k + n - i) % n : (k + i) % n];
			block_placement(S, s, cand, n);
			double u = try_placement(S, s, best, best_r);
			if (u < t || (dir == 0 && k == 0)) {
				t = u;
				memcpy(order, cand, sizeof cand);
			}
		}
	for (int sweep = 0; sweep < n && moved; sweep++) {
		moved = false;
		for (int i = 0; i + 1 < n; i++) {
			int x = order[i];

			order[i] = order[i + 1];
			order[i + 1] = x;
			block_placement(S, s, order, n);
			double u = try_placement(S, s, best, best_r);
			if (u < t) {
				t = u;
				moved = true;
			} else {
				order[i + 1] = order[i];
				order[i] = x;
			}
		}
	}
	place_memo_end(S, made);
	return t;
}

static pthread_mutex_t glpk_lock = PTHREAD_MUTEX_INITIALIZER;

/* The placement from the ILP, if GLPK finds one; counts how it ended. */
static bool ilp_placement(struct search *S, struct strategy *s)
{
	struct pipeline_frame f;
	double cap[MAX_GROUPS], inflight[MAX_STAGES] = { 0 };
	int group[MAX_STAGES];
	enum ilp_status st;

	cost_frame(&f, S->m, S->c, s, &S->lc);
	for (int g = 0; g < S->c->n_group; g++)
		cap[g] = f.cap_of[g] * s->vp;
	/* the ILP sees a rank whole: its chunks' mean micro-batches in flight
	 * (ZB-V's 2(p-r)-1 and 2r+1 average p) and the weights over the
	 * ranks' totals */
	for (int k = 0; k < f.n_stages; k++)
		inflight[strategy_rank(s, k)] += f.inflight[k] / s->vp;
	struct placement_problem pb = {
		.pp = s->pp,
		.n_group = S->c->n_group,
		.ranks = S->ranks,
		.lc = &S->lc,
		.a = s->vp > 1 ? f.ra : f.a,
		.b = s->vp > 1 ? f.rb : f.b,
		.inflight = inflight,
		.cap = cap,
	};
	pthread_mutex_lock(&glpk_lock); /* GLPK is not thread safe */
	st = ilp_place_limits(&pb, group, S->o->ilp_time_limit_s, S->o->ilp_node_limit);
	pthread_mutex_unlock(&glpk_lock);
	S->ilp_at = S->count - 1;
	S->ilp_kind = st == ILP_NONE ? 2 : st == ILP_FEASIBLE ? 1
							      : 0;
	if (st == ILP_NONE)
		return false;
	for (int r = 0; r < s->pp; r++)
		s->group[r] = (unsigned char)group[r];
	return true;
}

void place_free_glpk(void)
{
	pthread_mutex_lock(&glpk_lock);
	ilp_free_env();
	pthread_mutex_unlock(&glpk_lock);
}

/* Whether every node group has the same GPU type, node size and links, so
 * that no placement beats another. */
static bool interchangeable(const struct cluster *c, const int *ranks)
{
	int f = 0;

	while (f < c->n_group - 1 && !ranks[f])
		f++;
	for (int g = f + 1; g < c->n_group; g++) {
		const struct node_group *a = &c->group[f], *b = &c->group[g];

		if (!ranks[g])
			continue;
		if (a->n_part || b->n_part)
			return false;

		if (a->gpu != b->gpu || a->gpus_per_node != b->gpus_per_node ||
		    a->intra_bw != b->intra_bw || a->inter_bw != b->inter_bw ||
		    a->intra_lat != b->intra_lat || a->inter_lat != b->inter_lat ||
		    a->intra_eff != b->intra_eff || a->inter_eff != b->inter_eff ||
		    a->fabric != b->fabric)
			return false;
	}
	return true;
}

/* Most work (partition_place_work) of fit_placement's feasibility pass. */
#define FIT_DP_MAX 2e6

/* Where the candidate placements found none that fits (vp = 1): the joint
 * placement DP on the layers with every time and link 0, whose first pass
 * finds a placement and partition that fit if any does (memory alone), when
 * the relaxation of partition_place_bound does not already rule them out
 * and its work is at most FIT_DP_MAX; then that placement is partitioned
 * by try_placement. */
static void fit_placement(struct search *S, struct strategy *s, struct strategy *best,
			  struct cost_result *best_r)
{
	struct pipeline_frame f, z;
	struct layer_costs lc = S->lc;
	int group[MAX_STAGES], n = S->lc.n_layer;
	double lb, t, *zero;

	if (partition_place_work(S->ranks, S->c->n_group, n, s->pp) > FIT_DP_MAX)
		return;
	cost_frame(&f, S->m, S->c, s, &S->lc);
	if (partition_place_bound(&S->lc, &f, S->ranks, f.a, f.b, &lb))
		return;
	zero = xcalloc((size_t)S->c->n_group * (size_t)(n + 1), sizeof *zero);
	lc.time = zero;
	lc.tail0 = NULL;
	z = f;
	z.a = z.b = 0;
	memset(z.link, 0, sizeof z.link);
	if (!partition_place(&lc, &z, S->ranks, group, s->first, &t)) {
		for (int k = 0; k < s->pp; k++)
			s->group[k] = (unsigned char)group[k];
		try_placement(S, s, best, best_r);
	}
	free(zero);
}

/* The joint placement and partition DP (exact, vp = 1). */
static void place_dp(struct search *S, struct strategy *s, struct strategy *best,
		     struct cost_result *best_r)
{
	struct pipeline_frame f;
	struct cost_result r;
	int group[MAX_STAGES];
	double t;

	cost_frame(&f, S->m, S->c, s, &S->lc);
	if (partition_place(&S->lc, &f, S->ranks, group, s->first, &t))
		return;
	S->dp_value = t;
	for (int k = 0; k < s->pp; k++)
		s->group[k] = (unsigned char)group[k];
	cost_evaluate(&r, S->m, S->c, s, &S->lc);
	place_climb_tail(S, s, &r, t);
	if (r.fits && (!best_r->fits || r.iter_s < best_r->iter_s)) {
		*best = *s;
		*best_r = r;
	}
}

/* The strategy being placed, as the placers see it. */
struct place_ctx {
	struct search *S;
	struct strategy *s;	  /* its groups and split: the placers'
					   scratch */
	struct strategy *best;	  /* the fastest placement that fits */
	struct cost_result *r;	  /* its result (fits false: none yet) */
	int order[MAX_GROUPS], n; /* the groups with ranks, in the
					   cluster's order (try_blocks permutes
					   it) */
	bool small;		  /* the joint DP's work is at most
					   plan_opts.place_dp_max */
};

/* Whether more than 4 groups host ranks and they differ: the block orders
 * are then climbed (climb_blocks) and the ILP tried. */
static bool many_kinds(const struct place_ctx *c)
{
	return c->n > 4 && !interchangeable(c->S->c, c->S->ranks);
}

/* --exhaustive: every placement and partition (exhaustive.c). */
static bool placer_exhaustive(struct place_ctx *c)
{
	if (!c->S->o->exhaustive)
		return false;
	exhaustive_search(c->best, c->r, c->s, c->S->ranks, c->S->m, c->S->c, &c->S->lc);
	return true;
}

/* One node group: the partition DP (or the fixed layout), exact. */
static bool placer_one_group(struct place_ctx *c)
{
	if (c->n != 1)
		return false;
	try_placement(c->S, c->s, c->best, c->r);
	return true;
}

/* Without virtual stages, where its work is small enough and the
 * partition is not fixed: the joint placement and partition DP, exact. */
static bool placer_joint_dp(struct place_ctx *c)
{
	if (c->s->vp != 1 || !c->small || c->S->fixed)
		return false;
	place_dp(c->S, c->s, c->best, c->r);
	return true;
}

/* The schedules after 1F1B (each_schedule tries 1F1B first) take the
 * placement 1F1B found for the same strategy; with interleaving, when the
 * joint DP found it, the blocks in every order too (try_blocks): a
 * placement best for 1F1B may not be for virtual stages. The block orders
 * and the ILP are then skipped; fit_placement may follow. */
static bool placer_as_1f1b(struct place_ctx *c)
{
	struct search *S = c->S;

	if (!S->have_v1)
		return false;
	memcpy(c->s->group, S->v1_group, sizeof c->s->group);
	try_placement(S, c->s, c->best, c->r);
	if (c->s->vp > 1 && c->small)
		try_blocks(S, c->s, c->order, c->n, c->best, c->r);
	return false;
}

/* Without 1F1B's placement: contiguous blocks of each group in every order
 * (up to 4 groups; beyond, in the cluster's order), and beyond 4 groups
 * that differ, in the order climb_blocks finds at the first strategy of the
 * (TP, CP, PP, DP) that fits. */
static bool placer_blocks(struct place_ctx *c)
{
	struct search *S = c->S;

	if (S->have_v1)
		return false;
	if (!many_kinds(c)) {
		try_blocks(S, c->s, c->order, c->n, c->best, c->r);
		return false;
	}
	if (!S->climbed) {
		/* the climbed block order of this (TP, CP, PP, DP), from its
		 * first strategy that fits anywhere (it starts with the order
		 * try_blocks takes) */
		int o2[MAX_GROUPS];

		memcpy(o2, c->order, sizeof o2);
		if (climb_blocks(S, c->s, o2, c->n, c->best, c->r) < INFINITY) {
			S->climbed = true;
			memcpy(S->climb_order, o2, sizeof o2);
		}
		return false;
	}
	/* the climbed order first (as fast as the cluster's or faster on
	 * about 60% of the 8-group bench's strategies): it bounds the
	 * other's partition DP */
	block_placement(S, c->s, S->climb_order, c->n);
	try_placement(S, c->s, c->best, c->r);
	try_blocks(S, c->s, c->order, c->n, c->best, c->r);
	return false;
}

/* Without 1F1B's placement, beyond 4 groups that differ and at most
 * ILP_MAX_CELLS ranks x groups: GLPK's ILP placement, solved once per (TP,
 * CP, PP, DP): its placement hardly depends on the micro-batch,
 * recomputation or ZeRO. */
static bool placer_ilp(struct place_ctx *c)
{
	struct search *S = c->S;

	if (S->have_v1 || !many_kinds(c) || c->s->pp * c->n > ILP_MAX_CELLS)
		return false;
	if (!S->ilp_state) {
		S->ilp_state = ilp_placement(S, c->s) ? 1 : -1;
		memcpy(S->ilp_group, c->s->group, sizeof S->ilp_group);
	}
	if (S->ilp_state > 0) {
		memcpy(c->s->group, S->ilp_group, sizeof c->s->group);
		try_placement(S, c->s, c->best, c->r);
	}
	return false;
}

/* Without virtual stages, where the placers before found none that fits
 * and the joint DP did not run (it is exact: where it finds nothing,
 * nothing fits): fit_placement. */
static bool placer_fit(struct place_ctx *c)
{
	if (c->r->fits || c->s->vp != 1 || c->small || c->S->fixed)
		return false;
	fit_placement(c->S, c->s, c->best, c->r);
	return true;
}

bool placement_settable(const struct cluster *c, const struct strategy *s)
{
	int start, end;

	return cluster_bf16_blocks(c, s, &start, &end) == 0 && trainer_nodes_fit(c, s, NULL) == 0;
}

bool placement_better(const struct cluster *c, const struct strategy *s,
		      const struct cost_result *r, const struct strategy *best,
		      const struct cost_result *rb)
{
	bool set;

	if (!r->fits)
		return false;
	if (!rb->fits)
		return true;
	set = placement_settable(c, s);
	if (set != placement_settable(c, best) && fabs(r->iter_s - rb->iter_s) <= 1e-12 * rb->iter_s)
		return set;
	return r->iter_s < rb->iter_s;
}

/* Beyond those instances, most branches of exact_place where the placers
 * found nothing that fits with virtual stages or DualPipe (their partition
 * DP caps each stage at a share of its rank's memory). */
#define EXACT_FIT_NODES 300

/* After the placers: where their result is not proven optimal (virtual
 * stages, DualPipe's mirrors, the candidate placements, or a later rank's
 * tail that the partition DP does not see), the branch and bound of
 * exact_place from their incumbent, within EXACT_NODES; beyond the
 * instances of EXACT_MAX_LAYERS and EXACT_MAX_GPUS only where they found
 * nothing that fits with virtual stages or DualPipe, within
 * EXACT_FIT_NODES. S->exact says whether the result is now the optimum
 * over every placement and partition (or whether none fits). */
static void place_exact(struct place_ctx *c)
{
	struct search *S = c->S;
	const struct strategy *s = c->s;
	bool dp = s->vp == 1 && !schedule_bidirectional(s->schedule) && (c->n == 1 || c->small);

	if (S->o->exhaustive || S->fixed || s->n_stages < 2)
		return;
	if (S->lc.n_layer > EXACT_MAX_LAYERS || S->c->total_gpus > EXACT_MAX_GPUS) {
		struct pipeline_frame f;
		double lb;

		if (c->r->fits || !(s->vp > 1 || schedule_bidirectional(s->schedule)))
			return;
		/* the bound's relaxation holds each rank's memory: where it
		 * holds no partition, none fits */
		cost_frame(&f, S->m, S->c, s, &S->lc);
		if (partition_place_bound(&S->lc, &f, S->ranks, f.ra, f.rb, &lb))
			S->exact = true;
		else
			S->exact = exact_place(c->best, c->r, s, S->ranks, S->m, S->c, &S->lc,
					       EXACT_FIT_NODES);
		return;
	}
	if (dp && (!c->r->fits || (!(S->dp_value < c->r->iter_s * (1 - 1e-9)) &&
				   placement_settable(S->c, c->best)))) {
		S->exact = true; /* the partition DP's optimum, rank 0's tail last */
		return;
	}
	S->exact = exact_place(c->best, c->r, s, S->ranks, S->m, S->c, &S->lc, EXACT_NODES);
}

/* A placer: tries its candidate placements of c->s where they apply, each
 * partitioned and costed, keeping the fastest that fits in c->best and
 * c->r. Returns true where the strategy is placed for good: the walk ends
 * there. */
typedef bool placer_fn(struct place_ctx *c);

/* The placers in the order place_strategy walks them. Exact first: the
 * exhaustive search, one node group (the partition DP), the joint DP
 * (without virtual stages, where its work is at most place_dp_max); each
 * ends the walk. Else candidate placements, each refined by the partition
 * DP: 1F1B's placement for the schedules after it, or the block orders and
 * the ILP; and where none fits without virtual stages, fit_placement. A
 * fixed layout (plan_opts.layout) takes the place of the partition DP on
 * the same placements (the block placements in place of the joint DP).
 * The names are for the reader and the debugger. */
static const struct placer {
	const char *name;
	placer_fn *place;
} placers[] = {
	{ "exhaustive", placer_exhaustive },
	{ "one group", placer_one_group },
	{ "joint DP", placer_joint_dp },
	{ "1F1B's placement", placer_as_1f1b },
	{ "block orders", placer_blocks },
	{ "ILP", placer_ilp },
	{ "fit", placer_fit },
};

void place_cluster_order(const struct search *S, struct strategy *s)
{
	int order[MAX_GROUPS], n = 0;

	for (int g = 0; g < S->c->n_group; g++)
		if (S->ranks[g])
			order[n++] = g;
	block_placement(S, s, order, n);
}

/* Whether a trainer (plan_opts.trainer where that is set) launches s at
 * the time the search gives it: it runs s (trainer_check) and its own
 * features are the search's, so that trainer_times keeps the row's time
 * and lists it (a row whose trainers set other features is costed again
 * there, and may end slower). */
static bool launchable(const struct search *S, const struct strategy *s)
{
	if (search_plan_kind(s) >= 0)
		return false;
	for (int t = 0; t < TRAINER_COUNT; t++) {
		struct strategy v = *s;

		if ((S->o->trainer >= 0 && t != S->o->trainer) ||
		    trainer_check((enum trainer)t, S->m, S->c, s, NULL))
			continue;
		trainer_features(t, &v, S->m, S->o);
		if (!memcmp(&v, s, sizeof v))
			return true;
	}
	return false;
}

/* Whether place_strategy drops planning-only variant s (S->bound_plan):
 * beyond the instances --exhaustive takes (EXACT_MAX_LAYERS,
 * EXACT_MAX_GPUS; on those the search keeps every row it does), where no
 * placement and partition of s can beat the tuple's fastest launchable
 * placement so far (S->launch_best), nor the fastest row of its kind
 * (S->plan_best: so the best row of each kind, which the table's
 * "planning only" lines name, stays): partition_place_bound with the
 * vocabulary share at its least, the lower bound of evaluate.c's gap().
 * A row dropped so would rank below a plan that a trainer launches (whose
 * time refine_rows only lowers), and none launches s itself. Never with
 * --exhaustive, --show-infeasible (evaluate.c would cost the default
 * split instead) or a fixed layout. */
static bool plan_only_beaten(struct search *S, const struct strategy *s)
{
	struct pipeline_frame f;
	double lb, vmin = INFINITY;

	if (!S->bound_plan || !(S->launch_best < INFINITY) || s->vp != 1 || S->o->exhaustive ||
	    S->o->keep_infeasible || S->fixed ||
	    (S->lc.n_layer <= EXACT_MAX_LAYERS && S->c->total_gpus <= EXACT_MAX_GPUS))
		return false;
	cost_frame(&f, S->m, S->c, s, &S->lc);
	if (partition_place_bound(&S->lc, &f, S->ranks, f.a, f.b, &lb))
		return false;
	for (int g = 0; g < S->c->n_group; g++)
		if (S->ranks[g] > 0 && S->lc.vocab_time[g] < vmin)
			vmin = S->lc.vocab_time[g];
	if (vmin < INFINITY)
		lb += (f.a + f.b * s->pp) * vmin;
	return lb >= S->launch_best && lb > S->plan_best[search_plan_kind(s)];
}

void place_strategy(struct search *S, struct strategy *s, bool small,
		    struct strategy *best, struct cost_result *r)
{
	struct place_ctx c = { .S = S, .s = s, .best = best, .r = r, .small = small };
	int kind;

	S->exact = false;
	if (plan_only_beaten(S, s))
		return;

	for (int g = 0; g < S->c->n_group; g++)
		if (S->ranks[g])
			c.order[c.n++] = g;
	block_placement(S, s, c.order, c.n);
	for (size_t i = 0; i < sizeof placers / sizeof *placers; i++)
		if (placers[i].place(&c))
			break;
	place_exact(&c);
	if (!r->fits)
		return;
	kind = search_plan_kind(best);
	if (kind >= 0 && r->iter_s < S->plan_best[kind])
		S->plan_best[kind] = r->iter_s;
	else if (kind < 0 && r->iter_s < S->launch_best && launchable(S, best))
		S->launch_best = r->iter_s;
}
