/* moe.h: the load of the busiest expert-parallel rank of an MoE layer, as
 * a factor of the mean: routing imbalance, the load-balancing loss's scope
 * and the capacity factor. */
#ifndef AMPPLAN_MOE_H
#define AMPPLAN_MOE_H

struct model;
struct strategy;

/* The spread of one sequence's routing over the EP ranks under
 * global-batch balancing: the coefficient of variation of the share of a
 * sequence's tokens a rank receives (1/ep on average). Balanced over the
 * global batch, experts specialise by domain and a micro-batch of few
 * sequences routes unevenly (Qiu et al. 2025, "Demons in the Detail",
 * Sec. 3-4, which shows the effect but gives no per-rank figure): an
 * assumption, not calibrated on any measurement here. Under micro-batch
 * balancing the loss evens out each micro-batch: 0. */
#define MOE_SEQ_SKEW 0.5

/* E[max] of n independent standard normal deviates, by Blom's (1958)
 * approximation Phi^-1((n - 0.375) / (n + 0.25)) (within 5% of the exact
 * value from n = 2, 1.2% from n = 8); 0 for n <= 1. */
double moe_expected_max(int n);

/* The busiest EP rank's routed-expert load over the mean, per micro-batch
 * of an MoE layer under s (ep, etp, tp, mbs, seq, cp, moe_balance,
 * moe_capacity):
 *   lambda = 1 + E[max of ep] x sqrt((1 - 1/ep) / mu + c^2 / n_seq),
 * mu = mbs x seq / cp x etp / tp x top_k token assignments an expert
 * group (ETP GPUs) receives on average (their multinomial spread; each
 * GPU holds seq / (cp tp) tokens of the micro-batch under SP, and the ETP
 * group gathers its members'), n_seq = mbs x max(1, ep etp / (tp cp))
 * sequences the EP group routes in one micro-batch (its ep members sit
 * etp apart: inside one TP x CP group they share the micro-batch), c =
 * MOE_SEQ_SKEW under global-batch balancing, else 0; with a capacity
 * factor C >= 1 at most C (the tokens over it are dropped: Lepikhin et
 * al. 2021, GShard Sec. 2.2), and exactly C with s->moe_pad (every expert
 * padded to its capacity: Megatron's moe_pad_expert_input_to_capacity,
 * GShard's fixed expert buffers). 1 for a dense model or ep = 1 (one rank
 * holds every expert) without padding. */
double moe_load_factor(const struct model *m, const struct strategy *s);

#endif
