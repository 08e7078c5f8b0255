/* check_ilp.c: ilp_place against the enumeration of every placement (each
 * refined by an exhaustive partition), a hand-worked case, the trivial and
 * invalid inputs, and GLPK's silence on stdout. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"
#include "ilp.h"
#include "partition.h"
#include "testutil.h"

#define NL 9
#define NG 3
#define NP 4

/* A placement problem with its storage. */
struct inst {
	struct layer_costs lc;
	struct placement_problem p;
	double time[NG * NL], fwd[NG * NL];
	double state[NL], act[NL], extra[NL];
	int ranks[NG];
	double inflight[NP], cap[NG];
};

static void inst_init(struct inst *in, int n, int G, int pp, double a, double b)
{
	memset(in, 0, sizeof *in);
	in->lc.n_layer = n;
	in->lc.n_group = G;
	in->lc.time = in->time;
	in->lc.fwd = in->fwd;
	in->lc.state_bytes = in->state;
	in->lc.act_bytes = in->act;
	in->lc.extra_bytes = in->extra;
	in->p.pp = pp;
	in->p.n_group = G;
	in->p.ranks = in->ranks;
	in->p.lc = &in->lc;
	in->p.a = a;
	in->p.b = b;
	in->p.inflight = in->inflight;
	in->p.cap = in->cap;
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

/* The pipeline frame of placement group[] (no p2p time). */
static void make_frame(struct pipeline_frame *f, const struct inst *in, const int *group)
{
	memset(f, 0, sizeof *f);
	f->n_stages = in->p.pp;
	f->a = in->p.a;
	f->b = in->p.b;
	for (int r = 0; r < in->p.pp; r++) {
		f->group[r] = group[r];
		f->inflight[r] = in->inflight[r];
		f->cap[r] = in->cap[group[r]];
	}
}

/* Exhaustive partition of frame f: every composition, direct sums. */
static double brute_part(const struct inst *in, const struct pipeline_frame *f,
			 int *first, int k, double mx, double sum)
{
	int n = in->lc.n_layer, K = f->n_stages;
	double best = INFINITY;

	for (int j = first[k] + 1; j <= n - (K - 1 - k); j++) {
		double c = 0, st = 0, ac = 0, ex = 0;

		if (k == K - 1 && j != n)
			continue;
		for (int l = first[k]; l < j; l++) {
			c += in->time[f->group[k] * n + l];
			st += in->state[l];
			ac += in->act[l];
			ex += in->extra[l];
		}
		if (st + f->inflight[k] * ac + ex > f->cap[k])
			break; /* longer stages fit no better */
		first[k + 1] = j;
		if (k == K - 1)
			best = fmin(best, f->a * fmax(mx, c) + f->b * (sum + c));
		else
			best = fmin(best, brute_part(in, f, first, k + 1, fmax(mx, c), sum + c));
	}
	return best;
}

/* Best over every placement with the group counts, each partitioned
 * exhaustively. */
static double brute_place(const struct inst *in, int *group, int *left, int r)
{
	double best = INFINITY;

	if (r == in->p.pp) {
		struct pipeline_frame f;
		int first[NP + 1] = { 0 };

		make_frame(&f, in, group);
		return brute_part(in, &f, first, 0, 0, 0);
	}
	for (int g = 0; g < in->p.n_group; g++) {
		if (!left[g])
			continue;
		left[g]--;
		group[r] = g;
		best = fmin(best, brute_place(in, group, left, r + 1));
		left[g]++;
	}
	return best;
}

static double brute(const struct inst *in)
{
	int group[NP], left[NG];

	memcpy(left, in->ranks, sizeof left);
	return brute_place(in, group, left, 0);
}

/* The placement's objective after partition_solve; INFINITY if none fits. */
static double refined(const struct inst *in, const int *group)
{
	struct pipeline_frame f;
	unsigned short first[MAX_STAGES + 1];
	double t;

	make_frame(&f, in, group);
	return partition_solve(&in->lc, &f, first, &t) ? INFINITY : t;
}

/* Checks group[] is a placement with the requested counts. */
static void check_counts(const struct inst *in, const int *group)
{
	int cnt[NG] = { 0 };

	for (int r = 0; r < in->p.pp; r++) {
		ck_assert_int_ge(group[r], 0);
		ck_assert_int_lt(group[r], in->p.n_group);
		cnt[group[r]]++;
	}
	for (int g = 0; g < in->p.n_group; g++)
		ck_assert_int_eq(cnt[g], in->ranks[g]);
}

/* Kinds of per-layer times in random_inst. */
enum kind {
	UNIFORM, /* every layer t_g on group g */
	ENDS,	 /* middle layers t_g; the first and last any time and bytes */
	NOISY,	 /* t_g times a factor in [0.4, 1.6] per layer and group */
};

/* A random instance: 2-3 groups of different speeds, counts summing to pp
 * (a group may get none), 1F1B in-flight counts min(pp - r, m), tight caps,
 * a in [0.5, 8], b in [0, 1]. Middle layers have the same bytes; the last
 * may carry the head's extra. */
static void random_inst(struct inst *in, enum kind kind)
{
	int G = irand(2, 3), pp = irand(2, 4), n = irand(pp, NL), m = irand(1, 6);
	double s = unif(1, 4), ac = unif(0, 2), e = irand(0, 1) ? unif(0, 6) : 0;
	double f0 = unif(0.2, 2), f1 = unif(0.2, 2);

	inst_init(in, n, G, pp, unif(0.5, 8), irand(0, 4) ? unif(0, 1) : 0);
	for (int r = 0; r < pp; r++)
		in->ranks[irand(0, G - 1)]++;
	for (int g = 0; g < G; g++) {
		double t = unif(0.3, 3);
		for (int l = 0; l < n; l++)
			in->time[g * n + l] = kind == NOISY ? t * unif(0.4, 1.6) : t;
		if (kind == ENDS) {
			in->time[g * n] *= f0;
			in->time[g * n + n - 1] *= f1;
		}
		in->cap[g] = (s + ac * (pp < m ? pp : m)) * n / pp * unif(0.6, 2.5);
	}
	for (int l = 0; l < n; l++)
		in->state[l] = s, in->act[l] = ac;
	if (kind == ENDS) {
		in->state[0] = s * unif(0.5, 3);
		in->state[n - 1] = s * unif(0.5, 3);
	}
	in->extra[n - 1] = e;
	for (int r = 0; r < pp; r++)
		in->inflight[r] = pp - r < m ? pp - r : m;
}

/* Whether one group hosts every rank (ilp_place returns it without an ILP). */
static int trivial(const struct inst *in)
{
	int k = 0;

	for (int g = 0; g < in->p.n_group; g++)
		k += in->ranks[g] > 0;
	return k == 1;
}

/* The largest ratio of two middle-layer times on one group: the ILP's rate
 * for a rank on group g lies between them, so refined <= rho^2 x optimum. */
static double spread(const struct inst *in)
{
	int n = in->lc.n_layer;
	double rho = 1;

	for (int g = 0; g < in->p.n_group; g++) {
		double lo = INFINITY, hi = 0;
		for (int l = 1; l < n - 1; l++) {
			lo = fmin(lo, in->time[g * n + l]);
			hi = fmax(hi, in->time[g * n + l]);
		}
		if (hi > 0)
			rho = fmax(rho, hi / lo);
	}
	return rho;
}

/* Two groups, 4 layers, 1 byte of state and 1 of activations per layer;
 * rank 0 holds 2 micro-batches, rank 1 holds 1; a = 3, b = 1.
 * Group 0 is fast (1 s per layer) with a 6-byte cap, group 1 slow (2 s) with
 * room for everything; one rank each.
 *   fast first: rank 0 fits z <= 6 / 3 = 2 layers: 2|2 costs (2, 4),
 *     T = 3 * 4 + 6 = 18 (1|3 costs (1, 6): 19)
 *   slow first: rank 1 fits z <= 6 / 2 = 3: 1|3 costs (2, 3),
 *     T = 3 * 3 + 5 = 14 (2|2 costs (4, 2): 18)
 * so the answer is group = {1, 0} with T = 14. */
START_TEST(test_hand)
{
	struct inst in;
	int group[2] = { -1, -1 };
	enum ilp_status st;

	inst_init(&in, 4, 2, 2, 3, 1);
	for (int l = 0; l < 4; l++)
		in.time[l] = 1, in.time[4 + l] = 2, in.state[l] = 1, in.act[l] = 1;
	in.ranks[0] = in.ranks[1] = 1;
	in.inflight[0] = 2, in.inflight[1] = 1;
	in.cap[0] = 6, in.cap[1] = 100;
	st = ilp_place(&in.p, group, 10);
	ck_assert_int_eq(st, ILP_OPTIMAL);
	ck_assert_int_eq(group[0], 1);
	ck_assert_int_eq(group[1], 0);
	ck_assert_rel(refined(&in, group), 14, 1e-12);
	ck_assert_rel(brute(&in), 14, 1e-12);

	/* caps 3 and 5: fast first holds at most 1 + 2 layers (3 and 2 bytes
	 * per layer), slow first 1 + 1: 4 layers fit nowhere */
	in.cap[0] = 3, in.cap[1] = 5;
	ck_assert_int_eq(ilp_place(&in.p, group, 10), ILP_NONE);
	ck_assert(brute(&in) == INFINITY);
}
END_TEST

/* One group (or every rank on one group): the trivial placement, no ILP. */
START_TEST(test_trivial)
{
	struct inst in;
	int group[3] = { -1, -1, -1 };

	inst_init(&in, 5, 1, 3, 2, 1);
	for (int l = 0; l < 5; l++)
		in.time[l] = 1;
	in.ranks[0] = 3;
	in.cap[0] = 1e9;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_OPTIMAL);
	for (int r = 0; r < 3; r++)
		ck_assert_int_eq(group[r], 0);

	inst_init(&in, 5, 3, 3, 2, 1);
	in.ranks[2] = 3;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_OPTIMAL);
	for (int r = 0; r < 3; r++)
		ck_assert_int_eq(group[r], 2);
}
END_TEST

/* Inputs GLPK would abort on, or that have no placement, give ILP_NONE. */
START_TEST(test_invalid)
{
	struct inst in;
	int group[4] = { 7, 7, 7, 7 };

	inst_init(&in, 3, 2, 2, 2, 1);
	in.ranks[0] = 1, in.ranks[1] = 2; /* sums to 3, not pp = 2 */
	in.cap[0] = in.cap[1] = 1e9;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_NONE);
	in.ranks[1] = -1, in.ranks[0] = 3;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_NONE);
	inst_init(&in, 3, 2, 4, 2, 1); /* 4 ranks, 3 layers */
	in.ranks[0] = in.ranks[1] = 2;
	in.cap[0] = in.cap[1] = 1e9;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_NONE);
	inst_init(&in, 3, 2, 2, 2, 1);
	in.ranks[0] = in.ranks[1] = 1;
	in.cap[0] = in.cap[1] = 1e9;
	in.time[1] = NAN;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_NONE);
	in.time[1] = 1;
	in.lc.n_group = 3;
	ck_assert_int_eq(ilp_place(&in.p, group, 1), ILP_NONE);
	ck_assert_int_eq(group[0], 7); /* untouched */
}
END_TEST

/* Middle layers alike on each group (the first and last free): the ILP's
 * model is exact (rank costs t_first + (z - 1) t_g, (z - 1) t_g and
 * t_last + (z - 1) t_g; bytes likewise), so the ILP placement refined by
 * partition_solve must reach the optimum over every placement and partition,
 * and agree when nothing fits. */
static void check_exact(enum kind kind, uint64_t mult)
{
	static struct inst in;
	int feasible = 0, infeasible = 0;

	for (int seed = 1; seed <= 200; seed++) {
		int group[NP];
		double want, got;
		enum ilp_status st;

		rng_state = (uint64_t)seed * mult;
		random_inst(&in, kind);
		want = brute(&in);
		st = ilp_place(&in.p, group, 5);
		if (want == INFINITY) {
			/* one group: the only placement, which does not fit */
			ck_assert_msg(trivial(&in) ? st == ILP_OPTIMAL && refined(&in, group) == INFINITY : st == ILP_NONE,
				      "seed %d: status %d where nothing fits", seed, (int)st);
			infeasible++;
			continue;
		}
		ck_assert_msg(st == ILP_OPTIMAL, "seed %d: status %d", seed, (int)st);
		check_counts(&in, group);
		got = refined(&in, group);
		ck_assert_msg(fabs(got - want) <= 1e-9 * want,
			      "seed %d: refined %.10g, optimum %.10g", seed, got, want);
		feasible++;
	}
	ck_assert_int_ge(feasible, 100);
	ck_assert_int_ge(infeasible, 15);
}

START_TEST(test_uniform_exact)
{
	check_exact(UNIFORM, 104729);
}
END_TEST

START_TEST(test_ends_exact)
{
	check_exact(ENDS, 1299709);
}
END_TEST

/* Middle-layer times varying by up to +-60% around each group's mean: the
 * ILP prices a rank by a mean rate, so its placement is a heuristic for the
 * exact partition. Bytes stay alike, so feasibility is still exact.
 * Proven: refined <= rho^2 x optimum, rho the spread of middle-layer times
 * on a group (see spread), as the ILP is optimal for rates within that
 * spread. Measured on 3000 seeds of this generator: 91% exact, worst ratio
 * 1.54 (on these 200: 93%, 1.22); asserted: ILP_FACTOR and 85% exact. */
#define ILP_FACTOR 1.6
START_TEST(test_noisy_factor)
{
	static struct inst in;
	int feasible = 0, exact = 0;
	double worst = 1;

	for (int seed = 1; seed <= 200; seed++) {
		int group[NP];
		double want, got, rho;
		enum ilp_status st;

		rng_state = (uint64_t)seed * 15485863;
		random_inst(&in, NOISY);
		want = brute(&in);
		st = ilp_place(&in.p, group, 5);
		if (want == INFINITY) {
			ck_assert_msg(trivial(&in) || st == ILP_NONE,
				      "seed %d: placement where none fits", seed);
			continue;
		}
		ck_assert_msg(st == ILP_OPTIMAL, "seed %d: status %d", seed, (int)st);
		check_counts(&in, group);
		got = refined(&in, group);
		rho = spread(&in);
		ck_assert_msg(got >= want * (1 - 1e-9) && got <= want * rho * rho * (1 + 1e-6),
			      "seed %d: refined %.10g, optimum %.10g, rho %g", seed, got, want, rho);
		ck_assert_msg(got <= want * ILP_FACTOR, "seed %d: refined %.10g, optimum %.10g",
			      seed, got, want);
		worst = fmax(worst, got / want);
		exact += got <= want * (1 + 1e-9);
		feasible++;
	}
	if (getenv("ILP_STATS"))
		fprintf(stderr, "noisy: %d feasible, %d exact, worst ratio %.4f\n",
			feasible, exact, worst);
	ck_assert_int_ge(feasible, 100);
	ck_assert_int_ge(exact, feasible * 85 / 100);
}
END_TEST

/* A placement too large to prove optimal in the time limit (16 ranks on 3
 * groups, 130 layers: GLPK needs seconds) comes back in about that time
 * with a usable placement (ILP_FEASIBLE, or ILP_OPTIMAL on a fast machine). */
START_TEST(test_time_limit)
{
	enum { N = 130,
	       PP = 16,
	       G = 3 };
	static double time[G * N], st[N], ac[N], ex[N];
	static const double speed[G] = { 1, 2.2, 3.1 };
	int ranks[G] = { 6, 5, 5 }, group[PP], cnt[G] = { 0 };
	double inflight[PP], cap[G], t0, t1;
	struct layer_costs lc = { .n_layer = N, .n_group = G, .time = time, .fwd = time, .state_bytes = st, .act_bytes = ac, .extra_bytes = ex };
	struct placement_problem p = { .pp = PP, .n_group = G, .ranks = ranks, .lc = &lc, .a = 15, .b = 1, .inflight = inflight, .cap = cap };
	struct timespec ts;
	enum ilp_status s;

	for (int l = 0; l < N; l++) {
		st[l] = l == 0 || l == N - 1 ? 3 : 1;
		ac[l] = 0.2;
		ex[l] = l == N - 1 ? 4 : 0;
		for (int g = 0; g < G; g++)
			time[g * N + l] = speed[g] * (l == 0 ? 0.2 : l == N - 1 ? 2
										: 1);
	}
	for (int r = 0; r < PP; r++)
		inflight[r] = PP - r;
	for (int g = 0; g < G; g++)
		cap[g] = 2.0 * N / PP * 4.2 * (g + 1) / G + 10;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + 1e-9 * ts.tv_nsec;
	s = ilp_place(&p, group, 0.5);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = ts.tv_sec + 1e-9 * ts.tv_nsec;
	ck_assert(s == ILP_OPTIMAL || s == ILP_FEASIBLE);
	ck_assert_msg(t1 - t0 < 3, "took %g s for a 0.5 s limit", t1 - t0);
	for (int r = 0; r < PP; r++) {
		ck_assert(group[r] >= 0 && group[r] < G);
		cnt[group[r]]++;
	}
	for (int g = 0; g < G; g++)
		ck_assert_int_eq(cnt[g], ranks[g]);
}
END_TEST

/* The same placement under a node limit in place of the time limit
 * (plan_opts.ilp_node_limit): stopped with a usable placement, and the same
 * one every time (GLPK's node count does not depend on the machine's speed
 * or load). */
START_TEST(test_node_limit)
{
	enum { N = 130,
	       PP = 16,
	       G = 3 };
	static double time[G * N], st[N], ac[N], ex[N];
	static const double speed[G] = { 1, 2.2, 3.1 };
	int ranks[G] = { 6, 5, 5 }, group[PP], again[PP], cnt[G] = { 0 };
	double inflight[PP], cap[G];
	struct layer_costs lc = { .n_layer = N, .n_group = G, .time = time, .fwd = time, .state_bytes = st, .act_bytes = ac, .extra_bytes = ex };
	struct placement_problem p = { .pp = PP, .n_group = G, .ranks = ranks, .lc = &lc, .a = 15, .b = 1, .inflight = inflight, .cap = cap };
	enum ilp_status s;

	for (int l = 0; l < N; l++) {
		st[l] = l == 0 || l == N - 1 ? 3 : 1;
		ac[l] = 0.2;
		ex[l] = l == N - 1 ? 4 : 0;
		for (int g = 0; g < G; g++)
			time[g * N + l] = speed[g] * (l == 0 ? 0.2 : l == N - 1 ? 2
										: 1);
	}
	for (int r = 0; r < PP; r++)
		inflight[r] = PP - r;
	for (int g = 0; g < G; g++)
		cap[g] = 2.0 * N / PP * 4.2 * (g + 1) / G + 10;
	s = ilp_place_limits(&p, group, 0, 200);
	ck_assert(s == ILP_FEASIBLE);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(ilp_place_limits(&p, again, 0, 200), s);
		ck_assert(!memcmp(again, group, sizeof group));
	}
	for (int r = 0; r < PP; r++) {
		ck_assert(group[r] >= 0 && group[r] < G);
		cnt[group[r]]++;
	}
	for (int g = 0; g < G; g++)
		ck_assert_int_eq(cnt[g], ranks[g]);
	ilp_free_env(); /* GLPK makes a new environment when next used */
	ck_assert_int_eq(ilp_place_limits(&p, again, 0, 200), s);
	ck_assert(!memcmp(again, group, sizeof group));
	ilp_free_env();
}
END_TEST

/* GLPK prints nothing on stdout, on a feasible and an infeasible model. */
START_TEST(test_silent)
{
	static struct inst in;
	char path[] = "/tmp/check-ilp-XXXXXX";
	int fd = mkstemp(path), saved, group[NP];
	long size;
	FILE *fp;

	ck_assert_int_ge(fd, 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fd, STDOUT_FILENO), 0);
	rng_state = 99;
	random_inst(&in, NOISY);
	ilp_place(&in.p, group, 10);
	for (int g = 0; g < in.p.n_group; g++)
		in.cap[g] = 0.5; /* nothing fits */
	ck_assert_int_eq(ilp_place(&in.p, group, 10), ILP_NONE);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	fp = fdopen(fd, "r");
	fseek(fp, 0, SEEK_END);
	size = ftell(fp);
	fclose(fp);
	remove(path);
	ck_assert_int_eq(size, 0);
}
END_TEST

static Suite *ilp_suite(void)
{
	Suite *s = suite_create("ilp");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hand);
	tcase_add_test(tc, test_trivial);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_uniform_exact);
	tcase_add_test(tc, test_ends_exact);
	tcase_add_test(tc, test_noisy_factor);
	tcase_add_test(tc, test_time_limit);
	tcase_add_test(tc, test_node_limit);
	tcase_add_test(tc, test_silent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(ilp_suite());
}
