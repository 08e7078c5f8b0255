/* calibrate.h: fitting the cost model's constants of a cluster to measured
 * runs (`ampplan calibrate`): which constants the runs exercise and can
 * tell apart, a regularised fit of log-time error (Nelder-Mead in log
 * space), and leave-one-out errors before and after (calibrate.c). */
#ifndef AMPPLAN_CALIBRATE_H
#define AMPPLAN_CALIBRATE_H

#include <stdbool.h>
#include <stdio.h>

#include "plan.h"

struct cluster;
struct err;
struct model;

/* The constants calibration may fit: per GPU type (the first five) or per
 * node group (the link efficiencies), each a field of the cluster file
 * (calib_param_key) and of struct gpu_type or node_group. */
enum calib_param {
	CALIB_EFF_MAX,	 /* gpu_type.eff_max, "efficiency_max" */
	CALIB_EFF_HALF,	 /* gpu_type.eff_half_flop (FLOP),
			    "efficiency_half_gflop"; only where not 0 */
	CALIB_FP8_EFF,	 /* gpu_type.fp8_eff_max; only with FP8 */
	CALIB_FLASH_EFF, /* gpu_type.flash_eff (from FLASH_RATE x eff_max
			    where 0) */
	CALIB_HBM_EFF,	 /* gpu_type.hbm_eff (from COMPUTE_HBM_EFF where
			    0): the memory-bound share of HBM bandwidth */
	CALIB_INTRA_EFF, /* node_group.intra_eff, NCCL inside a node */
	CALIB_INTER_EFF, /* node_group.inter_eff, NCCL between nodes */
	CALIB_N_PARAM
};

/* Why a candidate constant ends as it does. */
enum calib_status {
	CALIB_FITTED,	     /* fitted: after holds the fitted value */
	CALIB_UNUSED,	     /* no run's time depends on it */
	CALIB_NOT_SEPARABLE, /* its effect on the runs is (nearly) that of
				constants before it: the runs cannot tell
				them apart */
	CALIB_NO_GAIN,	     /* exercised and separable, but fitting it too
				did not lower the objective or the
				cross-validated error (or the runs allow
				no more constants) */
	CALIB_KEPT	     /* in the best set, but the set did not beat
				the catalogue's cross-validated error */
};

/* Most candidate constants (5 per GPU type, 2 per node group). */
#define CALIB_MAX_CONSTS 128

/* A candidate constant: param of GPU type or node group index, its value
 * before and after (the unit of the struct field: fractions, FLOP), and
 * the bounds of the fit. */
struct calib_const {
	enum calib_param param;
	int index;
	double before, after;
	double lo, hi;
	double sensitivity; /* largest |d log t / d log value| over the runs */
	enum calib_status status;
};

/* One measured run: a model, its completed what-if options (a single
 * strategy), the measured seconds per iteration (INFINITY: it failed out
 * of memory) and the RUNS.csv line, for messages. The model is not owned
 * (plan_search sets its sequence length for each run). */
struct calib_run {
	struct model *m;
	struct plan_opts o;
	double measured_s;
	double peak_bytes; /* measured peak per GPU of the fullest GPU
			      (RUNS.csv measured_peak_GiB); <= 0: none */
	int line;
};

/* The memory allowance (cluster.mem_allowance) fitted to the measured
 * peaks: the median over the runs with a peak (and a time) of measured
 * minus predicted-without-allowance bytes, within [0, half the least GPU
 * memory]; taken only with 2 or more such runs and when its leave-one-out
 * peak MAPE (each run's allowance the median of the others') is at most
 * CALIB_MIN_GAIN times the file's own. Bytes; before -1: the cost model's
 * estimate (memory.h MEM_CONTEXT_BYTES plus MEM_FRAG_SHARE). */
struct calib_mem {
	int n_peak;
	bool fitted;
	double before, after;
	double mape_before, mape_after, cv_after; /* of the peaks, % */
};

/* Fits m from base[r] (bytes of the fullest GPU without allowance), the
 * runs' peak_bytes and pred[r] (the predicted peak with the file's
 * allowance before, bytes), for the runs with a time and a peak; cap the
 * upper bound (bytes). calibrate.c's part that is only arithmetic. */
void calib_fit_allowance(struct calib_mem *m, const struct calib_run *run, int n, const double *base,
			 const double *pred, double before, double cap);

/* Errors over runs: MAPE (%) and Spearman's rank correlation of the
 * predicted against the measured times of the runs with a time (n), and
 * how many of the n_all runs the model's fit test classes as measured (out
 * of memory or not). spearman is NAN with fewer than 2 runs. */
struct calib_stats {
	double mape, spearman;
	int n;
	int oom_agree, n_all;
};

/* What calib_fit found. pred_before and pred_after hold each run's
 * predicted seconds with the catalogue's and the fitted constants (both
 * malloc'd; free with calib_result_free); cv_* are the leave-one-out
 * predictions (each run predicted by a fit to the others) of the set of
 * least leave-one-out MAPE, and cv_after their errors. kept: that set did
 * not beat the catalogue's leave-one-out MAPE, so every after equals its
 * before (and pred_after pred_before). */
struct calib_result {
	struct calib_const k[CALIB_MAX_CONSTS];
	int n_k;
	int n_runs, n_timed, n_fitted;
	struct calib_stats fit_before, fit_after; /* on the runs it was fitted to */
	struct calib_stats cv_before, cv_after;	  /* leave-one-out */
	bool kept;
	struct calib_mem mem;
	long evaluations; /* runs costed in all */
	double *pred_before, *pred_after, *cv_pred;
};

/* The regularisation: the fit minimises
 *   (1/n) sum_runs |log t_pred - log t_measured|
 *     + CALIB_PRIOR_WEIGHT / n * sum_constants (log value - log before)^2
 * over the n timed runs: the negative log-posterior (times b / n) of
 * Laplace-distributed log errors of scale b = 0.05 (a 5% error per run;
 * the absolute error, as MAPE, lets one odd run move the fit less than a
 * square would) and a log-normal prior around the file's value of sigma
 * 0.32 (b / (2 sigma^2) = 0.25): a factor 1.4 either way is plausible, a
 * factor 2 needs the runs to agree on it. Chosen among 0.1 to 1 on the
 * validation files (README "Calibration") and synthetic runs
 * (tests/check_calibrate.c): at 1 (sigma 0.16) a constant the runs
 * exercise weakly moved a third of the way to its true value; at 0.4 and
 * 0.5 a fit to 5 rows passed the leave-one-out test and made the DGX H100
 * file's other rows worse (2.7% to 4.5-5.2%): the choice by leave-one-out
 * on 5 runs is noisy. */
#define CALIB_PRIOR_WEIGHT 0.25

/* Against overfitting a handful of runs: at most (n_timed - 1) /
 * CALIB_RUNS_PER_CONST constants, and a fitted set replaces the
 * file's only when its leave-one-out MAPE is at most CALIB_MIN_GAIN
 * times the file's (20% lower). Chosen on the validation files (README
 * "Calibration"): at 0.9 a fit to 5 rows of the Korthikanti file passed
 * (left-out MAPE 5.1% to 4.5%) and its other 3 rows got worse (4.6% to
 * 6.1%); at 0.8 no file's held-out rows get worse, and the fits from a
 * stale start all pass. (Measured with the leave-one-out of the order on
 * every run; nested, as now, no fit to those files' 5 rows passes from
 * the shipped constants even at 1.0.) */
#define CALIB_RUNS_PER_CONST 2
#define CALIB_MIN_GAIN	     0.8

/* Bounds of a fitted value: within a factor CALIB_MAX_FACTOR of its
 * before, and efficiencies in [0.01, 1] (the cluster file's range),
 * half-points in [1e6, 1e18] FLOP. */
#define CALIB_MAX_FACTOR 4.0

/* A constant is exercised when a 10% change of it moves some run's time by
 * at least CALIB_MIN_SENSITIVITY x 10% (0.1%), and separable from those
 * already chosen when the part of its effect on the runs that they do not
 * explain is at least CALIB_MIN_SEPARATION of its effect (an angle of
 * about 6 degrees). */
#define CALIB_MIN_SENSITIVITY 0.01
#define CALIB_MIN_SEPARATION  0.1

/* The cluster-file key of param ("efficiency_max", ...) and whether it
 * belongs to a node group (else to a GPU type). */
const char *calib_param_key(enum calib_param param);
bool calib_param_per_group(enum calib_param param);

/* Fits the constants of cluster c (real node groups only) to runs[0..n).
 * Each run is costed on c, or, when it uses fewer GPUs than c has
 * (tp x pp x dp x cp), on c's one node group cut to that many (nodes of
 * gpus_per_node, or one node of fewer GPUs).
 * Candidates: the calib_param of each GPU type and group of c. Those
 * exercised are ordered by forward selection (each step the one whose fit
 * with those before it has the least objective, among those separable from
 * them by Gram-Schmidt on their log-sensitivity columns over the timed
 * runs), up to (n_timed - 1) / CALIB_RUNS_PER_CONST of them and while one
 * lowers the objective. How many to fit is chosen by leave-one-out: each
 * timed run is predicted by the fit to the others of the first s
 * constants that forward selection takes on those others (nested, so the
 * run left out takes no part in choosing them either), and the s of least
 * MAPE is fitted to all runs (the first s of the order on all runs), unless
 * its MAPE is above
 * CALIB_MIN_GAIN times the catalogue's own (res->kept). Returns 0, or -1 with e set: a run that
 * cannot be costed (e names its line), fewer than 1 + CALIB_RUNS_PER_CONST
 * (3) runs with a time (too few to fit one constant), or no constant a
 * run exercises. res is filled on success (free with
 * calib_result_free). */
int calib_fit(struct calib_result *res, const struct cluster *c, struct calib_run *runs, int n,
	      struct err *e);

/* Sets the after values of res's constants into c (a cluster loaded from
 * the same file as calib_fit's). */
void calib_apply(struct cluster *c, const struct calib_result *res);

/* The value of param of GPU type or node group index in c, as calib_fit
 * reads it (flash_eff 0 as FLASH_RATE x eff_max, hbm_eff 0 as
 * COMPUTE_HBM_EFF). */
double calib_get(const struct cluster *c, enum calib_param param, int index);

/* Frees what calib_fit allocated in res (the per-run predictions), not res
 * itself, and clears their pointers. */
void calib_result_free(struct calib_result *res);

/* The label of status in the table and the calibration block ("fitted",
 * "not exercised", ...). */
const char *calib_status_name(enum calib_status status);

/* Prints res as tables on out: each run (its RUNS.csv line, measured,
 * predicted before and after, and left out), each candidate constant
 * (before, after, the largest sensitivity, status), and MAPE, Spearman and
 * out-of-memory agreement before and after, on the runs fitted and left
 * out one at a time. */
void calib_print(FILE *out, const struct cluster *c, const struct calib_result *res,
		 const struct calib_run *runs);

/* Writes the cluster file at src (the one c was loaded from) to out with
 * the fitted constants of res set where they belong (gpu_types.NAME.KEY,
 * groups[i].KEY; a half-point in GFLOP; where efficiency_max is fitted on
 * a type with FP8, its fp8_efficiency_max as well, which the loader would
 * otherwise take from the new efficiency_max) and a "calibration" block:
 * the runs file, runs used and timed, every candidate constant with its
 * before, after and status, and the errors before and after (fit and
 * leave-one-out). The file is written whole or not at all (outfile.h);
 * out may be src. Returns 0, or -1 with e set. */
int calib_write(const char *src, const char *out, const struct cluster *c,
		const struct calib_result *res, const char *runs_path, struct err *e);

#endif
