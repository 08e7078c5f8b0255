/* timeline.c: --timeline (see timeline.h): the SVG picture of one
 * iteration as simulate.c simulates it, and its geometry. */
#define _POSIX_C_SOURCE 200809L
#include "timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cost.h"
#include "model.h"
#include "outfile.h"
#include "plan.h"
#include "util.h"

/* The picture's layout, in pixels. */
#define G_WIDTH 1600.0
#define G_LABEL 270.0 /* label column left of the plot */
#define G_MEM	190.0 /* memory column right of it */
#define G_TOP	100.0 /* title and legend */
#define G_ROW	34.0
#define G_PITCH 48.0
#define G_AXIS	50.0 /* axis and its caption below the rows */

void timeline_geometry(struct timeline_geom *g, const struct timeline_in *in,
		       const struct sim_result *sim)
{
	double span = sim->makespan > 0 ? sim->makespan : 1;

	g->width = G_WIDTH;
	g->x0 = G_LABEL;
	g->px_per_s = (G_WIDTH - G_LABEL - G_MEM) / span;
	g->row_h = G_ROW;
	for (int r = 0; r < in->sim.pp; r++)
		g->y[r] = G_TOP + r * G_PITCH;
	g->height = G_TOP + in->sim.pp * G_PITCH + G_AXIS;
}

/* Writes s with &, <, > and " escaped, at most max bytes of it (cut at a
 * UTF-8 character boundary, "..." marking the cut). */
static void put_text(FILE *f, const char *s, size_t max)
{
	size_t n = strlen(s), cut = n;

	if (n > max) {
		cut = max;
		while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
			cut--;
	}
	for (size_t i = 0; i < cut; i++)
		switch (s[i]) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(s[i], f);
		}
	if (cut < n)
		fputs("...", f);
}

static void rect(FILE *f, double x, double y, double w, double h, const char *fill)
{
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", x, y,
		w, h, fill);
}

/* Colour categories of a pass: kind x (even, odd chunk), then the p2p wait. */
enum { CAT_P2P = 6,
       CAT_N = 7 };
static const char *const cat_color[CAT_N] = {
	TIMELINE_COLOR_F,
	TIMELINE_COLOR_F2,
	TIMELINE_COLOR_B,
	TIMELINE_COLOR_B2,
	TIMELINE_COLOR_W,
	TIMELINE_COLOR_W2,
	TIMELINE_COLOR_P2P,
};

static int op_cat(const struct sim_op *o)
{
	return 2 * (int)o->kind + (o->chunk & 1);
}

/* The p2p wait before o: [max(free, sent), start), empty if none. */
static bool op_wait(const struct sim_op *o, double *a, double *b)
{
	*a = o->sent > o->free ? o->sent : o->free;
	*b = o->start;
	return *b > *a;
}

/* A row of few enough passes: one rect each, with the micro-batch number
 * where it fits and a tooltip. */
static void row_exact(FILE *f, const struct timeline_in *in, const struct sim_result *sim,
		      int r, const struct timeline_geom *g)
{
	static const char kind_name[] = "FBW";
	double y = g->y[r];

	for (int i = sim->first[r]; i < sim->first[r + 1]; i++) {
		const struct sim_op *o = &sim->op[i];
		double a, b, x = g->x0 + o->start * g->px_per_s, w = (o->end - o->start) * g->px_per_s;
		char num[16];

		if (op_wait(o, &a, &b))
			rect(f, g->x0 + a * g->px_per_s, y, (b - a) * g->px_per_s, g->row_h,
			     TIMELINE_COLOR_P2P);
		if (w <= 0)
			continue;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s>"
			   "<title>%c%d chunk %d (stage %d): %.6g-%.6g s</title></rect>\n",
			x, y, w, g->row_h, cat_color[op_cat(o)],
			w >= 4 ? " stroke=\"#ffffff\" stroke-width=\"0.5\"" : "", kind_name[o->kind],
			o->mb, o->chunk, sim_stage(&in->sim, r, o->chunk), o->start, o->end);
		snprintf(num, sizeof num, "%d", o->mb);
		if (w >= 6.5 * (double)strlen(num) + 4)
			fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"10\" text-anchor=\"middle\" "
				   "fill=\"%s\">%s</text>\n",
				x + w / 2, y + g->row_h / 2 + 3.5,
				o->kind == SIM_F && !(o->chunk & 1) ? "#ffffff" : "#000000", num);
	}
}

/* Adds [a, b) seconds of category cat to the pixel columns of cover. */
static void cover_add(double *cover, int npx, const struct timeline_geom *g, double a, double b,
		      int cat)
{
	double xa = a * g->px_per_s, xb = b * g->px_per_s;

	for (int p = (int)floor(xa); p < npx && p < xb; p++) {
		double lo = p > xa ? p : xa, hi = p + 1 < xb ? p + 1 : xb;

		if (p >= 0 && hi > lo)
			cover[(size_t)p * CAT_N + cat] += hi - lo;
	}
}

/* A row of many passes: each pixel column in the colour that covers most of
 * it (idle if less than half of it is covered), runs merged into one rect. */
static void row_raster(FILE *f, const struct sim_result *sim, int r,
		       const struct timeline_geom *g, int npx)
{
	double *cover = xcalloc((size_t)npx * CAT_N, sizeof *cover);
	int run_cat = -1, run_at = 0;

	for (int i = sim->first[r]; i < sim->first[r + 1]; i++) {
		const struct sim_op *o = &sim->op[i];
		double a, b;

		if (op_wait(o, &a, &b))
			cover_add(cover, npx, g, a, b, CAT_P2P);
		cover_add(cover, npx, g, o->start, o->end, op_cat(o));
	}
	for (int p = 0; p <= npx; p++) {
		int best = -1;
		double sum = 0, most = 0;

		for (int c = 0; p < npx && c < CAT_N; c++) {
			sum += cover[(size_t)p * CAT_N + c];
			if (cover[(size_t)p * CAT_N + c] > most) {
				most = cover[(size_t)p * CAT_N + c];
				best = c;
			}
		}
		if (sum < 0.5)
			best = -1;
		if (p == npx || best != run_cat) {
			if (run_cat >= 0)
				rect(f, g->x0 + run_at, g->y[r], p - run_at, g->row_h, cat_color[run_cat]);
			run_cat = best;
			run_at = p;
		}
	}
	free(cover);
}

/* Tick spacing: 1, 2 or 5 x 10^k seconds, about 8 ticks over span. */
static double tick_step(double span, int *decimals)
{
	double raw = span / 8, mag = pow(10, floor(log10(raw))), q = raw / mag;
	double step = mag * (q <= 1 ? 1 : q <= 2 ? 2
				  : q <= 5	 ? 5
						 : 10);
	int d = (int)-floor(log10(step) + 1e-9);

	*decimals = d > 0 ? d : 0;
	return step;
}

static void legend(FILE *f, const struct timeline_in *in)
{
	struct legend_item {
		const char *color, *text;
	} item[10];
	int n = 0;
	double x = 10;
	bool zb = schedule_zero_bubble(in->sim.schedule);

	item[n++] = (struct legend_item){ TIMELINE_COLOR_F, "forward" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_B,
					  zb ? "backward B (input gradients)" : "backward" };
	if (zb)
		item[n++] = (struct legend_item){ TIMELINE_COLOR_W, "W (weight gradients)" };
	if (schedule_v(in->sim.schedule))
		item[n++] = (struct legend_item){ TIMELINE_COLOR_F2, "V's second leg (lighter)" };
	else if (in->sim.vp > 1)
		item[n++] = (struct legend_item){ TIMELINE_COLOR_F2, "odd virtual stage (lighter)" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_P2P, "waiting for p2p (exposed)" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_DP, "DP reduction (exposed)" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_OPT, "optimizer step" };
	item[n++] = (struct legend_item){ TIMELINE_COLOR_IDLE, "idle (bubble)" };
	for (int i = 0; i < n; i++) {
		fprintf(f, "<rect x=\"%.1f\" y=\"62\" width=\"14\" height=\"14\" fill=\"%s\" "
			   "stroke=\"#999999\" stroke-width=\"0.5\"/>\n",
			x, item[i].color);
		fprintf(f, "<text x=\"%.1f\" y=\"74\" font-size=\"12\">%s</text>\n", x + 19,
			item[i].text);
		x += 19 + 6.6 * (double)strlen(item[i].text) + 18;
	}
}

/* The memory column of rank r: "peak / capacity GiB" and a bar. */
static void memory(FILE *f, const struct timeline_rank *k, double x, double y)
{
	double gib = 1024.0 * 1024.0 * 1024.0;
	double share = k->cap_bytes > 0 ? k->peak_bytes / k->cap_bytes : 0;

	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%.1f / %.1f GiB (%.0f%%)</text>\n",
		x, y + 13, k->peak_bytes / gib, k->cap_bytes / gib, 100 * share);
	rect(f, x, y + 20, 150, 8, "#e6e6e6");
	rect(f, x, y + 20, 150 * (share < 1 ? share : 1), 8, share > 0.95 ? "#e15759" : "#76b7b2");
}

char *timeline_svg(const struct timeline_in *in, const struct sim_result *sim, size_t *len)
{
	struct timeline_geom g;
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	double plot_w = G_WIDTH - G_LABEL - G_MEM, axis_y, step;
	int npx = (int)ceil(plot_w), decimals;

	if (!f)
		fatal_oom();
	timeline_geometry(&g, in, sim);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		   "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
		g.width, g.height, g.width, g.height);
	rect(f, 0, 0, g.width, g.height, TIMELINE_COLOR_PAGE);
	fputs("<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", f);
	put_text(f, in->title, sizeof in->title);
	fputs("</text>\n<text x=\"10\" y=\"46\" font-size=\"13\">", f);
	put_text(f, in->subtitle, sizeof in->subtitle);
	fputs("</text>\n", f);
	legend(f, in);
	for (int r = 0; r < in->sim.pp; r++) {
		const struct timeline_rank *k = &in->rank[r];
		double y = g.y[r], t = sim->pipe_end[r], dp = in->sim.dp[r], opt = in->sim.opt[r];

		fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\">", y + 13);
		put_text(f, k->label, 36);
		fprintf(f, "</text>\n<text x=\"10\" y=\"%.1f\" font-size=\"11\" fill=\"#555555\">",
			y + 28);
		put_text(f, k->detail, 40);
		fputs("</text>\n", f);
		rect(f, g.x0, y, plot_w, g.row_h, TIMELINE_COLOR_IDLE);
		if (sim->first[r + 1] - sim->first[r] > npx / 2)
			row_raster(f, sim, r, &g, npx);
		else
			row_exact(f, in, sim, r, &g);
		if (dp > 0)
			rect(f, g.x0 + t * g.px_per_s, y, dp * g.px_per_s, g.row_h, TIMELINE_COLOR_DP);
		if (opt > 0)
			rect(f, g.x0 + (t + dp) * g.px_per_s, y, opt * g.px_per_s, g.row_h,
			     TIMELINE_COLOR_OPT);
		memory(f, k, G_WIDTH - G_MEM + 14, y);
	}
	axis_y = G_TOP + in->sim.pp * G_PITCH - 6;
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
		g.x0, axis_y, g.x0 + plot_w, axis_y);
	step = tick_step(sim->makespan > 0 ? sim->makespan : 1, &decimals);
	for (int i = 0; i * step <= (sim->makespan > 0 ? sim->makespan : 1) * (1 + 1e-9); i++) {
		double x = g.x0 + i * step * g.px_per_s;

		fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#000000\"/>\n"
			   "<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.*f</text>\n",
			x, axis_y, x, axis_y + 5, x, axis_y + 18, decimals, i * step);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">time (s)</text>\n",
		g.x0 + plot_w / 2, axis_y + 36);
	fputs("</svg>\n", f);
	if (fclose(f) != 0)
		fatal_oom();
	return text;
}

/* Virtual stage k's layers as the table's layers/stage column writes them
 * (report_layers): "E+10", "30", "30+L". */
static void stage_text(char *buf, size_t n, const struct strategy *s, const struct model *m, int k)
{
	int a = s->first[k], b = s->first[k + 1], blocks = b - a - (a == 0) - (b == m->n_layer);
	char num[16] = "";

	if (blocks > 0)
		snprintf(num, sizeof num, "%s%d", a == 0 ? "+" : "", blocks);
	snprintf(buf, n, "%s%s%s", a == 0 ? "E" : "", num,
		 b != m->n_layer ? "" : a == 0 || blocks > 0 ? "+L"
							     : "L");
}

/* The picture's input for row: the simulation's (sim_input, from
 * cost_stages and cost_ranks), per rank the peak memory and capacity of
 * cost_ranks and its labels, and the title. */
static int timeline_input(struct timeline_in *in, const struct plan_row *row,
			  const struct model *m, const struct cluster *c, struct err *e)
{
	const struct strategy *s = &row->s;
	struct cost_stage *st = xcalloc(MAX_STAGES, sizeof *st);
	struct cost_rank *rk = xcalloc(MAX_STAGES, sizeof *rk);
	struct layer_costs lc;
	int n;

	if (cost_layers(&lc, m, c, s, NULL, e) < 0) {
		free(st);
		free(rk);
		return -1;
	}
	n = cost_stages(st, m, c, s, &lc);
	cost_ranks(rk, m, c, s, &lc);
	sim_input(&in->sim, s, st, n, rk);
	for (int r = 0; r < s->pp; r++) {
		struct timeline_rank *x = &in->rank[r];
		size_t at = 0;

		snprintf(x->label, sizeof x->label, "rank %d: %s", r, c->gpu[rk[r].gpu].name);
		at = (size_t)snprintf(x->detail, sizeof x->detail, "%s, layers ",
				      c->group[rk[r].group].name);
		for (int j = 0, k = r; j < strategy_vp(s) && k < n && at < sizeof x->detail; k = strategy_stage(s, r, ++j)) {
			char one[32];

			stage_text(one, sizeof one, s, m, k);
			at += (size_t)snprintf(x->detail + at, sizeof x->detail - at, "%s%s",
					       k > r ? ", " : "", one);
		}
		x->peak_bytes = rk[r].peak_bytes;
		x->cap_bytes = rk[r].cap_bytes;
	}
	snprintf(in->title, sizeof in->title,
		 "%s: TP %d, PP %d, DP %d, CP %d, EP %d, mbs %d, %d micro-batches, %s%s%.0d, recompute %s, ZeRO %d",
		 m->name, s->tp, s->pp, s->dp, s->cp, s->ep, s->mbs, in->sim.m,
		 schedule_name(s->schedule), in->sim.vp > 1 ? "/v" : "", in->sim.vp > 1 ? in->sim.vp : 0,
		 recompute_name(s->recompute), s->zero);
	cost_layers_free(&lc);
	free(st);
	free(rk);
	return 0;
}

int timeline_stage(struct outfile_set *t, const char *path, const struct plan_row *row,
		   const struct model *m, const struct cluster *c, struct err *e)
{
	struct timeline_in *in = xcalloc(1, sizeof *in);
	struct sim_result sim;
	char *text = NULL;
	size_t len;
	int rc = -1;

	if (timeline_input(in, row, m, c, e) < 0 || sim_run(&sim, &in->sim, e) < 0) {
		err_prefix(e, "--timeline '%s'", path);
		goto done;
	}
	snprintf(in->subtitle, sizeof in->subtitle,
		 "iteration %.3f s (cost model), %.3f s simulated (%+.2f%%), on %s",
		 row->r.iter_s, sim.makespan,
		 row->r.iter_s > 0 ? 100 * (sim.makespan / row->r.iter_s - 1) : 0, c->name);
	text = timeline_svg(in, &sim, &len);
	sim_free(&sim);
	rc = outfile_add(t, path, text, len, 0666, e);
done:
	free(text);
	free(in);
	return rc;
}
