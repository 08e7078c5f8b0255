/* emit_titan.h: (internal) the torchtitan writer (emit_titan.c), which the
 * dispatcher (emit.c) calls. */
#ifndef AMPPLAN_EMIT_TITAN_H
#define AMPPLAN_EMIT_TITAN_H

struct emit_ctx;

/* Adds train.toml (torchtitan v0.2.2's job config) and run.sh, its
 * torchrun launch run once per node. */
void emit_titan(struct emit_ctx *x);

#endif
