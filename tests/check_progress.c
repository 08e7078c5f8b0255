/* check_progress.c: progress lines (output/progress.c, issue 27 item 7):
 * at most one every PROGRESS_EVERY_S seconds, the share never going back
 * although the search's threads report out of order; a job that ended
 * starts again from 0. The clock is passed in: no test waits. */
#include <stdbool.h>

#include "progress.h"
#include "testutil.h"

/* 10%, 87%, then 71% (a thread behind the others) and 95%: lines at 6 s
 * and 12 s only, showing 87% and then 87% again (not 71%); 2 s after a
 * line, none. Before (issue 27): the line read 71% after 87%. */
START_TEST(lines_monotone_every_5_s)
{
	struct progress pr;
	double shown = -1;

	progress_init(&pr, "searching", NULL, false);
	ck_assert(!progress_due(&pr, 0.10, 100.0, &shown)); /* starts the job */
	ck_assert(progress_due(&pr, 0.87, 106.0, &shown));
	ck_assert_double_eq(shown, 0.87);
	ck_assert(!progress_due(&pr, 0.90, 108.0, &shown)); /* 2 s after the line */
	ck_assert(progress_due(&pr, 0.71, 112.0, &shown));
	ck_assert_double_eq(shown, 0.90);
	ck_assert(!progress_due(&pr, 0.95, 116.9, &shown)); /* 4.9 s */
	ck_assert(progress_due(&pr, 0.60, 117.0, &shown));
	ck_assert_double_eq(shown, 0.95);
	/* the end: no line, and the next job starts from 0 */
	ck_assert(!progress_due(&pr, 1.0, 130.0, &shown));
	ck_assert(!progress_due(&pr, 0.05, 131.0, &shown));
	ck_assert_double_eq(shown, 0.05);
	ck_assert(progress_due(&pr, 0.30, 136.0, &shown));
	ck_assert_double_eq(shown, 0.30);
}
END_TEST

/* The label escapes a path's control characters. */
START_TEST(label_escaped)
{
	struct progress pr;

	progress_init(&pr, "writing", "a\nb\033[2J.json", false);
	ck_assert_str_eq(pr.what, "writing 'a\\nb\\x1b[2J.json'");
}
END_TEST

/* A bar is redrawn on every report after half a second, not before. */
START_TEST(bar_after_half_a_second)
{
	struct progress pr;
	double shown;

	progress_init(&pr, "searching", NULL, true);
	ck_assert(!progress_due(&pr, 0.1, 10.0, &shown));
	ck_assert(!progress_due(&pr, 0.2, 10.4, &shown));
	ck_assert(progress_due(&pr, 0.3, 10.6, &shown));
	ck_assert(progress_due(&pr, 0.1, 10.7, &shown));
	ck_assert_double_eq(shown, 0.3);
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");

	tcase_add_test(tc, lines_monotone_every_5_s);
	tcase_add_test(tc, label_escaped);
	tcase_add_test(tc, bar_after_half_a_second);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(progress_suite());
}
