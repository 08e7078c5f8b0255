/* report_int.h: (internal) what the report files share: a strategy's parts
 * as short texts (layouts, schedule, CP flavour, uneven micro-batches, GiB),
 * its price, and its per-rank costs. The public API is report.h. */
#ifndef AMPPLAN_REPORT_INT_H
#define AMPPLAN_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>

struct plan_row;
struct strategy;
struct model;
struct cluster;
struct cost_rank;

#define GiB (1024.0 * 1024.0 * 1024.0)

/* "on" or "off". */
const char *report_on_off(bool b);

/* The money row costs at its groups' prices: USD per iteration = USD per
 * hour of the GPUs it uses x iter_s / 3600, and per million tokens = that /
 * (gbs x seq / 1e6). Returns false (outputs untouched) when a group it uses
 * has no price. */
bool report_row_cost(const struct plan_row *row, double *per_iter, double *per_mtok);

/* "1f1b", "interleaved/v2", "slimpipe/8" (SlimPipe's 1F1B over 8 slices),
 * "1f1b+vocab" (vocabulary parallelism), "1f1b+uneven" (uneven
 * per-replica micro-batches), into buf of n bytes. */
void report_schedule_label(char *buf, size_t n, const struct strategy *s);

/* Uneven per-replica micro-batches (strategy.uneven) as
 * "p3:4x10+g4dn:3x5+g4dn:9x4": for each part of the mixed rank, in order,
 * GROUP:RxN for R replicas that run N micro-batches each (two terms for a
 * part whose replicas differ by one, the larger count first); "" when
 * even. At most n bytes, ending in "..." if cut. */
void report_uneven_label(char *buf, size_t n, const struct strategy *s, const struct cluster *c);

/* "CP 16 p2p", "CP 8 a2a", "CP 16 a2a+p2p (4 x 4)", in a static buffer
 * (overwritten by the next call). */
const char *report_cp_label(const struct strategy *s);

/* Bytes as GiB with one decimal, or none when it is a whole number of
 * GiB to that precision ("80", "79.6"), into buf of n bytes. */
void report_gib_label(char *buf, size_t n, double bytes);

/* Pipeline rank q's layers in layout notation (report_layers), its chunks
 * joined by ',', e.g. "E+9,20", at most n bytes, ending in "..." if cut. */
void report_rank_layout(char *buf, size_t n, const struct strategy *s, const struct model *m,
			int q);

/* GPU type of each pipeline rank, run-length coded like report_groups,
 * e.g. "H100*2,A100*2", at most n bytes, ending in "..." if cut. */
void report_gpu_types(char *buf, size_t n, const struct plan_row *row, const struct cluster *c);

/* cost_ranks for a row, into a malloc'd array of pp entries (caller
 * frees), or NULL if its layer costs cannot be computed again (they were
 * when it was ranked). */
struct cost_rank *report_row_ranks(const struct plan_row *row, const struct model *m,
				   const struct cluster *c);

#endif
