/* expr.c — the expression language: a lexer, a recursive-descent parser,
 * and the resolution of names and index variables into the IR.
 *
 *   einsum   := lhs '=' rhs [ '::' REDOP '(' names ')' ]
 *   lhs      := NAME '[' [ lhsidx { ',' lhsidx } ] ']'
 *   lhsidx   := index [ '<' '0' ]            (`i<0`: an initialization)
 *   rhs      := 'sum' '(' names ')' '.' factor   (TeAAL's older form)
 *             | expr
 *   expr     := sum [ CMP sum ]          CMP: < <= > >= == != (give 1 or 0)
 *   sum      := term { ('+' | '-') term }
 *   term     := unary { ('*' | '/') unary }
 *   unary    := '-' unary | factor
 *   factor   := NUMBER | 'inf' | '(' expr ')' | FUNC '(' expr { ',' expr } ')'
 *             | NAME '[' [ index { ',' index } ] ']' | NAME
 *   index    := affine arithmetic (+ - * and parentheses) over variables,
 *               numbers and size names: i, i-1, i+f-F+1, Q*p+q
 *
 * The infix operators and the functions, with their arities, come from
 * src/ir/ops.h's table. Index variables are not declared: a name that
 * indexes some tensor rank on its own (the `f` of WConv[d,f]) is a
 * variable over that rank, and a name found only inside index expressions
 * is one over the rank of its name in upper case (TeAAL's convention: the
 * `u` of R[2*y+u] ranges over U). Other names inside indices are sizes or
 * parameters (the `F` of i+f-F+1). A bare name in a value is an index
 * variable of the Einsum if it is one (the `j` of `j <= i`), else a
 * symbol. */
#include "lex.h"

#include "../preset/preset.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- index expressions (raw) ---- */

static IExpr *ie_new(Parser *p, IEKind k, size_t pos) {
  IExpr *e = arena_alloc(p->ar, sizeof *e);
  e->k = k;
  e->pos = pos;
  return e;
}

static IExpr *parse_iexpr(Parser *p, int depth);

/* How deep an index expression and an expression may nest: far beyond a
 * real one, far below the stack. */
enum { INDEX_MAX_DEPTH = 64, EXPR_MAX_DEPTH = 200 };

/* Is DEPTH past MAX? Then the error names WHAT ("expression") nested too
 * deeply. */
static bool too_deep(Parser *p, int depth, int max, const char *what) {
  if (depth <= max)
    return false;
  lex_error(p, p->tok.pos, "%s nested too deeply", what);
  return true;
}

static IExpr *parse_iunary(Parser *p, int depth) {
  if (p->failed || too_deep(p, depth, INDEX_MAX_DEPTH, "index expression"))
    return NULL;
  size_t pos = p->tok.pos;
  if (p->tok.k == T_MINUS) {
    lex_next(p);
    IExpr *e = ie_new(p, IE_NEG, pos);
    e->a = parse_iunary(p, depth + 1);
    return e->a ? e : NULL;
  }
  if (p->tok.k == T_NUM) {
    IExpr *e = ie_new(p, IE_NUM, pos);
    e->num = p->tok.num;
    if (e->num != floor(e->num)) {
      lex_error(p, pos, "bad index expression: %g is not an integer", e->num);
      return NULL;
    }
    if (fabs(e->num) > 1e9) {
      lex_error(p, pos, "bad index expression: %g is out of range", e->num);
      return NULL;
    }
    lex_next(p);
    return e;
  }
  if (p->tok.k == T_ID) {
    IExpr *e = ie_new(p, IE_ID, pos);
    e->id = lex_text(p, &p->tok);
    lex_next(p);
    if (p->tok.k == T_LBRACK || p->tok.k == T_LPAREN) {
      lex_error(p, pos,
           "bad index expression: an index may not read a tensor or call a "
           "function (indices are affine in the index variables)");
      return NULL;
    }
    return e;
  }
  if (p->tok.k == T_LPAREN) {
    lex_next(p);
    IExpr *e = parse_iexpr(p, depth + 1);
    if (!lex_expect(p, T_RPAREN, "')'"))
      return NULL;
    return e;
  }
  char buf[64];
  lex_error(p, pos, "bad index expression: expected a variable, a number or '(', "
               "found %s",
       lex_desc(p, &p->tok, buf, sizeof buf));
  return NULL;
}

/* Chains of + or * build left-leaning trees that later passes recurse
 * down: their length is bounded like their depth. */
enum { MAX_INDEX_TERMS = 256, MAX_TERMS = 1000 };

static IExpr *parse_iterm(Parser *p, int depth) {
  IExpr *e = parse_iunary(p, depth);
  int n = 1;
  while (e && (p->tok.k == T_STAR || p->tok.k == T_SLASH)) {
    if (++n > MAX_INDEX_TERMS) {
      lex_error(p, p->tok.pos, "index expression too long (more than %d factors)",
           MAX_INDEX_TERMS);
      return NULL;
    }
    if (p->tok.k == T_SLASH) {
      lex_error(p, p->tok.pos,
           "bad index expression: '/' is not allowed in an index (indices "
           "are affine: sums of constant multiples of variables)");
      return NULL;
    }
    IExpr *m = ie_new(p, IE_MUL, p->tok.pos);
    lex_next(p);
    m->a = e;
    m->b = parse_iunary(p, depth);
    e = m->b ? m : NULL;
  }
  return e;
}

static IExpr *parse_iexpr(Parser *p, int depth) {
  IExpr *e = parse_iterm(p, depth);
  int n = 1;
  while (e && (p->tok.k == T_PLUS || p->tok.k == T_MINUS)) {
    if (++n > MAX_INDEX_TERMS) {
      lex_error(p, p->tok.pos, "index expression too long (more than %d terms)",
           MAX_INDEX_TERMS);
      return NULL;
    }
    IExpr *s = ie_new(p, p->tok.k == T_PLUS ? IE_ADD : IE_SUB, p->tok.pos);
    lex_next(p);
    s->a = e;
    s->b = parse_iterm(p, depth);
    e = s->b ? s : NULL;
  }
  return e;
}

/* ---- value expressions ---- */

static Expr *ex_new(Parser *p, ExprKind k, size_t pos) {
  Expr *e = arena_alloc(p->ar, sizeof *e);
  e->kind = k;
  e->loc = lex_loc(p, pos);
  return e;
}

static Expr *parse_expr(Parser *p, int depth);

/* NAME '[' index, ... ']' : a tensor read (or the left-hand side). */
static bool parse_access(Parser *p, RawAccess *ra, const char *name,
                         size_t pos, bool lhs, int *cond_dim) {
  int t = cascade_tensor(p->c, name);
  if (t < 0) {
    lex_error(p, pos, "unknown tensor '%s': declare it under einsum.declaration",
         name);
    return false;
  }
  const Tensor *T = &p->c->tensors[t];
  Access *a = arena_alloc(p->ar, sizeof *a);
  a->tensor = t;
  a->loc = lex_loc(p, pos);
  a->cond_dim = -1;
  IExpr *raw[IR_MAX_RANKS];
  size_t rpos[IR_MAX_RANKS];
  int n = 0;
  if (!lex_expect(p, T_LBRACK, "'['"))
    return false;
  if (p->tok.k != T_RBRACK) {
    for (;;) {
      if (n == IR_MAX_RANKS) {
        lex_error(p, p->tok.pos, "too many indices (at most %d)", IR_MAX_RANKS);
        return false;
      }
      rpos[n] = p->tok.pos;
      raw[n] = parse_iexpr(p, 0);
      if (!raw[n])
        return false;
      if (p->tok.k == T_LT && lhs && raw[n]->k != IE_ID) {
        lex_error(p, rpos[n],
             "an initialization is written T[..., i<0, ...]: the index "
             "before '<' must be a plain variable");
        return false;
      }
      if (p->tok.k == T_LT) {
        if (!lhs || *cond_dim >= 0) {
          lex_error(p, p->tok.pos,
               "'<' may appear only once, in the output of an "
               "initialization: T[..., i<0, ...] = value");
          return false;
        }
        lex_next(p);
        if (p->tok.k != T_NUM || p->tok.num != 0) {
          lex_error(p, p->tok.pos,
               "an initialization is written T[..., i<0, ...]: expected 0");
          return false;
        }
        lex_next(p);
        *cond_dim = n;
      }
      n++;
      if (p->tok.k == T_COMMA) {
        lex_next(p);
        continue;
      }
      break;
    }
  }
  if (p->tok.k != T_RBRACK) {
    char buf[64];
    lex_error(p, p->tok.pos, "expected ',' or ']' in the indices of %s, found %s",
         name, lex_desc(p, &p->tok, buf, sizeof buf));
    return false;
  }
  lex_next(p);
  if (n != T->nranks) {
    Buf b = {0};
    for (int k = 0; k < T->nranks; k++)
      buf_printf(&b, "%s%s", k ? ", " : "", p->c->ranks[T->ranks[k]].name);
    lex_error(p, pos,
         "rank count mismatch: %s is declared with %d rank%s [%s] but "
         "indexed with %d",
         name, T->nranks, T->nranks == 1 ? "" : "s", b.s ? b.s : "", n);
    buf_free(&b);
    return false;
  }
  a->n = n;
  a->idx = arena_alloc(p->ar, sizeof(Index) * (size_t)(n ? n : 1));
  ra->acc = a;
  ra->raw = arena_alloc(p->ar, sizeof(IExpr *) * (size_t)(n ? n : 1));
  ra->pos = arena_alloc(p->ar, sizeof(size_t) * (size_t)(n ? n : 1));
  for (int k = 0; k < n; k++) {
    ra->raw[k] = raw[k];
    ra->pos[k] = rpos[k];
  }
  return true;
}

/* TeAAL's take(X0, ..., Xn-1, I), after '(': the value of operand I where
 * every other operand is non-zero (an intersection of sparse operands),
 * else 0. Every operand is read, as TeAAL's intersection reads them, so the
 * model and the executor see the same traffic: it is built as
 * where(Xj, ..., 0) around XI for each other operand j. */
static Expr *parse_take(Parser *p, size_t pos, int depth) {
  enum { MAX_TAKE = 8 };
  Expr *arg[MAX_TAKE + 1];
  int n = 0;
  for (;;) {
    if (n == MAX_TAKE + 1) {
      lex_error(p, p->tok.pos, "take() takes at most %d operands", MAX_TAKE);
      return NULL;
    }
    if (!(arg[n++] = parse_expr(p, depth + 1)))
      return NULL;
    if (p->tok.k != T_COMMA)
      break;
    lex_next(p);
  }
  if (!lex_expect(p, T_RPAREN, "')'"))
    return NULL;
  const Expr *which = arg[n - 1];
  int nops = n - 1;
  if (nops < 2 || which->kind != EX_NUM || which->num != floor(which->num) ||
      which->num < 0 || which->num >= nops) {
    lex_error(p, pos,
         "take(X0, X1, ..., I) takes at least two operands and the index I "
         "of the one whose value it takes (a whole number from 0 to %d)",
         nops > 1 ? nops - 1 : 1);
    return NULL;
  }
  int keep = (int)which->num;
  Expr *e = arg[keep];
  for (int j = nops - 1; j >= 0; j--) {
    if (j == keep)
      continue;
    Expr *w = ex_new(p, EX_OP, pos);
    w->op = OP_WHERE;
    w->a = arg[j];
    w->b = e;
    w->c = ex_new(p, EX_NUM, pos);
    e = w;
  }
  return e;
}

/* NAME '(' expr { ',' expr } ')' : a function of ops.h's table. */
static Expr *parse_call(Parser *p, const char *name, size_t pos, int depth) {
  lex_next(p); /* '(' */
  Op op;
  if (!op_function(name, &op)) {
    if (strcmp(name, "take") == 0)
      return parse_take(p, pos, depth);
    Buf b = {0};
    for (int i = 0; i < OP_COUNT; i++)
      if (op_prec((Op)i) == 0)
        buf_printf(&b, "%s%s", b.s ? ", " : "", op_text((Op)i));
    lex_error(p, pos, "unknown function '%s' (expected one of %s)", name, b.s);
    buf_free(&b);
    return NULL;
  }
  Expr *e = ex_new(p, EX_OP, pos);
  e->op = op;
  Expr **arg[OP_MAX_ARITY] = {&e->a, &e->b, &e->c};
  int n = op_arity(op);
  for (int k = 0; k < n; k++) {
    if (k > 0) {
      char what[64];
      snprintf(what, sizeof what, "',' (%s takes %d arguments)", name, n);
      if (!lex_expect(p, T_COMMA, what))
        return NULL;
    }
    *arg[k] = parse_expr(p, depth + 1);
    if (!*arg[k])
      return NULL;
  }
  if (p->tok.k == T_COMMA) {
    lex_error(p, p->tok.pos, "too many arguments: %s takes %d", name, n);
    return NULL;
  }
  return lex_expect(p, T_RPAREN, "')'") ? e : NULL;
}

static Expr *parse_factor(Parser *p, int depth) {
  if (p->failed || too_deep(p, depth, EXPR_MAX_DEPTH, "expression"))
    return NULL;
  size_t pos = p->tok.pos;
  switch (p->tok.k) {
  case T_NUM: {
    Expr *e = ex_new(p, EX_NUM, pos);
    e->num = p->tok.num;
    lex_next(p);
    return e;
  }
  case T_LPAREN: {
    lex_next(p);
    Expr *e = parse_expr(p, depth + 1);
    if (!lex_expect(p, T_RPAREN, "')'"))
      return NULL;
    return e;
  }
  case T_ID: {
    char *name = lex_text(p, &p->tok);
    lex_next(p);
    if (p->tok.k == T_LPAREN)
      return parse_call(p, name, pos, depth);
    if (p->tok.k == T_LBRACK) {
      if (p->const_only) {
        lex_error(p, pos, "a size or parameter may not read a tensor");
        return NULL;
      }
      RawAccess ra = {0};
      int cond = -1;
      if (!parse_access(p, &ra, name, pos, false, &cond))
        return NULL;
      VEC_PUSH(p->raws, p->nraws, p->raws_cap, ra);
      Expr *e = ex_new(p, EX_READ, pos);
      e->acc = ra.acc;
      return e;
    }
    if (strcmp(name, "inf") == 0) { /* -inf: the prefix minus folds */
      Expr *e = ex_new(p, EX_NUM, pos);
      e->num = INFINITY;
      return e;
    }
    /* A bare name: a rank-0 tensor, an index variable, or a symbol. */
    int t = p->const_only ? -1 : cascade_tensor(p->c, name);
    if (t >= 0 && p->c->tensors[t].nranks == 0) {
      Access *a = arena_alloc(p->ar, sizeof *a);
      a->tensor = t;
      a->loc = lex_loc(p, pos);
      a->cond_dim = -1;
      a->idx = arena_alloc(p->ar, sizeof(Index));
      RawAccess ra = {.acc = a};
      VEC_PUSH(p->raws, p->nraws, p->raws_cap, ra);
      Expr *e = ex_new(p, EX_READ, pos);
      e->acc = a;
      return e;
    }
    if (t >= 0 && cascade_rank(p->c, name) < 0 &&
        cascade_param(p->c, name) < 0) {
      lex_error(p, pos, "tensor '%s' has %d ranks: index it, as %s[...]", name,
           p->c->tensors[t].nranks, name);
      return NULL;
    }
    Expr *e = ex_new(p, EX_SYM, pos);
    if (p->const_only) {
      e->sym = cascade_sym(p->c, name, e->loc);
    } else { /* resolve_names decides, once the variables are known */
      NameRef nr = {e, name};
      VEC_PUSH(p->names, p->nnames, p->names_cap, nr);
    }
    return e;
  }
  default: {
    char buf[64];
    if (p->tok.k == T_RPAREN || p->tok.k == T_RBRACK)
      lex_error(p, pos, "unbalanced brackets: unexpected %s",
           lex_desc(p, &p->tok, buf, sizeof buf));
    else
      lex_error(p, pos, "expected a value (a number, a name, a tensor read or "
                   "'('), found %s",
           lex_desc(p, &p->tok, buf, sizeof buf));
    return NULL;
  }
  }
}

static Expr *parse_unary(Parser *p, int depth) {
  if (too_deep(p, depth, EXPR_MAX_DEPTH, "expression"))
    return NULL;
  if (p->tok.k == T_MINUS) {
    size_t pos = p->tok.pos;
    lex_next(p);
    Expr *a = parse_unary(p, depth + 1);
    if (!a)
      return NULL;
    if (a->kind == EX_NUM) {
      a->num = -a->num;
      return a;
    }
    Expr *e = ex_new(p, EX_OP, pos);
    e->op = OP_NEG;
    e->a = a;
    return e;
  }
  return parse_factor(p, depth);
}

/* The infix operator of precedence PREC at the current token, if any. */
static bool infix_at(const Parser *p, int prec, Op *op) {
  if (p->tok.k == T_EOF || p->tok.k == T_ID || p->tok.k == T_NUM)
    return false;
  return op_infix(p->s + p->tok.pos, p->tok.len, prec, op);
}

/* Operands joined by infix operators of precedence PREC and tighter, left
 * to right; comparisons (the loosest) do not chain. */
static Expr *parse_infix(Parser *p, int depth, int prec) {
  if (prec > OP_PRECS)
    return parse_unary(p, depth);
  Expr *e = parse_infix(p, depth, prec + 1);
  Op op;
  int n = 1;
  while (e && infix_at(p, prec, &op)) {
    if (prec == 1 && n > 1) {
      lex_error(p, p->tok.pos, "comparisons do not chain: write (a < b) * (b < c) "
                          "for a < b < c");
      return NULL;
    }
    if (++n > MAX_TERMS) {
      lex_error(p, p->tok.pos, "expression too long (more than %d operands)",
           MAX_TERMS);
      return NULL;
    }
    Expr *b = ex_new(p, EX_OP, p->tok.pos);
    b->op = op;
    lex_next(p);
    b->a = e;
    b->b = parse_infix(p, depth, prec + 1);
    e = b->b ? b : NULL;
  }
  return e;
}

static Expr *parse_expr(Parser *p, int depth) {
  if (too_deep(p, depth, EXPR_MAX_DEPTH, "expression"))
    return NULL;
  return parse_infix(p, depth, 1);
}

/* ---- resolving index variables ---- */

static int find_var(const Parser *p, const char *name) {
  for (int v = 0; v < p->nvars; v++)
    if (strcmp(p->vars[v].name, name) == 0)
      return v;
  return -1;
}

/* A name alone at position K of an access is a variable over that rank. */
static bool declare_var(Parser *p, const char *name, int rank, size_t pos) {
  int v = find_var(p, name);
  if (v >= 0) {
    if (p->vars[v].rank != rank) {
      Loc first = lex_loc(p, p->vars[v].pos);
      const char *here = p->c->ranks[rank].name;
      const char *there = p->c->ranks[p->vars[v].rank].name;
      lex_error(p, pos,
           "index variable '%s' ranges over rank %s here but over rank %s "
           "at %d:%d (if they are the same positions, make one another "
           "name of the other: '%s: %s' in the shape section)",
           name, here, there, first.line, first.col, here, there);
      return false;
    }
    return true;
  }
  if (p->nvars == IR_MAX_VARS) {
    lex_error(p, pos, "too many index variables (at most %d)", IR_MAX_VARS);
    return false;
  }
  p->vars[p->nvars++] = (PVar){name, rank, pos};
  return true;
}

/* A rank size, a spec parameter or a model parameter: a constant. */
static bool is_constant_name(const Parser *p, const char *name) {
  if (cascade_rank(p->c, name) >= 0 || cascade_param(p->c, name) >= 0)
    return true;
  return preset_is_param(name);
}

static bool declare_vars_of(Parser *p, const RawAccess *ra) {
  const Tensor *T = &p->c->tensors[ra->acc->tensor];
  for (int k = 0; k < ra->acc->n; k++)
    if (ra->raw[k]->k == IE_ID && cascade_rank(p->c, ra->raw[k]->id) < 0 &&
        cascade_param(p->c, ra->raw[k]->id) < 0 &&
        !declare_var(p, ra->raw[k]->id, T->ranks[k], ra->pos[k]))
      return false;
  return true;
}

/* A name inside an index expression that is no variable and no constant
 * ranges over the rank named as it is in upper case, if there is one
 * (TeAAL's convention): the window variables of R[c, 2*y+u, 2*x+v] over
 * ranks U and V, which only the shape section may declare. */
static bool declare_window_vars(Parser *p, const IExpr *x) {
  if (!x)
    return true;
  if (x->k == IE_ID && find_var(p, x->id) < 0 &&
      !is_constant_name(p, x->id)) {
    char upper[128];
    size_t n = strlen(x->id);
    if (n >= sizeof upper)
      return true;
    for (size_t i = 0; i <= n; i++)
      upper[i] = (char)toupper((unsigned char)x->id[i]);
    int r = cascade_rank(p->c, upper);
    if (r >= 0 && p->c->ranks[r].same_as >= 0)
      r = p->c->ranks[r].same_as;
    if (r >= 0 && !declare_var(p, x->id, r, x->pos))
      return false;
  }
  return declare_window_vars(p, x->a) && declare_window_vars(p, x->b);
}

/* An affine form: sum over variables of coef[v]*v, plus off. */
typedef struct Affine {
  Expr *coef[IR_MAX_VARS]; /* NULL: the variable is absent */
  Expr *off;               /* NULL: 0 */
} Affine;

static Expr *cnum(Parser *p, double v, size_t pos) {
  Expr *e = ex_new(p, EX_NUM, pos);
  e->num = v;
  return e;
}

/* Combine two constant expressions, folding numbers. */
static Expr *cbin(Parser *p, Op op, Expr *a, Expr *b, size_t pos) {
  if (a->kind == EX_NUM && b->kind == EX_NUM)
    return cnum(p, op_apply(op, a->num, b->num, 0), pos);
  if (op == OP_MUL && a->kind == EX_NUM && a->num == 1)
    return b;
  if (op == OP_MUL && b->kind == EX_NUM && b->num == 1)
    return a;
  Expr *e = ex_new(p, EX_OP, pos);
  e->op = op;
  e->a = a;
  e->b = b;
  return e;
}

static Expr *cadd(Parser *p, Expr *a, Expr *b, size_t pos) {
  if (!a)
    return b;
  if (!b)
    return a;
  return cbin(p, OP_ADD, a, b, pos);
}

static bool affine_is_const(const Affine *f, int nvars) {
  for (int v = 0; v < nvars; v++)
    if (f->coef[v])
      return false;
  return true;
}

static void affine_scale(Parser *p, Affine *f, Expr *k, int nvars,
                         size_t pos) {
  for (int v = 0; v < nvars; v++)
    if (f->coef[v])
      f->coef[v] = cbin(p, OP_MUL, k, f->coef[v], pos);
  if (f->off)
    f->off = cbin(p, OP_MUL, k, f->off, pos);
}

static bool linearize(Parser *p, const IExpr *e, Affine *f) {
  memset(f, 0, sizeof *f);
  switch (e->k) {
  case IE_NUM:
    f->off = cnum(p, e->num, e->pos);
    return true;
  case IE_ID: {
    int v = find_var(p, e->id);
    if (v >= 0) {
      f->coef[v] = cnum(p, 1, e->pos);
      return true;
    }
    if (!is_constant_name(p, e->id)) {
      lex_error(p, e->pos,
           "undeclared rank variable '%s': a variable must index a tensor "
           "rank on its own somewhere in the Einsum (or be the name of a "
           "rank in lower case, as u for a window rank U), and a constant "
           "must be a rank size or a parameter",
           e->id);
      return false;
    }
    Expr *s = ex_new(p, EX_SYM, e->pos);
    s->sym = cascade_sym(p->c, e->id, s->loc);
    f->off = s;
    return true;
  }
  case IE_NEG:
    if (!linearize(p, e->a, f))
      return false;
    affine_scale(p, f, cnum(p, -1, e->pos), p->nvars, e->pos);
    return true;
  case IE_ADD:
  case IE_SUB: {
    Affine g;
    if (!linearize(p, e->a, f) || !linearize(p, e->b, &g))
      return false;
    if (e->k == IE_SUB)
      affine_scale(p, &g, cnum(p, -1, e->pos), p->nvars, e->pos);
    for (int v = 0; v < p->nvars; v++)
      f->coef[v] = cadd(p, f->coef[v], g.coef[v], e->pos);
    f->off = cadd(p, f->off, g.off, e->pos);
    return true;
  }
  case IE_MUL: {
    Affine g;
    if (!linearize(p, e->a, f) || !linearize(p, e->b, &g))
      return false;
    bool fc = affine_is_const(f, p->nvars), gc = affine_is_const(&g, p->nvars);
    if (!fc && !gc) {
      lex_error(p, e->pos, "bad index expression: a product of index variables "
                      "is not affine");
      return false;
    }
    Affine *var_side = fc ? &g : f;
    Expr *k = fc ? f->off : g.off;
    if (!k)
      k = cnum(p, 0, e->pos);
    affine_scale(p, var_side, k, p->nvars, e->pos);
    if (var_side != f)
      *f = g;
    return true;
  }
  }
  return false;
}

static bool is_num(const Expr *e, double v) {
  return e && e->kind == EX_NUM && e->num == v;
}

static bool build_index(Parser *p, const IExpr *raw, size_t pos, Index *ix) {
  Affine f;
  if (!linearize(p, raw, &f))
    return false;
  memset(ix, 0, sizeof *ix);
  ix->loc = lex_loc(p, pos);
  for (int v = 0; v < p->nvars; v++) {
    if (!f.coef[v] || is_num(f.coef[v], 0))
      continue;
    if (ix->nterms == IR_MAX_TERMS) {
      lex_error(p, pos, "bad index expression: more than %d variables",
           IR_MAX_TERMS);
      return false;
    }
    ix->var[ix->nterms] = v;
    ix->coef[ix->nterms] = is_num(f.coef[v], 1) ? NULL : f.coef[v];
    ix->nterms++;
  }
  ix->off = is_num(f.off, 0) ? NULL : f.off;
  bool unit = ix->nterms == 1 && !ix->coef[0];
  ix->plain = unit && !ix->off;
  if (unit && ix->off && ix->off->kind == EX_NUM && ix->off->num <= -1 &&
      ix->off->num >= -1e9)
    ix->lag = (int)-ix->off->num;
  return true;
}

static bool resolve_access(Parser *p, RawAccess *ra) {
  for (int k = 0; k < ra->acc->n; k++)
    if (!build_index(p, ra->raw[k], ra->pos[k], &ra->acc->idx[k]))
      return false;
  return true;
}

/* Bare names in values: the Einsum's index variables (`j <= i`), else
 * symbols. */
static void resolve_names(Parser *p) {
  for (int i = 0; i < p->nnames; i++) {
    Expr *e = p->names[i].e;
    int v = find_var(p, p->names[i].name);
    if (v >= 0) {
      e->kind = EX_VAR;
      e->var = v;
    } else {
      e->sym = cascade_sym(p->c, p->names[i].name, e->loc);
    }
  }
}

/* Einstein's convention sums an additive term over the variables it
 * reduces, outside everything in the term. A contraction (a product whose
 * operands both read a reduced variable) under a non-linear operator is
 * then summed outside that operator: exp(Q[i,e] * K[j,e]) would compute
 * the sum over e of exp(Q K), not the exponential of the product Q K^T.
 * Refused, with the two ways to say what is meant. WRAP is the outermost
 * non-linear operator above X, or NULL. */
static bool check_wraps(Parser *p, const Einsum *e, const Expr *x,
                        VarSet red, const Expr *wrap) {
  if (!x || x->kind != EX_OP)
    return true;
  VarSet shared = expr_is(x, OP_MUL) ? expr_vars(x->a) & expr_vars(x->b) & red
                                     : 0;
  if (wrap && shared) {
    const char *v = e->vars[__builtin_ctzll(shared)].name;
    const char *op = op_text(wrap->op);
    p->failed = true;
    if (op_prec(wrap->op) == 0)
      diag_error(p->d, p->c->path, wrap->loc,
                 "%s() wraps a product summed over '%s': the implicit sum "
                 "runs over the whole term, so this would be the sum over %s "
                 "of %s(...), not %s of the sum; compute the product in an "
                 "Einsum of its own, or write ':: sum(...)' if the sum of "
                 "the whole term is meant",
                 op, v, v, op, op);
    else
      diag_error(p->d, p->c->path, wrap->loc,
                 "'%s' wraps a product summed over '%s': the implicit sum "
                 "runs over the whole term, outside '%s', not inside it; "
                 "compute the product in an Einsum of its own, or write "
                 "':: sum(...)' if the sum of the whole term is meant",
                 op, v, op);
    return false;
  }
  bool linear = expr_is(x, OP_MUL) || expr_is(x, OP_ADD) ||
                expr_is(x, OP_SUB) || expr_is(x, OP_NEG);
  const Expr *inner = linear || wrap ? wrap : x;
  if (expr_is(x, OP_DIV)) /* linear in its numerator only */
    return check_wraps(p, e, x->a, red, wrap) &&
           check_wraps(p, e, x->b, red, wrap ? wrap : x);
  return check_wraps(p, e, x->a, red, inner) &&
         check_wraps(p, e, x->b, red, inner) &&
         check_wraps(p, e, x->c, red, inner);
}

static bool check_terms(Parser *p, const Einsum *e, const Expr *x) {
  if (expr_is(x, OP_ADD) || expr_is(x, OP_SUB))
    return check_terms(p, e, x->a) && check_terms(p, e, x->b);
  return check_wraps(p, e, x, expr_vars(x) & ~e->out_vars, NULL);
}

/* ---- the Einsum ---- */

static bool parse_reduction(Parser *p, Einsum *e, VarSet *listed,
                            size_t *pos) {
  *pos = p->tok.pos;
  lex_next(p); /* '::' */
  if (p->tok.k != T_ID) {
    lex_error(p, p->tok.pos, "expected a reduction operator (sum, max, min, prod) "
                        "after '::'");
    return false;
  }
  char *op = lex_text(p, &p->tok);
  if (!redop_from_name(op, &e->red)) {
    lex_error(p, p->tok.pos,
         "unknown reduction operator '%s' (expected sum, max, min or prod)",
         op);
    return false;
  }
  e->explicit_red = true;
  lex_next(p);
  if (!lex_expect(p, T_LPAREN, "'(' after the reduction operator"))
    return false;
  *listed = 0;
  while (p->tok.k == T_ID) {
    char *name = lex_text(p, &p->tok);
    int v = find_var(p, name);
    if (v < 0) {
      lex_error(p, p->tok.pos,
           "undeclared rank variable '%s' in the reduction: it indexes no "
           "tensor of this Einsum",
           name);
      return false;
    }
    if (VARSET_HAS(e->out_vars, v)) {
      lex_error(p, p->tok.pos,
           "reduction variable '%s' is in the output: it cannot be reduced",
           name);
      return false;
    }
    *listed |= VARSET_BIT(v);
    lex_next(p);
    if (p->tok.k != T_COMMA)
      break;
    lex_next(p);
    if (p->tok.k != T_ID) {
      char buf[64];
      lex_error(p, p->tok.pos, "expected a variable after ',', found %s",
           lex_desc(p, &p->tok, buf, sizeof buf));
      return false;
    }
  }
  return lex_expect(p, T_RPAREN, "')' closing the reduction variables");
}

/* TeAAL's older `sum(K).(expr)`: the listed ranks are summed, as our
 * implicit reduction does anyway. */
static Expr *parse_teaal_sum(Parser *p) {
  lex_next(p); /* sum */
  lex_next(p); /* ( */
  while (p->tok.k == T_ID) {
    char *r = lex_text(p, &p->tok);
    if (cascade_rank(p->c, r) < 0) {
      lex_error(p, p->tok.pos, "undeclared rank '%s' in sum(...)", r);
      return NULL;
    }
    lex_next(p);
    if (p->tok.k != T_COMMA)
      break;
    lex_next(p);
  }
  if (!lex_expect(p, T_RPAREN, "')'") || !lex_expect(p, T_DOT, "'.' after sum(...)"))
    return NULL;
  return parse_factor(p, 0);
}

/* A copy (the right-hand side one read) that drops a variable of its input
 * and adds one of its own, as a scatter to experts does
 * (Z_per_expert[b,x,xt,g] = Z[b,m,g]), would sum over the dropped one and
 * repeat the sum along the added ones: never what such a line means, so
 * the sum must be written. A copy that only drops variables is Einstein's
 * sum (SLD[p] = SLN[m0,p]); one that only adds them is a broadcast.
 * (AccelForge's MoE scatter never reaches this as written: accelforge.c
 * translates it as the even split its file describes.) */
static bool check_copy(Parser *p, const Einsum *e) {
  if (e->rhs->kind != EX_READ)
    return true;
  VarSet in = expr_vars(e->rhs);
  VarSet dropped = in & ~e->out_vars, added = e->out_vars & ~in;
  if (!dropped || !added)
    return true;
  Buf b = {0};
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(dropped, v))
      buf_printf(&b, "%s%s", b.len ? ", " : "", e->vars[v].name);
  lex_error(p, p->eq_pos,
       "a copy that drops %s of its input and adds %s: it would sum over "
       "%s; write the reduction if a sum is meant (\"... :: sum(%s)\")",
       b.s, e->vars[__builtin_ctzll(added)].name, b.s, b.s);
  buf_free(&b);
  return false;
}

static bool parse_einsum(Parser *p, Einsum *e) {
  lex_next(p);
  if (p->tok.k != T_ID) {
    char buf[64];
    lex_error(p, p->tok.pos, "expected the output tensor (NAME[...]), found %s",
         lex_desc(p, &p->tok, buf, sizeof buf));
    return false;
  }
  size_t out_pos = p->tok.pos;
  char *out = lex_text(p, &p->tok);
  lex_next(p);
  int cond = -1;
  if (p->tok.k != T_LBRACK) {
    int t = cascade_tensor(p->c, out);
    if (t < 0 || p->c->tensors[t].nranks != 0) {
      if (!parse_access(p, &p->lhs, out, out_pos, true, &cond))
        return false;
    } else { /* a rank-0 output may omit the brackets */
      Access *a = arena_alloc(p->ar, sizeof *a);
      a->tensor = t;
      a->cond_dim = -1;
      a->loc = lex_loc(p, out_pos);
      a->idx = arena_alloc(p->ar, sizeof(Index));
      p->lhs.acc = a;
    }
  } else if (!parse_access(p, &p->lhs, out, out_pos, true, &cond)) {
    return false;
  }
  p->lhs.acc->cond_dim = cond;
  p->eq_pos = p->tok.pos;
  if (!lex_expect(p, T_EQ, "'=' after the output"))
    return false;
  /* `sum` is no function of ours: `sum(` can only be TeAAL's form. */
  bool teaal_sum = false;
  if (lex_is(p, "sum")) {
    size_t save_at = p->at;
    Tok save = p->tok;
    lex_next(p);
    teaal_sum = p->tok.k == T_LPAREN;
    p->at = save_at;
    p->tok = save;
  }
  e->rhs = teaal_sum ? parse_teaal_sum(p) : parse_expr(p, 0);
  if (!e->rhs || p->failed)
    return false;

  /* Variables: every name alone at an index position. */
  for (int k = 0; k < p->lhs.acc->n; k++) {
    const IExpr *r = p->lhs.raw[k];
    if (r->k != IE_ID) {
      lex_error(p, p->lhs.pos[k],
           "the output may be indexed only by plain variables (found an "
           "expression)");
      return false;
    }
    if (find_var(p, r->id) >= 0) {
      lex_error(p, p->lhs.pos[k], "repeated output variable '%s'", r->id);
      return false;
    }
    if (!declare_var(p, r->id, p->c->tensors[p->lhs.acc->tensor].ranks[k],
                     p->lhs.pos[k]))
      return false;
  }
  int nout = p->nvars;
  for (int i = 0; i < p->nraws; i++)
    if (!declare_vars_of(p, &p->raws[i]))
      return false;
  for (int i = 0; i < p->nraws; i++)
    for (int k = 0; k < p->raws[i].acc->n; k++)
      if (!declare_window_vars(p, p->raws[i].raw[k]))
        return false;
  for (int v = 0; v < nout; v++)
    e->out_vars |= VARSET_BIT(v);

  VarSet listed = 0;
  size_t red_pos = 0;
  if (p->tok.k == T_COLONCOLON && !parse_reduction(p, e, &listed, &red_pos))
    return false;
  if (p->tok.k != T_EOF) {
    char buf[64];
    if (p->tok.k == T_RPAREN || p->tok.k == T_RBRACK)
      lex_error(p, p->tok.pos, "unbalanced brackets: unexpected %s",
           lex_desc(p, &p->tok, buf, sizeof buf));
    else
      lex_error(p, p->tok.pos, "unexpected %s after the expression",
           lex_desc(p, &p->tok, buf, sizeof buf));
    return false;
  }

  resolve_names(p);
  if (!resolve_access(p, &p->lhs))
    return false;
  for (int i = 0; i < p->nraws; i++)
    if (!resolve_access(p, &p->raws[i]))
      return false;

  e->out = *p->lhs.acc;
  e->nvars = p->nvars;
  e->vars = arena_alloc(p->ar, sizeof(Var) * (size_t)(p->nvars ? p->nvars : 1));
  for (int v = 0; v < p->nvars; v++)
    e->vars[v] = (Var){p->vars[v].name, p->vars[v].rank};
  e->nreads = p->nraws;
  e->reads = arena_alloc(p->ar, sizeof(Access *) * (size_t)(p->nraws ? p->nraws : 1));
  for (int i = 0; i < p->nraws; i++)
    e->reads[i] = p->raws[i].acc;

  if (e->explicit_red) {
    VarSet missing = einsum_reduced_vars(e) & ~listed;
    if (missing) {
      int v = __builtin_ctzll(missing);
      lex_error(p, red_pos,
           "variable '%s' is neither in the output nor in the reduction "
           "list",
           e->vars[v].name);
      return false;
    }
  }
  return e->explicit_red || (check_copy(p, e) && check_terms(p, e, e->rhs));
}

bool spec_parse_einsum(Cascade *c, const YamlNode *node, Diag *d) {
  Parser p = {.c = c, .node = node, .d = d, .s = node->text,
              .len = strlen(node->text), .ar = &c->arena};
  Einsum *e = arena_alloc(&c->arena, sizeof *e);
  e->text = arena_strdup(&c->arena, node->text);
  e->loc = node->loc;
  bool ok = parse_einsum(&p, e) && !p.failed;
  free(p.raws);
  free(p.names);
  if (!ok) {
    if (!d->failed) /* defensive: every failure path reports */
      diag_error(d, c->path, node->loc, "malformed expression");
    return false;
  }
  Tensor *t = &c->tensors[e->out.tensor];
  if (e->out.cond_dim >= 0) {
    if (t->init) {
      diag_error(d, c->path, node->loc,
                 "%s already has an initialization (line %d)", t->name,
                 t->init->loc.line);
      return false;
    }
    e->id = -1;
    t->init = e;
    return true;
  }
  cascade_add_einsum(c, e);
  return true;
}

Expr *spec_parse_const(Cascade *c, const YamlNode *node, Diag *d) {
  Parser p = {.c = c, .node = node, .d = d, .s = node->text,
              .len = strlen(node->text), .ar = &c->arena,
              .const_only = true};
  lex_next(&p);
  Expr *e = NULL;
  if (p.tok.k == T_EOF)
    lex_error(&p, 0, "expected a value, found nothing");
  else
    e = parse_expr(&p, 0);
  if (e && !p.failed && p.tok.k != T_EOF) {
    char buf[64];
    lex_error(&p, p.tok.pos, "unexpected %s after the value",
         lex_desc(&p, &p.tok, buf, sizeof buf));
  }
  free(p.raws);
  free(p.names);
  if (p.failed) {
    if (!d->failed)
      diag_error(d, c->path, node->loc, "malformed value");
    return NULL;
  }
  return e;
}
