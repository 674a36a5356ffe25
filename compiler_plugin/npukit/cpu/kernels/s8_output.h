// The output stage shared by the layer kernels: TFLite's fixed-point
// requantization (the arithmetic of the mynpu device, requantize.h), the
// output zero point, the activation clamp, the optional int8 ADD with a
// residual tensor, and the store. The layer's constants are read once into
// npukit_s8_output_t; per output the common case (no left shift, int8 out)
// is a few integer instructions.
#ifndef NPUKIT_CPU_KERNELS_S8_OUTPUT_H_
#define NPUKIT_CPU_KERNELS_S8_OUTPUT_H_

#include "requantize.h"
#include "s8_layer.h"

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
  return o;
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
