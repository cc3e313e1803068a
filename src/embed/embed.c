#include "embed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"

const EmbeddedFile *embedded_file(const char *name) {
  for (const EmbeddedFile *f = embedded_files; f->name; f++)
    if (strcmp(f->name, name) == 0)
      return f;
  return NULL;
}

static const EmbeddedFile *shipped(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const EmbeddedFile *f = embedded_file(path);
  if (!f) {
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    f = embedded_file(path);
  }
  return f;
}

bool source_open(const char *dir, const char *name, Source *s) {
  memset(s, 0, sizeof *s);
  const EmbeddedFile *f =
      access(name, F_OK) == 0 ? NULL : shipped(dir, name);
  if (f) {
    s->path = f->name;
    s->shipped = true;
    s->len = f->len;
    s->text = xmalloc(f->len + 1);
    memcpy(s->text, f->data, f->len);
    s->text[f->len] = 0;
  } else {
    s->path = name;
    s->text = read_file(name, &s->len);
    if (!s->text)
      return false;
  }
  sha256_hex(s->text, s->len, s->sha256);
  return true;
}

void source_free(Source *s) {
  free(s->text);
  s->text = NULL;
}
