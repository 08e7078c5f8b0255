/* calib_table.c: what `ampplan calibrate` prints (see calibrate.h
 * calib_print). */
#include <math.h>
#include <stdio.h>

#include "calibrate.h"
#include "cluster.h"
#include "memory.h"

/* "12.345" or "inf" (a run out of memory). */
static void seconds(FILE *out, double s)
{
	if (isfinite(s))
		fprintf(out, " %10.3f", s);
	else
		fprintf(out, " %10s", "inf");
}

static void error_pct(FILE *out, double pred, double meas)
{
	if (isfinite(meas))
		fprintf(out, " %+7.1f%%", 100 * (pred - meas) / meas);
	else
		fprintf(out, " %8s", "-");
}

static void stats_row(FILE *out, const char *what, const struct calib_stats *s)
{
	fprintf(out, "  %-28s %7.1f%%", what, s->mape);
	if (isfinite(s->spearman))
		fprintf(out, " %9.3f", s->spearman);
	else
		fprintf(out, " %9s", "-");
	fprintf(out, "   %d/%d\n", s->oom_agree, s->n_all);
}

/* An allowance as "2.1 GiB", or the cost model's estimate for -1. */
static const char *allowance(char *buf, size_t n, double bytes)
{
	if (bytes < 0)
		snprintf(buf, n, "the estimate (%.1f GiB + %.0f%% of activations)",
			 MEM_CONTEXT_BYTES / 1073741824.0, 100 * MEM_FRAG_SHARE);
	else
		snprintf(buf, n, "%.2f GiB", bytes / 1073741824.0);
	return buf;
}

void calib_print(FILE *out, const struct cluster *c, const struct calib_result *res,
		 const struct calib_run *runs)
{
	char a[96], b[96];

	fprintf(out, "calibration of %s on %d runs (%d with a time, %d out of memory), %ld runs costed\n\n",
		c->name, res->n_runs, res->n_timed, res->n_runs - res->n_timed, res->evaluations);
	fprintf(out, "  %-6s %10s %10s %8s %10s %8s %10s %8s\n", "line", "measured", "before",
		"error", "after", "error", "left out", "error");
	for (int r = 0; r < res->n_runs; r++) {
		double m = runs[r].measured_s;

		fprintf(out, "  %-6d", runs[r].line);
		seconds(out, m);
		seconds(out, res->pred_before[r]);
		error_pct(out, res->pred_before[r], m);
		seconds(out, res->pred_after[r]);
		error_pct(out, res->pred_after[r], m);
		seconds(out, res->cv_pred[r]);
		error_pct(out, res->cv_pred[r], m);
		fputc('\n', out);
	}
	fprintf(out, "\n  %-22s %-24s %10s %10s %11s  %s\n", "constant", "of", "before", "after",
		"sensitivity", "status");
	for (int j = 0; j < res->n_k; j++) {
		const struct calib_const *k = &res->k[j];
		double scale = k->param == CALIB_EFF_HALF ? 1e-9 : 1; /* GFLOP */

		fprintf(out, "  %-22s %-24s %10.4g %10.4g %11.3f  %s\n", calib_param_key(k->param),
			calib_param_per_group(k->param) ? c->group[k->index].name : c->gpu[k->index].name,
			k->before * scale, k->after * scale, k->sensitivity, calib_status_name(k->status));
	}
	fprintf(out, "\n  %-28s %8s %9s   %s\n", "errors", "MAPE", "Spearman", "OOM agree");
	stats_row(out, "fitted runs, before", &res->fit_before);
	stats_row(out, "fitted runs, after", &res->fit_after);
	stats_row(out, "left out, before", &res->cv_before);
	stats_row(out, "left out, after", &res->cv_after);
	if (res->mem.n_peak < 2)
		fprintf(out, "\nmemory allowance: not fitted (%d runs with a time and measured_peak_GiB; it needs 2)\n",
			res->mem.n_peak);
	else
		fprintf(out, "\nmemory allowance: %s -> %s (%s), peak MAPE on %d runs %.1f%% -> %.1f%%, left out %.1f%%\n",
			allowance(a, sizeof a, res->mem.before), allowance(b, sizeof b, res->mem.after),
			res->mem.fitted ? "fitted" : "kept", res->mem.n_peak, res->mem.mape_before,
			res->mem.mape_after, res->mem.cv_after);
	if (res->kept)
		fprintf(out, "\nkept the file's constants: no fit lowered the left-out MAPE by 20%% from %.1f%% (the best: %.1f%%)\n",
			res->cv_before.mape, res->cv_after.mape);
	else
		fprintf(out, "\nfitted %d constant%s: left-out MAPE %.1f%% -> %.1f%%\n", res->n_fitted,
			res->n_fitted == 1 ? "" : "s", res->cv_before.mape, res->cv_after.mape);
}
