/* simulate.h: one iteration of a pipeline schedule simulated op by op
 * (each forward, backward and weight-gradient pass of each micro-batch on
 * each pipeline rank), against which the closed forms of schedule.h are
 * checked; --timeline draws it (timeline.h). */
#ifndef AMPPLAN_SIMULATE_H
#define AMPPLAN_SIMULATE_H

#include "strategy.h"

struct err;
struct cost_stage;
struct cost_rank;

/* Most passes a simulation runs (and --timeline draws). */
#define SIM_MAX_OPS 2000000

/* What the simulation needs: the schedule, pp ranks with vp virtual stages
 * each (virtual stage k on rank strategy_rank's: k % pp, Megatron's order,
 * or with ZB-V k for k < pp and 2 pp - 1 - k after), m micro-batches, per
 * virtual stage k the seconds per micro-batch of its passes, and per rank
 * the tail after its last pass. Plain value type (large: allocate it). */
struct sim_in {
	enum schedule schedule; /* interleaved and interleaved-zb need
				   vp >= 2 and m >= pp, zb-v and dualpipev
				   vp = 2, dualpipev m >= 2 pp, zb-h2
				   m >= pp, the others vp = 1; dualpipe is
				   refused */
	int pp, vp, m;
	double fwd[MAX_STAGES];	 /* forward pass */
	double bwd[MAX_STAGES];	 /* backward pass; with the zero-bubble
				   schedules (schedule_zero_bubble) only its
				   input-gradient part B */
	double wgt[MAX_STAGES];	 /* zero bubble: the weight-gradient part W
				   (Qi et al. 2024); ignored otherwise */
	double send[MAX_STAGES]; /* p2p into stage k from stage k - 1,
					   forward and backward together (half
					   each way); send[0] unused, and
					   ignored between two stages of one
					   rank (ZB-V's turn) */
	double dp[MAX_STAGES];	 /* rank r: exposed DP gradient reduction
				   (and ZeRO parameter gather) after its
				   last pass, s */
	double opt[MAX_STAGES];	 /* rank r: optimizer step after that, s */
};

enum sim_kind { SIM_F,
		SIM_B,
		SIM_W };

/* One pass as simulated: on `rank`, of its chunk (its chunk-th virtual
 * stage, strategy_stage's: chunk * pp + rank, or with ZB-V chunk 1 the V's
 * second leg, stage 2 pp - 1 - rank), for micro-batch mb (0-based). The
 * rank was free from `free` (its previous pass ended); its input left the
 * neighbour stage at `sent` (when it came over p2p; else sent = start) and
 * the pass ran over [start, end). */
struct sim_op {
	int rank, chunk, mb;
	enum sim_kind kind;
	double free, sent, start, end;
};

/* The simulated iteration. op holds each rank's passes in the order the
 * rank runs them: rank r's are op[first[r] .. first[r+1]). Owned by the
 * struct: sim_free. */
struct sim_result {
	int n_op;
	struct sim_op *op;
	int first[MAX_STAGES + 1];
	double pipe_end[MAX_STAGES]; /* end of rank r's last pass, s */
	double makespan;	     /* max over ranks of pipe_end + dp + opt */
};

/* Simulates in: builds each rank's order of passes as the schedule runs
 * them (its row's order, schedule.h: GPipe as torch.distributed.pipelining's
 * ScheduleGPipe: all forwards, then all backwards in micro-batch order;
 * 1F1B as Megatron-LM's PipeDream-Flush: pp - r - 1 warm-up forwards on
 * rank r, then one forward and one backward, then the cool-down backwards;
 * interleaved as Megatron-LM's forward_backward_pipelining_with_interleaving:
 * warm-up 2 (pp - r - 1) + (vp - 1) pp forward steps, micro-batches taken
 * in groups of pp per chunk (its get_schedule_table; m not a multiple of
 * pp: the order of the next multiple, less the missing micro-batches);
 * ZB-H1 as Qi et al. 2024 Fig. 3: 1F1B with each W after its B, rank r
 * holding back r of its W passes to the end; interleaved zero bubble:
 * interleaved's order with ZB-H1's W rule; ZB-V (Qi et al. Sec. 5) and
 * DualPipeV: a list schedule in unit time, B first, then F while the rank
 * holds fewer chunk activations than schedule_inflight gives it, then W;
 * ZB-H2: a list schedule as ZB-V's on one stage per rank), then runs them:
 * a pass starts when its rank is free and its input has arrived (a
 * forward: the previous stage's forward of the micro-batch plus half that
 * boundary's send; a backward: the next stage's backward plus half its
 * send, or on the last stage its own forward; a W: its B; no send between
 * two stages of one rank). p2p transfers overlap compute (asynchronous
 * sends). Returns 0 with *out filled (free with sim_free), or -1 with e set
 * when the input is out of range (pp, vp, m, a negative time), the
 * schedule has no order (DualPipe) or there are more than SIM_MAX_OPS
 * passes. */
int sim_run(struct sim_result *out, const struct sim_in *in, struct err *e);

/* Frees sim's ops and zeroes it; NULL-safe. */
void sim_free(struct sim_result *sim);

/* The virtual stage of rank r's chunk c: strategy_stage on in's schedule
 * and pp (ZB-V's V or Megatron's looped order). */
int sim_stage(const struct sim_in *in, int r, int c);

/* Fills in for strategy s from the cost model: per virtual stage k < n the
 * pass times of st[k] (cost_stages), the backward split into B and W for
 * the zero-bubble schedules, and per rank the tails of rk[r] (cost_ranks:
 * pp entries). */
void sim_input(struct sim_in *in, const struct strategy *s, const struct cost_stage *st, int n,
	       const struct cost_rank *rk);

#endif
