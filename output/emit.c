/* emit.c: emit_write (check, build every file, write them as one
 * transaction through outfile.h) and
 * the pieces shared by the emitters: text buffer, header, Megatron layout,
 * node checks of the launch scripts, nodes.txt. */
#include "emit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cluster.h"
#include "emit_int.h"
#include "model.h"
#include "moe.h"
#include "outfile.h"
#include "strategy.h"
#include "trainer.h"
#include "util.h"

static const char *const format_names[EMIT_COUNT] = {
	[EMIT_MEGATRON] = "megatron", [EMIT_TORCHTITAN] = "torchtitan",
	[EMIT_DEEPSPEED] = "deepspeed", [EMIT_NEMO] = "nemo",
	[EMIT_SLURM] = "slurm",
};

/* The trainer each format runs, for trainer_check. */
static const enum trainer format_trainer[EMIT_COUNT] = {
	[EMIT_MEGATRON] = TRAINER_MEGATRON, [EMIT_TORCHTITAN] = TRAINER_TORCHTITAN,
	[EMIT_DEEPSPEED] = TRAINER_DEEPSPEED, [EMIT_NEMO] = TRAINER_NEMO,
	[EMIT_SLURM] = TRAINER_MEGATRON,
};

const char *emit_format_name(enum emit_format f) { return format_names[f]; }

int emit_format_parse(const char *name)
{
	for (int i = 0; i < EMIT_COUNT; i++)
		if (strcmp(format_names[i], name) == 0)
			return i;
	return -1;
}

/* ---- text ---- */

void emit_printf(struct emit_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->s = xreallocarray(b->s, b->cap, 1);
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void emit_name(struct emit_buf *b, const char *s)
{
	for (; s && *s; s++)
		emit_printf(b, "%c", (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

struct emit_buf *emit_add(struct emit_ctx *x, const char *name, unsigned mode)
{
	struct emit_file *f = &x->file[x->n_file++];

	f->name = name;
	f->mode = mode;
	f->text = (struct emit_buf){ 0 };
	emit_printf(&f->text, "%s", "");
	return &f->text;
}

/* ---- shared pieces ---- */

bool emit_layernorm(const struct model *m)
{
	return m->norm == NORM_LAYER || (!m->model_type[0] && m->learned_pos);
}

int emit_vocab_divisor(const struct model *m, int tp)
{
	for (int d = 128; d > 1; d--)
		if (m->vocab % (d * tp) == 0)
			return d;
	return 1;
}

const char *emit_balance(const struct model *m, const struct strategy *s)
{
	if (s->moe_balance == MOE_BALANCE_GLOBAL_BATCH)
		return "global_aux_loss";
	return strcmp(m->model_type, "deepseek_v3") == 0 ? "seq_aux_loss" : "aux_loss";
}

/* Appends the model lines of the header: what the cost model counted of the
 * architecture, which the launch files set where their trainer has a
 * setting. */
static void model_lines(struct emit_buf *b, const struct model *m, const struct strategy *s)
{
	const struct rope_scaling *r = &m->rope_scaling;
	int kv = m->kv_heads ? m->kv_heads : m->heads, moe = 0;

	emit_printf(b, "# the model as costed (the trainer must build the same):\n"
		    "#   norm %s, eps ", emit_layernorm(m) ? "LayerNorm" : "RMSNorm");
	if (m->norm_eps > 0)
		emit_printf(b, "%g\n", m->norm_eps);
	else
		emit_printf(b, "not given (the trainer's default)\n");
	if (m->learned_pos)
		emit_printf(b, "#   positions learned, %d rows\n", m->max_pos);
	else if (m->rope_theta > 0)
		emit_printf(b, "#   positions rotary, base %.0f", m->rope_theta);
	else
		emit_printf(b, "#   positions rotary, base not given (the trainer's default)");
	if (!m->learned_pos && r->type[0])
		emit_printf(b, ", scaling %s x%g (low %g, high %g, original %d)\n", r->type,
			    r->factor, r->low_freq_factor, r->high_freq_factor, r->original_max_pos);
	else if (!m->learned_pos)
		emit_printf(b, ", no scaling\n");
	emit_printf(b, "#   dropout 0 (attention and hidden)\n"
		    "#   biases %s, q/k norm %s\n",
		    m->bias ? "on every linear layer" : m->qkv_bias ? "on q, k, v only" : "none",
		    m->qk_norm ? "yes" : "no");
	if (m->kv_lora_rank > 0)
		emit_printf(b, "#   attention MLA (q rank %d, kv rank %d, qk dims %d + %d rope, v dim %d)",
			    m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim,
			    m->v_head_dim);
	else
		emit_printf(b, "#   attention %d heads, %d kv heads", m->heads, kv);
	if (m->sliding_window > 0 && m->sliding_every <= 1)
		emit_printf(b, ", sliding window %d on every layer", m->sliding_window);
	else if (m->sliding_window > 0)
		emit_printf(b, ", sliding window %d but full attention on every %d%s layer",
			    m->sliding_window, m->sliding_every,
			    m->sliding_every == 2 ? "nd" : m->sliding_every == 3 ? "rd" : "th");
	emit_printf(b, "\n#   MLP %s, embeddings %s, vocabulary %d unpadded\n",
		    m->ffn_kind == FFN_SWIGLU ? "SwiGLU" : m->ffn_kind == FFN_GELU ? "GeLU" : "squared ReLU",
		    m->tied ? "tied" : "untied", m->vocab);
	if (m->experts == 0)
		return;
	for (int i = 0; i < m->layers; i++)
		moe += model_block_moe(m, i);
	emit_printf(b, "#   MoE: %d experts, top %d, ffn %d, on %d of %d layers; ", m->experts, m->top_k,
		    m->moe_ffn, moe, m->layers);
	if (s->moe_capacity > 0)
		emit_printf(b, "capacity factor %g (tokens\n#   beyond it dropped)", s->moe_capacity);
	else
		emit_printf(b, "dropless (every token\n#   reaches its top %d, no capacity factor)", m->top_k);
	emit_printf(b, ", all-to-all token dispatch, %s balancing,\n"
		    "#   the busiest EP rank at %.3f x the mean load", emit_balance(m, s),
		    moe_load_factor(m, s));
	if (m->shared_experts > 0)
		emit_printf(b, ",\n#   %d shared expert%s of ffn %d", m->shared_experts,
			    m->shared_experts > 1 ? "s" : "", m->shared_ffn);
	emit_printf(b, "\n");
}

void emit_stages(struct emit_buf *b, const struct emit_ctx *x)
{
	const struct strategy *s = x->s;
	int head = x->m->layers + 1;

	for (int k = 0; k < s->n_stages; k++) {
		int lo = s->first[k], hi = s->first[k + 1];
		int blocks = (hi < head ? hi : head) - (lo > 1 ? lo : 1);

		const char *sep = "";

		emit_printf(b, "%s", k ? "|" : "");
		if (lo == 0) {
			emit_printf(b, "E");
			sep = "+";
		}
		if (blocks > 0) {
			emit_printf(b, "%s%d", sep, blocks);
			sep = "+";
		}
		if (hi > head)
			emit_printf(b, "%sL", sep);
	}
}

void emit_header(struct emit_buf *b, const struct emit_ctx *x, const char *what)
{
	const struct model *m = x->m;
	const struct cluster *c = x->c;
	const struct strategy *s = x->s;

	emit_printf(b, "# Generated by ampplan: %s\n# model '", what);
	emit_name(b, m->name);
	emit_printf(b, "': %d layers, hidden %d, %d heads (%d kv), ffn %d, vocab %d",
		    m->layers, m->hidden, m->heads, m->kv_heads ? m->kv_heads : m->heads,
		    m->ffn, m->vocab);
	if (m->experts > 0)
		emit_printf(b, ", %d experts (top %d, ffn %d)", m->experts, m->top_k, m->moe_ffn);
	emit_printf(b, "\n# cluster '");
	emit_name(b, c->name);
	emit_printf(b, "':");
	for (int g = 0; g < c->n_group && !c->group[g].n_part; g++) {
		emit_printf(b, "%s group '", g ? "," : "");
		emit_name(b, c->group[g].name);
		emit_printf(b, "' %d x %d ", c->group[g].nodes, c->group[g].gpus_per_node);
		emit_name(b, c->gpu[c->group[g].gpu].name);
	}
	emit_printf(b, "\n# strategy: tp %d cp %d pp %d vp %d dp %d ep %d, mbs %d gbs %d (%d micro-batches), seq %d,\n"
		    "#   %s, recompute %s, zero %d, sp %s\n",
		    s->tp, s->cp, s->pp, s->vp, s->dp, s->ep, s->mbs, s->gbs,
		    s->micro_batches, s->seq, schedule_name(s->schedule),
		    recompute_name(s->recompute), s->zero, s->sp ? "on" : "off");
	emit_printf(b, "# layers/stage ");
	emit_stages(b, x);
	emit_printf(b, " on node groups");
	for (int p = 0; p < s->pp; p++) {
		emit_printf(b, "%s", p ? "," : " ");
		emit_name(b, c->group[s->group[p]].name);
	}
	emit_printf(b, " (pipeline ranks 0 to %d)\n", s->pp - 1);
	model_lines(b, m, s);
	emit_printf(b, "# the plan costed: attention %s, norms %s, FP8 GEMMs %s,\n"
		    "#   gradients %s accumulated %s,\n"
		    "#   overlapped: TP comm %s, gradient reduction %s, parameter gather %s\n",
		    attention_name(s->attn), s->unfused_norm ? "unfused" : "fused",
		    s->fp8 ? "on" : "off", grad_dtype_name(s, m->fp16),
		    s->grad_acc_unfused ? "in a pass of their own" : "in the GEMMs",
		    s->tp_overlap ? "yes" : "no", s->grad_overlap ? "yes" : "no",
		    s->param_overlap ? "yes" : "no");
}

bool emit_default_split(const struct emit_ctx *x)
{
	const struct strategy *s = x->s;
	int n = s->n_stages, per = x->m->layers / n;

	if (x->m->layers % n != 0)
		return false;
	for (int k = 1; k < n; k++)
		if (s->first[k] != 1 + k * per)
			return false;
	return true;
}

void emit_layout(struct emit_buf *b, const struct emit_ctx *x)
{
	const struct strategy *s = x->s;
	int head = x->m->layers + 1;

	for (int k = 0; k < s->n_stages; k++) {
		int lo = s->first[k], hi = s->first[k + 1];
		int blocks = (hi < head ? hi : head) - (lo > 1 ? lo : 1);

		emit_printf(b, "%s%s", k ? "|" : "", lo == 0 ? "E" : "");
		if (blocks == 1)
			emit_printf(b, "t");
		else if (blocks > 1)
			emit_printf(b, "t*%d", blocks);
		if (hi > head)
			emit_printf(b, "L");
	}
}

int emit_uniform_gpus(const struct emit_ctx *x)
{
	for (int i = 1; i < x->nodes.n; i++)
		if (x->nodes.gpus[i] != x->nodes.gpus[0])
			return 0;
	return x->nodes.gpus[0];
}

/* "0" or "0-3". */
static void range(struct emit_buf *b, int lo, int hi)
{
	if (lo == hi)
		emit_printf(b, "%d", lo);
	else
		emit_printf(b, "%d-%d", lo, hi);
}

void emit_node_runs(struct emit_buf *b, const struct emit_ctx *x)
{
	const struct trainer_nodes *n = &x->nodes;
	int rank = 0;	/* first global rank of node i */

	for (int i = 0, j; i < n->n; i = j) {
		int lo = rank;
		const struct node_group *g = &x->c->group[n->group[i]];

		for (j = i; j < n->n && n->group[j] == n->group[i]; j++)
			rank += n->gpus[j];
		emit_printf(b, "#   node rank%s ", j - i > 1 ? "s" : "");
		range(b, i, j - 1);
		emit_printf(b, ": group '");
		emit_name(b, g->name);
		emit_printf(b, "' (");
		emit_name(b, x->c->gpu[g->gpu].name);
		emit_printf(b, "), pipeline rank%s ", (rank - 1) / x->block > lo / x->block ? "s" : "");
		range(b, lo / x->block, (rank - 1) / x->block);
		emit_printf(b, "\n");
	}
}

void emit_node_env(struct emit_buf *b, const struct emit_ctx *x, const char *script)
{
	int n = x->nodes.n;
	char ranks[32];

	if (n == 1)
		snprintf(ranks, sizeof ranks, "0");
	else
		snprintf(ranks, sizeof ranks, "0 to %d", n - 1);
	emit_printf(b, "set -euo pipefail\n\n"
		    "NNODES=${NNODES:-%d}\n"
		    "NODE_RANK=${NODE_RANK:?set NODE_RANK to the rank of this node, %s (nodes.txt)}\n"
		    "MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the host of node rank 0}\n"
		    "MASTER_PORT=${MASTER_PORT:-29500}\n"
		    "if [ \"$NNODES\" != %d ]; then\n"
		    "\techo \"%s: error: the plan runs on %d node%s, not NNODES=$NNODES\" >&2\n"
		    "\texit 1\n"
		    "fi\n"
		    "if ! [[ $NODE_RANK =~ ^[0-9]+$ ]] || [ \"$NODE_RANK\" -ge \"$NNODES\" ]; then\n"
		    "\techo \"%s: error: NODE_RANK must be %s, not '$NODE_RANK'\" >&2\n"
		    "\texit 1\n"
		    "fi\n",
		    n, ranks, n, script, n, n > 1 ? "s" : "", script, ranks);
	if (emit_uniform_gpus(x))
		return;
	emit_printf(b, "# Processes per node rank (the nodes' GPU counts differ).\n"
		    "case $NODE_RANK in\n");
	for (int i = 0, j; i < n; i = j) {
		for (j = i; j < n && x->nodes.gpus[j] == x->nodes.gpus[i]; j++)
			emit_printf(b, "%s%d", j > i ? "|" : "", j);
		emit_printf(b, ") NPROC=%d ;;\n", x->nodes.gpus[i]);
	}
	emit_printf(b, "esac\n");
}

void emit_nproc(struct emit_buf *b, const struct emit_ctx *x)
{
	int g = emit_uniform_gpus(x);

	if (g)
		emit_printf(b, "--nproc-per-node %d", g);
	else
		emit_printf(b, "--nproc-per-node \"$NPROC\"");
}

/* Appends the layers of stage k as "layers 0-22". */
static void stage_range(struct emit_buf *b, const struct strategy *s, int k)
{
	emit_printf(b, "layers ");
	range(b, s->first[k], s->first[k + 1] - 1);
}

/* The node rank holding global rank r. */
static int node_of(const struct emit_ctx *x, int r)
{
	int i = 0;

	for (int end = x->nodes.gpus[0]; end <= r; end += x->nodes.gpus[++i])
		;
	return i;
}

void emit_nodes_txt(struct emit_ctx *x)
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
		range(b, lo, hi);
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
	       const struct cluster *c, const struct strategy *s, struct outfile_set *t,
	       struct err *e)
{
	struct emit_ctx x = { .m = m, .c = c, .s = s };
	int f = emit_format_parse(format), rc;

	if (f < 0)
		return err_set(e, "unknown format '%s' (megatron, torchtitan, deepspeed, nemo, slurm)",
			       format);
	if (trainer_check(format_trainer[f], m, c, s, e) ||
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
	default:
		break;
	}
	emit_nodes_txt(&x);
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
	int rc = emit_stage(format, dir, m, c, s, t, e);

	if (rc == 0)
		rc = outfile_commit(t, e);
	outfile_free(t);
	return rc;
}
