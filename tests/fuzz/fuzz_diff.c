/* fuzz_diff.c: libFuzzer target, differential: the search against
 * --exhaustive on small generated instances (fuzz_gen.h: a valid model of 2
 * to 6 uneven blocks and a valid cluster of 1 to 3 groups, at most 8
 * GPUs, both through their loaders), then the outputs round-trip.
 *
 * The schedule is any of the nine (the search claims every one exact on
 * the instances --exhaustive takes, or bounded by its gap: README
 * "Exactness"). The checks:
 *   - the model read back from its profile (model_profile_json, then
 *     model_load) has the generated layer figures;
 *   - nothing missing: the same number of strategies fit in both searches,
 *     and every one the reference finds is in the search's ranking;
 *   - never worse than claimed: each costs at least the reference's optimum
 *     (cheaper would mean the two cost it differently), at most its proven
 *     gap more, and exactly the optimum where its gap is 0; where the two
 *     rows carry other trainer features (trainer_rows gave one its
 *     trainer's, as no trainer ran it within TRAINER_TIME_TOL at the
 *     placement its search kept, while the other's placement, of the same
 *     time, had one that did), within TRAINER_TIME_TOL of each other;
 *   - the JSON output (report_json) read back holds every row with its
 *     degrees and iteration time (to its 6 significant digits).
 *
 *   make fuzz              every target for FUZZ_SECONDS (default 60)
 *   build/fuzz/fuzz_diff tests/fuzz/corpus/diff    by hand
 * Seeds: tests/fuzz/corpus/diff (generator bytes). */
#include <cjson/cJSON.h>
#include <math.h>

#include "cluster.h"
#include "cluster_read.h"
#include "fuzz_gen.h"
#include "model.h"
#include "plan.h"
#include "profile.h"
#include "report.h"
#include "strategy.h"
#include "trainer_time.h"
#include "util.h"

/* Row i of plan p, expanded into a temporary of the enclosing block. */
#define ROW(p, i) (*plan_row_get((p), (i), &(struct plan_row){ 0 }))

static char *model_path, *cluster_path, *json_path;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The same strategy (all degrees and choices), partition aside. */
static bool same_choice(const struct strategy *a, const struct strategy *b)
{
	return a->tp == b->tp && a->cp == b->cp && a->pp == b->pp && a->dp == b->dp &&
	       a->ep == b->ep && a->vp == b->vp && a->mbs == b->mbs &&
	       a->schedule == b->schedule && a->recompute == b->recompute && a->zero == b->zero &&
	       a->fp8 == b->fp8 && a->vocab_par == b->vocab_par && a->slices == b->slices &&
	       !memcmp(a->uneven, b->uneven, sizeof a->uneven);
}

static bool close_to(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* The generated model, written as a profile and read back. */
static struct model *load_model(const struct model *gen)
{
	char *text = model_profile_json(gen);
	struct model *m = NULL;
	struct err e = { { 0 } };

	fuzz_write(model_path, text, strlen(text));
	free(text);
	if (model_load(&m, model_path, &e)) {
		fprintf(stderr, "fuzz_diff: a generated profile does not load: %s\n", e.msg);
		abort();
	}
	FUZZ_ASSERT(m->n_layer == gen->n_layer);
	for (int l = 0; l < m->n_layer; l++) {
		FUZZ_ASSERT(close_to(m->layer[l].flops_per_token, gen->layer[l].flops_per_token));
		FUZZ_ASSERT(close_to(m->layer[l].act_bytes_per_token, gen->layer[l].act_bytes_per_token));
		FUZZ_ASSERT(close_to(m->layer[l].params, gen->layer[l].params));
	}
	return m;
}

/* Every row of p in the JSON at json_path, in order, with its degrees and
 * iteration time. */
static void check_json(const struct plan *p)
{
	size_t len;
	char *text = fuzz_read(json_path, &len);
	cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "strategies");

	FUZZ_ASSERT(doc && cJSON_IsArray(rows) && cJSON_GetArraySize(rows) == p->n_row);
	for (int r = 0; r < p->n_row; r++) {
		const cJSON *row = cJSON_GetArrayItem(rows, r);
		const cJSON *tp = cJSON_GetObjectItemCaseSensitive(row, "tp");
		const cJSON *pp = cJSON_GetObjectItemCaseSensitive(row, "pp");
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(row, "iteration_s");

		FUZZ_ASSERT(cJSON_IsNumber(tp) && tp->valuedouble == ROW(p, r).s.tp);
		FUZZ_ASSERT(cJSON_IsNumber(pp) && pp->valuedouble == ROW(p, r).s.pp);
		/* written with 6 significant digits (report_columns.c put_num) */
		FUZZ_ASSERT(cJSON_IsNumber(it) &&
			    fabs(it->valuedouble - ROW(p, r).r.iter_s) <= 5e-6 * fabs(ROW(p, r).r.iter_s));
	}
	cJSON_Delete(doc);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct model *gen, *m;
	struct cluster *c = NULL;
	struct plan *fast = NULL, *ref = NULL;
	struct plan_row *rows = NULL;
	struct plan_opts o;
	struct err e = { { 0 } };
	char *text;

	if (!model_path) {
		model_path = fuzz_tmpfile("model");
		cluster_path = fuzz_tmpfile("cluster");
		json_path = fuzz_tmpfile("out-json");
	}
	gen = fuzz_gen_model(&in);
	m = load_model(gen);
	text = fuzz_gen_cluster(&in, 18.0 * model_params(m));
	fuzz_write(cluster_path, text, strlen(text));
	if (cluster_load(&c, cluster_path, &e)) {
		fprintf(stderr, "fuzz_diff: a generated cluster does not load: %s\n%s", e.msg, text);
		abort();
	}
	plan_opts_init(&o);
	o.threads = 1;
	o.schedule = fuzz_byte(&in) % SCHED_COUNT;
	if (plan_search(&fast, m, c, &o, &e)) {
		FUZZ_ASSERT(e.msg[0] != '\0');
		goto done;
	}
	o.exhaustive = true;
	if (plan_search(&ref, m, c, &o, &e))
		goto done; /* past --exhaustive's limit */
	FUZZ_ASSERT(!fast->truncated && !ref->truncated);
	FUZZ_ASSERT(fast->n_feasible == ref->n_feasible);
	/* the search's rows expanded once (plan_row_get expands a row each
	   time it is called) */
	rows = xcalloc(fast->n_feasible ? (size_t)fast->n_feasible : 1, sizeof *rows);
	for (int j = 0; j < fast->n_feasible; j++)
		plan_row_get(fast, j, &rows[j]);
	for (int i = 0; i < ref->n_feasible; i++) {
		const struct strategy *s = &ROW(ref, i).s;
		double want = ROW(ref, i).r.iter_s, got = -1, gap = 0;
		unsigned feat = trainer_feature_bits(s), got_feat = feat;

		for (int j = 0; j < fast->n_feasible && got < 0; j++)
			if (same_choice(&rows[j].s, s)) {
				got = rows[j].r.iter_s;
				gap = rows[j].gap_pct;
				got_feat = trainer_feature_bits(&rows[j].s);
			}
		/* costed with other trainer features (one search's row took
		   its trainer's after the search, trainer_rows, where the
		   other's placement, of the same time, had that trainer within
		   TRAINER_TIME_TOL): both are runs of a trainer, within that */
		if (got >= 0 && got_feat != feat) {
			if (fabs(got - want) > want * TRAINER_TIME_TOL) {
				fprintf(stderr, "fuzz_diff: tp %d cp %d pp %d dp %d mbs %d %s: search %.12g s with trainer features %#x, exhaustive %.12g s with %#x\n%s",
					s->tp, s->cp, s->pp, s->dp, s->mbs, schedule_name(s->schedule), got,
					got_feat, want, feat, text);
				abort();
			}
			continue;
		}
		if (got < 0 || got < want * (1 - 1e-9) || gap < 0 ||
		    got * (1 - gap / 100) > want * (1 + 1e-9) || (gap == 0 && got > want * (1 + 1e-9))) {
			fprintf(stderr, "fuzz_diff: tp %d cp %d pp %d dp %d mbs %d %s: search %.12g s (gap %g%%), exhaustive %.12g s\n%s",
				s->tp, s->cp, s->pp, s->dp, s->mbs, schedule_name(s->schedule), got, gap,
				want, text);
			abort();
		}
	}
	if (report_json(json_path, fast, m, fast->cluster, &e)) {
		fprintf(stderr, "fuzz_diff: writing failed: %s\n", e.msg);
		abort();
	}
	check_json(fast);
done:
	free(rows);
	plan_free(fast);
	plan_free(ref);
	free(text);
	model_free(gen);
	model_free(m);
	cluster_free(c);
	return 0;
}
