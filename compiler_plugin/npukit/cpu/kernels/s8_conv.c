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
// [2][4] (an odd last channel is paired with zero weights); on DSP cores a
// layer may have them widened to int16 in the columns' order
// (NPUKIT_S8_WEIGHTS_INT16), which takes the SXTB16s out of the dot product.
//
// A reduction longer than NPUKIT_S8_K_CHUNK is taken a chunk at a time (its
// weights chunk by chunk, s8_layer.h): per pixel pair and block of output
// channels, each chunk's columns are gathered and its dot products added to
// the block's int32 sums, so the columns on the stack stay at one chunk's.
#include "s8_output.h"
#include "s8_strip.h"

#if defined(__ARM_FEATURE_DSP)
#define NPUKIT_S8_PAIRED 1
#else
#define NPUKIT_S8_PAIRED 0
#endif

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual);

// Output channels whose accumulators are requantized together (even).
#define BLOCK 64

// What im2col needs of the layer, read once from the block.
typedef struct {
  const int8_t* in;
  int32_t ic, kh, kw, sc, sh, sw, stride_h, stride_w, dy, dx, zp, k, k_padded;
  int32_t less_zp;  // -zp in both halfwords, for SXTAB16
  // Input padding (s8_layer.h): taps outside rows 0 .. ih - 1 or columns 0 .. iw - 1 read `pad`.
  int32_t ih, iw, top, left, pad;
  // The bytes from `in` that may be read: the input tensor's last byte + 1, or a strip's rows and the 4 bytes
  // after them.
  int32_t limit;
} gather_t;

// A pixel's receptive field: its first tap at input row iy, column ix (negative in the padding), at byte
// `at` of the input when `inside` (every tap within the input).
typedef struct {
  int32_t iy, ix, at, inside;
} field_t;

static inline field_t receptive_field(const gather_t* g, int32_t y, int32_t x) {
  field_t f;
  f.iy = y * g->stride_h - g->top, f.ix = x * g->stride_w - g->left;
  f.inside = f.iy >= 0 && f.ix >= 0 && f.iy + (g->kh - 1) * g->dy < g->ih && f.ix + (g->kw - 1) * g->dx < g->iw;
  f.at = f.inside ? f.iy * g->sh + f.ix * g->sw : 0;
  return f;
}

// Words read at any byte address (an input tensor's taps).
typedef int32_t __attribute__((aligned(1), may_alias)) npukit_s8_unaligned_word_t;

#if NPUKIT_S8_PAIRED
// Bytes 0 and 2 (even) or 1 and 3 (odd) of w less the zero point, in two halfwords: one SXTAB16 onto -zp in
// both halves (`less_zp`; |x - zp| <= 255), and with `twice` doubled (SADD16), as npukit_s8_conv_few_dsp takes
// its columns.
static inline __attribute__((always_inline)) int32_t less_zp_even(int32_t w, int32_t less_zp, int32_t twice) {
  const int32_t v = (int32_t)__sxtab16(less_zp, w);
  return twice ? (int32_t)__sadd16(v, v) : v;
}
static inline __attribute__((always_inline)) int32_t less_zp_odd(int32_t w, int32_t less_zp, int32_t twice) {
  const int32_t v = npukit_s8_sxtab16_ror8(less_zp, w);
  return twice ? (int32_t)__sadd16(v, v) : v;
}
#endif

// `n` int8 values of one pixel's receptive field (`row`, n a multiple of 4)
// into its half of `columns`, four at a time with the zero point subtracted
// (and doubled with `twice`, DSP cores only).
static inline __attribute__((always_inline)) void widen(const gather_t* gp, const int8_t* restrict row, int32_t n,
                                                        int16_t* restrict columns, int32_t pixel, int32_t twice) {
  const gather_t g = *gp;
  npukit_s8_word_t* out = (npukit_s8_word_t*)columns + pixel * 2;
  const npukit_s8_unaligned_word_t* words = (const npukit_s8_unaligned_word_t*)row;
  const npukit_s8_unaligned_word_t* end = words + n / 4;
#if NPUKIT_S8_PAIRED
  for (; words != end; ++words, out += 4) {
    const int32_t w = *words;
    out[0] = less_zp_even(w, g.less_zp, twice);
    out[1] = less_zp_odd(w, g.less_zp, twice);
  }
#else
  (void)twice;
  for (; words != end; ++words, out += 4) {
    const int8_t* b = (const int8_t*)words;
    npukit_s8_half_t* o16 = (npukit_s8_half_t*)out;
    for (int32_t r = 0; r < 4; ++r) o16[r] = (int16_t)(b[r] - g.zp);
  }
#endif
}

// A receptive field that reaches into the padding, tap by tap: a tap
// outside the input gives its channels the padding value.
static void im2col_border(const gather_t* gp, const field_t* f, int8_t* restrict row, int16_t* restrict columns,
                          int32_t pixel) {
  const gather_t g = *gp;
  int8_t* to = row;
  for (int32_t i = 0; i < g.kh; ++i) {
    const int32_t iy = f->iy + i * g.dy;
    for (int32_t j = 0; j < g.kw; ++j) {
      const int32_t ix = f->ix + j * g.dx;
      if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) {
        for (int32_t c = 0; c < g.ic; ++c) *to++ = (int8_t)g.pad;
        continue;
      }
      const int8_t* at = g.in + iy * g.sh + ix * g.sw;
      for (int32_t c = 0; c < g.ic; ++c, at += g.sc) *to++ = *at;
    }
  }
  widen(&g, row, g.k_padded, columns, pixel, 0);
}

// Pixel `pixel`'s (0 or 1) receptive field at byte `offset` of the input
// into `columns`, [K_PADDED / 4][2][4] int16: each group of four K indices of
// both pixels side by side, so the dot product reads them consecutively. The
// values are first gathered as int8 into `row` (K_PADDED bytes), then widened
// four at a time with the zero point subtracted. Where a kernel row's taps
// and channels lie side by side (channel-last input, dilation 1 along x, or
// one channel with contiguous taps) in a multiple of 4, each kernel row is
// widened from the input in place (otherwise copied as one run each); where
// only each tap's channels do, each tap is.
static void im2col(const gather_t* gp, int32_t offset, int8_t* restrict row, int16_t* restrict columns,
                   int32_t pixel, int32_t twice) {
  const gather_t g = *gp;  // locals: the byte stores below cannot change them
  const int8_t* base = g.in + offset;
  const int32_t run = g.kw * g.ic;  // a kernel row's values
  const int32_t rows_contiguous = (g.sc == 1 || g.ic == 1) && g.dx * g.sw == g.ic;
  if (rows_contiguous && (run & 3) == 0) {
    for (int32_t i = 0; i < g.kh; ++i, columns += 2 * run) widen(&g, base + i * g.dy * g.sh, run, columns, pixel, twice);
    return;  // K = K_PADDED
  }
  if (rows_contiguous) {  // each kernel row one run of bytes
#if NPUKIT_S8_PAIRED
    // A word at a time where the last row's last word stays within the input (each row's words then run up to 3
    // bytes on, into the next row's place in `row` or past K: `row` has 4 bytes more).
    const int32_t words = (run + 3) >> 2;
    if (offset + (g.kh - 1) * g.dy * g.sh + 4 * words <= g.limit) {
      for (int32_t i = 0; i < g.kh; ++i) {
        const npukit_s8_unaligned_word_t* from = (const npukit_s8_unaligned_word_t*)(base + i * g.dy * g.sh);
        npukit_s8_unaligned_word_t* to = (npukit_s8_unaligned_word_t*)(row + i * run);
        for (int32_t w = 0; w < words; ++w) to[w] = from[w];
      }
      widen(&g, row, g.k_padded, columns, pixel, twice);
      return;
    }
#endif
    int8_t* to = row;
    for (int32_t i = 0; i < g.kh; ++i) {
      const int8_t* at = base + i * g.dy * g.sh;
      for (const int8_t* end = at + run; at != end; ++at) *to++ = *at;
    }
    widen(&g, row, g.k_padded, columns, pixel, twice);
    return;
  }
  if (g.sc == 1 && (g.ic & 3) == 0) {
    for (int32_t i = 0; i < g.kh; ++i) {
      for (int32_t j = 0; j < g.kw; ++j, columns += 2 * g.ic) {
        widen(&g, base + i * g.dy * g.sh + j * g.dx * g.sw, g.ic, columns, pixel, twice);
      }
    }
    return;  // K = K_PADDED
  }
  int8_t* to = row;
  for (int32_t i = 0; i < g.kh; ++i) {
    for (int32_t j = 0; j < g.kw; ++j) {
      const int8_t* at = base + i * g.dy * g.sh + j * g.dx * g.sw;
      int32_t c = g.ic;
      for (; c >= 4; c -= 4, at += 4 * g.sc, to += 4) {
        to[0] = at[0], to[1] = at[g.sc], to[2] = at[2 * g.sc], to[3] = at[3 * g.sc];
      }
      for (; c > 0; --c, at += g.sc) *to++ = *at;
    }
  }
  widen(&g, row, g.k_padded, columns, pixel, twice);
}

// A chunk's K indices [k0, k0 + n) of pixel `pixel`'s receptive field `f`
// into `columns` (n / 4 groups), as im2col does for all of K; indices past
// K (its padding) are zeros, taps in the input padding its value.
static void im2col_chunk(const gather_t* gp, const field_t* f, int32_t k0, int32_t n, int8_t* restrict row,
                         int16_t* restrict columns, int32_t pixel) {
  const gather_t g = *gp;
  const int32_t end = k0 + n < g.k ? k0 + n : g.k;
  int32_t c = k0 % g.ic, j = k0 / g.ic % g.kw, i = k0 / g.ic / g.kw;
  int8_t* to = row;
  for (int32_t k = k0; k < end;) {
    const int32_t iy = f->iy + i * g.dy, ix = f->ix + j * g.dx;
    const int32_t run = g.ic - c < end - k ? g.ic - c : end - k;  // this tap's channels in the chunk
    if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) {
      for (int32_t r = 0; r < run; ++r) *to++ = (int8_t)g.pad;
    } else {
      const int8_t* at = g.in + iy * g.sh + ix * g.sw + c * g.sc;
      for (int32_t r = 0; r < run; ++r, at += g.sc) *to++ = *at;
    }
    k += run, c = 0;
    if (++j == g.kw) j = 0, ++i;
  }
  for (int32_t k = end; k < k0 + n; ++k) *to++ = 0;
  widen(&g, row, n, columns, pixel, 0);
}

#if NPUKIT_S8_PAIRED
typedef uint16_t __attribute__((aligned(1), may_alias)) unaligned_half_t;

// Both pixels' columns when pixel 1's receptive field is pixel 0's one byte
// further on (neighbours along contiguous rows) and IN_C is a multiple of 4:
// one halfword load reads a K index of both pixels, PKHBT pairs two of them,
// and SXTB16 (plain / ROR #8) splits pixel 0's values from pixel 1's.
static inline __attribute__((always_inline)) void neighbours_body(const gather_t* gp, int32_t offset,
                                                                  int16_t* restrict columns, int32_t twice) {
  const gather_t g = *gp;
  const int32_t sc = g.sc, zz = g.less_zp;
  npukit_s8_word_t* out = (npukit_s8_word_t*)columns;
  const int8_t* base = g.in + offset;
  for (int32_t i = 0; i < g.kh; ++i) {
    for (int32_t j = 0; j < g.kw; ++j) {
      const int8_t* at = base + i * g.dy * g.sh + j * g.dx * g.sw;
      for (int32_t c = 0; c < g.ic; c += 4, at += 4 * sc, out += 4) {
        const uint32_t h0 = *(const unaligned_half_t*)at, h1 = *(const unaligned_half_t*)(at + sc);
        const uint32_t h2 = *(const unaligned_half_t*)(at + 2 * sc), h3 = *(const unaligned_half_t*)(at + 3 * sc);
        const int32_t even = (int32_t)(h0 | h2 << 16), odd = (int32_t)(h1 | h3 << 16);  // channels (0, 2), (1, 3)
        out[0] = less_zp_even(even, zz, twice);
        out[1] = less_zp_even(odd, zz, twice);
        out[2] = less_zp_odd(even, zz, twice);
        out[3] = less_zp_odd(odd, zz, twice);
      }
    }
  }
}

// Both pixels' columns where each kernel row's values lie side by side in a
// multiple of 4 (im2col's first case): per group of four, one word of each
// pixel's input, sign-extended and less the zero point, in one pass over
// the kernel rows (no call per pixel).
static inline __attribute__((always_inline)) void rows_pair_body(const gather_t* gp, int32_t at0, int32_t at1,
                                                                 int16_t* restrict columns, int32_t twice) {
  const int32_t zz = gp->less_zp, run = gp->kw * gp->ic, row_step = gp->dy * gp->sh;
  const int8_t* base0 = gp->in + at0;
  const int8_t* base1 = gp->in + at1;
  npukit_s8_word_t* out = (npukit_s8_word_t*)columns;
  for (int32_t i = 0; i < gp->kh; ++i, base0 += row_step, base1 += row_step) {
    const npukit_s8_unaligned_word_t* a = (const npukit_s8_unaligned_word_t*)base0;
    const npukit_s8_unaligned_word_t* b = (const npukit_s8_unaligned_word_t*)base1;
    for (const npukit_s8_unaligned_word_t* end = a + run / 4; a != end; ++a, ++b, out += 4) {
      const int32_t wa = *a, wb = *b;
      out[0] = less_zp_even(wa, zz, twice);
      out[1] = less_zp_odd(wa, zz, twice);
      out[2] = less_zp_even(wb, zz, twice);
      out[3] = less_zp_odd(wb, zz, twice);
    }
  }
}

// Both pixels' columns where each kernel row's values lie side by side (im2col's second case: not a multiple of
// 4, as in a layer of one or three input channels) and the rows' word reads stay within `limit`: per pixel its
// kernel rows a word at a time into `row` (K_PADDED + 4 bytes), one after the other, then widened (the layer's
// words read once, loops with one test an iteration).
static inline __attribute__((always_inline)) void short_rows_pair_body(const gather_t* gp, int32_t at0, int32_t at1,
                                                                       int8_t* restrict row,
                                                                       int16_t* restrict columns, int32_t twice) {
  const int32_t run = gp->kw * gp->ic, words = (run + 3) >> 2, row_step = gp->dy * gp->sh;
  const int32_t kh = gp->kh, zz = gp->less_zp;
  const npukit_s8_unaligned_word_t* const groups_end = (const npukit_s8_unaligned_word_t*)row + (gp->k_padded >> 2);
  const int8_t* const in = gp->in;
  for (int32_t pixel = 0; pixel < 2; ++pixel) {
    const int8_t* from = in + (pixel ? at1 : at0);
    int8_t* to = row;
    if (words == 1) {
      for (int32_t i = kh; i > 0; --i, from += row_step, to += run) {
        *(npukit_s8_unaligned_word_t*)to = *(const npukit_s8_unaligned_word_t*)from;
      }
    } else {
      for (int32_t i = kh; i > 0; --i, from += row_step, to += run) {
        for (int32_t w = 0; w < words; ++w) {
          ((npukit_s8_unaligned_word_t*)to)[w] = ((const npukit_s8_unaligned_word_t*)from)[w];
        }
      }
    }
    npukit_s8_word_t* out = (npukit_s8_word_t*)columns + 2 * pixel;
    for (const npukit_s8_unaligned_word_t* r = (const npukit_s8_unaligned_word_t*)row; r != groups_end;
         ++r, out += 4) {
      const int32_t w = *r;
      out[0] = less_zp_even(w, zz, twice);
      out[1] = less_zp_odd(w, zz, twice);
    }
  }
}

// The gathers above as functions of their own, their columns as they are (for the dot products) or doubled
// (_twice, for npukit_s8_conv_few_dsp): `twice` a constant in each, and their loops out of the pixel-pair loops'
// registers.
static __attribute__((noinline)) void im2col_neighbours(const gather_t* g, int32_t offset, int16_t* columns) {
  neighbours_body(g, offset, columns, 0);
}
static __attribute__((noinline)) void im2col_neighbours_twice(const gather_t* g, int32_t offset, int16_t* columns) {
  neighbours_body(g, offset, columns, 1);
}
static __attribute__((noinline)) void im2col_rows_pair(const gather_t* g, int32_t at0, int32_t at1,
                                                       int16_t* columns) {
  rows_pair_body(g, at0, at1, columns, 0);
}
static __attribute__((noinline)) void im2col_rows_pair_twice(const gather_t* g, int32_t at0, int32_t at1,
                                                             int16_t* columns) {
  rows_pair_body(g, at0, at1, columns, 1);
}
static __attribute__((noinline)) void im2col_short_rows_pair(const gather_t* g, int32_t at0, int32_t at1,
                                                             int8_t* row, int16_t* columns) {
  short_rows_pair_body(g, at0, at1, row, columns, 0);
}
static __attribute__((noinline)) void im2col_short_rows_pair_twice(const gather_t* g, int32_t at0, int32_t at1,
                                                                   int8_t* row, int16_t* columns) {
  short_rows_pair_body(g, at0, at1, row, columns, 1);
}

// s8_dot_dsp.S
void npukit_s8_dot_pairs_dsp(const int16_t* columns, const int8_t* weights, int32_t k_padded, const int32_t* bias,
                             int32_t pairs, int32_t* out);
void npukit_s8_dot_pairs_dsp16(const int16_t* columns, const int8_t* weights, int32_t k_padded, const int32_t* bias,
                               int32_t pairs, int32_t* out);

// s8_requantize_dsp.S: npukit_s8_requantize_pairs for channel-last outputs
// (sc 1) and an even number of channels, the bounds as bytes (_full: those
// of int8, 0x7f80).
void npukit_s8_requantize_pairs_dsp(const int32_t* acc, int32_t n, const int32_t* multiplier, const int32_t* shift,
                                    int32_t zp, int32_t bounds, uint8_t* at0, uint8_t* at1);
void npukit_s8_requantize_pairs_full_dsp(const int32_t* acc, int32_t n, const int32_t* multiplier,
                                         const int32_t* shift, int32_t zp, int32_t bounds, uint8_t* at0, uint8_t* at1);

static inline void dot_pairs(const int16_t* columns, const int8_t* weights, int32_t k_padded, const int32_t* bias,
                             int32_t pairs, int32_t* out, int32_t wide) {
  if (wide) {
    npukit_s8_dot_pairs_dsp16(columns, weights, k_padded, bias, pairs, out);
  } else {
    npukit_s8_dot_pairs_dsp(columns, weights, k_padded, bias, pairs, out);
  }
}
#else
// One channel pair or two (`quad`) against both columns: out[2c + i][j] =
// bias[2c + i] + column j . weights of channel 2c + i, over k_padded. Two
// pairs at a time load each column value once for four channels.
static inline __attribute__((always_inline)) void dot_block(const int16_t* columns, const int8_t* weights,
                                                            int32_t k_padded, const int32_t* bias, int32_t* out,
                                                            int32_t quad) {
  const int8_t* other = weights + 2 * k_padded;  // the second pair's weights
  int32_t a00 = bias[0], a01 = bias[0], a10 = bias[1], a11 = bias[1];
  int32_t b00 = quad ? bias[2] : 0, b01 = b00, b10 = quad ? bias[3] : 0, b11 = b10;
  for (int32_t g = 0; g < k_padded; g += 4) {
    const int16_t* c = columns + 2 * g;
    const int8_t* w = weights + 2 * g;
    const int8_t* v = other + 2 * g;
    for (int32_t r = 0; r < 4; ++r) {
      const int32_t c0 = c[r], c1 = c[4 + r];
      a00 += c0 * w[r], a01 += c1 * w[r], a10 += c0 * w[4 + r], a11 += c1 * w[4 + r];
      if (quad) b00 += c0 * v[r], b01 += c1 * v[r], b10 += c0 * v[4 + r], b11 += c1 * v[4 + r];
    }
  }
  out[0] = a00, out[1] = a01, out[2] = a10, out[3] = a11;
  if (quad) out[4] = b00, out[5] = b01, out[6] = b10, out[7] = b11;
}

// For each of `pairs` channel pairs, the 2x2 block of dot products.
static void dot_pairs(const int16_t* columns, const int8_t* weights, int32_t k_padded, const int32_t* bias,
                      int32_t pairs, int32_t* out, int32_t wide) {
  (void)wide;  // int16 weights are made for DSP cores only
  int32_t q = 0;
  for (; q + 2 <= pairs; q += 2, weights += 4 * k_padded, bias += 4, out += 8) {
    dot_block(columns, weights, k_padded, bias, out, 1);
  }
  if (q < pairs) dot_block(columns, weights, k_padded, bias, out, 0);
}
#endif

// A reduction longer than a chunk: for channels c0 .. c0 + 2 * pairs - 1
// (weights: the layer's, from c0 within each chunk) and the two pixels at
// at0 and at1, each chunk's columns then its dot products added to `block`,
// which starts from the bias.
static void dot_chunks(const gather_t* g, const field_t* f0, const field_t* f1, const int8_t* weights, int32_t c0,
                       int32_t channels_even, int32_t wide, const int32_t* bias, int32_t pairs, int32_t* block,
                       int16_t* columns, int8_t* row) {
  static const int32_t zeros[BLOCK] = {0};
  int32_t part[2 * BLOCK];
  const int32_t value_bytes = wide ? 2 : 1;
  for (int32_t k0 = 0; k0 < g->k_padded; k0 += NPUKIT_S8_K_CHUNK) {
    const int32_t n = g->k_padded - k0 < NPUKIT_S8_K_CHUNK ? g->k_padded - k0 : NPUKIT_S8_K_CHUNK;
    im2col_chunk(g, f0, k0, n, row, columns, 0);
    im2col_chunk(g, f1, k0, n, row, columns, 1);
    const int8_t* w = weights + value_bytes * ((int64_t)k0 * channels_even + (int64_t)c0 * n);
    if (k0 == 0) {
      dot_pairs(columns, w, n, bias, pairs, block, wide);
    } else {
      dot_pairs(columns, w, n, zeros, pairs, part, wide);
      for (int32_t i = 0; i < 4 * pairs; ++i) block[i] = (int32_t)((uint32_t)block[i] + (uint32_t)part[i]);
    }
  }
}

#if NPUKIT_S8_PAIRED
// How a pixel pair whose receptive fields lie inside the input is gathered (gather_inside_pair), from the
// layer.
typedef struct {
  int32_t rows_contiguous, rows_in_words, neighbours;
  int32_t short_end;  // the last offset whose kernel rows may be read as words (im2col_short_rows_pair)
} inside_gather_t;

static inline inside_gather_t inside_gather(const gather_t* g) {
  inside_gather_t h;
  h.rows_contiguous = (g->sc == 1 || g->ic == 1) && g->dx * g->sw == g->ic;
  h.rows_in_words = h.rows_contiguous && (g->kw * g->ic & 3) == 0;
  h.short_end = g->limit - (g->kh - 1) * g->dy * g->sh - 4 * ((g->kw * g->ic + 3) >> 2);
  h.neighbours = (g->ic & 3) == 0;  // and pixel 1's field one byte after pixel 0's (im2col_neighbours)
  return h;
}

// Both pixels' columns, their receptive fields at input offsets at0 and at1, inside the input.
static inline __attribute__((always_inline)) void gather_inside_pair(const gather_t* g, const inside_gather_t* how,
                                                                     int32_t at0, int32_t at1, int16_t* columns,
                                                                     int8_t* row, int32_t twice) {
  if (how->neighbours && at1 == at0 + 1) {
    if (twice) {
      im2col_neighbours_twice(g, at0, columns);
    } else {
      im2col_neighbours(g, at0, columns);
    }
  } else if (how->rows_in_words) {
    if (twice) {
      im2col_rows_pair_twice(g, at0, at1, columns);
    } else {
      im2col_rows_pair(g, at0, at1, columns);
    }
  } else if (how->rows_contiguous && at0 <= how->short_end && at1 <= how->short_end) {
    if (twice) {
      im2col_short_rows_pair_twice(g, at0, at1, row, columns);
    } else {
      im2col_short_rows_pair(g, at0, at1, row, columns);
    }
  } else {
    im2col(g, at0, row, columns, 0, twice);
    im2col(g, at1, row, columns, 1, twice);
  }
}

// TFLite's ADD of a pixel pair's outputs on the add_small path where the output and the residual are
// channel-last (sc 1): the layer's requantization, the ADD's operands from their tables and its own
// requantization, both pixels of a channel from one multiplier and shift. `conv` is npukit_s8_add_table's
// conv table + 128 with the layer's activation clamp folded in (add_fold_clamp: indexed by the output narrowed
// to int8 alone), `res` its residual table + 128. The ADD's output scaling has a right shift e of 1..31, taken
// as npukit_s8_scale takes the layer's: ((h + [h < 0]) >> (e - 1) + 2 zp + 1) >> 1, then SSAT; `clamp` (a
// constant in each caller) whether the ADD's activation range is narrower than int8.
typedef struct {
  const int32_t* conv;
  const int32_t* res;
  int32_t zp2;                            // 2 * the layer's output zero point + 1
  int32_t out_mult, out_e1, out_zp2;      // the ADD's multiplier, e - 1 and 2 * its zero point + 1
  int32_t lo, hi;                         // the ADD's activation range
} add_pairs_t;

// Channels [0, n) of both pixels, in two passes that each keep their constants in registers: the layer's
// requantization of each accumulator (`acc` as [n][2], overwritten) into its ADD operand from `conv`, then
// the ADD with the residual's operand (res0[c], res1[c]) and its output scaling, stored to out0[c] and
// out1[c] (each element's residual read before its output is written: the residual may be the output
// itself).
static inline __attribute__((always_inline)) void add_pairs_body(const add_pairs_t* a, int32_t* acc, int32_t n,
                                                                 const int32_t* multiplier, const int32_t* shift,
                                                                 const int8_t* res0, const int8_t* res1,
                                                                 uint8_t* out0, uint8_t* out1, int32_t clamp) {
  const int32_t* const conv = a->conv;
  const int32_t zp2 = a->zp2;
  int32_t* const end = acc + 2 * n;
  for (int32_t* t = acc; t != end; t += 2, ++multiplier, ++shift) {
    const int32_t m = *multiplier, e1 = ~*shift;
    const int32_t h0 = npukit_s8_rdhm_doubled(t[0] * 2, m), h1 = npukit_s8_rdhm_doubled(t[1] * 2, m);
    t[0] = conv[__ssat((((h0 + (h0 >> 31)) >> e1) + zp2) >> 1, 8)];
    t[1] = conv[__ssat((((h1 + (h1 >> 31)) >> e1) + zp2) >> 1, 8)];
  }
  const int32_t* const res = a->res;
  const int32_t out_mult = a->out_mult, out_e1 = a->out_e1, out_zp2 = a->out_zp2;
  const int32_t lo = clamp ? a->lo : 0, hi = clamp ? a->hi : 0;
  for (const int32_t* t = acc; t != end; t += 2, ++res0, ++res1, ++out0, ++out1) {
    const int32_t g0 = npukit_s8_rdhm_doubled((t[0] + res[*res0]) * 2, out_mult);
    int32_t q0 = __ssat((((g0 + (g0 >> 31)) >> out_e1) + out_zp2) >> 1, 8);
    if (clamp) q0 = q0 < lo ? lo : q0 > hi ? hi : q0;
    *out0 = (uint8_t)q0;
    const int32_t g1 = npukit_s8_rdhm_doubled((t[1] + res[*res1]) * 2, out_mult);
    int32_t q1 = __ssat((((g1 + (g1 >> 31)) >> out_e1) + out_zp2) >> 1, 8);
    if (clamp) q1 = q1 < lo ? lo : q1 > hi ? hi : q1;
    *out1 = (uint8_t)q1;
  }
}

static __attribute__((noinline)) void add_pairs(const add_pairs_t* a, int32_t* acc, int32_t n,
                                                const int32_t* multiplier, const int32_t* shift, const int8_t* res0,
                                                const int8_t* res1, uint8_t* out0, uint8_t* out1) {
  add_pairs_body(a, acc, n, multiplier, shift, res0, res1, out0, out1, 0);
}

static __attribute__((noinline)) void add_pairs_clamped(const add_pairs_t* a, int32_t* acc, int32_t n,
                                                        const int32_t* multiplier, const int32_t* shift,
                                                        const int8_t* res0, const int8_t* res1, uint8_t* out0,
                                                        uint8_t* out1) {
  add_pairs_body(a, acc, n, multiplier, shift, res0, res1, out0, out1, 1);
}

// Whether add_pairs runs the layer's ADD (on the add_small path with int8 tables, output channel-last): a
// channel-last residual and the ADD's right shift 1..31 (npukit_s8_add_is_small holds it to 0..31).
static inline int32_t add_pairs_apply(const npukit_s8_output_t* o) {
  return o->add.res_sc == 1 && o->add.out_shift <= -1;
}

// The layer's activation clamp folded into its operand table (`conv`, npukit_s8_add_table's + 128): entries
// below act_min take act_min's, above act_max act_max's, so that the table is indexed by the output narrowed to
// int8 alone. (The other add_small paths clamp first and read only entries within the range, which stay.)
static void add_fold_clamp(int32_t* conv, int32_t act_min, int32_t act_max) {
  const int32_t lo = act_min > -128 ? act_min : -128, hi = act_max < 127 ? act_max : 127;
  for (int32_t v = -128; v < lo; ++v) conv[v] = conv[lo];
  for (int32_t v = hi + 1; v < 128; ++v) conv[v] = conv[hi];
}

// The DSP cores' loop over `pixels` output pixels (`ow` a row) where every receptive field lies inside the input
// (an unpadded layer, or a band of a strip), the reduction is one chunk and the outputs are int8 on the small
// path, channel-last (sc 1), or, with `add_table` (npukit_s8_add_table's conv entries + 128), TFLite's ADD on
// the add_small path: per pixel pair the two input offsets and output addresses from the pixels' coordinates,
// the columns, then per block of channels the dot products and their output stage, with nothing else of
// conv()'s general output stages in the loop. The activation bounds as bytes (`bounds`, as
// npukit_s8_requantize_pairs_dsp takes them); `block` the accumulators of BLOCK channel pairs of pixels (conv()'s,
// so that the stack holds one such array).
static __attribute__((noinline)) void conv_inside_dsp(const gather_t* gp, const npukit_s8_output_t* op,
                                                      const int8_t* weights, int32_t wide, int32_t pixels,
                                                      int32_t ow, int32_t oc, int32_t bounds,
                                                      const int32_t* add_table, int32_t (*block)[2],
                                                      int16_t* columns, int8_t* row) {
  const gather_t* const g = gp;  // (not copied: a copy of the struct would be a memcpy call)
  const int32_t row_step = g->stride_h * g->sh, col_step = g->stride_w * g->sw, out_sh = op->sh, out_sw = op->sw;
  const int32_t channel_bytes = wide ? 2 * g->k_padded : g->k_padded;
  const inside_gather_t how = inside_gather(g);
  uint8_t* const out = op->out;
  const int32_t *const bias = op->bias, *const multiplier = op->multiplier, *const shift = op->shift;
  // The ADD of channel-last outputs and residual a pixel pair at a time (add_pairs; `add_table` then has the
  // layer's clamp folded in), else a pixel at a time (npukit_s8_add_channels).
  const int32_t pairs = add_table && add_pairs_apply(op);
  add_pairs_t add;
  add.lo = -128, add.hi = 127;
  if (pairs) {
    const int32_t out_e = -op->add.out_shift;
    add.conv = add_table, add.res = add_table + 256, add.zp2 = 2 * op->zp + 1;
    add.out_mult = op->add.out_mult, add.out_e1 = out_e - 1, add.out_zp2 = 2 * op->add.out_zp + 1;
    add.lo = op->add.act_min, add.hi = op->add.act_max;
  }
  const int32_t add_clamped = !npukit_s8_full_range(add.lo, add.hi);
  int32_t y0 = 0, x0 = 0;
  for (int32_t px = 0; px < pixels; px += 2) {
    // A lone last pixel is computed twice (as pixel 1 too), stored twice by the small path and once by the ADD
    // (whose residual may be the output itself).
    const int32_t last = pixels - px < 2;
    const int32_t y1 = last || x0 + 1 < ow ? y0 : y0 + 1;
    const int32_t x1 = last ? x0 : x0 + 1 < ow ? x0 + 1 : 0;
    const int32_t at0 = y0 * row_step + x0 * col_step, at1 = y1 * row_step + x1 * col_step;
    gather_inside_pair(g, &how, at0, at1, columns, row, 0);
    uint8_t* const out0 = out + y0 * out_sh + x0 * out_sw;
    uint8_t* const out1 = out + y1 * out_sh + x1 * out_sw;
    for (int32_t c0 = 0; c0 < oc; c0 += BLOCK) {
      const int32_t n = oc - c0 < BLOCK ? oc - c0 : BLOCK, even = n & ~1;
      dot_pairs(columns, weights + c0 * channel_bytes, g->k_padded, bias + c0, (n + 1) / 2, &block[0][0], wide);
      if (pairs && !last) {
        const uint8_t* const res0 = op->residual + c0 + y0 * op->add.res_sh + x0 * op->add.res_sw;
        const uint8_t* const res1 = op->residual + c0 + y1 * op->add.res_sh + x1 * op->add.res_sw;
        if (add_clamped) {
          add_pairs_clamped(&add, &block[0][0], n, multiplier + c0, shift + c0, (const int8_t*)res0,
                            (const int8_t*)res1, out0 + c0, out1 + c0);
        } else {
          add_pairs(&add, &block[0][0], n, multiplier + c0, shift + c0, (const int8_t*)res0, (const int8_t*)res1,
                    out0 + c0, out1 + c0);
        }
        continue;
      }
      if (add_table) {
        const int32_t rs = op->add.res_sc;
        npukit_s8_add_channels(op, add_table, &block[0][0], 2, n, multiplier + c0, shift + c0,
                               op->residual + c0 * rs + y0 * op->add.res_sh + x0 * op->add.res_sw, out0 + c0);
        if (!last) {
          npukit_s8_add_channels(op, add_table, &block[0][1], 2, n, multiplier + c0, shift + c0,
                                 op->residual + c0 * rs + y1 * op->add.res_sh + x1 * op->add.res_sw, out1 + c0);
        }
        continue;
      }
      if (even && bounds == 0x7f80) {  // all of int8
        npukit_s8_requantize_pairs_full_dsp(&block[0][0], even, multiplier + c0, shift + c0, op->zp, bounds,
                                            out0 + c0, out1 + c0);
      } else if (even) {
        npukit_s8_requantize_pairs_dsp(&block[0][0], even, multiplier + c0, shift + c0, op->zp, bounds, out0 + c0,
                                       out1 + c0);
      }
      if (even < n) {  // an odd last channel
        npukit_s8_requantize_pairs(&block[even][0], 1, multiplier + c0 + even, shift + c0 + even, op->zp,
                                   op->act_min, op->act_max, out0 + c0 + even, out1 + c0 + even, 1);
      }
    }
    y0 = x1 + 1 < ow ? y1 : y1 + 1;
    x0 = x1 + 1 < ow ? x1 + 1 : 0;
  }
}

// s8_dot_dsp.S: a pixel pair's outputs of channel pairs for K_PADDED <= NPUKIT_S8_FEW_K, dot products and output
// stage in registers; the columns come doubled (_upper: only the upper bound clamps, _full: neither;
// dsp16: int16 weights).
#define NPUKIT_S8_FEW_K 48
typedef struct {
  int32_t groups, pairs;
  uint8_t* out0;
  int32_t out1_offset, lower, upper;  // the bounds in every byte
} npukit_s8_few_args_t;
void npukit_s8_conv_few_dsp(int16_t* columns, const int8_t* weights, const int32_t* table,
                            const npukit_s8_few_args_t* args);
void npukit_s8_conv_few_upper_dsp(int16_t* columns, const int8_t* weights, const int32_t* table,
                                  const npukit_s8_few_args_t* args);
void npukit_s8_conv_few_full_dsp(int16_t* columns, const int8_t* weights, const int32_t* table,
                                 const npukit_s8_few_args_t* args);
void npukit_s8_conv_few_dsp16(int16_t* columns, const int8_t* weights, const int32_t* table,
                              const npukit_s8_few_args_t* args);
void npukit_s8_conv_few_full_dsp16(int16_t* columns, const int8_t* weights, const int32_t* table,
                                   const npukit_s8_few_args_t* args);
// K = 4 n + 1 with int8 weights (a window of one channel, 3x3 or 5x5): args' groups the n full ones, then one group
// of one value.
void npukit_s8_conv_few_one_dsp(int16_t* columns, const int8_t* weights, const int32_t* table,
                                const npukit_s8_few_args_t* args);
void npukit_s8_conv_few_upper_one_dsp(int16_t* columns, const int8_t* weights, const int32_t* table,
                                      const npukit_s8_few_args_t* args);
void npukit_s8_conv_few_full_one_dsp(int16_t* columns, const int8_t* weights, const int32_t* table,
                                     const npukit_s8_few_args_t* args);

// Channels whose output-stage table (8 words a pair) conv_few_dsp keeps in conv()'s accumulator block.
#define FEW_CHANNELS 32
_Static_assert(FEW_CHANNELS / 2 * 8 <= 2 * (BLOCK + 1), "the table fits conv()'s accumulator block");

// Whether npukit_s8_conv_few_dsp's output stage is exact for the layer (on the small path, int8 out): every
// multiplier non-negative, and for every shift e = -shift - 1, |(2 zp + 1) << e| + 2^30 < 2^31 (the rounded
// high product of a doubled accumulator below 2^31 and a multiplier below 2^31 is at most 2^30).
static int32_t few_output_exact(const npukit_s8_output_t* o, int32_t oc) {
  const int32_t k = 2 * o->zp + 1, magnitude = k < 0 ? -k : k;
  for (int32_t c = 0; c < oc; ++c) {
    const int32_t e = -o->shift[c] - 1;  // 0..30 on the small path
    if (o->multiplier[c] < 0 || ((int64_t)magnitude << e) >= ((int64_t)1 << 30)) return 0;
  }
  return 1;
}

// conv_inside_dsp for a reduction of at most NPUKIT_S8_FEW_K (few input channels) on the small path with int8
// outputs: per block of FEW_CHANNELS channels, its output-stage table (npukit_s8_conv_few_dsp's: 2 bias,
// multiplier, e = -shift - 1 and (2 zp + 1) << e per channel, in `block`), then per pixel pair the columns,
// doubled (2 (x - zp): the gathers' `twice`), and one call for the block's channel pairs; an odd last channel
// takes dot_pairs (its sums halved) and npukit_s8_requantize_pairs first.
// A lone last pixel is computed twice (as pixel 1 too) and stored twice.
static __attribute__((noinline)) void conv_few_dsp(const gather_t* gp, const npukit_s8_output_t* op,
                                                   const int8_t* weights, int32_t wide, int32_t pixels, int32_t ow,
                                                   int32_t oc, int32_t bounds, int32_t (*block)[2],
                                                   int16_t* columns, int8_t* row) {
  const gather_t* const g = gp;
  const inside_gather_t how = inside_gather(g);
  const int32_t row_step = g->stride_h * g->sh, col_step = g->stride_w * g->sw, out_sh = op->sh, out_sw = op->sw;
  const int32_t channel_bytes = wide ? 2 * g->k_padded : g->k_padded;
  const int32_t *const bias = op->bias, *const multiplier = op->multiplier, *const shift = op->shift;
  const int32_t zp2 = 2 * op->zp + 1;
  int32_t* const table = &block[0][0];
  const int32_t full = bounds == 0x7f80;            // all of int8: no clamp
  const int32_t upper_only = (bounds & 0xff) == 0x80;  // the lower bound -128's: SSAT keeps it
  npukit_s8_few_args_t args;
  // A last group of one value of K (its other three weights zero) takes the _one kernels.
  const int32_t one = !wide && g->k_padded - g->k == 3;
  args.groups = (g->k_padded >> 2) - one;
  args.lower = (int32_t)((uint32_t)(bounds & 0xff) * 0x01010101u);
  args.upper = (int32_t)((uint32_t)((bounds >> 8) & 0xff) * 0x01010101u);
  for (int32_t c0 = 0; c0 < oc; c0 += FEW_CHANNELS) {
    const int32_t n = oc - c0 < FEW_CHANNELS ? oc - c0 : FEW_CHANNELS, pairs = n >> 1;
    for (int32_t j = 0; j < pairs; ++j) {
      for (int32_t i = 0; i < 2; ++i) {
        const int32_t c = c0 + 2 * j + i, e = -shift[c] - 1;
        int32_t* const t = table + 8 * j + i;
        t[0] = 2 * bias[c], t[2] = multiplier[c], t[4] = e, t[6] = (int32_t)((uint32_t)zp2 << e);
      }
    }
    args.pairs = pairs;
    const int8_t* const w = weights + c0 * channel_bytes;
    int32_t y0 = 0, x0 = 0;
    for (int32_t px = 0; px < pixels; px += 2) {
      const int32_t last = pixels - px < 2;
      const int32_t y1 = last || x0 + 1 < ow ? y0 : y0 + 1;
      const int32_t x1 = last ? x0 : x0 + 1 < ow ? x0 + 1 : 0;
      gather_inside_pair(g, &how, y0 * row_step + x0 * col_step, y1 * row_step + x1 * col_step, columns, row, 1);
      uint8_t* const out0 = op->out + c0 + y0 * out_sh + x0 * out_sw;
      uint8_t* const out1 = op->out + c0 + y1 * out_sh + x1 * out_sw;
      if (n & 1) {  // the odd last channel, paired with zero weights: the doubled columns' sums halved
        static const int32_t no_bias[2] = {0, 0};
        const int32_t c = n - 1;
        int32_t acc[2][2];
        dot_pairs(columns, w + c * channel_bytes, g->k_padded, no_bias, 1, &acc[0][0], wide);
        acc[0][0] = (acc[0][0] >> 1) + bias[c0 + c], acc[0][1] = (acc[0][1] >> 1) + bias[c0 + c];
        npukit_s8_requantize_pairs(&acc[0][0], 1, multiplier + c0 + c, shift + c0 + c, op->zp, op->act_min,
                                   op->act_max, out0 + c, out1 + c, 1);
      }
      if (pairs) {
        args.out0 = out0, args.out1_offset = (int32_t)(out1 - out0);
        if (wide) {
          if (full) {
            npukit_s8_conv_few_full_dsp16(columns, w, table, &args);
          } else {
            npukit_s8_conv_few_dsp16(columns, w, table, &args);
          }
        } else if (one) {
          if (full) {
            npukit_s8_conv_few_full_one_dsp(columns, w, table, &args);
          } else if (upper_only) {
            npukit_s8_conv_few_upper_one_dsp(columns, w, table, &args);
          } else {
            npukit_s8_conv_few_one_dsp(columns, w, table, &args);
          }
        } else if (full) {
          npukit_s8_conv_few_full_dsp(columns, w, table, &args);
        } else if (upper_only) {
          npukit_s8_conv_few_upper_dsp(columns, w, table, &args);
        } else {
          npukit_s8_conv_few_dsp(columns, w, table, &args);
        }
      }
      y0 = x1 + 1 < ow ? y1 : y1 + 1;
      x0 = x1 + 1 < ow ? x1 + 1 : 0;
    }
  }
}

// s8_conv_four_dsp.S: one output channel of groups of four output pixels, a reduction of at most
// FOUR_MAX_GROUPS groups of four (K_PADDED <= 128), dot products and output stage in registers. Its table per
// channel: the doubled bias four times, multiplier, e = -shift - 1, c = (2 zp + 1) << e, the output's bytes
// from pixel to pixel, the bounds in every byte, G = K_PADDED / 4, and the doubled weights as int16 pairs
// (k0, k2), (k1, k3) per group, group g in slot FOUR_MAX_GROUPS - G + g.
#define FOUR_MAX_GROUPS 32
typedef struct {
  int32_t bias2[4];
  int32_t m, e, c, s;
  int32_t lower, upper;
  int32_t groups, unused;
  int32_t w[2 * FOUR_MAX_GROUPS];
} npukit_s8_four_table_t;
_Static_assert(sizeof(npukit_s8_four_table_t) == 304, "the offsets s8_conv_four_dsp.S reads");
void npukit_s8_conv_four_dsp(const int32_t* columns, uint8_t* out, const npukit_s8_four_table_t* t, int32_t quads);
void npukit_s8_conv_four_full_dsp(const int32_t* columns, uint8_t* out, const npukit_s8_four_table_t* t,
                                  int32_t quads);

// The same with TFLite's int8 ADD of a residual tensor fused in (NPUKIT_S8_OUT_ADD on the add_small path), its
// table the four-pixel table followed by the ADD's words: the operand table of the layer's output (npukit_s8_add_
// table's conv entries + 128, the layer's activation clamp folded in and every entry doubled), the residual's
// (res + 128), the residual of the next group's pixel 0 (the kernel advances it), the residual's bytes from one
// pixel to the next, the ADD's output multiplier (non-negative), e' = -out_shift - 1 (0..30) and
// c' = (2 out_zp + 1) << e'; the bounds words hold the ADD's activation bounds (_add_full: those of int8).
typedef struct {
  npukit_s8_four_table_t four;
  const int32_t* conv;
  const int32_t* res;
  const uint8_t* residual;
  int32_t rs;
  int32_t out_mult, out_e1, out_c, unused;
} npukit_s8_four_add_table_t;
_Static_assert(sizeof(npukit_s8_four_add_table_t) == 336 && __builtin_offsetof(npukit_s8_four_add_table_t, conv) == 304 &&
                   __builtin_offsetof(npukit_s8_four_add_table_t, residual) == 312 &&
                   __builtin_offsetof(npukit_s8_four_add_table_t, out_mult) == 320,
               "the offsets s8_conv_four_dsp.S reads");
_Static_assert(sizeof(npukit_s8_four_add_table_t) <= 2 * (BLOCK + 1) * sizeof(int32_t), "the table fits conv()'s accumulator block");
void npukit_s8_conv_four_add_dsp(const int32_t* columns, uint8_t* out, const npukit_s8_four_add_table_t* t,
                                 int32_t quads);
void npukit_s8_conv_four_add_full_dsp(const int32_t* columns, uint8_t* out, const npukit_s8_four_add_table_t* t,
                                      int32_t quads);

// The same quads for every output channel in one call (the _channels_ kernels): each channel's table words
// (bias, multiplier and shift words, weights, the residual pointer) set up by the kernel from these (word offsets
// fixed in s8_conv_four_dsp.S): channel c's weights are `groups` groups from weights + (c >> 1) * pair_bytes +
// (c & 1) * lane_bytes, int8 words 8 bytes apart or (`wide`) int16 pairs 16 bytes apart; its output at `out` + c,
// its residual at `residual` + c.
typedef struct {
  const int32_t *bias, *multiplier, *shift;
  const int8_t* weights;
  int32_t channels, zp2, pair_bytes;
  const uint8_t* residual;
  int32_t lane_bytes, wide;
} npukit_s8_four_channels_t;
_Static_assert(sizeof(npukit_s8_four_channels_t) == 40, "the offsets s8_conv_four_dsp.S reads");
void npukit_s8_conv_four_channels_dsp(const int32_t* columns, uint8_t* out, npukit_s8_four_table_t* t, int32_t quads,
                                      const npukit_s8_four_channels_t* ch);
void npukit_s8_conv_four_channels_full_dsp(const int32_t* columns, uint8_t* out, npukit_s8_four_table_t* t,
                                           int32_t quads, const npukit_s8_four_channels_t* ch);
void npukit_s8_conv_four_channels_add_dsp(const int32_t* columns, uint8_t* out, npukit_s8_four_add_table_t* t,
                                          int32_t quads, const npukit_s8_four_channels_t* ch);
void npukit_s8_conv_four_channels_add_full_dsp(const int32_t* columns, uint8_t* out, npukit_s8_four_add_table_t* t,
                                               int32_t quads, const npukit_s8_four_channels_t* ch);

// The columns of conv_four_dsp's strips of output pixels (groups of four pixels, [G][2][4] words each), on the
// stack of an unpadded layer's call (FOUR_STRIP_BYTES), or beside a padded layer's strip of input rows
// (FOUR_PADDED_BYTES: the two on the stack together stay within what the other kernels' deepest path takes plus
// 1 KiB). A group of four pixels takes 32 G bytes (G = K_PADDED / 4): up to 1 KiB; four_fits holds a layer to
// columns with room for at least one.
#define FOUR_STRIP_BYTES 3072
#define FOUR_PADDED_BYTES 512
#define FOUR_BAND_QUADS 4

// The bytes from one output pixel to the next in conv()'s order (row by row) where they are evenly spaced: one
// row (sw), one column (sh) or rows one after the other (sh = ow * sw); 0 otherwise.
static inline int32_t four_pixel_step(const npukit_s8_output_t* o, int32_t pixels, int32_t ow) {
  if (ow == 1) return o->sh;
  return pixels == ow || o->sh == ow * o->sw ? o->sw : 0;
}

// Where conv_four_dsp runs (conv() checks the rest: int8 outputs on the small path, channel-last (sc 1),
// every receptive field inside the input, few_output_exact): a reduction of at most 4 * FOUR_MAX_GROUPS whose
// group of four pixels fits the `strip_bytes` of columns, at least four output pixels, evenly spaced
// (four_pixel_step).
static inline int32_t four_fits(const gather_t* g, const npukit_s8_output_t* o, int32_t pixels, int32_t ow,
                                int32_t strip_bytes) {
  return g->k_padded <= 4 * FOUR_MAX_GROUPS && 8 * g->k_padded <= strip_bytes && pixels >= 4 &&
         four_pixel_step(o, pixels, ow) != 0;
}

// The residual's bytes from one output pixel to the next in conv()'s order where they are evenly spaced and not 0
// (four_pixel_step's rule on the residual's strides); 0 otherwise.
static inline int32_t four_residual_step(const npukit_s8_output_t* o, int32_t pixels, int32_t ow) {
  if (ow == 1) return o->add.res_sh;
  return pixels == ow || o->add.res_sh == ow * o->add.res_sw ? o->add.res_sw : 0;
}

// Where npukit_s8_conv_four_add_dsp runs the layer's ADD (besides four_fits and what conv() checks for the
// layer: the add_small path without the float stage, channel-last outputs, every receptive field inside the
// input, few_output_exact): the residual channel-last (res_sc 1) and evenly spaced from pixel to pixel
// (four_residual_step), the ADD's right shift 1..31 (add_pairs_apply; npukit_s8_add_is_small holds it to 0..31),
// its multiplier non-negative, |(2 out_zp + 1) << (e - 1)| below 2^30 (its output step is the layer's, exact as
// few_output_exact states it), and both activation ranges not empty and meeting int8 (the clamps as bytes, the
// layer's folded into its operand table). A residual of another layer's int32 accumulators (RES_BIAS_AT set,
// s8_residual.c: written as int8 into the output first) stays on the pixel-pair kernels: no sweep reaches it on
// the boards.
static int32_t four_add_fits(const npukit_s8_output_t* o, int32_t pixels, int32_t ow) {
  const npukit_s8_add_t* k = &o->add;
  if (!o->add_small || o->fl.table || o->p[NPUKIT_S8_W_RES_BIAS_AT] != 0 || !add_pairs_apply(o) ||
      four_residual_step(o, pixels, ow) == 0 || k->out_mult < 0) {
    return 0;
  }
  const int64_t z = 2 * (int64_t)k->out_zp + 1, magnitude = z < 0 ? -z : z;
  const int32_t e1 = -k->out_shift - 1;  // 0..30
  return magnitude < ((int64_t)1 << 30) && (magnitude << e1) < ((int64_t)1 << 30) && k->act_min <= k->act_max &&
         k->act_min <= 127 && k->act_max >= -128 && o->act_min <= o->act_max && o->act_min <= 127 &&
         o->act_max >= -128;
}

// Whether conv_four_dsp costs fewer instructions than the pixel-pair kernels (conv_few_dsp, conv_inside_dsp)
// for the layer, from their instructions measured under QEMU on pointwise and windowed layers of K 8 to 128,
// 9 to 1,024 pixels and 8 to 144 output channels (G = K_PADDED / 4; the figures pick the cheaper path on each
// of them): per channel and call (a strip, and the moved last group) 60 + 9 G for its table and the call, per
// channel and group of four pixels 40 + 12 G, per pixel 2.4 G for its columns; the pixel-pair kernels 42 + 16 G
// per channel pair and pixel pair and 42 + 5 G per pixel. Few pixels and many channels (a call per channel for
// one or two groups of pixels) stay on the pixel-pair kernels. With the ADD (`add`, fitted alike on pointwise
// layers of K 8 to 128, 16 to 576 pixels, 8 to 32 output channels): ADD_FOUR_QUAD more per channel and group of
// four pixels (npukit_s8_conv_four_add_dsp's ADD), ADD_FOUR_CALL more per call (its residual pointer; the moved
// last group through four bytes of its own), once per layer ADD_FOUR_TABLE (the operand table folded and
// doubled, and what the fit leaves per layer), against ADD_PAIRS_OUTPUT more per output on the pixel-pair
// kernels (add_pairs' two passes against npukit_s8_requantize_pairs_dsp).
#define ADD_FOUR_QUAD 42
#define ADD_FOUR_CALL 20
#define ADD_FOUR_TABLE 6750
#define ADD_PAIRS_OUTPUT 25
static int32_t four_pays(const gather_t* g, int32_t pixels, int32_t oc, int32_t strip_bytes, int32_t add) {
  const int32_t groups = g->k_padded >> 2, quads = (pixels + 3) >> 2;
  const int32_t per_strip = strip_bytes / 32 / groups;
  const int32_t calls = (quads + per_strip - 1) / per_strip + ((pixels & 3) != 0);
  int64_t four = (int64_t)oc * (calls * (60 + 9 * groups) + (int64_t)quads * (40 + 12 * groups)) +
                 (int64_t)pixels * groups * 12 / 5;
  int64_t pairs = (int64_t)((pixels + 1) >> 1) * ((oc + 1) >> 1) * (42 + 16 * groups) +
                  (int64_t)pixels * (42 + 5 * groups);
  if (add) {
    four += (int64_t)oc * (calls * ADD_FOUR_CALL + (int64_t)quads * ADD_FOUR_QUAD) + ADD_FOUR_TABLE;
    pairs += (int64_t)pixels * oc * ADD_PAIRS_OUTPUT;
  }
  return four < pairs;
}

// One pixel's receptive field at input offset `at` (inside the input) into its place in a group of four
// pixels' columns (`quad` [G][2][4] words, `pixel` 0..3): the field's K_PADDED int8 values a word at a time,
// each word's bytes (0, 2) and (1, 3) less the zero point. Where kernel rows are contiguous words (im2col's
// first case), or each tap's channels are (channel-last, a multiple of 4: a dilated layer's taps), they are read
// from the input in place, otherwise gathered into `row` first (K_PADDED + 4 bytes; past K any values: their
// weights are zero).
static __attribute__((noinline)) void four_gather(const gather_t* g, const inside_gather_t* how, int32_t at, int8_t* restrict row,
                        int32_t* restrict quad, int32_t pixel) {
  const int32_t zz = g->less_zp;
  int32_t* out = quad + pixel;
  if (how->rows_in_words) {
    const int32_t words = g->kw * g->ic >> 2, row_step = g->dy * g->sh;
    const int8_t* base = g->in + at;
    for (int32_t i = 0; i < g->kh; ++i, base += row_step) {
      const npukit_s8_unaligned_word_t* r = (const npukit_s8_unaligned_word_t*)base;
      for (const npukit_s8_unaligned_word_t* end = r + words; r != end; ++r, out += 8) {
        const int32_t w = *r;
        out[0] = less_zp_even(w, zz, 0);
        out[4] = less_zp_odd(w, zz, 0);
      }
    }
    return;
  }
  const int8_t* base = g->in + at;
  if (g->sc == 1 && (g->ic & 3) == 0) {  // each tap's channels words side by side (dilated taps of a row)
    const int32_t words = g->ic >> 2, tap_step = g->dx * g->sw, row_step = g->dy * g->sh;
    for (int32_t i = 0; i < g->kh; ++i, base += row_step) {
      const int8_t* tap = base;
      for (int32_t j = 0; j < g->kw; ++j, tap += tap_step) {
        const npukit_s8_unaligned_word_t* r = (const npukit_s8_unaligned_word_t*)tap;
        for (const npukit_s8_unaligned_word_t* end = r + words; r != end; ++r, out += 8) {
          const int32_t w = *r;
          out[0] = less_zp_even(w, zz, 0);
          out[4] = less_zp_odd(w, zz, 0);
        }
      }
    }
    return;
  }
  if (how->rows_contiguous && at <= how->short_end) {  // each kernel row a word at a time
    const int32_t run = g->kw * g->ic, words = (run + 3) >> 2, row_step = g->dy * g->sh;
    int8_t* to = row;
    for (int32_t i = 0; i < g->kh; ++i, base += row_step, to += run) {
      for (int32_t w = 0; w < words; ++w) {
        ((npukit_s8_unaligned_word_t*)to)[w] = ((const npukit_s8_unaligned_word_t*)base)[w];
      }
    }
  } else {
    int8_t* to = row;
    for (int32_t i = 0; i < g->kh; ++i) {
      for (int32_t j = 0; j < g->kw; ++j) {
        const int8_t* from = base + i * g->dy * g->sh + j * g->dx * g->sw;
        for (int32_t c = 0; c < g->ic; ++c, from += g->sc) *to++ = *from;
      }
    }
  }
  const npukit_s8_unaligned_word_t* r = (const npukit_s8_unaligned_word_t*)row;
  for (const npukit_s8_unaligned_word_t* end = r + (g->k_padded >> 2); r != end; ++r, out += 8) {
    const int32_t w = *r;
    out[0] = less_zp_even(w, zz, 0);
    out[4] = less_zp_odd(w, zz, 0);
  }
}

// Pixels whose kernel rows are contiguous words (im2col's first case), gathered as four_gather does, a run of
// pixels in conv()'s order at a time: `at` the first one's input offset, `x` its column.
typedef struct {
  const int8_t* in;
  int32_t words, kh, row_in;      // a kernel row's words, the kernel rows, the bytes between them
  int32_t col_step, row_jump, ow;  // from pixel to pixel along a row, and from a row's end to the next row
  int32_t zz, quad_words;
} four_words_t;

// One channel's doubled weights (slots, in the table's order) from its int8 weights, `groups` words 8 bytes apart
// (s8_conv_four_dsp.S).
void npukit_s8_four_weights_dsp(int32_t* slots, const int8_t* w, int32_t groups);

// Four pixels of one output row at once (s8_conv_four_dsp.S), from the words, kh, row_in, col_step and zz of
// `f`: their fields col_step bytes apart.
void npukit_s8_four_gather_quad_dsp(const int8_t* at, int32_t* quad, const four_words_t* f);
_Static_assert(__builtin_offsetof(four_words_t, words) == 4 && __builtin_offsetof(four_words_t, kh) == 8 &&
                   __builtin_offsetof(four_words_t, row_in) == 12 && __builtin_offsetof(four_words_t, col_step) == 16 &&
                   __builtin_offsetof(four_words_t, zz) == 28,
               "the offsets s8_conv_four_dsp.S reads");

static __attribute__((noinline)) void four_gather_words(const four_words_t* f, int32_t at, int32_t x, int32_t n,
                                                        int32_t* restrict quad) {
  const int8_t* const in = f->in;
  const int32_t words = f->words, kh = f->kh, row_in = f->row_in, zz = f->zz, cs = f->col_step;
  for (int32_t p = 0; p < n;) {
    if ((p & 3) == 0 && n - p >= 4 && x + 4 <= f->ow) {  // four pixels of one output row, `cs` bytes apart
      npukit_s8_four_gather_quad_dsp(in + at, quad + (p >> 2) * f->quad_words, f);
      p += 4, at += 4 * cs, x += 4;
    } else {
      int32_t* out = quad + (p >> 2) * f->quad_words + (p & 3);
      const int8_t* base = in + at;
      for (int32_t i = kh; i > 0; --i, base += row_in) {
        const npukit_s8_unaligned_word_t* r = (const npukit_s8_unaligned_word_t*)base;
        for (const npukit_s8_unaligned_word_t* end = r + words; r != end; ++r, out += 8) {
          const int32_t w = *r;
          out[0] = less_zp_even(w, zz, 0);
          out[4] = less_zp_odd(w, zz, 0);
        }
      }
      ++p, at += cs, ++x;
    }
    if (x == f->ow) x = 0, at += f->row_jump;
  }
}

// One pixel's field into `to` (K bytes side by side) where its pieces are contiguous runs of at least four bytes:
// `pieces` runs of `run` bytes, `piece_step` bytes apart from `base` (a kernel row each: rows_contiguous; or a
// tap's channels each, a multiple of four). A word at a time: words 0 .. n - 1 of each run (n = (run - 1) / 4)
// and its last word read and written at run - 4, so that nothing outside the runs is read and nothing past them
// written; unrolled for runs of up to 16 bytes.
#define FOUR_PACK_WORD(offset) \
  *(npukit_s8_unaligned_word_t*)(void*)(to + (offset)) = *(const npukit_s8_unaligned_word_t*)(const void*)(base + (offset))
#define FOUR_PACK_PIECES(copies)                                    \
  for (int32_t i = pieces; i > 0; --i, base += piece_step, to += run) { \
    copies;                                                        \
    FOUR_PACK_WORD(last);                                          \
  }
static inline __attribute__((always_inline)) void four_pack_field(int8_t* restrict to, const int8_t* base,
                                                                  int32_t pieces, int32_t run, int32_t piece_step) {
  const int32_t last = run - 4;
  switch ((run - 1) >> 2) {  // n
    case 0: FOUR_PACK_PIECES((void)0) break;
    case 1: FOUR_PACK_PIECES(FOUR_PACK_WORD(0)) break;
    case 2: FOUR_PACK_PIECES(FOUR_PACK_WORD(0); FOUR_PACK_WORD(4)) break;
    case 3: FOUR_PACK_PIECES(FOUR_PACK_WORD(0); FOUR_PACK_WORD(4); FOUR_PACK_WORD(8)) break;
    default: FOUR_PACK_PIECES(for (int32_t w = 0; w < last; w += 4) FOUR_PACK_WORD(w)) break;
  }
}

// The same for runs of one to three bytes (kernel rows of a one-channel input): each run read and written as one
// word, in order, so that a run's last bytes overwrite what the previous run's word wrote past it; the last
// run's word writes 4 - run bytes past the field (four_gather_rows holds them within K_PADDED) and reads as many
// past the run (within the input where the pixel's offset is at most short_end).
static inline __attribute__((always_inline)) void four_pack_short(int8_t* restrict to, const int8_t* base,
                                                                  int32_t pieces, int32_t run, int32_t piece_step) {
  for (int32_t i = pieces; i > 0; --i, base += piece_step, to += run) FOUR_PACK_WORD(0);
}
#undef FOUR_PACK_PIECES
#undef FOUR_PACK_WORD

// The input offset of the last of `n` pixels in conv()'s order from the one at `at` (column `x`).
static inline int32_t four_last_offset(const four_words_t* f, int32_t at, int32_t x, int32_t n) {
  for (int32_t i = 1; i < n; ++i) {
    at += f->col_step;
    if (++x == f->ow) x = 0, at += f->row_jump;
  }
  return at;
}

// The other layers' pixels, a run at a time as four_gather_words takes them. Where each field is made of
// contiguous runs of at least four bytes (kernel rows of no multiple of 4: first layers of one to three channels;
// or the taps of a dilated layer, channel-last, a multiple of four channels), or of shorter kernel rows
// (four_pack_short: a one-channel input's rows of one to three taps), four pixels at a time: their fields
// packed K_PADDED bytes apart into `pack` (4 K_PADDED bytes; past K in each field, numbers zero weights meet: zeros,
// or what four_pack_short's last word wrote), then widened together
// (npukit_s8_four_gather_quad_dsp, the fields as one row of G words). Otherwise a pixel at a time: where the
// rows' word reads stay within the input, the rows copied a word at a time into `row` and widened; otherwise
// four_gather.
static __attribute__((noinline)) void four_gather_rows(const four_words_t* f, const gather_t* g,
                                                       const inside_gather_t* how, int32_t at, int32_t x, int32_t n,
                                                       int8_t* restrict row, int8_t* restrict pack,
                                                       int32_t* restrict quad) {
  const int8_t* const in = f->in;
  const int32_t run = g->kw * g->ic, words = (run + 3) >> 2, kh = f->kh, row_in = f->row_in, zz = f->zz;
  const int32_t groups = g->k_padded >> 2, short_end = how->rows_contiguous ? how->short_end : -1;
  const int32_t taps = !how->rows_contiguous && g->sc == 1 && (g->ic & 3) == 0 && g->ic >= 4;
  // Runs shorter than a word: packed where the last run's word stays within the field (K_PADDED - K >= 4 - run)
  // and, per group, where every pixel's rows may be read as words (at <= short_end).
  const int32_t short_runs = how->rows_contiguous && run < 4 && g->k_padded - g->k >= 4 - run;
  const int32_t packs = (how->rows_contiguous && run >= 4) || taps || short_runs;
  // The packed fields: one row of G words each, K_PADDED bytes apart.
  four_words_t packed = *f;
  packed.words = groups, packed.kh = 1, packed.row_in = 0, packed.col_step = g->k_padded;
  for (int32_t p = 0; p < n;) {
    int32_t* const out = quad + (p >> 2) * f->quad_words;
    if (packs && (p & 3) == 0 && n - p >= 4 && (!short_runs || four_last_offset(f, at, x, 4) <= short_end)) {
      for (int32_t i = 0; i < 4; ++i) {
        int8_t* const to = pack + i * g->k_padded;
        if (short_runs) {
          four_pack_short(to, in + at, kh, run, row_in);
        } else if (taps) {
          const int32_t tap_step = g->dx * g->sw;
          const int8_t* base = in + at;
          for (int32_t r = 0; r < kh; ++r, base += row_in) four_pack_field(to + r * run, base, g->kw, g->ic, tap_step);
        } else {
          four_pack_field(to, in + at, kh, run, row_in);
        }
        at += f->col_step;
        if (++x == f->ow) x = 0, at += f->row_jump;
      }
      npukit_s8_four_gather_quad_dsp(pack, out, &packed);
      p += 4;
      continue;
    }
    if (at <= short_end) {
      const int8_t* base = in + at;
      int8_t* to = row;
      for (int32_t i = kh; i > 0; --i, base += row_in, to += run) {
        for (int32_t w = 0; w < words; ++w) {
          ((npukit_s8_unaligned_word_t*)to)[w] = ((const npukit_s8_unaligned_word_t*)base)[w];
        }
      }
      int32_t* o = out + (p & 3);
      const npukit_s8_unaligned_word_t* r = (const npukit_s8_unaligned_word_t*)row;
      for (const npukit_s8_unaligned_word_t* end = r + groups; r != end; ++r, o += 8) {
        const int32_t w = *r;
        o[0] = less_zp_even(w, zz, 0);
        o[4] = less_zp_odd(w, zz, 0);
      }
    } else {
      four_gather(g, how, at, row, out, p & 3);
    }
    ++p, at += f->col_step;
    if (++x == f->ow) x = 0, at += f->row_jump;
  }
}

// The ADD's words of npukit_s8_conv_four_add_dsp's table (where four_add_fits) from npukit_s8_add_table's
// operands (`conv` and `res`, each + 128): the layer's activation clamp folded into `conv` (add_fold_clamp) and
// its entries doubled, in place. Returns the ADD's activation bounds as conv_four_dsp takes them.
static __attribute__((noinline)) int32_t four_add_table(const npukit_s8_output_t* o, int32_t* conv, const int32_t* res,
                                                        int32_t pixels, int32_t ow, npukit_s8_four_add_table_t* t) {
  const npukit_s8_add_t* k = &o->add;
  add_fold_clamp(conv, o->act_min, o->act_max);
  for (int32_t v = -128; v < 128; ++v) conv[v] *= 2;
  const int32_t e1 = -k->out_shift - 1;
  t->conv = conv, t->res = res, t->rs = four_residual_step(o, pixels, ow);
  t->out_mult = k->out_mult, t->out_e1 = e1, t->out_c = (int32_t)((uint32_t)(2 * k->out_zp + 1) << e1);
  const int32_t lo = k->act_min > -128 ? k->act_min : -128, hi = k->act_max < 127 ? k->act_max : 127;
  return (lo & 0xff) | (hi & 0xff) << 8;
}

// conv() for a reduction of at most 4 * FOUR_MAX_GROUPS on the small path with int8 outputs (four_fits): strips
// of output pixels, their columns gathered once into `strip` (`strip_bytes`), then per output channel its
// table (in `table`) and one call of npukit_s8_conv_four_dsp for the strip's groups of four pixels. Where the
// pixels are no multiple of four, the last group is the last four pixels (computed again, stored again with
// the same values), in a call of its own. With the ADD (conv_four_add_dsp; four_add_table: `bounds` the ADD's),
// npukit_s8_conv_four_add_dsp instead, and the moved last group's outputs go to four bytes of their own, of
// which those of the pixels not yet done are copied out (the residual may be the output itself: the pixels
// done have their ADD's result there by then). `pack` (4 K_PADDED bytes: conv()'s im2col columns, which this path
// does not use otherwise) holds four_gather_rows' packed fields.
// (The body of conv_four_dsp and conv_four_add_dsp, `add` a constant in each: the layers without the ADD run
// the code they ran before it was added.)
static inline __attribute__((always_inline)) void conv_four_body(const gather_t* g, const npukit_s8_output_t* op,
                                                                 const int8_t* weights, int32_t wide, int32_t pixels,
                                                                 int32_t ow, int32_t oc, int32_t bounds,
                                                                 npukit_s8_four_add_table_t* at, int8_t* row,
                                                                 int8_t* pack, int32_t* strip, int32_t strip_bytes,
                                                                 int32_t add) {
  npukit_s8_four_table_t* const table = &at->four;
  const inside_gather_t how = inside_gather(g);
  const int32_t row_step = g->stride_h * g->sh, col_step = g->stride_w * g->sw;
  const int32_t out_sw = four_pixel_step(op, pixels, ow);
  const int32_t groups = g->k_padded >> 2, quad_words = 8 * groups;
  const int32_t per_strip = strip_bytes / 4 / quad_words;  // groups of four pixels (>= 1)
  const int32_t quads = (pixels + 3) >> 2;
  const int32_t *const bias = op->bias, *const multiplier = op->multiplier, *const shift = op->shift;
  const int32_t zp2 = 2 * op->zp + 1, full = bounds == 0x7f80;
  table->s = out_sw, table->groups = groups;
  table->lower = (int32_t)((uint32_t)(bounds & 0xff) * 0x01010101u);
  table->upper = (int32_t)((uint32_t)((bounds >> 8) & 0xff) * 0x01010101u);
  int32_t* const slots = table->w + 2 * (FOUR_MAX_GROUPS - groups);
  four_words_t words;
  words.in = g->in, words.words = g->kw * g->ic >> 2, words.kh = g->kh, words.row_in = g->dy * g->sh;
  words.col_step = col_step, words.row_jump = row_step - ow * col_step, words.ow = ow;
  words.zz = g->less_zp, words.quad_words = quad_words;
  if (!how.rows_in_words) {  // four_gather_rows' packed fields: past K, numbers its zero weights meet
    for (int32_t i = 0; i < 4; ++i) {
      for (int32_t k = g->k; k < g->k_padded; ++k) pack[i * g->k_padded + k] = 0;
    }
  }
  int32_t y = 0, x = 0;  // the next pixel's coordinates
  for (int32_t q0 = 0; q0 < quads; q0 += per_strip) {
    const int32_t n = quads - q0 < per_strip ? quads - q0 : per_strip;
    // The last group starts at pixel - 4 where the pixels are no multiple of four.
    const int32_t moved = q0 + n == quads && (pixels & 3);
    if (how.rows_in_words) {
      four_gather_words(&words, y * row_step + x * col_step, x, 4 * (n - moved), strip);
    } else {
      four_gather_rows(&words, g, &how, y * row_step + x * col_step, x, 4 * (n - moved), row, pack, strip);
    }
    y += (x + 4 * (n - moved)) / ow, x = (x + 4 * (n - moved)) % ow;
    if (moved) {
      const int32_t ym = (pixels - 4) / ow, xm = (pixels - 4) % ow;
      int32_t* const quad = strip + (n - 1) * quad_words;
      if (how.rows_in_words) {
        four_gather_words(&words, ym * row_step + xm * col_step, xm, 4, quad);
      } else {
        four_gather_rows(&words, g, &how, ym * row_step + xm * col_step, xm, 4, row, pack, quad);
      }
    }
    uint8_t* const out = op->out + 4 * q0 * out_sw;
    const uint8_t* const res = add ? op->residual + 4 * q0 * at->rs : (const uint8_t*)0;
    if (!moved) {  // every channel in one call
      const npukit_s8_four_channels_t ch = {
          .bias = bias, .multiplier = multiplier, .shift = shift, .weights = weights, .channels = oc, .zp2 = zp2,
          .pair_bytes = (wide ? 4 : 2) * g->k_padded, .residual = res, .lane_bytes = wide ? 8 : 4, .wide = wide,
      };
      if (add && full) {
        npukit_s8_conv_four_channels_add_full_dsp(strip, out, at, n, &ch);
      } else if (add) {
        npukit_s8_conv_four_channels_add_dsp(strip, out, at, n, &ch);
      } else if (full) {
        npukit_s8_conv_four_channels_full_dsp(strip, out, table, n, &ch);
      } else {
        npukit_s8_conv_four_channels_dsp(strip, out, table, n, &ch);
      }
      continue;
    }
    for (int32_t c = 0; c < oc; ++c) {
      const int32_t e = -shift[c] - 1;
      table->bias2[0] = table->bias2[1] = table->bias2[2] = table->bias2[3] = 2 * bias[c];
      table->m = multiplier[c], table->e = e, table->c = (int32_t)((uint32_t)zp2 << e);
      if (wide) {
        const npukit_s8_word_t* w = (const npukit_s8_word_t*)weights + (c >> 1) * g->k_padded + (c & 1) * 2;
        for (int32_t j = 0; j < groups; ++j, w += 4) {
          slots[2 * j] = (int32_t)__sadd16(w[0], w[0]), slots[2 * j + 1] = (int32_t)__sadd16(w[1], w[1]);
        }
      } else {
        npukit_s8_four_weights_dsp(slots, weights + (c >> 1) * 2 * g->k_padded + (c & 1) * 4, groups);
      }
      const int32_t straight = n - moved;
      if (add) {
        if (straight) {
          at->residual = res + c;
          if (full) {
            npukit_s8_conv_four_add_full_dsp(strip, out + c, at, straight);
          } else {
            npukit_s8_conv_four_add_dsp(strip, out + c, at, straight);
          }
        }
        if (moved) {
          uint8_t last[4];
          at->residual = op->residual + (pixels - 4) * at->rs + c;
          table->s = 1;
          if (full) {
            npukit_s8_conv_four_add_full_dsp(strip + straight * quad_words, last, at, 1);
          } else {
            npukit_s8_conv_four_add_dsp(strip + straight * quad_words, last, at, 1);
          }
          table->s = out_sw;
          uint8_t* const to = op->out + (pixels - 4) * out_sw + c;
          for (int32_t i = 4 - (pixels & 3); i < 4; ++i) to[i * out_sw] = last[i];
        }
        continue;
      }
      if (straight) {
        if (full) {
          npukit_s8_conv_four_full_dsp(strip, out + c, table, straight);
        } else {
          npukit_s8_conv_four_dsp(strip, out + c, table, straight);
        }
      }
      if (moved) {
        uint8_t* const last = op->out + (pixels - 4) * out_sw + c;
        if (full) {
          npukit_s8_conv_four_full_dsp(strip + straight * quad_words, last, table, 1);
        } else {
          npukit_s8_conv_four_dsp(strip + straight * quad_words, last, table, 1);
        }
      }
    }
  }
}

static __attribute__((noinline)) void conv_four_dsp(const gather_t* g, const npukit_s8_output_t* op,
                                                    const int8_t* weights, int32_t wide, int32_t pixels, int32_t ow,
                                                    int32_t oc, int32_t bounds, npukit_s8_four_add_table_t* at,
                                                    int8_t* row, int8_t* pack, int32_t* strip, int32_t strip_bytes) {
  conv_four_body(g, op, weights, wide, pixels, ow, oc, bounds, at, row, pack, strip, strip_bytes, 0);
}

static __attribute__((noinline)) void conv_four_add_dsp(const gather_t* g, const npukit_s8_output_t* op,
                                                        const int8_t* weights, int32_t wide, int32_t pixels,
                                                        int32_t ow, int32_t oc, int32_t bounds,
                                                        npukit_s8_four_add_table_t* at, int8_t* row, int8_t* pack,
                                                        int32_t* strip, int32_t strip_bytes) {
  conv_four_body(g, op, weights, wide, pixels, ow, oc, bounds, at, row, pack, strip, strip_bytes, 1);
}
#endif

// A band's strip of padded input rows (s8_strip.h): channel-last rows of
// `iw` pixels, `sh` bytes apart, `ih` of them, with no padding left to read.
typedef struct {
  const int8_t* in;
  int32_t ih, iw, sh;
} strip_input_t;

// conv_four_dsp's columns (DSP cores only): conv()'s last two parameters.
#if NPUKIT_S8_PAIRED
#define FOUR_PARAMS , int32_t *four, int32_t four_bytes
#define FOUR_ARGS(four, bytes) , four, bytes
#else
#define FOUR_PARAMS
#define FOUR_ARGS(four, bytes)
#endif

// Output rows [y_first, y_first + oh) of the layer, their windows read from
// the layer's input, or from `strip` when given; with its im2col columns (2
// * K_PADDED, or 2 * NPUKIT_S8_K_CHUNK for a longer reduction) and input row
// (K_PADDED, or NPUKIT_S8_K_CHUNK).
static __attribute__((noinline)) void conv(const int32_t* p, size_t input, const strip_input_t* strip, size_t output,
                                           size_t residual, int32_t y_first, int32_t oh, int16_t* columns,
                                           int8_t* row FOUR_PARAMS) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], ow = p[NPUKIT_S8_W_OUT_W], ic = p[NPUKIT_S8_W_IN_C];
  gather_t g = {
      .in = strip ? strip->in : (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET],
      .ic = ic, .kh = p[NPUKIT_S8_W_KERNEL_H], .kw = p[NPUKIT_S8_W_KERNEL_W],
      .sc = strip ? 1 : p[NPUKIT_S8_W_IN_SC], .sh = strip ? strip->sh : p[NPUKIT_S8_W_IN_SH],
      .sw = strip ? ic : p[NPUKIT_S8_W_IN_SW],
      .stride_h = p[NPUKIT_S8_W_STRIDE_H], .stride_w = p[NPUKIT_S8_W_STRIDE_W],
      .dy = p[NPUKIT_S8_W_DILATION_H], .dx = p[NPUKIT_S8_W_DILATION_W], .zp = p[NPUKIT_S8_W_IN_ZP],
      .k = p[NPUKIT_S8_W_KERNEL_H] * p[NPUKIT_S8_W_KERNEL_W] * ic,
      .k_padded = p[NPUKIT_S8_W_K_PADDED],
      .less_zp = (int32_t)((uint32_t)(uint16_t)-p[NPUKIT_S8_W_IN_ZP] * 0x10001u),
      .ih = strip ? strip->ih : p[NPUKIT_S8_W_IN_H], .iw = strip ? strip->iw : p[NPUKIT_S8_W_IN_W],
      .top = strip ? 0 : p[NPUKIT_S8_W_PAD_TOP], .left = strip ? 0 : p[NPUKIT_S8_W_PAD_LEFT],
      .pad = p[NPUKIT_S8_W_PAD_VALUE],
  };
  g.limit = strip ? g.ih * g.sh + 4 : (g.ih - 1) * g.sh + (g.iw - 1) * g.sw + (g.ic - 1) * g.sc + 1;
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  const int32_t wide = p[NPUKIT_S8_W_WEIGHT_FORM] == NPUKIT_S8_WEIGHTS_INT16;
  const int32_t channel_bytes = wide ? 2 * g.k_padded : g.k_padded;
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  o.out += y_first * o.sh * (o.mode == NPUKIT_S8_OUT_INT32 ? 4 : 1);  // (bytes)
  if (o.residual) o.residual += y_first * o.add.res_sh;
  int32_t block[BLOCK + 1][2];
  npukit_s8_add_table_t add_table;
  if (o.add_small && !o.fl.table) npukit_s8_add_table(&o.add, &add_table);
  const int32_t chunked = g.k_padded > NPUKIT_S8_K_CHUNK, channels_even = (oc + 1) / 2 * 2;
#if NPUKIT_S8_PAIRED
  // The activation bounds within int8, as npukit_s8_requantize_pairs_dsp takes them.
  const int32_t lo = o.act_min > -128 ? o.act_min : -128, hi = o.act_max < 127 ? o.act_max : 127;
  const int32_t bounds = (lo & 0xff) | (hi & 0xff) << 8;
  // im2col's first case: kernel rows of contiguous values, a multiple of 4.
  const int32_t rows_in_words =
      (g.sc == 1 || g.ic == 1) && g.dx * g.sw == g.ic && (g.kw * g.ic & 3) == 0;
#endif
  // The padding of K meets zero weights; it only has to hold numbers.
  if (!chunked) {
    for (int32_t k = g.k; k < g.k_padded; ++k) row[k] = 0;
  }
  const int32_t pixels = oh * ow;
#if NPUKIT_S8_PAIRED
  // Every receptive field inside the input: no padding to read (a strip's band has its padding written out),
  // and the last row's and column's fields end within the input.
  const int32_t inside = (strip || !npukit_s8_padded(p)) && (oh - 1) * g.stride_h + (g.kh - 1) * g.dy < g.ih &&
                         (ow - 1) * g.stride_w + (g.kw - 1) * g.dx < g.iw;
  if (!chunked && o.small && !o.fl.table && o.sc == 1 && inside && four && four_fits(&g, &o, pixels, ow, four_bytes) &&
      four_pays(&g, pixels, oc, four_bytes, 0) && few_output_exact(&o, oc)) {
    conv_four_dsp(&g, &o, weights, wide, pixels, ow, oc, bounds, (npukit_s8_four_add_table_t*)&block[0][0], row,
                  (int8_t*)columns, four, four_bytes);
    return;
  }
  if (!chunked && o.sc == 1 && inside && four && four_fits(&g, &o, pixels, ow, four_bytes) && four_add_fits(&o, pixels, ow) &&
      four_pays(&g, pixels, oc, four_bytes, 1) && few_output_exact(&o, oc)) {
    npukit_s8_four_add_table_t* const t = (npukit_s8_four_add_table_t*)&block[0][0];
    const int32_t add_bounds = four_add_table(&o, add_table.conv + 128, add_table.res + 128, pixels, ow, t);
    conv_four_add_dsp(&g, &o, weights, wide, pixels, ow, oc, add_bounds, t, row, (int8_t*)columns, four, four_bytes);
    return;
  }
  if (!chunked && o.small && !o.fl.table && o.sc == 1 && inside && g.k_padded <= NPUKIT_S8_FEW_K &&
      few_output_exact(&o, oc)) {
    conv_few_dsp(&g, &o, weights, wide, pixels, ow, oc, bounds, block, columns, row);
    return;
  }
  if (!chunked && (o.small || o.add_small) && !o.fl.table && o.sc == 1 && inside) {
    if (o.add_small && add_pairs_apply(&o)) add_fold_clamp(add_table.conv + 128, o.act_min, o.act_max);
    conv_inside_dsp(&g, &o, weights, wide, pixels, ow, oc, bounds, o.small ? 0 : add_table.conv + 128, block,
                    columns, row);
    return;
  }
#endif
  int32_t y0 = 0, x0 = 0;
  for (int32_t px = 0; px < pixels; px += 2) {
    // A lone last pixel is computed twice (as pixel 1 too) and stored once.
    const int32_t count = pixels - px >= 2 ? 2 : 1;
    const int32_t y1 = count == 1 ? y0 : x0 + 1 < ow ? y0 : y0 + 1;
    const int32_t x1 = count == 1 ? x0 : x0 + 1 < ow ? x0 + 1 : 0;
    const field_t f0 = receptive_field(&g, y0, x0), f1 = receptive_field(&g, y1, x1);
    if (!chunked) {  // (a longer reduction gathers its chunks per block of channels, in dot_chunks)
#if NPUKIT_S8_PAIRED
      if (f0.inside && f1.inside && f1.at == f0.at + 1 && (g.ic & 3) == 0) {
        im2col_neighbours(&g, f0.at, columns);
      } else if (rows_in_words && f0.inside && f1.inside) {
        im2col_rows_pair(&g, f0.at, f1.at, columns);
      } else
#endif
      {
        if (f0.inside) {
          im2col(&g, f0.at, row, columns, 0, 0);
        } else {
          im2col_border(&g, &f0, row, columns, 0);
        }
        if (f1.inside) {
          im2col(&g, f1.at, row, columns, 1, 0);
        } else {
          im2col_border(&g, &f1, row, columns, 1);
        }
      }
    }
    // Accumulators of a block of channels, then their outputs (an odd last
    // channel's pair partner has zero weights and is not stored).
    for (int32_t c0 = 0; c0 < oc; c0 += BLOCK) {
      const int32_t n = oc - c0 < BLOCK ? oc - c0 : BLOCK;
      if (chunked) {
        dot_chunks(&g, &f0, &f1, weights, c0, channels_even, wide, o.bias + c0, (n + 1) / 2, &block[0][0], columns,
                   row);
      } else {
        dot_pairs(columns, weights + c0 * channel_bytes, g.k_padded, o.bias + c0, (n + 1) / 2, &block[0][0], wide);
      }
      if (o.small && o.fl.table) {
        npukit_s8_float_pairs(&o.fl, &block[0][0], n, o.fl.table + 3 * c0, o.out + c0 * o.sc + y0 * o.sh + x0 * o.sw,
                              o.out + c0 * o.sc + y1 * o.sh + x1 * o.sw, o.sc);
      } else if (o.small) {
        uint8_t* at0 = o.out + c0 * o.sc + y0 * o.sh + x0 * o.sw;
        uint8_t* at1 = o.out + c0 * o.sc + y1 * o.sh + x1 * o.sw;
        int32_t done = 0;
#if NPUKIT_S8_PAIRED
        if (o.sc == 1) {  // two channels of both pixels at a time, then an odd last one
          done = n & ~1;
          if (bounds == 0x7f80) {  // all of int8
            npukit_s8_requantize_pairs_full_dsp(&block[0][0], done, o.multiplier + c0, o.shift + c0, o.zp, bounds, at0,
                                                at1);
          } else {
            npukit_s8_requantize_pairs_dsp(&block[0][0], done, o.multiplier + c0, o.shift + c0, o.zp, bounds, at0, at1);
          }
        }
#endif
        if (done < n) {
          npukit_s8_requantize_pairs(&block[done][0], n - done, o.multiplier + c0 + done, o.shift + c0 + done, o.zp,
                                     o.act_min, o.act_max, at0 + done * o.sc, at1 + done * o.sc, o.sc);
        }
      } else if (o.mode == NPUKIT_S8_OUT_INT32) {
        npukit_s8_word_t* out0 = (npukit_s8_word_t*)o.out + c0 * o.sc + y0 * o.sh + x0 * o.sw;
        npukit_s8_word_t* out1 = (npukit_s8_word_t*)o.out + c0 * o.sc + y1 * o.sh + x1 * o.sw;
        for (int32_t c = 0, at = 0; c < n; ++c, at += o.sc) out0[at] = block[c][0], out1[at] = block[c][1];
      } else if (o.add_small && o.fl.table) {
        npukit_s8_float_add_channels(&o.fl, &block[0][0], 2, n, o.fl.table + 3 * c0,
                                     o.residual + c0 * o.add.res_sc + y0 * o.add.res_sh + x0 * o.add.res_sw,
                                     o.add.res_sc, o.out + c0 * o.sc + y0 * o.sh + x0 * o.sw, o.sc);
        if (count == 2) {
          npukit_s8_float_add_channels(&o.fl, &block[0][1], 2, n, o.fl.table + 3 * c0,
                                       o.residual + c0 * o.add.res_sc + y1 * o.add.res_sh + x1 * o.add.res_sw,
                                       o.add.res_sc, o.out + c0 * o.sc + y1 * o.sh + x1 * o.sw, o.sc);
        }
      } else if (o.add_small) {
        const int32_t* table = add_table.conv + 128;
        npukit_s8_add_channels(&o, table, &block[0][0], 2, n, o.multiplier + c0, o.shift + c0,
                               o.residual + c0 * o.add.res_sc + y0 * o.add.res_sh + x0 * o.add.res_sw,
                               o.out + c0 * o.sc + y0 * o.sh + x0 * o.sw);
        if (count == 2) {
          npukit_s8_add_channels(&o, table, &block[0][1], 2, n, o.multiplier + c0, o.shift + c0,
                                 o.residual + c0 * o.add.res_sc + y1 * o.add.res_sh + x1 * o.add.res_sw,
                                 o.out + c0 * o.sc + y1 * o.sh + x1 * o.sw);
        }
      } else {
        for (int32_t c = 0; c < n; ++c) {
          npukit_s8_store(&o, block[c][0], c0 + c, y0, x0);
          if (count == 2) npukit_s8_store(&o, block[c][1], c0 + c, y1, x1);
        }
      }
    }
    y0 = x1 + 1 < ow ? y1 : y1 + 1;
    x0 = x1 + 1 < ow ? x1 + 1 : 0;
  }
}

// A padded layer whose input is channel-last (or of one channel) and whose
// windows' rows fit NPUKIT_S8_STRIP_BYTES (s8_strip.h): bands of output
// rows, each from a strip of its input rows with the padding written out,
// on the unpadded paths. Returns 0 when the layer does not fit (conv() then
// reads the padding tap by tap at the border pixels).
// (Not inlined: its strip is on the stack only while a padded layer runs.)
static __attribute__((noinline)) int32_t padded_strips(const int32_t* p, size_t input, size_t output,
                                                       size_t residual, int16_t* columns, int8_t* row) {
  const int32_t ic = p[NPUKIT_S8_W_IN_C], stride_h = p[NPUKIT_S8_W_STRIDE_H], oh = p[NPUKIT_S8_W_OUT_H];
  if (p[NPUKIT_S8_W_IN_SC] != 1 && ic != 1) return 0;
  const npukit_s8_strip_source_t source = {
      .in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET], .ih = p[NPUKIT_S8_W_IN_H], .iw = p[NPUKIT_S8_W_IN_W],
      .sh = p[NPUKIT_S8_W_IN_SH], .sw = p[NPUKIT_S8_W_IN_SW], .channels = ic, .top = p[NPUKIT_S8_W_PAD_TOP],
      .left = p[NPUKIT_S8_W_PAD_LEFT], .right = p[NPUKIT_S8_W_PAD_RIGHT], .pad = (int8_t)p[NPUKIT_S8_W_PAD_VALUE],
  };
  const int32_t row_bytes = npukit_s8_strip_row_bytes(&source);
  const int32_t reach = (p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H] + 1;
  if ((int64_t)reach * row_bytes > NPUKIT_S8_STRIP_BYTES) return 0;
  int32_t band = (NPUKIT_S8_STRIP_BYTES / row_bytes - reach) / stride_h + 1;  // output rows per strip
#if NPUKIT_S8_PAIRED
  // A reduction conv_four_dsp may take: a band short enough that the strip's room past its rows holds the
  // columns of FOUR_BAND_QUADS groups of four pixels (a call per channel for that many), where such a band has
  // at least one output row.
  const int32_t quad_bytes = 8 * p[NPUKIT_S8_W_K_PADDED];
  if (quad_bytes <= 32 * FOUR_MAX_GROUPS) {
    const int32_t rows = (NPUKIT_S8_STRIP_BYTES - FOUR_BAND_QUADS * quad_bytes - 16) / row_bytes;
    if (rows >= reach && (rows - reach) / stride_h + 1 < band) band = (rows - reach) / stride_h + 1;
  }
#endif
  if (band > oh) band = oh;
  int8_t strip[NPUKIT_S8_STRIP_BYTES + 4] __attribute__((aligned(8)));  // + 4: word reads of the last values
  strip_input_t in = {.in = strip, .iw = source.left + source.iw + source.right, .sh = row_bytes};
#if NPUKIT_S8_PAIRED
  int32_t four[FOUR_PADDED_BYTES / 4];
#endif
  for (int32_t y = 0; y < oh; y += band) {
    const int32_t rows = oh - y < band ? oh - y : band;
    in.ih = (rows - 1) * stride_h + reach;
    npukit_s8_fill_strip(strip, &source, y * stride_h, in.ih);
#if NPUKIT_S8_PAIRED
    // The strip's bytes past the band's rows (and the 4 its word reads may touch) hold conv_four_dsp's columns
    // where they are more than `four`: a band of few rows (a 1-D layer) leaves most of the strip free.
    const int32_t used = (in.ih * row_bytes + 4 + 7) & ~7, left = (NPUKIT_S8_STRIP_BYTES - used) & ~7;
    if (left > FOUR_PADDED_BYTES) {
      conv(p, 0, &in, output, residual, y, rows, columns, row FOUR_ARGS((int32_t*)(void*)(strip + used), left));
      continue;
    }
#endif
    conv(p, 0, &in, output, residual, y, rows, columns, row FOUR_ARGS(four, FOUR_PADDED_BYTES));
  }
  return 1;
}

#if NPUKIT_S8_PAIRED
// A layer read from its input as it is (unpadded, or padded without strips), with conv_four_dsp's columns on the
// stack (not inlined: they are there only while such a layer runs, not beside a padded layer's strip).
static __attribute__((noinline)) void unpadded(const int32_t* p, size_t input, size_t output, size_t residual,
                                               int16_t* columns, int8_t* row) {
  int32_t four[FOUR_STRIP_BYTES / 4];
  conv(p, input, 0, output, residual, 0, p[NPUKIT_S8_W_OUT_H], columns, row FOUR_ARGS(four, FOUR_STRIP_BYTES));
}
#endif

void npukit_s8_conv(const int32_t* p, size_t input, size_t output, size_t residual) {
  // Sized to the layer, at most a chunk: a board's stack holds only what the layer uses. They are passed
  // down, so the loops' frame needs no frame pointer for them.
  const int32_t k_padded = p[NPUKIT_S8_W_K_PADDED] < NPUKIT_S8_K_CHUNK ? p[NPUKIT_S8_W_K_PADDED] : NPUKIT_S8_K_CHUNK;
  int16_t columns[2 * k_padded] __attribute__((aligned(8)));
  int8_t row[k_padded + 4] __attribute__((aligned(4)));  // read as words; + 4: im2col's word copies
  if (npukit_s8_padded(p) && padded_strips(p, input, output, residual, columns, row)) return;
#if NPUKIT_S8_PAIRED
  unpadded(p, input, output, residual, columns, row);
#else
  conv(p, input, 0, output, residual, 0, p[NPUKIT_S8_W_OUT_H], columns, row);
#endif
}
