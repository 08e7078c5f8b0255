/* report_columns.c: the columns of the ranking's CSV and JSON, one list of
 * name, JSON type and value (report_columns.h). */
#include "report_columns.h"
#include "report.h"
#include "report_int.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "moe.h"
#include "plan.h"
#include "trainer.h"

/* The columns, in order: X(name, kind, value) with name the column's name
 * (an identifier, so that it is written once), kind STR, NUM or BOOL
 * (enum report_kind; YESNO: "yes" or "no") and value a statement writing the field's text to v
 * (REPORT_FIELD_MAX bytes) from rank, row, m and c (report_fields), s and r
 * (the row's strategy and cost), and priced, usd_iter and usd_mtok
 * (report_row_cost). Add columns only at the end. */
#define COLUMNS(X)                                                                                                     \
	X(rank, NUM, put_int(v, rank))                                                                                 \
	X(fits, YESNO, put_text(v, r->fits ? "yes" : "no"))                                                            \
	X(tp, NUM, put_int(v, s->tp))                                                                                  \
	X(pp, NUM, put_int(v, s->pp))                                                                                  \
	X(dp, NUM, put_int(v, s->dp))                                                                                  \
	X(cp, NUM, put_int(v, s->cp))                                                                                  \
	X(ep, NUM, put_int(v, s->ep))                                                                                  \
	X(sp, YESNO, put_text(v, s->sp ? "yes" : "no"))                                                                \
	X(micro_batch_seqs, NUM, put_int(v, s->mbs))                                                                   \
	X(micro_batches, NUM, put_int(v, s->micro_batches))                                                            \
	X(global_batch_seqs, NUM, put_int(v, s->gbs))                                                                  \
	X(seq_tokens, NUM, put_int(v, s->seq))                                                                         \
	X(schedule, STR, put_text(v, schedule_name(s->schedule)))                                                      \
	X(virtual_stages, NUM, put_int(v, s->vp))                                                                      \
	X(recompute, STR, put_text(v, recompute_name(s->recompute)))                                                   \
	X(zero_stage, NUM, put_int(v, s->zero))                                                                        \
	X(layers_per_stage, STR, report_layers(v, REPORT_FIELD_MAX, row, m))                                           \
	X(groups_per_rank, STR, report_groups(v, REPORT_FIELD_MAX, row, c))                                            \
	X(gpu_types_per_rank, STR, report_gpu_types(v, REPORT_FIELD_MAX, row, c))                                      \
	X(iteration_s, NUM, put_num(v, r->iter_s))                                                                     \
	X(tokens_per_s, NUM, put_num(v, r->tokens_per_s))                                                              \
	X(mfu_pct, NUM, put_num(v, 100.0 * r->mfu))                                                                    \
	X(peak_mem_GiB, NUM, put_num(v, r->peak_bytes / GiB))                                                          \
	X(compute_s, NUM, put_num(v, r->time.compute))                                                                 \
	X(recompute_s, NUM, put_num(v, r->time.recompute))                                                             \
	X(bubble_s, NUM, put_num(v, r->time.bubble))                                                                   \
	X(tp_comm_s, NUM, put_num(v, r->time.tp))                                                                      \
	X(cp_comm_s, NUM, put_num(v, r->time.cp))                                                                      \
	X(pp_comm_s, NUM, put_num(v, r->time.pp))                                                                      \
	X(dp_comm_s, NUM, put_num(v, r->time.dp))                                                                      \
	X(ep_comm_s, NUM, put_num(v, r->time.ep))                                                                      \
	X(optimizer_s, NUM, put_num(v, r->time.optimizer))                                                             \
	X(weights_GiB, NUM, put_num(v, r->mem.weights / GiB))                                                          \
	X(grads_GiB, NUM, put_num(v, r->mem.grads / GiB))                                                              \
	X(optimizer_GiB, NUM, put_num(v, r->mem.optimizer / GiB))                                                      \
	X(activations_GiB, NUM, put_num(v, r->mem.activations / GiB))                                                  \
	X(logits_GiB, NUM, put_num(v, r->mem.logits / GiB))                                                            \
	X(allowance_GiB, NUM, put_num(v, r->mem.allowance / GiB))                                                      \
	X(reason, STR, put_text(v, row->why))                                                                          \
	/* cost model v2: the strategy's kernels, precision and overlaps, and                           \
	 * the communication hidden under compute (not in iteration_s) */              \
	X(attention, STR, put_text(v, attention_name(s->attn)))                                                        \
	X(norm, STR, put_text(v, s->unfused_norm ? "unfused" : "fused"))                                               \
	X(fp8, BOOL, put_int(v, s->fp8))                                                                               \
	X(tp_comm_overlap, BOOL, put_int(v, s->tp_overlap))                                                            \
	X(overlap_grad_reduce, BOOL, put_int(v, s->grad_overlap))                                                      \
	X(overlap_param_gather, BOOL, put_int(v, s->param_overlap))                                                    \
	X(grad_dtype, STR, put_text(v, grad_dtype_name(s, m->fp16)))                                                   \
	X(tp_comm_hidden_s, NUM, put_num(v, r->time.tp_hidden))                                                        \
	X(cp_comm_hidden_s, NUM, put_num(v, r->time.cp_hidden))                                                        \
	X(dp_comm_hidden_s, NUM, put_num(v, r->time.dp_hidden))                                                        \
	X(grad_acc_fusion, BOOL, put_int(v, !s->grad_acc_unfused))                                                     \
	/* per pipeline rank, summed up: the fullest GPU (highest share of its                          \
	 * memory used), the slowest rank (per micro-batch), the bubble's                               \
	 * share of the iteration */              \
	X(fullest_rank, NUM, put_int(v, r->fullest_rank))                                                              \
	X(fullest_gpu, STR, put_text(v, c->gpu[c->group[s->group[r->fullest_rank]].gpu].name))                         \
	X(fullest_mem_GiB, NUM, put_num(v, r->fullest_bytes / GiB))                                                    \
	X(fullest_capacity_GiB, NUM, put_num(v, r->fullest_cap / GiB))                                                 \
	X(slowest_rank, NUM, put_int(v, r->bottleneck_rank))                                                           \
	X(slowest_fwd_ms, NUM, put_num(v, 1e3 * r->bottleneck_fwd))                                                    \
	X(slowest_bwd_ms, NUM, put_num(v, 1e3 * r->bottleneck_bwd))                                                    \
	X(slowest_p2p_ms, NUM, put_num(v, 1e3 * r->bottleneck_send))                                                   \
	X(bubble_pct, NUM, put_num(v, r->iter_s > 0 ? 100.0 * r->time.bubble / r->iter_s : 0.0))                       \
	/* price: the GPUs the strategy uses (fewer than the cluster's when                             \
	 * --objective cost leaves node groups idle) and what it costs at the                           \
	 * groups' price_per_gpu_hour (empty in the CSV, null in the JSON,                              \
	 * when a group it uses has none) */              \
	X(gpus_used, NUM, put_int(v, s->tp * s->cp * s->dp * s->pp))                                                   \
	X(cost_per_iteration_usd, NUM, priced ? put_num(v, usd_iter) : put_text(v, ""))                                \
	X(cost_per_million_tokens_usd, NUM, priced ? put_num(v, usd_mtok) : put_text(v, ""))                           \
	/* the trainers whose launch files run the strategy as planned,                                 \
	 * comma-separated, or "none" when it is planning only */              \
	X(trainers, STR, trainer_mask_names(row->trainers, v, REPORT_FIELD_MAX))                                       \
	/* context parallelism's flavour: p2p, a2a or a2a+p2p (empty without                            \
	 * CP), and the all-to-all's size for a2a+p2p (empty otherwise) */              \
	X(cp_comm_type, STR, put_text(v, s->cp > 1 ? cp_comm_name(s->cp_comm) : ""))                                   \
	X(cp_a2a_size, NUM, s->cp > 1 && s->cp_comm == CP_A2A_P2P ? put_int(v, s->cp_a2a) : put_text(v, ""))           \
	/* MoE models (empty for dense ones): the balancing loss's scope                                \
	 * (micro-batch or global-batch), the capacity factor (empty:                                   \
	 * dropless) and the busiest EP rank's load over the mean (moe.h) */              \
	X(moe_balance, STR, put_text(v, m->experts ? moe_balance_name(s->moe_balance) : ""))                           \
	X(moe_capacity_factor, NUM, m->experts && s->moe_capacity > 0 ? put_num(v, s->moe_capacity) : put_text(v, "")) \
	X(moe_load_factor, NUM, m->experts ? put_num(v, moe_load_factor(m, s)) : put_text(v, ""))                      \
	/* MoE models: the expert tensor-parallel degree (empty for dense) */                                          \
	X(etp, NUM, m->experts ? put_int(v, strategy_etp(s)) : put_text(v, ""))                                        \
	/* planning options: vocabulary parallelism (on/off) and its exposed                            \
	 * collectives, SlimPipe's slices per micro-batch (1: none) */              \
	X(vocab_parallel, BOOL, put_int(v, s->vocab_par))                                                              \
	X(vocab_comm_s, NUM, put_num(v, r->time.vocab))                                                                \
	X(slimpipe_slices, NUM, put_int(v, strategy_slices(s)))                                                        \
	/* the EP all-to-all hidden under the paired micro-batch's compute                              \
	 * (DualPipe, DualPipeV; 0 otherwise), not in iteration_s */              \
	X(ep_comm_hidden_s, NUM, put_num(v, r->time.ep_hidden))                                                        \
	/* planning option: uneven micro-batches per DP replica of the mixed                            \
	 * rank, GROUP:RxN terms (report_uneven_label; empty: even) */              \
	X(uneven_batches, STR, report_uneven_label(v, REPORT_FIELD_MAX, s, c))                                         \
	/* the model's parameters, all and those one token runs through        \
	 * (model_active_params; the same for a dense model) */                                       \
	X(params_total, NUM, put_count(v, model_params(m)))                                                            \
	X(params_active, NUM, put_count(v, model_active_params(m)))                                                    \
	/* the peak mfu_pct is against: bf16 on every row (cost_result.mfu),   \
	 * FP8 rows included */                                       \
	X(mfu_peak, STR, put_text(v, "bf16"))                                                                          \
	/* each trainer's seconds per iteration for the strategy, with its own                          \
	 * features (trainer_features; empty or null where it cannot run it) */              \
	X(megatron_iteration_s, NUM, put_trainer(v, row, TRAINER_MEGATRON))                                            \
	X(torchtitan_iteration_s, NUM, put_trainer(v, row, TRAINER_TORCHTITAN))                                        \
	X(deepspeed_iteration_s, NUM, put_trainer(v, row, TRAINER_DEEPSPEED))                                          \
	X(nemo_iteration_s, NUM, put_trainer(v, row, TRAINER_NEMO))                                                    \
	/* the node groups the strategy leaves idle (plan_row_idle), comma-                              \
	 * separated; empty where it uses every group */             \
	X(groups_idle, STR, put_idle(v, c, s))                                                                         \
	/* cost model v3: the Adam moments' dtype (fp32 or bf16) */                                                    \
	X(optim_dtype, STR, put_text(v, optim_dtype_name(s)))                                                          \
	/* MoE: the EP all-to-all overlapped with another micro-batch (on/off) */                                      \
	X(ep_overlap, BOOL, put_int(v, s->ep_overlap))                                                                 \
	/* MoE: the local experts as one grouped GEMM (on/off; empty for dense) */                                     \
	X(moe_grouped_gemm, BOOL, m->experts ? put_int(v, s->grouped_gemm) : put_text(v, ""))                          \
	/* what selective recomputation reruns, '+'-joined (empty without it) */                                       \
	X(recompute_modules, STR, recompute_modules_name(strategy_rc_modules(s), '+', v, REPORT_FIELD_MAX))            \
	/* MoE with a capacity factor: inputs padded to capacity (on/off; empty otherwise) */                          \
	X(moe_pad_capacity, BOOL, m->experts && s->moe_capacity > 0 ? put_int(v, s->moe_pad) : put_text(v, ""))        \
	/* MoE: the token dispatcher (alltoall, allgather, flex; empty for dense) */                                   \
	X(moe_dispatcher, STR, put_text(v, m->experts ? moe_dispatcher_name(s->moe_dispatcher) : ""))                  \
	/* the micro-batches whose LM-head weight gradients wait for the       \
	 * pipeline flush (strategy_deferred; 0: none) */                                       \
	X(deferred_wgrad_micro_batches, NUM, put_int(v, strategy_deferred(s)))                                         \
	/* recompute_s by module of selective recomputation, MODULE:SECONDS   \
	 * '+'-joined (empty without it) */                                        \
	X(recompute_by_module, STR, put_modules(v, s, r))                                                              \
	/* fine-grained activation offloading (planning only): its modules,    \
	 * '+'-joined (empty without it), its host copies exposed and hidden   \
	 * under compute (seconds per iteration, the exposed in iteration_s),  \
	 * and the heaviest rank's bytes in host memory */                                       \
	X(offload_modules, STR, offload_modules_name(s->offload_modules, '+', v, REPORT_FIELD_MAX))                    \
	X(offload_copy_s, NUM, put_num(v, r->time.offload))                                                            \
	X(offload_copy_hidden_s, NUM, put_num(v, r->time.offload_hidden))                                              \
	X(offloaded_GiB, NUM, put_num(v, r->mem.offloaded / GiB))                                                      \
	/* of dp_comm_s, the tied embedding's gradient all-reduce between the  \
	 * first and the last pipeline rank (0: none) */                                       \
	X(tied_allreduce_s, NUM, put_num(v, r->time.tied))

#define ROW(name, kind, value) { #name, REPORT_##kind },
const struct report_column report_columns[] = { COLUMNS(ROW) };
#undef ROW
const size_t report_n_columns = sizeof report_columns / sizeof report_columns[0];

/* Appends the decimal digits of u (at least width of them) at p; returns
 * the end. */
static char *put_digits(char *p, unsigned long u, int width)
{
	char d[24];
	int n = 0;

	do {
		d[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u || n < width);
	while (n)
		*p++ = d[--n];
	return p;
}

/* A field's text: an integer, a number with 6 significant digits, a
 * whole number, a text (cut to REPORT_FIELD_MAX - 1 bytes); as "%d",
 * "%.6g", "%.0f" and "%s" write them, without printf (a CSV of 500,000
 * rows formats 40 million fields). */
static void put_int(char *v, int x)
{
	if (x < 0)
		*v++ = '-';
	*put_digits(v, x < 0 ? 0ul - (unsigned long)x : (unsigned long)x, 1) = '\0';
}
static void put_num(char *v, double x)
{
	report_g6(v, x);
}
static void put_count(char *v, double x)
{
	if (x >= 0 && x < 1e18 && x == floor(x))
		*put_digits(v, (unsigned long)x, 1) = '\0';
	else
		snprintf(v, REPORT_FIELD_MAX, "%.0f", x);
}
static void put_text(char *v, const char *x)
{
	size_t n = strlen(x);

	if (n >= REPORT_FIELD_MAX)
		n = REPORT_FIELD_MAX - 1;
	memcpy(v, x, n);
	v[n] = '\0';
}
static void put_trainer(char *v, const struct plan_row *row, enum trainer t)
{
	if (row->trainer_s[t] > 0)
		put_num(v, row->trainer_s[t]);
	else
		put_text(v, "");
}

/* The names of the real node groups of c on which s uses no GPU
 * (plan_row_idle), comma-separated, in the cluster's order. */
static void put_idle(char *v, const struct cluster *c, const struct strategy *s)
{
	unsigned idle = plan_row_idle(c, s);
	size_t at = 0;

	v[0] = 0;
	for (int g = 0; g < c->n_group && at < REPORT_FIELD_MAX; g++)
		if (idle >> g & 1)
			at += (size_t)snprintf(v + at, REPORT_FIELD_MAX - at, "%s%s", at ? "," : "",
					       c->group[g].name);
}

/* The modules s reruns with their seconds of r's recompute_s, as
 * "core_attn:0.148+layernorm:0.0101" (report_g6's digits); "" without
 * selective recomputation. */
static void put_modules(char *v, const struct strategy *s, const struct cost_result *r)
{
	unsigned mods = strategy_rc_modules(s);
	size_t at = 0;

	v[0] = 0;
	for (int i = 0; i < RM_COUNT && at + 64 < REPORT_FIELD_MAX; i++) {
		char name[32], num[32];

		if (!(mods >> i & 1))
			continue;
		recompute_modules_name(1u << i, '+', name, sizeof name);
		report_g6(num, r->time.recompute_mod[i]);
		at += (size_t)snprintf(v + at, REPORT_FIELD_MAX - at, "%s%s:%s", at ? "+" : "", name, num);
	}
}

void report_fields(char (*f)[REPORT_FIELD_MAX], int rank, const struct plan_row *row,
		   const struct model *m, const struct cluster *c)
{
	const struct strategy *s = &row->s;
	const struct cost_result *r = &row->r;
	double usd_iter = 0, usd_mtok = 0;
	bool priced = report_row_cost(row, &usd_iter, &usd_mtok);
	size_t i = 0;
	char *v;

#define FIELD(name, kind, value) \
	v = f[i++];              \
	value;
	COLUMNS(FIELD)
#undef FIELD
}

/* Exact powers of ten (as doubles, 10^0 to 10^22). */
static const double pow10_exact[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
				      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

void report_g6(char *buf, double v)
{
	double a = fabs(v), scaled, whole, frac;
	int x, k, digits;
	unsigned long m;
	char six[8], *p = buf;

	if (v == 0 || !isfinite(v)) {
		snprintf(buf, REPORT_FIELD_MAX, "%.6g", v); /* 0, -0, inf, nan */
		return;
	}
	x = (int)floor(log10(a));
	k = 5 - x; /* scaled = a x 10^k holds 6 digits before the point */
	if (k < -22 || k > 22)
		goto slow;
	scaled = k >= 0 ? a * pow10_exact[k] : a / pow10_exact[-k];
	if (scaled < 100000.0 || scaled >= 1000000.0) /* log10 was off by one */
		goto slow;
	whole = floor(scaled);
	frac = scaled - whole;
	if (fabs(frac - 0.5) < 1e-6) /* too close to a tie to round here */
		goto slow;
	m = (unsigned long)whole + (frac > 0.5);
	if (m == 1000000) { /* rounded up to the next power of ten */
		m = 100000;
		x++;
	}
	put_digits(six, m, 6);
	for (digits = 6; digits > 1 && six[digits - 1] == '0'; digits--)
		; /* %g drops trailing zeros */
	if (v < 0)
		*p++ = '-';
	if (x >= -4 && x < 6) { /* fixed: x + 1 digits before the point */
		if (x < 0) {
			*p++ = '0';
			*p++ = '.';
			for (int i = 0; i < -x - 1; i++)
				*p++ = '0';
			memcpy(p, six, (size_t)digits);
			p += digits;
		} else {
			memcpy(p, six, (size_t)x + 1);
			p += x + 1;
			if (digits > x + 1) {
				*p++ = '.';
				memcpy(p, six + x + 1, (size_t)(digits - x - 1));
				p += digits - x - 1;
			}
		}
	} else { /* d.ddddde+XX */
		*p++ = six[0];
		if (digits > 1) {
			*p++ = '.';
			memcpy(p, six + 1, (size_t)digits - 1);
			p += digits - 1;
		}
		*p++ = 'e';
		*p++ = x < 0 ? '-' : '+';
		p = put_digits(p, (unsigned long)abs(x), 2);
	}
	*p = '\0';
	return;
slow:
	snprintf(buf, REPORT_FIELD_MAX, "%.6g", v);
}
