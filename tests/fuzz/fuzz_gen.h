/* fuzz_gen.h: a structure-aware generator for the differential target
 * (fuzz_diff.c): turns the fuzzer's bytes into a valid small model and a
 * valid small cluster, each as the file text the loaders read, so that
 * every input reaches the search instead of a parse error. The model is a
 * Llama-style one of 2 to 6 blocks whose blocks' FLOPs and activations are
 * scaled by factors in [0.5, 2] (uneven stages), tied embeddings or not,
 * written as a profile by model_profile_json; the cluster has 1 to 3 node
 * groups of different GPU types (peak, efficiency, memory from tight to
 * roomy), node sizes 1, 2 or 4 and links, at most 4 GPUs per group and 8
 * in all (an input runs in about 0.2 s under the sanitizers). Header-only,
 * like fuzz_util.h. */
#ifndef AMPPLAN_FUZZ_GEN_H
#define AMPPLAN_FUZZ_GEN_H

#include "fuzz_opts.h"
#include "model.h"
#include "util.h"

#define FUZZ_GEN_MAX_GPUS 8

/* A value in [lo, hi] from the next byte (256 steps). */
static inline double fuzz_range(struct fuzz_in *in, double lo, double hi)
{
	return lo + (hi - lo) * fuzz_byte(in) / 255.0;
}

/* The model (caller frees with model_free): 2 to 6 blocks, hidden 512 to
 * 2048, global batch 8 to 32, sequence 512 to 2048, each block's FLOPs and
 * activations scaled by its own factor, its embedding and LM head tied or
 * not. */
static inline struct model *fuzz_gen_model(struct fuzz_in *in)
{
	struct model *m = xcalloc(1, sizeof *m);

	m->name = xstrdup("fuzz-gen");
	unsigned b;

	m->hidden = FUZZ_PICK(in, 512, 1024, 2048);
	b = fuzz_byte(in);
	m->layers = 2 + b % 5;
	m->tied = b / 5 % 2; /* the tied all-reduce between the pipeline's ends */
	m->heads = m->kv_heads = 8;
	m->head_dim = m->hidden / m->heads;
	m->ffn = 4 * m->hidden;
	m->ffn_kind = FUZZ_PICK(in, FFN_SWIGLU, FFN_GELU);
	m->vocab = 32000;
	m->seq = FUZZ_PICK(in, 512, 1024, 2048);
	m->max_pos = 2048;
	m->gbs = FUZZ_PICK(in, 8, 16, 32);
	m->dtype_bytes = 2;
	model_derive_layers(m);
	for (int l = 1; l <= m->layers; l++) {
		double f = fuzz_range(in, 0.5, 2.0);

		m->layer[l].flops_per_token *= f;
		m->layer[l].act_bytes_per_token *= f;
	}
	return m;
}

/* The cluster file's text (malloc'd) for a model of states bytes of
 * weights, gradients and optimizer: 1 to 3 groups, each its own GPU type
 * whose memory is 2 GiB plus 0.3 to 3 times an even share of the states
 * (from nothing fits to everything fits), at most FUZZ_GEN_MAX_GPUS GPUs. */
static inline char *fuzz_gen_cluster(struct fuzz_in *in, double states)
{
	int n_group = 1 + (int)(fuzz_byte(in) % 3), gpn[3], nodes[3], total = 0;
	size_t cap = 4096, len = 0;
	char *s = xmalloc(cap);

	for (int g = 0; g < n_group; g++) {
		gpn[g] = FUZZ_PICK(in, 1, 2, 4);
		nodes[g] = 1 + (int)(fuzz_byte(in) % (unsigned)(4 / gpn[g]));
		if (total + gpn[g] * nodes[g] > FUZZ_GEN_MAX_GPUS)
			nodes[g] = 1;
		total += gpn[g] * nodes[g];
	}
	len += (size_t)snprintf(s + len, cap - len, "{\"name\": \"fuzz-gen\", \"gpu_types\": {");
	for (int g = 0; g < n_group; g++)
		len += (size_t)snprintf(s + len, cap - len,
					"%s\"gpu%d\": {\"peak_bf16_tflops\": %.6g, \"memory_GiB\": %.6g, "
					"\"hbm_GBps\": %.6g, \"efficiency_max\": %.4g, \"efficiency_half_gflop\": %.4g}",
					g ? ", " : "", g, fuzz_range(in, 100, 1000),
					2 + fuzz_range(in, 0.3, 3.0) * states / total / (1 << 30),
					fuzz_range(in, 800, 3400), fuzz_range(in, 0.4, 0.7),
					fuzz_range(in, 0, 50));
	len += (size_t)snprintf(s + len, cap - len, "}, \"groups\": [");
	for (int g = 0; g < n_group; g++)
		len += (size_t)snprintf(s + len, cap - len,
					"%s{\"name\": \"g%d\", \"nodes\": %d, \"gpus_per_node\": %d, \"gpu\": \"gpu%d\", "
					"\"intra_node_GBps\": %.6g, \"intra_node_latency_us\": 2, "
					"\"inter_node_Gbps\": %.6g, \"inter_node_latency_us\": 5, \"fabric\": \"f%u\"}",
					g ? ", " : "", g, nodes[g], gpn[g], g, fuzz_range(in, 16, 450),
					fuzz_range(in, 50, 3200), fuzz_byte(in) & 1);
	snprintf(s + len, cap - len, "], \"inter_fabric_Gbps\": 400, \"inter_fabric_latency_us\": 10}\n");
	return s;
}

#endif
