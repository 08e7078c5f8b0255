/* memory.h (internal): bytes per GPU of a layer under a strategy: model
 * states (weights, gradients, optimizer) and activations. */
#ifndef AMPPLAN_MEMORY_H
#define AMPPLAN_MEMORY_H

struct layer;
struct model;
struct strategy;

/* Mixed-precision Adam, bytes per parameter (Rajbhandari et al. 2020 Sec. 3.1:
 * 2 + 2 + 12 with fp16 grads; Megatron keeps fp32 main grads: 2 + 4 + 12 = 18,
 * megatron/training/theoretical_memory_usage.py). */
#define MEM_WEIGHT_BYTES 2.0	/* bf16 weights */
#define MEM_GRAD_BYTES 4.0	/* fp32 gradients (main_grad) */
#define MEM_OPT_BYTES 12.0	/* fp32 master weights, Adam m and v */

/* Fixed per-GPU allowance for the CUDA context, NCCL buffers, the allocator's
 * fragmentation and cuBLAS/attention workspace (COSTMODEL.md: about 1 to 3 GB). */
#define MEM_ALLOWANCE_BYTES (2.0 * 1024 * 1024 * 1024)

/* Bytes per GPU of one layer. */
struct layer_mem {
	double weights, grads, optimizer; /* model states, whole iteration */
	double act;	/* activations kept per in-flight micro-batch */
	double extra;	/* transient while the layer runs (fp32 logits) */
};

/* Parameters of layer ly per GPU: *dense = (params - expert_params) / tp,
 * *expert = expert_params / (ep * tp). */
void memory_params(const struct layer *ly, const struct strategy *s,
		   double *dense, double *expert);

/* Fills lm for layer l of m under s (tp, cp, dp, ep, mbs, seq, recompute,
 * zero, sp). */
void memory_layer(struct layer_mem *lm, const struct model *m, int l,
		  const struct strategy *s);

#endif
