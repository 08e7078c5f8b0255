/* check_memory.c: memory against hand computations: memory_layer (ZeRO,
 * scores, gradient bytes, MoE), whole pipelines (GPT-3 175B, the allowance,
 * tied embeddings) and the fit test per rank of interleaved and ZB-V chunks. */
#define TESTUTIL_COST_FIXTURE
#include <math.h>
#include <stdbool.h>

#include "compute.h"
#include "cost.h"
#include "memory.h"
#include "model.h"
#include "moe.h"
#include "strategy.h"
#include "testutil.h"

/* GPT-3 175B (L 96, h 12288, a 96, V 51200, s 2048) at TP 8, PP 8, DP 8,
 * mbs 1, sequence parallel, selective recompute, distributed optimizer
 * (ZeRO-1), 1F1B, m = 512 / 8 = 64, the user's 2 GiB allowance. Stage 0:
 * embedding + 12 blocks; stages 1-6: 12 blocks; stage 7: 12 blocks + head.
 * Block: 12h^2 + 13h = 1812099072 parameters, / 8 = 226512384 per GPU.
 * Embedding: (51200 + 2048) * 12288 = 654311424, / 8 = 81788928. */
START_TEST(test_memory_gpt3)
{
	struct strategy s = strat(8, 1, 8, 8, 1, 512, 2048);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	struct layer_mem lm;
	double P = 226512384.0;

	gpt(96, 12288, 96, 51200, 2048);
	clu.mem_allowance = 2 * GiB;
	s.sp = true;
	s.recompute = RECOMPUTE_SELECTIVE;
	s.zero = 1;
	for (int k = 0; k <= 8; k++)
		s.first[k] = (unsigned short)(k == 0 ? 0 : k == 8 ? 98
								  : 1 + 12 * k);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	/* Distributed optimizer: 2 + 4 + 12/8 = 7.5 bytes per parameter. */
	ck_assert_rel(lc.state_bytes[1], 7.5 * P, 1e-12);
	/* Korthikanti 2022 Table 2, TP + SP, selective: 34 s b h / t =
	 * 34 * 2048 * 12288 / 8 = 106954752 bytes per block. */
	ck_assert_rel(lc.act_bytes[1], 106954752.0, 1e-12);
	/* the head: 4h s / t = 12582912 kept; its logits s V / t in bf16 and
	 * in fp32, 2048 * 51200 * (2 + 4) / 8 = 78643200 transient. */
	ck_assert_rel(lc.act_bytes[97], 12582912.0, 1e-12);
	ck_assert_rel(lc.extra_bytes[97], 78643200.0, 1e-12);
	ck_assert_rel(lc.extra_bytes[1], 0, 0);

	/* Rank 0 holds min(8 - 0, 64) = 8 micro-batches, rank 1 seven.
	 * Rank 0: states 7.5 * (12 P + 81788928) = 7.5 * 2799937536 =
	 * 20999531520, activations 8 * 12 * 106954752 = 10267656192, plus
	 * 2 GiB: 33414671360 bytes. Rank 1: 7.5 * 12 P + 7 * 12 *
	 * 106954752 + 2 GiB = 20386114560 + 8984199168 + 2147483648 =
	 * 31517797376, lighter; rank 7 lighter still (12 P + 78643200
	 * parameters of the head, one micro-batch). */
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_rel(r.peak_bytes, 33414671360.0, 1e-12);
	ck_assert_rel(r.mem.weights, 2 * 2799937536.0, 1e-12);
	ck_assert_rel(r.mem.grads, 4 * 2799937536.0, 1e-12);
	ck_assert_rel(r.mem.optimizer, 1.5 * 2799937536.0, 1e-12);
	ck_assert_rel(r.mem.activations, 10267656192.0, 1e-12);
	ck_assert_rel(r.mem.logits, 0, 0);
	ck_assert_rel(r.mem.allowance, 2 * GiB, 0);
	ck_assert(r.fits);
	ck_assert_int_eq(r.overflow_rank, -1);
	cost_layers_free(&lc);

	/* 18 bytes per parameter without ZeRO; ZeRO-2 2 + 16/8 = 4;
	 * ZeRO-3 18/8 = 2.25 (Rajbhandari 2020). */
	s.zero = 0;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights + lm.grads + lm.optimizer, 18 * P, 1e-12);
	s.zero = 2;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights + lm.grads + lm.optimizer, 4 * P, 1e-12);
	s.zero = 3;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights + lm.grads + lm.optimizer, 2.25 * P, 1e-12);
	/* CP 2 shards over dp*cp = 16: ZeRO-1 6 + 12/16 = 6.75; activations
	 * halve. */
	s.zero = 1;
	s.cp = 2;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights + lm.grads + lm.optimizer, 6.75 * P, 1e-12);
	ck_assert_rel(lm.act, 106954752.0 / 2, 1e-12);
	s.cp = 1;

	/* TP without SP: s b h (10 + 24/t) = 13 * 2048 * 12288 = 327155712. */
	s.sp = false;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 327155712.0, 1e-12);
	/* no recompute with flash attention: the scores are never stored. */
	s.recompute = RECOMPUTE_NONE;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 327155712.0, 1e-12);
	/* with Megatron's fused softmax: plus the scores 5 a s^2 b / t =
	 * 5 * 96 * 2048^2 / 8 = 251658240 (Table 2, 5as/h * sbh / t). */
	s.attn = ATTN_FUSED_SOFTMAX;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 327155712.0 + 251658240.0, 1e-12);
	s.sp = true;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 106954752.0 + 251658240.0, 1e-12);
	/* full recompute: the block input 2 s b h / t = 6291456; without SP
	 * 2 s b h = 50331648. */
	s.recompute = RECOMPUTE_FULL;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 6291456.0, 1e-12);
	s.sp = false;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 50331648.0, 1e-12);
}
END_TEST

/* The same 175B without ZeRO and without recomputation, with Megatron's
 * fused softmax (scores stored), overflows stage 0: states 18 * 2799937536
 * = 50398875648, activations 8 * 12 * (106954752 + 251658240) =
 * 34426847232, total 84825722880 > cap 80 GiB - 2 GiB (the user's
 * allowance) = 83751862272. Stage 1: 18 * 12 P + 7 * 12 * 358612992 =
 * 48926674944 + 30123491328 = 79050166272 fits. With flash attention the
 * scores go: 50398875648 + 8 * 12 * 106954752 = 60666531840 fits. */
START_TEST(test_memory_overflow)
{
	struct strategy s = strat(8, 1, 8, 8, 1, 512, 2048);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;

	gpt(96, 12288, 96, 51200, 2048);
	clu.mem_allowance = 2 * GiB;
	s.sp = true;
	s.attn = ATTN_FUSED_SOFTMAX;
	for (int k = 0; k <= 8; k++)
		s.first[k] = (unsigned short)(k == 0 ? 0 : k == 8 ? 98
								  : 1 + 12 * k);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], 83751862272.0, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.overflow_rank, 0);
	ck_assert_rel(r.peak_bytes, 84825722880.0 + 2 * GiB, 1e-12);
	cost_layers_free(&lc);
	s.attn = ATTN_FLASH;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(r.fits);
	ck_assert_rel(r.peak_bytes, 60666531840.0 + 2 * GiB, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* MoE block of 1e9 parameters, 8e8 of them experts, tp 2, ep 4, dp 4,
 * ZeRO-1: dense 2e8 / 2 = 1e8 per GPU, experts 8e8 / 8 = 1e8; weights
 * 2 * 2e8, grads 4 * 2e8, optimizer 12 * (1e8/4 + 1e8/(4/4)) = 1.5e9. */
START_TEST(test_memory_moe)
{
	struct strategy s = strat(2, 1, 1, 4, 1, 4, 2048);
	struct layer_mem lm;

	gpt(2, 4096, 32, 51200, 2048);
	lay[1].params = 1e9;
	lay[1].expert_params = 8e8;
	s.ep = 4;
	s.zero = 1;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights, 4e8, 1e-12);
	ck_assert_rel(lm.grads, 8e8, 1e-12);
	ck_assert_rel(lm.optimizer, 1.5e9, 1e-12);
}
END_TEST

/* Gradient bytes (memory_grad_bytes): 0 reads as Megatron's fp32 main
 * gradients, 4; 2 for bf16 / fp16 gradients. Per block of 226512384
 * parameters per GPU (GPT-3 at tp 8), dp 8: zero 0 G*P; zero 2 G*P/8;
 * ZeRO-3 (2 + G + 12)/8 per parameter. FP8 adds nothing that persists. */
START_TEST(test_memory_grad_bytes)
{
	struct strategy s = strat(8, 1, 1, 8, 1, 8, 2048);
	struct layer_mem lm, l8;
	double P = 226512384.0;

	gpt(2, 12288, 96, 51200, 2048);
	ck_assert_rel(memory_grad_bytes(&s), 4, 0);
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.grads, 4 * P, 1e-12);
	s.grad_bytes = 2;
	ck_assert_rel(memory_grad_bytes(&s), 2, 0);
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.grads, 2 * P, 1e-12);
	ck_assert_rel(lm.weights, 2 * P, 1e-12);
	ck_assert_rel(lm.optimizer, 12 * P, 1e-12);
	s.zero = 2;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.grads, 2 * P / 8, 1e-12);
	s.zero = 3;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights + lm.grads + lm.optimizer, 16 * P / 8, 1e-12);
	s.grad_bytes = 4;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.weights + lm.grads + lm.optimizer, 18 * P / 8, 1e-12);
	/* FP8 on: the same bytes, states and activations. */
	s.fp8 = true;
	memory_layer(&l8, &mod, 1, &s);
	ck_assert_rel(l8.weights + l8.grads + l8.optimizer, 18 * P / 8, 1e-12);
	ck_assert_rel(l8.act, lm.act, 0);
}
END_TEST

/* Selective recomputation's modules (memory_layer): the GPT-3 block at TP
 * 8 with SP, 2048 tokens, 256 per GPU: core_attn alone keeps A = 34h a
 * token, 34 x 12288 x 256 = 106954752; layernorm drops the two norms'
 * outputs, 2 x 2h: 30h x 256 = 94371840; mlp drops the 4f = 16h A counts
 * for the MLP: with layernorm 14h x 256 = 44040192; moe_act changes
 * nothing in a dense block; full keeps the input, 2h x 256 = 6291456. */
START_TEST(test_memory_recompute_modules)
{
	struct strategy s = strat(8, 1, 1, 8, 1, 8, 2048);
	struct layer_mem lm;

	gpt(2, 12288, 96, 51200, 2048);
	s.sp = true;
	s.recompute = RECOMPUTE_SELECTIVE;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 106954752.0, 1e-12);
	s.recompute_modules = RM_CORE_ATTN | RM_LAYERNORM;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 94371840.0, 1e-12);
	s.recompute_modules = RM_LAYERNORM | RM_MLP | RM_MOE_ACT;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 44040192.0, 1e-12);
	s.recompute = RECOMPUTE_FULL;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 6291456.0, 1e-12);
	/* without flash, only core_attn drops the scores 5 a s^2 / t =
	 * 251658240 */
	s.recompute = RECOMPUTE_SELECTIVE;
	s.attn = ATTN_FUSED_SOFTMAX;
	s.recompute_modules = RM_LAYERNORM;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 94371840.0 + 251658240.0, 1e-12);
	s.recompute_modules = RM_LAYERNORM | RM_CORE_ATTN;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 94371840.0, 1e-12);
	/* without SP the norms' outputs are whole on every TP rank: of the
	 * block's (24h / 8 + 10h) x 2048 = 13h x 2048 = 327155712, layernorm
	 * drops 2 x 2h x 2048 (not / 8): 9h x 2048 = 226492416 */
	s.attn = ATTN_FLASH;
	s.sp = false;
	s.recompute_modules = RM_CORE_ATTN;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 327155712.0, 1e-12);
	s.recompute_modules = RM_CORE_ATTN | RM_LAYERNORM;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 226492416.0, 1e-12);
}
END_TEST

/* Fine-grained activation offloading (memory_offload): the GPT-3 block at
 * TP 8 with SP, 2048 tokens, bf16, 96 heads of 128 (MHA). Per token per
 * GPU: attn_norm, qkv_linear and mlp_norm h / 8 x 2 = 3072 bytes each;
 * core_attn Q, K and V, 3 x 12288 / 8 x 2 = 9216; attn_proj 12288 / 8 x 2
 * = 3072: 21504 in all, x 2048 tokens = 44040192 of the block's 34h x 256
 * = 106954752. Without SP the norms' inputs are whole, 24576 a token. */
START_TEST(test_memory_offload)
{
	struct strategy s = strat(8, 1, 1, 8, 1, 8, 2048);
	struct layer_mem lm;

	gpt(2, 12288, 96, 51200, 2048);
	s.sp = true;
	s.offload_modules = OM_ATTN_NORM;
	ck_assert_rel(memory_offload(&mod, 1, &s), 3072, 1e-15);
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.offload, 3072.0 * 2048, 1e-15);
	ck_assert_rel(lm.act, 106954752.0 - 3072.0 * 2048, 1e-15);
	s.offload_modules = OM_ATTN_NORM | OM_QKV_LINEAR | OM_CORE_ATTN | OM_ATTN_PROJ | OM_MLP_NORM;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.offload, 44040192.0, 1e-15);
	ck_assert_rel(lm.act, 106954752.0 - 44040192.0, 1e-15);
	/* the norms' outputs that selective recomputation of layernorm
	   drops: nothing of qkv_linear's to move */
	s.recompute = RECOMPUTE_SELECTIVE;
	s.recompute_modules = RM_LAYERNORM;
	s.offload_modules = OM_QKV_LINEAR | OM_ATTN_NORM;
	ck_assert_rel(memory_offload(&mod, 1, &s), 3072, 1e-15);
	s.recompute = RECOMPUTE_NONE;
	/* the MoE modules move nothing in a dense block, the head nothing */
	s.offload_modules = OM_EXPERT_FC1 | OM_MOE_ACT;
	ck_assert_rel(memory_offload(&mod, 1, &s), 0, 0);
	s.offload_modules = OM_ATTN_NORM;
	ck_assert_rel(memory_offload(&mod, 3, &s), 0, 0);
	memory_layer(&lm, &mod, 3, &s);
	ck_assert_rel(lm.offload, 0, 0);
	s.sp = false;
	ck_assert_rel(memory_offload(&mod, 1, &s), 24576, 1e-15);
	/* what is offloaded never exceeds what the block keeps */
	s.sp = true;
	lay[1].act_bytes_per_token = 1000;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.offload, 1000.0 * 2048 / 8, 1e-15);
	ck_assert_rel(lm.act, 0, 0);
}
END_TEST

/* The MoE modules: a SwiGLU MoE block of 8 experts, top 2, f_e 1024, h
 * 4096 at TP 2 (EP 1, dropless: the busiest rank's load factor lam, which
 * the model gives): expert_fc1 the dispatched copies, lam x 2 x 4096 / 2 x
 * 2 bytes a token; moe_act the first GEMM's two rows, lam x 2 x 2 x 1024
 * / 2 x 2. */
START_TEST(test_memory_offload_moe)
{
	struct strategy s = strat(2, 1, 1, 4, 1, 4, 2048);
	double lam;

	gpt(2, 4096, 32, 51200, 2048);
	mod.experts = 8;
	mod.top_k = 2;
	mod.moe_ffn = 1024;
	mod.ffn_kind = FFN_SWIGLU;
	ck_assert(model_block_moe(&mod, 0));
	lam = moe_load_factor(&mod, &s);
	s.offload_modules = OM_EXPERT_FC1;
	ck_assert_rel(memory_offload(&mod, 1, &s), lam * 2 * 4096 / 2 * 2, 1e-15);
	s.offload_modules = OM_MOE_ACT;
	ck_assert_rel(memory_offload(&mod, 1, &s), lam * 2 * 2 * 1024 / 2 * 2, 1e-15);
	/* recomputing the whole MoE layer keeps neither */
	s.recompute = RECOMPUTE_SELECTIVE;
	s.recompute_modules = RM_MOE;
	s.offload_modules = OM_EXPERT_FC1 | OM_MOE_ACT;
	ck_assert_rel(memory_offload(&mod, 1, &s), 0, 0);
}
END_TEST

/* cost_allowance_parts: a rank of 10 GiB of activations and 2 of logits
 * has MEM_CONTEXT_BYTES + MEM_FRAG_SHARE x 12 GiB of allowance; with the
 * user's 3 GiB, 3 GiB and nothing for fragmentation. */
START_TEST(test_allowance_parts)
{
	struct cost_mem mm = { .activations = 10 * GiB, .logits = 2 * GiB };
	double ctx, frag, share;

	clu.mem_allowance = -1;
	cost_allowance_parts(&clu, &mm, &ctx, &frag, &share);
	ck_assert_rel(ctx, MEM_CONTEXT_BYTES, 0);
	ck_assert_rel(share, MEM_FRAG_SHARE, 0);
	ck_assert_rel(frag, MEM_FRAG_SHARE * 12 * GiB, 1e-12);
	clu.mem_allowance = 3 * GiB;
	cost_allowance_parts(&clu, &mm, &ctx, &frag, &share);
	ck_assert_rel(ctx, 3 * GiB, 0);
	ck_assert_rel(frag, 0, 0);
	ck_assert_rel(share, 0, 0);
}
END_TEST

/* bf16 Adam moments (Megatron's precision-aware optimizer): optimizer
 * states 4 (fp32 master) + 2 x 2 = 8 bytes per parameter instead of 12;
 * the GPT-3 block at TP 8, P = 226512384 per GPU: 8 P without ZeRO, 8 P / 8
 * = P with ZeRO-1 over dp 8. The Adam step reads and writes m and v in 2
 * bytes: 160 - 4 x 2 = 152 bytes per parameter, so 1e9 parameters on a GPU
 * of 2e12 B/s take 152e9 / 2e12 = 0.076 s (0.080 s with fp32 moments). */
START_TEST(test_memory_moment_bytes)
{
	struct strategy s = strat(8, 1, 1, 8, 1, 8, 2048);
	struct gpu_type g = { .hbm_bw = 2e12 };
	struct layer_mem lm;
	double P = 226512384.0;

	gpt(2, 12288, 96, 51200, 2048);
	s.zero = 0;
	ck_assert_rel(memory_opt_bytes(&s), 12, 0);
	s.moment_bytes = 2;
	ck_assert_rel(memory_moment_bytes(&s), 2, 0);
	ck_assert_rel(memory_opt_bytes(&s), 8, 0);
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.optimizer, 8 * P, 1e-12);
	ck_assert_rel(lm.weights + lm.grads, 6 * P, 1e-12);
	s.zero = 1;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.optimizer, P, 1e-12);
	ck_assert_rel(compute_optimizer(&g, 1e9, 2), 0.076, 1e-12);
	ck_assert_rel(compute_optimizer(&g, 1e9, 4), 0.080, 1e-12);
	ck_assert_str_eq(optim_dtype_name(&s), "bf16");
	s.moment_bytes = 0;
	ck_assert_str_eq(optim_dtype_name(&s), "fp32");
}
END_TEST

/* Attention-score memory (Korthikanti 2022 Table 2, 5as/h * sbh / t): the
 * GPT block of test_compute_analytic (check_cost.c), tp 2 without SP:
 * ((34h - 10h)/2 + 10h) s = 22 * 4096 * 2048 = 184549376 bytes, plus
 * without flash and without recomputation 5 a s^2 / t = 5 * 32 * 2048^2 /
 * 2 = 335544320. */
START_TEST(test_attention_memory)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_mem lm;

	gpt(2, 4096, 32, 51200, 2048);
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 184549376.0, 1e-12);
	s.attn = ATTN_FLASH1;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 184549376.0, 1e-12);
	s.attn = ATTN_FUSED_SOFTMAX;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 184549376.0 + 335544320.0, 1e-12);
	s.attn = ATTN_UNFUSED;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 184549376.0 + 335544320.0, 1e-12);
	/* selective recomputation drops the scores */
	s.recompute = RECOMPUTE_SELECTIVE;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 184549376.0, 1e-12);
	/* full: the block input, 2 s h = 16777216 */
	s.recompute = RECOMPUTE_FULL;
	memory_layer(&lm, &mod, 1, &s);
	ck_assert_rel(lm.act, 16777216.0, 1e-12);
}
END_TEST

/* The allowance on the toy, one stage (pp 1, dp 1, m = 4, 1F1B: one
 * micro-batch in flight): states 18 x 5e7 = 9e8 bytes, activations 4 x
 * 34e6 + 4e6 = 1.4e8, logits 1000 x 1000 x (2 + 4) = 6e6.
 * - the user's (mem_allowance >= 0; half of MEM_CONTEXT_BYTES, then all
 *   of it): exactly that many bytes, the layer bytes as they are, cap =
 *   GPU memory - allowance;
 * - modelled (mem_allowance < 0): MEM_CONTEXT_BYTES + MEM_FRAG_SHARE x
 *   (activations + logits); the layers' activation and logit bytes carry
 *   the share, the cap is GPU memory - MEM_CONTEXT_BYTES.
 * With the GPU's memory states + activations + logits + MEM_CONTEXT_BYTES
 * + 1 kB (a margin against rounding), a user allowance of
 * MEM_CONTEXT_BYTES fits, the modelled one (its fragmentation share on
 * top) does not. */
START_TEST(test_allowance)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 4, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	double body = 9e8 + 1.4e8 + 6e6;

	toy();
	toy_cluster();
	s.first[0] = 0;
	s.first[1] = 6;
	gpus[0].mem_bytes = body + MEM_CONTEXT_BYTES + 1e3;
	clu.mem_allowance = 0.5 * MEM_CONTEXT_BYTES;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.act_bytes[1], 34e6, 1e-12);
	ck_assert_rel(lc.extra_bytes[5], 6e6, 1e-12);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], body + 0.5 * MEM_CONTEXT_BYTES + 1e3, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.mem.allowance, 0.5 * MEM_CONTEXT_BYTES, 0);
	ck_assert_rel(r.mem.activations, 1.4e8, 1e-12);
	ck_assert_rel(r.mem.logits, 6e6, 1e-12);
	ck_assert_rel(r.peak_bytes, body + 0.5 * MEM_CONTEXT_BYTES, 1e-12);
	ck_assert(r.fits);
	cost_layers_free(&lc);

	clu.mem_allowance = MEM_CONTEXT_BYTES;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.peak_bytes, body + MEM_CONTEXT_BYTES, 1e-12);
	ck_assert(r.fits);
	cost_layers_free(&lc);

	clu.mem_allowance = -1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.act_bytes[1], 34e6 * (1 + MEM_FRAG_SHARE), 1e-12);
	ck_assert_rel(lc.extra_bytes[5], 6e6 * (1 + MEM_FRAG_SHARE), 1e-12);
	ck_assert_rel(lc.state_bytes[1], 18e7, 1e-12);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], body + 1e3, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.mem.allowance, MEM_CONTEXT_BYTES + MEM_FRAG_SHARE * 1.46e8, 1e-12);
	ck_assert_rel(r.mem.activations, 1.4e8, 1e-12);
	ck_assert_rel(r.peak_bytes, body + MEM_CONTEXT_BYTES + MEM_FRAG_SHARE * 1.46e8, 1e-12);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.overflow_rank, 0);
	cost_layers_free(&lc);
}
END_TEST

/* ZB-V's V (strategy_rank): the toy, pp 2, vp 2, m = 4, zero 0, the
 * user's allowance 0, virtual stages [0,3), [3,4), [4,5), [5,6) on ranks
 * 0, 1, 1, 0, rank 0 on group 0 and rank 1 on group 1. Stages 1 and 2 sit
 * on one rank: no p2p between them; 0 -> 1 and 2 -> 3 cross the groups.
 * In flight (schedule_inflight): rank 0 2 (p - 0) - 1 = 3 on stage 0 and
 * 2 * 0 + 1 = 1 on stage 3; rank 1 1 on stage 1 and 3 on stage 2.
 *   rank 0: 18 x 2.5e7 + 3 x 68e6 = 6.54e8, 18 x 5e6 + 1 x 4e6 + 6e6
 *           logits = 1e8: 7.54e8;
 *   rank 1: 18 x 1e7 + 1 x 34e6 = 2.14e8, 18 x 1e7 + 3 x 34e6 = 2.82e8:
 *           4.96e8 (the same blocks as test_fit_interleaved_chunks). */
START_TEST(test_zb_v_placement)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	struct cost_rank x[2];

	toy();
	toy_cluster();
	s.schedule = SCHED_ZB_V;
	s.vp = 2;
	s.n_stages = 4;
	s.first[1] = 3;
	s.first[2] = 4;
	s.first[3] = 5;
	s.first[4] = 6;
	s.group[1] = 1;
	gpus[0].mem_bytes = 1e9;
	ck_assert_int_eq(strategy_rank(&s, 3), 0);
	ck_assert_int_eq(strategy_stage(&s, 1, 1), 2);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_int_eq(f.group[0], 0);
	ck_assert_int_eq(f.group[1], 1);
	ck_assert_int_eq(f.group[2], 1);
	ck_assert_int_eq(f.group[3], 0);
	ck_assert(f.send[1] > 0 && f.send[1] == f.link[0][1]);
	ck_assert(f.send[2] == 0);
	ck_assert(f.send[3] > 0 && f.send[3] == f.link[1][0]);
	ck_assert_rel(f.inflight[0], 3, 0);
	ck_assert_rel(f.inflight[1], 1, 0);
	ck_assert_rel(f.inflight[2], 3, 0);
	ck_assert_rel(f.inflight[3], 1, 0);
	/* the caps: each rank's memory / 2 per chunk times its share, from
	 * the 4 blocks' states 4 x 18e7 = 7.2e8 and activations 4 x 34e6 =
	 * 1.36e8, 2 (S + i A) / (2 S + (3 + 1) A): 2.256e9 / 1.984e9 for the
	 * chunk holding 3 micro-batches, 1.712e9 / 1.984e9 for the other
	 * (rank 0: 1e9 bytes; rank 1 on group 1: the shares' ratio) */
	ck_assert_rel(f.cap[0], 5e8 * 2.256e9 / 1.984e9, 1e-12);
	ck_assert_rel(f.cap[3], 5e8 * 1.712e9 / 1.984e9, 1e-12);
	ck_assert_rel(f.cap[2] / f.cap[1], 2.256 / 1.712, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(r.fits);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_rel(r.peak_bytes, 7.54e8, 1e-12);
	ck_assert_int_eq(cost_ranks(x, &mod, &clu, &s, &lc), 2);
	ck_assert_rel(x[1].peak_bytes, 4.96e8, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* ZeRO-3's gathered layers (memory_gathered): the toy (embedding 5e6,
 * four blocks of 1e7, head 5e6 parameters), tp 1, pp 1, dp 4, mbs 1, gbs
 * 8 (m = 2), zero 3, fp32 gradients, the user's allowance 0. The largest
 * two neighbours are two blocks (embedding + block 1.5e7, block + block
 * 2e7, block + head 1.5e7): 2 x 2e7 = 4e7 bytes of weights and 4 x 2e7 =
 * 8e7 of gradients unsharded. The shards of the
 * 5e7 parameters: 18 x 5e7 / 4 = 2.25e8 (weights 2.5e7, gradients 5e7,
 * optimizer 1.5e8); one micro-batch of activations (1F1B, one stage): 4 x
 * 34e3 x 1000 = 1.36e8 for the blocks + 4e3 x 1000 = 4e6 for the head,
 * and 1000 x 1000 x (2 + 4) = 6e6 logits: peak 2.25e8 + 1.2e8 + 1.4e8 +
 * 6e6 = 4.91e8. Weights 2.5e7 + 4e7 = 6.5e7, gradients 5e7 + 8e7 =
 * 1.3e8. It fits a GPU of 4.91e8 bytes, not one of 4.9e8; the frame's cap
 * leaves the layers 4.91e8 - 1.2e8 = 3.71e8. ZeRO-2 gathers nothing.
 * TP 2 halves the layers: 2 x 1e7 = 2e7 and 4 x 1e7 = 4e7. An embedding
 * of 3e7 (a large vocabulary) makes embedding + block 4e7 the largest
 * pair: 8e7 and 1.6e8; with bf16 gradients 2 x 4e7 = 8e7. With two stages every rank
 * holds them: rank 1 (2 blocks + head, 2.5e7 parameters) 2 x 2.5e7 / 4 +
 * 4e7 = 5.25e7 of weights. */
START_TEST(test_memory_zero3_gathered)
{
	struct strategy s = strat(1, 1, 1, 4, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	struct cost_rank x[2];
	double w, g;

	toy();
	toy_cluster();
	s.zero = 3;
	s.first[1] = 6;
	gpus[0].mem_bytes = 4.91e8;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	memory_gathered(&mod, &s, &w, &g);
	ck_assert_rel(w, 4e7, 1e-12);
	ck_assert_rel(g, 8e7, 1e-12);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], 3.71e8, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(r.fits);
	ck_assert_rel(r.peak_bytes, 4.91e8, 1e-12);
	ck_assert_rel(r.mem.weights, 6.5e7, 1e-12);
	ck_assert_rel(r.mem.grads, 1.3e8, 1e-12);
	ck_assert_rel(r.mem.optimizer, 1.5e8, 1e-12);
	gpus[0].mem_bytes = 4.9e8;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(!r.fits);
	cost_layers_free(&lc);
	s.zero = 2;
	memory_gathered(&mod, &s, &w, &g);
	ck_assert_rel(w + g, 0, 0);
	s.zero = 3;
	s.tp = 2;
	memory_gathered(&mod, &s, &w, &g);
	ck_assert_rel(w, 2e7, 1e-12);
	ck_assert_rel(g, 4e7, 1e-12);
	s.tp = 1;
	lay[0].params = 3e7;
	memory_gathered(&mod, &s, &w, &g);
	ck_assert_rel(w, 8e7, 1e-12);
	ck_assert_rel(g, 1.6e8, 1e-12);
	s.grad_bytes = 2;
	memory_gathered(&mod, &s, &w, &g);
	ck_assert_rel(g, 8e7, 1e-12);
	s.grad_bytes = 0;
	lay[0].params = 5e6;
	gpus[0].mem_bytes = 80 * GiB;
	s = strat(1, 1, 2, 4, 1, 16, 1000);
	s.zero = 3;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_int_eq(cost_ranks(x, &mod, &clu, &s, &lc), 2);
	ck_assert_rel(x[1].mem.weights, 5.25e7, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* The fit test of an interleaved strategy is per pipeline rank, its chunks
 * together. The toy, pp 2, vp 2, m = 4, zero 0 (18 bytes per parameter),
 * the user's allowance 0: virtual stages [0,3) (embedding + 2 blocks),
 * [3,4), [4,5), [5,6) (head) on ranks 0, 1, 0, 1. In flight per chunk
 * (schedule_inflight; Megatron's table in groups of p = 2: micro-batches
 * 0-1 on chunk 0, 0-1 on chunk 1, 2-3 on chunk 0, ...): rank 0 min(8, 2 +
 * 2 + 1) = 5 forwards, 3 on chunk 0 and 2 on chunk 1; rank 1 0 + 2 + 1 =
 * 3, 2 on chunk 0 and 1 on chunk 1.
 *   rank 0: chunk 0 18 x 2.5e7 + 3 x 68e6 = 6.54e8, chunk 2 18 x 1e7 +
 *           2 x 34e6 = 2.48e8: 9.02e8 (activations 2.04e8 + 6.8e7 =
 *           2.72e8);
 *   rank 1: 18 x 1e7 + 2 x 34e6 + 18 x 5e6 + 1 x 4e6 + 6e6 logits =
 *           3.48e8.
 * The frame's cap for chunk 0: 1e9 / 2 x its share 2 (S + 3 A) / (2 S +
 * (3 + 2) A) of the 4 blocks' states S = 4 x 18e7 = 7.2e8 and activations
 * A = 4 x 34e6 = 1.36e8: 5e8 x 2.256e9 / 2.12e9 = 5.32e8, below chunk 0,
 * yet rank 0 fits as a whole on a 1e9-byte GPU; on 8.8e8 bytes it does
 * not. */
START_TEST(test_fit_interleaved_chunks)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;

	toy();
	toy_cluster();
	s.schedule = SCHED_INTERLEAVED;
	s.vp = 2;
	s.n_stages = 4;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 4;
	s.first[3] = 5;
	s.first[4] = 6;
	gpus[0].mem_bytes = 1e9;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], 5e8 * 2.256e9 / 2.12e9, 1e-12);
	ck_assert_rel(f.inflight[0], 3, 0);
	ck_assert_rel(f.inflight[2], 2, 0);
	ck_assert_rel(f.inflight[1], 2, 0);
	ck_assert_rel(f.inflight[3], 1, 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(r.fits);
	ck_assert_int_eq(r.overflow_rank, -1);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_rel(r.peak_bytes, 9.02e8, 1e-12);
	ck_assert_rel(r.mem.weights, 2 * 3.5e7, 1e-12);
	ck_assert_rel(r.mem.activations, 2.72e8, 1e-12);
	ck_assert_rel(r.mem.logits, 0, 0);
	gpus[0].mem_bytes = 8.8e8;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.overflow_rank, 0);
	/* rank 1 (3.48e8) overflows alone on a GPU of 3.4e8 (on group 1) */
	gpus[0].mem_bytes = 1e9;
	gpus[1].mem_bytes = 3.4e8;
	s.group[1] = 1;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.overflow_rank, 1);
	cost_layers_free(&lc);
}
END_TEST

/* Tied embeddings: the toy with V*h = 1e6 embedding parameters and a head
 * of 1e6 + 1e3 (the tied copy and the final norm), tied, tp 1, dp 2,
 * m = 4, zero 0, the user's allowance 0. One stage holds both: one copy,
 * 1e6 + 4e7 + 1e3 = 4.1001e7 parameters per GPU:
 *   weights 2 x 4.1001e7, gradients 4 x, optimizer 12 x; peak = 18 x
 *   4.1001e7 + 1.4e8 activations + 6e6 logits = 8.84018e8;
 *   the frame's cap gets the duplicate back, 18 x 1e6;
 *   the DP all-reduce 2 x 1/2 x 4 x 4.1001e7 / 1e11 = 1.64004e-3 s and
 *   Adam 4.1001e7 x COMPUTE_ADAM_BYTES / 1e12 run on one copy.
 * On a GPU of 8.9e8 bytes it fits; untied (both copies, 18e6 bytes more,
 * 9.02018e8) it does not. Two stages (embedding on the first, head on the
 * last) keep both copies: no cap bonus. */
START_TEST(test_tied_single_stage)
{
	struct strategy s = strat(1, 1, 1, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	double P = 4.1001e7, opt = P * COMPUTE_ADAM_BYTES / 1e12;

	toy();
	toy_cluster();
	mod.tied = true;
	lay[0].params = 1e6;
	lay[5].params = 1e6 + 1e3;
	gpus[0].mem_bytes = 8.9e8;
	s.first[0] = 0;
	s.first[1] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.state_bytes[5], 18 * (1e6 + 1e3), 1e-12);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], 8.9e8 + 18e6, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.mem.weights, 2 * P, 1e-12);
	ck_assert_rel(r.mem.grads, 4 * P, 1e-12);
	ck_assert_rel(r.mem.optimizer, 12 * P, 1e-12);
	ck_assert_rel(r.peak_bytes, 8.84018e8, 1e-12);
	ck_assert(r.fits);
	ck_assert_rel(r.time.dp, 1.64004e-3, 1e-12);
	ck_assert_rel(r.time.optimizer, opt, 1e-12);
	ck_assert_rel(lc.tail0[6], 1.64004e-3 + opt, 1e-12);
	cost_layers_free(&lc);

	mod.tied = false;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], 8.9e8, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.mem.weights, 2 * (P + 1e6), 1e-12);
	ck_assert_rel(r.peak_bytes, 9.02018e8, 1e-12);
	ck_assert(!r.fits);
	ck_assert_rel(r.time.dp, 4 * (P + 1e6) / 1e11, 1e-12);
	cost_layers_free(&lc);

	/* a profile's head without the matrix (0 parameters): nothing to
	 * count once, 1e6 + 4e7 parameters, no NaN */
	mod.tied = true;
	lay[5].params = 0;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[0], 8.9e8, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.mem.weights, 2 * 4.1e7, 1e-12);
	ck_assert(isfinite(r.peak_bytes));
	cost_layers_free(&lc);
	lay[5].params = 1e6 + 1e3;
	s = strat(1, 1, 2, 2, 1, 8, 1000);
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.cap[1], 8.9e8, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* The frame of an interleaved toy: pp 2, vp 2, m 4, rank 0 on group 0 and
 * rank 1 on group 1. Virtual stages 0..3 on ranks 0, 1, 0, 1: sends into
 * stages 1, 2 (the wrap-around 1 -> 0) and 3, none into the first; each
 * between the groups, 8e-5 s (see test_evaluate_toy in check_evaluate.c).
 * In flight (test_fit_interleaved_chunks): rank 0 3 on chunk 0 and 2 on
 * chunk 1, rank 1 2 and 1. Weights a = 4*2 - 1 = 7, b = 1/2. Cap (80 GiB -
 * the user's 2 GiB) / 2 per chunk, times the chunk's share 2 (S + i A) /
 * (2 S + (2 + 1) A) on rank 1, S = 7.2e8 and A = 1.36e8 (the 4 blocks'
 * states and activations; the user's allowance, no fragmentation share):
 * 2 x 9.92e8 / 1.848e9 for stage 1, 2 x 8.56e8 / 1.848e9 for stage 3. */
START_TEST(test_frame_interleaved)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;

	toy();
	toy_cluster();
	clu.mem_allowance = 2 * GiB;
	s.schedule = SCHED_INTERLEAVED;
	s.vp = 2;
	s.n_stages = 4;
	s.group[1] = 1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_int_eq(f.n_stages, 4);
	ck_assert_rel(f.a, 7, 0);
	ck_assert_rel(f.b, 0.5, 0);
	ck_assert_rel(f.send[0], 0, 0);
	for (int k = 1; k < 4; k++)
		ck_assert_rel(f.send[k], 8e-5, 1e-12);
	ck_assert_int_eq(f.group[2], 0);
	ck_assert_int_eq(f.group[3], 1);
	ck_assert_rel(f.inflight[0], 3, 0);
	ck_assert_rel(f.inflight[2], 2, 0);
	ck_assert_rel(f.inflight[1], 2, 0);
	ck_assert_rel(f.inflight[3], 1, 0);
	ck_assert_rel(f.cap[1], 39 * GiB * 1.984e9 / 1.848e9, 1e-12);
	ck_assert_rel(f.cap[3], 39 * GiB * 1.712e9 / 1.848e9, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_memory_gpt3);
	tcase_add_test(tc, test_memory_overflow);
	tcase_add_test(tc, test_memory_moe);
	tcase_add_test(tc, test_memory_moment_bytes);
	tcase_add_test(tc, test_allowance_parts);
	tcase_add_test(tc, test_memory_recompute_modules);
	tcase_add_test(tc, test_memory_offload);
	tcase_add_test(tc, test_memory_offload_moe);
	tcase_add_test(tc, test_memory_grad_bytes);
	tcase_add_test(tc, test_memory_zero3_gathered);
	tcase_add_test(tc, test_attention_memory);
	tcase_add_test(tc, test_allowance);
	tcase_add_test(tc, test_fit_interleaved_chunks);
	tcase_add_test(tc, test_zb_v_placement);
	tcase_add_test(tc, test_tied_single_stage);
	tcase_add_test(tc, test_frame_interleaved);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
