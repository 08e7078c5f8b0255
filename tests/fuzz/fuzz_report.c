/* fuzz_report.c: libFuzzer target for the CSV and JSON writers
 * (report_csv, report_json). A fixed small model (fuzz_util.h, 4 blocks)
 * and one of two small clusters (4 or 8 GPUs, one or two GPU types) are
 * searched with options taken from the input (fuzz_opts.h: degrees,
 * micro-batch, batch, sequence, schedule, recomputation, ZeRO, trainer,
 * kernels, switches, infeasible rows, the exhaustive search, and a --layout
 * string in the what-if mode), bounded to one thread and a small work
 * budget. The ranking is written as CSV and JSON into a temporary
 * directory; the JSON is read back with cJSON and must parse and hold the
 * same rows (count, degrees, micro-batch, the model and cluster names); the
 * CSV must have a header plus one record per row.
 *
 *   make fuzz              every target for FUZZ_SECONDS (default 60)
 *   build/fuzz/fuzz_report tests/fuzz/corpus/report    by hand
 * Seeds: tests/fuzz/corpus/report (option bytes; see fuzz_opts.h). */
#include <cjson/cJSON.h>
#include <math.h>

#include "cluster.h"
#include "cluster_read.h"
#include "fuzz_opts.h"
#include "model.h"
#include "plan.h"
#include "profile.h"
#include "report.h"
#include "util.h"

/* Row i of plan p, expanded into a temporary of the enclosing block. */
#define ROW(p, i) (*plan_row_get((p), (i), &(struct plan_row){ 0 }))

static const char one_group_cluster[] =
	"{\"name\": \"fuzz one node\", \"gpu_types\": {\n"
	"  \"A100-40GB\": {\"peak_bf16_tflops\": 312, \"memory_GiB\": 40, \"hbm_GBps\": 1555,\n"
	"                \"host_link_GBps\": 31.5,\n"
	"                \"efficiency_max\": 0.6, \"efficiency_half_gflop\": 20}},\n"
	" \"groups\": [{\"name\": \"a100\", \"nodes\": 1, \"gpus_per_node\": 4,\n"
	"   \"gpu\": \"A100-40GB\", \"intra_node_GBps\": 300, \"intra_node_latency_us\": 2,\n"
	"   \"inter_node_Gbps\": 200, \"inter_node_latency_us\": 10}]}\n";

static char *model_path, *csv_path, *json_path;
static struct cluster *clusters[2];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct err e = { { 0 } };
	char *path = fuzz_tmpfile("cluster");

	(void)argc;
	(void)argv;
	model_path = fuzz_tmpfile("model");
	csv_path = fuzz_tmpfile("out-csv");
	json_path = fuzz_tmpfile("out-json");
	fuzz_write(model_path, fuzz_tiny_model, sizeof fuzz_tiny_model - 1);
	fuzz_write(path, fuzz_small_cluster, sizeof fuzz_small_cluster - 1);
	if (cluster_load(&clusters[0], path, &e))
		goto fail;
	fuzz_write(path, one_group_cluster, sizeof one_group_cluster - 1);
	if (cluster_load(&clusters[1], path, &e))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "fuzz_report: fixture: %s\n", e.msg);
	exit(1);
}

/* Records in a CSV text: newlines outside quotes. */
static int csv_records(const char *s)
{
	int n = 0, quoted = 0;

	for (; *s; s++) {
		if (*s == '"')
			quoted = !quoted;
		else if (*s == '\n' && !quoted)
			n++;
	}
	return n;
}

static int num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	FUZZ_ASSERT(cJSON_IsNumber(v));
	return (int)v->valuedouble;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct plan_opts o;
	struct model *m = NULL;
	struct plan *p = NULL;
	struct err e = { { 0 } };
	char layout[64];
	const struct cluster *c = clusters[fuzz_byte(&in) & 1];

	fuzz_opts(&o, &in, layout);
	if (model_load(&m, model_path, &e)) {
		fprintf(stderr, "fuzz_report: fixture: %s\n", e.msg);
		abort();
	}
	if (plan_search(&p, m, c, &o, &e)) {
		FUZZ_ASSERT(e.msg[0] != '\0');
		model_free(m);
		return 0;
	}
	FUZZ_ASSERT(p->n_feasible >= 0 && p->n_feasible <= p->n_row);
	/* the rows' groups index the plan's cluster (its mixed groups too) */
	c = p->cluster;
	if (report_csv(csv_path, p, m, c, &e) || report_json(json_path, p, m, c, &e)) {
		fprintf(stderr, "fuzz_report: writing failed: %s\n", e.msg);
		abort();
	}

	size_t len;
	char *text = fuzz_read(csv_path, &len);
	FUZZ_ASSERT(text && strlen(text) == len);
	FUZZ_ASSERT(csv_records(text) == p->n_row + 1);
	free(text);

	text = fuzz_read(json_path, &len);
	FUZZ_ASSERT(text);
	cJSON *doc = cJSON_ParseWithLength(text, len);
	if (!doc) {
		fprintf(stderr, "fuzz_report: the JSON output does not parse:\n%s\n", text);
		abort();
	}
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "strategies");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(doc, "model");
	const cJSON *cname = cJSON_GetObjectItemCaseSensitive(doc, "cluster");
	FUZZ_ASSERT(cJSON_IsString(name) && strcmp(name->valuestring, m->name) == 0);
	FUZZ_ASSERT(cJSON_IsString(cname) && strcmp(cname->valuestring, c->name) == 0);
	FUZZ_ASSERT(num(doc, "gpus") == c->total_gpus);
	FUZZ_ASSERT(cJSON_IsArray(rows) && cJSON_GetArraySize(rows) == p->n_row);
	for (int r = 0; r < p->n_row && r < 8; r++) {
		const cJSON *row = cJSON_GetArrayItem(rows, r);
		const struct strategy *s = &ROW(p, r).s;
		const cJSON *stages = cJSON_GetObjectItemCaseSensitive(row, "stages");

		FUZZ_ASSERT(num(row, "tp") == s->tp && num(row, "pp") == s->pp);
		FUZZ_ASSERT(num(row, "dp") == s->dp && num(row, "cp") == s->cp);
		FUZZ_ASSERT(num(row, "micro_batch_seqs") == s->mbs);
		FUZZ_ASSERT(num(row, "global_batch_seqs") == s->gbs);
		FUZZ_ASSERT(cJSON_IsArray(stages) && cJSON_GetArraySize(stages) == s->n_stages);
		if (r < p->n_feasible)
			FUZZ_ASSERT(isfinite(ROW(p, r).r.tokens_per_s) && ROW(p, r).r.tokens_per_s > 0);
	}
	cJSON_Delete(doc);
	free(text);
	plan_free(p);
	model_free(m);
	return 0;
}
