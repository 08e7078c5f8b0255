/* calibrate.c: the constants measured runs can identify, their regularised
 * fit (Nelder-Mead in log space) and its leave-one-out errors (see
 * calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "compute.h"
#include "model.h"
#include "util.h"

static const char *const param_keys[CALIB_N_PARAM] = {
	"efficiency_max", "efficiency_half_gflop", "fp8_efficiency_max", "flash_efficiency",
	"hbm_efficiency", "intra_node_efficiency", "inter_node_efficiency"
};

const char *calib_param_key(enum calib_param param)
{
	return param_keys[param];
}

bool calib_param_per_group(enum calib_param param)
{
	return param == CALIB_INTRA_EFF || param == CALIB_INTER_EFF;
}

double calib_get(const struct cluster *c, enum calib_param param, int index)
{
	const struct gpu_type *g = &c->gpu[index];

	switch (param) {
	case CALIB_EFF_MAX:
		return g->eff_max;
	case CALIB_EFF_HALF:
		return g->eff_half_flop;
	case CALIB_FP8_EFF:
		return g->fp8_eff_max;
	case CALIB_FLASH_EFF:
		return g->flash_eff > 0 ? g->flash_eff : FLASH_RATE * g->eff_max;
	case CALIB_HBM_EFF:
		return g->hbm_eff > 0 ? g->hbm_eff : COMPUTE_HBM_EFF;
	case CALIB_INTRA_EFF:
		return c->group[index].intra_eff;
	default:
		return c->group[index].inter_eff;
	}
}

/* Sets param of index in c to v. */
static void set_value(struct cluster *c, enum calib_param param, int index, double v)
{
	struct gpu_type *g = &c->gpu[index];

	switch (param) {
	case CALIB_EFF_MAX:
		g->eff_max = v;
		break;
	case CALIB_EFF_HALF:
		g->eff_half_flop = v;
		break;
	case CALIB_FP8_EFF:
		g->fp8_eff_max = v;
		break;
	case CALIB_FLASH_EFF:
		g->flash_eff = v;
		break;
	case CALIB_HBM_EFF:
		g->hbm_eff = v;
		break;
	case CALIB_INTRA_EFF:
		c->group[index].intra_eff = v;
		break;
	default:
		c->group[index].inter_eff = v;
	}
}

void calib_apply(struct cluster *c, const struct calib_result *res)
{
	for (int j = 0; j < res->n_k; j++)
		if (res->k[j].status == CALIB_FITTED)
			set_value(c, res->k[j].param, res->k[j].index, res->k[j].after);
	if (res->mem.fitted)
		c->mem_allowance = res->mem.after;
}

void calib_result_free(struct calib_result *res)
{
	free(res->pred_before);
	free(res->pred_after);
	free(res->cv_pred);
	res->pred_before = res->pred_after = res->cv_pred = NULL;
}

/* The fit's state: the runs, each on its own copy of the cluster (cut to
 * its GPUs), the candidates, and which of them a fit moves. */
struct fit {
	struct calib_run *run;
	int n;
	struct cluster **rc; /* per run */
	struct calib_const *k;
	int n_k;
	int *sel, n_sel; /* indices into k of the constants fitted */
	bool *use;	 /* runs in the fit (a fold leaves one out) */
	/* with lin, objective() costs nothing: each timed run i's log time
	 * moves from its log error lr[i] (log measured / predicted at the
	 * before values) by sum_j S[j * nt + i] x (log value_j - log
	 * before_j), its sensitivities to first order */
	const double *S, *lr;
	int nt;
	bool lin;
	struct err *e;
	bool failed;
	long evals;
};

/* Seconds per iteration of run r on its cluster as it stands, and whether
 * it fits. Returns 0, or -1 with f->e naming the run's line. */
static int predict(struct fit *f, int r, double *t, bool *fits, double *fullest)
{
	struct plan *p = NULL;
	struct plan_row top;
	struct err e = { "" };

	f->evals++;
	if (plan_search(&p, f->run[r].m, f->rc[r], &f->run[r].o, &e))
		goto fail;
	if (!p->n_row) {
		err_set(&e, "no strategy to evaluate (the trainer's rules or the batch exclude it)");
		goto fail;
	}
	plan_row_get(p, 0, &top);
	*t = top.r.iter_s;
	if (fits)
		*fits = top.r.fits;
	if (fullest)
		*fullest = top.r.fullest_bytes;
	plan_free(p);
	return 0;
fail:
	plan_free(p);
	f->failed = true;
	return err_set(f->e, "line %d: %s", f->run[r].line, e.msg);
}

/* Sets constant j (an index into f->k) to v on every run's cluster. */
static void set_all(struct fit *f, int j, double v)
{
	for (int r = 0; r < f->n; r++)
		set_value(f->rc[r], f->k[j].param, f->k[j].index, v);
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi
				    : v;
}

/* Sets the selected constants to exp(x[i]), within their bounds. */
static void set_selected(struct fit *f, const double *x)
{
	for (int i = 0; i < f->n_sel; i++) {
		const struct calib_const *k = &f->k[f->sel[i]];

		set_all(f, f->sel[i], clamp(exp(x[i]), k->lo, k->hi));
	}
}

/* The objective at x (calibrate.h CALIB_PRIOR_WEIGHT), over the timed
 * runs in use; HUGE_VAL once a run fails. */
static double objective(struct fit *f, const double *x)
{
	double sum = 0, prior = 0, t;
	int n = 0;

	if (f->failed)
		return HUGE_VAL;
	if (!f->lin)
		set_selected(f, x);
	for (int r = 0, i = 0; r < f->n; r++) {
		if (!isfinite(f->run[r].measured_s))
			continue;
		if (f->lin && f->use[r]) {
			double d = f->lr[i];

			for (int j = 0; j < f->n_sel; j++) {
				const struct calib_const *k = &f->k[f->sel[j]];

				d -= f->S[f->sel[j] * f->nt + i] *
				     log(clamp(exp(x[j]), k->lo, k->hi) / k->before);
			}
			sum += fabs(d);
			n++;
		} else if (f->use[r]) {
			if (predict(f, r, &t, NULL, NULL))
				return HUGE_VAL;
			sum += fabs(log(t / f->run[r].measured_s));
			n++;
		}
		i++;
	}
	for (int i = 0; i < f->n_sel; i++) {
		const struct calib_const *k = &f->k[f->sel[i]];
		double v = clamp(exp(x[i]), k->lo, k->hi);

		prior += pow(log(v / k->before), 2);
	}
	return n ? (sum + CALIB_PRIOR_WEIGHT * prior) / n : 0;
}

/* Nelder-Mead's simplex search (Nelder and Mead 1965; the standard
 * coefficients: reflection 1, expansion 2, contraction 0.5, shrink 0.5)
 * over the f->n_sel selected constants in log space, from their before
 * values with a first step of log 1.2 per axis; bounds by clamping inside
 * the objective. Stops after NM_MAX_EVALS x (dimensions + 1) objective
 * evaluations or when the simplex's values lie within NM_FTOL. Leaves
 * the best point in x (clamped to the bounds). */
#define NM_MAX_EVALS 100
#define NM_FTOL	     1e-7
#define NM_MAX_DIM   CALIB_MAX_CONSTS
static void nelder_mead(struct fit *f, double *x)
{
	int d = f->n_sel, evals = 0, limit = NM_MAX_EVALS * (d + 1);
	double(*p)[NM_MAX_DIM] = xcalloc((size_t)d + 1, sizeof *p);
	double *fv = xcalloc((size_t)d + 1, sizeof *fv);
	double c[NM_MAX_DIM], xr[NM_MAX_DIM], xe[NM_MAX_DIM], xc[NM_MAX_DIM];

	for (int i = 0; i <= d; i++) {
		for (int j = 0; j < d; j++)
			p[i][j] = log(f->k[f->sel[j]].before);
		if (i > 0) {
			const struct calib_const *k = &f->k[f->sel[i - 1]];
			/* step inward where the bound is near */
			p[i][i - 1] += log(k->before * 1.2) > log(k->hi) ? -log(1.2) : log(1.2);
		}
		fv[i] = objective(f, p[i]);
		evals++;
	}
	while (evals < limit && !f->failed) {
		int hi = 0, lo = 0, nh = 0;
		double fr;

		for (int i = 1; i <= d; i++) {
			if (fv[i] > fv[hi])
				hi = i;
			if (fv[i] < fv[lo])
				lo = i;
		}
		nh = hi == 0 ? (d > 0 ? 1 : 0) : 0;
		for (int i = 0; i <= d; i++)
			if (i != hi && fv[i] > fv[nh])
				nh = i;
		if (fv[hi] - fv[lo] < NM_FTOL)
			break;
		for (int j = 0; j < d; j++) {
			c[j] = 0;
			for (int i = 0; i <= d; i++)
				if (i != hi)
					c[j] += p[i][j] / d;
			xr[j] = c[j] + (c[j] - p[hi][j]);
		}
		fr = objective(f, xr);
		evals++;
		if (fr < fv[lo]) {
			double fe;

			for (int j = 0; j < d; j++)
				xe[j] = c[j] + 2 * (c[j] - p[hi][j]);
			fe = objective(f, xe);
			evals++;
			memcpy(p[hi], fe < fr ? xe : xr, sizeof(double) * (size_t)d);
			fv[hi] = fe < fr ? fe : fr;
		} else if (fr < fv[nh]) {
			memcpy(p[hi], xr, sizeof(double) * (size_t)d);
			fv[hi] = fr;
		} else {
			double fc;
			bool outside = fr < fv[hi];

			for (int j = 0; j < d; j++)
				xc[j] = outside ? c[j] + 0.5 * (xr[j] - c[j]) : c[j] + 0.5 * (p[hi][j] - c[j]);
			fc = objective(f, xc);
			evals++;
			if (fc < (outside ? fr : fv[hi])) {
				memcpy(p[hi], xc, sizeof(double) * (size_t)d);
				fv[hi] = fc;
			} else {
				for (int i = 0; i <= d; i++) {
					if (i == lo)
						continue;
					for (int j = 0; j < d; j++)
						p[i][j] = p[lo][j] + 0.5 * (p[i][j] - p[lo][j]);
					fv[i] = objective(f, p[i]);
					evals++;
				}
			}
		}
	}
	{
		int lo = 0;

		for (int i = 1; i <= d; i++)
			if (fv[i] < fv[lo])
				lo = i;
		for (int j = 0; j < d; j++) {
			const struct calib_const *k = &f->k[f->sel[j]];

			x[j] = log(clamp(exp(p[lo][j]), k->lo, k->hi));
		}
	}
	free(p);
	free(fv);
}

/* Fits the first m constants of order over the runs in f->use and leaves
 * them set on every run's cluster; values[] receives them (in order). */
static void fit_prefix(struct fit *f, const int *order, int m, double *values)
{
	double x[NM_MAX_DIM];

	f->n_sel = m;
	for (int i = 0; i < m; i++)
		f->sel[i] = order[i];
	nelder_mead(f, x);
	set_selected(f, x);
	for (int i = 0; i < m; i++)
		values[i] = exp(x[i]);
}

/* Average ranks (1-based, ties averaged) of v[0..n). */
static void ranks(const double *v, int n, double *rank)
{
	for (int i = 0; i < n; i++) {
		int less = 0, equal = 0;

		for (int j = 0; j < n; j++) {
			less += v[j] < v[i];
			equal += v[j] == v[i];
		}
		rank[i] = less + (equal + 1) / 2.0;
	}
}

/* Spearman's rho as the Pearson correlation of the average ranks. */
static double spearman(const double *a, const double *b, int n)
{
	double *ra = xcalloc((size_t)n, sizeof *ra), *rb = xcalloc((size_t)n, sizeof *rb);
	double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;

	ranks(a, n, ra);
	ranks(b, n, rb);
	for (int i = 0; i < n; i++) {
		ma += ra[i] / n;
		mb += rb[i] / n;
	}
	for (int i = 0; i < n; i++) {
		sab += (ra[i] - ma) * (rb[i] - mb);
		saa += (ra[i] - ma) * (ra[i] - ma);
		sbb += (rb[i] - mb) * (rb[i] - mb);
	}
	free(ra);
	free(rb);
	return n < 2 ? NAN : saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb)
						: 0;
}

/* The errors of predictions pred[] (and fit-test results fits[]) against
 * the runs' measurements. */
static void stats(struct calib_stats *s, const struct calib_run *run, int n, const double *pred,
		  const bool *fits)
{
	double *a = xcalloc((size_t)n + 1, sizeof *a), *b = xcalloc((size_t)n + 1, sizeof *b);

	memset(s, 0, sizeof *s);
	for (int r = 0; r < n; r++) {
		bool oom = !isfinite(run[r].measured_s);

		s->n_all++;
		s->oom_agree += oom == !fits[r];
		if (oom)
			continue;
		s->mape += 100 * fabs(pred[r] - run[r].measured_s) / run[r].measured_s;
		a[s->n] = pred[r];
		b[s->n++] = run[r].measured_s;
	}
	if (s->n)
		s->mape /= s->n;
	s->spearman = spearman(a, b, s->n);
	free(a);
	free(b);
}

/* Adds the candidates of c: per GPU type that a real group uses, then per
 * real group. */
static void candidates(struct fit *f, const struct cluster *c)
{
	static const double eff_lo = 0.01, eff_hi = 1;

	f->n_k = 0;
	for (int i = 0; i < c->n_gpu; i++) {
		bool used = false;

		for (int g = 0; g < c->n_group; g++)
			used |= !c->group[g].n_part && c->group[g].gpu == i;
		for (int p = CALIB_EFF_MAX; p <= CALIB_HBM_EFF && used; p++) {
			struct calib_const *k = &f->k[f->n_k];
			double v = calib_get(c, (enum calib_param)p, i);

			if ((p == CALIB_EFF_HALF && v <= 0) ||
			    (p == CALIB_FP8_EFF && c->gpu[i].peak_fp8_flops <= 0) ||
			    (p == CALIB_HBM_EFF && c->gpu[i].hbm_bw <= 0) || f->n_k == CALIB_MAX_CONSTS)
				continue;
			*k = (struct calib_const){ .param = (enum calib_param)p, .index = i, .before = v };
			k->lo = fmax(v / CALIB_MAX_FACTOR, p == CALIB_EFF_HALF ? 1e6 : eff_lo);
			k->hi = fmin(v * CALIB_MAX_FACTOR, p == CALIB_EFF_HALF ? 1e18 : eff_hi);
			f->n_k++;
		}
	}
	for (int g = 0; g < c->n_group; g++)
		for (int p = CALIB_INTRA_EFF; p <= CALIB_INTER_EFF && !c->group[g].n_part; p++) {
			struct calib_const *k = &f->k[f->n_k];
			double v = calib_get(c, (enum calib_param)p, g);

			if (f->n_k == CALIB_MAX_CONSTS)
				break;
			*k = (struct calib_const){ .param = (enum calib_param)p, .index = g, .before = v };
			k->lo = fmax(v / CALIB_MAX_FACTOR, eff_lo);
			k->hi = fmin(v * CALIB_MAX_FACTOR, eff_hi);
			f->n_k++;
		}
}

/* c cut to the gpus GPUs of a run (calib_fit), or NULL with e set. */
static struct cluster *run_cluster(const struct cluster *c, int gpus, int line, struct err *e)
{
	struct cluster *s;
	int real = 0;

	while (real < c->n_group && !c->group[real].n_part)
		real++;
	s = cluster_subset(c, (1u << real) - 1);
	if (gpus == s->total_gpus)
		return s;
	if (real > 1 || (gpus > s->group[0].gpus_per_node && gpus % s->group[0].gpus_per_node)) {
		err_set(e, "line %d: the run uses %d GPUs and the cluster has %d: a run on another number of GPUs than the cluster's needs a cluster of one node group, and whole nodes of it (or part of one node)",
			line, gpus, s->total_gpus);
		cluster_free(s);
		return NULL;
	}
	if (gpus < s->group[0].gpus_per_node)
		s->group[0].gpus_per_node = gpus;
	s->group[0].nodes = gpus / s->group[0].gpus_per_node;
	s->total_gpus = gpus;
	return s;
}

/* d log t / d log value of each candidate for each of the nt timed runs
 * (their predictions pred[] at the before values), by a 10% step (inward
 * at an upper bound), into S[j * nt + i]; sets each candidate's
 * sensitivity and puts its raw value (raw[j]) back. Returns 0 or -1. */
static int sensitivities(struct fit *f, const double *raw, const double *pred, int nt,
			 double *S)
{
	for (int j = 0; j < f->n_k; j++) {
		struct calib_const *k = &f->k[j];
		double step = k->before * 1.1 > k->hi ? 1 / 1.1 : 1.1, t;
		int i = 0;

		set_all(f, j, k->before * step);
		k->sensitivity = 0;
		for (int r = 0; r < f->n; r++) {
			if (!isfinite(f->run[r].measured_s))
				continue;
			if (predict(f, r, &t, NULL, NULL))
				return -1;
			S[j * nt + i] = log(t / pred[r]) / log(step);
			k->sensitivity = fmax(k->sensitivity, fabs(S[j * nt + i]));
			i++;
		}
		set_all(f, j, raw[j]);
	}
	return 0;
}

/* Puts every candidate back to its raw value (as the cluster holds it). */
static void reset(struct fit *f, const double *raw)
{
	for (int j = 0; j < f->n_k; j++)
		set_all(f, j, raw[j]);
}

/* The objective with every constant at raw (nothing fitted). */
static double objective_at_raw(struct fit *f, const double *raw)
{
	reset(f, raw);
	f->n_sel = 0;
	return objective(f, NULL);
}

/* Gram-Schmidt: column best of S (nt rows a column) projected out of the
 * columns not taken. */
static void project_out(const struct fit *f, double *S, int nt, const bool *taken, int best)
{
	double bb = 0;

	for (int r = 0; r < nt; r++)
		bb += S[best * nt + r] * S[best * nt + r];
	for (int j = 0; j < f->n_k && bb > 0; j++) {
		double dot = 0;

		if (taken[j])
			continue;
		for (int r = 0; r < nt; r++)
			dot += S[j * nt + r] * S[best * nt + r];
		for (int r = 0; r < nt; r++)
			S[j * nt + r] -= dot / bb * S[best * nt + r];
	}
}

/* Orders the exercised candidates by forward selection over the runs in
 * f->use: each step fits (fit_prefix, on the runs' first-order model:
 * struct fit's lin, so that choosing costs no run) the candidates taken so
 * far plus each candidate left, and takes the one whose fit has the least
 * objective, prior included (so that a constant that would have to move
 * far to explain the runs loses to one that explains them near its value),
 * among those separable from the ones taken: the part of its sensitivity
 * column f->S[j * nt + r] (r over the nt timed runs) that the taken columns
 * do not explain, by Gram-Schmidt, is at least CALIB_MIN_SEPARATION of its
 * norm. Stops at limit or when no candidate lowers the objective. Leaves
 * every constant at raw. With mark, sets every candidate's status: not
 * exercised, not separable from those taken, or else CALIB_NO_GAIN until a
 * fit takes it. Returns the number ordered. */
static int order_candidates(struct fit *f, const double *raw, int *order, int limit, bool mark)
{
	int nt = f->nt;
	bool taken[CALIB_MAX_CONSTS] = { false };
	double own[CALIB_MAX_CONSTS], values[NM_MAX_DIM], x[NM_MAX_DIM];
	double *P = xcalloc((size_t)f->n_k * (size_t)nt, sizeof *P), last;
	int m = 0;

	f->lin = true;
	last = objective_at_raw(f, raw);

	memcpy(P, f->S, sizeof *P * (size_t)f->n_k * (size_t)nt);
	for (int j = 0; j < f->n_k; j++) {
		own[j] = 0;
		for (int r = 0; r < nt; r++)
			own[j] += P[j * nt + r] * P[j * nt + r];
		own[j] = sqrt(own[j]);
	}
	while (m < limit && !f->failed) {
		int best = -1;
		double best_obj = last;

		for (int j = 0; j < f->n_k; j++) {
			double norm = 0, obj;

			if (taken[j] || f->k[j].sensitivity < CALIB_MIN_SENSITIVITY)
				continue;
			for (int r = 0; r < nt; r++)
				norm += P[j * nt + r] * P[j * nt + r];
			if (sqrt(norm) < CALIB_MIN_SEPARATION * own[j])
				continue;
			order[m] = j;
			fit_prefix(f, order, m + 1, values);
			for (int i = 0; i <= m; i++)
				x[i] = log(values[i]);
			obj = objective(f, x);
			if (obj < best_obj) {
				best = j;
				best_obj = obj;
			}
		}
		if (best < 0)
			break;
		taken[best] = true;
		order[m++] = best;
		last = best_obj;
		project_out(f, P, nt, taken, best);
	}
	/* the fits left their values set (fit_prefix); the first-order
	   objective read none of them */
	reset(f, raw);
	for (int j = 0; j < f->n_k && mark; j++) {
		double norm = 0;

		for (int r = 0; r < nt; r++)
			norm += P[j * nt + r] * P[j * nt + r];
		f->k[j].status = f->k[j].sensitivity < CALIB_MIN_SENSITIVITY ? CALIB_UNUSED
				 : taken[j] || sqrt(norm) >= CALIB_MIN_SEPARATION * own[j]
					 ? CALIB_NO_GAIN
					 : CALIB_NOT_SEPARABLE;
	}
	f->lin = false;
	free(P);
	return m;
}

/* Leave-one-out predictions of fits of at most s constants, each timed run
 * r predicted by the fit to the other runs of the first s (or fewer) of
 * fold[r][0..fold_m[r]), the order forward selection took on those runs
 * (cv[r]; a run whose fold took none, and the untimed, keep pred[r]).
 * Returns 0 or -1. */
static int cross_validate(struct fit *f, const double *raw, int (*fold)[CALIB_MAX_CONSTS],
			  const int *fold_m, int s, const double *pred, double *cv)
{
	double values[NM_MAX_DIM];

	for (int r = 0; r < f->n; r++) {
		int k = fold_m[r] < s ? fold_m[r] : s;

		cv[r] = pred[r];
		if (!isfinite(f->run[r].measured_s) || !k)
			continue;
		for (int q = 0; q < f->n; q++)
			f->use[q] = q != r;
		reset(f, raw);
		fit_prefix(f, fold[r], k, values);
		if (f->failed || predict(f, r, &cv[r], NULL, NULL))
			return -1;
	}
	for (int q = 0; q < f->n; q++)
		f->use[q] = true;
	reset(f, raw);
	return 0;
}

static double mape_of(const struct calib_run *run, int n, const double *pred)
{
	double sum = 0;
	int k = 0;

	for (int r = 0; r < n; r++)
		if (isfinite(run[r].measured_s)) {
			sum += 100 * fabs(pred[r] - run[r].measured_s) / run[r].measured_s;
			k++;
		}
	return k ? sum / k : 0;
}

/* Chooses how many constants to fit, by leave-one-out: for each timed run,
 * forward selection (order_candidates, at most m) on the other runs, so
 * that the run left out takes no part in choosing the constants either;
 * then each number s = 1..m cross-validated (cross_validate). Takes the s
 * of least leave-one-out MAPE unless it is not CALIB_MIN_GAIN times below
 * the file's (res->kept), fits the first s of order (the selection on
 * every run) to every run and fills res's statuses, afters, cv_pred,
 * cv_after and pred_after; cv is scratch of f->n. Returns 0 or -1. */
static int choose_and_fit(struct fit *f, const double *raw, const int *order, int m,
			  struct calib_result *res, const bool *fits, double *cv)
{
	double best_mape = HUGE_VAL, values[NM_MAX_DIM];
	int best = 0, n = f->n, rc = -1;
	int(*fold)[CALIB_MAX_CONSTS] = xcalloc((size_t)n, sizeof *fold);
	int *fold_m = xcalloc((size_t)n, sizeof *fold_m);

	memcpy(res->cv_pred, res->pred_before, sizeof(double) * (size_t)n);
	for (int r = 0; r < n; r++) {
		if (!isfinite(f->run[r].measured_s))
			continue;
		for (int q = 0; q < n; q++)
			f->use[q] = q != r;
		fold_m[r] = order_candidates(f, raw, fold[r], m, false);
	}
	for (int q = 0; q < n; q++)
		f->use[q] = true;
	for (int s = 1; s <= m; s++) {
		double mp;

		if (cross_validate(f, raw, fold, fold_m, s, res->pred_before, cv))
			goto done;
		mp = mape_of(f->run, n, cv);
		if (mp < best_mape) {
			best_mape = mp;
			best = s;
			memcpy(res->cv_pred, cv, sizeof(double) * (size_t)n);
		}
	}
	/* kept: cv_after still shows the best prefix's */
	if (!(best_mape < res->cv_before.mape * CALIB_MIN_GAIN))
		best = 0;
	stats(&res->cv_after, f->run, n, res->cv_pred, fits);
	res->kept = best == 0;
	if (res->kept) {
		for (int i = 0; i < m; i++)
			f->k[order[i]].status = CALIB_KEPT;
		memcpy(res->pred_after, res->pred_before, sizeof(double) * (size_t)n);
		rc = 0;
		goto done;
	}
	reset(f, raw);
	fit_prefix(f, order, best, values);
	for (int i = 0; i < best; i++) {
		f->k[order[i]].status = CALIB_FITTED;
		f->k[order[i]].after = values[i];
	}
	res->n_fitted = best;
	for (int r = 0; r < n; r++)
		if (predict(f, r, &res->pred_after[r], NULL, NULL))
			goto done;
	rc = 0;
done:
	free(fold);
	free(fold_m);
	return rc;
}

/* The memory allowance (calib_mem): each run with a time and a peak
 * costed without an allowance, the fit (calib_fit_allowance), and the fit
 * test of every run with the fitted one into fits_after (fits where none is
 * fitted); full[] the runs' predicted peaks before. Returns 0 or -1. */
static int fit_memory(struct fit *f, const struct cluster *c, struct calib_result *res,
		      const double *full, const bool *fits, bool *fits_after)
{
	double *base = xcalloc((size_t)f->n, sizeof *base), cap = HUGE_VAL, t;
	int rc = -1;

	memcpy(fits_after, fits, sizeof *fits * (size_t)f->n);
	for (int i = 0; i < c->n_gpu; i++)
		cap = fmin(cap, c->gpu[i].mem_bytes / 2);
	for (int r = 0; r < f->n; r++) {
		if (f->run[r].peak_bytes <= 0 || !isfinite(f->run[r].measured_s))
			continue;
		f->rc[r]->mem_allowance = 0;
		if (predict(f, r, &t, NULL, &base[r]))
			goto done;
		f->rc[r]->mem_allowance = c->mem_allowance;
	}
	calib_fit_allowance(&res->mem, f->run, f->n, base, full, c->mem_allowance, cap);
	for (int r = 0; r < f->n && res->mem.fitted; r++) {
		f->rc[r]->mem_allowance = res->mem.after;
		if (predict(f, r, &t, &fits_after[r], NULL))
			goto done;
	}
	rc = 0;
done:
	free(base);
	return rc;
}

int calib_fit(struct calib_result *res, const struct cluster *c, struct calib_run *runs, int n,
	      struct err *e)
{
	struct fit f = { .run = runs, .n = n, .e = e };
	double raw[CALIB_MAX_CONSTS], *S = NULL, *cv = NULL, *lr = NULL;
	bool *fits = xcalloc((size_t)n, sizeof *fits), *fits_after = xcalloc((size_t)n, sizeof *fits);
	double *full = xcalloc((size_t)n, sizeof *full);
	int order[CALIB_MAX_CONSTS], m, rc = -1;
	bool exercised = false;

	memset(res, 0, sizeof *res);
	res->n_runs = n;
	res->pred_before = xcalloc((size_t)n, sizeof(double));
	res->pred_after = xcalloc((size_t)n, sizeof(double));
	res->cv_pred = xcalloc((size_t)n, sizeof(double));
	cv = xcalloc((size_t)n, sizeof *cv);
	f.k = res->k;
	f.rc = xcalloc((size_t)n, sizeof *f.rc);
	f.use = xcalloc((size_t)n, sizeof *f.use);
	f.sel = xcalloc(CALIB_MAX_CONSTS, sizeof *f.sel);
	for (int r = 0; r < n; r++) {
		const struct plan_opts *o = &runs[r].o;

		f.use[r] = true;
		if (!(f.rc[r] = run_cluster(c, o->tp * o->pp * o->dp * o->cp, runs[r].line, e)))
			goto done;
		res->n_timed += isfinite(runs[r].measured_s);
	}
	candidates(&f, c);
	res->n_k = f.n_k;
	for (int j = 0; j < f.n_k; j++) {
		/* flash_eff and hbm_eff 0 stand for the compute model's */
		raw[j] = f.k[j].param == CALIB_FLASH_EFF ? c->gpu[f.k[j].index].flash_eff
			 : f.k[j].param == CALIB_HBM_EFF ? c->gpu[f.k[j].index].hbm_eff
							 : f.k[j].before;
		f.k[j].after = f.k[j].before;
	}
	for (int r = 0; r < n; r++)
		if (predict(&f, r, &res->pred_before[r], &fits[r], &full[r]))
			goto done;
	if (res->n_timed < 1 + CALIB_RUNS_PER_CONST) {
		err_set(e, "calibration needs at least %d runs with a measured time (not inf) to fit one constant and check it on a run left out, and %d of the %d have one",
			1 + CALIB_RUNS_PER_CONST, res->n_timed, n);
		goto done;
	}
	S = xcalloc((size_t)f.n_k * (size_t)res->n_timed, sizeof *S);
	if (sensitivities(&f, raw, res->pred_before, res->n_timed, S))
		goto done;
	lr = xcalloc((size_t)res->n_timed, sizeof *lr);
	for (int r = 0, i = 0; r < n; r++)
		if (isfinite(runs[r].measured_s))
			lr[i++] = log(runs[r].measured_s / res->pred_before[r]);
	f.S = S;
	f.lr = lr;
	f.nt = res->n_timed;
	m = order_candidates(&f, raw, order, (res->n_timed - 1) / CALIB_RUNS_PER_CONST, true);
	for (int j = 0; j < f.n_k; j++)
		exercised |= f.k[j].status != CALIB_UNUSED;
	if (!exercised) {
		err_set(e, "no run's time depends on a constant calibration fits (efficiency_max, efficiency_half_gflop, fp8_efficiency_max, flash_efficiency, hbm_efficiency, intra_node_efficiency, inter_node_efficiency) by 0.1%% or more for a 10%% change");
		goto done;
	}
	stats(&res->fit_before, runs, n, res->pred_before, fits);
	res->cv_before = res->fit_before; /* nothing fitted: the same predictions */
	if (choose_and_fit(&f, raw, order, m, res, fits, cv))
		goto done;
	if (fit_memory(&f, c, res, full, fits, fits_after))
		goto done;
	stats(&res->fit_after, runs, n, res->pred_after, fits_after);
	res->cv_after.oom_agree = res->fit_after.oom_agree;
	rc = 0;
done:
	res->evaluations = f.evals;
	for (int r = 0; r < n; r++)
		cluster_free(f.rc[r]);
	free(f.rc);
	free(f.use);
	free(f.sel);
	free(fits);
	free(fits_after);
	free(full);
	free(S);
	free(lr);
	free(cv);
	if (rc)
		calib_result_free(res);
	return rc;
}
