/* bench_model.c — how long the accelerator model takes: one design priced
 * (mamba-370m, B=64, I=2048, fully fused), and the paper's whole
 * evaluation (`mambalaya reproduce` without writing figures: 2 models, 21
 * sequence lengths, every design, prefill and decode). Target: the whole
 * evaluation under 2 s on the 2-core machine. */
#include <stdio.h>
#include <stdlib.h>

#include "../src/embed/embed.h"
#include "../src/repro/repro.h"
#include "../src/spec/spec.h"

static Cascade *shipped_spec(Diag *d) {
  const EmbeddedFile *f = embedded_file("specs/mamba1.yaml");
  return spec_parse(f->name, (const char *)f->data, f->len, d);
}

static Arch *shipped_arch(Diag *d) {
  const EmbeddedFile *f = embedded_file("archs/mambalaya.yaml");
  return arch_parse(f->name, (const char *)f->data, f->len, d);
}

int main(void) {
  Diag d = {0};
  Cascade *c = shipped_spec(&d);
  Arch *a = shipped_arch(&d);
  if (!c || !a) {
    diag_print(&d, stderr);
    return 1;
  }
  Shape *s = shape_bind(c, preset_find("mamba-370m"), NULL, 0, true, &d);
  Pair *pairs = fusion_classify(c, s);
  int runs = 200;
  double t0 = now_seconds();
  for (int i = 0; i < runs; i++) {
    ModelOpts o = model_default_opts(DES_FULL);
    eval_free(model_eval(c, s, a, pairs, DES_FULL, &o, &d));
  }
  double one = (now_seconds() - t0) / runs;
  printf("price one design (mamba-370m, full, B=64, I=2048): %.3f ms\n",
         1e3 * one);
  free(pairs);
  shape_free(s);

  int reps = 5;
  double best = 1e30, total = 0;
  ReproSetup setup = {.spec = c, .spec_shipped = REPRO_PAPER_SPEC, .arch = a,
                      .arch_shipped = REPRO_PAPER_ARCH};
  for (int i = 0; i < reps; i++) {
    Repro *r = repro_run(&setup, &d);
    if (!r) {
      diag_print(&d, stderr);
      return 1;
    }
    total += r->elapsed;
    if (r->elapsed < best)
      best = r->elapsed;
    repro_free(r);
  }
  printf("the paper's whole evaluation (2 models x 21 lengths x %d designs, "
         "prefill and decode): mean %.3f s, best %.3f s over %d runs "
         "(target < 2 s)\n",
         DES_COUNT, total / reps, best, reps);
  cascade_free(c);
  arch_free(a);
  return 0;
}
