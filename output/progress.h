/* progress.h: the progress of a long job (the search, writing a large file)
 * on stderr: a bar on a terminal, else a line at most every 5 s, the share
 * shown never going back. */
#ifndef AMPPLAN_PROGRESS_H
#define AMPPLAN_PROGRESS_H

#include <stdbool.h>

/* Seconds between two progress lines (not on a terminal). */
#define PROGRESS_EVERY_S 5.0

/* One job's progress. */
struct progress {
	char what[160]; /* "searching", "writing 'q.json'" (escaped) */
	bool bar;	/* a bar redrawn in place (stderr is a terminal) */
	double start;	/* CLOCK_MONOTONIC seconds of the first report; < 0:
			   not started (a job that ended starts again) */
	double last;	/* of the last line */
	double shown;	/* the highest share reported: what is shown never
			   goes back, however the threads report */
};

/* Sets pr up for job what, followed by path in quotes and escaped
 * (report_escaped) unless path is NULL; bar as in struct progress. */
void progress_init(struct progress *pr, const char *what, const char *path, bool bar);

/* Records that share done (0 to 1) of the job is done at time now
 * (seconds): returns true when a line is due (not on a bar: PROGRESS_EVERY_S
 * after the previous one, or the first report), with *shown the share to
 * print, the highest so far. done >= 1 ends the job (no line). */
bool progress_due(struct progress *pr, double done, double now, double *shown);

/* The callback of plan_opts.progress and report_stream.progress: arg is a
 * struct progress; prints on stderr what progress_due decides (a bar after
 * half a second, erased at the end; or a line "ampplan: WHAT: 40% after
 * 10 s"). The search calls it from its threads one at a time. */
void progress_show(double done, void *arg);

#endif
