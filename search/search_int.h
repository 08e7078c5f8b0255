/* search_int.h (internal): the state and the steps that the search's files
 * share: plan.c (entry point, ranking), plan_opts.c (option checks),
 * enumerate.c (the choices), pool.c (threads, work budget), place.c
 * (placers), evaluate.c (one strategy's row), refine.c (the top, again).
 * Not for use outside search/; the public API is plan.h. */
#ifndef AMPPLAN_SEARCH_INT_H
#define AMPPLAN_SEARCH_INT_H

#include <stdbool.h>

#include "cost.h"
#include "plan.h"
#include "strategy.h"

struct cluster;
struct err;
struct model;
struct partition_memo;
struct pool;

/* Whether a trainer can launch a placement as placed: its per-stage
 * precision is one a trainer sets (FP8 off, or BF16 only on blocks at the
 * model's start and end: cluster_bf16_blocks) and its node groups have the
 * nodes its runs of ranks take (trainer_nodes_fit). */
bool placement_settable(const struct cluster *c, const struct strategy *s);

/* Whether placement s with result r beats the best so far (best, rb; rb
 * not fitting: none yet): it fits and is faster, or, within 1e-12 of the
 * same time, its precision is settable where the best's is not (so that
 * the search and --exhaustive keep the same one of two placements that
 * cost the same). */
bool placement_better(const struct cluster *c, const struct strategy *s,
		      const struct cost_result *r, const struct strategy *best,
		      const struct cost_result *rb);

/* The planning-only kinds of search_plan_kind: vocabulary parallelism,
 * SlimPipe's 2 to 2^(SEARCH_PLAN_KINDS - 3) slices, uneven batches. */
#define SEARCH_PLAN_KINDS 8

/* The search state shared by the enumeration loops: one per search thread
 * (pool.c copies the caller's), each with its own rows. */
struct search {
	struct model *m;
	const struct cluster *c;
	const struct plan_opts *o;
	struct plan *p;
	int cap_rows;
	int ranks[MAX_GROUPS]; /* pipeline ranks each group hosts */
	struct layer_costs lc;
	/* placement and partition of the strategy just costed without
	 * virtual stages (place.c placer_as_1f1b, try_v1_split) */
	unsigned char v1_group[MAX_STAGES];
	unsigned short v1_first[MAX_STAGES + 1];
	bool have_v1;
	bool exact;			     /* place_strategy's result is the
					   optimum over every placement and
					   partition (or none fits) */
	double dp_value;		     /* the last partition DP's optimum (vp 1):
					   pipeline time + rank 0's tail, a lower
					   bound on cost_evaluate's over the
					   partitions (placements) it searched */
	unsigned char ilp_group[MAX_STAGES]; /* the ILP's placement for this
					   (TP, CP, PP, DP), from its first
					   strategy */
	int ilp_state;			     /* 0 not solved, 1 placed, -1 none */
	bool climbed;			     /* climb_order holds the climbed block
					   order of this (TP, CP, PP, DP) */
	int climb_order[MAX_GROUPS];
	bool fp8_ok;			       /* the search may try FP8 */
	/* Planning-only variants (vocabulary parallelism, SlimPipe slices,
	 * uneven batches) against the tuple's launchable plans: the fastest
	 * placement found so far in this tuple that a trainer launches, and
	 * the fastest row of each planning-only kind (search_plan_kind), in
	 * seconds (INFINITY: none); bound_plan: the strategy being costed is
	 * a planning-only variant that may be dropped where no placement can
	 * beat both (place_strategy). */
	double launch_best;
	double plan_best[SEARCH_PLAN_KINDS];
	bool bound_plan;
	/* The partition DP's tables of the placements being tried
	 * (place_memo_begin; NULL: none). */
	struct partition_memo *memo;
	bool fixed;			       /* the partition is o->layout's, */
	unsigned short layout[MAX_STAGES + 1]; /* parsed (plan_layout_parse) */
	/* The work budget (plan_opts.work_budget), per (TP, CP, PP, DP), in
	 * work units (SEARCH_UNIT_CELLS): */
	struct pool *pool;
	int tuple;    /* index of the tuple being searched */
	long count;   /* work units it has done: its strategies
				   costed + cells / SEARCH_UNIT_CELLS; one
				   more than at the start of the strategy
				   being costed */
	double cells; /* its cells: partition DP cells
				   (partition_cells), cost_evaluate calls
				   (the exhaustive search's too) x
				   SEARCH_EVAL_CELLS x layers, and layers x
				   groups x SEARCH_LAYER_CELLS per strategy (the
				   layer costs) */
	long *start;  /* [n_start]: count at the start of each
				   strategy it costed (malloc'd; pool.c
				   takes it) */
	long n_start, cap_start;
	bool dry;	     /* estimating --exhaustive's work: costs
				   nothing, adds each strategy's
				   candidates to cells (pool.c) */
	long cap;	     /* it stops at count >= cap */
	long reported;	     /* count already in pool->evals */
	bool stop;	     /* count reached cap */
	/* The strategy being costed (search_evaluate; search_over): whether
	 * one is, the tuple's cells before it, partition_cells and
	 * cost_evaluations at its start; cut: its work ran past cap, so its
	 * placers stopped and its rows are dropped. */
	bool in_strategy, cut;
	double cells0, partition0;
	long evals0;
	long ilp_at;	     /* count when its ILP ran, or -1 */
	long err_at;	     /* count when it failed */
	int ilp_kind;	     /* 0 optimal, 1 stopped, 2 failed */
	struct row_tag *tag; /* [cap_rows]: tuple and count of each
					   row */
};

/* Where a row came from: its tuple and the work units that tuple had done
 * before its strategy (kept if below the tuple's share of the budget). */
struct row_tag {
	int tuple;
	long at;
};

/* Cells per work unit beyond the one unit of each strategy costed: a
 * strategy of Llama-3-70B (82 layers) on 8 groups costs 1 or 2 units, one
 * of 10^4 layers on 16 groups hundreds (README "Limits and errors"). */
#define SEARCH_UNIT_CELLS 16384.0

/* Cells per layer of one cost_evaluate call (its stage sums, memory and
 * collectives per layer), and per layer and group of a strategy's layer
 * costs (cost_layers: each layer's time and rank 0's DP tail for each end,
 * about 30 ns), against the partition DP's cells (about 1 ns: a unit is
 * about 16 us, as is a strategy's own overhead). */
#define SEARCH_EVAL_CELLS  8.0
#define SEARCH_LAYER_CELLS 32.0

/* The most candidates (placements x partitions, summed over the
 * strategies) --exhaustive takes on: 6.5 to 8.6 us each measured, so at
 * most about 50 s (README "Limits and errors"). */
#define SEARCH_EXHAUSTIVE_MAX 6e6

/* One (TP, CP, PP, DP) of the search: the unit of work of a thread. */
struct degree {
	int tp, cp, pp, dp;
};

/* plan_opts.c */

/* Options that contradict the cluster or model are usage errors: returns
 * 0, or -1 with e naming the option and the fault (the first found). o has
 * its seq and gbs set (the model's where not given). */
int plan_opts_check(const struct model *m, const struct cluster *c,
		    const struct plan_opts *o, struct err *e);

/* enumerate.c */

/* Whether TP degree tp splits the model: it must divide the heads, the KV
 * heads (or be a multiple of them) and the FFN size (Megatron-LM
 * arguments.py; TRAINERS.md); the expert FFN only needs to divide by
 * expert TP. */
bool search_tp_fits(const struct model *m, int tp);

/* Fills S->ranks for pipeline ranks of gpus_per_stage GPUs: whole ranks on
 * each real group, and one on each mixed group made for that size whose
 * parts are whole TP x CP groups (tpcp GPUs; cluster_mix); false if these
 * do not use every GPU (README "Heterogeneous clusters"). */
bool search_split_groups(struct search *S, int tpcp, int gpus_per_stage);

/* Every (TP, CP, PP, DP) the cluster and options allow, in the search's
 * fixed order, into a malloc'd array (caller frees) of *n. s holds the
 * global batch and the sequence length. */
struct degree *search_degrees(struct search *S, const struct strategy *s, int *n);

/* Searches every strategy of s's (TP, CP, PP, DP) (S->ranks split for it):
 * expert TP and EP, ZeRO, FP8, recomputation, micro-batch, CP flavour,
 * vocabulary parallelism and slices, uneven batches, schedule and virtual
 * stages, each costed by search_evaluate, until S->stop. Sets *rc to -1 and
 * fills e where the layer costs fail (S->err_at the count then). */
void search_tuple(struct search *S, struct strategy *s, struct err *e, int *rc);

/* The planning-only kind of s (SEARCH_PLAN_KINDS): 0 vocabulary
 * parallelism, log2 of SlimPipe's slices (2 and more), the last uneven
 * batches; -1 where a trainer may launch s. */
int search_plan_kind(const struct strategy *s);

/* pool.c */

/* Runs the search of every (TP, CP, PP, DP) on the threads (plan_opts.
 * threads) within the work budget and merges their rows into S->p, in the
 * tuples' order, with the counts; the result does not depend on the
 * threads. s holds the choices fixed for every strategy. Returns 0, or -1
 * with e set by the first tuple that failed within its share. */
int pool_run(struct search *S, const struct strategy *s, struct err *e);

/* Called every 16 strategies costed and after every 64 work units: lowers
 * this tuple's cap to what the prefix known now leaves it, and reports
 * progress. */
void pool_refresh(struct search *S);

/* Whether this tuple has spent its share of the work budget: called just
 * before each strategy is costed (so that a tuple stops only where it had
 * more to cost), it stops the search of the tuple (S->stop). */
bool pool_spent(struct search *S);

/* place.c */

/* Places s on the node groups by the placers of place.c in their order,
 * each placement partitioned (or given the fixed layout) and costed; keeps
 * the fastest that fits in *best and *r (r->fits false where none does;
 * *best untouched then). small: the joint placement DP's work is within
 * plan_opts.place_dp_max. s's groups and layer split are left as the last
 * placer tried left them. A planning-only variant (S->bound_plan) that
 * cannot beat the tuple's launchable plans is dropped unplaced (r->fits
 * false; place.c says when); S->launch_best and S->plan_best take the
 * result. */
void place_strategy(struct search *S, struct strategy *s, bool small,
		    struct strategy *best, struct cost_result *r);

/* Places s's ranks in contiguous blocks of the groups that host ranks
 * (S->ranks), in the cluster's order. */
void place_cluster_order(const struct search *S, struct strategy *s);

/* Megatron's default split of s's layers (n_layer of them) over its
 * s->n_stages virtual stages into s->first (place.c says how). */
void place_default_split(struct strategy *s, int n_layer);

/* Moves a layer at a time away from the rank whose tail ends last where
 * the partition DP's optimum t is below the evaluated r (vp 1); s and r
 * take the result (place.c says how). */
void place_climb_tail(struct search *S, struct strategy *s, struct cost_result *r, double t);

/* Gives S a partition DP memo (S->memo) for the placements of s about to
 * be tried, S's layer costs and s's stage count fixed meanwhile; returns
 * whether it made one (none where S has one or a fixed layout). The caller
 * frees it by place_memo_end with that result, which sets S->memo NULL. */
bool place_memo_begin(struct search *S, const struct strategy *s);
void place_memo_end(struct search *S, bool made);

/* With virtual stages or DualPipe: moves a layer at a time across the
 * chunk boundary that helps most, at most max_moves times; s and r take
 * the result (place.c says how). */
void place_climb_chunks(struct search *S, struct strategy *s, struct cost_result *r,
			int max_moves);

/* Frees the calling thread's GLPK environment under the lock that the ILP
 * placement holds (ilp_free_env). */
void place_free_glpk(void);

/* evaluate.c */

/* Places, partitions and costs one strategy (s fully chosen but its groups
 * and layer split), and records its row in S->p (tagged with the tuple and
 * count) where it fits, or with the reason where it does not and the
 * options keep such rows. Counts it against the tuple's budget. Returns
 * whether it fits (a strategy that fits but that the chosen trainer cannot
 * run counts as fitting, unranked). */
bool search_evaluate(struct search *S, struct strategy *s);

/* The cells done on the calling thread since partition_cells was c0 and
 * cost_evaluations e0: the partition DP cells and each cost evaluation as
 * SEARCH_EVAL_CELLS x (layers + 2) (struct search cells). */
double search_cells_since(const struct search *S, double c0, long e0);

/* A lower bound (seconds) of s's iteration time over every placement of
 * ranks[g] pipeline ranks on each group g and every partition, with layer
 * costs lc: partition_place_bound under the schedule's weights (over the
 * ranks' totals with virtual stages) plus every stage's vocabulary share
 * at its least; INFINITY where the relaxation holds no partition (then
 * none fits). */
double search_lower_bound(const struct model *m, const struct cluster *c, const struct strategy *s,
			  const struct layer_costs *lc, const int *ranks);

/* Whether the strategy being costed has done more work than the tuple's
 * cap leaves (its count, with the work done so far, past S->cap); then
 * S->cut is set and its placers stop (try_placement and place_climb_tail
 * do nothing more). False outside search_evaluate (the refinement). */
bool search_over(struct search *S);

/* refine.c */

/* After the ranking (throughput), places and partitions the top rows again
 * by the exact joint DP or its bounds and swap descent, in rank order on
 * one thread; c is the cluster of the trainer masks. Returns whether a row
 * changed (the caller ranks again). */
bool refine_rows(struct search *S, const struct cluster *c);

#endif
