/* cluster.h: a GPU cluster as groups of identical nodes. Bandwidths are bytes/s
 * and latencies seconds, converted once at load time from the file's units
 * (input/cluster_read.h reads the file). */
#ifndef AMPPLAN_CLUSTER_H
#define AMPPLAN_CLUSTER_H

#include <stdbool.h>

struct strategy;

/* A GPU's maker, which fixes its collective library: NCCL for NVIDIA,
 * RCCL for AMD. One training job runs one of them. */
enum gpu_vendor { VENDOR_NVIDIA,
		  VENDOR_AMD };

/* A GPU type with its calibrated compute efficiency. The achieved fraction of
 * peak for a GEMM of w FLOPs on one GPU is eff_max * w / (w + eff_half_flop)
 * (compute_eff). */
struct gpu_type {
	char *name;
	double peak_flops;	/* dense bf16 FLOP/s */
	double mem_bytes;	/* HBM capacity */
	double hbm_bw;		/* bytes/s */
	double eff_max;		/* in (0, 1] */
	double eff_half_flop;	/* FLOP; 0 = constant efficiency eff_max */
	double peak_fp8_flops;	/* dense FP8 FLOP/s; 0 = no FP8 GEMMs */
	double fp8_eff_max;	/* FP8 GEMMs' eff_max (half point scaled by
				   peak_fp8_flops / peak_flops) */
	double flash_eff;	/* fraction of peak_flops a flash attention
				   forward reaches (FlashAttention-3 / cuDNN on
				   Hopper run faster than FA-2 on Ampere);
				   0 = FLASH_RATE x eff_max (compute.h) */
	double hbm_eff;		/* fraction of hbm_bw memory-bound kernels
				   reach ("hbm_efficiency"); 0 =
				   COMPUTE_HBM_EFF (compute.h) */
	enum gpu_vendor vendor; /* "vendor"; default NVIDIA */
	double link_bw;		/* bytes/s per GPU, one direction, of its
				   peer link inside a node (NVLink, Infinity
				   Fabric, or PCIe); the default of its
				   groups' intra_bw; 0 = not given */
	double host_bw;		/* bytes/s, one direction, of its link to the
				   host's memory (PCIe: what activation
				   offloading copies over); 0 = not given */
};

/* Most real node groups a mixed group draws on. */
#define CLUSTER_MAX_PARTS 16

/* nodes identical nodes of gpus_per_node GPUs of type gpu; or, with
 * n_part > 0, a mixed group (cluster_mix): one pipeline rank of stage_gpus
 * GPUs whose data-parallel replicas lie on part_gpus[i] GPUs of real group
 * part_group[i] each: costed at the slowest part's type per layer, the
 * least memory (gpu, cluster_group_mem) and the slowest links. */
struct node_group {
	char *name;
	int nodes, gpus_per_node;
	int gpu;	 /* index into cluster.gpu */
	double intra_bw; /* per GPU, one direction, inside the node */
	double intra_lat;
	double inter_bw; /* per node, one direction, shared by its GPUs */
	double inter_lat;
	double intra_eff, inter_eff;	   /* fraction of the link NCCL reaches */
	int fabric;			   /* groups with equal fabric share a network */
	double price_gpu_hour;		   /* USD per GPU-hour ("price_per_gpu_hour");
				   0: not given */
	int n_part;			   /* 0: a real group; > 0: a mixed one */
	int stage_gpus;			   /* mixed: the GPUs of the rank it hosts */
	int part_group[CLUSTER_MAX_PARTS]; /* mixed: real groups */
	int part_gpus[CLUSTER_MAX_PARTS];  /* mixed: GPUs of each */
};

/* A cluster. Owns all its memory. */
struct cluster {
	char *name;
	struct gpu_type *gpu;
	int n_gpu;
	struct node_group *group;
	int n_group;	  /* real groups first, then any mixed ones */
	double fabric_bw; /* per node, one direction, between groups on
				   different fabrics */
	double fabric_lat;
	int total_gpus;
	double mem_allowance; /* bytes per GPU reserved for the CUDA context,
				   NCCL and the allocator, set by the user in
				   place of the cost model's estimate (memory.h
				   MEM_CONTEXT_BYTES, MEM_FRAG_SHARE); < 0:
				   the estimate (cluster_load's default) */
};

/* Frees c and everything it owns. free(NULL)-safe. */
void cluster_free(struct cluster *c);

/* A copy of c with only the node groups whose bit is set in mask (bit g for
 * c->group[g]; at least one set), in their order, every GPU type, the
 * fabric numbers and the link between fabrics kept; total_gpus counts the
 * groups kept. Caller frees with cluster_free. */
struct cluster *cluster_subset(const struct cluster *c, unsigned mask);

/* A copy of c (its real groups only) with the mixed groups added that
 * pool, for each size n of pipeline rank (n * pp = total_gpus), the GPUs
 * that whole ranks of n on single groups leave over: group g keeps
 * floor(G_g / n) ranks of its own, and its remaining G_g mod n GPUs, in
 * group order, fill mixed ranks of n GPUs one after the other (a group's
 * remainder may be split between two of them). Made only where some group
 * leaves GPUs over and they add up to whole ranks, at most up to
 * MAX_GROUPS groups in all; a mixed rank's parts must still be multiples of
 * the TP x CP group (the search checks it per degree). Each mixed group:
 * gpu the part type of least memory (then of least peak FLOP/s; cost.c
 * times each layer on every part's type and takes the slowest),
 * gpus_per_node the gcd of the
 * parts' GPUs and node sizes, links the slowest of the parts' (and, when
 * the parts lie on different fabrics, no faster than the link between
 * fabrics, on a fabric number of its own), price the GPU-weighted mean (0
 * when a part has none). Caller frees with cluster_free. */
struct cluster *cluster_mix(const struct cluster *c);

/* Whether every GPU of group g has FP8 GEMMs (an FP8 peak): its type's,
 * and each part's of a mixed group, whose DP replicas run the same layers
 * in one precision. */
bool cluster_group_fp8(const struct cluster *c, int g);

/* Per-stage precision of a strategy s with FP8 on (s->fp8) on c: each
 * virtual stage runs its blocks in FP8 where its rank's group has FP8
 * (cluster_group_fp8), else in BF16 (cost_layer_parts costs it so). A
 * trainer sets that per layer as Megatron-LM does, by a number of blocks at
 * the start and at the end of the model that stay in BF16: on return
 * *start and *end are those counts (the blocks of the BF16 stages before
 * the first FP8 stage holding blocks, and after the last; both 0 where
 * every stage has FP8 or s->fp8 is off). Stages are read in layer order,
 * k from 0, on rank strategy_rank(s, k), each holding first[k + 1] -
 * first[k] layers of the model's list (the embedding first and the head
 * last are not blocks). Returns 0, or -1 where a BF16 stage holding blocks
 * lies between FP8 ones (no such counts describe it). */
int cluster_bf16_blocks(const struct cluster *c, const struct strategy *s, int *start, int *end);

/* The memory of a GPU of group g: the smallest over a mixed group's parts'
 * types (bytes). */
double cluster_group_mem(const struct cluster *c, int g);

/* USD per hour of the GPUs strategy s uses: the sum over its pipeline
 * ranks r of tp x cp x dp GPUs at the price of group s->group[r]. Returns
 * 0 when a group it uses has no price. */
double cluster_price_per_hour(const struct cluster *c, const struct strategy *s);

#endif
