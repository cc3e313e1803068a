/* fuzz_tokenizer.c — libFuzzer harness for tokenizer.json: whatever the
 * bytes, loading returns a tokenizer or a diagnostic, with a table no
 * larger than the file (ids are below its size: a 143-byte file once
 * asked for 16 GiB), never a crash, a leak or a sanitizer report. A
 * tokenizer that loads encodes a fixed text and decodes every id it
 * gives back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/lm/lm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Diag d = {0};
  Tokenizer *t = tokenizer_parse("fuzz.json", (const char *)data, size, &d);
  if (!t)
    return 0;
  if ((size_t)tokenizer_size(t) > size)
    __builtin_trap();
  static const char text[] = "Hello, world! 12 tokens\n\u00e9\u4e16 <|x|>";
  int *ids, n;
  Diag e = {0};
  if (tokenizer_encode(t, text, strlen(text), &ids, &n, &e)) {
    for (int i = 0; i < n; i++) {
      int len;
      if (ids[i] < 0 || ids[i] >= tokenizer_size(t) ||
          !tokenizer_token(t, ids[i], &len))
        __builtin_trap();
    }
    free(ids);
  }
  tokenizer_free(t);
  return 0;
}
