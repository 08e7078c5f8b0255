/* emit_megatron.c: the Megatron-LM family: launch.sh for pretrain_gpt.py, a
 * Slurm job around it, and NeMo 2.0 / Megatron Bridge overrides
 * (TRAINERS.md, Megatron-LM and NeMo sections). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "emit_megatron.h"
#include "emit_util.h"
#include "model.h"
#include "strategy.h"

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

	emit_printf(&n, "%s", "");
	if (s->attn == ATTN_FLASH1)
		emit_printf(&n, "# - attention 'flash1': FlashAttention 1 cannot be chosen; %s flash\n"
			    "#   runs FlashAttention 2 or later, faster than the plan costed.\n", backend);
	else if (s->attn == ATTN_FUSED_SOFTMAX)
		emit_printf(&n, "# - attention 'fused-softmax': %s unfused, Transformer Engine's\n"
			    "#   attention over the s x s scores with its fused scale-mask-softmax kernel.\n",
			    backend);
	else if (s->attn == ATTN_UNFUSED)
		emit_printf(&n, "# - attention 'unfused': %s unfused with the softmax fusion off\n"
			    "#   (%s and NVTE_MASKED_SOFTMAX_FUSION=0%s).\n", backend,
			    nemo ? "model.masked_softmax_fusion=false" : "--no-masked-softmax-fusion",
			    nemo ? ": export it on every node" : "");
	if (s->unfused_norm)
		emit_printf(&n, "# - norms 'unfused': no setting runs them so (Transformer Engine's norms are\n"
			    "#   fused kernels): they run faster than the plan costed.\n");
	if (s->fp8)
		emit_printf(&n, "# - FP8 GEMMs: format hybrid (E4M3 forward, E5M2 gradients), delayed scaling,\n"
			    "#   through Transformer Engine, on GPUs with FP8 (H100 or later).\n");
	if (s->fp8 && nemo)
		emit_printf(&n, "#   A mixed_precision recipe, where the script sets one, also sets the fp8\n"
			    "#   fields and wins: pick one with FP8 hybrid, or none.\n");
	if (tp_overlap(s))
		emit_printf(&n, "# - %s: Transformer Engine's userbuffers overlap the TP\n"
			    "#   all-gathers and reduce-scatters with the GEMMs.%s\n", tpo,
			    nemo ? " A comm_overlap config, where\n#   the script sets one, decides this field: set it alike." : "");
	else if (s->tp_overlap)
		emit_printf(&n, "# - TP comm overlap: %s needs tp > 1 and sequence parallelism\n"
			    "#   (tp %d, sp %s): not set, TP communication runs exposed.\n",
			    tpo, s->tp, s->sp ? "on" : "off");
	if (s->param_overlap && s->zero < 1)
		emit_printf(&n, "# - parameter gather overlap: %s needs the distributed optimizer\n"
			    "#   (zero >= 1, here 0): not set.\n", pgo);
	else if (s->param_overlap && !s->grad_overlap)
		emit_printf(&n, "# - parameter gather overlap: %s needs %s,\n"
			    "#   which the plan does not overlap: not set, the gathers run exposed.\n",
			    pgo, grd);
	if (x->m->vocab % s->tp != 0)
		emit_printf(&n, "# - vocabulary: tp %d does not divide it (%d), so Megatron pads it to %d\n"
			    "#   rows, %d more than the plan costed.\n", s->tp, x->m->vocab,
			    (x->m->vocab + s->tp - 1) / s->tp * s->tp,
			    (x->m->vocab + s->tp - 1) / s->tp * s->tp - x->m->vocab);
	if (x->m->experts > 0)
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

/* The model's fields as Megatron-LM flags (TRAINERS.md "Fields the launch
 * files must carry"), in ARGS. trainer_check has refused what has no flag
 * (parallel blocks, alternating windows, rope scalings but Llama 3's). */
static void model_flags(struct emit_buf *b, const struct model *m, const struct strategy *s)
{
	int kv = m->kv_heads ? m->kv_heads : m->heads;
	const struct rope_scaling *r = &m->rope_scaling;

	emit_printf(b, "\t--num-layers %d\n\t--hidden-size %d\n\t--ffn-hidden-size %d\n",
		    m->layers, m->hidden, m->ffn);
	if (m->experts > 0) {
		emit_printf(b, "\t--num-experts %d\n\t--moe-router-topk %d\n"
			    "\t--moe-ffn-hidden-size %d\n\t--expert-model-parallel-size %d\n"
			    "\t--expert-tensor-parallel-size %d\n"
			    "\t--moe-token-dispatcher-type alltoall\n"
			    "\t--moe-router-load-balancing-type %s\n",
			    m->experts, m->top_k, m->moe_ffn, s->ep, strategy_etp(s), emit_balance(m, s));
		if (s->moe_capacity > 0)
			emit_printf(b, "\t--moe-expert-capacity-factor %g\n\t--moe-token-drop-policy probs\n",
				    s->moe_capacity);
		if (m->shared_experts > 0)
			emit_printf(b, "\t--moe-shared-expert-intermediate-size %d\n",
				    m->shared_experts * m->shared_ffn);
		if (!all_moe(m)) {
			emit_printf(b, "\t--moe-layer-freq '");
			moe_pattern(b, m);
			emit_printf(b, "'\n");
		}
	}
	emit_printf(b, "\t--num-attention-heads %d\n", m->heads);
	if (m->kv_lora_rank > 0) {
		emit_printf(b, "\t--multi-latent-attention\n");
		if (m->q_lora_rank > 0)
			emit_printf(b, "\t--q-lora-rank %d\n", m->q_lora_rank);
		emit_printf(b, "\t--kv-lora-rank %d\n\t--qk-head-dim %d\n"
			    "\t--qk-pos-emb-head-dim %d\n\t--v-head-dim %d\n",
			    m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim, m->v_head_dim);
	} else {
		if (kv < m->heads)
			emit_printf(b, "\t--group-query-attention\n\t--num-query-groups %d\n", kv);
		if (m->head_dim && m->head_dim * m->heads != m->hidden)
			emit_printf(b, "\t--kv-channels %d\n", m->head_dim);
	}
	emit_printf(b, "\t--seq-length %d\n\t--max-position-embeddings %d\n",
		    s->seq, m->max_pos >= s->seq ? m->max_pos : s->seq);
	if (m->ffn_kind == FFN_SWIGLU)
		emit_printf(b, "\t--swiglu\n");
	else if (m->ffn_kind == FFN_RELU2)	/* Nemotron-4's; GeLU is the default */
		emit_printf(b, "\t--squared-relu\n");
	emit_printf(b, "\t--normalization %s\n", emit_layernorm(m) ? "LayerNorm" : "RMSNorm");
	if (m->norm_eps > 0)
		emit_printf(b, "\t--norm-epsilon %g\n", m->norm_eps);
	if (m->learned_pos) {
		emit_printf(b, "\t--position-embedding-type learned_absolute\n");
	} else {
		emit_printf(b, "\t--position-embedding-type rope\n");
		if (m->rope_theta > 0)
			emit_printf(b, "\t--rotary-base %.0f\n", m->rope_theta);
		if (strcmp(r->type, "llama3") == 0)
			emit_printf(b, "\t--use-rope-scaling\n\t--rope-scaling-factor %g\n", r->factor);
		else if (strcmp(r->type, "yarn") == 0)	/* MLA only (trainer_check) */
			emit_printf(b, "\t--rotary-scaling-factor %g\n", r->factor);
	}
	emit_printf(b, "\t--attention-dropout 0\n\t--hidden-dropout 0\n");
	if (!m->bias)
		emit_printf(b, "\t--disable-bias-linear\n");
	if (!m->bias && m->qkv_bias)
		emit_printf(b, "\t--add-qkv-bias\n");
	if (m->qk_norm)
		emit_printf(b, "\t--qk-layernorm\n");
	/* flash attention's (left, right) window: W - 1 earlier tokens and
	   the token itself, nothing to the right (causal) */
	if (m->sliding_window > 0)
		emit_printf(b, "\t--window-size %d,0\n", m->sliding_window - 1);
	emit_printf(b, "\t--make-vocab-size-divisible-by %d\n", emit_vocab_divisor(m, s->tp));
	if (!m->tied)
		emit_printf(b, "\t--untie-embeddings-and-output-weights\n");
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
				     "# and the plan assumes balanced experts" : "");
	placement_comment(b, x);
	notes(b, x, false);
	emit_node_env(b, x, "launch.sh");
	emit_printf(b, "MEGATRON_LM=${MEGATRON_LM:-.}\n");
	if (s->tp > 1 || s->cp > 1)
		emit_printf(b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
	if (s->attn == ATTN_UNFUSED)
		emit_printf(b, "export NVTE_MASKED_SOFTMAX_FUSION=0\n");

	emit_printf(b, "\nARGS=(\n");
	model_flags(b, m, s);
	emit_printf(b, "\t--tensor-model-parallel-size %d\n\t--pipeline-model-parallel-size %d\n"
		    "\t--context-parallel-size %d\n",
		    s->tp, s->pp, s->cp);
	if (s->cp > 1)	/* the CP flavour the cost model timed */
		emit_printf(b, "\t--cp-comm-type %s\n", cp_comm_name(s->cp_comm));
	if (s->cp > 1 && s->cp_comm == CP_A2A_P2P)
		emit_printf(b, "\t--hierarchical-context-parallel-sizes %d %d\n", s->cp_a2a,
			    s->cp / s->cp_a2a);
	if (s->sp)
		emit_printf(b, "\t--sequence-parallel\n");
	if (!emit_default_split(x)) {
		emit_printf(b, "\t--pipeline-model-parallel-layout '");
		emit_layout(b, x);
		emit_printf(b, "'\n");
	} else if (s->vp > 1) {
		emit_printf(b, "\t--num-virtual-stages-per-pipeline-rank %d\n", s->vp);
	}
	emit_printf(b, "\t--micro-batch-size %d\n\t--global-batch-size %d\n", s->mbs, s->gbs);
	if (s->recompute == RECOMPUTE_FULL)
		emit_printf(b, "\t--recompute-granularity full\n\t--recompute-method uniform\n"
			    "\t--recompute-num-layers 1\n");
	else if (s->recompute == RECOMPUTE_SELECTIVE)
		emit_printf(b, "\t--recompute-granularity selective\n");
	if (s->zero >= 1)
		emit_printf(b, "\t--use-distributed-optimizer\n");
	if (s->grad_overlap)
		emit_printf(b, "\t--overlap-grad-reduce\n");
	if (param_overlap(s))
		emit_printf(b, "\t--overlap-param-gather\n");
	if (tp_overlap(s))
		emit_printf(b, "\t--tp-comm-overlap\n");
	emit_printf(b, "\t--attention-backend %s\n", attention_backend(s));
	if (s->attn == ATTN_UNFUSED)
		emit_printf(b, "\t--no-masked-softmax-fusion\n");
	if (s->fp8)
		emit_printf(b, "\t--fp8-format hybrid\n\t--fp8-recipe delayed\n");
	emit_printf(b, "\t--bf16\n");
	if (s->grad_bytes == 2)
		emit_printf(b, "\t--grad-reduce-in-bf16\n");
	if (s->grad_acc_unfused)
		emit_printf(b, "\t--no-gradient-accumulation-fusion\n");
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

/* The MoE fields of nemo_model. */
static void nemo_moe(struct emit_buf *b, const struct model *m, const struct strategy *s)
{
	emit_printf(b, "model.num_moe_experts=%d\nmodel.moe_router_topk=%d\n"
		    "model.moe_ffn_hidden_size=%d\nmodel.moe_token_dispatcher_type=alltoall\n"
		    "model.moe_router_load_balancing_type=%s\n",
		    m->experts, m->top_k, m->moe_ffn, emit_balance(m, s));
	if (s->moe_capacity > 0)
		emit_printf(b, "model.moe_expert_capacity_factor=%g\nmodel.moe_token_drop_policy=probs\n",
			    s->moe_capacity);
	else
		emit_printf(b, "model.moe_expert_capacity_factor=null\n");
	if (m->shared_experts > 0)
		emit_printf(b, "model.moe_shared_expert_intermediate_size=%d\n",
			    m->shared_experts * m->shared_ffn);
	if (!all_moe(m)) {
		emit_printf(b, "model.moe_layer_freq=");
		moe_pattern(b, m);
		emit_printf(b, "\n");
	}
}

/* The model's fields as Megatron core config fields (TransformerConfig,
 * MLATransformerConfig, and Megatron Bridge's GPTModelProvider for
 * rotary_base, rope_scaling*, make_vocab_size_divisible_by,
 * share_embeddings_and_output_weights): the same settings as model_flags,
 * Hydra style. */
static void nemo_model(struct emit_buf *b, const struct model *m, const struct strategy *s)
{
	int kv = m->kv_heads ? m->kv_heads : m->heads;
	const struct rope_scaling *r = &m->rope_scaling;

	emit_printf(b, "# The model (start from a recipe of its family: activation_func stays the\n"
		    "# recipe's, %s):\n"
		    "model.num_layers=%d\nmodel.hidden_size=%d\nmodel.ffn_hidden_size=%d\n"
		    "model.num_attention_heads=%d\n",
		    m->ffn_kind == FFN_SWIGLU ? "silu for SwiGLU" : m->ffn_kind == FFN_GELU ? "gelu" : "squared relu",
		    m->layers, m->hidden, m->ffn, m->heads);
	if (m->kv_lora_rank > 0) {
		emit_printf(b, "model.multi_latent_attention=true\n");
		if (m->q_lora_rank > 0)
			emit_printf(b, "model.q_lora_rank=%d\n", m->q_lora_rank);
		emit_printf(b, "model.kv_lora_rank=%d\nmodel.qk_head_dim=%d\n"
			    "model.qk_pos_emb_head_dim=%d\nmodel.v_head_dim=%d\n",
			    m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim, m->v_head_dim);
	} else {
		emit_printf(b, "model.num_query_groups=%d\n", kv);
		if (m->head_dim)
			emit_printf(b, "model.kv_channels=%d\n", m->head_dim);
	}
	emit_printf(b, "model.gated_linear_unit=%s\nmodel.normalization=%s\n",
		    m->ffn_kind == FFN_SWIGLU ? "true" : "false",
		    emit_layernorm(m) ? "LayerNorm" : "RMSNorm");
	if (m->norm_eps > 0)
		emit_printf(b, "model.layernorm_epsilon=%g\n", m->norm_eps);
	emit_printf(b, "model.position_embedding_type=%s\n", m->learned_pos ? "learned_absolute" : "rope");
	if (!m->learned_pos && m->rope_theta > 0)
		emit_printf(b, "model.rotary_base=%.0f\n", m->rope_theta);
	if (!m->learned_pos && strcmp(r->type, "llama3") == 0)
		emit_printf(b, "model.rope_scaling=true\nmodel.rope_scaling_factor=%g\n", r->factor);
	else if (!m->learned_pos && strcmp(r->type, "yarn") == 0)
		emit_printf(b, "model.rotary_scaling_factor=%g\n", r->factor);
	emit_printf(b, "model.attention_dropout=0.0\nmodel.hidden_dropout=0.0\n"
		    "model.add_bias_linear=%s\nmodel.add_qkv_bias=%s\nmodel.qk_layernorm=%s\n",
		    m->bias ? "true" : "false", m->bias || m->qkv_bias ? "true" : "false",
		    m->qk_norm ? "true" : "false");
	if (m->sliding_window > 0)
		emit_printf(b, "model.window_size=[%d,0]\n", m->sliding_window - 1);
	emit_printf(b, "model.make_vocab_size_divisible_by=%d\n"
		    "model.share_embeddings_and_output_weights=%s\n",
		    emit_vocab_divisor(m, s->tp), m->tied ? "true" : "false");
	if (m->experts > 0)
		nemo_moe(b, m, s);
	emit_printf(b, "# The parallel plan:\n");
}

void emit_nemo(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "overrides.txt", 0644);
	const struct strategy *s = x->s;

	emit_header(b, x, "NeMo 2.0 / Megatron Bridge overrides, Hydra style");
	emit_printf(b, "#\n"
		    "# Pass them to a Megatron Bridge (or NeMo) pretraining script that takes\n"
		    "# Hydra-style overrides, one argument per line, on every node in nodes.txt order:\n"
		    "#   mapfile -t ov < <(grep -v '^#' overrides.txt)\n"
		    "#   torchrun --nnodes %d ", x->nodes.n);
	emit_nproc(b, x);
	emit_printf(b, " --node-rank $NODE_RANK \\\n"
		    "#     --master-addr $MASTER_ADDR --master-port $MASTER_PORT <script> \"${ov[@]}\"\n");
	if (!emit_uniform_gpus(x))
		emit_printf(b, "# with NPROC the processes of the node (launch files of format megatron list them).\n");
	notes(b, x, true);
	nemo_model(b, x->m, s);
	emit_printf(b, "model.tensor_model_parallel_size=%d\n"
		    "model.pipeline_model_parallel_size=%d\n", s->tp, s->pp);
	if (s->vp > 1)
		emit_printf(b, "model.virtual_pipeline_model_parallel_size=%d\n", s->vp);
	emit_printf(b, "model.context_parallel_size=%d\n"
		    "model.sequence_parallel=%s\n", s->cp, s->sp ? "true" : "false");
	if (s->cp > 1)
		emit_printf(b, "model.cp_comm_type=%s\n", cp_comm_name(s->cp_comm));
	if (s->cp > 1 && s->cp_comm == CP_A2A_P2P)
		emit_printf(b, "model.hierarchical_context_parallel_sizes=[%d,%d]\n", s->cp_a2a,
			    s->cp / s->cp_a2a);
	if (x->m->experts > 0)
		emit_printf(b, "model.expert_model_parallel_size=%d\n"
			    "model.expert_tensor_parallel_size=%d\n", s->ep, strategy_etp(s));
	if (!emit_default_split(x)) {
		emit_printf(b, "model.pipeline_model_parallel_layout=\"");
		emit_layout(b, x);
		emit_printf(b, "\"\n");
	}
	if (s->recompute == RECOMPUTE_FULL)
		emit_printf(b, "model.recompute_granularity=full\nmodel.recompute_method=uniform\n"
			    "model.recompute_num_layers=1\n");
	else if (s->recompute == RECOMPUTE_SELECTIVE)
		emit_printf(b, "model.recompute_granularity=selective\n");
	emit_printf(b, "model.seq_length=%d\n"
		    "dataset.sequence_length=%d\n"
		    "train.micro_batch_size=%d\n"
		    "train.global_batch_size=%d\n"
		    "ddp.use_distributed_optimizer=%s\n"
		    "optimizer.use_distributed_optimizer=%s\n"
		    "ddp.overlap_grad_reduce=%s\n",
		    s->seq, s->seq, s->mbs, s->gbs, s->zero >= 1 ? "true" : "false",
		    s->zero >= 1 ? "true" : "false", s->grad_overlap ? "true" : "false");
	emit_printf(b, "ddp.overlap_param_gather=%s\n"
		    "ddp.grad_reduce_in_fp32=%s\n"
		    "model.tp_comm_overlap=%s\n"
		    "model.attention_backend=%s\n",
		    param_overlap(s) ? "true" : "false", s->grad_bytes == 2 ? "false" : "true",
		    tp_overlap(s) ? "true" : "false", attention_backend(s));
	if (s->attn == ATTN_UNFUSED)
		emit_printf(b, "model.masked_softmax_fusion=false\n");
	if (s->fp8)
		emit_printf(b, "model.fp8=hybrid\nmodel.fp8_recipe=delayed\n");
	if (s->grad_acc_unfused)
		emit_printf(b, "model.gradient_accumulation_fusion=false\n");
}
