/* emit.c: emit_write and emit_stage: check the plan, run the format's
 * writers (emit_megatron.h, emit_titan.h, emit_deepspeed.h) and the
 * nodes.txt beside every format, and write the files as one transaction
 * through outfile.h. */
#include "emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "emit_deepspeed.h"
#include "emit_megatron.h"
#include "emit_titan.h"
#include "emit_util.h"
#include "model.h"
#include "outfile.h"
#include "strategy.h"
#include "trainer.h"
#include "util.h"

static const char *const format_names[EMIT_COUNT] = {
	[EMIT_MEGATRON] = "megatron",
	[EMIT_TORCHTITAN] = "torchtitan",
	[EMIT_DEEPSPEED] = "deepspeed",
	[EMIT_NEMO] = "nemo",
	[EMIT_SLURM] = "slurm",
	[EMIT_TORCHTITAN_MAIN] = "torchtitan-main",
};

/* The trainer each format runs, for trainer_check. */
static const enum trainer format_trainer[EMIT_COUNT] = {
	[EMIT_MEGATRON] = TRAINER_MEGATRON,
	[EMIT_TORCHTITAN] = TRAINER_TORCHTITAN,
	[EMIT_DEEPSPEED] = TRAINER_DEEPSPEED,
	[EMIT_NEMO] = TRAINER_NEMO,
	[EMIT_SLURM] = TRAINER_MEGATRON,
	[EMIT_TORCHTITAN_MAIN] = TRAINER_TORCHTITAN,
};

const char *emit_format_name(enum emit_format f)
{
	return format_names[f];
}

int emit_format_parse(const char *name)
{
	for (int i = 0; i < EMIT_COUNT; i++)
		if (strcmp(format_names[i], name) == 0)
			return i;
	return -1;
}

/* ---- nodes.txt ---- */

/* Appends the layers of stage k as "layers 0-22". */
static void stage_range(struct emit_buf *b, const struct strategy *s, int k)
{
	emit_printf(b, "layers ");
	emit_range(b, s->first[k], s->first[k + 1] - 1);
}

/* The node rank holding global rank r. */
static int node_of(const struct emit_ctx *x, int r)
{
	int i = 0;

	for (int end = x->nodes.gpus[0]; end <= r; end += x->nodes.gpus[++i])
		;
	return i;
}

/* Adds nodes.txt: the header, how ranks map to nodes, each pipeline rank's
 * node ranks and stages, and one line per node rank (rank, group, GPU
 * type, tab-separated). */
static void nodes_txt(struct emit_ctx *x)
{
	struct emit_buf *b = emit_add(x, "nodes.txt", 0644);
	const struct strategy *s = x->s;
	const struct trainer_nodes *n = &x->nodes;

	emit_header(b, x, "node placement for the launch files beside it");
	emit_printf(b, "#\n"
		       "# One line per node rank: <node rank>, <node group>, <GPU type>, separated\n"
		       "# by one tab each (names may hold spaces, never a tab). Ranks go\n"
		       "# tp-cp-dp-pp (Megatron; torchtitan's mesh and DeepSpeed's topology give the\n"
		       "# same order), so pipeline rank p owns global ranks [p*%d, (p+1)*%d)\n"
		       "# (tp*cp*dp = %d), and a node's global ranks follow those of the lower node\n"
		       "# ranks. Node rank r must run on a node of the group named here, so that\n"
		       "# each GPU type gets the stages the plan gave it: start every node with its\n"
		       "# rank (static rendezvous: torchrun --node-rank, not --rdzv-backend c10d).\n"
		       "# Layers: 0 the embedding, 1 to %d the blocks, %d the head.\n",
		    x->block, x->block, x->block, x->m->layers, x->m->layers + 1);
	for (int p = 0; p < s->pp; p++) {
		int lo = node_of(x, p * x->block), hi = node_of(x, (p + 1) * x->block - 1);

		emit_printf(b, "# pipeline rank %d (node rank%s ", p, hi > lo ? "s" : "");
		emit_range(b, lo, hi);
		emit_printf(b, "): ");
		for (int j = 0, k = p; j < strategy_vp(s) && k < s->n_stages; k = strategy_stage(s, p, ++j)) {
			emit_printf(b, "%sstage %d ", k > p ? ", " : "", k);
			stage_range(b, s, k);
		}
		emit_printf(b, "\n");
	}
	for (int i = 0; i < n->n; i++) {
		const struct node_group *g = &x->c->group[n->group[i]];

		/* tab-separated: emit_name turns control characters, tab
		 * included, into '?', so a name cannot hold the separator */
		emit_printf(b, "%d\t", i);
		emit_name(b, g->name);
		emit_printf(b, "\t");
		emit_name(b, x->c->gpu[g->gpu].name);
		emit_printf(b, "\n");
	}
}

/* ---- writing ---- */

/* Adds every file of x to t as dir/NAME, dir to be created by the commit. */
static int stage_files(const struct emit_ctx *x, const char *dir, struct outfile_set *t,
		       struct err *e)
{
	if (!*dir)
		return err_set(e, "the output directory name is empty");
	outfile_mkdir(t, dir);
	for (int i = 0; i < x->n_file; i++) {
		size_t n = strlen(dir) + strlen(x->file[i].name) + 2;
		char *path = xmalloc(n);
		int rc;

		snprintf(path, n, "%s/%s", dir, x->file[i].name);
		rc = outfile_add(t, path, x->file[i].text.s, x->file[i].text.len,
				 x->file[i].mode, e);
		free(path);
		if (rc)
			return -1;
	}
	return 0;
}

int emit_stage(const char *format, const char *dir, const struct model *m,
	       const struct cluster *c, const struct strategy *s, const char *row_line,
	       struct outfile_set *t, struct err *e)
{
	struct emit_ctx x = { .m = m, .c = c, .s = s, .row_line = row_line };
	int f = emit_format_parse(format), rc;

	if (f < 0)
		return err_set(e, "unknown format '%s' (megatron, torchtitan, deepspeed, nemo, slurm, torchtitan-main)",
			       format);
	if (trainer_check(format_trainer[f], m, c, s, e) ||
	    (f == EMIT_TORCHTITAN_MAIN && trainer_titan_main_check(m, s, e)) ||
	    trainer_nodes(&x.nodes, c, s, e))
		return -1;
	x.block = s->tp * s->cp * s->dp;
	for (int p = 1; p < s->pp; p++)
		if (s->group[p] != s->group[0])
			x.hetero = true;
	switch ((enum emit_format)f) {
	case EMIT_MEGATRON:
		emit_megatron(&x);
		break;
	case EMIT_TORCHTITAN:
		emit_titan(&x);
		break;
	case EMIT_DEEPSPEED:
		emit_deepspeed(&x);
		break;
	case EMIT_NEMO:
		emit_nemo(&x);
		break;
	case EMIT_SLURM:
		emit_slurm(&x);
		emit_megatron(&x);
		break;
	case EMIT_TORCHTITAN_MAIN:
		emit_titan_main(&x);
		break;
	default:
		break;
	}
	nodes_txt(&x);
	rc = stage_files(&x, dir, t, e);
	for (int i = 0; i < x.n_file; i++)
		free(x.file[i].text.s);
	trainer_nodes_free(&x.nodes);
	return rc;
}

int emit_write(const char *format, const char *dir, const struct model *m,
	       const struct cluster *c, const struct strategy *s, struct err *e)
{
	struct outfile_set *t = outfile_create();
	int rc = emit_stage(format, dir, m, c, s, NULL, t, e);

	if (rc == 0)
		rc = outfile_commit(t, e);
	outfile_free(t);
	return rc;
}
