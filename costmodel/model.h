/* model.h: a model as the cost model sees it: its dimensions and the list of
 * layers (embedding, transformer blocks, final norm + LM head + loss), each
 * with parameters, FLOPs, activation and output sizes, and optional measured
 * times (AMP, Li et al. 2022, Sec. 3.2: per-layer profiles per GPU type).
 * input/profile.h reads one from a file and writes one back. */
#ifndef AMPPLAN_MODEL_H
#define AMPPLAN_MODEL_H

#include <stdbool.h>

struct err;
struct cluster;

enum layer_kind { LAYER_EMBEDDING,
		  LAYER_BLOCK,
		  LAYER_HEAD };
/* GeLU and squared ReLU (Nemotron-4) MLPs have two matrices, SwiGLU three. */
enum ffn_kind { FFN_GELU,
		FFN_SWIGLU,
		FFN_RELU2 };

/* One measured point of a layer: forward and backward seconds for one
 * micro-batch of mbs sequences of seq tokens on one GPU of type gpu at TP
 * degree tp. */
struct layer_measure {
	char *gpu;
	int tp, mbs, seq;
	double fwd_s, bwd_s;
};

/* One layer, whole (before any TP split). "Per token" means per token of a
 * micro-batch at the model's sequence length seq. */
struct layer {
	enum layer_kind kind;
	double params;		       /* parameters, dense and expert */
	double expert_params;	       /* of which MoE expert weights (split by EP) */
	double flops_per_token;	       /* forward FLOPs per token, including the
				    attention-score term 4*s*h of a block */
	double act_bytes_per_token;    /* activation bytes kept for backward per
				    token, no recompute, sequence-parallel form,
				    attention scores not stored (Korthikanti
				    2022 Sec. 4.1: 34*h for GPT, Megatron's
				    (18 + 4*f/h)*h for SwiGLU) */
	double out_bytes_per_token;    /* bytes sent to the next stage per token */
	struct layer_measure *measure; /* may be NULL */
	int n_measure;
};

/* A model: dimensions and n_layer = layers + 2 entries in layer[]
 * (layer[0] the embedding, layer[n_layer-1] the head). Owns all its memory. */
/* Most bins of a document-length histogram (model.doc_lengths). */
#define MODEL_MAX_DOC_BINS 64

struct model {
	char *name;
	int hidden, layers, heads, kv_heads, head_dim, ffn, vocab, seq, gbs;
	enum ffn_kind ffn_kind;
	bool tied;		     /* tie_word_embeddings */
	bool bias;		     /* linear and norm layers carry biases (GPT-2) */
	bool learned_pos;	     /* learned position embeddings of max_pos rows
				   (GPT-2); else RoPE, no parameters */
	int max_pos;		     /* max_position_embeddings */
	int dtype_bytes;	     /* 2 for bf16/fp16 */
	bool fp16;		     /* the training dtype is fp16 (not bf16) */
	int experts, top_k, moe_ffn; /* 0 for dense models */
	/* What a trainer must be told to train this very model (0 / false /
	   "" when the config does not say; the launch files then keep the
	   trainer's default and say so). */
	char model_type[32]; /* HF model_type ("llama", ...); a profile's
				   "hf_model_type", else "" */
	enum norm_kind { NORM_RMS,
			 NORM_LAYER } norm;
	double norm_eps;       /* rms_norm_eps / layer_norm_eps */
	double rope_theta;     /* rotary base; 0 with learned positions */
	struct rope_scaling {  /* HF "rope_scaling"; type "" if none */
		char type[16]; /* "llama3", "yarn", "linear", ... */
		double factor, low_freq_factor, high_freq_factor;
		int original_max_pos;
	} rope_scaling;
	bool qkv_bias;	    /* biases on q, k, v only (Qwen2) */
	bool qk_norm;	    /* RMSNorm on q and k per head (Qwen3, OLMo 2) */
	int sliding_window; /* tokens; 0 = full attention everywhere */
	int sliding_every;  /* 1: every layer windowed; k > 1: every k-th
				   layer has full attention, the others a
				   window (Gemma 2: 2, every other layer;
				   Gemma 3: 6, five of six); 0 with no window.
				   Block i (0-based) is windowed unless k > 1
				   and (i + 1) % k == 0 (model_block_windowed;
				   Megatron's --window-attn-skip-freq) */
	/* MoE beyond top-k routed experts (DeepSeek-V3, Qwen-MoE, Llama 4) */
	int shared_experts, shared_ffn; /* always-on experts, their FFN size */
	int dense_layers;		/* first layers with a dense FFN of size ffn */
	int moe_every;			/* MoE FFN on every k-th layer; 1 = all:
				   block i (0-based) is MoE when i >=
				   dense_layers and (i + 1) % moe_every == 0
				   (model_block_moe); 0 counts as 1 */
	/* Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank 0 = none */
	int q_lora_rank, kv_lora_rank, qk_rope_dim, qk_nope_dim, v_head_dim;
	/* Shapes beyond the fields above, set by the Hugging Face reader; a
	   profile carries all but qk_norm_params and moe_extra_params (its
	   "layers" hold each layer's parameters): */
	int block_norms;      /* norms per block; 0 = 2 (Gemma 2: 4; Falcon
				   and GPT-J, one norm before the parallel
				   attention and MLP: 1) */
	bool parallel_block;  /* attention and MLP read the same normed
				   input and their outputs are summed (GPT-J,
				   Falcon): one stored input for both */
	bool mlp_bias;	      /* biases on the MLP's linear layers only
				   (GPT-J); implied by bias */
	bool head_bias;	      /* the LM head has a bias of V (GPT-J) */
	int rotary_dim;	      /* dimensions of a head RoPE rotates; 0 = all
				   of head_dim (GPT-J: 64 of 256) */
	int qk_norm_params;   /* weights of a block's q and k norms: 2*d for
				   per-head RMSNorms (Qwen3), (a + g)*d over
				   all heads (OLMo 2), 0 for Llama 4's L2 norm */
	int moe_extra_params; /* weights of an MoE block beyond experts and
				   router: Qwen2-MoE's shared-expert gate (h),
				   DeepSeek-V3's router bias (E) */
	/* Packed-document lengths of the training data (a profile's optional
	 * "doc_lengths"): n_doc bins, doc[i].tokens the length of the
	 * documents in bin i, doc[i].share the fraction of the training
	 * tokens that sit in such documents (the shares add up to 1). 0 bins:
	 * every sequence one document (model_doc_share). */
	struct doc_bin {
		int tokens;
		double share;
	} doc[MODEL_MAX_DOC_BINS];
	int n_doc;
	struct layer *layer;
	int n_layer;
};

/* The attention core's work under document masking over the causal work
 * of one document of seq tokens, for sequences of seq tokens packed from
 * the documents of m->doc (FlexSP, Wang et al. 2025, Sec. 2.2; ByteScale,
 * Ge et al. 2025, Sec. 2: attention cost grows with the sum of the squared
 * document lengths, not with seq^2): a token of a document of d tokens
 * attends causally to the d tokens of its document only, so the keys per
 * token are, over the tokens, sum_i share_i min(tokens_i, seq), over seq
 * without masking: sum_i share_i min(tokens_i, seq) / seq. A document
 * longer than seq is cut into sequences of seq tokens; one cut by a
 * sequence's end is counted whole (an upper bound). 1 without a
 * histogram. */
double model_doc_share(const struct model *m, int seq);

/* Checks that every measured point of m is for a GPU type that cluster c
 * defines (a point for another type would be silently ignored: a typo).
 * Returns 0, or -1 with e set to "layer L: measured point for GPU type 'X',
 * which cluster 'NAME' does not define (its types: A, B)", L the index in
 * m->layer (0 the embedding), the first such point in layer order. */
int model_check_gpus(const struct model *m, const struct cluster *c,
		     struct err *e);

/* Builds the layer list from the dimensions (parameters, FLOPs and
 * activations per COSTMODEL.md), replacing any present. */
void model_derive_layers(struct model *m);

/* Whether block i (0-based, layer[i + 1]) has a sliding-window attention,
 * and whether it has an MoE FFN (else a dense FFN of size ffn). */
bool model_block_windowed(const struct model *m, int i);
bool model_block_moe(const struct model *m, int i);

/* Whether an all-to-all over a ranks can split the heads each of tp GPUs
 * holds: heads and KV heads divisible by tp, and each quotient by a (the
 * Ulysses all-to-all of context parallelism, Jacobs et al. 2023 Sec. 3.2;
 * Megatron's --cp-comm-type a2a and a2a+p2p). */
bool model_heads_split(const struct model *m, int tp, int a);

/* Forward FLOPs per token of the attention core (QK^T and AV) of layer l of
 * m->layer at sequence length seq, 0 for the embedding and the head:
 * 2*a*(d_qk + d_v) * keys, d_qk = head_dim, d_v = v_head_dim with MLA else
 * head_dim, so 4*s*a*d for full attention (COSTMODEL.md "FLOPs", counted
 * whole). A windowed block of window w < s counts
 * keys = s * K(w)/K(s), K(w) = sum over positions p = 1..s of min(w, p)
 * (the keys a causal kernel visits), i.e. w*(2s - w + 1)/(s + 1): the full
 * count scaled by the share of the causal work a window leaves. */
double model_attn_flops(const struct model *m, int l, int seq);

/* The same with every key of every query computed, windows or not: what a
 * kernel that materialises the s x s scores and masks them runs (fused
 * softmax, eager attention), unlike flash attention, which skips the
 * masked blocks. */
double model_attn_flops_all(const struct model *m, int l, int seq);

/* Multi-head latent attention (DeepSeek-V2, Sec. 2.1; HF
 * DeepseekV3Attention) with h hidden, a heads, r_q = q_lora_rank (0: a plain
 * h x a*d_q query), r_kv = kv_lora_rank, d_q = qk_nope + qk_rope (head_dim),
 * d_r = qk_rope, d_v = v_head_dim: returns the matmul weights of a block's
 * attention, h*r_q + r_q*a*d_q (query), h*(r_kv + d_r) + r_kv*a*(d_q - d_r +
 * d_v) (keys and values), a*d_v*h (output), and sets *norms to the r_q +
 * r_kv weights of the latent RMSNorms. */
double model_mla_weights(const struct model *m, double *norms);

/* The longest sequence a model may be given, in tokens (a profile's
 * seq_length and --seq alike). */
#define MODEL_MAX_SEQ 10000000

/* Checks the sequence length seq for m, called what in messages ("field
 * 'seq_length'", "the sequence length"): seq must lie in [1,
 * MODEL_MAX_SEQ], and with learned position embeddings, which have max_pos
 * rows, not exceed max_pos (Megatron-LM rejects --seq-length >
 * --max-position-embeddings for them). Returns 0, or -1 with e set to
 * "WHAT must be an integer in [1, 10000000], not N" or "WHAT must be at
 * most 'max_position_embeddings' (P) with learned positions, not N". */
int model_check_seq(const struct model *m, int seq, const char *what,
		    struct err *e);

/* Sets the sequence length, rescaling the attention-score FLOPs of each block
 * (model_attn_flops). Returns 0, or -1 with e set as model_check_seq with
 * what "the sequence length". */
int model_set_seq(struct model *m, int seq, struct err *e);

/* Totals over layer[]: parameters, and forward FLOPs per token. */
double model_params(const struct model *m);

/* The parameters one token runs through: model_params less the routed
 * experts it does not run, sum over layers of expert_params x (1 - top_k /
 * experts); embedding, head and shared experts counted whole, as the MoE
 * papers count their "active" parameters (Mixtral 12.9B of 46.7B,
 * DeepSeek-V3 37B of 671B). model_params for a dense model. */
double model_active_params(const struct model *m);
double model_flops_per_token(const struct model *m);

/* Frees l's measured points (their GPU names and the array) and leaves l
 * with none; l itself is not freed. */
void model_free_measures(struct layer *l);

/* Frees m, its layers and their measured points. free(NULL)-safe. */
void model_free(struct model *m);

#endif
