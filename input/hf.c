/* hf.c: reading Hugging Face config.json files, one reader per model_type,
 * into a model's dimensions and the fields a trainer needs to train the same
 * model (norm, rotary base and scaling, biases, q/k norms, sliding windows,
 * MoE shape, MLA), with the field readers and limits of fields.h;
 * model.c derives the layers from them. */
#include "hf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "json.h"
#include "model.h"
#include "util.h"

/* Defaults of an imported Hugging Face config (the file has no training
 * setup): seq_length = min(max_position_embeddings, HF_SEQ), gbs HF_GBS. */
#define HF_SEQ 8192
#define HF_GBS 512
/* FalconConfig's max_position_embeddings when the file has none. */
#define FALCON_MAX_POS 2048

static const char *const hf_dtype_names[] = { "bfloat16", "float16", "float32" };
static const int hf_dtype_bytes[] = { 2, 2, 4 };

static const struct keys hf_keys = {
	"hidden_size", "num_hidden_layers", "num_attention_heads",
	"num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
	"max_position_embeddings", true, true
};
/* DeepSeek-V3 has no head_dim: v_head_dim stands in (it spares the
 * hidden % heads check); read_deepseek sets head_dim to the q/k one. */
static const struct keys deepseek_keys = {
	"hidden_size", "num_hidden_layers", "num_attention_heads",
	"num_key_value_heads", "v_head_dim", "intermediate_size", "vocab_size",
	"max_position_embeddings", true, true
};
static const struct keys falcon_keys = {
	"hidden_size", "num_hidden_layers", "num_attention_heads", NULL, NULL,
	"ffn_hidden_size", "vocab_size", "max_position_embeddings", false, false
};
static const struct keys gpt2_keys = {
	"n_embd", "n_layer", "n_head", NULL, NULL, "n_inner", "vocab_size",
	"n_positions", false, true
};

/* json_num where a JSON null counts as missing (*out unchanged). */
static int opt_num(const cJSON *obj, const char *where, const char *key,
		   double min, double max, double *out, struct err *e)
{
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, key)))
		return 0;
	return json_num(obj, where, key, false, min, max, out, e);
}

/* Fails when the boolean key is true: a variant of type the cost model does
 * not describe (what, e.g. "biases on the output projection"). */
static int refuse_true(const cJSON *doc, const char *key, const char *type,
		       const char *what, struct err *e)
{
	bool v = false;

	if (json_bool(doc, "", key, false, &v, e))
		return -1;
	return v ? err_set(e, "field '%s' true is not supported for model_type "
			      "'%s' (%s)",
			   key, type, what)
		 : 0;
}

/* The training dtype of an HF config: "dtype" (newer transformers) or else
 * "torch_dtype"; bf16 when neither is set. */
static int read_dtype(struct model *m, const cJSON *doc, struct err *e)
{
	static const char *const keys[] = { "dtype", "torch_dtype" };

	m->dtype_bytes = 2;
	for (int k = 0; k < 2; k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, keys[k]);
		const char *val;
		int i;

		if (!v || cJSON_IsNull(v))
			continue;
		if (json_str(doc, "", keys[k], true, &val, e) ||
		    fields_pick(keys[k], val, hf_dtype_names, 3, &i, e))
			return -1;
		m->dtype_bytes = hf_dtype_bytes[i];
		m->fp16 = i == 1;
		return 0;
	}
	return 0;
}

/* rope_theta and "rope_scaling" (null or an object with "rope_type" or the
 * older "type", factor, low/high_freq_factor, original_max_position_
 * embeddings, the latter also at the root as Phi-3 writes it). */
static int read_rope(struct model *m, const cJSON *doc, struct err *e)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, "rope_scaling");
	struct rope_scaling *r = &m->rope_scaling;
	const char *type = NULL;

	if (opt_num(doc, "", "rope_theta", 1, 1e12, &m->rope_theta, e))
		return -1;
	if (!o || cJSON_IsNull(o))
		return 0;
	if (!cJSON_IsObject(o))
		return err_set(e, "field 'rope_scaling' must be an object or null");
	if (json_str(o, "rope_scaling", cJSON_GetObjectItemCaseSensitive(o, "rope_type") ? "rope_type" : "type", true, &type, e))
		return -1;
	if (strlen(type) >= sizeof r->type)
		return err_set(e, "field 'rope_scaling.type' must be at most %zu "
				  "bytes, not '%s'",
			       sizeof r->type - 1, type);
	strcpy(r->type, type);
	return opt_num(o, "rope_scaling", "factor", 0, 1e6, &r->factor, e) ||
			       opt_num(o, "rope_scaling", "low_freq_factor", 0, 1e6,
				       &r->low_freq_factor, e) ||
			       opt_num(o, "rope_scaling", "high_freq_factor", 0, 1e6,
				       &r->high_freq_factor, e) ||
			       fields_opt_int(doc, "", "original_max_position_embeddings", false,
					      1, MAX_POS, &r->original_max_pos, e) ||
			       fields_opt_int(o, "rope_scaling", "original_max_position_embeddings",
					      false, 1, MAX_POS, &r->original_max_pos, e) ||
			       fields_check_rope(m, cJSON_GetObjectItemCaseSensitive(o, "rope_type") ? "rope_type" : "type", e)
		       ? -1
		       : 0;
}

/* A sliding window of "sliding_window" tokens (null or 0: none) on every
 * block (every 1) or on all but every every-th (model.h sliding_every). */
static int read_window(struct model *m, const cJSON *doc, int every,
		       struct err *e)
{
	if (fields_opt_int(doc, "", "sliding_window", false, 0, MAX_POS,
			   &m->sliding_window, e))
		return -1;
	m->sliding_every = m->sliding_window ? every : 0;
	return 0;
}

/* Llama and the models built like it: SwiGLU MLP, RMSNorm (rms_norm_eps),
 * RoPE (rope_theta, rope_scaling), no biases (attention_bias and mlp_bias
 * true are refused: they add biases this reader does not count), embeddings
 * tied as tie_word_embeddings says (absent: tied, the config class's
 * default). */
static int read_llama_like(struct model *m, const cJSON *doc, const char *type,
			   const struct keys *k, bool tied, struct err *e)
{
	m->ffn_kind = FFN_SWIGLU;
	m->norm = NORM_RMS;
	m->tied = tied;
	return fields_read_dims(m, doc, k, e) ||
			       json_bool(doc, "", "tie_word_embeddings", false, &m->tied, e) ||
			       opt_num(doc, "", "rms_norm_eps", 1e-12, 1, &m->norm_eps, e) ||
			       read_rope(m, doc, e) ||
			       refuse_true(doc, "attention_bias", type,
					   "biases on q, k, v and the output projection", e) ||
			       refuse_true(doc, "mlp_bias", type, "biases on the MLP", e)
		       ? -1
		       : 0;
}

/* Routed experts: count under experts_key, top-k "num_experts_per_tok",
 * each an MLP of ffn_key. */
static int read_moe(struct model *m, const cJSON *doc, const char *experts_key,
		    const char *ffn_key, struct err *e)
{
	return json_int(doc, "", experts_key, true, 1, MAX_EXPERTS, &m->experts, e) ||
			       json_int(doc, "", "num_experts_per_tok", true, 1, m->experts,
					&m->top_k, e) ||
			       json_int(doc, "", ffn_key, true, 1, MAX_FFN, &m->moe_ffn, e)
		       ? -1
		       : 0;
}

/* Qwen's MoE layout: MoE on blocks with (i + 1) % decoder_sparse_step == 0
 * (default 1); "mlp_only_layers" other than [] is refused. */
static int read_qwen_sparse(struct model *m, const cJSON *doc, const char *type,
			    struct err *e)
{
	const cJSON *only = cJSON_GetObjectItemCaseSensitive(doc, "mlp_only_layers");

	m->moe_every = 1;
	if (json_int(doc, "", "decoder_sparse_step", false, 1, MAX_LAYERS,
		     &m->moe_every, e))
		return -1;
	if (only && !(cJSON_IsArray(only) && cJSON_GetArraySize(only) == 0))
		return err_set(e, "field 'mlp_only_layers' must be [] for "
				  "model_type '%s' (dense blocks by list are not "
				  "supported)",
			       type);
	return 0;
}

/* Qwen2 and Qwen3 keep "sliding_window" but use it only with
 * use_sliding_window, then on the blocks from max_window_layers on: that
 * layout is refused; without it attention is full everywhere. */
static int read_qwen_window(const cJSON *doc, const char *type, struct err *e)
{
	return refuse_true(doc, "use_sliding_window", type,
			   "windows on the blocks from 'max_window_layers' on", e);
}

static int read_llama(struct model *m, const cJSON *doc, struct err *e)
{
	return read_llama_like(m, doc, "llama", &hf_keys, false, e);
}

/* Mistral: a window of sliding_window on every block (null: none). */
static int read_mistral(struct model *m, const cJSON *doc, struct err *e)
{
	return read_llama_like(m, doc, "mistral", &hf_keys, false, e) ||
			       read_window(m, doc, 1, e)
		       ? -1
		       : 0;
}

/* Mixtral: Mistral with num_local_experts experts of intermediate_size on
 * every block. */
static int read_mixtral(struct model *m, const cJSON *doc, struct err *e)
{
	return read_llama_like(m, doc, "mixtral", &hf_keys, false, e) ||
			       read_window(m, doc, 1, e) ||
			       read_moe(m, doc, "num_local_experts", "intermediate_size", e)
		       ? -1
		       : 0;
}

/* Qwen2: Llama with biases on q, k and v. */
static int read_qwen2(struct model *m, const cJSON *doc, struct err *e)
{
	m->qkv_bias = true;
	return read_llama_like(m, doc, "qwen2", &hf_keys, false, e) ||
			       read_qwen_window(doc, "qwen2", e)
		       ? -1
		       : 0;
}

/* Qwen2-MoE (Qwen1.5-MoE): Qwen2 with num_experts of moe_intermediate_size,
 * one shared expert of shared_expert_intermediate_size (0: none) behind a
 * sigmoid gate of h weights (Qwen2MoeSparseMoeBlock); dense blocks of
 * intermediate_size off the decoder_sparse_step. */
static int read_qwen2_moe(struct model *m, const cJSON *doc, struct err *e)
{
	m->qkv_bias = true;
	if (read_llama_like(m, doc, "qwen2_moe", &hf_keys, false, e) ||
	    read_qwen_window(doc, "qwen2_moe", e) ||
	    read_moe(m, doc, "num_experts", "moe_intermediate_size", e) ||
	    read_qwen_sparse(m, doc, "qwen2_moe", e) ||
	    fields_opt_int(doc, "", "shared_expert_intermediate_size", false, 0,
			   MAX_FFN, &m->shared_ffn, e))
		return -1;
	m->shared_experts = m->shared_ffn > 0;
	m->moe_extra_params = m->shared_experts ? m->hidden : 0;
	return 0;
}

/* Qwen3 and Qwen3-MoE (type: the model_type, for the messages): Llama
 * with an RMSNorm of head_dim on each q and k head (2*d weights a
 * block). */
static int read_qwen3_like(struct model *m, const cJSON *doc, const char *type,
			   struct err *e)
{
	if (read_llama_like(m, doc, type, &hf_keys, false, e) ||
	    read_qwen_window(doc, type, e))
		return -1;
	m->qk_norm = true;
	m->qk_norm_params = 2 * m->head_dim;
	return 0;
}

static int read_qwen3(struct model *m, const cJSON *doc, struct err *e)
{
	return read_qwen3_like(m, doc, "qwen3", e);
}

/* Qwen3-MoE: Qwen3 with num_experts of moe_intermediate_size, no shared
 * expert. */
static int read_qwen3_moe(struct model *m, const cJSON *doc, struct err *e)
{
	return read_qwen3_like(m, doc, "qwen3_moe", e) ||
			       read_moe(m, doc, "num_experts", "moe_intermediate_size", e) ||
			       read_qwen_sparse(m, doc, "qwen3_moe", e)
		       ? -1
		       : 0;
}

/* Gemma 2: a gated GeLU MLP (GeGLU: the shapes of SwiGLU), four RMSNorms a
 * block (before and after attention and MLP), tied embeddings, a window of
 * sliding_window on every other block, 0, 2, 4, ... (Gemma2DecoderLayer:
 * is_sliding = not layer_idx % 2). Logit soft-capping changes no shape. */
static int read_gemma2(struct model *m, const cJSON *doc, struct err *e)
{
	m->block_norms = 4;
	return read_llama_like(m, doc, "gemma2", &hf_keys, true, e) ||
			       read_window(m, doc, 2, e)
		       ? -1
		       : 0;
}

/* Gemma 3 (text): Gemma 2's block with an RMSNorm of head_dim on each q and
 * k head (2*d weights), full attention on every sliding_window_pattern-th
 * block (default 6) and a window on the others (Gemma3DecoderLayer:
 * is_sliding = (layer_idx + 1) % pattern, so a pattern of 1 is full
 * attention everywhere), or the layout "layer_types" lists
 * ("sliding_attention" / "full_attention"), which must be such a pattern
 * or all sliding. rope_theta is the full-attention blocks' base (the
 * windowed ones use rope_local_base_freq, which a launch file cannot set
 * apart). */
static int read_gemma3_text(struct model *m, const cJSON *doc, struct err *e)
{
	const cJSON *types = cJSON_GetObjectItemCaseSensitive(doc, "layer_types"), *it;
	int k = 6, i = 0, first_full = 0;
	bool all_full;

	m->block_norms = 4;
	if (read_llama_like(m, doc, "gemma3_text", &hf_keys, true, e) ||
	    json_int(doc, "", "sliding_window_pattern", false, 1, MAX_LAYERS, &k, e))
		return -1;
	m->qk_norm = true;
	m->qk_norm_params = 2 * m->head_dim;
	if (types && !cJSON_IsNull(types)) {
		if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != m->layers)
			return err_set(e, "field 'layer_types' must be an array of "
					  "'num_hidden_layers' (%d) entries",
				       m->layers);
		cJSON_ArrayForEach(it, types)
		{
			if (!first_full && cJSON_IsString(it) &&
			    strcmp(it->valuestring, "full_attention") == 0)
				first_full = i + 1;
			i++;
		}
		k = first_full ? first_full : 1;
	}
	all_full = types && !cJSON_IsNull(types) ? first_full == 1 : k == 1;
	if (read_window(m, doc, k, e))
		return -1;
	if (all_full)
		m->sliding_window = m->sliding_every = 0;
	i = 0;
	cJSON_ArrayForEach(it, types)
	{
		const char *want = model_block_windowed(m, i) ? "sliding_attention" : "full_attention";

		if (!cJSON_IsString(it) || strcmp(it->valuestring, want) != 0)
			return err_set(e, "field 'layer_types[%d]' must be '%s': "
					  "full attention on the blocks i with "
					  "(i + 1) %% %d == 0, a window on the others",
				       i, want, all_full ? 1 : k);
		i++;
	}
	return 0;
}

/* Phi-3: Llama's shapes (q, k, v and gate, up fused, same counts), a window
 * of sliding_window on every block, RoPE on partial_rotary_factor of each
 * head's dimensions (default all; Phi-4-mini 0.75). */
static int read_phi3(struct model *m, const cJSON *doc, struct err *e)
{
	double part = 1;

	if (read_llama_like(m, doc, "phi3", &hf_keys, false, e) ||
	    read_window(m, doc, 1, e) ||
	    opt_num(doc, "", "partial_rotary_factor", 1e-6, 1, &part, e))
		return -1;
	if (part < 1)
		m->rotary_dim = (int)(part * m->head_dim);
	if (part < 1 && m->rotary_dim < 1)
		return err_set(e, "field 'partial_rotary_factor' leaves no "
				  "dimension of 'head_dim' %d to rotate",
			       m->head_dim);
	return 0;
}

/* OLMo 2: Llama with RMSNorms over all of q (a*d) and k (g*d) and its two
 * norms after attention and MLP instead of before. */
static int read_olmo2(struct model *m, const cJSON *doc, struct err *e)
{
	if (read_llama_like(m, doc, "olmo2", &hf_keys, false, e))
		return -1;
	m->qk_norm = true;
	m->qk_norm_params = (m->heads + m->kv_heads) * m->head_dim;
	return 0;
}

/* DeepSeek-V2 and V3 (and R1), model_type type: multi-head latent attention
 * (q_lora_rank, null for none as in V2-Lite; kv_lora_rank,
 * qk_nope_head_dim, qk_rope_head_dim, v_head_dim); the first
 * first_k_dense_replace blocks dense with intermediate_size, the others
 * n_routed_experts of moe_intermediate_size plus n_shared_experts of it;
 * with router_bias a bias of E on the router (V3's
 * e_score_correction_bias; V2 routes by softmax scores alone).
 * moe_layer_freq other than 1 is refused. The multi-token-prediction
 * module (V3's num_nextn_predict_layers) is not part of the trained
 * model's count. */
static int read_deepseek(struct model *m, const cJSON *doc, const char *type, bool router_bias,
			 struct err *e)
{
	int freq = 1;

	if (read_llama_like(m, doc, type, &deepseek_keys, false, e) ||
	    fields_opt_int(doc, "", "q_lora_rank", false, 1, MAX_FFN,
			   &m->q_lora_rank, e) ||
	    json_int(doc, "", "kv_lora_rank", true, 1, MAX_FFN, &m->kv_lora_rank, e) ||
	    json_int(doc, "", "qk_nope_head_dim", true, 1, MAX_HEAD_DIM,
		     &m->qk_nope_dim, e) ||
	    json_int(doc, "", "qk_rope_head_dim", true, 1, MAX_HEAD_DIM,
		     &m->qk_rope_dim, e) ||
	    read_moe(m, doc, "n_routed_experts", "moe_intermediate_size", e) ||
	    json_int(doc, "", "n_shared_experts", false, 0, MAX_EXPERTS,
		     &m->shared_experts, e) ||
	    json_int(doc, "", "first_k_dense_replace", false, 0, m->layers,
		     &m->dense_layers, e) ||
	    json_int(doc, "", "moe_layer_freq", false, 1, MAX_LAYERS, &freq, e))
		return -1;
	if (freq != 1)
		return err_set(e, "field 'moe_layer_freq' must be 1 for model_type '%s', not %d",
			       type, freq);
	m->v_head_dim = m->head_dim;
	m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
	m->kv_heads = m->heads;
	m->shared_ffn = m->shared_experts ? m->moe_ffn : 0;
	m->moe_extra_params = router_bias ? m->experts : 0;
	return 0;
}

static int read_deepseek_v2(struct model *m, const cJSON *doc, struct err *e)
{
	return read_deepseek(m, doc, "deepseek_v2", false, e);
}

static int read_deepseek_v3(struct model *m, const cJSON *doc, struct err *e)
{
	return read_deepseek(m, doc, "deepseek_v3", true, e);
}

/* Llama 4 (text): num_local_experts routed experts and one shared expert of
 * intermediate_size on the blocks (i + 1) % interleave_moe_layer_step == 0
 * (default 1; "moe_layers", if given, must list exactly those), dense
 * blocks of intermediate_size_mlp; use_qk_norm: an L2 norm of q and k
 * without weights. The chunked attention of its RoPE blocks
 * (attention_chunk_size) is counted as full attention. */
static int read_llama4_text(struct model *m, const cJSON *doc, struct err *e)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "moe_layers"), *it;
	int n = 0, size;

	m->moe_every = 1;
	if (read_llama_like(m, doc, "llama4_text", &hf_keys, false, e) ||
	    read_moe(m, doc, "num_local_experts", "intermediate_size", e) ||
	    json_int(doc, "", "intermediate_size_mlp", true, 1, MAX_FFN, &m->ffn, e) ||
	    json_int(doc, "", "interleave_moe_layer_step", false, 1, MAX_LAYERS,
		     &m->moe_every, e) ||
	    json_bool(doc, "", "use_qk_norm", false, &m->qk_norm, e))
		return -1;
	m->shared_experts = 1;
	m->shared_ffn = m->moe_ffn;
	if (!list || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return err_set(e, "field 'moe_layers' must be an array");
	size = cJSON_GetArraySize(list);
	it = list->child;
	for (int i = 0; i < m->layers; i++) {
		if (!model_block_moe(m, i))
			continue;
		if (!it || !cJSON_IsNumber(it) || it->valuedouble != i)
			return err_set(e, "field 'moe_layers' must list the blocks "
					  "(i + 1) %% interleave_moe_layer_step == 0 "
					  "(entry %d should be %d)",
				       n, i);
		it = it->next;
		n++;
	}
	if (size != n)
		return err_set(e, "field 'moe_layers' must list the blocks "
				  "(i + 1) %% interleave_moe_layer_step == 0 (%d of "
				  "them)",
			       n);
	return 0;
}

/* Falcon: GeLU MLP of ffn_hidden_size (default 4h), LayerNorm
 * (layer_norm_epsilon), RoPE (alibi true is refused), biases on every linear
 * layer when "bias"; parallel_attn (default true): attention and MLP side by
 * side after one LayerNorm (two with new_decoder_architecture and
 * num_ln_in_parallel_attn 2); KV heads: num_kv_heads with
 * new_decoder_architecture, else 1 with multi_query (default true), else
 * all; tied embeddings unless tie_word_embeddings is false (FalconConfig). */
static int read_falcon(struct model *m, const cJSON *doc, struct err *e)
{
	bool parallel = true, mq = true, newarch = false;
	int kv = 0, lns = 2;

	m->ffn_kind = FFN_GELU;
	m->norm = NORM_LAYER;
	m->tied = true;
	if (fields_read_dims(m, doc, &falcon_keys, e) ||
	    json_bool(doc, "", "tie_word_embeddings", false, &m->tied, e) ||
	    json_bool(doc, "", "bias", false, &m->bias, e) ||
	    json_bool(doc, "", "parallel_attn", false, &parallel, e) ||
	    json_bool(doc, "", "multi_query", false, &mq, e) ||
	    json_bool(doc, "", "new_decoder_architecture", false, &newarch, e) ||
	    fields_opt_int(doc, "", "num_kv_heads", false, 1, MAX_HEADS, &kv, e) ||
	    fields_opt_int(doc, "", "num_ln_in_parallel_attn", false, 1, 2, &lns, e) ||
	    opt_num(doc, "", "layer_norm_epsilon", 1e-12, 1, &m->norm_eps, e) ||
	    read_rope(m, doc, e) ||
	    refuse_true(doc, "alibi", "falcon", "ALiBi instead of RoPE", e))
		return -1;
	if (!m->max_pos)
		m->max_pos = FALCON_MAX_POS;
	m->kv_heads = newarch ? (kv ? kv : m->heads) : mq ? 1
							  : m->heads;
	if (m->heads % m->kv_heads)
		return err_set(e, "field 'num_kv_heads' must divide "
				  "'num_attention_heads'");
	m->parallel_block = parallel;
	m->block_norms = !parallel ? 2 : newarch ? lns
						 : 1;
	return 0;
}

/* GPT-J: GPT-2's keys, attention and MLP side by side after one LayerNorm
 * (layer_norm_epsilon), no biases on q, k, v and the output projection,
 * biases on the MLP and on the LM head, RoPE on rotary_dim of each head's
 * dimensions (null: all), untied unless tie_word_embeddings. */
static int read_gptj(struct model *m, const cJSON *doc, struct err *e)
{
	m->ffn_kind = FFN_GELU;
	m->norm = NORM_LAYER;
	m->parallel_block = m->mlp_bias = m->head_bias = true;
	m->block_norms = 1;
	m->rope_theta = 10000; /* GPTJAttention's fixed base */
	if (fields_read_dims(m, doc, &gpt2_keys, e) ||
	    json_bool(doc, "", "tie_word_embeddings", false, &m->tied, e) ||
	    opt_num(doc, "", "layer_norm_epsilon", 1e-12, 1, &m->norm_eps, e) ||
	    fields_opt_int(doc, "", "rotary_dim", false, 1, m->head_dim,
			   &m->rotary_dim, e))
		return -1;
	return 0;
}

/* GPT-2 (n_embd, n_layer, n_head, n_positions, n_inner null = 4 * n_embd):
 * GeLU MLP, biases, LayerNorm, learned positions, tied embeddings unless
 * tie_word_embeddings says otherwise. */
static int read_gpt2(struct model *m, const cJSON *doc, struct err *e)
{
	m->tied = m->bias = m->learned_pos = true;
	m->ffn_kind = FFN_GELU;
	m->norm = NORM_LAYER;
	return fields_read_dims(m, doc, &gpt2_keys, e) ||
			       json_bool(doc, "", "tie_word_embeddings", false, &m->tied, e) ||
			       opt_num(doc, "", "layer_norm_epsilon", 1e-12, 1, &m->norm_eps, e)
		       ? -1
		       : 0;
}

static const struct {
	const char *type;
	int (*read)(struct model *m, const cJSON *doc, struct err *e);
} readers[] = {
	{ "llama", read_llama },
	{ "mistral", read_mistral },
	{ "mixtral", read_mixtral },
	{ "qwen2", read_qwen2 },
	{ "qwen2_moe", read_qwen2_moe },
	{ "qwen3", read_qwen3 },
	{ "qwen3_moe", read_qwen3_moe },
	{ "gemma2", read_gemma2 },
	{ "gemma3_text", read_gemma3_text },
	{ "phi3", read_phi3 },
	{ "deepseek_v2", read_deepseek_v2 },
	{ "deepseek_v3", read_deepseek_v3 },
	{ "llama4_text", read_llama4_text },
	{ "olmo2", read_olmo2 },
	{ "falcon", read_falcon },
	{ "gptj", read_gptj },
	{ "gpt2", read_gpt2 },
};
#define N_READERS (int)(sizeof readers / sizeof readers[0])

/* The model's name: "_name_or_path" if set, else the file's base name
 * without ".json". Returns a malloc'd string. */
static char *hf_name(const cJSON *doc, const char *path)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "_name_or_path");
	const char *base = strrchr(path, '/');
	char *name;
	size_t n;

	if (cJSON_IsString(v) && v->valuestring[0])
		return xstrdup(v->valuestring);
	name = xstrdup(base ? base + 1 : path);
	n = strlen(name);
	if (n > 5 && strcmp(name + n - 5, ".json") == 0)
		name[n - 5] = '\0';
	return name;
}

int hf_load(struct model *m, const cJSON *doc, const char *path,
	    struct err *e)
{
	const char *type;
	char list[256] = "";
	size_t len = 0;
	int i = 0;

	if (json_str(doc, "", "model_type", true, &type, e))
		return -1;
	while (i < N_READERS && strcmp(readers[i].type, type) != 0)
		i++;
	if (i == N_READERS) {
		for (int k = 0; k < N_READERS && len < sizeof list; k++)
			len += (size_t)snprintf(list + len, sizeof list - len,
						"%s%s", k ? ", " : "",
						readers[k].type);
		return err_set(e, "field 'model_type' is '%s', which is not "
				  "supported (supported: %s)",
			       type, list);
	}
	snprintf(m->model_type, sizeof m->model_type, "%s", type);
	if (readers[i].read(m, doc, e) || read_dtype(m, doc, e))
		return -1;
	m->name = hf_name(doc, path);
	if (json_utf8_check(m->name, strlen(m->name)))
		return err_set(e, "the file name is not valid UTF-8 or holds a "
				  "control character: set '_name_or_path'");
	m->seq = m->max_pos < HF_SEQ ? m->max_pos : HF_SEQ;
	m->gbs = HF_GBS;
	model_derive_layers(m);
	return 0;
}
