/* trainer_time.c: the time each trainer runs a strategy in (trainer_time.h):
 * the trainer's features set on the strategy (TRAINERS.md and trainer.c's
 * trainer_allows), costed by cost_evaluate as the search costs it. */
#include "trainer_time.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "cost.h"
#include "exact.h"
#include "model.h"
#include "partition.h"
#include "plan.h"
#include "search_int.h"
#include "strategy.h"
#include "trainer.h"
#include "util.h"

/* A switch of o: its value where set (0 or 1), else dflt. */
static bool pick(int fixed, bool dflt)
{
	return fixed >= 0 ? fixed != 0 : dflt;
}

/* The bare CLI defaults (trainer_defaults):
 * - Megatron-LM and NeMo: --tp-comm-overlap, --overlap-grad-reduce and
 *   --overlap-param-gather off (arguments.py; NeMo's
 *   DistributedDataParallelConfig likewise), gradient accumulation fusion
 *   on (with Transformer Engine);
 * - torchtitan v0.2.2: compile.enable false (eager kernels), no async TP;
 *   FSDP2 prefetches its gathers and overlaps its reduce-scatters by itself;
 * - DeepSpeed: zero_optimization.overlap_comm false, except at stage 3,
 *   where DeepSpeed turns it on (its ZeRO-3 config default). */
void trainer_features(int t, struct strategy *s, const struct model *m,
		      const struct plan_opts *o)
{
	bool bare = o->trainer_defaults, titan = t == TRAINER_TORCHTITAN;
	bool ds = t == TRAINER_DEEPSPEED;

	if (bare) {
		bool z3 = ds && s->zero == 3;

		s->tp_overlap = pick(o->tp_overlap, false);
		s->grad_overlap = pick(o->grad_overlap, (titan && s->zero >= 1) || z3);
		s->param_overlap = pick(o->param_overlap, (titan && s->zero >= 1) || z3);
	} else {
		s->tp_overlap = pick(o->tp_overlap, trainer_allows(t, FEATURE_TP_OVERLAP, s));
		s->grad_overlap = pick(o->grad_overlap, trainer_allows(t, FEATURE_GRAD_OVERLAP, s));
		s->param_overlap = pick(o->param_overlap, trainer_allows(t, FEATURE_PARAM_OVERLAP, s));
	}
	s->grad_acc_unfused = !pick(o->grad_acc_fusion, trainer_allows(t, FEATURE_GRAD_ACC_FUSION, s));
	/* torchtitan shards with FSDP2 at every ZeRO stage >= 1 (trainer.c
	   check_zero): its gathers follow the layers */
	s->fsdp = titan && s->zero >= 1;
	s->unfused_norm = o->unfused_norm || (bare && titan);
	s->unfused_pointwise = bare && titan;
	/* DeepSpeed's pipeline engine splits the sends over TP */
	s->p2p_split = pick(o->p2p_split, ds);
	/* DeepSpeed's ZeRO keeps the training dtype, Megatron its fp32 main
	   gradients but under fp16; torchtitan reduces in float32
	   (training.mixed_precision_reduce) */
	if (!o->grad_bytes)
		s->grad_bytes = ds || (m->fp16 && !titan) ? 2 : 4;
}

unsigned trainer_feature_bits(const struct strategy *s)
{
	return (s->tp_overlap ? TF_TP_OVERLAP : 0) | (s->grad_overlap ? TF_GRAD_OVERLAP : 0) |
	       (s->param_overlap ? TF_PARAM_OVERLAP : 0) |
	       (s->grad_acc_unfused ? 0 : TF_GRAD_ACC_FUSION) | (s->fsdp ? TF_FSDP : 0) |
	       (s->unfused_norm ? 0 : TF_FUSED_NORM) |
	       (s->unfused_pointwise ? 0 : TF_FUSED_POINTWISE) |
	       (s->grad_bytes == 2 ? 0 : TF_GRAD_FP32) | (s->p2p_split ? TF_P2P_SPLIT : 0);
}

const char *trainer_feature_diff(char *buf, size_t n, const struct strategy *s, unsigned feat)
{
	static const struct {
		unsigned bit;
		const char *on, *off;
	} say[] = {
		{ TF_TP_OVERLAP, "TP comm overlapped", "no TP comm overlap" },
		{ TF_GRAD_OVERLAP, "gradient reduction overlapped", "gradient reduction exposed" },
		{ TF_PARAM_OVERLAP, "parameter gather overlapped", "parameter gather exposed" },
		{ TF_GRAD_ACC_FUSION, "gradient accumulation in the GEMMs",
		  "gradient accumulation in a pass of its own" },
		{ TF_FSDP, "FSDP2: each layer's parameters gathered in every micro-batch's forward and backward",
		  "parameters gathered once per iteration" },
		{ TF_FUSED_NORM, "fused norms", "norms as eager kernels" },
		{ TF_FUSED_POINTWISE, "fused RoPE and SwiGLU", "RoPE and SwiGLU as eager kernels" },
		{ TF_GRAD_FP32, "fp32 gradients", "gradients reduced in 2 bytes" },
		{ TF_P2P_SPLIT, "pipeline sends split over TP", "pipeline sends whole from every TP rank" },
	};
	unsigned diff = trainer_feature_bits(s) ^ feat;
	size_t len = 0;

	if (n)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof say / sizeof say[0] && len < n; i++)
		if (diff & say[i].bit)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
						feat & say[i].bit ? say[i].on : say[i].off);
	return buf;
}

int trainer_times(struct plan_row *row, const struct model *m, const struct cluster *c,
		  const struct plan_opts *o, struct err *e)
{
	row->trainers = 0;
	memset(row->trainer_s, 0, sizeof row->trainer_s);
	memset(row->trainer_feat, 0, sizeof row->trainer_feat);
	if (row->why[0]) {
		row->trainers = trainer_mask(m, c, &row->s);
		return 0;
	}
	/* the variants costed so far, the row's own first: trainers that
	   run the row the same way (Megatron-LM and NeMo, often) share one
	   evaluation */
	struct strategy seen[TRAINER_COUNT + 1];
	double seen_s[TRAINER_COUNT + 1] = { row->r.iter_s };
	int n_seen = 1, no_ranks[MAX_GROUPS] = { 0 };

	memcpy(&seen[0], &row->s, sizeof row->s); /* bytes, as v's copy */

	for (int t = 0; t < TRAINER_COUNT; t++) {
		struct strategy v = row->s;
		struct layer_costs lc = { 0 };
		struct cost_result r;
		int k = 0;

		if (trainer_check((enum trainer)t, m, c, &row->s, NULL))
			continue;
		trainer_features(t, &v, m, o);
		row->trainer_feat[t] = trainer_feature_bits(&v);
		while (k < n_seen && memcmp(&v, &seen[k], sizeof v))
			k++;
		if (k < n_seen) {
			row->trainer_s[t] = seen_s[k];
		} else {
			/* cost_evaluate reads no first-stage tails
			   (layer_costs.tail0): none made, as for groups
			   without ranks */
			if (cost_layers(&lc, m, c, &v, no_ranks, e))
				return -1;
			cost_evaluate(&r, m, c, &v, &lc);
			cost_layers_free(&lc);
			row->trainer_s[t] = r.fits ? r.iter_s : 0;
			memcpy(&seen[n_seen], &v, sizeof v);
			seen_s[n_seen++] = row->trainer_s[t];
		}
		if (row->trainer_s[t] > 0 &&
		    fabs(row->trainer_s[t] - row->r.iter_s) <= row->r.iter_s * TRAINER_TIME_TOL)
			row->trainers |= 1u << t;
	}
	return 0;
}

/* The row placed and partitioned again for its features, which the
 * search did not cost it with (those of the trainer that runs it
 * fastest): costed first at the search's placement and partition; then,
 * on the instances the search runs exact_place on, its branch and bound
 * from there, the optimum over every placement and partition where it
 * finishes (gap 0; --exhaustive's rows take the same step, so the two
 * agree); elsewhere, without virtual stages or DualPipe, the partition DP
 * on the row's placement, or over every placement where the joint DP's
 * work is within o->place_dp_max, where that is faster. The gap is to
 * the DP's optimum where it is exact over the placements (one group, or
 * the joint DP), else to search_lower_bound (as evaluate.c's gap).
 * With --layout the row is only costed again (its gap kept). Returns 0,
 * or -1 with e set. */
static int place_again(struct plan_row *row, const struct model *m, const struct cluster *c,
		       const struct plan_opts *o, struct err *e)
{
	struct strategy *s = &row->s, best = *s;
	struct layer_costs lc = { 0 };
	struct pipeline_frame f;
	struct cost_result r;
	int ranks[MAX_GROUPS] = { 0 }, group[MAX_STAGES], n = 0;
	bool dp = s->vp == 1 && !schedule_bidirectional(s->schedule), joint;
	double t = INFINITY;

	for (int k = 0; k < s->pp; k++)
		n += !ranks[s->group[k]]++;
	if (cost_layers(&lc, m, c, s, ranks, e))
		return -1;
	cost_evaluate(&row->r, m, c, s, &lc);
	if (o->layout) { /* the user's partition, placed by the search */
		cost_layers_free(&lc);
		return 0;
	}
	row->gap_pct = 0;
	if (!row->r.fits || s->n_stages < 2) {
		cost_layers_free(&lc);
		return 0;
	}
	if (lc.n_layer <= EXACT_MAX_LAYERS && c->total_gpus <= EXACT_MAX_GPUS &&
	    exact_place(&best, &row->r, s, ranks, m, c, &lc, EXACT_NODES)) {
		*s = best;
		cost_layers_free(&lc);
		return 0;
	}
	*s = best;
	cost_frame(&f, m, c, s, &lc);
	joint = dp && n > 1 && partition_place_work(ranks, c->n_group, lc.n_layer, s->pp) <= o->place_dp_max;
	if (dp && (joint ? !partition_place(&lc, &f, ranks, group, best.first, &t)
			 : !partition_solve(&lc, &f, best.first, &t))) {
		if (joint)
			for (int k = 0; k < s->pp; k++)
				best.group[k] = (unsigned char)group[k];
		cost_evaluate(&r, m, c, &best, &lc);
		if (r.fits && r.iter_s < row->r.iter_s) {
			*s = best;
			row->r = r;
		}
	}
	if (!(dp && (n == 1 || joint)))
		t = search_lower_bound(m, c, s, &lc, ranks);
	if (t < row->r.iter_s * (1 - 1e-9))
		row->gap_pct = 100 * (row->r.iter_s - t) / row->r.iter_s;
	cost_layers_free(&lc);
	return 0;
}

/* One row of trainer_rows: its times, and the fastest trainer's strategy
 * where none runs it with its own features (a trainer within
 * TRAINER_TIME_TOL of its time with others may run another placement
 * faster), placed and partitioned again for it (place_again). Returns 1
 * when it changed, 0, or -1 with e set. */
static int trainer_row(struct plan_row *row, const struct model *m, const struct cluster *c,
		       const struct plan_opts *o, struct err *e)
{
	unsigned own = trainer_feature_bits(&row->s);
	int best = -1;

	if (trainer_times(row, m, c, o, e))
		return -1;
	if (row->why[0])
		return 0;
	for (int t = 0; t < TRAINER_COUNT; t++)
		if (row->trainer_s[t] > 0 && row->trainer_feat[t] == own)
			return 0;
	for (int t = 0; t < TRAINER_COUNT; t++)
		if (row->trainer_s[t] > 0 && (best < 0 || row->trainer_s[t] < row->trainer_s[best]))
			best = t;
	if (best < 0)
		return 0;
	trainer_features(best, &row->s, m, o);
	if (place_again(row, m, c, o, e))
		return -1;
	return trainer_times(row, m, c, o, e) ? -1 : 1;
}

/* A thread's share of trainer_rows: rows k, k + n, k + 2n, ... */
struct rows_job {
	struct plan *p;
	const struct model *m;
	const struct cluster *c;
	const struct plan_opts *o;
	int k, n, rc;
	struct err e;
};

static void *rows_work(void *arg)
{
	struct rows_job *j = arg;

	for (int i = j->k; i < j->p->n_row && j->rc >= 0; i += j->n) {
		struct plan_row row;
		int rc = trainer_row(plan_row_get(j->p, i, &row), j->m, j->c, j->o, &j->e);

		/* 0: only its trainers' fields changed (trainer_times) */
		if (rc == 0)
			plan_row_set_trainers(j->p, i, &row);
		else if (rc > 0)
			plan_row_set(j->p, i, &row);
		j->rc = rc < 0 ? -1 : j->rc | rc;
	}
	return NULL;
}

int trainer_rows(struct plan *p, const struct model *m, const struct cluster *c,
		 const struct plan_opts *o, struct err *e)
{
	/* the rows are independent: spread over the search's threads (one
	   per online CPU, at most 16, as pool.c), some 256 rows each at least */
	long n = o->threads > 0 ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);
	struct rows_job job[16];
	pthread_t tid[16];
	int rc = 0, started = 1;

	if (n > 16)
		n = 16;
	if (n > p->n_row / 256 + 1)
		n = p->n_row / 256 + 1;
	if (n < 1)
		n = 1;
	for (int k = 0; k < n; k++)
		job[k] = (struct rows_job){ p, m, c, o, k, (int)n, 0, { "" } };
	for (int k = 1; k < n; k++, started++)
		if (pthread_create(&tid[k], NULL, rows_work, &job[k]))
			break;
	/* rows a thread that did not start would have had */
	for (int k = started; k < n; k++)
		job[k].n = (int)n, rows_work(&job[k]);
	rows_work(&job[0]);
	for (int k = 1; k < started; k++)
		pthread_join(tid[k], NULL);
	for (int k = 0; k < n; k++) {
		if (job[k].rc < 0) {
			if (e)
				*e = job[k].e;
			return -1;
		}
		rc |= job[k].rc;
	}
	return rc;
}
