/* trainer.h: the training frameworks ampplan writes launch configs for, the
 * checks each one's own code makes on a strategy (TRAINERS.md), and the node
 * order a launch must follow so that each GPU type gets the stages the plan
 * gave it. */
#ifndef AMPPLAN_TRAINER_H
#define AMPPLAN_TRAINER_H

#include <stdbool.h>
#include <stddef.h>

struct err;
struct model;
struct cluster;
struct strategy;

enum trainer {
	TRAINER_MEGATRON,   /* Megatron-LM pretrain_gpt.py */
	TRAINER_TORCHTITAN, /* torchtitan v0.2.2 (TOML job config) */
	TRAINER_DEEPSPEED,  /* DeepSpeed JSON config + PipelineModule */
	TRAINER_NEMO,	    /* NeMo 2.0 / Megatron Bridge overrides */
	TRAINER_COUNT
};

/* What a trainer may switch on for a strategy (trainer_allows). */
enum trainer_feature {
	FEATURE_FP8,		 /* FP8 GEMMs */
	FEATURE_TP_OVERLAP,	 /* TP communication under the GEMMs */
	FEATURE_GRAD_OVERLAP,	 /* DP gradient reduction under the backward */
	FEATURE_PARAM_OVERLAP,	 /* ZeRO parameter gathers under the forward */
	FEATURE_GRAD_ACC_FUSION, /* gradient accumulation inside the
				    weight-gradient GEMMs */
	FEATURE_FP8_PER_LAYER,	 /* FP8 on some blocks, BF16 on the first
				    and last ones (cluster_bf16_blocks) */
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
 * EP, the trainer's schedules and ZeRO stages, and the model features the
 * trainer can build (Megatron-LM and NeMo: no parallel attention + MLP
 * blocks, no extra norms per block, windows on every layer or none, rope
 * scaling only Llama 3's with its fixed factors or MLA's YaRN; torchtitan:
 * only the models it ships, trainer_titan_model). m->layer is not read.
 * Returns 0, or -1 with e naming the trainer and the rule, e.g.
 * "megatron: num_query_groups (8) must be divisible by tp (16) or divide it". */
int trainer_check(enum trainer t, const struct model *m, const struct cluster *c,
		  const struct strategy *s, struct err *e);

/* The rule torchtitan main (2026-08) adds to trainer_check's torchtitan
 * rules (the v0.2.2 ones): no expert tensor parallelism, so an MoE plan
 * with etp > 1 (strategy_etp) is refused. Returns 0, or -1 with e set to
 * "torchtitan: main (2026-08) has no expert tensor parallelism: ...". */
int trainer_titan_main_check(const struct model *m, const struct strategy *s, struct err *e);

/* The trainers that run strategy s of model m on cluster c as it is: bit
 * (1u << t) set for each enum trainer t whose trainer_check passes. The
 * ranking's "trainers" column: trainer_mask_names(trainer_mask(m, c, s), buf,
 * sizeof buf). Costs one trainer_check per trainer (no allocation kept). */
unsigned trainer_mask(const struct model *m, const struct cluster *c,
		      const struct strategy *s);

/* Why trainer t cannot run s: writes trainer_check's message, which names
 * the trainer and the rule ("megatron: ZeRO stage 3 has no flag; the
 * distributed optimizer is ZeRO-1 (gradients stay whole)"), into buf (n
 * bytes, truncated, NUL-terminated when n > 0) and returns buf; returns NULL
 * when t runs s. */
const char *trainer_refusal(enum trainer t, const struct model *m, const struct cluster *c,
			    const struct strategy *s, char *buf, size_t n);

/* Writes the names of the trainers in mask, in enum order and separated by
 * commas ("megatron,nemo"), or "none", into buf (n bytes, truncated;
 * 40 bytes hold all four). Returns buf. */
const char *trainer_mask_names(unsigned mask, char *buf, size_t n);

/* The torchtitan v0.2.2 model that trains m: returns its model.name
 * ("llama3", "qwen3", "deepseek_v3", "llama4") and sets *flavor to the
 * flavor of m's dimensions ("70B"), or returns NULL when torchtitan ships
 * no such model (trainer_check then refuses every plan of m for
 * torchtitan). */
const char *trainer_titan_model(const struct model *m, const char **flavor);

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
	int n;	    /* node ranks */
	int *group; /* [n] node group (index into cluster.group) */
	int *gpus;  /* [n] processes on the node, <= its GPUs per node */
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
