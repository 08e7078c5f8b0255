/* check_options.c: the options that `ampplan --help` lists (generated from
 * the option table, planner/options.h), that ampplan.1 documents under
 * OPTIONS and that README.md's Usage table names are the same set, each one
 * known to the parser; the keys a --compare spec takes are the strategy
 * options its error message lists. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "util.h"

/* Files and paths that parse_args never opens (it stops at a bad option). */
#define NO_FILES "--model no/such.json --cluster clusters/mixed.json"
#define SPEC	 "tp=8,pp=4,dp=2,cp=1,mbs=1"

enum { MAX_NAMES = 128,
       NAME_LEN = 40 };

/* A set of option names without the leading "--", sorted by names_sort. */
struct names {
	int n;
	char v[MAX_NAMES][NAME_LEN];
};

/* Appends the len bytes at s to ns. */
static void names_add(struct names *ns, const char *s, size_t len)
{
	ck_assert_msg(len > 0 && len < NAME_LEN, "option name '%.*s' empty or too long", (int)len, s);
	ck_assert_int_lt(ns->n, MAX_NAMES);
	memcpy(ns->v[ns->n], s, len);
	ns->v[ns->n++][len] = '\0';
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Sorts ns and drops repeated names; returns how many were dropped. */
static int names_sort(struct names *ns)
{
	int k = 0, n = ns->n;

	qsort(ns->v, (size_t)ns->n, NAME_LEN, cmp_name);
	for (int i = 0; i < ns->n; i++)
		if (k == 0 || strcmp(ns->v[k - 1], ns->v[i]) != 0)
			memmove(ns->v[k++], ns->v[i], NAME_LEN);
	ns->n = k;
	return n - k;
}

static bool names_has(const struct names *ns, const char *name)
{
	return bsearch(name, ns->v, (size_t)ns->n, NAME_LEN, cmp_name) != NULL;
}

/* The length of the option name at s: letters, digits and '-'. */
static size_t name_len(const char *s)
{
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-");
}

/* The line after the one at l, or the end of the text. */
static const char *next_line(const char *l)
{
	const char *nl = strchr(l, '\n');

	return nl ? nl + 1 : l + strlen(l);
}

/* The options of `ampplan --help`: each line "  --NAME ...". */
static void help_names(struct names *ns)
{
	char *out, *err;

	ns->n = 0;
	ck_assert_int_eq(run_ampplan("--help", &out, &err), 0);
	ck_assert_str_eq(err, "");
	for (const char *l = out; *l; l = next_line(l))
		if (strncmp(l, "  --", 4) == 0)
			names_add(ns, l + 4, name_len(l + 4));
	free(out);
	free(err);
}

/* The options ampplan.1 has an entry for: the line after each .TP of the
 * OPTIONS section, ".B \-\-NAME", ".BI \-\-NAME " ARG"" or ".BR "\-\-NAME
 * on" | off" (roff's \- is '-'). */
static void man_names(struct names *ns)
{
	char *text = read_file("ampplan.1");
	bool in_options = false, after_tp = false;

	ns->n = 0;
	ck_assert_ptr_nonnull(text);
	for (const char *l = text; *l; l = next_line(l)) {
		char name[NAME_LEN];
		const char *p = l;
		size_t n = 0;

		if (strncmp(l, ".SH", 3) == 0)
			in_options = strncmp(l, ".SH OPTIONS\n", 12) == 0;
		if (!in_options || !after_tp) {
			after_tp = strncmp(l, ".TP", 3) == 0;
			continue;
		}
		after_tp = false;
		ck_assert_msg(strncmp(p, ".B", 2) == 0, "ampplan.1: no option after .TP: %.60s", l);
		p += strcspn(p, " \n");
		p += strspn(p, " \"");
		ck_assert_msg(strncmp(p, "\\-\\-", 4) == 0, "ampplan.1: no option after .TP: %.60s", l);
		for (p += 4; n + 1 < NAME_LEN; n++) {
			if (strncmp(p, "\\-", 2) == 0) {
				name[n] = '-';
				p += 2;
			} else if (name_len(p) > 0) {
				name[n] = *p++;
			} else {
				break;
			}
		}
		names_add(ns, name, n);
	}
	free(text);
}

/* The options README.md's Usage section lists in its "| option | meaning |"
 * table: every "--NAME" of a row's first cell (up to the first '|' that is
 * not "\|"). */
static void readme_names(struct names *ns)
{
	char *text = read_file("README.md");
	const char *usage, *l;

	ns->n = 0;
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(usage = strstr(text, "\n## Usage\n"));
	ck_assert_ptr_nonnull(l = strstr(usage, "\n| option | meaning |\n"));
	l = next_line(l + 1); /* the |---|---| line */
	ck_assert_msg(strncmp(l, "|---|", 5) == 0, "README.md: no |---| under the option table");
	for (l = next_line(l); *l == '|'; l = next_line(l)) {
		const char *end = l + 1;

		while (*end && *end != '\n' && (*end != '|' || end[-1] == '\\'))
			end++;
		ck_assert_msg(*end == '|', "README.md: an option table row of one cell: %.60s", l);
		for (const char *p = strstr(l, "--"); p && p < end; p = strstr(p + 2, "--"))
			if (name_len(p + 2) > 0)
				names_add(ns, p + 2, name_len(p + 2));
	}
	free(text);
}

/* Asserts that a (named what_a) and b (what_b) hold the same names; the
 * message lists each name one has and the other lacks. */
static void assert_same(const struct names *a, const char *what_a, const struct names *b,
			const char *what_b)
{
	char only_a[2048] = "", only_b[2048] = "";

	for (int i = 0; i < a->n; i++)
		if (!names_has(b, a->v[i]))
			snprintf(only_a + strlen(only_a), sizeof only_a - strlen(only_a), " --%s",
				 a->v[i]);
	for (int i = 0; i < b->n; i++)
		if (!names_has(a, b->v[i]))
			snprintf(only_b + strlen(only_b), sizeof only_b - strlen(only_b), " --%s",
				 b->v[i]);
	ck_assert_msg(!only_a[0] && !only_b[0], "only in %s:%s; only in %s:%s", what_a,
		      only_a[0] ? only_a : " none", what_b, only_b[0] ? only_b : " none");
}

/* --help lists each option once, and the parser knows each of them (the
 * table drives both): none is an "unknown option". */
START_TEST(help_lists_the_table)
{
	struct names help;
	char args[128], *err;

	help_names(&help);
	ck_assert_int_ge(help.n, 40);
	ck_assert_int_eq(names_sort(&help), 0);
	for (int i = 0; i < help.n; i++) {
		snprintf(args, sizeof args, NO_FILES " --%s", help.v[i]);
		run_ampplan(args, NULL, &err);
		ck_assert_msg(!strstr(err, "unknown option"), "--%s: %s", help.v[i], err);
		free(err);
	}
	run_ampplan(NO_FILES " --no-such-option", NULL, &err);
	ck_assert_ptr_nonnull(strstr(err, "unknown option '--no-such-option'"));
	free(err);
}
END_TEST

START_TEST(man_page_documents_the_table)
{
	struct names help, man;

	help_names(&help);
	man_names(&man);
	names_sort(&help);
	ck_assert_int_eq(names_sort(&man), 0);
	assert_same(&help, "ampplan --help", &man, "ampplan.1");
}
END_TEST

START_TEST(readme_documents_the_table)
{
	struct names help, readme;

	help_names(&help);
	readme_names(&readme);
	names_sort(&help);
	ck_assert_int_eq(names_sort(&readme), 0);
	assert_same(&help, "ampplan --help", &readme, "README.md's option table");
}
END_TEST

/* A --compare spec takes as KEY exactly the options its error message
 * lists (the table's strategy options): a listed KEY with an empty value
 * fails on the value, any other option is "not KEY=VALUE". */
START_TEST(compare_keys_are_the_listed_ones)
{
	struct names help, keys = { 0 };
	char args[256], *err;
	const char *p;

	run_ampplan(NO_FILES " --compare " SPEC ",bogus=1", NULL, &err);
	ck_assert_msg((p = strstr(err, "a strategy option (")), "%s", err);
	for (p += strlen("a strategy option ("); *p != ')'; p += strspn(p, ", ")) {
		names_add(&keys, p, name_len(p));
		p += name_len(p);
	}
	free(err);
	ck_assert_int_ge(keys.n, 20);
	ck_assert_int_eq(names_sort(&keys), 0);
	help_names(&help);
	names_sort(&help);
	for (int i = 0; i < keys.n; i++)
		ck_assert_msg(names_has(&help, keys.v[i]), "--compare lists '%s', not an option",
			      keys.v[i]);
	for (int i = 0; i < help.n; i++) {
		bool listed = names_has(&keys, help.v[i]);

		snprintf(args, sizeof args, NO_FILES " --compare " SPEC ",%s=", help.v[i]);
		ck_assert_int_eq(run_ampplan(args, NULL, &err), 2);
		ck_assert_msg(!strstr(err, "is not KEY=VALUE") == listed, "%s=: %s", help.v[i], err);
		free(err);
	}
}
END_TEST

static Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("options");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, help_lists_the_table);
	tcase_add_test(tc, man_page_documents_the_table);
	tcase_add_test(tc, readme_documents_the_table);
	tcase_add_test(tc, compare_keys_are_the_listed_ones);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(options_suite());
}
