/* path.c — a study's parameter paths (docs/sweep.md, "Paths"): keys of the
 * architecture file joined by '.', a list item by its name
 * (memory.GlobalBuffer), its position (memory[1], memory[-1]) or, in the
 * memory and compute lists, its role (memory[fusion], memory[registers],
 * compute[matrix]). A path is resolved once per base architecture to its
 * canonical form, every list item by position (memory[1].capacity): the
 * variants are edited there, and two paths that name one field on one
 * architecture are caught. */
#include "study.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* strtok_r skips empty keys: '', '.' and 'a..b' would name nothing (or
 * the section itself) without a word. */
bool study_path_valid(const char *path) {
  size_t len = strlen(path);
  return len && path[0] != '.' && path[len - 1] != '.' && !strstr(path, "..");
}

/* A segment "key" or "key[SEL]": SEL (NULL: none) points into SEG, which
 * is cut at the '['. False if a '[' has no ']' at the segment's end. */
static bool split_segment(char *seg, char **sel) {
  char *open = strchr(seg, '[');
  *sel = NULL;
  if (!open)
    return !strchr(seg, ']');
  size_t len = strlen(open);
  if (len < 3 || open[len - 1] != ']' || open == seg)
    return false;
  open[len - 1] = '\0';
  *open = '\0';
  *sel = open + 1;
  return !strpbrk(*sel, "[]");
}

/* SEL as a position among N items: "2" (from the outermost, 0 first) or
 * "-1" (from the innermost). -1: SEL is no whole number; -2: out of range. */
static int sel_position(const char *sel, int n) {
  char *end;
  errno = 0;
  long v = strtol(sel, &end, 10);
  if (*end || end == sel || errno || (sel[0] == '+'))
    return -1;
  if (v < 0)
    v += n;
  return v >= 0 && v < n ? (int)v : -2;
}

/* The role of item I of list LIST ("memory" or "compute") of A. */
static const char *item_role(const Arch *a, const char *list, int i) {
  return strcmp(list, "memory") == 0 ? level_role_name(arch_level_role(a, i))
                                     : role_name(a->units[i].role);
}

/* The item of list LIST of A whose role is SEL ("fusion": the fusion
 * level, whatever its role is called), or -1 with the reason in WHY:
 * none, or several. */
static int select_by_role(const Arch *a, const char *list, const char *sel,
                          Buf *why) {
  bool memory = strcmp(list, "memory") == 0;
  int n = memory ? a->nlevels : a->nunits, found = -1, count = 0;
  if (memory && strcmp(sel, "fusion") == 0)
    return a->fusion_level;
  for (int i = 0; i < n; i++)
    if (strcmp(item_role(a, list, i), sel) == 0) {
      found = found < 0 ? i : found;
      count++;
    }
  if (count == 1)
    return found;
  buf_printf(why, "%s[%s]: %s %s%s the role '%s' (", list, sel,
             count ? "several" : "no", memory ? "level" : "unit",
             count ? "s have" : " has", sel);
  for (int i = 0; i < n; i++)
    buf_printf(why, "%s%s %s", i ? ", " : "",
               memory ? a->levels[i].name : a->units[i].name,
               item_role(a, list, i));
  buf_printf(why, ")%s", count ? ": name one, or give its position" : "");
  return -1;
}

/* The item of sequence N that SEL (a position, or a role of A's LIST)
 * selects, or -1 with the reason in WHY. */
static int select_item(const YamlNode *n, const char *list, const char *sel,
                       const Arch *a, Buf *why) {
  int pos = sel_position(sel, n->n);
  if (pos == -2)
    buf_printf(why, "%s[%s]: there are %d items (0 to %d, or -1 to -%d)",
               list, sel, n->n, n->n - 1, n->n);
  if (pos != -1)
    return pos;
  if (!a) {
    buf_printf(why, "%s[%s]: only memory and compute items are selected by "
                    "role; this list, by name or position",
               list, sel);
    return -1;
  }
  return select_by_role(a, list, sel, why);
}

/* The item of sequence N named NAME, or -1 with the names in WHY. */
static int item_named(const YamlNode *n, const char *name, Buf *why) {
  for (int i = 0; i < n->n; i++) {
    const YamlNode *nm = ydoc_get(n->items[i], "name");
    if (nm && nm->kind == YN_SCALAR && strcmp(nm->text, name) == 0)
      return i;
  }
  buf_printf(why, "no item named '%s' (items:", name);
  for (int i = 0; i < n->n; i++) {
    const YamlNode *nm = ydoc_get(n->items[i], "name");
    buf_printf(why, " %s", nm && nm->kind == YN_SCALAR ? nm->text : "?");
  }
  buf_printf(why, ")");
  return -1;
}

/* A walk along a path: where it is, and the canonical path so far. */
typedef struct Walk {
  const YamlNode *n;
  const Arch *roles; /* for role selectors in memory and compute, or NULL */
  Buf *canon;        /* or NULL */
  Buf *why;
} Walk;

/* One step: KEY in a mapping (then SEL, if any, in the list it holds), or
 * KEY as an item's name in a list. TOP: the walk is at the architecture
 * section, whose memory and compute lists take role selectors. */
static bool step(Walk *w, const char *key, const char *sel, bool top) {
  const YamlNode *n = w->n, *child = NULL;
  if (n->kind == YN_MAP) {
    child = ydoc_get(n, key);
    if (!child)
      buf_printf(w->why, "it has no '%s' there", key);
    if (w->canon)
      buf_printf(w->canon, "%s%s", w->canon->len ? "." : "", key);
  } else if (n->kind == YN_SEQ && !sel) {
    int i = item_named(n, key, w->why);
    child = i >= 0 ? n->items[i] : NULL;
    if (w->canon)
      buf_printf(w->canon, "[%d]", i);
  } else {
    buf_printf(w->why, "'%s' is a value, not a section", key);
  }
  if (child && sel) {
    if (child->kind != YN_SEQ) {
      buf_printf(w->why, "%s[%s]: '%s' is not a list", key, sel, key);
      return false;
    }
    bool by_role = top && (!strcmp(key, "memory") || !strcmp(key, "compute"));
    int i = select_item(child, key, sel, by_role ? w->roles : NULL, w->why);
    if (i < 0)
      return false;
    child = child->items[i];
    if (w->canon)
      buf_printf(w->canon, "[%d]", i);
  }
  w->n = child;
  return child != NULL;
}

/* Walk PATH from the architecture section of ROOT: *PARENT, *KEY as in
 * study_path_node; the canonical path into W's canon. */
static bool walk(Walk *w, const char *path, YamlNode **parent,
                 const char **key) {
  const YamlNode *arch = w->n;
  char *copy = xstrdup(path), *save = NULL, *sel;
  bool ok = true;
  char *seg = strtok_r(copy, ".", &save);
  while (ok && seg) {
    char *next = strtok_r(NULL, ".", &save);
    if (!split_segment(seg, &sel)) {
      buf_printf(w->why, "'%s' is not KEY or KEY[SELECTOR]", seg);
      ok = false;
      break;
    }
    if (w->n->kind == YN_MAP && !next && !sel) {
      if (!strcmp(seg, "name")) { /* every field changes a figure */
        buf_printf(w->why, "'name' labels an item and changes no figure");
        ok = false;
        break;
      }
      *parent = (YamlNode *)w->n;
      *key = path + (seg - copy);
      if (w->canon)
        buf_printf(w->canon, "%s%s", w->canon->len ? "." : "", seg);
      break;
    }
    ok = step(w, seg, sel, w->n == arch);
    seg = next;
    if (ok && !seg) { /* the path ends at a list or a list item */
      buf_printf(w->why, "it names a section, not a field");
      ok = false;
    }
  }
  free(copy);
  return ok;
}

/* The architecture section of ROOT, if PATH may be walked in it; NULL
 * with the reason in WHY. */
static const YamlNode *arch_section(const YamlNode *root, const char *path,
                                    Buf *why) {
  const YamlNode *n = ydoc_get(root, "architecture");
  if (!n || n->kind != YN_MAP) {
    buf_printf(why, "it has no architecture section");
    return NULL;
  }
  if (!study_path_valid(path)) {
    buf_printf(why, "a path is keys joined by '.', none of them empty");
    return NULL;
  }
  return n;
}

bool study_path_node(const YamlNode *root, const char *path,
                     YamlNode **parent, const char **key, Buf *why) {
  Walk w = {arch_section(root, path, why), NULL, NULL, why};
  return w.n && walk(&w, path, parent, key);
}

bool study_path_resolve(const YamlNode *root, const char *file,
                        const char *path, Buf *canon, Buf *why) {
  Walk w = {arch_section(root, path, why), NULL, canon, why};
  if (!w.n)
    return false;
  Arch *a = NULL;
  if (strchr(path, '[')) { /* a selector, maybe a role: load the roles */
    Diag d = {0};
    a = arch_from_yaml(file, root, &d);
    if (!a) {
      buf_printf(why, "its roles are unknown: %s:%d:%d: %s", d.file,
                 d.loc.line, d.loc.col, d.msg);
      return false;
    }
    w.roles = a;
  }
  YamlNode *parent;
  const char *key;
  bool ok = walk(&w, path, &parent, &key);
  arch_free(a);
  return ok;
}
