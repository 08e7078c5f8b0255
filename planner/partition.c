/* partition.c: exact layer-to-stage partition under per-stage memory caps,
 * minimising a * max_k c_k + b * sum_k c_k by a bottleneck-bounded DP. */
#include "partition.h"

#include <math.h>
#include <stdlib.h>

#include "cost.h"
#include "util.h"

/* Scratch for one call, carved out of a single allocation. */
struct part_ws {
	int n, k;			/* layers, stages */
	const struct pipeline_frame *f;
	const double *pre;		/* [g * (n + 1) + j]: time of layers [0, j) on group g */
	const unsigned short *jmax;	/* [s * (n + 1) + i]: last end of stage s from i */
	double *prev, *cur;		/* [n + 1] DP rows */
	unsigned short *par;		/* [s * (n + 1) + j]: start of stage s ending at j */
};

/* Cost of stage s over layers [i, j). Nondecreasing in j because layer times
 * are >= 0 and rounding is monotone. */
static inline double seg_cost(const struct part_ws *w, int s, int i, int j)
{
	const double *p = w->pre + (size_t)w->f->group[s] * (size_t)(w->n + 1);

	return p[j] - p[i] + w->f->send[s];
}

/* Smallest feasible bottleneck (min over partitions of max_k c_k), or
 * INFINITY if no partition fits. O(K * (n - K + 1)^2). */
static double minmax_dp(struct part_ws *w)
{
	int n = w->n, K = w->k, s, i, j;
	double *prev = w->prev, *cur = w->cur, *t;

	for (j = 0; j <= n; j++)
		prev[j] = INFINITY;
	prev[0] = 0;
	for (s = 0; s < K; s++) {
		const unsigned short *jm = w->jmax + (size_t)s * (size_t)(n + 1);
		int last = s == K - 1;

		for (j = 0; j <= n; j++)
			cur[j] = INFINITY;
		for (i = s; i <= n - (K - s); i++) {
			if (prev[i] == INFINITY)
				continue;
			if (last) {
				if (jm[i] == n) {
					double c = fmax(prev[i], seg_cost(w, s, i, n));
					if (c < cur[n])
						cur[n] = c;
				}
				continue;
			}
			for (j = i + 1; j <= jm[i]; j++) {
				double c = fmax(prev[i], seg_cost(w, s, i, j));
				if (c < cur[j])
					cur[j] = c;
			}
		}
		t = prev, prev = cur, cur = t;
	}
	return prev[n];
}

/* Least sum_k c_k over the fitting partitions with every c_k <= u (u may be
 * INFINITY), with parents in w->par; INFINITY if none. *next gets the
 * smallest stage cost > u met from a reachable state: no partition changes
 * feasibility for bounds in [u, *next). O(K * (n - K + 1)^2) at most; the
 * inner loop stops at the first stage cost above u. */
static double sum_dp(struct part_ws *w, double u, double *next)
{
	int n = w->n, K = w->k, s, i, j;
	double *prev = w->prev, *cur = w->cur, *t, nx = INFINITY;

	for (j = 0; j <= n; j++)
		prev[j] = INFINITY;
	prev[0] = 0;
	for (s = 0; s < K; s++) {
		const unsigned short *jm = w->jmax + (size_t)s * (size_t)(n + 1);
		unsigned short *par = w->par + (size_t)s * (size_t)(n + 1);
		int last = s == K - 1;

		for (j = 0; j <= n; j++)
			cur[j] = INFINITY;
		for (i = s; i <= n - (K - s); i++) {
			double d = prev[i];

			if (d == INFINITY)
				continue;
			if (last) {
				if (jm[i] == n) {
					double c = seg_cost(w, s, i, n);
					if (c > u) {
						if (c < nx)
							nx = c;
					} else if (d + c < cur[n]) {
						cur[n] = d + c;
						par[n] = (unsigned short)i;
					}
				}
				continue;
			}
			for (j = i + 1; j <= jm[i]; j++) {
				double c = seg_cost(w, s, i, j);
				if (c > u) {
					if (c < nx)
						nx = c;
					break;
				}
				if (d + c < cur[j]) {
					cur[j] = d + c;
					par[j] = (unsigned short)i;
				}
			}
		}
		t = prev, prev = cur, cur = t;
	}
	*next = nx;
	return prev[n];
}

/* Fills the memory limits: jmax[s][i] = the largest j such that layers
 * [i, j) fit stage s and leave one layer for each later stage (i when
 * none fits). The memory of a segment grows with its length (bytes >= 0),
 * so the scan stops at the first overflow. Sums run layer by layer in order. */
static void fill_jmax(unsigned short *jmax, const struct layer_costs *lc,
		      const struct pipeline_frame *f)
{
	int n = lc->n_layer, K = f->n_stages, s, i, j;

	for (s = 0; s < K; s++) {
		unsigned short *jm = jmax + (size_t)s * (size_t)(n + 1);
		int lim = s == K - 1 ? n : n - (K - 1 - s);
		double inf = f->inflight[s], cap = f->cap[s];

		for (i = s; i <= n - (K - s); i++) {
			double st = 0, ac = 0, ex = 0;

			for (j = i; j < lim; j++) {
				st += lc->state_bytes[j];
				ac += lc->act_bytes[j];
				ex += lc->extra_bytes[j];
				if (st + inf * ac + ex > cap)
					break;
			}
			jm[i] = (unsigned short)j;
		}
	}
}

/* Rebuilds first[] from the parents of the last sum_dp; returns the
 * objective of that partition. */
static double rebuild(const struct part_ws *w, unsigned short *first)
{
	int n = w->n, K = w->k, s, j = n;
	double mx = 0, sum = 0;

	first[K] = (unsigned short)n;
	for (s = K - 1; s >= 0; s--) {
		int i = w->par[(size_t)s * (size_t)(n + 1) + (size_t)j];
		double c = seg_cost(w, s, i, j);

		mx = fmax(mx, c);
		sum += c;
		first[s] = (unsigned short)i;
		j = i;
	}
	return w->f->a * mx + w->f->b * sum;
}

/* Exact search, after AMP's pipeline-partition DP (Li et al. 2022) with the
 * bottleneck made explicit: U0 from a min-max DP, then for increasing
 * candidate bottlenecks U (distinct stage costs, each reported by the DP at
 * the previous bound) the least sum S(U) with all c_k <= U; the optimum is
 * min_U a * U + b * S(U), and the scan stops once a * U + b * S(inf) cannot
 * beat the best. Each DP pass is O(K * (n - K + 1)^2) time; memory is one
 * allocation of O(K * n + n_group * n). With a >> b (1F1B: a = m - 1,
 * b = 1) a few passes suffice. */
int partition_solve(const struct layer_costs *lc, const struct pipeline_frame *f,
		    unsigned short *first, double *t_pipe)
{
	int n = lc->n_layer, K = f->n_stages, G = lc->n_group, g, s, l, ret = -1;
	size_t n1 = (size_t)n + 1;
	struct part_ws w;
	double *pre, u, nx, sum, s_unc, best = INFINITY;
	unsigned short *jmax, *par, tmp[MAX_STAGES + 1], cand[MAX_STAGES + 1];
	char *mem;

	if (n < 1 || n > 65535 || K < 1 || K > MAX_STAGES || K > n || G < 1 ||
	    !(f->a >= 0) || !(f->b >= 0))
		return -1;
	for (s = 0; s < K; s++)
		if (f->group[s] < 0 || f->group[s] >= G)
			return -1;

	mem = xmalloc(((size_t)G + 2) * n1 * sizeof(double) +
		      2 * (size_t)K * n1 * sizeof(unsigned short));
	pre = (double *)mem;
	w.prev = pre + (size_t)G * n1;
	w.cur = w.prev + n1;
	jmax = (unsigned short *)(w.cur + n1);
	par = jmax + (size_t)K * n1;

	for (g = 0; g < G; g++) {
		double *p = pre + (size_t)g * n1;
		const double *t = lc->time + (size_t)g * (size_t)n;

		p[0] = 0;
		for (l = 0; l < n; l++)
			p[l + 1] = p[l] + t[l];
	}
	fill_jmax(jmax, lc, f);
	w.n = n, w.k = K, w.f = f, w.pre = pre, w.jmax = jmax, w.par = par;

	u = minmax_dp(&w);
	if (u == INFINITY)
		goto out;
	s_unc = sum_dp(&w, INFINITY, &nx);
	while (f->a * u + f->b * s_unc < best) {
		sum = sum_dp(&w, u, &nx);
		/* finite, as u >= U0; the partition's own objective is
		 * <= a * u + b * sum (its bottleneck may be below u) */
		if (sum < INFINITY && f->a * u + f->b * sum < best) {
			double v = rebuild(&w, cand);
			if (v < best) {
				best = v;
				for (s = 0; s <= K; s++)
					tmp[s] = cand[s];
				ret = 0;
			}
		}
		if (nx == INFINITY)
			break;
		u = nx;
	}
	if (ret == 0) {
		for (s = 0; s <= K; s++)
			first[s] = tmp[s];
		*t_pipe = best;
	}
out:
	free(mem);
	return ret;
}
