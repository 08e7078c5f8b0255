/* exhaustive.h: the reference search: every placement of node groups onto
 * pipeline ranks and every layer partition, costed by cost_evaluate. */
#ifndef AMPPLAN_EXHAUSTIVE_H
#define AMPPLAN_EXHAUSTIVE_H

struct strategy;
struct cost_result;
struct model;
struct cluster;
struct layer_costs;

/* Enumerates every sequence of node groups for the s->pp pipeline ranks in
 * which group g hosts exactly ranks[g] ranks, and for each every split of
 * the lc->n_layer layers into s->n_stages contiguous non-empty stages; costs
 * each with cost_evaluate and keeps the fastest that fits in *best and *r
 * (r->fits false if none fits; *best untouched then). Exponential in the
 * number of stages: for small models and clusters only. Returns the number
 * of candidates costed. */
long exhaustive_search(struct strategy *best, struct cost_result *r,
		       const struct strategy *s, const int *ranks,
		       const struct model *m, const struct cluster *c,
		       const struct layer_costs *lc);

#endif
