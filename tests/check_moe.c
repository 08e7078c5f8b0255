/* check_moe.c: the busiest expert-parallel rank's load (moe.h) against
 * values worked out with Python's statistics.NormalDist (an implementation
 * of the inverse normal of its own) and against exact expected maxima. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "cluster.h"
#include "compute.h"
#include "memory.h"
#include "model.h"
#include "moe.h"
#include "strategy.h"
#include "testutil.h"

/* Blom's Phi^-1((n - 0.375) / (n + 0.25)), from NormalDist().inv_cdf:
 * n = 2: 0.5894557978497785, 8: 1.4342001596863794, 64:
 * 2.3366910755775656. The exact expected maxima of 2 and 8 standard
 * normals are 1/sqrt(pi) = 0.5641896 and 1.4236003 (tables of normal order
 * statistics): within 5% and 1%. */
START_TEST(test_expected_max)
{
	ck_assert_rel(moe_expected_max(2), 0.5894557978497785, 1e-8);
	ck_assert_rel(moe_expected_max(8), 1.4342001596863794, 1e-8);
	ck_assert_rel(moe_expected_max(64), 2.3366910755775656, 1e-8);
	ck_assert_rel(moe_expected_max(2), 1 / sqrt(acos(-1)), 0.05);
	ck_assert_rel(moe_expected_max(8), 1.4236003, 0.01);
	ck_assert_rel(moe_expected_max(1), 0, 0);
	/* Acklam's tails (p below 0.02425): n = 100 gives p = 0.99377; NormalDist: 2.498590560962256 */
	ck_assert_rel(moe_expected_max(100), 2.498590560962256, 1e-8);
}
END_TEST

/* 8 experts, top 2, EP 8, seq 4096, mbs 1, CP 1: a rank receives mu =
 * 4096 x 2 = 8192 assignments on average, the EP group routes n_seq = 8
 * sequences. Micro-batch balancing: lam = 1 + z8 sqrt((7/8) / 8192) =
 * 1.0148224099719503; global-batch: + 0.5^2 / 8 under the root,
 * 1.2539660792335567. CP 2 with mbs 2: mu = 2 x 2048 x 2, n_seq = 2 x 8/2:
 * the same. */
START_TEST(test_load_factor)
{
	struct model m;
	struct strategy s = { .tp = 1, .cp = 1, .pp = 1, .dp = 8, .ep = 8, .mbs = 1, .seq = 4096 };

	memset(&m, 0, sizeof m);
	m.experts = 8;
	m.top_k = 2;
	ck_assert_rel(moe_load_factor(&m, &s), 1.0148224099719503, 1e-9);
	s.moe_balance = MOE_BALANCE_GLOBAL_BATCH;
	ck_assert_rel(moe_load_factor(&m, &s), 1.2539660792335567, 1e-9);
	s.cp = 2;
	s.mbs = 2;
	ck_assert_rel(moe_load_factor(&m, &s), 1.2539660792335567, 1e-9);
	/* more sequences per micro-batch: less imbalance */
	s.mbs = 8;
	ck_assert(moe_load_factor(&m, &s) < 1.2539660792335567);
	/* a capacity factor caps it; the tokens over it are dropped */
	s.moe_capacity = 1.1;
	ck_assert_rel(moe_load_factor(&m, &s), 1.1, 0);
	s.moe_capacity = 2;
	ck_assert(moe_load_factor(&m, &s) < 2);
	/* capacity below 1 is refused by the options; ignored here */
	s.moe_capacity = 0.5;
	ck_assert(moe_load_factor(&m, &s) > 1);
	/* TP 8 with whole experts (etp 1): the 8 EP members sit 1 apart,
	 * inside one TP group, and share its one sequence (mbs 1, cp 1) and
	 * its tokens, 4096 / 8 per GPU: mu = 512 x 2 = 1024, n_seq = 1:
	 * 1 + z8 sqrt((7/8) / 1024 + 0.25) = 1.7183245472696318 (global
	 * batch); at etp 8 the members sit 8 apart, in 8 TP groups: mu =
	 * 8192, n_seq = 8, as at TP 1 */
	s.moe_capacity = 0;
	s.cp = 1;
	s.mbs = 1;
	s.tp = 8;
	s.etp = 1;
	s.dp = 1;
	ck_assert_rel(moe_load_factor(&m, &s), 1.7183245472696318, 1e-9);
	s.etp = 8;
	ck_assert_rel(moe_load_factor(&m, &s), 1.2539660792335567, 1e-9);
	s.tp = 1;
	s.etp = 0;
	s.dp = 8;
	/* one rank holds every expert; a dense model */
	s.ep = 1;
	s.moe_capacity = 0;
	ck_assert_rel(moe_load_factor(&m, &s), 1, 0);
	m.experts = 0;
	s.ep = 8;
	ck_assert_rel(moe_load_factor(&m, &s), 1, 0);
}
END_TEST

/* Into *m an MoE model of three layers ly (embedding, block, head): 8
 * experts, top 2, hidden 16; the rest 0. */
static void tiny_moe(struct model *m, struct layer *ly)
{
	memset(m, 0, sizeof *m);
	m->layer = ly;
	m->n_layer = 3;
	m->experts = 8;
	m->top_k = 2;
	m->hidden = 16;
}

/* Expert tensor parallelism folds a stage's tp * cp * dp GPUs into etp x
 * ep x edp for the experts. A block of 1e9 parameters, 8e8 of them in
 * experts, at tp 4, dp 4, ep 2, ZeRO 1: per GPU the dense 2e8 / 4 = 5e7;
 * the experts 8e8 / (ep x etp): 1e8 at etp 4 (= tp, edp = 16 / 8 = 2),
 * 4e8 at etp 1 (edp = 16 / 2 = 8). The optimizer states (12 bytes each)
 * are sharded over dp = 4 and edp: 12 (5e7 / 4 + 1e8 / 2) = 7.5e8 and
 * 12 (5e7 / 4 + 4e8 / 8) = 7.5e8 (the same bytes, fewer shards of bigger
 * experts); the bf16 weights 2 (5e7 + 1e8) = 3e8 and 2 (5e7 + 4e8) = 9e8. */
START_TEST(test_expert_tp_memory)
{
	struct layer ly[3] = { { .kind = LAYER_EMBEDDING },
			       { .kind = LAYER_BLOCK, .params = 1e9, .expert_params = 8e8 },
			       { .kind = LAYER_HEAD } };
	struct model m;
	struct strategy s = { .tp = 4, .cp = 1, .pp = 1, .dp = 4, .ep = 2, .mbs = 1, .seq = 16, .zero = 1, .sp = true };
	struct layer_mem lm;
	double d, x;

	tiny_moe(&m, ly);
	memory_params(&ly[1], &s, &d, &x);
	ck_assert_rel(d, 5e7, 1e-12);
	ck_assert_rel(x, 1e8, 1e-12);
	ck_assert_int_eq(strategy_edp(&s), 2);
	memory_layer(&lm, &m, 1, &s);
	ck_assert_rel(lm.optimizer, 7.5e8, 1e-12);
	ck_assert_rel(lm.weights, 3e8, 1e-12);
	s.etp = 1;
	memory_params(&ly[1], &s, &d, &x);
	ck_assert_rel(x, 4e8, 1e-12);
	ck_assert_int_eq(strategy_edp(&s), 8);
	memory_layer(&lm, &m, 1, &s);
	ck_assert_rel(lm.optimizer, 7.5e8, 1e-12);
	ck_assert_rel(lm.weights, 9e8, 1e-12);
}
END_TEST

/* Padding to capacity (moe_load_factor with moe_pad): every expert
 * computes exactly C x the mean, C = 1.25 here, where without padding the
 * busiest of 2 EP ranks at mu = 16 x 2 = 32 assignments per expert group
 * carries 1 + 0.5894557978497785 x sqrt(0.5 / 32) = 1.0736820 (below C).
 * The experts' input in memory: an MoE block of A = 1000 bytes a token at
 * TP 4 with SP, 16 tokens, padded at C = 1: 1000 x 16 / 4 plus the 2
 * copies of each token's 16-wide bf16 row, 2 x 2 x 16 x 16 / 4 = 256. */
START_TEST(test_pad_capacity)
{
	struct layer ly[3] = { { .kind = LAYER_EMBEDDING },
			       { .kind = LAYER_BLOCK, .params = 1e9, .expert_params = 8e8, .act_bytes_per_token = 1000 },
			       { .kind = LAYER_HEAD } };
	struct model m;
	struct strategy s = { .tp = 1, .etp = 1, .cp = 1, .pp = 1, .dp = 2, .ep = 2, .mbs = 1, .seq = 16, .zero = 1, .sp = true, .moe_capacity = 1.25 };
	struct layer_mem lm;

	tiny_moe(&m, ly);
	m.moe_ffn = 64;
	ck_assert_double_eq_tol(moe_load_factor(&m, &s), 1.0736820, 1e-6);
	s.moe_pad = true;
	ck_assert_double_eq_tol(moe_load_factor(&m, &s), 1.25, 1e-12);
	s.moe_capacity = 0;
	ck_assert_double_eq_tol(moe_load_factor(&m, &s), 1.0736820, 1e-6);
	s.moe_capacity = 1;
	s.tp = s.etp = 4;
	memory_layer(&lm, &m, 1, &s);
	ck_assert_double_eq_tol(lm.act, 4000 + 256, 1e-9);
}
END_TEST

/* FP8 casts in an MoE block (compute.c fp8_casts) at TP 1, EP 2, 16
 * tokens, top 2 of 8 experts padded to capacity 1 (each computes its
 * mean: 32 routed rows), h = 16, 2 heads of 8 (QKV out 48), expert FFN 64
 * (GeLU): the attention output casts its input forward (16 x 16) and its
 * output gradient backward (16 x 16), the QKV its output gradient (16 x
 * 48); each expert GEMM its input forward and its output gradient
 * backward, the up projection 32 x 16 and 32 x 64, the down projection
 * 32 x 64 and 32 x 16. Forward 2816 elements, backward 3584, at
 * FP8_CAST_BYTES each over 1 TB/s x COMPUTE_HBM_EFF: in the memory-bound
 * forward beside BF16's, and in the backward beside 2 x the GEMMs'
 * difference. */
START_TEST(test_fp8_casts)
{
	struct layer ly[3] = { { .kind = LAYER_EMBEDDING },
			       { .kind = LAYER_BLOCK, .params = 1e4, .flops_per_token = 1e6 },
			       { .kind = LAYER_HEAD } };
	struct gpu_type g = { .peak_flops = 1e12, .peak_fp8_flops = 2e12, .hbm_bw = 1e12, .eff_max = 1 };
	struct strategy s = { .tp = 1, .etp = 1, .cp = 1, .pp = 1, .dp = 2, .ep = 2, .mbs = 1, .seq = 16, .sp = true, .moe_capacity = 1, .moe_pad = true, .attn = ATTN_FLASH };
	struct layer_time b, f;
	struct model m;
	double bw = 1e12 * COMPUTE_HBM_EFF;

	tiny_moe(&m, ly);
	m.heads = m.kv_heads = 2;
	m.head_dim = 8;
	m.moe_ffn = 64;
	m.ffn_kind = FFN_GELU;
	m.dtype_bytes = 2;
	ck_assert_int_eq(compute_layer(&b, &m, 1, &g, &s, NULL), 0);
	s.fp8 = true;
	ck_assert_int_eq(compute_layer(&f, &m, 1, &g, &s, NULL), 0);
	ck_assert_double_eq_tol(f.mem_fwd - b.mem_fwd, FP8_CAST_BYTES * 2816 / bw, 1e-18);
	ck_assert_double_eq_tol(f.bwd - b.bwd - 2 * (f.gemm_fwd - b.gemm_fwd), FP8_CAST_BYTES * 3584 / bw,
				1e-18);
	/* a GPU without FP8 runs BF16: no casts */
	g.peak_fp8_flops = 0;
	ck_assert_int_eq(compute_layer(&f, &m, 1, &g, &s, NULL), 0);
	ck_assert_double_eq(f.mem_fwd, b.mem_fwd);
}
END_TEST

/* tiny_moe with experts of FFN 64 and one shared expert of FFN 32, bf16. */
static void tiny_shared_moe(struct model *m, struct layer *ly)
{
	tiny_moe(m, ly);
	m->moe_ffn = 64;
	m->shared_experts = 1;
	m->shared_ffn = 32;
	m->dtype_bytes = 2;
}

/* The MoE recomputation modules' memory (memory.c module_savings): an MoE
 * block of A = 1000 bytes a token, 16 tokens at TP 1 with SP, top 2 of 8
 * experts of FFN 64 padded to capacity 1 (lam = 1), one shared expert of
 * FFN 32, h = 16, bf16. Without modules: 1000 x 16 + the dispatched
 * tokens' 2 copies of a 16-wide row, 2 x 2 x 16 x 16 = 1024: 17024.
 * moe_act drops the routed activation outputs, 2 x 64 x 2 x 16 = 4096;
 * shared_experts the shared expert's two rows of 32, 2 x 2 x 32 x 16 =
 * 2048; moe the whole layer: the routed experts' two rows and their
 * input, 2 x (2 x 2 x 64 + 2 x 16) x 16 = 9216, and the shared expert's
 * 2048: 11264 (moe_act and shared_experts with it add nothing more);
 * mla_up_proj nothing without MLA, and with it (2 heads, q from h, d_q 8
 * + 4, d_v 8) Q, K and V, 2 x 2 x (2 x 12 + 8) x 16 = 2048. */
START_TEST(test_recompute_moe_memory)
{
	struct layer ly[3] = { { .kind = LAYER_EMBEDDING },
			       { .kind = LAYER_BLOCK, .params = 1e9, .expert_params = 8e8, .act_bytes_per_token = 1000 },
			       { .kind = LAYER_HEAD } };
	struct strategy s = { .tp = 1, .etp = 1, .cp = 1, .pp = 1, .dp = 2, .ep = 2, .mbs = 1, .seq = 16, .sp = true, .moe_capacity = 1, .moe_pad = true, .attn = ATTN_FLASH, .recompute = RECOMPUTE_SELECTIVE };
	static const struct {
		unsigned mods;
		double act;
	} want[] = {
		{ RM_CORE_ATTN, 17024 },
		{ RM_MOE_ACT, 17024 - 4096 },
		{ RM_SHARED_EXPERTS, 17024 - 2048 },
		{ RM_MOE_ACT | RM_SHARED_EXPERTS, 17024 - 6144 },
		{ RM_MOE, 17024 - 11264 },
		{ RM_MOE | RM_MOE_ACT | RM_SHARED_EXPERTS, 17024 - 11264 },
		{ RM_MLA_UP_PROJ, 17024 },
	};
	struct layer_mem lm;
	struct model m;

	tiny_shared_moe(&m, ly);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		s.recompute_modules = want[i].mods;
		memory_layer(&lm, &m, 1, &s);
		ck_assert_msg(fabs(lm.act - want[i].act) < 1e-9, "modules %u: %g bytes, want %g",
			      want[i].mods, lm.act, want[i].act);
	}
	m.heads = 2;
	m.kv_lora_rank = 8;
	m.qk_nope_dim = 8;
	m.qk_rope_dim = 4;
	m.v_head_dim = 8;
	s.recompute_modules = RM_MLA_UP_PROJ;
	memory_layer(&lm, &m, 1, &s);
	ck_assert_double_eq_tol(lm.act, 17024 - 2048, 1e-9);
	/* padded to capacity 1.5 (lam = 1.5): the routed activations held
	 * above the mean, 0.5 x 4 x 64 x 2 x 16 = 4096, and the dispatched
	 * copies 1.5 x 1024 = 1536: 16000 + 4096 + 1536 = 21632; moe_act
	 * drops 1.5 x 4096 = 6144; moe 1.5 x 9216 + 2048 = 15872 */
	m.kv_lora_rank = 0;
	s.moe_capacity = 1.5;
	s.recompute_modules = RM_CORE_ATTN;
	memory_layer(&lm, &m, 1, &s);
	ck_assert_double_eq_tol(lm.act, 21632, 1e-9);
	s.recompute_modules = RM_MOE_ACT;
	memory_layer(&lm, &m, 1, &s);
	ck_assert_double_eq_tol(lm.act, 21632 - 6144, 1e-9);
	s.recompute_modules = RM_MOE;
	memory_layer(&lm, &m, 1, &s);
	ck_assert_double_eq_tol(lm.act, 21632 - 15872, 1e-9);
}
END_TEST

/* The MoE recomputation modules' seconds (compute.c module_parts): the
 * block above without heads (no QKV or output GEMM; the attention core
 * taken as one head of h, 2 x 16 x (16 + 16) = 1024 FLOPs a token), 1e6
 * FLOPs a token, 16 tokens, on a GPU of 1e12 FLOP/s at full efficiency
 * and 1 TB/s. Its GEMMs' FLOPs a token: the routed experts' two 2 x (2 x
 * 16 x 64) = 4096 each, the shared expert's 2 x 16 x 32 = 1024 each:
 * routed 8192 / 10240 = 0.8 of the (1e6 - 1024) x 16 = 15983616 GEMM
 * FLOPs, 1.27868928e-5 s, shared 0.2, 3.1967232e-6 s. The GeLU reads and
 * writes 2 rows of the 160 FFN columns a token runs through, bf16: 640
 * bytes a token, 512 of them routed; the dispatcher's permutations (2 + 2
 * x 2) rows of 16, 192 bytes: over 16 tokens at 1 TB/s x COMPUTE_HBM_EFF.
 * moe_act reruns the routed activation, shared_experts the shared GEMMs
 * and activation, moe all of it with the routed GEMMs, the permutations
 * and the MoE block's fixed time. */
START_TEST(test_recompute_moe_time)
{
	struct layer ly[3] = { { .kind = LAYER_EMBEDDING },
			       { .kind = LAYER_BLOCK, .params = 1e4, .flops_per_token = 1e6 },
			       { .kind = LAYER_HEAD } };
	struct gpu_type g = { .peak_flops = 1e12, .hbm_bw = 1e12, .eff_max = 1 };
	struct strategy s = { .tp = 1, .etp = 1, .cp = 1, .pp = 1, .dp = 2, .ep = 2, .mbs = 1, .seq = 16, .sp = true, .moe_capacity = 1, .moe_pad = true, .attn = ATTN_FLASH, .recompute = RECOMPUTE_SELECTIVE };
	double bw = 1e12 * COMPUTE_HBM_EFF;
	double act = 16 * 512 / bw, shared = 3.1967232e-6 + 16 * 128 / bw;
	double moe = 1.27868928e-5 + act + shared + 16 * 192 / bw + MOE_LAYER_OVERHEAD_S;
	struct layer_time t;
	struct model m;

	tiny_shared_moe(&m, ly);
	m.ffn_kind = FFN_GELU;
	s.recompute_modules = RM_MOE_ACT;
	ck_assert_int_eq(compute_layer(&t, &m, 1, &g, &s, NULL), 0);
	ck_assert_double_eq_tol(t.recompute, act, 1e-18);
	s.recompute_modules = RM_SHARED_EXPERTS;
	ck_assert_int_eq(compute_layer(&t, &m, 1, &g, &s, NULL), 0);
	ck_assert_double_eq_tol(t.recompute, shared, 1e-18);
	s.recompute_modules = RM_MOE | RM_MOE_ACT | RM_SHARED_EXPERTS;
	ck_assert_int_eq(compute_layer(&t, &m, 1, &g, &s, NULL), 0);
	ck_assert_double_eq_tol(t.recompute, moe, 1e-18);
	/* a dense block: none of them reruns anything */
	m.experts = 0;
	ck_assert_int_eq(compute_layer(&t, &m, 1, &g, &s, NULL), 0);
	ck_assert_double_eq(t.recompute, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("moe");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_expected_max);
	tcase_add_test(tc, test_load_factor);
	tcase_add_test(tc, test_expert_tp_memory);
	tcase_add_test(tc, test_pad_capacity);
	tcase_add_test(tc, test_fp8_casts);
	tcase_add_test(tc, test_recompute_moe_memory);
	tcase_add_test(tc, test_recompute_moe_time);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
