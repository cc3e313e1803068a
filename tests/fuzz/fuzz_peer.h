/* fuzz_peer.h — what the two peer-format harnesses share (fuzz_accelforge,
 * fuzz_timeloop): the bytes as a peer's file of one format, translated
 * into a spec of ours and that spec loaded; a translation that loads
 * nothing must have said why. Never a crash, a leak or a sanitizer
 * report. Templated input (Jinja marks, includes, merges) is skipped: it
 * runs python3 (src/workload/render.py), a process per input, whose sandbox
 * tests/e2e/untrusted.sh tests. */
#ifndef MAMBALAYA_FUZZ_PEER_H
#define MAMBALAYA_FUZZ_PEER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/fusion/fusion.h"
#include "../../src/workload/workload.h"

static int holds(const uint8_t *data, size_t size, const char *pat) {
  size_t n = strlen(pat);
  for (size_t i = 0; i + n <= size; i++)
    if (memcmp(data + i, pat, n) == 0)
      return 1;
  return 0;
}

static int fuzz_peer(SpecFormat f, const uint8_t *data, size_t size) {
  static const char *const marks[] = {"{{", "{%", "{#", "!include", "<<"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (holds(data, size, marks[i]))
      return 0;
  Setting sets[] = {{"BATCH_SIZE", 2}, {"N_TOKENS", 8}};
  SpecLoad l = {.sets = sets, .nsets = 2};
  Diag d = {0};
  Buf out = {0};
  bool ok = spec_translate(f, "fuzz.yaml", (const char *)data, size, &l,
                           &out, &d);
  if (!ok && !d.failed)
    __builtin_trap(); /* refused without a word */
  if (ok) {
    Diag ld = {0};
    Cascade *c = spec_parse_with("fuzz.yaml", (const char *)data, size, &l,
                                 &ld);
    if (!c && !ld.failed)
      __builtin_trap();
    if (c) {
      Shape *s = shape_bind(c, NULL, NULL, 0, c->has_shape, &ld);
      if (s) {
        Pair *pairs = fusion_classify(c, s);
        free(pairs);
        shape_free(s);
      }
      cascade_free(c);
    }
  }
  buf_free(&out);
  return 0;
}

#endif
