/* check_stages.c: per-stage time and memory on the command line (issue 12):
 * the table's fullest-GPU column, --explain's per-rank table, the CSV and
 * JSON per-stage columns and keys, --mem-headroom, --ep and --compare. The
 * arithmetic of cost_ranks is checked by hand in check_cost.c
 * (test_ranks_toy, test_ranks_interleaved); here the outputs must agree
 * with each other and with the definitions (busy + idle + rank 0's tail =
 * the iteration, the parts of memory add up, the fullest GPU is the
 * highest share of its memory, not the most GiB). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "util.h"

#define DEMO "--model profiles/llama70b.json --cluster clusters/mixed.json"
/* The demo's top plan as a what-if: ZB-H1 on E+10|10|30|30+L, the A100s
 * first: 37.9 GiB of 40 on rank 0 (A100) is the fullest GPU, 71.9 of 80 on
 * rank 2 (H100) the most GiB. */
#define TOP1	  "tp=8,pp=4,dp=2,cp=1,mbs=2,schedule=zb-h1,zero=1,layout=E+10|10|30|30+L,tp-comm-overlap=on,overlap-grad-reduce=on,overlap-param-gather=on"
#define TOP1_OPTS "--tp 8 --pp 4 --dp 2 --cp 1 --mbs 2 --schedule zb-h1 --zero 1 --layout 'E+10|10|30|30+L' --tp-comm-overlap on --overlap-grad-reduce on --overlap-param-gather on"
/* Megatron's default split of the same degrees, 1F1B, no ZeRO: 20 blocks
 * per stage put about 49 GiB on a 40 GiB A100. */
#define EVEN "tp=8,pp=4,dp=2,cp=1,mbs=1,layout=E+19|20|20|21+L"

static double num(const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(x), "no number '%s'", key);
	return x->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsString(x), "no string '%s'", key);
	return x->valuestring;
}

/* The line of out that starts with prefix (after leading blanks are
 * matched literally), as a pointer into out. */
static const char *line_of(const char *out, const char *prefix)
{
	const char *at = strstr(out, prefix);

	ck_assert_msg(at != NULL, "no '%s' in:\n%s", prefix, out);
	return at;
}

/* The JSON ranking of the demo: every stage's rank numbers agree with the
 * row: busy + idle is the same pipeline time on every rank, and adding
 * the tail (exposed DP + optimizer) of the rank whose tail ends last gives
 * iteration_s (rank 0's, or a later rank's on the demo's FP8 rows, whose
 * H100 ranks hold more blocks than the A100 rank 0); the memory
 * parts add up to the rank's GiB; the fullest GPU is the stage with the
 * highest rank_mem_GiB / rank_capacity_GiB; the slowest rank's ms are the
 * row's; bubble_pct = 100 bubble_s / iteration_s. */
START_TEST(json_stages_agree_with_the_row)
{
	char *out;
	cJSON *doc, *rows, *row;
	int checked = 0;

	ck_assert_int_eq(run_ampplan(DEMO " --json - --top 1", &out, NULL), 0);
	doc = cJSON_Parse(out);
	ck_assert_ptr_nonnull(doc);
	rows = cJSON_GetObjectItemCaseSensitive(doc, "strategies");
	cJSON_ArrayForEach(row, rows)
	{
		const cJSON *stages = cJSON_GetObjectItemCaseSensitive(row, "stages"), *st;
		const cJSON *rank0 = cJSON_GetArrayItem(stages, 0);
		double it = num(row, "iteration_s"), best = -1;
		int fullest = -1;

		if (checked == 50)
			break;
		checked++;
		ck_assert_rel(num(row, "bubble_pct"), 100 * num(row, "bubble_s") / it, 1e-4);
		cJSON_ArrayForEach(st, stages)
		{
			if (num(st, "stage") >= num(row, "pp")) {
				/* a later virtual stage: its own ms only */
				ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(st, "rank_mem_GiB"));
				ck_assert(num(st, "fwd_ms") > 0);
				continue;
			}
			double mem = num(st, "rank_mem_GiB"), cap = num(st, "rank_capacity_GiB");
			double parts = num(st, "rank_weights_GiB") + num(st, "rank_grads_GiB") +
				       num(st, "rank_optimizer_GiB") + num(st, "rank_activations_GiB") +
				       num(st, "rank_logits_GiB") + num(st, "rank_allowance_GiB");

			/* busy = m x (fwd + bwd + p2p) per micro-batch; busy +
			 * idle = the pipeline, the iteration less the tail of
			 * the rank whose tail ends last (cost.c iter_tail: the
			 * row's dp_comm_s and optimizer_s without ZeRO-3),
			 * rank 0's or a later one's; rank 0's ends no later */
			double busy = num(row, "micro_batches") *
				      (num(st, "rank_fwd_ms") + num(st, "rank_bwd_ms") + num(st, "rank_p2p_ms")) /
				      1e3;
			double tail = num(row, "dp_comm_s") + num(row, "optimizer_s");

			ck_assert_int_lt(num(row, "zero_stage"), 3);
			ck_assert_rel(busy + num(st, "rank_idle_s") + tail, it, 1e-5);
			ck_assert(busy + num(st, "rank_idle_s") + num(rank0, "rank_dp_comm_s") +
					  num(rank0, "rank_optimizer_s") <=
				  it * (1 + 1e-5));
			ck_assert_rel(num(st, "rank_idle_s"), num(st, "rank_bubble_pct") / 100 * (it - tail), 1e-4);
			ck_assert(num(st, "rank_idle_s") >= 0);
			ck_assert(num(st, "rank_comm_ms") <= num(st, "rank_fwd_ms") + num(st, "rank_bwd_ms"));
			ck_assert_rel(parts, mem, 1e-5);
			if (mem / cap > best) {
				best = mem / cap;
				fullest = (int)num(st, "pipeline_rank");
			}
			if ((int)num(st, "pipeline_rank") == (int)num(row, "slowest_rank")) {
				ck_assert_rel(num(st, "rank_fwd_ms"), num(row, "slowest_fwd_ms"), 1e-5);
				ck_assert_rel(num(st, "rank_bwd_ms"), num(row, "slowest_bwd_ms"), 1e-5);
				ck_assert_rel(num(st, "rank_p2p_ms"), num(row, "slowest_p2p_ms"), 1e-5);
			}
			if ((int)num(st, "pipeline_rank") == (int)num(row, "fullest_rank")) {
				ck_assert_rel(mem, num(row, "fullest_mem_GiB"), 1e-5);
				ck_assert_rel(cap, num(row, "fullest_capacity_GiB"), 1e-5);
				ck_assert_str_eq(str(st, "gpu"), str(row, "fullest_gpu"));
			}
		}
		ck_assert_int_eq(fullest, (int)num(row, "fullest_rank"));
	}
	ck_assert_int_eq(checked, 50);
	cJSON_Delete(doc);
	free(out);
}
END_TEST

/* TOP1: the fullest GPU is rank 0's A100 (about 38 of 40 GiB), with fewer
 * GiB than the heaviest rank, rank 2's H100 (about 72 of 80; issue 12's
 * demo). */
START_TEST(fullest_is_not_the_most_gib)
{
	char *out;
	cJSON *doc;
	const cJSON *row;

	ck_assert_int_eq(run_ampplan(DEMO " " TOP1_OPTS " --json -", &out, NULL), 0);
	doc = cJSON_Parse(out);
	ck_assert_ptr_nonnull(doc);
	row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "strategies"), 0);
	ck_assert_str_eq(str(row, "fullest_gpu"), "A100-SXM4-40GB");
	ck_assert_int_eq((int)num(row, "fullest_rank"), 0);
	ck_assert_rel(num(row, "fullest_capacity_GiB"), 40, 0);
	ck_assert(num(row, "fullest_mem_GiB") < num(row, "peak_mem_GiB"));
	ck_assert(num(row, "fullest_mem_GiB") / 40 > num(row, "peak_mem_GiB") / 80);
	cJSON_Delete(doc);
	free(out);
}
END_TEST

/* The table's memory column is the fullest GPU as used/capacity, the
 * CSV's fullest_* columns the same numbers. */
START_TEST(table_shows_the_fullest_gpu)
{
	char *out, *json, want[64];
	cJSON *doc;
	const cJSON *row;

	ck_assert_int_eq(run_ampplan(DEMO " --top 1", &out, NULL), 0);
	ck_assert_int_eq(run_ampplan(DEMO " --top 1 --json -", &json, NULL), 0);
	doc = cJSON_Parse(json);
	row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "strategies"), 0);
	snprintf(want, sizeof want, " %.1f/%.0f ", num(row, "fullest_mem_GiB"),
		 num(row, "fullest_capacity_GiB"));
	ck_assert_msg(strstr(line_of(out, "\n   1 "), want), "no '%s' in:\n%s", want, out);
	ck_assert_ptr_nonnull(strstr(out, "    mem GiB trainers\n"));
	cJSON_Delete(doc);
	free(out);
	free(json);
}
END_TEST

/* --explain's per-rank table: one line per pipeline rank with GPU type,
 * group, layers, used/capacity; the slowest and the fullest named; the
 * used GiB of each line add up from its parts. */
START_TEST(explain_has_a_line_per_rank)
{
	char *out;
	const char *t, *layout[] = { "E+10", "10", "30", "30+L" };
	int ranks = 0;

	ck_assert_int_eq(run_ampplan(DEMO " --compare '" TOP1 "' --explain", &out, NULL), 0);
	t = line_of(out, "  per pipeline rank: ");
	t = strchr(line_of(t, "    rank GPU"), '\n') + 1;
	while (strncmp(t, "    ", 4) == 0) {
		int q;
		char gpu[64], group[64], layers[64];
		double f, b, comm, p2p, bub, used, cap, part[6], sum = 0;

		ck_assert_int_eq(sscanf(t, "%d %63s %63s %63s %lf %lf %lf %lf %lf%% %lf/%lf %lf %lf %lf %lf %lf %lf",
					&q, gpu, group, layers, &f, &b, &comm, &p2p, &bub, &used, &cap,
					&part[0], &part[1], &part[2], &part[3], &part[4], &part[5]),
				 17);
		ck_assert_int_eq(q, ranks);
		ck_assert_str_eq(gpu, q < 2 ? "A100-SXM4-40GB" : "H100-SXM5-80GB");
		ck_assert_str_eq(layers, layout[q]);
		ck_assert_rel(cap, q < 2 ? 40 : 80, 0);
		for (int i = 0; i < 6; i++)
			sum += part[i];
		ck_assert_rel(sum, used, 0.06); /* printed to 0.01 and 0.1 */
		if (q == 0)
			ck_assert_ptr_nonnull(strstr(strchr(t, 'E'), "fullest\n"));
		ranks++;
		t = strchr(t, '\n') + 1;
	}
	ck_assert_int_eq(ranks, 4);
	free(out);
}
END_TEST

/* --mem-headroom: the what-if of TOP1 uses U GiB of the A100's 40 on its
 * fullest GPU (read from the table); a headroom a little under 40 - U
 * still fits, a little over does not and names the rank; with 10% of
 * every GPU kept free the whole search ranks only plans within 36 and 72
 * GiB, and says so. */
START_TEST(headroom_reserves_memory)
{
	char *out, *err, args[1024];
	double used, cap;
	const char *t;

	ck_assert_int_eq(run_ampplan(DEMO " " TOP1_OPTS, &out, NULL), 0);
	t = line_of(out, "\n   1 ");
	t = strchr(t, '/');
	while (t[-1] != ' ')
		t--;
	ck_assert_int_eq(sscanf(t, "%lf/%lf", &used, &cap), 2);
	ck_assert_rel(cap, 40, 0);
	ck_assert(used > 37 && used < 40);
	free(out);
	snprintf(args, sizeof args, DEMO " " TOP1_OPTS " --mem-headroom %.3f", 40 - used - 0.06);
	ck_assert_int_eq(run_ampplan(args, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "memory headroom: "));
	free(out);
	free(err);
	snprintf(args, sizeof args, DEMO " " TOP1_OPTS " --mem-headroom %.3f", 40 - used + 0.06);
	ck_assert_int_eq(run_ampplan(args, &out, &err), 1);
	ck_assert_ptr_nonnull(strstr(out, "\ndoes not fit: "));
	ck_assert_ptr_nonnull(strstr(out, "fullest  over by "));
	free(out);
	free(err);

	ck_assert_int_eq(run_ampplan(DEMO " --mem-headroom 10% --json -", &out, &err), 0);
	{
		cJSON *doc = cJSON_Parse(out), *row;
		int n = 0;

		ck_assert_ptr_nonnull(doc);
		cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "strategies"))
		{
			double c = num(row, "fullest_capacity_GiB");

			ck_assert_msg(c == 36 || c == 72, "capacity %g", c);
			ck_assert(num(row, "fullest_mem_GiB") <= c);
			n++;
		}
		ck_assert_int_gt(n, 0);
		cJSON_Delete(doc);
	}
	ck_assert_ptr_nonnull(strstr(err, "memory headroom: 10% of each GPU kept free"));
	ck_assert_ptr_nonnull(strstr(err, "A100-SXM4-40GB 36.0 GiB"));
	free(out);
	free(err);
}
END_TEST

static const struct {
	const char *args, *want;
	int rc;
} bad_options[] = {
	{ DEMO " --mem-headroom 0", "--mem-headroom needs a positive number of GiB, or a percentage below 100", 2 },
	{ DEMO " --mem-headroom 100%", "--mem-headroom needs a positive number of GiB, or a percentage below 100", 2 },
	{ DEMO " --mem-headroom 2GiB", "--mem-headroom needs a positive number of GiB", 2 },
	{ DEMO " --mem-headroom 40", "--mem-headroom 40 GiB leaves nothing of the 40 GiB of GPU type 'A100-SXM4-40GB'", 1 },
	{ DEMO " --ep 2", "--ep 2, but the model has no experts", 2 },
	{ "--model profiles/mixtral-8x7b.json --cluster clusters/dgx-h100.json --ep 3",
	  "--ep 3 must divide the model's 8 experts", 2 },
	{ DEMO " --compare 'tp=8,pp=4'", "--compare 'tp=8,pp=4' needs tp, pp, dp, cp and mbs", 2 },
	{ DEMO " --compare 'tp=8,gbs=4'", "'gbs' is not KEY=VALUE of a strategy option", 2 },
	{ DEMO " --compare 'tp8'", "'tp8' is not KEY=VALUE", 2 },
	{ DEMO " --compare 'tp=x'", "--tp needs a positive integer", 2 },
	{ DEMO " --compare '" EVEN "' --csv x.csv", "--compare prints a table", 2 },
};

START_TEST(bad_option_values)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(bad_options[_i].args, &out, &err), bad_options[_i].rc);
	ck_assert_msg(strncmp(err, "ampplan: error: ", 16) == 0 && strstr(err, bad_options[_i].want),
		      "%s: stderr: %s", bad_options[_i].args, err);
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
}
END_TEST

/* --ep fixes EP in the search: Mixtral's 8 experts on 16 DGX H100, every
 * row EP 4; and in the what-if mode. */
START_TEST(ep_is_fixed)
{
	char *out;
	cJSON *doc, *row;
	int n = 0;

	ck_assert_int_eq(run_ampplan("--model profiles/mixtral-8x7b.json --cluster clusters/dgx-h100.json --ep 4 --work-budget 2000 --json -",
				     &out, NULL),
			 0);
	doc = cJSON_Parse(out);
	ck_assert_ptr_nonnull(doc);
	cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "strategies"))
	{
		ck_assert_int_eq((int)num(row, "ep"), 4);
		n++;
	}
	ck_assert_int_gt(n, 0);
	cJSON_Delete(doc);
	free(out);
	ck_assert_int_eq(run_ampplan("--model profiles/mixtral-8x7b.json --cluster clusters/dgx-h100.json --tp 2 --pp 4 --dp 16 --cp 1 --mbs 1 --ep 2",
				     &out, NULL),
			 0);
	ck_assert_ptr_nonnull(strstr(out, "\n   1   2   4   16   1   2   1 "));
	free(out);
}
END_TEST

/* --compare of two strategies: one column each, rows that differ marked
 * '*', the same numbers as the what-if mode of each; the second does not
 * fit: "no: rank R over by X GiB" with X = used - capacity of rank R in
 * its per-rank table, and exit 1. */
START_TEST(compare_two_strategies)
{
	char *out, *err, *one;
	const char *t;
	double it1, it2, over, used, cap;
	int r;

	ck_assert_int_eq(run_ampplan(DEMO " --compare '" TOP1 "' --compare '" EVEN "'", &out, &err), 1);
	ck_assert_ptr_nonnull(strstr(out, "  #1: " TOP1 "\n  #2: " EVEN "\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n  TP "));
	ck_assert_ptr_nonnull(strstr(out, "\n* micro-batch (seqs) "));
	ck_assert_ptr_nonnull(strstr(out, "\n* schedule "));
	ck_assert_ptr_nonnull(strstr(out, "\n  recompute "));
	t = line_of(out, "\n* iteration s ");
	ck_assert_int_eq(sscanf(t, "\n* iteration s %lf %lf", &it1, &it2), 2);
	ck_assert_int_eq(run_ampplan(DEMO " " TOP1_OPTS, &one, NULL), 0);
	{
		double w = 0;

		ck_assert_int_eq(sscanf(line_of(one, "\n  iteration "), "\n  iteration %lf", &w), 1);
		ck_assert_rel(it1, w, 1e-4);
	}
	free(one);
	ck_assert(it2 > it1);
	t = line_of(out, "\n* fits ");
	ck_assert_int_eq(sscanf(strstr(t, "no: "), "no: rank %d over by %lf GiB", &r, &over), 2);
	/* rank r's line in #2's per-rank table */
	t = line_of(out, "\n#2\n");
	{
		char pre[32];
		const char *l;

		snprintf(pre, sizeof pre, "\n    %4d ", r);
		l = line_of(t, pre);
		l = strchr(l + 1, '/');
		while (l[-1] != ' ')
			l--;
		ck_assert_int_eq(sscanf(l, "%lf/%lf", &used, &cap), 2);
		ck_assert_rel(cap, 40, 0);
		ck_assert_rel(over, used - cap, 0.1);
	}
	ck_assert_ptr_nonnull(strstr(out, "\n#2 does not fit: "));
	ck_assert_ptr_nonnull(strstr(err, "does not fit"));
	free(out);
	free(err);
}
END_TEST

/* A what-if that fits but that the trainer cannot run (DeepSpeed's
 * pipeline engine has no interleaved schedule) prints its row, breakdown
 * and per-rank table, then the trainer's reason, and exits 1. */
START_TEST(what_if_the_trainer_refuses)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan(DEMO " --tp 8 --pp 4 --dp 2 --cp 1 --mbs 1 --trainer deepspeed --schedule interleaved --vp 2",
				     &out, &err),
			 1);
	ck_assert_ptr_nonnull(strstr(out, "\n   1   8   4    2   1   1   1  256 interleaved/v2 "));
	ck_assert_ptr_nonnull(strstr(out, "\n  iteration "));
	ck_assert_ptr_nonnull(strstr(out, "\n  per pipeline rank: "));
	ck_assert_ptr_nonnull(strstr(out, "\nthe trainer cannot run it: deepspeed: "));
	ck_assert_str_eq(err, "ampplan: error: deepspeed: no interleaved pipeline (vp 2): the pipeline engine runs one stage per rank\n");
	free(out);
	free(err);
}
END_TEST

static Suite *stages_suite(void)
{
	Suite *s = suite_create("stages");
	TCase *tc = tcase_create("stages");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, json_stages_agree_with_the_row);
	tcase_add_test(tc, fullest_is_not_the_most_gib);
	tcase_add_test(tc, table_shows_the_fullest_gpu);
	tcase_add_test(tc, explain_has_a_line_per_rank);
	tcase_add_test(tc, headroom_reserves_memory);
	tcase_add_loop_test(tc, bad_option_values, 0, sizeof bad_options / sizeof *bad_options);
	tcase_add_test(tc, ep_is_fixed);
	tcase_add_test(tc, compare_two_strategies);
	tcase_add_test(tc, what_if_the_trainer_refuses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(stages_suite());
}
