/* fuzz_export.c — libFuzzer harness for `mambalaya export timeloop`: the
 * bytes are a spec (ours), exported as the command does (its option
 * engine and body, src/cli/cmd_export.c) into a scratch directory; every
 * problem it writes must load back as a Timeloop problem (docs/compat.md:
 * "An exported problem loads back"), but for an Einsum that reads no
 * tensor, which its file says Timeloop cannot state. A spec it refuses must be refused
 * with exit 2; nothing may crash, leak or trip a sanitizer. Messages go
 * to stderr (run with -close_fd_mask=2). */
#define _GNU_SOURCE /* mkdtemp */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scratch directory, made once: the harness's own state. */
static char dir[64];

/* Remove every file of OUT, checking that each problem loads back. */
static void check_and_clear(const char *out) {
  DIR *dp = opendir(out);
  if (!dp)
    return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(dp))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", out, e->d_name);
    size_t len;
    char *text = strstr(e->d_name, ".problem.yaml")
                     ? read_file_max(path, INPUT_TEXT_MAX, &len)
                     : NULL;
    if (text && !strstr(text, "reads no tensor: Timeloop's problems")) {
      Diag d = {0};
      Cascade *c = spec_parse(path, text, len, &d);
      if (!c)
        __builtin_trap(); /* an exported problem that does not load */
      cascade_free(c);
    }
    free(text);
    unlink(path);
  }
  closedir(dp);
  rmdir(out);
}

/* The scratch directory goes when the fuzzer ends (its exit). */
static void remove_dir(void) {
  char spec[96];
  snprintf(spec, sizeof spec, "%s/spec.yaml", dir);
  unlink(spec);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/fuzz_export.XXXXXX");
    if (!mkdtemp(dir))
      __builtin_trap();
    atexit(remove_dir);
  }
  char spec[96], out[96];
  snprintf(spec, sizeof spec, "%s/spec.yaml", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  FILE *f = fopen(spec, "wb");
  if (!f)
    __builtin_trap();
  fwrite(data, 1, size, f);
  fclose(f);
  char *argv[] = {"export", "timeloop", spec, "--set", "B=2", "--set",
                  "I=8", "--out", out, NULL};
  int st = command_main(&export_command, 9, argv);
  if (st != 0 && st != EXIT_INPUT && st != EXIT_RUN)
    __builtin_trap();
  check_and_clear(out);
  return 0;
}
