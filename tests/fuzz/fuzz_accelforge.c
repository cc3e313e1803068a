/* fuzz_accelforge.c — libFuzzer harness for AccelForge workloads
 * (docs/compat.md): translated, then loaded (fuzz_peer.h). */
#include "fuzz_peer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_peer(SPEC_ACCELFORGE, data, size);
}
