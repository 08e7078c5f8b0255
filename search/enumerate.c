/* enumerate.c: the choices the search walks for each (TP, CP, PP, DP):
 * expert TP and EP, ZeRO, FP8, recomputation, micro-batch size, CP flavour,
 * vocabulary parallelism, slices, uneven batches, schedule and virtual
 * stages; and the (TP, CP, PP, DP) tuples themselves (search_int.h). */
#include <math.h>
#include <string.h>

#include "cluster.h"
#include "model.h"
#include "search_int.h"
#include "trainer.h"
#include "trainer_time.h"
#include "util.h"

bool search_tp_fits(const struct model *m, int tp)
{
	return m->heads % tp == 0 && m->ffn % tp == 0 &&
	       (m->kv_heads % tp == 0 || tp % m->kv_heads == 0);
}

bool search_split_groups(struct search *S, int tpcp, int gpus_per_stage)
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

/* Whether the search tries strategy s (degrees, micro-batches, vocabulary
 * parallelism, slices and uneven batches set) under schedule sc with vp
 * virtual stages per rank: the one rule of the (schedule, vp) pairs, as
 * fixed by the options or else as the search picks them. n_layer: the
 * model's layers (a stage holds at least one). */
static bool schedule_allowed(const struct plan_opts *o, const struct strategy *s, int n_layer,
			     enum schedule sc, int vp)
{
	/* GPipe has 1F1B's time and holds more activations: it never ranks
	 * above 1F1B, so it is costed only when asked for. */
	if (o->schedule >= 0 ? (int)sc != o->schedule
			     : sc == SCHED_GPIPE || (s->pp == 1 && sc != SCHED_1F1B))
		return false;
	/* vocabulary parallelism and SlimPipe as their papers build them: on
	 * 1F1B */
	if ((s->vocab_par || strategy_slices(s) > 1 || strategy_uneven(s)) && sc != SCHED_1F1B)
		return false;
	/* the schedule's own rules (schedule.h's row: virtual stages, the
	 * micro-batches it needs, DualPipe's even pp and m); interleaved zero
	 * bubble is searched at 2 stages per rank (more with --vp), which
	 * keeps the search within its time targets */
	if (!schedule_allows(sc, s->pp, vp, s->micro_batches) ||
	    (sc == SCHED_INTERLEAVED_ZB && !o->vp && vp != 2))
		return false;
	return s->pp * vp <= n_layer && s->pp * vp <= MAX_STAGES;
}

/* search_evaluate on s (schedule and virtual stages set). DualPipe(V) hide
 * part of the EP all-to-all in the layers' own times (cost.c layer_parts):
 * their own layer costs, not the mbs loop's. Without EP (ep 1, every dense
 * model) there is no all-to-all (comm_ep_fwd is 0) and the layer costs are
 * the mbs loop's: layer_parts reads the schedule nowhere else. Returns
 * whether s fits (false where its own layer costs fail). */
static bool evaluate_schedule(struct search *S, struct strategy *s)
{
	struct layer_costs keep = S->lc;
	bool fits;

	if (!schedule_fb_overlap(s->schedule) || s->ep <= 1)
		return search_evaluate(S, s);
	if (cost_layers(&S->lc, S->m, S->c, s, S->ranks, NULL) < 0) {
		S->lc = keep;
		return false;
	}
	fits = search_evaluate(S, s);
	cost_layers_free(&S->lc);
	S->lc = keep;
	return fits;
}

/* The schedules and virtual-stage counts for a strategy (those
 * schedule_allowed admits, vp from 1 to 4 or plan_opts.vp); evaluates
 * each. Returns whether any fits. */
static bool each_schedule(struct search *S, struct strategy *s)
{
	const struct plan_opts *o = S->o;
	bool fits = false;

	S->have_v1 = false;
	for (int sc = 0; sc < SCHED_COUNT; sc++)
		for (int vp = o->vp ? o->vp : 1; vp <= (o->vp ? o->vp : 4); vp++) {
			if (!schedule_allowed(o, s, S->m->n_layer, (enum schedule)sc, vp))
				continue;
			if (pool_spent(S))
				return fits;
			s->schedule = (enum schedule)sc;
			s->vp = vp;
			s->n_stages = s->pp * vp;
			fits |= evaluate_schedule(S, s);
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

int search_plan_kind(const struct strategy *s)
{
	int n = strategy_slices(s), k = 0;

	if (s->vocab_par)
		return 0;
	if (strategy_uneven(s))
		return SEARCH_PLAN_KINDS - 1;
	if (n <= 1)
		return -1;
	while (n > 1 && k < SEARCH_PLAN_KINDS - 2) {
		n /= 2;
		k++;
	}
	return k;
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
				/* a planning-only variant once a strategy of this
				 * micro-batch fits: dropping it then leaves the
				 * micro-batch pruning below as it was */
				S->bound_plan = fits && (v || n > 1);
				fits |= each_schedule(S, s);
				S->bound_plan = false;
				cost_layers_free(&S->lc);
			}
		s->vocab_par = false;
		s->slices = 0;
		/* uneven per-replica micro-batches, alone, where they beat
		 * the even split on the strategy's mixed rank: its tries
		 * (cost_uneven) */
		for (int k = 0; k < COST_UNEVEN_TRIES && !*rc && S->o->uneven &&
				S->o->vocab_par != 1 && S->o->slices <= 1;
		     k++) {
			int u = cost_uneven(s->uneven, S->m, S->c, s, k, e);

			s->schedule = SCHED_1F1B;
			s->vp = 1;
			if (u < 0 || (u > 0 && cost_layers(&S->lc, S->m, S->c, s, S->ranks, e))) {
				S->err_at = S->count;
				*rc = -1;
				return;
			}
			if (u > 0) {
				S->bound_plan = fits;
				fits |= each_schedule(S, s);
				S->bound_plan = false;
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
	trainer_features(S->o->trainer, s, S->m, S->o);
}

/* ZeRO stages: 0 and 1 (distributed optimizer) with pipelines; 2 and 3 too
 * without (as FSDP/DeepSpeed run them); ZeRO 0 only over one DP x CP rank
 * (and one expert replica), where the others shard nothing. Then FP8 off and, where the GPUs
 * and the trainer have it, on (FP8 changes time and memory both ways, so
 * both are costed), then recomputation modes. */
static void each_memory_option(struct search *S, struct strategy *s, struct err *e, int *rc)
{
	int fp8_lo = S->o->fp8 >= 0 ? S->o->fp8 : 0;
	int fp8_hi = S->o->fp8 >= 0 ? S->o->fp8 : S->fp8_ok;

	for (int z = 0; z <= 3 && !*rc && !S->stop; z++) {
		/* searched: ZeRO >= 1 over one DP x CP rank (and one expert
		   replica) shards nothing, the ZeRO 0 plan again: not shown twice */
		if (S->o->zero >= 0 ? z != S->o->zero
				    : (s->pp > 1 && z > 1) || (z && s->dp * s->cp == 1 && strategy_edp(s) == 1))
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
void search_tuple(struct search *S, struct strategy *s, struct err *e, int *rc)
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

struct degree *search_degrees(struct search *S, const struct strategy *s, int *n)
{
	const struct plan_opts *o = S->o;
	int N = S->c->total_gpus, node = 0, cap = 16;
	struct degree *d = xreallocarray(NULL, (size_t)cap, sizeof *d);

	*n = 0;
	for (int g = 0; g < S->c->n_group; g++)
		if (!S->c->group[g].n_part)
			node = gcd(node, S->c->group[g].gpus_per_node);
	for (int tp = 1; tp <= node; tp++) {
		if (node % tp || !search_tp_fits(S->m, tp) || (o->tp && tp != o->tp))
			continue;
		for (int cp = 1; cp <= N / tp; cp++) {
			if ((N / tp) % cp || (cp > 1 && s->seq % (2 * cp)) || (o->cp && cp != o->cp))
				continue;
			for (int pp = 1; pp <= N / (tp * cp); pp++) {
				int dp = N / (tp * cp * pp);

				if ((N / (tp * cp)) % pp || pp > S->m->n_layer || pp > MAX_STAGES ||
				    (o->pp && pp != o->pp) || (o->dp && dp != o->dp) ||
				    s->gbs % dp || !search_split_groups(S, tp * cp, N / pp))
					continue;
				if (*n == cap)
					d = xreallocarray(d, (size_t)(cap *= 2), sizeof *d);
				d[(*n)++] = (struct degree){ tp, cp, pp, dp };
			}
		}
	}
	return d;
}
