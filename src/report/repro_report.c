/* repro_report.c — the paper's figures beside ours: the table and JSON. */
#include "report.h"

#include <math.h>

static double ratio(const Target *t) {
  return t->paper != 0 ? t->ours / t->paper : NAN;
}

bool target_holds(const Target *t) {
  double r = ratio(t);
  if (t->at_least)
    return t->ours >= t->paper * 0.85;
  return r >= 0.85 && r <= 1.15;
}

void report_repro_text(Buf *b, const Repro *r) {
  buf_printf(b, "%-10s %-64s %10s %10s %7s\n", "where", "figure", "paper",
             "ours", "ratio");
  int off = 0;
  for (int i = 0; i < r->ntargets; i++) {
    const Target *t = &r->targets[i];
    bool ok = target_holds(t);
    off += !ok;
    char paper[32], ours[32];
    const char *u = t->unit[0] == 'x' ? "x" : t->unit[0] == '%' ? "%" : "";
    snprintf(paper, sizeof paper, "%s%.4g%s", t->at_least ? ">" : "",
             t->paper, u);
    snprintf(ours, sizeof ours, "%.4g%s", t->ours, u);
    buf_printf(b, "%-10s %-64.64s %10s %10s %7.3f%s\n", t->where, t->what,
               paper, ours, ratio(t), ok ? "" : "  *");
  }
  buf_printf(b, "\n%d figures, %d within 0.85-1.15 of the paper's; those "
                "marked * are explained in docs/model.md.\n",
             r->ntargets, r->ntargets - off);
  buf_printf(b, "The whole evaluation (2 models, 21 sequence lengths, %d "
                "designs, prefill and decode) took %.3f s.\n",
             DES_COUNT, r->elapsed);
}

json_t *report_repro_json(const Repro *r) {
  json_t *root = json_object();
  json_t *ts = json_object();
  for (int i = 0; i < r->ntargets; i++) {
    const Target *t = &r->targets[i];
    json_t *o = json_object();
    json_object_set_new(o, "ours", report_real(t->ours));
    json_object_set_new(o, "paper", report_real(t->paper));
    json_object_set_new(o, "ratio", report_real(ratio(t)));
    json_object_set_new(o, "unit", json_string(t->unit));
    json_object_set_new(o, "where", json_string(t->where));
    json_object_set_new(o, "what", json_string(t->what));
    json_object_set_new(o, "at_least", json_boolean(t->at_least));
    json_object_set_new(o, "within", json_boolean(target_holds(t)));
    json_object_set_new(ts, t->key, o);
  }
  json_object_set_new(root, "targets", ts);
  json_object_set_new(root, "elapsed_s", report_real(r->elapsed));
  return root;
}
