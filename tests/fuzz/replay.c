/* replay.c: a libFuzzer-free driver for the fuzz targets, linked with the
 * sanitizer build (gcc, AddressSanitizer + UBSan) for `make check`: runs
 * LLVMFuzzerTestOneInput on every file of the seed directories given, then
 * on `runs` mutants of them (byte flips, truncations, repeated runs of
 * bytes), each drawn from a fixed seed, so that a run is deterministic.
 * `make fuzz` (clang's libFuzzer, coverage-guided) is the fuzzing; this is
 * its regression smoke.
 *
 *   replay [-runs=N] DIR...     exit 0, or the sanitizer's / abort's exit
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Defined by the targets that set up state once (fuzz_report). */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct seed {
	char *path;
	uint8_t *data;
	size_t size;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fputs("replay: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

/* Reads path whole into s; returns 0, or -1 when it cannot. */
static int read_seed(struct seed *s, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n;

	if (!f)
		return -1;
	s->data = xrealloc(NULL, cap);
	s->size = 0;
	while ((n = fread(s->data + s->size, 1, cap - s->size, f)) > 0) {
		s->size += n;
		if (s->size == cap)
			s->data = xrealloc(s->data, cap *= 2);
	}
	fclose(f);
	s->path = strdup(path);
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct seed *)a)->path, ((const struct seed *)b)->path);
}

/* xorshift64: the mutants' fixed random stream */
static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A mutant of s into buf (capacity s->size + 64): a few bytes changed,
 * a tail cut, or a run of up to 32 bytes repeated; returns its size. */
static size_t mutate(uint8_t *buf, const struct seed *s, uint64_t *x)
{
	size_t n = s->size, at = n ? next(x) % n : 0;

	memcpy(buf, s->data, n);
	switch (next(x) % 3) {
	case 0:
		for (int k = 0; n && k < 4; k++)
			buf[next(x) % n] = (uint8_t)next(x);
		return n;
	case 1:
		return at;
	default: {
		size_t len = 1 + next(x) % 32;

		if (at + len > n)
			len = n - at;
		memmove(buf + at + len, buf + at, n - at);
		return n + len;
	}
	}
}

int main(int argc, char **argv)
{
	struct seed *seeds = NULL;
	size_t n = 0;
	long runs = 0;
	uint64_t x = 0x9e3779b97f4a7c15u;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		DIR *d;
		struct dirent *de;

		if (!strncmp(argv[i], "-runs=", 6)) {
			runs = strtol(argv[i] + 6, NULL, 10);
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "replay: cannot open '%s'\n", argv[i]);
			return 1;
		}
		while ((de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
			seeds = xrealloc(seeds, (n + 1) * sizeof *seeds);
			if (read_seed(&seeds[n], path) == 0)
				n++;
		}
		closedir(d);
	}
	if (!n) {
		fputs("replay: no seeds\n", stderr);
		return 1;
	}
	qsort(seeds, n, sizeof *seeds, by_path);
	for (size_t i = 0; i < n; i++)
		LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].size);
	for (long r = 0; r < runs; r++) {
		const struct seed *s = &seeds[next(&x) % n];
		uint8_t *buf = xrealloc(NULL, s->size + 64);

		LLVMFuzzerTestOneInput(buf, mutate(buf, s, &x));
		free(buf);
	}
	printf("%zu seeds + %ld mutants\n", n, runs);
	for (size_t i = 0; i < n; i++) {
		free(seeds[i].path);
		free(seeds[i].data);
	}
	free(seeds);
	return 0;
}
