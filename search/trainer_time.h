/* trainer_time.h: the time each trainer runs a strategy in: the strategy
 * with the trainer's own features (overlaps, gradient accumulation,
 * kernels, FSDP), costed by the one cost function. */
#ifndef AMPPLAN_TRAINER_TIME_H
#define AMPPLAN_TRAINER_TIME_H

#include <stdbool.h>
#include <stddef.h>

struct model;
struct cluster;
struct strategy;
struct plan;
struct plan_opts;
struct plan_row;
struct err;

/* Two times within this fraction of each other are the same time: the
 * table lists a trainer on a row when its trainer_s is within
 * TRAINER_TIME_TOL of the row's iteration time, above or below (a trainer
 * faster than a row ranked by another's time is not listed either). */
#define TRAINER_TIME_TOL 1e-3

/* Sets on s (tp, sp, zero and fp8 set) the features trainer t (an enum
 * trainer, or -1 for none, read as Megatron-LM) runs it with, where o
 * leaves them unset (-1): the overlaps and gradient accumulation fusion
 * (trainer_allows), FSDP for torchtitan at ZeRO >= 1, the gradients' dtype
 * (o->grad_bytes 0: 2 bytes for DeepSpeed, and for an fp16 model m but
 * with torchtitan, which reduces in float32; else 4), DeepSpeed's pipeline
 * sends split over TP (strategy.p2p_split)
 * and the kernels (fused: torchtitan with torch.compile, the option the
 * search takes as it takes the overlaps). With o->trainer_defaults the
 * unset features take the trainer's bare CLI defaults instead: no
 * overlaps but FSDP2's own prefetch and DeepSpeed ZeRO-3's overlap_comm,
 * and torchtitan's eager kernels (no torch.compile). */
void trainer_features(int t, struct strategy *s, const struct model *m,
		      const struct plan_opts *o);

/* The features trainer_features sets, as bits (trainer_feature_bits),
 * each set when the feature is on. */
enum trainer_feature_bit {
	TF_TP_OVERLAP = 1u << 0,
	TF_GRAD_OVERLAP = 1u << 1,
	TF_PARAM_OVERLAP = 1u << 2,
	TF_GRAD_ACC_FUSION = 1u << 3,
	TF_FSDP = 1u << 4,
	TF_FUSED_NORM = 1u << 5,
	TF_FUSED_POINTWISE = 1u << 6,
	TF_GRAD_FP32 = 1u << 7,
	TF_P2P_SPLIT = 1u << 8,
};

/* The enum trainer_feature_bit bits of s. */
unsigned trainer_feature_bits(const struct strategy *s);

/* Writes into buf (n bytes, truncated) what a trainer whose features are
 * feat (trainer_feature_bits of its strategy) runs otherwise than
 * strategy s, as comma-separated phrases ("no TP comm overlap, gradient
 * accumulation in a pass of its own"), or "" where nothing differs.
 * Returns buf. */
const char *trainer_feature_diff(char *buf, size_t n, const struct strategy *s, unsigned feat);

/* Fills row->trainer_s (plan.h) for a row that fits: for each trainer
 * whose rules pass (trainer_check), the iteration time of row->s with that
 * trainer's features (trainer_features), 0 where it does not fit in memory
 * that way or the trainer refuses it, with row->trainer_feat its
 * features (trainer_feature_bits); and row->trainers, the mask of the
 * trainers whose time is the row's (TRAINER_TIME_TOL). A row that does not
 * fit gets trainer_mask's bits and no times. Returns 0, or -1 with e set
 * where a measured profile is unusable. */
int trainer_times(struct plan_row *row, const struct model *m, const struct cluster *c,
		  const struct plan_opts *o, struct err *e);

/* trainer_times on every row of p; then a row that fits that no trainer
 * runs with the row's own features but some trainer runs (a
 * Megatron-costed row only torchtitan launches, even at a time within
 * TRAINER_TIME_TOL of the row's) becomes the fastest such trainer's: its
 * strategy and result replaced by that trainer's, placed and partitioned
 * again for it, so that every row is a trainer's run as it is. Returns 1
 * when a row changed (the caller sorts again), 0 when none did, -1 with e
 * set on error. */
int trainer_rows(struct plan *p, const struct model *m, const struct cluster *c,
		 const struct plan_opts *o, struct err *e);

#endif
