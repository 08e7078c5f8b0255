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
#include "emit.h"
#include "model.h"
#include "outfile.h"
#include "plan.h"
#include "report.h"
#include "trainer.h"
#include "util.h"

enum exit_code { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2 };

/* X(id, name, has_arg, metavar, help) */
#define OPTIONS(X)                                                                        \
	X(MODEL, "model", 1, "FILE", "model profile (profiles/) or Hugging Face config.json") \
	X(CLUSTER, "cluster", 1, "FILE", "cluster file (clusters/)")                       \
	X(GBS, "gbs", 1, "N", "global batch in sequences (default: the profile's)")         \
	X(SEQ, "seq", 1, "N", "sequence length in tokens (default: the profile's)")         \
	X(TP, "tp", 1, "N", "fix the tensor-parallel degree")                              \
	X(PP, "pp", 1, "N", "fix the pipeline-parallel degree")                            \
	X(DP, "dp", 1, "N", "fix the data-parallel degree")                                \
	X(CP, "cp", 1, "N", "fix the context-parallel degree")                             \
	X(MBS, "mbs", 1, "N", "fix the micro-batch size in sequences")                     \
	X(VP, "vp", 1, "N", "fix the virtual stages per pipeline rank (interleaved)")      \
	X(SCHEDULE, "schedule", 1, "NAME", "fix the schedule: 1f1b, interleaved, zb-h1, gpipe") \
	X(RECOMPUTE, "recompute", 1, "NAME", "fix recomputation: none, selective, full")   \
	X(ZERO, "zero", 1, "N", "fix the ZeRO stage: 0, 1 (distributed optimizer), 2, 3") \
	X(ATTENTION, "attention", 1, "NAME", "attention kernel: flash (default), flash1, fused-softmax, unfused") \
	X(NORM, "norm", 1, "NAME", "norm kernels: fused (default), unfused")               \
	X(FP8, "fp8", 1, "on|off", "FP8 GEMMs (default: both tried where every GPU has FP8; what-if: off)") \
	X(SEQUENCE_PARALLEL, "sequence-parallel", 1, "on|off", "sequence parallelism (default: on where TP > 1)") \
	X(TP_COMM_OVERLAP, "tp-comm-overlap", 1, "on|off", "overlap TP communication with the GEMMs (default: where allowed; what-if: off)") \
	X(OVERLAP_GRAD_REDUCE, "overlap-grad-reduce", 1, "on|off", "overlap the DP gradient reduction with the backward (default: where allowed; what-if: off)") \
	X(OVERLAP_PARAM_GATHER, "overlap-param-gather", 1, "on|off", "overlap the ZeRO parameter gather with the forward (default: where allowed; what-if: off)") \
	X(GRAD_ACC_FUSION, "grad-acc-fusion", 1, "on|off", "accumulate gradients inside the weight-gradient GEMMs (default: on; off with deepspeed, torchtitan)") \
	X(GRAD_DTYPE, "grad-dtype", 1, "NAME", "gradients: fp32 (default), bf16, fp16 (default with deepspeed: bf16)") \
	X(MEM_ALLOWANCE, "mem-allowance", 1, "GiB", "per-GPU memory for CUDA context, NCCL, allocator (default: estimated)") \
	X(LAYOUT, "layout", 1, "STR", "fix the layer partition, e.g. 'E+2|3|3|4+L' (what-if mode only)") \
	X(TOP, "top", 1, "K", "rows in the table (default 10)")                             \
	X(CSV, "csv", 1, "FILE", "write every strategy that fits as CSV ('-' for stdout)") \
	X(SHOW_INFEASIBLE, "show-infeasible", 0, "", "also list strategies that do not fit, with the reason") \
	X(EXPLAIN, "explain", 0, "", "break down time and memory of the top strategies")  \
	X(JSON, "json", 1, "FILE", "write the whole ranking with per-stage details as JSON") \
	X(TRAINER, "trainer", 1, "NAME", "rank only what megatron, torchtitan, deepspeed or nemo can run") \
	X(EMIT, "emit", 1, "FORMAT", "write launch files: megatron, torchtitan, deepspeed, nemo, slurm") \
	X(OUT, "out", 1, "DIR", "directory for --emit (default: launch)")                \
	X(PICK, "pick", 1, "N", "emit the N-th strategy of the ranking (default 1)")        \
	X(EXHAUSTIVE, "exhaustive", 0, "", "reference search over every placement and partition (small cases)") \
	X(WORK_BUDGET, "work-budget", 1, "N", "cost at most N strategies, then rank what was found (deterministic; default: no limit)") \
	X(THREADS, "threads", 1, "N", "search threads (default: one per core, at most 16); the result is the same for any N") \
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
	bool profile, explain;
	int top, pick;
	double mem_allowance;	/* bytes per GPU, or -1: the cost model's */
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
		[OPT_MBS] = &o->mbs, [OPT_VP] = &o->vp, [OPT_TOP] = &cl->top,
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
			return usage("unknown schedule '%s' (1f1b, interleaved, zb-h1, gpipe)", arg);
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
	case OPT_NORM:
		if (strcmp(arg, "fused") && strcmp(arg, "unfused"))
			return bad_value(name, "fused or unfused", arg);
		o->unfused_norm = strcmp(arg, "unfused") == 0;
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
	    (o->schedule >= 0 && o->schedule != SCHED_INTERLEAVED))
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
	if (cl->pick != 1 && !cl->emit)
		return usage("%s", "--pick goes with --emit");
	if (cl->emit && cl->opts.trainer < 0)
		cl->opts.trainer = emit_trainer(emit_format_parse(cl->emit));
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
	for (int g = 0; g < c->n_group; g++)
		fprintf(out, "%s %d x %s", g ? "," : ":", c->group[g].nodes * c->group[g].gpus_per_node,
		       c->gpu[c->group[g].gpu].name);
	fprintf(out, "), global batch %d x %d tokens\n", gbs, m->seq);
	fprintf(out, "%ld strategies costed, %d fit, searched in %.3f s\n", p->evaluated,
	       p->n_feasible, p->search_s);
	if (p->ilp_optimal + p->ilp_stopped + p->ilp_failed)
		fprintf(out, "ILP placements: %ld optimal, %ld stopped at the node limit (best found used), %ld failed (block placements used)\n",
		       p->ilp_optimal, p->ilp_stopped, p->ilp_failed);
	if (p->truncated)
		fprintf(out, "search ended by --work-budget after %ld strategies: %d of %d (TP, CP, PP, DP) searched in full; the ranking holds what was found\n",
		       p->evaluated, p->degrees_searched, p->degrees);
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

static int run(struct cli *cl, struct model *m, const struct cluster *c)
{
	struct plan *p = NULL;
	struct err e = { "" };
	int gbs = cl->opts.gbs ? cl->opts.gbs : m->gbs, rc = EXIT_OK;
	bool what_if = plan_opts_what_if(&cl->opts);
	/* with the CSV or the JSON on stdout, the table goes to stderr, so
	 * that a pipe gets only the data */
	FILE *out = (cl->csv && outfile_is_stdout(cl->csv)) || (cl->json && outfile_is_stdout(cl->json))
			    ? stderr
			    : stdout;

	if (plan_search(&p, m, c, &cl->opts, &e))
		return usage("%s", e.msg);
	if (cl->emit && p->n_feasible && cl->pick > p->n_feasible) {
		snprintf(e.msg, sizeof e.msg, "--pick %d, but only %d strategies fit", cl->pick,
			 p->n_feasible);
		plan_free(p);
		return usage("%s", e.msg);
	}
	print_summary(out, p, m, c, gbs);
	if (what_if && p->n_row) {
		/* report_table prints the rows that fit: hand it the one row
		 * as if it did */
		struct plan one = *p;

		one.n_row = one.n_feasible = 1;
		report_table(out, &one, m, c, 1);
		report_explain(out, &p->row[0], m, c);
		if (p->row[0].why[0])
			fprintf(out, "does not fit: %s\n", p->row[0].why);
	} else {
		report_table(out, p, m, c, cl->top);
		for (int i = 0; cl->explain && i < p->n_feasible && i < 3; i++) {
			fprintf(out, "\n#%d\n", i + 1);
			report_explain(out, &p->row[i], m, c);
		}
	}
	for (int i = p->n_feasible; i < p->n_row && !what_if; i++) {
		if (i == p->n_feasible)
			fprintf(out, "\nstrategies that do not fit:\n");
		fprintf(out, "  TP %d PP %d DP %d CP %d EP %d mbs %d %s %s ZeRO %d: %s\n", p->row[i].s.tp,
		       p->row[i].s.pp, p->row[i].s.dp, p->row[i].s.cp, p->row[i].s.ep, p->row[i].s.mbs,
		       schedule_name(p->row[i].s.schedule), recompute_name(p->row[i].s.recompute),
		       p->row[i].s.zero, p->row[i].why);
	}
	if (!p->evaluated) {
		err_set(&e, "'%s': no strategy can use the %d GPUs of '%s' (the node groups cannot be split into equal pipeline stages, or TP/CP/batch constraints exclude every degree)",
			cl->model, c->total_gpus, cl->cluster);
		rc = EXIT_INPUT;
	} else if (!p->n_feasible) {
		err_set(&e, "'%s' fits no strategy on '%s'%s", cl->model, cl->cluster,
			what_if ? "" : " (try --show-infeasible)");
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

int main(int argc, char **argv)
{
	struct cli cl = { 0 };
	struct model *m = NULL;
	struct cluster *c = NULL;
	struct err e = { "" };
	int rc = parse_args(&cl, argc, argv);

	if (rc >= 0)
		return rc;
	if (model_load(&m, cl.model, &e) || (!cl.profile && cluster_load(&c, cl.cluster, &e)) ||
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
		rc = run(&cl, m, c);
	}
	model_free(m);
	cluster_free(c);
	return rc;
}
