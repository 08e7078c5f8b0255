/* fuzz_hf.c: libFuzzer target for the Hugging Face config.json path of the
 * model loader (model_load recognises a config by its "model_type": llama,
 * mistral, qwen2, mixtral, gpt2, and derives the layer list). Inputs without
 * the text "model_type" are skipped so the fuzzer spends its time on that
 * path; the checks are fuzz_model.c's (round trip through the profile
 * format).
 *
 *   make fuzz              every target for FUZZ_SECONDS (default 60)
 *   build/fuzz/fuzz_hf tests/fuzz/corpus/hf    by hand
 * Seeds: tests/fuzz/corpus/hf (tests/data/hf, a few bad HF configs). */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char key[] = "model_type";
	int found = 0;

	for (size_t i = 0; !found && i + sizeof key - 1 <= size; i++)
		found = memcmp(data + i, key, sizeof key - 1) == 0;
	if (found)
		fuzz_model_one(data, size);
	return 0;
}
