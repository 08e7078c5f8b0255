/* collective.h (internal): ring collectives in the alpha-beta model, the link
 * a group of GPUs talks over, and the communication of a strategy (TP, CP,
 * EP, PP, DP) built from them. Seconds, bytes, bytes/s. */
#ifndef AMPPLAN_COLLECTIVE_H
#define AMPPLAN_COLLECTIVE_H

struct cluster;
struct node_group;
struct model;
struct strategy;

/* A link as a collective sees it: achieved bandwidth per GPU, one direction
 * (bytes/s; NCCL efficiency applied), and latency per step (s). */
struct link {
	double bw, lat;
};

/* Ring collectives over n GPUs of a message of S bytes per GPU (the whole
 * buffer, NCCL's convention), Thakur et al. 2005, Sec. 4 (ring algorithms),
 * alpha-beta cost, COSTMODEL.md "Collectives". All return 0 for n <= 1 or
 * S <= 0.
 *   all-reduce        2(n-1)/n * S/bw + 2(n-1) lat
 *   all-gather        (n-1)/n * S/bw + (n-1) lat   (S = gathered size)
 *   reduce-scatter    (n-1)/n * S/bw + (n-1) lat   (S = input size)
 *   all-to-all        (n-1)/n * S/bw + (n-1) lat
 * coll_p2p is one send of S bytes: S/bw + lat (0 for S <= 0). */
double coll_allreduce(int n, double S, struct link l);
double coll_allgather(int n, double S, struct link l);
double coll_reducescatter(int n, double S, struct link l);
double coll_alltoall(int n, double S, struct link l);
double coll_p2p(double S, struct link l);

/* The link of a group of span GPUs (consecutive ranks) of node group g:
 * inside a node (intra_bw * intra_eff, intra_lat) when span <= gpus_per_node,
 * else across nodes, where a node's NIC (inter_bw * inter_eff per node) is
 * shared by the node's GPUs that talk across nodes at once:
 * min(gpus_per_node, span) of them. */
struct link link_span(const struct node_group *g, int span);
/* Across nodes with sharers GPUs of each node sending at once. */
struct link link_inter(const struct node_group *g, int sharers);

/* GPUs per node of a group of n GPUs that sit stride ranks apart in
 * Megatron's rank order (tp, cp, ep, dp, pp from the innermost):
 * gpus_per_node / stride (at least 1), or where that does not divide n
 * their greatest common divisor, so that the result divides n. */
int coll_per_node(const struct node_group *g, int n, int stride);

/* Collectives over n GPUs of node group g with k of them per node (k
 * divides n): NVLink inside the node and the n/k nodes over the network at
 * each GPU's NIC share, the two levels at once (collective.c has the model
 * and its source).
 * S bytes per GPU as in coll_*; 0 for n <= 1 or S <= 0. Reduce-scatter
 * and all-gather cost the same. */
double coll_hier_reducescatter(const struct node_group *g, int n, int k, double S);
double coll_hier_allreduce(const struct node_group *g, int n, int k, double S);
double coll_hier_alltoall(const struct node_group *g, int n, int k, double S);

/* Per-GPU comm of one micro-batch of layer l on group g, before any overlap
 * (seconds). tp: TP collectives of the forward pass (the backward is the same
 * amount, see comm_tp_bwd); cp: ring-attention K,V passing of the forward
 * pass; ep: MoE all-to-alls of the forward pass; zero3: one all-gather of the
 * layer's parameters over the DP group (ZeRO-3). */
double comm_tp_fwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s);
double comm_tp_bwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s);
/* Of comm_tp_fwd (and, the same, comm_tp_bwd) of an MoE block with SP,
 * the routed experts' part: after the EP all-to-all the etp GPUs that
 * split each expert gather the tokens the others received, etp x S k lam
 * / tp in all (S = b s/c h dtype, each GPU received S k / tp, the busiest
 * lam = moe_load_factor times that), and reduce-scatter the outputs back:
 * an all-gather and a reduce-scatter over etp. 0 at etp = 1, for a dense
 * block or without SP. Transformer Engine's TP overlap does not hide it
 * (it overlaps the dense linear layers). */
double comm_tp_routed(const struct model *m, int l, const struct cluster *c, int g,
		      const struct strategy *s);
/* Context parallelism of block layer l, forward pass, by s->cp_comm:
 * comm_cp_ring_steps ring steps (cp - 1; cp / cp_a2a - 1 under a2a+p2p; 0
 * under a2a) of comm_cp_step seconds each (K and V of the rank's tokens to
 * the next ring rank), comm_cp_fwd = their product, and comm_cp_a2a the
 * all-to-alls of a2a and a2a+p2p (collective.c has the models and their
 * sources). */
int comm_cp_ring_steps(const struct strategy *s);
double comm_cp_step(const struct model *m, int l, const struct cluster *c,
		    int g, const struct strategy *s);
double comm_cp_a2a(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s);
double comm_cp_fwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s);
double comm_ep_fwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s);
double comm_zero3_gather(const struct model *m, int l, const struct cluster *c,
			 int g, const struct strategy *s);

/* Seconds of p2p per micro-batch (forward activation + backward gradient)
 * from a pipeline rank on group gf to the next on group gt. */
double comm_pp_send(const struct model *m, const struct cluster *c, int gf,
		    int gt, const struct strategy *s);

/* Seconds of an all-reduce of S bytes per GPU between each GPU of a
 * pipeline rank on group gf and its peer on a rank on group gt, the ranks
 * span apart counted inclusively (2 for neighbours) and of rank_gpus GPUs
 * each, every pair at once: a ring of two over comm_pp_send's link (one
 * node where span ranks fit in it), S/bw + 2 latencies. */
double comm_pair_allreduce(const struct cluster *c, int gf, int gt, int rank_gpus, int span,
			   double S);

/* Vocabulary parallelism's collectives per micro-batch per GPU of a
 * pipeline rank on group g (s->vocab_par; collective.c has the model and
 * its source), seconds; 0 without it or with pp = 1. */
double comm_vocab(const struct model *m, const struct cluster *c, int g,
		  const struct strategy *s);

/* Gradient synchronisation of one pipeline rank per iteration, for
 * dense_params and expert_params parameters per GPU (already divided by tp,
 * ep*etp) on group g. *reduce: the gradient all-reduce or reduce-scatter,
 * which may overlap with the backward pass; *gather: the parameter
 * all-gather of ZeRO-1/2, exposed. */
void comm_dp(const struct cluster *c, int g, const struct strategy *s,
	     double dense_params, double expert_params, double *reduce,
	     double *gather);

/* What comm_dp computes on group g for strategy s before the parameter
 * counts: the DP group sizes, the links and the kind of reduction, for
 * callers that cost many ranks of one group (comm_dp_with). */
struct comm_dp_plan {
	const struct node_group *g;
	struct link nv, net1, netn; /* link_span(g, 1), link_inter(g, 1),
				       link_inter(g, gpus_per_node) */
	int n, n_e, k, k_e;	    /* dp_sizes */
	double grad_bytes;
	int zero;
	int gathers; /* ZeRO-1/2's parameter all-gather closes the
			iteration */
};

void comm_dp_plan(struct comm_dp_plan *p, const struct cluster *c, int g,
		  const struct strategy *s);

/* comm_dp on the plan p: the same result. */
void comm_dp_with(const struct comm_dp_plan *p, double dense_params, double expert_params,
		  double *reduce, double *gather);

#endif
