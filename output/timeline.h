/* timeline.h: --timeline: one iteration of a pipeline schedule as
 * simulate.h simulates it op by op, drawn as an SVG picture. */
#ifndef AMPPLAN_TIMELINE_H
#define AMPPLAN_TIMELINE_H

#include <stddef.h>

#include "simulate.h"

struct err;
struct model;
struct cluster;
struct plan_row;
struct outfile_set;

/* The picture's colours ("#rrggbb"), also checked by the tests on the
 * rendered image. A pass of an odd virtual stage (chunk) of a rank takes the
 * light variant. Idle time (the bubble) is the row's background. */
#define TIMELINE_COLOR_F    "#4e79a7"
#define TIMELINE_COLOR_F2   "#a0cbe8"
#define TIMELINE_COLOR_B    "#f28e2b"
#define TIMELINE_COLOR_B2   "#ffbe7d"
#define TIMELINE_COLOR_W    "#59a14f"
#define TIMELINE_COLOR_W2   "#8cd17d"
#define TIMELINE_COLOR_P2P  "#79706e" /* waiting for a p2p transfer */
#define TIMELINE_COLOR_DP   "#e15759" /* exposed DP reduction / gather */
#define TIMELINE_COLOR_OPT  "#b07aa1" /* optimizer step */
#define TIMELINE_COLOR_IDLE "#eeeeee" /* a rank's row: idle (bubble) */
#define TIMELINE_COLOR_PAGE "#ffffff"

/* One pipeline rank of the picture (its tails: sim_in's dp and opt). */
struct timeline_rank {
	char label[96];	   /* first line: "rank 0: A100-SXM4-40GB" */
	char detail[160];  /* second line: node group and layers */
	double peak_bytes; /* peak memory per GPU, bytes */
	double cap_bytes;  /* the GPU's memory, bytes */
};

/* What the picture shows: the simulation's input (simulate.h), per rank
 * its labels and memory, and the title. Plain value type (large: allocate
 * it). */
struct timeline_in {
	struct sim_in sim;
	struct timeline_rank rank[MAX_STAGES];
	char title[256];    /* first line of the title */
	char subtitle[256]; /* second line */
};

/* Where the picture puts things, in pixels of the SVG's user space (also
 * the rendered PNG's at scale 1): time t of rank r's row is at
 * x = x0 + t * px_per_s, rows span [y[r], y[r] + row_h). */
struct timeline_geom {
	double width, height;
	double x0, px_per_s;
	double y[MAX_STAGES], row_h;
};

/* The geometry timeline_svg uses for in and sim. */
void timeline_geometry(struct timeline_geom *g, const struct timeline_in *in,
		       const struct sim_result *sim);

/* The SVG picture of sim: one row per rank (label, detail, passes, idle
 * time as the row's background, p2p waits shaded, the DP tail and the
 * optimizer step at its end, peak memory / capacity beside it), a time axis
 * in seconds with ticks, a legend and the title. Micro-batch numbers are
 * written in passes wide enough for them; a row with more passes than half
 * its pixels is drawn pixel column by pixel column, each in the colour of
 * the pass that covers most of it. Returns a malloc'd NUL-terminated
 * string (caller frees), *len its length. */
char *timeline_svg(const struct timeline_in *in, const struct sim_result *sim, size_t *len);

/* The timeline of the plan row `row` (its strategy and cost) of model m on
 * cluster c, added to the transaction t as path (outfile.h): nothing is
 * written until outfile_commit(t). Returns 0, or -1 with e set (naming
 * --timeline and path; outfile_conflict(t) when path is another output's). */
int timeline_stage(struct outfile_set *t, const char *path, const struct plan_row *row,
		   const struct model *m, const struct cluster *c, struct err *e);

#endif
