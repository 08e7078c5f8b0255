/* simulate.c: one iteration of a pipeline schedule simulated op by op
 * (simulate.h): the order of passes each pipeline rank runs under each
 * schedule, and an event simulation of them. */
#include "simulate.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "util.h"

int sim_stage(const struct sim_in *in, int r, int c)
{
	const struct strategy s = { .schedule = in->schedule, .pp = in->pp };

	return strategy_stage(&s, r, c);
}

/* The rank of virtual stage k: strategy_rank on in's schedule and pp. */
static int stage_rank(const struct sim_in *in, int k)
{
	const struct strategy s = { .schedule = in->schedule, .pp = in->pp };

	return strategy_rank(&s, k);
}

/* Appends pass (kind, chunk, mb) of rank r to ops[*n]. */
static void push(struct sim_op *ops, int *n, int r, enum sim_kind kind, int chunk, int mb)
{
	ops[*n] = (struct sim_op){ .rank = r, .chunk = chunk, .mb = mb, .kind = kind };
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
static void push_b(struct sim_op *ops, int *n, int r, int chunk, int mb, struct w_queue *q,
		   int hold)
{
	push(ops, n, r, SIM_B, chunk, mb);
	if (!q)
		return;
	q->chunk[q->b] = chunk;
	q->mb[q->b++] = mb;
	for (; q->b - q->w > hold; q->w++)
		push(ops, n, r, SIM_W, q->chunk[q->w], q->mb[q->w]);
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
static void order_interleaved(const struct sim_in *in, int r, struct sim_op *ops,
			      int *n)
{
	int pp = in->pp, v = in->vp, m = in->m, mp = (m + pp - 1) / pp * pp, total = mp * v, j = 0;
	int warm = 2 * (pp - r - 1) + (v - 1) * pp;
	int *mb = xcalloc((size_t)total, sizeof *mb), *ch = xcalloc((size_t)total, sizeof *ch);
	struct w_queue wq = { 0 }, *q = NULL;

	if (schedule_zero_bubble(in->schedule)) {
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
			push(ops, n, r, SIM_F, ch[j], mb[j]);
	for (j = 0; j < total - warm; j++) {
		if (mb[warm + j] < m)
			push(ops, n, r, SIM_F, ch[warm + j], mb[warm + j]);
		if (mb[j] < m)
			push_b(ops, n, r, v - 1 - ch[j], mb[j], q, r);
	}
	for (j = total - warm; j < total; j++)
		if (mb[j] < m)
			push_b(ops, n, r, v - 1 - ch[j], mb[j], q, r);
	for (; q && q->w < q->b; q->w++)
		push(ops, n, r, SIM_W, q->chunk[q->w], q->mb[q->w]);
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
static int order_zb_v(const struct sim_in *in, struct sim_op *ops, const int *first)
{
	int pp = in->pp, m = in->m, S = 2 * pp, step = 0, left = 3 * S * m, rc = 0;
	/* rank 0's two stages' activations in flight, m unbounded: 2 pp
	   (ZB-V), 2 pp + 1 (DualPipeV), the same on every rank */
	int room = (int)(schedule_inflight(in->schedule, pp, 2, INT_MAX, 0) +
			 schedule_inflight(in->schedule, pp, 2, INT_MAX, S - 1));
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
			enum sim_kind kind = SIM_W;

			if (nb[k0] < m && b_ready(tf, tb, S, m, k0, nb[k0], step))
				k = k0;
			else if (nb[k1] < m && b_ready(tf, tb, S, m, k1, nb[k1], step))
				k = k1;
			if (k >= 0) {
				kind = SIM_B;
			} else if (held[r] < room && nf[k1] < m &&
				   ran_by(tf, m, k1 - 1, nf[k1], step)) {
				k = k1;
				kind = SIM_F;
			} else if (held[r] < room - 1 && nf[k0] < m &&
				   (k0 == 0 || ran_by(tf, m, k0 - 1, nf[k0], step))) {
				k = k0;
				kind = SIM_F;
			}
			if (k < 0 && wh[r] == wt[r])
				continue;
			if (kind == SIM_B) {
				i = nb[k]++;
				tb[(size_t)k * m + i] = step + 1;
				wk[(size_t)r * 2 * m + wt[r]] = k;
				wi[(size_t)r * 2 * m + wt[r]++] = i;
			} else if (kind == SIM_F) {
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
static int order_zb_h2(const struct sim_in *in, struct sim_op *ops, const int *first)
{
	int pp = in->pp, m = in->m, left = 3 * pp * m, rc = 0;
	/* a rank's activations in flight, m unbounded: 2 pp - 1 */
	int cap = (int)schedule_inflight(in->schedule, pp, 1, INT_MAX, 0);
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
				kind[r] = SIM_B;
			else if (nf[r] < m && nf[r] - nw[r] < cap &&
				 (r == 0 || ran_by(tf, m, r - 1, nf[r], step)))
				kind[r] = SIM_F;
			else if (nw[r] < nb[r])
				kind[r] = SIM_W;
		}
		for (int r = 0; r < pp; r++) {
			int i;

			if (kind[r] < 0)
				continue;
			if (kind[r] == SIM_B) {
				i = nb[r]++;
				tb[(size_t)r * m + i] = step + 1;
			} else if (kind[r] == SIM_F) {
				i = nf[r]++;
				tf[(size_t)r * m + i] = step + 1;
			} else {
				i = nw[r]++;
			}
			push(ops + first[r], &cnt[r], r, (enum sim_kind)kind[r], 0, i);
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

/* Rank r's passes in the order it runs them (simulate.h). 1F1B and ZB-H1
 * share the frame: min(pp - r - 1, m) warm-up forwards, then a forward (while
 * any is left) and a backward at a time. ZB-H1 (Qi et al. 2024 Sec. 3.1,
 * Fig. 3) follows each B with a W as soon as more than r are pending, so
 * rank r holds r W passes back and runs them at the end, where 1F1B's
 * cool-down leaves rank r idle; its bubble is (pp - 1)(t_F + t_B - t_W).
 * ZB-V: order_zb_v, all ranks at once. */
static void rank_order(const struct sim_in *in, int r, struct sim_op *ops, int *n)
{
	int m = in->m, warm = in->pp - r - 1 < m ? in->pp - r - 1 : m, nf = 0, nb = 0, nw = 0;
	bool zb = schedule_zero_bubble(in->schedule);

	switch (schedule_rows[in->schedule].order) {
	case SCHED_ORDER_LOOPED:
		order_interleaved(in, r, ops, n);
		return;
	case SCHED_ORDER_GPIPE:
		for (int i = 0; i < m; i++)
			push(ops, n, r, SIM_F, 0, i);
		for (int i = 0; i < m; i++)
			push(ops, n, r, SIM_B, 0, i);
		return;
	case SCHED_ORDER_1F1B:
	default:
		for (; nf < warm; nf++)
			push(ops, n, r, SIM_F, 0, nf);
		while (nb < m) {
			if (nf < m)
				push(ops, n, r, SIM_F, 0, nf++);
			push(ops, n, r, SIM_B, 0, nb++);
			if (zb && nb - nw > r)
				push(ops, n, r, SIM_W, 0, nw++);
		}
		while (zb && nw < m)
			push(ops, n, r, SIM_W, 0, nw++);
		return;
	}
}

/* in's ranges (sim_run); the orders' needs: the looped and ZB-H2 orders
 * m >= pp, DualPipeV's m >= 2 pp (as the DualPipe repository), 1F1B's,
 * GPipe's and ZB-V's any m. */
static int check_in(const struct sim_in *in, struct err *e)
{
	int S = in->pp * in->vp;
	enum sched_order order = schedule_rows[in->schedule].order;
	double ops;

	if (in->pp < 1 || in->vp < 1 || in->m < 1 || in->pp > MAX_STAGES || in->vp > MAX_STAGES ||
	    S > MAX_STAGES)
		return err_set(e, "pp %d, vp %d, m %d: need pp, vp, m >= 1 and pp x vp <= %d",
			       in->pp, in->vp, in->m, MAX_STAGES);
	if (schedule_virtual(in->schedule) != (in->vp > 1))
		return err_set(e, "vp %d with schedule %s: virtual stages go with interleaved, "
				  "interleaved-zb, zb-v and dualpipev only",
			       in->vp,
			       schedule_name(in->schedule));
	if (schedule_v(in->schedule) && in->vp != 2)
		return err_set(e, "vp %d with schedule %s: it runs 2 stages per rank", in->vp,
			       schedule_name(in->schedule));
	if (order == SCHED_ORDER_NONE)
		return err_set(e, "schedule %s is not drawn: its two model copies, fed from "
				  "both ends, do not fit the one chain of stages the simulation follows",
			       schedule_name(in->schedule));
	if (schedule_fb_overlap(in->schedule) &&
	    in->m < schedule_min_micro_batches(in->schedule, in->pp))
		return err_set(e, "%s needs micro-batches (%d) >= 2 x pp (%d)",
			       schedule_name(in->schedule), in->m,
			       schedule_min_micro_batches(in->schedule, in->pp));
	if ((order == SCHED_ORDER_LOOPED || order == SCHED_ORDER_H2) && in->m < in->pp)
		return err_set(e, "%s needs micro-batches (%d) >= pp (%d)", schedule_name(in->schedule),
			       in->m, in->pp);
	ops = (double)S * in->m * (schedule_zero_bubble(in->schedule) ? 3 : 2);
	if (ops > SIM_MAX_OPS)
		return err_set(e, "%.0f passes (pp %d x vp %d x %d micro-batches) are too many "
				  "to draw (at most %d)",
			       ops, in->pp, in->vp, in->m, SIM_MAX_OPS);
	for (int k = 0; k < S; k++)
		if (!(in->fwd[k] >= 0 && in->bwd[k] >= 0 && in->wgt[k] >= 0 && in->send[k] >= 0) ||
		    !isfinite(in->fwd[k] + in->bwd[k] + in->wgt[k] + in->send[k]))
			return err_set(e, "stage %d: pass times must be finite and >= 0", k);
	for (int r = 0; r < in->pp; r++)
		if (!(in->dp[r] >= 0 && in->opt[r] >= 0) || !isfinite(in->dp[r] + in->opt[r]))
			return err_set(e, "rank %d: tail times must be finite and >= 0", r);
	return 0;
}

/* The pass's duration. */
static double op_time(const struct sim_in *in, const struct sim_op *o)
{
	int k = sim_stage(in, o->rank, o->chunk);

	return o->kind == SIM_F ? in->fwd[k] : o->kind == SIM_B ? in->bwd[k]
								: in->wgt[k];
}

/* When op o's input is there: *ready, and *sent the time it left another
 * rank (or -1 when it comes from the same rank). Returns false if the pass it
 * needs has not run yet. fend / bend: [k * m + mb] end of the forward /
 * backward of micro-batch mb on virtual stage k, -1 before it ran. F of
 * stage k follows F of k - 1, B of k follows B of k + 1 (on the last stage
 * its own F), W its own B; a boundary between two stages of one rank (ZB-V's
 * turn, pp 1) sends nothing. */
static bool op_ready(const struct sim_in *in, const struct sim_op *o,
		     const double *fend, const double *bend, double *ready, double *sent)
{
	int pp = in->pp, S = pp * in->vp, k = sim_stage(in, o->rank, o->chunk), m = in->m, from;
	double t;

	*sent = -1;
	switch (o->kind) {
	case SIM_F:
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
	case SIM_B:
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
	case SIM_W:
	default:
		*ready = bend[(size_t)k * m + o->mb];
		return *ready >= 0;
	}
	if (stage_rank(in, from) != o->rank)
		*sent = t;
	return true;
}

/* Event simulation (simulate.h): each rank runs its passes in order, a pass
 * at max(rank free, input ready); ranks are advanced in turn as far as their
 * inputs allow until every pass has run. The start times are those of the
 * longest paths of the dependency graph, whatever the turn order. */
int sim_run(struct sim_result *out, const struct sim_in *in, struct err *e)
{
	int pp = in->pp, S, m = in->m, done = 0, pos[MAX_STAGES];
	double *fend, *bend, free_at[MAX_STAGES];

	memset(out, 0, sizeof *out);
	if (check_in(in, e) < 0)
		return -1;
	S = pp * in->vp;
	out->op = xcalloc((size_t)S * m * 3, sizeof *out->op);
	if (schedule_rows[in->schedule].order == SCHED_ORDER_V) {
		for (int r = 0; r <= pp; r++)
			out->first[r] = r * 6 * m;
		out->n_op = 6 * m * pp;
		if (order_zb_v(in, out->op, out->first) < 0) {
			sim_free(out);
			return err_set(e, "the %s list schedule stalled (pp %d, m %d)",
				       schedule_name(in->schedule), pp, m);
		}
	} else if (schedule_rows[in->schedule].order == SCHED_ORDER_H2) {
		for (int r = 0; r <= pp; r++)
			out->first[r] = r * 3 * m;
		out->n_op = 3 * m * pp;
		if (order_zb_h2(in, out->op, out->first) < 0) {
			sim_free(out);
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
				struct sim_op *o = &out->op[pos[r]];
				double ready, sent;
				size_t at = (size_t)sim_stage(in, r, o->chunk) * m + o->mb;

				if (!op_ready(in, o, fend, bend, &ready, &sent))
					break;
				o->free = free_at[r];
				o->start = ready > free_at[r] ? ready : free_at[r];
				o->sent = sent >= 0 ? sent : o->start;
				o->end = o->start + op_time(in, o);
				free_at[r] = o->end;
				if (o->kind == SIM_F)
					fend[at] = o->end;
				else if (o->kind == SIM_B)
					bend[at] = o->end;
			}
		if (!progress) {
			free(fend);
			sim_free(out);
			return err_set(e, "the %s order of passes deadlocks (pp %d, vp %d, m %d)",
				       schedule_name(in->schedule), pp, in->vp, m);
		}
		done += progress;
	}
	free(fend);
	for (int r = 0; r < pp; r++) {
		double end;

		out->pipe_end[r] = free_at[r];
		end = free_at[r] + in->dp[r] + in->opt[r];
		if (end > out->makespan)
			out->makespan = end;
	}
	return 0;
}

void sim_free(struct sim_result *sim)
{
	if (!sim)
		return;
	free(sim->op);
	memset(sim, 0, sizeof *sim);
}

/* Per virtual stage the forward, backward and send seconds of cost_stages;
 * with the zero-bubble schedules the backward split as the cost model
 * splits it (schedule_weights: t_B = t_W, recomputation in B): W =
 * (backward - recomputation) / 2 of the rank, shared over its chunks in
 * proportion to their backward (cost_ranks has the recomputation per rank
 * only), B = the rest; per rank the DP tail (after the deferred LM-head
 * weight gradients, where the rank has them) and optimizer step of
 * cost_ranks. */
void sim_input(struct sim_in *in, const struct strategy *s, const struct cost_stage *st, int n,
	       const struct cost_rank *rk)
{
	in->schedule = s->schedule;
	in->pp = s->pp;
	in->vp = s->vp > 0 ? s->vp : 1;
	in->m = s->micro_batches > 0 ? s->micro_batches : s->gbs / (s->dp * s->mbs);
	for (int k = 0; k < n; k++) {
		in->fwd[k] = st[k].fwd;
		in->bwd[k] = st[k].bwd;
		in->send[k] = st[k].send;
		if (schedule_zero_bubble(s->schedule)) {
			const struct cost_rank *x = &rk[strategy_rank(s, k)];
			double w = x->bwd > 0 ? (x->bwd - x->recompute) / 2 * st[k].bwd / x->bwd : 0;

			in->wgt[k] = w > 0 ? w : 0;
			in->bwd[k] -= in->wgt[k];
		}
	}
	for (int r = 0; r < s->pp; r++) {
		in->dp[r] = rk[r].deferred + rk[r].dp;
		in->opt[r] = rk[r].optimizer;
	}
}
