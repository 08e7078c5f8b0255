/* memory.h (internal): bytes per GPU of a layer under a strategy: model
 * states (weights, gradients, optimizer) and activations. */
#ifndef AMPPLAN_MEMORY_H
#define AMPPLAN_MEMORY_H

struct layer;
struct model;
struct strategy;

/* Mixed-precision Adam, bytes per parameter (Rajbhandari et al. 2020 Sec. 3.1:
 * 2 + 2 + 12 with fp16 grads; Megatron keeps fp32 main grads: 2 + 4 + 12 = 18,
 * megatron/training/theoretical_memory_usage.py). The gradient bytes are the
 * strategy's grad_bytes (memory_grad_bytes). */
#define MEM_WEIGHT_BYTES 2.0 /* bf16 weights */
#define MEM_MASTER_BYTES 4.0 /* fp32 master weights */

/* The allowance per GPU (cluster.mem_allowance when the user sets it):
 * MEM_CONTEXT_BYTES for the CUDA context, cuBLAS / cuDNN workspaces and NCCL
 * buffers (PyTorch's own accounting: 0.3 to 1 GiB of context, a few hundred
 * MiB of NCCL buffers per communicator), plus MEM_FRAG_SHARE of the
 * activations and transient logits: the caching allocator's fragmentation
 * and the temporaries of the kernels, which grow with what is allocated
 * and freed every micro-batch. Calibrated (README "Validation"). */
#define MEM_CONTEXT_BYTES (1.5 * 1024 * 1024 * 1024)
#define MEM_FRAG_SHARE	  0.15

/* Bytes per GPU of one layer. */
struct layer_mem {
	double weights, grads, optimizer; /* model states, whole iteration */
	double act;			  /* activations kept per in-flight micro-batch */
	double extra;			  /* transient while the layer runs (fp32 logits) */
	double offload;			  /* of the activations per in-flight micro-batch,
					     those offloaded to host memory (not in act) */
};

/* Bytes per gradient of strategy s: s->grad_bytes, 4 when unset. */
double memory_grad_bytes(const struct strategy *s);

/* Bytes per Adam moment of strategy s: s->moment_bytes, 4 when unset. */
double memory_moment_bytes(const struct strategy *s);

/* Optimizer-state bytes per parameter of strategy s: the fp32 master
 * weight and the two Adam moments, MEM_MASTER_BYTES + 2 x
 * memory_moment_bytes: 12 with fp32 moments (Rajbhandari et al. 2020 Sec.
 * 3.1, K = 12), 8 with bf16 ones (Megatron's precision-aware optimizer,
 * megatron/core/optimizer/optimizer_config.py exp_avg_dtype and
 * exp_avg_sq_dtype; the master weights stay fp32). */
double memory_opt_bytes(const struct strategy *s);

/* Parameters of layer ly per GPU: *dense = (params - expert_params) / tp,
 * *expert = expert_params / (ep * etp) (strategy_etp). */
void memory_params(const struct layer *ly, const struct strategy *s,
		   double *dense, double *expert);

/* Fills lm for layer l of m under s (tp, cp, dp, ep, mbs, seq, recompute,
 * zero, sp, attn, fp8, grad_bytes). */
/* Bytes per token per GPU that fine-grained activation offloading moves
 * to host memory from block l under s (s->offload_modules; 0 for the
 * embedding and the head). See memory.c. */
double memory_offload(const struct model *m, int l, const struct strategy *s);

void memory_layer(struct layer_mem *lm, const struct model *m, int l,
		  const struct strategy *s);

/* ZeRO-3's gathered layers: bytes per GPU that every pipeline rank holds
 * beside its shards while the layers run (memory.c has the terms and the
 * sources), *weights the unsharded parameters of the largest two
 * neighbouring layers, *grads their unsharded gradients; both 0 below
 * ZeRO-3. */
void memory_gathered(const struct model *m, const struct strategy *s, double *weights,
		     double *grads);

/* Vocabulary parallelism (s->vocab_par): dense parameters per GPU of the
 * embedding and the head that each of the pp ranks holds, (P_emb + P_head)
 * / (tp * pp), a tied matrix counted once; 0 without it. */
double memory_vocab_params(const struct model *m, const struct strategy *s);
/* Vocabulary parallelism: bytes per GPU that every pipeline rank holds of
 * the embedding, head and loss (memory.c has the terms and the source):
 * states, act (held once per rank, not per micro-batch in flight) and
 * extra (the logits of its V/pp columns). All 0 without it. */
void memory_vocab(struct layer_mem *lm, const struct model *m, const struct strategy *s);

#endif
