/* check_simulate.c: the op-by-op pipeline simulation (simulate.h): each
 * schedule's order of passes and its simulated times against timelines
 * drawn by hand, the makespan against the closed forms of the cost model
 * on balanced pipelines, and the input checks. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "simulate.h"
#include "testutil.h"
#include "util.h"

/* A balanced input: every virtual stage f, b, w seconds, no sends or tails. */
static struct sim_in *balanced(enum schedule sc, int pp, int vp, int m, double f, double b,
			       double w)
{
	struct sim_in *in = xcalloc(1, sizeof *in);

	in->schedule = sc;
	in->pp = pp;
	in->vp = vp;
	in->m = m;
	for (int k = 0; k < pp * vp; k++) {
		in->fwd[k] = f;
		in->bwd[k] = b;
		in->wgt[k] = w;
	}
	return in;
}

/* Rank r's passes as "F0 F1 B0 ..." (with virtual stages "F0c1": chunk 1). */
static void order_of(char *buf, size_t n, const struct sim_in *in,
		     const struct sim_result *sim, int r)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = sim->first[r]; i < sim->first[r + 1] && at < n; i++) {
		const struct sim_op *o = &sim->op[i];

		at += (size_t)snprintf(buf + at, n - at, "%s%c%d", at ? " " : "", "FBW"[o->kind], o -> mb);
		if (in->vp > 1 && at < n)
			at += (size_t)snprintf(buf + at, n - at, "c%d", o->chunk);
	}
}

/* Asserts rank r's pass starts, in its order, equal want[0..n). */
static void starts_are(const struct sim_result *sim, int r, const double *want, int n)
{
	ck_assert_int_eq(sim->first[r + 1] - sim->first[r], n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(fabs(sim->op[sim->first[r] + i].start - want[i]) < 1e-9,
			      "rank %d pass %d starts at %g, want %g", r, i,
			      sim->op[sim->first[r] + i].start, want[i]);
}

static void simulate(struct sim_result *sim, const struct sim_in *in)
{
	struct err e = { "" };

	ck_assert_msg(sim_run(sim, in, &e) == 0, "%s", e.msg);
}

/* 1F1B, p = 4, m = 8 (Narayanan et al. 2021 Fig. 4 top, Megatron's
 * warm-up of p - r - 1 forwards): rank 0 runs F0 F1 F2, then F3 B0 F4 B1 ...
 * F7 B4, then B5 B6 B7; rank 3 alternates from the start. With t_f = 1,
 * t_b = 2 on every stage it ends at (m + p - 1)(t_f + t_b) = 11 x 3 = 33. */
START_TEST(test_1f1b_order)
{
	struct sim_in *in = balanced(SCHED_1F1B, 4, 1, 8, 1, 2, 0);
	struct sim_result sim;
	char buf[512];

	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
	order_of(buf, sizeof buf, in, &sim, 1);
	ck_assert_str_eq(buf, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
	order_of(buf, sizeof buf, in, &sim, 3);
	ck_assert_str_eq(buf, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
	ck_assert_rel(sim.makespan, 33, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* 1F1B, p = 2, m = 4, stage 0 t_f = 1, t_b = 2, stage 1 t_f = 2, t_b = 4
 * (the hand-drawn timeline of check_schedule.c), intervals [start, end):
 *
 *   stage 0  F0 0-1  F1 1-2  B0 7-9   F2 9-10  B1 13-15 F3 15-16 B2 19-21 B3 25-27
 *   stage 1  F0 1-3  B0 3-7  F1 7-9   B1 9-13  F2 13-15 B2 15-19 F3 19-21 B3 21-25
 *
 * ends at 27 = (m - 1) max c + sum c = 3 x 6 + 9 (the cost model's T_pipe).
 * GPipe on the same stages: stage 0 F0..F3 0-4; stage 1 F0..F3 at 1, 3, 5,
 * 7, B0..B3 at 9, 13, 17, 21; stage 0 B0..B3 at 13, 17, 21, 25: also 27. */
START_TEST(test_unbalanced_1f1b_gpipe)
{
	struct sim_in *in = balanced(SCHED_1F1B, 2, 1, 4, 1, 2, 0);
	struct sim_result sim;
	double s0[] = { 0, 1, 7, 9, 13, 15, 19, 25 }, s1[] = { 1, 3, 7, 9, 13, 15, 19, 21 };
	double g0[] = { 0, 1, 2, 3, 13, 17, 21, 25 }, g1[] = { 1, 3, 5, 7, 9, 13, 17, 21 };
	char buf[256];

	in->fwd[1] = 2;
	in->bwd[1] = 4;
	simulate(&sim, in);
	starts_are(&sim, 0, s0, 8);
	starts_are(&sim, 1, s1, 8);
	ck_assert_rel(sim.makespan, 27, 1e-12);
	sim_free(&sim);

	in->schedule = SCHED_GPIPE;
	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0 F1 F2 F3 B0 B1 B2 B3");
	starts_are(&sim, 0, g0, 8);
	starts_are(&sim, 1, g1, 8);
	ck_assert_rel(sim.makespan, 27, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* Interleaved, p = 2, v = 2, m = 4, every chunk t_f = t_b = 1, as
 * Megatron-LM runs it: rank r warms up with 2 (p - r - 1) + (v - 1) p
 * forward steps (4 on rank 0, 2 on rank 1); forward step j takes
 * micro-batches in groups of p through chunk 0, then chunk 1: (0,c0) (1,c0)
 * (0,c1) (1,c1) (2,c0) (3,c0) (2,c1) (3,c1); backward step j the same
 * micro-batch on chunk v - 1 - c. Virtual stages: rank 0 c0 = 0, rank 1
 * c0 = 1, rank 0 c1 = 2, rank 1 c1 = 3. Starts worked out by hand:
 *
 *   rank 0  F0c0 0  F1c0 1  F0c1 2  F1c1 3  F2c0 4  B0c1 5  F3c0 6  B1c1 7
 *           F2c1 8  B0c0 9  F3c1 10 B1c0 11 B2c1 13 B3c1 15 B2c0 16 B3c0 17
 *   rank 1  F0c0 1  F1c0 2  F0c1 3  B0c1 4  F1c1 5  B1c1 6  F2c0 7  B0c0 8
 *           F3c0 9  B1c0 10 F2c1 11 B2c1 12 F3c1 13 B3c1 14 B2c0 15 B3c0 16
 *
 * ends at 18 = (m + (p - 1)/v) v (t_f + t_b) = 4.5 x 2 x 2 (Narayanan et
 * al. 2021 Sec. 2.2.2; cost_evaluate's (m - 1/v) max C + (1/v) sum C). */
START_TEST(test_interleaved_order)
{
	struct sim_in *in = balanced(SCHED_INTERLEAVED, 2, 2, 4, 1, 1, 0);
	struct sim_result sim;
	double s0[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 16, 17 };
	double s1[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	char buf[512];

	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 "
			      "B2c1 B3c1 B2c0 B3c0");
	order_of(buf, sizeof buf, in, &sim, 1);
	ck_assert_str_eq(buf, "F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 F2c0 B0c0 F3c0 B1c0 F2c1 B2c1 "
			      "F3c1 B3c1 B2c0 B3c0");
	starts_are(&sim, 0, s0, 16);
	starts_are(&sim, 1, s1, 16);
	ck_assert_rel(sim.makespan, 18, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* ZB-H1, p = 3, m = 6, t_F = t_B = t_W = 1 (Qi et al. 2024 Fig. 3's
 * pattern): 1F1B's warm-up, each B followed by a W once more than r are
 * pending on rank r, so rank r holds r W passes back to its end. Worked
 * by hand:
 *
 *   rank 0  F0 0  F1 1  F2 2  B0 5  W0 6  F3 7  B1 8  W1 9  F4 10 B2 11 W2 12
 *           F5 13 B3 14 W3 15 B4 16 W4 17 B5 18 W5 19
 *   rank 2  F0 2  B0 3  F1 4  B1 5  F2 6  B2 7  W0 8  F3 9  B3 10 W1 11 F4 12
 *           B4 13 W2 14 F5 15 B5 16 W3 17 W4 18 W5 19
 *
 * every rank ends at 20 = m (t_F + t_B + t_W) + (p - 1)(t_F + t_B - t_W)
 * (Qi et al. Sec. 3.1; the cost model's (m - rho) c + rho p c, rho = 1/3). */
START_TEST(test_zb_h1_order)
{
	struct sim_in *in = balanced(SCHED_ZB_H1, 3, 1, 6, 1, 1, 1);
	struct sim_result sim;
	double s0[] = { 0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };
	double s2[] = { 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };
	char buf[512];

	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0 F1 F2 B0 W0 F3 B1 W1 F4 B2 W2 F5 B3 W3 B4 W4 B5 W5");
	order_of(buf, sizeof buf, in, &sim, 1);
	ck_assert_str_eq(buf, "F0 F1 B0 F2 B1 W0 F3 B2 W1 F4 B3 W2 F5 B4 W3 B5 W4 W5");
	order_of(buf, sizeof buf, in, &sim, 2);
	ck_assert_str_eq(buf, "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 F4 B4 W2 F5 B5 W3 W4 W5");
	starts_are(&sim, 0, s0, 18);
	starts_are(&sim, 2, s2, 18);
	for (int r = 0; r < 3; r++)
		ck_assert_rel(sim.pipe_end[r], 20, 1e-12);
	ck_assert_rel(sim.makespan, 20, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* Interleaved zero bubble, p = 2, v = 2, m = 4, every chunk t_F = t_B =
 * t_W = 1: interleaved's order of F and B (test_interleaved_order), each B
 * followed by W passes while more than r are pending on rank r (ZB-H1's
 * rule): rank 0 runs each W right after its B, rank 1 one B later, its
 * last W at the end. Stages: rank 0 c0 = 0, c1 = 2; rank 1 c0 = 1,
 * c1 = 3. Starts worked out by hand:
 *
 *   rank 0  F0c0 0  F1c0 1  F0c1 2  F1c1 3  F2c0 4  B0c1 5  W0c1 6  F3c0 7
 *           B1c1 8  W1c1 9  F2c1 10 B0c0 11 W0c0 12 F3c1 13 B1c0 14 W1c0 15
 *           B2c1 16 W2c1 17 B3c1 19 W3c1 20 B2c0 21 W2c0 22 B3c0 23 W3c0 24
 *   rank 1  F0c0 1  F1c0 2  F0c1 3  B0c1 4  F1c1 5  B1c1 6  W0c1 7  F2c0 8
 *           B0c0 9  W1c1 10 F3c0 11 B1c0 12 W0c0 13 F2c1 14 B2c1 15 W1c0 16
 *           F3c1 17 B3c1 18 W2c1 19 B2c0 20 W3c1 21 B3c0 22 W2c0 23 W3c0 24
 *
 * (rank 0 waits 18-19 for B3c1's gradient from stage 3). Both end at 25 =
 * m v c_chunk + (p - 1) rho c_chunk = 4 x 2 x 3 + 1 x 1/3 x 3 (schedule.c,
 * c_chunk = t_F + t_B + t_W = 3, rho = 1/3). */
START_TEST(test_interleaved_zb_order)
{
	struct sim_in *in = balanced(SCHED_INTERLEAVED_ZB, 2, 2, 4, 1, 1, 1);
	struct sim_result sim;
	double s0[24], s1[24];
	char buf[512];

	for (int i = 0; i < 24; i++) {
		s0[i] = i < 18 ? i : i + 1;
		s1[i] = i + 1;
	}
	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 W0c1 F3c0 B1c1 W1c1 F2c1 B0c0 "
			      "W0c0 F3c1 B1c0 W1c0 B2c1 W2c1 B3c1 W3c1 B2c0 W2c0 B3c0 W3c0");
	order_of(buf, sizeof buf, in, &sim, 1);
	ck_assert_str_eq(buf, "F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 W0c1 F2c0 B0c0 W1c1 F3c0 B1c0 "
			      "W0c0 F2c1 B2c1 W1c0 F3c1 B3c1 W2c1 B2c0 W3c1 B3c0 W2c0 W3c0");
	starts_are(&sim, 0, s0, 24);
	starts_are(&sim, 1, s1, 24);
	ck_assert_rel(sim.makespan, 25, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* ZB-V, p = 2, m = 2, every chunk t_F = t_B = t_W = 1. Rank 0 holds stages
 * 0 (c0) and 3 (c1), rank 1 stages 1 (c0) and 2 (c1). The unit-time list
 * schedule (B first; then F, the second leg's first, while fewer than
 * 2 p = 4 chunks are held from F to W, the first leg's below 3; then the
 * oldest B's W), step by step:
 *
 *   step   0    1    2    3    4    5    6    7    8    9    10   11   12
 *   rank 0 F0c0 F1c0 -    F0c1 B0c1 F1c1 B1c1 B0c0 W0c1 B1c0 W1c1 W0c0 W1c0
 *   rank 1 -    F0c0 F0c1 F1c0 F1c1 B0c1 B0c0 B1c1 B1c0 W0c1 W0c0 W1c1 W1c0
 *
 * (rank 0 has nothing at step 2: stage 0 is through both micro-batches and
 * stage 3 waits on stage 2; rank 1 at step 4 holds 3 chunks and may take
 * the second leg's F1). Run in real time with the same unit times the
 * passes start at those steps and end at 13 = 6 m + (p - 1): rank 1 cannot
 * start before its input (1) and has 6 m passes. One rank (p = 1) runs the
 * V's two stages back to back, one micro-batch at a time (2 chunks held):
 * F0c0 F0c1 B0c1 B0c0 W0c1 W0c0 F1c0 ..., 6 m = 12. */
START_TEST(test_zb_v_order)
{
	struct sim_in *in = balanced(SCHED_ZB_V, 2, 2, 2, 1, 1, 1);
	struct sim_result sim;
	double s0[] = { 0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	double s1[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	char buf[512];

	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 B0c0 W0c1 B1c0 W1c1 W0c0 W1c0");
	order_of(buf, sizeof buf, in, &sim, 1);
	ck_assert_str_eq(buf, "F0c0 F0c1 F1c0 F1c1 B0c1 B0c0 B1c1 B1c0 W0c1 W0c0 W1c1 W1c0");
	starts_are(&sim, 0, s0, 12);
	starts_are(&sim, 1, s1, 12);
	ck_assert_rel(sim.makespan, 13, 1e-12);
	sim_free(&sim);

	in->pp = 1;
	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 0);
	ck_assert_str_eq(buf, "F0c0 F0c1 B0c1 B0c0 W0c1 W0c0 F1c0 F1c1 B1c1 B1c0 W1c1 W1c0");
	ck_assert_rel(sim.makespan, 12, 1e-12);
	sim_free(&sim);
	/* sends of 2 s (1 s a direction) into every stage: rank 1's F0 of
	 * stage 1 waits for it (1 + 1 = 2, ends at 3), but its F0 of stage 2,
	 * the V's turn on the same rank, sends nothing: it starts at 3 */
	in->pp = 2;
	for (int k = 0; k < 4; k++)
		in->send[k] = 2;
	simulate(&sim, in);
	order_of(buf, sizeof buf, in, &sim, 1);
	ck_assert_str_eq(buf, "F0c0 F0c1 F1c0 F1c1 B0c1 B0c0 B1c1 B1c0 W0c1 W0c0 W1c1 W1c0");
	ck_assert_rel(sim.op[sim.first[1]].start, 2, 1e-12);
	ck_assert_rel(sim.op[sim.first[1] + 1].start, 3, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* The virtual stage of rank r's chunk c, as strategy.h places them: ZB-V's
 * V (chunk 1 of rank r is stage 2 pp - 1 - r), else looped (c pp + r). */
static int stage_of(const struct sim_in *in, int r, int c)
{
	return schedule_v(in->schedule) && c ? 2 * in->pp - 1 - r : c * in->pp + r;
}

/* The rank of virtual stage k: the inverse. */
static int rank_of(const struct sim_in *in, int k)
{
	return schedule_v(in->schedule) && k >= in->pp ? 2 * in->pp - 1 - k : k % in->pp;
}

/* Checks sim against in: every pass (kind, stage, micro-batch) exactly
 * once (W only with the zero-bubble schedules) on its stage's rank; a
 * rank's passes one after another; none starts before its input: F after
 * F of the stage before, B after B of the stage after (the last stage: its
 * own F), W after its B, plus half the boundary's send between ranks.
 * With ZB-V, no rank holds more than 2 pp chunks (F run, W not yet); with
 * ZB-H2 more than 2 pp - 1 micro-batches. */
static void check_deps(const struct sim_in *in, const struct sim_result *sim)
{
	int pp = in->pp, S = pp * in->vp, m = in->m, zb = in->schedule == SCHED_ZB_H1 || in->schedule == SCHED_INTERLEAVED_ZB || in->schedule == SCHED_ZB_V || in->schedule == SCHED_ZB_H2 || in->schedule == SCHED_DUALPIPE_V;
	double *end = xcalloc((size_t)3 * S * m, sizeof *end);
	int *seen = xcalloc((size_t)3 * S * m, sizeof *seen);

	ck_assert_int_eq(sim->n_op, S * m * (zb ? 3 : 2));
	for (int r = 0; r < pp; r++)
		for (int i = sim->first[r]; i < sim->first[r + 1]; i++) {
			const struct sim_op *o = &sim->op[i];
			int k = stage_of(in, r, o->chunk);

			ck_assert_int_eq(o->rank, r);
			ck_assert(o->chunk >= 0 && o->chunk < in->vp && o->mb >= 0 && o->mb < m);
			seen[((size_t)o->kind * S + k) * m + o->mb]++;
			end[((size_t)o->kind * S + k) * m + o->mb] = o->end;
			if (i > sim->first[r])
				ck_assert(o->start >= sim->op[i - 1].end - 1e-12);
		}
	for (size_t j = 0; j < (size_t)3 * S * m; j++)
		ck_assert_int_eq(seen[j], j < (size_t)2 * S * m || zb ? 1 : 0);
	for (int r = 0; r < pp; r++) {
		int held = 0, most = 0;

		for (int i = sim->first[r]; i < sim->first[r + 1]; i++) {
			const struct sim_op *o = &sim->op[i];
			int k = stage_of(in, r, o->chunk), from = -1;
			double need = 0;

			if (o->kind == SIM_F && k > 0)
				from = k - 1;
			else if (o->kind == SIM_B && k < S - 1)
				from = k + 1;
			if (from >= 0) {
				bool p2p = rank_of(in, from) != r;

				need = end[((size_t)o->kind * S + from) * m + o->mb] +
				       (p2p ? in->send[o->kind == SIM_F ? k : k + 1] / 2 : 0);
			} else if (o->kind == SIM_B) {
				need = end[((size_t)SIM_F * S + k) * m + o->mb];
			} else if (o->kind == SIM_W) {
				need = end[((size_t)SIM_B * S + k) * m + o->mb];
			}
			ck_assert_msg(o->start >= need - 1e-12, "%s pp %d m %d rank %d pass %d "
								"starts at %g before its input (%g)",
				      schedule_name(in->schedule),
				      pp, m, r, i - sim->first[r], o->start, need);
			held += o->kind == SIM_F ? 1 : o->kind == SIM_W ? -1
									: 0;
			most = held > most ? held : most;
		}
		if (in->schedule == SCHED_ZB_V)
			ck_assert_msg(most <= 2 * pp, "zb-v pp %d m %d rank %d holds %d", pp, m, r,
				      most);
		if (in->schedule == SCHED_DUALPIPE_V)
			ck_assert_msg(most <= 2 * pp + 1, "dualpipev pp %d m %d rank %d holds %d", pp,
				      m, r, most);
		if (in->schedule == SCHED_ZB_H2)
			ck_assert_msg(most <= 2 * pp - 1, "zb-h2 pp %d m %d rank %d holds %d", pp,
				      m, r, most);
	}
	free(end);
	free(seen);
}

/* Every schedule on uneven stages (times from a fixed pseudo-random
 * sequence, some sends, zero times included) and on balanced ones: all
 * passes run (no order waits on itself), each after its input; ZB-V
 * within 2 pp chunks held, for pp 1 to 8 and m from pp (1 for ZB-V) to
 * 3 pp + 1. */
START_TEST(test_dependencies)
{
	static const enum schedule scheds[] = { SCHED_1F1B, SCHED_GPIPE, SCHED_ZB_H1,
						SCHED_INTERLEAVED, SCHED_INTERLEAVED_ZB, SCHED_ZB_V,
						SCHED_ZB_H2, SCHED_DUALPIPE_V };
	unsigned x = 12345;

	for (int si = 0; si < 8; si++)
		for (int pp = 1; pp <= 8; pp++)
			for (int m = scheds[si] == SCHED_ZB_V ? 1 : scheds[si] == SCHED_DUALPIPE_V ? 2 * pp
												   : pp;
			     m <= 3 * pp + 1; m++)
				for (int uneven = 0; uneven < 2; uneven++) {
					enum schedule sc = scheds[si];
					int vp = schedule_v(sc) ? 2 : schedule_virtual(sc) ? 2 + m % 2
											   : 1;
					struct sim_in *in = balanced(sc, pp, vp, m, 1, 1, 1);
					struct sim_result sim;

					for (int k = 0; uneven && k < pp * vp; k++) {
						x = x * 1103515245u + 12345u;
						in->fwd[k] = (x >> 16) % 5 * 0.5;
						in->bwd[k] = (x >> 8) % 7 * 0.5;
						in->wgt[k] = (x >> 4) % 3 * 0.5;
						in->send[k] = k && x % 3 == 0 ? 0.75 : 0;
					}
					simulate(&sim, in);
					check_deps(in, &sim);
					sim_free(&sim);
					free(in);
				}
}
END_TEST

/* The zero-bubble schedules on balanced chunks, t_F = t_B = t_W = 1, against
 * schedule.c's closed forms (c_chunk = 3, rho = 1/3):
 * - interleaved zero bubble, m a multiple of p: m v c_chunk + (p - 1) rho
 *   c_chunk = 3 m v + p - 1, equal;
 * - ZB-V: 2 m c_chunk + (p - 1) kappa c_chunk with kappa = max(0,
 *   (3 rho - 1) / 2) = 0: 6 m. No order reaches it for p > 1: rank p - 1
 *   holds 6 m passes and its first input comes after p - 1 forwards, so
 *   T >= 6 m + p - 1 (the paper's "zero bubble" leaves out that start).
 *   The list schedule stays within twice that start: T <= 6 m + 2 (p - 1),
 *   i.e. within 2 (p - 1) of the closed form. */
START_TEST(test_zb_closed_forms)
{
	for (int p = 1; p <= 6; p++)
		for (int m = p; m <= 4 * p + 1; m++) {
			struct sim_in *in = balanced(SCHED_ZB_V, p, 2, m, 1, 1, 1);
			struct sim_result sim;
			double a, b, c[2 * MAX_STAGES], closed;

			simulate(&sim, in);
			for (int k = 0; k < 2 * p; k++)
				c[k] = 3;
			schedule_weights(SCHED_ZB_V, m, 2, 1.0 / 3, &a, &b);
			closed = schedule_time(a, b, c, 2 * p);
			ck_assert_msg(sim.makespan >= 6.0 * m + p - 1 - 1e-9 &&
					      sim.makespan <= 6.0 * m + 2 * (p - 1) + 1e-9 &&
					      fabs(sim.makespan - closed) <= 2 * (p - 1) + 1e-9,
				      "zb-v p %d m %d: %g (closed form %g)", p, m, sim.makespan, closed);
			sim_free(&sim);
			free(in);
			for (int v = 2; v <= 3 && m % p == 0; v++) {
				in = balanced(SCHED_INTERLEAVED_ZB, p, v, m, 1, 1, 1);
				simulate(&sim, in);
				ck_assert_msg(fabs(sim.makespan - (3.0 * m * v + p - 1)) < 1e-9,
					      "interleaved-zb p %d v %d m %d: %g", p, v, m, sim.makespan);
				sim_free(&sim);
				free(in);
			}
		}
}
END_TEST

/* ZB-H2 against schedule.c's closed form on balanced stages, flushed:
 * - t_F = t_B = t_W = 1 (rho 1/3): rank p - 1 waits p - 1 forwards and
 *   then runs its 3 m passes without a gap: T = 3 m + p - 1 exactly, for
 *   p 1 to 6 and m p to 4 p + 1; rank 0 holds 2 p - 1 micro-batches (m >=
 *   2 p - 1), the paper's peak (check_deps: no rank more);
 * - p = 4, m = 8, t_F = 1, t_B = 2 (recomputation 1 + input gradients 1),
 *   t_W = 1: 8 x 4 + 3 max(t_F, t_F + t_B - 2 t_W) = 35; ZB-H1's order
 *   8 x 4 + 3 (t_F + t_B - t_W) = 38. */
START_TEST(test_zb_h2_closed_form)
{
	struct sim_in *in;
	struct sim_result sim;

	for (int p = 1; p <= 6; p++)
		for (int m = p; m <= 4 * p + 1; m++) {
			int held = 0, most = 0;

			in = balanced(SCHED_ZB_H2, p, 1, m, 1, 1, 1);
			simulate(&sim, in);
			ck_assert_msg(fabs(sim.makespan - (3.0 * m + p - 1)) < 1e-9,
				      "zb-h2 p %d m %d: %g", p, m, sim.makespan);
			for (int i = sim.first[0]; i < sim.first[1]; i++) {
				held += sim.op[i].kind == SIM_F ? 1 : sim.op[i].kind == SIM_W ? -1
											      : 0;
				most = held > most ? held : most;
			}
			ck_assert_int_eq(most, m < 2 * p - 1 ? m : 2 * p - 1);
			sim_free(&sim);
			free(in);
		}
	in = balanced(SCHED_ZB_H2, 4, 1, 8, 1, 2, 1);
	simulate(&sim, in);
	ck_assert_rel(sim.makespan, 35, 1e-12);
	sim_free(&sim);
	free(in);
	in = balanced(SCHED_ZB_H1, 4, 1, 8, 1, 2, 1);
	simulate(&sim, in);
	ck_assert_rel(sim.makespan, 38, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

/* DualPipeV (schedule.c: ZB-V's weights, 2 pp + 1 chunks held) on balanced
 * chunks, t_F = t_B = t_W = 1, c_chunk = 3, rho 1/3: closed form 2 m
 * c_chunk + (p - 1) rho c_chunk = 6 m + p - 1 (p = 4, m = 8: 51; the last
 * rank waits p - 1 = 3 chunk forwards, then runs its 2 x 8 x 3 = 48 passes
 * without a gap). The order meets it for p 2 to 4 and m 2 p to 4 p; it is
 * never below (a lower bound) and within 2 (p - 1) for p 5, 6. */
START_TEST(test_dualpipe_v_closed_form)
{
	for (int p = 2; p <= 6; p++)
		for (int m = 2 * p; m <= 4 * p; m++) {
			struct sim_in *in = balanced(SCHED_DUALPIPE_V, p, 2, m, 1, 1, 1);
			struct sim_result sim;
			double a, b, c[2 * MAX_STAGES], closed;

			simulate(&sim, in);
			for (int k = 0; k < 2 * p; k++)
				c[k] = 3;
			schedule_weights(SCHED_DUALPIPE_V, m, 2, 1.0 / 3, &a, &b);
			closed = schedule_time(a, b, c, 2 * p);
			ck_assert_rel(closed, 6.0 * m + p - 1, 1e-12);
			if (p <= 4)
				ck_assert_msg(fabs(sim.makespan - closed) < 1e-9,
					      "dualpipev p %d m %d: %g (closed form %g)", p, m,
					      sim.makespan, closed);
			else
				ck_assert_msg(sim.makespan >= closed - 1e-9 &&
						      sim.makespan <= closed + 2 * (p - 1) + 1e-9,
					      "dualpipev p %d m %d: %g (closed form %g)", p, m,
					      sim.makespan, closed);
			sim_free(&sim);
			free(in);
		}
}
END_TEST

/* Interleaved with m not a multiple of pp (pp 4, vp 3, m 5; pp 5, vp 2,
 * m 7): Megatron's warm-up on a short last group would wait on itself
 * (rank 0's forward step 14, micro-batch 4 on chunk 2, needs rank 3's
 * micro-batch 4 on chunk 1, which rank 3 runs after its backward of
 * micro-batch 0 on chunk 1, which needs rank 0's first backward, after
 * step 14). The order of the next multiple of pp without the missing
 * micro-batches runs, each pass once: 2 m vp per rank. */
START_TEST(test_interleaved_short_group)
{
	int cases[][3] = { { 4, 3, 5 }, { 5, 2, 7 }, { 4, 2, 6 } };

	for (int i = 0; i < 3; i++) {
		struct sim_in *in = balanced(SCHED_INTERLEAVED, cases[i][0], cases[i][1],
					     cases[i][2], 1, 2, 0);
		struct sim_result sim;

		simulate(&sim, in);
		for (int r = 0; r < in->pp; r++) {
			int seen[2][8][3] = { { { 0 } } };

			ck_assert_int_eq(sim.first[r + 1] - sim.first[r], 2 * in->m * in->vp);
			for (int j = sim.first[r]; j < sim.first[r + 1]; j++)
				seen[sim.op[j].kind][sim.op[j].mb][sim.op[j].chunk]++;
			for (int mb = 0; mb < in->m; mb++)
				for (int c = 0; c < in->vp; c++)
					ck_assert(seen[0][mb][c] == 1 && seen[1][mb][c] == 1);
		}
		sim_free(&sim);
		free(in);
	}
}
END_TEST

/* Balanced pipelines, t_f = 1, t_b = 2 (ZB-H1: t_B = t_W = 1), against the
 * closed forms of the papers that the cost model uses (schedule.c):
 * 1F1B and GPipe (m + p - 1)(t_f + t_b); ZB-H1 m c + (p - 1)(t_F + t_B -
 * t_W) = 3m + (p - 1); interleaved with m a multiple of p
 * (m + (p - 1)/v) v c_chunk, c_chunk = 3. */
START_TEST(test_balanced_closed_forms)
{
	for (int p = 1; p <= 6; p++)
		for (int m = p; m <= 12; m++) {
			struct sim_in *in = balanced(SCHED_1F1B, p, 1, m, 1, 2, 0);
			struct sim_result sim;

			simulate(&sim, in);
			ck_assert_rel(sim.makespan, (m + p - 1) * 3.0, 1e-12);
			sim_free(&sim);
			in->schedule = SCHED_GPIPE;
			simulate(&sim, in);
			ck_assert_rel(sim.makespan, (m + p - 1) * 3.0, 1e-12);
			sim_free(&sim);
			in->schedule = SCHED_ZB_H1;
			for (int k = 0; k < p; k++)
				in->bwd[k] = in->wgt[k] = 1;
			simulate(&sim, in);
			ck_assert_msg(fabs(sim.makespan - (3.0 * m + p - 1)) < 1e-9,
				      "zb-h1 p %d m %d: %g, want %g", p, m, sim.makespan, 3.0 * m + p - 1);
			sim_free(&sim);
			free(in);
			for (int v = 2; v <= 3 && p > 1 && m % p == 0; v++) {
				in = balanced(SCHED_INTERLEAVED, p, v, m, 1, 2, 0);
				simulate(&sim, in);
				ck_assert_msg(fabs(sim.makespan - (m + (p - 1.0) / v) * v * 3) < 1e-9,
					      "interleaved p %d v %d m %d: %g", p, v, m, sim.makespan);
				sim_free(&sim);
				free(in);
			}
		}
}
END_TEST

/* p2p and the tails: p = 2, m = 1, t_f = t_b = 1, send[1] = 2 (1 each
 * way): rank 0 F0 0-1; the activation arrives at 2: rank 1 F0 2-3, B0
 * 3-4; the gradient arrives at 5: rank 0 B0 5-6 = the cost model's
 * (m - 1) max c + sum c with c = t_f + t_b + send: 0 + 2 + 4. Rank 0 is
 * idle 1-4 (bubble) and waits for the transfer 4-5. Tails: rank 0 DP 0.5
 * + optimizer 0.25 after 6, rank 1 DP 3 after 4: makespan max(6.75, 7). */
START_TEST(test_send_and_tails)
{
	struct sim_in *in = balanced(SCHED_1F1B, 2, 1, 1, 1, 1, 0);
	struct sim_result sim;
	const struct sim_op *b0;

	in->send[1] = 2;
	simulate(&sim, in);
	ck_assert_rel(sim.op[sim.first[1]].start, 2, 1e-12);
	b0 = &sim.op[sim.first[0] + 1];
	ck_assert_rel(b0->free, 1, 1e-12);
	ck_assert_rel(b0->sent, 4, 1e-12);
	ck_assert_rel(b0->start, 5, 1e-12);
	ck_assert_rel(sim.makespan, 6, 1e-12);
	sim_free(&sim);
	in->dp[0] = 0.5;
	in->opt[0] = 0.25;
	in->dp[1] = 3;
	simulate(&sim, in);
	ck_assert_rel(sim.pipe_end[1], 4, 1e-12);
	ck_assert_rel(sim.makespan, 7, 1e-12);
	sim_free(&sim);
	free(in);
}
END_TEST

START_TEST(test_bad_input)
{
	struct sim_in *in = balanced(SCHED_INTERLEAVED, 4, 2, 3, 1, 1, 0);
	struct sim_result sim;
	struct err e = { "" };

	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "micro-batches (3) >= pp (4)"));
	in->schedule = SCHED_INTERLEAVED_ZB;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "interleaved-zb needs micro-batches (3) >= pp (4)"));
	in->schedule = SCHED_DUALPIPE_V;
	in->m = 7;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "dualpipev needs micro-batches (7) >= 2 x pp (8)"));
	in->m = 3;
	in->vp = 1;
	in->schedule = SCHED_ZB_H2;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "zb-h2 needs micro-batches (3) >= pp (4)"));
	in->schedule = SCHED_DUALPIPE;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "schedule dualpipe is not drawn"));
	in->vp = 2;
	in->schedule = SCHED_ZB_V;
	in->vp = 3;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "zb-v: it runs 2 stages per rank"));
	in->vp = 2;
	in->schedule = SCHED_1F1B;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "interleaved, interleaved-zb, zb-v and dualpipev only"));
	in->schedule = SCHED_ZB_V;
	in->vp = 1;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "interleaved, interleaved-zb, zb-v and dualpipev only"));
	in->schedule = SCHED_1F1B;
	in->vp = 1;
	in->m = SIM_MAX_OPS;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "too many to draw"));
	/* zero bubble counts three passes a micro-batch: 4 x 2e5 x 3 > 2e6,
	 * where 1F1B's two (1.6e6) would be drawn */
	in->schedule = SCHED_ZB_H1;
	in->m = SIM_MAX_OPS / 10;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "too many to draw"));
	in->m = 2;
	in->fwd[1] = -1;
	ck_assert_int_eq(sim_run(&sim, in, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "stage 1"));
	free(in);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("simulate");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_1f1b_order);
	tcase_add_test(tc, test_unbalanced_1f1b_gpipe);
	tcase_add_test(tc, test_interleaved_order);
	tcase_add_test(tc, test_zb_h1_order);
	tcase_add_test(tc, test_interleaved_zb_order);
	tcase_add_test(tc, test_zb_v_order);
	tcase_add_test(tc, test_dependencies);
	tcase_add_test(tc, test_zb_closed_forms);
	tcase_add_test(tc, test_zb_h2_closed_form);
	tcase_add_test(tc, test_dualpipe_v_closed_form);
	tcase_add_test(tc, test_interleaved_short_group);
	tcase_add_test(tc, test_balanced_closed_forms);
	tcase_add_test(tc, test_send_and_tails);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
