/* schedule.h (internal): pipeline schedules as the two weights of
 * T_pipe = a * max_k c_k + b * sum_k c_k, and the micro-batches of
 * activations each pipeline rank holds. */
#ifndef AMPPLAN_SCHEDULE_H
#define AMPPLAN_SCHEDULE_H

#include "strategy.h"

/* The weights a, b for schedule sc with m micro-batches, v virtual stages
 * per rank (interleaved only) and rho = the share of a stage's time that is
 * forward (+ recomputation), used by ZB-H1. */
void schedule_weights(enum schedule sc, int m, int v, double rho, double *a,
		      double *b);

/* Micro-batches of activations held by one virtual stage of pipeline rank
 * `rank` (0-based) of pp ranks with v virtual stages per rank: for
 * interleaved the rank's chunk activations spread evenly over its v chunks,
 * so the value may be fractional. */
double schedule_inflight(enum schedule sc, int pp, int v, int m, int rank);

/* a * max_k c[k] + b * sum_k c[k] over n stages. */
double schedule_time(double a, double b, const double *c, int n);

#endif
