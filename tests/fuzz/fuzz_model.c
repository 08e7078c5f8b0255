/* fuzz_model.c: libFuzzer target for the model loader on profile JSON
 * (profiles/ format). Each input is written to a temporary file and loaded
 * with model_load (there is no in-memory entry point); a model that loads
 * must survive model_profile_json and load again with the same dimensions,
 * parameters and FLOPs. A failure must carry a message.
 *
 *   make fuzz              every target for FUZZ_SECONDS (default 60)
 *   build/fuzz/fuzz_model tests/fuzz/corpus/model     by hand
 * Seeds: tests/fuzz/corpus/model (the shipped profiles, a few bad files). */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_model_one(data, size);
	return 0;
}
