/* cli.h — the mambalaya command: one file per subcommand, and the option
 * handling they share.
 *
 * Exit status: 0 success, 1 a failure while running (cannot write a
 * file), 2 bad input (a malformed spec, a bad option). Nothing is printed
 * on stdout unless the command succeeds. */
#ifndef MAMBALAYA_CLI_H
#define MAMBALAYA_CLI_H

#include "../arch/arch.h"
#include "../embed/embed.h"
#include "../fusion/fusion.h"
#include "../model/model.h"
#include "../report/report.h"
#include "../spec/spec.h"

enum { EXIT_INPUT = 2, EXIT_RUN = 1, MAX_SETS = 64 };

/* Options common to the commands that read a spec. */
typedef struct SpecOpts {
  const char *spec;  /* the positional SPEC argument */
  const char *model; /* --model */
  Setting sets[MAX_SETS];
  char set_names[MAX_SETS][64];
  int nsets;
  bool json; /* --json */
} SpecOpts;

/* An option scanner: argv is walked once; each command asks for the
 * options it knows and reports anything else. */
typedef struct Args {
  const char *cmd; /* "mambalaya fuse", for messages */
  int argc;
  char **argv;
  int i;
  const char *opt; /* the current option's name, e.g. "--model" */
  char optbuf[128];
  const char *val; /* its value, after next_value */
  bool inline_val; /* given as --opt=value */
  const char *usage; /* the command's --help text */
} Args;

/* Advance to the next argument. Returns 1 for an option (a->opt set),
 * 2 for a positional argument (a->val set), 0 at the end. */
int args_next(Args *a);
/* Is the current option NAME? */
bool args_is(const Args *a, const char *name);
/* Take the current option's value; false (and a message) if missing. */
bool args_value(Args *a);
/* Report an unknown option or extra argument; returns EXIT_INPUT. */
int args_unknown(const Args *a);
/* Print "CMD: message" on stderr; returns EXIT_INPUT. */
int usage_error(const Args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Handle --model, --set and --json. Returns true if the option was one of
 * them (and *err set to an exit status when its value is bad). */
bool spec_opt(Args *a, SpecOpts *o, int *err);

/* Open a spec or an architecture by path, or by the name of a shipped
 * one ("mamba1", "mambalaya"). */
Cascade *open_spec(const char *name, Diag *d);
Arch *open_arch(const char *name, Diag *d);

/* Load o->spec, select its model (--model, else the spec's default) and
 * bind its shape. On failure prints the diagnostic and returns
 * EXIT_INPUT; on success returns 0 with *c and *s set. */
int load_spec(const SpecOpts *o, Cascade **c, Shape **s);

/* Print BUF to stdout (all of it, at once). */
void emit(const Buf *b);

/* The tokenizer of a model directory (MODEL/tokenizer.json) or FILE when
 * given; NULL after printing the message (cmd_tokenize.c). */
typedef struct Tokenizer Tokenizer;
Tokenizer *open_tokenizer(const char *model, const char *file);
/* Append the bytes token ID stands for to OUT (nothing for an id that
 * stands for nothing). */
void token_text(const Tokenizer *t, int id, Buf *out);

int cmd_classify(int argc, char **argv);
int cmd_fuse(int argc, char **argv);
int cmd_tensors(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_init_weights(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
