// Layers with NPUKIT_S8_WEIGHTS_LANES weights (s8_lanes.h): the x86 vector
// kernels where the build has them and they take the layer, else plain C
// that reads the same weights (any target, any tensor strides, input
// padding tap by tap).
#include "s8_lanes.h"

#include "s8_output.h"
#include "s8_x86.h"

// Input channel ch of tap (i, j) of output pixel (y, x): PAD_VALUE outside the input.
static inline int32_t tap(const int32_t* p, size_t input, int32_t ch, int32_t y, int32_t x, int32_t i, int32_t j) {
  const int32_t iy = y * p[NPUKIT_S8_W_STRIDE_H] - p[NPUKIT_S8_W_PAD_TOP] + i * p[NPUKIT_S8_W_DILATION_H];
  const int32_t ix = x * p[NPUKIT_S8_W_STRIDE_W] - p[NPUKIT_S8_W_PAD_LEFT] + j * p[NPUKIT_S8_W_DILATION_W];
  if (iy < 0 || iy >= p[NPUKIT_S8_W_IN_H] || ix < 0 || ix >= p[NPUKIT_S8_W_IN_W]) {
    return (int8_t)p[NPUKIT_S8_W_PAD_VALUE];
  }
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  return in[ch * p[NPUKIT_S8_W_IN_SC] + iy * p[NPUKIT_S8_W_IN_SH] + ix * p[NPUKIT_S8_W_IN_SW]];
}

static void conv_lanes(const int32_t* p, size_t input, size_t output, size_t residual) {
  npukit_s8_lanes_k_t k;
  if (!npukit_s8_lanes_k(p, &k)) return;  // layer_kernels.py writes no other segment
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t zp = p[NPUKIT_S8_W_IN_ZP];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  for (int32_t y = 0; y < oh; ++y) {
    for (int32_t x = 0; x < ow; ++x) {
      for (int32_t c = 0; c < oc; ++c) {
        const int8_t* w = weights + c / NPUKIT_S8_LANE_BLOCK * k.groups * 64 + c % NPUKIT_S8_LANE_BLOCK * 4;
        int32_t acc = o.bias[c];
        for (int32_t i = 0, flat = 0; i < kh; ++i) {
          for (int32_t j = 0; j < kw; ++j) {
            for (int32_t ch = 0; ch < ic; ++ch, ++flat) {
              const int32_t s = flat / k.segment, pos = flat % k.segment;
              const int32_t g = s * k.segment_groups + pos / 4;
              const int32_t v = tap(p, input, ch, y, x, i, j) - zp;
              acc = (int32_t)((uint32_t)acc + (uint32_t)(v * w[g * 64 + pos % 4]));
            }
          }
        }
        npukit_s8_store(&o, acc, c, y, x);
      }
    }
  }
}

static void depthwise_lanes(const int32_t* p, size_t input, size_t output, size_t residual) {
  const int32_t channels = p[NPUKIT_S8_W_OUT_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W], groups = (kh * kw + 3) / 4;
  const int32_t zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;  // input channel c / m
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  for (int32_t y = 0; y < oh; ++y) {
    for (int32_t x = 0; x < ow; ++x) {
      for (int32_t c = 0; c < channels; ++c) {
        int32_t acc = o.bias[c];
        for (int32_t i = 0; i < kh; ++i) {
          for (int32_t j = 0; j < kw; ++j) {
            const int32_t v = tap(p, input, c / m, y, x, i, j) - zp;
            acc = (int32_t)((uint32_t)acc + (uint32_t)(v * weights[npukit_s8_dw_weight_at(c, i * kw + j, groups)]));
          }
        }
        npukit_s8_store(&o, acc, c, y, x);
      }
    }
  }
}

void npukit_s8_lanes(const int32_t* p, size_t input, size_t output, size_t residual) {
  if (p[NPUKIT_S8_W_KIND] == NPUKIT_S8_DEPTHWISE) {
#if NPUKIT_S8_X86
    if (npukit_s8_x86_tables(p) && npukit_s8_x86_run(p, input, output, residual, npukit_s8_depthwise_lanes_x86,
                                                       NPUKIT_S8_STRIP_CHANNELS_LAST)) {
      return;
    }
#endif
    depthwise_lanes(p, input, output, residual);
  } else {
#if NPUKIT_S8_X86
    if (npukit_s8_x86_tables(p) &&
        npukit_s8_x86_run(p, input, output, residual, npukit_s8_conv_lanes_x86, NPUKIT_S8_STRIP_FLIPPED)) {
      return;
    }
#endif
    conv_lanes(p, input, output, residual);
  }
}
