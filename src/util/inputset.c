/* inputset.c — the inputs of a run (util.h, "the inputs of a run"): every
 * file a run read, known by device and inode, so that no output of the
 * run replaces one of them whatever the spelling of its path. */
#include "util.h"

#include <stdlib.h>
#include <sys/stat.h>

struct InputFile {
  char *path; /* as first named */
  dev_t dev;
  ino_t ino;
};

void inputset_add(InputSet *s, const char *path) {
  struct stat st;
  if (!s || !path || stat(path, &st) != 0)
    return; /* a file that is not there cannot be replaced */
  for (int i = 0; i < s->n; i++)
    if (s->files[i].dev == st.st_dev && s->files[i].ino == st.st_ino)
      return;
  InputFile f = {xstrdup(path), st.st_dev, st.st_ino};
  VEC_PUSH(s->files, s->n, s->cap, f);
}

const char *inputset_find(const InputSet *s, const char *path) {
  struct stat st;
  if (!s || stat(path, &st) != 0)
    return NULL;
  for (int i = 0; i < s->n; i++)
    if (s->files[i].dev == st.st_dev && s->files[i].ino == st.st_ino)
      return s->files[i].path;
  return NULL;
}

int inputset_count(const InputSet *s) { return s ? s->n : 0; }

const char *inputset_path(const InputSet *s, int i) {
  return s->files[i].path;
}

void inputset_free(InputSet *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n; i++)
    free(s->files[i].path);
  free(s->files);
  *s = (InputSet){0};
}
