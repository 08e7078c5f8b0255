/* partition.h: the layer-to-stage partition by dynamic programming, with the
 * placement of pipeline ranks on node groups given or searched jointly. */
#ifndef AMPPLAN_PARTITION_H
#define AMPPLAN_PARTITION_H

struct layer_costs;
struct pipeline_frame;

/* DP cells the calling thread's partition DPs have visited: each DP adds
 * its table of stages x groups x (layers + 1) (the caps, fill_jm), each
 * pass its rows x groups x (layers + 1), a bound on the states it looks
 * at. The
 * search's work budget reads it (search/evaluate.c); nothing resets it. */
extern _Thread_local double partition_cells;

/* The objective of a partition (and placement) of the layers into
 * f->n_stages contiguous, non-empty stages:
 *   T = f->a * max_k c_k + f->b * sum_k c_k + tail,
 * c_k the stage's layer times on its group plus the p2p into it, tail =
 * lc->tail0 of the first stage plus the tied embedding's all-reduce
 * (f->tied of the first and the last stage's groups) when f->vp == 1 and
 * lc->tail0 is set, else 0. For vp == 1 it is cost_evaluate's iteration time where rank 0's tail
 * ends last, else a lower bound on it (cost.c iter_tail). Every stage must
 * fit its memory cap. */

/* Partitions with the placement f->group[] fixed (c_k uses f->send[k], the
 * cap f->cap[k]). Exact. Returns 0 with first[0..n_stages] (first[0] = 0,
 * first[n_stages] = n_layer) and *t, or -1 if no partition fits (first
 * untouched). */
int partition_solve(const struct layer_costs *lc, const struct pipeline_frame *f,
		    unsigned short *first, double *t);

/* partition_solve seeking only objectives below cut (seconds, the
 * caller's incumbent; INFINITY: partition_solve): returns 0 with first[]
 * and *t, the optimum, where it is below cut, else -1 (none fits, or none
 * beats cut; first untouched). Passes prune every state that cannot. */
int partition_solve_below(const struct layer_costs *lc, const struct pipeline_frame *f,
			  double cut, unsigned short *first, double *t);

/* Tables that the forced-placement DPs of one strategy share, for layer
 * costs lc that do not change while it lives and n_stages stages: the time
 * and memory sums, and each stage's memory limits for each cap met. */
struct partition_memo;

/* A memo for lc (kept by pointer) and n_stages stages: free it with
 * partition_memo_free (NULL: a no-op). */
struct partition_memo *partition_memo_create(const struct layer_costs *lc, int n_stages);
void partition_memo_free(struct partition_memo *memo);

/* partition_solve_below with the tables of memo (NULL, or one made for
 * another lc or stage count: as partition_solve_below); the same result.
 * Adds the tables it computes to memo. */
int partition_solve_memo(const struct layer_costs *lc, const struct pipeline_frame *f,
			 double cut, struct partition_memo *memo, unsigned short *first, double *t);

/* Places and partitions jointly: node group g hosts exactly ranks[g] of the
 * stages (sum = f->n_stages; f->vp must be 1), c_k uses f->link[g][h] and
 * f->cap_of[g]. Exact over every placement and partition. Returns 0 with
 * group[0..n_stages), first[] and *t, or -1 if nothing fits. */
int partition_place(const struct layer_costs *lc, const struct pipeline_frame *f,
		    const int *ranks, int *group, unsigned short *first, double *t);

/* The work of one partition_place pass, in state transitions:
 * prod_g (ranks[g] + 1) x the groups with ranks (states per layer: the
 * DP drops the others) x n_layer x n_stages (saturates at 1e12). The
 * caller places the ranks otherwise when it is too large. */
double partition_place_work(const int *ranks, int n_group, int n_layer, int n_stages);

/* A lower bound *lb on the pipeline time plus rank 0's tail (cost_evaluate's
 * iter_s) of every placement of ranks[] (pipeline ranks per group; sum pp)
 * with every partition into f->n_stages = pp x vp stages, for the schedule
 * weights a, b over the ranks' totals C_r: T = a max_r C_r + b sum_r C_r
 * (vp = 1: f->a, f->b, C_r = c_r; interleaved: m - 1/v and 1/v, cost.c
 * pipe_terms). A relaxation that keeps the rank counts: every C_r <= U; a
 * rank on group g holds at most min(U / t_g, the middle layers vp x cap_of
 * [g] holds at the fewest in-flight micro-batches) middle layers, each
 * costing at least t_g (the least middle-layer time on g); the middle layers
 * go to the fastest groups first, the embedding and head at their least
 * time, every p2p (f->hops of them) at the least link, rank 0's tail and
 * the tied all-reduce (f->tied) at their least (vp = 1; 0 with virtual
 * stages); *lb = min over U of a U + b (that sum) + tail, at U
 * = the floor or a step L t_g. O(G^2 n). Returns 0, or -1 if the relaxation
 * holds no partition (then no placement fits). */
int partition_place_bound(const struct layer_costs *lc, const struct pipeline_frame *f,
			  const int *ranks, double a, double b, double *lb);

/* partition_place seeking only objectives below cut: the incumbent cut
 * prunes the DP from its first pass. Returns 0 with group[], first[] and
 * *t the optimum where it is below cut, else -1: no placement and
 * partition that fits costs less than cut (a lower bound). */
int partition_place_below(const struct layer_costs *lc, const struct pipeline_frame *f,
			  const int *ranks, double cut, int *group, unsigned short *first,
			  double *t);

/* partition_place restricted to the sequence of classes seq[0..n_stages):
 * stage k runs on a group g with cls[g] == seq[k]. Exact over those
 * placements and every partition. Returns as partition_place. */
int partition_place_seq(const struct layer_costs *lc, const struct pipeline_frame *f,
			const int *ranks, const int *cls, const int *seq, int *group,
			unsigned short *first, double *t);

/* A lower bound *lb on partition_place's optimum (pipeline time + rank 0's
 * tail) over every placement of ranks[], by the same DP on a relaxation in
 * which the groups of one class (cls[g], any int: the caller's choice, e.g.
 * the GPU type) merge into one group hosting their ranks together, each
 * layer at its least time over the class, its memory cap the largest, each
 * link the least between the classes' groups, the tail and vocabulary share
 * the least. Exact (lb is the optimum) where each class is one group, or
 * its groups are identical. seq[0..n_stages) gets the class of each stage
 * in the relaxation's optimum (for partition_place_seq). Work per pass:
 * partition_relaxed_work. Returns 0, or -1 if nothing fits (then no
 * placement fits). */
int partition_place_relaxed(const struct layer_costs *lc, const struct pipeline_frame *f,
			    const int *ranks, const int *cls, double *lb, int *seq);

/* partition_place_work of the relaxation above. */
double partition_relaxed_work(const struct layer_costs *lc, const struct pipeline_frame *f,
			      const int *ranks, const int *cls);

#endif
