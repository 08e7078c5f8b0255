/* fuzz_opts.h: turns fuzzer bytes into bounded search options for the
 * writer and search targets: every degree either searched (0) or one of a
 * few small values, the enums in range or "search" (-1), the switches
 * on/off/search, as the CLI could set them (planner/main.c), with its
 * what-if defaults pinned the way main.c pins them. threads is 1 and the
 * work budget 150 units (strategies), so that one input runs in well under 0.1 s
 * under the sanitizers (600 took up to 0.9 s an input). */
#ifndef AMPPLAN_FUZZ_OPTS_H
#define AMPPLAN_FUZZ_OPTS_H

#include "fuzz_util.h"
#include "plan.h"
#include "strategy.h"

/* Reads bytes in order; 0 once they run out. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline unsigned fuzz_byte(struct fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

/* One of the n values in v[], picked by the next byte. */
static inline int fuzz_pick(struct fuzz_in *in, const int *v, int n)
{
	return v[fuzz_byte(in) % (unsigned)n];
}
#define FUZZ_PICK(in, ...) \
	fuzz_pick(in, (const int[]){ __VA_ARGS__ }, \
		  (int)(sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int)))

/* Fills o from the input (o is plan_opts_init'ed here). The rest of the
 * input (if any, at most 63 bytes, NUL-free) becomes the --layout string in
 * the what-if mode, copied to layout[64]. */
static inline void fuzz_opts(struct plan_opts *o, struct fuzz_in *in, char layout[64])
{
	plan_opts_init(o);
	o->threads = 1;
	o->work_budget = 150;
	o->ilp_node_limit = 100;
	o->tp = FUZZ_PICK(in, 0, 0, 1, 2, 4, 8, 3);
	o->pp = FUZZ_PICK(in, 0, 0, 1, 2, 4, 8, 3);
	o->dp = FUZZ_PICK(in, 0, 0, 1, 2, 4, 8, 3);
	o->cp = FUZZ_PICK(in, 0, 0, 1, 2, 4);
	o->mbs = FUZZ_PICK(in, 0, 0, 1, 2, 4, 3);
	o->vp = FUZZ_PICK(in, 0, 0, 0, 1, 2, 3);
	o->gbs = FUZZ_PICK(in, 0, 0, 1, 2, 8, 16, 24, 64, 1000);
	o->seq = FUZZ_PICK(in, 0, 0, 1, 64, 96, 128, 4096);
	o->schedule = FUZZ_PICK(in, -1, -1, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_ZB_H1, SCHED_GPIPE);
	o->recompute = FUZZ_PICK(in, -1, -1, RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL);
	o->zero = FUZZ_PICK(in, -1, -1, 0, 1, 2, 3);
	o->trainer = FUZZ_PICK(in, -1, -1, 0, 1, 2, 3);
	o->attn = FUZZ_PICK(in, ATTN_FLASH, ATTN_FLASH1, ATTN_FUSED_SOFTMAX, ATTN_UNFUSED);
	{
		/* its high bits (0 in the older seeds): the recomputation
		 * modules, the deferred LM-head weight gradients and
		 * activation offloading (the two-group fixture's H100 has no
		 * host link: refused there) */
		static const int mods[8] = { 0, 0, RM_LAYERNORM | RM_MLP, RM_MOE | RM_SHARED_EXPERTS,
					     RM_MLA_UP_PROJ | RM_MOE_ACT, RM_ALL, 0, 0 };
		unsigned b = fuzz_byte(in);

		o->unfused_norm = b & 1;
		o->recompute_modules = mods[(b >> 1) & 7];
		o->defer_wgrad = (b >> 4) & 1;
		o->wgrad_limit = o->defer_wgrad ? (int)((b >> 5) & 3) : 0;
		o->offload_modules = b >> 7 ? OM_ATTN_NORM | OM_CORE_ATTN | OM_MLP_NORM : 0;
	}
	o->grad_bytes = FUZZ_PICK(in, 0, 2, 4);
	o->fp8 = FUZZ_PICK(in, -1, 0, 1);
	o->sp = FUZZ_PICK(in, -1, 0, 1);
	o->tp_overlap = FUZZ_PICK(in, -1, 0, 1);
	o->grad_overlap = FUZZ_PICK(in, -1, 0, 1);
	o->param_overlap = FUZZ_PICK(in, -1, 0, 1);
	o->grad_acc_fusion = FUZZ_PICK(in, -1, 0, 1);
	o->keep_infeasible = fuzz_byte(in) & 1;
	o->exhaustive = (fuzz_byte(in) & 15) == 15;

	if (plan_opts_what_if(o)) {
		size_t k = 0;

		while (in->n && k < 63) {
			unsigned ch = fuzz_byte(in);
			if (ch)
				layout[k++] = (char)ch;
		}
		layout[k] = '\0';
		if (k && !o->exhaustive)
			o->layout = layout;
	}
	plan_opts_complete(o);	/* as main.c */
}

#endif
