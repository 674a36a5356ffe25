// Layers with NPUKIT_S8_WEIGHTS_LANES weights (s8_lanes.h): the x86 vector
// kernels where the build has them and they take the layer, else plain C
// that reads the same weights (any target, any tensor strides).
#include "s8_lanes.h"

#include "s8_output.h"
#include "s8_x86.h"

static void conv_lanes(const int32_t* p, size_t input, size_t output, size_t residual) {
  npukit_s8_lanes_k_t k;
  if (!npukit_s8_lanes_k(p, &k)) return;  // layer_kernels.py writes no other segment
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * sh, dx = p[NPUKIT_S8_W_DILATION_W] * sw;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh, step_x = p[NPUKIT_S8_W_STRIDE_W] * sw;
  const int32_t zp = p[NPUKIT_S8_W_IN_ZP];
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  for (int32_t y = 0; y < oh; ++y) {
    for (int32_t x = 0; x < ow; ++x) {
      const int8_t* at = in + y * step_y + x * step_x;
      for (int32_t c = 0; c < oc; ++c) {
        const int8_t* w = weights + c / NPUKIT_S8_LANE_BLOCK * k.groups * 64 + c % NPUKIT_S8_LANE_BLOCK * 4;
        int32_t acc = o.bias[c];
        for (int32_t i = 0, flat = 0; i < kh; ++i) {
          for (int32_t j = 0; j < kw; ++j) {
            for (int32_t ch = 0; ch < ic; ++ch, ++flat) {
              const int32_t s = flat / k.segment, pos = flat % k.segment;
              const int32_t g = s * k.segment_groups + pos / 4;
              const int32_t v = at[i * dy + j * dx + ch * sc] - zp;
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
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * sh, dx = p[NPUKIT_S8_W_DILATION_W] * sw;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh, step_x = p[NPUKIT_S8_W_STRIDE_W] * sw;
  const int32_t zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t m = p[NPUKIT_S8_W_MULTIPLIER] > 1 ? p[NPUKIT_S8_W_MULTIPLIER] : 1;  // input channel c / m
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  for (int32_t y = 0; y < oh; ++y) {
    for (int32_t x = 0; x < ow; ++x) {
      for (int32_t c = 0; c < channels; ++c) {
        const int8_t* at = in + y * step_y + x * step_x + c / m * sc;
        int32_t acc = o.bias[c];
        for (int32_t i = 0; i < kh; ++i) {
          for (int32_t j = 0; j < kw; ++j) {
            const int32_t v = at[i * dy + j * dx] - zp;
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
    if (npukit_s8_x86_tables(p) && npukit_s8_depthwise_lanes_x86(p, input, output, residual)) return;
#endif
    depthwise_lanes(p, input, output, residual);
  } else {
#if NPUKIT_S8_X86
    if (npukit_s8_x86_tables(p) && npukit_s8_conv_lanes_x86(p, input, output, residual)) return;
#endif
    conv_lanes(p, input, output, residual);
  }
}
