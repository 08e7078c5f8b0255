/* testutil.c: helpers shared by the Check suites, and the fixtures that
 * more than one suite builds on (testutil.h). */
#define TESTUTIL_COST_FIXTURE
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "model.h"
#include "util.h"

char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;

	if (!f)
		return NULL;
	do {
		if (n + 4097 > cap)
			buf = xreallocarray(buf, cap = cap * 2 + 8192, 1);
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

int run_ampplan(const char *args, char **out, char **err)
{
	char o[] = "/tmp/ampplan-out-XXXXXX", e[] = "/tmp/ampplan-err-XXXXXX";
	char cmd[4096];
	int fo = mkstemp(o), fe = mkstemp(e), st;

	ck_assert(fo >= 0 && fe >= 0);
	snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s </dev/null", AMPPLAN_BIN, args, o, e);
	st = system(cmd);
	if (out && !(*out = read_file(o)))
		*out = xstrdup("");
	if (err && !(*err = read_file(e)))
		*err = xstrdup("");
	remove(o);
	remove(e);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

unsigned test_seeds(unsigned n)
{
	const char *v = getenv("AMPPLAN_TEST_SEEDS_DIV");
	long k = v ? strtol(v, NULL, 10) : 1;

	if (k <= 1)
		return n;
	return n / k > 0 ? (unsigned)(n / k) : 1;
}

int test_scaled(int k, unsigned n)
{
	return (int)((long)k * test_seeds(n) / n);
}

cJSON *json_of(const char *args)
{
	char *text;
	cJSON *doc;

	ck_assert_int_eq(run_ampplan(args, &text, NULL), 0);
	doc = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

const cJSON *field(const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(x, "no '%s'", key);
	return x;
}

int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

struct model *test_small_model(int blocks, int gbs)
{
	struct model *m = xcalloc(1, sizeof *m);

	m->name = xstrdup("small");
	m->hidden = 1024;
	m->layers = blocks;
	m->heads = m->kv_heads = 8;
	m->head_dim = 128;
	m->ffn = 4096;
	m->ffn_kind = FFN_SWIGLU;
	m->vocab = 32000;
	m->seq = 2048;
	m->max_pos = 2048;
	m->gbs = gbs;
	m->dtype_bytes = 2;
	model_derive_layers(m);
	return m;
}

/* ---- the cost model's fixture (testutil.h, TESTUTIL_COST_FIXTURE) ---- */

struct layer lay[MAXL];
struct model mod;
struct gpu_type gpus[2];
struct node_group groups[2];
struct cluster clu;

void gpt(int L, int h, int a, int V, int s)
{
	double hh = h;

	mod = (struct model){ .name = "gpt", .hidden = h, .layers = L, .heads = a, .kv_heads = a, .head_dim = h / a, .ffn = 4 * h, .ffn_kind = FFN_GELU, .vocab = V, .seq = s, .dtype_bytes = 2, .tied = true, .learned_pos = true, .layer = lay, .n_layer = L + 2 };
	lay[0] = (struct layer){ .kind = LAYER_EMBEDDING,
				 .params = ((double)V + s) * hh,
				 .out_bytes_per_token = 2 * hh };
	for (int i = 1; i <= L; i++)
		lay[i] = (struct layer){ .kind = LAYER_BLOCK,
					 .params = 12 * hh * hh + 13 * hh,
					 .flops_per_token = 24 * hh * hh + 4.0 * s * hh,
					 .act_bytes_per_token = 34 * hh,
					 .out_bytes_per_token = 2 * hh };
	lay[L + 1] = (struct layer){ .kind = LAYER_HEAD,
				     .params = (double)V * hh,
				     .flops_per_token = 2 * hh * V,
				     .act_bytes_per_token = 4 * hh,
				     .out_bytes_per_token = 2 * hh };
}

void toy(void)
{
	mod = (struct model){ .name = "toy", .hidden = 1000, .layers = 4, .heads = 8, .kv_heads = 8, .head_dim = 125, .ffn = 4000, .ffn_kind = FFN_GELU, .vocab = 1000, .seq = 1000, .dtype_bytes = 2, .layer = lay, .n_layer = 6 };
	lay[0] = (struct layer){ .kind = LAYER_EMBEDDING, .params = 5e6, .out_bytes_per_token = 2e3 };
	for (int i = 1; i <= 4; i++)
		lay[i] = (struct layer){ .kind = LAYER_BLOCK, .params = 1e7, .flops_per_token = 1.004e9, .act_bytes_per_token = 34e3, .out_bytes_per_token = 2e3 };
	lay[5] = (struct layer){ .kind = LAYER_HEAD, .params = 5e6, .flops_per_token = 5e8, .act_bytes_per_token = 4e3 };
}

void setup(void)
{
	memset(lay, 0, sizeof lay);
	gpus[0] = (struct gpu_type){ .name = "A100", .peak_flops = 312e12, .mem_bytes = 80 * GiB, .hbm_bw = 2e12, .eff_max = 1 };
	gpus[1] = (struct gpu_type){ .name = "half", .peak_flops = 156e12, .mem_bytes = 80 * GiB, .hbm_bw = 2e12, .eff_max = 1 };
	for (int g = 0; g < 2; g++)
		groups[g] = (struct node_group){
			.name = g ? "b" : "a", .nodes = 128, .gpus_per_node = 8, .gpu = g, .intra_bw = 300e9, .intra_eff = 1, .inter_bw = 200e9, .inter_eff = 1, .fabric = 0
		};
	clu = (struct cluster){ .name = "test", .gpu = gpus, .n_gpu = 2, .group = groups, .n_group = 2, .fabric_bw = 25e9, .total_gpus = 2048, .mem_allowance = 0 };
}

void toy_cluster(void)
{
	gpus[0].peak_flops = 1e12;
	gpus[0].hbm_bw = 1e12;
	gpus[1].peak_flops = 0.5e12;
	gpus[1].hbm_bw = 1e12;
	for (int g = 0; g < 2; g++) {
		groups[g].intra_bw = 1e11;
		groups[g].inter_bw = 1e11;
	}
}

struct strategy strat(int tp, int cp, int pp, int dp, int mbs, int gbs,
		      int seq)
{
	struct strategy s = { .tp = tp, .cp = cp, .pp = pp, .dp = dp, .ep = 1, .vp = 1, .mbs = mbs, .gbs = gbs, .seq = seq, .micro_batches = gbs / (dp * mbs), .schedule = SCHED_1F1B, .recompute = RECOMPUTE_NONE, .attn = ATTN_FLASH, .n_stages = pp };
	return s;
}

struct part finish(struct part x)
{
	x.fwd = x.gemm + x.attn + x.mem + O;
	x.bwd = 2 * x.gemm + x.attn * FLASH_BWD_FLOPS / FLASH_BWD_RATE +
		MEM_BWD * (x.mem + O);
	return x;
}

struct part toy_block(double P, double hbm, int t, int c, bool sp)
{
	double tok = 1000.0 / c, n = tok / t, rows = (sp || t == 1) ? 1.0 / t : 1;
	struct part x = { 0 };

	x.gemm = 1e9 * n / P;
	x.attn = CAUSAL_SHARE * 4e6 * n / (P * FLASH_RATE);
	x.mem = ((2 * NORM_FUSED + 2 * RESIDUAL) * 2000 * rows + 16000.0 / t +
		 8000.0 / t) *
		tok / (hbm * COMPUTE_HBM_EFF);
	return finish(x);
}

struct part toy_head(double P, double hbm, int t, int c, bool sp)
{
	double tok = 1000.0 / c, n = tok / t, rows = (sp || t == 1) ? 1.0 / t : 1;
	struct part x = { 0 };

	x.gemm = 5e8 * n / P;
	x.mem = (NORM_FUSED * 2000 * rows + CE_BYTES_PER_LOGIT * 1000.0 / t) *
		tok / (hbm * COMPUTE_HBM_EFF);
	return finish(x);
}

struct part toy_emb(double hbm, int c)
{
	struct part x = { 0 };

	x.mem = 4000.0 * (1000.0 / c) / (hbm * COMPUTE_HBM_EFF);
	return finish(x);
}

double fb(struct part x)
{
	return x.fwd + x.bwd;
}
