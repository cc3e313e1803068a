/* test_repro.c — reproduce for any cascade (issue 17): a spec that names
 * no model is evaluated at its own sizes (B = 4, I = 1024), with no model
 * and, without a layer count, no end-to-end figures; --layers gives them,
 * and --model a preset, still at the spec's sizes. */
#include <math.h>

#include "../../src/arch/arch.h"
#include "../../src/repro/repro.h"
#include "../../src/spec/spec.h"
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

/* The progress hook hears once per point: one model's two phases and 21
 * sweep lengths (I = 2^0..2^20), and with a layer count the 3 end-to-end
 * scenarios: 23 and 26 calls, the last at exactly 1. */
TEST(repro_progress_per_point) {
  for (int layers = 0; layers <= 24; layers += 24) {
    Heard h = {0, 0, true};
    Setup s = run_rwkv_heard(layers, NULL, &h);
    CHECK_INT(h.calls, layers ? 26 : 23);
    CHECK_NEAR(h.last, 1, 0);
    CHECK(h.rising);
    done(&s);
  }
}
