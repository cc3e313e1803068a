/* fuzz_study.c — libFuzzer harness for study files (docs/sweep.md):
 * whatever the bytes, loading returns a Study or a diagnostic, within a
 * memory budget of 256 MiB (the estimate refuses larger ones, as
 * --max-memory does), never a crash, a leak or a sanitizer report. A
 * study that loads has its first point priced (all of them, and the
 * outputs built, when it has at most four), as `sweep` does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../src/sweep/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Diag d = {0};
  Study *s = study_parse("fuzz.yaml", (const char *)data, size,
                         256.0 * (1 << 20), &d);
  if (!s)
    return 0;
  long total = study_points(s), n = total <= 4 ? total : 1;
  PointResult *res = calloc((size_t)n + 1, sizeof *res);
  bool *on = calloc((size_t)n + 1, sizeof *on);
  if (!res || !on)
    __builtin_trap();
  sweep_eval(s, 0, n, 1, res, NULL, NULL);
  if (n == total) { /* the outputs need every point */
    sweep_front(s, res, on);
    Buf csv = {0};
    sweep_csv(&csv, s, res, on);
    json_decref(sweep_json(s, res, on));
    buf_free(&csv);
  }
  free(on);
  free(res);
  study_free(s);
  return 0;
}
