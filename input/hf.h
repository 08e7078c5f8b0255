/* hf.h (internal): reading a Hugging Face config.json into a model (hf.c). */
#ifndef AMPPLAN_HF_H
#define AMPPLAN_HF_H

struct cJSON;
struct err;
struct model;

/* Fills m (zeroed by the caller) from the Hugging Face config doc read from
 * path (TRAINERS.md, "Hugging Face config.json"), layers derived
 * (model_derive_layers). Returns 0, or -1 with e set (the caller adds the
 * path); an unsupported model_type is refused naming it and the supported
 * ones. m's memory stays the caller's to free with model_free either way. */
int hf_load(struct model *m, const struct cJSON *doc, const char *path,
	    struct err *e);

#endif
