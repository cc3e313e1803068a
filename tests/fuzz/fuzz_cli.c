/* fuzz_cli.c — libFuzzer harness for the command line: the bytes, split
 * at NUL bytes, are an argv parsed by the option engine (src/cli/opts.c)
 * against a table with an option of every kind (flags, switches, counts,
 * shares, byte sizes, seeds, strings, paths, names, a refused option, a
 * positional) beside the shared --model and --set; a token list is then
 * parsed as run and generate parse theirs. Every accepted value must be
 * within the bounds its table entry promises; nothing may crash, leak or
 * trip a sanitizer. Messages go to stderr (run with -close_fd_mask=2),
 * --help to stdout. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 64 };

typedef struct FuzzArgs {
  SpecOpts spec;
  int two_pass, batch, threads, strategy;
  double share, bytes;
  uint64_t seed;
  const char *tokens, *out;
} FuzzArgs;

#define FO(field) offsetof(FuzzArgs, field)
static const Opt fuzz_opts[] = {
    {"--json", OPT_FLAG, FO(spec.json), NULL, .help = "a flag"},
    {"--two-pass", OPT_SWITCH, FO(two_pass), NULL, .help = "on", .lo = 1},
    {"--no-two-pass", OPT_SWITCH, FO(two_pass), NULL, .help = "off"},
    {"--batch", OPT_INT, FO(batch), "N", .help = "a count", .lo = 1,
     .hi = 1 << 20},
    {"--threads", OPT_INT, FO(threads), "N", .help = "a count", .lo = 1,
     .hi = 256},
    {"--share", OPT_DOUBLE, FO(share), "X", .help = "a share", .lo = 0,
     .hi = 1, .flags = OPT_LO_OPEN},
    {"--buffer", OPT_SIZE, FO(bytes), "B", .help = "a size"},
    {"--seed", OPT_SEED, FO(seed), "N", .help = "a seed"},
    {"--tokens", OPT_STRING, FO(tokens), "LIST", .help = "token ids"},
    {"--out", OPT_PATH, FO(out), "FILE", .help = "a path"},
    {"--strategy", OPT_ENUM, FO(strategy), "S", .help = "a name",
     .choices = &exec_strategy_choices},
    {"--phase", OPT_ENUM, FO(spec.phase), "P", .help = "a name",
     .choices = &phase_choices},
    {"--pipelined", OPT_REFUSED, 0, NULL, .help = "refused"},
};
static const OptTable fuzz_table = OPT_TABLE(fuzz_opts);

static void fuzz_init(void *opts) {
  *(FuzzArgs *)opts = (FuzzArgs){.two_pass = -1, .strategy = -1,
                                 .share = 0.5, .bytes = 1};
}

/* The bounds the table promises, then the token list. */
static int fuzz_run(const Parsed *p, void *opts) {
  const FuzzArgs *o = opts;
  const SpecOpts *s = &o->spec;
  if (o->two_pass < -1 || o->two_pass > 1 || o->batch < 0 ||
      o->batch > 1 << 20 || o->threads < 0 || o->threads > 256 ||
      !(o->share > 0 && o->share <= 1) || !(o->bytes >= 1) ||
      !isfinite(o->bytes) || o->strategy < -1 || o->strategy > EXEC_BEST ||
      (o->out && !o->out[0]) || !s->spec || s->nsets < 0)
    __builtin_trap();
  for (int i = 0; i < s->nsets; i++)
    if (!isfinite(s->sets[i].value) || !s->sets[i].name[0])
      __builtin_trap();
  TokenList t;
  if (o->tokens && parse_token_list(p->cmd, o->tokens, o->batch, &t)) {
    if (t.nseq < 1 || t.len < 1)
      __builtin_trap();
    for (int64_t i = 0; i < (int64_t)t.nseq * t.len; i++)
      if (t.ids[i] < 0)
        __builtin_trap();
    free(t.ids);
  }
  return 0;
}

static const Command fuzz_command = {
    .name = "fuzz",
    .summary = "the option engine",
    .about = "Every kind of option.\n",
    .opts = &fuzz_table,
    .uses = {USE_SPEC(FuzzArgs)},
    .example = "mambalaya fuzz x --set B=2\n",
    .size = sizeof(FuzzArgs),
    .init = fuzz_init,
    .run = fuzz_run,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size + 1);
  memcpy(copy, data, size);
  copy[size] = 0;
  char *argv[MAX_ARGS + 1] = {"fuzz"};
  int argc = 1;
  for (char *p = copy; argc < MAX_ARGS && p < copy + size;
       p += strlen(p) + 1)
    argv[argc++] = p;
  int st = command_main(&fuzz_command, argc, argv);
  if (st != 0 && st != EXIT_INPUT)
    __builtin_trap();
  free(copy);
  return 0;
}
