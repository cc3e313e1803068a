#include "embed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


const EmbeddedFile *embedded_file(const char *name) {
  for (const EmbeddedFile *f = embedded_files; f->name; f++)
    if (strcmp(f->name, name) == 0)
      return f;
  return NULL;
}

static bool written_as_path(const char *name) {
  size_t n = strlen(name);
  return strchr(name, '/') || (n >= 5 && strcmp(name + n - 5, ".yaml") == 0);
}

const EmbeddedFile *embedded_named(const char *dir, const char *name) {
  if (!name)
    name = strcmp(dir, "specs") == 0   ? "mamba1"
           : strcmp(dir, "archs") == 0 ? "mambalaya"
                                       : "";
  if (!name[0] || written_as_path(name))
    return NULL;
  char path[512];
  snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
  return embedded_file(path);
}

bool source_open(const char *dir, const char *name, Source *s, Diag *d) {
  memset(s, 0, sizeof *s);
  const EmbeddedFile *f = embedded_named(dir, name);
  if (f) {
    s->path = f->name;
    s->shipped = true;
    s->len = f->len;
    s->text = xmalloc(f->len + 1);
    memcpy(s->text, f->data, f->len);
    s->text[f->len] = 0;
  } else {
    if (!name) {
      diag_error(d, dir, (Loc){0, 0}, "no default file");
      return false;
    }
    s->path = name;
    s->text = read_input(name, INPUT_TEXT_MAX, &s->len, d);
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
