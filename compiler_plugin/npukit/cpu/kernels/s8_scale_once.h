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

#include "requantize.h"

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

// The common case in one 32 x 32 -> 64-bit multiply: *v = mynpu_scale_once(acc, scale) and 1, for the
// binary64 scale at `bits` (its two little-endian words), when the scale is m * 2^e with
// 2^-32 <= |scale| < 2^-1 (binary64's exponent field 991..1021) and the product is not within 2^32 units of
// `prod` below a rounding boundary; else 0 (and *v untouched), for npukit_s8_scale_once or the double itself.
//
// Why it is exact. With m = m32 * 2^21 + m_low (m32 the top 32 bits of the 53-bit m, 2^31 <= m32 < 2^32,
// m_low < 2^21), a = |acc| <= 2^31 and r = -(e + 21) (33..63 for the fields above), prod = a * m32 < 2^63,
// and the exact product P = a * m = prod * 2^21 + a * m_low. Both roundings of mynpu_scale_once are
// symmetric in the sign, so its magnitude is floor(D * 2^e + 1/2) with D = P rounded to binary64's 53 bits
// (below 2^40: no clamp; and below 2^31, see below: no saturation). Let T = prod + 2^(r - 1) and
// q = floor(T / 2^r). Then:
// - q <= the result: T >= q * 2^r means prod * 2^21 >= B = (2q - 1) * 2^(r + 20), the point where
//   D * 2^e = q - 1/2; P >= prod * 2^21 >= B, and B is a binary64 number (2q - 1 < 2^32 has fewer than 53
//   bits), so rounding to nearest, which is monotonic and leaves B as it is, gives D >= B.
// - the result <= q when T mod 2^r < 2^r - 2^32: P - prod * 2^21 = a * m_low < 2^52 and |D - P| <= 2^30
//   (half a unit of P's 53rd bit, P < 2^84), together below 2^31 + 2^9 units of prod (2^21 each); so
//   D * 2^e + 1/2 < (T + 2^31 + 2^9) / 2^r < q + 1.
// With t_hi = T's high word = hi(prod) + 2^(r - 33), T mod 2^r = (t_hi mod 2^(r - 32)) * 2^32 + lo(prod),
// below 2^r - 2^32 whenever t_hi's low r - 32 bits are not all ones, i.e. (t_hi + 1) << (64 - r) is not
// 0: then the magnitude is q = t_hi >> (r - 32), below 2^31 (T < 2^63 + 2^62, r >= 33).
// The field range also leaves zero, subnormal, infinite and NaN scales to the caller.
static inline int32_t npukit_s8_scale_fast(int32_t acc, const uint32_t* bits, int32_t* v) {
  const uint32_t lo = bits[0], hi = bits[1];
  // k = 63 - r = field - 991 (e = field - 1075, r = -(e + 21)): 0..30 in range.
  const uint32_t k = ((hi >> 20) & 0x7ffu) - 991u;
  if (k > 30u) return 0;
  const uint32_t m32 = 0x80000000u | hi << 11 | lo >> 21;
  const uint32_t a = acc < 0 ? 0u - (uint32_t)acc : (uint32_t)acc;
  const uint32_t t_hi = (uint32_t)(((uint64_t)a * m32) >> 32) + (0x40000000u >> k);  // + 2^(r - 33)
  // Its low r - 32 = 31 - k bits all ones: ~t_hi << (64 - r) = (~t_hi << 1) << k is 0.
  if (((~t_hi << 1) << k) == 0) return 0;  // within 2^32 of a boundary: the exact path decides
  const int32_t magnitude = (int32_t)(t_hi >> (31u - k));
  *v = (int32_t)((uint32_t)acc ^ hi) < 0 ? -magnitude : magnitude;
  return 1;
}

// mynpu_scale_once(acc, scale) for the binary64 scale at `bits`: npukit_s8_scale_fast, else
// npukit_s8_scale_once, else (a subnormal, infinite or NaN scale, which no layer has) the double
// arithmetic itself.
static inline int32_t npukit_s8_scale_bits(int32_t acc, const uint32_t* bits) {
  int32_t v;
  if (__builtin_expect(npukit_s8_scale_fast(acc, bits, &v), 1)) return v;
  npukit_s8_scale_t s;
  if (npukit_s8_scale_parts(bits, &s)) return npukit_s8_scale_once(acc, &s);
  union {
    uint32_t w[2];
    double d;
  } u;
  u.w[0] = bits[0], u.w[1] = bits[1];
  return mynpu_scale_once(acc, u.d);
}

// Whether the target multiplies binary64 numbers in hardware (then mynpu_scale_once is a few instructions);
// elsewhere (Cortex-M4's single-precision unit, RV32IMF) it is a software routine, and the output stage takes
// npukit_s8_scale_bits instead.
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
    (defined(__riscv_flen) && __riscv_flen >= 64) || (defined(__ARM_FP) && (__ARM_FP & 8))
#define NPUKIT_S8_HARD_DOUBLE 1
#else
#define NPUKIT_S8_HARD_DOUBLE 0
#endif

// npukit_s8_scale_bits out of line, once in the archive (s8_fully_connected.c): the kernels' general stores
// call it rather than each holding a copy.
int32_t npukit_s8_scale_exact(int32_t acc, const uint32_t* bits);

// mynpu_scale_once(acc, *scale), on the target's fastest exact arithmetic.
static inline int32_t npukit_s8_scale_double(int32_t acc, const double* scale) {
#if NPUKIT_S8_HARD_DOUBLE
  return mynpu_scale_once(acc, *scale);
#else
  return npukit_s8_scale_exact(acc, (const uint32_t*)(const void*)scale);
#endif
}

#endif  // NPUKIT_CPU_KERNELS_S8_SCALE_ONCE_H_
