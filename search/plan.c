/* plan.c: the search over parallel strategies (see plan.h). */
#define _POSIX_C_SOURCE 200809L
#include "plan.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include "cluster.h"
#include "exhaustive.h"
#include "ilp.h"
#include "model.h"
#include "partition.h"
#include "trainer.h"
#include "util.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

void plan_opts_init(struct plan_opts *o)
{
	memset(o, 0, sizeof *o);
	o->schedule = -1;
	o->recompute = -1;
	o->zero = -1;
	o->trainer = -1;
	o->attn = ATTN_FLASH;
	o->cp_comm = -1;
	o->vocab_par = -1;
	o->uneven = -1;
	o->fp8 = o->sp = o->tp_overlap = o->grad_overlap = o->param_overlap = -1;
	o->grad_acc_fusion = -1;
	o->ilp_node_limit = ILP_NODE_LIMIT;
	o->place_dp_max = 20000;
}

void plan_opts_complete(struct plan_opts *o)
{
	if (o->vp > 1 && o->schedule < 0)
		o->schedule = SCHED_INTERLEAVED;
	if (!plan_opts_what_if(o))
		return;
	if (o->schedule < 0)
		o->schedule = SCHED_1F1B;
	if (o->recompute < 0)
		o->recompute = RECOMPUTE_NONE;
	if (o->zero < 0)
		o->zero = 0;
	if (!o->vp)
		o->vp = schedule_virtual((enum schedule)o->schedule) ? 2 : 1;
	if (o->fp8 < 0)
		o->fp8 = 0;
	if (o->vocab_par < 0)
		o->vocab_par = 0;
	if (o->uneven < 0)
		o->uneven = 0;
	if (!o->slices)
		o->slices = 1;
	if (o->tp_overlap < 0)
		o->tp_overlap = 0;
	if (o->grad_overlap < 0)
		o->grad_overlap = 0;
	if (o->param_overlap < 0)
		o->param_overlap = 0;
	o->keep_infeasible = true;
}

bool plan_opts_what_if(const struct plan_opts *o)
{
	return o->tp && o->pp && o->dp && o->cp && o->mbs;
}

/* One stage of a layout at *p: [E+][N][+L], at least one item. Sets *emb,
 * *blocks (at most max_blocks, the model's), *head and advances *p past
 * it. Returns 0, or -1 with e set. */
static int layout_stage(const char **p, const char *layout, int k, int n_stages,
			int max_blocks, bool *emb, long *blocks, bool *head, struct err *e)
{
	const char *q = *p;
	bool counted = false;

	*emb = *head = false;
	*blocks = 0;
	for (int item = 0;; item++) {
		if (*q == 'E') {
			if (k || item)
				return err_set(e, "--layout '%s': E (the embedding) may only begin the first stage",
					       layout);
			*emb = true;
			q++;
		} else if (*q == 'L') {
			*head = true;
			q++;
			if (k != n_stages - 1 || *q == '+')
				return err_set(e, "--layout '%s': L (final norm and head) may only end the last stage",
					       layout);
		} else if (isdigit((unsigned char)*q) && !counted) {
			char *end;

			*blocks = strtol(q, &end, 10);
			if (*blocks > max_blocks)
				return err_set(e, "--layout '%s': stage %d holds more blocks than the model's %d",
					       layout, k, max_blocks);
			counted = true;
			q = end;
		} else if (*q == '|' || !*q) {
			return err_set(e, item ? "--layout '%s': stage %d ends with '+'"
					       : "--layout '%s': stage %d is empty", layout, k);
		} else {
			return err_set(e, "--layout '%s': stage %d: expected %s, not '%s'", layout, k,
				       counted ? "L" : "E, a block count or L", q);
		}
		if (*q != '+')
			break;
		q++;
	}
	*p = q;
	return 0;
}

int plan_layout_parse(const char *layout, const struct model *m, int n_stages,
		      unsigned short *first, struct err *e)
{
	const char *p = layout;
	int count = 1, at = 0;
	long total = 0;

	for (const char *q = layout; *q; q++)
		count += *q == '|';
	if (count != n_stages)
		return err_set(e, "--layout '%s' has %d stages, but pp x vp is %d", layout, count,
			       n_stages);
	for (int k = 0; k < n_stages; k++) {
		bool emb, head;
		long blocks;

		if (layout_stage(&p, layout, k, n_stages, m->layers, &emb, &blocks, &head, e))
			return -1;
		if (k == 0 && !emb)
			return err_set(e, "--layout '%s': the first stage must begin with E (the embedding)",
				       layout);
		if (k == n_stages - 1 && !head)
			return err_set(e, "--layout '%s': the last stage must end with L (final norm and head)",
				       layout);
		if (!emb && !head && !blocks)
			return err_set(e, "--layout '%s': stage %d holds no layers", layout, k);
		total += blocks;
		if (total > m->layers)
			return err_set(e, "--layout '%s': the blocks add up to more than the model's %d",
				       layout, m->layers);
		first[k] = (unsigned short)at;
		at += (int)blocks + emb + head;
		if (*p == '|')
			p++;
		else if (*p)
			return err_set(e, "--layout '%s': stage %d: expected '+', '|' or the end, not '%s'",
				       layout, k, p);
	}
	if (total != m->layers)
		return err_set(e, "--layout '%s': the blocks add up to %ld, but the model has %d",
			       layout, total, m->layers);
	first[n_stages] = (unsigned short)at;
	return 0;
}

struct pool;

/* The search state shared by the enumeration loops. */
struct search {
	struct model *m;
	const struct cluster *c;
	const struct plan_opts *o;
	struct plan *p;
	int cap_rows;
	int ranks[MAX_GROUPS];	/* pipeline ranks each group hosts */
	struct layer_costs lc;
	unsigned char v1_group[MAX_STAGES]; /* placement of the strategy just
					   costed without virtual stages */
	bool have_v1;
	double dp_value;		/* the last partition DP's optimum (vp 1):
					   pipeline time + rank 0's tail, a lower
					   bound on cost_evaluate's over the
					   partitions (placements) it searched */
	unsigned char ilp_group[MAX_STAGES]; /* the ILP's placement for this
					   (TP, CP, PP, DP), from its first
					   strategy */
	int ilp_state;			/* 0 not solved, 1 placed, -1 none */
	bool climbed;			/* climb_order holds the climbed block
					   order of this (TP, CP, PP, DP) */
	int climb_order[MAX_GROUPS];
	bool fp8_ok;			/* the search may try FP8 */
	bool fixed;			/* the partition is o->layout's, */
	unsigned short layout[MAX_STAGES + 1]; /* parsed (plan_layout_parse) */
	/* The work budget (plan_opts.work_budget), per (TP, CP, PP, DP): */
	struct pool *pool;
	int tuple;			/* index of the tuple being searched */
	long count;			/* strategies it has costed */
	long cap;			/* it stops at count >= cap */
	long reported;			/* count already in pool->evals */
	bool stop;			/* count reached cap */
	long ilp_at;			/* count when its ILP ran, or -1 */
	long err_at;			/* count when it failed */
	int ilp_kind;			/* 0 optimal, 1 stopped, 2 failed */
	struct row_tag *tag;		/* [cap_rows]: tuple and count of each
					   row */
};

/* Where a row came from: its tuple and the strategies that tuple had
 * costed before it (kept if below the tuple's share of the budget). */
struct row_tag {
	int tuple;
	long at;
};

/* One (TP, CP, PP, DP) of the search: the unit of work of a thread. */
struct degree {
	int tp, cp, pp, dp;
};

/* What the search of one tuple did: strategies costed (count), whether it
 * ran to its end (complete) or stopped at its cap, its ILP and its error,
 * each at the count when it happened. */
struct tuple_rec {
	long count, ilp_at, err_at;
	int ilp_kind;
	bool done, complete, failed;
};

/* The work shared by the search threads. The tuples are handed out in
 * order. With a work budget B, tuple i takes B - P(i) strategies, P(i) the
 * strategies the tuples before it take (each the lesser of what it costs
 * and what is left): the search of tuple i with any cap >= B - P(i) costs
 * the same strategies in the same order up to that share, so a thread
 * searches a tuple with a cap from the prefix known so far (frontier: the
 * tuples [0, frontier) are done and take frontier_p) and the merge keeps
 * what falls within the exact share. The result does not depend on the
 * threads. */
struct pool {
	const struct degree *deg;
	struct tuple_rec *rec;	/* [n] */
	int n, next, done;
	int frontier;
	long frontier_p;
	long budget;		/* 0: none */
	long evals;		/* strategies costed, for the progress */
	double shown;		/* the last fraction reported */
	pthread_mutex_t lock;
};

/* With pool->lock held: moves the frontier over the tuples done. */
static void advance_frontier(struct pool *pool)
{
	while (pool->frontier < pool->n && pool->rec[pool->frontier].done) {
		long left = pool->budget ? pool->budget - pool->frontier_p : LONG_MAX;
		long c = pool->rec[pool->frontier].count;

		pool->frontier_p += c < left ? c : left;
		pool->frontier++;
	}
}

/* With pool->lock held: reports progress, never less than before. */
static void report_progress(struct search *S)
{
	struct pool *pool = S->pool;
	double f = (double)pool->done / pool->n;

	if (pool->budget && (double)pool->evals / (double)pool->budget > f)
		f = (double)pool->evals / (double)pool->budget;
	if (f > 0.999)
		f = 0.999;
	if (f < pool->shown)
		f = pool->shown;
	pool->shown = f;
	S->o->progress(f, S->o->progress_arg);
}

/* Every 16 strategies: lowers this tuple's cap to what the prefix known now
 * leaves it, and reports progress. */
static void budget_refresh(struct search *S)
{
	struct pool *pool = S->pool;

	if (!pool || (!pool->budget && !S->o->progress))
		return;
	pthread_mutex_lock(&pool->lock);
	pool->evals += S->count - S->reported;
	S->reported = S->count;
	if (pool->budget)
		S->cap = pool->budget - pool->frontier_p;
	if (S->o->progress)
		report_progress(S);
	pthread_mutex_unlock(&pool->lock);
}

/* Whether this tuple has spent its share of the work budget: called just
 * before each strategy is costed (so that a tuple stops only where it had
 * more to cost), it stops the search of the tuple. */
static bool spent(struct search *S)
{
	if (S->count >= S->cap)
		S->stop = true;
	return S->stop;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static struct plan_row *push_row(struct search *S)
{
	struct plan *p = S->p;

	if (p->n_row == S->cap_rows) {
		S->cap_rows = S->cap_rows ? 2 * S->cap_rows : 256;
		p->row = xreallocarray(p->row, (size_t)S->cap_rows, sizeof *p->row);
		S->tag = xreallocarray(S->tag, (size_t)S->cap_rows, sizeof *S->tag);
	}
	memset(&p->row[p->n_row], 0, sizeof p->row[0]);
	S->tag[p->n_row] = (struct row_tag){ S->tuple, S->count - 1 };
	return &p->row[p->n_row++];
}

/* TP must divide heads, KV heads (or be a multiple of them) and the FFN
 * size (Megatron-LM arguments.py; TRAINERS.md); the expert FFN only needs
 * to divide by expert TP (each_etp). */
static bool tp_fits_model(const struct model *m, int tp)
{
	return m->heads % tp == 0 && m->ffn % tp == 0 &&
	       (m->kv_heads % tp == 0 || tp % m->kv_heads == 0);
}

/* Fills S->ranks for pipeline ranks of gpus_per_stage GPUs: whole ranks on
 * each real group, and one on each mixed group made for that size whose
 * parts are whole TP x CP groups (tpcp GPUs; cluster_mix); false if these
 * do not use every GPU (README "Heterogeneous clusters"). */
static bool split_groups(struct search *S, int tpcp, int gpus_per_stage)
{
	int used = 0;

	for (int g = 0; g < S->c->n_group; g++) {
		const struct node_group *G = &S->c->group[g];

		S->ranks[g] = 0;
		if (!G->n_part) {
			S->ranks[g] = G->nodes * G->gpus_per_node / gpus_per_stage;
		} else if (G->stage_gpus == gpus_per_stage) {
			S->ranks[g] = 1;
			for (int i = 0; i < G->n_part; i++)
				if (G->part_gpus[i] % tpcp)
					S->ranks[g] = 0;
		}
		used += S->ranks[g] * gpus_per_stage;
	}
	return used == S->c->total_gpus;
}

/* Megatron's default split (no layout flags): the B blocks spread as
 * evenly as possible over the S virtual stages, stage k taking blocks
 * [k B / S, (k + 1) B / S), the embedding on the first stage and the head
 * on the last; virtual stage k runs on pipeline rank k % pp. With fewer
 * blocks than stages (some would hold nothing) the layers, embedding and
 * head included, are split evenly instead (S <= n_layer). */
static void default_split(struct strategy *s, int n_layer)
{
	int S = s->n_stages, B = n_layer - 2;

	for (int k = 0; k <= S; k++)
		s->first[k] = B >= S ? (unsigned short)(k ? 1 + (long)k * B / S : 0)
				     : (unsigned short)((long)k * n_layer / S);
	s->first[S] = (unsigned short)n_layer;
}

/* Next permutation of a[0..n) in lexicographic order; false after the last. */
static bool next_perm(int *a, int n)
{
	int i = n - 2, j = n - 1;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	while (a[j] <= a[i])
		j--;
	int t = a[i];
	a[i] = a[j];
	a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--) {
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	return true;
}

/* Where the partition DP's optimum t (pipeline time + rank 0's tail) is
 * below the evaluated r (vp 1): a later rank's tail ends after rank 0's
 * (cost.c iter_tail), which the DP does not see. While it helps, moves a
 * layer from the rank that sets the tail (r->tail_rank) to the stage
 * before it, which lengthens its lead, or to the stage after it, which
 * shrinks its reduction; s and r take the result. */
static void climb_tail(struct search *S, struct strategy *s, struct cost_result *r, double t)
{
	if (s->vp != 1 || !r->fits || !(t < r->iter_s * (1 - 1e-9)))
		return;
	while (r->tail_rank > 0) {
		struct strategy b = *s;
		struct cost_result br = *r;
		int q = r->tail_rank;

		for (int d = 0; d < 2; d++) {
			struct strategy x = *s;
			struct cost_result xr;
			int k = q + d, at = x.first[k] + (d ? -1 : 1);

			if (k >= x.n_stages || at <= x.first[k - 1] || at >= x.first[k + 1])
				continue;
			x.first[k] = (unsigned short)at;
			cost_evaluate(&xr, S->m, S->c, &x, &S->lc);
			if (xr.fits && xr.iter_s < br.iter_s * (1 - 1e-12)) {
				b = x;
				br = xr;
			}
		}
		if (!(br.iter_s < r->iter_s))
			return;
		*s = b;
		*r = br;
	}
}

/* Partitions the layers for placement s->group (or takes the fixed
 * layout) and keeps the result in *best if it fits and beats it. With
 * virtual stages the partition DP holds each chunk to its rank's memory /
 * vp, stricter than cost_evaluate's test of the rank's chunks together:
 * when the DP finds nothing, Megatron's default split may still fit.
 * Without them the DP's optimum bounds the evaluated time from below
 * (cost.c iter_tail), so the DP seeks only what beats *best_r.
 * Returns the iteration time costed (seconds), INFINITY if nothing fits
 * or nothing beats *best_r (vp = 1). */
static double try_placement(struct search *S, struct strategy *s,
			  struct strategy *best, struct cost_result *best_r)
{
	struct pipeline_frame f;
	struct cost_result r;
	double t = INFINITY;

	if (S->fixed) {
		memcpy(s->first, S->layout, sizeof s->first);
	} else {
		cost_frame(&f, S->m, S->c, s, &S->lc);
		if (partition_solve_below(&S->lc, &f,
					  s->vp == 1 && best_r->fits ? best_r->iter_s : INFINITY,
					  s->first, &t)) {
			if (s->vp == 1)
				return INFINITY;
			default_split(s, S->m->n_layer);
		}
		S->dp_value = t;
	}
	cost_evaluate(&r, S->m, S->c, s, &S->lc);
	if (!S->fixed)
		climb_tail(S, s, &r, t);
	if (!r.fits)
		return INFINITY;
	if (!best_r->fits || r.iter_s < best_r->iter_s) {
		*best = *s;
		*best_r = r;
	}
	return r.iter_s;
}

/* Ranks in contiguous blocks, groups in the order given. */
static void block_placement(struct search *S, struct strategy *s, const int *order, int n)
{
	int r = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < S->ranks[order[i]]; k++)
			s->group[r++] = (unsigned char)order[i];
}

/* try_placement() on the block placements of the n groups of order[] in
 * every order up to 4 groups, else in the order given (permutes order). */
static void try_blocks(struct search *S, struct strategy *s, int *order, int n,
		       struct strategy *best, struct cost_result *best_r)
{
	do {
		block_placement(S, s, order, n);
		try_placement(S, s, best, best_r);
	} while (n <= 4 && next_perm(order, n));
}

/* Hill climbing over the block placements of the n groups of order[] (n
 * > 4, where try_blocks takes one order): swaps neighbouring blocks while a
 * swap lowers the iteration time that try_placement costs, at most n sweeps
 * of n - 1 swaps. Writes the best order found to order[]; returns its time
 * (INFINITY if no order tried fits). Deterministic: a fixed sweep order and
 * strict improvements only. */
static double climb_blocks(struct search *S, struct strategy *s, int *order, int n,
			   struct strategy *best, struct cost_result *best_r)
{
	double t = INFINITY;
	bool moved = true;
	int start[MAX_GROUPS], cand[MAX_GROUPS];

	/* start: the best rotation of order[], forwards or reversed (which
	 * group holds the embedding and which the head) */
	memcpy(start, order, sizeof start);
	for (int dir = 0; dir < 2; dir++)
		for (int k = 0; k < n; k++) {
			for (int i = 0; i < n; i++)
				cand[i] = start[dir ? (k + n - i) % n : (k + i) % n];
			block_placement(S, s, cand, n);
			double u = try_placement(S, s, best, best_r);
			if (u < t || (dir == 0 && k == 0)) {
				t = u;
				memcpy(order, cand, sizeof cand);
			}
		}
	for (int sweep = 0; sweep < n && moved; sweep++) {
		moved = false;
		for (int i = 0; i + 1 < n; i++) {
			int x = order[i];

			order[i] = order[i + 1];
			order[i + 1] = x;
			block_placement(S, s, order, n);
			double u = try_placement(S, s, best, best_r);
			if (u < t) {
				t = u;
				moved = true;
			} else {
				order[i + 1] = order[i];
				order[i] = x;
			}
		}
	}
	return t;
}

static pthread_mutex_t glpk_lock = PTHREAD_MUTEX_INITIALIZER;

/* The placement from the ILP, if GLPK finds one; counts how it ended. */
static bool ilp_placement(struct search *S, struct strategy *s)
{
	struct pipeline_frame f;
	double cap[MAX_GROUPS], inflight[MAX_STAGES] = { 0 };
	int group[MAX_STAGES];
	enum ilp_status st;

	cost_frame(&f, S->m, S->c, s, &S->lc);
	for (int g = 0; g < S->c->n_group; g++)
		cap[g] = f.cap_of[g] * s->vp;
	/* the ILP sees a rank whole: its chunks' mean micro-batches in flight
	 * (ZB-V's 2(p-r)-1 and 2r+1 average p) and the weights over the
	 * ranks' totals */
	for (int k = 0; k < f.n_stages; k++)
		inflight[strategy_rank(s, k)] += f.inflight[k] / s->vp;
	struct placement_problem pb = {
		.pp = s->pp, .n_group = S->c->n_group, .ranks = S->ranks, .lc = &S->lc,
		.a = s->vp > 1 ? f.ra : f.a, .b = s->vp > 1 ? f.rb : f.b,
		.inflight = inflight, .cap = cap,
	};
	pthread_mutex_lock(&glpk_lock);	/* GLPK is not thread safe */
	st = ilp_place_limits(&pb, group, S->o->ilp_time_limit_s, S->o->ilp_node_limit);
	pthread_mutex_unlock(&glpk_lock);
	S->ilp_at = S->count - 1;
	S->ilp_kind = st == ILP_NONE ? 2 : st == ILP_FEASIBLE ? 1 : 0;
	if (st == ILP_NONE)
		return false;
	for (int r = 0; r < s->pp; r++)
		s->group[r] = (unsigned char)group[r];
	return true;
}

/* Whether every node group has the same GPU type, node size and links, so
 * that no placement beats another. */
static bool interchangeable(const struct cluster *c, const int *ranks)
{
	int f = 0;

	while (f < c->n_group - 1 && !ranks[f])
		f++;
	for (int g = f + 1; g < c->n_group; g++) {
		const struct node_group *a = &c->group[f], *b = &c->group[g];

		if (!ranks[g])
			continue;
		if (a->n_part || b->n_part)
			return false;

		if (a->gpu != b->gpu || a->gpus_per_node != b->gpus_per_node ||
		    a->intra_bw != b->intra_bw || a->inter_bw != b->inter_bw ||
		    a->intra_lat != b->intra_lat || a->inter_lat != b->inter_lat ||
		    a->intra_eff != b->intra_eff || a->inter_eff != b->inter_eff ||
		    a->fabric != b->fabric)
			return false;
	}
	return true;
}

/* Most work (partition_place_work) of fit_placement's feasibility pass. */
#define FIT_DP_MAX 2e6

/* Where the candidate placements found none that fits (vp = 1): the joint
 * placement DP on the layers with every time and link 0, whose first pass
 * finds a placement and partition that fit if any does (memory alone), when
 * the relaxation of partition_place_bound does not already rule them out
 * and its work is at most FIT_DP_MAX; then that placement is partitioned
 * by try_placement. */
static void fit_placement(struct search *S, struct strategy *s, struct strategy *best,
			  struct cost_result *best_r)
{
	struct pipeline_frame f, z;
	struct layer_costs lc = S->lc;
	int group[MAX_STAGES], n = S->lc.n_layer;
	double lb, t, *zero;

	if (partition_place_work(S->ranks, S->c->n_group, n, s->pp) > FIT_DP_MAX)
		return;
	cost_frame(&f, S->m, S->c, s, &S->lc);
	if (partition_place_bound(&S->lc, &f, S->ranks, f.a, f.b, &lb))
		return;
	zero = xcalloc((size_t)S->c->n_group * (size_t)(n + 1), sizeof *zero);
	lc.time = zero;
	lc.tail0 = NULL;
	z = f;
	z.a = z.b = 0;
	memset(z.link, 0, sizeof z.link);
	if (!partition_place(&lc, &z, S->ranks, group, s->first, &t)) {
		for (int k = 0; k < s->pp; k++)
			s->group[k] = (unsigned char)group[k];
		try_placement(S, s, best, best_r);
	}
	free(zero);
}

/* The joint placement and partition DP (exact, vp = 1). */
static void place_dp(struct search *S, struct strategy *s, struct strategy *best,
		     struct cost_result *best_r)
{
	struct pipeline_frame f;
	struct cost_result r;
	int group[MAX_STAGES];
	double t;

	cost_frame(&f, S->m, S->c, s, &S->lc);
	if (partition_place(&S->lc, &f, S->ranks, group, s->first, &t))
		return;
	S->dp_value = t;
	for (int k = 0; k < s->pp; k++)
		s->group[k] = (unsigned char)group[k];
	cost_evaluate(&r, S->m, S->c, s, &S->lc);
	climb_tail(S, s, &r, t);
	if (r.fits && (!best_r->fits || r.iter_s < best_r->iter_s)) {
		*best = *s;
		*best_r = r;
	}
}

/* The reason of a row that does not fit (its result evaluated, r->fits
 * false): the heaviest rank's bytes per GPU against its GPU's memory, and
 * the first rank over its memory where that is another one (on a mixed
 * cluster the heaviest rank may have the larger GPU). */
static void why_not(struct search *S, struct plan_row *row)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	const struct cluster *c = S->c;
	const struct gpu_type *h = &c->gpu[c->group[s->group[r->heaviest_rank]].gpu];
	int over = r->overflow_rank;
	int n;

	n = snprintf(row->why, sizeof row->why, "%s needs %.1f GiB per GPU on rank %d (%s, %.0f GiB)",
		     S->fixed ? "--layout" : "no layer partition fits: Megatron's default split",
		     r->peak_bytes / GiB, r->heaviest_rank, h->name, h->mem_bytes / GiB);
	if (over >= 0 && over != r->heaviest_rank && n > 0 && (size_t)n < sizeof row->why) {
		const struct gpu_type *o = &c->gpu[c->group[s->group[over]].gpu];

		snprintf(row->why + n, sizeof row->why - (size_t)n, "; rank %d is over the %.0f GiB of its %s",
			 over, o->mem_bytes / GiB, o->name);
	}
}

/* The gap_pct of a row that fits (plan.h): best and r its strategy and
 * result; small: whether the joint placement DP placed it. Where the DP
 * searched every partition (one group) or every placement and partition
 * (small) without virtual stages, its optimum bounds the iteration from
 * below: the gap is 0 but where a later rank's tail ends after rank 0's
 * (cost.c iter_tail), which the DP does not see. Elsewhere (and under
 * DualPipe, whose stages share their ranks with their mirrors)
 * partition_place_bound; with virtual stages it takes cost_evaluate's
 * weights over the ranks' totals (the frame's ra, rb; cost.c pipe_terms). */
static double gap(struct search *S, const struct strategy *best, const struct cost_result *r,
		  bool small)
{
	struct pipeline_frame f;
	int n = 0;
	double lb, vmin = INFINITY;

	for (int g = 0; g < S->c->n_group; g++) {
		n += S->ranks[g] > 0;
		if (S->ranks[g] > 0 && S->lc.vocab_time[g] < vmin)
			vmin = S->lc.vocab_time[g];
	}
	if (S->o->exhaustive)
		return 0;
	cost_frame(&f, S->m, S->c, best, &S->lc);
	if (best->vp > 1) {
		f.a = f.ra;
		f.b = f.rb;
	}
	/* vocabulary parallelism: every stage's share, which the bound does
	 * not see (the DP does: pipeline_frame.vocab), at its least */
	vmin = n ? (f.a + f.b * best->pp) * vmin : 0;
	/* DualPipe: the DP caps each stage at half its rank's memory, where
	   the rank holds the stage and its mirror: not exact */
	if (best->vp == 1 && best->schedule != SCHED_DUALPIPE && (n == 1 || (small && !S->fixed)))
		return S->fixed || !(S->dp_value < r->iter_s * (1 - 1e-9))
			       ? 0
			       : 100 * (r->iter_s - S->dp_value) / r->iter_s;
	if (partition_place_bound(&S->lc, &f, S->ranks, f.a, f.b, &lb))
		return 0;
	lb += vmin;
	if (lb >= r->iter_s)
		return 0;
	return 100 * (r->iter_s - lb) / r->iter_s;
}

/* Places, partitions and costs one strategy; records a row. Returns whether
 * it fits. One node group: the partition DP. Several: without virtual
 * stages the joint placement DP when its work is small enough (exact);
 * otherwise candidate placements, each refined by the partition DP: for
 * the schedules after 1F1B the placement 1F1B found for the same strategy
 * (with interleaving, when the joint DP found it, the blocks below too: a
 * placement best for 1F1B may not be for virtual stages); for 1F1B
 * contiguous blocks of each group in every order (up to 4 groups; beyond,
 * in the cluster's order and in the order climb_blocks finds at the first
 * strategy of the (TP, CP, PP, DP) that fits, when the groups differ) and,
 * with more than 4 groups that differ and at most ILP_MAX_CELLS ranks x
 * groups, GLPK's ILP placement, solved once per (TP, CP, PP, DP); without
 * virtual stages, when none of them fits, fit_placement. A fixed layout
 * (o->layout) takes the place of the partition DP on the same placements
 * (the block placements in place of the joint DP). When nothing fits,
 * the fixed layout or Megatron's default split on the blocks in the
 * cluster's order is costed: kept if it fits (with virtual stages the
 * candidates may have missed it), else the row of a strategy that does
 * not fit (with keep_infeasible). */
static bool evaluate(struct search *S, struct strategy *s)
{
	struct strategy best = *s;
	struct cost_result r = { 0 };
	int order[MAX_GROUPS], n = 0;
	bool small = partition_place_work(S->ranks, S->c->n_group, S->m->n_layer, s->pp) <=
		     S->o->place_dp_max;

	S->count++;
	S->dp_value = INFINITY;
	if (S->count % 16 == 0)
		budget_refresh(S);
	for (int g = 0; g < S->c->n_group; g++)
		if (S->ranks[g])
			order[n++] = g;
	block_placement(S, s, order, n);
	if (S->o->exhaustive) {
		exhaustive_search(&best, &r, s, S->ranks, S->m, S->c, &S->lc);
	} else if (n == 1) {
		try_placement(S, s, &best, &r);
	} else if (s->vp == 1 && small && !S->fixed) {
		place_dp(S, s, &best, &r);
	} else if (S->have_v1) {
		/* the schedules after 1F1B take its placement */
		memcpy(s->group, S->v1_group, sizeof s->group);
		try_placement(S, s, &best, &r);
		if (s->vp > 1 && small)
			try_blocks(S, s, order, n, &best, &r);
	} else {
		if (n > 4 && !interchangeable(S->c, S->ranks)) {
			/* the climbed block order of this (TP, CP, PP, DP),
			 * from its first strategy that fits anywhere (it
			 * starts with the order try_blocks takes) */
			if (!S->climbed) {
				int o2[MAX_GROUPS];

				memcpy(o2, order, sizeof o2);
				if (climb_blocks(S, s, o2, n, &best, &r) < INFINITY) {
					S->climbed = true;
					memcpy(S->climb_order, o2, sizeof o2);
				}
			} else {
				/* the climbed order first (as fast as the
				 * cluster's or faster on about 60% of the
				 * 8-group bench's strategies): it bounds the
				 * other's partition DP */
				block_placement(S, s, S->climb_order, n);
				try_placement(S, s, &best, &r);
				try_blocks(S, s, order, n, &best, &r);
			}
		} else {
			try_blocks(S, s, order, n, &best, &r);
		}
		if (n > 4 && !interchangeable(S->c, S->ranks) && s->pp * n <= ILP_MAX_CELLS) {
			/* one ILP per (TP, CP, PP, DP): its placement hardly
			 * depends on the micro-batch, recomputation or ZeRO */
			if (!S->ilp_state) {
				S->ilp_state = ilp_placement(S, s) ? 1 : -1;
				memcpy(S->ilp_group, s->group, sizeof S->ilp_group);
			}
			if (S->ilp_state > 0) {
				memcpy(s->group, S->ilp_group, sizeof s->group);
				try_placement(S, s, &best, &r);
			}
		}
	}
	/* With virtual stages on several groups the candidates may not have
	 * held the blocks in the cluster's order (the 1F1B placement only).
	 * Without virtual stages the DP is exact (the default split cannot fit
	 * where it found nothing), and so is the exhaustive search; on one
	 * group try_placement has costed the default split already. */
	if (!r.fits && s->vp == 1 && n > 1 && !small && !S->fixed && !S->o->exhaustive)
		fit_placement(S, s, &best, &r);
	if (!r.fits && (S->o->keep_infeasible || (s->vp > 1 && n > 1 && !S->o->exhaustive))) {
		struct cost_result x;

		n = 0;
		for (int g = 0; g < S->c->n_group; g++)
			if (S->ranks[g])
				order[n++] = g;
		block_placement(S, s, order, n);
		if (S->fixed)
			memcpy(s->first, S->layout, sizeof s->first);
		else
			default_split(s, S->m->n_layer);
		cost_evaluate(&x, S->m, S->c, s, &S->lc);
		if (x.fits) {
			best = *s;
			r = x;
		} else if (S->o->keep_infeasible) {
			struct plan_row *row = push_row(S);

			row->s = *s;
			row->r = x;
			why_not(S, row);
			return false;
		}
	}
	if (s->vp == 1 && r.fits && !S->have_v1) {
		memcpy(S->v1_group, best.group, sizeof S->v1_group);
		S->have_v1 = true;
	}
	if (r.fits) {
		/* A strategy the chosen trainer cannot run is not ranked; it
		 * still counts as fitting for the micro-batch pruning. */
		if (S->o->trainer >= 0 &&
		    trainer_check((enum trainer)S->o->trainer, S->m, S->c, &best, NULL)) {
			/* the what-if mode prints it with the trainer's reason */
			if (plan_opts_what_if(S->o) && S->o->keep_infeasible) {
				struct plan_row *row = push_row(S);
				size_t n;

				row->s = best;
				row->r = r;
				n = (size_t)snprintf(row->why, sizeof row->why, "the trainer cannot run it: ");
				trainer_refusal((enum trainer)S->o->trainer, S->m, S->c, &best,
						row->why + n, sizeof row->why - n);
			}
			return true;
		}
		struct plan_row *row = push_row(S);

		row->s = best;
		row->r = r;
		row->gap_pct = gap(S, &best, &r, small);
		return true;
	}
	return false;
}

/* The schedules and virtual-stage counts for a strategy; evaluates each.
 * Returns whether any fits. */
static bool each_schedule(struct search *S, struct strategy *s)
{
	const struct plan_opts *o = S->o;
	bool fits = false;

	S->have_v1 = false;
	for (int sc = 0; sc < SCHED_COUNT; sc++) {
		/* GPipe has 1F1B's time and holds more activations: it never
		 * ranks above 1F1B, so it is costed only when asked for. */
		if (o->schedule >= 0 ? sc != o->schedule
				     : sc == SCHED_GPIPE || (s->pp == 1 && sc != SCHED_1F1B))
			continue;
		/* vocabulary parallelism and SlimPipe as their papers build
		 * them: on 1F1B */
		if ((s->vocab_par || strategy_slices(s) > 1 || strategy_uneven(s)) &&
		    sc != SCHED_1F1B)
			continue;
		for (int vp = o->vp ? o->vp : 1; vp <= (o->vp ? o->vp : 4); vp++) {
			/* ZB-V has 2 stages per rank; interleaved zero bubble
			 * is searched at 2 (more with --vp), which keeps the
			 * search within its time targets */
			if (schedule_virtual((enum schedule)sc) != (vp > 1) ||
			    (schedule_v((enum schedule)sc) && vp != 2) ||
			    (sc == SCHED_INTERLEAVED_ZB && !o->vp && vp != 2))
				continue;
			/* Interleaving needs micro-batches >= pp (Megatron);
			 * the zero-bubble schedules (Qi et al. 2024) assume it
			 * too. */
			if ((vp > 1 || sc == SCHED_ZB_H1 || sc == SCHED_ZB_H2) &&
			    s->micro_batches < s->pp)
				continue;
			/* DualPipe and DualPipeV need m >= 2 pp (the DualPipe
			 * repository's num_chunks >= num_ranks * 2); DualPipe
			 * an even pp and m (two directions, half each) */
			if (schedule_fb_overlap((enum schedule)sc) &&
			    (s->pp == 1 || s->micro_batches < 2 * s->pp ||
			     (sc == SCHED_DUALPIPE && (s->pp % 2 || s->micro_batches % 2))))
				continue;
			/* virtual stages need a pipeline (Megatron: the
			 * interleaved schedule needs pipeline size > 1) */
			if (vp > 1 && s->pp == 1)
				continue;
			if (s->pp * vp > S->m->n_layer || s->pp * vp > MAX_STAGES)
				continue;
			if (spent(S))
				return fits;
			s->schedule = (enum schedule)sc;
			s->vp = vp;
			s->n_stages = s->pp * vp;
			/* DualPipe(V) hide part of the EP all-to-all in the
			 * layers' own times (cost.c layer_parts): their own
			 * layer costs, not the mbs loop's. Without EP (ep 1,
			 * every dense model) there is no all-to-all
			 * (comm_ep_fwd is 0) and the layer costs are the mbs
			 * loop's: layer_parts reads the schedule nowhere else */
			if (!schedule_fb_overlap((enum schedule)sc) || s->ep <= 1) {
				fits |= evaluate(S, s);
				continue;
			}
			struct layer_costs keep = S->lc;

			if (cost_layers(&S->lc, S->m, S->c, s, S->ranks, NULL) < 0) {
				S->lc = keep;
				continue;
			}
			fits |= evaluate(S, s);
			cost_layers_free(&S->lc);
			S->lc = keep;
		}
	}
	return fits;
}

/* The CP flavour of s (cp > 1): the one fixed by --cp-comm-type, else of
 * the ring, the all-to-all (a2a) and the hierarchical mix (a2a+p2p with
 * each proper divisor of cp as its all-to-all size) that the heads allow
 * (model_heads_split) and the trainer runs (torchtitan: the ring only), the
 * one that exposes least CP time in a block (cost_cp_exposed); the ring on
 * ties. Returns false when the fixed flavour cannot run s (the heads do not
 * split, no all-to-all size fits a2a+p2p, or the trainer has only the
 * ring): the search skips s rather than cost another flavour. */
static bool choose_cp_comm(const struct search *S, struct strategy *s)
{
	const struct plan_opts *o = S->o;
	struct strategy t = *s;
	bool ring_only = o->trainer == TRAINER_TORCHTITAN;
	double best;

	s->cp_comm = CP_P2P;
	s->cp_a2a = 0;
	if (s->cp <= 1)
		return true;
	if (o->cp_comm == CP_P2P)
		return true;
	if (o->cp_comm == CP_A2A) {
		s->cp_comm = CP_A2A;
		return !ring_only && model_heads_split(S->m, s->tp, s->cp);
	}
	best = o->cp_comm == CP_A2A_P2P ? INFINITY : cost_cp_exposed(S->m, S->c, s);
	if (ring_only)
		return o->cp_comm < 0;
	for (int a = 2; a <= s->cp; a++) {
		double x;

		if (s->cp % a || !model_heads_split(S->m, s->tp, a) ||
		    (a == s->cp && o->cp_comm == CP_A2A_P2P))
			continue;
		t.cp_comm = a == s->cp ? CP_A2A : CP_A2A_P2P;
		t.cp_a2a = a == s->cp ? 0 : a;
		x = cost_cp_exposed(S->m, S->c, &t);
		if (x < best) {
			best = x;
			s->cp_comm = t.cp_comm;
			s->cp_a2a = t.cp_a2a;
		}
	}
	return best < INFINITY;
}

/* Whether s (degrees and micro-batches set) is tried with vocabulary
 * parallelism v (0, 1) and n SlimPipe slices (1: none): as fixed by the
 * options, else plain, and with a pipeline (pp > 1) vocabulary
 * parallelism alone and each of PLAN_MAX_SLICES's powers of two alone
 * whose slices hold PLAN_MIN_SLICE_TOKENS tokens or more. Slices divide
 * the sequence so that each splits into 2 cp chunks (Megatron's causal
 * load balance, per slice). */
static bool pipeline_variant(const struct plan_opts *o, const struct strategy *s, int v,
			     int n)
{
	int fixed_n = o->slices;

	if (s->pp == 1 && (v || n > 1))
		return false;
	if (o->vocab_par >= 0 ? v != o->vocab_par : v && n > 1 && !fixed_n)
		return false;
	if (fixed_n ? n != fixed_n : n > 1 && (s->pp == 1 || s->seq / n < PLAN_MIN_SLICE_TOKENS))
		return false;
	return n == 1 || s->seq % (n * 2 * s->cp) == 0;
}

/* Micro-batch sizes dividing the per-replica batch, ascending. Memory grows
 * with the micro-batch size under every schedule, so once none fits the
 * larger ones are skipped: a safe pruning. */
static void each_mbs(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	int per_replica = s->gbs / s->dp;

	for (int mbs = 1; mbs <= per_replica && !*rc && !S->stop; mbs++) {
		if (per_replica % mbs || (S->o->mbs && mbs != S->o->mbs))
			continue;
		s->mbs = mbs;
		s->micro_batches = per_replica / mbs;
		if (!choose_cp_comm(S, s))
			return;
		bool fits = false;
		for (int v = 0; v < 2 && !*rc; v++)
			for (int n = S->o->slices > 1 ? S->o->slices : 1;
			     n <= (S->o->slices > 1 ? S->o->slices : PLAN_MAX_SLICES) && !*rc; n *= 2) {
				if (!pipeline_variant(S->o, s, v, n) || S->o->uneven == 1)
					continue;
				s->vocab_par = v;
				s->slices = n > 1 ? n : 0;
				/* the layer costs of every schedule but DualPipe(V),
				 * which each_schedule costs apart: not those of the
				 * schedule the last strategy ended on */
				s->schedule = SCHED_1F1B;
				s->vp = 1;
				if (cost_layers(&S->lc, S->m, S->c, s, S->ranks, e)) {
					S->err_at = S->count;
					*rc = -1;
					return;
				}
				fits |= each_schedule(S, s);
				cost_layers_free(&S->lc);
			}
		s->vocab_par = false;
		s->slices = 0;
		/* uneven per-replica micro-batches, alone, where they beat
		 * the even split on the strategy's mixed rank: its tries
		 * (cost_uneven) */
		for (int k = 0; k < COST_UNEVEN_TRIES && !*rc && S->o->uneven &&
				S->o->vocab_par != 1 && S->o->slices <= 1; k++) {
			int u = cost_uneven(s->uneven, S->m, S->c, s, k, e);

			s->schedule = SCHED_1F1B;
			s->vp = 1;
			if (u < 0 || (u > 0 && cost_layers(&S->lc, S->m, S->c, s, S->ranks, e))) {
				S->err_at = S->count;
				*rc = -1;
				return;
			}
			if (u > 0) {
				fits |= each_schedule(S, s);
				cost_layers_free(&S->lc);
			}
			memset(s->uneven, 0, sizeof s->uneven);
		}
		if (!fits)
			break;
	}
}

/* The overlaps of s (tp, sp and zero set) and its gradient accumulation
 * fusion: as fixed by the options, else on wherever the strategy and the
 * trainer allow them (trainer_allows).
 * The search does not try them off as well: in the cost model an overlap
 * only hides communication, never adds time or memory, so "on where
 * allowed" is never slower than off. */
static void set_overlaps(const struct search *S, struct strategy *s)
{
	const struct plan_opts *o = S->o;

	s->tp_overlap = o->tp_overlap >= 0 ? o->tp_overlap
					   : trainer_allows(o->trainer, FEATURE_TP_OVERLAP, s);
	s->grad_overlap = o->grad_overlap >= 0 ? o->grad_overlap
					       : trainer_allows(o->trainer, FEATURE_GRAD_OVERLAP, s);
	s->param_overlap = o->param_overlap >= 0
				   ? o->param_overlap
				   : trainer_allows(o->trainer, FEATURE_PARAM_OVERLAP, s);
	s->grad_acc_unfused = !(o->grad_acc_fusion >= 0
					? o->grad_acc_fusion
					: trainer_allows(o->trainer, FEATURE_GRAD_ACC_FUSION, s));
}

/* ZeRO stages: 0 and 1 (distributed optimizer) with pipelines; 2 and 3 too
 * without (as FSDP/DeepSpeed run them). Then FP8 off and, where the GPUs
 * and the trainer have it, on (FP8 changes time and memory both ways, so
 * both are costed), then recomputation modes. */
static void each_memory_option(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	int fp8_lo = S->o->fp8 >= 0 ? S->o->fp8 : 0;
	int fp8_hi = S->o->fp8 >= 0 ? S->o->fp8 : S->fp8_ok;

	for (int z = 0; z <= 3 && !*rc && !S->stop; z++) {
		if (S->o->zero >= 0 ? z != S->o->zero : s->pp > 1 && z > 1)
			continue;
		s->zero = z;
		set_overlaps(S, s);
		for (int f8 = fp8_lo; f8 <= fp8_hi && !*rc && !S->stop; f8++) {
			s->fp8 = f8;
			for (int rcm = 0; rcm < RECOMPUTE_COUNT && !*rc && !S->stop; rcm++) {
				if (S->o->recompute >= 0 && rcm != S->o->recompute)
					continue;
				s->recompute = (enum recompute)rcm;
				each_mbs(S, s, e, rc);
			}
		}
	}
}

/* Expert-parallel degrees for s->etp: the divisors of tp / etp x dp x cp
 * (Megatron's MoE parallel folding: the experts' grid is etp x ep x edp
 * over the stage's tp x cp x dp GPUs, so with etp < tp EP may span TP
 * ranks too) that divide the experts; only plan_opts.ep when it is set. */
static void each_ep(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	int span = s->tp / strategy_etp(s) * s->dp * s->cp;

	for (int ep = 1; ep <= span && !*rc && !S->stop; ep++) {
		if (span % ep || (S->m->experts ? S->m->experts % ep : ep > 1) ||
		    (S->o->ep && ep != S->o->ep))
			continue;
		s->ep = ep;
		each_memory_option(S, s, e, rc);
	}
}

/* Expert tensor-parallel degrees of an MoE model: the divisors of tp that
 * divide the expert FFN, largest first (etp = tp, Megatron's default, sets
 * the order of equals); only plan_opts.etp when it is set; each with its
 * EP degrees (each_ep). A dense model keeps etp unset (tp) and EP 1. */
static void each_etp(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	s->etp = 0;
	if (!S->m->experts) {
		each_ep(S, s, e, rc);
		return;
	}
	for (int etp = s->tp; etp >= 1 && !*rc && !S->stop; etp--) {
		if (s->tp % etp || S->m->moe_ffn % etp || (S->o->etp && etp != S->o->etp))
			continue;
		s->etp = etp;
		each_ep(S, s, e, rc);
	}
}

/* Every (TP, CP, PP, DP) the cluster and options allow, into a malloc'd
 * array (caller frees) of *n. */
static struct degree *each_degree(struct search *S, const struct strategy *s, int *n)
{
	const struct plan_opts *o = S->o;
	int N = S->c->total_gpus, node = 0, cap = 16;
	struct degree *d = xreallocarray(NULL, (size_t)cap, sizeof *d);

	*n = 0;
	for (int g = 0; g < S->c->n_group; g++)
		if (!S->c->group[g].n_part)
			node = gcd(node, S->c->group[g].gpus_per_node);
	for (int tp = 1; tp <= node; tp++) {
		if (node % tp || !tp_fits_model(S->m, tp) || (o->tp && tp != o->tp))
			continue;
		for (int cp = 1; cp <= N / tp; cp++) {
			if ((N / tp) % cp || (cp > 1 && s->seq % (2 * cp)) || (o->cp && cp != o->cp))
				continue;
			for (int pp = 1; pp <= N / (tp * cp); pp++) {
				int dp = N / (tp * cp * pp);

				if ((N / (tp * cp)) % pp || pp > S->m->n_layer || pp > MAX_STAGES ||
				    (o->pp && pp != o->pp) || (o->dp && dp != o->dp) ||
				    s->gbs % dp || !split_groups(S, tp * cp, N / pp))
					continue;
				if (*n == cap)
					d = xreallocarray(d, (size_t)(cap *= 2), sizeof *d);
				d[(*n)++] = (struct degree){ tp, cp, pp, dp };
			}
		}
	}
	return d;
}

/* One search thread: its own state, rows and error (that of tuple
 * err_tuple, or -1). */
struct worker {
	struct search S;
	struct strategy s;
	struct pool *pool;
	struct err e;
	int rc, err_tuple;
	bool used_glpk;
	pthread_t thread;
};

/* Takes tuples from the pool, in order, until none is left, the budget is
 * spent by the tuples before the next one, or one fails. Frees the
 * thread's GLPK environment at the end. */
static void *work(void *arg)
{
	struct worker *w = arg;
	struct search *S = &w->S;
	struct pool *pool = w->pool;

	for (;;) {
		int i;

		pthread_mutex_lock(&pool->lock);
		advance_frontier(pool);
		if (w->rc || (pool->budget && pool->frontier_p >= pool->budget))
			i = pool->n;
		else
			i = pool->next++;
		S->cap = pool->budget ? pool->budget - pool->frontier_p : LONG_MAX;
		pthread_mutex_unlock(&pool->lock);
		if (i >= pool->n)
			break;
		w->s.tp = pool->deg[i].tp;
		w->s.cp = pool->deg[i].cp;
		w->s.pp = pool->deg[i].pp;
		w->s.dp = pool->deg[i].dp;
		w->s.sp = w->s.tp > 1 && S->o->sp != 0;
		S->ilp_state = 0;
		S->climbed = false;
		S->tuple = i;
		S->count = S->reported = 0;
		S->stop = false;
		S->ilp_at = -1;
		split_groups(S, w->s.tp * w->s.cp, S->c->total_gpus / w->s.pp);
		each_etp(S, &w->s, &w->e, &w->rc);
		if (S->ilp_at >= 0)
			w->used_glpk = true;
		pthread_mutex_lock(&pool->lock);
		pool->rec[i] = (struct tuple_rec){
			.count = S->count, .ilp_at = S->ilp_at, .ilp_kind = S->ilp_kind,
			.err_at = S->err_at, .failed = w->rc != 0,
			.complete = !S->stop && !w->rc, .done = true,
		};
		if (w->rc)
			w->err_tuple = i;
		pool->done++;
		pool->evals += S->count - S->reported;
		S->reported = S->count;
		advance_frontier(pool);
		if (S->o->progress)
			report_progress(S);
		pthread_mutex_unlock(&pool->lock);
	}
	if (w->used_glpk) {
		pthread_mutex_lock(&glpk_lock);
		ilp_free_env();
		pthread_mutex_unlock(&glpk_lock);
	}
	return NULL;
}

/* Threads for the search: o->threads, or one per online CPU (at most 16). */
static int n_threads(const struct plan_opts *o)
{
	long n = o->threads ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* Merges the threads' rows into S->p, the tuples in order, each within its
 * share of the budget (struct pool), and counts the strategies, ILPs and
 * tuples searched. Returns 0, or -1 with e set to the error of the first
 * tuple that failed within its share. */
static int merge(struct search *S, struct pool *pool, struct worker *w, int nt,
		 struct err *e)
{
	struct plan *P = S->p;
	long prefix = 0, *share = xcalloc((size_t)pool->n + 1, sizeof *share);
	int rc = 0;

	P->degrees = pool->n;
	for (int i = 0; i < pool->n; i++) {
		const struct tuple_rec *r = &pool->rec[i];
		long left = pool->budget ? pool->budget - prefix : LONG_MAX;

		share[i] = left;
		if (left <= 0 || !r->done) {	/* not reached */
			P->truncated = true;
			share[i] = 0;
			continue;
		}
		if (r->failed && r->err_at < left) {
			for (int t = 0; t < nt; t++)
				if (w[t].rc && w[t].err_tuple == i)
					*e = w[t].e;
			rc = -1;
			break;
		}
		if (r->complete && r->count <= left)
			P->degrees_searched++;
		else	/* stopped within its share */
			P->truncated = true;
		P->evaluated += r->count < left ? r->count : left;
		prefix += r->count < left ? r->count : left;
		if (r->ilp_at >= 0 && r->ilp_at < left) {
			if (r->ilp_kind == 2)
				P->ilp_failed++;
			else if (r->ilp_kind == 1)
				P->ilp_stopped++;
			else
				P->ilp_optimal++;
		}
	}
	for (int t = 0; t < nt && !rc; t++) {
		struct plan *p = w[t].S.p;
		int kept = 0;

		S->p->row = xreallocarray(S->p->row, (size_t)(S->p->n_row + p->n_row) + 1,
					  sizeof *S->p->row);
		for (int k = 0; k < p->n_row; k++)
			if (w[t].S.tag[k].at < share[w[t].S.tag[k].tuple])
				S->p->row[S->p->n_row + kept++] = p->row[k];
		S->p->n_row += kept;
	}
	free(share);
	return rc;
}

/* Runs the search on the threads and merges their rows into S->p. Returns
 * 0, or -1 with e set by the first tuple that failed. */
static int run_workers(struct search *S, const struct strategy *s, struct err *e)
{
	struct pool pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .budget = S->o->work_budget };
	int nt = n_threads(S->o), rc = 0;
	struct degree *deg = each_degree(S, s, &pool.n);
	struct worker *w = xcalloc((size_t)nt, sizeof *w);

	if (pool.budget < 0)
		pool.budget = 0;
	pool.deg = deg;
	pool.rec = xcalloc((size_t)pool.n + 1, sizeof *pool.rec);
	if (nt > pool.n)
		nt = pool.n > 0 ? pool.n : 1;
	for (int t = 0; t < nt; t++) {
		w[t].S = *S;
		w[t].S.p = xcalloc(1, sizeof *w[t].S.p);
		w[t].S.pool = &pool;
		w[t].s = *s;
		w[t].pool = &pool;
		w[t].err_tuple = -1;
		if (t && pthread_create(&w[t].thread, NULL, work, &w[t])) {
			plan_free(w[t].S.p);
			nt = t;	/* fewer threads: the others do the work */
			break;
		}
	}
	work(&w[0]);
	for (int t = 1; t < nt; t++)
		pthread_join(w[t].thread, NULL);
	rc = merge(S, &pool, w, nt, e);
	for (int t = 0; t < nt; t++) {
		plan_free(w[t].S.p);
		free(w[t].S.tag);
	}
	free(pool.rec);
	free(w);
	free(deg);
	return rc;
}

/* Most work (partition_place_work) of one exact joint placement DP, or of
 * its relaxation, in refine_rows. */
#define REFINE_DP_MAX 5e6

/* Most DP states (count vectors x groups x layer ends) of
 * partition_place_below in refine_rows, where the work is above
 * REFINE_DP_MAX: its scratch is about 11 bytes a state. */
#define REFINE_CUT_STATES 5e6

/* The states of the joint DP (partition.c drops the groups without
 * ranks): count vectors x groups with ranks x (layers + 1). */
static double place_states(const int *ranks, int n_group, int n_layer)
{
	double vectors = 1;
	int groups = 0;

	for (int g = 0; g < n_group; g++)
		if (ranks[g]) {
			vectors *= ranks[g] + 1.0;
			groups++;
		}
	return vectors * groups * (n_layer + 1);
}

/* Most work (partition_relaxed_work) of the type relaxation in
 * refine_rows: on 16 groups of four types (PP 16: 3.3e6) it costs more
 * than the bound it adds. */
#define REFINE_RELAX_MAX 1e6

/* Most work of partition_place_seq in refine_rows: it walks every count
 * vector of the real groups (its scratch grows with them). */
#define REFINE_SEQ_MAX 2e7

/* The placement of class sequence seq (cls[g] the class of group g) that
 * gives each class's stages to its groups in the cluster's order, ranks[g]
 * each; group[] gets it. Returns 0, or -1 if seq does not match ranks. */
static int seq_blocks(const struct cluster *c, const int *ranks, const int *cls, const int *seq,
		      int pp, int *group)
{
	int left[MAX_GROUPS];

	memcpy(left, ranks, sizeof left);
	for (int k = 0; k < pp; k++) {
		int g = 0;

		while (g < c->n_group && (!left[g] || cls[g] != seq[k]))
			g++;
		if (g == c->n_group)
			return -1;
		left[g]--;
		group[k] = g;
	}
	return 0;
}

/* Rows of refine_rows that swap descent polishes (those the exact DP
 * does not place), and its most sweeps. */
#define REFINE_DESCENT_ROWS 8
#define REFINE_DESCENT_SWEEPS 4

/* The partition DP and cost_evaluate of s's placement (T's layer costs);
 * *t the DP's optimum. Returns iter_s, INFINITY if nothing fits. */
static double place_cost(struct search *T, struct strategy *s, struct cost_result *r, double *t)
{
	struct pipeline_frame f;

	cost_frame(&f, T->m, T->c, s, &T->lc);
	if (partition_solve(&T->lc, &f, s->first, t))
		return INFINITY;
	cost_evaluate(r, T->m, T->c, s, &T->lc);
	return r->fits ? r->iter_s : INFINITY;
}

/* Swap descent from s's placement: swaps two pipeline ranks on different
 * groups where that lowers the iteration time, in a fixed order, at most
 * REFINE_DESCENT_SWEEPS sweeps; then climb_tail. s and r take the result
 * (r->fits false if s's placement fits nothing and no swap helps). */
static void descend(struct search *T, struct strategy *s, struct cost_result *r)
{
	double t, cur = place_cost(T, s, r, &t), best_t = t;
	bool moved = true;

	for (int sweep = 0; sweep < REFINE_DESCENT_SWEEPS && moved; sweep++) {
		moved = false;
		for (int x = 0; x < s->pp; x++)
			for (int y = x + 1; y < s->pp; y++) {
				struct strategy w = *s;
				struct cost_result wr;
				double wt, v;

				if (w.group[x] == w.group[y])
					continue;
				w.group[x] = s->group[y];
				w.group[y] = s->group[x];
				v = place_cost(T, &w, &wr, &wt);
				if (v < cur * (1 - 1e-12)) {
					*s = w;
					*r = wr;
					cur = v;
					best_t = wt;
					moved = true;
				}
			}
	}
	if (cur < INFINITY)
		climb_tail(T, s, r, best_t);
}

/* After the search, on the ranked rows: each row without virtual stages
 * (and not DualPipe) placed by the candidate placements, with a gap > 0,
 * that could beat the top row (iter_s (1 - gap) below the top's iter_s) is
 * placed and partitioned again by the exact joint DP (partition_place)
 * where its work is at most REFINE_DP_MAX, its gap then the DP's (0 but
 * for a later rank's tail); up to REFINE_CUT_STATES states by the same DP
 * seeking only what beats the top row (partition_place_below), which
 * either finds the row's optimum or proves the top's time a bound of it;
 * else, where its work is at most REFINE_RELAX_MAX, its bound is raised
 * to the relaxation in which the groups of one GPU type merge
 * (partition_place_relaxed), whose placement by type partition_place_seq
 * (or seq_blocks) also tries; and the first REFINE_DESCENT_ROWS rows not
 * placed exactly are polished by swap descent. A row takes a placement
 * only where it is faster. Runs once, in rank order, on one thread:
 * deterministic. c is the cluster of the trainer masks.
 * Returns whether a row changed. */
static bool refine_rows(struct search *S, const struct cluster *c)
{
	struct plan *P = S->p;
	double top;
	bool changed = false;
	int descents = 0;

	if (!P->n_row || P->row[0].why[0] || S->fixed || S->o->exhaustive)
		return false;
	top = P->row[0].r.iter_s;
	for (int i = 0; i < P->n_row && !P->row[i].why[0]; i++) {
		struct plan_row *row = &P->row[i];
		struct strategy s = row->s, one = row->s;
		struct search T = *S;
		struct pipeline_frame f;
		struct cost_result r;
		int group[MAX_STAGES], cls[MAX_GROUPS], seq[MAX_STAGES];
		double t = INFINITY, lb = row->r.iter_s * (1 - row->gap_pct / 100), rlb, work;
		bool exact = false, moved = false;

		if (s.vp != 1 || s.schedule == SCHED_DUALPIPE || !(row->gap_pct > 0) ||
		    !(lb < top * (1 - 1e-12)))
			continue;
		memset(T.ranks, 0, sizeof T.ranks);
		for (int k = 0; k < s.pp; k++)
			T.ranks[s.group[k]]++;
		/* the layer costs of the search: 1F1B's (each_schedule) */
		one.schedule = SCHED_1F1B;
		if (cost_layers(&T.lc, S->m, S->c, &one, T.ranks, NULL))
			continue;
		cost_frame(&f, S->m, S->c, &s, &T.lc);
		for (int g = 0; g < S->c->n_group; g++)
			cls[g] = S->c->group[g].gpu;
		work = partition_place_work(T.ranks, S->c->n_group, T.lc.n_layer, s.pp);
		if (work <= REFINE_DP_MAX) {
			if (!partition_place(&T.lc, &f, T.ranks, group, s.first, &t)) {
				exact = true;
				lb = t;
			}
		} else if (place_states(T.ranks, S->c->n_group, T.lc.n_layer) <= REFINE_CUT_STATES) {
			/* exact below the top: where nothing is, the top's
			 * time bounds the row */
			exact = true;
			if (!partition_place_below(&T.lc, &f, T.ranks, top, group, s.first, &t))
				lb = t;
			else if (top > lb)
				lb = top;
		} else if (partition_relaxed_work(&T.lc, &f, T.ranks, cls) <= REFINE_RELAX_MAX &&
			   !partition_place_relaxed(&T.lc, &f, T.ranks, cls, &rlb, seq)) {
			if (rlb > lb)
				lb = rlb;
			if (partition_place_work(T.ranks, S->c->n_group, T.lc.n_layer, s.pp) >
				    REFINE_SEQ_MAX ||
			    partition_place_seq(&T.lc, &f, T.ranks, cls, seq, group, s.first, &t)) {
				t = INFINITY;
				if (!seq_blocks(S->c, T.ranks, cls, seq, s.pp, group)) {
					for (int k = 0; k < s.pp; k++)
						s.group[k] = (unsigned char)group[k];
					place_cost(&T, &s, &r, &t);
				}
			}
		}
		if (t < INFINITY) {
			for (int k = 0; k < s.pp; k++)
				s.group[k] = (unsigned char)group[k];
			cost_evaluate(&r, S->m, S->c, &s, &T.lc);
			climb_tail(&T, &s, &r, t);
			if (r.fits && r.iter_s < row->r.iter_s) {
				row->s = s;
				row->r = r;
				moved = true;
			}
		}
		if (!exact && descents++ < REFINE_DESCENT_ROWS) {
			s = row->s;
			descend(&T, &s, &r);
			if (r.fits && r.iter_s < row->r.iter_s) {
				row->s = s;
				row->r = r;
				moved = true;
			}
		}
		cost_layers_free(&T.lc);
		if (moved) {
			changed = true;
			row->usd_per_hour = cluster_price_per_hour(c, &row->s);
			row->trainers = trainer_mask(S->m, c, &row->s);
		}
		row->gap_pct = lb < row->r.iter_s * (1 - 1e-9) ? 100 * (row->r.iter_s - lb) / row->r.iter_s : 0;
		if (row->r.iter_s < top)
			top = row->r.iter_s;
	}
	return changed;
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
 * first; every row has a price (check_opts). */
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

/* Whether CP flavour fl (enum cp_comm) can run cp ranks at tp: the ring
 * always; a2a where the heads each GPU holds split over cp
 * (model_heads_split); a2a+p2p where they split over some all-to-all size
 * between 2 and cp that divides cp. */
static bool cp_flavour_runs(const struct model *m, int tp, int cp, int fl)
{
	if (fl == CP_A2A)
		return model_heads_split(m, tp, cp);
	if (fl != CP_A2A_P2P)
		return true;
	for (int a = 2; a < cp; a++)
		if (cp % a == 0 && model_heads_split(m, tp, a))
			return true;
	return false;
}

/* Options that contradict the cluster or model are usage errors. */
static int check_opts(const struct model *m, const struct cluster *c,
		      const struct plan_opts *o, struct err *e)
{
	long long world = (long long)o->tp * o->cp * o->pp * o->dp;

	if (o->tp && !tp_fits_model(m, o->tp))
		return err_set(e, "--tp %d must divide the heads (%d), the FFN size (%d) and the KV heads (%d) or be a multiple of them",
			       o->tp, m->heads, m->ffn, m->kv_heads);
	if (plan_opts_what_if(o) && world != c->total_gpus)
		return err_set(e, "--tp x --cp x --pp x --dp is %lld, but the cluster has %d GPUs",
			       world, c->total_gpus);
	if (o->etp && !m->experts)
		return err_set(e, "--etp %d, but the model has no experts", o->etp);
	if (o->etp && o->tp && o->tp % o->etp)
		return err_set(e, "--etp %d must divide --tp %d", o->etp, o->tp);
	if (o->etp && m->experts && m->moe_ffn % o->etp)
		return err_set(e, "--etp %d must divide the expert FFN (%d)", o->etp, m->moe_ffn);
	if (o->ep > 1 && !m->experts)
		return err_set(e, "--ep %d, but the model has no experts (dense models run EP 1)", o->ep);
	if (o->ep > 1 && m->experts % o->ep)
		return err_set(e, "--ep %d must divide the model's %d experts", o->ep, m->experts);
	if (o->ep > 1 && o->dp && o->cp && o->tp &&
	    (o->tp / (o->etp ? o->etp : o->tp) * o->dp * o->cp) % o->ep)
		return err_set(e, "--ep %d must divide --dp x --cp (%d)%s", o->ep, o->dp * o->cp,
			       o->etp && o->etp < o->tp ? " x --tp / --etp" : "");
	if (o->dp && o->gbs % o->dp)
		return err_set(e, "--dp %d must divide the global batch (%d)", o->dp, o->gbs);
	if (o->dp && o->mbs && (o->gbs / o->dp) % o->mbs)
		return err_set(e, "--mbs %d must divide the batch per DP replica (%d)", o->mbs,
			       o->gbs / o->dp);
	if (o->cp > 1 && o->seq % (2 * o->cp))
		return err_set(e, "--cp %d needs a sequence length divisible by %d", o->cp, 2 * o->cp);
	if (o->cp_comm > CP_P2P && o->trainer == TRAINER_TORCHTITAN)
		return err_set(e, "--cp-comm-type %s: torchtitan passes K and V round a ring (p2p) only",
			       cp_comm_name((enum cp_comm)o->cp_comm));
	if (o->cp_comm > CP_P2P && o->cp > 1) {
		int tp = o->tp ? o->tp : 1, last = o->tp ? o->tp : m->heads;
		char at[32] = "any TP";

		while (tp <= last && !(tp_fits_model(m, tp) && cp_flavour_runs(m, tp, o->cp, o->cp_comm)))
			tp++;
		if (o->tp)
			snprintf(at, sizeof at, "--tp %d", o->tp);
		if (tp > last && o->cp_comm == CP_A2A)
			return err_set(e, "--cp-comm-type a2a: an all-to-all over --cp %d ranks needs the heads (%d) and KV heads (%d) per GPU (at %s) divisible by %d",
				       o->cp, m->heads, m->kv_heads > 0 ? m->kv_heads : m->heads, at, o->cp);
		if (tp > last)
			return err_set(e, "--cp-comm-type a2a+p2p: no all-to-all size between 2 and --cp %d divides it and splits the heads (%d) and KV heads (%d) per GPU (at %s)",
				       o->cp, m->heads, m->kv_heads > 0 ? m->kv_heads : m->heads, at);
	}
	if (o->pp == 1 && ((o->schedule >= 0 && schedule_virtual((enum schedule)o->schedule)) ||
			   o->vp > 1))
		return err_set(e, "--pp 1 has no pipeline to interleave: --schedule %s and --vp need --pp > 1",
			       o->schedule >= 0 ? schedule_name((enum schedule)o->schedule) : "interleaved");
	if (o->pp == 1 && (o->vocab_par == 1 || o->slices > 1))
		return err_set(e, "--pp 1 has no pipeline: %s need%s --pp > 1",
			       o->vocab_par == 1 && o->slices > 1 ? "--vocab-parallel on and --slices" :
			       o->vocab_par == 1 ? "--vocab-parallel on" : "--slices",
			       o->vocab_par == 1 && o->slices > 1 ? "" : "s");
	if (o->vp && o->schedule >= 0 &&
	    ((o->vp > 1) != schedule_virtual((enum schedule)o->schedule) ||
	     (schedule_v((enum schedule)o->schedule) && o->vp != 2)))
		return err_set(e, "--vp %d does not go with --schedule %s%s", o->vp,
			       schedule_name((enum schedule)o->schedule),
			       schedule_v((enum schedule)o->schedule) ? " (it runs 2 stages per rank)" : "");
	if (o->schedule == SCHED_DUALPIPE && o->pp && o->pp % 2)
		return err_set(e, "--schedule dualpipe needs an even --pp (its two directions meet in the middle), not %d",
			       o->pp);
	if (o->exhaustive && (m->n_layer > 16 || c->total_gpus > 64))
		return err_set(e, "--exhaustive is for at most 14 blocks and 64 GPUs (it tries every partition and placement)");
	if (o->fp8 == 1)
		for (int g = 0; g < c->n_group; g++) {
			const struct gpu_type *t = &c->gpu[c->group[g].gpu];

			if (t->peak_fp8_flops <= 0)
				return err_set(e, "--fp8 on, but GPU type '%s' (group '%s') has no FP8 peak (peak_fp8_tflops)",
					       t->name, c->group[g].name);
		}
	if (o->sp == 1 && o->tp == 1)
		return err_set(e, "--sequence-parallel on needs --tp > 1");
	if (o->tp_overlap == 1 && o->sp == 0)
		return err_set(e, "--tp-comm-overlap on needs sequence parallelism, not --sequence-parallel off");
	if (!m->experts && (o->moe_capacity > 0 || o->moe_balance != MOE_BALANCE_MICRO_BATCH))
		return err_set(e, "--moe-%s applies to MoE models, and the model has no experts",
			       o->moe_capacity > 0 ? "capacity" : "balance");
	if (o->moe_balance < 0 || o->moe_balance >= MOE_BALANCE_COUNT ||
	    !(o->moe_capacity == 0 || (o->moe_capacity >= 1 && o->moe_capacity <= 100)))
		return err_set(e, "MoE balance %d or capacity %g out of range", o->moe_balance,
			       o->moe_capacity);
	if (o->attn < 0 || o->attn >= ATTN_COUNT)
		return err_set(e, "attention kernel %d is not one of the %d known", o->attn, ATTN_COUNT);
	if (o->grad_bytes != 0 && o->grad_bytes != 2 && o->grad_bytes != 4)
		return err_set(e, "gradients take 2 or 4 bytes, not %d", o->grad_bytes);
	if (o->layout && !plan_opts_what_if(o))
		return err_set(e, "--layout needs the what-if mode (all of --tp --pp --dp --cp --mbs)");
	if (o->layout && o->exhaustive)
		return err_set(e, "--layout fixes the partition that --exhaustive searches");
	for (int g = 0; o->objective == PLAN_COST && g < c->n_group; g++)
		if (c->group[g].price_gpu_hour <= 0)
			return err_set(e, "--objective cost needs a price per GPU-hour on every node group, but group '%s' has none (its 'price_per_gpu_hour')",
				       c->group[g].name);
	return 0;
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
	if (check_opts(m, c, &opts, e))
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
	rc = run_workers(&S, &s, e);
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

