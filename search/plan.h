/* plan.h: the search over parallel strategies: enumerates TP, CP, PP, DP,
 * EP, micro-batch size, schedule, virtual stages, recomputation and ZeRO,
 * places pipeline ranks on node groups (ILP), partitions layers (DP), costs
 * each strategy and ranks those that fit by predicted tokens/s. */
#ifndef AMPPLAN_PLAN_H
#define AMPPLAN_PLAN_H

#include <stdbool.h>

#include "cost.h"
#include "strategy.h"
#include "trainer.h"

struct model;
struct cluster;
struct err;

/* What the ranking puts first: the most tokens/s (the default), or the
 * fewest US dollars per million tokens at the node groups' prices
 * (price_per_gpu_hour; every group needs one). With PLAN_COST a cluster of
 * several node groups is also searched on each subset of its groups (at
 * most PLAN_COST_MAX_GROUPS groups), since leaving a group idle can cost
 * less per token (with every GPU in use, the cost per token is the
 * iteration time times a constant, and ranks as the throughput does). With
 * PLAN_THROUGHPUT it is also searched without the groups of its slowest
 * GPU types (plan_search), since slow GPUs can hold a pipeline back, or
 * keep the fast ones from FP8. */
enum plan_objective { PLAN_THROUGHPUT,
		      PLAN_COST };
#define PLAN_COST_MAX_GROUPS 4

/* SlimPipe's slices as the search tries them (plan_opts.slices = 0):
 * powers of two up to 32, each slice at least 8,192 tokens of the
 * sequence, a long-context technique (SlimPipe, Li et al. 2025, slices
 * sequences of 64K tokens and more); a bound of the search's time, not a
 * rule of the cost model. */
#define PLAN_MAX_SLICES	      32
#define PLAN_MIN_SLICE_TOKENS 8192

/* The work budget when plan_opts.work_budget is 0 and the search is not
 * exhaustive, in work units (plan_opts.work_budget): chosen so that no
 * search within the README's limits runs past 60 s (README "Limits and
 * errors"). */
#define PLAN_WORK_BUDGET 1500000L

/* Search options. plan_opts_init fills the defaults: 0 (or -1 for the enums,
 * zero and the on/off switches) means "search this dimension". */
struct plan_opts {
	int tp, cp, pp, dp, mbs, vp;
	int ep;	       /* expert-parallel degree; 0: searched (the
				   divisors of tp / etp x dp x cp that
				   divide the experts; 1 for a dense
				   model) */
	int etp;       /* expert tensor-parallel degree; 0: searched
				   (MoE: the divisors of tp that divide the
				   expert FFN) */
	int schedule;  /* enum schedule, or -1 */
	int recompute; /* enum recompute, or -1 */
	int zero;      /* 0..3, or -1 */
	int gbs, seq;  /* 0: the model's defaults */
	int trainer;   /* enum trainer: rank only what it runs; -1 any */
	/* Kernels and precision, set on every strategy. */
	int attn;	       /* enum attention (default ATTN_FLASH) */
	int cp_comm;	       /* enum cp_comm: fix the CP flavour; -1 the
				   search picks it per strategy */
	int vocab_par;	       /* vocabulary parallelism (strategy.vocab_par):
				   1 on, 0 off, -1 (default) both tried
				   where pp > 1 under 1F1B (what-if: off) */
	int slices;	       /* SlimPipe slices per micro-batch
				   (strategy.slices): 1 none, n > 1 fixed,
				   0 (default) none and each power of two
				   from 2 to PLAN_MAX_SLICES with slices of
				   at least PLAN_MIN_SLICE_TOKENS tokens,
				   where pp > 1 under 1F1B (what-if: 1) */
	int uneven;	       /* uneven per-replica micro-batches
				   (strategy.uneven): 1 only those, 0 off,
				   -1 (default) both, under 1F1B where the
				   strategy's mixed rank has GPU types of
				   different speed (cost_uneven; what-if:
				   off) */
	bool unfused_norm;     /* norms as separate kernels (default fused) */
	int moe_balance;       /* enum moe_balance (default micro-batch) */
	double moe_capacity;   /* MoE capacity factor; 0: dropless */
	int grad_bytes;	       /* 4 or 2; 0: 2 with the DeepSpeed trainer
				   (ZeRO keeps the training dtype), else 4
				   (Megatron's fp32 main gradients) */
	int recompute_modules; /* strategy.recompute_modules of the selective
				   strategies; 0: core_attn */
	int offload_modules;   /* strategy.offload_modules of every strategy
				   (needs recompute none or selective); 0:
				   none */
	int moe_dispatcher;    /* MoE: enum moe_dispatcher (default alltoall) */
	int moe_pad;	       /* MoE: strategy.moe_pad, 1 on, 0 or -1 off */
	int grouped_gemm;      /* MoE: strategy.grouped_gemm, 1 on, 0 or -1 off
				   (the search does not try it) */
	int ep_overlap;	       /* MoE: strategy.ep_overlap, 1 on, 0 or -1 off
				   (the search does not try it) */
	int moment_bytes;      /* bytes per Adam moment (strategy.moment_bytes):
				   4 or 2; 0: 4 (fp32) */
	int defer_wgrad;       /* the LM head's weight gradients deferred to
				   the pipeline flush: 1 on, 0 or -1 off (the
				   search does not try it) */
	int wgrad_limit;       /* with defer_wgrad: the micro-batches
				   deferred at most; 0: all
				   (strategy.wgrad_defer) */
	/* Switches: 1 on, 0 off (set on every strategy as given; the cost
	 * model ignores an overlap with nothing to hide, such as TP overlap
	 * at tp 1), -1 the search's choice (the caller pins the what-if
	 * mode's defaults). fp8: off and on where every GPU type has FP8 and
	 * the trainer sets it, else off. sp: on where tp > 1 (1: the same, 0:
	 * never). The overlaps: on where the strategy and the trainer allow
	 * them (trainer_allows). grad_acc_fusion: where the trainer fuses
	 * gradient accumulation into the weight-gradient GEMMs. p2p_split
	 * (strategy.p2p_split): DeepSpeed's rows. */
	int fp8, sp, tp_overlap, grad_overlap, param_overlap, grad_acc_fusion, p2p_split;
	/* The unset switches take the trainer's bare CLI defaults
	 * (trainer_features) rather than the search's choice. */
	bool trainer_defaults;
	/* A fixed layer partition in Megatron's layout notation, e.g.
	 * "E+2|3|3|3|3|3|3|4+L" (plan_layout_parse), for the what-if mode;
	 * NULL: the search partitions. Not owned. */
	const char *layout;
	double ilp_time_limit_s; /* per ILP placement, wall-clock; 0
				   (default): none. A time limit makes the
				   result depend on the machine and its load */
	long ilp_node_limit;	 /* branch-and-bound nodes per ILP placement
				   (GLPK's count: deterministic); default
				   ILP_NODE_LIMIT (ilp.h); 0: no limit */
	long work_budget;	 /* most work units of the search (each
				   strategy costed 1, plus 1 per 16384 cells
				   of its partition DPs, exhaustive
				   candidates x layers and layers x groups);
				   0: the default, PLAN_WORK_BUDGET (no limit with
				   exhaustive). Deterministic: the
				   (TP, CP, PP, DP) tuples in the search's
				   fixed order take their strategies from it
				   until it is spent (the last one in part),
				   whatever the threads, and so do the
				   node-group subsets (plan_search), in
				   their order; plan.truncated then says so */
	double place_dp_max;	 /* most work per pass of the joint placement DP
				   (partition_place_work); beyond it the
				   candidate placements of place.c */
	bool keep_infeasible;	 /* keep rows that do not fit, with a reason */
	int objective;		 /* enum plan_objective (default
				   PLAN_THROUGHPUT) */
	int threads;		 /* search threads; 0: one per online CPU */
	bool exhaustive;	 /* reference search: every placement and
				   partition (small cases only) */
	/* Called with the fraction of the search done, from 0 to 1 (1 once
	 * more at the end), from the search threads one at a time: after
	 * each (TP, CP, PP, DP) and every 16 strategies costed, so that a
	 * caller can show a line every few seconds even while one tuple runs
	 * long. The fraction is the larger of the tuples done and (with a
	 * work budget) the budget spent; it never decreases. May be NULL. */
	void (*progress)(double done, void *arg);
	void *progress_arg;
};

/* Fills o with the defaults (STYLE.md 4; GLPK's glp_init_iocp): every
 * degree, the micro-batch, the schedule, recomputation, ZeRO, the CP
 * flavour, FP8, the overlaps and the planning options searched (0 or -1),
 * any trainer, flash attention, the ILP's node limit ILP_NODE_LIMIT and
 * the joint placement DP's default budget; no work budget, threads 0 (one
 * per core). */
void plan_opts_init(struct plan_opts *o);

/* Completes o as the CLI does before a search: vp > 1 without a schedule
 * is the interleaved schedule; in the what-if mode the unset choices of
 * the strategy take Megatron-LM's defaults (1F1B, vp 2 when interleaved,
 * no recomputation, no distributed optimizer, no FP8, none of the
 * planning-only options), the overlaps, sequence parallelism and gradient
 * accumulation fusion stay as the search sets them (trainer_features; with
 * o->trainer_defaults, the trainer's bare CLI defaults), and a strategy
 * that does not fit is kept, so that its numbers can be printed. */
void plan_opts_complete(struct plan_opts *o);

/* True when tp, pp, dp, cp and mbs are all fixed (the what-if mode). */
bool plan_opts_what_if(const struct plan_opts *o);

/* Parses a layer partition in Megatron's layout notation as the table's
 * layers/stage column prints it: virtual stages separated by '|', each
 * "E+" (the embedding; first stage only), a count of transformer blocks,
 * "+L" (final norm + head; last stage only), e.g. "E|2|3|3+L" or
 * "E+4|4+L"; with vp > 1 the pp * vp virtual stages in Megatron's
 * interleaved order (virtual stage k on pipeline rank k % pp). Checks that
 * there are n_stages stages, none empty, holding the m->layers blocks,
 * embedding first and head last. Returns 0 with first[0..n_stages] (layer
 * indices of m->layer[]), or -1 with e naming --layout and the fault. */
int plan_layout_parse(const char *layout, const struct model *m, int n_stages,
		      unsigned short *first, struct err *e);

/* One evaluated strategy, as plan_row_get hands it out. why is "" for a
 * strategy that fits, else the reason it was dropped; its result then
 * holds the numbers of the fixed layout (plan_opts.layout) or of
 * Megatron's default split (blocks spread evenly over the stages,
 * embedding first, head last) on the block placement in the cluster's
 * group order. */
struct plan_row {
	struct strategy s;
	struct cost_result r;
	char why[192];
	/* For a row that fits, how far the search may be from the best
	 * placement and partition of this strategy, in percent of its
	 * iteration time: 100 (iter_s - L) / iter_s for a lower bound L of
	 * every placement and partition (partition_place_bound). 0 where the
	 * search is exact (without virtual stages: one node group, or the
	 * joint placement DP; --exhaustive). */
	double gap_pct;
	double usd_per_hour;		      /* the price of the GPUs it uses
				   (cluster_price_per_hour); 0: a group it
				   uses has no price */
	unsigned trainers;		      /* bit 1u << t per enum trainer t that runs
				   it in its iteration time (trainer_times;
				   a row that does not fit: trainer_mask);
				   0: planning only */
	double trainer_s[TRAINER_COUNT];      /* per enum trainer: seconds
				   per iteration as that trainer runs it (its
				   features: trainer_features); 0 where it
				   cannot (its rules, or memory) */
	unsigned trainer_feat[TRAINER_COUNT]; /* per trainer: the features
				   it runs the row with (trainer_feature_bits) */
};

/* A row as the ranking keeps it (plan.c): its cost_result, gap, price and
 * trainer times, then the strategy's nonzero scalar bytes, its stages'
 * first layers and node groups, and the reason only where there is one
 * (about 430 bytes a row for Qwen3-30B-A3B on Selene, where a struct
 * plan_row takes 1,464). */
struct plan_rec;
/* Where a plan's records live: chunks of 1 MiB (plan.c). */
struct plan_arena;

/* The ranking: rows[0..n_feasible) fit, best first: the rows some trainer
 * runs before the planning-only ones (a ZB-H1 row no trainer launches does
 * not come first), each by tokens/s descending, or USD per million tokens
 * ascending with PLAN_COST;
 * rows[n_feasible..n_row) do not fit (only with keep_infeasible). Read a
 * row with plan_row_get. */
struct plan {
	struct plan_rec **row;	  /* [n_row]: records in arena */
	struct plan_arena *arena; /* owned: the records' room */
	int n_row, n_feasible;
	long evaluated;		       /* strategies costed */
	long work;		       /* work units done (strategies costed plus
					   partition DP cells / 16384; README
					   "Limits and errors"), the refinement's
					   after the search included */
	long budget;		       /* where the work budget ended the search
					   (truncated): the budget, the default
					   (work_budget 0) or the option's */
	long ilp_optimal, ilp_stopped; /* ILP placements: proven optimal,
					   incumbent at the time limit */
	long ilp_failed;	       /* ILP found none: block placements only */
	double search_s;	       /* wall seconds of the search */
	bool truncated;		       /* the work budget ended the search: the
				   ranking holds what was found until then */
	int refine_cut;		       /* rows the refinement after the search
				   (refine.c) could not refine in full, as
				   the work budget had no room left */
	int degrees;		       /* (TP, CP, PP, DP) tuples to search */
	int degrees_searched;	       /* of them searched in full, in the search's
				   order (degrees unless truncated) */
	int subsets;		       /* node-group subsets searched, the whole
				   cluster included: with PLAN_COST on n > 1
				   groups the 2^n - 1; with PLAN_THROUGHPUT
				   those of plan_search that a bound did not
				   rule out; 0: the whole cluster only */
	int subsets_pruned;	       /* PLAN_THROUGHPUT: subsets not searched,
				   as their iteration time cannot beat the
				   best plan found (plan_search) */
	struct cluster *cluster;       /* owned: the cluster searched, the
				   caller's with its mixed node groups
				   (cluster_mix) appended; the rows' group
				   numbers index it (the real groups keep
				   theirs). Cost, print and emit rows with
				   it */
};

/* Runs the search on c with the mixed node groups of cluster_mix, which
 * host a stage's DP replicas on several groups where the whole ranks on
 * single groups leave GPUs over (plan.cluster). m's sequence length is set
 * to o->seq first when given.
 * Outside the what-if mode, on several node groups, it also runs on
 * subsets of the groups (cluster_subset, no mixed groups) and ranks the
 * rows of all together; the counts (evaluated, degrees, ILP placements)
 * are then the sums. PLAN_COST: each subset. PLAN_THROUGHPUT: the whole
 * cluster first, then, the largest first, each subset that leaves idle
 * every group of the slowest GPU types (their GEMM rate, peak x eff_max,
 * in FP8 where they have it and the trainer runs it: the groups of the
 * fastest type, of the two fastest, ...; on clusters of at most
 * PLAN_COST_MAX_GROUPS GPU types); a subset is skipped where a lower
 * bound of its iteration (its GPUs' shares of the GEMMs and flash
 * attention at their full speed; none with measured profiles) is at least
 * the best iteration found so far that a trainer runs, and counted in
 * subsets_pruned.
 * Returns 0 and *out (caller frees with plan_free), or -1 with e set when an
 * option contradicts the model or cluster. An empty ranking is not an error
 * here; the caller reports it. */
int plan_search(struct plan **out, struct model *m, const struct cluster *c,
		const struct plan_opts *o, struct err *e);

/* The real node groups of c (c a plan's cluster) on which strategy s uses
 * no GPU: not the group of any of its s->pp ranks (s->group[rank]) nor a
 * part of such a mixed group. Bit g for c->group[g]; 0 where it uses every
 * group. */
unsigned plan_row_idle(const struct cluster *c, const struct strategy *s);

/* Expands row i of p (0 <= i < p->n_row) into *buf and returns buf. p is
 * only read: several threads may call it at once. */
struct plan_row *plan_row_get(const struct plan *p, int i, struct plan_row *buf);

/* Replaces row i of p by row: in the room of the old record where it
 * fits, else in new room (under the arena's lock), so that threads may
 * set different rows at once. */
void plan_row_set(struct plan *p, int i, const struct plan_row *row);

/* plan_row_set for a row that differs from row i of p at most in its
 * trainers' fields (trainers, trainer_s, trainer_feat): writes those
 * alone, in place. */
void plan_row_set_trainers(struct plan *p, int i, const struct plan_row *row);

/* Appends row to p's rows (n_row + 1); one thread at a time. */
void plan_row_add(struct plan *p, const struct plan_row *row);

/* Whether row i of p fits (its reason is empty), and its gap_pct, as
 * plan_row_get would tell, without expanding it. */
bool plan_row_fits(const struct plan *p, int i);
double plan_row_gap(const struct plan *p, int i);

/* Gives the room of from's records to to (pool.c's merge: to has taken
 * from's row pointers); from keeps its row array, and plan_free(from)
 * frees that alone. to's row array is taken as full. */
void plan_rows_adopt(struct plan *to, struct plan *from);

/* free(NULL)-safe. */
void plan_free(struct plan *p);

#endif
