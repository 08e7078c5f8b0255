/* check_outputs.c: the output files of the command line (--csv, --json,
 * --emit) as one transaction (issue 13 items 1-3 and 10): nothing changes on
 * a failure, non-regular targets are written in place, the same file twice
 * is a usage error; nodes.txt fields and CSV text cells are safe. Issue 27:
 * the JSON's per-stage detail for the top rows, signals during the commit,
 * write errors on stdout, --out's manifest, escaped errors. Every test runs
 * the built binary in a temporary directory it removes. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <csv.h>
#include <errno.h>
#include <signal.h>
#include <time.h>
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
	ck_assert_int_eq(run_fmt(NULL, &err, "--csv %s --trainer megatron --emit megatron --out %s --force --json %s/no/x.json",
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

/* Issue 27 item 1, issue 30: --json-detail K gives the first K rows their
 * "stages" and the others "stages": null; fits and sp are JSON booleans,
 * mfu_peak says the MFU's peak; the line after the table gives the rows and
 * the file's size (checked against stat). Before: --json-detail was
 * unknown (exit 2), fits was "yes". */
START_TEST(json_detail_and_booleans)
{
	char *dir = tmpdir(), *json = path2(dir, "q.json"), *out, *err, *text, want[128];
	const cJSON *rows, *row;
	cJSON *doc;
	struct stat st;
	int n;

	ck_assert_int_eq(run_fmt(&out, &err, "--json %s --json-detail 2", json), 0);
	text = read_file(json);
	ck_assert_ptr_nonnull(doc = cJSON_Parse(text));
	rows = field(doc, "strategies");
	n = cJSON_GetArraySize(rows);
	ck_assert_int_gt(n, 3);
	ck_assert_int_eq(field(doc, "json_detail_rows")->valueint, 2);
	for (int i = 0; i < n; i++) {
		row = cJSON_GetArrayItem(rows, i);
		ck_assert_msg(i < 2 ? cJSON_IsArray(field(row, "stages"))
				    : cJSON_IsNull(field(row, "stages")),
			      "row %d", i);
		ck_assert(cJSON_IsTrue(field(row, "fits")));
		ck_assert(cJSON_IsBool(field(row, "sp")));
		ck_assert_str_eq(field(row, "mfu_peak")->valuestring, "bf16");
	}
	ck_assert_int_eq(stat(json, &st), 0);
	snprintf(want, sizeof want, "wrote JSON '%s': %d strategies, %.1f MiB, per-stage details for the first 2",
		 json, n, (double)st.st_size / 1048576.0);
	ck_assert_msg(strstr(out, want), "%s", out);
	cJSON_Delete(doc);
	free(text);
	free(out);
	free(err);
	free(json);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 1: the rows are formatted on --threads threads in rounds of 256 per
 * thread and written in order: the CSV and the JSON (but its search_s) of
 * 1, 2 and 3 threads are the same bytes, over several rounds. */
START_TEST(rows_same_for_any_threads)
{
	char *dir = tmpdir(), *text[3][2], *err;

	for (int t = 0; t < 3; t++) {
		char *csv = path2(dir, "x.csv"), *json = path2(dir, "x.json"), *s;

		ck_assert_int_eq(run_fmt(NULL, &err, "--csv %s --json %s --json-detail 300 --threads %d",
					 csv, json, t + 1),
				 0);
		text[t][0] = read_file(csv);
		text[t][1] = read_file(json);
		ck_assert_int_gt(count_lines(text[t][0]), 513); /* three rounds of 256 at 1 thread */
		s = strstr(text[t][1], "\"search_s\":");
		ck_assert_ptr_nonnull(s);
		memmove(s, strchr(s, ','), strlen(strchr(s, ',')) + 1);
		free(err);
		free(csv);
		free(json);
	}
	for (int t = 1; t < 3; t++)
		for (int k = 0; k < 2; k++)
			ck_assert_msg(strcmp(text[t][k], text[0][k]) == 0, "%d threads, file %d", t + 1, k);
	for (int t = 0; t < 3; t++)
		for (int k = 0; k < 2; k++)
			free(text[t][k]);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Runs `ampplan TINY args` in the background with stdin from /dev/null and
 * its output to dir/log; returns its pid. */
static pid_t spawn(const char *dir, const char *args)
{
	char cmd[2048];
	pid_t pid;

	snprintf(cmd, sizeof cmd, "exec %s %s %s >%s/log 2>&1 </dev/null", AMPPLAN_BIN, TINY, args,
		 dir);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Item 2: SIGINT, SIGTERM or SIGHUP while the commit waits on a FIFO
 * without a reader removes the temporaries of the JSON and the launch
 * files and the --out directory it created, then ends ampplan by that
 * signal (the shell's 130, 143, 129). Before: the default action left
 * .NAME.XXXXXX files and the new directory behind. */
START_TEST(signal_cleans_up)
{
	const int sig[] = { SIGINT, SIGTERM, SIGHUP };

	for (int k = 0; k < 3; k++) {
		char *dir = tmpdir(), *fifo = path2(dir, "fifo"), *sub = path2(dir, "new"), args[1024];
		struct timespec pause = { 0, 20000000 };
		struct stat st;
		pid_t pid;
		int status, waited = 0;

		ck_assert_int_eq(mkfifo(fifo, 0600), 0);
		snprintf(args, sizeof args, "--json %s/q.json --trainer megatron --emit megatron --out %s/new/sub --csv %s",
			 dir, dir, fifo);
		pid = spawn(dir, args);
		/* the temporaries exist once the commit blocks on the FIFO */
		while (stat(sub, &st) != 0 && waited++ < 1000)
			nanosleep(&pause, NULL);
		ck_assert_int_eq(stat(sub, &st), 0);
		nanosleep(&pause, NULL);
		ck_assert_int_eq(kill(pid, sig[k]), 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == sig[k], "status %x", status);
		ck_assert_int_ne(stat(sub, &st), 0); /* new/ removed */
		ck_assert_int_eq(entries(dir), 2);   /* fifo and log: no temporary */
		free(fifo);
		free(sub);
		rm_tree(dir);
		free(dir);
	}
}
END_TEST

/* Runs `sh -c cmd` with stderr into *err (malloc'd); returns the exit
 * status. */
static int shell(const char *cmd, char **err)
{
	char e[] = "/tmp/ampplan-err-XXXXXX", line[2048];
	int fd = mkstemp(e), st;

	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(line, sizeof line, "%s 2>%s </dev/null", cmd, e);
	st = system(line);
	*err = read_file(e);
	remove(e);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Item 3: the table, the what-if, `ampplan profile` and --help on a full
 * stdout (/dev/full) exit 1 with "cannot write to stdout". Before: exit 0
 * and nothing said. */
START_TEST(stdout_full_fails)
{
	const char *args[] = {
		TINY,
		TINY " --tp 1 --pp 1 --dp 4 --cp 1 --mbs 1",
		"profile --model tests/data/tiny-2-layers.json",
		"--help",
	};

	for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
		char cmd[1024], *err;

		snprintf(cmd, sizeof cmd, "%s %s >/dev/full", AMPPLAN_BIN, args[i]);
		ck_assert_msg(shell(cmd, &err) == 1, "%s", args[i]);
		ck_assert_msg(strstr(err, "ampplan: error: cannot write to stdout: No space left on device"),
			      "%s: %s", args[i], err);
		free(err);
	}
}
END_TEST

/* The mode bits of path. */
static unsigned mode_of(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_mode & 07777;
}

/* Item 6: --out refuses to replace a launch.sh it did not write (exit 1,
 * the file kept), replaces it with --force keeping its mode 0600, replaces
 * its own files on the next run but not one edited since, and removes the
 * files of another format it wrote before, leaving a file of the user's
 * alone. Before: launch.sh was replaced silently with mode 0755, and a
 * megatron launch.sh stayed beside the NeMo files. */
START_TEST(out_manifest)
{
	char *dir = tmpdir(), *l = path2(dir, "L"), *sh = path2(l, "launch.sh"),
	     *notes = path2(l, "notes.md"), *toml = path2(l, "overrides.txt"), *err, *text;

	ck_assert_int_eq(mkdir(l, 0777), 0);
	put_file(sh, "hand-edited\n");
	put_file(notes, "mine\n");
	ck_assert_int_eq(chmod(sh, 0600), 0);
	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer megatron --emit megatron --out %s", l), 1);
	ck_assert_msg(strstr(err, "launch.sh' exists and was not written by ampplan"), "%s", err);
	assert_file(sh, "hand-edited\n");
	ck_assert_int_eq(entries(l), 2);
	free(err);
	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer megatron --emit megatron --out %s --force", l), 0);
	ck_assert_uint_eq(mode_of(sh), 0600);
	text = read_file(sh);
	ck_assert_ptr_nonnull(strstr(text, "pretrain_gpt.py"));
	free(text);
	free(err);
	/* ours now: replaced without --force */
	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer megatron --emit megatron --out %s", l), 0);
	free(err);
	/* another format: megatron's launch.sh is stale and removed */
	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer nemo --emit nemo --out %s", l), 0);
	ck_assert_int_ne(access(sh, F_OK), 0);
	ck_assert_int_eq(access(toml, F_OK), 0);
	assert_file(notes, "mine\n");
	free(err);
	/* edited since: refused */
	put_file(toml, "edited\n");
	ck_assert_int_eq(run_fmt(NULL, &err, "--trainer nemo --emit nemo --out %s", l), 1);
	ck_assert_msg(strstr(err, "overrides.txt' exists and was not written by ampplan"), "%s", err);
	assert_file(toml, "edited\n");
	free(err);
	free(sh);
	free(notes);
	free(toml);
	free(l);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 6: a CSV that is replaced keeps its mode. Before: 0600 became 0644
 * (0666 less the umask). */
START_TEST(replaced_file_keeps_mode)
{
	char *dir = tmpdir(), *csv = path2(dir, "x.csv"), *err;

	put_file(csv, "old\n");
	ck_assert_int_eq(chmod(csv, 0600), 0);
	ck_assert_int_eq(run_fmt(NULL, &err, "--csv %s", csv), 0);
	ck_assert_uint_eq(mode_of(csv), 0600);
	free(err);
	free(csv);
	rm_tree(dir);
	free(dir);
}
END_TEST

/* Item 7: a path with an escape sequence and a newline is echoed escaped,
 * the error one line. Before: the raw ESC byte and newline reached the
 * terminal. */
START_TEST(error_text_escaped)
{
	char cmd[512], *err;

	snprintf(cmd, sizeof cmd, "%s --model \"$(printf 'a\\033[2Jb\\nc')\" --cluster x", AMPPLAN_BIN);
	ck_assert_int_eq(shell(cmd, &err), 1);
	ck_assert_ptr_null(strchr(err, '\033'));
	ck_assert_msg(strstr(err, "a\\x1b[2Jb\\nc"), "%s", err);
	ck_assert_int_eq(count_lines(err), 1);
	free(err);
}
END_TEST

/* Item 7: --csv x --json x is refused before anything is loaded or
 * searched: with a model that does not exist it is still the usage error
 * (exit 2), not the missing model (exit 1). Before: exit 1 (after the
 * search when the model exists). */
START_TEST(same_file_refused_first)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--model no-such-model.json --cluster tests/data/one-t4-node.json --csv /tmp/ampplan-x --json /tmp/../tmp/ampplan-x",
				     &out, &err),
			 2);
	ck_assert_msg(strstr(err, "are the same file"), "%s", err);
	ck_assert_int_ne(access("/tmp/ampplan-x", F_OK), 0);
	free(out);
	free(err);
}
END_TEST

/* Issue 30: an FP8 row's MFU is marked '*', and a note under the table
 * says it is against the BF16 peak. Before: no marker. */
START_TEST(fp8_mfu_marked)
{
	char *out, *err;

	ck_assert_int_eq(run_ampplan("--model tests/data/tiny-2-layers.json --cluster tests/data/h100-fp8.json --tp 1 --pp 1 --dp 16 --cp 1 --mbs 1 --fp8 on --gbs 16",
				     &out, &err),
			 0);
	ck_assert_msg(strstr(out, "0.0*"), "%s", out);
	ck_assert_msg(strstr(out, "* MFU against the BF16 peak"), "%s", out);
	ck_assert_msg(strstr(out, "MFU 0.0% (against the BF16 peak"), "%s", out);
	free(out);
	free(err);
	ck_assert_int_eq(run_ampplan("--model tests/data/tiny-2-layers.json --cluster tests/data/h100-fp8.json --tp 1 --pp 1 --dp 16 --cp 1 --mbs 1 --fp8 off --gbs 16",
				     &out, &err),
			 0);
	ck_assert_ptr_null(strstr(out, "MFU against"));
	free(out);
	free(err);
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
	tcase_add_test(tc, json_detail_and_booleans);
	tcase_add_test(tc, rows_same_for_any_threads);
	tcase_add_test(tc, signal_cleans_up);
	tcase_add_test(tc, stdout_full_fails);
	tcase_add_test(tc, out_manifest);
	tcase_add_test(tc, replaced_file_keeps_mode);
	tcase_add_test(tc, error_text_escaped);
	tcase_add_test(tc, same_file_refused_first);
	tcase_add_test(tc, fp8_mfu_marked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(outputs_suite());
}
