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
#include "s8_scale_once.h"

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

// The same added to the two halfwords of `acc` (SXTAB16 with ROR #8).
static inline int32_t npukit_s8_sxtab16_ror8(int32_t acc, int32_t x) {
  int32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(acc), "r"(x));
  return r;
}
#endif

// Words and halfwords read from byte arrays (columns, packed weights).
typedef int32_t __attribute__((may_alias)) npukit_s8_word_t;
typedef int16_t __attribute__((may_alias)) npukit_s8_half_t;

#if defined(__ARM_FEATURE_DSP)
// Two words `a` and `b` of four channels' int8 values at two neighbouring positions (columns of a plane, rows of
// a column) as each channel's int16 pair: split (SXTB16) into channels (0, 2) and (1, 3) and paired by channel
// (PKHBT, PKHTB); channel j's word (its value from `a` in the low half, from `b` in the high) at to[j * wp].
static inline __attribute__((always_inline)) void npukit_s8_channel_pairs(npukit_s8_word_t* to, int32_t wp,
                                                                          int32_t a, int32_t b) {
  const int32_t a02 = (int32_t)__sxtb16(a), a13 = npukit_s8_sxtb16_ror8(a);
  const int32_t b02 = (int32_t)__sxtb16(b), b13 = npukit_s8_sxtb16_ror8(b);
  int32_t c0, c1, c2, c3;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(c0) : "r"(a02), "r"(b02));
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(c1) : "r"(a13), "r"(b13));
  __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(c2) : "r"(b02), "r"(a02));
  __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(c3) : "r"(b13), "r"(a13));
  to[0] = c0, to[wp] = c1, to[2 * wp] = c2, to[3 * wp] = c3;
}
#endif

// TFLite's int8 ADD of a layer's output and a residual tensor
// (NPUKIT_S8_OUT_ADD): the block's ADD_* words and the residual's strides.
typedef struct {
  int32_t conv_zp, res_zp, left_shift;
  int32_t conv_mult, conv_shift, res_mult, res_shift, out_mult, out_shift;
  int32_t out_zp, act_min, act_max;
  int32_t res_sc, res_sh, res_sw;
} npukit_s8_add_t;

// The block's ADD_* words (the residual's strides left 0).
static inline npukit_s8_add_t npukit_s8_add_words(const int32_t* p) {
  const npukit_s8_add_t add = {
      .conv_zp = p[NPUKIT_S8_W_ADD_CONV_ZP], .res_zp = p[NPUKIT_S8_W_ADD_RES_ZP],
      .left_shift = p[NPUKIT_S8_W_ADD_LEFT_SHIFT],
      .conv_mult = p[NPUKIT_S8_W_ADD_CONV_MULT], .conv_shift = p[NPUKIT_S8_W_ADD_CONV_SHIFT],
      .res_mult = p[NPUKIT_S8_W_ADD_RES_MULT], .res_shift = p[NPUKIT_S8_W_ADD_RES_SHIFT],
      .out_mult = p[NPUKIT_S8_W_ADD_OUT_MULT], .out_shift = p[NPUKIT_S8_W_ADD_OUT_SHIFT],
      .out_zp = p[NPUKIT_S8_W_ADD_OUT_ZP], .act_min = p[NPUKIT_S8_W_ADD_ACT_MIN], .act_max = p[NPUKIT_S8_W_ADD_ACT_MAX],
  };
  return add;
}

// Whether TFLite's ADD runs on the small arithmetic below: its operands,
// (int8 - zero point) << 20 scaled by multipliers below 1, stay below 2^28,
// and their sum below 2^29, when every shift is 0..-31.
static inline int32_t npukit_s8_add_is_small(const npukit_s8_add_t* k) {
  const int32_t shifts[3] = {k->conv_shift, k->res_shift, k->out_shift};
  for (int32_t i = 0; i < 3; ++i) {
    if (shifts[i] > 0 || shifts[i] < -31) return 0;
  }
  return k->left_shift == 20;
}

// The float output stage of an ONNX QDQ layer (NPUKIT_S8_W_FLOAT_AT): the
// binary32 arithmetic of DequantizeLinear -> layer -> QuantizeLinear as the
// graph writes it (s8_layer.h), one operation at a time, so that it rounds
// where onnxruntime's reference does. The kernels are built with
// -ffp-contract=off: no multiply-add is fused.
typedef struct {
  float out_scale, upper, low, high, zp;
  int32_t relu;
} npukit_s8_float_quantize_t;

// npukit_s8_float_quantize as one integer clamp (npukit_s8_float_clamped):
// the output scale, the clamp of the rounded quotient and the zero point.
typedef struct {
  float scale;
  int32_t lo, hi, zp;
} npukit_s8_float_clamp_t;

typedef struct {
  const float* table;  // [OUT_C][3] {scale0, scale1, bias}, or NULL: TFLite's fixed point
  npukit_s8_float_quantize_t out;
  float add_conv_scale, add_res_scale, add_conv_zp, add_res_zp;
  npukit_s8_float_quantize_t add;
  // Whether the fast paths' form applies (npukit_s8_float_clamp_of), and
  // its constants for the layer's quantization and the ADD's.
  int32_t clamped;
  npukit_s8_float_clamp_t out_clamp, add_clamp;
} npukit_s8_float_t;

static inline float npukit_s8_float_bits(int32_t bits) {
  union {
    int32_t i;
    float f;
  } u;
  u.i = bits;
  return u.f;
}

// Filled in place (no struct copy: the kernels have no memcpy).
static inline void npukit_s8_float_words(npukit_s8_float_t* f, const int32_t* p) {
  f->table = p[NPUKIT_S8_W_FLOAT_AT] ? (const float*)(const void*)(p + p[NPUKIT_S8_W_FLOAT_AT]) : (const float*)0;
  f->out.out_scale = npukit_s8_float_bits(p[NPUKIT_S8_W_FLOAT_OUT_SCALE]);
  f->out.upper = npukit_s8_float_bits(p[NPUKIT_S8_W_FLOAT_UPPER]);
  f->out.relu = p[NPUKIT_S8_W_FLOAT_RELU];
  f->out.low = (float)p[NPUKIT_S8_W_FLOAT_LOW], f->out.high = (float)p[NPUKIT_S8_W_FLOAT_HIGH];
  f->out.zp = (float)p[NPUKIT_S8_W_OUT_ZP];
  f->add_conv_scale = npukit_s8_float_bits(p[NPUKIT_S8_W_FLOAT_ADD_CONV_SCALE]);
  f->add_res_scale = npukit_s8_float_bits(p[NPUKIT_S8_W_FLOAT_ADD_RES_SCALE]);
  f->add_conv_zp = (float)p[NPUKIT_S8_W_ADD_CONV_ZP], f->add_res_zp = (float)p[NPUKIT_S8_W_ADD_RES_ZP];
  f->add.out_scale = npukit_s8_float_bits(p[NPUKIT_S8_W_FLOAT_ADD_OUT_SCALE]);
  f->add.upper = npukit_s8_float_bits(p[NPUKIT_S8_W_FLOAT_ADD_UPPER]);
  f->add.relu = p[NPUKIT_S8_W_FLOAT_ADD_RELU];
  f->add.low = (float)p[NPUKIT_S8_W_FLOAT_ADD_LOW], f->add.high = (float)p[NPUKIT_S8_W_FLOAT_ADD_HIGH];
  f->add.zp = (float)p[NPUKIT_S8_W_ADD_OUT_ZP];
  const npukit_s8_float_clamp_t none = {0.0f, 0, 0, 0};
  f->clamped = 0;
  f->out_clamp = f->add_clamp = none;
}

// x rounded to the nearest integer, ties to even, for |x| <= 2^22: adding
// 1.5 * 2^23 leaves no fraction bits (the default rounding mode rounds the
// sum to nearest even), and subtracting it again is exact. No libm call.
static inline float npukit_s8_roundeven(float x) {
  const float magic = 12582912.0f;
  return (x + magic) - magic;
}

// The activation and QuantizeLinear of a float value: min(max(v, 0), upper)
// as the graph's Relu/Clip, then clamp(roundeven(v / scale) + zp, low, high).
// A quotient beyond 2^22 ends at a bound of the clamp either way.
static inline int32_t npukit_s8_float_quantize(const npukit_s8_float_quantize_t* q, float v) {
  if (q->relu && !(v > 0.0f)) v = 0.0f;
  if (v > q->upper) v = q->upper;
  float x = v / q->out_scale;
  x = x > 4194304.0f ? 4194304.0f : x < -4194304.0f ? -4194304.0f : x;
  x = npukit_s8_roundeven(x) + q->zp;
  x = x < q->low ? q->low : x;
  x = x > q->high ? q->high : x;
  return (int32_t)x;
}

// The float value of accumulator `acc` (the integer bias left out) for a
// channel's table entry `k`, before the activation and QuantizeLinear.
static inline float npukit_s8_float_value(const float* k, int32_t acc) {
  float v = (float)acc * k[0];
  v = v * k[1];
  return v + k[2];
}

// Channel c's int8 output of accumulator `acc` (the integer bias left out)
// on the float stage.
static inline int32_t npukit_s8_float_output(const npukit_s8_float_t* f, int32_t acc, int32_t c) {
  return npukit_s8_float_quantize(&f->out, npukit_s8_float_value(f->table + 3 * c, acc));
}

// The float ADD's sum of the layer's int8 output `v` and the residual's int8
// `r`, given the ADD's zero points and scales.
static inline float npukit_s8_float_add_sum(float conv_zp, float conv_scale, float res_zp, float res_scale, int32_t v,
                                            int32_t r) {
  const float a = ((float)v - conv_zp) * conv_scale;
  const float b = ((float)r - res_zp) * res_scale;
  return a + b;
}

// The float ADD of the layer's int8 output `v` and the residual's int8 `r`.
static inline int32_t npukit_s8_float_add(const npukit_s8_float_t* f, int32_t v, int32_t r) {
  return npukit_s8_float_quantize(
      &f->add, npukit_s8_float_add_sum(f->add_conv_zp, f->add_conv_scale, f->add_res_zp, f->add_res_scale, v, r));
}

// The float stage on the fast paths. For a positive output scale,
// npukit_s8_float_quantize is a composition of non-decreasing functions of
// v: ReLU max(v, 0) and the bound min(v, upper) therefore commute with the
// division, the rounding and the clamps, and with A and B its results for
// -FLT_MAX and FLT_MAX (min(q(0), q(upper)) with ReLU, else FLOAT_LOW;
// q(upper)), q(v) = clamp(roundeven(v / scale) + zp, A, B) for every v that
// is not NaN: one division, one rounding conversion and an integer clamp.
// A quotient beyond 2^22 ends at A or B either way (|zp| < 2^20).
static inline npukit_s8_float_clamp_t npukit_s8_float_clamp_of(const npukit_s8_float_quantize_t* q) {
  const float big = 3.40282347e38f;  // FLT_MAX
  npukit_s8_float_clamp_t c;
  c.scale = q->out_scale;
  c.zp = (int32_t)q->zp;
  c.lo = npukit_s8_float_quantize(q, -big) - c.zp;
  c.hi = npukit_s8_float_quantize(q, big) - c.zp;
  return c;
}

// Whether x is finite and at most `limit` in magnitude (false for NaN).
static inline int32_t npukit_s8_float_within(float x, float limit) { return x >= -limit && x <= limit; }

// Whether npukit_s8_float_clamped applies to the layer of block `p`: every
// output scale positive and finite, every table entry and ADD scale finite
// and |scale0| <= 2^96, so that no value is NaN ((float)acc * scale0 stays
// finite, and a sum of two finite values is at worst infinite).
static inline int32_t npukit_s8_float_clamp_applies(const npukit_s8_float_t* f, const int32_t* p) {
  const float big = 3.40282347e38f;  // FLT_MAX
  int32_t ok = f->out.out_scale > 0.0f && f->out.out_scale <= big;
  if (p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_ADD) {
    ok = ok && f->add.out_scale > 0.0f && f->add.out_scale <= big && npukit_s8_float_within(f->add_conv_scale, big) &&
         npukit_s8_float_within(f->add_res_scale, big);
  }
  for (int32_t i = 0; ok && i < 3 * p[NPUKIT_S8_W_OUT_C]; i += 3) {
    ok = npukit_s8_float_within(f->table[i], 79228162514264337593543950336.0f) &&  // 2^96
         npukit_s8_float_within(f->table[i + 1], big) && npukit_s8_float_within(f->table[i + 2], big);
  }
  return ok;
}

// x rounded to the nearest integer, ties to even, where |x| <= 2^22; beyond,
// an integer of x's sign at least 2^22 in magnitude (x not NaN). ARM VFP's
// VCVTR and RISC-V's FCVT.W.S with RNE round that way and saturate;
// elsewhere x is first clamped to 2^22 (npukit_s8_roundeven).
static inline int32_t npukit_s8_float_round(float x) {
#if defined(__arm__) && defined(__ARM_FP) && (__ARM_FP & 4)
  // (the FPSCR's rounding mode: to nearest, ties to even, as npukit_s8_roundeven assumes)
  float r;
  __asm__("vcvtr.s32.f32 %0, %1" : "=t"(r) : "t"(x));
  union {
    float f;
    int32_t i;
  } u;
  u.f = r;
  return u.i;
#elif defined(__riscv) && defined(__riscv_flen)
  int32_t r;
  __asm__("fcvt.w.s %0, %1, rne" : "=r"(r) : "f"(x));
  return r;
#else
  x = x > 4194304.0f ? 4194304.0f : x < -4194304.0f ? -4194304.0f : x;
  return (int32_t)npukit_s8_roundeven(x);
#endif
}

// npukit_s8_float_quantize of a value that is not NaN, where
// npukit_s8_float_clamp_applies.
static inline int32_t npukit_s8_float_clamped(const npukit_s8_float_clamp_t* c, float v) {
  const int32_t r = npukit_s8_float_round(v / c->scale);
  return (r < c->lo ? c->lo : r > c->hi ? c->hi : r) + c->zp;
}

// Whether the layer has a channel c (0 .. n - 1) where `outside` (an
// expression of c without side effects) holds; these checks run on every
// layer call. On x86 hosts an OR over every channel, which the compiler
// vectorizes (the loops that stopped at the first such channel were 7% of a
// keyword-spotting model's time); elsewhere the loop stops there, fewer
// instructions on the boards' cores, where the checks pass in most layers.
#if defined(__x86_64__)
#define NPUKIT_S8_SOME_CHANNEL(n, outside)                 \
  __extension__({                                          \
    int32_t some_ = 0;                                     \
    for (int32_t c = 0; c < (n); ++c) some_ |= (outside); \
    some_;                                                 \
  })
#else
#define NPUKIT_S8_SOME_CHANNEL(n, outside)    \
  __extension__({                             \
    int32_t some_ = 0;                        \
    for (int32_t c = 0; c < (n); ++c) {       \
      if (outside) {                          \
        some_ = 1;                            \
        break;                                \
      }                                       \
    }                                         \
    some_;                                    \
  })
#endif

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
  // applies (npukit_s8_scale, npukit_s8_requantize_pairs / _rows). With the
  // float stage: int8 out, every accumulator below 2^30 (so the paths that
  // double them stay exact) and npukit_s8_float_clamp_applies; the paths then
  // store through npukit_s8_float_pairs / _doubled / _one instead.
  int32_t small;
  // The same for an int8 ADD (NPUKIT_S8_OUT_ADD) with TFLite's left shift of
  // 20: npukit_s8_add_channels (the float stage: npukit_s8_float_add_channels).
  int32_t add_small;
  int32_t once;
  const double* scale;  // a fully connected layer's scales (once), else NULL
  npukit_s8_add_t add;
  // The float output stage (fl.table set): `fast` and `once` are 0, and
  // `small` and `add_small` take their float meaning above.
  npukit_s8_float_t fl;
} npukit_s8_output_t;

// Always inlined (called once per layer): GCC's own choice left it out of
// line in the x86 convolution once the float stage's setup was added, and
// that kernel's frame grew by 6 KiB.
static inline __attribute__((always_inline)) npukit_s8_output_t npukit_s8_output(const int32_t* p, size_t output,
                                                                                 size_t residual) {
  npukit_s8_output_t o;
  o.p = p;
  o.bias = p + p[NPUKIT_S8_W_BIAS_AT];
  // A fully connected block (`once` below) has no multiplier or shift table (MULTIPLIER_AT and SHIFT_AT
  // locate its bias): every path that reads these is taken only where !once (fast, small, add_small, and
  // s8_x86_vector.h's `vector`).
  o.multiplier = p + p[NPUKIT_S8_W_MULTIPLIER_AT];
  o.shift = p + p[NPUKIT_S8_W_SHIFT_AT];
  o.mode = p[NPUKIT_S8_W_OUTPUT];
  o.out = (uint8_t*)output + p[NPUKIT_S8_W_OUT_OFFSET];
  // A residual of int32 accumulators is in the output tensor by now, as int8 (npukit_s8_residual_int8).
  const int32_t in_output = p[NPUKIT_S8_W_RES_BIAS_AT] != 0;
  o.residual = o.mode != NPUKIT_S8_OUT_ADD ? (const uint8_t*)0
               : in_output                 ? o.out
                                           : (const uint8_t*)residual + p[NPUKIT_S8_W_RES_OFFSET];
  o.sc = p[NPUKIT_S8_W_OUT_SC], o.sh = p[NPUKIT_S8_W_OUT_SH], o.sw = p[NPUKIT_S8_W_OUT_SW];
  o.zp = p[NPUKIT_S8_W_OUT_ZP], o.act_min = p[NPUKIT_S8_W_ACT_MIN], o.act_max = p[NPUKIT_S8_W_ACT_MAX];
  npukit_s8_float_words(&o.fl, p);
  const int32_t floating = o.fl.table && o.mode != NPUKIT_S8_OUT_INT32;
  if (floating && npukit_s8_float_clamp_applies(&o.fl, p)) {
    o.fl.clamped = 1;
    o.fl.out_clamp = npukit_s8_float_clamp_of(&o.fl.out);
    if (o.mode == NPUKIT_S8_OUT_ADD) o.fl.add_clamp = npukit_s8_float_clamp_of(&o.fl.add);
  }
  o.once = p[NPUKIT_S8_W_KIND] == NPUKIT_S8_FULLY_CONNECTED && !floating;
  o.scale = o.once ? (const double*)(const void*)(p + p[NPUKIT_S8_W_SCALE_AT]) : (const double*)0;
  o.fast = o.mode == NPUKIT_S8_OUT_INT8 && !o.once &&
           !NPUKIT_S8_SOME_CHANNEL(p[NPUKIT_S8_W_OUT_C], o.shift[c] > 0 || o.shift[c] < -31 || o.multiplier[c] < 0);
  // The small-accumulator path: every accumulator provably below 2^30 in
  // magnitude (bias plus reduction_length products of at most 255 * 128)
  // and every shift a right shift of 1..31 (not used by the float stage).
  const int32_t taps = p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE ? p[NPUKIT_S8_W_KERNEL_H] * p[NPUKIT_S8_W_KERNEL_W]
                                                                  : p[NPUKIT_S8_W_K_PADDED];
  int32_t small = o.mode != NPUKIT_S8_OUT_INT32 && !o.once && taps <= NPUKIT_S8_SMALL_MAX_TAPS &&
                  (!floating || o.fl.clamped);
  const int32_t bound = small ? NPUKIT_S8_SMALL_MAX_BIAS - taps * 32640 : 0;  // (taps * 32640 < 2^29 there)
  small = small && !NPUKIT_S8_SOME_CHANNEL(p[NPUKIT_S8_W_OUT_C], (!floating && (o.shift[c] > -1 || o.shift[c] < -31)) ||
                                                                     o.bias[c] > bound || o.bias[c] < -bound);
  o.small = small && o.mode == NPUKIT_S8_OUT_INT8;
  o.add = npukit_s8_add_words(p);
  o.add.res_sc = in_output ? o.sc : p[NPUKIT_S8_W_RES_SC];
  o.add.res_sh = in_output ? o.sh : p[NPUKIT_S8_W_RES_SH];
  o.add.res_sw = in_output ? o.sw : p[NPUKIT_S8_W_RES_SW];
  o.add_small = small && o.mode == NPUKIT_S8_OUT_ADD && (floating || npukit_s8_add_is_small(&o.add));
  if (floating) o.fast = 0;
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
// `half` is 2^(e-1), given where it is precomputed.
static inline int32_t npukit_s8_rdbpot_half(int32_t x, int32_t e, int32_t half) { return (x + half + (x >> 31)) >> e; }

// The same for 0 <= e <= 31: e = 0 divides by 1 (the form above would not:
// it subtracts one from negative x).
static inline int32_t npukit_s8_rdbpot_half0(int32_t x, int32_t e, int32_t half) {
  return e ? npukit_s8_rdbpot_half(x, e, half) : x;
}

// TFLite's requantization of any int32 accumulator plus `bias` (added
// wrapping, as TFLite adds it) for a right shift e = 0..31 and a
// non-negative multiplier: the rounding doubling high multiply is
// floor((a * m + 2^30) / 2^31) for either sign of the product, and the
// rounding divide adds one where the remainder exceeds (2^e - 1) / 2 + [x < 0]
// (never for e = 0, `mask` = 2^e - 1 being 0; `half` = mask >> 1).
static inline int32_t npukit_s8_requantize_right(int32_t acc, int32_t bias, int32_t m, int32_t e, int32_t mask,
                                                 int32_t half) {
  const int32_t a = (int32_t)((uint32_t)acc + (uint32_t)bias);
  const int32_t h = (int32_t)(((int64_t)a * m + ((int64_t)1 << 30)) >> 31);
  return (h >> e) + ((h & mask) > half + (int32_t)((uint32_t)h >> 31));
}

// 2 * a, saturated to int32 (QADD on DSP cores).
static inline int32_t npukit_s8_double_saturated(int32_t a) {
#if defined(__ARM_FEATURE_DSP)
  return __qadd(a, a);
#else
  return a > INT32_MAX / 2 ? INT32_MAX : a < INT32_MIN / 2 ? INT32_MIN : a * 2;
#endif
}

// The largest right shift for which npukit_s8_requantize_clamped is exact.
#define NPUKIT_S8_CLAMPED_MAX_SHIFT 20

// TFLite's requantization of any int32 accumulator plus `bias` for a
// normalized multiplier (2^30 <= m < 2^31) and a right shift e = 1..20,
// exact wherever the result is then clamped to int8 (both sides of the
// clamp 255 or less apart from the zero point): for |a| < 2^30 it is the
// small path's arithmetic on 2a; otherwise 2a saturates, but both the true
// and the saturated high product are at least 2^29 in magnitude, which
// shifted right by 20 or less lies beyond any int8 bound either way.
static inline int32_t npukit_s8_requantize_clamped(int32_t acc, int32_t bias, int32_t m, int32_t e, int32_t half) {
  const int32_t a2 = npukit_s8_double_saturated((int32_t)((uint32_t)acc + (uint32_t)bias));
  return npukit_s8_rdbpot_half(npukit_s8_rdhm_doubled(a2, m), e, half);
}

// The small path's arithmetic on a doubled accumulator, for a channel's
// multiplier and shift (-31..-1, a right shift e = -shift): requantized plus
// the zero point, before the activation clamp. RoundingDivideByPOT(h, e),
// (h + 2^(e-1) - [h < 0]) >> e, is ((h - [h < 0]) >> (e - 1) + 1) >> 1
// (floor((floor(y) + 1) / 2) = floor((y + 1) / 2)), and the zero point joins
// its last step as (q + 2 zp + 1) >> 1: as many instructions as with a
// precomputed 2^(e-1), from the shift alone (e - 1 = ~shift).
static inline int32_t npukit_s8_scale(int32_t acc2, int32_t multiplier, int32_t shift, int32_t zp) {
  const int32_t h = npukit_s8_rdhm_doubled(acc2, multiplier);
  return (((h + (h >> 31)) >> ~shift) + (2 * zp + 1)) >> 1;
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

static inline int32_t npukit_s8_full_range(int32_t act_min, int32_t act_max) {
  return act_min <= -128 && act_max >= 127;
}

// How the small path clamps to the activation range [act_min, act_max]:
// all of int8 (NPUKIT_S8_RANGE_FULL: one SSAT), int8 above a lower bound
// (NPUKIT_S8_RANGE_LOW, a ReLU's: SSAT, then a maximum) or any range.
#define NPUKIT_S8_RANGE_ANY 0
#define NPUKIT_S8_RANGE_LOW 1
#define NPUKIT_S8_RANGE_FULL 2
static inline int32_t npukit_s8_range(int32_t act_min, int32_t act_max) {
  return npukit_s8_full_range(act_min, act_max) ? NPUKIT_S8_RANGE_FULL
         : act_max >= 127                       ? NPUKIT_S8_RANGE_LOW
                                                : NPUKIT_S8_RANGE_ANY;
}

// The small path's int8 output of a doubled accumulator: requantized,
// narrowed to int8, and clamped to [act_min, act_max] as `range`
// (npukit_s8_range, a constant where the callers specialise on it) allows.
static inline __attribute__((always_inline)) int32_t npukit_s8_output_small(int32_t acc2, int32_t multiplier,
                                                                            int32_t shift, int32_t zp,
                                                                            int32_t act_min, int32_t act_max,
                                                                            int32_t range) {
  const int32_t v = npukit_s8_scale(acc2, multiplier, shift, zp);
  if (range == NPUKIT_S8_RANGE_FULL) return npukit_s8_narrow(v);
  if (range == NPUKIT_S8_RANGE_LOW) {
    const int32_t n = npukit_s8_narrow(v);
    return n < act_min ? act_min : n;
  }
  return npukit_s8_clamp(v, act_min, act_max);
}

// `body` with the constant `range` of npukit_s8_range(act_min, act_max).
#define NPUKIT_S8_BY_RANGE(act_min, act_max, body)      \
  switch (npukit_s8_range(act_min, act_max)) {          \
    case NPUKIT_S8_RANGE_FULL: {                        \
      const int32_t range = NPUKIT_S8_RANGE_FULL;       \
      body;                                             \
      break;                                            \
    }                                                   \
    case NPUKIT_S8_RANGE_LOW: {                         \
      const int32_t range = NPUKIT_S8_RANGE_LOW;        \
      body;                                             \
      break;                                            \
    }                                                   \
    default: {                                          \
      const int32_t range = NPUKIT_S8_RANGE_ANY;        \
      body;                                             \
    }                                                   \
  }

static inline __attribute__((always_inline)) void npukit_s8_pairs_loop(const int32_t* acc, int32_t n,
                                                                       const int32_t* multiplier,
                                                                       const int32_t* shift, int32_t zp,
                                                                       int32_t act_min, int32_t act_max,
                                                                       uint8_t* at0, uint8_t* at1, int32_t sc,
                                                                       int32_t range) {
  const int32_t* end = acc + 2 * n;
  for (int32_t at = 0; acc != end; acc += 2, ++multiplier, ++shift, at += sc) {
    const int32_t m = *multiplier, s = *shift, a0 = acc[0], a1 = acc[1];
    at0[at] = (uint8_t)npukit_s8_output_small(a0 * 2, m, s, zp, act_min, act_max, range);
    at1[at] = (uint8_t)npukit_s8_output_small(a1 * 2, m, s, zp, act_min, act_max, range);
  }
}

// Output pairs of `n` consecutive channels on the small path: accumulators
// `acc` as [n][2] (pixel 0, pixel 1), the channels' multipliers and shifts,
// stored at `at0` and `at1` and then every `sc` bytes. A lone pixel is
// passed as both.
static __attribute__((noinline, unused)) void npukit_s8_requantize_pairs(const int32_t* acc, int32_t n,
                                                                        const int32_t* multiplier,
                                                                        const int32_t* shift, int32_t zp,
                                                                        int32_t act_min, int32_t act_max,
                                                                        uint8_t* at0, uint8_t* at1, int32_t sc) {
  NPUKIT_S8_BY_RANGE(act_min, act_max,
                     npukit_s8_pairs_loop(acc, n, multiplier, shift, zp, act_min, act_max, at0, at1, sc, range))
}

static inline __attribute__((always_inline)) void npukit_s8_row_loop(const int32_t* acc, int32_t cols, int32_t add2,
                                                                     int32_t m, int32_t s, int32_t zp,
                                                                     int32_t act_min, int32_t act_max, uint8_t* to,
                                                                     int32_t out_sw, int32_t range) {
  for (const int32_t* end = acc + cols; acc != end; ++acc, to += out_sw) {
    *to = (uint8_t)npukit_s8_output_small(*acc + add2, m, s, zp, act_min, act_max, range);
  }
}

// Rows of outputs of one channel on the small path: output (y, x) from the
// doubled accumulator acc[y * pitch + x] plus `add2`, stored at
// out + y * out_sh + x * out_sw; `m` and `s` the channel's multiplier and
// shift.
static __attribute__((noinline, unused)) void npukit_s8_requantize_rows(const int32_t* acc, int32_t rows,
                                                                       int32_t cols, int32_t pitch, int32_t add2,
                                                                       int32_t m, int32_t s, int32_t zp,
                                                                       int32_t act_min, int32_t act_max,
                                                                       uint8_t* out, int32_t out_sh,
                                                                       int32_t out_sw) {
  for (int32_t y = 0; y < rows; ++y, acc += pitch, out += out_sh) {
    NPUKIT_S8_BY_RANGE(act_min, act_max,
                       npukit_s8_row_loop(acc, cols, add2, m, s, zp, act_min, act_max, out, out_sw, range))
  }
}

// The residual's int8 value at (c, y, x) (NPUKIT_S8_OUT_ADD).
static inline int32_t npukit_s8_residual(const npukit_s8_output_t* o, int32_t c, int32_t y, int32_t x) {
  return (int8_t)o->residual[c * o->add.res_sc + y * o->add.res_sh + x * o->add.res_sw];
}

// TFLite's ADD scales each int8 operand on its own before adding them, so
// each operand's scaled value is a function of one int8: the layer's 2 x 256
// of them are tabulated once per call (exact TFLite arithmetic).
typedef struct {
  int32_t conv[256], res[256];  // indexed by the int8 value + 128
} npukit_s8_add_table_t;

// One operand's scaled value, (x << left_shift) requantized; where the ADD
// is small, x << 20 is below 2^28 and the small arithmetic applies.
static inline int32_t npukit_s8_add_operand(const npukit_s8_add_t* k, int32_t small, int32_t x, int32_t mult,
                                            int32_t shift) {
  if (small) {
    const int32_t e = -shift;
    return npukit_s8_rdbpot_half0(npukit_s8_rdhm_doubled(x * (1 << 21), mult), e, e ? 1 << (e - 1) : 0);
  }
  return mynpu_requantize(x * (1 << k->left_shift), mult, shift);
}

static inline void npukit_s8_add_table(const npukit_s8_add_t* k, npukit_s8_add_table_t* t) {
  const int32_t small = npukit_s8_add_is_small(k);
  for (int32_t v = -128; v < 128; ++v) {
    t->conv[v + 128] = npukit_s8_add_operand(k, small, v - k->conv_zp, k->conv_mult, k->conv_shift);
    t->res[v + 128] = npukit_s8_add_operand(k, small, v - k->res_zp, k->res_mult, k->res_shift);
  }
}

// TFLite's ADD result from its operands' scaled sum (below 2^29: add_small)
// on the small arithmetic; out_e = -out_shift, out_half = 2^(out_e - 1) or 0.
static inline int32_t npukit_s8_add_result_small(int32_t sum, int32_t out_mult, int32_t out_e, int32_t out_half,
                                                 int32_t out_zp, int32_t act_min, int32_t act_max) {
  const int32_t r = npukit_s8_rdbpot_half0(npukit_s8_rdhm_doubled(sum * 2, out_mult), out_e, out_half);
  return npukit_s8_clamp(npukit_s8_narrow(r + out_zp), act_min, act_max);
}

// The same on the general arithmetic, from the two scaled operands.
static inline int32_t npukit_s8_add_result(const npukit_s8_add_t* k, int32_t a, int32_t b) {
  const int32_t sum = mynpu_sat32((int64_t)a + b);
  const int32_t v = mynpu_sat32((int64_t)mynpu_requantize(sum, k->out_mult, k->out_shift) + k->out_zp);
  return mynpu_clamp(v, k->act_min, k->act_max);
}

static inline __attribute__((always_inline)) void npukit_s8_add_loop(const npukit_s8_output_t* o,
                                                                     const int32_t* table, const int32_t* acc,
                                                                     int32_t stride, int32_t n,
                                                                     const int32_t* multiplier,
                                                                     const int32_t* shift, const uint8_t* res,
                                                                     uint8_t* out, int32_t range) {
  const npukit_s8_add_t* k = &o->add;
  const int32_t zp = o->zp, act_min = o->act_min, act_max = o->act_max, res_sc = k->res_sc, out_sc = o->sc;
  const int32_t out_mult = k->out_mult, out_e = -k->out_shift, out_half = out_e ? 1 << (out_e - 1) : 0;
  const int32_t lo = k->act_min, hi = k->act_max, out_zp = k->out_zp;
  for (const int32_t* end = acc + n * stride; acc != end; acc += stride, ++multiplier, ++shift, res += res_sc,
                     out += out_sc) {
    const int32_t v = npukit_s8_output_small(*acc * 2, *multiplier, *shift, zp, act_min, act_max, range);
    *out = (uint8_t)npukit_s8_add_result_small(table[v] + table[256 + (int8_t)*res], out_mult, out_e, out_half,
                                               out_zp, lo, hi);
  }
}

// One output pixel's `n` consecutive channels on the add_small path:
// accumulators acc[0], acc[stride], ..., the channels' multipliers and
// shifts, the
// residual from `res` every res_sc bytes, stored at `out` every sc bytes;
// `table` is npukit_s8_add_table's conv then res, each + 128. The operands'
// scaled sum is below 2^29 (add_small), so the output's scaling takes the
// small form.
static __attribute__((noinline, unused)) void npukit_s8_add_channels(const npukit_s8_output_t* o,
                                                                    const int32_t* table, const int32_t* acc,
                                                                    int32_t stride, int32_t n,
                                                                    const int32_t* multiplier,
                                                                    const int32_t* shift, const uint8_t* res,
                                                                    uint8_t* out) {
  NPUKIT_S8_BY_RANGE(o->act_min, o->act_max,
                     npukit_s8_add_loop(o, table, acc, stride, n, multiplier, shift, res, out, range))
}

// The float stage's int8 output of accumulator `acc` (the integer bias left
// out) for the channel's table entry `k`, on the fast paths (`small`), with
// the layer's out_clamp `q`.
static inline __attribute__((always_inline)) int32_t npukit_s8_float_one(const npukit_s8_float_clamp_t* q,
                                                                         const float* k, int32_t acc) {
  return npukit_s8_float_clamped(q, npukit_s8_float_value(k, acc));
}

// npukit_s8_requantize_pairs on the float stage: accumulators `acc` as [n][2]
// (pixel 0, pixel 1) of `n` consecutive channels, `table` their float
// entries, stored at `at0` and `at1` and then every `sc` bytes.
static __attribute__((noinline, unused)) void npukit_s8_float_pairs(const npukit_s8_float_t* f, const int32_t* acc,
                                                                   int32_t n, const float* table, uint8_t* at0,
                                                                   uint8_t* at1, int32_t sc) {
  const npukit_s8_float_clamp_t q = f->out_clamp;  // a local: the byte stores below cannot change it
  const int32_t* end = acc + 2 * n;
  for (int32_t at = 0; acc != end; acc += 2, table += 3, at += sc) {
    const float k[3] = {table[0], table[1], table[2]};
    const int32_t v0 = npukit_s8_float_one(&q, k, acc[0]), v1 = npukit_s8_float_one(&q, k, acc[1]);
    at0[at] = (uint8_t)v0;
    at1[at] = (uint8_t)v1;
  }
}

// One channel's outputs on the float stage from doubled accumulators (the
// depthwise DSP paths): output (y, x) of `rows` x `cols` from
// (acc[y * pitch + x * step] + add2) / 2, exact (both even, the sum below
// 2^31: `small`), for the channel's float entry `k`, stored at
// out + y * out_sh + x * out_sw.
static __attribute__((noinline, unused)) void npukit_s8_float_doubled(const npukit_s8_float_t* f, const int32_t* acc,
                                                                     int32_t rows, int32_t cols, int32_t pitch,
                                                                     int32_t step, int32_t add2, const float* k,
                                                                     uint8_t* out, int32_t out_sh, int32_t out_sw) {
  const npukit_s8_float_clamp_t q = f->out_clamp;
  const float kk[3] = {k[0], k[1], k[2]};
  for (int32_t y = 0; y < rows; ++y, acc += pitch, out += out_sh) {
    const int32_t* a = acc;
    uint8_t* to = out;
    for (int32_t x = 0; x < cols; ++x, a += step, to += out_sw) {
      *to = (uint8_t)npukit_s8_float_one(&q, kk, (*a + add2) >> 1);
    }
  }
}

// npukit_s8_add_channels on the float stage: one output pixel's `n`
// consecutive channels, accumulators acc[0], acc[stride], ..., `table` their
// float entries, the residual from `res` every res_sc bytes, stored at `out`
// every out_sc bytes: the layer's int8 value, then the float ADD.
static __attribute__((noinline, unused)) void npukit_s8_float_add_channels(const npukit_s8_float_t* f,
                                                                          const int32_t* acc, int32_t stride,
                                                                          int32_t n, const float* table,
                                                                          const uint8_t* res, int32_t res_sc,
                                                                          uint8_t* out, int32_t out_sc) {
  const npukit_s8_float_clamp_t q = f->out_clamp, add = f->add_clamp;
  const float conv_zp = f->add_conv_zp, conv_scale = f->add_conv_scale;
  const float res_zp = f->add_res_zp, res_scale = f->add_res_scale;
  for (const int32_t* end = acc + n * stride; acc != end; acc += stride, table += 3, res += res_sc, out += out_sc) {
    const int32_t v = npukit_s8_float_one(&q, table, *acc);
    *out = (uint8_t)npukit_s8_float_clamped(
        &add, npukit_s8_float_add_sum(conv_zp, conv_scale, res_zp, res_scale, v, (int8_t)*res));
  }
}

static void npukit_s8_store_general(const npukit_s8_output_t* o, int32_t acc, int32_t c, int32_t at, int32_t y,
                                    int32_t x) {
  if (o->mode == NPUKIT_S8_OUT_INT32) {
    ((int32_t*)o->out)[at] = acc;
    return;
  }
  if (o->fl.table) {
    int32_t v = npukit_s8_float_output(&o->fl, acc, c);
    if (o->mode == NPUKIT_S8_OUT_ADD) v = npukit_s8_float_add(&o->fl, v, npukit_s8_residual(o, c, y, x));
    o->out[at] = (uint8_t)(int8_t)v;
    return;
  }
  int32_t v = o->once ? npukit_s8_scale_double(acc, o->scale + c)
                      : mynpu_requantize(acc, o->multiplier[c], o->shift[c]);
  v = mynpu_clamp(mynpu_sat32((int64_t)v + o->zp), o->act_min, o->act_max);
  if (o->mode == NPUKIT_S8_OUT_ADD) {
    const npukit_s8_add_t* k = &o->add;
    const int32_t r = npukit_s8_residual(o, c, y, x);
    const int32_t a = mynpu_requantize((v - k->conv_zp) * (1 << k->left_shift), k->conv_mult, k->conv_shift);
    const int32_t b = mynpu_requantize((r - k->res_zp) * (1 << k->left_shift), k->res_mult, k->res_shift);
    v = npukit_s8_add_result(k, a, b);
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
