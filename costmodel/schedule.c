/* schedule.c: pipeline schedules in closed form: iteration time weights and
 * activation memory in flight (COSTMODEL.md "Pipeline schedules"). */
#include "schedule.h"

/* T_pipe = a * max_k c_k + b * sum_k c_k, c_k = forward + backward of one
 * micro-batch on virtual stage k:
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
 *   (m - rho) c + rho p c = m c + (p-1) rho c. */
void schedule_weights(enum schedule sc, int m, int v, double rho, double *a,
		      double *b)
{
	if (rho < 0)
		rho = 0;
	if (rho > 1)
		rho = 1;
	if (v < 1)
		v = 1;
	switch (sc) {
	case SCHED_INTERLEAVED:
		*a = (double)m * v - 1;
		*b = 1.0 / v;
		return;
	case SCHED_ZB_H1:
		*a = m - rho;
		*b = rho;
		return;
	case SCHED_1F1B:
	case SCHED_GPIPE:
	default:
		*a = m - 1;
		*b = 1;
		return;
	}
}

/* Activations in flight (Narayanan et al. 2021 Sec. 2.2; COSTMODEL.md):
 * - GPipe: all m micro-batches before the first backward;
 * - 1F1B and ZB-H1 (Qi et al. 2024: ZB-H1 keeps 1F1B's peak memory): rank r
 *   runs pp - r - 1 warm-up forwards plus one in steady state:
 *   min(pp - r, m);
 * - interleaved: Megatron's warm-up count (pp - r - 1)*2 + (v-1)*pp plus
 *   one in steady state, at most m*v, in chunk activations of 1/v of the
 *   rank's layers each: per chunk min(m*v, 2(pp-r-1) + (v-1)pp + 1) / v.
 *   For rank 0 this is pp + (pp-1)/v micro-batches, COSTMODEL.md's
 *   p (1 + (p-1)/(p v)). */
double schedule_inflight(enum schedule sc, int pp, int v, int m, int rank)
{
	double n;

	switch (sc) {
	case SCHED_GPIPE:
		return m;
	case SCHED_INTERLEAVED:
		if (v < 1)
			v = 1;
		n = 2.0 * (pp - rank - 1) + (double)(v - 1) * pp + 1;
		if (n > (double)m * v)
			n = (double)m * v;
		return n / v;
	case SCHED_1F1B:
	case SCHED_ZB_H1:
	default:
		return pp - rank < m ? pp - rank : m;
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
