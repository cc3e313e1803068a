/* pyjson.c — the JSON that Python's json module writes, made JSON. */
#include "util.h"

#include <stdbool.h>
#include <string.h>

char *json_from_python(const char *text, size_t len) {
  char *t = xmalloc(len + 1);
  memcpy(t, text, len);
  t[len] = 0;
  static const char *const words[] = {"-Infinity", "Infinity", "NaN"};
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    if (in_string) {
      if (t[i] == '\\' && i + 1 < len)
        i++;
      else if (t[i] == '"')
        in_string = false;
      continue;
    }
    if (t[i] == '"') {
      in_string = true;
      continue;
    }
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
      size_t n = strlen(words[w]);
      if (n <= len - i && memcmp(t + i, words[w], n) == 0) {
        /* null and spaces; NaN's three letters as a number, 0e0 */
        if (n >= 4)
          memcpy(t + i, "null", 4), memset(t + i + 4, ' ', n - 4);
        else
          memcpy(t + i, "0e0", 3);
        i += n - 1;
        break;
      }
    }
  }
  return t;
}
