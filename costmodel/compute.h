/* compute.h (internal): compute time of a layer per micro-batch on one GPU:
 * analytic (FLOPs over efficient peak) or from a measured profile, and the
 * memory-bound optimizer step. */
#ifndef AMPPLAN_COMPUTE_H
#define AMPPLAN_COMPUTE_H

#include "strategy.h"

struct err;
struct gpu_type;
struct model;

/* Bytes of HBM traffic per parameter of a mixed-precision Adam step,
 * calibrated (compute_optimizer). */
#define COMPUTE_ADAM_BYTES 160.0

/* Fraction of the HBM bandwidth that memory-bound kernels (norms,
 * activations, residual adds, softmax, rotary, cross-entropy) reach: STREAM-
 * like copy kernels reach about 80-90% of the datasheet bandwidth (NVIDIA's
 * bandwidthTest, BabelStream on A100/H100); smaller tensors and reductions
 * less. Not fitted: a round figure of that range. */
#define COMPUTE_HBM_EFF 0.8

/* The share of the GPU's host link (gpu_type.host_bw, PCIe one direction)
 * that activation offloading's copies between pinned host memory and the
 * GPU reach: NVIDIA's bandwidthTest with pinned memory reports about 80%
 * of a PCIe x16 link's per-direction rate (about 26 of Gen4's 31.5 GB/s).
 * An assumption, not fitted: no validation run offloads. */
#define OFFLOAD_COPY_EFF 0.8

/* Attention-kernel constants (Dao 2023, FlashAttention-2, Sec. 4.1 and
 * Figs. 4-7: on A100 with head dim 128 and causal masking FA-2 reaches
 * about 70% of peak forward and 50-55% backward, FlashAttention 1 about
 * half of FA-2's rate; the backward runs 2.5x the forward's FLOPs, as it
 * recomputes QK^T). Flash rates are relative to the GPU's GEMM ceiling
 * eff_max; a causal flash kernel skips the masked half of the scores.
 * FLASH_RATE, FLASH1_RATE and FLASH_BWD_RATE are calibrated on the
 * validation files (README "Validation"): FA-2's forward at 44% of an
 * A100's peak (0.59 x 0.75) sits below the paper's kernel benchmarks, as it
 * absorbs what the kernel costs inside a training step (layout transposes,
 * short sequences, fewer heads per GPU under TP). A GPU type may set its
 * own rate (cluster file flash_efficiency: Hopper's FlashAttention-3 and
 * cuDNN kernels reach about 75%, Shah et al. 2024). */
#define FLASH_RATE	0.59 /* FA-2 forward vs eff_max */
#define FLASH1_RATE	0.39 /* FA-1 forward vs eff_max */
#define FLASH_BWD_FLOPS 2.5  /* backward FLOPs / forward FLOPs */
#define FLASH_BWD_RATE	0.51 /* backward rate / forward rate */
#define CAUSAL_SHARE	0.5  /* of QK^T and AV a causal flash kernel runs */

/* Memory-bound traffic in bf16 tensors (reads + writes) of one token's row
 * (Korthikanti et al. 2022 Sec. 4.1 lists what each part reads and
 * writes; counted here per kernel launch):
 * - a fused norm reads x and writes y: 2; PyTorch's eager RMSNorm (to fp32,
 *   pow, mean, rsqrt multiply, back to bf16, times the weight) moves 18 by
 *   this count; calibrated: 32 (NORM_UNFUSED; its fp32 intermediates kept
 *   for autograd and its backward's extra passes);
 * - a residual add reads two rows and writes one: 3 (two per block);
 * - the activation reads its inputs and writes its output: SwiGLU 3 rows
 *   of f, GeLU / squared ReLU (fused with the bias) 2;
 * - rotary embedding reads and writes q and k (fused kernel): 2;
 *   torchtitan's eager apply_rotary_emb (strategy.unfused_pointwise)
 *   casts q and k to fp32 complex (2 + 4 bytes an element), multiplies by
 *   freqs_cis (4 + 4) and casts back (4 + 2): 20 bytes, 10 by this count
 *   (ROPE_UNFUSED); eager SwiGLU runs silu (reads and writes a row of f)
 *   and the product (reads two, writes one): 5 (SWIGLU_UNFUSED). Counted
 *   from the kernels torchtitan's models/llama3 code launches, not
 *   calibrated; their extra launches are not counted;
 * - without flash attention, per score (a/t x s per token): QK^T writes
 *   it, Megatron's fused scale-mask-softmax reads and writes, AV reads: 4
 *   by this count, calibrated 0.7 (SCORE_FUSED: the causal kernel touches
 *   only the lower triangle, and much of a head's scores stays in L2);
 *   eager attention scales, masks, softmaxes in fp32, casts and drops out
 *   in separate kernels: about 10, calibrated 15 (SCORE_UNFUSED);
 * - the loss, per logit of the GPU's vocabulary shard, in bytes of its own
 *   (fp32) kernels, forward and backward apart (CE_FWD_BYTES,
 *   CE_BWD_BYTES): Megatron's GPT model casts the bf16 logits to fp32
 *   (reads 2, writes 4), and its vocabulary-parallel cross-entropy
 *   (megatron/core/tensor_parallel/cross_entropy.py) takes the max (4),
 *   subtracts it in place (8), exponentiates in place (8), sums (4) and
 *   divides by the sum in place (8), keeping the softmax: 38 forward;
 *   its backward multiplies the softmax by the loss's gradient in place
 *   (8) and the cast's backward writes it in bf16 (6): 14. Counted, not
 *   calibrated; cross_entropy_loss_fusion (NeMo's recipes run it) is
 *   counted the same (README "Validation");
 * - the embedding writes its output row: 2 (plus the position add, 3,
 *   with learned positions);
 * - an MoE block's token permutation (Megatron-Core's all-to-all
 *   dispatcher, moe_utils.py permute and unpermute): permute reads each
 *   token's row and writes its top_k copies in expert order, unpermute
 *   reads the top_k expert outputs and writes their probability-weighted
 *   sum: 2 + 2 top_k rows of h (MOE_PERMUTE_ROWS) per token of the GPU.
 * The backward pass moves twice the forward's bytes (it reads the saved
 * input and the output gradient and writes the input gradient), the
 * loss's excepted. */
#define NORM_FUSED     2.0
#define NORM_UNFUSED   32.0
#define RESIDUAL       3.0
#define ROPE_UNFUSED   10.0
#define SWIGLU_UNFUSED 5.0
#define SCORE_FUSED    0.7
#define SCORE_UNFUSED  15.0
#define CE_FWD_BYTES   38.0
#define CE_BWD_BYTES   14.0
#define MEM_BWD	       2.0

/* Bytes per element of an FP8 cast that Transformer Engine runs as a
 * kernel of its own (cast_transpose: it reads the bf16 tensor, 2, and
 * writes it in FP8 and transposed in FP8 for the weight gradient, 1 + 1:
 * Transformer Engine's fp8_cast_transpose). Counted, not calibrated;
 * which casts run apart: compute.c fp8_casts. */
#define FP8_CAST_BYTES 4.0

/* Fixed seconds per transformer block per forward pass of a micro-batch
 * beside its kernels' work: the launch and scheduling gaps of its few
 * dozen kernels (a kernel launch costs about 5 us of CPU time, and small
 * kernels leave the GPU idle between them; PyTorch profiler traces of
 * Megatron blocks show 20-40 kernels a forward). The backward pass has
 * MEM_BWD times as many; the embedding and the head count as one block.
 * Calibrated (README "Validation"). */
#define LAYER_OVERHEAD_S 38e-6

/* Fixed seconds per MoE block per forward pass beside LAYER_OVERHEAD_S: its
 * router (gate GEMM, softmax, top-k, the auxiliary loss and its
 * bookkeeping), the dispatcher's index computations, capacity padding and
 * splits, each a small kernel (a hundred or so a forward in Megatron-Core
 * 0.9-0.11's MoELayer, against a dense block's 20-40), and the host
 * synchronisation of the all-to-all's split sizes, after which the GPU
 * waits on the launches; backward MEM_BWD x. Calibrated on the BF16 rows
 * of dgxc_h100_grok1.csv (README "Validation"). */
#define MOE_LAYER_OVERHEAD_S 250e-6

/* Seconds per micro-batch of one layer on one GPU (compute only): a
 * roofline per layer part (Calculon, Isaev et al. SC'23): GEMMs at their
 * FLOP rate, the attention core at its kernel's rate, the rest at HBM
 * bandwidth, plus LAYER_OVERHEAD_S; the parts run one after the other. */
struct layer_time {
	double fwd, bwd;  /* forward, backward */
	double recompute; /* recomputation before the backward pass */
	double attn_fwd;  /* of fwd, the attention core (QK^T, softmax, AV) */
	double attn_bwd;  /* of bwd, the attention core's backward */
	double gemm_fwd;  /* of fwd, the GEMMs of a block's linear layers
				   (what TP communication overlaps with; their
				   backward is 2 x this) */
	double mem_fwd;	  /* of fwd, the memory-bound kernels */
	/* Of fwd, what each module of selective recomputation reruns
	 * (strategy.recompute_modules; recompute is their sum over the
	 * strategy's modules, core_attn's being attn_fwd): */
	double norm_fwd;   /* layernorm: the two norms' traffic */
	double mlp_fwd;	   /* mlp: a dense block's MLP GEMMs and activation */
	double act_fwd;	   /* moe_act: an MoE block's routed experts'
			      activation */
	double shared_fwd; /* shared_experts: their GEMMs and activation */
	double moe_fwd;	   /* moe: the MoE layer (routed and shared experts,
			      permutations, router), its all-to-alls apart */
	double mla_up_fwd; /* mla_up_proj: MLA's up projections and RoPE */
	double offload;	   /* activation offloading: the seconds of one copy
			      of the layer's offloaded bytes (memory_offload,
			      as memory_layer keeps them) over the host link
			      at OFFLOAD_COPY_EFF; once to the host in the
			      forward pass, once back for the backward */
};

/* Forward FLOPs per token of layer l at sequence length seq (the model's
 * flops_per_token with a block's attention term, model_attn_flops, rescaled
 * from m->seq to seq; m->seq <= 0 means no rescaling), and of it the
 * attention core, 4*seq*a*d for full attention (0 for the embedding and the
 * head). */
double compute_flops_per_token(const struct model *m, int l, int seq);
double compute_attn_flops_per_token(const struct model *m, int l, int seq);

/* Recomputed FLOPs per token of layer l under s: a block's whole forward
 * (full), its attention core (selective), else 0. */
double compute_recompute_flops_per_token(const struct model *m, int l,
					 const struct strategy *s);

/* Achieved fraction of peak for one GEMM of w FLOPs on one GPU:
 * eff_max * w / (w + eff_half_flop); eff_max when eff_half_flop is 0. */
double compute_eff(const struct gpu_type *g, double w);

/* Fills t for layer l on a GPU of type g under s (tp, cp, mbs, seq, sp,
 * recompute, attn, unfused_norm, fp8, grad_acc_unfused, grad_bytes). A measured profile of the layer for g's name, s->tp and
 * s->seq overrides the analytic time. Returns 0, or -1 with e set if a
 * measured point it would use is invalid (mbs < 1, fwd_s <= 0, bwd_s < 0,
 * or not finite). */
int compute_layer(struct layer_time *t, const struct model *m, int l,
		  const struct gpu_type *g, const struct strategy *s,
		  struct err *e);

/* Seconds of selective recomputation of one layer whose forward parts are
 * t, rerunning the modules mods (enum recompute_module bits): core_attn
 * the attention core (attn_fwd; Korthikanti et al. 2022 Sec. 4.2.2),
 * layernorm the norms (norm_fwd), mlp a dense MLP's GEMMs and activation
 * (mlp_fwd), moe_act the routed experts' activation (act_fwd),
 * shared_experts the shared experts (shared_fwd), moe the whole MoE layer
 * (moe_fwd, which holds moe_act's and shared_experts'), mla_up_proj MLA's
 * up projections (mla_up_fwd): Megatron-Core's recompute_modules, each
 * rerun from its saved input before the backward (transformer_layer.py,
 * mlp.py, experts.py, shared_experts.py, multi_latent_attention.py). */
double compute_selective(const struct layer_time *t, unsigned mods);

/* compute_selective by module: out[i] the seconds of the module of bit
 * 1u << i (0 where mods lacks it, and for moe_act and shared_experts when
 * moe, which holds them, is in mods); they add up to compute_selective. */
void compute_selective_parts(const struct layer_time *t, unsigned mods, double out[RM_COUNT]);

/* Seconds of one Adam step over params parameters on a GPU of type g
 * (memory-bound), whose two moments take moment_bytes each (4 fp32, 2
 * bf16): COMPUTE_ADAM_BYTES per parameter with fp32 moments, less the 4 x
 * (4 - moment_bytes) bytes of reading and writing m and v in a narrower
 * dtype; 0 if g's hbm_bw is unknown (<= 0). */
double compute_optimizer(const struct gpu_type *g, double params, double moment_bytes);

#endif
