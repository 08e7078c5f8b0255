/* check_collective.c: ring collectives, link selection, the hierarchical
 * (node, then network) collectives and the per-strategy communication
 * volumes (collective.h) against hand computations. */
#include <check.h>
#include <stdlib.h>

#include "cluster.h"
#include "collective.h"
#include "model.h"
#include "strategy.h"
#include "testutil.h"

#define GiB 1073741824.0

/* A DGX-A100-like group: 8 GPUs, NVLink 300 GB/s per direction at 80% NCCL
 * efficiency (240 GB/s), 8 x 200 Gb/s = 200 GB/s per node at 50% (100 GB/s),
 * no latency unless a test sets it. Group 1: another fabric, 8 GPUs,
 * 50 GB/s per node at 100%. fabric_bw 25 GB/s. */
static struct gpu_type gpus[1] = { { .name = "A100", .peak_flops = 312e12 } };
static struct node_group groups[2];
static struct cluster clu;

/* embedding, one block, head; h = 4096, a = 32, g = 8 KV heads, d = 128. */
static struct layer lay[3];
static struct model mod;

static void setup(void)
{
	lay[0] = (struct layer){ .kind = LAYER_EMBEDDING, .out_bytes_per_token = 2 * 4096 };
	lay[1] = (struct layer){ .kind = LAYER_BLOCK, .params = 1e8, .out_bytes_per_token = 2 * 4096 };
	lay[2] = (struct layer){ .kind = LAYER_HEAD };
	mod = (struct model){ .hidden = 4096, .heads = 32, .kv_heads = 8, .head_dim = 128, .vocab = 32000, .seq = 2048, .dtype_bytes = 2, .layer = lay, .n_layer = 3 };
	groups[0] = (struct node_group){
		.name = "a", .nodes = 4, .gpus_per_node = 8, .gpu = 0, .intra_bw = 300e9, .intra_eff = 0.8, .inter_bw = 200e9, .inter_eff = 0.5, .fabric = 0
	};
	groups[1] = (struct node_group){
		.name = "b", .nodes = 4, .gpus_per_node = 8, .gpu = 0, .intra_bw = 300e9, .intra_eff = 0.8, .inter_bw = 50e9, .inter_eff = 1.0, .fabric = 0
	};
	clu = (struct cluster){ .gpu = gpus, .n_gpu = 1, .group = groups, .n_group = 2, .fabric_bw = 25e9, .total_gpus = 64 };
}

static struct strategy strat(int tp, int cp, int dp, int ep, int seq, bool sp)
{
	struct strategy s = { .tp = tp, .cp = cp, .pp = 1, .dp = dp, .ep = ep, .vp = 1, .mbs = 1, .seq = seq, .sp = sp };
	return s;
}

START_TEST(test_allreduce)
{
	struct link l = { 300e9, 0 };

	/* 1 GiB over 8 GPUs at 300 GB/s: 2 * 7/8 * 2^30 / 3e11
	 * = 1879048192 / 3e11 = 6.26349397e-3 s. */
	ck_assert_rel(coll_allreduce(8, GiB, l), 1879048192.0 / 3e11, 1e-12);
	/* plus 2 * 7 steps of 5 us = 70 us. */
	l.lat = 5e-6;
	ck_assert_rel(coll_allreduce(8, GiB, l), 1879048192.0 / 3e11 + 70e-6, 1e-12);
	/* one GPU, or nothing to send: free. */
	ck_assert_rel(coll_allreduce(1, GiB, l), 0, 0);
	ck_assert_rel(coll_allreduce(8, 0, l), 0, 0);
}
END_TEST

START_TEST(test_gather_scatter_alltoall_p2p)
{
	struct link l = { 300e9, 5e-6 };

	/* 7/8 * 2^30 / 3e11 + 7 * 5 us = 939524096 / 3e11 + 35e-6. */
	ck_assert_rel(coll_allgather(8, GiB, l), 939524096.0 / 3e11 + 35e-6, 1e-12);
	ck_assert_rel(coll_reducescatter(8, GiB, l), 939524096.0 / 3e11 + 35e-6, 1e-12);
	ck_assert_rel(coll_alltoall(8, GiB, l), 939524096.0 / 3e11 + 35e-6, 1e-12);
	/* reduce-scatter + all-gather = all-reduce (Thakur 2005 Sec. 4.4). */
	ck_assert_rel(coll_reducescatter(8, GiB, l) + coll_allgather(8, GiB, l),
		      coll_allreduce(8, GiB, l), 1e-12);
	/* 100 MB at 25 GB/s + 10 us = 4 ms + 10 us. */
	l = (struct link){ 25e9, 10e-6 };
	ck_assert_rel(coll_p2p(100e6, l), 4e-3 + 10e-6, 1e-12);
	ck_assert_rel(coll_p2p(0, l), 0, 0);
}
END_TEST

START_TEST(test_link_span)
{
	struct link l;

	/* inside a node: 300 GB/s * 0.8 = 240 GB/s. */
	l = link_span(&groups[0], 8);
	ck_assert_rel(l.bw, 240e9, 1e-12);
	l = link_span(&groups[0], 4);
	ck_assert_rel(l.bw, 240e9, 1e-12);
	/* 16 GPUs cross nodes: 200 GB/s * 0.5 shared by 8 GPUs = 12.5 GB/s. */
	l = link_span(&groups[0], 16);
	ck_assert_rel(l.bw, 12.5e9, 1e-12);
	/* two GPUs of a node sending across: 100 GB/s / 2 = 50 GB/s. */
	l = link_inter(&groups[0], 2);
	ck_assert_rel(l.bw, 50e9, 1e-12);
}
END_TEST

START_TEST(test_tp)
{
	struct strategy s = strat(8, 1, 1, 1, 2048, false);

	/* S = b*s*h*2 = 2048 * 4096 * 2 = 16777216 bytes; all-reduce over 8
	 * at 240 GB/s: 1.75 * 16777216 / 240e9 = 29360128 / 240e9.
	 * A block: 2 in the forward, 2 in the backward. */
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 2 * 29360128.0 / 240e9, 1e-12);
	ck_assert_rel(comm_tp_bwd(&mod, 1, &clu, 0, &s), 2 * 29360128.0 / 240e9, 1e-12);
	/* without SP the vocabulary-parallel embedding all-reduces its output
	 * forward, whose backward is the identity: nothing; the head's
	 * forward only the 3 fp32 all-reduces, its backward the input
	 * gradient's all-reduce of S. */
	ck_assert_rel(comm_tp_fwd(&mod, 0, &clu, 0, &s), 29360128.0 / 240e9, 1e-12);
	ck_assert_rel(comm_tp_bwd(&mod, 0, &clu, 0, &s), 0, 0);
	ck_assert_rel(comm_tp_fwd(&mod, 2, &clu, 0, &s), 3 * 14336.0 / 240e9, 1e-12);
	ck_assert_rel(comm_tp_bwd(&mod, 2, &clu, 0, &s), 29360128.0 / 240e9, 1e-12);
	/* SP: all-gather + reduce-scatter, each 7/8 * S: the same. */
	s.sp = true;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 2 * 29360128.0 / 240e9, 1e-12);
	/* head with SP: all-gather 7/8 * S = 14680064 / 240e9 plus 3 fp32
	 * all-reduces of 2048 * 4 = 8192 bytes: 3 * 1.75 * 8192 / 240e9. */
	ck_assert_rel(comm_tp_fwd(&mod, 2, &clu, 0, &s),
		      (14680064.0 + 3 * 14336.0) / 240e9, 1e-12);
	/* head backward with SP: reduce-scatter of S. */
	ck_assert_rel(comm_tp_bwd(&mod, 2, &clu, 0, &s), 14680064.0 / 240e9, 1e-12);
	/* embedding with SP: reduce-scatter forward, all-gather backward. */
	ck_assert_rel(comm_tp_fwd(&mod, 0, &clu, 0, &s), 14680064.0 / 240e9, 1e-12);
	ck_assert_rel(comm_tp_bwd(&mod, 0, &clu, 0, &s), 14680064.0 / 240e9, 1e-12);
	/* with CP 2 the message halves. */
	s.cp = 2;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 29360128.0 / 240e9, 1e-12);
	/* tp 1: nothing. */
	s = strat(1, 1, 1, 1, 2048, false);
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 0, 0);
}
END_TEST

START_TEST(test_cp)
{
	struct strategy s = strat(2, 4, 1, 1, 8192, true);

	/* KV heads per GPU 8/2 = 4; shard 2 * 1 * (8192/4) * 4 * 128 * 2 =
	 * 4194304 bytes; CP ring spans tp*cp = 8 GPUs: NVLink 240 GB/s;
	 * 3 steps: 3 * 4194304 / 240e9 = 5.24288e-5 s. */
	ck_assert_rel(comm_cp_fwd(&mod, 1, &clu, 0, &s), 3 * 4194304.0 / 240e9, 1e-12);
	/* not a block: nothing. */
	ck_assert_rel(comm_cp_fwd(&mod, 2, &clu, 0, &s), 0, 0);
	/* tp 16 > 8 KV heads: one (replicated) head per GPU, span 16*4 = 64
	 * crosses nodes: 100 GB/s / 8 = 12.5 GB/s; shard 2*2048*1*128*2 =
	 * 1048576; 3 steps. */
	s.tp = 16;
	ck_assert_rel(comm_cp_fwd(&mod, 1, &clu, 0, &s), 3 * 1048576.0 / 12.5e9, 1e-12);
}
END_TEST

/* The CP flavours (collective.c), tp 2, cp 4, seq 8192, one node of 8:
 * a2a (Ulysses, Jacobs et al. 2023 Sec. 3.2): Q and output of 32/2 = 16
 * heads, K and V of 8/2 = 4, of 8192/4 tokens: 2048 * (2*16 + 2*4) * 128 *
 * 2 = 20971520 bytes per GPU, all-to-all over 4 ranks inside the node:
 * 3/4 * 20971520 / 240e9; no ring. a2a+p2p with groups of 2: the
 * all-to-all over 2 ranks, 1/2 * 20971520 / 240e9, and a ring of 4/2 - 1
 * = 1 step of test_cp's 4194304-byte shard. */
START_TEST(test_cp_a2a)
{
	struct strategy s = strat(2, 4, 1, 1, 8192, true);

	s.cp_comm = CP_A2A;
	ck_assert_int_eq(comm_cp_ring_steps(&s), 0);
	ck_assert_rel(comm_cp_fwd(&mod, 1, &clu, 0, &s), 0, 0);
	ck_assert_rel(comm_cp_a2a(&mod, 1, &clu, 0, &s), 0.75 * 20971520.0 / 240e9, 1e-12);
	s.cp_comm = CP_A2A_P2P;
	s.cp_a2a = 2;
	ck_assert_int_eq(comm_cp_ring_steps(&s), 1);
	ck_assert_rel(comm_cp_a2a(&mod, 1, &clu, 0, &s), 0.5 * 20971520.0 / 240e9, 1e-12);
	ck_assert_rel(comm_cp_fwd(&mod, 1, &clu, 0, &s), 4194304.0 / 240e9, 1e-12);
	/* the ring has no all-to-all; not a block: nothing */
	s.cp_comm = CP_P2P;
	ck_assert_rel(comm_cp_a2a(&mod, 1, &clu, 0, &s), 0, 0);
	s.cp_comm = CP_A2A;
	ck_assert_rel(comm_cp_a2a(&mod, 2, &clu, 0, &s), 0, 0);
}
END_TEST

START_TEST(test_ep)
{
	struct strategy s = strat(2, 1, 4, 4, 4096, true);
	double S = 33554432.0;

	mod.top_k = 2;
	lay[1].expert_params = 5e7;
	/* S = b*s*h*2*k / t = 4096 * 4096 * 2 * 2 / 2 = 33554432; the ep = 4
	 * members sit tp = 2 apart: 8 / 2 = 4 per node, the whole group in
	 * one node: NVLink 240 GB/s; all-to-all 3/4 * S; dispatch + combine:
	 * 2 * 25165824 / 240e9. */
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 2 * 25165824.0 / 240e9, 1e-12);
	/* ep 8: 4 per node on 2 nodes. Of each GPU's S, (4 - 1)/8 goes over
	 * NVLink (3/8 * S / 240e9 = 5.24e-5 s) and (8 - 4)/8 through the GPU's
	 * own NIC, 100 GB/s / 8 = 12.5 GB/s (1/2 * S / 12.5e9 = 1.342e-3 s) at
	 * the same time: the slower, twice. */
	s.ep = 8;
	s.dp = 8;
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 2 * 0.5 * S / 12.5e9, 1e-12);
	/* flex (DeepEP): a token's 2 experts fall on D = 2 (1 - (1 - 1/2)^2)
	 * = 1.5 of the 2 nodes, so the NIC carries 1.5 / 2 of the bytes:
	 * 0.375 S / 12.5e9 (NVLink's 3/8 S / 240e9 still the faster) */
	s.moe_dispatcher = MOE_DISPATCH_FLEX;
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 2 * 0.375 * S / 12.5e9, 1e-12);
	/* allgather: the 8 ranks' tokens, 8 x S / 2 = 4 S, gathered (and
	 * reduce-scattered back) hierarchically: over NVLink among the 4 of
	 * a node, 3/4 x 4 S / 240e9, and across the 2 nodes, 1/2 x S /
	 * 12.5e9, at once: the slower */
	s.moe_dispatcher = MOE_DISPATCH_ALLGATHER;
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 2 * 0.5 * S / 12.5e9, 1e-12);
	s.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
	/* with 7 us per inter-node step: + 7 steps each way */
	groups[0].inter_lat = 7e-6;
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 2 * (0.5 * S / 12.5e9 + 49e-6), 1e-12);
	groups[0].inter_lat = 0;
	/* tp 8: one member per node, all of (8 - 1)/8 through the NIC;
	 * S = 4096 * 4096 * 2 * 2 / 8 = 8388608. */
	s.tp = 8;
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 2 * 7.0 / 8 * 8388608.0 / 12.5e9, 1e-12);
	/* a dense layer: nothing. */
	lay[1].expert_params = 0;
	ck_assert_rel(comm_ep_fwd(&mod, 1, &clu, 0, &s), 0, 0);
}
END_TEST

/* TP collectives of an MoE block (8 experts, top 2) with SP at tp 4, ep 1
 * (load factor 1), S = 2048 * 4096 * 2 = 16777216 bytes, all in one node
 * at 240 GB/s. The attention: all-gather + reduce-scatter of S over 4,
 * 2 x 3/4 S = 1.5 S. The routed experts over etp GPUs: after the
 * all-to-all each holds S k / tp = S / 2 and they gather etp x that:
 * etp 4, 2S over 4: 2 x 3/4 x 2S = 3S; etp 2, S over 2: 2 x 1/2 x S = S;
 * etp 1: nothing. A shared expert adds the attention's 1.5 S. The dense
 * block: 3 S. The same backward. */
START_TEST(test_moe_tp)
{
	struct strategy s = strat(4, 1, 2, 1, 2048, true);
	double S = 16777216.0;

	mod.experts = 8;
	mod.top_k = 2;
	mod.moe_ffn = 1024;
	lay[1].expert_params = 5e7;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 4.5 * S / 240e9, 1e-12);
	ck_assert_rel(comm_tp_bwd(&mod, 1, &clu, 0, &s), 4.5 * S / 240e9, 1e-12);
	ck_assert_rel(comm_tp_routed(&mod, 1, &clu, 0, &s), 3 * S / 240e9, 1e-12);
	s.etp = 2;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 2.5 * S / 240e9, 1e-12);
	ck_assert_rel(comm_tp_routed(&mod, 1, &clu, 0, &s), S / 240e9, 1e-12);
	s.etp = 1;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 1.5 * S / 240e9, 1e-12);
	ck_assert_rel(comm_tp_routed(&mod, 1, &clu, 0, &s), 0, 0);
	mod.shared_experts = 1;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 3 * S / 240e9, 1e-12);
	mod.experts = mod.top_k = mod.moe_ffn = mod.shared_experts = 0;
	lay[1].expert_params = 0;
	ck_assert_rel(comm_tp_fwd(&mod, 1, &clu, 0, &s), 3 * S / 240e9, 1e-12);
}
END_TEST

START_TEST(test_pp)
{
	struct strategy s = strat(4, 1, 1, 1, 2048, true);

	/* S = 2048 * 4096 * 2 / 4 (SP) = 4194304; ranks of 4 GPUs, two fit
	 * in a node: NVLink 240 GB/s; forward + backward. */
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 0, &s), 2 * 4194304.0 / 240e9, 1e-12);
	/* ranks of 8 GPUs: across nodes, 100 GB/s shared by 8: 12.5 GB/s;
	 * S = 2097152 with tp 8. */
	s.tp = 8;
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 0, &s), 2 * 2097152.0 / 12.5e9, 1e-12);
	/* to group b (50 GB/s per node / 8 = 6.25 GB/s): the slower end. */
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 1, &s), 2 * 2097152.0 / 6.25e9, 1e-12);
	/* group b on another fabric: 25 GB/s * min(0.5, 1.0) / 8 = 1.5625 GB/s,
	 * latency the fabric's 20 us. */
	groups[1].fabric = 1;
	clu.fabric_lat = 20e-6;
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 1, &s),
		      2 * (2097152.0 / 1.5625e9 + 20e-6), 1e-12);
	/* CP 2 halves the message. */
	groups[1].fabric = 0;
	s.cp = 2;
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 1, &s), 2097152.0 / 6.25e9, 1e-12);
	/* no SP: the whole b*s*h*2 = 16777216, t*c = 8 GPUs per rank. */
	s = strat(8, 1, 1, 1, 2048, false);
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 0, &s), 2 * 16777216.0 / 12.5e9, 1e-12);
	/* split sends (DeepSpeed's pipeline engine): each TP rank sends an
	 * eighth, 2097152, and the receiving stage all-gathers the 16777216
	 * over its 8 GPUs in the node, 7/8 of it over NVLink, each way */
	s.p2p_split = true;
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 0, &s),
		      2 * 2097152.0 / 12.5e9 + 2 * 7.0 / 8 * 16777216.0 / 240e9, 1e-12);
	/* with SP the tensor is split already: nothing to gather */
	s.sp = true;
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 0, &s), 2 * 2097152.0 / 12.5e9, 1e-12);
	s = strat(8, 1, 1, 1, 2048, false);
	/* the size is the profile's output bytes per token: fp32 hidden
	 * states (4 bytes) double it */
	lay[1].out_bytes_per_token = 4 * 4096;
	ck_assert_rel(comm_pp_send(&mod, &clu, 0, 0, &s), 2 * 33554432.0 / 12.5e9, 1e-12);
	lay[1].out_bytes_per_token = 2 * 4096;
}
END_TEST

/* The all-reduce between peers of two pipeline ranks (the tied
 * embedding's): a ring of two, 2 (1/2) S / bw + 2 latencies, S = 1e8
 * bytes. Ranks of 4 GPUs 2 apart fit in a node of 8: NVLink 300 x 0.8 =
 * 240 GB/s; 4 apart (16 GPUs) do not: 200 x 0.5 / 4 = 25 GB/s; to group
 * b, the slower end: 50 / 4 = 12.5 GB/s, and on another fabric 25 x 0.5 /
 * 4 = 3.125 GB/s with the fabric's 20 us. */
START_TEST(test_pair_allreduce)
{
	ck_assert_rel(comm_pair_allreduce(&clu, 0, 0, 4, 2, 1e8), 1e8 / 240e9, 1e-12);
	ck_assert_rel(comm_pair_allreduce(&clu, 0, 0, 4, 4, 1e8), 1e8 / 25e9, 1e-12);
	ck_assert_rel(comm_pair_allreduce(&clu, 0, 1, 4, 2, 1e8), 1e8 / 12.5e9, 1e-12);
	groups[1].fabric = 1;
	clu.fabric_lat = 20e-6;
	ck_assert_rel(comm_pair_allreduce(&clu, 0, 1, 4, 4, 1e8), 1e8 / 3.125e9 + 2 * 20e-6, 1e-12);
}
END_TEST

START_TEST(test_dp)
{
	struct strategy s = strat(2, 1, 4, 1, 2048, true);
	double red, gat;

	/* 1e9 parameters per GPU, fp32 gradients 4e9 bytes; DP ring of 4
	 * members tp = 2 apart, all 4 in one node: 240 GB/s. all-reduce
	 * 2 * 3/4 * 4e9 / 240e9 = 0.025 s. */
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.025, 1e-12);
	ck_assert_rel(gat, 0, 0);
	/* distributed optimizer: reduce-scatter 3/4 * 4e9 / 240e9 = 0.0125,
	 * all-gather of bf16 parameters 3/4 * 2e9 / 240e9 = 0.00625. */
	s.zero = 1;
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.0125, 1e-12);
	ck_assert_rel(gat, 0.00625, 1e-12);
	/* ZeRO-3: no closing gather. */
	s.zero = 3;
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.0125, 1e-12);
	ck_assert_rel(gat, 0, 0);
	/* expert parameters reduce over dp*cp/ep = 2 ranks: 5e8 params,
	 * 2e9 bytes, all-reduce 2 * 1/2 * 2e9 / 240e9. */
	s.zero = 0;
	s.ep = 2;
	comm_dp(&clu, 0, &s, 0, 5e8, &red, &gat);
	ck_assert_rel(red, 2e9 / 240e9, 1e-12);
	/* with the experts whole on each GPU (etp 1) the expert-data-
	 * parallel group is tp * dp / ep = 4 ranks, 2 apart (etp x ep), in
	 * one node: 2 * 3/4 * 2e9 / 240e9 = 0.0125 s */
	s.etp = 1;
	comm_dp(&clu, 0, &s, 0, 5e8, &red, &gat);
	ck_assert_rel(red, 0.0125, 1e-12);
	/* dp 8 at tp 2: 4 members per node on 2 nodes, hierarchical:
	 * reduce-scatter over the 4 in the node, 3/4 * 4e9 / 240e9 = 0.0125,
	 * and over the 2 nodes on 4e9 / 4 = 1e9 bytes at the GPU's NIC share
	 * 100 GB/s / 8 = 12.5 GB/s, 1/2 * 1e9 / 12.5e9 = 0.04, at once: the
	 * slower; all-reduce twice that: 0.08 s (one level after the other
	 * 0.105 s; a flat ring at 12.5 GB/s: 2 * 7/8 * 4e9 / 12.5e9 = 0.56 s). */
	s = strat(2, 1, 8, 1, 2048, true);
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.08, 1e-12);
	/* CP joins the group: dp 4 x cp 2 = 8, the same 0.08 s. */
	s = strat(2, 2, 4, 1, 2048, true);
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.08, 1e-12);
}
END_TEST

/* Gradients of grad_bytes each (memory_grad_bytes: 0 reads as 4): bf16
 * gradients halve the reduction, not the ZeRO parameter gather (bf16
 * parameters either way). dp 4 at tp 2 in one node, 1e9 parameters:
 * all-reduce 2 * 3/4 * 2e9 / 240e9 = 0.0125 s; ZeRO-1 reduce-scatter
 * 3/4 * 2e9 / 240e9 = 0.00625 s, gather 3/4 * 2e9 / 240e9 = 0.00625 s. */
START_TEST(test_dp_grad_bytes)
{
	struct strategy s = strat(2, 1, 4, 1, 2048, true);
	double red, gat;

	s.grad_bytes = 4;
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.025, 1e-12);
	s.grad_bytes = 2;
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.0125, 1e-12);
	s.zero = 1;
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.00625, 1e-12);
	ck_assert_rel(gat, 0.00625, 1e-12);
	s.grad_bytes = 4;
	comm_dp(&clu, 0, &s, 1e9, 0, &red, &gat);
	ck_assert_rel(red, 0.0125, 1e-12);
	ck_assert_rel(gat, 0.00625, 1e-12);
}
END_TEST

/* GPUs per node of a group whose members sit stride ranks apart:
 * gpus_per_node / stride, at least 1, at most n. */
START_TEST(test_per_node)
{
	ck_assert_int_eq(coll_per_node(&groups[0], 16, 1), 8);
	ck_assert_int_eq(coll_per_node(&groups[0], 16, 2), 4);
	ck_assert_int_eq(coll_per_node(&groups[0], 16, 8), 1);
	ck_assert_int_eq(coll_per_node(&groups[0], 16, 16), 1);
	ck_assert_int_eq(coll_per_node(&groups[0], 2, 1), 2);
	ck_assert_int_eq(coll_per_node(&groups[0], 2, 0), 2);
	/* 12 GPUs on nodes of 8 (8 + 4) move as 4 per node; 6 at stride 2
	 * (4 + 2 per node) as 2: the result always divides n */
	ck_assert_int_eq(coll_per_node(&groups[0], 12, 1), 4);
	ck_assert_int_eq(coll_per_node(&groups[0], 6, 2), 2);
}
END_TEST

/* Hierarchical collectives over n = 16 GPUs of group 0 (NVLink 240 GB/s,
 * 2 us per step; the node's 100 GB/s of NICs, 12.5 GB/s per GPU, 5 us per
 * step), S = 1.6e9 bytes; the two levels move their chunks at once, so
 * the slower level's bandwidth term counts, and every step's latency:
 * - k = 8 per node (2 nodes): reduce-scatter over the node's 8, 7/8 * S /
 *   240e9 = 5.8333e-3 s, and over the 2 nodes on S/8 at 12.5 GB/s, 1/2 *
 *   2e8 / 12.5e9 = 8e-3 s; 7 * 2 us + 1 * 5 us: 8e-3 s + 19 us;
 * - k = 1 (a flat ring across 16 nodes): 15/16 * S / 12.5e9 + 15 * 5 us
 *   = 0.12 s + 75 us, about 15x slower;
 * - k = 4 per node (4 nodes): the slower of 3/4 * S / 240e9 = 5e-3 s and
 *   3/4 * 4e8 / 12.5e9 = 0.024 s, + 3 * 2 us + 3 * 5 us;
 * - with NVLink at 1 GB/s x 0.8 the node's level is the slower: k = 8,
 *   7/8 * S / 8e8 = 1.75 s + 19 us;
 * - n <= 8 with all in one node: the flat NVLink ring;
 * all-reduce twice the reduce-scatter. All-to-all: of each GPU's S,
 * (k - 1)/n over NVLink and (n - k)/n through the NIC share at once, the
 * slower side, plus (n - 1) inter-node steps: k = 8, max(7/16 * S /
 * 240e9, 8/16 * S / 12.5e9) + 15 * 5 us; k = 1: 15/16 * S / 12.5e9 + 75 us;
 * within a node the flat NVLink all-to-all. */
START_TEST(test_hierarchical)
{
	const struct node_group *g = &groups[0];
	double S = 1.6e9, k8, k1;

	groups[0].intra_lat = 2e-6;
	groups[0].inter_lat = 5e-6;
	k8 = 8e-3 + 7 * 2e-6 + 5e-6;
	k1 = 1.5e9 / 12.5e9 + 15 * 5e-6;
	ck_assert_rel(coll_hier_reducescatter(g, 16, 8, S), k8, 1e-12);
	ck_assert_rel(coll_hier_reducescatter(g, 16, 1, S), k1, 1e-12);
	ck_assert(k1 > 14 * k8);
	ck_assert_rel(coll_hier_reducescatter(g, 16, 4, S), 0.024 + 3 * 2e-6 + 3 * 5e-6, 1e-12);
	ck_assert_rel(coll_hier_reducescatter(g, 8, 8, S), 1.4e9 / 240e9 + 7 * 2e-6, 1e-12);
	ck_assert_rel(coll_hier_allreduce(g, 16, 8, S), 2 * k8, 1e-12);
	ck_assert_rel(coll_hier_allreduce(g, 16, 1, S), 2 * k1, 1e-12);
	ck_assert_rel(coll_hier_reducescatter(g, 1, 1, S), 0, 0);
	ck_assert_rel(coll_hier_reducescatter(g, 16, 8, 0), 0, 0);
	ck_assert_rel(coll_hier_alltoall(g, 16, 8, S), 0.5 * S / 12.5e9 + 75e-6, 1e-12);
	ck_assert_rel(coll_hier_alltoall(g, 16, 1, S), 15.0 / 16 * S / 12.5e9 + 75e-6, 1e-12);
	ck_assert_rel(coll_hier_alltoall(g, 8, 8, S), 1.4e9 / 240e9 + 7 * 2e-6, 1e-12);
	/* with a slow NVLink the intra-node side of the all-to-all dominates:
	 * 1 GB/s * 0.8: 7/16 * S / 8e8 = 0.875 s */
	groups[0].intra_bw = 1e9;
	ck_assert_rel(coll_hier_alltoall(g, 16, 8, S), 7.0 / 16 * S / 8e8 + 75e-6, 1e-12);
	ck_assert_rel(coll_hier_reducescatter(g, 16, 8, S), 1.75 + 19e-6, 1e-12);
}
END_TEST

START_TEST(test_zero3_gather)
{
	struct strategy s = strat(2, 1, 4, 1, 2048, true);

	/* block of 1e8 parameters, / tp 2 = 5e7, bf16 1e8 bytes, all-gather
	 * over 4 at 240 GB/s: 3/4 * 1e8 / 240e9. Only under ZeRO-3. */
	ck_assert_rel(comm_zero3_gather(&mod, 1, &clu, 0, &s), 0, 0);
	s.zero = 3;
	ck_assert_rel(comm_zero3_gather(&mod, 1, &clu, 0, &s), 0.75e8 / 240e9, 1e-12);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("collective");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_allreduce);
	tcase_add_test(tc, test_gather_scatter_alltoall_p2p);
	tcase_add_test(tc, test_link_span);
	tcase_add_test(tc, test_tp);
	tcase_add_test(tc, test_cp);
	tcase_add_test(tc, test_cp_a2a);
	tcase_add_test(tc, test_ep);
	tcase_add_test(tc, test_moe_tp);
	tcase_add_test(tc, test_pp);
	tcase_add_test(tc, test_pair_allreduce);
	tcase_add_test(tc, test_dp);
	tcase_add_test(tc, test_dp_grad_bytes);
	tcase_add_test(tc, test_per_node);
	tcase_add_test(tc, test_hierarchical);
	tcase_add_test(tc, test_zero3_gather);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
