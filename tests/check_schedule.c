/* check_schedule.c: pipeline schedule weights and activations in flight
 * (schedule.h) against timelines drawn by hand, and the schedule table's
 * rules. */
#include <check.h>
#include <stdlib.h>

#include "schedule.h"
#include "testutil.h"

/* 1F1B, p = 2, m = 3, t_f = 1, t_b = 2 on both stages (c = 3); one column
 * per time unit, "." idle:
 *
 *   t        0   1   2   3   4   5   6   7   8   9  10  11
 *   stage 0  F0  F1  .   .   B0  B0  F2  B1  B1  .   B2  B2
 *   stage 1  .   F0  B0  B0  F1  B1  B1  F2  B2  B2
 *
 * ends at 12 = (m + p - 1) c = (m-1) max c + sum c = 2*3 + 6. */
START_TEST(test_1f1b_balanced)
{
	double a, b, c[2] = { 3, 3 };

	schedule_weights(SCHED_1F1B, 3, 1, 0, &a, &b);
	ck_assert_rel(a, 2, 0);
	ck_assert_rel(b, 1, 0);
	ck_assert_rel(schedule_time(a, b, c, 2), 12, 1e-12);
}
END_TEST

/* 1F1B, p = 2, m = 4, stage 0 t_f = 1, t_b = 2 (c0 = 3), stage 1 t_f = 2,
 * t_b = 4 (c1 = 6), intervals [start, end):
 *
 *   stage 0  F0 0-1  F1 1-2  B0 7-9   F2 9-10  B1 13-15 F3 15-16 B2 19-21 B3 25-27
 *   stage 1  F0 1-3  B0 3-7  F1 7-9   B1 9-13  F2 13-15 B2 15-19 F3 19-21 B3 21-25
 *
 * (stage 0 waits for stage 1's backward each time; stage 1 waits for
 * nothing after F0). Ends at 27 = (m-1) max c + sum c = 3*6 + 9.
 * GPipe (all forwards, then all backwards): stage 1 F0..F3 1-9, B0..B3
 * 9-25, stage 0 B3 25-27: also 27. */
START_TEST(test_1f1b_gpipe_unbalanced)
{
	double a, b, c[2] = { 3, 6 };

	schedule_weights(SCHED_1F1B, 4, 1, 0, &a, &b);
	ck_assert_rel(schedule_time(a, b, c, 2), 27, 1e-12);
	schedule_weights(SCHED_GPIPE, 4, 1, 0, &a, &b);
	ck_assert_rel(schedule_time(a, b, c, 2), 27, 1e-12);
}
END_TEST

/* Interleaved, p = 2, v = 2, m = 2, every chunk t_f = 1, t_b = 2; virtual
 * stages a, c on rank 0 and b, d on rank 1 (Megatron order a b c d):
 *
 *   t        0   1   2   3   4   5   6   7   8   9  10  11  12  13  14
 *   rank 0   F0a F1a F0c F1c .   .   B0c B0c .   B1c B1c B0a B0a B1a B1a
 *   rank 1   .   F0b F1b F0d B0d B0d F1d B1d B1d B0b B0b B1b B1b
 *
 * Ends at 15 = (m + (p-1)/v) * v * c_chunk = (2 + 1/2) * 2 * 3; weights
 * a = m v - 1 = 3, b = 1/v: 3*3 + 12/2 = 15. */
START_TEST(test_interleaved)
{
	double a, b, c[4] = { 3, 3, 3, 3 };

	schedule_weights(SCHED_INTERLEAVED, 2, 2, 0, &a, &b);
	ck_assert_rel(a, 3, 0);
	ck_assert_rel(b, 0.5, 0);
	ck_assert_rel(schedule_time(a, b, c, 4), 15, 1e-12);
	/* m = 4: (4 + 1/2) * 2 * 3 = 27. */
	schedule_weights(SCHED_INTERLEAVED, 4, 2, 0, &a, &b);
	ck_assert_rel(schedule_time(a, b, c, 4), 27, 1e-12);
}
END_TEST

/* ZB-H1, p = 2, m = 2, F = B = W = 1 (c = 3, rho = 1/3):
 *
 *   t        0   1   2   3   4   5   6
 *   stage 0  F0  F1  .   B0  W0  B1  W1
 *   stage 1  .   F0  B0  F1  B1  W0  W1
 *
 * (stage 0 fills the wait for B1 with W0). Ends at 7 = m c + (p-1)(t_F +
 * t_B - t_W) = 6 + 1, where 1F1B takes (m+p-1)c = 9. Weights a = m - rho,
 * b = rho: (2 - 1/3) 3 + (1/3) 6 = 7. */
START_TEST(test_zb_h1)
{
	double a, b, c2[2] = { 3, 3 }, c4[4] = { 3, 3, 3, 3 };

	schedule_weights(SCHED_ZB_H1, 2, 1, 1.0 / 3, &a, &b);
	ck_assert_rel(schedule_time(a, b, c2, 2), 7, 1e-12);
	/* p = 4, m = 8: 8*3 + 3*1 = 27. */
	schedule_weights(SCHED_ZB_H1, 8, 1, 1.0 / 3, &a, &b);
	ck_assert_rel(a, 8 - 1.0 / 3, 1e-12);
	ck_assert_rel(b, 1.0 / 3, 1e-12);
	ck_assert_rel(schedule_time(a, b, c4, 4), 27, 1e-12);
}
END_TEST

START_TEST(test_inflight)
{
	/* 1F1B, p = 4, m = 8: rank r holds p - r: 4, 3, 2, 1. */
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 4, 1, 8, 0), 4, 0);
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 4, 1, 8, 1), 3, 0);
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 4, 1, 8, 3), 1, 0);
	/* m = 2 < p: at most m. */
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 4, 1, 2, 0), 2, 0);
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 4, 1, 2, 3), 1, 0);
	/* ZB-H1 as 1F1B; GPipe all m. */
	ck_assert_rel(schedule_inflight(SCHED_ZB_H1, 4, 1, 8, 1), 3, 0);
	ck_assert_rel(schedule_inflight(SCHED_GPIPE, 4, 1, 8, 3), 8, 0);
	/* The drawn 1F1B timeline above (p = 2, m = 3): stage 0 holds F0, F1
	 * before B0 (2), stage 1 one at a time (1). */
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 2, 1, 3, 0), 2, 0);
	ck_assert_rel(schedule_inflight(SCHED_1F1B, 2, 1, 3, 1), 1, 0);
	/* Interleaved p = 4, v = 2, m = 8 (Megatron's schedule table with
	 * groups of g = p = 4: forwards 0-3 on chunk 0 (micro-batches 0-3),
	 * 4-7 on chunk 1, 8-11 on chunk 0 (4-7), 12-15 on chunk 1): rank 0
	 * warm-up 2*3 + 1*4 = 10 chunks + 1 = 11 chunk activations (COSTMODEL.md:
	 * p (1 + (p-1)/(p v)) = 4 * 11/8 = 5.5 micro-batches of the rank's
	 * layers), forwards 0-10: chunk 0 holds 0-3 and 8-10, 7; chunk 1 4-7,
	 * 4; rank 3: 0 + 4 + 1 = 5, forwards 0-4: 4 on chunk 0, 1 on chunk 1
	 * (its forward 4 and backward 0 are both micro-batch 0 on chunk 1). */
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 8, 0), 7, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 8, 4), 4, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 8, 3), 4, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 8, 7), 1, 0);
	/* m = 2: at most m v = 4 chunks, the table's one (last) group of 2
	 * micro-batches per chunk: 2 and 2. The drawn interleaved timeline
	 * (p = 2, v = 2, m = 2): rank 0 holds all 4 chunk forwards (2 per
	 * chunk), rank 1 holds F0b, F1b, F0d = 2*0 + 2 + 1 = 3: 2 on chunk b
	 * (stage 1), 1 on chunk d (stage 3). */
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 2, 0), 2, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 2, 4), 2, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 2, 2, 2, 0), 2, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 2, 2, 2, 1), 2, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 2, 2, 2, 3), 1, 0);
}
END_TEST

/* Megatron's interleaved warm-up at depth (schedules.py
 * get_pp_rank_microbatches, get_schedule_table; g = p):
 * - GPT-3 175B's DGX H100 recipe, p = 8, v = 12, m = 64: rank 0 warm-up
 *   2*7 + 11*8 = 102, + 1 = 103 = 12*8 + 7 forwards: one round of 8 on
 *   each chunk, then 7 more on chunk 0: chunk 0 15, chunks 1-11 8 each
 *   (sum 15 + 88 = 103); rank 7: 0 + 88 + 1 = 89 = 11*8 + 1: chunks 0-10
 *   8 each, chunk 11 (virtual stage 11*8 + 7 = 95, the head's) 1; rank 3:
 *   2*4 + 88 + 1 = 97 = 12*8 + 1: chunk 0 9, the rest 8.
 * - m not a multiple of g, p = 4, v = 2, m = 6: the table's groups are
 *   micro-batches 0-3 (chunk 0, then chunk 1) and the last group 4-5
 *   (chunk 0, then chunk 1): (0,0) (1,0) (2,0) (3,0) (0,1) (1,1) (2,1)
 *   (3,1) (4,0) (5,0) (4,1) (5,1). Rank 0: min(2*3 + 4 + 1, 12) = 11
 *   forwards: chunk 0 4 + 2 = 6, chunk 1 4 + 1 = 5; rank 2: 2 + 4 + 1 = 7:
 *   chunk 0 4, chunk 1 3.
 * - all in the warm-up: p = 4, v = 3, m = 4, rank 0: 6 + 8 = 14 >= m v =
 *   12, every forward first: 4 per chunk. */
START_TEST(test_inflight_interleaved_depth)
{
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 8, 12, 64, 0), 15, 0);
	for (int j = 1; j < 12; j++)
		ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 8, 12, 64, 8 * j), 8, 0);
	for (int j = 0; j < 11; j++)
		ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 8, 12, 64, 8 * j + 7), 8, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 8, 12, 64, 95), 1, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 8, 12, 64, 3), 9, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 8, 12, 64, 8 + 3), 8, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 6, 0), 6, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 6, 4), 5, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 6, 2), 4, 0);
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 2, 6, 6), 3, 0);
	for (int j = 0; j < 3; j++)
		ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED, 4, 3, 4, 4 * j), 4, 0);
}
END_TEST

/* Interleaved zero bubble, p = 2, v = 2, m = 4, chunks of c = 3 split F
 * 1, B 1, W 1 (rho = 1/3): ZB-H1's bubble (p-1)(F + B - W) = 1 over chunks,
 * after m v chunk-passes of 3 each: 4*2*3 + 1 = 25. Chunk weights a = m v -
 * rho = 23/3, b = rho/v = 1/6: 23/3 * 3 + 1/6 * 12 = 23 + 2 = 25. Rank
 * weights over C = 6: a = m - rho/v = 23/6, b = 1/6: 23 + 2 = 25. With
 * rho = 1 it is interleaved 1F1B's (m v - 1, 1/v). */
START_TEST(test_interleaved_zb)
{
	double a, b, ia, ib, c4[4] = { 3, 3, 3, 3 }, r2[2] = { 6, 6 };

	schedule_weights(SCHED_INTERLEAVED_ZB, 4, 2, 1.0 / 3, &a, &b);
	ck_assert_rel(a, 23.0 / 3, 1e-12);
	ck_assert_rel(b, 1.0 / 6, 1e-12);
	ck_assert_rel(schedule_time(a, b, c4, 4), 25, 1e-12);
	schedule_rank_weights(SCHED_INTERLEAVED_ZB, 4, 2, 1.0 / 3, &a, &b);
	ck_assert_rel(schedule_time(a, b, r2, 2), 25, 1e-12);
	schedule_weights(SCHED_INTERLEAVED_ZB, 4, 2, 1, &a, &b);
	schedule_weights(SCHED_INTERLEAVED, 4, 2, 0, &ia, &ib);
	ck_assert_rel(a, ia, 1e-12);
	ck_assert_rel(b, ib, 1e-12);
}
END_TEST

/* ZB-V, p = 2 (4 chunks), m = 4, chunk c = 3 split F 1, B 1, W 1 (rho =
 * 1/3): with a flush every iteration rank 1 starts after one chunk forward
 * and then runs its 2 m c = 24 of work: T = 25 (the paper's (p-1)(F + B -
 * 2W) = 0 bubble needs the next iteration to fill the start). a = 2m - rho =
 * 23/3, b = rho/2 = 1/6: 23 + 2 = 25. With F = 1.5, B = W = 0.75 (rho 1/2):
 * 24 + 1.5 = 25.5, a = 7.5, b = 0.25: 22.5 + 3 = 25.5; over the ranks' C =
 * 6: a = m - 0.25, b = 0.25: 22.5 + 3 = 25.5. */
START_TEST(test_zb_v)
{
	double a, b, c4[4] = { 3, 3, 3, 3 }, r2[2] = { 6, 6 };

	schedule_weights(SCHED_ZB_V, 4, 2, 1.0 / 3, &a, &b);
	ck_assert_rel(schedule_time(a, b, c4, 4), 25, 1e-12);
	schedule_weights(SCHED_ZB_V, 4, 2, 0.5, &a, &b);
	ck_assert_rel(a, 7.5, 1e-12);
	ck_assert_rel(b, 0.25, 1e-12);
	ck_assert_rel(schedule_time(a, b, c4, 4), 25.5, 1e-12);
	schedule_rank_weights(SCHED_ZB_V, 4, 2, 0.5, &a, &b);
	ck_assert_rel(schedule_time(a, b, r2, 2), 25.5, 1e-12);
	/* ZB-V in flight, p = 4, m = 8: rank r holds 2 (p - r) - 1 on its first
	 * stage r and 2 r + 1 on its second, 2 p - 1 - r: 8 = 2p chunk
	 * micro-batches each (1F1B's p stage micro-batches). */
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 8, 0), 7, 0);
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 8, 7), 1, 0);
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 8, 1), 5, 0);
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 8, 6), 3, 0);
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 8, 3), 1, 0);
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 8, 4), 7, 0);
	/* at most m */
	ck_assert_rel(schedule_inflight(SCHED_ZB_V, 4, 2, 4, 0), 4, 0);
	/* interleaved zero bubble keeps interleaving's warm-up (test_inflight:
	 * 7 on rank 0's chunk 0) */
	ck_assert_rel(schedule_inflight(SCHED_INTERLEAVED_ZB, 4, 2, 8, 0), 7, 0);
}
END_TEST

/* ZB-H2 (Qi et al. 2024 Sec. 3.1, Table 1), p = 4, m = 8, flushed:
 * - F = B = W = 1 (c = 3, rho = 1/3): rank 3 waits 3 forwards, then runs
 *   its 3 m = 24 without a gap: T = 27, ZB-H1's (p-1)(F + B - W) = 3 too;
 *   a = 8 - 1/3, b = 1/3: 23 + 4 = 27.
 * - F = 1, recomputation R = 1 before B, B = R + 1 = 2, W = 1 (c = 4):
 *   ZB-H1 T = 32 + 3 (F + B - W) = 38 (rho = (F + R) / c = 1/2); ZB-H2 T
 *   = 32 + 3 max(F, F + B - 2W) = 35 (its rho = 1/4): a = 7.75, b = 0.25:
 *   31 + 4 = 35.
 * In flight: the paper's peak 2p - 1 = 7 on every rank, at most m:
 * m = 8: 7; m = 5: 5; m = 4: 4. */
START_TEST(test_zb_h2)
{
	double a, b, c3[4] = { 3, 3, 3, 3 }, c4[4] = { 4, 4, 4, 4 };

	schedule_weights(SCHED_ZB_H2, 8, 1, 1.0 / 3, &a, &b);
	ck_assert_rel(schedule_time(a, b, c3, 4), 27, 1e-12);
	schedule_weights(SCHED_ZB_H1, 8, 1, 0.5, &a, &b);
	ck_assert_rel(schedule_time(a, b, c4, 4), 38, 1e-12);
	schedule_weights(SCHED_ZB_H2, 8, 1, 0.25, &a, &b);
	ck_assert_rel(a, 7.75, 1e-12);
	ck_assert_rel(b, 0.25, 1e-12);
	ck_assert_rel(schedule_time(a, b, c4, 4), 35, 1e-12);
	schedule_rank_weights(SCHED_ZB_H2, 8, 1, 0.25, &a, &b);
	ck_assert_rel(schedule_time(a, b, c4, 4), 35, 1e-12);
	for (int r = 0; r < 4; r++) {
		ck_assert_rel(schedule_inflight(SCHED_ZB_H2, 4, 1, 8, r), 7, 0);
		ck_assert_rel(schedule_inflight(SCHED_ZB_H2, 4, 1, 5, r), 5, 0);
		ck_assert_rel(schedule_inflight(SCHED_ZB_H2, 4, 1, 4, r), 4, 0);
	}
}
END_TEST

/* DualPipeV and DualPipe, p = 4, m = 8, F = B = W = 1, flushed:
 * - DualPipeV: 8 chunks of c = 3; the last rank waits 3 chunk forwards,
 *   then runs 2 x 8 x 3 = 48: T = 51; a = 16 - 1/3, b = 1/6: 47 + 4 = 51.
 *   In flight 2p + 1 = 9 chunk micro-batches per rank: stage 0 holds 8,
 *   stage 7 1; stage 3 2, stage 4 7; stage 1 6, stage 6 3.
 * - DualPipe: 4 stages of c = 3 (each rank one of each copy), 8 x 3 = 24
 *   of work, ranks 1 and 2 wait p/2 - 1 = 1 forward: T = 25; a = 8 -
 *   1/3, b = 1/6: 23 + 2 = 25. In flight p + 1 = 5 per rank, 2.5 per
 *   stage; m = 4: 2 per stage.
 * - pairs: DualPipeV 1 - 9/16 = 7/16 of its 16 chunk passes; DualPipe 1 -
 *   5/8 = 3/8; none for ZB-V, and none when the held fill the passes. */
START_TEST(test_dualpipe)
{
	double a, b, c3[8] = { 3, 3, 3, 3, 3, 3, 3, 3 };
	static const double v8[8] = { 8, 6, 4, 2, 7, 5, 3, 1 };

	schedule_weights(SCHED_DUALPIPE_V, 8, 2, 1.0 / 3, &a, &b);
	ck_assert_rel(schedule_time(a, b, c3, 8), 51, 1e-12);
	schedule_weights(SCHED_DUALPIPE, 8, 1, 1.0 / 3, &a, &b);
	ck_assert_rel(a, 23.0 / 3, 1e-12);
	ck_assert_rel(b, 1.0 / 6, 1e-12);
	ck_assert_rel(schedule_time(a, b, c3, 4), 25, 1e-12);
	schedule_rank_weights(SCHED_DUALPIPE, 8, 1, 1.0 / 3, &a, &b);
	ck_assert_rel(schedule_time(a, b, c3, 4), 25, 1e-12);
	for (int k = 0; k < 8; k++)
		ck_assert_rel(schedule_inflight(SCHED_DUALPIPE_V, 4, 2, 8, k), v8[k], 0);
	ck_assert_rel(schedule_inflight(SCHED_DUALPIPE, 4, 1, 8, 0), 2.5, 0);
	ck_assert_rel(schedule_inflight(SCHED_DUALPIPE, 4, 1, 8, 3), 2.5, 0);
	ck_assert_rel(schedule_inflight(SCHED_DUALPIPE, 4, 1, 4, 1), 2, 0);
	ck_assert_rel(schedule_fb_paired(SCHED_DUALPIPE_V, 4, 8), 7.0 / 16, 1e-12);
	ck_assert_rel(schedule_fb_paired(SCHED_DUALPIPE, 4, 8), 3.0 / 8, 1e-12);
	ck_assert_rel(schedule_fb_paired(SCHED_ZB_V, 4, 8), 0, 0);
	ck_assert_rel(schedule_fb_paired(SCHED_DUALPIPE, 4, 5), 0, 0);
}
END_TEST

/* Megatron-Core's EP all-to-all overlap (schedule_ep_paired): rank 0's
 * warm-up forwards run alone, and as many backwards after its last
 * forward: 1F1B pp 4, m 8: 4 held of 8 forwards, 1 - 4/8 = 1/2; pp 1, m 4
 * (no pipeline: forward i + 1 with backward i): 1 - 1/4 = 3/4; interleaved
 * pp 4, v 2, m 8: 2 x 3 + 1 x 4 + 1 = 11 held of 16 chunk forwards, 5/16;
 * m 2: 11 of 4, none; not under GPipe or DualPipe (schedule_fb_paired's). */
START_TEST(test_ep_paired)
{
	ck_assert_rel(schedule_ep_paired(SCHED_1F1B, 4, 1, 8), 0.5, 1e-12);
	ck_assert_rel(schedule_ep_paired(SCHED_1F1B, 1, 1, 4), 0.75, 1e-12);
	ck_assert_rel(schedule_ep_paired(SCHED_INTERLEAVED, 4, 2, 8), 5.0 / 16, 1e-12);
	ck_assert_rel(schedule_ep_paired(SCHED_INTERLEAVED, 4, 2, 2), 0, 0);
	ck_assert_rel(schedule_ep_paired(SCHED_GPIPE, 4, 1, 8), 0, 0);
	ck_assert_rel(schedule_ep_paired(SCHED_DUALPIPE, 4, 1, 8), 0, 0);
}
END_TEST

/* The table's rules, schedule by schedule, against the lists the planner,
 * the trainers' checks and the cost model held before the table: names
 * both ways; virtual stages (interleaved, interleaved-zb, zb-v, dualpipev;
 * in a V zb-v and dualpipev, vp exactly 2); zero bubble (B/W split: zb-h1,
 * interleaved-zb, zb-v, zb-h2, dualpipev, dualpipe); forward-backward
 * pairs (dualpipe, dualpipev); two copies (dualpipe); and schedule_allows
 * as the search's enumeration reads it: vp with the schedule, m >= pp with
 * virtual stages, zb-h1 or zb-h2, m >= 2 pp and pp > 1 for dualpipe(v),
 * an even pp and m for dualpipe, pp > 1 with virtual stages. */
START_TEST(test_rules)
{
	static const char *const names[SCHED_COUNT] = {
		"1f1b", "interleaved", "zb-h1", "gpipe", "interleaved-zb", "zb-v", "zb-h2",
		"dualpipev", "dualpipe"
	};

	for (int i = 0; i < SCHED_COUNT; i++) {
		enum schedule sc = (enum schedule)i;
		bool virt = sc == SCHED_INTERLEAVED || sc == SCHED_INTERLEAVED_ZB || sc == SCHED_ZB_V ||
			    sc == SCHED_DUALPIPE_V;
		bool v = sc == SCHED_ZB_V || sc == SCHED_DUALPIPE_V;
		bool fb = sc == SCHED_DUALPIPE || sc == SCHED_DUALPIPE_V;
		bool zb = sc == SCHED_ZB_H1 || sc == SCHED_INTERLEAVED_ZB || sc == SCHED_ZB_V ||
			  sc == SCHED_ZB_H2 || fb;

		ck_assert_str_eq(schedule_name(sc), names[i]);
		ck_assert_int_eq(schedule_parse(names[i]), i);
		ck_assert_int_eq(schedule_virtual(sc), virt);
		ck_assert_int_eq(schedule_v(sc), v);
		ck_assert_int_eq(schedule_zero_bubble(sc), zb);
		ck_assert_int_eq(schedule_fb_overlap(sc), fb);
		ck_assert_int_eq(schedule_bidirectional(sc), sc == SCHED_DUALPIPE);
		ck_assert_int_eq(schedule_min_micro_batches(sc, 4),
				 fb ? 8 : sc == SCHED_1F1B || sc == SCHED_GPIPE ? 1
										: 4);
		for (int pp = 1; pp <= 8; pp++)
			for (int vp = 1; vp <= 4; vp++)
				for (int m = 1; m <= 20; m++) {
					bool no = virt != (vp > 1) || (v && vp != 2) ||
						  ((vp > 1 || sc == SCHED_ZB_H1 || sc == SCHED_ZB_H2) &&
						   m < pp) ||
						  (fb && (pp == 1 || m < 2 * pp ||
							  (sc == SCHED_DUALPIPE && (pp % 2 || m % 2)))) ||
						  (vp > 1 && pp == 1);

					ck_assert_msg(schedule_allows(sc, pp, vp, m) == !no,
						      "%s pp %d vp %d m %d", names[i], pp, vp, m);
					ck_assert_int_eq(schedule_vp_ok(sc, vp),
							 virt == (vp > 1) && !(v && vp != 2));
				}
	}
	ck_assert_int_eq(schedule_parse("zb"), -1);
	ck_assert_int_eq(schedule_parse(""), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("schedule");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_1f1b_balanced);
	tcase_add_test(tc, test_ep_paired);
	tcase_add_test(tc, test_1f1b_gpipe_unbalanced);
	tcase_add_test(tc, test_interleaved);
	tcase_add_test(tc, test_zb_h1);
	tcase_add_test(tc, test_inflight);
	tcase_add_test(tc, test_inflight_interleaved_depth);
	tcase_add_test(tc, test_interleaved_zb);
	tcase_add_test(tc, test_zb_v);
	tcase_add_test(tc, test_zb_h2);
	tcase_add_test(tc, test_dualpipe);
	tcase_add_test(tc, test_rules);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
