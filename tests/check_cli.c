/* check_cli.c: the ampplan command line on good inputs and on one bad-input
 * file per defect (tests/data/bad/model-*.json, cluster-*.json). */
#define _POSIX_C_SOURCE 200809L
#include <csv.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util.h"

#define DEMO "--model profiles/llama70b.json --cluster clusters/mixed.json"

/* Counts the lines of s. */
static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

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
	DEMO " --emit megatron --out build/none --pick 100000",	/* not that many */
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

/* Runs ampplan on every bad file of one kind: exit 1, one line on stderr
 * naming the file, nothing on stdout, no CSV written. */
static void bad_inputs(const char *pattern, const char *fmt)
{
	glob_t g;

	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_gt(g.gl_pathc, 3);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char args[1024], *out, *err;

		remove("build/bad.csv");
		snprintf(args, sizeof args, fmt, g.gl_pathv[i]);
		ck_assert_int_eq(run_ampplan(args, &out, &err), 1);
		ck_assert_msg(strncmp(err, "ampplan: error: ", 16) == 0 && lines(err) == 1,
			      "%s: stderr: %s", g.gl_pathv[i], err);
		ck_assert_msg(strstr(err, g.gl_pathv[i]), "%s not named in: %s", g.gl_pathv[i], err);
		ck_assert_str_eq(out, "");
		ck_assert_int_ne(access("build/bad.csv", F_OK), 0);
		free(out);
		free(err);
	}
	globfree(&g);
}

START_TEST(bad_models)
{
	bad_inputs("tests/data/bad/model-*.json",
		   "--model %s --cluster clusters/mixed.json --csv build/bad.csv");
}
END_TEST

START_TEST(bad_clusters)
{
	bad_inputs("tests/data/bad/cluster-*.json",
		   "--model profiles/llama70b.json --cluster %s --csv build/bad.csv");
}
END_TEST

/* A JSON ranking that cannot be written takes the CSV of the same run with
 * it: an error leaves no output behind. */
START_TEST(failed_output_leaves_nothing)
{
	char *err;

	remove("build/partial.csv");
	ck_assert_int_eq(run_ampplan(DEMO " --csv build/partial.csv --json no/such/dir/x.json", NULL, &err), 1);
	ck_assert_ptr_nonnull(strstr(err, "no/such/dir/x.json"));
	ck_assert_int_ne(access("build/partial.csv", F_OK), 0);
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

	ck_assert_int_eq(run_ampplan("--model profiles/llama405b.json --cluster tests/data/one-t4-node.json --csv build/none.csv",
				     &out, &err), 1);
	ck_assert_ptr_nonnull(strstr(err, "fits no strategy"));
	ck_assert_int_ne(access("build/none.csv", F_OK), 0);
	free(out);
	free(err);
}
END_TEST

/* One node of 3 GPUs and one of 5 (tests/data/three-and-five.json), and a
 * model of 2 blocks, i.e. 4 layers with the embedding and the head. A stage's
 * GPUs stay on one node group, so a stage of N/pp GPUs must divide both 3
 * and 5: N/pp = 1, pp = 8 > 4 layers. No strategy can use the cluster. */
START_TEST(cluster_no_strategy_can_use)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--model tests/data/tiny-2-layers.json --cluster tests/data/three-and-five.json",
				     &out, &err), 1);
	ck_assert_ptr_nonnull(strstr(err, "no strategy can use"));
	free(out);
	free(err);
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

	ck_assert_int_eq(run_ampplan(DEMO " --csv build/demo.csv", &out, NULL), 0);
	fit = strstr(out, "strategies costed, ");
	ck_assert_ptr_nonnull(fit);
	ck_assert_int_eq(sscanf(fit, "strategies costed, %d fit", &nfit), 1);
	ck_assert_int_eq(csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL), 0);
	f = fopen("build/demo.csv", "rb");
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
	tcase_add_loop_test(tc, usage_error_exits_2, 0, sizeof usage_errors / sizeof *usage_errors);
	tcase_add_test(tc, bad_models);
	tcase_add_test(tc, bad_clusters);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, failed_output_leaves_nothing);
	tcase_add_test(tc, model_that_fits_nothing);
	tcase_add_test(tc, cluster_no_strategy_can_use);
	tcase_add_test(tc, demo_ranks_strategies);
	tcase_add_test(tc, csv_has_a_row_per_feasible_strategy);
	tcase_add_test(tc, what_if_prints_breakdown);
	tcase_add_test(tc, profile_of_hf_config);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(cli_suite());
}
