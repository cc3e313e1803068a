/* fusion_report.c — the pair table and the fusion plans. */
#include "report.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

const char *einsum_name(const Cascade *c, int einsum) {
  return c->tensors[c->einsums[einsum]->out.tensor].name;
}

void node_label(Buf *b, const Cascade *c, const Node *nd) {
  for (int i = 0; i < nd->n; i++)
    buf_printf(b, "%s%s", i ? "+" : "", einsum_name(c, nd->einsums[i]));
}

void fmt_si(Buf *b, double v) {
  static const char *const prefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int k = 0;
  while (k < 6 && (v >= 1e3 || v <= -1e3)) {
    v /= 1e3;
    k++;
  }
  buf_printf(b, "%.4g%s%s", v, k ? " " : "", prefix[k]);
}

void fmt_unit(Buf *b, double v, const char *unit) {
  static const char *const prefix[] = {"p", "n", "u", "m", "",  "k",
                                       "M", "G", "T", "P", "E"};
  int k = 4; /* no prefix */
  while (k < 10 && fabs(v) >= 1e3)
    v /= 1e3, k++;
  while (k > 0 && v != 0 && fabs(v) < 1)
    v *= 1e3, k--;
  buf_printf(b, "%.4g %s%s", v, prefix[k], unit);
}

/* ---- pair rows, shared by the text and JSON forms ---- */

typedef struct Row {
  int pair;          /* index into pairs */
  int from, to;      /* node or Einsum numbers (0-based) */
} Row;

/* One row per edge; with nodes, edges inside a node are dropped and the
 * rest are numbered by node, one row per (node, node, tensor). */
static int pair_rows(const Cascade *c, const Pair *pairs, const Nodes *nodes,
                     Row *rows) {
  int n = 0;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = pairs[i].edge;
    int a = nodes ? nodes->node_of[e->producer] : e->producer;
    int b = nodes ? nodes->node_of[e->consumer] : e->consumer;
    if (nodes && a == b)
      continue;
    bool dup = false;
    for (int r = 0; r < n && !dup; r++)
      dup = rows[r].from == a && rows[r].to == b &&
            pairs[rows[r].pair].edge->tensor == e->tensor;
    if (!dup)
      rows[n++] = (Row){i, a, b};
  }
  return n;
}

static void row_name(Buf *b, const Cascade *c, const Nodes *nodes, int k) {
  if (nodes)
    node_label(b, c, &nodes->nodes[k]);
  else
    buf_printf(b, "%s", einsum_name(c, k));
}

static void var_names(Buf *b, const Einsum *e, VarSet s) {
  int n = 0;
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(s, v))
      buf_printf(b, "%s%s", n++ ? "," : "", e->vars[v].name);
  if (n == 0)
    buf_printf(b, "-");
}

static void rank_names(Buf *b, const Cascade *c, int tensor) {
  const Tensor *t = &c->tensors[tensor];
  for (int k = 0; k < t->nranks; k++)
    buf_printf(b, "%s%s", k ? "," : "", c->ranks[t->ranks[k]].name);
  if (t->nranks == 0)
    buf_printf(b, "-");
}

static int count_gemms(const Cascade *c) {
  int n = 0;
  for (int i = 0; i < c->neinsums; i++)
    n += einsum_is_gemm(c, c->einsums[i]);
  return n;
}

void report_pairs_text(Buf *b, const Cascade *c, const Shape *s,
                       const Pair *pairs, const Nodes *nodes) {
  Row *rows = xcalloc((size_t)c->nedges + 1, sizeof *rows);
  int n = pair_rows(c, pairs, nodes, rows);
  buf_printf(b, "%s: %d Einsums (%d GEMM-like)", c->path, c->neinsums,
             count_gemms(c));
  if (nodes)
    buf_printf(b, ", %d after shared-input merging", nodes->n);
  buf_printf(b, ", %d producer->consumer pairs", n);
  if (s && s->model)
    buf_printf(b, ", model %s", s->model->name);
  buf_printf(b, "\n\n");

  /* Format cells first to size the columns. */
  enum { NCOL = 7 };
  const char *head[NCOL] = {"producer", "consumer", "tensor", "class",
                            "shared ranks", "reduced", "broadcast"};
  Buf *cells = xcalloc((size_t)n * NCOL + 1, sizeof *cells);
  int width[NCOL];
  for (int k = 0; k < NCOL; k++)
    width[k] = (int)strlen(head[k]);
  for (int r = 0; r < n; r++) {
    const Pair *pr = &pairs[rows[r].pair];
    const Edge *e = pr->edge;
    Buf *row = &cells[r * NCOL];
    buf_printf(&row[0], "%d ", (nodes ? rows[r].from : e->producer) + 1);
    row_name(&row[0], c, nodes, rows[r].from);
    buf_printf(&row[1], "%d ", (nodes ? rows[r].to : e->consumer) + 1);
    row_name(&row[1], c, nodes, rows[r].to);
    buf_printf(&row[2], "%s", c->tensors[e->tensor].name);
    buf_printf(&row[3], "%s", fusion_class_name(pr->cls));
    rank_names(&row[4], c, e->tensor);
    var_names(&row[5], c->einsums[e->producer], pr->reduced);
    var_names(&row[6], c->einsums[e->consumer], pr->broadcast);
    for (int k = 0; k < NCOL; k++)
      if ((int)row[k].len > width[k])
        width[k] = (int)row[k].len;
  }
  for (int k = 0; k < NCOL; k++)
    buf_printf(b, "%-*s  ", width[k], head[k]);
  buf_printf(b, "notes\n");
  for (int r = 0; r < n; r++) {
    const Edge *e = pairs[rows[r].pair].edge;
    for (int k = 0; k < NCOL; k++)
      buf_printf(b, "%-*s  ", width[k], cells[r * NCOL + k].s);
    if (e->lagged)
      buf_printf(b, "iterative (reads an earlier i)");
    else if (e->windowed)
      buf_printf(b, "windowed read");
    while (b->len > 0 && b->s[b->len - 1] == ' ')
      b->s[--b->len] = 0;
    buf_printf(b, "\n");
  }
  int count[FC_COUNT] = {0};
  for (int r = 0; r < n; r++)
    count[pairs[rows[r].pair].cls]++;
  buf_printf(b, "\n%d RI, %d RSb, %d RSp, %d RD\n", count[FC_RI],
             count[FC_RSB], count[FC_RSP], count[FC_RD]);
  for (int i = 0; i < n * NCOL; i++)
    buf_free(&cells[i]);
  free(cells);
  free(rows);
}

static json_t *var_array(const Einsum *e, VarSet s) {
  json_t *a = json_array();
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(s, v))
      json_array_append_new(a, json_string(e->vars[v].name));
  return a;
}

json_t *report_pairs_json(const Cascade *c, const Shape *s, const Pair *pairs,
                          const Nodes *nodes) {
  json_t *root = json_object();
  json_object_set_new(root, "spec", json_string(c->path));
  json_object_set_new(root, "model", s && s->model
                                         ? json_string(s->model->name)
                                         : json_null());
  json_object_set_new(root, "einsums", json_integer(c->neinsums));
  json_object_set_new(root, "gemm_like", json_integer(count_gemms(c)));
  json_object_set_new(root, "merged", json_boolean(nodes != NULL));
  Row *rows = xcalloc((size_t)c->nedges + 1, sizeof *rows);
  int n = pair_rows(c, pairs, nodes, rows);
  json_t *edges = json_array();
  for (int r = 0; r < n; r++) {
    const Pair *pr = &pairs[rows[r].pair];
    const Edge *e = pr->edge;
    Buf from = {0}, to = {0};
    row_name(&from, c, nodes, rows[r].from);
    row_name(&to, c, nodes, rows[r].to);
    json_t *o = json_object();
    json_object_set_new(o, "producer", json_string(from.s));
    json_object_set_new(o, "consumer", json_string(to.s));
    json_object_set_new(o, "tensor", json_string(c->tensors[e->tensor].name));
    json_object_set_new(o, "class", json_string(fusion_class_name(pr->cls)));
    json_t *ranks = json_array();
    const Tensor *t = &c->tensors[e->tensor];
    for (int k = 0; k < t->nranks; k++)
      json_array_append_new(ranks, json_string(c->ranks[t->ranks[k]].name));
    json_object_set_new(o, "shared_ranks", ranks);
    json_object_set_new(o, "reduced",
                        var_array(c->einsums[e->producer], pr->reduced));
    json_object_set_new(o, "broadcast",
                        var_array(c->einsums[e->consumer], pr->broadcast));
    json_object_set_new(o, "iterative", json_boolean(e->lagged));
    json_object_set_new(o, "windowed", json_boolean(e->windowed));
    json_array_append_new(edges, o);
    buf_free(&from);
    buf_free(&to);
  }
  json_object_set_new(root, "edges", edges);
  free(rows);
  return root;
}

/* ---- plans ---- */

void report_plan_text(Buf *b, const Cascade *c, const Plan *p) {
  buf_printf(b, "strategy %s (%s stitching): %d group%s%s\n",
             strategy_name(p->strategy), stitcher_name(p->stitcher),
             p->ngroups, p->ngroups == 1 ? "" : "s",
             p->any ? " (labelled any: a group holds an edge of a class the "
                      "strategy forbids)"
                    : "");
  /* Each group's merged nodes in the order they run (merging may move an
   * Einsum after a later one: the chunked SSD's {CB YO} after HS), a
   * node's members in braces. */
  for (int g = 0; g < p->ngroups; g++) {
    buf_printf(b, "  G%-3d", g + 1);
    for (int k = 0; k < p->nodes->n; k++) {
      const Node *nd = &p->nodes->nodes[k];
      int in = 0;
      for (int i = 0; i < nd->n; i++)
        in += p->group_of[nd->einsums[i]] == g;
      for (int i = 0, seen = 0; i < nd->n; i++) {
        int e = nd->einsums[i];
        if (p->group_of[e] != g)
          continue;
        seen++;
        bool braces = in > 1;
        buf_printf(b, " %s%d:%s%s", braces && seen == 1 ? "{" : "", e + 1,
                   einsum_name(c, e), braces && seen == in ? "}" : "");
      }
    }
    if (p->groups[g].level[0]) /* its own fusion level */
      buf_printf(b, "   (fused in %s)", p->groups[g].level);
    buf_printf(b, "\n");
  }
  if (p->offchip_elems > 0) {
    buf_printf(b, "  off-chip intermediate traffic: ");
    fmt_si(b, p->offchip_elems);
    buf_printf(b, " elements\n");
  }
}

json_t *report_plan_json(const Cascade *c, const Plan *p) {
  json_t *o = json_object();
  json_object_set_new(o, "strategy", json_string(strategy_name(p->strategy)));
  if (p->any) /* the groups follow no strategy's classes: planfile.c */
    json_object_set_new(o, "label", json_string(PLAN_LABEL_ANY));
  json_object_set_new(o, "stitch", json_string(stitcher_name(p->stitcher)));
  json_t *groups = json_array();
  for (int g = 0; g < p->ngroups; g++) {
    json_t *a = json_array();
    for (int i = 0; i < p->groups[g].n; i++)
      json_array_append_new(a,
                            json_string(einsum_name(c, p->groups[g].einsums[i])));
    json_array_append_new(groups, a);
  }
  json_object_set_new(o, "groups", groups);
  json_t *merged = json_array();
  for (int k = 0; k < p->nodes->n; k++) {
    const Node *nd = &p->nodes->nodes[k];
    if (one_recurrence(c, nd->n, nd->einsums))
      continue; /* not merged: an Einsum, or a recurrence's */
    json_t *a = json_array();
    for (int i = 0; i < nd->n; i++)
      json_array_append_new(a, json_string(einsum_name(c, nd->einsums[i])));
    json_array_append_new(merged, a);
  }
  json_object_set_new(o, "merged", merged);
  json_t *off = json_array();
  for (int t = 0; t < c->ntensors; t++)
    if (c->tensors[t].producer >= 0 && !p->onchip[t])
      json_array_append_new(off, json_string(c->tensors[t].name));
  json_object_set_new(o, "offchip", off);
  json_object_set_new(o, "offchip_elements", report_real(p->offchip_elems));
  if (p->spilled) { /* chosen (the search's): planfile.c reads them back */
    json_t *sp = json_array();
    for (int t = 0; t < c->ntensors; t++)
      if (p->spilled[t])
        json_array_append_new(sp, json_string(c->tensors[t].name));
    json_object_set_new(o, "spilled", sp);
  }
  if (p->design[0]) /* priced as this named design: planfile.c */
    json_object_set_new(o, "design", json_string(p->design));
  if (p->bind != PLAN_BIND_UNSAID)
    json_object_set_new(o, "bind", json_string(plan_bind_name(p->bind)));
  if (p->fusion_level[0]) /* the level a search chose: planfile.c */
    json_object_set_new(o, "fusion_level", json_string(p->fusion_level));
  if (plan_names_levels(p)) { /* each group's own: planfile.c */
    json_t *gl = json_array();
    for (int g = 0; g < p->ngroups; g++)
      json_array_append_new(gl, p->groups[g].level[0]
                                    ? json_string(p->groups[g].level)
                                    : json_null());
    json_object_set_new(o, "group_levels", gl);
  }
  return o;
}

static void dot_id(Buf *b, const char *s) {
  buf_printf(b, "\"");
  for (; *s; s++)
    buf_printf(b, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
  buf_printf(b, "\"");
}

void report_plan_dot(Buf *b, const Cascade *c, const Pair *pairs,
                     const Plan *p) {
  buf_printf(b, "digraph cascade {\n  label=");
  Buf title = {0};
  buf_printf(&title, "%s: %s, %d group%s", c->path,
             strategy_name(p->strategy), p->ngroups, p->ngroups == 1 ? "" : "s");
  dot_id(b, title.s);
  buf_free(&title);
  buf_printf(b, ";\n  rankdir=TB;\n  node [shape=box, style=rounded];\n");
  for (int g = 0; g < p->ngroups; g++) {
    buf_printf(b, "  subgraph cluster_%d {\n    label=\"G%d\";\n", g + 1,
               g + 1);
    buf_printf(b, "    style=filled; color=\"#dcebff\";\n");
    for (int i = 0; i < p->groups[g].n; i++) {
      int e = p->groups[g].einsums[i];
      Buf label = {0};
      buf_printf(&label, "%d: %s%s", e + 1, einsum_name(c, e),
                 einsum_is_gemm(c, c->einsums[e]) ? " (GEMM)" : "");
      buf_printf(b, "    e%d [label=", e + 1);
      dot_id(b, label.s);
      buf_printf(b, "];\n");
      buf_free(&label);
    }
    buf_printf(b, "  }\n");
  }
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = pairs[i].edge;
    buf_printf(b, "  e%d -> e%d [label=\"%s %s\"%s];\n", e->producer + 1,
               e->consumer + 1, c->tensors[e->tensor].name,
               fusion_class_name(pairs[i].cls),
               e->lagged ? ", style=dashed, constraint=false"
               : e->windowed ? ", style=bold"
                             : "");
  }
  buf_printf(b, "}\n");
}
