/* fuzz_plan.c — libFuzzer harness for plan files (`fuse --json`, read by
 * eval and exec --plan): whatever the bytes, reading returns a plan of
 * the cascade or a diagnostic naming the group and the Einsum, never a
 * crash, a leak or a sanitizer report (empty groups once overflowed the
 * group table). Plans are read against Mamba-1 and the Transformer, as a
 * single file and as one of several (--strategy full). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../src/fusion/fusion.h"
#include "../../src/preset/preset.h"
#include "../../src/spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The two cascades, bound once: the harness's own state. */
static Cascade *cascade[2];
static Shape *shape[2];

static void load(int i, const char *path) {
  Diag d = {0};
  cascade[i] = spec_load(path, &d);
  if (!cascade[i])
    __builtin_trap();
  shape[i] = shape_bind(cascade[i], preset_sizes("mamba-130m"), NULL, 0,
                        cascade[i]->has_shape, &d);
  if (!shape[i])
    __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!cascade[0]) {
    load(0, "specs/mamba1.yaml");
    load(1, "specs/transformer.yaml");
  }
  for (int i = 0; i < 2; i++)
    for (int pick = 0; pick < 2; pick++) {
      Diag d = {0};
      Plan *p = plan_read_text("fuzz.json", (const char *)data, size,
                               pick ? "full" : NULL, cascade[i], shape[i], &d);
      if (p && (p->ngroups < 1 || p->ngroups > cascade[i]->neinsums))
        __builtin_trap();
      plan_free(p);
    }
  return 0;
}
