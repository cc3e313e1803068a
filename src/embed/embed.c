#include "embed.h"

#include <string.h>

const EmbeddedFile *embedded_file(const char *name) {
  for (const EmbeddedFile *f = embedded_files; f->name; f++)
    if (strcmp(f->name, name) == 0)
      return f;
  return NULL;
}
