/* pool.c: the search's threads and its work budget: the (TP, CP, PP, DP)
 * tuples handed out in order, each tuple's share of the budget, and the
 * merge of the threads' rows that keeps the result independent of the
 * threads (search_int.h). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cluster.h"
#include "model.h"
#include "search_int.h"
#include "util.h"

/* What the search of one tuple did: work units (count; search_int.h),
 * the count at the start of each strategy costed (start[n_start], owned),
 * whether it ran to its end (complete) or stopped at its cap, its ILP and
 * its error, each at the count when it happened. */
struct tuple_rec {
	long count, ilp_at, err_at;
	long *start, n_start;
	int ilp_kind;
	bool done, complete, failed;
};

/* The work shared by the search threads. The tuples are handed out in
 * order. With a work budget B, tuple i takes B - P(i) work units, P(i) the
 * units the tuples before it take (each the lesser of what it does and
 * what is left): the search of tuple i with any cap >= B - P(i) does the
 * same work in the same order up to that share (the units count
 * deterministic work: strategies and DP cells), so a thread
 * searches a tuple with a cap from the prefix known so far (frontier: the
 * tuples [0, frontier) are done and take frontier_p) and the merge keeps
 * what falls within the exact share. The result does not depend on the
 * threads. */
struct pool {
	const struct degree *deg;
	struct tuple_rec *rec; /* [n] */
	int n, next, done;
	int frontier;
	long frontier_p;
	long budget;   /* 0: none */
	double expect; /* --exhaustive: the work units expected */
	long evals;    /* strategies costed, for the progress */
	double shown;  /* the last fraction reported */
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
	if (pool->expect > 0) /* the tuples differ too much in work */
		f = (double)pool->evals / pool->expect;
	if (f > 0.999)
		f = 0.999;
	if (f < pool->shown)
		f = pool->shown;
	pool->shown = f;
	S->o->progress(f, S->o->progress_arg);
}

void pool_refresh(struct search *S)
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

bool pool_spent(struct search *S)
{
	if (S->count >= S->cap)
		S->stop = true;
	return S->stop;
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
		S->launch_best = INFINITY;
		for (int k = 0; k < SEARCH_PLAN_KINDS; k++)
			S->plan_best[k] = INFINITY;
		S->bound_plan = false;
		S->tuple = i;
		S->count = S->reported = 0;
		S->cells = 0;
		S->start = NULL;
		S->n_start = S->cap_start = 0;
		S->stop = false;
		S->ilp_at = -1;
		search_split_groups(S, w->s.tp * w->s.cp, S->c->total_gpus / w->s.pp);
		search_tuple(S, &w->s, &w->e, &w->rc);
		if (S->ilp_at >= 0)
			w->used_glpk = true;
		pthread_mutex_lock(&pool->lock);
		pool->rec[i] = (struct tuple_rec){
			.count = S->count,
			.start = S->start,
			.n_start = S->n_start,
			.ilp_at = S->ilp_at,
			.ilp_kind = S->ilp_kind,
			.err_at = S->err_at,
			.failed = w->rc != 0,
			.complete = !S->stop && !w->rc,
			.done = true,
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
	if (w->used_glpk)
		place_free_glpk();
	S->start = NULL;
	return NULL;
}

/* Threads for the search: o->threads, or one per online CPU (at most 16). */
static int n_threads(const struct plan_opts *o)
{
	long n = o->threads ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 16 ? 16
				  : (int)n;
}

/* The strategies of r that started within its share (their start below
 * it; r->start is increasing). */
static long started_within(const struct tuple_rec *r, long share)
{
	long lo = 0, hi = r->n_start;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (r->start[mid] < share)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Merges the threads' rows into S->p, the tuples in order, each within its
 * share of the budget (struct pool), and counts the strategies, work units,
 * ILPs and tuples searched. Returns 0, or -1 with e set to the error of the first
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
		if (left <= 0 || !r->done) { /* not reached */
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
		else /* stopped within its share */
			P->truncated = true;
		P->evaluated += started_within(r, left);
		P->work += r->count < left ? r->count : left;
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

		if (!S->p->n_row && p->n_row) {
			/* the first rows: taken whole, not copied (they are
			 * large, and fresh pages cost as much as the copy) */
			free(S->p->row);
			S->p->row = p->row;
			p->row = NULL;
		} else {
			S->p->row = xreallocarray(S->p->row, (size_t)(S->p->n_row + p->n_row) + 1,
						  sizeof *S->p->row);
		}
		for (int k = 0; k < p->n_row; k++)
			if (w[t].S.tag[k].at < share[w[t].S.tag[k].tuple]) {
				if (p->row)
					S->p->row[S->p->n_row + kept] = p->row[k];
				else if (kept != k)
					S->p->row[kept] = S->p->row[k];
				kept++;
			}
		S->p->n_row += kept;
		plan_rows_adopt(S->p, p);
	}
	if (P->truncated && pool->budget)
		P->budget = pool->budget;
	free(share);
	return rc;
}

/* --exhaustive's work, before it starts: every tuple searched without
 * costing (search_int.h dry; every strategy counted as fitting, so no
 * micro-batch is pruned: an upper bound), the candidates of each strategy
 * summed into *cand and the strategies into *n_strat. Returns 0, or -1
 * with e set where a tuple's layer costs fail. */
static int exhaustive_estimate(const struct search *S0, const struct strategy *s,
			       const struct degree *deg, int n, double *cand, long *n_strat,
			       struct err *e)
{
	struct search S = *S0;
	struct strategy w = *s;
	int rc = 0;

	S.dry = true;
	S.pool = NULL;
	S.cap = LONG_MAX;
	*cand = 0;
	*n_strat = 0;
	for (int i = 0; i < n && !rc; i++) {
		w.tp = deg[i].tp;
		w.cp = deg[i].cp;
		w.pp = deg[i].pp;
		w.dp = deg[i].dp;
		w.sp = w.tp > 1 && S.o->sp != 0;
		S.cells = 0;
		S.n_start = S.count = 0;
		S.stop = false;
		search_split_groups(&S, w.tp * w.cp, S.c->total_gpus / w.pp);
		search_tuple(&S, &w, e, &rc);
		*cand += S.cells;
		*n_strat += S.n_start;
	}
	return rc;
}

int pool_run(struct search *S, const struct strategy *s, struct err *e)
{
	struct pool pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .budget = S->o->work_budget };
	int nt = n_threads(S->o), rc = 0;
	struct degree *deg = search_degrees(S, s, &pool.n);
	struct worker *w = xcalloc((size_t)nt, sizeof *w);

	if (pool.budget <= 0)
		pool.budget = S->o->exhaustive ? 0 : PLAN_WORK_BUDGET;
	if (S->o->exhaustive) {
		double cand;
		long n_strat;

		if (exhaustive_estimate(S, s, deg, pool.n, &cand, &n_strat, e)) {
			free(deg);
			free(w);
			return -1;
		}
		if (cand > SEARCH_EXHAUSTIVE_MAX) {
			free(deg);
			free(w);
			return err_set(e, "--exhaustive would cost %.3g placements x partitions over %ld strategies, more than its limit of %.0e (about 50 s): fix --tp, --pp, --schedule or --mbs, or use a smaller model or cluster",
				       cand, n_strat, SEARCH_EXHAUSTIVE_MAX);
		}
		/* progress by the work expected (search_evaluate's units) */
		pool.expect = (double)n_strat + cand * SEARCH_EVAL_CELLS * (S->m->n_layer + 2) / SEARCH_UNIT_CELLS;
	}
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
			nt = t; /* fewer threads: the others do the work */
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
	for (int i = 0; i < pool.n; i++)
		free(pool.rec[i].start);
	free(pool.rec);
	free(w);
	free(deg);
	return rc;
}
