/* model.c: deriving each layer's parameters, FLOPs and activation sizes
 * from a model's dimensions (formulas: ../shared/reference/COSTMODEL.md),
 * and the sums and checks over them; input/profile.c and input/hf.c read
 * the files. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "util.h"

double model_doc_share(const struct model *m, int seq)
{
	double keys = 0;

	if (m->n_doc == 0 || seq < 1)
		return 1;
	for (int i = 0; i < m->n_doc; i++)
		keys += m->doc[i].share * (m->doc[i].tokens < seq ? m->doc[i].tokens : seq);
	return keys / seq;
}

int model_check_seq(const struct model *m, int seq, const char *what,
		    struct err *e)
{
	if (seq < 1 || seq > MODEL_MAX_SEQ)
		return err_set(e, "%s must be an integer in [1, %d], not %d", what,
			       MODEL_MAX_SEQ, seq);
	if (m->learned_pos && seq > m->max_pos)
		return err_set(e, "%s must be at most 'max_position_embeddings' "
				  "(%d) with learned positions, not %d",
			       what,
			       m->max_pos, seq);
	return 0;
}

void model_free_measures(struct layer *l)
{
	for (int i = 0; i < l->n_measure; i++)
		free(l->measure[i].gpu);
	free(l->measure);
	l->measure = NULL;
	l->n_measure = 0;
}

static void free_layers(struct model *m)
{
	for (int i = 0; i < m->n_layer; i++)
		model_free_measures(&m->layer[i]);
	free(m->layer);
	m->layer = NULL;
	m->n_layer = 0;
}

int model_check_gpus(const struct model *m, const struct cluster *c,
		     struct err *e)
{
	for (int i = 0; i < m->n_layer; i++)
		for (int j = 0; j < m->layer[i].n_measure; j++) {
			const char *gpu = m->layer[i].measure[j].gpu;
			char types[256] = "";
			size_t len = 0;
			int k = 0;

			while (k < c->n_gpu && strcmp(c->gpu[k].name, gpu) != 0)
				k++;
			if (k < c->n_gpu)
				continue;
			for (k = 0; k < c->n_gpu && len < sizeof types; k++)
				len += (size_t)snprintf(types + len, sizeof types - len,
							"%s%s", k ? ", " : "",
							c->gpu[k].name);
			return err_set(e, "layer %d: measured point for GPU type "
					  "'%s', which cluster '%s' does not define "
					  "(its types: %s)",
				       i, gpu, c->name, types);
		}
	return 0;
}

bool model_block_windowed(const struct model *m, int i)
{
	return m->sliding_window > 0 &&
	       (m->sliding_every <= 1 || (i + 1) % m->sliding_every != 0);
}

bool model_block_moe(const struct model *m, int i)
{
	return m->experts > 0 && i >= m->dense_layers &&
	       (i + 1) % (m->moe_every > 0 ? m->moe_every : 1) == 0;
}

bool model_heads_split(const struct model *m, int tp, int a)
{
	int kv = m->kv_heads > 0 ? m->kv_heads : m->heads;

	return m->heads % tp == 0 && (m->heads / tp) % a == 0 && kv % tp == 0 &&
	       (kv / tp) % a == 0;
}

/* model_attn_flops, and with windowed = false every block's keys counted
 * as full attention (model_attn_flops_all). */
static double attn_flops(const struct model *m, int l, int seq, bool windowed)
{
	int a = m->heads > 0 ? m->heads : 1;
	double d = m->head_dim > 0 ? m->head_dim : (double)m->hidden / a;
	double dv = m->kv_lora_rank > 0 ? m->v_head_dim : d;
	double keys = seq, w = m->sliding_window;

	if (m->layer[l].kind != LAYER_BLOCK)
		return 0;
	if (windowed && model_block_windowed(m, l - 1) && w < seq)
		keys = w * (2.0 * seq - w + 1) / (seq + 1.0);
	return 2.0 * keys * a * (d + dv);
}

double model_attn_flops(const struct model *m, int l, int seq)
{
	return attn_flops(m, l, seq, true);
}

double model_attn_flops_all(const struct model *m, int l, int seq)
{
	return attn_flops(m, l, seq, false);
}

double model_mla_weights(const struct model *m, double *norms)
{
	double h = m->hidden, a = m->heads, rq = m->q_lora_rank;
	double rkv = m->kv_lora_rank, dr = m->qk_rope_dim;
	double dq = m->qk_nope_dim + dr, dv = m->v_head_dim;
	double q = rq > 0 ? h * rq + rq * a * dq : h * a * dq;

	*norms = rq + rkv;
	return q + h * (rkv + dr) + rkv * a * (m->qk_nope_dim + dv) + a * dv * h;
}

/* One transformer block, block i (0-based), (COSTMODEL.md, "Parameters" and
 * "FLOPs"; Llama style, with GPT-2's biases when m->bias). With h hidden,
 * a heads, g KV heads, d head_dim, f ffn:
 *   attention 2*h*a*d + 2*h*g*d (MLA: mla_weights); MLP 3*h*f (gated:
 *   SwiGLU, GeGLU) or 2*h*f (GeLU, squared ReLU); block_norms norms (2 by
 *   default) of h weights, 2h for LayerNorm or with biases;
 *   biases (a + 2g)*d QKV + h out with bias, (a + 2g)*d with qkv_bias only;
 *   f + h MLP with bias or mlp_bias; so a GPT block (f = 4h, g = a) has
 *   12h^2 + 13h (Megatron-LM 2021 Eq. 2); plus qk_norm_params;
 *   MoE block (model_block_moe): E experts of the MLP shape with f_e,
 *   counted in expert_params, plus a router h*E, shared_experts always-on
 *   experts of shared_ffn and moe_extra_params; per token top_k routed
 *   experts and the shared ones run. A dense block of an MoE model has the
 *   dense MLP of f.
 * Forward FLOPs per token: 2 * (matmul weights one token runs through) +
 * model_attn_flops.
 * Activations per token (Megatron theoretical_memory_usage.py, sequence
 * parallel and selective recomputation): 18h + 4f bytes, 34h for f = 4h
 * (Korthikanti et al. 2022 Sec. 4.1: attention 11h, MLP 3h + 4f, the two
 * norms' inputs 4h); MoE 4*(f_e*top_k + shared_ffn*shared_experts) for 4f.
 * In that style: each norm beyond two stores its input, + 2h each (one
 * fewer: - 2h); a parallel block's MLP reads the attention's input, - 2h;
 * q/k norms store q and k, + 2*(a + g)*d; MLA stores Q, K (a*d_q each), V
 * and the context (a*d_v each) instead of 4 of h, + 4*a*(d_q + d_v) - 8h,
 * and its latents before and after their norms, 4*r_q + 4*r_kv + 2*d_r. */
static void derive_block(const struct model *m, int i, struct layer *l)
{
	double h = m->hidden, a = m->heads, g = m->kv_heads, d = m->head_dim;
	double mats = m->ffn_kind == FFN_SWIGLU ? 3 : 2, norm_w = 0;
	double attn = 2 * h * a * d + 2 * h * g * d;
	double attn_bias = m->bias ? (a + 2 * g) * d + h : m->qkv_bias ? (a + 2 * g) * d
								       : 0;
	bool fbias = m->bias || m->mlp_bias;
	double f = m->ffn, mlp = mats * h * f, mlp_bias = fbias ? f + h : 0;
	double norms = m->block_norms > 0 ? m->block_norms : 2;
	double act = 18 * h + 4 * f + 2 * h * (norms - 2), active;

	if (m->kv_lora_rank > 0) {
		attn = model_mla_weights(m, &norm_w);
		act += 4 * a * (d + m->v_head_dim) - 8 * h +
		       4.0 * m->q_lora_rank + 4.0 * m->kv_lora_rank +
		       2.0 * m->qk_rope_dim;
	}
	active = attn + mlp;
	l->kind = LAYER_BLOCK;
	l->expert_params = 0;
	if (model_block_moe(m, i)) {
		double fe = m->moe_ffn, E = m->experts, k = m->top_k;
		double fs = m->shared_ffn, ns = m->shared_experts;
		double shared = ns * (mats * h * fs + (fbias ? fs + h : 0));

		mlp = mats * h * fe;
		l->expert_params = E * (mlp + (fbias ? fe + h : 0));
		active = attn + k * mlp + h * E + ns * mats * h * fs;
		mlp = l->expert_params + h * E + shared + m->moe_extra_params;
		mlp_bias = 0;
		act += 4 * (fe * k + fs * ns) - 4 * f;
	}
	if (m->parallel_block)
		act -= 2 * h;
	if (m->qk_norm)
		act += 2 * (a + g) * d;
	l->act_bytes_per_token = act;
	l->params = attn + norm_w + attn_bias + m->qk_norm_params + mlp +
		    mlp_bias + norms * h * (m->bias || m->norm == NORM_LAYER ? 2 : 1);
	l->flops_per_token = 2 * active;
	l->out_bytes_per_token = (double)m->dtype_bytes * h;
}

/* Embedding: V*h (+ max_pos*h learned positions); no matmul FLOPs. */
static void derive_embedding(const struct model *m, struct layer *l)
{
	double h = m->hidden;

	l->kind = LAYER_EMBEDDING;
	l->params = (double)m->vocab * h + (m->learned_pos ? m->max_pos * h : 0);
	l->out_bytes_per_token = m->dtype_bytes * h;
}

/* Head: final norm h (+ h bias with biases or LayerNorm) and the LM head
 * V*h (+ V with head_bias), present on the last
 * stage even when tied (Megatron keeps a copy there; model_params counts it
 * once); forward 2*h*V FLOPs per token (COSTMODEL.md "LM head"); 4h bytes
 * of activations per token. */
static void derive_head(const struct model *m, struct layer *l)
{
	double h = m->hidden;

	l->kind = LAYER_HEAD;
	l->params = h + (m->bias || m->norm == NORM_LAYER ? h : 0) +
		    (double)m->vocab * h + (m->head_bias ? m->vocab : 0);
	l->flops_per_token = 2 * h * m->vocab;
	l->act_bytes_per_token = 4 * h;
}

void model_derive_layers(struct model *m)
{
	free_layers(m);
	m->n_layer = m->layers + 2;
	m->layer = xcalloc((size_t)m->n_layer, sizeof *m->layer);
	derive_embedding(m, &m->layer[0]);
	derive_head(m, &m->layer[m->n_layer - 1]);
	for (int i = 1; i <= m->layers; i++) {
		m->layer[i].kind = LAYER_BLOCK;
		derive_block(m, i - 1, &m->layer[i]);
		m->layer[i].flops_per_token += model_attn_flops(m, i, m->seq);
	}
}

int model_set_seq(struct model *m, int seq, struct err *e)
{
	if (model_check_seq(m, seq, "the sequence length", e))
		return -1;
	for (int i = 0; i < m->n_layer; i++)
		if (m->layer[i].kind == LAYER_BLOCK)
			m->layer[i].flops_per_token += model_attn_flops(m, i, seq) -
						       model_attn_flops(m, i, m->seq);
	m->seq = seq;
	return 0;
}

double model_params(const struct model *m)
{
	double sum = 0;

	for (int i = 0; i < m->n_layer; i++)
		sum += m->layer[i].params;
	return m->tied ? sum - (double)m->vocab * m->hidden : sum;
}

double model_active_params(const struct model *m)
{
	double idle = m->experts > 0 ? 1 - (double)m->top_k / m->experts : 0, sum = model_params(m);

	for (int i = 0; i < m->n_layer; i++)
		sum -= m->layer[i].expert_params * idle;
	return sum;
}

double model_flops_per_token(const struct model *m)
{
	double sum = 0;

	for (int i = 0; i < m->n_layer; i++)
		sum += m->layer[i].flops_per_token;
	return sum;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	free_layers(m);
	free(m->name);
	free(m);
}
