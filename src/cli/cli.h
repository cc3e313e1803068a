/* cli.h — the mambalaya command: one file per subcommand, and the option
 * handling they share.
 *
 * Exit status, the same for every command (README, "Commands"):
 *   0  success
 *   1  a failure while running: writing an output failed midway (disk
 *      full, an I/O error), a computation failed
 *   2  bad input: a malformed spec, architecture, checkpoint or config, a
 *      bad option or value, an output path that cannot be used (its
 *      directory is missing or read-only, it is a directory, it names one
 *      of the run's inputs), or a run that would need more memory than
 *      the machine has (or --max-memory allows)
 * Nothing is printed on stdout unless the command succeeds, and an output
 * is either written whole or left as it was (util.h, "writing outputs").
 *
 * Options: a flag takes no value (--json=no is an error); numbers follow
 * the spec's rule (plain decimals: 16, 2.5, 1e3; no hex, inf or nan). A
 * spec or architecture argument is a shipped name (mamba1, h100) unless
 * it is written as a path (it contains '/' or ends in .yaml): a local
 * file named like a shipped one is used only as ./NAME, and a warning
 * says so. */
#ifndef MAMBALAYA_CLI_H
#define MAMBALAYA_CLI_H

#include "../arch/arch.h"
#include "../embed/embed.h"
#include "../fusion/fusion.h"
#include "../model/model.h"
#include "../preset/preset.h"
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
  bool json;   /* --json */
  bool decode; /* --phase decode: the spec's sequence rank is 1 */
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
  bool val_taken;  /* args_value took it (else a flag was given a value) */
  const char *usage; /* the command's --help text */
} Args;

/* Advance to the next argument. Returns 1 for an option (a->opt set),
 * 2 for a positional argument (a->val set), 0 at the end, and -1 (with a
 * message) when the previous option was a flag given a value. Commands
 * loop while it is > 0 and return EXIT_INPUT on -1. */
int args_next(Args *a);
/* Is the current option NAME? */
bool args_is(const Args *a, const char *name);
/* Take the current option's value; false (and a message) if missing. */
bool args_value(Args *a);
/* Report an unknown option or extra argument; returns EXIT_INPUT. */
int args_unknown(const Args *a);
/* Print "CMD: message" on stderr (on one line: control characters are
 * escaped); returns EXIT_INPUT. */
int usage_error(const Args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* An integer in [LO, HI] written as a plain decimal ("16", "1e3"). */
bool parse_count(const char *s, long lo, long hi, long *out);
/* A byte count: a plain decimal with an optional suffix B, k, K, KiB, M,
 * MiB, G, GiB, T, TiB ("2MiB", "512k", "1e6"). */
bool parse_bytes(const char *s, double *out);

/* Token ids: non-negative decimal integers separated by ',' in rows
 * separated by ';' (all rows of one length). One row is split into BATCH
 * equal sequences (0: one); several rows are the sequences (BATCH, if
 * given, must match). False with a message. */
typedef struct TokenList {
  int *ids; /* [nseq, len], row-major, owned */
  int nseq, len;
} TokenList;
bool parse_token_list(const Args *a, const char *text, int batch,
                      TokenList *out);

/* Add NAME (LEN bytes of it) = VALUE to O's settings; false when full. */
bool spec_set(SpecOpts *o, const char *name, size_t len, double value);

/* ---- inputs, outputs and memory ---- */

/* PATH if the spec (DIR "specs") or architecture (DIR "archs") argument
 * NAME names a file rather than a shipped one, else NULL. */
const char *input_path(const char *dir, const char *name);
/* Refuse an output PATH that cannot be written or that is one of the
 * run's N INPUTS (NULL entries are skipped). 0, or EXIT_INPUT with a
 * message. */
int check_output(const Args *a, const char *path, const char *const *inputs,
                 int n);
/* The bytes a run may hold: --max-memory if given (> 0), else the memory
 * the machine has available (unlimited if unknown). */
double memory_budget(double max_memory);
/* Refuse a run that needs NEED bytes for WHAT when BUDGET is less:
 * EXIT_INPUT with a message naming both; 0 if it fits. */
int check_memory(const Args *a, const char *what, double need, double budget,
                 bool given);

/* Handle --model, --set and --json. Returns true if the option was one of
 * them (and *err set to an exit status when its value is bad). */
bool spec_opt(Args *a, SpecOpts *o, int *err);

/* Open a spec or an architecture by path, or by the name of a shipped
 * one ("mamba1", "mambalaya"); NULL opens the default (the shipped
 * mamba1, mambalaya) without a warning about a local file of that name. */
Cascade *open_spec(const char *name, Diag *d);
Arch *open_arch(const char *name, Diag *d);
/* open_spec with the spec's document (its kept sections: weights). */
Spec *open_spec_doc(const char *name, Diag *d);

/* Load o->spec, select its model (--model, else the spec's default) and
 * bind its shape. On failure prints the diagnostic and returns
 * EXIT_INPUT; on success returns 0 with *c and *s set. */
int load_spec(const SpecOpts *o, Cascade **c, Shape **s);

extern const char model_opts_help[]; /* the model's options, for --help */
/* Handle one of the model's options (--pipelined, --stitch, ...) into F.
 * Returns true if it was one (and *err set to an exit status when bad). */
bool model_opt(Args *a, ModelOverrides *f, int *err);

/* A plan as `fuse --json` writes it, for cascade C (bound by S): NULL and
 * D set (the file, and what is wrong) when it is not one, names Einsums C
 * lacks, misses one, or cannot run (a group reading what a later group
 * produces). */
Plan *load_plan_file(const char *path, const Cascade *c, const Shape *s,
                     Diag *d);

/* Numbers in options: an integer in [LO, HI]; a size in bytes with an
 * optional unit ("2MiB", "512k", "1e6"); the worker threads by default
 * (the CPUs, at most 16). */
int default_threads(void);

/* The inputs of a command that read o->spec into C (bound by S, or
 * NULL): the spec, the model used and the settings; the caller adds the
 * rest (the architecture, the design, the options). */
Inputs spec_inputs(const char *command, const SpecOpts *o, const Cascade *c,
                   const Shape *s);

/* "svg,pdf" -> the set of formats (1 << Format); 0 when a name is not a
 * format. */
unsigned parse_formats(const char *list);

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
int cmd_exec(int argc, char **argv);
int cmd_reproduce(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_init_weights(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
