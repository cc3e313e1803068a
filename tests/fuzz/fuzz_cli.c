/* fuzz_cli.c — libFuzzer harness for the command-line parser: the bytes,
 * split at NUL bytes, are an argv scanned as the commands scan theirs
 * (options with inline or separate values, flags, positionals), with the
 * shared option handlers (--model, --set, --json) and the value parsers
 * (counts, byte sizes, token lists, decimals). Every accepted value must
 * be within the bounds its parser promises; nothing may crash, leak or
 * trip a sanitizer. Messages go to stderr (run with -close_fd_mask=2). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ARGS = 64 };

static void value(Args *a, SpecOpts *o, int *batch) {
  long v;
  double x;
  if (args_is(a, "--batch") || args_is(a, "--threads") ||
      args_is(a, "--max-new")) {
    if (args_value(a) && parse_count(a->val, 1, 1 << 20, &v)) {
      if (v < 1 || v > 1 << 20)
        __builtin_trap();
      if (args_is(a, "--batch"))
        *batch = (int)v;
    }
  } else if (args_is(a, "--buffer") || args_is(a, "--max-memory")) {
    if (args_value(a) && parse_bytes(a->val, &x) && !(x >= 0 && isfinite(x)))
      __builtin_trap();
  } else if (args_is(a, "--tokens")) {
    TokenList t;
    if (args_value(a) && parse_token_list(a, a->val, *batch, &t)) {
      if (t.nseq < 1 || t.len < 1)
        __builtin_trap();
      for (int64_t i = 0; i < (int64_t)t.nseq * t.len; i++)
        if (t.ids[i] < 0)
          __builtin_trap();
      free(t.ids);
    }
  } else if (args_is(a, "--out") || args_is(a, "--arch")) {
    if (args_value(a) && parse_decimal(a->val, &x) && !isfinite(x))
      __builtin_trap();
  } else if (!args_is(a, "--pipelined") && !args_is(a, "--ideal")) {
    int err;
    if (!spec_opt(a, o, &err))
      args_unknown(a);
    for (int i = 0; i < o->nsets; i++)
      if (!isfinite(o->sets[i].value) || !o->sets[i].name[0])
        __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size + 1);
  memcpy(copy, data, size);
  copy[size] = 0;
  char *argv[MAX_ARGS + 1] = {"fuzz"};
  int argc = 1;
  for (char *p = copy; argc < MAX_ARGS && p < copy + size;
       p += strlen(p) + 1)
    argv[argc++] = p;
  Args a = {.cmd = "mambalaya fuzz", .argc = argc, .argv = argv, .i = 1};
  SpecOpts o = {0};
  int batch = 0, k;
  while ((k = args_next(&a)) > 0)
    if (k == 1)
      value(&a, &o, &batch);
  if (k < 0 && !a.opt)
    __builtin_trap(); /* -1 names the flag that was given a value */
  spec_opts_free(&o);
  free(copy);
  return 0;
}
