/* check_search.c: property tests of the search. On hundreds of random small
 * instances (uneven layers, 1 to 3 GPU types, different node sizes and
 * bandwidths, tight memory) the DP + ILP search must find, for every
 * strategy, the cost the exhaustive reference search (--exhaustive: every
 * placement and partition through cost_evaluate) finds, so both rankings
 * agree row by row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "model.h"
#include "plan.h"
#include "testutil.h"
#include "util.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

static unsigned rng;
static int n_groups;	/* groups of random_cluster; 0: 1 to 3 at random */

static unsigned next(void)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) & 0xffffff;
}

static int pick(int lo, int hi) { return lo + (int)(next() % (unsigned)(hi - lo + 1)); }
static double uniform(double lo, double hi) { return lo + (hi - lo) * (next() / 16777216.0); }

/* A small Llama-style model with 2 to 6 blocks made uneven: each block's
 * FLOPs and activations scaled by a random factor in [0.5, 2]. */
static struct model *random_model(void)
{
	struct model *m = xcalloc(1, sizeof *m);

	m->name = xstrdup("random");
	m->hidden = 1024;
	m->layers = pick(2, 6);
	m->heads = m->kv_heads = 8;
	m->head_dim = 128;
	m->ffn = 4096;
	m->ffn_kind = FFN_SWIGLU;
	m->vocab = 32000;
	m->seq = 2048;
	m->max_pos = 2048;
	m->gbs = 8 << pick(0, 2);
	m->dtype_bytes = 2;
	model_derive_layers(m);
	for (int l = 1; l <= m->layers; l++) {
		double f = uniform(0.5, 2.0);

		m->layer[l].flops_per_token *= f;
		m->layer[l].act_bytes_per_token *= f;
	}
	return m;
}

/* 2 or 3 node groups of different GPU types, node sizes and links; the
 * memory is tight: between 0.6 and 3 times an even share of the model
 * states, plus the 2 GiB allowance. */
static struct cluster *random_cluster(const struct model *m)
{
	struct cluster *c = xcalloc(1, sizeof *c);
	static const int sizes[] = { 1, 2, 4 };
	double states = 18.0 * model_params(m);

	c->name = xstrdup("random");
	c->n_gpu = c->n_group = n_groups ? n_groups : pick(1, 3);
	c->gpu = xcalloc((size_t)c->n_gpu, sizeof *c->gpu);
	c->group = xcalloc((size_t)c->n_group, sizeof *c->group);
	c->fabric_bw = 12.5e9;
	c->fabric_lat = 10e-6;
	for (int g = 0; g < c->n_group; g++) {
		struct gpu_type *t = &c->gpu[g];
		struct node_group *G = &c->group[g];
		char name[16];

		snprintf(name, sizeof name, "gpu%d", g);
		t->name = xstrdup(name);
		t->peak_flops = uniform(100e12, 1000e12);
		t->hbm_bw = 2e12;
		t->eff_max = uniform(0.4, 0.7);
		t->eff_half_flop = uniform(0, 50e9);
		snprintf(name, sizeof name, "g%d", g);
		G->name = xstrdup(name);
		G->gpus_per_node = n_groups > 3 ? 1 : sizes[pick(0, 2)];
		G->nodes = n_groups > 3 ? 1 : pick(1, 4 / G->gpus_per_node > 1 ? 4 / G->gpus_per_node : 1);
		G->gpu = g;
		G->intra_bw = uniform(16e9, 450e9);
		G->intra_lat = 2e-6;
		G->inter_bw = uniform(6e9, 400e9);
		G->inter_lat = 5e-6;
		G->intra_eff = 0.75;
		G->inter_eff = 0.9;
		G->fabric = pick(0, 1);
		c->total_gpus += G->nodes * G->gpus_per_node;
	}
	for (int g = 0; g < c->n_group; g++)
		c->gpu[g].mem_bytes = 2 * GiB + uniform(0.6, 3.0) * states / c->total_gpus;
	return c;
}

/* The same strategy (all degrees and choices), partition aside. */
static bool same_choice(const struct strategy *a, const struct strategy *b)
{
	return a->tp == b->tp && a->cp == b->cp && a->pp == b->pp && a->dp == b->dp &&
	       a->ep == b->ep && a->vp == b->vp && a->mbs == b->mbs &&
	       a->schedule == b->schedule && a->recompute == b->recompute &&
	       a->zero == b->zero;
}

/* Best iteration time among rows of p with the choices of s; -1 if none. */
static double time_of(const struct plan *p, const struct strategy *s)
{
	for (int i = 0; i < p->n_feasible; i++)
		if (same_choice(&p->row[i].s, s))
			return p->row[i].r.iter_s;
	return -1;
}

/* Runs both searches on one random instance with schedule sc; checks that
 * every strategy fits in both or in neither and costs the same, so the
 * rankings agree. Returns the strategies compared. */
static int compare(unsigned seed, int sc)
{
	struct model *m;
	struct cluster *c;
	struct plan *fast = NULL, *ref = NULL;
	struct plan_opts o;
	struct err e = { "" };
	int n;

	rng = seed;
	m = random_model();
	c = random_cluster(m);
	plan_opts_init(&o);
	o.schedule = sc;
	ck_assert_int_eq(plan_search(&fast, m, c, &o, &e), 0);
	o.exhaustive = true;
	ck_assert_int_eq(plan_search(&ref, m, c, &o, &e), 0);
	ck_assert_msg(fast->n_feasible == ref->n_feasible, "seed %u: %d fit, exhaustive %d",
		      seed, fast->n_feasible, ref->n_feasible);
	n = ref->n_feasible;
	for (int i = 0; i < n; i++) {
		const struct strategy *s = &ref->row[i].s;
		double want = ref->row[i].r.iter_s, got = time_of(fast, s);

		ck_assert_msg(got > 0 && fabs(got - want) <= 1e-9 * want,
			      "seed %u: tp %d cp %d pp %d dp %d mbs %d %s rc %d zero %d: %.12g s, exhaustive %.12g s",
			      seed, s->tp, s->cp, s->pp, s->dp, s->mbs, schedule_name(s->schedule),
			      s->recompute, s->zero, got, want);
		/* The ranking agrees: the i-th times are equal. */
		ck_assert_rel(fast->row[i].r.iter_s, want, 1e-9);
	}
	plan_free(fast);
	plan_free(ref);
	model_free(m);
	cluster_free(c);
	return n;
}

/* Paths that are not exact (the candidate placements, forced by a zero
 * budget for the placement DP, with GLPK's ILP placement when there are more
 * than 4 groups; interleaved schedules, whose partition DP minimises an
 * upper bound) must still never beat the reference: a strategy cheaper than
 * the exhaustive optimum would mean the two searches cost it differently.
 * Returns the ILP solves seen; adds the strategies compared to *rows. */
static long never_better(unsigned seed, int sc, long place_dp_max, int *rows)
{
	struct model *m;
	struct cluster *c;
	struct plan *fast = NULL, *ref = NULL;
	struct plan_opts o;
	struct err e = { "" };
	long ilp;

	rng = seed;
	m = random_model();
	c = random_cluster(m);
	plan_opts_init(&o);
	o.schedule = sc;
	o.place_dp_max = place_dp_max;
	ck_assert_int_eq(plan_search(&fast, m, c, &o, &e), 0);
	o.exhaustive = true;
	ck_assert_int_eq(plan_search(&ref, m, c, &o, &e), 0);
	for (int i = 0; i < fast->n_feasible; i++) {
		double want = time_of(ref, &fast->row[i].s);

		ck_assert_msg(want > 0 && fast->row[i].r.iter_s >= want * (1 - 1e-9),
			      "seed %u: %.12g s beats the exhaustive %.12g s", seed,
			      fast->row[i].r.iter_s, want);
	}
	ilp = fast->ilp_optimal + fast->ilp_stopped + fast->ilp_failed;
	*rows += fast->n_feasible;
	plan_free(fast);
	plan_free(ref);
	model_free(m);
	cluster_free(c);
	return ilp;
}

START_TEST(candidate_placements_never_better)
{
	int rows = 0;

	for (unsigned seed = 1; seed <= 40; seed++)
		never_better(seed * 15485863u, SCHED_1F1B, 0, &rows);
	ck_assert_int_gt(rows, 20);
}
END_TEST

/* Five groups of one GPU: the ILP places the ranks. */
START_TEST(ilp_placements_never_better)
{
	long ilp = 0;
	int rows = 0;

	n_groups = 5;
	for (unsigned seed = 1; seed <= 10; seed++)
		ilp += never_better(seed * 49979687u, SCHED_1F1B, 0, &rows);
	n_groups = 0;
	ck_assert_int_gt(ilp, 5);
	ck_assert_int_gt(rows, 5);
}
END_TEST

START_TEST(interleaved_never_better)
{
	int rows = 0;

	for (unsigned seed = 1; seed <= 40; seed++)
		never_better(seed * 32452843u, SCHED_INTERLEAVED, 20000, &rows);
	ck_assert_int_gt(rows, 20);
}
END_TEST

START_TEST(search_is_exact_1f1b)
{
	int n = 0;

	for (unsigned seed = 1; seed <= 100; seed++)
		n += compare(seed * 7919u + (unsigned)_i, SCHED_1F1B);
	ck_assert_int_gt(n, 100);
}
END_TEST

START_TEST(search_is_exact_gpipe_zb)
{
	int n = 0;

	for (unsigned seed = 1; seed <= 50; seed++) {
		n += compare(seed * 104729u, SCHED_GPIPE);
		n += compare(seed * 104729u, SCHED_ZB_H1);
	}
	ck_assert_int_gt(n, 50);
}
END_TEST

static Suite *search_suite(void)
{
	Suite *s = suite_create("search");
	TCase *tc = tcase_create("exact");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, search_is_exact_1f1b, 0, 2);
	tcase_add_test(tc, search_is_exact_gpipe_zb);
	tcase_add_test(tc, candidate_placements_never_better);
	tcase_add_test(tc, ilp_placements_never_better);
	tcase_add_test(tc, interleaved_never_better);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(search_suite());
}
