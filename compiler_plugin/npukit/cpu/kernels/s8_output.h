// The output stage shared by the layer kernels: TFLite's fixed-point
// requantization (the arithmetic of the mynpu device, requantize.h), the
// output zero point, the activation clamp, the optional int8 ADD with a
// residual tensor, and the store. The layer's constants are read once into
// npukit_s8_output_t; per output the common case (no left shift, int8 out)
// is a few integer instructions.
#ifndef NPUKIT_CPU_KERNELS_S8_OUTPUT_H_
#define NPUKIT_CPU_KERNELS_S8_OUTPUT_H_

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

#include "requantize.h"
#include "s8_layer.h"

// Bounds of the small-accumulator path: |bias| + taps * 255 * 128 < 2^30.
#define NPUKIT_S8_SMALL_MAX_BIAS ((1 << 30) - 1)
#define NPUKIT_S8_SMALL_MAX_TAPS 8192

#if defined(__ARM_FEATURE_DSP)
// Bytes 1 and 3 of x sign-extended into two halfwords (SXTB16 with ROR #8).
static inline int32_t npukit_s8_sxtb16_ror8(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
#endif

// Words and halfwords read from byte arrays (columns, packed weights).
typedef int32_t __attribute__((may_alias)) npukit_s8_word_t;
typedef int16_t __attribute__((may_alias)) npukit_s8_half_t;

typedef struct {
  const int32_t* p;
  const int32_t* bias;
  const int32_t* multiplier;
  const int32_t* shift;
  uint8_t* out;             // binding base + OUT_OFFSET
  const uint8_t* residual;  // binding base + RES_OFFSET, or NULL
  int32_t sc, sh, sw;       // output strides
  int32_t zp, act_min, act_max;
  int32_t mode;
  // Every shift is a right shift (multiplier below 1), int8 out, rounded
  // twice, multipliers non-negative: the fast path applies.
  int32_t fast;
  // int8 out, rounded twice, every shift a right shift of 1..31 and every
  // accumulator provably below 2^30: the small-accumulator arithmetic below
  // applies (npukit_s8_scale, npukit_s8_requantize_pairs / _rows).
  int32_t small;
  // The same for an int8 ADD (NPUKIT_S8_OUT_ADD): npukit_s8_add_small.
  int32_t add_small;
  int32_t once;
} npukit_s8_output_t;

static inline npukit_s8_output_t npukit_s8_output(const int32_t* p, size_t output, size_t residual) {
  npukit_s8_output_t o;
  o.p = p;
  o.bias = p + p[NPUKIT_S8_W_BIAS_AT];
  o.multiplier = p + p[NPUKIT_S8_W_MULTIPLIER_AT];
  o.shift = p + p[NPUKIT_S8_W_SHIFT_AT];
  o.mode = p[NPUKIT_S8_W_OUTPUT];
  o.out = (uint8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  o.residual = o.mode == NPUKIT_S8_OUT_ADD ? (const uint8_t*)residual + p[NPUKIT_S8_W_RES_OFFSET] : (const uint8_t*)0;
  o.sc = p[NPUKIT_S8_W_OUT_SC], o.sh = p[NPUKIT_S8_W_OUT_SH], o.sw = p[NPUKIT_S8_W_OUT_SW];
  o.zp = p[NPUKIT_S8_W_OUT_ZP], o.act_min = p[NPUKIT_S8_W_ACT_MIN], o.act_max = p[NPUKIT_S8_W_ACT_MAX];
  o.once = p[NPUKIT_S8_W_KIND] == NPUKIT_S8_FULLY_CONNECTED;
  o.fast = o.mode == NPUKIT_S8_OUT_INT8 && !o.once;
  for (int32_t c = 0; o.fast && c < p[NPUKIT_S8_W_OUT_C]; ++c) {
    if (o.shift[c] > 0 || o.shift[c] < -31 || o.multiplier[c] < 0) o.fast = 0;
  }
  // The small-accumulator path: every accumulator provably below 2^30 in
  // magnitude (bias plus reduction_length products of at most 255 * 128)
  // and every shift a right shift of 1..31.
  const int32_t taps = p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE ? p[NPUKIT_S8_W_KERNEL_H] * p[NPUKIT_S8_W_KERNEL_W]
                                                                  : p[NPUKIT_S8_W_K_PADDED];
  int32_t small = o.mode != NPUKIT_S8_OUT_INT32 && !o.once && taps <= NPUKIT_S8_SMALL_MAX_TAPS;
  for (int32_t c = 0; small && c < p[NPUKIT_S8_W_OUT_C]; ++c) {
    const int32_t b = o.bias[c];
    if (o.shift[c] > -1 || o.shift[c] < -31 || b > NPUKIT_S8_SMALL_MAX_BIAS - taps * 32640 ||
        b < -(NPUKIT_S8_SMALL_MAX_BIAS - taps * 32640)) {
      small = 0;
    }
  }
  o.small = small && o.mode == NPUKIT_S8_OUT_INT8;
  // TFLite's ADD on the same arithmetic: its operands, (int8 - zero point)
  // << 20, stay below 2^28, and their sum below 2^29; its shifts are 0..-31.
  o.add_small = small && o.mode == NPUKIT_S8_OUT_ADD && p[NPUKIT_S8_W_ADD_LEFT_SHIFT] == 20;
  const int32_t add_shifts[3] = {p[NPUKIT_S8_W_ADD_CONV_SHIFT], p[NPUKIT_S8_W_ADD_RES_SHIFT],
                                 p[NPUKIT_S8_W_ADD_OUT_SHIFT]};
  for (int32_t i = 0; i < 3; ++i) {
    if (add_shifts[i] > 0 || add_shifts[i] < -31) o.add_small = 0;
  }
  return o;
}

// TFLite's SaturatingRoundingDoublingHighMul(a, b) for |a| < 2^30, given
// a2 = 2 * a. TFLite divides a * b + nudge by 2^31 rounding toward zero, with
// nudge 2^30 or 1 - 2^30 by the sign of a * b; both cases equal
// floor((a * b + 2^30) / 2^31), which is the rounded high word of a2 * b: one
// SMMULR on DSP cores. The saturating case (both INT32_MIN) cannot occur.
static inline int32_t npukit_s8_rdhm_doubled(int32_t a2, int32_t b) {
#if defined(__ARM_FEATURE_DSP)
  int32_t r;
  __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a2), "r"(b));
  return r;
#else
  return (int32_t)(((int64_t)a2 * b + ((int64_t)1 << 31)) >> 32);
#endif
}

// TFLite's RoundingDivideByPOT(x, e) for 1 <= e <= 31 and |x| < 2^30: ties
// away from zero is (x + 2^(e-1) - [x < 0]) >> e, and the sum cannot overflow.
static inline int32_t npukit_s8_rdbpot_small(int32_t x, int32_t e) {
  return (x + (1 << (e - 1)) + (x >> 31)) >> e;
}

// The same for 0 <= e <= 31 (TFLite's ADD scales one operand by exactly 1/2: e = 0).
static inline int32_t npukit_s8_rdbpot_small0(int32_t x, int32_t e) { return e ? npukit_s8_rdbpot_small(x, e) : x; }

// The small path's arithmetic on a doubled accumulator, for a channel's
// REQUANT table entry {multiplier, e, 2^(e - 1)}: requantized plus the zero
// point, before the activation clamp.
static inline int32_t npukit_s8_scale(int32_t acc2, int32_t multiplier, int32_t e, int32_t half, int32_t zp) {
  const int32_t x = npukit_s8_rdhm_doubled(acc2, multiplier);
  return ((x + half + (x >> 31)) >> e) + zp;
}

// v clamped to int8 (SSAT on DSP cores).
static inline int32_t npukit_s8_narrow(int32_t v) {
#if defined(__ARM_FEATURE_DSP)
  return __ssat(v, 8);
#else
  return v < -128 ? -128 : v > 127 ? 127 : v;
#endif
}

static inline int32_t npukit_s8_clamp(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

// Output pairs of `n` consecutive channels on the small path: accumulators
// `acc` as [n][2] (pixel 0, pixel 1), the channels' REQUANT table entries,
// stored at `at0` and `at1` and then every `sc` bytes. A lone pixel is
// passed as both.
static __attribute__((noinline, unused)) void npukit_s8_requantize_pairs(const int32_t* acc, int32_t n,
                                                                        const int32_t* requant, int32_t zp,
                                                                        int32_t act_min, int32_t act_max,
                                                                        uint8_t* at0, uint8_t* at1, int32_t sc) {
  const int32_t* end = acc + 2 * n;
  int32_t at = 0;
  if (act_min <= -128 && act_max >= 127) {
    for (; acc != end; acc += 2, requant += 3, at += sc) {
      const int32_t m = requant[0], e = requant[1], half = requant[2], a0 = acc[0], a1 = acc[1];
      at0[at] = (uint8_t)npukit_s8_narrow(npukit_s8_scale(a0 * 2, m, e, half, zp));
      at1[at] = (uint8_t)npukit_s8_narrow(npukit_s8_scale(a1 * 2, m, e, half, zp));
    }
  } else {
    for (; acc != end; acc += 2, requant += 3, at += sc) {
      const int32_t m = requant[0], e = requant[1], half = requant[2], a0 = acc[0], a1 = acc[1];
      at0[at] = (uint8_t)npukit_s8_clamp(npukit_s8_scale(a0 * 2, m, e, half, zp), act_min, act_max);
      at1[at] = (uint8_t)npukit_s8_clamp(npukit_s8_scale(a1 * 2, m, e, half, zp), act_min, act_max);
    }
  }
}

// Rows of outputs of one channel on the small path: output (y, x) from the
// doubled accumulator acc[y * pitch + x] plus `add2`, stored at
// out + y * out_sh + x * out_sw.
static __attribute__((noinline, unused)) void npukit_s8_requantize_rows(const int32_t* acc, int32_t rows,
                                                                       int32_t cols, int32_t pitch, int32_t add2,
                                                                       const int32_t* requant, int32_t zp,
                                                                       int32_t act_min, int32_t act_max,
                                                                       uint8_t* out, int32_t out_sh,
                                                                       int32_t out_sw) {
  const int32_t m = requant[0], e = requant[1], half = requant[2];
  const int32_t full = act_min <= -128 && act_max >= 127;
  for (int32_t y = 0; y < rows; ++y, acc += pitch, out += out_sh) {
    uint8_t* to = out;
    if (full) {
      for (const int32_t *a = acc, *end = acc + cols; a != end; ++a, to += out_sw) {
        *to = (uint8_t)npukit_s8_narrow(npukit_s8_scale(*a + add2, m, e, half, zp));
      }
    } else {
      for (const int32_t *a = acc, *end = acc + cols; a != end; ++a, to += out_sw) {
        *to = (uint8_t)npukit_s8_clamp(npukit_s8_scale(*a + add2, m, e, half, zp), act_min, act_max);
      }
    }
  }
}

// TFLite's ADD of this layer's int8 output `v` (already clamped) and the
// residual's value at (c, y, x), on the add_small path.
static inline int8_t npukit_s8_add_small(const npukit_s8_output_t* o, int32_t v, int32_t c, int32_t y, int32_t x) {
  const int32_t* p = o->p;
  const int32_t r =
      (int8_t)o->residual[c * p[NPUKIT_S8_W_RES_SC] + y * p[NPUKIT_S8_W_RES_SH] + x * p[NPUKIT_S8_W_RES_SW]];
  const int32_t e1 = -p[NPUKIT_S8_W_ADD_CONV_SHIFT], e2 = -p[NPUKIT_S8_W_ADD_RES_SHIFT];
  const int32_t eo = -p[NPUKIT_S8_W_ADD_OUT_SHIFT];
  const int32_t a = npukit_s8_rdbpot_small0(
      npukit_s8_rdhm_doubled((v - p[NPUKIT_S8_W_ADD_CONV_ZP]) * (1 << 21), p[NPUKIT_S8_W_ADD_CONV_MULT]), e1);
  const int32_t b = npukit_s8_rdbpot_small0(
      npukit_s8_rdhm_doubled((r - p[NPUKIT_S8_W_ADD_RES_ZP]) * (1 << 21), p[NPUKIT_S8_W_ADD_RES_MULT]), e2);
  const int32_t sum = npukit_s8_rdbpot_small0(npukit_s8_rdhm_doubled((a + b) * 2, p[NPUKIT_S8_W_ADD_OUT_MULT]), eo);
  return (int8_t)npukit_s8_clamp(npukit_s8_narrow(sum + p[NPUKIT_S8_W_ADD_OUT_ZP]), p[NPUKIT_S8_W_ADD_ACT_MIN],
                                 p[NPUKIT_S8_W_ADD_ACT_MAX]);
}

static void npukit_s8_store_general(const npukit_s8_output_t* o, int32_t acc, int32_t c, int32_t at, int32_t y,
                                    int32_t x) {
  const int32_t* p = o->p;
  if (o->mode == NPUKIT_S8_OUT_INT32) {
    ((int32_t*)o->out)[at] = acc;
    return;
  }
  int32_t v = o->once ? mynpu_requantize_once(acc, o->multiplier[c], o->shift[c])
                      : mynpu_requantize(acc, o->multiplier[c], o->shift[c]);
  v = mynpu_clamp(mynpu_sat32((int64_t)v + o->zp), o->act_min, o->act_max);
  if (o->mode == NPUKIT_S8_OUT_ADD) {
    int32_t r = (int8_t)o->residual[c * p[NPUKIT_S8_W_RES_SC] + y * p[NPUKIT_S8_W_RES_SH] + x * p[NPUKIT_S8_W_RES_SW]];
    int32_t shift = p[NPUKIT_S8_W_ADD_LEFT_SHIFT];
    int32_t a = mynpu_requantize((v - p[NPUKIT_S8_W_ADD_CONV_ZP]) * (1 << shift), p[NPUKIT_S8_W_ADD_CONV_MULT],
                                 p[NPUKIT_S8_W_ADD_CONV_SHIFT]);
    int32_t b = mynpu_requantize((r - p[NPUKIT_S8_W_ADD_RES_ZP]) * (1 << shift), p[NPUKIT_S8_W_ADD_RES_MULT],
                                 p[NPUKIT_S8_W_ADD_RES_SHIFT]);
    int32_t sum = mynpu_sat32((int64_t)a + b);
    v = mynpu_sat32((int64_t)mynpu_requantize(sum, p[NPUKIT_S8_W_ADD_OUT_MULT], p[NPUKIT_S8_W_ADD_OUT_SHIFT]) +
                    p[NPUKIT_S8_W_ADD_OUT_ZP]);
    v = mynpu_clamp(v, p[NPUKIT_S8_W_ADD_ACT_MIN], p[NPUKIT_S8_W_ADD_ACT_MAX]);
  }
  o->out[at] = (uint8_t)(int8_t)v;
}

// Stores output channel `c` at (y, x) from its accumulator.
static inline void npukit_s8_store(const npukit_s8_output_t* o, int32_t acc, int32_t c, int32_t y, int32_t x) {
  int32_t at = c * o->sc + y * o->sh + x * o->sw;
  if (o->fast) {
    // clamp(v + zp, lo, hi) as clamp(v, lo - zp, hi - zp) + zp: no overflow.
    // mynpu_requantize for shifts -31..0 and a non-negative multiplier: no
    // left shift, and the doubling high multiply cannot saturate.
    int32_t v = mynpu_rdbpot(mynpu_rdhm(acc, o->multiplier[c]), -o->shift[c]);
    o->out[at] = (uint8_t)(int8_t)(mynpu_clamp(v, o->act_min - o->zp, o->act_max - o->zp) + o->zp);
  } else {
    npukit_s8_store_general(o, acc, c, at, y, x);
  }
}

#endif  // NPUKIT_CPU_KERNELS_S8_OUTPUT_H_
