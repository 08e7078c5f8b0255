/* evaluate.c: one strategy to one row: places, partitions and costs it
 * (place.c), falls back on Megatron's default split or the fixed layout,
 * and records the row with its gap, or with the reason it does not fit
 * (search_int.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "ilp.h"
#include "model.h"
#include "partition.h"
#include "search_int.h"
#include "trainer.h"
#include "util.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

/* Adds row to S->p, tagged with the tuple and the work it had done before
 * this strategy (struct row_tag; merged by pool.c). */
static void push_row(struct search *S, const struct plan_row *row)
{
	struct plan *p = S->p;

	if (p->n_row == S->cap_rows) {
		S->cap_rows = S->cap_rows ? 2 * S->cap_rows : 256;
		S->tag = xreallocarray(S->tag, (size_t)S->cap_rows, sizeof *S->tag);
	}
	S->tag[p->n_row] = (struct row_tag){ S->tuple, S->count - 1 };
	plan_row_add(p, row);
}

/* The reason of a row that does not fit (its result evaluated, r->fits
 * false): the heaviest rank's bytes per GPU against its GPU's memory, and
 * the first rank over its memory where that is another one (on a mixed
 * cluster the heaviest rank may have the larger GPU). */
static void why_not(struct search *S, struct plan_row *row)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	const struct cluster *c = S->c;
	const struct gpu_type *h = &c->gpu[c->group[s->group[r->heaviest_rank]].gpu];
	int over = r->overflow_rank;
	int n;

	n = snprintf(row->why, sizeof row->why, "%s needs %.1f GiB per GPU on rank %d (%s, %.0f GiB)",
		     S->fixed ? "--layout" : "no layer partition fits: Megatron's default split",
		     r->peak_bytes / GiB, r->heaviest_rank, h->name, h->mem_bytes / GiB);
	if (over >= 0 && over != r->heaviest_rank && n > 0 && (size_t)n < sizeof row->why) {
		const struct gpu_type *o = &c->gpu[c->group[s->group[over]].gpu];

		snprintf(row->why + n, sizeof row->why - (size_t)n, "; rank %d is over the %.0f GiB of its %s",
			 over, o->mem_bytes / GiB, o->name);
	}
}

/* The gap_pct of a row that fits (plan.h): best and r its strategy and
 * result; small: whether the joint placement DP placed it. Where the DP
 * searched every partition (one group) or every placement and partition
 * (small) without virtual stages, its optimum bounds the iteration from
 * below: the gap is 0 but where a later rank's tail ends after rank 0's
 * (cost.c iter_tail), which the DP does not see. Elsewhere (and under
 * DualPipe, whose stages share their ranks with their mirrors)
 * search_lower_bound, which with virtual stages takes cost_evaluate's
 * weights over the ranks' totals (the frame's ra, rb; cost.c pipe_terms). */
static double gap(struct search *S, const struct strategy *best, const struct cost_result *r,
		  bool small)
{
	int n = 0;
	double lb;

	for (int g = 0; g < S->c->n_group; g++)
		n += S->ranks[g] > 0;
	if (S->o->exhaustive || S->exact)
		return 0;
	/* DualPipe: the DP caps each stage at half its rank's memory, where
	   the rank holds the stage and its mirror: not exact */
	if (best->vp == 1 && !schedule_bidirectional(best->schedule) && (n == 1 || (small && !S->fixed)))
		return S->fixed || !(S->dp_value < r->iter_s * (1 - 1e-9))
			       ? 0
			       : 100 * (r->iter_s - S->dp_value) / r->iter_s;
	lb = search_lower_bound(S->m, S->c, best, &S->lc, S->ranks);
	return lb < r->iter_s ? 100 * (r->iter_s - lb) / r->iter_s : 0;
}

double search_lower_bound(const struct model *m, const struct cluster *c, const struct strategy *s,
			  const struct layer_costs *lc, const int *ranks)
{
	struct pipeline_frame f;
	int n = 0;
	double lb, vmin = INFINITY;

	for (int g = 0; g < c->n_group; g++)
		if (ranks[g] > 0) {
			n++;
			if (lc->vocab_time[g] < vmin)
				vmin = lc->vocab_time[g];
		}
	cost_frame(&f, m, c, s, lc);
	if (s->vp > 1) {
		f.a = f.ra;
		f.b = f.rb;
	}
	if (partition_place_bound(lc, &f, ranks, f.a, f.b, &lb))
		return INFINITY;
	/* vocabulary parallelism: every stage's share, which the bound does
	 * not see (the DP does: pipeline_frame.vocab), at its least */
	return lb + (n ? (f.a + f.b * s->pp) * vmin : 0);
}

/* Where the placers found nothing that fits (kept: with keep_infeasible,
 * and with virtual stages on several groups, where the candidates may not
 * have held the blocks in the cluster's order): the fixed layout or
 * Megatron's default split on the blocks in the cluster's order, costed;
 * *best and *r take it if it fits. Returns false where it recorded the row
 * of a strategy that does not fit (keep_infeasible), else true. */
static bool default_fallback(struct search *S, struct strategy *s, struct strategy *best,
			     struct cost_result *r)
{
	struct cost_result x;

	place_cluster_order(S, s);
	if (S->fixed)
		memcpy(s->first, S->layout, sizeof s->first);
	else
		place_default_split(s, S->m->n_layer);
	cost_evaluate(&x, S->m, S->c, s, &S->lc);
	if (x.fits) {
		*best = *s;
		*r = x;
	} else if (S->o->keep_infeasible) {
		struct plan_row row = { .s = *s, .r = x };

		why_not(S, &row);
		push_row(S, &row);
		return false;
	}
	return true;
}

/* Records the row of best, which fits with result r; small as for gap. A
 * strategy the chosen trainer cannot run is not ranked (it still counts
 * as fitting for the micro-batch pruning); the what-if mode prints it with
 * the trainer's reason. */
static void record_fit(struct search *S, const struct strategy *best,
		       const struct cost_result *r, bool small)
{
	struct plan_row row = { .s = *best, .r = *r };

	if (S->o->trainer >= 0 &&
	    trainer_check((enum trainer)S->o->trainer, S->m, S->c, best, NULL)) {
		if (plan_opts_what_if(S->o) && S->o->keep_infeasible) {
			size_t n = (size_t)snprintf(row.why, sizeof row.why, "the trainer cannot run it: ");

			trainer_refusal((enum trainer)S->o->trainer, S->m, S->c, best, row.why + n,
					sizeof row.why - n);
			push_row(S, &row);
		}
		return;
	}
	row.gap_pct = gap(S, best, r, small);
	push_row(S, &row);
}

/* One strategy: the placers (place_strategy; small: the joint placement
 * DP's work is at most plan_opts.place_dp_max); where none fits, with
 * virtual stages on several groups or to keep the row, default_fallback
 * (without virtual stages the joint DP is exact, so is the exhaustive
 * search, and on one group try_placement has costed the default split
 * already). The first placement that fits without virtual stages is the
 * one the later schedules of the strategy take (S->v1_group). */
static bool evaluate(struct search *S, struct strategy *s, bool small)
{
	struct strategy best = *s;
	struct cost_result r = { 0 };
	int n = 0;

	S->dp_value = INFINITY;
	for (int g = 0; g < S->c->n_group; g++)
		n += S->ranks[g] > 0;
	place_strategy(S, s, small, &best, &r);
	if (!r.fits && (S->o->keep_infeasible || (s->vp > 1 && n > 1 && !S->o->exhaustive)) &&
	    !default_fallback(S, s, &best, &r))
		return false;
	if (s->vp == 1 && r.fits && !S->have_v1) {
		memcpy(S->v1_group, best.group, sizeof S->v1_group);
		memcpy(S->v1_first, best.first, sizeof S->v1_first);
		S->have_v1 = true;
	}
	if (!r.fits)
		return false;
	record_fit(S, &best, &r, small);
	return true;
}

/* The placements and partitions exhaustive_search tries for s: the
 * sequences of s->pp groups in which group g appears at most S->ranks[g]
 * times (sum over the count vectors c of pp! / prod c_g!) times the
 * C(n_layer - 1, n_stages - 1) splits into non-empty stages. */
static double candidates(const struct search *S, const struct strategy *s)
{
	double f[MAX_STAGES + 1] = { 1 }, fact = 1, split = 1;
	int pp = s->pp, n = S->m->n_layer, k = s->n_stages;

	for (int g = 0; g < S->c->n_group; g++)
		for (int j = pp; j >= 1; j--) {
			double inv = 1;

			for (int c = 1; c <= S->ranks[g] && c <= j; c++) {
				inv /= c;
				f[j] += f[j - c] * inv;
			}
		}
	for (int j = 2; j <= pp; j++)
		fact *= j;
	for (int j = 1; j < k && k <= n; j++)
		split = split * (n - k + j) / j;
	return k <= n ? fact * f[pp] * split : 0;
}

/* The partition DP cells of one partition of s on a fixed placement
 * (partition_solve) at least: its caps table, K stages x groups x (layers
 * + 1) (partition.c counts it so; each pass adds (K + 1) x groups x
 * (layers + 1) more, and one where nothing fits may end before its
 * first). */
static double solve_cells(const struct search *S, const struct strategy *s)
{
	return (double)s->n_stages * S->c->n_group * (S->m->n_layer + 1.0);
}

/* Caps tables per partition of the climb of the block orders (place.c
 * climb_blocks: 2n rotations and n sweeps of n - 1 swaps): its table and
 * about seven passes, the most measured (a climb of 600 layers on 6 groups
 * took about 7 passes a partition, of 10^4 layers on 16 groups about 3;
 * partition.c: 1.4 to 4 on the Llama-3-70B bench). */
#define CLIMB_TABLES_PER_PART 8.0

/* strategy_cells' estimates taken without its memory test and climb
 * partition (a frame of groups^2 links each): 4 units, at most 64 us of
 * work charged where nothing fits (+20% CPU on the 16-group bench with
 * the tests on every strategy). */
#define STRATEGY_SMALL_CELLS (4 * SEARCH_UNIT_CELLS)

/* The partition DP cells that place_strategy is expected to spend on s,
 * before it runs: the caps table (solve_cells) of each placement that the
 * placers of place.c partition: 1 on one group or with 1F1B's placement;
 * the block orders, each order up to 4 groups; beyond 4 groups of
 * different GPU types or node sizes the ILP's placement and, where this
 * (TP, CP, PP, DP) has no climbed order yet, climb_blocks' partitions
 * (CLIMB_TABLES_PER_PART tables each). Where the layers' memory exceeds
 * the stages' caps together (at the fewest micro-batches in flight: the
 * partition DP's first test, the same for every placement of the ranks),
 * every partition ends before its table: 0. Before a climb, the blocks in
 * the cluster's order are partitioned (the climb's first rotation, counted
 * as the strategy's work), and where nothing fits them the climb is taken
 * to find nothing either: its rotations and a sweep, a table each. (The
 * bound's relaxation, partition_place_bound, would rule out more, but
 * costs groups^2 x layers per strategy, seconds in all on 10^4 layers and
 * 16 groups.) Estimates below STRATEGY_SMALL_CELLS are taken as they
 * are, without those tests. The joint DP within place_dp_max (small), the
 * exhaustive search and a fixed layout: 0 (their work is small, or not the
 * partition DP's). An estimate, not a bound: a climb ends where no swap
 * helps, its partitions take 1 to 7 passes or more, a rotation may fit
 * where the cluster's order does not, and place_climb_tail's evaluations
 * are counted only as they run; search_over cuts a strategy whose work
 * passes the cap. */
static double strategy_cells(struct search *S, const struct strategy *s, bool small)
{
	const struct cluster *c = S->c;
	struct pipeline_frame f;
	struct strategy w = *s;
	int n = 0, first = -1;
	bool alike = true, climb = false;
	double perms = 1, t, est, need = 0, act = 0, room = 0, fewest = INFINITY;

	if (S->o->exhaustive || S->fixed || (s->vp == 1 && small))
		return 0;
	for (int g = 0; g < c->n_group; g++) {
		if (!S->ranks[g])
			continue;
		if (first < 0)
			first = g;
		alike &= c->group[g].gpu == c->group[first].gpu &&
			 c->group[g].gpus_per_node == c->group[first].gpus_per_node && !c->group[g].n_part;
		perms *= ++n;
	}
	if (n <= 1 || S->have_v1)
		est = solve_cells(S, s) * (n > 1 && s->vp > 1 && small ? 1 + perms : 1);
	else if (n <= 4 || alike)
		est = solve_cells(S, s) * (n <= 4 ? perms : 1);
	else if (S->climbed)
		est = solve_cells(S, s) * (2 + (s->pp * n <= ILP_MAX_CELLS));
	else {
		est = solve_cells(S, s) * CLIMB_TABLES_PER_PART * (2 * n + n * (n - 1.0));
		climb = true;
	}
	if (est < STRATEGY_SMALL_CELLS)
		return est;
	place_cluster_order(S, &w);
	cost_frame(&f, S->m, c, &w, &S->lc);
	for (int l = 0; l < S->lc.n_layer; l++) {
		need += S->lc.state_bytes[l] + S->lc.extra_bytes[l];
		act += S->lc.act_bytes[l];
	}
	for (int k = 0; k < s->n_stages; k++) {
		room += f.cap[k];
		fewest = f.inflight[k] < fewest ? f.inflight[k] : fewest;
	}
	if (need + fewest * act > room)
		return 0;
	if (climb && partition_solve(&S->lc, &f, w.first, &t))
		return solve_cells(S, s) * (3 * n - 1);
	return est;
}

/* The cells of the strategy being costed so far: its partition DP cells,
 * cost evaluations and layer costs (search_int.h, struct search cells). */
static double strategy_spent(const struct search *S)
{
	return search_cells_since(S, S->partition0, S->evals0) +
	       (double)S->m->n_layer * S->c->n_group * SEARCH_LAYER_CELLS;
}

double search_cells_since(const struct search *S, double c0, long e0)
{
	return partition_cells - c0 + (double)(cost_evaluations - e0) * SEARCH_EVAL_CELLS * (S->m->n_layer + 2);
}

bool search_over(struct search *S)
{
	if (S->in_strategy && !S->cut &&
	    S->n_start + (long)((S->cells0 + strategy_spent(S)) / SEARCH_UNIT_CELLS) > S->cap)
		S->cut = true;
	return S->cut;
}

bool search_evaluate(struct search *S, struct strategy *s)
{
	double cells, est;
	long n_layer = S->m->n_layer, end, rows0 = S->p->n_row, ilp0 = S->ilp_at;
	bool fits, small;

	if (S->dry) {
		S->n_start++;
		S->cells += candidates(S, s);
		return true;
	}
	small = partition_place_work(S->ranks, S->c->n_group, S->m->n_layer, s->pp) <= S->o->place_dp_max;
	/* the strategy's layer costs and expected DP cells: it starts only
	 * where the count it is expected to end at is within the cap */
	est = strategy_cells(S, s, small) + (double)n_layer * S->c->n_group * SEARCH_LAYER_CELLS;
	end = S->n_start + 1 + (long)((S->cells + est) / SEARCH_UNIT_CELLS);
	if (end > S->cap) {
		S->count = end;
		S->stop = true;
		return false;
	}
	if (S->n_start == S->cap_start) {
		S->cap_start = S->cap_start ? 2 * S->cap_start : 256;
		S->start = xreallocarray(S->start, (size_t)S->cap_start, sizeof *S->start);
	}
	S->n_start++;
	S->count = end;
	/* every 16 strategies, and after 64 units (1 ms or so) */
	if (S->n_start % 16 == 0 || S->count - S->reported >= 64)
		pool_refresh(S);
	S->in_strategy = true;
	S->cells0 = S->cells;
	S->partition0 = partition_cells;
	S->evals0 = cost_evaluations;
	fits = evaluate(S, s, small);
	S->in_strategy = false;
	cells = strategy_spent(S);
	/* charged at least its estimate, so that which strategies start does
	 * not depend on the cap a thread had (pool.c) */
	S->cells += cells > est ? cells : est;
	S->count = S->n_start + (long)(S->cells / SEARCH_UNIT_CELLS);
	/* its rows, ILP and start are tagged with the count at its end less
	 * one: kept where that is within the tuple's share, the same for any
	 * cap at least the share; a strategy cut at its cap is past every
	 * share and stops the tuple */
	end = S->cut ? LONG_MAX : S->count - 1;
	for (long k = rows0; k < S->p->n_row; k++)
		S->tag[k].at = end;
	if (S->ilp_at != ilp0)
		S->ilp_at = end;
	S->start[S->n_start - 1] = end;
	if (S->cut) {
		S->cut = false;
		S->stop = true;
		return false;
	}
	return fits;
}
