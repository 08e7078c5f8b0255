/* main.c: the ampplan command line. One table of options (options.h) drives
 * getopt_long, the parsing and range check of each value, and --help
 * (STYLE.md 12). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibrate.h"
#include "cluster.h"
#include "cluster_read.h"
#include "datafile.h"
#include "emit.h"
#include "model.h"
#include "options.h"
#include "outfile.h"
#include "plan.h"
#include "profile.h"
#include "progress.h"
#include "report.h"
#include "runs.h"
#include "timeline.h"
#include "trainer.h"
#include "trainer_time.h"
#include "util.h"

enum exit_code { EXIT_OK = 0,
		 EXIT_INPUT = 1,
		 EXIT_USAGE = 2 };

/* What the command line asks for: the fields the option table's rows fill
 * (options.h), then what parse_args derives from them. */
struct cli {
	const char *model, *cluster, *csv, *json, *emit, *out;
	const char *timeline; /* --timeline FILE.svg */
	const char *runs;     /* calibrate --runs FILE */
	bool profile, explain;
	bool calibrate;	    /* `ampplan calibrate` */
	bool help, version; /* --help, --version: print and exit 0 */
	bool force;	    /* --force: --out may replace files not ours */
	int top, pick;
	int json_detail;      /* --json-detail: rows with per-stage details */
	double mem_allowance; /* bytes per GPU, or -1: the cost model's */
	double mem_headroom;  /* --mem-headroom: GiB, or percent when
				   headroom_pct; 0: none */
	bool headroom_pct;
	/* --compare: the specs as given and their options (the command
	 * line's with the spec's keys applied) */
	const char *compare[REPORT_COMPARE_MAX];
	char *compare_text[REPORT_COMPARE_MAX]; /* malloc'd copies the layouts
						   point into */
	struct plan_opts compare_opts[REPORT_COMPARE_MAX];
	int n_compare;
	struct plan_opts opts;
};

/* The parse functions of the table's KIND_ENUM rows that no module has:
 * the value of a name, or -1 for none. --norm: whether the norms are
 * unfused. */
static int norm_parse(const char *s)
{
	return strcmp(s, "fused") == 0 ? 0 : strcmp(s, "unfused") == 0 ? 1
								       : -1;
}

/* --grad-dtype: the bytes of a gradient (plan_opts.grad_bytes). */
static int grad_dtype_parse(const char *s)
{
	return strcmp(s, "fp32") == 0 ? 4 : strcmp(s, "bf16") == 0 || strcmp(s, "fp16") == 0 ? 2
											     : -1;
}

/* --optim-dtype: the bytes of an Adam moment (plan_opts.moment_bytes). */
static int optim_dtype_parse(const char *s)
{
	return strcmp(s, "fp32") == 0 ? 4 : strcmp(s, "bf16") == 0 ? 2
								   : -1;
}

/* --objective: enum plan_objective. */
static int objective_parse(const char *s)
{
	return strcmp(s, "throughput") == 0 ? PLAN_THROUGHPUT : strcmp(s, "cost") == 0 ? PLAN_COST
										       : -1;
}

enum option_id {
#define X(id, name, kind, field, check, scope, meta, err, help) OPT_##id,
	OPTIONS(X)
#undef X
		OPT_COUNT
};

/* The C type of a field of struct cli, which decides how an integer value
 * is stored (store_int). */
enum field_type { FIELD_BOOL,
		  FIELD_INT,
		  FIELD_LONG,
		  FIELD_DOUBLE,
		  FIELD_STRING,
		  FIELD_OTHER };
#define FIELD_TYPE(field)                       \
	_Generic(((struct cli *)0)->field, bool \
		 : FIELD_BOOL, int              \
		 : FIELD_INT, long              \
		 : FIELD_LONG,                  \
		   double                       \
		 : FIELD_DOUBLE, const char *   \
		 : FIELD_STRING, default        \
		 : FIELD_OTHER)

/* The field types each kind stores into (enum opt_kind), as a bit set. */
#define BIT(t) (1u << (t))
#define KIND_FIELDS(k)                                                                                    \
	((k) == KIND_FLAG					       ? BIT(FIELD_BOOL)                  \
	 : (k) == KIND_INT					       ? BIT(FIELD_INT) | BIT(FIELD_LONG) \
	 : (k) == KIND_SWITCH					       ? BIT(FIELD_INT)                   \
	 : (k) == KIND_ENUM					       ? BIT(FIELD_INT) | BIT(FIELD_BOOL) \
	 : (k) == KIND_REAL || (k) == KIND_GIB || (k) == KIND_HEADROOM ? BIT(FIELD_DOUBLE)                \
	 : (k) == KIND_SPEC					       ? BIT(FIELD_OTHER)                 \
								       : BIT(FIELD_STRING))

#define X(id, name, kind, field, check, scope, meta, err, help)    \
	_Static_assert(KIND_FIELDS(kind) & BIT(FIELD_TYPE(field)), \
		       "--" name ": the type of struct cli's " #field " does not suit " #kind);
OPTIONS(X)
#undef X

/* One row of the table (options.h), its field as an offset into struct cli
 * and the field's type. */
struct opt {
	const char *name;
	enum opt_kind kind;
	enum field_type type;
	size_t at;			/* offsetof(struct cli, FIELD) */
	double lo, hi;			/* OPT_RANGE */
	int (*parse)(const char *name); /* OPT_NAMES */
	enum opt_scope scope;
	const char *meta;
	const char *needs, *err; /* OPT_NEEDS, OPT_ERROR */
	const char *help;
};

static const struct opt options[] = {
#define X(id, name_, kind_, field, check, scope_, meta_, err, help_) \
	{ .name = name_, .kind = kind_, .type = FIELD_TYPE(field), .at = offsetof(struct cli, field), check, .scope = scope_, .meta = meta_, err, .help = help_ },
	OPTIONS(X)
#undef X
};

/* getopt_long's view of the table: option id gives 256 + id. */
static const struct option long_options[] = {
#define X(id, name, kind, field, check, scope, meta, err, help) \
	{ name, kind == KIND_FLAG ? no_argument : required_argument, NULL, 256 + OPT_##id },
	OPTIONS(X)
#undef X
		{ NULL, 0, NULL, 0 }
};

static void help(void)
{
	puts("usage: ampplan --model FILE --cluster FILE [options]\n"
	     "       ampplan profile --model FILE\n"
	     "       ampplan calibrate --cluster FILE --runs FILE --out FILE [--model FILE] [options]\n\n"
	     "Ranks parallel training strategies (TP, PP, DP, CP, EP, micro-batch, schedule,\n"
	     "recomputation, ZeRO, layer partition and GPU placement) by predicted tokens/s.\n"
	     "With --tp --pp --dp --cp --mbs all given it evaluates that strategy (what-if).\n"
	     "'profile' prints the per-layer profile of a model as JSON.\n"
	     "'calibrate' fits the cluster's cost-model constants to measured runs and writes\n"
	     "the calibrated cluster file.\n\noptions:");
	for (int i = 0; i < OPT_COUNT; i++) {
		int arg = options[i].kind != KIND_FLAG;

		printf("  --%s%s%-*s %s\n", options[i].name, arg ? " " : "",
		       (int)(29 - strlen(options[i].name) - arg), options[i].meta, options[i].help);
	}
}

/* Prints "ampplan: error: MSG" on stderr, MSG escaped (report_escaped), after
 * flushing stdout (STYLE.md 6). */
static void print_error(const char *msg)
{
	fflush(stdout);
	fputs("ampplan: error: ", stderr);
	report_escaped(stderr, msg);
	fputc('\n', stderr);
}

static int usage(const char *fmt, const char *arg)
{
	char msg[1024];

	snprintf(msg, sizeof msg, fmt, arg);
	print_error(msg);
	fputs("(try 'ampplan --help')\n", stderr);
	return EXIT_USAGE;
}

/* "on" -> 1, "off" -> 0, else -1. */
static int parse_switch(const char *s)
{
	return strcmp(s, "on") == 0 ? 1 : strcmp(s, "off") == 0 ? 0
								: -1;
}

/* Strict finite decimal above 0 and in [lo, hi] (STYLE.md 13). */
static int parse_positive(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Strict integer in [lo, hi] (STYLE.md 13). */
static int parse_long(const char *s, double lo, double hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* KIND_HEADROOM: "GiB" up to op->hi, or "P%" up to 99.999, into
 * cl->mem_headroom and cl->headroom_pct. Returns 0, or -1 when bad. */
static int parse_headroom(struct cli *cl, const struct opt *op, const char *arg)
{
	char num[64];
	size_t n = strlen(arg);

	cl->headroom_pct = n > 0 && arg[n - 1] == '%';
	snprintf(num, sizeof num, "%.*s", (int)(n - cl->headroom_pct), arg);
	if (n >= sizeof num)
		return -1;
	return parse_positive(num, op->lo, cl->headroom_pct ? 99.999 : op->hi, &cl->mem_headroom);
}

/* Stores integer v into the bool, int or long at field (type). */
static void store_int(void *field, enum field_type type, long v)
{
	if (type == FIELD_BOOL)
		*(bool *)field = v != 0;
	else if (type == FIELD_INT)
		*(int *)field = (int)v;
	else
		*(long *)field = v;
}

/* Parses arg, the value of option row op (NULL for a flag), by its kind
 * into its field of cl. Returns 0, or -1 when arg is not a value it
 * takes. */
static int parse_value(struct cli *cl, const struct opt *op, const char *arg)
{
	void *field = (char *)cl + op->at;
	long v = 1; /* a flag's */
	double d;

	switch (op->kind) {
	case KIND_FLAG:
		break;
	case KIND_INT:
		if (parse_long(arg, op->lo, op->hi, &v))
			return -1;
		break;
	case KIND_SWITCH:
		if ((v = parse_switch(arg)) < 0)
			return -1;
		break;
	case KIND_ENUM:
		if ((v = op->parse(arg)) < 0)
			return -1;
		break;
	case KIND_REAL:
	case KIND_GIB:
		if (parse_positive(arg, op->lo, op->hi, &d))
			return -1;
		*(double *)field = op->kind == KIND_GIB ? d * (1024.0 * 1024.0 * 1024.0) : d;
		return 0;
	case KIND_HEADROOM:
		return parse_headroom(cl, op, arg);
	case KIND_NAME:
		if (op->parse(arg) < 0)
			return -1;
		*(const char **)field = arg;
		return 0;
	case KIND_TEXT:
		if (!*arg)
			return -1;
		*(const char **)field = arg;
		return 0;
	case KIND_PATH:
		*(const char **)field = arg;
		return 0;
	case KIND_SPEC:
		if (cl->n_compare == REPORT_COMPARE_MAX)
			return -1;
		cl->compare[cl->n_compare++] = arg;
		return 0;
	}
	store_int(field, op->type, v);
	return 0;
}

/* Sets option id from its value arg (the command line's, or a --compare
 * spec's). Returns 0, or EXIT_USAGE after printing the row's usage error. */
static int parse_option(struct cli *cl, int id, const char *arg)
{
	const struct opt *op = &options[id];
	char msg[256];

	if (!parse_value(cl, op, arg))
		return 0;
	if (!op->needs)
		return usage(op->err, arg);
	snprintf(msg, sizeof msg, "--%s needs %s, not '%s'", op->name, op->needs, arg);
	return usage("%s", msg);
}

/* Virtual stages per rank that a layout of the what-if mode implies, as
 * Megatron reads --pipeline-model-parallel-layout (stages / pp), when --vp
 * is not given and the schedule may interleave; 0: none implied (a
 * layout whose stage count pp does not divide fails later, naming it). */
static int layout_vp(const struct plan_opts *o)
{
	int stages = 1;

	if (!o->layout || o->vp || !o->pp ||
	    (o->schedule >= 0 && !schedule_virtual((enum schedule)o->schedule)))
		return 0;
	for (const char *p = o->layout; *p; p++)
		stages += *p == '|';
	return stages % o->pp == 0 && stages / o->pp > 1 ? stages / o->pp : 0;
}

/* The progress of the search, and of the CSV and the JSON being written. */
static struct progress search_progress, csv_progress, json_progress;

/* One item of a spec ("KEY=VALUE", as --compare and calibrate's runs take
 * them), cut in place at its '=': returns the id of option KEY and sets
 * *value to VALUE, or returns -1 (no '=', or no option of that name). */
static int spec_key(char *item, const char **value)
{
	char *eq = strchr(item, '=');

	*value = NULL;
	if (!eq)
		return -1;
	*eq = '\0';
	*value = eq + 1;
	for (int k = 0; k < OPT_COUNT; k++)
		if (strcmp(options[k].name, item) == 0)
			return k;
	return -1;
}

/* Parses --compare spec i, "KEY=VALUE,..." where KEY is the long name of an
 * option of SCOPE_STRATEGY (options.h) and VALUE what the option takes,
 * through parse_option onto the command line's options, and completes it
 * as the what-if mode. cl->compare_text[i] receives the malloc'd copy the
 * layout points into (freed by compare_free). Returns -1 to go on, or an
 * exit code. */
static int parse_compare(struct cli *cl, int i)
{
	struct cli sub = *cl;
	char *save = NULL, *item, msg[1024];
	int rc;

	cl->compare_text[i] = xstrdup(cl->compare[i]);
	for (item = strtok_r(cl->compare_text[i], ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		const char *value;
		int id = spec_key(item, &value);

		if (id < 0 || options[id].scope != SCOPE_STRATEGY) {
			snprintf(msg, sizeof msg, "--compare '%s': '%s' is not KEY=VALUE of a strategy option (tp, pp, dp, cp, ep, etp, mbs, vp, schedule, recompute, recompute-modules, offload-modules, zero, layout, attention, cp-comm-type, moe-balance, moe-capacity, norm, fp8, vocab-parallel, slices, uneven-batches, sequence-parallel, tp-comm-overlap, overlap-grad-reduce, overlap-param-gather, grad-acc-fusion, p2p-split, grad-dtype, moe-dispatcher, moe-pad-capacity, moe-grouped-gemm, ep-overlap, optim-dtype, defer-embedding-wgrad, wgrad-deferral-limit)",
				 cl->compare[i], item);
			return usage("%s", msg);
		}
		if ((rc = parse_option(&sub, id, value)))
			return rc;
	}
	if (!plan_opts_what_if(&sub.opts)) {
		snprintf(msg, sizeof msg, "--compare '%s' needs tp, pp, dp, cp and mbs", cl->compare[i]);
		return usage("%s", msg);
	}
	if (layout_vp(&sub.opts))
		sub.opts.vp = layout_vp(&sub.opts);
	plan_opts_complete(&sub.opts);
	cl->compare_opts[i] = sub.opts;
	return -1;
}

static void compare_free(struct cli *cl)
{
	for (int i = 0; i < cl->n_compare; i++)
		free(cl->compare_text[i]);
}

/* When trainer t (or -1 for none) refuses every row of p, writes its most
 * frequent rule ("megatron: ZeRO stage 3 has no flag; ...") into buf and
 * returns true: a ranking in which nothing fits then names the rule rather
 * than the memory of strategies the trainer could not run anyway. */
static bool trainer_rule(int t, const struct plan *p, const struct model *m,
			 const struct cluster *c, char *buf, size_t n)
{
	enum { RULES = 8 };
	char rule[RULES][256], why[256];
	int count[RULES] = { 0 }, k = 0, best = 0;

	if (t < 0 || !p->n_row)
		return false;
	for (int i = 0; i < p->n_row; i++) {
		struct plan_row row;
		int j = 0;

		if (!trainer_refusal((enum trainer)t, m, c, &plan_row_get(p, i, &row)->s, why, sizeof why))
			return false;
		while (j < k && strcmp(rule[j], why) != 0)
			j++;
		if (j == k && k < RULES)
			snprintf(rule[k++], sizeof rule[0], "%s", why);
		if (j < k)
			count[j]++;
	}
	for (int j = 1; j < k; j++)
		if (count[j] > count[best])
			best = j;
	snprintf(buf, n, "%s", rule[best]);
	return true;
}

/* The trainer whose rules a launch format must follow. */
static int emit_trainer(int format)
{
	switch (format) {
	case EMIT_TORCHTITAN:
	case EMIT_TORCHTITAN_MAIN:
		return TRAINER_TORCHTITAN;
	case EMIT_DEEPSPEED:
		return TRAINER_DEEPSPEED;
	case EMIT_NEMO:
		return TRAINER_NEMO;
	default:
		return TRAINER_MEGATRON;
	}
}

/* Refuses, before the search, two of --csv, --json and --timeline that name
 * one file (also spelled differently) or both stdout (outfile_check_pair).
 * Returns -1 to go on, or EXIT_USAGE after the message. */
static int check_outputs(const struct cli *cl)
{
	const char *name[] = { "csv", "json", "timeline" };
	const char *path[] = { cl->csv, cl->json, cl->timeline };
	struct err e = { "" };

	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (path[i] && path[j] && outfile_check_pair(path[i], path[j], &e)) {
				err_prefix(&e, "--%s and --%s", name[i], name[j]);
				return usage("%s", e.msg);
			}
	return -1;
}

/* The checks of `ampplan calibrate`'s command line (after getopt). Returns
 * -1 to go on, or an exit code. */
static int calibrate_args(struct cli *cl)
{
	if (!cl->cluster || !cl->runs || !cl->out)
		return usage("%s", "calibrate needs --cluster, --runs and --out");
	if (cl->n_compare || cl->csv || cl->json || cl->emit || cl->timeline || cl->explain)
		return usage("%s", "calibrate prints its table and writes --out: --compare, --csv, --json, --emit, --timeline and --explain go with the planner");
	return -1;
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(struct cli *cl, int argc, char **argv)
{
	int c;

	cl->top = 10;
	cl->pick = 1;
	cl->json_detail = 100;
	cl->mem_allowance = -1;
	plan_opts_init(&cl->opts);
	if (argc > 1 && (strcmp(argv[1], "profile") == 0 || strcmp(argv[1], "calibrate") == 0)) {
		cl->profile = strcmp(argv[1], "profile") == 0;
		cl->calibrate = !cl->profile;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
		if (c == '?')
			return usage("unknown option '%s'", argv[optind - 1]);
		if (c == ':')
			return usage("option '%s' needs a value", argv[optind - 1]);
		if ((c = parse_option(cl, c - 256, optarg)))
			return c;
		if (cl->help) {
			help();
			return EXIT_OK;
		}
		if (cl->version) {
			puts("ampplan " AMPPLAN_VERSION);
			return EXIT_OK;
		}
	}
	if (optind < argc)
		return usage("unexpected argument '%s'", argv[optind]);
	if (cl->calibrate)
		return calibrate_args(cl);
	if (cl->runs)
		return usage("%s", "--runs goes with 'ampplan calibrate'");
	if (!cl->out)
		cl->out = "launch";
	if (!cl->model)
		return usage("%s", "--model is required");
	if (!cl->cluster && !cl->profile)
		return usage("%s", "--cluster is required");
	cl->opts.progress = progress_show;
	progress_init(&search_progress, "searching", NULL, isatty(STDERR_FILENO));
	cl->opts.progress_arg = &search_progress;
	if (cl->pick != 1 && !cl->emit && !cl->timeline)
		return usage("%s", "--pick goes with --emit or --timeline");
	/* two outputs on one stdout would interleave: refused before the
	 * search, as outfile.c refuses two outputs naming one file */
	if (cl->csv && cl->json && strcmp(cl->csv, "-") == 0 && strcmp(cl->json, "-") == 0)
		return usage("%s", "--csv - and --json - both write to stdout: name a file for one of them");
	if ((c = check_outputs(cl)) >= 0)
		return c;
	if (cl->n_compare && (cl->csv || cl->json || cl->emit || cl->timeline))
		return usage("%s", "--compare prints a table: --csv, --json, --emit and --timeline go with the ranking");
	for (int i = 0; i < cl->n_compare; i++)
		if ((c = parse_compare(cl, i)) >= 0)
			return c;
	if (cl->opts.layout && !plan_opts_what_if(&cl->opts))
		return usage("%s", "--layout needs the what-if mode (all of --tp --pp --dp --cp --mbs)");
	if (layout_vp(&cl->opts))
		cl->opts.vp = layout_vp(&cl->opts);
	plan_opts_complete(&cl->opts);
	return -1;
}

/* Prints the profile JSON on stdout; a failed write is found by main's
 * check of stdout at exit (finish). */
static int print_profile(const struct model *m)
{
	char *json = model_profile_json(m);

	puts(json);
	free(json);
	return EXIT_OK;
}

/* Appends to buf (size n) the real node groups in mask of c as "32 x
 * A100-SXM4-40GB ('a100')", joined by " and ". */
static void group_names(char *buf, size_t n, const struct cluster *c, unsigned mask)
{
	size_t at = 0;

	buf[0] = 0;
	for (int g = 0; g < c->n_group && at < n; g++)
		if (mask >> g & 1)
			at += (size_t)snprintf(buf + at, n - at, "%s%d x %s ('%s')", at ? " and " : "",
					       c->group[g].nodes * c->group[g].gpus_per_node,
					       c->gpu[c->group[g].gpu].name, c->group[g].name);
}

/* Where the top row leaves node groups idle (plan_row_idle): which, and
 * what it gains over the best row on every GPU of the same kind (a trainer
 * runs it, or planning only): tokens/s, or with PLAN_COST USD per million
 * tokens. */
static void print_idle(FILE *out, const struct plan *p, const struct cluster *c, int objective)
{
	struct plan_row first, buf;
	const struct plan_row *top = p->n_feasible ? plan_row_get(p, 0, &first) : NULL, *all = NULL;
	unsigned idle = p->n_feasible ? plan_row_idle(c, &top->s) : 0;
	unsigned real = 0;
	char left[512], used[512];
	int rank = 0;

	if (!idle)
		return;
	for (int g = 0; g < c->n_group; g++)
		if (!c->group[g].n_part)
			real |= 1u << g;
	for (int i = 1; i < p->n_feasible && !all; i++) {
		const struct plan_row *row = plan_row_get(p, i, &buf);

		if (!plan_row_idle(c, &row->s) && !row->trainers == !top->trainers) {
			all = row;
			rank = i + 1;
		}
	}
	group_names(left, sizeof left, c, idle);
	group_names(used, sizeof used, c, real & ~idle);
	if (!all) {
		fprintf(out, "the top plan leaves %s idle (%s alone%s); no plan found uses every GPU\n",
			left, used, top->s.fp8 ? ", in FP8" : "");
		return;
	}
	fprintf(out, "the top plan leaves %s idle: %s alone%s ", left, used,
		top->s.fp8 ? ", in FP8," : "");
	if (objective == PLAN_COST)
		fprintf(out, "cost %.1f%% less per million tokens than the best plan on every GPU (rank %d, %.3f s%s)\n",
			100 * (1 - top->usd_per_hour * top->r.iter_s / (all->usd_per_hour * all->r.iter_s)),
			rank, all->r.iter_s, all->s.fp8 ? " in FP8" : " in BF16");
	else
		fprintf(out, "run %.1f%% more tokens/s than the best plan on every GPU (rank %d, %.3f s%s)\n",
			100 * (top->r.tokens_per_s / all->r.tokens_per_s - 1), rank,
			all->r.iter_s, all->s.fp8 ? " in FP8" : " in BF16");
}

static void print_summary(FILE *out, const struct plan *p, const struct model *m,
			  const struct cluster *c, int gbs, int objective)
{
	struct plan_row top;

	fprintf(out, "%s (%.1fB parameters", m->name, model_params(m) / 1e9);
	if (m->experts > 0)
		fprintf(out, ", %.1fB active", model_active_params(m) / 1e9);
	fprintf(out, ") on %s (%d GPUs", c->name, c->total_gpus);
	for (int g = 0; g < c->n_group && !c->group[g].n_part; g++)
		fprintf(out, "%s %d x %s", g ? "," : ":", c->group[g].nodes * c->group[g].gpus_per_node,
			c->gpu[c->group[g].gpu].name);
	fprintf(out, "), global batch %d x %d tokens\n", gbs, m->seq);
	fprintf(out, "%ld strategies costed, %d fit, searched in %.3f s\n", p->evaluated,
		p->n_feasible, p->search_s);
	if (p->n_feasible && plan_row_get(p, 0, &top)->gap_pct > 0) /* plan_row.gap_pct */
		fprintf(out, "the top strategy's placement and partition are proven within %.1f%% of the best (gap to a lower bound)\n",
			top.gap_pct);
	if (p->ilp_optimal + p->ilp_stopped + p->ilp_failed)
		fprintf(out, "ILP placements: %ld optimal, %ld stopped at the node limit (best found used), %ld failed (block placements used)\n",
			p->ilp_optimal, p->ilp_stopped, p->ilp_failed);
	if (p->refine_cut)
		fprintf(out, "the work budget (%ld units) left no room to refine %d of the top rows in full: their placements and gaps are the search's\n",
			p->budget, p->refine_cut);
	if (p->truncated)
		fprintf(out, "search ended by the work budget (%ld units%s) after %ld strategies: %d of %d (TP, CP, PP, DP) searched in full; the ranking holds what was found\n",
			p->budget, p->budget == PLAN_WORK_BUDGET ? ", the default: --work-budget N to change" : "",
			p->evaluated, p->degrees_searched, p->degrees);
	if (p->subsets && objective == PLAN_COST)
		fprintf(out, "ranked by USD per million tokens, over the %d subsets of the node groups (a group may stay idle)\n",
			p->subsets);
	else if (p->subsets + p->subsets_pruned)
		fprintf(out, "node-group subsets without the slowest GPU types: %d searched, %d ruled out (their GEMMs and attention at full speed take longer than the best plan found)\n",
			p->subsets - 1, p->subsets_pruned);
	print_idle(out, p, c, objective);
	fputc('\n', out);
}

/* Warns on stderr where a sequence of seq tokens runs past the positions a
 * rotary-position model was trained for (max_position_embeddings): the
 * plan's time holds, but the model's quality past them is not what it was
 * trained to (the trainers run it all the same; learned positions are
 * refused earlier, model_check_seq). */
static void warn_positions(const struct model *m, int seq)
{
	if (m->learned_pos || m->max_pos <= 0 || seq <= m->max_pos)
		return;
	fflush(stdout);
	fprintf(stderr,
		"ampplan: warning: a sequence of %d tokens is longer than the model's max_position_embeddings (%d): "
		"positions past it were not trained; extend them (rope_scaling) to train at this length\n",
		seq, m->max_pos);
}

/* The row that does not fit whose fullest GPU comes closest to its memory
 * (the least fullest_bytes / fullest_cap), to name in the error when
 * nothing fits, into *buf; the first row where none was costed for
 * memory. Returns buf, or NULL without rows. */
static const struct plan_row *closest_row(const struct plan *p, struct plan_row *buf)
{
	struct plan_row row;
	double share = INFINITY;

	if (!p->n_row)
		return NULL;
	plan_row_get(p, 0, buf);
	for (int i = 0; i < p->n_row; i++) {
		const struct cost_result *r = &plan_row_get(p, i, &row)->r;

		if (r->fullest_cap > 0 && r->fullest_bytes / r->fullest_cap < share) {
			share = r->fullest_bytes / r->fullest_cap;
			*buf = row;
		}
	}
	return buf;
}

/* The line saying what went into the CSV or JSON file path (NULL: none;
 * nothing but for a regular file): its rows, size, and for the JSON the
 * rows with per-stage details (detail >= 0). */
static void print_written(FILE *out, const struct outfile_set *t, const char *what,
			  const char *path, int rows, int detail)
{
	long long bytes = path ? outfile_written(t, path) : -1;

	if (bytes < 0)
		return;
	fprintf(out, "wrote %s '", what);
	report_escaped(out, path);
	fprintf(out, "': %d strategies, %.1f MiB", rows, (double)bytes / (1024.0 * 1024.0));
	if (detail >= 0)
		fprintf(out, ", per-stage details for the first %d", detail < rows ? detail : rows);
	fputc('\n', out);
}

/* Stages the launch files of row --pick of p as the table shows it (its
 * line in their header): refused, with the trainer's time or rule, where the
 * format's trainer does not run the row in the row's time (the trainers
 * column), so that the files launch the row the user read. Returns 0, or
 * -1 with e set. */
static int emit_row(const struct cli *cl, const struct plan *p, const struct model *m,
		    const struct cluster *c, struct outfile_set *t, struct err *e)
{
	struct plan_row buf;
	const struct plan_row *row = plan_row_get(p, cl->pick - 1, &buf);
	int tr = emit_trainer(emit_format_parse(cl->emit));
	const char *name = trainer_name((enum trainer)tr);
	char line[REPORT_ROW_LINE], why[256];

	if (emit_format_parse(cl->emit) >= 0 && !(row->trainers >> tr & 1)) {
		if (trainer_refusal((enum trainer)tr, m, c, &row->s, why, sizeof why))
			return err_set(e, "--emit %s --pick %d: %s; rank what %s runs with --trainer %s",
				       cl->emit, cl->pick, why, name, name);
		if (row->trainer_s[tr] > 0)
			return err_set(e, "--emit %s --pick %d: %s runs row %d in %.3f s, not its %.3f s (%s); pick a row whose trainers list %s, or rank by %s's own time with --trainer %s",
				       cl->emit, cl->pick, name, cl->pick, row->trainer_s[tr],
				       row->r.iter_s,
				       trainer_feature_diff(why, sizeof why, &row->s, row->trainer_feat[tr]),
				       name, name, name);
		return err_set(e, "--emit %s --pick %d: row %d does not fit in memory as %s runs it; rank what %s runs with --trainer %s",
			       cl->emit, cl->pick, cl->pick, name, name, name);
	}
	report_row_line(line, sizeof line, cl->pick, row, m, c);
	return emit_stage(cl->emit, cl->out, m, c, &row->s, line, t, e);
}

/* Writes the CSV, the JSON and the launch files that were asked for as one
 * transaction (outfile.h): all are rendered, then written to temporaries
 * (regular files) or in place (stdout, devices, FIFOs), and renamed only
 * when every one succeeded, so an error changes none of the user's files.
 * Returns an exit code, e set on error: EXIT_USAGE when two outputs name the
 * same file (nothing is written then). */
static int write_outputs(FILE *out, const struct cli *cl, const struct plan *p,
			 const struct model *m, const struct cluster *c, struct err *e)
{
	struct outfile_set *t = outfile_create();
	struct plan_row pick;
	void (*show)(double, void *) = cl->opts.progress;
	struct report_stream csv = { cl->json_detail, show, &csv_progress, cl->opts.threads },
			     json = { cl->json_detail, show, &json_progress, cl->opts.threads };
	int rc = EXIT_INPUT;
	bool committed;

	/* the launch files first: the manifest of --out lists those */
	if (cl->emit && emit_row(cl, p, m, c, t, e))
		goto done;
	if (cl->emit)
		outfile_manifest(t, cl->out, cl->force);
	if (cl->csv)
		progress_init(&csv_progress, "writing", cl->csv, search_progress.bar);
	if (cl->csv && report_csv_stage(t, cl->csv, p, m, c, &csv, e))
		goto done;
	if (cl->json)
		progress_init(&json_progress, "writing", cl->json, search_progress.bar);
	if (cl->json && report_json_stage(t, cl->json, p, m, c, &json, e))
		goto done;
	if (cl->timeline && timeline_stage(t, cl->timeline, plan_row_get(p, cl->pick - 1, &pick), m, c, e))
		goto done;
	committed = outfile_commit(t, e) == 0;
	if (cl->csv && show) /* ends (erases) the progress */
		show(1.0, &csv_progress);
	if (cl->json && show)
		show(1.0, &json_progress);
	if (!committed)
		goto done;
	rc = EXIT_OK;
	print_written(out, t, "CSV", cl->csv, p->n_row, -1);
	print_written(out, t, "JSON", cl->json, p->n_row, cl->json_detail);
	if (cl->emit) {
		fputs("\nwrote the ", out);
		report_escaped(out, cl->emit);
		fprintf(out, " launch files of strategy #%d to ", cl->pick);
		report_escaped(out, cl->out);
		fputs("/\n", out);
	}
done:
	if (rc && outfile_conflict(t))
		rc = EXIT_USAGE; /* run() adds the usage hint */
	outfile_free(t);
	return rc;
}

/* --mem-headroom: takes the headroom off every GPU type's memory, so that
 * the search, the fit test and the outputs see what is left. Returns 0,
 * or -1 with e set when nothing would be left. */
static int apply_headroom(const struct cli *cl, struct cluster *c, struct err *e)
{
	for (int i = 0; i < c->n_gpu && cl->mem_headroom > 0; i++) {
		double keep = cl->headroom_pct ? c->gpu[i].mem_bytes * cl->mem_headroom / 100
					       : cl->mem_headroom * 1024.0 * 1024.0 * 1024.0;

		if (keep >= c->gpu[i].mem_bytes)
			return err_set(e, "--mem-headroom %g GiB leaves nothing of the %g GiB of GPU type '%s'",
				       keep / 1073741824.0, c->gpu[i].mem_bytes / 1073741824.0,
				       c->gpu[i].name);
		c->gpu[i].mem_bytes -= keep;
	}
	return 0;
}

/* The line that says what --mem-headroom took (after apply_headroom). */
static void print_headroom(FILE *out, const struct cli *cl, const struct cluster *c)
{
	if (cl->mem_headroom <= 0)
		return;
	if (cl->headroom_pct)
		fprintf(out, "memory headroom: %g%% of each GPU kept free; capacities are what is left:", cl->mem_headroom);
	else
		fprintf(out, "memory headroom: %g GiB per GPU kept free; capacities are what is left:", cl->mem_headroom);
	for (int i = 0; i < c->n_gpu; i++)
		fprintf(out, "%s %s %.1f GiB", i ? "," : "", c->gpu[i].name,
			c->gpu[i].mem_bytes / 1073741824.0);
	fputs("\n\n", out);
}

/* --compare: evaluates each spec as the what-if mode does and prints them
 * side by side (report_compare), then, with --explain, each one's
 * breakdown; one that does not fit also gets its per-rank table, which
 * names the rank over its memory and by how much. Returns an exit code:
 * 1 when one does not fit (after printing all) or cannot run. */
static int run_compare(const struct cli *cl, struct model *m, const struct cluster *file_c)
{
	const struct cluster *c = file_c; /* then the plans' */
	struct plan *p[REPORT_COMPARE_MAX] = { 0 };
	struct plan_row top[REPORT_COMPARE_MAX];
	const struct plan_row *rows[REPORT_COMPARE_MAX];
	struct err e = { "" };
	int rc = EXIT_OK, n = 0;

	for (; n < cl->n_compare; n++) {
		if (plan_search(&p[n], m, file_c, &cl->compare_opts[n], &e)) {
			err_prefix(&e, "--compare '%s'", cl->compare[n]);
			rc = usage("%s", e.msg);
			goto done;
		}
		if (!p[n]->n_row) {
			snprintf(e.msg, sizeof e.msg, "--compare '%s': no strategy to evaluate (the trainer's rules or the batch exclude it)",
				 cl->compare[n]);
			print_error(e.msg);
			rc = EXIT_INPUT;
			n++;
			goto done;
		}
		rows[n] = plan_row_get(p[n], 0, &top[n]);
		c = p[n]->cluster; /* the same mixed groups for each */
	}
	printf("%s on %s (%d GPUs), global batch %d x %d tokens\n", m->name, c->name,
	       c->total_gpus, rows[0]->s.gbs, m->seq);
	for (int i = 0; i < n; i++)
		printf("  #%d: %s\n", i + 1, cl->compare[i]);
	putchar('\n');
	print_headroom(stdout, cl, c);
	report_compare(stdout, rows, n, m, c);
	for (int i = 0; i < n; i++) {
		if (cl->explain) {
			printf("\n#%d\n", i + 1);
			report_explain(stdout, rows[i], m, c);
		} else if (rows[i]->why[0]) {
			printf("\n#%d\n", i + 1);
			report_ranks(stdout, rows[i], m, c);
		}
		if (rows[i]->why[0])
			printf("#%d %s%s\n", i + 1, rows[i]->r.fits ? "" : "does not fit: ",
			       rows[i]->why);
	}
	for (int i = 0; i < n; i++)
		if (rows[i]->why[0] && rc == EXIT_OK) {
			snprintf(e.msg, sizeof e.msg, "--compare '%s' %s", cl->compare[i],
				 rows[i]->r.fits ? "cannot run" : "does not fit");
			print_error(e.msg);
			rc = EXIT_INPUT;
		}
done:
	for (int i = 0; i < n; i++)
		plan_free(p[i]);
	return rc;
}

/* Where nothing fits, the second search that names the closest strategy
 * takes what the first left of the work budget, and at least this
 * fraction of it (1 / REASONS_SHARE): the two searches together take at
 * most 1.1 times the budget. */
#define REASONS_SHARE 10

static int run(struct cli *cl, struct model *m, const struct cluster *file_c)
{
	const struct cluster *c = file_c; /* then the plan's */
	struct plan *p = NULL;
	struct plan_row row;
	struct err e = { "" };
	int gbs = cl->opts.gbs ? cl->opts.gbs : m->gbs, rc = EXIT_OK;
	bool what_if = plan_opts_what_if(&cl->opts);
	/* with the CSV, the JSON or the timeline on stdout, the table goes to stderr, so
	 * that a pipe gets only the data */
	FILE *out = (cl->csv && outfile_is_stdout(cl->csv)) || (cl->json && outfile_is_stdout(cl->json)) ||
				    (cl->timeline && outfile_is_stdout(cl->timeline))
			    ? stderr
			    : stdout;

	warn_positions(m, cl->opts.seq ? cl->opts.seq : m->seq);
	if (cl->n_compare)
		return run_compare(cl, m, c);
	if (plan_search(&p, m, file_c, &cl->opts, &e))
		return usage("%s", e.msg);
	c = p->cluster; /* with the mixed groups the rows may use */
	if (!p->n_feasible && p->evaluated && !cl->opts.keep_infeasible) {
		/* nothing fits: search again keeping the reasons, to name one,
		 * on what the first search left of the budget, at least
		 * 1 / REASONS_SHARE of it (without --exhaustive) */
		struct plan_opts o = cl->opts;
		long budget = o.work_budget > 0 ? o.work_budget : PLAN_WORK_BUDGET, work = p->work;

		progress_init(&search_progress, "searching again for the reasons", NULL,
			      search_progress.bar);
		plan_free(p);
		o.keep_infeasible = true;
		if (!o.exhaustive) {
			long share = budget - work > budget / REASONS_SHARE ? budget - work : budget / REASONS_SHARE;

			o.work_budget = share > 0 ? share : 1;
		}
		if (plan_search(&p, m, file_c, &o, &e))
			return usage("%s", e.msg);
		c = p->cluster;
		/* the summary gives the whole run's work against the budget */
		p->work += work;
		if (p->truncated && !o.exhaustive)
			p->budget = budget;
	}
	if ((cl->emit || cl->timeline) && p->n_feasible && cl->pick > p->n_feasible) {
		snprintf(e.msg, sizeof e.msg, "--pick %d, but only %d strategies fit", cl->pick,
			 p->n_feasible);
		plan_free(p);
		return usage("%s", e.msg);
	}
	print_summary(out, p, m, c, gbs, cl->opts.objective);
	print_headroom(out, cl, c);
	if (what_if && p->n_row) {
		/* report_table prints the rows that fit: hand it the one row
		 * as if it did */
		struct plan one = *p;

		one.n_row = one.n_feasible = 1;
		report_table(out, &one, m, c, 1);
		report_explain(out, plan_row_get(p, 0, &row), m, c);
		if (row.why[0])
			fprintf(out, "%s%s\n", row.r.fits ? "" : "does not fit: ", row.why);
	} else {
		report_table(out, p, m, c, cl->top);
		for (int i = 0; cl->explain && i < p->n_feasible && i < 3 && i < cl->top; i++) {
			fprintf(out, "\n#%d\n", i + 1);
			report_explain(out, plan_row_get(p, i, &row), m, c);
		}
	}
	for (int i = p->n_feasible; i < p->n_row && !what_if && cl->opts.keep_infeasible; i++) {
		const struct strategy *s = &plan_row_get(p, i, &row)->s;

		if (i == p->n_feasible)
			fprintf(out, "\nstrategies that do not fit:\n");
		fprintf(out, "  TP %d PP %d DP %d CP %d EP %d mbs %d %s %s ZeRO %d: %s\n", s->tp, s->pp,
			s->dp, s->cp, s->ep, s->mbs, schedule_name(s->schedule),
			recompute_name(s->recompute), s->zero, row.why);
	}
	if (!p->evaluated && cl->opts.uneven == 1) {
		err_set(&e, "'%s': no strategy on '%s' has uneven micro-batches (--uneven-batches on): they need a pipeline rank whose DP replicas lie on GPU types of different speed, and a split that beats the even one",
			cl->model, cl->cluster);
		rc = EXIT_INPUT;
	} else if (!p->evaluated && p->truncated) {
		err_set(&e, "the work budget (%ld units) ended the search before a strategy of '%s' on '%s' was costed: each needs more (--work-budget N to raise it)",
			p->budget, cl->model, cl->cluster);
		rc = EXIT_INPUT;
	} else if (!p->evaluated) {
		err_set(&e, "'%s': no strategy can use the %d GPUs of '%s' (the node groups cannot be split into equal pipeline stages, or TP/CP/batch constraints exclude every degree)",
			cl->model, c->total_gpus, cl->cluster);
		rc = EXIT_INPUT;
	} else if (what_if && p->n_row && plan_row_get(p, 0, &row)->r.fits && !p->n_feasible) {
		char why[256];

		if (!trainer_refusal((enum trainer)cl->opts.trainer, m, c, &row.s, why, sizeof why))
			snprintf(why, sizeof why, "%s", row.why);
		err_set(&e, "%s", why);
		rc = EXIT_INPUT;
	} else if (!p->n_feasible) {
		char why[256];
		const struct plan_row *near = closest_row(p, &row);
		/* asked for: the strategies that do not fit go to the CSV and
		 * JSON all the same (never the launch files), and exit 1 */
		struct cli data_only = *cl;

		if (!trainer_rule(cl->opts.trainer, p, m, c, why, sizeof why))
			snprintf(why, sizeof why, "%s", near ? near->why : "");
		data_only.emit = data_only.timeline = NULL;
		if (cl->opts.keep_infeasible && (cl->csv || cl->json) &&
		    (rc = write_outputs(out, &data_only, p, m, c, &e)) != EXIT_OK) {
			fflush(out);
			print_error(e.msg);
			if (rc == EXIT_USAGE)
				fputs("(try 'ampplan --help')\n", stderr);
			plan_free(p);
			return rc;
		}
		err_set(&e, "'%s' fits no strategy on '%s'%s%s%s", cl->model, cl->cluster,
			why[0] ? ": " : "", why,
			what_if || cl->opts.keep_infeasible ? "" : " (try --show-infeasible)");
		rc = EXIT_INPUT;
	} else {
		rc = write_outputs(out, cl, p, m, c, &e);
	}
	if (rc) {
		fflush(out);
		print_error(e.msg);
		if (rc == EXIT_USAGE)
			fputs("(try 'ampplan --help')\n", stderr);
	}
	plan_free(p);
	return rc;
}

/* Whether the model's measured points name a GPU type the cluster does not
 * define (a typo would silently fall back to the analytic time); e then
 * names the model file. */
static bool measured_gpus_unknown(const struct cli *cl, const struct model *m,
				  const struct cluster *c, struct err *e)
{
	if (!model_check_gpus(m, c, e))
		return false;
	err_prefix(e, "%s", cl->model);
	return true;
}

/* Replaces *name, the value of --OPTION (NULL: not given), by the path of
 * the file it designates in the data directory dir (datafile_resolve), which
 * *owned receives (malloc'd; caller frees). Returns 0, or -1 with e set. */
static int find_file(const char **name, const char *dir, const char *option, char **owned,
		     struct err *e)
{
	if (!*name)
		return 0;
	if (!(*owned = datafile_resolve(dir, *name, e))) {
		err_prefix(e, "--%s", option);
		return -1;
	}
	*name = *owned;
	return 0;
}

/* The exit code once stdout and stderr are flushed: a write that failed
 * on either (a full disk, a closed pipe: the table, the what-if, the
 * profile, --help) turns exit 0 into 1, with a message on stderr when
 * stdout failed. */
static int finish(int rc)
{
	bool out_bad, err_bad;
	int err;

	errno = 0;
	out_bad = fflush(stdout) != 0 || ferror(stdout);
	err = errno ? errno : EIO;
	if (out_bad && rc == EXIT_OK)
		fprintf(stderr, "ampplan: error: cannot write to stdout: %s\n", strerror(err));
	err_bad = fflush(stderr) != 0 || ferror(stderr);
	return rc == EXIT_OK && (out_bad || err_bad) ? EXIT_INPUT : rc;
}

/* The options of run w of rs: its spec ("KEY=VALUE,...", KEY a strategy
 * option, gbs, seq or trainer: the trainer the run used, whose features
 * --trainer gives) applied onto the command line's, completed as the
 * what-if mode, one search thread and no progress line. *text receives
 * the malloc'd copy of the spec the layout points into (caller frees).
 * Returns 0, or -1 with e naming the file, line and column of the spec. */
static int run_options(const struct cli *cl, const struct runs *rs, const struct run_row *w,
		       struct plan_opts *o, char **text, struct err *e)
{
	struct cli sub = *cl;
	char *save = NULL, *item;

	*text = xstrdup(w->spec);
	for (item = strtok_r(*text, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		const char *value;
		int id = spec_key(item, &value);

		if (id < 0 || (options[id].scope != SCOPE_STRATEGY && id != OPT_GBS && id != OPT_SEQ &&
			       id != OPT_TRAINER))
			return err_set(e, "%s:%d:%d: spec '%s': '%s' is not KEY=VALUE of a strategy option (as --compare's), gbs, seq or trainer",
				       rs->path, w->line, w->spec_col, w->spec, item);
		if (parse_value(&sub, &options[id], value))
			return err_set(e, "%s:%d:%d: spec '%s': '%s' is not a value of --%s", rs->path,
				       w->line, w->spec_col, w->spec, value, options[id].name);
	}
	if (!plan_opts_what_if(&sub.opts))
		return err_set(e, "%s:%d:%d: spec '%s' needs tp, pp, dp, cp and mbs", rs->path, w->line,
			       w->spec_col, w->spec);
	if (layout_vp(&sub.opts))
		sub.opts.vp = layout_vp(&sub.opts);
	plan_opts_complete(&sub.opts);
	sub.opts.threads = 1;
	sub.opts.progress = NULL;
	*o = sub.opts;
	return 0;
}

/* The models the runs name, each loaded once. */
struct model_set {
	char *name[RUNS_MAX];
	struct model *m[RUNS_MAX];
	int n;
};

/* The model name (a path or NAME; NULL: none) designates, loaded into ms
 * once and checked against c. Returns it, or NULL with e set. */
static struct model *run_model(struct model_set *ms, const char *name, const struct cluster *c,
			       struct err *e)
{
	char *path;
	struct model *m;

	for (int i = 0; i < ms->n; i++)
		if (strcmp(ms->name[i], name) == 0)
			return ms->m[i];
	if (!(path = datafile_resolve("profiles", name, e)))
		return NULL;
	if (model_load(&m, path, e) || model_check_gpus(m, c, e)) {
		if (!strstr(e->msg, path))
			err_prefix(e, "%s", path);
		free(path);
		return NULL;
	}
	free(path);
	ms->name[ms->n] = xstrdup(name);
	ms->m[ms->n++] = m;
	return m;
}

/* `ampplan calibrate`: reads the runs, fits the cluster's constants to
 * them (calib_fit), prints the tables and writes the calibrated cluster
 * file to --out (all or nothing). Returns an exit code. */
static int run_calibrate(const struct cli *cl, const struct cluster *c)
{
	struct runs *rs = NULL;
	struct model_set *ms = xcalloc(1, sizeof *ms);
	struct calib_run *run = NULL;
	struct calib_result res;
	char **text = NULL;
	struct err e = { "" };
	int rc = EXIT_INPUT, n = 0;

	if (runs_load(&rs, cl->runs, &e))
		goto done;
	run = xcalloc((size_t)rs->n, sizeof *run);
	text = xcalloc((size_t)rs->n, sizeof *text);
	for (; n < rs->n; n++) {
		const struct run_row *w = &rs->row[n];
		const char *name = w->model ? w->model : cl->model;

		if (!name) {
			err_set(&e, "%s:%d: the run names no model and --model is not given", rs->path, w->line);
			goto done;
		}
		if (run_options(cl, rs, w, &run[n].o, &text[n], &e))
			goto done;
		if (!(run[n].m = run_model(ms, name, c, &e))) {
			err_prefix(&e, "%s:%d: model '%s'", rs->path, w->line, name);
			goto done;
		}
		run[n].measured_s = w->measured_s;
		run[n].peak_bytes = w->peak_gib > 0 ? w->peak_gib * 1073741824.0 : 0;
		run[n].line = w->line;
	}
	if (calib_fit(&res, c, run, n, &e)) {
		err_prefix(&e, "%s", rs->path);
		goto done;
	}
	calib_print(stdout, c, &res, run);
	if (calib_write(cl->cluster, cl->out, c, &res, cl->runs, &e) == 0) {
		printf("wrote %s\n", cl->out);
		rc = EXIT_OK;
	}
	calib_result_free(&res);
done:
	if (rc) {
		err_prefix(&e, "calibrate");
		print_error(e.msg);
	}
	for (int i = 0; text && i < rs->n; i++)
		free(text[i]);
	for (int i = 0; i < ms->n; i++) {
		free(ms->name[i]);
		model_free(ms->m[i]);
	}
	free(ms);
	free(text);
	free(run);
	runs_free(rs);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli cl = { 0 };
	struct model *m = NULL;
	struct cluster *c = NULL;
	struct err e = { "" };
	char *model_path = NULL, *cluster_path = NULL;
	int rc = parse_args(&cl, argc, argv);

	if (rc >= 0) {
		compare_free(&cl);
		return finish(rc);
	}
	if (cl.calibrate) {
		if (find_file(&cl.cluster, "clusters", "cluster", &cluster_path, &e) ||
		    cluster_load(&c, cl.cluster, &e) || apply_headroom(&cl, c, &e)) {
			print_error(e.msg);
			rc = EXIT_INPUT;
		} else {
			if (cl.mem_allowance >= 0)
				c->mem_allowance = cl.mem_allowance;
			rc = run_calibrate(&cl, c);
		}
		cluster_free(c);
		free(cluster_path);
		compare_free(&cl);
		return finish(rc);
	}
	if (find_file(&cl.model, "profiles", "model", &model_path, &e) ||
	    find_file(&cl.cluster, "clusters", "cluster", &cluster_path, &e) ||
	    model_load(&m, cl.model, &e) || (!cl.profile && cluster_load(&c, cl.cluster, &e)) ||
	    (cl.profile && cl.opts.seq && model_set_seq(m, cl.opts.seq, &e)) ||
	    (!cl.profile && measured_gpus_unknown(&cl, m, c, &e))) {
		print_error(e.msg);
		rc = EXIT_INPUT;
	} else if (cl.profile) {
		rc = print_profile(m);
	} else {
		if (cl.mem_allowance >= 0)
			c->mem_allowance = cl.mem_allowance;
		if (apply_headroom(&cl, c, &e)) {
			print_error(e.msg);
			rc = EXIT_INPUT;
		} else {
			rc = run(&cl, m, c);
		}
	}
	model_free(m);
	cluster_free(c);
	free(model_path);
	free(cluster_path);
	compare_free(&cl);
	return finish(rc);
}
