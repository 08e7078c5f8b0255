/* emit_megatron.c: the Megatron-LM family: launch.sh for pretrain_gpt.py, a
 * Slurm job around it, and NeMo 2.0 / Megatron Bridge overrides, both from
 * one list of the plan's settings (TRAINERS.md, Megatron-LM and NeMo). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "emit_megatron.h"
#include "emit_util.h"
#include "model.h"
#include "strategy.h"
#include "util.h"

/* Appends the placement comment of a per-node launch script. */
static void placement_comment(struct emit_buf *b, const struct emit_ctx *x)
{
	emit_printf(b, "#\n"
		       "# Placement: ranks go tp-cp-dp-pp, so pipeline rank p owns global ranks\n"
		       "# [p*%d, (p+1)*%d), and a node's ranks follow those of the lower node ranks.\n"
		       "# Node rank r must run on a node of the group nodes.txt names for r, so that\n"
		       "# each GPU type gets the stages the plan gave it; node ranks hold only with\n"
		       "# torchrun's static rendezvous (--node-rank; add no --rdzv-backend):\n",
		    x->block, x->block);
	emit_node_runs(b, x);
}

/* The plan's TP overlap as Megatron runs it: --tp-comm-overlap asserts
 * sequence parallelism (so tp > 1). */
static bool tp_overlap(const struct strategy *s)
{
	return s->tp_overlap && s->tp > 1 && s->sp;
}

/* The plan's parameter-gather overlap as Megatron runs it:
 * --overlap-param-gather asserts the distributed optimizer and
 * --overlap-grad-reduce. */
static bool param_overlap(const struct strategy *s)
{
	return s->param_overlap && s->zero >= 1 && s->grad_overlap;
}

/* Megatron's --attention-backend (Transformer Engine): flash runs
 * FlashAttention 2 or later; unfused materialises the s x s scores. */
static const char *attention_backend(const struct strategy *s)
{
	return s->attn == ATTN_FLASH || s->attn == ATTN_FLASH1 ? "flash" : "unfused";
}

/* Appends comment lines on the kernel, precision and overlap choices of
 * the plan that the Megatron settings (flags, or NeMo's fields when nemo)
 * set only approximately or cannot set; nothing when all map exactly. */
static void notes(struct emit_buf *b, const struct emit_ctx *x, bool nemo)
{
	const struct strategy *s = x->s;
	struct emit_buf n = { 0 };
	const char *backend = nemo ? "model.attention_backend" : "--attention-backend";
	const char *tpo = nemo ? "model.tp_comm_overlap" : "--tp-comm-overlap";
	const char *pgo = nemo ? "ddp.overlap_param_gather" : "--overlap-param-gather";
	const char *grd = nemo ? "ddp.overlap_grad_reduce" : "--overlap-grad-reduce";
	int bf16_start, bf16_end;

	emit_printf(&n, "%s", "");
	if (s->attn == ATTN_FLASH1)
		emit_printf(&n, "# - attention 'flash1': FlashAttention 1 cannot be chosen; %s flash\n"
				"#   runs FlashAttention 2 or later, faster than the plan costed.\n",
			    backend);
	else if (s->attn == ATTN_FUSED_SOFTMAX)
		emit_printf(&n, "# - attention 'fused-softmax': %s unfused, Transformer Engine's\n"
				"#   attention over the s x s scores with its fused scale-mask-softmax kernel.\n",
			    backend);
	else if (s->attn == ATTN_UNFUSED)
		emit_printf(&n, "# - attention 'unfused': %s unfused with the softmax fusion off\n"
				"#   (%s and NVTE_MASKED_SOFTMAX_FUSION=0%s).\n",
			    backend,
			    nemo ? "model.masked_softmax_fusion=false" : "--no-masked-softmax-fusion",
			    nemo ? ": export it on every node" : "");
	if (s->unfused_norm)
		emit_printf(&n, "# - norms 'unfused': no setting runs them so (Transformer Engine's norms are\n"
				"#   fused kernels): they run faster than the plan costed.\n");
	if (s->fp8 && cluster_bf16_blocks(x->c, s, &bf16_start, &bf16_end) == 0 &&
	    (bf16_start || bf16_end))
		emit_printf(&n, "# - FP8 GEMMs on the stages whose GPUs have FP8: format hybrid (E4M3 forward,\n"
				"#   E5M2 gradients), tensorwise (current) scaling, through Transformer Engine;\n"
				"#   the first %d and last %d blocks, on the GPUs without FP8, in BF16\n"
				"#   (first_last_layers_bf16; Megatron-LM refuses delayed scaling with it).\n",
			    bf16_start, bf16_end);
	else if (s->fp8)
		emit_printf(&n, "# - FP8 GEMMs: format hybrid (E4M3 forward, E5M2 gradients), delayed scaling,\n"
				"#   through Transformer Engine, on GPUs with FP8 (H100 or later).\n");
	if (s->fp8 && nemo)
		emit_printf(&n, "#   A mixed_precision recipe, where the script sets one, also sets the fp8\n"
				"#   fields and wins: pick one with FP8 hybrid, or none.\n");
	if (tp_overlap(s))
		emit_printf(&n, "# - %s: Transformer Engine's userbuffers overlap the TP\n"
				"#   all-gathers and reduce-scatters with the GEMMs.%s\n",
			    tpo,
			    nemo ? " A comm_overlap config, where\n#   the script sets one, decides this field: set it alike." : "");
	else if (s->tp_overlap)
		emit_printf(&n, "# - TP comm overlap: %s needs tp > 1 and sequence parallelism\n"
				"#   (tp %d, sp %s): not set, TP communication runs exposed.\n",
			    tpo, s->tp, s->sp ? "on" : "off");
	if (s->param_overlap && s->zero < 1)
		emit_printf(&n, "# - parameter gather overlap: %s needs the distributed optimizer\n"
				"#   (zero >= 1, here 0): not set.\n",
			    pgo);
	else if (s->param_overlap && !s->grad_overlap)
		emit_printf(&n, "# - parameter gather overlap: %s needs %s,\n"
				"#   which the plan does not overlap: not set, the gathers run exposed.\n",
			    pgo, grd);
	if (x->m->vocab % s->tp != 0)
		emit_printf(&n, "# - vocabulary: tp %d does not divide it (%d), so Megatron pads it to %d\n"
				"#   rows, %d more than the plan costed.\n",
			    s->tp, x->m->vocab,
			    (x->m->vocab + s->tp - 1) / s->tp * s->tp,
			    (x->m->vocab + s->tp - 1) / s->tp * s->tp - x->m->vocab);
	if (x->m->experts > 0 && !s->grouped_gemm)
		emit_printf(&n, "# - MoE: each expert's GEMMs are costed one by one; %s\n"
				"#   (grouped GEMM) runs them faster than the plan costed.\n",
			    nemo ? "model.moe_grouped_gemm=true" : "--moe-grouped-gemm");
	if (n.len)
		emit_printf(b, "#\n# The plan's kernels, precision and overlaps, as set below:\n%s", n.s);
	free(n.s);
}

/* Appends the MoE layer pattern as a Python list, one 0 (dense) or 1 (MoE)
 * per block: Megatron's --moe-layer-freq and NeMo's moe_layer_freq. */
static void moe_pattern(struct emit_buf *b, const struct model *m)
{
	for (int i = 0; i < m->layers; i++)
		emit_printf(b, "%s%d", i ? "," : "[", model_block_moe(m, i));
	emit_printf(b, "]");
}

/* True if every block has a MoE FFN (no --moe-layer-freq needed). */
static bool all_moe(const struct model *m)
{
	for (int i = 0; i < m->layers; i++)
		if (!model_block_moe(m, i))
			return false;
	return true;
}

/* ---- the settings: one list for launch.sh and overrides.txt ---- */

/* The order of overrides.txt, one place per field: the model's fields, its
 * MoE fields, then, from F_TP on, the parallel plan's. F_NONE: launch.sh
 * only. launch.sh keeps the order in which settings() lists them. */
enum field_place {
	F_NONE,
	F_LAYERS,
	F_HIDDEN,
	F_FFN,
	F_HEADS,
	F_MLA,
	F_Q_LORA,
	F_KV_LORA,
	F_QK_DIM,
	F_QK_POS_DIM,
	F_V_DIM,
	F_QUERY_GROUPS,
	F_KV_CHANNELS,
	F_GATED,
	F_NORM,
	F_EPS,
	F_POSITIONS,
	F_ROTARY_BASE,
	F_ROPE_SCALING,
	F_ROPE_FACTOR,
	F_YARN_FACTOR,
	F_ATTN_DROPOUT,
	F_HIDDEN_DROPOUT,
	F_BIAS,
	F_QKV_BIAS,
	F_QK_NORM,
	F_WINDOW,
	F_VOCAB_DIVISOR,
	F_TIED,
	F_EXPERTS,
	F_TOPK,
	F_MOE_FFN,
	F_DISPATCHER,
	F_BALANCE,
	F_CAPACITY,
	F_DROP_POLICY,
	F_PAD_CAPACITY,
	F_SHARED,
	F_MOE_LAYERS,
	F_TP,
	F_PP,
	F_VP,
	F_CP,
	F_SP,
	F_CP_COMM,
	F_CP_SIZES,
	F_EP,
	F_ETP,
	F_LAYOUT,
	F_RECOMPUTE,
	F_RECOMPUTE_METHOD,
	F_RECOMPUTE_LAYERS,
	F_RECOMPUTE_MODULES,
	F_SEQ,
	F_DATA_SEQ,
	F_MBS,
	F_GBS,
	F_DIST_OPT,
	F_OPT_DIST_OPT,
	F_GRAD_OVERLAP,
	F_PARAM_OVERLAP,
	F_GRAD_FP32,
	F_TP_OVERLAP,
	F_ATTN_BACKEND,
	F_SOFTMAX_FUSION,
	F_FP8,
	F_FP8_RECIPE,
	F_BF16_ENDS,
	F_BF16_START,
	F_BF16_END,
	F_GRAD_ACC_FUSION,
	F_GROUPED_GEMM,
	F_EP_OVERLAP,
	F_DELAY_WGRAD,
	F_PRECISION_OPT,
	F_EXP_AVG,
	F_EXP_AVG_SQ,
	F_DEFER_WGRAD,
	F_WGRAD_LIMIT,
	F_COUNT
};

/* One setting of the plan for Megatron core (TransformerConfig and what
 * Megatron-LM and Megatron Bridge add to it): its Megatron-LM flag and its
 * NeMo 2.0 / Megatron Bridge field, each with its value as written. */
struct setting {
	const char *flag;  /* "--num-layers"; NULL: not in launch.sh */
	const char *field; /* "model.num_layers"; NULL: not in overrides.txt */
	enum field_place at;
	char *value;	   /* the flag's, "" for a switch (malloc'd) */
	char *field_value; /* the field's (malloc'd) */
};

/* The settings of one plan, in launch.sh's order. */
struct settings {
	struct setting *v;
	int n, cap;
};

/* printf into a malloc'd string. */
static char *val(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *val(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* Adds a setting to l: flag with value v and field with value fv (v when fv
 * is NULL), field at place at of overrides.txt; a NULL flag or field leaves
 * the setting out of that file. Consumes v and fv (from val). */
static void set(struct settings *l, enum field_place at, const char *flag, const char *field,
		char *v, char *fv)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xreallocarray(l->v, (size_t)l->cap, sizeof *l->v);
	}
	l->v[l->n++] = (struct setting){ flag, field, at, v, fv ? fv : xstrdup(v) };
}

/* Adds a setting that is on or off: flag as a switch, given only when on,
 * and field = value as true or false. */
static void set_bool(struct settings *l, enum field_place at, const char *flag, bool on,
		     const char *field, bool value)
{
	set(l, at, on ? flag : NULL, field, xstrdup(""), xstrdup(value ? "true" : "false"));
}

/* The MoE settings (m has experts): experts, routing, expert parallelism,
 * capacity, shared experts, and which blocks are MoE. */
static void moe_settings(struct settings *l, const struct model *m, const struct strategy *s)
{
	bool drop = s->moe_capacity > 0;

	set(l, F_EXPERTS, "--num-experts", "model.num_moe_experts", val("%d", m->experts), NULL);
	set(l, F_TOPK, "--moe-router-topk", "model.moe_router_topk", val("%d", m->top_k), NULL);
	set(l, F_MOE_FFN, "--moe-ffn-hidden-size", "model.moe_ffn_hidden_size",
	    val("%d", m->moe_ffn), NULL);
	set(l, F_EP, "--expert-model-parallel-size", "model.expert_model_parallel_size",
	    val("%d", s->ep), NULL);
	set(l, F_ETP, "--expert-tensor-parallel-size", "model.expert_tensor_parallel_size",
	    val("%d", strategy_etp(s)), NULL);
	set(l, F_DISPATCHER, "--moe-token-dispatcher-type", "model.moe_token_dispatcher_type",
	    val("%s", moe_dispatcher_name(s->moe_dispatcher)), NULL);
	set(l, F_BALANCE, "--moe-router-load-balancing-type", "model.moe_router_load_balancing_type",
	    val("%s", emit_balance(m, s)), NULL);
	/* dropless: Megatron's default, NeMo's null */
	set(l, F_CAPACITY, drop ? "--moe-expert-capacity-factor" : NULL,
	    "model.moe_expert_capacity_factor", drop ? val("%g", s->moe_capacity) : val("null"), NULL);
	if (drop)
		set(l, F_DROP_POLICY, "--moe-token-drop-policy", "model.moe_token_drop_policy",
		    val("probs"), NULL);
	if (drop && s->moe_pad)
		set_bool(l, F_PAD_CAPACITY, "--moe-pad-expert-input-to-capacity", true,
			 "model.moe_pad_expert_input_to_capacity", true);
	if (s->grouped_gemm)
		set_bool(l, F_GROUPED_GEMM, "--moe-grouped-gemm", true, "model.moe_grouped_gemm", true);
	/* megatron/training/arguments.py; TransformerConfig's fields */
	if (s->ep_overlap) {
		set_bool(l, F_EP_OVERLAP, "--overlap-moe-expert-parallel-comm", true,
			 "model.overlap_moe_expert_parallel_comm", true);
		set_bool(l, F_DELAY_WGRAD, "--delay-wgrad-compute", true, "model.delay_wgrad_compute",
			 true);
	}
	if (m->shared_experts > 0)
		set(l, F_SHARED, "--moe-shared-expert-intermediate-size",
		    "model.moe_shared_expert_intermediate_size",
		    val("%d", m->shared_experts * m->shared_ffn), NULL);
	if (!all_moe(m)) {
		struct emit_buf freq = { 0 };

		moe_pattern(&freq, m);
		set(l, F_MOE_LAYERS, "--moe-layer-freq", "model.moe_layer_freq", val("'%s'", freq.s),
		    val("%s", freq.s));
		free(freq.s);
	}
}

/* The attention settings: heads, and MLA's ranks and head sizes, or the
 * query groups and head size (Megatron's flags for these only where they
 * differ from its default). */
static void attention_settings(struct settings *l, const struct model *m)
{
	int kv = m->kv_heads ? m->kv_heads : m->heads;

	set(l, F_HEADS, "--num-attention-heads", "model.num_attention_heads", val("%d", m->heads),
	    NULL);
	if (m->kv_lora_rank > 0) {
		set_bool(l, F_MLA, "--multi-latent-attention", true, "model.multi_latent_attention",
			 true);
		if (m->q_lora_rank > 0)
			set(l, F_Q_LORA, "--q-lora-rank", "model.q_lora_rank", val("%d", m->q_lora_rank),
			    NULL);
		set(l, F_KV_LORA, "--kv-lora-rank", "model.kv_lora_rank", val("%d", m->kv_lora_rank),
		    NULL);
		set(l, F_QK_DIM, "--qk-head-dim", "model.qk_head_dim", val("%d", m->qk_nope_dim), NULL);
		set(l, F_QK_POS_DIM, "--qk-pos-emb-head-dim", "model.qk_pos_emb_head_dim",
		    val("%d", m->qk_rope_dim), NULL);
		set(l, F_V_DIM, "--v-head-dim", "model.v_head_dim", val("%d", m->v_head_dim), NULL);
		return;
	}
	set_bool(l, F_NONE, "--group-query-attention", kv < m->heads, NULL, false);
	set(l, F_QUERY_GROUPS, kv < m->heads ? "--num-query-groups" : NULL, "model.num_query_groups",
	    val("%d", kv), NULL);
	if (m->head_dim)
		set(l, F_KV_CHANNELS, m->head_dim * m->heads != m->hidden ? "--kv-channels" : NULL,
		    "model.kv_channels", val("%d", m->head_dim), NULL);
}

/* The model's settings (TRAINERS.md "Fields the launch files must carry").
 * trainer_check has refused what has none (parallel blocks, alternating
 * windows, rope scalings but Llama 3's and, with MLA, YaRN). */
static void model_settings(struct settings *l, const struct model *m, const struct strategy *s)
{
	const struct rope_scaling *r = &m->rope_scaling;
	bool rope = !m->learned_pos, swiglu = m->ffn_kind == FFN_SWIGLU;

	set(l, F_LAYERS, "--num-layers", "model.num_layers", val("%d", m->layers), NULL);
	set(l, F_HIDDEN, "--hidden-size", "model.hidden_size", val("%d", m->hidden), NULL);
	set(l, F_FFN, "--ffn-hidden-size", "model.ffn_hidden_size", val("%d", m->ffn), NULL);
	if (m->experts > 0)
		moe_settings(l, m, s);
	attention_settings(l, m);
	set(l, F_SEQ, "--seq-length", "model.seq_length", val("%d", s->seq), NULL);
	set(l, F_DATA_SEQ, NULL, "dataset.sequence_length", val("%d", s->seq), NULL);
	set(l, F_NONE, "--max-position-embeddings", NULL,
	    val("%d", m->max_pos >= s->seq ? m->max_pos : s->seq), NULL);
	set_bool(l, F_GATED, "--swiglu", swiglu, "model.gated_linear_unit", swiglu);
	/* Nemotron-4's; GeLU is the default */
	set_bool(l, F_NONE, "--squared-relu", m->ffn_kind == FFN_RELU2, NULL, false);
	set(l, F_NORM, "--normalization", "model.normalization",
	    val("%s", emit_layernorm(m) ? "LayerNorm" : "RMSNorm"), NULL);
	if (m->norm_eps > 0)
		set(l, F_EPS, "--norm-epsilon", "model.layernorm_epsilon", val("%g", m->norm_eps), NULL);
	set(l, F_POSITIONS, "--position-embedding-type", "model.position_embedding_type",
	    val("%s", rope ? "rope" : "learned_absolute"), NULL);
	if (rope && m->rope_theta > 0)
		set(l, F_ROTARY_BASE, "--rotary-base", "model.rotary_base", val("%.0f", m->rope_theta),
		    NULL);
	if (rope && strcmp(r->type, "llama3") == 0) {
		set_bool(l, F_ROPE_SCALING, "--use-rope-scaling", true, "model.rope_scaling", true);
		set(l, F_ROPE_FACTOR, "--rope-scaling-factor", "model.rope_scaling_factor",
		    val("%g", r->factor), NULL);
	} else if (rope && strcmp(r->type, "yarn") == 0) { /* MLA only (trainer_check) */
		set(l, F_YARN_FACTOR, "--rotary-scaling-factor", "model.rotary_scaling_factor",
		    val("%g", r->factor), NULL);
	}
	set(l, F_ATTN_DROPOUT, "--attention-dropout", "model.attention_dropout", val("0"), val("0.0"));
	set(l, F_HIDDEN_DROPOUT, "--hidden-dropout", "model.hidden_dropout", val("0"), val("0.0"));
	set_bool(l, F_BIAS, "--disable-bias-linear", !m->bias, "model.add_bias_linear", m->bias);
	set_bool(l, F_QKV_BIAS, "--add-qkv-bias", !m->bias && m->qkv_bias, "model.add_qkv_bias",
		 m->bias || m->qkv_bias);
	set_bool(l, F_QK_NORM, "--qk-layernorm", m->qk_norm, "model.qk_layernorm", m->qk_norm);
	/* flash attention's (left, right) window: W - 1 earlier tokens and
	   the token itself, nothing to the right (causal) */
	if (m->sliding_window > 0)
		set(l, F_WINDOW, "--window-size", "model.window_size",
		    val("%d,0", m->sliding_window - 1), val("[%d,0]", m->sliding_window - 1));
	set(l, F_VOCAB_DIVISOR, "--make-vocab-size-divisible-by", "model.make_vocab_size_divisible_by",
	    val("%d", emit_vocab_divisor(m, s->tp)), NULL);
	set_bool(l, F_TIED, "--untie-embeddings-and-output-weights", !m->tied,
		 "model.share_embeddings_and_output_weights", m->tied);
}

/* The parallel plan's settings: degrees, CP flavour, layout, batches,
 * recomputation, distributed optimizer, overlaps, kernels, precision. */
static void plan_settings(struct settings *l, const struct emit_ctx *x)
{
	const struct strategy *s = x->s;
	bool full = s->recompute == RECOMPUTE_FULL;

	set(l, F_TP, "--tensor-model-parallel-size", "model.tensor_model_parallel_size",
	    val("%d", s->tp), NULL);
	set(l, F_PP, "--pipeline-model-parallel-size", "model.pipeline_model_parallel_size",
	    val("%d", s->pp), NULL);
	set(l, F_CP, "--context-parallel-size", "model.context_parallel_size", val("%d", s->cp), NULL);
	if (s->cp > 1) /* the CP flavour the cost model timed */
		set(l, F_CP_COMM, "--cp-comm-type", "model.cp_comm_type",
		    val("%s", cp_comm_name(s->cp_comm)), NULL);
	if (s->cp > 1 && s->cp_comm == CP_A2A_P2P)
		set(l, F_CP_SIZES, "--hierarchical-context-parallel-sizes",
		    "model.hierarchical_context_parallel_sizes",
		    val("%d %d", s->cp_a2a, s->cp / s->cp_a2a),
		    val("[%d,%d]", s->cp_a2a, s->cp / s->cp_a2a));
	set_bool(l, F_SP, "--sequence-parallel", s->sp, "model.sequence_parallel", s->sp);
	if (!emit_default_split(x)) {
		struct emit_buf layout = { 0 };

		emit_layout(&layout, x);
		set(l, F_LAYOUT, "--pipeline-model-parallel-layout", "model.pipeline_model_parallel_layout",
		    val("'%s'", layout.s), val("\"%s\"", layout.s));
		free(layout.s);
	}
	/* Megatron-LM takes the virtual stages from the layout when it has one */
	if (s->vp > 1)
		set(l, F_VP, emit_default_split(x) ? "--num-virtual-stages-per-pipeline-rank" : NULL,
		    "model.virtual_pipeline_model_parallel_size", val("%d", s->vp), NULL);
	set(l, F_MBS, "--micro-batch-size", "train.micro_batch_size", val("%d", s->mbs), NULL);
	set(l, F_GBS, "--global-batch-size", "train.global_batch_size", val("%d", s->gbs), NULL);
	if (s->recompute != RECOMPUTE_NONE)
		set(l, F_RECOMPUTE, "--recompute-granularity", "model.recompute_granularity",
		    val("%s", full ? "full" : "selective"), NULL);
	/* megatron/training/arguments.py --recompute-modules (nargs '*') */
	if (strategy_rc_modules(s) & ~RM_CORE_ATTN) {
		char sp_list[96], nemo_list[96];

		recompute_modules_name(strategy_rc_modules(s), ' ', sp_list, sizeof sp_list);
		recompute_modules_name(strategy_rc_modules(s), ',', nemo_list, sizeof nemo_list);
		set(l, F_RECOMPUTE_MODULES, "--recompute-modules", "model.recompute_modules",
		    val("%s", sp_list), val("[%s]", nemo_list));
	}
	if (full) {
		set(l, F_RECOMPUTE_METHOD, "--recompute-method", "model.recompute_method",
		    val("uniform"), NULL);
		set(l, F_RECOMPUTE_LAYERS, "--recompute-num-layers", "model.recompute_num_layers",
		    val("1"), NULL);
	}
	set_bool(l, F_DIST_OPT, "--use-distributed-optimizer", s->zero >= 1,
		 "ddp.use_distributed_optimizer", s->zero >= 1);
	set_bool(l, F_OPT_DIST_OPT, NULL, false, "optimizer.use_distributed_optimizer", s->zero >= 1);
	set_bool(l, F_GRAD_OVERLAP, "--overlap-grad-reduce", s->grad_overlap,
		 "ddp.overlap_grad_reduce", s->grad_overlap);
	set_bool(l, F_PARAM_OVERLAP, "--overlap-param-gather", param_overlap(s),
		 "ddp.overlap_param_gather", param_overlap(s));
	set_bool(l, F_TP_OVERLAP, "--tp-comm-overlap", tp_overlap(s), "model.tp_comm_overlap",
		 tp_overlap(s));
	set(l, F_ATTN_BACKEND, "--attention-backend", "model.attention_backend",
	    val("%s", attention_backend(s)), NULL);
	if (s->attn == ATTN_UNFUSED)
		set_bool(l, F_SOFTMAX_FUSION, "--no-masked-softmax-fusion", true,
			 "model.masked_softmax_fusion", false);
	if (s->fp8) {
		int start = 0, end = 0;

		/* per-stage precision (cluster_bf16_blocks): the blocks on
		 * the GPUs without FP8 stay in BF16 by Megatron-LM's
		 * --first-last-layers-bf16 with --num-layers-at-start-in-bf16
		 * and --num-layers-at-end-in-bf16 (TransformerConfig's
		 * first_last_layers_bf16, num_layers_at_start_in_bf16,
		 * num_layers_at_end_in_bf16; fp8_utils.is_first_last_bf16_layer
		 * counts the model's global layer numbers, whatever the
		 * pipeline rank). Relied on as read from Megatron-LM's
		 * arguments.py and transformer_config.py, not in TRAINERS.md:
		 * the counts are checked to lie in [0, num_layers], and the
		 * delayed-scaling recipe is refused with them (it wraps the
		 * whole block in one FP8 context), hence tensorwise (current)
		 * scaling there. */
		cluster_bf16_blocks(x->c, s, &start, &end);
		set(l, F_FP8, "--fp8-format", "model.fp8", val("hybrid"), NULL);
		set(l, F_FP8_RECIPE, "--fp8-recipe", "model.fp8_recipe",
		    val("%s", start || end ? "tensorwise" : "delayed"), NULL);
		if (start || end) {
			set_bool(l, F_BF16_ENDS, "--first-last-layers-bf16", true,
				 "model.first_last_layers_bf16", true);
			set(l, F_BF16_START, "--num-layers-at-start-in-bf16",
			    "model.num_layers_at_start_in_bf16", val("%d", start), NULL);
			set(l, F_BF16_END, "--num-layers-at-end-in-bf16",
			    "model.num_layers_at_end_in_bf16", val("%d", end), NULL);
		}
	}
	set_bool(l, F_NONE, "--bf16", true, NULL, true);
	set_bool(l, F_GRAD_FP32, "--grad-reduce-in-bf16", s->grad_bytes == 2,
		 "ddp.grad_reduce_in_fp32", s->grad_bytes != 2);
	if (s->grad_acc_unfused)
		set_bool(l, F_GRAD_ACC_FUSION, "--no-gradient-accumulation-fusion", true,
			 "model.gradient_accumulation_fusion", false);
	/* bf16 Adam moments: megatron/core/optimizer/optimizer_config.py */
	if (s->moment_bytes == 2) {
		set_bool(l, F_PRECISION_OPT, "--use-precision-aware-optimizer", true,
			 "optimizer.use_precision_aware_optimizer", true);
		set(l, F_EXP_AVG, "--exp-avg-dtype", "optimizer.exp_avg_dtype", val("bf16"),
		    val("torch.bfloat16"));
		set(l, F_EXP_AVG_SQ, "--exp-avg-sq-dtype", "optimizer.exp_avg_sq_dtype", val("bf16"),
		    val("torch.bfloat16"));
	}
	/* deferred LM-head weight gradients: megatron/training/arguments.py,
	 * ModelParallelConfig's fields (limit 0: all, the default) */
	if (strategy_deferred(s)) {
		set_bool(l, F_DEFER_WGRAD, "--defer-embedding-wgrad-compute", true,
			 "model.defer_embedding_wgrad_compute", true);
		if (s->wgrad_defer > 0)
			set(l, F_WGRAD_LIMIT, "--wgrad-deferral-limit", "model.wgrad_deferral_limit",
			    val("%d", s->wgrad_defer), NULL);
	}
}

/* Lists the settings of x into l (empty; settings_free frees it): the
 * model's, then the parallel plan's. */
static void settings(struct settings *l, const struct emit_ctx *x)
{
	model_settings(l, x->m, x->s);
	plan_settings(l, x);
}

static void settings_free(struct settings *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->v[i].value);
		free(l->v[i].field_value);
	}
	free(l->v);
}

/* Appends the settings as Megatron-LM flags, one "\t--flag value" line
 * each, in list order (launch.sh's ARGS). */
static void megatron_flags(struct emit_buf *b, const struct emit_ctx *x)
{
	struct settings l = { 0 };

	settings(&l, x);
	for (int i = 0; i < l.n; i++)
		if (l.v[i].flag)
			emit_printf(b, "\t%s%s%s\n", l.v[i].flag, l.v[i].value[0] ? " " : "",
				    l.v[i].value);
	settings_free(&l);
}

/* Appends the settings as NeMo fields, one "field=value" line each, in
 * place order (enum field_place): the model's under a comment on its
 * activation, then the parallel plan's under one of their own. */
static void nemo_fields(struct emit_buf *b, const struct emit_ctx *x)
{
	const struct model *m = x->m;
	const struct setting *at[F_COUNT] = { 0 };
	struct settings l = { 0 };

	settings(&l, x);
	for (int i = 0; i < l.n; i++)
		if (l.v[i].field)
			at[l.v[i].at] = &l.v[i];
	emit_printf(b, "# The model (start from a recipe of its family: activation_func stays the\n"
		       "# recipe's, %s):\n",
		    m->ffn_kind == FFN_SWIGLU ? "silu for SwiGLU" : m->ffn_kind == FFN_GELU ? "gelu"
											    : "squared relu");
	for (int p = 0; p < F_COUNT; p++) {
		if (p == F_TP)
			emit_printf(b, "# The parallel plan:\n");
		if (at[p])
			emit_printf(b, "%s=%s\n", at[p]->field, at[p]->field_value);
	}
	settings_free(&l);
}

void emit_megatron(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "launch.sh", 0755);
	const struct model *m = x->m;
	const struct strategy *s = x->s;

	emit_printf(b, "#!/usr/bin/env bash\n");
	emit_header(b, x, "Megatron-LM launch (pretrain_gpt.py); run it once on every node");
	emit_printf(b, "#\n"
		       "# Usage: NODE_RANK=<r> MASTER_ADDR=<host of node rank 0> [MASTER_PORT=29500] \\\n"
		       "#            [MEGATRON_LM=<Megatron-LM checkout>] ./launch.sh [more flags]\n"
		       "# The flags below give the model's shape and the parallel plan. Data, tokenizer,\n"
		       "# optimizer, learning rate, iterations and checkpoints are yours to add as\n"
		       "# arguments (--data-path, --tokenizer-type, --lr, --train-iters, --save%s).\n",
		    m->experts > 0 ? ",\n# and --moe-aux-loss-coeff: Megatron's default 0 turns the balancing loss off,\n"
				     "# and the plan assumes balanced experts"
				   : "");
	placement_comment(b, x);
	notes(b, x, false);
	emit_node_env(b, x, "launch.sh");
	emit_printf(b, "MEGATRON_LM=${MEGATRON_LM:-.}\n");
	if (s->tp > 1 || s->cp > 1)
		emit_printf(b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
	if (s->attn == ATTN_UNFUSED)
		emit_printf(b, "export NVTE_MASKED_SOFTMAX_FUSION=0\n");

	emit_printf(b, "\nARGS=(\n");
	megatron_flags(b, x);
	emit_printf(b, ")\n\n");

	emit_printf(b, "exec torchrun --nnodes \"$NNODES\" ");
	emit_nproc(b, x);
	emit_printf(b, " --node-rank \"$NODE_RANK\" \\\n"
		       "\t--master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\\n"
		       "\t\"$MEGATRON_LM/pretrain_gpt.py\" \"${ARGS[@]}\" \"$@\"\n");
}

void emit_slurm(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "job.sbatch", 0644);
	const struct trainer_nodes *n = &x->nodes;
	int gpn = x->c->group[n->group[0]].gpus_per_node;

	for (int i = 1; i < n->n; i++)
		if (x->c->group[n->group[i]].gpus_per_node != gpn)
			gpn = 0;
	emit_printf(b, "#!/usr/bin/env bash\n");
	emit_header(b, x, "Slurm job running launch.sh (Megatron-LM) on every node");
	emit_printf(b, "#\n"
		       "# Usage: MEGATRON_LM=<Megatron-LM checkout> sbatch job.sbatch [more flags]\n"
		       "# from this directory; the flags go to pretrain_gpt.py (see launch.sh).\n");
	if (x->hetero)
		emit_printf(b, "# The plan puts node groups on given node ranks (nodes.txt):\n");
	else
		emit_printf(b, "# Node ranks follow Slurm's node ids:\n");
	emit_node_runs(b, x);
	if (x->hetero)
		emit_printf(b, "# Slurm numbers nodes by name, not by group: allocate nodes of each group\n"
			       "# (--nodelist or --constraint) and list the hosts in node-rank order in\n"
			       "# HOSTS, e.g. HOSTS=\"gpu01 gpu02 ...\" sbatch --nodelist=gpu01,gpu02,... job.sbatch\n");
	emit_printf(b, "#SBATCH --job-name=ampplan\n#SBATCH --nodes=%d\n#SBATCH --ntasks-per-node=1\n",
		    n->n);
	if (gpn)
		emit_printf(b, "#SBATCH --gpus-per-node=%d\n", gpn);
	emit_printf(b, "#SBATCH --exclusive\n\n"
		       "set -euo pipefail\n"
		       ": \"${MEGATRON_LM:?set MEGATRON_LM to your Megatron-LM checkout}\"\n"
		       "cd \"$SLURM_SUBMIT_DIR\"\n"
		       "export MEGATRON_LM NNODES=$SLURM_NNODES\n"
		       "export MASTER_PORT=${MASTER_PORT:-29500}\n");
	if (!x->hetero) {
		emit_printf(b, "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
			       "export MASTER_ADDR\n\n"
			       "# shellcheck disable=SC2016 # expanded on each node\n"
			       "srun --ntasks-per-node=1 bash -c 'NODE_RANK=$SLURM_NODEID exec ./launch.sh \"$@\"' bash \"$@\"\n");
		return;
	}
	emit_printf(b, ": \"${HOSTS:?set HOSTS to the %d hosts in node-rank order (nodes.txt)}\"\n"
		       "export HOSTS MASTER_ADDR=${HOSTS%%%% *}\n\n"
		       "# Each node takes its node rank from its place in HOSTS.\n"
		       "# shellcheck disable=SC2016 # expanded on each node\n"
		       "srun --ntasks-per-node=1 bash -c 'r=0; for h in $HOSTS; do [ \"$h\" = \"$SLURMD_NODENAME\" ] && break; r=$((r + 1)); done; NODE_RANK=$r exec ./launch.sh \"$@\"' bash \"$@\"\n",
		    n->n);
}

void emit_nemo(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "overrides.txt", 0644);

	emit_header(b, x, "NeMo 2.0 / Megatron Bridge overrides, Hydra style");
	emit_printf(b, "#\n"
		       "# Pass them to a Megatron Bridge (or NeMo) pretraining script that takes\n"
		       "# Hydra-style overrides, one argument per line, on every node in nodes.txt order:\n"
		       "#   mapfile -t ov < <(grep -v '^#' overrides.txt)\n"
		       "#   torchrun --nnodes %d ",
		    x->nodes.n);
	emit_nproc(b, x);
	emit_printf(b, " --node-rank $NODE_RANK \\\n"
		       "#     --master-addr $MASTER_ADDR --master-port $MASTER_PORT <script> \"${ov[@]}\"\n");
	if (!emit_uniform_gpus(x))
		emit_printf(b, "# with NPROC the processes of the node (launch files of format megatron list them).\n");
	notes(b, x, true);
	nemo_fields(b, x);
}
