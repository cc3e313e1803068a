/* test_repro.c — reproduce for any cascade (issue 17): a spec that names
 * no model is evaluated at its own sizes (B = 4, I = 1024), with no model
 * and, without a layer count, no end-to-end figures; --layers gives them,
 * and --model a preset, still at the spec's sizes. */
#include <math.h>

#include "../../src/arch/arch.h"
#include "../../src/repro/repro.h"
#include "../../src/workload/workload.h"
#include "test.h"

typedef struct Setup {
  Cascade *c;
  Arch *a;
  Repro *r;
} Setup;

/* What the progress hook heard: how often, the last share, and whether
 * the shares rose at every call. */
typedef struct Heard {
  int calls;
  double last;
  bool rising;
} Heard;

static void hear(void *ctx, double done, double elapsed) {
  Heard *h = ctx;
  h->rising = h->rising && done > h->last && elapsed >= 0;
  h->last = done;
  h->calls++;
}

static Setup run_rwkv_heard(int layers, const char *model, Heard *h) {
  Diag d = {0};
  Setup s = {spec_load("tests/specs/good/rwkv6_shift.yaml", &d),
             arch_load("archs/h100.yaml", &d), NULL};
  CHECK(s.c && s.a);
  if (s.c && s.a) {
    ReproSetup su = {.spec = s.c, .arch = s.a, .model = model,
                     .layers = layers, .opts = model_no_overrides(),
                     .progress = h ? hear : NULL, .progress_ctx = h};
    s.r = repro_run(&su, &d);
    CHECK(s.r != NULL);
  }
  return s;
}

static Setup run_rwkv(int layers, const char *model) {
  return run_rwkv_heard(layers, model, NULL);
}

static void done(Setup *s) {
  repro_free(s->r);
  cascade_free(s->c);
  arch_free(s->a);
}

TEST(repro_without_model_uses_spec_sizes) {
  Setup s = run_rwkv(0, NULL);
  if (s.r) {
    CHECK_NEAR(s.r->batch, 4, 0);
    CHECK_NEAR(s.r->prefill, 1024, 0);
    CHECK_STR(s.r->sizes, "D=2048, E=2048");
    CHECK_INT(s.r->nmodels, 1);
    CHECK(s.r->model_names[0] == NULL);
    CHECK_INT(s.r->layers[0], 0);
    CHECK(!repro_has_e2e(s.r));
    CHECK_STR(repro_workload(s.r, 0), "tests/specs/good/rwkv6_shift.yaml");
    CHECK(!s.r->paper_setup && s.r->ntargets == 0);
    CHECK(s.r->res[0][PH_PREFILL][DES_UNFUSED].seconds > 0);
    CHECK_NEAR(s.r->e2e[0][DES_UNFUSED], 0, 0);
  }
  done(&s);
}

TEST(repro_layers_and_model) {
  Setup s = run_rwkv(24, NULL);
  if (s.r) {
    CHECK_INT(s.r->layers[0], 24);
    CHECK(repro_has_e2e(s.r));
    /* L x (prefill + G decode steps), per design. */
    const Result *dec = &s.r->res[0][PH_DECODE][DES_UNFUSED];
    double g = s.r->scenarios[1].generated;
    CHECK(s.r->e2e[1][DES_UNFUSED] > 24 * g * dec->seconds);
  }
  done(&s);
  s = run_rwkv(0, "mamba-370m");
  if (s.r) {
    CHECK_STR(s.r->model_names[0], "mamba-370m");
    CHECK_INT(s.r->layers[0], 48);
    CHECK_NEAR(s.r->batch, 4, 0); /* the spec's B, not the paper's 64 */
  }
  done(&s);
}

/* The progress hook hears once per task: each shape, priced and
 * searched once (one model: the 21 sweep lengths I = 2^0..2^20, the
 * phases' I = 1024 and 1 and, with a layer count, the scenarios' 256,
 * 2048 and 16384 among them), and each of the 15 capacities of the ski
 * slope: 36 calls with or without the scenarios, the last at exactly 1,
 * rising though two threads tell it. */
TEST(repro_progress_per_point) {
  for (int layers = 0; layers <= 24; layers += 24) {
    Heard h = {0, 0, true};
    Setup s = run_rwkv_heard(layers, NULL, &h);
    CHECK_INT(h.calls, 21 + 15);
    CHECK_NEAR(h.last, 1, 0);
    CHECK(h.rising);
    done(&s);
  }
}

/* Issue 36: the energy by each of the H100's four memory levels (its
 * SharedMemory once counted as registers) and the operations, adding up
 * to the total; the ski slope at 2^-10 .. 2^4 times the L2's 50 MiB, each
 * design's traffic never growing with the capacity, and at the file's own
 * capacity the design's traffic as priced. */
TEST(repro_energy_levels_and_ski_slope) {
  Setup s = run_rwkv(0, NULL);
  if (s.r) {
    CHECK_INT(s.a->nlevels, 4);
    CHECK_STR(s.a->levels[s.a->fusion_level].name, "L2");
    for (int d = 0; d < DES_COUNT; d++) {
      const Result *x = &s.r->res[0][PH_PREFILL][d];
      double sum = x->ops_j;
      for (int l = 0; l < s.a->nlevels; l++)
        sum += x->level_j[l];
      CHECK_NEAR(sum, x->energy_j, 1e-12 * x->energy_j);
      CHECK(x->level_j[2] > 0); /* SharedMemory, on its own */
    }
    double cap = s.a->levels[s.a->fusion_level].capacity;
    CHECK_NEAR(cap, 50.0 * 1024 * 1024, 0);
    for (int k = 0; k < REPRO_CAPACITIES; k++)
      CHECK_NEAR(s.r->slope_capacity[k], ldexp(cap, k - 10), 0);
    int own = -REPRO_SLOPE_LO; /* 2^0: the file's capacity */
    for (int d = 0; d < DES_COUNT; d++) {
      const Result *x = &s.r->res[0][PH_PREFILL][d];
      CHECK_NEAR(s.r->slope_bytes[own][d], x->read + x->write,
                 1e-12 * (x->read + x->write));
      CHECK_NEAR(s.r->slope_seconds[own][d], x->seconds, 1e-12 * x->seconds);
      for (int k = 1; k < REPRO_CAPACITIES; k++)
        if (isfinite(s.r->slope_bytes[k - 1][d]))
          CHECK(s.r->slope_bytes[k][d] <=
                s.r->slope_bytes[k - 1][d] * (1 + 1e-12));
    }
  }
  done(&s);
}
