/* modelopts.c — the model's options on the command line (eval, reproduce).
 * Plans read back from `fuse --json` are src/fusion/planfile.c's. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char model_opts_help[] =
    "  --stitch HOW        greedy (default), alg1 or global: how the fused\n"
    "                      designs stitch their groups\n"
    "  --pipelined         compose a group's Einsums by parallel pipelining\n"
    "  --ideal             the plan's algorithmic-minimum traffic instead of\n"
    "                      the mapping search's\n"
    "  --state-io, --no-state-io   count the decode state (H0, the\n"
    "                      convolution history, a KV cache): read before the\n"
    "                      pass, the steps it adds written after (default: on\n"
    "                      for --phase decode, off for a prefill, as the paper)\n"
    "  --no-overlap        an Einsum's compute and DRAM transfers do not\n"
    "                      overlap\n"
    "  --reserve-share X   share of the buffer a group may hold across its\n"
    "                      Einsums (default 0.75)\n"
    "  --weight-share X    a group's weights stay resident when they fit in\n"
    "                      this share of the buffer (default 0.5)\n"
    "  --two-pass, --no-two-pass       FuseMax's second pass over LEX and X\n"
    "                      (default: on for full only)\n"
    "  --rd-partials, --no-rd-partials RD pairs write partial products\n"
    "                      (default: on for full only)\n"
    "  --spill-distance N  send an on-chip intermediate off chip when its\n"
    "                      last reader is more than N Einsums later (default:\n"
    "                      12 for full, 0 = never otherwise)\n";

static bool parse_share(Args *a, double lo_open, double *out, int *err) {
  if (!args_value(a)) {
    *err = EXIT_INPUT;
    return true;
  }
  char *end;
  errno = 0;
  double v = strtod(a->val, &end);
  if (errno || end == a->val || *end || !(v > lo_open) || v > 1) {
    *err = usage_error(a, "%s expects a share in (%g, 1], got '%s'", a->opt,
                       lo_open, a->val);
    return true;
  }
  *out = v;
  return true;
}

bool model_opt(Args *a, ModelOverrides *f, int *err) {
  *err = 0;
  static const struct {
    const char *name;
    size_t off;
    int value;
  } toggles[] = {
      {"--pipelined", offsetof(ModelOverrides, pipelined), 1},
      {"--ideal", offsetof(ModelOverrides, ideal), 1},
      {"--state-io", offsetof(ModelOverrides, state_io), 1},
      {"--no-state-io", offsetof(ModelOverrides, state_io), 0},
      {"--no-overlap", offsetof(ModelOverrides, no_overlap), 1},
      {"--two-pass", offsetof(ModelOverrides, two_pass), 1},
      {"--no-two-pass", offsetof(ModelOverrides, two_pass), 0},
      {"--rd-partials", offsetof(ModelOverrides, rd_partials), 1},
      {"--no-rd-partials", offsetof(ModelOverrides, rd_partials), 0},
  };
  for (size_t i = 0; i < sizeof toggles / sizeof toggles[0]; i++)
    if (args_is(a, toggles[i].name)) { /* args_next refuses a value */
      *(int *)((char *)f + toggles[i].off) = toggles[i].value;
      return true;
    }
  if (args_is(a, "--reserve-share"))
    return parse_share(a, 0, &f->reserve_share, err);
  if (args_is(a, "--weight-share"))
    return parse_share(a, -1e-300, &f->weight_share, err);
  if (args_is(a, "--spill-distance")) {
    if (!args_value(a)) {
      *err = EXIT_INPUT;
      return true;
    }
    char *end;
    errno = 0;
    long v = strtol(a->val, &end, 10);
    if (errno || end == a->val || *end || v < 0 || v > 1000000) {
      *err = usage_error(a, "--spill-distance expects a count of Einsums "
                            "(0 = never), got '%s'",
                         a->val);
      return true;
    }
    f->spill_distance = (int)v;
    return true;
  }
  if (args_is(a, "--stitch")) {
    if (!args_value(a)) {
      *err = EXIT_INPUT;
      return true;
    }
    Stitcher st;
    if (!stitcher_from_name(a->val, &st)) {
      *err = usage_error(
          a, "unknown stitcher '%s' (expected greedy, alg1 or global)",
          a->val);
      return true;
    }
    f->stitch = (int)st;
    return true;
  }
  return false;
}
