/* moe.c: the busiest expert-parallel rank's load (moe.h). */
#include "moe.h"

#include <math.h>

#include "model.h"
#include "strategy.h"

/* Phi^-1(p) for 0 < p < 1 by P. J. Acklam's rational approximation ("An
 * algorithm for computing the inverse normal cumulative distribution
 * function", 2003; relative error below 1.2e-9). */
static double inv_normal(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,
				    -2.759285104469687e+02, 1.383577518672690e+02,
				    -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02,
				    -1.556989798598866e+02, 6.680131188771972e+01,
				    -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01,
				    -2.400758277161838e+00, -2.549732539343734e+00,
				    4.374664141464968e+00, 2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01,
				    2.445134137142996e+00, 3.754408661907416e+00 };
	double q, r;

	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - 0.02425)
		return -inv_normal(1 - p);
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double moe_expected_max(int n)
{
	return n <= 1 ? 0 : inv_normal((n - 0.375) / (n + 0.25));
}

double moe_load_factor(const struct model *m, const struct strategy *s)
{
	double mu, nseq, c, lam = 1;
	int ep = s->ep;

	if (m->experts <= 0)
		return 1;
	if (ep > 1) {
		double fold = (double)strategy_etp(s) / s->tp, span = ep * fold / s->cp;

		mu = (double)s->mbs * s->seq / s->cp * fold * (m->top_k > 0 ? m->top_k : 1);
		nseq = s->mbs * (span > 1 ? span : 1);
		c = s->moe_balance == MOE_BALANCE_GLOBAL_BATCH ? MOE_SEQ_SKEW : 0;
		lam = 1 + moe_expected_max(ep) * sqrt((1 - 1.0 / ep) / mu + c * c / nseq);
	}
	if (s->moe_capacity >= 1 && (s->moe_pad || s->moe_capacity < lam))
		return s->moe_capacity;
	return lam;
}
