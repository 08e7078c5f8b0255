/* check_cost.c: one layer's cost against hand computations: compute_layer's
 * roofline per part (GEMM efficiency, FP8, attention and memory-bound
 * kernels), measured profiles, Eq. 3's FLOPs, cost_layers' TP / CP comm. */
#define TESTUTIL_COST_FIXTURE
#include <stdbool.h>
#include <string.h>

#include "cluster.h"
#include "compute.h"
#include "cost.h"
#include "cost_int.h"
#include "model.h"
#include "strategy.h"
#include "testutil.h"
#include "util.h"

/* The GPT block of test_compute_analytic (h = 4096, a = 32, s = 2048,
 * f = 16384 GeLU, learned positions) per micro-batch of one sequence on
 * group 0's GPU with eff_max e, eff_half 0, at tp 2:
 *   F - A = 24h^2 = 402653184 FLOPs per token, A = 4sh = 33554432;
 *   n = 2048 / 2 = 1024, tok = 2048;
 *   memory bytes per token (no rotary: learned positions): without SP
 *   (2 NORM_FUSED + 2 RESIDUAL) * 8192 + GeLU 2 * 16384 * 2 / 2 = 32768;
 *   with SP the norms and residuals on half the rows. */
static struct part gpt_block_tp2(double e, bool sp)
{
	double P = gpus[0].peak_flops, bw = gpus[0].hbm_bw * COMPUTE_HBM_EFF;
	struct part x = { 0 };

	x.gemm = 402653184.0 * 1024 / (P * e);
	x.attn = CAUSAL_SHARE * 33554432.0 * 1024 / (P * FLASH_RATE * e);
	x.mem = ((2 * NORM_FUSED + 2 * RESIDUAL) * 8192 * (sp ? 0.5 : 1) + 32768) *
		2048 / bw;
	return finish(x);
}

/* Narayanan 2021 Sec. 5.1 with the roofline per layer part: GPT h = 4096,
 * s = 2048, tp = 2, eff_max 0.5 of 312 TFLOP/s, HBM 2 TB/s (gpt_block_tp2
 * has the per-part formulas). */
START_TEST(test_compute_analytic)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time t;
	struct part x;
	double bw = 2e12 * COMPUTE_HBM_EFF, mem;

	gpt(2, 4096, 32, 51200, 2048);
	gpus[0].eff_max = 0.5;
	x = gpt_block_tp2(0.5, false);
	ck_assert_int_eq(compute_layer(&t, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(t.gemm_fwd, x.gemm, 1e-12);
	ck_assert_rel(t.attn_fwd, x.attn, 1e-12);
	ck_assert_rel(t.mem_fwd, x.mem, 1e-12);
	ck_assert_rel(t.fwd, x.fwd, 1e-12);
	ck_assert_rel(t.bwd, x.bwd, 1e-12);
	ck_assert_rel(t.recompute, 0, 0);
	/* selective recomputation reruns the attention core, full the whole
	 * forward (overhead included). */
	s.recompute = RECOMPUTE_SELECTIVE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, x.attn, 1e-12);
	s.recompute = RECOMPUTE_FULL;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, x.fwd, 1e-12);
	/* the head is never recomputed: one h x V/t GEMM, 2hV * 1024 FLOPs;
	 * the final norm on the 2048 replicated rows, NORM_FUSED * 8192 bytes,
	 * and the loss over the 51200 / 2 logits of the GPU's shard: 38 bytes
	 * a logit forward (the fp32 cast 2 + 4, max 4, subtract 8, exp 8,
	 * sum 4, divide 8), 14 backward (multiply 8, the cast back 4 + 2),
	 * the norm's backward 2x its forward. */
	compute_layer(&t, &mod, 3, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, 0, 0);
	ck_assert_rel(t.gemm_fwd, 2.0 * 4096 * 51200 * 1024 / (312e12 * 0.5), 1e-12);
	ck_assert_rel(t.attn_fwd, 0, 0);
	mem = (NORM_FUSED * 8192 + 38.0 * 25600) * 2048 / bw;
	ck_assert_rel(t.mem_fwd, mem, 1e-12);
	ck_assert_rel(t.fwd, t.gemm_fwd + mem + O, 1e-12);
	ck_assert_rel(t.bwd,
		      2 * t.gemm_fwd + 2 * (NORM_FUSED * 8192 * 2048 / bw + O) + 14.0 * 25600 * 2048 / bw,
		      1e-12);
	/* the embedding: no FLOPs; it writes its row and adds the learned
	 * position, 3 * 8192 bytes per token. */
	compute_layer(&t, &mod, 0, &gpus[0], &s, NULL);
	mem = 3 * 8192.0 * 2048 / bw;
	ck_assert_rel(t.gemm_fwd, 0, 0);
	ck_assert_rel(t.fwd, mem + O, 1e-12);
	ck_assert_rel(t.bwd, MEM_BWD * (mem + O), 1e-12);
	ck_assert_rel(t.recompute, 0, 0);
	/* sequence parallelism splits the norms and residual adds. */
	s.recompute = RECOMPUTE_NONE;
	s.sp = true;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.mem_fwd, gpt_block_tp2(0.5, true).mem, 1e-12);
	/* seq 4096 on a model built at 2048: the GEMM FLOPs per token stay,
	 * on twice the tokens (x2); the attention per token doubles, on twice
	 * the tokens (x4); the memory-bound kernels per token stay (x2). */
	s.sp = false;
	s.seq = 4096;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 2 * x.gemm, 1e-12);
	ck_assert_rel(t.attn_fwd, 4 * x.attn, 1e-12);
	ck_assert_rel(t.mem_fwd, 2 * x.mem, 1e-12);
	/* CP 2 halves every part per GPU (not the overhead). */
	s.cp = 2;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, x.gemm, 1e-12);
	ck_assert_rel(t.attn_fwd, 2 * x.attn, 1e-12);
	ck_assert_rel(t.mem_fwd, x.mem, 1e-12);
	ck_assert_rel(t.fwd, x.gemm + 2 * x.attn + x.mem + O, 1e-12);
}
END_TEST

/* torchtitan without torch.compile (strategy.unfused_pointwise): eager
 * RoPE moves 10 bf16 rows of q and k where the fused kernel moves 2, eager
 * SwiGLU 5 rows of f where the fused one moves 3 (compute.h: 20 bytes an
 * element for apply_rotary_emb's fp32 complex round trip). A SwiGLU block
 * with rotary positions, h 4096, a = g = 32, d 128, f 11008, at TP 2 with
 * micro-batches of one 2048-token sequence: (8 x 64 x 128 + 2 x 11008) x
 * 2 / 2 = 87552 bytes a token more, 2048 tokens at hbm_bw x
 * COMPUTE_HBM_EFF; the backward twice that. */
START_TEST(test_unfused_pointwise)
{
	struct layer_time fused, eager;
	struct strategy s;

	gpt(2, 4096, 32, 51200, 2048);
	mod.ffn_kind = FFN_SWIGLU;
	mod.ffn = 11008;
	mod.learned_pos = false;
	gpus[0].hbm_bw = 2e12;
	s = strat(2, 1, 1, 1, 1, 1, 2048);
	ck_assert_int_eq(compute_layer(&fused, &mod, 1, &gpus[0], &s, NULL), 0);
	s.unfused_pointwise = true;
	ck_assert_int_eq(compute_layer(&eager, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(eager.mem_fwd - fused.mem_fwd, 87552.0 * 2048 / (2e12 * COMPUTE_HBM_EFF), 1e-9);
	ck_assert_rel(eager.fwd - fused.fwd, 87552.0 * 2048 / (2e12 * COMPUTE_HBM_EFF), 1e-9);
	ck_assert_rel(eager.bwd - fused.bwd, 2 * 87552.0 * 2048 / (2e12 * COMPUTE_HBM_EFF), 1e-9);
}
END_TEST

/* Measured points of a block on A100 at tp 2, seq 2048: mbs 1 (1.0 s,
 * 2.2 s) and mbs 4 (3.4 s, 7.0 s); others for tp 4 and another GPU. HBM
 * bandwidth 0 leaves the analytic split GEMMs + attention only. */
START_TEST(test_compute_measured)
{
	struct layer_measure pts[5] = {
		{ "A100", 2, 1, 2048, 1.0, 2.2 },
		{ "A100", 2, 4, 2048, 3.4, 7.0 },
		{ "A100", 4, 1, 2048, 9.0, 9.0 },
		{ "H100", 2, 2, 2048, 5.0, 5.0 },
		{ "A100", 2, 16, 2048, 10.0, 0 },
	};
	struct strategy s = strat(2, 1, 1, 1, 2, 2, 2048);
	struct layer_time t;
	struct err e = { "" };
	/* The analytic split at eff_max 1: GEMMs (F - A) n / P, flash
	 * attention CAUSAL_SHARE A n / (P FLASH_RATE), A / (F - A) = 4sh /
	 * 24h^2 = 1/12: the attention core is CAUSAL_SHARE / (12 FLASH_RATE +
	 * CAUSAL_SHARE) of the (measured) forward. */
	double share = CAUSAL_SHARE / (12 * FLASH_RATE + CAUSAL_SHARE);
	double w, wa;

	gpt(2, 4096, 32, 51200, 2048);
	gpus[0].hbm_bw = gpus[1].hbm_bw = 0;
	lay[1].measure = pts;
	lay[1].n_measure = 4;
	/* mbs 2, a third of the way from 1 to 4: 1 + (3.4-1)/3 = 1.8,
	 * 2.2 + (7-2.2)/3 = 3.8. */
	ck_assert_int_eq(compute_layer(&t, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(t.fwd, 1.8, 1e-12);
	ck_assert_rel(t.bwd, 3.8, 1e-12);
	ck_assert_rel(t.attn_fwd, 1.8 * share, 1e-12);
	ck_assert_rel(t.gemm_fwd, 1.8 * (1 - share), 1e-12);
	ck_assert_rel(t.mem_fwd, 0, 0);
	/* selective recompute: the attention core's share of the forward. */
	s.recompute = RECOMPUTE_SELECTIVE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, 1.8 * share, 1e-12);
	/* exactly measured; beyond the points, proportional: mbs 8 from mbs 4
	 * gives 6.8 and 14. */
	s.mbs = 1;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 1.0, 1e-12);
	s.mbs = 8;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 6.8, 1e-12);
	ck_assert_rel(t.bwd, 14.0, 1e-12);
	/* CP 2 splits the measured time: mbs 2 -> 0.9, 1.9. */
	s.mbs = 2;
	s.cp = 2;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 0.9, 1e-12);
	ck_assert_rel(t.bwd, 1.9, 1e-12);
	/* no point at tp 8 for A100: analytic, GEMMs 402653184 * 2 * 2048 / 8
	 * FLOPs and the attention core 33554432 * 2 * 2048 / 8 at 312 TFLOP/s,
	 * plus the overhead. */
	s = strat(8, 1, 1, 1, 2, 2, 2048);
	w = 402653184.0 * 2 * 2048 / 8;
	wa = 33554432.0 * 2 * 2048 / 8;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, (w + CAUSAL_SHARE * wa / FLASH_RATE) / 312e12 + O, 1e-12);
	/* the other GPU type has no points at all: analytic, at tp 2 four
	 * times the work on half the peak. */
	s.tp = 2;
	compute_layer(&t, &mod, 1, &gpus[1], &s, NULL);
	ck_assert_rel(t.fwd, 4 * (w + CAUSAL_SHARE * wa / FLASH_RATE) / 156e12 + O, 1e-12);
	/* a point without a backward (bwd_s 0): 2 x forward. mbs 32 from the
	 * mbs 16 point: 20 s forward, 40 s backward. */
	lay[1].n_measure = 5;
	s.mbs = 32;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 20.0, 1e-12);
	ck_assert_rel(t.bwd, 40.0, 1e-12);
	/* an unusable point is an error. */
	pts[1].mbs = 0;
	s.mbs = 2;
	ck_assert_int_eq(compute_layer(&t, &mod, 1, &gpus[0], &s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "layer 1"));
	ck_assert_ptr_nonnull(strstr(e.msg, "A100"));
}
END_TEST

/* Narayanan et al. 2021 Eq. 3: with full recomputation a GPT iteration
 * executes F = 96 B s L h^2 (1 + s/(6h) + V/(16 L h)) FLOPs. Our accounting
 * per token: blocks 3 x forward + 1 recomputed forward = 4 (24h^2 + 4sh) =
 * 96h^2 + 16sh; head 3 x 2hV = 6hV (not recomputed); embedding 0. Times
 * B s: 96 B s L h^2 + 16 B s^2 L h + 6 B s h V, which is Eq. 3 expanded.
 * Without recomputation 72 B s L h^2 (1 + s/(6h) + V/(12 L h))
 * (Korthikanti 2022). Config: the 145.6B row of Table 1 (L 80, h 12288,
 * a 96, V 51200, s 2048, B 2304). */
START_TEST(test_eq3_flops)
{
	struct strategy s = strat(8, 1, 8, 24, 1, 2304, 2048);
	double L = 80, h = 12288, V = 51200, S = 2048, B = 2304;
	double hw = 0, model = 0;

	gpt(80, 12288, 96, 51200, 2048);
	s.recompute = RECOMPUTE_FULL;
	for (int l = 0; l < mod.n_layer; l++) {
		double F = compute_flops_per_token(&mod, l, 2048);

		hw += 3 * F + compute_recompute_flops_per_token(&mod, l, &s);
		model += 3 * F;
	}
	ck_assert_rel(B * S * hw,
		      96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * L * h)),
		      1e-12);
	ck_assert_rel(B * S * model,
		      72 * B * S * L * h * h * (1 + S / (6 * h) + V / (12 * L * h)),
		      1e-12);
}
END_TEST

/* Toy block at tp 2, SP: toy_block(1e12, 1e12, 2, 1, true), GEMMs 0.5 s.
 * TP message 1000 * 1000 * 2 = 2e6 bytes; a block runs 2 x (all-gather +
 * reduce-scatter) over 2 GPUs each way, 2 x (1/2 + 1/2) x 2e6 / bw =
 * 4e6 / bw: 4e-5 s forward and 4e-5 backward at 100 GB/s, exposed whole
 * without --tp-comm-overlap. Full recompute adds the forward and its
 * collectives. */
START_TEST(test_layers_tp)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 1000);
	struct layer_costs lc = { 0 };
	struct part B = toy_block(1e12, 1e12, 2, 1, true);

	toy();
	toy_cluster();
	s.sp = true;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + 8e-5, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + 4e-5, 1e-12);
	cost_layers_free(&lc);
	s.recompute = RECOMPUTE_FULL;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + B.fwd + 12e-5, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + 4e-5, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* --tp-comm-overlap on the toy at tp 2 with SP (test_layers_tp): a block's
 * collectives of comm = 4e6 / bw each way hide under its GEMMs, 0.5 s
 * forward and 1 s backward, exposed x = max(comm / 2, comm - GEMMs), and
 * the hidden rest costs d = COST_TP_OVERLAP_DRAG of itself: x + d (comm -
 * x):
 * - at 100 GB/s, comm 4e-5: the first chunk, 2e-5 + d 2e-5 each way;
 * - at 1 MB/s, comm 4 s: forward max(2, 3.5) = 3.5 + d 0.5, backward
 *   max(2, 3) = 3 + d 1; full recomputation reruns the forward's.
 * The embedding's reduce-scatter / all-gather (1e6 / bw each) and the
 * head's all-gather + 3 fp32 all-reduces of 1000 * 4 bytes (1e6 + 3 *
 * 4000) / bw forward and reduce-scatter 1e6 / bw backward stay exposed.
 * A single stage, m = 1: tp_hidden = 4 blocks x (2 comm - exposed). */
START_TEST(test_tp_overlap)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 2, 1, true);
	struct part E = toy_emb(1e12, 1);
	double eh = (1e6 + 1e6 + 1e6 + 12000 + 1e6) / 1e11; /* emb + head comm */
	const double d = COST_TP_OVERLAP_DRAG, x = 2e-5 + d * 2e-5;
	const double xf = 3.5 + d * 0.5, xb = 3 + d * 1;

	toy();
	toy_cluster();
	s.sp = true;
	s.tp_overlap = true;
	s.first[0] = 0;
	s.first[1] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + 2 * x, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + x, 1e-12);
	ck_assert_rel(lc.time[0], fb(E) + 2e6 / 1e11, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp, 4 * 2 * x + eh, 1e-12);
	ck_assert_rel(r.time.tp_hidden, 4 * (8e-5 - 2 * x), 1e-12);
	cost_layers_free(&lc);
	/* overlap off: exposed whole, nothing hidden */
	s.tp_overlap = false;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp, 4 * 8e-5 + eh, 1e-12);
	ck_assert_rel(r.time.tp_hidden, 0, 1e-15);
	cost_layers_free(&lc);
	/* a slow link: the GEMMs cover only part of it */
	s.tp_overlap = true;
	groups[0].intra_bw = 1e6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + xf + xb, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + xf, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp_hidden, 4 * (8 - xf - xb), 1e-12);
	cost_layers_free(&lc);
	s.recompute = RECOMPUTE_FULL;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + B.fwd + xf + xb + xf, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp_hidden, 4 * (12 - 2 * xf - xb), 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* Toy block at cp 2: toy_block(1e12, 1e12, 1, 2, false), of which the
 * flash attention core CAUSAL_SHARE * 4e6 * 500 / (1e12 * FLASH_RATE)
 * (about 1.8e-3 s). K,V shard 2 * 500 * 8 * 125 * 2 = 2e6 bytes, 1 ring
 * step, overlapped with the core's work on the rank's own K,V block, half
 * of it (n + 1 = 2 blocks). At 100 GB/s (2e-5 s) it hides. On a 0.1 GB/s
 * link it takes 0.02 s: 0.02 - a/2 exposed forward; backward twice the
 * step under half the core's backward, ab = a * FLASH_BWD_FLOPS /
 * FLASH_BWD_RATE (its FLOPs at its rate): 0.04 - ab/2 exposed. Selective
 * recompute adds the core (a) and its ring (0.02 - a/2). */
START_TEST(test_layers_cp)
{
	struct strategy s = strat(1, 2, 1, 1, 1, 1, 1000);
	struct layer_costs lc = { 0 };
	struct part B = toy_block(1e12, 1e12, 1, 2, false);
	double a = B.attn, ab = a * FLASH_BWD_FLOPS / FLASH_BWD_RATE;

	toy();
	toy_cluster();
	ck_assert(a > 4e-5 && a < 0.02 && ab < 0.04);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B), 1e-12);
	cost_layers_free(&lc);
	groups[0].intra_bw = 1e8;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + 0.02 - a / 2 + 0.04 - ab / 2, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + 0.02 - a / 2, 1e-12);
	cost_layers_free(&lc);
	s.recompute = RECOMPUTE_SELECTIVE;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + 0.02 - a / 2 + 0.04 - ab / 2 + a + 0.02 - a / 2, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* Attention kernels on the GPT block of test_compute_analytic (tp 2, no
 * SP, eff_max 0.5, 312 TFLOP/s, HBM 2 TB/s), wa = A n = 33554432 * 1024
 * FLOPs of attention core per GPU:
 * - flash (FA-2): CAUSAL_SHARE wa / (P FLASH_RATE eff_max); backward x
 *   FLASH_BWD_FLOPS / FLASH_BWD_RATE;
 * - flash1: FLASH1_RATE in place of FLASH_RATE;
 * - a GPU's own flash_eff (0.3 here) replaces FLASH_RATE x eff_max, and
 *   flash1 runs at FLASH1_RATE / FLASH_RATE of it;
 * - fused-softmax: the whole wa at P eff_max (the causal share is what
 *   flash skips: flash / non-flash compute = CAUSAL_SHARE / FLASH_RATE),
 *   plus the softmax traffic SCORE_FUSED bytes-per-element x a/t = 16
 *   scores of s = 2048 keys x 2 bytes per token on 2048 tokens over the
 *   HBM; backward 2 x the GEMMs + MEM_BWD x the traffic;
 * - unfused: SCORE_UNFUSED. */
START_TEST(test_attention_kernels)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time t;
	struct part x;
	double P = 312e12, wa = 33554432.0 * 1024, bw = 2e12 * COMPUTE_HBM_EFF;
	double core = wa / (P * 0.5), sm;

	gpt(2, 4096, 32, 51200, 2048);
	gpus[0].eff_max = 0.5;
	x = gpt_block_tp2(0.5, false);
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, CAUSAL_SHARE * wa / (P * FLASH_RATE * 0.5), 1e-12);
	ck_assert_rel(t.attn_fwd * FLASH_RATE / CAUSAL_SHARE, core, 1e-12);
	ck_assert_rel(t.bwd, 2 * x.gemm + t.attn_fwd * FLASH_BWD_FLOPS / FLASH_BWD_RATE + MEM_BWD * (x.mem + O), 1e-12);
	s.attn = ATTN_FLASH1;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, CAUSAL_SHARE * wa / (P * FLASH1_RATE * 0.5), 1e-12);
	ck_assert_rel(t.fwd, x.gemm + t.attn_fwd + x.mem + O, 1e-12);
	gpus[0].flash_eff = 0.3;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, CAUSAL_SHARE * wa / (P * 0.3 * FLASH1_RATE / FLASH_RATE), 1e-12);
	s.attn = ATTN_FLASH;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, CAUSAL_SHARE * wa / (P * 0.3), 1e-12);
	gpus[0].flash_eff = 0;

	s.attn = ATTN_FUSED_SOFTMAX;
	sm = SCORE_FUSED * 16 * 2048 * 2.0 * 2048 / bw;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, core + sm, 1e-12);
	ck_assert_rel(t.gemm_fwd, x.gemm, 1e-12);
	ck_assert_rel(t.mem_fwd, x.mem, 1e-12);
	ck_assert_rel(t.fwd, x.gemm + core + sm + x.mem + O, 1e-12);
	ck_assert_rel(t.bwd, 2 * x.gemm + 2 * core + MEM_BWD * sm + MEM_BWD * (x.mem + O), 1e-12);
	s.recompute = RECOMPUTE_SELECTIVE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, core + sm, 1e-12);
	s.recompute = RECOMPUTE_NONE;
	s.attn = ATTN_UNFUSED;
	sm = SCORE_UNFUSED * 16 * 2048 * 2.0 * 2048 / bw;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, core + sm, 1e-12);
	ck_assert_rel(t.bwd, 2 * x.gemm + 2 * core + MEM_BWD * sm + MEM_BWD * (x.mem + O), 1e-12);
	/* a window of 512 on the block: flash attention visits 512 (2 x 2048
	 * - 512 + 1) / 2049 keys a query instead of 2048; the unfused kernel
	 * still computes and masks all 2048 */
	mod.sliding_window = 512;
	mod.sliding_every = 1;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, core + sm, 1e-12);
	s.attn = ATTN_FLASH;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, CAUSAL_SHARE * wa * (512.0 * 3585 / 2049 / 2048) / (P * FLASH_RATE * 0.5),
		      1e-12);
	mod.sliding_window = mod.sliding_every = 0;
	/* the head and the embedding have no attention core: the kernel does
	 * not change them. */
	{
		struct layer_time h0, h1;

		s.attn = ATTN_FLASH;
		compute_layer(&h0, &mod, 3, &gpus[0], &s, NULL);
		s.attn = ATTN_UNFUSED;
		compute_layer(&h1, &mod, 3, &gpus[0], &s, NULL);
		ck_assert_rel(h1.fwd, h0.fwd, 0);
		ck_assert_rel(h1.attn_fwd, 0, 0);
	}
}
END_TEST

/* Memory-bound kernels on the GPT block (test_compute_analytic) and the
 * toy's MLP activation:
 * - unfused norms move NORM_UNFUSED instead of NORM_FUSED bytes per element
 *   of the row: a block's two norms add 2 (NORM_UNFUSED - NORM_FUSED) *
 *   8192 bytes per token (rows replicated at tp 2 without SP, half with
 *   SP), the head's one norm half that; the embedding has none;
 * - the activation reads and writes 2 rows of f/t for GeLU and squared
 *   ReLU, 3 for SwiGLU: + 16384 * 2 / 2 = 16384 bytes per token. */
START_TEST(test_norm_and_activation_kernels)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time f, u;
	double bw = 2e12 * COMPUTE_HBM_EFF, d = (NORM_UNFUSED - NORM_FUSED) * 8192 * 2048 / bw;

	gpt(2, 4096, 32, 51200, 2048);
	compute_layer(&f, &mod, 1, &gpus[0], &s, NULL);
	s.unfused_norm = true;
	compute_layer(&u, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(u.mem_fwd - f.mem_fwd, 2 * d, 1e-9);
	ck_assert_rel(u.bwd - f.bwd, MEM_BWD * 2 * d, 1e-9);
	ck_assert_rel(u.gemm_fwd, f.gemm_fwd, 0);
	compute_layer(&u, &mod, 3, &gpus[0], &s, NULL);
	s.unfused_norm = false;
	compute_layer(&f, &mod, 3, &gpus[0], &s, NULL);
	ck_assert_rel(u.mem_fwd - f.mem_fwd, d, 1e-9);
	compute_layer(&f, &mod, 0, &gpus[0], &s, NULL);
	s.unfused_norm = true;
	compute_layer(&u, &mod, 0, &gpus[0], &s, NULL);
	ck_assert_rel(u.fwd, f.fwd, 0);
	/* with SP the norms run on half the rows */
	s.sp = true;
	compute_layer(&u, &mod, 1, &gpus[0], &s, NULL);
	s.unfused_norm = false;
	compute_layer(&f, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(u.mem_fwd - f.mem_fwd, d, 1e-9);
	/* the activation */
	s.sp = false;
	compute_layer(&f, &mod, 1, &gpus[0], &s, NULL);
	mod.ffn_kind = FFN_RELU2;
	compute_layer(&u, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(u.mem_fwd, f.mem_fwd, 0);
	mod.ffn_kind = FFN_SWIGLU;
	compute_layer(&u, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(u.mem_fwd - f.mem_fwd, 16384.0 * 2048 / bw, 1e-9);
}
END_TEST

/* Un-fused gradient accumulation on the GPT block at tp 2 (12 h^2 + 13 h =
 * 201326592 + 53248 = 201379840 parameters, 100689920 per GPU): the
 * backward adds a pass reading and writing the gradient buffer and reading
 * the new gradient, (2 G + 2) bytes per parameter, G = 4 (fp32) or 2:
 * 100689920 * 10 and * 6 bytes over 2e12 * COMPUTE_HBM_EFF; the forward
 * does not change. */
START_TEST(test_grad_acc_unfused)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time f, u;
	double bw = 2e12 * COMPUTE_HBM_EFF, P = (12.0 * 4096 * 4096 + 13 * 4096) / 2;

	gpt(2, 4096, 32, 51200, 2048);
	compute_layer(&f, &mod, 1, &gpus[0], &s, NULL);
	s.grad_acc_unfused = true;
	compute_layer(&u, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(u.bwd - f.bwd, P * 10 / bw, 1e-9);
	ck_assert_rel(u.fwd, f.fwd, 0);
	s.grad_bytes = 2;
	compute_layer(&u, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(u.bwd - f.bwd, P * 6 / bw, 1e-9);
}
END_TEST

/* A block whose GEMMs are exactly its matmul FLOPs: h = 1000, a = g = 8 of
 * d = 125, f = 4000 GeLU, s = 1000, V = 1000. FLOPs per token of each GEMM
 * at tp 1: QKV 2h(ad + 2gd) = 6e6, output 2adh = 2e6, MLP up 2hf = 8e6,
 * down 8e6: F - A = 24e6, F = 28e6 with A = 4sad = 4e6. The head: 2hV =
 * 2e6. On a GPU of P = 1 TFLOP/s, eff_max 1, eff_half 1 GFLOP, no HBM
 * bandwidth (no memory-bound time), one sequence of 1000 tokens: GEMMs of
 * w_i = 6e9, 2e9, 8e9, 8e9 FLOPs, each at eff = w_i / (w_i + 1e9), so
 * w_i / (P eff) = (w_i + 1e9) / P and the block's GEMMs take
 * (24e9 + 4 x 1e9) / 1e12 = 0.028 s, while one GEMM of the same 24e9
 * FLOPs takes (24e9 + 1e9) / 1e12 = 0.025 s. */
static void gemm_model(void)
{
	mod = (struct model){ .name = "g", .hidden = 1000, .layers = 1, .heads = 8, .kv_heads = 8, .head_dim = 125, .ffn = 4000, .ffn_kind = FFN_GELU, .vocab = 1000, .seq = 1000, .dtype_bytes = 2, .layer = lay, .n_layer = 3 };
	lay[0] = (struct layer){ .kind = LAYER_EMBEDDING, .params = 1e6 };
	lay[1] = (struct layer){ .kind = LAYER_BLOCK, .params = 12e6, .flops_per_token = 28e6 };
	lay[2] = (struct layer){ .kind = LAYER_HEAD, .params = 1e6, .flops_per_token = 2e6 };
	gpus[0] = (struct gpu_type){ .name = "G", .peak_flops = 1e12, .mem_bytes = 80 * GiB, .eff_max = 1, .eff_half_flop = 1e9 };
}

START_TEST(test_gemm_efficiency)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 1, 1000);
	struct layer_time t;

	gemm_model();
	/* the curve: half of eff_max at the half point, 3/4 at three times */
	ck_assert_rel(compute_eff(&gpus[0], 1e9), 0.5, 1e-15);
	ck_assert_rel(compute_eff(&gpus[0], 3e9), 0.75, 1e-15);
	ck_assert_rel(compute_eff(&gpus[0], 0), 0, 0);
	ck_assert(compute_eff(&gpus[0], 2e9) < compute_eff(&gpus[0], 8e9));
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.028, 1e-12);
	/* the flash kernel runs at FLASH_RATE x eff_max, off the GEMM curve:
	 * CAUSAL_SHARE * 4e9 / (1e12 * FLASH_RATE) */
	ck_assert_rel(t.attn_fwd, CAUSAL_SHARE * 4e9 / (1e12 * FLASH_RATE), 1e-12);
	ck_assert_rel(t.fwd, 0.028 + t.attn_fwd + O, 1e-12);
	ck_assert_rel(t.bwd, 0.056 + t.attn_fwd * FLASH_BWD_FLOPS / FLASH_BWD_RATE + MEM_BWD * O, 1e-12);
	/* the head with the block's 24e6 FLOPs per token is one GEMM of
	 * 24e9: faster than the block's four smaller ones. */
	compute_layer(&t, &mod, 2, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 3e9 / 1e12, 1e-12);
	lay[2].flops_per_token = 24e6;
	compute_layer(&t, &mod, 2, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.025, 1e-12);
	/* tp 8: each GEMM an eighth, (3e9 + 4e9) / 1e12 = 7e-3 s, twice the
	 * 0.028 / 8 a size-blind efficiency would give. */
	s.tp = 8;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 7e-3, 1e-12);
	/* mbs 2 at tp 1: (48e9 + 4e9) / 1e12. */
	s.tp = 1;
	s.mbs = 2;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.052, 1e-12);
	/* without flash the attention core is one batched GEMM of wa = 4e9
	 * on the curve: (4e9 + 1e9) / 1e12 (no HBM: no softmax traffic). */
	s.mbs = 1;
	s.attn = ATTN_FUSED_SOFTMAX;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.attn_fwd, 5e-3, 1e-12);
	/* MoE: 8 experts of f = 4000, top 2, ep 1: per token QKV 6e6, output
	 * 2e6, 2 experts x (8e6 + 8e6): F - A = 40e6 (router left out). The
	 * experts' GEMMs see 1000 x 2 / 8 = 250 tokens each, w_one = 8e6 x
	 * 250 = 2e9: up and down 16e9 FLOPs each at eff 2/3: 16e9 x 1.5 /
	 * 1e12 = 0.024 each; QKV 6e9 x 7/6 / 1e12 = 7e-3; output 2e9 x 3/2 /
	 * 1e12 = 3e-3: 0.058 s. At ep 8 each GPU's expert sees 2000 tokens,
	 * w_one = 1.6e10, eff 16/17: 2 x 16e9 x 17/16 / 1e12 + 0.01 = 0.044
	 * with every rank equally loaded; the busiest of 8 ranks gets lam =
	 * 1 + z sqrt((7/8) / 2000) of it, z = Phi^-1(7.625 / 8.25) =
	 * 1.4342001596863794 (Python's statistics.NormalDist), lam =
	 * 1.0299984485914595: w_one = 1.6e10 lam, 2 x 16e9 lam (w_one + 1e9) /
	 * w_one / 1e12 + 0.01 = 0.044959950354926705. */
	s.attn = ATTN_FLASH;
	mod.experts = 8;
	mod.top_k = 2;
	mod.moe_ffn = 4000;
	lay[1].flops_per_token = 44e6;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.058, 1e-12);
	s.ep = 8;
	s.dp = 8;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.044959950354926705, 1e-9);
}
END_TEST

/* FP8 GEMMs (gemm_model's block, 24e9 FLOPs of GEMMs on one sequence):
 * - a GPU with peak_fp8 2 TFLOP/s and fp8_eff_max 0.8, no GEMM curve: the
 *   block's GEMMs 24e9 / (2e12 x 0.8) = 0.015 s (bf16: 0.024); the
 *   attention core, the head (2e9 / 1e12) and the embedding stay bf16;
 * - fp8_eff_max 0 reads as eff_max (1): 24e9 / 2e12 = 0.012;
 * - with the curve (eff_half 1 GFLOP bf16) the FP8 half point scales by
 *   the peaks to 2 GFLOP: sum (w_i + 2e9) / (2e12 x 0.8) = 32e9 / 1.6e12
 *   = 0.02 (bf16: 28e9 / 1e12);
 * - a GPU without an FP8 peak ignores s->fp8. */
START_TEST(test_fp8)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 1, 1000);
	struct layer_time t, b;

	gemm_model();
	gpus[0].eff_half_flop = 0;
	compute_layer(&b, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(b.gemm_fwd, 0.024, 1e-12);
	s.fp8 = true;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.024, 1e-12);
	ck_assert_rel(t.fwd, b.fwd, 0);
	gpus[0].peak_fp8_flops = 2e12;
	gpus[0].fp8_eff_max = 0.8;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.015, 1e-12);
	ck_assert_rel(t.attn_fwd, b.attn_fwd, 0);
	ck_assert_rel(t.fwd, b.fwd - 0.009, 1e-12);
	ck_assert_rel(t.bwd, b.bwd - 0.018, 1e-12);
	compute_layer(&t, &mod, 2, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 2e-3, 1e-12);
	gpus[0].fp8_eff_max = 0;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.012, 1e-12);
	gpus[0].fp8_eff_max = 0.8;
	gpus[0].eff_half_flop = 1e9;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.02, 1e-12);
	s.fp8 = false;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.gemm_fwd, 0.028, 1e-12);
}
END_TEST

/* Per-stage precision (cluster_group_fp8, cluster_bf16_blocks): the toy on
 * toy_cluster with FP8 on group 0's GPU only (peak_fp8 2 TFLOP/s,
 * fp8_eff_max 1). A strategy with FP8 on costs each block, per sequence of
 * 1000 tokens at TP 1: on group 0 its GEMMs 1e9 x 1000 / 2e12 = 0.5 s (the
 * attention core, the memory-bound kernels and the head's GEMMs 5e8 x 1000
 * / 1e12 as in BF16: toy_block, toy_head), on group 1 (no FP8) all of it in
 * BF16 at 0.5 TFLOP/s, the GEMMs 2 s: toy_block(0.5e12). The BF16 blocks
 * Megatron-LM would keep by count, the toy's 4 blocks (layers 1 to 4, the
 * embedding 0 and the head 5 not counted):
 * - PP 2, E+2 | 2+L: rank 0 on group 1: the first 2 in BF16 (2, 0); rank
 *   0 on group 0: the last 2 (0, 2);
 * - PP 3, E+1 | 2 | 1+L on groups 1, 0, 1: (1, 1); on 0, 1, 0: a BF16
 *   stage between FP8 ones, -1;
 * - ZB-V, PP 2, E+1 | 1 | 1 | 1+L: stages 0 and 3 on rank 0, 1 and 2 on
 *   rank 1: rank 0 on group 1 gives (1, 1);
 * - FP8 off, or FP8 on both groups: (0, 0).
 * A mixed group of 4 GPUs of each group runs its layers in one precision:
 * with group 1's GPU at 1.5 TFLOP/s (BF16, no FP8), the block on group
 * 0's part in BF16 (1 s of GEMMs) is slower than on group 1's (2/3 s), and
 * paces the stage: toy_block(1e12), where FP8 on group 0's part (0.5 s)
 * would leave group 1's 2/3 s the slowest. */
START_TEST(test_fp8_per_stage)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 1, 1000);
	struct layer_costs lc = { 0 };
	struct part f8 = toy_block(1e12, 1e12, 1, 1, false), slow = toy_block(0.5e12, 1e12, 1, 1, false);
	struct part head = toy_head(1e12, 1e12, 1, 1, false);
	int L, start, end;

	toy();
	toy_cluster();
	L = mod.n_layer;
	gpus[0].peak_fp8_flops = 2e12;
	gpus[0].fp8_eff_max = 1;
	f8.gemm = 0.5;
	f8 = finish(f8);
	/* its FP8 casts apart (compute.c fp8_casts), 1000 tokens: forward the
	 * attention output's input (a d = 1000 elements a token), backward the
	 * output gradients of the QKV (3000), the attention output and the
	 * MLP's down projection (1000 each), FP8_CAST_BYTES each at 1 TB/s */
	f8.fwd += FP8_CAST_BYTES * 1000 * 1000 / (1e12 * COMPUTE_HBM_EFF);
	f8.bwd += FP8_CAST_BYTES * 5000 * 1000 / (1e12 * COMPUTE_HBM_EFF);
	s.fp8 = true;
	ck_assert(cluster_group_fp8(&clu, 0));
	ck_assert(!cluster_group_fp8(&clu, 1));
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	for (int l = 1; l <= 4; l++) {
		ck_assert_rel(lc.time[l], fb(f8), 1e-12);
		ck_assert_rel(lc.time[L + l], fb(slow), 1e-12);
	}
	ck_assert_rel(lc.time[5], fb(head), 1e-12);
	cost_layers_free(&lc);
	{
		struct node_group g3[3] = { groups[0], groups[1], groups[1] };
		struct cluster mix = clu;
		struct part bf16 = toy_block(1e12, 1e12, 1, 1, false);

		g3[2].n_part = 2;
		g3[2].stage_gpus = 8;
		g3[2].part_group[0] = 0;
		g3[2].part_group[1] = 1;
		g3[2].part_gpus[0] = g3[2].part_gpus[1] = 4;
		mix.group = g3;
		mix.n_group = 3;
		gpus[1].peak_flops = 1.5e12;
		ck_assert(!cluster_group_fp8(&mix, 2));
		ck_assert_int_eq(cost_layers(&lc, &mod, &mix, &s, NULL, NULL), 0);
		ck_assert_rel(lc.time[2 * L + 1], fb(bf16), 1e-12);
		cost_layers_free(&lc);
		gpus[1].peak_flops = 0.5e12;
	}

	s = strat(1, 1, 2, 1, 1, 1, 1000);
	s.fp8 = true;
	s.first[1] = 3;
	s.first[2] = 6;
	s.group[0] = 1;
	s.group[1] = 0;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), 0);
	ck_assert_int_eq(start, 2);
	ck_assert_int_eq(end, 0);
	s.group[0] = 0;
	s.group[1] = 1;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), 0);
	ck_assert_int_eq(start, 0);
	ck_assert_int_eq(end, 2);
	s.fp8 = false;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), 0);
	ck_assert_int_eq(start + end, 0);

	s = strat(1, 1, 3, 1, 1, 1, 1000);
	s.fp8 = true;
	s.first[1] = 2;
	s.first[2] = 4;
	s.first[3] = 6;
	s.group[0] = s.group[2] = 1;
	s.group[1] = 0;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), 0);
	ck_assert_int_eq(start, 1);
	ck_assert_int_eq(end, 1);
	s.group[0] = s.group[2] = 0;
	s.group[1] = 1;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), -1);

	s = strat(1, 1, 2, 1, 1, 1, 1000);
	s.fp8 = true;
	s.schedule = SCHED_ZB_V;
	s.vp = 2;
	s.n_stages = 4;
	for (int k = 0; k <= 4; k++)
		s.first[k] = (unsigned short)(k == 4 ? 6 : k == 0 ? 0
								  : k + 1);
	s.group[0] = 1;
	s.group[1] = 0;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), 0);
	ck_assert_int_eq(start, 1);
	ck_assert_int_eq(end, 1);
	gpus[1].peak_fp8_flops = 1e12;
	ck_assert_int_eq(cluster_bf16_blocks(&clu, &s, &start, &end), 0);
	ck_assert_int_eq(start + end, 0);
}
END_TEST

/* cost_layers reuses a block's parts for the next block only where they
 * cost the same. The toy on group 0 (1 TFLOP/s, eff_max 1) at TP 1, one
 * sequence of 1000 tokens: a block's GEMMs do (F - A) 1000 FLOPs, A the
 * attention core's 4e6 FLOPs per token, forward once and backward twice;
 * the flash core does CAUSAL_SHARE A 1000 / (P FLASH_RATE), backward x
 * FLASH_BWD_FLOPS / FLASH_BWD_RATE. A window of 500 on every other block
 * (sliding_every 2: blocks 0 and 2, layers 1 and 3) keeps k = 500 (2000 -
 * 500 + 1) / 1001 / 1000 of A, whose rest the toy's fixed FLOPs per token
 * give to the GEMMs: a full block costs (1 - k) A 1000 / P (CAUSAL_SHARE
 * (1 + FLASH_BWD_FLOPS / FLASH_BWD_RATE) / FLASH_RATE - 3) more. 1e8 more
 * FLOPs per token on the last block cost 3e8 x 1000 / P = 0.3 s more. */
START_TEST(test_layers_alike)
{
	struct strategy s;
	struct layer_costs lc = { 0 };
	double P = 1e12, A = 4e6, k = 500.0 * 1501 / 1001 / 1000;
	double d = (1 - k) * A * 1000 / P *
		   (CAUSAL_SHARE * (1 + FLASH_BWD_FLOPS / FLASH_BWD_RATE) / FLASH_RATE - 3);

	toy();
	toy_cluster();
	s = strat(1, 1, 1, 1, 1, 1, 1000);
	mod.sliding_window = 500;
	mod.sliding_every = 2;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], lc.time[3], 0);
	ck_assert_rel(lc.time[2], lc.time[4], 0);
	ck_assert_rel(lc.time[2] - lc.time[1], d, 1e-9);
	cost_layers_free(&lc);
	lay[4].flops_per_token += 1e8;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[4] - lc.time[2], 0.3, 1e-9);
	cost_layers_free(&lc);
}
END_TEST

/* Document masking on the toy (seq 1000): half the tokens in documents
 * of 250 tokens, half in documents of 2000 (cut at the sequence: 1000).
 * Keys per token over a single document's: (0.5 x 250 + 0.5 x 1000) /
 * 1000 = 0.625, so the flash kernel's attention core, forward and
 * backward, runs 0.625 of B.attn: fwd B.fwd - 0.375 B.attn, backward
 * B.bwd - 0.375 B.attn FLASH_BWD_FLOPS / FLASH_BWD_RATE. The materialised
 * scores of fused-softmax are computed whole: unchanged. */
START_TEST(test_doc_masking)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 1, 1000);
	struct layer_costs lc = { 0 };
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	double fwd_unmasked;

	toy();
	toy_cluster();
	s.first[1] = 6;
	s.attn = ATTN_FUSED_SOFTMAX;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	fwd_unmasked = lc.fwd[1];
	cost_layers_free(&lc);
	mod.n_doc = 2;
	mod.doc[0] = (struct doc_bin){ .tokens = 250, .share = 0.5 };
	mod.doc[1] = (struct doc_bin){ .tokens = 2000, .share = 0.5 };
	ck_assert_double_eq(model_doc_share(&mod, 1000), 0.625);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.fwd[1], fwd_unmasked, 1e-12);
	cost_layers_free(&lc);
	s.attn = ATTN_FLASH;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.fwd[1], B.fwd - 0.375 * B.attn, 1e-12);
	ck_assert_rel(lc.time[1] - lc.fwd[1],
		      B.bwd - 0.375 * B.attn * FLASH_BWD_FLOPS / FLASH_BWD_RATE, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

START_TEST(test_errors)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 1, 1000);
	struct layer_measure bad = { "A100", 1, 1, 1000, -1.0, 1.0 };
	struct layer_costs lc = { 0 };
	struct err e = { "" };

	toy();
	s.tp = 0;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "tp 0"));
	ck_assert_ptr_null(lc.time);
	s.tp = 1;
	lay[2].measure = &bad;
	lay[2].n_measure = 1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "layer 2"));
	ck_assert_ptr_null(lc.time);
	cost_layers_free(&lc);
	cost_layers_free(NULL);
}
END_TEST

/* An MoE block against the dense one (the GPT block of
 * test_compute_analytic at tp 2, no SP, 2048 tokens): the same block made
 * MoE with 8 experts, top 2, expert FFN f/2 (so the activation's bytes,
 * top_k x f_e, stay those of f) adds the token permutation's 2 + 2 top_k
 * = 6 rows of h = 4096 in bf16 per token, 6 * 4096 * 2 * 2048 bytes, to
 * the memory-bound part, and MOE_LAYER_OVERHEAD_S to the forward's fixed
 * time; the backward MEM_BWD x both (the GEMMs apart, whose shapes
 * change). */
START_TEST(test_compute_moe_dispatch)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time d, x;
	double bw = 2e12 * COMPUTE_HBM_EFF, dm = 6.0 * 4096 * 2 * 2048 / bw;

	gpt(2, 4096, 32, 51200, 2048);
	gpus[0].eff_max = 0.5;
	ck_assert_int_eq(compute_layer(&d, &mod, 1, &gpus[0], &s, NULL), 0);
	mod.experts = 8;
	mod.top_k = 2;
	mod.moe_ffn = mod.ffn / 2;
	ck_assert_int_eq(compute_layer(&x, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(x.mem_fwd - d.mem_fwd, dm, 1e-9);
	ck_assert_rel((x.fwd - x.gemm_fwd) - (d.fwd - d.gemm_fwd), dm + MOE_LAYER_OVERHEAD_S, 1e-9);
	ck_assert_rel((x.bwd - 2 * x.gemm_fwd) - (d.bwd - 2 * d.gemm_fwd),
		      MEM_BWD * (dm + MOE_LAYER_OVERHEAD_S), 1e-9);
	/* the head is no MoE block: unchanged */
	compute_layer(&d, &mod, 3, &gpus[0], &s, NULL);
	mod.experts = 0;
	compute_layer(&x, &mod, 3, &gpus[0], &s, NULL);
	ck_assert_rel(x.fwd, d.fwd, 1e-12);
}
END_TEST

/* The toy made an MoE of 4 experts, top 1, f_e = f, its expert weights
 * 8e6, at EP 2 in s. */
static void toy_moe(struct strategy *s)
{
	toy();
	toy_cluster();
	mod.experts = 4;
	mod.top_k = 1;
	mod.moe_ffn = mod.ffn;
	lay[1].expert_params = 8e6;
	s->ep = 2;
}

/* Megatron-Core's EP all-to-all overlap (--ep-overlap) on the toy made an
 * MoE of 4 experts, top 1, at EP 2 over DP 2, 1F1B without a pipeline, m =
 * 8 / 2 = 4: schedule_ep_paired 1 - 1/4 = 3/4 of the passes run paired,
 * and the toy block's compute (about a second) covers the all-to-alls (tens
 * of microseconds), so the forward's and the backward's exposed
 * all-to-alls fall to the unpaired quarter, and the hidden ones are the
 * paired 2 x 3/4. */
START_TEST(test_ep_overlap_parts)
{
	struct strategy s = strat(1, 1, 1, 2, 1, 8, 1000);
	struct parts off, on;

	toy_moe(&s);
	ck_assert_int_eq(cost_layer_parts(&off, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert(off.ep_f > 0 && off.ep_f < 1e-3 && off.bwd > 0.1);
	ck_assert_rel(off.ep_b, off.ep_f, 0);
	ck_assert_rel(off.ep_h, 0, 0);
	s.ep_overlap = true;
	ck_assert_int_eq(cost_layer_parts(&on, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert_rel(on.ep_f, 0.25 * off.ep_f, 1e-12);
	ck_assert_rel(on.ep_b, 0.25 * off.ep_f, 1e-12);
	ck_assert_rel(on.ep_h, 1.5 * off.ep_f, 1e-12);
	ck_assert_rel(on.fwd, off.fwd, 0);
	/* under GPipe nothing pairs */
	s.schedule = SCHED_GPIPE;
	ck_assert_int_eq(cost_layer_parts(&on, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert_rel(on.ep_f, off.ep_f, 1e-12);
	ck_assert_rel(on.ep_h, 0, 0);
}
END_TEST

/* The moe module of selective recomputation reruns the MoE layer with its
 * dispatcher: on the toy MoE of test_ep_overlap_parts, the recomputation
 * repeats the forward's dispatch and combine whole (ep_r = the exposed
 * ep_f without any overlap), with or without --ep-overlap, which pairs
 * only the forward and backward passes; the attention core alone
 * (core_attn) reruns none. */
START_TEST(test_moe_recompute_all_to_all)
{
	struct strategy s = strat(1, 1, 1, 2, 1, 8, 1000);
	struct parts off, x;

	toy_moe(&s);
	ck_assert_int_eq(cost_layer_parts(&off, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert(off.ep_f > 0);
	s.recompute = RECOMPUTE_SELECTIVE;
	ck_assert_int_eq(cost_layer_parts(&x, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert_rel(x.ep_r, 0, 0);
	s.recompute_modules = RM_MOE;
	ck_assert_int_eq(cost_layer_parts(&x, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert_rel(x.ep_r, off.ep_f, 1e-12);
	s.ep_overlap = true;
	ck_assert_int_eq(cost_layer_parts(&x, &mod, 1, &clu, 0, &s, NULL), 0);
	ck_assert_rel(x.ep_r, off.ep_f, 1e-12);
	ck_assert_rel(x.ep_f, 0.25 * off.ep_f, 1e-12);
}
END_TEST

/* Grouped GEMM (--moe-grouped-gemm) on the toy made an MoE of 4 experts,
 * top 1, f_e = f, capacity factor 1 (load 1), EP 2, so 2 local experts: of
 * the block's 1e9 GEMM FLOPs per token, the routed up and down
 * projections' shares are 8e6 / 24e6 each (QKV 6e6, output 2e6, up 8e6,
 * down 8e6 per token), w = 1e12 / 3 FLOPs each over the micro-batch's 1000
 * tokens; each expert sees 1000 x 1 x 2 / 4 = 500 of them, one GEMM of 8e6
 * x 500 = 4e9 FLOPs, the grouped GEMM 8e9. At eff_max 1 and a half point
 * of 4e9 FLOPs on 1 TFLOP/s: w (4e9 + 4e9) / (1e12 x 4e9) = 2/3 s per
 * projection one by one, w (8e9 + 4e9) / (1e12 x 8e9) = 1/2 s grouped: the
 * forward's GEMMs 1/3 s less, the backward's 2/3 s. */
START_TEST(test_grouped_gemm)
{
	struct strategy s = strat(1, 1, 1, 2, 1, 8, 1000);
	struct layer_time off, on;

	toy_moe(&s);
	gpus[0].eff_max = 1;
	gpus[0].eff_half_flop = 4e9;
	s.moe_capacity = 1;
	ck_assert_int_eq(compute_layer(&off, &mod, 1, &gpus[0], &s, NULL), 0);
	s.grouped_gemm = true;
	ck_assert_int_eq(compute_layer(&on, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(off.gemm_fwd - on.gemm_fwd, 1.0 / 3, 1e-9);
	ck_assert_rel(off.bwd - on.bwd, 2.0 / 3, 1e-9);
	/* EP 4: one local expert, nothing to group */
	s.ep = 4;
	s.dp = 4;
	compute_layer(&on, &mod, 1, &gpus[0], &s, NULL);
	s.grouped_gemm = false;
	compute_layer(&off, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(on.gemm_fwd, off.gemm_fwd, 1e-12);
}
END_TEST

/* Selective recomputation by module (Megatron-Core's recompute_modules)
 * on the GPT block of test_compute_analytic (tp 2, no SP, 2048 tokens):
 * layernorm reruns the two fused norms, 2 NORM_FUSED x 4096 x 2 bytes a
 * token on all 2048 rows; mlp the MLP's GEMMs, 16h^2 of the block's 24h^2
 * GEMM FLOPs per token (2/3 of its GEMM time at constant efficiency), and
 * the GeLU's 2 x 16384 x 2 / 2 = 32768 bytes a token; core_attn the
 * attention core. The sum over the modules chosen; core_attn alone as
 * before. */
START_TEST(test_recompute_modules)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time t;
	struct part x;
	double bw = 2e12 * COMPUTE_HBM_EFF;
	double norm = 2 * NORM_FUSED * 4096 * 2 * 2048 / bw;
	double mlp;

	gpt(2, 4096, 32, 51200, 2048);
	gpus[0].eff_max = 0.5;
	x = gpt_block_tp2(0.5, false);
	mlp = x.gemm * 2 / 3 + 32768.0 * 2048 / bw;
	s.recompute = RECOMPUTE_SELECTIVE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, x.attn, 1e-12);
	s.recompute_modules = RM_LAYERNORM | RM_MLP;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.norm_fwd, norm, 1e-12);
	ck_assert_rel(t.mlp_fwd, mlp, 1e-12);
	ck_assert_rel(t.recompute, norm + mlp, 1e-12);
	s.recompute_modules = RM_CORE_ATTN | RM_MLP | RM_MOE_ACT;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, x.attn + mlp, 1e-12);
	/* not selective: nothing, whatever the modules */
	s.recompute = RECOMPUTE_NONE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, 0, 0);
}
END_TEST

/* recompute_modules_parse and _name: '+'-joined names both ways; an
 * unknown or empty name is -1. */
START_TEST(test_recompute_modules_names)
{
	char buf[64];

	ck_assert_int_eq(recompute_modules_parse("core_attn"), RM_CORE_ATTN);
	ck_assert_int_eq(recompute_modules_parse("mlp+layernorm"), RM_MLP | RM_LAYERNORM);
	ck_assert_int_eq(recompute_modules_parse("moe_act+core_attn+mlp+layernorm"), 15);
	ck_assert_int_eq(recompute_modules_parse("mla_up_proj+shared_experts+moe+moe_act+core_attn+mlp+layernorm"),
			 RM_ALL);
	ck_assert_int_eq(recompute_modules_parse("moe"), RM_MOE);
	ck_assert_int_eq(recompute_modules_parse("mlp+"), -1);
	ck_assert_int_eq(recompute_modules_parse(""), -1);
	ck_assert_int_eq(recompute_modules_parse("moe_router"), -1);
	ck_assert_int_eq(recompute_modules_parse("mo"), -1);
	ck_assert_int_eq(recompute_modules_parse("mlp++layernorm"), -1);
	ck_assert_str_eq(recompute_modules_name(RM_MLP | RM_LAYERNORM, ' ', buf, sizeof buf),
			 "layernorm mlp");
	ck_assert_str_eq(recompute_modules_name(0, '+', buf, sizeof buf), "");
	ck_assert_str_eq(recompute_modules_name(RM_ALL, '+', buf, 12), "core_attn+l");
	ck_assert_str_eq(recompute_modules_name(RM_MOE | RM_SHARED_EXPERTS | RM_MLA_UP_PROJ, ' ', buf, sizeof buf),
			 "moe shared_experts mla_up_proj");
}
END_TEST

/* Ties (strategy_simpler): TP 2 x PP 2 (two dimensions) before TP 2 x PP
 * 2 x CP 2 (three); TP 2 (one, no CP) before CP 2 (one, CP); DP 8 x EP 1
 * before DP 8 x EP 2 (both TP 2: one dimension against two); TP 2 x CP 2
 * before TP 2 x EP 2 x CP 2; TP 4 and TP 2 alike by these rules (0). */
START_TEST(test_strategy_simpler)
{
	struct strategy a = strat(2, 1, 2, 2, 1, 8, 1000), b = strat(2, 2, 2, 1, 1, 8, 1000);

	ck_assert_int_lt(strategy_simpler(&a, &b), 0);
	ck_assert_int_gt(strategy_simpler(&b, &a), 0);
	a = strat(2, 1, 1, 4, 1, 8, 1000);
	b = strat(1, 2, 1, 4, 1, 8, 1000);
	ck_assert_int_lt(strategy_simpler(&a, &b), 0);
	ck_assert_int_gt(strategy_simpler(&b, &a), 0);
	b = a;
	b.ep = 2;
	ck_assert_int_lt(strategy_simpler(&a, &b), 0);
	a = strat(2, 2, 1, 4, 1, 8, 1000);
	b = a;
	b.ep = 2;
	ck_assert_int_lt(strategy_simpler(&a, &b), 0);
	a = strat(4, 1, 1, 2, 1, 8, 1000);
	b = strat(2, 1, 1, 4, 1, 8, 1000);
	ck_assert_int_eq(strategy_simpler(&a, &b), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_compute_analytic);
	tcase_add_test(tc, test_compute_moe_dispatch);
	tcase_add_test(tc, test_ep_overlap_parts);
	tcase_add_test(tc, test_moe_recompute_all_to_all);
	tcase_add_test(tc, test_strategy_simpler);
	tcase_add_test(tc, test_grouped_gemm);
	tcase_add_test(tc, test_recompute_modules);
	tcase_add_test(tc, test_recompute_modules_names);
	tcase_add_test(tc, test_compute_measured);
	tcase_add_test(tc, test_eq3_flops);
	tcase_add_test(tc, test_doc_masking);
	tcase_add_test(tc, test_layers_tp);
	tcase_add_test(tc, test_tp_overlap);
	tcase_add_test(tc, test_layers_cp);
	tcase_add_test(tc, test_attention_kernels);
	tcase_add_test(tc, test_norm_and_activation_kernels);
	tcase_add_test(tc, test_grad_acc_unfused);
	tcase_add_test(tc, test_gemm_efficiency);
	tcase_add_test(tc, test_fp8);
	tcase_add_test(tc, test_fp8_per_stage);
	tcase_add_test(tc, test_layers_alike);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_unfused_pointwise);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
