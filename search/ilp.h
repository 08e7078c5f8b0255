/* ilp.h: placement of pipeline ranks onto node groups as a small integer
 * linear program solved with GLPK (after AMP, Li et al. 2022, Sec. 3.3,
 * extended with memory per rank and stage order). */
#ifndef AMPPLAN_ILP_H
#define AMPPLAN_ILP_H

struct layer_costs;

/* The placement problem: pp pipeline ranks in order, node group g must host
 * exactly ranks[g] of them (sum = pp). Rank r holds inflight[r] micro-batches
 * of activations; a GPU of group g has cap[g] bytes for its layers. The
 * objective is the pipeline time a * max_r c_r + b * sum_r c_r of
 * struct pipeline_frame (cost.h), with c_r = (layers of rank r) x (the mean
 * time of a middle layer on its group), plus the first layer's exact cost on
 * rank 0 and the last layer's on the last rank (ilp.c). */
struct placement_problem {
	int pp, n_group;
	const int *ranks;	      /* [n_group] */
	const struct layer_costs *lc; /* n_group must match */
	double a, b;
	const double *inflight; /* [pp] */
	const double *cap;	/* [n_group] bytes */
};

enum ilp_status {
	ILP_OPTIMAL,  /* proven optimal placement */
	ILP_FEASIBLE, /* time or node limit hit; incumbent usable */
	ILP_NONE,     /* infeasible, or GLPK failed: caller falls back */
};

/* Solves the placement ILP with GLPK: binary x[r][g] (rank r on group g),
 * integer z[r][g] (layers of rank r on group g), continuous U >= c_r;
 * minimise a*U + b*sum c_r, memory per rank from mean per-layer bytes;
 * up to 3 rounds re-price the means over the layer ranges partition_solve
 * gives the last placement, all within the time limit.
 * Writes group[0..pp-1] unless ILP_NONE. Silent: GLPK's terminal output goes
 * nowhere. time_limit_s bounds branch and bound. partition_solve refines the
 * layer counts afterwards with the exact per-layer costs. */
enum ilp_status ilp_place(const struct placement_problem *p, int *group,
			  double time_limit_s);

/* Branch-and-bound nodes per ilp_place_limits call by default (plan_opts):
 * a deterministic limit, unlike the time limit. */
#define ILP_NODE_LIMIT 500

/* The search (place.c) solves the ILP only where pipeline ranks x node
 * groups is at most this (its 2 pp G + 1 columns then take GLPK a few
 * milliseconds). On the bench's 8 groups (Llama-3-70B, 8 to 64 ranks) a
 * solve took 0.04 to 2.5 s, the search 65 s in all, and its placement beat
 * the climbed block orders of place.c on 0 to 15% of the strategies, by
 * under 1% of the iteration time on average. */
#define ILP_MAX_CELLS 40

/* ilp_place with a time limit (0: none; makes the result depend on the
 * machine) and a node limit (0: none): at most node_limit branch-and-bound
 * nodes over all rounds (GLPK's node count, deterministic); ILP_FEASIBLE
 * when either limit stopped a solve with an incumbent. */
enum ilp_status ilp_place_limits(const struct placement_problem *p, int *group,
				 double time_limit_s, long node_limit);

/* Frees the calling thread's GLPK environment (GLPK 5 keeps one per thread
 * in thread-local storage, as Debian 12's libglpk40 is built: it is not
 * freed when the thread ends). A later ilp_place makes a new one. Call it
 * under the same lock as ilp_place where GLPK has one environment for the
 * process. */
void ilp_free_env(void);

#endif
