/* testutil.c: helpers shared by the Check suites, and the fixtures that
 * more than one suite builds on (testutil.h). */
#define TESTUTIL_COST_FIXTURE
#define TESTUTIL_EMIT_FIXTURE
#include "testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model.h"
#include "plan.h"
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

struct plan_row *test_rows(const struct plan *p)
{
	struct plan_row *rows = xcalloc(p->n_feasible ? (size_t)p->n_feasible : 1, sizeof *rows);

	for (int i = 0; i < p->n_feasible; i++)
		plan_row_get(p, i, &rows[i]);
	return rows;
}

int test_scaled(int k, unsigned n)
{
	return (int)((long)k * test_seeds(n) / n);
}

int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
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
	x.mem = (NORM_FUSED * 2000 * rows + CE_FWD_BYTES * 1000.0 / t) * tok /
		(hbm * COMPUTE_HBM_EFF);
	x = finish(x);
	/* the loss's backward moves CE_BWD_BYTES a logit, not MEM_BWD x */
	x.bwd += (CE_BWD_BYTES - MEM_BWD * CE_FWD_BYTES) * 1000.0 / t * tok /
		 (hbm * COMPUTE_HBM_EFF);
	return x;
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

/* ---- the launch-file plans (testutil.h, TESTUTIL_EMIT_FIXTURE) ---- */

/* Dense bf16 and FP8 peaks of hardware_gpus.csv (H100-SXM5: 989 and 1979
 * TFLOPS; the A100 has no FP8), for trainer rules that read them. */
static struct gpu_type emit_gpus[] = {
	{ .name = (char *)"H100", .peak_flops = 989e12, .peak_fp8_flops = 1979e12 },
	{ .name = (char *)"A100", .peak_flops = 312e12 },
	{ .name = (char *)"L40S" },
};

const char *const case_names[N_CASE] = { "homo", "hetero", "interleaved", "overlap-fp8",
					 "moe", "long", "zero3", "zb-v" };

/* Llama 3 dimensions (model_hparams.csv) and the fields of
 * meta-llama/Meta-Llama-3-8B's config.json: rms_norm_eps 1e-5, rope_theta
 * 500000, no rope scaling. */
static void llama3(struct model *m, const char *name, int hidden, int layers, int heads, int ffn)
{
	*m = (struct model){
		.name = (char *)name,
		.hidden = hidden,
		.layers = layers,
		.heads = heads,
		.kv_heads = 8,
		.head_dim = 128,
		.ffn = ffn,
		.vocab = 128256,
		.seq = 8192,
		.gbs = 512,
		.ffn_kind = FFN_SWIGLU,
		.max_pos = 8192,
		.dtype_bytes = 2,
		.model_type = "llama",
		.norm = NORM_RMS,
		.norm_eps = 1e-5,
		.rope_theta = 500000,
	};
}

/* Qwen3-30B-A3B (hf-configs/Qwen_Qwen3-30B-A3B.json): 48 layers, hidden
 * 2048, 32 heads of 128 with 4 kv heads, 128 experts, top 8, expert ffn
 * 768, vocab 151936, rms_norm_eps 1e-6, rope_theta 1e6, q/k norms, untied. */
static void qwen3_moe(struct model *m)
{
	*m = (struct model){
		.name = (char *)"qwen3-30b-a3b",
		.hidden = 2048,
		.layers = 48,
		.heads = 32,
		.kv_heads = 4,
		.head_dim = 128,
		.ffn = 6144,
		.vocab = 151936,
		.seq = 4096,
		.gbs = 256,
		.ffn_kind = FFN_SWIGLU,
		.max_pos = 40960,
		.dtype_bytes = 2,
		.experts = 128,
		.top_k = 8,
		.moe_ffn = 768,
		.model_type = "qwen3_moe",
		.norm = NORM_RMS,
		.norm_eps = 1e-6,
		.rope_theta = 1e6,
		.qk_norm = true,
		.moe_every = 1,
	};
}

void group(struct fix *f, int i, const char *name, int nodes, int gpn, int gpu)
{
	f->g[i] = (struct node_group){ .name = (char *)name, .nodes = nodes, .gpus_per_node = gpn, .gpu = gpu };
	if (f->c.n_group < i + 1)
		f->c.n_group = i + 1;
	f->c.total_gpus = 0;
	for (int g = 0; g < f->c.n_group; g++)
		f->c.total_gpus += f->g[g].nodes * f->g[g].gpus_per_node;
}

void cluster(struct fix *f, const char *name)
{
	f->c = (struct cluster){ .name = (char *)name, .gpu = emit_gpus, .n_gpu = 3, .group = f->g };
}

void plan(struct fix *f, int tp, int cp, int pp, int vp, int dp, int mbs, int gbs,
	  const int *layers, const unsigned char *grp)
{
	struct strategy *s = &f->s;

	*s = (struct strategy){
		.tp = tp,
		.cp = cp,
		.pp = pp,
		.dp = dp,
		.ep = 1,
		.vp = vp,
		.mbs = mbs,
		.gbs = gbs,
		.seq = 8192,
		.micro_batches = gbs / (mbs * dp),
		.schedule = vp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B,
		.zero = 1,
		.sp = tp > 1,
		.attn = ATTN_FLASH,
		.grad_overlap = true,
		.grad_bytes = 4,
		.n_stages = pp * vp,
	};
	for (int k = 0; k < s->n_stages; k++)
		s->first[k + 1] = (unsigned short)(s->first[k] + layers[k]);
	for (int p = 0; p < pp; p++)
		s->group[p] = grp[p];
}

void fixture(struct fix *f, int which)
{
	static const unsigned char g00[] = { 0, 0 }, g0011[] = { 0, 0, 1, 1 };

	memset(f, 0, sizeof *f);
	switch (which) {
	case HOMO: /* Llama-3-8B, 2 x 8 H100, tp2 pp2 dp4, even */
		llama3(&f->m, "llama3-8b", 4096, 32, 32, 14336);
		cluster(f, "dgx-h100");
		group(f, 0, "h100", 2, 8, 0);
		plan(f, 2, 1, 2, 1, 4, 1, 512, (const int[]){ 17, 17 }, g00);
		f->s.recompute = RECOMPUTE_SELECTIVE;
		break;
	case HETERO: /* Llama-3-70B, 4 x 8 H100 + 4 x 8 A100, tp4 pp4 dp4, uneven */
		llama3(&f->m, "llama3-70b", 8192, 80, 64, 28672);
		cluster(f, "mixed");
		group(f, 0, "h100", 4, 8, 0);
		group(f, 1, "a100", 4, 8, 1);
		plan(f, 4, 1, 4, 1, 4, 1, 256, (const int[]){ 1 + 22, 22, 20, 16 + 1 }, g0011);
		f->s.recompute = RECOMPUTE_FULL;
		break;
	case INTERLEAVED: /* Llama-3-8B, 2 x 8 H100, tp2 cp2 pp2 vp2 dp2 */
		llama3(&f->m, "llama3-8b", 4096, 32, 32, 14336);
		cluster(f, "dgx-h100");
		group(f, 0, "h100", 2, 8, 0);
		plan(f, 2, 2, 2, 2, 2, 1, 64, (const int[]){ 1 + 7, 8, 8, 9 + 1 }, g00);
		break;
	case ZBV: /* INTERLEAVED's plan under ZB-V: rank 0 holds stages 0 and 3
		     (E+7 and 8+L), rank 1 stages 1 and 2 (8 and 9) */
		llama3(&f->m, "llama3-8b", 4096, 32, 32, 14336);
		cluster(f, "dgx-h100");
		group(f, 0, "h100", 2, 8, 0);
		plan(f, 2, 2, 2, 2, 2, 1, 64, (const int[]){ 1 + 7, 8, 9, 8 + 1 }, g00);
		f->s.schedule = SCHED_ZB_V;
		break;
	case OVERLAP_FP8: /* the homogeneous plan with every overlap, FP8 GEMMs
			     and bf16 gradients */
		fixture(f, HOMO);
		f->s.tp_overlap = f->s.param_overlap = f->s.fp8 = true;
		f->s.grad_bytes = 2;
		break;
	case MOE: /* Qwen3-30B-A3B, 2 x 8 H100, tp2 pp2 dp4 ep4, 24 blocks a stage */
		qwen3_moe(&f->m);
		cluster(f, "dgx-h100");
		group(f, 0, "h100", 2, 8, 0);
		plan(f, 2, 1, 2, 1, 4, 1, 256, (const int[]){ 1 + 24, 24 + 1 }, g00);
		f->s.seq = 4096;
		f->s.ep = 4;
		break;
	case LONG: /* Llama-3.1-70B at 131072 tokens (rope scaling llama3, factor
		      8, low 1, high 4, original 8192: its config.json), 4 x 8
		      H100, tp8 cp4, no pipeline, 16 sequences */
		llama3(&f->m, "llama3.1-70b", 8192, 80, 64, 28672);
		f->m.max_pos = 131072;
		f->m.rope_scaling = (struct rope_scaling){ "llama3", 8, 1, 4, 8192 };
		cluster(f, "dgx-h100");
		group(f, 0, "h100", 4, 8, 0);
		plan(f, 8, 4, 1, 1, 1, 1, 16, (const int[]){ 82 }, g00);
		f->s.seq = 131072;
		f->s.recompute = RECOMPUTE_FULL;
		break;
	case ZERO3: /* Llama-3-8B, 2 x 8 H100, dp16 with ZeRO-3, mbs 2 */
		llama3(&f->m, "llama3-8b", 4096, 32, 32, 14336);
		cluster(f, "dgx-h100");
		group(f, 0, "h100", 2, 8, 0);
		plan(f, 1, 1, 1, 1, 16, 2, 512, (const int[]){ 34 }, g00);
		f->s.zero = 3;
		f->s.param_overlap = true;
		f->s.grad_acc_unfused = true;
		break;
	}
}

char *path2(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);

	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

char *read_in(const char *dir, const char *name)
{
	char *p = path2(dir, name), *text = read_file(p);

	ck_assert_msg(text, "cannot read '%s'", p);
	free(p);
	return text;
}

void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d) {
		remove(dir);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			char *p = path2(dir, de->d_name);

			rm_tree(p);
			free(p);
		}
	closedir(d);
	rmdir(dir);
}

char *tmpdir(void)
{
	char *d = xstrdup("/tmp/ampplan-emit-XXXXXX");

	ck_assert(mkdtemp(d));
	return d;
}

char *emit_fix(const char *format, const struct fix *f)
{
	char *dir = tmpdir();
	struct err e = { "" };

	ck_assert_msg(emit_write(format, dir, &f->m, &f->c, &f->s, &e) == 0,
		      "%s: %s", format, e.msg);
	return dir;
}

const enum trainer format_trainer[EMIT_COUNT] = {
	[EMIT_MEGATRON] = TRAINER_MEGATRON,
	[EMIT_TORCHTITAN] = TRAINER_TORCHTITAN,
	[EMIT_DEEPSPEED] = TRAINER_DEEPSPEED,
	[EMIT_NEMO] = TRAINER_NEMO,
	[EMIT_SLURM] = TRAINER_MEGATRON,
	[EMIT_TORCHTITAN_MAIN] = TRAINER_TORCHTITAN,
};

const char *golden_refusal(int cs, int fm)
{
	if (cs == INTERLEAVED && fm == EMIT_DEEPSPEED)
		return "deepspeed: no interleaved pipeline (vp 2): the pipeline engine runs one stage per rank";
	if (cs == ZBV && (fm == EMIT_MEGATRON || fm == EMIT_SLURM))
		return "megatron: schedule 'zb-v' has no megatron flag or config (torchtitan runs it); plan with 1f1b or interleaved";
	if (cs == ZBV && fm == EMIT_NEMO)
		return "nemo: schedule 'zb-v' has no nemo flag or config (torchtitan runs it); plan with 1f1b or interleaved";
	if (cs == ZBV && fm == EMIT_DEEPSPEED)
		return "deepspeed: schedule 'zb-v' has no deepspeed flag or config (torchtitan runs it); plan with 1f1b";
	if (cs == LONG && fm == EMIT_DEEPSPEED)
		return "deepspeed: no context parallelism (cp 4)";
	if (cs == ZERO3 && (fm == EMIT_MEGATRON || fm == EMIT_SLURM))
		return "megatron: ZeRO stage 3 has no flag; the distributed optimizer is ZeRO-1 (gradients stay whole)";
	if (cs == ZERO3 && fm == EMIT_NEMO)
		return "nemo: ZeRO stage 3 has no flag; the distributed optimizer is ZeRO-1 (gradients stay whole)";
	if (cs == MOE && fm == EMIT_TORCHTITAN_MAIN) /* etp unset: tp 2 */
		return "torchtitan: main (2026-08) has no expert tensor parallelism: the experts cannot split over 2 GPUs (etp); plan with --etp 1, or emit torchtitan (v0.2.2)";
	return NULL;
}

char *emit_text(const char *format, const struct fix *f, const char *name,
		bool refusable)
{
	struct err e = { "" };

	if (refusable && trainer_check(format_trainer[emit_format_parse(format)], &f->m, &f->c,
				       &f->s, &e))
		return NULL;
	char *dir = emit_fix(format, f), *text = read_in(dir, name);

	rm_tree(dir);
	free(dir);
	return text;
}

char **words(const char *text)
{
	char **w = NULL;
	int n = 0;
	const char *p = text;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || (*p == '\\' && p[1] == '\n'))
			p += *p == '\\' ? 2 : 1;
		if (*p == '#') {
			while (*p && *p != '\n')
				p++;
			continue;
		}
		if (!*p)
			break;
		char *word = xmalloc(strlen(p) + 1);
		size_t k = 0;

		while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
			if (*p == '\'' || *p == '"') {
				char q = *p++;

				while (*p && *p != q)
					word[k++] = *p++;
				if (*p)
					p++;
			} else {
				word[k++] = *p++;
			}
		}
		word[k] = '\0';
		w = xreallocarray(w, (size_t)n + 2, sizeof *w);
		w[n++] = word;
	}
	w = xreallocarray(w, (size_t)n + 1, sizeof *w);
	w[n] = NULL;
	return w;
}

void words_free(char **w)
{
	for (int i = 0; w[i]; i++)
		free(w[i]);
	free(w);
}

const char *value(char **w, const char *flag)
{
	for (int i = 0; w[i]; i++)
		if (strcmp(w[i], flag) == 0)
			return w[i + 1];
	return NULL;
}

int ivalue(char **w, const char *flag)
{
	const char *v = value(w, flag);

	ck_assert_msg(v, "no %s", flag);
	return atoi(v);
}

bool has(char **w, const char *flag)
{
	for (int i = 0; w[i]; i++)
		if (strcmp(w[i], flag) == 0)
			return true;
	return false;
}

bool has_arg(char **w, const char *want)
{
	const char *eq = strchr(want, '=');

	if (!eq)
		return has(w, want);
	char flag[64];
	const char *v;

	snprintf(flag, sizeof flag, "%.*s", (int)(eq - want), want);
	v = value(w, flag);
	return v && strcmp(v, eq + 1) == 0;
}

char *between(const char *text, const char *from, const char *to)
{
	const char *a = strstr(text, from), *b;

	ck_assert_msg(a, "no '%s'", from);
	a += strlen(from);
	b = strstr(a, to);
	ck_assert_msg(b, "no '%s' after '%s'", to, from);
	char *out = xmalloc((size_t)(b - a) + 1);

	memcpy(out, a, (size_t)(b - a));
	out[b - a] = '\0';
	return out;
}

bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}
