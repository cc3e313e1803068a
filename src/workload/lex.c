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

/* A number at ST (digits, a fraction, an exponent) into *T; false after
 * the error when it is malformed or out of range. */
static bool lex_number(Parser *p, size_t st, Tok *t) {
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
      return false;
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
    return false;
  }
  char buf[64];
  size_t n = e - st < sizeof buf - 1 ? e - st : sizeof buf - 1;
  memcpy(buf, p->s + st, n);
  buf[n] = 0;
  t->k = T_NUM;
  t->len = e - st;
  t->num = strtod(buf, NULL);
  if (!isfinite(t->num) || (t->num != 0 && fabs(t->num) < 1e-300)) {
    lex_error(p, st, "number '%.*s' is out of range", (int)t->len, p->s + st);
    return false;
  }
  return true;
}

/* The punctuation: each character's token alone, and followed by '='
 * (T_EOF: no such token; '!' is one only before '='). */
static const struct {
  char c;
  TokKind alone, with_eq;
} PUNCT[] = {
    {'[', T_LBRACK, T_EOF}, {']', T_RBRACK, T_EOF}, {'(', T_LPAREN, T_EOF},
    {')', T_RPAREN, T_EOF}, {',', T_COMMA, T_EOF},  {'+', T_PLUS, T_EOF},
    {'-', T_MINUS, T_EOF},  {'*', T_STAR, T_EOF},   {'/', T_SLASH, T_EOF},
    {'.', T_DOT, T_EOF},    {'=', T_EQ, T_EQEQ},    {'<', T_LT, T_LE},
    {'>', T_GT, T_GE},      {'!', T_EOF, T_NE},
};

/* Punctuation at ST (CH) into *T; false after the error for a character
 * that starts no token. */
static bool lex_punct(Parser *p, size_t st, unsigned char ch, Tok *t) {
  bool eq_next = st + 1 < p->len && p->s[st + 1] == '=';
  for (size_t k = 0; k < sizeof PUNCT / sizeof PUNCT[0]; k++) {
    if (PUNCT[k].c != ch)
      continue;
    bool two = eq_next && PUNCT[k].with_eq != T_EOF;
    if (!two && PUNCT[k].alone == T_EOF) {
      lex_error(p, st, "unexpected character '!' (not equal is written '!=')");
      return false;
    }
    t->k = two ? PUNCT[k].with_eq : PUNCT[k].alone;
    t->len = two ? 2 : 1;
    return true;
  }
  if (ch == ':' && st + 1 < p->len && p->s[st + 1] == ':') {
    t->k = T_COLONCOLON;
    t->len = 2;
    return true;
  }
  if (ch == ':')
    lex_error(p, st, "unexpected ':' (a reduction is written ':: op(vars)')");
  else if (ch >= 0x20 && ch < 0x7f)
    lex_error(p, st, "unexpected character '%c'", ch);
  else
    lex_error(p, st, "unexpected character (byte 0x%02x)", ch);
  return false;
}

void lex_next(Parser *p) {
  p->tok = (Tok){T_EOF, p->len, 0, 0}; /* what a failed parse reads on */
  if (p->failed)
    return;
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
    if (!lex_number(p, st, &t))
      return;
  } else if (!lex_punct(p, st, ch, &t)) {
    return;
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

