/* cost_int.h (internal): what layer_cost.c (the per-layer costs of a
 * strategy) and cost.c (the pipeline frame and the evaluation) share: one
 * layer's time by part and the helpers both read. */
#ifndef AMPPLAN_COST_INT_H
#define AMPPLAN_COST_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "cost.h"
#include "strategy.h"

struct cluster;
struct err;
struct layer_mem;
struct model;
struct strategy;

/* One layer's time per micro-batch on one GPU of a group, by part. _f: the
 * forward pass, _b: the backward pass, _r: recomputation. Communication
 * parts are the exposed (not overlapped) seconds; _h the hidden ones of
 * the whole layer (forward, backward and recomputation). */
struct parts {
	double fwd, bwd, recompute; /* compute */
	double rc_mod[RM_COUNT];    /* of recompute, by selective recomputation's
				       module (compute_selective_parts) */
	double tp_f, tp_b, tp_r, tp_h;
	double cp_f, cp_b, cp_r, cp_h;
	double ep_f, ep_b, ep_r, ep_h;
	double z3_f, z3_b, z3_h; /* ZeRO-3 parameter gathers */
	double of_f, of_b, of_h; /* activation offloading's host copies */
	double vc_f, vc_b;	 /* vocabulary parallelism's collectives */
	double defer;		 /* the head's weight-gradient GEMMs deferred
				   to the pipeline flush, seconds per
				   iteration (not in bwd) */
};

/* x where positive, else 0 (seconds or bytes left over). */
static inline double pos(double x)
{
	return x > 0 ? x : 0;
}

/* The micro-batches per DP replica of s: s->micro_batches when set, else
 * gbs / (dp x mbs), at least 1. */
int cost_micro_batches(const struct strategy *s);

/* The most micro-batches a DP replica of s runs: micro_batches, or under
 * s->uneven the largest of ceil(uneven[i] / replicas) over the parts of
 * its mixed rank. */
int cost_most_batches(const struct cluster *c, const struct strategy *s);

/* Layer l on one GPU of group g (parts_of): on a real group its type's;
 * on a mixed group the slowest part type's (per layer); under uneven
 * micro-batches (s->uneven) per micro-batch of the even count m, what
 * the busiest replica runs in m's stead: on the strategy's mixed group the
 * part i with the largest n_i x its seconds, times n_i / m (n_i the most
 * micro-batches a replica of part i runs), on any other group its time x
 * max_i n_i / m (every replica passes through each stage). One stage
 * then takes max_i n_i t_i (up to the per-layer max, as the even split's
 * slowest type); with pp > 1 the fill and drain are charged at the same
 * rate, an upper bound (README "Uneven micro-batches on mixed ranks").
 * With s->fp8, in BF16 where group g lacks FP8 (cluster_group_fp8: the
 * per-stage precision of cluster_bf16_blocks). Returns -1 with e set. */
int cost_layer_parts(struct parts *p, const struct model *m, int l,
		     const struct cluster *c, int g, const struct strategy *s,
		     struct err *e);

/* Whether layer b costs what layer a costs in layer_parts under any
 * strategy on any group: two blocks with the same numbers, no measured
 * profile, and the same sliding window and FFN kind. layer_parts (with
 * compute_layer, the comm_* functions and model_attn_flops) reads a layer
 * only through m->layer[l] and model_block_windowed / model_block_moe of
 * its block; the callers reuse a's parts for b instead of recomputing
 * them (most models are one block repeated). */
bool cost_layers_alike(const struct model *m, int a, int b);

/* Vocabulary parallelism (Yeung et al. 2024 Sec. 3): what every pipeline
 * rank on group g runs per micro-batch of the embedding, the head and the
 * loss: 1/p of their compute and TP communication as they would run whole
 * (layer_parts without s->vocab_par: the head's GEMM and the cross-entropy
 * over V/p columns, the embedding's lookup of its V/p rows), and the
 * collectives (comm_vocab) as vc_f and vc_b, half each. All 0 without it. */
int cost_vocab_parts(struct parts *p, const struct model *m, const struct cluster *c,
		     int g, const struct strategy *s, struct err *e);

/* The dense parameters per GPU that a pipeline rank holding both the
 * embedding and the head counts twice when they are tied: V*h/t (one
 * copy; Megatron keeps a second only on a separate last stage). */
double cost_tied_dense(const struct model *m, const struct strategy *s);

/* Seconds of the tied word embedding's gradient all-reduce between the
 * first pipeline rank, on group gf, and the last, on group gl (Megatron-LM
 * finalize_model_grads' _allreduce_word_embedding_grads; DeepSpeed's
 * pipeline engine, _exec_reduce_tied_grads): once per iteration, after the
 * DP reduction and before the optimizer step, each GPU of the first rank
 * all-reduces its V*h/t gradient (cost_tied_dense) in the gradients' dtype
 * (memory_grad_bytes) with its peer on the last rank (comm_pair_allreduce,
 * pp ranks apart); both ranks wait for it. 0 where nothing is tied or with
 * one pipeline rank; reads s's tp, cp, dp, pp and grad_bytes
 * (cost_tied_key). */
double cost_tied_pair(const struct model *m, const struct cluster *c, const struct strategy *s,
		      int gf, int gl);

/* Whether s pays cost_tied_pair: none with vocabulary parallelism (each
 * rank holds its slice of both matrices) nor where one rank holds the
 * first and the last stage (ZB-V, DualPipeV). */
bool cost_tied_paid(const struct model *m, const struct strategy *s);

/* What cost_tied_pair reads of s (layer_costs.tied_key). */
void cost_tied_key(int *key, const struct strategy *s);

/* The tail of pipeline rank r over all its chunks; lt: the layers'
 * terms of s (cost_terms_of), or NULL. */
void cost_rank_tail(double *dp, double *hidden, double *opt, const struct model *m,
		    const struct cluster *c, const struct strategy *s,
		    const struct layer_costs *lc, const struct layer_terms *lt, int n_stages,
		    int r);

/* What cost_evaluate reads of each layer whatever the partition, the
 * schedule and the virtual stages, kept by cost_layers (layer_costs.terms;
 * one block, freed by cost_layers_free): memory_layer and memory_params of
 * each layer, the model's forward FLOPs per token and which blocks are
 * like the one before (cost_layers_alike: the model's alone), for the strategy
 * whose bytes before its stage arrays key holds, with its schedule, vp and
 * n_stages 0 (memory_layer, memory_params and compute_flops_per_token read
 * none of them, nor the stage arrays). */
#define LAYER_TERMS_KEY offsetof(struct strategy, first)

struct layer_terms {
	unsigned char key[LAYER_TERMS_KEY];
	double flops;		/* sum of compute_flops_per_token at key.seq */
	struct layer_mem *mem;	/* [n_layer] memory_layer */
	double *dense, *expert; /* [n_layer] memory_params */
	bool *alike;		/* [n_layer] l > 0 and cost_layers_alike(l - 1,
				   l) */
	int *rep;		/* [n_layer] the first layer of l's run of
				   alike blocks (l where none is before) */
	/* these terms' own number (never 0): cost_rank_tail keeps the tails
	 * of ranks of one chunk under it (layer_cost.c) */
	unsigned long long id;
};

/* cost_layer_parts(p, m, l, c, g, s, NULL), kept on the thread for the
 * layer terms lt of s (NULL: computed): under the terms' number, group g,
 * the first layer of l's run of alike blocks (whose parts are l's:
 * cost_layers_alike) and, with EP, s's schedule and vp (layer_parts reads
 * them only for the EP all-to-all, 0 without EP). */
void cost_layer_parts_kept(struct parts *p, const struct model *m, int l,
			   const struct cluster *c, int g, const struct strategy *s,
			   const struct layer_terms *lt);

/* lc's terms where they are s's (the same key), else NULL. */
const struct layer_terms *cost_terms_of(const struct layer_costs *lc, const struct strategy *s);

/* The allowance per GPU (memory.h): the user's (cluster.mem_allowance), or
 * MEM_CONTEXT_BYTES plus MEM_FRAG_SHARE of the activations and logits. */
double cost_context_bytes(const struct cluster *c);

/* The share of the activations and logits the allowance adds for the
 * allocator's fragmentation: MEM_FRAG_SHARE, or 0 where the user gave the
 * allowance. */
double cost_frag_share(const struct cluster *c);

/* What comm_pp_send reads of s (layer_costs.link_key). */
void cost_link_key(int *key, const struct strategy *s);

#endif
