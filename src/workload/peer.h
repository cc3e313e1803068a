/* peer.h — loading the peers' formats (docs/compat.md): an AccelForge
 * workload or a Timeloop problem is translated into a spec of ours, as
 * text, then loaded as any spec is. Each line of the translation remembers
 * the line of the peer's file it came from, so that an error the loader
 * finds in the translation points into the file the user wrote. */
#ifndef MAMBALAYA_SPEC_PEER_H
#define MAMBALAYA_SPEC_PEER_H

#include "workload.h"

typedef struct Translation {
  const char *path; /* the peer's file (as errors name it) */
  char rendered[600]; /* "FILE (rendered)": path, for a rendered template */
  Buf text;         /* the spec of ours */
  Loc *from;        /* per line of TEXT: where it came from (line 0: none) */
  int nlines, cap;
  Buf notes;        /* assumptions, one per line, without the prefix */
} Translation;

/* Append one line (FMT, no newline) that came from FROM. */
void tr_line(Translation *t, Loc from, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record an assumption or a part left unmodelled (one line). */
void tr_note(Translation *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tr_free(Translation *t);
/* T as `mambalaya import` writes it into OUT: a header naming PATH and
 * WHAT it was ("AccelForge format"), each note as a comment, the text. */
void tr_print(const Translation *t, const char *path, const char *what,
              Buf *out);
/* Point L, a place in T's text, at the place in the peer's file it came
 * from (where the translation knows it). */
void tr_remap(const Translation *t, Loc *l);

bool accelforge_translate(const char *path, const char *text, size_t len,
                          const SpecLoad *o, Translation *t, Diag *d);
bool timeloop_translate(const char *path, const char *text, size_t len,
                        const SpecLoad *o, Translation *t, Diag *d);

/* The native loader (load.c): the spec of DOC (consumed: freed on
 * failure), or NULL; the cascade of S, its document freed. And the
 * peers' (peer.c). */
Spec *spec_of(const char *path, YamlDoc *doc, const SpecLoad *o, Diag *d);
Cascade *cascade_only(Spec *s);
Cascade *spec_parse_native(const char *path, const char *text, size_t len,
                           const SpecLoad *o, Diag *d);
Cascade *spec_parse_peer(SpecFormat f, const char *path, const char *text,
                         size_t len, const SpecLoad *o, Diag *d);

/* Evaluate a size as AccelForge writes one (numbers, + - * / // % **,
 * parentheses, ceil floor round abs min max, and names that LOOKUP
 * resolves); NaN and a message in ERR (of ERRLEN bytes) if it cannot. */
double peer_eval(const char *s, double (*lookup)(void *ctx, const char *name),
                 void *ctx, char *err, size_t errlen);

#endif
