/* compute.c: the compute time of a layer per micro-batch, analytic or
 * interpolated from measured points, with recomputation, and the time of the
 * optimizer step. */
#include "compute.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cluster.h"
#include "memory.h"
#include "model.h"
#include "moe.h"
#include "strategy.h"
#include "util.h"

/* Attention core FLOPs per token at sequence length seq: QK^T and AV, each
 * 2*s*d per head, 4*s*a*d in all (COSTMODEL.md "FLOPs"; Narayanan et al.
 * 2021 Sec. 5.1 / Appendix: the 4*s*h term per layer with a*d = h), fewer
 * keys under a sliding window and MLA's head dims (model_attn_flops).
 * Counted whole, as the model-FLOPs convention does; compute_layer charges a
 * causal flash kernel CAUSAL_SHARE of it. */
double compute_attn_flops_per_token(const struct model *m, int l, int seq)
{
	return model_attn_flops(m, l, seq);
}

double compute_flops_per_token(const struct model *m, int l, int seq)
{
	const struct layer *ly = &m->layer[l];

	if (ly->kind != LAYER_BLOCK || m->seq <= 0 || seq == m->seq)
		return ly->flops_per_token;
	return ly->flops_per_token + model_attn_flops(m, l, seq) -
	       model_attn_flops(m, l, m->seq);
}

/* The FFN width one token runs through in block layer l: top_k routed
 * experts plus the shared ones in an MoE block, f in a dense one. */
static double ffn_per_token(const struct model *m, int l)
{
	if (!model_block_moe(m, l - 1))
		return m->ffn;
	return (double)m->moe_ffn * m->top_k + (double)m->shared_ffn * m->shared_experts;
}

/* Korthikanti et al. 2022 Sec. 5: full recomputation reruns the forward
 * pass of every transformer block (not the embedding nor the head: Megatron
 * checkpoints the blocks only, and Narayanan 2021 Eq. 3 counts the head 3x);
 * selective recomputation reruns the attention core (Sec. 4.2.2 / 5, "core
 * attention"). */
double compute_recompute_flops_per_token(const struct model *m, int l,
					 const struct strategy *s)
{
	if (m->layer[l].kind != LAYER_BLOCK)
		return 0;
	switch (s->recompute) {
	case RECOMPUTE_FULL:
		return compute_flops_per_token(m, l, s->seq);
	case RECOMPUTE_SELECTIVE:
		return compute_attn_flops_per_token(m, l, s->seq);
	default:
		return 0;
	}
}

/* The GEMM-efficiency curve of cluster.h: a saturating function of the
 * FLOPs of one GEMM on one GPU, eff_max * w / (w + w_half) (w_half: the
 * size at which half of eff_max is reached; small per-GPU GEMMs at high TP
 * or small micro-batches run less efficiently, COSTMODEL.md "Compute
 * time"). */
double compute_eff(const struct gpu_type *g, double w)
{
	if (g->eff_half_flop <= 0)
		return g->eff_max;
	if (w <= 0)
		return 0;
	return g->eff_max * w / (w + g->eff_half_flop);
}

static bool measure_ok(const struct layer_measure *p)
{
	return p->mbs >= 1 && isfinite(p->fwd_s) && p->fwd_s > 0 &&
	       isfinite(p->bwd_s) && p->bwd_s >= 0;
}

/* Measured profile (AMP, Li et al. 2022 Sec. 3.2: per layer, GPU type and
 * TP degree). Among the points of layer ly for GPU name, s->tp and s->seq,
 * linear interpolation in mbs between the nearest points below and above;
 * outside their range, proportional to mbs from the nearest point. A point
 * with bwd_s = 0 has no measured backward: 2 x fwd_s (AMP's assumption).
 * CP is applied as a perfect split of the measured time by c, as in the
 * analytic model. Returns 1 with *fwd, *bwd set; 0 if no point matches
 * (the caller falls back to the analytic time, even if the layer has points
 * for this GPU at other tp or seq); -1 with e set for an invalid point. */
static int measured(const struct layer *ly, int l, const char *gpu,
		    const struct strategy *s, double *fwd, double *bwd,
		    struct err *e)
{
	const struct layer_measure *lo = NULL, *hi = NULL;
	double f, b, flo, fhi, blo, bhi;

	for (int i = 0; i < ly->n_measure; i++) {
		const struct layer_measure *p = &ly->measure[i];

		if (!p->gpu || strcmp(p->gpu, gpu) != 0 || p->tp != s->tp ||
		    p->seq != s->seq)
			continue;
		if (!measure_ok(p))
			return err_set(e, "layer %d: measured point %d for '%s' "
					  "(tp %d, mbs %d, seq %d) needs mbs >= 1, "
					  "fwd_s > 0 and bwd_s >= 0",
				       l, i, gpu, p->tp, p->mbs, p->seq);
		if (p->mbs <= s->mbs && (!lo || p->mbs > lo->mbs))
			lo = p;
		if (p->mbs >= s->mbs && (!hi || p->mbs < hi->mbs))
			hi = p;
	}
	if (!lo && !hi)
		return 0;
	if (lo && hi && lo->mbs != hi->mbs) {
		double x = (double)(s->mbs - lo->mbs) / (hi->mbs - lo->mbs);

		flo = lo->fwd_s;
		fhi = hi->fwd_s;
		blo = lo->bwd_s > 0 ? lo->bwd_s : 2 * flo;
		bhi = hi->bwd_s > 0 ? hi->bwd_s : 2 * fhi;
		f = flo + x * (fhi - flo);
		b = blo + x * (bhi - blo);
	} else {
		const struct layer_measure *p = lo ? lo : hi;
		double r = (double)s->mbs / p->mbs;

		f = p->fwd_s * r;
		b = (p->bwd_s > 0 ? p->bwd_s : 2 * p->fwd_s) * r;
	}
	*fwd = f / s->cp;
	*bwd = b / s->cp;
	return 1;
}

/* The MLP activation's bytes per token of block l on one GPU, forward: it
 * reads its inputs and writes its output over the FFN width a token runs
 * through (ffn_per_token): SwiGLU 3 rows of f, GeLU / squared ReLU 2. */
static double act_bytes_per_token(const struct model *m, int l, const struct strategy *s)
{
	double dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;

	return (m->ffn_kind == FFN_SWIGLU ? (s->unfused_pointwise ? SWIGLU_UNFUSED : 3) : 2) *
	       ffn_per_token(m, l) * dt / s->tp;
}

/* The two norms' bytes per token of block l on one GPU, forward. */
static double norm_bytes_per_token(const struct model *m, const struct strategy *s)
{
	double dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	double rows = (s->sp || s->tp <= 1) ? 1.0 / s->tp : 1.0;

	return 2 * (s->unfused_norm ? NORM_UNFUSED : NORM_FUSED) * m->hidden * dt * rows;
}

/* RoPE's bytes per token of a block on one GPU, forward: q and k read and
 * written over their rotated dims (rotary_dim; MLA's qk_rope_dim); 0 with
 * learned positions. */
static double rope_bytes_per_token(const struct model *m, const struct strategy *s)
{
	double dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	double rot = m->kv_lora_rank > 0 ? m->qk_rope_dim : m->rotary_dim > 0 ? m->rotary_dim
									      : m->head_dim;

	if (m->learned_pos)
		return 0;
	return (s->unfused_pointwise ? ROPE_UNFUSED : 2) * ((double)m->heads + m->kv_heads) * rot *
	       dt / s->tp;
}

/* The MoE dispatcher's permutation bytes per token of block l on one GPU,
 * forward (0 in a dense block): the tokens gathered into expert order and
 * scattered back, 2 + 2 top_k rows of h. */
static double permute_bytes_per_token(const struct model *m, int l, const struct strategy *s)
{
	double dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	double rows = (s->sp || s->tp <= 1) ? 1.0 / s->tp : 1.0;

	if (!model_block_moe(m, l - 1))
		return 0;
	return (2 + 2.0 * m->top_k) * m->hidden * dt * rows;
}

/* Logits per token of layer l on one GPU under s: the head's vocabulary
 * shard, V / t; 0 in the other layers. */
static double logits_per_token(const struct model *m, int l, const struct strategy *s)
{
	return m->layer[l].kind == LAYER_HEAD ? (double)m->vocab / s->tp : 0;
}

/* Memory-bound bytes per token of layer l on one GPU under s, forward,
 * the attention core's softmax excepted (score_bytes_per_token); the MLP's
 * activation over the FFN width a token runs through (ffn_per_token), RoPE
 * over the rotated dims of q and k (rotary_dim; MLA's qk_rope_dim). */
static double mem_bytes_per_token(const struct model *m, int l,
				  const struct strategy *s)
{
	double h = m->hidden, dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	double t = s->tp, rows = (s->sp || s->tp <= 1) ? 1.0 / t : 1.0; /* per token row */
	double norm = s->unfused_norm ? NORM_UNFUSED : NORM_FUSED;
	double bytes;

	switch (m->layer[l].kind) {
	case LAYER_EMBEDDING:
		return (m->learned_pos ? 3 : 2) * h * dt;
	case LAYER_HEAD:
		return norm * h * dt * rows + CE_FWD_BYTES * logits_per_token(m, l, s);
	case LAYER_BLOCK:
		break;
	}
	bytes = (2 * norm + 2 * RESIDUAL) * h * dt * rows;
	bytes += permute_bytes_per_token(m, l, s) + act_bytes_per_token(m, l, s);
	return bytes + rope_bytes_per_token(m, s);
}

/* Softmax traffic per token of a block on one GPU without flash attention
 * (0 with it), forward: a/t scores of s keys per token. */
static double score_bytes_per_token(const struct model *m, const struct strategy *s)
{
	double dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;

	if (s->attn != ATTN_FUSED_SOFTMAX && s->attn != ATTN_UNFUSED)
		return 0;
	return (s->attn == ATTN_UNFUSED ? SCORE_UNFUSED : SCORE_FUSED) *
	       m->heads / s->tp * (double)s->seq * dt;
}

/* Seconds of w FLOPs of GEMMs of w_one FLOPs each (per GPU) on g, at the
 * size-dependent efficiency of one such GEMM; the block's linear layers in
 * FP8 when fp8 and g has an FP8 peak (Transformer Engine keeps the
 * embedding, the LM head and the attention core in bf16), with the FP8
 * curve's half point scaled by the peaks. */
static double gemm_time(const struct gpu_type *g, bool fp8, double w, double w_one)
{
	if (w <= 0)
		return 0;
	if (fp8 && g->peak_fp8_flops > 0) {
		struct gpu_type f8 = *g;

		f8.eff_max = g->fp8_eff_max > 0 ? g->fp8_eff_max : g->eff_max;
		f8.eff_half_flop = g->eff_half_flop * g->peak_fp8_flops / g->peak_flops;
		return w / (g->peak_fp8_flops * compute_eff(&f8, w_one));
	}
	return w / (g->peak_flops * compute_eff(g, w_one));
}

/* Adds to cast[] the elements, per micro-batch on one GPU, that
 * Transformer Engine casts to FP8 in kernels of their own (FP8_CAST_BYTES
 * each) for GEMM i of gemms() (0 QKV, 1 attention output, 2 and 3 the
 * MLP's or routed experts' up and down projections, 4 and 5 the shared
 * experts'): rows tokens through it, in and out elements in its input and
 * output row; cast[0] the forward's (its input), cast[1] the backward's
 * (its output gradient). In a dense block LayerNormLinear and LayerNormMLP write the
 * QKV's and the MLP's input in FP8 from the norm, the MLP's activation
 * writes the down projection's, and the backward's activation gradient
 * the up projection's output gradient; the attention output's input and
 * the others' output gradients are cast apart. An MoE block's experts
 * (Megatron-Core's SequentialMLP or GroupedMLP over TE Linear, without
 * those fused modules) cast every input and output gradient. */
static void fp8_casts(double cast[2], int i, bool experts, double rows, double in, double out)
{
	cast[0] += experts || i == 1 ? rows * in : 0;
	cast[1] += experts || i != 2 ? rows * out : 0;
}

/* The GEMMs of layer l per micro-batch on one GPU under s, forward: w FLOPs
 * in all (the layer's F - A per token times b*s/(t*c)), shared among its
 * linear layers in proportion to their FLOPs, each at the efficiency of its
 * own size on the GPU: tok = b*s/c tokens through Megatron's shards, QKV
 * h x (a+2g)d/t (MLA: its down- and up-projections as one GEMM of their
 * FLOPs), output (a d/t) x h (MLA: a d_v/t), MLP h x f/t (x2 gated) and
 * (f/t) x h; in an MoE block (model_block_moe) the routed experts, of f_e,
 * see tok * top_k * ep / E tokens each on average and the shared experts
 * every token, and the busiest EP rank runs moe_load_factor x its
 * routed-expert GEMMs (the layer's pace); one GEMM per expert, or with
 * s->grouped_gemm the E / ep local experts' as one grouped GEMM
 * (Megatron-Core's GroupedMLP: one kernel over all of them, at the
 * efficiency of their combined size);
 * the head is one h x V/t GEMM. Small GEMMs (high TP, short micro-batches)
 * run less efficiently (compute_eff). part[] gets each GEMM's seconds
 * (QKV, output, the MLP's or routed experts' two, the shared experts'
 * two; 0 where absent), cast[] the elements of its FP8 casts
 * (fp8_casts; 0 without FP8). */
static double gemms(const struct gpu_type *g, const struct model *m, int l,
		    const struct strategy *s, double w, double tok, double part[6], double cast[2])
{
	bool is_moe = m->layer[l].kind == LAYER_BLOCK && model_block_moe(m, l - 1);
	double h = m->hidden, t = s->tp, ad = (double)m->heads * m->head_dim;
	double gd = (double)m->kv_heads * m->head_dim;
	double f = is_moe ? m->moe_ffn : m->ffn, fs = m->shared_ffn;
	double up = m->ffn_kind == FFN_SWIGLU ? 2 : 1;
	/* the busiest EP rank's routed tokens: lam x the mean (moe.h) */
	double lam = is_moe ? moe_load_factor(m, s) : 1;
	double moe = is_moe ? lam * m->top_k * s->ep / m->experts : 1;
	/* FLOPs per token of one GEMM on one GPU, and its tokens; MLA's
	 * projections as one QKV GEMM of their FLOPs, its output a*d_v x h;
	 * shared experts see every token */
	double per_tok[6] = { 2 * h * (ad + 2 * gd) / t, 2 * ad * h / t,
			      2 * h * f * up / t, 2 * f * h / t,
			      2 * h * fs * up / t, 2 * fs * h / t };
	double local = is_moe && s->grouped_gemm ? (double)m->experts / (s->ep > 0 ? s->ep : 1) : 1;
	double gemm_tok[6] = { tok, tok, tok * moe * local, tok * moe * local, tok, tok };
	/* each token runs top_k experts: their share of the layer's FLOPs */
	double k = is_moe ? m->top_k : 1, ks = is_moe ? m->shared_experts : 0;
	double share[6] = { per_tok[0], per_tok[1], k * per_tok[2], k * per_tok[3],
			    ks * per_tok[4], ks * per_tok[5] };
	double sum = 0, time = 0;

	/* each GEMM's input and output row on one GPU, in elements */
	double in[6] = { h, ad / t, h, f / t, h, fs / t };
	double out[6] = { (ad + 2 * gd) / t, h, f * up / t, h, fs * up / t, h };

	for (int i = 0; i < 6; i++)
		part[i] = 0;
	cast[0] = cast[1] = 0;
	if (w <= 0)
		return 0;
	if (m->layer[l].kind != LAYER_BLOCK)
		return gemm_time(g, false, w, w);
	if (m->kv_lora_rank > 0) {
		double norms, dv = (double)m->heads * m->v_head_dim;

		per_tok[1] = 2 * dv * h / t;
		per_tok[0] = 2 * (model_mla_weights(m, &norms) - dv * h) / t;
		share[0] = per_tok[0];
		share[1] = per_tok[1];
		in[1] = dv / t;
		out[0] = per_tok[0] / (2 * h);
	}
	for (int i = 0; i < 6; i++)
		sum += share[i];
	for (int i = 0; i < 6; i++) {
		double x;

		if (share[i] <= 0)
			continue;
		if (s->fp8 && g->peak_fp8_flops > 0) /* tokens x GEMM i's share of them */
			fp8_casts(cast, i, is_moe && i >= 2,
				  tok * share[i] / per_tok[i] * (i == 2 || i == 3 ? lam : 1), in[i], out[i]);
		x = gemm_time(g, s->fp8, w * share[i] / sum * (i == 2 || i == 3 ? lam : 1),
			      per_tok[i] * gemm_tok[i]);
		time += x;
		part[i] = x;
	}
	return time;
}

/* The forward seconds each recomputation module of block l reruns
 * (compute_selective) into t (0 for the embedding and the head, and
 * without selective recomputation, which alone reads them), from its GEMMs' seconds part[] (gemms) and
 * x_tok seconds per byte a token moves (x / the bandwidth, x the measured
 * profile's scale; 0 without a bandwidth); over the MoE block's fixed
 * seconds: a dense MLP's two GEMMs and activation (mlp_fwd); in an MoE
 * block the routed experts' activation (act_fwd), the shared experts'
 * GEMMs and activation (shared_fwd), and the MoE layer as a whole, those
 * with the routed experts' GEMMs, the permutations and the fixed time
 * (moe_fwd; its all-to-alls are layer_cost.c's); MLA's up projections,
 * their share of the projection GEMM, with RoPE (mla_up_fwd). */
static void module_parts(struct layer_time *t, const struct model *m, int l,
			 const struct strategy *s, const double part[6], double x_tok, double over)
{
	bool moe = model_block_moe(m, l - 1);
	double act, routed;

	t->mlp_fwd = t->act_fwd = t->shared_fwd = t->moe_fwd = t->mla_up_fwd = 0;
	if (m->layer[l].kind != LAYER_BLOCK || s->recompute != RECOMPUTE_SELECTIVE)
		return;
	act = act_bytes_per_token(m, l, s) * x_tok;
	t->mlp_fwd = moe ? 0 : part[2] + part[3] + act;
	if (moe) {
		routed = act * m->top_k * m->moe_ffn / ffn_per_token(m, l);
		t->act_fwd = routed;
		t->shared_fwd = part[4] + part[5] + act - routed;
		t->moe_fwd = part[2] + part[3] + routed + t->shared_fwd +
			     permute_bytes_per_token(m, l, s) * x_tok + over;
	}
	if (m->kv_lora_rank > 0) {
		double a = m->heads, h = m->hidden, norms, dq = m->qk_nope_dim + m->qk_rope_dim;
		double up = (m->q_lora_rank > 0 ? m->q_lora_rank : h) * a * dq +
			    (double)m->kv_lora_rank * a * (m->qk_nope_dim + m->v_head_dim);
		double proj = model_mla_weights(m, &norms) - a * m->v_head_dim * h;

		t->mla_up_fwd = part[0] * up / proj + rope_bytes_per_token(m, s) * x_tok;
	}
}

/* Analytic (COSTMODEL.md "Compute time", "Roofline per layer part"), per
 * micro-batch of b sequences on one GPU, n = b*s/(t*c) tokens' worth of
 * work:
 * - GEMMs: w = (F - A) * n FLOPs (F the layer's forward FLOPs per token, A
 *   the attention core's 4*s*a*d) at peak * eff of each GEMM's size
 *   (gemms); backward 2 x forward (Narayanan et al. 2021 Sec. 5.1);
 * - attention core (blocks): flash kernels run CAUSAL_SHARE of A*n at
 *   the GPU's flash_eff x peak (default FLASH_RATE x eff_max; FlashAttention
 *   1 at FLASH1_RATE / FLASH_RATE of it), backward FLASH_BWD_FLOPS /
 *   FLASH_BWD_RATE x forward, both times model_doc_share under document
 *   masking (a packed-document histogram); without flash the whole A*n as batched
 *   GEMMs at peak * eff, backward 2x, plus the softmax traffic;
 * - memory-bound kernels: mem_bytes_per_token * b*s/c over hbm_bw *
 *   COMPUTE_HBM_EFF or the GPU's hbm_eff (the per-token bytes are already per GPU), backward
 *   MEM_BWD x forward, the loss's CE_BWD_BYTES apart; in FP8, the casts of fp8_casts at FP8_CAST_BYTES
 *   an element, forward the inputs', backward the output gradients';
 * - LAYER_OVERHEAD_S per layer (plus MOE_LAYER_OVERHEAD_S in an MoE
 *   block), MEM_BWD x that backward;
 * - with s->grad_acc_unfused, the backward adds the pass that adds the
 *   micro-batch's weight gradients into the gradient buffer: the layer's
 *   parameters per GPU x (2 grad_bytes + dtype) bytes over the bandwidth
 *   (Megatron's --gradient-accumulation-fusion has the weight-gradient
 *   GEMM accumulate in place instead; DeepSpeed and PyTorch's autograd
 *   add .grad in a kernel of its own).
 * Recomputation reruns the forward of the block (full) or, selective, of
 * the modules of s->recompute_modules (compute_selective): recompute = fwd
 * or their parts of it. A measured profile scales
 * every part by measured / analytic. */
int compute_layer(struct layer_time *t, const struct model *m, int l,
		  const struct gpu_type *g, const struct strategy *s,
		  struct err *e)
{
	const struct layer *ly = &m->layer[l];
	double F = compute_flops_per_token(m, l, s->seq);
	double A = compute_attn_flops_per_token(m, l, s->seq);
	double n = (double)s->mbs * s->seq / ((double)s->tp * s->cp);
	double w = (F - A > 0 ? F - A : 0) * n, wa = A * n;
	double bw = g->hbm_bw * (g->hbm_eff > 0 ? g->hbm_eff : COMPUTE_HBM_EFF), tok = (double)s->mbs * s->seq / s->cp;
	double part[6], cast[2], gemm = gemms(g, m, l, s, w, tok, part, cast);
	double attn_f = 0, attn_b = 0, mem = 0, fwd = 0, bwd = 0, x = 1, cast_f = 0, cast_b = 0;
	double ce_f = 0, ce_b = 0;
	double over = LAYER_OVERHEAD_S, norm_mem = 0;
	bool block = ly->kind == LAYER_BLOCK, moe = block && model_block_moe(m, l - 1);
	unsigned mods = block ? strategy_rc_modules(s) : 0;
	int rc;

	if (moe)
		over += MOE_LAYER_OVERHEAD_S;

	if (wa > 0 && (s->attn == ATTN_FLASH || s->attn == ATTN_FLASH1)) {
		double eff = g->flash_eff > 0 ? g->flash_eff : FLASH_RATE * g->eff_max;

		if (s->attn == ATTN_FLASH1)
			eff *= FLASH1_RATE / FLASH_RATE;
		/* document masking (model_doc_share): the kernel skips the
		 * blocks across documents (FlashAttention's varlen / THD
		 * kernels) */
		attn_f = CAUSAL_SHARE * model_doc_share(m, s->seq) * wa / (g->peak_flops * eff);
		attn_b = attn_f * FLASH_BWD_FLOPS / FLASH_BWD_RATE;
	} else if (wa > 0) {
		double sm = bw > 0 ? score_bytes_per_token(m, s) * tok / bw : 0;

		/* the scores are computed whole, masked keys and windows too */
		wa = model_attn_flops_all(m, l, s->seq) * n;
		attn_f = wa / (g->peak_flops * compute_eff(g, wa)) + sm;
		attn_b = 2 * (attn_f - sm) + MEM_BWD * sm;
	}
	if (bw > 0) {
		mem = mem_bytes_per_token(m, l, s) * tok / bw;
		ce_f = CE_FWD_BYTES * logits_per_token(m, l, s) * tok / bw;
		ce_b = CE_BWD_BYTES * logits_per_token(m, l, s) * tok / bw;
	}
	if (bw > 0 && block) {
		norm_mem = norm_bytes_per_token(m, s) * tok / bw;
		cast_f = FP8_CAST_BYTES * cast[0] / bw;
		cast_b = FP8_CAST_BYTES * cast[1] / bw;
	}
	rc = ly->n_measure > 0 && g->name ? measured(ly, l, g->name, s, &fwd, &bwd, e) : 0;
	if (rc < 0)
		return -1;
	if (rc > 0 && gemm + attn_f + mem + cast_f > 0)
		x = fwd / (gemm + attn_f + mem + cast_f);
	t->gemm_fwd = x * gemm;
	t->attn_fwd = x * attn_f;
	t->attn_bwd = x * attn_b;
	t->mem_fwd = x * (mem + cast_f);
	t->norm_fwd = x * norm_mem;
	for (int i = 0; i < 6; i++)
		part[i] *= x;
	module_parts(t, m, l, s, part, x * tok / (bw > 0 ? bw : INFINITY), x * MOE_LAYER_OVERHEAD_S);
	t->fwd = rc > 0 ? fwd : gemm + attn_f + mem + cast_f + over;
	t->bwd = rc > 0 ? bwd : 2 * gemm + attn_b + MEM_BWD * (mem - ce_f + over) + ce_b + cast_b;
	if (s->grad_acc_unfused && bw > 0) {
		/* un-fused gradient accumulation: read and write the buffer
		 * (grad_bytes each), read the new gradient (the dtype's) */
		double dense, expert, dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;

		memory_params(ly, s, &dense, &expert);
		t->bwd += (dense + expert) * (2 * memory_grad_bytes(s) + dt) / bw;
	}
	t->offload = 0;
	if (block && s->offload_modules) {
		struct layer_mem lm;

		if (g->host_bw <= 0)
			return err_set(e, "GPU type '%s' has no host_link_GBps: activation offloading (--offload-modules) copies over it",
				       g->name ? g->name : "?");
		memory_layer(&lm, m, l, s);
		t->offload = lm.offload / (g->host_bw * OFFLOAD_COPY_EFF);
	}
	switch (ly->kind == LAYER_BLOCK ? s->recompute : RECOMPUTE_NONE) {
	case RECOMPUTE_FULL:
		t->recompute = t->fwd;
		break;
	case RECOMPUTE_SELECTIVE:
		t->recompute = compute_selective(t, mods);
		break;
	default:
		t->recompute = 0;
		break;
	}
	return 0;
}

/* Adam step, memory-bound: COMPUTE_ADAM_BYTES of HBM traffic per parameter
 * this GPU updates (its ZeRO shard) over its HBM bandwidth. Adam itself reads
 * the fp32 gradient, master weight, m and v (16 bytes) and writes master, m,
 * v and the bf16 weight (14); Megatron's mixed-precision step adds the
 * gradient unscale / inf check, norm and clipping passes and zeroes the
 * buffers, at less than peak bandwidth: 160 bytes, calibrated on the
 * single-micro-batch rows of Korthikanti et al. 2022 Table 5 (make
 * validate). */
void compute_selective_parts(const struct layer_time *t, unsigned mods, double out[RM_COUNT])
{
	/* by bit: core_attn, layernorm, mlp, moe_act, moe, shared_experts,
	 * mla_up_proj; moe holds moe_act's and shared_experts' */
	const double part[RM_COUNT] = { t->attn_fwd, t->norm_fwd, t->mlp_fwd, t->act_fwd,
					t->moe_fwd, t->shared_fwd, t->mla_up_fwd };

	for (int i = 0; i < RM_COUNT; i++) {
		unsigned bit = 1u << i;
		bool in_moe = (mods & RM_MOE) && (bit & (RM_MOE_ACT | RM_SHARED_EXPERTS));

		out[i] = (mods & bit) && !in_moe ? part[i] : 0;
	}
}

double compute_selective(const struct layer_time *t, unsigned mods)
{
	double part[RM_COUNT], x = 0;

	compute_selective_parts(t, mods, part);
	for (int i = 0; i < RM_COUNT; i++)
		x += part[i];
	return x;
}

double compute_optimizer(const struct gpu_type *g, double params, double moment_bytes)
{
	if (g->hbm_bw <= 0)
		return 0;
	return params * (COMPUTE_ADAM_BYTES - 4 * (4 - moment_bytes)) / g->hbm_bw;
}
