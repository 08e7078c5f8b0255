/* check_cost.c: the cost model (cost.h, compute.h, memory.h) against hand
 * computations: compute time, measured profiles, Narayanan 2021 Eq. 3, the
 * memory of GPT-3 175B, and whole evaluations of small pipelines. */
#include <check.h>
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

#define GiB 1073741824.0
#define MAXL 200

static struct layer lay[MAXL];
static struct model mod;
static struct gpu_type gpus[2];
static struct node_group groups[2];
static struct cluster clu;

/* A GPT as in Narayanan et al. 2021 (f = 4h, MHA, learned positions, LM
 * head tied to the embedding), by COSTMODEL.md's formulas:
 * embedding (V + s) h parameters, no FLOPs, no activations;
 * block 12h^2 + 13h parameters, 24h^2 + 4sh forward FLOPs per token,
 * 34h activation bytes per token (Korthikanti 2022, SP form);
 * head 0 parameters (tied), 2hV FLOPs per token, 4h activation bytes. */
static void gpt(int L, int h, int a, int V, int s)
{
	double hh = h;

	mod = (struct model){.name = "gpt", .hidden = h, .layers = L, .heads = a,
			     .kv_heads = a, .head_dim = h / a, .ffn = 4 * h,
			     .vocab = V, .seq = s, .dtype_bytes = 2, .tied = true,
			     .layer = lay, .n_layer = L + 2};
	lay[0] = (struct layer){.kind = LAYER_EMBEDDING,
				.params = ((double)V + s) * hh,
				.out_bytes_per_token = 2 * hh};
	for (int i = 1; i <= L; i++)
		lay[i] = (struct layer){.kind = LAYER_BLOCK,
					.params = 12 * hh * hh + 13 * hh,
					.flops_per_token = 24 * hh * hh + 4.0 * s * hh,
					.act_bytes_per_token = 34 * hh,
					.out_bytes_per_token = 2 * hh};
	lay[L + 1] = (struct layer){.kind = LAYER_HEAD,
				    .flops_per_token = 2 * hh * V,
				    .act_bytes_per_token = 4 * hh,
				    .out_bytes_per_token = 2 * hh};
}

/* A toy with round numbers: h = 1000 (8 heads of 125), s = 1000; embedding
 * (5e6 parameters, no FLOPs), 4 blocks of 1e7 parameters and 1e9 FLOPs per
 * token (of which attention 4*s*h = 4e6), head of 5e6 parameters and 5e8
 * FLOPs per token. On the 1 PFLOP/s GPU below a block's forward of one
 * sequence of 1000 tokens takes 1 s. */
static void toy(void)
{
	mod = (struct model){.name = "toy", .hidden = 1000, .layers = 4,
			     .heads = 8, .kv_heads = 8, .head_dim = 125,
			     .ffn = 4000, .vocab = 1000, .seq = 1000,
			     .dtype_bytes = 2, .layer = lay, .n_layer = 6};
	lay[0] = (struct layer){.kind = LAYER_EMBEDDING, .params = 5e6,
				.out_bytes_per_token = 2e3};
	for (int i = 1; i <= 4; i++)
		lay[i] = (struct layer){.kind = LAYER_BLOCK, .params = 1e7,
					.flops_per_token = 1e9,
					.act_bytes_per_token = 34e3,
					.out_bytes_per_token = 2e3};
	lay[5] = (struct layer){.kind = LAYER_HEAD, .params = 5e6,
				.flops_per_token = 5e8,
				.act_bytes_per_token = 4e3};
}

/* Group 0: A100-like (312 TFLOP/s, 80 GiB) at constant efficiency 1, NVLink
 * 300 GB/s, 200 GB/s per node; group 1: same nodes with a GPU of half the
 * peak. No latencies, NCCL efficiency 1. */
static void setup(void)
{
	memset(lay, 0, sizeof lay);
	gpus[0] = (struct gpu_type){.name = "A100", .peak_flops = 312e12,
				    .mem_bytes = 80 * GiB, .hbm_bw = 2e12,
				    .eff_max = 1};
	gpus[1] = (struct gpu_type){.name = "half", .peak_flops = 156e12,
				    .mem_bytes = 80 * GiB, .hbm_bw = 2e12,
				    .eff_max = 1};
	for (int g = 0; g < 2; g++)
		groups[g] = (struct node_group){
			.name = g ? "b" : "a", .nodes = 128, .gpus_per_node = 8,
			.gpu = g, .intra_bw = 300e9, .intra_eff = 1,
			.inter_bw = 200e9, .inter_eff = 1, .fabric = 0};
	clu = (struct cluster){.name = "test", .gpu = gpus, .n_gpu = 2,
			       .group = groups, .n_group = 2,
			       .fabric_bw = 25e9, .total_gpus = 2048};
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
	struct strategy s = {.tp = tp, .cp = cp, .pp = pp, .dp = dp, .ep = 1,
			     .vp = 1, .mbs = mbs, .gbs = gbs, .seq = seq,
			     .micro_batches = gbs / (dp * mbs),
			     .schedule = SCHED_1F1B, .recompute = RECOMPUTE_NONE,
			     .n_stages = pp};
	return s;
}

/* Narayanan 2021 Sec. 5.1 analytic time: GPT h = 4096, s = 2048, tp = 2.
 * Block FLOPs per token 24h^2 + 4sh = 402653184 + 33554432 = 436207616;
 * per GPU per sequence w = 436207616 * 2048 / 2 = 446676598784; at
 * eff 0.5 of 312 TFLOP/s: w / 1.56e14 s. */
START_TEST(test_compute_analytic)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 2048);
	struct layer_time t;
	double w = 446676598784.0;

	gpt(2, 4096, 32, 51200, 2048);
	gpus[0].eff_max = 0.5;
	ck_assert_int_eq(compute_layer(&t, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(t.fwd, w / 1.56e14, 1e-12);
	ck_assert_rel(t.bwd, 2 * w / 1.56e14, 1e-12);
	ck_assert_rel(t.recompute, 0, 0);
	/* the attention core is 33554432 / 436207616 = 1/13 of the block. */
	ck_assert_rel(t.attn_fwd, w / 1.56e14 / 13, 1e-12);
	s.recompute = RECOMPUTE_SELECTIVE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, w / 1.56e14 / 13, 1e-12);
	s.recompute = RECOMPUTE_FULL;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, w / 1.56e14, 1e-12);
	/* the head and the embedding are never recomputed. */
	compute_layer(&t, &mod, 3, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, 0, 0);
	compute_layer(&t, &mod, 0, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 0, 0);
	/* half-efficiency work equal to w: eff 0.5 * w / (w + w) = 0.25. */
	gpus[0].eff_half_flop = w;
	s.recompute = RECOMPUTE_NONE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, w / (312e12 * 0.25), 1e-12);
	/* seq 4096 on a model built at 2048: the attention term doubles,
	 * 24h^2 + 4*4096*h = 469762048 per token, w = 469762048 * 4096 / 2. */
	gpus[0].eff_half_flop = 0;
	s.seq = 4096;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 469762048.0 * 4096 / 2 / 1.56e14, 1e-12);
	/* CP 2 halves it. */
	s.cp = 2;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, 469762048.0 * 4096 / 4 / 1.56e14, 1e-12);
}
END_TEST

/* Measured points of a block on A100 at tp 2, seq 2048: mbs 1 (1.0 s,
 * 2.2 s) and mbs 4 (3.4 s, 7.0 s); others for tp 4 and another GPU. */
START_TEST(test_compute_measured)
{
	struct layer_measure pts[5] = {
		{"A100", 2, 1, 2048, 1.0, 2.2}, {"A100", 2, 4, 2048, 3.4, 7.0},
		{"A100", 4, 1, 2048, 9.0, 9.0}, {"H100", 2, 2, 2048, 5.0, 5.0},
		{"A100", 2, 16, 2048, 10.0, 0},
	};
	struct strategy s = strat(2, 1, 1, 1, 2, 2, 2048);
	struct layer_time t;
	struct err e = {""};
	double w;

	gpt(2, 4096, 32, 51200, 2048);
	lay[1].measure = pts;
	lay[1].n_measure = 4;
	/* mbs 2, a third of the way from 1 to 4: 1 + (3.4-1)/3 = 1.8,
	 * 2.2 + (7-2.2)/3 = 3.8. */
	ck_assert_int_eq(compute_layer(&t, &mod, 1, &gpus[0], &s, NULL), 0);
	ck_assert_rel(t.fwd, 1.8, 1e-12);
	ck_assert_rel(t.bwd, 3.8, 1e-12);
	/* selective recompute: the attention core, 1/13 of the forward. */
	s.recompute = RECOMPUTE_SELECTIVE;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.recompute, 1.8 / 13, 1e-12);
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
	/* no point at tp 8 for A100: analytic, 436207616 * 2 * 2048 / 8 at
	 * 312 TFLOP/s. */
	s = strat(8, 1, 1, 1, 2, 2, 2048);
	w = 436207616.0 * 2 * 2048 / 8;
	compute_layer(&t, &mod, 1, &gpus[0], &s, NULL);
	ck_assert_rel(t.fwd, w / 312e12, 1e-12);
	/* the other GPU type has no points at all: analytic. */
	s.tp = 2;
	compute_layer(&t, &mod, 1, &gpus[1], &s, NULL);
	ck_assert_rel(t.fwd, 4 * w / 156e12, 1e-12);
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

/* Eq. 3 end to end: the 1.7B row of Table 1 (L 24, h 2304, a 24) on one
 * GPU at efficiency 1, tp = pp = dp = 1, mbs 1, B = 512 (m = 512). With no
 * communication the compute and recompute parts of the breakdown are Eq. 3
 * over the peak, and mfu * iter_s * peak is the no-recompute count. */
START_TEST(test_eq3_time)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 512, 2048);
	struct layer_costs lc = {0};
	struct cost_result r;
	double L = 24, h = 2304, V = 51200, S = 2048, B = 512;
	double eq3 = 96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * L * h));
	double mf = 72 * B * S * L * h * h * (1 + S / (6 * h) + V / (12 * L * h));

	gpt(24, 2304, 24, 51200, 2048);
	s.recompute = RECOMPUTE_FULL;
	s.first[0] = 0;
	s.first[1] = (unsigned short)mod.n_layer;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.compute + r.time.recompute, eq3 / 312e12, 1e-12);
	ck_assert_rel(r.time.bubble, 0, 1e-9);
	ck_assert_rel(r.mfu * r.iter_s * 312e12, mf, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* GPT-3 175B (L 96, h 12288, a 96, V 51200, s 2048) at TP 8, PP 8, DP 8,
 * mbs 1, sequence parallel, selective recompute, distributed optimizer
 * (ZeRO-1), 1F1B, m = 512 / 8 = 64. Stage 0: embedding + 12 blocks; stages
 * 1-6: 12 blocks; stage 7: 12 blocks + head.
 * Block: 12h^2 + 13h = 1812099072 parameters, / 8 = 226512384 per GPU.
 * Embedding: (51200 + 2048) * 12288 = 654311424, / 8 = 81788928. */
START_TEST(test_memory_gpt3)
{
	struct strategy s = strat(8, 1, 8, 8, 1, 512, 2048);
	struct layer_costs lc = {0};
	struct cost_result r;
	struct layer_mem lm;
	double P = 226512384.0;

	gpt(96, 12288, 96, 51200, 2048);
	s.sp = true;
	s.recompute = RECOMPUTE_SELECTIVE;
	s.zero = 1;
	for (int k = 0; k <= 8; k++)
		s.first[k] = (unsigned short)(k == 0 ? 0 : k == 8 ? 98 : 1 + 12 * k);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	/* Distributed optimizer: 6 + 12/8 = 7.5 bytes per parameter. */
	ck_assert_rel(lc.state_bytes[1], 7.5 * P, 1e-12);
	/* Korthikanti 2022 Table 2, TP + SP, selective: 34 s b h / t =
	 * 34 * 2048 * 12288 / 8 = 106954752 bytes per block. */
	ck_assert_rel(lc.act_bytes[1], 106954752.0, 1e-12);
	/* the head: 4h s / t = 12582912 kept; fp32 logits s V 4 / t =
	 * 2048 * 51200 * 4 / 8 = 52428800 transient. */
	ck_assert_rel(lc.act_bytes[97], 12582912.0, 1e-12);
	ck_assert_rel(lc.extra_bytes[97], 52428800.0, 1e-12);
	ck_assert_rel(lc.extra_bytes[1], 0, 0);

	/* Rank 0 holds min(8 - 0, 64) = 8 micro-batches, rank 1 seven.
	 * Rank 0: states 7.5 * (12 P + 81788928) = 7.5 * 2799937536 =
	 * 20999531520, activations 8 * 12 * 106954752 = 10267656192, plus
	 * 2 GiB: 33414671360 bytes. Rank 1: 7.5 * 12 P + 7 * 12 *
	 * 106954752 + 2 GiB = 20386114560 + 8984199168 + 2147483648 =
	 * 31517797376, lighter; rank 7 lighter still. */
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
	ck_assert_int_eq(r.overflow_stage, -1);
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
	/* no recompute: plus the scores 5 a s^2 b / t = 5 * 96 * 2048^2 / 8 =
	 * 251658240 (Table 2, 5as/h * sbh / t). */
	s.recompute = RECOMPUTE_NONE;
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

/* The same 175B without ZeRO and without recomputation overflows stage 0:
 * states 18 * 2799937536 = 50398875648, activations 8 * 12 * (106954752 +
 * 251658240) = 34426847232, total 84825722880 > cap 80 GiB - 2 GiB =
 * 83751862272. Stage 1: 18 * 12 P + 7 * 12 * 358612992 = 48926674944 +
 * 30123491328 = 79050166272 fits. */
START_TEST(test_memory_overflow)
{
	struct strategy s = strat(8, 1, 8, 8, 1, 512, 2048);
	struct layer_costs lc = {0};
	struct pipeline_frame f;
	struct cost_result r;

	gpt(96, 12288, 96, 51200, 2048);
	s.sp = true;
	for (int k = 0; k <= 8; k++)
		s.first[k] = (unsigned short)(k == 0 ? 0 : k == 8 ? 98 : 1 + 12 * k);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	cost_frame(&f, &mod, &clu, &s);
	ck_assert_rel(f.cap[0], 83751862272.0, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.overflow_stage, 0);
	ck_assert_rel(r.peak_bytes, 84825722880.0 + 2 * GiB, 1e-12);
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

/* Toy on 1 TFLOP/s GPUs, tp 1, pp 2, dp 2, mbs 1, gbs 8 (m = 4), 1F1B, no
 * recompute, stage 0 = embedding + 2 blocks (fwd 2 s, bwd 4 s), stage 1 = 2
 * blocks + head (fwd 2.5 s, bwd 5 s). The send: 1000 * 1000 * 2 = 2e6
 * bytes, two ranks of 2 GPUs share a node: 100 GB/s, forward + backward
 * 4e-5 s, charged to the receiving stage: c0 = 6, c1 = 7.50004;
 * T_pipe = 3 * 7.50004 + 13.50004 = 36.00016.
 * Each rank has 2.5e7 parameters: the gradient all-reduce over 2,
 * 2 * 1/2 * 1e8 / 1e11 = 1e-3 s, hides under 0.9 x the 4 s (5 s) backward;
 * Adam 2.5e7 * 160 / 1e12 = 4e-3 s. iter_s = 36.00416. Bubble 36.00016 -
 * 4 * 7.50004 = 6; PP 4 * 4e-5. */
START_TEST(test_evaluate_toy)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = {0};
	struct cost_result r;
	double it = 36.00416;

	toy();
	toy_cluster();
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	ck_assert_int_eq(lc.n_layer, 6);
	ck_assert_int_eq(lc.n_group, 2);
	ck_assert_rel(lc.time[1], 3.0, 1e-12);
	ck_assert_rel(lc.fwd[1], 1.0, 1e-12);
	ck_assert_rel(lc.time[5], 1.5, 1e-12);
	/* group 1 runs at half the peak. */
	ck_assert_rel(lc.time[6 + 1], 6.0, 1e-12);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, it, 1e-12);
	ck_assert_rel(r.time.compute, 30, 1e-12);
	ck_assert_rel(r.time.bubble, 6, 1e-9);
	ck_assert_rel(r.time.pp, 1.6e-4, 1e-9);
	ck_assert_rel(r.time.dp, 0, 0);
	ck_assert_rel(r.time.optimizer, 4e-3, 1e-12);
	/* tokens 8 * 1000; MFU 3 * 8000 * 4.5e9 / (iter_s * 4 GPUs * 1e12). */
	ck_assert_rel(r.tokens_per_s, 8000 / it, 1e-12);
	ck_assert_rel(r.mfu, 1.08e14 / (it * 4e12), 1e-12);

	/* Rank 1 on the half-speed group: c1 = 15; the send between groups
	 * goes over the NICs, 100 GB/s shared by the 2 GPUs of a rank,
	 * 2 * 2e6 / 5e10 = 8e-5 into rank 1; T_pipe = 3 * 15.00008 + 21.00008
	 * = 66.00032, plus rank 0's 0.004 s tail (Adam above) = 66.00432;
	 * peaks 2 * 1e12 + 2 * 0.5e12. */
	s.group[1] = 1;
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, 66.00432, 1e-12);
	ck_assert_rel(r.time.compute, 60, 1e-12);
	ck_assert_rel(r.time.bubble, 6, 1e-9);
	ck_assert_rel(r.mfu, 1.08e14 / (66.00432 * 3e12), 1e-12);
	cost_layers_free(&lc);
	ck_assert_ptr_null(lc.time);
}
END_TEST

/* The toy with blocks of 1e9 parameters on a 1 GB/s NVLink: rank 0 has
 * 5e6 + 2e9 = 2.005e9 parameters, fp32 gradients 8.02e9 bytes, all-reduce
 * over 2: 8.02 s, 0.9 x its 4 s backward hidden: 4.42 s exposed; rank 1 the
 * same with 5 s backward: 3.52. Adam 2.005e9 * 160 / 1e12 = 0.3208 each.
 * Send 2 * 2e6 / 1e9 = 0.004 into rank 1: T_pipe = 3 * 7.504 + 6 + 7.504
 * = 36.016; iter_s = 36.016 + 4.42 + 0.3208 = 40.7568.
 * ZeRO-1: reduce-scatter 4.01 s (0.41 exposed on rank 0) + all-gather of
 * bf16 parameters 2.005 s, Adam on half: 0.1604; rank 0 sets the tail:
 * 36.016 + 2.415 + 0.1604 = 38.5914. */
START_TEST(test_evaluate_dp_tail)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = {0};
	struct cost_result r;

	toy();
	toy_cluster();
	for (int i = 1; i <= 4; i++)
		lay[i].params = 1e9;
	groups[0].intra_bw = 1e9;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, 40.7568, 1e-12);
	ck_assert_rel(r.time.dp, 4.42, 1e-12);
	ck_assert_rel(r.time.optimizer, 0.3208, 1e-12);
	ck_assert_rel(r.time.bubble, 6, 1e-12);
	ck_assert_rel(r.time.compute + r.time.recompute + r.time.bubble +
			      r.time.tp + r.time.cp + r.time.pp + r.time.dp +
			      r.time.ep + r.time.optimizer,
		      r.iter_s, 1e-12);
	cost_layers_free(&lc);

	s.zero = 1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s, 38.5914, 1e-12);
	ck_assert_rel(r.time.dp, 2.415, 1e-12);
	ck_assert_rel(r.time.optimizer, 0.1604, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* Toy block at tp 2, SP: forward 0.5 s, backward 1 s; TP message
 * 1000 * 1000 * 2 = 2e6 bytes, all-reduce over 2 at 100 GB/s: 2e-5 s;
 * 2 forward + 2 backward: time 1.5 + 8e-5. Full recompute adds the forward
 * and its collectives: 2.00012, forward side 0.50004. */
START_TEST(test_layers_tp)
{
	struct strategy s = strat(2, 1, 1, 1, 1, 1, 1000);
	struct layer_costs lc = {0};

	toy();
	toy_cluster();
	s.sp = true;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	ck_assert_rel(lc.time[1], 1.5 + 8e-5, 1e-12);
	ck_assert_rel(lc.fwd[1], 0.5 + 4e-5, 1e-12);
	cost_layers_free(&lc);
	s.recompute = RECOMPUTE_FULL;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	ck_assert_rel(lc.time[1], 2.00012, 1e-12);
	ck_assert_rel(lc.fwd[1], 0.50004, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* Toy block at cp 2: forward 0.5 s of which attention 0.5 * 4e6/1e9 =
 * 2e-3 s. K,V shard 2 * 500 * 8 * 125 * 2 = 2e6 bytes, 1 step. At 100 GB/s
 * (2e-5 s) it hides under the attention. On a 0.1 GB/s link it takes
 * 0.02 s: 0.018 exposed forward, 0.036 backward: time 1.554, forward side
 * 0.518. Selective recompute adds the core (2e-3) and its ring (0.018). */
START_TEST(test_layers_cp)
{
	struct strategy s = strat(1, 2, 1, 1, 1, 1, 1000);
	struct layer_costs lc = {0};

	toy();
	toy_cluster();
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	ck_assert_rel(lc.time[1], 1.5, 1e-12);
	cost_layers_free(&lc);
	groups[0].intra_bw = 1e8;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	ck_assert_rel(lc.time[1], 1.554, 1e-12);
	ck_assert_rel(lc.fwd[1], 0.518, 1e-12);
	cost_layers_free(&lc);
	s.recompute = RECOMPUTE_SELECTIVE;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL), 0);
	ck_assert_rel(lc.time[1], 1.554 + 0.002 + 0.018, 1e-12);
	cost_layers_free(&lc);
}
END_TEST

/* The frame of an interleaved toy: pp 2, vp 2, m 4, rank 0 on group 0 and
 * rank 1 on group 1. Virtual stages 0..3 on ranks 0, 1, 0, 1: sends into
 * stages 1, 2 (the wrap-around 1 -> 0) and 3, none into the first; each
 * between the groups, 8e-5 s (see test_evaluate_toy). In flight: rank 0
 * min(8, 2 + 2 + 1) / 2 = 2.5, rank 1 (0 + 2 + 1) / 2 = 1.5. Weights
 * a = 4*2 - 1 = 7, b = 1/2. Cap (80 GiB - 2 GiB) / 2 per chunk. */
START_TEST(test_frame_interleaved)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct pipeline_frame f;

	toy();
	toy_cluster();
	s.schedule = SCHED_INTERLEAVED;
	s.vp = 2;
	s.n_stages = 4;
	s.group[1] = 1;
	cost_frame(&f, &mod, &clu, &s);
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
}
END_TEST

/* ZB-H1 on the toy, one rank of group 0: rho = forward / total = 1/3
 * without recomputation, so a = m - 1/3. With full recomputation the
 * blocks rerun their forward: forward 4.5 s, recompute 4, backward 9:
 * rho = 8.5 / 17.5. */
START_TEST(test_frame_zb_h1)
{
	struct strategy s = strat(1, 1, 2, 1, 1, 8, 1000);
	struct pipeline_frame f;

	toy();
	toy_cluster();
	s.schedule = SCHED_ZB_H1;
	cost_frame(&f, &mod, &clu, &s);
	ck_assert_rel(f.a, 8 - 1.0 / 3, 1e-12);
	ck_assert_rel(f.b, 1.0 / 3, 1e-12);
	ck_assert_rel(f.inflight[0], 2, 0);
	ck_assert_rel(f.inflight[1], 1, 0);
	s.recompute = RECOMPUTE_FULL;
	cost_frame(&f, &mod, &clu, &s);
	ck_assert_rel(f.a, 8 - 8.5 / 17.5, 1e-12);
	ck_assert_rel(f.b, 8.5 / 17.5, 1e-12);
}
END_TEST

START_TEST(test_errors)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 1, 1000);
	struct layer_measure bad = {"A100", 1, 1, 1000, -1.0, 1.0};
	struct layer_costs lc = {0};
	struct err e = {""};

	toy();
	s.tp = 0;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "tp 0"));
	ck_assert_ptr_null(lc.time);
	s.tp = 1;
	lay[2].measure = &bad;
	lay[2].n_measure = 1;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, &e), -1);
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
	tcase_add_test(tc, test_memory_gpt3);
	tcase_add_test(tc, test_memory_overflow);
	tcase_add_test(tc, test_memory_moe);
	tcase_add_test(tc, test_evaluate_toy);
	tcase_add_test(tc, test_evaluate_dp_tail);
	tcase_add_test(tc, test_layers_tp);
	tcase_add_test(tc, test_layers_cp);
	tcase_add_test(tc, test_frame_interleaved);
	tcase_add_test(tc, test_frame_zb_h1);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
