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
struct layer_terms;

/* Megatron-Core DDP's default bucket: max(40M, 1M x DP) parameters
 * (megatron/core/distributed/distributed_data_parallel.py). With
 * --overlap-grad-reduce each bucket is reduced as soon as the last
 * micro-batch's backward has produced it; the last bucket (the rank's first
 * layers) cannot hide. Likewise --overlap-param-gather gathers the first
 * bucket before the forward can start. */
#define COST_BUCKET_PARAMS	  40e6
#define COST_BUCKET_PARAMS_PER_DP 1e6

/* Of the TP communication that --tp-comm-overlap hides under the GEMMs,
 * the share those GEMMs still pay: Transformer Engine's userbuffers run
 * the reduce-scatters (its "pipeline" and "bulk" methods) on SMs taken
 * from the GEMM (num_sm: 16 to 24 of an H100's 132 in NeMo's userbuffers
 * configs, 12-18%), and every method's copies contend with the GEMM for
 * HBM bandwidth. Calibrated on dgxc_h100_nemo_24.11.csv and
 * dgxc_h100_grok1.csv, where every TP row overlaps (README "Validation"). */
#define COST_TP_OVERLAP_DRAG 0.2

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
	double *state_bytes; /* [l] weights + gradients + optimizer per GPU */
	double *act_bytes;   /* [l] activations per in-flight micro-batch per GPU */
	double *extra_bytes; /* [l] transient while the layer runs (fp32
				   logits of the head), per GPU */
	/* [g * (n_layer + 1) + j]: seconds that pipeline rank 0 on group g
	 * adds after the pipeline when its (only) stage holds layers [0, j):
	 * exposed DP gradient reduction + optimizer step. iter_s = T_pipe +
	 * this (cost_evaluate). */
	double *tail0;
	/* The zero-bubble schedules' rho (schedule_weights): (forward +
	 * recomputation) / (forward + recomputation + backward) over all
	 * layers on the cluster's first node group, a whole-model ratio
	 * independent of the partition and the placement; 1/3 (backward =
	 * 2 x forward) without layers. */
	double zb_rho;
	/* Vocabulary parallelism (s->vocab_par; 0 without it), what every
	 * pipeline rank adds whatever its layers: [g] seconds per
	 * micro-batch on group g (its share of the embedding, head and loss
	 * and their collectives), of which vocab_fwd[g] the forward; bytes
	 * per GPU (memory_vocab, the allowance's share included). The
	 * embedding and head layers cost nothing in time[] and the bytes
	 * above, so that the partition balances the blocks alone. */
	double *vocab_time, *vocab_fwd;
	double vocab_bytes;
	/* ZB-H2's bubble share (schedule_weights) over the same layers:
	 * max(F, F + t_B - 2 t_W) / (F + R + backward), F the forward alone,
	 * R the recomputation (run before B), t_B = R + backward / 2, t_W =
	 * backward / 2; 1/3 without layers. */
	double zb_h2_rho;
	/* [g * n_group + h]: comm_pp_send from group g to group h for the
	 * strategy costed, whose tp, cp, dp, mbs, seq, sp and p2p_split link_key holds
	 * (cost_frame takes them from here when they match its strategy's);
	 * NULL: cost_frame computes them. */
	double *link;
	int link_key[6];
	/* [g * n_group + h]: cost_tied_pair between a first pipeline rank on
	 * group g and a last on group h for the strategy costed, whose tp, cp,
	 * dp, pp and grad_bytes tied_key holds (cost_frame takes them from
	 * here when they match); NULL: cost_frame computes them. */
	double *tied;
	int tied_key[5];
	/* The per-layer terms that cost_evaluate reads for every partition
	 * (cost_int.h struct layer_terms), of the strategy costed; NULL:
	 * cost_evaluate computes them. */
	struct layer_terms *terms;
};

/* Seconds of CP communication exposed per micro-batch by one transformer
 * block of m under s (forward, backward and recomputation; s->cp_comm,
 * cp_a2a, tp, cp, mbs, seq, recompute), summed over the node groups of c:
 * what the search compares to pick the CP flavour of a strategy before it
 * is placed. 0 without a block or with cp = 1. */
double cost_cp_exposed(const struct model *m, const struct cluster *c,
		       const struct strategy *s);

/* The node group of the mixed rank that strategy s uses (README
 * "Heterogeneous clusters"): the one mixed group of c (cluster_mix) made
 * for ranks of tp x cp x dp GPUs whose parts are whole TP x CP groups;
 * -1 when there is none, or more than one (uneven micro-batches are then
 * not tried). */
int cost_mixed_group(const struct cluster *c, const struct strategy *s);

/* Uneven micro-batches by water-filling: n >= 1 parts, part i with
 * replicas[i] >= 1 DP replicas taking t[i] > 0 seconds per micro-batch
 * each; total micro-batches (at least the replicas' sum) given out one at
 * a time to the replica whose count x t would be least after it (the
 * first part on ties), each replica starting with one and, with cap > 0,
 * none above cap. This is optimal for the largest count x t over the
 * replicas: the greedy takes the total smallest of the terms (k x t_i for
 * 2 <= k <= cap), and every split must reach the largest of them (the
 * classic argument for a max of nondecreasing terms). Fills out[i] with
 * part i's micro-batches, which its replicas share as evenly as integers
 * go (ceil(out[i] / replicas[i]) the most). Returns that least max,
 * seconds, or -1 with n < 1, a part without replicas or time, total below
 * the replicas' sum or above cap x their sum. */
double cost_split(int n, const int *replicas, const double *t, long total, long cap,
		  long *out);

/* The splits cost_uneven offers per strategy. */
#define COST_UNEVEN_TRIES 4

/* Try k (0 <= k < COST_UNEVEN_TRIES) of an uneven split for strategy s
 * (degrees, mbs and micro_batches set) on the mixed rank it uses
 * (cost_mixed_group): cost_split over its parts of the dp x m
 * micro-batches (m = micro_batches), t_i the seconds per micro-batch of
 * the whole model's layers on part i's GPU type with their exposed
 * communication over the mixed rank's links (the slowest part's, as for
 * the even split). Try 0: uncapped, the best split of a rank that holds
 * the whole model (pp = 1). Tries 1 to COST_UNEVEN_TRIES - 1, with pp > 1
 * only: capped at m + ceil(k (N - m) / COST_UNEVEN_TRIES) micro-batches
 * per replica, N the most of try 0, since every replica runs its count
 * through the single-type stages too (cost.c layer_parts); none that
 * repeats the cap before it. Fills out[0..MAX_GROUPS) (all 0 when none;
 * the values for strategy.uneven) and returns 1 where try 0 beats the
 * even split (m x the slowest t_i) and try k exists; 0 where s uses no
 * single mixed rank, try 0 cannot beat the even split, or try k is
 * none; -1 with e set when a measured profile is unusable. */
int cost_uneven(unsigned short *out, const struct model *m, const struct cluster *c,
		const struct strategy *s, int k, struct err *e);

/* Fills lc for strategy s (uses tp, cp, dp, ep, mbs, seq, recompute, zero,
 * sp; not the partition). ranks: pipeline ranks per node group, whose
 * groups without ranks get no tail0 (INFINITY: no rank 0 there); NULL for
 * every group. Returns 0, or -1 with e set if a measured profile is
 * unusable. */
int cost_layers(struct layer_costs *lc, const struct model *m, const struct cluster *c,
		const struct strategy *s, const int *ranks, struct err *e);
/* Frees lc's arrays and zeroes it; lc itself is the caller's. NULL-safe. */
void cost_layers_free(struct layer_costs *lc);

/* The pipeline terms of a strategy whose placement (s->group) is set but
 * whose partition may not be. The pipeline time of a partition is
 *   T_pipe = a * max_k c_k + b * sum_k c_k,
 * with c_k = sum of layer_costs.time over the layers of virtual stage k on
 * group group[k % pp], plus send[k] and vocab[k]; without virtual stages the iteration is
 * T_pipe + layer_costs.tail0[group[0]][first[1]] + tied[group[0]][group[K - 1]]
 * where rank 0's tail ends last. With vp > 1 cost_evaluate
 * takes T_pipe from the ranks' totals, (m - 1/v) max_r C_r + (1/v) sum_r C_r,
 * which a * max_k c_k + b * sum_k c_k bounds from above. A partition fits if for every k:
 *   sum state_bytes + inflight[k] * sum act_bytes + sum extra_bytes <= cap[k]. */
struct pipeline_frame {
	int n_stages, n_group, vp;
	int hops;		     /* p2p boundaries a micro-batch crosses:
					   n_stages - 1, ZB-V's turn on one rank
					   not counted */
	double a, b;		     /* schedule weights over the stages
					   (schedule_weights) */
	double ra, rb;		     /* ... over the ranks' totals
					   (schedule_rank_weights) */
	double inflight[MAX_STAGES]; /* micro-batches of activations held */
	double vocab[MAX_STAGES];    /* seconds per micro-batch of stage k's
					   vocabulary-parallel share
					   (layer_costs.vocab_time of its
					   group): part of c_k, as send[k] */
	double send[MAX_STAGES];     /* seconds of p2p per micro-batch into
					   stage k from stage k - 1 (0 for k = 0):
					   link[group[k-1]][group[k]] */
	double cap[MAX_STAGES];	     /* bytes available for the stage's
					   layers on one GPU: cap_of[group[k]]
					   x share[k] */
	/* Stage k's part of its rank's memory, times vp: 1 without virtual
	 * stages; with them, whose stages on one rank hold different numbers
	 * of micro-batches (ZB-V 2(p-r)-1 and 2r+1, interleaving's chunks in
	 * Megatron's order), each gets what an even split of the blocks would
	 * use, vp (S + i_k A) / (vp S + sum_j i_j A) over the rank's stages j
	 * for a block's states S and activations A (sums over the blocks), so
	 * an even split that fits the rank fits its stages; and 1/2 under
	 * DualPipe, whose rank also holds stage k's mirror of the other
	 * copy. */
	double share[MAX_STAGES];
	int group[MAX_STAGES]; /* node group of virtual stage k */
	/* Placement-free terms, for a search that also places the ranks:
	 * link[g][h] the p2p seconds per micro-batch (forward and backward)
	 * between a stage on group g and the next on group h; cap_of[g] the
	 * bytes for a stage's layers on a GPU of group g. */
	double link[MAX_GROUPS][MAX_GROUPS];
	/* tied[g][h]: the tied embedding's gradient all-reduce that the first
	 * pipeline rank, on group g, and the last, on group h, wait for
	 * after their DP tails, seconds per iteration (cost_tied_pair where
	 * cost_tied_paid; 0 without it) */
	double tied[MAX_GROUPS][MAX_GROUPS];
	double cap_of[MAX_GROUPS];
	double vocab_of[MAX_GROUPS]; /* vocab[] of a stage on group g */
};
/* Fills f for strategy s: weights a, b (schedule, with lc->zb_rho),
 * in-flight micro-batches per stage, the caps and links per group, the
 * stages' shares of their rank's memory (from lc's bytes), and send[] /
 * cap[] / group[] for s->group (the placement may be unset when only the
 * placement-free terms are used). lc is cost_layers' for s. Never fails. */
void cost_frame(struct pipeline_frame *f, const struct model *m,
		const struct cluster *c, const struct strategy *s,
		const struct layer_costs *lc);

/* Seconds per iteration. The first nine and vocab are exposed on the
 * critical path and add up to iter_s; compute and recompute include the memory-bound
 * kernels (norms, activations, softmax, ...). The _hidden fields are the
 * communication that runs overlapped with compute on the same path (not in
 * iter_s): TP under the GEMMs (tp_overlap), CP's ring under attention, DP
 * reduction and parameter gathers under the backward / forward passes, EP
 * all-to-alls under the other micro-batch of a DualPipe(V) pair. */
struct cost_time {
	double compute, recompute, bubble, tp, cp, pp, dp, ep, optimizer;
	/* of recompute, by module of selective recomputation (bit 1u << i of
	 * enum recompute_module; all 0 without it) */
	double recompute_mod[RM_COUNT];
	double tp_hidden, cp_hidden, dp_hidden;
	double vocab;	       /* vocabulary parallelism's collectives, exposed (in
			   iter_s too, the tenth part) */
	double ep_hidden;      /* EP all-to-all under the paired micro-batch's
				   compute (DualPipe, DualPipeV) */
	double offload;	       /* activation offloading's host copies, exposed */
	double offload_hidden; /* and under the compute */
	double tied;	       /* of dp: the tied embedding's gradient
				   all-reduce between the first and the last
				   pipeline rank, exposed */
};

/* Bytes per GPU on the heaviest pipeline rank; all but offloaded add up to
 * peak_bytes. */
struct cost_mem {
	double weights, grads, optimizer, activations, logits, allowance;
	double offloaded; /* activations offloaded to host memory at the peak
			     (strategy.offload_modules: memory_offload x the
			     micro-batches in flight); not on the GPU */
};

/* What the allowance of mem (a rank's, or the heaviest's) is made of on
 * cluster c, bytes per GPU: *context the fixed part (the user's
 * --mem-allowance, or MEM_CONTEXT_BYTES: CUDA context, library workspaces,
 * NCCL buffers), *frag the allocator's fragmentation, MEM_FRAG_SHARE of
 * the activations and logits (0 with the user's allowance); they add up
 * to mem->allowance. *share: that share (0 or MEM_FRAG_SHARE). */
void cost_allowance_parts(const struct cluster *c, const struct cost_mem *mem, double *context,
			  double *frag, double *share);

/* The evaluation of one fully specified strategy. */
struct cost_result {
	double iter_s;	     /* seconds per iteration */
	double tokens_per_s; /* gbs * seq / iter_s */
	double mfu;	     /* model FLOPs (no recompute) / (iter_s * sum of peaks) */
	struct cost_time time;
	struct cost_mem mem;
	double peak_bytes; /* heaviest pipeline rank, per GPU */
	int heaviest_rank; /* the rank with the most bytes per GPU */
	bool fits;	   /* every stage within cap (pipeline_frame) */
	int overflow_rank; /* first pipeline rank over its GPU memory, or -1 */
	/* The fullest GPU: the pipeline rank whose bytes per GPU are the
	 * largest share of its GPU's memory (first of equals), its bytes per
	 * GPU (as peak_bytes, allowance included) and its GPU's memory
	 * (gpu_type.mem_bytes), both bytes. */
	int fullest_rank;
	double fullest_bytes, fullest_cap;
	/* The bottleneck: the pipeline rank with the most seconds per
	 * micro-batch (all its chunks, sends included; the first of equals),
	 * whose parts the time breakdown holds, and its seconds per
	 * micro-batch: forward, backward (recomputation included; both with
	 * their exposed communication) and p2p (as cost_rank). */
	int bottleneck_rank;
	double bottleneck_fwd, bottleneck_bwd, bottleneck_send;
	/* The pipeline rank whose DP tail ends the iteration (rank 0 unless
	 * a later one ends after it: cost.c iter_tail). */
	int tail_rank;
};

/* Evaluates strategy s (partition and placement set) with the layer costs lc
 * computed for it. Never fails; r->fits says whether it fits in memory.
 * Counts the call in cost_evaluations. */
void cost_evaluate(struct cost_result *r, const struct model *m,
		   const struct cluster *c, const struct strategy *s,
		   const struct layer_costs *lc);

/* cost_evaluate's time and memory test alone, for a search that compares
 * partitions: r->fits, r->overflow_rank, r->iter_s and r->tail_rank as
 * cost_evaluate sets them (the same arithmetic), every other field 0.
 * Counts the call in cost_evaluations. */
void cost_evaluate_time(struct cost_result *r, const struct model *m,
			const struct cluster *c, const struct strategy *s,
			const struct layer_costs *lc);

/* cost_evaluate without counting the call: the full result of a strategy
 * whose evaluation cost_evaluate_time counted already. */
void cost_evaluate_again(struct cost_result *r, const struct model *m,
			 const struct cluster *c, const struct strategy *s,
			 const struct layer_costs *lc);

/* cost_evaluate calls on the calling thread (the search's work budget
 * reads it; nothing resets it). */
extern _Thread_local long cost_evaluations;

/* One virtual stage k of a placed and partitioned strategy, per
 * micro-batch on one GPU of its group (the chunk of pipeline rank k % pp
 * that a timeline draws). fwd + bwd + send is the c_k of pipeline_frame. */
struct cost_stage {
	int rank;	     /* pipeline rank, k % pp */
	int first, n_layers; /* layers [first, first + n_layers) of model.layer */
	double fwd;	     /* seconds: forward compute + its exposed TP, CP,
				   EP communication and ZeRO-3 gathers
				   (layer_costs.fwd summed) */
	double bwd;	     /* seconds: recomputation + backward + their
				   exposed communication */
	double send;	     /* seconds of p2p into stage k from k - 1,
				   forward activations + backward gradients
				   (0 for k = 0): pipeline_frame.send */
};

/* Fills out[0..n_stages) for strategy s (partition and placement set) with
 * the layer costs lc computed for it; out must hold s->n_stages (pp x vp)
 * entries. Returns the number filled. Never fails. */
int cost_stages(struct cost_stage *out, const struct model *m, const struct cluster *c,
		const struct strategy *s, const struct layer_costs *lc);

/* One pipeline rank of a placed and partitioned strategy, all its virtual
 * stages together (cost_stages has them one by one). Seconds per
 * micro-batch on one GPU unless named per iteration; bytes per GPU.
 *   fwd = compute_fwd + comm_fwd,
 *   bwd = compute_bwd + recompute + comm_bwd,
 *   comm_fwd + comm_bwd = tp + cp + ep + zero3 (exposed),
 *   busy = m x (fwd + bwd + send), busy + idle = pipeline_s,
 *   the parts of mem add up to peak_bytes.
 * The rank runs busy seconds of the pipeline_s and sits idle (its bubble)
 * for the rest; then its tail, dp + optimizer (the one that ends last,
 * counted from rank 0's last backward, is the iteration's: cost_evaluate). */
struct cost_rank {
	int rank;	 /* pipeline rank */
	int group;	 /* node group (index into cluster.group) */
	int gpu;	 /* GPU type (index into cluster.gpu) */
	int n_layers;	 /* layers held, all its virtual stages */
	int n_chunks;	 /* its virtual stages (vp) */
	double fwd, bwd; /* per micro-batch, as above */
	double compute_fwd, compute_bwd, recompute;
	/* of recompute, by module (as cost_time's) */
	double recompute_mod[RM_COUNT];
	double comm_fwd;	  /* exposed TP + CP + EP + ZeRO-3 + offload copies
				     of the forward */
	double comm_bwd;	  /* of the backward and the recomputation */
	double tp, cp, ep, zero3; /* the exposed communication by kind */
	double offload;		  /* the exposed host copies of activation
				     offloading (cost_time.offload) */
	double vocab;		  /* vocabulary parallelism's collectives
				   (cost_time.vocab), also in comm_fwd and
				   comm_bwd: with it comm_fwd + comm_bwd =
				   tp + cp + ep + zero3 + offload + vocab */
	double send;		  /* p2p seconds per micro-batch into its stages
				   (cost_stage.send summed) */
	double pipeline_s;	  /* T_pipe of the iteration, the same for all */
	double busy, idle;	  /* seconds per iteration within pipeline_s */
	double deferred;	  /* the LM head's weight-gradient GEMMs it runs
				   after its last backward, before its DP
				   reduction (strategy_deferred; 0 on the
				   other ranks), seconds per iteration */
	double dp;		  /* exposed DP reduction and gathers after the
				   pipeline, seconds per iteration */
	double optimizer;	  /* its optimizer step, seconds per iteration */
	struct cost_mem mem;	  /* bytes per GPU by kind */
	double peak_bytes;	  /* their sum */
	double cap_bytes;	  /* its GPU's memory (gpu_type.mem_bytes) */
};

/* Fills out[0..pp) for strategy s (partition and placement set) with the
 * layer costs lc computed for it: the same arithmetic as cost_evaluate
 * (whose breakdown is m x the bottleneck rank's parts and whose memory is
 * the heaviest rank's). out must hold s->pp entries; the caller owns it.
 * Returns pp. Never fails. */
int cost_ranks(struct cost_rank *out, const struct model *m, const struct cluster *c,
	       const struct strategy *s, const struct layer_costs *lc);

#endif
