/* cells.c — a point's inputs as the columns of the outputs: the spec and
 * model, each setting, the architecture and each parameter, the design
 * and stitcher, each option, the workload; and the groups whose fronts
 * are computed apart. A point's coordinates come first: every column is
 * read off them. */
#include "study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A point's coordinate along each dimension (the last varies fastest). */
void study_point(const Study *s, long point, long *at) {
  for (int k = DIM_COUNT - 1; k >= 0; k--) {
    at[k] = point % s->dim[k];
    point /= s->dim[k];
  }
}

static int text_cell(Cell *c, const char *name, const char *text) {
  c->name = name;
  snprintf(c->text, sizeof c->text, "%s", text ? text : "");
  c->num = NAN;
  return 1;
}

static int num_cell(Cell *c, const char *name, double v) {
  c->name = name;
  snprintf(c->text, sizeof c->text, "%.10g", v);
  c->num = v;
  return 1;
}

const char *study_design_name(Design d) {
  return d == DESIGN_BEST ? "best" : design_name(d);
}

int study_ncells(const Study *s) {
  return 6 + s->nsettings + s->nparams + s->noptions;
}

int study_cells(const Study *s, long point, Cell *cells) {
  long at[DIM_COUNT];
  study_point(s, point, at);
  const CascadeModel *cm = &s->cms[at[DIM_CASCADE]];
  int st = s->combo_s[at[DIM_COMBO]], pt = s->combo_p[at[DIM_COMBO]];
  const DesignStitch *ds = &s->ds[at[DIM_DESIGN]];
  int n = 0;
  n += text_cell(&cells[n], "spec", s->cascades[cm->cascade].spec);
  n += text_cell(&cells[n], "model", cm->preset ? cm->preset->sizes.name : "");
  for (int k = 0; k < s->nsettings; k++)
    n += num_cell(&cells[n], s->settings[k].name,
                  s->stuple[(long)st * s->nsettings + k]);
  n += text_cell(&cells[n], "architecture", s->archs[at[DIM_ARCH]].name);
  for (int p = 0; p < s->nparams; p++) {
    Buf b = {0};
    study_param_text(&b, s, pt, p);
    n += text_cell(&cells[n], s->params[p].path, b.s);
    buf_free(&b);
  }
  n += text_cell(&cells[n], "design", study_design_name(ds->design));
  n += text_cell(&cells[n], "stitch",
                 ds->stitch >= 0 ? stitcher_name((Stitcher)ds->stitch) : "");
  for (int k = 0; k < s->noptions; k++) {
    const OptionAxis *ax = &s->options[k];
    long r = at[DIM_OPTIONS];
    for (int j = s->noptions - 1; j > k; j--)
      r /= s->options[j].n;
    double v = ax->values[r % ax->n];
    /* An enum's value by its name (bind: cost); a switch's as 0 or 1. */
    const char *name = model_option_info[ax->option].kind == MOK_ENUM
                           ? model_option_value_name(ax->option, (int)v)
                           : NULL;
    n += name ? text_cell(&cells[n], ax->name, name)
              : num_cell(&cells[n], ax->name, v);
  }
  n += text_cell(&cells[n], "workload",
                 s->workloads[at[DIM_WORKLOAD]].name);
  return n;
}


int study_groups(const Study *s, int *group_of, char ***labels) {
  Cell *cells = xcalloc((size_t)study_ncells(s), sizeof *cells);
  char **keys = NULL;
  int n = 0;
  for (long p = 0; p < s->npoints; p++) {
    study_cells(s, p, cells);
    Buf key = {0};
    buf_printf(&key, "%s", cells[study_ncells(s) - 1].text); /* workload */
    for (int k = 0; k < s->nfront_per; k++)
      buf_printf(&key, ", %s=%s", cells[s->front_per[k]].name,
                 cells[s->front_per[k]].text);
    int g = 0;
    while (g < n && strcmp(keys[g], key.s))
      g++;
    if (g == n) {
      keys = xrealloc(keys, (size_t)(n + 1) * sizeof *keys);
      keys[n++] = key.s;
    } else {
      buf_free(&key);
    }
    group_of[p] = g;
  }
  free(cells);
  *labels = keys;
  return n;
}
