/* plan_opts.c: the search's options: their defaults (plan_opts_init), the
 * what-if mode's completion, the --layout notation and the checks of the
 * options against the model and cluster (see plan.h, search_int.h). */
#include "plan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "ilp.h"
#include "model.h"
#include "search_int.h"
#include "trainer.h"
#include "util.h"

void plan_opts_init(struct plan_opts *o)
{
	memset(o, 0, sizeof *o);
	o->schedule = -1;
	o->recompute = -1;
	o->zero = -1;
	o->trainer = -1;
	o->attn = ATTN_FLASH;
	o->cp_comm = -1;
	o->vocab_par = -1;
	o->uneven = -1;
	o->fp8 = o->sp = o->tp_overlap = o->grad_overlap = o->param_overlap = -1;
	o->grad_acc_fusion = -1;
	o->p2p_split = -1;
	o->ilp_node_limit = ILP_NODE_LIMIT;
	o->place_dp_max = 20000;
}

void plan_opts_complete(struct plan_opts *o)
{
	if (o->vp > 1 && o->schedule < 0)
		o->schedule = SCHED_INTERLEAVED;
	if (!plan_opts_what_if(o))
		return;
	if (o->schedule < 0)
		o->schedule = SCHED_1F1B;
	if (o->recompute < 0)
		o->recompute = RECOMPUTE_NONE;
	if (o->zero < 0)
		o->zero = 0;
	if (!o->vp)
		o->vp = schedule_virtual((enum schedule)o->schedule) ? 2 : 1;
	if (o->fp8 < 0)
		o->fp8 = 0;
	if (o->vocab_par < 0)
		o->vocab_par = 0;
	if (o->uneven < 0)
		o->uneven = 0;
	if (!o->slices)
		o->slices = 1;
	o->keep_infeasible = true;
}

bool plan_opts_what_if(const struct plan_opts *o)
{
	return o->tp && o->pp && o->dp && o->cp && o->mbs;
}

/* One stage of a layout at *p: [E+][N][+L], at least one item. Sets *emb,
 * *blocks (at most max_blocks, the model's), *head and advances *p past
 * it. Returns 0, or -1 with e set. */
static int layout_stage(const char **p, const char *layout, int k, int n_stages,
			int max_blocks, bool *emb, long *blocks, bool *head, struct err *e)
{
	const char *q = *p;
	bool counted = false;

	*emb = *head = false;
	*blocks = 0;
	for (int item = 0;; item++) {
		if (*q == 'E') {
			if (k || item)
				return err_set(e, "--layout '%s': E (the embedding) may only begin the first stage",
					       layout);
			*emb = true;
			q++;
		} else if (*q == 'L') {
			*head = true;
			q++;
			if (k != n_stages - 1 || *q == '+')
				return err_set(e, "--layout '%s': L (final norm and head) may only end the last stage",
					       layout);
		} else if (isdigit((unsigned char)*q) && !counted) {
			char *end;

			*blocks = strtol(q, &end, 10);
			if (*blocks > max_blocks)
				return err_set(e, "--layout '%s': stage %d holds more blocks than the model's %d",
					       layout, k, max_blocks);
			counted = true;
			q = end;
		} else if (*q == '|' || !*q) {
			return err_set(e, item ? "--layout '%s': stage %d ends with '+'" : "--layout '%s': stage %d is empty", layout, k);
		} else {
			return err_set(e, "--layout '%s': stage %d: expected %s, not '%s'", layout, k,
				       counted ? "L" : "E, a block count or L", q);
		}
		if (*q != '+')
			break;
		q++;
	}
	*p = q;
	return 0;
}

int plan_layout_parse(const char *layout, const struct model *m, int n_stages,
		      unsigned short *first, struct err *e)
{
	const char *p = layout;
	int count = 1, at = 0;
	long total = 0;

	for (const char *q = layout; *q; q++)
		count += *q == '|';
	if (count != n_stages)
		return err_set(e, "--layout '%s' has %d stages, but pp x vp is %d", layout, count,
			       n_stages);
	for (int k = 0; k < n_stages; k++) {
		bool emb, head;
		long blocks;

		if (layout_stage(&p, layout, k, n_stages, m->layers, &emb, &blocks, &head, e))
			return -1;
		if (k == 0 && !emb)
			return err_set(e, "--layout '%s': the first stage must begin with E (the embedding)",
				       layout);
		if (k == n_stages - 1 && !head)
			return err_set(e, "--layout '%s': the last stage must end with L (final norm and head)",
				       layout);
		if (!emb && !head && !blocks)
			return err_set(e, "--layout '%s': stage %d holds no layers", layout, k);
		total += blocks;
		if (total > m->layers)
			return err_set(e, "--layout '%s': the blocks add up to more than the model's %d",
				       layout, m->layers);
		first[k] = (unsigned short)at;
		at += (int)blocks + emb + head;
		if (*p == '|')
			p++;
		else if (*p)
			return err_set(e, "--layout '%s': stage %d: expected '+', '|' or the end, not '%s'",
				       layout, k, p);
	}
	if (total != m->layers)
		return err_set(e, "--layout '%s': the blocks add up to %ld, but the model has %d",
			       layout, total, m->layers);
	first[n_stages] = (unsigned short)at;
	return 0;
}

/* Whether CP flavour fl (enum cp_comm) can run cp ranks at tp: the ring
 * always; a2a where the heads each GPU holds split over cp
 * (model_heads_split); a2a+p2p where they split over some all-to-all size
 * between 2 and cp that divides cp. */
static bool cp_flavour_runs(const struct model *m, int tp, int cp, int fl)
{
	if (fl == CP_A2A)
		return model_heads_split(m, tp, cp);
	if (fl != CP_A2A_P2P)
		return true;
	for (int a = 2; a < cp; a++)
		if (cp % a == 0 && model_heads_split(m, tp, a))
			return true;
	return false;
}

/* The degrees, experts and batch: tp splits the model, tp x cp x pp x dp
 * the cluster in the what-if mode, etp and ep the experts, dp and mbs the
 * global batch, cp the sequence. Returns 0, or -1 with e set. */
static int check_degrees(const struct model *m, const struct cluster *c,
			 const struct plan_opts *o, struct err *e)
{
	long long world = (long long)o->tp * o->cp * o->pp * o->dp;

	if (o->tp && !search_tp_fits(m, o->tp))
		return err_set(e, "--tp %d must divide the heads (%d), the FFN size (%d) and the KV heads (%d) or be a multiple of them",
			       o->tp, m->heads, m->ffn, m->kv_heads);
	if (plan_opts_what_if(o) && world != c->total_gpus)
		return err_set(e, "--tp x --cp x --pp x --dp is %lld, but the cluster has %d GPUs",
			       world, c->total_gpus);
	if (o->etp && !m->experts)
		return err_set(e, "--etp %d, but the model has no experts", o->etp);
	if (o->etp && o->tp && o->tp % o->etp)
		return err_set(e, "--etp %d must divide --tp %d", o->etp, o->tp);
	if (o->etp && m->experts && m->moe_ffn % o->etp)
		return err_set(e, "--etp %d must divide the expert FFN (%d)", o->etp, m->moe_ffn);
	if (o->ep > 1 && !m->experts)
		return err_set(e, "--ep %d, but the model has no experts (dense models run EP 1)", o->ep);
	if (o->ep > 1 && m->experts % o->ep)
		return err_set(e, "--ep %d must divide the model's %d experts", o->ep, m->experts);
	if (o->ep > 1 && o->dp && o->cp && o->tp &&
	    (o->tp / (o->etp ? o->etp : o->tp) * o->dp * o->cp) % o->ep)
		return err_set(e, "--ep %d must divide --dp x --cp (%d)%s", o->ep, o->dp * o->cp,
			       o->etp && o->etp < o->tp ? " x --tp / --etp" : "");
	if (o->dp && o->gbs % o->dp)
		return err_set(e, "--dp %d must divide the global batch (%d)", o->dp, o->gbs);
	if (o->dp && o->mbs && (o->gbs / o->dp) % o->mbs)
		return err_set(e, "--mbs %d must divide the batch per DP replica (%d)", o->mbs,
			       o->gbs / o->dp);
	if (o->cp > 1 && o->seq % (2 * o->cp))
		return err_set(e, "--cp %d needs a sequence length divisible by %d", o->cp, 2 * o->cp);
	return 0;
}

/* The CP flavour (--cp-comm-type): what the trainer passes and, with
 * --cp > 1, a TP at which the heads split for it (cp_flavour_runs).
 * Returns 0, or -1 with e set. */
static int check_cp_comm(const struct model *m, const struct plan_opts *o, struct err *e)
{
	if (o->cp_comm > CP_P2P && o->trainer == TRAINER_TORCHTITAN)
		return err_set(e, "--cp-comm-type %s: torchtitan passes K and V round a ring (p2p) only",
			       cp_comm_name((enum cp_comm)o->cp_comm));
	if (o->cp_comm > CP_P2P && o->cp > 1) {
		int tp = o->tp ? o->tp : 1, last = o->tp ? o->tp : m->heads;
		char at[32] = "any TP";

		while (tp <= last && !(search_tp_fits(m, tp) && cp_flavour_runs(m, tp, o->cp, o->cp_comm)))
			tp++;
		if (o->tp)
			snprintf(at, sizeof at, "--tp %d", o->tp);
		if (tp > last && o->cp_comm == CP_A2A)
			return err_set(e, "--cp-comm-type a2a: an all-to-all over --cp %d ranks needs the heads (%d) and KV heads (%d) per GPU (at %s) divisible by %d",
				       o->cp, m->heads, m->kv_heads > 0 ? m->kv_heads : m->heads, at, o->cp);
		if (tp > last)
			return err_set(e, "--cp-comm-type a2a+p2p: no all-to-all size between 2 and --cp %d divides it and splits the heads (%d) and KV heads (%d) per GPU (at %s)",
				       o->cp, m->heads, m->kv_heads > 0 ? m->kv_heads : m->heads, at);
	}
	return 0;
}

/* The pipeline's choices: virtual stages, vocabulary parallelism and
 * slices need pp > 1, vp goes with the schedule, DualPipe with an even
 * pp; --exhaustive only on small cases. Returns 0, or -1 with e set. */
static int check_pipeline(const struct model *m, const struct cluster *c,
			  const struct plan_opts *o, struct err *e)
{
	if (o->pp == 1 && ((o->schedule >= 0 && schedule_virtual((enum schedule)o->schedule)) ||
			   o->vp > 1))
		return err_set(e, "--pp 1 has no pipeline to interleave: --schedule %s and --vp need --pp > 1",
			       o->schedule >= 0 ? schedule_name((enum schedule)o->schedule) : "interleaved");
	if (o->pp == 1 && (o->vocab_par == 1 || o->slices > 1))
		return err_set(e, "--pp 1 has no pipeline: %s need%s --pp > 1",
			       o->vocab_par == 1 && o->slices > 1 ? "--vocab-parallel on and --slices" : o->vocab_par == 1 ? "--vocab-parallel on"
															   : "--slices",
			       o->vocab_par == 1 && o->slices > 1 ? "" : "s");
	if (o->vp && o->schedule >= 0 && !schedule_vp_ok((enum schedule)o->schedule, o->vp))
		return err_set(e, "--vp %d does not go with --schedule %s%s", o->vp,
			       schedule_name((enum schedule)o->schedule),
			       schedule_v((enum schedule)o->schedule) ? " (it runs 2 stages per rank)" : "");
	if (o->schedule >= 0 && schedule_bidirectional((enum schedule)o->schedule) && o->pp &&
	    o->pp % 2)
		return err_set(e, "--schedule dualpipe needs an even --pp (its two directions meet in the middle), not %d",
			       o->pp);
	if (o->exhaustive && (m->n_layer > 16 || c->total_gpus > 64))
		return err_set(e, "--exhaustive is for at most 14 blocks and 64 GPUs (it tries every partition and placement)");
	return 0;
}

/* The kernels, precision and overlaps: FP8 on GPUs that have it, sequence
 * parallelism and TP overlap with tp > 1, the MoE options on an MoE model
 * and in range, a known attention kernel, 2 or 4 bytes of gradients.
 * Returns 0, or -1 with e set. */
static int check_kernels(const struct model *m, const struct cluster *c,
			 const struct plan_opts *o, struct err *e)
{
	/* --fp8 on: FP8 on every GPU, or, where the trainer sets precision per
	 * layer (FEATURE_FP8_PER_LAYER), on the stages of the GPUs that have
	 * it, as the search runs it (cluster_bf16_blocks) */
	if (o->fp8 == 1) {
		int some = -1, none = -1;

		for (int g = 0; g < c->n_group; g++)
			if (cluster_group_fp8(c, g))
				some = g;
			else if (none < 0)
				none = g;
		if (none >= 0 && (some < 0 || !trainer_allows(o->trainer, FEATURE_FP8_PER_LAYER, NULL)))
			return err_set(e, "--fp8 on, but GPU type '%s' (group '%s') has no FP8 peak (peak_fp8_tflops)%s",
				       c->gpu[c->group[none].gpu].name, c->group[none].name,
				       some < 0 ? "" : ", and only Megatron-LM runs FP8 on some stages and BF16 on the others");
	}
	if (o->sp == 1 && o->tp == 1)
		return err_set(e, "--sequence-parallel on needs --tp > 1");
	if (o->tp_overlap == 1 && o->sp == 0)
		return err_set(e, "--tp-comm-overlap on needs sequence parallelism, not --sequence-parallel off");
	if (!m->experts && (o->moe_capacity > 0 || o->moe_balance != MOE_BALANCE_MICRO_BATCH))
		return err_set(e, "--moe-%s applies to MoE models, and the model has no experts",
			       o->moe_capacity > 0 ? "capacity" : "balance");
	if (o->moe_balance < 0 || o->moe_balance >= MOE_BALANCE_COUNT ||
	    !(o->moe_capacity == 0 || (o->moe_capacity >= 1 && o->moe_capacity <= 100)))
		return err_set(e, "MoE balance %d or capacity %g out of range", o->moe_balance,
			       o->moe_capacity);
	if (o->attn < 0 || o->attn >= ATTN_COUNT)
		return err_set(e, "attention kernel %d is not one of the %d known", o->attn, ATTN_COUNT);
	if (o->grad_bytes != 0 && o->grad_bytes != 2 && o->grad_bytes != 4)
		return err_set(e, "gradients take 2 or 4 bytes, not %d", o->grad_bytes);
	if (o->recompute_modules && o->recompute >= 0 && o->recompute != RECOMPUTE_SELECTIVE)
		return err_set(e, "--recompute-modules needs --recompute selective (not %s)",
			       recompute_name((enum recompute)o->recompute));
	if (o->offload_modules && o->recompute != RECOMPUTE_NONE && o->recompute != RECOMPUTE_SELECTIVE)
		return err_set(e, "--offload-modules needs --recompute none or selective (%s)",
			       o->recompute < 0 ? "the search would try full recomputation, which keeps only each block's input"
						: "full recomputation keeps only each block's input");
	if (o->offload_modules & ~((1 << OM_COUNT) - 1))
		return err_set(e, "offload modules %#x out of range", (unsigned)o->offload_modules);
	if ((o->offload_modules & (OM_EXPERT_FC1 | OM_MOE_ACT)) && !m->experts)
		return err_set(e, "--offload-modules expert_fc1 and moe_act need an MoE model (the profile has no experts)");
	if (o->moe_dispatcher < 0 || o->moe_dispatcher >= MOE_DISPATCH_COUNT)
		return err_set(e, "MoE dispatcher %d out of range", o->moe_dispatcher);
	if (!m->experts && o->moe_dispatcher != MOE_DISPATCH_ALLTOALL)
		return err_set(e, "--moe-dispatcher needs an MoE model (the profile has no experts)");
	if (o->moe_pad == 1 && !(m->experts && o->moe_capacity >= 1))
		return err_set(e, "--moe-pad-capacity on needs an MoE model and --moe-capacity");
	if (!m->experts && o->grouped_gemm == 1)
		return err_set(e, "--moe-grouped-gemm on needs an MoE model (the profile has no experts)");
	if (!m->experts && o->ep_overlap == 1)
		return err_set(e, "--ep-overlap on needs an MoE model (the profile has no experts)");
	if (o->moment_bytes != 0 && o->moment_bytes != 2 && o->moment_bytes != 4)
		return err_set(e, "Adam moments take 2 or 4 bytes, not %d", o->moment_bytes);
	if (o->wgrad_limit < 0)
		return err_set(e, "--wgrad-deferral-limit takes 0 or more micro-batches, not %d", o->wgrad_limit);
	if (o->wgrad_limit > 0 && o->defer_wgrad != 1)
		return err_set(e, "--wgrad-deferral-limit needs --defer-embedding-wgrad on");
	if (o->defer_wgrad == 1 && o->pp == 1)
		return err_set(e, "--defer-embedding-wgrad on needs a pipeline (--pp 1 given): Megatron defers to the pipeline flush");
	return 0;
}

/* --layout (the what-if mode, not with --exhaustive) and --objective cost
 * (a price on every group). Returns 0, or -1 with e set. */
static int check_layout_objective(const struct cluster *c, const struct plan_opts *o,
				  struct err *e)
{
	if (o->layout && !plan_opts_what_if(o))
		return err_set(e, "--layout needs the what-if mode (all of --tp --pp --dp --cp --mbs)");
	if (o->layout && o->exhaustive)
		return err_set(e, "--layout fixes the partition that --exhaustive searches");
	for (int g = 0; o->objective == PLAN_COST && g < c->n_group; g++)
		if (c->group[g].price_gpu_hour <= 0)
			return err_set(e, "--objective cost needs a price per GPU-hour on every node group, but group '%s' has none (its 'price_per_gpu_hour')",
				       c->group[g].name);
	return 0;
}

int plan_opts_check(const struct model *m, const struct cluster *c,
		    const struct plan_opts *o, struct err *e)
{
	if (check_degrees(m, c, o, e) || check_cp_comm(m, o, e) || check_pipeline(m, c, o, e) ||
	    check_kernels(m, c, o, e) || check_layout_objective(c, o, e))
		return -1;
	return 0;
}
