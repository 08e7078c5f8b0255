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
	[TRAINER_MEGATRON] = "megatron",
	[TRAINER_TORCHTITAN] = "torchtitan",
	[TRAINER_DEEPSPEED] = "deepspeed",
	[TRAINER_NEMO] = "nemo",
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

const char *trainer_name(enum trainer t)
{
	return names[t];
}

int trainer_parse(const char *name)
{
	for (int i = 0; i < TRAINER_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* err_set with "<trainer>: " in front (e NULL: nothing formatted, as
 * the search asks only whether). Returns -1. */
static int refuse(struct err *e, enum trainer t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct err *e, enum trainer t, const char *fmt, ...)
{
	char msg[sizeof e->msg];
	va_list ap;

	if (!e)
		return -1;
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

/* Schedules each trainer has (TRAINERS.md), and the interleaving rules:
 * - Megatron-LM and NeMo / Megatron Bridge: 1F1B, and interleaved 1F1B with
 *   vp > 1 (--num-virtual-stages-per-pipeline-rank or the layout); no GPipe
 *   and no zero-bubble schedule.
 * - torchtitan v0.2.2 (torch.distributed.pipelining): 1F1B, GPipe,
 *   Interleaved1F1B, and the zero-bubble InterleavedZeroBubble (looped,
 *   several stages per rank: interleaved-zb) and ZBVZeroBubble (two stages
 *   per rank in a V: zb-v); no ZB-H1 or ZB-H2, which keep one stage per
 *   rank (torch has no ZB-H2 schedule; Qi et al.'s own ZB-H2 runs in their
 *   Megatron-LM fork, not in the Megatron-LM that TRAINERS.md reads);
 *   DualPipeV (two stages per rank in a V: dualpipev; TRAINERS.md lists it
 *   among the names pipeline_parallel_schedule takes, from
 *   torch.distributed.pipelining's ScheduleDualPipeV, which the PyTorch
 *   that torchtitan v0.2.2 requires has).
 * - DualPipe (two model copies) has no trainer here: deepseek-ai/DualPipe
 *   is a library to build a trainer around, so it is planning only.
 * - DeepSpeed's pipeline engine: 1F1B with one stage per rank only.
 * Every trainer: virtual stages go with the schedules that have them
 * (schedule_virtual; ZB-V exactly 2), and need micro-batches >= pp. */
static int check_schedule(enum trainer t, const struct strategy *s, struct err *e)
{
	/* the zero-bubble schedules with virtual stages (torchtitan's), and
	   those with one stage per rank and one model copy (ZB-H1, ZB-H2) */
	bool zb = schedule_zero_bubble(s->schedule) && schedule_virtual(s->schedule);
	bool h = schedule_zero_bubble(s->schedule) && !schedule_virtual(s->schedule) &&
		 !schedule_bidirectional(s->schedule);

	if (s->pp > 1) {
		if (h && t == TRAINER_TORCHTITAN)
			return refuse(e, t, "schedule '%s' (one stage per rank) has no torch.distributed.pipelining schedule (InterleavedZeroBubble and ZBVZeroBubble run several stages per rank); plan with interleaved-zb or zb-v",
				      schedule_name(s->schedule));
		if (h || schedule_bidirectional(s->schedule))
			return refuse(e, t, "schedule '%s' is a planning option only, with no %s flag or config; plan with 1f1b%s",
				      schedule_name(s->schedule), names[t],
				      t == TRAINER_DEEPSPEED ? "" : " or interleaved");
		if (zb && t != TRAINER_TORCHTITAN)
			return refuse(e, t, "schedule '%s' has no %s flag or config (torchtitan runs it); plan with 1f1b%s",
				      schedule_name(s->schedule), names[t],
				      t == TRAINER_DEEPSPEED ? "" : " or interleaved");
		if (s->schedule == SCHED_GPIPE && t != TRAINER_TORCHTITAN)
			return refuse(e, t, "schedule 'gpipe' has no %s flag or config (its pipeline runs 1F1B); plan with 1f1b",
				      names[t]);
		if (schedule_virtual(s->schedule) && s->vp < 2)
			return refuse(e, t, "schedule '%s' needs vp > 1, not %d",
				      schedule_name(s->schedule), s->vp);
		if (schedule_v(s->schedule) && s->vp != 2)
			return refuse(e, t, "schedule '%s' runs 2 stages per rank, not vp %d",
				      schedule_name(s->schedule), s->vp);
		if (schedule_fb_overlap(s->schedule) &&
		    s->micro_batches < schedule_min_micro_batches(s->schedule, s->pp))
			return refuse(e, t, "schedule '%s' needs micro-batches (%d) >= 2 x pp (%d)",
				      schedule_name(s->schedule), s->micro_batches,
				      schedule_min_micro_batches(s->schedule, s->pp));
		if (!schedule_virtual(s->schedule) && s->vp > 1)
			return refuse(e, t, "vp %d needs schedule 'interleaved', 'interleaved-zb', 'zb-v' or 'dualpipev', not '%s'",
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
	if (m->experts > 0 && m->moe_ffn % strategy_etp(s) != 0)
		return refuse(e, t, "MoE ffn hidden size (%d) must be divisible by etp (%d)", m->moe_ffn,
			      strategy_etp(s));
	for (int p = 0; p < s->pp; p++) {
		const struct node_group *g = &c->group[s->group[p]];

		if (g->gpus_per_node % tp != 0)
			return refuse(e, t, "tp (%d) must divide the GPUs per node (%d) of group '%s'",
				      tp, g->gpus_per_node, g->name);
	}
	return 0;
}

/* Context parallelism: DeepSpeed has none here; torchtitan rotates K and V
 * round a ring (context_parallel_rotate_method), no all-to-all flavour;
 * Megatron's a2a and a2a+p2p split the query and KV heads each GPU holds
 * among the all-to-all's ranks (TRAINERS.md: --cp-comm-type,
 * --hierarchical-context-parallel-sizes). */
static int check_cp(enum trainer t, const struct model *m, const struct strategy *s,
		    struct err *e)
{
	const struct vocab *v = &vocabs[t];
	int a = s->cp_comm == CP_A2A ? s->cp : s->cp_comm == CP_A2A_P2P ? s->cp_a2a
									: 1;
	int kv = m->kv_heads > 0 ? m->kv_heads : m->heads;

	if (s->cp == 1)
		return 0;
	if (t == TRAINER_DEEPSPEED)
		return refuse(e, t, "no context parallelism (cp %d)", s->cp);
	if (t == TRAINER_TORCHTITAN && s->cp_comm != CP_P2P)
		return refuse(e, t, "context parallelism '%s': torchtitan passes K and V round a ring (p2p) only",
			      cp_comm_name(s->cp_comm));
	if (s->cp_comm == CP_A2A_P2P && (a < 2 || a >= s->cp || s->cp % a))
		return refuse(e, t, "a2a+p2p needs an all-to-all size between 2 and cp (%d) that divides it, not %d",
			      s->cp, a);
	if (a > 1 && !model_heads_split(m, s->tp, a))
		return refuse(e, t, "cp all-to-all over %d ranks needs heads / tp (%d) and kv heads / tp (%d) divisible by %d",
			      a, m->heads / s->tp, kv / s->tp, a);
	if (t == TRAINER_TORCHTITAN && s->seq % (s->tp * 2 * s->cp) != 0)
		return refuse(e, t, "%s (%d) must be divisible by tp * 2 * cp (%d)",
			      v->seq, s->seq, s->tp * 2 * s->cp);
	if (s->seq % (2 * s->cp) != 0)
		return refuse(e, t, "%s (%d) must be divisible by 2 * cp (%d)",
			      v->seq, s->seq, 2 * s->cp);
	return 0;
}

/* MoE: the expert-parallel degree, Megatron's world rule, expert TP
 * (torchtitan's expert_tensor_parallel_degree and DeepSpeed's
 * enable_expert_tensor_parallelism: all of TP or none), the balancing
 * loss's scope (DeepSpeed's gate: per micro-batch; TRAINERS.md) and the
 * capacity factor (torchtitan: dropless). */
static int check_moe(enum trainer t, const struct model *m, const struct strategy *s,
		     struct err *e)
{
	int world = s->tp * s->cp * s->pp * s->dp;

	if (m->experts > 0 && t == TRAINER_DEEPSPEED && s->moe_balance == MOE_BALANCE_GLOBAL_BATCH)
		return refuse(e, t, "global-batch balancing: DeepSpeed's MoE gate takes its auxiliary loss per micro-batch");
	if (m->experts > 0 && t == TRAINER_TORCHTITAN && s->moe_capacity > 0)
		return refuse(e, t, "capacity factor %g: torchtitan's MoE is dropless (no capacity factor)",
			      s->moe_capacity);
	if (m->experts > 0 && (t == TRAINER_TORCHTITAN || t == TRAINER_DEEPSPEED) &&
	    strategy_etp(s) != 1 && strategy_etp(s) != s->tp)
		return refuse(e, t, "expert tensor parallelism %d: the experts split over all of TP (%d) or none",
			      strategy_etp(s), s->tp);
	if (m->experts > 0 && s->moe_dispatcher != MOE_DISPATCH_ALLTOALL && t != TRAINER_MEGATRON &&
	    t != TRAINER_NEMO)
		return refuse(e, t, "token dispatcher %s: Megatron-Core's --moe-token-dispatcher-type only",
			      moe_dispatcher_name(s->moe_dispatcher));
	if (m->experts > 0 && s->moe_pad && s->moe_capacity > 0 && t == TRAINER_DEEPSPEED)
		return refuse(e, t, "padding to capacity: set by Megatron's --moe-pad-expert-input-to-capacity only");
	if (m->experts > 0 && s->grouped_gemm && t == TRAINER_DEEPSPEED)
		return refuse(e, t, "grouped GEMM: DeepSpeed's MoE runs its local experts one by one");
	if (s->ep_overlap && t != TRAINER_MEGATRON && t != TRAINER_NEMO)
		return refuse(e, t, "EP all-to-all overlap: Megatron-Core's --overlap-moe-expert-parallel-comm only");
	if (s->ep_overlap && s->schedule != SCHED_1F1B && s->schedule != SCHED_INTERLEAVED)
		return refuse(e, t, "EP all-to-all overlap runs under 1F1B or interleaved 1F1B, not %s",
			      schedule_name(s->schedule));
	if (s->ep == 1)
		return 0;
	if (m->experts < 1)
		return refuse(e, t, "expert parallelism (ep %d) needs a MoE model", s->ep);
	if (m->experts % s->ep != 0)
		return refuse(e, t, "num_experts (%d) must be divisible by ep (%d)", m->experts, s->ep);
	if ((t == TRAINER_TORCHTITAN || t == TRAINER_DEEPSPEED) && (s->dp * s->cp) % s->ep != 0)
		return refuse(e, t, "ep (%d) must divide dp x cp (%d): expert parallelism over TP ranks is Megatron's folding",
			      s->ep, s->dp * s->cp);
	/* Megatron: world % (etp * ep * pp) == 0 */
	if (world % (strategy_etp(s) * s->ep * s->pp) != 0)
		return refuse(e, t, "world size (%d) must be divisible by etp * ep * pp (%d)",
			      world, strategy_etp(s) * s->ep * s->pp);
	if ((t == TRAINER_MEGATRON || t == TRAINER_NEMO) && s->tp > 1 && !s->sp)
		return refuse(e, t, "expert parallelism with tp > 1 needs sequence parallelism");
	return 0;
}

/* FP8 GEMMs where the trainer's config cannot turn them on: DeepSpeed's
 * ds_config.json has bf16 and fp16 sections and no FP8 one (TRAINERS.md;
 * trainer_allows). FP8 on the stages of a mixed cluster whose GPUs have it
 * (cluster_bf16_blocks) needs BF16 on the others, which only a number of
 * blocks at the model's start and end can say (FEATURE_FP8_PER_LAYER). */
static int check_precision(enum trainer t, const struct cluster *c, const struct strategy *s,
			   struct err *e)
{
	int start = 0, end = 0;

	if (s->fp8 && !trainer_allows((int)t, FEATURE_FP8, s))
		return refuse(e, t, "no FP8 GEMMs: ds_config.json sets bf16 or fp16 only");
	/* bf16 Adam moments: Megatron's precision-aware optimizer only */
	if (s->moment_bytes == 2 && t != TRAINER_MEGATRON && t != TRAINER_NEMO)
		return refuse(e, t, "bf16 Adam moments: only Megatron's precision-aware optimizer keeps them");
	if (s->fp8 && cluster_bf16_blocks(c, s, &start, &end))
		return refuse(e, t, "FP8 blocks on both sides of a stage on GPUs without FP8: only the first and last blocks can stay in BF16");
	if ((start || end) && !trainer_allows((int)t, FEATURE_FP8_PER_LAYER, s))
		return refuse(e, t, "FP8 on some GPUs only: no setting keeps the blocks on the GPUs without FP8 in BF16");
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

/* torchtitan v0.2.2's model flavors (TRAINERS.md "models shipped"; the
 * dimensions are those of the Hugging Face models they load: llama3,
 * qwen3, deepseek_v3 and llama4 in torchtitan/models/). kv 0: MLA, no
 * kv-head count to match. */
static const struct titan_flavor {
	const char *model, *flavor;
	int hidden, layers, heads, kv, ffn, experts; /* ffn 0: not matched (MoE) */
} titan_flavors[] = {
	{ "llama3", "8B", 4096, 32, 32, 8, 14336, 0 },
	{ "llama3", "70B", 8192, 80, 64, 8, 28672, 0 },
	{ "llama3", "405B", 16384, 126, 128, 8, 53248, 0 },
	{ "qwen3", "0.6B", 1024, 28, 16, 8, 3072, 0 },
	{ "qwen3", "1.7B", 2048, 28, 16, 8, 6144, 0 },
	{ "qwen3", "4B", 2560, 36, 32, 8, 9728, 0 },
	{ "qwen3", "8B", 4096, 36, 32, 8, 12288, 0 },
	{ "qwen3", "14B", 5120, 40, 40, 8, 17408, 0 },
	{ "qwen3", "32B", 5120, 64, 64, 8, 25600, 0 },
	{ "qwen3", "30B-A3B", 2048, 48, 32, 4, 0, 128 },
	{ "qwen3", "235B-A22B", 4096, 94, 64, 4, 0, 128 },
	{ "deepseek_v3", "16B", 2048, 27, 16, 0, 0, 64 },
	{ "deepseek_v3", "236B", 5120, 60, 128, 0, 0, 160 },
	{ "deepseek_v3", "671B", 7168, 61, 128, 0, 0, 256 },
	{ "llama4", "17bx16e", 5120, 48, 40, 8, 0, 16 },
	{ "llama4", "17bx128e", 5120, 48, 40, 8, 0, 128 },
};

/* The torchtitan model family of m by its Hugging Face model_type, or by its
 * architecture for a profile (model_type ""): llama3 for a dense SwiGLU
 * model without biases, q/k norms or sliding windows, on rotary positions. */
static const char *titan_family(const struct model *m)
{
	const char *mt = m->model_type;

	if (strcmp(mt, "qwen3") == 0 || strcmp(mt, "qwen3_moe") == 0)
		return "qwen3";
	if (strcmp(mt, "deepseek_v3") == 0)
		return "deepseek_v3";
	if (strcmp(mt, "llama4_text") == 0 || strcmp(mt, "llama4") == 0)
		return "llama4";
	if ((!*mt || strcmp(mt, "llama") == 0) && m->ffn_kind == FFN_SWIGLU && !m->bias &&
	    !m->qkv_bias && !m->qk_norm && !m->learned_pos && !m->sliding_window &&
	    !m->kv_lora_rank && m->experts == 0)
		return "llama3";
	return NULL;
}

const char *trainer_titan_model(const struct model *m, const char **flavor)
{
	const char *fam = titan_family(m);
	int kv = m->kv_heads ? m->kv_heads : m->heads;

	for (size_t i = 0; fam && i < sizeof titan_flavors / sizeof *titan_flavors; i++) {
		const struct titan_flavor *f = &titan_flavors[i];

		if (strcmp(f->model, fam) == 0 && f->hidden == m->hidden &&
		    f->layers == m->layers && f->heads == m->heads &&
		    (f->kv == 0 || f->kv == kv) && (f->ffn == 0 || f->ffn == m->ffn) &&
		    f->experts == m->experts) {
			*flavor = f->flavor;
			return f->model;
		}
	}
	return NULL;
}

/* Megatron-LM and NeMo build the model from flags (TRAINERS.md "Fields the
 * launch files must carry"); a feature without one cannot be trained. */
static int check_megatron_model(enum trainer t, const struct model *m, struct err *e)
{
	const struct rope_scaling *r = &m->rope_scaling;
	const char *mt = m->model_type;

	/* Falcon and GPT-J run attention and MLP in parallel off one norm;
	   Gemma 2 adds a norm after each (four per block). */
	if (m->parallel_block)
		return refuse(e, t, "model_type '%s': parallel attention and MLP blocks have no flag", mt);
	if (m->block_norms > 2)
		return refuse(e, t, "model_type '%s': %d norms per block (norms after attention and MLP too) have no flag",
			      mt, m->block_norms);
	if (m->sliding_window > 0 && m->sliding_every != 1)
		return refuse(e, t, "a sliding window on every %d%s layer (model_type '%s') has no flag: --window-size windows every layer",
			      m->sliding_every, m->sliding_every == 2 ? "nd" : "th", mt);
	if (!r->type[0])
		return 0;
	if (strcmp(r->type, "yarn") == 0 && m->kv_lora_rank > 0)
		return 0; /* MLA's own YaRN: --rotary-scaling-factor */
	if (strcmp(r->type, "llama3") != 0)
		return refuse(e, t, "rope scaling '%s' has no flag (--use-rope-scaling is Llama 3's)", r->type);
	/* rotary_pos_embedding.py: _apply_scaling(freqs, factor, 1, 4, 8192) */
	if (r->low_freq_factor != 1 || r->high_freq_factor != 4 || r->original_max_pos != 8192)
		return refuse(e, t, "rope scaling 'llama3' with low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d: --use-rope-scaling fixes them to 1, 4 and 8192",
			      r->low_freq_factor, r->high_freq_factor, r->original_max_pos);
	return 0;
}

static int check_model(enum trainer t, const struct model *m, const struct strategy *s,
		       struct err *e)
{
	const struct vocab *v = &vocabs[t];
	const char *flavor;

	if ((t == TRAINER_MEGATRON || t == TRAINER_NEMO) && check_megatron_model(t, m, e))
		return -1;
	if (t == TRAINER_TORCHTITAN && !trainer_titan_model(m, &flavor))
		return refuse(e, t, "v0.2.2 ships no model '%s' (%s%s%s%d layers, hidden %d, ffn %d, %d experts): its models are the llama3 (8B, 70B, 405B), qwen3, deepseek_v3 and llama4 flavors",
			      m->name ? m->name : "", m->model_type[0] ? "model_type '" : "",
			      m->model_type, m->model_type[0] ? "', " : "", m->layers, m->hidden,
			      m->ffn, m->experts);

	/* modules beyond the attention core: Megatron-Core's recompute_modules */
	if (t != TRAINER_MEGATRON && t != TRAINER_NEMO && (strategy_rc_modules(s) & ~RM_CORE_ATTN))
		return refuse(e, t, "selective recomputation of modules beyond core_attn (layernorm, mlp, moe_act, moe, shared_experts, mla_up_proj): Megatron-Core's --recompute-modules only");
	/* deferred LM-head weight gradients: Megatron-Core's
	 * ModelParallelConfig refuses them without gradient accumulation
	 * fusion (their flush accumulates into main_grad in the fused kernel) */
	if (strategy_deferred(s) && t != TRAINER_MEGATRON && t != TRAINER_NEMO)
		return refuse(e, t, "deferred LM-head weight gradients: Megatron-Core's --defer-embedding-wgrad-compute only");
	if (strategy_deferred(s) && s->grad_acc_unfused)
		return refuse(e, t, "deferred LM-head weight gradients need gradient accumulation fusion");
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

/* The real groups (grp) and their GPUs (gpus) that host pipeline rank p
 * of s, in node order: its group, or a mixed group's parts. Returns how
 * many. */
static int rank_parts(const struct cluster *c, const struct strategy *s, int p, int *grp,
		      int *gpus)
{
	const struct node_group *G = &c->group[s->group[p]];

	if (!G->n_part) {
		grp[0] = s->group[p];
		gpus[0] = s->tp * s->cp * s->dp;
		return 1;
	}
	for (int i = 0; i < G->n_part; i++) {
		grp[i] = G->part_group[i];
		gpus[i] = G->part_gpus[i];
	}
	return G->n_part;
}

int trainer_nodes_fit(const struct cluster *c, const struct strategy *s, struct err *e)
{
	long used[MAX_GROUPS] = { 0 }, run = 0;
	int last = -1;

	for (int p = 0; p < s->pp; p++) {
		int grp[CLUSTER_MAX_PARTS], gpus[CLUSTER_MAX_PARTS];
		int n = rank_parts(c, s, p, grp, gpus);

		for (int i = 0; i < n; i++) {
			long gpn = c->group[grp[i]].gpus_per_node;

			if (grp[i] != last)
				run = 0;
			/* the nodes this run of GPUs on one group adds */
			used[grp[i]] += (run + gpus[i] + gpn - 1) / gpn - (run + gpn - 1) / gpn;
			run += gpus[i];
			last = grp[i];
		}
	}
	for (int g = 0; g < c->n_group; g++)
		if (used[g] > c->group[g].nodes)
			return err_set(e, "world size %d (tp*cp*pp*dp) needs %ld nodes of group '%s', which has %d",
				       s->tp * s->cp * s->pp * s->dp, used[g], c->group[g].name,
				       c->group[g].nodes);
	return 0;
}

/* Planning options that no trainer here runs (TRAINERS.md): the
 * vocabulary split over the pipeline ranks (Yeung et al. 2024; the
 * whole-layer placement of Megatron's --account-for-embedding-in-pipeline-
 * split is what the layout expresses), SlimPipe's sequence slices (Li
 * et al. 2025) and uneven per-replica micro-batch counts (Megatron-LM
 * and NeMo: micro-batches = gbs / (mbs x dp) on every DP rank;
 * torchtitan: one local_batch_size; DeepSpeed: one
 * gradient_accumulation_steps), and fine-grained activation offloading
 * (Megatron-Core has it, but its flags are not among those TRAINERS.md
 * lists, which are what the launch writers may set). Checked last, so
 * that a strategy a trainer refuses anyway names that rule. */
static int check_planning_only(enum trainer t, const struct strategy *s, struct err *e)
{
	if (s->vocab_par)
		return refuse(e, t, "vocabulary parallelism is a planning option only: no %s flag splits the embedding and the head over the pipeline ranks",
			      names[t]);
	if (strategy_slices(s) > 1)
		return refuse(e, t, "SlimPipe (%d slices per micro-batch) is a planning option only: %s does not slice micro-batches along the sequence",
			      strategy_slices(s), names[t]);
	if (s->offload_modules)
		return refuse(e, t, "activation offloading (--offload-modules) is a planning option only: no %s flag this release checks offloads activations",
			      names[t]);
	if (strategy_uneven(s))
		return refuse(e, t, "uneven per-replica micro-batches are a planning option only: %s",
			      t == TRAINER_TORCHTITAN
				      ? "torchtitan gives every DP rank the same training.local_batch_size"
			      : t == TRAINER_DEEPSPEED
				      ? "DeepSpeed gives every DP rank the same gradient_accumulation_steps (train_batch_size = micro x steps x DP)"
				      : "every DP rank runs global batch / (micro batch x DP) micro-batches");
	return 0;
}

int trainer_titan_main_check(const struct model *m, const struct strategy *s, struct err *e)
{
	if (m->experts > 0 && strategy_etp(s) > 1)
		return refuse(e, TRAINER_TORCHTITAN,
			      "main (2026-08) has no expert tensor parallelism: the experts cannot split over %d GPUs (etp); plan with --etp 1, or emit torchtitan (v0.2.2)",
			      strategy_etp(s));
	return 0;
}

int trainer_check(enum trainer t, const struct model *m, const struct cluster *c,
		  const struct strategy *s, struct err *e)
{
	if (check_shape(t, m, c, s, e) || check_precision(t, c, s, e) || check_schedule(t, s, e) ||
	    check_batch(t, s, e) || check_tp(t, m, c, s, e) ||
	    check_cp(t, m, s, e) || check_moe(t, m, s, e) ||
	    check_zero(t, s, e) || check_model(t, m, s, e) || check_planning_only(t, s, e))
		return -1;
	if (trainer_nodes_fit(c, s, e)) {
		err_prefix(e, "%s", names[t]);
		return -1;
	}
	return 0;
}

unsigned trainer_mask(const struct model *m, const struct cluster *c,
		      const struct strategy *s)
{
	unsigned mask = 0;

	for (int t = 0; t < TRAINER_COUNT; t++)
		if (trainer_check((enum trainer)t, m, c, s, NULL) == 0)
			mask |= 1u << t;
	return mask;
}

const char *trainer_refusal(enum trainer t, const struct model *m, const struct cluster *c,
			    const struct strategy *s, char *buf, size_t n)
{
	struct err e = { "" };

	if (trainer_check(t, m, c, s, &e) == 0)
		return NULL;
	if (n > 0)
		snprintf(buf, n, "%s", e.msg);
	return buf;
}

const char *trainer_mask_names(unsigned mask, char *buf, size_t n)
{
	size_t len = 0;

	if (n == 0)
		return buf;
	buf[0] = '\0';
	for (int t = 0; t < TRAINER_COUNT; t++)
		if (mask & (1u << t) && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[t]);
	if (!mask)
		snprintf(buf, n, "none");
	return buf;
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
 * FP8 on some blocks only (FEATURE_FP8_PER_LAYER): Megatron-LM's
 * --first-last-layers-bf16 with --num-layers-at-start-in-bf16 and
 * --num-layers-at-end-in-bf16 (emit_megatron.c says what it relies on);
 * NeMo's recipes and torchtitan's float8 converter are not known here to
 * set it, so they are not listed for such a row.
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
	case FEATURE_FP8_PER_LAYER:
		return t < 0 || t == TRAINER_MEGATRON;
	}
	return false;
}

int trainer_nodes(struct trainer_nodes *out, const struct cluster *c,
		  const struct strategy *s, struct err *e)
{
	int block = s->tp * s->cp * s->dp, room = 0;
	/* Every node holds at least one rank: at most world nodes. */
	size_t max = (size_t)block * (size_t)s->pp;
	struct trainer_nodes n = { 0 };

	if (trainer_nodes_fit(c, s, e))
		return -1;
	n.group = xcalloc(max, sizeof *n.group);
	n.gpus = xcalloc(max, sizeof *n.gpus);
	for (int p = 0; p < s->pp; p++) {
		int grp[CLUSTER_MAX_PARTS], gpus[CLUSTER_MAX_PARTS];
		int np = rank_parts(c, s, p, grp, gpus);

		for (int i = 0; i < np; i++) {
			int g = grp[i];

			for (int need = gpus[i]; need > 0;) {
				if (room == 0 || n.group[n.n - 1] != g) {
					n.group[n.n++] = g;
					room = c->group[g].gpus_per_node;
				}
				int take = need < room ? need : room;

				n.gpus[n.n - 1] += take;
				room -= take;
				need -= take;
			}
		}
	}
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
