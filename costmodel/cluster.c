/* cluster.c: loading cluster files (GPU types, node groups, fabrics),
 * converting the file's units (TFLOP/s, GiB, GB/s, Gb/s, us) to FLOP/s,
 * bytes, bytes/s and seconds once. */
#include "cluster.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "strategy.h"
#include "util.h"

/* Ranges that reject absurd inputs (typos, wrong units, 1e-300 figures that
 * would print 300-digit times). A field outside its range fails with
 * "field 'PATH' must be a number in [MIN, MAX]":
 *   peak_bf16_tflops, peak_fp8_tflops   [0.1, 1e5] TFLOP/s
 *   memory_GiB                          [0.125, 1e5] GiB
 *   hbm_GBps                            [1, 1e6] GB/s
 *   intra_node_GBps                     [0.1, 1e6] GB/s
 *   inter_node_Gbps, inter_fabric_Gbps  [0.1, 1e7] Gb/s
 *   efficiency_max, fp8_efficiency_max, flash_efficiency,
 *   intra_node_efficiency, inter_node_efficiency   [0.01, 1]
 *   efficiency_half_gflop               [0, 1e9] GFLOP
 *   latencies (us)                      [0, 1e6]
 *   nodes [1, 1e6], gpus_per_node [1, 1024], at most 1e7 GPUs and
 *   MAX_GROUPS (16) groups in all. */
#define MIN_TFLOPS 0.1
#define MIN_GIB 0.125
#define MIN_HBM_GBPS 1.0
#define MIN_GBPS 0.1
#define MIN_NET_GBPS 0.1
#define MIN_EFF 0.01
#define MAX_TFLOPS 1e5
#define MAX_GIB 1e5
#define MAX_GBPS 1e6		/* GB/s, HBM and intra-node links */
#define MAX_NET_GBPS 1e7	/* Gb/s, a node's or a fabric's network */
#define MAX_LATENCY_US 1e6
#define MAX_HALF_GFLOP 1e9
#define MAX_NODES 1000000
#define MAX_GPUS_PER_NODE 1024
#define MAX_TOTAL_GPUS 10000000

/* Defaults of the fraction of a link's bandwidth that NCCL reaches. */
#define DEFAULT_INTRA_EFF 0.75
#define DEFAULT_INTER_EFF 0.9

static const char *const root_fields[] = {
	"name", "source", "note", "gpu_types", "groups", "inter_fabric_Gbps",
	"inter_fabric_latency_us", NULL};
static const char *const gpu_fields[] = {
	"peak_bf16_tflops", "memory_GiB", "hbm_GBps", "efficiency_max",
	"efficiency_half_gflop", "peak_fp8_tflops", "fp8_efficiency_max",
	"flash_efficiency", "source", "note", NULL};
static const char *const group_fields[] = {
	"name", "nodes", "gpus_per_node", "gpu", "intra_node_GBps",
	"intra_node_latency_us", "inter_node_Gbps", "inter_node_latency_us",
	"intra_node_efficiency", "inter_node_efficiency", "fabric", "source",
	"note", NULL};

/* Reads a number in [min, max], min > 0 (scaled by unit into *out); when
 * optional and missing, *out keeps its value. */
static int pos_num(const cJSON *obj, const char *where, const char *key,
		   bool required, double min, double max, double unit,
		   double *out, struct err *e)
{
	double v = 0;

	if (json_num(obj, where, key, required, min, max, &v, e))
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		*out = v * unit;
	return 0;
}

/* Reads a required latency in microseconds, [0, MAX_LATENCY_US], as seconds. */
static int latency(const cJSON *obj, const char *where, const char *key,
		   double *out, struct err *e)
{
	double us;

	if (json_num(obj, where, key, true, 0, MAX_LATENCY_US, &us, e))
		return -1;
	*out = us * 1e-6;
	return 0;
}

/* Reads gpu_types.<name> into g: peak TFLOP/s -> FLOP/s, GiB -> bytes,
 * GB/s -> bytes/s, GFLOP -> FLOP (efficiency_half_gflop optional, default 0:
 * constant efficiency; peak_fp8_tflops optional, default 0: no FP8;
 * fp8_efficiency_max optional, default efficiency_max; flash_efficiency
 * optional, default 0: the compute model's). */
static int read_gpu(struct gpu_type *g, const cJSON *o, struct err *e)
{
	char where[160];

	snprintf(where, sizeof where, "gpu_types.%s", o->string);
	g->name = xstrdup(o->string);
	if (!cJSON_IsObject(o))
		return err_set(e, "field '%s' must be an object", where);
	g->eff_half_flop = 0;
	g->peak_fp8_flops = 0;
	g->fp8_eff_max = 0;
	g->flash_eff = 0;
	if (json_keys(o, where, gpu_fields, e) ||
	    pos_num(o, where, "peak_bf16_tflops", true, MIN_TFLOPS, MAX_TFLOPS,
		    1e12, &g->peak_flops, e) ||
	    pos_num(o, where, "memory_GiB", true, MIN_GIB, MAX_GIB, 1073741824.0,
		    &g->mem_bytes, e) ||
	    pos_num(o, where, "hbm_GBps", true, MIN_HBM_GBPS, MAX_GBPS, 1e9,
		    &g->hbm_bw, e) ||
	    pos_num(o, where, "efficiency_max", true, MIN_EFF, 1, 1, &g->eff_max, e) ||
	    json_num(o, where, "efficiency_half_gflop", false, 0, MAX_HALF_GFLOP,
		     &g->eff_half_flop, e) ||
	    pos_num(o, where, "peak_fp8_tflops", false, MIN_TFLOPS, MAX_TFLOPS,
		    1e12, &g->peak_fp8_flops, e) ||
	    pos_num(o, where, "fp8_efficiency_max", false, MIN_EFF, 1, 1,
		    &g->fp8_eff_max, e) ||
	    pos_num(o, where, "flash_efficiency", false, MIN_EFF, 1, 1,
		    &g->flash_eff, e))
		return -1;
	g->eff_half_flop *= 1e9;
	if (g->fp8_eff_max <= 0)
		g->fp8_eff_max = g->eff_max;
	return 0;
}

static int read_gpus(struct cluster *c, const cJSON *doc, struct err *e)
{
	const cJSON *gt = cJSON_GetObjectItemCaseSensitive(doc, "gpu_types");
	const cJSON *it;

	if (!gt)
		return err_set(e, "missing field 'gpu_types'");
	if (!cJSON_IsObject(gt) || !gt->child)
		return err_set(e, "field 'gpu_types' must be a non-empty object");
	c->gpu = xcalloc((size_t)cJSON_GetArraySize(gt), sizeof *c->gpu);
	cJSON_ArrayForEach(it, gt)
		if (read_gpu(&c->gpu[c->n_gpu++], it, e))
			return -1;
	return 0;
}

/* Index of the GPU type called name, or -1. */
static int find_gpu(const struct cluster *c, const char *name)
{
	for (int i = 0; i < c->n_gpu; i++)
		if (strcmp(c->gpu[i].name, name) == 0)
			return i;
	return -1;
}

/* Reads the numbers of one group: counts, links (GB/s per GPU inside the
 * node, Gb/s per node across nodes, both one direction), latencies. */
static int read_group_links(struct node_group *g, const cJSON *o,
			    const char *where, struct err *e)
{
	g->intra_eff = DEFAULT_INTRA_EFF;
	g->inter_eff = DEFAULT_INTER_EFF;
	return json_int(o, where, "nodes", true, 1, MAX_NODES, &g->nodes, e) ||
	       json_int(o, where, "gpus_per_node", true, 1, MAX_GPUS_PER_NODE,
			&g->gpus_per_node, e) ||
	       pos_num(o, where, "intra_node_GBps", true, MIN_GBPS, MAX_GBPS, 1e9,
		       &g->intra_bw, e) ||
	       latency(o, where, "intra_node_latency_us", &g->intra_lat, e) ||
	       pos_num(o, where, "inter_node_Gbps", true, MIN_NET_GBPS,
		       MAX_NET_GBPS, 1e9 / 8, &g->inter_bw, e) ||
	       latency(o, where, "inter_node_latency_us", &g->inter_lat, e) ||
	       pos_num(o, where, "intra_node_efficiency", false, MIN_EFF, 1, 1,
		       &g->intra_eff, e) ||
	       pos_num(o, where, "inter_node_efficiency", false, MIN_EFF, 1, 1,
		       &g->inter_eff, e) ? -1 : 0;
}

/* Reads groups[i] into c->group[i]; fabric[i] gets its fabric name
 * (pointing into the document). */
static int read_group(struct cluster *c, int i, const cJSON *o,
		      const char **fabric, struct err *e)
{
	struct node_group *g = &c->group[i];
	const char *name, *gpu;
	char where[32];

	snprintf(where, sizeof where, "groups[%d]", i);
	fabric[i] = "default";
	if (!cJSON_IsObject(o))
		return err_set(e, "field '%s' must be an object", where);
	if (json_keys(o, where, group_fields, e) ||
	    json_str(o, where, "name", true, &name, e))
		return -1;
	g->name = xstrdup(name);
	for (int j = 0; j < i; j++)
		if (strcmp(c->group[j].name, name) == 0)
			return err_set(e, "%s.name: duplicate group name '%s'",
				       where, name);
	if (json_str(o, where, "gpu", true, &gpu, e) ||
	    json_str(o, where, "fabric", false, &fabric[i], e) ||
	    read_group_links(g, o, where, e))
		return -1;
	g->gpu = find_gpu(c, gpu);
	if (g->gpu < 0)
		return err_set(e, "%s.gpu: unknown GPU type '%s'", where, gpu);
	return 0;
}

/* Numbers the distinct fabric names in order of appearance. Returns how
 * many there are. */
static int number_fabrics(struct cluster *c, const char **fabric)
{
	int n = 0;

	for (int i = 0; i < c->n_group; i++) {
		int j = 0;

		while (j < i && strcmp(fabric[j], fabric[i]) != 0)
			j++;
		c->group[i].fabric = j < i ? c->group[j].fabric : n++;
	}
	return n;
}

/* The link between fabrics (Gb/s per node, one direction; latency us):
 * required when the groups sit on more than one fabric, else 0. */
static int read_fabric(struct cluster *c, const cJSON *doc, const char **fabric,
		       struct err *e)
{
	int n = number_fabrics(c, fabric), other = 0;

	c->fabric_bw = c->fabric_lat = 0;
	while (other < c->n_group - 1 && c->group[other].fabric == 0)
		other++;
	if (n > 1 && !cJSON_GetObjectItemCaseSensitive(doc, "inter_fabric_Gbps"))
		return err_set(e, "missing field 'inter_fabric_Gbps': groups[0] "
			       "and groups[%d] sit on different fabrics ('%s', '%s')",
			       other, fabric[0], fabric[other]);
	if (pos_num(doc, "", "inter_fabric_Gbps", false, MIN_NET_GBPS,
		    MAX_NET_GBPS, 1e9 / 8, &c->fabric_bw, e))
		return -1;
	if (n > 1 || cJSON_GetObjectItemCaseSensitive(doc, "inter_fabric_latency_us"))
		return latency(doc, "", "inter_fabric_latency_us", &c->fabric_lat, e);
	return 0;
}

static int read_groups(struct cluster *c, const cJSON *doc, struct err *e)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "groups");
	const cJSON *it;
	const char **fabric = NULL;
	long total = 0;
	int rc = -1;

	if (!arr)
		return err_set(e, "missing field 'groups'");
	if (!cJSON_IsArray(arr) || !arr->child)
		return err_set(e, "field 'groups' must be a non-empty array");
	c->group = xcalloc((size_t)cJSON_GetArraySize(arr), sizeof *c->group);
	fabric = xcalloc((size_t)cJSON_GetArraySize(arr), sizeof *fabric);
	cJSON_ArrayForEach(it, arr) {
		int i = c->n_group++;

		if (i == MAX_GROUPS) {
			err_set(e, "field 'groups' must hold at most %d node groups", MAX_GROUPS);
			goto fail;
		}
		if (read_group(c, i, it, fabric, e))
			goto fail;
		total += (long)c->group[i].nodes * c->group[i].gpus_per_node;
	}
	if (total > MAX_TOTAL_GPUS) {
		err_set(e, "field 'groups' must hold at most %d GPUs in all, not %ld",
			MAX_TOTAL_GPUS, total);
		goto fail;
	}
	c->total_gpus = (int)total;
	c->mem_allowance = -1;
	rc = read_fabric(c, doc, fabric, e);
fail:
	free(fabric);
	return rc;
}

int cluster_load(struct cluster **out, const char *path, struct err *e)
{
	struct cluster *c = NULL;
	cJSON *doc = json_load(path, e);
	const char *name, *s;

	*out = NULL;
	if (!doc)
		return -1;
	c = xcalloc(1, sizeof *c);
	if (!cJSON_IsObject(doc)) {
		err_set(e, "the document must be a JSON object");
		goto fail;
	}
	if (json_keys(doc, "", root_fields, e) ||
	    json_str(doc, "", "name", true, &name, e) ||
	    json_str(doc, "", "source", false, &s, e) ||
	    json_str(doc, "", "note", false, &s, e))
		goto fail;
	c->name = xstrdup(name);
	if (read_gpus(c, doc, e) || read_groups(c, doc, e))
		goto fail;
	cJSON_Delete(doc);
	*out = c;
	return 0;
fail:
	err_prefix(e, "%s", path);
	cJSON_Delete(doc);
	cluster_free(c);
	return -1;
}

void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_gpu; i++)
		free(c->gpu[i].name);
	for (int i = 0; i < c->n_group; i++)
		free(c->group[i].name);
	free(c->gpu);
	free(c->group);
	free(c->name);
	free(c);
}
