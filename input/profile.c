/* profile.c: reading a model file into a model (a profile of profiles/,
 * or a Hugging Face config.json through hf.c), and writing a model back as
 * a profile that reads back the same. */
#include "profile.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "hf.h"
#include "json.h"
#include "model.h"
#include "util.h"

/* Indexed by enum layer_kind and enum ffn_kind. */
static const char *const kind_names[] = { "embedding", "block", "head" };
static const char *const ffn_names[] = { "gelu", "swiglu", "relu2" };
static const char *const pos_names[] = { "rope", "learned" };
static const char *const dtype_names[] = { "bf16", "fp16", "fp32" };
static const int dtype_bytes[] = { 2, 2, 4 };
static const char *const norm_names[] = { "rmsnorm", "layernorm" };

/* The optional fields of a profile from "norm_eps" to "lm_head_bias", each
 * once, in the order read_profile_arch reads them (0 / false when absent;
 * the ranges are those of the HF reader, hf.c) and put_arch writes those
 * not at their default; load_profile allows their keys. */
enum arch_type {
	ARCH_NUM,    /* a double of struct model */
	ARCH_INT,    /* an int */
	ARCH_BOOL,   /* a bool, written only when true */
	ARCH_SCALING /* the "rope_scaling" object (struct rope_scaling) */
};
enum arch_put {
	PUT_NONZERO,  /* written when not 0 */
	PUT_WINDOWED, /* written when sliding_window is not 0 */
	PUT_ABOVE_1   /* written when above 1 */
};
#define AT(field) offsetof(struct model, field)
static const struct arch_field {
	const char *key;
	enum arch_type type;
	size_t at;	   /* where in struct model */
	double min, max;   /* ARCH_NUM and ARCH_INT: the range */
	size_t max_at;	   /* ARCH_INT: not 0, the maximum is the int at
				   this offset instead (offset 0 is the
				   name, never a bound) */
	enum arch_put put; /* ARCH_NUM and ARCH_INT */
} arch_fields[] = {
	{ "norm_eps", ARCH_NUM, AT(norm_eps), 0, 1, 0, PUT_NONZERO },
	{ "rope_theta", ARCH_NUM, AT(rope_theta), 0, 1e12, 0, PUT_NONZERO },
	{ "rope_scaling", ARCH_SCALING, AT(rope_scaling), 0, 0, 0, PUT_NONZERO },
	{ "rotary_dim", ARCH_INT, AT(rotary_dim), 1, 0, AT(head_dim), PUT_NONZERO },
	{ "qkv_bias", ARCH_BOOL, AT(qkv_bias), 0, 0, 0, PUT_NONZERO },
	{ "qk_norm", ARCH_BOOL, AT(qk_norm), 0, 0, 0, PUT_NONZERO },
	{ "sliding_window", ARCH_INT, AT(sliding_window), 1, MAX_POS, 0,
	  PUT_NONZERO },
	{ "sliding_window_every", ARCH_INT, AT(sliding_every), 1, MAX_LAYERS, 0,
	  PUT_WINDOWED },
	{ "num_shared_experts", ARCH_INT, AT(shared_experts), 1, MAX_EXPERTS, 0,
	  PUT_NONZERO },
	{ "shared_expert_ffn_hidden_size", ARCH_INT, AT(shared_ffn), 1, MAX_FFN,
	  0, PUT_NONZERO },
	{ "first_dense_layers", ARCH_INT, AT(dense_layers), 1, 0, AT(layers),
	  PUT_NONZERO },
	{ "moe_layer_freq", ARCH_INT, AT(moe_every), 1, MAX_LAYERS, 0,
	  PUT_ABOVE_1 },
	{ "q_lora_rank", ARCH_INT, AT(q_lora_rank), 1, MAX_FFN, 0, PUT_NONZERO },
	{ "kv_lora_rank", ARCH_INT, AT(kv_lora_rank), 1, MAX_FFN, 0, PUT_NONZERO },
	{ "qk_rope_head_dim", ARCH_INT, AT(qk_rope_dim), 1, MAX_HEAD_DIM, 0,
	  PUT_NONZERO },
	{ "qk_nope_head_dim", ARCH_INT, AT(qk_nope_dim), 1, MAX_HEAD_DIM, 0,
	  PUT_NONZERO },
	{ "v_head_dim", ARCH_INT, AT(v_head_dim), 1, MAX_HEAD_DIM, 0, PUT_NONZERO },
	{ "norms_per_block", ARCH_INT, AT(block_norms), 1, 4, 0, PUT_NONZERO },
	{ "parallel_block", ARCH_BOOL, AT(parallel_block), 0, 0, 0, PUT_NONZERO },
	{ "mlp_bias", ARCH_BOOL, AT(mlp_bias), 0, 0, 0, PUT_NONZERO },
	{ "lm_head_bias", ARCH_BOOL, AT(head_bias), 0, 0, 0, PUT_NONZERO },
};
#undef AT
#define N_ARCH (int)(sizeof arch_fields / sizeof arch_fields[0])

/* The root fields of a profile other than arch_fields'. */
static const char *const profile_fields[] = {
	"name", "source", "note", "hidden_size", "num_layers",
	"num_attention_heads", "num_kv_heads", "head_dim", "ffn_hidden_size",
	"ffn_kind", "vocab_size", "seq_length", "global_batch_size",
	"max_position_embeddings", "tie_word_embeddings", "bias",
	"position_embedding", "dtype", "num_experts", "moe_top_k",
	"moe_ffn_hidden_size", "hf_model_type", "normalization", "doc_lengths",
	"layers"
};
#define N_PROFILE (int)(sizeof profile_fields / sizeof profile_fields[0])
static const char *const doc_fields[] = { "tokens", "share", NULL };
static const char *const scaling_fields[] = {
	"type", "factor", "low_freq_factor", "high_freq_factor",
	"original_max_position_embeddings", NULL
};
static const char *const layer_fields[] = {
	"kind", "repeat", "params", "expert_params", "flops_per_token",
	"activation_bytes_per_token", "output_bytes_per_token", "measured",
	"note", NULL
};
static const char *const measure_fields[] = {
	"gpu", "tp", "micro_batch_size", "seq_length", "forward_s",
	"backward_s", "note", NULL
};

static const struct keys profile_keys = {
	"hidden_size", "num_layers", "num_attention_heads", "num_kv_heads",
	"head_dim", "ffn_hidden_size", "vocab_size", "max_position_embeddings",
	true, false
};

/* Reads a measured time in seconds, [MIN_SECONDS, MAX_SECONDS]. */
static int seconds(const cJSON *obj, const char *where, const char *key,
		   double *out, struct err *e)
{
	return json_num(obj, where, key, true, MIN_SECONDS, MAX_SECONDS, out, e);
}

/* Reads the MoE fields of a profile: num_experts (0 = dense), moe_top_k in
 * [1, num_experts], moe_ffn_hidden_size (default ffn_hidden_size). */
static int read_profile_moe(struct model *m, const cJSON *doc, struct err *e)
{
	m->experts = 0;
	if (json_int(doc, "", "num_experts", false, 0, MAX_EXPERTS, &m->experts, e))
		return -1;
	if (!m->experts) {
		if (cJSON_GetObjectItemCaseSensitive(doc, "moe_top_k") ||
		    cJSON_GetObjectItemCaseSensitive(doc, "moe_ffn_hidden_size"))
			return err_set(e, "field 'num_experts' must be positive "
					  "when 'moe_top_k' or 'moe_ffn_hidden_size' "
					  "is given");
		return 0;
	}
	m->moe_ffn = m->ffn;
	return json_int(doc, "", "moe_top_k", true, 1, m->experts, &m->top_k, e) ||
			       json_int(doc, "", "moe_ffn_hidden_size", false, 1, MAX_FFN,
					&m->moe_ffn, e)
		       ? -1
		       : 0;
}

/* Reads a profile's "rope_scaling" object, if any, into m. */
static int read_profile_scaling(struct model *m, const cJSON *doc,
				struct err *e)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(doc, "rope_scaling");
	struct rope_scaling *r = &m->rope_scaling;
	const char *type;

	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return err_set(e, "field 'rope_scaling' must be an object");
	if (json_keys(o, "rope_scaling", scaling_fields, e) ||
	    json_str(o, "rope_scaling", "type", true, &type, e))
		return -1;
	if (strlen(type) >= sizeof r->type)
		return err_set(e, "field 'rope_scaling.type' must be at most %zu "
				  "bytes",
			       sizeof r->type - 1);
	strcpy(r->type, type);
	return json_num(o, "rope_scaling", "factor", false, 0, 1e6, &r->factor, e) ||
			       json_num(o, "rope_scaling", "low_freq_factor", false, 0, 1e6,
					&r->low_freq_factor, e) ||
			       json_num(o, "rope_scaling", "high_freq_factor", false, 0, 1e6,
					&r->high_freq_factor, e) ||
			       json_int(o, "rope_scaling", "original_max_position_embeddings",
					false, 1, MAX_POS, &r->original_max_pos, e) ||
			       fields_check_rope(m, "type", e)
		       ? -1
		       : 0;
}

/* Reads arch_fields[i] of doc into m. */
static int read_arch_field(struct model *m, int i, const cJSON *doc,
			   struct err *e)
{
	const struct arch_field *f = &arch_fields[i];
	char *p = (char *)m + f->at;
	long max = f->max_at ? *(const int *)((const char *)m + f->max_at) : (long)f->max;

	switch (f->type) {
	case ARCH_NUM:
		return json_num(doc, "", f->key, false, f->min, f->max,
				(double *)p, e);
	case ARCH_INT:
		return json_int(doc, "", f->key, false, (long)f->min, max,
				(int *)p, e);
	case ARCH_BOOL:
		return json_bool(doc, "", f->key, false, (bool *)p, e);
	case ARCH_SCALING:
		return read_profile_scaling(m, doc, e);
	}
	return 0;
}

/* Reads the fields of a profile that carry over from a Hugging Face config
 * (each optional, 0 / false when absent): what a launch file needs to train
 * the same model, and the shapes the compute model reads beside "layers"
 * (sliding windows, dense and MoE blocks, shared experts, MLA, rotary
 * dimensions) and the trainer rules (norms per block, parallel blocks):
 * hf_model_type, normalization, then arch_fields in order. */
static int read_profile_arch(struct model *m, const cJSON *doc, struct err *e)
{
	const char *type = "", *norm = NULL;
	int norm_i = 0;

	if (json_str(doc, "", "hf_model_type", false, &type, e))
		return -1;
	if (strlen(type) >= sizeof m->model_type)
		return err_set(e, "field 'hf_model_type' must be at most %zu bytes",
			       sizeof m->model_type - 1);
	strcpy(m->model_type, type);
	if (json_str(doc, "", "normalization", false, &norm, e) ||
	    (norm && fields_pick("normalization", norm, norm_names, 2, &norm_i, e)))
		return -1;
	for (int i = 0; i < N_ARCH; i++)
		if (read_arch_field(m, i, doc, e))
			return -1;
	m->norm = (enum norm_kind)norm_i;
	if (m->sliding_window && !m->sliding_every)
		m->sliding_every = 1;
	if (m->kv_lora_rank && (!m->qk_rope_dim || !m->qk_nope_dim || !m->v_head_dim))
		return err_set(e, "field 'kv_lora_rank' needs 'qk_rope_head_dim', "
				  "'qk_nope_head_dim' and 'v_head_dim'");
	if (m->kv_lora_rank && m->head_dim != m->qk_rope_dim + m->qk_nope_dim)
		return err_set(e, "field 'head_dim' must be 'qk_rope_head_dim' + "
				  "'qk_nope_head_dim' with 'kv_lora_rank'");
	if (!m->shared_experts != !m->shared_ffn)
		return err_set(e, "fields 'num_shared_experts' and "
				  "'shared_expert_ffn_hidden_size' go together");
	return 0;
}

/* Reads the optional "doc_lengths" of a profile into m->doc: an array of
 * 1 to MODEL_MAX_DOC_BINS objects {"tokens": length in tokens, "share":
 * fraction of the training tokens in documents of that length}, each
 * length once, the shares adding up to 1 (within 1e-6). */
static int read_doc_lengths(struct model *m, const cJSON *doc, struct err *e)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "doc_lengths"), *o;
	double sum = 0;
	int i = 0;

	m->n_doc = 0;
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 ||
	    cJSON_GetArraySize(arr) > MODEL_MAX_DOC_BINS)
		return err_set(e, "field 'doc_lengths' must be an array of 1 to %d "
				  "{\"tokens\", \"share\"} objects",
			       MODEL_MAX_DOC_BINS);
	cJSON_ArrayForEach(o, arr)
	{
		char where[32];

		snprintf(where, sizeof where, "doc_lengths[%d]", i);
		if (!cJSON_IsObject(o))
			return err_set(e, "field '%s' must be an object", where);
		if (json_keys(o, where, doc_fields, e) ||
		    json_int(o, where, "tokens", true, 1, MODEL_MAX_SEQ, &m->doc[i].tokens, e) ||
		    json_num(o, where, "share", true, 0, 1, &m->doc[i].share, e))
			return -1;
		if (!(m->doc[i].share > 0))
			return err_set(e, "field '%s.share' must be above 0", where);
		for (int j = 0; j < i; j++)
			if (m->doc[j].tokens == m->doc[i].tokens)
				return err_set(e, "field '%s.tokens' repeats doc_lengths[%d]'s "
						  "length %d",
					       where, j, m->doc[i].tokens);
		sum += m->doc[i].share;
		i++;
	}
	if (fabs(sum - 1) > 1e-6)
		return err_set(e, "field 'doc_lengths' shares must add up to 1, not %g", sum);
	m->n_doc = i;
	return 0;
}

/* Reads the non-architecture root fields of a profile. */
static int read_profile_opts(struct model *m, const cJSON *doc, struct err *e)
{
	const char *ffn = NULL, *pos = "rope", *dtype = "bf16";
	int ffn_i, pos_i, dtype_i;

	m->tied = m->bias = false;
	if (json_str(doc, "", "ffn_kind", true, &ffn, e) ||
	    fields_pick("ffn_kind", ffn, ffn_names, 3, &ffn_i, e) ||
	    json_int(doc, "", "seq_length", true, 1, MODEL_MAX_SEQ, &m->seq, e) ||
	    json_int(doc, "", "global_batch_size", true, 1, MAX_GBS, &m->gbs, e) ||
	    json_bool(doc, "", "tie_word_embeddings", false, &m->tied, e) ||
	    json_bool(doc, "", "bias", false, &m->bias, e) ||
	    json_str(doc, "", "position_embedding", false, &pos, e) ||
	    fields_pick("position_embedding", pos, pos_names, 2, &pos_i, e) ||
	    json_str(doc, "", "dtype", false, &dtype, e) ||
	    fields_pick("dtype", dtype, dtype_names, 3, &dtype_i, e) ||
	    read_profile_moe(m, doc, e) ||
	    read_profile_arch(m, doc, e) ||
	    read_doc_lengths(m, doc, e))
		return -1;
	m->ffn_kind = (enum ffn_kind)ffn_i;
	m->learned_pos = pos_i == 1;
	m->dtype_bytes = dtype_bytes[dtype_i];
	m->fp16 = dtype_i == 1;
	if (!m->max_pos)
		m->max_pos = m->seq;
	return model_check_seq(m, m->seq, "field 'seq_length'", e);
}

/* Copies src into *dst, measurements deep. */
static void copy_layer(struct layer *dst, const struct layer *src)
{
	*dst = *src;
	dst->measure = NULL;
	if (!src->n_measure)
		return;
	dst->measure = xcalloc((size_t)src->n_measure, sizeof *dst->measure);
	for (int i = 0; i < src->n_measure; i++) {
		dst->measure[i] = src->measure[i];
		dst->measure[i].gpu = xstrdup(src->measure[i].gpu);
	}
}

static int read_measure(struct layer_measure *mm, const cJSON *o,
			const char *where, struct err *e)
{
	const char *gpu;

	if (!cJSON_IsObject(o))
		return err_set(e, "field '%s' must be an object", where);
	if (json_keys(o, where, measure_fields, e) ||
	    json_str(o, where, "gpu", true, &gpu, e) ||
	    json_int(o, where, "tp", true, 1, MAX_TP, &mm->tp, e) ||
	    json_int(o, where, "micro_batch_size", true, 1, MAX_MBS, &mm->mbs, e) ||
	    json_int(o, where, "seq_length", true, 1, MODEL_MAX_SEQ, &mm->seq, e) ||
	    seconds(o, where, "forward_s", &mm->fwd_s, e) ||
	    /* optional: without it backward is 2 x forward (AMP) */
	    (cJSON_GetObjectItemCaseSensitive(o, "backward_s") &&
	     seconds(o, where, "backward_s", &mm->bwd_s, e)))
		return -1;
	mm->gpu = xstrdup(gpu);
	return 0;
}

/* Reads the optional "measured" array of a layer entry into l. */
static int read_measures(struct layer *l, const cJSON *o, const char *where,
			 struct err *e)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "measured");
	const cJSON *it;
	char at[96];

	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return err_set(e, "field '%s.measured' must be an array", where);
	l->measure = xcalloc((size_t)cJSON_GetArraySize(arr), sizeof *l->measure);
	cJSON_ArrayForEach(it, arr)
	{
		snprintf(at, sizeof at, "%s.measured[%d]", where, l->n_measure);
		if (read_measure(&l->measure[l->n_measure], it, at, e))
			return -1;
		l->n_measure++;
	}
	return 0;
}

/* Reads one entry of "layers" (not its repeat count) into *l; on failure
 * the caller frees l's measurements. */
static int read_layer(struct layer *l, const cJSON *o, const char *where,
		      struct err *e)
{
	const char *kind;
	char key[80];
	int k;

	snprintf(key, sizeof key, "%s.kind", where);
	l->expert_params = 0;
	if (json_str(o, where, "kind", true, &kind, e) ||
	    fields_pick(key, kind, kind_names, 3, &k, e) ||
	    json_num(o, where, "params", true, 0, MAX_AMOUNT, &l->params, e) ||
	    json_num(o, where, "expert_params", false, 0, l->params,
		     &l->expert_params, e) ||
	    json_num(o, where, "flops_per_token", true, 0, MAX_AMOUNT,
		     &l->flops_per_token, e) ||
	    json_num(o, where, "activation_bytes_per_token", true, 0, MAX_AMOUNT,
		     &l->act_bytes_per_token, e) ||
	    json_num(o, where, "output_bytes_per_token", true, 0, MAX_AMOUNT,
		     &l->out_bytes_per_token, e))
		return -1;
	l->kind = (enum layer_kind)k;
	return read_measures(l, o, where, e);
}

/* First pass over "layers": every entry an object with known keys and a
 * valid repeat; their expansion must be exactly num_layers + 2 long. */
static int count_layers(const struct model *m, const cJSON *arr, struct err *e)
{
	const cJSON *it;
	long total = 0;
	int i = 0;
	char where[32];

	if (!cJSON_IsArray(arr))
		return err_set(e, "field 'layers' must be an array");
	cJSON_ArrayForEach(it, arr)
	{
		int repeat = 1;

		snprintf(where, sizeof where, "layers[%d]", i++);
		if (!cJSON_IsObject(it))
			return err_set(e, "field '%s' must be an object", where);
		if (json_keys(it, where, layer_fields, e) ||
		    json_int(it, where, "repeat", false, 1, MAX_LAYERS, &repeat, e))
			return -1;
		total += repeat;
	}
	if (total != m->layers + 2)
		return err_set(e, "field 'layers' must expand to num_layers + 2 = %d "
				  "entries (the embedding, %d blocks, the head), not %ld",
			       m->layers + 2, m->layers, total);
	return 0;
}

/* Reads a profile's "layers" array into m->layer: the embedding, then
 * num_layers blocks (entries may stand for several with "repeat"), then
 * the head. */
static int read_layers(struct model *m, const cJSON *arr, struct err *e)
{
	const cJSON *it;
	int n = 0, i = 0;
	char where[32];

	if (count_layers(m, arr, e))
		return -1;
	m->n_layer = m->layers + 2;
	m->layer = xcalloc((size_t)m->n_layer, sizeof *m->layer);
	cJSON_ArrayForEach(it, arr)
	{
		struct layer l = { 0 };
		int repeat = 1, rc;

		snprintf(where, sizeof where, "layers[%d]", i++);
		rc = json_int(it, where, "repeat", false, 1, MAX_LAYERS, &repeat, e) ||
		     read_layer(&l, it, where, e);
		for (int r = 0; rc == 0 && r < repeat; r++, n++) {
			enum layer_kind want = n == 0 ? LAYER_EMBEDDING : n == m->n_layer - 1 ? LAYER_HEAD
											      : LAYER_BLOCK;

			if (l.kind != want)
				rc = err_set(e, "field '%s.kind' must be '%s', not '%s'",
					     where, kind_names[want], kind_names[l.kind]);
			else
				copy_layer(&m->layer[n], &l);
		}
		model_free_measures(&l);
		if (rc)
			return -1;
	}
	return 0;
}

/* Fails with "unknown field 'KEY'" where the root object doc has a key
 * that neither profile_fields nor arch_fields lists. */
static int check_keys(const cJSON *doc, struct err *e)
{
	const char *allowed[N_PROFILE + N_ARCH + 1];

	for (int i = 0; i < N_PROFILE; i++)
		allowed[i] = profile_fields[i];
	for (int i = 0; i < N_ARCH; i++)
		allowed[N_PROFILE + i] = arch_fields[i].key;
	allowed[N_PROFILE + N_ARCH] = NULL;
	return json_keys(doc, "", allowed, e);
}

/* Loads the profiles/ format from doc into m. */
static int load_profile(struct model *m, const cJSON *doc, struct err *e)
{
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	const char *name, *source;

	if (check_keys(doc, e) ||
	    json_str(doc, "", "name", true, &name, e) ||
	    json_str(doc, "", "source", false, &source, e))
		return -1;
	m->name = xstrdup(name);
	if (fields_read_dims(m, doc, &profile_keys, e) ||
	    read_profile_opts(m, doc, e))
		return -1;
	if (!layers) {
		model_derive_layers(m);
		return 0;
	}
	return read_layers(m, layers, e);
}

int model_load(struct model **out, const char *path, struct err *e)
{
	struct model *m = NULL;
	cJSON *doc = json_load(path, e);

	*out = NULL;
	if (!doc)
		return -1;
	m = xcalloc(1, sizeof *m);
	if (!cJSON_IsObject(doc)) {
		err_set(e, "the document must be a JSON object");
		goto fail;
	}
	if (cJSON_GetObjectItemCaseSensitive(doc, "model_type") ? hf_load(m, doc, path, e) : load_profile(m, doc, e))
		goto fail;
	cJSON_Delete(doc);
	*out = m;
	return 0;
fail:
	err_prefix(e, "%s", path);
	cJSON_Delete(doc);
	model_free(m);
	return -1;
}

/* Stops on a NULL from cJSON (it only fails for lack of memory). */
static cJSON *must(cJSON *x)
{
	return must_alloc(x);
}

/* Puts v with the fewest of 15 or 17 significant digits that read back as
 * v exactly (cJSON's own printer stops at 15 when they come within an
 * epsilon, which would change a windowed block's FLOPs on a round trip). */
static void put_num(cJSON *o, const char *key, double v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof buf, "%.17g", v);
	must(cJSON_AddRawToObject(o, key, buf));
}

static void put_str(cJSON *o, const char *key, const char *v)
{
	must(cJSON_AddStringToObject(o, key, v));
}

static void put_bool(cJSON *o, const char *key, bool v)
{
	must(cJSON_AddBoolToObject(o, key, v));
}

static bool same_layer(const struct layer *x, const struct layer *y)
{
	if (x->kind != y->kind || x->params != y->params ||
	    x->expert_params != y->expert_params ||
	    x->flops_per_token != y->flops_per_token ||
	    x->act_bytes_per_token != y->act_bytes_per_token ||
	    x->out_bytes_per_token != y->out_bytes_per_token ||
	    x->n_measure != y->n_measure)
		return false;
	for (int i = 0; i < x->n_measure; i++) {
		const struct layer_measure *p = &x->measure[i], *q = &y->measure[i];

		if (strcmp(p->gpu, q->gpu) || p->tp != q->tp || p->mbs != q->mbs ||
		    p->seq != q->seq || p->fwd_s != q->fwd_s || p->bwd_s != q->bwd_s)
			return false;
	}
	return true;
}

static void put_measures(cJSON *o, const struct layer *l)
{
	cJSON *arr;

	if (!l->n_measure)
		return;
	arr = must(cJSON_AddArrayToObject(o, "measured"));
	for (int i = 0; i < l->n_measure; i++) {
		const struct layer_measure *mm = &l->measure[i];
		cJSON *p = must(cJSON_CreateObject());

		cJSON_AddItemToArray(arr, p);
		put_str(p, "gpu", mm->gpu);
		put_num(p, "tp", mm->tp);
		put_num(p, "micro_batch_size", mm->mbs);
		put_num(p, "seq_length", mm->seq);
		put_num(p, "forward_s", mm->fwd_s);
		if (mm->bwd_s > 0)
			put_num(p, "backward_s", mm->bwd_s);
	}
}

/* Appends the entry for l, standing for repeat equal layers, to arr. */
static void put_layer(cJSON *arr, const struct layer *l, int repeat)
{
	cJSON *o = must(cJSON_CreateObject());

	cJSON_AddItemToArray(arr, o);
	put_str(o, "kind", kind_names[l->kind]);
	if (repeat > 1)
		put_num(o, "repeat", repeat);
	put_num(o, "params", l->params);
	if (l->expert_params)
		put_num(o, "expert_params", l->expert_params);
	put_num(o, "flops_per_token", l->flops_per_token);
	put_num(o, "activation_bytes_per_token", l->act_bytes_per_token);
	put_num(o, "output_bytes_per_token", l->out_bytes_per_token);
	put_measures(o, l);
}

/* Puts v under key when it is not 0. */
static void put_nonzero(cJSON *o, const char *key, double v)
{
	if (v != 0)
		put_num(o, key, v);
}

/* Puts m's "rope_scaling", if it has one. */
static void put_scaling(cJSON *o, const struct model *m)
{
	const struct rope_scaling *r = &m->rope_scaling;
	cJSON *s;

	if (!r->type[0])
		return;
	s = must(cJSON_AddObjectToObject(o, "rope_scaling"));
	put_str(s, "type", r->type);
	put_nonzero(s, "factor", r->factor);
	put_nonzero(s, "low_freq_factor", r->low_freq_factor);
	put_nonzero(s, "high_freq_factor", r->high_freq_factor);
	put_nonzero(s, "original_max_position_embeddings", r->original_max_pos);
}

/* Puts arch_fields[i] of m as its type and put say. */
static void put_arch_field(cJSON *o, const struct model *m, int i)
{
	const struct arch_field *f = &arch_fields[i];
	const char *p = (const char *)m + f->at;
	double v = 0;

	switch (f->type) {
	case ARCH_SCALING:
		put_scaling(o, m);
		return;
	case ARCH_BOOL:
		if (*(const bool *)p)
			put_bool(o, f->key, true);
		return;
	case ARCH_NUM:
		v = *(const double *)p;
		break;
	case ARCH_INT:
		v = *(const int *)p;
		break;
	}
	if (f->put == PUT_WINDOWED ? m->sliding_window != 0 : f->put == PUT_ABOVE_1 ? v > 1
										    : v != 0)
		put_num(o, f->key, v);
}

/* The fields of read_profile_arch that differ from their defaults. */
static void put_arch(cJSON *o, const struct model *m)
{
	if (m->model_type[0])
		put_str(o, "hf_model_type", m->model_type);
	if (m->model_type[0] || m->norm != NORM_RMS)
		put_str(o, "normalization", norm_names[m->norm]);
	for (int i = 0; i < N_ARCH; i++)
		put_arch_field(o, m, i);
}

static void put_dims(cJSON *o, const struct model *m)
{
	put_str(o, "name", m->name);
	put_num(o, "hidden_size", m->hidden);
	put_num(o, "num_layers", m->layers);
	put_num(o, "num_attention_heads", m->heads);
	put_num(o, "num_kv_heads", m->kv_heads);
	put_num(o, "head_dim", m->head_dim);
	put_num(o, "ffn_hidden_size", m->ffn);
	put_str(o, "ffn_kind", ffn_names[m->ffn_kind]);
	put_num(o, "vocab_size", m->vocab);
	put_num(o, "seq_length", m->seq);
	put_num(o, "global_batch_size", m->gbs);
	put_num(o, "max_position_embeddings", m->max_pos);
	put_bool(o, "tie_word_embeddings", m->tied);
	put_bool(o, "bias", m->bias);
	put_str(o, "position_embedding", pos_names[m->learned_pos]);
	put_str(o, "dtype", m->dtype_bytes == 4 ? "fp32" : m->fp16 ? "fp16"
								   : "bf16");
	if (m->experts > 0) {
		put_num(o, "num_experts", m->experts);
		put_num(o, "moe_top_k", m->top_k);
		put_num(o, "moe_ffn_hidden_size", m->moe_ffn);
	}
	put_arch(o, m);
}

char *model_profile_json(const struct model *m)
{
	cJSON *root = must(cJSON_CreateObject()), *arr;
	char *txt, *copy;

	put_dims(root, m);
	arr = must(cJSON_AddArrayToObject(root, "layers"));
	for (int i = 0, run; i < m->n_layer; i += run) {
		run = 1;
		while (i + run < m->n_layer &&
		       same_layer(&m->layer[i], &m->layer[i + run]))
			run++;
		put_layer(arr, &m->layer[i], run);
	}
	txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		must(NULL);
	copy = xstrdup(txt);
	cJSON_free(txt);
	return copy;
}
