/* cluster_read.c: loading cluster files (GPU types, node groups, fabrics),
 * with GPU types taken from the GPU catalogue by name, converting the file's
 * units (TFLOP/s, GiB, GB/s, Gb/s, us) to FLOP/s, bytes, bytes/s and seconds
 * once. */
#include "cluster_read.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "datafile.h"
#include "json.h"
#include "strategy.h"
#include "util.h"

/* Ranges that reject absurd inputs (typos, wrong units, 1e-300 figures that
 * would print 300-digit times). A field outside its range fails with
 * "field 'PATH' must be a number in [MIN, MAX]":
 *   peak_bf16_tflops, peak_fp8_tflops   [0.1, 1e5] TFLOP/s
 *   memory_GiB                          [0.125, 1e5] GiB
 *   memory_allowance_GiB (root)         [0, 1e5] GiB
 *   hbm_GBps                            [1, 1e6] GB/s
 *   intra_node_GBps                     [0.1, 1e6] GB/s
 *   inter_node_Gbps, inter_fabric_Gbps  [0.1, 1e7] Gb/s
 *   efficiency_max, fp8_efficiency_max, flash_efficiency, hbm_efficiency,
 *   intra_node_efficiency, inter_node_efficiency   [0.01, 1]
 *   efficiency_half_gflop               [0, 1e9] GFLOP
 *   latencies (us)                      [0, 1e6]
 *   link_GBps, host_link_GBps           [0.1, 1e6] GB/s
 *   price_per_gpu_hour                  [0.001, 1e4] USD
 *   nodes [1, 1e6], gpus_per_node [1, 1024], at most 1e7 GPUs and
 *   MAX_GROUPS (16) groups in all. */
#define MIN_TFLOPS	  0.1
#define MIN_GIB		  0.125
#define MIN_HBM_GBPS	  1.0
#define MIN_GBPS	  0.1
#define MIN_NET_GBPS	  0.1
#define MIN_EFF		  0.01
#define MAX_TFLOPS	  1e5
#define MAX_GIB		  1e5
#define MAX_GBPS	  1e6 /* GB/s, HBM and intra-node links */
#define MAX_NET_GBPS	  1e7 /* Gb/s, a node's or a fabric's network */
#define MAX_LATENCY_US	  1e6
#define MAX_HALF_GFLOP	  1e9
#define MAX_NODES	  1000000
#define MAX_GPUS_PER_NODE 1024
#define MAX_TOTAL_GPUS	  10000000
#define MIN_PRICE	  0.001 /* USD per GPU-hour */
#define MAX_PRICE	  1e4

/* Defaults of the fraction of a link's bandwidth that NCCL reaches. */
#define DEFAULT_INTRA_EFF 0.75
#define DEFAULT_INTER_EFF 0.9

static const char *const root_fields[] = {
	"name", "source", "note", "gpu_types", "groups", "inter_fabric_Gbps",
	"inter_fabric_latency_us", "memory_allowance_GiB", "calibration", NULL
};
/* The figures of a GPU type, in a cluster file and in the catalogue. */
#define GPU_FIGURES                                                           \
	"vendor", "peak_bf16_tflops", "memory_GiB", "hbm_GBps", "link_GBps",  \
		"efficiency_max", "efficiency_half_gflop", "peak_fp8_tflops", \
		"fp8_efficiency_max", "flash_efficiency", "hbm_efficiency",   \
		"host_link_GBps"
static const char *const gpu_figures[] = { GPU_FIGURES, NULL };
static const char *const gpu_fields[] = {
	GPU_FIGURES, "catalogue", "source", "note", NULL
};
static const char *const group_fields[] = {
	"name", "nodes", "gpus_per_node", "gpu", "intra_node_GBps",
	"intra_node_latency_us", "inter_node_Gbps", "inter_node_latency_us",
	"intra_node_efficiency", "inter_node_efficiency", "fabric",
	"price_per_gpu_hour", "source", "note", NULL
};
/* The catalogue (CLUSTER_CATALOGUE): its root and its entries ("gpus".NAME),
 * whose "source" is an object naming the source of each figure. */
static const char *const catalogue_fields[] = {
	"name", "source", "note", "gpus", NULL
};
static const char *const entry_fields[] = {
	GPU_FIGURES, "link", "calibrated", "source", "note", NULL
};
static const char *const vendor_names[] = { "nvidia", "amd" };
/* Display names and collective libraries, by enum gpu_vendor. */
static const char *const vendor_display[] = { "NVIDIA", "AMD" };
static const char *const vendor_library[] = { "NCCL", "RCCL" };

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

/* Reads "vendor" ("nvidia" or "amd"; optional, default NVIDIA). */
static int read_vendor(const cJSON *o, const char *where,
		       enum gpu_vendor *out, struct err *e)
{
	const char *v = NULL;

	*out = VENDOR_NVIDIA;
	if (json_str(o, where, "vendor", false, &v, e))
		return -1;
	if (!v)
		return 0;
	for (int i = 0; i < (int)(sizeof vendor_names / sizeof *vendor_names); i++)
		if (strcmp(v, vendor_names[i]) == 0) {
			*out = (enum gpu_vendor)i;
			return 0;
		}
	return err_set(e, "field '%s.vendor' must be \"nvidia\" or \"amd\", not '%s'",
		       where, v);
}

/* Reads the figures of a GPU type (GPU_FIGURES) of object o, called where
 * in messages, into g: peak TFLOP/s -> FLOP/s, GiB -> bytes, GB/s ->
 * bytes/s, GFLOP -> FLOP. efficiency_max is required when need_eff (a
 * cluster's type; optional in the catalogue); efficiency_half_gflop
 * optional, default 0: constant efficiency; peak_fp8_tflops optional,
 * default 0: no FP8; fp8_efficiency_max optional, default efficiency_max;
 * flash_efficiency optional, default 0: the compute model's; hbm_efficiency
 * optional, default 0: COMPUTE_HBM_EFF (compute.h); link_GBps and
 * host_link_GBps optional, default 0: none; vendor optional, default
 * NVIDIA. Other keys are
 * not looked at. */
static int read_figures(struct gpu_type *g, const cJSON *o, const char *where,
			bool need_eff, struct err *e)
{
	g->eff_max = 0;
	g->eff_half_flop = 0;
	g->peak_fp8_flops = 0;
	g->fp8_eff_max = 0;
	g->flash_eff = 0;
	g->hbm_eff = 0;
	g->link_bw = 0;
	g->host_bw = 0;
	if (read_vendor(o, where, &g->vendor, e) ||
	    pos_num(o, where, "peak_bf16_tflops", true, MIN_TFLOPS, MAX_TFLOPS,
		    1e12, &g->peak_flops, e) ||
	    pos_num(o, where, "memory_GiB", true, MIN_GIB, MAX_GIB, 1073741824.0,
		    &g->mem_bytes, e) ||
	    pos_num(o, where, "hbm_GBps", true, MIN_HBM_GBPS, MAX_GBPS, 1e9,
		    &g->hbm_bw, e) ||
	    pos_num(o, where, "link_GBps", false, MIN_GBPS, MAX_GBPS, 1e9,
		    &g->link_bw, e) ||
	    pos_num(o, where, "host_link_GBps", false, MIN_GBPS, MAX_GBPS, 1e9,
		    &g->host_bw, e) ||
	    pos_num(o, where, "efficiency_max", need_eff, MIN_EFF, 1, 1,
		    &g->eff_max, e) ||
	    json_num(o, where, "efficiency_half_gflop", false, 0, MAX_HALF_GFLOP,
		     &g->eff_half_flop, e) ||
	    pos_num(o, where, "peak_fp8_tflops", false, MIN_TFLOPS, MAX_TFLOPS,
		    1e12, &g->peak_fp8_flops, e) ||
	    pos_num(o, where, "fp8_efficiency_max", false, MIN_EFF, 1, 1,
		    &g->fp8_eff_max, e) ||
	    pos_num(o, where, "flash_efficiency", false, MIN_EFF, 1, 1,
		    &g->flash_eff, e) ||
	    pos_num(o, where, "hbm_efficiency", false, MIN_EFF, 1, 1,
		    &g->hbm_eff, e))
		return -1;
	g->eff_half_flop *= 1e9;
	if (g->fp8_eff_max <= 0)
		g->fp8_eff_max = g->eff_max;
	return 0;
}

/* Finds the catalogue for the cluster file at cluster_path: first
 * DIR/../CLUSTER_CATALOGUE with DIR the cluster file's directory (the source
 * tree's clusters/, PREFIX/share/ampplan/clusters when installed), then as
 * datafile_find finds gpus/catalogue.json (beside the binary, the installed
 * data directory, then the working directory). Returns a malloc'd path (caller frees), or NULL
 * with e naming the places tried. */
static char *find_catalogue(const char *cluster_path, struct err *e)
{
	const char *slash = strrchr(cluster_path, '/');
	size_t dir = slash ? (size_t)(slash - cluster_path) + 1 : 0;
	char *beside = xmalloc(dir + sizeof "../" CLUSTER_CATALOGUE), *found;
	FILE *f;

	memcpy(beside, cluster_path, dir);
	strcpy(beside + dir, "../" CLUSTER_CATALOGUE);
	if ((f = fopen(beside, "r"))) {
		fclose(f);
		return beside;
	}
	found = datafile_find("gpus", "catalogue", e);
	if (!found)
		err_prefix(e, "the GPU catalogue is not found (no file '%s')", beside);
	free(beside);
	return found;
}

/* Loads and checks the catalogue: the root's keys, and each entry's keys,
 * figures (efficiency_max only where the type is calibrated) and "source"
 * object. Returns the document (caller frees) or NULL with e naming the
 * catalogue file. */
static cJSON *load_catalogue(const char *path, struct err *e)
{
	cJSON *doc = json_load(path, e);
	const cJSON *gpus, *it;
	const char *s;

	if (!doc)
		return NULL;
	gpus = cJSON_GetObjectItemCaseSensitive(doc, "gpus");
	if (!cJSON_IsObject(doc)) {
		err_set(e, "the document must be a JSON object");
		goto fail;
	}
	if (json_keys(doc, "", catalogue_fields, e) ||
	    json_str(doc, "", "name", true, &s, e))
		goto fail;
	if (!cJSON_IsObject(gpus) || !gpus->child) {
		err_set(e, "field 'gpus' must be a non-empty object");
		goto fail;
	}
	cJSON_ArrayForEach(it, gpus)
	{
		struct gpu_type g;
		bool calibrated = false;
		char where[160];

		snprintf(where, sizeof where, "gpus.%s", it->string);
		if (!cJSON_IsObject(it)) {
			err_set(e, "field '%s' must be an object", where);
			goto fail;
		}
		if (json_keys(it, where, entry_fields, e) ||
		    json_bool(it, where, "calibrated", false, &calibrated, e) ||
		    json_str(it, where, "link", false, &s, e) ||
		    read_figures(&g, it, where, calibrated, e))
			goto fail;
		if (!calibrated && cJSON_GetObjectItemCaseSensitive(it, "efficiency_max")) {
			err_set(e, "field '%s.efficiency_max' needs \"calibrated\": true "
				   "(only calibrated types carry efficiencies)",
				where);
			goto fail;
		}
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "source"))) {
			err_set(e, "field '%s.source' must be an object naming the source of "
				   "each figure",
				where);
			goto fail;
		}
	}
	return doc;
fail:
	err_prefix(e, "%s", path);
	cJSON_Delete(doc);
	return NULL;
}

/* Appends the catalogue's names to msg (a buffer of n bytes, NUL included),
 * separated by commas, and a closing ')'; a list that does not fit is cut. */
static void list_names(const cJSON *gpus, char *msg, size_t n)
{
	const cJSON *it;
	size_t at = strlen(msg);

	cJSON_ArrayForEach(it, gpus)
	{
		int w;

		if (at + 1 >= n)
			return;
		w = snprintf(msg + at, n - at, "%s%s", it == gpus->child ? "" : ", ",
			     it->string);
		if (w < 0 || (size_t)w >= n - at)
			return;
		at += (size_t)w;
	}
	if (at + 1 < n)
		strcpy(msg + at, ")");
}

/* Builds gpu_types.<name> o with a "catalogue" reference into a new object:
 * the catalogue entry's figures, each replaced by o's own where o gives it.
 * *cat is the catalogue, loaded at the first reference (caller frees).
 * Returns the object (caller frees) or NULL with e set. */
static cJSON *from_catalogue(const cJSON *o, const char *where, const char *path,
			     cJSON **cat, struct err *e)
{
	char *file = NULL;
	const char *name;
	const cJSON *entry, *gpus;
	cJSON *merged;

	if (json_str(o, where, "catalogue", true, &name, e))
		return NULL;
	if (!*cat) {
		file = find_catalogue(path, e);
		*cat = file ? load_catalogue(file, e) : NULL;
		free(file);
		if (!*cat) {
			err_prefix(e, "%s.catalogue", where);
			return NULL;
		}
	}
	gpus = cJSON_GetObjectItemCaseSensitive(*cat, "gpus");
	entry = cJSON_GetObjectItemCaseSensitive(gpus, name);
	if (!entry) {
		err_set(e, "%s.catalogue: unknown GPU '%s' (the catalogue has: ", where, name);
		list_names(gpus, e->msg, sizeof e->msg);
		return NULL;
	}
	if (!cJSON_GetObjectItemCaseSensitive(o, "efficiency_max") &&
	    !cJSON_GetObjectItemCaseSensitive(entry, "efficiency_max")) {
		err_set(e, "missing field '%s.efficiency_max': catalogue GPU '%s' is not "
			   "calibrated (README \"Validation\"), so its efficiency must be given",
			where, name);
		return NULL;
	}
	merged = cJSON_CreateObject();
	for (int i = 0; gpu_figures[i]; i++) {
		const char *k = gpu_figures[i];
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

		if (!v)
			v = cJSON_GetObjectItemCaseSensitive(entry, k);
		if (v)
			cJSON_AddItemToObject(merged, k, cJSON_Duplicate(v, 1));
	}
	return merged;
}

/* Reads gpu_types.<name> into g (read_figures), its figures from the
 * catalogue where it names one (from_catalogue). */
static int read_gpu(struct gpu_type *g, const cJSON *o, const char *path,
		    cJSON **cat, struct err *e)
{
	char where[160];
	cJSON *merged = NULL;
	int rc;

	snprintf(where, sizeof where, "gpu_types.%s", o->string);
	g->name = xstrdup(o->string);
	if (!cJSON_IsObject(o))
		return err_set(e, "field '%s' must be an object", where);
	if (json_keys(o, where, gpu_fields, e))
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(o, "catalogue") &&
	    !(merged = from_catalogue(o, where, path, cat, e)))
		return -1;
	rc = read_figures(g, merged ? merged : o, where, true, e);
	cJSON_Delete(merged);
	return rc;
}

static int read_gpus(struct cluster *c, const cJSON *doc, const char *path,
		     struct err *e)
{
	const cJSON *gt = cJSON_GetObjectItemCaseSensitive(doc, "gpu_types");
	const cJSON *it;
	cJSON *cat = NULL;
	int rc = 0;

	if (!gt)
		return err_set(e, "missing field 'gpu_types'");
	if (!cJSON_IsObject(gt) || !gt->child)
		return err_set(e, "field 'gpu_types' must be a non-empty object");
	c->gpu = xcalloc((size_t)cJSON_GetArraySize(gt), sizeof *c->gpu);
	cJSON_ArrayForEach(it, gt) if ((rc = read_gpu(&c->gpu[c->n_gpu++], it, path, &cat, e))) break;
	cJSON_Delete(cat);
	return rc;
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
 * node, Gb/s per node across nodes, both one direction), latencies, the
 * price per GPU-hour (optional; 0 when absent). intra_node_GBps is
 * optional when link_bw (bytes/s, the GPU type's link_GBps) is not 0, and
 * defaults to it. */
static int read_group_links(struct node_group *g, const cJSON *o,
			    const char *where, double link_bw, struct err *e)
{
	g->intra_eff = DEFAULT_INTRA_EFF;
	g->inter_eff = DEFAULT_INTER_EFF;
	g->intra_bw = link_bw;
	g->price_gpu_hour = 0;
	return json_int(o, where, "nodes", true, 1, MAX_NODES, &g->nodes, e) ||
			       json_int(o, where, "gpus_per_node", true, 1, MAX_GPUS_PER_NODE,
					&g->gpus_per_node, e) ||
			       pos_num(o, where, "intra_node_GBps", link_bw <= 0, MIN_GBPS,
				       MAX_GBPS, 1e9, &g->intra_bw, e) ||
			       latency(o, where, "intra_node_latency_us", &g->intra_lat, e) ||
			       pos_num(o, where, "inter_node_Gbps", true, MIN_NET_GBPS,
				       MAX_NET_GBPS, 1e9 / 8, &g->inter_bw, e) ||
			       latency(o, where, "inter_node_latency_us", &g->inter_lat, e) ||
			       pos_num(o, where, "intra_node_efficiency", false, MIN_EFF, 1, 1,
				       &g->intra_eff, e) ||
			       pos_num(o, where, "inter_node_efficiency", false, MIN_EFF, 1, 1,
				       &g->inter_eff, e) ||
			       pos_num(o, where, "price_per_gpu_hour", false, MIN_PRICE, MAX_PRICE,
				       1, &g->price_gpu_hour, e)
		       ? -1
		       : 0;
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
	    json_str(o, where, "fabric", false, &fabric[i], e))
		return -1;
	g->gpu = find_gpu(c, gpu);
	if (g->gpu < 0)
		return err_set(e, "%s.gpu: unknown GPU type '%s'", where, gpu);
	return read_group_links(g, o, where, c->gpu[g->gpu].link_bw, e);
}

/* Appends "'a', 'b'" (the names of the groups whose GPUs are of vendor v)
 * to buf. */
static void vendor_groups(const struct cluster *c, enum gpu_vendor v, char *buf,
			  size_t n)
{
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < c->n_group; i++) {
		int w;

		if (c->gpu[c->group[i].gpu].vendor != v)
			continue;
		w = snprintf(buf + at, n - at, "%s'%s'", at ? ", " : "", c->group[i].name);
		if (w < 0 || (size_t)w >= n - at)
			return;
		at += (size_t)w;
	}
}

/* One job runs one collective library: NCCL (NVIDIA) and RCCL (AMD) do not
 * join one communicator, so groups of both vendors cannot train together. */
static int check_vendors(const struct cluster *c, struct err *e)
{
	enum gpu_vendor first = c->gpu[c->group[0].gpu].vendor;
	char a[160], b[160];

	for (int i = 1; i < c->n_group; i++) {
		enum gpu_vendor v = c->gpu[c->group[i].gpu].vendor;

		if (v == first)
			continue;
		vendor_groups(c, first, a, sizeof a);
		vendor_groups(c, v, b, sizeof b);
		return err_set(e, "groups: %s GPUs in %s and %s GPUs in %s: %s and %s "
				  "do not form one job (one collective library per job); plan "
				  "each vendor's groups as a cluster of its own",
			       vendor_display[first], a, vendor_display[v], b,
			       vendor_library[first], vendor_library[v]);
	}
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
	cJSON_ArrayForEach(it, arr)
	{
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
	rc = check_vendors(c, e) ? -1 : read_fabric(c, doc, fabric, e);
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
	if (read_gpus(c, doc, path, e) || read_groups(c, doc, e) ||
	    json_num(doc, "", "memory_allowance_GiB", false, 0, MAX_GIB, &c->mem_allowance, e))
		goto fail;
	if (c->mem_allowance > 0)
		c->mem_allowance *= 1073741824.0;
	cJSON_Delete(doc);
	*out = c;
	return 0;
fail:
	err_prefix(e, "%s", path);
	cJSON_Delete(doc);
	cluster_free(c);
	return -1;
}
