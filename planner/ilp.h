/* ilp.h: placement of pipeline ranks onto node groups as a small integer
 * linear program solved with GLPK (AMP, Li et al. 2022, Sec. 3.3, extended
 * with memory per stage). */
#ifndef AMPPLAN_ILP_H
#define AMPPLAN_ILP_H

struct layer_costs;
struct model;
struct cluster;
struct strategy;

enum ilp_status {
	ILP_OPTIMAL,	/* proven optimal placement */
	ILP_FEASIBLE,	/* time limit hit; incumbent placement usable */
	ILP_NONE,	/* infeasible, or GLPK failed: caller falls back */
};

/* Chooses s->group[0..pp-1]: node group g hosts exactly ranks[g] of the pp
 * pipeline ranks (sum of ranks[] = s->pp), with roughly how many layers each
 * rank takes, minimising the pipeline time of struct pipeline_frame with
 * per-layer times averaged per group, subject to memory per rank. Layer
 * counts are continuous-rounded; partition_solve refines them. Silent: GLPK's
 * terminal output is off. time_limit_s bounds GLPK's branch and bound.
 * Leaves s->group untouched on ILP_NONE. */
enum ilp_status ilp_place(struct strategy *s, const int *ranks,
			  const struct layer_costs *lc, const struct model *m,
			  const struct cluster *c, double time_limit_s);

#endif
