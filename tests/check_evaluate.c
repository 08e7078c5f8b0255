/* check_evaluate.c: whole iterations against hand computations: cost_evaluate
 * on small pipelines, per rank (cost_ranks), the DP tail, Eq. 3, vocabulary
 * parallelism, SlimPipe, ZB-H1, and mixed groups with uneven micro-batches. */
#define TESTUTIL_COST_FIXTURE
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cluster.h"
#include "compute.h"
#include "cost.h"
#include "model.h"
#include "strategy.h"
#include "testutil.h"

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

/* The toy on two pipeline ranks: E + 2 blocks on group 0, 2 blocks + the
 * head on the half-speed group 1. */
static void toy_two_ranks(struct strategy *s)
{
	toy();
	toy_cluster();
	s->first[0] = 0;
	s->first[1] = 3;
	s->first[2] = 6;
	s->group[1] = 1;
}

/* Deferred LM-head weight gradients (strategy_deferred) on the placement
 * of test_ranks_toy with m = 64 / (2 x 1) = 32: the head (rank 1, the
 * half-speed group, the bottleneck) has a weight-gradient GEMM as long as
 * its forward's, W = H1.gemm = 5e8 x 1000 / 0.5e12 = 1 s. Deferring D micro-batches' takes D
 * W / m off each of rank 1's micro-batches, D W off T_pipe = m c1 + c0,
 * and puts D W before rank 1's reduction and step, which its lead covers:
 * rank 0's backward of the last micro-batch and half the send, E.bwd + 2
 * B.bwd + 4e-5 (about 4 s). D = 2: 2 s, covered: the iteration 2 s
 * shorter. All 32: 32 s, of which the lead covers its length: the
 * iteration shorter by the lead. Memory: rank 1 keeps each deferred
 * micro-batch's head input and output gradient, 1000 tokens x 2 bytes x
 * (1000 + 1000), 4e6 bytes, beside its logits' 6e6. */
START_TEST(test_deferred_wgrad)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 64, 1000);
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	struct part H1 = toy_head(0.5e12, 1e12, 1, 1, false);
	double lead = E.bwd + 2 * B.bwd + 4e-5;
	struct cost_result plain, two, all;
	struct cost_rank x[2];
	struct layer_costs lc = { 0 };

	toy_two_ranks(&s);
	ck_assert_rel(H1.gemm, 1, 1e-12);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&plain, &mod, &clu, &s, &lc);
	cost_layers_free(&lc);
	s.wgrad_defer = 2;
	ck_assert_int_eq(strategy_deferred(&s), 2);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&two, &mod, &clu, &s, &lc);
	cost_ranks(x, &mod, &clu, &s, &lc);
	cost_layers_free(&lc);
	ck_assert_rel(two.iter_s, plain.iter_s - 2, 1e-9);
	ck_assert_rel(x[1].mem.logits, 6e6 + 2 * 4e6, 1e-12);
	s.wgrad_defer = -1;
	ck_assert_int_eq(strategy_deferred(&s), 32);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&all, &mod, &clu, &s, &lc);
	cost_layers_free(&lc);
	ck_assert(lead > 3 && lead < 32);
	ck_assert_rel(all.iter_s, plain.iter_s - lead, 1e-9);
	ck_assert_int_eq(all.tail_rank, 1);
	/* no pipeline: nothing to defer to */
	s.pp = 1;
	ck_assert_int_eq(strategy_deferred(&s), 0);
}
END_TEST

/* Selective recomputation by module per pipeline rank (cost_ranks'
 * recompute_mod) on the placement of test_ranks_toy: core_attn reruns
 * each block's attention core, 2 B.attn on rank 0 and 2 B1.attn on the
 * half-speed rank 1 (the embedding and the head rerun nothing); with
 * layernorm beside it, core_attn keeps those seconds, layernorm holds
 * what the rank's recomputation gained, and the modules add up to it; the
 * iteration's breakdown (cost_evaluate) is m = 4 x the bottleneck's. */
START_TEST(test_ranks_recompute_modules)
{
	struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_rank x[2], y[2];
	struct cost_result r;
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part B1 = toy_block(0.5e12, 1e12, 1, 1, false);

	toy_two_ranks(&s);
	s.recompute = RECOMPUTE_SELECTIVE;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_int_eq(cost_ranks(x, &mod, &clu, &s, &lc), 2);
	cost_layers_free(&lc);
	ck_assert_rel(x[0].recompute_mod[0], 2 * B.attn, 1e-12);
	ck_assert_rel(x[1].recompute_mod[0], 2 * B1.attn, 1e-12);
	ck_assert_rel(x[0].recompute, 2 * B.attn, 1e-12);
	for (int i = 1; i < RM_COUNT; i++)
		ck_assert_rel(x[0].recompute_mod[i] + x[1].recompute_mod[i], 0, 0);
	s.recompute_modules = RM_CORE_ATTN | RM_LAYERNORM;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	ck_assert_int_eq(cost_ranks(y, &mod, &clu, &s, &lc), 2);
	cost_layers_free(&lc);
	for (int q = 0; q < 2; q++) {
		ck_assert(y[q].recompute > x[q].recompute);
		ck_assert_rel(y[q].recompute_mod[0], x[q].recompute_mod[0], 1e-12);
		ck_assert_rel(y[q].recompute_mod[1], y[q].recompute - x[q].recompute, 1e-9);
	}
	/* the iteration's breakdown: m = 4 x the bottleneck rank's (rank 1) */
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	cost_layers_free(&lc);
	ck_assert_int_eq(r.bottleneck_rank, 1);
	ck_assert_rel(r.time.recompute_mod[0], 4 * 2 * B1.attn, 1e-12);
	ck_assert_rel(r.time.recompute_mod[0] + r.time.recompute_mod[1], r.time.recompute, 1e-12);
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

	toy_two_ranks(&s);
	gpus[0].mem_bytes = gpus[1].mem_bytes = 1e9;
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

/* Interleaved, vp 2, on the toy (the partition of check_memory.c's
 * test_fit_interleaved_chunks, E+2|1|1|1+L, all on group 0, m = 4): rank 0
 * holds stages 0 and 2, rank 1 stages 1 and 3; each send inside the group
 * is 4e-5 (test_evaluate_toy: pp 1.6e-4 over 4 micro-batches). C0 = fb(E)
 * + 3 fb(B) + 4e-5, C1 = fb(B) + fb(H) + 8e-5, C0 > C1: T_pipe = (4 - 1/2)
 * C0 + (C0 + C1) / 2, idle rank 0 = C1 / 2, rank 1 = T - 4 C1. Rank 0's
 * memory is test_fit_interleaved_chunks' 9.02e8 (allowance 0): states 18 x
 * 3.5e7 = 6.3e8 + activations 2.72e8. */
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
	ck_assert_rel(x[0].peak_bytes, 9.02e8, 1e-12);
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

/* The tied embedding's gradient all-reduce (cost_tied_pair) on
 * toy_two_ranks: V h / t = 1e6 gradients of 4 bytes (fp32, the default)
 * between each of rank 0's 2 GPUs (group 0) and its peer on rank 1 (group
 * 1): across the nodes at 1e11 B/s a node, shared by the 2 GPUs of a
 * rank: 5e10 B/s, a ring of two S / bw = 8e-5 s, no latency. Both ranks'
 * DP tails end with it, so the iteration and its DP time grow by it.
 * Both ranks on group 0 (2 ranks x 2 GPUs in a node of 8): NVLink at
 * 1e11, 4e-5 s; bf16 gradients halve it. None untied, with vocabulary
 * parallelism (each rank its slice of both matrices), or under ZB-V
 * (rank 0 holds the first and the last stage): the frame's tied[][], and
 * where only it differs, the iteration. */
START_TEST(test_evaluate_tied)
{
	static const struct {
		int group1, vocab, zbv, grad_bytes;
		double want;
	} rows[] = {
		{ 1, 0, 0, 0, 8e-5 },
		{ 0, 0, 0, 0, 4e-5 },
		{ 0, 0, 0, 2, 2e-5 },
		{ 1, 1, 0, 0, 0 },
		{ 1, 0, 1, 0, 0 },
	};

	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		struct strategy s = strat(1, 1, 2, 2, 1, 8, 1000);
		struct cost_rank x[2][2];
		struct cost_result r[2];

		toy_two_ranks(&s);
		s.group[1] = rows[i].group1;
		s.vocab_par = rows[i].vocab;
		s.grad_bytes = rows[i].grad_bytes;
		if (rows[i].zbv) {
			static const unsigned short first[] = { 0, 2, 3, 4, 6 };

			s.schedule = SCHED_ZB_V;
			s.vp = 2;
			s.n_stages = 4;
			memcpy(s.first, first, sizeof first);
		}
		for (int tied = 0; tied < 2; tied++) {
			struct layer_costs lc = { 0 };
			struct pipeline_frame f;

			mod.tied = tied;
			ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
			cost_frame(&f, &mod, &clu, &s, &lc);
			ck_assert_msg(fabs(f.tied[0][rows[i].group1] - (tied ? rows[i].want : 0)) < 1e-15,
				      "row %zu: %.12g s, want %g", i, f.tied[0][rows[i].group1],
				      tied ? rows[i].want : 0);
			cost_evaluate(&r[tied], &mod, &clu, &s, &lc);
			ck_assert_int_eq(cost_ranks(x[tied], &mod, &clu, &s, &lc), 2);
			cost_layers_free(&lc);
		}
		if (s.vocab_par)
			continue; /* its vocabulary shares differ when tied */
		ck_assert(fabs(r[1].iter_s - r[0].iter_s - rows[i].want) < 1e-12);
		ck_assert(fabs(r[1].time.dp - r[0].time.dp - rows[i].want) < 1e-12);
		ck_assert(fabs(r[1].time.tied - rows[i].want) < 1e-15 && r[0].time.tied == 0);
		for (int q = 0; q < 2; q++)
			ck_assert(fabs(x[1][q].dp - x[0][q].dp - rows[i].want) < 1e-12);
	}
	mod.tied = false;
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

/* DualPipe on the toy of test_frame_zb_h1 (pp 2, m = 8, both ranks on
 * group 0, stages E+2 | 2+H): each rank holds its stage of one copy and
 * the other stage of the other copy (DeepSeek-V3 Table 2), so each stage
 * gets half its rank's memory (its mirror the rest) and holds (p + 1) / 2
 * = 1.5 micro-batches; the weights are a = m - rho, b = rho / 2
 * (check_schedule test_dualpipe) over the stage costs c0 = fb(E) + 2
 * fb(B) and c1 = send + 2 fb(B) + fb(H); each copy runs half the
 * micro-batches, so each rank is busy m (c0 + c1) / 2 and sends m / 2
 * times. */
START_TEST(test_evaluate_dualpipe)
{
	struct strategy s = strat(1, 1, 2, 1, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	struct cost_rank x[2];
	struct part B = toy_block(1e12, 1e12, 1, 1, false);
	struct part H = toy_head(1e12, 1e12, 1, 1, false);
	struct part E = toy_emb(1e12, 1);
	double fw = E.fwd + 4 * B.fwd + H.fwd;
	double rho = fw / (fw + E.bwd + 4 * B.bwd + H.bwd), c0 = fb(E) + 2 * fb(B), c1;

	toy();
	toy_cluster();
	s.schedule = SCHED_DUALPIPE;
	s.first[0] = 0;
	s.first[1] = 3;
	s.first[2] = 6;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_frame(&f, &mod, &clu, &s, &lc);
	ck_assert_rel(f.a, 8 - rho, 1e-12);
	ck_assert_rel(f.b, rho / 2, 1e-12);
	for (int k = 0; k < 2; k++) {
		ck_assert_rel(f.inflight[k], 1.5, 0);
		ck_assert_rel(f.share[k], 0.5, 0);
		ck_assert_rel(f.cap[k], f.cap_of[0] / 2, 1e-15);
	}
	ck_assert(f.send[1] > 0);
	c1 = f.send[1] + 2 * fb(B) + fb(H);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.iter_s - r.time.dp - r.time.optimizer,
		      (8 - rho) * (c0 > c1 ? c0 : c1) + rho / 2 * (c0 + c1), 1e-12);
	ck_assert_int_eq(cost_ranks(x, &mod, &clu, &s, &lc), 2);
	for (int q = 0; q < 2; q++) {
		ck_assert_rel(x[q].busy, 8 * (c0 + c1) / 2, 1e-12);
		ck_assert_rel(x[q].send, f.send[1] / 2, 1e-12);
	}
	cost_layers_free(&lc);
}
END_TEST

/* The optimizer step of a rank with expert layers under ZeRO-1: the toy on
 * one rank, DP 4, EP 2 (edp = 4 / 2 = 2), blocks of 1e9 parameters of which
 * 8e8 in experts: dense 5e6 + 4 x 2e8 + 5e6 = 8.1e8 sharded over the 4 DP
 * ranks, experts 4 x 8e8 / 2 = 1.6e9 per GPU over the 2 expert-data-
 * parallel ones: Adam over 8.1e8 / 4 + 1.6e9 / 2 = 1.0025e9 parameters at
 * COMPUTE_ADAM_BYTES each over 1 TB/s. */
START_TEST(test_evaluate_expert_optimizer)
{
	struct strategy s = strat(1, 1, 1, 4, 1, 8, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result r;

	toy();
	toy_cluster();
	for (int i = 1; i <= 4; i++) {
		lay[i].params = 1e9;
		lay[i].expert_params = 8e8;
	}
	s.ep = 2;
	s.zero = 1;
	s.first[0] = 0;
	s.first[1] = 6;
	ck_assert_int_eq(strategy_edp(&s), 2);
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&r, &mod, &clu, &s, &lc);
	ck_assert_rel(r.time.optimizer, 1.0025e9 * COMPUTE_ADAM_BYTES / 1e12, 1e-12);
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

/* Activation offloading's copies (README "Cost model"): the toy on one
 * 1 TFLOP/s GPU (TP, PP, DP 1), 4 micro-batches, attn_norm offloaded: the
 * block's input, 1000 x 2 bytes a token x 1000 tokens = 2e6 bytes per
 * micro-batch, over a host link of 1 MB/s at OFFLOAD_COPY_EFF: c = 2e6 /
 * (1e6 x 0.8) = 2.5 s each way. The copy out runs beside the next layer's
 * forward and the copy back beside its backward (a block like it:
 * toy_block's fwd and bwd), so each block exposes max(0, c - fwd) +
 * max(0, c - bwd) per micro-batch, and the iteration is 4 x 4 x that
 * longer; the rest of 2c is hidden. The 4 blocks' 2e6 bytes of the one
 * micro-batch in flight are in host memory, not in the activations. */
START_TEST(test_offload_time)
{
	struct strategy s = strat(1, 1, 1, 1, 1, 4, 1000);
	struct layer_costs lc = { 0 };
	struct cost_result base, off;
	struct part b;
	double c = 2e6 / (1e6 * OFFLOAD_COPY_EFF), x;

	toy();
	toy_cluster();
	gpus[0].host_bw = gpus[1].host_bw = 1e6;
	b = toy_block(1e12, 1e12, 1, 1, false);
	x = fmax(0, c - b.fwd) + fmax(0, c - b.bwd);
	ck_assert(c > b.fwd); /* the copy shows */
	s.first[1] = (unsigned short)mod.n_layer;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&base, &mod, &clu, &s, &lc);
	cost_layers_free(&lc);
	s.offload_modules = OM_ATTN_NORM;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), 0);
	cost_evaluate(&off, &mod, &clu, &s, &lc);
	ck_assert_rel(off.iter_s - base.iter_s, 16 * x, 1e-9);
	ck_assert_rel(off.time.offload, 16 * x, 1e-9);
	ck_assert_rel(off.time.offload_hidden, 16 * (2 * c - x), 1e-9);
	ck_assert_rel(off.mem.offloaded, 4 * 2e6, 1e-12);
	ck_assert_rel(base.mem.activations - off.mem.activations, 4 * 2e6, 1e-9);
	ck_assert_rel(base.mem.offloaded, 0, 0);
	ck_assert_rel(base.time.offload, 0, 0);
	cost_layers_free(&lc);
	/* a GPU type without a host link cannot offload (cost_layers costs
	   every group's) */
	gpus[1].host_bw = 0;
	ck_assert_int_eq(cost_layers(&lc, &mod, &clu, &s, NULL, NULL), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("evaluate");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_eq3_time);
	tcase_add_test(tc, test_offload_time);
	tcase_add_test(tc, test_mixed_replicas);
	tcase_add_test(tc, test_uneven_split_hand);
	tcase_add_test(tc, test_uneven_split_brute);
	tcase_add_test(tc, test_uneven_mixed_stage);
	tcase_add_test(tc, test_uneven_inflight);
	tcase_add_test(tc, test_evaluate_toy);
	tcase_add_test(tc, test_vocab_parallel);
	tcase_add_test(tc, test_slimpipe);
	tcase_add_test(tc, test_evaluate_pp_rank0_bottleneck);
	tcase_add_test(tc, test_ranks_toy);
	tcase_add_test(tc, test_ranks_interleaved);
	tcase_add_test(tc, test_evaluate_dp_tail);
	tcase_add_test(tc, test_evaluate_tied);
	tcase_add_test(tc, test_frame_zb_h1);
	tcase_add_test(tc, test_evaluate_dualpipe);
	tcase_add_test(tc, test_evaluate_expert_optimizer);
	tcase_add_test(tc, test_frame_links);
	tcase_add_test(tc, test_ranks_recompute_modules);
	tcase_add_test(tc, test_deferred_wgrad);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
