/* accelforge_arch.h — an AccelForge architecture (`arch:` with a list of
 * `!Memory`, `!Compute` and `!Container` nodes, sizes in bits, energies
 * in joules per action, throughputs in actions per second, Python
 * expressions, maybe a Jinja template) as an architecture of ours, as
 * text: the loader (src/arch/arch.c) loads the translation as it loads
 * any architecture file, and `mambalaya import accelforge-arch` writes
 * it. The mapping, field by field, is docs/compat.md's. Each line of the
 * translation remembers the line of the AccelForge file it came from, so
 * that an error the loader finds points into the file the user wrote;
 * what is read but not modelled is one note each. */
#ifndef MAMBALAYA_SPEC_ACCELFORGE_ARCH_H
#define MAMBALAYA_SPEC_ACCELFORGE_ARCH_H

#include "peer.h"

/* Is TEXT an AccelForge architecture (a top-level `arch:` key)? */
bool accelforge_arch_format(const char *text, size_t len);

/* Translate the architecture in file PATH (its text TEXT) into T (which
 * it initializes; free it with tr_free). A Jinja template is rendered
 * with VARS (NAME=VALUE, NVARS of them; each must be read), and every
 * file it reads is added to READ (may be NULL). False with D set, at the
 * file, line and column at fault. */
bool accelforge_arch_translate(const char *path, const char *text,
                               size_t len, const char *const *vars,
                               int nvars, InputSet *read, Translation *t,
                               Diag *d);

#endif
