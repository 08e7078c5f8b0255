/* options.h (internal): the table of ampplan's command-line options, one row
 * per option in --help's order. main.c builds from it getopt_long's long
 * options, the parsing of each value with its range check and its usage
 * error, what a --compare spec may set, and the --help text (STYLE.md 12). */
#ifndef AMPPLAN_OPTIONS_H
#define AMPPLAN_OPTIONS_H

/* What an option's value is, and so how it is parsed and stored into its
 * field (a member of main.c's struct cli, whose C type must suit the kind:
 * main.c checks each row when it compiles). */
enum opt_kind {
	KIND_FLAG,     /* no value: sets a bool to true */
	KIND_INT,      /* a decimal integer in [lo, hi] (strtol, the whole
			   string): into an int or a long */
	KIND_REAL,     /* a finite decimal above 0 and in [lo, hi] (strtod,
			   the whole string): into a double */
	KIND_GIB,      /* as KIND_REAL, in GiB: into a double in bytes */
	KIND_SWITCH,   /* on or off: 1 or 0 into an int */
	KIND_ENUM,     /* a name that parse maps to a value >= 0 (-1: none):
			   the value into an int or a bool */
	KIND_NAME,     /* a name that parse knows, as KIND_ENUM: the string
			   itself into a const char * */
	KIND_PATH,     /* any string, a file path or name: into a
			   const char * */
	KIND_TEXT,     /* a non-empty string: into a const char * */
	KIND_HEADROOM, /* GiB above 0 and up to hi, or P% with P above 0 and
			   up to 99.999 (the string at most 63 characters):
			   into a double, and struct cli's headroom_pct says
			   which */
	KIND_SPEC      /* any string, repeatable: appended to struct cli's
			   compare (at most REPORT_COMPARE_MAX) */
};

/* Where an option may appear: on the command line only, or also as a KEY of
 * a --compare spec (one of the options that make up a strategy). */
enum opt_scope { SCOPE_RUN,
		 SCOPE_STRATEGY };

/* The CHECK column: the range of KIND_INT, KIND_REAL, KIND_GIB (and the GiB
 * limit of KIND_HEADROOM), the parse function of KIND_ENUM and KIND_NAME
 * (int parse(const char *name)), or nothing else to check. */
#define OPT_RANGE(lo_, hi_) .lo = (lo_), .hi = (hi_)
#define OPT_POSITIVE	    OPT_RANGE(1, 100000000)
#define OPT_NAMES(parse_)   .parse = (parse_)
#define OPT_ANY		    .parse = NULL

/* The ERR column, the usage error for a bad value: OPT_NEEDS(WHAT) for
 * "--NAME needs WHAT, not 'VALUE'" (cut at 255 bytes), or OPT_ERROR(FORMAT),
 * a printf format with at most one %s, the value (NULL where no value is
 * bad). */
#define OPT_NEEDS(what_)   .needs = (what_)
#define OPT_ERROR(format_) .err = (format_)

/* X(ID, NAME, KIND, FIELD, CHECK, SCOPE, META, ERR, HELP): OPT_ID in main.c's
 * enum option_id; --NAME; enum opt_kind; the member of struct cli that
 * receives the value; OPT_RANGE, OPT_NAMES or OPT_ANY; enum opt_scope; the
 * value's name in --help ("" for a flag); OPT_NEEDS or OPT_ERROR; the --help
 * line. */
#define OPTIONS(X)                                                                                                                                                 \
	X(MODEL, "model", KIND_PATH, model, OPT_ANY, SCOPE_RUN, "FILE", OPT_ERROR(NULL),                                                                           \
	  "model profile or Hugging Face config.json: a path, or NAME for profiles/NAME.json (beside the binary, installed, here)")                                \
	X(CLUSTER, "cluster", KIND_PATH, cluster, OPT_ANY, SCOPE_RUN, "FILE", OPT_ERROR(NULL),                                                                     \
	  "cluster file: a path, or NAME for clusters/NAME.json (beside the binary, installed, here)")                                                             \
	X(GBS, "gbs", KIND_INT, opts.gbs, OPT_POSITIVE, SCOPE_RUN, "N",                                                                                            \
	  OPT_ERROR("--gbs needs a positive integer"),                                                                                                             \
	  "global batch in sequences (default: the profile's)")                                                                                                    \
	X(SEQ, "seq", KIND_INT, opts.seq, OPT_POSITIVE, SCOPE_RUN, "N",                                                                                            \
	  OPT_ERROR("--seq needs a positive integer"),                                                                                                             \
	  "sequence length in tokens (default: the profile's)")                                                                                                    \
	X(TP, "tp", KIND_INT, opts.tp, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                          \
	  OPT_ERROR("--tp needs a positive integer"),                                                                                                              \
	  "fix the tensor-parallel degree")                                                                                                                        \
	X(PP, "pp", KIND_INT, opts.pp, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                          \
	  OPT_ERROR("--pp needs a positive integer"),                                                                                                              \
	  "fix the pipeline-parallel degree")                                                                                                                      \
	X(DP, "dp", KIND_INT, opts.dp, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                          \
	  OPT_ERROR("--dp needs a positive integer"),                                                                                                              \
	  "fix the data-parallel degree")                                                                                                                          \
	X(CP, "cp", KIND_INT, opts.cp, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                          \
	  OPT_ERROR("--cp needs a positive integer"),                                                                                                              \
	  "fix the context-parallel degree")                                                                                                                       \
	X(MBS, "mbs", KIND_INT, opts.mbs, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                       \
	  OPT_ERROR("--mbs needs a positive integer"),                                                                                                             \
	  "fix the micro-batch size in sequences")                                                                                                                 \
	X(EP, "ep", KIND_INT, opts.ep, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                          \
	  OPT_ERROR("--ep needs a positive integer"),                                                                                                              \
	  "fix the expert-parallel degree (MoE; divides DP x CP x TP / ETP and the experts)")                                                                      \
	X(ETP, "etp", KIND_INT, opts.etp, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                       \
	  OPT_ERROR("--etp needs a positive integer"),                                                                                                             \
	  "fix the expert tensor-parallel degree (MoE; divides TP; default: searched)")                                                                            \
	X(VP, "vp", KIND_INT, opts.vp, OPT_POSITIVE, SCOPE_STRATEGY, "N",                                                                                          \
	  OPT_ERROR("--vp needs a positive integer"),                                                                                                              \
	  "fix the virtual stages per pipeline rank (interleaved)")                                                                                                \
	X(SCHEDULE, "schedule", KIND_ENUM, opts.schedule, OPT_NAMES(schedule_parse), SCOPE_STRATEGY, "NAME",                                                       \
	  OPT_ERROR("unknown schedule '%s' (1f1b, interleaved, zb-h1, gpipe, interleaved-zb, zb-v, zb-h2, dualpipev, dualpipe)"),                                  \
	  "fix the schedule: 1f1b, interleaved, zb-h1, gpipe, interleaved-zb, zb-v, zb-h2, dualpipev, dualpipe")                                                   \
	X(RECOMPUTE, "recompute", KIND_ENUM, opts.recompute, OPT_NAMES(recompute_parse), SCOPE_STRATEGY, "NAME",                                                   \
	  OPT_ERROR("unknown recomputation '%s' (none, selective, full)"),                                                                                         \
	  "fix recomputation: none, selective, full")                                                                                                              \
	X(RECOMPUTE_MODULES, "recompute-modules", KIND_ENUM, opts.recompute_modules, OPT_NAMES(recompute_modules_parse), SCOPE_STRATEGY, "LIST",                   \
	  OPT_NEEDS("modules joined by '+' from core_attn, layernorm, mlp, moe_act, moe, shared_experts, mla_up_proj"),                                            \
	  "what selective recomputation reruns: core_attn (default), layernorm, mlp, moe_act, moe, shared_experts, mla_up_proj, joined by '+'")                    \
	X(OFFLOAD_MODULES, "offload-modules", KIND_ENUM, opts.offload_modules, OPT_NAMES(offload_modules_parse), SCOPE_STRATEGY, "LIST",                           \
	  OPT_NEEDS("modules joined by '+' from attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act"),                                      \
	  "offload these modules' saved inputs to host memory (planning only): attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act")        \
	X(ZERO, "zero", KIND_INT, opts.zero, OPT_RANGE(0, 3), SCOPE_STRATEGY, "N",                                                                                 \
	  OPT_ERROR("--zero needs 0, 1, 2 or 3, not '%s'"),                                                                                                        \
	  "fix the ZeRO stage: 0, 1 (distributed optimizer), 2, 3")                                                                                                \
	X(ATTENTION, "attention", KIND_ENUM, opts.attn, OPT_NAMES(attention_parse), SCOPE_STRATEGY, "NAME",                                                        \
	  OPT_NEEDS("flash, flash1, fused-softmax or unfused"),                                                                                                    \
	  "attention kernel: flash (default), flash1, fused-softmax, unfused")                                                                                     \
	X(CP_COMM_TYPE, "cp-comm-type", KIND_ENUM, opts.cp_comm, OPT_NAMES(cp_comm_parse), SCOPE_STRATEGY, "NAME",                                                 \
	  OPT_NEEDS("p2p, a2a or a2a+p2p"),                                                                                                                        \
	  "context parallelism: p2p (ring), a2a (Ulysses), a2a+p2p (default: the search picks)")                                                                   \
	X(NORM, "norm", KIND_ENUM, opts.unfused_norm, OPT_NAMES(norm_parse), SCOPE_STRATEGY, "NAME",                                                               \
	  OPT_NEEDS("fused or unfused"),                                                                                                                           \
	  "norm kernels: fused (default), unfused")                                                                                                                \
	X(VOCAB_PARALLEL, "vocab-parallel", KIND_SWITCH, opts.vocab_par, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                        \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "split embedding, head and loss over the pipeline ranks (planning only; default: both tried with PP > 1 under 1F1B; what-if: off)")                      \
	X(SLICES, "slices", KIND_INT, opts.slices, OPT_RANGE(1, 1024), SCOPE_STRATEGY, "N",                                                                        \
	  OPT_NEEDS("a number of slices from 1 to 1024"),                                                                                                          \
	  "SlimPipe: cut each micro-batch into N sequence slices under 1F1B, 1 for none (planning only; default: searched on long sequences; what-if: 1)")         \
	X(UNEVEN_BATCHES, "uneven-batches", KIND_SWITCH, opts.uneven, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                           \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "DP replicas of a mixed-type stage run micro-batch counts in proportion to speed (planning only; default: both tried where it is faster; what-if: off)") \
	X(MOE_BALANCE, "moe-balance", KIND_ENUM, opts.moe_balance, OPT_NAMES(moe_balance_parse), SCOPE_STRATEGY, "NAME",                                           \
	  OPT_NEEDS("micro-batch or global-batch"),                                                                                                                \
	  "MoE balancing loss over each micro-batch (default) or the global-batch")                                                                                \
	X(MOE_CAPACITY, "moe-capacity", KIND_REAL, opts.moe_capacity, OPT_RANGE(1, 100), SCOPE_STRATEGY, "F",                                                      \
	  OPT_NEEDS("a factor from 1 to 100"),                                                                                                                     \
	  "MoE expert capacity factor: tokens beyond F x the mean are dropped (default: dropless)")                                                                \
	X(FP8, "fp8", KIND_SWITCH, opts.fp8, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                                                    \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "FP8 GEMMs (default: both tried where GPUs have FP8, per stage on mixed ones; what-if: off)")                                                            \
	X(SEQUENCE_PARALLEL, "sequence-parallel", KIND_SWITCH, opts.sp, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                         \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "sequence parallelism (default: on where TP > 1)")                                                                                                       \
	X(TP_COMM_OVERLAP, "tp-comm-overlap", KIND_SWITCH, opts.tp_overlap, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                     \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "overlap TP communication with the GEMMs (default: where the trainer allows it)")                                                                        \
	X(OVERLAP_GRAD_REDUCE, "overlap-grad-reduce", KIND_SWITCH, opts.grad_overlap, OPT_ANY, SCOPE_STRATEGY, "on|off",                                           \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "overlap the DP gradient reduction with the backward (default: where the trainer allows it)")                                                            \
	X(OVERLAP_PARAM_GATHER, "overlap-param-gather", KIND_SWITCH, opts.param_overlap, OPT_ANY, SCOPE_STRATEGY, "on|off",                                        \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "overlap the ZeRO parameter gather with the forward (default: where the trainer allows it)")                                                             \
	X(GRAD_ACC_FUSION, "grad-acc-fusion", KIND_SWITCH, opts.grad_acc_fusion, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "accumulate gradients inside the weight-gradient GEMMs (default: on; off with deepspeed, torchtitan)")                                                   \
	X(P2P_SPLIT, "p2p-split", KIND_SWITCH, opts.p2p_split, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                                  \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "without SP, each TP rank sends 1/tp of a pipeline boundary (default: with deepspeed only)")                                                             \
	X(GRAD_DTYPE, "grad-dtype", KIND_ENUM, opts.grad_bytes, OPT_NAMES(grad_dtype_parse), SCOPE_STRATEGY, "NAME",                                               \
	  OPT_NEEDS("fp32, bf16 or fp16"),                                                                                                                         \
	  "gradients: fp32 (default), bf16, fp16 (default with deepspeed: bf16)")                                                                                  \
	X(MOE_DISPATCHER, "moe-dispatcher", KIND_ENUM, opts.moe_dispatcher, OPT_NAMES(moe_dispatcher_parse), SCOPE_STRATEGY, "NAME",                               \
	  OPT_NEEDS("alltoall, allgather or flex"),                                                                                                                \
	  "MoE token dispatcher: alltoall (default), allgather, flex (DeepEP)")                                                                                    \
	X(MOE_PAD, "moe-pad-capacity", KIND_SWITCH, opts.moe_pad, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                               \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "MoE with --moe-capacity: pad every expert's input to its capacity (default: off)")                                                                      \
	X(MOE_GROUPED_GEMM, "moe-grouped-gemm", KIND_SWITCH, opts.grouped_gemm, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                 \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "MoE: each rank's experts as one grouped GEMM (default: off, one GEMM per expert)")                                                                      \
	X(EP_OVERLAP, "ep-overlap", KIND_SWITCH, opts.ep_overlap, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                               \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "MoE: expert all-to-alls under another micro-batch's compute in 1F1B / interleaved (default: off)")                                                      \
	X(DEFER_WGRAD, "defer-embedding-wgrad", KIND_SWITCH, opts.defer_wgrad, OPT_ANY, SCOPE_STRATEGY, "on|off",                                                  \
	  OPT_NEEDS("on or off"),                                                                                                                                  \
	  "defer the LM head's weight-gradient GEMMs to the pipeline flush (Megatron's --defer-embedding-wgrad-compute; default: off)")                            \
	X(WGRAD_LIMIT, "wgrad-deferral-limit", KIND_INT, opts.wgrad_limit, OPT_RANGE(0, 1000000), SCOPE_STRATEGY, "N",                                             \
	  OPT_NEEDS("a number of micro-batches, 0 for all"),                                                                                                       \
	  "with --defer-embedding-wgrad on: defer at most N micro-batches' (default 0: all)")                                                                      \
	X(OPTIM_DTYPE, "optim-dtype", KIND_ENUM, opts.moment_bytes, OPT_NAMES(optim_dtype_parse), SCOPE_STRATEGY, "NAME",                                          \
	  OPT_NEEDS("fp32 or bf16"),                                                                                                                               \
	  "Adam moments: fp32 (default), bf16 (Megatron's precision-aware optimizer)")                                                                             \
	X(MEM_ALLOWANCE, "mem-allowance", KIND_GIB, mem_allowance, OPT_RANGE(0, 1e6), SCOPE_RUN, "GiB",                                                            \
	  OPT_NEEDS("a positive number of GiB"),                                                                                                                   \
	  "per-GPU memory for CUDA context, NCCL, allocator (default: estimated)")                                                                                 \
	X(MEM_HEADROOM, "mem-headroom", KIND_HEADROOM, mem_headroom, OPT_RANGE(0, 1e6), SCOPE_RUN, "GiB|P%",                                                       \
	  OPT_NEEDS("a positive number of GiB, or a percentage below 100 such as '5%'"),                                                                           \
	  "memory every plan leaves free on each GPU: GiB, or P% of each GPU's memory")                                                                            \
	X(COMPARE, "compare", KIND_SPEC, compare, OPT_ANY, SCOPE_RUN, "SPEC",                                                                                      \
	  OPT_ERROR("--compare is for at most 8 strategies"),                                                                                                      \
	  "evaluate 'tp=8,pp=4,dp=2,cp=1,mbs=1[,OPTION=VALUE...]' (strategy options); repeat to compare side by side")                                             \
	X(LAYOUT, "layout", KIND_TEXT, opts.layout, OPT_ANY, SCOPE_STRATEGY, "STR",                                                                                \
	  OPT_NEEDS("a layout such as 'E+2|3|3|4+L'"),                                                                                                             \
	  "fix the layer partition, e.g. 'E+2|3|3|4+L' (what-if mode only)")                                                                                       \
	X(TOP, "top", KIND_INT, top, OPT_POSITIVE, SCOPE_RUN, "K",                                                                                                 \
	  OPT_ERROR("--top needs a positive integer"),                                                                                                             \
	  "rows in the table (default 10)")                                                                                                                        \
	X(OBJECTIVE, "objective", KIND_ENUM, opts.objective, OPT_NAMES(objective_parse), SCOPE_RUN, "NAME",                                                        \
	  OPT_NEEDS("throughput or cost"),                                                                                                                         \
	  "rank by throughput (default) or cost: USD per million tokens at the groups' price_per_gpu_hour")                                                        \
	X(CSV, "csv", KIND_PATH, csv, OPT_ANY, SCOPE_RUN, "FILE", OPT_ERROR(NULL),                                                                                 \
	  "write every strategy that fits as CSV ('-' for stdout)")                                                                                                \
	X(SHOW_INFEASIBLE, "show-infeasible", KIND_FLAG, opts.keep_infeasible, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                            \
	  "also list strategies that do not fit, with the reason")                                                                                                 \
	X(EXPLAIN, "explain", KIND_FLAG, explain, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                                                         \
	  "break down time and memory of the top 3 strategies (at most --top)")                                                                                    \
	X(JSON, "json", KIND_PATH, json, OPT_ANY, SCOPE_RUN, "FILE", OPT_ERROR(NULL),                                                                              \
	  "write the whole ranking as JSON, per-stage details for the top --json-detail rows")                                                                     \
	X(JSON_DETAIL, "json-detail", KIND_INT, json_detail, OPT_RANGE(0, 1000000000), SCOPE_RUN, "K",                                                             \
	  OPT_NEEDS("a number of rows from 0"),                                                                                                                    \
	  "rows of --json with per-stage details (default 100; the others get \"stages\": null)")                                                                  \
	X(TIMELINE, "timeline", KIND_PATH, timeline, OPT_ANY, SCOPE_RUN, "FILE.svg", OPT_ERROR(NULL),                                                              \
	  "draw one iteration of the top (or --pick'ed) strategy's pipeline as SVG")                                                                               \
	X(TRAINER, "trainer", KIND_ENUM, opts.trainer, OPT_NAMES(trainer_parse), SCOPE_RUN, "NAME",                                                                \
	  OPT_ERROR("unknown trainer '%s' (megatron, torchtitan, deepspeed, nemo)"),                                                                               \
	  "rank only what megatron, torchtitan, deepspeed or nemo can run")                                                                                        \
	X(TRAINER_DEFAULTS, "trainer-defaults", KIND_FLAG, opts.trainer_defaults, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                         \
	  "unset overlaps and kernels as the trainer's bare CLI defaults (default: as the search sets them)")                                                      \
	X(EMIT, "emit", KIND_NAME, emit, OPT_NAMES(emit_format_parse), SCOPE_RUN, "FORMAT",                                                                        \
	  OPT_ERROR("unknown launch format '%s' (megatron, torchtitan, deepspeed, nemo, slurm, torchtitan-main)"),                                                 \
	  "write launch files: megatron, torchtitan (v0.2.2), deepspeed, nemo, slurm, torchtitan-main")                                                            \
	X(OUT, "out", KIND_PATH, out, OPT_ANY, SCOPE_RUN, "DIR", OPT_ERROR(NULL),                                                                                  \
	  "directory for --emit (default: launch); calibrate: the cluster file it writes")                                                                         \
	X(RUNS, "runs", KIND_PATH, runs, OPT_ANY, SCOPE_RUN, "FILE", OPT_ERROR(NULL),                                                                              \
	  "calibrate: the measured runs (CSV: model, spec, measured_s, measured_peak_GiB)")                                                                        \
	X(FORCE, "force", KIND_FLAG, force, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                                                               \
	  "let --emit replace or remove files in --out that ampplan did not write or that were changed")                                                           \
	X(PICK, "pick", KIND_INT, pick, OPT_POSITIVE, SCOPE_RUN, "N",                                                                                              \
	  OPT_ERROR("--pick needs a positive integer"),                                                                                                            \
	  "the N-th strategy of the ranking for --emit and --timeline (default 1)")                                                                                \
	X(EXHAUSTIVE, "exhaustive", KIND_FLAG, opts.exhaustive, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                                           \
	  "reference search over every placement and partition (small cases)")                                                                                     \
	X(WORK_BUDGET, "work-budget", KIND_INT, opts.work_budget, OPT_RANGE(1, 1000000000), SCOPE_RUN, "N",                                                        \
	  OPT_NEEDS("a positive number of work units"),                                                                                                            \
	  "do at most N work units (a strategy costed, or 16384 DP cells), then rank what was found (deterministic; default 1500000)")                             \
	X(THREADS, "threads", KIND_INT, opts.threads, OPT_POSITIVE, SCOPE_RUN, "N",                                                                                \
	  OPT_ERROR("--threads needs a positive integer"),                                                                                                         \
	  "search threads (default: one per core, at most 16); the result is the same for any N")                                                                  \
	X(VERSION, "version", KIND_FLAG, version, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                                                         \
	  "print the version and exit")                                                                                                                            \
	X(HELP, "help", KIND_FLAG, help, OPT_ANY, SCOPE_RUN, "", OPT_ERROR(NULL),                                                                                  \
	  "print this help and exit")

#endif
