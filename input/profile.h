/* profile.h: reading a model file (a profile of profiles/ or a Hugging Face
 * config.json) into a model, and writing a model back as a profile
 * (profile.c). */
#ifndef AMPPLAN_PROFILE_H
#define AMPPLAN_PROFILE_H

struct err;
struct model;

/* Loads a model profile (profiles/ format) or a Hugging Face config.json
 * (recognised by its "model_type": llama, mistral, mixtral, qwen2,
 * qwen2_moe, qwen3, qwen3_moe, gemma2, gemma3_text, phi3, deepseek_v3,
 * llama4_text, olmo2, falcon, gptj, gpt2; hf.c), deriving the layer list
 * for the latter (and for a profile without "layers"); another model_type
 * is refused naming it and the supported ones. Returns 0 and *out (caller
 * frees with model_free), or -1 with *out NULL and e naming the file and
 * the field or the line:column. */
int model_load(struct model **out, const char *path, struct err *e);

/* The model as a profile JSON document, the format model_load reads back:
 * runs of equal consecutive layers as one "layers" entry with "repeat",
 * numbers with the fewest of 15 or 17 significant digits that read back
 * exactly, a 2-byte dtype as "bf16" or "fp16". Returns a malloc'd string;
 * caller frees. */
char *model_profile_json(const struct model *m);

#endif
