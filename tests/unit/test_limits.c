/* test_limits.c — the largest sizes a spec may bind (MAX_RANK_SIZE on
 * every rank of Mamba-1; on the batch and the tokens of Mamba-2, whose
 * mapping search over five 1e15-sized ranks would take hours) go through
 * classification, every stitcher, the model's designs and the executor's
 * memory bound with finite figures and, under `make test`'s UBSan build,
 * no overflow; one past the limit is refused with the limit named. */
#include <stdlib.h>

#include "../../src/embed/embed.h"
#include "../../src/exec/exec.h"
#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "test.h"

static Cascade *shipped(const char *name) {
  const EmbeddedFile *f = embedded_file(name);
  Diag d = {0};
  Cascade *c = f ? spec_parse(f->name, (const char *)f->data, f->len, &d)
                 : NULL;
  if (!c)
    test_fail(__FILE__, __LINE__, "%s: %s", name, d.msg);
  return c;
}

static Arch *arch(const char *name) {
  const EmbeddedFile *f = embedded_file(name);
  Diag d = {0};
  return arch_parse(f->name, (const char *)f->data, f->len, &d);
}

/* C's ranks at SIZE: every one, or (!ALL) the batch and the tokens. */
static Shape *bind_at(const Cascade *c, double size, bool all, Diag *d) {
  Setting *set = xcalloc((size_t)c->nranks + 1, sizeof *set);
  int n = 0;
  for (int r = 0; r < c->nranks; r++)
    if (all || !strcmp(c->ranks[r].name, "B") ||
        !strcmp(c->ranks[r].name, "I"))
      set[n++] = (Setting){c->ranks[r].name, size};
  Shape *s = shape_bind(c, preset_sizes(c->model), set, n, true, d);
  free(set);
  return s;
}

static void check_cascade(const char *name, bool all) {
  Cascade *c = shipped(name);
  if (!c)
    return;
  Diag d = {0};
  Shape *s = bind_at(c, MAX_RANK_SIZE, all, &d);
  CHECK(s != NULL);
  if (!s) {
    cascade_free(c);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  int planned = 0;
  for (int st = 0; st < ST_COUNT; st++)
    for (int how = 0; how < STITCH_COUNT; how++) {
      Diag pd = {0};
      Plan *p = fusion_plan(c, s, pairs, (Strategy)st, (Stitcher)how,
                            OBJ_TRAFFIC, &pd);
      if (p) {
        CHECK(isfinite(p->offchip_elems));
        CHECK(isfinite(exec_bytes(c, s, p, 2 << 20)));
        planned++;
      } else {
        CHECK_INT(how, STITCH_ALG1); /* only Algorithm 1 may refuse */
      }
      plan_free(p);
    }
  /* A refused plan checks nothing: greedy and global never refuse. */
  CHECK(planned >= ST_COUNT * (STITCH_COUNT - 1));
  CHECK(isfinite(exec_bytes(c, s, NULL, 0)));
  /* [B, I, D, N]: at least 1e15 squared. */
  CHECK(exec_bytes(c, s, NULL, 0) > 1e30);
  Arch *a = arch("archs/mambalaya.yaml");
  for (int des = 0; des < DES_COUNT; des++) {
    if (!all && des != DES_FULL && des != DES_UNFUSED && des != DES_IDEAL)
      continue; /* a second each: these three cover the model's paths */
    ModelOpts mo = model_default_opts((Design)des);
    Diag ed = {0};
    Eval *ev = model_eval(c, s, a, pairs, (Design)des, &mo, &ed);
    CHECK(ev != NULL);
    if (ev) {
      CHECK(isfinite(ev->seconds) && ev->seconds > 0);
      CHECK(isfinite(ev->read) && isfinite(ev->energy_pj));
    }
    eval_free(ev);
  }
  arch_free(a);
  free(pairs);
  shape_free(s);
  Diag e = {0};
  CHECK(bind_at(c, 1e16, all, &e) == NULL);
  CHECK(strstr(e.msg, "a size must be a positive integer of at most 1e+15") !=
        NULL);
  cascade_free(c);
}

TEST(limits_mamba1_at_max_rank_size) {
  check_cascade("specs/mamba1.yaml", true);
}
TEST(limits_mamba2_at_max_rank_size) {
  check_cascade("specs/mamba2.yaml", false);
}
