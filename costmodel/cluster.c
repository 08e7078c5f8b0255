/* cluster.c: the derived clusters the search plans on (the mixed groups of
 * leftover GPUs, subsets of groups), per-group memory and the price of a
 * strategy's GPUs; input/cluster_read.c reads the files. */
#include "cluster.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"
#include "util.h"

void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_gpu; i++)
		free(c->gpu[i].name);
	for (int i = 0; i < c->n_group; i++)
		free(c->group[i].name);
	free(c->gpu);
	free(c->group);
	free(c->name);
	free(c);
}

double cluster_group_mem(const struct cluster *c, int g)
{
	const struct node_group *G = &c->group[g];
	double m = c->gpu[G->gpu].mem_bytes;

	for (int i = 0; i < G->n_part; i++) {
		double x = c->gpu[c->group[G->part_group[i]].gpu].mem_bytes;

		if (x < m)
			m = x;
	}
	return m;
}

static int gcd_int(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Fills the links, type, node size and price of mixed group M from its
 * parts (cluster_mix's contract); fresh is a fabric number no group uses. */
static void mix_links(const struct cluster *c, struct node_group *M, int fresh)
{
	const struct node_group *a = &c->group[M->part_group[0]];
	double usd = 0;
	int gpn = 0;
	bool fabrics = false;

	M->gpu = a->gpu;
	M->intra_bw = a->intra_bw;
	M->intra_lat = a->intra_lat;
	M->inter_bw = a->inter_bw;
	M->inter_lat = a->inter_lat;
	M->intra_eff = a->intra_eff;
	M->inter_eff = a->inter_eff;
	M->fabric = a->fabric;
	for (int i = 0; i < M->n_part; i++) {
		const struct node_group *b = &c->group[M->part_group[i]];

		const struct gpu_type *t = &c->gpu[b->gpu], *u = &c->gpu[M->gpu];

		if (t->mem_bytes < u->mem_bytes ||
		    (t->mem_bytes == u->mem_bytes && t->peak_flops < u->peak_flops))
			M->gpu = b->gpu;
		M->intra_bw = fmin(M->intra_bw, b->intra_bw);
		M->intra_lat = fmax(M->intra_lat, b->intra_lat);
		M->inter_bw = fmin(M->inter_bw, b->inter_bw);
		M->inter_lat = fmax(M->inter_lat, b->inter_lat);
		M->intra_eff = fmin(M->intra_eff, b->intra_eff);
		M->inter_eff = fmin(M->inter_eff, b->inter_eff);
		fabrics |= b->fabric != a->fabric;
		gpn = gcd_int(gcd_int(gpn, M->part_gpus[i]), b->gpus_per_node);
		usd = usd < 0 || b->price_gpu_hour <= 0 ? -1
							: usd + b->price_gpu_hour * M->part_gpus[i];
	}
	if (fabrics) {
		M->inter_bw = fmin(M->inter_bw, c->fabric_bw);
		M->inter_lat = fmax(M->inter_lat, c->fabric_lat);
		M->fabric = fresh;
	}
	M->gpus_per_node = gpn;
	M->nodes = M->stage_gpus / gpn;
	M->price_gpu_hour = usd > 0 ? usd / M->stage_gpus : 0;
}

/* Appends to c the mixed groups for ranks of n GPUs from the GPUs its real
 * groups leave over (cluster_mix). */
static void mix_size(struct cluster *c, int n, int *fresh)
{
	int left[MAX_GROUPS], total = 0;

	for (int g = 0; g < c->n_group; g++) {
		left[g] = c->group[g].n_part ? 0 : c->group[g].nodes * c->group[g].gpus_per_node % n;
		total += left[g];
	}
	if (!total || total % n || c->n_group + total / n > MAX_GROUPS)
		return;
	for (int g = 0, r = 0; r < total / n; r++) {
		struct node_group *M = &c->group[c->n_group++];
		char name[256];
		int at = 0;

		memset(M, 0, sizeof *M);
		M->stage_gpus = n;
		for (int need = n; need > 0;) {
			int take;

			while (!left[g])
				g++;
			take = left[g] < need ? left[g] : need;
			M->part_group[M->n_part] = g;
			M->part_gpus[M->n_part++] = take;
			left[g] -= take;
			need -= take;
		}
		/* Truncated, never past the buffer, where long group names
		   overflow it. */
		for (int i = 0; i < M->n_part && at < (int)sizeof name; i++)
			at += snprintf(name + at, sizeof name - (size_t)at, "%s%s:%d", i ? "+" : "",
				       c->group[M->part_group[i]].name, M->part_gpus[i]);
		M->name = xstrdup(name);
		mix_links(c, M, (*fresh)++);
	}
}

struct cluster *cluster_mix(const struct cluster *c)
{
	struct cluster *x = xcalloc(1, sizeof *x);
	int fresh = 0;

	*x = *c;
	x->name = xstrdup(c->name);
	x->gpu = xcalloc((size_t)c->n_gpu, sizeof *x->gpu);
	for (int i = 0; i < c->n_gpu; i++) {
		x->gpu[i] = c->gpu[i];
		x->gpu[i].name = xstrdup(c->gpu[i].name);
	}
	x->group = xcalloc(MAX_GROUPS, sizeof *x->group);
	x->n_group = 0;
	for (int g = 0; g < c->n_group; g++) {
		if (c->group[g].n_part)
			continue;
		x->group[x->n_group] = c->group[g];
		x->group[x->n_group++].name = xstrdup(c->group[g].name);
		if (c->group[g].fabric >= fresh)
			fresh = c->group[g].fabric + 1;
	}
	for (int n = 1; n <= c->total_gpus; n++)
		if (c->total_gpus % n == 0)
			mix_size(x, n, &fresh);
	return x;
}

double cluster_price_per_hour(const struct cluster *c, const struct strategy *s)
{
	double usd = 0;

	for (int r = 0; r < s->pp; r++) {
		double p = c->group[s->group[r]].price_gpu_hour;

		if (p <= 0)
			return 0;
		usd += p * s->tp * s->cp * s->dp;
	}
	return usd;
}

struct cluster *cluster_subset(const struct cluster *c, unsigned mask)
{
	struct cluster *s = xcalloc(1, sizeof *s);

	*s = *c;
	s->name = xstrdup(c->name);
	s->gpu = xcalloc((size_t)c->n_gpu, sizeof *s->gpu);
	for (int i = 0; i < c->n_gpu; i++) {
		s->gpu[i] = c->gpu[i];
		s->gpu[i].name = xstrdup(c->gpu[i].name);
	}
	s->group = xcalloc((size_t)c->n_group, sizeof *s->group);
	s->n_group = 0;
	s->total_gpus = 0;
	for (int g = 0; g < c->n_group; g++) {
		struct node_group *h;

		if (!(mask >> g & 1))
			continue;
		h = &s->group[s->n_group++];
		*h = c->group[g];
		h->name = xstrdup(c->group[g].name);
		s->total_gpus += h->nodes * h->gpus_per_node;
	}
	return s;
}

bool cluster_group_fp8(const struct cluster *c, int g)
{
	const struct node_group *G = &c->group[g];

	if (!G->n_part)
		return c->gpu[G->gpu].peak_fp8_flops > 0;
	for (int i = 0; i < G->n_part; i++)
		if (c->gpu[c->group[G->part_group[i]].gpu].peak_fp8_flops <= 0)
			return false;
	return true;
}

int cluster_bf16_blocks(const struct cluster *c, const struct strategy *s, int *start, int *end)
{
	int phase = 0; /* 0 BF16 before the FP8 stages, 1 FP8, 2 BF16 after */

	*start = *end = 0;
	if (!s->fp8)
		return 0;
	for (int k = 0; k < s->n_stages; k++) {
		int blocks = stage_layers(s, k) - (k == 0) - (k == s->n_stages - 1);
		bool fp8 = cluster_group_fp8(c, s->group[strategy_rank(s, k)]);

		if (blocks <= 0)
			continue;
		if (fp8 && phase == 2)
			return -1;
		if (fp8)
			phase = 1;
		else if (phase == 1)
			phase = 2;
		if (!fp8)
			*(phase ? end : start) += blocks;
	}
	return 0;
}
