/* lex.c — the expression language's lexer (lex.h): names, numbers,
 * brackets and the infix operators, and the errors of a parse, placed at
 * their byte of the YAML scalar. */
#include "lex.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---- */

Loc lex_loc(Parser *p, size_t pos) {
  return ydoc_scalar_loc_at(p->node, &p->cursor, pos);
}

void lex_error(Parser *p, size_t pos, const char *fmt, ...) {
  if (p->failed)
    return;
  p->failed = true;
  Loc loc = lex_loc(p, pos);
  va_list ap;
  va_start(ap, fmt);
  diag_verror(p->d, p->c->path, loc, fmt, ap);
  va_end(ap);
}

const char *lex_desc(const Parser *p, const Tok *t, char *buf, size_t n) {
  if (t->k == T_EOF)
    return "end of expression";
  snprintf(buf, n, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), p->s + t->pos);
  return buf;
}

/* ---- lexer ---- */

static bool is_id_start(int c) { return isalpha(c) || c == '_'; }
static bool is_id_char(int c) { return isalnum(c) || c == '_'; }

void lex_next(Parser *p) {
  if (p->failed) {
    p->tok = (Tok){T_EOF, p->len, 0, 0};
    return;
  }
  while (p->at < p->len && isspace((unsigned char)p->s[p->at]))
    p->at++;
  size_t st = p->at;
  Tok t = {T_EOF, st, 0, 0};
  if (st >= p->len) {
    p->tok = t;
    return;
  }
  unsigned char ch = (unsigned char)p->s[st];
  if (is_id_start(ch)) {
    size_t e = st;
    while (e < p->len && is_id_char((unsigned char)p->s[e]))
      e++;
    t.k = T_ID;
    t.len = e - st;
  } else if (isdigit(ch) || (ch == '.' && st + 1 < p->len &&
                             isdigit((unsigned char)p->s[st + 1]))) {
    size_t e = st;
    while (e < p->len && isdigit((unsigned char)p->s[e]))
      e++;
    if (e < p->len && p->s[e] == '.') {
      e++;
      while (e < p->len && isdigit((unsigned char)p->s[e]))
        e++;
    }
    if (e < p->len && (p->s[e] == 'e' || p->s[e] == 'E')) {
      size_t x = e + 1;
      if (x < p->len && (p->s[x] == '+' || p->s[x] == '-'))
        x++;
      if (x >= p->len || !isdigit((unsigned char)p->s[x])) {
        lex_error(p, st, "bad number '%.*s': expected digits after the exponent",
             (int)(x - st), p->s + st);
        p->tok = (Tok){T_EOF, p->len, 0, 0};
        return;
      }
      while (x < p->len && isdigit((unsigned char)p->s[x]))
        x++;
      e = x;
    }
    if (e < p->len && is_id_char((unsigned char)p->s[e])) {
      size_t x = e;
      while (x < p->len && is_id_char((unsigned char)p->s[x]))
        x++;
      lex_error(p, st, "bad number '%.*s'", (int)(x - st), p->s + st);
      p->tok = (Tok){T_EOF, p->len, 0, 0};
      return;
    }
    char buf[64];
    size_t n = e - st < sizeof buf - 1 ? e - st : sizeof buf - 1;
    memcpy(buf, p->s + st, n);
    buf[n] = 0;
    t.k = T_NUM;
    t.len = e - st;
    t.num = strtod(buf, NULL);
    if (!isfinite(t.num) || (t.num != 0 && fabs(t.num) < 1e-300)) {
      lex_error(p, st, "number '%.*s' is out of range", (int)t.len, p->s + st);
      p->tok = (Tok){T_EOF, p->len, 0, 0};
      return;
    }
  } else {
    t.len = 1;
    switch (ch) {
    case '[': t.k = T_LBRACK; break;
    case ']': t.k = T_RBRACK; break;
    case '(': t.k = T_LPAREN; break;
    case ')': t.k = T_RPAREN; break;
    case ',': t.k = T_COMMA; break;
    case '+': t.k = T_PLUS; break;
    case '-': t.k = T_MINUS; break;
    case '*': t.k = T_STAR; break;
    case '/': t.k = T_SLASH; break;
    case '=': t.k = T_EQ; break;
    case '<': t.k = T_LT; break;
    case '>': t.k = T_GT; break;
    case '.': t.k = T_DOT; break;
    case '!':
      t.k = T_NE;
      break;
    case ':':
      if (st + 1 < p->len && p->s[st + 1] == ':') {
        t.k = T_COLONCOLON;
        t.len = 2;
        break;
      }
      lex_error(p, st, "unexpected ':' (a reduction is written ':: op(vars)')");
      p->tok = (Tok){T_EOF, p->len, 0, 0};
      return;
    default:
      if (ch >= 0x20 && ch < 0x7f)
        lex_error(p, st, "unexpected character '%c'", ch);
      else
        lex_error(p, st, "unexpected character (byte 0x%02x)", ch);
      p->tok = (Tok){T_EOF, p->len, 0, 0};
      return;
    }
    /* Two-character comparisons: <= >= == != */
    bool eq_next = st + 1 < p->len && p->s[st + 1] == '=';
    if (eq_next && (t.k == T_LT || t.k == T_GT || t.k == T_EQ || t.k == T_NE)) {
      t.k = t.k == T_LT ? T_LE : t.k == T_GT ? T_GE : t.k == T_EQ ? T_EQEQ : T_NE;
      t.len = 2;
    } else if (t.k == T_NE) {
      lex_error(p, st, "unexpected character '!' (not equal is written '!=')");
      p->tok = (Tok){T_EOF, p->len, 0, 0};
      return;
    }
  }
  p->at = st + t.len;
  p->tok = t;
}

char *lex_text(Parser *p, const Tok *t) {
  return arena_strndup(p->ar, p->s + t->pos, t->len);
}

bool lex_is(const Parser *p, const char *word) {
  return p->tok.k == T_ID && strlen(word) == p->tok.len &&
         memcmp(p->s + p->tok.pos, word, p->tok.len) == 0;
}

bool lex_expect(Parser *p, TokKind k, const char *what) {
  if (p->failed)
    return false;
  if (p->tok.k != k) {
    char buf[64];
    lex_error(p, p->tok.pos, "expected %s, found %s", what,
         lex_desc(p, &p->tok, buf, sizeof buf));
    return false;
  }
  lex_next(p);
  return true;
}

