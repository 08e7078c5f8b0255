/* progress.c: a long job's progress on stderr (progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "report.h"
#include "util.h"

void progress_init(struct progress *pr, const char *what, const char *path, bool bar)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = must_alloc(open_memstream(&text, &len));

	fputs(what, f);
	if (path) {
		fputs(" '", f);
		report_escaped(f, path);
		fputc('\'', f);
	}
	if (fclose(f) != 0)
		fatal_oom();
	snprintf(pr->what, sizeof pr->what, "%s", text);
	free(text);
	pr->bar = bar;
	pr->start = -1;
	pr->last = 0;
	pr->shown = 0;
}

bool progress_due(struct progress *pr, double done, double now, double *shown)
{
	bool first = pr->start < 0;

	if (first) {
		pr->start = pr->last = now;
		pr->shown = 0;
	}
	if (done > pr->shown)
		pr->shown = done;
	*shown = pr->shown;
	if (done >= 1.0) {
		pr->start = -1;
		return false;
	}
	if (pr->bar)
		return now - pr->start >= 0.5;
	if (now - pr->last < PROGRESS_EVERY_S)
		return false;
	pr->last = now;
	return true;
}

void progress_show(double done, void *arg)
{
	struct progress *pr = arg;
	struct timespec ts;
	double now, shown, start = pr->start;
	int width = 40;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	if (progress_due(pr, done, now, &shown)) {
		if (pr->bar)
			fprintf(stderr, "\rampplan: %s [%.*s%*s] %3.0f%%", pr->what,
				(int)(shown * width), "########################################",
				width - (int)(shown * width), "", 100.0 * shown);
		else
			fprintf(stderr, "ampplan: %s: %.0f%% after %.0f s\n", pr->what,
				100.0 * shown, now - pr->start);
	} else if (done >= 1.0 && pr->bar && start >= 0 && now - start >= 0.5) {
		fputs("\r\033[K", stderr);
	}
}
