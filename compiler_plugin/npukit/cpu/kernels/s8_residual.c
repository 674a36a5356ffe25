// The residual of an ADD when it is another layer's int32 accumulators
// (RES_BIAS_AT set): IREE fused that layer's output stage into the ADD's
// dispatch, so the accumulators arrive unrequantized. They are given that
// layer's TFLite output stage here and written as int8 into the output
// tensor, where the ADD reads each one just before it overwrites it.
#include "requantize.h"
#include "s8_layer.h"
#include "s8_output.h"

void npukit_s8_residual_int8(const int32_t* p, size_t residual, size_t output);

// One channel's rows for a right shift e = 0..31 and a non-negative
// multiplier (every quantized layer's); the clamp is taken before the zero
// point is added so nothing overflows.
static __attribute__((noinline)) void right_shift_rows(const int32_t* from, int32_t rows, int32_t cols,
                                                      int32_t from_h, int32_t from_w, int8_t* to, int32_t to_h,
                                                      int32_t to_w, int32_t bias, int32_t m, int32_t e, int32_t lo,
                                                      int32_t hi, int32_t zp) {
  const int32_t mask = (int32_t)((1u << e) - 1u), half = mask >> 1;
  for (int32_t y = 0; y < rows; ++y, from += from_h, to += to_h) {
    for (int32_t x = 0; x < cols; ++x) {
      const int32_t v = npukit_s8_requantize_right(from[x * from_w], bias, m, e, mask, half);
      to[x * to_w] = (int8_t)(mynpu_clamp(v, lo, hi) + zp);
    }
  }
}

void npukit_s8_residual_int8(const int32_t* p, size_t residual, size_t output) {
  const int32_t* acc = (const int32_t*)(residual + (size_t)p[NPUKIT_S8_W_RES_OFFSET]);
  int8_t* out = (int8_t*)(output + (size_t)p[NPUKIT_S8_W_OUT_OFFSET]);
  const int32_t* bias = p + p[NPUKIT_S8_W_RES_BIAS_AT];
  const int32_t* multiplier = p + p[NPUKIT_S8_W_RES_MULTIPLIER_AT];
  const int32_t* shift = p + p[NPUKIT_S8_W_RES_SHIFT_AT];
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], rows = p[NPUKIT_S8_W_OUT_H], cols = p[NPUKIT_S8_W_OUT_W];
  const int32_t rc = p[NPUKIT_S8_W_RES_SC], rh = p[NPUKIT_S8_W_RES_SH], rw = p[NPUKIT_S8_W_RES_SW];
  const int32_t oc = p[NPUKIT_S8_W_OUT_SC], oh = p[NPUKIT_S8_W_OUT_SH], ow = p[NPUKIT_S8_W_OUT_SW];
  const int32_t zp = p[NPUKIT_S8_W_ADD_RES_ZP];
  const int32_t lo = p[NPUKIT_S8_W_RES_ACT_MIN], hi = p[NPUKIT_S8_W_RES_ACT_MAX];
  for (int32_t c = 0; c < channels; ++c) {
    const int32_t b = bias[c], m = multiplier[c], s = shift[c];
    if (s <= 0 && s >= -31 && m >= 0) {
      right_shift_rows(acc + c * rc, rows, cols, rh, rw, out + c * oc, oh, ow, b, m, -s, lo - zp, hi - zp, zp);
      continue;
    }
    for (int32_t y = 0; y < rows; ++y) {
      for (int32_t x = 0; x < cols; ++x) {
        const int32_t a = (int32_t)((uint32_t)acc[c * rc + y * rh + x * rw] + (uint32_t)b);
        out[c * oc + y * oh + x * ow] = (int8_t)mynpu_clamp(mynpu_sat32((int64_t)mynpu_requantize(a, m, s) + zp), lo, hi);
      }
    }
  }
}
