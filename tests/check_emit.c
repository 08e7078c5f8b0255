/* check_emit.c: the launch-config writers (emit.h) and the trainer rules
 * (trainer.h): golden files per format for seven hand-built plans (demo-like,
 * heterogeneous, interleaved, overlaps + FP8, MoE, long context, ZeRO-3),
 * the values read back from the outputs and checked as the trainers check
 * them, the model fields each format sets (rotary base and scaling, norm
 * epsilon, dropout, vocabulary padding, biases, q/k norms, windows, MLA,
 * MoE dispatcher and balancing), the flags of each kernel, precision and
 * overlap choice, one refusal per rule and the trainer mask; and the
 * ranking's CSV, JSON and --explain (report.h).
 * AMPPLAN_UPDATE_GOLDEN=1 rewrites tests/data/golden/ from the current
 * output; read the diff before committing it. */
#include <cjson/cJSON.h>
#include <csv.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "emit.h"
#include "model.h"
#include "plan.h"
#include "profile.h"
#include "report.h"
#include "strategy.h"
#include "testutil.h"
#include "trainer.h"
#include "util.h"

#define GOLDEN "tests/data/golden"

/* ---- hand-built plans ---- */

/* Dense bf16 and FP8 peaks of hardware_gpus.csv (H100-SXM5: 989 and 1979
 * TFLOPS; the A100 has no FP8), for trainer rules that read them. */
static struct gpu_type gpus[] = {
	{ .name = (char *)"H100", .peak_flops = 989e12, .peak_fp8_flops = 1979e12 },
	{ .name = (char *)"A100", .peak_flops = 312e12 },
	{ .name = (char *)"L40S" },
};

struct fix {
	struct model m;
	struct cluster c;
	struct node_group g[2];
	struct strategy s;
};

/* The plans: HOMO and HETERO are demo-like (HETERO the demo's model and
 * cluster with 1F1B), MOE a MoE plan with EP, LONG a long-context plan with
 * CP, INTERLEAVED interleaved 1F1B, ZERO3 ZeRO-3 data parallelism, ZBV the
 * ZB-V schedule (torchtitan only). */
enum { HOMO,
       HETERO,
       INTERLEAVED,
       OVERLAP_FP8,
       MOE,
       LONG,
       ZERO3,
       ZBV,
       N_CASE };
static const char *const case_names[N_CASE] = { "homo", "hetero", "interleaved", "overlap-fp8",
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

static void group(struct fix *f, int i, const char *name, int nodes, int gpn, int gpu)
{
	f->g[i] = (struct node_group){ .name = (char *)name, .nodes = nodes, .gpus_per_node = gpn, .gpu = gpu };
	if (f->c.n_group < i + 1)
		f->c.n_group = i + 1;
	f->c.total_gpus = 0;
	for (int g = 0; g < f->c.n_group; g++)
		f->c.total_gpus += f->g[g].nodes * f->g[g].gpus_per_node;
}

static void cluster(struct fix *f, const char *name)
{
	f->c = (struct cluster){ .name = (char *)name, .gpu = gpus, .n_gpu = 3, .group = f->g };
}

/* Degrees and batch; layers[k] layers (embedding and head included) in
 * stage k, pipeline rank p on node group grp[p]. */
static void plan(struct fix *f, int tp, int cp, int pp, int vp, int dp, int mbs, int gbs,
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

static void fixture(struct fix *f, int which)
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

static int world(const struct strategy *s)
{
	return s->tp * s->cp * s->pp * s->dp;
}

/* ---- files ---- */

static char *path2(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);

	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static char *read_in(const char *dir, const char *name)
{
	char *p = path2(dir, name), *text = read_file(p);

	ck_assert_msg(text, "cannot read '%s'", p);
	free(p);
	return text;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in dir, joined by spaces ("" if it does not exist). */
static char *listing(const char *dir)
{
	char *names[64], *out = xcalloc(1, 1024);
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return out;
	while ((de = readdir(d)) && n < 64)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			names[n++] = xstrdup(de->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(out, " ");
		strncat(out, names[i], 1023 - strlen(out));
		free(names[i]);
	}
	return out;
}

static void rm_tree(const char *dir)
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

/* A new empty directory; caller frees the name and removes the tree. */
static char *tmpdir(void)
{
	char *d = xstrdup("/tmp/ampplan-emit-XXXXXX");

	ck_assert(mkdtemp(d));
	return d;
}

/* Emits format for the fixture into a fresh directory; returns it. */
static char *emit_fix(const char *format, const struct fix *f)
{
	char *dir = tmpdir();
	struct err e = { "" };

	ck_assert_msg(emit_write(format, dir, &f->m, &f->c, &f->s, &e) == 0,
		      "%s: %s", format, e.msg);
	return dir;
}

/* ---- golden files ---- */

/* Runs cmd through sh; returns its exit status, *out its stdout (malloc'd). */
static int run(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	char *buf = xcalloc(1, 65536);
	size_t n = 0, got;
	int st;

	ck_assert_ptr_nonnull(p);
	while ((got = fread(buf + n, 1, 65535 - n, p)) > 0)
		n += got;
	st = pclose(p);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The shell scripts of dir parse (bash -n). */
static void check_syntax(const char *dir)
{
	char *names = listing(dir), *save = NULL;

	for (char *name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
		char cmd[512], *out;
		size_t n = strlen(name);

		if (!(n > 3 && strcmp(name + n - 3, ".sh") == 0) &&
		    !(n > 7 && strcmp(name + n - 7, ".sbatch") == 0))
			continue;
		snprintf(cmd, sizeof cmd, "bash -n '%s/%s' 2>&1", dir, name);
		ck_assert_msg(run(cmd, &out) == 0, "%s/%s: %s", dir, name, out);
		free(out);
	}
	free(names);
}

static void compare_dirs(const char *got, const char *want)
{
	char *lg = listing(got), *lw = listing(want);

	ck_assert_msg(strcmp(lg, lw) == 0, "files '%s', golden '%s' in %s", lg, lw, want);
	for (char *name = strtok(lw, " "); name; name = strtok(NULL, " ")) {
		char *a = read_in(got, name), *b = read_in(want, name);
		int line = 1;
		size_t i = 0;

		for (; a[i] && a[i] == b[i]; i++)
			line += a[i] == '\n';
		ck_assert_msg(a[i] == b[i], "%s/%s differs from the golden file at line %d "
					    "(AMPPLAN_UPDATE_GOLDEN=1 rewrites it)",
			      want, name, line);
		free(a);
		free(b);
	}
	free(lg);
	free(lw);
}

/* The trainer of each format, for trainer_check. */
static const enum trainer format_trainer[EMIT_COUNT] = {
	[EMIT_MEGATRON] = TRAINER_MEGATRON,
	[EMIT_TORCHTITAN] = TRAINER_TORCHTITAN,
	[EMIT_DEEPSPEED] = TRAINER_DEEPSPEED,
	[EMIT_NEMO] = TRAINER_NEMO,
	[EMIT_SLURM] = TRAINER_MEGATRON,
};

/* The trainer rule that refuses plan cs in format fm (TRAINERS.md), or
 * NULL when the format runs it: DeepSpeed has no interleaving and no CP,
 * Megatron-LM (so Slurm) and NeMo no ZeRO-3. */
static const char *golden_refusal(int cs, int fm)
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
	return NULL;
}

/* Every format on every plan, byte for byte. A format whose trainer refuses
 * the plan writes nothing and has no golden directory (golden_refusal);
 * the overlap-fp8 plan is up to the trainer rules for torchtitan and
 * DeepSpeed (Megatron and NeMo run all of it). */
START_TEST(test_golden)
{
	int cs = _i / EMIT_COUNT, fm = _i % EMIT_COUNT;
	const char *format = emit_format_name(fm), *update = getenv("AMPPLAN_UPDATE_GOLDEN");
	char want[256];
	struct fix f;
	struct err ce = { "" };

	fixture(&f, cs);
	snprintf(want, sizeof want, GOLDEN "/%s/%s", case_names[cs], format);
	if (golden_refusal(cs, fm) ||
	    (cs == OVERLAP_FP8 && fm != EMIT_MEGATRON && fm != EMIT_NEMO && fm != EMIT_SLURM &&
	     trainer_check(format_trainer[fm], &f.m, &f.c, &f.s, &ce))) {
		char *dir = tmpdir(), *sub = path2(dir, "out");
		struct err e = { "" };
		struct stat st;

		ck_assert_int_eq(emit_write(format, sub, &f.m, &f.c, &f.s, &e), -1);
		if (golden_refusal(cs, fm))
			ck_assert_str_eq(e.msg, golden_refusal(cs, fm));
		else
			ck_assert_str_eq(e.msg, ce.msg);
		ck_assert_int_ne(stat(sub, &st), 0);
		if (update && strcmp(update, "1") == 0)
			rm_tree(want);
		ck_assert_msg(stat(want, &st) != 0, "%s: %s refuses the plan, but the golden "
						    "directory exists (AMPPLAN_UPDATE_GOLDEN=1 removes it)",
			      want, format);
		free(sub);
		rm_tree(dir);
		free(dir);
		return;
	}
	if (update && strcmp(update, "1") == 0) {
		struct err e = { "" };

		rm_tree(want);
		ck_assert_msg(emit_write(format, want, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	}
	char *dir = emit_fix(format, &f);

	check_syntax(dir);
	compare_dirs(dir, want);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* ---- reading the outputs back ---- */

/* Shell-like words of text: blanks separate, '...' and "..." quote,
 * backslash-newline joins, # starts a comment at a word's start. Returns a
 * NULL-terminated malloc'd array of malloc'd words. */
static char **words(const char *text)
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

static void words_free(char **w)
{
	for (int i = 0; w[i]; i++)
		free(w[i]);
	free(w);
}

/* The word after flag, or NULL. */
static const char *value(char **w, const char *flag)
{
	for (int i = 0; w[i]; i++)
		if (strcmp(w[i], flag) == 0)
			return w[i + 1];
	return NULL;
}

static int ivalue(char **w, const char *flag)
{
	const char *v = value(w, flag);

	ck_assert_msg(v, "no %s", flag);
	return atoi(v);
}

static bool has(char **w, const char *flag)
{
	for (int i = 0; w[i]; i++)
		if (strcmp(w[i], flag) == 0)
			return true;
	return false;
}

/* The text between the line starting with from and the next line that
 * starts with to (malloc'd). */
static char *between(const char *text, const char *from, const char *to)
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

/* True if text has the whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

/* The per-node process counts of a torchrun script: nproc[r] for node rank
 * r < *n, from the default of NNODES and --nproc-per-node or the NPROC
 * table. */
static void nprocs(const char *script, int *nproc, int *n)
{
	const char *p = strstr(script, "NNODES=${NNODES:-");
	char *line = between(script, "exec torchrun", "\n");
	char **w = words(line);
	const char *v = value(w, "--nproc-per-node");

	ck_assert(p && v);
	*n = atoi(p + strlen("NNODES=${NNODES:-"));
	if (strcmp(v, "$NPROC") != 0) {
		for (int i = 0; i < *n; i++)
			nproc[i] = atoi(v);
	} else {
		char *table = between(script, "case $NODE_RANK in\n", "esac\n");

		for (char *l = strtok(table, "\n"); l; l = strtok(NULL, "\n")) {
			int g = atoi(strstr(l, "NPROC=") + 6);

			for (char *q = l; *q != ')'; q += strcspn(q, "|)") + (q[strcspn(q, "|)")] == '|'))
				nproc[atoi(q)] = g;
		}
		free(table);
	}
	words_free(w);
	free(line);
}

/* nodes.txt: the node group of each node rank, by name, from its table. */
static int node_groups(const char *text, char names[][16])
{
	int n = 0;

	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		if (*l != '#') {
			int r;
			char g[16];

			ck_assert_int_eq(sscanf(l, "%d %15s", &r, g), 2);
			ck_assert_int_eq(r, n);
			strcpy(names[n++], g);
		}
		if (!strchr(l, '\n'))
			break;
	}
	return n;
}

/* Node ranks and groups agree with the plan: every global rank of pipeline
 * rank p sits on a node of group s->group[p]. */
static void check_nodes(const struct fix *f, const char *dir, const int *nproc, int n)
{
	char *text = read_in(dir, "nodes.txt"), names[64][16];
	int block = f->s.tp * f->s.cp * f->s.dp, rank = 0;

	ck_assert_int_eq(node_groups(text, names), n);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < nproc[i]; k++, rank++)
			ck_assert_str_eq(names[i], f->c.group[f->s.group[rank / block]].name);
	ck_assert_int_eq(rank, world(&f->s));
	free(text);
}

/* Megatron flags read back from launch.sh: world, dp, micro-batches and the
 * layout's stages against the plan, and the nodes against nodes.txt. */
static void check_megatron(const struct fix *f, const char *dir)
{
	char *script = read_in(dir, "launch.sh");
	char *args = between(script, "ARGS=(\n", "\n)\n");
	char **w = words(args);
	const struct strategy *s = &f->s;
	int nproc[64], n, total = 0;

	nprocs(script, nproc, &n);
	for (int i = 0; i < n; i++)
		total += nproc[i];
	int tp = ivalue(w, "--tensor-model-parallel-size"), pp = ivalue(w, "--pipeline-model-parallel-size");
	int cp = ivalue(w, "--context-parallel-size"), layers = ivalue(w, "--num-layers");
	int dp = total / (tp * pp * cp), mbs = ivalue(w, "--micro-batch-size");
	int gbs = ivalue(w, "--global-batch-size");
	const char *layout = value(w, "--pipeline-model-parallel-layout");

	ck_assert_int_eq(total % (tp * pp * cp), 0);
	ck_assert_int_eq(total, world(s));
	ck_assert_int_eq(dp, s->dp);
	ck_assert_int_eq(gbs % (mbs * dp), 0);
	ck_assert_int_eq(gbs / (mbs * dp), s->micro_batches);
	ck_assert_int_eq(layers, f->m.layers);
	ck_assert_int_eq(has(w, "--sequence-parallel"), s->sp);
	/* Megatron pads the vocabulary to ceil(V / (d * tp)) * d * tp
	   (TRAINERS.md): the plan counted V rows, unpadded. */
	int d = ivalue(w, "--make-vocab-size-divisible-by");

	ck_assert_int_eq((f->m.vocab + d * tp - 1) / (d * tp) * d * tp, f->m.vocab);
	ck_assert_int_eq(f->m.heads % tp, 0);
	ck_assert_int_eq(s->seq % (2 * cp), 0);
	ck_assert_int_eq(has_line(script, "export CUDA_DEVICE_MAX_CONNECTIONS=1"), tp > 1 || cp > 1);
	if (layout) {
		char *copy = xstrdup(layout), *save = NULL;
		int stages = 0, t = 0;

		ck_assert(!has(w, "--num-virtual-stages-per-pipeline-rank"));
		for (char *st = strtok_r(copy, "|", &save); st; st = strtok_r(NULL, "|", &save), stages++) {
			int blocks = 0;
			const char *q = st;

			ck_assert_int_eq(*q == 'E', stages == 0);
			q += *q == 'E';
			if (*q == 't') {
				blocks = q[1] == '*' ? atoi(q + 2) : 1;
				q += 1 + strspn(q + 1, "*0123456789");
			}
			ck_assert_int_eq(*q == 'L', stages == s->n_stages - 1);
			q += *q == 'L';
			ck_assert_int_eq(*q, '\0');
			ck_assert_int_eq(blocks + (stages == 0) + (stages == s->n_stages - 1),
					 stage_layers(s, stages));
			t += blocks;
		}
		ck_assert_int_eq(t, layers);
		ck_assert_int_eq(stages % pp, 0);
		ck_assert_int_eq(stages / pp, s->vp);
		free(copy);
	} else {
		int vp = has(w, "--num-virtual-stages-per-pipeline-rank")
				 ? ivalue(w, "--num-virtual-stages-per-pipeline-rank")
				 : 1;

		ck_assert_int_eq(vp, s->vp);
		ck_assert_int_eq(layers % (pp * vp), 0);
		for (int k = 0; k < s->n_stages; k++)
			ck_assert_int_eq(stage_layers(s, k), layers / (pp * vp) + (k == 0) +
								     (k == s->n_stages - 1));
	}
	check_nodes(f, dir, nproc, n);
	words_free(w);
	free(args);
	free(script);
}

START_TEST(test_megatron_read_back)
{
	struct fix f;

	fixture(&f, _i);
	if (golden_refusal(_i, EMIT_MEGATRON))
		return;
	char *dir = emit_fix("megatron", &f);

	check_megatron(&f, dir);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Nodes of different GPU counts: one torchrun per node with its own
 * --nproc-per-node from a table in the script. */
START_TEST(test_megatron_mixed_gpu_counts)
{
	static const unsigned char g01[] = { 0, 1 };
	struct fix f;

	fixture(&f, HOMO);
	cluster(&f, "odd");
	group(&f, 0, "h100", 1, 8, 0);
	group(&f, 1, "l40s", 2, 4, 2);
	plan(&f, 2, 1, 2, 1, 4, 1, 512, (const int[]){ 18, 16 }, g01);
	char *dir = emit_fix("megatron", &f), *script = read_in(dir, "launch.sh");

	ck_assert_ptr_nonnull(strstr(script, "case $NODE_RANK in\n0) NPROC=8 ;;\n1|2) NPROC=4 ;;\nesac\n"));
	ck_assert_ptr_nonnull(strstr(script, "--nproc-per-node \"$NPROC\""));
	ck_assert_ptr_nonnull(strstr(script, "'Et*17|t*15L'"));
	check_megatron(&f, dir);

	/* Run it with a torchrun that prints its arguments. */
	char cmd[1024], *out;

	snprintf(cmd, sizeof cmd, "printf '#!/bin/sh\\necho \"$@\"\\n' >%s/torchrun && chmod +x %s/torchrun", dir, dir);
	ck_assert_int_eq(run(cmd, &out), 0);
	free(out);
	snprintf(cmd, sizeof cmd, "PATH=%s:$PATH NODE_RANK=2 MASTER_ADDR=h0 bash %s/launch.sh --lr 1", dir, dir);
	ck_assert_int_eq(run(cmd, &out), 0);
	const char *want = "--nnodes 3 --nproc-per-node 4 --node-rank 2 --master-addr h0 "
			   "--master-port 29500 ./pretrain_gpt.py --num-layers 32 ";

	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, " --bf16 --lr 1\n"));
	free(out);
	snprintf(cmd, sizeof cmd, "NODE_RANK=3 MASTER_ADDR=h0 bash %s/launch.sh 2>&1", dir);
	ck_assert_int_eq(run(cmd, &out), 1);
	ck_assert_str_eq(out, "launch.sh: error: NODE_RANK must be 0 to 2, not '3'\n");
	free(out);
	free(script);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* An even interleaved split needs no layout, only the virtual stage count. */
START_TEST(test_megatron_even_interleaved)
{
	struct fix f;

	fixture(&f, INTERLEAVED);
	plan(&f, 2, 2, 2, 2, 2, 1, 64, (const int[]){ 9, 8, 8, 9 }, (const unsigned char[]){ 0, 0 });
	char *dir = emit_fix("megatron", &f), *script = read_in(dir, "launch.sh");

	ck_assert_ptr_nonnull(strstr(script, "\t--num-virtual-stages-per-pipeline-rank 2\n"));
	ck_assert_ptr_null(strstr(script, "--pipeline-model-parallel-layout"));
	ck_assert_ptr_nonnull(strstr(script, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"));
	check_megatron(&f, dir);
	free(script);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* ds_config.json read back with cJSON: train_batch_size == micro * gas * dp,
 * dp from the slots of launch.sh's hostfile and the plan's tp and pp. */
START_TEST(test_deepspeed_read_back)
{
	struct fix f;
	struct err e = { "" };

	fixture(&f, _i);
	if (golden_refusal(_i, EMIT_DEEPSPEED) ||
	    trainer_check(TRAINER_DEEPSPEED, &f.m, &f.c, &f.s, &e))
		return;
	char *dir = emit_fix("deepspeed", &f), *text = read_in(dir, "ds_config.json");
	char *script = read_in(dir, "launch.sh"), *slots = between(script, "slots=(", ")\n");
	cJSON *doc = cJSON_Parse(text);
	int total = 0;

	for (char *t = strtok(slots, " "); t; t = strtok(NULL, " "))
		total += atoi(t);
	ck_assert_ptr_nonnull(doc);
	int tbs = cJSON_GetObjectItemCaseSensitive(doc, "train_batch_size")->valueint;
	int micro = cJSON_GetObjectItemCaseSensitive(doc, "train_micro_batch_size_per_gpu")->valueint;
	int gas = cJSON_GetObjectItemCaseSensitive(doc, "gradient_accumulation_steps")->valueint;
	cJSON *zero = cJSON_GetObjectItemCaseSensitive(doc, "zero_optimization");
	cJSON *bf16 = cJSON_GetObjectItemCaseSensitive(doc, "bf16");

	ck_assert_int_eq(total, world(&f.s));
	ck_assert_int_eq(tbs, micro * gas * (total / (f.s.tp * f.s.pp)));
	ck_assert_int_eq(tbs, f.s.gbs);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bf16, "enabled")));
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(zero, "stage")->valueint, f.s.zero);
	cJSON_Delete(doc);
	free(slots);
	free(script);
	free(text);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* A tiny TOML reader: the integer value of "key = n" in [section], or -1. */
static int toml_int(const char *text, const char *section, const char *key)
{
	char head[64];
	const char *p;

	snprintf(head, sizeof head, "\n[%s]\n", section);
	p = strstr(text, head);

	ck_assert_msg(p, "no [%s]", section);
	for (p += strlen(head); *p && *p != '['; p = strchr(p, '\n') + 1) {
		size_t n = strlen(key);

		if (strncmp(p, key, n) == 0 && strncmp(p + n, " = ", 3) == 0)
			return atoi(p + n + 3);
		if (!strchr(p, '\n'))
			break;
	}
	return -1;
}

/* train.toml read back: dp * tp * cp * pp == world of run.sh; batch keys
 * agree; one module list per stage naming every block once. */
START_TEST(test_titan_read_back)
{
	struct fix f;
	struct err e = { "" };

	fixture(&f, _i);
	if (trainer_check(TRAINER_TORCHTITAN, &f.m, &f.c, &f.s, &e)) {
		ck_assert_int_eq(_i, OVERLAP_FP8); /* the others run */
		return;
	}
	char *dir = emit_fix("torchtitan", &f), *toml = read_in(dir, "train.toml");
	char *script = read_in(dir, "run.sh");
	int nproc[64], n, total = 0;

	nprocs(script, nproc, &n);
	for (int i = 0; i < n; i++)
		total += nproc[i];
	int rep = toml_int(toml, "parallelism", "data_parallel_replicate_degree");
	int shard = toml_int(toml, "parallelism", "data_parallel_shard_degree");
	int tp = toml_int(toml, "parallelism", "tensor_parallel_degree");
	int cp = toml_int(toml, "parallelism", "context_parallel_degree");
	int pp = toml_int(toml, "parallelism", "pipeline_parallel_degree");
	int mbs = toml_int(toml, "parallelism", "pipeline_parallel_microbatch_size");
	int local = toml_int(toml, "training", "local_batch_size");
	int global = toml_int(toml, "training", "global_batch_size");
	int seq = toml_int(toml, "training", "seq_len");

	ck_assert_int_eq(rep * shard * tp * cp * pp, total);
	ck_assert_int_eq(total, world(&f.s));
	ck_assert_int_eq(rep * shard, f.s.dp);
	ck_assert_int_eq(global, f.s.gbs);
	ck_assert_int_eq(seq, f.s.seq);
	ck_assert_int_eq(seq % (tp * 2 * cp), 0);
	/* torchtitan/train.py: one step's forward takes local_batch_size
	   sequences per DP rank, global / (local x DP) of them accumulate;
	   under PP the forward is split into micro-batches of mbs. */
	ck_assert_int_eq(global % (local * rep * shard), 0);
	if (pp == 1) {
		ck_assert_int_eq(mbs, -1);
		ck_assert_int_eq(local, f.s.mbs);
		ck_assert_int_eq(global / (local * rep * shard), f.s.micro_batches);
		ck_assert_ptr_null(strstr(toml, "module_fqns_per_model_part"));
		goto done;
	}
	ck_assert_int_eq(local * rep * shard, global);
	ck_assert_int_eq(mbs, f.s.mbs);
	ck_assert_int_eq(local % mbs, 0);
	ck_assert_int_eq(local / mbs, f.s.micro_batches);

	char *parts = between(toml, "module_fqns_per_model_part = [\n", "]\n");
	int lists = 0, blocks = 0;

	for (char *q = strchr(parts, '['); q; q = strchr(q + 1, '['))
		lists++;
	for (char *q = strstr(parts, "\"layers."); q; q = strstr(q + 1, "\"layers."))
		ck_assert_int_eq(atoi(q + 8), blocks++);
	ck_assert_int_eq(lists, f.s.n_stages);
	ck_assert_int_eq(blocks, f.m.layers);
	ck_assert_ptr_nonnull(strstr(toml, f.s.schedule == SCHED_ZB_V ? "\"ZBVZeroBubble\""
					   : f.s.vp > 1		      ? "\"Interleaved1F1B\""
								      : "\"1F1B\""));
	free(parts);
done:
	free(script);
	free(toml);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* ---- the plan's kernels, precision and overlaps in the launch files ---- */

/* Emits format for f and returns the text of file name (malloc'd), or NULL
 * when refusable and the trainer rules refuse the plan (a plan a trainer
 * cannot run may be refused instead of emitted with a comment). */
static char *emit_text(const char *format, const struct fix *f, const char *name,
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

/* DualPipeV (TRAINERS.md: torchtitan's pipeline_parallel_schedule takes
 * "DualPipeV"): the ZB-V plan (stages 0 and 3 on rank 0, 1 and 2 on rank
 * 1; 32 micro-batches >= 2 pp) under DualPipeV emits for torchtitan with
 * its name and the V comment, and the Megatron-based trainers refuse it;
 * with 3 micro-batches (< 2 pp = 4) torchtitan refuses it too. */
START_TEST(test_dualpipev_titan)
{
	struct fix f;
	struct err e = { "" };
	char *toml;

	fixture(&f, ZBV);
	f.s.schedule = SCHED_DUALPIPE_V;
	toml = emit_text("torchtitan", &f, "train.toml", true);
	ck_assert_ptr_nonnull(toml);
	ck_assert_ptr_nonnull(strstr(toml, "pipeline_parallel_schedule = \"DualPipeV\"\n"));
	ck_assert_ptr_nonnull(strstr(toml, "# DualPipeV: the model parts below in stage order"));
	free(toml);
	ck_assert_int_eq(trainer_check(TRAINER_MEGATRON, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_str_eq(e.msg, "megatron: schedule 'dualpipev' has no megatron flag or config (torchtitan runs it); plan with 1f1b or interleaved");
	f.s.gbs = 6;
	f.s.micro_batches = 3;
	ck_assert_int_eq(trainer_check(TRAINER_TORCHTITAN, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "schedule 'dualpipev' needs micro-batches (3) >= 2 x pp (4)"));
}
END_TEST

#define F(name) static void name(struct fix *f)
F(f_base)
{
	(void)f;
}
F(f_tp_overlap)
{
	f->s.tp_overlap = true;
}
F(f_tp_overlap_no_sp)
{
	f->s.tp_overlap = true;
	f->s.sp = false;
}
F(f_no_grad_overlap)
{
	f->s.grad_overlap = false;
}
F(f_param_overlap)
{
	f->s.param_overlap = true;
}
F(f_param_overlap_zero0)
{
	f->s.param_overlap = true;
	f->s.zero = 0;
}
F(f_param_overlap_alone)
{
	f->s.param_overlap = true;
	f->s.grad_overlap = false;
}
F(f_fp8)
{
	f->s.fp8 = true;
}
F(f_grad_bf16)
{
	f->s.grad_bytes = 2;
}
F(f_grad_unset)
{
	f->s.grad_bytes = 0;
}
F(f_unfused)
{
	f->s.attn = ATTN_UNFUSED;
}
F(f_fused_softmax)
{
	f->s.attn = ATTN_FUSED_SOFTMAX;
}
F(f_flash1)
{
	f->s.attn = ATTN_FLASH1;
}
F(f_unfused_norm)
{
	f->s.unfused_norm = true;
}
F(f_grad_acc_unfused)
{
	f->s.grad_acc_unfused = true;
}

/* Megatron flags (TRAINERS.md, "overlap and precision"; Megatron-LM's
 * arguments.py) and NeMo / Megatron Bridge fields (the same names as
 * Megatron's config fields: ModelParallelConfig.tp_comm_overlap,
 * DistributedDataParallelConfig.overlap_grad_reduce, overlap_param_gather,
 * grad_reduce_in_fp32; TransformerConfig.fp8, fp8_recipe,
 * attention_backend, masked_softmax_fusion). "--flag=value": the word
 * after --flag is value. */
static const struct feature {
	const char *what;
	void (*mutate)(struct fix *f);
	bool refusable;		    /* the trainer rules may refuse it */
	const char *on[5], *off[6]; /* launch.sh ARGS */
	const char *nemo_on[5];	    /* overrides.txt lines */
	const char *nemo_off[2];    /* overrides.txt line prefixes */
	const char *note;	    /* a comment of launch.sh, or NULL */
} features[] = {
	{ "base", f_base, false, { "--use-distributed-optimizer", "--overlap-grad-reduce", "--attention-backend=flash", "--bf16" }, { "--tp-comm-overlap", "--overlap-param-gather", "--fp8-format", "--fp8-recipe", "--grad-reduce-in-bf16", "--no-masked-softmax-fusion" }, { "ddp.overlap_grad_reduce=true", "ddp.overlap_param_gather=false", "ddp.grad_reduce_in_fp32=true", "model.tp_comm_overlap=false", "model.attention_backend=flash" }, { "model.fp8", "model.masked_softmax_fusion" }, NULL },
	/* Megatron's --gradient-accumulation-fusion is on by default; NeMo's
	 * field TransformerConfig.gradient_accumulation_fusion */
	{ "unfused gradient accumulation", f_grad_acc_unfused, false, { "--no-gradient-accumulation-fusion" }, { NULL }, { "model.gradient_accumulation_fusion=false" }, { NULL }, NULL },
	{ "tp overlap", f_tp_overlap, false, { "--tp-comm-overlap", "--sequence-parallel" }, { NULL }, { "model.tp_comm_overlap=true", "model.sequence_parallel=true" }, { NULL }, NULL },
	{ "tp overlap without sp", f_tp_overlap_no_sp, true, { NULL }, { "--tp-comm-overlap", "--sequence-parallel" }, { "model.tp_comm_overlap=false" }, { NULL }, "needs tp > 1 and sequence parallelism" },
	{ "no grad overlap", f_no_grad_overlap, false, { NULL }, { "--overlap-grad-reduce", "--overlap-param-gather" }, { "ddp.overlap_grad_reduce=false" }, { NULL }, NULL },
	{ "param overlap", f_param_overlap, false, { "--overlap-param-gather", "--use-distributed-optimizer", "--overlap-grad-reduce" }, { NULL }, { "ddp.overlap_param_gather=true", "ddp.use_distributed_optimizer=true", "ddp.overlap_grad_reduce=true" }, { NULL }, NULL },
	{ "param overlap, zero 0", f_param_overlap_zero0, true, { "--overlap-grad-reduce" }, { "--overlap-param-gather", "--use-distributed-optimizer" }, { "ddp.overlap_param_gather=false" }, { NULL }, "needs the distributed optimizer" },
	{ "param overlap alone", f_param_overlap_alone, true, { "--use-distributed-optimizer" }, { "--overlap-param-gather", "--overlap-grad-reduce" }, { "ddp.overlap_param_gather=false" }, { NULL }, "needs --overlap-grad-reduce" },
	{ "fp8", f_fp8, false, { "--fp8-format=hybrid", "--fp8-recipe=delayed", "--bf16" }, { NULL }, { "model.fp8=hybrid", "model.fp8_recipe=delayed" }, { NULL }, NULL },
	{ "bf16 gradients", f_grad_bf16, false, { "--grad-reduce-in-bf16", "--bf16" }, { NULL }, { "ddp.grad_reduce_in_fp32=false" }, { NULL }, NULL },
	{ "gradient bytes unset", f_grad_unset, false, { NULL }, { "--grad-reduce-in-bf16" }, { "ddp.grad_reduce_in_fp32=true" }, { NULL }, NULL },
	{ "unfused attention", f_unfused, false, { "--attention-backend=unfused", "--no-masked-softmax-fusion" }, { NULL }, { "model.attention_backend=unfused", "model.masked_softmax_fusion=false" }, { NULL }, "NVTE_MASKED_SOFTMAX_FUSION=0" },
	{ "fused softmax", f_fused_softmax, false, { "--attention-backend=unfused" }, { "--no-masked-softmax-fusion" }, { "model.attention_backend=unfused" }, { "model.masked_softmax_fusion" }, "attention 'fused-softmax'" },
	{ "flash1", f_flash1, true, { "--attention-backend=flash" }, { NULL }, { "model.attention_backend=flash" }, { NULL }, "FlashAttention 1 cannot be chosen" },
	{ "unfused norms", f_unfused_norm, true, { NULL }, { NULL }, { NULL }, { NULL }, "norms 'unfused'" },
};

/* True if words w hold want: "--flag" or "--flag=value". */
static bool has_arg(char **w, const char *want)
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

/* Each choice of the plan sets exactly its Megatron flags and NeMo fields,
 * and only those; what they cannot set is said in a comment. */
START_TEST(test_feature_megatron)
{
	const struct feature *ft = &features[_i];
	struct fix f;

	fixture(&f, HOMO);
	ft->mutate(&f);
	char *script = emit_text("megatron", &f, "launch.sh", ft->refusable);

	if (!script)
		return;
	char *args = between(script, "ARGS=(\n", "\n)\n");
	char **w = words(args);

	for (int i = 0; i < 5 && ft->on[i]; i++)
		ck_assert_msg(has_arg(w, ft->on[i]), "%s: no %s", ft->what, ft->on[i]);
	for (int i = 0; i < 6 && ft->off[i]; i++)
		ck_assert_msg(!has(w, ft->off[i]), "%s: %s", ft->what, ft->off[i]);
	if (ft->note)
		ck_assert_msg(strstr(script, ft->note), "%s: no comment '%s'", ft->what, ft->note);
	ck_assert_int_eq(has_line(script, "export NVTE_MASKED_SOFTMAX_FUSION=0"),
			 f.s.attn == ATTN_UNFUSED);
	words_free(w);
	free(args);
	free(script);

	char *ov = emit_text("nemo", &f, "overrides.txt", ft->refusable);

	if (!ov)
		return;
	for (int i = 0; i < 5 && ft->nemo_on[i]; i++)
		ck_assert_msg(has_line(ov, ft->nemo_on[i]), "%s: no line %s", ft->what, ft->nemo_on[i]);
	for (int i = 0; i < 2 && ft->nemo_off[i]; i++) {
		char pre[64];

		snprintf(pre, sizeof pre, "\n%s=", ft->nemo_off[i]);
		ck_assert_msg(!strstr(ov, pre), "%s: %s", ft->what, ft->nemo_off[i]);
	}
	free(ov);
}
END_TEST

/* The header of every file states what the plan costed. */
START_TEST(test_feature_header)
{
	struct fix f;

	fixture(&f, OVERLAP_FP8);
	f.s.attn = ATTN_FUSED_SOFTMAX;
	f.s.grad_overlap = false;
	f.s.grad_acc_unfused = true;
	for (int fm = 0; fm < EMIT_COUNT; fm++) {
		const char *format = emit_format_name(fm);
		struct err e = { "" };

		if (trainer_check(format_trainer[fm], &f.m, &f.c, &f.s, &e))
			continue;
		char *text = emit_text(format, &f, "nodes.txt", false);

		ck_assert_msg(strstr(text, "\n# the plan costed: attention fused-softmax, norms fused, "
					   "FP8 GEMMs on,\n"
					   "#   gradients bf16 accumulated in a pass of their own,\n"
					   "#   overlapped: TP comm yes, gradient reduction no, parameter gather yes\n"),
			      "%s: %s", format, text);
		free(text);
	}
}
END_TEST

/* torchtitan v0.2.2: async TP (TRAINERS.md) under torch.compile, FP8
 * through the float8 model converter; FSDP overlaps by itself. */
static char *toml_value(const char *text, const char *section, const char *key)
{
	char head[64];
	const char *p;
	size_t n = strlen(key);

	snprintf(head, sizeof head, "\n[%s]\n", section);
	if (!(p = strstr(text, head)))
		return NULL;
	for (p += strlen(head); *p && *p != '['; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0))
		if (strncmp(p, key, n) == 0 && strncmp(p + n, " = ", 3) == 0) {
			size_t len = strcspn(p + n + 3, "\n");
			char *v = xmalloc(len + 1);

			memcpy(v, p + n + 3, len);
			v[len] = '\0';
			return v;
		}
	return NULL;
}

static void want_toml(const char *text, const char *section, const char *key, const char *want)
{
	char *v = toml_value(text, section, key);

	if (!want)
		ck_assert_msg(!v, "[%s] %s = %s", section, key, v);
	else
		ck_assert_msg(v && strcmp(v, want) == 0, "[%s] %s = %s, want %s", section, key,
			      v ? v : "(none)", want);
	free(v);
}

START_TEST(test_feature_titan)
{
	struct fix f;
	char *t;

	fixture(&f, HOMO); /* tp 2, FSDP over dp 4, fused norms */
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "parallelism", "enable_async_tensor_parallel", NULL);
	want_toml(t, "model", "converters", NULL);
	ck_assert_ptr_null(strstr(t, "[quantize"));
	want_toml(t, "compile", "enable", "true");
	free(t);

	f.s.tp_overlap = true;
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "parallelism", "enable_async_tensor_parallel", "true");
	want_toml(t, "compile", "enable", "true");
	want_toml(t, "compile", "components", "[\"model\", \"loss\"]");
	free(t);

	f.s.tp_overlap = false;
	f.s.fp8 = true;
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "converters", "[\"quantize.linear.float8\"]");
	want_toml(t, "quantize.linear.float8", "filter_fqns", "[\"output\"]");
	want_toml(t, "compile", "enable", "true");
	free(t);

	/* Unfused norms and nothing that needs torch.compile: eager. */
	f.s.fp8 = false;
	f.s.unfused_norm = true;
	if ((t = emit_text("torchtitan", &f, "train.toml", true))) {
		ck_assert_ptr_null(strstr(t, "[compile]"));
		free(t);
	}

	/* What torchtitan cannot set is said. */
	fixture(&f, HOMO);
	f.s.grad_bytes = 2;
	f.s.attn = ATTN_UNFUSED;
	f.s.grad_overlap = false;
	if ((t = emit_text("torchtitan", &f, "train.toml", true))) {
		ck_assert_ptr_nonnull(strstr(t, "mixed_precision_reduce"));
		ck_assert_ptr_nonnull(strstr(t, "# - attention 'unfused': no setting here"));
		ck_assert_ptr_nonnull(strstr(t, "FSDP overlaps"));
		free(t);
	}
}
END_TEST

/* torchtitan's model, batch and parallel fields on the plans, by hand:
 * - MOE: Qwen3-30B-A3B is qwen3's flavor 30B-A3B; pp 2, so one forward per
 *   DP rank takes all 256 / (1 x 4) = 64 micro-batches of 1: local 64;
 *   experts over ep 4 and, as the plan splits them, tp 2.
 * - LONG: no pipeline, so local = mbs = 1 and 16 / (1 x 1) = 16 forwards
 *   accumulate; CP 4 passes K/V shards round the ring ("alltoall").
 * - ZERO3: FSDP over 16, local 2, 512 / (2 x 16) = 16 forwards accumulate. */
START_TEST(test_titan_fidelity)
{
	struct fix f;
	char *t;

	fixture(&f, MOE);
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "name", "\"qwen3\"");
	want_toml(t, "model", "flavor", "\"30B-A3B\"");
	want_toml(t, "training", "local_batch_size", "64");
	want_toml(t, "training", "global_batch_size", "256");
	want_toml(t, "parallelism", "pipeline_parallel_microbatch_size", "1");
	want_toml(t, "parallelism", "expert_parallel_degree", "4");
	want_toml(t, "parallelism", "expert_tensor_parallel_degree", "2");
	want_toml(t, "parallelism", "context_parallel_rotate_method", NULL);
	free(t);

	fixture(&f, LONG);
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "name", "\"llama3\"");
	want_toml(t, "model", "flavor", "\"70B\"");
	want_toml(t, "training", "local_batch_size", "1");
	want_toml(t, "training", "global_batch_size", "16");
	want_toml(t, "training", "seq_len", "131072");
	want_toml(t, "parallelism", "context_parallel_degree", "4");
	want_toml(t, "parallelism", "context_parallel_rotate_method", "\"alltoall\"");
	want_toml(t, "parallelism", "pipeline_parallel_microbatch_size", NULL);
	want_toml(t, "parallelism", "expert_tensor_parallel_degree", NULL);
	want_toml(t, "activation_checkpoint", "mode", "\"full\"");
	free(t);

	fixture(&f, ZERO3);
	t = emit_text("torchtitan", &f, "train.toml", false);
	want_toml(t, "model", "flavor", "\"8B\"");
	want_toml(t, "training", "local_batch_size", "2");
	want_toml(t, "training", "global_batch_size", "512");
	want_toml(t, "parallelism", "data_parallel_shard_degree", "16");
	want_toml(t, "parallelism", "data_parallel_replicate_degree", "1");
	free(t);
}
END_TEST

/* DeepSpeed: zero_optimization.overlap_comm is the gradient-reduction
 * overlap under ZeRO; what the JSON cannot set is said in launch.sh. */
START_TEST(test_feature_deepspeed)
{
	struct fix f;
	char *t;
	cJSON *doc, *zero;

	fixture(&f, HOMO); /* zero 1, grad_overlap */
	for (int on = 1; on >= 0; on--) {
		f.s.grad_overlap = on;
		t = emit_text("deepspeed", &f, "ds_config.json", false);
		doc = cJSON_Parse(t);
		zero = cJSON_GetObjectItemCaseSensitive(doc, "zero_optimization");
		ck_assert(on ? cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(zero, "overlap_comm"))
			     : cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(zero, "overlap_comm")));
		cJSON_Delete(doc);
		free(t);
	}

	f.s.zero = 0;
	f.s.grad_overlap = true;
	if ((t = emit_text("deepspeed", &f, "ds_config.json", true))) {
		doc = cJSON_Parse(t);
		zero = cJSON_GetObjectItemCaseSensitive(doc, "zero_optimization");
		ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(zero, "overlap_comm"));
		cJSON_Delete(doc);
		free(t);
		t = emit_text("deepspeed", &f, "launch.sh", false);
		ck_assert_ptr_nonnull(strstr(t, "only ZeRO's overlap_comm"));
		free(t);
	}

	fixture(&f, HOMO);
	f.s.fp8 = true;
	if ((t = emit_text("deepspeed", &f, "launch.sh", true))) {
		ck_assert_ptr_nonnull(strstr(t, "ds_config.json has no FP8 switch"));
		free(t);
	}
}
END_TEST

/* ---- the model the launch files build ---- */

/* Per plan, the Megatron flags that make the model the plan costed and
 * their NeMo / Megatron Bridge fields (TRAINERS.md "Fields the launch files
 * must carry"), worked out by hand from the fixtures:
 * - vocabulary: Megatron pads V to ceil(V / (d * tp)) * d * tp, so d is the
 *   largest d <= 128 with d * tp dividing V. Llama 3: V = 128256 = 2^8 * 3 *
 *   167; tp 2: V / 2 = 2^7 * 3 * 167, d = 128; tp 4: 2^6 * 3 * 167, d = 96
 *   (2^5 * 3; 128 = 2^7 does not divide); tp 8: 2^5 * 3 * 167, d = 96.
 *   Qwen3: V = 151936 = 2^7 * 1187 (1187 prime); tp 2: 2^6 * 1187, d = 64.
 * - rotary base and norm epsilon: the configs' rope_theta and rms_norm_eps
 *   (Llama 3: 500000, 1e-5; Qwen3-30B-A3B: 1000000, 1e-6); Llama 3.1's
 *   rope scaling: factor 8 with low 1, high 4, original 8192, which
 *   --use-rope-scaling fixes. */
static const struct fidelity {
	int cs;
	const char *on[14]; /* launch.sh ARGS: "--flag" or "--flag=value" */
	const char *off[6];
	const char *nemo[12]; /* overrides.txt lines */
} fidelity[] = {
	{ HOMO,
	  { "--rotary-base=500000", "--norm-epsilon=1e-05", "--make-vocab-size-divisible-by=128",
	    "--attention-dropout=0", "--hidden-dropout=0", "--normalization=RMSNorm",
	    "--position-embedding-type=rope", "--disable-bias-linear", "--swiglu",
	    "--untie-embeddings-and-output-weights", "--num-query-groups=8" },
	  { "--use-rope-scaling", "--add-qkv-bias", "--qk-layernorm", "--window-size", "--num-experts" },
	  { "model.rotary_base=500000", "model.layernorm_epsilon=1e-05",
	    "model.make_vocab_size_divisible_by=128", "model.attention_dropout=0.0",
	    "model.hidden_dropout=0.0", "model.add_bias_linear=false", "model.add_qkv_bias=false",
	    "model.qk_layernorm=false", "model.share_embeddings_and_output_weights=false",
	    "model.gated_linear_unit=true" } },
	{ HETERO,
	  { "--rotary-base=500000", "--norm-epsilon=1e-05", "--make-vocab-size-divisible-by=96",
	    "--attention-dropout=0", "--hidden-dropout=0" },
	  { "--use-rope-scaling" },
	  { "model.make_vocab_size_divisible_by=96", "model.num_query_groups=8" } },
	{ MOE,
	  { "--rotary-base=1000000", "--norm-epsilon=1e-06", "--make-vocab-size-divisible-by=64",
	    "--qk-layernorm", "--num-experts=128", "--moe-router-topk=8",
	    "--moe-ffn-hidden-size=768", "--expert-model-parallel-size=4", "--expert-tensor-parallel-size=2",
	    "--moe-token-dispatcher-type=alltoall", "--moe-router-load-balancing-type=aux_loss",
	    "--num-query-groups=4", "--kv-channels=128" },
	  { "--moe-layer-freq", "--moe-shared-expert-intermediate-size", "--moe-expert-capacity-factor",
	    "--add-qkv-bias", "--use-rope-scaling" },
	  { "model.num_moe_experts=128", "model.moe_router_topk=8", "model.moe_ffn_hidden_size=768",
	    "model.moe_token_dispatcher_type=alltoall", "model.moe_router_load_balancing_type=aux_loss",
	    "model.moe_expert_capacity_factor=null", "model.expert_model_parallel_size=4",
	    "model.qk_layernorm=true", "model.rotary_base=1000000",
	    "model.make_vocab_size_divisible_by=64", "model.expert_tensor_parallel_size=2" } },
	{ LONG,
	  { "--rotary-base=500000", "--use-rope-scaling", "--rope-scaling-factor=8",
	    "--make-vocab-size-divisible-by=96", "--context-parallel-size=4",
	    "--seq-length=131072", "--max-position-embeddings=131072",
	    "--recompute-granularity=full", "--hidden-dropout=0", "--cp-comm-type=p2p" },
	  { "--rotary-scaling-factor" },
	  { "model.rope_scaling=true", "model.rope_scaling_factor=8", "model.context_parallel_size=4",
	    "model.seq_length=131072", "model.make_vocab_size_divisible_by=96", "model.cp_comm_type=p2p" } },
};

START_TEST(test_fidelity)
{
	const struct fidelity *fd = &fidelity[_i];
	struct fix f;

	fixture(&f, fd->cs);
	char *script = emit_text("megatron", &f, "launch.sh", false);
	char *args = between(script, "ARGS=(\n", "\n)\n");
	char **w = words(args);

	for (int i = 0; i < 14 && fd->on[i]; i++)
		ck_assert_msg(has_arg(w, fd->on[i]), "%s: no %s", case_names[fd->cs], fd->on[i]);
	for (int i = 0; i < 6 && fd->off[i]; i++)
		ck_assert_msg(!has(w, fd->off[i]), "%s: %s", case_names[fd->cs], fd->off[i]);
	words_free(w);
	free(args);
	free(script);

	char *ov = emit_text("nemo", &f, "overrides.txt", false);

	for (int i = 0; i < 12 && fd->nemo[i]; i++)
		ck_assert_msg(has_line(ov, fd->nemo[i]), "%s: no line %s", case_names[fd->cs], fd->nemo[i]);
	free(ov);
}
END_TEST

/* Every file starts with what the plan assumed of the model, the layout
 * and the kernels; the long-context plan's values by hand: Llama 3.1's
 * config, one stage of 80 blocks with the embedding and the head. */
START_TEST(test_fidelity_header)
{
	struct fix f;

	fixture(&f, LONG);
	for (int fm = 0; fm < EMIT_COUNT; fm++) {
		if (golden_refusal(LONG, fm))
			continue;
		char *text = emit_text(emit_format_name(fm), &f, "nodes.txt", false);

		ck_assert_msg(strstr(text, "\n# layers/stage E+80+L on node groups h100 (pipeline ranks 0 to 0)\n"
					   "# the model as costed (the trainer must build the same):\n"
					   "#   norm RMSNorm, eps 1e-05\n"
					   "#   positions rotary, base 500000, scaling llama3 x8 (low 1, high 4, original 8192)\n"
					   "#   dropout 0 (attention and hidden)\n"
					   "#   biases none, q/k norm no\n"
					   "#   attention 64 heads, 8 kv heads\n"
					   "#   MLP SwiGLU, embeddings untied, vocabulary 128256 unpadded\n"
					   "# the plan costed: attention flash,"),
			      "%s: %s", emit_format_name(fm), text);
		free(text);
	}
	fixture(&f, MOE);
	char *text = emit_text("deepspeed", &f, "launch.sh", false);

	ck_assert_ptr_nonnull(strstr(text, "#   MoE: 128 experts, top 8, ffn 768, on 48 of 48 layers; dropless"));
	/* ep 4, mbs 1, seq 4096, top 8: the busiest rank at 1 + z sqrt((3/4)
	 * / 32768), z = Phi^-1(3.625 / 4.25) = 1.04913 (Blom; Python's
	 * NormalDist), 1.00502 */
	ck_assert_ptr_nonnull(strstr(text, "all-to-all token dispatch, aux_loss balancing,\n"
					   "#   the busiest EP rank at 1.005 x the mean load\n"));
	ck_assert_ptr_nonnull(strstr(text, "MoE(num_experts=128, ep_size=4, k=8,\n#   drop_tokens=False, enable_expert_tensor_parallelism=True)"));
	free(text);
}
END_TEST

/* DeepSeek-V3 (hf-configs/deepseek-ai_DeepSeek-R1.json): MLA (q rank 1536,
 * kv rank 512, qk 128 + 64 rope, v 128), 3 dense layers of ffn 18432 then
 * 58 MoE layers of 256 experts (top 8, ffn 2048) with one shared expert of
 * 2048, YaRN factor 40, vocab 129280, on 32 nodes of 8 H100: tp8 pp4 dp8
 * ep8 with stages of 1+15, 15, 15, 16+1 layers. By hand: 129280 = 2^8 * 5 *
 * 101, so with tp 8 d * 8 must divide 2^8 * 5 * 101: d | 2^5 * 5 * 101,
 * whose largest divisor <= 128 is 101 (then 80); --moe-layer-freq lists 3
 * zeros and 58 ones. */
START_TEST(test_fidelity_mla)
{
	static const unsigned char g0000[] = { 0, 0, 0, 0 };
	struct fix f;
	char pattern[256] = "[0,0,0";

	memset(&f, 0, sizeof f);
	f.m = (struct model){
		.name = (char *)"deepseek-v3",
		.hidden = 7168,
		.layers = 61,
		.heads = 128,
		.kv_heads = 128,
		.head_dim = 192,
		.ffn = 18432,
		.vocab = 129280,
		.seq = 4096,
		.gbs = 512,
		.ffn_kind = FFN_SWIGLU,
		.max_pos = 163840,
		.dtype_bytes = 2,
		.experts = 256,
		.top_k = 8,
		.moe_ffn = 2048,
		.model_type = "deepseek_v3",
		.norm_eps = 1e-6,
		.rope_theta = 10000,
		.rope_scaling = { "yarn", 40, 0, 0, 4096 },
		.shared_experts = 1,
		.shared_ffn = 2048,
		.dense_layers = 3,
		.moe_every = 1,
		.q_lora_rank = 1536,
		.kv_lora_rank = 512,
		.qk_rope_dim = 64,
		.qk_nope_dim = 128,
		.v_head_dim = 128,
	};
	cluster(&f, "dgx-h100");
	group(&f, 0, "h100", 32, 8, 0);
	plan(&f, 8, 1, 4, 1, 8, 1, 512, (const int[]){ 16, 15, 15, 17 }, g0000);
	f.s.seq = 4096;
	f.s.ep = 8;
	for (int i = 3; i < 61; i++)
		strcat(pattern, ",1");
	strcat(pattern, "]");

	char *dir = emit_fix("megatron", &f), *script = read_in(dir, "launch.sh");
	char *args = between(script, "ARGS=(\n", "\n)\n");
	char **w = words(args);
	static const char *const on[] = {
		"--multi-latent-attention",
		"--q-lora-rank=1536",
		"--kv-lora-rank=512",
		"--qk-head-dim=128",
		"--qk-pos-emb-head-dim=64",
		"--v-head-dim=128",
		"--rotary-scaling-factor=40",
		"--rotary-base=10000",
		"--norm-epsilon=1e-06",
		"--moe-shared-expert-intermediate-size=2048",
		"--moe-router-load-balancing-type=seq_aux_loss",
		"--make-vocab-size-divisible-by=101",
		"--ffn-hidden-size=18432",
		"--moe-ffn-hidden-size=2048",
	};

	for (size_t i = 0; i < sizeof on / sizeof *on; i++)
		ck_assert_msg(has_arg(w, on[i]), "no %s", on[i]);
	ck_assert_str_eq(value(w, "--moe-layer-freq"), pattern);
	ck_assert(!has(w, "--group-query-attention"));
	ck_assert(!has(w, "--kv-channels"));
	ck_assert(!has(w, "--use-rope-scaling"));
	check_megatron(&f, dir);
	rm_tree(dir);
	free(dir);
	words_free(w);
	free(args);
	free(script);

	char *ov = emit_text("nemo", &f, "overrides.txt", false), line[300];

	snprintf(line, sizeof line, "model.moe_layer_freq=%s", pattern);
	ck_assert(has_line(ov, line));
	ck_assert(has_line(ov, "model.multi_latent_attention=true"));
	ck_assert(has_line(ov, "model.kv_lora_rank=512"));
	ck_assert(has_line(ov, "model.moe_shared_expert_intermediate_size=2048"));
	ck_assert(has_line(ov, "model.rotary_scaling_factor=40"));
	free(ov);
}
END_TEST

/* Sliding-window attention on every layer (Mistral 7B v0.1: 4096 tokens):
 * flash attention's window (W - 1, 0), the token and its 4095
 * predecessors. */
START_TEST(test_fidelity_window)
{
	struct fix f;

	fixture(&f, HOMO);
	f.m.sliding_window = 4096;
	f.m.sliding_every = 1;
	f.m.qkv_bias = true;
	char *script = emit_text("megatron", &f, "launch.sh", false);
	char **w = words(strstr(script, "ARGS=(\n"));

	ck_assert(has_arg(w, "--window-size=4095,0"));
	ck_assert(has(w, "--swiglu"));
	ck_assert(!has(w, "--squared-relu"));
	ck_assert(has(w, "--add-qkv-bias"));
	ck_assert(has(w, "--disable-bias-linear"));
	words_free(w);
	free(script);
	char *ov = emit_text("nemo", &f, "overrides.txt", false);

	ck_assert(has_line(ov, "model.window_size=[4095,0]"));
	ck_assert(has_line(ov, "model.add_qkv_bias=true"));
	free(ov);

	/* Nemotron-4's squared ReLU MLP: --squared-relu, no --swiglu */
	f.m.ffn_kind = FFN_RELU2;
	script = emit_text("megatron", &f, "launch.sh", false);
	w = words(strstr(script, "ARGS=(\n"));
	ck_assert(has(w, "--squared-relu"));
	ck_assert(!has(w, "--swiglu"));
	words_free(w);
	free(script);
}
END_TEST

/* The Hugging Face configs of tests/data/hf (copies of
 * shared/reference/hf-configs), imported and planned tp1 pp1 dp8 on one node
 * of 8 H100. Megatron-LM refuses, by hand from the configs: GPT-J and Falcon
 * (parallel attention and MLP), Gemma 2 (a norm before and after attention
 * and MLP: 4 per block), Phi-3.5 (rope_scaling type longrope), Llama 4 Scout
 * (llama3 rope scaling with high_freq_factor 1, where Megatron fixes 4);
 * torchtitan runs only its flavors: Llama 3.1 8B and 70B, Qwen3 1.7B, 8B
 * and 30B-A3B, DeepSeek-R1 (deepseek_v3 671B), Llama 4 Scout (17bx16e). The
 * Megatron flags are read back against the config itself (cJSON): the
 * rotary base is rope_theta, the norm epsilon rms_norm_eps /
 * layer_norm_eps / layer_norm_epsilon, the vocabulary unpadded; q/k/v
 * biases for Qwen2 and Qwen2-MoE, q/k norms for Qwen3 and OLMo 2, Llama 3
 * rope scaling for type llama3, MLA for DeepSeek. */
static const struct hf_case {
	const char *file, *megatron, *titan; /* refusal substring, or NULL */
} hf_cases[] = {
	{ "EleutherAI_gpt-j-6b", "parallel attention and MLP blocks have no flag", "ships no model" },
	{ "Qwen_Qwen1.5-MoE-A2.7B", NULL, "ships no model" },
	{ "Qwen_Qwen2-7B", NULL, "ships no model" },
	{ "Qwen_Qwen2.5-72B-Instruct", NULL, "ships no model" },
	{ "Qwen_Qwen3-1.7B", NULL, NULL },
	{ "Qwen_Qwen3-30B-A3B", NULL, NULL },
	{ "Qwen_Qwen3-8B", NULL, NULL },
	{ "allenai_OLMo-2-7B", NULL, "ships no model" },
	{ "deepseek-ai_DeepSeek-R1", NULL, NULL },
	{ "google_gemma-2-9b", "4 norms per block", "ships no model" },
	{ "meta-llama_Llama-3.1-70B", NULL, NULL },
	{ "meta-llama_Llama-3.1-8B", NULL, NULL },
	{ "meta-llama_Llama-3.2-1B", NULL, "ships no model" },
	{ "meta-llama_Llama-4-Scout-17B-16E-text.ASSEMBLED",
	  "rope scaling 'llama3' with low_freq_factor 1, high_freq_factor 1", NULL },
	{ "microsoft_Phi-3.5-mini", "rope scaling 'longrope' has no flag", "ships no model" },
	{ "mistralai_Mistral-7B-v0.3", NULL, "ships no model" },
	{ "mistralai_Mixtral-8x7B-v0.1", NULL, "ships no model" },
	{ "openai-community_gpt2", NULL, "ships no model" },
	{ "tiiuae_falcon-7b-instruct", "parallel attention and MLP blocks have no flag", "ships no model" },
};

static double cfg_num(cJSON *doc, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

START_TEST(test_hf_configs)
{
	const struct hf_case *hc = &hf_cases[_i];
	char path[256];
	struct fix f;
	struct model *m;
	struct err e = { "" };

	snprintf(path, sizeof path, "tests/data/hf/%s.json", hc->file);
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s", e.msg);
	fixture(&f, HOMO);
	f.m = *m;
	plan(&f, 1, 1, 1, 1, 8, 1, 512, (const int[]){ m->layers + 2 }, (const unsigned char[]){ 0 });
	group(&f, 0, "h100", 1, 8, 0);
	f.s.seq = m->seq;

	int rc = trainer_check(TRAINER_MEGATRON, &f.m, &f.c, &f.s, &e);

	if (hc->megatron)
		ck_assert_msg(rc == -1 && strstr(e.msg, hc->megatron), "%s: %s", hc->file, e.msg);
	else
		ck_assert_msg(rc == 0, "%s: %s", hc->file, e.msg);
	rc = trainer_check(TRAINER_TORCHTITAN, &f.m, &f.c, &f.s, &e);
	if (hc->titan)
		ck_assert_msg(rc == -1 && strstr(e.msg, hc->titan), "%s: %s", hc->file, e.msg);
	else
		ck_assert_msg(rc == 0, "%s: %s", hc->file, e.msg);
	if (hc->megatron) {
		model_free(m);
		return;
	}

	char *cfg = read_file(path), *script = emit_text("megatron", &f, "launch.sh", false);
	cJSON *doc = cJSON_Parse(cfg), *rs = cJSON_GetObjectItemCaseSensitive(doc, "rope_scaling");
	cJSON *rt = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
	char **w = words(strstr(script, "ARGS=(\n"));
	const char *mt = cJSON_GetObjectItemCaseSensitive(doc, "model_type")->valuestring;
	double theta = cfg_num(doc, "rope_theta"), eps = cfg_num(doc, "rms_norm_eps");
	int v = (int)cfg_num(doc, "vocab_size"), d = ivalue(w, "--make-vocab-size-divisible-by");
	bool gpt2 = strcmp(mt, "gpt2") == 0;

	if (!eps)
		eps = cfg_num(doc, gpt2 ? "layer_norm_epsilon" : "layer_norm_eps");
	ck_assert_int_eq((v + d - 1) / d * d, v);
	if (gpt2) {
		ck_assert_str_eq(value(w, "--position-embedding-type"), "learned_absolute");
		ck_assert_str_eq(value(w, "--normalization"), "LayerNorm");
		ck_assert(!has(w, "--rotary-base"));
	} else {
		ck_assert_str_eq(value(w, "--position-embedding-type"), "rope");
		ck_assert_msg(atof(value(w, "--rotary-base")) == (theta ? theta : 10000), "%s", hc->file);
	}
	ck_assert_msg(atof(value(w, "--norm-epsilon")) == eps, "%s", hc->file);
	ck_assert_str_eq(value(w, "--attention-dropout"), "0");
	ck_assert_str_eq(value(w, "--hidden-dropout"), "0");
	ck_assert_int_eq(has(w, "--add-qkv-bias"), strncmp(mt, "qwen2", 5) == 0);
	ck_assert_int_eq(has(w, "--qk-layernorm"),
			 strncmp(mt, "qwen3", 5) == 0 || strcmp(mt, "olmo2") == 0);
	ck_assert_int_eq(has(w, "--use-rope-scaling"), cJSON_IsString(rt) && strcmp(rt->valuestring, "llama3") == 0);
	ck_assert_int_eq(has(w, "--multi-latent-attention"), strcmp(mt, "deepseek_v3") == 0);
	if (has(w, "--use-rope-scaling"))
		ck_assert(atof(value(w, "--rope-scaling-factor")) == cfg_num(rs, "factor"));
	ck_assert(!has(w, "--window-size"));
	words_free(w);
	cJSON_Delete(doc);
	free(script);
	free(cfg);
	model_free(m);
}
END_TEST

/* trainer_mask, trainer_refusal and trainer_mask_names on the plans: the
 * homogeneous plan runs everywhere (bits 0-3: 15), the interleaved one on
 * all but DeepSpeed (1 + 2 + 8 = 11), the ZeRO-3 one on torchtitan and
 * DeepSpeed (2 + 4 = 6). */
START_TEST(test_trainer_mask)
{
	struct fix f;
	char buf[160], small[9];

	fixture(&f, HOMO);
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 15);
	ck_assert_str_eq(trainer_mask_names(15, buf, sizeof buf), "megatron,torchtitan,deepspeed,nemo");
	ck_assert_ptr_null(trainer_refusal(TRAINER_MEGATRON, &f.m, &f.c, &f.s, buf, sizeof buf));
	fixture(&f, INTERLEAVED);
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 11);
	ck_assert_str_eq(trainer_mask_names(11, buf, sizeof buf), "megatron,torchtitan,nemo");
	fixture(&f, ZERO3);
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 6);
	ck_assert_str_eq(trainer_refusal(TRAINER_MEGATRON, &f.m, &f.c, &f.s, buf, sizeof buf),
			 "megatron: ZeRO stage 3 has no flag; the distributed optimizer is ZeRO-1 (gradients stay whole)");
	ck_assert_ptr_eq(trainer_refusal(TRAINER_NEMO, &f.m, &f.c, &f.s, small, sizeof small), small);
	ck_assert_str_eq(small, "nemo: Ze");
	ck_assert_str_eq(trainer_mask_names(0, buf, sizeof buf), "none");
	ck_assert_str_eq(trainer_mask_names(15, small, sizeof small), "megatron");
	fixture(&f, HOMO);
	f.s.schedule = SCHED_ZB_H1;
	ck_assert_uint_eq(trainer_mask(&f.m, &f.c, &f.s), 0);
}
END_TEST

/* ---- the ranking as CSV, JSON and --explain (report.h) ---- */

/* The columns of the CSV before cost model v2, in order (README "CSV
 * columns"): they keep their places. */
static const char *const v1_columns[] = {
	"rank",
	"fits",
	"tp",
	"pp",
	"dp",
	"cp",
	"ep",
	"sp",
	"micro_batch_seqs",
	"micro_batches",
	"global_batch_seqs",
	"seq_tokens",
	"schedule",
	"virtual_stages",
	"recompute",
	"zero_stage",
	"layers_per_stage",
	"groups_per_rank",
	"gpu_types_per_rank",
	"iteration_s",
	"tokens_per_s",
	"mfu_pct",
	"peak_mem_GiB",
	"compute_s",
	"recompute_s",
	"bubble_s",
	"tp_comm_s",
	"cp_comm_s",
	"pp_comm_s",
	"dp_comm_s",
	"ep_comm_s",
	"optimizer_s",
	"weights_GiB",
	"grads_GiB",
	"optimizer_GiB",
	"activations_GiB",
	"logits_GiB",
	"allowance_GiB",
	"reason",
};
/* Added since, after them. */
static const char *const v2_columns[] = {
	"attention",
	"norm",
	"fp8",
	"tp_comm_overlap",
	"overlap_grad_reduce",
	"overlap_param_gather",
	"grad_dtype",
	"tp_comm_hidden_s",
	"cp_comm_hidden_s",
	"dp_comm_hidden_s",
	"grad_acc_fusion",
	/* then the fullest and slowest pipeline ranks, the price, the trainers */
	"fullest_rank",
	"fullest_gpu",
	"fullest_mem_GiB",
	"fullest_capacity_GiB",
	"slowest_rank",
	"slowest_fwd_ms",
	"slowest_bwd_ms",
	"slowest_p2p_ms",
	"bubble_pct",
	"gpus_used",
	"cost_per_iteration_usd",
	"cost_per_million_tokens_usd",
	"trainers",
	"cp_comm_type",
	"cp_a2a_size",
	"moe_balance",
	"moe_capacity_factor",
	"moe_load_factor",
	"etp",
	"vocab_parallel",
	"vocab_comm_s",
	"slimpipe_slices",
	"ep_comm_hidden_s",
	"uneven_batches",
	"params_total",
	"params_active",
};
#define N_V1 (int)(sizeof v1_columns / sizeof *v1_columns)
#define N_V2 (int)(sizeof v2_columns / sizeof *v2_columns)

/* A ranking of two rows of the homogeneous plan: row 0 with the v2
 * choices set (unfused attention and norms, FP8, TP and parameter-gather
 * overlap, bf16 gradients accumulated in a pass of their own) and hidden communication 0.5, 0.25, 1.5 s; row
 * 1 the plain plan, not fitting, with a reason holding a comma. */
static void ranking(struct fix *f, struct plan *p, struct plan_row *rows)
{
	fixture(f, HOMO);
	model_derive_layers(&f->m); /* the JSON's stages are costed (caller frees layer) */
	memset(rows, 0, 2 * sizeof *rows);
	rows[0].s = f->s;
	rows[0].s.attn = ATTN_UNFUSED;
	rows[0].s.unfused_norm = rows[0].s.fp8 = rows[0].s.tp_overlap = true;
	rows[0].s.param_overlap = true;
	rows[0].s.grad_overlap = false;
	rows[0].s.grad_bytes = 2;
	rows[0].s.grad_acc_unfused = true;
	rows[0].trainers = 1u << TRAINER_MEGATRON | 1u << TRAINER_NEMO;
	rows[0].r = (struct cost_result){ .iter_s = 10, .tokens_per_s = 419430.4, .fits = true, .peak_bytes = 60.0 * 1024 * 1024 * 1024 };
	rows[0].r.time = (struct cost_time){ .compute = 9, .tp = 1, .tp_hidden = 0.5, .cp_hidden = 0.25, .dp_hidden = 1.5 };
	rows[1].s = f->s;
	rows[1].r.iter_s = 12;
	snprintf(rows[1].why, sizeof rows[1].why, "does not fit, as a test");
	*p = (struct plan){ .row = rows, .n_row = 2, .n_feasible = 1 };
}

/* libcsv: every field of every record. */
struct table {
	char *cell[3][96];
	int rows, fields;
};

static void t_field(void *s, size_t n, void *data)
{
	struct table *t = data;

	ck_assert_int_lt(t->rows, 3);
	ck_assert_int_lt(t->fields, 96);
	t->cell[t->rows][t->fields] = xmalloc(n + 1);
	memcpy(t->cell[t->rows][t->fields], s, n);
	t->cell[t->rows][t->fields++][n] = '\0';
}

static void t_row(int c, void *data)
{
	struct table *t = data;

	(void)c;
	ck_assert_int_eq(t->fields, N_V1 + N_V2);
	t->rows++;
	t->fields = 0;
}

/* The cell of row r under the column named name. */
static const char *cell(const struct table *t, int r, const char *name)
{
	for (int i = 0; i < N_V1 + N_V2; i++)
		if (strcmp(t->cell[0][i], name) == 0)
			return t->cell[r][i];
	ck_abort_msg("no column '%s'", name);
	return NULL;
}

START_TEST(test_report_csv)
{
	struct fix f;
	struct plan p;
	struct plan_row rows[2];
	struct err e = { "" };
	char *dir = tmpdir(), *path = path2(dir, "plans.csv"), *text;
	struct csv_parser cp;
	struct table t = { 0 };

	ranking(&f, &p, rows);
	ck_assert_msg(report_csv(path, &p, &f.m, &f.c, &e) == 0, "%s", e.msg);
	text = read_file(path);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL), 0);
	ck_assert_uint_eq(csv_parse(&cp, text, strlen(text), t_field, t_row, &t), strlen(text));
	csv_fini(&cp, t_field, t_row, &t);
	csv_free(&cp);
	ck_assert_int_eq(t.rows, 3);
	for (int i = 0; i < N_V1; i++)
		ck_assert_str_eq(t.cell[0][i], v1_columns[i]);
	for (int i = 0; i < N_V2; i++)
		ck_assert_str_eq(t.cell[0][N_V1 + i], v2_columns[i]);

	ck_assert_str_eq(cell(&t, 1, "attention"), "unfused");
	ck_assert_str_eq(cell(&t, 1, "norm"), "unfused");
	ck_assert_str_eq(cell(&t, 1, "fp8"), "1");
	ck_assert_str_eq(cell(&t, 1, "tp_comm_overlap"), "1");
	ck_assert_str_eq(cell(&t, 1, "overlap_grad_reduce"), "0");
	ck_assert_str_eq(cell(&t, 1, "overlap_param_gather"), "1");
	ck_assert_str_eq(cell(&t, 1, "grad_dtype"), "bf16");
	ck_assert_rel(strtod(cell(&t, 1, "tp_comm_hidden_s"), NULL), 0.5, 1e-12);
	ck_assert_rel(strtod(cell(&t, 1, "cp_comm_hidden_s"), NULL), 0.25, 1e-12);
	ck_assert_rel(strtod(cell(&t, 1, "dp_comm_hidden_s"), NULL), 1.5, 1e-12);
	ck_assert_str_eq(cell(&t, 1, "grad_acc_fusion"), "0");
	ck_assert_str_eq(cell(&t, 2, "grad_acc_fusion"), "1");
	ck_assert_str_eq(cell(&t, 1, "trainers"), "megatron,nemo");
	ck_assert_str_eq(cell(&t, 2, "trainers"), "none");
	/* the hidden parts are not in iteration_s = compute + TP comm */
	ck_assert_rel(strtod(cell(&t, 1, "iteration_s"), NULL), 10, 1e-12);

	ck_assert_str_eq(cell(&t, 2, "reason"), "does not fit, as a test");
	ck_assert_str_eq(cell(&t, 2, "attention"), "flash");
	ck_assert_str_eq(cell(&t, 2, "norm"), "fused");
	ck_assert_str_eq(cell(&t, 2, "fp8"), "0");
	ck_assert_str_eq(cell(&t, 2, "tp_comm_overlap"), "0");
	ck_assert_str_eq(cell(&t, 2, "overlap_grad_reduce"), "1");
	ck_assert_str_eq(cell(&t, 2, "overlap_param_gather"), "0");
	ck_assert_str_eq(cell(&t, 2, "grad_dtype"), "fp32");
	ck_assert_rel(strtod(cell(&t, 2, "tp_comm_hidden_s"), NULL), 0, 1e-12);

	for (int r = 0; r < t.rows; r++)
		for (int i = 0; i < N_V1 + N_V2; i++)
			free(t.cell[r][i]);
	free(text);
	free(path);
	rm_tree(dir);
	free(dir);
	free(f.m.layer);
}
END_TEST

/* The JSON has the same keys; the flags are booleans. */
START_TEST(test_report_json)
{
	struct fix f;
	struct plan p;
	struct plan_row rows[2];
	struct err e = { "" };
	char *dir = tmpdir(), *path = path2(dir, "plans.json"), *text;

	ranking(&f, &p, rows);
	ck_assert_msg(report_json(path, &p, &f.m, &f.c, &e) == 0, "%s", e.msg);
	text = read_file(path);
	cJSON *doc = cJSON_Parse(text), *a = cJSON_GetObjectItemCaseSensitive(doc, "strategies");

	ck_assert_int_eq(cJSON_GetArraySize(a), 2);
	for (int r = 0; r < 2; r++) {
		cJSON *o = cJSON_GetArrayItem(a, r);
		int n = 0;

		for (cJSON *k = o->child; k; k = k->next)
			n++;
		ck_assert_int_eq(n, N_V1 + N_V2 + 2); /* + "stages", "gap_pct" */
		for (int i = 0; i < N_V1 + N_V2; i++)
			ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, i < N_V1 ? v1_columns[i]
										   : v2_columns[i - N_V1]),
				      "no key");
	}
	cJSON *o = cJSON_GetArrayItem(a, 0), *o1 = cJSON_GetArrayItem(a, 1);

	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "attention")->valuestring, "unfused");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "trainers")->valuestring, "megatron,nemo");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "norm")->valuestring, "unfused");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "fp8")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "tp_comm_overlap")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "overlap_grad_reduce")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "overlap_param_gather")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o1, "overlap_grad_reduce")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o1, "fp8")));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "grad_dtype")->valuestring, "bf16");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o1, "grad_dtype")->valuestring, "fp32");
	ck_assert_rel(cJSON_GetObjectItemCaseSensitive(o, "tp_comm_hidden_s")->valuedouble, 0.5, 1e-12);
	ck_assert_rel(cJSON_GetObjectItemCaseSensitive(o, "cp_comm_hidden_s")->valuedouble, 0.25, 1e-12);
	ck_assert_rel(cJSON_GetObjectItemCaseSensitive(o, "dp_comm_hidden_s")->valuedouble, 1.5, 1e-12);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "grad_acc_fusion")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o1, "grad_acc_fusion")));
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "fits")));
	cJSON_Delete(doc);
	free(text);
	free(path);
	rm_tree(dir);
	free(dir);
	free(f.m.layer);
}
END_TEST

/* --explain: the hidden communication after the exposed parts, then the
 * kernels, precision and overlaps; the table marks FP8. */
START_TEST(test_report_explain)
{
	struct fix f;
	struct plan p;
	struct plan_row rows[2];
	char *text = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&text, &n);

	ranking(&f, &p, rows);
	report_explain(out, &rows[0], &f.m, &f.c);
	fclose(out);
	const char *exposed = strstr(text, "\n    optimizer ");
	const char *hidden = strstr(text, "\n  communication hidden under compute (not in the iteration):\n"
					  "    TP comm          0.500 s  with the GEMMs\n"
					  "    CP comm          0.250 s  with attention (ring)\n"
					  "    DP comm          1.500 s  with the backward and forward passes\n");

	ck_assert_msg(exposed && hidden && exposed < hidden, "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\n  iteration 10.000 s, "));
	ck_assert_ptr_nonnull(strstr(text, "\n  kernels and precision: attention unfused, norms unfused, "
					   "FP8 GEMMs on, gradients bf16 (accumulated in a pass of their own)\n"
					   "  overlaps: TP comm on, gradient reduction off, parameter gather on\n"));
	free(text);

	text = NULL;
	out = open_memstream(&text, &n);
	report_table(out, &p, &f.m, &f.c, 10);
	fclose(out);
	ck_assert_ptr_nonnull(strstr(text, " ZeRO FP8 layers/stage "));
	ck_assert_ptr_nonnull(strstr(text, "    1 yes E+16|16+L "));
	free(text);
	free(f.m.layer);
}
END_TEST

/* ---- writing ---- */

/* Missing parents are created; a second emit replaces the files and leaves
 * no temporary behind; scripts are executable. */
START_TEST(test_write_dirs_and_replace)
{
	struct fix f;
	struct err e = { "" };
	char *dir = tmpdir(), *sub = path2(dir, "a/b/plan");
	struct stat st;

	fixture(&f, HOMO);
	ck_assert_msg(emit_write("slurm", sub, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	f.s.gbs = 256;
	f.s.micro_batches = 64;
	ck_assert_msg(emit_write("slurm", sub, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	char *names = listing(sub), *script = read_in(sub, "launch.sh");
	char *launch = path2(sub, "launch.sh");

	ck_assert_str_eq(names, "job.sbatch launch.sh nodes.txt");
	ck_assert_ptr_nonnull(strstr(script, "--global-batch-size 256\n"));
	ck_assert_int_eq(stat(launch, &st), 0);
	ck_assert(st.st_mode & S_IXUSR);
	free(launch);
	free(script);
	free(names);
	free(sub);
	rm_tree(dir);
	free(dir);
}
END_TEST

START_TEST(test_write_refused)
{
	struct fix f;
	struct err e = { "" };
	char *dir = tmpdir(), *sub = path2(dir, "plan");
	struct stat st;

	fixture(&f, HOMO);
	ck_assert_int_eq(emit_write("fairseq", sub, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_str_eq(e.msg, "unknown format 'fairseq' (megatron, torchtitan, deepspeed, nemo, slurm)");
	f.s.schedule = SCHED_ZB_H1;
	ck_assert_int_eq(emit_write("slurm", sub, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "megatron: schedule 'zb-h1'"));
	ck_assert_int_ne(stat(sub, &st), 0);
	free(sub);
	rm_tree(dir);
	free(dir);
}
END_TEST

START_TEST(test_write_unwritable)
{
	struct fix f;
	struct err e = { "" };

	fixture(&f, HOMO);
	ck_assert_int_eq(emit_write("megatron", "/proc/ampplan-no/plan", &f.m, &f.c, &f.s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "cannot create '/proc/ampplan-no'"));
	ck_assert_int_eq(emit_write("megatron", "", &f.m, &f.c, &f.s, &e), -1);
	ck_assert_str_eq(e.msg, "the output directory name is empty");
}
END_TEST

START_TEST(test_names)
{
	for (int t = 0; t < TRAINER_COUNT; t++)
		ck_assert_int_eq(trainer_parse(trainer_name(t)), t);
	for (int f = 0; f < EMIT_COUNT; f++)
		ck_assert_int_eq(emit_format_parse(emit_format_name(f)), f);
	ck_assert_int_eq(trainer_parse("slurm"), -1);
	ck_assert_int_eq(emit_format_parse("Megatron"), -1);
}
END_TEST

/* Pipeline ranks fill nodes in order; a node is not shared by two groups. */
START_TEST(test_nodes)
{
	static const unsigned char g010[] = { 0, 1, 0 };
	struct fix f;
	struct trainer_nodes n;
	struct err e = { "" };

	fixture(&f, HOMO);
	cluster(&f, "two");
	group(&f, 0, "h100", 3, 8, 0);
	group(&f, 1, "a100", 1, 8, 1);
	plan(&f, 2, 1, 3, 1, 2, 1, 64, (const int[]){ 12, 11, 11 }, g010);
	ck_assert_int_eq(trainer_nodes(&n, &f.c, &f.s, &e), 0);
	ck_assert_int_eq(n.n, 3);
	ck_assert_int_eq(n.group[0], 0);
	ck_assert_int_eq(n.group[1], 1);
	ck_assert_int_eq(n.group[2], 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(n.gpus[i], 4);
	trainer_nodes_free(&n);
	trainer_nodes_free(NULL);
	group(&f, 0, "h100", 1, 8, 0);
	ck_assert_int_eq(trainer_nodes(&n, &f.c, &f.s, &e), -1);
	ck_assert_str_eq(e.msg, "world size 12 (tp*cp*pp*dp) needs 2 nodes of group 'h100', which has 1");
}
END_TEST

/* ---- one refusal per rule ---- */

static void moe(struct fix *f, int experts, int moe_ffn)
{
	f->m.experts = experts;
	f->m.top_k = 2;
	f->m.moe_ffn = moe_ffn;
}

/* Sets the degrees of the homogeneous plan to tp, cp, pp (vp 1), dp with an
 * even split and a consistent micro-batch count. */
static void degrees(struct fix *f, int tp, int cp, int pp, int dp)
{
	struct strategy *s = &f->s;
	int n = f->m.layers + 2;

	s->tp = tp, s->cp = cp, s->pp = pp, s->dp = dp, s->vp = 1;
	s->n_stages = pp;
	s->micro_batches = s->gbs / (s->mbs * dp);
	for (int k = 0; k <= pp; k++)
		s->first[k] = (unsigned short)(k * n / pp);
	memset(s->group, 0, sizeof s->group);
}

static void interleave(struct fix *f)
{
	f->s.vp = 2;
	f->s.n_stages = 4;
	f->s.schedule = SCHED_INTERLEAVED;
	for (int k = 0; k <= 4; k++)
		f->s.first[k] = (unsigned short)(k == 0 ? 0 : k == 4 ? 34
								     : 1 + 8 * k);
}

#define R(name) static void name(struct fix *f)
R(r_empty_stage)
{
	f->s.first[1] = 34;
}
R(r_cover)
{
	f->s.first[2] = 33;
}
R(r_n_stages)
{
	f->s.n_stages = 3;
}
R(r_group)
{
	f->s.group[1] = 5;
}
R(r_zero_range)
{
	f->s.zero = 4;
}
R(r_positive)
{
	f->s.mbs = 0;
}
R(r_zb_h1)
{
	f->s.schedule = SCHED_ZB_H1;
}
R(r_zb_h2)
{
	f->s.schedule = SCHED_ZB_H2;
}
R(r_dualpipe)
{
	f->s.schedule = SCHED_DUALPIPE;
}
R(r_gpipe)
{
	f->s.schedule = SCHED_GPIPE;
}
R(r_interleaved_vp1)
{
	f->s.schedule = SCHED_INTERLEAVED;
}
R(r_vp_1f1b)
{
	interleave(f);
	f->s.schedule = SCHED_1F1B;
}
R(r_vp)
{
	interleave(f);
}
R(r_interleave_mb)
{
	interleave(f);
	f->s.gbs = 4;
	f->s.micro_batches = 1;
}
R(r_gbs)
{
	f->s.gbs = 510;
}
R(r_micro_batches)
{
	f->s.micro_batches = 64;
}
R(r_sp)
{
	degrees(f, 1, 1, 2, 8);
	f->s.sp = true;
}
R(r_heads)
{
	f->m.heads = 31;
}
R(r_kv)
{
	degrees(f, 8, 1, 2, 1);
	f->m.kv_heads = 12;
}
R(r_kv_titan)
{
	degrees(f, 16, 1, 1, 1);
}
R(r_ffn)
{
	f->m.ffn = 14335;
}
R(r_moe_ffn)
{
	moe(f, 8, 1001);
}
R(r_tp_node)
{
	f->g[0].gpus_per_node = 6;
	degrees(f, 4, 1, 2, 2);
}
R(r_cp_ds)
{
	degrees(f, 2, 2, 2, 2);
}
R(r_cp_seq)
{
	degrees(f, 2, 2, 2, 2);
	f->s.seq = 8190;
}
R(r_cp_seq_titan)
{
	degrees(f, 2, 2, 2, 2);
	f->s.seq = 8196;
}
R(r_ep_dense)
{
	f->s.ep = 2;
}
R(r_ep_experts)
{
	moe(f, 6, 14336);
	f->s.ep = 4;
}
R(r_ep_world)
{
	moe(f, 8, 14336);
	f->s.ep = 8;
}
R(r_ep_sp)
{
	moe(f, 8, 14336);
	f->s.ep = 2;
	f->s.sp = false;
}
R(r_zero_pp)
{
	f->s.zero = 2;
}
R(r_zero3)
{
	f->s.zero = 3;
}
R(r_zero2)
{
	f->s.zero = 2;
}
R(r_ddp)
{
	f->s.zero = 0;
}
R(r_recompute)
{
	f->m.layers = 1;
	f->s.first[1] = 2;
	f->s.first[2] = 3;
	f->s.recompute = RECOMPUTE_FULL;
}
R(r_learned)
{
	f->m.learned_pos = true;
	f->m.max_pos = 4096;
}
R(r_world)
{
	f->g[0].nodes = 1;
}
R(r_falcon)
{
	strcpy(f->m.model_type, "falcon");
	f->m.parallel_block = true;
	f->m.block_norms = 1;
}
R(r_gemma2)
{
	strcpy(f->m.model_type, "gemma2");
	f->m.sliding_window = 4096;
	f->m.sliding_every = 2;
}
R(r_gemma2_norms)
{
	strcpy(f->m.model_type, "gemma2");
	f->m.block_norms = 4;
}
R(r_yarn)
{
	strcpy(f->m.model_type, "qwen2");
	f->m.rope_scaling = (struct rope_scaling){ "yarn", 4, 0, 0, 32768 };
}
/* Llama 4 Scout's config.json: factor 16, low 1, high 1, original 8192 */
R(r_rope_scout)
{
	f->m.rope_scaling = (struct rope_scaling){ "llama3", 16, 1, 1, 8192 };
}
R(r_titan_mixtral)
{
	strcpy(f->m.model_type, "mixtral");
	moe(f, 8, 14336);
}
R(r_titan_ffn)
{
	f->m.ffn = 11008;
}
R(r_titan_window)
{
	strcpy(f->m.model_type, "mistral");
	f->m.sliding_window = 4096;
	f->m.sliding_every = 1;
}

static const struct rule {
	enum trainer t;
	void (*mutate)(struct fix *f);
	const char *want;
} rules[] = {
	{ TRAINER_MEGATRON, r_empty_stage, "megatron: stage 1 holds no layers (first[1] = 34, first[2] = 34); every stage of the layout must be non-empty" },
	{ TRAINER_MEGATRON, r_cover, "megatron: the stages must cover layers 0 to 33 (embedding, 32 blocks, head), not 0 to 32" },
	{ TRAINER_MEGATRON, r_n_stages, "megatron: strategy has 3 stages, not pp * vp (2)" },
	{ TRAINER_MEGATRON, r_group, "megatron: pipeline rank 1 is on node group 5, but the cluster has 1" },
	{ TRAINER_DEEPSPEED, r_zero_range, "deepspeed: ZeRO stage 4 is not 0 to 3" },
	{ TRAINER_MEGATRON, r_positive, "megatron: strategy degrees, batch sizes and seq must be positive" },
	{ TRAINER_MEGATRON, r_zb_h1, "megatron: schedule 'zb-h1' is a planning option only, with no megatron flag or config" },
	{ TRAINER_TORCHTITAN, r_zb_h1, "torchtitan: schedule 'zb-h1' (one stage per rank) has no torch.distributed.pipelining schedule (InterleavedZeroBubble and ZBVZeroBubble run several stages per rank)" },
	{ TRAINER_DEEPSPEED, r_zb_h1, "deepspeed: schedule 'zb-h1' is a planning option only" },
	{ TRAINER_NEMO, r_zb_h2, "nemo: schedule 'zb-h2' is a planning option only, with no nemo flag or config" },
	{ TRAINER_TORCHTITAN, r_zb_h2, "torchtitan: schedule 'zb-h2' (one stage per rank) has no torch.distributed.pipelining schedule" },
	{ TRAINER_TORCHTITAN, r_dualpipe, "torchtitan: schedule 'dualpipe' is a planning option only, with no torchtitan flag or config" },
	{ TRAINER_DEEPSPEED, r_dualpipe, "deepspeed: schedule 'dualpipe' is a planning option only, with no deepspeed flag or config; plan with 1f1b" },
	{ TRAINER_NEMO, r_gpipe, "nemo: schedule 'gpipe' has no nemo flag or config (its pipeline runs 1F1B)" },
	{ TRAINER_MEGATRON, r_interleaved_vp1, "megatron: schedule 'interleaved' needs vp > 1, not 1" },
	{ TRAINER_MEGATRON, r_vp_1f1b, "megatron: vp 2 needs schedule 'interleaved', 'interleaved-zb', 'zb-v' or 'dualpipev', not '1f1b'" },
	{ TRAINER_DEEPSPEED, r_vp, "deepspeed: no interleaved pipeline (vp 2)" },
	{ TRAINER_MEGATRON, r_interleave_mb, "megatron: interleaving (vp 2) needs micro-batches (1) >= pp (2)" },
	{ TRAINER_MEGATRON, r_gbs, "megatron: global batch (510) must be divisible by micro batch (1) * dp (4)" },
	{ TRAINER_MEGATRON, r_micro_batches, "megatron: micro-batches (64) must be global batch / (micro batch * dp) = 128" },
	{ TRAINER_MEGATRON, r_sp, "megatron: sequence parallelism needs tp > 1" },
	{ TRAINER_MEGATRON, r_heads, "megatron: num_attention_heads (31) must be divisible by tp (2)" },
	{ TRAINER_MEGATRON, r_kv, "megatron: num_query_groups (12) must be divisible by tp (8) or divide it" },
	{ TRAINER_TORCHTITAN, r_kv_titan, "torchtitan: n_kv_heads (8) must be divisible by tp (16)" },
	{ TRAINER_MEGATRON, r_ffn, "megatron: ffn_hidden_size (14335) must be divisible by tp (2)" },
	{ TRAINER_MEGATRON, r_moe_ffn, "megatron: MoE ffn hidden size (1001) must be divisible by etp (2)" },
	{ TRAINER_MEGATRON, r_tp_node, "megatron: tp (4) must divide the GPUs per node (6) of group 'h100'" },
	{ TRAINER_DEEPSPEED, r_cp_ds, "deepspeed: no context parallelism (cp 2)" },
	{ TRAINER_MEGATRON, r_cp_seq, "megatron: seq_length (8190) must be divisible by 2 * cp (4)" },
	{ TRAINER_TORCHTITAN, r_cp_seq_titan, "torchtitan: seq_len (8196) must be divisible by tp * 2 * cp (8)" },
	{ TRAINER_MEGATRON, r_ep_dense, "megatron: expert parallelism (ep 2) needs a MoE model" },
	{ TRAINER_MEGATRON, r_ep_experts, "megatron: num_experts (6) must be divisible by ep (4)" },
	{ TRAINER_MEGATRON, r_ep_world, "megatron: world size (16) must be divisible by etp * ep * pp (32)" },
	{ TRAINER_MEGATRON, r_ep_sp, "megatron: expert parallelism with tp > 1 needs sequence parallelism" },
	{ TRAINER_DEEPSPEED, r_zero_pp, "deepspeed: ZeRO stage 2 cannot run with pipeline parallelism (pp 2)" },
	{ TRAINER_MEGATRON, r_zero3, "megatron: ZeRO stage 3 has no flag; the distributed optimizer is ZeRO-1" },
	{ TRAINER_NEMO, r_zero2, "nemo: ZeRO stage 2 has no flag; the distributed optimizer is ZeRO-1" },
	{ TRAINER_TORCHTITAN, r_ddp, "torchtitan: data parallelism without ZeRO (zero 0, dp 4) runs as DDP" },
	{ TRAINER_MEGATRON, r_recompute, "megatron: full recompute needs recompute_num_layers (1) <= layers per pipeline rank (num_layers 1 // pp 2 = 0)" },
	{ TRAINER_MEGATRON, r_learned, "megatron: seq_length (8192) exceeds max_position_embeddings (4096) of the learned position embeddings" },
	{ TRAINER_MEGATRON, r_world, "megatron: world size 16 (tp*cp*pp*dp) needs 2 nodes of group 'h100', which has 1" },
	{ TRAINER_MEGATRON, r_falcon, "megatron: model_type 'falcon': parallel attention and MLP blocks have no flag" },
	{ TRAINER_MEGATRON, r_gemma2_norms, "megatron: model_type 'gemma2': 4 norms per block (norms after attention and MLP too) have no flag" },
	{ TRAINER_NEMO, r_gemma2, "nemo: a sliding window on every 2nd layer (model_type 'gemma2') has no flag: --window-size windows every layer" },
	{ TRAINER_MEGATRON, r_yarn, "megatron: rope scaling 'yarn' has no flag (--use-rope-scaling is Llama 3's)" },
	{ TRAINER_MEGATRON, r_rope_scout, "megatron: rope scaling 'llama3' with low_freq_factor 1, high_freq_factor 1, original_max_position_embeddings 8192: --use-rope-scaling fixes them to 1, 4 and 8192" },
	{ TRAINER_TORCHTITAN, r_titan_mixtral, "torchtitan: v0.2.2 ships no model 'llama3-8b' (model_type 'mixtral', 32 layers, hidden 4096, ffn 14336, 8 experts): its models are the llama3 (8B, 70B, 405B), qwen3, deepseek_v3 and llama4 flavors" },
	{ TRAINER_TORCHTITAN, r_titan_ffn, "torchtitan: v0.2.2 ships no model 'llama3-8b' (model_type 'llama', 32 layers, hidden 4096, ffn 11008, 0 experts)" },
	{ TRAINER_TORCHTITAN, r_titan_window, "torchtitan: v0.2.2 ships no model 'llama3-8b' (model_type 'mistral'" },
};

/* The base plan passes; the mutated one fails with the rule's message. */
START_TEST(test_rule)
{
	const struct rule *r = &rules[_i];
	struct fix f;
	struct err e = { "" };

	fixture(&f, HOMO);
	ck_assert_msg(trainer_check(r->t, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	r->mutate(&f);
	ck_assert_int_eq(trainer_check(r->t, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_msg(strncmp(e.msg, r->want, strlen(r->want)) == 0, "got \"%s\", want \"%s...\"",
		      e.msg, r->want);
}
END_TEST

/* The plans pass every trainer but those golden_refusal names (the
 * enums trainer and emit_format agree on their first four values);
 * Megatron and NeMo run the overlap-fp8 plan. */
START_TEST(test_plans_pass)
{
	struct fix f;
	struct err e = { "" };
	int cs = _i / TRAINER_COUNT, t = _i % TRAINER_COUNT;

	fixture(&f, cs);
	int rc = trainer_check(t, &f.m, &f.c, &f.s, &e);

	if (golden_refusal(cs, t))
		ck_assert_str_eq(e.msg, golden_refusal(cs, t));
	else if (cs != OVERLAP_FP8 || t == TRAINER_MEGATRON || t == TRAINER_NEMO)
		ck_assert_msg(rc == 0, "%s", e.msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("emit");
	TCase *tc = tcase_create("emit");

	tcase_add_loop_test(tc, test_golden, 0, N_CASE * EMIT_COUNT);
	tcase_add_loop_test(tc, test_megatron_read_back, 0, N_CASE);
	tcase_add_test(tc, test_megatron_mixed_gpu_counts);
	tcase_add_test(tc, test_megatron_even_interleaved);
	tcase_add_loop_test(tc, test_deepspeed_read_back, 0, N_CASE);
	tcase_add_loop_test(tc, test_titan_read_back, 0, N_CASE);
	tcase_add_loop_test(tc, test_feature_megatron, 0, (int)(sizeof features / sizeof *features));
	tcase_add_test(tc, test_feature_header);
	tcase_add_loop_test(tc, test_fidelity, 0, (int)(sizeof fidelity / sizeof *fidelity));
	tcase_add_test(tc, test_fidelity_header);
	tcase_add_test(tc, test_fidelity_mla);
	tcase_add_test(tc, test_fidelity_window);
	tcase_add_test(tc, test_trainer_mask);
	tcase_add_loop_test(tc, test_hf_configs, 0, (int)(sizeof hf_cases / sizeof *hf_cases));
	tcase_add_test(tc, test_feature_titan);
	tcase_add_test(tc, test_titan_fidelity);
	tcase_add_test(tc, test_feature_deepspeed);
	tcase_add_test(tc, test_report_csv);
	tcase_add_test(tc, test_dualpipev_titan);
	tcase_add_test(tc, test_report_json);
	tcase_add_test(tc, test_report_explain);
	tcase_add_test(tc, test_write_dirs_and_replace);
	tcase_add_test(tc, test_write_refused);
	tcase_add_test(tc, test_write_unwritable);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_nodes);
	tcase_add_loop_test(tc, test_rule, 0, (int)(sizeof rules / sizeof *rules));
	tcase_add_loop_test(tc, test_plans_pass, 0, N_CASE * TRAINER_COUNT);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
