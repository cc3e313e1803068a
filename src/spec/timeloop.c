/* timeloop.c — a Timeloop problem as a one-Einsum cascade. Placeholder. */
#include "peer.h"

bool timeloop_translate(const char *path, const char *text, size_t len,
                        const SpecLoad *o, Translation *t, Diag *d) {
  (void)text; (void)len; (void)o; (void)t;
  diag_error(d, path, (Loc){1, 1}, "not yet");
  return false;
}
