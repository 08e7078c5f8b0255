/* timeline.c: --timeline (see timeline.h): the order of passes each
 * pipeline rank runs under each schedule, an event simulation of one
 * iteration, and its SVG picture. */
#define _POSIX_C_SOURCE 200809L
#include "timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "outfile.h"
#include "plan.h"
#include "util.h"

/* The virtual stage of rank r's chunk c and the rank of virtual stage k:
 * strategy_stage and strategy_rank on in's schedule and pp (ZB-V's V or
 * Megatron's looped order). */
static int op_stage(const struct timeline_in *in, int r, int c)
{
	const struct strategy s = { .schedule = in->schedule, .pp = in->pp };

	return strategy_stage(&s, r, c);
}

static int stage_rank(const struct timeline_in *in, int k)
{
	const struct strategy s = { .schedule = in->schedule, .pp = in->pp };

	return strategy_rank(&s, k);
}

/* Whether the schedule splits the backward into B and W passes. */
static bool has_w(enum schedule sc)
{
	return sc == SCHED_ZB_H1 || sc == SCHED_INTERLEAVED_ZB || sc == SCHED_ZB_V ||
	       sc == SCHED_ZB_H2 || sc == SCHED_DUALPIPE_V;
}

/* Appends pass (kind, chunk, mb) of rank r to ops[*n]. */
static void push(struct timeline_op *ops, int *n, int r, enum timeline_kind kind, int chunk,
		 int mb)
{
	ops[*n] = (struct timeline_op){ .rank = r, .chunk = chunk, .mb = mb, .kind = kind };
	(*n)++;
}

/* The W passes a rank owes: the B passes it ran (chunk, micro-batch) in
 * order, b of them, of which the first w have their W pushed. */
struct w_queue {
	int *chunk, *mb;
	int b, w;
};

/* Appends the B pass (chunk, mb) of rank r and, with zero bubble, the W
 * passes of its oldest B passes while more than hold are pending: ZB-H1's
 * rule (Qi et al. 2024 Sec. 3.1, Fig. 3), hold = r. */
static void push_b(struct timeline_op *ops, int *n, int r, int chunk, int mb, struct w_queue *q,
		   int hold)
{
	push(ops, n, r, TIMELINE_B, chunk, mb);
	if (!q)
		return;
	q->chunk[q->b] = chunk;
	q->mb[q->b++] = mb;
	for (; q->b - q->w > hold; q->w++)
		push(ops, n, r, TIMELINE_W, q->chunk[q->w], q->mb[q->w]);
}

/* Interleaved (Megatron-LM forward_backward_pipelining_with_interleaving):
 * forward step j runs (micro-batch, chunk) = table[j], where the table
 * takes the micro-batches in groups of pp, each group through chunk 0,
 * then chunk 1, ... (get_schedule_table, microbatch_group_size_per_vp_stage
 * = pp); backward step j runs table[j]'s micro-batch on chunk vp - 1 -
 * table[j].chunk. Rank r first runs min(total, 2 (pp - r - 1) + (vp - 1) pp)
 * forward steps, then one forward and one backward step at a time, then the
 * remaining backward steps. With m not a multiple of pp (Megatron-LM
 * required one until 2024) the order is that of the next multiple of pp,
 * without the passes of the micro-batches that do not exist: a pass depends
 * only on passes of its own micro-batch, so this order cannot wait on
 * itself (taking the short last group as it comes, with the same warm-up,
 * can: pp 4, vp 3, m 5).
 * Interleaved zero bubble (torch.distributed.pipelining's
 * ScheduleInterleavedZeroBubble runs interleaved 1F1B with the backward
 * split in B and W): the same order of F and B, each B followed by W
 * passes as ZB-H1 does it on rank r (push_b, hold r): r W passes held back
 * fill the end where the rank would idle (its last backward ends about r
 * chunk backwards before rank 0's), the rest follow their B at once, which
 * fills the gaps between the cool-down's B passes. A simplification of
 * torch's order (which also moves W passes into the warm-up's bubbles);
 * each W after its own B on the same rank, so it cannot wait on itself
 * either. */
static void order_interleaved(const struct timeline_in *in, int r, struct timeline_op *ops,
			      int *n)
{
	int pp = in->pp, v = in->vp, m = in->m, mp = (m + pp - 1) / pp * pp, total = mp * v, j = 0;
	int warm = 2 * (pp - r - 1) + (v - 1) * pp;
	int *mb = xcalloc((size_t)total, sizeof *mb), *ch = xcalloc((size_t)total, sizeof *ch);
	struct w_queue wq = { 0 }, *q = NULL;

	if (in->schedule == SCHED_INTERLEAVED_ZB) {
		wq.chunk = xcalloc((size_t)total, sizeof *wq.chunk);
		wq.mb = xcalloc((size_t)total, sizeof *wq.mb);
		q = &wq;
	}
	for (int g0 = 0; g0 < mp; g0 += pp)
		for (int c = 0; c < v; c++)
			for (int i = g0; i < g0 + pp; i++, j++) {
				mb[j] = i;
				ch[j] = c;
			}
	if (warm > total)
		warm = total;
	for (j = 0; j < warm; j++)
		if (mb[j] < m)
			push(ops, n, r, TIMELINE_F, ch[j], mb[j]);
	for (j = 0; j < total - warm; j++) {
		if (mb[warm + j] < m)
			push(ops, n, r, TIMELINE_F, ch[warm + j], mb[warm + j]);
		if (mb[j] < m)
			push_b(ops, n, r, v - 1 - ch[j], mb[j], q, r);
	}
	for (j = total - warm; j < total; j++)
		if (mb[j] < m)
			push_b(ops, n, r, v - 1 - ch[j], mb[j], q, r);
	for (; q && q->w < q->b; q->w++)
		push(ops, n, r, TIMELINE_W, q->chunk[q->w], q->mb[q->w]);
	free(mb);
	free(ch);
	free(wq.chunk);
	free(wq.mb);
}

/* order_zb_v's unit-time steps: whether the pass of t [k * m + i] (its
 * step + 1, 0 before it ran) ran before step. */
static bool ran_by(const int *t, int m, int k, int i, int step)
{
	int at = t[(size_t)k * m + i];

	return at > 0 && at <= step;
}

/* Whether B of micro-batch i on stage k may run at step: the next stage's
 * B ran, or on the last stage (of S) its own F. */
static bool b_ready(const int *tf, const int *tb, int S, int m, int k, int i, int step)
{
	return k == S - 1 ? ran_by(tf, m, k, i, step) : ran_by(tb, m, k + 1, i, step);
}

/* ZB-V (Qi et al. 2024 Sec. 5; torch.distributed.pipelining's
 * ScheduleZBVZeroBubble): the orders of all ranks at once, from a list
 * schedule in unit time (every F, B and W one step, p2p free): at each step
 * each rank runs, of the passes whose inputs were there at the end of the
 * previous step,
 *   1. a B, the older micro-batch first (the first leg's);
 *   2. else an F, the second leg's (stage 2 pp - 1 - r) first, if the rank
 *      holds fewer than 2 pp chunk activations (1F1B's peak over the V's
 *      2 pp stages, schedule_inflight; held from the F until the W, which
 *      still reads them), the first leg's only below 2 pp - 1, which keeps
 *      a place for the second leg;
 *   3. else the W of its oldest B.
 * Each stage takes its micro-batches in order. Rank r so runs up to
 * 2 (pp - r) - 1 forwards down the first leg until micro-batch 0 comes back
 * up the second, then F, B and W in turn as the held activations allow,
 * and its last W passes fill the cool-down: the paper's shape. On balanced
 * stages with t_F = t_B = t_W it ends within a few passes of the bound
 * 6 m + pp - 1 (rank pp - 1 waits pp - 1 forwards for its first input).
 * It cannot stall: every pass of the micro-batches before the oldest
 * unfinished one, i, is done, so a rank holds only chunks of i or later;
 * i's next F finds none of its own stage held (stages run in order) and
 * at most 2 pp - 1 of the first leg, its next B and W need no room, so a
 * step never passes with all ranks idle. Each pass follows its inputs in
 * unit time, so the event simulation cannot wait on itself whatever the
 * real times. Rank r's passes go to ops[first[r] .. first[r] + 6 m).
 * DualPipeV (deepseek-ai/DualPipe; schedule.c) the same with one chunk
 * activation more, 2 pp + 1 (its table's PP + 1): its forward-backward
 * pairs are a B and an F in turn here, their communication already
 * hidden in the pass times (cost.c). On balanced chunks with t_F = t_B =
 * t_W it ends at the closed form 6 m + pp - 1 for pp <= 4, m >= 2 pp,
 * within 2 (pp - 1) of it beyond. Returns 0, or -1 if a step ran nothing
 * (not expected). */
static int order_zb_v(const struct timeline_in *in, struct timeline_op *ops, const int *first)
{
	int pp = in->pp, m = in->m, S = 2 * pp, step = 0, left = 3 * S * m, rc = 0;
	int room = in->schedule == SCHED_DUALPIPE_V ? S + 1 : S;
	int nf[MAX_STAGES] = { 0 }, nb[MAX_STAGES] = { 0 }, held[MAX_STAGES] = { 0 };
	int cnt[MAX_STAGES] = { 0 }, wh[MAX_STAGES] = { 0 }, wt[MAX_STAGES] = { 0 };
	/* tf, tb [k * m + i]: step + 1 when F / B of micro-batch i on stage k
	 * ran, 0 before; wk, wi [r * 2m + j]: rank r's j-th B (stage, mb) */
	int *tf = xcalloc((size_t)S * m * 2, sizeof *tf), *tb = tf + (size_t)S * m;
	int *wk = xcalloc((size_t)pp * 2 * m * 2, sizeof *wk), *wi = wk + (size_t)pp * 2 * m;

	for (; left > 0; step++) {
		int ran = 0;

		for (int r = 0; r < pp; r++) {
			int k0 = r, k1 = S - 1 - r, k = -1, i;
			enum timeline_kind kind = TIMELINE_W;

			if (nb[k0] < m && b_ready(tf, tb, S, m, k0, nb[k0], step))
				k = k0;
			else if (nb[k1] < m && b_ready(tf, tb, S, m, k1, nb[k1], step))
				k = k1;
			if (k >= 0) {
				kind = TIMELINE_B;
			} else if (held[r] < room && nf[k1] < m &&
				   ran_by(tf, m, k1 - 1, nf[k1], step)) {
				k = k1;
				kind = TIMELINE_F;
			} else if (held[r] < room - 1 && nf[k0] < m &&
				   (k0 == 0 || ran_by(tf, m, k0 - 1, nf[k0], step))) {
				k = k0;
				kind = TIMELINE_F;
			}
			if (k < 0 && wh[r] == wt[r])
				continue;
			if (kind == TIMELINE_B) {
				i = nb[k]++;
				tb[(size_t)k * m + i] = step + 1;
				wk[(size_t)r * 2 * m + wt[r]] = k;
				wi[(size_t)r * 2 * m + wt[r]++] = i;
			} else if (kind == TIMELINE_F) {
				i = nf[k]++;
				tf[(size_t)k * m + i] = step + 1;
				held[r]++;
			} else {
				k = wk[(size_t)r * 2 * m + wh[r]];
				i = wi[(size_t)r * 2 * m + wh[r]++];
				held[r]--;
			}
			push(ops + first[r], &cnt[r], r, kind, k == k0 ? 0 : 1, i);
			ran++;
		}
		if (!ran) {
			rc = -1;
			break;
		}
		left -= ran;
	}
	free(tf);
	free(wk);
	return rc;
}

/* ZB-H2 (Qi et al. 2024 Sec. 3.1, Fig. 3): the orders of all ranks at once,
 * from a list schedule in unit time as order_zb_v's: at each step each
 * rank r runs, of the passes whose inputs were there at the end of the
 * previous step,
 *   1. its next B;
 *   2. else its next F, if it holds fewer than 2 pp - 1 micro-batches of
 *      activations (schedule_inflight; held from the F until the W);
 *   3. else the W of its oldest B.
 * Rank 0 so runs 2 pp - 1 forwards before its first B, the paper's
 * warm-up, and every rank's W passes wait until there is nothing else:
 * the parallelogram. On balanced stages with m >= pp the last rank runs
 * without a gap from (pp - 1) t_F, and the iteration ends at the closed
 * form m (t_F + t_B + t_W) + (pp - 1) t_F for t_F = t_B = t_W and for
 * t_B = 2 t_W (with 1F1B's caps pp - r the later ranks' early W passes
 * delay the last B by (pp - 1)(t_B - t_W)). It
 * cannot stall: the oldest unfinished micro-batch's next pass finds its
 * input ran (ranks take micro-batches in order) and room (a rank below
 * its cap runs the F; one at its cap holds W passes it can run). Rank r's
 * passes go to ops[first[r] .. first[r] + 3 m). Returns 0, or -1 if a step
 * ran nothing (not expected). */
static int order_zb_h2(const struct timeline_in *in, struct timeline_op *ops, const int *first)
{
	int pp = in->pp, m = in->m, left = 3 * pp * m, rc = 0;
	int nf[MAX_STAGES] = { 0 }, nb[MAX_STAGES] = { 0 }, nw[MAX_STAGES] = { 0 };
	int cnt[MAX_STAGES] = { 0 };
	/* tf, tb [r * m + i]: step + 1 when F / B of micro-batch i on rank r
	 * ran, 0 before */
	int *tf = xcalloc((size_t)pp * m * 2, sizeof *tf), *tb = tf + (size_t)pp * m;

	for (int step = 0; left > 0; step++) {
		int ran = 0, kind[MAX_STAGES];

		for (int r = 0; r < pp; r++) {
			kind[r] = -1;
			if (nb[r] < m && b_ready(tf, tb, pp, m, r, nb[r], step))
				kind[r] = TIMELINE_B;
			else if (nf[r] < m && nf[r] - nw[r] < 2 * pp - 1 &&
				 (r == 0 || ran_by(tf, m, r - 1, nf[r], step)))
				kind[r] = TIMELINE_F;
			else if (nw[r] < nb[r])
				kind[r] = TIMELINE_W;
		}
		for (int r = 0; r < pp; r++) {
			int i;

			if (kind[r] < 0)
				continue;
			if (kind[r] == TIMELINE_B) {
				i = nb[r]++;
				tb[(size_t)r * m + i] = step + 1;
			} else if (kind[r] == TIMELINE_F) {
				i = nf[r]++;
				tf[(size_t)r * m + i] = step + 1;
			} else {
				i = nw[r]++;
			}
			push(ops + first[r], &cnt[r], r, (enum timeline_kind)kind[r], 0, i);
			ran++;
		}
		if (!ran) {
			rc = -1;
			break;
		}
		left -= ran;
	}
	free(tf);
	return rc;
}

/* Rank r's passes in the order it runs them (timeline.h). 1F1B and ZB-H1
 * share the frame: min(pp - r - 1, m) warm-up forwards, then a forward (while
 * any is left) and a backward at a time. ZB-H1 (Qi et al. 2024 Sec. 3.1,
 * Fig. 3) follows each B with a W as soon as more than r are pending, so
 * rank r holds r W passes back and runs them at the end, where 1F1B's
 * cool-down leaves rank r idle; its bubble is (pp - 1)(t_F + t_B - t_W).
 * ZB-V: order_zb_v, all ranks at once. */
static void rank_order(const struct timeline_in *in, int r, struct timeline_op *ops, int *n)
{
	int m = in->m, warm = in->pp - r - 1 < m ? in->pp - r - 1 : m, nf = 0, nb = 0, nw = 0;

	switch (in->schedule) {
	case SCHED_INTERLEAVED:
	case SCHED_INTERLEAVED_ZB:
		order_interleaved(in, r, ops, n);
		return;
	case SCHED_GPIPE:
		for (int i = 0; i < m; i++)
			push(ops, n, r, TIMELINE_F, 0, i);
		for (int i = 0; i < m; i++)
			push(ops, n, r, TIMELINE_B, 0, i);
		return;
	case SCHED_1F1B:
	case SCHED_ZB_H1:
	default:
		for (; nf < warm; nf++)
			push(ops, n, r, TIMELINE_F, 0, nf);
		while (nb < m) {
			if (nf < m)
				push(ops, n, r, TIMELINE_F, 0, nf++);
			push(ops, n, r, TIMELINE_B, 0, nb++);
			if (in->schedule == SCHED_ZB_H1 && nb - nw > r)
				push(ops, n, r, TIMELINE_W, 0, nw++);
		}
		while (in->schedule == SCHED_ZB_H1 && nw < m)
			push(ops, n, r, TIMELINE_W, 0, nw++);
		return;
	}
}

static int check_in(const struct timeline_in *in, struct err *e)
{
	int S = in->pp * in->vp;
	double ops;

	if (in->pp < 1 || in->vp < 1 || in->m < 1 || in->pp > MAX_STAGES || in->vp > MAX_STAGES ||
	    S > MAX_STAGES)
		return err_set(e, "pp %d, vp %d, m %d: need pp, vp, m >= 1 and pp x vp <= %d",
			       in->pp, in->vp, in->m, MAX_STAGES);
	if (schedule_virtual(in->schedule) != (in->vp > 1))
		return err_set(e, "vp %d with schedule %s: virtual stages go with interleaved, "
			       "interleaved-zb, zb-v and dualpipev only", in->vp,
			       schedule_name(in->schedule));
	if (schedule_v(in->schedule) && in->vp != 2)
		return err_set(e, "vp %d with schedule %s: it runs 2 stages per rank", in->vp,
			       schedule_name(in->schedule));
	if (in->schedule == SCHED_DUALPIPE)
		return err_set(e, "schedule dualpipe is not drawn: its two model copies, fed from "
			       "both ends, do not fit the one chain of stages the simulation follows");
	if (in->schedule == SCHED_DUALPIPE_V && in->m < 2 * in->pp)
		return err_set(e, "dualpipev needs micro-batches (%d) >= 2 x pp (%d)", in->m,
			       2 * in->pp);
	if ((in->schedule == SCHED_INTERLEAVED || in->schedule == SCHED_INTERLEAVED_ZB ||
	     in->schedule == SCHED_ZB_H2) &&
	    in->m < in->pp)
		return err_set(e, "%s needs micro-batches (%d) >= pp (%d)", schedule_name(in->schedule),
			       in->m, in->pp);
	ops = (double)S * in->m * (has_w(in->schedule) ? 3 : 2);
	if (ops > TIMELINE_MAX_OPS)
		return err_set(e, "%.0f passes (pp %d x vp %d x %d micro-batches) are too many "
			       "to draw (at most %d)", ops, in->pp, in->vp, in->m, TIMELINE_MAX_OPS);
	for (int k = 0; k < S; k++)
		if (!(in->fwd[k] >= 0 && in->bwd[k] >= 0 && in->wgt[k] >= 0 && in->send[k] >= 0) ||
		    !isfinite(in->fwd[k] + in->bwd[k] + in->wgt[k] + in->send[k]))
			return err_set(e, "stage %d: pass times must be finite and >= 0", k);
	for (int r = 0; r < in->pp; r++)
		if (!(in->rank[r].dp_s >= 0 && in->rank[r].opt_s >= 0) ||
		    !isfinite(in->rank[r].dp_s + in->rank[r].opt_s))
			return err_set(e, "rank %d: tail times must be finite and >= 0", r);
	return 0;
}

/* The pass's duration. */
static double op_time(const struct timeline_in *in, const struct timeline_op *o)
{
	int k = op_stage(in, o->rank, o->chunk);

	return o->kind == TIMELINE_F ? in->fwd[k] : o->kind == TIMELINE_B ? in->bwd[k] : in->wgt[k];
}

/* When op o's input is there: *ready, and *sent the time it left another
 * rank (or -1 when it comes from the same rank). Returns false if the pass it
 * needs has not run yet. fend / bend: [k * m + mb] end of the forward /
 * backward of micro-batch mb on virtual stage k, -1 before it ran. F of
 * stage k follows F of k - 1, B of k follows B of k + 1 (on the last stage
 * its own F), W its own B; a boundary between two stages of one rank (ZB-V's
 * turn, pp 1) sends nothing. */
static bool op_ready(const struct timeline_in *in, const struct timeline_op *o,
		     const double *fend, const double *bend, double *ready, double *sent)
{
	int pp = in->pp, S = pp * in->vp, k = op_stage(in, o->rank, o->chunk), m = in->m, from;
	double t;

	*sent = -1;
	switch (o->kind) {
	case TIMELINE_F:
		if (k == 0) {
			*ready = 0;
			return true;
		}
		t = fend[(size_t)(k - 1) * m + o->mb];
		if (t < 0)
			return false;
		from = k - 1;
		*ready = t + (stage_rank(in, from) != o->rank ? in->send[k] / 2 : 0);
		break;
	case TIMELINE_B:
		if (k == S - 1) {
			t = fend[(size_t)k * m + o->mb];
			*ready = t;
			return t >= 0;
		}
		t = bend[(size_t)(k + 1) * m + o->mb];
		if (t < 0)
			return false;
		from = k + 1;
		*ready = t + (stage_rank(in, from) != o->rank ? in->send[k + 1] / 2 : 0);
		break;
	case TIMELINE_W:
	default:
		*ready = bend[(size_t)k * m + o->mb];
		return *ready >= 0;
	}
	if (stage_rank(in, from) != o->rank)
		*sent = t;
	return true;
}

/* Event simulation (timeline.h): each rank runs its passes in order, a pass
 * at max(rank free, input ready); ranks are advanced in turn as far as their
 * inputs allow until every pass has run. The start times are those of the
 * longest paths of the dependency graph, whatever the turn order. */
int timeline_simulate(struct timeline_sim *out, const struct timeline_in *in, struct err *e)
{
	int pp = in->pp, S, m = in->m, done = 0, pos[MAX_STAGES];
	double *fend, *bend, free_at[MAX_STAGES];

	memset(out, 0, sizeof *out);
	if (check_in(in, e) < 0)
		return -1;
	S = pp * in->vp;
	out->op = xcalloc((size_t)S * m * 3, sizeof *out->op);
	if (schedule_v(in->schedule)) {
		for (int r = 0; r <= pp; r++)
			out->first[r] = r * 6 * m;
		out->n_op = 6 * m * pp;
		if (order_zb_v(in, out->op, out->first) < 0) {
			timeline_sim_free(out);
			return err_set(e, "the %s list schedule stalled (pp %d, m %d)",
				       schedule_name(in->schedule), pp, m);
		}
	} else if (in->schedule == SCHED_ZB_H2) {
		for (int r = 0; r <= pp; r++)
			out->first[r] = r * 3 * m;
		out->n_op = 3 * m * pp;
		if (order_zb_h2(in, out->op, out->first) < 0) {
			timeline_sim_free(out);
			return err_set(e, "the zb-h2 list schedule stalled (pp %d, m %d)", pp, m);
		}
	} else {
		for (int r = 0; r < pp; r++) {
			out->first[r] = out->n_op;
			rank_order(in, r, out->op, &out->n_op);
		}
		out->first[pp] = out->n_op;
	}
	for (int r = 0; r < pp; r++) {
		pos[r] = out->first[r];
		free_at[r] = 0;
	}
	fend = xcalloc((size_t)S * m * 2, sizeof *fend);
	bend = fend + (size_t)S * m;
	for (size_t i = 0; i < (size_t)S * m * 2; i++)
		fend[i] = -1;
	while (done < out->n_op) {
		int progress = 0;

		for (int r = 0; r < pp; r++)
			for (; pos[r] < out->first[r + 1]; pos[r]++, progress++) {
				struct timeline_op *o = &out->op[pos[r]];
				double ready, sent;
				size_t at = (size_t)op_stage(in, r, o->chunk) * m + o->mb;

				if (!op_ready(in, o, fend, bend, &ready, &sent))
					break;
				o->free = free_at[r];
				o->start = ready > free_at[r] ? ready : free_at[r];
				o->sent = sent >= 0 ? sent : o->start;
				o->end = o->start + op_time(in, o);
				free_at[r] = o->end;
				if (o->kind == TIMELINE_F)
					fend[at] = o->end;
				else if (o->kind == TIMELINE_B)
					bend[at] = o->end;
			}
		if (!progress) {
			free(fend);
			timeline_sim_free(out);
			return err_set(e, "the %s order of passes deadlocks (pp %d, vp %d, m %d)",
				       schedule_name(in->schedule), pp, in->vp, m);
		}
		done += progress;
	}
	free(fend);
	for (int r = 0; r < pp; r++) {
		double end;

		out->pipe_end[r] = free_at[r];
		end = free_at[r] + in->rank[r].dp_s + in->rank[r].opt_s;
		if (end > out->makespan)
			out->makespan = end;
	}
	return 0;
}

void timeline_sim_free(struct timeline_sim *sim)
{
	if (!sim)
		return;
	free(sim->op);
	memset(sim, 0, sizeof *sim);
}

/* The picture's layout, in pixels. */
#define G_WIDTH 1600.0
#define G_LABEL 270.0	/* label column left of the plot */
#define G_MEM 190.0	/* memory column right of it */
#define G_TOP 100.0	/* title and legend */
#define G_ROW 34.0
#define G_PITCH 48.0
#define G_AXIS 50.0	/* axis and its caption below the rows */

void timeline_geometry(struct timeline_geom *g, const struct timeline_in *in,
		       const struct timeline_sim *sim)
{
	double span = sim->makespan > 0 ? sim->makespan : 1;

	g->width = G_WIDTH;
	g->x0 = G_LABEL;
	g->px_per_s = (G_WIDTH - G_LABEL - G_MEM) / span;
	g->row_h = G_ROW;
	for (int r = 0; r < in->pp; r++)
		g->y[r] = G_TOP + r * G_PITCH;
	g->height = G_TOP + in->pp * G_PITCH + G_AXIS;
}

/* Writes s with &, <, > and " escaped, at most max bytes of it (cut at a
 * UTF-8 character boundary, "..." marking the cut). */
static void put_text(FILE *f, const char *s, size_t max)
{
	size_t n = strlen(s), cut = n;

	if (n > max) {
		cut = max;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
	}
	for (size_t i = 0; i < cut; i++)
		switch (s[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(s[i], f);
		}
	if (cut < n)
		fputs("...", f);
}

static void rect(FILE *f, double x, double y, double w, double h, const char *fill)
{
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", x, y,
		w, h, fill);
}

/* Colour categories of a pass: kind x (even, odd chunk), then the p2p wait. */
enum { CAT_P2P = 6, CAT_N = 7 };
static const char *const cat_color[CAT_N] = {
	TIMELINE_COLOR_F, TIMELINE_COLOR_F2, TIMELINE_COLOR_B, TIMELINE_COLOR_B2,
	TIMELINE_COLOR_W, TIMELINE_COLOR_W2, TIMELINE_COLOR_P2P,
};

static int op_cat(const struct timeline_op *o)
{
	return 2 * (int)o->kind + (o->chunk & 1);
}

/* The p2p wait before o: [max(free, sent), start), empty if none. */
static bool op_wait(const struct timeline_op *o, double *a, double *b)
{
	*a = o->sent > o->free ? o->sent : o->free;
	*b = o->start;
	return *b > *a;
}

/* A row of few enough passes: one rect each, with the micro-batch number
 * where it fits and a tooltip. */
static void row_exact(FILE *f, const struct timeline_in *in, const struct timeline_sim *sim, int r,
		      const struct timeline_geom *g)
{
	static const char kind_name[] = "FBW";
	double y = g->y[r];

	for (int i = sim->first[r]; i < sim->first[r + 1]; i++) {
		const struct timeline_op *o = &sim->op[i];
		double a, b, x = g->x0 + o->start * g->px_per_s, w = (o->end - o->start) * g->px_per_s;
		char num[16];

		if (op_wait(o, &a, &b))
			rect(f, g->x0 + a * g->px_per_s, y, (b - a) * g->px_per_s, g->row_h,
			     TIMELINE_COLOR_P2P);
		if (w <= 0)
			continue;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s>"
			"<title>%c%d chunk %d (stage %d): %.6g-%.6g s</title></rect>\n",
			x, y, w, g->row_h, cat_color[op_cat(o)],
			w >= 4 ? " stroke=\"#ffffff\" stroke-width=\"0.5\"" : "", kind_name[o->kind],
			o->mb, o->chunk, op_stage(in, r, o->chunk), o->start, o->end);
		snprintf(num, sizeof num, "%d", o->mb);
		if (w >= 6.5 * (double)strlen(num) + 4)
			fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"10\" text-anchor=\"middle\" "
				"fill=\"%s\">%s</text>\n",
				x + w / 2, y + g->row_h / 2 + 3.5,
				o->kind == TIMELINE_F && !(o->chunk & 1) ? "#ffffff" : "#000000", num);
	}
}

/* Adds [a, b) seconds of category cat to the pixel columns of cover. */
static void cover_add(double *cover, int npx, const struct timeline_geom *g, double a, double b,
		      int cat)
{
	double xa = a * g->px_per_s, xb = b * g->px_per_s;

	for (int p = (int)floor(xa); p < npx && p < xb; p++) {
		double lo = p > xa ? p : xa, hi = p + 1 < xb ? p + 1 : xb;

		if (p >= 0 && hi > lo)
			cover[(size_t)p * CAT_N + cat] += hi - lo;
	}
}

/* A row of many passes: each pixel column in the colour that covers most of
 * it (idle if less than half of it is covered), runs merged into one rect. */
static void row_raster(FILE *f, const struct timeline_sim *sim, int r,
		       const struct timeline_geom *g, int npx)
{
	double *cover = xcalloc((size_t)npx * CAT_N, sizeof *cover);
	int run_cat = -1, run_at = 0;

	for (int i = sim->first[r]; i < sim->first[r + 1]; i++) {
		const struct timeline_op *o = &sim->op[i];
		double a, b;

		if (op_wait(o, &a, &b))
			cover_add(cover, npx, g, a, b, CAT_P2P);
		cover_add(cover, npx, g, o->start, o->end, op_cat(o));
	}
	for (int p = 0; p <= npx; p++) {
		int best = -1;
		double sum = 0, most = 0;

		for (int c = 0; p < npx && c < CAT_N; c++) {
			sum += cover[(size_t)p * CAT_N + c];
			if (cover[(size_t)p * CAT_N + c] > most) {
				most = cover[(size_t)p * CAT_N + c];
				best = c;
			}
		}
		if (sum < 0.5)
			best = -1;
		if (p == npx || best != run_cat) {
			if (run_cat >= 0)
				rect(f, g->x0 + run_at, g->y[r], p - run_at, g->row_h, cat_color[run_cat]);
			run_cat = best;
			run_at = p;
		}
	}
	free(cover);
}

/* Tick spacing: 1, 2 or 5 x 10^k seconds, about 8 ticks over span. */
static double tick_step(double span, int *decimals)
{
	double raw = span / 8, mag = pow(10, floor(log10(raw))), q = raw / mag;
	double step = mag * (q <= 1 ? 1 : q <= 2 ? 2 : q <= 5 ? 5 : 10);
	int d = (int)-floor(log10(step) + 1e-9);

	*decimals = d > 0 ? d : 0;
	return step;
}

static void legend(FILE *f, const struct timeline_in *in)
{
	struct legend_item {
		const char *color, *text;
	} item[10];
	int n = 0;
	double x = 10;
	bool zb = has_w(in->schedule);

	item[n++] = (struct legend_item){ TIMELINE_COLOR_F, "forward" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_B,
					  zb ? "backward B (input gradients)" : "backward" };
	if (zb)
		item[n++] = (struct legend_item){ TIMELINE_COLOR_W, "W (weight gradients)" };
	if (schedule_v(in->schedule))
		item[n++] = (struct legend_item){ TIMELINE_COLOR_F2, "V's second leg (lighter)" };
	else if (in->vp > 1)
		item[n++] = (struct legend_item){ TIMELINE_COLOR_F2, "odd virtual stage (lighter)" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_P2P, "waiting for p2p (exposed)" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_DP, "DP reduction (exposed)" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_OPT, "optimizer step" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_IDLE, "idle (bubble)" };
	for (int i = 0; i < n; i++) {
		fprintf(f, "<rect x=\"%.1f\" y=\"62\" width=\"14\" height=\"14\" fill=\"%s\" "
			"stroke=\"#999999\" stroke-width=\"0.5\"/>\n", x, item[i].color);
		fprintf(f, "<text x=\"%.1f\" y=\"74\" font-size=\"12\">%s</text>\n", x + 19,
			item[i].text);
		x += 19 + 6.6 * (double)strlen(item[i].text) + 18;
	}
}

/* The memory column of rank r: "peak / capacity GiB" and a bar. */
static void memory(FILE *f, const struct timeline_rank *k, double x, double y)
{
	double gib = 1024.0 * 1024.0 * 1024.0;
	double share = k->cap_bytes > 0 ? k->peak_bytes / k->cap_bytes : 0;

	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%.1f / %.1f GiB (%.0f%%)</text>\n",
		x, y + 13, k->peak_bytes / gib, k->cap_bytes / gib, 100 * share);
	rect(f, x, y + 20, 150, 8, "#e6e6e6");
	rect(f, x, y + 20, 150 * (share < 1 ? share : 1), 8, share > 0.95 ? "#e15759" : "#76b7b2");
}

char *timeline_svg(const struct timeline_in *in, const struct timeline_sim *sim, size_t *len)
{
	struct timeline_geom g;
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	double plot_w = G_WIDTH - G_LABEL - G_MEM, axis_y, step;
	int npx = (int)ceil(plot_w), decimals;

	if (!f)
		fatal_oom();
	timeline_geometry(&g, in, sim);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
		g.width, g.height, g.width, g.height);
	rect(f, 0, 0, g.width, g.height, TIMELINE_COLOR_PAGE);
	fputs("<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", f);
	put_text(f, in->title, sizeof in->title);
	fputs("</text>\n<text x=\"10\" y=\"46\" font-size=\"13\">", f);
	put_text(f, in->subtitle, sizeof in->subtitle);
	fputs("</text>\n", f);
	legend(f, in);
	for (int r = 0; r < in->pp; r++) {
		const struct timeline_rank *k = &in->rank[r];
		double y = g.y[r], t = sim->pipe_end[r];

		fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\">", y + 13);
		put_text(f, k->label, 36);
		fprintf(f, "</text>\n<text x=\"10\" y=\"%.1f\" font-size=\"11\" fill=\"#555555\">",
			y + 28);
		put_text(f, k->detail, 40);
		fputs("</text>\n", f);
		rect(f, g.x0, y, plot_w, g.row_h, TIMELINE_COLOR_IDLE);
		if (sim->first[r + 1] - sim->first[r] > npx / 2)
			row_raster(f, sim, r, &g, npx);
		else
			row_exact(f, in, sim, r, &g);
		if (k->dp_s > 0)
			rect(f, g.x0 + t * g.px_per_s, y, k->dp_s * g.px_per_s, g.row_h, TIMELINE_COLOR_DP);
		if (k->opt_s > 0)
			rect(f, g.x0 + (t + k->dp_s) * g.px_per_s, y, k->opt_s * g.px_per_s, g.row_h,
			     TIMELINE_COLOR_OPT);
		memory(f, k, G_WIDTH - G_MEM + 14, y);
	}
	axis_y = G_TOP + in->pp * G_PITCH - 6;
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
		g.x0, axis_y, g.x0 + plot_w, axis_y);
	step = tick_step(sim->makespan > 0 ? sim->makespan : 1, &decimals);
	for (int i = 0; i * step <= (sim->makespan > 0 ? sim->makespan : 1) * (1 + 1e-9); i++) {
		double x = g.x0 + i * step * g.px_per_s;

		fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#000000\"/>\n"
			"<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.*f</text>\n",
			x, axis_y, x, axis_y + 5, x, axis_y + 18, decimals, i * step);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">time (s)</text>\n",
		g.x0 + plot_w / 2, axis_y + 36);
	fputs("</svg>\n", f);
	if (fclose(f) != 0)
		fatal_oom();
	return text;
}

/* Virtual stage k's layers as the table's layers/stage column writes them
 * (report_layers): "E+10", "30", "30+L". */
static void stage_text(char *buf, size_t n, const struct strategy *s, const struct model *m, int k)
{
	int a = s->first[k], b = s->first[k + 1], blocks = b - a - (a == 0) - (b == m->n_layer);
	char num[16] = "";

	if (blocks > 0)
		snprintf(num, sizeof num, "%s%d", a == 0 ? "+" : "", blocks);
	snprintf(buf, n, "%s%s%s", a == 0 ? "E" : "", num,
		 b != m->n_layer ? "" : a == 0 || blocks > 0 ? "+L" : "L");
}

/* The simulation's input for row: per virtual stage the forward, backward
 * and send seconds of cost_stages; with the zero-bubble schedules the
 * backward split as the cost model splits it (schedule_weights: t_B = t_W,
 * recomputation in B): W = (backward - recomputation) / 2 of the rank,
 * shared over its chunks in proportion to their backward (cost_ranks has
 * the recomputation per rank only), B = the rest; per rank the DP tail, optimizer step, peak memory and
 * capacity of cost_ranks, and its labels. */
static int timeline_input(struct timeline_in *in, const struct plan_row *row,
			  const struct model *m, const struct cluster *c, struct err *e)
{
	const struct strategy *s = &row->s;
	struct cost_stage *st = xcalloc(MAX_STAGES, sizeof *st);
	struct cost_rank *rk = xcalloc(MAX_STAGES, sizeof *rk);
	struct layer_costs lc;
	int n;

	if (cost_layers(&lc, m, c, s, NULL, e) < 0) {
		free(st);
		free(rk);
		return -1;
	}
	n = cost_stages(st, m, c, s, &lc);
	cost_ranks(rk, m, c, s, &lc);
	in->schedule = s->schedule;
	in->pp = s->pp;
	in->vp = s->vp > 0 ? s->vp : 1;
	in->m = s->micro_batches > 0 ? s->micro_batches : s->gbs / (s->dp * s->mbs);
	for (int k = 0; k < n; k++) {
		in->fwd[k] = st[k].fwd;
		in->bwd[k] = st[k].bwd;
		in->send[k] = st[k].send;
		if (has_w(s->schedule)) {
			const struct cost_rank *x = &rk[strategy_rank(s, k)];
			double w = x->bwd > 0 ? (x->bwd - x->recompute) / 2 * st[k].bwd / x->bwd : 0;

			in->wgt[k] = w > 0 ? w : 0;
			in->bwd[k] -= in->wgt[k];
		}
	}
	for (int r = 0; r < s->pp; r++) {
		struct timeline_rank *x = &in->rank[r];
		size_t at = 0;

		snprintf(x->label, sizeof x->label, "rank %d: %s", r, c->gpu[rk[r].gpu].name);
		at = (size_t)snprintf(x->detail, sizeof x->detail, "%s, layers ",
				      c->group[rk[r].group].name);
		for (int j = 0, k = r; j < strategy_vp(s) && k < n && at < sizeof x->detail; k = strategy_stage(s, r, ++j)) {
			char one[32];

			stage_text(one, sizeof one, s, m, k);
			at += (size_t)snprintf(x->detail + at, sizeof x->detail - at, "%s%s",
					       k > r ? ", " : "", one);
		}
		x->dp_s = rk[r].dp;
		x->opt_s = rk[r].optimizer;
		x->peak_bytes = rk[r].peak_bytes;
		x->cap_bytes = rk[r].cap_bytes;
	}
	snprintf(in->title, sizeof in->title,
		 "%s: TP %d, PP %d, DP %d, CP %d, EP %d, mbs %d, %d micro-batches, %s%s%.0d, recompute %s, ZeRO %d",
		 m->name, s->tp, s->pp, s->dp, s->cp, s->ep, s->mbs, in->m, schedule_name(s->schedule),
		 in->vp > 1 ? "/v" : "", in->vp > 1 ? in->vp : 0, recompute_name(s->recompute), s->zero);
	cost_layers_free(&lc);
	free(st);
	free(rk);
	return 0;
}

int timeline_stage(struct outfile_set *t, const char *path, const struct plan_row *row,
		   const struct model *m, const struct cluster *c, struct err *e)
{
	struct timeline_in *in = xcalloc(1, sizeof *in);
	struct timeline_sim sim;
	char *text = NULL;
	size_t len;
	int rc = -1;

	if (timeline_input(in, row, m, c, e) < 0 || timeline_simulate(&sim, in, e) < 0) {
		err_prefix(e, "--timeline '%s'", path);
		goto done;
	}
	snprintf(in->subtitle, sizeof in->subtitle,
		 "iteration %.3f s (cost model), %.3f s simulated (%+.2f%%), on %s",
		 row->r.iter_s, sim.makespan,
		 row->r.iter_s > 0 ? 100 * (sim.makespan / row->r.iter_s - 1) : 0, c->name);
	text = timeline_svg(in, &sim, &len);
	timeline_sim_free(&sim);
	rc = outfile_add(t, path, text, len, 0666, e);
done:
	free(text);
	free(in);
	return rc;
}
