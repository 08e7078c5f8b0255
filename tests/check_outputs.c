/* check_outputs.c: the output files of the command line (--csv, --json,
 * --emit) as one transaction (issue 13 items 1-3 and 10): nothing changes on
 * a failure, non-regular targets are written in place, the same file twice
 * is a usage error; nodes.txt fields and CSV text cells are safe. Every test
 * runs the built binary in a temporary directory it removes. */
#define _POSIX_C_SOURCE 200809L
#include <csv.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util.h"

/* A small model on one node: the search takes milliseconds. */
#define TINY "--model tests/data/tiny-2-layers.json --cluster tests/data/one-t4-node.json --top 1"

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/ampplan-outputs-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	return xstrdup(tmpl);
}

/* dir/name, malloc'd. */
static char *path2(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);

	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static void rm_tree(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Asserts that path holds exactly text. */
static void assert_file(const char *path, const char *text)
{
	char *got = read_file(path);

	ck_assert_msg(got != NULL, "'%s' is gone", path);
	ck_assert_str_eq(got, text);
	free(got);
}

/* The entries of dir but . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* runs TINY plus the formatted options; returns the exit status */
static int run_fmt(char **out, char **err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int run_fmt(char **out, char **err, const char *fmt, ...)
{
	char args[2048];
	va_list ap;
	int n;

	n = snprintf(args, sizeof args, "%s ", TINY);
	va_start(ap, fmt);
	vsnprintf(args + n, sizeof args - (size_t)n, fmt, ap);
	va_end(ap);
	return run_ampplan(args, out, err);
}

/* Old launch files in dir/L: a launch.sh and a nodes.txt saying "old". */
static char *old_launch(const char *dir)
{
	char *l = path2(dir, "L"), *a = path2(l, "launch.sh"), *b = path2(l, "nodes.txt");

	ck_assert_int_eq(mkdir(l, 0777), 0);
	put_file(a, "old launch.sh\n");
	put_file(b, "old nodes.txt\n");
	free(a);
	free(b);
	return l;
}

static void assert_old_launch(const char *l)
{
	char *a = path2(l, "launch.sh"), *b = path2(l, "nodes.txt");

	assert_file(a, "old launch.sh\n");
	assert_file(b, "old nodes.txt\n");
	ck_assert_int_eq(entries(l), 2); /* no temporary left behind */
	free(a);
	free(b);
}

/* Item 1 (issue items 2, 3): a failing --json leaves the existing --csv and
 * the existing launch files untouched. Before: the launch files were already
 * replaced, and the CSV was deleted. */
START_TEST(failing_json_keeps_csv_and_launch)
{
	char *dir = tmpdir(), *csv = path2(dir, "keep.csv"), *l = old_launch(dir), *err;

	put_file(csv, "old csv\n");
	ck_assert_int_eq(run_fmt(NULL, &err, "--csv %s --trainer megatron --emit megatron --out %s --json %s/no/x.json",
				 csv, l, dir),
			 1);
	ck_assert_msg(strstr(err, "cannot create"), "%s", err);
	assert_file(csv, "old csv\n");
	assert_old_launch(l);
	ck_assert_int_eq(entries(dir), 2);
	free(err);
	free(csv);
	free(l);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 1 (issue item 3): --emit plus a failing --csv leaves the old launch
 * files untouched, and a launch directory that did not exist is not created.
 * Before: the launch files were written first and stayed. */
START_TEST(failing_csv_keeps_launch)
{
	char *dir = tmpdir(), *l = old_launch(dir), *err;

	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer megatron --emit megatron --out %s --csv %s/no/x.csv", l, dir), 1);
	assert_old_launch(l);
	free(err);
	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer megatron --emit megatron --out %s/new/sub --csv %s/no/x.csv",
				 dir, dir),
			 1);
	ck_assert_int_eq(entries(dir), 1); /* only L: new/sub was removed again */
	free(err);
	free(l);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 1 (issue item 1): --json /dev/full is written in place: the write
 * fails (exit 1, "No space left on device") and /dev/full stays a character
 * device; an existing --csv is left as it was. Before: the device node was
 * replaced by a regular file (as root), or the error was "cannot create". */
START_TEST(json_dev_full_fails)
{
	char *dir = tmpdir(), *csv = path2(dir, "keep.csv"), *err;
	struct stat st;

	put_file(csv, "old csv\n");
	ck_assert_int_eq(run_fmt(NULL, &err, "--csv %s --json /dev/full", csv), 1);
	ck_assert_msg(strstr(err, "'/dev/full': No space left on device"), "%s", err);
	ck_assert_int_eq(stat("/dev/full", &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
	assert_file(csv, "old csv\n");
	ck_assert_int_eq(entries(dir), 1);
	free(err);
	free(csv);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 1 (issue item 1): --csv /dev/stdout writes the CSV to stdout (here a
 * regular file the harness redirected stdout to: it must not be replaced),
 * and the table goes to stderr, so that stdout holds only the CSV (issue 12:
 * piping --csv - into a spreadsheet tool failed on the table). Before: the
 * path was replaced (or could not be created). */
START_TEST(csv_dev_stdout)
{
	char *out, *err;
	struct stat st;

	ck_assert_int_eq(run_fmt(&out, &err, "--csv /dev/stdout"), 0);
	ck_assert_msg(strstr(err, "layers/stage"), "no table on stderr: %s", err);
	ck_assert_msg(strncmp(out, "rank,fits,tp,pp,dp,", 19) == 0, "stdout is not only the CSV: %s", out);
	ck_assert_int_eq(lstat("/dev/stdout", &st), 0);
	ck_assert(!S_ISREG(st.st_mode));
	free(out);
	free(err);
}
END_TEST

/* Item 1 (issue item 1): --csv to a FIFO with a reader writes into it; the
 * FIFO stays a FIFO. Before: the FIFO was replaced by a regular file. */
/* --json - gives stdout the JSON alone (it starts with '{' and ends with
 * '}'), the table on stderr. */
START_TEST(json_dash_is_only_json)
{
	char *out, *err;
	size_t n;

	ck_assert_int_eq(run_fmt(&out, &err, "--json -"), 0);
	n = strlen(out);
	ck_assert_msg(n > 2 && out[0] == '{' && out[n - 2] == '}' && out[n - 1] == '\n', "%s", out);
	ck_assert_ptr_nonnull(strstr(err, "layers/stage"));
	free(out);
	free(err);
}
END_TEST

START_TEST(csv_fifo_with_reader)
{
	char *dir = tmpdir(), *fifo = path2(dir, "p"), *got = path2(dir, "got"), *err;
	struct stat st;
	pid_t pid;
	int status;

	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) { /* the reader: copies the FIFO to got */
		int in, out;
		char buf[4096];
		ssize_t n;

		alarm(10); /* the bug: nobody ever opens the FIFO to write */
		in = open(fifo, O_RDONLY);
		out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || out < 0)
			_exit(1);
		while ((n = read(in, buf, sizeof buf)) > 0)
			if (write(out, buf, (size_t)n) != n)
				_exit(1);
		_exit(n < 0);
	}
	ck_assert_int_eq(run_fmt(NULL, &err, "--csv %s", fifo), 0);
	ck_assert_str_eq(err, "");
	/* if the FIFO had no writer (the bug), free the reader */
	{
		int fd = open(fifo, O_WRONLY | O_NONBLOCK);

		if (fd >= 0)
			close(fd);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(lstat(fifo, &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	char *text = read_file(got);

	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strncmp(text, "rank,fits,tp,", 13) == 0, "read from the FIFO: %s", text);
	ck_assert_ptr_nonnull(strstr(text, "\n1,yes,"));
	free(text);
	free(err);
	free(fifo);
	free(got);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 1 (issue item 10): --csv X --json X, also spelled differently, and a
 * CSV inside the launch directory named like a launch file, are usage errors
 * (exit 2) that write nothing. Before: exit 0, the JSON kept alone. */
START_TEST(same_file_twice_is_usage)
{
	char *dir = tmpdir(), *x = path2(dir, "x"), *out, *err;

	ck_assert_int_eq(run_fmt(&out, &err, "--csv %s --json %s", x, x), 2);
	ck_assert_msg(strstr(err, "are the same file"), "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "(try 'ampplan --help')"));
	ck_assert_int_eq(entries(dir), 0);
	free(out);
	free(err);
	put_file(x, "old\n"); /* an existing file, through dev/ino */
	ck_assert_int_eq(run_fmt(&out, &err, "--csv %s --json %s/../%s/./x", x, dir,
				 strrchr(dir, '/') + 1),
			 2);
	assert_file(x, "old\n");
	free(out);
	free(err);
	ck_assert_int_eq(run_fmt(&out, &err, "--trainer megatron --emit megatron --out %s/L --csv %s/L/nodes.txt",
				 dir, dir),
			 2);
	ck_assert_int_eq(entries(dir), 1);
	free(out);
	free(err);
	free(x);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* A copy of one-t4-node.json whose group is called group and GPU type gpu. */
static char *named_cluster(const char *dir, const char *group, const char *gpu)
{
	char *src = read_file("tests/data/one-t4-node.json"), *path = path2(dir, "c.json");
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(f);
	for (const char *s = src; *s;) {
		if (strncmp(s, "\"t4\"", 4) == 0) {
			fprintf(f, "\"%s\"", group);
			s += 4;
		} else if (strncmp(s, "\"T4-16GB\"", 9) == 0) {
			fprintf(f, "\"%s\"", gpu);
			s += 9;
		} else {
			fputc(*s++, f);
		}
	}
	ck_assert_int_eq(fclose(f), 0);
	free(src);
	return path;
}

/* Item 2 (issue item 10): nodes.txt separates its fields by tabs, so a group
 * and GPU type with spaces read back whole. Before: fields were separated by
 * spaces. */
START_TEST(nodes_txt_round_trips_spaces)
{
	char *dir = tmpdir(), *c = named_cluster(dir, "rack one a", "T4 16 GB"), *out, *err;
	char args[1024], *nodes = path2(dir, "L/nodes.txt"), *text;
	int lines = 0;

	snprintf(args, sizeof args,
		 "--model tests/data/tiny-2-layers.json --cluster %s --trainer megatron --emit megatron --out %s/L", c, dir);
	ck_assert_int_eq(run_ampplan(args, &out, &err), 0);
	text = read_file(nodes);
	ck_assert_ptr_nonnull(text);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		char *f[4];
		int n = 0;

		if (*l == '#')
			continue;
		for (char *p = l; n < 4; n++) {
			f[n] = p;
			p = strchr(p, '\t');
			if (!p) {
				n++;
				break;
			}
			*p++ = '\0';
		}
		ck_assert_int_eq(n, 3);
		ck_assert_str_eq(f[0], "0");
		ck_assert_str_eq(f[1], "rack one a");
		ck_assert_str_eq(f[2], "T4 16 GB");
		lines++;
	}
	ck_assert_int_eq(lines, 1);
	free(text);
	free(nodes);
	free(out);
	free(err);
	free(c);
	rm_tree(dir);
	free(dir);
}
END_TEST

struct table {
	char *cell[4][96];
	int rows, cols;
};

static void t_field(void *s, size_t n, void *arg)
{
	struct table *t = arg;

	if (t->rows < 4 && t->cols < 96) {
		t->cell[t->rows][t->cols] = xmalloc(n + 1);
		memcpy(t->cell[t->rows][t->cols], s, n);
		t->cell[t->rows][t->cols][n] = '\0';
	}
	t->cols++;
}

static void t_row(int c, void *arg)
{
	struct table *t = arg;

	(void)c;
	t->rows++;
	t->cols = 0;
}

static const char *cell(const struct table *t, int row, const char *name)
{
	for (int i = 0; i < 96 && t->cell[0][i]; i++)
		if (strcmp(t->cell[0][i], name) == 0)
			return t->cell[row][i];
	ck_abort_msg("no column '%s'", name);
	return NULL;
}

/* Item 2 (issue item 10): a text cell starting with '=' or '-' gets a
 * leading apostrophe (no spreadsheet formula); numbers stay numbers, and the
 * JSON keeps the names as they are. Before: "=cmd..." was written as is. */
START_TEST(csv_formula_neutralised)
{
	char *dir = tmpdir(), *c = named_cluster(dir, "=cmd|' /C calc'!A0", "-T4"), *out, *err;
	char args[1024], *csv = path2(dir, "p.csv"), *json = path2(dir, "p.json"), *text;
	struct csv_parser cp;
	struct table t = { 0 };

	snprintf(args, sizeof args,
		 "--model tests/data/tiny-2-layers.json --cluster %s --top 1 --csv %s --json %s",
		 c, csv, json);
	ck_assert_int_eq(run_ampplan(args, &out, &err), 0);
	text = read_file(csv);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL), 0);
	ck_assert_uint_eq(csv_parse(&cp, text, strlen(text), t_field, t_row, &t), strlen(text));
	csv_fini(&cp, t_field, t_row, &t);
	csv_free(&cp);
	ck_assert_int_ge(t.rows, 2);
	ck_assert_str_eq(cell(&t, 1, "groups_per_rank"), "'=cmd|' /C calc'!A0");
	ck_assert_str_eq(cell(&t, 1, "gpu_types_per_rank"), "'-T4");
	ck_assert_str_eq(cell(&t, 1, "rank"), "1");
	ck_assert(strchr("0123456789", cell(&t, 1, "iteration_s")[0]));
	free(text);
	text = read_file(json);
	ck_assert_ptr_nonnull(strstr(text, "\"gpu\":\"-T4\""));
	for (int r = 0; r < 4; r++)
		for (int i = 0; i < 96; i++)
			free(t.cell[r][i]);
	free(text);
	free(csv);
	free(json);
	free(out);
	free(err);
	free(c);
	rm_tree(dir);
	free(dir);
}
END_TEST

static Suite *outputs_suite(void)
{
	Suite *s = suite_create("outputs");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, failing_json_keeps_csv_and_launch);
	tcase_add_test(tc, failing_csv_keeps_launch);
	tcase_add_test(tc, json_dev_full_fails);
	tcase_add_test(tc, csv_dev_stdout);
	tcase_add_test(tc, json_dash_is_only_json);
	tcase_add_test(tc, csv_fifo_with_reader);
	tcase_add_test(tc, same_file_twice_is_usage);
	tcase_add_test(tc, nodes_txt_round_trips_spaces);
	tcase_add_test(tc, csv_formula_neutralised);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(outputs_suite());
}
