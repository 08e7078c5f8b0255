/* emit_deepspeed.h: (internal) the DeepSpeed writer (emit_deepspeed.c),
 * which the dispatcher (emit.c) calls. */
#ifndef AMPPLAN_EMIT_DEEPSPEED_H
#define AMPPLAN_EMIT_DEEPSPEED_H

struct emit_ctx;

/* Adds ds_config.json and launch.sh, the deepspeed launcher's script run
 * once on node rank 0, whose comment gives what is code, not JSON. */
void emit_deepspeed(struct emit_ctx *x);

#endif
