// mynpu's fixed-point arithmetic (docs/mynpu-isa.md, "Arithmetic"): TFLite's
// MultiplyByQuantizedMultiplier with a saturating left shift.
#ifndef NPUKIT_MYNPU_REQUANTIZE_H_
#define NPUKIT_MYNPU_REQUANTIZE_H_

#include <stdint.h>

static inline int32_t mynpu_sat32(int64_t x) {
  return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
}

static inline int8_t mynpu_sat8(int32_t x) { return (int8_t)(x > 127 ? 127 : x < -128 ? -128 : x); }

static inline int32_t mynpu_clamp(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : x > hi ? hi : x; }

// Rounding doubling high multiply, for operands that are not both INT32_MIN
// (the one product that does not fit).
static inline int32_t mynpu_rdhm(int32_t a, int32_t b) {
  int64_t ab = (int64_t)a * (int64_t)b;
  int64_t nudge = ab >= 0 ? (int64_t)1 << 30 : 1 - ((int64_t)1 << 30);
  return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

// Saturating rounding doubling high multiply.
static inline int32_t mynpu_srdhm(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  return mynpu_rdhm(a, b);
}

// Rounding divide by a power of two, ties away from zero.
static inline int32_t mynpu_rdbpot(int32_t x, int exponent) {
  if (exponent == 0) return x;
  int32_t mask = (int32_t)((1u << exponent) - 1u);  // exponent is 1..31
  int32_t remainder = x & mask;
  int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// |shift| outside -31..30 is clamped: register shifts are validated, but the
// per-channel table is data in SRAM and may hold anything.
static inline int32_t mynpu_requantize(int32_t acc, int32_t multiplier, int32_t shift) {
  shift = mynpu_clamp(shift, -31, 30);
  int left = shift > 0 ? shift : 0;
  int right = shift < 0 ? -shift : 0;
  int32_t x = mynpu_sat32((int64_t)acc * ((int64_t)1 << left));
  return mynpu_rdbpot(mynpu_srdhm(x, multiplier), right);
}

// A fully connected layer's output scaling, as TFLite's fully connected
// kernel computes it: the accumulator times a binary64 scale, the product
// rounded to double precision and then to an integer, ties away from zero,
// saturated to int32. OP_MAT_MUL requantizes this way.
static inline int32_t mynpu_scale_once(int32_t acc, double scale) {
  double product = (double)acc * scale;
  if (!(product > -1099511627776.0)) product = -1099511627776.0;  // also NaN: 2^40 bounds any int32 result
  if (product > 1099511627776.0) product = 1099511627776.0;
  int64_t whole = (int64_t)product;  // toward zero
  double fraction = product - (double)whole;
  whole += (fraction >= 0.5) - (fraction <= -0.5);
  return mynpu_sat32(whole);
}

#endif  // NPUKIT_MYNPU_REQUANTIZE_H_
