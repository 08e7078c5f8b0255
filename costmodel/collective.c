/* collective.c: ring collectives (alpha-beta), link selection, and the
 * communication volumes of TP, CP, EP, PP and DP per micro-batch or
 * iteration (Megatron-LM; COSTMODEL.md "Collectives", "Communication"). */
#include "collective.h"

#include <math.h>
#include <stdbool.h>

#include "cluster.h"
#include "memory.h"
#include "model.h"
#include "moe.h"
#include "strategy.h"
#include "util.h"

static double eff_or_one(double eff)
{
	return eff > 0 ? eff : 1.0; /* 0 = not given: the raw link */
}

static int dtype_bytes(const struct model *m)
{
	return m->dtype_bytes > 0 ? m->dtype_bytes : 2;
}

/* Ring all-reduce, Thakur et al. 2005 Sec. 4.4 (reduce-scatter + all-gather,
 * each n-1 steps of S/n): 2(n-1)/n * S/bw + 2(n-1) lat. */
double coll_allreduce(int n, double S, struct link l)
{
	if (n <= 1 || S <= 0)
		return 0;
	return 2.0 * (n - 1) / n * S / l.bw + 2.0 * (n - 1) * l.lat;
}

/* Ring all-gather, Thakur et al. 2005 Sec. 4.1: n-1 steps of S/n,
 * (n-1)/n * S/bw + (n-1) lat; S is the gathered (output) size. */
double coll_allgather(int n, double S, struct link l)
{
	if (n <= 1 || S <= 0)
		return 0;
	return (double)(n - 1) / n * S / l.bw + (n - 1) * l.lat;
}

/* Ring reduce-scatter, Thakur et al. 2005 Sec. 4.3: (n-1)/n * S/bw +
 * (n-1) lat; S is the input size. */
double coll_reducescatter(int n, double S, struct link l)
{
	return coll_allgather(n, S, l);
}

/* Pairwise all-to-all, Thakur et al. 2005 Sec. 4.6 (long messages): each GPU
 * sends (n-1)/n of its S bytes, in n-1 steps: (n-1)/n * S/bw + (n-1) lat. */
double coll_alltoall(int n, double S, struct link l)
{
	return coll_allgather(n, S, l);
}

/* Point-to-point: S/bw + lat (COSTMODEL.md "Collectives"). */
double coll_p2p(double S, struct link l)
{
	if (S <= 0)
		return 0;
	return S / l.bw + l.lat;
}

struct link link_inter(const struct node_group *g, int sharers)
{
	struct link l;

	if (sharers < 1)
		sharers = 1;
	l.bw = g->inter_bw * eff_or_one(g->inter_eff) / sharers;
	l.lat = g->inter_lat;
	return l;
}

/* COSTMODEL.md "Collectives": NVLink inside a node; across nodes a node's
 * bandwidth is shared by its GPUs that talk across nodes at once. Megatron
 * orders ranks tp, cp, (ep,) dp, pp from the innermost, so a group of span
 * consecutive GPUs is within one node iff span <= gpus_per_node (nodes hold
 * a power of two GPUs and groups are aligned); otherwise every GPU of the
 * node belongs to some ring that crosses nodes, and the rings share the
 * node's NIC bandwidth: min(gpus_per_node, span) sharers. */
struct link link_span(const struct node_group *g, int span)
{
	struct link l;

	if (span <= g->gpus_per_node) {
		l.bw = g->intra_bw * eff_or_one(g->intra_eff);
		l.lat = g->intra_lat;
		return l;
	}
	return link_inter(g, g->gpus_per_node < span ? g->gpus_per_node : span);
}

int coll_per_node(const struct node_group *g, int n, int stride)
{
	int k = stride > 0 ? g->gpus_per_node / stride : g->gpus_per_node;

	if (k < 1)
		k = 1;
	/* a group that fills its nodes unevenly (12 GPUs on nodes of 8) is
	 * costed as its largest even share: every node moves at least 1/k */
	return n > 0 ? gcd(n, k) : 1;
}

/* NCCL's collectives on nodes with a NIC per GPU or a shared one
 * (COSTMODEL.md "Collectives across nodes"): the k members of a node
 * reduce-scatter over the node's link, and the n/k nodes reduce-scatter S/k
 * across the network, each GPU through its share of the node's NICs
 * (inter_bw / gpus_per_node: every GPU of the node is in some group doing
 * the same at once), so that a group with k GPUs per node moves k times a
 * single GPU's share; this is why nccl-tests' multi-node bus bandwidth is
 * about the node's aggregate NIC bandwidth when all its GPUs take part.
 * The two levels run at once, one chunk after another through both (NCCL
 * pipelines a collective in chunks; a ring runs at its slowest link,
 * COSTMODEL.md "Collectives"): the slower level's bandwidth term, plus the
 * latency of every step of both. Summing the levels instead over-predicted
 * AMP's data-parallel trials over the g4dn's PCIe and 50 Gb/s network by up
 * to 26% (README "Validation"). All-gather is the mirror image, all-reduce
 * twice the reduce-scatter. */
/* coll_hier_reducescatter with its links given: nv = link_span(g, 1),
 * net1 = link_inter(g, 1), netn = link_inter(g, gpus_per_node). */
static double hier_reducescatter(const struct node_group *g, struct link nv, struct link net1,
				 struct link netn, int n, int k, double S)
{
	int m;

	if (n <= 1 || S <= 0)
		return 0;
	if (k >= n)
		return coll_reducescatter(n, S, n <= g->gpus_per_node ? nv : net1);
	m = n / k;
	return fmax((double)(k - 1) / k * S / nv.bw, (double)(m - 1) / m * (S / k) / netn.bw) +
	       (k - 1) * nv.lat + (m - 1) * netn.lat;
}

double coll_hier_reducescatter(const struct node_group *g, int n, int k, double S)
{
	return hier_reducescatter(g, link_span(g, 1), link_inter(g, 1),
				  link_inter(g, g->gpus_per_node), n, k, S);
}

double coll_hier_allreduce(const struct node_group *g, int n, int k, double S)
{
	return 2 * coll_hier_reducescatter(g, n, k, S);
}

/* All-to-all over n GPUs, k per node: of each GPU's S bytes, (k-1)/n go
 * over NVLink and (n-k)/n through the GPU's NIC share at the same time
 * (COSTMODEL.md: across nodes a GPU's all-to-all runs at one NIC's rate,
 * about 48 GB/s on NDR, not the node's aggregate); the slower side and
 * n-1 steps of latency. */
double coll_hier_alltoall(const struct node_group *g, int n, int k, double S)
{
	struct link nv = link_span(g, 1), net = link_inter(g, g->gpus_per_node);
	double in, out;

	if (n <= 1 || S <= 0)
		return 0;
	if (k >= n && n <= g->gpus_per_node)
		return coll_alltoall(n, S, nv);
	in = (double)(k - 1) / n * S / nv.bw;
	out = (double)(n - k) / n * S / net.bw;
	return (in > out ? in : out) + (n - 1) * net.lat;
}

/* Activation bytes per GPU of one micro-batch between TP collectives:
 * b * s/c * h * dtype (Shoeybi et al. 2019 Sec. 3; Korthikanti et al. 2022
 * Sec. 4.2.2 for the sequence-parallel all-gather/reduce-scatter). */
static double tp_bytes(const struct model *m, const struct strategy *s)
{
	return (double)s->mbs * s->seq / s->cp * m->hidden * dtype_bytes(m);
}

double comm_tp_routed(const struct model *m, int l, const struct cluster *c, int g,
		      const struct strategy *s)
{
	int etp = strategy_etp(s);
	struct link ke;
	double r;

	if (etp <= 1 || !s->sp || m->layer[l].kind != LAYER_BLOCK || !model_block_moe(m, l - 1))
		return 0;
	ke = link_span(&c->group[g], etp);
	r = tp_bytes(m, s) * (m->top_k > 0 ? m->top_k : 1) * moe_load_factor(m, s) * etp / s->tp;
	return coll_allgather(etp, r, ke) + coll_reducescatter(etp, r, ke);
}

/* The TP collectives of one MoE block with sequence parallelism, forward
 * or backward (the same volumes; Megatron-Core's all-to-all dispatcher):
 * the attention's all-gather + reduce-scatter of S over tp, the shared
 * experts' the same (a dense MLP under TP), and the routed experts'
 * (comm_tp_routed). */
static double moe_block_tp(const struct model *m, int l, const struct cluster *c, int g,
			   const struct strategy *s, double S, struct link k)
{
	double x = coll_allgather(s->tp, S, k) + coll_reducescatter(s->tp, S, k);

	if (m->shared_experts > 0)
		x *= 2;
	return x + comm_tp_routed(m, l, c, g, s);
}

/* Megatron-LM TP, forward pass of one micro-batch (Shoeybi et al. 2019
 * Sec. 3, Fig. 4: the f/g operators; Korthikanti et al. 2022 Sec. 4.2.2):
 * - block: 2 all-reduces of S = b*s/c*h*dtype; with sequence parallelism
 *   2 x (all-gather + reduce-scatter) of the same S, the same ring time
 *   (an MoE block: moe_block_tp);
 * - embedding (vocab-parallel): one all-reduce of S; with SP a reduce-scatter
 *   into the sequence-parallel region;
 * - head: with SP an all-gather of S out of the sequence-parallel region;
 *   the logits are never all-reduced (vocab-parallel cross-entropy), which
 *   all-reduces 3 fp32 values per token instead (max, sum of exp, target
 *   logit): 3 all-reduces of b*s/c*4 bytes.
 * Over the intra-node link when tp <= gpus_per_node (link_span). Exposed:
 * Megatron does not overlap these with compute. */
double comm_tp_fwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s)
{
	const struct layer *ly = &m->layer[l];
	struct link k;
	double S;
	bool sp = s->sp;

	if (s->tp <= 1)
		return 0;
	k = link_span(&c->group[g], s->tp);
	S = tp_bytes(m, s);
	switch (ly->kind) {
	case LAYER_EMBEDDING:
		return sp ? coll_reducescatter(s->tp, S, k)
			  : coll_allreduce(s->tp, S, k);
	case LAYER_BLOCK:
		if (sp && model_block_moe(m, l - 1))
			return moe_block_tp(m, l, c, g, s, S, k);
		return sp ? 2 * (coll_allgather(s->tp, S, k) +
				 coll_reducescatter(s->tp, S, k))
			  : 2 * coll_allreduce(s->tp, S, k);
	case LAYER_HEAD:
		return (sp ? coll_allgather(s->tp, S, k) : 0) +
		       3 * coll_allreduce(s->tp, (double)s->mbs * s->seq / s->cp * 4, k);
	}
	return 0;
}

/* Megatron-LM TP, backward pass (the conjugate operators of comm_tp_fwd):
 * block: 2 all-reduces (SP: all-gather + reduce-scatter each) of S;
 * embedding: nothing (SP: the all-gather conjugate of the reduce-scatter);
 * head: the all-reduce of the input gradient (SP: a reduce-scatter). */
double comm_tp_bwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s)
{
	const struct layer *ly = &m->layer[l];
	struct link k;
	double S;
	bool sp = s->sp;

	if (s->tp <= 1)
		return 0;
	k = link_span(&c->group[g], s->tp);
	S = tp_bytes(m, s);
	switch (ly->kind) {
	case LAYER_EMBEDDING:
		return sp ? coll_allgather(s->tp, S, k) : 0;
	case LAYER_BLOCK:
		if (sp && model_block_moe(m, l - 1))
			return moe_block_tp(m, l, c, g, s, S, k);
		return sp ? 2 * (coll_allgather(s->tp, S, k) +
				 coll_reducescatter(s->tp, S, k))
			  : 2 * coll_allreduce(s->tp, S, k);
	case LAYER_HEAD:
		return sp ? coll_reducescatter(s->tp, S, k)
			  : coll_allreduce(s->tp, S, k);
	}
	return 0;
}

/* Heads per GPU under TP: query heads h/t and KV heads max(1, g/t) (each
 * TP rank runs its own CP over its heads), and the head dimension. */
static void cp_heads(const struct model *m, const struct strategy *s, double *q, double *kv,
		     double *d)
{
	int heads = m->heads > 0 ? m->heads : 1;

	*q = (double)heads / s->tp;
	*kv = (m->kv_heads > 0 ? m->kv_heads : heads) / (double)s->tp;
	if (*kv < 1)
		*kv = 1;
	*d = m->head_dim > 0 ? m->head_dim : (double)m->hidden / heads;
}

int comm_cp_ring_steps(const struct strategy *s)
{
	if (s->cp <= 1 || s->cp_comm == CP_A2A)
		return 0;
	if (s->cp_comm == CP_A2A_P2P && s->cp_a2a > 1)
		return s->cp / s->cp_a2a - 1;
	return s->cp - 1;
}

/* Ring attention (Liu et al. 2023, Sec. 3; Megatron context parallel),
 * forward pass of one block: c-1 steps, each passing a K,V shard of
 * 2 * b * (s/c) * g_gpu * d * dtype bytes to the next CP rank, where g_gpu =
 * max(1, g/t) is the KV heads a GPU holds under TP. Under a2a+p2p a rank
 * holds s a / c tokens of g_gpu / a heads after the all-to-all, the same
 * bytes per step, over c/a - 1 steps. The ring spans tp*cp consecutive
 * GPUs: link_span. 0 for non-blocks and cp = 1. */
double comm_cp_step(const struct model *m, int l, const struct cluster *c, int g,
		    const struct strategy *s)
{
	double q, kv, d;

	if (comm_cp_ring_steps(s) == 0 || m->layer[l].kind != LAYER_BLOCK)
		return 0;
	cp_heads(m, s, &q, &kv, &d);
	return coll_p2p(2.0 * s->mbs * ((double)s->seq / s->cp) * kv * d * dtype_bytes(m),
			link_span(&c->group[g], s->tp * s->cp));
}

double comm_cp_fwd(const struct model *m, int l, const struct cluster *c, int g,
		   const struct strategy *s)
{
	return comm_cp_ring_steps(s) * comm_cp_step(m, l, c, g, s);
}

/* DeepSpeed-Ulysses (Jacobs et al. 2023 Sec. 3.2; Megatron's a2a CP),
 * forward pass of one block: all-to-alls over the n = cp (a2a) or cp_a2a
 * (a2a+p2p) ranks of the Q, K and V of the rank's tokens before the
 * attention core and of its output after, b * s/c * (2 h_gpu + 2 g_gpu) *
 * d * dtype bytes per GPU (the paper's 4 N h / P per link for h = g), not
 * overlapped. The group's ranks sit tp apart (coll_per_node); under
 * a2a+p2p the all-to-all runs within each group of cp_a2a ranks. 0 for
 * non-blocks, cp = 1 and the ring. */
double comm_cp_a2a(const struct model *m, int l, const struct cluster *c, int g,
		   const struct strategy *s)
{
	int n = s->cp_comm == CP_A2A ? s->cp : s->cp_comm == CP_A2A_P2P ? s->cp_a2a
									: 1;
	double q, kv, d;

	if (s->cp <= 1 || n <= 1 || m->layer[l].kind != LAYER_BLOCK)
		return 0;
	cp_heads(m, s, &q, &kv, &d);
	return coll_hier_alltoall(&c->group[g], n, coll_per_node(&c->group[g], n, s->tp),
				  (double)s->mbs * s->seq / s->cp * (2 * q + 2 * kv) * d *
					  dtype_bytes(m));
}

/* MoE expert parallelism (GShard, Lepikhin et al. 2021; Megatron-Core
 * all-to-all token dispatcher), forward pass of one MoE block: an all-to-all
 * dispatch and an all-to-all combine over the ep GPUs of
 * S = b * s/c * h * dtype * top_k bytes (each token routed to k experts);
 * with sequence parallelism each TP rank dispatches only its s/(c*t)
 * tokens, so S /= t; the busiest rank receives moe_load_factor x its
 * share, which paces the exchange. The EP group's members sit etp apart in
 * Megatron's expert rank order (etp innermost): coll_hier_alltoall with
 * coll_per_node(ep, etp). By dispatcher (s->moe_dispatcher):
 * - allgather (MoEAllGatherTokenDispatcher): an all-gather of the ep
 *   ranks' tokens, ep x S / top_k, each rank keeping its experts', and a
 *   reduce-scatter back (coll_hier_reducescatter's form, twice);
 * - flex (DeepEP, Zhao et al. 2025, DeepSeek's expert-parallel library):
 *   the all-to-all with each token sent once to every node that holds one
 *   of its experts and forwarded over NVLink inside it: the across-node
 *   share of the bytes x D / top_k, D = N (1 - (1 - 1/N)^top_k) the
 *   distinct nodes of a token's experts among the N nodes the group spans
 *   under uniform routing.
 * 0 for dense layers and ep = 1. */
/* coll_hier_alltoall over n GPUs, k per node, whose across-node bytes
 * shrink to D / top_k of S (comm_ep_fwd's flex): D = N (1 - (1 - 1/N)^k)
 * for the N = n / k nodes. */
static double ep_dedup_alltoall(const struct node_group *g, int n, int k, double S, int top_k)
{
	struct link nv = link_span(g, 1), net = link_inter(g, g->gpus_per_node);
	double in, out, N = (double)n / k, D;

	if (n <= 1 || S <= 0)
		return 0;
	if (k >= n && n <= g->gpus_per_node)
		return coll_alltoall(n, S, nv);
	D = N * (1 - pow(1 - 1 / N, top_k));
	in = (double)(k - 1) / n * S / nv.bw;
	out = (double)(n - k) / n * S * D / top_k / net.bw;
	return (in > out ? in : out) + (n - 1) * net.lat;
}

double comm_ep_fwd(const struct model *m, int l, const struct cluster *c,
		   int g, const struct strategy *s)
{
	const struct layer *ly = &m->layer[l];
	int per;
	double S;

	if (s->ep <= 1 || ly->kind != LAYER_BLOCK || ly->expert_params <= 0)
		return 0;
	S = (double)s->mbs * s->seq / s->cp * m->hidden * dtype_bytes(m) *
	    (m->top_k > 0 ? m->top_k : 1);
	if (s->sp && s->tp > 1)
		S /= s->tp;
	per = coll_per_node(&c->group[g], s->ep, strategy_etp(s));
	switch (s->moe_dispatcher) {
	case MOE_DISPATCH_ALLGATHER:
		return 2 * coll_hier_reducescatter(&c->group[g], s->ep, per,
						   S * s->ep / (m->top_k > 0 ? m->top_k : 1));
	case MOE_DISPATCH_FLEX:
		return 2 * ep_dedup_alltoall(&c->group[g], s->ep, per, S * moe_load_factor(m, s),
					     m->top_k > 0 ? m->top_k : 1);
	default:
		return 2 * coll_hier_alltoall(&c->group[g], s->ep, per, S * moe_load_factor(m, s));
	}
}

/* DP group sizes: dense parameters are replicated over dp*cp ranks (Megatron
 * reduces gradients over the data-parallel x context-parallel group), expert
 * parameters over the expert-data-parallel group of tp*cp*dp/(etp*ep)
 * ranks (strategy_edp); their GPUs per node (members tp, resp. etp*ep,
 * apart). */
static void dp_sizes(const struct node_group *g, const struct strategy *s,
		     int *n, int *n_e, int *k, int *k_e)
{
	*n = s->dp * s->cp;
	*n_e = strategy_edp(s);
	*k = coll_per_node(g, *n, s->tp);
	*k_e = coll_per_node(g, *n_e, strategy_etp(s) * (s->ep > 0 ? s->ep : 1));
}

/* ZeRO-3 (Rajbhandari et al. 2020, Sec. 5.3 P_os+g+p): before each use the
 * layer's parameter shards are all-gathered in bf16 over the DP group:
 * (params - expert)/t * 2 bytes over dp*cp ranks and expert/(e*etp) * 2
 * over the edp ranks (coll_hier_reducescatter's form). Called once per forward
 * and once per backward. */
double comm_zero3_gather(const struct model *m, int l, const struct cluster *c,
			 int g, const struct strategy *s)
{
	const struct layer *ly = &m->layer[l];
	const struct node_group *G = &c->group[g];
	int n, n_e, k, k_e;

	if (!strategy_layer_gathers(s))
		return 0;
	dp_sizes(G, s, &n, &n_e, &k, &k_e);
	return coll_hier_reducescatter(G, n, k, (ly->params - ly->expert_params) / s->tp * MEM_WEIGHT_BYTES) +
	       coll_hier_reducescatter(G, n_e, k_e, ly->expert_params / ((double)s->ep * strategy_etp(s)) * MEM_WEIGHT_BYTES);
}

/* The link between a pipeline rank on group gf and one on group gt, the
 * ranks of rank_gpus GPUs each, span ranks apart counted inclusively (2 for
 * neighbours): comm_pp_send's cases, with one node holding both where
 * span ranks fit in it (Megatron orders pp outermost). */
static struct link pair_link(const struct cluster *c, int gf, int gt, int rank_gpus, int span)
{
	const struct node_group *a = &c->group[gf], *b = &c->group[gt];
	int sh_a = a->gpus_per_node < rank_gpus ? a->gpus_per_node : rank_gpus;
	int sh_b = b->gpus_per_node < rank_gpus ? b->gpus_per_node : rank_gpus;
	struct link k, kb;

	if (gf == gt)
		return (double)span * rank_gpus <= a->gpus_per_node ? link_span(a, 1)
								    : link_inter(a, sh_a);
	k = link_inter(a, sh_a);
	kb = link_inter(b, sh_b);
	if (kb.bw < k.bw)
		k.bw = kb.bw;
	if (kb.lat > k.lat)
		k.lat = kb.lat;
	if (a->fabric != b->fabric) {
		double e = eff_or_one(a->inter_eff) < eff_or_one(b->inter_eff)
				   ? eff_or_one(a->inter_eff)
				   : eff_or_one(b->inter_eff);
		double fb = c->fabric_bw * e / sh_a;

		if (fb < k.bw)
			k.bw = fb;
		if (c->fabric_lat > k.lat)
			k.lat = c->fabric_lat;
	}
	return k;
}

/* Pipeline p2p (Narayanan et al. 2021 Sec. 3.2 and 4.1): each boundary sends
 * b*s*h*dtype bytes forward and the same backward per micro-batch, /t with
 * sequence parallelism (Korthikanti 2022 Sec. 4.2.3), /c with context
 * parallelism. Without SP, whole from each TP rank (Megatron-Core), or with
 * s->p2p_split /t, which the receiving stage all-gathers over its TP ranks
 * (DeepSpeed's pipeline engine partitions activations and gradients,
 * pipe_partitioned / grad_partitioned, on by default; Megatron-LM's former
 * scatter-gather did the same): the forward's gather on the receiving
 * group, the backward's on the sending one. The link:
 * - same node group and two ranks fit in one node (2*t*c*d <= gpus_per_node):
 *   NVLink;
 * - same group otherwise: the node's NIC shared by the min(gpus_per_node,
 *   t*c*d) GPUs of the rank that send at once;
 * - different groups: the slower of the two ends, each NIC shared likewise;
 *   on different fabrics also no faster than fabric_bw (per node, shared
 *   the same way, at the lower of the two NCCL efficiencies); latency the
 *   largest on the way. */
double comm_pp_send(const struct model *m, const struct cluster *c, int gf,
		    int gt, const struct strategy *s)
{
	const struct node_group *a = &c->group[gf], *b = &c->group[gt];
	/* every boundary follows a block or the embedding, which emit the same
	 * hidden state: the blocks' output bytes per token */
	double S = (double)s->mbs * s->seq * m->layer[1].out_bytes_per_token / s->cp;

	/* without SP, split sends: each end all-gathers what it receives */
	double gather = s->tp > 1 && !s->sp && s->p2p_split
				? coll_allgather(s->tp, S, link_span(a, s->tp)) +
					  coll_allgather(s->tp, S, link_span(b, s->tp))
				: 0;

	if (s->tp > 1 && (s->sp || s->p2p_split))
		S /= s->tp;
	return 2 * coll_p2p(S, pair_link(c, gf, gt, s->tp * s->cp * s->dp, 2)) + gather;
}

double comm_pair_allreduce(const struct cluster *c, int gf, int gt, int rank_gpus, int span,
			   double S)
{
	return coll_allreduce(2, S, pair_link(c, gf, gt, rank_gpus, span));
}

/* Gradient synchronisation per iteration (Narayanan et al. 2021 Sec. 3.2:
 * the DP all-reduce; Rajbhandari et al. 2020 Sec. 5 for ZeRO) of gradients
 * of grad_bytes each (memory_grad_bytes: Megatron reduces its fp32
 * main_grad under bf16; DeepSpeed and fp16 Megatron their 2-byte
 * gradients), hierarchical over the DP group's nodes (coll_hier_*):
 * - zero 0: all-reduce over dp*cp ranks;
 * - zero 1, 2: reduce-scatter, then all-gather of the updated bf16
 *   parameters 2*P (Megatron distributed optimizer);
 * - zero 3 (or FSDP2 at zero >= 1: strategy_layer_gathers): reduce-scatter
 *   only; parameters are gathered on use (comm_zero3_gather), so no
 *   gather closes the iteration.
 * Expert parameters go over the tp*cp*dp/(etp*ep) expert-data-parallel
 * ranks (strategy_edp).
 * ZeRO-2 reduces once per iteration here, as ZeRO-1 (DeepSpeed reduces per
 * micro-batch under gradient accumulation: optimistic for m > 1). */
void comm_dp_plan(struct comm_dp_plan *p, const struct cluster *c, int g,
		  const struct strategy *s)
{
	const struct node_group *G = &c->group[g];

	p->g = G;
	p->nv = link_span(G, 1);
	p->net1 = link_inter(G, 1);
	p->netn = link_inter(G, G->gpus_per_node);
	dp_sizes(G, s, &p->n, &p->n_e, &p->k, &p->k_e);
	p->grad_bytes = memory_grad_bytes(s);
	p->zero = s->zero;
	p->gathers = !strategy_layer_gathers(s);
}

void comm_dp_with(const struct comm_dp_plan *p, double dense_params, double expert_params,
		  double *reduce, double *gather)
{
	double gb = p->grad_bytes;

	*gather = 0;
	if (p->zero == 0) {
		*reduce = 2 * hier_reducescatter(p->g, p->nv, p->net1, p->netn, p->n, p->k,
						 dense_params * gb) +
			  2 * hier_reducescatter(p->g, p->nv, p->net1, p->netn, p->n_e, p->k_e,
						 expert_params * gb);
		return;
	}
	*reduce = hier_reducescatter(p->g, p->nv, p->net1, p->netn, p->n, p->k, dense_params * gb) +
		  hier_reducescatter(p->g, p->nv, p->net1, p->netn, p->n_e, p->k_e,
				     expert_params * gb);
	if (p->gathers)
		*gather = hier_reducescatter(p->g, p->nv, p->net1, p->netn, p->n, p->k,
					     dense_params * MEM_WEIGHT_BYTES) +
			  hier_reducescatter(p->g, p->nv, p->net1, p->netn, p->n_e, p->k_e,
					     expert_params * MEM_WEIGHT_BYTES);
}

void comm_dp(const struct cluster *c, int g, const struct strategy *s,
	     double dense_params, double expert_params, double *reduce,
	     double *gather)
{
	struct comm_dp_plan p;

	comm_dp_plan(&p, c, g, s);
	comm_dp_with(&p, dense_params, expert_params, reduce, gather);
}

/* Vocabulary parallelism (Yeung et al. 2024 Sec. 3) per micro-batch per
 * GPU, over the pp ranks of the pipeline (they sit tp*cp*dp ranks apart):
 * the output layer broadcasts the last block's output X (S = b s/c h_out
 * bytes, / t with SP) to the p ranks and reduces their gradients dX back;
 * the input layer reduces the p partial embeddings (each rank looks up
 * its V/p rows) to the first stage and broadcasts their gradient back:
 * four pipelined broadcasts or reduces, S/bw + (p-1) lat each (NCCL's
 * ring broadcast / reduce: bus bandwidth = algorithm bandwidth); and the
 * softmax's two all-reduces of b s/c fp32 scalars (the max and the sum
 * of the exponentials over the vocabulary shards: Alg. 1's two
 * communication barriers). The link: across nodes at the NIC share of
 * the stage's GPUs per node (as comm_pp_send), inside a node when the
 * whole pipeline fits one. All counted exposed (the paper overlaps part of
 * them with the transformer passes: an upper bound). 0 without it. */
double comm_vocab(const struct model *m, const struct cluster *c, int g,
		  const struct strategy *s)
{
	const struct node_group *a = &c->group[g];
	int rank_gpus = s->tp * s->cp * s->dp, p = s->pp;
	double tok = (double)s->mbs * s->seq / s->cp;
	double S = tok * m->layer[1].out_bytes_per_token;
	struct link k;

	if (!s->vocab_par || p <= 1)
		return 0;
	if (s->sp && s->tp > 1)
		S /= s->tp;
	if ((double)p * rank_gpus <= a->gpus_per_node)
		k = link_span(a, 1);
	else
		k = link_inter(a, a->gpus_per_node < rank_gpus ? a->gpus_per_node : rank_gpus);
	return 4 * (S / k.bw + (p - 1) * k.lat) + 2 * coll_allreduce(p, 4 * tok, k);
}
