/* fuzz_arch.c — libFuzzer harness for the architecture loader, through
 * eval: whatever the bytes, loading returns an Arch or a diagnostic; an
 * accepted architecture prices the shipped Mamba-1 layer (a small shape)
 * under three designs with every figure finite, and its JSON report
 * serializes. Never a crash, a leak or a sanitizer report. An AccelForge
 * architecture is translated (src/workload/accelforge_arch.c), unless it is a
 * Jinja template: that runs python3, a process per input (fuzz_peer.h). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../src/embed/embed.h"
#include "../../src/model/model.h"
#include "../../src/report/report.h"
#include "../../src/workload/accelforge_arch.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The cascade, bound once: the harness's own state, not the library's. */
static Cascade *cascade;
static Shape *shape;
static Pair *pairs;

static void setup(void) {
  const EmbeddedFile *f = embedded_file("specs/mamba1.yaml");
  Diag d = {0};
  cascade = spec_parse(f->name, (const char *)f->data, f->len, &d);
  Setting small[] = {{"B", 2}, {"I", 64}};
  shape = shape_bind(cascade, preset_sizes("mamba-130m"), small, 2, true, &d);
  pairs = fusion_classify(cascade, shape);
  if (!shape)
    __builtin_trap();
}

static void check(double v) {
  if (!isfinite(v))
    __builtin_trap(); /* a range check let a figure overflow */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!cascade)
    setup();
  const char *text = (const char *)data;
  for (size_t i = 0; i + 1 < size; i++)
    if (text[i] == '{' && (text[i + 1] == '%' || text[i + 1] == '{' ||
                           text[i + 1] == '#') &&
        accelforge_arch_format(text, size))
      return 0;
  Diag d = {0};
  Arch *a = arch_parse("fuzz.yaml", text, size, &d);
  if (!a)
    return 0;
  static const Design designs[] = {DES_FULL, DES_UNFUSED, DES_IDEAL};
  for (size_t i = 0; i < sizeof designs / sizeof designs[0]; i++) {
    ModelOpts mo = model_default_opts(designs[i]);
    Diag ed = {0};
    Eval *ev = model_eval(cascade, shape, a, pairs, designs[i], &mo, &ed);
    if (!ev)
      continue; /* an op class no unit implements: a diagnostic */
    check(ev->seconds);
    check(ev->read + ev->write);
    check(ev->energy_pj);
    json_t *j = report_eval_json(cascade, a, ev);
    Buf b = {0};
    report_json(&b, j);
    json_decref(j);
    buf_free(&b);
    eval_free(ev);
  }
  arch_free(a);
  return 0;
}
