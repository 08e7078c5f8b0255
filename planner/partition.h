/* partition.h: the layer-to-stage partition by dynamic programming. */
#ifndef AMPPLAN_PARTITION_H
#define AMPPLAN_PARTITION_H

struct layer_costs;
struct pipeline_frame;

/* Splits the lc->n_layer layers into f->n_stages contiguous, non-empty
 * stages, stage k on node group f->group[k], minimising the pipeline time
 *   T_pipe = f->a * max_k c_k + f->b * sum_k c_k
 * (c_k as defined for struct pipeline_frame) subject to every stage fitting
 * its memory cap. Exact: for each candidate bottleneck U (in increasing order
 * of the distinct stage costs) a DP finds the least sum with all c_k <= U;
 * it stops once a * U + b * (least unconstrained sum) cannot improve.
 * Returns 0 with first[0..n_stages] (first[0] = 0, first[n_stages] =
 * n_layer) and *t_pipe, or -1 if no partition fits (first untouched). */
int partition_solve(const struct layer_costs *lc, const struct pipeline_frame *f,
		    unsigned short *first, double *t_pipe);

#endif
