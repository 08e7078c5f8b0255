/* check_cost.c: the cost model (cost.h, compute.h, memory.h) against hand
 * computations: the roofline per layer part (GEMMs at their own efficiency,
 * FP8, the attention kernels, the memory-bound kernels), measured profiles,
 * Narayanan 2021 Eq. 3, the memory of GPT-3 175B, the allowance and the fit
 * test, and whole evaluations of small pipelines with their overlaps.
 *
 * The kernel constants of compute.h (FLASH_RATE, NORM_FUSED, ...) and
 * memory.h (MEM_CONTEXT_BYTES, MEM_FRAG_SHARE) are calibrated and change:
 * expectations are written as the documented formulas over those names,
 * on inputs chosen so that the rest of the arithmetic is round. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "compute.h"
#include "cost.h"
#include "memory.h"
#include "model.h"
#include "strategy.h"
#include "testutil.h"
#include "util.h"

#define GiB  1073741824.0
#define MAXL 200
#define O    LAYER_OVERHEAD_S

static struct layer lay[MAXL];
static struct model mod;
static struct gpu_type gpus[2];
static struct node_group groups[2];
static struct cluster clu;

/* A GPT as in Narayanan et al. 2021 (f = 4h GeLU, MHA, learned positions,
 * LM head tied to the embedding), by COSTMODEL.md's formulas:
 * embedding (V + s) h parameters, no FLOPs, no activations;
 * block 12h^2 + 13h parameters, 24h^2 + 4sh forward FLOPs per token,
 * 34h activation bytes per token (Korthikanti 2022, SP form);
 * head V*h parameters (the tied copy the last stage holds, as
 * model_derive_layers keeps it), 2hV FLOPs per token, 4h activation bytes. */
static void gpt(int L, int h, int a, int V, int s)
{
	double hh = h;

	mod = (struct model){ .name = "gpt", .hidden = h, .layers = L, .heads = a, .kv_heads = a, .head_dim = h / a, .ffn = 4 * h, .ffn_kind = FFN_GELU, .vocab = V, .seq = s, .dtype_bytes = 2, .tied = true, .learned_pos = true, .layer = lay, .n_layer = L + 2 };
	lay[0] = (struct layer){ .kind = LAYER_EMBEDDING,
				 .params = ((double)V + s) * hh,
				 .out_bytes_per_token = 2 * hh };
	for (int i = 1; i <= L; i++)
		lay[i] = (struct layer){ .kind = LAYER_BLOCK,
					 .params = 12 * hh * hh + 13 * hh,
					 .flops_per_token = 24 * hh * hh + 4.0 * s * hh,
					 .act_bytes_per_token = 34 * hh,
					 .out_bytes_per_token = 2 * hh };
	lay[L + 1] = (struct layer){ .kind = LAYER_HEAD,
				     .params = (double)V * hh,
				     .flops_per_token = 2 * hh * V,
				     .act_bytes_per_token = 4 * hh,
				     .out_bytes_per_token = 2 * hh };
}

/* A toy with round numbers: h = 1000 (8 heads of 125, 8 KV heads), f =
 * 4000 GeLU, rotary positions, V = 1000, s = 1000; embedding (5e6
 * parameters, no FLOPs), 4 blocks of 1e7 parameters and 1.004e9 FLOPs per
 * token, of which the attention core 4*s*a*d = 4e6 and the GEMMs 1e9; head
 * of 5e6 parameters and 5e8 FLOPs per token. On the 1 TFLOP/s GPU of
 * toy_cluster a block's GEMMs take 1 s per sequence of 1000 tokens. */
static void toy(void)
{
	mod = (struct model){ .name = "toy", .hidden = 1000, .layers = 4, .heads = 8, .kv_heads = 8, .head_dim = 125, .ffn = 4000, .ffn_kind = FFN_GELU, .vocab = 1000, .seq = 1000, .dtype_bytes = 2, .layer = lay, .n_layer = 6 };
	lay[0] = (struct layer){ .kind = LAYER_EMBEDDING, .params = 5e6, .out_bytes_per_token = 2e3 };
	for (int i = 1; i <= 4; i++)
		lay[i] = (struct layer){ .kind = LAYER_BLOCK, .params = 1e7, .flops_per_token = 1.004e9, .act_bytes_per_token = 34e3, .out_bytes_per_token = 2e3 };
	lay[5] = (struct layer){ .kind = LAYER_HEAD, .params = 5e6, .flops_per_token = 5e8, .act_bytes_per_token = 4e3 };
}

/* Group 0: A100-like (312 TFLOP/s, 80 GiB) at constant efficiency 1, NVLink
 * 300 GB/s, 200 GB/s per node; group 1: same nodes with a GPU of half the
 * peak. No latencies, NCCL efficiency 1. The allowance is the user's 0
 * unless a test sets it. */
static void setup(void)
{
	memset(lay, 0, sizeof lay);
	gpus[0] = (struct gpu_type){ .name = "A100", .peak_flops = 312e12, .mem_bytes = 80 * GiB, .hbm_bw = 2e12, .eff_max = 1 };
	gpus[1] = (struct gpu_type){ .name = "half", .peak_flops = 156e12, .mem_bytes = 80 * GiB, .hbm_bw = 2e12, .eff_max = 1 };
	for (int g = 0; g < 2; g++)
		groups[g] = (struct node_group){
			.name = g ? "b" : "a", .nodes = 128, .gpus_per_node = 8, .gpu = g, .intra_bw = 300e9, .intra_eff = 1, .inter_bw = 200e9, .inter_eff = 1, .fabric = 0
		};
	clu = (struct cluster){ .name = "test", .gpu = gpus, .n_gpu = 2, .group = groups, .n_group = 2, .fabric_bw = 25e9, .total_gpus = 2048, .mem_allowance = 0 };
}

/* For the toy: a 1 TFLOP/s GPU with 1 TB/s HBM, links of 100 GB/s. */
static void toy_cluster(void)
{
	gpus[0].peak_flops = 1e12;
	gpus[0].hbm_bw = 1e12;
	gpus[1].peak_flops = 0.5e12;
	gpus[1].hbm_bw = 1e12;
	for (int g = 0; g < 2; g++) {
		groups[g].intra_bw = 1e11;
		groups[g].inter_bw = 1e11;
	}
}

static struct strategy strat(int tp, int cp, int pp, int dp, int mbs, int gbs,
			     int seq)
{
	struct strategy s = { .tp = tp, .cp = cp, .pp = pp, .dp = dp, .ep = 1, .vp = 1, .mbs = mbs, .gbs = gbs, .seq = seq, .micro_batches = gbs / (dp * mbs), .schedule = SCHED_1F1B, .recompute = RECOMPUTE_NONE, .attn = ATTN_FLASH, .n_stages = pp };
	return s;
}

/* Expected seconds of one toy layer per micro-batch of one sequence on one
 * GPU of peak P (eff_max 1, no GEMM curve) and HBM bandwidth hbm, at TP t,
 * CP c, sequence parallel sp, FlashAttention-2, fused norms (README "Cost
 * model", compute.h):
 *   tok = 1000/c tokens, n = tok/t tokens' worth of GEMM work per GPU;
 *   GEMMs: (F - A) n / P; attention core: CAUSAL_SHARE * 4e6 n / (P *
 *   FLASH_RATE), backward x FLASH_BWD_FLOPS / FLASH_BWD_RATE;
 *   memory-bound bytes per token, over hbm * COMPUTE_HBM_EFF (rows = 1/t
 *   with SP or t = 1, else 1):
 *     block: 2 norms + 2 residual adds of the 1000-wide bf16 row,
 *            (2 NORM_FUSED + 2 RESIDUAL) * 2000 * rows; GeLU 2 rows of f,
 *            2 * 4000 * 2 / t; rotary reads and writes q and k, 2 * (8 + 8)
 *            * 125 * 2 / t;
 *     head:  the final norm NORM_FUSED * 2000 * rows + the cross-entropy
 *            CE_BYTES_PER_LOGIT * 1000 / t;
 *     embedding: its output row, 2 * 2000 (rotary: no position add);
 *   forward: GEMMs + attention + memory + LAYER_OVERHEAD_S; backward: 2 x
 *   GEMMs + the attention backward + MEM_BWD x (memory + overhead). */
struct part {
	double gemm, attn, mem, fwd, bwd;
};

static struct part finish(struct part x)
{
	x.fwd = x.gemm + x.attn + x.mem + O;
	x.bwd = 2 * x.gemm + x.attn * FLASH_BWD_FLOPS / FLASH_BWD_RATE +
		MEM_BWD * (x.mem + O);
	return x;
}

static struct part toy_block(double P, double hbm, int t, int c, bool sp)
{
	double tok = 1000.0 / c, n = tok / t, rows = (sp || t == 1) ? 1.0 / t : 1;
	struct part x = { 0 };

	x.gemm = 1e9 * n / P;
	x.attn = CAUSAL_SHARE * 4e6 * n / (P * FLASH_RATE);
	x.mem = ((2 * NORM_FUSED + 2 * RESIDUAL) * 2000 * rows + 16000.0 / t +
		 8000.0 / t) *
		tok / (hbm * COMPUTE_HBM_EFF);
	return finish(x);
}

static struct part toy_head(double P, double hbm, int t, int c, bool sp)
{
	double tok = 1000.0 / c, n = tok / t, rows = (sp || t == 1) ? 1.0 / t : 1;
	struct part x = { 0 };

	x.gemm = 5e8 * n / P;
	x.mem = (NORM_FUSED * 2000 * rows + CE_BYTES_PER_LOGIT * 1000.0 / t) *
		tok / (hbm * COMPUTE_HBM_EFF);
	return finish(x);
}

static struct part toy_emb(double hbm, int c)
{
	struct part x = { 0 };

	x.mem = 4000.0 * (1000.0 / c) / (hbm * COMPUTE_HBM_EFF);
	return finish(x);
}

/* fwd + bwd */
static double fb(struct part x)
{
	return x.fwd + x.bwd;
}

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
	 * and the cross-entropy, 24 bytes per logit of 51200 / 2. */
	compute_layer(&t, &mod, 3, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, 0, 0);
	ck_assert_rel(t.gemm_fwd, 2.0 * 4096 * 51200 * 1024 / (312e12 * 0.5), 1e-12);
	ck_assert_rel(t.attn_fwd, 0, 0);
	mem = (NORM_FUSED * 8192 + CE_BYTES_PER_LOGIT * 25600) * 2048 / bw;
	ck_assert_rel(t.mem_fwd, mem, 1e-12);
	ck_assert_rel(t.fwd, t.gemm_fwd + mem + O, 1e-12);
	ck_assert_rel(t.bwd, 2 * t.gemm_fwd + MEM_BWD * (mem + O), 1e-12);
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

/* A stage of 16 GPUs, DP 2 x TP 8, whose replicas lie on one node of
 * group a (1 TFLOP/s toy GPU, 80 GiB) and one of group b (half the peak,
 * 40 GiB, on another fabric): cluster_mix makes the mixed group
 * "a:8+b:8" (the 8 GPUs of each group are no whole rank of 16). Worked by
 * hand: its GPU is b's (the smaller memory), 8 GPUs per node on 2 nodes,
 * the inter-node link the slower of the NICs (1e11) and the link between
 * fabrics (25e9); costed, each replica computes its own micro-batches, so
 * the stage takes b's compute time exactly (every layer is slower on b)
 * and is checked against b's 40 GiB; the DP reduction runs over the 25e9
 * link, slower than over a's or b's own NICs. */
START_TEST(test_mixed_replicas)
{
	struct strategy s = strat(8, 1, 1, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result ra, rb, rm;
	struct cluster *x;

	toy();
	toy_cluster();
	gpus[1].mem_bytes = 40 * GiB;
	groups[0].nodes = groups[1].nodes = 1;
	groups[1].fabric = 1;
	clu.total_gpus = 16;
	x = cluster_mix(&clu);
	ck_assert_int_eq(x->n_group, 3);
	ck_assert_str_eq(x->group[2].name, "a:8+b:8");
	ck_assert_int_eq(x->group[2].n_part, 2);
	ck_assert_int_eq(x->group[2].stage_gpus, 16);
	ck_assert_int_eq(x->group[2].gpu, 1);
	ck_assert_int_eq(x->group[2].gpus_per_node, 8);
	ck_assert_int_eq(x->group[2].nodes, 2);
	ck_assert_double_eq(x->group[2].inter_bw, 25e9);
	ck_assert_int_eq(x->group[2].fabric, 2);
	ck_assert_double_eq(cluster_group_mem(x, 2), 40 * GiB);
	s.first[0] = 0;
	s.first[1] = (unsigned short)mod.n_layer;
	s.group[0] = 0;
	ck_assert_int_eq(cost_layers(&lc, &mod, x, &s, NULL, NULL), 0);
	cost_evaluate(&ra, &mod, x, &s, &lc);
	s.group[0] = 1;
	cost_evaluate(&rb, &mod, x, &s, &lc);
	s.group[0] = 2;
	cost_evaluate(&rm, &mod, x, &s, &lc);
	ck_assert_double_eq(rm.time.compute, rb.time.compute);
	ck_assert(ra.time.compute < rb.time.compute);
	ck_assert_double_eq(rm.fullest_cap, 40 * GiB);
	ck_assert(rm.time.dp > rb.time.dp && rm.time.dp > ra.time.dp);
	cost_layers_free(&lc);
	cluster_free(x);
}
END_TEST

/* Uneven micro-batches (cost_split), worked by hand:
 * - two replicas of 1 and 2 s per micro-batch, 12 micro-batches: 8 and 4
 *   (8 x 1 = 4 x 2 = 8 s), against 6 x 2 = 12 s for the even split; 7 and
 *   5 would take 10 s, 9 and 3 9 s;
 * - parts of 2 and 3 replicas at 1 and 3 s, 20 micro-batches: a bound T
 *   allows 2 floor(T) + 3 floor(T / 3) of them, 18 at T = 6 and 20 at
 *   T = 7, so 14 and 6 (7 each on the first part, 2 each on the second:
 *   7 s and 6 s);
 * - the first example capped at 7 per replica: 7 and 5, 5 x 2 = 10 s;
 * - no split: fewer micro-batches than replicas, a cap that holds fewer
 *   than the total (5 + 5 < 12), no parts, a part without time. */
START_TEST(test_uneven_split_hand)
{
	const int r11[] = { 1, 1 }, r23[] = { 2, 3 };
	const double t12[] = { 1, 2 }, t13[] = { 1, 3 }, t10[] = { 1, 0 };
	long out[2];

	ck_assert_double_eq(cost_split(2, r11, t12, 12, 0, out), 8);
	ck_assert_int_eq(out[0], 8);
	ck_assert_int_eq(out[1], 4);
	ck_assert_double_eq(cost_split(2, r23, t13, 20, 0, out), 7);
	ck_assert_int_eq(out[0], 14);
	ck_assert_int_eq(out[1], 6);
	ck_assert_double_eq(cost_split(2, r11, t12, 12, 7, out), 10);
	ck_assert_int_eq(out[0], 7);
	ck_assert_int_eq(out[1], 5);
	ck_assert_double_eq(cost_split(2, r11, t12, 1, 0, out), -1);
	ck_assert_double_eq(cost_split(2, r11, t12, 12, 5, out), -1);
	ck_assert_double_eq(cost_split(0, r11, t12, 12, 0, out), -1);
	ck_assert_double_eq(cost_split(2, r11, t10, 12, 0, out), -1);
}
END_TEST

/* The least max over every way of giving total micro-batches to the n
 * replicas t[0..n) one by one (each at least 1, at most cap when cap > 0):
 * the brute force that cost_split must match. */
static double brute_split(const double *t, int n, int total, int cap, int j, double most)
{
	double best = INFINITY;

	if (j == n - 1) {
		if (total < 1 || (cap > 0 && total > cap))
			return INFINITY;
		return fmax(most, total * t[j]);
	}
	for (int k = 1; k <= total - (n - 1 - j) && (cap <= 0 || k <= cap); k++)
		best = fmin(best, brute_split(t, n, total - k, cap, j + 1, fmax(most, k * t[j])));
	return best;
}

/* cost_split against the brute force on small random instances: up to 3
 * parts of up to 2 replicas, times of 1 to 4 quarter-seconds (ties
 * included), 14 micro-batches at most, with and without a cap. Its
 * parts' totals add up to the total and their busiest replica is its
 * answer. */
START_TEST(test_uneven_split_brute)
{
	unsigned rng = 12345;

	for (int iter = 0; iter < 400; iter++) {
		int n = 1 + (int)((rng = rng * 1103515245u + 12345u) >> 16) % 3, r[3], nr = 0;
		double t[3], tr[6];
		long out[3], sum = 0;
		int total, cap;
		double got, want, most = 0;

		for (int i = 0; i < n; i++) {
			r[i] = 1 + (int)((rng = rng * 1103515245u + 12345u) >> 16) % 2;
			t[i] = 0.25 * (1 + (int)((rng = rng * 1103515245u + 12345u) >> 16) % 4);
			for (int k = 0; k < r[i]; k++)
				tr[nr++] = t[i];
		}
		total = nr + (int)((rng = rng * 1103515245u + 12345u) >> 16) % (15 - nr);
		cap = iter % 2 ? 0 : 1 + (int)((rng = rng * 1103515245u + 12345u) >> 16) % 8;
		want = brute_split(tr, nr, total, cap, 0, 0);
		got = cost_split(n, r, t, total, cap, out);
		if (want == INFINITY) {
			ck_assert_msg(got == -1, "iter %d: %g, brute force none", iter, got);
			continue;
		}
		ck_assert_msg(fabs(got - want) < 1e-12, "iter %d: %g, brute force %g", iter, got, want);
		for (int i = 0; i < n; i++) {
			sum += out[i];
			most = fmax(most, (double)((out[i] + r[i] - 1) / r[i]) * t[i]);
			ck_assert(out[i] >= r[i] && (cap <= 0 || out[i] <= (long)cap * r[i]));
		}
		ck_assert_int_eq(sum, total);
		ck_assert(fabs(most - got) < 1e-12);
	}
}
END_TEST

/* Uneven micro-batches on test_mixed_replicas's stage "a:8+b:8" (TP 8, a
 * replica on a's 1 TFLOP/s GPUs and one on b's of half the peak), 12
 * sequences of micro-batch 1, m = 6 each when even. Every block and the
 * head take a little under twice as long on b as on a (the GEMMs twice,
 * the memory-bound kernels and the launch overhead alike), the whole
 * model (the embedding's small time included) a ratio r in
 * (1.6, 2]: 8 on a and 4 on b (max(8, 4 r) = 8 t_a; 7 and 5 give 5 r >
 * 8, 9 and 3 give 9) by hand. Then each layer on the mixed group takes
 * the larger of 8/6 of a's time and 4/6 of b's, a layer on group a alone
 * 8/6 of its time (its replicas run up to 8; the embedding, with no
 * GEMM, as fast on both, 8/6 of a's), the stage's compute about
 * 8 t_a / (6 t_b) = 2/3 of the even one, within 1% as r is within 1% of
 * 2, its memory unchanged (one stage: 1 micro-batch in flight either way).
 * No capped tries with one stage, and none on equal GPUs. */
START_TEST(test_uneven_mixed_stage)
{
	struct strategy s = strat(8, 1, 1, 2, 1, 12, 1000);
	struct layer_costs lc = { 0 }, lu = { 0 };
	struct cost_result rm, ru;
	unsigned short out[MAX_GROUPS];
	struct cluster *x;
	int L;

	toy();
	toy_cluster();
	groups[0].nodes = groups[1].nodes = 1;
	clu.total_gpus = 16;
	x = cluster_mix(&clu);
	ck_assert_int_eq(x->n_group, 3);
	L = mod.n_layer;
	s.first[0] = 0;
	s.first[1] = (unsigned short)L;
	s.group[0] = 2;
	ck_assert_int_eq(cost_mixed_group(x, &s), 2);
	ck_assert_int_eq(cost_uneven(out, &mod, x, &s, 0, NULL), 1);
	ck_assert_int_eq(out[0], 8);
	ck_assert_int_eq(out[1], 4);
	ck_assert_int_eq(out[2], 0);
	ck_assert_int_eq(cost_uneven(out, &mod, x, &s, 1, NULL), 0);
	ck_assert_int_eq(cost_layers(&lc, &mod, x, &s, NULL, NULL), 0);
	cost_evaluate(&rm, &mod, x, &s, &lc);
	s.uneven[0] = 8;
	s.uneven[1] = 4;
	ck_assert_int_eq(cost_layers(&lu, &mod, x, &s, NULL, NULL), 0);
	for (int l = 0; l < L; l++) {
		double ta = lc.time[l], tb = lc.time[L + l];

		/* the embedding has no GEMM: as fast on both */
		if (l > 0)
			ck_assert(tb > 1.6 * ta && tb <= 2 * ta);
		else
			ck_assert_double_eq_tol(tb, ta, 1e-12 * ta);
		ck_assert_double_eq_tol(lu.time[2 * L + l], fmax(8.0 / 6 * ta, 4.0 / 6 * tb), 1e-12 * ta);
		ck_assert_double_eq_tol(lu.time[l], 8.0 / 6 * ta, 1e-12 * ta);
	}
	cost_evaluate(&ru, &mod, x, &s, &lu);
	ck_assert_double_eq_tol(ru.time.compute / rm.time.compute, 2.0 / 3, 0.01);
	ck_assert(ru.iter_s < rm.iter_s);
	ck_assert_double_eq(ru.peak_bytes, rm.peak_bytes);
	cost_layers_free(&lc);
	cost_layers_free(&lu);
	cluster_free(x);
	/* equal GPUs: nothing to gain */
	gpus[1].peak_flops = gpus[0].peak_flops;
	x = cluster_mix(&clu);
	memset(s.uneven, 0, sizeof s.uneven);
	ck_assert_int_eq(cost_uneven(out, &mod, x, &s, 0, NULL), 0);
	ck_assert_int_eq(out[0], 0);
	cluster_free(x);
}
END_TEST

/* 1F1B's activations in flight under uneven micro-batches: stage k holds
 * min(pp - k, n) of a replica's n. Four stages of the mixed group, m =
 * 4 / 2 = 2 each when even: 2, 2, 2, 1; with 3 and 1 (the busiest
 * replica runs 3) 3, 3, 2, 1, checked against the smaller memory; the p2p
 * per micro-batch of m is 3/2 of the even one (the busiest replica sends
 * 3 times). */
START_TEST(test_uneven_inflight)
{
	struct strategy s = strat(8, 1, 4, 2, 1, 4, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame fe, fu;
	struct cluster *x;
	const double even[] = { 2, 2, 2, 1 }, uneven[] = { 3, 3, 2, 1 };

	toy();
	toy_cluster();
	groups[0].nodes = groups[1].nodes = 1;
	clu.total_gpus = 16;
	x = cluster_mix(&clu);
	for (int k = 0; k <= 4; k++)
		s.first[k] = (unsigned short)(k < 4 ? k : mod.n_layer);
	for (int k = 0; k < 4; k++)
		s.group[k] = 2;
	ck_assert_int_eq(cost_layers(&lc, &mod, x, &s, NULL, NULL), 0);
	cost_frame(&fe, &mod, x, &s, &lc);
	s.uneven[0] = 3;
	s.uneven[1] = 1;
	cost_frame(&fu, &mod, x, &s, &lc);
	for (int k = 0; k < 4; k++) {
		ck_assert_double_eq(fe.inflight[k], even[k]);
		ck_assert_double_eq(fu.inflight[k], uneven[k]);
	}
	ck_assert_double_eq_tol(fu.send[1], 1.5 * fe.send[1], 1e-15);
	ck_assert(fe.send[1] > 0);
	cost_layers_free(&lc);
	cluster_free(x);
}
END_TEST

/* Eq. 3 end to end: the 1.7B row of Table 1 (L 24, h 2304, a 24) on one
 * GPU at efficiency 1, tp = pp = dp = 1, mbs 1, B = 512 (m = 512). With
 * Megatron's fused-softmax attention (the whole 4sh as batched GEMMs,
 * backward 2x) and no HBM bandwidth (no memory-bound time, no softmax
 * traffic), the compute and recompute parts are Eq. 3 over the peak plus
 * the launch overhead: per micro-batch LAYER_OVERHEAD_S x (1 + MEM_BWD) on
 * each of the 26 layers, plus once more per recomputed block (24):
 * 512 * O * ((1 + MEM_BWD) * 26 + 24). mfu * iter_s * peak is the
 * no-recompute count. */
START_TEST(test_eq3_time)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 512, 2048);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	double L = 24, h = 2304, V = 51200, S = 2048, B = 512;
	double eq3 = 96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * L * h));
	double mf = 72 * B * S * L * h * h * (1 + S / (6 * h) + V / (12 * L * h));

	gpt(24, 2304, 24, 51200, 2048);
	gpus[0].hbm_bw = 0;
	s.recompute = RECOMPUTE_FULL;
	s.attn = ATTN_FUSED_SOFTMAX;
	s.first[0] = 0;
	s.first[1] = (unsigned short)mod.n_layer;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.compute + r.time.recompute,
		      eq3 / 312e12 + 512 * O * ((1 + MEM_BWD) * 26 + 24), 1e-12);
	ck_assert_rel(r.time.recompute,
		      512 * 24 * (24 * h * h + 4 * S * h) * S / 312e12 + 512 * 24 * O,
		      1e-12);
	ck_assert_rel(r.time.bubble, 0, 1e-9);
	ck_assert_rel(r.mfu * r.iter_s * 312e12, mf, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

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

/* Toy on 1 TFLOP/s GPUs, tp 1, pp 2, dp 2, mbs 1, gbs 8 (m = 4), 1F1B, no
 * recompute, no overlaps, stage 0 = embedding + 2 blocks, stage 1 = 2
 * blocks + head (toy_block, toy_head, toy_emb: block forward 1 s of GEMMs
 * plus attention, memory traffic and overhead). The send: 1000 * 1000 * 2
 * = 2e6 bytes, two ranks of 2 GPUs share a node: 100 GB/s, forward +
 * backward 4e-5 s, charged to the receiving stage:
 *   c0 = E + 2B, c1 = 2B + H + 4e-5 (c1 the larger by about the head's
 *   1.5 s); T_pipe = 3 c1 + c0 + c1.
 * Rank 0 has 2.5e7 parameters: the gradient all-reduce over 2 (one node),
 * 2 * 1/2 * 4 * 2.5e7 / 1e11 = 1e-3 s, exposed (no overlap); Adam
 * 2.5e7 * COMPUTE_ADAM_BYTES / 1e12. Breakdown: compute m x rank 1's
 * layers; pp 4 x 4e-5 (a = 3 times rank 1's send + b = 1 times all sends);
 * bubble T - 4 c1 = c0. */
START_TEST(test_evaluate_toy)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	struct part B1 = toy_block(0.5e12, 1e12, 1, 1, false);
	struct part H1 = toy_head(0.5e12, 1e12, 1, 1, false);
	double c0 = fb(E) + 2 * fb(B), c1 = 2 * fb(B) + fb(H) + 4e-5;
	double opt = 2.5e7 * COMPUTE_ADAM_BYTES / 1e12, T = 3 * c1 + c0 + c1;
	double it = T + 1e-3 + opt;

	toy();
	toy_cluster();
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_int_eq(lc.n_layer, 6);
	ck_assert_int_eq(lc.n_group, 2);
	ck_assert_rel(lc.time[0], fb(E), 1e-12);
	ck_assert_rel(lc.time[1], fb(B), 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd, 1e-12);
	ck_assert_rel(lc.time[5], fb(H), 1e-12);
	/* group 1 runs at half the peak: the GEMMs and attention take twice
	 * as long, the memory-bound parts the same. */
	ck_assert_rel(lc.time[6 + 1], fb(B1), 1e-12);
	ck_assert(fb(B1) < 2 * fb(B));
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, it, 1e-12);
	ck_assert_rel(r.time.compute, 4 * (c1 - 4e-5), 1e-12);
	ck_assert_rel(r.time.bubble, c0, 1e-9);
	ck_assert_rel(r.time.pp, 1.6e-4, 1e-9);
	ck_assert_rel(r.time.dp, 1e-3, 1e-12);
	ck_assert_rel(r.time.dp_hidden, 0, 0);
	ck_assert_rel(r.time.optimizer, opt, 1e-12);
	/* tokens 8 * 1000; MFU 3 * 8000 * (4 * 1.004e9 + 5e8) / (iter_s *
	 * 4 GPUs * 1e12). */
	ck_assert_rel(r.tokens_per_s, 8000 / it, 1e-12);
	ck_assert_rel(r.mfu, 3 * 8000 * 4.516e9 / (it * 4e12), 1e-12);

	/* Rank 1 on the half-speed group: c1 = 2 B1 + H1 + the send between
	 * groups over the NICs, 100 GB/s shared by the 2 GPUs of a rank,
	 * 2 * 2e6 / 5e10 = 8e-5; T_pipe = 3 c1 + c0 + c1, plus rank 0's tail
	 * (above); peaks 2 * 1e12 + 2 * 0.5e12. */
	s.group[1] = 1;
	c1 = 2 * fb(B1) + fb(H1) + 8e-5;
	T = 3 * c1 + c0 + c1;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, T + 1e-3 + opt, 1e-12);
	ck_assert_rel(r.time.compute, 4 * (c1 - 8e-5), 1e-12);
	ck_assert_rel(r.time.bubble, c0, 1e-9);
	ck_assert_rel(r.time.pp, 4 * 8e-5, 1e-9);
	ck_assert_rel(r.mfu, 3 * 8000 * 4.516e9 / ((T + 1e-3 + opt) * 3e12), 1e-12);

	/* A later rank's tail: group 1's GPUs 1e4 times slower to each other
	 * (1e7 B/s), so rank 1's all-reduce of its 2.5e7 parameters takes
	 * 2 * 1/2 * 4 * 2.5e7 / 1e7 = 10 s. Its last backward ends lead =
	 * E.bwd + 2 B.bwd (stage 0's) + half the send, 4e-5, before rank 0's,
	 * so the iteration ends 10 + opt - lead after the pipeline, not
	 * rank 0's 1e-3 + opt: the DP part 10 - lead, the optimizer opt. */
	groups[1].intra_bw = 1e7;
	cost_layers_free(&lc);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	{
		double lead = E.bwd + 2 * B.bwd + 4e-5;

		ck_assert(10 - lead > 1e-3);
		ck_assert_rel(r.iter_s, T + 10 + opt - lead, 1e-12);
		ck_assert_rel(r.time.dp, 10 - lead, 1e-12);
		ck_assert_rel(r.time.optimizer, opt, 1e-12);
		/* the lead covers the rest of its 10 s */
		ck_assert_rel(r.time.dp_hidden, lead, 1e-12);
	}
	groups[1].intra_bw = 1e11;
	cost_layers_free(&lc);
	ck_assert_ptr_null(lc.time);
}
END_TEST

/* Per pipeline rank (cost_ranks) on the toy of test_evaluate_toy: pp 2,
 * dp 2, m = 4, rank 0 (E + 2 blocks) on group 0, rank 1 (2 blocks + head)
 * on the half-speed group 1, allowance 0. By hand:
 * - rank 0: fwd E.fwd + 2 B.fwd, bwd E.bwd + 2 B.bwd (tp = cp = 1: no
 *   exposed comm), no send; busy 4 c0, c0 = fb(E) + 2 fb(B);
 * - rank 1: fwd 2 B1.fwd + H1.fwd, send 8e-5 (between groups); busy 4 c1;
 * - T_pipe = 3 c1 + c0 + c1 (rank 1 the slower): idle rank 1 = c0, idle
 *   rank 0 = 4 c1 - 3 c0; busy + idle = T_pipe for both;
 * - tails: both hold 2.5e7 parameters: all-reduce 2 x 1/2 x 4 x 2.5e7 /
 *   1e11 = 1e-3 s, Adam 2.5e7 x COMPUTE_ADAM_BYTES / 1e12 on either GPU;
 * - memory: rank 0 18 x 2.5e7 = 4.5e8 of states (2, 4, 12 bytes per
 *   parameter) + min(2, 4) = 2 micro-batches x 2 blocks x 34e3 x 1000 =
 *   1.36e8 of activations = 5.86e8; rank 1 4.5e8 + 1 x (2 x 3.4e7 + 4e3 x
 *   1000) = 7.2e7 + the head's logits 1000 x 1000 x (2 + 4) = 6e6: 5.28e8.
 * The fullest GPU: on 1e9-byte GPUs rank 0 (0.586 > 0.528, also the
 * heaviest); with group 1's GPUs at 6e8 bytes rank 1 (0.88 > 0.586),
 * though rank 0 still holds the most bytes. */
START_TEST(test_ranks_toy)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	struct cost_rank x[2];
	struct cost_stage st[2];
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	struct part B1 = toy_block(0.5e12, 1e12, 1, 1, false);
	struct part H1 = toy_head(0.5e12, 1e12, 1, 1, false);
	double c0 = fb(E) + 2 * fb(B), c1 = 2 * fb(B1) + fb(H1) + 8e-5;
	double T = 4 * c1 + c0, opt = 2.5e7 * COMPUTE_ADAM_BYTES / 1e12;

	toy();
	toy_cluster();
	gpus[0].mem_bytes = gpus[1].mem_bytes = 1e9;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	s.group[1] = 1;
	ck_assert(c1 > c0);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_int_eq(cost_ranks(x, &mod, &clu, &s, &lc), 2);
	ck_assert_int_eq(x[0].group, 0);
	ck_assert_int_eq(x[1].group, 1);
	ck_assert_int_eq(x[1].gpu, 1);
	ck_assert_int_eq(x[0].n_layers, 3);
	ck_assert_int_eq(x[1].n_chunks, 1);
	ck_assert_rel(x[0].fwd, E.fwd + 2 * B.fwd, 1e-12);
	ck_assert_rel(x[0].bwd, E.bwd + 2 * B.bwd, 1e-12);
	ck_assert_rel(x[0].compute_fwd, x[0].fwd, 1e-12);
	ck_assert_rel(x[0].comm_fwd + x[0].comm_bwd + x[0].recompute, 0, 0);
	ck_assert_rel(x[0].send, 0, 0);
	ck_assert_rel(x[1].fwd, 2 * B1.fwd + H1.fwd, 1e-12);
	ck_assert_rel(x[1].bwd, 2 * B1.bwd + H1.bwd, 1e-12);
	ck_assert_rel(x[1].send, 8e-5, 1e-9);
	for (int q = 0; q < 2; q++) {
		ck_assert_rel(x[q].pipeline_s, T, 1e-12);
		ck_assert_rel(x[q].busy + x[q].idle, T, 1e-12);
		ck_assert_rel(x[q].busy, 4 * (x[q].fwd + x[q].bwd + x[q].send), 1e-12);
		ck_assert_rel(x[q].dp, 1e-3, 1e-12);
		ck_assert_rel(x[q].optimizer, opt, 1e-12);
		ck_assert_rel(x[q].cap_bytes, 1e9, 0);
		ck_assert_rel(x[q].mem.weights + x[q].mem.grads + x[q].mem.optimizer +
				      x[q].mem.activations + x[q].mem.logits + x[q].mem.allowance,
			      x[q].peak_bytes, 1e-15);
	}
	ck_assert_rel(x[0].idle, 4 * c1 - 3 * c0, 1e-9);
	ck_assert_rel(x[1].idle, c0, 1e-9);
	ck_assert_rel(x[0].peak_bytes, 5.86e8, 1e-12);
	ck_assert_rel(x[0].mem.activations, 1.36e8, 1e-12);
	ck_assert_rel(x[1].peak_bytes, 5.28e8, 1e-12);
	ck_assert_rel(x[1].mem.logits, 6e6, 1e-12);
	/* cost_evaluate agrees: its bubble is the bottleneck's idle, its
	 * memory the heaviest rank's */
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.bubble, x[1].idle, 1e-9);
	ck_assert_int_eq(r.bottleneck_rank, 1);
	ck_assert_rel(r.bottleneck_fwd, 2 * B1.fwd + H1.fwd, 1e-12);
	ck_assert_rel(r.bottleneck_bwd, 2 * B1.bwd + H1.bwd, 1e-9);
	ck_assert_rel(r.bottleneck_send, 8e-5, 1e-9);
	ck_assert_rel(r.iter_s, T + x[0].dp + x[0].optimizer, 1e-12);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_int_eq(r.fullest_rank, 0);
	ck_assert_rel(r.fullest_bytes, 5.86e8, 1e-12);
	ck_assert_rel(r.fullest_cap, 1e9, 0);
	ck_assert_int_eq(cost_stages(st, &mod, &clu, &s, &lc), 2);
	ck_assert_int_eq(st[1].rank, 1);
	ck_assert_int_eq(st[1].first, 3);
	ck_assert_int_eq(st[1].n_layers, 3);
	ck_assert_rel(st[1].fwd, x[1].fwd, 1e-12);
	ck_assert_rel(st[1].send, 8e-5, 1e-9);

	gpus[1].mem_bytes = 6e8;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_rel(r.peak_bytes, 5.86e8, 1e-12);
	ck_assert_int_eq(r.fullest_rank, 1);
	ck_assert_rel(r.fullest_bytes, 5.28e8, 1e-12);
	ck_assert_rel(r.fullest_cap, 6e8, 0);
	ck_assert(r.fits);
	cost_layers_free(&lc);
}
END_TEST

/* Interleaved, vp 2, on the toy (test_fit_interleaved_chunks' partition
 * E+2|1|1|1+L, all on group 0, m = 4): rank 0 holds stages 0 and 2, rank 1
 * stages 1 and 3; each send inside the group is 4e-5 (test_evaluate_toy:
 * pp 1.6e-4 over 4 micro-batches). C0 = fb(E) + 3 fb(B) + 4e-5, C1 =
 * fb(B) + fb(H) + 8e-5, C0 > C1: T_pipe = (4 - 1/2) C0 + (C0 + C1) / 2,
 * idle rank 0 = C1 / 2, rank 1 = T - 4 C1. Rank 0's memory is
 * test_fit_interleaved_chunks' 8.85e8 (allowance 0): states 18 x 3.5e7 =
 * 6.3e8 + activations 2.55e8. */
START_TEST(test_ranks_interleaved)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_rank x[2];
	struct cost_stage st[4];
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	double C0 = fb(E) + 3 * fb(B) + 4e-5, C1 = fb(B) + fb(H) + 8e-5;
	double T = 3.5 * C0 + 0.5 * (C0 + C1);

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
	ck_assert(C0 > C1);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_int_eq(cost_stages(st, &mod, &clu, &s, &lc), 4);
	ck_assert_int_eq(st[2].rank, 0);
	ck_assert_int_eq(st[3].rank, 1);
	ck_assert_rel(st[0].fwd, E.fwd + 2 * B.fwd, 1e-12);
	ck_assert_rel(st[0].bwd, E.bwd + 2 * B.bwd, 1e-12);
	ck_assert_rel(st[0].send, 0, 0);
	ck_assert_rel(st[3].fwd, H.fwd, 1e-12);
	ck_assert_rel(st[3].send, 4e-5, 1e-9);
	ck_assert_int_eq(cost_ranks(x, &mod, &clu, &s, &lc), 2);
	ck_assert_int_eq(x[0].n_chunks, 2);
	ck_assert_int_eq(x[0].n_layers, 4);
	ck_assert_rel(x[0].fwd, st[0].fwd + st[2].fwd, 1e-12);
	ck_assert_rel(x[1].send, 8e-5, 1e-9);
	ck_assert_rel(x[0].pipeline_s, T, 1e-12);
	ck_assert_rel(x[0].idle, C1 / 2, 1e-9);
	ck_assert_rel(x[1].idle, T - 4 * C1, 1e-12);
	ck_assert_rel(x[1].busy + x[1].idle, T, 1e-12);
	ck_assert_rel(x[0].peak_bytes, 8.85e8, 1e-12);
	ck_assert_rel(x[0].mem.optimizer, 12 * 3.5e7, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* The pp part of the breakdown when pipeline rank 0, which receives no
 * send, is the bottleneck: the toy of test_evaluate_toy with rank 0 on the
 * half-speed group 1 and rank 1 on group 0. c0 = E1 + 2 B1 (about 12 s),
 * c1 = 2B + H + 8e-5 (about 7.5 s, the send between groups); T_pipe =
 * 3 c0 + c0 + c1; pp = a x rank 0's sends (none) + b = 1 x all sends =
 * 8e-5, not 0; bubble = T - 4 c0 - pp = 2B + H. The parts add up to
 * iter_s. */
START_TEST(test_evaluate_pp_rank0_bottleneck)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E1 = toy_emb(1e12, 1);
	struct part B1 = toy_block(0.5e12, 1e12, 1, 1, false);
	double c0 = fb(E1) + 2 * fb(B1), c1 = 2 * fb(B) + fb(H) + 8e-5;

	toy();
	toy_cluster();
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	s.group[0] = 1;
	s.group[1] = 0;
	ck_assert(c0 > c1);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.pp, 8e-5, 1e-9);
	ck_assert_rel(r.time.compute, 4 * c0, 1e-12);
	ck_assert_rel(r.time.bubble, 2 * fb(B) + fb(H), 1e-9);
	ck_assert_rel(r.iter_s - r.time.dp - r.time.optimizer, 4 * c0 + c1, 1e-12);
	ck_assert_rel(r.time.compute + r.time.recompute + r.time.bubble +
			      r.time.tp + r.time.cp + r.time.pp + r.time.dp +
			      r.time.ep + r.time.optimizer,
		      r.iter_s, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* The toy with blocks of 1e9 parameters on a 1 GB/s NVLink (tp 1, pp 2,
 * dp 2, m = 4): rank 0 (embedding + 2 blocks) has 5e6 + 2e9 = 2.005e9
 * parameters, fp32 gradients 8.02e9 bytes, all-reduce over 2 GPUs of a
 * node: 2 * 1/2 * 8.02e9 / 1e9 = 8.02 s; Adam 2.005e9 *
 * COMPUTE_ADAM_BYTES / 1e12. The pipeline itself does not depend on the
 * overlaps: between runs iter_s moves by the exposed DP only.
 * - no overlap: 8.02 exposed whole;
 * - --overlap-grad-reduce: under rank 0's backward of one micro-batch,
 *   bwd0 = E.bwd + 2 B.bwd (about 4 s): max(8.02 - bwd0, share x 8.02),
 *   share = the last bucket, max(40e6, 1e6 x 2) / 2.005e9; here 8.02 -
 *   bwd0 (about 4 s) > 0.16;
 * - on a 10 GB/s link the reduction, 0.802 s, fits under bwd0: the bucket
 *   floor share x 0.802 stays exposed;
 * - ZeRO-1 at 1 GB/s: reduce-scatter 8.02e9 / 2 / 1e9 = 4.01 s and the
 *   all-gather of bf16 parameters 4.01e9 / 2 / 1e9 = 2.005 s, both
 *   exposed; Adam on half the parameters; with both overlaps the
 *   reduce-scatter max(4.01 - bwd0, share 4.01) and the gather under the
 *   next forward, fwd0 = E.fwd + 2 B.fwd (about 2.007 s), max(2.005 -
 *   fwd0, share 2.005): each at least its bucket;
 * - bf16 gradients (grad_bytes 2) halve the reduction: 4.01 s exposed.
 * A rank under one bucket (test_evaluate_toy, 2.5e7 < 4e7 parameters)
 * hides nothing even with the overlap. */
START_TEST(test_evaluate_dp_tail)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	double bwd0 = E.bwd + 2 * B.bwd, fwd0 = E.fwd + 2 * B.fwd;
	double share = 40e6 / 2.005e9, opt = 2.005e9 * COMPUTE_ADAM_BYTES / 1e12;
	double base, x_r, x_g;

	toy();
	toy_cluster();
	for (int i = 1; i <= 4; i++)
		lay[i].params = 1e9;
	groups[0].intra_bw = 1e9;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, 8.02, 1e-12);
	ck_assert_rel(r.time.dp_hidden, 0, 0);
	ck_assert_rel(r.time.optimizer, opt, 1e-12);
	ck_assert_rel(r.time.compute + r.time.recompute + r.time.bubble +
			      r.time.tp + r.time.cp + r.time.pp + r.time.dp +
			      r.time.ep + r.time.optimizer,
		      r.iter_s, 1e-12);
	/* the tail of a first stage holding layers [0, 3) */
	ck_assert_rel(lc.tail0[3], 8.02 + opt, 1e-12);
	base = r.iter_s - 8.02;
	cost_layers_free(&lc);
	/* ranks on group 0 only: the same tail there, none on group 1 */
	{
		static const int ranks[2] = { 2, 0 };

		ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, ranks, NULL), 0);
		ck_assert_rel(lc.tail0[3], 8.02 + opt, 1e-12);
		for (int j = 0; j <= lc.n_layer; j++)
			ck_assert(lc.tail0[lc.n_layer + 1 + j] == INFINITY);
		cost_layers_free(&lc);
	}

	s.grad_overlap = true;
	ck_assert(8.02 - bwd0 > share * 8.02);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, 8.02 - bwd0, 1e-12);
	ck_assert_rel(r.time.dp_hidden, bwd0, 1e-12);
	ck_assert_rel(r.iter_s, base + 8.02 - bwd0, 1e-12);
	ck_assert_rel(lc.tail0[3], 8.02 - bwd0 + opt, 1e-12);
	cost_layers_free(&lc);

	/* the bucket floor */
	groups[0].intra_bw = 1e10;
	ck_assert(0.802 < bwd0);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, share * 0.802, 1e-12);
	ck_assert_rel(r.time.dp_hidden, (1 - share) * 0.802, 1e-12);
	cost_layers_free(&lc);

	/* ZeRO-1 */
	groups[0].intra_bw = 1e9;
	s.grad_overlap = false;
	s.zero = 1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, 4.01 + 2.005, 1e-12);
	ck_assert_rel(r.time.optimizer, opt / 2, 1e-12);
	ck_assert_rel(r.iter_s, base + 4.01 + 2.005 - opt / 2, 1e-12);
	cost_layers_free(&lc);
	s.grad_overlap = true;
	s.param_overlap = true;
	x_r = 4.01 - bwd0 > share * 4.01 ? 4.01 - bwd0 : share * 4.01;
	x_g = 2.005 - fwd0 > share * 2.005 ? 2.005 - fwd0 : share * 2.005;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, x_r + x_g, 1e-12);
	ck_assert_rel(r.time.dp_hidden, 4.01 + 2.005 - x_r - x_g, 1e-12);
	ck_assert_rel(r.iter_s, base + x_r + x_g - opt / 2, 1e-12);
	cost_layers_free(&lc);
	/* the gather overlap alone */
	s.grad_overlap = false;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, 4.01 + x_g, 1e-12);
	cost_layers_free(&lc);

	/* bf16 gradients */
	s.zero = 0;
	s.param_overlap = false;
	s.grad_bytes = 2;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.dp, 4.01, 1e-12);
	cost_layers_free(&lc);
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
 * forward and 1 s backward, exposed max(comm / 2, comm - GEMMs):
 * - at 100 GB/s, comm 4e-5: the first chunk, 2e-5 each way;
 * - at 1 MB/s, comm 4 s: forward max(2, 3.5) = 3.5, backward max(2, 3) =
 *   3; full recomputation reruns the forward's 3.5.
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

	toy();
	toy_cluster();
	s.sp = true;
	s.tp_overlap = true;
	s.first[0] = 0;
	s.first[1] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + 4e-5, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + 2e-5, 1e-12);
	ck_assert_rel(lc.time[0], fb(E) + 2e6 / 1e11, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp, 4 * 4e-5 + eh, 1e-12);
	ck_assert_rel(r.time.tp_hidden, 4 * (8e-5 - 4e-5), 1e-12);
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
	ck_assert_rel(lc.time[1], fb(B) + 3.5 + 3, 1e-12);
	ck_assert_rel(lc.fwd[1], B.fwd + 3.5, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp_hidden, 4 * (8 - 6.5), 1e-12);
	cost_layers_free(&lc);
	s.recompute = RECOMPUTE_FULL;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[1], fb(B) + B.fwd + 3.5 + 3 + 3.5, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.tp_hidden, 4 * (12 - 10), 1e-12);
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

/* Attention-score memory (Korthikanti 2022 Table 2, 5as/h * sbh / t): the
 * GPT block of test_compute_analytic, tp 2 without SP: ((34h - 10h)/2 +
 * 10h) s = 22 * 4096 * 2048 = 184549376 bytes, plus without flash and
 * without recomputation 5 a s^2 / t = 5 * 32 * 2048^2 / 2 = 335544320. */
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

/* The fit test of an interleaved strategy is per pipeline rank, its chunks
 * together. The toy, pp 2, vp 2, m = 4, zero 0 (18 bytes per parameter),
 * the user's allowance 0: virtual stages [0,3) (embedding + 2 blocks),
 * [3,4), [4,5), [5,6) (head) on ranks 0, 1, 0, 1. In flight per chunk
 * (schedule_inflight): rank 0 min(8, 2 + 2 + 1) / 2 = 2.5, rank 1
 * (0 + 2 + 1) / 2 = 1.5.
 *   rank 0: chunk 0 18 x 2.5e7 + 2.5 x 68e6 = 6.2e8, chunk 2 18 x 1e7 +
 *           2.5 x 34e6 = 2.65e8: 8.85e8;
 *   rank 1: 18 x 1e7 + 1.5 x 34e6 + 18 x 5e6 + 1.5 x 4e6 + 6e6 logits =
 *           3.33e8.
 * On a 1e9-byte GPU the frame's even per-chunk cap (5e8) is below chunk
 * 0, yet rank 0 fits as a whole; on 8.8e8 bytes it does not. */
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
	ck_assert_rel(f.cap[0], 5e8, 1e-12);
	ck_assert_rel(f.inflight[0], 2.5, 1e-12);
	ck_assert_rel(f.inflight[1], 1.5, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(r.fits);
	ck_assert_int_eq(r.overflow_rank, -1);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_rel(r.peak_bytes, 8.85e8, 1e-12);
	ck_assert_rel(r.mem.weights, 2 * 3.5e7, 1e-12);
	ck_assert_rel(r.mem.activations, 2.55e8, 1e-12);
	ck_assert_rel(r.mem.logits, 0, 0);
	gpus[0].mem_bytes = 8.8e8;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.overflow_rank, 0);
	/* rank 1 overflows alone on a GPU between the two ranks' needs
	 * (rank 1 on group 1) */
	gpus[0].mem_bytes = 1e9;
	gpus[1].mem_bytes = 3.3e8;
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
 * between the groups, 8e-5 s (see test_evaluate_toy). In flight: rank 0
 * min(8, 2 + 2 + 1) / 2 = 2.5, rank 1 (0 + 2 + 1) / 2 = 1.5. Weights
 * a = 4*2 - 1 = 7, b = 1/2. Cap (80 GiB - the user's 2 GiB) / 2 per
 * chunk. */
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
	ck_assert_rel(f.inflight[0], 2.5, 1e-12);
	ck_assert_rel(f.inflight[2], 2.5, 1e-12);
	ck_assert_rel(f.inflight[1], 1.5, 1e-12);
	ck_assert_rel(f.cap[1], 39 * GiB, 1e-12);
	cost_layers_free(&lc);
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

/* cost_frame takes the links cost_layers kept only for the strategy they
 * were computed for: at 2 sequences a micro-batch each p2p carries twice
 * the bytes, twice the seconds without latencies. */
START_TEST(test_frame_links)
{
	struct strategy s = strat(8, 1, 2, 1, 1, 8, 2048), t;
	struct layer_costs lc = { 0 };
	struct pipeline_frame f, g;

	gpt(4, 1024, 16, 1000, 2048);
	s.group[1] = 1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert(f.link[0][1] > 0);
	t = s;
	t.mbs = 2;
	cost_frame(&g, &mod, &clu, &t, &lc);
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			ck_assert_rel(g.link[a][b], 2 * f.link[a][b], 1e-12);
	ck_assert_rel(g.send[1], 2 * f.send[1], 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* ZB-H1 on the toy, one rank of group 0: rho = forward / total over the
 * whole model, (E.fwd + 4 B.fwd + H.fwd) / (the same + the backwards),
 * so a = m - rho. With full recomputation the blocks rerun their forward:
 * both sides gain 4 B.fwd. */
START_TEST(test_frame_zb_h1)
{
	struct strategy s = strat(1, 1, 2, 1, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	double fw = E.fwd + 4 * B.fwd + H.fwd;
	double all = fw + E.bwd + 4 * B.bwd + H.bwd, rho = fw / all;

	toy();
	toy_cluster();
	s.schedule = SCHED_ZB_H1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.a, 8 - rho, 1e-12);
	ck_assert_rel(f.b, rho, 1e-12);
	ck_assert_rel(f.inflight[0], 2, 0);
	ck_assert_rel(f.inflight[1], 1, 0);
	s.recompute = RECOMPUTE_FULL;
	rho = (fw + 4 * B.fwd) / (all + 4 * B.fwd);
	cost_layers_free(&lc);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.a, 8 - rho, 1e-12);
	ck_assert_rel(f.b, rho, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* Vocabulary parallelism (Yeung et al. 2024) on the toy of
 * test_evaluate_toy, pp 2, dp 2, m = 4, both ranks on group 0, allowance
 * 0. By hand:
 * - the embedding and the head cost nothing in the layer list; every rank
 *   runs half of each: V = (fb(E) + fb(H)) / 2 of compute, plus the
 *   collectives: S = 1000 tokens x 2e3 bytes = 2e6, the 2 ranks x 2 GPUs
 *   inside one node (NVLink 1e11 B/s, no latency): 4 broadcasts/reduces
 *   4 x 2e6 / 1e11 = 8e-5, and 2 all-reduces of 4 x 1000 bytes over 2
 *   ranks, 2 x 2 x 1/2 x 4000 / 1e11 = 8e-8: 8.008e-5, half forward;
 * - c0 = 2 fb(B) + V + 8.008e-5, c1 = the same + the send 4e-5;
 *   T = 3 c1 + c0 + c1; each rank's tail as before (2e7 block
 *   parameters + half of the 1e7 of embedding and head = 2.5e7):
 *   1e-3 + opt;
 * - memory per rank: half of the 1e7 vocabulary parameters, 18 x 5e6 =
 *   9e7 of states, the head's input 4e3 x 1000 = 4e6 once, half the
 *   logits 1000 x 1000 x 6 / 2 = 3e6: 9.7e7; 1F1B's in flight + 2 (Alg.
 *   1), at most m: 4 and 3. Rank 0: 3.6e8 + 9e7 states, 4 x 2 x 3.4e7 +
 *   4e6 activations, 3e6 logits: 7.29e8. */
START_TEST(test_vocab_parallel)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	double V = (fb(E) + fb(H)) / 2, vc = 8.008e-5;
	double c0 = 2 * fb(B) + V + vc, c1 = c0 + 4e-5;
	double opt = 2.5e7 * COMPUTE_ADAM_BYTES / 1e12;

	toy();
	toy_cluster();
	s.vocab_par = true;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.time[0], 0, 0);
	ck_assert_rel(lc.time[5], 0, 0);
	ck_assert_rel(lc.time[1], fb(B), 1e-12);
	ck_assert_rel(lc.vocab_time[0], V + vc, 1e-12);
	ck_assert_rel(lc.vocab_fwd[0], (E.fwd + H.fwd) / 2 + vc / 2, 1e-12);
	ck_assert_rel(lc.vocab_bytes, 9.7e7, 1e-12);
	ck_assert_rel(lc.state_bytes[0] + lc.act_bytes[5] + lc.extra_bytes[5], 0, 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.inflight[0], 4, 0);
	ck_assert_rel(f.inflight[1], 3, 0);
	ck_assert_rel(f.vocab[1], V + vc, 1e-12);
	ck_assert_rel(f.cap_of[0], 80 * GiB - 9.7e7, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(r.fits);
	ck_assert_rel(r.iter_s, 3 * c1 + c0 + c1 + 1e-3 + opt, 1e-12);
	ck_assert_rel(r.time.vocab, 4 * vc, 1e-12);
	ck_assert_rel(r.time.compute, 4 * (2 * fb(B) + V), 1e-12);
	ck_assert_rel(r.time.bubble, c0, 1e-9);
	ck_assert_rel(r.time.compute + r.time.bubble + r.time.pp + r.time.vocab + r.time.dp +
			      r.time.optimizer,
		      r.iter_s, 1e-12);
	ck_assert_int_eq(r.heaviest_rank, 0);
	ck_assert_rel(r.peak_bytes, 7.29e8, 1e-12);
	ck_assert_rel(r.mem.logits, 3e6, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* SlimPipe (Li et al. 2025) on the toy of test_evaluate_toy with 2 slices
 * of 500 tokens, pp 2, dp 2, m = 4, both ranks on group 0. By hand:
 * - a block's GEMMs and memory-bound kernels are linear in the tokens, so
 *   two slices do the same work, with the fixed overhead twice; the
 *   causal attention of the whole sequence is split evenly between the
 *   slices: fwd B.fwd + O, bwd B.bwd + MEM_BWD O; the same for the head
 *   and the embedding;
 * - weights: 1F1B over the 8 slices, a = m - 1/2 = 3.5, b = 1/2;
 *   in flight p - k slices of half a micro-batch: 1 and 0.5;
 * - memory: the head's logits per slice, 500 x 1000 x 6 = 3e6; each block
 *   keeps the micro-batch's K and V, 2 x 8 x 125 x 2 x 1000 = 4e6;
 * - T = 3.5 c1 + 0.5 (c0 + c1) + 1e-3 + opt, c0 = fb(E) + 2 fb(B) + 2
 *   (1 + MEM_BWD) O (three layers with the extra overhead), c1 = 2 fb(B)
 *   + fb(H) + 3 (1 + MEM_BWD) O + the send 4e-5. */
START_TEST(test_slimpipe)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	double x = (1 + MEM_BWD) * O;
	double c0 = fb(E) + 2 * fb(B) + 3 * x, c1 = 2 * fb(B) + fb(H) + 3 * x + 4e-5;
	double opt = 2.5e7 * COMPUTE_ADAM_BYTES / 1e12;

	toy();
	toy_cluster();
	s.slices = 2;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_rel(lc.fwd[1], B.fwd + O, 1e-12);
	ck_assert_rel(lc.time[1], fb(B) + x, 1e-12);
	ck_assert_rel(lc.time[5], fb(H) + x, 1e-12);
	ck_assert_rel(lc.extra_bytes[5], 3e6, 1e-12);
	ck_assert_rel(lc.extra_bytes[1], 4e6, 1e-12);
	ck_assert_rel(lc.act_bytes[1], 3.4e7, 1e-12);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.a, 3.5, 0);
	ck_assert_rel(f.b, 0.5, 0);
	ck_assert_rel(f.inflight[0], 1, 0);
	ck_assert_rel(f.inflight[1], 0.5, 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, 3.5 * c1 + 0.5 * (c0 + c1) + 1e-3 + opt, 1e-12);
	/* the bubble: 0.5 c0, against c0 unsliced (test_evaluate_toy) */
	ck_assert_rel(r.time.bubble, 0.5 * c0, 1e-9);
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

static Suite *suite(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_compute_analytic);
	tcase_add_test(tc, test_compute_measured);
	tcase_add_test(tc, test_eq3_flops);
	tcase_add_test(tc, test_eq3_time);
	tcase_add_test(tc, test_mixed_replicas);
	tcase_add_test(tc, test_uneven_split_hand);
	tcase_add_test(tc, test_uneven_split_brute);
	tcase_add_test(tc, test_uneven_mixed_stage);
	tcase_add_test(tc, test_uneven_inflight);
	tcase_add_test(tc, test_memory_gpt3);
	tcase_add_test(tc, test_memory_overflow);
	tcase_add_test(tc, test_memory_moe);
	tcase_add_test(tc, test_memory_grad_bytes);
	tcase_add_test(tc, test_evaluate_toy);
	tcase_add_test(tc, test_vocab_parallel);
	tcase_add_test(tc, test_slimpipe);
	tcase_add_test(tc, test_doc_masking);
	tcase_add_test(tc, test_evaluate_pp_rank0_bottleneck);
	tcase_add_test(tc, test_ranks_toy);
	tcase_add_test(tc, test_ranks_interleaved);
	tcase_add_test(tc, test_evaluate_dp_tail);
	tcase_add_test(tc, test_layers_tp);
	tcase_add_test(tc, test_tp_overlap);
	tcase_add_test(tc, test_layers_cp);
	tcase_add_test(tc, test_attention_kernels);
	tcase_add_test(tc, test_attention_memory);
	tcase_add_test(tc, test_norm_and_activation_kernels);
	tcase_add_test(tc, test_grad_acc_unfused);
	tcase_add_test(tc, test_gemm_efficiency);
	tcase_add_test(tc, test_fp8);
	tcase_add_test(tc, test_allowance);
	tcase_add_test(tc, test_fit_interleaved_chunks);
	tcase_add_test(tc, test_zb_v_placement);
	tcase_add_test(tc, test_tied_single_stage);
	tcase_add_test(tc, test_frame_interleaved);
	tcase_add_test(tc, test_frame_zb_h1);
	tcase_add_test(tc, test_layers_alike);
	tcase_add_test(tc, test_frame_links);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
