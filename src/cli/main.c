/* main.c — `mambalaya COMMAND ...`: dispatch to a subcommand. */
#include "cli.h"

#include <string.h>

/* In `mambalaya --help` order. */
static const Command *const commands[] = {
    &classify_command, &fuse_command,    &eval_command, &search_command,
    &exec_command,     &reproduce_command, &sweep_command,
    &diff_command,     &import_command,  &export_command,     &tensors_command, &init_weights_command,
    &run_command,      &generate_command, &tokenize_command, &models_command,
    &validate_command,
};

const Command *cli_command(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i]->name, name) == 0)
      return commands[i];
  return NULL;
}

static void print_usage(FILE *f) {
  fprintf(f, "usage: mambalaya COMMAND [options]   (mambalaya COMMAND --help)\n"
             "\n"
             "Einsum-based fusion analysis of state-space models (Mambalaya).\n"
             "\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-13s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f, "\nExamples:\n"
             "  mambalaya reproduce            the paper's figures, into out/\n"
             "  mambalaya fuse mamba1          fusion groups of every strategy\n"
             "  mambalaya eval mamba2 --model mamba2-370m --strategy full\n"
             "  mambalaya sweep arch-neighbourhood   a study, into "
             "out/arch-neighbourhood/\n");
}

int cli_main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return EXIT_INPUT;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    const Command *c = argc > 2 && strcmp(cmd, "help") == 0
                           ? cli_command(argv[2])
                           : NULL;
    if (c)
      command_help(c);
    else
      print_usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("mambalaya %s\n", MAMBALAYA_VERSION);
    return 0;
  }
  const Command *c = cli_command(cmd);
  if (c)
    return command_main(c, argc - 1, argv + 1);
  fprintf(stderr, "mambalaya: unknown command '%s'\n\n", cmd);
  print_usage(stderr);
  return EXIT_INPUT;
}
