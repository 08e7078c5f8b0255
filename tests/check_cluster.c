/* check_cluster.c: cluster loading, unit conversion, fabrics and defaults,
 * the shipped cluster files, bad inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "testutil.h"
#include "util.h"

#define GiB 1073741824.0

static struct cluster *load_ok(const char *path)
{
	struct cluster *c = NULL;
	struct err e = {""};

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
	ck_assert_int_eq(c->total_gpus, 64);	/* 4*8 + 4*8 */
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
	ck_assert_rel(h->intra_eff, 0.75, 1e-15);	/* defaults */
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
	{"clusters/dgx-a100.json", 128, 8, 312e12, 80 * GiB, 300e9, 200e9},
	/* 16 DGX H100: 989.4 TF, 80 GiB, NVLink 4.0 450 GB/s, 8x NDR. */
	{"clusters/dgx-h100.json", 128, 8, 989.4e12, 80 * GiB, 450e9, 400e9},
	/* 8 p4d.24xlarge: A100 40GB, 400 Gb/s EFA = 50e9 bytes/s. */
	{"clusters/aws-p4d.json", 64, 8, 312e12, 40 * GiB, 300e9, 50e9},
	/* 4 g4dn.12xlarge: 4 T4 (fp16 65 TF), 16 GiB of which EC2's ECC
	 * leaves 15 GiB, PCIe Gen3 15.75 GB/s, 50 Gb/s = 6.25e9 bytes/s. */
	{"clusters/aws-g4dn.json", 16, 4, 65e12, 15 * GiB, 15.75e9, 6.25e9},
	/* Selene: 384 DGX A100 80GB nodes = 3072 GPUs. */
	{"clusters/selene-a100.json", 3072, 8, 312e12, 80 * GiB, 300e9, 200e9},
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
	ck_assert_int_eq(c->total_gpus, 17);	/* 2*3 + 1*1 + 5*2 */
	ck_assert_int_eq(c->group[0].gpu, 1);	/* "Y" is the second type */
	ck_assert_int_eq(c->group[1].gpu, 0);
	ck_assert_int_eq(c->group[0].fabric, 0);
	ck_assert_int_eq(c->group[1].fabric, 1);
	ck_assert_int_eq(c->group[2].fabric, 0);
	ck_assert_rel(c->gpu[0].mem_bytes, 0.5 * GiB, 1e-15);
	ck_assert_rel(c->gpu[0].eff_half_flop, 50e9, 1e-15);
	ck_assert_rel(c->gpu[1].eff_half_flop, 0, 0);	/* default */
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
	ck_assert_rel(c->group[1].inter_bw, 1e9, 1e-15);	/* 8 Gb/s */
	ck_assert_rel(c->fabric_bw, 10e9, 1e-15);		/* 80 Gb/s */
	ck_assert_rel(c->fabric_lat, 20e-6, 1e-15);
	cluster_free(c);
}
END_TEST

/* One defect per file; the message names the file and the field. */
static const struct {
	const char *file, *want;
} bad[] = {
	{"cluster-unknown-gpu.json", ": groups[1].gpu: unknown GPU type 'B200'"},
	{"cluster-zero-nodes.json", "field 'groups[0].nodes' must be an integer in [1, 1000000]"},
	{"cluster-absurd-nodes.json", "field 'groups[0].nodes' must be an integer in [1, 1000000]"},
	{"cluster-negative-bw.json", "field 'groups[0].inter_node_Gbps' must be a number in [0.1, "},
	{"cluster-zero-bw.json", "field 'groups[0].intra_node_GBps' must be a number in [0.1, "},
	{"cluster-no-fabric-link.json", "missing field 'inter_fabric_Gbps': groups[0] and groups[1] sit on different fabrics"},
	{"cluster-no-fabric-latency.json", "missing field 'inter_fabric_latency_us'"},
	{"cluster-empty-groups.json", "field 'groups' must be a non-empty array"},
	{"cluster-missing-gpn.json", "missing field 'groups[0].gpus_per_node'"},
	{"cluster-efficiency.json", "field 'gpu_types.A100-SXM4-80GB.efficiency_max' must be a number in [0.01, 1]"},
	{"cluster-fp8-peak.json", "field 'gpu_types.H100-SXM5-80GB.peak_fp8_tflops' must be a number in [0.1, "},
	{"cluster-fp8-efficiency.json", "field 'gpu_types.H100-SXM5-80GB.fp8_efficiency_max' must be a number in [0.01, 1]"},
	{"cluster-fp8-string.json", "field 'gpu_types.H100-SXM5-80GB.peak_fp8_tflops' must be a number"},
	{"cluster-flash-efficiency.json", "field 'gpu_types.H100-SXM5-80GB.flash_efficiency' must be a number in [0.01, 1]"},
	{"cluster-nonint-gpn.json", "field 'groups[0].gpus_per_node' must be an integer"},
	{"cluster-unknown-field.json", "unknown field 'groups[0].inter_node_GBps'"},
	{"cluster-duplicate-group.json", "groups[1].name: duplicate group name 'a'"},
	{"cluster-gpu-types-array.json", "field 'gpu_types' must be a non-empty object"},
	{"cluster-peak-string.json", "field 'gpu_types.A100-SXM4-80GB.peak_bf16_tflops' must be a number"},
	{"cluster-missing-gpu-types.json", "missing field 'gpu_types'"},
	{"cluster-too-many-gpus.json", "field 'groups' must hold at most 10000000 GPUs"},
	{"cluster-negative-latency.json", "field 'groups[0].intra_node_latency_us' must be a number in [0, "},
	{"cluster-absurd-memory.json", "field 'gpu_types.A100-SXM4-80GB.memory_GiB' must be a number in [0.125, "},
	{"cluster-duplicate-key.json", "duplicate key 'nodes'"},
	/* Line 7 is `<TAB><TAB>{"name": "a", "nodes" 2, ...`: the two tabs
	 * are columns 1-2, '{' 3, `"name"` 4-9, ':' 10, ' ' 11, `"a"` 12-14,
	 * ',' 15, ' ' 16, `"nodes"` 17-23, ' ' 24, and the '2' where a ':'
	 * should be is column 25. */
	{"cluster-malformed.json", "cluster-malformed.json:7:25: malformed JSON"},
};

START_TEST(test_bad_file)
{
	char path[256];
	struct cluster *c = (struct cluster *)&c;
	struct err e = {""};

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
	struct err e = {""};

	ck_assert_int_eq(cluster_load(&c, "clusters/no-such.json", &e), -1);
	ck_assert_ptr_null(c);
	ck_assert_str_eq(e.msg, "cannot open 'clusters/no-such.json': "
			 "No such file or directory");
	cluster_free(NULL);
}
END_TEST

static Suite *cluster_suite(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("cluster");

	tcase_add_test(tc, test_mixed);
	tcase_add_loop_test(tc, test_shipped, 0,
			    (int)(sizeof shipped / sizeof shipped[0]));
	tcase_add_test(tc, test_fabrics_and_defaults);
	tcase_add_loop_test(tc, test_bad_file, 0, (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, test_missing_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(cluster_suite());
}
