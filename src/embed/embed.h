/* embed.h — the shipped specs and architectures, compiled into the
 * binary, so that `mambalaya reproduce` and `--arch mambalaya` work from
 * any directory. The table is generated at build time from the YAML files
 * under specs/ and archs/ (tools/embed.sh). */
#ifndef MAMBALAYA_EMBED_H
#define MAMBALAYA_EMBED_H

#include "../util/util.h"

typedef struct EmbeddedFile {
  const char *name; /* "specs/mamba1.yaml" */
  const unsigned char *data;
  size_t len;
} EmbeddedFile;

/* The generated table, ending with a NULL name. */
extern const EmbeddedFile embedded_files[];

/* The shipped file NAME (e.g. "archs/mambalaya.yaml"), or NULL. */
const EmbeddedFile *embedded_file(const char *name);

/* An input named on the command line or in a study. A bare name
 * ("mamba1", "h100") is the shipped DIR/NAME.yaml whenever one exists; a
 * name written as a path (it contains '/' or ends in .yaml: "./h100",
 * "my.yaml") is always the file. NULL is DIR's default (specs: mamba1,
 * archs: mambalaya). Files are read as util.h's read_input reads them
 * (regular files and pipes, at most INPUT_TEXT_MAX bytes). */
typedef struct Source {
  const char *path; /* the file read, or the shipped file's name */
  bool shipped;
  char *text;       /* owned, NUL-terminated */
  size_t len;
  char sha256[65];  /* of the bytes read */
} Source;

/* The shipped file NAME stands for under DIR, or NULL (a path, or no such
 * shipped file). */
const EmbeddedFile *embedded_named(const char *dir, const char *name);
/* Open NAME; false with D set when it is neither a shipped name nor a
 * readable file. */
bool source_open(const char *dir, const char *name, Source *s, Diag *d);
void source_free(Source *s);

#endif
