/* opts.c — the option engine: argv parsed against a command's tables
 * (cli.h, "declarative commands"), and its --help written from them. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Buf b = {0};
  buf_escaped(&b, msg); /* a value with a newline stays on one line */
  fprintf(stderr, "%s: %s\n", cmd, b.s);
  buf_free(&b);
  return EXIT_INPUT;
}

/* ---- the tables ---- */

/* C's U-th table: its own, then the shared ones; a NULL table past the
 * last. */
static OptUse use_of(const Command *c, int u) {
  if (u == 0)
    return (OptUse){c->opts, 0, NULL};
  return u <= OPT_USES ? c->uses[u - 1] : (OptUse){NULL, 0, NULL};
}

/* The K-th option of C over its tables, in order (NULL past the last),
 * with the base of its table. */
static const Opt *opt_at(const Command *c, int k, size_t *base) {
  OptUse use;
  for (int u = 0; (use = use_of(c, u)).table; u++) {
    if (k < use.table->n) {
      *base = use.base;
      return &use.table->opts[k];
    }
    k -= use.table->n;
  }
  return NULL;
}

/* The place of option NAME in C (the first of that name), or -1. */
static int opt_find(const Command *c, const char *name) {
  size_t base;
  const Opt *o;
  for (int k = 0; (o = opt_at(c, k, &base)); k++)
    if (!(o->flags & OPT_POSITIONAL) && strcmp(o->name, name) == 0)
      return k;
  return -1;
}

/* "did you mean '--design'? " for an unknown option NAME of C. */
static void near_option(Buf *b, const Command *c, const char *name) {
  Nearest n = nearest_start(name);
  size_t base;
  const Opt *o;
  for (int k = 0; (o = opt_at(c, k, &base)); k++)
    if (!(o->flags & OPT_POSITIONAL))
      nearest_offer(&n, o->name);
  buf_did_you_mean(b, &n);
}

int command_option_arity(const Command *c, const char *name) {
  int k = opt_find(c, name);
  size_t base;
  const Opt *o = k < 0 ? NULL : opt_at(c, k, &base);
  if (!o)
    return -1;
  return o->kind == OPT_FLAG || o->kind == OPT_SWITCH ||
                 o->kind == OPT_REFUSED
             ? 0
             : 1;
}

/* The place of C's N-th positional argument, or -1. */
static int positional_at(const Command *c, int n) {
  size_t base;
  const Opt *o;
  for (int k = 0; (o = opt_at(c, k, &base)); k++)
    if ((o->flags & OPT_POSITIONAL) && n-- == 0)
      return k;
  return -1;
}

bool opt_given(const Parsed *p, const char *name) {
  int k = opt_find(p->command, name);
  return k >= 0 && p->seen[k];
}

/* ---- values ---- */

/* An integer in [LO, HI] written as a plain decimal ("16", "1e3"). */
static bool parse_count(const char *s, double lo, double hi, long *out) {
  double v;
  if (!parse_decimal(s, &v) || v != floor(v) || v < lo || v > hi)
    return false;
  *out = (long)v;
  return true;
}

/* A byte count: a plain decimal with an optional suffix B, k, K, KiB, M,
 * MiB, G, GiB, T, TiB ("2MiB", "512k", "1e6"). */
static bool parse_bytes(const char *s, double *out) {
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {{"", 1},          {"B", 1},           {"k", 1e3},
               {"K", 1024},      {"KiB", 1024},      {"M", 1e6},
               {"MiB", 1 << 20}, {"G", 1e9},         {"GiB", 1 << 30},
               {"T", 1e12},      {"TiB", 0x1p40}};
  while (*s == ' ')
    s++;
  size_t n = decimal_length(s);
  char num[64];
  if (n == 0 || n >= sizeof num || s[0] == '-')
    return false;
  memcpy(num, s, n);
  num[n] = 0;
  double v;
  if (!parse_decimal(num, &v))
    return false;
  const char *unit = s + n;
  while (*unit == ' ')
    unit++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(unit, units[i].suffix) == 0) {
      *out = v * units[i].scale;
      return isfinite(*out);
    }
  return false;
}

/* Each kind's parser: the value V of option O into FIELD; 0, or an exit
 * status after a message naming CMD. */
typedef int (*Store)(const char *cmd, const Opt *o, const char *v,
                     void *field);

static int store_flag(const char *cmd, const Opt *o, const char *v,
                      void *field) {
  (void)cmd, (void)o, (void)v;
  *(bool *)field = true;
  return 0;
}

static int store_switch(const char *cmd, const Opt *o, const char *v,
                        void *field) {
  (void)cmd, (void)v;
  *(int *)field = (int)o->lo;
  return 0;
}

/* "--threads expects 1 to 256, got 'x'" */
static int bad_value(const char *cmd, const Opt *o, const char *v,
                     const char *expected) {
  return usage_error(cmd, "%s expects %s, got '%s'", o->name, expected, v);
}

static int store_int(const char *cmd, const Opt *o, const char *v,
                     void *field) {
  long n;
  char range[64];
  if (parse_count(v, o->lo, o->hi, &n)) {
    *(int *)field = (int)n;
    return 0;
  }
  snprintf(range, sizeof range, "%.0f to %.0f", o->lo, o->hi);
  return bad_value(cmd, o, v, range);
}

static int store_double(const char *cmd, const Opt *o, const char *v,
                        void *field) {
  double x;
  bool lo_open = o->flags & OPT_LO_OPEN, hi_open = o->flags & OPT_HI_OPEN;
  if (parse_decimal(v, &x) && (lo_open ? x > o->lo : x >= o->lo) &&
      (hi_open ? x < o->hi : x <= o->hi)) {
    *(double *)field = x;
    return 0;
  }
  char range[96];
  if (isinf(o->hi))
    snprintf(range, sizeof range, "a number %s %g", lo_open ? ">" : ">=",
             o->lo);
  else
    snprintf(range, sizeof range, "a number in %c%g, %g%c",
             lo_open ? '(' : '[', o->lo, o->hi, hi_open ? ')' : ']');
  return bad_value(cmd, o, v, range);
}

static int store_size(const char *cmd, const Opt *o, const char *v,
                      void *field) {
  if (parse_bytes(v, (double *)field) && *(double *)field >= 1)
    return 0;
  return bad_value(cmd, o, v, "a size in bytes (e.g. 2MiB)");
}

static int store_seed(const char *cmd, const Opt *o, const char *v,
                      void *field) {
  char *end = NULL;
  errno = 0;
  if (isdigit((unsigned char)v[0])) {
    unsigned long long s = strtoull(v, &end, 10);
    if (!errno && !*end) {
      *(uint64_t *)field = s;
      return 0;
    }
  }
  return bad_value(cmd, o, v, "a non-negative integer (decimal digits)");
}

static int store_string(const char *cmd, const Opt *o, const char *v,
                        void *field) {
  (void)cmd, (void)o;
  *(const char **)field = v;
  return 0;
}

static int store_path(const char *cmd, const Opt *o, const char *v,
                      void *field) {
  if (!*v)
    return bad_value(cmd, o, v, "a path");
  *(const char **)field = v;
  return 0;
}

/* "a, b or c": the names CH accepts. */
static void choices_text(Buf *b, const OptChoices *ch) {
  int n = ch->count + (ch->extra != NULL);
  for (int i = 0; i < n; i++) {
    int v = ch->extra && ch->extra_first ? i - 1 : i;
    const char *name = v < 0 || v == ch->count ? ch->extra : ch->name(v);
    buf_printf(b, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", name);
  }
}

static int store_enum(const char *cmd, const Opt *o, const char *v,
                      void *field) {
  const OptChoices *ch = o->choices;
  int value = ch->extra && strcmp(v, ch->extra) == 0 ? -1 : ch->count;
  for (int i = 0; value == ch->count && i < ch->count; i++)
    if (strcmp(v, ch->name(i)) == 0)
      value = i;
  if (value == ch->count) {
    Buf b = {0};
    Nearest n = nearest_start(v);
    for (int i = 0; i < ch->count; i++)
      nearest_offer(&n, ch->name(i));
    nearest_offer(&n, ch->extra);
    buf_did_you_mean(&b, &n);
    buf_printf(&b, "expected ");
    choices_text(&b, ch);
    usage_error(cmd, "unknown %s '%s' (%s)", ch->noun, v, b.s);
    buf_free(&b);
    return EXIT_INPUT;
  }
  *(int *)field = value;
  return 0;
}

static int store_custom(const char *cmd, const Opt *o, const char *v,
                        void *field) {
  return o->parse(cmd, v, field);
}

static int store_refused(const char *cmd, const Opt *o, const char *v,
                         void *field) {
  (void)v, (void)field;
  return usage_error(cmd, "%s: %s", o->name, o->help);
}

static const Store stores[] = {
    store_flag,   store_switch, store_int,  store_double,
    store_size,   store_seed,   store_string, store_path,
    store_enum,   store_custom, store_refused,
};
_Static_assert(sizeof stores / sizeof stores[0] == OPT_KIND_COUNT,
               "a parser for every OptKind");

static bool takes_value(const Opt *o) {
  return o->kind != OPT_FLAG && o->kind != OPT_SWITCH &&
         o->kind != OPT_REFUSED;
}

/* ---- parsing ---- */

typedef struct Scan {
  Parsed *p;
  void *dst;
  int argc, i, npos;
  char **argv;
} Scan;

static int store_at(Scan *s, int k, const char *v) {
  size_t base;
  const Opt *o = opt_at(s->p->command, k, &base);
  s->p->seen[k] = true;
  return stores[o->kind](s->p->cmd, o, v, (char *)s->dst + base + o->off);
}

/* One option ARG ("--name" or "--name=value"); its value may be the next
 * argument. 0, or an exit status. */
static int scan_option(Scan *s, const char *arg) {
  const char *cmd = s->p->cmd;
  const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - arg : 127), arg);
  int k = opt_find(s->p->command, name);
  if (k < 0) {
    Buf b = {0};
    near_option(&b, s->p->command, name);
    usage_error(cmd, "unknown option '%s' (%ssee %s --help)", name,
                b.s ? b.s : "", cmd);
    buf_free(&b);
    return EXIT_INPUT;
  }
  size_t base;
  const Opt *o = opt_at(s->p->command, k, &base);
  if (!takes_value(o)) {
    if (eq && o->kind != OPT_REFUSED)
      return usage_error(cmd, "option %s takes no value (see %s --help)",
                         name, cmd);
    return store_at(s, k, NULL);
  }
  if (eq)
    return store_at(s, k, eq + 1);
  if (s->i >= s->argc)
    return usage_error(cmd, "option %s needs a value (see %s --help)", name,
                       cmd);
  return store_at(s, k, s->argv[s->i++]);
}

static int scan_positional(Scan *s, const char *arg) {
  int k = positional_at(s->p->command, s->npos++);
  if (k < 0)
    return usage_error(s->p->cmd, "unexpected argument '%s' (see %s --help)",
                       arg, s->p->cmd);
  return store_at(s, k, arg);
}

/* Every positional given, then every required option? The first one
 * missing is named: the arguments before the options, whichever table
 * declares them (SPEC is spec_options'). A whole model (--config) is the
 * workload: no SPEC and no --model then. */
static int check_required(const Parsed *p) {
  size_t base;
  const Opt *o;
  bool whole_model = opt_given(p, "--config");
  for (int k = 0; (o = opt_at(p->command, k, &base)); k++)
    if (!p->seen[k] && (o->flags & OPT_POSITIONAL) &&
        !(whole_model && strcmp(o->name, "SPEC") == 0))
      return usage_error(p->cmd, "missing %s (see %s --help)", o->name,
                         p->cmd);
  for (int k = 0; (o = opt_at(p->command, k, &base)); k++)
    if (!p->seen[k] && (o->flags & OPT_REQUIRED) &&
        !(whole_model && strcmp(o->name, "--model") == 0))
      return usage_error(p->cmd, "needs %s (see %s --help)", o->name,
                         p->cmd);
  return 0;
}

/* Parse ARGV into DST: 0 to run, else the exit status (*help set when
 * --help was printed). */
static int parse(Parsed *p, int argc, char **argv, void *dst, bool *help) {
  Scan s = {p, dst, argc, 1, 0, argv};
  *help = false;
  while (s.i < s.argc) {
    const char *arg = s.argv[s.i++];
    int st;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      command_help(p->command);
      *help = true;
      return 0;
    }
    st = arg[0] == '-' && arg[1] ? scan_option(&s, arg)
                                 : scan_positional(&s, arg);
    if (st)
      return st;
  }
  return check_required(p);
}

int command_main(const Command *c, int argc, char **argv) {
  Parsed p = {.command = c};
  snprintf(p.cmd, sizeof p.cmd, "mambalaya %s", c->name);
  size_t base;
  int n = 0;
  while (opt_at(c, n, &base))
    n++;
  if (n > OPT_MAX) { /* a table too long for seen[]: a programming error */
    fprintf(stderr, "%s: more than %d options\n", p.cmd, OPT_MAX);
    abort();
  }
  void *o = xcalloc(1, c->size);
  if (c->init)
    c->init(o);
  InputSet inputs = {0};
  p.inputs = &inputs;
  OptUse use;
  for (int u = 0; (use = use_of(c, u)).table; u++)
    if (use.table->inputs)
      use.table->inputs((char *)o + use.base, &inputs);
  bool help;
  int st = parse(&p, argc, argv, o, &help);
  if (!st && !help)
    st = c->run(&p, o);
  for (int u = 0; (use = use_of(c, u)).table; u++)
    if (use.table->fini)
      use.table->fini((char *)o + use.base);
  inputset_free(&inputs);
  free(o);
  return st;
}

/* ---- --help ---- */

enum { HELP_WIDTH = 78, HELP_COLUMN_MAX = 22 };

/* "--arch ARCH" */
static void opt_label(Buf *b, const Opt *o) {
  buf_printf(b, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

/* Shown in --help: an option (not a positional, not refused) that no
 * earlier table's option of its name hides. */
static bool shown(const Command *c, int k, const Opt *o) {
  return !(o->flags & OPT_POSITIONAL) && o->kind != OPT_REFUSED &&
         opt_find(c, o->name) == k;
}

/* TEXT from column AT, wrapped at HELP_WIDTH, continuation lines indented
 * to column COL. */
static void wrap(const char *text, int at, int col) {
  const char *p = text;
  while (*p) {
    int room = HELP_WIDTH - at, n = (int)strlen(p);
    if (n > room) {
      n = room;
      while (n > 0 && p[n] != ' ')
        n--;
      if (n == 0) /* one word longer than the line */
        n = (int)strcspn(p, " ");
    }
    printf("%.*s\n", n, p);
    p += n;
    while (*p == ' ')
      p++;
    if (*p)
      printf("%*s", col, "");
    at = col;
  }
}

static void help_usage(const Command *c) {
  printf("usage: mambalaya %s", c->name);
  size_t base;
  const Opt *o;
  for (int k = 0; (o = opt_at(c, k, &base)); k++)
    if (o->flags & OPT_POSITIONAL)
      printf(" %s", o->name);
  for (int k = 0; (o = opt_at(c, k, &base)); k++)
    if ((o->flags & OPT_REQUIRED) && shown(c, k, o)) {
      Buf b = {0};
      opt_label(&b, o);
      printf(" %s", b.s);
      buf_free(&b);
    }
  printf(" [options]\n\n%s", c->about);
}

/* The help column: past the longest label, at most HELP_COLUMN_MAX. */
static int help_column(const Command *c) {
  int col = 0;
  size_t base;
  const Opt *o;
  for (int k = 0; (o = opt_at(c, k, &base)); k++) {
    Buf b = {0};
    opt_label(&b, o);
    if (shown(c, k, o) && (int)b.len + 4 > col)
      col = (int)b.len + 4;
    buf_free(&b);
  }
  return col < HELP_COLUMN_MAX ? col : HELP_COLUMN_MAX;
}

static void help_options(const Command *c) {
  int col = help_column(c), k = 0;
  OptUse use;
  for (int u = 0; (use = use_of(c, u)).table; u++) {
    const OptTable *t = use.table;
    if (use.heading)
      printf("\n%s\n", use.heading);
    for (int i = 0; i < t->n; i++, k++) {
      const Opt *o = &t->opts[i];
      if (!shown(c, k, o))
        continue;
      Buf b = {0};
      opt_label(&b, o);
      if ((int)b.len + 4 > col)
        printf("  %s\n%*s", b.s, col, "");
      else
        printf("  %-*s", col - 2, b.s);
      Buf h = {0};
      if ((o->flags & OPT_LIST) && o->choices) {
        choices_text(&h, o->choices);
        buf_printf(&h, " ");
      }
      buf_printf(&h, "%s", o->help);
      wrap(h.s, col, col);
      buf_free(&h);
      buf_free(&b);
    }
  }
}

void command_help(const Command *c) {
  help_usage(c);
  printf("\n");
  help_options(c);
  if (c->notes)
    printf("\n%s", c->notes);
  /* "examples:" for several commands (each a line not indented). */
  int n = 0;
  for (const char *l = c->example; *l; l += strcspn(l, "\n") + 1) {
    n += *l != ' ';
    if (!l[strcspn(l, "\n")])
      break;
  }
  printf("\nexample%s:\n", n > 1 ? "s" : "");
  for (const char *l = c->example; *l;) {
    size_t len = strcspn(l, "\n");
    printf("  %.*s\n", (int)len, l);
    l += len + (l[len] == '\n');
  }
}
