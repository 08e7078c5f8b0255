/* compute.c: the compute time of a layer per micro-batch, analytic or
 * interpolated from measured points, with recomputation, and the time of the
 * optimizer step. */
#include "compute.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cluster.h"
#include "model.h"
#include "strategy.h"
#include "util.h"

/* Attention core FLOPs per token at sequence length seq: QK^T and AV, each
 * 2*s*d per head, 4*s*a*d in all (COSTMODEL.md "FLOPs"; Narayanan et al.
 * 2021 Sec. 5.1 / Appendix: the 4*s*h term per layer with a*d = h). Counted
 * whole, as the model-FLOPs convention does, though a causal kernel executes
 * about half; the GPU's calibrated efficiency absorbs the difference. */
static double attn_per_token(const struct model *m, int seq)
{
	int a = m->heads > 0 ? m->heads : 1;
	double d = m->head_dim > 0 ? m->head_dim : (double)m->hidden / a;

	return 4.0 * seq * a * d;
}

double compute_attn_flops_per_token(const struct model *m, int l, int seq)
{
	return m->layer[l].kind == LAYER_BLOCK ? attn_per_token(m, seq) : 0;
}

double compute_flops_per_token(const struct model *m, int l, int seq)
{
	const struct layer *ly = &m->layer[l];

	if (ly->kind != LAYER_BLOCK || m->seq <= 0 || seq == m->seq)
		return ly->flops_per_token;
	return ly->flops_per_token + attn_per_token(m, seq) - attn_per_token(m, m->seq);
}

/* Korthikanti et al. 2022 Sec. 5: full recomputation reruns the forward
 * pass of every transformer block (not the embedding nor the head: Megatron
 * checkpoints the blocks only, and Narayanan 2021 Eq. 3 counts the head 3x);
 * selective recomputation reruns the attention core (Sec. 4.2.2 / 5, "core
 * attention"). */
double compute_recompute_flops_per_token(const struct model *m, int l,
					 const struct strategy *s)
{
	if (m->layer[l].kind != LAYER_BLOCK)
		return 0;
	switch (s->recompute) {
	case RECOMPUTE_FULL:
		return compute_flops_per_token(m, l, s->seq);
	case RECOMPUTE_SELECTIVE:
		return compute_attn_flops_per_token(m, l, s->seq);
	default:
		return 0;
	}
}

/* The GEMM-efficiency curve of cluster.h: a saturating function of the
 * work per GPU, eff_max * w / (w + w_half) (w_half: the work at which half of
 * eff_max is reached; small per-GPU GEMMs at high TP run less efficiently,
 * COSTMODEL.md "Compute time"). */
double compute_eff(const struct gpu_type *g, double w)
{
	if (g->eff_half_flop <= 0)
		return g->eff_max;
	if (w <= 0)
		return 0;
	return g->eff_max * w / (w + g->eff_half_flop);
}

static bool measure_ok(const struct layer_measure *p)
{
	return p->mbs >= 1 && isfinite(p->fwd_s) && p->fwd_s > 0 &&
	       isfinite(p->bwd_s) && p->bwd_s >= 0;
}

/* Measured profile (AMP, Li et al. 2022 Sec. 3.2: per layer, GPU type and
 * TP degree). Among the points of layer ly for GPU name, s->tp and s->seq,
 * linear interpolation in mbs between the nearest points below and above;
 * outside their range, proportional to mbs from the nearest point. A point
 * with bwd_s = 0 has no measured backward: 2 x fwd_s (AMP's assumption).
 * CP is applied as a perfect split of the measured time by c, as in the
 * analytic model. Returns 1 with *fwd, *bwd set; 0 if no point matches
 * (the caller falls back to the analytic time, even if the layer has points
 * for this GPU at other tp or seq); -1 with e set for an invalid point. */
static int measured(const struct layer *ly, int l, const char *gpu,
		    const struct strategy *s, double *fwd, double *bwd,
		    struct err *e)
{
	const struct layer_measure *lo = NULL, *hi = NULL;
	double f, b, flo, fhi, blo, bhi;

	for (int i = 0; i < ly->n_measure; i++) {
		const struct layer_measure *p = &ly->measure[i];

		if (!p->gpu || strcmp(p->gpu, gpu) != 0 || p->tp != s->tp ||
		    p->seq != s->seq)
			continue;
		if (!measure_ok(p))
			return err_set(e, "layer %d: measured point %d for '%s' "
				       "(tp %d, mbs %d, seq %d) needs mbs >= 1, "
				       "fwd_s > 0 and bwd_s >= 0",
				       l, i, gpu, p->tp, p->mbs, p->seq);
		if (p->mbs <= s->mbs && (!lo || p->mbs > lo->mbs))
			lo = p;
		if (p->mbs >= s->mbs && (!hi || p->mbs < hi->mbs))
			hi = p;
	}
	if (!lo && !hi)
		return 0;
	if (lo && hi && lo->mbs != hi->mbs) {
		double x = (double)(s->mbs - lo->mbs) / (hi->mbs - lo->mbs);

		flo = lo->fwd_s;
		fhi = hi->fwd_s;
		blo = lo->bwd_s > 0 ? lo->bwd_s : 2 * flo;
		bhi = hi->bwd_s > 0 ? hi->bwd_s : 2 * fhi;
		f = flo + x * (fhi - flo);
		b = blo + x * (bhi - blo);
	} else {
		const struct layer_measure *p = lo ? lo : hi;
		double r = (double)s->mbs / p->mbs;

		f = p->fwd_s * r;
		b = (p->bwd_s > 0 ? p->bwd_s : 2 * p->fwd_s) * r;
	}
	*fwd = f / s->cp;
	*bwd = b / s->cp;
	return 1;
}

/* Analytic (COSTMODEL.md "Compute time"; Narayanan et al. 2021 Sec. 5.1):
 * forward = F * b * s / (t*c) / (peak * eff(w)), F the forward FLOPs per
 * token, w = F * b * s / (t*c) the forward FLOPs per GPU per micro-batch;
 * backward = 2 x forward (Narayanan 2021 Sec. 5.1: backward is twice the
 * forward's GEMMs). Recomputation (full: the block's forward; selective: the
 * attention core) at the layer's forward rate: recompute = fwd * R / F, and
 * likewise the attention core's share attn_fwd = fwd * 4sad / F, for
 * measured times as well. */
int compute_layer(struct layer_time *t, const struct model *m, int l,
		  const struct gpu_type *g, const struct strategy *s,
		  struct err *e)
{
	const struct layer *ly = &m->layer[l];
	double F = compute_flops_per_token(m, l, s->seq);
	double fwd = 0, bwd = 0;
	int rc = ly->n_measure > 0 && g->name
			 ? measured(ly, l, g->name, s, &fwd, &bwd, e)
			 : 0;

	if (rc < 0)
		return -1;
	if (rc == 0) {
		double w = F * s->mbs * s->seq / ((double)s->tp * s->cp);

		fwd = w > 0 ? w / (g->peak_flops * compute_eff(g, w)) : 0;
		bwd = 2 * fwd;
	}
	t->fwd = fwd;
	t->bwd = bwd;
	t->attn_fwd = F > 0 ? fwd * compute_attn_flops_per_token(m, l, s->seq) / F : 0;
	t->recompute = F > 0 ? fwd * compute_recompute_flops_per_token(m, l, s) / F : 0;
	return 0;
}

/* Adam step, memory-bound: COMPUTE_ADAM_BYTES of HBM traffic per parameter
 * this GPU updates (its ZeRO shard) over its HBM bandwidth. Adam itself reads
 * the fp32 gradient, master weight, m and v (16 bytes) and writes master, m,
 * v and the bf16 weight (14); Megatron's mixed-precision step adds the
 * gradient unscale / inf check, norm and clipping passes and zeroes the
 * buffers, at less than peak bandwidth: 160 bytes, calibrated on the
 * single-micro-batch rows of Korthikanti et al. 2022 Table 5 (make
 * validate). */
double compute_optimizer(const struct gpu_type *g, double params)
{
	if (g->hbm_bw <= 0)
		return 0;
	return params * COMPUTE_ADAM_BYTES / g->hbm_bw;
}
