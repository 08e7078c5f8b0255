/* testutil.h: helpers shared by the Check suites. */
#ifndef AMPPLAN_TESTUTIL_H
#define AMPPLAN_TESTUTIL_H

#include <check.h>
#include <math.h>

/* Asserts |got - want| <= rel * |want| (or <= rel when want is 0). */
#define ck_assert_rel(got, want, rel)                                          \
	do {                                                                   \
		double g_ = (got), w_ = (want);                                \
		double tol_ = (rel) * (w_ != 0 ? fabs(w_) : 1.0);              \
		ck_assert_msg(fabs(g_ - w_) <= tol_,                           \
			      "%s = %.10g, want %.10g (rel %g)", #got, g_, w_, \
			      (double)(rel));                                  \
	} while (0)

/* Runs `ampplan ARGS` (the binary built beside the tests) with stdout and
 * stderr captured. Returns the exit status; *out and *err are malloc'd
 * NUL-terminated strings (caller frees; either may be NULL to discard). */
int run_ampplan(const char *args, char **out, char **err);

struct cJSON;

/* The JSON `ampplan args` writes (args end in --json -; it must exit 0),
 * parsed; the caller cJSON_Deletes it. */
struct cJSON *json_of(const char *args);

/* Field key of JSON object o, which must have it. */
const struct cJSON *field(const struct cJSON *o, const char *key);

/* The number of newlines in s. */
int count_lines(const char *s);

/* The whole file at path as a malloc'd NUL-terminated string (caller
 * frees), or NULL if it cannot be opened. */
char *read_file(const char *path);

struct model;

/* A small Llama-style model (hidden 1024, 8 heads of 128, SwiGLU FFN 4096,
 * vocabulary 32000, sequence 2048, bf16) of blocks transformer blocks and a
 * global batch of gbs sequences, its layers derived; caller frees with
 * model_free. */
struct model *test_small_model(int blocks, int gbs);

/* The seeds a property test runs out of its n: n, or n / k (at least 1)
 * where the environment sets AMPPLAN_TEST_SEEDS_DIV=k (a positive integer;
 * `make check`'s sanitizer pass sets 4: the same properties on the first
 * quarter of the instances, ASan and UBSan running the search 3 to 5 times
 * slower). */
unsigned test_seeds(unsigned n);

/* A count the test expects of n seeds, scaled to the test_seeds(n) run:
 * k x test_seeds(n) / n. */
int test_scaled(int k, unsigned n);

/* Runs the suite in a runner and returns the process exit status. */
int run_suite(Suite *s);

#endif
