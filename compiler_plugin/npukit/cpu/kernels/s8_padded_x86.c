// Padded layers (the PAD_* words, s8_layer.h) on the x86 vector kernels:
// the layer's output is cut into tiles, bands of whole output rows where a
// band's input rows fit a strip, else single output rows cut into runs of
// columns, and each tile's input rows and columns are copied into a strip
// on the stack with the padding written out (PAD_VALUE). The kernel then
// runs the tile on the strip as on an unpadded input
// (npukit_s8_x86_input_t, s8_x86.h), with the output (and residual) moved
// to the tile's first pixel. The strip is channel-last for the lane kernels
// (s8_lanes.h) and channel planes for the others, whatever the input's own
// strides; for the lane convolution it holds each value XOR 0x80 (flipped,
// s8_x86.h), which the copy does at no cost and the kernel then leaves out
// of its inner loop. The copies cost about one read and one write of the
// input, plus the rows that neighbouring bands both read.
#include "s8_x86_vector.h"

#if NPUKIT_S8_X86

// Stack bytes of a strip; a layer whose smallest tile (one output pixel's
// window, every input channel) does not fit stays with the portable kernels.
#define STRIP_BYTES 49152
#define STRIP_SLACK 64  // after the strip: zeros, for reads of whole vectors near its end

// Where the strip's values come from.
typedef struct {
  const int8_t* in;
  int32_t sc, sh, sw, ic, ih, iw, top, left, planes;
  int8_t pad;
  int8_t flip;  // XORed into every value: 0, or 0x80 for a flipped strip
} source_t;

// n bytes from `from` to `to`, each XOR `flip`.
static inline void copy_run(int8_t* restrict to, const int8_t* restrict from, int32_t n, int8_t flip) {
#if NPUKIT_S8_X86 == 512
  const __m512i f = _mm512_set1_epi8(flip);
  for (; n >= 64; n -= 64, to += 64, from += 64) {
    _mm512_storeu_si512(to, _mm512_xor_si512(_mm512_loadu_si512(from), f));
  }
  if (n > 0) {
    const __mmask64 m = ((__mmask64)1 << n) - 1;
    _mm512_mask_storeu_epi8(to, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, from), f));
  }
#else
  const __m256i f = _mm256_set1_epi8(flip);
  for (; n >= 32; n -= 32, to += 32, from += 32) {
    _mm256_storeu_si256((__m256i*)to, _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)from), f));
  }
  for (; n > 0; --n) *to++ = (int8_t)(*from++ ^ flip);
#endif
}

// n bytes of `value` at `to`.
static inline void fill_run(int8_t* to, int8_t value, int32_t n) {
#if NPUKIT_S8_X86 == 512
  const __m512i v = _mm512_set1_epi8(value);
  for (; n >= 64; n -= 64, to += 64) _mm512_storeu_si512(to, v);
  if (n > 0) _mm512_mask_storeu_epi8(to, ((__mmask64)1 << n) - 1, v);
#else
  const __m256i v = _mm256_set1_epi8(value);
  for (; n >= 32; n -= 32, to += 32) _mm256_storeu_si256((__m256i*)to, v);
  for (; n > 0; --n) *to++ = value;
#endif
}

// One row of the strip: `cols` bytes from `to`, of which [lo, hi) are the
// input's row `from` (values `sw` elements apart) XOR `flip` and the rest
// `pad` (already flipped).
static inline void strip_row(int8_t* to, const int8_t* from, int32_t sw, int32_t lo, int32_t hi, int32_t cols,
                             int8_t pad, int8_t flip) {
  fill_run(to, pad, lo);
  if (sw == 1) {
    copy_run(to + lo, from, hi - lo, flip);
  } else {
    for (int32_t x = lo; x < hi; ++x, from += sw) to[x] = (int8_t)(*from ^ flip);
  }
  fill_run(to + hi, pad, cols - hi);
}

// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of the padded input (its
// coordinates: padded row r is input row r - top) into `strip`.
static void fill_strip(const source_t* s, int32_t r0, int32_t rows, int32_t c0, int32_t cols, int8_t* strip) {
  // Strip columns [lo, hi) lie in the input, from its column c0 + lo - left.
  int32_t lo = s->left - c0, hi = s->left + s->iw - c0;
  lo = lo < 0 ? 0 : lo > cols ? cols : lo;
  hi = hi < lo ? lo : hi > cols ? cols : hi;
  const int32_t x0 = c0 + lo - s->left, ic = s->ic;
  const int8_t pad = (int8_t)(s->pad ^ s->flip), flip = s->flip;
  if (s->planes) {  // [channel][row][column]
    for (int32_t c = 0; c < ic; ++c) {
      for (int32_t r = 0; r < rows; ++r) {
        int8_t* to = strip + (c * rows + r) * cols;
        const int32_t iy = r0 + r - s->top;
        if (iy < 0 || iy >= s->ih) {
          fill_run(to, pad, cols);
        } else {
          strip_row(to, s->in + c * s->sc + iy * s->sh + x0 * s->sw, s->sw, lo, hi, cols, pad, flip);
        }
      }
    }
    return;
  }
  // [row][column][channel]
  const int32_t dense = s->sw == ic && (s->sc == 1 || ic == 1);  // an input row's values side by side
  for (int32_t r = 0; r < rows; ++r) {
    int8_t* to = strip + r * cols * ic;
    const int32_t iy = r0 + r - s->top;
    if (iy < 0 || iy >= s->ih) {
      fill_run(to, pad, cols * ic);
      continue;
    }
    const int8_t* from = s->in + iy * s->sh + x0 * s->sw;
    if (dense) {
      strip_row(to, from, 1, lo * ic, hi * ic, cols * ic, pad, flip);
      continue;
    }
    fill_run(to, pad, lo * ic);
    for (int32_t x = lo; x < hi; ++x, from += s->sw) {
      for (int32_t c = 0; c < ic; ++c) to[x * ic + c] = (int8_t)(from[c * s->sc] ^ flip);
    }
    fill_run(to + hi * ic, pad, (cols - hi) * ic);
  }
}

// n split into the fewest parts of at most `most`, as equal as they come.
static inline int32_t even_part(int32_t n, int32_t most) {
  const int32_t parts = (n + most - 1) / most;
  return (n + parts - 1) / parts;
}

int npukit_s8_x86_run(const int32_t* p, size_t input, size_t output, size_t residual, npukit_s8_x86_kernel_t kernel,
                      int32_t strip_form) {
  const int32_t channels_last = strip_form != NPUKIT_S8_STRIP_PLANES;
  if (!npukit_s8_padded(p)) {
    const npukit_s8_x86_input_t whole = npukit_s8_x86_whole(p, input);
    return kernel(p, &whole, output, residual);
  }
  const int32_t ic = p[NPUKIT_S8_W_IN_C], oh = p[NPUKIT_S8_W_OUT_H], ow = p[NPUKIT_S8_W_OUT_W];
  const int32_t stride_h = p[NPUKIT_S8_W_STRIDE_H], stride_w = p[NPUKIT_S8_W_STRIDE_W];
  const int64_t reach_h = (int64_t)(p[NPUKIT_S8_W_KERNEL_H] - 1) * p[NPUKIT_S8_W_DILATION_H] + 1;
  const int64_t reach_w = (int64_t)(p[NPUKIT_S8_W_KERNEL_W] - 1) * p[NPUKIT_S8_W_DILATION_W] + 1;
  if (ic < 1 || oh < 1 || ow < 1 || stride_h < 1 || stride_w < 1 || reach_h < 1 || reach_w < 1) return 0;
  // Bands of whole rows where one output row's input rows fit, else one row in runs of columns.
  const int64_t row_cols = (int64_t)(ow - 1) * stride_w + reach_w;
  int64_t band, run;
  if (reach_h * row_cols * ic <= STRIP_BYTES) {
    band = (STRIP_BYTES / (row_cols * ic) - reach_h) / stride_h + 1, run = ow;
  } else {
    band = 1, run = (STRIP_BYTES / (reach_h * ic) - reach_w) / stride_w + 1;
    if (run < 1) return 0;
  }
  band = even_part(oh, band < oh ? (int32_t)band : oh);
  run = even_part(ow, run < ow ? (int32_t)run : ow);

  const source_t source = {
      .in = (const int8_t*)input + p[NPUKIT_S8_W_IN_OFFSET], .sc = p[NPUKIT_S8_W_IN_SC],
      .sh = p[NPUKIT_S8_W_IN_SH], .sw = p[NPUKIT_S8_W_IN_SW], .ic = ic, .ih = p[NPUKIT_S8_W_IN_H],
      .iw = p[NPUKIT_S8_W_IN_W], .top = p[NPUKIT_S8_W_PAD_TOP], .left = p[NPUKIT_S8_W_PAD_LEFT],
      .planes = !channels_last, .pad = (int8_t)p[NPUKIT_S8_W_PAD_VALUE],
      .flip = (int8_t)(strip_form == NPUKIT_S8_STRIP_FLIPPED ? 0x80 : 0),
  };
  const int32_t element = p[NPUKIT_S8_W_OUTPUT] == NPUKIT_S8_OUT_INT32 ? 4 : 1;  // output bytes
  int8_t strip[STRIP_BYTES + STRIP_SLACK] __attribute__((aligned(64)));
  int32_t first = 1;
  for (int32_t y0 = 0; y0 < oh; y0 += (int32_t)band) {
    const int32_t rows = oh - y0 < band ? oh - y0 : (int32_t)band;
    const int32_t in_rows = (int32_t)((rows - 1) * stride_h + reach_h);
    for (int32_t x0 = 0; x0 < ow; x0 += (int32_t)run) {
      const int32_t cols = ow - x0 < run ? ow - x0 : (int32_t)run;
      const int32_t in_cols = (int32_t)((cols - 1) * stride_w + reach_w);
      const int32_t bytes = in_rows * in_cols * ic;
      fill_strip(&source, y0 * stride_h, in_rows, x0 * stride_w, in_cols, strip);
      fill_run(strip + bytes, 0, STRIP_SLACK);
      npukit_s8_x86_input_t tile;
      tile.in = strip, tile.oh = rows, tile.ow = cols, tile.flipped = source.flip != 0;
      if (channels_last) {
        tile.sc = 1, tile.sw = ic, tile.sh = in_cols * ic;
      } else {
        tile.sw = 1, tile.sh = in_cols, tile.sc = in_rows * in_cols;
      }
      const size_t out_at = output + (size_t)(((int64_t)y0 * p[NPUKIT_S8_W_OUT_SH] +
                                               (int64_t)x0 * p[NPUKIT_S8_W_OUT_SW]) * element);
      const size_t res_at = residual + (size_t)((int64_t)y0 * p[NPUKIT_S8_W_RES_SH] +
                                                (int64_t)x0 * p[NPUKIT_S8_W_RES_SW]);
      if (!kernel(p, &tile, out_at, res_at)) {
        // The kernels decide from the layer, never from the tile (s8_x86.h): a later tile is never left.
        if (first) return 0;
        __builtin_trap();
      }
      first = 0;
    }
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_padded_x86_unused;

#endif
