/* trainer.c: what Megatron-LM, torchtitan, DeepSpeed and NeMo accept
 * (TRAINERS.md), and the node order of a launch. */
#include "trainer.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "model.h"
#include "strategy.h"
#include "util.h"

static const char *const names[TRAINER_COUNT] = {
	[TRAINER_MEGATRON] = "megatron", [TRAINER_TORCHTITAN] = "torchtitan",
	[TRAINER_DEEPSPEED] = "deepspeed", [TRAINER_NEMO] = "nemo",
};

/* The names a trainer gives the dimensions its checks are about, so that a
 * message reads like the trainer's own. */
struct vocab {
	const char *heads, *kv, *ffn, *seq;
};

static const struct vocab vocabs[TRAINER_COUNT] = {
	[TRAINER_MEGATRON] = { "num_attention_heads", "num_query_groups",
			       "ffn_hidden_size", "seq_length" },
	[TRAINER_TORCHTITAN] = { "n_heads", "n_kv_heads", "ffn hidden_dim",
				 "seq_len" },
	[TRAINER_DEEPSPEED] = { "attention heads", "kv heads",
				"ffn hidden size", "sequence length" },
	[TRAINER_NEMO] = { "num_attention_heads", "num_query_groups",
			   "ffn_hidden_size", "seq_length" },
};

const char *trainer_name(enum trainer t) { return names[t]; }

int trainer_parse(const char *name)
{
	for (int i = 0; i < TRAINER_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* err_set with "<trainer>: " in front. Returns -1. */
static int refuse(struct err *e, enum trainer t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct err *e, enum trainer t, const char *fmt, ...)
{
	char msg[sizeof e->msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(e, "%s: %s", names[t], msg);
}

/* The strategy is well formed: degrees, stage list, node groups. */
static int check_shape(enum trainer t, const struct model *m,
		       const struct cluster *c, const struct strategy *s,
		       struct err *e)
{
	int n_layer = m->layers + 2;

	if (s->tp < 1 || s->cp < 1 || s->pp < 1 || s->dp < 1 || s->ep < 1 ||
	    s->vp < 1 || s->mbs < 1 || s->gbs < 1 || s->seq < 1)
		return refuse(e, t, "strategy degrees, batch sizes and seq must be positive");
	if (s->n_stages != s->pp * s->vp || s->n_stages > MAX_STAGES)
		return refuse(e, t, "strategy has %d stages, not pp * vp (%d)",
			      s->n_stages, s->pp * s->vp);
	if (s->first[0] != 0 || s->first[s->n_stages] != n_layer)
		return refuse(e, t, "the stages must cover layers 0 to %d (embedding, %d blocks, head), not %d to %d",
			      n_layer - 1, m->layers, s->first[0], s->first[s->n_stages] - 1);
	for (int k = 0; k < s->n_stages; k++)
		if (stage_layers(s, k) < 1)
			return refuse(e, t, "stage %d holds no layers (first[%d] = %d, first[%d] = %d); every stage of the layout must be non-empty",
				      k, k, s->first[k], k + 1, s->first[k + 1]);
	for (int p = 0; p < s->pp; p++) {
		if (s->group[p] >= c->n_group)
			return refuse(e, t, "pipeline rank %d is on node group %d, but the cluster has %d",
				      p, s->group[p], c->n_group);
		if (c->group[s->group[p]].gpus_per_node < 1)
			return refuse(e, t, "group '%s' has no GPUs per node", c->group[s->group[p]].name);
	}
	if (s->zero < 0 || s->zero > 3)
		return refuse(e, t, "ZeRO stage %d is not 0 to 3", s->zero);
	return 0;
}

/* Schedules each trainer has, and the interleaving rules. */
static int check_schedule(enum trainer t, const struct strategy *s, struct err *e)
{
	if (s->pp > 1) {
		if (s->schedule == SCHED_ZB_H1)
			return refuse(e, t, "schedule 'zb-h1' is a planning option only, with no %s flag or config; plan with 1f1b or interleaved",
				      names[t]);
		if (s->schedule == SCHED_GPIPE && t != TRAINER_TORCHTITAN)
			return refuse(e, t, "schedule 'gpipe' has no %s flag or config (its pipeline runs 1F1B); plan with 1f1b",
				      names[t]);
		if (s->schedule == SCHED_INTERLEAVED && s->vp < 2)
			return refuse(e, t, "schedule 'interleaved' needs vp > 1, not %d", s->vp);
		if (s->schedule != SCHED_INTERLEAVED && s->vp > 1)
			return refuse(e, t, "vp %d needs schedule 'interleaved', not '%s'",
				      s->vp, schedule_name(s->schedule));
	}
	if (s->vp > 1 && t == TRAINER_DEEPSPEED)
		return refuse(e, t, "no interleaved pipeline (vp %d): the pipeline engine runs one stage per rank",
			      s->vp);
	if (s->vp > 1 && s->micro_batches < s->pp)
		return refuse(e, t, "interleaving (vp %d) needs micro-batches (%d) >= pp (%d)",
			      s->vp, s->micro_batches, s->pp);
	return 0;
}

static int check_batch(enum trainer t, const struct strategy *s, struct err *e)
{
	if (s->gbs % (s->mbs * s->dp) != 0)
		return refuse(e, t, "global batch (%d) must be divisible by micro batch (%d) * dp (%d)",
			      s->gbs, s->mbs, s->dp);
	if (s->micro_batches != s->gbs / (s->mbs * s->dp))
		return refuse(e, t, "micro-batches (%d) must be global batch / (micro batch * dp) = %d",
			      s->micro_batches, s->gbs / (s->mbs * s->dp));
	return 0;
}

/* TP and SP: head and FFN splits, TP groups inside nodes. */
static int check_tp(enum trainer t, const struct model *m, const struct cluster *c,
		    const struct strategy *s, struct err *e)
{
	const struct vocab *v = &vocabs[t];
	int tp = s->tp, kv = m->kv_heads ? m->kv_heads : m->heads;

	if (s->sp && tp < 2)
		return refuse(e, t, "sequence parallelism needs tp > 1");
	if (m->heads % tp != 0)
		return refuse(e, t, "%s (%d) must be divisible by tp (%d)", v->heads, m->heads, tp);
	if (t == TRAINER_TORCHTITAN && kv % tp != 0)
		return refuse(e, t, "%s (%d) must be divisible by tp (%d)", v->kv, kv, tp);
	if (kv % tp != 0 && tp % kv != 0)
		return refuse(e, t, "%s (%d) must be divisible by tp (%d) or divide it", v->kv, kv, tp);
	if (m->ffn % tp != 0)
		return refuse(e, t, "%s (%d) must be divisible by tp (%d)", v->ffn, m->ffn, tp);
	if (m->experts > 0 && m->moe_ffn % tp != 0)
		return refuse(e, t, "MoE ffn hidden size (%d) must be divisible by tp (%d)", m->moe_ffn, tp);
	for (int p = 0; p < s->pp; p++) {
		const struct node_group *g = &c->group[s->group[p]];

		if (g->gpus_per_node % tp != 0)
			return refuse(e, t, "tp (%d) must divide the GPUs per node (%d) of group '%s'",
				      tp, g->gpus_per_node, g->name);
	}
	return 0;
}

static int check_cp(enum trainer t, const struct strategy *s, struct err *e)
{
	const struct vocab *v = &vocabs[t];

	if (s->cp == 1)
		return 0;
	if (t == TRAINER_DEEPSPEED)
		return refuse(e, t, "no context parallelism (cp %d)", s->cp);
	if (t == TRAINER_TORCHTITAN && s->seq % (s->tp * 2 * s->cp) != 0)
		return refuse(e, t, "%s (%d) must be divisible by tp * 2 * cp (%d)",
			      v->seq, s->seq, s->tp * 2 * s->cp);
	if (s->seq % (2 * s->cp) != 0)
		return refuse(e, t, "%s (%d) must be divisible by 2 * cp (%d)",
			      v->seq, s->seq, 2 * s->cp);
	return 0;
}

static int check_moe(enum trainer t, const struct model *m, const struct strategy *s,
		     struct err *e)
{
	int world = s->tp * s->cp * s->pp * s->dp;

	if (s->ep == 1)
		return 0;
	if (m->experts < 1)
		return refuse(e, t, "expert parallelism (ep %d) needs a MoE model", s->ep);
	if (m->experts % s->ep != 0)
		return refuse(e, t, "num_experts (%d) must be divisible by ep (%d)", m->experts, s->ep);
	/* Megatron: world % (etp * ep * pp) == 0 with etp = tp by default. */
	if (world % (s->tp * s->ep * s->pp) != 0)
		return refuse(e, t, "world size (%d) must be divisible by tp * ep * pp (%d)",
			      world, s->tp * s->ep * s->pp);
	if ((t == TRAINER_MEGATRON || t == TRAINER_NEMO) && s->tp > 1 && !s->sp)
		return refuse(e, t, "expert parallelism with tp > 1 needs sequence parallelism");
	return 0;
}

static int check_zero(enum trainer t, const struct strategy *s, struct err *e)
{
	switch (t) {
	case TRAINER_DEEPSPEED:
		if (s->zero >= 2 && s->pp > 1)
			return refuse(e, t, "ZeRO stage %d cannot run with pipeline parallelism (pp %d): the pipeline engine takes stages 0 and 1",
				      s->zero, s->pp);
		break;
	case TRAINER_MEGATRON:
	case TRAINER_NEMO:
		/* The distributed optimizer shards the optimizer states only
		 * (6 + 12/dp bytes per parameter, theoretical_memory_usage.py). */
		if (s->zero >= 2)
			return refuse(e, t, "ZeRO stage %d has no flag; the distributed optimizer is ZeRO-1 (gradients stay whole)",
				      s->zero);
		break;
	case TRAINER_TORCHTITAN:
		/* torchtitan applies DDP only to a 1-D mesh ("DDP has not
		 * supported > 1D parallelism"); ZeRO >= 1 becomes FSDP. */
		if (s->zero == 0 && s->dp > 1 && s->tp * s->cp * s->pp > 1)
			return refuse(e, t, "data parallelism without ZeRO (zero 0, dp %d) runs as DDP, which does not combine with tp, cp or pp; plan with zero >= 1 (FSDP)",
				      s->dp);
		break;
	default:
		break;
	}
	return 0;
}

static int check_model(enum trainer t, const struct model *m, const struct strategy *s,
		       struct err *e)
{
	const struct vocab *v = &vocabs[t];

	/* Megatron: 1 <= recompute_num_layers <= num_layers // pp. */
	if ((t == TRAINER_MEGATRON || t == TRAINER_NEMO) &&
	    s->recompute == RECOMPUTE_FULL && m->layers / s->pp < 1)
		return refuse(e, t, "full recompute needs recompute_num_layers (1) <= layers per pipeline rank (num_layers %d // pp %d = 0)",
			      m->layers, s->pp);
	if (m->learned_pos && s->seq > m->max_pos)
		return refuse(e, t, "%s (%d) exceeds max_position_embeddings (%d) of the learned position embeddings",
			      v->seq, s->seq, m->max_pos);
	return 0;
}

int trainer_check(enum trainer t, const struct model *m, const struct cluster *c,
		  const struct strategy *s, struct err *e)
{
	struct trainer_nodes n;

	if (check_shape(t, m, c, s, e) || check_schedule(t, s, e) ||
	    check_batch(t, s, e) || check_tp(t, m, c, s, e) ||
	    check_cp(t, s, e) || check_moe(t, m, s, e) ||
	    check_zero(t, s, e) || check_model(t, m, s, e))
		return -1;
	if (trainer_nodes(&n, c, s, e)) {
		err_prefix(e, "%s", names[t]);
		return -1;
	}
	trainer_nodes_free(&n);
	return 0;
}

/* Per trainer, what its launch files can set (TRAINERS.md, and what
 * output/emit*.c write):
 * - Megatron-LM (also with no trainer chosen): --fp8, --tp-comm-overlap
 *   (asserts sequence parallelism, so tp > 1), --overlap-grad-reduce,
 *   --overlap-param-gather (asserts the distributed optimizer and
 *   --overlap-grad-reduce; arguments.py).
 * - NeMo 2.0 / Megatron Bridge: the same Megatron core fields
 *   (model.fp8, model.tp_comm_overlap, ddp.overlap_grad_reduce,
 *   ddp.overlap_param_gather); TRAINERS.md names only overlap_grad_reduce,
 *   the others are assumed to follow Megatron's rules.
 * - torchtitan v0.2.2: FP8 through torchao's float8 converter (assumed: not
 *   in TRAINERS.md), async TP (enable_async_tensor_parallel, which TRAINERS.md
 *   lists) for TP overlap, with tp > 1; FSDP (zero >= 1) prefetches its
 *   parameter all-gathers under the forward and reduce-scatters under the
 *   backward, DDP overlaps its bucketed all-reduce with the backward.
 * - DeepSpeed: no FP8 switch in ds_config.json (TRAINERS.md: bf16 only) and
 *   no TP communication overlap; gradient reduction overlaps with the
 *   backward only through ZeRO's overlap_comm (zero >= 1); parameters are
 *   prefetched under compute only by ZeRO-3 (ZeRO-1/2 gather them after the
 *   optimizer step).
 * Gradient accumulation fusion (the weight-gradient GEMM adds into the
 * gradient buffer: Megatron's --gradient-accumulation-fusion, on by default
 * with Transformer Engine or apex, and NeMo's gradient_accumulation_fusion)
 * is Megatron's and NeMo's; torchtitan and DeepSpeed accumulate in a pass of
 * their own (autograd's .grad add, DeepSpeed's accumulation buffer). */
bool trainer_allows(int t, enum trainer_feature f, const struct strategy *s)
{
	bool ds = t == TRAINER_DEEPSPEED;

	switch (f) {
	case FEATURE_FP8:
		return !ds;
	case FEATURE_TP_OVERLAP:
		return !ds && s->tp > 1 && s->sp;
	case FEATURE_GRAD_OVERLAP:
		return !ds || s->zero >= 1;
	case FEATURE_PARAM_OVERLAP:
		return ds ? s->zero == 3 : s->zero >= 1 && s->grad_overlap;
	case FEATURE_GRAD_ACC_FUSION:
		return !ds && t != TRAINER_TORCHTITAN;
	}
	return false;
}

int trainer_nodes(struct trainer_nodes *out, const struct cluster *c,
		  const struct strategy *s, struct err *e)
{
	int block = s->tp * s->cp * s->dp, room = 0;
	int *used = xcalloc((size_t)c->n_group, sizeof *used);
	/* Every node holds at least one rank: at most world nodes. */
	size_t max = (size_t)block * (size_t)s->pp;
	struct trainer_nodes n = { 0 };

	n.group = xcalloc(max, sizeof *n.group);
	n.gpus = xcalloc(max, sizeof *n.gpus);
	for (int p = 0; p < s->pp; p++) {
		int g = s->group[p];

		for (int need = block; need > 0;) {
			if (room == 0 || n.group[n.n - 1] != g) {
				used[g]++;
				n.group[n.n++] = g;
				room = c->group[g].gpus_per_node;
			}
			int take = need < room ? need : room;

			n.gpus[n.n - 1] += take;
			room -= take;
			need -= take;
		}
	}
	for (int g = 0; g < c->n_group; g++)
		if (used[g] > c->group[g].nodes) {
			err_set(e, "world size %d (tp*cp*pp*dp) needs %d nodes of group '%s', which has %d",
				s->tp * s->cp * s->pp * s->dp, used[g],
				c->group[g].name, c->group[g].nodes);
			free(used);
			trainer_nodes_free(&n);
			return -1;
		}
	free(used);
	*out = n;
	return 0;
}

void trainer_nodes_free(struct trainer_nodes *n)
{
	if (!n)
		return;
	free(n->group);
	free(n->gpus);
	n->group = n->gpus = NULL;
	n->n = 0;
}
