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
#include "../workload/workload.h"

enum { EXIT_INPUT = 2, EXIT_RUN = 1 };

/* ---- declarative commands (opts.c) ----
 *
 * A command is a Command: its name, its help prose, its option tables and
 * the function that runs it. Each option is one Opt in a table: its name,
 * the kind of value it takes, where in the command's options struct the
 * value goes, what it accepts and its help line. One engine parses argv
 * against the tables (refusing unknown options, missing or bad values, a
 * flag given a value), checks the positionals and required options, and
 * writes --help; a command's body sees only the parsed struct. */

typedef enum OptKind {
  OPT_FLAG,    /* no value: sets a bool */
  OPT_SWITCH,  /* no value: sets an int to lo (--two-pass 1, --no-two-pass
                  0) */
  OPT_INT,     /* an integer in [lo, hi], a plain decimal (16, 1e3): int */
  OPT_DOUBLE,  /* a plain decimal in lo..hi (ends open with OPT_LO_OPEN,
                  OPT_HI_OPEN): double */
  OPT_SIZE,    /* bytes, an optional unit (2MiB, 512k, 1e6), >= 1: double */
  OPT_SEED,    /* a non-negative integer in decimal digits: uint64_t */
  OPT_STRING,  /* any text: const char * */
  OPT_PATH,    /* a file or directory name, not empty: const char * */
  OPT_ENUM,    /* one of choices' names: its value (an int) */
  OPT_CUSTOM,  /* parse() turns the value into the field */
  OPT_REFUSED, /* an option the command refuses; help says why */
  OPT_KIND_COUNT
} OptKind;

enum {
  OPT_POSITIONAL = 1, /* an argument, not an option: name is "SPEC" */
  OPT_REQUIRED = 2,   /* must be given ("needs --model") */
  OPT_REPEAT = 4,     /* may be given again and adds (--set) */
  OPT_LO_OPEN = 8,    /* OPT_DOUBLE: lo itself is out of range */
  OPT_HI_OPEN = 16,
  OPT_LIST = 32, /* OPT_ENUM: --help lists the choices before the help
                    line (they come from the concept's own table) */
};

/* The names an OPT_ENUM accepts: name(i) for values 0..count-1, and
 * EXTRA (value -1: "interpreter", "all") first or last. */
typedef struct OptChoices {
  const char *noun; /* "strategy": "unknown strategy 'x' (expected ...)" */
  const char *(*name)(int value);
  int count;
  const char *extra;
  bool extra_first;
} OptChoices;

typedef struct Opt {
  const char *name; /* "--arch" (or a positional's "SPEC") */
  OptKind kind;
  size_t off;       /* where the value goes, from the table's base */
  const char *arg;  /* the value's name in help: "ARCH" */
  const char *help; /* one line; --help wraps it */
  double lo, hi;    /* the range; OPT_SWITCH's value in lo */
  unsigned flags;
  const OptChoices *choices; /* OPT_ENUM */
  /* OPT_CUSTOM: 0, or an exit status after a message naming CMD. */
  int (*parse)(const char *cmd, const char *val, void *field);
} Opt;

typedef struct OptTable {
  const Opt *opts;
  int n;
  /* What the table's fields own, freed after the command ran (NULL:
   * nothing): the engine calls it at the table's base. */
  void (*fini)(void *base);
  /* Give the table's fields the run's input set (NULL: nothing to give):
   * the engine calls it at the table's base before the command runs. */
  void (*inputs)(void *base, InputSet *in);
} OptTable;
#define OPT_TABLE(a) {a, (int)(sizeof a / sizeof a[0]), NULL, NULL}

/* A shared table a command takes, at BASE in its options struct, under
 * HEADING in --help (NULL: none). The command's own table comes first:
 * an option there hides a shared one of the same name. */
typedef struct OptUse {
  const OptTable *table;
  size_t base;
  const char *heading;
} OptUse;

enum { OPT_MAX = 64, OPT_USES = 4 };

typedef struct Command Command;

/* What parsing found, for the command's body. */
typedef struct Parsed {
  const Command *command;
  char cmd[48];        /* "mambalaya eval", for messages */
  bool seen[OPT_MAX];  /* by the option's place over the tables */
  /* The files this run read (util.h, "the inputs of a run"): what it
   * loads is added as it loads, and every output is checked against it
   * (write_output, outset_protect_inputs). The engine owns it. */
  InputSet *inputs;
} Parsed;

struct Command {
  const char *name;    /* "eval" */
  const char *summary; /* its line in `mambalaya --help` */
  const char *about;   /* --help's prose, after the usage line */
  const OptTable *opts; /* its own options, at the start of its struct */
  OptUse uses[OPT_USES]; /* the shared tables it takes (USE_SPEC, ...) */
  const char *notes;   /* --help's prose after the options, or NULL */
  const char *example; /* one command a line (required) */
  size_t size;         /* its options struct */
  void (*init)(void *opts); /* its values before parsing (NULL: zeros) */
  int (*run)(const Parsed *p, void *opts);
};

/* Parse ARGV (ARGV[0] the command's name) into a fresh options struct
 * and run the command: its exit status (0 after --help). */
int command_main(const Command *c, int argc, char **argv);
/* `mambalaya ARGV[1] ...` (main.c): the command table's dispatch, the
 * program's whole body; src/main.c and the library's entry point (api.h)
 * call it. Its exit status. */
int cli_main(int argc, char **argv);
/* The command NAME ("eval"), or NULL. */
const Command *cli_command(const char *name);
/* Does option NAME of C take a value? 1, 0 (a flag or switch) or -1 (no
 * such option). */
int command_option_arity(const Command *c, const char *name);
/* Print C's --help on stdout. */
void command_help(const Command *c);
/* Was option NAME given? */
bool opt_given(const Parsed *p, const char *name);

/* Print "CMD: message" on stderr (on one line: control characters are
 * escaped); returns EXIT_INPUT. */
int usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- shared options ---- */

/* Options common to the commands that read a spec. */
typedef struct SpecOpts {
  const char *spec;  /* the positional SPEC argument, or --spec */
  const char *model; /* --model */
  Setting *sets;     /* --set, as many as given (spec_options' fini) */
  int nsets, sets_cap;
  Arena names;       /* their names */
  bool json;   /* --json */
  int phase;   /* --phase: PHASE_DECODE sets the sequence rank to 1 */
  InputSet *inputs; /* the run's (Parsed): the spec and what it includes */
} SpecOpts;

enum { PHASE_PREFILL, PHASE_DECODE };

/* SPEC (after the command's own positionals), --model and --set, into a
 * SpecOpts. */
extern const OptTable spec_options;
/* The model's options (--pipelined, --stitch, ...), into a
 * ModelOverrides (eval, reproduce). */
extern const OptTable model_options;
/* A command's use of a shared table, at the member of its options struct
 * ARGS that each one fills (spec, mf): where it goes and its heading are
 * written once. */
#define USE_SPEC(Args) {&spec_options, offsetof(Args, spec), NULL}
#define USE_MODEL(Args) {&model_options, offsetof(Args, mf), "model options:"}
/* The executors' options (exec, run, generate). */
typedef struct ExecutorOpts {
  int strategy;  /* --strategy; -1: the interpreter; EXEC_BEST: the
                    search's plan */
  const char *plan_file; /* --plan: run this plan */
  const char *arch;      /* --arch: what --strategy best searches on */
  double buffer; /* --buffer: the fused executor's tile buffer */
  int threads;   /* --threads */
} ExecutorOpts;
/* --strategy best: the plan `search` finds for the run's shapes. */
enum { EXEC_BEST = ST_COUNT };
extern const OptTable executor_options;
#define USE_EXECUTOR(Args, member)                                            \
  {&executor_options, offsetof(Args, member), NULL}
/* The interpreter, a 2 MiB buffer, default_threads(). */
ExecutorOpts executor_defaults(void);
/* What runs, for messages and outputs: "interpreter", the strategy's
 * name, "best (searched on ARCH)" or "plan FILE" (into BUF of N bytes). */
const char *executor_name(const ExecutorOpts *o, char *buf, size_t n);
/* The plan the executor runs for C bound by S (PAIRS from
 * fusion_classify): --plan's (the one --strategy picks of a file of
 * several), the search's for --strategy best (on --arch, the least
 * latency), or the strategy's stitched by STITCH for OBJ; *PLAN NULL for
 * the interpreter. False (D set) when there is none. */
bool executor_plan(const ExecutorOpts *o, Stitcher stitch, Objective obj,
                   const Cascade *c, const Shape *s, const Pair *pairs,
                   Plan **plan, Diag *d);

/* A whole model from its config.json (cmd_models.c): --config and the
 * scenario it is priced in (eval, search, reproduce). */
typedef struct NetArgs {
  const char *config; /* --config: a config.json or a folder holding one */
  double batch, prompt, generate, context, capacity_factor, samples;
  int routing;
} NetArgs;
extern const OptTable net_options;
#define USE_NET(Args) {&net_options, offsetof(Args, net), "whole model (with --config):"}
/* --config, into the member FIELD of Args. */
#define CONFIG_OPT(Args, field)                                              \
  {"--config", OPT_PATH, offsetof(Args, field), "PATH",                      \
   .help = "a whole model: its Hugging Face config.json, or a folder "       \
           "holding one (no SPEC then: the model is the workload; "          \
           "docs/models.md)"}
/* The options of the commands that price or run one cascade, each
 * written once: --arch into the member FIELD of Args; --phase into its
 * SpecOpts spec; --trace, the timeline of what was priced, into FIELD. */
#define ARCH_OPT(Args, field)                                                \
  {"--arch", OPT_STRING, offsetof(Args, field), "ARCH",                      \
   .help = "architecture (default: mambalaya)"}
#define PHASE_OPT(Args)                                                      \
  {"--phase", OPT_ENUM, offsetof(Args, spec.phase), "P",                     \
   .help = "prefill (the spec's sizes) or decode (the sequence rank, "       \
           "`sequence:` in the spec, set to 1)",                             \
   .choices = &phase_choices}
#define TRACE_OPT(Args, field)                                               \
  {"--trace", OPT_PATH, offsetof(Args, field), "FILE.json",                  \
   .help = "also write the timeline of the plan priced (search: the best "   \
           "schedule's) as Chrome trace-event JSON (Perfetto opens it): a "  \
           "track per unit, memory level and group, a slice per Einsum and " \
           "per transfer"}
/* --max-memory B of a command whose WHAT ("a run whose weights and
 * arrays") it bounds, into the double FIELD of Args (memory_budget,
 * check_memory). */
#define MAX_MEMORY_OPT(Args, field, what)                                    \
  {"--max-memory", OPT_SIZE, offsetof(Args, field), "B",                     \
   .help = "refuse (exit 2) " what " would need more than B bytes (8GiB, "   \
           "512MiB; default: the memory the machine has available)"}
/* NetArgs' values before parsing: every figure its default. */
void net_args_init(NetArgs *n);
/* With CONFIG (--config): refuse SPEC (when given) and the options of
 * PER_CASCADE (NULL-terminated), which price one cascade; without it,
 * refuse net_options. 0, or EXIT_INPUT after the message. */
int net_check_options(const Parsed *p, const char *config, const char *spec,
                      const char *const *per_cascade);
/* Load N->config into NET (its diagnostic printed): 0 or EXIT_INPUT. */
int load_net(const NetArgs *n, Net *net);
/* Price the model of N->config on ARCH_NAME end to end as DESIGN (-1:
 * best, the search's schedule per block) under MF, and print it (JSON
 * with inputs when JSON): the body of `eval --config`, `search --config`
 * and `reproduce --config`, CMD their name ("eval"). Its exit status. */
int net_eval(const char *cmd, const NetArgs *n, const char *arch_name,
             int design, const ModelOverrides *mf, bool json);
/* Every design of DESIGNS and the search's best end to end on the model
 * of N->config, side by side, then best's per-kind breakdown: the body
 * of `reproduce --config`. */
int net_reproduce(const char *cmd, const NetArgs *n, const char *arch_name,
                  const ModelOverrides *mf, bool json);

/* init-weights --config: random weights for the model of CONFIG into
 * DIR (config.json and model.safetensors, together); generate --config:
 * the model in DIR run greedily on TOKENS_TEXT for MAX_NEW tokens, the
 * logits of every position into OUT when given (its files join IN, the
 * run's inputs, which OUT may not be) (cmd_netrun.c). Exit statuses. */
int net_init_weights(const char *cmd, const char *config, uint64_t seed,
                     const char *dir);
int net_generate(const char *cmd, const char *dir, const char *tokens_text,
                 int batch, int max_new, const char *out, InputSet *in);

/* The names of the library's enums, as options take them. */
extern const OptChoices phase_choices, strategy_choices, stitcher_choices,
    design_choices, objective_choices, search_objective_choices;
/* --design of eval: a design, or best (-1): the searched schedule. */
extern const OptChoices design_or_best_choices;
/* --strategy of the executors: interpreter (-1) or a strategy. */
extern const OptChoices exec_strategy_choices;

/* Token ids: non-negative decimal integers separated by ',' in rows
 * separated by ';' (all rows of one length). One row is split into BATCH
 * equal sequences (0: one); several rows are the sequences (BATCH, if
 * given, must match). False with a message naming CMD. */
typedef struct TokenList {
  int *ids; /* [nseq, len], row-major, owned */
  int nseq, len;
} TokenList;
bool parse_token_list(const char *cmd, const char *text, int batch,
                      TokenList *out);

/* --set NAME=V into the SpecOpts FIELD (an OPT_CUSTOM parser). */
int parse_set(const char *cmd, const char *val, void *field);
/* Add NAME (LEN bytes of it) = VALUE to O's settings; false when full. */
bool spec_set(SpecOpts *o, const char *name, size_t len, double value);

/* ---- inputs, outputs and memory ---- */

/* PATH if the spec (DIR "specs") or architecture (DIR "archs") argument
 * NAME names a file rather than a shipped one, else NULL. */
const char *input_path(const char *dir, const char *name);
/* Refuse an output PATH that cannot be written or that is one of the
 * run's N INPUTS (NULL entries are skipped). 0, or EXIT_INPUT with a
 * message naming CMD. */
int check_output(const char *cmd, const char *path,
                 const char *const *inputs, int n);
/* Write DATA to PATH, an output of the run that read IN: 0, EXIT_INPUT
 * if PATH is refused (one of IN, not a regular file: output_write) or
 * EXIT_RUN if writing fails, after a message naming CMD. */
int write_output(const char *cmd, const char *path, const void *data,
                 size_t len, const InputSet *in);
/* W's safetensors file to PATH as write_output writes DATA; frees W. */
int write_safetensors(const char *cmd, const char *path, StWriter *w,
                      const InputSet *in);
/* The bytes a run may hold: --max-memory if given (> 0), else the memory
 * the machine has available (unlimited if unknown). */
double memory_budget(double max_memory);
/* Refuse a run that needs NEED bytes for WHAT when BUDGET is less:
 * EXIT_INPUT with a message naming both; 0 if it fits. */
int check_memory(const char *cmd, const char *what, double need,
                 double budget, bool given);
/* EV's timeline (C on A) into PATH as a Chrome trace (report_trace_json),
 * an output of the run P parsed (write_output). */
int write_trace(const Parsed *p, const char *path, const Cascade *c,
                const Arch *a, const Eval *ev);
/* Print D's diagnostic; returns EXIT_INPUT (a bad input). */
int input_failed(const Diag *d);

/* Open a spec or an architecture by path, or by the name of a shipped
 * one ("mamba1", "mambalaya"); NULL opens the default (the shipped
 * mamba1, mambalaya) without a warning about a local file of that name. */
Cascade *open_spec(const char *name, Diag *d);
Arch *open_arch(const char *name, Diag *d);
/* An architecture's notes (Arch.notes: an AccelForge file's, docs/compat.md),
 * each a line "PATH: note: ..." on stderr. */
void print_arch_notes(const char *path, const char *notes);
/* open_spec with the spec's document (its kept sections: weights). */
Spec *open_spec_doc(const char *name, Diag *d);
/* open_spec with O's --set values: they bind scalars and an AccelForge
 * template's variables; notes go to stderr. */
Cascade *open_spec_set(const char *name, const SpecOpts *o, Diag *d);

/* Load o->spec, select its model (--model, else the spec's default) and
 * bind its shape; with COMPLETE, every rank must have a size (CMD names
 * the command in that message). On failure prints the diagnostic and
 * returns EXIT_INPUT; on success returns 0 with *c and *s set. */
int load_spec(const char *cmd, const SpecOpts *o, bool complete,
              Cascade **c, Shape **s);

/* The architecture ARCH_NAME (NULL: the shipped mambalaya), then
 * load_spec; 0 with all three set, or an exit status with none. */
int load_spec_arch(const char *cmd, const SpecOpts *o, const char *arch_name,
                   bool complete, Arch **a, Cascade **c, Shape **s);
/* load_spec_arch's other end: A, C and S freed (S may be freed already:
 * NULL); returns STATUS. */
int spec_arch_free(Arch *a, Cascade *c, Shape *s, int status);

/* The worker threads by default: the CPUs, at most 16. */
int default_threads(void);

/* The inputs of a command that read o->spec into C (bound by S, or
 * NULL): the spec, the model used and the settings; the caller adds the
 * rest (the architecture, the design, the options). */
Inputs spec_inputs(const char *command, const SpecOpts *o, const Cascade *c,
                   const Shape *s);
/* Print ROOT (taken) with its "inputs" on stdout. */
void emit_json(json_t *root, const Inputs *in);

/* --format LIST: "svg,pdf" -> the set of formats (1 << Format), into an
 * unsigned. */
int parse_formats(const char *cmd, const char *list, void *field);

/* Print BUF to stdout (all of it, at once). */
void emit(const Buf *b);

/* The tokenizer of a model directory (MODEL/tokenizer.json) or FILE when
 * given; NULL after printing the message (cmd_tokenize.c). */
typedef struct Tokenizer Tokenizer;
Tokenizer *open_tokenizer(const char *model, const char *file);
/* Append the bytes token ID stands for to OUT (nothing for an id that
 * stands for nothing). */
void token_text(const Tokenizer *t, int id, Buf *out);

extern const Command classify_command, fuse_command, eval_command,
    search_command, import_command, export_command, exec_command, reproduce_command, sweep_command, diff_command,
    tensors_command, init_weights_command, run_command, generate_command,
    tokenize_command, models_command, validate_command;

#endif
