/* ilp.c: placement of pipeline ranks onto node groups as a mixed integer
 * program solved with GLPK (AMP, Li et al. 2022, Sec. 3.3, with memory per
 * rank and the ranks kept in pipeline order). */
#include "ilp.h"

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cost.h"
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
#define XCOL(r, g) (1 + (r) * G + (g))
#define ZCOL(r, g) (1 + pp * G + (r) * G + (g))

/* The model, with n layers, tbar[g] the mean layer time on group g (scaled
 * by 1/ts), sbar, abar the mean state and activation bytes per layer and E
 * the sum of extra_bytes (the head's logits, charged to the last rank):
 *   min  a*U + b * sum_{r,g} tbar[g] z[r][g]
 *   s.t. sum_g x[r][g] = 1                   each rank on one group
 *        sum_r x[r][g] = ranks[g]            group sizes
 *        x[r][g] <= z[r][g] <= n x[r][g]     non-empty, only where placed
 *        sum_{r,g} z[r][g] = n               every layer once
 *        sum_g tbar[g] z[r][g] <= U          bottleneck
 *        (sbar + inflight[r] abar) z[r][g] + E_r x[r][g]
 *                <= cap[g] + M_g (1 - x[r][g])   memory, M_g = max(0, -cap[g])
 * with x binary, z integer, U >= 0. Contiguity is free: the layer counts
 * define a contiguous split in rank order. */
enum ilp_status ilp_place(const struct placement_problem *p, int *group,
			  double time_limit_s)
{
	const struct layer_costs *lc = p->lc;
	int pp = p->pp, G = p->n_group, n, r, g, l, row, nz = 0, only = -1, ncol;
	double ts = 0, sbar = 0, abar = 0, extra = 0, *tbar, *ar;
	int *ia, *ja;
	enum ilp_status st = ILP_NONE;
	glp_prob *P;
	glp_iocp parm;

	if (!group || ilp_validate(p))
		return ILP_NONE;
	n = lc->n_layer;
	for (g = 0; g < G; g++)
		if (p->ranks[g] > 0)
			only = only == -1 ? g : -2;
	if (only >= 0) {	/* one group hosts every rank */
		for (r = 0; r < pp; r++)
			group[r] = only;
		return ILP_OPTIMAL;
	}

	tbar = xcalloc((size_t)G, sizeof *tbar);
	for (g = 0; g < G; g++) {
		for (l = 0; l < n; l++)
			tbar[g] += lc->time[(size_t)g * (size_t)n + (size_t)l];
		tbar[g] /= n;
		ts = fmax(ts, tbar[g]);
	}
	if (ts > 0)
		for (g = 0; g < G; g++)
			tbar[g] /= ts;
	for (l = 0; l < n; l++) {
		sbar += lc->state_bytes[l];
		abar += lc->act_bytes[l];
		extra += lc->extra_bytes[l];
	}
	sbar /= n;
	abar /= n;

	ncol = 2 * pp * G + 1;
	{
		size_t cap = (size_t)9 * (size_t)pp * (size_t)G + (size_t)pp + 2;
		ia = xcalloc(cap, sizeof *ia);
		ja = xcalloc(cap, sizeof *ja);
		ar = xcalloc(cap, sizeof *ar);
	}
#define NZ(i, j, v) (++nz, ia[nz] = (i), ja[nz] = (j), ar[nz] = (v))

	glp_term_out(GLP_OFF);
	glp_term_hook(ilp_term_hook, NULL);
	P = glp_create_prob();
	glp_set_obj_dir(P, GLP_MIN);
	glp_add_cols(P, ncol);
	for (r = 0; r < pp; r++)
		for (g = 0; g < G; g++) {
			glp_set_col_kind(P, XCOL(r, g), GLP_BV);
			glp_set_col_kind(P, ZCOL(r, g), GLP_IV);
			glp_set_col_bnds(P, ZCOL(r, g), GLP_DB, 0, n);
			glp_set_obj_coef(P, ZCOL(r, g), p->b * tbar[g]);
			if (p->ranks[g] == 0)
				glp_set_col_bnds(P, XCOL(r, g), GLP_FX, 0, 0);
		}
	glp_set_col_bnds(P, ncol, GLP_LO, 0, 0);
	glp_set_obj_coef(P, ncol, p->a);

	for (r = 0; r < pp; r++) {	/* one group per rank */
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_FX, 1, 1);
		for (g = 0; g < G; g++)
			NZ(row, XCOL(r, g), 1);
	}
	for (g = 0; g < G; g++) {	/* group sizes */
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_FX, p->ranks[g], p->ranks[g]);
		for (r = 0; r < pp; r++)
			NZ(row, XCOL(r, g), 1);
	}
	for (r = 0; r < pp; r++)
		for (g = 0; g < G; g++) {	/* x <= z <= n x */
			row = glp_add_rows(P, 1);
			glp_set_row_bnds(P, row, GLP_UP, 0, 0);
			NZ(row, ZCOL(r, g), 1);
			NZ(row, XCOL(r, g), -n);
			row = glp_add_rows(P, 1);
			glp_set_row_bnds(P, row, GLP_LO, 0, 0);
			NZ(row, ZCOL(r, g), 1);
			NZ(row, XCOL(r, g), -1);
		}
	row = glp_add_rows(P, 1);	/* every layer once */
	glp_set_row_bnds(P, row, GLP_FX, n, n);
	for (r = 0; r < pp; r++)
		for (g = 0; g < G; g++)
			NZ(row, ZCOL(r, g), 1);
	for (r = 0; r < pp; r++) {	/* bottleneck */
		row = glp_add_rows(P, 1);
		glp_set_row_bnds(P, row, GLP_UP, 0, 0);
		for (g = 0; g < G; g++)
			NZ(row, ZCOL(r, g), tbar[g]);
		NZ(row, ncol, -1);
	}
	for (r = 0; r < pp; r++) {	/* memory, each row scaled to <= 1 */
		double w = sbar + p->inflight[r] * abar;
		double e = r == pp - 1 ? extra : 0;

		for (g = 0; g < G; g++) {
			double cap = p->cap[g], m = fmax(0, -cap), sc;

			if (p->ranks[g] == 0 || cap == INFINITY)
				continue;
			sc = fmax(fmax(fabs(w * n), fabs(e + m)), fabs(cap + m));
			if (!(sc > 0) || !isfinite(sc))
				sc = 1;
			row = glp_add_rows(P, 1);
			glp_set_row_bnds(P, row, GLP_UP, 0, (cap + m) / sc);
			NZ(row, ZCOL(r, g), w / sc);
			NZ(row, XCOL(r, g), (e + m) / sc);
		}
	}
#undef NZ
	glp_load_matrix(P, nz, ia, ja, ar);

	glp_init_iocp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	if (time_limit_s > 0 && time_limit_s < INT_MAX / 1000.0)
		parm.tm_lim = (int)ceil(time_limit_s * 1000);
	glp_intopt(P, &parm);	/* the status below says what it found */
	switch (glp_mip_status(P)) {
	case GLP_OPT:
		st = ILP_OPTIMAL;
		break;
	case GLP_FEAS:
		st = ILP_FEASIBLE;
		break;
	default:
		st = ILP_NONE;
	}
	if (st != ILP_NONE)
		for (r = 0; r < pp; r++) {
			int best = 0;
			for (g = 1; g < G; g++)
				if (glp_mip_col_val(P, XCOL(r, g)) >
				    glp_mip_col_val(P, XCOL(r, best)))
					best = g;
			group[r] = best;
		}
	glp_delete_prob(P);
	free(ia);
	free(ja);
	free(ar);
	free(tbar);
	return st;
}
