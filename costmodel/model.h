/* model.h: a model as the cost model sees it: its dimensions and the list of
 * layers (embedding, transformer blocks, final norm + LM head + loss), each
 * with parameters, FLOPs, activation and output sizes, and optional measured
 * times (AMP, Li et al. 2022, Sec. 3.2: per-layer profiles per GPU type). */
#ifndef AMPPLAN_MODEL_H
#define AMPPLAN_MODEL_H

#include <stdbool.h>

struct err;
struct cluster;

enum layer_kind { LAYER_EMBEDDING, LAYER_BLOCK, LAYER_HEAD };
/* GeLU and squared ReLU (Nemotron-4) MLPs have two matrices, SwiGLU three. */
enum ffn_kind { FFN_GELU, FFN_SWIGLU, FFN_RELU2 };

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
	double params;		 /* parameters, dense and expert */
	double expert_params;	 /* of which MoE expert weights (split by EP) */
	double flops_per_token;	 /* forward FLOPs per token, including the
				    attention-score term 4*s*h of a block */
	double act_bytes_per_token; /* activation bytes kept for backward per
				    token, no recompute, sequence-parallel form,
				    attention scores not stored (Korthikanti
				    2022 Sec. 4.1: 34*h for GPT, Megatron's
				    (18 + 4*f/h)*h for SwiGLU) */
	double out_bytes_per_token; /* bytes sent to the next stage per token */
	struct layer_measure *measure; /* may be NULL */
	int n_measure;
};

/* A model: dimensions and n_layer = layers + 2 entries in layer[]
 * (layer[0] the embedding, layer[n_layer-1] the head). Owns all its memory. */
struct model {
	char *name;
	int hidden, layers, heads, kv_heads, head_dim, ffn, vocab, seq, gbs;
	enum ffn_kind ffn_kind;
	bool tied;		/* tie_word_embeddings */
	bool bias;		/* linear and norm layers carry biases (GPT-2) */
	bool learned_pos;	/* learned position embeddings of max_pos rows
				   (GPT-2); else RoPE, no parameters */
	int max_pos;		/* max_position_embeddings */
	int dtype_bytes;	/* 2 for bf16/fp16 */
	bool fp16;		/* the training dtype is fp16 (not bf16) */
	int experts, top_k, moe_ffn; /* 0 for dense models */
	/* What a trainer must be told to train this very model (0 / false /
	   "" when the config does not say; the launch files then keep the
	   trainer's default and say so). */
	char model_type[32];	/* HF model_type ("llama", ...); "" for a
				   profile */
	enum norm_kind { NORM_RMS, NORM_LAYER } norm;
	double norm_eps;	/* rms_norm_eps / layer_norm_eps */
	double rope_theta;	/* rotary base; 0 with learned positions */
	struct rope_scaling {	/* HF "rope_scaling"; type "" if none */
		char type[16];	/* "llama3", "yarn", "linear", ... */
		double factor, low_freq_factor, high_freq_factor;
		int original_max_pos;
	} rope_scaling;
	bool qkv_bias;		/* biases on q, k, v only (Qwen2) */
	bool qk_norm;		/* RMSNorm on q and k per head (Qwen3, OLMo 2) */
	int sliding_window;	/* tokens; 0 = full attention everywhere */
	int sliding_every;	/* 1: every layer windowed; 2: every other
				   layer (Gemma 2); 0 with no window */
	/* MoE beyond top-k routed experts (DeepSeek-V3, Qwen-MoE, Llama 4) */
	int shared_experts, shared_ffn; /* always-on experts, their FFN size */
	int dense_layers;	/* first layers with a dense FFN of size ffn */
	int moe_every;		/* MoE FFN on every k-th layer; 1 = all */
	/* Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank 0 = none */
	int q_lora_rank, kv_lora_rank, qk_rope_dim, qk_nope_dim, v_head_dim;
	struct layer *layer;
	int n_layer;
};

/* Loads a model profile (profiles/ format) or a Hugging Face config.json
 * (recognised by its "model_type"; llama, mistral, qwen2, mixtral, gpt2),
 * deriving the layer list for the latter. Returns 0 and *out (caller frees
 * with model_free), or -1 with e naming the file and the field or the
 * line:column. */
int model_load(struct model **out, const char *path, struct err *e);

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

/* Sets the sequence length, rescaling the attention-score FLOPs of each block
 * (4*s*a*d per token is linear in s). Returns 0, or -1 with e set if seq is
 * outside [1, 10,000,000] or exceeds max_pos with learned positions. */
int model_set_seq(struct model *m, int seq, struct err *e);

/* Totals over layer[]: parameters, and forward FLOPs per token. */
double model_params(const struct model *m);
double model_flops_per_token(const struct model *m);

/* The model as a profile JSON document, the format model_load reads back.
 * Returns a malloc'd string; caller frees. */
char *model_profile_json(const struct model *m);

/* free(NULL)-safe. */
void model_free(struct model *m);

#endif
