/* exhaustive.c: the reference search over placements and partitions. */
#include "exhaustive.h"

#include "cost.h"
#include "search_int.h"
#include "strategy.h"

struct walk {
	const struct model *m;
	const struct cluster *c;
	const struct layer_costs *lc;
	int left[256]; /* ranks each group may still host */
	int n_group;
	struct strategy s; /* the candidate being built */
	struct strategy *best;
	struct cost_result *r;
	long costed;
};

/* Stage k starts at layer `from`; tries every end for it. */
static void split(struct walk *w, int k, int from)
{
	int n = w->lc->n_layer, stages = w->s.n_stages;

	if (k == stages - 1) {
		struct cost_result r;

		w->s.first[k] = (unsigned short)from;
		w->s.first[stages] = (unsigned short)n;
		cost_evaluate(&r, w->m, w->c, &w->s, w->lc);
		w->costed++;
		if (placement_better(w->c, &w->s, &r, w->best, w->r)) {
			*w->best = w->s;
			*w->r = r;
		}
		return;
	}
	w->s.first[k] = (unsigned short)from;
	for (int end = from + 1; end <= n - (stages - 1 - k); end++)
		split(w, k + 1, end);
}

/* Chooses the group of pipeline rank `rank` and recurses. */
static void place(struct walk *w, int rank)
{
	if (rank == w->s.pp) {
		split(w, 0, 0);
		return;
	}
	for (int g = 0; g < w->n_group; g++) {
		if (!w->left[g])
			continue;
		w->left[g]--;
		w->s.group[rank] = (unsigned char)g;
		place(w, rank + 1);
		w->left[g]++;
	}
}

long exhaustive_search(struct strategy *best, struct cost_result *r,
		       const struct strategy *s, const int *ranks,
		       const struct model *m, const struct cluster *c,
		       const struct layer_costs *lc)
{
	struct walk w = { .m = m, .c = c, .lc = lc, .n_group = lc->n_group, .s = *s, .best = best, .r = r };

	r->fits = false;
	for (int g = 0; g < w.n_group; g++)
		w.left[g] = ranks[g];
	if (s->n_stages <= lc->n_layer)
		place(&w, 0);
	return w.costed;
}
