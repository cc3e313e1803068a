/* bench_fusion.c — how long the fusion analysis takes: load a spec, bind
 * its shape, classify every pair and stitch it under every strategy (the
 * work of `mambalaya fuse SPEC`, without printing). Target: under 10 ms for
 * specs/mamba2.yaml. */
#include <stdio.h>
#include <stdlib.h>

#include "../src/fusion/fusion.h"
#include "../src/spec/spec.h"

static int analyse(const char *path) {
  Diag d = {0};
  Cascade *c = spec_load(path, &d);
  if (!c) {
    diag_print(&d, stderr);
    return 1;
  }
  Shape *s = shape_bind(c, c->model ? preset_find(c->model) : NULL, NULL, 0,
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

int main(int argc, char **argv) {
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
