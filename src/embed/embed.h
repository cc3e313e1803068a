/* embed.h — the shipped specs and architectures, compiled into the
 * binary, so that `mambalaya reproduce` and `--arch mambalaya` work from
 * any directory. The table is generated at build time from the YAML files
 * under specs/ and archs/ (tools/embed.sh). */
#ifndef MAMBALAYA_EMBED_H
#define MAMBALAYA_EMBED_H

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

#endif
