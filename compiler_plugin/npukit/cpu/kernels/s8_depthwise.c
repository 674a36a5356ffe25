// Depthwise convolution: one filter of KERNEL_H x KERNEL_W taps per channel.
// The input zero point is taken out once per channel (zp * sum of its
// weights), so the inner loop multiplies the int8 values as they are.
#include "s8_output.h"

void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual);

// One channel; `kh` and `kw` are constants where the caller specializes it,
// so the compiler unrolls the window.
static inline __attribute__((always_inline)) void channel(const int32_t* p, const npukit_s8_output_t* o,
                                                          const int8_t* plane, const int8_t* w, int32_t c,
                                                          int32_t kh, int32_t kw) {
  const int32_t oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh, step_x = p[NPUKIT_S8_W_STRIDE_W] * sw;
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * sh, dx = p[NPUKIT_S8_W_DILATION_W] * sw;
  int32_t base = o->bias[c];
  for (int32_t t = 0; t < kh * kw; ++t) base -= p[NPUKIT_S8_W_IN_ZP] * w[t];
  for (int32_t y = 0; y < oh; ++y) {
    const int8_t* at = plane + y * step_y;
    for (int32_t x = 0; x < ow; ++x, at += step_x) {
      int32_t acc = base;
      for (int32_t i = 0; i < kh; ++i) {
        for (int32_t j = 0; j < kw; ++j) acc += at[i * dy + j * dx] * w[i * kw + j];
      }
      npukit_s8_store(o, acc, c, y, x);
    }
  }
}

void npukit_s8_depthwise(const int32_t* p, size_t input, size_t output, size_t residual) {
  const int32_t channels = p[NPUKIT_S8_W_OUT_C];
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  for (int32_t c = 0; c < channels; ++c) {
    const int8_t* plane = in + c * p[NPUKIT_S8_W_IN_SC];
    const int8_t* w = weights + c * kh * kw;
    if (kh == 3 && kw == 3) {
      channel(p, &o, plane, w, c, 3, 3);
    } else {
      channel(p, &o, plane, w, c, kh, kw);
    }
  }
}
