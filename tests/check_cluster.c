/* check_cluster.c: cluster loading, unit conversion, fabrics and defaults,
 * the shipped cluster files, bad inputs; the GPU catalogue against
 * shared/reference/hardware_gpus.csv, references and overrides, vendors;
 * prices, cost per iteration and per million tokens, --objective cost. */
#include <cjson/cJSON.h>
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_read.h"
#include "strategy.h"
#include "testutil.h"
#include "util.h"

#define GiB 1073741824.0

static struct cluster *load_ok(const char *path)
{
	struct cluster *c = NULL;
	struct err e = { "" };

	ck_assert_msg(cluster_load(&c, path, &e) == 0, "%s: %s", path, e.msg);
	ck_assert_ptr_nonnull(c);
	return c;
}

START_TEST(test_mixed)
{
	struct cluster *c = load_ok("clusters/mixed.json");
	const struct node_group *h = &c->group[0], *a = &c->group[1];

	ck_assert_int_eq(c->n_gpu, 2);
	ck_assert_int_eq(c->n_group, 2);
	ck_assert_int_eq(c->total_gpus, 64); /* 4*8 + 4*8 */
	ck_assert_str_eq(c->gpu[0].name, "H100-SXM5-80GB");
	ck_assert_rel(c->gpu[0].peak_flops, 989.4e12, 1e-15);
	ck_assert_rel(c->gpu[0].mem_bytes, 80 * GiB, 1e-15);
	ck_assert_rel(c->gpu[0].hbm_bw, 3350e9, 1e-15);
	/* The efficiencies are calibrated (README "Validation") and change
	 * with the calibration: in range only. The unit conversion of
	 * efficiency_half_gflop is checked in test_fabrics_and_defaults. */
	ck_assert(c->gpu[0].eff_max > 0 && c->gpu[0].eff_max <= 1);
	ck_assert(c->gpu[0].eff_half_flop >= 0);
	/* H100 SXM dense FP8: 1979 TFLOP/s (hardware_gpus.csv). */
	ck_assert_rel(c->gpu[0].peak_fp8_flops, 1979e12, 1e-15);
	ck_assert(c->gpu[0].fp8_eff_max > 0 && c->gpu[0].fp8_eff_max <= 1);
	ck_assert_str_eq(c->gpu[1].name, "A100-SXM4-40GB");
	ck_assert_rel(c->gpu[1].peak_flops, 312e12, 1e-15);
	ck_assert_rel(c->gpu[1].mem_bytes, 40 * GiB, 1e-15);
	ck_assert(c->gpu[1].eff_max > 0 && c->gpu[1].eff_max <= 1);
	/* A100: no FP8; fp8_efficiency_max defaults to efficiency_max. */
	ck_assert_rel(c->gpu[1].peak_fp8_flops, 0, 0);
	ck_assert_rel(c->gpu[1].fp8_eff_max, c->gpu[1].eff_max, 0);
	/* no user allowance: the modelled one */
	ck_assert(c->mem_allowance < 0);
	ck_assert_str_eq(h->name, "h100");
	ck_assert_int_eq(h->gpu, 0);
	ck_assert_int_eq(h->nodes, 4);
	ck_assert_int_eq(h->gpus_per_node, 8);
	/* NVLink 4.0: 900 GB/s bidirectional, 450 GB/s one direction. */
	ck_assert_rel(h->intra_bw, 450e9, 1e-15);
	ck_assert_rel(h->intra_lat, 2e-6, 1e-15);
	/* 8 x NDR 400 Gb/s = 3200 Gb/s = 400e9 bytes/s. */
	ck_assert_rel(h->inter_bw, 400e9, 1e-15);
	ck_assert_rel(h->inter_lat, 5e-6, 1e-15);
	ck_assert_rel(h->intra_eff, 0.75, 1e-15); /* defaults */
	ck_assert_rel(h->inter_eff, 0.9, 1e-15);
	ck_assert_int_eq(a->gpu, 1);
	ck_assert_rel(a->intra_bw, 300e9, 1e-15);
	/* 8 x HDR 200 Gb/s = 1600 Gb/s = 200e9 bytes/s. */
	ck_assert_rel(a->inter_bw, 200e9, 1e-15);
	ck_assert_int_eq(h->fabric, 0);
	ck_assert_int_eq(a->fabric, 1);
	/* 400 Gb/s = 50e9 bytes/s; 10 us. */
	ck_assert_rel(c->fabric_bw, 50e9, 1e-15);
	ck_assert_rel(c->fabric_lat, 10e-6, 1e-15);
	cluster_free(c);
}
END_TEST

static const struct {
	const char *path;
	int total_gpus, gpus_per_node;
	double peak, mem, intra_bw, inter_bw;
} shipped[] = {
	/* 16 DGX A100 80GB: 312 TF, 80 GiB, NVLink 3.0 300 GB/s, 8x HDR. */
	{ "clusters/dgx-a100.json", 128, 8, 312e12, 80 * GiB, 300e9, 200e9 },
	/* 16 DGX H100: 989.4 TF, 80 GiB, NVLink 4.0 450 GB/s, 8x NDR. */
	{ "clusters/dgx-h100.json", 128, 8, 989.4e12, 80 * GiB, 450e9, 400e9 },
	/* 8 p4d.24xlarge: A100 40GB, 400 Gb/s EFA = 50e9 bytes/s. */
	{ "clusters/aws-p4d.json", 64, 8, 312e12, 40 * GiB, 300e9, 50e9 },
	/* 4 g4dn.12xlarge: 4 T4 (fp16 65 TF), 16 GiB of which EC2's ECC
	 * leaves 15 GiB, PCIe Gen3 15.75 GB/s, 50 Gb/s = 6.25e9 bytes/s. */
	{ "clusters/aws-g4dn.json", 16, 4, 65e12, 15 * GiB, 15.75e9, 6.25e9 },
	/* Selene: 384 DGX A100 80GB nodes = 3072 GPUs. */
	{ "clusters/selene-a100.json", 3072, 8, 312e12, 80 * GiB, 300e9, 200e9 },
};

START_TEST(test_shipped)
{
	struct cluster *c = load_ok(shipped[_i].path);
	const struct node_group *g = &c->group[0];

	ck_assert_int_eq(c->n_group, 1);
	ck_assert_int_eq(c->total_gpus, shipped[_i].total_gpus);
	ck_assert_int_eq(g->gpus_per_node, shipped[_i].gpus_per_node);
	ck_assert_rel(c->gpu[g->gpu].peak_flops, shipped[_i].peak, 1e-15);
	ck_assert_rel(c->gpu[g->gpu].mem_bytes, shipped[_i].mem, 1e-15);
	ck_assert_rel(g->intra_bw, shipped[_i].intra_bw, 1e-15);
	ck_assert_rel(g->inter_bw, shipped[_i].inter_bw, 1e-15);
	ck_assert_int_eq(g->fabric, 0);
	/* One fabric: no link between fabrics. */
	ck_assert_rel(c->fabric_bw, 0, 0);
	cluster_free(c);
}
END_TEST

static const char three_groups[] =
	"{\"name\": \"three\", \"gpu_types\": {\n"
	"  \"X\": {\"peak_bf16_tflops\": 100, \"memory_GiB\": 0.5,\n"
	"         \"hbm_GBps\": 1000, \"efficiency_max\": 1,\n"
	"         \"efficiency_half_gflop\": 50, \"peak_fp8_tflops\": 250.5,\n"
	"         \"fp8_efficiency_max\": 0.7, \"flash_efficiency\": 0.4},\n"
	"  \"Y\": {\"peak_bf16_tflops\": 200, \"memory_GiB\": 24,\n"
	"         \"hbm_GBps\": 600, \"efficiency_max\": 0.45,\n"
	"         \"peak_fp8_tflops\": 400}},\n"
	" \"groups\": [\n"
	"  {\"name\": \"g0\", \"nodes\": 2, \"gpus_per_node\": 3, \"gpu\": \"Y\",\n"
	"   \"intra_node_GBps\": 16, \"intra_node_latency_us\": 0,\n"
	"   \"inter_node_Gbps\": 100, \"inter_node_latency_us\": 7.5,\n"
	"   \"fabric\": \"a\", \"intra_node_efficiency\": 0.5},\n"
	"  {\"name\": \"g1\", \"nodes\": 1, \"gpus_per_node\": 1, \"gpu\": \"X\",\n"
	"   \"intra_node_GBps\": 16, \"intra_node_latency_us\": 1,\n"
	"   \"inter_node_Gbps\": 8, \"inter_node_latency_us\": 1,\n"
	"   \"fabric\": \"b\", \"inter_node_efficiency\": 0.25},\n"
	"  {\"name\": \"g2\", \"nodes\": 5, \"gpus_per_node\": 2, \"gpu\": \"Y\",\n"
	"   \"intra_node_GBps\": 16, \"intra_node_latency_us\": 1,\n"
	"   \"inter_node_Gbps\": 100, \"inter_node_latency_us\": 1,\n"
	"   \"fabric\": \"a\"}],\n"
	" \"inter_fabric_Gbps\": 80, \"inter_fabric_latency_us\": 20}\n";

/* Fabric numbering by first appearance, optional fields and their
 * defaults, fractional units. */
START_TEST(test_fabrics_and_defaults)
{
	char path[] = "/tmp/check_cluster-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	struct cluster *c;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(three_groups, f);
	fclose(f);
	c = load_ok(path);
	remove(path);
	ck_assert_int_eq(c->total_gpus, 17);  /* 2*3 + 1*1 + 5*2 */
	ck_assert_int_eq(c->group[0].gpu, 1); /* "Y" is the second type */
	ck_assert_int_eq(c->group[1].gpu, 0);
	ck_assert_int_eq(c->group[0].fabric, 0);
	ck_assert_int_eq(c->group[1].fabric, 1);
	ck_assert_int_eq(c->group[2].fabric, 0);
	ck_assert_rel(c->gpu[0].mem_bytes, 0.5 * GiB, 1e-15);
	ck_assert_rel(c->gpu[0].eff_half_flop, 50e9, 1e-15);
	ck_assert_rel(c->gpu[1].eff_half_flop, 0, 0); /* default */
	/* FP8: TFLOP/s -> FLOP/s; fp8_efficiency_max as given, else
	 * efficiency_max; flash_efficiency as given, else 0 (the compute
	 * model's FLASH_RATE x eff_max) */
	ck_assert_rel(c->gpu[0].peak_fp8_flops, 250.5e12, 1e-15);
	ck_assert_rel(c->gpu[0].fp8_eff_max, 0.7, 1e-15);
	ck_assert_rel(c->gpu[0].flash_eff, 0.4, 1e-15);
	ck_assert_rel(c->gpu[1].peak_fp8_flops, 400e12, 1e-15);
	ck_assert_rel(c->gpu[1].fp8_eff_max, 0.45, 1e-15);
	ck_assert_rel(c->gpu[1].flash_eff, 0, 0);
	ck_assert(c->mem_allowance < 0);
	ck_assert_rel(c->group[0].intra_lat, 0, 0);
	ck_assert_rel(c->group[0].inter_lat, 7.5e-6, 1e-15);
	ck_assert_rel(c->group[0].intra_eff, 0.5, 1e-15);
	ck_assert_rel(c->group[0].inter_eff, 0.9, 1e-15);
	ck_assert_rel(c->group[1].intra_eff, 0.75, 1e-15);
	ck_assert_rel(c->group[1].inter_eff, 0.25, 1e-15);
	ck_assert_rel(c->group[1].inter_bw, 1e9, 1e-15); /* 8 Gb/s */
	ck_assert_rel(c->fabric_bw, 10e9, 1e-15);	 /* 80 Gb/s */
	ck_assert_rel(c->fabric_lat, 20e-6, 1e-15);
	cluster_free(c);
}
END_TEST

/* One defect per file; the message names the file and the field. */
static const struct {
	const char *file, *want;
} bad[] = {
	{ "cluster-unknown-gpu.json", ": groups[1].gpu: unknown GPU type 'B200'" },
	{ "cluster-zero-nodes.json", "field 'groups[0].nodes' must be an integer in [1, 1000000]" },
	{ "cluster-absurd-nodes.json", "field 'groups[0].nodes' must be an integer in [1, 1000000]" },
	{ "cluster-negative-bw.json", "field 'groups[0].inter_node_Gbps' must be a number in [0.1, " },
	{ "cluster-zero-bw.json", "field 'groups[0].intra_node_GBps' must be a number in [0.1, " },
	{ "cluster-no-fabric-link.json", "missing field 'inter_fabric_Gbps': groups[0] and groups[1] sit on different fabrics" },
	{ "cluster-no-fabric-latency.json", "missing field 'inter_fabric_latency_us'" },
	{ "cluster-empty-groups.json", "field 'groups' must be a non-empty array" },
	{ "cluster-missing-gpn.json", "missing field 'groups[0].gpus_per_node'" },
	{ "cluster-efficiency.json", "field 'gpu_types.A100-SXM4-80GB.efficiency_max' must be a number in [0.01, 1]" },
	{ "cluster-fp8-peak.json", "field 'gpu_types.H100-SXM5-80GB.peak_fp8_tflops' must be a number in [0.1, " },
	{ "cluster-fp8-efficiency.json", "field 'gpu_types.H100-SXM5-80GB.fp8_efficiency_max' must be a number in [0.01, 1]" },
	{ "cluster-host-link.json", "field 'gpu_types.H100-SXM5-80GB.host_link_GBps' must be a number in [0.1, " },
	{ "cluster-fp8-string.json", "field 'gpu_types.H100-SXM5-80GB.peak_fp8_tflops' must be a number" },
	{ "cluster-flash-efficiency.json", "field 'gpu_types.H100-SXM5-80GB.flash_efficiency' must be a number in [0.01, 1]" },
	{ "cluster-nonint-gpn.json", "field 'groups[0].gpus_per_node' must be an integer" },
	{ "cluster-unknown-field.json", "unknown field 'groups[0].inter_node_GBps'" },
	{ "cluster-duplicate-group.json", "groups[1].name: duplicate group name 'a'" },
	{ "cluster-gpu-types-array.json", "field 'gpu_types' must be a non-empty object" },
	{ "cluster-peak-string.json", "field 'gpu_types.A100-SXM4-80GB.peak_bf16_tflops' must be a number" },
	{ "cluster-missing-gpu-types.json", "missing field 'gpu_types'" },
	{ "cluster-too-many-gpus.json", "field 'groups' must hold at most 10000000 GPUs" },
	{ "cluster-negative-latency.json", "field 'groups[0].intra_node_latency_us' must be a number in [0, " },
	{ "cluster-absurd-memory.json", "field 'gpu_types.A100-SXM4-80GB.memory_GiB' must be a number in [0.125, " },
	{ "cluster-duplicate-key.json", "duplicate key 'nodes'" },
	/* Line 7 is `<TAB><TAB>{"name": "a", "nodes" 2, ...`: the two tabs
	 * are columns 1-2, '{' 3, `"name"` 4-9, ':' 10, ' ' 11, `"a"` 12-14,
	 * ',' 15, ' ' 16, `"nodes"` 17-23, ' ' 24, and the '2' where a ':'
	 * should be is column 25. */
	{ "cluster-malformed.json", "cluster-malformed.json:7:25: malformed JSON" },
	/* the catalogue: an unknown name lists the known ones */
	{ "cluster-catalogue-unknown.json", ": gpu_types.H100.catalogue: unknown GPU 'H100' (the catalogue has: H100-SXM5-80GB, H200-SXM-141GB, B200-SXM-180GB, GB200-186GB, MI300X-192GB, A100-SXM4-80GB, A100-SXM4-40GB, L40S-48GB, V100-SXM2-32GB, V100-SXM2-16GB, T4-16GB)" },
	/* a name that fills the message: cut, never written past its end */
	{ "cluster-catalogue-long-name.json", ": gpu_types.H100.catalogue: unknown GPU 'HHHHHHHH" },
	{ "cluster-catalogue-uncalibrated.json", "missing field 'gpu_types.B200.efficiency_max': catalogue GPU 'B200-SXM-180GB' is not calibrated" },
	/* NVIDIA and AMD: refused, naming the groups of each */
	{ "cluster-vendor-mix.json", ": groups: NVIDIA GPUs in 'h100', 'h100-b' and AMD GPUs in 'mi300x': NCCL and RCCL do not form one job (one collective library per job); plan each vendor's groups as a cluster of its own" },
	{ "cluster-price-negative.json", "field 'groups[0].price_per_gpu_hour' must be a number in [0.001, 10000]" },
};

START_TEST(test_bad_file)
{
	char path[256];
	struct cluster *c = (struct cluster *)&c;
	struct err e = { "" };

	snprintf(path, sizeof path, "tests/data/bad/%s", bad[_i].file);
	ck_assert_int_eq(cluster_load(&c, path, &e), -1);
	ck_assert_ptr_null(c);
	ck_assert_msg(strncmp(e.msg, path, strlen(path)) == 0,
		      "'%s' does not start with the file name", e.msg);
	ck_assert_msg(strstr(e.msg, bad[_i].want), "'%s' lacks '%s'", e.msg,
		      bad[_i].want);
}
END_TEST

START_TEST(test_missing_file)
{
	struct cluster *c = NULL;
	struct err e = { "" };

	ck_assert_int_eq(cluster_load(&c, "clusters/no-such.json", &e), -1);
	ck_assert_ptr_null(c);
	ck_assert_str_eq(e.msg, "cannot open 'clusters/no-such.json': "
				"No such file or directory");
	cluster_free(NULL);
}
END_TEST

/* ---- CSV tables (hardware_gpus.csv, ampplan's --csv) ---- */

#define TABLE_COLS 128
#define TABLE_ROWS 20000

/* A CSV text as rows of fields; row 0 is the header. */
struct table {
	char *cell[TABLE_ROWS][TABLE_COLS];
	int n_row, n_col[TABLE_ROWS];
};

static void on_field(void *s, size_t n, void *arg)
{
	struct table *t = arg;
	int r = t->n_row, c = t->n_col[r];

	ck_assert_int_lt(c, TABLE_COLS);
	t->cell[r][c] = xmalloc(n + 1);
	memcpy(t->cell[r][c], s, n);
	t->cell[r][c][n] = '\0';
	t->n_col[r]++;
}

static void on_row(int ch, void *arg)
{
	struct table *t = arg;

	(void)ch;
	ck_assert_int_lt(t->n_row + 1, TABLE_ROWS);
	t->n_row++;
}

/* Parses text (NUL-terminated) into a calloc'd table; table_free frees. */
static struct table *table_parse(const char *text)
{
	struct table *t = xcalloc(1, sizeof *t);
	struct csv_parser p;
	size_t n = strlen(text);

	ck_assert_int_eq(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL), 0);
	ck_assert_uint_eq(csv_parse(&p, text, n, on_field, on_row, t), n);
	ck_assert_int_eq(csv_fini(&p, on_field, on_row, t), 0);
	csv_free(&p);
	return t;
}

static void table_free(struct table *t)
{
	for (int r = 0; r <= t->n_row && r < TABLE_ROWS; r++)
		for (int c = 0; c < t->n_col[r]; c++)
			free(t->cell[r][c]);
	free(t);
}

/* The column called name in the header (fails the test if none). */
static int table_col(const struct table *t, const char *name)
{
	for (int c = 0; c < t->n_col[0]; c++)
		if (strcmp(t->cell[0][c], name) == 0)
			return c;
	ck_abort_msg("no column '%s'", name);
	return -1;
}

/* Row r's field in column name, as a number (the leading number of text
 * such as "896 (aggregate ...)"); NAN when it does not start with one. */
static double table_num(const struct table *t, int r, const char *name)
{
	const char *s = t->cell[r][table_col(t, name)];
	char *end;
	double v = strtod(s, &end);

	return end == s ? NAN : v;
}

/* Writes text to a new temporary file, whose name path receives (size
 * at least 32). */
static void write_temp(char *path, const char *text)
{
	int fd;
	FILE *f;

	strcpy(path, "/tmp/check_cluster-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
}

/* Loads a one-group cluster (8 GPUs on one node) whose only GPU type is
 * "{type}" (the body of its gpu_types entry), the group's extra fields
 * given by group ("" or ", \"key\": value..."). */
static struct cluster *load_one(const char *type, const char *group)
{
	char text[2048], path[32];
	struct cluster *c;

	snprintf(text, sizeof text,
		 "{\"name\": \"one\", \"gpu_types\": {\"G\": {%s}},\n"
		 " \"groups\": [{\"name\": \"g\", \"nodes\": 1, \"gpus_per_node\": 8, \"gpu\": \"G\",\n"
		 "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400,\n"
		 "   \"inter_node_latency_us\": 5%s}]}\n",
		 type, group);
	write_temp(path, text);
	c = load_ok(path);
	remove(path);
	return c;
}

/* The catalogue's figures of the types that shared/reference's
 * hardware_gpus.csv lists (copied to tests/data/hardware_gpus.csv) are that
 * file's: dense bf16 (the fp16 tensor peak where it says "none", as cluster
 * files hold it), memory (GB read as GiB, as everywhere in ampplan), HBM
 * bandwidth, and half the bidirectional peer link per GPU (the loader's
 * one direction) where the file gives a number. Each is loaded through a
 * cluster file that references it by name. */
static const char *const reference_types[] = {
	"V100-SXM2-16GB",
	"V100-SXM2-32GB",
	"A100-SXM4-40GB",
	"A100-SXM4-80GB",
	"H100-SXM5-80GB",
	"H200-SXM-141GB",
	"T4-16GB",
	"MI300X-192GB",
};

START_TEST(test_catalogue_matches_reference)
{
	char *text = read_file("tests/data/hardware_gpus.csv"), type[128];
	struct table *t;
	int row = 0;
	struct cluster *c;
	const struct gpu_type *g;
	double bf16, link;

	ck_assert_ptr_nonnull(text);
	t = table_parse(text);
	for (int r = 1; r < t->n_row; r++)
		if (strcmp(t->cell[r][0], reference_types[_i]) == 0)
			row = r;
	ck_assert_msg(row > 0, "%s not in hardware_gpus.csv", reference_types[_i]);
	/* efficiency_max given: uncalibrated types need one */
	snprintf(type, sizeof type, "\"catalogue\": \"%s\", \"efficiency_max\": 0.5",
		 reference_types[_i]);
	c = load_one(type, "");
	g = &c->gpu[0];
	bf16 = table_num(t, row, "dense_bf16_tflops");
	if (isnan(bf16)) /* "none (no BF16)" */
		bf16 = table_num(t, row, "dense_fp16_tensor_tflops");
	ck_assert_rel(g->peak_flops, bf16 * 1e12, 1e-12);
	ck_assert_rel(g->mem_bytes, table_num(t, row, "mem_GB") * GiB, 1e-12);
	ck_assert_rel(g->hbm_bw, table_num(t, row, "hbm_bw_GBps") * 1e9, 1e-12);
	link = table_num(t, row, "intra_node_bw_GBps_bidir_per_gpu");
	if (!isnan(link)) {
		ck_assert_rel(g->link_bw, link / 2 * 1e9, 1e-12);
		/* a group without intra_node_GBps takes the GPU's link */
		ck_assert_rel(c->group[0].intra_bw, g->link_bw, 0);
	}
	ck_assert_int_eq(g->vendor, strncmp(reference_types[_i], "MI", 2) == 0 ? VENDOR_AMD
									       : VENDOR_NVIDIA);
	cluster_free(c);
	table_free(t);
	free(text);
}
END_TEST

/* Every type the catalogue must hold is there with its vendor, dense bf16
 * and (where the GPU has FP8) FP8 peak, memory, HBM and peer link, and a
 * source for every figure it gives; the efficiency constants only on the
 * types README "Validation" calibrated. Read as JSON, apart from the
 * loader. */
START_TEST(test_catalogue_complete)
{
	static const struct {
		const char *name, *vendor;
		bool fp8, calibrated;
	} want[] = {
		{ "H100-SXM5-80GB", "nvidia", true, true },
		{ "H200-SXM-141GB", "nvidia", true, false },
		{ "B200-SXM-180GB", "nvidia", true, false },
		{ "GB200-186GB", "nvidia", true, false },
		{ "MI300X-192GB", "amd", true, false },
		{ "A100-SXM4-80GB", "nvidia", false, true },
		{ "A100-SXM4-40GB", "nvidia", false, true },
		{ "L40S-48GB", "nvidia", true, false },
		{ "V100-SXM2-32GB", "nvidia", false, false },
		{ "T4-16GB", "nvidia", false, true },
	};
	static const char *const figures[] = {
		"peak_bf16_tflops",
		"peak_fp8_tflops",
		"memory_GiB",
		"hbm_GBps",
		"link_GBps",
		"efficiency_max",
		"efficiency_half_gflop",
		"fp8_efficiency_max",
		"flash_efficiency",
	};
	char *text = read_file(CLUSTER_CATALOGUE);
	cJSON *doc, *gpus;

	ck_assert_ptr_nonnull(text);
	doc = cJSON_Parse(text);
	ck_assert_ptr_nonnull(doc);
	gpus = cJSON_GetObjectItemCaseSensitive(doc, "gpus");
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(gpus, want[i].name);
		const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source");

		ck_assert_msg(e != NULL, "catalogue lacks %s", want[i].name);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "vendor")->valuestring,
				 want[i].vendor);
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "peak_bf16_tflops")));
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "memory_GiB")));
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "hbm_GBps")));
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "link_GBps")));
		ck_assert_int_eq(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "peak_fp8_tflops")),
				 want[i].fp8);
		ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "calibrated")),
				 want[i].calibrated);
		ck_assert_int_eq(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "efficiency_max")),
				 want[i].calibrated);
		ck_assert(cJSON_IsObject(src));
		for (size_t f = 0; f < sizeof figures / sizeof *figures; f++) {
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(src, figures[f]);

			if (cJSON_GetObjectItemCaseSensitive(e, figures[f]))
				ck_assert_msg(cJSON_IsString(s) && strlen(s->valuestring) > 10,
					      "%s.%s has no source", want[i].name, figures[f]);
		}
	}
	cJSON_Delete(doc);
	free(text);
}
END_TEST

/* A reference takes the catalogue's figures; the cluster file's own
 * fields override them one by one; the calibrated constants come along. */
START_TEST(test_catalogue_override)
{
	struct cluster *c = load_one("\"catalogue\": \"H100-SXM5-80GB\", \"memory_GiB\": 94,"
				     " \"efficiency_max\": 0.5, \"link_GBps\": 400",
				     "");
	const struct gpu_type *g = &c->gpu[0];

	ck_assert_str_eq(g->name, "G");		      /* the cluster's name for it */
	ck_assert_rel(g->mem_bytes, 94 * GiB, 1e-15); /* overridden */
	ck_assert_rel(g->eff_max, 0.5, 1e-15);
	ck_assert_rel(g->link_bw, 400e9, 1e-15);
	ck_assert_rel(c->group[0].intra_bw, 400e9, 1e-15);
	/* from the catalogue: 989.4 and 1979 TFLOP/s, 3350 GB/s, and the
	 * calibrated half point 45 GFLOP, FP8 0.6, flash 0.75 */
	ck_assert_rel(g->peak_flops, 989.4e12, 1e-15);
	ck_assert_rel(g->peak_fp8_flops, 1979e12, 1e-15);
	ck_assert_rel(g->hbm_bw, 3350e9, 1e-15);
	ck_assert_rel(g->eff_half_flop, 45e9, 1e-15);
	ck_assert_rel(g->fp8_eff_max, 0.6, 1e-15);
	ck_assert_rel(g->flash_eff, 0.75, 1e-15);
	ck_assert_int_eq(g->vendor, VENDOR_NVIDIA);
	ck_assert_rel(g->host_bw, 64e9, 1e-15); /* PCIe Gen5 x16 */
	cluster_free(c);
	c = load_one("\"catalogue\": \"T4-16GB\", \"host_link_GBps\": 12", "");
	ck_assert_rel(c->gpu[0].host_bw, 12e9, 1e-15); /* overridden */
	cluster_free(c);
	/* the group's intra_node_GBps wins over the GPU's link */
	c = load_one("\"catalogue\": \"A100-SXM4-40GB\"", ", \"intra_node_GBps\": 31.5");
	ck_assert_rel(c->group[0].intra_bw, 31.5e9, 1e-15);
	ck_assert_rel(c->gpu[0].link_bw, 300e9, 1e-15);
	ck_assert_rel(c->gpu[0].eff_max, 0.75, 1e-15); /* calibrated A100 */
	ck_assert_rel(c->gpu[0].peak_fp8_flops, 0, 0); /* no FP8 */
	cluster_free(c);
	/* uncalibrated: the defaults of a cluster file's type (half point 0,
	 * FP8 efficiency = efficiency_max, flash 0: the compute model's) */
	c = load_one("\"catalogue\": \"MI300X-192GB\", \"efficiency_max\": 0.4", "");
	ck_assert_int_eq(c->gpu[0].vendor, VENDOR_AMD); /* AMD alone is fine */
	ck_assert_rel(c->gpu[0].eff_half_flop, 0, 0);
	ck_assert_rel(c->gpu[0].fp8_eff_max, 0.4, 1e-15);
	ck_assert_rel(c->gpu[0].flash_eff, 0, 0);
	ck_assert_rel(c->gpu[0].peak_fp8_flops, 2614.9e12, 1e-15);
	ck_assert_rel(c->group[0].price_gpu_hour, 0, 0); /* no price */
	cluster_free(c);
}
END_TEST

/* The catalogue is found beside the cluster file's directory
 * (DIR/../gpus/catalogue.json), as in an installed tree, from any working
 * directory. */
START_TEST(test_catalogue_beside)
{
	char dir[] = "/tmp/check_cluster-dir-XXXXXX", path[512], cwd[512];
	char *text = read_file(CLUSTER_CATALOGUE), *mixed = read_file("clusters/mixed.json");
	struct cluster *c;
	FILE *f;

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/gpus", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/clusters", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/%s", dir, CLUSTER_CATALOGUE);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/clusters/mixed.json", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(mixed, f);
	fclose(f);
	ck_assert_int_eq(chdir("/"), 0); /* no gpus/ here */
	c = load_ok(path);
	ck_assert_int_eq(chdir(cwd), 0);
	ck_assert_rel(c->gpu[0].peak_flops, 989.4e12, 1e-15);
	cluster_free(c);
	snprintf(path, sizeof path, "rm -r '%s'", dir);
	ck_assert_int_eq(system(path), 0);
	free(text);
	free(mixed);
}
END_TEST

/* A defect in the catalogue fails the cluster that references it, naming
 * the cluster file, the reference and the catalogue's file and field. */
START_TEST(test_catalogue_bad)
{
	static const struct {
		const char *entry, *want;
	} bad_entries[] = {
		{ "\"vendor\": \"nvidia\", \"peak_bf16_tflops\": 1, \"memory_GiB\": 1, \"hbm_GBps\": \"fast\", \"source\": {}",
		  "field 'gpus.X.hbm_GBps' must be a number" },
		{ "\"peak_bf16_tflops\": 1, \"memory_GiB\": 1, \"hbm_GBps\": 1, \"efficiency_max\": 0.5, \"source\": {}",
		  "field 'gpus.X.efficiency_max' needs \"calibrated\": true" },
		{ "\"peak_bf16_tflops\": 1, \"memory_GiB\": 1, \"hbm_GBps\": 1, \"source\": \"a datasheet\"",
		  "field 'gpus.X.source' must be an object" },
		{ "\"peak_bf16_tflops\": 1, \"memory_GiB\": 1, \"hbm_GBps\": 1, \"tflops\": 2, \"source\": {}",
		  "unknown field 'gpus.X.tflops'" },
	};
	char dir[] = "/tmp/check_cluster-dir-XXXXXX", path[128], cat[128], cmd[160], want[512];
	struct cluster *c = NULL;
	struct err e = { "" };
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/gpus", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/clusters", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(cat, sizeof cat, "%s/%s", dir, CLUSTER_CATALOGUE);
	ck_assert_ptr_nonnull(f = fopen(cat, "w"));
	fprintf(f, "{\"name\": \"bad\", \"gpus\": {\"X\": {%s}}}\n", bad_entries[_i].entry);
	fclose(f);
	snprintf(path, sizeof path, "%s/clusters/x.json", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs("{\"name\": \"x\", \"gpu_types\": {\"G\": {\"catalogue\": \"X\", \"efficiency_max\": 0.5}},\n"
	      " \"groups\": [{\"name\": \"g\", \"nodes\": 1, \"gpus_per_node\": 8, \"gpu\": \"G\",\n"
	      "   \"intra_node_GBps\": 100, \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400,\n"
	      "   \"inter_node_latency_us\": 5}]}\n",
	      f);
	fclose(f);
	ck_assert_int_eq(cluster_load(&c, path, &e), -1);
	ck_assert_ptr_null(c);
	/* clusters/../gpus/catalogue.json as the loader spells it */
	snprintf(want, sizeof want, "%s: gpu_types.G.catalogue: %s/clusters/../%s: %s", path, dir,
		 CLUSTER_CATALOGUE, bad_entries[_i].want);
	ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "'%s' is not '%s...'", e.msg, want);
	snprintf(cmd, sizeof cmd, "rm -r '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* cluster_price_per_hour, by hand: pipeline ranks on groups {0, 1, 1}, each
 * rank tp 2 x cp 1 x dp 2 = 4 GPUs: 4 x 2.0 + 4 x 0.5 + 4 x 0.5 = 12 USD
 * per hour; a rank on the unpriced group 2 gives 0 (no price). */
START_TEST(test_price_per_hour)
{
	char path[32];
	struct cluster *c;
	struct strategy s = { .tp = 2, .cp = 1, .dp = 2, .pp = 3, .vp = 1, .n_stages = 3, .group = { 0, 1, 1 } };

	write_temp(path,
		   "{\"name\": \"priced\", \"gpu_types\": {\"A\": {\"catalogue\": \"A100-SXM4-80GB\"}},\n"
		   " \"groups\": [\n"
		   "  {\"name\": \"x\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"A\", \"price_per_gpu_hour\": 2,\n"
		   "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5},\n"
		   "  {\"name\": \"y\", \"nodes\": 2, \"gpus_per_node\": 4, \"gpu\": \"A\", \"price_per_gpu_hour\": 0.5,\n"
		   "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5},\n"
		   "  {\"name\": \"z\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"A\",\n"
		   "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5}]}\n");
	c = load_ok(path);
	remove(path);
	ck_assert_rel(c->group[0].price_gpu_hour, 2, 0);
	ck_assert_rel(c->group[1].price_gpu_hour, 0.5, 0);
	ck_assert_rel(c->group[2].price_gpu_hour, 0, 0);
	ck_assert_rel(cluster_price_per_hour(c, &s), 12, 1e-15);
	s.group[2] = 2;
	ck_assert_rel(cluster_price_per_hour(c, &s), 0, 0);
	cluster_free(c);
}
END_TEST

/* A cluster of two node groups of 4 GPUs on one node each: "fast" (H100
 * figures) at 2.00 USD per GPU-hour and "slow", the same but with 1/100 of
 * the compute peak and HBM bandwidth, at 1.80. The priced cluster file
 * write_two_groups writes into path (size 32). */
static void write_two_groups(char *path)
{
	write_temp(path,
		   "{\"name\": \"fast and slow\", \"gpu_types\": {\n"
		   "  \"F\": {\"catalogue\": \"H100-SXM5-80GB\"},\n"
		   "  \"S\": {\"catalogue\": \"H100-SXM5-80GB\", \"peak_bf16_tflops\": 9.894,\n"
		   "         \"peak_fp8_tflops\": 19.79, \"hbm_GBps\": 33.5}},\n"
		   " \"groups\": [\n"
		   "  {\"name\": \"fast\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"F\", \"price_per_gpu_hour\": 2,\n"
		   "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5},\n"
		   "  {\"name\": \"slow\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"S\", \"price_per_gpu_hour\": 1.8,\n"
		   "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5}]}\n");
}

/* Runs ampplan with args (a "%s" for the cluster file) and returns the
 * CSV it writes to stdout, parsed. */
static struct table *run_csv(const char *fmt, const char *cluster)
{
	char args[1024], *out = NULL, *err = NULL;
	struct table *t;

	snprintf(args, sizeof args, fmt, cluster);
	ck_assert_msg(run_ampplan(args, &out, &err) == 0, "%s: %s", args, err);
	t = table_parse(out);
	free(out);
	free(err);
	return t;
}

/* The cost columns by hand, from each row's GPUs and iteration time: all
 * 8 GPUs at 4 x 2.00 + 4 x 1.80 = 15.20 USD per hour, or the 4 fast ones
 * alone (the slow group idle: plan_search) at 8.00, so a row costs that x
 * iteration_s / 3600 USD per iteration, and per million tokens that
 * / (8 x 128 tokens / 1e6) (tiny-2-layers: global batch 8, sequence 128). */
START_TEST(test_cost_columns)
{
	char path[32];
	struct table *t;

	write_two_groups(path);
	t = run_csv("--model tests/data/tiny-2-layers.json --cluster %s --csv -", path);
	ck_assert_int_gt(t->n_row, 1);
	for (int r = 1; r < t->n_row; r++) {
		bool idle = strcmp(t->cell[r][table_col(t, "groups_idle")], "slow") == 0;
		double iter = table_num(t, r, "iteration_s");
		double usd = (idle ? 8.0 : 15.2) * iter / 3600;

		ck_assert_msg(idle || !t->cell[r][table_col(t, "groups_idle")][0], "row %d idle '%s'", r,
			      t->cell[r][table_col(t, "groups_idle")]);
		ck_assert_rel(table_num(t, r, "gpus_used"), idle ? 4 : 8, 0);
		ck_assert_rel(table_num(t, r, "cost_per_iteration_usd"), usd, 1e-5);
		ck_assert_rel(table_num(t, r, "cost_per_million_tokens_usd"), usd / (8 * 128 / 1e6),
			      1e-5);
	}
	table_free(t);
	/* unpriced: the columns are empty */
	t = run_csv("--model tests/data/tiny-2-layers.json --cluster %s --csv -", "clusters/mixed.json");
	ck_assert_str_eq(t->cell[1][table_col(t, "cost_per_iteration_usd")], "");
	ck_assert_str_eq(t->cell[1][table_col(t, "cost_per_million_tokens_usd")], "");
	ck_assert_str_eq(t->cell[1][table_col(t, "gpus_used")],
			 t->cell[1][table_col(t, "groups_idle")][0] ? "32" : "64");
	table_free(t);
	remove(path);
}
END_TEST

/* --objective cost against throughput on write_two_groups' cluster, for
 * Llama-2-7B with 64 sequences of 2048 tokens (compute-bound). The
 * throughput ranking's best row on all 8 GPUs costs 15.20 USD per hour.
 * The slow group
 * adds 4 x 1/100 of the fast group's compute: any plan on both groups
 * takes at least about 100/101 of the fast group's best time alone, so its
 * cost per token is at least 15.2 / 8 x 100/101 = 1.88 times the fast
 * group's (8.00 USD per hour) alone; the slow group alone costs 7.20 USD
 * per hour for 1/100 of the speed, 90 times more per token. So the cost
 * ranking's first plan runs on the 4 fast GPUs only, and costs less per
 * million tokens than the throughput ranking's best on all 8, by at least
 * 1/1.88 (asserted: at most 0.6 of it). */
START_TEST(test_objective_cost)
{
	char path[32], args[256], *out = NULL;
	struct table *thr, *cost;
	int gr, all = 1;

	write_two_groups(path);
	thr = run_csv("--model profiles/llama2-7b.json --gbs 64 --seq 2048 --cluster %s --csv -",
		      path);
	cost = run_csv("--model profiles/llama2-7b.json --gbs 64 --seq 2048 --cluster %s --csv - "
		       "--objective cost",
		       path);
	gr = table_col(thr, "groups_per_rank");
	while (all < thr->n_row && thr->cell[all][table_col(thr, "groups_idle")][0])
		all++;
	ck_assert_int_lt(all, thr->n_row);
	ck_assert_rel(table_num(thr, all, "gpus_used"), 8, 0);
	ck_assert_rel(table_num(cost, 1, "gpus_used"), 4, 0);
	ck_assert_msg(strstr(thr->cell[all][gr], "slow") && strstr(thr->cell[all][gr], "fast"),
		      "throughput's best on all GPUs on '%s'", thr->cell[all][gr]);
	ck_assert_msg(strcmp(cost->cell[1][table_col(cost, "groups_per_rank")], "fast") == 0 ||
			      strncmp(cost->cell[1][table_col(cost, "groups_per_rank")], "fast*", 5) == 0,
		      "cost #1 on '%s'", cost->cell[1][table_col(cost, "groups_per_rank")]);
	ck_assert_double_le(table_num(cost, 1, "cost_per_million_tokens_usd"),
			    0.6 * table_num(thr, all, "cost_per_million_tokens_usd"));
	/* the cost ranking is sorted by cost per million tokens: the rows a
	 * trainer runs, then the planning-only ones (plan.h), each sorted, so
	 * the cost drops at most once from a row to the next */
	for (int r = 2, drops = 0; r < cost->n_row; r++)
		if (table_num(cost, r - 1, "cost_per_million_tokens_usd") >
		    table_num(cost, r, "cost_per_million_tokens_usd"))
			ck_assert_int_le(++drops, 1);
	table_free(thr);
	table_free(cost);
	/* the summary says so: 2^2 - 1 subsets of the two groups */
	snprintf(args, sizeof args, "--model tests/data/tiny-2-layers.json --cluster %s --objective cost --top 1",
		 path);
	ck_assert_int_eq(run_ampplan(args, &out, NULL), 0);
	ck_assert_msg(strstr(out, "\nranked by USD per million tokens, over the 3 subsets of the node groups"),
		      "%s", out);
	free(out);
	remove(path);
}
END_TEST

/* The throughput ranking may leave a node group idle (plan_search): on
 * write_two_groups' cluster, whose slow group runs at 1/100 of the fast
 * one, for Llama-2-7B with 64 sequences of 2048 tokens. By brute force
 * over the subsets, each searched on a cluster file of its own (the fast
 * group alone, the slow group alone) and the best row on both groups (the
 * rows that leave no group idle): the top row is the fastest of the three,
 * the fast group's alone, to the digit, and the summary names the idle
 * group and the gain over the best row on both, (its iteration time / the
 * top's - 1) x 100, tokens/s being the same tokens over each. */
START_TEST(test_throughput_idle)
{
	static const char *const one = "{\"name\": \"one\", \"gpu_types\": {\n"
				       "  \"F\": {\"catalogue\": \"H100-SXM5-80GB\"},\n"
				       "  \"S\": {\"catalogue\": \"H100-SXM5-80GB\", \"peak_bf16_tflops\": 9.894,\n"
				       "         \"peak_fp8_tflops\": 19.79, \"hbm_GBps\": 33.5}},\n"
				       " \"groups\": [\n"
				       "  {\"name\": \"%s\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"%s\",\n"
				       "   \"intra_node_latency_us\": 2, \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5}]}\n";
	static const char *const args = "--model profiles/llama2-7b.json --gbs 64 --seq 2048 --cluster %s --csv -";
	char path[32], fast[32], slow[32], text[1024], cmd[256], want[256], *out = NULL, *err = NULL;
	struct table *t, *tf, *ts;
	double both = 0, best;
	int idle;

	write_two_groups(path);
	snprintf(text, sizeof text, one, "fast", "F");
	write_temp(fast, text);
	snprintf(text, sizeof text, one, "slow", "S");
	write_temp(slow, text);
	snprintf(cmd, sizeof cmd, args, path);
	ck_assert_int_eq(run_ampplan(cmd, &out, &err), 0);
	t = table_parse(out);
	tf = run_csv(args, fast);
	ts = run_csv(args, slow);
	idle = table_col(t, "groups_idle");
	for (int r = 1; r < t->n_row && !both; r++)
		if (!t->cell[r][idle][0])
			both = table_num(t, r, "iteration_s");
	ck_assert_double_gt(both, 0);
	best = table_num(tf, 1, "iteration_s");
	if (table_num(ts, 1, "iteration_s") < best)
		best = table_num(ts, 1, "iteration_s");
	if (both < best)
		best = both;
	ck_assert_rel(table_num(t, 1, "iteration_s"), best, 1e-12);
	ck_assert_rel(table_num(t, 1, "iteration_s"), table_num(tf, 1, "iteration_s"), 1e-12);
	ck_assert_str_eq(t->cell[1][idle], "slow");
	ck_assert_rel(table_num(t, 1, "gpus_used"), 4, 0);
	snprintf(want, sizeof want, "the top plan leaves 4 x S ('slow') idle: 4 x F ('fast') alone%s run %.1f%% more tokens/s than the best plan on every GPU (rank ",
		 strcmp(t->cell[1][table_col(t, "fp8")], "1") == 0 ? ", in FP8," : "",
		 100 * (both / table_num(t, 1, "iteration_s") - 1));
	ck_assert_msg(strstr(err, want), "want '%s' in\n%s", want, err);
	table_free(t);
	table_free(tf);
	table_free(ts);
	free(out);
	free(err);
	remove(path);
	remove(fast);
	remove(slow);
}
END_TEST

/* The README's demo (Llama-3-70B on clusters/mixed.json, 32 H100 + 32
 * A100-40GB): the top plan is at least as fast as the best plan on the 32
 * H100s alone (a cluster file of mixed.json's h100 group only, searched on
 * its own), which runs FP8 on every GPU; and a trainer launches it. */
START_TEST(test_demo_beats_h100_alone)
{
	char path[32];
	struct table *mixed, *h100;

	write_temp(path, "{\"name\": \"h100 alone\", \"gpu_types\": {\n"
			 "  \"H100-SXM5-80GB\": {\"catalogue\": \"H100-SXM5-80GB\"}},\n"
			 " \"groups\": [{\"name\": \"h100\", \"nodes\": 4, \"gpus_per_node\": 8,\n"
			 "   \"gpu\": \"H100-SXM5-80GB\", \"intra_node_latency_us\": 2,\n"
			 "   \"inter_node_Gbps\": 3200, \"inter_node_latency_us\": 5, \"fabric\": \"ndr\"}]}\n");
	mixed = run_csv("--model profiles/llama70b.json --cluster %s --csv - --top 1", "clusters/mixed.json");
	h100 = run_csv("--model profiles/llama70b.json --cluster %s --csv - --top 1", path);
	ck_assert_str_eq(h100->cell[1][table_col(h100, "fp8")], "1");
	ck_assert_double_le(table_num(mixed, 1, "iteration_s"), table_num(h100, 1, "iteration_s"));
	ck_assert_str_ne(mixed->cell[1][table_col(mixed, "trainers")], "none");
	table_free(mixed);
	table_free(h100);
	remove(path);
}
END_TEST

/* --objective cost needs every group's price: a usage error naming it. */
START_TEST(test_objective_cost_unpriced)
{
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(run_ampplan("--model tests/data/tiny-2-layers.json --cluster clusters/mixed.json --objective cost",
				     &out, &err),
			 2);
	ck_assert_msg(strstr(err, "ampplan: error: --objective cost needs a price per GPU-hour on every node group, but group 'h100' has none (its 'price_per_gpu_hour')"),
		      "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan("--model tests/data/tiny-2-layers.json --cluster clusters/mixed.json --objective money",
				     &out, &err),
			 2);
	ck_assert_msg(strstr(err, "--objective needs throughput or cost, not 'money'"), "%s", err);
	free(out);
	free(err);
}
END_TEST

/* --objective cost searches the 2^n - 1 subsets of n node groups: more
 * than PLAN_COST_MAX_GROUPS (4) is a usage error. */
START_TEST(test_objective_cost_groups)
{
	char text[4096], path[32], args[256], *out = NULL, *err = NULL;
	size_t at;

	at = (size_t)snprintf(text, sizeof text,
			      "{\"name\": \"five\", \"gpu_types\": {\"A\": {\"catalogue\": \"A100-SXM4-80GB\"}},\n"
			      " \"groups\": [");
	for (int g = 0; g < 5; g++)
		at += (size_t)snprintf(text + at, sizeof text - at,
				       "%s{\"name\": \"g%d\", \"nodes\": 1, \"gpus_per_node\": 8, \"gpu\": \"A\",\n"
				       "   \"price_per_gpu_hour\": 1, \"intra_node_latency_us\": 2,\n"
				       "   \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 5}",
				       g ? ", " : "", g);
	snprintf(text + at, sizeof text - at, "]}\n");
	write_temp(path, text);
	snprintf(args, sizeof args,
		 "--model tests/data/tiny-2-layers.json --cluster %s --objective cost", path);
	ck_assert_int_eq(run_ampplan(args, &out, &err), 2);
	ck_assert_msg(strstr(err, "--objective cost searches each subset of the node groups: at most 4 groups, not 5"),
		      "%s", err);
	free(out);
	free(err);
	remove(path);
}
END_TEST

static Suite *cluster_suite(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("cluster");

	/* the CLI searches of the cost tests take seconds under the sanitizers */
	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, test_mixed);
	tcase_add_loop_test(tc, test_shipped, 0,
			    (int)(sizeof shipped / sizeof shipped[0]));
	tcase_add_test(tc, test_fabrics_and_defaults);
	tcase_add_loop_test(tc, test_bad_file, 0, (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_missing_file);
	tcase_add_loop_test(tc, test_catalogue_matches_reference, 0,
			    (int)(sizeof reference_types / sizeof *reference_types));
	tcase_add_test(tc, test_catalogue_complete);
	tcase_add_test(tc, test_catalogue_override);
	tcase_add_test(tc, test_catalogue_beside);
	tcase_add_loop_test(tc, test_catalogue_bad, 0, 4);
	tcase_add_test(tc, test_price_per_hour);
	tcase_add_test(tc, test_cost_columns);
	tcase_add_test(tc, test_objective_cost);
	tcase_add_test(tc, test_throughput_idle);
	tcase_add_test(tc, test_demo_beats_h100_alone);
	tcase_add_test(tc, test_objective_cost_unpriced);
	tcase_add_test(tc, test_objective_cost_groups);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(cluster_suite());
}
