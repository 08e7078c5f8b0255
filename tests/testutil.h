/* testutil.h: helpers shared by the Check suites. */
#ifndef AMPPLAN_TESTUTIL_H
#define AMPPLAN_TESTUTIL_H

#include <check.h>
#include <math.h>

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

/* The whole file at path as a malloc'd NUL-terminated string (caller
 * frees), or NULL if it cannot be opened. */
char *read_file(const char *path);

struct model;

/* A small Llama-style model (hidden 1024, 8 heads of 128, SwiGLU FFN 4096,
 * vocabulary 32000, sequence 2048, bf16) of blocks transformer blocks and a
 * global batch of gbs sequences, its layers derived; caller frees with
 * model_free. */
struct model *test_small_model(int blocks, int gbs);

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
 *     head:  the final norm NORM_FUSED * 2000 * rows + the cross-entropy
 *            CE_BYTES_PER_LOGIT * 1000 / t;
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

#endif
