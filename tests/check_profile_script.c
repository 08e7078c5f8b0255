/* check_profile_script.c: scripts/profile_layers.py times the tiny model on
 * the CPU with PyTorch (Debian's python3-torch; `make check` installs it) and
 * the measured points it writes replace the analytic compute times. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compute.h"
#include "json.h"
#include "testutil.h"
#include "util.h"

#define PYTHON	 "/usr/bin/python3"
#define SCRIPT	 PYTHON " scripts/profile_layers.py --ampplan " AMPPLAN_BIN
#define MEASURED TEST_DIR "/tiny-measured.json"
#define LOG	 TEST_DIR "/tiny-measured.log"
#define DOUBLED	 TEST_DIR "/tiny-doubled.json"
#define CLUSTER	 TEST_DIR "/cpu-test.json"
#define PLAN	 TEST_DIR "/cpu-test-plan.json"
#define HBM_GBPS 100.0

/* Set once by measure() in the parent; the forked tests inherit them. */
static int torch_ok, script_rc = -1;

static int shell(const char *cmd)
{
	int st = system(cmd);

	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Unchecked fixture: runs the script once for the whole suite. */
static void measure(void)
{
	remove(MEASURED);
	torch_ok = shell(PYTHON " -c 'import torch' >/dev/null 2>&1") == 0;
	if (torch_ok)
		script_rc = shell(SCRIPT " --model tests/data/tiny-2-layers.json"
					 " --device cpu --gpu cpu-test --mbs 1,2 --repeat 2"
					 " --out " MEASURED " 2>" LOG);
}

static void need_measured(void)
{
	ck_assert_msg(torch_ok, "%s cannot import torch: install python3-torch "
				"(make test-deps)",
		      PYTHON);
	ck_assert_msg(script_rc == 0, "profile_layers.py exited %d; see %s",
		      script_rc, LOG);
}

static cJSON *load(const char *path)
{
	struct err e = { "" };
	cJSON *doc = json_load(path, &e);

	ck_assert_msg(doc, "%s", e.msg);
	return doc;
}

/* The number member key of o. */
static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "no number '%s'", key);
	return v->valuedouble;
}

static int repeat(const cJSON *entry)
{
	return cJSON_GetObjectItemCaseSensitive(entry, "repeat") ? (int)num(entry, "repeat") : 1;
}

/* Over the layers of a profile: the sum of forward + backward seconds of
 * the measured points at micro-batch size mbs, and the parameters. */
static double measured_sum(const cJSON *prof, int mbs, double *params)
{
	const cJSON *entry, *p;
	double sum = 0;

	*params = 0;
	cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(prof, "layers"))
	{
		int found = 0;

		*params += repeat(entry) * num(entry, "params");
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(entry, "measured")) if (num(p, "micro_batch_size") == mbs)
		{
			sum += repeat(entry) * (num(p, "forward_s") + num(p, "backward_s"));
			found++;
		}
		ck_assert_int_eq(found, 1);
	}
	return sum;
}

START_TEST(torch_is_installed)
{
	ck_assert_msg(torch_ok, "%s cannot import torch: install python3-torch "
				"(make test-deps, or apt-get install python3-torch)",
		      PYTHON);
}
END_TEST

/* ampplan reads the written profile back: every layer entry (embedding,
 * the blocks as one "repeat" entry, head) has 2 points for cpu-test. */
START_TEST(profile_has_points)
{
	static const char *const kinds[] = { "embedding", "block", "head" };
	char *out;
	cJSON *doc, *entry, *p;
	int i = 0;

	need_measured();
	ck_assert_int_eq(run_ampplan("profile --model " MEASURED, &out, NULL), 0);
	doc = cJSON_Parse(out);
	ck_assert_ptr_nonnull(doc);
	cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
	{
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(entry, "measured");
		int mbs_seen = 0;

		ck_assert_int_lt(i, 3);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(entry, "kind")->valuestring,
				 kinds[i++]);
		ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
		cJSON_ArrayForEach(p, arr)
		{
			ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "gpu")->valuestring,
					 "cpu-test");
			ck_assert_double_eq(num(p, "tp"), 1);
			ck_assert_double_eq(num(p, "seq_length"), 128);
			mbs_seen |= 1 << (int)num(p, "micro_batch_size");
			ck_assert_double_gt(num(p, "forward_s"), 0);
			ck_assert_double_gt(num(p, "backward_s"), 0);
		}
		ck_assert_int_eq(mbs_seen, (1 << 1) | (1 << 2));
	}
	ck_assert_int_eq(i, 3);
	entry = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "layers"), 1);
	ck_assert_int_eq(repeat(entry), 2);
	cJSON_Delete(doc);
	free(out);
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Evaluates one strategy (TP = PP = DP = CP = 1, one micro-batch of mbs) of
 * model on the one-GPU cluster; returns strategy #1's member key. */
static double what_if(const char *model, int mbs, const char *key)
{
	char args[512], *err;
	cJSON *doc;
	double v;

	snprintf(args, sizeof args, "--model %s --cluster " CLUSTER " --tp 1 --pp 1"
				    " --dp 1 --cp 1 --mbs %d --gbs %d --json " PLAN,
		 model, mbs, mbs);
	ck_assert_msg(run_ampplan(args, NULL, &err) == 0, "ampplan %s: %s", args, err);
	free(err);
	doc = load(PLAN);
	v = num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "strategies"), 0), key);
	cJSON_Delete(doc);
	return v;
}

/* With one GPU, one micro-batch and no parallelism, the iteration is the
 * layers' forward + backward seconds (the measured points for mbs: no
 * bubble, no communication) plus the Adam step over all parameters,
 * params * COMPUTE_ADAM_BYTES / hbm_bw. Doubling the measured times moves
 * the iteration time accordingly. */
START_TEST(measured_times_drive_cost)
{
	cJSON *doc, *entry, *p;
	double params, opt, sum1, sum2;
	char *text, cluster[1024];

	need_measured();
	snprintf(cluster, sizeof cluster,
		 "{\"name\": \"one cpu-test\", \"gpu_types\": {\"cpu-test\": "
		 "{\"peak_bf16_tflops\": 1, \"memory_GiB\": 16, \"hbm_GBps\": %g, "
		 "\"efficiency_max\": 0.5}}, \"groups\": [{\"name\": \"cpu\", "
		 "\"nodes\": 1, \"gpus_per_node\": 1, \"gpu\": \"cpu-test\", "
		 "\"intra_node_GBps\": 16, \"intra_node_latency_us\": 2, "
		 "\"inter_node_Gbps\": 50, \"inter_node_latency_us\": 15}]}\n",
		 HBM_GBPS);
	write_file(CLUSTER, cluster);
	doc = load(MEASURED);
	sum1 = measured_sum(doc, 1, &params);
	sum2 = measured_sum(doc, 2, &params);
	opt = params * COMPUTE_ADAM_BYTES / (HBM_GBPS * 1e9);
	ck_assert_rel(what_if(MEASURED, 1, "compute_s"), sum1, 1e-3);
	ck_assert_rel(what_if(MEASURED, 1, "optimizer_s"), opt, 1e-3);
	ck_assert_rel(what_if(MEASURED, 1, "iteration_s"), sum1 + opt, 1e-3);
	ck_assert_rel(what_if(MEASURED, 2, "iteration_s"), sum2 + opt, 1e-3);

	cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(entry, "measured"))
	{
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "forward_s"),
				     2 * num(p, "forward_s"));
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "backward_s"),
				     2 * num(p, "backward_s"));
	}
	text = cJSON_Print(doc);
	write_file(DOUBLED, text);
	cJSON_free(text);
	cJSON_Delete(doc);
	ck_assert_rel(what_if(DOUBLED, 1, "iteration_s"), 2 * sum1 + opt, 1e-3);
}
END_TEST

/* Bad arguments fail with one clear message and exit 1, before any timing,
 * and leave no output file. */
static const char *const bad_args[] = {
	"--out " TEST_DIR "/bad-profile.json",		 /* no --model */
	"--model tests/data/tiny-2-layers.json", /* no --out */
	"--model tests/data/tiny-2-layers.json --out " TEST_DIR "/bad-profile.json --mbs 1,0",
	"--model tests/data/tiny-2-layers.json --out " TEST_DIR "/bad-profile.json --mbs x",
	"--model tests/data/tiny-2-layers.json --out " TEST_DIR "/bad-profile.json --repeat -2",
	"--model tests/data/tiny-2-layers.json --out " TEST_DIR "/bad-profile.json --device tpu",
	"--model tests/data/tiny-2-layers.json --out " TEST_DIR "/bad-profile.json --tp 3",
	"--model tests/data/tiny-2-layers.json --out " TEST_DIR "/bad-profile.json --gpu ''",
	"--model no/such.json --out " TEST_DIR "/bad-profile.json",
	"--model tests/data/tiny-2-layers.json --out no/such/dir/p.json",
};

START_TEST(bad_args_exit_1)
{
	char cmd[1024], path[] = "/tmp/ampplan-py-err-XXXXXX", err[4096];
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	ck_assert_int_ge(fd, 0);
	remove(TEST_DIR "/bad-profile.json");
	snprintf(cmd, sizeof cmd, SCRIPT " %s >/dev/null 2>%s", bad_args[_i], path);
	ck_assert_int_eq(shell(cmd), 1);
	f = fdopen(fd, "r");
	n = fread(err, 1, sizeof err - 1, f);
	err[n] = '\0';
	fclose(f);
	remove(path);
	ck_assert_msg(strstr(err, "profile_layers.py: error: ") &&
			      strchr(strstr(err, "profile_layers.py: error: "), '\n') == err + n - 1,
		      "%s: stderr: %s", bad_args[_i], err);
	ck_assert_msg(access(TEST_DIR "/bad-profile.json", F_OK) != 0, "%s wrote a file",
		      bad_args[_i]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("profile_script");
	TCase *tc = tcase_create("measure");

	tcase_add_unchecked_fixture(tc, measure, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, torch_is_installed);
	tcase_add_test(tc, profile_has_points);
	tcase_add_test(tc, measured_times_drive_cost);
	tcase_add_loop_test(tc, bad_args_exit_1, 0, sizeof bad_args / sizeof *bad_args);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
