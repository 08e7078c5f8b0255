/* check_trainer.c: the trainer rules (trainer.h): one refusal per rule and
 * the plans the rules must accept, the plans each trainer runs, names, node
 * layouts, and the Hugging Face configs of tests/data/hf through Megatron's
 * and torchtitan's rules and flags. */
#define TESTUTIL_EMIT_FIXTURE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "emit.h"
#include "model.h"
#include "profile.h"
#include "strategy.h"
#include "testutil.h"
#include "plan.h"
#include "trainer.h"
#include "trainer_time.h"
#include "util.h"

/* The Hugging Face configs of tests/data/hf (copies of
 * shared/reference/hf-configs), imported and planned tp1 pp1 dp8 on one node
 * of 8 H100. Megatron-LM refuses, by hand from the configs: GPT-J and Falcon
 * (parallel attention and MLP), Gemma 2 (a norm before and after attention
 * and MLP: 4 per block), Phi-3.5 (rope_scaling type longrope), Llama 4 Scout
 * (llama3 rope scaling with high_freq_factor 1, where Megatron fixes 4);
 * torchtitan runs only its flavors: Llama 3.1 8B and 70B, Qwen3 1.7B, 8B
 * and 30B-A3B, DeepSeek-R1 (deepseek_v3 671B), Llama 4 Scout (17bx16e). The
 * Megatron flags are read back against the config itself (cJSON): the
 * rotary base is rope_theta, the norm epsilon rms_norm_eps /
 * layer_norm_eps / layer_norm_epsilon, the vocabulary unpadded; q/k/v
 * biases for Qwen2 and Qwen2-MoE, q/k norms for Qwen3 and OLMo 2, Llama 3
 * rope scaling for type llama3, MLA for DeepSeek. */
static const struct hf_case {
	const char *file, *megatron, *titan; /* refusal substring, or NULL */
} hf_cases[] = {
	{ "EleutherAI_gpt-j-6b", "parallel attention and MLP blocks have no flag", "ships no model" },
	{ "Qwen_Qwen1.5-MoE-A2.7B", NULL, "ships no model" },
	{ "Qwen_Qwen2-7B", NULL, "ships no model" },
	{ "Qwen_Qwen2.5-72B-Instruct", NULL, "ships no model" },
	{ "Qwen_Qwen3-1.7B", NULL, NULL },
	{ "Qwen_Qwen3-30B-A3B", NULL, NULL },
	{ "Qwen_Qwen3-8B", NULL, NULL },
	{ "allenai_OLMo-2-7B", NULL, "ships no model" },
	{ "deepseek-ai_DeepSeek-R1", NULL, NULL },
	{ "google_gemma-2-9b", "4 norms per block", "ships no model" },
	{ "meta-llama_Llama-3.1-70B", NULL, NULL },
	{ "meta-llama_Llama-3.1-8B", NULL, NULL },
	{ "meta-llama_Llama-3.2-1B", NULL, "ships no model" },
	{ "meta-llama_Llama-4-Scout-17B-16E-text.ASSEMBLED",
	  "rope scaling 'llama3' with low_freq_factor 1, high_freq_factor 1", NULL },
	{ "microsoft_Phi-3.5-mini", "rope scaling 'longrope' has no flag", "ships no model" },
	{ "mistralai_Mistral-7B-v0.3", NULL, "ships no model" },
	{ "mistralai_Mixtral-8x7B-v0.1", NULL, "ships no model" },
	{ "openai-community_gpt2", NULL, "ships no model" },
	{ "tiiuae_falcon-7b-instruct", "parallel attention and MLP blocks have no flag", "ships no model" },
};

static double cfg_num(cJSON *doc, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

START_TEST(test_hf_configs)
{
	const struct hf_case *hc = &hf_cases[_i];
	char path[256];
	struct fix f;
	struct model *m;
	struct err e = { "" };

	snprintf(path, sizeof path, "tests/data/hf/%s.json", hc->file);
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s", e.msg);
	fixture(&f, HOMO);
	f.m = *m;
	plan(&f, 1, 1, 1, 1, 8, 1, 512, (const int[]){ m->layers + 2 }, (const unsigned char[]){ 0 });
	group(&f, 0, "h100", 1, 8, 0);
	f.s.seq = m->seq;

	int rc = trainer_check(TRAINER_MEGATRON, &f.m, &f.c, &f.s, &e);

	if (hc->megatron)
		ck_assert_msg(rc == -1 && strstr(e.msg, hc->megatron), "%s: %s", hc->file, e.msg);
	else
		ck_assert_msg(rc == 0, "%s: %s", hc->file, e.msg);
	rc = trainer_check(TRAINER_TORCHTITAN, &f.m, &f.c, &f.s, &e);
	if (hc->titan)
		ck_assert_msg(rc == -1 && strstr(e.msg, hc->titan), "%s: %s", hc->file, e.msg);
	else
		ck_assert_msg(rc == 0, "%s: %s", hc->file, e.msg);
	if (hc->megatron) {
		model_free(m);
		return;
	}

	char *cfg = read_file(path), *script = emit_text("megatron", &f, "launch.sh", false);
	cJSON *doc = cJSON_Parse(cfg), *rs = cJSON_GetObjectItemCaseSensitive(doc, "rope_scaling");
	cJSON *rt = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
	char **w = words(strstr(script, "ARGS=(\n"));
	const char *mt = cJSON_GetObjectItemCaseSensitive(doc, "model_type")->valuestring;
	double theta = cfg_num(doc, "rope_theta"), eps = cfg_num(doc, "rms_norm_eps");
	int v = (int)cfg_num(doc, "vocab_size"), d = ivalue(w, "--make-vocab-size-divisible-by");
	bool gpt2 = strcmp(mt, "gpt2") == 0;

	if (!eps)
		eps = cfg_num(doc, gpt2 ? "layer_norm_epsilon" : "layer_norm_eps");
	ck_assert_int_eq((v + d - 1) / d * d, v);
	if (gpt2) {
		ck_assert_str_eq(value(w, "--position-embedding-type"), "learned_absolute");
		ck_assert_str_eq(value(w, "--normalization"), "LayerNorm");
		ck_assert(!has(w, "--rotary-base"));
	} else {
		ck_assert_str_eq(value(w, "--position-embedding-type"), "rope");
		ck_assert_msg(atof(value(w, "--rotary-base")) == (theta ? theta : 10000), "%s", hc->file);
	}
	ck_assert_msg(atof(value(w, "--norm-epsilon")) == eps, "%s", hc->file);
	ck_assert_str_eq(value(w, "--attention-dropout"), "0");
	ck_assert_str_eq(value(w, "--hidden-dropout"), "0");
	ck_assert_int_eq(has(w, "--add-qkv-bias"), strncmp(mt, "qwen2", 5) == 0);
	ck_assert_int_eq(has(w, "--qk-layernorm"),
			 strncmp(mt, "qwen3", 5) == 0 || strcmp(mt, "olmo2") == 0);
	ck_assert_int_eq(has(w, "--use-rope-scaling"), cJSON_IsString(rt) && strcmp(rt->valuestring, "llama3") == 0);
	ck_assert_int_eq(has(w, "--multi-latent-attention"), strcmp(mt, "deepseek_v3") == 0);
	if (has(w, "--use-rope-scaling"))
		ck_assert(atof(value(w, "--rope-scaling-factor")) == cfg_num(rs, "factor"));
	ck_assert(!has(w, "--window-size"));
	words_free(w);
	cJSON_Delete(doc);
	free(script);
	free(cfg);
	model_free(m);
}
END_TEST

/* trainer_features: what each trainer runs a TP 4 (SP), ZeRO-1, DP 2
 * strategy with, from TRAINERS.md and the trainers' defaults, by hand:
 * Megatron-LM and NeMo every overlap (--tp-comm-overlap, --overlap-grad-
 * reduce, --overlap-param-gather) and gradient accumulation fusion, fp32
 * gradients; torchtitan async TP, FSDP2 (its gathers per layer), autograd's
 * accumulation, torch.compile's fused kernels; DeepSpeed no TP overlap,
 * overlap_comm for the reduction, no parameter prefetch below ZeRO-3,
 * bf16 gradients, its pipeline's sends split over TP. With trainer_defaults the bare CLIs: nothing overlapped
 * but FSDP2's own and DeepSpeed ZeRO-3's overlap_comm, torchtitan eager.
 * An option fixed by the user wins over every trainer (--p2p-split too). */
START_TEST(test_trainer_features)
{
	static const struct {
		int t;
		bool bare, tp_ov, grad_ov, param_ov, acc_unfused, fsdp, eager;
		int grad_bytes;
		bool p2p_split;
	} want[] = {
		{ TRAINER_MEGATRON, false, 1, 1, 1, 0, 0, 0, 4, 0 },
		{ TRAINER_NEMO, false, 1, 1, 1, 0, 0, 0, 4, 0 },
		{ -1, false, 1, 1, 1, 0, 0, 0, 4, 0 },
		{ TRAINER_TORCHTITAN, false, 1, 1, 1, 1, 1, 0, 4, 0 },
		{ TRAINER_DEEPSPEED, false, 0, 1, 0, 1, 0, 0, 2, 1 },
		{ TRAINER_MEGATRON, true, 0, 0, 0, 0, 0, 0, 4, 0 },
		{ TRAINER_TORCHTITAN, true, 0, 1, 1, 1, 1, 1, 4, 0 },
		{ TRAINER_DEEPSPEED, true, 0, 0, 0, 1, 0, 0, 2, 1 },
	};
	struct model m = { .fp16 = false };
	struct plan_opts o;

	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		struct strategy s = { .tp = 4, .sp = true, .zero = 1, .dp = 2, .cp = 1, .pp = 1 };

		plan_opts_init(&o);
		o.trainer_defaults = want[i].bare;
		trainer_features(want[i].t, &s, &m, &o);
		ck_assert_msg(s.tp_overlap == want[i].tp_ov && s.grad_overlap == want[i].grad_ov &&
				      s.param_overlap == want[i].param_ov &&
				      s.grad_acc_unfused == want[i].acc_unfused && s.fsdp == want[i].fsdp &&
				      s.unfused_norm == want[i].eager && s.unfused_pointwise == want[i].eager &&
				      s.grad_bytes == want[i].grad_bytes && s.p2p_split == want[i].p2p_split,
			      "case %zu", i);
	}
	/* trainer_allows: Megatron overlaps TP only with SP, and the
	 * parameter gather only with the gradient reduction overlapped
	 * (TRAINERS.md) */
	{
		struct strategy s = { .tp = 4, .sp = false, .zero = 1, .dp = 2, .cp = 1, .pp = 1 };

		ck_assert(!trainer_allows(TRAINER_MEGATRON, FEATURE_TP_OVERLAP, &s));
		s.sp = true;
		ck_assert(trainer_allows(TRAINER_MEGATRON, FEATURE_TP_OVERLAP, &s));
		ck_assert(!trainer_allows(TRAINER_MEGATRON, FEATURE_PARAM_OVERLAP, &s));
		s.grad_overlap = true;
		ck_assert(trainer_allows(TRAINER_MEGATRON, FEATURE_PARAM_OVERLAP, &s));
	}
	/* DeepSpeed's ZeRO-3 turns overlap_comm on by default */
	{
		struct strategy s = { .tp = 1, .zero = 3, .dp = 8, .cp = 1, .pp = 1 };

		plan_opts_init(&o);
		o.trainer_defaults = true;
		trainer_features(TRAINER_DEEPSPEED, &s, &m, &o);
		ck_assert(s.grad_overlap && s.param_overlap && !s.tp_overlap);
	}
	/* fixed options and an fp16 model */
	{
		struct strategy s = { .tp = 4, .sp = true, .zero = 1, .dp = 2, .cp = 1, .pp = 1 };

		plan_opts_init(&o);
		o.tp_overlap = 0;
		o.grad_acc_fusion = 1;
		m.fp16 = true;
		trainer_features(TRAINER_TORCHTITAN, &s, &m, &o);
		ck_assert(!s.tp_overlap && !s.grad_acc_unfused && s.fsdp);
		ck_assert_int_eq(s.grad_bytes, 4); /* float32 reduction */
		trainer_features(TRAINER_MEGATRON, &s, &m, &o);
		ck_assert_int_eq(s.grad_bytes, 2); /* fp16: no fp32 main gradients */
		/* --p2p-split given: for every trainer, DeepSpeed's too */
		o.p2p_split = 1;
		trainer_features(TRAINER_MEGATRON, &s, &m, &o);
		ck_assert(s.p2p_split);
		o.p2p_split = 0;
		trainer_features(TRAINER_DEEPSPEED, &s, &m, &o);
		ck_assert(!s.p2p_split);
	}
}
END_TEST

/* trainer_mask, trainer_refusal and trainer_mask_names on the plans: the
 * homogeneous plan runs everywhere (bits 0-3: 15), the interleaved one on
 * all but DeepSpeed (1 + 2 + 8 = 11), the ZeRO-3 one on torchtitan and
 * DeepSpeed (2 + 4 = 6). */
START_TEST(test_trainer_mask)
{
	struct fix f;
	char buf[160], small[9];

	fixture(&f, HOMO);
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 15);
	ck_assert_str_eq(trainer_mask_names(15, buf, sizeof buf), "megatron,torchtitan,deepspeed,nemo");
	ck_assert_ptr_null(trainer_refusal(TRAINER_MEGATRON, &f.m, &f.c, &f.s, buf, sizeof buf));
	fixture(&f, INTERLEAVED);
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 11);
	ck_assert_str_eq(trainer_mask_names(11, buf, sizeof buf), "megatron,torchtitan,nemo");
	fixture(&f, ZERO3);
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 6);
	ck_assert_str_eq(trainer_refusal(TRAINER_MEGATRON, &f.m, &f.c, &f.s, buf, sizeof buf),
			 "megatron: ZeRO stage 3 has no flag; the distributed optimizer is ZeRO-1 (gradients stay whole)");
	ck_assert_ptr_eq(trainer_refusal(TRAINER_NEMO, &f.m, &f.c, &f.s, small, sizeof small), small);
	ck_assert_str_eq(small, "nemo: Ze");
	ck_assert_str_eq(trainer_mask_names(0, buf, sizeof buf), "none");
	ck_assert_str_eq(trainer_mask_names(15, small, sizeof small), "megatron");
	fixture(&f, HOMO);
	f.s.schedule = SCHED_ZB_H1;
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 0);
}
END_TEST

START_TEST(test_names)
{
	for (int t = 0; t < TRAINER_COUNT; t++)
		ck_assert_int_eq(trainer_parse(trainer_name(t)), t);
	for (int f = 0; f < EMIT_COUNT; f++)
		ck_assert_int_eq(emit_format_parse(emit_format_name(f)), f);
	ck_assert_int_eq(trainer_parse("slurm"), -1);
	ck_assert_int_eq(emit_format_parse("Megatron"), -1);
}
END_TEST

/* Pipeline ranks fill nodes in order; a node is not shared by two groups. */
START_TEST(test_nodes)
{
	static const unsigned char g010[] = { 0, 1, 0 };
	struct fix f;
	struct trainer_nodes n;
	struct err e = { "" };

	fixture(&f, HOMO);
	cluster(&f, "two");
	group(&f, 0, "h100", 3, 8, 0);
	group(&f, 1, "a100", 1, 8, 1);
	plan(&f, 2, 1, 3, 1, 2, 1, 64, (const int[]){ 12, 11, 11 }, g010);
	ck_assert_int_eq(trainer_nodes(&n, &f.c, &f.s, &e), 0);
	ck_assert_int_eq(n.n, 3);
	ck_assert_int_eq(n.group[0], 0);
	ck_assert_int_eq(n.group[1], 1);
	ck_assert_int_eq(n.group[2], 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(n.gpus[i], 4);
	trainer_nodes_free(&n);
	trainer_nodes_free(NULL);
	group(&f, 0, "h100", 1, 8, 0);
	ck_assert_int_eq(trainer_nodes(&n, &f.c, &f.s, &e), -1);
	ck_assert_str_eq(e.msg, "world size 12 (tp*cp*pp*dp) needs 2 nodes of group 'h100', which has 1");
}
END_TEST

/* ---- one refusal per rule ---- */

static void moe(struct fix *f, int experts, int moe_ffn)
{
	f->m.experts = experts;
	f->m.top_k = 2;
	f->m.moe_ffn = moe_ffn;
}

/* Sets the degrees of the homogeneous plan to tp, cp, pp (vp 1), dp with an
 * even split and a consistent micro-batch count. */
static void degrees(struct fix *f, int tp, int cp, int pp, int dp)
{
	struct strategy *s = &f->s;
	int n = f->m.layers + 2;

	s->tp = tp, s->cp = cp, s->pp = pp, s->dp = dp, s->vp = 1;
	s->n_stages = pp;
	s->micro_batches = s->gbs / (s->mbs * dp);
	for (int k = 0; k <= pp; k++)
		s->first[k] = (unsigned short)(k * n / pp);
	memset(s->group, 0, sizeof s->group);
}

static void interleave(struct fix *f)
{
	f->s.vp = 2;
	f->s.n_stages = 4;
	f->s.schedule = SCHED_INTERLEAVED;
	for (int k = 0; k <= 4; k++)
		f->s.first[k] = (unsigned short)(k == 0 ? 0 : k == 4 ? 34
								     : 1 + 8 * k);
}

#define R(name) static void name(struct fix *f)
R(r_empty_stage)
{
	f->s.first[1] = 34;
}
R(r_cover)
{
	f->s.first[2] = 33;
}
R(r_n_stages)
{
	f->s.n_stages = 3;
}
R(r_group)
{
	f->s.group[1] = 5;
}
R(r_zero_range)
{
	f->s.zero = 4;
}
R(r_positive)
{
	f->s.mbs = 0;
}
R(r_zb_h1)
{
	f->s.schedule = SCHED_ZB_H1;
}
R(r_zb_h2)
{
	f->s.schedule = SCHED_ZB_H2;
}
R(r_dualpipe)
{
	f->s.schedule = SCHED_DUALPIPE;
}
R(r_gpipe)
{
	f->s.schedule = SCHED_GPIPE;
}
R(r_interleaved_vp1)
{
	f->s.schedule = SCHED_INTERLEAVED;
}
R(r_vp_1f1b)
{
	interleave(f);
	f->s.schedule = SCHED_1F1B;
}
R(r_vp)
{
	interleave(f);
}
R(r_interleave_mb)
{
	interleave(f);
	f->s.gbs = 4;
	f->s.micro_batches = 1;
}
R(r_gbs)
{
	f->s.gbs = 510;
}
R(r_micro_batches)
{
	f->s.micro_batches = 64;
}
R(r_sp)
{
	degrees(f, 1, 1, 2, 8);
	f->s.sp = true;
}
R(r_heads)
{
	f->m.heads = 31;
}
R(r_kv)
{
	degrees(f, 8, 1, 2, 1);
	f->m.kv_heads = 12;
}
R(r_kv_titan)
{
	degrees(f, 16, 1, 1, 1);
}
R(r_ffn)
{
	f->m.ffn = 14335;
}
R(r_moe_ffn)
{
	moe(f, 8, 1001);
}
R(r_tp_node)
{
	f->g[0].gpus_per_node = 6;
	degrees(f, 4, 1, 2, 2);
}
R(r_cp_ds)
{
	degrees(f, 2, 2, 2, 2);
}
R(r_cp_seq)
{
	degrees(f, 2, 2, 2, 2);
	f->s.seq = 8190;
}
R(r_cp_seq_titan)
{
	degrees(f, 2, 2, 2, 2);
	f->s.seq = 8196;
}
R(r_ep_dense)
{
	f->s.ep = 2;
}
R(r_ep_experts)
{
	moe(f, 6, 14336);
	f->s.ep = 4;
}
R(r_ep_world)
{
	moe(f, 8, 14336);
	f->s.ep = 8;
}
R(r_ep_sp)
{
	moe(f, 8, 14336);
	f->s.ep = 2;
	f->s.sp = false;
}
R(r_zero_pp)
{
	f->s.zero = 2;
}
R(r_zero3)
{
	f->s.zero = 3;
}
R(r_zero2)
{
	f->s.zero = 2;
}
R(r_ddp)
{
	f->s.zero = 0;
}
R(r_recompute)
{
	f->m.layers = 1;
	f->s.first[1] = 2;
	f->s.first[2] = 3;
	f->s.recompute = RECOMPUTE_FULL;
}
R(r_learned)
{
	f->m.learned_pos = true;
	f->m.max_pos = 4096;
}
R(r_world)
{
	f->g[0].nodes = 1;
}
R(r_falcon)
{
	strcpy(f->m.model_type, "falcon");
	f->m.parallel_block = true;
	f->m.block_norms = 1;
}
R(r_gemma2)
{
	strcpy(f->m.model_type, "gemma2");
	f->m.sliding_window = 4096;
	f->m.sliding_every = 2;
}
R(r_gemma2_norms)
{
	strcpy(f->m.model_type, "gemma2");
	f->m.block_norms = 4;
}
R(r_yarn)
{
	strcpy(f->m.model_type, "qwen2");
	f->m.rope_scaling = (struct rope_scaling){ "yarn", 4, 0, 0, 32768 };
}
/* Llama 4 Scout's config.json: factor 16, low 1, high 1, original 8192 */
R(r_rope_scout)
{
	f->m.rope_scaling = (struct rope_scaling){ "llama3", 16, 1, 1, 8192 };
}
R(r_titan_mixtral)
{
	strcpy(f->m.model_type, "mixtral");
	moe(f, 8, 14336);
}
R(r_titan_ffn)
{
	f->m.ffn = 11008;
}
R(r_titan_window)
{
	strcpy(f->m.model_type, "mistral");
	f->m.sliding_window = 4096;
	f->m.sliding_every = 1;
}
R(r_defer)
{
	f->s.wgrad_defer = -1;
}
R(r_defer_unfused)
{
	f->s.wgrad_defer = 4;
	f->s.grad_acc_unfused = true;
}
R(r_ep_dp)
{
	moe(f, 8, 14336);
	f->s.ep = 8;
}
R(r_moe_global)
{
	moe(f, 8, 14336);
	f->s.moe_balance = MOE_BALANCE_GLOBAL_BATCH;
}
R(r_moe_pad)
{
	moe(f, 8, 14336);
	f->s.moe_capacity = 1.25;
	f->s.moe_pad = true;
}
R(r_grouped)
{
	moe(f, 8, 14336);
	f->s.grouped_gemm = true;
}
R(r_moments)
{
	f->s.moment_bytes = 2;
}
R(r_offload)
{
	f->s.offload_modules = OM_ATTN_NORM;
}
R(r_uneven)
{
	f->s.uneven[0] = 3;
}
R(r_titan_ddp_cp)
{
	degrees(f, 1, 2, 1, 8);
	f->s.sp = false;
	f->s.zero = 0;
}
R(r_learned_edge)
{
	f->m.learned_pos = true;
	f->m.max_pos = f->s.seq - 1;
}
R(r_rc_modules)
{
	f->s.recompute = RECOMPUTE_SELECTIVE;
	f->s.recompute_modules = RM_CORE_ATTN | RM_LAYERNORM;
}
/* accepted (allows[]): KV heads that divide tp (replicated over tp /
 * groups ranks), bf16 moments where Megatron's optimizer runs (NeMo), the
 * EP all-to-all overlap under interleaved 1F1B, seq equal to
 * max_position_embeddings */
R(a_kv_divides)
{
	degrees(f, 8, 1, 2, 1);
	f->m.kv_heads = 4;
}
R(a_learned_edge)
{
	f->m.learned_pos = true;
	f->m.max_pos = f->s.seq;
}
R(a_ep_overlap)
{
	interleave(f);
	moe(f, 8, 14336);
	f->s.ep = 2;
	f->s.ep_overlap = true;
}

static const struct rule {
	enum trainer t;
	void (*mutate)(struct fix *f);
	const char *want;
} rules[] = {
	{ TRAINER_MEGATRON, r_empty_stage, "megatron: stage 1 holds no layers (first[1] = 34, first[2] = 34); every stage of the layout must be non-empty" },
	{ TRAINER_MEGATRON, r_cover, "megatron: the stages must cover layers 0 to 33 (embedding, 32 blocks, head), not 0 to 32" },
	{ TRAINER_MEGATRON, r_n_stages, "megatron: strategy has 3 stages, not pp * vp (2)" },
	{ TRAINER_MEGATRON, r_group, "megatron: pipeline rank 1 is on node group 5, but the cluster has 1" },
	{ TRAINER_DEEPSPEED, r_zero_range, "deepspeed: ZeRO stage 4 is not 0 to 3" },
	{ TRAINER_MEGATRON, r_positive, "megatron: strategy degrees, batch sizes and seq must be positive" },
	{ TRAINER_MEGATRON, r_zb_h1, "megatron: schedule 'zb-h1' is a planning option only, with no megatron flag or config" },
	{ TRAINER_TORCHTITAN, r_zb_h1, "torchtitan: schedule 'zb-h1' (one stage per rank) has no torch.distributed.pipelining schedule (InterleavedZeroBubble and ZBVZeroBubble run several stages per rank)" },
	{ TRAINER_DEEPSPEED, r_zb_h1, "deepspeed: schedule 'zb-h1' is a planning option only" },
	{ TRAINER_NEMO, r_zb_h2, "nemo: schedule 'zb-h2' is a planning option only, with no nemo flag or config" },
	{ TRAINER_TORCHTITAN, r_zb_h2, "torchtitan: schedule 'zb-h2' (one stage per rank) has no torch.distributed.pipelining schedule" },
	{ TRAINER_TORCHTITAN, r_dualpipe, "torchtitan: schedule 'dualpipe' is a planning option only, with no torchtitan flag or config" },
	{ TRAINER_DEEPSPEED, r_dualpipe, "deepspeed: schedule 'dualpipe' is a planning option only, with no deepspeed flag or config; plan with 1f1b" },
	{ TRAINER_NEMO, r_gpipe, "nemo: schedule 'gpipe' has no nemo flag or config (its pipeline runs 1F1B)" },
	{ TRAINER_MEGATRON, r_interleaved_vp1, "megatron: schedule 'interleaved' needs vp > 1, not 1" },
	{ TRAINER_MEGATRON, r_vp_1f1b, "megatron: vp 2 needs schedule 'interleaved', 'interleaved-zb', 'zb-v' or 'dualpipev', not '1f1b'" },
	{ TRAINER_DEEPSPEED, r_vp, "deepspeed: no interleaved pipeline (vp 2)" },
	{ TRAINER_MEGATRON, r_interleave_mb, "megatron: interleaving (vp 2) needs micro-batches (1) >= pp (2)" },
	{ TRAINER_MEGATRON, r_gbs, "megatron: global batch (510) must be divisible by micro batch (1) * dp (4)" },
	{ TRAINER_MEGATRON, r_micro_batches, "megatron: micro-batches (64) must be global batch / (micro batch * dp) = 128" },
	{ TRAINER_MEGATRON, r_sp, "megatron: sequence parallelism needs tp > 1" },
	{ TRAINER_MEGATRON, r_heads, "megatron: num_attention_heads (31) must be divisible by tp (2)" },
	{ TRAINER_MEGATRON, r_kv, "megatron: num_query_groups (12) must be divisible by tp (8) or divide it" },
	{ TRAINER_TORCHTITAN, r_kv_titan, "torchtitan: n_kv_heads (8) must be divisible by tp (16)" },
	{ TRAINER_MEGATRON, r_ffn, "megatron: ffn_hidden_size (14335) must be divisible by tp (2)" },
	{ TRAINER_MEGATRON, r_moe_ffn, "megatron: MoE ffn hidden size (1001) must be divisible by etp (2)" },
	{ TRAINER_MEGATRON, r_tp_node, "megatron: tp (4) must divide the GPUs per node (6) of group 'h100'" },
	{ TRAINER_DEEPSPEED, r_cp_ds, "deepspeed: no context parallelism (cp 2)" },
	{ TRAINER_MEGATRON, r_cp_seq, "megatron: seq_length (8190) must be divisible by 2 * cp (4)" },
	{ TRAINER_TORCHTITAN, r_cp_seq_titan, "torchtitan: seq_len (8196) must be divisible by tp * 2 * cp (8)" },
	{ TRAINER_MEGATRON, r_ep_dense, "megatron: expert parallelism (ep 2) needs a MoE model" },
	{ TRAINER_MEGATRON, r_ep_experts, "megatron: num_experts (6) must be divisible by ep (4)" },
	{ TRAINER_MEGATRON, r_ep_world, "megatron: world size (16) must be divisible by etp * ep * pp (32)" },
	{ TRAINER_MEGATRON, r_ep_sp, "megatron: expert parallelism with tp > 1 needs sequence parallelism" },
	{ TRAINER_DEEPSPEED, r_zero_pp, "deepspeed: ZeRO stage 2 cannot run with pipeline parallelism (pp 2)" },
	{ TRAINER_MEGATRON, r_zero3, "megatron: ZeRO stage 3 has no flag; the distributed optimizer is ZeRO-1" },
	{ TRAINER_NEMO, r_zero2, "nemo: ZeRO stage 2 has no flag; the distributed optimizer is ZeRO-1" },
	{ TRAINER_TORCHTITAN, r_ddp, "torchtitan: data parallelism without ZeRO (zero 0, dp 4) runs as DDP" },
	{ TRAINER_MEGATRON, r_recompute, "megatron: full recompute needs recompute_num_layers (1) <= layers per pipeline rank (num_layers 1 // pp 2 = 0)" },
	{ TRAINER_MEGATRON, r_learned, "megatron: seq_length (8192) exceeds max_position_embeddings (4096) of the learned position embeddings" },
	{ TRAINER_MEGATRON, r_world, "megatron: world size 16 (tp*cp*pp*dp) needs 2 nodes of group 'h100', which has 1" },
	{ TRAINER_MEGATRON, r_falcon, "megatron: model_type 'falcon': parallel attention and MLP blocks have no flag" },
	{ TRAINER_MEGATRON, r_gemma2_norms, "megatron: model_type 'gemma2': 4 norms per block (norms after attention and MLP too) have no flag" },
	{ TRAINER_NEMO, r_gemma2, "nemo: a sliding window on every 2nd layer (model_type 'gemma2') has no flag: --window-size windows every layer" },
	{ TRAINER_MEGATRON, r_yarn, "megatron: rope scaling 'yarn' has no flag (--use-rope-scaling is Llama 3's)" },
	{ TRAINER_MEGATRON, r_rope_scout, "megatron: rope scaling 'llama3' with low_freq_factor 1, high_freq_factor 1, original_max_position_embeddings 8192: --use-rope-scaling fixes them to 1, 4 and 8192" },
	{ TRAINER_TORCHTITAN, r_titan_mixtral, "torchtitan: v0.2.2 ships no model 'llama3-8b' (model_type 'mixtral', 32 layers, hidden 4096, ffn 14336, 8 experts): its models are the llama3 (8B, 70B, 405B), qwen3, deepseek_v3 and llama4 flavors" },
	{ TRAINER_TORCHTITAN, r_titan_ffn, "torchtitan: v0.2.2 ships no model 'llama3-8b' (model_type 'llama', 32 layers, hidden 4096, ffn 11008, 0 experts)" },
	{ TRAINER_TORCHTITAN, r_titan_window, "torchtitan: v0.2.2 ships no model 'llama3-8b' (model_type 'mistral'" },
	{ TRAINER_TORCHTITAN, r_defer, "torchtitan: deferred LM-head weight gradients: Megatron-Core's --defer-embedding-wgrad-compute only" },
	{ TRAINER_DEEPSPEED, r_defer, "deepspeed: deferred LM-head weight gradients: Megatron-Core's --defer-embedding-wgrad-compute only" },
	{ TRAINER_MEGATRON, r_defer_unfused, "megatron: deferred LM-head weight gradients need gradient accumulation fusion" },
	{ TRAINER_NEMO, r_ep_sp, "nemo: expert parallelism with tp > 1 needs sequence parallelism" },
	{ TRAINER_DEEPSPEED, r_ep_dp, "deepspeed: ep (8) must divide dp x cp (4)" },
	{ TRAINER_DEEPSPEED, r_moe_global, "deepspeed: global-batch balancing: DeepSpeed's MoE gate takes its auxiliary loss per micro-batch" },
	{ TRAINER_DEEPSPEED, r_moe_pad, "deepspeed: padding to capacity: set by Megatron's --moe-pad-expert-input-to-capacity only" },
	{ TRAINER_DEEPSPEED, r_grouped, "deepspeed: grouped GEMM: DeepSpeed's MoE runs its local experts one by one" },
	{ TRAINER_TORCHTITAN, r_moments, "torchtitan: bf16 Adam moments: only Megatron's precision-aware optimizer keeps them" },
	{ TRAINER_MEGATRON, r_offload, "megatron: activation offloading (--offload-modules) is a planning option only" },
	{ TRAINER_NEMO, r_uneven, "nemo: uneven per-replica micro-batches are a planning option only" },
	{ TRAINER_TORCHTITAN, r_titan_ddp_cp, "torchtitan: data parallelism without ZeRO (zero 0, dp 8) runs as DDP" },
	{ TRAINER_MEGATRON, r_learned_edge, "megatron: seq_length (8192) exceeds max_position_embeddings (8191)" },
	{ TRAINER_DEEPSPEED, r_rc_modules, "deepspeed: selective recomputation of modules beyond core_attn" },
};

/* Plans the rules accept: the other side of an "or" in a rule, or a
 * trainer that a rule names as running it. */
static const struct allow {
	enum trainer t;
	void (*mutate)(struct fix *f);
} allows[] = {
	{ TRAINER_MEGATRON, a_kv_divides },
	{ TRAINER_NEMO, r_moments },
	{ TRAINER_MEGATRON, r_moments },
	{ TRAINER_MEGATRON, a_ep_overlap },
	{ TRAINER_NEMO, a_ep_overlap },
	{ TRAINER_MEGATRON, a_learned_edge },
	{ TRAINER_NEMO, r_rc_modules },
};

/* The base plan passes; the mutated one fails with the rule's message. */
START_TEST(test_rule)
{
	const struct rule *r = &rules[_i];
	struct fix f;
	struct err e = { "" };

	fixture(&f, HOMO);
	ck_assert_msg(trainer_check(r->t, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	r->mutate(&f);
	ck_assert_int_eq(trainer_check(r->t, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_msg(strncmp(e.msg, r->want, strlen(r->want)) == 0, "got \"%s\", want \"%s...\"",
		      e.msg, r->want);
}
END_TEST

START_TEST(test_allow)
{
	const struct allow *a = &allows[_i];
	struct fix f;
	struct err e = { "" };

	fixture(&f, HOMO);
	a->mutate(&f);
	ck_assert_msg(trainer_check(a->t, &f.m, &f.c, &f.s, &e) == 0, "%s: %s", trainer_name(a->t),
		      e.msg);
}
END_TEST

/* The plans pass every trainer but those golden_refusal names (the
 * enums trainer and emit_format agree on their first four values);
 * Megatron and NeMo run the overlap-fp8 plan. */
START_TEST(test_plans_pass)
{
	struct fix f;
	struct err e = { "" };
	int cs = _i / TRAINER_COUNT, t = _i % TRAINER_COUNT;

	fixture(&f, cs);
	int rc = trainer_check(t, &f.m, &f.c, &f.s, &e);

	if (golden_refusal(cs, t))
		ck_assert_str_eq(e.msg, golden_refusal(cs, t));
	else if (cs != OVERLAP_FP8 || t == TRAINER_MEGATRON || t == TRAINER_NEMO)
		ck_assert_msg(rc == 0, "%s", e.msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trainer");
	TCase *tc = tcase_create("trainer");

	tcase_add_test(tc, test_trainer_mask);
	tcase_add_test(tc, test_trainer_features);
	tcase_add_loop_test(tc, test_hf_configs, 0, (int)(sizeof hf_cases / sizeof *hf_cases));
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_nodes);
	tcase_add_loop_test(tc, test_rule, 0, (int)(sizeof rules / sizeof *rules));
	tcase_add_loop_test(tc, test_allow, 0, (int)(sizeof allows / sizeof *allows));
	tcase_add_loop_test(tc, test_plans_pass, 0, N_CASE * TRAINER_COUNT);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
