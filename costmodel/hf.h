/* hf.h (internal): reading a Hugging Face config.json into a model (hf.c),
 * and the field readers of model.c it shares. */
#ifndef AMPPLAN_HF_H
#define AMPPLAN_HF_H

#include <stdbool.h>

/* Ranges of the input fields: wide enough for any real model, narrow enough
 * to reject absurd values (hidden_size 1e12, forward_s 1e-300) and int
 * overflow downstream. Integers (all must be whole numbers): hidden_size
 * [1, 1e6], num_layers and repeat [1, 10000], heads and KV heads [1, 1e5],
 * head_dim [1, 1e5], heads * head_dim at most 1e7, ffn sizes [1, 1e7],
 * vocab_size [1, 1e7], max_position_embeddings [1, 1e8], seq_length
 * [1, 1e7], global_batch_size [1, 1e8], num_experts [0, 1e5] (HF [1, 1e5]),
 * moe_top_k [1, num_experts], measured tp [1, 1e5] and micro_batch_size
 * [1, 1e6]. Numbers: a layer's params, flops_per_token and bytes per token
 * [0, 1e20] (expert_params [0, params]); measured forward_s and
 * backward_s [1e-9, 1e6] seconds. */
#define MAX_HIDDEN 1000000
#define MAX_LAYERS 10000
#define MAX_HEADS 100000
#define MAX_HEAD_DIM 100000
#define MAX_QDIM 10000000	/* heads * head_dim */
#define MAX_FFN 10000000
#define MAX_VOCAB 10000000
#define MAX_POS 100000000
#define MAX_SEQ 10000000
#define MAX_GBS 100000000
#define MAX_EXPERTS 100000
#define MAX_TP 100000
#define MAX_MBS 1000000
#define MAX_AMOUNT 1e20		/* params, FLOPs or bytes of one layer */
#define MAX_SECONDS 1e6
#define MIN_SECONDS 1e-9	/* a measured time below 1 ns is a typo */

struct cJSON;
struct err;
struct model;

/* The key names of the architecture fields in one input format; NULL where
 * the format has no such field. */
struct keys {
	const char *hidden, *layers, *heads, *kv_heads, *head_dim, *ffn, *vocab,
		*max_pos;
	bool ffn_required, max_pos_required;
};

/* Fills m from the Hugging Face config doc read from path (TRAINERS.md,
 * "Hugging Face config.json"), layers derived. Returns 0, or -1 with e set
 * (the caller adds the path); an unsupported model_type is refused naming
 * it and the supported ones. */
int hf_load(struct model *m, const struct cJSON *doc, const char *path,
	    struct err *e);

/* model.c: reads the architecture integers named by k into m (kv_heads
 * defaults to heads, head_dim to hidden / heads, ffn to 4 * hidden). */
int model_read_dims(struct model *m, const struct cJSON *doc,
		    const struct keys *k, struct err *e);

/* model.c: json_int where a JSON null counts as missing; key NULL means the
 * format has no such field. */
int model_opt_int(const struct cJSON *obj, const char *where, const char *key,
		  bool required, long min, long max, int *out, struct err *e);

/* model.c: sets *out to the index of val in names[0..n-1], or fails naming
 * them. */
int model_pick(const char *key, const char *val, const char *const names[],
	       int n, int *out, struct err *e);

#endif
