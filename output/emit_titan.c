/* emit_titan.c: torchtitan v0.2.2 job config (train.toml) and its torchrun
 * script (TRAINERS.md, torchtitan section). */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "emit_titan.h"
#include "emit_util.h"
#include "model.h"
#include "strategy.h"

/* torchtitan's names of the schedules it runs (parallelism.pipeline_
 * parallel_schedule) and of the recomputation modes (activation_checkpoint
 * .mode), as v0.2.2's config takes them. */
const char *const emit_titan_sched[SCHED_COUNT] = {
	[SCHED_1F1B] = "1F1B",
	[SCHED_INTERLEAVED] = "Interleaved1F1B",
	[SCHED_GPIPE] = "GPipe",
	[SCHED_INTERLEAVED_ZB] = "InterleavedZeroBubble",
	[SCHED_ZB_V] = "ZBVZeroBubble",
	[SCHED_DUALPIPE_V] = "DualPipeV",
};
const char *const emit_titan_ac[RECOMPUTE_COUNT] = {
	[RECOMPUTE_NONE] = "none",
	[RECOMPUTE_SELECTIVE] = "selective",
	[RECOMPUTE_FULL] = "full",
};

void emit_titan_string(struct emit_buf *b, const char *s)
{
	emit_printf(b, "\"");
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			emit_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			emit_printf(b, "\\u%04x", (unsigned char)*s);
		else
			emit_printf(b, "%c", *s);
	}
	emit_printf(b, "\"");
}

/* [model]: torchtitan's model and flavor of m (trainer_check has refused a
 * model torchtitan v0.2.2 does not ship). The flavor fixes the architecture
 * (norm epsilon, rotary base and scaling, biases, q/k norms): the header
 * lists what the plan costed, to compare with it. */
static void model_section(struct emit_buf *b, const struct model *m)
{
	const char *flavor = NULL, *name = trainer_titan_model(m, &flavor);

	emit_printf(b, "\n[model]\n"
		       "# torchtitan's own model of these dimensions; its flavor sets the norm epsilon,\n"
		       "# rotary base and scaling of torchtitan's code, and no dropout: compare them\n"
		       "# with \"the model as costed\" above.\n"
		       "name = ");
	emit_titan_string(b, name);
	emit_printf(b, "\nflavor = ");
	emit_titan_string(b, flavor);
	emit_printf(b, "\n");
}

/* Appends one quoted module name of a stage list, wrapping the line before
 * column 80; *col is the current column. */
static void fqn(struct emit_buf *b, int *col, bool first, const char *name)
{
	int n = (int)strlen(name);

	if (!first && *col + 2 + n + 2 > 80) {
		emit_printf(b, ",\n\t ");
		*col = 9;
	} else if (!first) {
		emit_printf(b, ", ");
		*col += 2;
	}
	emit_printf(b, "\"%s\"", name);
	*col += n + 2;
}

void emit_titan_fqns(struct emit_buf *b, const struct emit_ctx *x, const char *open,
		     const char *close)
{
	const struct strategy *s = x->s;
	int head = x->m->layers + 1;

	emit_printf(b, "%s[\n", open);
	for (int k = 0; k < s->n_stages; k++) {
		int col = 9;

		emit_printf(b, "\t[");
		for (int l = s->first[k]; l < s->first[k + 1]; l++) {
			bool first = l == s->first[k];

			if (l == 0) {
				fqn(b, &col, first, "tok_embeddings");
			} else if (l == head) {
				fqn(b, &col, first, "norm");
				fqn(b, &col, false, "output");
			} else {
				char name[32];

				snprintf(name, sizeof name, "layers.%d", l - 1);
				fqn(b, &col, first, name);
			}
		}
		emit_printf(b, "],\n");
	}
	emit_printf(b, "]%s\n", close);
}

bool emit_titan_compiled(const struct strategy *s)
{
	return (!s->unfused_norm && !s->unfused_pointwise) || s->fp8 || (s->tp_overlap && s->tp > 1);
}

/* Appends comment lines on the plan's kernel, precision and overlap
 * choices that train.toml cannot set, or sets otherwise than costed. */
static void notes(struct emit_buf *b, const struct strategy *s)
{
	struct emit_buf n = { 0 };

	emit_printf(&n, "%s", "");
	if (s->attn != ATTN_FLASH)
		emit_printf(&n, "# - attention '%s': no setting here; torchtitan's llama3 runs\n"
				"#   scaled_dot_product_attention (FlashAttention 2 or cuDNN kernels), faster\n"
				"#   than the plan costed.\n",
			    attention_name(s->attn));
	if ((s->unfused_norm || s->unfused_pointwise) && emit_titan_compiled(s))
		emit_printf(&n, "# - eager norms, RoPE or SwiGLU: torch.compile (on for FP8 or async TP) fuses\n"
				"#   them, faster than the plan costed.\n");
	if (s->tp_overlap && s->tp == 1)
		emit_printf(&n, "# - TP comm overlap: nothing to overlap with tp 1.\n");
	if (s->dp > 1 && (!s->grad_overlap || !s->param_overlap))
		emit_printf(&n, "# - FSDP overlaps its parameter all-gathers with the forward pass and its\n"
				"#   gradient reduce-scatters with the backward pass by itself; the plan\n"
				"#   costed %s exposed, slower than torchtitan runs.\n",
			    !s->grad_overlap && !s->param_overlap ? "both"
			    : !s->grad_overlap			  ? "the reduction"
								  : "the gathers");
	if (!s->grad_acc_unfused && s->micro_batches > 1)
		emit_printf(&n, "# - gradient accumulation: the plan costed it inside the weight-gradient\n"
				"#   GEMMs (Megatron's fusion); autograd adds each micro-batch's gradients\n"
				"#   in a pass of its own, slower than the plan.\n");
	if (s->grad_bytes == 2)
		emit_printf(&n, "# - gradients bf16: no setting here; torchtitan reduces gradients in float32\n"
				"#   (training.mixed_precision_reduce takes only \"float32\").\n");
	if (n.len)
		emit_printf(b, "#\n# The plan's kernels, precision and overlaps that this file cannot set:\n%s",
			    n.s);
	free(n.s);
}

static void toml(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "train.toml", 0644);
	const struct strategy *s = x->s;

	emit_header(b, x, "torchtitan job config (--job.config_file), run by run.sh");
	emit_printf(b, "#\n"
		       "# For torchtitan v0.2.2, the last release that reads TOML job configs; later\n"
		       "# versions replaced TOML with Python config functions. Dataset, tokenizer\n"
		       "# (model.hf_assets_path), optimizer and steps keep torchtitan's defaults: add\n"
		       "# them here, or as --section.key arguments to run.sh.\n");
	notes(b, s);
	emit_printf(b, "\n[job]\ndescription = ");
	{
		struct emit_buf d = { 0 };

		emit_printf(&d, "ampplan: %s on %s", x->m->name ? x->m->name : "model",
			    x->c->name ? x->c->name : "cluster");
		emit_titan_string(b, d.s);
		free(d.s);
	}
	emit_printf(b, "\n");
	model_section(b, x->m);
	if (s->fp8)
		emit_printf(b, "# FP8 GEMMs: torchao float8 training of the blocks' linear layers\n"
			       "converters = [\"quantize.linear.float8\"]\n");
	/* torchtitan/train.py: local_batch_size is one step's forward per DP
	   rank (split into micro-batches under PP), and global / (local x DP)
	   steps accumulate. */
	if (s->pp > 1)
		emit_printf(b, "\n[training]\n"
			       "# one forward per DP rank: %d micro-batches of %d under the pipeline schedule\n"
			       "local_batch_size = %d\n",
			    s->micro_batches, s->mbs, s->mbs * s->micro_batches);
	else
		emit_printf(b, "\n[training]\n"
			       "# one micro-batch per forward; global_batch_size / (local x DP %d) = %d\n"
			       "# forwards accumulate their gradients\n"
			       "local_batch_size = %d\n",
			    s->dp, s->micro_batches, s->mbs);
	emit_printf(b, "global_batch_size = %d\nseq_len = %d\n", s->gbs, s->seq);

	emit_printf(b, "\n[parallelism]\n");
	if (s->zero >= 1)
		emit_printf(b, "# zero %d: FSDP over the data-parallel ranks (it shards parameters,\n"
			       "# gradients and optimizer states alike)\n"
			       "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = %d\n",
			    s->zero, s->dp);
	else
		emit_printf(b, "data_parallel_replicate_degree = %d\ndata_parallel_shard_degree = 1\n",
			    s->dp);
	if (s->tp > 1)
		emit_printf(b, "# torchtitan's tensor parallelism always shards norms along the sequence (SP)\n");
	emit_printf(b, "tensor_parallel_degree = %d\n", s->tp);
	if (s->tp_overlap && s->tp > 1)
		emit_printf(b, "# TP comm overlap: async TP (needs torch.compile, [compile] below)\n"
			       "enable_async_tensor_parallel = true\n");
	emit_printf(b, "context_parallel_degree = %d\n", s->cp);
	if (s->cp > 1)
		emit_printf(b, "# K/V shards passed round the CP ring, as the plan costed (not gathered)\n"
			       "context_parallel_rotate_method = \"alltoall\"\n");
	emit_printf(b, "pipeline_parallel_degree = %d\n", s->pp);
	if (s->pp > 1) {
		if (schedule_v(s->schedule))
			emit_printf(b, "# %s: the model parts below in stage order; torchtitan places\n"
				       "# stages r and %d - r on pipeline rank r (its \"v\" style)\n",
				    s->schedule == SCHED_ZB_V ? "ZB-V" : "DualPipeV", 2 * s->pp - 1);
		emit_printf(b, "pipeline_parallel_schedule = \"%s\"\n"
			       "pipeline_parallel_microbatch_size = %d\n",
			    emit_titan_sched[s->schedule], s->mbs);
		emit_titan_fqns(b, x, "module_fqns_per_model_part = ", "");
	}
	emit_printf(b, "expert_parallel_degree = %d\n", s->ep);
	if (x->m->experts > 0)
		emit_printf(b, "# each expert split over %d GPUs, as the plan costed (expert weights / (ep x etp))\n"
			       "expert_tensor_parallel_degree = %d\n",
			    strategy_etp(s), strategy_etp(s));
	emit_printf(b, "\n[activation_checkpoint]\nmode = \"%s\"\n", emit_titan_ac[s->recompute]);
	if (s->recompute == RECOMPUTE_SELECTIVE)
		emit_printf(b, "selective_ac_option = \"op\"\n");
	if (s->fp8)
		emit_printf(b, "\n[quantize.linear.float8]\n"
			       "# dynamic tensorwise scaling (the default recipe); the LM head stays in bf16\n"
			       "filter_fqns = [\"output\"]\n");
	if (emit_titan_compiled(s))
		emit_printf(b, "\n[compile]\n"
			       "# fuses the norms and elementwise kernels%s\n"
			       "enable = true\ncomponents = [\"model\", \"loss\"]\n",
			    s->tp_overlap && s->tp > 1 ? "; async TP needs it" : "");
}

static void run_sh(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "run.sh", 0755);

	emit_printf(b, "#!/usr/bin/env bash\n");
	emit_header(b, x, "torchtitan v0.2.2 launch of train.toml; run it once on every node");
	emit_printf(b, "#\n"
		       "# Usage: NODE_RANK=<r> MASTER_ADDR=<host of node rank 0> [MASTER_PORT=29500] \\\n"
		       "#            ./run.sh [more --section.key value]\n"
		       "# where torchtitan v0.2.2 is importable (python -m torchtitan.train).\n"
		       "#\n"
		       "# Placement: torchtitan's mesh (pp, dp, cp, tp, outer to inner) puts pipeline\n"
		       "# rank p on global ranks [p*%d, (p+1)*%d), and a node's ranks follow those of\n"
		       "# the lower node ranks. Node rank r must run on a node of the group nodes.txt\n"
		       "# names for r, so that each GPU type gets the stages the plan gave it; node\n"
		       "# ranks hold only with torchrun's static rendezvous (--node-rank):\n",
		    x->block, x->block);
	emit_node_runs(b, x);
	emit_node_env(b, x, "run.sh");
	emit_printf(b, "here=$(cd \"$(dirname \"$0\")\" && pwd)\n\n"
		       "exec torchrun --nnodes \"$NNODES\" ");
	emit_nproc(b, x);
	emit_printf(b, " --node-rank \"$NODE_RANK\" \\\n"
		       "\t--master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\\n"
		       "\t-m torchtitan.train --job.config_file \"$here/train.toml\" \"$@\"\n");
}

void emit_titan(struct emit_ctx *x)
{
	toml(x);
	run_sh(x);
}
