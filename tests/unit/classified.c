/* classified.c — see classified.h. */
#include "classified.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/preset/preset.h"
#include "../../src/report/report.h"
#include "../../src/workload/workload.h"
#include "test.h"

/* Bind and classify a parsed cascade (NAME labels failures). */
static Classified classify(Cascade *c, const char *name, Diag *d) {
  Classified l = {.c = c};
  if (!l.c) {
    test_fail(__FILE__, __LINE__, "%s:%d:%d: %s", name, d->loc.line, d->loc.col,
              d->msg);
    return l;
  }
  const ModelSizes *p = l.c->model ? preset_sizes(l.c->model) : NULL;
  l.s = shape_bind(l.c, p, NULL, 0, l.c->has_shape, d);
  if (!l.s) {
    test_fail(__FILE__, __LINE__, "%s: %s", name, d->msg);
    return l;
  }
  l.pairs = fusion_classify(l.c, l.s);
  return l;
}

Classified classified_load(const char *path) {
  Diag d = {0};
  return classify(spec_load(path, &d), path, &d);
}

Classified classified_parse(const char *text) {
  Diag d = {0};
  return classify(spec_parse("t.yaml", text, strlen(text), &d), "t.yaml", &d);
}

void classified_free(Classified *l) {
  free(l->pairs);
  shape_free(l->s);
  cascade_free(l->c);
}

const char *pair_class(const Classified *l, const char *producer,
                       const char *consumer, const char *tensor) {
  for (int i = 0; i < l->c->nedges; i++) {
    const Edge *e = l->pairs[i].edge;
    if (strcmp(einsum_name(l->c, e->producer), producer) == 0 &&
        strcmp(einsum_name(l->c, e->consumer), consumer) == 0 &&
        (!tensor || strcmp(l->c->tensors[e->tensor].name, tensor) == 0))
      return fusion_class_name(l->pairs[i].cls);
  }
  return "none";
}

bool case_load(Case *k, const char *spec, const char *arch,
               const Setting *set, int n) {
  Diag d = {0};
  *k = (Case){0};
  k->c = spec_load(spec, &d);
  k->a = k->c ? arch_load(arch, &d) : NULL;
  if (k->a)
    k->s = shape_bind(k->c, k->c->model ? preset_sizes(k->c->model) : NULL,
                      set, n, true, &d);
  if (!k->s) {
    test_fail(__FILE__, __LINE__, "%s on %s: %s", spec, arch, d.msg);
    return false;
  }
  k->pairs = fusion_classify(k->c, k->s);
  return true;
}

void case_free(Case *k) {
  free(k->pairs);
  shape_free(k->s);
  arch_free(k->a);
  cascade_free(k->c);
}
