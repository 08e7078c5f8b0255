/* fields.h (internal): the ranges of a model file's fields and the field
 * readers that the profile reader (profile.c) and the Hugging Face reader
 * (hf.c) share (fields.c). */
#ifndef AMPPLAN_FIELDS_H
#define AMPPLAN_FIELDS_H

#include <stdbool.h>

/* Ranges of the input fields: wide enough for any real model, narrow enough
 * to reject absurd values (hidden_size 1e12, forward_s 1e-300) and int
 * overflow downstream. Integers (all must be whole numbers): hidden_size
 * [1, 1e6], num_layers and repeat [1, 10000], heads and KV heads [1, 1e5],
 * head_dim [1, 1e5], heads * head_dim at most 1e7, ffn sizes [1, 1e7],
 * vocab_size [1, 1e7], max_position_embeddings [1, 1e8], seq_length
 * [1, 1e7] (MODEL_MAX_SEQ, model.h: model_set_seq checks it too),
 * global_batch_size [1, 1e8], num_experts [0, 1e5] (HF [1, 1e5]),
 * moe_top_k [1, num_experts], measured tp [1, 1e5] and micro_batch_size
 * [1, 1e6]. Numbers: a layer's params, flops_per_token and bytes per token
 * [0, 1e20] (expert_params [0, params]); measured forward_s and
 * backward_s [1e-9, 1e6] seconds. */
#define MAX_HIDDEN   1000000
#define MAX_LAYERS   10000
#define MAX_HEADS    100000
#define MAX_HEAD_DIM 100000
#define MAX_QDIM     10000000 /* heads * head_dim */
#define MAX_FFN	     10000000
#define MAX_VOCAB    10000000
#define MAX_POS	     100000000
#define MAX_GBS	     100000000
#define MAX_EXPERTS  100000
#define MAX_TP	     100000
#define MAX_MBS	     1000000
#define MAX_AMOUNT   1e20 /* params, FLOPs or bytes of one layer */
#define MAX_SECONDS  1e6
#define MIN_SECONDS  1e-9 /* a measured time below 1 ns is a typo */

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

/* Reads the architecture integers named by k from the root object doc into
 * m (hidden, layers, heads, kv_heads, head_dim, ffn, vocab, max_pos, in
 * that order, each in its range above). kv_heads defaults to heads,
 * head_dim to hidden / heads (which heads must then divide, within
 * head_dim's range: a profile written from m reads back), ffn to
 * 4 * hidden; max_pos stays 0 when absent. Returns 0, or -1 with e set to
 * the first bad field (the caller adds the path). */
int fields_read_dims(struct model *m, const struct cJSON *doc,
		     const struct keys *k, struct err *e);

/* json_int where a JSON null counts as missing (HF writes "head_dim":
 * null), and key NULL means the format has no such field (returns 0,
 * *out unchanged). */
int fields_opt_int(const struct cJSON *obj, const char *where, const char *key,
		   bool required, long min, long max, int *out, struct err *e);

/* The rope_scaling types Hugging Face transformers knows
 * (modeling_rope_utils.py ROPE_INIT_FUNCTIONS, and Qwen2-VL's "mrope"). */
#define FIELDS_ROPE_TYPES "default", "linear", "dynamic", "yarn", "longrope", "llama3", "mrope"

/* Checks m->rope_scaling as read from the object "rope_scaling" (its type
 * under type_key: "type" or "rope_type"), as transformers' rope validation
 * does (modeling_rope_utils.py): the type one of FIELDS_ROPE_TYPES; factor
 * at least 1 where the type scales by it (linear, dynamic, yarn, llama3;
 * longrope where given; 0 counts as absent); llama3's low_freq_factor and
 * high_freq_factor above 0 with low <= high (its smoothing divides by
 * high - low where a wavelength falls between them, and the wavelengths
 * by each) and original_max_position_embeddings given. Returns 0, or -1
 * with e naming the field. */
int fields_check_rope(const struct model *m, const char *type_key, struct err *e);

/* Sets *out to the index of val in names[0..n-1] and returns 0, or returns
 * -1 with e set to "field 'KEY' must be 'a', 'b' or 'c', not 'VAL'". */
int fields_pick(const char *key, const char *val, const char *const names[],
		int n, int *out, struct err *e);

#endif
