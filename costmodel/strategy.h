/* strategy.h: the one struct that describes a parallel training strategy:
 * degrees, batch, schedule, recomputation, ZeRO, and the layer-to-stage
 * partition with the node group that hosts each pipeline rank. */
#ifndef AMPPLAN_STRATEGY_H
#define AMPPLAN_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>

#include "schedule.h"

/* Most pipeline stages, virtual stages included (pp * vp). */
#define MAX_STAGES 256
/* Most node groups in a cluster. */
#define MAX_GROUPS 16

enum recompute { RECOMPUTE_NONE,
		 RECOMPUTE_SELECTIVE,
		 RECOMPUTE_FULL,
		 RECOMPUTE_COUNT };
/* The modules that selective recomputation reruns (Megatron-Core's
 * --recompute-modules; bits of strategy.recompute_modules): the attention
 * core (core_attn, the default), the two norms' outputs (layernorm), a
 * dense block's MLP (mlp), an MoE block's expert activation function
 * (moe_act), an MoE block's whole MoE layer with its token dispatch (moe;
 * it takes in moe_act and shared_experts), its shared experts
 * (shared_experts), multi-head latent attention's up projections
 * (mla_up_proj). */
enum recompute_module { RM_CORE_ATTN = 1,
			RM_LAYERNORM = 2,
			RM_MLP = 4,
			RM_MOE_ACT = 8,
			RM_MOE = 16,
			RM_SHARED_EXPERTS = 32,
			RM_MLA_UP_PROJ = 64,
			RM_ALL = 127 };
/* The number of module bits: bit i is 1u << i, i < RM_COUNT. */
#define RM_COUNT 7
/* The modules whose saved inputs fine-grained activation offloading moves
 * to host memory in the forward pass and back for the backward pass
 * (Megatron-Core's fine-grained activation offloading, --offload-modules;
 * bits of strategy.offload_modules): the attention norm's input
 * (attn_norm), the QKV projection's input (qkv_linear), the attention
 * core's Q, K and V (core_attn), the output projection's input
 * (attn_proj), the MLP norm's input (mlp_norm), an MoE block's routed
 * experts' first GEMM input (expert_fc1) and their activation function's
 * input (moe_act). memory.c memory_offload has their bytes. */
enum offload_module { OM_ATTN_NORM = 1,
		      OM_QKV_LINEAR = 2,
		      OM_CORE_ATTN = 4,
		      OM_ATTN_PROJ = 8,
		      OM_MLP_NORM = 16,
		      OM_EXPERT_FC1 = 32,
		      OM_MOE_ACT = 64 };
/* The number of offload module bits. */
#define OM_COUNT 7
/* How context parallelism moves the sequence (Megatron's --cp-comm-type):
 * a ring passing K and V (p2p; Liu et al. 2023), all-to-alls that give each
 * rank whole sequences of heads / cp heads (a2a; DeepSpeed-Ulysses, Jacobs
 * et al. 2023), or all-to-alls within groups of cp_a2a ranks and a ring
 * across the groups (a2a+p2p, with --hierarchical-context-parallel-sizes). */
enum cp_comm { CP_P2P,
	       CP_A2A,
	       CP_A2A_P2P,
	       CP_COMM_COUNT };
/* The attention kernel the trainer runs: FlashAttention-2 or later (and
 * cuDNN / Transformer Engine fused attention), FlashAttention 1, Megatron's
 * fused scale-mask-softmax over materialised s x s scores, or eager
 * PyTorch attention (scale, mask, softmax, dropout as separate kernels). */
enum attention { ATTN_FLASH,
		 ATTN_FLASH1,
		 ATTN_FUSED_SOFTMAX,
		 ATTN_UNFUSED,
		 ATTN_COUNT };
/* Where an MoE model's load-balancing loss takes its expert loads: over
 * each micro-batch (Megatron's aux_loss, and DeepSeek's per-sequence form)
 * or over the global batch (Megatron's global_aux_loss; Qiu et al. 2025,
 * "Demons in the Detail"), which lets each micro-batch's routing follow
 * its few sequences (moe.h). */
enum moe_balance { MOE_BALANCE_MICRO_BATCH,
		   MOE_BALANCE_GLOBAL_BATCH,
		   MOE_BALANCE_COUNT };
/* Megatron-Core's MoE token dispatchers (--moe-token-dispatcher-type;
 * comm_ep_fwd has their volumes): all-to-all of each token's top_k copies,
 * all-gather of the EP group's tokens (each rank picks its experts'), or
 * flex (DeepEP: the all-to-all sending each token once per destination
 * node, forwarded over NVLink inside it). */
enum moe_dispatcher { MOE_DISPATCH_ALLTOALL,
		      MOE_DISPATCH_ALLGATHER,
		      MOE_DISPATCH_FLEX,
		      MOE_DISPATCH_COUNT };

/* World size = tp * cp * pp * dp. Virtual stage k (0 <= k < n_stages) holds
 * layers [first[k], first[k+1]) of the model's layer list and runs on
 * pipeline rank strategy_rank(s, k) (k % pp, Megatron's interleaved order,
 * or ZB-V's V), whose GPUs all belong to node group group[that rank]. Plain
 * value type: copy with '='. */
struct strategy {
	int tp, cp, pp, dp, ep; /* ep divides tp / etp * cp * dp (MoE
				   parallel folding); 1 for dense models */
	int etp;		/* expert tensor-parallel degree (MoE layers;
				   Megatron's --expert-tensor-parallel-size,
				   divides tp); 0 reads as tp (strategy_etp) */
	int vp;			/* virtual stages per pipeline rank (1 = none) */
	int mbs;		/* micro-batch size, sequences */
	int gbs;		/* global batch, sequences */
	int seq;		/* tokens per sequence */
	int micro_batches;	/* per DP replica: gbs / (dp * mbs) */
	enum schedule schedule;
	enum recompute recompute;
	enum cp_comm cp_comm;		    /* with cp > 1 */
	int cp_a2a;			    /* CP_A2A_P2P: ranks of each all-to-all
				   group (1 < cp_a2a < cp, divides cp) */
	int zero;			    /* 0 none, 1 distributed optimizer, 2, 3 */
	bool sp;			    /* sequence parallelism (tp > 1) */
	enum attention attn;		    /* attention kernel */
	bool unfused_norm;		    /* norms as separate PyTorch kernels (no fused
				   RMSNorm / LayerNorm kernel) */
	bool unfused_pointwise;		    /* RoPE and the SwiGLU product as
				   separate eager PyTorch kernels
				   (torchtitan without torch.compile) */
	bool fsdp;			    /* ZeRO >= 1 run as FSDP2 does
				   (torchtitan): every micro-batch's forward
				   and backward gather each layer's
				   parameters (ZeRO-3 traffic,
				   strategy_layer_gathers) */
	bool fp8;			    /* GEMMs in FP8 (Transformer Engine) */
	bool tp_overlap;		    /* TP comm overlapped with GEMMs
				   (--tp-comm-overlap) */
	bool grad_overlap;		    /* DP gradient reduction overlapped with the
				   backward pass (--overlap-grad-reduce) */
	bool param_overlap;		    /* ZeRO parameter all-gather overlapped with
				   the forward pass (--overlap-param-gather) */
	bool p2p_split;			    /* without SP, each TP rank sends 1/tp of a
				   pipeline boundary's tensor and the
				   receiving stage all-gathers it over TP
				   (DeepSpeed's pipeline engine:
				   pipe_partitioned and grad_partitioned);
				   false: each sends the whole (Megatron-Core) */
	bool grad_acc_unfused;		    /* each micro-batch's weight gradients are
				   added to the gradient buffer in a pass of
				   their own (DeepSpeed, torchtitan, eager
				   PyTorch); false: the weight-gradient GEMMs
				   accumulate into it (Megatron's
				   --gradient-accumulation-fusion) */
	enum moe_balance moe_balance;	    /* MoE models: the balancing loss's
					   scope */
	double moe_capacity;		    /* MoE: expert capacity factor (tokens beyond
				   capacity x the mean are dropped); 0:
				   dropless */
	int grad_bytes;			    /* bytes per gradient kept and reduced: 4 (fp32
				   main gradients, Megatron's default) or 2;
				   0 reads as 4 */
	unsigned recompute_modules;	    /* with RECOMPUTE_SELECTIVE, the modules
				   rerun (enum recompute_module bits); 0 reads
				   as RM_CORE_ATTN (strategy_rc_modules) */
	unsigned offload_modules;	    /* the modules whose saved inputs go
				   to host memory and back (enum
				   offload_module bits; 0: none; planning
				   only, no trainer here runs it) */
	enum moe_dispatcher moe_dispatcher; /* MoE token dispatcher */
	bool moe_pad;			    /* MoE with a capacity factor: every expert's
				   input padded to its capacity, so that each
				   computes exactly capacity x the mean
				   (Megatron's
				   --moe-pad-expert-input-to-capacity) */
	bool grouped_gemm;		    /* MoE: the local experts' GEMMs run as one
				   grouped GEMM (Megatron-Core's GroupedMLP,
				   --moe-grouped-gemm); false: one GEMM per
				   expert (SequentialMLP) */
	bool ep_overlap;		    /* MoE under 1F1B or interleaved 1F1B:
				   each micro-batch's expert all-to-alls run
				   under another micro-batch's compute, a
				   forward paired with a backward
				   (Megatron-Core's
				   --overlap-moe-expert-parallel-comm with
				   --delay-wgrad-compute;
				   schedule_ep_paired) */
	int moment_bytes;		    /* bytes per Adam moment (exp_avg and
				   exp_avg_sq each): 4 (fp32, the default) or
				   2 (bf16: Megatron's precision-aware
				   optimizer, --exp-avg-dtype and
				   --exp-avg-sq-dtype bf16); 0 reads as 4 */
	int wgrad_defer;		    /* micro-batches whose LM head's
				   weight-gradient GEMM waits for the
				   pipeline flush (Megatron's
				   --defer-embedding-wgrad-compute, with
				   --wgrad-deferral-limit N): 0 none, -1 all,
				   N > 0 the first N (strategy_deferred) */
	bool vocab_par;			    /* vocabulary parallelism (Yeung et al. 2024,
				   "Balancing Pipeline Parallelism with
				   Vocabulary Parallelism"): the embedding,
				   the head and the loss split over all pp
				   ranks (1F1B only; no trainer here runs it) */
	int slices;			    /* SlimPipe (Li et al. 2025, arXiv
				   2504.14519): each micro-batch cut along the
				   sequence into this many slices run as 1F1B
				   units (1F1B only; no trainer here runs it);
				   0 or 1: none (strategy_slices) */
	unsigned short uneven[MAX_GROUPS];  /* uneven per-replica
				   micro-batches (planning only; no trainer
				   here runs them): uneven[i] the micro-batches
				   per iteration of all the DP replicas on
				   part i of the strategy's mixed rank
				   (cost_mixed_group), spread over them as
				   evenly as integers go; they sum to dp x
				   micro_batches. All 0: every replica runs
				   micro_batches (strategy_uneven) */
	int n_stages;			    /* pp * vp */
	unsigned short first[MAX_STAGES + 1];
	unsigned char group[MAX_STAGES];
};

/* Short names as printed and parsed (schedules: schedule.h): "none",
 * "selective", "full"; "flash", "flash1", "fused-softmax", "unfused". */
const char *recompute_name(enum recompute r);
/* "p2p", "a2a", "a2a+p2p" (Megatron's names). */
const char *cp_comm_name(enum cp_comm x);
int cp_comm_parse(const char *name);
const char *moe_balance_name(enum moe_balance x);
/* "alltoall", "allgather", "flex" (Megatron's names); parse: -1 unknown. */
const char *moe_dispatcher_name(enum moe_dispatcher x);
int moe_dispatcher_parse(const char *name);
int moe_balance_parse(const char *name);
const char *attention_name(enum attention a);
/* The gradients' dtype as printed: "fp32" for grad_bytes 4 (or unset),
 * else "fp16" when the model trains in fp16 (fp16 true), else "bf16". */
const char *grad_dtype_name(const struct strategy *s, bool fp16);
/* The Adam moments' dtype as printed: "bf16" for moment_bytes 2, else
 * "fp32". */
const char *optim_dtype_name(const struct strategy *s);
/* Returns the enum value, or -1 for an unknown name. */
int recompute_parse(const char *name);
int attention_parse(const char *name);

/* The recompute_modules in effect: 0 without selective recomputation,
 * else s->recompute_modules, RM_CORE_ATTN when unset. */
static inline unsigned strategy_rc_modules(const struct strategy *s)
{
	if (s->recompute != RECOMPUTE_SELECTIVE)
		return 0;
	return s->recompute_modules ? s->recompute_modules : RM_CORE_ATTN;
}

/* Megatron-Core's names of the module bits, joined by sep into buf (n
 * bytes; cut to fit): "core_attn", "layernorm", "mlp", "moe_act", "moe",
 * "shared_experts", "mla_up_proj".
 * Returns buf. */
char *recompute_modules_name(unsigned mask, char sep, char *buf, size_t n);
/* The bits of a '+'-separated list of those names ("core_attn+mlp"), or
 * -1 for an empty list or an unknown name. */
int recompute_modules_parse(const char *list);
/* As recompute_modules_name and _parse, for the offload module bits:
 * "attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm",
 * "expert_fc1", "moe_act". */
char *offload_modules_name(unsigned mask, char sep, char *buf, size_t n);
int offload_modules_parse(const char *list);

/* Orders two strategies by simplicity, for rankings that must break an
 * exact tie of time and memory: fewer parallel dimensions above 1 (TP,
 * CP, PP, EP) first, then no CP before CP, then no EP before EP (data
 * parallelism before expert parallelism). Returns < 0 when a is the
 * simpler, > 0 when b is, 0 when these rules do not tell them apart. */
int strategy_simpler(const struct strategy *a, const struct strategy *b);

/* The pipeline rank of virtual stage k: k % pp, or under ZB-V (Qi et al.
 * 2024 Sec. 5; torch.distributed.pipelining's "v" style) and DualPipeV
 * stage k on rank k for k < pp and on rank 2 pp - 1 - k after, so that
 * rank r holds stages r and 2 pp - 1 - r and the last stage sits beside
 * the first. */
static inline int strategy_rank(const struct strategy *s, int k)
{
	if (schedule_v(s->schedule) && k >= s->pp)
		return 2 * s->pp - 1 - k;
	return k % s->pp;
}

/* The expert tensor-parallel degree, etp read as tp when unset (0). The
 * MoE layers fold the tp * cp * dp GPUs of a stage into etp x ep x edp
 * (Megatron's MoE parallel folding): each expert split over etp GPUs,
 * experts over ep, the rest replicas, edp = tp * cp * dp / (etp * ep). */
static inline int strategy_etp(const struct strategy *s)
{
	return s->etp > 0 ? s->etp : s->tp;
}

/* The expert-data-parallel degree: the replicas of each expert shard. */
static inline int strategy_edp(const struct strategy *s)
{
	int n = s->tp * s->cp * s->dp / (strategy_etp(s) * (s->ep > 0 ? s->ep : 1));

	return n > 0 ? n : 1;
}

/* Whether the parameters are gathered layer by layer in every forward
 * and backward (ZeRO-3, or FSDP2 at any ZeRO stage >= 1) rather than once
 * after the optimizer step (ZeRO-1/2, Megatron's distributed optimizer). */
static inline bool strategy_layer_gathers(const struct strategy *s)
{
	return s->zero == 3 || (s->fsdp && s->zero >= 1);
}

/* Virtual stages per pipeline rank, vp read as 1 when unset (0). */
static inline int strategy_vp(const struct strategy *s)
{
	return s->vp > 0 ? s->vp : 1;
}

/* The micro-batches per DP replica of s: s->micro_batches when set, else
 * gbs / (dp x mbs), at least 1. */
static inline int strategy_micro_batches(const struct strategy *s)
{
	if (s->micro_batches > 0)
		return s->micro_batches;
	return s->dp > 0 && s->mbs > 0 && s->gbs / (s->dp * s->mbs) > 0 ? s->gbs / (s->dp * s->mbs) : 1;
}

/* The micro-batches whose LM-head weight gradient s defers to the
 * pipeline flush (s->wgrad_defer; Megatron defers the first N of the
 * iteration's, all with limit 0): none without a pipeline (Megatron
 * refuses it) or with vocabulary parallelism (no LM head of its own). */
static inline int strategy_deferred(const struct strategy *s)
{
	int m = strategy_micro_batches(s);

	if (!s->wgrad_defer || s->pp < 2 || s->vocab_par)
		return 0;
	return s->wgrad_defer < 0 || s->wgrad_defer > m ? m : s->wgrad_defer;
}

/* SlimPipe's slices per micro-batch, slices read as 1 when unset (0). */
static inline int strategy_slices(const struct strategy *s)
{
	return s->slices > 1 ? s->slices : 1;
}

/* Whether s runs uneven per-replica micro-batch counts (s->uneven). */
static inline bool strategy_uneven(const struct strategy *s)
{
	return s->uneven[0] > 0;
}

/* The j-th virtual stage (0 <= j < vp) of pipeline rank q, in the order
 * of the model's layers: the inverse of strategy_rank. */
static inline int strategy_stage(const struct strategy *s, int q, int j)
{
	if (schedule_v(s->schedule) && j > 0)
		return 2 * s->pp - 1 - q;
	return q + j * s->pp;
}

/* Layers in virtual stage k. */
static inline int stage_layers(const struct strategy *s, int k)
{
	return s->first[k + 1] - s->first[k];
}

#endif
