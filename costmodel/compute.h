/* compute.h (internal): compute time of a layer per micro-batch on one GPU:
 * analytic (FLOPs over efficient peak) or from a measured profile, and the
 * memory-bound optimizer step. */
#ifndef AMPPLAN_COMPUTE_H
#define AMPPLAN_COMPUTE_H

struct err;
struct gpu_type;
struct model;
struct strategy;

/* Bytes of HBM traffic per parameter of a mixed-precision Adam step,
 * calibrated (compute_optimizer). */
#define COMPUTE_ADAM_BYTES 160.0

/* Seconds per micro-batch of one layer on one GPU (compute only). */
struct layer_time {
	double fwd, bwd;	/* forward, backward (2 x forward analytic) */
	double recompute;	/* recomputation before the backward pass */
	double attn_fwd;	/* of fwd, the attention core (QK^T, softmax, AV) */
};

/* Forward FLOPs per token of layer l at sequence length seq (the model's
 * flops_per_token with a block's 4*s*a*d attention term rescaled from m->seq
 * to seq; m->seq <= 0 means no rescaling), and of it the attention core
 * 4*seq*a*d (0 for the embedding and the head). */
double compute_flops_per_token(const struct model *m, int l, int seq);
double compute_attn_flops_per_token(const struct model *m, int l, int seq);

/* Recomputed FLOPs per token of layer l under s: a block's whole forward
 * (full), its attention core (selective), else 0. */
double compute_recompute_flops_per_token(const struct model *m, int l,
					 const struct strategy *s);

/* Achieved fraction of peak for w FLOPs per GPU per micro-batch:
 * eff_max * w / (w + eff_half_flop); eff_max when eff_half_flop is 0. */
double compute_eff(const struct gpu_type *g, double w);

/* Fills t for layer l on a GPU of type g under s (tp, cp, mbs, seq,
 * recompute). A measured profile of the layer for g's name, s->tp and
 * s->seq overrides the analytic time. Returns 0, or -1 with e set if a
 * measured point it would use is invalid (mbs < 1, fwd_s <= 0, bwd_s < 0,
 * or not finite). */
int compute_layer(struct layer_time *t, const struct model *m, int l,
		  const struct gpu_type *g, const struct strategy *s,
		  struct err *e);

/* Seconds of one Adam step over params parameters on a GPU of type g
 * (memory-bound); 0 if g's hbm_bw is unknown (<= 0). */
double compute_optimizer(const struct gpu_type *g, double params);

#endif
