/* report_util.c: a strategy's parts as short texts for the report files
 * (layouts, node groups, schedule, CP flavour, uneven micro-batches, GiB),
 * its price and its per-rank costs (report.h, report_int.h); text escaped
 * for messages (report_escaped). */
#include "report.h"
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "plan.h"
#include "util.h"

/* Appends to buf like snprintf at offset *at; marks a cut with "...". */
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*at >= n)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *at, n - *at, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= n - *at) {
		if (n >= 4)
			memcpy(buf + n - 4, "...", 4);
		*at = n;
		return;
	}
	*at += (size_t)w;
}

/* Virtual stage k in layout notation ("E+10", "9", "9+L") at *at. */
static void stage_layout(char *buf, size_t n, size_t *at, const struct strategy *s,
			 const struct model *m, int k)
{
	int a = s->first[k], b = s->first[k + 1];
	int blocks = b - a - (a == 0) - (b == m->n_layer);
	const char *sep = "";

	if (a == 0) {
		append(buf, n, at, "E");
		sep = "+";
	}
	if (blocks > 0) {
		append(buf, n, at, "%s%d", sep, blocks);
		sep = "+";
	}
	if (b == m->n_layer)
		append(buf, n, at, "%sL", sep);
}

void report_layers(char *buf, size_t n, const struct plan_row *row, const struct model *m)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < s->n_stages; k++) {
		if (k)
			append(buf, n, &at, "|");
		stage_layout(buf, n, &at, s, m, k);
	}
}

void report_groups(char *buf, size_t n, const struct plan_row *row, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int r = 0; r < s->pp;) {
		int run = 1;

		while (r + run < s->pp && s->group[r + run] == s->group[r])
			run++;
		append(buf, n, &at, "%s%s", r ? "," : "", c->group[s->group[r]].name);
		if (run > 1)
			append(buf, n, &at, "*%d", run);
		r += run;
	}
}

const char *report_on_off(bool b)
{
	return b ? "on" : "off";
}

bool report_row_cost(const struct plan_row *row, double *per_iter, double *per_mtok)
{
	double tokens = (double)row->s.gbs * row->s.seq;

	if (row->usd_per_hour <= 0)
		return false;
	*per_iter = row->usd_per_hour * row->r.iter_s / 3600;
	*per_mtok = *per_iter / (tokens / 1e6);
	return true;
}

void report_schedule_label(char *buf, size_t n, const struct strategy *s)
{
	const char *v = s->vocab_par ? "+vocab" : strategy_uneven(s) ? "+uneven"
								     : "";

	if (strategy_slices(s) > 1)
		snprintf(buf, n, "slimpipe/%d%s", strategy_slices(s), v);
	else if (s->vp > 1)
		snprintf(buf, n, "%s/v%d%s", schedule_name(s->schedule), s->vp, v);
	else
		snprintf(buf, n, "%s%s", schedule_name(s->schedule), v);
}

void report_uneven_label(char *buf, size_t n, const struct strategy *s, const struct cluster *c)
{
	int q = strategy_uneven(s) ? cost_mixed_group(c, s) : -1;
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; q >= 0 && i < c->group[q].n_part; i++) {
		const char *name = c->group[c->group[q].part_group[i]].name;
		int r = c->group[q].part_gpus[i] / (s->tp * s->cp), lo = r > 0 ? s->uneven[i] / r : 0;
		int hi = r > 0 ? s->uneven[i] % r : 0;

		if (hi)
			append(buf, n, &at, "%s%s:%dx%d", at ? "+" : "", name, hi, lo + 1);
		if (r - hi)
			append(buf, n, &at, "%s%s:%dx%d", at ? "+" : "", name, r - hi, lo);
	}
}

const char *report_cp_label(const struct strategy *s)
{
	static char buf[64];

	if (s->cp_comm == CP_A2A_P2P && s->cp_a2a > 1)
		snprintf(buf, sizeof buf, "CP %d a2a+p2p (%d x %d)", s->cp, s->cp_a2a,
			 s->cp / s->cp_a2a);
	else
		snprintf(buf, sizeof buf, "CP %d %s", s->cp, cp_comm_name(s->cp_comm));
	return buf;
}

void report_gib_label(char *buf, size_t n, double bytes)
{
	double x = bytes / GiB;

	snprintf(buf, n, fabs(x - nearbyint(x)) < 0.05 ? "%.0f" : "%.1f", x);
}

void report_fullest(char *buf, size_t n, const struct cost_result *r)
{
	char cap[32];

	report_gib_label(cap, sizeof cap, r->fullest_cap);
	snprintf(buf, n, "%.1f/%s", r->fullest_bytes / GiB, cap);
}

void report_rank_layout(char *buf, size_t n, const struct strategy *s, const struct model *m,
			int q)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int j = 0, k = q; j < strategy_vp(s) && k < s->n_stages; k = strategy_stage(s, q, ++j)) {
		if (k > q)
			append(buf, n, &at, ",");
		stage_layout(buf, n, &at, s, m, k);
	}
}

void report_gpu_types(char *buf, size_t n, const struct plan_row *row, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	size_t at = 0;

	buf[0] = '\0';
	for (int r = 0; r < s->pp;) {
		int g = c->group[s->group[r]].gpu, run = 1;

		while (r + run < s->pp && c->group[s->group[r + run]].gpu == g)
			run++;
		append(buf, n, &at, "%s%s", r ? "," : "", c->gpu[g].name);
		if (run > 1)
			append(buf, n, &at, "*%d", run);
		r += run;
	}
}

struct cost_rank *report_row_ranks(const struct plan_row *row, const struct model *m,
				   const struct cluster *c)
{
	struct layer_costs lc;
	struct cost_rank *x;

	if (cost_layers(&lc, m, c, &row->s, NULL, NULL) < 0)
		return NULL;
	x = xcalloc((size_t)row->s.pp, sizeof *x);
	cost_ranks(x, m, c, &row->s, &lc);
	cost_layers_free(&lc);
	return x;
}

void report_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p == '\r')
			fputs("\\r", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			fprintf(f, "\\u%04x", *++p);
		else
			fputc(*p, f);
	}
}
