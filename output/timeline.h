/* timeline.h: --timeline: one iteration of a pipeline schedule simulated op
 * by op (each forward, backward and weight-gradient pass of each
 * micro-batch on each pipeline rank) and drawn as an SVG picture. */
#ifndef AMPPLAN_TIMELINE_H
#define AMPPLAN_TIMELINE_H

#include <stddef.h>

#include "strategy.h"

struct err;
struct model;
struct cluster;
struct plan_row;
struct outfile_set;

/* Most blocks (micro-batch passes) a timeline simulates and draws. */
#define TIMELINE_MAX_OPS 2000000

/* The picture's colours ("#rrggbb"), also checked by the tests on the
 * rendered image. A pass of an odd virtual stage (chunk) of a rank takes the
 * light variant. Idle time (the bubble) is the row's background. */
#define TIMELINE_COLOR_F "#4e79a7"
#define TIMELINE_COLOR_F2 "#a0cbe8"
#define TIMELINE_COLOR_B "#f28e2b"
#define TIMELINE_COLOR_B2 "#ffbe7d"
#define TIMELINE_COLOR_W "#59a14f"
#define TIMELINE_COLOR_W2 "#8cd17d"
#define TIMELINE_COLOR_P2P "#79706e"	/* waiting for a p2p transfer */
#define TIMELINE_COLOR_DP "#e15759"	/* exposed DP reduction / gather */
#define TIMELINE_COLOR_OPT "#b07aa1"	/* optimizer step */
#define TIMELINE_COLOR_IDLE "#eeeeee"	/* a rank's row: idle (bubble) */
#define TIMELINE_COLOR_PAGE "#ffffff"

/* One pipeline rank of the picture. */
struct timeline_rank {
	char label[96];		/* first line: "rank 0: A100-SXM4-40GB" */
	char detail[160];	/* second line: node group and layers */
	double dp_s;		/* exposed DP gradient reduction (and ZeRO
				   parameter gather) after its last pass, s */
	double opt_s;		/* optimizer step after that, s */
	double peak_bytes;	/* peak memory per GPU, bytes */
	double cap_bytes;	/* the GPU's memory, bytes */
};

/* What the simulation needs: the schedule, pp ranks with vp virtual stages
 * each (virtual stage k on rank strategy_rank's: k % pp, Megatron's order,
 * or with ZB-V k for k < pp and 2 pp - 1 - k after), m micro-batches, and
 * per virtual stage k the seconds per micro-batch of its passes. Plain
 * value type (large: allocate it). */
struct timeline_in {
	enum schedule schedule;	/* interleaved and interleaved-zb need
				   vp >= 2 and m >= pp, zb-v vp = 2, zb-h2
				   m >= pp, the others vp = 1 */
	int pp, vp, m;
	double fwd[MAX_STAGES];	/* forward pass */
	double bwd[MAX_STAGES];	/* backward pass; with the zero-bubble
				   schedules (zb-h1, interleaved-zb, zb-v,
				   zb-h2) only its input-gradient part B */
	double wgt[MAX_STAGES];	/* zero bubble: the weight-gradient part W
				   (Qi et al. 2024); ignored otherwise */
	double send[MAX_STAGES];	/* p2p into stage k from stage k - 1,
					   forward and backward together (half
					   each way); send[0] unused, and
					   ignored between two stages of one
					   rank (ZB-V's turn) */
	struct timeline_rank rank[MAX_STAGES];
	char title[256];	/* first line of the title */
	char subtitle[256];	/* second line */
};

enum timeline_kind { TIMELINE_F, TIMELINE_B, TIMELINE_W };

/* One pass as simulated: on `rank`, of its chunk (its chunk-th virtual
 * stage, strategy_stage's: chunk * pp + rank, or with ZB-V chunk 1 the V's
 * second leg, stage 2 pp - 1 - rank), for micro-batch mb (0-based). The rank was free from
 * `free` (its previous pass ended); its input left the neighbour stage at
 * `sent` (when it came over p2p; else sent = start) and the pass ran over
 * [start, end). */
struct timeline_op {
	int rank, chunk, mb;
	enum timeline_kind kind;
	double free, sent, start, end;
};

/* The simulated iteration. op holds each rank's passes in the order the
 * rank runs them: rank r's are op[first[r] .. first[r+1]). Owned by the
 * struct: timeline_sim_free. */
struct timeline_sim {
	int n_op;
	struct timeline_op *op;
	int first[MAX_STAGES + 1];
	double pipe_end[MAX_STAGES];	/* end of rank r's last pass, s */
	double makespan;	/* max over ranks of pipe_end + dp_s + opt_s */
};

/* Simulates in: builds each rank's order of passes as the schedule runs
 * them (GPipe as torch.distributed.pipelining's ScheduleGPipe: all
 * forwards, then all backwards in micro-batch order; 1F1B as Megatron-LM's
 * PipeDream-Flush: pp - r - 1 warm-up forwards on rank r, then one forward
 * and one backward, then the cool-down backwards; interleaved as
 * Megatron-LM's forward_backward_pipelining_with_interleaving: warm-up
 * 2 (pp - r - 1) + (vp - 1) pp forward steps, micro-batches taken in groups
 * of pp per chunk (its get_schedule_table; m not a multiple of pp: the order
 * of the next multiple, less the missing micro-batches); ZB-H1 as Qi et al.
 * 2024 Fig. 3: 1F1B with each W after its B, rank r holding back r of its
 * W passes to the end; interleaved zero bubble: interleaved's order with
 * ZB-H1's W rule; ZB-V (Qi et al. Sec. 5): a list schedule in unit time,
 * B first, then F while the rank holds fewer than 2 pp chunk activations,
 * then W), then runs them: a pass starts when its rank is free and its
 * input has arrived (a forward: the previous stage's forward of the
 * micro-batch plus half that boundary's send; a backward: the next stage's
 * backward plus half its send, or on the last stage its own forward; a W:
 * its B; no send between two stages of one rank). p2p transfers overlap
 * compute (asynchronous sends). Returns 0 with *out
 * filled (free with timeline_sim_free), or -1 with e set when the input is
 * out of range (pp, vp, m, a negative time) or has more than
 * TIMELINE_MAX_OPS passes. */
int timeline_simulate(struct timeline_sim *out, const struct timeline_in *in, struct err *e);

/* Frees sim's ops and zeroes it; NULL-safe. */
void timeline_sim_free(struct timeline_sim *sim);

/* Where the picture puts things, in pixels of the SVG's user space (also
 * the rendered PNG's at scale 1): time t of rank r's row is at
 * x = x0 + t * px_per_s, rows span [y[r], y[r] + row_h). */
struct timeline_geom {
	double width, height;
	double x0, px_per_s;
	double y[MAX_STAGES], row_h;
};

/* The geometry timeline_svg uses for in and sim. */
void timeline_geometry(struct timeline_geom *g, const struct timeline_in *in,
		       const struct timeline_sim *sim);

/* The SVG picture of sim: one row per rank (label, detail, passes, idle
 * time as the row's background, p2p waits shaded, the DP tail and the
 * optimizer step at its end, peak memory / capacity beside it), a time axis
 * in seconds with ticks, a legend and the title. Micro-batch numbers are
 * written in passes wide enough for them; a row with more passes than half
 * its pixels is drawn pixel column by pixel column, each in the colour of
 * the pass that covers most of it. Returns a malloc'd NUL-terminated
 * string (caller frees), *len its length. */
char *timeline_svg(const struct timeline_in *in, const struct timeline_sim *sim, size_t *len);

/* The timeline of the plan row `row` (its strategy and cost) of model m on
 * cluster c, added to the transaction t as path (outfile.h): nothing is
 * written until outfile_commit(t). Returns 0, or -1 with e set (naming
 * --timeline and path; outfile_conflict(t) when path is another output's). */
int timeline_stage(struct outfile_set *t, const char *path, const struct plan_row *row,
		   const struct model *m, const struct cluster *c, struct err *e);

#endif
