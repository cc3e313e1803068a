/* fuzz_spec.c — libFuzzer harness for the cascade-spec loader: whatever
 * the bytes, loading must return a Cascade or a diagnostic, never crash,
 * leak or trip a sanitizer. Loaded cascades are also classified, stitched
 * under every strategy and bound to a model, the way the CLI uses them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../src/fusion/fusion.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Diag d = {0};
  Cascade *c = spec_parse("fuzz.yaml", (const char *)data, size, &d);
  if (!c)
    return 0;
  Shape *s = shape_bind(c, preset_sizes("mamba-130m"), NULL, 0, false, &d);
  Pair *pairs = fusion_classify(c, s);
  for (int st = 0; st < ST_COUNT; st++)
    for (int how = 0; how < STITCH_COUNT; how++) {
      Diag pd = {0};
      plan_free(fusion_plan(c, s, pairs, (Strategy)st, (Stitcher)how,
                            OBJ_TRAFFIC, &pd));
    }
  free(pairs);
  shape_free(s);
  cascade_free(c);
  return 0;
}
