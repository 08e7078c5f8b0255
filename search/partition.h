/* partition.h: the layer-to-stage partition by dynamic programming, with the
 * placement of pipeline ranks on node groups given or searched jointly. */
#ifndef AMPPLAN_PARTITION_H
#define AMPPLAN_PARTITION_H

struct layer_costs;
struct pipeline_frame;

/* The objective of a partition (and placement) of the layers into
 * f->n_stages contiguous, non-empty stages:
 *   T = f->a * max_k c_k + f->b * sum_k c_k + tail,
 * c_k the stage's layer times on its group plus the p2p into it, tail =
 * lc->tail0 of the first stage when f->vp == 1 and lc->tail0 is set (the
 * iteration time cost_evaluate gives, for vp == 1), else 0. Every stage
 * must fit its memory cap. */

/* Partitions with the placement f->group[] fixed (c_k uses f->send[k], the
 * cap f->cap[k]). Exact. Returns 0 with first[0..n_stages] (first[0] = 0,
 * first[n_stages] = n_layer) and *t, or -1 if no partition fits (first
 * untouched). */
int partition_solve(const struct layer_costs *lc, const struct pipeline_frame *f,
		    unsigned short *first, double *t);

/* Places and partitions jointly: node group g hosts exactly ranks[g] of the
 * stages (sum = f->n_stages; f->vp must be 1), c_k uses f->link[g][h] and
 * f->cap_of[g]. Exact over every placement and partition. Returns 0 with
 * group[0..n_stages), first[] and *t, or -1 if nothing fits. */
int partition_place(const struct layer_costs *lc, const struct pipeline_frame *f,
		    const int *ranks, int *group, unsigned short *first, double *t);

/* The work of one partition_place pass, in state transitions:
 * prod_g (ranks[g] + 1) x n_group (states per layer) x n_layer x n_stages
 * (saturates at 1e12). The caller places the ranks otherwise when it is
 * too large. */
double partition_place_work(const int *ranks, int n_group, int n_layer, int n_stages);

#endif
