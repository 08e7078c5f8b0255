/* fuzz_cluster.c: libFuzzer target for the cluster loader (clusters/
 * format). Each input is written to a temporary file and loaded with
 * cluster_load; a cluster that loads must be consistent: at least one GPU
 * type and group, every group's GPU index in range, total_gpus the sum of
 * nodes x gpus_per_node, positive finite figures. A failure must carry a
 * message.
 *
 *   make fuzz              every target for FUZZ_SECONDS (default 60)
 *   build/fuzz/fuzz_cluster tests/fuzz/corpus/cluster    by hand
 * Seeds: tests/fuzz/corpus/cluster (the shipped clusters, a few bad). */
#include <math.h>

#include "cluster.h"
#include "cluster_read.h"
#include "fuzz_util.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *path;
	struct cluster *c = NULL;
	struct err e = { { 0 } };
	long total = 0;

	if (!path)
		path = fuzz_tmpfile("cluster");
	fuzz_write(path, data, size);
	if (cluster_load(&c, path, &e)) {
		FUZZ_ASSERT(e.msg[0] != '\0');
		return 0;
	}
	FUZZ_ASSERT(c && c->name && c->n_gpu >= 1 && c->n_group >= 1);
	for (int i = 0; i < c->n_gpu; i++) {
		const struct gpu_type *g = &c->gpu[i];
		FUZZ_ASSERT(g->name && isfinite(g->peak_flops) && g->peak_flops > 0);
		FUZZ_ASSERT(isfinite(g->mem_bytes) && g->mem_bytes > 0);
		FUZZ_ASSERT(g->eff_max > 0 && g->eff_max <= 1);
	}
	for (int i = 0; i < c->n_group; i++) {
		const struct node_group *g = &c->group[i];
		FUZZ_ASSERT(g->name && g->gpu >= 0 && g->gpu < c->n_gpu);
		FUZZ_ASSERT(g->nodes >= 1 && g->gpus_per_node >= 1);
		FUZZ_ASSERT(isfinite(g->intra_bw) && isfinite(g->inter_bw));
		total += (long)g->nodes * g->gpus_per_node;
	}
	FUZZ_ASSERT(total == c->total_gpus);
	cluster_free(c);
	return 0;
}
