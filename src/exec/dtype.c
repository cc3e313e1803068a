/* dtype.c — the element types of arrays and checkpoints: names, sizes, and
 * the 16-bit floats (IEEE binary16, bfloat16) to and from fp32, bit-exact
 * and independent of the host. */
#include "exec.h"

#include <string.h>

static const char *const dtype_names[] = {"F32", "F16", "BF16", "F64"};
static const int dtype_sizes[] = {4, 2, 2, 8};
_Static_assert(sizeof dtype_names / sizeof dtype_names[0] == DT_COUNT,
               "a name per dtype");
_Static_assert(sizeof dtype_sizes / sizeof dtype_sizes[0] == DT_COUNT,
               "a size per dtype");

const char *dtype_name(DType t) {
  return (unsigned)t < DT_COUNT ? dtype_names[t] : "?";
}

int dtype_size(DType t) { return (unsigned)t < DT_COUNT ? dtype_sizes[t] : 0; }

bool dtype_from_name(const char *s, DType *t) {
  for (int k = 0; k < DT_COUNT; k++)
    if (strcmp(s, dtype_names[k]) == 0) {
      *t = (DType)k;
      return true;
    }
  return false;
}

float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* IEEE binary16 -> binary32; exact for every value, NaN payloads kept. */
static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
    float v = (float)mant * 0x1p-24f;
    return f32_from_bits(f32_bits(v) | sign);
  }
  if (exp == 31) /* inf or NaN */
    return f32_from_bits(sign | 0x7f800000u | mant << 13);
  return f32_from_bits(sign | (exp + 112) << 23 | mant << 13);
}

/* binary32 -> binary16, rounding to nearest even: too large becomes inf,
 * too small a subnormal or zero; NaN stays a quiet NaN. */
static uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN: quiet, with the top of the payload */
    return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
  if (ax >= 0x477ff000u) /* >= 65520 (65504 + half an ulp, a tie to even) */
    return (uint16_t)(sign | 0x7c00);
  if (ax >= 0x38800000u) {         /* >= 2^-14: a normal half */
    uint32_t m = ax - 0x38000000u; /* rebias the exponent by 127 - 15 */
    m += 0xfff + ((m >> 13) & 1);  /* a carry correctly bumps the exponent */
    return (uint16_t)(sign | m >> 13);
  }
  if (ax <= 0x33000000u) /* <= 2^-25: rounds to zero (2^-25 is a tie) */
    return sign;
  /* A subnormal half: the value in units of 2^-24, rounded. */
  int shift = 126 - (int)(ax >> 23); /* 14..24 */
  uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  uint32_t k = mant >> shift, rem = mant & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (k & 1)))
    k++; /* may reach 0x400, the smallest normal: the right encoding */
  return (uint16_t)(sign | k);
}

static float bf16_to_f32(uint16_t h) {
  return f32_from_bits((uint32_t)h << 16);
}

/* binary32 -> bfloat16, rounding to nearest even on the 16 dropped bits
 * (as torch does); NaN stays a quiet NaN rather than rounding into inf. */
static uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float dtype_half_value(DType t, uint16_t h) {
  return t == DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

uint16_t dtype_half_of(DType t, float v) {
  return t == DT_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
}
