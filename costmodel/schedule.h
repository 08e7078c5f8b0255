/* schedule.h (internal): pipeline schedules as the two weights of
 * T_pipe = a * max_k c_k + b * sum_k c_k, and the micro-batches of
 * activations each pipeline rank holds. */
#ifndef AMPPLAN_SCHEDULE_H
#define AMPPLAN_SCHEDULE_H

#include "strategy.h"

/* The weights a, b over the virtual stages' c_k for schedule sc with m
 * micro-batches, v virtual stages per rank (schedule_virtual only) and rho
 * = the share of a stage's time that is forward (+ recomputation), used by
 * the zero-bubble schedules. For virtual stages an upper estimate (the
 * partition DP's objective). */
void schedule_weights(enum schedule sc, int m, int v, double rho, double *a,
		      double *b);

/* The weights over the ranks' totals C_r (T = a max_r C_r + b sum_r C_r;
 * cost_evaluate's time): the same as schedule_weights without virtual
 * stages. */
void schedule_rank_weights(enum schedule sc, int m, int v, double rho, double *a,
			   double *b);

/* Micro-batches of activations held by virtual stage k (0-based; for
 * k < pp, the first stage of pipeline rank k) of pp ranks with v virtual
 * stages per rank: for interleaved the rank's chunk activations spread
 * evenly over its v chunks, so the value may be fractional. */
double schedule_inflight(enum schedule sc, int pp, int v, int m, int k);

/* The share, 0 to 1, of a rank's forward and backward passes that run in
 * forward-backward pairs hiding each other's communication (DualPipe,
 * DualPipeV; 0 for the others), for pp ranks and m micro-batches. */
double schedule_fb_paired(enum schedule sc, int pp, int m);

/* a * max_k c[k] + b * sum_k c[k] over n stages. */
double schedule_time(double a, double b, const double *c, int n);

#endif
