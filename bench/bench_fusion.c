/* bench_fusion.c — how long the fusion analysis takes: load a spec, bind
 * its shape, classify every pair and stitch it under every strategy (the
 * work of `mambalaya fuse SPEC`, without printing; target: under 10 ms for
 * specs/mamba2.yaml); and how it scales: the exact (global) stitcher on
 * chains of 250 to 2000 Einsums mixing RI, RSb and RSp pairs (target: 1000
 * in under 2 s). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/fusion/fusion.h"
#include "../src/workload/workload.h"
#include "../src/preset/preset.h"

static int analyse(const char *path) {
  Diag d = {0};
  Cascade *c = spec_load(path, &d);
  if (!c) {
    diag_print(&d, stderr);
    return 1;
  }
  Shape *s = shape_bind(c, c->model ? preset_sizes(c->model) : NULL, NULL, 0,
                        c->has_shape, &d);
  Pair *pairs = fusion_classify(c, s);
  int groups = 0;
  for (int st = 0; st < ST_COUNT; st++) {
    Plan *p = fusion_plan(c, s, pairs, (Strategy)st, STITCH_GREEDY,
                          OBJ_TRAFFIC, &d);
    groups += p->ngroups;
    plan_free(p);
  }
  free(pairs);
  shape_free(s);
  cascade_free(c);
  return groups > 0 ? 0 : 1;
}

/* A chain of N Einsums: a sum over d (RSb), a broadcast back over d
 * (RSp), an elementwise step (RI), repeated. */
static char *chain_spec(int n) {
  Buf b = {0};
  buf_printf(&b, "shape: {I: 64, D: 32}\neinsum:\n  declaration:\n"
                 "    W: [D]\n    T0: [I, D]\n");
  for (int k = 1; k <= n; k++)
    buf_printf(&b, "    T%d: %s\n", k, k % 3 == 1 ? "[I]" : "[I, D]");
  buf_printf(&b, "  expressions:\n");
  for (int k = 1; k <= n; k++) {
    if (k % 3 == 1)
      buf_printf(&b, "    - \"T%d[i] = T%d[i,d] :: sum(d)\"\n", k, k - 1);
    else if (k % 3 == 2)
      buf_printf(&b, "    - T%d[i,d] = T%d[i] * W[d]\n", k, k - 1);
    else
      buf_printf(&b, "    - T%d[i,d] = exp(T%d[i,d])\n", k, k - 1);
  }
  return b.s;
}

static double time_chain(int n) {
  char *text = chain_spec(n);
  Diag d = {0};
  double t0 = now_seconds();
  Cascade *c = spec_parse("chain.yaml", text, strlen(text), &d);
  if (!c) {
    diag_print(&d, stderr);
    free(text);
    return -1;
  }
  Shape *s = shape_bind(c, NULL, NULL, 0, true, &d);
  Pair *pairs = fusion_classify(c, s);
  Plan *p = fusion_plan(c, s, pairs, ST_RI_RSB_RSP, STITCH_GLOBAL,
                        OBJ_TRAFFIC, &d);
  double t = now_seconds() - t0;
  plan_free(p);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  free(text);
  return t;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--chains") == 0) {
    const int sizes[] = {250, 500, 1000, 2000};
    double prev = 0;
    for (int i = 0; i < 4; i++) {
      double t = time_chain(sizes[i]);
      if (t < 0)
        return 1;
      printf("fuse --stitch global, a chain of %d Einsums (load, classify, "
             "stitch): %.3f s%s",
             sizes[i], t, sizes[i] == 1000 ? " (target < 2 s)" : "");
      if (prev > 0)
        printf(", x%.2f for twice the Einsums", t / prev);
      printf("\n");
      prev = t;
    }
    return 0;
  }
  const char *path = argc > 1 ? argv[1] : "specs/mamba2.yaml";
  int runs = 200;
  double best = 1e30, total = 0;
  for (int i = 0; i < runs; i++) {
    double t0 = now_seconds();
    if (analyse(path))
      return 1;
    double dt = now_seconds() - t0;
    total += dt;
    if (dt < best)
      best = dt;
  }
  printf("fusion analysis of %s (load, bind, classify, 5 strategies): "
         "mean %.3f ms, best %.3f ms over %d runs (target < 10 ms)\n",
         path, 1e3 * total / runs, 1e3 * best, runs);
  return 0;
}
