/* plan.c: the search's entry point (plan_search): the options completed,
 * the search run on the threads (pool.c), its rows priced, ranked and the
 * top refined (refine.c); also on subsets of the node groups: each with
 * the cost objective, those that leave the slowest GPU types idle with the
 * throughput's (see plan.h; the steps in search_int.h). */
#define _POSIX_C_SOURCE 200809L
#include "plan.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "compute.h"
#include "model.h"
#include "search_int.h"
#include "trainer.h"
#include "trainer_time.h"
#include "util.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The strategy's scalar fields: the bytes before its stage arrays, which
 * end it (first, then group). */
#define HEAD_BYTES offsetof(struct strategy, first)
_Static_assert(offsetof(struct strategy, group) ==
			       HEAD_BYTES + sizeof(((struct strategy *)0)->first) &&
		       sizeof(struct strategy) - offsetof(struct strategy, group) - MAX_STAGES <
			       _Alignof(struct strategy),
	       "strategy ends with first[] and group[]");

/* Bytes of the chunks that hold the records: the first PLAN_CHUNK_MIN,
 * each next twice the last, at most PLAN_CHUNK (a plan of a few rows, as
 * a what-if's, takes a small block of the heap, not a mapping of its
 * own). */
#define PLAN_CHUNK_MIN (1u << 14)
#define PLAN_CHUNK     (1u << 20)

/* A row in compact form (struct plan_rec in plan.h): the fields of struct
 * plan_row that sort and that trainer_rows sets in place, then in tail[]
 * the strategy's nonzero head bytes (bit k of head: byte k is there, the
 * others are 0; most are small integers, flags and zero options),
 * first[0..n_stages], group[0..n_stages), and why with its NUL where it is
 * not empty. size: the bytes of its room. */
struct plan_rec {
	struct cost_result r;
	double gap_pct, usd_per_hour;
	double trainer_s[TRAINER_COUNT];
	unsigned trainer_feat[TRAINER_COUNT];
	unsigned trainers;
	unsigned short size;
	bool why;
	unsigned char head[(HEAD_BYTES + 7) / 8];
	unsigned char tail[];
};

/* A chunk of records (used bytes of cap), and the room of a plan:
 * its chunks (the first takes new records), the capacity of plan.row and
 * the lock that plan_row_set takes for new room. */
struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(max_align_t) unsigned char data[];
};

struct plan_arena {
	struct chunk *chunks;
	int cap_row;
	pthread_mutex_t lock;
};

/* The eight bytes of h from k (fewer at the end of the head: the rest
 * 0) as one word, in memory order (the byte order does not matter: only
 * which bytes are 0). */
static uint64_t head_word(const unsigned char *h, size_t k)
{
	uint64_t v = 0;

	memcpy(&v, h + k, HEAD_BYTES - k < 8 ? HEAD_BYTES - k : 8);
	return v;
}

/* The nonzero bytes of the word v: a word with the top bit of each such
 * byte set (the low seven bits added to 0x7f carry into the top one where
 * any is set, and no byte carries into the next), their count. */
static int nonzero_bytes(uint64_t v)
{
	const uint64_t low = 0x7f7f7f7f7f7f7f7fu;
	uint64_t top = (((v & low) + low) | v) & ~low;

	return (int)(((top >> 7) * 0x0101010101010101u) >> 56);
}

/* The bytes of the record of row, its room rounded up to 8. */
static size_t rec_size(const struct plan_row *row)
{
	const unsigned char *h = (const unsigned char *)&row->s;
	size_t n = offsetof(struct plan_rec, tail) + 3 * (size_t)row->s.n_stages + 2;

	for (size_t k = 0; k < HEAD_BYTES; k += 8)
		n += (size_t)nonzero_bytes(head_word(h, k));
	if (row->why[0])
		n += strlen(row->why) + 1;
	return (n + 7) & ~(size_t)7;
}

/* Writes row into x (its room from rec_size). Eight head bytes at a time:
 * most words are 0. */
static void rec_fill(struct plan_rec *x, const struct plan_row *row)
{
	const unsigned char *h = (const unsigned char *)&row->s;
	unsigned char *t = x->tail;
	int n = row->s.n_stages;

	x->r = row->r;
	x->gap_pct = row->gap_pct;
	x->usd_per_hour = row->usd_per_hour;
	memcpy(x->trainer_s, row->trainer_s, sizeof x->trainer_s);
	memcpy(x->trainer_feat, row->trainer_feat, sizeof x->trainer_feat);
	x->trainers = row->trainers;
	x->why = row->why[0] != '\0';
	memset(x->head, 0, sizeof x->head);
	for (size_t k = 0; k < HEAD_BYTES; k += 8) {
		size_t w = HEAD_BYTES - k < 8 ? HEAD_BYTES - k : 8;

		if (!head_word(h, k))
			continue;
		for (size_t i = 0; i < w; i++)
			if (h[k + i]) {
				x->head[k / 8] |= (unsigned char)(1u << i);
				*t++ = h[k + i];
			}
	}
	memcpy(t, row->s.first, sizeof *row->s.first * (size_t)(n + 1));
	t += sizeof *row->s.first * (size_t)(n + 1);
	memcpy(t, row->s.group, (size_t)n);
	t += n;
	if (x->why)
		memcpy(t, row->why, strlen(row->why) + 1);
}

/* The scalar fields of x's strategy into *s (its stage arrays untouched);
 * returns the tail past them. The head cleared at once, then the kept
 * bytes of each word that has any, up to its last (the sort's ties read
 * it). */
static const unsigned char *rec_head(const struct plan_rec *x, struct strategy *s)
{
	unsigned char *h = (unsigned char *)s;
	const unsigned char *t = x->tail;

	memset(h, 0, HEAD_BYTES);
	for (size_t k = 0; k < HEAD_BYTES; k += 8)
		for (unsigned bits = x->head[k / 8], i = 0; bits; bits >>= 1, i++)
			if (bits & 1)
				h[k + i] = *t++;
	return t;
}

/* The strategy of x into *s (0 past its stages); returns the tail past
 * them. */
static const unsigned char *rec_strategy(const struct plan_rec *x, struct strategy *s)
{
	const unsigned char *t = rec_head(x, s);
	size_t n = (size_t)s->n_stages;

	memcpy(s->first, t, sizeof *s->first * (n + 1));
	memset(s->first + n + 1, 0, sizeof *s->first * (MAX_STAGES - n));
	t += sizeof *s->first * (n + 1);
	memcpy(s->group, t, n);
	memset(s->group + n, 0, sizeof *s - offsetof(struct strategy, group) - n);
	return t + n;
}

/* Room of n bytes (at most PLAN_CHUNK_MIN) in a's last chunk, or a new
 * one. */
static struct plan_rec *arena_alloc(struct plan_arena *a, size_t n)
{
	struct chunk *k = a->chunks;

	if (!k || k->used + n > k->cap) {
		size_t cap = !k ? PLAN_CHUNK_MIN : k->cap < PLAN_CHUNK ? 2 * k->cap : PLAN_CHUNK;

		k = xmalloc(offsetof(struct chunk, data) + cap);
		k->next = a->chunks;
		k->used = 0;
		k->cap = cap;
		a->chunks = k;
	}
	k->used += n;
	return (struct plan_rec *)(void *)(k->data + k->used - n);
}

/* p's arena, made where it has none. */
static struct plan_arena *arena_of(struct plan *p)
{
	if (!p->arena) {
		p->arena = xcalloc(1, sizeof *p->arena);
		pthread_mutex_init(&p->arena->lock, NULL);
	}
	return p->arena;
}

/* A new record of row in p's arena. */
static struct plan_rec *rec_new(struct plan *p, const struct plan_row *row)
{
	size_t n = rec_size(row);
	struct plan_rec *x;

	arena_of(p);
	pthread_mutex_lock(&p->arena->lock);
	x = arena_alloc(p->arena, n);
	pthread_mutex_unlock(&p->arena->lock);
	x->size = (unsigned short)n;
	rec_fill(x, row);
	return x;
}

struct plan_row *plan_row_get(const struct plan *p, int i, struct plan_row *buf)
{
	const struct plan_rec *x = p->row[i];
	const unsigned char *t = rec_strategy(x, &buf->s);

	buf->r = x->r;
	if (x->why)
		memcpy(buf->why, t, strlen((const char *)t) + 1);
	else
		buf->why[0] = '\0';
	buf->gap_pct = x->gap_pct;
	buf->usd_per_hour = x->usd_per_hour;
	buf->trainers = x->trainers;
	memcpy(buf->trainer_s, x->trainer_s, sizeof buf->trainer_s);
	memcpy(buf->trainer_feat, x->trainer_feat, sizeof buf->trainer_feat);
	return buf;
}

void plan_row_set(struct plan *p, int i, const struct plan_row *row)
{
	if (rec_size(row) <= p->row[i]->size)
		rec_fill(p->row[i], row);
	else
		p->row[i] = rec_new(p, row);
}

void plan_row_set_trainers(struct plan *p, int i, const struct plan_row *row)
{
	struct plan_rec *x = p->row[i];

	memcpy(x->trainer_s, row->trainer_s, sizeof x->trainer_s);
	memcpy(x->trainer_feat, row->trainer_feat, sizeof x->trainer_feat);
	x->trainers = row->trainers;
}

void plan_row_add(struct plan *p, const struct plan_row *row)
{
	struct plan_rec *x = rec_new(p, row);

	if (p->n_row >= p->arena->cap_row) {
		p->arena->cap_row = p->n_row < 128 ? 256 : 2 * p->n_row;
		p->row = xreallocarray(p->row, (size_t)p->arena->cap_row, sizeof *p->row);
	}
	p->row[p->n_row++] = x;
}

bool plan_row_fits(const struct plan *p, int i)
{
	return !p->row[i]->why;
}

double plan_row_gap(const struct plan *p, int i)
{
	return p->row[i]->gap_pct;
}

void plan_rows_adopt(struct plan *to, struct plan *from)
{
	struct chunk **end;

	if (!from->arena)
		return;
	/* after to's chunks: its first takes the new records */
	for (end = &arena_of(to)->chunks; *end; end = &(*end)->next)
		;
	*end = from->arena->chunks;
	from->arena->chunks = NULL;
	to->arena->cap_row = to->n_row;
}

/* Rows that fit first, and of them those a trainer runs. */
static int launch_order(const struct plan_rec *x, const struct plan_rec *y)
{
	bool fx = !x->why, fy = !y->why;

	if (fx != fy)
		return fx ? -1 : 1;
	if (fx && !x->trainers != !y->trainers)
		return x->trainers ? -1 : 1;
	return 0;
}

/* Sorts plan.row (records). */
static int by_throughput(const void *a, const void *b)
{
	const struct plan_rec *x = *(struct plan_rec *const *)a, *y = *(struct plan_rec *const *)b;
	struct strategy sx, sy;
	int o = launch_order(x, y);

	if (o)
		return o;
	if (x->r.tokens_per_s != y->r.tokens_per_s)
		return x->r.tokens_per_s > y->r.tokens_per_s ? -1 : 1;
	if (x->r.peak_bytes != y->r.peak_bytes)
		return x->r.peak_bytes < y->r.peak_bytes ? -1 : 1;
	/* an exact tie: the simpler first (README "Ties") */
	rec_head(x, &sx);
	rec_head(y, &sy);
	if ((o = strategy_simpler(&sx, &sy)))
		return o;
	/* then the choices, so that the order never depends on the threads */
	const int kx[] = { sx.tp, sx.cp, sx.pp, sx.dp, sx.ep, sx.mbs,
			   sx.schedule, sx.vp, sx.recompute, sx.zero, sx.fp8 };
	const int ky[] = { sy.tp, sy.cp, sy.pp, sy.dp, sy.ep, sy.mbs,
			   sy.schedule, sy.vp, sy.recompute, sy.zero, sy.fp8 };
	for (size_t i = 0; i < sizeof kx / sizeof *kx; i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return 0;
}

/* The ranking by cost: USD per million tokens, the least first (the
 * tokens per iteration are the same for every row, so USD per hour x
 * iter_s orders as they do), then as by_throughput. Rows that fit come
 * first; every row has a price (plan_opts_check). */
static int by_cost(const void *a, const void *b)
{
	const struct plan_rec *x = *(struct plan_rec *const *)a, *y = *(struct plan_rec *const *)b;
	double cx = x->usd_per_hour * x->r.iter_s, cy = y->usd_per_hour * y->r.iter_s;
	int o = launch_order(x, y);

	if (o)
		return o;
	if (cx != cy)
		return cx < cy ? -1 : 1;
	return by_throughput(a, b);
}

/* plan_search on one cluster (every group in use). */
static int search_groups(struct plan **out, struct model *m, const struct cluster *c,
			 const struct plan_opts *o, struct err *e)
{
	struct search S = { .m = m, .c = c, .o = o };
	struct strategy s = { 0 };
	struct plan_opts opts = *o;
	double t0 = now();
	int rc = 0;

	if (opts.seq && model_set_seq(m, opts.seq, e))
		return -1;
	opts.seq = m->seq;
	opts.gbs = opts.gbs ? opts.gbs : m->gbs;
	if (plan_opts_check(m, c, &opts, e))
		return -1;
	if (opts.layout) {
		int vp = opts.vp ? opts.vp : 1;

		if ((long)opts.pp * vp > MAX_STAGES)
			return err_set(e, "--layout: pp x vp (%ld) exceeds %d stages", (long)opts.pp * vp,
				       MAX_STAGES);
		if (plan_layout_parse(opts.layout, m, opts.pp * vp, S.layout, e))
			return -1;
		S.fixed = true;
	}
	/* FP8 where the trainer sets it and every GPU type has it; on a
	 * cluster where only some have it, FP8 on the stages of those
	 * (cluster_bf16_blocks) where the trainer sets precision per layer
	 * (trainer_check then lists who runs each row) */
	bool some = false, every = true;
	for (int g = 0; g < c->n_group; g++) {
		some |= cluster_group_fp8(c, g);
		every &= cluster_group_fp8(c, g);
	}
	S.fp8_ok = trainer_allows(opts.trainer, FEATURE_FP8, &s) && some &&
		   (every || trainer_allows(opts.trainer, FEATURE_FP8_PER_LAYER, &s));
	S.o = &opts;
	S.p = xcalloc(1, sizeof *S.p);
	s.gbs = opts.gbs;
	s.seq = opts.seq;
	s.attn = (enum attention)opts.attn;
	s.unfused_norm = opts.unfused_norm;
	s.moe_balance = (enum moe_balance)opts.moe_balance;
	s.moe_capacity = opts.moe_capacity;
	s.grad_bytes = opts.grad_bytes;
	s.moment_bytes = opts.moment_bytes;
	s.wgrad_defer = opts.defer_wgrad == 1 ? (opts.wgrad_limit > 0 ? opts.wgrad_limit : -1) : 0;
	s.ep_overlap = opts.ep_overlap == 1;
	s.grouped_gemm = opts.grouped_gemm == 1;
	s.moe_pad = opts.moe_pad == 1;
	s.moe_dispatcher = (enum moe_dispatcher)opts.moe_dispatcher;
	s.recompute_modules = (unsigned)opts.recompute_modules;
	s.offload_modules = (unsigned)opts.offload_modules;
	rc = pool_run(&S, &s, e);
	if (opts.progress)
		opts.progress(1.0, opts.progress_arg);
	if (rc) {
		plan_free(S.p);
		return -1;
	}
	for (int i = 0; i < S.p->n_row; i++) {
		struct plan_rec *x = S.p->row[i];
		struct strategy rs;

		rec_strategy(x, &rs);
		x->usd_per_hour = cluster_price_per_hour(c, &rs);
		x->trainers = trainer_mask(m, c, &rs);
	}
	if (S.p->n_row)
		qsort(S.p->row, (size_t)S.p->n_row, sizeof *S.p->row,
		      opts.objective == PLAN_COST ? by_cost : by_throughput);
	/* the refinement draws on what the search left of the budget */
	S.cap = (opts.work_budget > 0 ? opts.work_budget : PLAN_WORK_BUDGET) - S.p->work;
	S.count = 0;
	S.cells = 0;
	if (opts.objective == PLAN_THROUGHPUT && refine_rows(&S, c))
		qsort(S.p->row, (size_t)S.p->n_row, sizeof *S.p->row, by_throughput);
	S.p->work += S.count;
	if (S.p->refine_cut)
		S.p->budget = opts.work_budget > 0 ? opts.work_budget : PLAN_WORK_BUDGET;
	/* each trainer's time; a row only a slower trainer runs becomes its */
	rc = trainer_rows(S.p, m, c, o, e);
	if (rc < 0) {
		plan_free(S.p);
		return -1;
	}
	if (rc)
		qsort(S.p->row, (size_t)S.p->n_row, sizeof *S.p->row,
		      opts.objective == PLAN_COST ? by_cost : by_throughput);
	while (S.p->n_feasible < S.p->n_row && plan_row_fits(S.p, S.p->n_feasible))
		S.p->n_feasible++;
	S.p->search_s = now() - t0;
	*out = S.p;
	return 0;
}

/* The progress of the search on subset i of n: its fraction scaled into
 * [i / n, (i + 1) / n]. */
struct subset_progress {
	const struct plan_opts *o;
	int i, n;
};

static void subset_progress(double done, void *arg)
{
	const struct subset_progress *sp = arg;

	sp->o->progress((sp->i + done) / sp->n, sp->o->progress_arg);
}

/* Moves the rows of p, found on the subset mask of c's groups, to all,
 * their node groups renumbered as in c, and adds up the counts. */
static void add_subset(struct plan *all, struct plan *p, const struct cluster *c,
		       unsigned mask)
{
	int map[MAX_GROUPS], k = 0;

	for (int g = 0; g < c->n_group; g++)
		if (mask >> g & 1)
			map[k++] = g;
	all->row = xreallocarray(all->row, (size_t)(all->n_row + p->n_row), sizeof *all->row);
	for (int i = 0; i < p->n_row; i++) {
		struct plan_row r;

		plan_row_get(p, i, &r);
		for (int j = 0; j < r.s.n_stages; j++)
			r.s.group[j] = (unsigned char)map[r.s.group[j] < k ? r.s.group[j] : 0];
		plan_row_set(p, i, &r); /* in place: the same room */
		all->row[all->n_row++] = p->row[i];
	}
	plan_rows_adopt(all, p);
	all->evaluated += p->evaluated;
	all->work += p->work;
	if (p->budget)
		all->budget = p->budget;
	all->ilp_optimal += p->ilp_optimal;
	all->ilp_stopped += p->ilp_stopped;
	all->ilp_failed += p->ilp_failed;
	all->truncated |= p->truncated;
	all->refine_cut += p->refine_cut;
	all->degrees += p->degrees;
	all->degrees_searched += p->degrees_searched;
}

/* The rate of a GPU of type t at which the cost model can run GEMMs at
 * best: its peak times eff_max (compute_eff's limit), in FP8 where it has
 * FP8 and fp8 (FLOP/s). */
static double type_rate(const struct gpu_type *t, bool fp8)
{
	double r = t->peak_flops * t->eff_max;
	double f = t->peak_fp8_flops * (t->fp8_eff_max > 0 ? t->fp8_eff_max : t->eff_max);

	return fp8 && f > r ? f : r;
}

/* Seconds per token of layer l (forward and backward) on one GPU of type
 * t at least, by compute_layer's own terms: its GEMMs, 3 (F - A), at the
 * type's best rate (type_rate, FP8 where it has it), and with flash
 * attention (attn, enum attention) the core's CAUSAL_SHARE x A x the
 * document share at the flash kernel's rate, its backward FLASH_BWD_FLOPS /
 * FLASH_BWD_RATE x that (FlashAttention 1 runs slower; the other kernels
 * are counted 0). Memory-bound kernels, the per-layer overhead,
 * recomputation and communication only add. */
static double token_time(const struct model *m, int l, const struct gpu_type *t, int attn)
{
	double F = compute_flops_per_token(m, l, m->seq), A = compute_attn_flops_per_token(m, l, m->seq);
	double x = 3 * (F - A > 0 ? F - A : 0) / type_rate(t, true);
	double eff = t->flash_eff > 0 ? t->flash_eff : FLASH_RATE * t->eff_max;

	if (A > 0 && (attn == ATTN_FLASH || attn == ATTN_FLASH1))
		x += CAUSAL_SHARE * model_doc_share(m, m->seq) * A *
		     (1 + FLASH_BWD_FLOPS / FLASH_BWD_RATE) / (t->peak_flops * eff);
	return x;
}

/* A lower bound of the iteration time (seconds) of any strategy on the
 * node groups in mask of c, for gbs sequences of m->seq tokens: each GPU i
 * runs its share x_il of the tokens of each layer l within the iteration
 * T, taking x_il tau_l(i) (token_time of its type); for any weights w_i >
 * 0, T >= sum_i w_i sum_l x_il tau_l(i) / sum_i w_i >= sum_l U min_i (w_i
 * tau_l(i)) / sum_i w_i, U the tokens of an iteration through each layer.
 * With w_i = 1 / tau_B(i), B the first block, the blocks' alike terms add
 * up to U / sum_i (1 / tau_B(i)) each. 0 (no bound) where a layer has a
 * measured profile, which sets its time apart from FLOPs. */
static double subset_bound(const struct model *m, const struct cluster *c, unsigned mask,
			   int gbs, int attn)
{
	double rate = 0, sum = 0, tau_b[MAX_GROUPS];
	int B = 0;

	for (int l = 0; l < m->n_layer; l++) {
		if (m->layer[l].n_measure > 0)
			return 0;
		if (!B && m->layer[l].kind == LAYER_BLOCK)
			B = l;
	}
	for (int g = 0; g < c->n_group; g++) {
		tau_b[g] = token_time(m, B, &c->gpu[c->group[g].gpu], attn);
		if (mask >> g & 1)
			rate += (double)c->group[g].nodes * c->group[g].gpus_per_node / tau_b[g];
	}
	if (!(rate > 0))
		return 0;
	for (int l = 0; l < m->n_layer; l++) {
		double least = INFINITY;

		for (int g = 0; g < c->n_group; g++)
			if (mask >> g & 1) {
				double x = token_time(m, l, &c->gpu[c->group[g].gpu], attn) / tau_b[g];

				least = x < least ? x : least;
			}
		sum += least;
	}
	return (double)gbs * m->seq * sum / rate;
}

/* The node-group subsets that plan_search searches besides the whole
 * cluster (bit g for c->group[g]), in the order searched, into sub[] (at
 * most 1 << PLAN_COST_MAX_GROUPS); returns their count. PLAN_COST: every
 * proper subset (at most PLAN_COST_MAX_GROUPS groups). PLAN_THROUGHPUT:
 * those that leave idle every group of the slowest GPU types, the types
 * ranked by their GEMM rate (type_rate, FP8 where fp8): the groups of the
 * fastest type, then of the two fastest, and so on (types of equal rate
 * together), the largest first (on at most PLAN_COST_MAX_GROUPS types: the
 * caller searches none beyond). A slower type kept while a faster one is
 * idle cannot add to the GEMM rate that the ranking rewards, so these are
 * the subsets that leaving slow GPUs idle gives (the README says what it
 * does not try). */
static int subsets(const struct cluster *c, int objective, bool fp8, unsigned *sub)
{
	unsigned full = (1u << c->n_group) - 1;
	double rate[MAX_GROUPS];
	int n = 0;

	if (objective == PLAN_COST) {
		for (unsigned mask = 1; mask < full; mask++)
			sub[n++] = mask;
		return n;
	}
	for (int g = 0; g < c->n_group; g++)
		rate[g] = type_rate(&c->gpu[c->group[g].gpu], fp8);
	/* each distinct rate, from the slowest up: the groups strictly
	 * faster than it */
	for (double cut = -INFINITY;;) {
		double next = INFINITY;
		unsigned mask = 0;

		for (int g = 0; g < c->n_group; g++)
			if (rate[g] > cut && rate[g] < next)
				next = rate[g];
		for (int g = 0; g < c->n_group; g++)
			if (rate[g] > next)
				mask |= 1u << g;
		if (!mask)
			break;
		sub[n++] = mask;
		cut = next;
	}
	return n;
}

/* The best iteration time of the rows of p that fit and that a trainer
 * runs (seconds; INFINITY where none): what a subset must beat to rank
 * first. */
static double best_launchable(const struct plan *p)
{
	double best = INFINITY;

	for (int i = 0; i < p->n_row; i++)
		if (!p->row[i]->why && p->row[i]->trainers && p->row[i]->r.iter_s < best)
			best = p->row[i]->r.iter_s;
	return best;
}

int plan_search(struct plan **out, struct model *m, const struct cluster *c,
		const struct plan_opts *o, struct err *e)
{
	unsigned full = (1u << c->n_group) - 1, sub[1u << PLAN_COST_MAX_GROUPS];
	struct strategy any = { 0 };
	bool fp8 = o->fp8 != 0 && trainer_allows(o->trainer, FEATURE_FP8, &any);
	bool cost = o->objective == PLAN_COST;
	int n = 0;
	struct plan_opts so = *o;
	struct cluster *x = cluster_mix(c);
	struct plan *all;
	double t0 = now(), best = INFINITY;
	bool added = false;
	long budget = o->work_budget > 0 ? o->work_budget : PLAN_WORK_BUDGET;

	if (cost && c->n_group > PLAN_COST_MAX_GROUPS && !plan_opts_what_if(o)) {
		cluster_free(x);
		return err_set(e, "--objective cost searches each subset of the node groups: at most %d groups, not %d",
			       PLAN_COST_MAX_GROUPS, c->n_group);
	}
	if (c->n_group > 1 && !plan_opts_what_if(o))
		n = subsets(c, o->objective, fp8, sub);
	if (!cost && n >= PLAN_COST_MAX_GROUPS)
		n = 0; /* more than PLAN_COST_MAX_GROUPS GPU types */
	if (!n) {
		if (search_groups(out, m, x, o, e)) {
			cluster_free(x);
			return -1;
		}
		(*out)->cluster = x;
		return 0;
	}
	struct subset_progress sp = { o, 0, n + 1 };
	if (o->progress) {
		so.progress = subset_progress;
		so.progress_arg = &sp;
	}
	all = xcalloc(1, sizeof *all);
	all->cluster = x;
	/* the cost objective: the subsets, then the whole cluster; the
	 * throughput: the whole cluster first, whose best plan a subset must
	 * beat (subset_bound) to be searched */
	for (int i = 0; i <= n; i++, sp.i++) {
		unsigned mask = cost ? (i < n ? sub[i] : full) : (i ? sub[i - 1] : full);
		double lb = cost || mask == full ? 0 : subset_bound(m, c, mask, o->gbs ? o->gbs : m->gbs, o->attn);
		/* the whole cluster with its mixed groups; a subset without */
		struct cluster *sub_c;
		struct plan *p = NULL;

		if (lb > 0 && lb >= best) {
			all->subsets_pruned++;
			continue;
		}
		/* the work budget (the default where none is given) is the
		 * whole search's: each subset takes what the ones before it
		 * left */
		if (!o->exhaustive) {
			so.work_budget = budget - all->work;
			if (so.work_budget <= 0) {
				all->truncated = true;
				continue;
			}
		}
		sub_c = mask == full ? x : cluster_subset(c, mask);
		if (search_groups(&p, m, sub_c, &so, e)) {
			if (sub_c != x)
				cluster_free(sub_c);
			plan_free(all);
			return -1;
		}
		if (!cost && best_launchable(p) < best)
			best = best_launchable(p);
		if (!cost && sub_c == x) {
			/* the whole cluster's ranking, first: kept as it is
			 * (the rows of 131,072 GPUs take a while to copy) */
			p->cluster = x;
			free(all);
			all = p;
		} else {
			add_subset(all, p, sub_c == x ? x : c, sub_c == x ? (1u << x->n_group) - 1 : mask);
			plan_free(p);
			added = true;
		}
		if (sub_c != x)
			cluster_free(sub_c);
		all->subsets++;
	}
	if (o->progress)
		o->progress(1.0, o->progress_arg); /* where the last subset was ruled out */
	if (all->truncated || all->refine_cut)
		all->budget = budget;
	if (added && all->n_row)
		qsort(all->row, (size_t)all->n_row, sizeof *all->row, cost ? by_cost : by_throughput);
	all->n_feasible = 0;
	while (all->n_feasible < all->n_row && plan_row_fits(all, all->n_feasible))
		all->n_feasible++;
	all->search_s = now() - t0;
	*out = all;
	return 0;
}

unsigned plan_row_idle(const struct cluster *c, const struct strategy *s)
{
	unsigned used = 0, real = 0;

	for (int g = 0; g < c->n_group; g++)
		if (!c->group[g].n_part)
			real |= 1u << g;
	for (int q = 0; q < s->pp; q++) {
		const struct node_group *G = &c->group[s->group[q]];

		if (!G->n_part)
			used |= 1u << s->group[q];
		for (int i = 0; i < G->n_part; i++)
			if (G->part_gpus[i] > 0)
				used |= 1u << G->part_group[i];
	}
	return real & ~used;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	cluster_free(p->cluster);
	if (p->arena) {
		for (struct chunk *k = p->arena->chunks, *next; k; k = next) {
			next = k->next;
			free(k);
		}
		pthread_mutex_destroy(&p->arena->lock);
		free(p->arena);
	}
	free(p->row);
	free(p);
}
