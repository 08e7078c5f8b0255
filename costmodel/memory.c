/* memory.c: bytes per GPU of a layer: model states under ZeRO and the
 * activations kept for the backward pass under TP/SP/CP and recomputation. */
#include "memory.h"

#include <stdbool.h>

#include "model.h"
#include "strategy.h"

void memory_params(const struct layer *ly, const struct strategy *s,
		   double *dense, double *expert)
{
	*dense = (ly->params - ly->expert_params) / s->tp;
	*expert = ly->expert_params / ((double)s->ep * s->tp);
}

/* Model states per GPU (Rajbhandari et al. 2020 Sec. 5, Fig. 1; Megatron
 * theoretical_memory_usage.py), per parameter:
 *   zero 0: 2 + 4 + 12 = 18
 *   zero 1: 2 + 4 + 12/n      (distributed optimizer: 6 + 12/n)
 *   zero 2: 2 + (4 + 12)/n    (2 + 16/n)
 *   zero 3: (2 + 4 + 12)/n    (18/n)
 * n = dp*cp for dense parameters (the DP x CP group Megatron shards the
 * optimizer over), dp*cp/ep for expert parameters (expert-data-parallel).
 * Dense parameters split by t, experts by e*t (memory_params). */
static void states(struct layer_mem *lm, const struct layer *ly,
		   const struct strategy *s)
{
	double D, E, n = (double)s->dp * s->cp, n_e;

	memory_params(ly, s, &D, &E);
	n_e = s->ep > 0 ? n / s->ep : n;
	if (n_e < 1)
		n_e = 1;
	lm->weights = MEM_WEIGHT_BYTES * (s->zero >= 3 ? D / n + E / n_e : D + E);
	lm->grads = MEM_GRAD_BYTES * (s->zero >= 2 ? D / n + E / n_e : D + E);
	lm->optimizer = MEM_OPT_BYTES * (s->zero >= 1 ? D / n + E / n_e : D + E);
}

/* Activations per micro-batch per GPU (Korthikanti et al. 2022 Sec. 4,
 * Table 2), from the layer's act_bytes_per_token A (sequence-parallel form,
 * attention scores not stored: 34h for GPT, (18 + 4f/h)h in Megatron):
 * - block, SP (or t = 1): A * b*s / (t*c)            (Table 2, "TP + SP")
 * - block, t > 1 without SP: the 10*s*b*h of LayerNorm and dropout inputs
 *   stay replicated: ((A - 10h)/t + 10h) * b*s/c      (Table 2, "TP": 10 + 24/t),
 *   10h taken as 5*dtype*h bytes per token (10h at 2 bytes);
 * - block, recompute none: plus the attention scores, softmax and dropout,
 *   5*a*s per token: 5*a*s * b*s/(t*c) bytes (Table 2, 5as/h * sbh, split by
 *   t across heads; the unfused attention of the paper, so that selective
 *   recomputation saves this memory at the cost of the attention core);
 * - block, recompute selective: A only (Sec. 4.2.2: the score term dropped);
 * - block, recompute full: only the block input, 2*s*b*h: dtype*h * b*s/(t*c)
 *   with SP, /c without (Sec. 4.1). The one layer being recomputed during
 *   the backward pass is transient and falls under the allowance;
 * - embedding and head: A * b*s/(t*c) with SP, A * b*s/c without (their
 *   inputs are replicated across TP); never recomputed.
 * Extra (transient, once per stage): the head's fp32 logits for the loss,
 * b*s*V*4/(t*c) (vocab-parallel cross-entropy). */
void memory_layer(struct layer_mem *lm, const struct model *m, int l,
		  const struct strategy *s)
{
	const struct layer *ly = &m->layer[l];
	int dt = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
	double tokens = (double)s->mbs * s->seq / s->cp;
	double A = ly->act_bytes_per_token;
	bool split = s->sp || s->tp <= 1;

	states(lm, ly, s);
	lm->extra = 0;
	if (ly->kind != LAYER_BLOCK) {
		lm->act = A * tokens / (split ? s->tp : 1);
		if (ly->kind == LAYER_HEAD)
			lm->extra = tokens * m->vocab * 4.0 / s->tp;
		return;
	}
	if (s->recompute == RECOMPUTE_FULL) {
		lm->act = dt * (double)m->hidden * tokens / (split ? s->tp : 1);
		return;
	}
	if (split) {
		lm->act = A * tokens / s->tp;
	} else {
		double rep = 5.0 * dt * m->hidden;

		lm->act = ((A - rep) / s->tp + rep) * tokens;
	}
	if (s->recompute == RECOMPUTE_NONE)
		lm->act += 5.0 * m->heads * (double)s->seq * tokens / s->tp;
}
