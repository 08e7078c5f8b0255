/* plan.c: the search over parallel strategies (see plan.h). */
#define _POSIX_C_SOURCE 200809L
#include "plan.h"

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
	o->ilp_time_limit_s = 0.25;
	o->place_dp_max = 20000;
}

bool plan_opts_what_if(const struct plan_opts *o)
{
	return o->tp && o->pp && o->dp && o->cp && o->mbs;
}

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
	unsigned char ilp_group[MAX_STAGES]; /* the ILP's placement for this
					   (TP, CP, PP, DP), from its first
					   strategy */
	int ilp_state;			/* 0 not solved, 1 placed, -1 none */
};

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
	}
	memset(&p->row[p->n_row], 0, sizeof p->row[0]);
	return &p->row[p->n_row++];
}

/* TP must divide heads, KV heads (or be a multiple of them) and the FFN
 * size (Megatron-LM arguments.py; TRAINERS.md). */
static bool tp_fits_model(const struct model *m, int tp)
{
	return m->heads % tp == 0 && m->ffn % tp == 0 &&
	       (m->kv_heads % tp == 0 || tp % m->kv_heads == 0) &&
	       (!m->experts || !m->moe_ffn || m->moe_ffn % tp == 0);
}

/* Fills S->ranks for stages of gpus_per_stage GPUs; false if some group's
 * GPUs cannot be split into whole stages (a stage's data-parallel replicas
 * stay on one GPU type; README "Heterogeneous clusters"). */
static bool split_groups(struct search *S, int gpus_per_stage)
{
	for (int g = 0; g < S->c->n_group; g++) {
		const struct node_group *G = &S->c->group[g];
		int gpus = G->nodes * G->gpus_per_node;

		if (gpus % gpus_per_stage)
			return false;
		S->ranks[g] = gpus / gpus_per_stage;
	}
	return true;
}

/* Even split of the layers over the stages (used to report why a strategy
 * that fits no partition does not fit). */
static void even_split(struct strategy *s, int n_layer)
{
	for (int k = 0; k <= s->n_stages; k++)
		s->first[k] = (unsigned short)((long)k * n_layer / s->n_stages);
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

/* Partitions the layers for placement s->group and keeps the result in
 * *best if it beats it. */
static void try_placement(struct search *S, struct strategy *s,
			  struct strategy *best, struct cost_result *best_r)
{
	struct pipeline_frame f;
	struct cost_result r;
	double t;

	cost_frame(&f, S->m, S->c, s);
	if (partition_solve(&S->lc, &f, s->first, &t))
		return;
	cost_evaluate(&r, S->m, S->c, s, &S->lc);
	if (!r.fits || (best_r->fits && r.iter_s >= best_r->iter_s))
		return;
	*best = *s;
	*best_r = r;
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

static pthread_mutex_t glpk_lock = PTHREAD_MUTEX_INITIALIZER;

/* The placement from the ILP, if GLPK finds one; counts how it ended. */
static bool ilp_placement(struct search *S, struct strategy *s)
{
	struct pipeline_frame f;
	double cap[MAX_GROUPS];
	int group[MAX_STAGES];
	enum ilp_status st;

	cost_frame(&f, S->m, S->c, s);
	for (int g = 0; g < S->c->n_group; g++)
		cap[g] = f.cap_of[g] * s->vp;
	struct placement_problem pb = {
		.pp = s->pp, .n_group = S->c->n_group, .ranks = S->ranks,
		.lc = &S->lc, .a = f.a, .b = f.b, .inflight = f.inflight, .cap = cap,
	};
	pthread_mutex_lock(&glpk_lock);	/* GLPK is not thread safe */
	st = ilp_place(&pb, group, S->o->ilp_time_limit_s);
	pthread_mutex_unlock(&glpk_lock);
	if (st == ILP_NONE) {
		S->p->ilp_failed++;
		return false;
	}
	if (st == ILP_FEASIBLE)
		S->p->ilp_stopped++;
	else
		S->p->ilp_optimal++;
	for (int r = 0; r < s->pp; r++)
		s->group[r] = (unsigned char)group[r];
	return true;
}

/* Whether every node group has the same GPU type, node size and links, so
 * that no placement beats another. */
static bool interchangeable(const struct cluster *c)
{
	for (int g = 1; g < c->n_group; g++) {
		const struct node_group *a = &c->group[0], *b = &c->group[g];

		if (a->gpu != b->gpu || a->gpus_per_node != b->gpus_per_node ||
		    a->intra_bw != b->intra_bw || a->inter_bw != b->inter_bw ||
		    a->intra_lat != b->intra_lat || a->inter_lat != b->inter_lat ||
		    a->intra_eff != b->intra_eff || a->inter_eff != b->inter_eff ||
		    a->fabric != b->fabric)
			return false;
	}
	return true;
}

/* The joint placement and partition DP (exact, vp = 1). */
static void place_dp(struct search *S, struct strategy *s, struct strategy *best,
		     struct cost_result *best_r)
{
	struct pipeline_frame f;
	struct cost_result r;
	int group[MAX_STAGES];
	double t;

	cost_frame(&f, S->m, S->c, s);
	if (partition_place(&S->lc, &f, S->ranks, group, s->first, &t))
		return;
	for (int k = 0; k < s->pp; k++)
		s->group[k] = (unsigned char)group[k];
	cost_evaluate(&r, S->m, S->c, s, &S->lc);
	if (r.fits && (!best_r->fits || r.iter_s < best_r->iter_s)) {
		*best = *s;
		*best_r = r;
	}
}

/* Places, partitions and costs one strategy; records a row. Returns whether
 * it fits. One node group: the partition DP. Several: without virtual
 * stages the joint placement DP when its work is small enough (exact);
 * otherwise candidate placements, each refined by the partition DP: for
 * the schedules after 1F1B the placement 1F1B found for the same strategy
 * (with interleaving, when the joint DP found it, the blocks below too: a
 * placement best for 1F1B may not be for virtual stages); for 1F1B
 * contiguous blocks of each group in every order (up to 4 groups; beyond,
 * in the cluster's order) and, with more than 4 groups that differ, GLPK's
 * ILP placement, solved once per (TP, CP, PP, DP). */
static bool evaluate(struct search *S, struct strategy *s)
{
	struct strategy best = *s;
	struct cost_result r = { 0 };
	int order[MAX_GROUPS], n = 0;
	bool small = partition_place_work(S->ranks, S->c->n_group, S->m->n_layer, s->pp) <=
		     S->o->place_dp_max;

	S->p->evaluated++;
	for (int g = 0; g < S->c->n_group; g++)
		if (S->ranks[g])
			order[n++] = g;
	block_placement(S, s, order, n);
	if (S->o->exhaustive) {
		exhaustive_search(&best, &r, s, S->ranks, S->m, S->c, &S->lc);
	} else if (n == 1) {
		try_placement(S, s, &best, &r);
	} else if (s->vp == 1 && small) {
		place_dp(S, s, &best, &r);
	} else if (S->have_v1) {
		/* the schedules after 1F1B take its placement */
		memcpy(s->group, S->v1_group, sizeof s->group);
		try_placement(S, s, &best, &r);
		if (s->vp > 1 && small)
			try_blocks(S, s, order, n, &best, &r);
	} else {
		try_blocks(S, s, order, n, &best, &r);
		if (n > 4 && !interchangeable(S->c)) {
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
	if (s->vp == 1 && r.fits && !S->have_v1) {
		memcpy(S->v1_group, best.group, sizeof S->v1_group);
		S->have_v1 = true;
	}
	if (r.fits) {
		/* A strategy the chosen trainer cannot run is not ranked; it
		 * still counts as fitting for the micro-batch pruning. */
		if (S->o->trainer >= 0 &&
		    trainer_check((enum trainer)S->o->trainer, S->m, S->c, &best, NULL))
			return true;
		struct plan_row *row = push_row(S);

		row->s = best;
		row->r = r;
		return true;
	}
	if (S->o->keep_infeasible) {
		struct plan_row *row = push_row(S);
		const struct gpu_type *gpu;

		even_split(s, S->m->n_layer);
		cost_evaluate(&row->r, S->m, S->c, s, &S->lc);
		row->s = *s;
		gpu = &S->c->gpu[S->c->group[s->group[row->r.heaviest_rank]].gpu];
		snprintf(row->why, sizeof row->why,
			 "no layer partition fits: an even split needs %.1f GiB per GPU on rank %d (%s, %.0f GiB)",
			 row->r.peak_bytes / GiB, row->r.heaviest_rank, gpu->name,
			 gpu->mem_bytes / GiB);
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
		for (int vp = o->vp ? o->vp : 1; vp <= (o->vp ? o->vp : 4); vp++) {
			if ((sc == SCHED_INTERLEAVED) != (vp > 1))
				continue;
			/* Interleaving needs micro-batches >= pp (Megatron);
			 * ZB-H1's bubble (Qi et al. 2024) assumes it too. */
			if ((vp > 1 || sc == SCHED_ZB_H1) && s->micro_batches < s->pp)
				continue;
			if (s->pp * vp > S->m->n_layer || s->pp * vp > MAX_STAGES)
				continue;
			s->schedule = (enum schedule)sc;
			s->vp = vp;
			s->n_stages = s->pp * vp;
			fits |= evaluate(S, s);
		}
	}
	return fits;
}

/* Micro-batch sizes dividing the per-replica batch, ascending. Memory grows
 * with the micro-batch size under every schedule, so once none fits the
 * larger ones are skipped: a safe pruning. */
static void each_mbs(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	int per_replica = s->gbs / s->dp;

	for (int mbs = 1; mbs <= per_replica && !*rc; mbs++) {
		if (per_replica % mbs || (S->o->mbs && mbs != S->o->mbs))
			continue;
		s->mbs = mbs;
		s->micro_batches = per_replica / mbs;
		if (cost_layers(&S->lc, S->m, S->c, s, e)) {
			*rc = -1;
			return;
		}
		bool fits = each_schedule(S, s);
		cost_layers_free(&S->lc);
		if (!fits)
			break;
	}
}

/* ZeRO stages: 0 and 1 (distributed optimizer) with pipelines; 2 and 3 too
 * without (as FSDP/DeepSpeed run them). Then recomputation modes. */
static void each_memory_option(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	for (int z = 0; z <= 3 && !*rc; z++) {
		if (S->o->zero >= 0 ? z != S->o->zero : s->pp > 1 && z > 1)
			continue;
		s->zero = z;
		for (int rcm = 0; rcm < RECOMPUTE_COUNT && !*rc; rcm++) {
			if (S->o->recompute >= 0 && rcm != S->o->recompute)
				continue;
			s->recompute = (enum recompute)rcm;
			each_mbs(S, s, e, rc);
		}
	}
}

/* Expert-parallel degrees: divisors of dp * cp that divide the experts. */
static void each_ep(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	int span = s->dp * s->cp;

	for (int ep = 1; ep <= span && !*rc; ep++) {
		if (span % ep || (S->m->experts ? S->m->experts % ep : ep > 1))
			continue;
		s->ep = ep;
		each_memory_option(S, s, e, rc);
	}
}

/* One (TP, CP, PP, DP) of the search: the unit of work of a thread. */
struct degree {
	int tp, cp, pp, dp;
};

/* Every (TP, CP, PP, DP) the cluster and options allow, into a malloc'd
 * array (caller frees) of *n. */
static struct degree *each_degree(struct search *S, const struct strategy *s, int *n)
{
	const struct plan_opts *o = S->o;
	int N = S->c->total_gpus, node = 0, cap = 16;
	struct degree *d = xreallocarray(NULL, (size_t)cap, sizeof *d);

	*n = 0;
	for (int g = 0; g < S->c->n_group; g++)
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
				    s->gbs % dp || !split_groups(S, N / pp))
					continue;
				if (*n == cap)
					d = xreallocarray(d, (size_t)(cap *= 2), sizeof *d);
				d[(*n)++] = (struct degree){ tp, cp, pp, dp };
			}
		}
	}
	return d;
}

/* The work shared by the search threads. */
struct pool {
	const struct degree *deg;
	int n, next, done;
	pthread_mutex_t lock;
};

/* One search thread: its own state, rows and error. */
struct worker {
	struct search S;
	struct strategy s;
	struct pool *pool;
	struct err e;
	int rc;
	pthread_t thread;
};

/* Takes degrees from the pool until none is left or one fails. */
static void *work(void *arg)
{
	struct worker *w = arg;
	struct search *S = &w->S;
	struct pool *pool = w->pool;

	for (;;) {
		int i;

		pthread_mutex_lock(&pool->lock);
		i = w->rc ? pool->n : pool->next++;
		pthread_mutex_unlock(&pool->lock);
		if (i >= pool->n)
			break;
		w->s.tp = pool->deg[i].tp;
		w->s.cp = pool->deg[i].cp;
		w->s.pp = pool->deg[i].pp;
		w->s.dp = pool->deg[i].dp;
		w->s.sp = w->s.tp > 1;
		S->ilp_state = 0;
		split_groups(S, S->c->total_gpus / w->s.pp);
		each_ep(S, &w->s, &w->e, &w->rc);
		if (S->o->progress) {
			pthread_mutex_lock(&pool->lock);
			S->o->progress((double)++pool->done / pool->n, S->o->progress_arg);
			pthread_mutex_unlock(&pool->lock);
		}
	}
	return NULL;
}

/* Threads for the search: o->threads, or one per online CPU (at most 16). */
static int n_threads(const struct plan_opts *o)
{
	long n = o->threads ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* Runs the search on the threads and merges their rows into S->p. Returns
 * 0, or -1 with e set by the first thread that failed. */
static int run_workers(struct search *S, const struct strategy *s, struct err *e)
{
	struct pool pool = { .lock = PTHREAD_MUTEX_INITIALIZER };
	int nt = n_threads(S->o), rc = 0;
	struct degree *deg = each_degree(S, s, &pool.n);
	struct worker *w = xcalloc((size_t)nt, sizeof *w);

	pool.deg = deg;
	if (nt > pool.n)
		nt = pool.n > 0 ? pool.n : 1;
	for (int t = 0; t < nt; t++) {
		w[t].S = *S;
		w[t].S.p = xcalloc(1, sizeof *w[t].S.p);
		w[t].s = *s;
		w[t].pool = &pool;
		if (t && pthread_create(&w[t].thread, NULL, work, &w[t])) {
			plan_free(w[t].S.p);
			nt = t;	/* fewer threads: the others do the work */
			break;
		}
	}
	work(&w[0]);
	for (int t = 1; t < nt; t++)
		pthread_join(w[t].thread, NULL);
	for (int t = 0; t < nt; t++) {
		struct plan *p = w[t].S.p;

		if (w[t].rc && !rc) {
			rc = -1;
			*e = w[t].e;
		}
		if (p->n_row) {
			S->p->row = xreallocarray(S->p->row, (size_t)(S->p->n_row + p->n_row),
						  sizeof *S->p->row);
			memcpy(S->p->row + S->p->n_row, p->row, (size_t)p->n_row * sizeof *p->row);
			S->p->n_row += p->n_row;
		}
		S->p->evaluated += p->evaluated;
		S->p->ilp_optimal += p->ilp_optimal;
		S->p->ilp_stopped += p->ilp_stopped;
		S->p->ilp_failed += p->ilp_failed;
		plan_free(p);
	}
	free(w);
	free(deg);
	return rc;
}

static int by_throughput(const void *a, const void *b)
{
	const struct plan_row *x = a, *y = b;
	bool fx = !x->why[0], fy = !y->why[0];

	if (fx != fy)
		return fx ? -1 : 1;
	if (x->r.tokens_per_s != y->r.tokens_per_s)
		return x->r.tokens_per_s > y->r.tokens_per_s ? -1 : 1;
	if (x->r.peak_bytes != y->r.peak_bytes)
		return x->r.peak_bytes < y->r.peak_bytes ? -1 : 1;
	/* then the choices, so that the order never depends on the threads */
	const int kx[] = { x->s.tp, x->s.cp, x->s.pp, x->s.dp, x->s.ep, x->s.mbs,
			   x->s.schedule, x->s.vp, x->s.recompute, x->s.zero };
	const int ky[] = { y->s.tp, y->s.cp, y->s.pp, y->s.dp, y->s.ep, y->s.mbs,
			   y->s.schedule, y->s.vp, y->s.recompute, y->s.zero };
	for (size_t i = 0; i < sizeof kx / sizeof *kx; i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return 0;
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
	if (o->dp && o->gbs % o->dp)
		return err_set(e, "--dp %d must divide the global batch (%d)", o->dp, o->gbs);
	if (o->dp && o->mbs && (o->gbs / o->dp) % o->mbs)
		return err_set(e, "--mbs %d must divide the batch per DP replica (%d)", o->mbs,
			       o->gbs / o->dp);
	if (o->cp > 1 && o->seq % (2 * o->cp))
		return err_set(e, "--cp %d needs a sequence length divisible by %d", o->cp, 2 * o->cp);
	if (o->vp && o->schedule >= 0 && (o->vp > 1) != (o->schedule == SCHED_INTERLEAVED))
		return err_set(e, "--vp %d does not go with --schedule %s", o->vp,
			       schedule_name((enum schedule)o->schedule));
	if (o->exhaustive && (m->n_layer > 16 || c->total_gpus > 64))
		return err_set(e, "--exhaustive is for at most 14 blocks and 64 GPUs (it tries every partition and placement)");
	return 0;
}

int plan_search(struct plan **out, struct model *m, const struct cluster *c,
		const struct plan_opts *o, struct err *e)
{
	struct search S = { .m = m, .c = c, .o = o };
	struct strategy s;
	struct plan_opts opts = *o;
	double t0 = now();
	int rc = 0;

	if (opts.seq && model_set_seq(m, opts.seq, e))
		return -1;
	opts.seq = m->seq;
	opts.gbs = opts.gbs ? opts.gbs : m->gbs;
	if (check_opts(m, c, &opts, e))
		return -1;
	S.o = &opts;
	S.p = xcalloc(1, sizeof *S.p);
	memset(&s, 0, sizeof s);
	s.gbs = opts.gbs;
	s.seq = opts.seq;
	rc = run_workers(&S, &s, e);
	if (opts.progress)
		opts.progress(1.0, opts.progress_arg);
	if (rc) {
		plan_free(S.p);
		return -1;
	}
	if (S.p->n_row)
		qsort(S.p->row, (size_t)S.p->n_row, sizeof *S.p->row, by_throughput);
	while (S.p->n_feasible < S.p->n_row && !S.p->row[S.p->n_feasible].why[0])
		S.p->n_feasible++;
	S.p->search_s = now() - t0;
	*out = S.p;
	return 0;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	free(p->row);
	free(p);
}
