/* exact.h: the exact placement and partition of one strategy by branch and
 * bound, for every schedule (virtual stages, the V, DualPipe's two copies)
 * and with every pipeline rank's tail: cost_evaluate's own objective and
 * memory test, so that where it finishes it equals --exhaustive. */
#ifndef AMPPLAN_EXACT_H
#define AMPPLAN_EXACT_H

#include <stdbool.h>

struct cluster;
struct cost_result;
struct layer_costs;
struct model;
struct strategy;

/* Searches every sequence of node groups for the s->pp pipeline ranks in
 * which group g hosts exactly ranks[g] ranks, and every split of the
 * lc->n_layer layers into s->n_stages (>= 2) contiguous non-empty virtual
 * stages (stage k on rank strategy_rank(s, k)), as exhaustive_search does,
 * but prunes every branch whose lower bound is not below the incumbent:
 * *best and *r on entry (r->fits false: none yet). The bound: the memory
 * of each rank so far against its GPU's (cost_evaluate's test, per rank,
 * over its chunks; and the layers left against the memory the ranks have
 * left, at the fewest in-flight micro-batches of the stages left), and the
 * schedule's T_pipe over the stage or rank costs so far with the layers
 * left each at its least time (every rank and stage cost only grows), plus
 * rank 0's tail once its one stage is known (vp 1, lc->tail0):
 * cost_evaluate's iter_s is at least that. Costs O(1) per branch and
 * O(G n) memory. Candidates whose
 * T_pipe and that tail beat the incumbent are costed by cost_evaluate.
 * *best and *r take the fastest that fits where it beats the incumbent.
 * Stops after max_nodes branches (0: no limit). Returns true where the
 * search finished: *r (if it fits) is then the least iter_s over every
 * placement and partition, and where r->fits is false none fits. */
bool exact_place(struct strategy *best, struct cost_result *r, const struct strategy *s,
		 const int *ranks, const struct model *m, const struct cluster *c,
		 const struct layer_costs *lc, long max_nodes);

/* Most branches of exact_place per strategy, and the instances the search
 * runs it on (place.c, trainer_time.c): those --exhaustive takes (at most
 * 14 blocks and 64 GPUs; plan_opts.c), where it finishes on every random
 * instance of tests/check_search.c. */
#define EXACT_NODES	 100000
#define EXACT_MAX_LAYERS 16
#define EXACT_MAX_GPUS	 64

#endif
