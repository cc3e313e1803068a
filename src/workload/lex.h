/* lex.h — the expression language's tokens, the parser's state, and
 * the lexer (lex.c) that expr.c's recursive descent reads them from;
 * errors are reported at a token's place in the YAML scalar. Private to
 * src/workload/. */
#ifndef MAMBALAYA_LEX_H
#define MAMBALAYA_LEX_H

#include "workload.h"

typedef enum {
  T_EOF,
  T_ID,
  T_NUM,
  T_LBRACK,
  T_RBRACK,
  T_LPAREN,
  T_RPAREN,
  T_COMMA,
  T_PLUS,
  T_MINUS,
  T_STAR,
  T_SLASH,
  T_EQ,
  T_LT,
  T_LE,
  T_GT,
  T_GE,
  T_EQEQ,
  T_NE,
  T_COLONCOLON,
  T_DOT,
} TokKind;

typedef struct Tok {
  TokKind k;
  size_t pos, len;
  double num;
} Tok;

/* A raw index expression, before we know which names are variables. */
typedef enum { IE_NUM, IE_ID, IE_ADD, IE_SUB, IE_MUL, IE_NEG } IEKind;
typedef struct IExpr IExpr;
struct IExpr {
  IEKind k;
  double num;
  const char *id;
  size_t pos;
  IExpr *a, *b;
};

/* A tensor access whose indices are still raw. */
typedef struct RawAccess {
  Access *acc;
  IExpr **raw;
  size_t *pos;
} RawAccess;

/* A bare name in a value, resolved once the variables are known. */
typedef struct NameRef {
  Expr *e;
  const char *name;
} NameRef;

typedef struct PVar {
  const char *name;
  int rank;
  size_t pos;
} PVar;

typedef struct Parser {
  Cascade *c;
  const YamlNode *node;
  Diag *d;
  const char *s;
  size_t len, at;
  Tok tok;
  bool failed;
  bool const_only; /* a size or parameter: no tensor reads */
  Arena *ar;       /* the cascade's arena */

  YamlCursor cursor; /* locating tokens in order costs one pass */
  RawAccess lhs;
  int nraws, raws_cap;
  RawAccess *raws; /* reads, left to right */
  int nnames, names_cap;
  NameRef *names;
  PVar vars[IR_MAX_VARS];
  int nvars;
  size_t eq_pos;
} Parser;

/* Where byte POS of the expression lies in the YAML file. */
Loc lex_loc(Parser *p, size_t pos);
/* The parse's error (its first only): at byte POS of the expression. */
__attribute__((format(printf, 3, 4))) void lex_error(Parser *p, size_t pos,
                                                     const char *fmt, ...);
/* Token T as a message quotes it ("end of expression", "'x'"), in BUF. */
const char *lex_desc(const Parser *p, const Tok *t, char *buf, size_t n);
/* Read the next token into p->tok. */
void lex_next(Parser *p);
/* Token T's text, in the cascade's arena. */
char *lex_text(Parser *p, const Tok *t);
/* Is the current token the name WORD? */
bool lex_is(const Parser *p, const char *word);
/* The current token is of kind K (WHAT, for the error otherwise): read
 * past it. */
bool lex_expect(Parser *p, TokKind k, const char *what);

#endif
