/* calib_memory.c: the memory allowance fitted to measured peaks (see
 * calibrate.h calib_fit_allowance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "util.h"

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of the k values v[0..k) other than v[skip] (skip -1: all),
 * within [0, cap]. */
static double median_but(const double *v, int k, int skip, double cap)
{
	double *w = xcalloc((size_t)k, sizeof *w), m;
	int n = 0;

	for (int i = 0; i < k; i++)
		if (i != skip)
			w[n++] = v[i];
	qsort(w, (size_t)n, sizeof *w, by_value);
	m = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
	free(w);
	return fmin(fmax(m, 0), cap);
}

void calib_fit_allowance(struct calib_mem *m, const struct calib_run *run, int n, const double *base,
			 const double *pred, double before, double cap)
{
	double *gap = xcalloc((size_t)n + 1, sizeof *gap), a;
	int *at = xcalloc((size_t)n + 1, sizeof *at), k = 0;

	memset(m, 0, sizeof *m);
	m->before = m->after = before;
	for (int r = 0; r < n; r++)
		if (run[r].peak_bytes > 0 && isfinite(run[r].measured_s)) {
			gap[k] = run[r].peak_bytes - base[r];
			at[k++] = r;
		}
	m->n_peak = k;
	if (k >= 2) {
		a = median_but(gap, k, -1, cap);
		for (int i = 0; i < k; i++) {
			double peak = run[at[i]].peak_bytes;

			m->mape_before += 100 * fabs(pred[at[i]] - peak) / peak / k;
			m->mape_after += 100 * fabs(base[at[i]] + a - peak) / peak / k;
			m->cv_after += 100 * fabs(base[at[i]] + median_but(gap, k, i, cap) - peak) / peak / k;
		}
		m->fitted = m->cv_after < CALIB_MIN_GAIN * m->mape_before;
		if (m->fitted)
			m->after = a;
		else
			m->mape_after = m->mape_before;
	}
	free(gap);
	free(at);
}
