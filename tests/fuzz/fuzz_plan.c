/* fuzz_plan.c — libFuzzer harness for plan files (`fuse --json`, read by
 * eval and exec --plan): whatever the bytes, reading returns a plan of
 * the cascade or a diagnostic naming the group and the Einsum, never a
 * crash, a leak or a sanitizer report (empty groups once overflowed the
 * group table). Plans are read against Mamba-1 and the Transformer, as a
 * single file and as one of several (--strategy full); a plan read is
 * then priced as `eval --plan` prices one `search --plan-out` wrote (its
 * design, binding and fusion level), every figure finite. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <math.h>

#include "../../src/arch/arch.h"
#include "../../src/embed/embed.h"
#include "../../src/fusion/fusion.h"
#include "../../src/model/model.h"
#include "../../src/preset/preset.h"
#include "../../src/workload/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The two cascades, bound once: the harness's own state. */
static Cascade *cascade[2];
static Shape *shape[2];
static Pair *pairs[2];
static Arch *arch;

static void load(int i, const char *path) {
  Diag d = {0};
  cascade[i] = spec_load(path, &d);
  if (!cascade[i])
    __builtin_trap();
  shape[i] = shape_bind(cascade[i], preset_sizes("mamba-130m"), NULL, 0,
                        cascade[i]->has_shape, &d);
  if (!shape[i])
    __builtin_trap();
  pairs[i] = fusion_classify(cascade[i], shape[i]);
}

static void finite(double v) {
  if (!isfinite(v))
    __builtin_trap();
}

/* Price P (taken) as eval --plan does: its design (or its strategy's),
 * at its fusion level when it names one. */
static void price(int i, Plan *p) {
  Design design = design_of_strategy(p->strategy);
  if (p->design[0] && !design_from_name(p->design, &design)) {
    plan_free(p);
    return;
  }
  Diag d = {0};
  Arch *at = NULL;
  if (p->fusion_level[0] &&
      !(at = arch_with_fusion_named(arch, p->fusion_level, "fuzz.json",
                                    p->fusion_level_at, &d))) {
    plan_free(p);
    return;
  }
  ModelOverrides none = model_no_overrides();
  ModelOpts mo = model_opts_for_plan(&none, design, p);
  Eval *ev = model_eval_plan(cascade[i], shape[i], at ? at : arch, pairs[i],
                             design, p, &mo, &d);
  if (ev) {
    finite(ev->seconds);
    finite(ev->read + ev->write);
    finite(ev->energy_pj);
  }
  eval_free(ev);
  arch_free(at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!cascade[0]) {
    load(0, "specs/mamba1.yaml");
    load(1, "specs/transformer.yaml");
    const EmbeddedFile *f = embedded_file("archs/mambalaya.yaml");
    Diag d = {0};
    arch = arch_parse(f->name, (const char *)f->data, f->len, &d);
    if (!arch)
      __builtin_trap();
  }
  for (int i = 0; i < 2; i++)
    for (int pick = 0; pick < 2; pick++) {
      Diag d = {0};
      Plan *p = plan_read_text("fuzz.json", (const char *)data, size,
                               pick ? "full" : NULL, cascade[i], shape[i], &d);
      if (p && (p->ngroups < 1 || p->ngroups > cascade[i]->neinsums))
        __builtin_trap();
      if (p)
        price(i, p); /* the Eval owns the plan from here */
    }
  return 0;
}
