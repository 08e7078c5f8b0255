/* main.c: the ampplan command line. One table of options drives both
 * getopt_long and --help (STYLE.md 12). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_read.h"
#include "datafile.h"
#include "emit.h"
#include "model.h"
#include "outfile.h"
#include "plan.h"
#include "profile.h"
#include "report.h"
#include "timeline.h"
#include "trainer.h"
#include "util.h"

enum exit_code { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2 };

/* X(id, name, has_arg, metavar, help) */
#define OPTIONS(X)                                                                        \
	X(MODEL, "model", 1, "FILE", "model profile or Hugging Face config.json: a path, or NAME for profiles/NAME.json (here, else installed)") \
	X(CLUSTER, "cluster", 1, "FILE", "cluster file: a path, or NAME for clusters/NAME.json (here, else installed)") \
	X(GBS, "gbs", 1, "N", "global batch in sequences (default: the profile's)")         \
	X(SEQ, "seq", 1, "N", "sequence length in tokens (default: the profile's)")         \
	X(TP, "tp", 1, "N", "fix the tensor-parallel degree")                              \
	X(PP, "pp", 1, "N", "fix the pipeline-parallel degree")                            \
	X(DP, "dp", 1, "N", "fix the data-parallel degree")                                \
	X(CP, "cp", 1, "N", "fix the context-parallel degree")                             \
	X(MBS, "mbs", 1, "N", "fix the micro-batch size in sequences")                     \
	X(EP, "ep", 1, "N", "fix the expert-parallel degree (MoE; divides DP x CP x TP / ETP and the experts)") \
	X(ETP, "etp", 1, "N", "fix the expert tensor-parallel degree (MoE; divides TP; default: searched)") \
	X(VP, "vp", 1, "N", "fix the virtual stages per pipeline rank (interleaved)")      \
	X(SCHEDULE, "schedule", 1, "NAME", "fix the schedule: 1f1b, interleaved, zb-h1, gpipe, interleaved-zb, zb-v, zb-h2, dualpipev, dualpipe") \
	X(RECOMPUTE, "recompute", 1, "NAME", "fix recomputation: none, selective, full")   \
	X(ZERO, "zero", 1, "N", "fix the ZeRO stage: 0, 1 (distributed optimizer), 2, 3") \
	X(ATTENTION, "attention", 1, "NAME", "attention kernel: flash (default), flash1, fused-softmax, unfused") \
	X(CP_COMM_TYPE, "cp-comm-type", 1, "NAME", "context parallelism: p2p (ring), a2a (Ulysses), a2a+p2p (default: the search picks)") \
	X(NORM, "norm", 1, "NAME", "norm kernels: fused (default), unfused")               \
	X(VOCAB_PARALLEL, "vocab-parallel", 1, "on|off", "split embedding, head and loss over the pipeline ranks (planning only; default: both tried with PP > 1 under 1F1B; what-if: off)") \
	X(SLICES, "slices", 1, "N", "SlimPipe: cut each micro-batch into N sequence slices under 1F1B, 1 for none (planning only; default: searched on long sequences; what-if: 1)") \
	X(UNEVEN_BATCHES, "uneven-batches", 1, "on|off", "DP replicas of a mixed-type stage run micro-batch counts in proportion to speed (planning only; default: both tried where it is faster; what-if: off)") \
	X(MOE_BALANCE, "moe-balance", 1, "NAME", "MoE balancing loss over each micro-batch (default) or the global-batch") \
	X(MOE_CAPACITY, "moe-capacity", 1, "F", "MoE expert capacity factor: tokens beyond F x the mean are dropped (default: dropless)") \
	X(FP8, "fp8", 1, "on|off", "FP8 GEMMs (default: both tried where every GPU has FP8; what-if: off)") \
	X(SEQUENCE_PARALLEL, "sequence-parallel", 1, "on|off", "sequence parallelism (default: on where TP > 1)") \
	X(TP_COMM_OVERLAP, "tp-comm-overlap", 1, "on|off", "overlap TP communication with the GEMMs (default: where allowed; what-if: off)") \
	X(OVERLAP_GRAD_REDUCE, "overlap-grad-reduce", 1, "on|off", "overlap the DP gradient reduction with the backward (default: where allowed; what-if: off)") \
	X(OVERLAP_PARAM_GATHER, "overlap-param-gather", 1, "on|off", "overlap the ZeRO parameter gather with the forward (default: where allowed; what-if: off)") \
	X(GRAD_ACC_FUSION, "grad-acc-fusion", 1, "on|off", "accumulate gradients inside the weight-gradient GEMMs (default: on; off with deepspeed, torchtitan)") \
	X(GRAD_DTYPE, "grad-dtype", 1, "NAME", "gradients: fp32 (default), bf16, fp16 (default with deepspeed: bf16)") \
	X(MEM_ALLOWANCE, "mem-allowance", 1, "GiB", "per-GPU memory for CUDA context, NCCL, allocator (default: estimated)") \
	X(MEM_HEADROOM, "mem-headroom", 1, "GiB|P%", "memory every plan leaves free on each GPU: GiB, or P% of each GPU's memory") \
	X(COMPARE, "compare", 1, "SPEC", "evaluate 'tp=8,pp=4,dp=2,cp=1,mbs=1[,OPTION=VALUE...]' (strategy options); repeat to compare side by side") \
	X(LAYOUT, "layout", 1, "STR", "fix the layer partition, e.g. 'E+2|3|3|4+L' (what-if mode only)") \
	X(TOP, "top", 1, "K", "rows in the table (default 10)")                             \
	X(OBJECTIVE, "objective", 1, "NAME", "rank by throughput (default) or cost: USD per million tokens at the groups' price_per_gpu_hour") \
	X(CSV, "csv", 1, "FILE", "write every strategy that fits as CSV ('-' for stdout)") \
	X(SHOW_INFEASIBLE, "show-infeasible", 0, "", "also list strategies that do not fit, with the reason") \
	X(EXPLAIN, "explain", 0, "", "break down time and memory of the top strategies")  \
	X(JSON, "json", 1, "FILE", "write the whole ranking with per-stage details as JSON") \
	X(TIMELINE, "timeline", 1, "FILE.svg", "draw one iteration of the top (or --pick'ed) strategy's pipeline as SVG") \
	X(TRAINER, "trainer", 1, "NAME", "rank only what megatron, torchtitan, deepspeed or nemo can run") \
	X(EMIT, "emit", 1, "FORMAT", "write launch files: megatron, torchtitan, deepspeed, nemo, slurm") \
	X(OUT, "out", 1, "DIR", "directory for --emit (default: launch)")                \
	X(PICK, "pick", 1, "N", "the N-th strategy of the ranking for --emit and --timeline (default 1)")        \
	X(EXHAUSTIVE, "exhaustive", 0, "", "reference search over every placement and partition (small cases)") \
	X(WORK_BUDGET, "work-budget", 1, "N", "cost at most N strategies, then rank what was found (deterministic; default: no limit)") \
	X(THREADS, "threads", 1, "N", "search threads (default: one per core, at most 16); the result is the same for any N") \
	X(VERSION, "version", 0, "", "print the version and exit")                     \
	X(HELP, "help", 0, "", "print this help and exit")

enum option_id {
#define X(id, name, arg, meta, help) OPT_##id,
	OPTIONS(X)
#undef X
	OPT_COUNT
};

static const struct option long_options[] = {
#define X(id, name, arg, meta, help) { name, arg, NULL, 256 + OPT_##id },
	OPTIONS(X)
#undef X
	{ NULL, 0, NULL, 0 }
};

struct cli {
	const char *model, *cluster, *csv, *json, *emit, *out;
	const char *timeline;	/* --timeline FILE.svg */
	bool profile, explain;
	int top, pick;
	double mem_allowance;	/* bytes per GPU, or -1: the cost model's */
	double mem_headroom;	/* --mem-headroom: GiB, or percent when
				   headroom_pct; 0: none */
	bool headroom_pct;
	/* --compare: the specs as given and their options (the command
	 * line's with the spec's keys applied) */
	const char *compare[REPORT_COMPARE_MAX];
	char *compare_text[REPORT_COMPARE_MAX];	/* malloc'd copies the layouts
						   point into */
	struct plan_opts compare_opts[REPORT_COMPARE_MAX];
	int n_compare;
	struct plan_opts opts;
};

static void help(void)
{
	puts("usage: ampplan --model FILE --cluster FILE [options]\n"
	     "       ampplan profile --model FILE\n\n"
	     "Ranks parallel training strategies (TP, PP, DP, CP, EP, micro-batch, schedule,\n"
	     "recomputation, ZeRO, layer partition and GPU placement) by predicted tokens/s.\n"
	     "With --tp --pp --dp --cp --mbs all given it evaluates that strategy (what-if).\n"
	     "'profile' prints the per-layer profile of a model as JSON.\n\noptions:");
#define X(id, name, arg, meta, h) printf("  --%s%s%-*s %s\n", name, arg ? " " : "", \
					 (int)(29 - strlen(name) - (arg ? 1 : 0)), meta, h);
	OPTIONS(X)
#undef X
}

static int usage(const char *fmt, const char *arg)
{
	fflush(stdout);
	fputs("ampplan: error: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n(try 'ampplan --help')\n", stderr);
	return EXIT_USAGE;
}

/* Usage error: "--NAME needs WHAT, not 'ARG'". */
static int bad_value(const char *name, const char *what, const char *arg)
{
	char msg[256];

	snprintf(msg, sizeof msg, "--%s needs %s, not '%s'", name, what, arg);
	return usage("%s", msg);
}

/* "on" -> 1, "off" -> 0, else -1. */
static int parse_switch(const char *s)
{
	return strcmp(s, "on") == 0 ? 1 : strcmp(s, "off") == 0 ? 0 : -1;
}

/* Strict positive finite decimal below max (STYLE.md 13). */
static int parse_positive(const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Strict integer in [min, max] (STYLE.md 13). */
static int parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_option(struct cli *cl, int id, const char *arg)
{
	struct plan_opts *o = &cl->opts;
	int *num[OPT_COUNT] = {
		[OPT_GBS] = &o->gbs, [OPT_SEQ] = &o->seq, [OPT_TP] = &o->tp,
		[OPT_PP] = &o->pp, [OPT_DP] = &o->dp, [OPT_CP] = &o->cp,
		[OPT_MBS] = &o->mbs, [OPT_VP] = &o->vp, [OPT_EP] = &o->ep, [OPT_ETP] = &o->etp,
		[OPT_TOP] = &cl->top,
		[OPT_PICK] = &cl->pick, [OPT_THREADS] = &o->threads,
	};
	const char *name = long_options[id].name;

	if (num[id]) {
		if (parse_int(arg, 1, 100000000, num[id]))
			return usage("--%s needs a positive integer", name);
		return 0;
	}
	switch (id) {
	case OPT_MODEL: cl->model = arg; break;
	case OPT_CLUSTER: cl->cluster = arg; break;
	case OPT_CSV: cl->csv = arg; break;
	case OPT_JSON: cl->json = arg; break;
	case OPT_TIMELINE: cl->timeline = arg; break;
	case OPT_OUT: cl->out = arg; break;
	case OPT_EMIT:
		if (emit_format_parse(arg) < 0)
			return usage("unknown launch format '%s' (megatron, torchtitan, deepspeed, nemo, slurm)", arg);
		cl->emit = arg;
		break;
	case OPT_TRAINER:
		if ((o->trainer = trainer_parse(arg)) < 0)
			return usage("unknown trainer '%s' (megatron, torchtitan, deepspeed, nemo)", arg);
		break;
	case OPT_EXPLAIN: cl->explain = true; break;
	case OPT_SHOW_INFEASIBLE: o->keep_infeasible = true; break;
	case OPT_EXHAUSTIVE: o->exhaustive = true; break;
	case OPT_SCHEDULE:
		if ((o->schedule = schedule_parse(arg)) < 0)
			return usage("unknown schedule '%s' (1f1b, interleaved, zb-h1, gpipe, interleaved-zb, zb-v, zb-h2, dualpipev, dualpipe)", arg);
		break;
	case OPT_RECOMPUTE:
		if ((o->recompute = recompute_parse(arg)) < 0)
			return usage("unknown recomputation '%s' (none, selective, full)", arg);
		break;
	case OPT_ZERO:
		if (parse_int(arg, 0, 3, &o->zero))
			return usage("--zero needs 0, 1, 2 or 3, not '%s'", arg);
		break;
	case OPT_ATTENTION:
		if ((o->attn = attention_parse(arg)) < 0)
			return bad_value(name, "flash, flash1, fused-softmax or unfused", arg);
		break;
	case OPT_CP_COMM_TYPE:
		if ((o->cp_comm = cp_comm_parse(arg)) < 0)
			return bad_value(name, "p2p, a2a or a2a+p2p", arg);
		break;
	case OPT_MOE_BALANCE:
		if ((o->moe_balance = moe_balance_parse(arg)) < 0)
			return bad_value(name, "micro-batch or global-batch", arg);
		break;
	case OPT_MOE_CAPACITY:
		if (parse_positive(arg, 100, &o->moe_capacity) || o->moe_capacity < 1)
			return bad_value(name, "a factor from 1 to 100", arg);
		break;
	case OPT_NORM:
		if (strcmp(arg, "fused") && strcmp(arg, "unfused"))
			return bad_value(name, "fused or unfused", arg);
		o->unfused_norm = strcmp(arg, "unfused") == 0;
		break;
	case OPT_VOCAB_PARALLEL:
		if ((o->vocab_par = parse_switch(arg)) < 0)
			return bad_value(name, "on or off", arg);
		break;
	case OPT_UNEVEN_BATCHES:
		if ((o->uneven = parse_switch(arg)) < 0)
			return bad_value(name, "on or off", arg);
		break;
	case OPT_SLICES:
		if (parse_int(arg, 1, 1024, &o->slices))
			return bad_value(name, "a number of slices from 1 to 1024", arg);
		break;
	case OPT_FP8:
	case OPT_SEQUENCE_PARALLEL:
	case OPT_TP_COMM_OVERLAP:
	case OPT_OVERLAP_GRAD_REDUCE:
	case OPT_OVERLAP_PARAM_GATHER:
	case OPT_GRAD_ACC_FUSION: {
		int *sw = id == OPT_FP8 ? &o->fp8
			  : id == OPT_SEQUENCE_PARALLEL ? &o->sp
			  : id == OPT_TP_COMM_OVERLAP ? &o->tp_overlap
			  : id == OPT_OVERLAP_GRAD_REDUCE ? &o->grad_overlap
			  : id == OPT_OVERLAP_PARAM_GATHER ? &o->param_overlap : &o->grad_acc_fusion;

		if ((*sw = parse_switch(arg)) < 0)
			return bad_value(name, "on or off", arg);
		break;
	}
	case OPT_GRAD_DTYPE:
		if (strcmp(arg, "fp32") == 0)
			o->grad_bytes = 4;
		else if (strcmp(arg, "bf16") == 0 || strcmp(arg, "fp16") == 0)
			o->grad_bytes = 2;
		else
			return bad_value(name, "fp32, bf16 or fp16", arg);
		break;
	case OPT_MEM_HEADROOM: {
		char num[64];
		size_t n = strlen(arg);

		cl->headroom_pct = n > 0 && arg[n - 1] == '%';
		snprintf(num, sizeof num, "%.*s", (int)(n - cl->headroom_pct), arg);
		if (n >= sizeof num ||
		    parse_positive(num, cl->headroom_pct ? 99.999 : 1e6, &cl->mem_headroom))
			return bad_value(name, "a positive number of GiB, or a percentage below 100 such as '5%'", arg);
		break;
	}
	case OPT_COMPARE:
		if (cl->n_compare == REPORT_COMPARE_MAX)
			return usage("--compare is for at most %s strategies", "8");
		cl->compare[cl->n_compare++] = arg;
		break;
	case OPT_MEM_ALLOWANCE:
		if (parse_positive(arg, 1e6, &cl->mem_allowance))
			return bad_value(name, "a positive number of GiB", arg);
		cl->mem_allowance *= 1024.0 * 1024.0 * 1024.0;
		break;
	case OPT_WORK_BUDGET: {
		char *end;
		long v;

		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < 1 || v > 1000000000L)
			return bad_value(name, "a positive number of strategies", arg);
		o->work_budget = v;
		break;
	}
	case OPT_OBJECTIVE:
		if (strcmp(arg, "throughput") && strcmp(arg, "cost"))
			return bad_value(name, "throughput or cost", arg);
		o->objective = strcmp(arg, "cost") == 0 ? PLAN_COST : PLAN_THROUGHPUT;
		break;
	case OPT_LAYOUT:
		if (!*arg)
			return bad_value(name, "a layout such as 'E+2|3|3|4+L'", arg);
		o->layout = arg;
		break;
	}
	return 0;
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

/* A line on stderr every 5 s of a long search when stderr is not a
 * terminal (a log, a CI job). The clock decides only when to print, never
 * a result; the search calls this from its threads one at a time. */
static void progress_lines(double done, void *arg)
{
	static double start = -1, last;
	struct timespec ts;
	double now;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	if (start < 0)
		start = last = now;
	if (done < 1.0 && now - last >= 5) {
		fprintf(stderr, "ampplan: searching: %.0f%% after %.0f s\n", 100.0 * done, now - start);
		last = now;
	}
}

/* Draws the search's progress on stderr when it is a terminal and the
 * search has run for half a second; erases it at the end. */
static void progress_bar(double done, void *arg)
{
	static double start = -1;
	struct timespec ts;
	double now;
	int width = 40, fill = (int)(done * width);

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	if (start < 0)
		start = now;
	if (done >= 1.0) {
		if (now - start >= 0.5)
			fputs("\r\033[K", stderr);
		return;
	}
	if (now - start < 0.5)
		return;
	fprintf(stderr, "\rampplan: searching [%.*s%*s] %3.0f%%", fill,
		"########################################", width - fill, "", 100.0 * done);
}

/* The options a --compare spec may set: those that make up a strategy. */
static bool strategy_option(int id)
{
	switch (id) {
	case OPT_TP: case OPT_PP: case OPT_DP: case OPT_CP: case OPT_EP: case OPT_ETP: case OPT_MBS:
	case OPT_VP: case OPT_SCHEDULE: case OPT_RECOMPUTE: case OPT_ZERO: case OPT_ATTENTION:
	case OPT_CP_COMM_TYPE: case OPT_MOE_BALANCE: case OPT_MOE_CAPACITY: case OPT_NORM: case OPT_FP8: case OPT_SEQUENCE_PARALLEL: case OPT_TP_COMM_OVERLAP:
	case OPT_VOCAB_PARALLEL: case OPT_SLICES: case OPT_UNEVEN_BATCHES:
	case OPT_OVERLAP_GRAD_REDUCE: case OPT_OVERLAP_PARAM_GATHER: case OPT_GRAD_ACC_FUSION:
	case OPT_GRAD_DTYPE: case OPT_LAYOUT:
		return true;
	default:
		return false;
	}
}

/* Parses --compare spec i, "KEY=VALUE,..." where KEY is a strategy
 * option's long name (strategy_option) and VALUE what the option takes,
 * through parse_option onto the command line's options, and completes it
 * as the what-if mode. cl->compare_text[i] receives the malloc'd copy the
 * layout points into (freed by compare_free). Returns -1 to go on, or an
 * exit code. */
static int parse_compare(struct cli *cl, int i)
{
	struct cli sub = *cl;
	char *save = NULL, *item, msg[512];
	int rc;

	cl->compare_text[i] = xstrdup(cl->compare[i]);
	for (item = strtok_r(cl->compare_text[i], ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		int id = -1;

		if (eq) {
			*eq = '\0';
			for (int k = 0; k < OPT_COUNT; k++)
				if (strcmp(long_options[k].name, item) == 0)
					id = k;
		}
		if (id < 0 || !strategy_option(id)) {
			snprintf(msg, sizeof msg, "--compare '%s': '%s' is not KEY=VALUE of a strategy option (tp, pp, dp, cp, ep, etp, mbs, vp, schedule, recompute, zero, layout, attention, cp-comm-type, moe-balance, moe-capacity, norm, fp8, vocab-parallel, slices, uneven-batches, sequence-parallel, tp-comm-overlap, overlap-grad-reduce, overlap-param-gather, grad-acc-fusion, grad-dtype)",
				 cl->compare[i], item);
			return usage("%s", msg);
		}
		if ((rc = parse_option(&sub, id, eq + 1)))
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
		int j = 0;

		if (!trainer_refusal((enum trainer)t, m, c, &p->row[i].s, why, sizeof why))
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
	case EMIT_TORCHTITAN: return TRAINER_TORCHTITAN;
	case EMIT_DEEPSPEED: return TRAINER_DEEPSPEED;
	case EMIT_NEMO: return TRAINER_NEMO;
	default: return TRAINER_MEGATRON;
	}
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(struct cli *cl, int argc, char **argv)
{
	int c;

	cl->top = 10;
	cl->pick = 1;
	cl->mem_allowance = -1;
	cl->out = "launch";
	plan_opts_init(&cl->opts);
	if (argc > 1 && strcmp(argv[1], "profile") == 0) {
		cl->profile = true;
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
		if (c == 256 + OPT_HELP) {
			help();
			return EXIT_OK;
		}
		if (c == 256 + OPT_VERSION) {
			puts("ampplan " AMPPLAN_VERSION);
			return EXIT_OK;
		}
		int rc = parse_option(cl, c - 256, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc)
		return usage("unexpected argument '%s'", argv[optind]);
	if (!cl->model)
		return usage("%s", "--model is required");
	if (!cl->cluster && !cl->profile)
		return usage("%s", "--cluster is required");
	if (isatty(STDERR_FILENO))
		cl->opts.progress = progress_bar;
	else
		cl->opts.progress = progress_lines;
	if (cl->pick != 1 && !cl->emit && !cl->timeline)
		return usage("%s", "--pick goes with --emit or --timeline");
	if (cl->emit && cl->opts.trainer < 0)
		cl->opts.trainer = emit_trainer(emit_format_parse(cl->emit));
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

static int print_profile(const struct model *m)
{
	char *json = model_profile_json(m);

	puts(json);
	free(json);
	return EXIT_OK;
}

static void print_summary(FILE *out, const struct plan *p, const struct model *m,
			  const struct cluster *c, int gbs)
{
	fprintf(out, "%s on %s (%d GPUs", m->name, c->name, c->total_gpus);
	for (int g = 0; g < c->n_group && !c->group[g].n_part; g++)
		fprintf(out, "%s %d x %s", g ? "," : ":", c->group[g].nodes * c->group[g].gpus_per_node,
		       c->gpu[c->group[g].gpu].name);
	fprintf(out, "), global batch %d x %d tokens\n", gbs, m->seq);
	fprintf(out, "%ld strategies costed, %d fit, searched in %.3f s\n", p->evaluated,
	       p->n_feasible, p->search_s);
	if (p->n_feasible && p->row[0].gap_pct > 0)	/* plan_row.gap_pct */
		fprintf(out, "the top strategy's placement and partition are proven within %.1f%% of the best (gap to a lower bound)\n",
			p->row[0].gap_pct);
	if (p->ilp_optimal + p->ilp_stopped + p->ilp_failed)
		fprintf(out, "ILP placements: %ld optimal, %ld stopped at the node limit (best found used), %ld failed (block placements used)\n",
		       p->ilp_optimal, p->ilp_stopped, p->ilp_failed);
	if (p->truncated)
		fprintf(out, "search ended by --work-budget after %ld strategies: %d of %d (TP, CP, PP, DP) searched in full; the ranking holds what was found\n",
		       p->evaluated, p->degrees_searched, p->degrees);
	if (p->subsets)
		fprintf(out, "ranked by USD per million tokens, over the %d subsets of the node groups (a group may stay idle)\n",
			p->subsets);
	fputc('\n', out);
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
	int rc = EXIT_INPUT;

	if (cl->csv && report_csv_stage(t, cl->csv, p, m, c, e))
		goto done;
	if (cl->json && report_json_stage(t, cl->json, p, m, c, e))
		goto done;
	if (cl->emit && emit_stage(cl->emit, cl->out, m, c, &p->row[cl->pick - 1].s, t, e))
		goto done;
	if (cl->timeline && timeline_stage(t, cl->timeline, &p->row[cl->pick - 1], m, c, e))
		goto done;
	if (outfile_commit(t, e))
		goto done;
	rc = EXIT_OK;
	if (cl->emit)
		fprintf(out, "\nwrote the %s launch files of strategy #%d to %s/\n", cl->emit,
			cl->pick, cl->out);
done:
	if (rc && outfile_conflict(t)) {
		/* run() prints "ampplan: error: MSG": add the usage hint */
		size_t n = strlen(e->msg);

		snprintf(e->msg + n, sizeof e->msg - n, "\n(try 'ampplan --help')");
		rc = EXIT_USAGE;
	}
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
	const struct cluster *c = file_c;	/* then the plans' */
	struct plan *p[REPORT_COMPARE_MAX] = { 0 };
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
			fflush(stdout);
			fprintf(stderr, "ampplan: error: --compare '%s': no strategy to evaluate (the trainer's rules or the batch exclude it)\n",
				cl->compare[n]);
			rc = EXIT_INPUT;
			n++;
			goto done;
		}
		rows[n] = &p[n]->row[0];
		c = p[n]->cluster;	/* the same mixed groups for each */
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
			fflush(stdout);
			fprintf(stderr, "ampplan: error: --compare '%s' %s\n", cl->compare[i],
				rows[i]->r.fits ? "cannot run" : "does not fit");
			rc = EXIT_INPUT;
		}
done:
	for (int i = 0; i < n; i++)
		plan_free(p[i]);
	return rc;
}

static int run(struct cli *cl, struct model *m, const struct cluster *file_c)
{
	const struct cluster *c = file_c;	/* then the plan's */
	struct plan *p = NULL;
	struct err e = { "" };
	int gbs = cl->opts.gbs ? cl->opts.gbs : m->gbs, rc = EXIT_OK;
	bool what_if = plan_opts_what_if(&cl->opts);
	/* with the CSV, the JSON or the timeline on stdout, the table goes to stderr, so
	 * that a pipe gets only the data */
	FILE *out = (cl->csv && outfile_is_stdout(cl->csv)) || (cl->json && outfile_is_stdout(cl->json)) ||
			    (cl->timeline && outfile_is_stdout(cl->timeline))
			    ? stderr
			    : stdout;

	if (cl->n_compare)
		return run_compare(cl, m, c);
	if (plan_search(&p, m, file_c, &cl->opts, &e))
		return usage("%s", e.msg);
	c = p->cluster;	/* with the mixed groups the rows may use */
	if (!p->n_feasible && p->evaluated && !cl->opts.keep_infeasible) {
		/* nothing fits: search again keeping the reasons, to name one */
		struct plan_opts o = cl->opts;

		plan_free(p);
		o.keep_infeasible = true;
		if (plan_search(&p, m, file_c, &o, &e))
			return usage("%s", e.msg);
		c = p->cluster;
	}
	if ((cl->emit || cl->timeline) && p->n_feasible && cl->pick > p->n_feasible) {
		snprintf(e.msg, sizeof e.msg, "--pick %d, but only %d strategies fit", cl->pick,
			 p->n_feasible);
		plan_free(p);
		return usage("%s", e.msg);
	}
	print_summary(out, p, m, c, gbs);
	print_headroom(out, cl, c);
	if (what_if && p->n_row) {
		/* report_table prints the rows that fit: hand it the one row
		 * as if it did */
		struct plan one = *p;

		one.n_row = one.n_feasible = 1;
		report_table(out, &one, m, c, 1);
		report_explain(out, &p->row[0], m, c);
		if (p->row[0].why[0])
			fprintf(out, "%s%s\n", p->row[0].r.fits ? "" : "does not fit: ", p->row[0].why);
	} else {
		report_table(out, p, m, c, cl->top);
		for (int i = 0; cl->explain && i < p->n_feasible && i < 3; i++) {
			fprintf(out, "\n#%d\n", i + 1);
			report_explain(out, &p->row[i], m, c);
		}
	}
	for (int i = p->n_feasible; i < p->n_row && !what_if && cl->opts.keep_infeasible; i++) {
		if (i == p->n_feasible)
			fprintf(out, "\nstrategies that do not fit:\n");
		fprintf(out, "  TP %d PP %d DP %d CP %d EP %d mbs %d %s %s ZeRO %d: %s\n", p->row[i].s.tp,
		       p->row[i].s.pp, p->row[i].s.dp, p->row[i].s.cp, p->row[i].s.ep, p->row[i].s.mbs,
		       schedule_name(p->row[i].s.schedule), recompute_name(p->row[i].s.recompute),
		       p->row[i].s.zero, p->row[i].why);
	}
	if (!p->evaluated && cl->opts.uneven == 1) {
		err_set(&e, "'%s': no strategy on '%s' has uneven micro-batches (--uneven-batches on): they need a pipeline rank whose DP replicas lie on GPU types of different speed, and a split that beats the even one",
			cl->model, cl->cluster);
		rc = EXIT_INPUT;
	} else if (!p->evaluated) {
		err_set(&e, "'%s': no strategy can use the %d GPUs of '%s' (the node groups cannot be split into equal pipeline stages, or TP/CP/batch constraints exclude every degree)",
			cl->model, c->total_gpus, cl->cluster);
		rc = EXIT_INPUT;
	} else if (what_if && p->n_row && p->row[0].r.fits && !p->n_feasible) {
		char why[256];

		if (!trainer_refusal((enum trainer)cl->opts.trainer, m, c, &p->row[0].s, why, sizeof why))
			snprintf(why, sizeof why, "%s", p->row[0].why);
		err_set(&e, "%s", why);
		rc = EXIT_INPUT;
	} else if (!p->n_feasible) {
		char why[256];

		if (!trainer_rule(cl->opts.trainer, p, m, c, why, sizeof why))
			snprintf(why, sizeof why, "%s", p->n_row ? p->row[0].why : "");
		err_set(&e, "'%s' fits no strategy on '%s'%s%s%s", cl->model, cl->cluster,
			why[0] ? ": " : "", why, what_if ? "" : " (try --show-infeasible)");
		rc = EXIT_INPUT;
	} else {
		rc = write_outputs(out, cl, p, m, c, &e);
	}
	if (rc) {
		fflush(out);
		fprintf(stderr, "ampplan: error: %s\n", e.msg);
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
		return rc;
	}
	if (find_file(&cl.model, "profiles", "model", &model_path, &e) ||
	    find_file(&cl.cluster, "clusters", "cluster", &cluster_path, &e) ||
	    model_load(&m, cl.model, &e) || (!cl.profile && cluster_load(&c, cl.cluster, &e)) ||
	    (cl.profile && cl.opts.seq && model_set_seq(m, cl.opts.seq, &e)) ||
	    (!cl.profile && measured_gpus_unknown(&cl, m, c, &e))) {
		fflush(stdout);
		fprintf(stderr, "ampplan: error: %s\n", e.msg);
		rc = EXIT_INPUT;
	} else if (cl.profile) {
		rc = print_profile(m);
	} else {
		if (cl.mem_allowance >= 0)
			c->mem_allowance = cl.mem_allowance;
		if (apply_headroom(&cl, c, &e)) {
			fflush(stdout);
			fprintf(stderr, "ampplan: error: %s\n", e.msg);
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
	return rc;
}
