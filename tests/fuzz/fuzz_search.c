/* fuzz_search.c: libFuzzer target for the search on small fuzzed clusters.
 * The input is a cluster file (clusters/ format); one that loads and has at
 * most 64 GPUs is searched with a fixed small model (fuzz_util.h, 4
 * blocks), one thread, a bounded work budget and ILP node limit. The
 * ranking must be consistent: the feasible rows first, in descending
 * tokens/s, each with TP x CP x PP x DP equal to the GPUs of the node groups
 * it uses (a row may leave the slowest groups idle: plan_row_idle), its
 * stages covering every layer once in order, each pipeline rank on a node
 * group of the cluster, finite positive times.
 *
 *   make fuzz              every target for FUZZ_SECONDS (default 60)
 *   build/fuzz/fuzz_search tests/fuzz/corpus/search    by hand
 * Seeds: tests/fuzz/corpus/search (small cluster files). */
#include <math.h>

#include "cluster.h"
#include "cluster_read.h"
#include "fuzz_util.h"
#include "model.h"
#include "plan.h"
#include "profile.h"
#include "util.h"

/* Row i of plan p, expanded into a temporary of the enclosing block. */
#define ROW(p, i) (*plan_row_get((p), (i), &(struct plan_row){ 0 }))

#define MAX_FUZZ_GPUS 64

static char *model_path, *cluster_path;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cluster *c = NULL;
	struct model *m = NULL;
	struct plan *p = NULL;
	struct plan_opts o;
	struct err e = { { 0 } };

	if (!model_path) {
		model_path = fuzz_tmpfile("model");
		cluster_path = fuzz_tmpfile("cluster");
		fuzz_write(model_path, fuzz_tiny_model, sizeof fuzz_tiny_model - 1);
	}
	fuzz_write(cluster_path, data, size);
	if (cluster_load(&c, cluster_path, &e))
		return 0;
	if (c->total_gpus > MAX_FUZZ_GPUS) {
		cluster_free(c);
		return 0;
	}
	if (model_load(&m, model_path, &e)) {
		fprintf(stderr, "fuzz_search: fixture: %s\n", e.msg);
		abort();
	}
	plan_opts_init(&o);
	o.threads = 1;
	o.work_budget = 4000;
	o.ilp_node_limit = 200;
	o.keep_infeasible = true;
	if (plan_search(&p, m, c, &o, &e)) {
		FUZZ_ASSERT(e.msg[0] != '\0');
		goto done;
	}
	FUZZ_ASSERT(p->n_feasible >= 0 && p->n_feasible <= p->n_row);
	for (int r = 0; r < p->n_row; r++) {
		const struct plan_row *row = &ROW(p, r);
		const struct strategy *s = &row->s;

		FUZZ_ASSERT((r < p->n_feasible) == (row->why[0] == '\0'));
		unsigned idle = plan_row_idle(p->cluster, s);
		long used = 0;

		for (int g = 0; g < p->cluster->n_group; g++)
			if (!p->cluster->group[g].n_part && !(idle >> g & 1))
				used += (long)p->cluster->group[g].nodes * p->cluster->group[g].gpus_per_node;
		FUZZ_ASSERT((long)s->tp * s->cp * s->pp * s->dp == used);
		FUZZ_ASSERT(s->n_stages == s->pp * s->vp && s->n_stages <= MAX_STAGES);
		FUZZ_ASSERT(s->first[0] == 0 && s->first[s->n_stages] == m->n_layer);
		for (int k = 0; k < s->n_stages; k++)
			FUZZ_ASSERT(s->first[k] < s->first[k + 1]);
		for (int k = 0; k < s->pp; k++)
			FUZZ_ASSERT(s->group[k] < p->cluster->n_group);
		if (r < p->n_feasible) {
			FUZZ_ASSERT(isfinite(row->r.tokens_per_s) && row->r.tokens_per_s > 0);
			/* the rows a trainer runs first, then by throughput */
			if (r > 0)
				FUZZ_ASSERT(!ROW(p, r - 1).trainers < !row->trainers ||
					    (!ROW(p, r - 1).trainers == !row->trainers &&
					     ROW(p, r - 1).r.tokens_per_s >= row->r.tokens_per_s));
		}
	}
done:
	plan_free(p);
	model_free(m);
	cluster_free(c);
	return 0;
}
