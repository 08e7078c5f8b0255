/* ilp.c: placement of pipeline ranks onto node groups as a mixed integer
 * program solved with GLPK (AMP, Li et al. 2022, Sec. 3.3, with memory per
 * rank and the ranks kept in pipeline order). */
#include "ilp.h"

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cost.h"
#include "partition.h"
#include "util.h"

/* GLPK's terminal hook. With glp_term_out(GLP_OFF) GLPK calls it only for
 * its fatal-error text (just before it aborts): that goes to stderr, never
 * to stdout. Returning nonzero stops GLPK's own printing. */
static int ilp_term_hook(void *info, const char *s)
{
	(void)info;
	fputs(s, stderr);
	return 1;
}

/* Checks everything GLPK would abort on, and the model's own preconditions.
 * Returns 0 if p is usable. */
static int ilp_validate(const struct placement_problem *p)
{
	const struct layer_costs *lc = p->lc;
	int g, r, l, sum = 0;

	if (p->pp < 1 || p->n_group < 1 || !p->ranks || !lc || !p->inflight ||
	    !p->cap || lc->n_group != p->n_group || lc->n_layer < p->pp ||
	    !isfinite(p->a) || p->a < 0 || !isfinite(p->b) || p->b < 0)
		return -1;
	for (g = 0; g < p->n_group; g++) {
		if (p->ranks[g] < 0 || p->ranks[g] > p->pp || isnan(p->cap[g]))
			return -1;
		sum += p->ranks[g];
	}
	if (sum != p->pp)
		return -1;
	for (r = 0; r < p->pp; r++)
		if (!isfinite(p->inflight[r]) || p->inflight[r] < 0)
			return -1;
	for (l = 0; l < lc->n_layer; l++) {
		if (!isfinite(lc->state_bytes[l]) || !isfinite(lc->act_bytes[l]) ||
		    !isfinite(lc->extra_bytes[l]))
			return -1;
		for (g = 0; g < p->n_group; g++) {
			double t = lc->time[(size_t)g * (size_t)lc->n_layer + (size_t)l];
			if (!isfinite(t) || t < 0)
				return -1;
		}
	}
	return 0;
}

/* Column of x[r][g] (1-based); z[r][g] follows all x; U is last. */
#define XCOL(r, g) (1 + (r)*G + (g))
#define ZCOL(r, g) (1 + pp * G + (r)*G + (g))

/* The linear estimates of one ILP round. Rank r on group g with z >= 1
 * layers costs tz[r][g] * z + tx[r][g] seconds and needs wz[r] * z + wx[r]
 * bytes: a rate per layer from the mean over the rank's range of middle
 * layers, plus the first layer's own cost on rank 0 and the last layer's on
 * the last rank (embedding and head: every partition puts them there). */
struct est {
	double *tz, *tx; /* [pp * G] */
	double *wz, *wx; /* [pp] */
};

/* Layer l's bytes on rank r: state + inflight[r] x activations + extra. */
static double layer_bytes(const struct placement_problem *p, int r, int l)
{
	const struct layer_costs *lc = p->lc;

	return lc->state_bytes[l] + p->inflight[r] * lc->act_bytes[l] + lc->extra_bytes[l];
}

/* Fills e for the per-rank ranges [lo[r], hi[r]) (fractional ends allowed).
 * The rate of rank r is the mean over its range clipped to the middle
 * layers [1, n - 1), or over all middle layers when that is empty; 0 when
 * there are none (n = 2 = pp: one layer each, priced by the fixed terms).
 * Needs pp >= 2. */
static void estimate(const struct placement_problem *p, const double *lo,
		     const double *hi, struct est *e)
{
	const struct layer_costs *lc = p->lc;
	int n = lc->n_layer, G = p->n_group, pp = p->pp, r, g, l;

	for (r = 0; r < pp; r++) {
		double a = fmax(lo[r], 1), b = fmin(hi[r], n - 1), w = 0;

		if (!(b > a))
			a = 1, b = n - 1;
		for (g = 0; g < G; g++)
			e->tz[r * G + g] = e->tx[r * G + g] = 0;
		for (l = (int)floor(a); l < b; l++) {
			double wt = fmin(b, l + 1) - fmax(a, l);

			w += wt * layer_bytes(p, r, l);
			for (g = 0; g < G; g++)
				e->tz[r * G + g] += wt * lc->time[(size_t)g * (size_t)n + (size_t)l];
		}
		if (b > a) {
			for (g = 0; g < G; g++)
				e->tz[r * G + g] /= b - a;
			w /= b - a;
		}
		e->wz[r] = w;
		e->wx[r] = 0;
		if (r == 0 || r == pp - 1) { /* first or last layer, exactly */
			int f = r == 0 ? 0 : n - 1;

			for (g = 0; g < G; g++)
				e->tx[r * G + g] = lc->time[(size_t)g * (size_t)n + (size_t)f] -
						   e->tz[r * G + g];
			e->wx[r] = layer_bytes(p, r, f) - e->wz[r];
		}
	}
}

/* Whether ranks r and r + 1 look the same to the model (same estimates on
 * every group): then swapping their groups and layer counts changes nothing,
 * and requiring group[r] <= group[r + 1] loses no optimum. */
static int twins(const struct est *e, int G, int r)
{
	int g;

	if (e->wz[r] != e->wz[r + 1] || e->wx[r] != e->wx[r + 1])
		return 0;
	for (g = 0; g < G; g++)
		if (e->tz[r * G + g] != e->tz[(r + 1) * G + g] ||
		    e->tx[r * G + g] != e->tx[(r + 1) * G + g])
			return 0;
	return 1;
}

/* v, or 0 when it is below 1e-9 in magnitude (see put). */
static double snap(double v)
{
	return fabs(v) < 1e-9 ? 0 : v;
}

/* Branch and bound's node limit for one solve (solve_once), and the nodes
 * it used (GLPK's total count: deterministic). */
struct nodes {
	long limit; /* 0: none */
	long used;
};

/* GLPK's branch-and-bound callback: stops the search once it has created
 * more than the limit's nodes (glp_intopt then returns its incumbent). */
static void ilp_node_cb(glp_tree *T, void *info)
{
	struct nodes *nd = info;
	int a_cnt, n_cnt, t_cnt;

	glp_ios_tree_size(T, &a_cnt, &n_cnt, &t_cnt);
	if (t_cnt > nd->used)
		nd->used = t_cnt;
	if (nd->limit && t_cnt > nd->limit)
		glp_ios_terminate(T);
}

/* The constraint matrix of one ILP as glp_load_matrix takes it: entries
 * (ia[k], ja[k]) = ar[k] for k in [1, nz]. */
struct mat {
	int nz;
	int *ia, *ja;
	double *ar;
};

/* Adds entry (i, j) = v to A unless |v| < 1e-9. Coefficients are scaled to
 * at most 1; dropping the ones below 1e-9 (rounding residue of the
 * estimates) keeps GLPK's simplex stable: a 1e-17 entry once sent it into
 * an endless "numerical instability" loop. */
static void put(struct mat *A, int i, int j, double v)
{
	if (fabs(v) >= 1e-9) {
		++A->nz;
		A->ia[A->nz] = i;
		A->ja[A->nz] = j;
		A->ar[A->nz] = v;
	}
}

/* The scale of the times: the largest rate or fixed term (1 if none). */
static double time_scale(const struct placement_problem *p, const struct est *e)
{
	double ts = 0;

	for (int r = 0; r < p->pp * p->n_group; r++)
		ts = fmax(ts, fmax(e->tz[r], fabs(e->tx[r])));
	return ts > 0 ? ts : 1;
}

/* zmax[r * G + g]: the most layers rank r can take on group g: one for each
 * other rank, and what fits its memory (a tighter relaxation than z <= n x). */
static void fill_zmax(const struct placement_problem *p, const struct est *e, double *zmax)
{
	int pp = p->pp, G = p->n_group, n = p->lc->n_layer;

	for (int r = 0; r < pp; r++)
		for (int g = 0; g < G; g++) {
			double zm = n - (pp - 1), q;

			if (e->wz[r] > 0) {
				q = (p->cap[g] - e->wx[r]) / e->wz[r];
				zm = fmin(zm, floor(q + 1e-9 * fmax(1, fabs(q))));
			} else if (e->wx[r] > p->cap[g]) {
				zm = 0;
			}
			zmax[r * G + g] = fmax(zm, 0);
		}
}

/* The columns x[r][g] (binary; fixed at 0 where group g hosts no ranks or
 * rank r cannot fit a layer there), z[r][g] (integer in [0, n]) and U, with
 * the objective's coefficients (times over ts). */
static void add_columns(glp_prob *P, const struct placement_problem *p, const struct est *e,
			const double *zmax, double ts)
{
	int pp = p->pp, G = p->n_group, n = p->lc->n_layer, ncol = 2 * pp * G + 1;

	glp_add_cols(P, ncol);
	for (int r = 0; r < pp; r++)
		for (int g = 0; g < G; g++) {
			glp_set_col_kind(P, XCOL(r, g), GLP_BV);
			glp_set_col_kind(P, ZCOL(r, g), GLP_IV);
			glp_set_col_bnds(P, ZCOL(r, g), GLP_DB, 0, n);
			glp_set_obj_coef(P, ZCOL(r, g), snap(p->b * e->tz[r * G + g] / ts));
			glp_set_obj_coef(P, XCOL(r, g), snap(p->b * e->tx[r * G + g] / ts));
			if (p->ranks[g] == 0 || zmax[r * G + g] < 1)
				glp_set_col_bnds(P, XCOL(r, g), GLP_FX, 0, 0);
		}
	glp_set_col_bnds(P, ncol, GLP_LO, 0, 0);
	glp_set_obj_coef(P, ncol, p->a);
}

/* The placement rows: each rank on one group, the group sizes, and x <= z
 * <= zmax x (a placed rank is not empty; no layers where it is not). */
static void add_placement_rows(glp_prob *P, struct mat *A, const struct placement_problem *p,
			       const double *zmax)
{
	int pp = p->pp, G = p->n_group, row;

	for (int r = 0; r < pp; r++) { /* one group per rank */
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_FX, 1, 1);
		for (int g = 0; g < G; g++)
			put(A, row, XCOL(r, g), 1);
	}
	for (int g = 0; g < G; g++) { /* group sizes */
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_FX, p->ranks[g], p->ranks[g]);
		for (int r = 0; r < pp; r++)
			put(A, row, XCOL(r, g), 1);
	}
	for (int r = 0; r < pp; r++)
		for (int g = 0; g < G; g++) { /* x <= z <= zmax x */
			row = glp_add_rows(P, 1);
			glp_set_row_bnds(P, row, GLP_UP, 0, 0);
			put(A, row, ZCOL(r, g), 1);
			put(A, row, XCOL(r, g), -zmax[r * G + g]);
			row = glp_add_rows(P, 1);
			glp_set_row_bnds(P, row, GLP_LO, 0, 0);
			put(A, row, ZCOL(r, g), 1);
			put(A, row, XCOL(r, g), -1);
		}
}

/* The symmetry rows: twin ranks (twins()) in group order. */
static void add_twin_rows(glp_prob *P, struct mat *A, const struct placement_problem *p,
			  const struct est *e)
{
	int pp = p->pp, G = p->n_group, row;

	for (int r = 0; r + 1 < pp; r++) {
		if (!twins(e, G, r))
			continue;
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_UP, 0, 0);
		for (int g = 1; g < G; g++) {
			put(A, row, XCOL(r, g), g);
			put(A, row, XCOL(r + 1, g), -g);
		}
	}
}

/* The layer rows: every layer once, and each rank's time (over ts) at most
 * U, the bottleneck. */
static void add_time_rows(glp_prob *P, struct mat *A, const struct placement_problem *p,
			  const struct est *e, double ts)
{
	int pp = p->pp, G = p->n_group, n = p->lc->n_layer, ncol = 2 * pp * G + 1, row;

	row = glp_add_rows(P, 1); /* every layer once */
	glp_set_row_bnds(P, row, GLP_FX, n, n);
	for (int r = 0; r < pp; r++)
		for (int g = 0; g < G; g++)
			put(A, row, ZCOL(r, g), 1);
	for (int r = 0; r < pp; r++) { /* bottleneck */
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_UP, 0, 0);
		for (int g = 0; g < G; g++) {
			put(A, row, ZCOL(r, g), e->tz[r * G + g] / ts);
			put(A, row, XCOL(r, g), e->tx[r * G + g] / ts);
		}
		put(A, row, ncol, -1);
	}
}

/* The memory rows, each scaled to <= 1: where group g hosts ranks and has a
 * finite cap, rank r's bytes there within it, relaxed by M (1 - x[r][g]). */
static void add_memory_rows(glp_prob *P, struct mat *A, const struct placement_problem *p,
			    const struct est *e)
{
	int pp = p->pp, G = p->n_group, n = p->lc->n_layer, row;

	for (int r = 0; r < pp; r++) {
		double wz = e->wz[r], wx = e->wx[r];

		for (int g = 0; g < G; g++) {
			double cap = p->cap[g], m = fmax(0, -cap), sc;

			if (p->ranks[g] == 0 || cap == INFINITY)
				continue;
			sc = fmax(fmax(fabs(wz * n), fabs(wx + m)), fabs(cap + m));
			if (!(sc > 0) || !isfinite(sc))
				sc = 1;
			row = glp_add_rows(P, 1);
			glp_set_row_bnds(P, row, GLP_UP, 0, (cap + m) / sc);
			put(A, row, ZCOL(r, g), wz / sc);
			put(A, row, XCOL(r, g), (wx + m) / sc);
		}
	}
}

/* Branch and bound on P within tm_lim milliseconds and nd's node limit
 * (nd->used gets the nodes it made). Returns how it ended. */
static enum ilp_status run_intopt(glp_prob *P, int tm_lim, struct nodes *nd)
{
	glp_iocp parm;

	glp_init_iocp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	parm.tm_lim = tm_lim;
	parm.cb_func = ilp_node_cb;
	parm.cb_info = nd;
	nd->used = 0;
	/* pseudocost branching and best-projection backtracking: 2-4x fewer
	 * nodes than the defaults at pp = 8; cuts made it slower */
	parm.br_tech = GLP_BR_PCH;
	parm.bt_tech = GLP_BT_BPH;
	glp_intopt(P, &parm); /* the status below says what it found */
	switch (glp_mip_status(P)) {
	case GLP_OPT:
		return ILP_OPTIMAL;
	case GLP_FEAS:
		return ILP_FEASIBLE;
	default:
		return ILP_NONE;
	}
}

/* Builds and solves the ILP of ilp_place with the estimates e:
 *   min  a*U + b * sum_{r,g} (tz[r][g] z[r][g] + tx[r][g] x[r][g])
 *   s.t. sum_g x[r][g] = 1                   each rank on one group
 *        sum_r x[r][g] = ranks[g]            group sizes
 *        x[r][g] <= z[r][g] <= zmax[r][g] x[r][g]
 *                                            non-empty, only where placed
 *        sum_{r,g} z[r][g] = n               every layer once
 *        sum_g (tz z + tx x)[r][g] <= U      bottleneck
 *        wz[r] z[r][g] + wx[r] x[r][g] <= cap[g] + M (1 - x[r][g])
 *                                            memory, M = max(0, -cap[g])
 *        sum_g g x[r][g] <= sum_g g x[r+1][g]  for twin ranks (twins())
 * with x binary, z integer, U >= 0; zmax[r][g] = min(n - pp + 1, the layers
 * the memory row allows), a tighter relaxation than n. Times are scaled by
 * their largest rate and each memory row by its largest term. Contiguity is
 * free: layer counts in rank order define the split. Writes group[] unless
 * ILP_NONE. Size: 2 pp G + 1 columns, about (4 G + 3) pp rows. */
static enum ilp_status solve_once(const struct placement_problem *p,
				  const struct est *e, int tm_lim, struct nodes *nd, int *group)
{
	int pp = p->pp, G = p->n_group;
	size_t cap_nz = (size_t)13 * (size_t)pp * (size_t)G + (size_t)pp + 2;
	double ts = time_scale(p, e), *zmax;
	struct mat A = { 0 };
	enum ilp_status st;
	glp_prob *P;

	A.ia = xcalloc(cap_nz, sizeof *A.ia);
	A.ja = xcalloc(cap_nz, sizeof *A.ja);
	A.ar = xcalloc(cap_nz, sizeof *A.ar);
	zmax = xcalloc((size_t)pp * (size_t)G, sizeof *zmax);
	fill_zmax(p, e, zmax);
	P = glp_create_prob();
	glp_set_obj_dir(P, GLP_MIN);
	add_columns(P, p, e, zmax, ts);
	add_placement_rows(P, &A, p, zmax);
	add_twin_rows(P, &A, p, e);
	add_time_rows(P, &A, p, e, ts);
	add_memory_rows(P, &A, p, e);
	glp_load_matrix(P, A.nz, A.ia, A.ja, A.ar);
	st = run_intopt(P, tm_lim, nd);
	if (st != ILP_NONE)
		for (int r = 0; r < pp; r++) {
			int best = 0;
			for (int g = 1; g < G; g++)
				if (glp_mip_col_val(P, XCOL(r, g)) >
				    glp_mip_col_val(P, XCOL(r, best)))
					best = g;
			group[r] = best;
		}
	glp_delete_prob(P);
	free(zmax);
	free(A.ia);
	free(A.ja);
	free(A.ar);
	return st;
}

/* The pipeline time of placement group[] after partition_solve, with no p2p
 * time; INFINITY if no partition fits. Fills first[0..pp]. */
static double refine(const struct placement_problem *p, const int *group,
		     unsigned short *first)
{
	struct pipeline_frame f;
	double t;
	int r;

	memset(&f, 0, sizeof f);
	f.n_stages = p->pp;
	f.a = p->a;
	f.b = p->b;
	for (r = 0; r < p->pp; r++) {
		f.group[r] = group[r];
		f.inflight[r] = p->inflight[r];
		f.cap[r] = p->cap[group[r]];
	}
	return partition_solve(p->lc, &f, first, &t) ? INFINITY : t;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Most ILP solves per call (see ilp_place). */
#ifndef ILP_ROUNDS
#define ILP_ROUNDS 3
#endif

/* The first round prices rank r's layers by the mean over its share of an
 * even split, [r n / pp, (r + 1) n / pp): the same as the mean over all
 * layers when layers are alike, and aware that the first ranks hold the
 * embedding and the last the head. Later rounds re-price over the layer
 * ranges that partition_solve gives the last placement, until the placement
 * repeats or the time or the nodes are spent, and keep the placement whose refined pipeline
 * time (no p2p, no tail) is least. The status is that of the ILP solve that
 * gave it: OPTIMAL is proven for the model, not for the refined time. */
enum ilp_status ilp_place(const struct placement_problem *p, int *group,
			  double time_limit_s)
{
	return ilp_place_limits(p, group, time_limit_s, 0);
}

void ilp_free_env(void)
{
	glp_free_env();
}

enum ilp_status ilp_place_limits(const struct placement_problem *p, int *group,
				 double time_limit_s, long node_limit)
{
	long nodes_left = node_limit > 0 ? node_limit : 0;
	struct nodes nd;
	int pp, G, n, r, g, only = -1, round, *cur, *last;
	double *buf, *lo, *hi, best_t = INFINITY, deadline;
	unsigned short first[MAX_STAGES + 1];
	enum ilp_status st = ILP_NONE, best_st = ILP_NONE;
	struct est e;

	if (!group || ilp_validate(p))
		return ILP_NONE;
	pp = p->pp, G = p->n_group, n = p->lc->n_layer;
	for (g = 0; g < G; g++)
		if (p->ranks[g] > 0)
			only = only == -1 ? g : -2;
	if (only >= 0) { /* the only placement; partition_solve says if it fits */
		for (r = 0; r < pp; r++)
			group[r] = only;
		return ILP_OPTIMAL;
	}
	if (pp > MAX_STAGES)
		return ILP_NONE;

	glp_term_out(GLP_OFF);
	glp_term_hook(ilp_term_hook, NULL);
	deadline = time_limit_s > 0 && time_limit_s < INT_MAX / 1000.0 ? now_s() + time_limit_s : INFINITY;
	buf = xcalloc((size_t)pp * (2 * (size_t)G + 4), sizeof *buf);
	e.tz = buf;
	e.tx = e.tz + (size_t)pp * (size_t)G;
	e.wz = e.tx + (size_t)pp * (size_t)G;
	e.wx = e.wz + pp;
	lo = e.wx + pp;
	hi = lo + pp;
	cur = xcalloc(2 * (size_t)pp, sizeof *cur);
	last = cur + pp;
	for (r = 0; r < pp; r++) {
		lo[r] = (double)r * n / pp;
		hi[r] = (double)(r + 1) * n / pp;
	}
	for (round = 0; round < ILP_ROUNDS; round++) {
		double left = deadline - now_s(), t;
		int tm_lim = INT_MAX;

		if (deadline < INFINITY) {
			if (left <= 0 && round > 0)
				break;
			tm_lim = left > 0.001 ? (int)ceil(left * 1000) : 1;
		}
		if (node_limit > 0 && nodes_left <= 0 && round > 0)
			break;
		nd.limit = node_limit > 0 ? (nodes_left > 0 ? nodes_left : 1) : 0;
		estimate(p, lo, hi, &e);
		st = solve_once(p, &e, tm_lim, &nd, cur);
		nodes_left -= nd.used;
		if (st == ILP_NONE)
			break;
		if (round > 0 && !memcmp(cur, last, (size_t)pp * sizeof *cur))
			break; /* same placement again */
		memcpy(last, cur, (size_t)pp * sizeof *cur);
		t = refine(p, cur, first);
		if (round == 0 || t < best_t) {
			best_t = t, best_st = st;
			memcpy(group, cur, (size_t)pp * sizeof *cur);
		}
		if (t == INFINITY)
			break;
		for (r = 0; r < pp; r++) /* re-price over this split */
			lo[r] = first[r], hi[r] = first[r + 1];
	}
	free(cur);
	free(buf);
	return best_st;
}
