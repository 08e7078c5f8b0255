/* partition.c: exact layer-to-stage partition, with the placement of
 * pipeline ranks on node groups given or searched, under memory caps (see
 * partition.h). A DP over (layers covered, ranks used per group, group of
 * the last stage) gives, for a bound U on every stage cost, the least value
 * b * sum c_k + tail; a bisection over U finds min a * U + value. */
#include "partition.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "util.h"

_Thread_local double partition_cells;

/* The tables that the forced-placement DPs of one strategy share (see
 * partition.h): built from lc alone, or kept per stage and cap met. */
struct partition_memo {
	const struct layer_costs *lc;
	int n, G, K, masks;
	double *pre;		 /* [G][n + 1] as struct dp's */
	double *sums;		 /* [3][n + 1] fill_jm's memory sums */
	double *rem;		 /* [masks][n + 1] as struct dp's (slot 0:
					   every group), each mask once read */
	unsigned char *have_rem; /* [masks] */
	int n_jm[MAX_STAGES];	 /* jm rows kept for each stage, at most G */
	double cap[MAX_STAGES][MAX_GROUPS], inf[MAX_STAGES][MAX_GROUPS];
	unsigned short *jm;	 /* [K][G][n + 1]: row x of stage k at
					   (k G + x)(n + 1), for cap[k][x] and
					   inf[k][x] */
	int span[MAX_STAGES][MAX_GROUPS]; /* the span of each row (row_span;
					   -1 until one reads it) */
	double least[MAX_GROUPS]; /* least_middle() of each group */
};

/* The DP's scratch and inputs for one call. In forced mode the count index
 * is the stage index k and stage k's group is f->group[k]; in free mode it
 * is the mixed-radix vector of ranks used per group. */
struct dp {
	int n, K, G, ncnt;
	const int *ranks;     /* NULL: forced placement */
	const int *cls, *seq; /* free mode, when set: stage k only on
					   the groups g with cls[g] == seq[k] */
	const struct layer_costs *lc;
	const struct pipeline_frame *f;
	/* forced placement: the tables shared with other calls, or NULL */
	struct partition_memo *memo;
	int radix[MAX_GROUPS];
	int *stage_of;	       /* [ncnt] stages placed = sum of counts */
	int *order;	       /* [ncnt] count indices by stage */
	int *left;	       /* [ncnt] left_mask() of each */
	int *reach;	       /* [rows()] of greedy() */
	int *back;	       /* [ncnt] of fill_back() */
	unsigned *full;	       /* [ncnt] free mode: bit g where group g
					   hosts all its ranks */
	double *neck;	       /* [rows()] of greedy() */
	double *pre;	       /* [G][n + 1] time prefix sums */
	double *sums;	       /* [3][n + 1] fill_jm's memory prefix sums */
	void *arena;	       /* every table above and below, one block */
	unsigned short *jm;    /* [K][G][n + 1] last end that fits
					   ([K][n + 1] forced: jrow()) */
	/* [jrow()] each row of the memory limits: in jm or in memo->jm */
	const unsigned short **jmr;
	/* [jrow()] each row's span (row_span), in spans or in memo->span */
	int **span;
	int *spans;
	double *val;	       /* [rows()][n + 1] least value */
	unsigned short *par_i; /* same shape: start of the last stage */
	unsigned char *par_h;  /* same shape: group of the one before */
	int *lo, *hi;	       /* [rows()]: the ends a row holds (see widen) */
	unsigned short *dq;    /* [n + 1] the sliding window of pass() */
	double *dkey;	       /* [n + 1] its keys */
	double *rem;	       /* [masks][n + 1]: time of layers [i, n)
					   each on its fastest group among the
					   groups of the mask */
	int masks;	       /* 2^G, or 1 (all groups) when G > 6 */
	double floor;	       /* no partition's bottleneck is lower */
	int last_cnt;	       /* count index of the pass's optimum */
	double best;	       /* objective of first[] and group[] */
	double cut;	       /* the search's initial incumbent: only
					   objectives below it are sought
					   (INFINITY: none) */
	unsigned short first[MAX_STAGES + 1];
	int group[MAX_STAGES];
	/* [g]: what a partition whose last stage is on group g adds to its
	 * value: the tied embedding's all-reduce between stage 0's group and
	 * g (pipeline_frame.tied), where the tails count (tail_row); and the
	 * least of them */
	double end[MAX_GROUPS], end_least;
	/* free mode: stage 0 only on groups [first_lo, first_hi), or on any
	 * where first_hi is 0 */
	int first_lo, first_hi;
};

/* The row of the tables (val, par_*, lo, hi, reach, neck) of count index
 * cnt and group g of the last stage: cnt x G + g in free mode; cnt with
 * the placement forced, where each count has the one group of its last
 * stage (rows() of them). */
static size_t srow(const struct dp *d, int cnt, int g)
{
	return d->ranks ? (size_t)cnt * (size_t)d->G + (size_t)g : (size_t)cnt;
}

/* The jm row of stage k on group g: one per stage with the placement
 * forced. */
static size_t jrow(const struct dp *d, int k, int g)
{
	return d->ranks ? (size_t)k * (size_t)d->G + (size_t)g : (size_t)k;
}

static size_t at(const struct dp *d, int cnt, int g, int j)
{
	return srow(d, cnt, g) * (size_t)(d->n + 1) + (size_t)j;
}

/* Whether stage k may run on group g, one of groups_of(k), after the
 * counts of index cnt: always with the placement forced. */
static int allowed(const struct dp *d, int cnt, int k, int g)
{
	if (!d->ranks)
		return 1;
	if (d->seq && d->cls[g] != d->seq[k])
		return 0;
	return !(d->full[cnt] >> g & 1);
}

/* The groups [*lo, *hi) that stage k may run on (k < K), and those of the
 * stage before it (k > 0); with the placement forced, one group each, and
 * stage 0 only on [d->first_lo, d->first_hi) where that is set. */
static void groups_of(const struct dp *d, int k, int *lo, int *hi)
{
	if (!d->ranks) {
		*lo = d->f->group[k];
		*hi = *lo + 1;
	} else if (!k && d->first_hi > 0) {
		*lo = d->first_lo;
		*hi = d->first_hi;
	} else {
		*lo = 0;
		*hi = d->G;
	}
}

static void groups_before(const struct dp *d, int k, int *lo, int *hi)
{
	if (!k) {
		*lo = 0;
		*hi = 1;
	} else {
		groups_of(d, k - 1, lo, hi);
	}
}

/* The rows of the tables (srow): count index x G + group in free mode;
 * with the placement forced, one per count (count k's on the group of
 * stage k - 1, count 0 on group 0). */
static size_t rows(const struct dp *d)
{
	return d->ranks ? (size_t)d->ncnt * d->G : (size_t)d->ncnt;
}

static int next_count(const struct dp *d, int cnt, int g)
{
	return d->ranks ? cnt + d->radix[g] : cnt + 1;
}

/* p2p seconds into stage k on group g from the previous on group h, plus
 * the stage's vocabulary-parallel share (pipeline_frame.vocab_of: the same
 * on every stage of a group, a term of c_k that no layer carries). */
static double send(const struct dp *d, int k, int h, int g)
{
	if (!d->ranks)
		return d->f->send[k] + d->f->vocab[k];
	return (k ? d->f->link[h][g] : 0) + d->f->vocab_of[g];
}

/* Rank 0's tail on group g for each end of stage 0 ([n + 1]), or NULL
 * where the objective has none (tail() is 0). */
static const double *tail_row(const struct dp *d, int g)
{
	const struct layer_costs *lc = d->lc;

	if (!lc->tail0 || d->f->vp != 1)
		return NULL;
	return lc->tail0 + (size_t)g * (size_t)(d->n + 1);
}

static double tail(const struct dp *d, int g, int j)
{
	const double *t = tail_row(d, g);

	return t ? t[j] : 0;
}

/* d->end[] and d->end_least: in free mode, for stage 0 on the groups
 * first[0..n) (a run of tied_runs: their rows are the same; or one group
 * of each run: the least of their rows, a lower bound); with the placement
 * forced, its own and its last stage's groups. 0 where the tails do not
 * count. */
static void set_end(struct dp *d, const int *first, int n)
{
	d->end_least = INFINITY;
	for (int g = 0; g < d->G; g++) {
		d->end[g] = !d->ranks ? d->f->tied[d->f->group[0]][d->f->group[d->K - 1]] : INFINITY;
		for (int i = 0; i < n && d->ranks; i++)
			if (d->f->tied[first[i]][g] < d->end[g])
				d->end[g] = d->f->tied[first[i]][g];
		if (!tail_row(d, 0))
			d->end[g] = 0;
		if (d->end[g] < d->end_least)
			d->end_least = d->end[g];
	}
}

/* The bit mask of the groups that may host the stages after the counts
 * of index cnt (0 when no stage is left, or when d->masks == 1). With the
 * placement forced it uses d->left[cnt + 1]: fill d->left from the end. */
static int left_mask(const struct dp *d, int cnt)
{
	int mask = 0;

	if (d->masks == 1 || cnt == d->ncnt - 1)
		return 0;
	if (!d->ranks)
		return d->left[cnt + 1] | 1 << d->f->group[cnt];
	for (int g = 0; g < d->G; g++)
		if ((cnt / d->radix[g]) % (d->ranks[g] + 1) < d->ranks[g])
			mask |= 1 << g;
	return mask;
}

/* With the placement forced, whether a pass reads rem[mask]: the groups
 * of the stages from some k on (pass(): left_mask of k + 1 and stage k's
 * group). */
static int forced_mask(const struct dp *d, int mask)
{
	for (int k = 0; k < d->K; k++)
		if ((d->left[k + 1] | 1 << d->f->group[k]) == mask)
			return 1;
	return 0;
}

/* jm[k][g][i]: the largest j such that layers [i, j) fit stage k on group g
 * and leave a layer for each later stage (i when none fits). */
static void fill_sums_of(const struct layer_costs *lc, int n, double *ps)
{
	double *pa = ps + n + 1, *pe = pa + n + 1;

	ps[0] = pa[0] = pe[0] = 0;
	for (int l = 0; l < n; l++) {
		ps[l + 1] = ps[l] + lc->state_bytes[l];
		pa[l + 1] = pa[l] + lc->act_bytes[l];
		pe[l + 1] = pe[l] + lc->extra_bytes[l];
	}
}

/* With a memo, the row of stage k for (cap, inf): the one kept, or a new
 * one computed there (*fill set), *span its span's slot; NULL where the
 * stage has G rows already. */
static unsigned short *memo_row(struct partition_memo *mm, int k, double cap, double inf,
				bool *fill, int **span)
{
	int x = 0;

	while (x < mm->n_jm[k] && !(mm->cap[k][x] == cap && mm->inf[k][x] == inf))
		x++;
	*fill = x == mm->n_jm[k];
	if (x == mm->G)
		return NULL;
	if (*fill) {
		mm->cap[k][x] = cap;
		mm->inf[k][x] = inf;
		mm->n_jm[k]++;
	}
	*span = &mm->span[k][x];
	return mm->jm + ((size_t)k * mm->G + (size_t)x) * (size_t)(mm->n + 1);
}

static void fill_jm(struct dp *d)
{
	int n = d->n, K = d->K;
	double *ps = d->memo ? d->memo->sums : d->sums, *pa = ps + n + 1, *pe = pa + n + 1;

	if (!d->memo)
		fill_sums_of(d->lc, n, ps);
	for (int k = 0; k < K; k++) {
		int g0, g1;

		groups_of(d, k, &g0, &g1);
		for (int g = g0; g < g1; g++) {
			unsigned short *jm = d->jm + jrow(d, k, g) * (size_t)(n + 1), *kept;
			int lim = n - (K - 1 - k), *span = &d->spans[jrow(d, k, g)];
			double cap = d->ranks ? d->f->cap_of[g] * d->f->share[k] : d->f->cap[k];
			double inf = d->f->inflight[k];
			bool fill = true;

			if (d->memo && (kept = memo_row(d->memo, k, cap, inf, &fill, &span)))
				jm = kept;
			d->jmr[jrow(d, k, g)] = jm;
			d->span[jrow(d, k, g)] = span;
			if (!fill)
				continue;
			*span = -1;
			for (int i = k, j = k; i <= n - (K - k); i++) {
				if (j < i)
					j = i;
				while (j < lim && ps[j + 1] - ps[i] + inf * (pa[j + 1] - pa[i]) +
								  pe[j + 1] - pe[i] <=
							  cap)
					j++;
				jm[i] = (unsigned short)j;
			}
		}
	}
}

/* The span of stage k's row of the memory limits (placement forced): the
 * most layers it holds from any start, max jm[i] - i; computed once. */
static int row_span(const struct dp *d, int k)
{
	int *span = d->span[k];

	if (*span < 0) {
		*span = 0;
		for (int i = k; i <= d->n - (d->K - k); i++)
			if (d->jmr[k][i] - i > *span)
				*span = d->jmr[k][i] - i;
	}
	return *span;
}

/* The last end of stage k on group g from start i: jm[], or i where no
 * partition starts stage k at i (i < k, or too few layers left). */
static int last_end(const struct dp *d, int k, int g, int i)
{
	if (i < k || i > d->n - (d->K - k))
		return i;
	return d->jmr[jrow(d, k, g)][i];
}

/* The test of a relaxation at bound u: stages may be empty. For each count
 * vector and group of the last stage, in stage order, the farthest end of
 * the layers covered (reach[]) and the largest stage cost on a path to it
 * (neck[]); a stage extends the reach by the most layers that fit its cap
 * and cost <= u (within last_end(), which every partition respects). A
 * fitting partition whose stages cost <= u ends each
 * stage no later than the reach of its counts and group (induction: from a
 * later start, the layers up to that partition's end are a part of its
 * stage, and the same link), so the relaxation covers the layers if any
 * such partition does. Returns 1 and the least neck of a covering path in
 * *m, else 0 and in *nx the least u at which some stage takes one more
 * layer (no bound in [u, *nx) covers them). O(count vectors x G^2 x the
 * stage length): O(n + K) with the placement forced. */
static int greedy(const struct dp *d, double u, double *m, double *nx)
{
	int n = d->n;
	double ml = INFINITY, nxl = INFINITY; /* *m, *nx (locals: no alias) */
	int *reach = d->reach;
	double *neckv = d->neck;

	for (size_t x = 0; x < rows(d); x++)
		reach[x] = -1;
	for (int o = 0; o < d->ncnt; o++) {
		int cnt = d->order[o], k = d->stage_of[cnt], h0, h1, g0 = 0, g1 = 0;

		groups_before(d, k, &h0, &h1);
		if (k < d->K)
			groups_of(d, k, &g0, &g1);
		for (int h = h0; h < h1; h++) {
			size_t row = srow(d, cnt, h);
			int i = k ? reach[row] : 0;
			double neck = k ? neckv[row] : 0;

			if (i < 0)
				continue;
			if (k == d->K) {
				if (i == n && neck < ml)
					ml = neck;
				continue;
			}
			for (int g = g0; g < g1; g++) {
				const double *p = d->pre + (size_t)g * (n + 1);
				double sd = send(d, k, h, g), c;
				size_t next = srow(d, next_count(d, cnt, g), g);
				int j = i, jmax;

				if (!allowed(d, cnt, k, g))
					continue;
				jmax = last_end(d, k, g, i);
				while (j < jmax && p[j + 1] - p[i] + sd <= u)
					j++;
				if (j < jmax && p[j + 1] - p[i] + sd < nxl)
					nxl = p[j + 1] - p[i] + sd;
				c = j > i && p[j] - p[i] + sd > neck ? p[j] - p[i] + sd : neck;
				if (j > reach[next] || (j == reach[next] && c < neckv[next])) {
					reach[next] = j;
					neckv[next] = c;
				}
			}
		}
	}
	*m = ml;
	*nx = nxl;
	return ml < INFINITY;
}

/* The least bottleneck of the relaxation greedy() tests, by bisection on
 * u between lo and hi (whose greedy covers the layers); each probe moves an
 * end to a stage cost, so the result is exact. A lower bound on the
 * bottleneck of every fitting partition. */
static double greedy_floor(const struct dp *d, double lo, double hi)
{
	double m, nx;

	while (lo < hi) {
		double mid = lo + (hi - lo) / 2;

		if (mid >= hi)
			mid = lo;
		if (greedy(d, mid, &m, &nx))
			hi = m;
		else
			lo = nx;
	}
	return hi;
}

/* Extends the range [*lo, *hi] of row v (of d->val) to hold j: the values
 * a pass has not written inside it read INFINITY (no pass initialises a
 * whole row). */
static void widen(double *v, int *lo, int *hi, int j)
{
	if (*hi < *lo) {
		*lo = *hi = j;
		return;
	}
	while (*hi < j)
		v[++*hi] = INFINITY;
	while (*lo > j)
		v[--*lo] = INFINITY;
}

/* The least p2p seconds into stage k on group g. */
static double least_send(const struct dp *d, int k, int g)
{
	double m = INFINITY;

	if (!d->ranks || !k)
		return send(d, k, 0, g);
	for (int h = 0; h < d->G; h++)
		if (d->f->link[h][g] < m)
			m = d->f->link[h][g];
	return m;
}

/* back[cnt] for bound u: the stages after the counts cnt cover layers
 * [i, n) at stage costs <= u only if i >= back[cnt]. greedy()'s
 * relaxation run from the last layer back (stages may be empty, the p2p
 * into a stage at its least); stage k takes the most layers before the
 * start of the stages after it, so back[] is the least start over the
 * groups of stage k. Lowers *nx to the least u at which some stage takes
 * one more layer. O(count vectors x G x the stage length). */
static void fill_back(struct dp *d, double u, double *nx)
{
	int n = d->n;

	for (int o = d->ncnt - 1; o >= 0; o--) {
		int cnt = d->order[o], k = d->stage_of[cnt], least = n, g0 = 0, g1 = 0;

		if (k < d->K)
			groups_of(d, k, &g0, &g1);
		for (int g = g0; g < g1; g++) {
			const double *p = d->pre + (size_t)g * (n + 1);
			double sd = least_send(d, k, g);
			int e, i;

			if (!allowed(d, cnt, k, g))
				continue;
			e = i = d->back[next_count(d, cnt, g)];
			while (i > k && last_end(d, k, g, i - 1) >= e && p[e] - p[i - 1] + sd <= u)
				i--;
			if (i > k && last_end(d, k, g, i - 1) >= e && p[e] - p[i - 1] + sd < *nx)
				*nx = p[e] - p[i - 1] + sd;
			if (i < least)
				least = i;
		}
		d->back[cnt] = least;
	}
}

/* The end of a pass: the least value over the states that place every
 * stage and cover every layer, each with d->end of its last stage's
 * group, into *value (INFINITY if none), d->last_cnt
 * its count index. Returns the group of its last stage, or -1. */
static int pass_end(struct dp *d, double *value)
{
	int n = d->n, last = -1, g0, g1;
	size_t n1 = (size_t)n + 1;

	*value = INFINITY;
	groups_before(d, d->K, &g0, &g1);
	for (int o = d->ncnt - 1; o >= 0 && d->stage_of[d->order[o]] == d->K; o--)
		for (int g = g0; g < g1; g++) {
			size_t row = srow(d, d->order[o], g);

			if (d->hi[row] == n && d->val[row * n1 + n] + d->end[g] < *value) {
				*value = d->val[row * n1 + n] + d->end[g];
				last = g;
				d->last_cnt = d->order[o];
			}
		}
	return last;
}

/* One DP pass at bound u: the least value over fitting partitions whose
 * stages all cost <= u (INFINITY if none), with parents in d->par_*; *nx
 * gets the smallest stage cost > u seen from a reachable state (and the
 * least bound at which a pruned state could complete): no bound in
 * [u, *nx) changes the answer. Returns the group of the last stage, or -1.
 *
 * For counts cnt (stage k), next group g and previous group h, the best
 * start of stage k for each end j is the minimum of val[i] - b p[i] over
 * the starts [lo(j), j) allowed by memory (jm[i] >= j) and the bound (cost
 * <= u), both limits nondecreasing in j: a monotone deque gives it in O(n)
 * (sliding-window minimum), so a pass is O(states x n_group^2 x n). Only
 * prunes that hold for every start apply: a * floor + value + b * mono[j]
 * + end_least against the incumbent, and ends before back[] (fill_back)
 * at u. */
static int pass(struct dp *d, double u, double *value, double *nx)
{
	int n = d->n, K = d->K, G = d->G, g0, g1;
	size_t n1 = (size_t)n + 1;
	double a = d->f->a, b = d->f->b;
	unsigned short *dq = d->dq;
	double *dkey = d->dkey;
	/* read in the inner loop: kept in locals, since its stores through
	 * val[] might alias d */
	const double af = a * d->floor + d->end_least, best = d->best;
	unsigned short *par_i = d->par_i;
	unsigned char *par_h = d->par_h;
	double nxl = INFINITY;

	partition_cells += (double)rows(d) * G * (double)n1;
	for (size_t x = 0; x < rows(d); x++) {
		d->lo[x] = n + 1;
		d->hi[x] = -1;
	}
	fill_back(d, u, &nxl);
	for (int o = 0; o < d->ncnt; o++) {
		int cnt = d->order[o], k = d->stage_of[cnt], h0, h1;

		if (k == K)
			break;
		groups_of(d, k, &g0, &g1);
		groups_before(d, k, &h0, &h1);
		for (int g = g0; g < g1; g++) {
			int nc, left, need, rlo, rhi;
			size_t nrow;
			const double *p = d->pre + (size_t)g * n1, *mono, *tl;
			const unsigned short *jm = d->jmr[jrow(d, k, g)];
			double *cur;

			if (!allowed(d, cnt, k, g))
				continue;
			nc = next_count(d, cnt, g);
			nrow = srow(d, nc, g);
			need = d->back[nc];
			cur = d->val + nrow * n1;
			left = d->left[nc];
			mono = d->rem + (size_t)(d->masks == 1 ? 0 : left | 1 << g) * n1;
			/* the range [rlo, rhi] of row nrow (see widen), which only
			 * this (cnt, g) writes, and stage 0's tails: in locals,
			 * since the stores below might alias d */
			rlo = d->lo[nrow];
			rhi = d->hi[nrow];
			tl = k ? NULL : tail_row(d, g);
			for (int h = h0; h < h1; h++) {
				size_t row = srow(d, cnt, h);
				const double *prev = d->val + row * n1;
				double sd = send(d, k, h, g);
				int ilo = k ? d->lo[row] : 0, ihi = k ? d->hi[row] : 0;
				int qh = 0, qt = 0, lm = ilo, lu = ilo, ip = ilo;
				int jhi = k == K - 1 ? n : n - (K - 1 - k);

				/* the ends from need on; starts enter the window
				 * once they can reach the end */
				for (int j = need > ilo + 1 ? need : ilo + 1; j <= jhi && ilo <= ihi; j++) {
					int i;
					double v;

					while (lm < j && jm[lm] < j) /* [lm, j) over the cap */
						lm++;
					while (lu < j && p[j] - p[lu] + sd > u) {
						/* the first end at which the stage from
						 * lu costs more than u: its next bound */
						if (lu <= ihi && (k ? prev[lu] < INFINITY : lu == 0) &&
						    j <= jm[lu] && p[j] - p[lu] + sd < nxl)
							nxl = p[j] - p[lu] + sd;
						lu++;
					}
					if (lm > ihi || lu > ihi)
						break; /* no start is left */
					if (ip < lm)
						ip = lm;
					if (ip < lu)
						ip = lu;
					for (; ip < j && ip <= ihi; ip++) {
						double key = (k ? prev[ip] : 0) - b * p[ip];

						if (k ? prev[ip] == INFINITY : ip != 0)
							continue;
						while (qt > qh && dkey[qt - 1] >= key)
							qt--;
						dkey[qt] = key;
						dq[qt++] = (unsigned short)ip;
					}
					while (qt > qh && (dq[qh] < lm || dq[qh] < lu))
						qh++;
					if (qt == qh)
						continue;
					i = dq[qh];
					/* stage 0 has the one start 0: its tail needs
					 * no window */
					v = (k ? prev[i] : 0) + b * (p[j] - p[i] + sd) +
					    (k ? 0 : tl ? tl[j] : 0);
					if (af + v + b * mono[j] >= best)
						continue;
					if (j < rlo || j > rhi || v < cur[j]) {
						widen(cur, &rlo, &rhi, j);
						cur[j] = v;
						par_i[nrow * n1 + j] = (unsigned short)i;
						par_h[nrow * n1 + j] = (unsigned char)h;
					}
				}
			}
			d->lo[nrow] = rlo;
			d->hi[nrow] = rhi;
		}
	}
	*nx = nxl;
	return pass_end(d, value);
}

/* Evaluates bound u: the least value in *value, the bottleneck of the
 * partition found in *mx, the next candidate in *nx; keeps the partition if
 * it beats d->best. Returns 0, or -1 if nothing fits under u. */
static int eval_bound(struct dp *d, double u, double *value, double *mx, double *nx)
{
	unsigned short first[MAX_STAGES + 1];
	int group[MAX_STAGES], K = d->K, j = d->n, g = pass(d, u, value, nx), cnt = 0;
	double m = 0;

	if (g < 0)
		return -1;
	cnt = d->last_cnt;
	first[K] = (unsigned short)j;
	for (int k = K - 1; k >= 0; k--) {
		int i = d->par_i[at(d, cnt, g, j)], h = d->par_h[at(d, cnt, g, j)];
		double c = d->pre[(size_t)g * (d->n + 1) + j] - d->pre[(size_t)g * (d->n + 1) + i] +
			   send(d, k, h, g);

		if (c > m)
			m = c;
		first[k] = (unsigned short)i;
		group[k] = g;
		cnt = d->ranks ? cnt - d->radix[g] : cnt - 1;
		j = i;
		g = h;
	}
	*mx = m;
	if (d->f->a * m + *value < d->best) {
		d->best = d->f->a * m + *value;
		memcpy(d->first, first, sizeof first);
		memcpy(d->group, group, sizeof group);
	}
	return 0;
}

/* Covers the bounds in [lo_nx, hi_m): value v_lo (INFINITY: nothing fits)
 * just below lo_nx, v_hi (or a lower bound of it) at hi_m. Bisects on the
 * bound and drops a range where the value cannot step (v_lo == v_hi) or
 * where a * lo_nx + v_hi cannot beat the incumbent. */
static void search(struct dp *d, double v_lo, double lo_nx, double v_hi, double hi_m)
{
	double a = d->f->a, mid, v_mid, m_mid, nx_mid;

	while (v_lo > v_hi && lo_nx < hi_m && a * lo_nx + v_hi < d->best) {
		double hi = a > 0 && (d->best - v_hi) / a < hi_m ? (d->best - v_hi) / a : hi_m;

		/* bounds from hi on cannot beat the incumbent */
		mid = lo_nx + (hi - lo_nx) / 2;
		if (mid >= hi)
			mid = lo_nx;
		if (eval_bound(d, mid, &v_mid, &m_mid, &nx_mid) == 0 && m_mid > lo_nx)
			search(d, v_lo, lo_nx, v_mid, m_mid);
		v_lo = v_mid, lo_nx = nx_mid;
	}
}

/* A lower bound on the value (b * sum c_k + tail) of any partition: every
 * layer on its fastest group, the forced p2p and vocabulary shares, the
 * least tail and end. */
static double value_floor(const struct dp *d)
{
	double sends = 0, least = INFINITY;

	for (int k = 0; k < d->K && !d->ranks; k++)
		sends += d->f->send[k] + d->f->vocab[k];
	for (int g = 0; g < d->G; g++)
		for (int j = 1; j <= d->n && (d->ranks || g == d->f->group[0]); j++)
			if (tail(d, g, j) < least)
				least = tail(d, g, j);
	return d->f->b * (d->rem[0] + sends) + least + d->end_least;
}

/* The dearest p2p (with the vocabulary share) into any stage: O(K) with
 * the placement forced, O(G^2) free. */
static double max_send(const struct dp *d)
{
	double m = 0;

	for (int k = 0; k < d->K && !d->ranks; k++)
		if (d->f->send[k] + d->f->vocab[k] > m)
			m = d->f->send[k] + d->f->vocab[k];
	for (int h = 0; h < d->G && d->ranks; h++)
		for (int g = 0; g < d->G; g++)
			if ((d->K > 1 ? d->f->link[h][g] : 0) + d->f->vocab_of[g] > m)
				m = (d->K > 1 ? d->f->link[h][g] : 0) + d->f->vocab_of[g];
	return m;
}

/* A necessary condition for any partition to fit: the stages' caps
 * together hold every layer's states, activations for the fewest in-flight
 * micro-batches of any stage, and the transients. */
static int may_fit(const struct dp *d)
{
	const struct layer_costs *lc = d->lc;
	double need = 0, act = 0, room = 0, fewest = INFINITY;

	for (int l = 0; l < d->n; l++) {
		need += lc->state_bytes[l] + lc->extra_bytes[l];
		act += lc->act_bytes[l];
	}
	for (int k = 0; k < d->K; k++)
		if (d->f->inflight[k] < fewest)
			fewest = d->f->inflight[k];
	if (d->ranks)
		for (int g = 0; g < d->G; g++)
			room += d->ranks[g] * d->f->cap_of[g];
	else
		for (int k = 0; k < d->K; k++)
			room += d->f->cap[k];
	return need + fewest * act <= room;
}

/* stage_of[], full[] and order[] (the count vectors by stage, a counting
 * sort) of d's count indices (alloc_tables allocated them). */
static void index_counts(struct dp *d)
{
	int start[MAX_STAGES + 2] = { 0 };

	d->order = d->stage_of + d->ncnt;
	d->left = d->order + d->ncnt;
	d->back = d->left + d->ncnt;
	d->full = (unsigned *)(d->back + d->ncnt);
	for (int c = 0; c < d->ncnt; c++) {
		int k = c;

		d->full[c] = 0;
		if (d->ranks) {
			k = 0;
			for (int g = 0; g < d->G; g++) {
				int used = (c / d->radix[g]) % (d->ranks[g] + 1);

				k += used;
				d->full[c] |= (unsigned)(used == d->ranks[g]) << g;
			}
		}
		d->stage_of[c] = k;
	}
	for (int c = 0; c < d->ncnt; c++)
		start[d->stage_of[c] + 1]++;
	for (int k = 0; k <= d->K; k++)
		start[k + 1] += start[k];
	for (int c = 0; c < d->ncnt; c++)
		d->order[start[d->stage_of[c]]++] = c;
}

/* rem[] of mask (every group where masks is 1) into r[0..n]: the time of
 * layers [i, n) each on its fastest group of the mask. */
static void rem_of(const struct layer_costs *lc, int n, int G, int masks, int mask, double *r)
{
	r[n] = 0;
	for (int l = n - 1; l >= 0; l--) {
		double fastest = INFINITY;

		for (int g = 0; g < G; g++)
			if ((masks == 1 || mask >> g & 1) && lc->time[(size_t)g * n + l] < fastest)
				fastest = lc->time[(size_t)g * n + l];
		r[l] = r[l + 1] + fastest;
	}
}

static void pre_of(const struct layer_costs *lc, int n, int G, double *pre)
{
	for (int g = 0; g < G; g++) {
		double *p = pre + (size_t)g * (n + 1);

		p[0] = 0;
		for (int l = 0; l < n; l++)
			p[l + 1] = p[l] + lc->time[(size_t)g * n + l];
	}
}

/* The time sums: pre[] per group, left[] per count index and rem[] per
 * mask of groups (every stage costs at least its layers on their fastest
 * group among those that may host it; rem[0] holds every group's), from
 * d->memo where it has them. */
static void fill_sums(struct dp *d)
{
	int n = d->n, G = d->G;
	struct partition_memo *mm = d->memo;

	for (int c = d->ncnt - 1; c >= 0; c--)
		d->left[c] = left_mask(d, c);
	if (mm) {
		d->pre = mm->pre;
		d->rem = mm->rem;
		for (int mask = 1; mask < d->masks - 1; mask++)
			if (!mm->have_rem[mask] && forced_mask(d, mask)) {
				rem_of(d->lc, n, G, d->masks, mask, mm->rem + (size_t)mask * (n + 1));
				mm->have_rem[mask] = 1;
			}
		return;
	}
	pre_of(d->lc, n, G, d->pre);
	for (int mask = d->masks == 1 ? 0 : 1; mask < d->masks; mask++) {
		if (!d->ranks && d->masks > 1 && mask < d->masks - 1 && !forced_mask(d, mask))
			continue; /* no pass reads it */
		rem_of(d->lc, n, G, d->masks, mask, d->rem + (size_t)mask * (n + 1));
	}
	if (d->masks > 1) /* rem[i] of every group, as the prunes expect */
		memcpy(d->rem, d->rem + (size_t)(d->masks - 1) * (n + 1), (n + 1) * sizeof *d->rem);
}

/* Every table of d in one block (d->arena; free_tables frees it): the
 * per-count arrays, the sums, the memory limits and the tables of the
 * passes and of greedy(). */
static void alloc_tables(struct dp *d)
{
	size_t n1 = (size_t)d->n + 1, states = rows(d), nc = (size_t)d->ncnt;
	size_t njm = d->ranks ? (size_t)d->K * d->G : (size_t)d->K;
	size_t nd = (size_t)d->G * n1 + 3 * n1 + (size_t)d->masks * n1 + states * n1 + n1 + states;
	size_t ni = nc * 5 + states * 2 + states + njm;
	size_t ns = njm * n1 + states * n1 + n1;
	char *b;

	b = d->arena = xmalloc(njm * (sizeof(*d->jmr) + sizeof(*d->span)) + nd * sizeof(double) +
			       ni * sizeof(int) + ns * sizeof(unsigned short) + states * n1);
	d->jmr = (const unsigned short **)b;
	d->span = (int **)(d->jmr + njm);
	d->pre = (double *)(d->span + njm);
	d->sums = d->pre + (size_t)d->G * n1;
	d->rem = d->sums + 3 * n1;
	d->val = d->rem + (size_t)d->masks * n1;
	d->dkey = d->val + states * n1;
	d->neck = d->dkey + n1;
	d->stage_of = (int *)(d->neck + states);
	d->order = d->stage_of + nc;
	d->left = d->order + nc;
	d->back = d->left + nc;
	d->full = (unsigned *)(d->back + nc);
	d->lo = (int *)(d->full + nc);
	d->hi = d->lo + states;
	d->reach = d->hi + states;
	d->spans = d->reach + states;
	d->jm = (unsigned short *)(d->spans + njm);
	d->par_i = d->jm + njm * n1;
	d->dq = d->par_i + states * n1;
	d->par_h = (unsigned char *)(d->dq + n1);
}

static void free_tables(struct dp *d)
{
	free(d->arena);
}

/* A bound no stage costs more than: every layer on the slowest group plus
 * the dearest link. */
static double stage_top(const struct dp *d)
{
	int n = d->n;
	double top = 0;

	for (int g = 0; g < d->G; g++)
		if (d->pre[(size_t)g * (n + 1) + n] > top)
			top = d->pre[(size_t)g * (n + 1) + n];
	top += max_send(d);
	return top * (1 + 1e-9) + 1e-300;
}

/* The search from the floor lo (d->floor and d->best set) up to top. The
 * optimum's bottleneck is usually at the floor or just above it: the pass
 * there gives the incumbent that bounds the search. Where it finds none
 * below the caller's incumbent, a pass at the largest bound that could
 * still beat it (hi): a partition whose stages cost <= hi costs at least
 * a * floor + its value, which that pass's prune compares with the
 * incumbent, so where it finds none, no partition beats the incumbent. */
static void search_from_floor(struct dp *d, double lo, double top)
{
	double v, m, nx, vf = value_floor(d), hi = top, vh, mh, nh;
	int none = 0;

	if (eval_bound(d, lo, &v, &m, &nx))
		v = INFINITY;
	if (v == INFINITY && d->best < INFINITY) {
		if (d->f->a > 0 && (d->best - vf) / d->f->a < hi)
			hi = (d->best - vf) / d->f->a;
		if (nx < hi && !(none = eval_bound(d, hi, &vh, &mh, &nh) != 0)) {
			vf = vh; /* V is vh on [mh, hi] */
			top = mh;
		}
	}
	if (!none)
		search(d, v, nx, vf, top);
}

/* The relaxation of a forced placement that drops the order of the middle
 * layers (all but the first and the last): stage 0 holds the first layer,
 * the last stage the last, every other stage at least one middle layer,
 * no stage more layers than fit its memory from any start (its span;
 * stage 0 starts at 0), each middle layer at the least time of a middle
 * layer on the stage's group; every p2p and vocabulary share as forced.
 * Its stages merge into classes of the same group, fixed cost and bounds
 * on their middle layers. */
struct relax_class {
	int g, lower, upper; /* group; least and most middle layers */
	int mult;	     /* stages of the class */
	int m;		     /* the most middle layers at the bound
				   being tried (relax_beaten) */
	double base;	     /* fixed cost: p2p, vocabulary share and
				   the first or last layer */
};

struct relax {
	int n_class, left;	    /* middle layers beyond the lower bounds */
	double fixed;		    /* sum of base + lower x least */
	double least[MAX_GROUPS];   /* least middle-layer time per group */
	int n_fast, fast[MAX_GROUPS]; /* the groups with stages, fastest
					 (least) first */
	struct relax_class c[MAX_STAGES];
};

/* The least time of a middle layer (all but the first and the last) on
 * each of the G groups of lc into least[] (INFINITY: none). */
static void least_middle(const struct layer_costs *lc, int G, double *least)
{
	int n = lc->n_layer;

	for (int g = 0; g < G; g++) {
		least[g] = INFINITY;
		for (int l = 1; l < n - 1; l++)
			if (lc->time[(size_t)g * n + l] < least[g])
				least[g] = lc->time[(size_t)g * n + l];
	}
}

/* Fills x for d (placement forced, K >= 2). Returns -1 where some stage
 * cannot hold its layers (then no partition fits), else 0. O(G n + K C)
 * for C classes. */
static int relax_init(const struct dp *d, struct relax *x)
{
	int n = d->n, K = d->K;
	const double *t = d->lc->time;
	unsigned used = 0;

	for (int k = 0; k < K; k++)
		used |= 1u << d->f->group[k];
	if (d->memo)
		memcpy(x->least, d->memo->least, (size_t)d->G * sizeof *x->least);
	else
		least_middle(d->lc, d->G, x->least);
	x->n_fast = 0;
	for (int g = 0; g < d->G; g++) {
		int i = x->n_fast;

		if (!(used >> g & 1))
			continue;
		while (i > 0 && x->least[x->fast[i - 1]] > x->least[g]) {
			x->fast[i] = x->fast[i - 1];
			i--;
		}
		x->fast[i] = g;
		x->n_fast++;
	}
	x->n_class = 0;
	x->left = n - 2;
	x->fixed = 0;
	for (int k = 0; k < K; k++) {
		struct relax_class c = { .g = d->f->group[k], .lower = k > 0 && k < K - 1, .mult = 1 };
		int i = x->n_class - 1;

		c.upper = (k ? row_span(d, k) : d->jmr[0][0]) - (k == 0 || k == K - 1);
		c.base = d->f->send[k] + d->f->vocab[k] +
			 (k == 0 ? t[(size_t)c.g * n] : 0) + (k == K - 1 ? t[(size_t)c.g * n + n - 1] : 0);
		if (c.upper < c.lower)
			return -1;
		x->fixed += c.base + (c.lower ? x->least[c.g] : 0);
		x->left -= c.lower;
		/* the latest class first: stages of one group run in a row */
		while (i >= 0 && !(x->c[i].g == c.g && x->c[i].lower == c.lower &&
				   x->c[i].upper == c.upper && x->c[i].base == c.base))
			i--;
		if (i >= 0)
			x->c[i].mult++;
		else
			x->c[x->n_class++] = c;
	}
	return 0;
}

/* The least sum of the stage costs of the relaxation where each stage of
 * class c holds at most c.m middle layers: the layers beyond the lower
 * bounds on the fastest groups first. INFINITY where that holds no
 * partition. */
static double relax_sum(const struct relax *x)
{
	int room[MAX_GROUPS] = { 0 }, left = x->left;
	double sum = x->fixed;

	for (int i = 0; i < x->n_class; i++) {
		if (x->c[i].m < x->c[i].lower)
			return INFINITY;
		room[x->c[i].g] += x->c[i].mult * (x->c[i].m - x->c[i].lower);
	}
	for (int f = 0; f < x->n_fast && left > 0; f++) {
		int g = x->fast[f], take = room[g] < left ? room[g] : left;

		if (take > 0) {
			sum += take * x->least[g];
			left -= take;
		}
	}
	return left > 0 ? INFINITY : sum;
}

/* The bottleneck from which a stage of class c holds m middle layers
 * (base + m x least), less a relative 1e-9 so that rounding in the
 * partition's own sums cannot leave a layer out. */
static double relax_event(const struct relax *x, const struct relax_class *c, int m)
{
	return (c->base + m * x->least[c->g]) * (1 - 1e-9);
}

/* The most middle layers of class c (at most c->upper, -1 for none) at
 * bottleneck u. */
static int relax_count(const struct relax *x, const struct relax_class *c, double u)
{
	double least = x->least[c->g];
	int m = c->upper;

	if (least > 0 && (u - c->base) / least < c->upper)
		m = (u - c->base) / least < -1 ? -1 : (int)floor((u - c->base) / least);
	while (m < c->upper && relax_event(x, c, m + 1) <= u)
		m++;
	while (m >= 0 && relax_event(x, c, m) > u)
		m--;
	return m;
}

/* Events relax_beaten follows at most before it gives up. */
#define RELAX_EVENTS 512

/* Whether, with the placement forced, no partition can cost below the
 * incumbent d->cut, by the relaxation x: a partition whose stages cost at
 * most U (at least the mean of its stage costs) costs at least a U + b
 * relax_sum(at U) + the least tail, and relax_sum is a step function of U;
 * the bottlenecks are followed up from the least mean through its steps
 * until a U + b (its least) + tail reaches the incumbent. With a relative
 * margin of 1e-9 against the rounding of the sums in another order; false
 * where it cannot tell within RELAX_EVENTS steps, or where a time is not
 * finite. */
static bool relax_beaten(const struct dp *d, struct relax *x)
{
	double a = d->f->a, b = d->f->b, cut = d->cut, tl = INFINITY, all, u;

	for (int j = 1; j <= d->n; j++)
		if (tail(d, d->f->group[0], j) < tl)
			tl = tail(d, d->f->group[0], j);
	tl += d->end_least;
	for (int f = 0; f < x->n_fast; f++)
		if (!isfinite(x->least[x->fast[f]]))
			return false;
	if (!isfinite(x->fixed) || !isfinite(tl) || !isfinite(a) || !isfinite(b))
		return false;
	for (int i = 0; i < x->n_class; i++)
		x->c[i].m = x->c[i].upper;
	all = relax_sum(x);
	u = all / d->K * (1 - 1e-9);
	if ((a * u + b * all + tl) * (1 - 1e-9) >= cut)
		return true;
	if (!(a > 0))
		return false;
	for (int i = 0; i < x->n_class; i++)
		x->c[i].m = relax_count(x, &x->c[i], u);
	for (int e = 0; e < RELAX_EVENTS; e++) {
		double sum = relax_sum(x), next = INFINITY;
		int at = -1;

		if ((a * u + b * sum + tl) * (1 - 1e-9) < cut)
			return false;
		for (int i = 0; i < x->n_class; i++)
			if (x->c[i].m < x->c[i].upper && relax_event(x, &x->c[i], x->c[i].m + 1) < next) {
				next = relax_event(x, &x->c[i], x->c[i].m + 1);
				at = i;
			}
		if (at < 0 || (a * next + b * all + tl) * (1 - 1e-9) >= cut)
			return true;
		u = next;
		x->c[at].m++;
	}
	return false;
}

/* Sets up d, runs the search, fills the outputs. */
static int solve(struct dp *d, int *group, unsigned short *first, double *t)
{
	int K = d->K, ret = -1;
	double top, m, nx;
	bool relaxed = !d->ranks && K >= 2 && d->cut < INFINITY;
	struct relax x;

	if (!may_fit(d))
		return -1;
	d->masks = d->G <= 6 ? 1 << d->G : 1;
	alloc_tables(d);
	index_counts(d);
	fill_sums(d);
	partition_cells += (double)d->K * d->G * (d->n + 1);
	fill_jm(d);
	top = stage_top(d);
	/* with the placement forced, the relaxation first: where it holds no
	 * partition, none fits; where it bounds every partition at or above
	 * the incumbent, none beats it */
	if (relaxed && (relax_init(d, &x) || relax_beaten(d, &x)))
		goto out;
	/* No bottleneck is below the relaxation's, nor below the stages'
	 * mean on the fastest groups; where the relaxation covers nothing,
	 * no partition fits the caps. */
	if (greedy(d, top, &m, &nx)) {
		double lo = greedy_floor(d, d->rem[0] / K * (1 - 1e-9), m);

		d->floor = lo * (1 - 1e-9);
		d->best = d->cut;
		search_from_floor(d, lo, top);
		if (d->best < d->cut) {
			memcpy(first, d->first, (size_t)(K + 1) * sizeof *first);
			if (group)
				memcpy(group, d->group, (size_t)K * sizeof *group);
			*t = d->best;
			ret = 0;
		}
	}
out:
	free_tables(d);
	return ret;
}

static int valid(const struct layer_costs *lc, const struct pipeline_frame *f)
{
	int n = lc->n_layer, K = f->n_stages;

	return n >= 1 && n <= 65535 && K >= 1 && K <= MAX_STAGES && K <= n &&
	       lc->n_group >= 1 && lc->n_group <= MAX_GROUPS && f->a >= 0 && f->b >= 0;
}

/* Exact, after AMP's pipeline-partition DP (Li et al. 2022) with the
 * bottleneck made explicit: with V(U) the least b * sum c_k + tail over the
 * fitting partitions whose stages all cost <= U, the optimum is min_U a * U
 * + V(U) over the candidate bounds (the stage costs). V is a nonincreasing
 * step function; a pass at U returns V(U), the bottleneck m <= U of its
 * partition (V is constant on [m, U]) and the next candidate above U. The
 * first pass is at the floor (the exact least bottleneck of greedy()'s
 * relaxation, where stages may be empty), which gives the incumbent; then
 * search() bisects on U below (best - value_floor) / a, skipping ranges
 * where V cannot step or cannot beat the incumbent. A pass costs O(count
 * vectors x n_group^2 x n): n_stages + 1 count vectors when forced,
 * prod_g (ranks[g] + 1) when free; the Llama-3-70B bench averages 1.4 to
 * 4 passes per partition. */
int partition_solve_memo(const struct layer_costs *lc, const struct pipeline_frame *f,
			 double cut, struct partition_memo *memo, unsigned short *first, double *t)
{
	struct dp d = { .n = lc->n_layer, .K = f->n_stages, .G = lc->n_group, .ncnt = f->n_stages + 1, .lc = lc, .f = f, .cut = cut };

	if (!valid(lc, f))
		return -1;
	if (memo && memo->lc == lc && memo->n == d.n && memo->G == d.G && memo->K == d.K)
		d.memo = memo;
	for (int k = 0; k < f->n_stages; k++)
		if (f->group[k] < 0 || f->group[k] >= lc->n_group)
			return -1;
	set_end(&d, NULL, 0);
	return solve(&d, NULL, first, t);
}

int partition_solve_below(const struct layer_costs *lc, const struct pipeline_frame *f,
			  double cut, unsigned short *first, double *t)
{
	return partition_solve_memo(lc, f, cut, NULL, first, t);
}

int partition_solve(const struct layer_costs *lc, const struct pipeline_frame *f,
		    unsigned short *first, double *t)
{
	return partition_solve_below(lc, f, INFINITY, first, t);
}

struct partition_memo *partition_memo_create(const struct layer_costs *lc, int n_stages)
{
	/* not zeroed: its rows are read only below n_jm[k] (memo_row) */
	struct partition_memo *mm = xmalloc(sizeof *mm);
	int n = lc->n_layer, G = lc->n_group;
	size_t n1 = (size_t)n + 1;

	memset(mm->n_jm, 0, sizeof mm->n_jm);
	mm->lc = lc;
	mm->n = n;
	mm->G = G;
	mm->K = n_stages > 0 && n_stages <= MAX_STAGES ? n_stages : 0;
	mm->masks = G <= 6 ? 1 << G : 1;
	mm->pre = xmalloc(((size_t)G + 3 + (size_t)mm->masks) * n1 * sizeof *mm->pre);
	mm->sums = mm->pre + (size_t)G * n1;
	mm->rem = mm->sums + 3 * n1;
	mm->have_rem = xcalloc((size_t)mm->masks, 1);
	mm->jm = xmalloc((size_t)mm->K * (size_t)G * n1 * sizeof *mm->jm);
	least_middle(lc, G, mm->least);
	pre_of(lc, n, G, mm->pre);
	fill_sums_of(lc, n, mm->sums);
	/* every group's, in slot 0 and (with masks) in its own */
	rem_of(lc, n, G, mm->masks, mm->masks - 1, mm->rem);
	if (mm->masks > 1) {
		memcpy(mm->rem + (size_t)(mm->masks - 1) * n1, mm->rem, n1 * sizeof *mm->rem);
		mm->have_rem[mm->masks - 1] = 1;
	}
	return mm;
}

void partition_memo_free(struct partition_memo *mm)
{
	if (!mm)
		return;
	free(mm->pre);
	free(mm->have_rem);
	free(mm->jm);
	free(mm);
}

double partition_place_work(const int *ranks, int n_group, int n_layer, int n_stages)
{
	double work = (double)n_layer * n_stages;
	int hosts = 0;

	/* place_free keeps the groups that host ranks: a row each */
	for (int g = 0; g < n_group; g++) {
		work *= ranks[g] + 1;
		hosts += ranks[g] > 0;
	}
	work *= hosts;
	return work < 1e12 ? work : 1e12;
}

/* Orders the C groups of map[] so that those whose tied all-reduce to
 * each of them is the same (pipeline_frame.tied, a row of it) lie in runs,
 * in their first one's order; fills start[] with the runs' first indices
 * and start[runs] = C. Returns the number of runs: 1 where every group's
 * row is the same (untied models: all 0), as the order was. */
static int tied_runs(const struct pipeline_frame *f, int *map, int C, int *start)
{
	int in[MAX_GROUPS], runs = 0, k = 0;
	bool taken[MAX_GROUPS] = { false };

	memcpy(in, map, (size_t)C * sizeof *in);
	for (int i = 0; i < C; i++) {
		if (taken[i])
			continue;
		start[runs++] = k;
		for (int j = i; j < C; j++) {
			bool same = !taken[j];

			for (int e = 0; e < C && same; e++)
				same = f->tied[in[i]][in[e]] == f->tied[in[j]][in[e]];
			if (same) {
				taken[j] = true;
				map[k++] = in[j];
			}
		}
	}
	start[runs] = C;
	return runs;
}

/* The joint DP on the groups that host ranks only (a group without ranks
 * adds count vectors of one value but rows and links to every pass):
 * copies their times, tails and links into a compact instance, solves it
 * with incumbent cut (and the class sequence when seq is set), and maps the
 * placement back. Where the tied all-reduce (pipeline_frame.tied) differs
 * between the groups, one DP for each run of alike groups of stage 0
 * (tied_runs, set_end). Returns as partition_place. */
static int place_free(const struct layer_costs *lc, const struct pipeline_frame *f,
		      const int *ranks, const int *cls, const int *seq, double cut, int *group,
		      unsigned short *first, double *t)
{
	int n = lc->n_layer, G = lc->n_group, total = 0, C = 0, map[MAX_GROUPS];
	int cr[MAX_GROUPS], ccls[MAX_GROUPS], cg[MAX_STAGES], ret;
	struct layer_costs m = *lc;
	struct pipeline_frame *cf;
	struct dp d = { .n = n, .K = f->n_stages, .ncnt = 1, .lc = &m, .cut = cut };
	int runs, start[MAX_GROUPS + 1];
	double *time, *tail0 = NULL;

	if (!valid(lc, f) || f->vp != 1)
		return -1;
	for (int g = 0; g < G; g++) {
		if (ranks[g] < 0)
			return -1;
		total += ranks[g];
		if (ranks[g])
			map[C++] = g;
	}
	if (total != f->n_stages)
		return -1;
	runs = tied_runs(f, map, C, start);
	cf = xmalloc(sizeof *cf);
	*cf = *f;
	time = xmalloc((size_t)C * (size_t)n * sizeof *time);
	if (lc->tail0)
		tail0 = xmalloc((size_t)C * (size_t)(n + 1) * sizeof *tail0);
	for (int c = 0; c < C; c++) {
		int g = map[c];

		memcpy(time + (size_t)c * n, lc->time + (size_t)g * n, (size_t)n * sizeof *time);
		if (tail0)
			memcpy(tail0 + (size_t)c * (n + 1), lc->tail0 + (size_t)g * (n + 1),
			       (size_t)(n + 1) * sizeof *tail0);
		cf->cap_of[c] = f->cap_of[g];
		cf->vocab_of[c] = f->vocab_of[g];
		for (int e = 0; e < C; e++) {
			cf->link[c][e] = f->link[g][map[e]];
			cf->tied[c][e] = f->tied[g][map[e]];
		}
		cr[c] = ranks[g];
		ccls[c] = cls ? cls[g] : 0;
	}
	m.n_group = cf->n_group = d.G = C;
	m.time = time;
	m.tail0 = tail0;
	d.f = cf;
	d.ranks = cr;
	if (seq) {
		d.cls = ccls;
		d.seq = seq;
	}
	for (int c = 0; c < C; c++) {
		d.radix[c] = d.ncnt;
		d.ncnt *= cr[c] + 1;
	}
	/* The tied all-reduce depends on the groups of the first and the last
	 * stage. Where the groups differ in it (runs > 1), a DP on every group
	 * with each last group's least over the runs first (r = -1: a lower
	 * bound of every placement's): where its optimum pays that least, it
	 * is the optimum; else, with its true objective as the incumbent, one
	 * DP for each run of alike groups, stage 0 on its groups, each below
	 * the best so far. */
	ret = -1;
	for (int r = runs > 1 ? -1 : 0; r < runs; r++) {
		int kg[MAX_STAGES], K = f->n_stages;
		unsigned short kf[MAX_STAGES + 1];
		double kt, paid;

		d.first_lo = r < 0 ? 0 : start[r];
		d.first_hi = r < 0 || runs == 1 ? 0 : start[r + 1];
		set_end(&d, r < 0 ? start : &start[r], r < 0 ? runs : 1);
		if (solve(&d, kg, kf, &kt)) {
			if (r < 0)
				break; /* none beats the cut even at the least */
			continue;
		}
		paid = d.end[kg[K - 1]];
		if (r < 0 && tail_row(&d, 0))
			paid = cf->tied[kg[0]][kg[K - 1]];
		if (kt + (paid - d.end[kg[K - 1]]) < d.cut) {
			ret = 0;
			d.cut = *t = kt + (paid - d.end[kg[K - 1]]);
			memcpy(cg, kg, (size_t)K * sizeof *cg);
			memcpy(first, kf, (size_t)(K + 1) * sizeof *first);
		}
		if (r < 0 && paid == d.end[kg[K - 1]])
			break;
	}
	if (!ret)
		for (int k = 0; k < f->n_stages; k++)
			group[k] = map[cg[k]];
	free(time);
	free(tail0);
	free(cf);
	return ret;
}

int partition_place(const struct layer_costs *lc, const struct pipeline_frame *f,
		    const int *ranks, int *group, unsigned short *first, double *t)
{
	return place_free(lc, f, ranks, NULL, NULL, INFINITY, group, first, t);
}

int partition_place_below(const struct layer_costs *lc, const struct pipeline_frame *f,
			  const int *ranks, double cut, int *group, unsigned short *first, double *t)
{
	return place_free(lc, f, ranks, NULL, NULL, cut, group, first, t);
}

/* partition_place restricted to stage k on the groups of class seq[k]. */
int partition_place_seq(const struct layer_costs *lc, const struct pipeline_frame *f,
			const int *ranks, const int *cls, const int *seq, int *group,
			unsigned short *first, double *t)
{
	return place_free(lc, f, ranks, cls, seq, INFINITY, group, first, t);
}

/* The classes of the groups that host ranks: *C of them, map[g] the merged
 * index of group g (-1 without ranks), rep[c] the caller's class value. */
static int merge_classes(int G, const int *ranks, const int *cls, int *map, int *rep)
{
	int C = 0;

	for (int g = 0; g < G; g++) {
		int c = 0;

		map[g] = -1;
		if (!ranks[g])
			continue;
		while (c < C && rep[c] != cls[g])
			c++;
		if (c == C)
			rep[C++] = cls[g];
		map[g] = c;
	}
	return C;
}

double partition_relaxed_work(const struct layer_costs *lc, const struct pipeline_frame *f,
			      const int *ranks, const int *cls)
{
	int map[MAX_GROUPS], rep[MAX_GROUPS], mr[MAX_GROUPS] = { 0 };
	int C = merge_classes(lc->n_group, ranks, cls, map, rep);

	for (int g = 0; g < lc->n_group; g++)
		if (map[g] >= 0)
			mr[map[g]] += ranks[g];
	return partition_place_work(mr, C, lc->n_layer, f->n_stages);
}

int partition_place_relaxed(const struct layer_costs *lc, const struct pipeline_frame *f,
			    const int *ranks, const int *cls, double *lb, int *seq)
{
	int n = lc->n_layer, G = lc->n_group, K = f->n_stages;
	int map[MAX_GROUPS], rep[MAX_GROUPS], mr[MAX_GROUPS] = { 0 }, mg[MAX_STAGES];
	int C = merge_classes(G, ranks, cls, map, rep), ret = -1;
	struct layer_costs m = *lc;
	struct pipeline_frame mf = *f;
	unsigned short first[MAX_STAGES + 1];
	double *time, *tail0 = NULL, t;

	if (!valid(lc, f) || f->vp != 1 || C < 1)
		return -1;
	time = xmalloc((size_t)C * (size_t)n * sizeof *time);
	for (size_t x = 0; x < (size_t)C * (size_t)n; x++)
		time[x] = INFINITY;
	if (lc->tail0) {
		tail0 = xmalloc((size_t)C * (size_t)(n + 1) * sizeof *tail0);
		for (size_t x = 0; x < (size_t)C * (size_t)(n + 1); x++)
			tail0[x] = INFINITY;
	}
	for (int c = 0; c < C; c++) {
		mf.cap_of[c] = -INFINITY;
		mf.vocab_of[c] = INFINITY;
		for (int e = 0; e < C; e++)
			mf.link[c][e] = mf.tied[c][e] = INFINITY;
	}
	for (int g = 0; g < G; g++) {
		int c = map[g];

		if (c < 0)
			continue;
		mr[c] += ranks[g];
		mf.cap_of[c] = fmax(mf.cap_of[c], f->cap_of[g]);
		mf.vocab_of[c] = fmin(mf.vocab_of[c], f->vocab_of[g]);
		for (int l = 0; l < n; l++)
			time[(size_t)c * n + l] = fmin(time[(size_t)c * n + l], lc->time[(size_t)g * n + l]);
		for (int j = 0; j <= n && tail0; j++)
			tail0[(size_t)c * (n + 1) + j] =
				fmin(tail0[(size_t)c * (n + 1) + j], lc->tail0[(size_t)g * (n + 1) + j]);
		for (int h = 0; h < G; h++)
			if (map[h] >= 0) {
				mf.link[c][map[h]] = fmin(mf.link[c][map[h]], f->link[g][h]);
				mf.tied[c][map[h]] = fmin(mf.tied[c][map[h]], f->tied[g][h]);
			}
	}
	m.n_group = C;
	m.time = time;
	m.tail0 = tail0;
	mf.n_group = C;
	if (!partition_place(&m, &mf, mr, mg, first, &t)) {
		*lb = t;
		for (int k = 0; k < K; k++)
			seq[k] = rep[mg[k]];
		ret = 0;
	}
	free(time);
	free(tail0);
	return ret;
}

/* The sum of the middle layers' least times (t[g] each on group g) at
 * bound u, where group g may take ranks[g] x min(most[g], floor(u / t[g]))
 * of them (nm where t[g] is 0), fastest first; INFINITY if the groups
 * cannot hold nm layers. by[] lists the nb groups by t[] ascending; a
 * group's share is worked out only when the fill reaches it. */
static double fill_fastest(double u, const double *t, const double *most, const int *ranks,
			   const int *by, int nb, int nm)
{
	double sum = 0, left = nm;

	for (int i = 0; i < nb && left > 0; i++) {
		int g = by[i];
		double per = t[g] > 0 ? floor(u / t[g] + 1e-9) : nm;
		double take = ranks[g] * (most[g] < per ? most[g] : per);
		double x = take < left ? take : left;

		sum += x * t[g];
		left -= x;
	}
	return left > 0 ? INFINITY : sum;
}

int partition_place_bound(const struct layer_costs *lc, const struct pipeline_frame *f,
			  const int *ranks, double a, double b, double *lb)
{
	int n = lc->n_layer, G = lc->n_group, K = f->n_stages, nm = n >= 2 ? n - 2 : 0;
	int by[MAX_GROUPS], nb = 0;
	double t[MAX_GROUPS], most[MAX_GROUPS], fewest = INFINITY;
	double u0 = 0, ends = 0, link = INFINITY, tail = 0, best = INFINITY, w = INFINITY, least;

	if (K < 1 || K > n || G < 1 || G > MAX_GROUPS || f->vp < 1)
		return -1;
	for (int k = 0; k < K; k++)
		fewest = fmin(fewest, f->inflight[k]);
	for (int e = 0; e < (n >= 2 ? 2 : 1); e++) { /* embedding, head */
		double m = INFINITY;

		for (int g = 0; g < G; g++)
			if (ranks[g])
				m = fmin(m, lc->time[(size_t)g * n + (e ? n - 1 : 0)]);
		ends += m;
		u0 = fmax(u0, m);
	}
	for (int l = 1; l <= nm; l++)
		w = fmin(w, lc->state_bytes[l] + lc->extra_bytes[l] + fewest * lc->act_bytes[l]);
	for (int g = 0; g < G; g++) {
		const double *tg = lc->time + (size_t)g * n;

		if (!ranks[g])
			continue;
		t[g] = INFINITY;
		for (int l = 1; l <= nm; l++)
			if (tg[l] < t[g])
				t[g] = tg[l];
		most[g] = !(w > 0)	     ? nm
			  : f->cap_of[g] < 0 ? 0
					     : fmin(nm, floor(f->cap_of[g] * f->vp / w));
		for (int h = 0; h < G; h++)
			if (ranks[h])
				link = fmin(link, f->link[h][g]);
		/* insertion sort by t[] */
		int i = nb++;
		while (i > 0 && t[by[i - 1]] > t[g]) {
			by[i] = by[i - 1];
			i--;
		}
		by[i] = g;
	}
	if (nm > 0)
		u0 = fmax(u0, t[by[0]]);
	if (lc->tail0 && f->vp == 1) {
		double tied = INFINITY;

		tail = INFINITY;
		for (int g = 0; g < G; g++)
			for (int j = 1; j <= n - K + 1 && ranks[g]; j++)
				tail = fmin(tail, lc->tail0[(size_t)g * (n + 1) + j]);
		/* the tied embedding's all-reduce between the first and the
		 * last stage's groups, at its least */
		for (int g = 0; g < G; g++)
			for (int h = 0; h < G && ranks[g]; h++)
				if (ranks[h])
					tied = fmin(tied, f->tied[g][h]);
		tail += tied;
	}
	/* a U + b (the least sum at bound U) is least at u0 or where a
	 * group's stages take one more layer: U = L t[g]. No sum is below
	 * every middle layer on the fastest group (least): a bound U whose
	 * a U + b least already exceeds the best is skipped, and so are the
	 * larger ones of its group. */
	least = b * (ends + (nb ? nm * t[by[0]] : 0) + f->hops * link) + tail;
	for (int c = -1; c < nb * (nm > 0 ? nm : 0); c++) {
		double u = c < 0 ? u0 : (c % nm + 1) * t[by[c / nm]], sum;

		if (c >= 0 && a * u + least > best * (1 + 1e-9)) {
			c += nm - 1 - c % nm; /* to the group's last */
			continue;
		}
		if (u < u0)
			continue;
		sum = fill_fastest(u, t, most, ranks, by, nb, nm);
		if (sum < INFINITY)
			best = fmin(best, a * u + b * (ends + sum + f->hops * link) + tail);
	}
	if (best == INFINITY)
		return -1;
	*lb = best;
	return 0;
}
