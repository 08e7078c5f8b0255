/* plan.c: the search's entry point (plan_search): the options completed,
 * the search run on the threads (pool.c), its rows priced, ranked and the
 * top refined (refine.c); with the cost objective, on each subset of the
 * node groups (see plan.h; the steps in search_int.h). */
#define _POSIX_C_SOURCE 200809L
#include "plan.h"

#include <stdlib.h>
#include <time.h>

#include "cluster.h"
#include "model.h"
#include "search_int.h"
#include "trainer.h"
#include "util.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Rows that fit first, and of them those a trainer runs. */
static int launch_order(const struct plan_row *x, const struct plan_row *y)
{
	bool fx = !x->why[0], fy = !y->why[0];

	if (fx != fy)
		return fx ? -1 : 1;
	if (fx && !x->trainers != !y->trainers)
		return x->trainers ? -1 : 1;
	return 0;
}

static int by_throughput(const void *a, const void *b)
{
	const struct plan_row *x = a, *y = b;
	int o = launch_order(x, y);

	if (o)
		return o;
	if (x->r.tokens_per_s != y->r.tokens_per_s)
		return x->r.tokens_per_s > y->r.tokens_per_s ? -1 : 1;
	if (x->r.peak_bytes != y->r.peak_bytes)
		return x->r.peak_bytes < y->r.peak_bytes ? -1 : 1;
	/* then the choices, so that the order never depends on the threads */
	const int kx[] = { x->s.tp, x->s.cp, x->s.pp, x->s.dp, x->s.ep, x->s.mbs,
			   x->s.schedule, x->s.vp, x->s.recompute, x->s.zero, x->s.fp8 };
	const int ky[] = { y->s.tp, y->s.cp, y->s.pp, y->s.dp, y->s.ep, y->s.mbs,
			   y->s.schedule, y->s.vp, y->s.recompute, y->s.zero, y->s.fp8 };
	for (size_t i = 0; i < sizeof kx / sizeof *kx; i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return 0;
}

/* The ranking by cost: USD per million tokens, the least first (the
 * tokens per iteration are the same for every row, so USD per hour x
 * iter_s orders as they do), then as by_throughput. Rows that fit come
 * first; every row has a price (plan_opts_check). */
static int by_cost(const void *a, const void *b)
{
	const struct plan_row *x = a, *y = b;
	double cx = x->usd_per_hour * x->r.iter_s, cy = y->usd_per_hour * y->r.iter_s;
	int o = launch_order(x, y);

	if (o)
		return o;
	if (cx != cy)
		return cx < cy ? -1 : 1;
	return by_throughput(a, b);
}

/* plan_search on one cluster (every group in use). */
static int search_groups(struct plan **out, struct model *m, const struct cluster *c,
			 const struct plan_opts *o, struct err *e)
{
	struct search S = { .m = m, .c = c, .o = o };
	struct strategy s = { 0 };
	struct plan_opts opts = *o;
	double t0 = now();
	int rc = 0;

	if (opts.seq && model_set_seq(m, opts.seq, e))
		return -1;
	opts.seq = m->seq;
	opts.gbs = opts.gbs ? opts.gbs : m->gbs;
	if (plan_opts_check(m, c, &opts, e))
		return -1;
	if (opts.layout) {
		int vp = opts.vp ? opts.vp : 1;

		if ((long)opts.pp * vp > MAX_STAGES)
			return err_set(e, "--layout: pp x vp (%ld) exceeds %d stages", (long)opts.pp * vp,
				       MAX_STAGES);
		if (plan_layout_parse(opts.layout, m, opts.pp * vp, S.layout, e))
			return -1;
		S.fixed = true;
	}
	/* DeepSpeed's ZeRO keeps gradients in the training dtype, and so does
	 * Megatron under fp16; Megatron's bf16 keeps fp32 main gradients
	 * (COSTMODEL.md "Precision and memory per trainer"). */
	if (!opts.grad_bytes)
		opts.grad_bytes = opts.trainer == TRAINER_DEEPSPEED || m->fp16 ? 2 : 4;
	S.fp8_ok = trainer_allows(opts.trainer, FEATURE_FP8, &s);
	for (int g = 0; g < c->n_group; g++)
		if (c->gpu[c->group[g].gpu].peak_fp8_flops <= 0)
			S.fp8_ok = false;
	S.o = &opts;
	S.p = xcalloc(1, sizeof *S.p);
	s.gbs = opts.gbs;
	s.seq = opts.seq;
	s.attn = (enum attention)opts.attn;
	s.unfused_norm = opts.unfused_norm;
	s.moe_balance = (enum moe_balance)opts.moe_balance;
	s.moe_capacity = opts.moe_capacity;
	s.grad_bytes = opts.grad_bytes;
	rc = pool_run(&S, &s, e);
	if (opts.progress)
		opts.progress(1.0, opts.progress_arg);
	if (rc) {
		plan_free(S.p);
		return -1;
	}
	for (int i = 0; i < S.p->n_row; i++) {
		S.p->row[i].usd_per_hour = cluster_price_per_hour(c, &S.p->row[i].s);
		S.p->row[i].trainers = trainer_mask(m, c, &S.p->row[i].s);
	}
	if (S.p->n_row)
		qsort(S.p->row, (size_t)S.p->n_row, sizeof *S.p->row,
		      opts.objective == PLAN_COST ? by_cost : by_throughput);
	if (opts.objective == PLAN_THROUGHPUT && refine_rows(&S, c))
		qsort(S.p->row, (size_t)S.p->n_row, sizeof *S.p->row, by_throughput);
	while (S.p->n_feasible < S.p->n_row && !S.p->row[S.p->n_feasible].why[0])
		S.p->n_feasible++;
	S.p->search_s = now() - t0;
	*out = S.p;
	return 0;
}

/* The progress of the search on subset i of n: its fraction scaled into
 * [i / n, (i + 1) / n]. */
struct subset_progress {
	const struct plan_opts *o;
	int i, n;
};

static void subset_progress(double done, void *arg)
{
	const struct subset_progress *sp = arg;

	sp->o->progress((sp->i + done) / sp->n, sp->o->progress_arg);
}

/* Appends the rows of p, found on the subset mask of c's groups, to all,
 * their node groups renumbered as in c, and adds up the counts. */
static void add_subset(struct plan *all, const struct plan *p, const struct cluster *c,
		       unsigned mask)
{
	int map[MAX_GROUPS], k = 0;

	for (int g = 0; g < c->n_group; g++)
		if (mask >> g & 1)
			map[k++] = g;
	all->row = xreallocarray(all->row, (size_t)(all->n_row + p->n_row), sizeof *all->row);
	for (int i = 0; i < p->n_row; i++) {
		struct plan_row *r = &all->row[all->n_row++];

		*r = p->row[i];
		for (int j = 0; j < r->s.n_stages; j++)
			r->s.group[j] = (unsigned char)map[r->s.group[j] < k ? r->s.group[j] : 0];
	}
	all->evaluated += p->evaluated;
	all->work += p->work;
	if (p->budget)
		all->budget = p->budget;
	all->ilp_optimal += p->ilp_optimal;
	all->ilp_stopped += p->ilp_stopped;
	all->ilp_failed += p->ilp_failed;
	all->truncated |= p->truncated;
	all->degrees += p->degrees;
	all->degrees_searched += p->degrees_searched;
}

int plan_search(struct plan **out, struct model *m, const struct cluster *c,
		const struct plan_opts *o, struct err *e)
{
	unsigned full = (1u << c->n_group) - 1;
	struct subset_progress sp = { o, 0, (int)full };
	struct plan_opts so = *o;
	struct cluster *x = cluster_mix(c);
	struct plan *all;
	double t0 = now();

	if (o->objective != PLAN_COST || c->n_group == 1 || plan_opts_what_if(o)) {
		if (search_groups(out, m, x, o, e)) {
			cluster_free(x);
			return -1;
		}
		(*out)->cluster = x;
		return 0;
	}
	if (c->n_group > PLAN_COST_MAX_GROUPS) {
		cluster_free(x);
		return err_set(e, "--objective cost searches each subset of the node groups: at most %d groups, not %d",
			       PLAN_COST_MAX_GROUPS, c->n_group);
	}
	if (o->progress) {
		so.progress = subset_progress;
		so.progress_arg = &sp;
	}
	all = xcalloc(1, sizeof *all);
	all->cluster = x;
	for (unsigned mask = 1; mask <= full; mask++, sp.i++) {
		/* the whole cluster with its mixed groups; a subset without */
		struct cluster *sub = mask == full ? x : cluster_subset(c, mask);
		struct plan *p = NULL;
		int rc = search_groups(&p, m, sub, &so, e);

		if (rc) {
			if (sub != x)
				cluster_free(sub);
			plan_free(all);
			return -1;
		}
		if (sub == x)
			add_subset(all, p, x, (1u << x->n_group) - 1);
		else
			add_subset(all, p, c, mask);
		if (sub != x)
			cluster_free(sub);
		plan_free(p);
	}
	if (all->n_row)
		qsort(all->row, (size_t)all->n_row, sizeof *all->row, by_cost);
	while (all->n_feasible < all->n_row && !all->row[all->n_feasible].why[0])
		all->n_feasible++;
	all->search_s = now() - t0;
	all->subsets = (int)full;
	*out = all;
	return 0;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	cluster_free(p->cluster);
	free(p->row);
	free(p);
}
