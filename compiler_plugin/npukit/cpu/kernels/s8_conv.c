// Convolution, 1x1 convolution and fully connected layers: for each pair of
// output pixels, both receptive fields are gathered into int16 columns with
// the input zero point subtracted (im2col), then each pair of output
// channels is a 2x2 block of dot products over K.
//
// On cores with the DSP extension the dot product takes two int16 products
// per instruction (SMLAD). Its weights are sign-extended four at a time with
// SXTB16, which yields bytes (0, 2) and (1, 3); the columns are therefore
// written in that order within each group of four, and the weights stay in
// their natural order. Weights come in channel pairs, [OUT_C / 2][K_PADDED / 4]
// [2][4] (an odd last channel is paired with zero weights).
#include "s8_output.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#define NPUKIT_S8_PAIRED 1
#else
#define NPUKIT_S8_PAIRED 0
#endif

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual);

// Columns and weights are blocked for the 2x2 dot product: in each group of
// four K indices, the two pixels' columns (and the two channels' weights) sit
// side by side, [K_PADDED / 4][2][4], so one pass reads both with
// consecutive loads.
static inline int32_t column_slot(int32_t k, int32_t pixel) {
  int32_t r = k & 3;
#if NPUKIT_S8_PAIRED
  r = r == 1 ? 2 : r == 2 ? 1 : r;
#endif
  return (k & ~3) * 2 + pixel * 4 + r;
}

static void im2col(const int32_t* p, const int8_t* in, int32_t oy, int32_t ox, int16_t* columns, int32_t pixel) {
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kh = p[NPUKIT_S8_W_KERNEL_H], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t sc = p[NPUKIT_S8_W_IN_SC], sh = p[NPUKIT_S8_W_IN_SH], sw = p[NPUKIT_S8_W_IN_SW];
  const int32_t zp = p[NPUKIT_S8_W_IN_ZP];
  const int32_t y0 = oy * p[NPUKIT_S8_W_STRIDE_H], x0 = ox * p[NPUKIT_S8_W_STRIDE_W];
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H], dx = p[NPUKIT_S8_W_DILATION_W];
  int32_t k = 0;
  for (int32_t i = 0; i < kh; ++i) {
    for (int32_t j = 0; j < kw; ++j) {
      const int8_t* at = in + (y0 + i * dy) * sh + (x0 + j * dx) * sw;
      for (int32_t c = 0; c < ic; ++c, ++k) columns[column_slot(k, pixel)] = (int16_t)(at[c * sc] - zp);
    }
  }
  for (; k < p[NPUKIT_S8_W_K_PADDED]; ++k) columns[column_slot(k, pixel)] = 0;
}

#if NPUKIT_S8_PAIRED
static inline int32_t sxtb16_ror8(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
#endif

// acc[i][j] += column j . weights of channel i, over k_padded.
static inline void dot_2x2(const int16_t* columns, const int8_t* weights, int32_t k_padded, int32_t acc[2][2]) {
  int32_t a00 = acc[0][0], a01 = acc[0][1], a10 = acc[1][0], a11 = acc[1][1];
#if NPUKIT_S8_PAIRED
  const int32_t* c = (const int32_t*)columns;
  const int32_t* w = (const int32_t*)weights;
  const int32_t* end = w + k_padded / 2;
  while (w != end) {
    int32_t x0a = c[0], x0b = c[1], x1a = c[2], x1b = c[3], wa = w[0], wb = w[1];
    c += 4, w += 2;
    int32_t wa02 = __sxtb16(wa), wa13 = sxtb16_ror8(wa);
    a00 = __smlad(x0a, wa02, a00);
    a00 = __smlad(x0b, wa13, a00);
    a01 = __smlad(x1a, wa02, a01);
    a01 = __smlad(x1b, wa13, a01);
    int32_t wb02 = __sxtb16(wb), wb13 = sxtb16_ror8(wb);
    a10 = __smlad(x0a, wb02, a10);
    a10 = __smlad(x0b, wb13, a10);
    a11 = __smlad(x1a, wb02, a11);
    a11 = __smlad(x1b, wb13, a11);
  }
#else
  for (int32_t g = 0; g < k_padded; g += 4) {
    const int16_t* c = columns + 2 * g;
    const int8_t* w = weights + 2 * g;
    for (int32_t r = 0; r < 4; ++r) {
      a00 += c[r] * w[r];
      a01 += c[4 + r] * w[r];
      a10 += c[r] * w[4 + r];
      a11 += c[4 + r] * w[4 + r];
    }
  }
#endif
  acc[0][0] = a00, acc[0][1] = a01, acc[1][0] = a10, acc[1][1] = a11;
}

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t k_padded = p[NPUKIT_S8_W_K_PADDED];
  const int8_t* in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET];
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  int16_t columns[2 * NPUKIT_S8_MAX_K] __attribute__((aligned(8)));
  const int32_t pixels = oh * ow;
  for (int32_t px = 0; px < pixels; px += 2) {
    const int32_t count = pixels - px >= 2 ? 2 : 1;
    int32_t y[2], x[2];
    for (int32_t i = 0; i < 2; ++i) {
      int32_t at = px + (i < count ? i : 0);
      y[i] = at / ow, x[i] = at % ow;
      im2col(p, in, y[i], x[i], columns, i);
    }
    for (int32_t c = 0; c < oc; c += 2) {
      const int32_t pair = oc - c >= 2;
      int32_t acc[2][2] = {{o.bias[c], o.bias[c]}, {o.bias[c + pair], o.bias[c + pair]}};
      dot_2x2(columns, weights + c * k_padded, k_padded, acc);
      for (int32_t j = 0; j < count; ++j) {
        npukit_s8_store(&o, acc[0][j], c, y[j], x[j]);
        if (pair) npukit_s8_store(&o, acc[1][j], c + 1, y[j], x[j]);
      }
    }
  }
}
