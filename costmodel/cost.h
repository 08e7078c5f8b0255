/* cost.h: the analytic cost model: per-layer time and memory for a strategy,
 * the pipeline frame the partition search needs, and the full evaluation of a
 * strategy (iteration time with its breakdown, memory per GPU, MFU).
 * Formulas and sources: ../shared/reference/COSTMODEL.md; each function's
 * comment in the .c files cites its paper and equation. */
#ifndef AMPPLAN_COST_H
#define AMPPLAN_COST_H

#include <stdbool.h>

#include "strategy.h"

struct model;
struct cluster;
struct err;

/* Megatron-Core DDP's default bucket: max(40M, 1M x DP) parameters
 * (megatron/core/distributed/distributed_data_parallel.py). With
 * --overlap-grad-reduce each bucket is reduced as soon as the last
 * micro-batch's backward has produced it; the last bucket (the rank's first
 * layers) cannot hide. Likewise --overlap-param-gather gathers the first
 * bucket before the forward can start. */
#define COST_BUCKET_PARAMS 40e6
#define COST_BUCKET_PARAMS_PER_DP 1e6

/* Per-layer inputs of the partition search for one strategy; independent of
 * the partition and of the placement. Caller owns it: cost_layers_free. */
struct layer_costs {
	int n_layer, n_group;
	/* [g * n_layer + l]: seconds per micro-batch for layer l on one GPU of
	 * node group g: forward + backward + recomputation + exposed TP, CP and
	 * EP communication. */
	double *time;
	/* [g * n_layer + l]: of which the forward pass (same units). */
	double *fwd;
	double *state_bytes;	/* [l] weights + gradients + optimizer per GPU */
	double *act_bytes;	/* [l] activations per in-flight micro-batch per GPU */
	double *extra_bytes;	/* [l] transient while the layer runs (fp32
				   logits of the head), per GPU */
	/* [g * (n_layer + 1) + j]: seconds that pipeline rank 0 on group g
	 * adds after the pipeline when its (only) stage holds layers [0, j):
	 * exposed DP gradient reduction + optimizer step. iter_s = T_pipe +
	 * this (cost_evaluate). */
	double *tail0;
};

/* Fills lc for strategy s (uses tp, cp, dp, ep, mbs, seq, recompute, zero,
 * sp; not the partition). Returns 0, or -1 with e set if a measured profile
 * is unusable. */
int cost_layers(struct layer_costs *lc, const struct model *m,
		const struct cluster *c, const struct strategy *s, struct err *e);
/* Frees lc's arrays and zeroes it; lc itself is the caller's. NULL-safe. */
void cost_layers_free(struct layer_costs *lc);

/* The pipeline terms of a strategy whose placement (s->group) is set but
 * whose partition may not be. The pipeline time of a partition is
 *   T_pipe = a * max_k c_k + b * sum_k c_k,
 * with c_k = sum of layer_costs.time over the layers of virtual stage k on
 * group group[k % pp], plus send[k]; without virtual stages the iteration is
 * T_pipe + layer_costs.tail0[group[0]][first[1]]. With vp > 1 cost_evaluate
 * takes T_pipe from the ranks' totals, (m - 1/v) max_r C_r + (1/v) sum_r C_r,
 * which a * max_k c_k + b * sum_k c_k bounds from above. A partition fits if for every k:
 *   sum state_bytes + inflight[k] * sum act_bytes + sum extra_bytes <= cap[k]. */
struct pipeline_frame {
	int n_stages, n_group, vp;
	double a, b;			/* schedule weights (cost_schedule) */
	double inflight[MAX_STAGES];	/* micro-batches of activations held */
	double send[MAX_STAGES];	/* seconds of p2p per micro-batch into
					   stage k from stage k - 1 (0 for k = 0):
					   link[group[k-1]][group[k]] */
	double cap[MAX_STAGES];		/* bytes available for the stage's
					   layers on one GPU: cap_of[group[k]] */
	int group[MAX_STAGES];		/* node group of virtual stage k */
	/* Placement-free terms, for a search that also places the ranks:
	 * link[g][h] the p2p seconds per micro-batch (forward and backward)
	 * between a stage on group g and the next on group h; cap_of[g] the
	 * bytes for a stage's layers on a GPU of group g. */
	double link[MAX_GROUPS][MAX_GROUPS];
	double cap_of[MAX_GROUPS];
};
/* Fills f for strategy s: weights a, b (schedule), in-flight micro-batches
 * per stage, the caps and links per group, and send[] / cap[] / group[]
 * for s->group (the placement may be unset when only the placement-free
 * terms are used). Never fails. */
void cost_frame(struct pipeline_frame *f, const struct model *m,
		const struct cluster *c, const struct strategy *s);

/* Seconds per iteration. The first nine are exposed on the critical path
 * and add up to iter_s; compute and recompute include the memory-bound
 * kernels (norms, activations, softmax, ...). The _hidden fields are the
 * communication that runs overlapped with compute on the same path (not in
 * iter_s): TP under the GEMMs (tp_overlap), CP's ring under attention, DP
 * reduction and parameter gathers under the backward / forward passes. */
struct cost_time {
	double compute, recompute, bubble, tp, cp, pp, dp, ep, optimizer;
	double tp_hidden, cp_hidden, dp_hidden;
};

/* Bytes per GPU on the heaviest pipeline rank; they add up to peak_bytes. */
struct cost_mem {
	double weights, grads, optimizer, activations, logits, allowance;
};

/* The evaluation of one fully specified strategy. */
struct cost_result {
	double iter_s;		/* seconds per iteration */
	double tokens_per_s;	/* gbs * seq / iter_s */
	double mfu;		/* model FLOPs (no recompute) / (iter_s * sum of peaks) */
	struct cost_time time;
	struct cost_mem mem;
	double peak_bytes;	/* heaviest pipeline rank, per GPU */
	int heaviest_rank;
	bool fits;		/* every stage within cap (pipeline_frame) */
	int overflow_rank;	/* first pipeline rank over its GPU memory, or -1 */
};

/* Evaluates strategy s (partition and placement set) with the layer costs lc
 * computed for it. Never fails; r->fits says whether it fits in memory. */
void cost_evaluate(struct cost_result *r, const struct model *m,
		   const struct cluster *c, const struct strategy *s,
		   const struct layer_costs *lc);

#endif
