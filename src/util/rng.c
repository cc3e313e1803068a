/* rng.c — a deterministic random stream: splitmix64, uniform and normal
 * (Box-Muller) values; one stream per (seed, key), so that a tensor's
 * random values do not depend on which others are drawn, or in what
 * order (random weights: src/lm/, src/net/). */
#include "util.h"

#include <math.h>

uint64_t rng_next(Rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Rng rng_for(uint64_t seed, const char *key) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = key; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  Rng s = {.s = seed};
  return (Rng){.s = rng_next(&s) ^ h};
}

double rng_uniform(Rng *r) {
  return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

double rng_normal(Rng *r) {
  if (r->has_spare) {
    r->has_spare = false;
    return r->spare;
  }
  double u = rng_uniform(r), v = rng_uniform(r), rad = sqrt(-2 * log(u));
  r->spare = rad * sin(6.283185307179586 * v);
  r->has_spare = true;
  return rad * cos(6.283185307179586 * v);
}
