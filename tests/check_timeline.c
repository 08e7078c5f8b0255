/* check_timeline.c: the pipeline timeline picture (timeline.h): the SVG
 * of simulated iterations rendered to PNG (rsvg-convert) and checked pixel
 * by pixel; --timeline through the CLI. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "timeline.h"
#include "util.h"

/* A balanced picture: every virtual stage f, b, w seconds, no sends,
 * tails or labels. */
static struct timeline_in *balanced(enum schedule sc, int pp, int vp, int m, double f, double b,
				    double w)
{
	struct timeline_in *in = xcalloc(1, sizeof *in);

	in->sim.schedule = sc;
	in->sim.pp = pp;
	in->sim.vp = vp;
	in->sim.m = m;
	for (int k = 0; k < pp * vp; k++) {
		in->sim.fwd[k] = f;
		in->sim.bwd[k] = b;
		in->sim.wgt[k] = w;
	}
	return in;
}

static void simulate(struct sim_result *sim, const struct timeline_in *in)
{
	struct err e = { "" };

	ck_assert_msg(sim_run(sim, &in->sim, &e) == 0, "%s", e.msg);
}

/* Decodes an 8-bit RGB or RGBA PNG (no interlace) and prints "W H", then
 * "#rrggbb" for each (x, y) pair of the arguments. */
static const char png_py[] =
	"import sys, zlib, struct\n"
	"d = open(sys.argv[1], 'rb').read()\n"
	"assert d[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
	"i, idat = 8, b''\n"
	"while i < len(d):\n"
	"    n, t = struct.unpack('>I4s', d[i:i + 8]); c = d[i + 8:i + 8 + n]; i += 12 + n\n"
	"    if t == b'IHDR': w, h, bd, ct, _, _, il = struct.unpack('>IIBBBBB', c)\n"
	"    elif t == b'IDAT': idat += c\n"
	"assert bd == 8 and ct in (2, 6) and il == 0, (bd, ct, il)\n"
	"bpp = 4 if ct == 6 else 3\n"
	"raw = zlib.decompress(idat); stride = w * bpp; rows = []; prev = bytearray(stride); p = 0\n"
	"for y in range(h):\n"
	"    f = raw[p]; ln = bytearray(raw[p + 1:p + 1 + stride]); p += 1 + stride\n"
	"    for x in range(stride):\n"
	"        a = ln[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0\n"
	"        if f == 1: ln[x] = (ln[x] + a) & 255\n"
	"        elif f == 2: ln[x] = (ln[x] + b) & 255\n"
	"        elif f == 3: ln[x] = (ln[x] + (a + b) // 2) & 255\n"
	"        elif f == 4:\n"
	"            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)\n"
	"            ln[x] = (ln[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255\n"
	"    rows.append(ln); prev = ln\n"
	"print(w, h)\n"
	"for k in range(2, len(sys.argv), 2):\n"
	"    x, y = int(sys.argv[k]), int(sys.argv[k + 1])\n"
	"    print('#%02x%02x%02x' % tuple(rows[y][x * bpp:x * bpp + 3]))\n";

static bool have_rsvg(void)
{
	if (system("command -v rsvg-convert >/dev/null 2>&1") == 0)
		return true;
	fprintf(stderr, "\n*** check_timeline: SKIPPED the rendering checks: rsvg-convert is missing "
			"(Debian: apt-get install librsvg2-bin; make check installs it) ***\n\n");
	return false;
}

/* Renders svg (len bytes) to PNG and reads the pixels at pts[0..2n): *w,
 * *h the image's size, color[i] "#rrggbb". */
static void render(const char *svg, size_t len, const int *pts, int n, int *w, int *h,
		   char color[][8])
{
	char dir[] = "/tmp/check_timeline-XXXXXX", path[128], cmd[4096];
	size_t at;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/t.svg", dir);
	f = fopen(path, "w");
	ck_assert(f && fwrite(svg, 1, len, f) == len && fclose(f) == 0);
	snprintf(path, sizeof path, "%s/png.py", dir);
	f = fopen(path, "w");
	ck_assert(f && fputs(png_py, f) >= 0 && fclose(f) == 0);
	at = (size_t)snprintf(cmd, sizeof cmd,
			      "cd %s && rsvg-convert -f png -o t.png t.svg && python3 png.py t.png", dir);
	for (int i = 0; i < 2 * n; i++)
		at += (size_t)snprintf(cmd + at, sizeof cmd - at, " %d", pts[i]);
	snprintf(cmd + at, sizeof cmd - at, " > out.txt");
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
	snprintf(path, sizeof path, "%s/out.txt", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%d %d", w, h), 2);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(fscanf(f, "%7s", color[i]), 1);
	fclose(f);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The pixel at time t on rank r's row, a quarter down (above the
 * micro-batch numbers). */
static void at(const struct timeline_geom *g, int r, double t, int *pt)
{
	pt[0] = (int)(g->x0 + t * g->px_per_s);
	pt[1] = (int)(g->y[r] + g->row_h / 4);
}

/* The timeline of check_simulate.c's p2p case (send 2, tails), rendered: the PNG is
 * the SVG's size; rank 0's F0 (0-1) is the forward colour, its idle 1-4
 * the background, its wait for the gradient 4-5 the p2p colour, its B0
 * 5-6 the backward colour, its DP tail 6-6.5 and optimizer 6.5-6.75 theirs;
 * rank 1 is idle before its F0 arrives (0-1). */
START_TEST(test_render)
{
	struct timeline_in *in = balanced(SCHED_1F1B, 2, 1, 1, 1, 1, 0);
	struct sim_result sim;
	struct timeline_geom g;
	int pts[16], w, h;
	char color[8][8], *svg;
	size_t len;

	if (!have_rsvg())
		return;
	in->sim.send[1] = 2;
	in->sim.dp[0] = 0.5;
	in->sim.opt[0] = 0.25;
	snprintf(in->title, sizeof in->title, "test <&> \"pipeline\"");
	snprintf(in->rank[0].label, sizeof in->rank[0].label, "rank 0: GPU-%s", "\xc3\xa9");
	simulate(&sim, in);
	ck_assert_rel(sim.makespan, 6.75, 1e-12);
	timeline_geometry(&g, in, &sim);
	at(&g, 0, 0.5, pts);
	at(&g, 0, 2.5, pts + 2);
	at(&g, 0, 4.5, pts + 4);
	at(&g, 0, 5.5, pts + 6);
	at(&g, 0, 6.25, pts + 8);
	at(&g, 0, 6.6, pts + 10);
	at(&g, 1, 0.5, pts + 12);
	at(&g, 1, 2.5, pts + 14);
	svg = timeline_svg(in, &sim, &len);
	ck_assert_uint_eq(strlen(svg), len);
	render(svg, len, pts, 8, &w, &h, color);
	ck_assert_int_eq(w, (int)g.width);
	ck_assert_int_eq(h, (int)g.height);
	ck_assert_str_eq(color[0], TIMELINE_COLOR_F);
	ck_assert_str_eq(color[1], TIMELINE_COLOR_IDLE);
	ck_assert_str_eq(color[2], TIMELINE_COLOR_P2P);
	ck_assert_str_eq(color[3], TIMELINE_COLOR_B);
	ck_assert_str_eq(color[4], TIMELINE_COLOR_DP);
	ck_assert_str_eq(color[5], TIMELINE_COLOR_OPT);
	ck_assert_str_eq(color[6], TIMELINE_COLOR_IDLE);
	ck_assert_str_eq(color[7], TIMELINE_COLOR_F);
	ck_assert_ptr_nonnull(strstr(svg, "test &lt;&amp;&gt; &quot;pipeline&quot;"));
	free(svg);
	sim_free(&sim);
	free(in);
}
END_TEST

/* Many micro-batches (ZB-H1, p = 4, m = 256: 768 passes per rank on ~1140
 * pixels) are drawn pixel column by pixel column: rank 0's warm-up (F0 F1
 * F2 F3, 0-4 s of 3m + 3 = 771 s) still shows as forward, rank 3 is idle
 * until F0 arrives (0-3), and the cool-down of rank 3 is W (its last three
 * passes, 768-771). The file stays small: rects bounded by the pixels. */
START_TEST(test_render_dense)
{
	struct timeline_in *in = balanced(SCHED_ZB_H1, 4, 1, 256, 1, 1, 1);
	struct sim_result sim;
	struct timeline_geom g;
	int pts[6], w, h;
	char color[3][8], *svg;
	size_t len;

	if (!have_rsvg())
		return;
	simulate(&sim, in);
	ck_assert_rel(sim.makespan, 771, 1e-12);
	timeline_geometry(&g, in, &sim);
	at(&g, 0, 2, pts);
	at(&g, 3, 1.5, pts + 2);
	at(&g, 3, 769.5, pts + 4);
	svg = timeline_svg(in, &sim, &len);
	ck_assert_uint_lt(len, 400000);
	render(svg, len, pts, 3, &w, &h, color);
	ck_assert_str_eq(color[0], TIMELINE_COLOR_F);
	ck_assert_str_eq(color[1], TIMELINE_COLOR_IDLE);
	ck_assert_str_eq(color[2], TIMELINE_COLOR_W);
	free(svg);
	sim_free(&sim);
	free(in);
}
END_TEST

/* ZB-V, p = 2, m = 2, t_F = t_B = t_W = 1 (check_simulate.c's test_zb_v_order),
 * rendered: rank 0 runs F0c0 0-1 (stage 0: forward), idles 2-3, then
 * F0c1 3-4 and B0c1 4-5 (stage 3, the V's second leg: the light colours),
 * B0c0 7-8 (first leg: backward), W0c1 8-9 (light W), W0c0 11-12 (W);
 * rank 1 idles 0-1 and runs F0c1 (stage 2) 2-3. The legend names the
 * second leg and the W passes, a tooltip the stage. */
START_TEST(test_render_zb_v)
{
	struct timeline_in *in = balanced(SCHED_ZB_V, 2, 2, 2, 1, 1, 1);
	struct sim_result sim;
	struct timeline_geom g;
	double t0[] = { 0.5, 2.5, 3.5, 4.5, 7.5, 8.5, 11.5 };
	const char *want[] = { TIMELINE_COLOR_F, TIMELINE_COLOR_IDLE, TIMELINE_COLOR_F2,
			       TIMELINE_COLOR_B2, TIMELINE_COLOR_B, TIMELINE_COLOR_W2,
			       TIMELINE_COLOR_W, TIMELINE_COLOR_IDLE, TIMELINE_COLOR_F2 };
	int pts[18], w, h;
	char color[9][8], *svg;
	size_t len;

	if (!have_rsvg())
		return;
	simulate(&sim, in);
	ck_assert_rel(sim.makespan, 13, 1e-12);
	timeline_geometry(&g, in, &sim);
	for (int i = 0; i < 7; i++)
		at(&g, 0, t0[i], pts + 2 * i);
	at(&g, 1, 0.5, pts + 14);
	at(&g, 1, 2.5, pts + 16);
	svg = timeline_svg(in, &sim, &len);
	ck_assert_ptr_nonnull(strstr(svg, "V's second leg (lighter)"));
	ck_assert_ptr_nonnull(strstr(svg, "W (weight gradients)"));
	ck_assert_ptr_nonnull(strstr(svg, "<title>F0 chunk 1 (stage 3): 3-4 s</title>"));
	render(svg, len, pts, 9, &w, &h, color);
	ck_assert_int_eq(w, (int)g.width);
	for (int i = 0; i < 9; i++)
		ck_assert_msg(strcmp(color[i], want[i]) == 0, "point %d: %s, want %s", i, color[i],
			      want[i]);
	free(svg);
	sim_free(&sim);
	free(in);
}
END_TEST

/* --timeline of the new schedules through the CLI: the planner's best
 * zb-v plan of Llama 3 8B on DGX H100 at global batch 64 draws and renders;
 * a what-if zb-v layout puts stages 0 and 7 on rank 0 (E+1, 4+L), 1 and 6
 * on rank 1 (2, 7), 3 and 4 on rank 3 (4, 5), the V of strategy_rank;
 * interleaved-zb draws its W passes. */
START_TEST(test_cli_zb)
{
	char dir[] = "/tmp/check_timeline-zb-XXXXXX", args[1024], cmd[1200], *out, *err, *svg;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(args, sizeof args,
		 "--model profiles/llama3-8b.json --cluster clusters/dgx-h100.json --gbs 64 "
		 "--schedule zb-v --timeline %s/v.svg",
		 dir);
	rc = run_ampplan(args, &out, &err);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof cmd, "%s/v.svg", dir);
	svg = read_file(cmd);
	ck_assert_ptr_nonnull(svg);
	ck_assert_ptr_nonnull(strstr(svg, "zb-v/v2"));
	ck_assert_ptr_nonnull(strstr(svg, "s simulated"));
	ck_assert_ptr_nonnull(strstr(svg, "W (weight gradients)"));
	free(svg);
	if (have_rsvg()) {
		snprintf(cmd, sizeof cmd, "rsvg-convert -f png -o %s/v.png %s/v.svg", dir, dir);
		ck_assert_int_eq(system(cmd), 0);
	}

	snprintf(args, sizeof args,
		 "--model profiles/llama3-8b.json --cluster clusters/dgx-a100.json --tp 8 --pp 4 "
		 "--dp 4 --cp 1 --mbs 1 --gbs 32 --seq 2048 --schedule zb-v "
		 "--layout 'E+1|2|3|4|5|6|7|4+L' --timeline %s/w.svg",
		 dir);
	rc = run_ampplan(args, &out, &err);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof cmd, "%s/w.svg", dir);
	svg = read_file(cmd);
	ck_assert_ptr_nonnull(svg);
	ck_assert_ptr_nonnull(strstr(svg, "8 micro-batches, zb-v/v2"));
	ck_assert_ptr_nonnull(strstr(svg, ">dgx-a100, layers E+1, 4+L<"));
	ck_assert_ptr_nonnull(strstr(svg, ">dgx-a100, layers 2, 7<"));
	ck_assert_ptr_nonnull(strstr(svg, ">dgx-a100, layers 4, 5<"));
	ck_assert_ptr_nonnull(strstr(svg, "(stage 7)"));
	free(svg);

	snprintf(args, sizeof args,
		 "--model profiles/llama3-8b.json --cluster clusters/dgx-h100.json --gbs 64 --pp 4 "
		 "--schedule interleaved-zb --timeline %s/i.svg",
		 dir);
	rc = run_ampplan(args, &out, &err);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof cmd, "%s/i.svg", dir);
	svg = read_file(cmd);
	ck_assert_ptr_nonnull(svg);
	ck_assert_ptr_nonnull(strstr(svg, "interleaved-zb/v2"));
	ck_assert_ptr_nonnull(strstr(svg, "<title>W0 chunk 1"));
	free(svg);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* --timeline through the CLI: the demo writes an SVG of its top plan (at
 * least two pipeline ranks on the mixed cluster) that renders; with
 * --pick 2 and a missing directory it is exit 1 and the CSV of the same
 * run is not written either; --pick without --emit or --timeline is a
 * usage error. */
START_TEST(test_cli)
{
	char dir[] = "/tmp/check_timeline-cli-XXXXXX", args[1024], cmd[1200], *out, *err, *svg;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(args, sizeof args,
		 "--model profiles/llama70b.json --cluster clusters/mixed.json --timeline %s/t.svg",
		 dir);
	rc = run_ampplan(args, &out, &err);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof cmd, "%s/t.svg", dir);
	svg = read_file(cmd);
	ck_assert_ptr_nonnull(svg);
	ck_assert_ptr_nonnull(strstr(svg, "<svg "));
	ck_assert_ptr_nonnull(strstr(svg, "Llama"));
	ck_assert_ptr_nonnull(strstr(svg, "s simulated"));
	ck_assert_ptr_nonnull(strstr(svg, "rank 0: "));
	ck_assert_ptr_nonnull(strstr(svg, "rank 1: "));
	free(svg);
	if (have_rsvg()) {
		snprintf(cmd, sizeof cmd, "rsvg-convert -f png -o %s/t.png %s/t.svg", dir, dir);
		ck_assert_int_eq(system(cmd), 0);
	}

	snprintf(args, sizeof args,
		 "--model profiles/llama70b.json --cluster clusters/mixed.json --pick 2 "
		 "--timeline %s/no/such/t.svg --csv %s/p.csv",
		 dir, dir);
	rc = run_ampplan(args, &out, &err);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(err, "no/such/t.svg"));
	free(out);
	free(err);
	snprintf(cmd, sizeof cmd, "%s/p.csv", dir);
	ck_assert_int_ne(access(cmd, F_OK), 0);

	/* what-if, interleaved: virtual stage k of the layout on rank k % 4, so
	 * rank 0 holds stages 0 and 4 (E+1, 5), rank 1 stages 1 and 5 (2, 6),
	 * rank 3 stages 3 and 7 (4, 4+L) */
	snprintf(args, sizeof args,
		 "--model profiles/llama3-8b.json --cluster clusters/dgx-a100.json --tp 8 --pp 4 "
		 "--dp 4 --cp 1 --mbs 1 --vp 2 --gbs 32 --seq 2048 "
		 "--layout 'E+1|2|3|4|5|6|7|4+L' --timeline %s/w.svg",
		 dir);
	rc = run_ampplan(args, &out, &err);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof cmd, "%s/w.svg", dir);
	svg = read_file(cmd);
	ck_assert_ptr_nonnull(svg);
	ck_assert_ptr_nonnull(strstr(svg, "TP 8, PP 4, DP 4, CP 1, EP 1, mbs 1, 8 micro-batches, "
					  "interleaved/v2"));
	ck_assert_ptr_nonnull(strstr(svg, ">rank 0: A100-SXM4-80GB<"));
	ck_assert_ptr_nonnull(strstr(svg, ">dgx-a100, layers E+1, 5<"));
	ck_assert_ptr_nonnull(strstr(svg, ">dgx-a100, layers 2, 6<"));
	ck_assert_ptr_nonnull(strstr(svg, ">dgx-a100, layers 4, 4+L<"));
	ck_assert_ptr_null(strstr(svg, ">rank 4: "));
	free(svg);

	rc = run_ampplan("--model profiles/llama70b.json --cluster clusters/mixed.json --pick 2",
			 NULL, &err);
	ck_assert_int_eq(rc, 2);
	ck_assert_ptr_nonnull(strstr(err, "--pick goes with --emit or --timeline"));
	free(err);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("timeline");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_render);
	tcase_add_test(tc, test_render_dense);
	tcase_add_test(tc, test_render_zb_v);
	tcase_add_test(tc, test_cli);
	tcase_add_test(tc, test_cli_zb);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
