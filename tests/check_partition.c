/* check_partition.c: partition_solve against hand-worked cases, exhaustive
 * enumeration of every partition on small random instances, and a reference
 * that tries every stage cost as the bottleneck on larger ones; the DP with
 * a shared memo against the DP without. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "partition.h"
#include "testutil.h"

#define NL 48 /* most layers in these tests */
#define NG 3

/* A problem instance with its storage. */
struct inst {
	struct layer_costs lc;
	struct pipeline_frame f;
	double time[NG * NL], fwd[NG * NL];
	double state[NL], act[NL], extra[NL];
};

static void inst_init(struct inst *in, int n, int G, int K)
{
	memset(in, 0, sizeof *in);
	in->lc.n_layer = n;
	in->lc.n_group = G;
	in->lc.time = in->time;
	in->lc.fwd = in->fwd;
	in->lc.state_bytes = in->state;
	in->lc.act_bytes = in->act;
	in->lc.extra_bytes = in->extra;
	in->f.n_stages = K;
	in->f.hops = K - 1;
	for (int k = 0; k < MAX_STAGES; k++)
		in->f.share[k] = 1;
}

static uint64_t rng_state;

static uint64_t rng_next(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double unif(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng_next() >> 11) * 0x1p-53;
}

static int irand(int lo, int hi) /* inclusive */
{
	return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1));
}

/* Stage k over layers [i, j): cost, and whether it fits (sums in layer order). */
static double stage_cost(const struct inst *in, int k, int i, int j)
{
	const double *t = in->time + (size_t)in->f.group[k] * (size_t)in->lc.n_layer;
	double c = 0;

	for (int l = i; l < j; l++)
		c += t[l];
	return c + in->f.send[k];
}

static int stage_fits(const struct inst *in, int k, int i, int j)
{
	double st = 0, ac = 0, ex = 0;

	for (int l = i; l < j; l++) {
		st += in->state[l];
		ac += in->act[l];
		ex += in->extra[l];
	}
	return st + in->f.inflight[k] * ac + ex <= in->f.cap[k];
}

/* Objective of first[], or INFINITY if it is not a fitting partition. */
static double objective(const struct inst *in, const unsigned short *first)
{
	int K = in->f.n_stages;
	double mx = 0, sum = 0;

	if (first[0] != 0 || first[K] != in->lc.n_layer)
		return INFINITY;
	for (int k = 0; k < K; k++) {
		double c;
		if (first[k + 1] <= first[k] || !stage_fits(in, k, first[k], first[k + 1]))
			return INFINITY;
		c = stage_cost(in, k, first[k], first[k + 1]);
		mx = fmax(mx, c);
		sum += c;
	}
	return in->f.a * mx + in->f.b * sum;
}

/* Every composition of the layers into K non-empty stages. */
static void brute_rec(const struct inst *in, unsigned short *first, int k, double *best)
{
	int n = in->lc.n_layer, K = in->f.n_stages;

	if (k == K - 1) {
		first[K] = (unsigned short)n;
		*best = fmin(*best, objective(in, first));
		return;
	}
	for (int j = first[k] + 1; j <= n - (K - 1 - k); j++) {
		first[k + 1] = (unsigned short)j;
		brute_rec(in, first, k + 1, best);
	}
}

static double brute(const struct inst *in)
{
	unsigned short first[MAX_STAGES + 1] = { 0 };
	double best = INFINITY;

	if (in->f.n_stages <= in->lc.n_layer)
		brute_rec(in, first, 0, &best);
	return best;
}

/* Reference for larger instances: min over every stage cost U of
 * a * U + b * (least sum with all c_k <= U), each by a plain O(K n^2) DP. */
static double ref_all_bounds(const struct inst *in)
{
	int n = in->lc.n_layer, K = in->f.n_stages;
	static double cand[NL * NL * 16], d[17][NL + 1];
	int nc = 0;
	double best = INFINITY;

	for (int k = 0; k < K; k++)
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j <= n; j++)
				cand[nc++] = stage_cost(in, k, i, j);
	for (int c = 0; c < nc; c++) {
		double u = cand[c];
		for (int k = 0; k <= K; k++)
			for (int j = 0; j <= n; j++)
				d[k][j] = INFINITY;
		d[0][0] = 0;
		for (int k = 0; k < K; k++)
			for (int i = 0; i < n; i++) {
				if (d[k][i] == INFINITY)
					continue;
				for (int j = i + 1; j <= n; j++) {
					double s = stage_cost(in, k, i, j);
					if (s <= u && stage_fits(in, k, i, j) &&
					    d[k][i] + s < d[k + 1][j])
						d[k + 1][j] = d[k][i] + s;
				}
			}
		if (d[K][n] < INFINITY)
			best = fmin(best, in->f.a * u + in->f.b * d[K][n]);
	}
	return best;
}

/* A random instance: per-layer times per group (sometimes small integers, or
 * one non-integer time per group, for exact and rounded ties), 1F1B-like
 * in-flight counts, tight caps, a in [0.5, 8], b in [0, 1]. */
static void random_inst(struct inst *in, int n, int K, int G)
{
	int m = irand(1, 8), mode = irand(0, 3), ints = mode == 0;
	double tot_s = 0, tot_a = 0, tot_e = 0;

	inst_init(in, n, G, K);
	for (int g = 0; g < G; g++) {
		double speed = unif(0.3, 3);
		for (int l = 0; l < n; l++)
			in->time[g * n + l] = ints ? irand(0, 3) : mode == 1 ? speed
									     : speed * unif(0.2, 1.5);
	}
	for (int l = 0; l < n; l++) {
		in->state[l] = ints ? irand(1, 4) : unif(1, 10);
		in->act[l] = ints ? irand(0, 2) : unif(0.5, 5);
		tot_s += in->state[l];
		tot_a += in->act[l];
	}
	if (irand(0, 1))
		tot_e = in->extra[n - 1] = unif(0, 20);
	in->f.a = unif(0.5, 8);
	in->f.b = irand(0, 4) == 0 ? 0 : unif(0, 1);
	for (int k = 0; k < K; k++) {
		in->f.group[k] = irand(0, G - 1);
		in->f.inflight[k] = K - k < m ? K - k : m;
		in->f.send[k] = k == K - 1 || irand(0, 2) == 0 ? 0 : unif(0, 0.5);
		in->f.cap[k] = (tot_s + in->f.inflight[k] * tot_a + tot_e) / K *
			       unif(0.7, 2.2);
		if (ints)
			in->f.cap[k] = floor(in->f.cap[k]);
	}
}

/* Runs partition_solve and checks its answer against want (INFINITY = none). */
static void check_against(const struct inst *in, double want, int seed)
{
	unsigned short first[MAX_STAGES + 1];
	double t = -1;
	int rc = partition_solve(&in->lc, &in->f, first, &t);

	if (want == INFINITY) {
		ck_assert_msg(rc == -1, "seed %d: found %g, none fits", seed, t);
		return;
	}
	ck_assert_msg(rc == 0, "seed %d: none found, want %.10g", seed, want);
	ck_assert_rel(t, want, 1e-9);
	ck_assert_rel(objective(in, first), t, 1e-9);
	/* with an incumbent: the optimum where it is below, else none */
	t = -1;
	rc = partition_solve_below(&in->lc, &in->f, want * (1 + 1e-6) + 1e-12, first, &t);
	ck_assert_msg(rc == 0, "seed %d: none below %.10g", seed, want * (1 + 1e-6) + 1e-12);
	ck_assert_rel(t, want, 1e-9);
	ck_assert_rel(objective(in, first), t, 1e-9);
	ck_assert_int_eq(partition_solve_below(&in->lc, &in->f, want * (1 - 1e-6) - 1e-12, first, &t),
			 -1);
}

/* 4 layers of time 1 on 2 stages of one group, a = 3, b = 1: split 2|2,
 * max 2, sum 4, T = 3 * 2 + 1 * 4 = 10. */
/* partition_place_bound by hand: 6 layers (embedding, 4 middle, head), 2
 * stages, one rank on each of 2 groups, every layer 1 s on group 0 and 2 s
 * on group 1, a = 3, b = 1, no memory limit, p2p or tail. Ends: 1 + 1 = 2
 * s, U >= 1. At U = 3 the middle layers go 3 to group 0 (3 x 1 s) and 1 to
 * group 1 (floor(3 / 2) = 1: 2 s): 3 x 3 + (2 + 3 + 2) = 16. Smaller U
 * hold fewer than 4 (U = 1: 1 + 0, U = 2: 2 + 1), larger cost more (U = 4:
 * 12 + 6 = 18; U = 6: 18 + 6). The optimum of partition_place is 20: 4
 * layers on group 0 and 2 on group 1 (in either order), 3 x 4 + (4 + 4);
 * 5 | 1 costs 3 x 5 + 7 = 22, 3 | 3 costs 3 x 6 + 9 = 27. */
START_TEST(test_place_bound_by_hand)
{
	static const int ranks[2] = { 1, 1 };
	struct inst in;
	unsigned short first[3];
	int group[2];
	double lb = -1, t = -1;

	inst_init(&in, 6, 2, 2);
	for (int l = 0; l < 6; l++) {
		in.time[l] = 1;
		in.time[6 + l] = 2;
	}
	in.f.vp = 1;
	in.f.a = 3;
	in.f.b = 1;
	in.f.cap_of[0] = in.f.cap_of[1] = 1;
	ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, ranks, 3, 1, &lb), 0);
	ck_assert_double_eq_tol(lb, 16, 1e-12);
	ck_assert_int_eq(partition_place(&in.lc, &in.f, ranks, group, first, &t), 0);
	ck_assert_double_eq_tol(t, 20, 1e-12);
	/* rank 0's tails of 0 and the tied all-reduce between the two ends:
	 * 0.5 s from group 0 to 1, 0.75 s back, 1 s within a group (no
	 * partition puts both ends on one group: one rank each): at least
	 * 0.5 s more, both the bound and the optimum (group 0 first) */
	{
		double tail0[2 * 7] = { 0 };

		in.lc.tail0 = tail0;
		in.f.tied[0][0] = in.f.tied[1][1] = 1;
		in.f.tied[0][1] = 0.5;
		in.f.tied[1][0] = 0.75;
		ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, ranks, 3, 1, &lb), 0);
		ck_assert_double_eq_tol(lb, 16.5, 1e-12);
		ck_assert_int_eq(partition_place(&in.lc, &in.f, ranks, group, first, &t), 0);
		ck_assert_double_eq_tol(t, 20.5, 1e-12);
		ck_assert_int_eq(group[0], 0);
		in.lc.tail0 = NULL;
		memset(in.f.tied, 0, sizeof in.f.tied);
	}
	/* 2 virtual stages per rank, each rank on half the memory per chunk:
	 * the same bound over the ranks' totals (no memory use, no links) */
	in.f.vp = 2;
	in.f.n_stages = 4;
	in.f.cap_of[0] = in.f.cap_of[1] = 0.5;
	ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, ranks, 3, 1, &lb), 0);
	ck_assert_double_eq_tol(lb, 16, 1e-12);
	/* every link 1 s: ZB-V's 4 stages on 2 ranks send twice (0 -> 1 and
	 * 2 -> 3; 1 -> 2 is the turn on one rank), b x 2 more */
	for (int g = 0; g < 2; g++)
		in.f.link[g][0] = in.f.link[g][1] = 1;
	in.f.hops = 2;
	ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, ranks, 3, 1, &lb), 0);
	ck_assert_double_eq_tol(lb, 18, 1e-12);
}
END_TEST

/* partition_place_bound's skip of the bounds U whose a U + (the least sum)
 * cannot beat the best so far, where two bounds nearly tie: 6 layers, the
 * embedding and head 3 s on both groups, the 4 middle layers 1 s on group
 * 0 and 1.001 s on group 1, one rank each, no memory limit, p2p or tail, a
 * = 1e-4, b = 1. Ends 6 s, the least sum 6 + 4 = 10 s. The first bound, U =
 * 3 (the ends), holds 3 middle layers on group 0 and 1 on group 1:
 * 3e-4 + 6 + 4.001 = 10.0013; U = 4 holds all 4 on group 0: 4e-4 + 10 =
 * 10.0004, the least (U = 4.004 on group 1 costs 10.0004004). A skip that
 * took 10.0004 for beaten by 10.0013 (within 0.1%) would return 10.0013. */
START_TEST(test_place_bound_near_tie)
{
	static const int ranks[2] = { 1, 1 };
	struct inst in;
	double lb = -1;

	inst_init(&in, 6, 2, 2);
	for (int l = 0; l < 6; l++) {
		in.time[l] = l == 0 || l == 5 ? 3 : 1;
		in.time[6 + l] = l == 0 || l == 5 ? 3 : 1.001;
	}
	in.f.vp = 1;
	in.f.hops = 0;
	in.f.cap_of[0] = in.f.cap_of[1] = 1;
	ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, ranks, 1e-4, 1, &lb), 0);
	ck_assert_double_eq_tol(lb, 10.0004, 1e-12);
}
END_TEST

/* partition_place_bound never exceeds partition_place's optimum (exact) on
 * random instances of 2 or 3 groups with memory limits and links. */
START_TEST(test_place_bound_random)
{
	int checked = 0;

	rng_state = 977;
	for (int it = 0; it < 300; it++) {
		int n = irand(3, 14), G = irand(2, NG), K = irand(2, n < 6 ? n : 6);
		int ranks[NG] = { 0 }, group[MAX_STAGES];
		unsigned short first[MAX_STAGES + 1];
		struct inst in;
		double lb, t;

		inst_init(&in, n, G, K);
		for (int k = 0; k < K; k++)
			ranks[k % G]++;
		for (int g = 0; g < G; g++)
			for (int l = 0; l < n; l++)
				in.time[g * n + l] = unif(0.5, 3) * (1 + g);
		for (int l = 0; l < n; l++) {
			in.state[l] = unif(1, 2);
			in.act[l] = unif(0, 1);
		}
		for (int k = 0; k < K; k++)
			in.f.inflight[k] = K - k;
		for (int g = 0; g < G; g++) {
			in.f.cap_of[g] = unif(2, 4 + 10.0 * n / K);
			for (int h = 0; h < G; h++)
				in.f.link[g][h] = unif(0, 0.5);
		}
		in.f.vp = 1;
		in.f.a = unif(0, 8);
		in.f.b = unif(0.5, 2);
		if (partition_place(&in.lc, &in.f, ranks, group, first, &t))
			continue;
		ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, ranks, in.f.a, in.f.b, &lb), 0);
		ck_assert_msg(lb <= t * (1 + 1e-12), "instance %d: bound %.17g above the optimum %.17g",
			      it, lb, t);
		checked++;
	}
	ck_assert_int_gt(checked, 100);
}
END_TEST

START_TEST(test_hand_even)
{
	struct inst in;
	unsigned short first[3];
	double t;

	inst_init(&in, 4, 1, 2);
	for (int l = 0; l < 4; l++)
		in.time[l] = 1, in.state[l] = 1;
	in.f.a = 3, in.f.b = 1;
	in.f.cap[0] = in.f.cap[1] = 100;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), 0);
	ck_assert_int_eq(first[0], 0);
	ck_assert_int_eq(first[1], 2);
	ck_assert_int_eq(first[2], 4);
	ck_assert_rel(t, 10, 1e-12);

	/* stage 0 may hold one layer only (3 in flight x 1 byte + 1 byte state
	 * per layer, cap 5): split 1|3, T = 3 * 3 + 4 = 13 */
	in.f.inflight[0] = 3, in.f.cap[0] = 5;
	for (int l = 0; l < 4; l++)
		in.act[l] = 1;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), 0);
	ck_assert_int_eq(first[1], 1);
	ck_assert_rel(t, 13, 1e-12);

	/* cap 3: not even one layer fits stage 0 */
	in.f.cap[0] = 3;
	first[1] = 77;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), -1);
	ck_assert_int_eq(first[1], 77);
}
END_TEST

/* The bottleneck and the sum disagree: 6 layers, stage 0 on a group of time 1
 * per layer, stage 1 on a group of time 2. Split x|6-x costs (x, 2(6-x)):
 * 4|2 gives max 4, sum 8; 5|1 gives max 5, sum 7. With a = 0.5, b = 1:
 * 4|2 -> 10, 5|1 -> 9.5 (the optimum); with a = 3, b = 1: 4|2 -> 20,
 * 5|1 -> 22, so 4|2. */
START_TEST(test_hand_tradeoff)
{
	struct inst in;
	unsigned short first[3];
	double t;

	inst_init(&in, 6, 2, 2);
	for (int l = 0; l < 6; l++)
		in.time[l] = 1, in.time[6 + l] = 2;
	in.f.group[0] = 0, in.f.group[1] = 1;
	in.f.cap[0] = in.f.cap[1] = 1;
	in.f.a = 0.5, in.f.b = 1;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), 0);
	ck_assert_int_eq(first[1], 5);
	ck_assert_rel(t, 9.5, 1e-12);
	in.f.a = 3;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), 0);
	ck_assert_int_eq(first[1], 4);
	ck_assert_rel(t, 20, 1e-12);
}
END_TEST

/* Edges: one stage, one layer per stage, more stages than layers. */
START_TEST(test_edges)
{
	struct inst in;
	unsigned short first[8];
	double t;

	inst_init(&in, 5, 1, 1);
	for (int l = 0; l < 5; l++)
		in.time[l] = l + 1;
	in.f.a = 2, in.f.b = 0.5, in.f.cap[0] = 0;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), 0);
	ck_assert_rel(t, 2 * 15 + 0.5 * 15, 1e-12); /* (a + b) * 15 */
	ck_assert_int_eq(first[1], 5);

	in.f.n_stages = 5; /* one layer each: max 5, sum 15 + sends 1 */
	for (int k = 0; k < 5; k++)
		in.f.send[k] = k < 4 ? 0.25 : 0;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), 0);
	for (int k = 0; k <= 5; k++)
		ck_assert_int_eq(first[k], k);
	ck_assert_rel(t, 2 * 5 + 0.5 * 16, 1e-12);

	in.f.n_stages = 6;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), -1);
	in.f.n_stages = 0;
	ck_assert_int_eq(partition_solve(&in.lc, &in.f, first, &t), -1);
}
END_TEST

/* Hundreds of seeded instances with n <= 9, K <= 4, 1-3 groups against the
 * enumeration of every partition; both must agree on infeasibility. */
START_TEST(test_brute_force)
{
	static struct inst in;
	int feasible = 0, infeasible = 0;

	for (int seed = 1; seed <= 1500; seed++) {
		int n, K, G;
		double want;

		rng_state = (uint64_t)seed;
		n = irand(1, 9);
		K = irand(1, 5); /* K = 5 > n sometimes: none */
		G = irand(1, 3);
		random_inst(&in, n, K, G);
		want = brute(&in);
		check_against(&in, want, seed);
		if (want == INFINITY)
			infeasible++;
		else
			feasible++;
	}
	ck_assert_int_ge(feasible, 500);
	ck_assert_int_ge(infeasible, 200);
}
END_TEST

/* One memo shared by the DPs of several placements of one instance (as
 * refine.c's swap descent and place.c's block orders share it): each
 * answer is the memo-free DP's, partition and time, bit for bit. The
 * placements redraw each stage's group, p2p and cap from a few values per
 * group, so that caps recur (the memo's rows) and differ. */
START_TEST(test_memo_shared)
{
	static struct inst in;
	int feasible = 0, infeasible = 0;

	for (int seed = 1; seed <= 300; seed++) {
		int n, K, G;
		double cap_of[NG][2];
		struct partition_memo *memo;

		rng_state = (uint64_t)seed * 7919;
		n = irand(2, 20);
		K = irand(1, n < 6 ? n : 6);
		G = irand(1, NG);
		random_inst(&in, n, K, G);
		for (int g = 0; g < G; g++)
			for (int x = 0; x < 2; x++)
				cap_of[g][x] = in.f.cap[irand(0, K - 1)] * unif(0.8, 1.3);
		memo = partition_memo_create(&in.lc, K);
		for (int p = 0; p < 6; p++) {
			unsigned short a[MAX_STAGES + 1] = { 0 }, b[MAX_STAGES + 1] = { 0 };
			double ta = -1, tb = -1;
			int ra, rb;

			for (int k = 0; k < K; k++) {
				int g = irand(0, G - 1);

				in.f.group[k] = g;
				in.f.cap[k] = cap_of[g][irand(0, 1)];
				in.f.send[k] = k == K - 1 || irand(0, 2) == 0 ? 0 : unif(0, 0.5);
			}
			ra = partition_solve(&in.lc, &in.f, a, &ta);
			rb = partition_solve_memo(&in.lc, &in.f, INFINITY, memo, b, &tb);
			ck_assert_msg(ra == rb, "seed %d placement %d: %d without the memo, %d with it",
				      seed, p, ra, rb);
			if (ra) {
				infeasible++;
				continue;
			}
			feasible++;
			ck_assert_msg(ta == tb, "seed %d placement %d: %.17g without the memo, %.17g with it",
				      seed, p, ta, tb);
			ck_assert_msg(!memcmp(a, b, sizeof a), "seed %d placement %d: another partition",
				      seed, p);
		}
		partition_memo_free(memo);
	}
	ck_assert_int_ge(feasible, 1000);
	ck_assert_int_ge(infeasible, 300);
}
END_TEST

/* Larger instances (n <= 20, K <= 6) against trying every stage cost as the
 * bound, which checks the candidate sequence and the stopping rule. */
START_TEST(test_all_bounds)
{
	static struct inst in;
	int feasible = 0;

	for (int seed = 1; seed <= 60; seed++) {
		double want;

		rng_state = (uint64_t)seed * 7919;
		random_inst(&in, irand(8, 20), irand(2, 6), irand(1, 3));
		want = ref_all_bounds(&in);
		check_against(&in, want, seed);
		feasible += want < INFINITY;
	}
	ck_assert_int_ge(feasible, 20);
}
END_TEST

/* The forced placement's relaxation (partition.c relax_beaten) on the
 * search's shape: a first and a last layer apart, the middle layers alike
 * on each group, the groups in blocks of stages with a p2p between
 * blocks, some with rank 0's tail. With the incumbent a hair above the
 * optimum (1e-9) the DP still finds it; below (a hair, 1%, 10%: where
 * the relaxation decides), nothing. */
START_TEST(test_forced_incumbent)
{
	static struct inst in;
	static double tail0[NG * (NL + 1)];
	static const double below[] = { 1 - 1e-9, 0.99, 0.9 };
	int feasible = 0;

	for (int seed = 1; seed <= 400; seed++) {
		int n, K, G, at = 0;
		unsigned short first[MAX_STAGES + 1];
		double want, t = -1;

		rng_state = (uint64_t)seed * 104729;
		n = irand(4, 40);
		K = irand(2, n < 16 ? n : 16);
		G = irand(2, NG);
		random_inst(&in, n, K, G);
		for (int g = 0; g < G; g++) {
			double mid = unif(0.3, 3);

			in.time[g * n] = unif(0.1, 2);
			in.time[g * n + n - 1] = unif(1, 6);
			for (int l = 1; l < n - 1; l++)
				in.time[g * n + l] = mid;
			for (int j = 0; j <= n; j++)
				tail0[g * (n + 1) + j] = j * unif(0, 0.01);
		}
		in.lc.tail0 = irand(0, 1) ? tail0 : NULL;
		in.f.vp = 1;
		for (int k = 0; k < K; k++) {
			if (k && irand(0, 2) == 0 && at < G - 1)
				at++;
			in.f.group[k] = at;
			in.f.send[k] = k && in.f.group[k - 1] != at ? unif(0, 0.5) : 0;
		}
		if (partition_solve(&in.lc, &in.f, first, &want))
			continue;
		feasible++;
		ck_assert_msg(partition_solve_below(&in.lc, &in.f, want * (1 + 1e-9), first, &t) == 0,
			      "seed %d: none below %.12g", seed, want * (1 + 1e-9));
		ck_assert_rel(t, want, 1e-12);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(partition_solve_below(&in.lc, &in.f, want * below[i], first, &t),
					 -1);
	}
	ck_assert_int_ge(feasible, 100);
}
END_TEST

/* The largest shapes (130 layers, up to 128 stages) give valid, fitting
 * partitions no worse than an even split. */
START_TEST(test_large)
{
	static struct layer_costs lc;
	static struct pipeline_frame f;
	static double time[2 * 130], state[130], act[130], extra[130];
	static const int ks[] = { 1, 2, 4, 8, 16, 32, 64, 100, 128 };
	unsigned short first[MAX_STAGES + 1];
	double t;

	rng_state = 42;
	lc.n_layer = 130, lc.n_group = 2;
	lc.time = time, lc.fwd = time, lc.state_bytes = state;
	lc.act_bytes = act, lc.extra_bytes = extra;
	for (int l = 0; l < 130; l++) {
		time[l] = unif(0.9, 1.1);
		time[130 + l] = 2 * time[l];
		state[l] = 1, act[l] = 0.1;
	}
	for (size_t q = 0; q < sizeof ks / sizeof *ks; q++) {
		int K = ks[q], per = 130 / K;
		double mx = 0, sum = 0;

		f.n_stages = K, f.a = 15, f.b = 1;
		for (int k = 0; k < K; k++) {
			f.group[k] = k % 2;
			f.inflight[k] = K - k < 16 ? K - k : 16;
			f.cap[k] = 1e9;
			f.send[k] = k < K - 1 ? 0.01 : 0;
		}
		ck_assert_int_eq(partition_solve(&lc, &f, first, &t), 0);
		ck_assert_int_eq(first[0], 0);
		ck_assert_int_eq(first[K], 130);
		for (int k = 0; k < K; k++)
			ck_assert_int_lt(first[k], first[k + 1]);
		for (int k = 0; k < K; k++) { /* even split, remainder last */
			int i = k * per, j = k == K - 1 ? 130 : i + per;
			double c = f.send[k];
			for (int l = i; l < j; l++)
				c += time[f.group[k] * 130 + l];
			mx = fmax(mx, c);
			sum += c;
		}
		ck_assert(t <= (f.a * mx + f.b * sum) * (1 + 1e-12));
	}
}
END_TEST

/* The joint placement instances below: up to 16 stages, 22 layers, 4
 * groups, with links, rank 0's tail, the tied all-reduce and vocabulary
 * shares. */
#define PN 22
#define PG 4

struct pinst {
	struct layer_costs lc;
	struct pipeline_frame f;
	int ranks[PG];
	double time[PG * PN], tail0[PG * (PN + 1)];
	double state[PN], act[PN], extra[PN];
};

/* One state's Pareto front of (largest stage cost, b x sum + tail). */
struct front {
	int n, cap;
	double *mx, *v;
};

static void front_add(struct front *fr, double mx, double v)
{
	int w = 0;

	for (int x = 0; x < fr->n; x++)
		if (fr->mx[x] <= mx && fr->v[x] <= v)
			return; /* dominated */
	for (int x = 0; x < fr->n; x++)
		if (!(mx <= fr->mx[x] && v <= fr->v[x])) {
			fr->mx[w] = fr->mx[x];
			fr->v[w++] = fr->v[x];
		}
	fr->n = w;
	if (fr->n == fr->cap) {
		fr->cap = fr->cap ? 2 * fr->cap : 4;
		fr->mx = realloc(fr->mx, (size_t)fr->cap * sizeof *fr->mx);
		fr->v = realloc(fr->v, (size_t)fr->cap * sizeof *fr->v);
		ck_assert(fr->mx && fr->v);
	}
	fr->mx[fr->n] = mx;
	fr->v[fr->n++] = v;
}

/* Whether layers [i, j) fit stage k on group g (sums in layer order). */
static int pstage_fits(const struct pinst *in, int k, int g, int i, int j)
{
	double st = 0, ac = 0, ex = 0;

	for (int l = i; l < j; l++) {
		st += in->state[l];
		ac += in->act[l];
		ex += in->extra[l];
	}
	return st + in->f.inflight[k] * ac + ex <= in->f.cap_of[g] * in->f.share[k];
}

/* Stage k on group g over layers [i, j) after a stage on group h. */
static double pstage_cost(const struct pinst *in, int k, int h, int g, int i, int j)
{
	int n = in->lc.n_layer;
	double c = (k ? in->f.link[h][g] : 0) + in->f.vocab_of[g];

	for (int l = i; l < j; l++)
		c += in->time[g * n + l];
	return c;
}

/* The objective of a placement and partition (INFINITY if it does not fit
 * or breaks the rank counts). */
static double pobjective(const struct pinst *in, const int *group, const unsigned short *first)
{
	int K = in->f.n_stages, n = in->lc.n_layer, used[PG] = { 0 };
	double mx = 0, sum = 0;

	if (first[0] != 0 || first[K] != n)
		return INFINITY;
	for (int k = 0; k < K; k++) {
		double c;

		if (group[k] < 0 || group[k] >= in->lc.n_group || first[k + 1] <= first[k] ||
		    !pstage_fits(in, k, group[k], first[k], first[k + 1]))
			return INFINITY;
		used[group[k]]++;
		c = pstage_cost(in, k, k ? group[k - 1] : 0, group[k], first[k], first[k + 1]);
		mx = fmax(mx, c);
		sum += c;
	}
	for (int g = 0; g < in->lc.n_group; g++)
		if (used[g] != in->ranks[g])
			return INFINITY;
	return in->f.a * mx + in->f.b * sum + in->tail0[group[0] * (n + 1) + first[1]] +
	       in->f.tied[group[0]][group[K - 1]];
}

/* pref with stage 0 on group g0, the tied all-reduce between g0 and the
 * last stage's group added at the end. */
static double pref_from(const struct pinst *in, const int *cls, const int *seq, int g0)
{
	int n = in->lc.n_layer, G = in->lc.n_group, K = in->f.n_stages, radix[PG], ncnt = 1;
	struct front *fr;
	double best = INFINITY;

	for (int g = 0; g < G; g++) {
		radix[g] = ncnt;
		ncnt *= in->ranks[g] + 1;
	}
	fr = calloc((size_t)ncnt * G * (n + 1), sizeof *fr);
	ck_assert(fr);
#define FR(c, g, j) fr[((size_t)(c)*G + (g)) * (n + 1) + (j)]
	/* count vectors in increasing order of their index: a successor's
	 * index is larger */
	for (int cnt = 0; cnt < ncnt; cnt++) {
		int k = 0;

		for (int g = 0; g < G; g++)
			k += cnt / radix[g] % (in->ranks[g] + 1);
		if (k == K)
			continue;
		for (int h = 0; h < G; h++)
			for (int i = 0; i < n; i++) {
				const struct front *from = &FR(cnt, h, i);

				if (k ? from->n == 0 : (h || i))
					continue;
				for (int g = 0; g < G; g++) {
					if (cnt / radix[g] % (in->ranks[g] + 1) == in->ranks[g] ||
					    (seq && cls[g] != seq[k]) || (!k && g != g0))
						continue;
					for (int j = i + 1; j <= n - (K - 1 - k); j++) {
						double c, tl;

						if (!pstage_fits(in, k, g, i, j))
							continue;
						c = pstage_cost(in, k, h, g, i, j);
						tl = k ? 0 : in->tail0[g * (n + 1) + j];
						if (!k)
							front_add(&FR(cnt + radix[g], g, j), c, in->f.b * c + tl);
						for (int x = 0; k && x < from->n; x++)
							front_add(&FR(cnt + radix[g], g, j), fmax(from->mx[x], c),
								  from->v[x] + in->f.b * c);
					}
				}
			}
	}
	for (int g = 0; g < G; g++) {
		const struct front *e = &FR(ncnt - 1, g, n);

		for (int x = 0; x < e->n; x++)
			best = fmin(best, in->f.a * e->mx[x] + e->v[x] + in->f.tied[g0][g]);
	}
	for (size_t x = 0; x < (size_t)ncnt * G * (n + 1); x++) {
		free(fr[x].mx);
		free(fr[x].v);
	}
	free(fr);
#undef FR
	return best;
}

/* The reference optimum over every placement (stage k only on groups of
 * class seq[k] when seq is set) and partition: for each group of stage 0,
 * a forward DP over (ranks used per group, group of the last stage,
 * layers covered) that keeps the whole Pareto front of (largest stage
 * cost, b x sum + tail) of the fitting prefixes (no bisection, bound or
 * pruning), the tied all-reduce added at the end. */
static double pref(const struct pinst *in, const int *cls, const int *seq)
{
	double best = INFINITY;

	for (int g0 = 0; g0 < in->lc.n_group; g0++)
		best = fmin(best, pref_from(in, cls, seq, g0));
	return best;
}

/* A random joint instance: K stages, G groups (group g copies group g - 1
 * when dup[g]: same times, cap, links and tail), n layers. */
static void random_pinst(struct pinst *in, int n, int K, int G, const int *dup)
{
	double tot = 0;
	int tied;

	memset(in, 0, sizeof *in);
	in->lc.n_layer = n;
	in->lc.n_group = G;
	in->lc.time = in->lc.fwd = in->time;
	in->lc.state_bytes = in->state;
	in->lc.act_bytes = in->act;
	in->lc.extra_bytes = in->extra;
	in->lc.tail0 = in->tail0;
	in->f.n_stages = K;
	in->f.hops = K - 1;
	in->f.vp = 1;
	in->f.a = unif(0.5, 8);
	in->f.b = irand(0, 5) ? unif(0.2, 1.5) : 0;
	for (int l = 0; l < n; l++) {
		in->state[l] = unif(1, 3);
		in->act[l] = unif(0, 1);
		tot += in->state[l] + K * in->act[l];
	}
	if (irand(0, 1))
		in->extra[n - 1] = unif(0, 3);
	for (int k = 0; k < K; k++) {
		in->f.inflight[k] = K - k < 6 ? K - k : 6;
		in->f.share[k] = 1;
	}
	for (int k = 0; k < K; k++)
		in->ranks[irand(0, G - 1)]++;
	for (int g = 0; g < G; g++) {
		int o = dup[g] ? g - 1 : g;
		double speed = unif(0.4, 3);

		for (int l = 0; l < n; l++)
			in->time[g * n + l] = dup[g] ? in->time[o * n + l] : speed * unif(0.5, 1.5);
		for (int j = 0; j <= n; j++)
			in->tail0[g * (n + 1) + j] = dup[g] ? in->tail0[o * (n + 1) + j] : unif(0, 0.3) * j;
		in->f.cap_of[g] = dup[g] ? in->f.cap_of[o] : tot / K * unif(0.6, 2.5);
		in->f.vocab_of[g] = dup[g] ? in->f.vocab_of[o] : irand(0, 2) ? 0
									     : unif(0, 0.2);
	}
	for (int g = 0; g < G; g++)
		for (int h = 0; h < G; h++) {
			int og = dup[g] ? g - 1 : g, oh = dup[h] ? h - 1 : h;

			/* a copy links as its original, to others and to itself */
			in->f.link[g][h] = og != g || oh != h ? in->f.link[og][oh] : unif(0, 0.4);
		}
	/* the tied all-reduce between the first and the last stage's groups
	 * (a copy's as its original's): none in a third of the instances */
	tied = irand(0, 2);
	for (int g = 0; g < G; g++)
		for (int h = 0; h < G; h++) {
			int og = dup[g] ? g - 1 : g, oh = dup[h] ? h - 1 : h;

			in->f.tied[g][h] = og != g || oh != h ? in->f.tied[og][oh] : tied ? unif(0, 0.6)
											  : 0;
		}
}

/* partition_place, partition_place_below, partition_place_relaxed and
 * partition_place_seq against the Pareto-front reference on 400 random
 * instances of 2 to 16 stages and 1 to 4 groups (some copies of another;
 * tight memory: some fit nothing): the joint DP is the optimum, and so is
 * the DP with an incumbent just above it (none just below it); the
 * relaxation is never above it, and equal to it where each class is one
 * group or copies of one group; the placement by class sequence is the
 * reference's optimum over that sequence. In two thirds of them the tied
 * all-reduce between the first and the last stage's groups differs
 * between the groups, which the DP runs once per group of stage 0 for;
 * the optimum's placement forced (partition_solve) gives the optimum. */
START_TEST(test_place_random_deep)
{
	static struct pinst in;
	int feasible = 0, infeasible = 0, merged = 0, deep = 0, varied = 0;

	rng_state = 4099;
	for (int it = 0; it < 400; it++) {
		int K = irand(2, 16), G = irand(1, PG), n = irand(K, K + 6 < PN ? K + 6 : PN);
		int dup[PG] = { 0 }, id[PG], same[PG], any[PG], seq[MAX_STAGES], group[MAX_STAGES];
		unsigned short first[MAX_STAGES + 1];
		double want, t, lb;

		for (int g = 1; g < G; g++)
			dup[g] = irand(0, 2) == 0;
		random_pinst(&in, n, K, G, dup);
		for (int g = 0; g < G; g++) {
			id[g] = g;
			same[g] = dup[g] ? same[g - 1] : g; /* copies merge */
			any[g] = irand(0, 1);		    /* any merge */
		}
		want = pref(&in, NULL, NULL);
		if (partition_place(&in.lc, &in.f, in.ranks, group, first, &t)) {
			ck_assert_msg(want == INFINITY, "instance %d: none found, want %.17g", it, want);
			infeasible++;
			continue;
		}
		ck_assert_msg(want < INFINITY, "instance %d: found %.17g, none fits", it, t);
		ck_assert_rel(t, want, 1e-9);
		ck_assert_rel(pobjective(&in, group, first), t, 1e-9);
		{
			/* that placement forced: the same optimum, tail and tied
			 * all-reduce included */
			struct pipeline_frame ff = in.f;
			unsigned short ffirst[MAX_STAGES + 1];
			double ft;

			for (int k = 0; k < K; k++) {
				ff.group[k] = group[k];
				ff.send[k] = k ? in.f.link[group[k - 1]][group[k]] : 0;
				ff.vocab[k] = in.f.vocab_of[group[k]];
				ff.cap[k] = in.f.cap_of[group[k]] * in.f.share[k];
			}
			ck_assert_int_eq(partition_solve(&in.lc, &ff, ffirst, &ft), 0);
			ck_assert_rel(ft, want, 1e-9);
		}
		feasible++;
		deep += K >= 10;
		for (int g = 0, a = -1, v = 0; g < G && !v; g++)
			for (int h = 0; h < G && !v && in.ranks[g]; h++) {
				if (a < 0)
					a = g;
				if (in.ranks[h] && in.f.tied[g][h] != in.f.tied[a][a])
					varied += v = 1;
			}
		/* with an incumbent: the optimum where it is below, else none */
		ck_assert_int_eq(partition_place_below(&in.lc, &in.f, in.ranks, want * (1 + 1e-6), group,
						       first, &t),
				 0);
		ck_assert_rel(t, want, 1e-9);
		ck_assert_rel(pobjective(&in, group, first), t, 1e-9);
		ck_assert_int_eq(partition_place_below(&in.lc, &in.f, in.ranks, want * (1 - 1e-6), group,
						       first, &t),
				 -1);
		ck_assert_int_eq(partition_place_bound(&in.lc, &in.f, in.ranks, in.f.a, in.f.b, &lb), 0);
		ck_assert_msg(lb <= want * (1 + 1e-12), "instance %d: bound %.17g above %.17g", it, lb, want);
		ck_assert_int_eq(partition_place_relaxed(&in.lc, &in.f, in.ranks, id, &lb, seq), 0);
		ck_assert_rel(lb, want, 1e-9);
		ck_assert_int_eq(partition_place_relaxed(&in.lc, &in.f, in.ranks, same, &lb, seq), 0);
		ck_assert_rel(lb, want, 1e-9);
		ck_assert_int_eq(partition_place_relaxed(&in.lc, &in.f, in.ranks, any, &lb, seq), 0);
		ck_assert_msg(lb <= want * (1 + 1e-12), "instance %d: bound %.17g above %.17g", it, lb, want);
		merged += lb < want * (1 - 1e-9);
		{
			double ws = pref(&in, any, seq);

			if (partition_place_seq(&in.lc, &in.f, in.ranks, any, seq, group, first, &t)) {
				ck_assert_msg(ws == INFINITY, "instance %d: none on the sequence, want %.17g",
					      it, ws);
				continue;
			}
			ck_assert_rel(t, ws, 1e-9);
			ck_assert_rel(pobjective(&in, group, first), t, 1e-9);
			for (int k = 0; k < K; k++)
				ck_assert_int_eq(any[group[k]], seq[k]);
			ck_assert(t >= want * (1 - 1e-12));
		}
	}
	ck_assert_int_ge(feasible, 300);
	ck_assert_int_ge(infeasible, 20);
	ck_assert_int_ge(deep, 100);
	ck_assert_int_ge(merged, 100);
	ck_assert_int_ge(varied, 100);
}
END_TEST

static Suite *partition_suite(void)
{
	Suite *s = suite_create("partition");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hand_even);
	tcase_add_test(tc, test_place_bound_by_hand);
	tcase_add_test(tc, test_place_bound_near_tie);
	tcase_add_test(tc, test_place_bound_random);
	tcase_add_test(tc, test_hand_tradeoff);
	tcase_add_test(tc, test_edges);
	tcase_add_test(tc, test_brute_force);
	tcase_add_test(tc, test_memo_shared);
	tcase_add_test(tc, test_all_bounds);
	tcase_add_test(tc, test_forced_incumbent);
	tcase_add_test(tc, test_large);
	tcase_add_test(tc, test_place_random_deep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(partition_suite());
}
