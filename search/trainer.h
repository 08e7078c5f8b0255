/* trainer.h: the training frameworks ampplan writes launch configs for, the
 * checks each one's own code makes on a strategy (TRAINERS.md), and the node
 * order a launch must follow so that each GPU type gets the stages the plan
 * gave it. */
#ifndef AMPPLAN_TRAINER_H
#define AMPPLAN_TRAINER_H

#include <stdbool.h>

struct err;
struct model;
struct cluster;
struct strategy;

enum trainer {
	TRAINER_MEGATRON,	/* Megatron-LM pretrain_gpt.py */
	TRAINER_TORCHTITAN,	/* torchtitan v0.2.2 (TOML job config) */
	TRAINER_DEEPSPEED,	/* DeepSpeed JSON config + PipelineModule */
	TRAINER_NEMO,		/* NeMo 2.0 / Megatron Bridge overrides */
	TRAINER_COUNT
};

/* What a trainer may switch on for a strategy (trainer_allows). */
enum trainer_feature {
	FEATURE_FP8,		/* FP8 GEMMs */
	FEATURE_TP_OVERLAP,	/* TP communication under the GEMMs */
	FEATURE_GRAD_OVERLAP,	/* DP gradient reduction under the backward */
	FEATURE_PARAM_OVERLAP,	/* ZeRO parameter gathers under the forward */
	FEATURE_GRAD_ACC_FUSION, /* gradient accumulation inside the
				    weight-gradient GEMMs */
};

/* "megatron", "torchtitan", "deepspeed", "nemo". */
const char *trainer_name(enum trainer t);
/* Returns the enum value, or -1 for an unknown name. */
int trainer_parse(const char *name);

/* Checks that trainer t runs strategy s of model m on cluster c as it is:
 * the strategy is well formed (first[] covers the m->layers + 2 layers of
 * the model in non-empty stages, group[] names groups of c), and every rule
 * of TRAINERS.md holds: world size fits the node groups, batch divisibility,
 * heads / kv heads / ffn vs TP, seq vs CP, SP needs tp > 1, interleaving
 * needs micro-batches >= pp, tp divides the GPUs per node, MoE experts vs
 * EP, the trainer's schedules and ZeRO stages. m->layer is not read.
 * Returns 0, or -1 with e naming the trainer and the rule, e.g.
 * "megatron: num_query_groups (8) must be divisible by tp (16) or divide it". */
int trainer_check(enum trainer t, const struct model *m, const struct cluster *c,
		  const struct strategy *s, struct err *e);

/* Whether trainer t (an enum trainer, or -1 for none, read as Megatron-LM)
 * runs feature f for strategy s as the search would set it (reads tp, sp,
 * zero and, for FEATURE_PARAM_OVERLAP, grad_overlap). The search turns each
 * overlap on where this allows it; it says nothing of a feature the user
 * fixed (the launch files then say what they can and cannot set). */
bool trainer_allows(int t, enum trainer_feature f, const struct strategy *s);

/* The nodes of a launch, by node rank. Global ranks follow Megatron's
 * "tp-cp-dp-pp" order (torchtitan's mesh pp, dp, cp, tp and DeepSpeed's
 * pipe, data, model give the same), so pipeline rank p owns the global ranks
 * [p*B, (p+1)*B) with B = tp*cp*dp, and node rank i owns the gpus[i] global
 * ranks that follow those of the lower node ranks (torchrun). */
struct trainer_nodes {
	int n;		/* node ranks */
	int *group;	/* [n] node group (index into cluster.group) */
	int *gpus;	/* [n] processes on the node, <= its GPUs per node */
};

/* Assigns the global ranks of s to nodes in rank order: pipeline rank p takes
 * B GPUs from nodes of group s->group[p], filling a node before opening the
 * next one; a node is not shared between groups, so at a change of group the
 * open node may stay partly used. Assumes tp divides the GPUs per node of
 * every group used and that s->group[0..pp-1] name groups of c
 * (trainer_check tests both first); the former keeps TP groups inside
 * nodes. Returns 0 with *out filled (free with trainer_nodes_free), or -1
 * with e set to e.g. "world size 64 (tp*cp*pp*dp) needs 5 nodes of group
 * 'h100', which has 4" (*out then holds nothing to free). */
int trainer_nodes(struct trainer_nodes *out, const struct cluster *c,
		  const struct strategy *s, struct err *e);

/* Frees the arrays; NULL-safe, and safe on a zeroed struct. */
void trainer_nodes_free(struct trainer_nodes *n);

#endif
