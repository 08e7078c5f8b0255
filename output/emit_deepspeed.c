/* emit_deepspeed.c: DeepSpeed config (ds_config.json) and the deepspeed
 * launcher script, whose comment gives what is code, not JSON: the
 * PipelineModule stage bounds, TP, recompute, MoE (TRAINERS.md, DeepSpeed). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster.h"
#include "emit_deepspeed.h"
#include "emit_util.h"
#include "model.h"
#include "strategy.h"
#include "util.h"

static void config(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "ds_config.json", 0644);
	const struct strategy *s = x->s;
	cJSON *root = cJSON_CreateObject(), *bf16, *zero;
	char *text;

	/* train_batch_size == micro * gas * dp, which DeepSpeed checks. */
	cJSON_AddNumberToObject(root, "train_batch_size", s->gbs);
	cJSON_AddNumberToObject(root, "train_micro_batch_size_per_gpu", s->mbs);
	cJSON_AddNumberToObject(root, "gradient_accumulation_steps", s->micro_batches);
	bf16 = cJSON_AddObjectToObject(root, "bf16");
	cJSON_AddBoolToObject(bf16, "enabled", 1);
	zero = cJSON_AddObjectToObject(root, "zero_optimization");
	cJSON_AddNumberToObject(zero, "stage", s->zero);
	/* Overlaps the gradient reduction with the backward pass (ZeRO-3:
	 * also the parameter prefetches with compute). */
	if (s->zero >= 1)
		cJSON_AddBoolToObject(zero, "overlap_comm", s->grad_overlap);
	text = cJSON_Print(root);
	if (!text) /* cJSON fails only for memory: stop as the x* wrappers do */
		fatal_oom();
	emit_printf(b, "%s\n", text);
	cJSON_free(text);
	cJSON_Delete(root);
}

/* True if DeepSpeed's partition_method='uniform' gives the plan's bounds;
 * only claimed when the pp stages have equal layer counts, where every
 * DeepSpeed version's partition_uniform agrees. */
static bool uniform(const struct strategy *s, int n_layer)
{
	if (n_layer % s->pp != 0)
		return false;
	for (int k = 1; k < s->pp; k++)
		if (s->first[k] != k * (n_layer / s->pp))
			return false;
	return true;
}

/* Appends "[0, 17, 34]": the bounds of the pp stages. */
static void parts(struct emit_buf *b, const struct strategy *s)
{
	for (int k = 0; k <= s->n_stages; k++)
		emit_printf(b, "%s%d", k ? ", " : "[", s->first[k]);
	emit_printf(b, "]");
}

/* Appends the comment lines of the launch script on the plan's kernels,
 * precision and overlaps: the model code's, or what ds_config.json cannot
 * set. */
static void kernels(struct emit_buf *b, const struct strategy *s, const struct model *m)
{
	emit_printf(b, "# - kernels: attention '%s' and %s norms are the model code's.\n",
		    attention_name(s->attn), s->unfused_norm ? "unfused" : "fused");
	if (s->tp_overlap && s->tp > 1)
		emit_printf(b, "# - TP comm overlap (with the GEMMs): the model code's tensor parallelism.\n");
	if (s->grad_overlap && s->zero == 0)
		emit_printf(b, "# - gradient reduction overlap: only ZeRO's overlap_comm does it, and this\n"
			       "#   plan runs zero 0: the reduction runs after the backward pass.\n");
	if (s->param_overlap && (s->zero == 1 || s->zero == 2))
		emit_printf(b, "# - parameter gather overlap: ZeRO-%d gathers the updated parameters\n"
			       "#   after the optimizer step, not under the forward pass: not expressible.\n",
			    s->zero);
	else if (!s->param_overlap && s->zero == 3)
		emit_printf(b, "# - ZeRO-3 prefetches parameters under compute by itself; the plan costed\n"
			       "#   the gathers exposed.\n");
	emit_printf(b, "# - gradients: the plan costed %s gradients, kept and reduced; set\n"
		       "#   data_types.grad_accum_dtype and communication_data_type to match where\n"
		       "#   your DeepSpeed version and ZeRO stage allow (not written here).\n",
		    grad_dtype_name(s, m->fp16));
	if (!s->grad_acc_unfused && s->micro_batches > 1)
		emit_printf(b, "# - gradient accumulation: the plan costed it inside the weight-gradient\n"
			       "#   GEMMs (Megatron's fusion); DeepSpeed adds each micro-batch's gradients\n"
			       "#   in a pass of its own, slower than the plan.\n");
}

static void launch(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "launch.sh", 0755);
	const struct model *m = x->m;
	const struct strategy *s = x->s;
	int n = x->nodes.n, n_layer = m->layers + 2;

	emit_printf(b, "#!/usr/bin/env bash\n");
	emit_header(b, x, "DeepSpeed launch; run it once, on the host of node rank 0");
	emit_printf(b, "#\n"
		       "# Usage: HOSTS=\"<host of node rank 0> ...\" [MASTER_PORT=29500] \\\n"
		       "#            [TRAIN_SCRIPT=train.py] ./launch.sh [script arguments]\n"
		       "# HOSTS names the %d host%s in node-rank order (nodes.txt); the launcher starts\n"
		       "# the ranks on them in that order (over ssh, pdsh), so that each GPU type gets\n"
		       "# the stages the plan gave it:\n",
		    n, n > 1 ? "s" : "");
	emit_node_runs(b, x);
	emit_printf(b, "# TRAIN_SCRIPT calls deepspeed.initialize and takes --deepspeed\n"
		       "# --deepspeed_config (deepspeed.add_config_arguments).\n"
		       "#\n"
		       "# ds_config.json holds the batch and ZeRO settings; the rest is code:\n");
	if (s->pp > 1) {
		emit_printf(b, "# - pipeline: PipelineModule(layers=[embedding, %d blocks, head],\n"
			       "#   num_stages=%d), stage s holding layers [parts[s], parts[s+1]) of those %d:\n"
			       "#   parts=",
			    m->layers, s->pp, n_layer);
		parts(b, s);
		if (uniform(s, n_layer))
			emit_printf(b, ", which partition_method='uniform' gives.\n");
		else
			emit_printf(b, ". PipelineModule takes a partition_method\n"
				       "#   ('parameters', 'uniform', 'type:regex'), not bounds: set these parts in\n"
				       "#   code (override PipelineModule._partition_layers).\n");
	}
	if (s->tp > 1)
		emit_printf(b, "# - tensor parallelism (tp %d%s) is the model code's, e.g.\n"
			       "#   Megatron-DeepSpeed --tensor-model-parallel-size %d%s;\n"
			       "#   pass its mpu to deepspeed.initialize so that data parallelism is\n"
			       "#   world / (tp * pp) = %d.\n",
			    s->tp, s->sp ? ", sequence parallel" : "", s->tp,
			    s->sp ? " --sequence-parallel" : "", s->dp);
	if (s->recompute == RECOMPUTE_FULL)
		emit_printf(b, "# - recompute full: checkpoint every block\n#   (%s).\n",
			    s->pp > 1 ? "PipelineModule(activation_checkpoint_interval=1)"
				      : "deepspeed.checkpointing.checkpoint");
	else if (s->recompute == RECOMPUTE_SELECTIVE)
		emit_printf(b, "# - recompute selective: recompute attention in the model code.\n");
	emit_printf(b, "# - the model is the code's: build it as \"the model as costed\" above says\n"
		       "#   (norm and epsilon, rotary base and scaling, dropout 0, biases, q/k norms,\n"
		       "#   the vocabulary unpadded).\n");
	if (m->experts > 0) {
		emit_printf(b, "# - MoE: deepspeed.moe.layer.MoE(num_experts=%d, ep_size=%d, k=%d,\n",
			    m->experts, s->ep, m->top_k);
		if (s->moe_capacity > 0)
			emit_printf(b, "#   capacity_factor=%g, drop_tokens=True,", s->moe_capacity);
		else
			emit_printf(b, "#   drop_tokens=False,");
		emit_printf(b, " enable_expert_tensor_parallelism=%s)", strategy_etp(s) > 1 ? "True" : "False");
		if (s->moe_capacity > 0)
			emit_printf(b, ",\n#   as the plan costed; it dispatches with all-to-all.");
		else
			emit_printf(b, ": dropless,\n#   as the plan costed (DeepSpeed drops tokens over capacity_factor by\n"
				       "#   default); it dispatches with all-to-all.");
		emit_printf(b, "%s\n", m->shared_experts > 0 ? " The shared experts run beside it\n#   in the model code." : "");
	}
	kernels(b, s, x->m);
	emit_printf(b, "set -euo pipefail\n\n"
		       "HOSTS=${HOSTS:?set HOSTS to the %d host%s in node-rank order (nodes.txt)}\n"
		       "MASTER_PORT=${MASTER_PORT:-29500}\n"
		       "TRAIN_SCRIPT=${TRAIN_SCRIPT:-train.py}\n"
		       "read -r -a hosts <<<\"$HOSTS\"\n"
		       "slots=(",
		    n, n > 1 ? "s" : "");
	for (int i = 0; i < n; i++)
		emit_printf(b, "%s%d", i ? " " : "", x->nodes.gpus[i]);
	emit_printf(b, ")\n"
		       "if [ \"${#hosts[@]}\" -ne %d ]; then\n"
		       "\techo \"launch.sh: error: HOSTS must name %d host%s, not ${#hosts[@]}\" >&2\n"
		       "\texit 1\n"
		       "fi\n"
		       "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
		       "hostfile=$(mktemp)\n"
		       "trap 'rm -f \"$hostfile\"' EXIT\n"
		       "for i in \"${!hosts[@]}\"; do\n"
		       "\techo \"${hosts[i]} slots=${slots[i]}\"\n"
		       "done >\"$hostfile\"\n\n"
		       "deepspeed --hostfile \"$hostfile\" --master_addr \"${hosts[0]}\" --master_port \"$MASTER_PORT\" \\\n"
		       "\t\"$TRAIN_SCRIPT\" --deepspeed --deepspeed_config \"$here/ds_config.json\" \"$@\"\n",
		    n, n, n > 1 ? "s" : "");
}

void emit_deepspeed(struct emit_ctx *x)
{
	config(x);
	launch(x);
}
