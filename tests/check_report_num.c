/* check_report_num.c: report_g6, the CSV's and JSON's "%.6g" (issue 27
 * item 1: the CSV and JSON of 500,000 rows spent half their time in
 * printf), against the C library's printf on values chosen to be hard (ties,
 * powers of ten, the fixed/exponent switch) and on 900,000 random ones. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report_columns.h"
#include "testutil.h"

static void same_as_printf(double v)
{
	char got[REPORT_FIELD_MAX], want[64];

	report_g6(got, v);
	snprintf(want, sizeof want, "%.6g", v);
	ck_assert_msg(strcmp(got, want) == 0, "%.17g: got '%s', printf '%s'", v, got, want);
}

START_TEST(edges)
{
	const double v[] = { 0.0, -0.0, 1, -1, 10, 1e5, 999999, 1e6, 999999.5, 9999995, 0.0001,
			     0.00001, 0.000123456789, 123456.5, 123457.5, 1.5, 2.5, 0.1, 0.3,
			     1e-300, 5e-324, 1.7976931348623157e308, 1e22, 1e23, 1e-22, 1e-23,
			     99999.95, 9.9999949999, 9.99999500001, 0.000999999, 0.00099999951,
			     123.456, 85.47, 103.0, 1.0 / 3, 2.0 / 3, 1e15, 123456789012.0,
			     INFINITY, -INFINITY, NAN };

	for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
		same_as_printf(v[i]);
		same_as_printf(-v[i]);
	}
	for (int e = -30; e <= 30; e++) {
		same_as_printf(pow(10, e));
		same_as_printf(nextafter(pow(10, e), 0));
		same_as_printf(nextafter(pow(10, e), INFINITY));
		same_as_printf(0.9999995 * pow(10, e));
	}
}
END_TEST

/* 300,000 doubles of random bits (xorshift64, fixed seed), and 600,000
 * spread over the magnitudes the columns hold (1e-9 to 1e12). */
START_TEST(random_values)
{
	uint64_t x = 88172645463325252ull;

	for (unsigned i = 0; i < test_seeds(300000); i++) {
		double v, u;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(&v, &x, sizeof v);
		same_as_printf(v);
		u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
		same_as_printf(pow(10, -9 + 21 * u));
		same_as_printf(round(pow(10, 7 * u) * 100) / 100); /* cents */
	}
}
END_TEST

static Suite *num_suite(void)
{
	Suite *s = suite_create("report_num");
	TCase *tc = tcase_create("g6");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, edges);
	tcase_add_test(tc, random_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(num_suite());
}
