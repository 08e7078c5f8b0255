/* check_emit.c: the launch files emit.h writes, byte for byte against
 * tests/data/golden (AMPPLAN_UPDATE_GOLDEN=1 rewrites it from the current
 * output: read the diff) and read back as the trainers check them. */
#define TESTUTIL_EMIT_FIXTURE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "emit.h"
#include "model.h"
#include "strategy.h"
#include "testutil.h"
#include "trainer.h"
#include "util.h"

#define GOLDEN "tests/data/golden"

static int world(const struct strategy *s)
{
	return s->tp * s->cp * s->pp * s->dp;
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

		if (n > 3 && strcmp(name + n - 3, ".py") == 0) {
			/* Python's own parser, where Python is installed */
			snprintf(cmd, sizeof cmd,
				 "! command -v python3 >/dev/null || python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' '%s/%s' 2>&1",
				 dir, name);
			ck_assert_msg(run(cmd, &out) == 0, "%s/%s: %s", dir, name, out);
			free(out);
			continue;
		}
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
	snprintf(cmd, sizeof cmd, "printf '#!/bin/sh\\necho \"NVIDIA L40S, 46068\"\\n' >%s/nvidia-smi && chmod +x %s/nvidia-smi",
		 dir, dir);
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

	/* The GPU type of the node (issue 30 item 8): node rank 2 is on group
	   'l40s' (L40S), rank 0 on 'h100'; a fake nvidia-smi says what the
	   node has. Before: no check, the plan ran on whatever GPUs were there. */
	ck_assert_ptr_nonnull(strstr(script, "case $NODE_RANK in\n0) GPU_MODEL=H100 GPU_MIB=0 GPU_TYPE='H100' ;;\n"
					     "1|2) GPU_MODEL=L40S GPU_MIB=0 GPU_TYPE='L40S' ;;\nesac\n"));
	snprintf(cmd, sizeof cmd, "printf '#!/bin/sh\\necho \"NVIDIA H100 80GB HBM3, 81559\"\\n' >%s/nvidia-smi && chmod +x %s/nvidia-smi",
		 dir, dir);
	ck_assert_int_eq(run(cmd, &out), 0);
	free(out);
	snprintf(cmd, sizeof cmd, "PATH=%s:$PATH NODE_RANK=2 MASTER_ADDR=h0 bash %s/launch.sh 2>&1", dir, dir);
	ck_assert_int_eq(run(cmd, &out), 1);
	ck_assert_str_eq(out, "launch.sh: error: node rank 2 needs L40S GPUs (nodes.txt), but this node has 'NVIDIA H100 80GB HBM3' with 81559 MiB (AMPPLAN_NO_GPU_CHECK=1 skips the check)\n");
	free(out);
	snprintf(cmd, sizeof cmd, "PATH=%s:$PATH NODE_RANK=0 MASTER_ADDR=h0 bash %s/launch.sh 2>&1", dir, dir);
	ck_assert_int_eq(run(cmd, &out), 0);
	free(out);
	snprintf(cmd, sizeof cmd, "PATH=%s:$PATH AMPPLAN_NO_GPU_CHECK=1 NODE_RANK=2 MASTER_ADDR=h0 bash %s/launch.sh 2>&1", dir, dir);
	ck_assert_int_eq(run(cmd, &out), 0);
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

/* Deferred LM-head weight gradients: Megatron-LM's switch and limit, NeMo's
 * two fields; all micro-batches (limit 0, Megatron's default) without the
 * limit; a plan without a pipeline has nothing to defer (Megatron-Core
 * refuses the switch with pp 1), which the writers ask of
 * strategy_deferred. */
START_TEST(test_megatron_deferred_wgrad)
{
	struct fix f;
	char *script, *ov;

	fixture(&f, INTERLEAVED);
	plan(&f, 2, 2, 2, 2, 2, 1, 64, (const int[]){ 9, 8, 8, 9 }, (const unsigned char[]){ 0, 0 });
	f.s.wgrad_defer = 8;
	script = emit_text("megatron", &f, "launch.sh", false);
	ck_assert_ptr_nonnull(strstr(script, "\t--defer-embedding-wgrad-compute\n"));
	ck_assert_ptr_nonnull(strstr(script, "\t--wgrad-deferral-limit 8\n"));
	free(script);
	ov = emit_text("nemo", &f, "overrides.txt", false);
	ck_assert(has_line(ov, "model.defer_embedding_wgrad_compute=true"));
	ck_assert(has_line(ov, "model.wgrad_deferral_limit=8"));
	free(ov);
	f.s.wgrad_defer = -1;
	ov = emit_text("nemo", &f, "overrides.txt", false);
	ck_assert(has_line(ov, "model.defer_embedding_wgrad_compute=true"));
	ck_assert_ptr_null(strstr(ov, "wgrad_deferral_limit"));
	free(ov);
	f.s.pp = 1;
	ck_assert_int_eq(strategy_deferred(&f.s), 0);
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

/* torchtitan main (issue 30 item 4): the Python config counts the batch
 * sizes in tokens (the global batch gbs x seq; per DP rank under PP the
 * whole local batch, mbs x micro-batches x seq), sets the pipeline's
 * micro-batches with num_pp_microbatches (no microbatch size), and has no
 * expert_tensor_parallel_degree; an MoE plan with ETP > 1 is refused, with
 * etp 1 it is written; v0.2.2's TOML is still written by "torchtitan". */
START_TEST(test_titan_main)
{
	struct fix f;
	char want[128], *dir, *py, *sh;
	struct err e = { "" };

	fixture(&f, HETERO);
	ck_assert_int_gt(f.s.pp, 1);
	dir = emit_fix("torchtitan-main", &f);
	py = read_in(dir, "config.py");
	sh = read_in(dir, "run.sh");
	snprintf(want, sizeof want, "\"global_batch_size\": %ld,\n", (long)f.s.gbs * f.s.seq);
	ck_assert_msg(strstr(py, want), "%s", want);
	snprintf(want, sizeof want, "\"local_batch_size\": %ld,\n",
		 (long)f.s.mbs * f.s.micro_batches * f.s.seq);
	ck_assert_msg(strstr(py, want), "%s", want);
	snprintf(want, sizeof want, "\"num_pp_microbatches\": %d,\n", f.s.micro_batches);
	ck_assert_msg(strstr(py, want), "%s", want);
	ck_assert_ptr_null(strstr(py, "microbatch_size"));
	ck_assert_ptr_null(strstr(py, "expert_tensor_parallel"));
	ck_assert_ptr_nonnull(strstr(py, "def ampplan_job_config():\n"));
	ck_assert_ptr_nonnull(strstr(sh, "-m torchtitan.train \"$CONFIG_FLAG\" \"$here/config.py\""));
	{
		char *names = listing(dir);

		ck_assert_str_eq(names, "config.py nodes.txt run.sh");
		free(names);
	}
	check_syntax(dir);
	rm_tree(dir);
	free(dir);
	free(py);
	free(sh);

	fixture(&f, MOE);
	dir = tmpdir();
	char *sub = path2(dir, "out");

	ck_assert_int_eq(emit_write("torchtitan-main", sub, &f.m, &f.c, &f.s, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "no expert tensor parallelism"));
	f.s.etp = 1;
	ck_assert_msg(emit_write("torchtitan-main", sub, &f.m, &f.c, &f.s, &e) == 0, "%s", e.msg);
	py = read_in(sub, "config.py");
	ck_assert_ptr_nonnull(strstr(py, "\"expert_parallel_degree\": 4,\n"));
	ck_assert_ptr_null(strstr(py, "expert_tensor_parallel"));
	free(py);
	free(sub);
	rm_tree(dir);
	free(dir);
}
END_TEST

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
	ck_assert_str_eq(e.msg, "unknown format 'fairseq' (megatron, torchtitan, deepspeed, nemo, slurm, torchtitan-main)");
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

int main(void)
{
	Suite *s = suite_create("emit");
	TCase *tc = tcase_create("emit");

	tcase_add_loop_test(tc, test_golden, 0, N_CASE * EMIT_COUNT);
	tcase_add_loop_test(tc, test_megatron_read_back, 0, N_CASE);
	tcase_add_test(tc, test_megatron_mixed_gpu_counts);
	tcase_add_test(tc, test_megatron_even_interleaved);
	tcase_add_test(tc, test_megatron_deferred_wgrad);
	tcase_add_loop_test(tc, test_deepspeed_read_back, 0, N_CASE);
	tcase_add_loop_test(tc, test_titan_read_back, 0, N_CASE);
	tcase_add_test(tc, test_titan_main);
	tcase_add_test(tc, test_fidelity_mla);
	tcase_add_test(tc, test_write_dirs_and_replace);
	tcase_add_test(tc, test_write_refused);
	tcase_add_test(tc, test_write_unwritable);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
