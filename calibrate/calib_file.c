/* calib_file.c: the calibrated cluster file: the source file with the
 * fitted constants and a "calibration" block, written as one transaction
 * (see calibrate.h calib_write). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cluster.h"
#include "json.h"
#include "outfile.h"
#include "util.h"

const char *calib_status_name(enum calib_status status)
{
	static const char *const names[] = { "fitted", "not exercised", "not separable",
					     "no gain", "kept" };

	return names[status];
}

/* v in the cluster file's unit of param (GFLOP for a half-point). */
static double file_value(enum calib_param param, double v)
{
	return param == CALIB_EFF_HALF ? v / 1e9 : v;
}

/* Rounds to 4 significant digits, so that the file reads as a person would
 * write it (the fit's precision is far coarser). */
static double round4(double v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%.4g", v);
	return strtod(buf, NULL);
}

static void set_num(cJSON *o, const char *key, double v)
{
	if (cJSON_GetObjectItemCaseSensitive(o, key))
		cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateNumber(v));
	else
		cJSON_AddNumberToObject(o, key, v);
}

/* The object of c's GPU type or node group index in doc, or NULL. */
static cJSON *target(cJSON *doc, const struct cluster *c, enum calib_param param, int index)
{
	cJSON *it;

	if (!calib_param_per_group(param))
		return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "gpu_types"),
							c->gpu[index].name);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "groups"))
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsString(name) && strcmp(name->valuestring, c->group[index].name) == 0)
			return it;
	}
	return NULL;
}

static cJSON *stats_json(const struct calib_stats *s)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "mape_pct", round4(s->mape));
	if (isfinite(s->spearman))
		cJSON_AddNumberToObject(o, "spearman", round4(s->spearman));
	else
		cJSON_AddNullToObject(o, "spearman");
	cJSON_AddNumberToObject(o, "oom_agree", s->oom_agree);
	cJSON_AddNumberToObject(o, "runs", s->n_all);
	return o;
}

static cJSON *block(const struct cluster *c, const struct calib_result *res, const char *runs_path)
{
	cJSON *b = cJSON_CreateObject(), *ks = cJSON_CreateArray(), *err = cJSON_CreateObject(), *mem;

	cJSON_AddStringToObject(b, "tool", "ampplan calibrate");
	cJSON_AddStringToObject(b, "runs", runs_path);
	cJSON_AddNumberToObject(b, "runs_used", res->n_runs);
	cJSON_AddNumberToObject(b, "runs_timed", res->n_timed);
	cJSON_AddBoolToObject(b, "kept_file_values", res->kept);
	for (int j = 0; j < res->n_k; j++) {
		const struct calib_const *k = &res->k[j];
		cJSON *o = cJSON_CreateObject();
		bool grp = calib_param_per_group(k->param);

		cJSON_AddStringToObject(o, "key", calib_param_key(k->param));
		cJSON_AddStringToObject(o, grp ? "group" : "gpu_type",
					grp ? c->group[k->index].name : c->gpu[k->index].name);
		cJSON_AddNumberToObject(o, "before", round4(file_value(k->param, k->before)));
		cJSON_AddNumberToObject(o, "after", round4(file_value(k->param, k->after)));
		cJSON_AddNumberToObject(o, "sensitivity", round4(k->sensitivity));
		cJSON_AddStringToObject(o, "status", calib_status_name(k->status));
		cJSON_AddItemToArray(ks, o);
	}
	cJSON_AddItemToObject(b, "constants", ks);
	cJSON_AddItemToObject(err, "fit_before", stats_json(&res->fit_before));
	cJSON_AddItemToObject(err, "fit_after", stats_json(&res->fit_after));
	cJSON_AddItemToObject(err, "leave_one_out_before", stats_json(&res->cv_before));
	cJSON_AddItemToObject(err, "leave_one_out_after", stats_json(&res->cv_after));
	cJSON_AddItemToObject(b, "errors", err);
	mem = cJSON_AddObjectToObject(b, "memory_allowance");
	cJSON_AddNumberToObject(mem, "runs_with_peak", res->mem.n_peak);
	if (res->mem.before >= 0)
		cJSON_AddNumberToObject(mem, "before_GiB", round4(res->mem.before / 1073741824.0));
	else
		cJSON_AddStringToObject(mem, "before_GiB", "estimate");
	if (res->mem.after >= 0)
		cJSON_AddNumberToObject(mem, "after_GiB", round4(res->mem.after / 1073741824.0));
	else
		cJSON_AddStringToObject(mem, "after_GiB", "estimate");
	cJSON_AddBoolToObject(mem, "fitted", res->mem.fitted);
	cJSON_AddNumberToObject(mem, "peak_mape_before_pct", round4(res->mem.mape_before));
	cJSON_AddNumberToObject(mem, "peak_mape_after_pct", round4(res->mem.mape_after));
	cJSON_AddNumberToObject(mem, "peak_mape_left_out_pct", round4(res->mem.cv_after));
	return b;
}

/* cJSON's text with a space after each key's colon (cJSON writes a tab),
 * as the shipped files are written; a tab never occurs inside a string
 * (cJSON escapes it). Consumes text; returns a malloc'd string. */
static char *spaced(char *text)
{
	char *out = xmalloc(strlen(text) + 2), *w = out;

	for (const char *p = text; *p; p++)
		*w++ = p[0] == '\t' && p > text && p[-1] == ':' ? ' ' : *p;
	*w++ = '\n';
	*w = '\0';
	cJSON_free(text);
	return out;
}

int calib_write(const char *src, const char *out, const struct cluster *c,
		const struct calib_result *res, const char *runs_path, struct err *e)
{
	cJSON *doc = json_load(src, e);
	struct outfile_set *t = NULL;
	char *text = NULL;
	int rc = -1;

	if (!doc)
		return -1;
	for (int j = 0; j < res->n_k; j++) {
		const struct calib_const *k = &res->k[j];
		cJSON *o;

		if (k->status != CALIB_FITTED)
			continue;
		if (!(o = target(doc, c, k->param, k->index))) {
			err_set(e, "%s: no entry for %s '%s' to write %s into", src,
				calib_param_per_group(k->param) ? "node group" : "GPU type",
				calib_param_per_group(k->param) ? c->group[k->index].name : c->gpu[k->index].name,
				calib_param_key(k->param));
			goto done;
		}
		set_num(o, calib_param_key(k->param), round4(file_value(k->param, k->after)));
		/* a fitted fp8_efficiency_max comes later and replaces it */
		if (k->param == CALIB_EFF_MAX && c->gpu[k->index].peak_fp8_flops > 0)
			set_num(o, "fp8_efficiency_max", round4(c->gpu[k->index].fp8_eff_max));
	}
	if (res->mem.fitted)
		set_num(doc, "memory_allowance_GiB", round4(res->mem.after / 1073741824.0));
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "calibration");
	cJSON_AddItemToObject(doc, "calibration", block(c, res, runs_path));
	text = spaced(cJSON_Print(doc));
	t = outfile_create();
	if (outfile_add(t, out, text, strlen(text), 0644, e) || outfile_commit(t, e))
		goto done;
	rc = 0;
done:
	outfile_free(t);
	free(text);
	cJSON_Delete(doc);
	return rc;
}
