/* check_budget.c: the search's deterministic bounds (plan_opts.work_budget,
 * the ILP's node limit), its progress calls and GLPK's per-thread
 * environment: a budget gives the same ranking for any thread count, keeps
 * a subset of the full ranking, says when it ended the search, and ends a
 * search that is otherwise long; the search threads free what GLPK keeps
 * per thread (LeakSanitizer in the sanitizer build reports it otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "partition.h"
#include "plan.h"
#include "testutil.h"
#include "util.h"

/* Row i of plan p, expanded into a temporary of the enclosing block. */
#define ROW(p, i) (*plan_row_get((p), (i), &(struct plan_row){ 0 }))

#define GiB (1024.0 * 1024.0 * 1024.0)

/* n_group node groups of nodes[g] nodes of gpn GPUs, each group its own GPU
 * type (peak and memory differ), on two fabrics. */
static struct cluster *mixed_cluster(int n_group, const int *nodes, int gpn)
{
	struct cluster *c = xcalloc(1, sizeof *c);

	c->name = xstrdup("mixed");
	c->n_gpu = c->n_group = n_group;
	c->gpu = xcalloc((size_t)n_group, sizeof *c->gpu);
	c->group = xcalloc((size_t)n_group, sizeof *c->group);
	c->fabric_bw = 12.5e9;
	c->fabric_lat = 10e-6;
	for (int g = 0; g < n_group; g++) {
		struct gpu_type *t = &c->gpu[g];
		struct node_group *G = &c->group[g];
		char name[16];

		snprintf(name, sizeof name, "gpu%d", g);
		t->name = xstrdup(name);
		t->peak_flops = (300 + 150 * g) * 1e12;
		t->hbm_bw = 2e12;
		t->eff_max = 0.5;
		t->mem_bytes = (24 + 8 * (g % 3)) * GiB;
		snprintf(name, sizeof name, "g%d", g);
		G->name = xstrdup(name);
		G->gpus_per_node = gpn;
		G->nodes = nodes[g];
		G->gpu = g;
		G->intra_bw = 300e9 + 20e9 * g;
		G->intra_lat = 2e-6;
		G->inter_bw = 50e9 + 10e9 * g;
		G->inter_lat = 5e-6;
		G->intra_eff = 0.75;
		G->inter_eff = 0.9;
		G->fabric = g % 2;
		c->total_gpus += G->nodes * G->gpus_per_node;
	}
	return c;
}

/* The ranking as text: every choice, the partition, the placement and the
 * times in hexadecimal floating point (exact). Malloc'd; caller frees. */
static char *ranking_text(const struct plan *p)
{
	size_t cap = 256 + (size_t)p->n_row * 512, n = 0;
	char *buf = xcalloc(cap, 1);

	n += (size_t)snprintf(buf + n, cap - n, "%ld %d %d %d %d %d %ld %ld %ld\n", p->evaluated,
			      p->n_row, p->n_feasible, p->truncated, p->degrees,
			      p->degrees_searched, p->ilp_optimal, p->ilp_stopped, p->ilp_failed);
	for (int i = 0; i < p->n_row; i++) {
		const struct plan_row *r = &ROW(p, i);
		const struct strategy *s = &r->s;

		n += (size_t)snprintf(buf + n, cap - n, "%d %d %d %d %d %d %d %d %d %d %d %a %a %s |",
				      s->tp, s->cp, s->pp, s->dp, s->ep, s->mbs, s->schedule, s->vp,
				      s->recompute, s->zero, s->fp8, r->r.iter_s, r->r.peak_bytes,
				      r->why);
		for (int k = 0; k <= s->n_stages; k++)
			n += (size_t)snprintf(buf + n, cap - n, " %d", s->first[k]);
		n += (size_t)snprintf(buf + n, cap - n, " @");
		for (int k = 0; k < s->pp; k++)
			n += (size_t)snprintf(buf + n, cap - n, " %d", s->group[k]);
		n += (size_t)snprintf(buf + n, cap - n, "\n");
		ck_assert_uint_lt(n, cap);
	}
	return buf;
}

static struct plan *search(struct model *m, const struct cluster *c, long budget, int threads,
			   bool infeasible)
{
	struct plan *p = NULL;
	struct plan_opts o;
	struct err e = { "" };

	plan_opts_init(&o);
	o.work_budget = budget;
	o.threads = threads;
	o.keep_infeasible = infeasible;
	ck_assert_msg(plan_search(&p, m, c, &o, &e) == 0, "%s", e.msg);
	return p;
}

/* Every budget up to most of the search gives one ranking for 1, 2, 3 and 4
 * threads, byte for byte (rows, counts, truncated); the whole search on
 * 1 and 4 threads: ilp_search_deterministic_and_freed below. */
START_TEST(budget_same_for_any_threads)
{
	static const int nodes[] = { 4, 2 };
	struct model *m = test_small_model(12, 64);
	struct cluster *c = mixed_cluster(2, nodes, 4);
	struct plan *full = search(m, c, 0, 1, false);
	static const long budgets[] = { 1, 17, 100, 333, 1000 };

	ck_assert_int_gt(full->work, 1000);
	ck_assert(!full->truncated);
	ck_assert_int_eq(full->degrees_searched, full->degrees);
	/* every budget and 1 to 4 threads; under the sanitizers' quarter
	 * (test_seeds) the budgets 1 and 333 and 1, 2 and 4 threads */
	size_t step = test_seeds(4) < 4 ? 3 : 1;

	for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b += step)
		for (int inf = 0; inf <= 1; inf++) {
			struct plan *one = search(m, c, budgets[b], 1, inf);
			char *want = ranking_text(one);

			ck_assert(one->truncated);
			ck_assert_int_eq(one->work, budgets[b]);
			ck_assert_int_le(one->evaluated, budgets[b]);
			ck_assert_int_lt(one->degrees_searched, one->degrees);
			for (int t = 2; t <= 4; t += step > 1 ? 2 : 1) {
				struct plan *p = search(m, c, budgets[b], t, inf);
				char *got = ranking_text(p);

				ck_assert_msg(!strcmp(got, want), "budget %ld, %d threads: the ranking differs",
					      budgets[b], t);
				free(got);
				plan_free(p);
			}
			free(want);
			plan_free(one);
		}
	plan_free(full);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* A budget's ranking holds strategies of the full search, with their times;
 * a budget of the whole search or more changes nothing. */
START_TEST(budget_keeps_what_was_found)
{
	static const int nodes[] = { 2, 2 };
	struct model *m = test_small_model(8, 64);
	struct cluster *c = mixed_cluster(2, nodes, 4);
	struct plan *full = search(m, c, 0, 3, false);
	struct plan *cut = search(m, c, full->work / 3, 3, false);
	struct plan *all = search(m, c, full->work, 3, false);
	struct plan *more = search(m, c, full->work + 1000, 3, false);
	char *a = ranking_text(full), *b = ranking_text(all), *d = ranking_text(more);

	ck_assert(cut->truncated);
	ck_assert_int_gt(cut->n_feasible, 0);
	ck_assert_int_lt(cut->n_feasible, full->n_feasible);
	struct plan_row *rows = test_rows(full);

	for (int i = 0; i < cut->n_feasible; i++) {
		const struct strategy *s = &ROW(cut, i).s;
		bool found = false;

		for (int j = 0; j < full->n_feasible && !found; j++) {
			const struct strategy *f = &rows[j].s;

			found = f->tp == s->tp && f->cp == s->cp && f->pp == s->pp && f->dp == s->dp &&
				f->ep == s->ep && f->mbs == s->mbs && f->schedule == s->schedule &&
				f->vp == s->vp && f->recompute == s->recompute && f->zero == s->zero &&
				f->fp8 == s->fp8 && rows[j].r.iter_s == ROW(cut, i).r.iter_s;
		}
		ck_assert_msg(found, "row %d of the cut search is not in the full one", i);
	}
	free(rows);
	ck_assert(!all->truncated);
	ck_assert(!more->truncated);
	ck_assert_str_eq(b, a);
	ck_assert_str_eq(d, a);
	free(a);
	free(b);
	free(d);
	plan_free(full);
	plan_free(cut);
	plan_free(all);
	plan_free(more);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* Issue 13 item 6 made small: many layers on many GPUs with a large batch
 * takes seconds without a budget; a budget of 300 work units ends it in
 * well under a second (here: it stops at 300, with few tuples searched).
 * Each strategy counts at least 1 unit and 2002 layers x 2 groups x 32
 * cells (its layer costs), 7.8 units more: k strategies are at least
 * k + floor(7.8 k) units, 300 or more from k = 35 on, so at most 35 start
 * below the budget. */
START_TEST(budget_ends_a_long_search)
{
	static const int nodes[] = { 4096, 4096 };
	struct model *m = test_small_model(2000, 1 << 20);
	struct cluster *c = mixed_cluster(2, nodes, 8);
	struct plan *p = search(m, c, 300, 0, false);

	ck_assert(p->truncated);
	ck_assert_int_eq(p->work, 300);
	ck_assert_int_le(p->evaluated, 35);
	ck_assert_int_lt(p->degrees_searched, p->degrees);
	ck_assert_int_gt(p->n_feasible, 0);
	plan_free(p);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* Issue 27 item 5: --work-budget 100 with 10^4 layers on 16 groups ran
 * over 150 s, as it counted strategies and each one's DPs and layer costs
 * over 10^4 layers took up to seconds. The budget counts their work: the
 * first strategy alone is 1 unit and 10,002 layers x 16 groups x 32 cells
 * of layer costs (312.6 units), past the budget before it starts, so none
 * is costed (100 at first, then 1 that ran past the budget): the budget is
 * spent and the search ended by it. */
START_TEST(budget_counts_the_work_of_each_strategy)
{
	int nodes[16];
	struct model *m = test_small_model(10000, 64);
	struct cluster *c;
	struct plan *p;

	for (int g = 0; g < 16; g++)
		nodes[g] = 2;
	c = mixed_cluster(16, nodes, 8);
	p = search(m, c, 100, 0, false);
	ck_assert(p->truncated);
	ck_assert_int_eq(p->work, 100);
	ck_assert_int_eq(p->evaluated, 0);
	plan_free(p);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* The work the calling thread did (threads 1: the search and the
 * refinement run on it), in work units as the README defines them: one a
 * strategy costed (evaluated), one per 16,384 cells of the partition DPs
 * (partition_cells), of 8 x (layers + 2) per cost evaluation and of layers
 * x groups x 32 per strategy costed (its layer costs). */
struct work_mark {
	double cells;
	long evals;
};

static struct work_mark work_mark(void)
{
	return (struct work_mark){ partition_cells, cost_evaluations };
}

static double units_since(struct work_mark a, struct work_mark b, const struct model *m, int n_group,
			  long evaluated)
{
	double cells = b.cells - a.cells + (double)(b.evals - a.evals) * 8 * (m->n_layer + 2) +
		       (double)evaluated * m->n_layer * n_group * 32;

	return (double)evaluated + cells / 16384;
}

/* Where the search ends: the counters at the progress call of 1 (the
 * search_groups call after the threads, before the refinement; the
 * threads report at most 0.999). */
static void mark_end(double done, void *arg)
{
	if (done >= 1)
		*(struct work_mark *)arg = work_mark();
}

static struct plan *search_marked(struct model *m, const struct cluster *c, long budget,
				  struct work_mark *end)
{
	struct plan *p = NULL;
	struct plan_opts o;
	struct err e = { "" };

	plan_opts_init(&o);
	o.work_budget = budget;
	o.threads = 1;
	o.progress = mark_end;
	o.progress_arg = end;
	ck_assert_msg(plan_search(&p, m, c, &o, &e) == 0, "%s", e.msg);
	return p;
}

/* Issue 27 item 5, one strategy past the budget: on 6 groups of different
 * GPU types the first strategy that fits on a (TP, CP, PP, DP) climbs the
 * block orders, 2 x 6 rotations and up to 6 sweeps of 5 swaps, each a
 * partition DP of 6 stages and more over 601 layer ends: on 600 layers
 * that strategy alone is past 1,000 units (1,544 measured). The budget was
 * checked between strategies, so it ran to its end, past the budget of
 * 200 or 1,000 (the strategies before it do not fit: layer costs and
 * tables, 20 units each); a strategy now starts only where its expected
 * work fits in what is left, so the work done stays within those budgets.
 * On 3,000 a later strategy ran past its estimate, to its end: 3,376 units
 * done. Now a strategy whose work passes what is left is cut before its
 * next placement (search_over) and dropped, so the work past the budget is
 * that strategy's one last partition DP and its layer costs (under 2% of
 * 3,000; 5% allowed). Every budget gives the same ranking on 1 and 3
 * threads. */
START_TEST(budget_bounds_each_strategy)
{
	static const int nodes[] = { 4, 4, 4, 4, 4, 4 };
	static const long budgets[] = { 1000, 200, 3000 };
	struct model *m = test_small_model(600, 96);
	struct cluster *c = mixed_cluster(6, nodes, 8);
	/* under the sanitizers' quarter (test_seeds) the budget of 1,000 only */
	size_t n = test_seeds(4) < 4 ? 1 : sizeof budgets / sizeof *budgets;

	for (size_t b = 0; b < n; b++) {
		struct work_mark start = work_mark(), end = start;
		struct plan *p = search_marked(m, c, budgets[b], &end);
		struct plan *three = search(m, c, budgets[b], 3, false);
		char *a = ranking_text(p), *d = ranking_text(three);
		double done = units_since(start, end, m, p->cluster->n_group, p->evaluated);

		ck_assert(p->truncated);
		ck_assert_msg(done <= budgets[b] * 1.05, "budget %ld: %.1f units done", budgets[b], done);
		ck_assert_str_eq(d, a);
		free(a);
		free(d);
		plan_free(p);
		plan_free(three);
	}
	model_free(m);
	cluster_free(c);
}
END_TEST

/* Issue 27 item 5, the refinement after the search: it ran its exact DPs,
 * relaxations and swap descents on the top rows whatever the budget had
 * left. On 6 groups of 4 GPUs, each its own type: with the default budget the search ends by
 * itself and the refinement partitions its rows again (DP cells after the
 * search), and the work the plan reports covers both (it left the
 * refinement's out); with a budget that ends the search there is nothing
 * left: the refinement runs no DP, and says it cut rows. (The trainers'
 * times after it cost evaluations, no DP.) */
START_TEST(budget_covers_the_refinement)
{
	static const int nodes[] = { 1, 1, 1, 1, 1, 1 };
	struct model *m = test_small_model(30, 48);
	struct cluster *c = mixed_cluster(6, nodes, 4);
	struct work_mark start = work_mark(), end = start, after;
	struct plan *p = search_marked(m, c, 0, &end);
	int G = p->cluster->n_group;

	after = work_mark();
	ck_assert(!p->truncated);
	ck_assert_int_eq(p->refine_cut, 0);
	ck_assert_msg(after.cells - end.cells >= 2 * 16384, "the refinement did %g DP cells",
		      after.cells - end.cells);
	ck_assert_msg(p->work >= (long)(units_since(start, end, m, G, p->evaluated) +
					(after.cells - end.cells) / 16384),
		      "%ld units reported, %.1f done", p->work,
		      units_since(start, end, m, G, p->evaluated) + (after.cells - end.cells) / 16384);
	/* half the search's own work: it ends the search */
	long cut = (long)(units_since(start, end, m, G, p->evaluated) / 2);
	plan_free(p);

	start = work_mark();
	p = search_marked(m, c, cut, &end);
	after = work_mark();
	ck_assert(p->truncated);
	ck_assert_int_gt(p->refine_cut, 0);
	ck_assert_msg(after.cells == end.cells, "the refinement did %g DP cells", after.cells - end.cells);
	plan_free(p);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* Issue 27 item 5, the second search: where nothing fits, ampplan searched
 * again keeping the reasons with a budget of its own, the whole one
 * again. Qwen2.5-72B on the 16 GiB T4s of aws-g4dn fits nowhere; with
 * --work-budget 1000 the first search ends by the budget (1,000 units), so
 * the second has the tenth of it that it now takes at least: at most 100
 * strategies (each at least a unit), where it costed 828. */
START_TEST(budget_covers_the_second_search)
{
	char *out, *err;
	long n = -1;
	const char *at;

	ck_assert_int_eq(run_ampplan("--model tests/data/hf/Qwen_Qwen2.5-72B-Instruct.json --cluster clusters/aws-g4dn.json --work-budget 1000",
				     &out, &err),
			 1);
	ck_assert_msg(strstr(err, "fits no strategy") && strstr(err, "needs"), "%s", err);
	ck_assert_msg(strstr(out, "search ended by the work budget (1000 units)"), "%s", out);
	at = strstr(out, " strategies costed");
	ck_assert_ptr_nonnull(at);
	while (at > out && at[-1] != '\n')
		at--;
	ck_assert_int_eq(sscanf(at, "%ld", &n), 1);
	ck_assert_int_gt(n, 0);
	ck_assert_int_le(n, 100);
	free(out);
	free(err);
}
END_TEST

/* Issue 27 item 5: --exhaustive within its guard (14 blocks, 64 GPUs) ran
 * for minutes with no end in sight; its work is estimated first and it is
 * refused at once where the candidates (2 groups of 32 GPUs: PP 2 alone
 * has 2 placements x C(15, 1) splits per strategy, PP 8 up to 70 x
 * C(15, 7) = 450,450) pass the limit. A small case (4 blocks on 8 GPUs of
 * one group) still runs, and finds what the search finds. */
START_TEST(exhaustive_estimates_first)
{
	static const int nodes[] = { 4, 4 }, one[] = { 1 };
	struct model *m = test_small_model(14, 64), *small = test_small_model(4, 8);
	struct cluster *c = mixed_cluster(2, nodes, 8), *c1 = mixed_cluster(1, one, 8);
	struct plan *p = NULL, *fast;
	struct plan_opts o;
	struct err e = { "" };
	clock_t t0 = clock();

	plan_opts_init(&o);
	o.exhaustive = true;
	ck_assert_int_eq(plan_search(&p, m, c, &o, &e), -1);
	ck_assert_msg(strstr(e.msg, "--exhaustive would cost ") && strstr(e.msg, "more than its limit of 6e+06"),
		      "%s", e.msg);
	ck_assert_msg(clock() - t0 < 5 * CLOCKS_PER_SEC, "took %g s", (double)(clock() - t0) / CLOCKS_PER_SEC);
	ck_assert_msg(plan_search(&p, small, c1, &o, &e) == 0, "%s", e.msg);
	fast = search(small, c1, 0, 1, false);
	ck_assert_int_gt(p->n_feasible, 0);
	ck_assert(ROW(p, 0).r.iter_s <= ROW(fast, 0).r.iter_s * (1 + 1e-9));
	plan_free(p);
	plan_free(fast);
	model_free(m);
	model_free(small);
	cluster_free(c);
	cluster_free(c1);
}
END_TEST

struct calls {
	int n;
	double last;
	bool backwards;
};

static void on_progress(double done, void *arg)
{
	struct calls *k = arg;

	if (done < k->last || done < 0 || done > 1)
		k->backwards = true;
	k->last = done;
	k->n++;
}

/* Progress: once per tuple and every 16 strategies of a tuple, never going
 * back, ending at 1. */
START_TEST(progress_called_through_the_search)
{
	static const int nodes[] = { 4, 2 };
	struct model *m = test_small_model(12, 64);
	struct cluster *c = mixed_cluster(2, nodes, 4);
	struct calls k = { 0, 0, false };
	struct plan *p = NULL;
	struct plan_opts o;
	struct err e = { "" };

	plan_opts_init(&o);
	o.threads = 2;
	o.progress = on_progress;
	o.progress_arg = &k;
	ck_assert_int_eq(plan_search(&p, m, c, &o, &e), 0);
	ck_assert(!k.backwards);
	ck_assert(k.last == 1.0);
	/* one per tuple, one per 16 strategies of a tuple, one at the end */
	ck_assert_int_ge(k.n, 1 + p->evaluated / 16);
	ck_assert_int_gt(k.n, p->degrees + 1);
	plan_free(p);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* Five groups of different GPU types: the ILP places the ranks on 4
 * threads. Deterministic (node limit, no time limit): the same ranking on 1
 * and 4 threads; in the sanitizer build LeakSanitizer reports the GLPK
 * environment of each search thread unless the threads free it. */
START_TEST(ilp_search_deterministic_and_freed)
{
	static const int nodes[] = { 1, 2, 1, 2, 2 };
	struct model *m = test_small_model(6, 32);
	struct cluster *c = mixed_cluster(5, nodes, 2);
	struct plan *one = search(m, c, 0, 1, false);
	struct plan *four = search(m, c, 0, 4, false);
	char *a = ranking_text(one), *b = ranking_text(four);

	ck_assert_int_gt(one->ilp_optimal + one->ilp_stopped + one->ilp_failed, 0);
	ck_assert_str_eq(b, a);
	free(a);
	free(b);
	plan_free(one);
	plan_free(four);
	model_free(m);
	cluster_free(c);
}
END_TEST

/* Eight groups of different GPU types: beyond the ILP's size (8 ranks x 8
 * groups > ILP_MAX_CELLS) the block orders are climbed once per (TP, CP,
 * PP, DP). The same ranking on 1 and 4 threads, and no ILP solved. */
START_TEST(climbed_search_deterministic)
{
	static const int nodes[] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	struct model *m = test_small_model(18, 32);
	struct cluster *c = mixed_cluster(8, nodes, 2);
	struct plan *one = search(m, c, 0, 1, false);
	struct plan *four = search(m, c, 0, 4, false);
	char *a = ranking_text(one), *b = ranking_text(four);
	int deep = 0;

	for (int i = 0; i < one->n_feasible; i++)
		deep += ROW(one, i).s.pp >= 8;
	ck_assert_int_gt(deep, 0);
	ck_assert_int_eq(one->ilp_optimal + one->ilp_stopped + one->ilp_failed, 0);
	ck_assert_str_eq(b, a);
	free(a);
	free(b);
	plan_free(one);
	plan_free(four);
	model_free(m);
	cluster_free(c);
}
END_TEST

static Suite *budget_suite(void)
{
	Suite *s = suite_create("budget");
	TCase *tc = tcase_create("budget");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, budget_same_for_any_threads);
	tcase_add_test(tc, budget_keeps_what_was_found);
	tcase_add_test(tc, budget_ends_a_long_search);
	tcase_add_test(tc, budget_counts_the_work_of_each_strategy);
	tcase_add_test(tc, budget_bounds_each_strategy);
	tcase_add_test(tc, budget_covers_the_refinement);
	tcase_add_test(tc, budget_covers_the_second_search);
	tcase_add_test(tc, exhaustive_estimates_first);
	tcase_add_test(tc, progress_called_through_the_search);
	tcase_add_test(tc, ilp_search_deterministic_and_freed);
	tcase_add_test(tc, climbed_search_deterministic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(budget_suite());
}
