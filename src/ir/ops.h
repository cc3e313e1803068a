/* ops.h — the one table of the expression language's operators: how each
 * is written, how many operands it takes, what it means, and what the
 * accelerator model charges for one evaluation.
 *
 *   X(ID, TEXT, ARITY, PREC, COST)
 *
 *   ID     the enum member OP_ID
 *   TEXT   how it is written: a function name, called TEXT(a, ...), or an
 *          infix symbol
 *   ARITY  operands: 1, 2 or 3
 *   PREC   0 for a function; else an infix operator's precedence, loosest
 *          first: 1 comparisons (they do not chain), 2 + -, 3 * /
 *   COST   operations per evaluation by class (src/arch/arch.h's OpClass
 *          without the OPC_ prefix): C(CLASS, N) ...  A product reduced by
 *          a sum is one MACC instead: that is the model's rule (work.c).
 *
 * The parser (src/workload/expr.c) reads TEXT, ARITY and PREC; the model
 * (src/model/work.c) reads COST; the meaning is computed at two
 * precisions, in double with libm (op_apply in ops.c, also used to fold
 * constants) and over float vectors for the executor (vm_op in
 * src/exec/vmath.c), each as a function named after ID. The formulas that
 * read the same at both are written once, in IR_OP_FORMULAS below; the
 * others (pow, tanh, erf and the GELUs, whose float forms are their own
 * algorithms) once in each file. Adding an op is a row here and a formula
 * (or the two functions); its cost goes in docs/architecture.md's table
 * of ops.
 *
 * Comparisons give 1 or 0. Prefix '-' is OP_NEG. */
#ifndef MAMBALAYA_IR_OPS_H
#define MAMBALAYA_IR_OPS_H

#include <stdbool.h>
#include <stddef.h>

/* clang-format off */
#define IR_OPS(X)                                                             \
  /* arithmetic */                                                           \
  X(ADD,       "+",         2, 2, C(ADD, 1))                                 \
  X(SUB,       "-",         2, 2, C(ADD, 1))                                 \
  X(MUL,       "*",         2, 3, C(MUL, 1))                                 \
  X(DIV,       "/",         2, 3, C(DIV, 1))                                 \
  /* comparisons: 1 if true, else 0 */                                       \
  X(LT,        "<",         2, 1, C(MAX, 1))                                 \
  X(LE,        "<=",        2, 1, C(MAX, 1))                                 \
  X(GT,        ">",         2, 1, C(MAX, 1))                                 \
  X(GE,        ">=",        2, 1, C(MAX, 1))                                 \
  X(EQ,        "==",        2, 1, C(MAX, 1))                                 \
  X(NE,        "!=",        2, 1, C(MAX, 1))                                 \
  /* where(c, a, b): a where c is not 0, else b (a select) */                \
  X(WHERE,     "where",     3, 0, C(MAX, 1))                                 \
  X(MAX,       "max",       2, 0, C(MAX, 1))                                 \
  X(MIN,       "min",       2, 0, C(MAX, 1))                                 \
  /* pow(a, b): exact products for integer b, |b| < 64; else exp(b log a) */ \
  X(POW,       "pow",       2, 0, C(EXP, 1) C(LOG, 1) C(MUL, 1))             \
  X(NEG,       "neg",       1, 0, C(ADD, 1))                                 \
  X(ABS,       "abs",       1, 0, C(ADD, 1))                                 \
  X(RECIP,     "recip",     1, 0, C(DIV, 1))                                 \
  X(CEIL,      "ceil",      1, 0, C(ADD, 1))  /* the least integer >= a */   \
  X(EXP,       "exp",       1, 0, C(EXP, 1))                                 \
  X(LOG,       "log",       1, 0, C(LOG, 1))                                 \
  X(SQRT,      "sqrt",      1, 0, C(SQRT, 1))                                \
  X(RSQRT,     "rsqrt",     1, 0, C(SQRT, 1))          /* 1/sqrt(a) */      \
  X(SIGMOID,   "sigmoid",   1, 0, C(SILU, 1))          /* 1/(1+exp(-a)) */  \
  X(SILU,      "silu",      1, 0, C(SILU, 1))          /* a sigmoid(a) */   \
  /* PyTorch's softplus: log(1 + exp(a)), a itself above 20 */               \
  X(SOFTPLUS,  "softplus",  1, 0, C(EXP, 1) C(ADD, 1) C(LOG, 1))             \
  /* tanh(a) = 2 sigmoid(2a) - 1 */                                          \
  X(TANH,      "tanh",      1, 0, C(SILU, 1) C(MUL, 2) C(ADD, 1))            \
  /* erf as Abramowitz-Stegun 7.1.26 prices it: 1/(1+p|a|), a degree-5 */    \
  /* polynomial, exp(-a^2) */                                                \
  X(ERF,       "erf",       1, 0, C(EXP, 1) C(DIV, 1) C(MUL, 7) C(ADD, 6))   \
  /* GELU, exact: a/2 (1 + erf(a/sqrt 2)) */                                 \
  X(GELU,      "gelu",      1, 0, C(EXP, 1) C(DIV, 1) C(MUL, 10) C(ADD, 7))  \
  /* GELU, tanh form: a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */       \
  X(GELU_TANH, "gelu_tanh", 1, 0, C(SILU, 1) C(MUL, 8) C(ADD, 3))
/* clang-format on */

/* F(ID, ARITY, EXPR): the ops whose formula is the same in float and in
 * double: EXPR of the operands a, b, c (as many as ARITY) of type T, with
 * the elementary functions the includer defines at its precision: EXP,
 * LOG, LOG1P, SQRT, FABS, CEIL. Constants are written (T)n, so that float
 * code never computes in double. */
/* clang-format off */
#define IR_OP_FORMULAS(F, T)                                                  \
  F(ADD,      2, a + b)                                                       \
  F(SUB,      2, a - b)                                                       \
  F(MUL,      2, a * b)                                                       \
  F(DIV,      2, a / b)                                                       \
  F(LT,       2, a < b ? (T)1 : (T)0)                                         \
  F(LE,       2, a <= b ? (T)1 : (T)0)                                        \
  F(GT,       2, a > b ? (T)1 : (T)0)                                         \
  F(GE,       2, a >= b ? (T)1 : (T)0)                                        \
  F(EQ,       2, a == b ? (T)1 : (T)0)                                        \
  F(NE,       2, a != b ? (T)1 : (T)0)                                        \
  F(WHERE,    3, a != (T)0 ? b : c)                                           \
  F(MAX,      2, a > b ? a : b)                                               \
  F(MIN,      2, a < b ? a : b)                                               \
  F(NEG,      1, -a)                                                          \
  F(ABS,      1, FABS(a))                                                     \
  F(RECIP,    1, (T)1 / a)                                                    \
  F(CEIL,     1, CEIL(a))                                                     \
  F(EXP,      1, EXP(a))                                                      \
  F(LOG,      1, LOG(a))                                                      \
  F(SQRT,     1, SQRT(a))                                                     \
  F(RSQRT,    1, (T)1 / SQRT(a))                                              \
  F(SIGMOID,  1, (T)1 / ((T)1 + EXP(-a)))                                     \
  F(SILU,     1, a / ((T)1 + EXP(-a)))                                        \
  /* PyTorch's, threshold 20: what Mamba uses */                             \
  F(SOFTPLUS, 1, a > (T)20 ? a : LOG1P(EXP(a)))
/* clang-format on */

/* The operands of a formula of ARITY (1 to 3) operands of type T. */
#define IR_OP_PARAMS1(T) T a
#define IR_OP_PARAMS2(T) T a, T b
#define IR_OP_PARAMS3(T) T a, T b, T c

typedef enum {
#define X(id, text, arity, prec, cost) OP_##id,
  IR_OPS(X)
#undef X
      OP_COUNT
} Op;

enum { OP_MAX_ARITY = 3, OP_PRECS = 3 }; /* operands; infix precedences */

const char *op_text(Op op); /* "+", "exp", ... */
int op_arity(Op op);
int op_prec(Op op); /* 0: a function */
/* The function (PREC 0) called NAME, or the infix operator written NAME
 * at precedence PREC; false if none. */
bool op_function(const char *name, Op *op);
bool op_infix(const char *text, size_t len, int prec, Op *op);
/* The meaning, in double precision (libm): operands past the op's arity
 * are ignored. */
double op_apply(Op op, double a, double b, double c);

#endif
