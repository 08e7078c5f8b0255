/* fuzz_model.h: the body shared by the two model loader targets
 * (fuzz_model.c on profile JSON, fuzz_hf.c on Hugging Face config.json):
 * load the fuzzer's bytes with model_load; a model that loads is written
 * back with model_profile_json, loaded again, and must come back the same. */
#ifndef AMPPLAN_FUZZ_MODEL_H
#define AMPPLAN_FUZZ_MODEL_H

#include <math.h>

#include "fuzz_util.h"
#include "model.h"
#include "profile.h"
#include "util.h"

/* Same within a relative 1e-9 (the profile prints %.17g or so; allow a
 * little). */
static inline int fuzz_close(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static inline void fuzz_model_one(const uint8_t *data, size_t size)
{
	static char *in, *again;
	struct model *m = NULL, *m2 = NULL;
	struct err e = { { 0 } };

	if (!in) {
		in = fuzz_tmpfile("model");
		again = fuzz_tmpfile("model-again");
	}
	fuzz_write(in, data, size);
	if (model_load(&m, in, &e)) {
		FUZZ_ASSERT(e.msg[0] != '\0');	/* every failure says why */
		return;
	}
	FUZZ_ASSERT(m && m->n_layer == m->layers + 2);
	FUZZ_ASSERT(m->layer[0].kind == LAYER_EMBEDDING);
	FUZZ_ASSERT(m->layer[m->n_layer - 1].kind == LAYER_HEAD);
	FUZZ_ASSERT(model_params(m) > 0 && isfinite(model_params(m)));
	FUZZ_ASSERT(isfinite(model_flops_per_token(m)));

	/* round trip through the profile format */
	char *json = model_profile_json(m);
	FUZZ_ASSERT(json);
	fuzz_write(again, json, strlen(json));
	if (model_load(&m2, again, &e)) {
		fprintf(stderr, "fuzz: model_profile_json output does not load: %s\n", e.msg);
		FUZZ_ASSERT(!"profile of a loaded model loads again");
	}
	FUZZ_ASSERT(strcmp(m->name, m2->name) == 0);
	FUZZ_ASSERT(m->hidden == m2->hidden && m->layers == m2->layers);
	FUZZ_ASSERT(m->heads == m2->heads && m->vocab == m2->vocab);
	FUZZ_ASSERT(m->seq == m2->seq && m->gbs == m2->gbs);
	FUZZ_ASSERT(m->n_layer == m2->n_layer);
	FUZZ_ASSERT(fuzz_close(model_params(m), model_params(m2)));
	FUZZ_ASSERT(fuzz_close(model_flops_per_token(m), model_flops_per_token(m2)));
	free(json);
	model_free(m2);
	model_free(m);
}

#endif
