/* schedule.h: the pipeline schedules, one row of facts each (schedule.c's
 * table, as Lua's lopcodes.c holds its opcodes'): name, virtual stages,
 * micro-batches needed, the weights of T_pipe = a * max_k c_k + b * sum_k
 * c_k, the activations in flight and the order of passes. */
#ifndef AMPPLAN_SCHEDULE_H
#define AMPPLAN_SCHEDULE_H

#include <stdbool.h>

/* Interleaved 1F1B, interleaved zero bubble, ZB-V and DualPipeV run vp > 1
 * virtual stages per rank (schedule_virtual); ZB-V and DualPipeV exactly
 * 2, in a V (schedule_v, strategy_rank). DualPipe (DeepSeek-V3) runs two
 * copies of the model in opposite directions: one stage of each per rank,
 * vp 1 (stage k of one copy and stage pp - 1 - k of the other on rank k;
 * schedule_bidirectional, cost.c). */
enum schedule {
	SCHED_1F1B,
	SCHED_INTERLEAVED,
	SCHED_ZB_H1,
	SCHED_GPIPE,
	SCHED_INTERLEAVED_ZB,
	SCHED_ZB_V,
	SCHED_ZB_H2,
	SCHED_DUALPIPE_V,
	SCHED_DUALPIPE,
	SCHED_COUNT
};

/* Virtual stages per pipeline rank: one (vp must be 1), looped (vp >= 2,
 * stage k on rank k % pp: Megatron's interleaved order), or two in a V
 * (exactly 2: stages r and 2 pp - 1 - r on rank r). */
enum sched_stages { SCHED_STAGES_ONE,
		    SCHED_STAGES_LOOPED,
		    SCHED_STAGES_V };

/* The bubble's share x of a stage (chunk) time in the weights
 * (schedule_weights): a whole stage (x = 1: GPipe, 1F1B, interleaved), or
 * with the backward split in B and W (zero bubble) rho, the forward and
 * recomputation share (cost.h's zb_rho), or for ZB-H2 the forward alone
 * (cost.h's zb_h2_rho). */
enum sched_bubble { SCHED_BUBBLE_STAGE,
		    SCHED_BUBBLE_FR,
		    SCHED_BUBBLE_F };

/* The rule of the activations in flight (schedule_inflight): all m
 * micro-batches (GPipe), 1F1B's pp - r, the looped warm-up (interleaved),
 * the V's two legs (ZB-V; DualPipeV with one more on the first leg), 2 pp
 * - 1 on every rank (ZB-H2), and (pp + 1) / 2 on each of the two copies'
 * stages (DualPipe). */
enum sched_hold {
	SCHED_HOLD_ALL,
	SCHED_HOLD_1F1B,
	SCHED_HOLD_LOOPED,
	SCHED_HOLD_V,
	SCHED_HOLD_V1,
	SCHED_HOLD_H2,
	SCHED_HOLD_COPIES
};

/* The order of passes the simulator runs (simulate.h): GPipe's, 1F1B's
 * (ZB-H1 with its W passes), Megatron's looped interleaving (interleaved
 * zero bubble with W passes), the V's list schedule (ZB-V, DualPipeV),
 * ZB-H2's list schedule, or none (DualPipe: its two copies do not fit the
 * simulator's one chain of stages). */
enum sched_order {
	SCHED_ORDER_GPIPE,
	SCHED_ORDER_1F1B,
	SCHED_ORDER_LOOPED,
	SCHED_ORDER_V,
	SCHED_ORDER_H2,
	SCHED_ORDER_NONE
};

/* One schedule's facts; schedule.c's comments give each its source. */
struct schedule_row {
	const char *name;	  /* as printed and parsed */
	enum sched_stages stages; /* virtual stages per rank */
	int min_m;		  /* micro-batches needed: at least
					   min_m x pp (0: any) */
	int copies;		  /* model copies fed from opposite
					   ends (2: DualPipe, which needs an
					   even pp and m), else 1 */
	enum sched_bubble bubble; /* not SCHED_BUBBLE_STAGE: zero
					   bubble, the backward split in B
					   and W */
	enum sched_hold hold;	  /* activations in flight */
	bool fb_overlap;	  /* forward and backward of two
					   micro-batches run in pairs, each
					   hiding the other's communication */
	enum sched_order order;	  /* the simulator's order of passes */
};

/* The rows, indexed by enum schedule. */
extern const struct schedule_row schedule_rows[SCHED_COUNT];

/* Short names as printed and parsed: "1f1b", "interleaved", "zb-h1",
 * "gpipe", "interleaved-zb", "zb-v", "zb-h2", "dualpipev", "dualpipe". */
const char *schedule_name(enum schedule sc);
/* Returns the enum value, or -1 for an unknown name. */
int schedule_parse(const char *name);

/* Whether schedule sc runs several virtual stages per pipeline rank. */
static inline bool schedule_virtual(enum schedule sc)
{
	return schedule_rows[sc].stages != SCHED_STAGES_ONE;
}

/* Whether schedule sc places its two chunks per rank in a V (ZB-V,
 * DualPipeV): stages r and 2 pp - 1 - r on rank r. */
static inline bool schedule_v(enum schedule sc)
{
	return schedule_rows[sc].stages == SCHED_STAGES_V;
}

/* Whether vp virtual stages per rank go with schedule sc: 1 without
 * virtual stages, >= 2 with, exactly 2 in a V. */
static inline bool schedule_vp_ok(enum schedule sc, int vp)
{
	return schedule_virtual(sc) == (vp > 1) && !(schedule_v(sc) && vp != 2);
}

/* Whether schedule sc splits the backward into B (input gradients) and W
 * (weight gradients) passes (Qi et al. 2024): ZB-H1, interleaved zero
 * bubble, ZB-V, ZB-H2, DualPipeV and DualPipe. */
static inline bool schedule_zero_bubble(enum schedule sc)
{
	return schedule_rows[sc].bubble != SCHED_BUBBLE_STAGE;
}

/* Whether schedule sc overlaps the forward of one micro-batch with the
 * backward of another, so that each hides the other's communication
 * (DualPipe and DualPipeV; DeepSeek-V3 technical report Sec. 3.2.1). */
static inline bool schedule_fb_overlap(enum schedule sc)
{
	return schedule_rows[sc].fb_overlap;
}

/* Whether schedule sc runs two copies of the model fed from opposite ends
 * (DualPipe): rank r holds stage r of one and stage pp - 1 - r of the
 * other, each copy runs half the micro-batches. */
static inline bool schedule_bidirectional(enum schedule sc)
{
	return schedule_rows[sc].copies == 2;
}

/* The fewest micro-batches schedule sc runs on pp ranks: pp for the
 * virtual-stage schedules (Megatron's interleaving) and for ZB-H1 and
 * ZB-H2 (Qi et al. 2024 assume it), 2 pp for DualPipe and DualPipeV (the
 * DualPipe repository's num_chunks >= num_ranks * 2), else 1. */
static inline int schedule_min_micro_batches(enum schedule sc, int pp)
{
	int n = schedule_rows[sc].min_m * pp;

	return n > 1 ? n : 1;
}

/* Whether schedule sc runs on pp ranks with vp virtual stages each and m
 * micro-batches: schedule_vp_ok, m >= schedule_min_micro_batches, a
 * pipeline (pp > 1) for virtual stages and for DualPipe(V), and an even pp
 * and m for DualPipe's two copies. */
static inline bool schedule_allows(enum schedule sc, int pp, int vp, int m)
{
	if (!schedule_vp_ok(sc, vp) || m < schedule_min_micro_batches(sc, pp))
		return false;
	if (pp == 1 && (schedule_virtual(sc) || schedule_fb_overlap(sc)))
		return false;
	return !schedule_bidirectional(sc) || (pp % 2 == 0 && m % 2 == 0);
}

/* The weights a, b over the virtual stages' c_k for schedule sc with m
 * micro-batches, v virtual stages per rank (schedule_virtual only) and rho
 * = the share of a stage's time that is forward (+ recomputation), used by
 * the zero-bubble schedules. For virtual stages an upper estimate (the
 * partition DP's objective). */
void schedule_weights(enum schedule sc, int m, int v, double rho, double *a,
		      double *b);

/* The weights over the ranks' totals C_r (T = a max_r C_r + b sum_r C_r;
 * cost_evaluate's time): the same as schedule_weights without virtual
 * stages. */
void schedule_rank_weights(enum schedule sc, int m, int v, double rho, double *a,
			   double *b);

/* Micro-batches of activations held by virtual stage k (0-based; for
 * k < pp, the first stage of pipeline rank k) of pp ranks with v virtual
 * stages per rank at the rank's peak: for interleaved per chunk as
 * Megatron's order leaves them when the rank first holds its warm-up
 * plus one (chunk 0 of rank 0 the most, 2 pp - 1 with v >= 2 and m >= 2
 * pp; schedule.c looped_held); fractional for DualPipe's two copies. */
double schedule_inflight(enum schedule sc, int pp, int v, int m, int k);

/* The share, 0 to 1, of a rank's forward and backward passes that run in
 * forward-backward pairs hiding each other's communication (DualPipe,
 * DualPipeV; 0 for the others), for pp ranks and m micro-batches. */
double schedule_fb_paired(enum schedule sc, int pp, int m);

/* The share, 0 to 1, of a rank's forward and backward passes that
 * Megatron-Core's EP all-to-all overlap (strategy.ep_overlap) runs paired
 * under 1F1B (pp = 1 included) and interleaved 1F1B: every forward after
 * the warm-up is merged with a backward of an earlier micro-batch (its
 * combined 1F1B schedule, each one's dispatch and combine under the
 * other's compute). Rank 0's warm-up forwards run alone, and as many
 * backwards of the cool-down: schedule_inflight's count for it in chunk
 * passes, min(pp, m) (1F1B) or 2 (pp - 1) + (v - 1) pp + 1 (interleaved),
 * of its m v forwards: max(0, 1 - held / (m v)); 0 for the other
 * schedules (DualPipe's pairing is schedule_fb_paired's). */
double schedule_ep_paired(enum schedule sc, int pp, int v, int m);

/* a * max_k c[k] + b * sum_k c[k] over n stages. */
double schedule_time(double a, double b, const double *c, int n);

#endif
