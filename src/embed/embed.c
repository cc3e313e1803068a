#include "embed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


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

/* The bare name of shipped file F if it lies directly under DIR
 * ("specs/mamba1.yaml" -> "mamba1", length in *N), else NULL. */
static const char *shipped_stem(const EmbeddedFile *f, const char *dir,
                                 size_t *n) {
  size_t nd = strlen(dir), nf = strlen(f->name);
  if (strncmp(f->name, dir, nd) != 0 || f->name[nd] != '/' || nf < nd + 6 ||
      strchr(f->name + nd + 1, '/'))
    return NULL;
  *n = nf - nd - 1 - 5;
  return f->name + nd + 1;
}

/* Append DIR's shipped names to B, comma-separated; with NEAR, only those
 * within a third of NEAR's length (at least 1) in edit distance. Returns
 * how many were appended. */
static int list_shipped(Buf *b, const char *dir, const char *near) {
  int count = 0;
  for (const EmbeddedFile *f = embedded_files; f->name; f++) {
    size_t n;
    const char *stem = shipped_stem(f, dir, &n);
    if (!stem)
      continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)n, stem);
    if (near && !name_is_near(near, name))
      continue;
    buf_printf(b, "%s%s", count ? ", " : "", name);
    count++;
  }
  return count;
}

/* NAME is neither a file nor a shipped name under DIR: say so, with the
 * close shipped names and every shipped spec, architecture and study (one
 * line, as every error is). */
static void unknown_name(const char *dir, const char *name, Diag *d) {
  Buf near = {0}, all = {0};
  int close = list_shipped(&near, dir, name);
  static const char *const dirs[] = {"specs", "archs", "studies"};
  static const char *const titles[] = {"specs", "architectures", "studies"};
  for (int i = 0; i < 3; i++) {
    buf_printf(&all, "%sshipped %s: ", i ? "; " : "", titles[i]);
    list_shipped(&all, dirs[i], NULL);
  }
  diag_error(d, name, (Loc){0, 0},
             "no such file, and no shipped %s of that name%s%s%s; %s",
             strcmp(dir, "archs") == 0     ? "architecture"
             : strcmp(dir, "studies") == 0 ? "study"
                                           : "spec",
             close ? " (did you mean " : "", close ? near.s : "",
             close ? "?)" : "", all.s);
  buf_free(&near);
  buf_free(&all);
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
    if (!written_as_path(name) && access(name, F_OK) != 0 && errno == ENOENT) {
      unknown_name(dir, name, d);
      return false;
    }
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
