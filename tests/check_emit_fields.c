/* check_emit_fields.c: what the launch files set for the plan's kernels,
 * precision and overlaps and for its model (rotary, norms, biases, windows,
 * MoE, ...), and those choices in report.h's CSV, JSON and --explain. */
#define TESTUTIL_EMIT_FIXTURE
#include <cjson/cJSON.h>
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "model.h"
#include "plan.h"
#include "report.h"
#include "strategy.h"
#include "testutil.h"
#include "trainer.h"
#include "util.h"

/* ---- the plan's kernels, precision and overlaps in the launch files ---- */

/* DualPipeV (TRAINERS.md: torchtitan's pipeline_parallel_schedule takes
 * "DualPipeV"): the ZB-V plan (stages 0 and 3 on rank 0, 1 and 2 on rank
 * 1; 32 micro-batches >= 2 pp) under DualPipeV emits for torchtitan with
 * its name and the V comment, and the Megatron-based trainers refuse it;
 * with 3 micro-batches (< 2 pp = 4) torchtitan refuses it too. */
START_TEST(test_dualpipev_titan)
{
	struct fix f;
	struct err e = { "" };
	char *toml;

	fixture(&f, ZBV);
	f.s.schedule = SCHED_DUALPIPE_V;
	toml = emit_text("torchtitan", &f, "train.toml", true);
	ck_assert_ptr_nonnull(toml);
	ck_assert_ptr_nonnull(strstr(toml, "pipeline_parallel_schedule = \"DualPipeV\"\n"));
	ck_assert_ptr_nonnull(strstr(toml, "# DualPipeV: the model parts below in stage order"));
	free(toml);
	ck_assert_int_eq(trainer_check(TRAINER_MEGATRON, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_str_eq(e.msg, "megatron: schedule 'dualpipev' has no megatron flag or config (torchtitan runs it); plan with 1f1b or interleaved");
	f.s.gbs = 6;
	f.s.micro_batches = 3;
	ck_assert_int_eq(trainer_check(TRAINER_TORCHTITAN, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "schedule 'dualpipev' needs micro-batches (3) >= 2 x pp (4)"));
}
END_TEST

/* FP8 on the HETERO plan (ranks 0 and 1 on the H100s, which have FP8,
 * layers E+22 | 22; ranks 2 and 3 on the A100s, which have none, 20 |
 * 16+L): the A100s' stages hold the model's last 20 + 16 = 36 blocks, which
 * Megatron-LM keeps in BF16 by --first-last-layers-bf16 with 0 at the start
 * and 36 at the end, under tensorwise scaling (it refuses delayed scaling
 * with them); the other trainers are refused. With the A100s on ranks 1
 * and 2, BF16 blocks sit between FP8 ones: every trainer refuses it. */
START_TEST(test_fp8_per_stage)
{
	static const unsigned char g0110[] = { 0, 1, 1, 0 };
	struct fix f;
	struct err e = { "" };
	char *script, *args, **w;

	fixture(&f, HETERO);
	f.s.fp8 = true;
	ck_assert_msg(trainer_check(TRAINER_MEGATRON, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	script = emit_text("megatron", &f, "launch.sh", true);
	ck_assert_ptr_nonnull(script);
	args = between(script, "ARGS=(\n", "\n)\n");
	w = words(args);
	ck_assert(has_arg(w, "--fp8-format=hybrid"));
	ck_assert(has_arg(w, "--fp8-recipe=tensorwise"));
	ck_assert(has_arg(w, "--first-last-layers-bf16"));
	ck_assert(has_arg(w, "--num-layers-at-start-in-bf16=0"));
	ck_assert(has_arg(w, "--num-layers-at-end-in-bf16=36"));
	ck_assert_ptr_nonnull(strstr(script, "the first 0 and last 36 blocks, on the GPUs without FP8, in BF16"));
	words_free(w);
	free(args);
	free(script);
	for (int t = TRAINER_TORCHTITAN; t < TRAINER_COUNT; t++) {
		ck_assert_int_eq(trainer_check((enum trainer)t, &f.m, &f.c, &f.s, &e), -1);
		if (t != TRAINER_DEEPSPEED)
			ck_assert_msg(strstr(e.msg, "FP8 on some GPUs only: no setting keeps the blocks on the GPUs without FP8 in BF16"),
				      "%s", e.msg);
	}
	memcpy(f.s.group, g0110, sizeof g0110);
	ck_assert_int_eq(trainer_check(TRAINER_MEGATRON, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "megatron: FP8 blocks on both sides of a stage on GPUs without FP8"));
}
END_TEST

#define F(name) static void name(struct fix *f)
F(f_base)
{
	(void)f;
}
F(f_tp_overlap)
{
	f->s.tp_overlap = true;
}
F(f_tp_overlap_no_sp)
{
	f->s.tp_overlap = true;
	f->s.sp = false;
}
F(f_no_grad_overlap)
{
	f->s.grad_overlap = false;
}
F(f_param_overlap)
{
	f->s.param_overlap = true;
}
F(f_param_overlap_zero0)
{
	f->s.param_overlap = true;
	f->s.zero = 0;
}
F(f_param_overlap_alone)
{
	f->s.param_overlap = true;
	f->s.grad_overlap = false;
}
F(f_fp8)
{
	f->s.fp8 = true;
}
F(f_grad_bf16)
{
	f->s.grad_bytes = 2;
}
F(f_grad_unset)
{
	f->s.grad_bytes = 0;
}
F(f_unfused)
{
	f->s.attn = ATTN_UNFUSED;
}
F(f_fused_softmax)
{
	f->s.attn = ATTN_FUSED_SOFTMAX;
}
F(f_flash1)
{
	f->s.attn = ATTN_FLASH1;
}
F(f_unfused_norm)
{
	f->s.unfused_norm = true;
}
F(f_grad_acc_unfused)
{
	f->s.grad_acc_unfused = true;
}
static void moe8(struct fix *f)
{
	f->m.experts = 8;
	f->m.top_k = 2;
	f->m.moe_ffn = 14336;
}
F(f_moe_pad)
{
	moe8(f);
	f->s.moe_capacity = 1.25;
	f->s.moe_pad = true;
}
F(f_moe_pad_dropless)
{
	moe8(f);
	f->s.moe_pad = true;
}
F(f_ep_overlap)
{
	moe8(f);
	f->s.ep = 2;
	f->s.ep_overlap = true;
}
F(f_cp_hier)
{
	f->s.tp = 1;
	f->s.sp = false;
	f->s.cp = 8;
	f->s.dp = 1;
	f->s.micro_batches = f->s.gbs / f->s.mbs;
	f->s.cp_comm = CP_A2A_P2P;
	f->s.cp_a2a = 2;
}
F(f_defer_one)
{
	f->s.wgrad_defer = 1;
}
F(f_vocab_pad)
{
	f->m.vocab = 128257;
}

/* Megatron flags (TRAINERS.md, "overlap and precision"; Megatron-LM's
 * arguments.py) and NeMo / Megatron Bridge fields (the same names as
 * Megatron's config fields: ModelParallelConfig.tp_comm_overlap,
 * DistributedDataParallelConfig.overlap_grad_reduce, overlap_param_gather,
 * grad_reduce_in_fp32; TransformerConfig.fp8, fp8_recipe,
 * attention_backend, masked_softmax_fusion). "--flag=value": the word
 * after --flag is value. */
static const struct feature {
	const char *what;
	void (*mutate)(struct fix *f);
	bool refusable;		    /* the trainer rules may refuse it */
	const char *on[5], *off[6]; /* launch.sh ARGS */
	const char *nemo_on[5];	    /* overrides.txt lines */
	const char *nemo_off[2];    /* overrides.txt line prefixes */
	const char *note;	    /* a comment of launch.sh, or NULL */
} features[] = {
	{ "base", f_base, false, { "--use-distributed-optimizer", "--overlap-grad-reduce", "--attention-backend=flash", "--bf16" }, { "--tp-comm-overlap", "--overlap-param-gather", "--fp8-format", "--fp8-recipe", "--grad-reduce-in-bf16", "--no-masked-softmax-fusion" }, { "ddp.overlap_grad_reduce=true", "ddp.overlap_param_gather=false", "ddp.grad_reduce_in_fp32=true", "model.tp_comm_overlap=false", "model.attention_backend=flash" }, { "model.fp8", "model.masked_softmax_fusion" }, NULL },
	/* Megatron's --gradient-accumulation-fusion is on by default; NeMo's
	 * field TransformerConfig.gradient_accumulation_fusion */
	{ "unfused gradient accumulation", f_grad_acc_unfused, false, { "--no-gradient-accumulation-fusion" }, { NULL }, { "model.gradient_accumulation_fusion=false" }, { NULL }, NULL },
	{ "tp overlap", f_tp_overlap, false, { "--tp-comm-overlap", "--sequence-parallel" }, { NULL }, { "model.tp_comm_overlap=true", "model.sequence_parallel=true" }, { NULL }, NULL },
	{ "tp overlap without sp", f_tp_overlap_no_sp, true, { NULL }, { "--tp-comm-overlap", "--sequence-parallel" }, { "model.tp_comm_overlap=false" }, { NULL }, "needs tp > 1 and sequence parallelism" },
	{ "no grad overlap", f_no_grad_overlap, false, { NULL }, { "--overlap-grad-reduce", "--overlap-param-gather" }, { "ddp.overlap_grad_reduce=false" }, { NULL }, NULL },
	{ "param overlap", f_param_overlap, false, { "--overlap-param-gather", "--use-distributed-optimizer", "--overlap-grad-reduce" }, { NULL }, { "ddp.overlap_param_gather=true", "ddp.use_distributed_optimizer=true", "ddp.overlap_grad_reduce=true" }, { NULL }, NULL },
	{ "param overlap, zero 0", f_param_overlap_zero0, true, { "--overlap-grad-reduce" }, { "--overlap-param-gather", "--use-distributed-optimizer" }, { "ddp.overlap_param_gather=false" }, { NULL }, "needs the distributed optimizer" },
	{ "param overlap alone", f_param_overlap_alone, true, { "--use-distributed-optimizer" }, { "--overlap-param-gather", "--overlap-grad-reduce" }, { "ddp.overlap_param_gather=false" }, { NULL }, "needs --overlap-grad-reduce" },
	{ "fp8", f_fp8, false, { "--fp8-format=hybrid", "--fp8-recipe=delayed", "--bf16" }, { NULL }, { "model.fp8=hybrid", "model.fp8_recipe=delayed" }, { NULL }, NULL },
	{ "bf16 gradients", f_grad_bf16, false, { "--grad-reduce-in-bf16", "--bf16" }, { NULL }, { "ddp.grad_reduce_in_fp32=false" }, { NULL }, NULL },
	{ "gradient bytes unset", f_grad_unset, false, { NULL }, { "--grad-reduce-in-bf16" }, { "ddp.grad_reduce_in_fp32=true" }, { NULL }, NULL },
	{ "unfused attention", f_unfused, false, { "--attention-backend=unfused", "--no-masked-softmax-fusion" }, { NULL }, { "model.attention_backend=unfused", "model.masked_softmax_fusion=false" }, { NULL }, "NVTE_MASKED_SOFTMAX_FUSION=0" },
	{ "fused softmax", f_fused_softmax, false, { "--attention-backend=unfused" }, { "--no-masked-softmax-fusion" }, { "model.attention_backend=unfused" }, { "model.masked_softmax_fusion" }, "attention 'fused-softmax'" },
	{ "flash1", f_flash1, true, { "--attention-backend=flash" }, { NULL }, { "model.attention_backend=flash" }, { NULL }, "FlashAttention 1 cannot be chosen" },
	{ "unfused norms", f_unfused_norm, true, { NULL }, { NULL }, { NULL }, { NULL }, "norms 'unfused'" },
	/* MoE (TRAINERS.md "MoE"): padding to capacity only with a capacity
	 * factor (dropless has no capacity to pad to); the EP all-to-all
	 * overlap with --delay-wgrad-compute (emit_megatron.c, as issue 24's
	 * recipe runs it) */
	{ "moe pad", f_moe_pad, false, { "--moe-expert-capacity-factor=1.25", "--moe-pad-expert-input-to-capacity" }, { NULL }, { "model.moe_expert_capacity_factor=1.25", "model.moe_pad_expert_input_to_capacity=true" }, { NULL }, NULL },
	{ "moe pad, dropless", f_moe_pad_dropless, false, { NULL }, { "--moe-pad-expert-input-to-capacity", "--moe-expert-capacity-factor" }, { "model.moe_expert_capacity_factor=null" }, { "model.moe_pad_expert_input_to_capacity" }, NULL },
	{ "ep overlap", f_ep_overlap, false, { "--expert-model-parallel-size=2", "--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute" }, { NULL }, { "model.overlap_moe_expert_parallel_comm=true", "model.delay_wgrad_compute=true" }, { NULL }, NULL },
	/* a2a+p2p: --hierarchical-context-parallel-sizes (TRAINERS.md), its
	 * first level the adjacent GPUs, the all-to-all's, then the p2p ring's
	 * (Megatron-LM's help for the flag) */
	{ "cp a2a+p2p", f_cp_hier, false, { "--context-parallel-size=8", "--cp-comm-type=a2a+p2p", "--hierarchical-context-parallel-sizes=2" }, { NULL }, { "model.context_parallel_size=8", "model.cp_comm_type=a2a+p2p", "model.hierarchical_context_parallel_sizes=[2,4]" }, { NULL }, NULL },
	{ "defer one micro-batch", f_defer_one, false, { "--defer-embedding-wgrad-compute", "--wgrad-deferral-limit=1" }, { NULL }, { "model.defer_embedding_wgrad_compute=true", "model.wgrad_deferral_limit=1" }, { NULL }, NULL },
	{ "vocabulary not divided by tp", f_vocab_pad, false, { NULL }, { NULL }, { NULL }, { NULL }, "tp 2 does not divide it (128257), so Megatron pads it to 128258" },
};

/* Each choice of the plan sets exactly its Megatron flags and NeMo fields,
 * and only those; what they cannot set is said in a comment. */
START_TEST(test_feature_megatron)
{
	const struct feature *ft = &features[_i];
	struct fix f;

	fixture(&f, HOMO);
	ft->mutate(&f);
	char *script = emit_text("megatron", &f, "launch.sh", ft->refusable);

	if (!script)
		return;
	char *args = between(script, "ARGS=(\n", "\n)\n");
	char **w = words(args);

	for (int i = 0; i < 5 && ft->on[i]; i++)
		ck_assert_msg(has_arg(w, ft->on[i]), "%s: no %s", ft->what, ft->on[i]);
	for (int i = 0; i < 6 && ft->off[i]; i++)
		ck_assert_msg(!has(w, ft->off[i]), "%s: %s", ft->what, ft->off[i]);
	if (ft->note)
		ck_assert_msg(strstr(script, ft->note), "%s: no comment '%s'", ft->what, ft->note);
	ck_assert_int_eq(has_line(script, "export NVTE_MASKED_SOFTMAX_FUSION=0"),
			 f.s.attn == ATTN_UNFUSED);
	words_free(w);
	free(args);
	free(script);

	char *ov = emit_text("nemo", &f, "overrides.txt", ft->refusable);

	if (!ov)
		return;
	for (int i = 0; i < 5 && ft->nemo_on[i]; i++)
		ck_assert_msg(has_line(ov, ft->nemo_on[i]), "%s: no line %s", ft->what, ft->nemo_on[i]);
	for (int i = 0; i < 2 && ft->nemo_off[i]; i++) {
		char pre[64];

		snprintf(pre, sizeof pre, "\n%s=", ft->nemo_off[i]);
		ck_assert_msg(!strstr(ov, pre), "%s: %s", ft->what, ft->nemo_off[i]);
	}
	free(ov);
}
END_TEST

/* The header of every file states what the plan costed. */
START_TEST(test_feature_header)
{
	struct fix f;

	fixture(&f, OVERLAP_FP8);
	f.s.attn = ATTN_FUSED_SOFTMAX;
	f.s.grad_overlap = false;
	f.s.grad_acc_unfused = true;
	for (int fm = 0; fm < EMIT_COUNT; fm++) {
		const char *format = emit_format_name(fm);
		struct err e = { "" };

		if (trainer_check(format_trainer[fm], &f.m, &f.c, &f.s, &e))
			continue;
		char *text = emit_text(format, &f, "nodes.txt", false);

		ck_assert_msg(strstr(text, "\n# the plan costed: attention fused-softmax, norms fused, "
					   "FP8 GEMMs on,\n"
					   "#   gradients bf16 accumulated in a pass of their own,\n"
					   "#   overlapped: TP comm yes, gradient reduction no, parameter gather yes\n"),
			      "%s: %s", format, text);
		free(text);
	}
}
END_TEST

/* torchtitan v0.2.2: async TP (TRAINERS.md) under torch.compile, FP8
 * through the float8 model converter; FSDP overlaps by itself. */
static char *toml_value(const char *text, const char *section, const char *key)
{
	char head[64];
	const char *p;
	size_t n = strlen(key);

	snprintf(head, sizeof head, "\n[%s]\n", section);
	if (!(p = strstr(text, head)))
		return NULL;
	for (p += strlen(head); *p && *p != '['; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0))
		if (strncmp(p, key, n) == 0 && strncmp(p + n, " = ", 3) == 0) {
			size_t len = strcspn(p + n + 3, "\n");
			char *v = xmalloc(len + 1);

			memcpy(v, p + n + 3, len);
			v[len] = '\0';
			return v;
		}
	return NULL;
}

static void want_toml(const char *text, const char *section, const char *key, const char *want)
{
	char *v = toml_value(text, section, key);

	if (!want)
		ck_assert_msg(!v, "[%s] %s = %s", section, key, v);
	else
		ck_assert_msg(v && strcmp(v, want) == 0, "[%s] %s = %s, want %s", section, key,
			      v ? v : "(none)", want);
	free(v);
}

START_TEST(test_feature_titan)
{
	struct fix f;
	char *t;

	fixture(&f, HOMO); /* tp 2, FSDP over dp 4, fused norms */
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "parallelism", "enable_async_tensor_parallel", NULL);
	want_toml(t, "model", "converters", NULL);
	ck_assert_ptr_null(strstr(t, "[quantize"));
	want_toml(t, "compile", "enable", "true");
	free(t);

	f.s.tp_overlap = true;
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "parallelism", "enable_async_tensor_parallel", "true");
	want_toml(t, "compile", "enable", "true");
	want_toml(t, "compile", "components", "[\"model\", \"loss\"]");
	free(t);

	f.s.tp_overlap = false;
	f.s.fp8 = true;
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "converters", "[\"quantize.linear.float8\"]");
	want_toml(t, "quantize.linear.float8", "filter_fqns", "[\"output\"]");
	want_toml(t, "compile", "enable", "true");
	free(t);

	/* async TP only with TP: a plan of TP 1 that asks for the overlap
	 * gets none (torchtitan's async TP needs a TP mesh) */
	f.s.tp = 1;
	f.s.sp = false;
	f.s.dp = 8;
	f.s.micro_batches = f.s.gbs / (f.s.mbs * f.s.dp);
	f.s.tp_overlap = true;
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "parallelism", "enable_async_tensor_parallel", NULL);
	free(t);
	fixture(&f, HOMO);

	/* Unfused norms and nothing that needs torch.compile: eager. */
	f.s.fp8 = false;
	f.s.unfused_norm = true;
	if ((t = emit_text("torchtitan", &f, "train.toml", true))) {
		ck_assert_ptr_null(strstr(t, "[compile]"));
		free(t);
	}

	/* What torchtitan cannot set is said. */
	fixture(&f, HOMO);
	f.s.grad_bytes = 2;
	f.s.attn = ATTN_UNFUSED;
	f.s.grad_overlap = false;
	if ((t = emit_text("torchtitan", &f, "train.toml", true))) {
		ck_assert_ptr_nonnull(strstr(t, "mixed_precision_reduce"));
		ck_assert_ptr_nonnull(strstr(t, "# - attention 'unfused': no setting here"));
		ck_assert_ptr_nonnull(strstr(t, "FSDP overlaps"));
		free(t);
	}
}
END_TEST

/* torchtitan's model, batch and parallel fields on the plans, by hand:
 * - MOE: Qwen3-30B-A3B is qwen3's flavor 30B-A3B; pp 2, so one forward per
 *   DP rank takes all 256 / (1 x 4) = 64 micro-batches of 1: local 64;
 *   experts over ep 4 and, as the plan splits them, tp 2.
 * - LONG: no pipeline, so local = mbs = 1 and 16 / (1 x 1) = 16 forwards
 *   accumulate; CP 4 passes K/V shards round the ring ("alltoall").
 * - ZERO3: FSDP over 16, local 2, 512 / (2 x 16) = 16 forwards accumulate. */
START_TEST(test_titan_fidelity)
{
	struct fix f;
	char *t;

	fixture(&f, MOE);
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "name", "\"qwen3\"");
	want_toml(t, "model", "flavor", "\"30B-A3B\"");
	want_toml(t, "training", "local_batch_size", "64");
	want_toml(t, "training", "global_batch_size", "256");
	want_toml(t, "parallelism", "pipeline_parallel_microbatch_size", "1");
	want_toml(t, "parallelism", "expert_parallel_degree", "4");
	want_toml(t, "parallelism", "expert_tensor_parallel_degree", "2");
	want_toml(t, "parallelism", "context_parallel_rotate_method", NULL);
	free(t);

	fixture(&f, LONG);
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "name", "\"llama3\"");
	want_toml(t, "model", "flavor", "\"70B\"");
	want_toml(t, "training", "local_batch_size", "1");
	want_toml(t, "training", "global_batch_size", "16");
	want_toml(t, "training", "seq_len", "131072");
	want_toml(t, "parallelism", "context_parallel_degree", "4");
	want_toml(t, "parallelism", "context_parallel_rotate_method", "\"alltoall\"");
	want_toml(t, "parallelism", "pipeline_parallel_microbatch_size", NULL);
	want_toml(t, "parallelism", "expert_tensor_parallel_degree", NULL);
	want_toml(t, "activation_checkpoint", "mode", "\"full\"");
	free(t);

	fixture(&f, ZERO3);
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "flavor", "\"8B\"");
	want_toml(t, "training", "local_batch_size", "2");
	want_toml(t, "training", "global_batch_size", "512");
	want_toml(t, "parallelism", "data_parallel_shard_degree", "16");
	want_toml(t, "parallelism", "data_parallel_replicate_degree", "1");
	free(t);
}
END_TEST

/* DeepSpeed: zero_optimization.overlap_comm is the gradient-reduction
 * overlap under ZeRO; what the JSON cannot set is said in launch.sh. */
START_TEST(test_feature_deepspeed)
{
	struct fix f;
	char *t;
	cJSON *doc, *zero;

	fixture(&f, HOMO); /* zero 1, grad_overlap */
	for (int on = 1; on >= 0; on--) {
		f.s.grad_overlap = on;
		t = emit_text("deepspeed", &f, "ds_config.json", false);
		doc = cJSON_Parse(t);
		zero = cJSON_GetObjectItemCaseSensitive(doc, "zero_optimization");
		ck_assert(on ? cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(zero, "overlap_comm"))
			     : cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(zero, "overlap_comm")));
		cJSON_Delete(doc);
		free(t);
	}

	f.s.zero = 0;
	f.s.grad_overlap = true;
	if ((t = emit_text("deepspeed", &f, "ds_config.json", true))) {
		doc = cJSON_Parse(t);
		zero = cJSON_GetObjectItemCaseSensitive(doc, "zero_optimization");
		ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(zero, "overlap_comm"));
		cJSON_Delete(doc);
		free(t);
		t = emit_text("deepspeed", &f, "launch.sh", false);
		ck_assert_ptr_nonnull(strstr(t, "only ZeRO's overlap_comm"));
		free(t);
	}

	fixture(&f, HOMO);
	f.s.fp8 = true;
	if ((t = emit_text("deepspeed", &f, "launch.sh", true))) {
		ck_assert_ptr_nonnull(strstr(t, "ds_config.json has no FP8 switch"));
		free(t);
	}

	/* PipelineModule's partition_method='uniform' only where it gives the
	 * plan's bounds: 34 layers on 2 stages, 17 | 17 yes, 16 | 18 no */
	fixture(&f, HOMO);
	t = emit_text("deepspeed", &f, "launch.sh", false);
	ck_assert_ptr_nonnull(strstr(t, "parts=[0, 17, 34], which partition_method='uniform' gives."));
	free(t);
	f.s.first[1] = 16;
	t = emit_text("deepspeed", &f, "launch.sh", false);
	ck_assert_ptr_null(strstr(t, "partition_method='uniform' gives"));
	ck_assert_ptr_nonnull(strstr(t, "parts=[0, 16, 34]. PipelineModule takes a partition_method"));
	free(t);

	/* MoE at capacity factor 1 drops tokens (DeepSpeed's MoE layer) */
	fixture(&f, HOMO);
	f.m.experts = 8;
	f.m.top_k = 2;
	f.m.moe_ffn = 14336;
	f.s.moe_capacity = 1;
	t = emit_text("deepspeed", &f, "launch.sh", false);
	ck_assert_ptr_nonnull(strstr(t, "capacity_factor=1, drop_tokens=True,"));
	free(t);
}
END_TEST

/* ---- the model the launch files build ---- */

/* Per plan, the Megatron flags that make the model the plan costed and
 * their NeMo / Megatron Bridge fields (TRAINERS.md "Fields the launch files
 * must carry"), worked out by hand from the fixtures:
 * - vocabulary: Megatron pads V to ceil(V / (d * tp)) * d * tp, so d is the
 *   largest d <= 128 with d * tp dividing V. Llama 3: V = 128256 = 2^8 * 3 *
 *   167; tp 2: V / 2 = 2^7 * 3 * 167, d = 128; tp 4: 2^6 * 3 * 167, d = 96
 *   (2^5 * 3; 128 = 2^7 does not divide); tp 8: 2^5 * 3 * 167, d = 96.
 *   Qwen3: V = 151936 = 2^7 * 1187 (1187 prime); tp 2: 2^6 * 1187, d = 64.
 * - rotary base and norm epsilon: the configs' rope_theta and rms_norm_eps
 *   (Llama 3: 500000, 1e-5; Qwen3-30B-A3B: 1000000, 1e-6); Llama 3.1's
 *   rope scaling: factor 8 with low 1, high 4, original 8192, which
 *   --use-rope-scaling fixes. */
static const struct fidelity {
	int cs;
	const char *on[14]; /* launch.sh ARGS: "--flag" or "--flag=value" */
	const char *off[6];
	const char *nemo[12]; /* overrides.txt lines */
} fidelity[] = {
	{ HOMO,
	  { "--rotary-base=500000", "--norm-epsilon=1e-05", "--make-vocab-size-divisible-by=128",
	    "--attention-dropout=0", "--hidden-dropout=0", "--normalization=RMSNorm",
	    "--position-embedding-type=rope", "--disable-bias-linear", "--swiglu",
	    "--untie-embeddings-and-output-weights", "--num-query-groups=8" },
	  { "--use-rope-scaling", "--add-qkv-bias", "--qk-layernorm", "--window-size", "--num-experts" },
	  { "model.rotary_base=500000", "model.layernorm_epsilon=1e-05",
	    "model.make_vocab_size_divisible_by=128", "model.attention_dropout=0.0",
	    "model.hidden_dropout=0.0", "model.add_bias_linear=false", "model.add_qkv_bias=false",
	    "model.qk_layernorm=false", "model.share_embeddings_and_output_weights=false",
	    "model.gated_linear_unit=true" } },
	{ HETERO,
	  { "--rotary-base=500000", "--norm-epsilon=1e-05", "--make-vocab-size-divisible-by=96",
	    "--attention-dropout=0", "--hidden-dropout=0" },
	  { "--use-rope-scaling" },
	  { "model.make_vocab_size_divisible_by=96", "model.num_query_groups=8" } },
	{ MOE,
	  { "--rotary-base=1000000", "--norm-epsilon=1e-06", "--make-vocab-size-divisible-by=64",
	    "--qk-layernorm", "--num-experts=128", "--moe-router-topk=8",
	    "--moe-ffn-hidden-size=768", "--expert-model-parallel-size=4", "--expert-tensor-parallel-size=2",
	    "--moe-token-dispatcher-type=alltoall", "--moe-router-load-balancing-type=aux_loss",
	    "--num-query-groups=4", "--kv-channels=128" },
	  { "--moe-layer-freq", "--moe-shared-expert-intermediate-size", "--moe-expert-capacity-factor",
	    "--add-qkv-bias", "--use-rope-scaling" },
	  { "model.num_moe_experts=128", "model.moe_router_topk=8", "model.moe_ffn_hidden_size=768",
	    "model.moe_token_dispatcher_type=alltoall", "model.moe_router_load_balancing_type=aux_loss",
	    "model.moe_expert_capacity_factor=null", "model.expert_model_parallel_size=4",
	    "model.qk_layernorm=true", "model.rotary_base=1000000",
	    "model.make_vocab_size_divisible_by=64", "model.expert_tensor_parallel_size=2" } },
	{ LONG,
	  { "--rotary-base=500000", "--use-rope-scaling", "--rope-scaling-factor=8",
	    "--make-vocab-size-divisible-by=96", "--context-parallel-size=4",
	    "--seq-length=131072", "--max-position-embeddings=131072",
	    "--recompute-granularity=full", "--hidden-dropout=0", "--cp-comm-type=p2p" },
	  { "--rotary-scaling-factor" },
	  { "model.rope_scaling=true", "model.rope_scaling_factor=8", "model.context_parallel_size=4",
	    "model.seq_length=131072", "model.make_vocab_size_divisible_by=96", "model.cp_comm_type=p2p" } },
};

START_TEST(test_fidelity)
{
	const struct fidelity *fd = &fidelity[_i];
	struct fix f;

	fixture(&f, fd->cs);
	char *script = emit_text("megatron", &f, "launch.sh", false);
	char *args = between(script, "ARGS=(\n", "\n)\n");
	char **w = words(args);

	for (int i = 0; i < 14 && fd->on[i]; i++)
		ck_assert_msg(has_arg(w, fd->on[i]), "%s: no %s", case_names[fd->cs], fd->on[i]);
	for (int i = 0; i < 6 && fd->off[i]; i++)
		ck_assert_msg(!has(w, fd->off[i]), "%s: %s", case_names[fd->cs], fd->off[i]);
	words_free(w);
	free(args);
	free(script);

	char *ov = emit_text("nemo", &f, "overrides.txt", false);

	for (int i = 0; i < 12 && fd->nemo[i]; i++)
		ck_assert_msg(has_line(ov, fd->nemo[i]), "%s: no line %s", case_names[fd->cs], fd->nemo[i]);
	free(ov);
}
END_TEST

/* Every file starts with what the plan assumed of the model, the layout
 * and the kernels; the long-context plan's values by hand: Llama 3.1's
 * config, one stage of 80 blocks with the embedding and the head. */
START_TEST(test_fidelity_header)
{
	struct fix f;

	fixture(&f, LONG);
	for (int fm = 0; fm < EMIT_COUNT; fm++) {
		if (golden_refusal(LONG, fm))
			continue;
		char *text = emit_text(emit_format_name(fm), &f, "nodes.txt", false);

		ck_assert_msg(strstr(text, "\n# layers/stage E+80+L on node groups h100 (pipeline ranks 0 to 0)\n"
					   "# the model as costed (the trainer must build the same):\n"
					   "#   norm RMSNorm, eps 1e-05\n"
					   "#   positions rotary, base 500000, scaling llama3 x8 (low 1, high 4, original 8192)\n"
					   "#   dropout 0 (attention and hidden)\n"
					   "#   biases none, q/k norm no\n"
					   "#   attention 64 heads, 8 kv heads\n"
					   "#   MLP SwiGLU, embeddings untied, vocabulary 128256 unpadded\n"
					   "# the plan costed: attention flash,"),
			      "%s: %s", emit_format_name(fm), text);
		free(text);
	}
	fixture(&f, MOE);
	char *text = emit_text("deepspeed", &f, "launch.sh", false);

	ck_assert_ptr_nonnull(strstr(text, "#   MoE: 128 experts, top 8, ffn 768, on 48 of 48 layers; dropless"));
	/* ep 4, mbs 1, seq 4096, top 8: the busiest rank at 1 + z sqrt((3/4)
	 * / 32768), z = Phi^-1(3.625 / 4.25) = 1.04913 (Blom; Python's
	 * NormalDist), 1.00502 */
	ck_assert_ptr_nonnull(strstr(text, "all-to-all token dispatch, aux_loss balancing,\n"
					   "#   the busiest EP rank at 1.005 x the mean load\n"));
	ck_assert_ptr_nonnull(strstr(text, "MoE(num_experts=128, ep_size=4, k=8,\n#   drop_tokens=False, enable_expert_tensor_parallelism=True)"));
	free(text);
}
END_TEST

/* Sliding-window attention on every layer (Mistral 7B v0.1: 4096 tokens):
 * flash attention's window (W - 1, 0), the token and its 4095
 * predecessors. */
START_TEST(test_fidelity_window)
{
	struct fix f;

	fixture(&f, HOMO);
	f.m.sliding_window = 4096;
	f.m.sliding_every = 1;
	f.m.qkv_bias = true;
	char *script = emit_text("megatron", &f, "launch.sh", false);
	char **w = words(strstr(script, "ARGS=(\n"));

	ck_assert(has_arg(w, "--window-size=4095,0"));
	ck_assert(has(w, "--swiglu"));
	ck_assert(!has(w, "--squared-relu"));
	ck_assert(has(w, "--add-qkv-bias"));
	ck_assert(has(w, "--disable-bias-linear"));
	words_free(w);
	free(script);
	char *ov = emit_text("nemo", &f, "overrides.txt", false);

	ck_assert(has_line(ov, "model.window_size=[4095,0]"));
	ck_assert(has_line(ov, "model.add_qkv_bias=true"));
	free(ov);

	/* Nemotron-4's squared ReLU MLP: --squared-relu, no --swiglu */
	f.m.ffn_kind = FFN_RELU2;
	script = emit_text("megatron", &f, "launch.sh", false);
	w = words(strstr(script, "ARGS=(\n"));
	ck_assert(has(w, "--squared-relu"));
	ck_assert(!has(w, "--swiglu"));
	words_free(w);
	free(script);
}
END_TEST

/* ---- the ranking as CSV, JSON and --explain (report.h) ---- */

/* The columns of the CSV before cost model v2, in order (README "CSV
 * columns"): they keep their places. */
static const char *const v1_columns[] = {
	"rank",
	"fits",
	"tp",
	"pp",
	"dp",
	"cp",
	"ep",
	"sp",
	"micro_batch_seqs",
	"micro_batches",
	"global_batch_seqs",
	"seq_tokens",
	"schedule",
	"virtual_stages",
	"recompute",
	"zero_stage",
	"layers_per_stage",
	"groups_per_rank",
	"gpu_types_per_rank",
	"iteration_s",
	"tokens_per_s",
	"mfu_pct",
	"peak_mem_GiB",
	"compute_s",
	"recompute_s",
	"bubble_s",
	"tp_comm_s",
	"cp_comm_s",
	"pp_comm_s",
	"dp_comm_s",
	"ep_comm_s",
	"optimizer_s",
	"weights_GiB",
	"grads_GiB",
	"optimizer_GiB",
	"activations_GiB",
	"logits_GiB",
	"allowance_GiB",
	"reason",
};
/* Added since, after them. */
static const char *const v2_columns[] = {
	"attention",
	"norm",
	"fp8",
	"tp_comm_overlap",
	"overlap_grad_reduce",
	"overlap_param_gather",
	"grad_dtype",
	"tp_comm_hidden_s",
	"cp_comm_hidden_s",
	"dp_comm_hidden_s",
	"grad_acc_fusion",
	/* then the fullest and slowest pipeline ranks, the price, the trainers */
	"fullest_rank",
	"fullest_gpu",
	"fullest_mem_GiB",
	"fullest_capacity_GiB",
	"slowest_rank",
	"slowest_fwd_ms",
	"slowest_bwd_ms",
	"slowest_p2p_ms",
	"bubble_pct",
	"gpus_used",
	"cost_per_iteration_usd",
	"cost_per_million_tokens_usd",
	"trainers",
	"cp_comm_type",
	"cp_a2a_size",
	"moe_balance",
	"moe_capacity_factor",
	"moe_load_factor",
	"etp",
	"vocab_parallel",
	"vocab_comm_s",
	"slimpipe_slices",
	"ep_comm_hidden_s",
	"uneven_batches",
	"params_total",
	"params_active",
	"mfu_peak",
	"megatron_iteration_s",
	"torchtitan_iteration_s",
	"deepspeed_iteration_s",
	"nemo_iteration_s",
	"groups_idle",
	"optim_dtype",
	"ep_overlap",
	"moe_grouped_gemm",
	"recompute_modules",
	"moe_pad_capacity",
	"moe_dispatcher",
	"deferred_wgrad_micro_batches",
	"recompute_by_module",
	"offload_modules",
	"offload_copy_s",
	"offload_copy_hidden_s",
	"offloaded_GiB",
	"tied_allreduce_s",
};
#define N_V1 (int)(sizeof v1_columns / sizeof *v1_columns)
#define N_V2 (int)(sizeof v2_columns / sizeof *v2_columns)

/* A ranking of two rows of the homogeneous plan (into p, zeroed; caller
 * frees with plan_free): row 0 with the v2
 * choices set (unfused attention and norms, FP8, TP and parameter-gather
 * overlap, bf16 gradients accumulated in a pass of their own) and hidden communication 0.5, 0.25, 1.5 s; row
 * 1 the plain plan, not fitting, with a reason holding a comma. */
static void ranking(struct fix *f, struct plan *p, struct plan_row *rows)
{
	fixture(f, HOMO);
	model_derive_layers(&f->m); /* the JSON's stages are costed (caller frees layer) */
	memset(rows, 0, 2 * sizeof *rows);
	rows[0].s = f->s;
	rows[0].s.attn = ATTN_UNFUSED;
	rows[0].s.unfused_norm = rows[0].s.fp8 = rows[0].s.tp_overlap = true;
	rows[0].s.param_overlap = true;
	rows[0].s.grad_overlap = false;
	rows[0].s.grad_bytes = 2;
	rows[0].s.grad_acc_unfused = true;
	rows[0].trainers = 1u << TRAINER_MEGATRON | 1u << TRAINER_NEMO;
	rows[0].trainer_s[TRAINER_MEGATRON] = rows[0].trainer_s[TRAINER_NEMO] = 10;
	rows[0].trainer_s[TRAINER_TORCHTITAN] = 12.25; /* slower; DeepSpeed: cannot */
	rows[0].r = (struct cost_result){ .iter_s = 10, .tokens_per_s = 419430.4, .fits = true, .peak_bytes = 60.0 * 1024 * 1024 * 1024 };
	rows[0].r.time = (struct cost_time){ .compute = 9, .tp = 1, .tp_hidden = 0.5, .cp_hidden = 0.25, .dp_hidden = 1.5 };
	rows[1].s = f->s;
	rows[1].r.iter_s = 12;
	snprintf(rows[1].why, sizeof rows[1].why, "does not fit, as a test");
	plan_row_add(p, &rows[0]);
	plan_row_add(p, &rows[1]);
	p->n_feasible = 1;
}

/* libcsv: every field of every record. */
struct table {
	char *cell[3][96];
	int rows, fields;
};

static void t_field(void *s, size_t n, void *data)
{
	struct table *t = data;

	ck_assert_int_lt(t->rows, 3);
	ck_assert_int_lt(t->fields, 96);
	t->cell[t->rows][t->fields] = xmalloc(n + 1);
	memcpy(t->cell[t->rows][t->fields], s, n);
	t->cell[t->rows][t->fields++][n] = '\0';
}

static void t_row(int c, void *data)
{
	struct table *t = data;

	(void)c;
	ck_assert_int_eq(t->fields, N_V1 + N_V2);
	t->rows++;
	t->fields = 0;
}

/* The cell of row r under the column named name. */
static const char *cell(const struct table *t, int r, const char *name)
{
	for (int i = 0; i < N_V1 + N_V2; i++)
		if (strcmp(t->cell[0][i], name) == 0)
			return t->cell[r][i];
	ck_abort_msg("no column '%s'", name);
	return NULL;
}

/* The CSV report_csv writes for p (f's model and cluster), parsed into t
 * (header and 2 rows); the file is removed. Free t with table_free. */
static void csv_table(struct table *t, struct plan *p, const struct fix *f)
{
	char *dir = tmpdir(), *path = path2(dir, "plans.csv"), *text;
	struct csv_parser cp;
	struct err e = { "" };

	memset(t, 0, sizeof *t);
	ck_assert_msg(report_csv(path, p, &f->m, &f->c, &e) == 0, "%s", e.msg);
	text = read_file(path);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL), 0);
	ck_assert_uint_eq(csv_parse(&cp, text, strlen(text), t_field, t_row, t), strlen(text));
	csv_fini(&cp, t_field, t_row, t);
	csv_free(&cp);
	ck_assert_int_eq(t->rows, 3);
	free(text);
	free(path);
	rm_tree(dir);
	free(dir);
}

static void table_free(struct table *t)
{
	for (int r = 0; r < t->rows; r++)
		for (int i = 0; i < N_V1 + N_V2; i++)
			free(t->cell[r][i]);
}

START_TEST(test_report_csv)
{
	struct fix f;
	struct plan *p = xcalloc(1, sizeof *p);
	struct plan_row rows[2];
	struct table t;

	ranking(&f, p, rows);
	csv_table(&t, p, &f);
	for (int i = 0; i < N_V1; i++)
		ck_assert_str_eq(t.cell[0][i], v1_columns[i]);
	for (int i = 0; i < N_V2; i++)
		ck_assert_str_eq(t.cell[0][N_V1 + i], v2_columns[i]);

	ck_assert_str_eq(cell(&t, 1, "attention"), "unfused");
	ck_assert_str_eq(cell(&t, 1, "norm"), "unfused");
	ck_assert_str_eq(cell(&t, 1, "fp8"), "1");
	ck_assert_str_eq(cell(&t, 1, "tp_comm_overlap"), "1");
	ck_assert_str_eq(cell(&t, 1, "overlap_grad_reduce"), "0");
	ck_assert_str_eq(cell(&t, 1, "overlap_param_gather"), "1");
	ck_assert_str_eq(cell(&t, 1, "grad_dtype"), "bf16");
	ck_assert_rel(strtod(cell(&t, 1, "tp_comm_hidden_s"), NULL), 0.5, 1e-12);
	ck_assert_rel(strtod(cell(&t, 1, "cp_comm_hidden_s"), NULL), 0.25, 1e-12);
	ck_assert_rel(strtod(cell(&t, 1, "dp_comm_hidden_s"), NULL), 1.5, 1e-12);
	ck_assert_str_eq(cell(&t, 1, "grad_acc_fusion"), "0");
	ck_assert_str_eq(cell(&t, 2, "grad_acc_fusion"), "1");
	ck_assert_str_eq(cell(&t, 1, "trainers"), "megatron,nemo");
	ck_assert_str_eq(cell(&t, 2, "trainers"), "none");
	ck_assert_str_eq(cell(&t, 1, "megatron_iteration_s"), "10");
	ck_assert_str_eq(cell(&t, 1, "torchtitan_iteration_s"), "12.25");
	ck_assert_str_eq(cell(&t, 1, "deepspeed_iteration_s"), "");
	ck_assert_str_eq(cell(&t, 1, "nemo_iteration_s"), "10");
	ck_assert_str_eq(cell(&t, 2, "megatron_iteration_s"), "");
	/* the hidden parts are not in iteration_s = compute + TP comm */
	ck_assert_rel(strtod(cell(&t, 1, "iteration_s"), NULL), 10, 1e-12);

	ck_assert_str_eq(cell(&t, 2, "reason"), "does not fit, as a test");
	ck_assert_str_eq(cell(&t, 2, "attention"), "flash");
	ck_assert_str_eq(cell(&t, 2, "norm"), "fused");
	ck_assert_str_eq(cell(&t, 2, "fp8"), "0");
	ck_assert_str_eq(cell(&t, 2, "tp_comm_overlap"), "0");
	ck_assert_str_eq(cell(&t, 2, "overlap_grad_reduce"), "1");
	ck_assert_str_eq(cell(&t, 2, "overlap_param_gather"), "0");
	ck_assert_str_eq(cell(&t, 2, "grad_dtype"), "fp32");
	ck_assert_rel(strtod(cell(&t, 2, "tp_comm_hidden_s"), NULL), 0, 1e-12);
	table_free(&t);
	plan_free(p);
	free(f.m.layer);
}
END_TEST

/* The columns that depend on the strategy's kind, on an MoE model of the
 * HOMO plan (one group, all of it used: none idle), two rows by hand:
 * - row 1: iteration 10 s of which 2.5 s bubble (bubble_pct 25); CP 2 over
 *   the ring (no all-to-all size, whatever cp_a2a holds); dropless (no
 *   capacity factor, no padding, whatever moe_pad holds); selective
 *   recomputation of core_attn alone, 0.5 s (the other modules' seconds
 *   not listed);
 * - row 2: CP 4 as a2a+p2p over 2 (size 2); capacity 1.25, padded; no
 *   recomputation (no modules). */
START_TEST(test_report_csv_kinds)
{
	struct fix f;
	struct plan *p = xcalloc(1, sizeof *p);
	struct plan_row rows[2];
	struct table t;

	fixture(&f, HOMO);
	f.m.experts = 8;
	f.m.top_k = 2;
	f.m.moe_ffn = 14336;
	model_derive_layers(&f.m);
	memset(rows, 0, sizeof rows);
	rows[0].s = rows[1].s = f.s;
	rows[0].s.cp = 2;
	rows[0].s.cp_comm = CP_P2P;
	rows[0].s.cp_a2a = 2;
	rows[0].s.moe_pad = true;
	rows[0].s.recompute = RECOMPUTE_SELECTIVE;
	rows[0].s.recompute_modules = RM_CORE_ATTN;
	rows[0].r = (struct cost_result){ .iter_s = 10, .fits = true };
	rows[0].r.time = (struct cost_time){ .compute = 7.5, .bubble = 2.5 };
	rows[0].r.time.recompute_mod[0] = 0.5;
	rows[0].r.time.recompute_mod[1] = 0.25;
	rows[1].s.cp = 4;
	rows[1].s.cp_comm = CP_A2A_P2P;
	rows[1].s.cp_a2a = 2;
	rows[1].s.moe_capacity = 1.25;
	rows[1].s.moe_pad = true;
	rows[1].s.recompute = RECOMPUTE_NONE;
	rows[1].r = (struct cost_result){ .iter_s = 12, .fits = true };
	plan_row_add(p, &rows[0]);
	plan_row_add(p, &rows[1]);
	p->n_feasible = 2;
	csv_table(&t, p, &f);
	ck_assert_rel(strtod(cell(&t, 1, "bubble_pct"), NULL), 25, 1e-12);
	ck_assert_str_eq(cell(&t, 1, "cp_comm_type"), "p2p");
	ck_assert_str_eq(cell(&t, 1, "cp_a2a_size"), "");
	ck_assert_str_eq(cell(&t, 1, "moe_capacity_factor"), "");
	ck_assert_str_eq(cell(&t, 1, "moe_pad_capacity"), "");
	ck_assert_str_eq(cell(&t, 1, "recompute_by_module"), "core_attn:0.5");
	ck_assert_str_eq(cell(&t, 1, "groups_idle"), "");
	ck_assert_str_eq(cell(&t, 2, "cp_a2a_size"), "2");
	ck_assert_str_eq(cell(&t, 2, "moe_capacity_factor"), "1.25");
	ck_assert_str_eq(cell(&t, 2, "moe_pad_capacity"), "1");
	ck_assert_str_eq(cell(&t, 2, "recompute_by_module"), "");
	table_free(&t);
	plan_free(p);
	free(f.m.layer);
}
END_TEST

/* The JSON has the same keys; the flags are booleans. */
START_TEST(test_report_json)
{
	struct fix f;
	struct plan *p = xcalloc(1, sizeof *p);
	struct plan_row rows[2];
	struct err e = { "" };
	char *dir = tmpdir(), *path = path2(dir, "plans.json"), *text;

	ranking(&f, p, rows);
	ck_assert_msg(report_json(path, p, &f.m, &f.c, &e) == 0, "%s", e.msg);
	text = read_file(path);
	cJSON *doc = cJSON_Parse(text), *a = cJSON_GetObjectItemCaseSensitive(doc, "strategies");

	ck_assert_int_eq(cJSON_GetArraySize(a), 2);
	for (int r = 0; r < 2; r++) {
		cJSON *o = cJSON_GetArrayItem(a, r);
		int n = 0;

		for (cJSON *k = o->child; k; k = k->next)
			n++;
		ck_assert_int_eq(n, N_V1 + N_V2 + 2); /* + "stages", "gap_pct" */
		for (int i = 0; i < N_V1 + N_V2; i++)
			ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, i < N_V1 ? v1_columns[i]
										   : v2_columns[i - N_V1]),
				      "no key");
	}
	cJSON *o = cJSON_GetArrayItem(a, 0), *o1 = cJSON_GetArrayItem(a, 1);

	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "torchtitan_iteration_s")->valuedouble, 12.25);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "deepspeed_iteration_s")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o1, "megatron_iteration_s")));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "attention")->valuestring, "unfused");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "trainers")->valuestring, "megatron,nemo");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "norm")->valuestring, "unfused");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "fp8")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "tp_comm_overlap")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "overlap_grad_reduce")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "overlap_param_gather")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o1, "overlap_grad_reduce")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o1, "fp8")));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "grad_dtype")->valuestring, "bf16");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o1, "grad_dtype")->valuestring, "fp32");
	ck_assert_rel(cJSON_GetObjectItemCaseSensitive(o, "tp_comm_hidden_s")->valuedouble, 0.5, 1e-12);
	ck_assert_rel(cJSON_GetObjectItemCaseSensitive(o, "cp_comm_hidden_s")->valuedouble, 0.25, 1e-12);
	ck_assert_rel(cJSON_GetObjectItemCaseSensitive(o, "dp_comm_hidden_s")->valuedouble, 1.5, 1e-12);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "grad_acc_fusion")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o1, "grad_acc_fusion")));
	/* fits and sp are booleans (issue 30; "yes"/"no" before) */
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "fits")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o1, "fits")));
	ck_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o, "sp")));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "mfu_peak")->valuestring, "bf16");
	cJSON_Delete(doc);
	free(text);
	free(path);
	rm_tree(dir);
	free(dir);
	plan_free(p);
	free(f.m.layer);
}
END_TEST

/* --explain: the hidden communication after the exposed parts, then the
 * kernels, precision and overlaps; the table marks FP8. */
START_TEST(test_report_explain)
{
	struct fix f;
	struct plan *p = xcalloc(1, sizeof *p);
	struct plan_row rows[2];
	char *text = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&text, &n);

	ranking(&f, p, rows);
	report_explain(out, &rows[0], &f.m, &f.c);
	fclose(out);
	const char *exposed = strstr(text, "\n    optimizer ");
	const char *hidden = strstr(text, "\n  communication hidden under compute (not in the iteration):\n"
					  "    TP comm          0.500 s  with the GEMMs\n"
					  "    CP comm          0.250 s  with attention (ring)\n"
					  "    DP comm          1.500 s  with the backward and forward passes\n");

	ck_assert_msg(exposed && hidden && exposed < hidden, "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\n  iteration 10.000 s, "));
	ck_assert_ptr_nonnull(strstr(text, "\n  kernels and precision: attention unfused, norms unfused, "
					   "FP8 GEMMs on, gradients bf16 (accumulated in a pass of their own)\n"
					   "  overlaps: TP comm on, gradient reduction off, parameter gather on\n"));
	free(text);

	text = NULL;
	out = open_memstream(&text, &n);
	report_table(out, p, &f.m, &f.c, 10);
	fclose(out);
	ck_assert_ptr_nonnull(strstr(text, " ZeRO FP8 layers/stage "));
	ck_assert_ptr_nonnull(strstr(text, "    1 yes E+16|16+L "));
	free(text);
	plan_free(p);
	free(f.m.layer);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("emit_fields");
	TCase *tc = tcase_create("emit_fields");

	tcase_add_loop_test(tc, test_feature_megatron, 0, (int)(sizeof features / sizeof *features));
	tcase_add_test(tc, test_feature_header);
	tcase_add_loop_test(tc, test_fidelity, 0, (int)(sizeof fidelity / sizeof *fidelity));
	tcase_add_test(tc, test_fidelity_header);
	tcase_add_test(tc, test_fidelity_window);
	tcase_add_test(tc, test_feature_titan);
	tcase_add_test(tc, test_titan_fidelity);
	tcase_add_test(tc, test_feature_deepspeed);
	tcase_add_test(tc, test_report_csv);
	tcase_add_test(tc, test_report_csv_kinds);
	tcase_add_test(tc, test_dualpipev_titan);
	tcase_add_test(tc, test_fp8_per_stage);
	tcase_add_test(tc, test_report_json);
	tcase_add_test(tc, test_report_explain);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
