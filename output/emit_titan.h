/* emit_titan.h: (internal) the torchtitan writer (emit_titan.c), which the
 * dispatcher (emit.c) calls. */
#ifndef AMPPLAN_EMIT_TITAN_H
#define AMPPLAN_EMIT_TITAN_H

#include <stdbool.h>

#include "strategy.h"

struct emit_buf;
struct emit_ctx;

/* Adds train.toml (torchtitan v0.2.2's job config) and run.sh, its
 * torchrun launch run once per node. */
void emit_titan(struct emit_ctx *x);

/* Adds config.py (torchtitan main's Python config; emit_titan_main.c) and
 * run.sh. */
void emit_titan_main(struct emit_ctx *x);

/* Shared by both torchtitan writers: torchtitan's names of the schedules
 * it runs (pipeline_parallel_schedule; NULL for the others) and of the
 * recomputation modes (activation_checkpoint mode). */
extern const char *const emit_titan_sched[SCHED_COUNT];
extern const char *const emit_titan_ac[RECOMPUTE_COUNT];

/* Appends s as a double-quoted string, TOML's basic string and a Python
 * literal alike ('"' and '\\' escaped, control characters as \uXXXX). */
void emit_titan_string(struct emit_buf *b, const char *s);

/* Appends open, then module_fqns_per_model_part's value (one list of module
 * names per stage, in stage order: tok_embeddings, layers.<i>, norm and
 * output for the head; TOML and Python alike), then close and a newline. */
void emit_titan_fqns(struct emit_buf *b, const struct emit_ctx *x, const char *open,
		     const char *close);

/* Whether the launch turns torch.compile on: async TP needs it, torchao's
 * float8 casts run fused only under it, and it fuses the norms, RoPE and
 * the SwiGLU product (eager kernels otherwise); so on unless the plan
 * costed eager kernels and neither FP8 nor TP overlap. */
bool emit_titan_compiled(const struct strategy *s);

#endif
