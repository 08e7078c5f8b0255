/* schedule.c: the pipeline schedules' table (one row each, schedule.h) and
 * their closed forms: iteration time weights and activation memory in
 * flight (COSTMODEL.md "Pipeline schedules"). */
#include "schedule.h"

#include <string.h>

/* The weights follow from stages, copies and bubble (schedule_weights'
 * comment), the activations from hold (schedule_inflight's), the orders
 * are simulate.c's; min_m: Megatron-LM's interleaving needs m >= pp, Qi et
 * al. 2024's zero-bubble schedules assume it, the DualPipe repository's
 * need m >= 2 pp (num_chunks >= num_ranks * 2). DualPipe's B/W split: its
 * bubble (PP/2 - 1)(F&B + B - 3W) has W passes of their own. */
const struct schedule_row schedule_rows[SCHED_COUNT] = {
	[SCHED_1F1B] = { .name = "1f1b", .stages = SCHED_STAGES_ONE, .min_m = 0, .copies = 1, .bubble = SCHED_BUBBLE_STAGE, .hold = SCHED_HOLD_1F1B, .order = SCHED_ORDER_1F1B },
	[SCHED_INTERLEAVED] = { .name = "interleaved", .stages = SCHED_STAGES_LOOPED, .min_m = 1, .copies = 1, .bubble = SCHED_BUBBLE_STAGE, .hold = SCHED_HOLD_LOOPED, .order = SCHED_ORDER_LOOPED },
	[SCHED_ZB_H1] = { .name = "zb-h1", .stages = SCHED_STAGES_ONE, .min_m = 1, .copies = 1, .bubble = SCHED_BUBBLE_FR, .hold = SCHED_HOLD_1F1B, .order = SCHED_ORDER_1F1B },
	[SCHED_GPIPE] = { .name = "gpipe", .stages = SCHED_STAGES_ONE, .min_m = 0, .copies = 1, .bubble = SCHED_BUBBLE_STAGE, .hold = SCHED_HOLD_ALL, .order = SCHED_ORDER_GPIPE },
	[SCHED_INTERLEAVED_ZB] = { .name = "interleaved-zb", .stages = SCHED_STAGES_LOOPED, .min_m = 1, .copies = 1, .bubble = SCHED_BUBBLE_FR, .hold = SCHED_HOLD_LOOPED, .order = SCHED_ORDER_LOOPED },
	[SCHED_ZB_V] = { .name = "zb-v", .stages = SCHED_STAGES_V, .min_m = 1, .copies = 1, .bubble = SCHED_BUBBLE_FR, .hold = SCHED_HOLD_V, .order = SCHED_ORDER_V },
	[SCHED_ZB_H2] = { .name = "zb-h2", .stages = SCHED_STAGES_ONE, .min_m = 1, .copies = 1, .bubble = SCHED_BUBBLE_F, .hold = SCHED_HOLD_H2, .order = SCHED_ORDER_H2 },
	[SCHED_DUALPIPE_V] = { .name = "dualpipev", .stages = SCHED_STAGES_V, .min_m = 2, .copies = 1, .bubble = SCHED_BUBBLE_FR, .hold = SCHED_HOLD_V1, .fb_overlap = true, .order = SCHED_ORDER_V },
	[SCHED_DUALPIPE] = { .name = "dualpipe", .stages = SCHED_STAGES_ONE, .min_m = 2, .copies = 2, .bubble = SCHED_BUBBLE_FR, .hold = SCHED_HOLD_COPIES, .fb_overlap = true, .order = SCHED_ORDER_NONE },
};

const char *schedule_name(enum schedule sc)
{
	return schedule_rows[sc].name;
}

int schedule_parse(const char *name)
{
	for (int i = 0; i < SCHED_COUNT; i++)
		if (strcmp(schedule_rows[i].name, name) == 0)
			return i;
	return -1;
}

/* T_pipe = a * max_k c_k + b * sum_k c_k, c_k = forward + backward of one
 * micro-batch on virtual stage k. Every schedule's weights have one form,
 * a = m n - x, b = x / (n copies), with n the chunks per rank (v looped, 2
 * in a V, else 1), copies its row's and x its bubble's share of a chunk (1,
 * or rho with zero bubble):
 * - GPipe (Huang et al. 2019) and 1F1B (PipeDream-Flush; Narayanan et al.
 *   2021 Sec. 2.2.1): a = m - 1, b = 1: the first micro-batch crosses every
 *   stage (sum c_k), the other m-1 follow at the pace of the slowest; the
 *   balanced case is (m + p - 1) c, bubble (p-1)/m.
 * - Interleaved 1F1B (Narayanan et al. 2021 Sec. 2.2.2), v chunks per rank
 *   of c/v each: (m + (p-1)/v) * v * c_chunk = (m*v - 1 + p) c_chunk, i.e.
 *   a = m*v - 1, b = 1/v (sum over the p*v chunks is p*v*c_chunk). For
 *   unbalanced chunks this is an upper estimate of Megatron's schedule.
 * - ZB-H1 (Qi et al. 2024, Sec. 3.1): the backward split into B (input
 *   gradients) and W (weight gradients), W filling the cool-down bubble:
 *   balanced T = m c + (p-1)(t_F + t_B - t_W). With t_B = t_W (each half the
 *   backward; recomputation belongs to B) t_F + t_B - t_W = rho c, rho the
 *   forward (+ recompute) share of c, so a = m - rho, b = rho:
 *   (m - rho) c + rho p c = m c + (p-1) rho c.
 * - Interleaved zero bubble (torch.distributed.pipelining's
 *   ScheduleInterleavedZeroBubble: ZB-H1's W passes in interleaved 1F1B):
 *   ZB-H1's bubble over chunks of c/v, m v c_chunk + (p-1) rho c_chunk:
 *   a = m v - rho, b = rho / v (rho = 1 gives interleaved 1F1B, v = 1
 *   ZB-H1). Derived here, not from a paper's table.
 * - ZB-V (Qi et al. 2024 Sec. 5), two chunks per rank in a V. The paper's
 *   bubble (p-1)(t_F + t_B - 2 t_W) of a chunk, 0 when F = B = W
 *   (COSTMODEL.md's table), lets the next iteration's forwards fill the
 *   start (its post-validation skips the optimizer's synchronisation). With
 *   a flush every iteration, as torch.distributed.pipelining runs it, rank
 *   p - 1 starts only after p - 1 chunk forwards and then has the same work
 *   as every rank, so the bubble is at least (p-1) t_F: (p-1) max(t_F, t_F
 *   + t_B - 2 t_W) = (p-1) t_F = (p-1) rho c_chunk, as t_B = t_W above
 *   (--timeline's simulation of the order ends there for F = B = W).
 *   Balanced T = 2 m c_chunk + (p-1) rho c_chunk over the 2p chunks:
 *   a = 2m - rho, b = rho / 2: interleaved zero bubble's time at v = 2, with
 *   less memory on rank 0 and no p2p at the V's turn.
 * - ZB-H2 (Qi et al. 2024 Sec. 3.1, Fig. 3 and Table 1: bubble (p-1)(t_F +
 *   t_B - 2 t_W), peak memory (2p-1) M_B): more warm-up forwards and the
 *   W passes moved to the tail turn ZB-H1's trapezoid into a
 *   parallelogram. The paper's zero bubble at t_F = t_B = t_W needs its
 *   post-validation (no optimizer synchronisation between iterations);
 *   with a flush the last rank still waits (p-1) t_F for its first input,
 *   so the bubble is (p-1) max(t_F, t_F + t_B - 2 t_W), the ZB-V bound
 *   above, = rho c with rho = cost.h's zb_h2_rho (the forward alone, the
 *   recomputation before B not counted while it is at most t_W): a = m -
 *   rho, b = rho as ZB-H1. Without recomputation this is ZB-H1's time
 *   (t_B = t_W); with it ZB-H2 saves (p-1) t_R. Needs m >= p
 *   (each_schedule; --timeline's order ends at this bound for m >= p,
 *   F = B = W).
 * - DualPipeV (deepseek-ai/DualPipe, "DualPipeV": DualPipe cut in half,
 *   two chunks per rank in a V as ZB-V; its table: bubble (PP/2 - 1)(F&B +
 *   B - 3W) over PP = 2p chunks, i.e. (p-1)(F&B + B - 3W), F&B the
 *   overlapped forward and backward of two micro-batches). Compute runs
 *   one kernel at a time, so F&B = t_F + t_B in compute; what the overlap
 *   saves is communication, hidden in cost.c (the EP all-to-all) before
 *   rho is taken. With t_B = t_W: F&B + B - 3W = t_F - t_W < t_F, and with
 *   a flush the last rank's first input comes after (p-1) chunk forwards
 *   (the ZB-V bound above), so (p-1) t_F = (p-1) rho c_chunk: ZB-V's
 *   weights a = 2m - rho, b = rho / 2. Needs m >= 2p (dualpipev.py:
 *   num_chunks >= num_ranks * 2).
 * - DualPipe (DeepSeek-V3 technical report Sec. 3.2.1, Table 2: bubble
 *   (PP/2 - 1)(F&B + B - 3W), parameters 2x, activations PP + 1): two
 *   copies of the model, one fed from each end, m / 2 micro-batches each;
 *   rank r holds stage r of one and stage p - 1 - r of the other, c a
 *   stage's time. Both end ranks start at once; the middle ranks wait
 *   (p/2 - 1) forwards: balanced T = m c + (p/2 - 1) max(t_F, F&B + B -
 *   3W) = m c + (p/2 - 1) rho c, a = m - rho, b = rho / 2 (a c + b p c).
 *   For unbalanced stages an upper estimate (rank r's pace is the mean of
 *   c_r and c_{p-1-r}, at most max c). Needs p even, m even and m >= 2p
 *   (dualpipe.py). */
void schedule_weights(enum schedule sc, int m, int v, double rho, double *a,
		      double *b)
{
	const struct schedule_row *row = &schedule_rows[sc];
	int n;
	double x;

	if (rho < 0)
		rho = 0;
	if (rho > 1)
		rho = 1;
	if (v < 1)
		v = 1;
	n = row->stages == SCHED_STAGES_LOOPED ? v : row->stages == SCHED_STAGES_V ? 2
										   : 1;
	x = row->bubble == SCHED_BUBBLE_STAGE ? 1 : rho;
	*a = (double)m * n - x;
	*b = x / (n * row->copies);
}

/* The same schedules over the ranks' totals C_r (the sum of a rank's chunks
 * per micro-batch), T = a max_r C_r + b sum_r C_r, balanced equal to
 * schedule_weights': a = m - x/v, b = x/v with x the bubble's share of a
 * chunk (1 interleaved, rho the zero-bubble ones). */
void schedule_rank_weights(enum schedule sc, int m, int v, double rho, double *a,
			   double *b)
{
	double ca, cb;

	if (v < 1)
		v = 1;
	schedule_weights(sc, m, v, rho, &ca, &cb);
	if (!schedule_virtual(sc)) {
		*a = ca;
		*b = cb;
		return;
	}
	/* balanced: ca c + cb p v c = (m + cb (p - 1)) v c: the bubble share
	 * x / v of C = v c is cb, so a = m - cb, b = cb */
	*a = m - cb;
	*b = cb;
}

/* Chunk micro-batches held by chunk j (0-based; virtual stage j pp + r) of
 * pipeline rank r under Megatron-Core's interleaved 1F1B, pp ranks, v
 * chunks each, m micro-batches (megatron/core/pipeline_parallel/
 * schedules.py):
 * - get_pp_rank_microbatches: rank r runs W = (pp - r - 1) x 2 + (v - 1)
 *   x g warm-up forwards, g = microbatch_group_size_per_vp_stage (None:
 *   pp, the default, taken here; no strategy sets another), all m v of
 *   them when W >= m v; each steady-state step runs one forward before
 *   one backward, so the rank holds N = min(W + 1, m v) chunk micro-batches
 *   at its peak, and keeps that total through the steady state;
 * - get_schedule_table: the k-th forward runs micro-batches in groups of g,
 *   each group on chunk 0, then chunk 1, ..., chunk v - 1 (forward k of
 *   the first floor(m / g) groups is on chunk (k / g) % v; a last group of
 *   the rem = m mod g left runs rem per chunk); the k-th backward runs the
 *   table's k-th entry on chunk v - 1 - its chunk.
 * Held by chunk j: the forwards among the first N on chunk j, counted at
 * the moment the rank first holds N (its first steady-state forward done,
 * no backward yet). The steady state then moves the total between chunks
 * (its backwards free the last chunk first): with chunks of even layers
 * all moments are the rank's peak; the last rank's last chunk, whose
 * forward and backward fall in the same step, holds one throughout, as
 * 1F1B's last stage. */
static double looped_held(int pp, int v, int m, int r, int j)
{
	int g = pp, full = m / g, rem = m - full * g;
	long w = 2L * (pp - r - 1) + (long)(v - 1) * g, n, reg, t, held;

	n = w + 1 < (long)m * v ? w + 1 : (long)m * v;
	reg = n < (long)full * g * v ? n : (long)full * g * v;
	t = reg % ((long)g * v) - (long)j * g;
	held = reg / ((long)g * v) * g + (t < 0 ? 0 : t > g ? g : t);
	if (n > reg) {
		t = n - reg - (long)j * rem;
		held += t < 0 ? 0 : t > rem ? rem : t;
	}
	return (double)held;
}

/* Activations in flight (Narayanan et al. 2021 Sec. 2.2; COSTMODEL.md) on
 * virtual stage k (pipeline rank r = k % pp):
 * - GPipe: all m micro-batches before the first backward;
 * - 1F1B and ZB-H1 (Qi et al. 2024: ZB-H1 keeps 1F1B's peak memory): rank r
 *   runs pp - r - 1 warm-up forwards plus one in steady state:
 *   min(pp - r, m);
 * - interleaved (and interleaved zero bubble, which keeps its warm-up):
 *   looped_held above, Megatron's warm-up per rank and its order of
 *   chunks; the rank's chunks together hold min(m v, 2(pp-r-1) + (v-1)pp
 *   + 1) chunk micro-batches, for rank 0 pp + (pp-1)/v micro-batches of
 *   the rank's layers (COSTMODEL.md's p (1 + (p-1)/(p v))), but not
 *   evenly: on rank 0 chunk 0 holds 2 pp - 1, on the last rank the last
 *   chunk (the head's) one.
 * - ZB-V (Qi et al. 2024 Sec. 5: 1F1B's peak activation memory, p stage
 *   micro-batches, on every rank): 2 pp chunk micro-batches per rank, split
 *   as 1F1B over the V's 2 pp stages would: 2 (pp - r) - 1 on the first
 *   leg (stage r), 2 r + 1 on the second (stage 2 pp - 1 - r); each at
 *   most m.
 * - ZB-H2 (Qi et al. 2024 Sec. 3.1, Table 1: peak memory (2p-1) M_B):
 *   rank 0 runs 2 pp - 1 forwards before micro-batch 0's B comes back (pp
 *   forwards down and pp - 1 backwards up, at t_F = t_B) and holds each
 *   micro-batch's activations until its W. Every rank is given that peak,
 *   min(2 pp - 1, m): the later ranks hold W passes back for the
 *   parallelogram's tail, (pp - 1) t_B / t_W + 1 of them on the last rank
 *   for rank 0's last B to arrive in time; with fewer (1F1B's pp - r) the
 *   iteration ends later than the closed form whenever t_B > t_W
 *   (--timeline's order, which reaches it with this cap for m >= pp; the
 *   paper states rank 0's peak only).
 * - DualPipeV (DualPipe repository's table: PP + 1 chunk micro-batches
 *   per device, PP = 2 pp chunks): ZB-V's split with the one more on the
 *   first leg, where the warm-up's forwards pile up: min(2 (pp - r), m)
 *   on stage r, min(2 r + 1, m) on stage 2 pp - 1 - r.
 * - DualPipe (DeepSeek-V3 Table 2: PP + 1 stage micro-batches per
 *   device): (pp + 1) / 2 on each of the rank's two stages (this one and
 *   its mirror in the other copy, cost.c), at most m / 2 each. */
double schedule_inflight(enum schedule sc, int pp, int v, int m, int k)
{
	int r = pp > 0 ? k % pp : 0;
	double n;

	switch (schedule_rows[sc].hold) {
	case SCHED_HOLD_ALL:
		return m;
	case SCHED_HOLD_V:
		n = k < pp ? 2.0 * (pp - r) - 1 : 2.0 * (2 * pp - 1 - k) + 1;
		return n < m ? n : m;
	case SCHED_HOLD_H2:
		return 2 * pp - 1 < m ? 2 * pp - 1 : m;
	case SCHED_HOLD_V1:
		n = k < pp ? 2.0 * (pp - r) : 2.0 * (2 * pp - 1 - k) + 1;
		return n < m ? n : m;
	case SCHED_HOLD_COPIES:
		return (pp + 1 < m ? pp + 1 : m) / 2.0;
	case SCHED_HOLD_LOOPED:
		return pp > 0 ? looped_held(pp, v < 1 ? 1 : v, m, r, k / pp) : m;
	case SCHED_HOLD_1F1B:
	default:
		return pp - r < m ? pp - r : m;
	}
}

double schedule_time(double a, double b, const double *c, int n)
{
	double mx = 0, sum = 0;

	for (int k = 0; k < n; k++) {
		if (c[k] > mx)
			mx = c[k];
		sum += c[k];
	}
	return a * mx + b * sum;
}

/* Of the forward (and backward) passes a rank runs per iteration, the share
 * that DualPipe and DualPipeV run paired with a backward (forward) of
 * another micro-batch (DeepSeek-V3 Sec. 3.2.1, Fig. 4-5), each pair hiding
 * the other's communication: the forwards ahead of the rank's first
 * backward (the micro-batches in flight, schedule_inflight: 2 pp + 1
 * chunk passes of DualPipeV's 2 m, pp + 1 stage passes of DualPipe's m)
 * and as many backwards after its last forward run alone. An estimate:
 * max(0, 1 - held / passes); 0 for the other schedules. */
double schedule_ep_paired(enum schedule sc, int pp, int v, int m)
{
	double held, passes;

	if (sc != SCHED_1F1B && sc != SCHED_INTERLEAVED)
		return 0;
	if (v < 1 || sc == SCHED_1F1B)
		v = 1;
	held = sc == SCHED_1F1B ? (pp < m ? pp : m) : 2.0 * (pp - 1) + (double)(v - 1) * pp + 1;
	passes = (double)m * v;
	return passes > held ? 1 - held / passes : 0;
}

double schedule_fb_paired(enum schedule sc, int pp, int m)
{
	double held, passes;

	if (!schedule_fb_overlap(sc))
		return 0;
	if (schedule_bidirectional(sc)) {
		held = pp + 1.0;
		passes = m;
	} else {
		held = 2.0 * pp + 1;
		passes = 2.0 * m;
	}
	return passes > held ? 1 - held / passes : 0;
}
