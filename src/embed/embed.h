/* embed.h — the shipped specs and architectures, compiled into the
 * binary, so that `mambalaya reproduce` and `--arch mambalaya` work from
 * any directory. The table is generated at build time from the YAML files
 * under specs/ and archs/ (tools/embed.sh). */
#ifndef MAMBALAYA_EMBED_H
#define MAMBALAYA_EMBED_H

#include <stdbool.h>
#include <stddef.h>

typedef struct EmbeddedFile {
  const char *name; /* "specs/mamba1.yaml" */
  const unsigned char *data;
  size_t len;
} EmbeddedFile;

/* The generated table, ending with a NULL name. */
extern const EmbeddedFile embedded_files[];

/* The shipped file NAME (e.g. "archs/mambalaya.yaml"), or NULL. */
const EmbeddedFile *embedded_file(const char *name);

/* An input named on the command line or in a study: the file NAME if it
 * exists, else the shipped DIR/NAME or DIR/NAME.yaml ("mamba1" under
 * "specs"). */
typedef struct Source {
  const char *path; /* the file read, or the shipped file's name */
  bool shipped;
  char *text;       /* owned, NUL-terminated */
  size_t len;
  char sha256[65];  /* of the bytes read */
} Source;

/* Open NAME; false (errno set) when it is neither a readable file nor a
 * shipped one. */
bool source_open(const char *dir, const char *name, Source *s);
void source_free(Source *s);

#endif
