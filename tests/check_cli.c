/* check_cli.c: the ampplan command line: help, usage and option errors,
 * outputs, the ranking, what-if and profile (the bad-input files of
 * tests/data/bad: check_limits.c); check_cli_plans.c has the strategy
 * options and the plans they give. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <csv.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util.h"

#define DEMO "--model profiles/llama70b.json --cluster clusters/mixed.json"
/* For the errors found after a search, whose search need not be long. */
#define TINY "--model tests/data/tiny-2-layers.json --cluster tests/data/three-and-five.json"

START_TEST(help_goes_to_stdout)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--help", &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "usage: ampplan"));
	ck_assert_ptr_nonnull(strstr(out, "--show-infeasible"));
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
}
END_TEST

/* "ampplan X.Y.Z" on one line and exit 0, even with a bad option after
 * it (as --help); tests/check_install.sh compares X.Y.Z with the
 * Makefile's VERSION. */
START_TEST(version_goes_to_stdout)
{
	char *out, *err;
	int x, y, z, n = -1;

	ck_assert_int_eq(run_ampplan("--version --tp 0", &out, &err), 0);
	ck_assert_msg(sscanf(out, "ampplan %d.%d.%d%n", &x, &y, &z, &n) == 3 && n > 0 &&
			      strcmp(out + n, "\n") == 0 && x >= 0 && y >= 0 && z >= 0,
		      "stdout: '%s'", out);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
}
END_TEST

static const char *const usage_errors[] = {
	"--model profiles/llama70b.json",			/* no --cluster */
	"--cluster clusters/mixed.json",			/* no --model */
	DEMO " --tp",						/* no value */
	DEMO " --tp 0",						/* not positive */
	DEMO " --tp 2x",					/* not an integer */
	DEMO " --schedule 2f2b",				/* unknown schedule */
	DEMO " --recompute some",				/* unknown mode */
	DEMO " --zero 4",					/* out of range */
	DEMO " --frobnicate",					/* unknown option */
	DEMO " extra",						/* stray argument */
	DEMO " --tp 3",						/* 64 heads % 3 != 0 */
	DEMO " --tp 8 --pp 4 --dp 4 --cp 1 --mbs 1",		/* world 128 != 64 */
	DEMO " --tp 8 --pp 4 --dp 2 --cp 1 --mbs 3",		/* 3 does not divide 256 */
	DEMO " --vp 2 --schedule 1f1b",				/* vp needs interleaving */
	DEMO " --pick 2",					/* --pick without --emit */
	TINY " --emit megatron --out " TEST_DIR "/none --pick 100000", /* not that many */
	DEMO " --csv - --json -",				/* both on stdout */
};

START_TEST(usage_error_exits_2)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(usage_errors[_i], &out, &err), 2);
	ck_assert_msg(strncmp(err, "ampplan: error: ", 16) == 0, "stderr: %s", err);
	ck_assert_msg(strstr(err, "(try 'ampplan --help')"), "no hint: %s", err);
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
}
END_TEST

/* A JSON ranking that cannot be written takes the CSV of the same run with
 * it: an error leaves no output behind. */
START_TEST(failed_output_leaves_nothing)
{
	char *err;

	remove(TEST_DIR "/partial.csv");
	ck_assert_int_eq(run_ampplan(TINY " --csv " TEST_DIR "/partial.csv --json no/such/dir/x.json", NULL, &err), 1);
	ck_assert_ptr_nonnull(strstr(err, "no/such/dir/x.json"));
	ck_assert_int_ne(access(TEST_DIR "/partial.csv", F_OK), 0);
	free(err);
}
END_TEST

START_TEST(missing_file)
{
	char *err;

	ck_assert_int_eq(run_ampplan("--model no/such.json --cluster clusters/mixed.json", NULL, &err), 1);
	ck_assert_str_eq(err, "ampplan: error: cannot open 'no/such.json': No such file or directory\n");
	free(err);
}
END_TEST

/* Llama-3.1-405B on one 4 x T4 16 GB node: 810 GB of bf16 weights alone
 * exceed the 64 GB the node has, so nothing fits. */
START_TEST(model_that_fits_nothing)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--model profiles/llama405b.json --cluster tests/data/one-t4-node.json --csv " TEST_DIR "/none.csv",
				     &out, &err),
			 1);
	ck_assert_ptr_nonnull(strstr(err, "fits no strategy"));
	ck_assert_int_ne(access(TEST_DIR "/none.csv", F_OK), 0);
	free(out);
	free(err);
}
END_TEST

/* When nothing fits, the error names the strategy that comes closest: on
 * the one T4 node (every GPU 16 GiB) the least "needs N GiB" of all the
 * strategies --show-infeasible lists. With --show-infeasible the CSV is
 * written all the same (a header and one record per strategy listed), the
 * exit status still 1, and the error no longer suggests the option. */
START_TEST(nothing_fits_names_the_closest)
{
	const char *args = "--model profiles/llama405b.json --cluster tests/data/one-t4-node.json";
	const char *key = "default split needs ";
	char cmd[256], want[64], *out, *err, *csv;
	double least = INFINITY;
	int listed = 0;

	snprintf(cmd, sizeof cmd, "%s --show-infeasible --csv " TEST_DIR "/infeasible.csv", args);
	remove(TEST_DIR "/infeasible.csv");
	ck_assert_int_eq(run_ampplan(cmd, &out, &err), 1);
	for (const char *q = strstr(out, "\n  TP "); q; q = strstr(q + 1, "\n  TP ")) {
		const char *n = strstr(q, key), *eol = strchr(q + 1, '\n');

		listed++;
		if (n && (!eol || n < eol) && atof(n + strlen(key)) < least)
			least = atof(n + strlen(key));
	}
	ck_assert_int_gt(listed, 10);
	ck_assert_double_lt(least, INFINITY);
	ck_assert_ptr_null(strstr(err, "try --show-infeasible"));
	csv = read_file(TEST_DIR "/infeasible.csv");
	ck_assert_ptr_nonnull(csv);
	ck_assert_int_eq(count_lines(csv), listed + 1);
	free(csv);
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan(args, &out, &err), 1);
	snprintf(want, sizeof want, "%s%.1f GiB", key, least);
	ck_assert_msg(strstr(err, want), "want '%s' in: %s", want, err);
	ck_assert_ptr_nonnull(strstr(err, "(try --show-infeasible)"));
	free(out);
	free(err);
}
END_TEST

/* Options that contradict each other are usage errors naming them: the
 * deferral limit without the deferral, the deferral without a pipeline;
 * offloading beside full recomputation (or a search that would try it),
 * the MoE modules on a dense model, a list that ends in '+'. */
START_TEST(contradicting_options)
{
	static const struct {
		const char *args, *msg;
	} cases[] = {
		{ "--wgrad-deferral-limit 4", "--wgrad-deferral-limit needs --defer-embedding-wgrad on" },
		{ "--defer-embedding-wgrad on --pp 1", "--defer-embedding-wgrad on needs a pipeline (--pp 1 given)" },
		{ "--offload-modules attn_norm", "--offload-modules needs --recompute none or selective (the search would try full recomputation" },
		{ "--offload-modules attn_norm --recompute full", "--offload-modules needs --recompute none or selective (full recomputation keeps only each block's input)" },
		{ "--offload-modules moe_act --recompute none", "--offload-modules expert_fc1 and moe_act need an MoE model" },
		{ "--offload-modules attn_norm+ --recompute none", "--offload-modules needs modules joined by '+'" },
	};
	char args[256], *out, *err;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(args, sizeof args,
			 "--model profiles/llama3-8b.json --cluster clusters/dgx-h100.json %s",
			 cases[i].args);
		ck_assert_int_eq(run_ampplan(args, &out, &err), 2);
		ck_assert_msg(strstr(err, cases[i].msg), "%s: %s", cases[i].args, err);
		free(out);
		free(err);
	}
}
END_TEST

/* tied_allreduce_s: GPT-2 (tied, V 50257, h 768) on one node of 4 T4s
 * (tests/data/one-t4-node.json: 16 GB/s inside the node at the loader's
 * NCCL efficiency 0.75, 2 us) at TP 1, PP 2, DP 2: the two ranks of 2 GPUs
 * share the node, so each GPU all-reduces V h = 38.6M fp32 gradients with
 * its peer over the node's link: 154,389,504 B / 12 GB/s + 2 x 2 us =
 * 0.0128698 s, part of dp_comm_s, and --explain says so. None on one
 * pipeline rank or with vocabulary parallelism. */
START_TEST(tied_allreduce_column)
{
	static const struct {
		const char *opts;
		double want;
	} cases[] = {
		{ "--pp 2 --dp 2", 0.0128698 },
		{ "--pp 1 --dp 4", 0 },
		{ "--pp 2 --dp 2 --vocab-parallel on", 0 },
	};
	char args[512], *out, *err;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		cJSON *doc;
		const cJSON *r;

		snprintf(args, sizeof args,
			 "--model tests/data/hf/gpt2.json --cluster tests/data/one-t4-node.json --tp 1 --cp 1 "
			 "--mbs 1 --gbs 8 --seq 1024 %s --json -",
			 cases[i].opts);
		doc = json_of(args);
		r = cJSON_GetArrayItem(field(doc, "strategies"), 0);
		ck_assert_msg(fabs(field(r, "tied_allreduce_s")->valuedouble - cases[i].want) <= 1e-9,
			      "%s: %.9g s", cases[i].opts, field(r, "tied_allreduce_s")->valuedouble);
		ck_assert_double_ge(field(r, "dp_comm_s")->valuedouble, cases[i].want);
		cJSON_Delete(doc);
	}
	ck_assert_int_eq(run_ampplan("--model tests/data/hf/gpt2.json --cluster tests/data/one-t4-node.json --tp 1 "
				     "--pp 2 --dp 2 --cp 1 --mbs 1 --gbs 8 --seq 1024 --explain",
				     &out, &err),
			 0);
	ck_assert_msg(strstr(out, "of which 0.013 s the tied embedding's gradient all-reduce"), "%s", out);
	free(out);
	free(err);
}
END_TEST

/* --offload-modules: a planning option (no trainer) whose bytes leave the
 * GPU. Llama-3-8B (h 4096, 32 blocks, bf16) at 4096 tokens, TP 1, PP 1:
 * attn_norm and mlp_norm offload 2 x 4096 x 2 bytes a token, 16384 x 4096
 * x 32 blocks x the one micro-batch in flight = 2 GiB, which the
 * activations lose. */
START_TEST(offload_planning_option)
{
	const char *what_if = "--model profiles/llama3-8b.json --cluster clusters/dgx-h100.json --tp 1 --pp 1 "
			      "--dp 128 --cp 1 --mbs 1 --gbs 256 --seq 4096 --recompute none --zero 1 --json -";
	char args[512], *out, *err;
	cJSON *base, *off;
	const cJSON *b, *o;

	base = json_of(what_if);
	snprintf(args, sizeof args, "%s --offload-modules mlp_norm+attn_norm", what_if);
	off = json_of(args);
	b = cJSON_GetArrayItem(field(base, "strategies"), 0);
	o = cJSON_GetArrayItem(field(off, "strategies"), 0);
	ck_assert_str_eq(field(o, "offload_modules")->valuestring, "attn_norm+mlp_norm");
	ck_assert_str_eq(field(b, "offload_modules")->valuestring, "");
	ck_assert_str_eq(field(o, "trainers")->valuestring, "none");
	ck_assert_rel(field(o, "offloaded_GiB")->valuedouble, 2.0, 1e-5);
	ck_assert_rel(field(b, "activations_GiB")->valuedouble - field(o, "activations_GiB")->valuedouble,
		      2.0, 1e-4);
	ck_assert_rel(field(b, "offloaded_GiB")->valuedouble, 0, 0);
	/* H100's PCIe Gen5 moves a block's 64 MiB in 1.3 ms, less than its
	   compute: hidden */
	ck_assert_rel(field(o, "offload_copy_s")->valuedouble, 0, 0);
	ck_assert_double_gt(field(o, "offload_copy_hidden_s")->valuedouble, 0);
	cJSON_Delete(base);
	cJSON_Delete(off);
	/* --compare marks the modules and the host bytes that differ */
	ck_assert_int_eq(run_ampplan("--model profiles/llama3-8b.json --cluster clusters/dgx-h100.json --gbs 256 --seq 4096 "
				     "--compare tp=1,pp=1,dp=128,cp=1,mbs=1,recompute=none,zero=1 "
				     "--compare tp=1,pp=1,dp=128,cp=1,mbs=1,recompute=none,zero=1,offload-modules=attn_norm+mlp_norm",
				     &out, &err),
			 0);
	ck_assert_msg(strstr(out, "\n* offload modules "), "%s", out);
	ck_assert_msg(strstr(out, "\n*   offloaded GiB (host) "), "%s", out);
	free(out);
	free(err);
}
END_TEST

/* When the trainer refuses every strategy by one rule, the error names the
 * rule, not the memory of strategies it could not run anyway. */
START_TEST(nothing_fits_names_the_trainer_rule)
{
	static const struct {
		const char *args, *rule;
	} cases[] = {
		{ "--trainer megatron --zero 3", "megatron: ZeRO stage 3 has no flag" },
		{ "--trainer deepspeed --schedule interleaved", "deepspeed: no interleaved pipeline" },
	};
	char args[256], *out, *err;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(args, sizeof args,
			 "--model profiles/llama3-8b.json --cluster clusters/dgx-h100.json %s",
			 cases[i].args);
		ck_assert_int_eq(run_ampplan(args, &out, &err), 1);
		ck_assert_msg(strstr(err, "fits no strategy") && strstr(err, cases[i].rule),
			      "%s: %s", cases[i].args, err);
		free(out);
		free(err);
	}
}
END_TEST

/* One node of 3 GPUs and one of 5 (tests/data/three-and-five.json), and a
 * model of 2 blocks, i.e. 4 layers with the embedding and the head. With
 * --pp 3 no stage size divides the 8 GPUs: no strategy can use the
 * cluster. */
START_TEST(cluster_no_strategy_can_use)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--model tests/data/tiny-2-layers.json --cluster tests/data/three-and-five.json --pp 3",
				     &out, &err),
			 1);
	ck_assert_ptr_nonnull(strstr(err, "no strategy can use"));
	free(out);
	free(err);
}
END_TEST

/* A measured point for a GPU type the cluster does not define (a typo:
 * A100-SXM4-80G) used to fall back to the analytic time silently, exit 0;
 * now it is bad input naming the model file, the layer and the types. */
START_TEST(measured_unknown_gpu_is_an_error)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--model tests/data/measured-unknown-gpu.json --cluster clusters/dgx-a100.json",
				     &out, &err),
			 1);
	ck_assert_ptr_nonnull(strstr(err, "tests/data/measured-unknown-gpu.json: layer 1: measured point for GPU type "
					  "'A100-SXM4-80G', which cluster '16x DGX A100 80GB' does not define"));
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
}
END_TEST

/* --work-budget 1000 on the demo (2569 strategies in full) stops at 1000
 * work units, each strategy costed at least one, and says that the ranking
 * is partial, with the strategies it costed. (300 units cost only ZeRO-3
 * strategies over 64 data-parallel GPUs, which do not fit the A100s'
 * 40 GiB with the head's parameters and gradients gathered.) */
START_TEST(work_budget_ends_the_search)
{
	char *out, *err, *at;
	long n = -1, n2 = -2;

	ck_assert_int_eq(run_ampplan(DEMO " --work-budget 1000", &out, &err), 0);
	at = strchr(out, '\n');
	ck_assert_ptr_nonnull(at);
	ck_assert_int_eq(sscanf(at + 1, "%ld strategies costed, ", &n), 1);
	at = strstr(out, "\nsearch ended by the work budget (1000 units) after ");
	ck_assert_ptr_nonnull(at);
	ck_assert_int_eq(sscanf(at, "\nsearch ended by the work budget (1000 units) after %ld strategies: ", &n2), 1);
	ck_assert_int_eq(n, n2);
	ck_assert_int_ge(n, 1);
	ck_assert_int_le(n, 1000);
	free(out);
	free(err);
}
END_TEST

/* The same search on 1 and on 3 threads writes byte-identical CSVs (the
 * CSV alone is on stdout with --csv -): the tuples are shared out to the
 * threads, and the ranking is sorted with a total order. */
START_TEST(threads_give_the_same_ranking)
{
	char *one, *three, *err1, *err3;

	ck_assert_int_eq(run_ampplan(DEMO " --schedule 1f1b --threads 1 --csv - --show-infeasible", &one, &err1), 0);
	ck_assert_int_eq(run_ampplan(DEMO " --schedule 1f1b --threads 3 --csv - --show-infeasible", &three, &err3), 0);
	ck_assert_ptr_nonnull(strstr(one, "\n1,yes,"));
	ck_assert_str_eq(one, three);
	free(one);
	free(three);
	free(err1);
	free(err3);
}
END_TEST

START_TEST(demo_ranks_strategies)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(DEMO, &out, &err), 0);
	ck_assert_str_eq(err, "");
	ck_assert_ptr_nonnull(strstr(out, "rank"));
	ck_assert_ptr_nonnull(strstr(out, "\n   1 "));
	ck_assert_ptr_nonnull(strstr(out, "\n  10 "));
	ck_assert_ptr_null(strstr(out, "GLPK"));
	free(out);
	free(err);
}
END_TEST

/* libcsv callbacks: count fields per row and rows. */
struct csv_count {
	int fields, rows, width, bad_rows;
	char first[64];
};

static void on_field(void *s, size_t n, void *data)
{
	struct csv_count *c = data;

	if (c->rows == 1 && c->fields == 0)
		snprintf(c->first, sizeof c->first, "%.*s", (int)n, (char *)s);
	c->fields++;
}

static void on_row(int ch, void *data)
{
	struct csv_count *c = data;

	(void)ch;
	if (!c->rows)
		c->width = c->fields;
	else if (c->fields != c->width)
		c->bad_rows++;
	c->rows++;
	c->fields = 0;
}

/* The CSV has a header and one row per feasible strategy, as many as the
 * summary line counts, all of the header's width. */
START_TEST(csv_has_a_row_per_feasible_strategy)
{
	struct csv_parser p;
	struct csv_count cnt = { 0 };
	char *out, *buf = NULL, *fit;
	size_t cap = 0, n;
	FILE *f;
	int nfit = -1;

	ck_assert_int_eq(run_ampplan(DEMO " --csv " TEST_DIR "/demo.csv", &out, NULL), 0);
	fit = strstr(out, "strategies costed, ");
	ck_assert_ptr_nonnull(fit);
	ck_assert_int_eq(sscanf(fit, "strategies costed, %d fit", &nfit), 1);
	ck_assert_int_eq(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL), 0);
	f = fopen(TEST_DIR "/demo.csv", "rb");
	ck_assert_ptr_nonnull(f);
	buf = xmalloc(cap = 1 << 16);
	while ((n = fread(buf, 1, cap, f)) > 0)
		ck_assert_uint_eq(csv_parse(&p, buf, n, on_field, on_row, &cnt), n);
	csv_fini(&p, on_field, on_row, &cnt);
	csv_free(&p);
	fclose(f);
	ck_assert_int_eq(cnt.rows, nfit + 1);
	ck_assert_int_eq(cnt.bad_rows, 0);
	ck_assert_int_ge(cnt.width, 30);
	ck_assert_str_eq(cnt.first, "1");
	free(buf);
	free(out);
}
END_TEST

/* --explain breaks down the top 3 strategies, but no more than --top
 * shows: "#1", "#2", ... head each breakdown. --csv - with --json - is
 * refused before the search (both would interleave on stdout), with
 * nothing on stdout. */
START_TEST(explain_follows_top)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(TINY " --explain --top 1", &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n#1\n"));
	ck_assert_ptr_null(strstr(out, "\n#2\n"));
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan(TINY " --explain --top 5", &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n#3\n"));
	ck_assert_ptr_null(strstr(out, "\n#4\n"));
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan(DEMO " --csv - --json -", &out, &err), 2);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "--csv - and --json - both write to stdout"));
	free(out);
	free(err);
}
END_TEST

/* Llama-3-70B's max_position_embeddings is 8192 (RoPE): a longer sequence
 * is planned (searched or compared), with a warning on stderr naming both
 * lengths; up to it, no warning. */
START_TEST(long_sequence_warns)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(DEMO " --seq 16384 --gbs 64 --top 1", &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(err, "ampplan: warning: a sequence of 16384 tokens is longer than the "
					  "model's max_position_embeddings (8192)"));
	ck_assert_ptr_nonnull(strstr(out, "\n   1 "));
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan(DEMO " --seq 16384 --gbs 64 --compare tp=8,pp=2,dp=4,cp=1,mbs=1,zero=1",
				     &out, &err),
			 1); /* it does not fit at 16384 */
	ck_assert_ptr_nonnull(strstr(err, "ampplan: warning: a sequence of 16384 tokens"));
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan(DEMO " --seq 8192 --gbs 64 --top 1", &out, &err), 0);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
}
END_TEST

START_TEST(what_if_prints_breakdown)
{
	char *out;

	ck_assert_int_eq(run_ampplan(DEMO " --tp 8 --pp 4 --dp 2 --cp 1 --mbs 1 --recompute full", &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "1 strategies costed, 1 fit"));
	ck_assert_ptr_nonnull(strstr(out, "memory per GPU"));
	ck_assert_ptr_nonnull(strstr(out, "bubble"));
	free(out);
}
END_TEST

/* The options of cost model v2 and --layout, each with a bad value: exit 2,
 * one line naming the option and what is wrong, nothing on stdout. */
#define WHATIF DEMO " --tp 8 --pp 4 --dp 2 --cp 1 --mbs 1 --recompute full"
static const struct {
	const char *args, *want;
} option_errors[] = {
	{ DEMO " --attention flash2", "--attention needs flash, flash1, fused-softmax or unfused, not 'flash2'" },
	{ DEMO " --norm rms", "--norm needs fused or unfused, not 'rms'" },
	{ DEMO " --fp8 yes", "--fp8 needs on or off, not 'yes'" },
	/* mixed.json's H100s have an FP8 peak, its A100s none */
	{ DEMO " --fp8 on --trainer torchtitan", "--fp8 on, but GPU type 'A100-SXM4-40GB' (group 'a100') has no FP8 peak (peak_fp8_tflops), and only Megatron-LM runs FP8 on some stages" },
	{ DEMO " --sequence-parallel 1", "--sequence-parallel needs on or off, not '1'" },
	{ DEMO " --tp 1 --sequence-parallel on", "--sequence-parallel on needs --tp > 1" },
	{ DEMO " --tp-comm-overlap true", "--tp-comm-overlap needs on or off, not 'true'" },
	{ DEMO " --tp-comm-overlap on --sequence-parallel off", "--tp-comm-overlap on needs sequence parallelism" },
	{ DEMO " --overlap-grad-reduce enabled", "--overlap-grad-reduce needs on or off, not 'enabled'" },
	{ DEMO " --overlap-param-gather ON", "--overlap-param-gather needs on or off, not 'ON'" },
	{ DEMO " --pp 1 --schedule zb-v", "--pp 1 has no pipeline to interleave: --schedule zb-v and --vp need --pp > 1" },
	{ DEMO " --pp 1 --vocab-parallel on", "--pp 1 has no pipeline: --vocab-parallel on needs --pp > 1" },
	{ DEMO " --pp 1 --slices 4", "--pp 1 has no pipeline: --slices needs --pp > 1" },
	{ DEMO " --pp 1 --schedule dualpipev", "--pp 1 has no pipeline to interleave: --schedule dualpipev and --vp need --pp > 1" },
	{ DEMO " --schedule dualpipev --vp 3", "--vp 3 does not go with --schedule dualpipev (it runs 2 stages per rank)" },
	{ DEMO " --schedule dualpipe --pp 3", "--schedule dualpipe needs an even --pp (its two directions meet in the middle), not 3" },
	{ DEMO " --schedule bitpipe", "unknown schedule 'bitpipe' (1f1b, interleaved, zb-h1, gpipe, interleaved-zb, zb-v, zb-h2, dualpipev, dualpipe)" },
	{ DEMO " --grad-dtype fp8", "--grad-dtype needs fp32, bf16 or fp16, not 'fp8'" },
	{ DEMO " --grad-acc-fusion yes", "--grad-acc-fusion needs on or off, not 'yes'" },
	{ DEMO " --work-budget 0", "--work-budget needs a positive number of work units, not '0'" },
	{ DEMO " --threads 0", "--threads needs a positive integer" },
	{ DEMO " --mem-allowance 0", "--mem-allowance needs a positive number of GiB, not '0'" },
	{ DEMO " --mem-allowance 2GiB", "--mem-allowance needs a positive number of GiB, not '2GiB'" },
	{ DEMO " --mem-allowance nan", "--mem-allowance needs a positive number of GiB, not 'nan'" },
	{ DEMO " --layout 'E+40|40+L'", "--layout needs the what-if mode" },
	/* Llama-3-70B: 80 blocks; pp 4, vp 1: 4 stages */
	{ WHATIF " --layout 'E+40|40+L'", "--layout 'E+40|40+L' has 2 stages, but pp x vp is 4" },
	{ WHATIF " --layout 'E+20|20|20|19+L'", "the blocks add up to 79, but the model has 80" },
	{ WHATIF " --layout 'E+20|20|20|21+L'", "the blocks add up to more than the model's 80" },
	{ WHATIF " --layout '20|E+20|20|20+L'", "the first stage must begin with E" },
	{ WHATIF " --layout 'E+20|20|20|20'", "the last stage must end with L" },
	{ WHATIF " --layout 'E+20|20+L|20|20'", "L (final norm and head) may only end the last stage" },
	{ WHATIF " --layout 'E+20||40|20+L'", "stage 1 is empty" },
	{ WHATIF " --layout 'E+20|20|a|40+L'", "stage 2: expected E, a block count or L, not 'a|40+L'" },
	/* 8 stages: vp 2 taken from the layout, which --schedule 1f1b forbids */
	{ WHATIF " --schedule 1f1b --layout 'E+9|10|10|10|10|10|10|11+L'", "has 8 stages, but pp x vp is 4" },
};

START_TEST(option_error_exits_2)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(option_errors[_i].args, &out, &err), 2);
	ck_assert_msg(strncmp(err, "ampplan: error: ", 16) == 0 && strstr(err, option_errors[_i].want),
		      "%s: stderr: %s", option_errors[_i].args, err);
	ck_assert_int_eq(count_lines(err), 2); /* the error and the hint */
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
}
END_TEST

START_TEST(profile_of_hf_config)
{
	char *out;

	ck_assert_int_eq(run_ampplan("profile --model tests/data/hf/llama3-8b.json", &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"hidden_size\""));
	ck_assert_ptr_nonnull(strstr(out, "\"layers\""));
	free(out);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, help_goes_to_stdout);
	tcase_add_test(tc, version_goes_to_stdout);
	tcase_add_loop_test(tc, usage_error_exits_2, 0, sizeof usage_errors / sizeof *usage_errors);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, failed_output_leaves_nothing);
	tcase_add_test(tc, model_that_fits_nothing);
	tcase_add_test(tc, nothing_fits_names_the_closest);
	tcase_add_test(tc, cluster_no_strategy_can_use);
	tcase_add_test(tc, nothing_fits_names_the_trainer_rule);
	tcase_add_test(tc, contradicting_options);
	tcase_add_test(tc, offload_planning_option);
	tcase_add_test(tc, tied_allreduce_column);
	tcase_add_test(tc, measured_unknown_gpu_is_an_error);
	tcase_add_test(tc, work_budget_ends_the_search);
	tcase_add_test(tc, threads_give_the_same_ranking);
	tcase_add_test(tc, demo_ranks_strategies);
	tcase_add_test(tc, csv_has_a_row_per_feasible_strategy);
	tcase_add_test(tc, what_if_prints_breakdown);
	tcase_add_test(tc, explain_follows_top);
	tcase_add_test(tc, long_sequence_warns);
	tcase_add_test(tc, profile_of_hf_config);
	tcase_add_loop_test(tc, option_error_exits_2, 0, sizeof option_errors / sizeof *option_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(cli_suite());
}
