/* emit_megatron.h: (internal) the Megatron-LM family's writers
 * (emit_megatron.c), which the dispatcher (emit.c) calls. */
#ifndef AMPPLAN_EMIT_MEGATRON_H
#define AMPPLAN_EMIT_MEGATRON_H

struct emit_ctx;

/* Adds launch.sh: the torchrun launch of Megatron-LM's pretrain_gpt.py,
 * run once per node, with the model's shape and the plan as flags. */
void emit_megatron(struct emit_ctx *x);

/* Adds job.sbatch: a Slurm job that runs launch.sh (emit_megatron) on
 * every node, each with its node rank. */
void emit_slurm(struct emit_ctx *x);

/* Adds overrides.txt: the same settings as launch.sh, as NeMo 2.0 /
 * Megatron Bridge config fields, Hydra style. */
void emit_nemo(struct emit_ctx *x);

#endif
