/* bench_model.c — how long the accelerator model takes: one design priced
 * (mamba-370m, B=64, I=2048, fully fused); the slowest `eval` of any
 * cascade under specs/ and tests/specs/good on any shipped architecture,
 * design and phase (target: under 50 ms on one core); and the paper's
 * whole evaluation (`mambalaya reproduce` without writing figures: 2
 * models, 21 sequence lengths, every design, prefill and decode; target:
 * under 1 s). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/embed/embed.h"
#include "../src/repro/repro.h"
#include "../src/workload/workload.h"
#include "../src/preset/preset.h"

static Cascade *shipped_spec(Diag *d) {
  const EmbeddedFile *f = embedded_file("specs/mamba1.yaml");
  return spec_parse(f->name, (const char *)f->data, f->len, d);
}

static Arch *shipped_arch(Diag *d) {
  const EmbeddedFile *f = embedded_file("archs/mambalaya.yaml");
  return arch_parse(f->name, (const char *)f->data, f->len, d);
}

/* The slowest evaluation of SPEC over ARCHS, designs and phases (the best
 * of 3 runs each), reported into *WORST and WHAT. */
static void time_spec(const char *path, Arch **archs, int na, double *worst,
                      char *what, size_t n) {
  Diag d = {0};
  Cascade *c = spec_load(path, &d);
  if (!c) {
    diag_print(&d, stderr);
    return;
  }
  const ModelSizes *p = c->model ? preset_sizes(c->model) : NULL;
  for (int phase = 0; phase < 2; phase++) {
    int r = cascade_sequence_rank(c);
    if (phase == 1 && r < 0)
      continue;
    Setting one = {r >= 0 ? c->ranks[r].name : "", 1};
    Shape *s = shape_bind_filled(c, p, &one, phase, 64, &d);
    if (!s)
      continue;
    Pair *pairs = fusion_classify(c, s);
    for (int a = 0; a < na; a++)
      for (int des = 0; des < DES_COUNT; des++) {
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
          ModelOpts o = model_default_opts((Design)des);
          double t0 = now_seconds();
          eval_free(model_eval(c, s, archs[a], pairs, (Design)des, &o, &d));
          double t = now_seconds() - t0;
          best = t < best ? t : best;
        }
        if (best > *worst) {
          *worst = best;
          snprintf(what, n, "%s on %s, %s, %s", path, archs[a]->name,
                   design_name((Design)des), phase ? "decode" : "prefill");
        }
      }
    free(pairs);
    shape_free(s);
  }
  cascade_free(c);
}

static void slowest_eval(void) {
  Diag d = {0};
  static const char *const shipped[] = {"archs/mambalaya.yaml",
                                        "archs/h100.yaml",
                                        "archs/eyeriss.yaml"};
  enum { NA = sizeof shipped / sizeof shipped[0] };
  Arch *archs[NA];
  bool ok = true;
  for (int a = 0; a < NA; a++)
    ok = (archs[a] = arch_load(shipped[a], &d)) != NULL && ok;
  if (!ok) {
    diag_print(&d, stderr);
    for (int a = 0; a < NA; a++)
      arch_free(archs[a]);
    return;
  }
  double worst = 0;
  char what[2048] = "";
  const char *dirs[] = {"specs", "tests/specs/good"};
  int nspecs = 0;
  for (int k = 0; k < 2; k++) {
    DIR *dir = opendir(dirs[k]);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
      size_t len = strlen(e->d_name);
      if (len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
        continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dirs[k], e->d_name);
      time_spec(path, archs, NA, &worst, what, sizeof what);
      nspecs++;
    }
    if (dir)
      closedir(dir);
  }
  printf("slowest eval of %d cascades x %d architectures x %d designs x 2 "
         "phases (ranks without a size: 64): %.2f ms, %s (target < 50 ms)\n",
         nspecs, NA, DES_COUNT, 1e3 * worst, what);
  for (int a = 0; a < NA; a++)
    arch_free(archs[a]);
}

int main(void) {
  slowest_eval();
  Diag d = {0};
  Cascade *c = shipped_spec(&d);
  Arch *a = shipped_arch(&d);
  if (!c || !a) {
    diag_print(&d, stderr);
    return 1;
  }
  Shape *s = shape_bind(c, preset_sizes("mamba-370m"), NULL, 0, true, &d);
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
                      .arch_shipped = REPRO_PAPER_ARCH,
                      .opts = model_no_overrides()};
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
         "(target < 1 s)\n",
         DES_COUNT, total / reps, best, reps);
  cascade_free(c);
  arch_free(a);
  return 0;
}
