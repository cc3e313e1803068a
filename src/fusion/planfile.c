/* planfile.c — plans read back from `fuse --json` (eval --plan, exec
 * --plan): one reader, checking the file against the cascade and, through
 * plan_check_label (stitch.c), against its own label.
 *
 * A file comes from a user: every group, every name and the label are
 * checked against the cascade before anything is built from them, so
 * that a plan that cannot be priced or run is refused with the group and
 * the Einsum named, never half-read. */
#include "fusion.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const bind_names[] = {"", "rule", "cost"};
_Static_assert(sizeof bind_names / sizeof bind_names[0] == PLAN_BIND_COUNT,
               "a name per plan binding");

const char *plan_bind_name(PlanBind b) { return bind_names[b]; }

/* The plans a file holds: "ri, full" into BUF. */
static const char *plan_list(json_t *plans, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; i < json_array_size(plans) && len < n; i++) {
    const char *s =
        json_string_value(json_object_get(json_array_get(plans, i), "strategy"));
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                            s ? s : "(unlabelled)");
  }
  return buf;
}

/* The one plan of ROOT to read: ROOT itself, or the element of its
 * "plans" labelled WANT (or its only element when WANT is NULL). */
static json_t *select_plan(json_t *root, const char *want, const char *file,
                           Diag *d) {
  json_t *plans = json_object_get(root, "plans");
  if (!plans) {
    const char *s = json_string_value(json_object_get(root, "strategy"));
    if (want && s && strcmp(want, s) != 0) {
      diag_error(d, file, (Loc){0, 0},
                 "holds one plan, labelled '%s', not '%s'", s, want);
      return NULL;
    }
    return root;
  }
  if (!json_is_array(plans) || json_array_size(plans) == 0) {
    diag_error(d, file, (Loc){0, 0},
               "\"plans\" holds no plan: write one with `fuse --json`");
    return NULL;
  }
  if (!want && json_array_size(plans) == 1)
    return json_array_get(plans, 0);
  json_t *found = NULL;
  size_t first = 0;
  for (size_t i = 0; want && i < json_array_size(plans); i++) {
    json_t *p = json_array_get(plans, i);
    const char *s = json_string_value(json_object_get(p, "strategy"));
    if (s && strcmp(s, want) == 0 && found) {
      /* which one was meant cannot be told: never the first in silence */
      diag_error(d, file, (Loc){0, 0}, "holds two plans labelled '%s' "
                 "(plans %zu and %zu): keep one", want, first + 1, i + 1);
      return NULL;
    }
    if (s && strcmp(s, want) == 0) {
      found = p;
      first = i;
    }
  }
  if (found)
    return found;
  char list[512];
  plan_list(plans, list, sizeof list);
  if (want)
    diag_error(d, file, (Loc){0, 0}, "holds no plan labelled '%s' (it holds "
               "%zu: %s)", want, json_array_size(plans), list);
  else
    diag_error(d, file, (Loc){0, 0}, "holds %zu plans (%s): pick one with "
               "--strategy S", json_array_size(plans), list);
  return NULL;
}

/* GROUP_OF from the groups' names: every name an Einsum's output, every
 * Einsum in exactly one group, no group empty (so there are at most as
 * many groups as Einsums). */
static bool read_groups(const Cascade *c, json_t *groups, int *group_of,
                        const char *file, Diag *d) {
  for (int e = 0; e < c->neinsums; e++)
    group_of[e] = -1;
  size_t ng = json_array_size(groups);
  for (size_t g = 0; g < ng; g++) {
    json_t *names = json_array_get(groups, g);
    if (!json_is_array(names) || json_array_size(names) == 0) {
      diag_error(d, file, (Loc){0, 0}, "group %zu is %s: a group is a "
                 "non-empty list of Einsums", g + 1,
                 json_is_array(names) ? "empty" : "not a list");
      return false;
    }
    for (size_t i = 0; i < json_array_size(names); i++) {
      const char *n = json_string_value(json_array_get(names, i));
      int t = n ? cascade_tensor(c, n) : -1;
      int e = t >= 0 ? c->tensors[t].producer : -1;
      if (e < 0) {
        diag_error(d, file, (Loc){0, 0}, "group %zu names '%s', which no "
                   "Einsum of %s produces", g + 1,
                   n ? n : "(not a string)", c->path);
        return false;
      }
      if (group_of[e] >= 0) {
        diag_error(d, file, (Loc){0, 0}, "%s is in groups %d and %zu", n,
                   group_of[e] + 1, g + 1);
        return false;
      }
      group_of[e] = (int)g;
    }
  }
  for (int e = 0; e < c->neinsums; e++)
    if (group_of[e] < 0) {
      diag_error(d, file, (Loc){0, 0}, "no group holds %s (every Einsum of "
                 "%s must be in one)",
                 c->tensors[c->einsums[e]->out.tensor].name, c->path);
      return false;
    }
  return true;
}

/* P's label into *ST and *ANY: "label" when it has one, else its
 * "strategy". Under "label": "any" (an Algorithm 1 plan that breaks its
 * strategy's classes) the Einsums are merged as its "strategy" asked. */
static bool read_label(json_t *p, Strategy *st, bool *any, const char *file,
                       Diag *d) {
  const char *sname = json_string_value(json_object_get(p, "strategy"));
  json_t *relabel = json_object_get(p, "label");
  const char *label = relabel ? json_string_value(relabel) : sname;
  if (!json_is_array(json_object_get(p, "groups")) || !sname || !label) {
    diag_error(d, file, (Loc){0, 0}, "not a plan: expected {\"strategy\": S, "
               "\"groups\": [[EINSUM, ...], ...]} (and maybe \"label\": "
               "\"any\") as `fuse --json` writes");
    return false;
  }
  if (!plan_label_from_name(label, st, any)) {
    char names[160] = "";
    size_t n = 0;
    for (int i = 0; i < ST_COUNT; i++) /* the table's, in its order */
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                            i ? ", " : "", strategy_name((Strategy)i));
    diag_error(d, file, (Loc){0, 0}, "unknown strategy '%s' (expected "
               "%s or any)", label, names);
    return false;
  }
  Strategy asked;
  if (relabel && *any && strategy_from_name(sname, &asked))
    *st = asked;
  return true;
}

/* P's "bind" (optional: "rule" or "cost") into PLAN. */
static bool read_bind(json_t *p, Plan *plan, const char *file, Diag *d) {
  json_t *b = json_object_get(p, "bind");
  if (!b)
    return true; /* unsaid: the command's options decide */
  const char *name = json_string_value(b);
  for (int k = PLAN_BIND_RULE; name && k < PLAN_BIND_COUNT; k++)
    if (strcmp(name, bind_names[k]) == 0) {
      plan->bind = (PlanBind)k;
      return true;
    }
  diag_error(d, file, (Loc){0, 0}, "unknown \"bind\" '%s' (expected rule "
             "or cost)", name ? name : "(not a string)");
  return false;
}

/* P's "spilled" (optional: the intermediates sent off chip by choice,
 * each one an Einsum's output) into PLAN. */
static bool read_spilled(const Cascade *c, json_t *p, Plan *plan,
                         const char *file, Diag *d) {
  json_t *a = json_object_get(p, "spilled");
  if (!a)
    return true; /* the model's distance rule decides */
  if (!json_is_array(a)) {
    diag_error(d, file, (Loc){0, 0}, "\"spilled\" is not a list of "
               "tensors");
    return false;
  }
  plan->spilled = xcalloc((size_t)c->ntensors + 1, sizeof *plan->spilled);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const char *n = json_string_value(json_array_get(a, i));
    int t = n ? cascade_tensor(c, n) : -1;
    if (t < 0 || c->tensors[t].producer < 0) {
      diag_error(d, file, (Loc){0, 0}, "\"spilled\" names '%s', which no "
                 "Einsum of %s produces", n ? n : "(not a string)", c->path);
      return false;
    }
    plan->spilled[t] = true;
  }
  return true;
}

/* P's "design" (optional: the named design whose pricing the plan takes;
 * the command checks the name) into PLAN. */
static bool read_design(json_t *p, Plan *plan, const char *file, Diag *d) {
  json_t *j = json_object_get(p, "design");
  if (!j)
    return true;
  const char *name = json_string_value(j);
  if (!name || strlen(name) >= sizeof plan->design) {
    diag_error(d, file, (Loc){0, 0}, "\"design\" is not a design's name");
    return false;
  }
  snprintf(plan->design, sizeof plan->design, "%s", name);
  return true;
}

/* Where TEXT writes NAME as the value of "fusion_level" (its first
 * such value; a file may hold several plans), or line 0: the file as a
 * whole. Jansson keeps no positions, so the text is searched. */
static Loc level_loc(const char *text, size_t len, const char *name) {
  static const char key[] = "\"fusion_level\"";
  size_t nk = sizeof key - 1, nn = strlen(name);
  Loc at = {1, 1};
  for (size_t i = 0; i < len; i++) {
    if (i + nk <= len && memcmp(text + i, key, nk) == 0) {
      size_t j = i + nk;
      while (j < len && strchr(" \t\r\n:", text[j]))
        j++;
      if (j + nn + 2 <= len && text[j] == '"' &&
          memcmp(text + j + 1, name, nn) == 0 && text[j + nn + 1] == '"')
        return (Loc){at.line, at.col + (int)(j - i)};
    }
    at = text[i] == '\n' ? (Loc){at.line + 1, 1} : (Loc){at.line, at.col + 1};
  }
  return (Loc){0, 0};
}

/* P's "fusion_level" (optional: the memory level a search priced the plan
 * with as the fusion level; the command checks it against its
 * architecture) into PLAN, with where TEXT writes it. */
static bool read_level(json_t *p, Plan *plan, const char *text, size_t len,
                       const char *file, Diag *d) {
  json_t *j = json_object_get(p, "fusion_level");
  if (!j)
    return true; /* the architecture's own */
  const char *name = json_string_value(j);
  if (!name || !name[0] || strlen(name) >= sizeof plan->fusion_level) {
    diag_error(d, file, (Loc){0, 0}, "\"fusion_level\" is not a memory "
               "level's name");
    return false;
  }
  snprintf(plan->fusion_level, sizeof plan->fusion_level, "%s", name);
  plan->fusion_level_at = level_loc(text, len, name);
  return true;
}

bool plan_names_levels(const Plan *p) {
  for (int g = 0; g < p->ngroups; g++)
    if (p->groups[g].level[0])
      return true;
  return false;
}

static void advance(Loc *at, char ch) {
  *at = ch == '\n' ? (Loc){at->line + 1, 1} : (Loc){at->line, at->col + 1};
}

/* Where TEXT writes element K of the list "group_levels" (line 0: not
 * found). Jansson keeps no positions, so the text is searched. */
static Loc group_level_loc(const char *text, size_t len, size_t k) {
  static const char key[] = "\"group_levels\"";
  size_t nk = sizeof key - 1, i = 0, n = 0;
  Loc at = {1, 1};
  while (i + nk <= len && memcmp(text + i, key, nk) != 0)
    advance(&at, text[i++]);
  while (i < len && text[i] != '[')
    advance(&at, text[i++]);
  for (; i < len && text[i] != ']'; advance(&at, text[i++])) {
    if (text[i] != '"' && text[i] != 'n')
      continue;
    if (n++ == k)
      return at;
    if (text[i] == '"') /* to its closing quote */
      do
        advance(&at, text[i++]);
      while (i < len && text[i] != '"');
    else /* null: to its last letter */
      for (int q = 0; q < 3 && i < len; q++)
        advance(&at, text[i++]);
  }
  return (Loc){0, 0};
}

/* P's "group_levels" (optional: per group, the memory level it is fused
 * at, or null: the plan's; the command checks the names against its
 * architecture) into PLAN's groups, with where TEXT writes each. */
static bool read_group_levels(json_t *p, Plan *plan, const char *text,
                              size_t len, const char *file, Diag *d) {
  json_t *j = json_object_get(p, "group_levels");
  if (!j)
    return true; /* every group at the plan's level */
  if (!json_is_array(j) || json_array_size(j) != (size_t)plan->ngroups) {
    diag_error(d, file, (Loc){0, 0}, "\"group_levels\" is not a list of "
               "%d memory levels' names (or null), one per group",
               plan->ngroups);
    return false;
  }
  for (int g = 0; g < plan->ngroups; g++) {
    json_t *e = json_array_get(j, (size_t)g);
    const char *name = json_string_value(e);
    Group *gr = &plan->groups[g];
    if (json_is_null(e))
      continue;
    if (!name || !name[0] || strlen(name) >= sizeof gr->level) {
      diag_error(d, file, group_level_loc(text, len, (size_t)g),
                 "\"group_levels\": group %d's is not a memory level's "
                 "name", g + 1);
      return false;
    }
    snprintf(gr->level, sizeof gr->level, "%s", name);
    gr->level_at = group_level_loc(text, len, (size_t)g);
  }
  return true;
}

/* The plan P describes, checked: its label, its groups, their order. */
static Plan *build_plan(const Cascade *c, const Shape *s, json_t *p,
                        const char *text, size_t len, const char *file,
                        Diag *d) {
  Strategy st;
  bool any;
  if (!read_label(p, &st, &any, file, d))
    return NULL;
  int *group_of = xmalloc(((size_t)c->neinsums + 1) * sizeof *group_of);
  Plan *plan = NULL;
  Diag pd = {0};
  if (read_groups(c, json_object_get(p, "groups"), group_of, file, d)) {
    plan = fusion_plan_groups(c, s, st, group_of, &pd);
    if (plan)
      plan->any = any;
    else /* the plan file is at fault: name it, and the Einsum's line */
      diag_error(d, file, (Loc){0, 0}, "%s (%s:%d:%d)", pd.msg, pd.file,
                 pd.loc.line, pd.loc.col);
  }
  free(group_of);
  Pair *pairs = plan ? fusion_classify(c, s) : NULL;
  if (plan && (!plan_check_label(c, pairs, plan, file, d) ||
               !read_bind(p, plan, file, d) ||
               !read_spilled(c, p, plan, file, d) ||
               !read_design(p, plan, file, d) ||
               !read_level(p, plan, text, len, file, d) ||
               !read_group_levels(p, plan, text, len, file, d))) {
    plan_free(plan);
    plan = NULL;
  }
  free(pairs);
  return plan;
}

Plan *plan_read_text(const char *file, const char *text, size_t len,
                     const char *want, const Cascade *c, const Shape *s,
                     Diag *d) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    diag_error(d, file, (Loc){je.line, je.column}, "%s", je.text);
    return NULL;
  }
  Plan *plan = NULL;
  json_t *p = json_is_object(root) ? select_plan(root, want, file, d) : NULL;
  if (!json_is_object(root))
    diag_error(d, file, (Loc){0, 0}, "not a plan: expected a JSON object "
               "as `fuse --json` writes");
  else if (p)
    plan = build_plan(c, s, p, text, len, file, d);
  json_decref(root);
  return plan;
}

Plan *plan_read_file(const char *path, const char *want, const Cascade *c,
                     const Shape *s, Diag *d) {
  size_t len;
  char *text = read_input(path, INPUT_TEXT_MAX, &len, d);
  if (!text)
    return NULL;
  Plan *p = plan_read_text(path, text, len, want, c, s, d);
  free(text);
  return p;
}
