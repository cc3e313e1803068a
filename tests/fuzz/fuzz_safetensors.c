/* fuzz_safetensors.c — libFuzzer harness for the safetensors reader:
 * whatever the bytes, parsing must return a file or a diagnostic, never
 * crash, leak or trip a sanitizer; and every tensor of an accepted file
 * must convert to fp32 (which reads each of its bytes). */
#include <stddef.h>
#include <stdint.h>

#include "../../src/exec/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Diag d = {0};
  StFile *f = st_parse("fuzz.safetensors", data, size, &d);
  if (!f)
    return 0;
  for (int i = 0; i < f->n; i++) {
    const StEntry *e = &f->entries[i];
    if (st_find(f, e->name) == NULL)
      __builtin_trap(); /* every listed name must be found */
    array_free(st_array(f, e));
  }
  st_close(f);
  return 0;
}
