/* emit_titan_main.c: torchtitan main's Python config (config.py) and its
 * torchrun script, the second torchtitan target beside v0.2.2's TOML
 * (emit_titan.c).
 *
 * What this relies on: TRAINERS.md documents torchtitan v0.2.2 only and
 * says that later versions replaced TOML with Python config functions. The
 * changes of torchtitan main (2026-08) used here are those issue 30 names:
 * a Python config system, batch sizes counted in tokens, pipeline
 * micro-batches set by num_pp_microbatches, and no expert tensor
 * parallelism (trainer_titan_main_check refuses a plan with ETP > 1). The
 * rest is assumed unchanged from v0.2.2: the section and field names, the
 * schedule, recomputation and model names, the FSDP / replicate split of
 * DP, async TP and the float8 converter. The entry point's flag that takes
 * the config (run.sh's --config) is an assumption too; the header of each
 * file says so. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster.h"
#include "emit_titan.h"
#include "emit_util.h"
#include "model.h"
#include "strategy.h"
#include "trainer.h"

/* "True" or "False". */
static const char *py_bool(bool v)
{
	return v ? "True" : "False";
}

static void config_py(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "config.py", 0644);
	const struct strategy *s = x->s;
	const char *flavor = NULL, *name = trainer_titan_model(x->m, &flavor);
	/* tokens of one forward per DP rank: the whole local batch under PP
	   (split into num_pp_microbatches), else one micro-batch */
	long local = (long)s->mbs * (s->pp > 1 ? s->micro_batches : 1) * s->seq;

	emit_header(b, x, "torchtitan main Python job config, run by run.sh");
	emit_printf(b, "#\n"
		       "# For torchtitan main (2026-08): a Python config, batch sizes in tokens,\n"
		       "# num_pp_microbatches, no expert tensor parallelism. ampplan's trainer notes\n"
		       "# (TRAINERS.md) document v0.2.2; the other section and field names here are\n"
		       "# v0.2.2's, assumed unchanged: check them against your checkout (--emit\n"
		       "# torchtitan writes v0.2.2's train.toml). Dataset, tokenizer, optimizer and\n"
		       "# steps keep torchtitan's defaults: add them to the dict.\n"
		       "\"\"\"ampplan's plan as a torchtitan job config.\"\"\"\n\n\n"
		       "def ampplan_job_config():\n"
		       "    \"\"\"The plan's sections of torchtitan's job config, as a dict.\"\"\"\n"
		       "    return {\n"
		       "        \"job\": {\"description\": ");
	{
		struct emit_buf d = { 0 };

		emit_printf(&d, "ampplan: %s on %s", x->m->name ? x->m->name : "model",
			    x->c->name ? x->c->name : "cluster");
		emit_titan_string(b, d.s);
		free(d.s);
	}
	emit_printf(b, "},\n        \"model\": {\"name\": ");
	emit_titan_string(b, name);
	emit_printf(b, ", \"flavor\": ");
	emit_titan_string(b, flavor);
	emit_printf(b, "},\n");
	if (s->fp8)
		emit_printf(b, "        # FP8 GEMMs: torchao float8 training of the blocks' linear layers\n"
			       "        \"converters\": [\"quantize.linear.float8\"],\n");
	emit_printf(b, "        \"training\": {\n"
		       "            # in tokens: global batch %d x %d; one forward per DP rank of %s\n"
		       "            \"global_batch_size\": %ld,\n"
		       "            \"local_batch_size\": %ld,\n"
		       "            \"seq_len\": %d,\n"
		       "        },\n",
		    s->gbs, s->seq,
		    s->pp > 1 ? "the pipeline's micro-batches" : "one micro-batch (the rest accumulate)",
		    (long)s->gbs * s->seq, local, s->seq);
	emit_printf(b, "        \"parallelism\": {\n");
	if (s->zero >= 1)
		emit_printf(b, "            # zero %d: FSDP over the data-parallel ranks\n"
			       "            \"data_parallel_replicate_degree\": 1,\n"
			       "            \"data_parallel_shard_degree\": %d,\n",
			    s->zero, s->dp);
	else
		emit_printf(b, "            \"data_parallel_replicate_degree\": %d,\n"
			       "            \"data_parallel_shard_degree\": 1,\n",
			    s->dp);
	emit_printf(b, "            \"tensor_parallel_degree\": %d,\n", s->tp);
	if (s->tp_overlap && s->tp > 1)
		emit_printf(b, "            # TP comm overlap: async TP (needs torch.compile)\n"
			       "            \"enable_async_tensor_parallel\": True,\n");
	emit_printf(b, "            \"context_parallel_degree\": %d,\n", s->cp);
	if (s->cp > 1)
		emit_printf(b, "            \"context_parallel_rotate_method\": \"alltoall\",\n");
	emit_printf(b, "            \"pipeline_parallel_degree\": %d,\n", s->pp);
	if (s->pp > 1) {
		emit_printf(b, "            \"pipeline_parallel_schedule\": \"%s\",\n"
			       "            # micro-batches of %d sequences\n"
			       "            \"num_pp_microbatches\": %d,\n",
			    emit_titan_sched[s->schedule], s->mbs, s->micro_batches);
		emit_titan_fqns(b, x, "            \"module_fqns_per_model_part\": ", ",");
	}
	emit_printf(b, "            \"expert_parallel_degree\": %d,\n"
		       "        },\n"
		       "        \"activation_checkpoint\": {\"mode\": \"%s\"%s},\n",
		    s->ep, emit_titan_ac[s->recompute],
		    s->recompute == RECOMPUTE_SELECTIVE ? ", \"selective_ac_option\": \"op\"" : "");
	if (s->fp8)
		emit_printf(b, "        \"quantize\": {\"linear\": {\"float8\": {\"filter_fqns\": [\"output\"]}}},\n");
	emit_printf(b, "        \"compile\": {\"enable\": %s, \"components\": [\"model\", \"loss\"]},\n"
		       "    }\n\n\n"
		       "if __name__ == \"__main__\":\n"
		       "    import json\n\n"
		       "    print(json.dumps(ampplan_job_config(), indent=2))\n",
		    py_bool(emit_titan_compiled(s)));
}

static void run_sh(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "run.sh", 0755);

	emit_printf(b, "#!/usr/bin/env bash\n");
	emit_header(b, x, "torchtitan main launch of config.py; run it once on every node");
	emit_printf(b, "#\n"
		       "# Usage: NODE_RANK=<r> MASTER_ADDR=<host of node rank 0> [MASTER_PORT=29500] \\\n"
		       "#            ./run.sh [more arguments]\n"
		       "# The flag that hands torchtitan.train the Python config is assumed to be\n"
		       "# --config (TRAINERS.md documents v0.2.2 only): set CONFIG_FLAG to yours.\n"
		       "#\n"
		       "# Placement: torchtitan's mesh (pp, dp, cp, tp, outer to inner) puts pipeline\n"
		       "# rank p on global ranks [p*%d, (p+1)*%d); node rank r must run on a node of\n"
		       "# the group nodes.txt names for r (torchrun's static rendezvous):\n",
		    x->block, x->block);
	emit_node_runs(b, x);
	emit_node_env(b, x, "run.sh");
	emit_printf(b, "CONFIG_FLAG=${CONFIG_FLAG:---config}\n"
		       "here=$(cd \"$(dirname \"$0\")\" && pwd)\n\n"
		       "exec torchrun --nnodes \"$NNODES\" ");
	emit_nproc(b, x);
	emit_printf(b, " --node-rank \"$NODE_RANK\" \\\n"
		       "\t--master-addr \"$MASTER_ADDR\" --master-port \"$MASTER_PORT\" \\\n"
		       "\t-m torchtitan.train \"$CONFIG_FLAG\" \"$here/config.py\" \"$@\"\n");
}

void emit_titan_main(struct emit_ctx *x)
{
	config_py(x);
	run_sh(x);
}
