/* emit_util.c: the pieces the launch-file writers share (emit_util.h): the
 * text buffer, the common header, Megatron's stage layout, the node checks
 * of the launch scripts. */
#include "emit_util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "model.h"
#include "moe.h"
#include "strategy.h"
#include "util.h"

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
	return strcmp(m->model_type, "deepseek_v2") == 0 || strcmp(m->model_type, "deepseek_v3") == 0
		       ? "seq_aux_loss"
		       : "aux_loss";
}

/* Appends the model lines of the header: what the cost model counted of the
 * architecture, which the launch files set where their trainer has a
 * setting. */
static void model_lines(struct emit_buf *b, const struct model *m, const struct strategy *s)
{
	const struct rope_scaling *r = &m->rope_scaling;
	int kv = m->kv_heads ? m->kv_heads : m->heads, moe = 0;

	emit_printf(b, "# the model as costed (the trainer must build the same):\n"
		       "#   norm %s, eps ",
		    emit_layernorm(m) ? "LayerNorm" : "RMSNorm");
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
		    m->bias ? "on every linear layer" : m->qkv_bias ? "on q, k, v only"
								    : "none",
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
			    m->sliding_every == 2 ? "nd" : m->sliding_every == 3 ? "rd"
										 : "th");
	emit_printf(b, "\n#   MLP %s, embeddings %s, vocabulary %d unpadded\n",
		    m->ffn_kind == FFN_SWIGLU ? "SwiGLU" : m->ffn_kind == FFN_GELU ? "GeLU"
										   : "squared ReLU",
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
		       "#   the busiest EP rank at %.3f x the mean load",
		    emit_balance(m, s),
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
	if (x->row_line) {
		emit_printf(b, "# row:\n#");
		emit_name(b, x->row_line);
		emit_printf(b, "\n");
	}
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

void emit_range(struct emit_buf *b, int lo, int hi)
{
	if (lo == hi)
		emit_printf(b, "%d", lo);
	else
		emit_printf(b, "%d-%d", lo, hi);
}

void emit_node_runs(struct emit_buf *b, const struct emit_ctx *x)
{
	const struct trainer_nodes *n = &x->nodes;
	int rank = 0; /* first global rank of node i */

	for (int i = 0, j; i < n->n; i = j) {
		int lo = rank;
		const struct node_group *g = &x->c->group[n->group[i]];

		for (j = i; j < n->n && n->group[j] == n->group[i]; j++)
			rank += n->gpus[j];
		emit_printf(b, "#   node rank%s ", j - i > 1 ? "s" : "");
		emit_range(b, i, j - 1);
		emit_printf(b, ": group '");
		emit_name(b, g->name);
		emit_printf(b, "' (");
		emit_name(b, x->c->gpu[g->gpu].name);
		emit_printf(b, "), pipeline rank%s ", (rank - 1) / x->block > lo / x->block ? "s" : "");
		emit_range(b, lo / x->block, (rank - 1) / x->block);
		emit_printf(b, "\n");
	}
}

/* The model of a GPU type as nvidia-smi's name holds it: the type's name
 * up to its first '-' or space, upper case ("H100-SXM5-80GB": "H100",
 * "a100": "A100"), into buf (n bytes, shell-safe characters only). */
static void gpu_model(char *buf, size_t n, const char *name)
{
	size_t k = 0;

	for (; name && *name && *name != '-' && *name != ' ' && k + 1 < n; name++)
		if (isalnum((unsigned char)*name))
			buf[k++] = (char)toupper((unsigned char)*name);
	buf[k] = '\0';
}

/* The check that this node has the GPU type nodes.txt gives its rank:
 * every GPU nvidia-smi lists (--query-gpu=name,memory.total) must name the
 * type's model (gpu_model) and hold at least 97% of its memory (nvidia-smi
 * counts MiB; a type without memory is not checked for it); else the
 * script stops with an error naming both. Without nvidia-smi it stops
 * too; AMPPLAN_NO_GPU_CHECK=1 skips the check (other vendors, or a type
 * whose name does not hold its model). Node ranks on a GPU type of another
 * vendor than NVIDIA are not checked. */
static void gpu_check(struct emit_buf *b, const struct emit_ctx *x, const char *script)
{
	int n = x->nodes.n;

	emit_printf(b, "# This node must have the GPU type nodes.txt gives its rank (nvidia-smi;\n"
		       "# AMPPLAN_NO_GPU_CHECK=1 skips the check).\n"
		       "case $NODE_RANK in\n");
	for (int i = 0, j; i < n; i = j) {
		const struct gpu_type *g = &x->c->gpu[x->c->group[x->nodes.group[i]].gpu];
		char model[32];

		for (j = i; j < n && x->c->group[x->nodes.group[j]].gpu == x->c->group[x->nodes.group[i]].gpu;
		     j++)
			emit_printf(b, "%s%d", j > i ? "|" : "", j);
		gpu_model(model, sizeof model, g->name);
		if (g->vendor != VENDOR_NVIDIA || !model[0]) {
			emit_printf(b, ") GPU_MODEL= ;;\n");
			continue;
		}
		emit_printf(b, ") GPU_MODEL=%s GPU_MIB=%.0f GPU_TYPE='", model, g->mem_bytes / 1048576.0);
		for (const char *p = g->name; *p; p++) /* nothing that ends the quotes */
			emit_printf(b, "%c", isalnum((unsigned char)*p) || strchr("-_.+ ", *p) ? *p : '?');
		emit_printf(b, "' ;;\n");
	}
	emit_printf(b, "esac\n"
		       "if [ -n \"$GPU_MODEL\" ] && [ \"${AMPPLAN_NO_GPU_CHECK:-0}\" != 1 ]; then\n"
		       "\tif ! smi=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits 2>&1); then\n"
		       "\t\techo \"%s: error: node rank $NODE_RANK needs $GPU_TYPE GPUs (nodes.txt), and nvidia-smi fails: $smi (AMPPLAN_NO_GPU_CHECK=1 skips the check)\" >&2\n"
		       "\t\texit 1\n"
		       "\tfi\n"
		       "\twhile IFS=, read -r name mib; do\n"
		       "\t\tmib=${mib// /}\n"
		       "\t\tif [[ ${name^^} != *\"$GPU_MODEL\"* ]] || ! [[ $mib =~ ^[0-9]+$ ]] ||\n"
		       "\t\t\t[ $((mib * 100)) -lt $((GPU_MIB * 97)) ]; then\n"
		       "\t\t\techo \"%s: error: node rank $NODE_RANK needs $GPU_TYPE GPUs (nodes.txt), but this node has '$name' with $mib MiB (AMPPLAN_NO_GPU_CHECK=1 skips the check)\" >&2\n"
		       "\t\t\texit 1\n"
		       "\t\tfi\n"
		       "\tdone <<<\"$smi\"\n"
		       "fi\n",
		    script, script);
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
	if (!emit_uniform_gpus(x)) {
		emit_printf(b, "# Processes per node rank (the nodes' GPU counts differ).\n"
			       "case $NODE_RANK in\n");
		for (int i = 0, j; i < n; i = j) {
			for (j = i; j < n && x->nodes.gpus[j] == x->nodes.gpus[i]; j++)
				emit_printf(b, "%s%d", j > i ? "|" : "", j);
			emit_printf(b, ") NPROC=%d ;;\n", x->nodes.gpus[i]);
		}
		emit_printf(b, "esac\n");
	}
	gpu_check(b, x, script);
}

void emit_nproc(struct emit_buf *b, const struct emit_ctx *x)
{
	int g = emit_uniform_gpus(x);

	if (g)
		emit_printf(b, "--nproc-per-node %d", g);
	else
		emit_printf(b, "--nproc-per-node \"$NPROC\"");
}
