/* fuzz_util.h: helpers shared by the libFuzzer targets of tests/fuzz: a
 * temporary file to hand the fuzzer's bytes to the file-based loaders
 * (model_load, cluster_load read paths only), and the fixed small model and
 * cluster the writer and search targets run on. Header-only: each target is
 * one translation unit linked with the project's objects built with the
 * fuzzer flags (Makefile target `fuzz`). */
#ifndef AMPPLAN_FUZZ_UTIL_H
#define AMPPLAN_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fuzz target found an invariant broken: print why and abort, which
 * libFuzzer reports as a crash and saves the input. */
#define FUZZ_ASSERT(cond)                                                   \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz: %s:%d: assertion '%s' failed\n", \
				__FILE__, __LINE__, #cond);                 \
			abort();                                            \
		}                                                           \
	} while (0)

/* The directory for temporaries: $TMPDIR or /tmp. */
static inline const char *fuzz_tmpdir(void)
{
	const char *d = getenv("TMPDIR");

	return d && *d ? d : "/tmp";
}

/* Makes a new empty file named after tag in the temporary directory and
 * returns its path (malloc'd, kept for the process's life); exits on
 * failure. The file is removed at exit. */
static char *fuzz_paths[8];
static int fuzz_n_paths;

static inline void fuzz_cleanup(void)
{
	for (int i = 0; i < fuzz_n_paths; i++) {
		unlink(fuzz_paths[i]);
		free(fuzz_paths[i]);
	}
	fuzz_n_paths = 0;
}

static inline char *fuzz_tmpfile(const char *tag)
{
	size_t n = strlen(fuzz_tmpdir()) + strlen(tag) + 32;
	char *path = malloc(n);
	int fd;

	if (!path)
		abort();
	snprintf(path, n, "%s/ampplan-fuzz-%s-XXXXXX", fuzz_tmpdir(), tag);
	fd = mkstemp(path);
	if (fd < 0) {
		perror("fuzz: mkstemp");
		exit(1);
	}
	close(fd);
	if (fuzz_n_paths == 0)
		atexit(fuzz_cleanup);
	if (fuzz_n_paths < (int)(sizeof fuzz_paths / sizeof *fuzz_paths))
		fuzz_paths[fuzz_n_paths++] = path;
	return path;
}

/* Replaces the contents of path with the n bytes at data; exits on a write
 * failure (a full disk is not a finding). */
static inline void fuzz_write(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
		perror("fuzz: write");
		exit(1);
	}
}

/* Reads the whole file at path (NUL-terminated, malloc'd; caller frees), or
 * returns NULL. */
static inline char *fuzz_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* A fixed small model (2 blocks, hidden 64) and two small clusters, the
 * inputs the writer and search targets hold fixed (tests/data has the same
 * shapes: tiny-2-layers.json, one-t4-node.json). */
static const char fuzz_tiny_model[] =
	"{\"name\": \"tiny-fuzz\", \"source\": \"fuzz fixture\",\n"
	" \"hidden_size\": 64, \"num_layers\": 4, \"num_attention_heads\": 4,\n"
	" \"num_kv_heads\": 4, \"head_dim\": 16, \"ffn_hidden_size\": 256,\n"
	" \"ffn_kind\": \"swiglu\", \"vocab_size\": 1000, \"seq_length\": 128,\n"
	" \"global_batch_size\": 16, \"max_position_embeddings\": 128,\n"
	" \"tie_word_embeddings\": false, \"bias\": false,\n"
	" \"position_embedding\": \"rope\", \"dtype\": \"bf16\"}\n";

static const char fuzz_small_cluster[] =
	"{\"name\": \"fuzz two groups\", \"source\": \"fuzz fixture\",\n"
	" \"gpu_types\": {\n"
	"  \"T4-16GB\": {\"peak_bf16_tflops\": 65, \"memory_GiB\": 16, \"hbm_GBps\": 320,\n"
	"              \"efficiency_max\": 0.45, \"efficiency_half_gflop\": 8},\n"
	"  \"H100\": {\"peak_bf16_tflops\": 989, \"peak_fp8_tflops\": 1979,\n"
	"           \"memory_GiB\": 80, \"hbm_GBps\": 3350, \"efficiency_max\": 0.7}\n"
	" },\n"
	" \"groups\": [\n"
	"  {\"name\": \"t4\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"T4-16GB\",\n"
	"   \"intra_node_GBps\": 16, \"intra_node_latency_us\": 2,\n"
	"   \"inter_node_Gbps\": 50, \"inter_node_latency_us\": 15},\n"
	"  {\"name\": \"h100\", \"nodes\": 1, \"gpus_per_node\": 4, \"gpu\": \"H100\",\n"
	"   \"intra_node_GBps\": 450, \"intra_node_latency_us\": 2,\n"
	"   \"inter_node_Gbps\": 400, \"inter_node_latency_us\": 10}\n"
	" ],\n"
	" \"inter_fabric_Gbps\": 100, \"inter_fabric_latency_us\": 20}\n";

#endif
