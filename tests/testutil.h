/* testutil.h: helpers shared by the Check suites. The Makefile defines
 * AMPPLAN_BIN (the ampplan binary of this build) and TEST_DIR (its build
 * directory: build or build/san), where the suites write their files, as
 * make check runs both builds' suites side by side. */
#ifndef AMPPLAN_TESTUTIL_H
#define AMPPLAN_TESTUTIL_H

#include <check.h>
#include <math.h>

/* Check's ck_assert_msg, which every ck_assert_* expands to, without its
 * mark point when the assertion holds: Check sends the parent process a
 * message for each such point, and the parent moves its buffer after
 * each one; in loops over thousands of elements that cost more than the
 * tests themselves (under AddressSanitizer, whose memmove is a byte loop,
 * check_simulate took 19 CPU s for 0.7 of work). What is lost: a test that
 * crashes is reported at its start, not at its last assertion that held
 * (the sanitizers print the stack). */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...) \
	((expr) ? (void)0 : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", __VA_ARGS__))

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

struct plan;
struct plan_row;

/* The rows of p that fit (0 to n_feasible - 1), each expanded once by
 * plan_row_get: for the tests that look rows up among others (a lookup
 * through plan_row_get expands a row each time). Malloc'd; caller frees. */
struct plan_row *test_rows(const struct plan *p);

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

/* ---- the cost model's fixture ----
 * Shared by check_cost, check_memory and check_evaluate, which define
 * TESTUTIL_COST_FIXTURE before including this header (other suites have
 * their own mod, clu, strat, ...). The kernel constants of compute.h
 * (FLASH_RATE, NORM_FUSED, ...) and memory.h (MEM_CONTEXT_BYTES,
 * MEM_FRAG_SHARE) are calibrated and change: expectations are written as
 * the documented formulas over those names, on inputs chosen so that the
 * rest of the arithmetic is round. */
#ifdef TESTUTIL_COST_FIXTURE
#include <stdbool.h>

#include "cluster.h"
#include "compute.h"
#include "model.h"
#include "strategy.h"

#define GiB  1073741824.0
#define MAXL 200
#define O    LAYER_OVERHEAD_S

/* The model (its layers in lay) and the cluster of two node groups that
 * the builders below fill and the tests change; setup resets them. */
extern struct layer lay[MAXL];
extern struct model mod;
extern struct gpu_type gpus[2];
extern struct node_group groups[2];
extern struct cluster clu;

/* A GPT as in Narayanan et al. 2021 (f = 4h GeLU, MHA, learned positions,
 * LM head tied to the embedding), by COSTMODEL.md's formulas:
 * embedding (V + s) h parameters, no FLOPs, no activations;
 * block 12h^2 + 13h parameters, 24h^2 + 4sh forward FLOPs per token,
 * 34h activation bytes per token (Korthikanti 2022, SP form);
 * head V*h parameters (the tied copy the last stage holds, as
 * model_derive_layers keeps it), 2hV FLOPs per token, 4h activation bytes.
 * Into mod and lay: L blocks, hidden h, a heads, vocabulary V, sequence s. */
void gpt(int L, int h, int a, int V, int s);

/* A toy with round numbers: h = 1000 (8 heads of 125, 8 KV heads), f =
 * 4000 GeLU, rotary positions, V = 1000, s = 1000; embedding (5e6
 * parameters, no FLOPs), 4 blocks of 1e7 parameters and 1.004e9 FLOPs per
 * token, of which the attention core 4*s*a*d = 4e6 and the GEMMs 1e9; head
 * of 5e6 parameters and 5e8 FLOPs per token. On the 1 TFLOP/s GPU of
 * toy_cluster a block's GEMMs take 1 s per sequence of 1000 tokens. Into
 * mod and lay. */
void toy(void);

/* The checked fixture: clears lay; group 0: A100-like (312 TFLOP/s,
 * 80 GiB) at constant efficiency 1, NVLink 300 GB/s, 200 GB/s per node;
 * group 1: same nodes with a GPU of half the peak. No latencies, NCCL
 * efficiency 1. The allowance is the user's 0 unless a test sets it. */
void setup(void);

/* For the toy: a 1 TFLOP/s GPU with 1 TB/s HBM, links of 100 GB/s (group
 * 1's GPU half the peak). */
void toy_cluster(void);

/* A 1F1B strategy of tp, cp, pp stages, dp, micro-batches of mbs out of
 * gbs sequences of seq tokens: EP 1, vp 1, no recomputation, FlashAttention;
 * first[] and group[] zero (the caller sets the stages). */
struct strategy strat(int tp, int cp, int pp, int dp, int mbs, int gbs,
		      int seq);

/* Expected seconds of one toy layer per micro-batch of one sequence on one
 * GPU of peak P (eff_max 1, no GEMM curve) and HBM bandwidth hbm, at TP t,
 * CP c, sequence parallel sp, FlashAttention-2, fused norms (README "Cost
 * model", compute.h):
 *   tok = 1000/c tokens, n = tok/t tokens' worth of GEMM work per GPU;
 *   GEMMs: (F - A) n / P; attention core: CAUSAL_SHARE * 4e6 n / (P *
 *   FLASH_RATE), backward x FLASH_BWD_FLOPS / FLASH_BWD_RATE;
 *   memory-bound bytes per token, over hbm * COMPUTE_HBM_EFF (rows = 1/t
 *   with SP or t = 1, else 1):
 *     block: 2 norms + 2 residual adds of the 1000-wide bf16 row,
 *            (2 NORM_FUSED + 2 RESIDUAL) * 2000 * rows; GeLU 2 rows of f,
 *            2 * 4000 * 2 / t; rotary reads and writes q and k, 2 * (8 + 8)
 *            * 125 * 2 / t;
 *     head:  the final norm NORM_FUSED * 2000 * rows + the loss
 *            CE_FWD_BYTES * 1000 / t (backward: CE_BWD_BYTES * 1000 / t,
 *            not MEM_BWD x);
 *     embedding: its output row, 2 * 2000 (rotary: no position add);
 *   forward: GEMMs + attention + memory + LAYER_OVERHEAD_S; backward: 2 x
 *   GEMMs + the attention backward + MEM_BWD x (memory + overhead). */
struct part {
	double gemm, attn, mem, fwd, bwd;
};

/* x with fwd and bwd summed from its gemm, attn and mem (the last two
 * lines above). */
struct part finish(struct part x);

/* A toy block, the toy's head and its embedding by the formulas above. */
struct part toy_block(double P, double hbm, int t, int c, bool sp);
struct part toy_head(double P, double hbm, int t, int c, bool sp);
struct part toy_emb(double hbm, int c);

/* fwd + bwd */
double fb(struct part x);
#endif /* TESTUTIL_COST_FIXTURE */

/* ---- the launch-file plans ----
 * Shared by check_emit, check_emit_fields and check_trainer, which define
 * TESTUTIL_EMIT_FIXTURE before including this header. */
#ifdef TESTUTIL_EMIT_FIXTURE
#include <stdbool.h>

#include "cluster.h"
#include "emit.h"
#include "model.h"
#include "strategy.h"
#include "trainer.h"

/* A plan: its model, its cluster (c.group is g, its GPU types the
 * fixture's H100, A100 and L40S, indices 0 to 2) and its strategy. */
struct fix {
	struct model m;
	struct cluster c;
	struct node_group g[2];
	struct strategy s;
};

/* The plans: HOMO and HETERO are demo-like (HETERO the demo's model and
 * cluster with 1F1B), MOE a MoE plan with EP, LONG a long-context plan with
 * CP, INTERLEAVED interleaved 1F1B, ZERO3 ZeRO-3 data parallelism, ZBV the
 * ZB-V schedule (torchtitan only). */
enum { HOMO,
       HETERO,
       INTERLEAVED,
       OVERLAP_FP8,
       MOE,
       LONG,
       ZERO3,
       ZBV,
       N_CASE };

/* Their names, as the directories under tests/data/golden. */
extern const char *const case_names[N_CASE];

/* Sets node group i of f's cluster to nodes nodes of gpn GPUs of type gpu
 * (0 to 2), grows n_group to hold it and recounts total_gpus. */
void group(struct fix *f, int i, const char *name, int nodes, int gpn, int gpu);

/* Makes f's cluster the one named name, with no groups yet. */
void cluster(struct fix *f, const char *name);

/* Degrees and batch; layers[k] layers (embedding and head included) in
 * stage k, pipeline rank p on node group grp[p]. */
void plan(struct fix *f, int tp, int cp, int pp, int vp, int dp, int mbs, int gbs,
	  const int *layers, const unsigned char *grp);

/* Fills f with plan which (HOMO to ZBV). The strings it points to are
 * static: nothing to free. */
void fixture(struct fix *f, int which);

/* "dir/name", malloc'd (caller frees). */
char *path2(const char *dir, const char *name);

/* The whole file dir/name, which must exist, malloc'd (caller frees). */
char *read_in(const char *dir, const char *name);

/* Removes dir and everything under it, or dir alone if it is no
 * directory. */
void rm_tree(const char *dir);

/* A new empty directory; caller frees the name and removes the tree. */
char *tmpdir(void);

/* Emits format for the fixture into a fresh directory, which must work;
 * returns it (caller frees the name and removes the tree). */
char *emit_fix(const char *format, const struct fix *f);

/* The trainer of each format, for trainer_check. */
extern const enum trainer format_trainer[EMIT_COUNT];

/* The trainer rule that refuses plan cs in format fm (TRAINERS.md), or
 * NULL when the format runs it: DeepSpeed has no interleaving and no CP,
 * Megatron-LM (so Slurm) and NeMo no ZeRO-3. */
const char *golden_refusal(int cs, int fm);

/* Emits format for f and returns the text of file name (malloc'd), or NULL
 * when refusable and the trainer rules refuse the plan (a plan a trainer
 * cannot run may be refused instead of emitted with a comment). */
char *emit_text(const char *format, const struct fix *f, const char *name,
		bool refusable);

/* Shell-like words of text: blanks separate, '...' and "..." quote,
 * backslash-newline joins, # starts a comment at a word's start. Returns a
 * NULL-terminated malloc'd array of malloc'd words (free with words_free). */
char **words(const char *text);
void words_free(char **w);

/* The word after flag, or NULL. */
const char *value(char **w, const char *flag);

/* The word after flag, which must be there, as an int. */
int ivalue(char **w, const char *flag);

/* True if w holds the word flag. */
bool has(char **w, const char *flag);

/* True if words w hold want: "--flag" or "--flag=value". */
bool has_arg(char **w, const char *want);

/* The text between the line starting with from and the next line that
 * starts with to (malloc'd); both must be there. */
char *between(const char *text, const char *from, const char *to);

/* True if text has the whole line. */
bool has_line(const char *text, const char *line);
#endif /* TESTUTIL_EMIT_FIXTURE */

#endif
