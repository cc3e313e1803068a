/* main.c — `mambalaya COMMAND ...`: dispatch to a subcommand. */
#include "cli.h"

#include <string.h>

typedef struct Command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} Command;

static const Command commands[] = {
    {"classify", cmd_classify,
     "classify every producer->consumer pair (RI, RSb, RSp, RD)"},
    {"fuse", cmd_fuse, "stitch the cascade into fusion groups per strategy"},
    {"eval", cmd_eval, "price a fusion plan on an accelerator"},
    {"exec", cmd_exec,
     "run a cascade on tensors (interpreter or plan), check, count bytes"},
    {"reproduce", cmd_reproduce,
     "run the paper's evaluation: every figure beside ours"},
    {"sweep", cmd_sweep,
     "a design-space study: many points, their Pareto front"},
    {"diff", cmd_diff, "what changed between two --json results"},
    {"import", cmd_import, "an AccelForge or Timeloop workload as a spec"},
    {"export", cmd_export, "each Einsum as a Timeloop problem and mapping"},
    {"tensors", cmd_tensors, "list the tensors of a safetensors file"},
    {"init-weights", cmd_init_weights,
     "write a model directory with random Mamba weights"},
    {"run", cmd_run, "run a Mamba language model over tokens (logits, state)"},
    {"generate", cmd_generate, "greedy decoding: prefill, then token steps"},
    {"tokenize", cmd_tokenize, "text to token ids and back (tokenizer.json)"},
};

static void print_usage(FILE *f) {
  fprintf(f, "usage: mambalaya COMMAND [options]   (mambalaya COMMAND --help)\n"
             "\n"
             "Einsum-based fusion analysis of state-space models (Mambalaya).\n"
             "\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nExamples:\n"
             "  mambalaya reproduce            the paper's figures, into out/\n"
             "  mambalaya fuse mamba1          fusion groups of every strategy\n"
             "  mambalaya eval mamba2 --model mamba2-370m --strategy full\n"
             "  mambalaya sweep arch-neighbourhood   a study, into "
             "out/arch-neighbourhood/\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return EXIT_INPUT;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    if (argc > 2 && strcmp(cmd, "help") == 0) {
      char *sub[] = {argv[2], "--help", NULL};
      for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, argv[2]) == 0)
          return commands[i].run(2, sub);
    }
    print_usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("mambalaya %s\n", MAMBALAYA_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, cmd) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "mambalaya: unknown command '%s'\n\n", cmd);
  print_usage(stderr);
  return EXIT_INPUT;
}
