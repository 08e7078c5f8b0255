/* refine.c: after the ranking, the top rows placed and partitioned again
 * by the exact joint DP or its bounds, and polished by swap descent
 * (refine_rows; search_int.h). */
#include <math.h>
#include <string.h>

#include "cluster.h"
#include "exact.h"
#include "model.h"
#include "partition.h"
#include "search_int.h"
#include "trainer.h"

/* refine_rows' share of the work budget: S->cap work units (what the
 * search left of it), S->cells the cells charged so far (as
 * search_evaluate counts them: DP cells, cost_evaluate calls x
 * SEARCH_EVAL_CELLS x layers, layer costs), S->count their units. A step
 * runs only where its expected cells fit in what is left, and is charged
 * the larger of its cells and that estimate: one thread, in rank order,
 * so deterministic. */

/* Whether est more cells fit in refine_rows' share. */
static bool afford(const struct search *S, double est)
{
	return floor((S->cells + est) / SEARCH_UNIT_CELLS) <= (double)S->cap;
}

/* Charges the step that started at the calling thread's partition_cells
 * c0 and cost_evaluations e0, expected at est cells. */
static void charge(struct search *S, double c0, long e0, double est)
{
	double cells = search_cells_since(S, c0, e0);

	S->cells += cells > est ? cells : est;
	S->count = (long)(S->cells / SEARCH_UNIT_CELLS);
}

/* The cells of a row's layer costs (cost_layers), as the search counts
 * them. */
static double layer_cells(const struct search *S)
{
	return (double)S->m->n_layer * S->c->n_group * SEARCH_LAYER_CELLS;
}

/* The cells of one partition_solve of s at least: its caps table, K
 * stages x groups x (layers + 1) (as evaluate.c estimates it). */
static double solve_cells(const struct search *S, const struct strategy *s)
{
	return (double)s->n_stages * S->c->n_group * (S->m->n_layer + 1.0);
}

/* The cells charged per branch of exact_place (O(1) each; its candidates
 * costed are counted as cost_evaluate calls). */
#define REFINE_EXACT_BRANCH_CELLS 1.0

/* Most work (partition_place_work) of one exact joint placement DP, or of
 * its relaxation, in refine_rows. */
#define REFINE_DP_MAX 5e6

/* Most DP states (count vectors x groups x layer ends) of
 * partition_place_below in refine_rows, where the work is above
 * REFINE_DP_MAX: its scratch is about 11 bytes a state. */
#define REFINE_CUT_STATES 5e6

/* The states of the joint DP (partition.c drops the groups without
 * ranks): count vectors x groups with ranks x (layers + 1). */
static double place_states(const int *ranks, int n_group, int n_layer)
{
	double vectors = 1;
	int groups = 0;

	for (int g = 0; g < n_group; g++)
		if (ranks[g]) {
			vectors *= ranks[g] + 1.0;
			groups++;
		}
	return vectors * groups * (n_layer + 1);
}

/* Most work (partition_relaxed_work) of the type relaxation in
 * refine_rows: on 16 groups of four types (PP 16: 3.3e6) it costs more
 * than the bound it adds. */
#define REFINE_RELAX_MAX 1e6

/* Most work of partition_place_seq in refine_rows: it walks every count
 * vector of the real groups (its scratch grows with them). */
#define REFINE_SEQ_MAX 2e7

/* The placement of class sequence seq (cls[g] the class of group g) that
 * gives each class's stages to its groups in the cluster's order, ranks[g]
 * each; group[] gets it. Returns 0, or -1 if seq does not match ranks. */
static int seq_blocks(const struct cluster *c, const int *ranks, const int *cls, const int *seq,
		      int pp, int *group)
{
	int left[MAX_GROUPS];

	memcpy(left, ranks, sizeof left);
	for (int k = 0; k < pp; k++) {
		int g = 0;

		while (g < c->n_group && (!left[g] || cls[g] != seq[k]))
			g++;
		if (g == c->n_group)
			return -1;
		left[g]--;
		group[k] = g;
	}
	return 0;
}

/* Rows with virtual stages or DualPipe that refine_rows gives exact_place,
 * and its most branches for each. */
#define REFINE_EXACT_ROWS  4
#define REFINE_EXACT_NODES 200000

/* Rows with virtual stages or DualPipe that refine_rows climbs
 * (place_climb_chunks) where exact_place did not place them, and the most
 * moves of each climb. */
#define REFINE_CLIMB_ROWS  16
#define REFINE_CLIMB_MOVES 32

/* Most candidates (placements x partitions) of a row given to exact_place:
 * beyond, it seldom finishes within REFINE_EXACT_NODES (AMP's GPT-2 on 16
 * T4s at PP 8 with 2 stages per rank has 3.3e6 and takes 0.1 CPU s). */
#define REFINE_EXACT_SPACE 1e6

/* The placements of ranks[] (a multinomial) times the splits of n layers
 * into K non-empty stages (C(n - 1, K - 1)), what --exhaustive costs. */
static double exact_space(const int *ranks, int n_group, int n, int K)
{
	double x = 1;
	int used = 0;

	for (int k = 1; k < K; k++)
		x = x * (n - K + k) / k;
	for (int g = 0; g < n_group; g++)
		for (int i = 1; i <= ranks[g]; i++)
			x = x * ++used / i;
	return x;
}

/* The pipeline ranks each group hosts under s (ranks[], MAX_GROUPS) and
 * the layer costs the search gave a row of s (into lc; the caller frees
 * them): 1F1B's, or its own under DualPipe(V) with EP (enumerate.c).
 * Returns as cost_layers. */
static int row_layer_costs(const struct search *S, const struct strategy *s, int *ranks,
			   struct layer_costs *lc)
{
	struct strategy one = *s;

	memset(ranks, 0, MAX_GROUPS * sizeof *ranks);
	for (int k = 0; k < s->pp; k++)
		ranks[s->group[k]]++;
	if (!(schedule_fb_overlap(s->schedule) && s->ep > 1)) {
		one.schedule = SCHED_1F1B;
		one.vp = 1;
	}
	return cost_layers(lc, S->m, S->c, &one, ranks, NULL);
}

/* exact_place on row (virtual stages or DualPipe) from its own placement
 * and partition as the incumbent, on the layer costs the search gave it
 * (1F1B's, or its own under DualPipe(V) with EP: enumerate.c); the row takes
 * a faster result. Returns whether exact_place finished (*lb then its
 * optimum), and sets *moved where the row changed; *cut where the work
 * budget left no room for it. */
static bool refine_exact(struct search *S, struct plan_row *row, double *lb, bool *moved, bool *cut)
{
	struct strategy s = row->s, best = row->s;
	struct cost_result r = row->r;
	struct layer_costs lc;
	int ranks[MAX_GROUPS] = { 0 };
	double c0 = partition_cells, est = layer_cells(S) + REFINE_EXACT_NODES * REFINE_EXACT_BRANCH_CELLS;
	long e0 = cost_evaluations;
	bool done;

	for (int k = 0; k < s.pp; k++)
		ranks[s.group[k]]++;
	if (exact_space(ranks, S->c->n_group, s.first[s.n_stages], s.n_stages) > REFINE_EXACT_SPACE)
		return false;
	if (!afford(S, est)) {
		*cut = true;
		return false;
	}
	if (row_layer_costs(S, &s, ranks, &lc))
		return false;
	done = exact_place(&best, &r, &s, ranks, S->m, S->c, &lc, REFINE_EXACT_NODES);
	cost_layers_free(&lc);
	charge(S, c0, e0, est);
	if (r.iter_s < row->r.iter_s) {
		row->s = best;
		row->r = r;
		*moved = true;
	}
	if (done)
		*lb = row->r.iter_s;
	return done;
}

/* place_climb_chunks on row (virtual stages or DualPipe) from its own
 * partition, on the layer costs the search gave it (as refine_exact); the
 * row takes a faster result (*moved). Charged its layer costs and
 * REFINE_CLIMB_MOVES sweeps of its boundaries at most (*cut where they do
 * not fit in what is left). */
static void refine_climb(struct search *S, struct plan_row *row, bool *moved, bool *cut)
{
	struct search T = *S;
	struct strategy s = row->s;
	struct cost_result r = row->r;
	double c0 = partition_cells,
	       est = layer_cells(S) + REFINE_CLIMB_MOVES * 2.0 * (s.n_stages - 1) * SEARCH_EVAL_CELLS *
					      (S->m->n_layer + 2);
	long e0 = cost_evaluations;

	if (!afford(S, est)) {
		*cut = true;
		return;
	}
	if (row_layer_costs(S, &s, T.ranks, &T.lc))
		return;
	place_climb_chunks(&T, &s, &r, REFINE_CLIMB_MOVES);
	cost_layers_free(&T.lc);
	charge(S, c0, e0, est);
	if (r.fits && r.iter_s < row->r.iter_s) {
		row->s = s;
		row->r = r;
		*moved = true;
	}
}

/* The end of a row in refine_rows: where it moved, its price and trainers
 * again (c the cluster of the trainer masks); its gap to the bound lb;
 * *top the least time so far. Returns moved. */
static bool settle(const struct search *S, const struct cluster *c, struct plan_row *row,
		   double lb, bool moved, double *top)
{
	if (moved) {
		row->usd_per_hour = cluster_price_per_hour(c, &row->s);
		row->trainers = trainer_mask(S->m, c, &row->s);
	}
	row->gap_pct = lb < row->r.iter_s * (1 - 1e-9) ? 100 * (row->r.iter_s - lb) / row->r.iter_s : 0;
	if (row->r.iter_s < *top)
		*top = row->r.iter_s;
	return moved;
}

/* Rows of refine_rows that swap descent polishes (those the exact DP
 * does not place), and its most sweeps. */
#define REFINE_DESCENT_ROWS   8
#define REFINE_DESCENT_SWEEPS 4

/* The partition DP (with T->memo's tables, where set) and cost_evaluate
 * of s's placement (T's layer costs); *t the DP's optimum. Returns iter_s,
 * INFINITY if nothing fits. */
static double place_cost(struct search *T, struct strategy *s, struct cost_result *r, double *t)
{
	struct pipeline_frame f;

	cost_frame(&f, T->m, T->c, s, &T->lc);
	if (partition_solve_memo(&T->lc, &f, INFINITY, T->memo, s->first, t))
		return INFINITY;
	cost_evaluate(r, T->m, T->c, s, &T->lc);
	return r->fits ? r->iter_s : INFINITY;
}

/* Caps tables per partition of a swap in descend: its table and about
 * seven passes, as evaluate.c takes a partition of the block orders'
 * climb. */
#define REFINE_TABLES_PER_SWAP 8.0

/* Swap descent from s's placement: swaps two pipeline ranks on different
 * groups where that lowers the iteration time, in a fixed order, at most
 * REFINE_DESCENT_SWEEPS sweeps, each only where its partitions
 * (REFINE_TABLES_PER_SWAP caps tables each) fit in refine_rows' share of
 * the budget (S; else *cut), and within a sweep each swap only while its
 * cells so far fit in it; then place_climb_tail. s and r take the result (r->fits false if
 * s's placement fits nothing and no swap helps). The swaps' partition DPs
 * share one memo (T's layer costs and stage count do not change). */
static void descend(struct search *S, struct search *T, struct strategy *s, struct cost_result *r,
		    bool *cut)
{
	double c0 = partition_cells, t, cur, best_t, sweep_cells = 0;
	long e0 = cost_evaluations;
	bool moved = true, over = false, made = place_memo_begin(T, s);

	cur = place_cost(T, s, r, &t);
	best_t = t;

	charge(S, c0, e0, solve_cells(S, s));
	for (int x = 0; x < s->pp; x++)
		for (int y = x + 1; y < s->pp; y++)
			sweep_cells += s->group[x] != s->group[y];
	sweep_cells *= solve_cells(S, s) * REFINE_TABLES_PER_SWAP;
	for (int sweep = 0; sweep < REFINE_DESCENT_SWEEPS && moved; sweep++) {
		if (!afford(S, sweep_cells)) {
			*cut = true;
			break;
		}
		c0 = partition_cells;
		e0 = cost_evaluations;
		moved = false;
		for (int x = 0; x < s->pp && !over; x++)
			for (int y = x + 1; y < s->pp && !over; y++) {
				struct strategy w = *s;
				struct cost_result wr;
				double wt, v;

				if (w.group[x] == w.group[y])
					continue;
				/* past what is left (the sweep took more than
				 * its estimate): it ends here */
				if ((over = !afford(S, search_cells_since(S, c0, e0)))) {
					*cut = true;
					moved = false;
					break;
				}
				w.group[x] = s->group[y];
				w.group[y] = s->group[x];
				v = place_cost(T, &w, &wr, &wt);
				if (v < cur * (1 - 1e-12)) {
					*s = w;
					*r = wr;
					cur = v;
					best_t = wt;
					moved = true;
				}
			}
		charge(S, c0, e0, sweep_cells);
	}
	place_memo_end(T, made);
	c0 = partition_cells;
	e0 = cost_evaluations;
	if (cur < INFINITY)
		place_climb_tail(T, s, r, best_t);
	charge(S, c0, e0, 0);
}

/* The cells of one pass of the joint placement DP over ranks[] (the groups
 * with ranks only: count vectors x groups x groups x (layers + 1), its
 * rows x groups x (layers + 1) in partition.c) and its caps table (K
 * stages x groups x (layers + 1)). */
static double place_cells(const int *ranks, int n_group, int n_layer, int K)
{
	int hosts = 0;

	for (int g = 0; g < n_group; g++)
		hosts += ranks[g] > 0;
	return place_states(ranks, n_group, n_layer) * hosts + (double)K * hosts * (n_layer + 1);
}

/* After the search, on the ranked rows: each row without virtual stages
 * (and not DualPipe) placed by the candidate placements, with a gap > 0,
 * that could beat the top row (iter_s (1 - gap) below the top's iter_s) is
 * placed and partitioned again by the exact joint DP (partition_place)
 * where its work is at most REFINE_DP_MAX, its gap then the DP's (0 but
 * for a later rank's tail); up to REFINE_CUT_STATES states by the same DP
 * seeking only what beats the top row (partition_place_below), which
 * either finds the row's optimum or proves the top's time a bound of it;
 * else, where its work is at most REFINE_RELAX_MAX, its bound is raised
 * to the relaxation in which the groups of one GPU type merge
 * (partition_place_relaxed), whose placement by type partition_place_seq
 * (or seq_blocks) also tries; and the first REFINE_DESCENT_ROWS rows not
 * placed exactly are polished by swap descent. Such rows with virtual
 * stages or DualPipe: the first REFINE_EXACT_ROWS go to exact_place
 * (refine_exact), and the first REFINE_CLIMB_ROWS that it does not place
 * climb their chunk boundaries (refine_climb). A row takes a placement
 * only where it is faster. Each step runs only where its expected cells
 * fit in what is left of S->cap work units (afford; the caller sets S->cap
 * to what the search left of the budget and S->cells, S->count to 0) and
 * is charged at least them (charge): S->count the units spent, P->refine_cut
 * the rows a step of which did not fit. Runs once, in rank order, on one
 * thread: deterministic. c is the cluster of the trainer masks.
 * Returns whether a row changed. */
bool refine_rows(struct search *S, const struct cluster *c)
{
	struct plan *P = S->p;
	struct plan_row first;
	double top;
	bool changed = false;
	int descents = 0, exacts = 0, climbs = 0;

	if (!P->n_row || !plan_row_fits(P, 0) || S->fixed || S->o->exhaustive)
		return false;
	top = plan_row_get(P, 0, &first)->r.iter_s;
	for (int i = 0; i < P->n_row && plan_row_fits(P, i); i++) {
		struct plan_row buf, *row;
		struct strategy s, one;
		struct search T = *S;
		struct pipeline_frame f;
		struct cost_result r;
		int group[MAX_STAGES], cls[MAX_GROUPS], seq[MAX_STAGES];
		double t = INFINITY, lb, rlb, work, est, c0 = partition_cells;
		long e0 = cost_evaluations;
		bool exact = false, moved = false, cut = false;

		if (!(plan_row_gap(P, i) > 0)) /* without expanding it */
			continue;
		row = plan_row_get(P, i, &buf);
		s = one = row->s;
		lb = row->r.iter_s * (1 - row->gap_pct / 100);
		if (!(lb < top * (1 - 1e-12)))
			continue;
		if (s.vp != 1 || schedule_bidirectional(s.schedule)) {
			bool done = exacts < REFINE_EXACT_ROWS && refine_exact(S, row, &lb, &moved, &cut);

			exacts++;
			if (!done && climbs < REFINE_CLIMB_ROWS) {
				climbs++;
				refine_climb(S, row, &moved, &cut);
			}
			P->refine_cut += cut;
			changed |= settle(S, c, row, lb, moved, &top);
			plan_row_set(P, i, row);
			continue;
		}
		if (!afford(S, layer_cells(S) + solve_cells(S, &s))) {
			/* not even its layer costs and one partition */
			P->refine_cut++;
			continue;
		}
		memset(T.ranks, 0, sizeof T.ranks);
		for (int k = 0; k < s.pp; k++)
			T.ranks[s.group[k]]++;
		/* the layer costs of the search: 1F1B's (each_schedule) */
		one.schedule = SCHED_1F1B;
		if (cost_layers(&T.lc, S->m, S->c, &one, T.ranks, NULL))
			continue;
		charge(S, c0, e0, layer_cells(S));
		c0 = partition_cells;
		e0 = cost_evaluations;
		cost_frame(&f, S->m, S->c, &s, &T.lc);
		for (int g = 0; g < S->c->n_group; g++)
			cls[g] = S->c->group[g].gpu;
		work = partition_place_work(T.ranks, S->c->n_group, T.lc.n_layer, s.pp);
		est = place_cells(T.ranks, S->c->n_group, T.lc.n_layer, s.pp);
		if (work <= REFINE_DP_MAX || place_states(T.ranks, S->c->n_group, T.lc.n_layer) <= REFINE_CUT_STATES) {
			if (!afford(S, est)) {
				cut = true;
			} else if (work <= REFINE_DP_MAX) {
				if (!partition_place(&T.lc, &f, T.ranks, group, s.first, &t)) {
					exact = true;
					lb = t;
				}
			} else {
				/* exact below the top: where nothing is, the
				 * top's time bounds the row */
				exact = true;
				if (!partition_place_below(&T.lc, &f, T.ranks, top, group, s.first, &t))
					lb = t;
				else if (top > lb)
					lb = top;
			}
		} else if (partition_relaxed_work(&T.lc, &f, T.ranks, cls) <= REFINE_RELAX_MAX) {
			/* the relaxation, then its placement by type or its
			 * blocks partitioned */
			est = partition_relaxed_work(&T.lc, &f, T.ranks, cls) + solve_cells(S, &s) +
			      (work > REFINE_SEQ_MAX ? 0 : work);
			if (!afford(S, est)) {
				cut = true;
			} else if (!partition_place_relaxed(&T.lc, &f, T.ranks, cls, &rlb, seq)) {
				if (rlb > lb)
					lb = rlb;
				if (work > REFINE_SEQ_MAX ||
				    partition_place_seq(&T.lc, &f, T.ranks, cls, seq, group, s.first, &t)) {
					t = INFINITY;
					if (!seq_blocks(S->c, T.ranks, cls, seq, s.pp, group)) {
						for (int k = 0; k < s.pp; k++)
							s.group[k] = (unsigned char)group[k];
						place_cost(&T, &s, &r, &t);
					}
				}
			}
		} else {
			est = 0;
		}
		if (t < INFINITY) {
			for (int k = 0; k < s.pp; k++)
				s.group[k] = (unsigned char)group[k];
			cost_evaluate(&r, S->m, S->c, &s, &T.lc);
			place_climb_tail(&T, &s, &r, t);
			if (r.fits && r.iter_s < row->r.iter_s) {
				row->s = s;
				row->r = r;
				moved = true;
			}
		}
		charge(S, c0, e0, cut ? 0 : est);
		if (!exact && descents++ < REFINE_DESCENT_ROWS) {
			s = row->s;
			if (afford(S, solve_cells(S, &s))) {
				descend(S, &T, &s, &r, &cut);
				if (r.fits && r.iter_s < row->r.iter_s) {
					row->s = s;
					row->r = r;
					moved = true;
				}
			} else {
				cut = true;
			}
		}
		cost_layers_free(&T.lc);
		P->refine_cut += cut;
		changed |= settle(S, c, row, lb, moved, &top);
		plan_row_set(P, i, row);
	}
	return changed;
}
