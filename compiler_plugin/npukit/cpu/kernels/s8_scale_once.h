// A fully connected layer's output scaling, round(double(acc) * scale)
// with ties away from zero and saturated to int32 (requantize.h's
// mynpu_scale_once, TFLite's fully connected arithmetic), in integer
// instructions only: cores without a double-precision unit (Cortex-M4,
// RV32IMF) otherwise run it in software, several hundred instructions per
// output. Equal to mynpu_scale_once for every int32 accumulator and every
// scale that is zero or a normal binary64 number (npukit_s8_scale_parts
// says which); tests/cpu/test_scale_once.py compares the two.
#ifndef NPUKIT_CPU_KERNELS_S8_SCALE_ONCE_H_
#define NPUKIT_CPU_KERNELS_S8_SCALE_ONCE_H_

#include <stdint.h>

// A channel's binary64 scale as m * 2^e with 2^52 <= m < 2^53 (m_hi:m_lo),
// its sign, or m = 0 for a zero scale.
typedef struct {
  uint32_t m_lo, m_hi, negative;
  int32_t e;
} npukit_s8_scale_t;

// 1 when the scale at `bits` (its two little-endian words) is zero or a
// finite normal number, and then its parts (little-endian targets).
static inline int32_t npukit_s8_scale_parts(const uint32_t* bits, npukit_s8_scale_t* s) {
  const uint32_t lo = bits[0], hi = bits[1], field = (hi >> 20) & 0x7ff;
  s->negative = hi >> 31;
  s->m_lo = lo;
  s->e = (int32_t)field - 1075;
  if (field == 0) {  // zero, or subnormal (not taken)
    s->m_hi = 0;
    return lo == 0 && (hi & 0xfffff) == 0;
  }
  s->m_hi = (hi & 0xfffff) | 0x100000;
  return field != 0x7ff;
}

// mynpu_scale_once(acc, scale) in integers: the product |acc| * m exactly
// (96 bits), rounded to binary64's 53 bits (to nearest, ties to even), then
// to an integer, ties away from zero, and saturated to int32 (as the double
// arithmetic's clamp at 2^40 and mynpu_sat32 do). Both roundings are
// symmetric, so the sign is applied last.
static inline int32_t npukit_s8_scale_once(int32_t acc, const npukit_s8_scale_t* s) {
  const uint32_t a = acc < 0 ? 0u - (uint32_t)acc : (uint32_t)acc;
  if (a == 0 || s->m_hi == 0) return 0;
  const uint64_t low_product = (uint64_t)a * s->m_lo;
  const uint64_t top = (uint64_t)a * s->m_hi + (low_product >> 32);  // bits 32.. of the product (>= 2^20)
  const uint32_t low = (uint32_t)low_product;
  uint64_t magnitude;
  // The common case first: the product P = top * 2^32 + low times 2^e without P's rounding to 53 bits, which
  // moves P by at most 2^30 (P < 2^84) and so leaves floor((P + 2^(-e-1)) / 2^-e) alone unless
  // P + 2^(-e-1) is within 2^32 of a multiple of 2^-e: when, with sh = -e - 32 in 1..63 and
  // t = top + 2^(sh - 1), t's low sh bits (of them at most the low 32) are neither all zero nor all one.
  const int32_t sh = -s->e - 32;
  if (sh >= 1 && sh <= 63) {
    const uint64_t t = top + ((uint64_t)1 << (sh - 1));
    const uint32_t mask = sh >= 32 ? 0xffffffffu : (1u << sh) - 1, u = (uint32_t)t & mask;
    if (u != 0 && u != mask) {
      magnitude = t >> sh;
      goto sign;
    }
  }
  const uint32_t top_hi = (uint32_t)(top >> 32);  // < 2^20
  const int32_t length = top_hi ? 96 - __builtin_clz(top_hi) : 64 - __builtin_clz((uint32_t)top);  // 53..84 bits
  const int32_t dropped = length - 53;                                                              // 0..31
  uint64_t q;
  if (dropped) {
    q = top << (32 - dropped) | low >> dropped;
    const uint32_t rest = low << (32 - dropped);  // the dropped bits, left-aligned
    if (rest > 0x80000000u || (rest == 0x80000000u && (q & 1))) ++q;
  } else {
    q = top << 32 | low;
  }
  // The rounded product is q * 2^(dropped + e), q in [2^52, 2^53].
  const int32_t right = -(dropped + s->e);
  if (right <= 0) {
    magnitude = (uint64_t)1 << 32;  // at least 2^52: saturates
  } else if (right >= 55) {
    magnitude = 0;  // below one half
  } else {
    magnitude = (q + ((uint64_t)1 << (right - 1))) >> right;
  }
sign:
  if ((acc < 0) != (s->negative != 0)) return magnitude >= 0x80000000u ? INT32_MIN : -(int32_t)magnitude;
  return magnitude > 0x7fffffffu ? INT32_MAX : (int32_t)magnitude;
}

#endif  // NPUKIT_CPU_KERNELS_S8_SCALE_ONCE_H_
