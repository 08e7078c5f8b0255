/* testutil.c: helpers shared by the Check suites. */
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
