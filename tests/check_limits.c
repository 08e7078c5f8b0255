/* check_limits.c: the input limits of the JSON loaders (size, nesting, keys
 * per object, values per file, duplicate keys in n log n, UTF-8, FIFOs and
 * devices) and the bad-input corpus (subnormal numbers and rope scaling
 * among them): every file of tests/data/bad is listed in
 * tests/data/bad/EXPECTED with the exit status of ampplan on it and a
 * fragment of its one-line error, checked through the loader and the CLI. */
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_read.h"
#include "json.h"
#include "model.h"
#include "profile.h"
#include "testutil.h"
#include "util.h"

#define EXPECTED    "tests/data/bad/EXPECTED"
#define MAX_ENTRIES 1000

static struct entry {
	char file[128];
	int status;
	char want[400];
} entries[MAX_ENTRIES];
static int n_entries;

/* Reads EXPECTED: "file<TAB>status<TAB>fragment" lines, '#' comments. */
static void read_expected(void)
{
	FILE *f = fopen(EXPECTED, "r");
	char line[1024];

	if (!f) {
		perror(EXPECTED);
		exit(1);
	}
	while (fgets(line, sizeof line, f)) {
		struct entry *x = &entries[n_entries];
		char *tab1, *tab2;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		tab1 = strchr(line, '\t');
		tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (!tab2 || n_entries == MAX_ENTRIES) {
			fprintf(stderr, "%s: bad line '%s'\n", EXPECTED, line);
			exit(1);
		}
		*tab1 = *tab2 = '\0';
		snprintf(x->file, sizeof x->file, "%.127s", line);
		x->status = atoi(tab1 + 1);
		snprintf(x->want, sizeof x->want, "%.399s", tab2 + 1);
		n_entries++;
	}
	fclose(f);
}

/* The loader fails on each file with a message that starts with its path
 * and holds the fragment. One test for every file (each message names
 * it): a test each forked the process 300 times, a third of this suite's
 * time under the sanitizers. */
START_TEST(test_corpus_loader)
{
	for (int i = 0; i < n_entries; i++) {
		const struct entry *x = &entries[i];
		char path[256];
		struct err e = { "" };
		int rc;

		snprintf(path, sizeof path, "tests/data/bad/%.127s", x->file);
		if (strncmp(x->file, "cluster-", 8) == 0) {
			struct cluster *c = (struct cluster *)&c;

			rc = cluster_load(&c, path, &e);
			ck_assert_msg(!c, "%s: a cluster returned", x->file);
		} else {
			struct model *m = (struct model *)&m;

			ck_assert_msg(strncmp(x->file, "model-", 6) == 0, "%s: name", x->file);
			rc = model_load(&m, path, &e);
			ck_assert_msg(!m, "%s: a model returned", x->file);
		}
		ck_assert_msg(rc == -1, "%s: returned %d", x->file, rc);
		ck_assert_msg(strncmp(e.msg, path, strlen(path)) == 0,
			      "'%s' does not start with the file name", e.msg);
		ck_assert_msg(strstr(e.msg, x->want), "'%s' lacks '%s'", e.msg, x->want);
	}
}
END_TEST

/* ampplan exits with the listed status on each file, one line on stderr
 * starting "ampplan: error: ", naming the file and holding the fragment,
 * no control character in it, nothing on stdout, no CSV written. Every
 * fourth file under the sanitizers' quarter (test_seeds: each run is
 * mostly ASan's start; test_corpus_loader reads every file under them). */
START_TEST(test_corpus_cli)
{
	int step = test_seeds(4) < 4 ? 4 : 1;

	remove(TEST_DIR "/bad.csv");
	for (int i = 0; i < n_entries; i += step) {
		const struct entry *x = &entries[i];
		char args[512], path[256], *out, *err;
		bool cluster = strncmp(x->file, "cluster-", 8) == 0;

		snprintf(path, sizeof path, "tests/data/bad/%.127s", x->file);
		snprintf(args, sizeof args, cluster ? "--model profiles/llama70b.json --cluster %s --csv " TEST_DIR "/bad.csv" : "--model %s --cluster clusters/mixed.json --csv " TEST_DIR "/bad.csv", path);
		ck_assert_msg(run_ampplan(args, &out, &err) == x->status, "%s: %s", x->file, err);
		ck_assert_msg(strncmp(err, "ampplan: error: ", 16) == 0, "%s: stderr: %s", x->file, err);
		ck_assert_msg(strstr(err, path), "%s not named in: %s", path, err);
		ck_assert_msg(strstr(err, x->want), "%s: '%s' lacks '%s'", x->file, err, x->want);
		ck_assert_msg(!out[0], "%s: stdout: %s", x->file, out);
		ck_assert_msg(access(TEST_DIR "/bad.csv", F_OK) != 0, "%s: a CSV written", x->file);
		ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "%s: %s", x->file, err);
		for (const char *p = err; *p; p++)
			ck_assert_msg(*p == '\n' || (unsigned char)*p >= 0x20,
				      "%s: control character in '%s'", x->file, err);
		free(out);
		free(err);
	}
}
END_TEST

/* Every file of tests/data/bad is in EXPECTED, once, and there are at least
 * 150. */
START_TEST(test_corpus_complete)
{
	glob_t g;

	ck_assert_int_eq(glob("tests/data/bad/*", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *base = strrchr(g.gl_pathv[i], '/') + 1;
		int found = 0;

		if (strcmp(base, "EXPECTED") == 0)
			continue;
		for (int j = 0; j < n_entries; j++)
			found += strcmp(entries[j].file, base) == 0;
		ck_assert_msg(found == 1, "%s listed %d times in " EXPECTED,
			      base, found);
	}
	ck_assert_int_eq((int)g.gl_pathc - 1, n_entries);
	ck_assert_int_ge(n_entries, 150);
	globfree(&g);
}
END_TEST

/* A device that never ends stops at the size limit. */
START_TEST(test_dev_zero)
{
	struct model *m = NULL;
	struct err e = { "" };
	char *err;

	ck_assert_int_eq(model_load(&m, "/dev/zero", &e), -1);
	ck_assert_str_eq(e.msg, "/dev/zero: larger than 64 MiB");
	ck_assert_int_eq(run_ampplan("--model /dev/zero --cluster clusters/mixed.json",
				     NULL, &err),
			 1);
	ck_assert_str_eq(err, "ampplan: error: /dev/zero: larger than 64 MiB\n");
	free(err);
}
END_TEST

/* A regular file over the limit fails before it is read (a sparse file). */
START_TEST(test_big_file)
{
	char path[] = "/tmp/check_limits-XXXXXX";
	int fd = mkstemp(path);
	struct cluster *c = NULL;
	struct err e = { "" }, want;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, JSON_MAX_BYTES + 1), 0);
	close(fd);
	ck_assert_int_eq(cluster_load(&c, path, &e), -1);
	snprintf(want.msg, sizeof want.msg, "%s: larger than 64 MiB", path);
	ck_assert_str_eq(e.msg, want.msg);
	remove(path);
}
END_TEST

/* A FIFO with no writer fails after JSON_FIFO_WAIT_S instead of hanging. */
START_TEST(test_fifo_no_writer)
{
	char dir[] = "/tmp/check_limits-XXXXXX", path[64], want[128];
	struct model *m = NULL;
	struct err e = { "" };
	time_t t0 = time(NULL);

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(model_load(&m, path, &e), -1);
	snprintf(want, sizeof want, "%s: no data after %d s (a FIFO with no "
				    "writer?)",
		 path, JSON_FIFO_WAIT_S);
	ck_assert_str_eq(e.msg, want);
	ck_assert_int_le(time(NULL) - t0, JSON_FIFO_WAIT_S + 2);
	remove(path);
	rmdir(dir);
}
END_TEST

/* A named FIFO with a writer is read whole. */
START_TEST(test_fifo_writer)
{
	char dir[] = "/tmp/check_limits-XXXXXX", path[64];
	char *text = read_file("tests/data/tiny-2-layers.json");
	struct model *m = NULL;
	struct err e = { "" };
	pid_t pid;
	int st;

	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY); /* blocks until the reader opens */
		size_t n = strlen(text);

		_exit(fd >= 0 && write(fd, text, n) == (ssize_t)n ? 0 : 1);
	}
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(m->name, "tiny-2-layers");
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	model_free(m);
	free(text);
	remove(path);
	rmdir(dir);
}
END_TEST

/* A pipe with a writer is read whole, like a file. */
START_TEST(test_pipe)
{
	int fds[2];
	char *text = read_file("tests/data/tiny-2-layers.json"), path[64];
	struct model *m = NULL;
	struct err e = { "" };

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], text, strlen(text)), (long)strlen(text));
	close(fds[1]);
	snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
	ck_assert_msg(model_load(&m, path, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(m->name, "tiny-2-layers");
	model_free(m);
	close(fds[0]);
	free(text);
}
END_TEST

/* Writes a profile-like object with n distinct keys (plus a duplicate of key
 * dup when dup >= 0) to a temporary file; returns its malloc'd path. */
static char *many_keys(int n, int dup)
{
	char *path = xstrdup("/tmp/check_limits-XXXXXX");
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("{\"a\": {", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\"key%d\": %d", i ? ", " : "", i, i);
	if (dup >= 0)
		fprintf(f, ", \"key%d\": 0", dup);
	fputs("}}\n", f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

/* Writes "[0,0,...,0]" with n zeros to a temporary file; returns its
 * malloc'd path. */
static char *zeros(long n)
{
	char *path = xstrdup("/tmp/check_limits-XXXXXX");
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputc('[', f);
	for (long i = 0; i < n; i++)
		fputs(i ? ",0" : "0", f);
	fputc(']', f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

/* A file of 64 MiB less a byte, the array "[0,0,...]" with 33 million
 * zeros (each 80 bytes as a cJSON node: 2.56 GiB and 15.6 s before), fails
 * before it is parsed, at the comma that makes the 1,000,001st value
 * (the array and 999,999 zeros before it: column 2 + 2 x 999,998 + 1),
 * with at most the file's buffer and a little more in memory (this test
 * runs in a forked process); the array with 999,999 zeros (1,000,000
 * values) passes the limit and fails on its content. */
#ifdef __SANITIZE_ADDRESS__
#define MANY_VALUES_PEAK_KIB (400 * 1024) /* ASan's shadow memory and redzones */
#else
#define MANY_VALUES_PEAK_KIB (200 * 1024)
#endif
START_TEST(test_many_values)
{
	long n = (JSON_MAX_BYTES - 2) / 2;
	char *big = zeros(n), *edge = zeros(JSON_MAX_VALUES - 1),
	     *over = zeros(JSON_MAX_VALUES);
	struct cluster *c = NULL;
	struct err e = { "" };
	struct rusage ru;
	struct stat st;

	ck_assert_int_eq(stat(big, &st), 0);
	ck_assert_int_eq(st.st_size, JSON_MAX_BYTES - 1);
	ck_assert_int_eq(cluster_load(&c, big, &e), -1);
	ck_assert_msg(strstr(e.msg, ": more than 1000000 values (numbers, strings, arrays and objects) at 1:1999999"),
		      "%s", e.msg);
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	ck_assert_msg(ru.ru_maxrss < MANY_VALUES_PEAK_KIB, "peak %ld KiB", ru.ru_maxrss);
	ck_assert_int_eq(cluster_load(&c, over, &e), -1);
	ck_assert_msg(strstr(e.msg, "at 1:1999999"), "%s", e.msg);
	ck_assert_int_eq(cluster_load(&c, edge, &e), -1);
	ck_assert_msg(!strstr(e.msg, "values"), "%s", e.msg);
	remove(big);
	remove(edge);
	remove(over);
	free(big);
	free(edge);
	free(over);
}
END_TEST

/* 200,000 keys (quadratic before: minutes) fail at once on the key limit;
 * 10,000 keys with a duplicate last, the worst case for the old check, in
 * well under a second. */
START_TEST(test_many_keys_fast)
{
	char *big = many_keys(200000, -1), *dup = many_keys(JSON_MAX_KEYS - 1, 7);
	struct cluster *c = NULL;
	struct err e = { "" };
	clock_t t0 = clock();

	ck_assert_int_eq(cluster_load(&c, big, &e), -1);
	ck_assert_msg(strstr(e.msg, ": object 'a' has more than 10000 keys"), "%s", e.msg);
	ck_assert_int_eq(cluster_load(&c, dup, &e), -1);
	ck_assert_msg(strstr(e.msg, ": duplicate key 'key7' in 'a'"), "%s", e.msg);
	ck_assert_msg(clock() - t0 < 2 * CLOCKS_PER_SEC, "took %g s",
		      (double)(clock() - t0) / CLOCKS_PER_SEC);
	remove(big);
	remove(dup);
	free(big);
	free(dup);
}
END_TEST

/* Exactly JSON_MAX_DEPTH levels are fine (the file is then rejected for
 * its field, not its depth); one more is not. */
START_TEST(test_depth_edge)
{
	char path[] = "/tmp/check_limits-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	struct model *m = NULL;
	struct err e = { "" };

	fputs("{\"note\": ", f);
	for (int i = 0; i < JSON_MAX_DEPTH - 1; i++)
		fputc('[', f);
	for (int i = 0; i < JSON_MAX_DEPTH - 1; i++)
		fputc(']', f);
	fputs("}\n", f);
	fclose(f);
	ck_assert_int_eq(model_load(&m, path, &e), -1);
	ck_assert_msg(strstr(e.msg, "field 'note' must") ||
			      strstr(e.msg, "missing field"),
		      "%s", e.msg);
	f = fopen(path, "w");
	fputs("{\"note\":\n ", f);
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		fputc('[', f);
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		fputc(']', f);
	fputs("}\n", f);
	fclose(f);
	ck_assert_int_eq(model_load(&m, path, &e), -1);
	/* the root '{' is level 1; the 64th '[' is level 65, on line 2 at
	 * column 2 + 63 = 65 */
	ck_assert_msg(strstr(e.msg, ": nesting deeper than 64 at 2:65"), "%s", e.msg);
	remove(path);
}
END_TEST

/* An HF config named after its file: the name must be clean UTF-8 too. */
START_TEST(test_hf_file_name)
{
	char dir[] = "/tmp/check_limits-XXXXXX", path[64];
	char *text = read_file("tests/data/hf/gpt2.json");
	struct model *m = NULL;
	struct err e = { "" };
	FILE *f;

	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/gpt\xff"
				    "2.json",
		 dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(model_load(&m, path, &e), -1);
	ck_assert_msg(strstr(e.msg, ": the file name is not valid UTF-8"), "%s", e.msg);
	remove(path);
	rmdir(dir);
	free(text);
}
END_TEST

START_TEST(test_utf8_check)
{
	static const struct {
		const char *s;
		long want;
	} cases[] = {
		{ "plain", 0 },
		{ "caf\xc3\xa9", 0 },
		{ "\xe2\x82\xac", 0 },
		{ "\xf0\x9f\x98\x80", 0 },
		{ "\xf4\x8f\xbf\xbf", 0 },
		{ "\xc3", 1 },
		{ "\xc0\x80", 1 },
		{ "\xe0\x9f\xbf", 1 },
		{ "\xf0\x8f\xbf\xbf", 1 },
		{ "\xed\xa0\x80", 1 },
		{ "\xf4\x90\x80\x80", 1 },
		{ "\xff", 1 },
		{ "\x80", 1 },
		{ "\xe2\x28\xa1", 1 },
		{ "a\nb", 2 + 0x0a },
		{ "\x7f", 2 + 0x7f },
		{ "\xc2\x9f", 2 + 0x9f },
		{ "\xc2\xa0", 0 },
		{ "\t", 2 + 9 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(json_utf8_check(cases[i].s, strlen(cases[i].s)) ==
				      cases[i].want,
			      "case %zu", i);
}
END_TEST

static Suite *limits_suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("limits");

	read_expected();
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_corpus_loader);
	tcase_add_test(tc, test_corpus_cli);
	tcase_add_test(tc, test_corpus_complete);
	tcase_add_test(tc, test_dev_zero);
	tcase_add_test(tc, test_big_file);
	tcase_add_test(tc, test_fifo_no_writer);
	tcase_add_test(tc, test_fifo_writer);
	tcase_add_test(tc, test_pipe);
	tcase_add_test(tc, test_many_keys_fast);
	tcase_add_test(tc, test_many_values);
	tcase_add_test(tc, test_depth_edge);
	tcase_add_test(tc, test_hf_file_name);
	tcase_add_test(tc, test_utf8_check);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(limits_suite());
}
