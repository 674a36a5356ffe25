// Channel-last convolution, 1x1 convolution and fully connected layers on
// x86 (NPUKIT_S8_WEIGHTS_LANES, s8_lanes.h): the lanes of a vector are
// consecutive output channels, so a GEMM whose rows are output pixels.
//
// Four reduction values of a pixel are one 32-bit word of the input (the
// segments of s8_lanes.h), broadcast to every lane as unsigned bytes (x XOR
// 0x80; the input zero point and the 128 come back in the accumulators'
// start, bias - (zp + 128) * sum(w), as in s8_x86_vector.h). A padded
// layer's strips hold the input already flipped (s8_padded_x86.c): its
// words are broadcast as they are, one vector operation fewer per pixel and
// word (10% less time on 32- and 64-channel layers); the weights of
// a block of channels for that word are one vector. A block of channel
// vectors x pixels of accumulators then takes one VPDPBUSD (AVX2: two
// VPMADDWD of the even and odd bytes) per channel vector, pixel and word,
// and the output stage (s8_lanes_x86.h) stores each pixel's channels with
// one (masked) store per vector.
//
// Segments whose length is no multiple of four read up to three bytes past
// their end (against zero weights); the layer's last pixels, whose words
// would reach past the layer's last input byte, are read from a copy.
//
// With AVX-512, a layer of 8 output channels would leave half of each
// vector empty, and its output stage would cost a whole vector per pixel.
// Where two pixels that follow each other in the kernel's order also follow
// each other in the output (and residual), a vector is instead two pixels'
// 8 channels: lanes 0-7 take the first pixel's word, lanes 8-15 the
// second's, against the 8 channels' weights repeated in both halves; the
// output stage's constants are the channels' repeated (made per call) and
// one store writes both pixels.
#include "s8_lanes_x86.h"

#if NPUKIT_S8_X86

#define MAX_GROUPS 2048  // words per pixel (segments padded); more go to the portable kernel

#if NPUKIT_S8_X86 == 512
#define MR_MAX 4  // channel vectors per block
#define NP_MAX 12
// Pixels per block by channel vectors: up to 24 accumulators of 32 registers.
static const int32_t pixels_for[MR_MAX + 1] = {0, 12, 12, 8, 6};
#else
#define MR_MAX 2
#define NP_MAX 6
// 16 registers: accumulators, the even and odd weights, a pixel's bytes.
static const int32_t pixels_for[MR_MAX + 1] = {0, 6, 4};
#endif

// The accumulators a<i><j> of channel vector i and pixel j, named so that
// they stay in registers; those past `mr` x `np` (constants where the
// callers specialize) are never used.
#define P_ALL(F, i) F(i, 0) F(i, 1) F(i, 2) F(i, 3) F(i, 4) F(i, 5) F(i, 6) F(i, 7) F(i, 8) F(i, 9) F(i, 10) F(i, 11)
#define PIXELS(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
#if MR_MAX == 4
#define GRID(F) P_ALL(F, 0) P_ALL(F, 1) P_ALL(F, 2) P_ALL(F, 3)
#define CHANNELS(F) F(0) F(1) F(2) F(3)
#define DOT_PIXEL(F, j) F(0, j) F(1, j) F(2, j) F(3, j)
#else
#define GRID(F) P_ALL(F, 0) P_ALL(F, 1)
#define CHANNELS(F) F(0) F(1)
#define DOT_PIXEL(F, j) F(0, j) F(1, j)
#endif

#define ACC_INIT(i, j) npk_v a##i##j = (i) < mr && (j) < np ? start[(i) < mr ? (i) : 0] : zero;
#define ACC_OUT(i, j) \
  if ((i) < mr && (j) < np) acc[(i) * NP_MAX + (j)] = a##i##j;

#if NPUKIT_S8_X86 == 512
#define WEIGHT(i) const __m512i w##i = (i) < mr ? _mm512_loadu_si512(wp[(i) < mr ? (i) : 0] + at) : zero;
#define DOT(i, j) \
  if ((i) < mr) a##i##j = _mm512_dpbusd_epi32(a##i##j, x, w##i);
#define PIXEL(j)                                                                      \
  if ((j) < np) {                                                                     \
    const __m512i word = _mm512_set1_epi32(*(const npl_word_t*)(px[j] + off));        \
    const __m512i x = flipped ? word : _mm512_xor_si512(word, flip);                  \
    DOT_PIXEL(DOT, j)                                                                 \
  }
#else
// AVX2: the weights' even and odd bytes sign-extended to 16 bits once per
// word and vector, the pixel's unsigned bytes once per word and pixel.
#define WEIGHT(i)                                                                                          \
  const __m256i wr##i = (i) < mr ? _mm256_loadu_si256((const __m256i*)(wp[(i) < mr ? (i) : 0] + at)) : zero; \
  const __m256i we##i = _mm256_srai_epi16(_mm256_slli_epi16(wr##i, 8), 8), wo##i = _mm256_srai_epi16(wr##i, 8);
#define DOT(i, j) \
  if ((i) < mr)   \
    a##i##j = _mm256_add_epi32(a##i##j, _mm256_add_epi32(_mm256_madd_epi16(ue, we##i), _mm256_madd_epi16(uo, wo##i)));
#define PIXEL(j)                                                                      \
  if ((j) < np) {                                                                     \
    const __m256i word = _mm256_set1_epi32(*(const npl_word_t*)(px[j] + off));        \
    const __m256i x = flipped ? word : _mm256_xor_si256(word, flip);                  \
    const __m256i ue = _mm256_and_si256(x, low), uo = _mm256_srli_epi16(x, 8);        \
    DOT_PIXEL(DOT, j)                                                                 \
  }
#endif

// acc[i * NP_MAX + j] = start[i] + pixel j's words (at px[j] + goff[g],
// already XOR 0x80 where `flipped`) . channel vector i's weights (64 bytes
// per word from wp[i]).
static inline __attribute__((always_inline)) void dot(const int8_t* const* px, const int32_t* goff, int32_t groups,
                                                      const int8_t* const* wp, const npk_v* start, npk_v* acc,
                                                      const int32_t mr, const int32_t np, const int32_t flipped) {
  const npk_v zero = npk_broadcast(0);
  const npk_v flip = npk_broadcast((int32_t)0x80808080u);
#if NPUKIT_S8_X86 == 256
  const __m256i low = _mm256_set1_epi16(0xff);
#endif
  GRID(ACC_INIT)
  for (int32_t g = 0, at = 0; g < groups; ++g, at += 64) {
    const int32_t off = goff[g];
    CHANNELS(WEIGHT)
    PIXELS(PIXEL)
  }
  GRID(ACC_OUT)
}

#define DOT_CASE(MRC, NPC)                                  \
  case (MRC) * 64 + (NPC):                                  \
    dot(px, goff, groups, wp, start, acc, MRC, NPC, 1);     \
    break;                                                  \
  case 4096 + (MRC) * 64 + (NPC):                           \
    dot(px, goff, groups, wp, start, acc, MRC, NPC, 0);     \
    break

__attribute__((noinline)) static void dot_block(const int8_t* const* px, const int32_t* goff, int32_t groups,
                                               const int8_t* const* wp, const npk_v* start, npk_v* acc, int32_t mr,
                                               int32_t np, int32_t flipped) {
  switch ((flipped ? 0 : 4096) + mr * 64 + np) {
#if NPUKIT_S8_X86 == 512
    DOT_CASE(4, 6);
    DOT_CASE(3, 8);
    DOT_CASE(2, 12);
    DOT_CASE(1, 12);
    DOT_CASE(4, 1);
    DOT_CASE(3, 1);
#else
    DOT_CASE(2, 4);
    DOT_CASE(1, 6);
#endif
    DOT_CASE(2, 1);
    DOT_CASE(1, 1);
    default:
      break;
  }
}

// Pixels y[j], x[j] (j < n) of channel vectors ch[0 .. mr - 1] (`channels` in all) stored.
static inline __attribute__((always_inline)) void store_pixels(const npl_stage_t* s, const npl_channels_t* ch,
                                                               const npk_v* acc, const int32_t mr, int32_t channels,
                                                               int32_t n, const int32_t* y, const int32_t* x,
                                                               const int32_t stage, const int32_t clamp) {
  for (int32_t j = 0; j < n; ++j) {
    npk_v a[MR_MAX];
    for (int32_t i = 0; i < MR_MAX; ++i) a[i] = acc[(i < mr ? i : 0) * NP_MAX + j];
    npl_store_pixel(s, ch, a, mr, channels, y[j], x[j], stage, clamp);
  }
}

// A single channel vector's pixels specialised (its one vector stays in a
// register); more vectors by their count at run time (measured faster than
// a constant count for four: 2.7 against 3.0 us for a 1x1 64->64 at 25x5).
#define STORE_CASE(STAGE, CLAMP)                                                    \
  case (STAGE) * 2 + (CLAMP):                                                      \
    if (mr == 1) {                                                                 \
      store_pixels(s, ch, acc, 1, channels, n, y, x, STAGE, CLAMP);                \
    } else {                                                                       \
      store_pixels(s, ch, acc, mr, channels, n, y, x, STAGE, CLAMP);               \
    }                                                                              \
    break;

__attribute__((noinline)) static void store_block(const npl_stage_t* s, int32_t form, const npl_channels_t* ch,
                                                 const npk_v* acc, int32_t mr, int32_t channels, int32_t n,
                                                 const int32_t* y, const int32_t* x) {
  switch (form) {
    NPL_FORMS(STORE_CASE)
    default:
      break;
  }
}

#if NPUKIT_S8_X86 == 512
#define PAIRS_MAX 12  // pixel pairs per block: 12 accumulators

#define PAIR_INIT(j) __m512i a##j = start;
#define PAIR_OUT(j) \
  if ((j) < np) acc[j] = a##j;
#define PAIR(j)                                                                                           \
  if ((j) < np) {                                                                                         \
    const __m512i x = _mm512_inserti32x8(_mm512_set1_epi32(*(const npl_word_t*)(px[2 * (j)] + off)),       \
                                         _mm256_set1_epi32(*(const npl_word_t*)(px[2 * (j) + 1] + off)), 1); \
    a##j = _mm512_dpbusd_epi32(a##j, flipped ? x : _mm512_xor_si512(x, flip), w);                          \
  }

// acc[j] = start + pixels px[2j] (lanes 0-7) and px[2j + 1] (lanes 8-15)
// . the 8 channels' weights (64 bytes per word from `weights`, lanes 8-15 zero there).
static inline __attribute__((always_inline)) void dot_pairs(const int8_t* const* px, const int32_t* goff,
                                                            int32_t groups, const int8_t* weights, __m512i start,
                                                            __m512i* acc, const int32_t np, const int32_t flipped) {
  const __m512i flip = _mm512_set1_epi32((int32_t)0x80808080u);
  PIXELS(PAIR_INIT)
  for (int32_t g = 0; g < groups; ++g) {
    const int32_t off = goff[g];
    const __m512i loaded = _mm512_loadu_si512(weights + 64 * g);
    const __m512i w = _mm512_shuffle_i64x2(loaded, loaded, 0x44);  // 128-bit blocks 0, 1, 0, 1
    PIXELS(PAIR)
  }
  PIXELS(PAIR_OUT)
}

__attribute__((noinline)) static void dot_pairs_block(const int8_t* const* px, const int32_t* goff, int32_t groups,
                                                     const int8_t* weights, __m512i start, __m512i* acc,
                                                     int32_t np, int32_t flipped) {
  if (np == PAIRS_MAX) {
    if (flipped) {
      dot_pairs(px, goff, groups, weights, start, acc, PAIRS_MAX, 1);
    } else {
      dot_pairs(px, goff, groups, weights, start, acc, PAIRS_MAX, 0);
    }
  } else {
    dot_pairs(px, goff, groups, weights, start, acc, 1, flipped);
  }
}

// Pairs j < np, the first pixel of each at y[j], x[j]; `n[j]` channels
// (16, or 8 where the pair is one pixel) stored.
static inline __attribute__((always_inline)) void store_pairs(const npl_stage_t* s, const npl_channels_t* ch,
                                                              const __m512i* acc, int32_t np, const int32_t* n,
                                                              const int32_t* y, const int32_t* x,
                                                              const int32_t stage, const int32_t clamp) {
  for (int32_t j = 0; j < np; ++j) npl_store_pixel(s, ch, &acc[j], 1, n[j], y[j], x[j], stage, clamp);
}

#define PAIRS_CASE(STAGE, CLAMP)                        \
  case (STAGE) * 2 + (CLAMP):                          \
    store_pairs(s, ch, acc, np, n, y, x, STAGE, CLAMP); \
    break;

__attribute__((noinline)) static void store_pairs_block(const npl_stage_t* s, int32_t form, const npl_channels_t* ch,
                                                       const __m512i* acc, int32_t np, const int32_t* n,
                                                       const int32_t* y, const int32_t* x) {
  switch (form) {
    NPL_FORMS(PAIRS_CASE)
    default:
      break;
  }
}

// The layer in pairs of pixels (above), where it allows them: 1 if it ran.
// `ch` is the unpaired form's channel vector, for pixels read from a copy.
static int32_t pixel_pairs(const int32_t* p, const npukit_s8_x86_input_t* view, const npukit_s8_output_t* o,
                           const npk_out_t* vo, const npk_add_t* add,
                           const npukit_s8_lanes_k_t* k, const int32_t* goff, const int32_t* dense, const int8_t* in,
                           const int8_t* weights, const int8_t* end, int32_t tail, int8_t* copy,
                           const npl_stage_t* single, int32_t form, const npl_channels_t* ch) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = view->oh, ow = view->ow;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * view->sh, step_x = p[NPUKIT_S8_W_STRIDE_W] * view->sw;
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * view->sh, dx = p[NPUKIT_S8_W_DILATION_W] * view->sw;
  const int32_t add_mode = o->mode == NPUKIT_S8_OUT_ADD;
  if (oc != 8 || oh * ow < 2 || o->sw != oc || (add_mode && o->add.res_sw != oc)) return 0;
  // A pair that wraps to the next row is two pixels side by side only in dense rows.
  if (ow % 2 && (o->sh != ow * oc || (add_mode && o->add.res_sh != ow * oc))) return 0;
  if (form / 2 == NPK_STAGE_LANES) return 0;  // the scalar stage stores by channel index
  // Lane l is channel l % 8 (of the pair's pixel l / 8): the tables repeated.
  int32_t bias[16], multiplier[16], shift[16], weight_sum[16];
  for (int32_t l = 0; l < 16; ++l) {
    bias[l] = o->bias[l % 8], multiplier[l] = o->multiplier[l % 8], shift[l] = o->shift[l % 8];
    weight_sum[l] = single->weight_sum[l % 8];
  }
  // Copied byte by byte: an assignment of a struct this size is a memcpy call, which nothing here provides.
  npukit_s8_output_t repeated;
  for (size_t i = 0; i < sizeof repeated; ++i) ((unsigned char*)&repeated)[i] = ((const unsigned char*)o)[i];
  repeated.bias = bias, repeated.multiplier = multiplier, repeated.shift = shift;
  npl_stage_t stage;
  npl_stage(&stage, &repeated, vo, add);
  stage.weight_sum = weight_sum;
  npl_channels_t both;
  npl_channels(&stage, 0, 16, &both);
  const int32_t pixels = oh * ow;
  __m512i acc[PAIRS_MAX];
  int32_t ys[PAIRS_MAX], xs[PAIRS_MAX], ns[PAIRS_MAX];
  const int8_t* px[2 * PAIRS_MAX];
  for (int32_t p0 = 0, y = 0, x = 0; p0 < pixels;) {
    const int32_t left = pixels - p0, np = left >= 2 * PAIRS_MAX ? PAIRS_MAX : 1;
    const int32_t count = np == 1 && left == 1 ? 1 : 2 * np;  // pixels of this block
    const int8_t* last = in;
    int32_t py[2 * PAIRS_MAX], pxx[2 * PAIRS_MAX];
    for (int32_t j = 0; j < count; ++j) {
      py[j] = y, pxx[j] = x, px[j] = in + y * step_y + x * step_x;
      if (px[j] > last) last = px[j];
      if (++x == ow) x = 0, ++y;
    }
    if (count == 1) px[1] = px[0];  // lanes 8-15 computed and not stored
    p0 += count;
    if (last + tail <= end || (k->segment & 3) == 0) {
      for (int32_t j = 0; j < np; ++j) ys[j] = py[2 * j], xs[j] = pxx[2 * j], ns[j] = count == 1 ? 8 : 16;
      dot_pairs_block(px, goff, k->groups, weights, both.start, acc, np, view->flipped);
      store_pairs_block(&stage, form, &both, acc, np, ns, ys, xs);
      continue;
    }
    // Near the end: each pixel on its own, the ones reaching past it from a zero-padded copy.
    for (int32_t j = 0; j < count; ++j) {
      const int8_t* one[1] = {px[j]};
      const int32_t* offsets = goff;
      if (px[j] + tail > end) {
        for (int32_t s = 0; s < k->segments; ++s) {
          const int8_t* from = px[j] + npukit_s8_lanes_segment_at(k, dy, dx, s);
          int8_t* to = copy + s * k->segment_groups * 4;
          for (int32_t i = 0; i < k->segment_groups * 4; ++i) to[i] = i < k->segment ? from[i] : 0;
        }
        one[0] = copy, offsets = dense;
      }
      npk_v single_acc[MR_MAX * NP_MAX];
      const npk_v start[1] = {ch->start};
      const int8_t* wp[1] = {weights};
      dot_block(one, offsets, k->groups, wp, start, single_acc, 1, 1, view->flipped);
      store_block(single, form, ch, single_acc, 1, oc, 1, &py[j], &pxx[j]);
    }
  }
  return 1;
}
#endif

#if NPUKIT_S8_X86 == 512
// The row-taps form (NPUKIT_S8_CONV_ROWS, npukit.cpu.kernel_choice's
// rows_fit): a layer of one channel vector (OUT_C of 1 to 16) whose kernel
// rows are KW = 2 to 5 taps at stride and dilation 1 along the row, over an
// input whose columns are IN_C channels side by side, one column after the
// other (LANE_SEGMENT a whole kernel row), IN_C a multiple of four. The
// form below loads a pixel's word for one VPDPBUSD; here output pixels
// x0 .. x0 + n - 1 of one row are a block, and each word of the n + KW - 1
// input columns the block reads (four channels of one column) is broadcast
// once and taken by every tap that reads it: up to KW VPDPBUSD, into the
// accumulators of pixels c - kx, against tap kx's weights (a kernel row's
// lane weights are its taps one after the other, IN_C / 4 words each). A
// 3x3 16->16 layer's row of 16 pixels loads 18 words for 48 VPDPBUSD
// instead of 48. Each word lies inside its column's channels: no read
// reaches past the layer's input.
#define ROW_MAX 16  // output pixels per block

// Accumulator q<j + 4> is pixel j's (q0-q3 and q20-q23 stand for pixels
// outside the block and are never used).
#define ROW_QS(F)                                                                                           \
  F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15) F(16) F(17) F(18) F(19) \
  F(20) F(21) F(22) F(23)
#define ROW_ACC(j) __m512i q##j = start;
#define ROW_OUT(j) \
  if ((j) >= 4 && (j) - 4 < n) acc[(j) >= 4 ? (j) - 4 : 0] = q##j;
#define ROW_W(kx) const __m512i w##kx = (kx) < kw ? _mm512_loadu_si512(wrow + (kx) * tap_bytes) : zero;
// Tap kx of column c, into pixel c - kx's accumulator q<q>, where that pixel is in the block.
#define ROW_DOT(c, kx, j) \
  if ((kx) < kw && (c) >= (kx) && (c) - (kx) < n) q##j = _mm512_dpbusd_epi32(q##j, x, w##kx);
#define ROW_COLUMN(c, q0, q1, q2, q3, q4)                                         \
  if ((c) < n + kw - 1) {                                                         \
    const __m512i word = _mm512_set1_epi32(*(const npl_word_t*)(row + (c) * ic)); \
    const __m512i x = flipped ? word : _mm512_xor_si512(word, flip);              \
    ROW_DOT(c, 0, q0) ROW_DOT(c, 1, q1) ROW_DOT(c, 2, q2) ROW_DOT(c, 3, q3) ROW_DOT(c, 4, q4) \
  }
#define ROW_COLUMNS \
  ROW_COLUMN(0, 4, 3, 2, 1, 0) \
  ROW_COLUMN(1, 5, 4, 3, 2, 1) \
  ROW_COLUMN(2, 6, 5, 4, 3, 2) \
  ROW_COLUMN(3, 7, 6, 5, 4, 3) \
  ROW_COLUMN(4, 8, 7, 6, 5, 4) \
  ROW_COLUMN(5, 9, 8, 7, 6, 5) \
  ROW_COLUMN(6, 10, 9, 8, 7, 6) \
  ROW_COLUMN(7, 11, 10, 9, 8, 7) \
  ROW_COLUMN(8, 12, 11, 10, 9, 8) \
  ROW_COLUMN(9, 13, 12, 11, 10, 9) \
  ROW_COLUMN(10, 14, 13, 12, 11, 10) \
  ROW_COLUMN(11, 15, 14, 13, 12, 11) \
  ROW_COLUMN(12, 16, 15, 14, 13, 12) \
  ROW_COLUMN(13, 17, 16, 15, 14, 13) \
  ROW_COLUMN(14, 18, 17, 16, 15, 14) \
  ROW_COLUMN(15, 19, 18, 17, 16, 15) \
  ROW_COLUMN(16, 20, 19, 18, 17, 16) \
  ROW_COLUMN(17, 21, 20, 19, 18, 17) \
  ROW_COLUMN(18, 22, 21, 20, 19, 18) \
  ROW_COLUMN(19, 23, 22, 21, 20, 19)

// acc[j] = start + pixel j's window . the channels' weights (j < n); the
// block's first pixel reads its kernel row ky from in + ky * dy.
static inline __attribute__((always_inline)) void row_block(const int8_t* in, int32_t dy, int32_t kh, int32_t ic,
                                                            const int8_t* weights, int32_t segment_groups,
                                                            __m512i start, __m512i* acc, const int32_t n,
                                                            const int32_t kw, const int32_t flipped) {
  const __m512i zero = _mm512_setzero_si512(), flip = _mm512_set1_epi32((int32_t)0x80808080u);
  ROW_QS(ROW_ACC)
  const int32_t words = ic / 4, tap_bytes = words * 64;
  for (int32_t ky = 0; ky < kh; ++ky) {
    for (int32_t i = 0; i < words; ++i) {
      const int8_t* row = in + ky * dy + 4 * i;
      const int8_t* wrow = weights + (ky * segment_groups + i) * 64;
      ROW_W(0) ROW_W(1) ROW_W(2) ROW_W(3) ROW_W(4)
      ROW_COLUMNS
    }
  }
  ROW_QS(ROW_OUT)
}

#define ROW_CASE(N, KW)                                                                  \
  case (N) * 16 + (KW):                                                                  \
    if (flipped) {                                                                       \
      row_block(in, dy, kh, ic, weights, segment_groups, start, acc, N, KW, 1);          \
    } else {                                                                             \
      row_block(in, dy, kh, ic, weights, segment_groups, start, acc, N, KW, 0);          \
    }                                                                                    \
    break;
#define ROW_CASES(KW) ROW_CASE(16, KW) ROW_CASE(8, KW) ROW_CASE(4, KW) ROW_CASE(2, KW) ROW_CASE(1, KW)

__attribute__((noinline)) static void row_dot_block(const int8_t* in, int32_t dy, int32_t kh, int32_t ic,
                                                   const int8_t* weights, int32_t segment_groups, __m512i start,
                                                   __m512i* acc, int32_t n, int32_t kw, int32_t flipped) {
  switch (n * 16 + kw) {
    ROW_CASES(2)
    ROW_CASES(3)
    ROW_CASES(4)
    ROW_CASES(5)
    default:
      break;
  }
}

// The layer in the row-taps form, where it allows it: 1 if it ran.
static int32_t row_taps(const int32_t* p, const npukit_s8_x86_input_t* view, const npukit_s8_lanes_k_t* k,
                        const npl_stage_t* stage, int32_t form) {
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], ic = p[NPUKIT_S8_W_IN_C], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t kh = p[NPUKIT_S8_W_KERNEL_H], oh = view->oh, ow = view->ow;
  if (p[NPUKIT_S8_W_CONV_FORM] != NPUKIT_S8_CONV_ROWS || p[NPUKIT_S8_W_KIND] != NPUKIT_S8_CONV) return 0;
  if (oc < 1 || oc > NPK_LANES || kw < 2 || kw > 5 || kh < 1 || ic < 4 || ic % 4) return 0;
  if (p[NPUKIT_S8_W_STRIDE_W] != 1 || p[NPUKIT_S8_W_DILATION_W] != 1 || k->segment != kw * ic) return 0;
  if (view->sc != 1 || view->sw != ic || view->sh < 0 || p[NPUKIT_S8_W_STRIDE_H] < 1 ||
      p[NPUKIT_S8_W_DILATION_H] < 1 || oh < 1 || ow < 1) return 0;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * view->sh, dy = p[NPUKIT_S8_W_DILATION_H] * view->sh;
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  npl_channels_t ch;
  npl_channels(stage, 0, oc, &ch);
  __m512i acc[ROW_MAX];
  int32_t ys[ROW_MAX], xs[ROW_MAX];
  for (int32_t y = 0; y < oh; ++y) {
    for (int32_t x0 = 0; x0 < ow;) {
      const int32_t left = ow - x0;
      const int32_t n = left >= 16 ? 16 : left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      row_dot_block(view->in + y * step_y + x0 * ic, dy, kh, ic, weights, k->segment_groups, ch.start, acc, n, kw,
                    view->flipped);
      for (int32_t j = 0; j < n; ++j) ys[j] = y, xs[j] = x0 + j;
      store_block(stage, form, &ch, acc, 1, oc, n, ys, xs);
      x0 += n;
    }
  }
  return 1;
}
#endif

int npukit_s8_conv_lanes_x86(const int32_t* p, const npukit_s8_x86_input_t* view, size_t output,
                             size_t residual) {
  npukit_s8_lanes_k_t k;
  if (!npukit_s8_lanes_k(p, &k) || k.groups > MAX_GROUPS) return 0;
  const int32_t oc = p[NPUKIT_S8_W_OUT_C], oh = view->oh, ow = view->ow;
  const int32_t ic = p[NPUKIT_S8_W_IN_C], kw = p[NPUKIT_S8_W_KERNEL_W];
  const int32_t sc = view->sc, sh = view->sh, sw = view->sw;
  const int32_t dy = p[NPUKIT_S8_W_DILATION_H] * sh, dx = p[NPUKIT_S8_W_DILATION_W] * sw;
  const int32_t step_y = p[NPUKIT_S8_W_STRIDE_H] * sh, step_x = p[NPUKIT_S8_W_STRIDE_W] * sw;
  // A segment's values side by side: channels (or one channel), and a row's taps after each other.
  if (ic > 1 && sc != 1) return 0;
  if (k.segment != ic && kw > 1 && dx != ic) return 0;
  if (oh < 1 || ow < 1 || oc < 1 || sh < 0 || sw < 0 || p[NPUKIT_S8_W_DILATION_H] < 0 || dx < 0) return 0;
  npukit_s8_output_t o = npukit_s8_output(p, output, residual);
  if (o.sc != 1 && oc > 1) return 0;
  if (o.mode == NPUKIT_S8_OUT_ADD && o.add.res_sc != 1 && oc > 1) return 0;

  const int8_t* in = view->in;
  const int8_t* weights = (const int8_t*)p + p[NPUKIT_S8_W_WEIGHTS_AT];
  int32_t goff[MAX_GROUPS], dense[MAX_GROUPS];
  for (int32_t s = 0, g = 0; s < k.segments; ++s) {
    const int32_t at = npukit_s8_lanes_segment_at(&k, dy, dx, s);
    for (int32_t i = 0; i < k.segment_groups; ++i, ++g) goff[g] = at + 4 * i, dense[g] = 4 * g;
  }
  // Where the layer's reads end; a pixel whose last word reaches past it is read from `copy`.
  const int32_t last_segment = npukit_s8_lanes_segment_at(&k, dy, dx, k.segments - 1);
  const int8_t* end = in + (oh - 1) * step_y + (ow - 1) * step_x + last_segment + k.segment;
  const int32_t tail = last_segment + 4 * k.segment_groups;  // a pixel's reads end here
  int8_t copy[4 * MAX_GROUPS] __attribute__((aligned(64)));

  const npk_out_t vo = npk_out(&o);
  const npk_add_t add = npk_add(&vo);
  npl_stage_t stage;
  npl_stage(&stage, &o, &vo, &add);
  const int32_t form = npl_form(&stage);
#if NPUKIT_S8_X86 == 512
  if (row_taps(p, view, &k, &stage, form)) return 1;
  if (oc == 8) {
    npl_channels_t single;
    npl_channels(&stage, 0, oc, &single);
    if (pixel_pairs(p, view, &o, &vo, &add, &k, goff, dense, in, weights, end, tail, copy, &stage, form, &single)) return 1;
  }
#endif
  const int32_t vectors = (oc + NPK_LANES - 1) / NPK_LANES, pixels = oh * ow;
  for (int32_t v0 = 0; v0 < vectors; v0 += MR_MAX) {
    const int32_t mr = vectors - v0 < MR_MAX ? vectors - v0 : MR_MAX, np_full = pixels_for[mr];
    npl_channels_t ch[MR_MAX];
    npk_v start[MR_MAX];
    const int8_t* wp[MR_MAX];
    for (int32_t i = 0; i < mr; ++i) {
      const int32_t c0 = (v0 + i) * NPK_LANES, n = oc - c0 < NPK_LANES ? oc - c0 : NPK_LANES;
      npl_channels(&stage, c0, n, &ch[i]);
      start[i] = ch[i].start;
      // A block of 16 channels' words is 64 bytes; with AVX2 a vector is its first or second half.
      wp[i] = weights + c0 / NPUKIT_S8_LANE_BLOCK * k.groups * 64 + c0 % NPUKIT_S8_LANE_BLOCK * 4;
    }
    const int32_t channels = oc - v0 * NPK_LANES < mr * NPK_LANES ? oc - v0 * NPK_LANES : mr * NPK_LANES;
    npk_v acc[MR_MAX * NP_MAX];
    int32_t ys[NP_MAX], xs[NP_MAX];
    const int8_t* px[NP_MAX];
    for (int32_t p0 = 0, y = 0, x = 0; p0 < pixels;) {
      const int32_t np = pixels - p0 >= np_full ? np_full : 1;
      const int8_t* last = in;
      for (int32_t j = 0; j < np; ++j) {
        ys[j] = y, xs[j] = x, px[j] = in + y * step_y + x * step_x;
        if (px[j] > last) last = px[j];
        if (++x == ow) x = 0, ++y;
      }
      p0 += np;
      if (last + tail <= end || (k.segment & 3) == 0) {
        dot_block(px, goff, k.groups, wp, start, acc, mr, np, view->flipped);
        store_block(&stage, form, ch, acc, mr, channels, np, ys, xs);
        continue;
      }
      // Near the end: each pixel on its own, the ones reaching past it from a zero-padded copy.
      for (int32_t j = 0; j < np; ++j) {
        const int8_t* one[1] = {px[j]};
        const int32_t* offsets = goff;
        if (px[j] + tail > end) {
          for (int32_t s = 0; s < k.segments; ++s) {
            const int8_t* from = px[j] + npukit_s8_lanes_segment_at(&k, dy, dx, s);
            int8_t* to = copy + s * k.segment_groups * 4;
            for (int32_t i = 0; i < k.segment_groups * 4; ++i) to[i] = i < k.segment ? from[i] : 0;
          }
          one[0] = copy, offsets = dense;
        }
        dot_block(one, offsets, k.groups, wp, start, acc, mr, 1, view->flipped);
        store_block(&stage, form, ch, acc, mr, channels, 1, &ys[j], &xs[j]);
      }
    }
  }
  return 1;
}

#else

// Built for a target without the x86 kernels: nothing here.
typedef int npukit_s8_conv_lanes_x86_unused;

#endif
