/* exact.c: exact placement and partition by branch and bound (exact.h).
 * A depth-first walk over the virtual stages in order: stage k's rank
 * takes a node group when it first appears (stages 0 to pp - 1), then the
 * stage takes its layers; the bound of each branch prunes it. */
#include "exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "schedule.h"
#include "search_int.h"
#include "strategy.h"
#include "util.h"

struct walk {
	const struct model *m;
	const struct cluster *c;
	const struct layer_costs *lc;
	struct pipeline_frame f;
	struct strategy s; /* the candidate being built */
	struct strategy *best;
	struct cost_result *r;
	int n, K, pp, G;
	bool by_rank; /* virtual stages: T_pipe over the ranks' totals */
	bool bidir;   /* DualPipe: stage k's mirror on rank pp - 1 - k */
	int left[MAX_GROUPS];
	bool placed[MAX_STAGES];
	double *pre;		       /* [g * (n + 1) + j]: time of layers [0, j) on g */
	double *ps, *pa, *pe;	       /* [j]: state, activation, extra bytes of [0, j) */
	double *rem;		       /* [i]: layers [i, n) each at its least time */
	double vmin;		       /* the least vocabulary share of a stage */
	double most_cap;	       /* the largest rank cap of a group with ranks */
	double fewest[MAX_STAGES + 1]; /* [k]: least in-flight micro-batches of
					  stages k on (INFINITY at K) */
	double cost[MAX_STAGES];       /* rank totals (by_rank) or stage costs */
	double mem[MAX_STAGES];	       /* rank memory so far */
	double cap[MAX_STAGES];	       /* rank memory cap (placed ranks) */
	double tail;		       /* lower bound of the tail */
	double sum, most;	       /* of cost[] */
	double held, room;	       /* the sum of mem[]; of cap[] (most_cap
					  for a rank without a group) */
	long nodes, max_nodes;
	bool stopped;
};

/* The incumbent's iter_s, INFINITY without one. */
static double incumbent(const struct walk *w)
{
	return w->r->fits ? w->r->iter_s : INFINITY;
}

/* T_pipe's bound with the costs so far and the layers from i on (left
 * stages to come, each with at least its vocabulary share): a max + b sum
 * over the stage costs, or over the ranks' totals with virtual stages
 * (their mean bounds their max). spread: the stages to come also bound the
 * max by their mean (which falls as i grows; without it the bound only
 * grows with the end of the stage being split). */
static double bound(const struct walk *w, int i, int left, bool spread)
{
	double mx = w->most, sum = w->sum, more = w->rem[i] + left * w->vmin;

	if (w->by_rank) {
		double mean = (sum + more) / w->pp;

		return w->f.ra * (mx > mean ? mx : mean) + w->f.rb * (sum + more);
	}
	if (spread && left && more / left > mx)
		mx = more / left;
	return w->f.a * mx + w->f.b * (sum + more);
}

static void stage(struct walk *w, int k, int i);

/* Whether the layers from j on, for the stages after k, can still fit:
 * their states, transients and activations at the fewest in-flight
 * micro-batches of those stages within the room the ranks have left (a
 * rank without a group at the largest cap). */
static bool room_left(const struct walk *w, int k, int j)
{
	double need = w->ps[w->n] - w->ps[j] + w->pe[w->n] - w->pe[j];

	if (j == w->n)
		return true;
	need += w->fewest[k + 1] * (w->pa[w->n] - w->pa[j]);
	return need <= (w->room - w->held) * (1 + 1e-12) + 1e-300;
}

/* The leaf: every stage placed and split. */
static void leaf(struct walk *w)
{
	struct cost_result r;

	if (bound(w, w->n, 0, false) * (1 - 1e-12) + w->tail >= incumbent(w))
		return;
	cost_evaluate(&r, w->m, w->c, &w->s, w->lc);
	if (placement_better(w->c, &w->s, &r, w->best, w->r)) {
		*w->best = w->s;
		*w->r = r;
	}
}

/* Stage k on its rank's group from layer i: every end that fits. */
static void split(struct walk *w, int k, int i)
{
	int q = strategy_rank(&w->s, k), g = w->s.group[q], n = w->n;
	int mirror = w->bidir ? w->pp - 1 - k : -1, last = n - (w->K - 1 - k);
	const double *p = w->pre + (size_t)g * (n + 1);
	double base = w->f.vocab_of[g], c0, m0, mm0 = 0, t0 = w->tail;
	double sum0 = w->sum, most0 = w->most, held0 = w->held;
	int slot = w->by_rank || w->bidir ? q : k;

	if (k && strategy_rank(&w->s, k - 1) != q)
		base += w->f.link[w->s.group[strategy_rank(&w->s, k - 1)]][g];
	c0 = w->cost[slot];
	m0 = w->mem[q];
	if (mirror >= 0)
		mm0 = w->mem[mirror];
	w->s.first[k] = (unsigned short)i;
	for (int j = k == w->K - 1 ? n : i + 1; j <= last && !w->stopped; j++) {
		double st = w->ps[j] - w->ps[i], ex = w->pe[j] - w->pe[i];
		double act = w->f.inflight[k] * (w->pa[j] - w->pa[i]);

		w->mem[q] = m0 + st + act + ex + (k < w->pp ? w->lc->vocab_bytes : 0);
		w->held = held0 + (w->mem[q] - m0);
		if (w->mem[q] > w->cap[q] * (1 + 1e-12))
			break; /* more layers only add */
		if (mirror >= 0) {
			w->mem[mirror] = mm0 + st + act + ex;
			w->held += st + act + ex;
			if (w->placed[mirror] && w->mem[mirror] > w->cap[mirror] * (1 + 1e-12))
				break;
		}
		if (!room_left(w, k, j))
			continue;
		w->cost[slot] = c0 + base + p[j] - p[i];
		w->sum = sum0 + (base + p[j] - p[i]);
		w->most = most0 > w->cost[slot] ? most0 : w->cost[slot];
		if (k == 0 && !w->by_rank && w->lc->tail0)
			w->tail = w->lc->tail0[(size_t)g * (n + 1) + j];
		if (++w->nodes > w->max_nodes && w->max_nodes > 0) {
			w->stopped = true;
			break;
		}
		if (bound(w, j, w->K - 1 - k, true) * (1 - 1e-12) + w->tail >= incumbent(w)) {
			/* past k = 0 (rank 0's tail) the bound without the
			 * spread only grows with j */
			if (k && bound(w, j, w->K - 1 - k, false) * (1 - 1e-12) + w->tail >=
					 incumbent(w))
				break;
			continue;
		}
		if (k == w->K - 1) {
			w->s.first[w->K] = (unsigned short)n;
			leaf(w);
		} else {
			stage(w, k + 1, j);
		}
	}
	w->cost[slot] = c0;
	w->sum = sum0;
	w->most = most0;
	w->held = held0;
	w->mem[q] = m0;
	if (mirror >= 0)
		w->mem[mirror] = mm0;
	w->tail = t0;
}

/* Stage k from layer i: its rank takes a group first where it has none. */
static void stage(struct walk *w, int k, int i)
{
	int q = strategy_rank(&w->s, k);

	if (w->placed[q]) {
		split(w, k, i);
		return;
	}
	for (int g = 0; g < w->G && !w->stopped; g++) {
		if (!w->left[g])
			continue;
		w->cap[q] = w->f.cap_of[g] * w->f.vp + w->lc->vocab_bytes;
		if (w->mem[q] > w->cap[q] * (1 + 1e-12))
			continue; /* DualPipe: its mirror stage is there */
		w->left[g]--;
		w->room += w->cap[q] - w->most_cap;
		w->placed[q] = true;
		w->s.group[q] = (unsigned char)g;
		split(w, k, i);
		w->placed[q] = false;
		w->room -= w->cap[q] - w->most_cap;
		w->left[g]++;
	}
}

bool exact_place(struct strategy *best, struct cost_result *r, const struct strategy *s,
		 const int *ranks, const struct model *m, const struct cluster *c,
		 const struct layer_costs *lc, long max_nodes)
{
	struct walk w = { .m = m, .c = c, .lc = lc, .s = *s, .best = best, .r = r, .n = lc->n_layer, .K = s->n_stages, .pp = s->pp, .G = lc->n_group, .max_nodes = max_nodes };
	int n = w.n, total = 0;

	if (w.K < 2 || w.K > n || w.K > MAX_STAGES || w.G > MAX_GROUPS || w.pp > MAX_STAGES)
		return false;
	for (int g = 0; g < w.G; g++) {
		w.left[g] = ranks[g];
		total += ranks[g];
	}
	if (total != w.pp)
		return false;
	for (int q = 0; q < w.pp; q++)
		w.s.group[q] = 0;
	cost_frame(&w.f, m, c, &w.s, lc);
	w.by_rank = s->vp > 1;
	w.bidir = schedule_bidirectional(s->schedule);
	w.pre = xmalloc(((size_t)w.G * (n + 1) + 4 * (size_t)(n + 1)) * sizeof *w.pre);
	w.ps = w.pre + (size_t)w.G * (n + 1);
	w.pa = w.ps + n + 1;
	w.pe = w.pa + n + 1;
	w.rem = w.pe + n + 1;
	w.vmin = INFINITY;
	w.most_cap = -INFINITY;
	w.fewest[w.K] = INFINITY;
	for (int k = w.K - 1; k >= 0; k--)
		w.fewest[k] = fmin(w.fewest[k + 1], w.f.inflight[k]);
	for (int g = 0; g < w.G; g++) {
		double *p = w.pre + (size_t)g * (n + 1);

		p[0] = 0;
		for (int l = 0; l < n; l++)
			p[l + 1] = p[l] + lc->time[(size_t)g * n + l];
		if (ranks[g] && w.f.vocab_of[g] < w.vmin)
			w.vmin = w.f.vocab_of[g];
		if (ranks[g])
			w.most_cap = fmax(w.most_cap, w.f.cap_of[g] * w.f.vp + lc->vocab_bytes);
	}
	w.ps[0] = w.pa[0] = w.pe[0] = 0;
	for (int l = 0; l < n; l++) {
		w.ps[l + 1] = w.ps[l] + lc->state_bytes[l];
		w.pa[l + 1] = w.pa[l] + lc->act_bytes[l];
		w.pe[l + 1] = w.pe[l] + lc->extra_bytes[l];
	}
	w.rem[n] = 0;
	for (int l = n - 1; l >= 0; l--) {
		double least = INFINITY;

		for (int g = 0; g < w.G; g++)
			if (ranks[g] && lc->time[(size_t)g * n + l] < least)
				least = lc->time[(size_t)g * n + l];
		w.rem[l] = w.rem[l + 1] + least;
	}
	w.room = w.pp * w.most_cap;
	if (room_left(&w, -1, 0))
		stage(&w, 0, 0);
	free(w.pre);
	return !w.stopped;
}
