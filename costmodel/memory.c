/* memory.c: bytes per GPU of a layer: model states under ZeRO and the
 * activations kept for the backward pass under TP/SP/CP and recomputation. */
#include "memory.h"

#include <math.h>
#include <stdbool.h>

#include "model.h"
#include "moe.h"
#include "strategy.h"

double memory_grad_bytes(const struct strategy *s)
{
	return s->grad_bytes > 0 ? s->grad_bytes : 4.0;
}

double memory_moment_bytes(const struct strategy *s)
{
	return s->moment_bytes > 0 ? s->moment_bytes : 4.0;
}

double memory_opt_bytes(const struct strategy *s)
{
	return MEM_MASTER_BYTES + 2 * memory_moment_bytes(s);
}

void memory_params(const struct layer *ly, const struct strategy *s,
		   double *dense, double *expert)
{
	if (s->vocab_par && ly->kind != LAYER_BLOCK) {
		/* on every rank instead: memory_vocab_params */
		*dense = *expert = 0;
		return;
	}
	*dense = (ly->params - ly->expert_params) / s->tp;
	*expert = ly->expert_params / ((double)s->ep * strategy_etp(s));
}

/* Model states per GPU (Rajbhandari et al. 2020 Sec. 5, Fig. 1; Megatron
 * theoretical_memory_usage.py), per parameter, with G = grad_bytes (4 for
 * Megatron's fp32 main gradients, 2 for DeepSpeed's or fp16 Megatron's)
 * and K = memory_opt_bytes (12, or 8 with bf16 Adam moments):
 *   zero 0: 2 + G + K
 *   zero 1: 2 + G + K/n       (distributed optimizer: 6 + 12/n)
 *   zero 2: 2 + (G + K)/n
 *   zero 3: (2 + G + K)/n
 * FP8 adds nothing that persists: Transformer Engine casts each weight to
 * FP8 for its GEMM (a transient within the allowance) and saves FP8 GEMM
 * inputs for the backward pass, which the bf16 activation model bounds.
 * n = dp*cp for dense parameters (the DP x CP group Megatron shards the
 * optimizer over), strategy_edp for expert parameters (expert-data-
 * parallel). Dense parameters split by t, experts by e*etp (memory_params). */
static void states(struct layer_mem *lm, const struct layer *ly,
		   const struct strategy *s)
{
	double D, E, n = (double)s->dp * s->cp, n_e;

	memory_params(ly, s, &D, &E);
	n_e = strategy_edp(s);
	lm->weights = MEM_WEIGHT_BYTES * (s->zero >= 3 ? D / n + E / n_e : D + E);
	lm->grads = memory_grad_bytes(s) * (s->zero >= 2 ? D / n + E / n_e : D + E);
	lm->optimizer = memory_opt_bytes(s) * (s->zero >= 1 ? D / n + E / n_e : D + E);
}

/* The activation bytes per GPU that selective recomputation's modules
 * other than core_attn drop from block l (memory_layer clamps what is left
 * at the block's input). */
static double module_savings(const struct model *m, int l, const struct strategy *s,
			     double tokens)
{
	unsigned mods = strategy_rc_modules(s);
	int dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	bool split = s->sp || s->tp <= 1, moe = model_block_moe(m, l - 1);
	double x = 0, k = m->top_k, lam = moe ? moe_load_factor(m, s) : 1;
	double shared = 2.0 * dt * m->shared_ffn * m->shared_experts;

	if (mods & RM_LAYERNORM)
		x += 2.0 * dt * m->hidden * tokens / (split ? s->tp : 1);
	if ((mods & RM_MLP) && !moe)
		x += 2.0 * m->ffn * dt * tokens / s->tp;
	if ((mods & RM_MOE) && moe)
		x += (lam * k * (2.0 * dt * m->moe_ffn + dt * (double)m->hidden) + shared) * tokens / s->tp;
	if ((mods & RM_MOE_ACT) && moe && !(mods & RM_MOE))
		x += k * m->moe_ffn * dt * lam * tokens / s->tp;
	if ((mods & RM_SHARED_EXPERTS) && moe && !(mods & RM_MOE))
		x += shared * tokens / s->tp;
	if ((mods & RM_MLA_UP_PROJ) && m->kv_lora_rank > 0)
		x += (double)dt * m->heads * (2.0 * (m->qk_nope_dim + m->qk_rope_dim) + m->v_head_dim) *
		     tokens / s->tp;
	return x;
}

/* Fine-grained activation offloading (Megatron-Core's --offload-modules):
 * each module's input, which the module saves for its backward pass, goes
 * to host memory as the forward pass leaves the module and comes back
 * before its backward pass. Per token per GPU, dtype bytes x:
 * - attn_norm, mlp_norm: the norm's input, h (/t with SP or t = 1, the
 *   residual stream's shard);
 * - qkv_linear: the QKV projection's input (the norm's output), h (/t as
 *   above: with SP the shard is saved and gathered again for the backward);
 * - core_attn: Q, K and V, (a d_q + g d_q + g d_v) / t (MLA: a (2 d_q +
 *   d_v) / t, its heads' up-projected K and V), split over TP by heads;
 * - attn_proj: the output projection's input, a d_v / t;
 * - expert_fc1 (MoE blocks): the routed experts' first GEMM input, the
 *   top_k copies of each token the dispatch delivers, lam k h / t
 *   (moe_load_factor lam: the busiest EP rank's share, as memory_layer);
 * - moe_act (MoE blocks): the activation function's input, the first
 *   GEMM's output, lam k f_e / t, twice that for a gated MLP (SwiGLU).
 * Korthikanti et al. 2022 Table 2 counts these tensors among a block's
 * activations (A); memory_layer takes them out of what stays on the GPU,
 * never below 0. A tensor that selective recomputation does not keep is
 * not offloaded: qkv_linear's under layernorm (the norms' outputs),
 * core_attn's under mla_up_proj with MLA (the up-projected Q, K, V),
 * expert_fc1's and moe_act's under moe (the whole MoE layer). */
double memory_offload(const struct model *m, int l, const struct strategy *s)
{
	unsigned mods = s->offload_modules, rc = strategy_rc_modules(s);
	int dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	bool split = s->sp || s->tp <= 1, moe;
	double h = (double)m->hidden / (split ? s->tp : 1), x = 0;
	double dq = m->kv_lora_rank > 0 ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
	double dv = m->kv_lora_rank > 0 ? m->v_head_dim : m->head_dim;
	double g = m->kv_lora_rank > 0 ? m->heads : m->kv_heads;

	if (!mods || m->layer[l].kind != LAYER_BLOCK)
		return 0;
	moe = model_block_moe(m, l - 1);
	if (rc & RM_LAYERNORM)
		mods &= ~(unsigned)OM_QKV_LINEAR;
	if ((rc & RM_MLA_UP_PROJ) && m->kv_lora_rank > 0)
		mods &= ~(unsigned)OM_CORE_ATTN;
	if (rc & RM_MOE)
		mods &= ~(unsigned)(OM_EXPERT_FC1 | OM_MOE_ACT);
	if (mods & OM_ATTN_NORM)
		x += h;
	if (mods & OM_QKV_LINEAR)
		x += h;
	if (mods & OM_CORE_ATTN)
		x += (m->heads * dq + g * (dq + dv)) / s->tp;
	if (mods & OM_ATTN_PROJ)
		x += m->heads * dv / s->tp;
	if (mods & OM_MLP_NORM)
		x += h;
	if (moe) {
		double k = m->top_k * moe_load_factor(m, s) / s->tp;

		if (mods & OM_EXPERT_FC1)
			x += k * m->hidden;
		if (mods & OM_MOE_ACT)
			x += k * m->moe_ffn * (m->ffn_kind == FFN_SWIGLU ? 2 : 1);
	}
	return dt * x;
}

/* Activations per micro-batch per GPU (Korthikanti et al. 2022 Sec. 4,
 * Table 2), from the layer's act_bytes_per_token A (sequence-parallel form,
 * attention scores not stored: 34h for GPT, (18 + 4f/h)h in Megatron):
 * - block, SP (or t = 1): A * b*s / (t*c)            (Table 2, "TP + SP")
 * - block, t > 1 without SP: the 10*s*b*h of LayerNorm and dropout inputs
 *   stay replicated: ((A - 10h)/t + 10h) * b*s/c      (Table 2, "TP": 10 + 24/t),
 *   10h taken as 5*dtype*h bytes per token (10h at 2 bytes);
 * - block, recompute none, without flash attention (fused-softmax or
 *   unfused kernels): plus the attention scores, softmax and dropout,
 *   5*a*s per token: 5*a*s * b*s/(t*c) bytes (Table 2, 5as/h * sbh, split by
 *   t across heads), which selective recomputation saves at the cost of the
 *   attention core; flash attention never stores them (Dao et al. 2022);
 * - block, recompute selective: A only (Sec. 4.2.2: the score term dropped);
 *   that is the core_attn module (strategy_rc_modules); without it the
 *   scores stay, and each other module drops what it would keep: layernorm
 *   the two norms' outputs (the inputs of QKV and of the first MLP GEMM),
 *   2 x dtype*h per token (/t with SP); mlp, in a dense block, the first
 *   GEMM's output and the activation's, the 2 f x dtype / t that A counts
 *   for them (its 4f; a gated MLP's first output is 2f wide, which A, as
 *   Megatron's formula, does not count); in an MoE block, moe_act the
 *   routed experts' activation outputs, top_k f_e dtype / t x
 *   moe_load_factor, shared_experts the shared experts' two, 2 n_s f_s
 *   dtype / t, moe the whole MoE layer's: both experts' 2 f dtype rows
 *   and the dispatched tokens, lam top_k (2 f_e + h) dtype / t plus the
 *   shared experts', keeping its input (the norm output); mla_up_proj,
 *   with MLA, the up projections' Q, K and V, a (2 d_q + d_v) dtype / t
 *   (Megatron-Core recompute_modules: transformer_layer.py, mlp.py,
 *   experts.py, shared_experts.py, multi_latent_attention.py); what is
 *   left never below the block's input;
 * - block, recompute full: only the block input, 2*s*b*h: dtype*h * b*s/(t*c)
 *   with SP, /c without (Sec. 4.1). The one layer being recomputed during
 *   the backward pass is transient and falls under the allowance;
 * - embedding and head: A * b*s/(t*c) with SP, A * b*s/c without (their
 *   inputs are replicated across TP); never recomputed.
 * Extra (transient, once per stage): the head's logits for the loss,
 * b*s*V/(t*c) of them in the training dtype (the LM head's output, still
 * referenced) and in fp32 (vocabulary-parallel cross-entropy upcasts them
 * and keeps the softmax for the backward in place): dtype + 4 bytes each.
 * This is Megatron's loss: language_module.py compute_language_model_loss
 * calls tensor_parallel.vocab_parallel_cross_entropy, whose
 * calculate_logits_max takes logits.float() per TP shard (V/t columns)
 * and saves exp() of it, in place, as the softmax for the backward; the
 * whole micro-batch at once, no chunking along the sequence (torchtitan's
 * loss_parallel keeps the same fp32 shard). Under 1F1B the last stage runs
 * a micro-batch's backward right after its forward, so one micro-batch's
 * logits are alive at a time. With SlimPipe (s->slices = n) the loss runs
 * per slice: b*s/(n*c) tokens of logits at a time.
 * - block, SlimPipe: plus the K and V of the whole micro-batch, 2*g*d*dtype
 *   bytes per token / t: later slices attend to the earlier slices' K and
 *   V, which stay until the micro-batch's backward has passed them
 *   (SlimPipe Sec. 3, attention context); an upper bound, as the slices in
 *   flight count their own K and V in A too.
 * With vocabulary parallelism the embedding and the head hold nothing
 * here (memory_vocab has every rank's share).
 * Deferred LM-head weight gradients (strategy_deferred, D micro-batches)
 * keep each deferred micro-batch's head input (its SP shard, h / t a
 * token, or h without SP) and output gradient (V / t a token) until the
 * flush: D x b*s/c x dtype x (h / t + V / t) more extra bytes on the
 * head's stage (Megatron-Core's embedding_activation_buffer and
 * grad_output_buffer).
 * Offloading (memory_offload) moves its modules' inputs off the GPU:
 * lm->offload of lm->act, which keeps the rest. The layer being offloaded
 * or brought back is on the GPU meanwhile: transient, within the
 * allowance's share of the activations. */
void memory_layer(struct layer_mem *lm, const struct model *m, int l,
		  const struct strategy *s)
{
	const struct layer *ly = &m->layer[l];
	int dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	double tokens = (double)s->mbs * s->seq / s->cp;
	double A = ly->act_bytes_per_token;
	bool split = s->sp || s->tp <= 1;

	states(lm, ly, s);
	lm->extra = 0;
	lm->offload = 0;
	if (ly->kind != LAYER_BLOCK) {
		lm->act = s->vocab_par ? 0 : A * tokens / (split ? s->tp : 1);
		if (ly->kind == LAYER_HEAD && !s->vocab_par)
			lm->extra = tokens / strategy_slices(s) * m->vocab * (dt + 4.0) / s->tp +
				    strategy_deferred(s) * tokens * dt *
					    ((double)m->hidden / (split ? s->tp : 1) + (double)m->vocab / s->tp);
		return;
	}
	if (strategy_slices(s) > 1)
		lm->extra = 2.0 * m->kv_heads * m->head_dim * dt * tokens / s->tp;
	if (s->recompute == RECOMPUTE_FULL) {
		lm->act = dt * (double)m->hidden * tokens / (split ? s->tp : 1);
		return;
	}
	if (split) {
		lm->act = A * tokens / s->tp;
	} else {
		double rep = 5.0 * dt * m->hidden;

		lm->act = ((A - rep) / s->tp + rep) * tokens;
	}
	if (!(strategy_rc_modules(s) & RM_CORE_ATTN) &&
	    (s->attn == ATTN_FUSED_SOFTMAX || s->attn == ATTN_UNFUSED))
		lm->act += 5.0 * m->heads * (double)s->seq * tokens / s->tp;
	/* the busiest EP rank holds moe_load_factor x the routed experts'
	 * 4 f_e top_k bytes per token, and the experts' input: the top_k
	 * copies of each token the dispatch all-to-all delivers (its receive
	 * buffer), saved for the first expert GEMM's weight gradient, which
	 * A does not count (its norm output is the router's input, once) */
	if (model_block_moe(m, l - 1)) {
		double lam = moe_load_factor(m, s);

		lm->act += (lam - 1) * 4.0 * m->moe_ffn * m->top_k * tokens / s->tp;
		lm->act += lam * m->top_k * dt * (double)m->hidden * tokens / s->tp;
	}
	if (strategy_rc_modules(s) & ~RM_CORE_ATTN) {
		double keep = dt * (double)m->hidden * tokens / (split ? s->tp : 1);

		lm->act -= module_savings(m, l, s, tokens);
		if (lm->act < keep)
			lm->act = keep;
	}
	if (s->offload_modules) {
		lm->offload = fmin(memory_offload(m, l, s) * tokens, lm->act);
		lm->act -= lm->offload;
	}
}

/* ZeRO-3 keeps 1/n of each layer's parameters and gathers the whole of a
 * layer (its TP / EP share) for its forward and again for its backward,
 * freeing it after (PyTorch FSDP, Zhao et al. 2023 Sec. 3.2-3.4: one
 * FlatParameter, a layer, unsharded at a time, the next one's all-gather
 * issued ahead of it, forward and backward prefetching, and the rate
 * limiter allowing at most two all-gathers in flight; FSDP2's
 * fully_shard prefetches one layer ahead likewise): the running layer's
 * parameters and its neighbour's, l + 1 in the forward, l - 1 in the
 * backward. In the backward each layer's unsharded gradient waits for
 * its reduce-scatter, which runs while the layer before produces its own
 * (the same paper's backward overlap): layers l and l + 1's gradients.
 * The peak, at the start of the backward when the activations are all
 * held, has both pairs: MEM_WEIGHT_BYTES + memory_grad_bytes per
 * parameter of the largest two neighbouring layers of the model (the
 * head and the last block when the vocabulary is large), on every
 * pipeline rank. Not the whole model: only the layers running. */
void memory_gathered(const struct model *m, const struct strategy *s, double *weights,
		     double *grads)
{
	double most = 0, last = 0;

	*weights = *grads = 0;
	if (s->zero < 3)
		return;
	for (int l = 0; l < m->n_layer; l++) {
		double D, E;

		memory_params(&m->layer[l], s, &D, &E);
		if (l > 0 && last + D + E > most)
			most = last + D + E;
		last = D + E;
	}
	if (m->n_layer == 1)
		most = last;
	*weights = MEM_WEIGHT_BYTES * most;
	*grads = memory_grad_bytes(s) * most;
}

double memory_vocab_params(const struct model *m, const struct strategy *s)
{
	double P = 0;

	if (!s->vocab_par || m->n_layer < 2)
		return 0;
	for (int l = 0; l < m->n_layer; l += m->n_layer - 1)
		P += m->layer[l].params - m->layer[l].expert_params;
	/* a tied matrix once (as cost.c tied_dense: when the head holds it) */
	if (m->tied && m->layer[m->n_layer - 1].params >= (double)m->vocab * m->hidden)
		P -= (double)m->vocab * m->hidden;
	return P / ((double)s->tp * s->pp);
}

/* Vocabulary parallelism's share of one pipeline rank (Yeung et al. 2024
 * Sec. 3): 1/p of the embedding's and the head's states (states() over
 * memory_vocab_params; a tied matrix once, as shard i of both is the same
 * rows); the head's input, the last block's output broadcast to every
 * rank, A_head * b*s/(t*c) bytes (every rank needs all of it for its V/p
 * columns), one micro-batch of it (act, held once, not per micro-batch in
 * flight); the logits of its V/p columns (extra: memory_layer's head
 * logits / p). */
void memory_vocab(struct layer_mem *lm, const struct model *m, const struct strategy *s)
{
	struct strategy t = *s;
	struct layer v = { 0 };
	struct layer_mem head;

	lm->weights = lm->grads = lm->optimizer = lm->act = lm->extra = lm->offload = 0;
	if (!s->vocab_par || m->n_layer < 2)
		return;
	v.kind = LAYER_BLOCK;
	v.params = memory_vocab_params(m, s) * s->tp;
	states(lm, &v, s);
	t.vocab_par = false;
	memory_layer(&head, m, m->n_layer - 1, &t);
	lm->act = head.act;
	lm->extra = head.extra / s->pp;
}
